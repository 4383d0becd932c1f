/*
 * hc_pcie.c - lockstep-check pcie: the PCIe links of the GPUs
 *
 *   lockstep-check pcie [--sysfs-root DIR] [--expect N]
 *
 * Every NVIDIA display controller (DIR/bus/pci/devices/ADDR with vendor
 * 0x10de and class 0x03xxxx), scope pci:ADDR. A link narrower than the
 * device's maximum (current_link_width < max_link_width) is FAIL
 * pcie.width_degraded: lanes do not come back by themselves (reseat,
 * riser, cable). A slower link speed alone is not a finding: GPUs lower it
 * when idle to save power, so it is reported in the figures only
 * (speed_gts, max_speed_gts). Otherwise PASS pcie.ok; a device whose link
 * files cannot be read is UNKNOWN pcie.unreadable. Fewer devices than
 * --expect (the node's configured GPU count) but some is FAIL
 * pcie.gpu_missing; none at all is SKIPPED pcie.no_gpus (not an NVIDIA
 * node, or a fake one: the gpu check counts GPUs through the driver).
 */
#include "agent/hc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the device in dir is an NVIDIA display controller. */
static bool
hc_pcie_is_gpu(const char *dir)
{
    char vendor[32], class[32];

    if (hc_read(dir, "vendor", vendor, sizeof(vendor)) < 0 ||
        hc_read(dir, "class", class, sizeof(class)) < 0)
        return false;
    return strcasecmp(vendor, "0x10de") == 0 && strncmp(class, "0x03", 4) == 0;
}

static void
hc_pcie_dev(const char *dir, const char *addr, cJSON *out)
{
    char scope[PROTO_CHECK_SCOPE_MAX], cw[32], mw[32], cs[64], ms[64];
    long cur_w, max_w;
    cJSON *r;

    snprintf(scope, sizeof(scope), "pci:%.200s", addr);
    if (hc_read(dir, "current_link_width", cw, sizeof(cw)) < 0 ||
        hc_read(dir, "max_link_width", mw, sizeof(mw)) < 0 ||
        (cur_w = strtol(cw, NULL, 10)) <= 0 ||
        (max_w = strtol(mw, NULL, 10)) <= 0) {
        hc_add(out, PROTO_CHECK_UNKNOWN, "pcie.unreadable", scope,
            "%s: no link width in %s", addr, dir);
        return;
    }
    if (hc_read(dir, "current_link_speed", cs, sizeof(cs)) < 0)
        snprintf(cs, sizeof(cs), "unknown");
    if (hc_read(dir, "max_link_speed", ms, sizeof(ms)) < 0)
        snprintf(ms, sizeof(ms), "unknown");
    if (cur_w < max_w)
        r = hc_add(out, PROTO_CHECK_FAIL, "pcie.width_degraded", scope,
            "%s: link x%ld of x%ld (speed %s of %s)", addr, cur_w, max_w, cs,
            ms);
    else
        r = hc_add(out, PROTO_CHECK_PASS, "pcie.ok", scope,
            "%s: link x%ld of x%ld (speed %s of %s)", addr, cur_w, max_w, cs,
            ms);
    hc_number(r, "width", (double)cur_w);
    hc_number(r, "max_width", (double)max_w);
    hc_number(r, "speed_gts", atof(cs));
    hc_number(r, "max_speed_gts", atof(ms));
}

int
hc_pcie_run(int argc, char **argv, cJSON *out)
{
    const char *root = "/sys";
    int64_t expect = 0;
    char dir[4096], path[8192];
    struct dirent *de;
    bool bad = false;
    int i = 0, found = 0;
    DIR *d;

    while (i < argc && !bad) {
        if (!hc_opt("pcie", argc, argv, &i, "sysfs-root", &root, &bad) &&
            !hc_opt_int("pcie", argc, argv, &i, "expect", 0, 1024, &expect,
                &bad))
            return hc_usage_unknown("pcie", argv[i]);
    }
    if (bad)
        return HC_USAGE;
    snprintf(dir, sizeof(dir), "%s/bus/pci/devices", root);
    if ((d = opendir(dir)) != NULL) {
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            if (!hc_pcie_is_gpu(path))
                continue;
            hc_pcie_dev(path, de->d_name, out);
            found++;
        }
        closedir(d);
    }
    if (found == 0)
        hc_add(out, PROTO_CHECK_SKIPPED, "pcie.no_gpus", NULL,
            "no NVIDIA GPU under %s (%lld configured)", dir, (long long)expect);
    else if (found < expect)
        hc_add(out, PROTO_CHECK_FAIL, "pcie.gpu_missing", NULL,
            "%d NVIDIA GPUs under %s, %lld configured", found, dir,
            (long long)expect);
    return 0;
}
