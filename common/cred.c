/*
 * cred.c - credentials over libcrypto
 *
 * Secret files and node key files are read the same careful way: a
 * regular file no other user can read or write. Every comparison of a
 * MAC goes through cred_equal() (CRYPTO_memcmp).
 */
#include "cred.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "log.h"
#include "sbuf.h"
#include "timeid.h"
#include "xalloc.h"

#define CRED_FILE_MAX 4096
#define CRED_NODE_KEY_LABEL "lockstep-node-key:"
#define CRED_REQ_LABEL "lockstep-agent-v1"
#define CRED_WITNESS_LABEL "lockstep witness v1"

static void
to_hex(const unsigned char *raw, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * n] = '\0';
}

/* SHA-256 and an HMAC context with SHA-256 set, fetched once: HMAC()
 * and EVP_sha256() look their algorithms up at every call, which was
 * half the cost of a MAC and a tenth of an agent status's
 * (docs/scale.md). The template is only ever copied. */
static pthread_once_t cred_algs_once = PTHREAD_ONCE_INIT;
static EVP_MD *cred_md;
static EVP_MAC_CTX *cred_hmac_tmpl;

static void
cred_algs_fetch(void)
{
    OSSL_PARAM params[] = { OSSL_PARAM_construct_utf8_string(
                                OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end() };
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);

    cred_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (mac != NULL)
        cred_hmac_tmpl = EVP_MAC_CTX_new(mac);
    if (cred_md == NULL || cred_hmac_tmpl == NULL ||
        !EVP_MAC_CTX_set_params(cred_hmac_tmpl, params))
        fatalx("libcrypto offers no SHA-256 or HMAC");
    EVP_MAC_free(mac); /* the template holds its own reference */
}

/* HMAC-SHA256 of msg under key into out (CRED_KEY_LEN bytes). */
static void
cred_hmac(const void *key, size_t key_len, const void *msg, size_t msg_len,
    unsigned char *out)
{
    EVP_MAC_CTX *c;
    size_t n = 0;

    pthread_once(&cred_algs_once, cred_algs_fetch);
    c = EVP_MAC_CTX_dup(cred_hmac_tmpl);
    if (c == NULL || !EVP_MAC_init(c, key, key_len, NULL) ||
        !EVP_MAC_update(c, msg, msg_len) ||
        !EVP_MAC_final(c, out, &n, CRED_KEY_LEN) || n != CRED_KEY_LEN)
        fatalx("HMAC-SHA256 failed in libcrypto");
    EVP_MAC_CTX_free(c);
}

struct cred_mac_key {
    EVP_MAC_CTX *ctx; /* initialized with the key */
};

struct cred_mac_key *
cred_mac_key_create(const void *key, size_t len)
{
    struct cred_mac_key *k = xcalloc(1, sizeof(*k));

    pthread_once(&cred_algs_once, cred_algs_fetch);
    k->ctx = EVP_MAC_CTX_dup(cred_hmac_tmpl);
    if (k->ctx == NULL || !EVP_MAC_init(k->ctx, key, len, NULL))
        fatalx("HMAC-SHA256 failed in libcrypto");
    return k;
}

void
cred_mac_key_destroy(struct cred_mac_key *k)
{
    if (k == NULL)
        return;
    EVP_MAC_CTX_free(k->ctx); /* wipes the key */
    free(k);
}

void
cred_mac_key_hex(struct cred_mac_key *k, const char *msg, char *out)
{
    unsigned char mac[CRED_KEY_LEN];
    size_t n = 0;

    /* No key: the context starts again from the one it was given. */
    if (!EVP_MAC_init(k->ctx, NULL, 0, NULL) ||
        !EVP_MAC_update(k->ctx, (const unsigned char *)msg, strlen(msg)) ||
        !EVP_MAC_final(k->ctx, mac, &n, sizeof(mac)) || n != sizeof(mac))
        fatalx("HMAC-SHA256 failed in libcrypto");
    to_hex(mac, sizeof(mac), out);
}

/* SHA-256 of data into out (CRED_KEY_LEN bytes). */
static void
cred_sha256(const void *data, size_t len, unsigned char *out)
{
    pthread_once(&cred_algs_once, cred_algs_fetch);
    if (!EVP_Digest(data, len, out, NULL, cred_md, NULL))
        fatalx("SHA-256 failed in libcrypto");
}

/* Read the private file path (what names it in errors: "cluster
 * secret") into buf (CRED_FILE_MAX + 1 bytes, NUL-terminated, trailing
 * whitespace stripped); *len its length. */
static int
cred_read_private(const char *path, const char *what, char *buf, size_t *len,
    struct err *err)
{
    struct stat st;
    ssize_t n;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, -errno, "cannot open %s '%s': %s", what, path,
            strerror(errno));
    if (fstat(fd, &st) < 0) {
        int rc = -errno;
        close(fd);
        return err_set(err, rc, "cannot stat %s '%s': %s", what, path,
            strerror(-rc));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, -EINVAL, "%s '%s' is not a file", what, path);
    }
    if (st.st_mode & 007) {
        close(fd);
        return err_set(err, -EPERM,
            "%s '%s' is accessible to other users (mode %04o); chmod 600 it",
            what, path, (unsigned)(st.st_mode & 07777));
    }
    n = read(fd, buf, CRED_FILE_MAX + 1);
    close(fd);
    if (n < 0)
        return err_set(err, -errno, "cannot read %s '%s': %s", what, path,
            strerror(errno));
    if (n > CRED_FILE_MAX) {
        explicit_bzero(buf, CRED_FILE_MAX + 1);
        return err_set(err, -EINVAL, "%s '%s' is longer than %d bytes", what,
            path, CRED_FILE_MAX);
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
                        buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    *len = (size_t)n;
    return 0;
}

int
cred_read_secret(const char *path, char **secret, size_t *len, struct err *err)
{
    char buf[CRED_FILE_MAX + 1];
    size_t n = 0;
    int rc = cred_read_private(path, "cluster secret", buf, &n, err);

    if (rc == 0 && n < 16)
        rc = err_set(err, -EINVAL,
            "cluster secret '%s' is too short (%zu bytes; need 16)", path, n);
    if (rc == 0) {
        *secret = xstrndup(buf, n);
        *len = n;
    }
    explicit_bzero(buf, sizeof(buf));
    return rc;
}

void
cred_agent_mac(const char *secret, size_t secret_len, const char *node,
    char *out)
{
    unsigned char mac[CRED_KEY_LEN];

    cred_hmac(secret, secret_len, node, strlen(node), mac);
    to_hex(mac, sizeof(mac), out);
}

void
cred_sha256_hex(const char *s, char *out)
{
    unsigned char md[CRED_KEY_LEN];

    cred_sha256(s, strlen(s), md);
    to_hex(md, sizeof(md), out);
}

char *
cred_token_new(void)
{
    char hex[65];

    if (timeid_random_hex(hex, 32) < 0)
        return NULL;
    return xasprintf("lst_%s", hex);
}

bool
cred_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);

    if (la != lb)
        return false;
    return CRYPTO_memcmp(a, b, la) == 0;
}

enum cred_token_state
cred_token_state(int64_t expires_ms, int64_t revoked_ms, int64_t now_ms)
{
    if (revoked_ms > 0)
        return CRED_TOKEN_REVOKED;
    if (expires_ms > 0 && now_ms >= expires_ms)
        return CRED_TOKEN_EXPIRED;
    return CRED_TOKEN_VALID;
}

bool
cred_token_touch_due(int64_t last_used_ms, int64_t now_ms)
{
    return last_used_ms <= 0 || now_ms - last_used_ms >= CRED_TOKEN_TOUCH_MS ||
           now_ms < last_used_ms;
}

/* ---- agent credentials ----------------------------------------------------
 */

bool
cred_from_hex(const char *s, unsigned char *raw, size_t n)
{
    for (size_t i = 0; i < 2 * n; i++) {
        int c = s[i], v;

        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else
            return false;
        if (i % 2 == 0)
            raw[i / 2] = (unsigned char)(v << 4);
        else
            raw[i / 2] |= (unsigned char)v;
    }
    return true;
}

/* Decode exactly 2n lowercase hex chars (all of s) into raw. */
static bool
from_hex(const char *s, unsigned char *raw, size_t n)
{
    return strlen(s) == 2 * n && cred_from_hex(s, raw, n);
}

/* Whether s is exactly n lowercase hex chars. */
static bool
is_hex(const char *s, size_t n)
{
    size_t i;

    for (i = 0; s[i] && i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return i == n && s[i] == '\0';
}

void
cred_witness_key(const char *secret, size_t secret_len, char *key)
{
    cred_agent_mac(secret, secret_len, CRED_WITNESS_LABEL, key);
}

void
cred_node_key(const char *secret, size_t secret_len, const char *node,
    unsigned char *key)
{
    char *msg = xasprintf("%s%s", CRED_NODE_KEY_LABEL, node);

    cred_hmac(secret, secret_len, msg, strlen(msg), key);
    free(msg);
}

void
cred_agent_req_mac(const unsigned char *key, const struct cred_agent_req *r,
    char *out)
{
    unsigned char md[CRED_KEY_LEN], mac[CRED_KEY_LEN];
    char body_hex[CRED_HEX_LEN + 1];
    struct sbuf text;

    cred_sha256(r->body != NULL ? r->body : "", r->body_len, md);
    to_hex(md, sizeof(md), body_hex);
    sbuf_init(&text);
    sbuf_addf(&text, "%s\n%s\n%s\n%s\n%s\n%lld\n%s", CRED_REQ_LABEL, r->node,
        r->method, r->target, body_hex, (long long)r->ts_ms, r->nonce);
    cred_hmac(key, CRED_KEY_LEN, text.buf, text.len, mac);
    to_hex(mac, sizeof(mac), out);
    sbuf_release(&text);
}

char *
cred_agent_sign(const unsigned char *key, const char *node, const char *method,
    const char *target, const char *body, size_t body_len, int64_t now_ms)
{
    char nonce[2 * CRED_NONCE_LEN + 1], mac[CRED_HEX_LEN + 1];
    struct cred_agent_req r = { .node = node,
        .method = method,
        .target = target,
        .body = body,
        .body_len = body_len,
        .ts_ms = now_ms,
        .nonce = nonce };

    if (timeid_random_hex(nonce, CRED_NONCE_LEN) < 0)
        return NULL;
    cred_agent_req_mac(key, &r, mac);
    return xasprintf("Authorization: Agent %s:%lld:%s:%s", node,
        (long long)now_ms, nonce, mac);
}

/* Copy the field of s up to the next ':' (or the end) into out (len
 * bytes); *s moves past it and its ':'. False when it is empty or does
 * not fit. */
static bool
cred_field(const char **s, char *out, size_t len)
{
    size_t n = strcspn(*s, ":");

    if (n == 0 || n >= len)
        return false;
    memcpy(out, *s, n);
    out[n] = '\0';
    *s += n;
    if (**s == ':')
        (*s)++;
    return true;
}

int
cred_agent_parse(const char *s, struct cred_agent_cred *c)
{
    char ts[24];
    char *end = NULL;
    long long v;

    memset(c, 0, sizeof(*c));
    if (!cred_field(&s, c->node, sizeof(c->node)) ||
        !proto_valid_name(c->node, PROTO_NODE_NAME_MAX)) {
        c->node[0] = '\0';
        return -EINVAL;
    }
    if (is_hex(s, CRED_HEX_LEN)) {
        memcpy(c->mac, s, CRED_HEX_LEN + 1);
        return -EPROTO;
    }
    if (!cred_field(&s, ts, sizeof(ts)) ||
        !cred_field(&s, c->nonce, sizeof(c->nonce)) ||
        !is_hex(c->nonce, 2 * CRED_NONCE_LEN) || !is_hex(s, CRED_HEX_LEN))
        return -EINVAL;
    if (ts[0] < '0' || ts[0] > '9')
        return -EINVAL;
    errno = 0;
    v = strtoll(ts, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0)
        return -EINVAL;
    c->ts_ms = v;
    memcpy(c->mac, s, CRED_HEX_LEN + 1);
    return 0;
}

/* ---- node key files ---------------------------------------------------------
 */

void
cred_node_keyfile_derive(const char *secret, size_t secret_len,
    const char *prev, size_t prev_len, const char *node,
    struct cred_node_keyfile *kf)
{
    memset(kf, 0, sizeof(*kf));
    snprintf(kf->node, sizeof(kf->node), "%s", node);
    cred_node_key(secret, secret_len, node, kf->key);
    cred_witness_key(secret, secret_len, kf->witness_key);
    if (prev != NULL)
        cred_witness_key(prev, prev_len, kf->witness_prev);
}

char *
cred_node_keyfile_format(const struct cred_node_keyfile *kf)
{
    char key[CRED_HEX_LEN + 1];
    struct sbuf out;

    to_hex(kf->key, CRED_KEY_LEN, key);
    sbuf_init(&out);
    sbuf_addf(&out,
        "# lockstep node key of node '%s' (lockstepd --derive-node-key).\n"
        "# Install it on that node only, mode 0600, as the agent's\n"
        "# node_key_file (docs/operations.md \"Node keys\").\n"
        "node = %s\nkey = %s\nwitness_key = %s\n",
        kf->node, kf->node, key, kf->witness_key);
    if (kf->witness_prev[0])
        sbuf_addf(&out, "witness_key_previous = %s\n", kf->witness_prev);
    explicit_bzero(key, sizeof(key));
    return sbuf_detach(&out, NULL);
}

/* One "key = value" line of a node key file into kf. */
static int
cred_keyfile_line(char *line, const char *path, int lineno,
    struct cred_node_keyfile *kf, unsigned *seen, struct err *err)
{
    char *eq = strchr(line, '='), *k = line, *v, *e;

    if (eq == NULL)
        return err_set(err, -EINVAL,
            "node key file '%s' line %d: not key = value", path, lineno);
    v = eq + 1;
    for (e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
        ;
    *e = '\0';
    while (*v == ' ' || *v == '\t')
        v++;
    for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
        ;
    *e = '\0';
    if (strcmp(k, "node") == 0 && proto_valid_name(v, PROTO_NODE_NAME_MAX)) {
        snprintf(kf->node, sizeof(kf->node), "%s", v);
        *seen |= 1;
    } else if (strcmp(k, "key") == 0 && from_hex(v, kf->key, CRED_KEY_LEN)) {
        *seen |= 2;
    } else if (strcmp(k, "witness_key") == 0 && is_hex(v, CRED_HEX_LEN)) {
        memcpy(kf->witness_key, v, CRED_HEX_LEN + 1);
        *seen |= 4;
    } else if (strcmp(k, "witness_key_previous") == 0 &&
               is_hex(v, CRED_HEX_LEN)) {
        memcpy(kf->witness_prev, v, CRED_HEX_LEN + 1);
    } else if (strcmp(k, "node") == 0 || strcmp(k, "key") == 0 ||
               strncmp(k, "witness_key", 11) == 0) {
        return err_set(err, -EINVAL,
            "node key file '%s' line %d: bad value for '%s'%s", path, lineno, k,
            strcmp(k, "node") == 0 ? "" : " (need 64 lowercase hex digits)");
    } else {
        return err_set(err, -EINVAL,
            "node key file '%s' line %d: unknown key '%.40s'", path, lineno, k);
    }
    return 0;
}

int
cred_node_keyfile_read(const char *path, struct cred_node_keyfile *kf,
    struct err *err)
{
    char buf[CRED_FILE_MAX + 1];
    char *line, *next;
    unsigned seen = 0;
    size_t n = 0;
    int lineno = 0, rc;

    memset(kf, 0, sizeof(*kf));
    rc = cred_read_private(path, "node key file", buf, &n, err);
    for (line = buf; rc == 0 && line != NULL; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        line += strspn(line, " \t");
        line[strcspn(line, "\r")] = '\0';
        if (*line == '\0' || *line == '#')
            continue;
        rc = cred_keyfile_line(line, path, lineno, kf, &seen, err);
    }
    if (rc == 0 && seen != 7)
        rc = err_set(err, -EINVAL, "node key file '%s' lacks '%s'", path,
            !(seen & 1)   ? "node"
            : !(seen & 2) ? "key"
                          : "witness_key");
    explicit_bzero(buf, sizeof(buf));
    if (rc < 0)
        explicit_bzero(kf, sizeof(*kf));
    return rc;
}
