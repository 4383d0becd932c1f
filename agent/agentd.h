/*
 * agentd.h - the node agent's top-level context
 *
 * One `struct agentd` per process, owned by main.c and passed to every
 * subsystem's _create. It holds the loop, the settled configuration (every
 * value already validated) and the subsystems. Everything runs on the loop
 * thread.
 *
 * The modules of agent/, bottom to top (a module is a file stem: x.c and
 * x.h). Each includes and calls only modules on the lines above its own:
 *
 *   backoff mkdirp rmtree tail   generic helpers                     (*)
 *   supfile            the files of an attempt directory             (*)
 *   procfs             what /proc says about processes               (*)
 *   supervisor         the ranks of one attempt and their lease      (*)
 *   supervisor_main    lockstep-supervisor                           (*)
 *   resources          what the node offers (HTTP on the loop is
 *                      common/curlx, a daemon-only library like uvx)
 *   agentd             the settings and this context
 *   logship            ships the output files registered with it
 *   health_parse       a site check's header, a check's output
 *   health             the health checks: children with deadlines (the
 *                      built-ins are lockstep-check, check_main.c over
 *                      hc*.c, libuv-free like the supervisor)
 *   pmixsrv_info pmixsrv_net pmixsrv_event pmixsrv
 *                      the PMIx server's information lists; its fences
 *                      across nodes, relayed through the scheduler;
 *                      directives as PMIx events; the PMIx server (its
 *                      upcalls reach the loop through a locked queue;
 *                      aborts go up through hooks)
 *   proc_env proc_int  a rank's environment; proc*.c's internal header
 *   proc_job           the objects: a job attempt and its ranks
 *   proc_progress proc_ckpt      steps and output; checkpoints
 *   proc_dump proc_state proc_start
 *                      stack dumps; status.json and re-adoption; the
 *                      directory of a new attempt
 *   proc               the table of held jobs (proc.h: its public surface)
 *   witness            answers witness queries (UDP); asks W(N) while
 *                      the scheduler is unreachable and extends leases
 *   pinger             lease pings to the scheduler (UDP) while
 *                      supervisors hold leases: short leases
 *   report             status and work with the scheduler
 *   main               lockstep-agent
 *
 * (*) libuv-free: lockstep-supervisor links nothing else.
 *
 * What goes up does so through something the lower module owns: the
 * table's change hook (proc_set_change_cb: report sends a status), the
 * shipper's registry (proc hands each rank's output to logship_add), the
 * PMIx server's hooks (pmixsrv_set_hooks: proc hears of aborts) and the
 * health runner's change hook (health_set_change_cb: report sends a
 * status).
 */
#ifndef AGENT_AGENTD_H
#define AGENT_AGENTD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/config.h"
#include "common/cred.h"
#include "common/err.h"
#include "common/proto.h"

struct curlx;
struct health;
struct pmixsrv;
struct proc_table;
struct report;
struct logship;
struct witness;
struct pinger;

struct agentd {
    uv_loop_t *loop;

    /* settings (owned) */
    char *server;
    char *server_ca; /* PEM CA for an https:// server; NULL: the system's */
    char *node;      /* node_name */
    char *addr;
    char *state_dir;
    char *log_dir; /* never empty: defaults to state_dir/logs */
    int64_t kill_grace_ms;
    int64_t orphan_grace_ms; /* supervisors of a dead agent; 0: off */
    /* <state_dir>/jobs/agent.lock (supfile.h), held for the agent's life,
     * taken before anything slow starts; -1: not held */
    int lock_fd;
    int witness_port; /* UDP; 0: any free port */
    bool run_as_submitter;
    char *supervisor; /* lockstep-supervisor executable */
    bool pmix_on;     /* host a PMIx server (when built with one) */
    struct proto_resources res;
    /* health checks (health.h) */
    char *health_check_exe;  /* lockstep-check executable */
    char *health_checks;     /* the built-ins to run, a comma list */
    char *health_checks_dir; /* site checks; "" none */
    char *health_mounts;     /* disk: a comma list; "" / and state_dir */
    char *health_nics;       /* nic: the ports expected up */
    char *nvidia_smi;
    char *kmsg_path;             /* "" no kernel log check */
    char *kmsg_allowlist;        /* "" none */
    bool kmsg_allowlist_default; /* not configured: used when installed */
    char *kmsg_baseline;         /* "" none */
    char *sysfs_root;
    int64_t health_interval_ms;
    int64_t health_timeout_ms;
    int64_t health_kill_grace_ms;
    /* The node's credential (docs/operations.md "Node keys"): its key,
     * which signs every request (agentd_sign), and the witness keys
     * (common/witness.h), read from key_file: node_key_file, or
     * cluster_secret_file when key_from_secret (the transition: the key is
     * derived and the secret forgotten). Read again when the file
     * changes (agentd_key_refresh). */
    struct cred_node_keyfile key;
    char *key_file;
    bool key_from_secret;
    struct agentd_filestamp {
        long long ino, size, mtime_ns;
    } key_stamp;
    char agent_id[33]; /* random per process */

    /* subsystems, created by main in this order */
    struct pmixsrv *pmixsrv; /* NULL: no PMIx server */
    struct curlx *curlx;
    struct proc_table *procs;
    struct witness *witness;
    struct pinger *pinger;
    struct report *report;
    struct logship *logship;
    struct health *health;

    bool stopping;
};

/* The configuration keys of lockstep-agent (docs/config.md), terminated by
 * an entry with a NULL name. */
extern const struct config_key agentd_config_keys[];

/*
 * Fill ad's settings from a loaded config: node name and address (host
 * name by default), resources (detected where the config says 0/auto),
 * directories, and the agent credential (reads node_key_file, or derives
 * it from cluster_secret_file when that is unset).
 * Errors (-EINVAL, or the errno of the secret file) come with a message
 * for a person in err; nothing is left allocated on failure.
 */
int agentd_settings_load(struct agentd *ad, const struct config *cfg,
    struct err *err);
/* Free what agentd_settings_load allocated. Accepts a zeroed agentd. */
void agentd_settings_release(struct agentd *ad);

/* Read the key file again if it changed since it was read (a new node key
 * installed, a rotation: docs/operations.md): 1 when the key changed, 0
 * when nothing did, or a negative errno with err set (the key in use
 * stays). */
int agentd_key_refresh(struct agentd *ad, struct err *err);

/* Sign one request to the scheduler (a curlx_sign_fn; arg is the agentd):
 * "Authorization: Agent <node>:<ts_ms>:<nonce>:<mac>" under the node's
 * key. Caller frees; NULL when the kernel's random source failed. */
char *agentd_sign(const char *method, const char *path, const char *body,
    size_t len, void *arg);

#endif
