/*
 * pinger.c - the agent's lease pings (pinger.h)
 *
 * One UDP socket per address family, opened when first needed (the
 * scheduler's address is learnt from its TCP answers, and a replica
 * that takes over may be of the other family); the answers come back to
 * it. The pings in flight are kept in a ring (sequence number, send
 * time): an answer counts only for a ping of this process still in the
 * ring, from its send time, and the first number is random, so an answer
 * meant for an earlier agent, or replayed, renews nothing.
 */
#include "agent/pinger.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "agent/agentd.h"
#include "agent/proc.h"
#include "agent/witness.h"
#include "common/leaseping.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"

/* Pings remembered: 16 intervals, far longer than any lease. */
#define PINGER_RING 16
/* A stopping agent asks for the long lease this many times, this far
 * apart, before it gives up. */
#define PINGER_STOP_TRIES 5
/* An idle agent pings this often. */
#define PINGER_IDLE_MS 10000
#define PINGER_STOP_GAP_MS 100

struct pinger_sock {
    uv_udp_t udp;
    bool open;   /* the handle is initialized (closed with the pinger) */
    bool broken; /* it could not be bound: no pings of this family */
};

struct pinger_sent {
    uint64_t seq;
    int64_t sent; /* monotonic; 0: answered already */
};

struct pinger {
    struct agentd *ad;
    uv_timer_t timer;
    struct pinger_sock sock[2]; /* IPv4, IPv6 */
    char rbuf[LEASEPING_MSG_MAX];
    int64_t ping_ms;
    uint64_t seq;
    struct pinger_sent ring[PINGER_RING];
    int64_t ok_mono;   /* when an answer last renewed the leases; 0 never */
    int64_t sent_mono; /* when the last ping was sent; 0 never */
    bool failed_logged;
    bool refused_logged;
    /* pinger_handover: "stop" pings until one is answered or tries run
     * out, then done(arg). */
    void (*done)(void *arg);
    void *done_arg;
    int stop_tries;
    uint64_t stop_seq; /* the first "stop" ping: older answers do not do */
};

static void
pinger_alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    struct pinger *p = h->data;

    (void)size;
    *buf = uv_buf_init(p->rbuf, sizeof(p->rbuf));
}

/* The ping numbered seq, when it is still in the ring: its send time. */
static int64_t
pinger_sent(const struct pinger *p, uint64_t seq)
{
    const struct pinger_sent *e = &p->ring[seq % PINGER_RING];

    return e->seq == seq && e->sent > 0 ? e->sent : 0;
}

/* The handover is over: answered, or out of tries. */
static void
pinger_handed_over(struct pinger *p)
{
    void (*done)(void *) = p->done;

    p->done = NULL;
    uv_timer_stop(&p->timer);
    if (done != NULL)
        done(p->done_arg);
}

static void
pinger_recv_cb(uv_udp_t *udp, ssize_t n, const uv_buf_t *buf,
    const struct sockaddr *sa, unsigned flags)
{
    struct pinger *p = udp->data;
    struct agentd *ad = p->ad;
    struct cred_mac_key *key;
    struct leaseping_ack a;
    int64_t sent;
    int rc;

    (void)flags;
    if (n <= 0 || sa == NULL)
        return;
    /* Made ready per message: the node key may be read again between
     * two, and there are a few a second. */
    key = leaseping_key_create(ad->key.key);
    rc = leaseping_ack_decode(key, buf->base, (size_t)n, &a);
    cred_mac_key_destroy(key);
    if (rc < 0 || strcmp(a.node, ad->node) != 0) {
        if (!p->refused_logged)
            log_warn("lease ping answer dropped: %s (logged once)",
                rc == -EBADMSG ? "bad MAC (another cluster secret?)"
                : rc < 0       ? "malformed"
                               : "for another node");
        p->refused_logged = true;
        return;
    }
    if ((sent = pinger_sent(p, a.seq)) == 0)
        return; /* not ours, or answered already */
    p->ring[a.seq % PINGER_RING].sent = 0;
    if (p->ok_mono == 0 || p->failed_logged)
        log_info("lease pings answered: leases of %lld ms from each ping",
            (long long)a.lease_ms);
    p->failed_logged = false;
    p->ok_mono = timeid_mono_ms();
    proc_lease_granted(ad->procs, sent, a.lease_ms);
    witness_renewed(ad->witness, sent, a.interval_ms, a.lease_ms);
    if (p->done != NULL && p->stop_seq != 0 && a.seq >= p->stop_seq) {
        log_notice("leases of %lld ms granted for the agent's restart",
            (long long)a.lease_ms);
        pinger_handed_over(p);
    }
}

/* The socket for family (AF_INET or AF_INET6), opened on first use. */
static struct pinger_sock *
pinger_sock(struct pinger *p, int family)
{
    struct pinger_sock *s = &p->sock[family == AF_INET6];
    struct sockaddr_storage any = { 0 };
    int rc;

    if (s->open)
        return s->broken ? NULL : s;
    if (family == AF_INET6)
        rc = uv_ip6_addr("::", 0, (struct sockaddr_in6 *)&any);
    else
        rc = uv_ip4_addr("0.0.0.0", 0, (struct sockaddr_in *)&any);
    if (rc == 0)
        rc = uv_udp_init(p->ad->loop, &s->udp);
    if (rc < 0)
        return NULL;
    s->udp.data = p;
    s->open = true;
    if ((rc = uv_udp_bind(&s->udp, (struct sockaddr *)&any, 0)) < 0 ||
        (rc = uv_udp_recv_start(&s->udp, pinger_alloc_cb, pinger_recv_cb)) <
            0) {
        log_warn("lease pings: cannot open a UDP socket: %s (statuses renew "
                 "the leases)",
            uv_strerror(rc));
        s->broken = true;
        return NULL;
    }
    return s;
}

static void
pinger_send(struct pinger *p, bool stopping)
{
    struct agentd *ad = p->ad;
    struct sockaddr_storage ss = { 0 };
    struct leaseping lp = { 0 };
    struct pinger_sock *s;
    char ip[64], buf[LEASEPING_MSG_MAX];
    struct cred_mac_key *key;
    int port, rc;
    uv_buf_t b;

    if (!proc_sched_addr_get(ad->procs, ip, sizeof(ip), &port))
        return;
    if (uv_ip4_addr(ip, port, (struct sockaddr_in *)&ss) != 0 &&
        uv_ip6_addr(ip, port, (struct sockaddr_in6 *)&ss) != 0)
        return;
    if ((s = pinger_sock(p, ss.ss_family)) == NULL)
        return;
    snprintf(lp.node, sizeof(lp.node), "%s", ad->node);
    lp.seq = ++p->seq;
    lp.stopping = stopping;
    if (stopping && p->stop_seq == 0)
        p->stop_seq = lp.seq;
    key = leaseping_key_create(ad->key.key);
    b = uv_buf_init(buf, (unsigned)leaseping_encode(key, &lp, buf));
    cred_mac_key_destroy(key);
    p->ring[lp.seq % PINGER_RING].seq = lp.seq;
    p->ring[lp.seq % PINGER_RING].sent = p->sent_mono = timeid_mono_ms();
    rc = uv_udp_try_send(&s->udp, &b, 1, (struct sockaddr *)&ss);
    if (rc < 0 && rc != UV_EAGAIN && !p->failed_logged) {
        log_warn("lease ping to %s port %d: %s (statuses renew the leases "
                 "meanwhile)",
            ip, port, uv_strerror(rc));
        p->failed_logged = true;
    }
}

static void
pinger_timer_cb(uv_timer_t *t)
{
    struct pinger *p = t->data;

    if (p->done != NULL) {
        if (p->stop_tries++ >= PINGER_STOP_TRIES) {
            log_warn("no answer to the agent's stopping pings: its ranks "
                     "keep the short lease");
            pinger_handed_over(p);
            return;
        }
        pinger_send(p, true);
        return;
    }
    if (p->ad->stopping)
        return;
    /* Idle, now and then: the scheduler grants short leases only to a
     * node whose pings it hears, so they must be heard before the first
     * attempt starts. */
    if (!proc_has_live_supervisors(p->ad->procs) && p->sent_mono != 0 &&
        timeid_mono_ms() - p->sent_mono < PINGER_IDLE_MS)
        return;
    pinger_send(p, false);
}

bool
pinger_handover(struct pinger *p, void (*done)(void *arg), void *arg)
{
    if (!pinger_renewing(p) || p->done != NULL ||
        !proc_has_live_supervisors(p->ad->procs))
        return false;
    p->done = done;
    p->done_arg = arg;
    p->stop_tries = 0;
    p->stop_seq = 0;
    uv_timer_stop(&p->timer);
    uv_timer_start(&p->timer, pinger_timer_cb, 0, PINGER_STOP_GAP_MS);
    return true;
}

struct pinger *
pinger_create(struct agentd *ad, struct err *err)
{
    struct pinger *p = xcalloc(1, sizeof(*p));
    char hex[17];

    (void)err;
    p->ad = ad;
    /* A random first number: answers to an earlier agent's pings. */
    if (timeid_random_hex(hex, 8) == 0)
        p->seq = strtoull(hex, NULL, 16) >> 1;
    else
        p->seq = (uint64_t)timeid_mono_ms() << 20;
    uv_timer_init(ad->loop, &p->timer);
    p->timer.data = p;
    return p;
}

void
pinger_configure(struct pinger *p, int64_t ping_ms)
{
    if (p == NULL || ping_ms == p->ping_ms || p->done != NULL)
        return;
    p->ping_ms = ping_ms;
    uv_timer_stop(&p->timer);
    if (ping_ms > 0)
        uv_timer_start(&p->timer, pinger_timer_cb, (uint64_t)ping_ms,
            (uint64_t)ping_ms);
    else
        p->ok_mono = 0;
    log_info("lease pings: %s",
        ping_ms > 0 ? "asked for by the scheduler" : "not asked for");
}

bool
pinger_renewing(const struct pinger *p)
{
    return p != NULL && p->ping_ms > 0 && p->ok_mono != 0 &&
           timeid_mono_ms() - p->ok_mono < proc_lease_ms(p->ad->procs);
}

void
pinger_destroy(struct pinger *p)
{
    uv_handle_t *hs[3];
    size_t n = 0;

    if (p == NULL)
        return;
    uv_timer_stop(&p->timer);
    hs[n++] = (uv_handle_t *)&p->timer;
    for (size_t i = 0; i < 2; i++)
        if (p->sock[i].open)
            hs[n++] = (uv_handle_t *)&p->sock[i].udp;
    uvx_close(hs, n, free, p);
}
