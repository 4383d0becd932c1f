/*
 * lockstep.c - liblockstep, the C rank SDK (lockstep.h has the contract)
 *
 * One process-wide state behind one lock. The files and their formats are
 * those of the Python SDK (sdk/python/lockstep/__init__.py), which
 * docs/cadence.md describes: the progress file is one JSON object
 * replaced by rename, the commit file one "<step> <attempt>" line per
 * commit. Self-contained: libc, and common/ctlfile.c built in.
 */
#include "lockstep.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/ctlfile.h"

#define PROGRESS_INTERVAL_NS 100000000LL /* 100 ms between writes */
#define ACKS_MAX 32        /* acknowledgements kept in the progress file */
#define STEP_WINDOW 200    /* steps behind step_p50_us / step_p99_us */
#define PENDING_MAX 64     /* directives read, not yet carried out */
#define HANDLED_MAX 256    /* seqs remembered as carried out */
#define CHECKPOINTS_MAX 32 /* checkpoints returned, not yet committed */
#define NEVER INT64_MAX    /* no directive pending */
#define SECTIONS_MAX 16    /* timed sections per rank (PROTO_SECTIONS_MAX) */
#define SECTION_NAME_MAX 32

struct ack {
    uint64_t seq;
    int64_t step;
    int64_t ms;
    uint32_t kind;
};

/* A timed section (lockstep_timed_begin): the time inside it in the
 * current step and its per-step totals over the last STEP_WINDOW steps. */
struct section {
    char name[SECTION_NAME_MAX + 1];
    int64_t acc_ns;          /* inside, this step (closed entries) */
    int64_t start_ns;        /* the outermost entry's */
    int depth;               /* entries open */
    bool touched;            /* entered in this step */
    int64_t us[STEP_WINDOW]; /* ring */
    size_t nus, us_next;
};

struct pending_ckpt {
    uint64_t seq;
    int64_t step;
    int64_t t_ns;
};

static struct {
    bool on;
    char *progress, *commit;
    int64_t attempt;
    int64_t last_step, written_step; /* -2: none */
    int64_t last_write_ns;           /* 0: never (the -1 does not count) */
    int64_t prev_step_ns;            /* 0: no step() yet */
    int64_t step_us[STEP_WINDOW];    /* ring */
    size_t nstep_us, step_us_next;
    struct ack acks[ACKS_MAX]; /* ring, oldest at acks_next when full */
    size_t nacks, acks_next;
    const void *ctl;
    uint64_t ctl_gen; /* ctlfile_gen the pending set is consistent with */
    struct ctlfile_entry pending[PENDING_MAX];
    size_t npending;
    int64_t next_due;
    uint64_t handled[HANDLED_MAX];
    size_t nhandled;
    uint64_t handled_floor; /* every seq <= this counts as handled */
    struct pending_ckpt ckpts[CHECKPOINTS_MAX];
    size_t nckpts;
    struct section sections[SECTIONS_MAX];
    size_t nsections;
    unsigned warned; /* bits: what was warned about */
} ls;

static pthread_mutex_t ls_lock = PTHREAD_MUTEX_INITIALIZER;

enum {
    WARN_PROGRESS = 1,
    WARN_COMMIT = 2,
    WARN_CONTROL = 4,
    WARN_SECTIONS = 8
};

static void __attribute__((format(printf, 2, 3)))
ls_warn(unsigned what, const char *fmt, ...)
{
    va_list ap;

    if (ls.warned & what)
        return;
    ls.warned |= what;
    fputs("lockstep: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (continuing without it)\n", stderr);
}

static int64_t
ls_now_ns(int clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The variable as an int64, or -1 when unset, empty or not a number. */
static int64_t
ls_int_env(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long long x;

    if (v == NULL || *v == '\0')
        return -1;
    errno = 0;
    x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < 0)
        return -1;
    return x;
}

static int
ls_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

static int
ls_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Nearest rank, as the Python SDK: the ceil(p% of len)-th smallest of
 * times[0..n), n > 0. */
static void
ls_percentiles(const int64_t *times, size_t n, int64_t *p50, int64_t *p99)
{
    int64_t v[STEP_WINDOW];

    memcpy(v, times, n * sizeof(v[0]));
    qsort(v, n, sizeof(v[0]), ls_cmp_i64);
    *p50 = v[(50 * n + 99) / 100 - 1];
    *p99 = v[(99 * n + 99) / 100 - 1];
}

/* buf := the progress record of step n; its length, or -1 when it does
 * not fit. */
static int
ls_progress_json(char *buf, size_t len, int64_t n)
{
    size_t off = 0, first = ls.nacks < ACKS_MAX ? 0 : ls.acks_next, nsec = 0;
    int64_t p50, p99;
    int w;

#define LS_PUT(...)                                                            \
    do {                                                                       \
        w = snprintf(buf + off, len - off, __VA_ARGS__);                       \
        if (w < 0 || (size_t)w >= len - off)                                   \
            return -1;                                                         \
        off += (size_t)w;                                                      \
    } while (0)

    LS_PUT("{\"step\": %" PRId64 ", \"time_ms\": %" PRId64
           ", \"attempt\": %" PRId64 ", \"pid\": %d",
        n, ls_now_ns(CLOCK_REALTIME) / 1000000, ls.attempt, (int)getpid());
    if (ls.nacks > 0) {
        LS_PUT(", \"acks\": [");
        for (size_t i = 0; i < ls.nacks; i++) {
            const struct ack *a = &ls.acks[(first + i) % ACKS_MAX];

            LS_PUT("%s[%" PRIu64 ", %" PRId64 ", %" PRId64 "]", i ? ", " : "",
                a->seq, a->step, a->ms);
        }
        LS_PUT("]");
    }
    if (ls.nstep_us > 0) {
        ls_percentiles(ls.step_us, ls.nstep_us, &p50, &p99);
        LS_PUT(", \"step_p50_us\": %" PRId64 ", \"step_p99_us\": %" PRId64, p50,
            p99);
    }
    for (size_t i = 0; i < ls.nsections; i++) {
        const struct section *sec = &ls.sections[i];

        if (sec->nus == 0)
            continue;
        ls_percentiles(sec->us, sec->nus, &p50, &p99);
        LS_PUT("%s\"%s\": {\"p50_us\": %" PRId64 ", \"p99_us\": %" PRId64
               ", \"n\": %zu}",
            nsec++ ? ", " : ", \"sections\": {", sec->name, p50, p99, sec->nus);
    }
    if (nsec > 0)
        LS_PUT("}");
    LS_PUT("}");
#undef LS_PUT
    return (int)off;
}

/* Replace the progress file with step n (-1: none yet). */
static void
ls_write_progress(int64_t n)
{
    char buf[8192], tmp[4096];
    int len, fd;
    bool ok;

    len = ls_progress_json(buf, sizeof(buf), n);
    if (len < 0 || snprintf(tmp, sizeof(tmp), "%s.%d.tmp", ls.progress,
                       (int)getpid()) >= (int)sizeof(tmp))
        return;
    /* Per process: two processes of a rank never share a temporary file. */
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        ls_warn(WARN_PROGRESS, "cannot write progress file %s: %s", ls.progress,
            strerror(errno));
        return;
    }
    ok = write(fd, buf, (size_t)len) == len;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, ls.progress) < 0) {
        ls_warn(WARN_PROGRESS, "cannot write progress file %s: %s", ls.progress,
            strerror(errno));
        unlink(tmp);
        return;
    }
    if (n >= 0)
        ls.last_write_ns = ls_now_ns(CLOCK_MONOTONIC);
    ls.written_step = n;
}

static void
ls_ack(uint64_t seq, uint32_t kind, int64_t step, int64_t ms)
{
    ls.acks[ls.acks_next] = (struct ack){ seq, step, ms, kind };
    ls.acks_next = (ls.acks_next + 1) % ACKS_MAX;
    if (ls.nacks < ACKS_MAX)
        ls.nacks++;
}

static bool
ls_handled(uint64_t seq)
{
    if (seq <= ls.handled_floor)
        return true;
    for (size_t i = 0; i < ls.nhandled; i++)
        if (ls.handled[i] == seq)
            return true;
    for (size_t i = 0; i < ls.npending; i++)
        if (ls.pending[i].seq == seq)
            return true;
    return false;
}

/* Remember seq as carried out. Bounded, as in the Python SDK: when full,
 * the older half is dropped and everything up to it counts as handled
 * (seqs grow; a directive is read long before HANDLED_MAX newer ones). */
static void
ls_handle(uint64_t seq)
{
    size_t keep = HANDLED_MAX / 2;

    if (ls.nhandled == HANDLED_MAX) {
        qsort(ls.handled, ls.nhandled, sizeof(ls.handled[0]), ls_cmp_u64);
        if (ls.handled[keep - 1] > ls.handled_floor)
            ls.handled_floor = ls.handled[keep - 1];
        memmove(ls.handled, ls.handled + keep,
            (HANDLED_MAX - keep) * sizeof(ls.handled[0]));
        ls.nhandled = HANDLED_MAX - keep;
    }
    ls.handled[ls.nhandled++] = seq;
}

/* The generation moved: add the complete slots not yet seen to the
 * pending set (directives never retract). */
static void
ls_ctl_reload(void)
{
    struct ctlfile_entry e[CTLFILE_SLOTS];
    uint64_t gen;
    size_t n = ctlfile_read(ls.ctl, (uint64_t)ls.attempt, e, CTLFILE_SLOTS,
        &gen);

    for (size_t i = 0; i < n; i++) {
        if (ls_handled(e[i].seq))
            continue;
        if ((e[i].kind != CTLFILE_KIND_GC &&
                e[i].kind != CTLFILE_KIND_CHECKPOINT) ||
            ls.npending == PENDING_MAX) {
            ls_handle(e[i].seq);
            continue;
        }
        ls.pending[ls.npending++] = e[i];
        if (e[i].step < ls.next_due)
            ls.next_due = e[i].step;
    }
    /* 0: the writer moved while we read; read again at the next step. */
    if (gen != 0)
        ls.ctl_gen = gen;
}

static int
ls_cmp_due(const void *a, const void *b)
{
    const struct ctlfile_entry *x = a, *y = b;

    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Carry out the pending directives due at step n; their flags. */
static unsigned
ls_act(int64_t n)
{
    struct ctlfile_entry due[PENDING_MAX];
    size_t ndue = 0, keep = 0;
    unsigned flags = 0;
    int64_t now = ls_now_ns(CLOCK_MONOTONIC);

    ls.next_due = NEVER;
    for (size_t i = 0; i < ls.npending; i++) {
        if (ls.pending[i].step <= n) {
            due[ndue++] = ls.pending[i];
            continue;
        }
        ls.pending[keep++] = ls.pending[i];
        if (ls.pending[i].step < ls.next_due)
            ls.next_due = ls.pending[i].step;
    }
    ls.npending = keep;
    qsort(due, ndue, sizeof(due[0]), ls_cmp_due);
    for (size_t i = 0; i < ndue; i++) {
        ls_handle(due[i].seq);
        if (due[i].kind == CTLFILE_KIND_GC) {
            flags |= LOCKSTEP_ACT_GC;
            ls_ack(due[i].seq, CTLFILE_KIND_GC, n, 0);
            continue;
        }
        flags |= LOCKSTEP_ACT_CHECKPOINT;
        if (ls.nckpts == CHECKPOINTS_MAX) /* never committed: forget */
            memmove(ls.ckpts, ls.ckpts + 1, --ls.nckpts * sizeof(ls.ckpts[0]));
        ls.ckpts[ls.nckpts++] = (struct pending_ckpt){ due[i].seq, n, now };
    }
    return flags;
}

/* The step ends at now: an open section counts up to now in this step,
 * the rest of it in the next. */
static void
ls_section_close_step(struct section *sec, int64_t now)
{
    if (sec->depth > 0) {
        sec->acc_ns += now - sec->start_ns;
        sec->start_ns = now;
        sec->touched = true;
    }
    if (sec->touched) {
        sec->us[sec->us_next] = sec->acc_ns / 1000;
        sec->us_next = (sec->us_next + 1) % STEP_WINDOW;
        if (sec->nus < STEP_WINDOW)
            sec->nus++;
    }
    sec->acc_ns = 0;
    sec->touched = sec->depth > 0;
}

static bool
ls_section_name_valid(const char *name)
{
    size_t n = 0;

    if (name == NULL)
        return false;
    for (; name[n] != '\0'; n++) {
        char c = name[n];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' ||
                c == '-'))
            return false;
    }
    return n > 0 && n <= SECTION_NAME_MAX;
}

/* The section named name, created when create and there is room (warned
 * once when there is none); NULL otherwise. */
static struct section *
ls_section(const char *name, bool create)
{
    struct section *sec;

    for (size_t i = 0; i < ls.nsections; i++)
        if (strcmp(ls.sections[i].name, name) == 0)
            return &ls.sections[i];
    if (!create)
        return NULL;
    if (ls.nsections == SECTIONS_MAX) {
        ls_warn(WARN_SECTIONS, "more than %d timed sections: %s not timed",
            SECTIONS_MAX, name);
        return NULL;
    }
    sec = &ls.sections[ls.nsections++];
    memset(sec, 0, sizeof(*sec));
    memcpy(sec->name, name, strlen(name) + 1);
    return sec;
}

int
lockstep_timed_begin(const char *name)
{
    struct section *sec;
    int rc = 0;

    if (!ls_section_name_valid(name))
        return -EINVAL;
    pthread_mutex_lock(&ls_lock);
    if (ls.on) {
        sec = ls_section(name, true);
        if (sec == NULL) {
            rc = -ENOSPC;
        } else {
            if (sec->depth++ == 0)
                sec->start_ns = ls_now_ns(CLOCK_MONOTONIC);
            sec->touched = true;
        }
    }
    pthread_mutex_unlock(&ls_lock);
    return rc;
}

int
lockstep_timed_end(const char *name)
{
    struct section *sec;
    int rc = 0;

    if (!ls_section_name_valid(name))
        return -EINVAL;
    pthread_mutex_lock(&ls_lock);
    if (ls.on) {
        sec = ls_section(name, false);
        if (sec == NULL) {
            rc = ls.nsections == SECTIONS_MAX ? -ENOSPC : -EINVAL;
        } else if (sec->depth == 0) {
            rc = -EINVAL;
        } else if (--sec->depth == 0) {
            sec->acc_ns += ls_now_ns(CLOCK_MONOTONIC) - sec->start_ns;
        }
    }
    pthread_mutex_unlock(&ls_lock);
    return rc;
}

int
lockstep_init(void)
{
    const char *progress = getenv("LOCKSTEP_PROGRESS_FILE");
    const char *commit = getenv("LOCKSTEP_COMMIT_FILE");
    const char *control = getenv("LOCKSTEP_CONTROL_FILE");
    int64_t attempt = ls_int_env("LOCKSTEP_ATTEMPT");
    int rc;

    pthread_mutex_lock(&ls_lock);
    if (ls.on || progress == NULL || *progress == '\0' || attempt < 0) {
        rc = ls.on;
        pthread_mutex_unlock(&ls_lock);
        return rc;
    }
    ls.on = true;
    ls.progress = strdup(progress);
    ls.commit = commit != NULL && *commit != '\0' ? strdup(commit) : NULL;
    ls.attempt = attempt;
    ls.last_step = ls.written_step = -2;
    ls.next_due = NEVER;
    if (ls.progress == NULL) {
        ls.on = false;
    } else if (control != NULL && *control != '\0') {
        rc = ctlfile_map(control, &ls.ctl);
        if (rc < 0)
            ls_warn(WARN_CONTROL, "cannot map control file %s: %s", control,
                strerror(-rc));
    }
    /* Another process of this rank already announced itself: its steps
     * win (as in the Python SDK). */
    if (ls.on && access(ls.progress, F_OK) != 0)
        ls_write_progress(-1);
    rc = ls.on;
    pthread_mutex_unlock(&ls_lock);
    return rc;
}

unsigned
lockstep_step(uint64_t n)
{
    int64_t now, step = n > INT64_MAX ? INT64_MAX : (int64_t)n;
    unsigned flags = 0;
    uint64_t gen;

    pthread_mutex_lock(&ls_lock);
    if (!ls.on) {
        pthread_mutex_unlock(&ls_lock);
        return 0;
    }
    now = ls_now_ns(CLOCK_MONOTONIC);
    if (ls.prev_step_ns != 0) {
        ls.step_us[ls.step_us_next] = (now - ls.prev_step_ns) / 1000;
        ls.step_us_next = (ls.step_us_next + 1) % STEP_WINDOW;
        if (ls.nstep_us < STEP_WINDOW)
            ls.nstep_us++;
    }
    ls.prev_step_ns = now;
    for (size_t i = 0; i < ls.nsections; i++)
        ls_section_close_step(&ls.sections[i], now);
    ls.last_step = step;
    if (ls.ctl != NULL) {
        gen = ctlfile_gen(ls.ctl, (uint64_t)ls.attempt);
        if (gen != 0 && gen != ls.ctl_gen)
            ls_ctl_reload();
        if (step >= ls.next_due)
            flags = ls_act(step);
    }
    if ((flags & LOCKSTEP_ACT_GC) || ls.last_write_ns == 0 ||
        now - ls.last_write_ns >= PROGRESS_INTERVAL_NS)
        ls_write_progress(step);
    pthread_mutex_unlock(&ls_lock);
    return flags;
}

void
lockstep_gc_done(uint64_t n, double seconds)
{
    int64_t ms = seconds > 0 ? (int64_t)(seconds * 1000 + 0.5) : 0;
    bool changed = false;

    pthread_mutex_lock(&ls_lock);
    for (size_t i = 0; ls.on && i < ls.nacks; i++) {
        struct ack *a = &ls.acks[i];

        if (a->kind == CTLFILE_KIND_GC && (uint64_t)a->step == n) {
            a->ms = ms;
            changed = true;
        }
    }
    if (changed)
        ls_write_progress(ls.last_step);
    pthread_mutex_unlock(&ls_lock);
}

/* Append "<n> <attempt>" to the commit file and fsync it. */
static int
ls_commit_append(int64_t n)
{
    char line[64];
    int fd, len, rc = 0;

    if (ls.commit == NULL)
        return 0;
    len = snprintf(line, sizeof(line), "%" PRId64 " %" PRId64 "\n", n,
        ls.attempt);
    fd = open(ls.commit, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        rc = -errno;
    else if (write(fd, line, (size_t)len) != len)
        rc = errno != 0 ? -errno : -EIO;
    else if (fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0 && close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc < 0)
        ls_warn(WARN_COMMIT, "cannot write commit file %s: %s", ls.commit,
            strerror(-rc));
    return rc;
}

int
lockstep_checkpoint_committed(uint64_t n)
{
    int64_t step = n > INT64_MAX ? INT64_MAX : (int64_t)n, now;
    size_t keep = 0;
    int rc;

    pthread_mutex_lock(&ls_lock);
    if (!ls.on) {
        pthread_mutex_unlock(&ls_lock);
        return 0;
    }
    rc = ls_commit_append(step);
    now = ls_now_ns(CLOCK_MONOTONIC);
    for (size_t i = 0; i < ls.nckpts; i++) {
        struct pending_ckpt *c = &ls.ckpts[i];

        if (c->step == step)
            ls_ack(c->seq, CTLFILE_KIND_CHECKPOINT, step,
                (now - c->t_ns + 500000) / 1000000);
        else
            ls.ckpts[keep++] = *c;
    }
    ls.nckpts = keep;
    ls_write_progress(ls.last_step >= 0 ? ls.last_step : step);
    pthread_mutex_unlock(&ls_lock);
    return rc;
}

void
lockstep_finalize(void)
{
    pthread_mutex_lock(&ls_lock);
    if (ls.on && ls.last_step >= 0 && ls.last_step != ls.written_step)
        ls_write_progress(ls.last_step);
    ctlfile_unmap(ls.ctl);
    free(ls.progress);
    free(ls.commit);
    memset(&ls, 0, sizeof(ls));
    pthread_mutex_unlock(&ls_lock);
}
