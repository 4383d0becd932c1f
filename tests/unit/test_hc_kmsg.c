/*
 * test_hc_kmsg.c - the kernel log check on fixture logs in /dev/kmsg's
 * record format (tests/fixtures/kmsg)
 *
 * Issue 9's test 4: a healthy boot yields no finding (the shipped
 * allowlist plus a baseline learned from ANOTHER healthy boot); the same
 * log with every number and address changed yields none; one extra
 * unknown line yields exactly one finding; 10,000 repeats of it one
 * finding with count 10,000; an XID 79 line a FAIL; a second run of the
 * same boot after the cursor re-raises nothing new. Plus the normaliser,
 * the known events, the XID table file, gaps and a new boot.
 */
#include "agent/hc_kmsg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/hc_kmsg_norm.h"
#include "common/sbuf.h"
#include "common/xalloc.h"
#include "tests/tap.h"

static char *tmp;   /* this test's directory */
static char *src;   /* the source tree */
static char *allow; /* the shipped allowlist */
static char *base;  /* the baseline learned from boot B */
static struct hc_res res;
static int ncase;

static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    struct sbuf sb;
    char buf[4096];
    size_t n;

    sbuf_init(&sb);
    if (f == NULL)
        return sbuf_detach(&sb, NULL);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        sbuf_add(&sb, buf, n);
    fclose(f);
    return sbuf_detach(&sb, NULL);
}

static char *
put(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", tmp, name);
    FILE *f = fopen(path, "w");

    fputs(text, f);
    fclose(f);
    return path;
}

/* The state directories made so far (freed at the end). */
static char *dirs[64];
static size_t ndirs;

/* A fresh state directory. */
static char *
state_dir(void)
{
    char *d = xasprintf("%s/state%d", tmp, ++ncase);

    mkdir(d, 0700);
    if (ndirs < sizeof(dirs) / sizeof(dirs[0]))
        dirs[ndirs++] = d;
    return d;
}

/* One run over log with the allowlist and (if bl) the baseline. */
static void
run(const char *log, const char *dir, const char *bl, const char *boot)
{
    struct hc_kmsg_opts o = { .path = log,
        .state_dir = dir,
        .allowlist = allow,
        .baseline = bl,
        .boot_id = boot ? boot : "boot-1",
        .max_level = 4 };

    hc_res_release(&res);
    hc_kmsg_check(&o, &res);
}

/* The results other than kmsg.scan (the findings). */
static int
findings(void)
{
    int n = 0;

    for (size_t i = 0; i < res.n; i++)
        n += strcmp(res.v[i].code, "kmsg.scan") != 0;
    return n;
}

static void
show(void)
{
    for (size_t i = 0; i < res.n; i++)
        diag("  %s %s %s x%lld: %.160s",
            proto_check_status_str(res.v[i].status), res.v[i].code,
            res.v[i].scope, (long long)res.v[i].count, res.v[i].evidence);
}

static double
number(const struct proto_check_result *r, const char *name)
{
    for (size_t i = 0; r && i < r->nnumbers; i++)
        if (!strcmp(r->numbers[i].name, name))
            return r->numbers[i].value;
    return -1;
}

/* Appends a kernel record: seq, level, message. */
static void
rec(struct sbuf *sb, unsigned seq, int pri, const char *msg)
{
    sbuf_addf(sb, "%d,%u,%llu,-;%s\n", pri, seq, 9000000000ULL + seq, msg);
}

/* Boot A (218 records, sequence 0..217) and what tests append to it. */
static struct sbuf
boot_a(void)
{
    char *p = xasprintf("%s/tests/fixtures/kmsg/healthy-boot.txt", src);
    char *t = slurp(p);
    struct sbuf sb;

    sbuf_init(&sb);
    sbuf_addstr(&sb, t);
    free(t);
    free(p);
    return sb;
}

static void
test_healthy(void)
{
    struct sbuf a = boot_a();
    char *log = put("a.txt", a.buf), *p;
    struct hc_kmsg_opts o = { .path = NULL,
        .allowlist = NULL,
        .max_level = 4,
        .boot_id = "boot-b" };

    ok(a.len > 10000, "the healthy-boot fixture is there");
    p = xasprintf("%s/tests/fixtures/kmsg/healthy-boot-b.txt", src);
    o.path = p;
    o.allowlist = allow;
    o.learn = base;
    hc_res_release(&res);
    hc_kmsg_check(&o, &res);
    ok(hc_res_find(&res, "kmsg.learned", NULL) &&
            number(&res.v[0], "templates") > 0,
        "a baseline is learned from boot B");
    run(log, state_dir(), base, NULL);
    is_int(findings(), 0,
        "healthy boot A: no finding (allowlist + B's "
        "baseline)");
    show();
    ok(number(hc_res_find(&res, "kmsg.scan", NULL), "records") == 218,
        "the scan read all 218 records");
    run(log, state_dir(), NULL, NULL);
    ok(findings() > 0 &&
            findings() ==
                (int)number(hc_res_find(&res, "kmsg.scan", NULL), "findings"),
        "without the baseline the node-specific lines are unknown (the "
        "allowlist is exact, not broad)");
    free(p);
    free(log);
    sbuf_release(&a);
}

/* Every digit of the messages changed (0x kept as it is). */
static void
test_numbers_changed(void)
{
    struct sbuf a = boot_a();
    char *log;

    for (char *line = a.buf; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char *m = strchr(line, ';'), *end = strchr(line, '\n');

        if (*line == ' ' || m == NULL || (end && m > end))
            continue;
        for (char *c = m + 1; c < end; c++)
            if (*c >= '0' && *c <= '9' && !(c[0] == '0' && c[1] == 'x'))
                *c = "7305918264"[*c - '0'];
    }
    ok(strstr(a.buf, "nvidia 0000:18:00.0") == NULL,
        "the addresses did change");
    log = put("a-changed.txt", a.buf);
    run(log, state_dir(), base, NULL);
    is_int(findings(), 0, "boot A with every number changed: no finding");
    show();
    free(log);
    sbuf_release(&a);
}

static void
test_unknown(void)
{
    struct sbuf a = boot_a();
    char *log, *dir = state_dir();
    struct proto_check_result *r;
    char line[128];

    rec(&a, 218, 3, "foo_drv 0000:18:00.0: widget 7 stalled at 0xffffa0c3");
    log = put("a-one.txt", a.buf);
    run(log, dir, base, NULL);
    is_int(findings(), 1, "one unknown line: exactly one finding");
    r = hc_res_find(&res, "kmsg.unknown", NULL);
    ok(r && r->status == PROTO_CHECK_WARN && r->count == 1 &&
            strstr(r->evidence, "widget 7 stalled") &&
            strncmp(r->scope, "tmpl:", 5) == 0,
        "WARN kmsg.unknown, count 1, the line as evidence, scope tmpl:HASH");
    free(log);
    for (unsigned i = 1; i < 10000; i++) {
        snprintf(line, sizeof(line),
            "foo_drv 0000:%02x:00.0: widget %u stalled at 0x%x", i % 256, i,
            i * 4099);
        rec(&a, 218 + i, 3, line);
    }
    log = put("a-10000.txt", a.buf);
    run(log, state_dir(), base, NULL);
    r = hc_res_find(&res, "kmsg.unknown", NULL);
    ok(findings() == 1 && r && r->count == 10000,
        "10,000 repeats (other numbers): one finding with count 10,000");
    show();
    run(log, dir, base, NULL);
    r = hc_res_find(&res, "kmsg.unknown", NULL);
    ok(findings() == 1 && r && r->count == 10000 && number(r, "new") == 9999,
        "after the cursor at the first line: 9,999 more of the same finding");
    run(log, dir, base, NULL);
    r = hc_res_find(&res, "kmsg.unknown", NULL);
    ok(findings() == 1 && r && r->count == 10000 && number(r, "new") == 0 &&
            number(hc_res_find(&res, "kmsg.scan", NULL), "records") == 0,
        "a restart in the same boot re-raises nothing: same finding, same "
        "count, nothing new read");
    run(log, dir, base, "boot-2");
    r = hc_res_find(&res, "kmsg.unknown", NULL);
    ok(r && r->count == 10000 && number(r, "new") == 10000,
        "a new boot id starts afresh (the whole log is the new boot's)");
    free(log);
    sbuf_release(&a);
}

static void
test_xid(void)
{
    struct sbuf a = boot_a();
    char *log, *table;
    struct proto_check_result *r;
    struct hc_kmsg_opts o;

    rec(&a, 218, 3,
        "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU "
        "has fallen off the bus.");
    rec(&a, 219, 3, "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.");
    rec(&a, 220, 3,
        "NVRM: Xid (PCI:0000:2a:00): 13, pid=4242, name=python3, Graphics "
        "SM Warp Exception on (GPC 0, TPC 1, SM 0): Illegal Instruction "
        "Encoding");
    rec(&a, 221, 3, "NVRM: Xid (PCI:0000:3a:00): 999, pid=1, something new");
    rec(&a, 222, 12, "NVRM: Xid (PCI:0000:5d:00): 48, forged by a user");
    log = put("a-xid.txt", a.buf);
    run(log, state_dir(), base, NULL);
    r = hc_res_find(&res, "kmsg.xid.79", NULL);
    ok(r && r->status == PROTO_CHECK_FAIL &&
            !strcmp(r->scope, "pci:0000:18:00"),
        "XID 79: FAIL kmsg.xid.79, scope pci:0000:18:00");
    r = hc_res_find(&res, "kmsg.gpu_fallen_off_bus", NULL);
    ok(r && r->status == PROTO_CHECK_FAIL, "fallen off the bus: FAIL");
    r = hc_res_find(&res, "kmsg.xid.13", NULL);
    ok(r && r->status == PROTO_CHECK_PASS,
        "XID 13 (the application's): a PASS result, the job's event");
    r = hc_res_find(&res, "kmsg.xid.999", NULL);
    ok(r && r->status == PROTO_CHECK_WARN, "an XID not in the table: WARN");
    ok(!hc_res_find(&res, "kmsg.xid.48", NULL) &&
            hc_res_find(&res, "kmsg.unknown", NULL),
        "an XID line written by user space is no XID (an unknown line)");
    show();
    table = put("xid.txt", "# site table\n79 WARN downgraded here\n999 FAIL "
                           "new\n");
    o = (struct hc_kmsg_opts){ .path = log,
        .state_dir = state_dir(),
        .allowlist = allow,
        .baseline = base,
        .boot_id = "b",
        .max_level = 4,
        .xid_table = table };
    hc_res_release(&res);
    hc_kmsg_check(&o, &res);
    ok(hc_res_find(&res, "kmsg.xid.79", NULL)->status == PROTO_CHECK_WARN &&
            hc_res_find(&res, "kmsg.xid.999", NULL)->status == PROTO_CHECK_FAIL,
        "a table file changes the severities without a rebuild");
    free(table);
    free(log);
    sbuf_release(&a);
}

static void
test_events(void)
{
    struct sbuf a = boot_a();
    char *log;
    unsigned s = 218;

    rec(&a, s++, 4,
        "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_"
        "Chan#0_DIMM#0 (channel:0 slot:0 page:0x1234 offset:0x0)");
    rec(&a, s++, 0,
        "EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#1_"
        "Chan#2_DIMM#0 (channel:2 slot:0 page:0x99 offset:0x0)");
    rec(&a, s++, 4,
        "pcieport 0000:17:01.0: AER: Corrected error received: "
        "0000:18:00.0");
    rec(&a, s++, 4,
        "nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, "
        "type=Physical Layer, (Receiver ID)");
    rec(&a, s++, 4,
        "nvidia 0000:18:00.0:   device [10de:2330] error "
        "status/mask=00000001/0000e000");
    rec(&a, s++, 4,
        "nvidia 0000:18:00.0:    [ 0] RxErr                  "
        "(First)");
    rec(&a, s++, 3,
        "INFO: task python3:4242 blocked for more than 120 "
        "seconds.");
    rec(&a, s++, 3,
        "      Tainted: P           OE     5.15.0-91-generic "
        "#101-Ubuntu");
    rec(&a, s++, 3,
        "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" "
        "disables this message.");
    rec(&a, s++, 6,
        "task:python3 state:D stack:0 pid:4242 ppid:1 "
        "flags:0x00004002");
    rec(&a, s++, 4, "Call Trace:");
    rec(&a, s++, 4, " <TASK>");
    rec(&a, s++, 4, " __schedule+0x2cd/0x890");
    rec(&a, s++, 4, " </TASK>");
    rec(&a, s++, 4,
        "python3 invoked oom-killer: gfp_mask=0x1100cca(GFP_"
        "HIGHUSER_MOVABLE), order=0, oom_score_adj=0");
    rec(&a, s++, 4, "CPU: 17 PID: 4242 Comm: python3 Tainted: P OE");
    rec(&a, s++, 4, "Mem-Info:");
    rec(&a, s++, 3,
        "Out of memory: Killed process 4242 (python3) "
        "total-vm:123456kB, anon-rss:120000kB");
    rec(&a, s++, 6,
        "oom_reaper: reaped process 4242 (python3), now "
        "anon-rss:0kB");
    rec(&a, s++, 0,
        "mce: [Hardware Error]: CPU 3: Machine Check Exception: "
        "5 Bank 1: b200000000000005");
    log = put("a-events.txt", a.buf);
    run(log, state_dir(), base, NULL);
    show();
    ok(hc_res_find(&res, "kmsg.edac_ce", NULL)->status == PROTO_CHECK_WARN,
        "EDAC CE: WARN");
    ok(hc_res_find(&res, "kmsg.edac_ue", NULL)->status == PROTO_CHECK_FAIL,
        "EDAC UE: FAIL");
    ok(hc_res_find(&res, "kmsg.aer_corrected", "pci:0000:18:00.0")->status ==
            PROTO_CHECK_WARN,
        "AER corrected: WARN, scope the device");
    ok(hc_res_find(&res, "kmsg.hung_task", NULL)->status == PROTO_CHECK_WARN,
        "hung task: WARN");
    ok(hc_res_find(&res, "kmsg.oom_kill", NULL)->status == PROTO_CHECK_WARN,
        "OOM kill: WARN");
    ok(hc_res_find(&res, "kmsg.mce_fatal", NULL)->status == PROTO_CHECK_FAIL,
        "machine check exception: FAIL");
    ok(!hc_res_find(&res, "kmsg.unknown", NULL),
        "their detail lines (AER status, call trace, OOM report) are part "
        "of the events, not unknown lines");
    is_int(findings(), 6, "six findings");
    free(log);
    sbuf_release(&a);
}

static void
test_exact_and_gap(void)
{
    struct sbuf a = boot_a();
    char *log, *dir = state_dir();
    struct proto_check_result *r;

    rec(&a, 218, 4, "Disabling lock debugging due to kernel taint, and more");
    log = put("a-prefix.txt", a.buf);
    run(log, dir, base, NULL);
    ok(findings() == 1 && hc_res_find(&res, "kmsg.unknown", NULL),
        "an allowlisted line with text added is unknown (no prefixes)");
    free(log);
    rec(&a, 230, 4, "Disabling lock debugging due to kernel taint");
    log = put("a-gap.txt", a.buf);
    run(log, dir, base, NULL);
    r = hc_res_find(&res, "kmsg.gap", NULL);
    ok(r && r->status == PROTO_CHECK_WARN && r->count == 11,
        "records 219..229 lost after the cursor: kmsg.gap counts 11");
    free(log);
    sbuf_release(&a);
    log = put("garbage.txt", "this is not\na kmsg file\n");
    run(log, state_dir(), base, NULL);
    ok(hc_res_find(&res, "kmsg.format", NULL)->status == PROTO_CHECK_UNKNOWN,
        "a file of other lines: UNKNOWN kmsg.format");
    free(log);
    run("/nonexistent/kmsg", state_dir(), base, NULL);
    ok(res.n == 1 && res.v[0].status == PROTO_CHECK_UNKNOWN &&
            !strcmp(res.v[0].code, "kmsg.read"),
        "an unreadable source: UNKNOWN kmsg.read, nothing else");
}

/* Found by fuzzing (fuzz/corpus/kmsg/regress-negative-seq): numbers with a
 * sign were taken (sscanf's %llu), so "-65" became a sequence number near
 * 2^64 and the gap after it a negative count, which the agent refused as
 * the check's output. */
static void
test_record_fields(void)
{
    struct proto_check_result *r;
    char *log;

    log = put("signed.txt", "6,1,100,-;fuzz: one\n"
                            "6,-65,200,-;fuzz: two\n"
                            "6, 3,300,-;fuzz: three\n"
                            "+6,4,400,-;fuzz: four\n"
                            "6,5,-1,-;fuzz: five\n"
                            "6,6,600,-;fuzz: six\n");
    run(log, state_dir(), base, NULL);
    r = hc_res_find(&res, "kmsg.scan", NULL);
    ok(r && number(r, "malformed") == 4,
        "a sign or a blank in PRI, SEQ or USEC: not a record");
    r = hc_res_find(&res, "kmsg.gap", NULL);
    ok(r && r->count == 4, "records 2..5 count as lost: kmsg.gap counts 4");
    free(log);
    log = put("huge.txt", "6,1,100,-;fuzz: one\n"
                          "6,9007199254740992,200,-;fuzz: far\n"
                          "6,9007199254740993,300,-;fuzz: too far\n");
    run(log, state_dir(), base, NULL);
    r = hc_res_find(&res, "kmsg.gap", NULL);
    ok(r && r->count == 9007199254740990LL,
        "a jump to 2^53 counts what lies between, exactly");
    r = hc_res_find(&res, "kmsg.scan", NULL);
    ok(r && number(r, "malformed") == 1,
        "a sequence number past 2^53 is no kernel's: not a record");
    free(log);
}

static void
test_normaliser(void)
{
    static const char *const cases[][2] = {
        { "nvidia 0000:18:00.0: enabling device (0000 -> 0002)",
            "nvidia <pci>: enabling device (<n> -> <n>)" },
        { "NVRM: Xid (PCI:0000:18:00): 79, pid=12",
            "NVRM: Xid (PCI:<pci>): <n>, pid=<n>" },
        { "i40e 0000:3d:00.0: MAC address: 3c:ec:ef:6a:1b:2c",
            "i<n>e <pci>: MAC address: <mac>" },
        { "root=UUID=4c1f3a2e-9b7d-4e21-8a3c-2f6e1d9b7a10 ro",
            "root=UUID=<uuid> ro" },
        { "ip 10.1.2.3 eth0  up   ", "ip <ip> eth<n> up" },
        { "sda1: p1 sdhci ffff8881c0a1b000 +0x2ad/0x6e0",
            "<disk><n>: p<n> sdhci <hex> +<hex>/<hex>" },
        { "rtc_cmos 00:02: x", "rtc_cmos <n>:<n>: x" },
        /* Found by the fuzz campaign (regress-token-after-number): a
         * token right after a number starts a word of the template. */
        { "cd12sdad x", "cd<n><disk> x" },
    };
    char out[HC_KMSG_TMPL_MAX], again[HC_KMSG_TMPL_MAX];
    char long_line[HC_KMSG_LINE_MAX + 1];
    size_t n;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        hc_kmsg_normalise(cases[i][0], strlen(cases[i][0]), out, sizeof(out));
        is_str(out, cases[i][1], "normalise '%s'", cases[i][0]);
        hc_kmsg_normalise(out, strlen(out), again, sizeof(again));
        is_str(again, out, "normalising a template changes nothing");
    }
    /* Found by fuzzing (fuzz/corpus/kmsg/regress-template-cut-space): a
     * template cut at its size right after a blank kept the blank, so it
     * was not its own template and a learned baseline never matched. */
    memset(long_line, 'x', sizeof(long_line) - 1);
    long_line[sizeof(long_line) - 1] = '\0';
    long_line[sizeof(out) - 2] = ' ';
    n = hc_kmsg_normalise(long_line, strlen(long_line), out, sizeof(out));
    ok(n == sizeof(out) - 2 && out[n - 1] == 'x',
        "a template cut after a blank ends without it");
    hc_kmsg_normalise(out, n, again, sizeof(again));
    is_str(again, out, "and is its own template");
    /* Found by the fuzz campaign (fuzz/corpus/kmsg/regress-template-cut-
     * word): a word cut at the template's size ("sddress" to "sdd") read
     * as a disk when normalised again. The cut word goes. */
    /* "1 " becomes "<n> ": the word starts at the template's 1020th
     * byte, 3 of it fit. */
    for (size_t i = 0; i < (sizeof(out) - 4) / 2; i++)
        long_line[i] = i % 2 ? ' ' : '1';
    snprintf(long_line + (sizeof(out) - 4) / 2,
        sizeof(long_line) - (sizeof(out) - 4) / 2, "sddress: 5c:ec:ef");
    n = hc_kmsg_normalise(long_line, strlen(long_line), out, sizeof(out));
    ok(n == sizeof(out) - 5 && out[n - 1] == '>',
        "a template cut inside a word ends before it (%zu bytes)", n);
    hc_kmsg_normalise(out, n, again, sizeof(again));
    is_str(again, out, "and is its own template");
}

int
main(void)
{
    char t[] = "/tmp/test_hc_kmsg.XXXXXX";

    src = getenv("LOCKSTEP_SRC") ? getenv("LOCKSTEP_SRC") : ".";
    tmp = mkdtemp(t);
    allow = xasprintf("%s/agent/kmsg-allowlist.txt", src);
    base = xasprintf("%s/baseline.txt", tmp);
    test_normaliser();
    test_healthy();
    test_numbers_changed();
    test_unknown();
    test_xid();
    test_events();
    test_exact_and_gap();
    test_record_fields();
    hc_res_release(&res);
    free(allow);
    free(base);
    for (size_t i = 0; i < ndirs; i++)
        free(dirs[i]);
    if (tap_failed == 0) {
        char *cmd = xasprintf("rm -rf '%s'", tmp);

        if (system(cmd) != 0)
            diag("cannot remove %s", tmp);
        free(cmd);
    }
    return done_testing();
}
