/*
 * witness.c - witnesses: messages, the choice of a witness set, the rules
 *
 * Messages are one line of text, fields separated by one space, the MAC
 * last over everything before it:
 *
 *   LSW1 Q <node> <nonce:16 hex> <mac:64 hex>
 *   LSW1 A <node> <nonce:16 hex> <age_ms> <mac:64 hex>
 */
#include "common/witness.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
witness_key(const char *secret, size_t secret_len, char *key)
{
    cred_witness_key(secret, secret_len, key);
}

/* Append " <mac of buf[0..len)>" to buf; returns the new length. */
static size_t
witness_seal(const char *key, char *buf, size_t len)
{
    char mac[CRED_HEX_LEN + 1];

    buf[len] = '\0';
    cred_agent_mac(key, strlen(key), buf, mac);
    len += (size_t)snprintf(buf + len, WITNESS_MSG_MAX - len, " %s", mac);
    return len;
}

size_t
witness_query_encode(const char *key, const struct witness_query *q, char *buf)
{
    int n = snprintf(buf, WITNESS_MSG_MAX, "LSW1 Q %s %016" PRIx64, q->node,
        q->nonce);

    return witness_seal(key, buf, (size_t)n);
}

size_t
witness_answer_encode(const char *key, const struct witness_answer *a,
    char *buf)
{
    int n = snprintf(buf, WITNESS_MSG_MAX, "LSW1 A %s %016" PRIx64 " %" PRId64,
        a->node, a->nonce, a->age_ms);

    return witness_seal(key, buf, (size_t)n);
}

/* Copy len bytes of buf to text (NUL-terminated), check the MAC at its
 * end and cut it off. */
static int
witness_open(const char *key, const char *buf, size_t len, char *text)
{
    char mac[CRED_HEX_LEN + 1];
    char *sp;

    if (len < 8 || len >= WITNESS_MSG_MAX)
        return -EINVAL;
    memcpy(text, buf, len);
    text[len] = '\0';
    if (strlen(text) != len || strncmp(text, "LSW1 ", 5) != 0)
        return -EINVAL;
    sp = strrchr(text, ' ');
    if (sp == NULL || strlen(sp + 1) != CRED_HEX_LEN)
        return -EINVAL;
    *sp = '\0';
    cred_agent_mac(key, strlen(key), text, mac);
    if (!cred_equal(mac, sp + 1))
        return -EBADMSG;
    return 0;
}

/* Parse a node name and a hex nonce from s (after "LSW1 X "); *end is
 * what follows. */
static int
witness_parse_head(char *s, char *node, uint64_t *nonce, char **end)
{
    char *sp = strchr(s, ' ');
    size_t n;

    if (sp == NULL)
        return -EINVAL;
    n = (size_t)(sp - s);
    if (n == 0 || n > PROTO_NODE_NAME_MAX)
        return -EINVAL;
    memcpy(node, s, n);
    node[n] = '\0';
    errno = 0;
    *nonce = strtoull(sp + 1, end, 16);
    if (errno != 0 || *end != sp + 17)
        return -EINVAL;
    return 0;
}

int
witness_query_decode(const char *key, const char *buf, size_t len,
    struct witness_query *q)
{
    char text[WITNESS_MSG_MAX];
    char *end;
    int rc;

    if ((rc = witness_open(key, buf, len, text)) < 0)
        return rc;
    if (strncmp(text + 5, "Q ", 2) != 0)
        return -EINVAL;
    if ((rc = witness_parse_head(text + 7, q->node, &q->nonce, &end)) < 0)
        return rc;
    return *end == '\0' ? 0 : -EINVAL;
}

int
witness_answer_decode(const char *key, const char *buf, size_t len,
    struct witness_answer *a)
{
    char text[WITNESS_MSG_MAX];
    char *end;
    long long age;
    int rc;

    if ((rc = witness_open(key, buf, len, text)) < 0)
        return rc;
    if (strncmp(text + 5, "A ", 2) != 0)
        return -EINVAL;
    if ((rc = witness_parse_head(text + 7, a->node, &a->nonce, &end)) < 0)
        return rc;
    if (*end != ' ')
        return -EINVAL;
    errno = 0;
    age = strtoll(end + 1, &end, 10);
    if (errno != 0 || *end != '\0' || age < -1)
        return -EINVAL;
    a->age_ms = age;
    return 0;
}

size_t
witness_majority(size_t n)
{
    return n / 2 + 1;
}

/* The pair's hash: FNV-1a over self, a 0 byte, the candidate, then a
 * finalizer (MurmurHash3's fmix64). Without it the last bytes of a name
 * reach only the low bits, so the order was set by the common prefix:
 * nodes named alike ("rack7-n01", "rack7-n02"; nodes that tend to fail
 * together) picked each other, and a set of them lost at once could
 * leave a lost node without a majority of live witnesses, its jobs
 * waiting for good (docs/scale.md). The part over self is done once per
 * self (witness_self_hash), the rest once per pair (witness_hash). */
uint64_t
witness_self_hash(const char *self)
{
    uint64_t h = 14695981039346656037ULL;

    for (const char *p = self; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h * 1099511628211ULL;
}

/* The pair's hash from witness_self_hash(a), then b. */
static uint64_t
witness_hash(uint64_t h, const char *b)
{
    for (const char *p = b; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

struct witness_rank
witness_rank_with(uint64_t self_hash, const char *self_rack, const char *name,
    const char *rack)
{
    struct witness_rank r = {
        .same_rack = self_rack != NULL && rack != NULL &&
                     strcmp(self_rack, rack) == 0,
        .hash = witness_hash(self_hash, name),
        .name = name,
    };

    return r;
}

struct witness_rank
witness_rank_of(const char *self, const char *self_rack, const char *name,
    const char *rack)
{
    return witness_rank_with(witness_self_hash(self), self_rack, name, rack);
}

/* Whether a ranks before b. */
static bool
witness_before(const struct witness_rank *a, const struct witness_rank *b)
{
    if (a->same_rack != b->same_rack)
        return !a->same_rack;
    if (a->hash != b->hash)
        return a->hash < b->hash;
    return strcmp(a->name, b->name) < 0;
}

size_t
witness_offer(struct witness_rank *ranks, size_t *ids, size_t k,
    const struct witness_rank *r, size_t id)
{
    size_t pos = k;

    while (pos > 0 && witness_before(r, &ranks[pos - 1]))
        pos--;
    if (pos >= WITNESS_MAX)
        return k;
    if (k < WITNESS_MAX)
        k++;
    memmove(&ranks[pos + 1], &ranks[pos], (k - 1 - pos) * sizeof(ranks[0]));
    memmove(&ids[pos + 1], &ids[pos], (k - 1 - pos) * sizeof(ids[0]));
    ranks[pos] = *r;
    ids[pos] = id;
    return k;
}

size_t
witness_pick(const char *self, const char *self_rack, const char *const *names,
    const char *const *racks, size_t n, size_t *out)
{
    struct witness_rank ranks[WITNESS_MAX];
    uint64_t self_hash = witness_self_hash(self);
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        struct witness_rank r;

        if (strcmp(names[i], self) == 0)
            continue;
        r = witness_rank_with(self_hash, self_rack, names[i],
            racks ? racks[i] : NULL);
        k = witness_offer(ranks, out, k, &r, i);
    }
    return k;
}

bool
witness_answer_stale(const struct witness_answer *a, int64_t recv_mono,
    int64_t my_last_ok, int64_t slack_ms)
{
    if (a->age_ms < 0)
        return false;
    return recv_mono - a->age_ms <= my_last_ok + slack_ms;
}

bool
witness_answer_unknown(const struct witness_answer *a)
{
    return a->age_ms < 0;
}

bool
witness_may_extend(size_t nw, size_t nstale, size_t nfresh)
{
    return nw > 0 && nfresh == 0 && nstale >= witness_majority(nw);
}

void
witness_contact_seen(struct witness_contact *c, int64_t now, int64_t gap_ms,
    int64_t window_ms)
{
    int64_t gap = now - c->last_mono;

    if (c->since_mono == 0 || gap > gap_ms) {
        c->since_mono = now;
        c->bucket_mono = now;
        c->gap_max = 0;
        c->gap_prev = 0;
    } else {
        if (now - c->bucket_mono >= window_ms) {
            c->gap_prev = c->gap_max;
            c->gap_max = 0;
            c->bucket_mono = now;
        }
        if (gap > c->gap_max)
            c->gap_max = gap;
    }
    c->last_mono = now;
}

bool
witness_contact_continuous(const struct witness_contact *c, int64_t now,
    int64_t gap_ms, int64_t window_ms)
{
    return c->since_mono != 0 && now - c->last_mono <= gap_ms &&
           now - c->since_mono >= window_ms;
}

int64_t
witness_contact_gap(const struct witness_contact *c, int64_t now)
{
    int64_t g = now - c->last_mono;

    if (c->gap_max > g)
        g = c->gap_max;
    if (c->gap_prev > g)
        g = c->gap_prev;
    return g;
}

bool
witness_may_replace(size_t nw, size_t ncont)
{
    return nw == 0 || ncont >= witness_majority(nw);
}

int64_t
witness_majority_gap(size_t nw, int64_t *gaps, size_t ncont)
{
    size_t k;

    if (nw == 0)
        return 0;
    k = witness_majority(nw);
    if (ncont < k)
        return -1;
    /* At most WITNESS_MAX: insertion. */
    for (size_t i = 1; i < ncont; i++)
        for (size_t j = i; j > 0 && gaps[j - 1] > gaps[j]; j--) {
            int64_t t = gaps[j];

            gaps[j] = gaps[j - 1];
            gaps[j - 1] = t;
        }
    return gaps[k - 1];
}

int64_t
witness_replace_at(int64_t told_until, int64_t gap_ms)
{
    return told_until + WITNESS_SLACK_MS + gap_ms + WITNESS_EXCHANGE_MS;
}
