/*
 * config.h - "key = value" configuration files with a table of known keys
 *
 * Files hold one `key = value` per line; `#` starts a comment (at line start
 * or after whitespace); blank lines are ignored; values may be quoted with
 * double quotes to keep leading/trailing spaces or a '#'. Unknown keys,
 * malformed lines and values of the wrong type are errors naming
 * file:line. Command-line overrides (`-o key=value`) go through
 * config_set() with origin "command line". A key set twice keeps the last
 * value.
 */
#ifndef COMMON_CONFIG_H
#define COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum config_type {
    CONFIG_STR,
    CONFIG_INT,  /* decimal integer within [min, max] */
    CONFIG_BOOL, /* true/false/yes/no/on/off/1/0 */
};

struct config_key {
    const char *name;
    enum config_type type;
    const char *def; /* default as text; NULL means "" for strings */
    int64_t min;     /* CONFIG_INT only */
    int64_t max;
    const char *help; /* one line, for --help and docs */
};

/* Keys both daemons have, alike: where the cluster secret is, and how
 * much to log. */
#define CONFIG_KEY_CLUSTER_SECRET_FILE                                         \
    {                                                                          \
        "cluster_secret_file", CONFIG_STR, "/etc/lockstep/cluster.secret", 0,  \
            0, "shared secret agents authenticate with"                        \
    }
#define CONFIG_KEY_LOG_LEVEL                                                   \
    {                                                                          \
        "log_level", CONFIG_STR, "info", 0, 0,                                 \
            "error, warn, notice, info, debug"                                 \
    }

struct config;

/* keys is borrowed and must outlive the config (a static table). */
struct config *config_create(const struct config_key *keys);
void config_destroy(struct config *cfg);

/* Read a file. Errors: -ENOENT etc. ("cannot open '%s': ..."), -EINVAL
 * ("%s:%d: unknown key 'foo'"). On error the config keeps what earlier
 * lines set. */
int config_load_file(struct config *cfg, const char *path, struct err *err);
/* Parse "key=value" (a command-line override). */
int config_set_arg(struct config *cfg, const char *arg, struct err *err);
int config_set(struct config *cfg, const char *key, const char *value,
    const char *origin, struct err *err);

/* Typed reads; the key must be in the table (asserted). Borrowed strings
 * are valid until the config is destroyed or the key set again. */
const char *config_str(const struct config *cfg, const char *key);
int64_t config_int(const struct config *cfg, const char *key);
bool config_bool(const struct config *cfg, const char *key);
/* Whether the key was set by a file or override (not a default). */
bool config_is_set(const struct config *cfg, const char *key);

/* Print every key with its value ("key = value") to stdout. */
void config_dump(const struct config *cfg);

/* Call fn(item, length, arg) for each item of a comma-separated list
 * (blanks around an item trimmed, empty items skipped); stops at fn's
 * first non-zero return and returns it. -ENOENT when the list holds no
 * item, else 0. A list of servers (LOCKSTEP_SERVER, the agent's server)
 * is read with it by the CLI and by curlx. */
int config_each_item(const char *list,
    int (*fn)(const char *item, size_t n, void *arg), void *arg);

#endif
