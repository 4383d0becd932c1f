/*
 * main.c - lockstep-agent: the node agent
 *
 * Reads the configuration (docs/config.md), registers with the scheduler,
 * runs the ranks it is given and reports on them (report.c, proc.c,
 * logship.c), all on one libuv loop.
 *
 * SIGTERM and SIGINT stop the agent but NOT its ranks: each job's
 * lockstep-supervisor (its own session, see proc.h) keeps them running and
 * the next agent re-adopts the supervisors from <state_dir>/jobs, so an
 * agent upgrade or restart does not cost a training run, provided the new
 * agent reaches the scheduler before the leases run out (lease_ms, granted
 * by the scheduler); otherwise the supervisors kill the ranks themselves.
 * To stop the ranks, cancel the job or drain the node. (Under systemd this
 * needs KillMode=process, or the service stop kills the whole cgroup.)
 *
 * Exit status: 0 after a signal, 78 (EX_CONFIG) for a configuration error,
 * 1 for any other failure to start.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "agent/agentd.h"
#include "agent/health.h"
#include "agent/logship.h"
#include "agent/mkdirp.h"
#include "agent/pinger.h"
#include "agent/pmixsrv.h"
#include "agent/proc.h"
#include "agent/report.h"
#include "agent/supfile.h"
#include "agent/witness.h"
#include "common/config.h"
#include "common/curlx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "version.h"

#define EXIT_CONFIG 78

struct agentd_main {
    struct agentd ad;
    uv_loop_t loop;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    bool handing_over; /* pinger_handover asked, not done */
};

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: lockstep-agent [-c FILE] [-o KEY=VALUE]... [--check-config]\n"
        "       lockstep-agent --version\n"
        "\n"
        "  -c, --config FILE   read settings from FILE (key = value lines)\n"
        "  -o KEY=VALUE        override one setting (repeatable; after FILE)\n"
        "      --check-config  check the settings, print \"configuration "
        "OK\", exit\n"
        "      --version       print the version\n"
        "\n"
        "SIGTERM stops the agent and leaves running ranks running; the next\n"
        "agent adopts them (their supervisors kill them if no agent renews\n"
        "their lease in time).\n"
        "\n"
        "settings:\n");
    for (const struct config_key *k = agentd_config_keys; k->name != NULL; k++)
        fprintf(f, "  %-20s %s (default: '%s')\n", k->name, k->help,
            k->def != NULL ? k->def : "");
}

/* Close every subsystem; the loop ends once their handles are closed. */
static void
agentd_stop(struct agentd_main *m)
{
    struct agentd *ad = &m->ad;

    if (ad->stopping)
        return;
    ad->stopping = true;
    /* The reverse of the creation: the table takes the ranks' output out
     * of the log shipper before the shipper goes. */
    report_destroy(ad->report);
    pinger_destroy(ad->pinger);
    witness_destroy(ad->witness);
    health_destroy(ad->health);
    proc_destroy(ad->procs);
    logship_destroy(ad->logship);
    /* Drops requests in flight without calling back: must come in the same
     * loop turn as the destruction of their owners above. */
    curlx_destroy(ad->curlx);
    /* Last: the table's hooks are gone, no namespace is in use by it. */
    pmixsrv_destroy(ad->pmixsrv);
    ad->report = NULL;
    ad->witness = NULL;
    ad->health = NULL;
    ad->procs = NULL;
    ad->logship = NULL;
    ad->curlx = NULL;
    ad->pmixsrv = NULL;
    uv_close((uv_handle_t *)&m->sigterm, NULL);
    uv_close((uv_handle_t *)&m->sigint, NULL);
}

static void
agentd_stop_cb(void *arg)
{
    agentd_stop(arg);
}

/* A first signal asks the scheduler for the long lease when leases are
 * short (pinger_handover), then stops; a second one stops at once. */
static void
agentd_signal_cb(uv_signal_t *sig, int signum)
{
    struct agentd_main *m = sig->data;

    log_notice("received %s, stopping (running ranks keep running)",
        signum == SIGTERM ? "SIGTERM" : "SIGINT");
    if (m->handing_over || m->ad.stopping ||
        !pinger_handover(m->ad.pinger, agentd_stop_cb, m)) {
        agentd_stop(m);
        return;
    }
    m->handing_over = true;
}

static void
agentd_walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) {
        log_error("handle of type %s still open at exit",
            uv_handle_type_name(uv_handle_get_type(h)));
        uv_close(h, NULL);
    }
}

/* Parse the command line and load the configuration. Returns -1 when the
 * agent should go on (*cfgp set), otherwise the exit status. */
static int
agentd_configure(int argc, char **argv, struct config **cfgp, bool *check_only)
{
    static const struct option longopts[] = {
        { "config", required_argument, NULL, 'c' },
        { "check-config", no_argument, NULL, 'C' },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct config *cfg = config_create(agentd_config_keys);
    const char *file = NULL;
    char **overrides = xcalloc((size_t)argc + 1, sizeof(*overrides));
    size_t noverrides = 0, i;
    struct err err = { 0 };
    int c, rc = 0;

    while ((c = getopt_long(argc, argv, "c:o:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            file = optarg;
            break;
        case 'o':
            overrides[noverrides++] = optarg;
            break;
        case 'C':
            *check_only = true;
            break;
        case 'V':
            printf("lockstep-agent %s\n", LOCKSTEP_VERSION);
            rc = EXIT_SUCCESS;
            goto done;
        case 'h':
            usage(stdout);
            rc = EXIT_SUCCESS;
            goto done;
        default:
            usage(stderr);
            rc = 2;
            goto done;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "lockstep-agent: unexpected argument '%s'\n",
            argv[optind]);
        rc = 2;
        goto done;
    }
    if (file != NULL && config_load_file(cfg, file, &err) < 0) {
        rc = EXIT_CONFIG;
        goto done;
    }
    for (i = 0; i < noverrides; i++) {
        if (config_set_arg(cfg, overrides[i], &err) < 0) {
            rc = EXIT_CONFIG;
            goto done;
        }
    }
    free(overrides);
    *cfgp = cfg;
    return -1;

done:
    if (rc == EXIT_CONFIG)
        fprintf(stderr, "lockstep-agent: %s\n", err.msg);
    free(overrides);
    config_destroy(cfg);
    return rc;
}

/* Settle the configuration into ad. Returns -1 when the agent should go
 * on, otherwise the exit status (--check-config, a bad setting). */
static int
agentd_settle(struct agentd *ad, struct config *cfg, bool check_only,
    enum log_level *level)
{
    struct err err = { 0 };
    int status = -1;

    if (log_level_parse(config_str(cfg, "log_level"), level) < 0) {
        fprintf(stderr,
            "lockstep-agent: log_level '%s': must be one of "
            "error, warn, notice, info, debug\n",
            config_str(cfg, "log_level"));
        status = EXIT_CONFIG;
    } else if (agentd_settings_load(ad, cfg, &err) < 0) {
        fprintf(stderr, "lockstep-agent: %s\n", err.msg);
        status = EXIT_CONFIG;
    } else if (check_only) {
        printf("configuration OK\n");
        agentd_settings_release(ad);
        status = fflush(stdout) == 0 && !ferror(stdout) ? EXIT_SUCCESS : 1;
    }
    config_destroy(cfg);
    return status;
}

/* The loop and its signal handlers; failures here are broken
 * invariants. */
static void
agentd_loop_init(struct agentd_main *m)
{
    int rc;

    rc = uv_loop_init(&m->loop);
    if (rc < 0)
        fatalx("cannot create event loop: %s", uv_strerror(rc));
    m->ad.loop = &m->loop;
    if ((rc = uv_signal_init(&m->loop, &m->sigterm)) < 0 ||
        (rc = uv_signal_init(&m->loop, &m->sigint)) < 0)
        fatalx("cannot watch signals: %s", uv_strerror(rc));
    m->sigterm.data = m;
    m->sigint.data = m;
    if ((rc = uv_signal_start(&m->sigterm, agentd_signal_cb, SIGTERM)) < 0 ||
        (rc = uv_signal_start(&m->sigint, agentd_signal_cb, SIGINT)) < 0)
        fatalx("cannot watch signals: %s", uv_strerror(rc));
}

/*
 * Take <state_dir>/jobs/agent.lock (supfile.h) before anything slow, so
 * that the supervisors of an agent that died see a restarted one as soon
 * as possible (their grace is orphan_grace_ms), and clear the mark of an
 * agent that stopped on purpose. Without the lock, the supervisors we
 * start watch nothing (the lease alone decides).
 */
static void
agentd_lock(struct agentd *ad)
{
    char *jobs = xasprintf("%s/jobs", ad->state_dir);
    int rc;

    ad->lock_fd = -1;
    if (ad->orphan_grace_ms <= 0)
        goto out;
    if ((rc = mkdirp(jobs, 0711)) < 0 ||
        (rc = supfile_agent_lock(jobs, &ad->lock_fd)) < 0) {
        ad->lock_fd = -1;
        log_error("cannot lock '%s/%s': %s; supervisors will not watch this "
                  "agent",
            jobs, SUPFILE_AGENT_LOCK,
            rc == -EAGAIN ? "another process holds it (another agent on this "
                            "state directory?)"
                          : strerror(-rc));
        goto out;
    }
    if ((rc = supfile_agent_stopped_clear(jobs)) < 0)
        log_error("cannot remove '%s/%s': %s", jobs, SUPFILE_AGENT_STOPPED,
            strerror(-rc));
out:
    free(jobs);
}

/* Create the subsystems, bottom up: the PMIx server first, while the
 * agent has no other thread (it may set PMIX_MCA_gds); the log shipper
 * before the table, which registers the output of the ranks it re-adopts
 * with it. Returns 0, or -1 with err set. */
static int
agentd_subsystems_create(struct agentd *ad, struct err *err)
{
    agentd_lock(ad);
    ad->pmixsrv = pmixsrv_create(ad, err);
    if (ad->pmixsrv == NULL && err->code != 0)
        log_warn("%s: MPI programs will not start without mpirun", err->msg);
    else if (ad->pmixsrv == NULL && ad->pmix_on)
        log_info("built without PMIx: MPI programs will not start without "
                 "mpirun");
    err_clear(err);
    ad->curlx = curlx_create(ad->loop, ad->server, err);
    if (ad->curlx == NULL)
        return -1;
    /* Every request is signed as it starts (docs/api.md "Agent
     * credentials"). */
    curlx_set_signer(ad->curlx, agentd_sign, ad);
    curlx_set_ca(ad->curlx, ad->server_ca);
    ad->logship = logship_create(ad, err);
    if (ad->logship == NULL)
        return -1;
    ad->procs = proc_create(ad, err);
    if (ad->procs == NULL)
        return -1;
    ad->health = health_create(ad, err);
    if (ad->health == NULL)
        return -1;
    ad->witness = witness_create(ad, err);
    if (ad->witness == NULL)
        return -1;
    ad->pinger = pinger_create(ad, err);
    ad->report = report_create(ad, err);
    if (ad->report == NULL)
        return -1;
    return 0;
}

int
main(int argc, char **argv)
{
    struct agentd_main m;
    struct agentd *ad = &m.ad;
    struct config *cfg = NULL;
    struct err err = { 0 };
    enum log_level level;
    bool check_only = false;
    int rc, status = 1;

    memset(&m, 0, sizeof(m));
    rc = agentd_configure(argc, argv, &cfg, &check_only);
    if (rc >= 0)
        return rc;
    rc = agentd_settle(ad, cfg, check_only, &level);
    if (rc >= 0)
        return rc;

    log_init("lockstep-agent", level, LOG_MODE_AUTO);
    if (ad->key_from_secret)
        log_warn("this node holds the cluster secret ('%s'), with which it "
                 "could speak for any node: install its own key instead "
                 "(node_key_file; docs/operations.md \"Node keys\")",
            ad->key_file);
    /* A write to a scheduler connection that just closed must fail with
     * EPIPE, not kill the agent. Ranks get default dispositions back:
     * libuv resets every signal in the child before exec. */
    signal(SIGPIPE, SIG_IGN);
    if (timeid_random_hex(ad->agent_id, 16) < 0)
        fatalx("cannot read random bytes for the agent id");
    srandom((unsigned)strtoul(ad->agent_id + 24, NULL, 16));
    agentd_loop_init(&m);

    if (agentd_subsystems_create(ad, &err) == 0) {
        log_info("node=%s agent_id=%s server=%s cpus=%d memory_mb=%lld "
                 "gpus=%zu held_jobs=%zu starting",
            ad->node, ad->agent_id, ad->server, ad->res.cpus,
            (long long)ad->res.memory_mb, ad->res.ngpus, proc_njobs(ad->procs));
        report_start(ad->report);
        health_start(ad->health);
        status = EXIT_SUCCESS;
    } else {
        log_error("cannot start: %s", err.msg);
        agentd_stop(&m);
    }
    uv_run(&m.loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&m.loop) != 0) {
        uv_walk(&m.loop, agentd_walk_cb, NULL);
        uv_run(&m.loop, UV_RUN_DEFAULT);
        if (uv_loop_close(&m.loop) != 0)
            log_error("event loop still busy at exit");
        status = 1;
    }
    if (status == EXIT_SUCCESS)
        log_info("node=%s stopped", ad->node);
    agentd_settings_release(ad);
    return status;
}
