/*
 * check_main.c - lockstep-check: one health check, run by the agent
 *
 *   lockstep-check NAME [OPTION VALUE]...
 *   lockstep-check --list
 *
 * Runs the built-in check NAME (hc.h) and prints its results on stdout as
 * one JSON array of result objects (docs/api.md "health"). Exit status 0
 * when it printed results (whatever they say), 2 for a usage error. The
 * agent (health.c) runs it as a child in its own process group with a
 * deadline, so a check stuck in the kernel (statfs on a hung mount, a
 * driver call) costs this process, never the agent. Links common/ only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/hc.h"
#include "agent/hc_gpu.h"
#include "agent/hc_kmsg.h"
#include "common/jsonx.h"
#include "common/xalloc.h"

struct hc_builtin {
    const char *name;
    int (*run)(int argc, char **argv, cJSON *out);
};

/* Sorted by name. */
static const struct hc_builtin hc_builtins[] = {
    { "disk", hc_disk_run },
    { "gpu", hc_gpu_run },
    { "kmsg", hc_kmsg_run },
    { "memory", hc_memory_run },
    { "nic", hc_nic_run },
    { "pcie", hc_pcie_run },
};

static void
usage(FILE *f)
{
    fprintf(f, "usage: lockstep-check NAME [OPTION VALUE]...\n"
               "       lockstep-check --list\n"
               "checks:");
    for (size_t i = 0; i < ARRAY_SIZE(hc_builtins); i++)
        fprintf(f, " %s", hc_builtins[i].name);
    fprintf(f, "\n");
}

int
main(int argc, char **argv)
{
    const struct hc_builtin *b = NULL;
    cJSON *out;
    char *text;
    int rc;

    if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < ARRAY_SIZE(hc_builtins); i++)
            printf("%s\n", hc_builtins[i].name);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; argc >= 2 && i < ARRAY_SIZE(hc_builtins); i++) {
        if (strcmp(argv[1], hc_builtins[i].name) == 0)
            b = &hc_builtins[i];
    }
    if (b == NULL) {
        if (argc >= 2)
            fprintf(stderr, "lockstep-check: unknown check '%s'\n", argv[1]);
        usage(stderr);
        return HC_USAGE;
    }
    out = cJSON_CreateArray();
    rc = b->run(argc - 2, argv + 2, out);
    if (rc != 0) {
        cJSON_Delete(out);
        if (rc < 0)
            fprintf(stderr, "lockstep-check %s: %s\n", b->name, strerror(-rc));
        return rc < 0 ? 1 : HC_USAGE;
    }
    text = jsonx_print(out);
    cJSON_Delete(out);
    printf("%s\n", text);
    free(text);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
