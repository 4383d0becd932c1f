/*
 * fuzz_health_output.c - what a site health check prints, and its header
 *
 * A site check (an executable in health_checks_dir) prints one result or
 * an array of them on stdout; the agent parses that
 * (health_output_parse), names the check and reports the results to the
 * scheduler (fuzz_check.h: the scheduler must accept whatever the agent
 * accepted). Its file's header comment (`# lockstep: interval=60s
 * timeout=10s`) is parsed too (health_header_parse).
 *
 * Input: one byte (bit 0: 0 the output, 1 the header), then the text.
 */
#include "fuzz/fuzz_check.h"

FUZZ_INIT_QUIET

static void
output(const char *text)
{
    struct proto_check_result *res = NULL;
    struct err err = { 0 };
    size_t n = 0;

    if (health_output_parse(text, &res, &n, &err) < 0) {
        fuzz_assert(err.msg[0] != '\0');
        return;
    }
    fuzz_assert(n >= 1 && n <= HEALTH_RESULTS_PER_CHECK);
    /* A set of results never differs from itself. */
    fuzz_assert(!health_results_differ(res, n, res, n));
    fuzz_results_report(res, n, "site:fuzz");
}

static void
header(const uint8_t *data, size_t size)
{
    int64_t interval = 0, timeout = 0;
    struct err err = { 0 };

    if (health_header_parse((const char *)data, size, &interval, &timeout,
            &err) < 0) {
        fuzz_assert(err.msg[0] != '\0');
        return;
    }
    fuzz_assert(
        interval == 0 || (interval >= 100 && interval <= 86400 * 1000LL));
    fuzz_assert(timeout == 0 || (timeout >= 100 && timeout <= 3600 * 1000LL));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned which = fuzz_take_byte(&data, &size);
    char *text;

    if (which & 1) {
        header(data, size);
        return 0;
    }
    text = fuzz_cstr(data, size);
    output(text);
    free(text);
    return 0;
}
