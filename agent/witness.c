/*
 * witness.c - the agent's witness service: answering and asking
 *
 * One UDP socket does both: queries from other agents are answered from
 * it, and our own queries go out from it, so the answers come back to
 * it. Rounds run on a timer of one status interval; a round's answers
 * are counted when the next tick comes (see witness.h for the rule).
 *
 * The set and our last success are kept in <state_dir>/witnesses, one
 * line "last_ok <monotonic ms>" then one "<node> <addr> <port>" per
 * witness, so that an agent restarted during an outage still knows both.
 */
#include "agent/witness.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agentd.h"
#include "agent/proc.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/witness.h"
#include "common/xalloc.h"

#define WITNESS_TICK_DEFAULT_MS 1000
#define WITNESS_BADMAC_PEERS 16

struct witness_peer {
    struct proto_witness pw;
    struct sockaddr_storage sa; /* resolved; ss_family 0: not */
    uint64_t nonce;             /* of the round's query */
    bool answered;
    bool stale;
};

struct witness {
    struct agentd *ad;
    uv_udp_t udp;
    uv_timer_t timer;
    int port;
    bool closing;

    int64_t last_ok; /* monotonic send time of the last success; 0 never */
    int64_t interval_ms;
    int64_t lease_ms; /* the last lease the scheduler granted; 0 none */
    struct witness_peer peers[WITNESS_MAX];
    size_t npeers;
    char *file;

    bool round_open;
    int64_t round_start;
    int extending; /* 1 extending, -1 refusing (logged), 0 neither */
    char badmac[WITNESS_BADMAC_PEERS][64];
    size_t nbadmac;
    char recvbuf[WITNESS_MSG_MAX];
};

/* ---- the set and its file ------------------------------------------------ */

/* Resolve p's address (numeric first; a name through the resolver). */
static void
witness_resolve(struct witness_peer *p)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)&p->sa;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&p->sa;
    struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res = NULL;

    memset(&p->sa, 0, sizeof(p->sa));
    if (p->pw.port <= 0)
        return;
    if (uv_ip4_addr(p->pw.addr, p->pw.port, in4) == 0 ||
        uv_ip6_addr(p->pw.addr, p->pw.port, in6) == 0)
        return;
    memset(&p->sa, 0, sizeof(p->sa));
    if (getaddrinfo(p->pw.addr, NULL, &hints, &res) != 0 || res == NULL) {
        log_warn("witness %s: cannot resolve '%s'", p->pw.node, p->pw.addr);
        return;
    }
    memcpy(&p->sa, res->ai_addr, res->ai_addrlen);
    if (p->sa.ss_family == AF_INET)
        in4->sin_port = htons((uint16_t)p->pw.port);
    else
        in6->sin6_port = htons((uint16_t)p->pw.port);
    freeaddrinfo(res);
}

static void
witness_save(struct witness *w)
{
    char *tmp = xasprintf("%s.tmp", w->file);
    FILE *f = fopen(tmp, "w");

    if (f == NULL) {
        log_warn("cannot write '%s': %s", tmp, strerror(errno));
        free(tmp);
        return;
    }
    fprintf(f,
        "last_ok %" PRId64 " interval_ms %" PRId64 " lease_ms %" PRId64 "\n",
        w->last_ok, w->interval_ms, w->lease_ms);
    for (size_t i = 0; i < w->npeers; i++)
        fprintf(f, "%s %s %d\n", w->peers[i].pw.node, w->peers[i].pw.addr,
            w->peers[i].pw.port);
    if (fclose(f) != 0 || rename(tmp, w->file) < 0)
        log_warn("cannot write '%s': %s", w->file, strerror(errno));
    free(tmp);
}

static void
witness_load(struct witness *w)
{
    FILE *f = fopen(w->file, "r");
    long long ok = 0, interval = 0, lease = 0;
    char node[PROTO_NODE_NAME_MAX + 1], addr[256];
    int port;

    if (f == NULL)
        return;
    /* A time from before this boot (or none) means nothing here. */
    if (fscanf(f, "last_ok %lld interval_ms %lld lease_ms %lld\n", &ok,
            &interval, &lease) == 3 &&
        ok > 0 && ok <= timeid_mono_ms() && interval > 0 && lease > 0) {
        w->last_ok = ok;
        w->interval_ms = interval;
        w->lease_ms = lease;
    }
    while (w->npeers < WITNESS_MAX &&
           fscanf(f, "%64s %255s %d\n", node, addr, &port) == 3) {
        struct witness_peer *p = &w->peers[w->npeers++];

        snprintf(p->pw.node, sizeof(p->pw.node), "%s", node);
        snprintf(p->pw.addr, sizeof(p->pw.addr), "%s", addr);
        p->pw.port = port;
        witness_resolve(p);
    }
    fclose(f);
    if (w->npeers > 0 || w->last_ok > 0)
        log_info("witnesses: %zu kept from before, last status exchange %lld "
                 "ms ago",
            w->npeers,
            w->last_ok ? (long long)(timeid_mono_ms() - w->last_ok) : -1LL);
}

/* Replace the set with the reply's, when it differs. */
static void
witness_set_update(struct witness *w, const struct proto_status_reply *r)
{
    bool same = r->nwitnesses == w->npeers;

    for (size_t i = 0; same && i < r->nwitnesses; i++)
        same = memcmp(&r->witnesses[i], &w->peers[i].pw,
                   sizeof(r->witnesses[i])) == 0;
    if (same)
        return;
    memset(w->peers, 0, sizeof(w->peers));
    w->npeers = r->nwitnesses;
    for (size_t i = 0; i < w->npeers; i++) {
        w->peers[i].pw = r->witnesses[i];
        witness_resolve(&w->peers[i]);
    }
    log_info("witnesses: %zu", w->npeers);
    w->round_open = false;
}

/* ---- answering ----------------------------------------------------------- */

static void
witness_peer_text(const struct sockaddr *sa, char *buf, size_t cap)
{
    char host[64] = "?";
    int port = 0;

    if (sa->sa_family == AF_INET) {
        uv_ip4_name((const struct sockaddr_in *)sa, host, sizeof(host));
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        uv_ip6_name((const struct sockaddr_in6 *)sa, host, sizeof(host));
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(buf, cap, "%s:%d", host, port);
}

/* A message that failed its check (rc): logged once per peer. */
static void
witness_bad(struct witness *w, const struct sockaddr *sa, int rc)
{
    char peer[64];

    witness_peer_text(sa, peer, sizeof(peer));
    for (size_t i = 0; i < w->nbadmac; i++)
        if (strcmp(w->badmac[i], peer) == 0)
            return;
    if (w->nbadmac < WITNESS_BADMAC_PEERS)
        snprintf(w->badmac[w->nbadmac++], sizeof(w->badmac[0]), "%s", peer);
    log_warn("witness message from %s dropped: %s (logged once per peer)", peer,
        rc == -EBADMSG ? "bad MAC (another cluster secret?)" : "malformed");
}

/* Answer q under key: the key its query verified with, so that during a
 * rotation of the cluster secret an agent that still has only the
 * previous witness key can read the answer. */
static void
witness_answer(struct witness *w, const struct witness_query *q,
    const char *key, const struct sockaddr *sa)
{
    struct witness_answer a = { .nonce = q->nonce, .age_ms = -1 };
    char buf[WITNESS_MSG_MAX];
    uv_buf_t b;
    int rc;

    snprintf(a.node, sizeof(a.node), "%s", w->ad->node);
    if (w->last_ok > 0)
        a.age_ms = timeid_mono_ms() - w->last_ok;
    b = uv_buf_init(buf, (unsigned)witness_answer_encode(key, &a, buf));
    rc = uv_udp_try_send(&w->udp, &b, 1, sa);
    if (rc < 0)
        log_debug("witness: cannot answer %s: %s", q->node, uv_strerror(rc));
}

/* An answer to one of our queries: counted when it matches the round. */
static void
witness_heard(struct witness *w, const struct witness_answer *a)
{
    int64_t now = timeid_mono_ms();

    if (!w->round_open)
        return;
    for (size_t i = 0; i < w->npeers; i++) {
        struct witness_peer *p = &w->peers[i];

        if (strcmp(p->pw.node, a->node) != 0 || p->nonce != a->nonce ||
            p->answered || witness_answer_unknown(a))
            continue;
        p->answered = true;
        p->stale = witness_answer_stale(a, now, w->last_ok,
            w->interval_ms + WITNESS_SLACK_MS);
    }
}

static void
witness_alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    struct witness *w = h->data;

    (void)size;
    *buf = uv_buf_init(w->recvbuf, sizeof(w->recvbuf));
}

static void
witness_recv_cb(uv_udp_t *udp, ssize_t n, const uv_buf_t *buf,
    const struct sockaddr *sa, unsigned flags)
{
    struct witness *w = udp->data;
    const char *key = w->ad->key.witness_key;
    const char *prev = w->ad->key.witness_prev;
    struct witness_query q;
    struct witness_answer a;
    int rc;

    (void)flags;
    if (n <= 0 || sa == NULL || w->closing)
        return;
    /* The current witness key, then the previous one (a rotation). */
    if (n > 7 && buf->base[5] == 'Q') {
        rc = witness_query_decode(key, buf->base, (size_t)n, &q);
        if (rc == -EBADMSG && prev[0]) {
            key = prev;
            rc = witness_query_decode(key, buf->base, (size_t)n, &q);
        }
        if (rc == 0)
            witness_answer(w, &q, key, sa);
    } else {
        rc = witness_answer_decode(key, buf->base, (size_t)n, &a);
        if (rc == -EBADMSG && prev[0])
            rc = witness_answer_decode(prev, buf->base, (size_t)n, &a);
        if (rc == 0)
            witness_heard(w, &a);
    }
    if (rc < 0)
        witness_bad(w, sa, rc);
}

/* ---- asking -------------------------------------------------------------- */

/* Count the open round's answers and extend the leases, or not. */
static void
witness_round_end(struct witness *w)
{
    size_t nstale = 0, nfresh = 0;
    int64_t lease = w->lease_ms;

    w->round_open = false;
    for (size_t i = 0; i < w->npeers; i++) {
        if (!w->peers[i].answered)
            continue;
        if (w->peers[i].stale)
            nstale++;
        else
            nfresh++;
    }
    if (lease > 0 && witness_may_extend(w->npeers, nstale, nfresh)) {
        size_t n = proc_lease_extend(w->ad->procs, w->round_start + lease);

        if (w->extending != 1)
            log_notice("scheduler unreachable for %lld ms and for %zu of %zu "
                       "witnesses too: extending %zu leases",
                (long long)(timeid_mono_ms() - w->last_ok), nstale, w->npeers,
                n);
        w->extending = 1;
        return;
    }
    if (w->extending != -1)
        log_warn("scheduler unreachable for %lld ms; witnesses: %zu of %zu "
                 "lost it too, %zu reach it: leases not extended (ranks are "
                 "fenced when they run out)",
            (long long)(timeid_mono_ms() - w->last_ok), nstale, w->npeers,
            nfresh);
    w->extending = -1;
}

static uint64_t
witness_nonce(void)
{
    char hex[17];

    if (timeid_random_hex(hex, 8) < 0)
        return (uint64_t)random() << 32 ^ (uint64_t)random();
    return strtoull(hex, NULL, 16);
}

static void
witness_round_start(struct witness *w)
{
    char buf[WITNESS_MSG_MAX];
    struct witness_query q;
    uv_buf_t b;

    w->round_open = true;
    w->round_start = timeid_mono_ms();
    snprintf(q.node, sizeof(q.node), "%s", w->ad->node);
    for (size_t i = 0; i < w->npeers; i++) {
        struct witness_peer *p = &w->peers[i];

        p->answered = p->stale = false;
        p->nonce = witness_nonce();
        if (p->sa.ss_family == 0)
            continue;
        q.nonce = p->nonce;
        b = uv_buf_init(buf,
            (unsigned)witness_query_encode(w->ad->key.witness_key, &q, buf));
        (void)uv_udp_try_send(&w->udp, &b, 1, (struct sockaddr *)&p->sa);
    }
}

static void
witness_timer_cb(uv_timer_t *t)
{
    struct witness *w = t->data;
    int64_t now = timeid_mono_ms();

    if (w->round_open)
        witness_round_end(w);
    if (w->last_ok == 0 || now - w->last_ok <= 2 * w->interval_ms ||
        !proc_has_live_supervisors(w->ad->procs)) {
        w->extending = 0;
        return;
    }
    witness_round_start(w);
}

/* ---- lifetime ------------------------------------------------------------ */

/* A success sent at sent_mono_ms, granting lease_ms, whose status interval
 * is interval_ms: the scheduler is reachable. The interval and lease are
 * those of the latest success (its send), which the scheduler's gate
 * counts with: an answer to an older exchange arriving late changes
 * neither. */
static void
witness_success(struct witness *w, int64_t sent_mono_ms, int64_t interval_ms,
    int64_t lease_ms)
{
    if (w->extending == 1)
        log_notice("scheduler reachable again; leases renewed by it");
    w->extending = 0;
    w->round_open = false;
    if (sent_mono_ms < w->last_ok)
        return;
    w->last_ok = sent_mono_ms;
    w->lease_ms = lease_ms;
    if (interval_ms != w->interval_ms) {
        w->interval_ms = interval_ms;
        uv_timer_set_repeat(&w->timer, (uint64_t)interval_ms);
    }
}

void
witness_status_ok(struct witness *w, int64_t sent_mono_ms, int64_t interval_ms,
    const struct proto_status_reply *reply)
{
    if (w == NULL)
        return;
    witness_success(w, sent_mono_ms,
        reply->lease_interval_ms > 0 ? reply->lease_interval_ms : interval_ms,
        reply->lease_ms);
    if (reply->has_witnesses)
        witness_set_update(w, reply);
    witness_save(w);
}

void
witness_renewed(struct witness *w, int64_t sent_mono_ms, int64_t interval_ms,
    int64_t lease_ms)
{
    if (w == NULL)
        return;
    witness_success(w, sent_mono_ms, interval_ms, lease_ms);
    /* Kept at once: a restarted agent must never answer that it last
     * reached the scheduler earlier than it did. */
    witness_save(w);
}

struct witness *
witness_create(struct agentd *ad, struct err *err)
{
    struct witness *w = xcalloc(1, sizeof(*w));
    struct sockaddr_storage ss;
    struct sockaddr_in sa;
    int len = sizeof(ss), rc;

    w->ad = ad;
    w->interval_ms = WITNESS_TICK_DEFAULT_MS;
    w->file = xasprintf("%s/witnesses", ad->state_dir);
    uv_timer_init(ad->loop, &w->timer);
    w->timer.data = w;
    uv_udp_init(ad->loop, &w->udp);
    w->udp.data = w;
    uv_ip4_addr("0.0.0.0", ad->witness_port, &sa);
    if ((rc = uv_udp_bind(&w->udp, (struct sockaddr *)&sa, 0)) < 0 ||
        (rc = uv_udp_getsockname(&w->udp, (struct sockaddr *)&ss, &len)) < 0 ||
        (rc = uv_udp_recv_start(&w->udp, witness_alloc_cb, witness_recv_cb)) <
            0) {
        err_set(err, rc, "cannot bind witness_port %d (UDP): %s",
            ad->witness_port, uv_strerror(rc));
        w->closing = true;
        witness_destroy(w);
        return NULL;
    }
    w->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    witness_load(w);
    /* Soon: an agent restarted during an outage must extend the leases
     * it re-adopted before they run out. */
    uv_timer_start(&w->timer, witness_timer_cb, 100, (uint64_t)w->interval_ms);
    log_info("witness queries answered on UDP port %d", w->port);
    return w;
}

int
witness_port(const struct witness *w)
{
    return w != NULL ? w->port : 0;
}

static void
witness_free(void *arg)
{
    struct witness *w = arg;

    free(w->file);
    free(w);
}

void
witness_destroy(struct witness *w)
{
    uv_handle_t *hs[2];

    if (w == NULL)
        return;
    w->closing = true;
    hs[0] = (uv_handle_t *)&w->udp;
    hs[1] = (uv_handle_t *)&w->timer;
    uvx_close(hs, ARRAY_SIZE(hs), witness_free, w);
}
