/*
 * fence.c - the scheduler's UDP port: fence notices and lease pings
 */
#include "scheduler/fence.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "common/fence.h"
#include "common/leaseping.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/auth.h"
#include "scheduler/node.h"
#include "scheduler/nodes.h"
#include "scheduler/nodes_witness.h"
#include "scheduler/repl.h"
#include "scheduler/schedd.h"

/* How often a refused datagram may be logged. */
#define FENCE_LOG_EVERY_MS 60000
/* The UDP receive buffer asked for (the kernel doubles it). */
#define FENCE_RCVBUF (8 * 1024 * 1024)
#define FENCE_BAD_MAC                                                          \
    "bad MAC (not the node's key of the cluster secret or the previous one)"

struct fence_rx {
    struct schedd *sd;
    uv_udp_t udp;
    char buf[FENCE_MSG_MAX];
    struct fence_rx_counts counts;
    int64_t logged_mono; /* last refusal logged */
};

static void
fence_alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    struct fence_rx *rx = h->data;

    (void)size;
    *buf = uv_buf_init(rx->buf, sizeof(rx->buf));
}

/* The notice's MAC under node's key of secret. */
static bool
fence_mac_ok(const char *secret, size_t len, const struct fence_notice *n,
    const char *buf, size_t nbuf)
{
    unsigned char nk[CRED_KEY_LEN];
    char key[CRED_HEX_LEN + 1];
    bool ok;

    cred_node_key(secret, len, n->node, nk);
    fence_key(nk, n->job, n->attempt, key);
    ok = fence_notice_verify(key, buf, nbuf) == 0;
    explicit_bzero(nk, sizeof(nk));
    explicit_bzero(key, sizeof(key));
    return ok;
}

static void
fence_refuse(struct fence_rx *rx, const struct sockaddr *sa, const char *what,
    const char *why)
{
    char ip[64] = "?";
    int64_t now = timeid_mono_ms();

    rx->counts.refused++;
    if (rx->logged_mono != 0 && now - rx->logged_mono < FENCE_LOG_EVERY_MS)
        return;
    rx->logged_mono = now;
    if (sa->sa_family == AF_INET)
        uv_ip4_name((const struct sockaddr_in *)sa, ip, sizeof(ip));
    else if (sa->sa_family == AF_INET6)
        uv_ip6_name((const struct sockaddr_in6 *)sa, ip, sizeof(ip));
    log_warn("%s from %s refused: %s (%llu datagrams refused so far; "
             "logged at most once a minute)",
        what, ip, why, (unsigned long long)rx->counts.refused);
}

/* The node's lease key of secret, made ready. */
static struct cred_mac_key *
fence_lease_key(const char *secret, size_t len, const char *node)
{
    unsigned char nk[CRED_KEY_LEN];
    struct cred_mac_key *k;

    cred_node_key(secret, len, node, nk);
    k = leaseping_key_create(nk);
    explicit_bzero(nk, sizeof(nk));
    return k;
}

/*
 * A lease ping: the node is heard from, and answered with the lease it is
 * granted (nodes_witness_grant), under the key its ping came with. Not
 * answered when the node is not heard from (LOST, being removed) or this
 * scheduler does not serve: the gate counts only on answers given to a
 * node whose silence it measures.
 */
static void
fence_ping(struct fence_rx *rx, const char *buf, size_t n,
    const struct sockaddr *sa)
{
    struct schedd *sd = rx->sd;
    char out[LEASEPING_MSG_MAX];
    struct cred_mac_key *prev = NULL, *mk;
    struct leaseping_ack ack = { 0 };
    struct leaseping p;
    struct node *node;
    uv_buf_t b;

    if (leaseping_parse(buf, n, &p) < 0) {
        fence_refuse(rx, sa, "lease ping", "not a lease ping");
        return;
    }
    if ((node = node_table_find(&sd->nodes, p.node)) == NULL) {
        fence_refuse(rx, sa, "lease ping", "no such node");
        return;
    }
    /* The key of the current secret is kept with the node, made ready:
     * deriving it is two HMACs a ping, and readying it half of each of
     * the ping's two MACs. That of the previous secret is derived. */
    auth_node_keys(sd, node);
    mk = node->lease_mac;
    if (leaseping_decode(mk, buf, n, &p) < 0) {
        if (sd->secret_prev != NULL)
            prev = fence_lease_key(sd->secret_prev, sd->secret_prev_len,
                p.node);
        if (prev == NULL || leaseping_decode(prev, buf, n, &p) < 0) {
            cred_mac_key_destroy(prev);
            fence_refuse(rx, sa, "lease ping", FENCE_BAD_MAC);
            return;
        }
        mk = prev;
    }
    if (!schedd_available(sd) || (sd->repl && !repl_serving(sd->repl)) ||
        !nodes_pinged(sd, node, timeid_now_ms(), timeid_mono_ms(),
            p.stopping)) {
        cred_mac_key_destroy(prev);
        rx->counts.pings_ignored++;
        return;
    }
    memcpy(ack.node, p.node, sizeof(ack.node));
    ack.seq = p.seq;
    nodes_witness_grant(sd, node, &ack.lease_ms, &ack.interval_ms);
    b = uv_buf_init(out, (unsigned)leaseping_ack_encode(mk, &ack, out));
    cred_mac_key_destroy(prev);
    if (uv_udp_try_send(&rx->udp, &b, 1, sa) < 0)
        rx->counts.pings_unsent++;
    else
        rx->counts.pings_answered++;
}

static void
fence_recv_cb(uv_udp_t *udp, ssize_t n, const uv_buf_t *buf,
    const struct sockaddr *sa, unsigned flags)
{
    struct fence_rx *rx = udp->data;
    struct schedd *sd = rx->sd;
    struct fence_notice fn;
    struct node *node;
    size_t held;

    (void)flags;
    if (n <= 0 || sa == NULL)
        return;
    if (leaseping_is_ping(buf->base, (size_t)n)) {
        fence_ping(rx, buf->base, (size_t)n, sa);
        return;
    }
    if (fence_notice_parse(buf->base, (size_t)n, &fn) < 0) {
        fence_refuse(rx, sa, "fence notice", "not a fence notice");
        return;
    }
    if ((node = node_table_find(&sd->nodes, fn.node)) == NULL) {
        fence_refuse(rx, sa, "fence notice", "no such node");
        return;
    }
    if (!fence_mac_ok(sd->secret, sd->secret_len, &fn, buf->base, (size_t)n) &&
        (sd->secret_prev == NULL ||
            !fence_mac_ok(sd->secret_prev, sd->secret_prev_len, &fn, buf->base,
                (size_t)n))) {
        fence_refuse(rx, sa, "fence notice", FENCE_BAD_MAC);
        return;
    }
    /* Nothing is lost by ignoring it: the node's timeout and its
     * witnesses' gate still replace the attempt. */
    if (!schedd_available(sd) || (sd->repl && !repl_serving(sd->repl)))
        return;
    held = node->nholds;
    if (nodes_fenced(sd, node, fn.job, fn.attempt) < 0)
        return; /* the database: the scheduler reloads */
    if (node->nholds < held)
        rx->counts.acted++;
    else
        rx->counts.old++;
}

/*
 * Room for the lease pings that arrive while the loop is busy: 10,000
 * busy nodes send 33 a millisecond, and the default buffer (about 200 KiB,
 * some 270 datagrams) overflows after 8 ms. SO_RCVBUFFORCE passes
 * net.core.rmem_max when the scheduler may (CAP_NET_ADMIN); else
 * SO_RCVBUF, capped by it.
 */
static void
fence_rx_buffer(struct fence_rx *rx)
{
    int want = FENCE_RCVBUF, got = 0, fd;
    socklen_t len = sizeof(got);
    uv_os_fd_t ufd;

    if (uv_fileno((uv_handle_t *)&rx->udp, &ufd) < 0)
        return;
    fd = ufd;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) == 0 && got < want)
        log_notice("UDP receive buffer %d bytes, not %d: raise "
                   "net.core.rmem_max for many busy nodes' lease pings",
            got / 2, want);
}

struct fence_rx *
fence_rx_start(struct schedd *sd, const char *host, int port, struct err *err)
{
    struct addrinfo hints = { .ai_socktype = SOCK_DGRAM,
        .ai_flags = AI_PASSIVE };
    struct fence_rx *rx = xcalloc(1, sizeof(*rx));
    struct addrinfo *ai = NULL;
    char port_s[16];
    int rc;

    snprintf(port_s, sizeof(port_s), "%d", port);
    if ((rc = getaddrinfo(host, port_s, &hints, &ai)) != 0 || ai == NULL) {
        err_set(err, -EINVAL, "fence notices: cannot resolve '%s': %s", host,
            gai_strerror(rc));
        free(rx);
        return NULL;
    }
    rx->sd = sd;
    uv_udp_init(sd->loop, &rx->udp);
    rx->udp.data = rx;
    if ((rc = uv_udp_bind(&rx->udp, ai->ai_addr, 0)) < 0 ||
        (rc = uv_udp_recv_start(&rx->udp, fence_alloc_cb, fence_recv_cb)) < 0) {
        err_set(err, rc, "fence notices: cannot bind UDP %s:%d: %s", host, port,
            uv_strerror(rc));
        freeaddrinfo(ai);
        fence_rx_close(rx);
        return NULL;
    }
    freeaddrinfo(ai);
    fence_rx_buffer(rx);
    log_info("fence notices received on UDP %s:%d, lease pings too", host,
        port);
    return rx;
}

static void
fence_close_cb(uv_handle_t *h)
{
    free(h->data);
}

void
fence_rx_close(struct fence_rx *rx)
{
    if (rx == NULL)
        return;
    uv_close((uv_handle_t *)&rx->udp, fence_close_cb);
}

void
fence_rx_counts(const struct fence_rx *rx, struct fence_rx_counts *c)
{
    if (rx == NULL)
        memset(c, 0, sizeof(*c));
    else
        *c = rx->counts;
}
