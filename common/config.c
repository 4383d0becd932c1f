/*
 * config.c - "key = value" configuration files against a table of keys
 *
 * The slurm.conf / sshd_config habit: operators edit these by hand and want
 * comments, so the syntax is line-based and every error names file:line.
 * Values are kept as text (validated when set) and converted on read.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct config_val {
    char *text;
    bool set;
};

struct config {
    const struct config_key *keys;
    size_t nkeys;
    struct config_val *vals;
};

static int
config_index(const struct config *cfg, const char *key)
{
    for (size_t i = 0; i < cfg->nkeys; i++) {
        if (strcmp(cfg->keys[i].name, key) == 0)
            return (int)i;
    }
    return -1;
}

static int
parse_int(const char *s, int64_t *out)
{
    char *end = NULL;
    long long v;

    if (*s == '\0')
        return -EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return -EINVAL;
    *out = v;
    return 0;
}

static int
parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = { "true", "yes", "on", "1" };
    static const char *const no[] = { "false", "no", "off", "0" };

    for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

static int
config_check(const struct config_key *k, const char *value, struct err *err)
{
    int64_t i;
    bool b;

    switch (k->type) {
    case CONFIG_STR:
        return 0;
    case CONFIG_INT:
        if (parse_int(value, &i) < 0)
            return err_set(err, -EINVAL, "key '%s': '%s' is not an integer",
                k->name, value);
        if (i < k->min || i > k->max)
            return err_set(err, -ERANGE,
                "key '%s': %lld is out of range (%lld..%lld)", k->name,
                (long long)i, (long long)k->min, (long long)k->max);
        return 0;
    case CONFIG_BOOL:
        if (parse_bool(value, &b) < 0)
            return err_set(err, -EINVAL,
                "key '%s': '%s' is not a boolean (true/false)", k->name, value);
        return 0;
    }
    return err_set(err, -EINVAL, "key '%s': bad type", k->name);
}

struct config *
config_create(const struct config_key *keys)
{
    struct config *cfg = xcalloc(1, sizeof(*cfg));

    cfg->keys = keys;
    while (keys[cfg->nkeys].name != NULL)
        cfg->nkeys++;
    cfg->vals = xcalloc(cfg->nkeys ? cfg->nkeys : 1, sizeof(*cfg->vals));
    for (size_t i = 0; i < cfg->nkeys; i++) {
        const char *def = keys[i].def ? keys[i].def : "";
        /* A default that fails its own check is a programming error. */
        assert(config_check(&keys[i], def, NULL) == 0);
        cfg->vals[i].text = xstrdup(def);
    }
    return cfg;
}

void
config_destroy(struct config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < cfg->nkeys; i++)
        free(cfg->vals[i].text);
    free(cfg->vals);
    free(cfg);
}

int
config_set(struct config *cfg, const char *key, const char *value,
    const char *origin, struct err *err)
{
    int idx = config_index(cfg, key);
    int rc;

    if (idx < 0)
        return err_set(err, -EINVAL, "%s: unknown key '%s'", origin, key);
    rc = config_check(&cfg->keys[idx], value, err);
    if (rc < 0)
        return err_prefix(err, "%s: ", origin);
    free(cfg->vals[idx].text);
    cfg->vals[idx].text = xstrdup(value);
    cfg->vals[idx].set = true;
    return 0;
}

static char *
trim(char *s)
{
    char *end;

    while (*s == ' ' || *s == '\t')
        s++;
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' ||
                          end[-1] == '\r'))
        *--end = '\0';
    return s;
}

/* Split "key = value # comment" in place. Returns 0, 1 for a blank or
 * comment line, or -EINVAL with err describing the problem. */
static int
split_line(char *line, char **key, char **value, struct err *err)
{
    char *eq, *v, *p;

    line = trim(line);
    if (*line == '\0' || *line == '#')
        return 1;
    eq = strchr(line, '=');
    if (eq == NULL)
        return err_set(err, -EINVAL, "expected 'key = value', got '%.60s'",
            line);
    *eq = '\0';
    *key = trim(line);
    if (**key == '\0')
        return err_set(err, -EINVAL, "missing key before '='");
    v = trim(eq + 1);
    if (*v == '"') {
        p = strchr(v + 1, '"');
        if (p == NULL)
            return err_set(err, -EINVAL, "unterminated quote in value of '%s'",
                *key);
        *p = '\0';
        p = trim(p + 1);
        if (*p != '\0' && *p != '#')
            return err_set(err, -EINVAL,
                "unexpected text after quoted value of '%s'", *key);
        *value = v + 1;
        return 0;
    }
    /* An unquoted '#' preceded by whitespace starts a comment. */
    for (p = v; *p; p++) {
        if (*p == '#' && (p == v || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            break;
        }
    }
    *value = trim(v);
    return 0;
}

int
config_load_file(struct config *cfg, const char *path, struct err *err)
{
    char origin[512];
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    int rc = 0;
    FILE *f;

    f = fopen(path, "re");
    if (f == NULL)
        return err_set(err, -errno, "cannot open config '%s': %s", path,
            strerror(errno));
    while (getline(&line, &cap, f) >= 0) {
        char *key = NULL, *value = NULL;

        lineno++;
        rc = split_line(line, &key, &value, err);
        if (rc == 1) {
            rc = 0;
            continue;
        }
        if (rc < 0) {
            err_prefix(err, "%s:%d: ", path, lineno);
            break;
        }
        snprintf(origin, sizeof(origin), "%s:%d", path, lineno);
        rc = config_set(cfg, key, value, origin, err);
        if (rc < 0)
            break;
    }
    if (rc == 0 && ferror(f))
        rc = err_set(err, -EIO, "cannot read config '%s'", path);
    free(line);
    fclose(f);
    return rc;
}

int
config_set_arg(struct config *cfg, const char *arg, struct err *err)
{
    const char *eq = strchr(arg, '=');
    char *key;
    int rc;

    if (eq == NULL || eq == arg)
        return err_set(err, -EINVAL,
            "command line: expected key=value, got '%s'", arg);
    key = xstrndup(arg, (size_t)(eq - arg));
    rc = config_set(cfg, trim(key), eq + 1, "command line", err);
    free(key);
    return rc;
}

static const struct config_val *
config_get(const struct config *cfg, const char *key, enum config_type type)
{
    int idx = config_index(cfg, key);

    assert(idx >= 0);
    assert(cfg->keys[idx].type == type);
    return &cfg->vals[idx];
}

const char *
config_str(const struct config *cfg, const char *key)
{
    return config_get(cfg, key, CONFIG_STR)->text;
}

int64_t
config_int(const struct config *cfg, const char *key)
{
    int64_t v = 0;

    parse_int(config_get(cfg, key, CONFIG_INT)->text, &v);
    return v;
}

bool
config_bool(const struct config *cfg, const char *key)
{
    bool b = false;

    parse_bool(config_get(cfg, key, CONFIG_BOOL)->text, &b);
    return b;
}

bool
config_is_set(const struct config *cfg, const char *key)
{
    int idx = config_index(cfg, key);

    assert(idx >= 0);
    return cfg->vals[idx].set;
}

void
config_dump(const struct config *cfg)
{
    for (size_t i = 0; i < cfg->nkeys; i++)
        printf("%s = %s\n", cfg->keys[i].name, cfg->vals[i].text);
}

int
config_each_item(const char *list,
    int (*fn)(const char *item, size_t n, void *arg), void *arg)
{
    const char *p = list;
    int rc, n_items = 0;

    while (*p) {
        size_t n = strcspn(p, ",");
        const char *item = p;

        p += n;
        if (*p == ',')
            p++;
        while (n > 0 && (*item == ' ' || *item == '\t')) {
            item++;
            n--;
        }
        while (n > 0 && (item[n - 1] == ' ' || item[n - 1] == '\t'))
            n--;
        if (n == 0)
            continue;
        n_items++;
        if ((rc = fn(item, n, arg)) != 0)
            return rc;
    }
    return n_items == 0 ? -ENOENT : 0;
}
