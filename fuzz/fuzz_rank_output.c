/*
 * fuzz_rank_output.c - a rank's stderr, as the agent quotes it
 *
 * Whatever a rank writes to stderr, the agent reads the end of it
 * (tail_read) into the status report of a rank that ended and into stack
 * dumps: JSON, which must be valid UTF-8. The input is the stderr file;
 * its tail is read with the report's limit and with a limit the first
 * byte picks, then checked by a decoder of the harness's own (code
 * points, not byte ranges: no overlong form, no surrogate, nothing past
 * U+10FFFF, no NUL), held to its limit, and sent in a node report the
 * scheduler must accept.
 */
#include "fuzz/fuzz.h"

#include "agent/tail.h"
#include "common/err.h"
#include "common/proto.h"

static char path[512];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    snprintf(path, sizeof(path), "%s/err.0", fuzz_dir());
    return 0;
}

/* Whether s is UTF-8 that JSON may carry: every sequence decodes to a
 * code point in its shortest form, none a surrogate or past U+10FFFF. */
static bool
utf8_ok(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n, cp, min;

        if (c < 0x80) {
            s++;
            continue;
        }
        if ((c & 0xe0) == 0xc0)
            n = 1, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0)
            n = 2, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0)
            n = 3, cp = c & 0x07, min = 0x10000;
        else
            return false;
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        s += n + 1;
    }
    return true;
}

static void
report(char *tail)
{
    struct proto_rank_status rs = { .state = PROTO_RANK_EXITED,
        .pid = 5,
        .start_ms = 1,
        .end_ms = 2,
        .exit_code = 1,
        .step = -1,
        .stderr_tail = tail };
    struct proto_job_status js = { .job = 7,
        .attempt = 1,
        .ranks = &rs,
        .nranks = 1 };
    struct proto_node_report rep = { .node = "n1",
        .agent_id = "a1",
        .addr = "127.0.0.1",
        .res = { .cpus = 1, .memory_mb = 1 },
        .jobs = &js,
        .njobs = 1 },
                             back;
    struct err err = { 0 };
    cJSON *json = proto_node_report_to_json(&rep);

    if (proto_node_report_from_json(json, &back, &err) < 0)
        fuzz_fail("the scheduler refuses the stderr tail: %s\n", err.msg);
    fuzz_assert(strcmp(back.jobs[0].ranks[0].stderr_tail, tail) == 0);
    proto_node_report_release(&back);
    cJSON_Delete(json);
}

static char *
tail_checked(size_t max)
{
    char *tail = tail_read(path, max);

    fuzz_assert(tail != NULL);
    if (strlen(tail) > max)
        fuzz_fail("a tail of %zu bytes past its limit of %zu\n", strlen(tail),
            max);
    if (!utf8_ok((const unsigned char *)tail))
        fuzz_fail("a tail that is not valid UTF-8\n");
    return tail;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t max = 1 + fuzz_take_byte(&data, &size) % 64;
    char *tail;

    fuzz_write_file(fuzz_dir(), "err.0", data, size);
    tail = tail_checked(PROTO_TAIL_MAX);
    report(tail);
    free(tail);
    free(tail_checked(max));
    return 0;
}
