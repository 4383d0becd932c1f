/*
 * cmd_logs.c - lockstep logs: a job's output, read through the API
 *
 * The agents ship rank output to the scheduler as it is written, so logs
 * stay readable after a node is gone; this command reads them with
 * GET /v1/jobs/ID/logs, one stream at a time: --rank R (or a job of one
 * rank) with rank=R, from an offset; every rank with the many-ranks form
 * (common/proto_logs.h), PROTO_LOG_RANKS_MAX ranks a request, each from
 * its own offset, asked again while the reply was cut by its byte limit
 * (X-Lockstep-Log-More). The size the scheduler holds comes with each
 * reply, so a rank is drained when our offset reaches it.
 *
 * With more than one rank each line is prefixed "[rank N] " and only whole
 * lines are printed while following, so lines of different ranks never mix
 * mid-line. --follow polls every CLI_LOGS_POLL_MS; once it sees the job in
 * a final state it reads every rank once more and stops, exiting 0 only
 * if the job SUCCEEDED (else its state and reason go to stderr). While
 * the job has not started it says so on stderr, with why it pends. Without
 * --attempt it starts at the latest attempt and, when the job restarts,
 * moves on to the next attempt after draining the current one. While
 * the scheduler cannot be reached (or answers 5xx) --follow keeps trying
 * for --retry-for (cli_outage.c; 5 minutes by default) and resumes from
 * each rank's offset, so no output is printed twice or lost.
 *
 * --json prints one JSON object per line of output instead:
 * {"rank":R,"attempt":A,"stream":"out","text":"the line, without its
 * newline"}; a last line without a newline is printed as it is.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/proto.h"
#include "common/proto_logs.h"
#include "common/timeid.h"
#include "common/xalloc.h"

#define CLI_LOGS_POLL_MS 300

struct rank_log {
    int64_t rank;
    int64_t offset;   /* next byte to ask for */
    int64_t size;     /* what the scheduler held at last reply */
    struct sbuf line; /* prefixed output: an unfinished line */
};

struct logs {
    struct cli *cli;
    int64_t id;
    int64_t attempt;    /* the attempt being read */
    const char *stream; /* "out" or "err" */
    bool prefix;        /* more than one rank: "[rank N] " */
    bool json;          /* --json: an object per line */
    bool many;          /* every rank, PROTO_LOG_RANKS_MAX a request */
    struct rank_log *ranks;
    size_t nranks;
    struct cli_resp resp;
    struct cli_outage outage; /* --retry-for, and the outage waited out */
};

struct job_view {
    char state[32];
    char reason[512]; /* why it is pending, restarting or ended */
    int64_t attempt;  /* latest attempt, 0 before the first */
    int64_t world;    /* nodes × ranks_per_node */
};

/* A failed request (rc, err): wait out an outage within --retry-for
 * (cli_outage.c) and return true to repeat it; false when it is final. */
static bool
logs_retry(struct logs *L, int rc, const struct err *err)
{
    return cli_outage_wait(L->cli, &L->outage, rc, &L->resp, err);
}

/* A request that failed for good: say why (whole), exit 1 (3 when the
 * scheduler could not be reached: main.c). */
static int
logs_failed(struct logs *L, const struct err *err)
{
    return cli_fail(L->cli, "%s",
        L->resp.status == 0 && L->cli->failure ? L->cli->failure : err->msg);
}

/* The job's ranks (nodes x ranks_per_node) as the reply gives them; a
 * shape no job can have is the reply's fault, said as such. */
static int
job_world(const cJSON *job, int64_t *world, struct err *err)
{
    int64_t nodes = cli_jint(job, "nodes", 0);
    int64_t per = cli_jint(job, "ranks_per_node", 0);

    if (nodes < 0 || nodes > PROTO_NODES_MAX || per < 0 ||
        per > PROTO_RANKS_PER_NODE_MAX) {
        return err_set(err, -EPROTO,
            "the scheduler's reply gives the job %lld nodes of %lld ranks: "
            "no job has that shape",
            (long long)nodes, (long long)per);
    }
    *world = nodes * per;
    return 0;
}

static int
get_job(struct logs *L, unsigned flags, struct job_view *v, struct err *err)
{
    char *path = xasprintf("/v1/jobs/%lld", (long long)L->id);
    cJSON *job = NULL;
    int rc;

    rc = cli_call(L->cli, "GET", path, NULL, flags, &L->resp, &job, err);
    if (rc == 0) {
        snprintf(v->state, sizeof(v->state), "%s", cli_jstr(job, "state"));
        snprintf(v->reason, sizeof(v->reason), "%s", cli_jstr(job, "reason"));
        v->attempt = cli_jint(job, "attempt", 0);
        rc = job_world(job, &v->world, err);
    }
    cJSON_Delete(job);
    free(path);
    return rc;
}

/* One line (len bytes, its newline not included) as a JSON object. */
static void
emit_json(struct logs *L, const struct rank_log *r, const char *line,
    size_t len)
{
    cJSON *o = cJSON_CreateObject();
    char *text = xstrndup(line, len);
    char *s;

    cJSON_AddNumberToObject(o, "rank", (double)r->rank);
    cJSON_AddNumberToObject(o, "attempt", (double)L->attempt);
    cJSON_AddStringToObject(o, "stream", L->stream);
    cJSON_AddStringToObject(o, "text", text);
    s = jsonx_print(o);
    puts(s);
    free(s);
    free(text);
    cJSON_Delete(o);
}

static void
emit(struct logs *L, struct rank_log *r, const char *data, size_t n)
{
    char *nl;

    if (!L->prefix && !L->json) {
        fwrite(data, 1, n, stdout);
        return;
    }
    sbuf_add(&r->line, data, n);
    while ((nl = memchr(r->line.buf, '\n', r->line.len)) != NULL) {
        size_t len = (size_t)(nl - r->line.buf) + 1;

        if (L->json) {
            emit_json(L, r, r->line.buf, len - 1);
        } else {
            printf("[rank %lld] ", (long long)r->rank);
            fwrite(r->line.buf, 1, len, stdout);
        }
        sbuf_consume(&r->line, len);
    }
}

/* Print what is left of an unfinished last line, ending it. */
static void
emit_rest(struct logs *L, struct rank_log *r)
{
    if (r->line.len > 0 && L->json) {
        emit_json(L, r, r->line.buf, r->line.len);
        sbuf_reset(&r->line);
    } else if (L->prefix && r->line.len > 0) {
        printf("[rank %lld] ", (long long)r->rank);
        fwrite(r->line.buf, 1, r->line.len, stdout);
        fputc('\n', stdout);
        sbuf_reset(&r->line);
    }
}

/* The dropped output from r's offset to from: said where it was. */
static void
emit_dropped(struct logs *L, struct rank_log *r, int64_t from)
{
    char *mark = xasprintf("[lockstep: %lld bytes of older output were "
                           "dropped: the job's stored output is capped "
                           "(log_max_bytes_per_job)]\n",
        (long long)(from - r->offset));

    emit(L, r, mark, strlen(mark));
    free(mark);
    r->offset = from;
}

/* One request for rank r from its offset. Returns the bytes read, or a
 * negative errno with err set (-ENOENT: 404, nothing printed). */
static int64_t
fetch(struct logs *L, struct rank_log *r, struct err *err)
{
    char *path = xasprintf(
        "/v1/jobs/%lld/logs?rank=%lld&attempt=%lld&stream=%s&offset=%lld",
        (long long)L->id, (long long)r->rank, (long long)L->attempt, L->stream,
        (long long)r->offset);
    const char *size, *start;
    int64_t from;
    int rc;

    rc = cli_call(L->cli, "GET", path, NULL, CLI_HTTP_QUIET, &L->resp, NULL,
        err);
    free(path);
    if (rc < 0)
        return rc == -EIO && L->resp.status == 404 ? -ENOENT : rc;
    cli_outage_over(L->cli, &L->outage);
    /* The scheduler dropped the output from our offset on: say how much,
     * where it was. */
    start = cli_resp_header(&L->resp, "X-Lockstep-Log-Offset");
    from = start ? strtoll(start, NULL, 10) : r->offset;
    if (from > r->offset)
        emit_dropped(L, r, from);
    emit(L, r, L->resp.body.buf, L->resp.body.len);
    r->offset += (int64_t)L->resp.body.len;
    size = cli_resp_header(&L->resp, "X-Lockstep-Log-Size");
    r->size = size ? strtoll(size, NULL, 10) : r->offset;
    return (int64_t)L->resp.body.len;
}

/* The query of a many-ranks request for ranks [first, first + n): the
 * range and, when any is past 0, each one's offset (trailing zeros
 * left out). */
static char *
many_path(struct logs *L, size_t first, size_t n)
{
    struct sbuf sb;
    size_t used = 0;

    sbuf_init(&sb);
    sbuf_addf(&sb, "/v1/jobs/%lld/logs?ranks=%zu-%zu&attempt=%lld&stream=%s",
        (long long)L->id, first, first + n - 1, (long long)L->attempt,
        L->stream);
    for (size_t i = 0; i < n; i++) {
        if (L->ranks[first + i].offset > 0)
            used = i + 1;
    }
    for (size_t i = 0; i < used; i++)
        sbuf_addf(&sb, "%s%lld",
            i ? "," : "&offsets=", (long long)L->ranks[first + i].offset);
    return sbuf_detach(&sb, NULL);
}

/* One frame of a many-ranks reply for a rank of [first, first + n). */
static int
take_frame(struct logs *L, size_t first, size_t n,
    const struct proto_log_frame *f, bool ending, struct err *err)
{
    struct rank_log *r;

    if (f->rank < (int64_t)first || f->rank >= (int64_t)(first + n))
        return err_set(err, -EPROTO,
            "the scheduler's reply holds rank %lld, not asked for",
            (long long)f->rank);
    r = &L->ranks[f->rank];
    if (f->start < r->offset)
        return err_set(err, -EPROTO,
            "the scheduler's reply holds rank %lld from %lld, before %lld",
            (long long)f->rank, (long long)f->start, (long long)r->offset);
    if (f->start > r->offset)
        emit_dropped(L, r, f->start);
    emit(L, r, f->data, f->len);
    r->offset += (int64_t)f->len;
    r->size = f->size;
    /* Read to its end once and for all: its last line, unfinished,
     * goes out now, before the next rank's. */
    if (ending && r->offset >= r->size)
        emit_rest(L, r);
    return 0;
}

/* One many-ranks request for ranks [first, first + n) from their
 * offsets. Returns the bytes read, *more when the reply was cut by its
 * limit, or a negative errno with err set (-ENOENT: 404). */
static int64_t
fetch_many(struct logs *L, size_t first, size_t n, bool ending, bool *more,
    struct err *err)
{
    char *path = many_path(L, first, n);
    struct proto_log_frame f;
    const char *p;
    size_t left;
    int64_t got = 0;
    int rc;

    rc = cli_call(L->cli, "GET", path, NULL, CLI_HTTP_QUIET, &L->resp, NULL,
        err);
    free(path);
    /* A scheduler from before the many-ranks read wants rank=: read rank
     * by rank from it (the caller goes back to that). */
    if (rc < 0 && L->resp.status == 400 &&
        strstr(err->msg, "missing field 'rank'") != NULL)
        return -ENOTSUP;
    if (rc < 0)
        return rc == -EIO && L->resp.status == 404 ? -ENOENT : rc;
    cli_outage_over(L->cli, &L->outage);
    *more = cli_resp_header(&L->resp, "X-Lockstep-Log-More") != NULL;
    p = L->resp.body.buf;
    left = L->resp.body.len;
    while ((rc = proto_log_frame_next(&p, &left, &f, err)) > 0) {
        if ((rc = take_frame(L, first, n, &f, ending, err)) < 0)
            return rc;
        got += (int64_t)f.len;
    }
    /* Cut by the limit yet nothing new: the scheduler is not keeping its
     * word; asking again would loop. */
    if (rc == 0 && *more && got == 0)
        return err_set(err, -EPROTO,
            "the scheduler's reply says more is left but holds nothing");
    return rc < 0 ? rc : got;
}

/* Read ranks [first, first + n) up to what the scheduler holds now.
 * Returns the bytes read or a negative errno (err set). */
static int64_t
drain_many(struct logs *L, size_t first, size_t n, bool ending, struct err *err)
{
    int64_t got, total = 0;
    bool more = false;

    do {
        got = fetch_many(L, first, n, ending, &more, err);
        if (got < 0)
            return got;
        total += got;
    } while (more);
    return total;
}

/* Read rank r up to what the scheduler holds now. Returns the bytes read
 * or a negative errno (err set). */
static int64_t
drain(struct logs *L, struct rank_log *r, struct err *err)
{
    int64_t n, total = 0;

    do {
        n = fetch(L, r, err);
        if (n < 0)
            return n;
        total += n;
    } while (n > 0 && r->offset < r->size);
    return total;
}

/* The step of the many-ranks reads: ranks a request. */
static size_t
window(const struct logs *L, size_t first)
{
    return L->nranks - first < PROTO_LOG_RANKS_MAX ? L->nranks - first
                                                   : PROTO_LOG_RANKS_MAX;
}

static int logs_once(struct logs *L);

/* Without --follow, every rank: PROTO_LOG_RANKS_MAX in a request, each
 * to its end, in rank order; rank by rank from a scheduler that has no
 * many-ranks read. */
static int
logs_once_many(struct logs *L)
{
    for (size_t first = 0; first < L->nranks; first += window(L, first)) {
        struct err err;
        int64_t n = drain_many(L, first, window(L, first), true, &err);

        if (n == -ENOTSUP) {
            L->many = false;
            return logs_once(L);
        }
        for (size_t i = first; i < first + window(L, first); i++)
            emit_rest(L, &L->ranks[i]);
        if (n < 0) {
            cli_warn(L->cli, "%s", err.msg);
            return CLI_EXIT_FAIL;
        }
    }
    return CLI_EXIT_OK;
}

/* Without --follow: each rank in turn, to its end. */
static int
logs_once(struct logs *L)
{
    int status = CLI_EXIT_OK;

    if (L->many)
        return logs_once_many(L);
    for (size_t i = 0; i < L->nranks; i++) {
        struct rank_log *r = &L->ranks[i];
        struct err err;
        int64_t n = drain(L, r, &err);

        emit_rest(L, r);
        if (n < 0) {
            if (n == -ENOENT || n == -EIO) {
                cli_warn(L->cli, "rank %lld: %s", (long long)r->rank, err.msg);
                status = CLI_EXIT_FAIL;
                continue;
            }
            cli_warn(L->cli, "%s", err.msg);
            return CLI_EXIT_FAIL;
        }
    }
    return status;
}

static void
reset_ranks(struct logs *L)
{
    for (size_t i = 0; i < L->nranks; i++) {
        emit_rest(L, &L->ranks[i]);
        L->ranks[i].offset = 0;
        L->ranks[i].size = 0;
    }
}

/* The exit status of a follow that saw the job in state v: 0 unless it
 * ended other than SUCCEEDED, which is said on stderr. */
static int
logs_outcome(struct logs *L, const struct job_view *v)
{
    if (!cli_job_state_final(v->state) ||
        strcmp(v->state, proto_job_state_str(PROTO_JOB_SUCCEEDED)) == 0)
        return CLI_EXIT_OK;
    fflush(stdout);
    fprintf(stderr, "job %lld %s%s%s\n", (long long)L->id, v->state,
        *v->reason ? ": " : "", v->reason);
    return CLI_EXIT_FAIL;
}

/* Following: the ranks read from rank i on, as one step. */
static size_t
step(const struct logs *L, size_t i)
{
    return L->many ? window(L, i) : 1;
}

static int64_t
drain_step(struct logs *L, size_t i, struct err *err)
{
    return L->many ? drain_many(L, i, window(L, i), false, err)
                   : drain(L, &L->ranks[i], err);
}

static int
logs_follow(struct logs *L, bool pinned)
{
    bool final_seen = false;
    struct job_view v = { .state = "" };

    for (;;) {
        struct err err;
        int64_t got = 0;
        int rc;

        for (size_t i = 0; i < L->nranks; i += step(L, i)) {
            int64_t n;

            /* A rank the scheduler has no file for yet (-ENOENT) has
             * said nothing so far. */
            while ((n = drain_step(L, i, &err)) < 0 && n != -ENOENT) {
                if (n == -ENOTSUP)
                    L->many = false; /* and again, rank by rank */
                else if (!logs_retry(L, (int)n, &err))
                    return logs_failed(L, &err);
            }
            if (n > 0)
                got += n;
        }
        fflush(stdout);
        if (got > 0)
            continue;
        if (final_seen)
            break;

        rc = get_job(L, CLI_HTTP_QUIET, &v, &err);
        if (rc < 0) {
            if (!logs_retry(L, rc, &err))
                return logs_failed(L, &err);
            continue;
        }
        cli_outage_over(L->cli, &L->outage);
        if (pinned && v.attempt > L->attempt) {
            /* The attempt asked for is over and drained. */
            break;
        }
        if (!pinned && v.attempt > L->attempt) {
            /* This attempt is drained and a newer one exists: go on to
             * the next, so each attempt's output is shown in order. */
            reset_ranks(L);
            L->attempt++;
            fflush(stdout);
            fprintf(stderr, "==> job %lld attempt %lld <==\n", (long long)L->id,
                (long long)L->attempt);
            continue;
        }
        if (cli_job_state_final(v.state)) {
            /* One more read of every rank: output written just before
             * the end may still have been on its way. */
            final_seen = true;
            continue;
        }
        cli_sleep_ms(CLI_LOGS_POLL_MS);
    }
    for (size_t i = 0; i < L->nranks; i++)
        emit_rest(L, &L->ranks[i]);
    return logs_outcome(L, &v);
}

/* Following a job that has not started: wait for its first attempt.
 * Returns 0 once it has one, else the exit status (the job ended without
 * starting, or the scheduler stayed unreachable). */
static int
wait_first_attempt(struct logs *L, struct job_view *v)
{
    char told[sizeof(v->reason) + sizeof(v->state)] = "";

    for (;;) {
        char now[sizeof(told)];
        struct err err;
        int rc;

        if (v->attempt > 0)
            return 0;
        snprintf(now, sizeof(now), "%s%s", v->state, v->reason);
        if (!cli_job_state_final(v->state) && strcmp(now, told) != 0) {
            fprintf(stderr, "job %lld is %s%s%s; waiting for it to start\n",
                (long long)L->id, v->state, *v->reason ? ": " : "", v->reason);
            memcpy(told, now, sizeof(told));
        }
        if (cli_job_state_final(v->state)) {
            fprintf(stderr, "job %lld ended (%s) before it started%s%s\n",
                (long long)L->id, v->state, *v->reason ? ": " : "", v->reason);
            return CLI_EXIT_FAIL;
        }
        cli_sleep_ms(CLI_LOGS_POLL_MS);
        rc = get_job(L, CLI_HTTP_QUIET, v, &err);
        if (rc < 0 && !logs_retry(L, rc, &err))
            return logs_failed(L, &err);
    }
}

struct logs_opts {
    int64_t rank;         /* -1: every rank */
    int64_t attempt;      /* 0: the latest, and on through restarts */
    const char *stream;   /* "out" or "err" (static) */
    int64_t retry_for_ms; /* --retry-for; -1: CLI_RETRY_DEFAULT_MS */
    bool follow;
};

static int
set_retry_for(void *opts, const char *value, struct sbuf *why)
{
    return cli_set_retry_for(value, &((struct logs_opts *)opts)->retry_for_ms,
        why);
}

static const struct cli_opt logs_opts[] = {
    CLI_OPT_INT("rank", struct logs_opts, rank, 0, INT32_MAX),
    CLI_OPT_INT("attempt", struct logs_opts, attempt, 1, INT32_MAX),
    CLI_OPT_WORD("stream", struct logs_opts, stream, "out", "err"),
    CLI_OPT_FLAG_LETTER("follow", 'f', struct logs_opts, follow),
    CLI_OPT_CALL("retry-for", STR, set_retry_for),
    CLI_OPT_END,
};

/* Check the options against the job (its id as the user gave it) and
 * settle the attempt to read: the one asked for, else the latest, which is
 * where the live output is. Following a job that has not started waits
 * for its first attempt. Returns CLI_CONTINUE with v filled, or the exit
 * status. */
static int
logs_pick_attempt(struct logs *L, const struct logs_opts *o, const char *job,
    struct job_view *v)
{
    struct err err;
    int rc;

    /* Following, an outage at the start is waited out too. */
    while ((rc = get_job(L, CLI_HTTP_QUIET, v, &err)) < 0 && o->follow &&
           logs_retry(L, rc, &err))
        ;
    if (rc < 0)
        return cli_fail_about(L->cli, "job", job, rc, &err);
    cli_outage_over(L->cli, &L->outage);
    if (o->rank >= v->world)
        return cli_fail(L->cli, "job %lld has ranks 0 to %lld",
            (long long)L->id, (long long)v->world - 1);
    if (o->attempt > 0 && o->attempt > v->attempt) {
        if (v->attempt == 0)
            return cli_fail(L->cli, "job %lld has not started yet",
                (long long)L->id);
        return cli_fail(L->cli, "job %lld has attempts 1 to %lld",
            (long long)L->id, (long long)v->attempt);
    }
    if (o->attempt == 0 && v->attempt == 0) {
        if (!o->follow)
            return cli_fail(L->cli, "job %lld has not started yet (%s)",
                (long long)L->id, v->state);
        rc = wait_first_attempt(L, v);
        if (rc != 0)
            return rc;
    }
    L->attempt = o->attempt > 0 ? o->attempt : v->attempt;
    return CLI_CONTINUE;
}

/* One rank_log for rank, or one for each of world ranks when rank < 0. */
static void
logs_init_ranks(struct logs *L, int64_t rank, int64_t world)
{
    L->nranks = rank >= 0 ? 1 : (size_t)world;
    L->ranks = xcalloc(L->nranks, sizeof(*L->ranks));
    for (size_t i = 0; i < L->nranks; i++) {
        L->ranks[i].rank = rank >= 0 ? rank : (int64_t)i;
        sbuf_init(&L->ranks[i].line);
    }
    L->prefix = L->nranks > 1;
    L->many = L->nranks > 1;
}

static int
cmd_logs(int argc, char **argv, struct cli *cli)
{
    struct logs_opts o = { .rank = -1, .stream = "out", .retry_for_ms = -1 };
    struct logs L = { .cli = cli };
    struct cli_args args;
    struct job_view v;
    int status;

    if ((status = cli_parse(cli, argc, argv, &o, &args)) != CLI_CONTINUE)
        return status;
    if (cli_parse_job_id(cli, args.argv[0], &L.id) != 0)
        return CLI_EXIT_USAGE;
    L.stream = o.stream;
    L.outage.retry_ms = o.retry_for_ms;
    L.json = cli->json;
    cli_resp_init(&L.resp);
    status = logs_pick_attempt(&L, &o, args.argv[0], &v);
    if (status == CLI_CONTINUE) {
        logs_init_ranks(&L, o.rank, v.world);
        status = o.follow ? logs_follow(&L, o.attempt > 0) : logs_once(&L);
    }
    for (size_t i = 0; i < L.nranks; i++)
        sbuf_release(&L.ranks[i].line);
    free(L.ranks);
    cli_resp_release(&L.resp);
    return status;
}

const struct cli_cmd cli_cmd_logs = {
    .name = "logs",
    .summary = "print a job's output",
    .usage =
        "usage: lockstep logs JOB [--rank R] [--attempt N] [--stream out|err]\n"
        "                         [--follow [--retry-for D]] [--json]\n"
        "\n"
        "  --rank R          only rank R (default: every rank, each line\n"
        "                    prefixed with [rank N])\n"
        "  --attempt N       attempt N (default: the latest)\n"
        "  --stream out|err  stdout (default) or stderr\n"
        "  -f, --follow      keep printing until the job has ended (saying\n"
        "                    on stderr while it is pending); exit 0 only if\n"
        "                    it SUCCEEDED, 1 if it FAILED or was CANCELLED\n"
        "                    (with --attempt N: 0 once attempt N is over\n"
        "                    and the job goes on)\n"
        "  --retry-for D     following: wait out a scheduler that cannot be\n"
        "                    reached for up to D (30s, 5m, 1h; default 5m;\n"
        "                    0: give up at once), then resume where it was\n"
        "                    (no line printed twice or skipped)\n"
        "  --json            one JSON object per line of output:\n"
        "                    {\"rank\", \"attempt\", \"stream\", \"text\"}\n",
    .opts = logs_opts,
    CLI_ONE_JOB,
    .fn = cmd_logs,
};
