/*
 * test_cli.c - the CLI without a scheduler: submit's arguments become the
 * job spec the API expects, and the human formatting helpers
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

    is_int(parse(ARGC(ARGV("python3", "train.py", "--lr", "3e-4")), argv, &o,
               &e), 0, "a bare command parses");
    is_int(o.spec.argc, 4, "options after the command belong to it");
    is_str(o.spec.argv[3], "3e-4", "argv kept verbatim");
    ok(o.spec.argv[4] == NULL, "argv is NULL-terminated");
    is_int(o.spec.nodes, 1, "nodes default 1");
    is_int(o.spec.ranks_per_node, 1, "ranks_per_node default 1");
    is_int(o.spec.cpus_per_rank, 1, "cpus_per_rank default 1");
    ok(o.spec.name == NULL, "no name: the scheduler derives it");
    is_str(o.spec.workdir, cwd, "workdir defaults to the current directory");
    ok(!o.wait && !o.json, "no --wait, no --json");

    json = proto_job_spec_to_json(&o.spec);
    ok(jsonx_get_int(json, "version", true, 1, 1, &v, NULL) == 0 && v == 1,
        "the body carries version 1");
    ok(cJSON_GetObjectItem(json, "name") == NULL, "no name in the body");
    cJSON_Delete(json);
    cli_submit_opts_release(&o);
    free(cwd);
}

static void
test_options(void)
{
    char **argv = ARGV("--name", "big-run.v2", "--nodes", "4",
        "--ranks-per-node", "8", "--gpus-per-node", "8", "--cpus-per-rank",
        "6", "--memory-mb", "65536", "--priority", "-5", "--env", "A=1",
        "--env", "B=x=y", "--env", "A=2", "--workdir", "/w",
        "--max-restarts", "3", "--checkpoint-dir", "/ckpt", "--wait",
        "--json", "--", "torchrun", "--nproc", "8");
    int argc = ARGC(ARGV("--name", "big-run.v2", "--nodes", "4",
        "--ranks-per-node", "8", "--gpus-per-node", "8", "--cpus-per-rank",
        "6", "--memory-mb", "65536", "--priority", "-5", "--env", "A=1",
        "--env", "B=x=y", "--env", "A=2", "--workdir", "/w",
        "--max-restarts", "3", "--checkpoint-dir", "/ckpt", "--wait",
        "--json", "--", "torchrun", "--nproc", "8"));
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

static void
test_env_passthrough(void)
{
    char **argv = ARGV("--env", "TEST_CLI_VAR", "true");
    char **bad = ARGV("--env", "TEST_CLI_UNSET_VAR", "true");
    struct cli_submit_opts o;
    struct err e;

    setenv("TEST_CLI_VAR", "from shell", 1);
    unsetenv("TEST_CLI_UNSET_VAR");
    is_int(parse(ARGC(ARGV("--env", "TEST_CLI_VAR", "true")), argv, &o, &e),
        0, "--env NAME takes the shell's value");
    is_str(o.spec.env[0].value, "from shell", "value copied");
    cli_submit_opts_release(&o);
    ok(parse(ARGC(ARGV("--env", "TEST_CLI_UNSET_VAR", "true")), bad, &o,
           &e) < 0 && strstr(e.msg, "TEST_CLI_UNSET_VAR"),
        "--env NAME of an unset variable is an error naming it");
    cli_submit_opts_release(&o);
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
                     "true")), argv, &o, &e), 0, "relative paths parse");
    snprintf(want, sizeof(want), "%s/sub/dir", strcmp(cwd, "/") ? cwd : "");
    is_str(o.spec.workdir, want, "a relative workdir is made absolute");
    snprintf(want, sizeof(want), "%s/ck", strcmp(cwd, "/") ? cwd : "");
    is_str(o.spec.checkpoint_dir, want, "so is a relative checkpoint dir");
    cli_submit_opts_release(&o);
    free(cwd);
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
        { { "--", "", NULL }, "argv" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *argv[8] = { "submit" };
        struct cli_submit_opts o;
        struct err e;
        int argc = 1, rc;

        for (int j = 0; cases[i].args[j]; j++)
            argv[argc++] = (char *)cases[i].args[j];
        argv[argc] = NULL;
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

static void
test_fmt(void)
{
    cJSON *arr = cJSON_Parse("[0,1,2,3,6,8,9]");
    cJSON *one = cJSON_Parse("[12]");
    cJSON *empty = cJSON_Parse("[]");
    cJSON *labels = cJSON_Parse("{\"rack\":\"r1\",\"zone\":\"a\"}");
    cJSON *argv = cJSON_Parse("[\"python3\",\"-c\",\"print('hi')\",\"\"]");
    char *s, buf[32];
    int64_t now = 1000000000;

    s = cli_fmt_int_list(arr, true);
    is_str(s, "0-3,6,8-9", "compact GPU ranges");
    free(s);
    s = cli_fmt_int_list(arr, false);
    is_str(s, "0,1,2,3,6,8,9", "plain lists");
    free(s);
    s = cli_fmt_int_list(one, true);
    is_str(s, "12", "one element");
    free(s);
    s = cli_fmt_int_list(empty, true);
    is_str(s, "-", "empty list");
    free(s);
    s = cli_fmt_labels(labels);
    is_str(s, "rack=r1,zone=a", "labels");
    free(s);
    s = cli_fmt_argv(argv);
    is_str(s, "python3 -c 'print('\\''hi'\\'')' ''", "argv quoted for a shell");
    free(s);

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

int
main(void)
{
    plan(NO_PLAN);
    test_defaults();
    test_options();
    test_env_passthrough();
    test_relative_paths();
    test_errors();
    test_help();
    test_fmt();
    test_table();
    return done_testing();
}
