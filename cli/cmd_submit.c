/*
 * cmd_submit.c - lockstep submit: send a job spec, optionally wait for it
 *
 * The arguments become a `struct proto_job_spec`, checked with the same
 * validator the scheduler runs (proto_job_spec_validate) so that a typo
 * is a usage error here rather than a 400 from the server. Option parsing
 * stops at the first word that is not an option, so
 * `lockstep submit --nodes 2 python3 train.py --lr 3e-4` needs no `--`.
 *
 * --wait polls the job until it reaches a final state. It outlives a
 * scheduler restart: while the scheduler cannot be reached (or answers
 * 5xx) it keeps trying for CLI_WAIT_OUTAGE_MS before giving up.
 */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/timeid.h"
#include "common/xalloc.h"

#define CLI_WAIT_MIN_MS 250
#define CLI_WAIT_MAX_MS 2000
#define CLI_WAIT_OUTAGE_MS 300000

void
cli_submit_opts_release(struct cli_submit_opts *opts)
{
    proto_job_spec_release(&opts->spec);
    memset(opts, 0, sizeof(*opts));
}

static int
opt_int(const char *what, const char *s, int64_t min, int64_t max,
    int64_t *out, struct err *err)
{
    char *end = NULL;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < min || v > max)
        return err_set(err, -EINVAL,
            "invalid value '%s' for %s: expected an integer from %lld to %lld",
            s, what, (long long)min, (long long)max);
    *out = v;
    return 0;
}

/* A path as given, or made absolute against the current directory. */
static int
abs_path(const char *what, const char *p, char **out, struct err *err)
{
    char *cwd;

    if (*p == '\0')
        return err_set(err, -EINVAL, "%s must not be empty", what);
    if (p[0] == '/') {
        free(*out);
        *out = xstrdup(p);
        return 0;
    }
    cwd = getcwd(NULL, 0);
    if (cwd == NULL) {
        int e = errno;

        return err_set(err, -e,
            "%s '%s' is relative and the current directory is unknown: %s",
            what, p, strerror(e));
    }
    free(*out);
    *out = xasprintf("%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", p);
    free(cwd);
    return 0;
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
                "variable", arg);
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
            "invalid --env '%.60s': '%.40s' is not a valid variable name",
            arg, kv.key);
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

int
cli_submit_parse(int argc, char **argv, struct cli_submit_opts *opts,
    struct err *err)
{
    enum {
        OPT_NAME = 256, OPT_NODES, OPT_RPN, OPT_GPN, OPT_CPR, OPT_MEM,
        OPT_PRIO, OPT_ENV, OPT_WORKDIR, OPT_RESTARTS, OPT_CKPT, OPT_WAIT,
        OPT_JSON, OPT_INFRA, OPT_HANG, OPT_KEEP,
    };
    static const struct option lopts[] = {
        { "name", required_argument, NULL, OPT_NAME },
        { "nodes", required_argument, NULL, OPT_NODES },
        { "ranks-per-node", required_argument, NULL, OPT_RPN },
        { "gpus-per-node", required_argument, NULL, OPT_GPN },
        { "cpus-per-rank", required_argument, NULL, OPT_CPR },
        { "memory-mb", required_argument, NULL, OPT_MEM },
        { "priority", required_argument, NULL, OPT_PRIO },
        { "env", required_argument, NULL, OPT_ENV },
        { "workdir", required_argument, NULL, OPT_WORKDIR },
        { "max-restarts", required_argument, NULL, OPT_RESTARTS },
        { "max-infra-restarts", required_argument, NULL, OPT_INFRA },
        { "hang-timeout", required_argument, NULL, OPT_HANG },
        { "keep-checkpoints", required_argument, NULL, OPT_KEEP },
        { "checkpoint-dir", required_argument, NULL, OPT_CKPT },
        { "wait", no_argument, NULL, OPT_WAIT },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct proto_job_spec *spec = &opts->spec;
    int64_t v = 0;
    int c, rc = 0;

    memset(opts, 0, sizeof(*opts));
    proto_job_spec_init(spec);
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, "+:h", lopts, NULL)) != -1) {
        const char *word = argv[optind - 1];

        switch (c) {
        case OPT_NAME:
            if (!proto_valid_name(optarg, PROTO_NAME_MAX))
                return err_set(err, -EINVAL,
                    "invalid --name '%.60s': use 1-%d characters of "
                    "A-Z a-z 0-9 . _ -", optarg, PROTO_NAME_MAX);
            free(spec->name);
            spec->name = xstrdup(optarg);
            break;
        case OPT_NODES:
            rc = opt_int("--nodes", optarg, 1, PROTO_NODES_MAX, &v, err);
            spec->nodes = (int)v;
            break;
        case OPT_RPN:
            rc = opt_int("--ranks-per-node", optarg, 1,
                PROTO_RANKS_PER_NODE_MAX, &v, err);
            spec->ranks_per_node = (int)v;
            break;
        case OPT_GPN:
            rc = opt_int("--gpus-per-node", optarg, 0, PROTO_GPUS_MAX, &v,
                err);
            spec->gpus_per_node = (int)v;
            break;
        case OPT_CPR:
            rc = opt_int("--cpus-per-rank", optarg, 0, PROTO_CPUS_MAX, &v,
                err);
            spec->cpus_per_rank = (int)v;
            break;
        case OPT_MEM:
            rc = opt_int("--memory-mb", optarg, 0, (int64_t)1 << 40, &v, err);
            spec->memory_mb_per_node = v;
            break;
        case OPT_PRIO:
            rc = opt_int("--priority", optarg, -1000, 1000, &v, err);
            spec->priority = (int)v;
            break;
        case OPT_ENV:
            rc = add_env(spec, optarg, err);
            break;
        case OPT_WORKDIR:
            rc = abs_path("--workdir", optarg, &spec->workdir, err);
            break;
        case OPT_RESTARTS:
            rc = opt_int("--max-restarts", optarg, 0, 1000, &v, err);
            spec->max_restarts = (int)v;
            break;
        case OPT_INFRA:
            rc = opt_int("--max-infra-restarts", optarg, 0, 10000, &v, err);
            spec->max_infra_restarts = (int)v;
            break;
        case OPT_HANG:
            rc = opt_int("--hang-timeout", optarg, 0, PROTO_HANG_TIMEOUT_MAX,
                &v, err);
            spec->hang_timeout_s = (int)v;
            break;
        case OPT_KEEP:
            rc = opt_int("--keep-checkpoints", optarg, 0, 100000, &v, err);
            spec->keep_checkpoints = (int)v;
            break;
        case OPT_CKPT:
            rc = abs_path("--checkpoint-dir", optarg, &spec->checkpoint_dir,
                err);
            break;
        case OPT_WAIT:
            opts->wait = true;
            break;
        case OPT_JSON:
            opts->json = true;
            break;
        case 'h':
            opts->help = true;
            return 0;
        case ':':
            return err_set(err, -EINVAL, "option '%s' requires a value",
                word);
        default:
            if (optopt && !(word[0] == '-' && word[1] == '-'))
                return err_set(err, -EINVAL, "unknown option '-%c'", optopt);
            return err_set(err, -EINVAL, "unknown option '%s'", word);
        }
        if (rc < 0)
            return rc;
    }
    if (optind >= argc)
        return err_set(err, -EINVAL,
            "no command given: put it after the options, e.g. "
            "lockstep submit -- python3 train.py");
    if ((size_t)(argc - optind) > PROTO_ARGV_MAX)
        return err_set(err, -EINVAL, "the command has more than %d arguments",
            PROTO_ARGV_MAX);
    spec->argc = (size_t)(argc - optind);
    spec->argv = xcalloc(spec->argc + 1, sizeof(*spec->argv));
    for (size_t i = 0; i < spec->argc; i++)
        spec->argv[i] = xstrdup(argv[optind + (int)i]);
    if (spec->workdir == NULL) {
        spec->workdir = getcwd(NULL, 0);
        if (spec->workdir == NULL) {
            int e = errno;

            return err_set(err, -e,
                "cannot find the current directory (%s): use --workdir",
                strerror(e));
        }
    }
    if ((rc = proto_job_spec_validate(spec, err)) < 0)
        return rc;
    return 0;
}

static void
sleep_ms(int64_t ms)
{
    struct timespec ts = { .tv_sec = ms / 1000,
        .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Poll the job until it is final. Returns the exit status. */
static int
submit_wait(struct cli *cli, int64_t id, bool json)
{
    char *path = xasprintf("/v1/jobs/%lld", (long long)id);
    char last[32] = "";
    struct cli_resp resp;
    int64_t interval = CLI_WAIT_MIN_MS, down_since = 0;
    bool tty = isatty(STDERR_FILENO);
    int status = CLI_EXIT_FAIL;

    cli_resp_init(&resp);
    for (;;) {
        cJSON *job = NULL;
        struct err err;
        const char *state;
        int rc;

        rc = cli_call(cli, "GET", path, NULL, CLI_HTTP_QUIET, &resp, &job,
            &err);
        if (rc < 0) {
            int64_t now = timeid_mono_ms();

            /* A 4xx will not get better (the job is gone, or not ours);
             * an outage or a 5xx may: the scheduler restarts in seconds. */
            if (rc == -EIO && resp.status < 500) {
                cli_warn(cli, "%s", err.msg);
                break;
            }
            if (down_since == 0) {
                down_since = now;
                cli_warn(cli, "%s; still waiting for job %lld", err.msg,
                    (long long)id);
            } else if (now - down_since > CLI_WAIT_OUTAGE_MS) {
                cli_warn(cli, "giving up on job %lld: %s", (long long)id,
                    err.msg);
                break;
            }
            sleep_ms(CLI_WAIT_MAX_MS);
            continue;
        }
        down_since = 0;
        state = cli_jstr(job, "state");
        if (tty && !json && strcmp(state, last) != 0 &&
            !cli_job_state_final(state)) {
            const char *reason = cli_jstr(job, "reason");

            fprintf(stderr, "job %lld %s%s%s\n", (long long)id, state,
                *reason ? ": " : "", reason);
        }
        snprintf(last, sizeof(last), "%s", state);
        if (cli_job_state_final(state)) {
            const char *reason = cli_jstr(job, "reason");

            if (json)
                cli_print_body(&resp);
            else if (strcmp(state, "SUCCEEDED") == 0 || *reason == '\0')
                printf("job %lld %s\n", (long long)id, state);
            else
                printf("job %lld %s: %s\n", (long long)id, state, reason);
            status = strcmp(state, "SUCCEEDED") == 0 ? CLI_EXIT_OK
                                                     : CLI_EXIT_FAIL;
            cJSON_Delete(job);
            break;
        }
        cJSON_Delete(job);
        fflush(stdout);
        sleep_ms(interval);
        interval = interval * 3 / 2;
        if (interval > CLI_WAIT_MAX_MS)
            interval = CLI_WAIT_MAX_MS;
    }
    cli_resp_release(&resp);
    free(path);
    return status;
}

int
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
    body = proto_job_spec_to_json(&opts.spec);
    if (cli_call(cli, "POST", "/v1/jobs", body, 0, &resp, &job, NULL) < 0)
        goto out;
    id = cli_jint(job, "id", 0);
    if (id <= 0) {
        cli_warn(cli, "unexpected reply from the scheduler: no job id");
        goto out;
    }
    if (!opts.wait) {
        if (json)
            cli_print_body(&resp);
        else
            printf("submitted job %lld\n", (long long)id);
        status = CLI_EXIT_OK;
        goto out;
    }
    if (!json) {
        printf("submitted job %lld\n", (long long)id);
        fflush(stdout);
    }
    status = submit_wait(cli, id, json);
out:
    cJSON_Delete(job);
    cJSON_Delete(body);
    cli_resp_release(&resp);
    cli_submit_opts_release(&opts);
    return status;
}
