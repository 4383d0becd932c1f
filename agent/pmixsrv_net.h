/*
 * pmixsrv_net.h - the PMIx server's fences across nodes, relayed through
 * the scheduler (pmixsrv.c's, nobody else's)
 *
 * A fence whose participants are not all on this node reaches pmixsrv.c
 * (libpmix completes local ones itself), which hands it here. This node's
 * contribution goes to the scheduler (POST /v1/agent/collective,
 * docs/api.md) with the collective's id, the same on every node: a hash
 * of the participant set and a per-set counter (PMIx issues fences over
 * one set in the same order everywhere). The scheduler answers every
 * participating node, once all contributed, with the concatenation of
 * the blobs, which goes to libpmix's callback as is; or with a failure
 * (a participant's agent went away, the attempt ended, the timeout:
 * PMIX_TIMEOUT when the ranks gave one, else PROTO_COLL_TIMEOUT_MS),
 * which goes to it as an error status, so no rank waits forever.
 *
 * Loop thread only.
 */
#ifndef AGENT_PMIXSRV_NET_H
#define AGENT_PMIXSRV_NET_H

#include <stddef.h>

#include <pmix_server.h>

#include "common/proto.h"

struct agentd;
struct pmixsrv_net;
struct pmixsrv_net_ns;

/* The relay and its requests in flight. */
struct pmixsrv_net *pmixsrv_net_create(struct agentd *ad);
/* Frees what is still in flight without answering (libpmix is gone and
 * curlx_destroy dropped the requests). Accepts NULL. */
void pmixsrv_net_destroy(struct pmixsrv_net *net);

/* What the relay keeps of the namespace of launch l (its layout, the
 * node names, the per-set counters). */
struct pmixsrv_net_ns *pmixsrv_net_ns_new(const struct proto_launch *l);
void pmixsrv_net_ns_free(struct pmixsrv_net_ns *nn);

/*
 * Relays a fence of namespace nn among procs (all of nn's namespace;
 * rank PMIX_RANK_WILDCARD: all of it) with this node's data; timeout_s
 * is PMIX_TIMEOUT's (0: none given). cb(status, blob, ...) is called
 * exactly once, later or at once when the fence cannot be relayed.
 */
void pmixsrv_net_fence(struct pmixsrv_net *net, struct pmixsrv_net_ns *nn,
    const pmix_proc_t *procs, size_t nprocs, const char *data, size_t ndata,
    int timeout_s, pmix_modex_cbfunc_t cb, void *cbdata);

#endif
