/*
 * test_hc_gpu.c - the GPU check's verdicts on nvidia-smi's answers
 *
 * hc_gpu_parse is fed the text of each scenario of issue 9's test 3
 * (healthy 8 GPUs, 7 GPUs, an uncorrectable ECC error, ECC disabled, exit
 * 9, truncated output, [N/A] fields; the hang is t2010's, with a real
 * process) and more: each gives the right status and code, and none of
 * the broken ones is a PASS.
 */
#include "agent/hc_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "common/xalloc.h"
#include "tests/tap.h"

static const char *const bus[8] = { "00000000:18:00.0", "00000000:2A:00.0",
    "00000000:3A:00.0", "00000000:5D:00.0", "00000000:9A:00.0",
    "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0" };

/* A GPU's fields after the UUID; NULL members take the healthy value. */
struct gpu {
    const char *ecc, *ue, *retired, *thermal, *brake, *temp, *power;
};

/* n rows; gpus[i] overrides row i's fields (gpus may be NULL). */
static char *
rows(int n, const struct gpu *gpus)
{
    struct sbuf sb;

    sbuf_init(&sb);
    for (int i = 0; i < n; i++) {
        struct gpu g = gpus ? gpus[i] : (struct gpu){ 0 };

        sbuf_addf(&sb,
            "%d, %s, GPU-3b8e1c2a-6f1d-4c5e-9a7b-1c2d3e4f5a6%d, %s, %s, %s, "
            "%s, %s, %s, %s\n",
            i, bus[i], i, g.ecc ? g.ecc : "Enabled", g.ue ? g.ue : "0",
            g.retired ? g.retired : "[N/A]",
            g.thermal ? g.thermal : "Not Active",
            g.brake ? g.brake : "Not Active", g.temp ? g.temp : "41",
            g.power ? g.power : "70.12");
    }
    return sbuf_detach(&sb, NULL);
}

static char *
remap(int n, int pending_gpu, int failed_gpu)
{
    struct sbuf sb;

    sbuf_init(&sb);
    for (int i = 0; i < n; i++)
        sbuf_addf(&sb, "%s, %s, %s\n", bus[i], i == pending_gpu ? "Yes" : "No",
            i == failed_gpu ? "Yes" : "No");
    return sbuf_detach(&sb, NULL);
}

static struct hc_res res;
static const struct hc_gpu_opts opts8 = { 8, 90, 100, false };

/* Judges text (and remap text, or NULL) into res. */
static void
judge(const char *text, int exit_status, const char *rm, int rm_exit,
    const struct hc_gpu_opts *o)
{
    hc_res_release(&res);
    hc_gpu_parse(text, strlen(text), exit_status, rm, rm ? strlen(rm) : 0,
        rm_exit, o ? o : &opts8, &res);
}

static int
count(enum proto_check_status st, const char *code)
{
    int n = 0;

    for (size_t i = 0; i < res.n; i++)
        n += res.v[i].status == st && (!code || !strcmp(res.v[i].code, code));
    return n;
}

/* The run's verdict: the worst status, FAIL > TIMEOUT/UNKNOWN > WARN. */
static enum proto_check_status
worst(void)
{
    static const int rank[PROTO_CHECK_STATUS_COUNT] = { [PROTO_CHECK_PASS] = 0,
        [PROTO_CHECK_SKIPPED] = 0,
        [PROTO_CHECK_WARN] = 1,
        [PROTO_CHECK_UNKNOWN] = 2,
        [PROTO_CHECK_TIMEOUT] = 2,
        [PROTO_CHECK_HUNG] = 2,
        [PROTO_CHECK_FAIL] = 3 };
    enum proto_check_status w = PROTO_CHECK_PASS;

    for (size_t i = 0; i < res.n; i++)
        if (rank[res.v[i].status] > rank[w])
            w = res.v[i].status;
    return w;
}

static double
number(const struct proto_check_result *r, const char *name)
{
    for (size_t i = 0; i < r->nnumbers; i++)
        if (!strcmp(r->numbers[i].name, name))
            return r->numbers[i].value;
    return -1;
}

static void
test_healthy(void)
{
    char *t = rows(8, NULL), *rm = remap(8, -1, -1);
    struct proto_check_result *r;

    judge(t, 0, rm, 0, NULL);
    is_int(res.n, 9, "healthy 8: one result per GPU and the count");
    is_int(count(PROTO_CHECK_PASS, "gpu.ok"), 8, "healthy 8: 8 gpu.ok PASS");
    r = hc_res_find(&res, "gpu.ok", "gpu:3");
    ok(r && number(r, "temperature_c") == 41 && number(r, "power_w") == 70.12 &&
            number(r, "ecc_uncorrected") == 0,
        "healthy 8: a GPU's result carries its figures");
    r = hc_res_find(&res, "gpu.count", "node");
    ok(r && r->status == PROTO_CHECK_PASS && number(r, "gpus") == 8,
        "healthy 8: gpu.count PASS with gpus = 8");
    is_int(worst(), PROTO_CHECK_PASS, "healthy 8: the verdict is PASS");
    judge(t, 0, NULL, 0, NULL);
    is_int(worst(), PROTO_CHECK_PASS, "healthy 8 without the remap query");
    free(t);
    free(rm);
}

static void
test_missing(void)
{
    char *t = rows(7, NULL);
    struct proto_check_result *r;

    judge(t, 0, NULL, 0, NULL);
    r = hc_res_find(&res, "gpu.missing", "node");
    ok(r && r->status == PROTO_CHECK_FAIL && strstr(r->evidence, "7 of 8") &&
            strstr(r->evidence, "missing index 7"),
        "7 of 8 GPUs: FAIL gpu.missing naming index 7");
    is_int(count(PROTO_CHECK_PASS, "gpu.count"), 0, "7 of 8: no count PASS");
    is_int(worst(), PROTO_CHECK_FAIL, "7 of 8: the verdict is FAIL");
    free(t);
    t = rows(8, NULL);
    judge(t, 0, NULL, 0, &(struct hc_gpu_opts){ 4, 90, 100, false });
    ok(hc_res_find(&res, "gpu.extra", "node") && worst() == PROTO_CHECK_WARN,
        "8 GPUs where 4 are expected: WARN gpu.extra");
    free(t);
    judge("", 6, NULL, 0, NULL);
    ok(count(PROTO_CHECK_FAIL, "gpu.missing") == 1,
        "exit 6 (no devices were found): FAIL gpu.missing");
    judge("\n", 0, NULL, 0, NULL);
    is_int(count(PROTO_CHECK_UNKNOWN, "gpu.smi_output"), 1,
        "exit 0 and no row: UNKNOWN gpu.smi_output");
}

static void
test_ecc(void)
{
    struct gpu g[8] = { 0 };
    char *t;

    g[3].ue = "2";
    t = rows(8, g);
    judge(t, 0, NULL, 0, NULL);
    ok(count(PROTO_CHECK_FAIL, "gpu.ecc_uncorrectable") == 1 &&
            hc_res_find(&res, "gpu.ecc_uncorrectable", "gpu:3"),
        "uncorrectable ECC on GPU 3: FAIL gpu.ecc_uncorrectable, scope gpu:3");
    is_int(count(PROTO_CHECK_PASS, "gpu.ok"), 7, "the 7 others PASS");
    is_int(worst(), PROTO_CHECK_FAIL, "uncorrectable ECC: the verdict is FAIL");
    free(t);
    for (int i = 0; i < 8; i++)
        g[i] = (struct gpu){ .ecc = "Disabled", .ue = "[N/A]" };
    t = rows(8, g);
    judge(t, 0, NULL, 0, NULL);
    is_int(count(PROTO_CHECK_FAIL, "gpu.ecc_disabled"), 8,
        "ECC disabled: FAIL gpu.ecc_disabled on each GPU");
    is_int(count(PROTO_CHECK_PASS, "gpu.ok"), 0, "ECC disabled: no gpu.ok");
    judge(t, 0, NULL, 0, &(struct hc_gpu_opts){ 8, 90, 100, true });
    ok(count(PROTO_CHECK_WARN, "gpu.ecc_disabled") == 8 &&
            worst() == PROTO_CHECK_WARN,
        "ECC disabled with --allow-ecc-off: WARN");
    free(t);
}

static void
test_tool_failures(void)
{
    static const struct {
        int exit;
        enum proto_check_status st;
        const char *code;
    } t[] = {
        { 9, PROTO_CHECK_FAIL, "gpu.driver" },
        { 15, PROTO_CHECK_FAIL, "gpu.fallen_off_bus" },
        { 14, PROTO_CHECK_FAIL, "gpu.inforom" },
        { 2, PROTO_CHECK_UNKNOWN, "gpu.smi_exit" },
        { 255, PROTO_CHECK_UNKNOWN, "gpu.smi_exit" },
        { HC_EXIT_SIGNAL(9), PROTO_CHECK_UNKNOWN, "gpu.smi_signal" },
        { HC_EXIT_TIMEOUT, PROTO_CHECK_TIMEOUT, "gpu.smi_timeout" },
        { HC_EXIT_NOEXEC, PROTO_CHECK_UNKNOWN, "gpu.smi_missing" },
    };
    const char *msg = "NVIDIA-SMI has failed because it couldn't communicate "
                      "with the NVIDIA driver.";

    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        judge(msg, t[i].exit, NULL, 0, NULL);
        ok(res.n == 1 && res.v[0].status == t[i].st &&
                !strcmp(res.v[0].code, t[i].code) &&
                strstr(res.v[0].evidence, "failed because"),
            "exit %d: %s %s with the output as evidence", t[i].exit,
            proto_check_status_str(t[i].st), t[i].code);
    }
}

static void
test_truncated(void)
{
    char *t = rows(8, NULL);

    t[strlen(t) - 30] = '\0'; /* GPU 7's row loses its last fields */
    judge(t, 0, NULL, 0, NULL);
    ok(count(PROTO_CHECK_UNKNOWN, "gpu.smi_output") == 1,
        "truncated output: UNKNOWN gpu.smi_output");
    ok(!hc_res_find(&res, "gpu.count", NULL) &&
            !hc_res_find(&res, "gpu.missing", NULL),
        "truncated output: no count verdict either way");
    ok(worst() != PROTO_CHECK_PASS, "truncated output is not a PASS");
    free(t);
    judge("0, 00000000:18:00.0, GPU-x, Enabled, 0, No, Not Active, Not Active, "
          "40, 70, 12, extra\n",
        0, NULL, 0, NULL);
    ok(count(PROTO_CHECK_UNKNOWN, "gpu.smi_output") == 1,
        "a row with too many fields: UNKNOWN gpu.smi_output");
    judge("x, 00000000:18:00.0, GPU-x, Enabled, 0, No, Not Active, Not Active, "
          "40, 70\n",
        0, NULL, 0, NULL);
    ok(count(PROTO_CHECK_UNKNOWN, "gpu.smi_output") == 1,
        "a row whose index is not a number: UNKNOWN gpu.smi_output");
    judge("0, 00000000:18:00.0, GPU-x, Enabled, lots, No, Not Active, "
          "Not Active, 40, 70\n",
        0, NULL, 0, &(struct hc_gpu_opts){ 1, 90, 100, false });
    ok(count(PROTO_CHECK_UNKNOWN, "gpu.smi_output") == 1 &&
            worst() != PROTO_CHECK_PASS,
        "an ECC count that is not a number: UNKNOWN, not PASS");
}

static void
test_na(void)
{
    struct gpu g[8];
    char *t;

    for (int i = 0; i < 8; i++)
        g[i] = (struct gpu){ NULL, NULL, "[N/A]", "[Not Supported]",
            "[Not Supported]", "[N/A]", "[N/A]" };
    t = rows(8, g);
    judge(t, 0, NULL, 0, NULL);
    is_int(worst(), PROTO_CHECK_PASS,
        "[N/A] / [Not Supported] in optional fields: PASS");
    ok(number(hc_res_find(&res, "gpu.ok", "gpu:0"), "temperature_c") == -1,
        "[N/A] temperature: no figure");
    free(t);
    g[5].ue = "[N/A]";
    t = rows(8, g);
    judge(t, 0, NULL, 0, NULL);
    ok(hc_res_find(&res, "gpu.ecc_unknown", "gpu:5") &&
            !hc_res_find(&res, "gpu.ok", "gpu:5"),
        "ECC enabled, uncorrectable count [N/A]: GPU 5 UNKNOWN, not PASS");
    free(t);
    g[5].ue = NULL;
    g[2].ecc = "[N/A]";
    t = rows(8, g);
    judge(t, 0, NULL, 0, NULL);
    ok(count(PROTO_CHECK_UNKNOWN, "gpu.ecc_unknown") == 1 &&
            !hc_res_find(&res, "gpu.ok", "gpu:2"),
        "ECC mode [N/A]: GPU 2 UNKNOWN, not PASS");
    free(t);
    g[2].ecc = NULL;
    g[6].temp = "[GPU is lost]";
    t = rows(8, g);
    judge(t, 0, NULL, 0, NULL);
    ok(hc_res_find(&res, "gpu.lost", "gpu:6") && worst() == PROTO_CHECK_FAIL,
        "[GPU is lost]: FAIL gpu.lost");
    free(t);
}

static void
test_soft(void)
{
    struct gpu g[8] = { 0 };
    char *t, *rm;

    g[1].thermal = "Active";
    g[2].brake = "Active";
    g[3].temp = "92";
    g[4].temp = "101";
    g[5].retired = "Yes";
    t = rows(8, g);
    rm = remap(8, 6, 7);
    judge(t, 0, rm, 0, NULL);
    ok(hc_res_find(&res, "gpu.thermal_slowdown", "gpu:1") &&
            hc_res_find(&res, "gpu.power_brake", "gpu:2"),
        "thermal and power-brake slowdowns: WARN");
    ok(hc_res_find(&res, "gpu.temperature", "gpu:3")->status ==
                PROTO_CHECK_WARN &&
            hc_res_find(&res, "gpu.temperature", "gpu:4")->status ==
                PROTO_CHECK_FAIL,
        "92 C is WARN, 101 C is FAIL");
    ok(hc_res_find(&res, "gpu.retired_pages_pending", "gpu:5")->status ==
            PROTO_CHECK_WARN,
        "retired pages pending: WARN");
    ok(hc_res_find(&res, "gpu.remap_pending", "gpu:6")->status ==
                PROTO_CHECK_WARN &&
            hc_res_find(&res, "gpu.remap_failure", "gpu:7")->status ==
                PROTO_CHECK_FAIL,
        "remap pending is WARN, a remap failure is FAIL");
    is_int(count(PROTO_CHECK_PASS, "gpu.ok"), 1, "only GPU 0 is PASS");
    free(rm);
    judge(t, 0, "Field is [Not Supported] on this GPU", 6, NULL);
    ok(!hc_res_find(&res, "gpu.remap_query", NULL),
        "no row remapper (pre-Ampere): not a finding");
    judge(t, 0, "NVML: Unknown Error", 255, NULL);
    ok(count(PROTO_CHECK_UNKNOWN, "gpu.remap_query") == 1,
        "the remap query failing: UNKNOWN gpu.remap_query");
    judge(t, 0, "", HC_EXIT_TIMEOUT, NULL);
    ok(count(PROTO_CHECK_TIMEOUT, "gpu.smi_timeout") == 1,
        "the remap query hanging: TIMEOUT gpu.smi_timeout");
    free(t);
}

int
main(void)
{
    test_healthy();
    test_missing();
    test_ecc();
    test_tool_failures();
    test_truncated();
    test_na();
    test_soft();
    hc_res_release(&res);
    return done_testing();
}
