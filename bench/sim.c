/*
 * sim.c - lockstep-sim: N simulated agents on one libuv loop
 *
 * Each simulated node speaks the real agent protocol (docs/api.md
 * "Agents' endpoints") over real HTTP to a real lockstepd, with the real
 * code of common/ (proto for every message, cred for each node's key and
 * every request's MAC, curlx for HTTP on the loop): it registers (POST
 * /v1/agent/status with "register": true), sends a status every heartbeat_ms
 * (the scheduler's reply sets it;
 * --heartbeat-ms overrides) and at once when a rank changes, keeps a long
 * poll GET /v1/agent/work outstanding, "runs" the ranks of every launch it
 * is given (no process: a rank is RUNNING from the launch on, EXITED after
 * --rank-time ms with exit code 1 with probability --fail-prob, else 0),
 * reports a step every 100 ms and a checkpoint commit (ckpt_steps) every
 * --ckpt-every steps, and ships --log-rate lines a second per rank
 * (POST /v1/agent/logs) once a second. A job the desired state no longer
 * lists is dropped, as the agent does.
 *
 * Every --report-ms it prints one line of figures since the last one:
 * status reports/s, status RTT p50/p99 (ms), work replies/s, log posts/s,
 * ranks started and ended, errors, nodes registered.
 *
 * One curlx per node (each signs with its node's key), so each node
 * holds two connections (status, work) and a third while shipping logs.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <curl/curl.h>
#include <uv.h>

#include "bench/simping.h"
#include "common/cred.h"
#include "common/curlx.h"
#include "common/err.h"
#include "common/jsonx.h"
#include "common/leaseping.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/timeid.h"
#include "common/xalloc.h"

#define SIM_STEP_MS 100
#define SIM_TICK_MS 50
/* An idle node's lease pings, as agent/pinger.c's. */
#define SIM_PING_IDLE_MS 10000
#define SIM_LOG_EVERY_MS 1000
#define SIM_WORK_WAIT_MS 25000
#define SIM_STATUS_TIMEOUT_MS 10000L
#define SIM_RETRY_MS 1000
#define SIM_RTT_MAX 65536

struct sim_opts {
    const char *server;
    const char *ca; /* CA file for an https:// server, or NULL */
    const char *secret_file;
    int nodes;
    int first; /* the first node's number */
    const char *prefix;
    int gpus;
    int cpus;
    int64_t rank_time_ms;
    double fail_prob;
    double log_rate;      /* lines per second per rank */
    int64_t heartbeat_ms; /* 0: the scheduler's */
    int64_t report_ms;
    int64_t ramp_ms;     /* registrations spread over this long */
    int ckpt_every;      /* steps; 0: no commits */
    int64_t duration_ms; /* 0: until SIGINT/SIGTERM */
    bool no_pings;       /* no lease pings, whatever the scheduler asks */
};

struct sim_rank {
    int rank;
    int exit_code;
    int64_t start_ms, end_ms; /* wall clock; end_ms 0 while running */
    int64_t due_mono;         /* when it exits */
    int64_t start_mono;
    int64_t log_offset; /* bytes shipped */
    int64_t log_lines;  /* lines written */
    bool log_inflight;
};

struct sim_job {
    struct sim_job *next;
    int64_t job;
    int attempt;
    bool scan; /* node rank 0 with a checkpoint dir */
    struct sim_rank *ranks;
    size_t nranks;
};

struct sim_node {
    struct sim *s;
    char name[64];
    char agent_id[33];
    unsigned char key[CRED_KEY_LEN]; /* the node's, from the secret */
    struct cred_mac_key *lease_key;  /* its lease pings' (leaseping.h) */
    int64_t ping_ms;                 /* asked by the scheduler; 0: none */
    int64_t ping_mono;               /* the last ping sent */
    uint64_t ping_seq;
    struct curlx *cx;
    uv_timer_t status_timer;
    uv_timer_t work_timer;
    struct curlx_req *status_req;
    struct curlx_req *work_req;
    bool need_register;
    bool registered;
    bool dirty;
    int64_t heartbeat_ms;
    int64_t status_sent_ns;
    uint64_t gen;
    struct sim_job *jobs;
};

struct sim_stats {
    uint64_t statuses, works, logs, started, ended, failed, errors;
    uint64_t log_lines; /* lines in the log posts accepted */
    double rtt[SIM_RTT_MAX];
    size_t nrtt;
};

struct sim {
    struct sim_opts o;
    uv_loop_t *loop;
    char *secret;
    size_t secret_len;
    struct sim_node *nodes;
    int nstarted;
    uv_timer_t ramp_timer, tick_timer, report_timer, stop_timer;
    uv_signal_t sigint, sigterm;
    struct sim_stats st;
    struct simping *pings; /* NULL: none */
    int64_t last_report_mono;
    int64_t last_log_mono;
};

static void sim_status_send(struct sim_node *n);
static void sim_work_fetch(struct sim_node *n);

/* ---- figures ------------------------------------------------------------- */

static int
sim_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void
sim_rtt_add(struct sim *s, int64_t sent_ns)
{
    if (s->st.nrtt < SIM_RTT_MAX)
        s->st.rtt[s->st.nrtt++] = (double)(timeid_mono_ns() - sent_ns) / 1e6;
}

static int
sim_registered(const struct sim *s)
{
    int i, c = 0;

    for (i = 0; i < s->nstarted; i++)
        c += s->nodes[i].registered;
    return c;
}

static void
sim_report_cb(uv_timer_t *t)
{
    struct sim *s = t->data;
    struct sim_stats *st = &s->st;
    int64_t now = timeid_mono_ms();
    double secs = (double)(now - s->last_report_mono) / 1000.0;
    double p50 = 0, p99 = 0;
    uint64_t psent = 0, pok = 0, pbad = 0;

    if (secs <= 0)
        secs = 1;
    if (st->nrtt > 0) {
        qsort(st->rtt, st->nrtt, sizeof(st->rtt[0]), sim_cmp_double);
        p50 = st->rtt[st->nrtt / 2];
        p99 = st->rtt[(st->nrtt * 99) / 100];
    }
    if (s->pings != NULL)
        simping_counts(s->pings, &psent, &pok, &pbad);
    printf("sim: nodes=%d registered=%d reports/s=%.0f rtt_p50_ms=%.1f "
           "rtt_p99_ms=%.1f works/s=%.1f logs/s=%.0f log_lines/s=%.0f "
           "ranks_started=%" PRIu64 " ranks_ended=%" PRIu64
           " ranks_failed=%" PRIu64 " errors=%" PRIu64
           " pings/s=%.0f ping_answers/s=%.0f ping_bad=%" PRIu64 "\n",
        s->o.nodes, sim_registered(s), (double)st->statuses / secs, p50, p99,
        (double)st->works / secs, (double)st->logs / secs,
        (double)st->log_lines / secs, st->started, st->ended, st->failed,
        st->errors, (double)psent / secs, (double)pok / secs, pbad);
    fflush(stdout);
    st->statuses = st->works = st->logs = st->errors = st->log_lines = 0;
    st->started = st->ended = st->failed = 0;
    st->nrtt = 0;
    s->last_report_mono = now;
}

/* ---- the simulated ranks ------------------------------------------------- */

static struct sim_job *
sim_job_find(struct sim_node *n, int64_t job, int attempt)
{
    struct sim_job *j;

    for (j = n->jobs; j != NULL; j = j->next)
        if (j->job == job && j->attempt == attempt)
            return j;
    return NULL;
}

static void
sim_job_start(struct sim_node *n, const struct proto_launch *l)
{
    struct sim_job *j = xcalloc(1, sizeof(*j));
    int64_t now = timeid_now_ms(), mono = timeid_mono_ms();
    size_t i;

    j->job = l->job;
    j->attempt = l->attempt;
    j->scan = l->scan_checkpoints;
    j->nranks = l->nranks;
    j->ranks = xcalloc(l->nranks > 0 ? l->nranks : 1, sizeof(*j->ranks));
    for (i = 0; i < l->nranks; i++) {
        struct sim_rank *r = &j->ranks[i];

        r->rank = l->ranks[i].rank;
        r->start_ms = now;
        r->start_mono = mono;
        r->due_mono = mono + n->s->o.rank_time_ms;
        r->exit_code = (double)random() / RAND_MAX < n->s->o.fail_prob ? 1 : 0;
    }
    n->s->st.started += l->nranks;
    j->next = n->jobs;
    n->jobs = j;
}

static void
sim_job_free(struct sim_job *j)
{
    free(j->ranks);
    free(j);
}

/* The desired state: start what is new, drop what it no longer lists. */
static bool
sim_apply(struct sim_node *n, const struct proto_work *w)
{
    struct sim_job **pp = &n->jobs, *j;
    bool changed = false;
    size_t i;

    while ((j = *pp) != NULL) {
        bool listed = false;

        for (i = 0; i < w->njobs && !listed; i++)
            listed = w->jobs[i].job == j->job &&
                     w->jobs[i].attempt == j->attempt;
        if (listed) {
            pp = &j->next;
            continue;
        }
        *pp = j->next;
        sim_job_free(j);
        changed = true;
    }
    for (i = 0; i < w->njobs; i++) {
        if (sim_job_find(n, w->jobs[i].job, w->jobs[i].attempt) != NULL)
            continue;
        sim_job_start(n, &w->jobs[i]);
        changed = true;
    }
    return changed;
}

static void sim_log_ship(struct sim_node *n, struct sim_job *j,
    struct sim_rank *r, int64_t mono);

/* Ranks whose time is up exit, their last lines shipped as they do; true
 * when one did. */
static bool
sim_node_step(struct sim_node *n, int64_t mono)
{
    struct sim_job *j;
    bool changed = false;
    size_t i;

    for (j = n->jobs; j != NULL; j = j->next) {
        for (i = 0; i < j->nranks; i++) {
            struct sim_rank *r = &j->ranks[i];

            if (r->end_ms != 0 || mono < r->due_mono)
                continue;
            if (r->log_inflight)
                continue; /* its last lines go first, as an agent's do */
            r->end_ms = timeid_now_ms();
            if (n->s->o.log_rate > 0)
                sim_log_ship(n, j, r, mono);
            n->s->st.ended++;
            n->s->st.failed += r->exit_code != 0;
            changed = true;
        }
    }
    return changed;
}

/* ---- status -------------------------------------------------------------- */

static int64_t
sim_rank_step(const struct sim_rank *r)
{
    int64_t until = r->end_ms != 0 ? r->due_mono : timeid_mono_ms();

    return (until - r->start_mono) / SIM_STEP_MS;
}

static void
sim_fill_rank(const struct sim *s, const struct sim_rank *r,
    struct proto_rank_status *out, int64_t *ckpt)
{
    int64_t step = sim_rank_step(r);

    out->rank = r->rank;
    out->state = r->end_ms != 0 ? PROTO_RANK_EXITED : PROTO_RANK_RUNNING;
    out->pid = 100000 + r->rank;
    out->start_ms = r->start_ms;
    out->end_ms = r->end_ms;
    out->exit_code = r->end_ms != 0 ? r->exit_code : 0;
    out->step = step;
    out->progress = PROTO_PROGRESS_STEP;
    if (s->o.ckpt_every > 0 && step >= s->o.ckpt_every) {
        *ckpt = step - step % s->o.ckpt_every;
        out->ckpt_steps = ckpt;
        out->nckpt_steps = 1;
    }
}

/* The node report's JSON text (caller frees). */
static char *
sim_report_text(struct sim_node *n)
{
    struct proto_node_report rep;
    struct proto_job_status *js;
    struct proto_rank_status *rs;
    int64_t *ck;
    struct sim_job *j;
    size_t nj = 0, nr = 0, k = 0, i;
    int gpus[64];
    cJSON *json;
    char *text;

    for (j = n->jobs; j != NULL; j = j->next, nj++)
        nr += j->nranks;
    js = xcalloc(nj + 1, sizeof(*js));
    rs = xcalloc(nr + 1, sizeof(*rs));
    ck = xcalloc(nr + 1, sizeof(*ck));
    for (i = 0; i < (size_t)n->s->o.gpus && i < 64; i++)
        gpus[i] = (int)i;
    memset(&rep, 0, sizeof(rep));
    rep.node = n->name;
    rep.reg = n->need_register;
    rep.agent_id = n->agent_id;
    rep.addr = "127.0.0.1";
    rep.res.cpus = n->s->o.cpus;
    rep.res.memory_mb = 65536;
    rep.res.gpus = gpus;
    rep.res.ngpus = i;
    rep.gen = n->gen;
    rep.jobs = js;
    rep.njobs = nj;
    for (j = n->jobs, nj = 0; j != NULL; j = j->next, nj++) {
        js[nj].job = j->job;
        js[nj].attempt = j->attempt;
        js[nj].ranks = &rs[k];
        js[nj].nranks = j->nranks;
        for (i = 0; i < j->nranks; i++, k++)
            sim_fill_rank(n->s, &j->ranks[i], &rs[k], &ck[k]);
    }
    json = proto_node_report_to_json(&rep);
    text = jsonx_print(json);
    cJSON_Delete(json);
    free(ck);
    free(rs);
    free(js);
    return text;
}

static void
sim_status_timer_cb(uv_timer_t *t)
{
    sim_status_send(t->data);
}

static void
sim_status_schedule(struct sim_node *n, int64_t ms)
{
    uv_timer_start(&n->status_timer, sim_status_timer_cb,
        (uint64_t)(ms > 0 ? ms : 0), 0);
}

static void
sim_status_done_cb(int rc, long http_status, const struct sbuf *body, void *arg)
{
    struct sim_node *n = arg;
    struct proto_status_reply reply = { .heartbeat_ms = 1000 };
    struct err err = { 0 };
    cJSON *root = NULL;

    n->status_req = NULL;
    if (rc < 0 || http_status != 200 ||
        jsonx_parse(body->buf, body->len, &root, &err) < 0 ||
        proto_status_reply_from_json(root, &reply, &err) < 0) {
        char text[200];

        cJSON_Delete(root);
        curlx_error_text(rc, http_status, body, text, sizeof(text));
        if (n->s->st.errors++ < 5)
            log_warn("node=%s status: %s %s", n->name, text, err.msg);
        n->need_register = true;
        sim_status_schedule(n, SIM_RETRY_MS);
        return;
    }
    cJSON_Delete(root);
    sim_rtt_add(n->s, n->status_sent_ns);
    n->s->st.statuses++;
    n->heartbeat_ms = n->s->o.heartbeat_ms > 0 ? n->s->o.heartbeat_ms
                                               : reply.heartbeat_ms;
    n->ping_ms = n->s->pings != NULL ? reply.ping_ms : 0;
    if (n->need_register) {
        n->need_register = false;
        n->registered = true;
        sim_work_fetch(n);
    } else if (reply.gen != n->gen && n->work_req == NULL) {
        sim_work_fetch(n);
    }
    sim_status_schedule(n, n->dirty ? 0 : n->heartbeat_ms);
    n->dirty = false;
}

static void
sim_status_send(struct sim_node *n)
{
    char *text;

    if (n->status_req != NULL) {
        n->dirty = true;
        return;
    }
    uv_timer_stop(&n->status_timer);
    text = sim_report_text(n);
    n->dirty = false;
    n->status_sent_ns = timeid_mono_ns();
    n->status_req = curlx_request(n->cx, "POST", "/v1/agent/status", text,
        strlen(text), "application/json", SIM_STATUS_TIMEOUT_MS,
        sim_status_done_cb, n);
    if (n->status_req == NULL) {
        n->s->st.errors++;
        sim_status_schedule(n, SIM_RETRY_MS);
    }
}

/* A rank changed: a status now (or right after the one in flight). */
static void
sim_kick(struct sim_node *n)
{
    if (n->status_req != NULL)
        n->dirty = true;
    else if (n->registered)
        sim_status_schedule(n, 0);
}

/* ---- work ---------------------------------------------------------------- */

static void
sim_work_timer_cb(uv_timer_t *t)
{
    sim_work_fetch(t->data);
}

static void
sim_work_done_cb(int rc, long http_status, const struct sbuf *body, void *arg)
{
    struct sim_node *n = arg;
    struct proto_work w;
    struct err err = { 0 };
    cJSON *root = NULL;

    n->work_req = NULL;
    memset(&w, 0, sizeof(w));
    if (rc < 0 || http_status != 200 ||
        jsonx_parse(body->buf, body->len, &root, &err) < 0 ||
        proto_work_from_json(root, &w, &err) < 0) {
        char text[200];

        cJSON_Delete(root);
        curlx_error_text(rc, http_status, body, text, sizeof(text));
        if (n->s->st.errors++ < 5)
            log_warn("node=%s work: %s %s", n->name, text, err.msg);
        if (http_status == 404) {
            n->need_register = true;
            sim_kick(n);
        }
        uv_timer_start(&n->work_timer, sim_work_timer_cb, SIM_RETRY_MS, 0);
        return;
    }
    cJSON_Delete(root);
    n->s->st.works++;
    if (sim_apply(n, &w) || w.gen != n->gen) {
        n->gen = w.gen;
        sim_kick(n);
    }
    proto_work_release(&w);
    sim_work_fetch(n);
}

static void
sim_work_fetch(struct sim_node *n)
{
    char path[160];

    if (n->work_req != NULL)
        return;
    uv_timer_stop(&n->work_timer);
    snprintf(path, sizeof(path),
        "/v1/agent/work?node=%s&gen=%" PRIu64 "&wait_ms=%d", n->name, n->gen,
        SIM_WORK_WAIT_MS);
    n->work_req = curlx_request(n->cx, "GET", path, NULL, 0, NULL,
        SIM_WORK_WAIT_MS + 15000, sim_work_done_cb, n);
    if (n->work_req == NULL) {
        n->s->st.errors++;
        uv_timer_start(&n->work_timer, sim_work_timer_cb, SIM_RETRY_MS, 0);
    }
}

/* ---- logs ---------------------------------------------------------------- */

struct sim_logreq {
    struct sim_node *n;
    int64_t job;
    int attempt;
    int rank;
    int64_t end;   /* the offset once accepted */
    int64_t lines; /* how many lines it carries */
};

static void
sim_log_done_cb(int rc, long http_status, const struct sbuf *body, void *arg)
{
    struct sim_logreq *lr = arg;
    struct sim_job *j = sim_job_find(lr->n, lr->job, lr->attempt);
    size_t i;

    (void)body;
    if (rc < 0 || http_status != 200) {
        lr->n->s->st.errors++;
    } else {
        lr->n->s->st.logs++;
        lr->n->s->st.log_lines += (uint64_t)lr->lines;
    }
    for (i = 0; j != NULL && i < j->nranks; i++) {
        if (j->ranks[i].rank != lr->rank)
            continue;
        j->ranks[i].log_inflight = false;
        if (rc == 0 && http_status == 200)
            j->ranks[i].log_offset = lr->end;
    }
    free(lr);
}

/* The lines rank r wrote since its last shipment, as one POST. */
static void
sim_log_ship(struct sim_node *n, struct sim_job *j, struct sim_rank *r,
    int64_t mono)
{
    int64_t until = r->end_ms != 0 ? r->due_mono : mono;
    int64_t want = (int64_t)(n->s->o.log_rate *
                             (double)(until - r->start_mono) / 1000.0);
    struct sim_logreq *lr;
    struct sbuf sb;
    char path[256];
    int64_t lines;
    size_t len;
    char *body;

    if (r->log_inflight || want <= r->log_lines)
        return;
    lines = want - r->log_lines;
    sbuf_init(&sb);
    for (; r->log_lines < want; r->log_lines++)
        sbuf_addf(&sb, "rank %d step %" PRId64 " loss 0.%06d simulated\n",
            r->rank, r->log_lines, (int)(random() % 1000000));
    body = sbuf_detach(&sb, &len);
    lr = xcalloc(1, sizeof(*lr));
    *lr = (struct sim_logreq){ n, j->job, j->attempt, r->rank,
        r->log_offset + (int64_t)len, lines };
    snprintf(path, sizeof(path),
        "/v1/agent/logs?node=%s&job=%" PRId64
        "&attempt=%d&rank=%d&stream=out&offset=%" PRId64,
        n->name, j->job, j->attempt, r->rank, r->log_offset);
    r->log_inflight = true;
    if (curlx_request(n->cx, "POST", path, body, len,
            "application/octet-stream", 10000, sim_log_done_cb, lr) == NULL) {
        r->log_inflight = false;
        n->s->st.errors++;
        free(lr);
    }
}

/* ---- the loop ------------------------------------------------------------ */

static void
sim_tick_cb(uv_timer_t *t)
{
    struct sim *s = t->data;
    int64_t mono = timeid_mono_ms();
    bool logs = s->o.log_rate > 0 &&
                mono - s->last_log_mono >= SIM_LOG_EVERY_MS;
    struct sim_job *j;
    int i;

    if (logs)
        s->last_log_mono = mono;
    for (i = 0; i < s->nstarted; i++) {
        struct sim_node *n = &s->nodes[i];

        if (sim_node_step(n, mono))
            sim_kick(n);
        /* As an agent: every ping_ms while it runs ranks, every 10 s
         * idle. */
        if (n->ping_ms > 0 && n->registered &&
            mono - n->ping_mono >=
                (n->jobs != NULL ? n->ping_ms : SIM_PING_IDLE_MS)) {
            n->ping_mono = mono;
            simping_send(s->pings, n->name, n->lease_key, ++n->ping_seq);
        }
        for (j = n->jobs; logs && j != NULL; j = j->next)
            for (size_t k = 0; k < j->nranks; k++)
                sim_log_ship(n, j, &j->ranks[k], mono);
    }
}

/* Sign one request of node arg, as the agent does (a curlx_sign_fn). */
static char *
sim_sign(const char *method, const char *path, const char *body, size_t len,
    void *arg)
{
    struct sim_node *n = arg;

    return cred_agent_sign(n->key, n->name, method, path, body, len,
        timeid_now_ms());
}

static int
sim_node_init(struct sim *s, struct sim_node *n, int num, struct err *err)
{
    n->s = s;
    snprintf(n->name, sizeof(n->name), "%s%d", s->o.prefix, num);
    if (timeid_random_hex(n->agent_id, 16) < 0)
        return err_set(err, -EIO, "cannot read random bytes");
    n->cx = curlx_create(s->loop, s->o.server, err);
    if (n->cx == NULL)
        return -EINVAL;
    /* The simulator plays every node, so it holds the cluster secret and
     * derives each node's key; a real agent holds only its own. */
    cred_node_key(s->secret, s->secret_len, n->name, n->key);
    n->lease_key = leaseping_key_create(n->key);
    curlx_set_signer(n->cx, sim_sign, n);
    curlx_set_ca(n->cx, s->o.ca);
    uv_timer_init(s->loop, &n->status_timer);
    uv_timer_init(s->loop, &n->work_timer);
    n->status_timer.data = n->work_timer.data = n;
    n->need_register = true;
    n->heartbeat_ms = 1000;
    return 0;
}

/* Start the next nodes of the ramp: as many as are due by now. */
static void
sim_ramp_cb(uv_timer_t *t)
{
    struct sim *s = t->data;
    struct err err = { 0 };
    int per = s->o.ramp_ms > 0
                  ? (int)((int64_t)s->o.nodes * SIM_TICK_MS / s->o.ramp_ms) + 1
                  : s->o.nodes;

    while (per-- > 0 && s->nstarted < s->o.nodes) {
        struct sim_node *n = &s->nodes[s->nstarted];

        if (sim_node_init(s, n, s->o.first + s->nstarted, &err) < 0)
            fatalx("%s", err.msg);
        s->nstarted++;
        sim_status_send(n);
    }
    if (s->nstarted >= s->o.nodes)
        uv_timer_stop(t);
}

/* The lease key of node, one of ours (simping_key_fn). */
static struct cred_mac_key *
sim_lease_key(void *arg, const char *node)
{
    struct sim *s = arg;
    size_t pl = strlen(s->o.prefix);
    char *end;
    long num;

    if (strncmp(node, s->o.prefix, pl) != 0)
        return NULL;
    num = strtol(node + pl, &end, 10);
    if (*end != '\0' || num < s->o.first || num >= s->o.first + s->nstarted)
        return NULL;
    return s->nodes[num - s->o.first].lease_key;
}

static void
sim_stop(struct sim *s)
{
    uv_stop(s->loop);
}

static void
sim_signal_cb(uv_signal_t *h, int sig)
{
    (void)sig;
    sim_stop(h->data);
}

static void
sim_stop_cb(uv_timer_t *t)
{
    sim_stop(t->data);
}

/* ---- options ------------------------------------------------------------- */

static void
sim_usage(FILE *f)
{
    fprintf(f,
        "usage: lockstep-sim --server URL --cluster-secret-file FILE "
        "[OPTION]...\n"
        "  --ca FILE           CA of an https:// server (default: the "
        "system's)\n"
        "  --nodes N           simulated agents (default 10)\n"
        "  --first K           number of the first node (default 1)\n"
        "  --prefix P          node names P<number> (default sim)\n"
        "  --gpus G            GPUs per node (default 8)\n"
        "  --cpus C            CPUs per node (default 64)\n"
        "  --rank-time MS      how long a rank runs (default 1000)\n"
        "  --fail-prob P       probability a rank exits 1 (default 0)\n"
        "  --log-rate L        lines/s per rank shipped (default 0)\n"
        "  --heartbeat-ms MS   status interval (default: the scheduler's)\n"
        "  --ckpt-every S      commit a checkpoint every S steps of %d ms "
        "(default 0: none)\n"
        "  --ramp-ms MS        spread registrations (default nodes ms)\n"
        "  --report-ms MS      figures every MS (default 5000)\n"
        "  --duration-ms MS    exit after MS (default: at SIGINT/SIGTERM)\n"
        "  --no-pings          send no lease pings (default: as the "
        "scheduler asks)\n",
        SIM_STEP_MS);
}

static double
sim_num(const char *s, const char *what)
{
    char *end;
    double v = strtod(s, &end);

    if (*s == '\0' || *end != '\0' || v < 0)
        fatalx("bad %s '%s': want a number >= 0", what, s);
    return v;
}

static void
sim_parse(int argc, char **argv, struct sim_opts *o)
{
    static const struct option longs[] = {
        { "server", 1, 0, 's' },
        { "cluster-secret-file", 1, 0, 'k' },
        { "ca", 1, 0, 'a' },
        { "nodes", 1, 0, 'n' },
        { "first", 1, 0, 'F' },
        { "prefix", 1, 0, 'p' },
        { "gpus", 1, 0, 'g' },
        { "cpus", 1, 0, 'c' },
        { "rank-time", 1, 0, 't' },
        { "fail-prob", 1, 0, 'f' },
        { "log-rate", 1, 0, 'l' },
        { "heartbeat-ms", 1, 0, 'b' },
        { "ckpt-every", 1, 0, 'C' },
        { "ramp-ms", 1, 0, 'r' },
        { "report-ms", 1, 0, 'R' },
        { "duration-ms", 1, 0, 'd' },
        { "no-pings", 0, 0, 'P' },
        { "help", 0, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    int c;

    *o = (struct sim_opts){ .nodes = 10,
        .first = 1,
        .prefix = "sim",
        .gpus = 8,
        .cpus = 64,
        .rank_time_ms = 1000,
        .report_ms = 5000,
        .ramp_ms = -1 };
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case 's':
            o->server = optarg;
            break;
        case 'k':
            o->secret_file = optarg;
            break;
        case 'a':
            o->ca = optarg;
            break;
        case 'n':
            o->nodes = (int)sim_num(optarg, "--nodes");
            break;
        case 'F':
            o->first = (int)sim_num(optarg, "--first");
            break;
        case 'p':
            o->prefix = optarg;
            break;
        case 'g':
            o->gpus = (int)sim_num(optarg, "--gpus");
            break;
        case 'c':
            o->cpus = (int)sim_num(optarg, "--cpus");
            break;
        case 't':
            o->rank_time_ms = (int64_t)sim_num(optarg, "--rank-time");
            break;
        case 'f':
            o->fail_prob = sim_num(optarg, "--fail-prob");
            break;
        case 'l':
            o->log_rate = sim_num(optarg, "--log-rate");
            break;
        case 'b':
            o->heartbeat_ms = (int64_t)sim_num(optarg, "--heartbeat-ms");
            break;
        case 'C':
            o->ckpt_every = (int)sim_num(optarg, "--ckpt-every");
            break;
        case 'r':
            o->ramp_ms = (int64_t)sim_num(optarg, "--ramp-ms");
            break;
        case 'R':
            o->report_ms = (int64_t)sim_num(optarg, "--report-ms");
            break;
        case 'd':
            o->duration_ms = (int64_t)sim_num(optarg, "--duration-ms");
            break;
        case 'P':
            o->no_pings = true;
            break;
        case 'h':
            sim_usage(stdout);
            exit(0);
        default:
            sim_usage(stderr);
            exit(2);
        }
    }
    if (o->server == NULL || o->secret_file == NULL || optind != argc ||
        o->nodes < 1 || o->report_ms < 100) {
        sim_usage(stderr);
        exit(2);
    }
    if (o->ramp_ms < 0)
        o->ramp_ms = o->nodes;
}

/* Room for three connections per node and some. */
static void
sim_raise_nofile(int nodes)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)nodes * 3 + 64;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want)
        log_warn("open files limited to %llu; %d nodes want %llu",
            (unsigned long long)rl.rlim_cur, nodes, (unsigned long long)want);
}

int
main(int argc, char **argv)
{
    struct sim *s = xcalloc(1, sizeof(*s));
    struct err err = { 0 };

    log_init("lockstep-sim", LOG_LEVEL_INFO, LOG_MODE_PLAIN);
    sim_parse(argc, argv, &s->o);
    if (cred_read_secret(s->o.secret_file, &s->secret, &s->secret_len, &err) <
        0)
        fatalx("%s", err.msg);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        fatalx("cannot initialise libcurl");
    signal(SIGPIPE, SIG_IGN);
    sim_raise_nofile(s->o.nodes);
    srandom((unsigned)getpid());
    s->loop = uv_default_loop();
    s->nodes = xcalloc((size_t)s->o.nodes, sizeof(*s->nodes));
    if (!s->o.no_pings && (s->pings = simping_create(s->loop, s->o.server,
                               sim_lease_key, s, &err)) == NULL)
        log_warn("%s: no lease pings", err.msg);
    s->last_report_mono = s->last_log_mono = timeid_mono_ms();

    uv_timer_init(s->loop, &s->ramp_timer);
    uv_timer_init(s->loop, &s->tick_timer);
    uv_timer_init(s->loop, &s->report_timer);
    uv_timer_init(s->loop, &s->stop_timer);
    s->ramp_timer.data = s->tick_timer.data = s->report_timer.data = s;
    s->stop_timer.data = s;
    uv_timer_start(&s->ramp_timer, sim_ramp_cb, 0, SIM_TICK_MS);
    uv_timer_start(&s->tick_timer, sim_tick_cb, SIM_TICK_MS, SIM_TICK_MS);
    uv_timer_start(&s->report_timer, sim_report_cb, (uint64_t)s->o.report_ms,
        (uint64_t)s->o.report_ms);
    if (s->o.duration_ms > 0)
        uv_timer_start(&s->stop_timer, sim_stop_cb, (uint64_t)s->o.duration_ms,
            0);
    uv_signal_init(s->loop, &s->sigint);
    uv_signal_init(s->loop, &s->sigterm);
    s->sigint.data = s->sigterm.data = s;
    uv_signal_start(&s->sigint, sim_signal_cb, SIGINT);
    uv_signal_start(&s->sigterm, sim_signal_cb, SIGTERM);

    uv_run(s->loop, UV_RUN_DEFAULT);
    sim_report_cb(&s->report_timer);
    /* Exit without tearing down ten thousand handles: the process ends. */
    return 0;
}
