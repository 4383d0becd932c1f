/*
 * pmixsrv_off.c - pmixsrv.h in a build without libpmix
 *
 * meson builds this file instead of pmixsrv.c when pkg-config finds no
 * 'pmix' (or -Dpmix=disabled): the agent runs as it would with `pmix =
 * false`, and ranks get no PMIx variables.
 */
#include "agent/pmixsrv.h"

#include <stdlib.h>

struct pmixsrv *
pmixsrv_create(struct agentd *ad, struct err *err)
{
    err_clear(err);
    return NULL;
}

void
pmixsrv_destroy(struct pmixsrv *px)
{
}

void
pmixsrv_set_hooks(struct pmixsrv *px, pmixsrv_abort_fn abort_fn,
    pmixsrv_stop_fn stop_fn, void *arg)
{
}

int
pmixsrv_rank_env(struct pmixsrv *px, const struct proto_launch *l, size_t i,
    uid_t uid, gid_t gid, char ***env)
{
    return 0;
}

void
pmixsrv_directives(struct pmixsrv *px, int64_t job, int attempt,
    const struct proto_directive *ds, size_t n)
{
}

void
pmixsrv_job_end(struct pmixsrv *px, int64_t job, int attempt)
{
}
