/*
 * hc_xid.c - the built-in XID severity table, and table files
 *
 * Seeded from NVIDIA's XID catalogue and the survey in
 * shared/notes/health-checks.md. FAIL: the GPU or its memory is broken or
 * needs a reset before it can be trusted (the node is excluded). WARN: soft
 * evidence (repeats count). PASS: usually the application's own fault (an
 * illegal address, a preempted context): recorded and counted as the job's
 * event, never held against the node.
 */
#include "hc_xid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

static const struct hc_xid builtin[] = {
    { 8, PROTO_CHECK_WARN, "GPU stopped processing (driver or channel)" },
    { 13, PROTO_CHECK_PASS, "graphics engine exception (application)" },
    { 31, PROTO_CHECK_PASS, "GPU memory page fault (application)" },
    { 32, PROTO_CHECK_WARN, "invalid or corrupted push buffer stream" },
    { 38, PROTO_CHECK_WARN, "driver firmware error" },
    { 43, PROTO_CHECK_PASS, "GPU stopped processing (application)" },
    { 44, PROTO_CHECK_WARN, "graphics engine fault during context switch" },
    { 45, PROTO_CHECK_PASS, "preemptive cleanup (after another error)" },
    { 48, PROTO_CHECK_FAIL, "double-bit ECC error" },
    { 56, PROTO_CHECK_WARN, "display engine error" },
    { 57, PROTO_CHECK_WARN, "error programming video memory interface" },
    { 58, PROTO_CHECK_WARN, "unstable video memory interface" },
    { 61, PROTO_CHECK_WARN, "internal micro-controller breakpoint" },
    { 62, PROTO_CHECK_FAIL, "internal micro-controller halt" },
    { 63, PROTO_CHECK_WARN,
        "row remapping / page retirement recorded "
        "(reset the GPU)" },
    { 64, PROTO_CHECK_FAIL, "row remapping / page retirement failure" },
    { 68, PROTO_CHECK_WARN, "video decoder exception" },
    { 69, PROTO_CHECK_WARN, "graphics engine class error" },
    { 74, PROTO_CHECK_FAIL, "NVLink error" },
    { 79, PROTO_CHECK_FAIL, "GPU has fallen off the bus" },
    { 81, PROTO_CHECK_FAIL, "VGA subsystem error" },
    { 92, PROTO_CHECK_WARN, "high single-bit ECC error rate" },
    { 94, PROTO_CHECK_WARN, "contained ECC error (application killed)" },
    { 95, PROTO_CHECK_FAIL, "uncontained ECC error" },
    { 109, PROTO_CHECK_WARN, "context switch timeout" },
    { 110, PROTO_CHECK_FAIL, "security fault error" },
    { 119, PROTO_CHECK_FAIL, "GSP RPC timeout" },
    { 120, PROTO_CHECK_FAIL, "GSP error" },
    { 121, PROTO_CHECK_WARN, "C2C link corrected error" },
    { 122, PROTO_CHECK_WARN, "SPI PMU RPC read failure" },
    { 123, PROTO_CHECK_WARN, "SPI PMU RPC write failure" },
    { 140, PROTO_CHECK_FAIL, "unrecovered ECC error" },
    { 154, PROTO_CHECK_FAIL,
        "GPU recovery action changed (reset or reboot "
        "required)" },
};

void
hc_xid_table_init(struct hc_xid_table *t)
{
    t->n = ARRAY_SIZE(builtin);
    t->v = xcalloc(t->n, sizeof(*t->v));
    for (size_t i = 0; i < t->n; i++) {
        t->v[i] = builtin[i];
        t->v[i].what = xstrdup(builtin[i].what);
    }
}

const struct hc_xid *
hc_xid_lookup(const struct hc_xid_table *t, int xid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].xid == xid)
            return &t->v[i];
    return NULL;
}

/* One line "XID STATUS [WHAT...]" into the table; -EINVAL if malformed. */
static int
load_line(struct hc_xid_table *t, char *line)
{
    char status[16], *what;
    enum proto_check_status st;
    struct hc_xid *e;
    int xid, end = 0;

    if (sscanf(line, " %d %15s %n", &xid, status, &end) < 2 || end == 0 ||
        xid < 0 || proto_check_status_parse(status, &st) < 0 ||
        st > PROTO_CHECK_FAIL)
        return -EINVAL;
    what = line + end;
    what[strcspn(what, "\n")] = '\0';
    e = (struct hc_xid *)hc_xid_lookup(t, xid);
    if (e == NULL) {
        t->v = xreallocarray(t->v, t->n + 1, sizeof(*t->v));
        e = &t->v[t->n++];
        e->what = NULL;
    }
    e->xid = xid;
    e->status = st;
    free((char *)e->what);
    e->what = xstrdup(*what ? what : "(from the table file)");
    return 0;
}

int
hc_xid_table_load(struct hc_xid_table *t, const char *path, char **why)
{
    char line[512];
    FILE *f = fopen(path, "re");
    int lineno = 0, rc;

    if (f == NULL) {
        rc = -errno;
        *why = xasprintf("cannot open %s: %s", path, strerror(errno));
        return rc;
    }
    while (fgets(line, sizeof(line), f)) {
        const char *p = line + strspn(line, " \t");

        lineno++;
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        if (load_line(t, line) < 0) {
            *why = xasprintf("%s:%d: want \"XID PASS|WARN|FAIL [what]\"", path,
                lineno);
            fclose(f);
            return -EINVAL;
        }
    }
    fclose(f);
    return 0;
}

void
hc_xid_table_release(struct hc_xid_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free((char *)t->v[i].what);
    free(t->v);
    memset(t, 0, sizeof(*t));
}
