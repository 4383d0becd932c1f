/*
 * pmixsrv_info.h - the PMIx information lists of pmixsrv.c
 *
 * What the agent's PMIx server tells libpmix: its own settings at start,
 * and for each attempt the job, node and process information Open MPI
 * reads in MPI_Init. Pure (no loop, no server): the lists are built with
 * libpmix's info-list helpers, which work before PMIx_server_init.
 */
#ifndef AGENT_PMIXSRV_INFO_H
#define AGENT_PMIXSRV_INFO_H

#include <pmix_common.h>

#include "common/proto.h"

/*
 * The settings of PMIx_server_init: dir as server and system tmpdir,
 * server namespace nspace, rank 0, tool and system support off. On
 * success *info holds the array (caller frees with
 * PMIx_Data_array_destruct); returns libpmix's status.
 */
pmix_status_t pmixsrv_info_server(const char *dir, const char *nspace,
    pmix_data_array_t *info);

/*
 * The information of namespace ns for launch l, this node being called
 * host: job level (sizes, node and proc maps), this node's facts, the one
 * app, every node (other nodes get placeholder names, which only the maps
 * use: the launch does not name them) and every rank, remote ones
 * included, laid out as the scheduler does (node k holds ranks k * rpn to
 * (k + 1) * rpn - 1). Ownership as pmixsrv_info_server.
 */
pmix_status_t pmixsrv_info_ns(const char *ns, const struct proto_launch *l,
    const char *host, pmix_data_array_t *info);

#endif
