/*
 * pmixsrv_net.h - the PMIx server's fences and direct modex across
 * nodes, relayed through the scheduler (pmixsrv.c's, nobody else's)
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
 * A direct modex (a rank asks for the data of a rank of another node
 * that was not collected in a fence) goes to the scheduler too (POST
 * /v1/agent/modex), which hands it to the owner node's agent through
 * that agent's modex long poll (GET /v1/agent/modex, kept in flight
 * while a namespace here spans nodes); the owner's answer (POST
 * /v1/agent/modex/reply) comes back as the answer, or a failure (the
 * owner's agent gone, the attempt ended, the timeout, as for fences).
 *
 * Loop thread only.
 */
#ifndef AGENT_PMIXSRV_NET_H
#define AGENT_PMIXSRV_NET_H

#include <stddef.h>
#include <stdint.h>

#include <pmix_server.h>

#include "common/proto.h"

struct agentd;
struct pmixsrv_net;
struct pmixsrv_net_ns;

/* The owner side of a direct modex: the data of rank of (job, attempt)
 * is asked for as request id; the answer goes back with
 * pmixsrv_net_modex_answer (later: once the rank committed it). */
typedef void pmixsrv_net_serve_fn(void *arg, uint64_t id, int64_t job,
    int attempt, uint32_t rank);

/* The relay and its requests in flight; serve(arg, ...) gets the direct
 * modex requests for this node's ranks. */
struct pmixsrv_net *pmixsrv_net_create(struct agentd *ad,
    pmixsrv_net_serve_fn *serve, void *arg);
/* Frees what is still in flight without answering (libpmix is gone and
 * curlx_destroy dropped the requests). Accepts NULL. */
void pmixsrv_net_destroy(struct pmixsrv_net *net);

/* What the relay keeps of the namespace of launch l (its layout, the
 * node names, the per-set counters). While one spanning nodes exists,
 * the modex long poll runs. */
struct pmixsrv_net_ns *pmixsrv_net_ns_new(struct pmixsrv_net *net,
    const struct proto_launch *l);
void pmixsrv_net_ns_free(struct pmixsrv_net *net, struct pmixsrv_net_ns *nn);

/*
 * Relays a fence of namespace nn among procs (all of nn's namespace;
 * rank PMIX_RANK_WILDCARD: all of it) with this node's data; timeout_s
 * is PMIX_TIMEOUT's (0: none given). cb(status, blob, ...) is called
 * exactly once, later or at once when the fence cannot be relayed.
 */
void pmixsrv_net_fence(struct pmixsrv_net *net, struct pmixsrv_net_ns *nn,
    const pmix_proc_t *procs, size_t nprocs, const char *data, size_t ndata,
    int timeout_s, pmix_modex_cbfunc_t cb, void *cbdata);

/*
 * Asks rank's node (rank of nn's namespace, on another node) for its
 * data; timeout_s is PMIX_TIMEOUT's (0: none given). cb(status, blob,
 * ...) is called exactly once, later or at once when it cannot be asked.
 */
void pmixsrv_net_dmodex(struct pmixsrv_net *net, struct pmixsrv_net_ns *nn,
    pmix_rank_t rank, int timeout_s, pmix_modex_cbfunc_t cb, void *cbdata);

/* Answers direct modex request id (serve's): status PMIX_SUCCESS with
 * blob[0..len) (copied), else the error. */
void pmixsrv_net_modex_answer(struct pmixsrv_net *net, uint64_t id,
    pmix_status_t status, const char *blob, size_t len);

#endif
