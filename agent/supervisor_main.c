/*
 * supervisor_main.c - lockstep-supervisor: the per-job-attempt supervisor
 *
 * Started by lockstep-agent, never by hand: `lockstep-supervisor DIR`,
 * where DIR is the attempt's absolute directory <state_dir>/jobs/<job>.<a>
 * holding spec.json and the lease (supervisor.h). Its stderr is
 * DIR/supervisor.log.
 *
 * Exit status: 0 once every rank ended, 2 when it could not start, 64 for
 * a bad command line.
 */
#include <stdio.h>
#include <string.h>

#include "agent/supervisor.h"
#include "common/log.h"
#include "version.h"

int
main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("lockstep-supervisor %s\n", LOCKSTEP_VERSION);
        return 0;
    }
    if (argc != 2 || argv[1][0] != '/') {
        fprintf(stderr,
            "usage: lockstep-supervisor DIR\n"
            "\n"
            "Runs the ranks of one job attempt described by DIR/spec.json\n"
            "(DIR absolute). Started by lockstep-agent.\n");
        return 64;
    }
    log_init("lockstep-supervisor", LOG_LEVEL_INFO, LOG_MODE_PLAIN);
    return supervisor_run(argv[1]);
}
