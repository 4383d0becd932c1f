/*
 * hc_kmsg.c - the kernel log check: /dev/kmsg read from a cursor, known
 * events first, every other line judged by its template
 *
 * A record is "PRI,SEQ,USEC,FLAGS[,...];MESSAGE" followed by continuation
 * lines that begin with a space (the device's dictionary, ignored). From
 * the device one read() returns one record, EAGAIN is the end and EPIPE
 * says the ring overwrote records; a regular file is read line by line.
 * Lost records show as a jump in the sequence numbers after the cursor:
 * one kmsg.gap finding counts them. See hc_kmsg.h and docs/health.md.
 */
#include "hc_kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "common/sbuf.h"
#include "common/xalloc.h"
#include "hc_kmsg_event.h"
#include "hc_kmsg_norm.h"
#include "hc_xid.h"

#define CHECK "kmsg"
#define STATE_FILE "kmsg-state.json"
#define RECORD_MAX 8192 /* bytes of a record read; the rest is dropped */
/* A sequence number or a time past this is no kernel's (they count from
 * boot), and would not survive the state file's JSON exactly. */
#define RECORD_NUM_MAX (UINT64_C(1) << 53)

struct finding {
    enum proto_check_status status;
    char *code, *scope, *evidence;
    int64_t count, fresh; /* occurrences this boot, and this run */
};

struct scan {
    const struct hc_kmsg_opts *o;
    char *boot_id; /* of the state: the cursor's boot */
    uint64_t seq;  /* last record read */
    bool have_seq;
    struct finding *f;
    size_t nf;
    struct hc_tmplset allow, base, learned;
    struct hc_xid_table xids;
    int block_left;     /* records a block may still absorb */
    uint64_t block_end; /* kernel time (us) after which it is over */
    int64_t records, judged, malformed, skipped;
    uint64_t first_seq;
    char *state_note; /* why the state was started afresh, or NULL */
};

/* a + b for counts of at least 1, saturating at RECORD_NUM_MAX. */
static int64_t
count_add(int64_t a, int64_t b)
{
    return b >= (int64_t)RECORD_NUM_MAX - a ? (int64_t)RECORD_NUM_MAX : a + b;
}

/* Counts n occurrences of the finding (code, scope), created with this
 * evidence when new; past HC_KMSG_FINDINGS_MAX distinct findings the
 * overflow finding counts them instead. */
static void
raise_finding(struct scan *s, enum proto_check_status st, const char *code,
    const char *scope, const char *evidence, int64_t n)
{
    struct finding *f;

    for (size_t i = 0; i < s->nf; i++) {
        f = &s->f[i];
        if (strcmp(f->code, code) == 0 && strcmp(f->scope, scope) == 0) {
            /* Counts stop at the largest a report carries exactly. */
            f->count = count_add(f->count, n);
            f->fresh = count_add(f->fresh, n);
            if (st > f->status && st <= PROTO_CHECK_FAIL)
                f->status = st; /* FAIL outranks WARN outranks PASS */
            return;
        }
    }
    if (s->nf >= HC_KMSG_FINDINGS_MAX) {
        if (strcmp(code, "kmsg.findings_overflow") != 0)
            raise_finding(s, PROTO_CHECK_WARN, "kmsg.findings_overflow", "node",
                "more distinct findings than kept; this counts the rest", n);
        return;
    }
    s->f = xreallocarray(s->f, s->nf + 2, sizeof(*s->f));
    f = &s->f[s->nf++];
    f->status = st;
    f->code = xstrdup(code);
    f->scope = xstrdup(scope);
    f->evidence = xstrndup(evidence, PROTO_CHECK_EVIDENCE_MAX - 1);
    f->count = n;
    f->fresh = n;
}

static void
block_close(struct scan *s)
{
    s->block_left = 0;
}

/* An unknown template: one finding per template, named by its hash. */
static void
judge_template(struct scan *s, const char *msg)
{
    char t[HC_KMSG_TMPL_MAX], scope[32], *ev;

    s->judged++;
    hc_kmsg_normalise(msg, strlen(msg), t, sizeof(t));
    if (hc_tmplset_has(&s->allow, t) || hc_tmplset_has(&s->base, t))
        return;
    if (s->o->learn) {
        hc_tmplset_add(&s->learned, t);
        return;
    }
    snprintf(scope, sizeof(scope), "tmpl:%08x", hc_kmsg_hash(t));
    ev = xasprintf("%.700s | template: %.700s", msg, t);
    raise_finding(s, PROTO_CHECK_WARN, "kmsg.unknown", scope, ev, 1);
    free(ev);
}

/* One message: a known event, a line of an open block, or a template. */
static void
judge(struct scan *s, int pri, uint64_t usec, const char *msg)
{
    struct hc_kev ev;

    if (s->block_left > 0 && usec > s->block_end)
        block_close(s);
    if (pri >> 3 == 0 && hc_kmsg_event(msg, &s->xids, &ev)) {
        if (ev.finding && !s->o->learn)
            raise_finding(s, ev.status, ev.code, ev.scope, msg, 1);
        if (ev.block_start) {
            s->block_left = HC_KEV_BLOCK_LINES;
            s->block_end = usec + HC_KEV_BLOCK_US;
        } else if (ev.block_end) {
            block_close(s);
        }
        return;
    }
    if (s->block_left > 0) {
        if (--s->block_left == 0 || hc_kmsg_block_end(msg))
            block_close(s);
        return;
    }
    if ((pri & 7) <= s->o->max_level)
        judge_template(s, msg);
}

/* A field of a record: decimal digits only, then sep (sscanf's %llu would
 * take blanks and a sign, and "-1" would become a huge number). */
static bool
parse_field(const char **p, char sep, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    const char *q = *p;

    if (*q < '0' || *q > '9')
        return false;
    for (; *q >= '0' && *q <= '9'; q++) {
        v = v * 10 + (uint64_t)(*q - '0');
        if (v > max)
            return false;
    }
    if (*q != sep)
        return false;
    *p = q + 1;
    *out = v;
    return true;
}

/* Parses "PRI,SEQ,USEC,FLAGS[,...];MESSAGE"; false when it is not one. */
static bool
parse_record(const char *line, int *pri, uint64_t *seq, uint64_t *usec,
    const char **msg)
{
    uint64_t p;

    if (!parse_field(&line, ',', 1023, &p) ||
        !parse_field(&line, ',', RECORD_NUM_MAX, seq) ||
        !parse_field(&line, ',', RECORD_NUM_MAX, usec))
        return false;
    if ((*msg = strchr(line, ';')) == NULL)
        return false;
    (*msg)++;
    *pri = (int)p;
    return true;
}

/* One record's first line (without its newline). */
static void
record(struct scan *s, const char *line)
{
    char msg[HC_KMSG_LINE_MAX + 1], ev[160];
    const char *m;
    uint64_t seq, usec;
    int pri;

    if (!parse_record(line, &pri, &seq, &usec, &m)) {
        s->malformed++;
        return;
    }
    if (s->have_seq && seq <= s->seq) {
        s->skipped++;
        return;
    }
    if (s->have_seq && seq > s->seq + 1 && !s->o->learn) {
        snprintf(ev, sizeof(ev),
            "the kernel's ring buffer overwrote records %" PRIu64 "..%" PRIu64
            " before they were read",
            s->seq + 1, seq - 1);
        raise_finding(s, PROTO_CHECK_WARN, "kmsg.gap", "node", ev,
            (int64_t)(seq - s->seq - 1));
    }
    if (s->records++ == 0)
        s->first_seq = seq;
    s->seq = seq;
    s->have_seq = true;
    snprintf(msg, sizeof(msg), "%s", m);
    judge(s, pri, usec, msg);
}

/* /dev/kmsg: one record per read(); EAGAIN is the end of what is there. */
static int
read_device(struct scan *s, int fd)
{
    char buf[RECORD_MAX + 1];

    for (;;) {
        ssize_t n = read(fd, buf, RECORD_MAX);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EPIPE)
            continue; /* overwritten: the sequence jump counts them */
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        record(s, buf);
    }
}

/* A regular file in the same format, one line at a time (cut at
 * RECORD_MAX bytes); lines that begin with a space continue a record. */
static int
read_file(struct scan *s, int fd)
{
    char line[RECORD_MAX + 2];
    FILE *f = fdopen(fd, "r");
    int c;

    if (f == NULL)
        return -errno;
    while (fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);

        if (n > 0 && line[n - 1] != '\n')
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == ' ' || line[0] == '\0')
            continue;
        record(s, line);
    }
    c = ferror(f) ? -EIO : 0;
    fclose(f);
    return c;
}

static int
read_source(struct scan *s, char **why)
{
    struct stat st;
    int fd = open(s->o->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), rc;

    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = -errno;
        *why = xasprintf("cannot read %s: %s", s->o->path, strerror(-rc));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (S_ISCHR(st.st_mode)) {
        rc = read_device(s, fd);
        close(fd);
    } else {
        rc = read_file(s, fd); /* closes fd */
    }
    if (rc < 0)
        *why = xasprintf("reading %s: %s", s->o->path, strerror(-rc));
    return rc;
}

static char *
state_path(const struct scan *s, const char *suffix)
{
    return xasprintf("%s/" STATE_FILE "%s", s->o->state_dir, suffix);
}

static int
load_finding(const cJSON *j, struct finding *f)
{
    static const char *const keys[] = { "status", "code", "scope", "evidence",
        "count", NULL };
    char *status = NULL;
    int rc;

    memset(f, 0, sizeof(*f));
    if ((rc = jsonx_check_keys(j, keys, NULL)) ||
        (rc = jsonx_get_str(j, "status", true, 16, &status, NULL)) ||
        (rc = proto_check_status_parse(status, &f->status)) ||
        (rc = jsonx_get_str(j, "code", true, PROTO_CHECK_CODE_MAX, &f->code,
             NULL)) ||
        (rc = jsonx_get_str(j, "scope", true, PROTO_CHECK_SCOPE_MAX, &f->scope,
             NULL)) ||
        (rc = jsonx_get_str(j, "evidence", true, PROTO_CHECK_EVIDENCE_MAX,
             &f->evidence, NULL)) ||
        (rc = jsonx_get_int(j, "count", true, 1, INT64_MAX, &f->count, NULL))) {
        free(f->code);
        free(f->scope);
        free(f->evidence);
    }
    free(status);
    return rc;
}

/* The cursor and open findings of this boot from DIR/kmsg-state.json;
 * a missing file, another boot or an unreadable file start afresh. */
static void
state_load(struct scan *s)
{
    char *path = state_path(s, ""), *text = NULL;
    const cJSON *arr, *item;
    cJSON *j = NULL;
    int64_t seq = -1;
    FILE *f = fopen(path, "re");
    long n;

    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
        n < (16 << 20) && fseek(f, 0, SEEK_SET) == 0) {
        text = xcalloc((size_t)n + 1, 1);
        if (fread(text, 1, (size_t)n, f) != (size_t)n ||
            jsonx_parse(text, (size_t)n, &j, NULL) < 0 ||
            jsonx_get_str(j, "boot_id", true, 64, &s->boot_id, NULL) < 0 ||
            jsonx_get_int(j, "seq", false, -1, INT64_MAX, &seq, NULL) < 0)
            s->state_note = xasprintf("%s is unreadable: started afresh", path);
    }
    if (f)
        fclose(f);
    if (s->boot_id && strcmp(s->boot_id, s->o->boot_id) == 0 &&
        !s->state_note) {
        s->have_seq = seq >= 0;
        s->seq = seq >= 0 ? (uint64_t)seq : 0;
        arr = cJSON_GetObjectItemCaseSensitive(j, "findings");
        cJSON_ArrayForEach(item, arr) {
            if (s->nf >= HC_KMSG_FINDINGS_MAX + 1)
                break;
            s->f = xreallocarray(s->f, s->nf + 2, sizeof(*s->f));
            if (load_finding(item, &s->f[s->nf]) == 0)
                s->nf++;
        }
    }
    xstrset(&s->boot_id, s->o->boot_id);
    cJSON_Delete(j);
    free(text);
    free(path);
}

/* Writes text to path atomically: a temporary file, fsync, rename. */
static int
write_atomic(const char *path, const char *tmp, const char *text)
{
    size_t len = strlen(text);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = 0;

    if (fd < 0)
        return -errno;
    if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
        rc = errno ? -errno : -EIO;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

static int
state_save(struct scan *s, char **why)
{
    char *path = state_path(s, ""), *tmp = state_path(s, ".tmp"), *text;
    cJSON *j = cJSON_CreateObject(), *arr;
    int rc, dfd;

    jsonx_add_int(j, "version", 1);
    jsonx_add_str(j, "boot_id", s->boot_id);
    if (s->have_seq)
        jsonx_add_int(j, "seq", (int64_t)s->seq);
    arr = cJSON_AddArrayToObject(j, "findings");
    for (size_t i = 0; i < s->nf; i++) {
        cJSON *o = cJSON_CreateObject();

        jsonx_add_str(o, "status", proto_check_status_str(s->f[i].status));
        jsonx_add_str(o, "code", s->f[i].code);
        jsonx_add_str(o, "scope", s->f[i].scope);
        jsonx_add_str(o, "evidence", s->f[i].evidence);
        jsonx_add_int(o, "count", s->f[i].count);
        cJSON_AddItemToArray(arr, o);
    }
    text = jsonx_print(j);
    rc = write_atomic(path, tmp, text);
    if (rc == 0 && (dfd = open(s->o->state_dir,
                        O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        fsync(dfd);
        close(dfd);
    }
    if (rc < 0)
        *why = xasprintf("cannot write %s: %s", path, strerror(-rc));
    cJSON_Delete(j);
    free(text);
    free(tmp);
    free(path);
    return rc;
}

/* --learn FILE: the templates of this log the allowlist does not hold. */
static int
learn_write(struct scan *s, struct hc_res *out)
{
    char **v = hc_tmplset_sorted(&s->learned), *tmp, *text;
    struct sbuf sb;
    int rc;

    sbuf_init(&sb);
    sbuf_addf(&sb,
        "# lockstep kmsg baseline: the templates of %s at level <= %d that\n"
        "# the allowlist does not hold (lockstep-check kmsg --learn).\n"
        "# Learned on a known-good node; review before use.\n",
        s->o->path, s->o->max_level);
    for (size_t i = 0; v[i]; i++)
        sbuf_addf(&sb, "%s\n", v[i]);
    tmp = xasprintf("%s.tmp", s->o->learn);
    text = sbuf_detach(&sb, NULL);
    rc = write_atomic(s->o->learn, tmp, text);
    if (rc < 0)
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "kmsg.learn", "node",
            "cannot write %s: %s", s->o->learn, strerror(-rc));
    else
        hc_res_number(hc_res_add(out, CHECK, PROTO_CHECK_PASS, "kmsg.learned",
                          "node",
                          "%zu templates of %" PRId64 " records written to %s",
                          s->learned.n, s->records, s->o->learn),
            "templates", (double)s->learned.n);
    free(v);
    free(tmp);
    free(text);
    return rc;
}

/* Every open finding of the boot, and the scan's own result. */
static void
report(struct scan *s, struct hc_res *out, const char *note)
{
    struct proto_check_result *r;

    r = hc_res_add(out, CHECK, PROTO_CHECK_PASS, "kmsg.scan", "node",
        "read %" PRId64 " new records of boot %s (sequence %" PRIu64
        "..%" PRIu64 "); %zu open findings%s%s",
        s->records, s->boot_id, s->records ? s->first_seq : s->seq, s->seq,
        s->nf, note ? "; " : "", note ? note : "");
    hc_res_number(r, "records", (double)s->records);
    hc_res_number(r, "judged", (double)s->judged);
    hc_res_number(r, "malformed", (double)s->malformed);
    hc_res_number(r, "seq", (double)s->seq);
    hc_res_number(r, "findings", (double)s->nf);
    for (size_t i = 0; i < s->nf; i++) {
        struct finding *f = &s->f[i];

        r = hc_res_add(out, CHECK, f->status, f->code, f->scope, "%s",
            f->evidence);
        r->count = f->count;
        hc_res_number(r, "new", (double)f->fresh);
    }
}

/* The allowlist, baseline and XID table; false (with a result) when one
 * cannot be read, so nothing is read past the cursor unjudged. */
static bool
load_inputs(struct scan *s, struct hc_res *out, char **note)
{
    char *why = NULL;
    int rc;

    hc_xid_table_init(&s->xids);
    if (s->o->xid_table &&
        hc_xid_table_load(&s->xids, s->o->xid_table, &why) < 0) {
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "kmsg.xid_table", "node",
            "%s", why);
        free(why);
        return false;
    }
    if (s->o->allowlist &&
        hc_tmplset_load(&s->allow, s->o->allowlist, &why) < 0) {
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "kmsg.allowlist", "node",
            "%s", why);
        free(why);
        return false;
    }
    if (s->o->baseline && !s->o->learn &&
        (rc = hc_tmplset_load(&s->base, s->o->baseline, &why)) < 0) {
        if (rc != -ENOENT) {
            hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "kmsg.baseline", "node",
                "%s", why);
            free(why);
            return false;
        }
        *note = xasprintf("no baseline yet (%s)", why);
        free(why);
    }
    return true;
}

static void
scan_release(struct scan *s)
{
    for (size_t i = 0; i < s->nf; i++) {
        free(s->f[i].code);
        free(s->f[i].scope);
        free(s->f[i].evidence);
    }
    free(s->f);
    free(s->boot_id);
    free(s->state_note);
    hc_tmplset_release(&s->allow);
    hc_tmplset_release(&s->base);
    hc_tmplset_release(&s->learned);
    hc_xid_table_release(&s->xids);
}

int
hc_kmsg_check(const struct hc_kmsg_opts *o, struct hc_res *out)
{
    struct scan s = { .o = o };
    char *why = NULL, *note = NULL;
    int rc = 0;

    if (!load_inputs(&s, out, &note)) {
        rc = -EINVAL;
        goto done;
    }
    if (!o->learn) {
        mkdir(o->state_dir, 0700); /* its parent is the agent's */
        state_load(&s);
    } else
        s.boot_id = xstrdup(o->boot_id);
    if ((rc = read_source(&s, &why)) < 0) {
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "kmsg.read", "node", "%s",
            why);
        goto done;
    }
    if (o->learn) {
        rc = learn_write(&s, out);
        goto done;
    }
    if (s.records == 0 && s.malformed > 0)
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "kmsg.format", "node",
            "%s: %" PRId64 " lines, none a kmsg record "
            "(PRI,SEQ,USEC,FLAGS;MESSAGE)",
            o->path, s.malformed);
    if ((rc = state_save(&s, &why)) < 0)
        hc_res_add(out, CHECK, PROTO_CHECK_UNKNOWN, "kmsg.state", "node",
            "%s: the same records may be counted again", why);
    report(&s, out, note ? note : s.state_note);
done:
    free(why);
    free(note);
    scan_release(&s);
    return rc;
}

static int
usage(const char *msg)
{
    fprintf(stderr,
        "lockstep-check kmsg: %s\n"
        "usage: lockstep-check kmsg --path P --state-dir DIR "
        "[--allowlist F] [--baseline F]\n"
        "       [--xid-table F] [--boot-id-file F] [--max-level N]\n"
        "       lockstep-check kmsg --learn FILE --path P [--allowlist F]\n",
        msg);
    return 2;
}

/* The running boot's id from path (one line). */
static char *
read_boot_id(const char *path)
{
    char buf[128] = "";
    FILE *f = fopen(path, "re");

    if (f == NULL)
        return NULL;
    if (fgets(buf, sizeof(buf), f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, " \t\r\n")] = '\0';
    return buf[0] ? xstrdup(buf) : NULL;
}

/* Options into o; 0, or 2 after a usage message. */
static int
parse_opts(int argc, char **av, struct hc_kmsg_opts *o, const char **bootf)
{
    static const struct option longopts[] = {
        { "path", required_argument, NULL, 'p' },
        { "state-dir", required_argument, NULL, 'd' },
        { "allowlist", required_argument, NULL, 'a' },
        { "baseline", required_argument, NULL, 'b' },
        { "xid-table", required_argument, NULL, 'x' },
        { "boot-id-file", required_argument, NULL, 'i' },
        { "max-level", required_argument, NULL, 'l' },
        { "learn", required_argument, NULL, 'L' },
        { NULL, 0, NULL, 0 },
    };
    char *end;
    int c;

    optind = 0;
    while ((c = getopt_long(argc, av, "+", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            o->path = optarg;
            break;
        case 'd':
            o->state_dir = optarg;
            break;
        case 'a':
            o->allowlist = optarg;
            break;
        case 'b':
            o->baseline = optarg;
            break;
        case 'x':
            o->xid_table = optarg;
            break;
        case 'i':
            *bootf = optarg;
            break;
        case 'L':
            o->learn = optarg;
            break;
        case 'l':
            o->max_level = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || o->max_level < 0 ||
                o->max_level > 7)
                return usage("--max-level: a level 0 (emerg) to 7 (debug)");
            break;
        default:
            return usage("unknown option");
        }
    }
    if (optind != argc)
        return usage("unexpected argument");
    if (o->path == NULL)
        return usage("--path is required");
    if (o->state_dir == NULL && o->learn == NULL)
        return usage("--state-dir is required (or --learn FILE)");
    return 0;
}

int
hc_kmsg_run(int argc, char **argv, cJSON *out)
{
    struct hc_kmsg_opts o = { .max_level = 4 };
    const char *bootf = "/proc/sys/kernel/random/boot_id";
    char **av = xcalloc((size_t)argc + 2, sizeof(*av)), *boot;
    int64_t t0 = hc_mono_ms();
    struct hc_res res = { 0 };
    int rc;

    av[0] = (char *)"kmsg";
    memcpy(av + 1, argv, (size_t)argc * sizeof(*av));
    rc = parse_opts(argc + 1, av, &o, &bootf);
    free(av);
    if (rc != 0)
        return rc;
    boot = read_boot_id(bootf);
    o.boot_id = boot ? boot : "unknown";
    if (boot == NULL)
        hc_res_add(&res, CHECK, PROTO_CHECK_WARN, "kmsg.boot_id", "node",
            "cannot read the boot id from %s: the cursor cannot tell a "
            "reboot",
            bootf);
    hc_kmsg_check(&o, &res);
    hc_res_to_json(&res, hc_mono_ms() - t0, out);
    hc_res_release(&res);
    free(boot);
    return 0;
}
