/*
 * agentd.c - lockstep-agent's configuration keys and settled settings
 *
 * The table below is docs/config.md's lockstep-agent section; every check
 * a value needs happens here, before the loop starts, so `--check-config`
 * catches everything a start would trip over (including an unreadable
 * node key or cluster secret) and the running agent never meets a bad
 * setting.
 */
#include "agent/agentd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "agent/procfs.h"
#include "agent/resources.h"
#include "agent/supfile.h"
#include "common/cred.h"
#include "common/curlx.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "version.h"

const struct config_key agentd_config_keys[] = {
    { "server", CONFIG_STR, "https://127.0.0.1:7300", 0, 0,
        "scheduler URL (https://, or http:// to a scheduler with tls = "
        "off), or an absolute Unix socket path" },
    { "server_ca", CONFIG_STR, "", 0, 0,
        "the CA certificate (PEM) an https:// server's certificate must "
        "chain to: the scheduler's tls_ca (\"\": the system's trust "
        "store)" },
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
    { "node_key_file", CONFIG_STR, "", 0, 0,
        "this node's key (lockstepd --derive-node-key); when set, the "
        "cluster secret is not read" },
    CONFIG_KEY_CLUSTER_SECRET_FILE,
    { "witness_port", CONFIG_INT, "7471", 0, 65535,
        "UDP port answering the witness queries of other agents (0: any "
        "free port)" },
    { "kill_grace_ms", CONFIG_INT, "10000", 0, 3600000,
        "SIGTERM to SIGKILL grace when tearing ranks down" },
    { "orphan_grace_ms", CONFIG_INT, "2500", 0, 600000,
        "how long ranks outlive a dead agent that no agent takes over; "
        "then they are killed and the scheduler told (0: the lease alone)" },
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

/* server_ca: a readable file, absolute (the agent runs from /). */
static int
agentd_server_ca(struct agentd *ad, const char *path, struct err *err)
{
    if (path[0] == '\0')
        return 0;
    if (path[0] != '/')
        return err_set(err, -EINVAL, "server_ca '%s': must be an absolute path",
            path);
    if (access(path, R_OK) < 0)
        return err_set(err, -errno, "server_ca '%s': cannot read it: %s", path,
            strerror(errno));
    ad->server_ca = xstrdup(path);
    return 0;
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

/* The identity of path's file now (-errno when it cannot be stat'ed). */
static int
agentd_filestamp(const char *path, struct agentd_filestamp *st)
{
    struct stat sb;

    if (stat(path, &sb) < 0)
        return -errno;
    st->ino = (long long)sb.st_ino;
    st->size = (long long)sb.st_size;
    st->mtime_ns = (long long)sb.st_mtim.tv_sec * 1000000000LL +
                   sb.st_mtim.tv_nsec;
    return 0;
}

/* Read ad's key file into kf (and its stamp, taken before the read, so a
 * change during it is seen next time): the node key file, which must be
 * this node's, or the cluster secret, from which this node's key file is
 * derived and which is then wiped. */
static int
agentd_key_read(const struct agentd *ad, struct cred_node_keyfile *kf,
    struct agentd_filestamp *stamp, struct err *err)
{
    char *secret = NULL;
    size_t secret_len = 0;
    int rc;

    if ((rc = agentd_filestamp(ad->key_file, stamp)) < 0)
        memset(stamp, 0, sizeof(*stamp));
    if (!ad->key_from_secret) {
        if ((rc = cred_node_keyfile_read(ad->key_file, kf, err)) < 0)
            return rc;
        if (strcmp(kf->node, ad->node) != 0) {
            rc = err_set(err, -EINVAL,
                "node key file '%s' is the key of node '%s', not of '%s' "
                "(this agent's node_name)",
                ad->key_file, kf->node, ad->node);
            explicit_bzero(kf, sizeof(*kf));
        }
        return rc;
    }
    rc = cred_read_secret(ad->key_file, &secret, &secret_len, err);
    if (rc < 0)
        return rc;
    cred_node_keyfile_derive(secret, secret_len, NULL, 0, ad->node, kf);
    explicit_bzero(secret, secret_len);
    free(secret);
    return 0;
}

int
agentd_key_refresh(struct agentd *ad, struct err *err)
{
    struct agentd_filestamp now, st;
    struct cred_node_keyfile kf;
    bool changed;
    int rc;

    if (agentd_filestamp(ad->key_file, &now) == 0 &&
        memcmp(&now, &ad->key_stamp, sizeof(now)) == 0)
        return 0;
    if ((rc = agentd_key_read(ad, &kf, &st, err)) < 0)
        return rc;
    changed = CRYPTO_memcmp(kf.key, ad->key.key, sizeof(kf.key)) != 0 ||
              strcmp(kf.witness_key, ad->key.witness_key) != 0 ||
              strcmp(kf.witness_prev, ad->key.witness_prev) != 0;
    ad->key = kf;
    ad->key_stamp = st;
    explicit_bzero(&kf, sizeof(kf));
    return changed ? 1 : 0;
}

char *
agentd_sign(const char *method, const char *path, const char *body, size_t len,
    void *arg)
{
    const struct agentd *ad = arg;

    return cred_agent_sign(ad->key.key, ad->node, method, path, body, len,
        timeid_now_ms());
}

int
agentd_settings_load(struct agentd *ad, const struct config *cfg,
    struct err *err)
{
    const char *s;
    int rc;

    ad->server = xstrdup(config_str(cfg, "server"));
    if ((rc = curlx_check_server(ad->server, err)) < 0)
        goto fail;
    if ((rc = agentd_server_ca(ad, config_str(cfg, "server_ca"), err)) < 0)
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
    ad->orphan_grace_ms = config_int(cfg, "orphan_grace_ms");
    ad->lock_fd = -1; /* main takes it (agentd_lock) */
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

    s = config_str(cfg, "node_key_file");
    ad->key_from_secret = s[0] == '\0';
    ad->key_file = xstrdup(
        ad->key_from_secret ? config_str(cfg, "cluster_secret_file") : s);
    if ((rc = agentd_key_read(ad, &ad->key, &ad->key_stamp, err)) < 0)
        goto fail;
    return 0;

fail:
    agentd_settings_release(ad);
    return rc;
}

void
agentd_settings_release(struct agentd *ad)
{
    free(ad->server);
    free(ad->server_ca);
    ad->server_ca = NULL;
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
    explicit_bzero(&ad->key, sizeof(ad->key));
    free(ad->key_file);
    ad->key_file = NULL;
    ad->server = ad->node = ad->addr = ad->state_dir = ad->log_dir = NULL;
    ad->supervisor = NULL;
    memset(&ad->res, 0, sizeof(ad->res));
}
