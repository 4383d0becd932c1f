/*
 * test_cli.c - the CLI without a scheduler: the option parser every
 * command uses, submit's arguments becoming the job spec the API expects,
 * and the human formatting helpers
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_env.h"
#include "common/jsonx.h"
#include "common/xalloc.h"
#include "tests/tap.h"

#define ARGV(...) ((char *[]){ "submit", __VA_ARGS__, NULL })
#define ARGC(v) ((int)(sizeof(v) / sizeof(char *)) - 1)

static int
parse(int argc, char **argv, struct cli_submit_opts *o, struct err *e)
{
    err_clear(e);
    return cli_submit_parse(argc, argv, o, e);
}

static void
test_defaults(void)
{
    char **argv = ARGV("python3", "train.py", "--lr", "3e-4");
    struct cli_submit_opts o;
    struct err e;
    char *cwd = getcwd(NULL, 0);
    cJSON *json;
    int64_t v = -1;

    is_int(
        parse(ARGC(ARGV("python3", "train.py", "--lr", "3e-4")), argv, &o, &e),
        0, "a bare command parses");
    is_int(o.spec.argc, 4, "options after the command belong to it");
    is_str(o.spec.argv[3], "3e-4", "argv kept verbatim");
    ok(o.spec.argv[4] == NULL, "argv is NULL-terminated");
    is_int(o.spec.nodes, 1, "nodes default 1");
    is_int(o.spec.ranks_per_node, 1, "ranks_per_node default 1");
    is_int(o.spec.cpus_per_rank, 1, "cpus_per_rank default 1");
    ok(o.spec.name == NULL, "no name: the scheduler derives it");
    is_str(o.spec.workdir, cwd, "workdir defaults to the current directory");
    ok(!o.wait && !o.json, "no --wait, no --json");
    ok(!o.spec.wait_for_nodes, "no --wait-for-nodes");

    json = proto_job_spec_to_json(&o.spec);
    ok(jsonx_get_int(json, "version", true, 1, 1, &v, NULL) == 0 && v == 1,
        "the body carries version 1");
    ok(cJSON_GetObjectItem(json, "name") == NULL, "no name in the body");
    ok(cJSON_GetObjectItem(json, "wait_for_nodes") == NULL,
        "no wait_for_nodes in the body");
    cJSON_Delete(json);
    cli_submit_opts_release(&o);
    free(cwd);
}

static void
test_options(void)
{
    char **argv = ARGV("--name", "big-run.v2", "--nodes", "4",
        "--ranks-per-node", "8", "--gpus-per-node", "8", "--cpus-per-rank", "6",
        "--memory-mb", "65536", "--priority", "-5", "--env", "A=1", "--env",
        "B=x=y", "--env", "A=2", "--workdir", "/w", "--max-restarts", "3",
        "--checkpoint-dir", "/ckpt", "--wait", "--json", "--", "torchrun",
        "--nproc", "8");
    int argc = ARGC(ARGV("--name", "big-run.v2", "--nodes", "4",
        "--ranks-per-node", "8", "--gpus-per-node", "8", "--cpus-per-rank", "6",
        "--memory-mb", "65536", "--priority", "-5", "--env", "A=1", "--env",
        "B=x=y", "--env", "A=2", "--workdir", "/w", "--max-restarts", "3",
        "--checkpoint-dir", "/ckpt", "--wait", "--json", "--", "torchrun",
        "--nproc", "8"));
    struct cli_submit_opts o;
    struct err e;
    cJSON *json, *back;
    struct proto_job_spec spec;

    is_int(parse(argc, argv, &o, &e), 0, "every option parses");
    is_str(o.spec.name, "big-run.v2", "name");
    is_int(o.spec.nodes, 4, "nodes");
    is_int(o.spec.ranks_per_node, 8, "ranks per node");
    is_int(o.spec.gpus_per_node, 8, "gpus per node");
    is_int(o.spec.cpus_per_rank, 6, "cpus per rank");
    is_int(o.spec.memory_mb_per_node, 65536, "memory");
    is_int(o.spec.priority, -5, "negative priority");
    is_int(o.spec.nenv, 2, "a repeated --env key is kept once");
    is_str(o.spec.env[0].value, "2", "the last value of a key wins");
    is_str(o.spec.env[1].value, "x=y", "a value may contain '='");
    is_str(o.spec.workdir, "/w", "workdir");
    is_int(o.spec.max_restarts, 3, "max restarts");
    is_str(o.spec.checkpoint_dir, "/ckpt", "checkpoint dir");
    ok(o.wait && o.json, "--wait and --json");
    is_int(o.spec.argc, 3, "the command after --");
    is_str(o.spec.argv[1], "--nproc", "an option of the command stays");

    /* What we send is what the scheduler's validator accepts. */
    json = proto_job_spec_to_json(&o.spec);
    is_int(proto_job_spec_from_json(json, &spec, &e), 0,
        "the body passes the API's own validation");
    back = proto_job_spec_to_json(&spec);
    ok(cJSON_Compare(json, back, true), "and round-trips unchanged");
    cJSON_Delete(back);
    cJSON_Delete(json);
    proto_job_spec_release(&spec);
    cli_submit_opts_release(&o);
}

/* --wait-for-nodes: a spec field the scheduler accepts; not --wait. */
/* --specs FILE: no command, the options as the jobs' common fields. */
static void
test_specs(void)
{
    struct cli_submit_opts o;
    struct err e;

    is_int(parse(ARGC(ARGV("--gpus-per-node", "2", "--specs", "sweep.jsonl")),
               ARGV("--gpus-per-node", "2", "--specs", "sweep.jsonl"), &o, &e),
        0, "--specs without a command parses");
    is_str(o.specs, "sweep.jsonl", "--specs: the file");
    is_int(o.spec.gpus_per_node, 2, "--specs: options are kept for all");
    ok(o.spec.workdir != NULL && o.spec.workdir[0] == '/',
        "--specs: the working directory is filled in");
    cli_submit_opts_release(&o);
    is_int(parse(ARGC(ARGV("--specs", "-", "true")),
               ARGV("--specs", "-", "true"), &o, &e),
        -EINVAL, "--specs and a command: refused");
    ok(strstr(e.msg, "either --specs FILE or a command") != NULL,
        "saying so: %s", e.msg);
    cli_submit_opts_release(&o);
    is_int(parse(ARGC(ARGV("--wait", "--specs", "-")),
               ARGV("--wait", "--specs", "-"), &o, &e),
        -EINVAL, "--specs with --wait: refused");
    cli_submit_opts_release(&o);
    is_int(parse(ARGC(ARGV("--gpus-per-node", "2")),
               ARGV("--gpus-per-node", "2"), &o, &e),
        -EINVAL, "no command and no --specs: still a usage error");
    cli_submit_opts_release(&o);
}

/* --retry-for and what a failed poll during an outage leads to. */
static void
test_outage(void)
{
    char **argv = ARGV("--wait", "--retry-for", "90s", "true");
    char **bad = ARGV("--retry-for", "soon", "true");
    char **zero = ARGV("--retry-for", "0", "true");
    struct cli_submit_opts o;
    struct err e;

    is_int(parse(ARGC(ARGV("true")), ARGV("true"), &o, &e), 0, "no option");
    is_int((int)o.retry_for_ms, -1, "--retry-for: the default");
    cli_submit_opts_release(&o);
    is_int(
        parse(ARGC(ARGV("--wait", "--retry-for", "90s", "true")), argv, &o, &e),
        0, "--retry-for 90s parses");
    is_int((int)o.retry_for_ms, 90000, "as 90 s");
    cli_submit_opts_release(&o);
    is_int(parse(ARGC(ARGV("--retry-for", "0", "true")), zero, &o, &e), 0,
        "--retry-for 0 parses");
    is_int((int)o.retry_for_ms, 0, "as 0");
    cli_submit_opts_release(&o);
    is_int(parse(ARGC(ARGV("--retry-for", "soon", "true")), bad, &o, &e),
        -EINVAL, "--retry-for soon is refused");
    ok(strstr(e.msg, "invalid --retry-for 'soon'") != NULL, "naming it: %s",
        e.msg);
    cli_submit_opts_release(&o);

    is_int(cli_outage_decide(-EIO, 404, 0, 100, 5000), CLI_OUTAGE_FINAL,
        "a 4xx is an answer");
    is_int(cli_outage_decide(-EPROTO, 200, 0, 100, 5000), CLI_OUTAGE_FINAL,
        "a server that is not lockstep is final");
    is_int(cli_outage_decide(-ECONNREFUSED, 0, 0, 100, 5000), CLI_OUTAGE_FIRST,
        "a refused connection starts an outage");
    is_int(cli_outage_decide(-EIO, 503, 0, 100, 5000), CLI_OUTAGE_FIRST,
        "so does a 503");
    is_int(cli_outage_decide(-ECONNREFUSED, 0, 100, 5099, 5000),
        CLI_OUTAGE_RETRY, "within the bound: retry");
    is_int(cli_outage_decide(-ECONNREFUSED, 0, 100, 5100, 5000),
        CLI_OUTAGE_GIVE_UP, "at the bound: give up");
    is_int(cli_outage_decide(-ECONNREFUSED, 0, 0, 100, 0), CLI_OUTAGE_GIVE_UP,
        "--retry-for 0: give up at once");
}

static void
test_wait_for_nodes(void)
{
    char **argv = ARGV("--wait-for-nodes", "--nodes", "5", "true");
    struct cli_submit_opts o;
    struct proto_job_spec spec;
    struct err e;
    cJSON *json;

    is_int(parse(ARGC(ARGV("--wait-for-nodes", "--nodes", "5", "true")), argv,
               &o, &e),
        0, "--wait-for-nodes parses");
    ok(o.spec.wait_for_nodes && !o.wait, "it sets wait_for_nodes, not --wait");
    json = proto_job_spec_to_json(&o.spec);
    ok(cJSON_IsTrue(cJSON_GetObjectItem(json, "wait_for_nodes")),
        "the body says \"wait_for_nodes\": true");
    is_int(proto_job_spec_from_json(json, &spec, &e), 0,
        "which the API's validation accepts");
    ok(spec.wait_for_nodes, "and reads back");
    proto_job_spec_release(&spec);
    cJSON_Delete(json);
    cli_submit_opts_release(&o);
}

static void
test_resume_from(void)
{
    char **argv = ARGV("--resume-from", "42", "true");
    char **argv2 = ARGV("--resume-from", ".", "true");
    char **argv3 = ARGV("--resume-from", "/no/such/ckpt", "true");
    struct cli_submit_opts o;
    struct err e;
    char *cwd = getcwd(NULL, 0);
    cJSON *json;
    int64_t v = 0;

    is_int(parse(ARGC(ARGV("--resume-from", "42", "true")), argv, &o, &e), 0,
        "--resume-from JOB parses");
    ok(o.spec.resume_from_job == 42 && o.spec.resume_from == NULL,
        "digits are a job id");
    json = proto_job_spec_to_json(&o.spec);
    ok(jsonx_get_int(json, "resume_from_job", true, 1, 100, &v, NULL) == 0 &&
            v == 42 && cJSON_GetObjectItem(json, "resume_from") == NULL,
        "the body says \"resume_from_job\": 42");
    cJSON_Delete(json);
    cli_submit_opts_release(&o);

    is_int(parse(ARGC(ARGV("--resume-from", ".", "true")), argv2, &o, &e), 0,
        "--resume-from PATH parses");
    is_str(o.spec.resume_from, cwd, "a relative path is made absolute");
    cli_submit_opts_release(&o);

    ok(parse(ARGC(ARGV("--resume-from", "/no/such/ckpt", "true")), argv3, &o,
           &e) == -EINVAL &&
            strstr(e.msg, "/no/such/ckpt") != NULL &&
            strstr(e.msg, "No such file") != NULL,
        "a path that does not exist is refused: %s", e.msg);
    cli_submit_opts_release(&o);
    free(cwd);
}

/* The warning for a checkpoint directory that is not empty at submit. */
static void
test_ckpt_warning(void)
{
    char tmpl[] = "/tmp/test_cli.XXXXXX";
    char *dir = mkdtemp(tmpl), path[512];
    struct proto_job_spec spec;
    struct sbuf msg;

    if (dir == NULL) {
        ok(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    proto_job_spec_init(&spec);
    sbuf_init(&msg);
    ok(!cli_submit_ckpt_warning(&spec, &msg), "no checkpoint dir: no warning");
    spec.checkpoint_dir = xasprintf("%s/ck", dir);
    ok(!cli_submit_ckpt_warning(&spec, &msg), "an absent one: no warning");
    mkdir(spec.checkpoint_dir, 0755);
    ok(!cli_submit_ckpt_warning(&spec, &msg), "an empty one: no warning");
    snprintf(path, sizeof(path), "%s/step-10", spec.checkpoint_dir);
    mkdir(path, 0755);
    ok(cli_submit_ckpt_warning(&spec, &msg) &&
            strstr(msg.buf, "is not empty") != NULL &&
            strstr(msg.buf, "complete") == NULL &&
            strstr(msg.buf, "--resume-from") != NULL &&
            strchr(msg.buf, '\n') == NULL,
        "an incomplete step: one line, no complete one: %s", msg.buf);
    sbuf_reset(&msg);
    snprintf(path, sizeof(path), "%s/step-50", spec.checkpoint_dir);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/step-50/COMPLETE", spec.checkpoint_dir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    snprintf(path, sizeof(path), "%s/step-10/COMPLETE", spec.checkpoint_dir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    ok(cli_submit_ckpt_warning(&spec, &msg) &&
            strstr(msg.buf, "2 complete checkpoints, newest step-50") != NULL &&
            strstr(msg.buf, "never from what is there now") != NULL,
        "complete ones are counted, the newest named: %s", msg.buf);
    sbuf_reset(&msg);
    spec.resume_from_job = 7;
    ok(cli_submit_ckpt_warning(&spec, &msg) &&
            strstr(msg.buf, "attempt 1 resumes from job 7") != NULL,
        "with --resume-from JOB it says what attempt 1 uses: %s", msg.buf);
    sbuf_reset(&msg);
    spec.resume_from_job = 0;
    spec.resume_from = xasprintf("%s/step-50", spec.checkpoint_dir);
    ok(cli_submit_ckpt_warning(&spec, &msg) &&
            strstr(msg.buf, "attempt 1 resumes from '") != NULL &&
            strstr(msg.buf, "/step-50'") != NULL,
        "with --resume-from PATH too: %s", msg.buf);
    sbuf_release(&msg);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    if (system(path) != 0)
        diag("cannot remove %s", dir);
    proto_job_spec_release(&spec);
}

static void
test_env_passthrough(void)
{
    char **argv = ARGV("--env", "TEST_CLI_VAR", "true");
    char **bad = ARGV("--env", "TEST_CLI_UNSET_VAR", "true");
    struct cli_submit_opts o;
    struct err e;

    setenv("TEST_CLI_VAR", "from shell", 1);
    unsetenv("TEST_CLI_UNSET_VAR");
    is_int(parse(ARGC(ARGV("--env", "TEST_CLI_VAR", "true")), argv, &o, &e), 0,
        "--env NAME takes the shell's value");
    is_str(o.spec.env[0].value, "from shell", "value copied");
    cli_submit_opts_release(&o);
    ok(parse(ARGC(ARGV("--env", "TEST_CLI_UNSET_VAR", "true")), bad, &o, &e) <
                0 &&
            strstr(e.msg, "TEST_CLI_UNSET_VAR"),
        "--env NAME of an unset variable is an error naming it");
    cli_submit_opts_release(&o);
}

/* ---- the submitter's environment (cli_env.c) ----------------------------- */

static const char *
spec_env(const struct proto_job_spec *spec, const char *key)
{
    for (size_t i = 0; i < spec->nenv; i++) {
        if (strcmp(spec->env[i].key, key) == 0)
            return spec->env[i].value;
    }
    return NULL;
}

/* What --env K=V leaves in the spec. */
static void
add_env_kv(struct proto_job_spec *spec, const char *key, const char *value)
{
    spec->env = xreallocarray(spec->env, spec->nenv + 1, sizeof(*spec->env));
    spec->env[spec->nenv].key = xstrdup(key);
    spec->env[spec->nenv].value = xstrdup(value);
    spec->nenv++;
}

static void
test_env_stays(void)
{
    static const char *const stay[] = { "LOCKSTEP_TOKEN", "LOCKSTEP_SERVER",
        "LOCKSTEP_ANYTHING_NEW", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "KRB5CCNAME",
        "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "TERM", "TERMCAP",
        "COLORTERM", "SHLVL", "PWD", "OLDPWD", "_", "DBUS_SESSION_BUS_ADDRESS",
        "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "XDG_SESSION_TYPE", "RANK",
        "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK",
        "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE",
        "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
        "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE", "NOTIFY_SOCKET",
        "LISTEN_FDS", NULL };
    static const char *const travel[] = { "PATH", "HOME", "PYTHONPATH",
        "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH", "OMP_NUM_THREADS",
        "XDG_CONFIG_HOME", "LOCKSTEPX", "__", "TERMINFO_DIRS_X", "RANKS",
        "NCCL_DEBUG", "HF_HOME", NULL };
    size_t i;

    for (i = 0; stay[i] != NULL; i++)
        ok(cli_env_stays(stay[i]), "%s never travels", stay[i]);
    for (i = 0; travel[i] != NULL; i++)
        ok(!cli_env_stays(travel[i]), "%s travels", travel[i]);
}

static void
test_export(void)
{
    char *env[] = { "PATH=/venv/bin:/usr/bin", "MY_VAR=1", "OTHER=o",
        "LOCKSTEP_TOKEN=lst_secret", "LOCKSTEP_SERVER=/s", "SSH_AUTH_SOCK=/a",
        "DISPLAY=:0", "TERM=xterm", "XDG_SESSION_ID=3", "PWD=/home/a",
        "SHLVL=2", "_=/usr/bin/lockstep", "RANK=5", "MASTER_ADDR=h",
        "CUDA_VISIBLE_DEVICES=0", "TORCHELASTIC_ERROR_FILE=/x",
        "BASH_FUNC_ml%%=() {  :", "NOEQUALS", "OMP_NUM_THREADS=4",
        "MY_VAR=second", NULL };
    struct proto_job_spec spec;
    struct err e;

    proto_job_spec_init(&spec);
    add_env_kv(&spec, "MY_VAR", "flag"); /* an --env first */
    is_int(cli_env_export(&spec, NULL, env, &e), 0, "ALL is the default");
    is_int(spec.nenv, 4, "ALL takes what may travel, once each");
    is_str(spec_env(&spec, "MY_VAR"), "flag", "an --env wins over the shell");
    is_str(spec_env(&spec, "PATH"), "/venv/bin:/usr/bin", "PATH travels");
    is_str(spec_env(&spec, "OTHER"), "o", "a shell variable travels");
    is_str(spec_env(&spec, "OMP_NUM_THREADS"), "4", "OMP_NUM_THREADS travels");
    ok(spec_env(&spec, "LOCKSTEP_TOKEN") == NULL &&
            spec_env(&spec, "SSH_AUTH_SOCK") == NULL &&
            spec_env(&spec, "DISPLAY") == NULL &&
            spec_env(&spec, "RANK") == NULL &&
            spec_env(&spec, "TORCHELASTIC_ERROR_FILE") == NULL,
        "credentials, the session and rank variables stay");
    ok(spec_env(&spec, "BASH_FUNC_ml%%") == NULL,
        "an exported shell function is not a variable: left out");
    proto_job_spec_release(&spec);

    proto_job_spec_init(&spec);
    add_env_kv(&spec, "ONLY", "this");
    ok(cli_env_export(&spec, "NONE", env, &e) == 0 && spec.nenv == 1,
        "NONE takes nothing: only the --env");
    proto_job_spec_release(&spec);

    proto_job_spec_init(&spec);
    is_int(cli_env_export(&spec, "MY_VAR,SET=a=b", env, &e), 0,
        "a list of NAME and NAME=VALUE");
    ok(spec.nenv == 2 && strcmp(spec_env(&spec, "MY_VAR"), "1") == 0 &&
            strcmp(spec_env(&spec, "SET"), "a=b") == 0,
        "takes those only: the first MY_VAR, and SET (its value may hold =)");
    proto_job_spec_release(&spec);

    proto_job_spec_init(&spec);
    ok(cli_env_export(&spec, "SET=x,ALL", env, &e) == 0 && spec.nenv == 5 &&
            strcmp(spec_env(&spec, "SET"), "x") == 0,
        "ALL in a list: everything, and the extra");
    proto_job_spec_release(&spec);

    proto_job_spec_init(&spec);
    ok(cli_env_export(&spec, "MY_VAR,UNSET_T", env, &e) == -EINVAL &&
            strstr(e.msg, "UNSET_T is not set") != NULL,
        "a listed variable that is not set is an error naming it: %s", e.msg);
    proto_job_spec_release(&spec);
}

static void
test_export_limits(void)
{
    char **env = xcalloc(PROTO_ENV_MAX + 2, sizeof(*env));
    char *big = xmalloc(PROTO_ENV_VALUE_MAX + 8);
    char *bigenv[] = { big, NULL };
    struct proto_job_spec spec;
    struct err e;
    size_t i;

    for (i = 0; i < PROTO_ENV_MAX; i++)
        env[i] = xasprintf("V%zu=x", i);
    proto_job_spec_init(&spec);
    is_int(cli_env_export(&spec, NULL, env, &e), 0,
        "%d variables are within the limit", PROTO_ENV_MAX);
    proto_job_spec_release(&spec);
    env[PROTO_ENV_MAX] = xstrdup("ONE_MORE=x");
    proto_job_spec_init(&spec);
    ok(cli_env_export(&spec, NULL, env, &e) == -E2BIG &&
            strstr(e.msg, "257") != NULL && strstr(e.msg, "256") != NULL &&
            strstr(e.msg, "--export") != NULL,
        "one more is refused, naming the limit and --export: %s", e.msg);
    proto_job_spec_release(&spec);
    for (i = 0; env[i] != NULL; i++)
        free(env[i]);
    free(env);

    memcpy(big, "BIG=", 4);
    memset(big + 4, 'x', PROTO_ENV_VALUE_MAX);
    big[PROTO_ENV_VALUE_MAX + 4] = '\0';
    proto_job_spec_init(&spec);
    is_int(cli_env_export(&spec, NULL, bigenv, &e), 0,
        "a value of %d bytes is within the limit", PROTO_ENV_VALUE_MAX);
    proto_job_spec_release(&spec);
    big[PROTO_ENV_VALUE_MAX + 4] = 'x';
    big[PROTO_ENV_VALUE_MAX + 5] = '\0';
    proto_job_spec_init(&spec);
    ok(cli_env_export(&spec, NULL, bigenv, &e) == -E2BIG &&
            strstr(e.msg, "BIG is 32769 bytes") != NULL &&
            strstr(e.msg, "32768") != NULL,
        "a longer one is refused, naming it and the limit: %s", e.msg);
    proto_job_spec_release(&spec);
    free(big);
}

static void
test_relative_paths(void)
{
    char **argv = ARGV("--workdir", "sub/dir", "--checkpoint-dir", "ck",
        "true");
    struct cli_submit_opts o;
    struct err e;
    char *cwd = getcwd(NULL, 0);
    char want[4200];

    is_int(parse(ARGC(ARGV("--workdir", "sub/dir", "--checkpoint-dir", "ck",
                     "true")),
               argv, &o, &e),
        0, "relative paths parse");
    snprintf(want, sizeof(want), "%s/sub/dir", strcmp(cwd, "/") ? cwd : "");
    is_str(o.spec.workdir, want, "a relative workdir is made absolute");
    snprintf(want, sizeof(want), "%s/ck", strcmp(cwd, "/") ? cwd : "");
    is_str(o.spec.checkpoint_dir, want, "so is a relative checkpoint dir");
    cli_submit_opts_release(&o);
    free(cwd);
}

/* A case's command line in argv: first, then args (NULL-terminated, at
 * most 6), then NULL. Returns argc. */
static int
case_argv(char **argv, const char *first, const char *const *args)
{
    int argc = 0;

    argv[argc++] = (char *)first;
    for (int j = 0; args[j]; j++)
        argv[argc++] = (char *)args[j];
    argv[argc] = NULL;
    return argc;
}

/* is_str on a string the test owns, which it then frees. */
static void
is_str_free(char *got, const char *want, const char *name)
{
    is_str(got, want, "%s", name);
    free(got);
}

/* Each bad command line fails with a message naming the culprit. */
static void
test_errors(void)
{
    static const struct {
        const char *args[6];
        const char *want;
    } cases[] = {
        { { NULL }, "no command" },
        { { "--nodes", "2", NULL }, "no command" },
        { { "--nodes", "2", "--", NULL }, "no command" },
        { { "--bogus", "true", NULL }, "'--bogus'" },
        { { "-x", "true", NULL }, "'-x'" },
        { { "--nodes", NULL }, "'--nodes' requires a value" },
        { { "--nodes", "0", "true", NULL }, "--nodes" },
        { { "--nodes", "two", "true", NULL }, "'two'" },
        { { "--nodes", "10001", "true", NULL }, "--nodes" },
        { { "--ranks-per-node", "0", "true", NULL }, "--ranks-per-node" },
        { { "--priority", "1001", "true", NULL }, "--priority" },
        { { "--memory-mb", "-1", "true", NULL }, "--memory-mb" },
        { { "--max-restarts", "1001", "true", NULL }, "--max-restarts" },
        { { "--name", "has space", "true", NULL }, "--name" },
        { { "--env", "NOEQUALS-", "true", NULL }, "--env" },
        { { "--env", "1X=2", "true", NULL }, "'1X'" },
        { { "--env", "=v", "true", NULL }, "--env" },
        { { "--workdir", "", "true", NULL }, "--workdir" },
        { { "--export", "NONE,PATH", "true", NULL }, "NONE" },
        { { "--export", "PATH,,HOME", "true", NULL }, "empty entry" },
        { { "--export", "", "true", NULL }, "empty entry" },
        { { "--export", "1X", "true", NULL }, "'1X'" },
        { { "--export=LOCKSTEP_TOKEN", "true", NULL }, "never travels" },
        { { "--export=ALL,DISPLAY", "true", NULL }, "DISPLAY never" },
        { { "--", "", NULL }, "argv" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *argv[8];
        struct cli_submit_opts o;
        struct err e;
        int argc = case_argv(argv, "submit", cases[i].args), rc;

        rc = parse(argc, argv, &o, &e);
        ok(rc == -EINVAL && strstr(e.msg, cases[i].want) != NULL,
            "case %zu fails naming %s", i, cases[i].want);
        if (rc != -EINVAL || strstr(e.msg, cases[i].want) == NULL)
            diag("  rc %d, message '%s'", rc, e.msg);
        cli_submit_opts_release(&o);
    }
}

static void
test_help(void)
{
    char **argv = ARGV("--help");
    struct cli_submit_opts o;
    struct err e;

    is_int(parse(ARGC(ARGV("--help")), argv, &o, &e), 0, "--help parses");
    ok(o.help, "and asks for help");
    cli_submit_opts_release(&o);
}

/* ---- the option helper (cli_opt.c) --------------------------------------- */

struct t_opts {
    bool flag;
    const char *str;
    int small;
    int64_t big;
    const char *called;
    bool follow;
    const char *word;
};

static int
t_set(void *opts, const char *value, struct sbuf *why)
{
    if (strcmp(value, "bad") == 0) {
        sbuf_addf(why, "bad value '%s'", value);
        return -ERANGE;
    }
    ((struct t_opts *)opts)->called = value;
    return 0;
}

static const struct cli_opt t_opt_table[] = {
    CLI_OPT_FLAG("flag", struct t_opts, flag),
    CLI_OPT_STR("str", struct t_opts, str),
    CLI_OPT_INT("small", struct t_opts, small, -5, 5),
    CLI_OPT_INT("big", struct t_opts, big, 0, INT64_MAX),
    CLI_OPT_CALL("call", STR, t_set),
    CLI_OPT_FLAG_LETTER("follow", 'f', struct t_opts, follow),
    CLI_OPT_WORD("word", struct t_opts, word, "one", "two", "three"),
    CLI_OPT_END,
};

static const struct cli_cmd t_cmd = {
    .name = "t",
    .usage = "usage: lockstep t THING [THING]\n",
    .opts = t_opt_table,
    .min_args = 1,
    .max_args = 2,
    .missing = "which thing?",
    .hint = "one or two",
};

#define TARGV(...) ((char *[]){ "t", __VA_ARGS__, NULL })

/* Parse args against cmd into a fresh t_opts (small defaults to 1). */
static int
tparse(const struct cli_cmd *cmd, char **argv, struct t_opts *o,
    struct cli_args *a, struct sbuf *why)
{
    int argc = 0;

    while (argv[argc])
        argc++;
    memset(o, 0, sizeof(*o));
    o->small = 1;
    sbuf_reset(why);
    return cli_parse_opts(cmd, argc, argv, o, a, why);
}

static void
test_opt_kinds(void)
{
    /* Operands point into argv: it must outlive the checks. */
    char **argv = TARGV("a", "--flag", "--str", "s", "--small", "-5", "--big",
        "9000000000", "--call", "c", "-f", "b", "--json");
    char word[] = "two";
    struct t_opts o;
    struct cli_args a;
    struct sbuf why;

    sbuf_init(&why);
    is_int(tparse(&t_cmd, argv, &o, &a, &why), 0,
        "every kind of option parses");
    ok(o.flag && o.follow, "flags, long and short, set their bool");
    is_str(o.str, "s", "a string is stored");
    is_int(o.small, -5, "an int target");
    ok(o.big == 9000000000LL, "an int64_t target");
    is_str(o.called, "c", "a setter gets the value");
    ok(a.json && !a.help, "--json is everyone's");
    is_int(a.argc, 2, "operands between options are kept");
    ok(a.argc == 2 && strcmp(a.argv[0], "a") == 0 &&
            strcmp(a.argv[1], "b") == 0,
        "in order");

    is_int(tparse(&t_cmd, TARGV("x"), &o, &a, &why), 0, "no options");
    ok(!o.flag && o.str == NULL && o.small == 1 && !a.json,
        "targets keep their defaults");
    is_int(tparse(&t_cmd, TARGV("--sm", "3", "x"), &o, &a, &why), 0,
        "an unambiguous prefix of a long option");
    is_int(o.small, 3, "names its option");
    is_int(tparse(&t_cmd, TARGV("--help", "--bogus"), &o, &a, &why), 0,
        "--help stops parsing");
    ok(a.help && why.len == 0, "and asks for help");
    is_int(tparse(&t_cmd, TARGV("-h"), &o, &a, &why), 0, "so does -h");
    ok(a.help, "-h asks for help, with no operand needed");
    is_int(tparse(&t_cmd, TARGV("--word", word, "x"), &o, &a, &why), 0,
        "a word of the list");
    ok(o.word != NULL && strcmp(o.word, "two") == 0 && o.word != word,
        "is stored as the list's own word, not argv's");
    sbuf_release(&why);
}

/* Each bad command line fails with the message the CLI prints. */
static void
test_opt_errors(void)
{
    static const struct {
        const char *args[5];
        int rc;
        const char *want;
    } cases[] = {
        { { "--bogus", "x", NULL }, -EINVAL, "unknown option '--bogus'" },
        { { "-x", NULL }, -EINVAL, "unknown option '-x'" },
        { { "-fx", NULL }, -EINVAL, "unknown option '-x'" },
        { { "--flag=1", NULL }, -EINVAL, "unknown option '--flag=1'" },
        { { "x", "--str", NULL }, -EINVAL, "option '--str' requires a value" },
        { { "--small", "6", NULL }, -EINVAL,
            "invalid value '6' for --small: expected an integer from -5 to "
            "5" },
        { { "--small", "two", NULL }, -EINVAL,
            "invalid value 'two' for --small" },
        { { "--big", "-1", NULL }, -EINVAL, "invalid value '-1' for --big" },
        { { "--call", "bad", NULL }, -ERANGE, "bad value 'bad'" },
        { { "--bogus", "--help", NULL }, -EINVAL, "unknown option" },
        { { "--flag", NULL }, -EINVAL, "which thing?" },
        { { "a", "b", "c", "d", NULL }, -EINVAL,
            "unexpected argument 'c' (one or two)" },
        { { "--word", "four", NULL }, -EINVAL,
            "invalid --word 'four': expected one, two or three" },
        { { "--word", "One", NULL }, -EINVAL, "invalid --word 'One'" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *argv[8];
        struct t_opts o;
        struct cli_args a;
        struct sbuf why;
        int rc;

        case_argv(argv, "t", cases[i].args);
        sbuf_init(&why);
        rc = tparse(&t_cmd, argv, &o, &a, &why);
        ok(rc == cases[i].rc &&
                strncmp(why.buf, cases[i].want, strlen(cases[i].want)) == 0,
            "option case %zu: %s", i, cases[i].want);
        if (rc != cases[i].rc)
            diag("  rc %d, message '%s'", rc, why.buf);
        sbuf_release(&why);
    }
}

static void
test_opt_flags(void)
{
    struct cli_cmd first = t_cmd, nojson = t_cmd;
    char **argv = TARGV("--flag", "a", "--str", "s");
    char **json = TARGV("x", "--json");
    struct t_opts o;
    struct cli_args a;
    struct sbuf why;
    struct cli cli = { .cmd = &t_cmd };

    first.flags = CLI_CMD_OPTS_FIRST;
    first.max_args = -1;
    nojson.flags = CLI_CMD_NO_JSON;
    sbuf_init(&why);
    is_int(tparse(&first, argv, &o, &a, &why), 0, "CLI_CMD_OPTS_FIRST parses");
    ok(o.flag && o.str == NULL, "options end at the first operand");
    ok(a.argc == 3 && strcmp(a.argv[1], "--str") == 0,
        "the operands keep their own options");
    ok(tparse(&nojson, TARGV("x", "--json"), &o, &a, &why) == -EINVAL &&
            strcmp(why.buf, "unknown option '--json'") == 0,
        "CLI_CMD_NO_JSON: no --json");

    /* The wrapper: --json reaches the whole command through cli. */
    memset(&o, 0, sizeof(o));
    is_int(cli_parse(&cli, 3, json, &o, &a), CLI_CONTINUE,
        "cli_parse goes on after good options");
    ok(cli.json && a.argc == 1, "and sets cli->json");
    sbuf_release(&why);
}

/* What the real entries promise: names, operand counts, usage texts. */
static void
test_cmd_entries(void)
{
    static const struct cli_cmd *const cmds[] = { &cli_cmd_submit,
        &cli_cmd_jobs, &cli_cmd_show, &cli_cmd_logs, &cli_cmd_cancel,
        &cli_cmd_nodes, &cli_cmd_node, &cli_cmd_cordon, &cli_cmd_uncordon,
        &cli_cmd_drain, &cli_cmd_health, &cli_cmd_token, &cli_cmd_stats,
        &cli_cmd_whoami, &cli_cmd_admin, &cli_cmd_replicas, &cli_cmd_help,
        NULL };
    struct cli_args a;
    struct sbuf why;
    bool all_ok = true;

    for (size_t i = 0; cmds[i]; i++) {
        const struct cli_cmd *c = cmds[i];
        char want[64];

        snprintf(want, sizeof(want), "usage: lockstep %s ", c->name);
        if (!c->fn || !c->summary ||
            strncmp(c->usage, want, strlen(want)) != 0) {
            diag("entry '%s' is incomplete", c->name);
            all_ok = false;
        }
        for (const struct cli_opt *o = c->opts; o && o->name; o++) {
            snprintf(want, sizeof(want), "--%s", o->name);
            /* uncordon knows --evict only to refuse it. */
            if (strstr(c->usage, want) == NULL && c != &cli_cmd_uncordon) {
                diag("%s: %s is not in the usage", c->name, want);
                all_ok = false;
            }
        }
        if (!(c->flags & CLI_CMD_NO_JSON) && c != &cli_cmd_help &&
            strstr(c->usage, "--json") == NULL) {
            diag("%s: --json is not in the usage", c->name);
            all_ok = false;
        }
    }
    ok(all_ok, "every entry has a function, a summary, its usage and "
               "options");
    ok(cli_cmd_find(cmds, "submit") == &cli_cmd_submit &&
            cli_cmd_find(cmds, "sub") == NULL,
        "commands are found by exact name only");

    sbuf_init(&why);
    is_int(
        cli_parse_opts(&cli_cmd_show, 3, ARGV("12", "--json"), NULL, &a, &why),
        0, "show JOB --json");
    ok(a.json && a.argc == 1, "one operand and --json");
    ok(cli_parse_opts(&cli_cmd_show, 1, ARGV(NULL), NULL, &a, &why) < 0 &&
            strcmp(why.buf, "which job? give its id") == 0,
        "show without a job asks which");
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_show, 3, ARGV("1", "2"), NULL, &a, &why) < 0 &&
            strcmp(why.buf, "unexpected argument '2'") == 0,
        "show refuses a second job");
    sbuf_reset(&why);
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_events, 2, ARGV("n1"), NULL, &a, &why) < 0 &&
            strstr(why.buf, "n1") != NULL,
        "events takes no operand: %s", why.buf);
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_nodes, 2, ARGV("n1"), NULL, &a, &why) < 0 &&
            strcmp(why.buf, "unexpected argument 'n1' (for one node: "
                            "lockstep node NAME)") == 0,
        "nodes NAME points to node");
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_cancel, 1, ARGV(NULL), NULL, &a, &why) < 0 &&
            strcmp(why.buf, "which job? give one or more ids") == 0,
        "cancel without a job asks which");
    sbuf_reset(&why);
    is_int(
        cli_parse_opts(&cli_cmd_cancel, 4, ARGV("1", "2", "3"), NULL, &a, &why),
        0, "cancel takes any number of jobs");
    sbuf_release(&why);
}

static void
test_fmt(void)
{
    cJSON *arr = cJSON_Parse("[0,1,2,3,6,8,9]");
    cJSON *one = cJSON_Parse("[12]");
    cJSON *empty = cJSON_Parse("[]");
    cJSON *labels = cJSON_Parse("{\"rack\":\"r1\",\"zone\":\"a\"}");
    cJSON *argv = cJSON_Parse("[\"python3\",\"-c\",\"print('hi')\",\"\"]");
    char buf[32];
    int64_t now = 1000000000;

    is_str_free(cli_fmt_int_list(arr, true), "0-3,6,8-9", "compact GPU ranges");
    is_str_free(cli_fmt_int_list(arr, false), "0,1,2,3,6,8,9", "plain lists");
    is_str_free(cli_fmt_int_list(one, true), "12", "one element");
    is_str_free(cli_fmt_int_list(empty, true), "-", "empty list");
    is_str_free(cli_fmt_labels(labels), "rack=r1,zone=a", "labels");
    is_str_free(cli_fmt_argv(argv), "python3 -c 'print('\\''hi'\\'')' ''",
        "argv quoted for a shell");

    is_str(cli_fmt_age(0, now, buf, sizeof(buf)), "-", "age of nothing");
    is_str(cli_fmt_age(now - 45000, now, buf, sizeof(buf)), "45s", "seconds");
    is_str(cli_fmt_age(now - 12 * 60000 - 5000, now, buf, sizeof(buf)), "12m",
        "minutes");
    is_str(cli_fmt_age(now - 200 * 60000, now, buf, sizeof(buf)), "3h20m",
        "hours");
    is_str(cli_fmt_age(now - 52 * 3600000LL, now, buf, sizeof(buf)), "2d4h",
        "days");
    is_str(cli_fmt_mb(512, buf, sizeof(buf)), "512M", "MiB");
    is_str(cli_fmt_mb(16384, buf, sizeof(buf)), "16G", "GiB");
    is_str(cli_fmt_mb(1536, buf, sizeof(buf)), "1.5G", "fractional GiB");

    is_str(cli_job_state_parse("running"), "RUNNING",
        "state names ignore case");
    ok(cli_job_state_parse("RUN") == NULL, "no prefix matching of states");
    ok(cli_job_state_final("CANCELLED") && !cli_job_state_final("RESTARTING"),
        "final states");

    cJSON_Delete(arr);
    cJSON_Delete(one);
    cJSON_Delete(empty);
    cJSON_Delete(labels);
    cJSON_Delete(argv);
}

/* Found by fuzzing (fuzz/corpus/cli_reply/regress-huge-number): a reply's
 * number outside int64_t was converted anyway, which is undefined
 * behaviour (UBSan stops there); it now reads as absent. */
static void
test_reply_numbers(void)
{
    cJSON *o = cJSON_Parse("{\"a\":1.2e21,\"b\":-1e300,\"c\":42,"
                           "\"d\":-9223372036854775808,\"e\":\"7\"}");
    cJSON *arr = cJSON_Parse("[1,2,1e30,4]");

    is_int(cli_jint(o, "a", -1), -1, "a number above int64_t reads as absent");
    is_int(cli_jint(o, "b", -1), -1, "one below it too");
    is_int(cli_jint(o, "c", -1), 42, "an integer reads as itself");
    ok(cli_jint(o, "d", 0) == INT64_MIN, "-2^63 is an int64_t");
    is_int(cli_jint(o, "e", -1), -1, "a string is no number");
    is_str_free(cli_fmt_int_list(arr, false), "1,2,0,4",
        "a list's element outside int64_t prints as 0");
    cJSON_Delete(o);
    cJSON_Delete(arr);
}

static void
test_table(void)
{
    static const char *const h[] = { "ID", "NODES×RANKS", "REASON" };
    struct cli_table *t = cli_table_create(h, 3);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    cli_table_row(t);
    cli_table_cell(t, "%d", 12);
    cli_table_cell(t, "2×4");
    cli_table_cell(t, "needs\n2 nodes");
    cli_table_row(t);
    cli_table_cell(t, "%d", 7);
    cli_table_cell(t, "1×1");
    cli_table_cell(t, "%s", "");
    cli_table_print(t, f, 0);
    fclose(f);
    is_str(out,
        "ID  NODES×RANKS  REASON\n"
        "12  2×4          needs 2 nodes\n"
        "7   1×1\n",
        "columns align by characters, not bytes; no trailing blanks");
    free(out);
    cli_table_destroy(t);
}

/* The lines cli_progress_update adds for the job object js. */
static char *
progress(struct cli_progress *p, const char *js)
{
    cJSON *job = cJSON_Parse(js);
    struct sbuf out;

    sbuf_init(&out);
    cli_progress_update(p, job, &out);
    cJSON_Delete(job);
    return sbuf_detach(&out, NULL);
}

#define ATT1                                                                   \
    "{\"attempt\":1,\"reason\":\"rank 0 exited with code 3\","                 \
    "\"nodes\":[{\"node\":\"n1\"},{\"node\":\"n2\"}]}"
#define REQ1                                                                   \
    "{\"attempt\":1,\"reason\":\"requeued by alice\","                         \
    "\"nodes\":[{\"node\":\"n1\"}]}"
#define ATT2 "{\"attempt\":2,\"reason\":\"\",\"nodes\":[{\"node\":\"n3\"}]}"

static void
test_progress(void)
{
    struct cli_progress p;
    char *s;

    cli_progress_init(&p, 7);
    s = progress(&p, "{\"state\":\"PENDING\",\"reason\":\"needs 3 nodes\","
                     "\"attempt\":0,\"attempts\":[]}");
    is_str(s, "job 7 PENDING: needs 3 nodes\n", "pending, with why");
    free(s);
    s = progress(&p, "{\"state\":\"PENDING\",\"reason\":\"needs 3 nodes\","
                     "\"attempt\":0,\"attempts\":[]}");
    is_str(s, "", "no change, no line");
    free(s);
    s = progress(&p, "{\"state\":\"PENDING\",\"reason\":\"needs 2 nodes\","
                     "\"attempt\":0,\"attempts\":[]}");
    is_str(s, "job 7 PENDING: needs 2 nodes\n", "a new reason is a change");
    free(s);
    s = progress(&p, "{\"state\":\"PLACED\",\"reason\":\"\",\"attempt\":1,"
                     "\"attempts\":[" ATT1 "]}");
    is_str(s, "job 7 PLACED on n1, n2 (attempt 1)\n", "placed on which nodes");
    free(s);
    s = progress(&p, "{\"state\":\"RUNNING\",\"reason\":\"\",\"attempt\":1,"
                     "\"attempts\":[" ATT1 "]}");
    is_str(s, "job 7 RUNNING (attempt 1)\n", "running");
    free(s);
    s = progress(&p, "{\"state\":\"RESTARTING\",\"reason\":\"rank 0 exited\","
                     "\"attempt\":1,\"attempts\":[" ATT1 "]}");
    is_str(s, "job 7 RESTARTING after attempt 1: rank 0 exited\n",
        "restarting, with why");
    free(s);
    s = progress(&p,
        "{\"state\":\"RESTARTING\",\"reason\":\"rank 0 exited; "
        "next attempt in 5 ms\",\"attempt\":1,\"attempts\":[" ATT1 "]}");
    is_str(s, "", "a restarting job's reason is told once");
    free(s);
    s = progress(&p, "{\"state\":\"RUNNING\",\"reason\":\"\",\"attempt\":2,"
                     "\"attempts\":[" ATT1 "," ATT2 "]}");
    is_str(s, "job 7 PLACED on n3 (attempt 2)\njob 7 RUNNING (attempt 2)\n",
        "a missed PLACED is told before RUNNING");
    free(s);
    s = progress(&p, "{\"state\":\"SUCCEEDED\",\"reason\":\"\",\"attempt\":2,"
                     "\"attempts\":[" ATT1 "," ATT2 "]}");
    is_str(s, "", "the end is the caller's to print");
    free(s);
    cli_progress_release(&p);

    cli_progress_init(&p, 8);
    free(progress(&p, "{\"state\":\"RUNNING\",\"reason\":\"\",\"attempt\":1,"
                      "\"attempts\":[" ATT1 "]}"));
    s = progress(&p, "{\"state\":\"PLACED\",\"reason\":\"\",\"attempt\":2,"
                     "\"attempts\":[" ATT1 "," ATT2 "]}");
    is_str(s,
        "job 8 RESTARTING after attempt 1: rank 0 exited with code 3\n"
        "job 8 PLACED on n3 (attempt 2)\n",
        "a missed restart is told from the attempt's reason");
    free(s);
    cli_progress_release(&p);

    cli_progress_init(&p, 9);
    free(progress(&p, "{\"state\":\"RUNNING\",\"reason\":\"\",\"attempt\":1,"
                      "\"attempts\":[" REQ1 "]}"));
    s = progress(&p, "{\"state\":\"PLACED\",\"reason\":\"\",\"attempt\":2,"
                     "\"attempts\":[" REQ1 "," ATT2 "]}");
    is_str(s, "job 9 PLACED on n3 (attempt 2)\n",
        "a requeue the polls missed is not told as a restart");
    free(s);
    cli_progress_release(&p);
}

/* history --since: durations back from now, local dates and times. */
static void
test_since(void)
{
    static const char *const bad[] = { "", "yesterday", "2h-", "h", "5x",
        "2026-13-01", "2026-11-24 25:00", "1d 2h", "-5m", NULL };
    const int64_t now = 1764000000000; /* 2025-11-24T16:00:00Z */
    struct sbuf why;
    struct tm tm;
    int64_t v = 0;

    sbuf_init(&why);
    is_int(cli_parse_since("90s", now, &v, &why), 0, "90s");
    is_int(v, now - 90000, "is 90 s back");
    is_int(cli_parse_since("2h", now, &v, &why), 0, "2h");
    is_int(v, now - 7200000, "is 2 h back");
    is_int(cli_parse_since("1d12h", now, &v, &why), 0, "1d12h");
    is_int(v, now - 36 * 3600000LL, "is 36 h back");
    is_int(cli_parse_since("1w", now, &v, &why), 0, "1w");
    is_int(v, now - 7 * 86400000LL, "is 7 days back");
    is_int((int)(cli_parse_duration("30d") / 1000), 30 * 86400, "duration 30d");
    is_int((int)cli_parse_duration("1m30s"), 90000, "duration 1m30s");
    is_int((int)cli_parse_duration("soon"), -1, "not a duration");
    is_int((int)cli_parse_duration("5"), -1, "a number without a unit");
    is_int(cli_parse_since("100000w", now, &v, &why), -EINVAL,
        "more than a century back is refused");

    memset(&tm, 0, sizeof(tm));
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = 24;
    tm.tm_isdst = -1;
    is_int(cli_parse_since("2026-11-24", now, &v, &why), 0, "a date");
    is_int(v, (int64_t)mktime(&tm) * 1000, "is its local midnight");
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = 24;
    tm.tm_hour = 10;
    tm.tm_min = 5;
    tm.tm_sec = 7;
    tm.tm_isdst = -1;
    is_int(cli_parse_since("2026-11-24T10:05:07", now, &v, &why), 0,
        "a date and time with T");
    is_int(v, (int64_t)mktime(&tm) * 1000, "is that local time");
    is_int(cli_parse_since("2026-11-24 10:05:07", now, &v, &why), 0,
        "with a space");
    is_int(v, (int64_t)mktime(&tm) * 1000, "the same time");
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    is_int(cli_parse_since("2026-11-24 10:05", now, &v, &why), 0,
        "without seconds");
    is_int(v, (int64_t)mktime(&tm) * 1000, "is on the minute");
    is_int(cli_parse_since("2025-11-24T16:00:00Z", now, &v, &why), 0,
        "an ISO time in UTC");
    is_int(v, now, "is that UTC time");
    for (size_t i = 0; bad[i]; i++) {
        sbuf_reset(&why);
        ok(cli_parse_since(bad[i], now, &v, &why) == -EINVAL &&
                strstr(why.buf, "invalid --since") != NULL,
            "'%s' is refused, saying what is expected", bad[i]);
    }
    sbuf_release(&why);
}

/* cancel's filters stand in for the ids; the others do not. */
static void
test_cancel_select(void)
{
    struct cli_args a;
    struct sbuf why;
    /* cmd_cancel.c's struct cancel_opts, member for member. */
    struct {
        bool checkpoint, all_users;
        const char *user, *name, *state;
    } o;

    sbuf_init(&why);
    memset(&o, 0, sizeof(o));
    is_int(
        cli_parse_opts(&cli_cmd_cancel, 3, ARGV("--name", "p1"), &o, &a, &why),
        0, "cancel --name needs no id");
    is_str(o.name, "p1", "and keeps the name");
    memset(&o, 0, sizeof(o));
    is_int(cli_parse_opts(&cli_cmd_cancel, 3, ARGV("--state", "running"), &o,
               &a, &why),
        0, "cancel --state, in any case");
    is_str(o.state, "RUNNING", "as the canonical name");
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_cancel, 3, ARGV("--state", "FAILED"), &o, &a,
           &why) < 0 &&
            strstr(why.buf, "unfinished") != NULL,
        "a final state is refused");
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_cancel, 2, ARGV("--checkpoint"), &o, &a, &why) <
                0 &&
            strcmp(why.buf, "which job? give one or more ids") == 0,
        "--checkpoint alone still asks which job");
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_cancel, 2, ARGV("--all-users"), &o, &a, &why) <
                0 &&
            strcmp(why.buf, "which job? give one or more ids") == 0,
        "so does --all-users alone");
    sbuf_reset(&why);
    ok(cli_parse_opts(&cli_cmd_cancel, 3, ARGV("--user", ""), &o, &a, &why) <
                0 &&
            strstr(why.buf, "--user needs") != NULL,
        "an empty --user is refused");
    sbuf_release(&why);
}

/* LOCKSTEP_SERVER naming replicas: a comma-separated list. */
static void
test_server_list(void)
{
    struct cli cli;
    struct err err;

    err_clear(&err);
    is_int(cli_init(&cli, "/run/a.sock", NULL, &err), 0, "one socket");
    ok(cli.nservers == 1 && strcmp(cli.servers[0], "/run/a.sock") == 0,
        "one server");
    cli_release(&cli);
    is_int(cli_init(&cli, "http://h1:7300/, /run/b.sock ,http://h3:7300", NULL,
               &err),
        0, "a list of three");
    ok(cli.nservers == 3 && strcmp(cli.servers[0], "http://h1:7300") == 0 &&
            strcmp(cli.servers[1], "/run/b.sock") == 0 &&
            strcmp(cli.servers[2], "http://h3:7300") == 0,
        "split at commas, blanks and trailing slashes dropped");
    cli_release(&cli);
    is_int(cli_init(&cli, "http://h1:7300,h2:7300", NULL, &err), -EINVAL,
        "an item that is neither a URL nor a socket is refused");
    ok(strstr(err.msg, "'h2:7300'") != NULL, "naming it: %s", err.msg);
    is_int(cli_init(&cli, ",", NULL, &err), -EINVAL, "a list of nothing");
    is_int(cli_init(&cli, "", NULL, &err), -EINVAL, "nothing");
}

int
main(void)
{
    plan(NO_PLAN);
    test_defaults();
    test_options();
    test_env_passthrough();
    test_env_stays();
    test_export();
    test_export_limits();
    test_wait_for_nodes();
    test_outage();
    test_specs();
    test_resume_from();
    test_ckpt_warning();
    test_relative_paths();
    test_errors();
    test_help();
    test_opt_kinds();
    test_opt_errors();
    test_opt_flags();
    test_cmd_entries();
    test_fmt();
    test_reply_numbers();
    test_table();
    test_progress();
    test_since();
    test_cancel_select();
    test_server_list();
    return done_testing();
}
