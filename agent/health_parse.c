/*
 * health_parse.c - the health runner's pure parts: a site check's header,
 * a check's output, whether results changed (health_parse.h)
 */
#include "agent/health_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

/* "60s" into ms; -1 when malformed. */
static int64_t
health_duration_ms(const char *s, size_t len)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
        { "h", 3600000 } };
    int64_t v = 0;
    size_t i = 0;

    while (i < len && s[i] >= '0' && s[i] <= '9' && v < 1000000000)
        v = v * 10 + (s[i++] - '0');
    if (i == 0)
        return -1;
    for (size_t u = 0; u < ARRAY_SIZE(units); u++) {
        if (len - i == strlen(units[u].unit) &&
            strncmp(s + i, units[u].unit, len - i) == 0)
            return v * units[u].ms;
    }
    return -1;
}

/* The words after "lockstep:" on one line (end excluded). */
static int
health_header_words(const char *p, const char *end, int64_t *interval_ms,
    int64_t *timeout_ms, struct err *err)
{
    while (p < end) {
        const char *w, *eq;
        int64_t v, max;
        bool iv;

        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (p >= end)
            break;
        w = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        eq = memchr(w, '=', (size_t)(p - w));
        iv = eq != NULL && eq - w == 8 && strncmp(w, "interval", 8) == 0;
        if (eq == NULL ||
            (!iv && !(eq - w == 7 && strncmp(w, "timeout", 7) == 0)))
            return err_set(err, -EINVAL,
                "lockstep: header: unknown setting '%.*s' (interval=, "
                "timeout=)",
                (int)(p - w), w);
        v = health_duration_ms(eq + 1, (size_t)(p - eq - 1));
        max = iv ? 86400000 : 3600000;
        if (v < 100 || v > max)
            return err_set(err, -EINVAL,
                "lockstep: header: '%.*s': must be a duration with a unit "
                "(ms, s, m, h) from 100ms to %s",
                (int)(p - w), w, iv ? "24h" : "1h");
        *(iv ? interval_ms : timeout_ms) = v;
    }
    return 0;
}

int
health_header_parse(const char *text, size_t len, int64_t *interval_ms,
    int64_t *timeout_ms, struct err *err)
{
    const char *p = text, *end = text + (len < 4096 ? len : 4096);

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *q = p;

        if (eol == NULL)
            eol = end;
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        if (q < eol && (*q == '#' || *q == ';' ||
                           (eol - q >= 2 && (strncmp(q, "//", 2) == 0 ||
                                                strncmp(q, "--", 2) == 0)))) {
            while (q < eol && (*q == '#' || *q == ';' || *q == '/' ||
                                  *q == '-' || *q == ' ' || *q == '\t'))
                q++;
            if (eol - q >= 9 && strncmp(q, "lockstep:", 9) == 0)
                return health_header_words(q + 9, eol, interval_ms, timeout_ms,
                    err);
        }
        p = eol + 1;
    }
    return 0;
}

int
health_output_parse(const char *text, struct proto_check_result **res,
    size_t *n, struct err *err)
{
    cJSON *root = NULL, *item;
    size_t count = 0;
    int rc;

    *res = NULL;
    *n = 0;
    if ((rc = jsonx_parse(text, strlen(text), &root, err)) < 0)
        return rc;
    if (cJSON_IsObject(root)) {
        count = 1;
    } else if (cJSON_IsArray(root)) {
        count = (size_t)cJSON_GetArraySize(root);
    } else {
        cJSON_Delete(root);
        return err_set(err, -EINVAL,
            "output is not a JSON result object or array");
    }
    if (count == 0 || count > HEALTH_RESULTS_PER_CHECK) {
        cJSON_Delete(root);
        return err_set(err, -EINVAL, "output holds %zu results (1 to %d)",
            count, HEALTH_RESULTS_PER_CHECK);
    }
    *res = xcalloc(count, sizeof(**res));
    item = cJSON_IsObject(root) ? root : root->child;
    for (; item != NULL && *n < count; item = item->next) {
        rc = proto_check_result_from_json(item, false, &(*res)[*n], err);
        if (rc < 0) {
            err_prefix(err, "result %zu: ", *n + 1);
            break;
        }
        (*n)++;
    }
    cJSON_Delete(root);
    if (rc < 0) {
        for (size_t i = 0; i < *n; i++)
            proto_check_result_release(&(*res)[i]);
        free(*res);
        *res = NULL;
        *n = 0;
    }
    return rc;
}

static bool
health_result_in(const struct proto_check_result *r,
    const struct proto_check_result *set, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (set[i].status == r->status && strcmp(set[i].code, r->code) == 0 &&
            strcmp(set[i].scope, r->scope) == 0)
            return true;
    }
    return false;
}

bool
health_results_differ(const struct proto_check_result *a, size_t na,
    const struct proto_check_result *b, size_t nb)
{
    if (na != nb)
        return true;
    for (size_t i = 0; i < na; i++) {
        if (!health_result_in(&a[i], b, nb) || !health_result_in(&b[i], a, na))
            return true;
    }
    return false;
}
