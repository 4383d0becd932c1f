/*
 * cli_fmt.c - turning API objects into text for a person
 *
 * The getters here are lenient on purpose: a field the scheduler leaves
 * out or sends as null shows as "-" or a default rather than failing the
 * command, because a human view should survive an API that grows. Scripts
 * use --json and see the reply unchanged.
 */
#include "cli/cli.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/xalloc.h"

/* ---- JSON getters -------------------------------------------------------- */

const char *
cli_jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_IsObject(o)
                         ? cJSON_GetObjectItemCaseSensitive(o, key)
                         : NULL;

    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

int64_t
cli_jnum(const cJSON *v, int64_t def)
{
    double d;

    if (!cJSON_IsNumber(v))
        return def;
    /* A double outside int64_t's range (or NaN) converts to nothing:
     * undefined behaviour, not a value. */
    d = v->valuedouble;
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return def;
    return (int64_t)d;
}

int64_t
cli_jint(const cJSON *o, const char *key, int64_t def)
{
    return cli_jnum(cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key)
                                      : NULL,
        def);
}

bool
cli_jhas_num(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) &&
           cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* ---- job states (common/proto.h names them) ----------------------------- */

bool
cli_job_state_final(const char *state)
{
    enum proto_job_state s;

    return proto_job_state_parse(state, &s) == 0 && proto_job_state_finished(s);
}

const char *
cli_job_state_parse(const char *s)
{
    for (int i = 0; i < PROTO_JOB_STATE_COUNT; i++) {
        const char *name = proto_job_state_str((enum proto_job_state)i);

        if (strcasecmp(s, name) == 0)
            return name;
    }
    return NULL;
}

/* ---- times and sizes ----------------------------------------------------- */

const char *
cli_fmt_age(int64_t ms, int64_t now_ms, char *buf, size_t len)
{
    int64_t s;

    if (ms <= 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    s = (now_ms - ms) / 1000;
    if (s < 0)
        s = 0;
    if (s < 60)
        snprintf(buf, len, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(buf, len, "%lldm", (long long)(s / 60));
    else if (s < 86400)
        snprintf(buf, len, "%lldh%lldm", (long long)(s / 3600),
            (long long)(s % 3600 / 60));
    else
        snprintf(buf, len, "%lldd%lldh", (long long)(s / 86400),
            (long long)(s % 86400 / 3600));
    return buf;
}

const char *
cli_fmt_time(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || localtime_r(&t, &tm) == NULL) {
        snprintf(buf, len, "-");
        return buf;
    }
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

const char *
cli_fmt_mb(int64_t mb, char *buf, size_t len)
{
    if (mb < 1024)
        snprintf(buf, len, "%lldM", (long long)mb);
    else if (mb < 1024 * 1024)
        snprintf(buf, len, mb % 1024 ? "%.1fG" : "%.0fG", (double)mb / 1024);
    else
        snprintf(buf, len, "%.1fT", (double)mb / (1024.0 * 1024.0));
    return buf;
}

/* ---- lists --------------------------------------------------------------- */

char *
cli_fmt_int_list(const cJSON *arr, bool compact)
{
    struct sbuf sb;
    const cJSON *it;
    int64_t lo = 0, prev = 0;
    bool open = false;

    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
        return xstrdup("-");
    sbuf_init(&sb);
    cJSON_ArrayForEach(it, arr) {
        int64_t v = cli_jnum(it, 0);

        if (compact && open && v == prev + 1) {
            prev = v;
            continue;
        }
        if (open) {
            if (prev != lo)
                sbuf_addf(&sb, "-%lld", (long long)prev);
            sbuf_addch(&sb, ',');
        }
        sbuf_addf(&sb, "%lld", (long long)v);
        lo = prev = v;
        open = true;
    }
    if (open && prev != lo)
        sbuf_addf(&sb, "-%lld", (long long)prev);
    return sbuf_detach(&sb, NULL);
}

char *
cli_fmt_labels(const cJSON *obj)
{
    struct sbuf sb;
    const cJSON *it;

    if (!cJSON_IsObject(obj) || obj->child == NULL)
        return xstrdup("-");
    sbuf_init(&sb);
    cJSON_ArrayForEach(it, obj) {
        if (sb.len)
            sbuf_addch(&sb, ',');
        sbuf_addf(&sb, "%s=%s", it->string,
            cJSON_IsString(it) ? it->valuestring : "?");
    }
    return sbuf_detach(&sb, NULL);
}

/* Whether a shell would need the argument quoted to read it back. */
static bool
needs_quotes(const char *s)
{
    if (*s == '\0')
        return true;
    for (; *s; s++) {
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                    "0123456789_-./:=,+@%",
                *s))
            return true;
    }
    return false;
}

char *
cli_fmt_argv(const cJSON *argv)
{
    struct sbuf sb;
    const cJSON *it;

    sbuf_init(&sb);
    cJSON_ArrayForEach(it, argv) {
        const char *a = cJSON_IsString(it) ? it->valuestring : "?";

        if (sb.len)
            sbuf_addch(&sb, ' ');
        if (!needs_quotes(a)) {
            sbuf_addstr(&sb, a);
            continue;
        }
        sbuf_addch(&sb, '\'');
        for (; *a; a++) {
            if (*a == '\'')
                sbuf_addstr(&sb, "'\\''");
            else
                sbuf_addch(&sb, *a);
        }
        sbuf_addch(&sb, '\'');
    }
    return sbuf_detach(&sb, NULL);
}

void
cli_print_indented(FILE *out, const char *prefix, const char *text)
{
    while (*text) {
        size_t n = strcspn(text, "\n");

        fprintf(out, "%s%.*s\n", prefix, (int)n, text);
        text += n;
        if (*text == '\n')
            text++;
    }
}

/* ---- tables -------------------------------------------------------------- */

struct cli_table {
    size_t ncols;
    char **cells; /* nrows * ncols, row 0 the headers */
    size_t nrows;
    size_t col; /* next column of the last row */
};

/* Width on a terminal: count UTF-8 code points, not bytes ("NODES×RANKS"). */
static size_t
display_width(const char *s)
{
    size_t w = 0;

    for (; *s; s++) {
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    }
    return w;
}

struct cli_table *
cli_table_create(const char *const *headers, size_t ncols)
{
    struct cli_table *t = xcalloc(1, sizeof(*t));

    t->ncols = ncols;
    cli_table_row(t);
    for (size_t i = 0; i < ncols; i++)
        cli_table_cell(t, "%s", headers[i]);
    return t;
}

void
cli_table_destroy(struct cli_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

void
cli_table_row(struct cli_table *t)
{
    t->cells = xreallocarray(t->cells, (t->nrows + 1) * t->ncols,
        sizeof(*t->cells));
    for (size_t i = 0; i < t->ncols; i++)
        t->cells[t->nrows * t->ncols + i] = NULL;
    t->nrows++;
    t->col = 0;
}

void
cli_table_cell(struct cli_table *t, const char *fmt, ...)
{
    struct sbuf sb;
    va_list ap;
    char **cell;

    assert(t->col < t->ncols);
    sbuf_init(&sb);
    va_start(ap, fmt);
    sbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    /* A newline or tab would break the columns. */
    for (size_t i = 0; i < sb.len; i++) {
        if (sb.buf[i] == '\n' || sb.buf[i] == '\t' || sb.buf[i] == '\r')
            sb.buf[i] = ' ';
    }
    cell = &t->cells[(t->nrows - 1) * t->ncols + t->col++];
    *cell = sbuf_detach(&sb, NULL);
}

void
cli_table_print(const struct cli_table *t, FILE *out, int indent)
{
    size_t *width = xcalloc(t->ncols, sizeof(*width));
    struct sbuf line;

    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            size_t w = s ? display_width(s) : 0;

            if (w > width[c])
                width[c] = w;
        }
    }
    sbuf_init(&line);
    for (size_t r = 0; r < t->nrows; r++) {
        sbuf_reset(&line);
        sbuf_addf(&line, "%*s", indent, "");
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];

            if (s == NULL)
                s = "";
            sbuf_addstr(&line, s);
            if (c + 1 < t->ncols)
                sbuf_addf(&line, "%*s", (int)(width[c] - display_width(s) + 2),
                    "");
        }
        /* Empty trailing cells would leave trailing blanks. */
        while (line.len > 0 && line.buf[line.len - 1] == ' ')
            line.buf[--line.len] = '\0';
        fprintf(out, "%s\n", line.buf);
    }
    sbuf_release(&line);
    free(width);
}
