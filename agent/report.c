/*
 * report.c - status heartbeats and the work long poll
 *
 * Two independent loops over curlx, each with at most one request in
 * flight and its own timer for the next one:
 *
 *   status: send → reply (heartbeat_ms, gen) → timer(heartbeat_ms) → send
 *   work:   fetch(gen) → reply (desired state) → proc_apply → fetch ...
 *
 * The work loop starts once the first register status is accepted, so the
 * scheduler knows the node (and what it still runs from before) before it
 * hands out work. Dispatch never waits for a heartbeat: the long poll is
 * answered as soon as the desired state changes.
 *
 * A failed status marks the agent unregistered; the next status that gets
 * through carries "register": true and the full list of held jobs, which is
 * how a restarted scheduler reconciles (docs/api.md).
 */
#include "agent/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agentd.h"
#include "agent/backoff.h"
#include "agent/health.h"
#include "agent/logship.h"
#include "agent/pinger.h"
#include "agent/proc.h"
#include "agent/witness.h"
#include "common/curlx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"

#define REPORT_BACKOFF_MIN_MS 100
#define REPORT_BACKOFF_MAX_MS 5000
#define REPORT_HEARTBEAT_DEFAULT_MS 1000
#define REPORT_STATUS_TIMEOUT_MS 5000L
/* How long the scheduler may hold a work request, and how much longer we
 * wait for its answer before calling the connection dead. */
#define REPORT_WORK_WAIT_MS 25000
#define REPORT_WORK_SLACK_MS 15000
/* A status reply announcing a newer gen while a long poll has been out
 * this long means the poll is stuck (a half-open connection after a
 * scheduler restart): abort it and fetch again. */
#define REPORT_GEN_STUCK_MS 2000
/* While a status would hold back a rank's end for its output
 * (proc_ends_held), it is looked at again this often. */
#define REPORT_LOG_POLL_MS 20

/* One of the two loops: the timer for its next request, and how it is
 * doing. Both retry a failed request the same way. */
struct report_chan {
    uv_timer_t timer;
    struct report *rp;
    void (*next)(struct report *rp); /* starts the next request */
    const char *what;                /* "send status": in failure lines */
    const char *doing;               /* "sending status": in recovery ones */
    int64_t backoff_ms;              /* 0 while healthy */
    char err[200];                   /* last error logged; "" when healthy */
};

struct report {
    struct agentd *ad;
    struct report_chan status;
    struct report_chan work;
    bool closing;

    /* status */
    struct curlx_req *status_req;
    bool status_dirty;    /* a change while a status was in flight */
    bool status_reg_sent; /* the one in flight has register: true */
    bool need_register;
    int64_t heartbeat_ms;
    uint64_t status_seq;    /* proc's number for the one in flight */
    int64_t status_sent_ms; /* monotonic time it was built */
    int64_t status_due_ms;  /* monotonic: the next heartbeat is due */

    /* work */
    bool work_running; /* the loop was started */
    struct curlx_req *work_req;
    int64_t work_sent_ms;
    uint64_t applied_gen;
    int64_t gen_mismatch_ms; /* when a newer gen was first announced */

    char key_err[200]; /* the last failure to read the key file again */
};

static void report_status_send(struct report *rp);
static void report_work_fetch(struct report *rp);

/* ---- helpers ------------------------------------------------------------ */

/* Take up a key file that changed (a new node key, a rotation of the
 * cluster secret: docs/operations.md) before the next status; a file that
 * cannot be read leaves the key in use, said once per distinct error. */
static void
report_key_refresh(struct report *rp)
{
    struct err err;
    int rc;

    err_clear(&err);
    rc = agentd_key_refresh(rp->ad, &err);
    if (rc > 0)
        log_notice("node key read again from '%s'", rp->ad->key_file);
    if (rc >= 0) {
        rp->key_err[0] = '\0';
    } else if (strcmp(rp->key_err, err.msg) != 0) {
        snprintf(rp->key_err, sizeof(rp->key_err), "%s", err.msg);
        log_error("%s; still signing with the key read before", err.msg);
    }
}

static void
report_chan_timer_cb(uv_timer_t *t)
{
    struct report_chan *ch = container_of(t, struct report_chan, timer);

    ch->next(ch->rp);
}

/* Run the channel's next request in ms (now if ms <= 0), unless closing. */
static void
report_chan_schedule(struct report_chan *ch, int64_t ms)
{
    int rc;

    if (ch->rp->closing)
        return;
    rc = uv_timer_start(&ch->timer, report_chan_timer_cb,
        (uint64_t)(ms > 0 ? ms : 0), 0);
    if (rc < 0)
        log_error("cannot start timer: %s", uv_strerror(rc));
}

/* A request failed (text says why): log it, once per distinct text, and
 * run the next one after a backoff of at most max_ms. */
static void
report_chan_failed(struct report_chan *ch, const char *text, long http_status,
    int64_t max_ms)
{
    int64_t wait;

    if (strcmp(ch->err, text) != 0) {
        snprintf(ch->err, sizeof(ch->err), "%s", text);
        if (http_status >= 400 && http_status < 500)
            log_error("%s refused by scheduler: %s", ch->what, text);
        else
            log_warn("cannot %s: %s (retrying)", ch->what, text);
    }
    ch->backoff_ms = backoff_next(ch->backoff_ms, REPORT_BACKOFF_MIN_MS, max_ms,
        &wait);
    report_chan_schedule(ch, wait);
}

/* A request got through: say so if the last one had failed. */
static void
report_chan_ok(struct report_chan *ch)
{
    if (ch->err[0] != '\0') {
        log_notice("%s works again", ch->doing);
        ch->err[0] = '\0';
    }
    ch->backoff_ms = 0;
}

static void
report_chan_init(struct report *rp, struct report_chan *ch,
    void (*next)(struct report *rp), const char *what, const char *doing)
{
    /* uv_timer_init cannot fail on Unix. */
    int rc = uv_timer_init(rp->ad->loop, &ch->timer);

    if (rc < 0)
        fatalx("cannot create timer: %s", uv_strerror(rc));
    ch->rp = rp;
    ch->next = next;
    ch->what = what;
    ch->doing = doing;
}

/* ---- status -------------------------------------------------------------- */

/* At most ms, but at most lease_ms / parts (REPORT_BACKOFF_MIN_MS at
 * least) while supervisors hold leases: a status must get through before
 * they run out, unless lease pings renew them (pinger.h). */
static int64_t
report_lease_bound(const struct report *rp, int64_t ms, int parts)
{
    int64_t part;

    if (rp->ad->procs != NULL && proc_has_live_supervisors(rp->ad->procs) &&
        !pinger_renewing(rp->ad->pinger)) {
        part = proc_lease_ms(rp->ad->procs) / parts;
        if (part < ms)
            ms = part > REPORT_BACKOFF_MIN_MS ? part : REPORT_BACKOFF_MIN_MS;
    }
    return ms;
}

/* The longest wait between status retries: four tries per lease. */
static int64_t
report_status_backoff_max(const struct report *rp)
{
    return report_lease_bound(rp, REPORT_BACKOFF_MAX_MS, 4);
}

/* The next heartbeat: heartbeat_ms, but at least three per lease (a
 * scheduler configured with a heartbeat longer than its lease must not
 * fence every job). */
static int64_t
report_status_interval(const struct report *rp)
{
    return report_lease_bound(rp, rp->heartbeat_ms, 3);
}

/* A status did not get through (text says why): register again with the
 * next one, after a backoff. */
static void
report_status_retry(struct report *rp, const char *text, long http_status)
{
    rp->need_register = true;
    proc_status_failed(rp->ad->procs);
    report_chan_failed(&rp->status, text, http_status,
        report_status_backoff_max(rp));
}

static void
report_status_failed(struct report *rp, int rc, long http_status,
    const struct sbuf *body)
{
    char text[200];

    curlx_error_text(rc, http_status, body, text, sizeof(text));
    report_status_retry(rp, text, http_status);
}

/* The newest gen the scheduler announced: make sure a fetch is due. */
static void
report_check_gen(struct report *rp, uint64_t gen)
{
    int64_t now = timeid_mono_ms();

    if (gen == rp->applied_gen) {
        rp->gen_mismatch_ms = 0;
        return;
    }
    if (rp->work_req == NULL) {
        report_work_fetch(rp); /* cuts a backoff wait short */
        return;
    }
    if (rp->gen_mismatch_ms == 0) {
        rp->gen_mismatch_ms = now;
    } else if (now - rp->gen_mismatch_ms >= REPORT_GEN_STUCK_MS &&
               now - rp->work_sent_ms >= REPORT_GEN_STUCK_MS) {
        log_info("work request outstanding for %lld ms while gen=%" PRIu64
                 " is announced (applied gen=%" PRIu64 "); asking again",
            (long long)(now - rp->work_sent_ms), gen, rp->applied_gen);
        rp->gen_mismatch_ms = now;
        curlx_cancel(rp->work_req);
    }
}

static void
report_status_done_cb(int rc, long http_status, const struct sbuf *body,
    void *arg)
{
    struct report *rp = arg;
    struct err err = { 0 };
    cJSON *root = NULL;
    struct proto_status_reply reply = {
        .heartbeat_ms = REPORT_HEARTBEAT_DEFAULT_MS,
        .lease_ms = PROC_LEASE_DEFAULT_MS,
    };
    bool was_reg = rp->status_reg_sent;

    rp->status_req = NULL;
    if (rc < 0 || http_status != 200) {
        report_status_failed(rp, rc, http_status, body);
        return;
    }
    /* Unknown fields are tolerated: a newer scheduler may add some. */
    if (jsonx_parse(body->buf, body->len, &root, &err) < 0 ||
        proto_status_reply_from_json(root, &reply, &err) < 0) {
        char text[200];

        cJSON_Delete(root);
        snprintf(text, sizeof(text), "bad status reply: %s", err.msg);
        report_status_retry(rp, text, 0);
        return;
    }
    cJSON_Delete(root);

    report_chan_ok(&rp->status);
    if (reply.heartbeat_ms != rp->heartbeat_ms)
        log_debug("heartbeat_ms=%lld", (long long)reply.heartbeat_ms);
    rp->heartbeat_ms = reply.heartbeat_ms;
    if (was_reg) {
        rp->need_register = false;
        log_info("node=%s agent_id=%s registered with scheduler jobs=%zu "
                 "gen=%lld",
            rp->ad->node, rp->ad->agent_id, proc_njobs(rp->ad->procs),
            (long long)reply.gen);
    }
    if (!rp->need_register && !rp->work_running) {
        rp->work_running = true;
        report_work_fetch(rp);
    } else if (was_reg && rp->work_running) {
        /* Back after a failure: do not sit out a work backoff. */
        report_work_fetch(rp);
    }
    if (rp->work_running)
        report_check_gen(rp, reply.gen);

    /* The next heartbeat. A status held back for a rank's output
     * (report_status_send) waits until then at most; meanwhile it is
     * looked at every REPORT_LOG_POLL_MS. */
    rp->status_due_ms = timeid_mono_ms() + report_status_interval(rp);
    if (rp->status_dirty || rp->need_register)
        report_chan_schedule(&rp->status, 0);
    else if (proc_ends_held(rp->ad->procs))
        report_chan_schedule(&rp->status, REPORT_LOG_POLL_MS);
    else
        report_chan_schedule(&rp->status, report_status_interval(rp));
    rp->status_dirty = false;
    /* The scheduler heard from us: every supervisor's lease moves on, and
     * jobs whose final states it now has are released. Last, so that the
     * release's report_kick (the scheduler must learn of it now, not a
     * heartbeat later) is not overridden by the timer set above. */
    proc_status_ok(rp->ad->procs, rp->status_seq, rp->status_sent_ms,
        reply.lease_ms);
    pinger_configure(rp->ad->pinger, reply.ping_ms);
    witness_status_ok(rp->ad->witness, rp->status_sent_ms,
        report_status_interval(rp), &reply);
    /* Back after a failure (or at start): what the ranks wrote meanwhile
     * is shipped now, not after the shipper's own backoff. */
    if (was_reg)
        logship_resume(rp->ad->logship);
}

static void
report_status_send(struct report *rp)
{
    struct agentd *ad = rp->ad;
    struct proto_node_report rep;
    cJSON *json;
    char *text;

    if (rp->closing)
        return;
    if (rp->status_req != NULL) {
        rp->status_dirty = true;
        return;
    }
    uv_timer_stop(&rp->status.timer);
    report_key_refresh(rp);
    /* A status that would hold back a rank's end (proc_ends_held: its
     * output is not at the scheduler yet, for 2 s at most) waits for the
     * output instead, so that the scheduler, and a user, sees the end
     * only with the whole output; but never past the next heartbeat
     * (the leases wait for no output), nor when it registers (the
     * scheduler may be away). Such a status reports the rank as running,
     * and the next one, once the output is in, its end. */
    if (!rp->need_register && proc_ends_held(ad->procs) &&
        timeid_mono_ms() < rp->status_due_ms) {
        logship_kick(ad->logship);
        report_chan_schedule(&rp->status, REPORT_LOG_POLL_MS);
        return;
    }

    /* The settings are borrowed for to_json and detached again before
     * the release, which then frees only the jobs proc filled in. */
    memset(&rep, 0, sizeof(rep));
    rep.node = ad->node;
    rep.reg = rp->need_register;
    rep.agent_id = ad->agent_id;
    rep.addr = ad->addr;
    rep.res = ad->res;
    rep.gen = rp->applied_gen;
    rep.witness_port = witness_port(ad->witness);
    rp->status_sent_ms = timeid_mono_ms();
    rp->status_seq = proc_fill_report(ad->procs, &rep);
    rep.health = health_fill(ad->health);
    json = proto_node_report_to_json(&rep);
    rep.node = rep.agent_id = rep.addr = NULL;
    memset(&rep.res, 0, sizeof(rep.res));
    proto_node_report_release(&rep);
    text = jsonx_print(json);
    cJSON_Delete(json);

    rp->status_reg_sent = rp->need_register;
    rp->status_dirty = false;
    rp->status_req = curlx_request(ad->curlx, "POST", "/v1/agent/status", text,
        strlen(text), "application/json", REPORT_STATUS_TIMEOUT_MS,
        report_status_done_cb, rp);
    if (rp->status_req == NULL)
        report_status_failed(rp, -EIO, 0, NULL);
}

void
report_kick(struct report *rp)
{
    if (rp == NULL || rp->closing)
        return;
    if (rp->status_req != NULL) {
        rp->status_dirty = true;
        return;
    }
    /* While the scheduler is failing, the backoff timer already carries
     * the next status (with the current state); do not hammer it. */
    if (rp->status.backoff_ms > 0)
        return;
    report_chan_schedule(&rp->status, 0);
}

/* A rank changed (proc's hook) or a check's results did (health's). */
static void
report_proc_change_cb(void *arg)
{
    report_kick(arg);
}

/* ---- work ---------------------------------------------------------------- */

static void
report_work_failed(struct report *rp, const char *text, long http_status)
{
    report_chan_failed(&rp->work, text, http_status, REPORT_BACKOFF_MAX_MS);
}

static void
report_work_done_cb(int rc, long http_status, const struct sbuf *body,
    void *arg)
{
    struct report *rp = arg;
    struct proto_work w;
    struct err err = { 0 };
    cJSON *root = NULL;
    char text[200];
    uint64_t old_gen = rp->applied_gen;

    rp->work_req = NULL;
    if (rc == -ECANCELED) {
        report_work_fetch(rp);
        return;
    }
    if (rc < 0 || http_status != 200) {
        curlx_error_text(rc, http_status, body, text, sizeof(text));
        if (http_status == 404) {
            /* The scheduler does not know the node (a fresh database):
             * register again. */
            rp->need_register = true;
            report_kick(rp);
        }
        report_work_failed(rp, text, http_status);
        return;
    }
    memset(&w, 0, sizeof(w));
    if (jsonx_parse(body->buf, body->len, &root, &err) < 0 ||
        proto_work_from_json(root, &w, &err) < 0) {
        cJSON_Delete(root);
        snprintf(text, sizeof(text), "bad work reply: %s", err.msg);
        report_work_failed(rp, text, 0);
        return;
    }
    cJSON_Delete(root);
    report_chan_ok(&rp->work);
    /* The scheduler answers again: a status waiting out its backoff
     * (up to 5 s) goes now, or the node would be silent that much longer
     * after an outage (LOST, with a short node_timeout_ms). */
    if (rp->status.backoff_ms > 0 && rp->status_req == NULL) {
        rp->status.backoff_ms = 0;
        report_chan_schedule(&rp->status, 0);
    }

    if (w.gen != old_gen)
        log_debug("applying gen=%" PRIu64 " jobs=%zu", w.gen, w.njobs);
    proc_apply(rp->ad->procs, &w);
    rp->applied_gen = w.gen;
    rp->gen_mismatch_ms = 0;
    proto_work_release(&w);
    if (rp->applied_gen != old_gen)
        report_kick(rp);
    report_work_fetch(rp);
}

static void
report_work_fetch(struct report *rp)
{
    char *path;

    if (rp->closing || rp->work_req != NULL)
        return;
    uv_timer_stop(&rp->work.timer);
    path = xasprintf("/v1/agent/work?node=%s&gen=%" PRIu64 "&wait_ms=%d",
        rp->ad->node, rp->applied_gen, REPORT_WORK_WAIT_MS);
    rp->work_sent_ms = timeid_mono_ms();
    rp->work_req = curlx_request(rp->ad->curlx, "GET", path, NULL, 0, NULL,
        REPORT_WORK_WAIT_MS + REPORT_WORK_SLACK_MS, report_work_done_cb, rp);
    free(path);
    if (rp->work_req == NULL)
        report_work_failed(rp, "cannot start request", 0);
}

/* Requests now go to another replica (curlx.h): it may be a new leader,
 * which knows the node from the replicated state but not this agent's
 * jobs as they are now. Register with it as with a restarted
 * scheduler: the full list of held jobs. */
static void
report_server_switched_cb(void *arg)
{
    struct report *rp = arg;

    if (rp->closing)
        return;
    rp->need_register = true;
    report_kick(rp);
}

/* ---- lifetime ------------------------------------------------------------ */

struct report *
report_create(struct agentd *ad, struct err *err)
{
    struct report *rp = xcalloc(1, sizeof(*rp));

    rp->ad = ad;
    rp->need_register = true;
    rp->heartbeat_ms = REPORT_HEARTBEAT_DEFAULT_MS;
    report_chan_init(rp, &rp->status, report_status_send, "send status",
        "sending status");
    report_chan_init(rp, &rp->work, report_work_fetch, "fetch work",
        "fetching work");
    proc_set_change_cb(ad->procs, report_proc_change_cb, rp);
    if (ad->health != NULL)
        health_set_change_cb(ad->health, report_proc_change_cb, rp);
    /* Replicas: requests follow the leader; a new one hears from us as a
     * restarted scheduler would. */
    curlx_follow_leader(ad->curlx, report_server_switched_cb, rp);
    (void)err;
    return rp;
}

int
report_start(struct report *rp)
{
    report_status_send(rp);
    return 0;
}

void
report_destroy(struct report *rp)
{
    uv_handle_t *hs[2];

    if (rp == NULL || rp->closing)
        return;
    rp->closing = true;
    proc_set_change_cb(rp->ad->procs, NULL, NULL);
    if (rp->ad->health != NULL)
        health_set_change_cb(rp->ad->health, NULL, NULL);
    curlx_follow_leader(rp->ad->curlx, NULL, NULL);
    hs[0] = (uv_handle_t *)&rp->status.timer;
    hs[1] = (uv_handle_t *)&rp->work.timer;
    uvx_close(hs, ARRAY_SIZE(hs), free, rp);
}
