/*
 * fuzz_progress.c - a rank's progress and commit files, as the agent
 * samples them
 *
 * The SDK in a rank writes <attempt dir>/sdk/rank-<r>.progress (a JSON
 * record: step, attempt, time, acks of directives, step times, timed
 * sections) and appends "<step> <attempt>" lines to rank-<r>.ckpt; the
 * rank runs the user's code, so both are untrusted. No seam: the files
 * are written and the agent samples them (proc_progress_sample, the
 * function its status report calls), then fills the rank's status
 * (proc_progress_fill), which goes into a node report the scheduler must
 * accept (proto_node_report, printed and parsed back).
 *
 * Input: the progress file, optionally followed by "\n\xff\xff\n" and
 * the commit file. The attempt is 1.
 */
#include "fuzz/fuzz.h"

#include "agent/proc_job.h"
#include "agent/proc_progress.h"
#include "common/err.h"

static char progress_path[512], commit_path[512];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    snprintf(progress_path, sizeof(progress_path), "%s/rank-0.progress",
        fuzz_dir());
    snprintf(commit_path, sizeof(commit_path), "%s/rank-0.ckpt", fuzz_dir());
    return 0;
}

/* The rank's status in a node report, through the scheduler's parser. */
static void
report(struct proto_rank_status *rs)
{
    struct proto_job_status js = { .job = 7,
        .attempt = 1,
        .ranks = rs,
        .nranks = 1 };
    struct proto_node_report rep = {
        .node = "n1",
        .agent_id = "a1",
        .addr = "127.0.0.1",
        .res = { .cpus = 1, .memory_mb = 1 },
        .jobs = &js,
        .njobs = 1,
    }, back;
    struct err err = { 0 };
    cJSON *json = proto_node_report_to_json(&rep);

    if (proto_node_report_from_json(json, &back, &err) < 0) {
        char *text = fuzz_json_text(json);

        fuzz_fail("the scheduler refuses the progress reported: %s\n%s\n",
            err.msg, text);
    }
    proto_node_report_release(&back);
    cJSON_Delete(json);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *sep = memmem(data, size, "\n\xff\xff\n", 4);
    size_t len = sep ? (size_t)(sep - data) : size;
    struct proc_job job = { .job = 7, .attempt = 1 };
    struct proc_rank r = {
        .job = &job,
        .state = PROTO_RANK_RUNNING,
        .pid = 5,
        .step = -1,
        .progress_path = progress_path,
        .commit_path = commit_path,
        .start_mono_ms = 1000,
    };
    struct proto_rank_status rs = { .state = PROTO_RANK_RUNNING,
        .pid = 5,
        .start_ms = 1,
        .exit_code = -1 };

    r.output.out.fd = r.output.err.fd = -1;
    fuzz_write_file(fuzz_dir(), "rank-0.progress", data, len);
    if (sep)
        fuzz_write_file(fuzz_dir(), "rank-0.ckpt", sep + 4, size - len - 4);
    else
        (void)unlink(commit_path);
    proc_progress_sample(&r, 5000, 1700000000000);
    /* Nothing changed: nothing read again, nothing lost. */
    proc_progress_sample(&r, 6000, 1700000001000);
    fuzz_assert(r.nacks <= PROC_ACKS_MAX);
    fuzz_assert(r.nsections <= PROTO_SECTIONS_MAX);
    fuzz_assert(r.nckpt_steps <= PROTO_STEPS_MAX);
    for (size_t i = 1; i < r.nckpt_steps; i++)
        fuzz_assert(r.ckpt_steps[i - 1] < r.ckpt_steps[i]);
    proc_progress_fill(&r, 7000, &rs);
    fuzz_assert(rs.idle_ms >= 0);
    /* The acks go up for the directives the scheduler listed
     * (proc_directive.c picks them by seq): all of them may. */
    rs.acks = r.acks;
    rs.nacks = r.nacks;
    report(&rs);
    free(rs.sections);
    free(rs.ckpt_steps);
    free(r.ckpt_steps);
    return 0;
}
