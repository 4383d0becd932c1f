/*
 * health.c - a node's health findings and the exclusion policy (health.h)
 *
 * Findings are few (a node with many distinct problems has tens), so they
 * live in a plain array searched linearly.
 */
#include "scheduler/health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

void
health_config_default(struct health_config *c)
{
    c->soft_repeats = 3;
    c->unreliable_repeats = 3;
    c->holddown_ms = 300000;
    c->flap_count = 3;
    c->flap_window_ms = 3600000;
    c->soft_scopes_exclude = 3;
    c->soft_expire_ms = 86400000;
}

struct health *
health_create(void)
{
    struct health *h = xcalloc(1, sizeof(*h));

    h->boot_id = xstrdup("");
    h->agent_id = xstrdup("");
    return h;
}

static void
numbers_free(struct proto_check_number *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
}

static void
finding_release(struct health_finding *f)
{
    free(f->check);
    free(f->code);
    free(f->scope);
    free(f->evidence);
    free(f->closed_how);
    numbers_free(f->numbers, f->nnumbers);
    memset(f, 0, sizeof(*f));
}

static void
check_release(struct health_check *hc)
{
    free(hc->check);
    for (size_t i = 0; i < hc->nresults; i++)
        proto_check_result_release(&hc->results[i]);
    free(hc->results);
    memset(hc, 0, sizeof(*hc));
}

static void acked_clear(struct health *h);

void
health_destroy(struct health *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->nfindings; i++)
        finding_release(&h->findings[i]);
    free(h->findings);
    for (size_t i = 0; i < h->nchecks; i++)
        check_release(&h->checks[i]);
    free(h->checks);
    acked_clear(h);
    free(h->boot_id);
    free(h->agent_id);
    free(h);
}

static void
set_str(char **field, const char *s)
{
    free(*field);
    *field = xstrdup(s ? s : "");
}

static void
set_numbers(struct health_finding *f, const struct proto_check_number *v,
    size_t n)
{
    numbers_free(f->numbers, f->nnumbers);
    f->numbers = xcalloc(n + 1, sizeof(*f->numbers));
    for (size_t i = 0; i < n; i++) {
        f->numbers[i].name = xstrdup(v[i].name);
        f->numbers[i].value = v[i].value;
    }
    f->nnumbers = n;
}

/* ---- findings ----------------------------------------------------------- */

static struct health_finding *
finding_find(struct health *h, const char *check, const char *code,
    const char *scope)
{
    for (size_t i = 0; i < h->nfindings; i++) {
        struct health_finding *f = &h->findings[i];

        if (f->open && strcmp(f->check, check) == 0 &&
            strcmp(f->code, code) == 0 && strcmp(f->scope, scope) == 0)
            return f;
    }
    return NULL;
}

static struct health_finding *
finding_new(struct health *h, const char *check, const char *code,
    const char *scope, int64_t now)
{
    struct health_finding *f;

    h->findings = xreallocarray(h->findings, h->nfindings + 1,
        sizeof(*h->findings));
    f = &h->findings[h->nfindings++];
    memset(f, 0, sizeof(*f));
    f->check = xstrdup(check);
    f->code = xstrdup(code);
    f->scope = xstrdup(scope);
    f->evidence = xstrdup("");
    f->first_ms = now;
    f->open = true;
    f->announce = true;
    f->dirty = true;
    return f;
}

static void
finding_close(struct health_finding *f, const char *how)
{
    f->open = false;
    set_str(&f->closed_how, how);
    f->dirty = true;
}

static bool
is_flapping(const struct health_finding *f)
{
    return strcmp(f->check, HEALTH_CHECK_SCHEDULER) == 0 &&
           strcmp(f->code, HEALTH_CODE_FLAPPING) == 0;
}

/* Whether f, just raised again, now excludes the node. */
static bool
finding_excludes(const struct health_finding *f, const struct health_config *c)
{
    switch (f->status) {
    case PROTO_CHECK_FAIL:
    case PROTO_CHECK_HUNG:
        return true;
    case PROTO_CHECK_WARN:
        return f->consecutive >= c->soft_repeats;
    case PROTO_CHECK_UNKNOWN:
    case PROTO_CHECK_TIMEOUT:
        return f->consecutive >= c->unreliable_repeats;
    default:
        return false;
    }
}

/* Whether r says its finding occurred again in this run: a check that
 * reports a standing finding (the kernel log's, open for the whole boot)
 * says how many occurrences are new with a number "new"; 0 is a reminder,
 * not a repeat. */
static bool
result_recurs(const struct proto_check_result *r)
{
    for (size_t i = 0; i < r->nnumbers; i++) {
        if (strcmp(r->numbers[i].name, "new") == 0)
            return r->numbers[i].value > 0;
    }
    return true;
}

static char *
acked_key(const char *check, const char *code, const char *scope)
{
    return xasprintf("%s\t%s\t%s", check, code, scope);
}

static void
acked_clear(struct health *h)
{
    for (size_t i = 0; i < h->nacked; i++)
        free(h->acked[i]);
    free(h->acked);
    h->acked = NULL;
    h->nacked = 0;
}

/* Whether r only repeats a finding an operator acknowledged in this boot
 * (no new occurrence): then it opens nothing. A new occurrence forgets
 * the acknowledgement. */
static bool
acked_reminder(struct health *h, const struct proto_check_result *r)
{
    const char *scope = r->scope && *r->scope ? r->scope : "node";
    char *key = acked_key(r->check, r->code, scope);
    bool reminder = false;

    for (size_t i = 0; i < h->nacked; i++) {
        if (strcmp(h->acked[i], key) != 0)
            continue;
        reminder = !result_recurs(r);
        if (!reminder) {
            free(h->acked[i]);
            h->acked[i] = h->acked[--h->nacked];
        }
        break;
    }
    free(key);
    return reminder;
}

/* Result r of run `run` raised its finding. */
static void
finding_raise(struct health *h, const struct health_config *c,
    const struct proto_check_result *r, uint64_t run, int64_t now)
{
    const char *scope = r->scope && *r->scope ? r->scope : "node";
    struct health_finding *f = finding_find(h, r->check, r->code, scope);

    if (f == NULL) {
        f = finding_new(h, r->check, r->code, scope, now);
        f->consecutive = 1;
    } else if (f->pass_since) {
        f->consecutive = 1;
    } else if (result_recurs(r)) {
        f->consecutive++;
    }
    f->status = r->status;
    set_str(&f->evidence, r->evidence);
    set_numbers(f, r->numbers, r->nnumbers);
    f->last_ms = now;
    f->count = r->count > 0 ? r->count : 1;
    f->last_run = run;
    f->pass_since = 0;
    f->dirty = true;
    if (!f->excluding && finding_excludes(f, c)) {
        f->excluding = true;
        f->announce = true;
    }
}

/* A run of check that did not raise the open finding f. */
static void
finding_passed(struct health_finding *f, const struct health_config *c,
    int64_t now)
{
    if (!f->excluding) {
        finding_close(f, "pass");
        return;
    }
    if (f->pass_since == 0) {
        f->pass_since = now;
        f->consecutive = 0;
        f->dirty = true;
    }
    if (now - f->pass_since >= c->holddown_ms)
        finding_close(f, "holddown");
}

/* ---- checks ------------------------------------------------------------- */

static struct health_check *
check_find(struct health *h, const char *check, bool create)
{
    struct health_check *hc;

    for (size_t i = 0; i < h->nchecks; i++) {
        if (strcmp(h->checks[i].check, check) == 0)
            return &h->checks[i];
    }
    if (!create)
        return NULL;
    h->checks = xreallocarray(h->checks, h->nchecks + 1, sizeof(*h->checks));
    hc = &h->checks[h->nchecks++];
    memset(hc, 0, sizeof(*hc));
    hc->check = xstrdup(check);
    return hc;
}

/* Whether results[i] is the first of its check in the report. */
static bool
check_first(const struct proto_health *rep, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (strcmp(rep->results[j].check, rep->results[i].check) == 0)
            return false;
    }
    return true;
}

/* The report's run of check: the highest run of its results. */
static uint64_t
check_run(const struct proto_health *rep, const char *check)
{
    uint64_t run = 0;

    for (size_t i = 0; i < rep->nresults; i++) {
        if (strcmp(rep->results[i].check, check) == 0 &&
            rep->results[i].run > run)
            run = rep->results[i].run;
    }
    return run;
}

/* Apply a new run of check (every result of it in the report). */
static void
check_apply(struct health *h, const struct health_config *c,
    const struct proto_health *rep, const char *check, uint64_t run,
    int64_t now)
{
    struct health_check *hc = check_find(h, check, true);
    size_t n0 = h->nfindings, n = 0;
    bool *raised;

    for (size_t i = 0; i < hc->nresults; i++)
        proto_check_result_release(&hc->results[i]);
    free(hc->results);
    hc->results = xcalloc(rep->nresults + 1, sizeof(*hc->results));
    for (size_t i = 0; i < rep->nresults; i++) {
        const struct proto_check_result *r = &rep->results[i];

        if (strcmp(r->check, check) != 0)
            continue;
        proto_check_result_copy(&hc->results[n++], r);
    }
    hc->nresults = n;
    hc->run = run;
    hc->dirty = true;
    /* Which of the open findings of this check the run raises again. */
    raised = xcalloc(n0 + 1, sizeof(*raised));
    for (size_t i = 0; i < n; i++) {
        const struct proto_check_result *r = &hc->results[i];
        const char *scope = r->scope && *r->scope ? r->scope : "node";
        struct health_finding *f;

        if (r->status == PROTO_CHECK_PASS || r->status == PROTO_CHECK_SKIPPED)
            continue;
        f = finding_find(h, r->check, r->code, scope);
        if (f && f < h->findings + n0)
            raised[f - h->findings] = true;
    }
    for (size_t i = 0; i < n0; i++) {
        struct health_finding *f = &h->findings[i];

        if (f->open && !raised[i] && strcmp(f->check, check) == 0)
            finding_passed(f, c, now);
    }
    free(raised);
    for (size_t i = 0; i < n; i++) {
        const struct proto_check_result *r = &hc->results[i];

        if (r->status != PROTO_CHECK_PASS && r->status != PROTO_CHECK_SKIPPED &&
            !acked_reminder(h, r))
            finding_raise(h, c, r, run, now);
    }
}

/* A new boot: every finding but flapping closes; acknowledgements of the
 * old boot are forgotten. */
static void
health_boot(struct health *h)
{
    acked_clear(h);
    for (size_t i = 0; i < h->nfindings; i++) {
        struct health_finding *f = &h->findings[i];

        if (f->open && !is_flapping(f))
            finding_close(f, "boot");
    }
}

bool
health_apply(struct health *h, const struct health_config *c,
    const char *agent_id, const struct proto_health *rep, int64_t now)
{
    bool changed = false;

    if (strcmp(h->agent_id, agent_id) != 0) {
        set_str(&h->agent_id, agent_id);
        for (size_t i = 0; i < h->nchecks; i++)
            h->checks[i].run = 0;
    }
    if (strcmp(h->boot_id, rep->boot_id ? rep->boot_id : "") != 0) {
        health_boot(h);
        set_str(&h->boot_id, rep->boot_id);
        h->waiting = true;
        changed = true;
    }
    if (h->waiting && rep->full_pass) {
        h->waiting = false;
        changed = true;
    }
    for (size_t i = 0; i < rep->nresults; i++) {
        const char *check = rep->results[i].check;
        struct health_check *hc;
        uint64_t run;

        if (!check_first(rep, i))
            continue;
        run = check_run(rep, check);
        hc = check_find(h, check, false);
        if (hc && run <= hc->run)
            continue; /* that run was applied already */
        check_apply(h, c, rep, check, run, now);
        changed = true;
    }
    return changed;
}

/* ---- the scheduler's own findings --------------------------------------- */

static size_t
soft_scopes(const struct health *h, const char *code)
{
    size_t n = 0;

    for (size_t i = 0; i < h->nfindings; i++) {
        const struct health_finding *f = &h->findings[i];

        n += f->open && strcmp(f->check, HEALTH_CHECK_SCHEDULER) == 0 &&
             strcmp(f->code, code) == 0;
    }
    return n;
}

void
health_soft(struct health *h, const struct health_config *c, const char *code,
    const char *scope, const char *evidence, int64_t now)
{
    struct health_finding *f = finding_find(h, HEALTH_CHECK_SCHEDULER, code,
        scope);

    if (f == NULL)
        f = finding_new(h, HEALTH_CHECK_SCHEDULER, code, scope, now);
    f->status = PROTO_CHECK_WARN;
    set_str(&f->evidence, evidence);
    f->last_ms = now;
    f->count++;
    f->consecutive++;
    f->dirty = true;
    if (soft_scopes(h, code) < (size_t)c->soft_scopes_exclude)
        return;
    for (size_t i = 0; i < h->nfindings; i++) {
        struct health_finding *g = &h->findings[i];

        if (g->open && !g->excluding &&
            strcmp(g->check, HEALTH_CHECK_SCHEDULER) == 0 &&
            strcmp(g->code, code) == 0) {
            g->excluding = true;
            g->announce = true;
            g->dirty = true;
        }
    }
}

bool
health_expire(struct health *h, const struct health_config *c, int64_t now)
{
    bool any = false;

    for (size_t i = 0; i < h->nfindings; i++) {
        struct health_finding *f = &h->findings[i];

        if (f->open && !f->excluding && !is_flapping(f) &&
            strcmp(f->check, HEALTH_CHECK_SCHEDULER) == 0 &&
            now - f->last_ms >= c->soft_expire_ms) {
            finding_close(f, "expired");
            any = true;
        }
    }
    return any;
}

/* ---- people ------------------------------------------------------------- */

size_t
health_ack(struct health *h, const char *code, const char *scope, int64_t now)
{
    size_t n = 0;

    (void)now;
    for (size_t i = 0; i < h->nfindings; i++) {
        struct health_finding *f = &h->findings[i];

        if (!f->open || strcmp(f->code, code) != 0 ||
            (scope && strcmp(f->scope, scope) != 0))
            continue;
        if (is_flapping(f)) {
            h->nflaps = 0;
        } else {
            h->acked = xrealloc(h->acked, (h->nacked + 1) * sizeof(*h->acked));
            h->acked[h->nacked++] = acked_key(f->check, f->code, f->scope);
        }
        finding_close(f, "ack");
        n++;
    }
    return n;
}

/* ---- what it means ------------------------------------------------------ */

const char *
health_finding_str(const struct health_finding *f, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s %s%s%s", proto_check_status_str(f->status),
        f->code, f->scope, *f->evidence ? ": " : "", f->evidence);
    return buf;
}

/* The first open finding that does (excluding) or does not exclude. */
static const struct health_finding *
first_open(const struct health *h, bool excluding)
{
    for (size_t i = 0; i < h->nfindings; i++) {
        const struct health_finding *f = &h->findings[i];

        if (f->open && f->excluding == excluding)
            return f;
    }
    return NULL;
}

bool
health_excluded(const struct health *h, char *buf, size_t len)
{
    const struct health_finding *f = first_open(h, true);

    if (f && buf) {
        char desc[512];

        snprintf(buf, len, "%s: %s",
            is_flapping(f) ? "flapping"
            : f->status == PROTO_CHECK_UNKNOWN ||
                    f->status == PROTO_CHECK_TIMEOUT
                ? "check unreliable"
            : f->status == PROTO_CHECK_WARN ? "soft finding repeated"
                                            : "health check failed",
            health_finding_str(f, desc, sizeof(desc)));
    }
    return f != NULL;
}

bool
health_suspect(const struct health *h, char *buf, size_t len)
{
    const struct health_finding *f = first_open(h, false);

    if (f && buf) {
        char desc[512];

        snprintf(buf, len, "suspect: %s",
            health_finding_str(f, desc, sizeof(desc)));
    }
    return f != NULL;
}

size_t
health_open_count(const struct health *h)
{
    size_t n = 0;

    for (size_t i = 0; i < h->nfindings; i++)
        n += h->findings[i].open;
    return n;
}

bool
health_note_exclusion(struct health *h, const struct health_config *c,
    int64_t now)
{
    size_t keep = 0, recent;
    struct health_finding *f;
    char ev[160];

    if (h->nflaps == HEALTH_FLAP_MAX) {
        memmove(h->flaps, h->flaps + 1,
            (HEALTH_FLAP_MAX - 1) * sizeof(int64_t));
        h->nflaps--;
    }
    h->flaps[h->nflaps++] = now;
    for (size_t i = 0; i < h->nflaps; i++) {
        if (now - h->flaps[i] <= c->flap_window_ms)
            h->flaps[keep++] = h->flaps[i];
    }
    h->nflaps = keep;
    recent = keep;
    if (recent < (size_t)c->flap_count ||
        finding_find(h, HEALTH_CHECK_SCHEDULER, HEALTH_CODE_FLAPPING, "node"))
        return false;
    f = finding_new(h, HEALTH_CHECK_SCHEDULER, HEALTH_CODE_FLAPPING, "node",
        now);
    snprintf(ev, sizeof(ev),
        "excluded %zu times within %lld s; stays out until an operator "
        "acknowledges it",
        recent, (long long)(c->flap_window_ms / 1000));
    set_str(&f->evidence, ev);
    f->status = PROTO_CHECK_FAIL;
    f->last_ms = now;
    f->count = (int64_t)recent;
    f->consecutive = 1;
    f->excluding = true;
    return true;
}

/* ---- bookkeeping -------------------------------------------------------- */

void
health_written(struct health *h)
{
    size_t keep = 0;

    for (size_t i = 0; i < h->nfindings; i++) {
        struct health_finding *f = &h->findings[i];

        if (!f->open) {
            finding_release(f);
            continue;
        }
        f->dirty = false;
        f->announce = false;
        if (keep != i)
            h->findings[keep] = *f;
        keep++;
    }
    h->nfindings = keep;
    for (size_t i = 0; i < h->nchecks; i++)
        h->checks[i].dirty = false;
}

void
health_add_finding(struct health *h, const struct health_finding *src)
{
    struct health_finding *f = finding_new(h, src->check, src->code, src->scope,
        src->first_ms);

    f->id = src->id;
    f->status = src->status;
    set_str(&f->evidence, src->evidence);
    set_numbers(f, src->numbers, src->nnumbers);
    f->last_ms = src->last_ms;
    f->count = src->count;
    f->consecutive = src->consecutive;
    f->last_run = src->last_run;
    f->excluding = src->excluding;
    f->pass_since = src->pass_since;
    f->dirty = false;
    f->announce = false;
}

void
health_add_check(struct health *h, const char *check, uint64_t run,
    struct proto_check_result *results, size_t nresults)
{
    struct health_check *hc = check_find(h, check, true);

    for (size_t i = 0; i < hc->nresults; i++)
        proto_check_result_release(&hc->results[i]);
    free(hc->results);
    hc->results = results;
    hc->nresults = nresults;
    hc->run = run;
    hc->dirty = false;
}
