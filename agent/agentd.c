/*
 * agentd.c - lockstep-agent's configuration keys and settled settings
 *
 * The table below is docs/config.md's lockstep-agent section; every check
 * a value needs happens here, before the loop starts, so `--check-config`
 * catches everything a start would trip over (including an unreadable
 * cluster secret) and the running agent never meets a bad setting.
 */
#include "agent/agentd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/procfs.h"
#include "agent/resources.h"
#include "agent/supfile.h"
#include "common/cred.h"
#include "common/curlx.h"
#include "common/witness.h"
#include "common/xalloc.h"
#include "version.h"

const struct config_key agentd_config_keys[] = {
    { "server", CONFIG_STR, "http://127.0.0.1:7300", 0, 0,
        "scheduler URL, or an absolute Unix socket path" },
    { "node_name", CONFIG_STR, "", 0, 0,
        "the node's name (default: host name)" },
    { "addr", CONFIG_STR, "", 0, 0,
        "address other nodes reach this one at (default: host name)" },
    { "cpus", CONFIG_INT, "0", 0, 1 << 20, "CPUs offered (0: detect)" },
    { "memory_mb", CONFIG_INT, "0", 0, (int64_t)1 << 40,
        "memory offered in MiB (0: detect)" },
    { "gpus", CONFIG_STR, "auto", 0, 0,
        "auto, none, or an id list like 0-7 or 0,2,4" },
    { "labels", CONFIG_STR, "", 0, 0, "key=value pairs separated by commas" },
    { "state_dir", CONFIG_STR, "/var/lib/lockstep-agent", 0, 0, "agent state" },
    { "log_dir", CONFIG_STR, "", 0, 0,
        "rank output (default: state_dir/logs)" },
    CONFIG_KEY_CLUSTER_SECRET_FILE,
    { "witness_port", CONFIG_INT, "7471", 0, 65535,
        "UDP port answering the witness queries of other agents (0: any "
        "free port)" },
    { "kill_grace_ms", CONFIG_INT, "10000", 0, 3600000,
        "SIGTERM to SIGKILL grace when tearing ranks down" },
    { "run_as_submitter", CONFIG_BOOL, "true", 0, 0,
        "when root, start ranks as the submitting user" },
    { "supervisor", CONFIG_STR, "", 0, 0,
        "lockstep-supervisor executable (default: next to lockstep-agent)" },
    { "pmix", CONFIG_BOOL, "true", 0, 0,
        "host a PMIx server, so MPI programs start without mpirun" },
    { "health_checks", CONFIG_STR, "disk,gpu,kmsg,memory,nic,pcie", 0, 0,
        "the built-in health checks to run, a comma list (\"\": none)" },
    { "health_checks_dir", CONFIG_STR, "", 0, 0,
        "site health checks: every executable file in it (\"\": none)" },
    { "health_interval_ms", CONFIG_INT, "60000", 100, 86400000,
        "time from the end of a check's run to its next" },
    { "health_timeout_ms", CONFIG_INT, "30000", 100, 3600000,
        "a check's deadline: then SIGTERM to its process group" },
    { "health_kill_grace_ms", CONFIG_INT, "2000", 0, 600000,
        "SIGTERM to SIGKILL grace for a check past its deadline" },
    { "health_mounts", CONFIG_STR, "", 0, 0,
        "disk check: mount points, a comma list (default: /, state_dir and "
        "log_dir)" },
    { "health_nics", CONFIG_STR, "", 0, 0,
        "nic check: ports expected up, a comma list (eth0,mlx5_0/1)" },
    { "health_check_exe", CONFIG_STR, "", 0, 0,
        "lockstep-check executable (default: next to lockstep-agent)" },
    { "nvidia_smi", CONFIG_STR, "nvidia-smi", 0, 0,
        "gpu check: the nvidia-smi to run (a name is looked up in PATH)" },
    { "kmsg_path", CONFIG_STR, "/dev/kmsg", 0, 0,
        "kmsg check: the kernel log, or a file in its format (\"\": off)" },
    { "kmsg_allowlist", CONFIG_STR, LOCKSTEP_DATADIR "/kmsg-allowlist.txt", 0,
        0,
        "kmsg check: kernel log templates known to be harmless (the file "
        "installed with lockstep; \"\": none)" },
    { "kmsg_baseline", CONFIG_STR, "", 0, 0,
        "kmsg check: this kind of node's known-good templates, learned with "
        "lockstep-check kmsg --learn (\"\": none)" },
    { "sysfs_root", CONFIG_STR, "/sys", 0, 0,
        "nic and pcie checks: where sysfs is" },
    CONFIG_KEY_LOG_LEVEL,
    { NULL, CONFIG_STR, NULL, 0, 0, NULL },
};

/* exe (lockstep-supervisor, lockstep-check) next to our own executable:
 * they are built and installed together. */
static char *
agentd_default_exe(const char *name)
{
    char exe[PATH_MAX + 1], *slash;

    if (procfs_exe(0, exe, sizeof(exe)) <= 0)
        return xstrdup(name);
    slash = strrchr(exe, '/');
    if (slash == NULL)
        return xstrdup(name);
    *slash = '\0';
    return xasprintf("%s/%s", exe, name);
}

static char *
agentd_hostname(void)
{
    char buf[HOST_NAME_MAX + 1];

    if (gethostname(buf, sizeof(buf)) < 0)
        return xstrdup("");
    buf[sizeof(buf) - 1] = '\0';
    return xstrdup(buf);
}

/* An executable the agent starts: absolute, and executable. */
static int
agentd_exe_check(const char *key, const char *path, struct err *err)
{
    if (path[0] != '/')
        return err_set(err, -EINVAL, "%s '%s': must be an absolute path", key,
            path);
    if (access(path, X_OK) < 0)
        return err_set(err, -errno, "%s '%s': %s", key, path, strerror(errno));
    return 0;
}

/* The health checks' settings (health.h). */
static int
agentd_health_load(struct agentd *ad, const struct config *cfg, struct err *err)
{
    static const char *const builtins[] = { "disk", "gpu", "kmsg", "memory",
        "nic", "pcie", NULL };
    const char *s = config_str(cfg, "health_check_exe");
    char *copy, *tok, *save = NULL;
    int rc = 0;
    size_t i;

    ad->health_check_exe = s[0] != '\0' ? xstrdup(s)
                                        : agentd_default_exe("lockstep-check");
    ad->health_checks = xstrdup(config_str(cfg, "health_checks"));
    ad->health_checks_dir = xstrdup(config_str(cfg, "health_checks_dir"));
    ad->health_mounts = xstrdup(config_str(cfg, "health_mounts"));
    ad->health_nics = xstrdup(config_str(cfg, "health_nics"));
    ad->nvidia_smi = xstrdup(config_str(cfg, "nvidia_smi"));
    ad->kmsg_path = xstrdup(config_str(cfg, "kmsg_path"));
    ad->kmsg_allowlist = xstrdup(config_str(cfg, "kmsg_allowlist"));
    ad->kmsg_allowlist_default = !config_is_set(cfg, "kmsg_allowlist");
    ad->kmsg_baseline = xstrdup(config_str(cfg, "kmsg_baseline"));
    ad->sysfs_root = xstrdup(config_str(cfg, "sysfs_root"));
    ad->health_interval_ms = config_int(cfg, "health_interval_ms");
    ad->health_timeout_ms = config_int(cfg, "health_timeout_ms");
    ad->health_kill_grace_ms = config_int(cfg, "health_kill_grace_ms");
    copy = xstrdup(ad->health_checks);
    for (tok = strtok_r(copy, ", ", &save); tok != NULL && rc == 0;
         tok = strtok_r(NULL, ", ", &save)) {
        for (i = 0; builtins[i] != NULL && strcmp(builtins[i], tok) != 0; i++)
            ;
        if (builtins[i] == NULL)
            rc = err_set(err, -EINVAL,
                "health_checks: unknown check '%s' (disk, gpu, kmsg, memory, "
                "nic, pcie)",
                tok);
    }
    free(copy);
    if (rc == 0 && ad->health_checks[strspn(ad->health_checks, ", ")] != '\0')
        rc = agentd_exe_check("health_check_exe", ad->health_check_exe, err);
    if (rc == 0 && ad->health_checks_dir[0] != '\0' &&
        access(ad->health_checks_dir, R_OK | X_OK) < 0)
        rc = err_set(err, -errno, "health_checks_dir '%s': %s",
            ad->health_checks_dir, strerror(errno));
    if (rc == 0 && ad->sysfs_root[0] != '/')
        rc = err_set(err, -EINVAL, "sysfs_root '%s': must be an absolute path",
            ad->sysfs_root);
    if (rc == 0 && ad->nvidia_smi[0] == '\0')
        rc = err_set(err, -EINVAL, "nvidia_smi: must not be empty");
    return rc;
}

int
agentd_settings_load(struct agentd *ad, const struct config *cfg,
    struct err *err)
{
    char mac[CRED_HEX_LEN + 1];
    const char *s;
    char *secret = NULL;
    size_t secret_len = 0;
    int rc;

    ad->server = xstrdup(config_str(cfg, "server"));
    if ((rc = curlx_check_server(ad->server, err)) < 0)
        goto fail;

    s = config_str(cfg, "node_name");
    ad->node = s[0] != '\0' ? xstrdup(s) : agentd_hostname();
    if (!proto_valid_name(ad->node, PROTO_NODE_NAME_MAX)) {
        rc = err_set(err, -EINVAL,
            "node_name '%s': must be 1 to %d of "
            "[A-Za-z0-9._-]%s",
            ad->node, PROTO_NODE_NAME_MAX,
            s[0] == '\0' ? " (it defaults to the host name: set it)" : "");
        goto fail;
    }
    s = config_str(cfg, "addr");
    ad->addr = s[0] != '\0' ? xstrdup(s) : agentd_hostname();
    if (ad->addr[0] == '\0' || strlen(ad->addr) > 255) {
        rc = err_set(err, -EINVAL, "addr '%s': must be 1 to 255 bytes",
            ad->addr);
        goto fail;
    }

    ad->state_dir = xstrdup(config_str(cfg, "state_dir"));
    if (ad->state_dir[0] == '\0') {
        rc = err_set(err, -EINVAL, "state_dir: must not be empty");
        goto fail;
    }
    s = config_str(cfg, "log_dir");
    ad->log_dir = s[0] != '\0' ? xstrdup(s)
                               : xasprintf("%s/logs", ad->state_dir);
    ad->kill_grace_ms = config_int(cfg, "kill_grace_ms");
    ad->witness_port = (int)config_int(cfg, "witness_port");
    ad->run_as_submitter = config_bool(cfg, "run_as_submitter");
    ad->pmix_on = config_bool(cfg, "pmix");
    s = config_str(cfg, "supervisor");
    ad->supervisor = s[0] != '\0' ? xstrdup(s)
                                  : agentd_default_exe(SUPFILE_EXE);
    if ((rc = agentd_exe_check("supervisor", ad->supervisor, err)) < 0 ||
        (rc = agentd_health_load(ad, cfg, err)) < 0)
        goto fail;

    ad->res.cpus = (int)config_int(cfg, "cpus");
    if (ad->res.cpus == 0)
        ad->res.cpus = resources_detect_cpus();
    ad->res.memory_mb = config_int(cfg, "memory_mb");
    if (ad->res.memory_mb == 0)
        ad->res.memory_mb = resources_detect_memory_mb("/proc/meminfo");
    if ((rc = resources_gpus_parse(config_str(cfg, "gpus"), "/dev",
             &ad->res.gpus, &ad->res.ngpus, err)) < 0 ||
        (rc = resources_labels_parse(config_str(cfg, "labels"), &ad->res.labels,
             &ad->res.nlabels, err)) < 0)
        goto fail;

    rc = cred_read_secret(config_str(cfg, "cluster_secret_file"), &secret,
        &secret_len, err);
    if (rc < 0)
        goto fail;
    cred_agent_mac(secret, secret_len, ad->node, mac);
    witness_key(secret, secret_len, ad->witness_key);
    explicit_bzero(secret, secret_len);
    free(secret);
    ad->auth_header = xasprintf("Authorization: Agent %s:%s", ad->node, mac);
    explicit_bzero(mac, sizeof(mac));
    return 0;

fail:
    agentd_settings_release(ad);
    return rc;
}

void
agentd_settings_release(struct agentd *ad)
{
    free(ad->server);
    free(ad->node);
    free(ad->addr);
    free(ad->state_dir);
    free(ad->log_dir);
    free(ad->supervisor);
    free(ad->health_check_exe);
    free(ad->health_checks);
    free(ad->health_checks_dir);
    free(ad->health_mounts);
    free(ad->health_nics);
    free(ad->nvidia_smi);
    free(ad->kmsg_path);
    free(ad->kmsg_allowlist);
    free(ad->kmsg_baseline);
    free(ad->sysfs_root);
    ad->health_check_exe = ad->health_checks = ad->health_checks_dir = NULL;
    ad->health_mounts = ad->health_nics = ad->nvidia_smi = NULL;
    ad->kmsg_path = ad->sysfs_root = NULL;
    ad->kmsg_allowlist = ad->kmsg_baseline = NULL;
    proto_resources_release(&ad->res);
    if (ad->auth_header != NULL)
        explicit_bzero(ad->auth_header, strlen(ad->auth_header));
    free(ad->auth_header);
    ad->server = ad->node = ad->addr = ad->state_dir = ad->log_dir = NULL;
    ad->supervisor = NULL;
    ad->auth_header = NULL;
    memset(&ad->res, 0, sizeof(ad->res));
}
