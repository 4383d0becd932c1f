/*
 * test_health.c - unit tests for the health runner's pure parts (a site
 * check's header, a check's output, result changes) and for lockstep-
 * check's built-ins disk, memory, nic and pcie on trees made here. The
 * disk check's results of every kind of probe (a hung mount among them)
 * come from hc_disk_results; a real hung mount is t4127's (FUSE).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/hc.h"
#include "agent/hc_disk.h"
#include "agent/hc_res.h"
#include "agent/health_parse.h"
#include "agent/mkdirp.h"
#include "agent/procfs.h"
#include "common/xalloc.h"
#include "tests/tap.h"
#include "tests/testdir.h"

static char tmp[4096];

/* Write data to tmp/rel, making its directories. */
static void
put(const char *rel, const char *data)
{
    char path[8192], *slash;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", tmp, rel);
    slash = strrchr(path, '/');
    *slash = '\0';
    mkdirp(path, 0755);
    *slash = '/';
    f = fopen(path, "w");
    fputs(data, f);
    fclose(f);
}

static int
header(const char *text, int64_t *iv, int64_t *to)
{
    struct err err = { 0 };

    *iv = 1;
    *to = 2;
    return health_header_parse(text, strlen(text), iv, to, &err);
}

static void
test_header(void)
{
    int64_t iv, to;

    is_int(header("#!/bin/sh\n# lockstep: interval=60s timeout=10s\necho\n",
               &iv, &to),
        0, "header: parses");
    is_int(iv, 60000, "header: interval 60s");
    is_int(to, 10000, "header: timeout 10s");
    is_int(header("#!/usr/bin/python3\n\"\"\"x\"\"\"\n// lockstep: "
                  "timeout=500ms\n",
               &iv, &to),
        0, "header: a // comment further down");
    ok(iv == 1 && to == 500, "header: only timeout set (%lld %lld)",
        (long long)iv, (long long)to);
    is_int(header("#!/bin/sh\n#   lockstep:   interval=2m  \r\n", &iv, &to), 0,
        "header: spaces and CR");
    is_int(iv, 120000, "header: 2m");
    is_int(header("#!/bin/sh\necho lockstep: interval=1s\n", &iv, &to), 0,
        "header: not in a comment: none");
    ok(iv == 1 && to == 2, "header: nothing set");
    is_int(header("# lockstep: interval=60\n", &iv, &to), -EINVAL,
        "header: a number without unit refused");
    is_int(header("# lockstep: interval=50ms\n", &iv, &to), -EINVAL,
        "header: under 100 ms refused");
    is_int(header("# lockstep: timeout=2h\n", &iv, &to), -EINVAL,
        "header: timeout over 1 h refused");
    is_int(header("# lockstep: every=5s\n", &iv, &to), -EINVAL,
        "header: unknown key refused");
    is_int(header("; lockstep: interval=1h timeout=1h\n", &iv, &to), 0,
        "header: ; comment");
}

static int
output(const char *text, size_t *n, struct proto_check_result **res)
{
    struct err err = { 0 };

    return health_output_parse(text, res, n, &err);
}

static void
free_results(struct proto_check_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        proto_check_result_release(&res[i]);
    free(res);
}

static void
test_output(void)
{
    struct proto_check_result *res = NULL;
    char *big;
    size_t n = 0;

    is_int(output("{\"status\":\"FAIL\",\"code\":\"site.x\"}\n", &n, &res), 0,
        "output: one object");
    ok(n == 1 && res[0].status == PROTO_CHECK_FAIL &&
            strcmp(res[0].scope, "node") == 0 && res[0].count == 1,
        "output: FAIL, scope node, count 1");
    free_results(res, n);
    is_int(output("[{\"status\":\"PASS\",\"code\":\"a\",\"scope\":\"gpu:0\"},"
                  "{\"status\":\"WARN\",\"code\":\"b\",\"numbers\":{\"t\":9}}]",
               &n, &res),
        0, "output: an array");
    ok(n == 2 && res[1].nnumbers == 1 && res[1].numbers[0].value == 9,
        "output: both, with numbers");
    free_results(res, n);
    is_int(output("[]", &n, &res), -EINVAL, "output: empty array refused");
    is_int(output("", &n, &res), -EINVAL, "output: nothing refused");
    is_int(output("all good", &n, &res), -EINVAL, "output: text refused");
    is_int(output("[1]", &n, &res), -EINVAL, "output: a number refused");
    is_int(output("\"PASS\"", &n, &res), -EINVAL, "output: a string refused");
    is_int(output("{\"status\":\"OK\",\"code\":\"a\"}", &n, &res), -EINVAL,
        "output: unknown status refused");
    is_int(output("{\"status\":\"PASS\"}", &n, &res), -EINVAL,
        "output: no code refused");
    is_int(output("[{\"status\":\"PASS\",\"code\":\"a\"},{\"code\":\"b\"}]", &n,
               &res),
        -EINVAL, "output: one bad element refuses all");
    ok(res == NULL && n == 0, "output: nothing left on failure");
    big = xcalloc(300, 40);
    strcpy(big, "[");
    for (int i = 0; i < HEALTH_RESULTS_PER_CHECK + 1; i++)
        strcat(big, i ? ",{\"status\":\"PASS\",\"code\":\"a\"}"
                      : "{\"status\":\"PASS\",\"code\":\"a\"}");
    strcat(big, "]");
    is_int(output(big, &n, &res), -EINVAL, "output: too many results refused");
    free(big);
}

static void
test_differ(void)
{
    struct proto_check_result a[2], b[2];

    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    a[0] = (struct proto_check_result){ .status = PROTO_CHECK_PASS,
        .code = "nic.up",
        .scope = "nic:eth0",
        .evidence = "up 1" };
    a[1] = (struct proto_check_result){ .status = PROTO_CHECK_FAIL,
        .code = "nic.down",
        .scope = "nic:eth1" };
    b[0] = a[1];
    b[1] = a[0];
    b[1].evidence = "different evidence, same finding";
    ok(!health_results_differ(a, 2, b, 2), "differ: order and evidence do "
                                           "not count");
    ok(health_results_differ(a, 2, b, 1), "differ: a result fewer");
    ok(health_results_differ(NULL, 0, b, 1), "differ: first results");
    b[0].status = PROTO_CHECK_PASS;
    ok(health_results_differ(a, 2, b, 2), "differ: status");
    b[0].status = PROTO_CHECK_FAIL;
    b[0].scope = "nic:eth2";
    ok(health_results_differ(a, 2, b, 2), "differ: scope");
}

/* Run a built-in with a NULL-terminated argument list; returns its return
 * value, *out its results. */
static int
run(int (*fn)(int, char **, cJSON *), cJSON **out, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;

    va_start(ap, out);
    while ((argv[argc] = va_arg(ap, char *)) != NULL)
        argc++;
    va_end(ap);
    *out = cJSON_CreateArray();
    return fn(argc, argv, *out);
}

/* "STATUS code scope" of result i. */
static const char *
res_str(const cJSON *out, int i)
{
    static char buf[512];
    const cJSON *r = cJSON_GetArrayItem(out, i);

    if (r == NULL)
        return "(none)";
    snprintf(buf, sizeof(buf), "%s %s %s",
        cJSON_GetObjectItem(r, "status")->valuestring,
        cJSON_GetObjectItem(r, "code")->valuestring,
        cJSON_GetObjectItem(r, "scope")->valuestring);
    return buf;
}

static void
test_memory(void)
{
    char root[8192];
    cJSON *out;

    snprintf(root, sizeof(root), "%s/proc", tmp);
    put("proc/meminfo", "MemTotal:       1000000 kB\nMemFree:  10 kB\n"
                        "MemAvailable:    500000 kB\n");
    is_int(run(hc_memory_run, &out, "--proc-root", root, NULL), 0,
        "memory: runs");
    is_str(res_str(out, 0), "PASS memory.ok node", "memory: half free: PASS");
    cJSON_Delete(out);
    put("proc/meminfo", "MemTotal: 1000000 kB\nMemAvailable: 40000 kB\n");
    run(hc_memory_run, &out, "--proc-root", root, NULL);
    is_str(res_str(out, 0), "WARN memory.low node", "memory: 4%%: WARN");
    cJSON_Delete(out);
    run(hc_memory_run, &out, "--proc-root", root, "--fail-pct", "5", NULL);
    is_str(res_str(out, 0), "FAIL memory.exhausted node",
        "memory: 4%% under --fail-pct 5: FAIL");
    cJSON_Delete(out);
    put("proc/meminfo", "MemTotal: 1000000 kB\n");
    run(hc_memory_run, &out, "--proc-root", root, NULL);
    is_str(res_str(out, 0), "UNKNOWN memory.unreadable node",
        "memory: no MemAvailable: UNKNOWN");
    cJSON_Delete(out);
    is_int(run(hc_memory_run, &out, "--bogus", "1", NULL), HC_USAGE,
        "memory: unknown option");
    cJSON_Delete(out);
}

static void
test_disk(void)
{
    cJSON *out;

    is_int(run(hc_disk_run, &out, "--mount", tmp, "--mount", tmp, "--warn-pct",
               "100", "--fail-pct", "100", "--min-free-mb", "0", NULL),
        0, "disk: runs");
    is_int(cJSON_GetArraySize(out), 1, "disk: one result per file system");
    ok(strncmp(res_str(out, 0), "PASS disk.ok mount:/", 20) == 0,
        "disk: PASS under 100%% (%s)", res_str(out, 0));
    cJSON_Delete(out);
    run(hc_disk_run, &out, "--mount", tmp, "--min-free-mb", "2000000000", NULL);
    ok(strncmp(res_str(out, 0), "FAIL disk.full", 14) == 0,
        "disk: under --min-free-mb: FAIL");
    cJSON_Delete(out);
    run(hc_disk_run, &out, "--mount", "/nonexistent/x", NULL);
    is_str(res_str(out, 0), "FAIL disk.unavailable mount:/nonexistent/x",
        "disk: a missing mount: FAIL");
    cJSON_Delete(out);
    is_int(run(hc_disk_run, &out, NULL), HC_USAGE, "disk: no --mount");
    cJSON_Delete(out);
    is_int(run(hc_disk_run, &out, "--mount", tmp, "--warn-pct", "101", NULL),
        HC_USAGE, "disk: --warn-pct over 100");
    cJSON_Delete(out);
}

/* "STATUS code scope" of every result, joined by "; ". */
static const char *
res_all(const cJSON *out)
{
    static char all[2048];
    size_t len = 0;

    all[0] = '\0';
    for (int i = 0; i < cJSON_GetArraySize(out); i++)
        len += (size_t)snprintf(all + len, sizeof(all) - len, "%s%s",
            i > 0 ? "; " : "", res_str(out, i));
    return all;
}

static const char *
res_evidence(const cJSON *out, int i)
{
    const cJSON *r = cJSON_GetArrayItem(out, i);

    return r != NULL ? cJSON_GetObjectItem(r, "evidence")->valuestring : "";
}

/* Every outcome of a mount's probe, as hc_disk_results turns it into a
 * result: one per mount, in order, the hung ones among the others. */
static void
test_disk_results(void)
{
    struct hc_disk_opts o = { .warn_pct = 90,
        .fail_pct = 97,
        .min_free_mb = 64,
        .mount_timeout_ms = 2500 };
    struct hc_disk_probe p[7];
    cJSON *out = cJSON_CreateArray();

    memset(p, 0, sizeof(p));
    p[0].path = "/a";
    p[0].outcome = HC_DISK_OK;
    p[0].dev = 1;
    p[0].sfs.f_blocks = 1000;
    p[0].sfs.f_bfree = 500;
    p[0].sfs.f_bavail = 500;
    p[0].sfs.f_bsize = 1 << 20;
    p[0].sfs.f_files = 100;
    p[0].sfs.f_ffree = 99;
    p[1] = p[0]; /* the same file system: left out */
    p[1].path = "/a/b";
    p[2] = p[0];
    p[2].path = "/full";
    p[2].dev = 2;
    p[2].sfs.f_bfree = p[2].sfs.f_bavail = 10; /* 99% used */
    p[3].path = "/gone";
    p[3].outcome = HC_DISK_ERROR;
    p[3].err = ENOENT;
    p[4].path = "/nfs/slow";
    p[4].outcome = HC_DISK_KILLED;
    p[5].path = "/nfs/stuck";
    p[5].outcome = HC_DISK_STUCK;
    p[5].pid = 4242;
    p[5].state = 'D';
    snprintf(p[5].wchan, sizeof(p[5].wchan), "rpc_wait_bit_killable");
    p[6].path = "/nfs/still";
    p[6].outcome = HC_DISK_STILL;
    p[6].pid = 4243;
    p[6].stuck_ms = 125000;
    hc_disk_results(&o, p, 7, out);
    is_str(res_all(out),
        "PASS disk.ok mount:/a; FAIL disk.full mount:/full; "
        "FAIL disk.unavailable mount:/gone; HUNG disk.hung mount:/nfs/slow; "
        "HUNG disk.hung mount:/nfs/stuck; HUNG disk.hung mount:/nfs/still",
        "disk: one result per file system; every hung mount is HUNG "
        "disk.hung on its own scope, beside the others");
    ok(strstr(res_evidence(out, 3), "within 2500 ms; its probe was killed") !=
            NULL,
        "disk: a probe killed at the deadline (%s)", res_evidence(out, 3));
    ok(strstr(res_evidence(out, 4),
           "(pid 4242) survived SIGKILL (state D, wchan "
           "rpc_wait_bit_killable)") != NULL,
        "disk: a probe stuck in the kernel (%s)", res_evidence(out, 4));
    ok(strstr(res_evidence(out, 5), "pid 4243, state ?, wchan ?") != NULL &&
            strstr(res_evidence(out, 5), "for 125 s; not probed again") != NULL,
        "disk: an earlier run's probe still stuck (%s)", res_evidence(out, 5));
    cJSON_Delete(out);
}

/* The memory of stuck probes (--state-dir): a mount whose earlier probe
 * still exists is HUNG without a new probe; once it is gone, probed. A
 * sleeping child of this test stands for the stuck probe (its identity,
 * pid and start time, is all the memory keeps). */
static void
test_disk_stuck(void)
{
    char dir[8192], file[8300], line[8400];
    cJSON *out;
    int pid;

    snprintf(dir, sizeof(dir), "%s/diskstate", tmp);
    mkdirp(dir, 0755);
    snprintf(file, sizeof(file), "%s/disk-stuck", dir);
    pid = fork();
    if (pid == 0) {
        pause();
        _exit(0);
    }
    while (procfs_state(pid) == '\0')
        usleep(1000);
    snprintf(line, sizeof(line), "%d %llu %lld %s\n1 1 0 %s\n", pid,
        (unsigned long long)procfs_start_time(pid),
        (long long)hc_wall_ms() - 3000, tmp, "/other");
    put("diskstate/disk-stuck", line);
    run(hc_disk_run, &out, "--mount", tmp, "--state-dir", dir, NULL);
    ok(strncmp(res_str(out, 0), "HUNG disk.hung mount:/", 22) == 0 &&
            strstr(res_evidence(out, 0), "of an earlier run") != NULL,
        "disk: an earlier run's probe still there: HUNG, not probed (%s)",
        res_evidence(out, 0));
    cJSON_Delete(out);
    {
        FILE *f = fopen(file, "r");
        char got[8400] = "";
        size_t n = 0;

        if (f != NULL) {
            n = fread(got, 1, sizeof(got) - 1, f);
            fclose(f);
        }
        got[n] = '\0';
        /* pid 1's start time is not 1: that line was not a probe. */
        ok(n > 0 && strncmp(got, line, n) == 0 && got[n - 1] == '\n' &&
                strchr(got, '\n') == got + n - 1,
            "disk: the memory keeps only what still exists (%.*s)",
            (int)strcspn(got, "\n"), got);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    run(hc_disk_run, &out, "--mount", tmp, "--state-dir", dir, NULL);
    ok(strncmp(res_str(out, 0), "PASS disk.ok mount:/", 20) == 0,
        "disk: once it is gone, probed again (%s)", res_str(out, 0));
    cJSON_Delete(out);
    ok(access(file, F_OK) < 0 && errno == ENOENT,
        "disk: nothing stuck, no memory file");
    is_int(
        run(hc_disk_run, &out, "--mount", tmp, "--mount-timeout-ms", "5", NULL),
        HC_USAGE, "disk: --mount-timeout-ms under 10");
    cJSON_Delete(out);
}

static void
test_nic_pcie(void)
{
    char root[8192];
    cJSON *out;

    snprintf(root, sizeof(root), "%s/sys", tmp);
    run(hc_nic_run, &out, "--sysfs-root", root, NULL);
    is_str(res_str(out, 0), "SKIPPED nic.none node", "nic: none: SKIPPED");
    cJSON_Delete(out);
    run(hc_pcie_run, &out, "--sysfs-root", root, "--expect", "8", NULL);
    is_str(res_str(out, 0), "SKIPPED pcie.no_gpus node",
        "pcie: no GPU: SKIPPED");
    cJSON_Delete(out);

    put("sys/class/net/ib0/operstate", "down\n");
    put("sys/class/net/ib0/device/vendor", "0x15b3\n");
    put("sys/class/net/br0/operstate", "up\n");
    put("sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
    run(hc_nic_run, &out, "--sysfs-root", root, NULL);
    is_int(cJSON_GetArraySize(out), 2, "nic: the bridge is left out");
    ok(strcmp(res_str(out, 0), "WARN nic.down nic:ib0") == 0 ||
            strcmp(res_str(out, 1), "WARN nic.down nic:ib0") == 0,
        "nic: down, nothing expected: WARN");
    cJSON_Delete(out);
    run(hc_nic_run, &out, "--sysfs-root", root, "--expect", "mlx5_1/1", NULL);
    ok(strcmp(res_str(out, 0), "SKIPPED nic.unused nic:ib0") == 0 &&
            strcmp(res_str(out, 1), "FAIL nic.down nic:mlx5_1/1") == 0,
        "nic: expected port down FAIL, other SKIPPED (%s)", res_str(out, 1));
    cJSON_Delete(out);
    put("sys/class/net/ib0/operstate", "up\n");
    put("sys/class/net/ib0/speed", "1000\n");
    run(hc_nic_run, &out, "--sysfs-root", root, "--expect", "ib0",
        "--min-speed-mbps", "10000", NULL);
    is_str(res_str(out, 0), "WARN nic.slow nic:ib0", "nic: slow: WARN");
    cJSON_Delete(out);

    put("sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n");
    put("sys/bus/pci/devices/0000:01:00.0/class", "0x030200\n");
    put("sys/bus/pci/devices/0000:01:00.0/current_link_width", "16\n");
    put("sys/bus/pci/devices/0000:01:00.0/max_link_width", "16\n");
    put("sys/bus/pci/devices/0000:01:00.0/current_link_speed", "2.5 GT/s\n");
    put("sys/bus/pci/devices/0000:01:00.0/max_link_speed", "16.0 GT/s\n");
    run(hc_pcie_run, &out, "--sysfs-root", root, "--expect", "1", NULL);
    is_str(res_str(out, 0), "PASS pcie.ok pci:0000:01:00.0",
        "pcie: full width, idle speed: PASS");
    cJSON_Delete(out);
    run(hc_pcie_run, &out, "--sysfs-root", root, "--expect", "2", NULL);
    is_str(res_str(out, 1), "FAIL pcie.gpu_missing node",
        "pcie: one of 2: FAIL");
    cJSON_Delete(out);
    put("sys/bus/pci/devices/0000:01:00.0/current_link_width", "4\n");
    run(hc_pcie_run, &out, "--sysfs-root", root, NULL);
    is_str(res_str(out, 0), "FAIL pcie.width_degraded pci:0000:01:00.0",
        "pcie: x4 of x16: FAIL");
    cJSON_Delete(out);
    unlink(strcat(root, "/bus/pci/devices/0000:01:00.0/max_link_width"));
    snprintf(root, sizeof(root), "%s/sys", tmp);
    run(hc_pcie_run, &out, "--sysfs-root", root, NULL);
    is_str(res_str(out, 0), "UNKNOWN pcie.unreadable pci:0000:01:00.0",
        "pcie: no max width: UNKNOWN");
    cJSON_Delete(out);
}

int
main(void)
{
    plan(NO_PLAN);
    if (test_tmpdir(tmp, sizeof(tmp), "test_health") < 0)
        return 1;
    test_header();
    test_output();
    test_differ();
    test_memory();
    test_disk();
    test_disk_results();
    test_disk_stuck();
    test_nic_pcie();
    test_rmtree(tmp);
    return done_testing();
}
