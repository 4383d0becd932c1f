/*
 * hc_gpu.c - the GPU check: nvidia-smi run with a deadline, its CSV judged
 *
 * The parser (hc_gpu_parse) is pure so the unit tests feed it text; the
 * rest runs nvidia-smi as a child in a process group of its own that dies
 * with this process (so the runner killing the check kills it too), reads
 * its stdout and stderr until it exits or the inner deadline passes, then
 * kills the group and never waits for an unkillable child for more than a
 * second. docs/health.md lists the codes.
 */
#include "hc_gpu.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sbuf.h"
#include "common/xalloc.h"

#define CHECK "gpu"
#define EVIDENCE_TEXT 1500 /* bytes of tool output quoted as evidence */
#define OUTPUT_MAX (1 << 20)

enum field {
    F_INDEX,
    F_BUS,
    F_UUID,
    F_ECC_MODE,
    F_ECC_UE,
    F_RETIRED_PENDING,
    F_THERMAL,
    F_POWER_BRAKE,
    F_TEMP,
    F_POWER,
};

/* One GPU's row: pointers into a private copy of the line. */
struct row {
    char *line;
    char *f[HC_GPU_NFIELDS];
    int nf;
};

/* A value nvidia-smi gives when it has none: [N/A], [Not Supported],
 * [Unknown Error], N/A. */
static bool
is_na(const char *v)
{
    return v[0] == '[' || strcmp(v, "N/A") == 0 || v[0] == '\0';
}

static bool
gpu_lost(const char *v)
{
    return strcmp(v, "[GPU is lost]") == 0 || strcmp(v, "[GPU lost]") == 0;
}

static char *
trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* Splits a CSV line (nvidia-smi never quotes) into at most max fields. */
static int
split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;

    for (;;) {
        char *c = strchr(p, ',');

        if (c)
            *c = '\0';
        if (n < max)
            f[n] = trim(p);
        n++;
        if (!c)
            return n;
        p = c + 1;
    }
}

/* A non-negative number; false when v is not one ([N/A] included). */
static bool
parse_num(const char *v, double *out)
{
    char *end;

    if (is_na(v))
        return false;
    errno = 0;
    *out = strtod(v, &end);
    return errno == 0 && end != v && *end == '\0' && *out >= 0;
}

/* Yes/Active/1 = true, No/Not Active/0 = false; -1 unknown. */
static int
parse_flag(const char *v)
{
    if (strcasecmp(v, "Yes") == 0 || strcasecmp(v, "Active") == 0 ||
        strcmp(v, "1") == 0 || strcasecmp(v, "True") == 0)
        return 1;
    if (strcasecmp(v, "No") == 0 || strcasecmp(v, "Not Active") == 0 ||
        strcmp(v, "0") == 0 || strcasecmp(v, "False") == 0)
        return 0;
    return -1;
}

/* The first EVIDENCE_TEXT bytes of text, one line, for evidence. Caller
 * frees. */
static char *
quote(const char *text, size_t len)
{
    size_t n = len < EVIDENCE_TEXT ? len : EVIDENCE_TEXT;
    char *q = xstrndup(text ? text : "", text ? n : 0), *t;

    for (char *p = q; *p; p++)
        if (*p == '\n')
            *p = '|';
        else if (!isprint((unsigned char)*p))
            *p = '?';
    t = trim(q);
    memmove(q, t, strlen(t) + 1);
    if (*q == '\0')
        xstrset(&q, "(no output)");
    return q;
}

/* The result of nvidia-smi not answering (exit != 0, killed, missing). */
static void
tool_failed(const char *what, const char *text, size_t len, int exit_status,
    const struct hc_gpu_opts *o, struct hc_res *out)
{
    static const struct {
        int code;
        const char *id, *why;
    } fatal[] = {
        { 9, "gpu.driver", "the NVIDIA driver is not loaded" },
        { 15, "gpu.fallen_off_bus", "a GPU has fallen off the bus" },
        { 8, "gpu.power_cable",
            "a GPU's external power cables are not "
            "connected" },
        { 10, "gpu.interrupt", "a GPU has an interrupt issue" },
        { 12, "gpu.nvml", "the NVML library is missing" },
        { 14, "gpu.inforom", "a GPU's infoROM is corrupted" },
    };
    char *q = quote(text, len);

    if (exit_status == HC_EXIT_TIMEOUT) {
        hc_res_add(out, CHECK, PROTO_CHECK_TIMEOUT, "gpu.smi_timeout", "node",
            "%s did not answer before its deadline and was killed: %s", what,
            q);
    } else if (exit_status == HC_EXIT_NOEXEC) {
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.smi_missing", "node",
            "%s could not be started: %s", what, q);
    } else if (exit_status == 6 && o->expect > 0) {
        hc_res_add(out, CHECK, PROTO_CHECK_FAIL, "gpu.missing", "node",
            "%s found no GPU (exit 6), %d expected: %s", what, o->expect, q);
    } else if (exit_status <= HC_EXIT_SIGNAL(0)) {
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.smi_signal", "node",
            "%s was killed by signal %d: %s", what,
            HC_EXIT_SIGNAL(0) - exit_status, q);
    } else {
        for (size_t i = 0; i < ARRAY_SIZE(fatal); i++)
            if (fatal[i].code == exit_status) {
                hc_res_add(out, CHECK, PROTO_CHECK_FAIL, fatal[i].id, "node",
                    "%s exited %d: %s: %s", what, exit_status, fatal[i].why, q);
                free(q);
                return;
            }
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.smi_exit", "node",
            "%s exited %d: %s", what, exit_status, q);
    }
    free(q);
}

/* Rows of text, split; a row with the wrong number of fields is not kept
 * and the first such row is returned in *bad (caller frees). */
static struct row *
rows_parse(const char *text, size_t len, int want, size_t *n, char **bad)
{
    char *copy = xstrndup(text ? text : "", text ? len : 0), *save = NULL;
    struct row *rows = NULL;
    size_t cap = 0;

    *n = 0;
    *bad = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        struct row r = { 0 };
        char *l = trim(line);

        if (*l == '\0')
            continue;
        r.line = xstrdup(l);
        r.nf = split(r.line, r.f, want);
        if (r.nf != want) {
            if (*bad == NULL)
                *bad = xstrdup(l);
            free(r.line);
            continue;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            rows = xreallocarray(rows, cap, sizeof(*rows));
        }
        rows[(*n)++] = r;
    }
    free(copy);
    return rows;
}

static void
rows_free(struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].line);
    free(rows);
}

/* The remap row of the GPU at bus id bus; NULL if none. */
static const struct row *
remap_row(const struct row *remap, size_t nremap, const char *bus)
{
    for (size_t i = 0; i < nremap; i++)
        if (strcasecmp(remap[i].f[0], bus) == 0)
            return &remap[i];
    return NULL;
}

/* ECC: mode and uncorrectable count; required unless allow_ecc_off. */
static void
judge_ecc(const struct row *r, const char *scope, const struct hc_gpu_opts *o,
    struct hc_res *out)
{
    const char *mode = r->f[F_ECC_MODE], *ue = r->f[F_ECC_UE];
    bool on = strcasecmp(mode, "Enabled") == 0;
    double v;

    if (strcasecmp(mode, "Disabled") == 0)
        hc_res_add(out, CHECK,
            o->allow_ecc_off ? PROTO_CHECK_WARN : PROTO_CHECK_FAIL,
            "gpu.ecc_disabled", scope,
            "GPU %s (%s): ECC is disabled; memory errors go undetected",
            r->f[F_INDEX], r->f[F_BUS]);
    else if (!on && !o->allow_ecc_off)
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.ecc_unknown", scope,
            "GPU %s (%s): ECC mode is '%s'", r->f[F_INDEX], r->f[F_BUS], mode);
    if (parse_num(ue, &v)) {
        if (v > 0)
            hc_res_add(out, CHECK, PROTO_CHECK_FAIL, "gpu.ecc_uncorrectable",
                scope,
                "GPU %s (%s): %.0f uncorrectable ECC errors since the driver "
                "loaded",
                r->f[F_INDEX], r->f[F_BUS], v);
    } else if (!is_na(ue)) {
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.smi_output", scope,
            "GPU %s: uncorrectable ECC count '%s' is not a number",
            r->f[F_INDEX], ue);
    } else if (on && !hc_res_find(out, "gpu.ecc_unknown", scope)) {
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.ecc_unknown", scope,
            "GPU %s (%s): ECC is enabled but the uncorrectable count is '%s'",
            r->f[F_INDEX], r->f[F_BUS], ue);
    }
}

/* Slowdowns, temperature, retired pages and remapped rows. */
static void
judge_soft(const struct row *r, const struct row *rm, const char *scope,
    const struct hc_gpu_opts *o, struct hc_res *out)
{
    const char *i = r->f[F_INDEX];
    double t;

    if (parse_flag(r->f[F_RETIRED_PENDING]) == 1)
        hc_res_add(out, CHECK, PROTO_CHECK_WARN, "gpu.retired_pages_pending",
            scope,
            "GPU %s: retired pages are pending (a GPU reset applies "
            "them)",
            i);
    if (parse_flag(r->f[F_THERMAL]) == 1)
        hc_res_add(out, CHECK, PROTO_CHECK_WARN, "gpu.thermal_slowdown", scope,
            "GPU %s: hardware thermal slowdown is active", i);
    if (parse_flag(r->f[F_POWER_BRAKE]) == 1)
        hc_res_add(out, CHECK, PROTO_CHECK_WARN, "gpu.power_brake", scope,
            "GPU %s: hardware power brake slowdown is active", i);
    if (parse_num(r->f[F_TEMP], &t) && t >= o->temp_warn)
        hc_res_add(out, CHECK,
            t >= o->temp_fail ? PROTO_CHECK_FAIL : PROTO_CHECK_WARN,
            "gpu.temperature", scope, "GPU %s: %.0f C (warn at %d, fail at %d)",
            i, t, o->temp_warn, o->temp_fail);
    if (rm && parse_flag(rm->f[2]) == 1)
        hc_res_add(out, CHECK, PROTO_CHECK_FAIL, "gpu.remap_failure", scope,
            "GPU %s (%s): a row remapping failed: the GPU needs service", i,
            r->f[F_BUS]);
    if (rm && parse_flag(rm->f[1]) == 1)
        hc_res_add(out, CHECK, PROTO_CHECK_WARN, "gpu.remap_pending", scope,
            "GPU %s (%s): a row remapping is pending (a GPU reset applies it)",
            i, r->f[F_BUS]);
}

/* One GPU's results: its findings, or one PASS; numbers on each. */
static void
judge_gpu(const struct row *r, const struct row *remap, size_t nremap,
    const struct hc_gpu_opts *o, struct hc_res *out)
{
    char scope[PROTO_CHECK_SCOPE_MAX];
    size_t first = out->n;
    double v;

    snprintf(scope, sizeof(scope), "gpu:%s", r->f[F_INDEX]);
    for (int i = 0; i < HC_GPU_NFIELDS; i++)
        if (gpu_lost(r->f[i])) {
            hc_res_add(out, CHECK, PROTO_CHECK_FAIL, "gpu.lost", scope,
                "GPU %s (%s): nvidia-smi says the GPU is lost: %s",
                r->f[F_INDEX], r->f[F_BUS], r->f[i]);
            return;
        }
    judge_ecc(r, scope, o, out);
    judge_soft(r, remap_row(remap, nremap, r->f[F_BUS]), scope, o, out);
    if (out->n == first)
        hc_res_add(out, CHECK, PROTO_CHECK_PASS, "gpu.ok", scope,
            "GPU %s (%s, %s): ECC %s, no uncorrectable error, no slowdown",
            r->f[F_INDEX], r->f[F_BUS], r->f[F_UUID], r->f[F_ECC_MODE]);
    for (size_t k = first; k < out->n; k++) {
        if (parse_num(r->f[F_TEMP], &v))
            hc_res_number(&out->v[k], "temperature_c", v);
        if (parse_num(r->f[F_POWER], &v))
            hc_res_number(&out->v[k], "power_w", v);
        if (parse_num(r->f[F_ECC_UE], &v))
            hc_res_number(&out->v[k], "ecc_uncorrected", v);
    }
}

/* A valid GPU index: digits only. */
static bool
valid_index(const char *s)
{
    if (*s == '\0' || strlen(s) > 4)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* The count against the expected count, with the missing indexes. */
static void
judge_count(const struct row *rows, size_t n, const struct hc_gpu_opts *o,
    struct hc_res *out)
{
    struct proto_check_result *r;
    struct sbuf missing;

    sbuf_init(&missing);
    for (int want = 0; want < o->expect; want++) {
        bool seen = false;

        for (size_t i = 0; i < n && !seen; i++)
            seen = atoi(rows[i].f[F_INDEX]) == want;
        if (!seen)
            sbuf_addf(&missing, "%s%d", missing.len ? "," : "", want);
    }
    if ((int)n < o->expect)
        r = hc_res_add(out, CHECK, PROTO_CHECK_FAIL, "gpu.missing", "node",
            "%zu of %d expected GPUs answered; missing index %s", n, o->expect,
            missing.buf);
    else if ((int)n > o->expect)
        r = hc_res_add(out, CHECK, PROTO_CHECK_WARN, "gpu.extra", "node",
            "%zu GPUs answered, %d expected", n, o->expect);
    else
        r = hc_res_add(out, CHECK, PROTO_CHECK_PASS, "gpu.count", "node",
            "%zu of %d expected GPUs answered", n, o->expect);
    hc_res_number(r, "gpus", (double)n);
    hc_res_number(r, "expected", o->expect);
    sbuf_release(&missing);
}

/* The remapped-rows answer: its rows, or a node result saying why not. */
static struct row *
remap_rows(const char *remap, size_t len, int exit_status, size_t *n,
    const struct hc_gpu_opts *o, struct hc_res *out)
{
    struct row *rows;
    char *bad = NULL;

    *n = 0;
    if (remap == NULL)
        return NULL;
    if (exit_status != 0) {
        /* GPUs before Ampere have no row remapper: not a finding. */
        if (exit_status > 0 && memmem(remap, len, "Not Supported", 13) != NULL)
            return NULL;
        if (exit_status == HC_EXIT_TIMEOUT)
            tool_failed("nvidia-smi --query-remapped-rows", remap, len,
                exit_status, o, out);
        else
            hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.remap_query",
                "node", "nvidia-smi --query-remapped-rows ended with %d: %.*s",
                exit_status, (int)(len < 500 ? len : 500), remap);
        return NULL;
    }
    rows = rows_parse(remap, len, 3, n, &bad);
    if (bad)
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.remap_output", "node",
            "a remapped-rows row does not have 3 fields: '%.300s'", bad);
    free(bad);
    return rows;
}

void
hc_gpu_parse(const char *text, size_t len, int exit_status, const char *remap,
    size_t remap_len, int remap_exit, const struct hc_gpu_opts *opts,
    struct hc_res *out)
{
    struct row *rows, *rm;
    size_t n, nrm, good = 0;
    char *bad = NULL;

    if (exit_status != 0) {
        tool_failed("nvidia-smi --query-gpu", text, len, exit_status, opts,
            out);
        return;
    }
    rows = rows_parse(text, len, HC_GPU_NFIELDS, &n, &bad);
    rm = remap_rows(remap, remap_len, remap_exit, &nrm, opts, out);
    for (size_t i = 0; i < n; i++) {
        if (!valid_index(rows[i].f[F_INDEX])) {
            if (bad == NULL)
                bad = xasprintf("index '%s'", rows[i].f[F_INDEX]);
            free(rows[i].line);
            continue;
        }
        judge_gpu(&rows[i], rm, nrm, opts, out);
        rows[good++] = rows[i];
    }
    if (bad)
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.smi_output", "node",
            "nvidia-smi's output is truncated or malformed (%d fields "
            "expected): '%.300s'",
            HC_GPU_NFIELDS, bad);
    else if (good == 0 && opts->expect > 0)
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "gpu.smi_output", "node",
            "nvidia-smi exited 0 but printed no GPU row");
    else
        judge_count(rows, good, opts, out);
    free(bad);
    rows_free(rows, good);
    rows_free(rm, nrm);
}

/* Reads what is there on fd into sb (at most OUTPUT_MAX); false at EOF. */
static bool
drain(int fd, struct sbuf *sb)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));

    if (n > 0 && sb->len < OUTPUT_MAX)
        sbuf_add(sb, buf, (size_t)n);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

/* Reads fd (non-blocking) until it is empty or at EOF. */
static void
drain_all(int fd, struct sbuf *sb)
{
    char buf[4096];
    ssize_t n;

    while ((n = read(fd, buf, sizeof(buf))) > 0)
        if (sb->len < OUTPUT_MAX)
            sbuf_add(sb, buf, (size_t)n);
}

/* Kills pid and reaps it, waiting at most a second (a child stuck in the
 * kernel is left behind: the runner reports the check as it finds it). */
static int
kill_reap(pid_t pid)
{
    int st;

    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    for (int i = 0; i < 100; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return HC_EXIT_TIMEOUT;
        usleep(10000);
    }
    return HC_EXIT_TIMEOUT;
}

static pid_t
spawn(char *const argv[], int fds[2])
{
    int out[2], err[2];
    pid_t pid, parent = getpid();

    if (pipe2(out, O_CLOEXEC) < 0)
        return -1;
    if (pipe2(err, O_CLOEXEC) < 0) {
        close(out[0]);
        close(out[1]);
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        /* Its own group, so the deadline kills what it started too; and
         * it dies with this process if the runner kills it first. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(out[1], 1);
        dup2(err[1], 2);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    fds[0] = out[0];
    fds[1] = err[0];
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    return pid;
}

/*
 * Runs argv[0] (a path) with stdout into out and stderr into err until it
 * exits or deadline (monotonic ms) passes. Returns its exit status in the
 * hc_gpu_parse convention. A grandchild that keeps the pipes open does not
 * hold it up: once the child has exited, what is buffered is read and the
 * pipes are closed.
 */
static int
run_tool(char *const argv[], int64_t deadline, struct sbuf *out,
    struct sbuf *err)
{
    int fds[2], st, rc = HC_EXIT_NOEXEC;
    bool open_[2] = { true, true };
    pid_t pid;

    if (strchr(argv[0], '/') && access(argv[0], X_OK) < 0) {
        sbuf_addf(err, "%s: %s", argv[0], strerror(errno));
        return HC_EXIT_NOEXEC;
    }
    if ((pid = spawn(argv, fds)) < 0) {
        sbuf_addf(err, "cannot start %s: %s", argv[0], strerror(errno));
        return HC_EXIT_NOEXEC;
    }
    for (;;) {
        struct pollfd p[2] = { { fds[0], POLLIN, 0 }, { fds[1], POLLIN, 0 } };
        int64_t left = deadline - hc_mono_ms();
        pid_t w;

        if (left <= 0) {
            rc = kill_reap(pid);
            break;
        }
        p[0].fd = open_[0] ? fds[0] : -1;
        p[1].fd = open_[1] ? fds[1] : -1;
        poll(p, 2, left < 50 ? (int)left : 50);
        for (int i = 0; i < 2; i++)
            if (open_[i] && p[i].revents)
                open_[i] = drain(fds[i], i ? err : out);
        w = waitpid(pid, &st, WNOHANG);
        if (w == pid) {
            drain_all(fds[0], out);
            drain_all(fds[1], err);
            kill(-pid, SIGKILL); /* what it left behind, if anything */
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : HC_EXIT_SIGNAL(WTERMSIG(st));
            if (rc == 127 && strstr(err->buf, "cannot run"))
                rc = HC_EXIT_NOEXEC;
            break;
        }
    }
    close(fds[0]);
    close(fds[1]);
    return rc;
}

/* One query: argv built from `query`; out gets stdout, with stderr
 * appended when it failed. */
static int
query(const char *smi, const char *q, int64_t deadline, struct sbuf *text)
{
    char *argv[] = { (char *)smi, (char *)q,
        (char *)"--format=csv,noheader,nounits", NULL };
    struct sbuf err;
    int rc;

    sbuf_init(&err);
    rc = run_tool(argv, deadline, text, &err);
    if (rc != 0 && err.len) {
        sbuf_addstr(text, text->len ? "\n" : "");
        sbuf_add(text, err.buf, err.len);
    }
    sbuf_release(&err);
    return rc;
}

/* Both queries, falling back to clocks_throttle_reasons.* when the driver
 * does not know clocks_event_reasons.*; then the verdict. */
static void
gpu_check(const char *smi, const struct hc_gpu_opts *o, int64_t timeout_ms,
    struct hc_res *res)
{
    int64_t deadline = hc_mono_ms() + timeout_ms;
    struct sbuf text, remap;
    char *q;
    int rc, rrc = 0;

    sbuf_init(&text);
    sbuf_init(&remap);
    q = xasprintf("--query-gpu=" HC_GPU_FIELDS_FMT, "clocks_event_reasons",
        "clocks_event_reasons");
    rc = query(smi, q, deadline, &text);
    if (rc > 0 && strstr(text.buf, "clocks_event_reasons")) {
        free(q);
        q = xasprintf("--query-gpu=" HC_GPU_FIELDS_FMT,
            "clocks_throttle_reasons", "clocks_throttle_reasons");
        sbuf_reset(&text);
        rc = query(smi, q, deadline, &text);
    }
    if (rc == 0)
        rrc = query(smi, "--query-remapped-rows=" HC_GPU_REMAP_FIELDS, deadline,
            &remap);
    hc_gpu_parse(text.buf, text.len, rc, rc == 0 ? remap.buf : NULL, remap.len,
        rrc, o, res);
    free(q);
    sbuf_release(&text);
    sbuf_release(&remap);
}

static int
usage(const char *msg)
{
    fprintf(stderr,
        "lockstep-check gpu: %s\n"
        "usage: lockstep-check gpu --nvidia-smi PATH --expect N "
        "[--timeout-ms MS]\n"
        "       [--temp-warn C] [--temp-fail C] [--allow-ecc-off]\n",
        msg);
    return 2;
}

/* A whole number in [min, max] from an option's value. */
static bool
int_arg(const char *s, long min, long max, long *out)
{
    char *end;

    errno = 0;
    *out = strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && *out >= min && *out <= max;
}

int
hc_gpu_run(int argc, char **argv, cJSON *out)
{
    static const struct option longopts[] = {
        { "nvidia-smi", required_argument, NULL, 's' },
        { "expect", required_argument, NULL, 'e' },
        { "timeout-ms", required_argument, NULL, 't' },
        { "temp-warn", required_argument, NULL, 'w' },
        { "temp-fail", required_argument, NULL, 'f' },
        { "allow-ecc-off", no_argument, NULL, 'a' },
        { NULL, 0, NULL, 0 },
    };
    struct hc_gpu_opts o = { -1, 90, 100, false };
    const char *smi = NULL;
    long v, timeout = 10000;
    int64_t t0 = hc_mono_ms();
    struct hc_res res = { 0 };
    int c;

    char **av = xcalloc((size_t)argc + 2, sizeof(*av));
    int rc = 0;

    av[0] = (char *)"gpu";
    memcpy(av + 1, argv, (size_t)argc * sizeof(*av));
    optind = 0;
    while (
        rc == 0 && (c = getopt_long(argc + 1, av, "+", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            smi = optarg;
            break;
        case 'e':
            if (!int_arg(optarg, 0, 4096, &v))
                rc = usage("--expect: not a number of GPUs (0-4096)");
            o.expect = (int)v;
            break;
        case 't':
            if (!int_arg(optarg, 1, 3600000, &v))
                rc = usage("--timeout-ms: not a number of ms (1-3600000)");
            timeout = v;
            break;
        case 'w':
        case 'f':
            if (!int_arg(optarg, 0, 200, &v))
                rc = usage("--temp-warn/--temp-fail: not degrees (0-200)");
            *(c == 'w' ? &o.temp_warn : &o.temp_fail) = (int)v;
            break;
        case 'a':
            o.allow_ecc_off = true;
            break;
        default:
            rc = usage("unknown option");
        }
    }
    if (rc == 0 && optind != argc + 1)
        rc = usage("unexpected argument");
    if (rc == 0 && (smi == NULL || o.expect < 0))
        rc = usage("--nvidia-smi and --expect are required");
    free(av);
    if (rc != 0)
        return rc;
    if (o.expect == 0)
        hc_res_add(&res, CHECK, PROTO_CHECK_SKIPPED, "gpu.none_expected",
            "node", "no GPU is expected on this node (--expect 0)");
    else
        gpu_check(smi, &o, timeout, &res);
    hc_res_to_json(&res, hc_mono_ms() - t0, out);
    hc_res_release(&res);
    return 0;
}
