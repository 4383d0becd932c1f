/*
 * hc_nic.c - lockstep-check nic: network and InfiniBand port state
 *
 *   lockstep-check nic [--sysfs-root DIR] [--expect NAME]...
 *                      [--min-speed-mbps N]
 *
 * Every physical network interface (DIR/class/net/NAME with a "device":
 * loopback and virtual ones have none) and every InfiniBand port
 * (DIR/class/infiniband/DEV/ports/N, named DEV/N), scope nic:NAME. Up (or
 * ACTIVE) is PASS nic.up, with its speed (speed_mbps) and WARN nic.slow
 * under --min-speed-mbps. A port that is not up is FAIL nic.down when it
 * is expected (--expect, repeatable), SKIPPED nic.unused when other ports
 * are expected, WARN nic.down when none are. An expected port that does
 * not exist is FAIL nic.missing. No port at all: SKIPPED nic.none.
 */
#include "agent/hc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HC_NIC_EXPECT_MAX 64

struct hc_nic {
    const char *root;
    const char *expect[HC_NIC_EXPECT_MAX];
    bool found[HC_NIC_EXPECT_MAX];
    int nexpect;
    int64_t min_speed_mbps;
    int nports;
};

/* Whether name is expected; marks it found. */
static bool
hc_nic_expected(struct hc_nic *n, const char *name)
{
    for (int i = 0; i < n->nexpect; i++) {
        if (strcmp(n->expect[i], name) == 0) {
            n->found[i] = true;
            return true;
        }
    }
    return false;
}

/* One port's result. speed_mbps < 0: unknown. */
static void
hc_nic_port(struct hc_nic *n, const char *name, bool up, const char *state,
    double speed_mbps, cJSON *out)
{
    char scope[PROTO_CHECK_SCOPE_MAX];
    bool expected = hc_nic_expected(n, name);
    cJSON *r;

    n->nports++;
    snprintf(scope, sizeof(scope), "nic:%s", name);
    if (!up) {
        if (expected)
            hc_add(out, PROTO_CHECK_FAIL, "nic.down", scope,
                "%s is %s (expected up)", name, state);
        else if (n->nexpect > 0)
            hc_add(out, PROTO_CHECK_SKIPPED, "nic.unused", scope,
                "%s is %s (not expected)", name, state);
        else
            hc_add(out, PROTO_CHECK_WARN, "nic.down", scope, "%s is %s", name,
                state);
        return;
    }
    if (speed_mbps >= 0 && speed_mbps < (double)n->min_speed_mbps)
        r = hc_add(out, PROTO_CHECK_WARN, "nic.slow", scope,
            "%s is up at %.0f Mb/s (expected at least %lld)", name, speed_mbps,
            (long long)n->min_speed_mbps);
    else
        r = hc_add(out, PROTO_CHECK_PASS, "nic.up", scope, "%s is up", name);
    if (speed_mbps >= 0)
        hc_number(r, "speed_mbps", speed_mbps);
}

static void
hc_nic_netdevs(struct hc_nic *n, cJSON *out)
{
    char dir[4096], path[8192], state[64], speed[64];
    struct dirent *de;
    struct stat st;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/class/net", n->root);
    if ((d = opendir(dir)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        double mbps = -1;
        bool up;

        if (de->d_name[0] == '.' || strcmp(de->d_name, "lo") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s/device", dir, de->d_name);
        if (stat(path, &st) < 0)
            continue; /* virtual: bridges, veth, tunnels, bonds */
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (hc_read(path, "operstate", state, sizeof(state)) < 0)
            snprintf(state, sizeof(state), "unreadable");
        up = strcmp(state, "up") == 0;
        if (hc_read(path, "speed", speed, sizeof(speed)) > 0 && atof(speed) > 0)
            mbps = atof(speed);
        hc_nic_port(n, de->d_name, up, state, mbps, out);
    }
    closedir(d);
}

/* The ports of one InfiniBand device. */
static void
hc_nic_ib_dev(struct hc_nic *n, const char *dev, cJSON *out)
{
    char dir[4096], path[8192], name[512], state[64], rate[64];
    struct dirent *de;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports", n->root, dev);
    if ((d = opendir(dir)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        const char *word;
        double mbps = -1;

        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        snprintf(name, sizeof(name), "%s/%s", dev, de->d_name);
        /* "4: ACTIVE", rate "200 Gb/sec (4X HDR)" */
        if (hc_read(path, "state", state, sizeof(state)) < 0)
            snprintf(state, sizeof(state), "unreadable");
        word = strchr(state, ':') != NULL ? strchr(state, ':') + 1 : state;
        while (*word == ' ')
            word++;
        if (hc_read(path, "rate", rate, sizeof(rate)) > 0 && atof(rate) > 0)
            mbps = atof(rate) * 1000.0;
        hc_nic_port(n, name, strcmp(word, "ACTIVE") == 0, word, mbps, out);
    }
    closedir(d);
}

static void
hc_nic_ib(struct hc_nic *n, cJSON *out)
{
    char dir[4096];
    struct dirent *de;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/class/infiniband", n->root);
    if ((d = opendir(dir)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] != '.')
            hc_nic_ib_dev(n, de->d_name, out);
    }
    closedir(d);
}

int
hc_nic_run(int argc, char **argv, cJSON *out)
{
    struct hc_nic n;
    const char *v;
    bool bad = false;
    int i = 0;

    memset(&n, 0, sizeof(n));
    n.root = "/sys";
    while (i < argc && !bad) {
        if (hc_opt("nic", argc, argv, &i, "expect", &v, &bad)) {
            if (!bad && n.nexpect == HC_NIC_EXPECT_MAX) {
                fprintf(stderr, "lockstep-check nic: more than %d ports\n",
                    HC_NIC_EXPECT_MAX);
                return HC_USAGE;
            }
            if (!bad)
                n.expect[n.nexpect++] = v;
        } else if (!hc_opt("nic", argc, argv, &i, "sysfs-root", &n.root,
                       &bad) &&
                   !hc_opt_int("nic", argc, argv, &i, "min-speed-mbps", 0,
                       INT32_MAX, &n.min_speed_mbps, &bad)) {
            return hc_usage_unknown("nic", argv[i]);
        }
    }
    if (bad)
        return HC_USAGE;
    hc_nic_netdevs(&n, out);
    hc_nic_ib(&n, out);
    for (i = 0; i < n.nexpect; i++) {
        char scope[PROTO_CHECK_SCOPE_MAX];

        if (n.found[i])
            continue;
        snprintf(scope, sizeof(scope), "nic:%s", n.expect[i]);
        hc_add(out, PROTO_CHECK_FAIL, "nic.missing", scope,
            "expected port %s not found under %s/class", n.expect[i], n.root);
        n.nports++;
    }
    if (n.nports == 0)
        hc_add(out, PROTO_CHECK_SKIPPED, "nic.none", NULL,
            "no physical network or InfiniBand port under %s/class", n.root);
    return 0;
}
