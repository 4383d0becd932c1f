/*
 * main.c - lockstepd: configuration, start-up and orderly shutdown
 *
 * Reads the configuration (docs/config.md: -c FILE, then -o key=value
 * overrides), checks it completely (including the cluster secret and the
 * TLS certificate) before anything starts, and exits 78 (EX_CONFIG) on any
 * configuration error so systemd does not restart-loop on it (65 and 66
 * for a damaged or lost database, likewise). Then it creates the
 * scheduler, starts listening and runs the loop until SIGTERM or SIGINT,
 * when it stops accepting, commits, closes every handle and requires
 * uv_loop_close() == 0. SIGHUP loads the TLS certificate and key again
 * and reads the cluster secrets again (rotations without a restart).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <uv.h>

#include "common/config.h"
#include "common/cred.h"
#include "common/err.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/xalloc.h"
#include "scheduler/api.h"
#include "scheduler/buildinfo.h"
#include "scheduler/http.h"
#include "scheduler/nodes_witness.h"
#include "scheduler/obs.h"
#include "scheduler/pass.h"
#include "scheduler/recovery.h"
#include "scheduler/repl.h"
#include "scheduler/sched_pass.h"
#include "scheduler/schedd.h"
#include "scheduler/tick.h"
#include "scheduler/webhook.h"

#define EX_CONFIG 78
/* The database was damaged (EX_DATAERR) or lost (EX_NOINPUT): a restart
 * cannot fix either, and starting empty would forget every job
 * (docs/operations.md "A lost or damaged database"). */
#define EX_DB_DAMAGED 65
#define EX_DB_LOST 66

static const struct config_key lockstepd_keys[] = {
    { "listen", CONFIG_STR, "127.0.0.1:7300", 0, 0,
        "TCP address for the API (host:port; port 0 picks one; empty "
        "disables TCP)" },
    { "tls", CONFIG_BOOL, "on", 0, 0,
        "TLS on the TCP listener, with tls_cert and tls_key (off: plain "
        "HTTP, with a warning at start-up; the Unix socket never uses TLS)" },
    { "tls_cert", CONFIG_STR, "", 0, 0,
        "the TCP listener's certificate chain (PEM: its certificate first, "
        "then any intermediates)" },
    { "tls_key", CONFIG_STR, "", 0, 0,
        "the certificate's private key (PEM; not accessible to other "
        "users)" },
    { "tls_ca", CONFIG_STR, "", 0, 0,
        "the CA certificate(s) clients trust (LOCKSTEP_CA, the agents' "
        "server_ca): tls_cert must chain to it (\"\": not checked)" },
    { "socket", CONFIG_STR, "/run/lockstep/lockstepd.sock", 0, 0,
        "Unix socket for local clients (empty disables it)" },
    { "port_file", CONFIG_STR, "", 0, 0,
        "if set, the bound TCP port is written here once listening" },
    { "state_dir", CONFIG_STR, "/var/lib/lockstep", 0, 0,
        "holds lockstep.db and logs/" },
    CONFIG_KEY_CLUSTER_SECRET_FILE,
    { "cluster_secret_previous_file", CONFIG_STR, "", 0, 0,
        "during a rotation, the previous cluster secret: agents' keys "
        "derived from it are still accepted (a missing file: none; re-read "
        "on SIGHUP with cluster_secret_file)" },
    { "agent_auth_window_ms", CONFIG_INT, "30000", 1000, 600000,
        "an agent request's timestamp must be within this of the "
        "scheduler's clock, and each is accepted once within it" },
    { "agent_auth_legacy", CONFIG_BOOL, "false", 0, 0,
        "also accept the static agent credential of lockstep before "
        "per-request MACs (for an upgrade only: it can be replayed)" },
    { "agent_nonces_max", CONFIG_INT, "262144", 1024, 16777216,
        "agent requests remembered against replay within the window; "
        "beyond, agent requests get 503 until some expire" },
    { "operators", CONFIG_STR, "", 0, 0,
        "comma-separated user names with the operator role" },
    CONFIG_KEY_LOG_LEVEL,
    { "heartbeat_ms", CONFIG_INT, "1000", 100, 60000,
        "agent status interval the scheduler asks for" },
    { "node_timeout_ms", CONFIG_INT, "10000", 500, 3600000,
        "a node with no status for this long becomes LOST" },
    { "max_body_bytes", CONFIG_INT, "1048576", 1024, 67108864,
        "request body limit" },
    { "master_port_base", CONFIG_INT, "29500", 1, 65535,
        "first port handed out as MASTER_PORT" },
    { "master_port_count", CONFIG_INT, "1000", 1, 65535,
        "size of the MASTER_PORT range" },
    { "db_synchronous", CONFIG_STR, "full", 0, 0,
        "full (replies wait for the WAL's fsync, done off the loop; a "
        "replica's wait for its quorum instead) or normal (no fsync)" },
    { "db_check_timeout_ms", CONFIG_INT, "60000", 0, 3600000,
        "at start-up PRAGMA quick_check reads the whole database to refuse "
        "a damaged one; a check longer than this is cut short and the "
        "start goes on (0: no check)" },
    { "lease_ms", CONFIG_INT, "5000", 100, 3600000,
        "job supervisors' lease, renewed by each status exchange; must be "
        "below node_timeout_ms" },
    { "lease_ping_ms", CONFIG_INT, "300", 0, 10000,
        "a node whose supervisors hold leases renews them with a UDP ping "
        "this often, answered with short_lease_ms (0: no pings; leases are "
        "renewed by status exchanges alone)" },
    { "short_lease_ms", CONFIG_INT, "1500", 100, 3600000,
        "the lease granted to a node whose lease pings are heard (at most "
        "lease_ms; lease_ping_ms is lowered to a quarter of it at most): "
        "what lets its jobs be replaced seconds after it falls silent" },
    { "dump_timeout_ms", CONFIG_INT, "5000", 0, 600000,
        "how long a hang waits for the ranks' stack dumps before teardown" },
    { "rank_stats_window_ms", CONFIG_INT, "30000", 1000, 3600000,
        "per-rank step time, gc and checkpoint figures are summarized to "
        "the database once per window of this length (one row per rank)" },
    { "straggler_ratio", CONFIG_STR, "1.15", 0, 0,
        "a rank whose time in a timed section is above this times the "
        "job's median for it is slow in that window (1.01..10)" },
    { "straggler_windows", CONFIG_INT, "3", 1, 5,
        "a rank slow in a section in this many of the last 5 judged windows "
        "makes its node a straggler" },
    { "restart_backoff_ms", CONFIG_INT, "500", 0, 3600000,
        "delay before restarting after a failure, doubled per consecutive "
        "failure" },
    { "restart_backoff_max_ms", CONFIG_INT, "60000", 0, 86400000,
        "the cap of that delay" },
    { "crash_loop_threshold", CONFIG_INT, "2", 2, 1000,
        "the same failure on this many attempts on different nodes is the "
        "job's own deterministic bug" },
    { "blame_threshold", CONFIG_INT, "3", 1, 1000,
        "a node blamed for failures of this many different jobs within "
        "blame_window_ms is excluded" },
    { "blame_window_ms", CONFIG_INT, "3600000", 1000, 2592000000,
        "the window of blame_threshold; also how long a job avoids nodes "
        "blamed for its failures" },
    { "blame_hardware_signals", CONFIG_STR, "SIGBUS", 0, 0,
        "signals that kill a rank because of its node's hardware (names or "
        "numbers, comma-separated; \"\" none): a rank killed by one "
        "blames its node at once; any other failure only provisionally" },
    { "health_soft_repeats", CONFIG_INT, "3", 1, 1000,
        "a WARN health finding raised by this many consecutive runs of its "
        "check excludes the node (before that it is SUSPECT)" },
    { "health_unreliable_repeats", CONFIG_INT, "3", 1, 1000,
        "an UNKNOWN or TIMEOUT result of one check this many runs in a row "
        "excludes the node as \"check unreliable\"" },
    { "health_holddown_ms", CONFIG_INT, "300000", 0, 2592000000,
        "a finding that excluded a node clears once its check has passed "
        "for this long" },
    { "health_flap_count", CONFIG_INT, "3", 2, 1000,
        "this many exclusions by health findings within "
        "health_flap_window_ms keep the node out until an operator "
        "acknowledges health.flapping" },
    { "health_flap_window_ms", CONFIG_INT, "3600000", 1000, 2592000000,
        "the window of health_flap_count" },
    { "straggler_jobs_exclude", CONFIG_INT, "3", 1, 1000,
        "a node found SUSPECT by the scheduler (a straggler) in this many "
        "different jobs is excluded" },
    { "health_soft_expire_ms", CONFIG_INT, "86400000", 1000, 2592000000,
        "a SUSPECT finding the scheduler raised (a straggler) that is not "
        "raised again for this long is dropped" },
    { "sched_policy", CONFIG_STR, "fifo", 0, 0,
        "the scheduling policy: fifo (priority, then submission order; "
        "best fit) or spread (the same order; emptiest nodes first)" },
    { "metrics_token_required", CONFIG_BOOL, "false", 0, 0,
        "GET /metrics asks for a token like any API route (default: no "
        "credential, so a Prometheus can scrape it)" },
    { "alert_webhook_url", CONFIG_STR, "", 0, 0,
        "alerts (node excluded, node lost, job failed) are POSTed here as "
        "JSON; empty: no alerts" },
    { "alert_webhook_timeout_ms", CONFIG_INT, "5000", 100, 600000,
        "bound on one webhook request" },
    { "alert_queue_max", CONFIG_INT, "1000", 1, 1000000,
        "alerts kept for delivery; a new one on a full queue drops the "
        "oldest" },
    { "alert_backoff_max_ms", CONFIG_INT, "300000", 1000, 86400000,
        "the cap of the delay between webhook tries (1 s, doubled per "
        "failed try)" },
    { "event_retention_days", CONFIG_INT, "30", 0, 36500,
        "events older than this are deleted (0: kept forever)" },
    { "http_header_timeout_ms", CONFIG_INT, "10000", 100, 600000,
        "a request head must be complete this long after its first byte" },
    { "http_body_timeout_ms", CONFIG_INT, "30000", 100, 3600000,
        "a request body must be complete this long after its head" },
    { "http_write_timeout_ms", CONFIG_INT, "30000", 100, 3600000,
        "a client must take 64 KiB of a response (or all of it) within "
        "this long" },
    { "http_idle_timeout_ms", CONFIG_INT, "60000", 100, 3600000,
        "an idle keep-alive connection is closed after this long" },
    { "max_connections", CONFIG_INT, "0", 0, 1000000,
        "API connections in all (0: from RLIMIT_NOFILE, leaving room for "
        "the database, logs and webhooks)" },
    { "agent_reserved_connections", CONFIG_INT, "0", 0, 1000000,
        "of max_connections, kept for agents and the Unix socket (0: a "
        "quarter)" },
    { "max_connections_per_peer", CONFIG_INT, "256", 0, 1000000,
        "user connections from one TCP address or one uid on the Unix "
        "socket (0: no cap)" },
    { "user_max_queued_jobs", CONFIG_INT, "100000", 0, 100000000,
        "queued (PENDING or held) jobs one user may have (0: no limit)" },
    { "user_submit_rate", CONFIG_INT, "2000", 0, 1000000,
        "submissions per second per user, on average (0: no limit)" },
    { "user_submit_burst", CONFIG_INT, "10000", 1, 1000000,
        "submissions one user may make at once" },
    { "user_max_running_jobs", CONFIG_INT, "0", 0, 100000000,
        "jobs one user may have running (placed, running or restarting); "
        "more wait with the reason (0: no limit; operators too)" },
    { "log_max_bytes_per_job", CONFIG_INT, "1073741824", 0, (int64_t)1 << 50,
        "rank output stored for one job; beyond it the oldest is dropped "
        "and `lockstep logs` says how much (0: no limit)" },
    { "operator_max_queued_jobs", CONFIG_INT, "0", 0, 100000000,
        "user_max_queued_jobs for operators (0: no limit)" },
    { "operator_submit_rate", CONFIG_INT, "0", 0, 1000000,
        "user_submit_rate for operators (0: no limit)" },
    { "operator_submit_burst", CONFIG_INT, "200", 1, 1000000,
        "user_submit_burst for operators" },
    { "replica_id", CONFIG_INT, "0", 0, 65535,
        "this scheduler's id among its replicas (docs/operations.md "
        "\"Replicas\"); 0: a single scheduler" },
    { "replica_address", CONFIG_STR, "", 0, 0,
        "host:port this replica's Raft listens on; the other replicas "
        "connect to it" },
    { "replica_bind_address", CONFIG_STR, "", 0, 0,
        "host:port the Raft listener binds (default: replica_address), for "
        "an address the others reach through a NAT or a proxy" },
    { "replicas", CONFIG_STR, "", 0, 0,
        "the replicas a new cluster starts with, ID@HOST:PORT "
        "comma-separated, the same on each; a replica not listed joins once "
        "an operator adds it" },
    { "replica_url", CONFIG_STR, "", 0, 0,
        "the URL clients reach this replica's API at (default: "
        "http://HOST:PORT of listen)" },
    { "replica_election_timeout_ms", CONFIG_INT, "1000", 100, 60000,
        "a follower that hears no leader for this long (up to twice) "
        "starts an election; a leader that hears no majority for this long "
        "steps down" },
    { "replica_snapshot_entries", CONFIG_INT, "1024", 16, 100000000,
        "a replica snapshots its database after this many entries and "
        "keeps as many behind the snapshot" },
    { NULL, 0, NULL, 0, 0, NULL },
};

struct lockstepd_conf;

struct lockstepd {
    uv_loop_t loop;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    uv_signal_t sighup;
    struct schedd *sd;
    struct repl *repl; /* NULL: a single scheduler */
    struct recovery *recovery;
    struct pass *pass;
    struct tick *tick;
    struct api *api;
    struct obs *obs;
    struct webhook *webhook;
    struct lockstepd_conf *conf; /* main's; SIGHUP reads the secrets again,
                                  * a deposed leader's re-exec reads it */
    bool stopping;
};

/* Everything main needs from the configuration, validated. */
struct lockstepd_conf {
    struct schedd_opts opts;
    char host[256];
    enum log_level level;
    char *secret;
    char *secret_prev;                          /* NULL: none */
    const char *secret_file, *secret_prev_file; /* borrowed from the config */
    struct repl_opts repl;                      /* when opts.replica */
};

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: lockstepd [-c FILE] [-o KEY=VALUE]... [--check-config]\n"
        "       lockstepd [-c FILE] [-o KEY=VALUE]... --seed-from DB\n"
        "       lockstepd [-c FILE] [-o KEY=VALUE]... --derive-node-key NODE\n"
        "       lockstepd --dump-routes\n"
        "       lockstepd --version\n"
        "\n"
        "  -c, --config FILE     read the configuration file FILE\n"
        "  -o, --option K=V      set a configuration key (after the file)\n"
        "      --check-config    check the configuration and exit\n"
        "      --seed-from DB    bootstrap a new replica set from DB (a\n"
        "                        backup, or a single scheduler's database)\n"
        "      --derive-node-key NODE\n"
        "                        print the key file of agent NODE, derived\n"
        "                        from the cluster secret(s), and exit\n"
        "      --dump-routes     print the API's routes and who may call\n"
        "                        them, and exit\n"
        "      --version         print the version and exit\n"
        "  -h, --help            show this help\n");
}

/* "host:port", "[v6]:port" or "" into host/port. */
static int
parse_listen(const char *s, char *host, size_t hostlen, int *port,
    struct err *err)
{
    const char *colon, *h = s;
    size_t hn;
    char *end = NULL;
    long p;

    host[0] = '\0';
    *port = 0;
    if (*s == '\0')
        return 0;
    colon = strrchr(s, ':');
    if (colon == NULL || colon == s || colon[1] == '\0')
        return err_set(err, -EINVAL,
            "listen: '%s' is not of the form host:port", s);
    hn = (size_t)(colon - s);
    if (h[0] == '[' && colon[-1] == ']') {
        h++;
        hn -= 2;
    }
    if (hn == 0 || hn >= hostlen)
        return err_set(err, -EINVAL, "listen: bad host in '%s'", s);
    memcpy(host, h, hn);
    host[hn] = '\0';
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || p < 0 || p > 65535)
        return err_set(err, -EINVAL, "listen: bad port in '%s'", s);
    *port = (int)p;
    return 0;
}

/* straggler_ratio: a decimal number in [1.01, 10]. */
static int
straggler_ratio_parse(const char *v, double *out, struct err *err)
{
    char *end;
    double d;

    errno = 0;
    d = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(d >= 1.01 && d <= 10))
        return err_set(err, -EINVAL,
            "straggler_ratio '%s': must be a number from 1.01 to 10", v);
    *out = d;
    return 0;
}

/* The keys of what on-call observes (alerts, metrics, events). */
static int
conf_observe(const struct config *cfg, struct schedd_opts *o, struct err *err)
{
    char *server = NULL, *path = NULL;

    o->metrics_token_required = config_bool(cfg, "metrics_token_required");
    o->alert_webhook_url = config_str(cfg, "alert_webhook_url");
    o->alert_webhook_timeout_ms = (int)config_int(cfg,
        "alert_webhook_timeout_ms");
    o->alert_queue_max = (int)config_int(cfg, "alert_queue_max");
    o->alert_backoff_max_ms = (int)config_int(cfg, "alert_backoff_max_ms");
    o->event_retention_days = (int)config_int(cfg, "event_retention_days");
    if (o->alert_webhook_url[0] &&
        webhook_split_url(o->alert_webhook_url, &server, &path, err) < 0)
        return -EINVAL;
    free(server);
    free(path);
    return 0;
}

/* Raise the soft descriptor limit to the hard one; the limit in effect. */
static size_t
nofile_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1048576)
        return 1048576;
    return (size_t)rl.rlim_cur;
}

/* The connection deadlines and caps (docs/operations.md "Connection
 * limits"). Connections may use what the descriptor limit leaves after a
 * headroom of a quarter (at least 256, or half of a small limit; at most
 * 1,024) for the database, log files, webhooks and Raft: the scheduler
 * keeps no descriptor per job or node besides connections, so a quarter
 * of a large limit (5,000 of 20,000) only turned agents away. */
static int
conf_limits(const struct config *cfg, struct schedd_opts *o, struct err *err)
{
    struct schedd_http_limits *h = &o->http;
    size_t nofile = nofile_limit(), room, head;

    h->header_timeout_ms = (int)config_int(cfg, "http_header_timeout_ms");
    h->body_timeout_ms = (int)config_int(cfg, "http_body_timeout_ms");
    h->write_timeout_ms = (int)config_int(cfg, "http_write_timeout_ms");
    h->idle_timeout_ms = (int)config_int(cfg, "http_idle_timeout_ms");
    head = nofile / 4 > 256 ? nofile / 4 : 256;
    head = head < 1024 ? head : 1024;
    room = nofile > 2 * head ? nofile - head : nofile / 2;
    h->max_conns = (size_t)config_int(cfg, "max_connections");
    if (h->max_conns == 0 || h->max_conns > room) {
        if (h->max_conns > room)
            log_warn("max_connections %zu is above what %zu descriptors "
                     "allow; using %zu",
                h->max_conns, nofile, room);
        h->max_conns = room;
    }
    h->reserve = (size_t)config_int(cfg, "agent_reserved_connections");
    if (h->reserve == 0)
        h->reserve = h->max_conns / 4 > 0 ? h->max_conns / 4 : 1;
    if (h->reserve >= h->max_conns)
        return err_set(err, -EINVAL,
            "agent_reserved_connections (%zu) must be below "
            "max_connections (%zu)",
            h->reserve, h->max_conns);
    h->per_peer = (size_t)config_int(cfg, "max_connections_per_peer");
    o->quota.user.max_queued = (int)config_int(cfg, "user_max_queued_jobs");
    o->quota.user.submit_rate = (int)config_int(cfg, "user_submit_rate");
    o->quota.user.submit_burst = (int)config_int(cfg, "user_submit_burst");
    o->quota.op.max_queued = (int)config_int(cfg, "operator_max_queued_jobs");
    o->quota.op.submit_rate = (int)config_int(cfg, "operator_submit_rate");
    o->quota.op.submit_burst = (int)config_int(cfg, "operator_submit_burst");
    o->quota.max_running = (int)config_int(cfg, "user_max_running_jobs");
    o->log_max_bytes = config_int(cfg, "log_max_bytes_per_job");
    if (o->log_max_bytes > 0 && o->log_max_bytes < 65536)
        return err_set(err, -EINVAL,
            "log_max_bytes_per_job: %lld is below 65536 (64 KiB)",
            (long long)o->log_max_bytes);
    return 0;
}

/* TLS on the TCP listener: on unless switched off, and then with
 * credentials that load and check (the same as at start and reload). */
static int
conf_tls(const struct config *cfg, struct schedd_opts *o, struct err *err)
{
    o->tls = config_bool(cfg, "tls");
    o->tls_cert = config_str(cfg, "tls_cert");
    o->tls_key = config_str(cfg, "tls_key");
    o->tls_ca = config_str(cfg, "tls_ca");
    if (o->listen_host[0] == '\0' || !o->tls)
        return 0;
    if (o->tls_cert[0] == '\0' || o->tls_key[0] == '\0')
        return err_set(err, -EINVAL,
            "listen = %s needs tls_cert and tls_key, since tls is on (the "
            "default): make a certificate (docs/operations.md \"TLS\"), or "
            "set tls = off for plain HTTP on TCP",
            config_str(cfg, "listen"));
    return http_tls_check(o->tls_cert, o->tls_key, o->tls_ca, NULL, err);
}

/* The node health policy's keys (health.h). */
static void
conf_health(const struct config *cfg, struct health_config *h)
{
    h->soft_repeats = (int)config_int(cfg, "health_soft_repeats");
    h->unreliable_repeats = (int)config_int(cfg, "health_unreliable_repeats");
    h->holddown_ms = config_int(cfg, "health_holddown_ms");
    h->flap_count = (int)config_int(cfg, "health_flap_count");
    h->flap_window_ms = config_int(cfg, "health_flap_window_ms");
    h->soft_scopes_exclude = (int)config_int(cfg, "straggler_jobs_exclude");
    h->soft_expire_ms = config_int(cfg, "health_soft_expire_ms");
}

/* Wipe and free the secrets of c. */
static void
conf_secrets_free(struct lockstepd_conf *c)
{
    char **ss[] = { &c->secret, &c->secret_prev };

    for (size_t i = 0; i < ARRAY_SIZE(ss); i++) {
        if (*ss[i] != NULL)
            explicit_bzero(*ss[i], strlen(*ss[i]));
        free(*ss[i]);
        *ss[i] = NULL;
    }
    c->opts.secret = c->opts.secret_prev = NULL;
    c->opts.secret_len = c->opts.secret_prev_len = 0;
}

/* Read the cluster secret and, when its file is set and exists, the
 * previous one (docs/operations.md "Rotating the cluster secret"). */
static int
conf_secrets(struct lockstepd_conf *c, struct err *err)
{
    struct schedd_opts *o = &c->opts;
    int rc;

    conf_secrets_free(c);
    rc = cred_read_secret(c->secret_file, &c->secret, &o->secret_len, err);
    if (rc == 0 && c->secret_prev_file[0] != '\0') {
        rc = cred_read_secret(c->secret_prev_file, &c->secret_prev,
            &o->secret_prev_len, err);
        if (rc == -ENOENT)
            rc = 0;
        else if (rc == 0 && o->secret_prev_len == o->secret_len &&
                 memcmp(c->secret, c->secret_prev, o->secret_len) == 0)
            rc = err_set(err, -EINVAL,
                "cluster_secret_previous_file '%s' holds the current "
                "cluster secret: write the new secret to '%s' (docs/"
                "operations.md \"Rotating the cluster secret\")",
                c->secret_prev_file, c->secret_file);
    }
    if (rc < 0) {
        conf_secrets_free(c);
        return rc;
    }
    o->secret = c->secret;
    o->secret_prev = c->secret_prev;
    return 0;
}

static int
conf_build(const struct config *cfg, struct lockstepd_conf *c, struct err *err)
{
    struct schedd_opts *o = &c->opts;
    const char *sync = config_str(cfg, "db_synchronous");
    char bad[32];
    int rc;

    memset(c, 0, sizeof(*c));
    if (log_level_parse(config_str(cfg, "log_level"), &c->level) < 0)
        return err_set(err, -EINVAL,
            "log_level: '%s' is not one of error, "
            "warn, notice, info, debug",
            config_str(cfg, "log_level"));
    if (strcmp(sync, "full") == 0)
        o->db_sync_full = true;
    else if (strcmp(sync, "normal") != 0)
        return err_set(err, -EINVAL,
            "db_synchronous: '%s' is not full or normal", sync);
    o->db_check_ms = config_int(cfg, "db_check_timeout_ms");
    if ((rc = parse_listen(config_str(cfg, "listen"), c->host, sizeof(c->host),
             &o->listen_port, err)) < 0)
        return rc;
    o->listen_host = c->host;
    o->socket_path = config_str(cfg, "socket");
    if (o->listen_host[0] == '\0' && o->socket_path[0] == '\0')
        return err_set(err, -EINVAL,
            "listen and socket are both empty: nothing to serve on");
    o->port_file = config_str(cfg, "port_file");
    o->state_dir = config_str(cfg, "state_dir");
    if (o->state_dir[0] == '\0')
        return err_set(err, -EINVAL, "state_dir: must not be empty");
    o->operators = config_str(cfg, "operators");
    o->heartbeat_ms = (int)config_int(cfg, "heartbeat_ms");
    o->node_timeout_ms = (int)config_int(cfg, "node_timeout_ms");
    o->max_body = (size_t)config_int(cfg, "max_body_bytes");
    o->master_port_base = (int)config_int(cfg, "master_port_base");
    o->master_port_count = (int)config_int(cfg, "master_port_count");
    if (o->master_port_base + o->master_port_count - 1 > 65535)
        return err_set(err, -EINVAL,
            "master_port_base + master_port_count "
            "goes past port 65535");
    if ((rc = nodes_witness_conf(cfg, o, err)) < 0)
        return rc;
    o->dump_timeout_ms = (int)config_int(cfg, "dump_timeout_ms");
    o->rank_stats_window_ms = (int)config_int(cfg, "rank_stats_window_ms");
    if ((rc = straggler_ratio_parse(config_str(cfg, "straggler_ratio"),
             &o->straggler_ratio, err)) < 0)
        return rc;
    o->straggler_windows = (int)config_int(cfg, "straggler_windows");
    o->policy.backoff_ms = config_int(cfg, "restart_backoff_ms");
    o->policy.backoff_max_ms = config_int(cfg, "restart_backoff_max_ms");
    if (o->policy.backoff_max_ms < o->policy.backoff_ms)
        return err_set(err, -EINVAL,
            "restart_backoff_max_ms (%lld) is "
            "below restart_backoff_ms (%lld)",
            (long long)o->policy.backoff_max_ms,
            (long long)o->policy.backoff_ms);
    o->policy.crash_loop_threshold = (int)config_int(cfg,
        "crash_loop_threshold");
    o->policy.blame_threshold = (int)config_int(cfg, "blame_threshold");
    o->policy.blame_window_ms = config_int(cfg, "blame_window_ms");
    rc = policy_signals_parse(config_str(cfg, "blame_hardware_signals"),
        &o->policy.blame_hw_signals, bad, sizeof(bad));
    if (rc < 0)
        return err_set(err, rc,
            "blame_hardware_signals: '%s' is not a signal "
            "(a name such as SIGBUS or BUS, or a number 1..63)",
            bad);
    if ((rc = conf_observe(cfg, o, err)) < 0 ||
        (rc = conf_limits(cfg, o, err)) < 0)
        return rc;
    conf_health(cfg, &o->health);
    o->sched_policy = config_str(cfg, "sched_policy");
    if (sched_policy_find(o->sched_policy) == NULL)
        return err_set(err, -EINVAL,
            "sched_policy: unknown policy '%s' "
            "(known: %s)",
            o->sched_policy, sched_policy_names());
    if ((rc = repl_conf(cfg, c->host, o->lease_ms, o->node_timeout_ms, &c->repl,
             err)) < 0)
        return rc;
    o->replica = rc > 0;
    if ((rc = conf_tls(cfg, o, err)) < 0)
        return rc;
    o->agent_auth_window_ms = (int)config_int(cfg, "agent_auth_window_ms");
    o->agent_auth_legacy = config_bool(cfg, "agent_auth_legacy");
    o->agent_nonces_max = (size_t)config_int(cfg, "agent_nonces_max");
    c->secret_file = config_str(cfg, "cluster_secret_file");
    c->secret_prev_file = config_str(cfg, "cluster_secret_previous_file");
    return conf_secrets(c, err);
}

static void
signal_closed_cb(uv_handle_t *h)
{
    (void)h;
}

/* Stop in the reverse order of the start: the periodic work, then the
 * context (no more writes; the last commit), then the API (its last
 * replies, its connections). The loop ends once every handle is closed. */
static void
lockstepd_shutdown(struct lockstepd *d)
{
    if (d->stopping)
        return;
    d->stopping = true;
    uv_close((uv_handle_t *)&d->sigterm, signal_closed_cb);
    uv_close((uv_handle_t *)&d->sigint, signal_closed_cb);
    uv_close((uv_handle_t *)&d->sighup, signal_closed_cb);
    tick_destroy(d->tick);
    d->tick = NULL;
    webhook_destroy(d->webhook);
    d->webhook = d->sd->webhook = NULL;
    obs_destroy(d->obs);
    d->obs = NULL;
    pass_destroy(d->pass);
    d->pass = NULL;
    schedd_stop(d->sd, NULL);
    if (d->api)
        api_close(d->api, NULL, NULL);
    d->api = NULL;
    if (d->repl)
        repl_close(d->repl, NULL, NULL);
}

static void
signal_cb(uv_signal_t *s, int signum)
{
    struct lockstepd *d = s->data;

    log_notice("received %s; shutting down", strsignal(signum));
    lockstepd_shutdown(d);
}

/* SIGHUP: load the TLS certificate and read the cluster secrets again
 * (rotations); whichever fails to load, the one in use stays. */
static void
sighup_cb(uv_signal_t *s, int signum)
{
    struct lockstepd *d = s->data;
    struct lockstepd_conf *c = d->conf;
    struct err err;

    (void)signum;
    if (d->stopping)
        return;
    if (d->api != NULL)
        api_tls_reload(d->api);
    err_clear(&err);
    if (conf_secrets(c, &err) < 0) {
        log_error("SIGHUP: %s; the cluster secrets in use stay", err.msg);
        return;
    }
    schedd_set_secrets(d->sd, c->secret, c->opts.secret_len, c->secret_prev,
        c->opts.secret_prev_len);
    conf_secrets_free(c);
    log_notice("SIGHUP: cluster secrets read again from '%s'%s%s%s",
        c->secret_file, d->sd->secret_prev ? " and '" : "",
        d->sd->secret_prev ? c->secret_prev_file : "",
        d->sd->secret_prev ? "' (previous: a rotation)" : " (no previous)");
}

/* Report and close whatever is still open (a bug: every owner closes its
 * handles); the loop must then end cleanly. */
static void
walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    log_error("handle %s still open at exit", uv_handle_type_name(h->type));
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* What the command line asks for besides the configuration. */
struct lockstepd_args {
    bool check;
    const char *derive_node; /* --derive-node-key NODE, or NULL */
    const char *seed;        /* --seed-from DB, or NULL */
};

/* Parse the command line: 0 to go on, else the exit status + 1 (so 0
 * stays "go on"). */
static int
parse_args(int argc, char **argv, const char **file, char ***overrides,
    size_t *noverrides, struct lockstepd_args *a)
{
    static const struct option longopts[] = {
        { "config", required_argument, NULL, 'c' },
        { "option", required_argument, NULL, 'o' },
        { "check-config", no_argument, NULL, 'C' },
        { "derive-node-key", required_argument, NULL, 'K' },
        { "seed-from", required_argument, NULL, 'S' },
        { "dump-routes", no_argument, NULL, 'R' },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int opt;

    while ((opt = getopt_long(argc, argv, "c:o:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            *file = optarg;
            break;
        case 'o':
            *overrides = xreallocarray(*overrides, *noverrides + 1,
                sizeof(**overrides));
            (*overrides)[(*noverrides)++] = optarg;
            break;
        case 'C':
            a->check = true;
            break;
        case 'K':
            if (!proto_valid_name(optarg, PROTO_NODE_NAME_MAX)) {
                fprintf(stderr,
                    "lockstepd: --derive-node-key: '%s' is not a node name "
                    "(1 to %d of [A-Za-z0-9._-])\n",
                    optarg, PROTO_NODE_NAME_MAX);
                return 3;
            }
            a->derive_node = optarg;
            break;
        case 'S':
            a->seed = optarg;
            break;
        case 'R':
            api_routes_dump(stdout);
            return 1;
        case 'V':
            printf("lockstepd %s\n", buildinfo_version());
            return 1;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return 3;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "lockstepd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 3;
    }
    return 0;
}

/* Print the key file of node (docs/operations.md "Node keys"). */
static int
derive_node_key(const struct lockstepd_conf *conf, const char *node)
{
    const struct schedd_opts *o = &conf->opts;
    struct cred_node_keyfile kf;
    char *text;

    cred_node_keyfile_derive(o->secret, o->secret_len, o->secret_prev,
        o->secret_prev_len, node, &kf);
    text = cred_node_keyfile_format(&kf);
    fputs(text, stdout);
    explicit_bzero(text, strlen(text));
    explicit_bzero(&kf, sizeof(kf));
    free(text);
    return 0;
}

/* Load the file and the overrides into cfg and build conf from it. */
static int
load_config(struct config *cfg, const char *file, char **overrides,
    size_t noverrides, struct lockstepd_conf *conf, struct err *err)
{
    int rc = file ? config_load_file(cfg, file, err) : 0;

    for (size_t i = 0; rc == 0 && i < noverrides; i++)
        rc = config_set_arg(cfg, overrides[i], err);
    if (rc == 0)
        rc = conf_build(cfg, conf, err);
    return rc;
}

/* Create every part in order; the first failure stops (the loop then
 * closes whatever was opened). */
static int
lockstepd_start(struct lockstepd *d, const struct lockstepd_conf *conf,
    struct err *err)
{
    int rc;

    d->recovery = recovery_create(d->sd);
    d->pass = pass_create(d->sd, conf->opts.sched_policy, err);
    if (d->pass == NULL)
        return err->code ? err->code : -EINVAL;
    if ((rc = schedd_start(d->sd, err)) < 0)
        return rc;
    if ((d->obs = obs_create(d->sd, err)) == NULL)
        return err->code ? err->code : -EIO;
    d->webhook = d->sd->webhook = webhook_create(d->sd, err);
    if (d->webhook == NULL && d->sd->alert_url)
        return err->code ? err->code : -EIO;
    d->api = api_create(d->sd, &conf->opts, err);
    if (d->api == NULL)
        return err->code ? err->code : -EIO;
    d->tick = tick_create(d->sd, err);
    if (d->tick == NULL)
        return err->code ? err->code : -EIO;
    pass_trigger(d->pass);
    return 0;
}

/* A replica starts to lead (repl.h: its model is loaded): the services
 * of lockstepd_start that a follower does without. */
static int
lockstepd_lead(struct schedd *sd, void *arg, struct err *err)
{
    struct lockstepd *d = arg;
    const struct lockstepd_conf *conf = d->conf;

    d->recovery = recovery_create(sd);
    d->pass = pass_create(sd, conf->opts.sched_policy, err);
    if (d->pass == NULL)
        return err->code ? err->code : -EINVAL;
    if ((d->obs = obs_create(sd, err)) == NULL)
        return err->code ? err->code : -EIO;
    d->webhook = sd->webhook = webhook_create(sd, err);
    if (d->webhook == NULL && sd->alert_url)
        return err->code ? err->code : -EIO;
    d->tick = tick_create(sd, err);
    if (d->tick == NULL)
        return err->code ? err->code : -EIO;
    pass_trigger(d->pass);
    return 0;
}

/* A replica: the API (answering `not_leader` until this replica leads)
 * and Raft; the rest waits for lockstepd_lead. */
static int
lockstepd_start_replica(struct lockstepd *d, struct lockstepd_conf *conf,
    struct err *err)
{
    char *url = NULL;
    int rc;

    if ((rc = schedd_start(d->sd, err)) < 0)
        return rc;
    d->api = api_create(d->sd, &conf->opts, err);
    if (d->api == NULL)
        return err->code ? err->code : -EIO;
    d->repl = repl_create(d->sd, &conf->repl, lockstepd_lead, d);
    conf->repl.seed = NULL; /* the replica's now */
    if (conf->repl.url == NULL || conf->repl.url[0] == '\0') {
        url = xasprintf("%s://%s:%d", conf->opts.tls ? "https" : "http",
            conf->host, api_port(d->api));
        repl_set_url(d->repl, url);
        free(url);
    }
    return repl_start(d->repl, err);
}

/* Run the daemon until it is told to stop. Returns the exit status. */
static int
lockstepd_run(struct lockstepd *d, struct lockstepd_conf *conf)
{
    struct err err;
    int status = 0, rc;

    err_clear(&err);
    d->conf = conf;
    if ((rc = uv_loop_init(&d->loop)) < 0)
        fatalx("cannot create the event loop: %s", uv_strerror(rc));
    d->sd = schedd_create(&d->loop, &conf->opts, &err);
    /* The context keeps its copy; SIGHUP reads the files again. */
    conf_secrets_free(conf);
    if (d->sd == NULL) {
        log_error("%s", err.msg);
        /* Let the handles schedd_create made and closed (the log writer's)
         * finish closing, so their memory is freed. */
        uv_run(&d->loop, UV_RUN_DEFAULT);
        uv_loop_close(&d->loop);
        if (err.code != -EUCLEAN && err.code != -ENODATA)
            return 1;
        log_error("not starting on an empty database in its place: restore "
                  "it from a backup, or move the state directory aside to "
                  "start afresh (docs/operations.md \"A lost or damaged "
                  "database\")");
        return err.code == -EUCLEAN ? EX_DB_DAMAGED : EX_DB_LOST;
    }
    uv_signal_init(&d->loop, &d->sigterm);
    uv_signal_init(&d->loop, &d->sigint);
    uv_signal_init(&d->loop, &d->sighup);
    d->sigterm.data = d;
    d->sigint.data = d;
    d->sighup.data = d;
    if ((rc = uv_signal_start(&d->sigterm, signal_cb, SIGTERM)) < 0 ||
        (rc = uv_signal_start(&d->sigint, signal_cb, SIGINT)) < 0 ||
        (rc = uv_signal_start(&d->sighup, sighup_cb, SIGHUP)) < 0)
        fatalx("cannot watch signals: %s", uv_strerror(rc));
    rc = conf->opts.replica ? lockstepd_start_replica(d, conf, &err)
                            : lockstepd_start(d, conf, &err);
    if (rc < 0) {
        log_error("%s", err.msg);
        status = rc == -EEXIST && conf->repl.seed_path ? EX_CONFIG : 1;
        lockstepd_shutdown(d);
    }
    uv_run(&d->loop, UV_RUN_DEFAULT);
    recovery_destroy(d->recovery);
    repl_destroy(d->repl);
    schedd_destroy(d->sd);
    if (uv_loop_close(&d->loop) != 0) {
        uv_walk(&d->loop, walk_cb, NULL);
        uv_run(&d->loop, UV_RUN_DEFAULT);
        if (uv_loop_close(&d->loop) != 0)
            log_error("the event loop did not close cleanly");
        status = status ? status : 1;
    } else if (status == 0) {
        log_notice("lockstepd stopped");
    }
    return status;
}

int
main(int argc, char **argv)
{
    struct lockstepd d;
    struct lockstepd_conf conf;
    struct config *cfg = NULL;
    struct err err;
    const char *file = NULL;
    char **overrides = NULL;
    size_t noverrides = 0;
    struct lockstepd_args args = { false, NULL, NULL };
    int status;

    memset(&d, 0, sizeof(d));
    memset(&conf, 0, sizeof(conf));
    err_clear(&err);
    status = parse_args(argc, argv, &file, &overrides, &noverrides, &args);
    if (status != 0) {
        free(overrides);
        return status - 1;
    }
    cfg = config_create(lockstepd_keys);
    if (load_config(cfg, file, overrides, noverrides, &conf, &err) < 0) {
        fprintf(stderr, "lockstepd: %s\n", err.msg);
        status = EX_CONFIG;
    } else if (args.seed && repl_seed_load(&conf.repl, args.seed, &err) < 0) {
        fprintf(stderr, "lockstepd: %s\n", err.msg);
        status = err.code == -EUCLEAN ? EX_DB_DAMAGED : EX_CONFIG;
    } else if (args.derive_node) {
        status = derive_node_key(&conf, args.derive_node);
    } else if (args.check) {
        printf("configuration OK\n");
    } else {
        log_init("lockstepd", conf.level, LOG_MODE_AUTO);
        signal(SIGPIPE, SIG_IGN);
        conf.repl.argv = args.seed ? repl_seed_argv(argv) : argv;
        status = lockstepd_run(&d, &conf);
        if (conf.repl.argv != argv)
            free((void *)conf.repl.argv);
    }
    free(conf.repl.seed);
    free(overrides);
    conf_secrets_free(&conf);
    config_destroy(cfg);
    return status;
}
