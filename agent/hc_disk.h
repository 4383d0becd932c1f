/*
 * hc_disk.h - lockstep-check disk: what one mount's probe found, and the
 * results made of it
 *
 * hc_disk_run (hc.h) probes every mount at once, each in a child process of
 * its own that calls stat and statfs and writes back what they said: a
 * hung network mount blocks its child, not the check, and not the other
 * mounts. A child that has not answered by the deadline is killed; one that
 * cannot be (stuck in the kernel, state D) is left behind and remembered in
 * the state directory, so that later runs report the mount as hung without
 * starting another child on it while that one exists.
 *
 * hc_disk_results turns the probes into results; it is pure, so that the
 * unit test can give it every kind of probe.
 */
#ifndef AGENT_HC_DISK_H
#define AGENT_HC_DISK_H

#include <stdint.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#define HC_DISK_MOUNTS_MAX 64

struct hc_disk_opts {
    const char *mounts[HC_DISK_MOUNTS_MAX];
    int nmounts;
    int64_t warn_pct, fail_pct, min_free_mb;
    int64_t mount_timeout_ms;
    const char *state_dir; /* NULL: no memory of stuck probes */
};

enum hc_disk_outcome {
    HC_DISK_OK,     /* stat and statfs answered: dev, sfs */
    HC_DISK_ERROR,  /* one of them failed: err */
    HC_DISK_KILLED, /* no answer by the deadline; the child died of SIGKILL */
    HC_DISK_STUCK,  /* no answer, and SIGKILL did not end it: pid, state */
    HC_DISK_STILL,  /* the stuck child of an earlier run still exists: pid */
};

struct hc_disk_probe {
    const char *path;
    enum hc_disk_outcome outcome;
    int err; /* errno, HC_DISK_ERROR */
    dev_t dev;
    struct statfs sfs;
    int pid;          /* the child, HC_DISK_STUCK and HC_DISK_STILL */
    char state;       /* its state letter ('\0' unknown) */
    char wchan[64];   /* where it waits in the kernel ("" unknown) */
    int64_t stuck_ms; /* HC_DISK_STILL: how long since it was left behind */
};

/*
 * Append one result per probe to out, in order: PASS disk.ok, WARN
 * disk.low or FAIL disk.full for an answer (a path on the same device as
 * an earlier answer is left out), FAIL disk.unavailable for an error,
 * HUNG disk.hung for no answer. Scope mount:PATH.
 */
void hc_disk_results(const struct hc_disk_opts *o,
    const struct hc_disk_probe *p, int n, cJSON *out);

#endif
