/*
 * cmd_submit.c - lockstep submit: send a job spec, optionally wait for it
 *
 * The arguments become a `struct proto_job_spec`, checked with the same
 * validator the scheduler runs (proto_job_spec_validate) so that a typo
 * is a usage error here rather than a 400 from the server. Option parsing
 * stops at the first word that is not an option, so
 * `lockstep submit --nodes 2 python3 train.py --lr 3e-4` needs no `--`.
 *
 * The job takes the submitter's environment along (cli_env.h): --export
 * chooses what, --env adds to it and wins over it.
 *
 * Without --wait it says how to follow the job. --wait polls the job
 * until it reaches a final state, telling each change on stderr
 * (cli_progress.c); Ctrl-C ends the wait, not the job, and says how to
 * cancel it (exit 130). It outlives a scheduler outage: while the
 * scheduler cannot be reached (or answers 5xx) it keeps trying for
 * --retry-for (cli_outage.c; 5 minutes by default) before giving up, and
 * with --wait the submission itself is tried again while the connection
 * is refused.
 */
#include "cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_env.h"
#include "common/timeid.h"
#include "common/xalloc.h"

#define CLI_WAIT_MIN_MS 250
#define CLI_WAIT_MAX_MS 1000

extern char **environ;

void
cli_submit_opts_release(struct cli_submit_opts *opts)
{
    proto_job_spec_release(&opts->spec);
    free(opts->export);
    memset(opts, 0, sizeof(*opts));
}

/* --env K=V, or --env K to pass this shell's value. A key given twice
 * keeps the last value (the API refuses duplicate keys). */
static int
add_env(struct proto_job_spec *spec, const char *arg, struct err *err)
{
    struct proto_kv kv = { 0 };
    int rc;

    if (strchr(arg, '=') == NULL) {
        const char *v = getenv(arg);

        if (!proto_valid_env_key(arg))
            return err_set(err, -EINVAL,
                "invalid --env '%s': expected KEY=VALUE or the name of a "
                "variable",
                arg);
        if (v == NULL)
            return err_set(err, -EINVAL,
                "--env %s: %s is not set in this environment", arg, arg);
        kv.key = xstrdup(arg);
        kv.value = xstrdup(v);
    } else if ((rc = proto_kv_parse(arg, &kv, err)) < 0) {
        return err_prefix(err, "invalid --env: ");
    }
    if (!proto_valid_env_key(kv.key)) {
        rc = err_set(err, -EINVAL,
            "invalid --env '%.60s': '%.40s' is not a valid variable name", arg,
            kv.key);
        free(kv.key);
        free(kv.value);
        return rc;
    }
    for (size_t i = 0; i < spec->nenv; i++) {
        if (strcmp(spec->env[i].key, kv.key) == 0) {
            free(spec->env[i].value);
            spec->env[i].value = kv.value;
            free(kv.key);
            return 0;
        }
    }
    spec->env = xreallocarray(spec->env, spec->nenv + 1, sizeof(*spec->env));
    spec->env[spec->nenv++] = kv;
    return 0;
}

/* The option table's setters check a value as the scheduler would, so
 * that a typo is a usage error here. set_failed hands on a helper's
 * message, cut where a struct err cuts it, as it always was. */
static int
set_failed(struct sbuf *why, const struct err *err, int rc)
{
    sbuf_addstr(why, err->msg);
    return rc;
}

static int
set_name(void *opts, const char *value, struct sbuf *why)
{
    struct proto_job_spec *spec = &((struct cli_submit_opts *)opts)->spec;

    if (!proto_valid_name(value, PROTO_NAME_MAX)) {
        sbuf_addf(why,
            "invalid --name '%.60s': use 1-%d characters of "
            "A-Z a-z 0-9 . _ -",
            value, PROTO_NAME_MAX);
        return -EINVAL;
    }
    free(spec->name);
    spec->name = xstrdup(value);
    return 0;
}

static int
set_env(void *opts, const char *value, struct sbuf *why)
{
    struct err err;
    int rc = add_env(&((struct cli_submit_opts *)opts)->spec, value, &err);

    return rc < 0 ? set_failed(why, &err, rc) : 0;
}

/* --gc-every D, --checkpoint-every D: a duration or a step count. */
static int
set_cadence(struct proto_cadence *c, const char *opt, const char *value,
    struct sbuf *why)
{
    struct err err;
    int rc = proto_cadence_parse(value, c, &err);

    if (rc < 0)
        sbuf_addf(why, "invalid --%s: %s", opt, err.msg);
    return rc;
}

static int
set_gc_every(void *opts, const char *value, struct sbuf *why)
{
    return set_cadence(&((struct cli_submit_opts *)opts)->spec.gc_every,
        "gc-every", value, why);
}

static int
set_checkpoint_every(void *opts, const char *value, struct sbuf *why)
{
    return set_cadence(&((struct cli_submit_opts *)opts)->spec.checkpoint_every,
        "checkpoint-every", value, why);
}

static int
set_export(void *opts, const char *value, struct sbuf *why)
{
    struct cli_submit_opts *o = opts;
    struct err err;
    int rc = cli_env_export_check(value, &err);

    if (rc < 0)
        return set_failed(why, &err, rc);
    free(o->export);
    o->export = xstrdup(value);
    return 0;
}

/* --resume-from JOB (digits: a job id; a directory named so is ./123) or
 * PATH (must exist here; made absolute, symbolic links resolved). */
static int
set_resume_from(void *opts, const char *value, struct sbuf *why)
{
    struct proto_job_spec *spec = &((struct cli_submit_opts *)opts)->spec;
    size_t n = strspn(value, "0123456789");
    char *path;

    free(spec->resume_from);
    spec->resume_from = NULL;
    spec->resume_from_job = 0;
    if (n > 0 && value[n] == '\0') {
        spec->resume_from_job = strtoll(value, NULL, 10);
        if (n > 15 || spec->resume_from_job <= 0) {
            sbuf_addf(why, "invalid --resume-from '%s': not a job id", value);
            return -EINVAL;
        }
        return 0;
    }
    path = *value != '\0' ? realpath(value, NULL) : NULL;
    if (path == NULL) {
        sbuf_addf(why,
            "invalid --resume-from '%.200s': %s (give a checkpoint "
            "directory or a job id)",
            value, *value != '\0' ? strerror(errno) : "empty");
        return -EINVAL;
    }
    spec->resume_from = path;
    return 0;
}

#define SPEC_INT(name, field, min, max)                                        \
    CLI_OPT_INT(name, struct cli_submit_opts, spec.field, min, max)

static int
set_specs(void *opts, const char *value, struct sbuf *why)
{
    (void)why;
    ((struct cli_submit_opts *)opts)->specs = value;
    return 0;
}

static int
set_retry_for(void *opts, const char *value, struct sbuf *why)
{
    return cli_set_retry_for(value,
        &((struct cli_submit_opts *)opts)->retry_for_ms, why);
}

static const struct cli_opt submit_opts[] = {
    CLI_OPT_CALL("name", STR, set_name),
    SPEC_INT("nodes", nodes, 1, PROTO_NODES_MAX),
    SPEC_INT("ranks-per-node", ranks_per_node, 1, PROTO_RANKS_PER_NODE_MAX),
    SPEC_INT("gpus-per-node", gpus_per_node, 0, PROTO_GPUS_MAX),
    SPEC_INT("cpus-per-rank", cpus_per_rank, 0, PROTO_CPUS_MAX),
    SPEC_INT("memory-mb", memory_mb_per_node, 0, (int64_t)1 << 40),
    SPEC_INT("priority", priority, -1000, 1000),
    CLI_OPT_CALL("env", STR, set_env),
    CLI_OPT_CALL("export", STR, set_export),
    CLI_OPT_PATH("workdir", struct cli_submit_opts, spec.workdir),
    SPEC_INT("max-restarts", max_restarts, 0, 1000),
    SPEC_INT("max-infra-restarts", max_infra_restarts, 0, 10000),
    SPEC_INT("hang-timeout", hang_timeout_s, 0, PROTO_HANG_TIMEOUT_MAX),
    SPEC_INT("keep-checkpoints", keep_checkpoints, 0, 100000),
    CLI_OPT_PATH("checkpoint-dir", struct cli_submit_opts, spec.checkpoint_dir),
    CLI_OPT_CALL("gc-every", STR, set_gc_every),
    CLI_OPT_CALL("checkpoint-every", STR, set_checkpoint_every),
    CLI_OPT_CALL("resume-from", STR, set_resume_from),
    CLI_OPT_FLAG("wait", struct cli_submit_opts, wait),
    CLI_OPT_CALL("retry-for", STR, set_retry_for),
    CLI_OPT_FLAG("wait-for-nodes", struct cli_submit_opts, spec.wait_for_nodes),
    CLI_OPT_SELECT("specs", set_specs),
    CLI_OPT_END,
};

/* The working directory, once the options are read. */
static int
finish_workdir(struct proto_job_spec *spec, struct err *err)
{
    if (spec->workdir == NULL) {
        spec->workdir = getcwd(NULL, 0);
        if (spec->workdir == NULL) {
            int e = errno;

            return err_set(err, -e,
                "cannot find the current directory (%s): use --workdir",
                strerror(e));
        }
    }
    return 0;
}

/* With --specs: no command (each line has its own), no --wait; the
 * options are the jobs' common fields. */
static int
finish_specs(struct cli_submit_opts *opts, const struct cli_args *args,
    struct err *err)
{
    if (args->argc > 0)
        return err_set(err, -EINVAL,
            "give either --specs FILE or a command, not both (each line of "
            "FILE has its own \"argv\")");
    if (opts->wait)
        return err_set(err, -EINVAL,
            "--wait follows one job; with --specs, follow them with "
            "lockstep jobs");
    return finish_workdir(&opts->spec, err);
}

/* The command and the working directory, once the options are read. */
static int
finish_spec(struct proto_job_spec *spec, const struct cli_args *args,
    struct err *err)
{
    int rc;

    if ((size_t)args->argc > PROTO_ARGV_MAX)
        return err_set(err, -EINVAL, "the command has more than %d arguments",
            PROTO_ARGV_MAX);
    spec->argc = (size_t)args->argc;
    spec->argv = xcalloc(spec->argc + 1, sizeof(*spec->argv));
    for (size_t i = 0; i < spec->argc; i++)
        spec->argv[i] = xstrdup(args->argv[i]);
    if ((rc = finish_workdir(spec, err)) < 0)
        return rc;
    return proto_job_spec_validate(spec, err);
}

int
cli_submit_parse(int argc, char **argv, struct cli_submit_opts *opts,
    struct err *err)
{
    struct cli_args args;
    struct sbuf why;
    int rc;

    memset(opts, 0, sizeof(*opts));
    opts->retry_for_ms = -1;
    proto_job_spec_init(&opts->spec);
    sbuf_init(&why);
    rc = cli_parse_opts(&cli_cmd_submit, argc, argv, opts, &args, &why);
    if (rc < 0)
        err_set(err, rc, "%s", why.buf);
    sbuf_release(&why);
    if (rc < 0)
        return rc;
    opts->json = args.json;
    opts->help = args.help;
    if (args.help)
        return 0;
    if (opts->specs)
        return finish_specs(opts, &args, err);
    return finish_spec(&opts->spec, &args, err);
}

/* What Ctrl-C during --wait prints: written by the signal handler, so
 * composed before it is installed. */
static char wait_sigint_msg[256];
static size_t wait_sigint_len;

static void
wait_sigint(int sig)
{
    ssize_t n;

    (void)sig;
    n = write(STDERR_FILENO, wait_sigint_msg, wait_sigint_len);
    (void)n;
    _exit(CLI_EXIT_INTERRUPTED);
}

/* Ctrl-C ends the wait, not the job: say so, and how to cancel it. The
 * disposition it replaces goes to *old. */
static void
wait_catch_sigint(int64_t id, struct sigaction *old)
{
    struct sigaction sa;
    int n;

    n = snprintf(wait_sigint_msg, sizeof(wait_sigint_msg),
        "\n%s submit: stopped waiting; job %lld keeps running (follow it: "
        "lockstep logs -f %lld; cancel it: lockstep cancel %lld)\n",
        CLI_PROG, (long long)id, (long long)id, (long long)id);
    wait_sigint_len = n > 0 && (size_t)n < sizeof(wait_sigint_msg)
                          ? (size_t)n
                          : strlen(wait_sigint_msg);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = wait_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, old);
}

/* The outcome of a final job, on stdout: the --json reply, or one line
 * with the reason it failed. Returns the exit status. */
static int
wait_outcome(int64_t id, const cJSON *job, const struct cli_resp *resp,
    bool json)
{
    const char *state = cli_jstr(job, "state");
    const char *reason = cli_jstr(job, "reason");
    bool succeeded = strcmp(state, proto_job_state_str(PROTO_JOB_SUCCEEDED)) ==
                     0;

    if (json)
        cli_print_body(resp);
    else if (succeeded || *reason == '\0')
        printf("job %lld %s\n", (long long)id, state);
    else
        printf("job %lld %s: %s\n", (long long)id, state, reason);
    return succeeded ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* Poll the job until it is final, telling each change on stderr (not
 * with --json). Returns the exit status. */
/* Count the complete checkpoints (step-<N>/COMPLETE) of the open
 * directory d; *entries: every entry but . and ..; *newest: the highest
 * complete step, -1 none. */
static size_t
ckpt_dir_count(DIR *d, size_t *entries, int64_t *newest)
{
    char sub[NAME_MAX + 16];
    struct dirent *de;
    struct stat st;
    size_t complete = 0;
    int64_t step;

    *entries = 0;
    *newest = -1;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        (*entries)++;
        step = proto_ckpt_path_step(de->d_name);
        snprintf(sub, sizeof(sub), "%s/COMPLETE", de->d_name);
        if (step < 0 || fstatat(dirfd(d), sub, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode))
            continue;
        complete++;
        if (step > *newest)
            *newest = step;
    }
    return complete;
}

bool
cli_submit_ckpt_warning(const struct proto_job_spec *spec, struct sbuf *out)
{
    const char *dir = spec->checkpoint_dir;
    size_t entries, complete;
    int64_t newest;
    DIR *d;

    if (dir == NULL || dir[0] == '\0' || (d = opendir(dir)) == NULL)
        return false;
    complete = ckpt_dir_count(d, &entries, &newest);
    closedir(d);
    if (entries == 0)
        return false;
    sbuf_addf(out, "warning: checkpoint directory '%s' is not empty", dir);
    if (complete > 0)
        sbuf_addf(out, " (%zu complete checkpoint%s, newest step-%lld)",
            complete, complete == 1 ? "" : "s", (long long)newest);
    sbuf_addstr(out, ": restarts resume only from checkpoints this job "
                     "writes, never from what is there now");
    if (spec->resume_from_job > 0)
        sbuf_addf(out, "; attempt 1 resumes from job %lld's latest",
            (long long)spec->resume_from_job);
    else if (spec->resume_from != NULL && spec->resume_from[0] != '\0')
        sbuf_addf(out, "; attempt 1 resumes from '%s'", spec->resume_from);
    else
        sbuf_addstr(out, "; to continue from one, use --resume-from "
                         "PATH|JOB");
    return true;
}

/* Poll the job until it is final. Returns the exit status. */
static int
submit_wait(struct cli *cli, int64_t id, bool json, int64_t retry_ms)
{
    char *path = xasprintf("/v1/jobs/%lld", (long long)id);
    struct cli_progress prog;
    struct sigaction old_sigint;
    struct cli_resp resp;
    struct sbuf lines;
    struct cli_outage outage = { .retry_ms = retry_ms };
    int64_t interval = CLI_WAIT_MIN_MS;
    int status = CLI_EXIT_FAIL;

    cli_resp_init(&resp);
    cli_progress_init(&prog, id);
    sbuf_init(&lines);
    wait_catch_sigint(id, &old_sigint);
    for (;;) {
        cJSON *job = NULL;
        struct err err;
        int rc;

        rc = cli_call(cli, "GET", path, NULL, CLI_HTTP_QUIET, &resp, &job,
            &err);
        if (rc < 0) {
            if (!cli_outage_wait(cli, &outage, rc, &resp, &err)) {
                cli_warn(cli, "stopped waiting for job %lld: %s", (long long)id,
                    resp.status == 0 && cli->failure ? cli->failure : err.msg);
                break;
            }
            continue;
        }
        cli_outage_over(cli, &outage);
        sbuf_reset(&lines);
        cli_progress_update(&prog, job, &lines);
        if (!json && lines.len > 0) {
            fflush(stdout);
            fwrite(lines.buf, 1, lines.len, stderr);
        }
        if (cli_job_state_final(cli_jstr(job, "state"))) {
            status = wait_outcome(id, job, &resp, json);
            cJSON_Delete(job);
            break;
        }
        cJSON_Delete(job);
        fflush(stdout);
        cli_sleep_ms(interval);
        interval = interval * 3 / 2;
        if (interval > CLI_WAIT_MAX_MS)
            interval = CLI_WAIT_MAX_MS;
    }
    sigaction(SIGINT, &old_sigint, NULL);
    sbuf_release(&lines);
    cli_progress_release(&prog);
    cli_resp_release(&resp);
    free(path);
    return status;
}

static void
submit_warn_ckpt(struct cli *cli, const struct proto_job_spec *spec)
{
    struct sbuf msg;

    sbuf_init(&msg);
    if (cli_submit_ckpt_warning(spec, &msg))
        cli_warn(cli, "%s", msg.buf);
    sbuf_release(&msg);
}

/* POST the job. With --wait, a connection that was refused (nothing was
 * sent, so nothing can be submitted twice) is tried again within
 * --retry-for; any other failure is final. */
static int
submit_post(struct cli *cli, const struct cli_submit_opts *opts,
    const cJSON *body, struct cli_resp *resp, cJSON **job)
{
    struct cli_outage outage = { .retry_ms = opts->retry_for_ms };
    struct err err;
    int rc;

    for (;;) {
        rc = cli_call(cli, "POST", "/v1/jobs", body,
            opts->wait ? CLI_HTTP_QUIET_DOWN : 0, resp, job, &err);
        if (rc == 0) {
            cli_outage_over(cli, &outage);
            return 0;
        }
        if (!opts->wait || rc != -ECONNREFUSED ||
            !cli_outage_wait(cli, &outage, rc, resp, &err))
            break;
    }
    /* An error reply was printed whole by cli_call; a failure to reach
     * the scheduler is said here unless the outage was waited out. */
    if (opts->wait && resp->status == 0 && outage.down_since == 0)
        cli_warn(cli, "%s", cli->failure ? cli->failure : err.msg);
    return rc;
}

static int
cmd_submit(int argc, char **argv, struct cli *cli)
{
    struct cli_submit_opts opts;
    struct cli_resp resp;
    struct err err;
    cJSON *body = NULL, *job = NULL;
    bool json;
    int64_t id;
    int status = CLI_EXIT_FAIL;

    cli_resp_init(&resp);
    if (cli_submit_parse(argc, argv, &opts, &err) < 0) {
        status = cli_usage(cli, "%s", err.msg);
        goto out;
    }
    if (opts.help) {
        status = cli_help(cli);
        goto out;
    }
    json = opts.json || cli->json;
    if (cli_env_export(&opts.spec, opts.export, environ, &err) < 0) {
        cli_warn(cli, "%s", err.msg);
        status = CLI_EXIT_USAGE;
        goto out;
    }
    if (opts.specs) {
        status = cli_submit_specs(cli, opts.specs, &opts.spec, json);
        goto out;
    }
    body = proto_job_spec_to_json(&opts.spec);
    if (submit_post(cli, &opts, body, &resp, &job) < 0)
        goto out;
    id = cli_jint(job, "id", 0);
    if (id <= 0) {
        cli_warn(cli, "unexpected reply from the scheduler: no job id");
        goto out;
    }
    /* Once the job is accepted: a refusal says what was wrong alone. */
    submit_warn_ckpt(cli, &opts.spec);
    if (!opts.wait) {
        if (json)
            cli_print_body(&resp);
        else {
            printf("submitted job %lld\n", (long long)id);
            fflush(stdout);
            fprintf(stderr,
                "follow it with: lockstep logs -f %lld (its state: "
                "lockstep show %lld)\n",
                (long long)id, (long long)id);
        }
        status = CLI_EXIT_OK;
        goto out;
    }
    /* Waiting, stdout is the outcome alone (its first line says why a
     * job failed); that it was submitted is news for the terminal. */
    if (!json)
        fprintf(stderr, "submitted job %lld\n", (long long)id);
    status = submit_wait(cli, id, json, opts.retry_for_ms);
out:
    cJSON_Delete(job);
    cJSON_Delete(body);
    cli_resp_release(&resp);
    cli_submit_opts_release(&opts);
    return status;
}

const struct cli_cmd cli_cmd_submit = {
    .name = "submit",
    .summary = "submit a job",
    .usage =
        "usage: lockstep submit [options] [--] COMMAND [ARG...]\n"
        "       lockstep submit [options] --specs FILE|-\n"
        "\n"
        "  --name NAME           job name (default: basename of COMMAND)\n"
        "  --nodes N             nodes to run on (default 1)\n"
        "  --ranks-per-node R    processes per node (default 1)\n"
        "  --gpus-per-node G     GPUs per node (default 0)\n"
        "  --cpus-per-rank C     CPUs per process (default 1)\n"
        "  --memory-mb M         memory per node in MiB (default 0)\n"
        "  --priority P          -1000..1000, higher runs first (default 0)\n"
        "  --env K=V             set a variable for every rank (repeatable);\n"
        "                        --env K passes this shell's value of K\n"
        "  --export WHAT         which of this shell's variables the job takes:\n"
        "                        ALL (default; never credentials, terminal or\n"
        "                        rank variables), NONE, or VAR[,VAR=VALUE...]\n"
        "  --workdir DIR         working directory (default: the current one)\n"
        "  --max-restarts N      restarts after the job's own failures, e.g.\n"
        "                        a rank exiting non-zero (default 3)\n"
        "  --max-infra-restarts N\n"
        "                        restarts after infrastructure failures: node\n"
        "                        lost, hang, node excluded (default 20)\n"
        "  --hang-timeout SECS   restart when a rank makes no progress (a step\n"
        "                        reported through the SDK, or else output) for\n"
        "                        this long; 0 disables (default 1800)\n"
        "  --checkpoint-dir DIR  where the job keeps its checkpoints; a restart\n"
        "                        resumes from the newest complete one this\n"
        "                        job wrote (never from one already there)\n"
        "  --resume-from PATH|JOB\n"
        "                        continue an earlier run: attempt 1 (and any\n"
        "                        restart before this job's own first\n"
        "                        checkpoint) resumes from PATH, or from job\n"
        "                        JOB's latest complete checkpoint\n"
        "  --keep-checkpoints K  keep only the K newest complete checkpoints\n"
        "                        (default 0: keep all)\n"
        "  --gc-every D          every rank collects garbage at the same step,\n"
        "                        every D: 90s, 5m, 1h (a bare number is\n"
        "                        seconds) or 500steps; automatic GC is off\n"
        "                        (docs/cadence.md; needs the SDK's step())\n"
        "  --checkpoint-every D  every rank is told to checkpoint at the same\n"
        "                        step, every D (as --gc-every)\n"
        "  --wait                wait for the job to end, telling each change\n"
        "                        (pending and why, placed, running,\n"
        "                        restarting and why) on stderr (not with\n"
        "                        --json); exit 0 only if it SUCCEEDED (Ctrl-C\n"
        "                        ends the wait, not the job: exit 130)\n"
        "  --retry-for D         with --wait: wait out a scheduler that cannot\n"
        "                        be reached for up to D (30s, 5m, 1h; default\n"
        "                        5m; 0: give up at once), then resume\n"
        "  --wait-for-nodes      queue the job even if the cluster's nodes\n"
        "                        could never hold it (it waits for more to\n"
        "                        join); without it such a job is refused\n"
        "  --specs FILE|-        submit many jobs in one request: one JSON job\n"
        "                        spec a line (the fields of POST /v1/jobs;\n"
        "                        blank and # lines skipped), no COMMAND; the\n"
        "                        other options apply to every line that does\n"
        "                        not set the field itself\n"
        "  --json                print the job object the scheduler returns\n"
        "                        (with --specs: {\"count\", \"ids\"})\n",
    .opts = submit_opts,
    .min_args = 1,
    .max_args = -1,
    .missing = "no command given: put it after the options, e.g. "
               "lockstep submit -- python3 train.py",
    .fn = cmd_submit,
    .flags = CLI_CMD_OPTS_FIRST,
};
