/*
 * leaseping.c - the lease ping and its answer (leaseping.h)
 */
#include "common/leaseping.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define PING_MAGIC "LSP1 "
#define ACK_MAGIC "LSA1 "
#define MAGIC_LEN 5
/* The most fields a message has, its MAC included. */
#define FIELDS_MAX 6

void
leaseping_key(const unsigned char *node_key, char *key)
{
    cred_agent_mac((const char *)node_key, CRED_KEY_LEN, "lockstep-lease-v1",
        key);
}

struct cred_mac_key *
leaseping_key_create(const unsigned char *node_key)
{
    char key[CRED_HEX_LEN + 1];
    struct cred_mac_key *k;

    leaseping_key(node_key, key);
    k = cred_mac_key_create(key, strlen(key));
    explicit_bzero(key, sizeof(key));
    return k;
}

bool
leaseping_is_ping(const char *buf, size_t len)
{
    return len >= MAGIC_LEN && memcmp(buf, PING_MAGIC, MAGIC_LEN) == 0;
}

/* Append " <mac of buf[0..len)>" and return the new length. */
static size_t
seal(struct cred_mac_key *key, char *buf, int len)
{
    char mac[CRED_HEX_LEN + 1];

    if (len < 0 || len >= LEASEPING_MSG_MAX - CRED_HEX_LEN - 1)
        return 0;
    cred_mac_key_hex(key, buf, mac);
    len += snprintf(buf + len, LEASEPING_MSG_MAX - (size_t)len, " %s", mac);
    return (size_t)len;
}

size_t
leaseping_encode(struct cred_mac_key *key, const struct leaseping *p, char *buf)
{
    return seal(key, buf,
        snprintf(buf, LEASEPING_MSG_MAX, PING_MAGIC "%s %" PRIu64 " %s",
            p->node, p->seq, p->stopping ? "stop" : "run"));
}

size_t
leaseping_ack_encode(struct cred_mac_key *key, const struct leaseping_ack *a,
    char *buf)
{
    return seal(key, buf,
        snprintf(buf, LEASEPING_MSG_MAX,
            ACK_MAGIC "%s %" PRIu64 " %" PRId64 " %" PRId64, a->node, a->seq,
            a->lease_ms, a->interval_ms));
}

/*
 * Copy the len bytes of buf to text and cut it at single spaces into
 * exactly n fields after magic, the last a MAC of CRED_HEX_LEN hex
 * digits. -EINVAL when it is not so.
 */
static int
split(const char *buf, size_t len, const char *magic, char *text, char **f,
    size_t n)
{
    char *s;
    size_t i;

    if (len <= MAGIC_LEN || len >= LEASEPING_MSG_MAX)
        return -EINVAL;
    memcpy(text, buf, len);
    text[len] = '\0';
    if (strlen(text) != len || strncmp(text, magic, MAGIC_LEN) != 0)
        return -EINVAL;
    s = text + MAGIC_LEN;
    for (i = 0; i < n; i++) {
        f[i] = s;
        s = strchr(s, ' ');
        if ((s == NULL) != (i == n - 1))
            return -EINVAL;
        if (s != NULL)
            *s++ = '\0';
        if (f[i][0] == '\0')
            return -EINVAL;
    }
    if (strlen(f[n - 1]) != CRED_HEX_LEN ||
        strspn(f[n - 1], "0123456789abcdef") != CRED_HEX_LEN)
        return -EINVAL;
    return 0;
}

/* A decimal number of digits only, at most max. */
static int
number(const char *s, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;

    if (*s == '\0' || strspn(s, "0123456789") != strlen(s))
        return -EINVAL;
    for (; *s != '\0'; s++) {
        if (x > (max - (uint64_t)(*s - '0')) / 10)
            return -EINVAL;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *v = x;
    return 0;
}

static int
node_name(const char *s, char *node)
{
    size_t n = strlen(s);

    if (n == 0 || n > PROTO_NODE_NAME_MAX)
        return -EINVAL;
    memcpy(node, s, n + 1);
    return 0;
}

/* Whether the MAC (field mac, the last) is right for the text before it:
 * the fields were cut at spaces, which are put back. */
static int
check(struct cred_mac_key *key, char *text, char **f, size_t n)
{
    char mac[CRED_HEX_LEN + 1];

    for (size_t i = 0; i + 2 < n; i++)
        f[i][strlen(f[i])] = ' ';
    cred_mac_key_hex(key, text, mac);
    return cred_equal(mac, f[n - 1]) ? 0 : -EBADMSG;
}

/* A ping's fields into p; text and f as split leaves them. */
static int
ping_split(const char *buf, size_t len, char *text, char **f,
    struct leaseping *p)
{
    int rc;

    if ((rc = split(buf, len, PING_MAGIC, text, f, 4)) < 0 ||
        (rc = node_name(f[0], p->node)) < 0 ||
        (rc = number(f[1], UINT64_MAX, &p->seq)) < 0)
        return rc;
    if (strcmp(f[2], "run") != 0 && strcmp(f[2], "stop") != 0)
        return -EINVAL;
    p->stopping = f[2][0] == 's';
    return 0;
}

int
leaseping_parse(const char *buf, size_t len, struct leaseping *p)
{
    char text[LEASEPING_MSG_MAX], *f[FIELDS_MAX];

    return ping_split(buf, len, text, f, p);
}

int
leaseping_decode(struct cred_mac_key *key, const char *buf, size_t len,
    struct leaseping *p)
{
    char text[LEASEPING_MSG_MAX], *f[FIELDS_MAX];
    int rc;

    if ((rc = ping_split(buf, len, text, f, p)) < 0)
        return rc;
    return check(key, text, f, 4);
}

int
leaseping_ack_decode(struct cred_mac_key *key, const char *buf, size_t len,
    struct leaseping_ack *a)
{
    char text[LEASEPING_MSG_MAX], *f[FIELDS_MAX];
    uint64_t lease, interval;
    int rc;

    if ((rc = split(buf, len, ACK_MAGIC, text, f, 5)) < 0 ||
        (rc = node_name(f[0], a->node)) < 0 ||
        (rc = number(f[1], UINT64_MAX, &a->seq)) < 0 ||
        (rc = number(f[2], PROTO_LEASE_MAX_MS, &lease)) < 0 ||
        (rc = number(f[3], PROTO_HEARTBEAT_MAX_MS, &interval)) < 0)
        return rc;
    if (lease < PROTO_LEASE_MIN_MS || interval == 0)
        return -EINVAL;
    a->lease_ms = (int64_t)lease;
    a->interval_ms = (int64_t)interval;
    return check(key, text, f, 5);
}
