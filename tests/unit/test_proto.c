/*
 * test_proto.c - message validation: job specs, node reports, launches
 */
#include "common/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/proto_logs.h"
#include "common/xalloc.h"
#include "tests/tap.h"

/* Parse text as a job spec; returns rc, leaves message in err. */
static int
spec_parse(const char *text, struct proto_job_spec *spec, struct err *err)
{
    cJSON *json = NULL;
    int rc;

    err_clear(err);
    rc = jsonx_parse(text, strlen(text), &json, err);
    if (rc == 0)
        rc = proto_job_spec_from_json(json, spec, err);
    cJSON_Delete(json);
    return rc;
}

/* Scratch of FROM_TEXT and ROUND_TRIP (one thread). */
static cJSON *scratch_json;
static int scratch_rc;

/* The JSON of text; NULL when it is not JSON. Caller deletes. */
static cJSON *
parse_text(const char *text)
{
    cJSON *json = NULL;

    jsonx_parse(text, strlen(text), &json, NULL);
    return json;
}

/* json printed and parsed again, as it crosses the wire; json is
 * deleted. Caller deletes the result. */
static cJSON *
reparse(cJSON *json)
{
    char *text = jsonx_print(json);
    cJSON *back;

    cJSON_Delete(json);
    back = parse_text(text);
    free(text);
    return back;
}

/* A message's decoder `from` on a text: from's result. */
#define FROM_TEXT(from, text, out, err)                                        \
    (scratch_json = parse_text(text),                                          \
        scratch_rc = from(scratch_json, out, err), cJSON_Delete(scratch_json), \
        scratch_rc)

/* Whether FROM_TEXT refuses text with -EINVAL and a message naming word. */
#define REFUSED(from, text, out, err, word)                                    \
    (FROM_TEXT(from, text, out, err) == -EINVAL &&                             \
        strstr((err)->msg, word) != NULL)

/* Encode in with `to`, print, parse and decode into out with `from`:
 * from's result. */
#define ROUND_TRIP(to, from, in, out, err)                                     \
    (scratch_json = reparse(to(in)),                                           \
        scratch_rc = from(scratch_json, out, err), cJSON_Delete(scratch_json), \
        scratch_rc)

static void
expect_bad(const char *text, const char *needle)
{
    struct proto_job_spec spec;
    struct err err;
    int rc = spec_parse(text, &spec, &err);

    ok(rc == -EINVAL && strstr(err.msg, needle) != NULL, "rejects %s: '%s'",
        needle, err.msg);
}

static void
test_job_spec(void)
{
    struct proto_job_spec spec, back;
    struct err err;
    cJSON *json;
    char *text;

    is_int(
        spec_parse("{\"version\":1,\"argv\":[\"/usr/bin/python3\",\"t.py\"]}",
            &spec, &err),
        0, "minimal spec parses");
    is_str(spec.name, "python3", "default name is argv[0]'s basename");
    is_int(spec.nodes, 1, "default nodes 1");
    is_int(spec.ranks_per_node, 1, "default ranks 1");
    is_int(spec.gpus_per_node, 0, "default gpus 0");
    is_int(spec.cpus_per_rank, 1, "default cpus 1");
    is_str(spec.workdir, "/", "default workdir /");
    is_str(spec.checkpoint_dir, "", "default checkpoint dir empty");
    is_int(spec.max_restarts, PROTO_DEFAULT_MAX_RESTARTS,
        "default job-failure budget");
    is_int(spec.max_infra_restarts, PROTO_DEFAULT_MAX_INFRA_RESTARTS,
        "default infrastructure budget");
    is_int(spec.hang_timeout_s, PROTO_DEFAULT_HANG_TIMEOUT_S,
        "default hang timeout");
    is_int(spec.keep_checkpoints, 0, "keep every checkpoint by default");
    proto_job_spec_release(&spec);

    is_int(spec_parse("{\"version\":1,\"argv\":[\"sh\"],\"max_restarts\":0,"
                      "\"max_infra_restarts\":7,\"hang_timeout_s\":0,"
                      "\"keep_checkpoints\":2}",
               &spec, &err),
        0, "fault-tolerance fields parse");
    ok(spec.max_restarts == 0 && spec.max_infra_restarts == 7 &&
            spec.hang_timeout_s == 0 && spec.keep_checkpoints == 2,
        "fault-tolerance fields kept");
    proto_job_spec_release(&spec);

    is_int(spec_parse("{\"version\":1,\"name\":\"train-1\",\"argv\":[\"sh\"],"
                      "\"nodes\":4,\"ranks_per_node\":8,\"gpus_per_node\":8,"
                      "\"cpus_per_rank\":2,\"memory_mb_per_node\":1024,"
                      "\"priority\":-5,\"env\":{\"A\":\"1\",\"B_2\":\"x=y\"},"
                      "\"workdir\":\"/w\",\"max_restarts\":3,"
                      "\"checkpoint_dir\":\"/ckpt\"}",
               &spec, &err),
        0, "full spec parses");
    is_int(spec.nenv, 2, "two env entries");
    is_str(spec.env[1].value, "x=y", "env value kept");
    json = proto_job_spec_to_json(&spec);
    text = jsonx_print(json);
    cJSON_Delete(json);
    is_int(spec_parse(text, &back, &err), 0, "round trip parses");
    ok(back.nodes == 4 && back.ranks_per_node == 8 && back.priority == -5 &&
            back.max_restarts == 3 && strcmp(back.checkpoint_dir, "/ckpt") == 0,
        "round trip keeps values");
    free(text);
    proto_job_spec_release(&back);
    proto_job_spec_release(&spec);

    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"bogus\":1}",
        "unknown field 'bogus'");
    expect_bad("{\"argv\":[\"sh\"]}", "missing field 'version'");
    expect_bad("{\"version\":2,\"argv\":[\"sh\"]}", "unsupported version");
    expect_bad("{\"version\":1}", "missing field 'argv'");
    expect_bad("{\"version\":1,\"argv\":[]}", "command is empty");
    expect_bad("{\"version\":1,\"argv\":[\"\"]}", "argv[0]");
    expect_bad("{\"version\":1,\"argv\":\"sh\"}", "array of strings");
    expect_bad("{\"version\":1,\"argv\":[\"sh\", 3]}", "argv[1]");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"nodes\":0}", "'nodes'");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"nodes\":-2}", "'nodes'");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"nodes\":1.5}",
        "must be an integer");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"nodes\":\"2\"}",
        "must be an integer");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"ranks_per_node\":0}",
        "'ranks_per_node'");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"gpus_per_node\":-1}",
        "'gpus_per_node'");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"priority\":5000}",
        "'priority'");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"workdir\":\"rel/dir\"}",
        "absolute path");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"name\":\"a b\"}",
        "field 'name'");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"env\":{\"1X\":\"v\"}}",
        "not a valid variable name");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"env\":{\"X\":1}}",
        "must be a string");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"nodes\":1,\"nodes\":2}",
        "given twice");
    expect_bad("[1,2]", "expected a JSON object");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"hang_timeout_s\":-1}",
        "'hang_timeout_s'");
    expect_bad("{\"version\":1,\"argv\":[\"sh\"],\"keep_checkpoints\":-3}",
        "'keep_checkpoints'");

    err_clear(&err);
    ok(jsonx_parse("{\"version\":1,", 13, &json, &err) == -EINVAL &&
            strstr(err.msg, "invalid JSON") != NULL,
        "truncated JSON rejected: %s", err.msg);
    ok(jsonx_parse("{} x", 4, &json, &err) == -EINVAL &&
            strstr(err.msg, "trailing") != NULL,
        "trailing garbage rejected: %s", err.msg);
    ok(jsonx_parse("", 0, &json, &err) == -EINVAL, "empty body rejected");

    /* The CLI validates a spec it built itself before sending it. */
    proto_job_spec_init(&spec);
    ok(proto_job_spec_validate(&spec, &err) == -EINVAL &&
            strstr(err.msg, "command is empty"),
        "validate: empty command named");
}

/* --resume-from: the spec fields and the step a path names. */
static void
test_resume_from(void)
{
    struct proto_job_spec spec;
    struct err err;

    is_int(spec_parse("{\"version\":1,\"argv\":[\"sh\"]}", &spec, &err), 0,
        "a spec without resume_from parses");
    ok(spec.resume_from != NULL && spec.resume_from[0] == '\0' &&
            spec.resume_from_job == 0 && spec.resume_step == -1,
        "it continues nothing");
    proto_job_spec_release(&spec);
    is_int(spec_parse("{\"version\":1,\"argv\":[\"sh\"],"
                      "\"resume_from\":\"/ck/step-50\"}",
               &spec, &err),
        0, "resume_from: a path parses");
    is_str(spec.resume_from, "/ck/step-50", "and is kept");
    proto_job_spec_release(&spec);
    is_int(spec_parse("{\"version\":1,\"argv\":[\"sh\"],"
                      "\"resume_from_job\":12}",
               &spec, &err),
        0, "resume_from_job: a job id parses");
    is_int(spec.resume_from_job, 12, "and is kept");
    proto_job_spec_release(&spec);
    ok(spec_parse("{\"version\":1,\"argv\":[\"sh\"],"
                  "\"resume_from\":\"ck/step-5\"}",
           &spec, &err) == -EINVAL &&
            strstr(err.msg, "resume_from") != NULL,
        "a relative resume_from is refused: %s", err.msg);
    ok(spec_parse("{\"version\":1,\"argv\":[\"sh\"],"
                  "\"resume_from\":\"/ck/step-5\",\"resume_from_job\":3}",
           &spec, &err) == -EINVAL &&
            strstr(err.msg, "not both") != NULL,
        "a path and a job are refused together: %s", err.msg);
    ok(spec_parse("{\"version\":1,\"argv\":[\"sh\"],"
                  "\"resume_from_job\":0}",
           &spec, &err) == -EINVAL,
        "job 0 is refused");
    ok(spec_parse("{\"version\":1,\"argv\":[\"sh\"],"
                  "\"resume_step\":5}",
           &spec, &err) == -EINVAL,
        "resume_step is the scheduler's, never the submitter's");

    is_int(proto_ckpt_path_step("/ck/step-50"), 50, "/ck/step-50: step 50");
    is_int(proto_ckpt_path_step("/ck/step-50/"), 50, "a trailing slash too");
    is_int(proto_ckpt_path_step("/ck/step-0"), 0, "step-0: step 0");
    is_int(proto_ckpt_path_step("step-7"), 7, "a bare name");
    is_int(proto_ckpt_path_step("/ck/step-050"), -1, "leading zeros: none");
    is_int(proto_ckpt_path_step("/ck/step-"), -1, "no number: none");
    is_int(proto_ckpt_path_step("/ck/step-5x"), -1, "not a number: none");
    is_int(proto_ckpt_path_step("/ck/model.pt"), -1, "another name: none");
    is_int(proto_ckpt_path_step("/step-5/ck"), -1, "only the last name counts");
    is_int(proto_ckpt_path_step("/ck/step-99999999999999999999"), -1,
        "too large: none");
    is_int(proto_ckpt_path_step(NULL), -1, "NULL: none");
}

static void
test_id_list(void)
{
    struct err err;
    int *ids = NULL;
    size_t n = 0;

    is_int(proto_parse_id_list("0-3,6,2", &ids, &n, &err), 0, "id list");
    ok(n == 5 && ids[0] == 0 && ids[3] == 3 && ids[4] == 6,
        "sorted and de-duplicated (n=%zu)", n);
    free(ids);
    is_int(proto_parse_id_list("", &ids, &n, &err), 0, "empty list");
    is_int(n, 0, "no ids");
    free(ids);
    ok(proto_parse_id_list("3-1", &ids, &n, &err) == -EINVAL, "bad range");
    ok(proto_parse_id_list("a", &ids, &n, &err) == -EINVAL, "not a number");
    ok(proto_parse_id_list("1,,2", &ids, &n, &err) == -EINVAL, "empty entry");
    ok(proto_parse_id_list("0-5000", &ids, &n, &err) == -EINVAL, "too many");
}

static void
test_node_report(void)
{
    const char *text =
        "{\"version\":1,\"node\":\"n1\",\"register\":true,\"agent_id\":\"ab\","
        "\"addr\":\"127.0.0.1\",\"cpus\":8,\"memory_mb\":1024,"
        "\"gpus\":[0,1],\"labels\":{\"rack\":\"r1\"},\"gen\":42,"
        "\"jobs\":[{\"job\":3,\"attempt\":1,\"ranks\":["
        "{\"rank\":0,\"state\":\"running\",\"pid\":10},"
        "{\"rank\":1,\"state\":\"exited\",\"exit_code\":3,\"signal\":0,"
        "\"stderr_tail\":\"boom\",\"fenced\":true,\"step\":120,"
        "\"idle_ms\":900,\"progress\":\"step\",\"dump\":\"State: T\","
        "\"ckpt_steps\":[100,110],"
        "\"acks\":[{\"seq\":2,\"step\":-1,\"duration_ms\":1003}],"
        "\"sections\":[{\"name\":\"compute\",\"p50_us\":12000,"
        "\"p99_us\":15000,\"n\":200},{\"name\":\"data.load\","
        "\"p50_us\":300}]},"
        "{\"rank\":2,\"state\":\"exited\",\"exit_code\":127,"
        "\"launch_error\":\"cannot execute 'x': No such file or "
        "directory\"}],"
        "\"checkpoints\":[100]}]}";
    struct proto_node_report rep, back;
    struct err err;

    is_int(FROM_TEXT(proto_node_report_from_json, text, &rep, &err), 0,
        "report parses");
    ok(rep.reg && rep.gen == 42 && rep.res.ngpus == 2 && rep.njobs == 1,
        "report fields");
    ok(rep.jobs[0].nranks == 3 && rep.jobs[0].ranks[1].exit_code == 3 &&
            rep.jobs[0].ranks[1].state == PROTO_RANK_EXITED &&
            strcmp(rep.jobs[0].ranks[1].stderr_tail, "boom") == 0,
        "rank exit kept");
    is_int(ROUND_TRIP(proto_node_report_to_json, proto_node_report_from_json,
               &rep, &back, &err),
        0, "report round trip");
    ok(back.jobs[0].ranks[0].pid == 10 && back.res.nlabels == 1,
        "round trip keeps pid and labels");
    ok(back.jobs[0].ranks[0].step == -1 &&
            back.jobs[0].ranks[0].progress == PROTO_PROGRESS_NONE,
        "a rank without progress has step -1");
    {
        const struct proto_rank_status *r = &back.jobs[0].ranks[1];
        ok(r->fenced && r->step == 120 && r->idle_ms == 900 &&
                r->progress == PROTO_PROGRESS_STEP &&
                strcmp(r->dump, "State: T") == 0 && r->nckpt_steps == 2 &&
                r->ckpt_steps[1] == 110,
            "progress, fencing, dump and commits round trip");
        ok(back.jobs[0].ncheckpoints == 1 &&
                back.jobs[0].checkpoints[0] == 100 && r->nacks == 1 &&
                r->acks[0].seq == 2 && r->acks[0].step == -1 &&
                r->acks[0].duration_ms == 1003,
            "convention checkpoints and a directive's ack round trip");
        ok(back.jobs[0].ranks[0].nacks == 0, "a rank without acks");
        ok(r->nsections == 2 && strcmp(r->sections[0].name, "compute") == 0 &&
                r->sections[0].p50_us == 12000 &&
                r->sections[0].p99_us == 15000 && r->sections[0].n == 200 &&
                strcmp(r->sections[1].name, "data.load") == 0 &&
                r->sections[1].p50_us == 300 && r->sections[1].n == 0,
            "timed sections round trip");
        ok(back.jobs[0].ranks[0].nsections == 0 &&
                back.jobs[0].ranks[0].sections == NULL,
            "a rank without sections (an older agent) has none");
        ok(r->launch_error == NULL && back.jobs[0].ranks[2].launch_error &&
                strcmp(back.jobs[0].ranks[2].launch_error,
                    "cannot execute 'x': No such file or directory") == 0,
            "a launch error round trips; a rank that ran has none");
    }
    proto_node_report_release(&back);
    proto_node_report_release(&rep);

    text = "{\"version\":1,\"node\":\"bad name\",\"agent_id\":\"a\","
           "\"addr\":\"x\",\"cpus\":1,\"memory_mb\":1}";
    ok(REFUSED(proto_node_report_from_json, text, &rep, &err, "node name"),
        "bad node name: %s", err.msg);
    text = "{\"version\":1,\"node\":\"n\",\"agent_id\":\"a\",\"addr\":\"x\","
           "\"cpus\":1,\"memory_mb\":1,\"jobs\":[{\"job\":1,\"attempt\":1,"
           "\"ranks\":[{\"rank\":0,\"state\":\"dancing\"}]}]}";
    ok(REFUSED(proto_node_report_from_json, text, &rep, &err, "dancing"),
        "bad rank state: %s", err.msg);
    text = "{\"version\":1,\"node\":\"n\",\"agent_id\":\"a\",\"addr\":\"x\","
           "\"cpus\":1,\"memory_mb\":1,\"jobs\":[{\"job\":1,\"attempt\":1,"
           "\"ranks\":[{\"rank\":0,\"state\":\"running\",\"sections\":"
           "[{\"name\":\"a b\",\"p50_us\":1}]}]}]}";
    ok(REFUSED(proto_node_report_from_json, text, &rep, &err, "section name"),
        "bad section name: %s", err.msg);
    text = "{\"version\":1,\"node\":\"n\",\"agent_id\":\"a\",\"addr\":\"x\","
           "\"cpus\":1,\"memory_mb\":1,\"jobs\":[{\"job\":1,\"attempt\":1,"
           "\"ranks\":[{\"rank\":0,\"state\":\"running\",\"sections\":"
           "[{\"name\":\"c\",\"p50_us\":-1}]}]}]}";
    ok(REFUSED(proto_node_report_from_json, text, &rep, &err, "p50_us"),
        "negative section time: %s", err.msg);
    /* Found by fuzzing (fuzz/corpus/agent_status/regress-job-no-ranks):
     * the job's checkpoints were read, then the entry was refused
     * without freeing them (the sanitizer build sees the leak). */
    text = "{\"version\":1,\"node\":\"n\",\"agent_id\":\"a\",\"addr\":\"x\","
           "\"cpus\":1,\"memory_mb\":1,\"jobs\":[{\"job\":3,\"attempt\":1,"
           "\"checkpoints\":[100]}]}";
    ok(REFUSED(proto_node_report_from_json, text, &rep, &err, "'ranks'"),
        "a job without ranks: %s", err.msg);
}

static void
test_work(void)
{
    const char *text =
        "{\"version\":1,\"gen\":7,\"jobs\":[{\"job\":3,\"attempt\":2,"
        "\"name\":\"t\",\"user\":\"root\",\"argv\":[\"sh\",\"-c\",\"env\"],"
        "\"env\":{\"X\":\"1\"},\"workdir\":\"/\",\"nnodes\":2,"
        "\"node_rank\":1,\"ranks_per_node\":2,\"world_size\":4,"
        "\"master_addr\":\"127.0.0.1\",\"master_port\":29500,"
        "\"ranks\":[{\"rank\":2,\"local_rank\":0,\"gpus\":[0]},"
        "{\"rank\":3,\"local_rank\":1,\"gpus\":[1]}],"
        "\"checkpoint_dir\":\"\",\"resume_from\":\"\",\"resume_step\":-1}]}";
    struct proto_work w, back;
    struct err err;
    char *text_named, *text_raw;
    cJSON *json;

    is_int(FROM_TEXT(proto_work_from_json, text, &w, &err), 0, "work parses");
    ok(w.gen == 7 && w.njobs == 1 && w.jobs[0].nranks == 2 &&
            w.jobs[0].ranks[1].rank == 3 && w.jobs[0].ranks[1].gpus[0] == 1,
        "launch fields");
    is_int(
        ROUND_TRIP(proto_work_to_json, proto_work_from_json, &w, &back, &err),
        0, "work round trip");
    ok(back.jobs[0].master_port == 29500 && back.jobs[0].resume_step == -1,
        "round trip keeps values");
    ok(!back.jobs[0].scan_checkpoints && back.jobs[0].ndirectives == 0 &&
            back.jobs[0].keep_checkpoints == 0,
        "launch defaults for scan, directives and keep");
    is_int(back.jobs[0].max_restarts, 0, "max_restarts defaults to 0");
    proto_work_release(&back);
    w.jobs[0].max_restarts = 7;
    is_int(
        ROUND_TRIP(proto_work_to_json, proto_work_from_json, &w, &back, &err),
        0, "work round trip with max_restarts");
    is_int(back.jobs[0].max_restarts, 7, "the launch carries max_restarts");
    ok(back.jobs[0].nodes == NULL, "no node names unless sent");
    proto_work_release(&back);
    w.jobs[0].nodes = xcalloc(3, sizeof(char *));
    w.jobs[0].nodes[0] = xstrdup("n-a");
    w.jobs[0].nodes[1] = xstrdup("n-b");
    w.jobs[0].nnodes_named = 2;
    is_int(
        ROUND_TRIP(proto_work_to_json, proto_work_from_json, &w, &back, &err),
        0, "work round trip with node names");
    ok(back.jobs[0].nnodes_named == 2 &&
            strcmp(back.jobs[0].nodes[0], "n-a") == 0 &&
            strcmp(back.jobs[0].nodes[1], "n-b") == 0,
        "the launch carries the node names by node rank");
    proto_work_release(&back);
    text_named = jsonx_print(json = proto_work_to_json(&w));
    cJSON_Delete(json);
    w.jobs[0].nodes_json = "[\"n-a\",\"n-b\"]";
    text_raw = jsonx_print(json = proto_work_to_json(&w));
    cJSON_Delete(json);
    is_str(text_raw, text_named, "names written once print as the names do");
    free(text_named);
    free(text_raw);
    proto_work_release(&w);

    text = "{\"version\":1,\"gen\":7,\"jobs\":[{\"job\":3,\"attempt\":2,"
           "\"name\":\"t\",\"user\":\"root\",\"argv\":[\"sh\"],"
           "\"workdir\":\"/\",\"nnodes\":1,\"node_rank\":0,"
           "\"ranks_per_node\":1,\"world_size\":1,\"master_addr\":\"a\","
           "\"master_port\":1,\"ranks\":[{\"rank\":5,\"local_rank\":0}]}]}";
    ok(REFUSED(proto_work_from_json, text, &w, &err, "world_size"),
        "rank beyond world: %s", err.msg);
    text = "{\"version\":1,\"gen\":7,\"jobs\":[{\"job\":3,\"attempt\":2,"
           "\"name\":\"t\",\"user\":\"root\",\"argv\":[\"sh\"],"
           "\"workdir\":\"/\",\"nnodes\":2,\"node_rank\":0,"
           "\"ranks_per_node\":1,\"world_size\":2,\"master_addr\":\"a\","
           "\"master_port\":1,\"ranks\":[{\"rank\":0,\"local_rank\":0}],"
           "\"nodes\":[\"n1\"]}]}";
    ok(REFUSED(proto_work_from_json, text, &w, &err, "1 names for nnodes 2"),
        "node names must match nnodes: %s", err.msg);
}

/* A launch's directives and the scheduler's status reply. */
static void
test_directives(void)
{
    const char *head =
        "{\"version\":1,\"gen\":7,\"jobs\":[{\"job\":3,\"attempt\":2,"
        "\"name\":\"t\",\"user\":\"root\",\"argv\":[\"sh\"],"
        "\"workdir\":\"/\",\"nnodes\":1,\"node_rank\":0,"
        "\"ranks_per_node\":1,\"world_size\":1,\"master_addr\":\"a\","
        "\"master_port\":1,\"ranks\":[{\"rank\":0,\"local_rank\":0}],"
        "\"directives\":";
    struct proto_status_reply reply = { 1000, 0, 5000 }, back;
    struct proto_work w, w2;
    struct {
        const char *text;
        int rc;
        const char *msg;
    } cases[] = {
        { "[{\"seq\":4,\"kind\":\"dump\",\"step\":-1},"
          "{\"seq\":5,\"kind\":\"dump\"}]",
            0, NULL },
        { "[{\"seq\":4,\"kind\":\"dance\"}]", -EINVAL, "dance" },
        { "[{\"seq\":0,\"kind\":\"dump\"}]", -EINVAL, "seq" },
        { "[{\"seq\":1,\"kind\":\"dump\",\"when\":1}]", -EINVAL, "when" },
        { "{}", -EINVAL, "directives" },
    };
    struct err err;
    cJSON *json = NULL;
    char *text;

    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        int rc;

        text = xasprintf("%s%s}]}", head, cases[i].text);
        err_clear(&err);
        rc = FROM_TEXT(proto_work_from_json, text, &w, &err);
        ok(rc == cases[i].rc &&
                (cases[i].msg == NULL || strstr(err.msg, cases[i].msg)),
            "directives %s: %d %s", cases[i].text, rc, err.msg);
        if (rc == 0) {
            ok(w.jobs[0].ndirectives == 2 && w.jobs[0].directives[0].seq == 4 &&
                    w.jobs[0].directives[0].kind == PROTO_DIRECTIVE_DUMP &&
                    w.jobs[0].directives[1].step == -1,
                "a launch's directives, step -1 by default");
            is_int(ROUND_TRIP(proto_work_to_json, proto_work_from_json, &w, &w2,
                       &err),
                0, "directives round trip");
            ok(w2.jobs[0].ndirectives == 2 && w2.jobs[0].directives[1].seq == 5,
                "... unchanged");
            proto_work_release(&w2);
            proto_work_release(&w);
        }
        free(text);
    }
    is_str(proto_directive_kind_str(PROTO_DIRECTIVE_DUMP), "dump",
        "the dump directive's name");
    ok(proto_directive_target(PROTO_DIRECTIVE_DUMP) == PROTO_TARGET_AGENT,
        "a stack dump is the agent's own work");

    reply.gen = 42;
    json = proto_status_reply_to_json(&reply);
    memset(&back, 0, sizeof(back));
    back.heartbeat_ms = 1;
    is_int(proto_status_reply_from_json(json, &back, &err), 0,
        "status reply round trip");
    ok(back.heartbeat_ms == 1000 && back.gen == 42 && back.lease_ms == 5000,
        "... every field");
    cJSON_Delete(json);
    back.heartbeat_ms = 777;
    back.lease_ms = 888;
    ok(FROM_TEXT(proto_status_reply_from_json,
           "{\"version\":1,\"gen\":3,\"future\":true}", &back, &err) == 0 &&
            back.gen == 3 && back.heartbeat_ms == 777 && back.lease_ms == 888,
        "unknown fields tolerated, absent ones keep the caller's defaults");
    ok(REFUSED(proto_status_reply_from_json,
           "{\"version\":1,\"gen\":3,\"lease_ms\":5}", &back, &err, "lease_ms"),
        "a lease out of range: %s", err.msg);
    ok(REFUSED(proto_status_reply_from_json, "{\"version\":1}", &back, &err,
           "gen"),
        "gen is required: %s", err.msg);
}

static void
test_cadence(void)
{
    struct {
        const char *text;
        int64_t s, steps;
        int rc;
    } cases[] = {
        { "90s", 90, 0, 0 },
        { "90", 90, 0, 0 },
        { "5m", 300, 0, 0 },
        { "1h", 3600, 0, 0 },
        { "500steps", 0, 500, 0 },
        { "500 steps", 0, 500, 0 },
        { "1step", 0, 1, 0 },
        { "off", 0, 0, 0 },
        { "0", 0, 0, 0 },
        { "0s", 0, 0, 0 },
        { "", 0, 0, -EINVAL },
        { "-5s", 0, 0, -EINVAL },
        { "5 m", 0, 0, -EINVAL },
        { "1.5h", 0, 0, -EINVAL },
        { "5d", 0, 0, -EINVAL },
        { "169h", 0, 0, -EINVAL },
        { "99999999999999999999999steps", 0, 0, -EINVAL },
    };
    struct proto_job_spec spec;
    struct proto_cadence c;
    struct err err;
    char buf[32];
    cJSON *json;

    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        int rc;

        err_clear(&err);
        rc = proto_cadence_parse(cases[i].text, &c, &err);
        ok(rc == cases[i].rc && c.s == cases[i].s &&
                c.steps == cases[i].steps &&
                (rc == 0 || strstr(err.msg, cases[i].text) != NULL),
            "cadence '%s': %d s=%lld steps=%lld %s", cases[i].text, rc,
            (long long)c.s, (long long)c.steps, err.msg);
    }
    c = (struct proto_cadence){ 900, 0 };
    is_str(proto_cadence_format(&c, buf, sizeof(buf)), "15m", "15m");
    c = (struct proto_cadence){ 90, 0 };
    is_str(proto_cadence_format(&c, buf, sizeof(buf)), "90s", "90s");
    c = (struct proto_cadence){ 7200, 0 };
    is_str(proto_cadence_format(&c, buf, sizeof(buf)), "2h", "2h");
    c = (struct proto_cadence){ 0, 1 };
    is_str(proto_cadence_format(&c, buf, sizeof(buf)), "1 step", "1 step");
    c = (struct proto_cadence){ 0, 0 };
    is_str(proto_cadence_format(&c, buf, sizeof(buf)), "off", "off");

    ok(FROM_TEXT(proto_job_spec_from_json,
           "{\"version\":1,\"argv\":[\"x\"],\"gc_every_s\":60,"
           "\"checkpoint_every_steps\":500}",
           &spec, &err) == 0 &&
            spec.gc_every.s == 60 && spec.gc_every.steps == 0 &&
            spec.checkpoint_every.steps == 500,
        "a spec carries both cadences: %s", err.msg);
    json = proto_job_spec_to_json(&spec);
    ok(cJSON_GetObjectItem(json, "gc_every_s") != NULL &&
            cJSON_GetObjectItem(json, "gc_every_steps") == NULL &&
            cJSON_GetObjectItem(json, "checkpoint_every_steps") != NULL,
        "... and writes only the fields that are set");
    cJSON_Delete(json);
    proto_job_spec_release(&spec);
    ok(REFUSED(proto_job_spec_from_json,
           "{\"version\":1,\"argv\":[\"x\"],\"gc_every_s\":60,"
           "\"gc_every_steps\":5}",
           &spec, &err, "not both"),
        "a duration and a step count together: %s", err.msg);
    ok(REFUSED(proto_job_spec_from_json,
           "{\"version\":1,\"argv\":[\"x\"],\"checkpoint_every_s\":-1}", &spec,
           &err, "checkpoint_every_s"),
        "a negative cadence: %s", err.msg);
    ok(proto_directive_target(PROTO_DIRECTIVE_GC) == PROTO_TARGET_RANK &&
            proto_directive_target(PROTO_DIRECTIVE_CHECKPOINT) ==
                PROTO_TARGET_RANK,
        "gc and checkpoint are the ranks' work");
}

/* An agent's contribution to a relayed collective. */
static void
test_coll(void)
{
    char *nodes[] = { "n0", "n1", NULL };
    struct proto_coll_req c = { .job = 4,
        .attempt = 2,
        .id = "f:ab.1",
        .node = "n1",
        .nodes = nodes,
        .nnodes = 2,
        .data = "a\0b",
        .len = 3,
        .timeout_ms = 5000 };
    struct proto_coll_req back;
    struct err err;
    const char *text;

    is_int(ROUND_TRIP(proto_coll_req_to_json, proto_coll_req_from_json, &c,
               &back, &err),
        0, "collective round trip");
    ok(back.job == 4 && back.attempt == 2 && strcmp(back.id, "f:ab.1") == 0 &&
            strcmp(back.node, "n1") == 0 && back.nnodes == 2 &&
            strcmp(back.nodes[1], "n1") == 0 && back.len == 3 &&
            memcmp(back.data, "a\0b", 3) == 0 && back.timeout_ms == 5000,
        "round trip keeps the fields and the binary blob");
    proto_coll_req_release(&back);
    text = "{\"version\":1,\"job\":1,\"attempt\":1,\"id\":\"x\","
           "\"node\":\"n0\",\"nodes\":[\"n0\"],\"data\":\"\"}";
    is_int(FROM_TEXT(proto_coll_req_from_json, text, &back, &err), 0,
        "an empty blob, no timeout");
    ok(back.len == 0 && back.timeout_ms == PROTO_COLL_TIMEOUT_MS,
        "the timeout defaults to PROTO_COLL_TIMEOUT_MS");
    proto_coll_req_release(&back);
    text = "{\"version\":1,\"job\":1,\"attempt\":1,\"id\":\"x\","
           "\"node\":\"n0\",\"nodes\":[\"n0\"],\"data\":\"**\"}";
    ok(REFUSED(proto_coll_req_from_json, text, &back, &err, "base64"),
        "a blob that is not base64: %s", err.msg);
    text = "{\"version\":1,\"job\":1,\"attempt\":1,\"id\":\"x\","
           "\"node\":\"n0\",\"nodes\":[],\"data\":\"\"}";
    ok(REFUSED(proto_coll_req_from_json, text, &back, &err, "nodes"),
        "no participants: %s", err.msg);
}

/* A direct modex request and its owner's reply. */
static void
test_modex(void)
{
    struct proto_modex_req m = { .job = 4,
        .attempt = 2,
        .node = "n0",
        .owner = "n1",
        .rank = 3,
        .timeout_ms = 7000 };
    struct proto_modex_reply r = { .id = 9,
        .node = "n1",
        .data = "a\0b",
        .len = 3 },
                             rback;
    struct proto_modex_req back;
    struct err err;
    const char *text;

    is_int(ROUND_TRIP(proto_modex_req_to_json, proto_modex_req_from_json, &m,
               &back, &err),
        0, "modex request round trip");
    ok(back.job == 4 && back.attempt == 2 && strcmp(back.node, "n0") == 0 &&
            strcmp(back.owner, "n1") == 0 && back.rank == 3 &&
            back.timeout_ms == 7000,
        "round trip keeps the fields");
    proto_modex_req_release(&back);
    text = "{\"version\":1,\"job\":1,\"attempt\":1,\"node\":\"n0\","
           "\"owner\":\"a b\",\"rank\":0}";
    ok(REFUSED(proto_modex_req_from_json, text, &back, &err, "owner"),
        "a bad owner name: %s", err.msg);
    is_int(ROUND_TRIP(proto_modex_reply_to_json, proto_modex_reply_from_json,
               &r, &rback, &err),
        0, "modex reply round trip");
    ok(rback.id == 9 && strcmp(rback.node, "n1") == 0 && rback.len == 3 &&
            memcmp(rback.data, "a\0b", 3) == 0 && rback.error == NULL,
        "round trip keeps the binary blob");
    proto_modex_reply_release(&rback);
    r.error = "gone";
    is_int(ROUND_TRIP(proto_modex_reply_to_json, proto_modex_reply_from_json,
               &r, &rback, &err),
        0, "an error reply round trips");
    ok(rback.error != NULL && strcmp(rback.error, "gone") == 0 &&
            rback.len == 0,
        "with the error and no data");
    proto_modex_reply_release(&rback);
    text = "{\"version\":1,\"id\":1,\"node\":\"n0\"}";
    ok(REFUSED(proto_modex_reply_from_json, text, &rback, &err, "data"),
        "neither data nor error: %s", err.msg);
}

/* A site check's one result: lenient (no check, no version). */
static int
site_result(const cJSON *json, struct proto_check_result *r, struct err *err)
{
    return proto_check_result_from_json(json, false, r, err);
}

/* The "health" object of a node report, and a site check's result. */
static void
test_health(void)
{
    struct proto_check_number nums[] = { { "temperature_c", 91 },
        { "ecc_uncorrectable", 2 } };
    struct proto_check_result res[] = {
        { .check = "gpu",
            .status = PROTO_CHECK_FAIL,
            .code = "gpu.ecc_uncorrectable",
            .scope = "gpu:3",
            .evidence = "2 uncorrectable ECC errors",
            .duration_ms = 120,
            .at_ms = 1700000000000,
            .run = 7,
            .count = 1,
            .numbers = nums,
            .nnumbers = 2 },
        { .check = "disk",
            .status = PROTO_CHECK_HUNG,
            .code = "disk.statfs_hung",
            .scope = "mount:/data",
            .evidence = "",
            .count = 1 },
    };
    struct proto_health h = { .boot_id = "b-1",
        .full_pass = true,
        .results = res,
        .nresults = 2 },
                        back;
    struct proto_check_result r;
    struct err err;
    const char *text;

    is_int(ROUND_TRIP(proto_health_to_json, proto_health_from_json, &h, &back,
               &err),
        0, "health round trip");
    ok(back.nresults == 2 && back.full_pass &&
            strcmp(back.boot_id, "b-1") == 0 &&
            back.results[0].status == PROTO_CHECK_FAIL &&
            strcmp(back.results[0].scope, "gpu:3") == 0 &&
            back.results[0].run == 7 && back.results[0].nnumbers == 2 &&
            back.results[0].numbers[0].value == 91 &&
            back.results[1].status == PROTO_CHECK_HUNG &&
            strcmp(back.results[1].scope, "mount:/data") == 0,
        "round trip keeps every field");
    proto_health_release(&back);

    text = "{\"status\":\"WARN\",\"code\":\"ib.rate_low\","
           "\"evidence\":\"100 Gb/s\",\"numbers\":{\"rate_gbps\":100}}";
    is_int(FROM_TEXT(site_result, text, &r, &err), 0,
        "a site check's minimal result");
    ok(r.check == NULL && strcmp(r.scope, "node") == 0 && r.count == 1 &&
            r.status == PROTO_CHECK_WARN,
        "scope defaults to node, count to 1, check left to the agent");
    proto_check_result_release(&r);
    text = "{\"status\":\"OK\",\"code\":\"x\"}";
    ok(REFUSED(site_result, text, &r, &err, "PASS"),
        "an unknown status names the valid ones: %s", err.msg);
    text = "{\"status\":\"PASS\",\"code\":\"Bad Code\"}";
    ok(REFUSED(site_result, text, &r, &err, "code"), "a bad code: %s", err.msg);
    text = "{\"status\":\"PASS\",\"code\":\"x\",\"numbers\":{\"a\":\"1\"}}";
    ok(REFUSED(site_result, text, &r, &err, "numbers.a"),
        "a number that is a string: %s", err.msg);
    text = "{\"status\":\"PASS\",\"code\":\"x\",\"oops\":1}";
    ok(REFUSED(site_result, text, &r, &err, "oops"), "an unknown field: %s",
        err.msg);
    text = "[1]";
    ok(REFUSED(site_result, text, &r, &err, "object"), "not an object: %s",
        err.msg);
    text = "{\"results\":[{\"status\":\"PASS\",\"code\":\"x\"}]}";
    ok(REFUSED(proto_health_from_json, text, &back, &err, "check"),
        "inside a report a result names its check: %s", err.msg);
}

/* Frames of the many-ranks log read: what is written reads back, output
 * with newlines and NULs included; heads and lengths that lie are
 * refused. */
static void
test_log_frames(void)
{
    static const char *const bad[] = { "rank=1 start=0 size=3 len=3\nabc",
        "rank=1 start=0 size=3 len=4\nabc\n",
        "rank=1 start=0 size=2 len=3\nabc\n", "rank=1 start=0 len=3\nabc\n",
        "rank=-1 start=0 size=3 len=3\nabc\n",
        "rank=1 start=0 size=3 len=3 \nabc\n",
        "rank=99999999999999999999 start=0 size=3 len=3\nabc\n",
        "rank=1 start=0 size=3 len=3\nabcX", "garbage" };
    struct proto_log_frame f;
    struct sbuf sb;
    struct err err;
    const char *p;
    size_t left;

    sbuf_init(&sb);
    proto_log_frame_add(&sb, 3, 7, 20, "a\nb\0c", 5);
    proto_log_frame_add(&sb, 9, 4096, 4096, "", 0);
    p = sb.buf;
    left = sb.len;
    ok(proto_log_frame_next(&p, &left, &f, &err) == 1 && f.rank == 3 &&
            f.start == 7 && f.size == 20 && f.len == 5 &&
            memcmp(f.data, "a\nb\0c", 5) == 0,
        "a frame reads back, newline and NUL included");
    ok(proto_log_frame_next(&p, &left, &f, &err) == 1 && f.rank == 9 &&
            f.start == 4096 && f.len == 0,
        "an empty frame (what was dropped, nothing after)");
    is_int(proto_log_frame_next(&p, &left, &f, &err), 0, "then the end");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        p = bad[i];
        left = strlen(bad[i]);
        err_clear(&err);
        ok(proto_log_frame_next(&p, &left, &f, &err) == -EPROTO &&
                err.msg[0] != '\0',
            "a lying frame is refused (%zu)", i);
    }
    sbuf_release(&sb);
}

static void
test_log_query(void)
{
    int64_t a = -1, b = -1, v[4];
    size_t n = 99;
    struct err err;

    ok(proto_log_ranks_parse("3-17", 100, &a, &b, &err) == 0 && a == 3 &&
            b == 17,
        "ranks A-B");
    ok(proto_log_ranks_parse("5", 100, &a, &b, &err) == 0 && a == 5 && b == 5,
        "ranks A alone");
    ok(proto_log_ranks_parse("7-3", 100, &a, &b, &err) == -EINVAL &&
            strstr(err.msg, "'ranks'") != NULL,
        "A after B refused, naming ranks");
    ok(proto_log_ranks_parse("1-101", 100, &a, &b, &err) == -EINVAL,
        "past the most refused");
    ok(proto_log_ranks_parse("", 100, &a, &b, &err) == -EINVAL &&
            proto_log_ranks_parse("1-", 100, &a, &b, &err) == -EINVAL &&
            proto_log_ranks_parse("-1", 100, &a, &b, &err) == -EINVAL &&
            proto_log_ranks_parse("1-2x", 100, &a, &b, &err) == -EINVAL,
        "empty, open and trailing garbage refused");
    ok(proto_log_offsets_parse("0,12,7", v, 4, &n, &err) == 0 && n == 3 &&
            v[0] == 0 && v[1] == 12 && v[2] == 7,
        "offsets in order");
    ok(proto_log_offsets_parse("", v, 4, &n, &err) == 0 && n == 0,
        "no offsets");
    ok(proto_log_offsets_parse("1,2,3,4,5", v, 4, &n, &err) == -EINVAL &&
            strstr(err.msg, "'offsets'") != NULL,
        "more offsets than ranks refused, naming offsets");
    ok(proto_log_offsets_parse("1,,2", v, 4, &n, &err) == -EINVAL &&
            proto_log_offsets_parse("1,", v, 4, &n, &err) == -EINVAL &&
            proto_log_offsets_parse(",1", v, 4, &n, &err) == -EINVAL &&
            proto_log_offsets_parse("-1", v, 4, &n, &err) == -EINVAL,
        "empty, negative and dangling offsets refused");
}

static void
test_kv_value(void)
{
    struct proto_kv kv[] = { { "rack", "r1" }, { "zone", "z" } };

    is_str(proto_kv_value(kv, 2, "zone"), "z", "a key's value");
    ok(proto_kv_value(kv, 2, "row") == NULL, "an absent key: NULL");
    ok(proto_kv_value(NULL, 0, "rack") == NULL, "no labels: NULL");
}

/* A random tree of every item kind; numbers only below 1e15 in
 * magnitude, where cJSON prints integers as digits too. */
static cJSON *
random_item(unsigned *seed, int depth)
{
    static const double nums[] = { 0, -0.0, 1, -1, 0.5, -2.25, 1e-7,
        3.141592653589793, 0.1, 1.0 / 3, 2147483647, 2147483648.0,
        -2147483649.0, 123456789012345.0, 99999999999999.5, 1e300, -1e-300,
        6.02214076e23 };
    char text[24];
    cJSON *c;
    int i, n;

    switch (depth > 3 ? rand_r(seed) % 5 : rand_r(seed) % 7) {
    case 0:
        return cJSON_CreateNull();
    case 1:
        return cJSON_CreateBool(rand_r(seed) % 2);
    case 2:
        return cJSON_CreateNumber(
            nums[rand_r(seed) % (sizeof(nums) / sizeof(nums[0]))]);
    case 3:
        return cJSON_CreateNumber((double)(rand_r(seed) % 2000001) / 8 - 1e5);
    case 4:
        n = rand_r(seed) % (int)sizeof(text);
        for (i = 0; i < n; i++)
            text[i] = (char)(1 + rand_r(seed) % 255);
        text[n] = '\0';
        return cJSON_CreateString(text);
    case 5:
        c = cJSON_CreateArray();
        for (n = rand_r(seed) % 5; n > 0; n--)
            cJSON_AddItemToArray(c, random_item(seed, depth + 1));
        return c;
    default:
        c = cJSON_CreateObject();
        for (n = rand_r(seed) % 5; n > 0; n--) {
            snprintf(text, sizeof(text), "k%d\n\"%c", n,
                1 + rand_r(seed) % 255);
            cJSON_AddItemToObject(c, text, random_item(seed, depth + 1));
        }
        return c;
    }
}

static void
test_print(void)
{
    unsigned seed = 20261128;
    int i, same = 0;
    cJSON *json;
    char *mine, *theirs;

    for (i = 0; i < 2000; i++) {
        json = random_item(&seed, 0);
        mine = jsonx_print(json);
        theirs = cJSON_PrintUnformatted(json);
        if (strcmp(mine, theirs) == 0)
            same++;
        else if (same == i)
            diag("differs: '%s' vs cJSON's '%s'", mine, theirs);
        free(mine);
        cJSON_free(theirs);
        cJSON_Delete(json);
    }
    is_int(same, 2000, "jsonx_print prints random trees as cJSON does");

    json = cJSON_CreateArray();
    cJSON_AddItemToArray(json, cJSON_CreateNumber(1764340000000000.0));
    cJSON_AddItemToArray(json, cJSON_CreateNumber(-9007199254740992.0));
    cJSON_AddItemToArray(json, cJSON_CreateNumber(123456789012345678.0));
    cJSON_AddItemToArray(json, cJSON_CreateNumber(0.0 / 0.0));
    cJSON_AddItemToArray(json, cJSON_CreateRaw("{\"a\":1}"));
    mine = jsonx_print(json);
    is_str(mine,
        "[1764340000000000,-9007199254740992,1.2345678901234568e+17,null,"
        "{\"a\":1}]",
        "integers up to 2^53 print as digits, past it as cJSON does");
    free(mine);
    cJSON_Delete(json);
    mine = jsonx_print(NULL);
    is_str(mine, "null", "nothing prints as null");
    free(mine);
}

int
main(void)
{
    plan(NO_PLAN);
    test_cadence();
    test_job_spec();
    test_resume_from();
    test_id_list();
    test_kv_value();
    test_node_report();
    test_work();
    test_directives();
    test_coll();
    test_modex();
    test_health();
    test_log_frames();
    test_log_query();
    test_print();
    return done_testing();
}
