/*
 * evidence.c - the evidence of one failure (evidence.h)
 */
#include "scheduler/evidence.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/names.h"
#include "common/xalloc.h"

static char *
dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void
evidence_init(struct evidence *f, enum policy_kind kind)
{
    memset(f, 0, sizeof(*f));
    f->kind = kind;
    f->rank = -1;
    f->last_step = -1;
}

void
evidence_release(struct evidence *f)
{
    free(f->node);
    free(f->source);
    free(f->actor);
    free(f->stderr_tail);
    memset(f, 0, sizeof(*f));
}

void
evidence_copy(struct evidence *dst, const struct evidence *src)
{
    *dst = *src;
    dst->node = dup_or_null(src->node);
    dst->source = dup_or_null(src->source);
    dst->actor = dup_or_null(src->actor);
    dst->stderr_tail = dup_or_null(src->stderr_tail);
}

static const char *const blame_names[] = {
    [EVIDENCE_BLAME_NONE] = "",
    [EVIDENCE_BLAME_BLAMED] = "blamed",
    [EVIDENCE_BLAME_WITHDRAWN] = "withdrawn",
};

const char *
evidence_blame_str(enum evidence_blame b)
{
    return names_str(blame_names, ARRAY_SIZE(blame_names), b, "");
}

int
evidence_blame_parse(const char *s, enum evidence_blame *out)
{
    int i = names_index(blame_names, ARRAY_SIZE(blame_names), s);

    if (i < 0)
        return i;
    *out = (enum evidence_blame)i;
    return 0;
}

cJSON *
evidence_to_json(const struct evidence *f)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_str(o, "kind", policy_kind_str(f->kind));
    if (f->node)
        jsonx_add_str(o, "node", f->node);
    if (f->rank >= 0)
        jsonx_add_int(o, "rank", f->rank);
    if (f->has_exit) {
        jsonx_add_int(o, "exit_code", f->exit_code);
        jsonx_add_int(o, "signal", f->signal);
    }
    if (f->fenced)
        cJSON_AddBoolToObject(o, "fenced", true);
    if (f->last_step >= 0)
        jsonx_add_int(o, "last_step", f->last_step);
    if (f->last_heartbeat_ms > 0)
        jsonx_add_int(o, "last_heartbeat_ms", f->last_heartbeat_ms);
    if (f->kind == POLICY_KIND_HANG)
        jsonx_add_int(o, "idle_ms", f->idle_ms);
    if (f->source)
        jsonx_add_str(o, "source", f->source);
    if (f->actor)
        jsonx_add_str(o, "actor", f->actor);
    if (f->stderr_tail && *f->stderr_tail)
        jsonx_add_str(o, "stderr_tail", f->stderr_tail);
    if (f->node && f->blame == EVIDENCE_BLAME_BLAMED)
        jsonx_add_str(o, "blamed", f->node);
    if (f->node && f->blame == EVIDENCE_BLAME_WITHDRAWN)
        jsonx_add_str(o, "blame_withdrawn", f->node);
    return o;
}
