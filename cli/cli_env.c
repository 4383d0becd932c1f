/*
 * cli_env.c - the submitter's environment a job takes along (cli_env.h)
 *
 * The list of variables that never travel is part of the interface
 * (docs/api.md, "The job's environment"): keep the two in step.
 */
#include "cli/cli_env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/xalloc.h"

/* Variables that never travel with a job. A name longer than one
 * character that ends in '_' is a prefix. */
static const char *const cli_env_stay[] = {
    /* credentials, and the agents that hold them */
    "LOCKSTEP_",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "KRB5CCNAME",
    /* the terminal, the desktop and the login session */
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "TERM",
    "TERMCAP",
    "COLORTERM",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "COLUMNS",
    "LINES",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "WINDOW",
    "SSH_TTY",
    "SSH_CONNECTION",
    "SSH_CLIENT",
    "GPG_TTY",
    "DBUS_SESSION_BUS_ADDRESS",
    "SESSION_MANAGER",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_",
    "XDG_SEAT",
    "XDG_VTNR",
    /* the shell's bookkeeping */
    "SHLVL",
    "PWD",
    "OLDPWD",
    "_",
    /* a systemd service's own (the agent drops them too) */
    "NOTIFY_SOCKET",
    "JOURNAL_STREAM",
    "INVOCATION_ID",
    "LISTEN_",
    "WATCHDOG_",
    /* torchrun's per-worker variables (what lockstep sets for every rank
     * is proto_rank_env_key's), and the PMIx server's address of an
     * mpirun the submitter may be inside of (the agent's server gives
     * the ranks their own) */
    "TORCHELASTIC_",
    "PMIX_",
    NULL,
};

bool
cli_env_stays(const char *key)
{
    if (proto_rank_env_key(key))
        return true;
    for (const char *const *s = cli_env_stay; *s != NULL; s++) {
        size_t n = strlen(*s);

        if (n > 1 && (*s)[n - 1] == '_' ? strncmp(key, *s, n) == 0
                                        : strcmp(key, *s) == 0)
            return true;
    }
    return false;
}

static ssize_t
cli_env_find(const struct proto_job_spec *spec, const char *key, size_t len)
{
    for (size_t i = 0; i < spec->nenv; i++) {
        if (strncmp(spec->env[i].key, key, len) == 0 &&
            spec->env[i].key[len] == '\0')
            return (ssize_t)i;
    }
    return -1;
}

/* Add key (klen bytes of it) = value (vlen bytes) unless spec->env has
 * the key. */
static void
cli_env_add(struct proto_job_spec *spec, const char *key, size_t klen,
    const char *value, size_t vlen)
{
    if (cli_env_find(spec, key, klen) >= 0)
        return;
    spec->env = xreallocarray(spec->env, spec->nenv + 1, sizeof(*spec->env));
    spec->env[spec->nenv].key = xstrndup(key, klen);
    spec->env[spec->nenv].value = xstrndup(value, vlen);
    spec->nenv++;
}

/* One entry of a --export list, len bytes at item; *all is set by ALL.
 * With spec NULL only checks. */
static int
cli_env_item(const char *item, size_t len, struct proto_job_spec *spec,
    char *const *env, bool *all, struct err *err)
{
    const char *eq = memchr(item, '=', len);
    size_t klen = eq != NULL ? (size_t)(eq - item) : len;
    char *key = xstrndup(item, klen);
    int rc = 0;

    if (eq == NULL && strcmp(key, "ALL") == 0)
        *all = true;
    else if (eq == NULL && strcmp(key, "NONE") == 0)
        rc = err_set(err, -EINVAL,
            "invalid --export: NONE cannot be combined with other entries");
    else if (!proto_valid_env_key(key))
        rc = err_set(err, -EINVAL,
            "invalid --export entry '%.*s': expected ALL, NONE, NAME or "
            "NAME=VALUE, separated by commas",
            (int)(len > 60 ? 60 : len), item);
    else if (eq == NULL && cli_env_stays(key))
        rc = err_set(err, -EINVAL,
            "--export: %.60s never travels with a job (docs/api.md); set it "
            "with --env %.60s=VALUE if the ranks really need it",
            key, key);
    else if (spec != NULL && eq != NULL)
        cli_env_add(spec, key, klen, eq + 1, len - klen - 1);
    else if (spec != NULL) {
        const char *v = NULL;

        for (size_t i = 0; env != NULL && env[i] != NULL && v == NULL; i++) {
            if (strncmp(env[i], key, klen) == 0 && env[i][klen] == '=')
                v = env[i] + klen + 1;
        }
        if (v == NULL)
            rc = err_set(err, -EINVAL,
                "--export: %.60s is not set in this environment", key);
        else
            cli_env_add(spec, key, klen, v, strlen(v));
    }
    free(key);
    return rc;
}

/* Walk a --export list (not NONE); with spec NULL only check it. */
static int
cli_env_list(const char *how, struct proto_job_spec *spec, char *const *env,
    bool *all, struct err *err)
{
    const char *p = how;
    int rc;

    for (;;) {
        size_t len = strcspn(p, ",");

        if (len == 0)
            return err_set(err, -EINVAL,
                "invalid --export '%.60s': an empty entry", how);
        if ((rc = cli_env_item(p, len, spec, env, all, err)) < 0)
            return rc;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

int
cli_env_export_check(const char *how, struct err *err)
{
    bool all = false;

    if (strcmp(how, "NONE") == 0)
        return 0;
    return cli_env_list(how, NULL, NULL, &all, err);
}

/* Every variable of env that may travel. */
static void
cli_env_all(struct proto_job_spec *spec, char *const *env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        const char *eq = strchr(env[i], '=');
        char *key;

        if (eq == NULL)
            continue;
        key = xstrndup(env[i], (size_t)(eq - env[i]));
        /* Exported shell functions (BASH_FUNC_f%%) have no variable
         * name: the API cannot carry them. */
        if (proto_valid_env_key(key) && !cli_env_stays(key))
            cli_env_add(spec, key, strlen(key), eq + 1, strlen(eq + 1));
        free(key);
    }
}

/* The limits of the job spec (docs/api.md), said so that the user knows
 * what to do. */
static int
cli_env_limits(const struct proto_job_spec *spec, struct err *err)
{
    if (spec->nenv > PROTO_ENV_MAX)
        return err_set(err, -E2BIG,
            "the job would take %zu environment variables, more than the %d "
            "a job may have: choose them with --export=VAR,... or send none "
            "with --export=NONE",
            spec->nenv, PROTO_ENV_MAX);
    for (size_t i = 0; i < spec->nenv; i++) {
        size_t n = strlen(spec->env[i].value);

        if (n > PROTO_ENV_VALUE_MAX)
            return err_set(err, -E2BIG,
                "%.40s is %zu bytes, over the %d a variable may hold: "
                "leave it out (env -u %.40s lockstep submit ...) or use "
                "--export",
                spec->env[i].key, n, PROTO_ENV_VALUE_MAX, spec->env[i].key);
    }
    return 0;
}

int
cli_env_export(struct proto_job_spec *spec, const char *how, char *const *env,
    struct err *err)
{
    bool all = how == NULL;
    int rc;

    if (how != NULL && strcmp(how, "NONE") != 0 &&
        (rc = cli_env_list(how, spec, env, &all, err)) < 0)
        return rc;
    if (all)
        cli_env_all(spec, env);
    return cli_env_limits(spec, err);
}
