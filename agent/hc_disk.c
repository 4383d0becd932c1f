/*
 * hc_disk.c - lockstep-check disk: space and inodes of the given mounts
 *
 *   lockstep-check disk --mount PATH... [--warn-pct N] [--fail-pct N]
 *                       [--min-free-mb N]
 *
 * One result per file system (scope mount:PATH; a path on the same device
 * as an earlier one is left out): FAIL disk.full when more than --fail-pct
 * (97) percent of the space or of the inodes is used or less than
 * --min-free-mb (64) MiB is free to unprivileged users; WARN disk.low past
 * --warn-pct (90); PASS disk.ok otherwise. A path that cannot be examined
 * is FAIL disk.unavailable (a configured mount that is gone is a fault).
 * statfs blocks on a hung network mount: the runner's deadline turns that
 * into TIMEOUT or HUNG.
 */
#include "agent/hc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#define HC_DISK_MOUNTS_MAX 64

struct hc_disk_opts {
    const char *mounts[HC_DISK_MOUNTS_MAX];
    int nmounts;
    int64_t warn_pct, fail_pct, min_free_mb;
};

static void
hc_disk_one(const struct hc_disk_opts *o, const char *path,
    const struct statfs *st, cJSON *out)
{
    char scope[PROTO_CHECK_SCOPE_MAX];
    double used_pct = 0, ino_pct = 0, free_mb, worst;
    const char *code = "disk.ok";
    enum proto_check_status status = PROTO_CHECK_PASS;
    cJSON *r;

    /* As df(1) counts: blocks reserved for root are neither used nor
     * available. */
    if (st->f_blocks > 0 && st->f_blocks - st->f_bfree + st->f_bavail > 0)
        used_pct = 100.0 * (double)(st->f_blocks - st->f_bfree) /
                   (double)(st->f_blocks - st->f_bfree + st->f_bavail);
    /* Some file systems (btrfs, many FUSE ones) have no inode limit. */
    if (st->f_files > 0)
        ino_pct = 100.0 * (double)(st->f_files - st->f_ffree) /
                  (double)st->f_files;
    free_mb = (double)st->f_bavail * (double)st->f_bsize / (1024.0 * 1024.0);
    worst = used_pct > ino_pct ? used_pct : ino_pct;
    if (worst > (double)o->fail_pct ||
        (st->f_blocks > 0 && free_mb < (double)o->min_free_mb)) {
        status = PROTO_CHECK_FAIL;
        code = "disk.full";
    } else if (worst > (double)o->warn_pct) {
        status = PROTO_CHECK_WARN;
        code = "disk.low";
    }
    snprintf(scope, sizeof(scope), "mount:%s", path);
    r = hc_add(out, status, code, scope,
        "%s: %.1f%% of space used (%.0f MiB free), %.1f%% of inodes used "
        "(warn > %d%%, fail > %d%% or < %d MiB)",
        path, used_pct, free_mb, ino_pct, (int)o->warn_pct, (int)o->fail_pct,
        (int)o->min_free_mb);
    hc_number(r, "used_pct", used_pct);
    hc_number(r, "free_mb", free_mb);
    hc_number(r, "inodes_used_pct", ino_pct);
    hc_number(r, "inodes_free", (double)st->f_ffree);
}

static int
hc_disk_opts_parse(int argc, char **argv, struct hc_disk_opts *o)
{
    const char *v;
    bool bad = false;
    int i = 0;

    o->warn_pct = 90;
    o->fail_pct = 97;
    o->min_free_mb = 64;
    while (i < argc && !bad) {
        if (hc_opt("disk", argc, argv, &i, "mount", &v, &bad)) {
            if (bad)
                break;
            if (o->nmounts == HC_DISK_MOUNTS_MAX) {
                fprintf(stderr, "lockstep-check disk: more than %d mounts\n",
                    HC_DISK_MOUNTS_MAX);
                return HC_USAGE;
            }
            o->mounts[o->nmounts++] = v;
        } else if (!hc_opt_int("disk", argc, argv, &i, "warn-pct", 0, 100,
                       &o->warn_pct, &bad) &&
                   !hc_opt_int("disk", argc, argv, &i, "fail-pct", 0, 100,
                       &o->fail_pct, &bad) &&
                   !hc_opt_int("disk", argc, argv, &i, "min-free-mb", 0,
                       INT32_MAX, &o->min_free_mb, &bad)) {
            return hc_usage_unknown("disk", argv[i]);
        }
    }
    if (bad)
        return HC_USAGE;
    if (o->nmounts == 0) {
        fprintf(stderr, "lockstep-check disk: give at least one --mount\n");
        return HC_USAGE;
    }
    return 0;
}

int
hc_disk_run(int argc, char **argv, cJSON *out)
{
    struct hc_disk_opts o;
    dev_t devs[HC_DISK_MOUNTS_MAX];
    int ndevs = 0, rc, i, j;

    memset(&o, 0, sizeof(o));
    if ((rc = hc_disk_opts_parse(argc, argv, &o)) != 0)
        return rc;
    for (i = 0; i < o.nmounts; i++) {
        char scope[PROTO_CHECK_SCOPE_MAX];
        struct statfs sfs;
        struct stat st;

        snprintf(scope, sizeof(scope), "mount:%s", o.mounts[i]);
        if (stat(o.mounts[i], &st) < 0 || statfs(o.mounts[i], &sfs) < 0) {
            hc_add(out, PROTO_CHECK_FAIL, "disk.unavailable", scope, "%s: %s",
                o.mounts[i], strerror(errno));
            continue;
        }
        for (j = 0; j < ndevs && devs[j] != st.st_dev; j++)
            ;
        if (j < ndevs)
            continue; /* the same file system as an earlier path */
        devs[ndevs++] = st.st_dev;
        hc_disk_one(&o, o.mounts[i], &sfs, out);
    }
    return 0;
}
