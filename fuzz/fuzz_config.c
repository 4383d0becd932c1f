/*
 * fuzz_config.c - configuration files (common/config.c) and the agent's
 * settings from them (agent/agentd.c)
 *
 * The input is a configuration file. It is read against the agent's own
 * key table, then the agent's settings are taken from it as
 * lockstep-agent does at start-up (agentd_settings_load: the server URL,
 * node name, GPU list, labels, health checks...), with the keys that name
 * files to read or run pinned to harmless ones, since those are checks
 * of the file system, not parsing. The same file is read against a table
 * of every type at its extremes, each typed read must be in range, and
 * each of its lines goes through config_set_arg as a command-line
 * override would.
 *
 * Checked beyond the sanitizers: a refused file names itself in the
 * message (file:line), and a refused override says why.
 */
#include "fuzz/fuzz.h"

#include "agent/agentd.h"
#include "common/config.h"
#include "common/err.h"

static const struct config_key all_types[] = {
    { "s", CONFIG_STR, "", 0, 0, "a string" },
    { "q", CONFIG_STR, NULL, 0, 0, "a string without default" },
    { "i", CONFIG_INT, "0", INT64_MIN, INT64_MAX, "any integer" },
    { "r", CONFIG_INT, "5", 1, 10, "a small range" },
    { "b", CONFIG_BOOL, "false", 0, 0, "a boolean" },
    CONFIG_KEY_LOG_LEVEL,
    { NULL, CONFIG_STR, NULL, 0, 0, NULL },
};

static char secret_path[512];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char secret[] = "fuzz-secret-0123456789abcdef\n";

    (void)argc;
    (void)argv;
    fuzz_quiet();
    snprintf(secret_path, sizeof(secret_path), "%s",
        fuzz_write_file(fuzz_dir(), "secret", secret, sizeof(secret) - 1));
    return 0;
}

/* The agent's settings, as lockstep-agent takes them. */
static void
agent_settings(struct config *cfg)
{
    static const char *const pinned[][2] = {
        { "cluster_secret_file", NULL },
        { "supervisor", "/bin/true" },
        { "health_check_exe", "/bin/true" },
        { "health_checks_dir", "" },
    };
    struct agentd *ad = xcalloc(1, sizeof(*ad));
    struct err err = { 0 };

    for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++)
        fuzz_assert(
            config_set(cfg, pinned[i][0],
                pinned[i][1] ? pinned[i][1] : secret_path, "fuzz", &err) == 0);
    if (agentd_settings_load(ad, cfg, &err) == 0) {
        fuzz_assert(ad->node != NULL && ad->server != NULL);
        agentd_settings_release(ad);
    } else {
        fuzz_assert(err.msg[0] != '\0');
    }
    free(ad);
}

/* Every typed read of the all-types table is in range. */
static void
typed_reads(const struct config *cfg)
{
    int64_t r = config_int(cfg, "r");

    fuzz_assert(r >= 1 && r <= 10);
    (void)config_int(cfg, "i");
    (void)config_bool(cfg, "b");
    fuzz_assert(config_str(cfg, "s") != NULL);
    fuzz_assert(config_str(cfg, "q") != NULL);
}

/* Each line as a command-line override. */
static void
overrides(struct config *cfg, const char *text)
{
    const char *p = text, *nl;
    struct err err;
    char *line;

    for (; *p != '\0'; p = nl ? nl + 1 : p + strlen(p)) {
        nl = strchr(p, '\n');
        line = nl ? xstrndup(p, (size_t)(nl - p)) : xstrdup(p);
        err_clear(&err);
        if (config_set_arg(cfg, line, &err) < 0)
            fuzz_assert(err.msg[0] != '\0');
        free(line);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(fuzz_dir(), "fuzz.conf", data, size);
    char *file = xstrdup(path), *text = fuzz_cstr(data, size);
    struct config *cfg;
    struct err err = { 0 };

    cfg = config_create(agentd_config_keys);
    if (config_load_file(cfg, file, &err) < 0)
        fuzz_assert(strstr(err.msg, file) != NULL);
    agent_settings(cfg);
    config_destroy(cfg);

    cfg = config_create(all_types);
    err_clear(&err);
    if (config_load_file(cfg, file, &err) < 0)
        fuzz_assert(strstr(err.msg, file) != NULL);
    typed_reads(cfg);
    overrides(cfg, text);
    typed_reads(cfg);
    config_destroy(cfg);
    free(text);
    free(file);
    return 0;
}
