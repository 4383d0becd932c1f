/*
 * hc.c - what lockstep-check's built-in checks share: results, small
 * files, options
 */
#include "agent/hc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonx.h"

cJSON *
hc_add(cJSON *out, enum proto_check_status status, const char *code,
    const char *scope, const char *fmt, ...)
{
    char evidence[PROTO_CHECK_EVIDENCE_MAX];
    cJSON *o = cJSON_CreateObject();
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(evidence, sizeof(evidence), fmt, ap);
    va_end(ap);
    jsonx_add_str(o, "status", proto_check_status_str(status));
    jsonx_add_str(o, "code", code);
    jsonx_add_str(o, "scope", scope != NULL ? scope : "node");
    jsonx_add_str(o, "evidence", evidence);
    cJSON_AddItemToArray(out, o);
    return o;
}

void
hc_number(cJSON *result, const char *name, double v)
{
    cJSON *nums = cJSON_GetObjectItemCaseSensitive(result, "numbers");

    if (nums == NULL)
        nums = cJSON_AddObjectToObject(result, "numbers");
    cJSON_AddNumberToObject(nums, name, v);
}

int
hc_read(const char *dir, const char *name, char *buf, size_t size)
{
    char path[4096];
    ssize_t n;
    int fd, rc;

    if (name != NULL)
        snprintf(path, sizeof(path), "%s/%s", dir, name);
    else
        snprintf(path, sizeof(path), "%s", dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    do
        n = read(fd, buf, size - 1);
    while (n < 0 && errno == EINTR);
    rc = n < 0 ? -errno : 0;
    close(fd);
    if (rc < 0)
        return rc;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' ||
                        buf[n - 1] == '\t' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    return (int)n;
}

bool
hc_opt(const char *check, int argc, char **argv, int *i, const char *name,
    const char **value, bool *bad)
{
    const char *a = argv[*i];
    size_t len = strlen(name);

    if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, len) != 0)
        return false;
    if (a[2 + len] == '=') {
        *value = a + 3 + len;
        (*i)++;
        return true;
    }
    if (a[2 + len] != '\0')
        return false;
    if (*i + 1 >= argc) {
        fprintf(stderr, "lockstep-check %s: option '--%s' needs a value\n",
            check, name);
        *bad = true;
        *i = argc;
        return true;
    }
    *value = argv[*i + 1];
    *i += 2;
    return true;
}

bool
hc_opt_int(const char *check, int argc, char **argv, int *i, const char *name,
    int64_t min, int64_t max, int64_t *value, bool *bad)
{
    const char *s = NULL;
    char *end;
    long long v;

    if (!hc_opt(check, argc, argv, i, name, &s, bad))
        return false;
    if (*bad)
        return true;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr,
            "lockstep-check %s: option '--%s' '%s': must be an integer "
            "from %" PRId64 " to %" PRId64 "\n",
            check, name, s, min, max);
        *bad = true;
        return true;
    }
    *value = v;
    return true;
}

int
hc_usage_unknown(const char *check, const char *arg)
{
    fprintf(stderr, "lockstep-check %s: unknown option '%s'\n", check, arg);
    return HC_USAGE;
}
