/*
 * cli_outage.c - waiting out a scheduler outage (cli.h "Outages")
 *
 * `submit --wait` and `logs --follow` keep polling while the scheduler
 * cannot be reached (or answers 5xx: it is restarting), for at most the
 * user's --retry-for (CLI_RETRY_DEFAULT_MS by default), and resume where
 * they were: the poll repeats the same request (logs: from the same
 * offset), so nothing is printed twice or skipped.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/timeid.h"

enum cli_outage_step
cli_outage_decide(int rc, long status, int64_t down_since, int64_t now,
    int64_t retry_ms)
{
    /* A 4xx is an answer (the job is gone, or not ours), and a server
     * that is not lockstep will not become one. */
    if ((rc == -EIO && status >= 400 && status < 500) || rc == -EPROTO)
        return CLI_OUTAGE_FINAL;
    if (down_since == 0)
        return retry_ms > 0 ? CLI_OUTAGE_FIRST : CLI_OUTAGE_GIVE_UP;
    if (now - down_since >= retry_ms)
        return CLI_OUTAGE_GIVE_UP;
    return CLI_OUTAGE_RETRY;
}

int
cli_set_retry_for(const char *value, int64_t *ms, struct sbuf *why)
{
    int64_t v = strcmp(value, "0") == 0 ? 0 : cli_parse_duration(value);

    if (v < 0) {
        sbuf_addf(why,
            "invalid --retry-for '%s': expected a duration (30s, 5m, 1h, "
            "1h30m) or 0 (do not wait out an outage)",
            value);
        return -EINVAL;
    }
    *ms = v;
    return 0;
}

bool
cli_outage_wait(struct cli *cli, struct cli_outage *o, int rc,
    const struct cli_resp *resp, const struct err *err)
{
    int64_t now = timeid_mono_ms();
    int64_t retry_ms = o->retry_ms < 0 ? CLI_RETRY_DEFAULT_MS : o->retry_ms;

    switch (cli_outage_decide(rc, resp->status, o->down_since, now, retry_ms)) {
    case CLI_OUTAGE_FINAL:
        return false;
    case CLI_OUTAGE_FIRST:
        o->down_since = now;
        cli_warn(cli, "%s; waiting up to %llds for it (--retry-for)", err->msg,
            (long long)(retry_ms / 1000));
        break;
    case CLI_OUTAGE_RETRY:
        break;
    case CLI_OUTAGE_GIVE_UP:
        if (o->down_since > 0)
            cli_warn(cli, "gave up after %llds (--retry-for)",
                (long long)((now - o->down_since) / 1000));
        return false;
    }
    cli_sleep_ms(CLI_RETRY_POLL_MS);
    return true;
}

void
cli_outage_over(struct cli *cli, struct cli_outage *o)
{
    if (o->down_since == 0)
        return;
    fflush(stdout);
    fprintf(stderr,
        "%s %s: scheduler at %s answers again after %llds; "
        "resuming\n",
        CLI_PROG, cli->cmd ? cli->cmd->name : "",
        cli->server ? cli->server : "",
        (long long)((timeid_mono_ms() - o->down_since) / 1000));
    o->down_since = 0;
}
