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
#include "common/xalloc.h"

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
    { "kill_grace_ms", CONFIG_INT, "10000", 0, 3600000,
        "SIGTERM to SIGKILL grace when tearing ranks down" },
    { "run_as_submitter", CONFIG_BOOL, "true", 0, 0,
        "when root, start ranks as the submitting user" },
    { "supervisor", CONFIG_STR, "", 0, 0,
        "lockstep-supervisor executable (default: next to lockstep-agent)" },
    { "pmix", CONFIG_BOOL, "true", 0, 0,
        "host a PMIx server, so MPI programs start without mpirun" },
    CONFIG_KEY_LOG_LEVEL,
    { NULL, CONFIG_STR, NULL, 0, 0, NULL },
};

/* lockstep-supervisor next to our own executable: the two are built and
 * installed together. */
static char *
agentd_default_supervisor(void)
{
    char exe[PATH_MAX + 1], *slash;

    if (procfs_exe(0, exe, sizeof(exe)) <= 0)
        return xstrdup(SUPFILE_EXE);
    slash = strrchr(exe, '/');
    if (slash == NULL)
        return xstrdup(SUPFILE_EXE);
    *slash = '\0';
    return xasprintf("%s/%s", exe, SUPFILE_EXE);
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
    ad->run_as_submitter = config_bool(cfg, "run_as_submitter");
    ad->pmix_on = config_bool(cfg, "pmix");
    s = config_str(cfg, "supervisor");
    ad->supervisor = s[0] != '\0' ? xstrdup(s) : agentd_default_supervisor();
    if (ad->supervisor[0] != '/') {
        rc = err_set(err, -EINVAL,
            "supervisor '%s': must be an absolute "
            "path",
            ad->supervisor);
        goto fail;
    }
    if (access(ad->supervisor, X_OK) < 0) {
        rc = -errno;
        err_set(err, rc, "supervisor '%s': %s", ad->supervisor, strerror(-rc));
        goto fail;
    }

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
    proto_resources_release(&ad->res);
    if (ad->auth_header != NULL)
        explicit_bzero(ad->auth_header, strlen(ad->auth_header));
    free(ad->auth_header);
    ad->server = ad->node = ad->addr = ad->state_dir = ad->log_dir = NULL;
    ad->supervisor = NULL;
    ad->auth_header = NULL;
    memset(&ad->res, 0, sizeof(ad->res));
}
