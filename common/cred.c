/*
 * cred.c - credentials over libcrypto
 */
#include "cred.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "timeid.h"
#include "xalloc.h"

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

int
cred_read_secret(const char *path, char **secret, size_t *len, struct err *err)
{
    char buf[4097];
    struct stat st;
    ssize_t n;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, -errno, "cannot open cluster secret '%s': %s", path,
            strerror(errno));
    if (fstat(fd, &st) < 0) {
        int rc = -errno;
        close(fd);
        return err_set(err, rc, "cannot stat cluster secret '%s': %s", path,
            strerror(-rc));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return err_set(err, -EINVAL, "cluster secret '%s' is not a file", path);
    }
    if (st.st_mode & 007) {
        close(fd);
        return err_set(err, -EPERM,
            "cluster secret '%s' is accessible to other users (mode %04o); "
            "chmod 600 it",
            path, (unsigned)(st.st_mode & 07777));
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0)
        return err_set(err, -errno, "cannot read cluster secret '%s': %s", path,
            strerror(errno));
    if (n == (ssize_t)sizeof(buf) - 1)
        return err_set(err, -EINVAL,
            "cluster secret '%s' is longer than 4096 bytes", path);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
                        buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    if (n < 16)
        return err_set(err, -EINVAL,
            "cluster secret '%s' is too short (%zd bytes; need 16)", path, n);
    *secret = xstrndup(buf, (size_t)n);
    *len = (size_t)n;
    explicit_bzero(buf, sizeof(buf));
    return 0;
}

void
cred_agent_mac(const char *secret, size_t secret_len, const char *node,
    char *out)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;

    HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)node,
        strlen(node), mac, &maclen);
    to_hex(mac, maclen, out);
}

void
cred_sha256_hex(const char *s, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    EVP_Digest(s, strlen(s), md, &mdlen, EVP_sha256(), NULL);
    to_hex(md, mdlen, out);
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
