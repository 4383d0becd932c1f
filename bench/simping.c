/*
 * simping.c - lockstep-sim's lease pings (simping.h)
 */
#include "bench/simping.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/leaseping.h"
#include "common/xalloc.h"

struct simping {
    uv_udp_t udp;
    struct sockaddr_in to;
    simping_key_fn *key_of;
    void *arg;
    char buf[LEASEPING_MSG_MAX];
    uint64_t sent, answered, bad;
};

static void
simping_alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    struct simping *p = h->data;

    (void)size;
    *buf = uv_buf_init(p->buf, sizeof(p->buf));
}

static void
simping_recv_cb(uv_udp_t *udp, ssize_t n, const uv_buf_t *buf,
    const struct sockaddr *sa, unsigned flags)
{
    struct simping *p = udp->data;
    struct leaseping_ack a;
    char node[PROTO_NODE_NAME_MAX + 1];
    struct cred_mac_key *key;
    const char *sp;
    size_t len;

    (void)flags;
    if (n <= 0 || sa == NULL)
        return;
    /* "LSA1 <node> ...": the node names the key. */
    if (n < 6 || memcmp(buf->base, "LSA1 ", 5) != 0 ||
        (sp = memchr(buf->base + 5, ' ', (size_t)n - 5)) == NULL ||
        (len = (size_t)(sp - buf->base - 5)) == 0 ||
        len > PROTO_NODE_NAME_MAX) {
        p->bad++;
        return;
    }
    memcpy(node, buf->base + 5, len);
    node[len] = '\0';
    if ((key = p->key_of(p->arg, node)) == NULL ||
        leaseping_ack_decode(key, buf->base, (size_t)n, &a) < 0) {
        p->bad++;
        return;
    }
    p->answered++;
}

struct simping *
simping_create(uv_loop_t *loop, const char *server, simping_key_fn *key_of,
    void *arg, struct err *err)
{
    struct simping *p;
    struct sockaddr_in any;
    char host[64];
    const char *s = server, *colon;
    int port, rc, want = 8 * 1024 * 1024;
    uv_os_fd_t fd;

    if (strncmp(s, "http://", 7) == 0)
        s += 7;
    else if (strncmp(s, "https://", 8) == 0)
        s += 8;
    else {
        err_set(err, -EINVAL, "lease pings: '%s' is no http(s) URL", server);
        return NULL;
    }
    if ((colon = strchr(s, ':')) == NULL ||
        (size_t)(colon - s) >= sizeof(host) || (port = atoi(colon + 1)) <= 0 ||
        port > 65535) {
        err_set(err, -EINVAL, "lease pings: '%s' names no host:port", server);
        return NULL;
    }
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    p = xcalloc(1, sizeof(*p));
    if (uv_ip4_addr(host, port, &p->to) != 0) {
        err_set(err, -EINVAL, "lease pings: '%s' is no IPv4 address", host);
        free(p);
        return NULL;
    }
    p->key_of = key_of;
    p->arg = arg;
    uv_udp_init(loop, &p->udp);
    p->udp.data = p;
    uv_ip4_addr("0.0.0.0", 0, &any);
    if ((rc = uv_udp_bind(&p->udp, (struct sockaddr *)&any, 0)) < 0 ||
        (rc = uv_udp_recv_start(&p->udp, simping_alloc_cb, simping_recv_cb)) <
            0) {
        err_set(err, rc, "lease pings: %s", uv_strerror(rc));
        /* Left open: the process ends. */
        return NULL;
    }
    /* The answers of thousands of nodes come in bursts (one tick's
     * pings): room for them, past net.core.rmem_max as root. */
    if (uv_fileno((uv_handle_t *)&p->udp, &fd) == 0 &&
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
    return p;
}

void
simping_send(struct simping *p, const char *node, struct cred_mac_key *key,
    uint64_t seq)
{
    struct leaseping lp = { .seq = seq };
    char out[LEASEPING_MSG_MAX];
    uv_buf_t b;

    snprintf(lp.node, sizeof(lp.node), "%s", node);
    b = uv_buf_init(out, (unsigned)leaseping_encode(key, &lp, out));
    if (uv_udp_try_send(&p->udp, &b, 1, (const struct sockaddr *)&p->to) > 0)
        p->sent++;
}

void
simping_counts(struct simping *p, uint64_t *sent, uint64_t *answered,
    uint64_t *bad)
{
    *sent = p->sent;
    *answered = p->answered;
    *bad = p->bad;
    p->sent = p->answered = p->bad = 0;
}
