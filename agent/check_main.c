/*
 * check_main.c - lockstep-check: the agent's built-in health checks, one
 * subcommand each, run as a child process by the agent's check runner
 *
 * `lockstep-check NAME [OPTION...]` prints a JSON array of check results
 * (docs/api.md, "check result") on stdout and exits 0, or 2 on a usage
 * error. MINIMAL version (gpu and kmsg only): the runner's branch holds the
 * full table; the entries keep the format { "name", hc_name_run }.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hc_gpu.h"
#include "hc_kmsg.h"

struct builtin {
    const char *name;
    int (*run)(int argc, char **argv, cJSON *out);
};

static const struct builtin builtins[] = {
    { "gpu", hc_gpu_run },
    { "kmsg", hc_kmsg_run },
};

int
main(int argc, char **argv)
{
    cJSON *out;
    char *text;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: lockstep-check CHECK [OPTION...]\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
        if (strcmp(argv[1], builtins[i].name) != 0)
            continue;
        out = cJSON_CreateArray();
        rc = builtins[i].run(argc - 2, argv + 2, out);
        if (rc == 0) {
            text = cJSON_PrintUnformatted(out);
            printf("%s\n", text);
            free(text);
        }
        cJSON_Delete(out);
        return rc;
    }
    fprintf(stderr, "lockstep-check: unknown check '%s'\n", argv[1]);
    return 2;
}
