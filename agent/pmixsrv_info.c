/*
 * pmixsrv_info.c - the PMIx information lists of pmixsrv.c
 *
 * The keys are those the PMIx notes found Open MPI 4.1 needs, and those
 * PRRTE and slurmd register besides (cheap): PMIX_NODE_MAP/PMIX_PROC_MAP
 * with per-rank PMIX_LOCAL_RANK and PMIX_NODE_RANK are the minimum, and
 * every node carries PMIX_HOSTNAME (libpmix 4.2 crashes in
 * register_nspace on a node without one). Directories (PMIX_TMPDIR,
 * PMIX_NSDIR) are left out on purpose: Open MPI then keeps its session
 * files under /tmp, where ranks of any user can write.
 */
#include "agent/pmixsrv_info.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pmix_server.h>

#include "common/sbuf.h"
#include "common/xalloc.h"

/* An info list being built; the first failure sticks. */
struct pmixsrv_info {
    void *list;
    pmix_status_t rc;
};

static void
pmixsrv_info_start(struct pmixsrv_info *b)
{
    b->list = PMIx_Info_list_start();
    b->rc = b->list != NULL ? PMIX_SUCCESS : PMIX_ERR_NOMEM;
}

static void
pmixsrv_info_add(struct pmixsrv_info *b, const char *key, const void *val,
    pmix_data_type_t type)
{
    if (b->rc == PMIX_SUCCESS)
        b->rc = PMIx_Info_list_add(b->list, key, val, type);
}

static void
pmixsrv_info_u32(struct pmixsrv_info *b, const char *key, uint32_t v)
{
    pmixsrv_info_add(b, key, &v, PMIX_UINT32);
}

static void
pmixsrv_info_u16(struct pmixsrv_info *b, const char *key, uint16_t v)
{
    pmixsrv_info_add(b, key, &v, PMIX_UINT16);
}

static void
pmixsrv_info_rank(struct pmixsrv_info *b, const char *key, pmix_rank_t v)
{
    pmixsrv_info_add(b, key, &v, PMIX_PROC_RANK);
}

/* Converts sub (then released) into a data array added to b as key. */
static void
pmixsrv_info_nest(struct pmixsrv_info *b, const char *key,
    struct pmixsrv_info *sub)
{
    pmix_data_array_t da;

    memset(&da, 0, sizeof(da));
    if (b->rc == PMIX_SUCCESS)
        b->rc = sub->rc;
    if (b->rc == PMIX_SUCCESS)
        b->rc = PMIx_Info_list_convert(sub->list, &da);
    pmixsrv_info_add(b, key, &da, PMIX_DATA_ARRAY);
    PMIx_Data_array_destruct(&da);
    if (sub->list != NULL)
        PMIx_Info_list_release(sub->list);
}

/* The layout of an attempt: node k holds ranks [k * rpn, (k + 1) * rpn)
 * (scheduler/launch.c), this node the ranks the launch lists. */
struct pmixsrv_layout {
    const struct proto_launch *l;
    int nnodes, rpn;
    char **names; /* per node */
};

static int
pmixsrv_rank_node(const struct pmixsrv_layout *lo, int rank)
{
    size_t i;

    for (i = 0; i < lo->l->nranks; i++) {
        if (lo->l->ranks[i].rank == rank)
            return lo->l->node_rank;
    }
    return lo->rpn > 0 ? rank / lo->rpn : 0;
}

/* "r0,r1,..." of the ranks of node k, appended to sb. */
static void
pmixsrv_node_ranks(const struct pmixsrv_layout *lo, int k, struct sbuf *sb)
{
    bool first = true;
    int r;

    for (r = 0; r < lo->l->world_size; r++) {
        if (pmixsrv_rank_node(lo, r) != k)
            continue;
        sbuf_addf(sb, "%s%d", first ? "" : ",", r);
        first = false;
    }
}

static uint32_t
pmixsrv_node_size(const struct pmixsrv_layout *lo, int k, int *leader)
{
    uint32_t n = 0;
    int r;

    *leader = -1;
    for (r = 0; r < lo->l->world_size; r++) {
        if (pmixsrv_rank_node(lo, r) != k)
            continue;
        if (*leader < 0)
            *leader = r;
        n++;
    }
    return n;
}

/* The node map and the proc map (libpmix's regular expressions). */
static void
pmixsrv_info_maps(struct pmixsrv_info *b, const struct pmixsrv_layout *lo)
{
    struct sbuf nodes, ppn;
    char *regex = NULL, *ppnex = NULL;
    int k;

    sbuf_init(&nodes);
    sbuf_init(&ppn);
    for (k = 0; k < lo->nnodes; k++) {
        sbuf_addf(&nodes, "%s%s", k > 0 ? "," : "", lo->names[k]);
        if (k > 0)
            sbuf_addf(&ppn, ";");
        pmixsrv_node_ranks(lo, k, &ppn);
    }
    if (b->rc == PMIX_SUCCESS)
        b->rc = PMIx_generate_regex(nodes.buf, &regex);
    if (b->rc == PMIX_SUCCESS)
        b->rc = PMIx_generate_ppn(ppn.buf, &ppnex);
    pmixsrv_info_add(b, PMIX_NODE_MAP, regex, PMIX_REGEX);
    pmixsrv_info_add(b, PMIX_PROC_MAP, ppnex, PMIX_REGEX);
    free(regex);
    free(ppnex);
    sbuf_release(&nodes);
    sbuf_release(&ppn);
}

/* Node k's facts, in the flat form (this node) or an array's. */
static void
pmixsrv_info_node(struct pmixsrv_info *b, const struct pmixsrv_layout *lo,
    int k)
{
    struct sbuf peers;
    int leader;
    uint32_t n = pmixsrv_node_size(lo, k, &leader);

    sbuf_init(&peers);
    pmixsrv_node_ranks(lo, k, &peers);
    pmixsrv_info_u32(b, PMIX_NODEID, (uint32_t)k);
    /* Never without a host name: libpmix 4.2 crashes on a node without. */
    pmixsrv_info_add(b, PMIX_HOSTNAME, lo->names[k], PMIX_STRING);
    pmixsrv_info_u32(b, PMIX_LOCAL_SIZE, n);
    pmixsrv_info_u32(b, PMIX_NODE_SIZE, n);
    pmixsrv_info_add(b, PMIX_LOCAL_PEERS, peers.buf, PMIX_STRING);
    pmixsrv_info_rank(b, PMIX_LOCALLDR, (pmix_rank_t)(leader < 0 ? 0 : leader));
    sbuf_release(&peers);
}

static void
pmixsrv_info_app(struct pmixsrv_info *b, const struct pmixsrv_layout *lo)
{
    const struct proto_launch *l = lo->l;
    struct pmixsrv_info app;
    struct sbuf argv;
    size_t i;

    sbuf_init(&argv);
    for (i = 0; i < l->argc; i++)
        sbuf_addf(&argv, "%s%s", i > 0 ? " " : "", l->argv[i]);
    pmixsrv_info_start(&app);
    pmixsrv_info_u32(&app, PMIX_APPNUM, 0);
    pmixsrv_info_u32(&app, PMIX_APP_SIZE, (uint32_t)l->world_size);
    pmixsrv_info_rank(&app, PMIX_APPLDR, 0);
    pmixsrv_info_add(&app, PMIX_WDIR, l->workdir != NULL ? l->workdir : "/",
        PMIX_STRING);
    pmixsrv_info_add(&app, PMIX_APP_ARGV, argv.buf, PMIX_STRING);
    pmixsrv_info_nest(b, PMIX_APP_INFO_ARRAY, &app);
    sbuf_release(&argv);
}

/* PMIX_PROC_DATA of every rank, remote ones included (PMIX_RANK first). */
static void
pmixsrv_info_procs(struct pmixsrv_info *b, const struct pmixsrv_layout *lo)
{
    struct pmixsrv_info pd;
    int r, k;

    for (r = 0; r < lo->l->world_size && b->rc == PMIX_SUCCESS; r++) {
        k = pmixsrv_rank_node(lo, r);
        pmixsrv_info_start(&pd);
        pmixsrv_info_rank(&pd, PMIX_RANK, (pmix_rank_t)r);
        pmixsrv_info_rank(&pd, PMIX_GLOBAL_RANK, (pmix_rank_t)r);
        pmixsrv_info_rank(&pd, PMIX_APP_RANK, (pmix_rank_t)r);
        pmixsrv_info_u32(&pd, PMIX_APPNUM, 0);
        pmixsrv_info_u16(&pd, PMIX_LOCAL_RANK,
            (uint16_t)(lo->rpn > 0 ? r % lo->rpn : 0));
        pmixsrv_info_u16(&pd, PMIX_NODE_RANK,
            (uint16_t)(lo->rpn > 0 ? r % lo->rpn : 0));
        pmixsrv_info_u32(&pd, PMIX_NODEID, (uint32_t)k);
        pmixsrv_info_add(&pd, PMIX_HOSTNAME, lo->names[k], PMIX_STRING);
        pmixsrv_info_nest(b, PMIX_PROC_DATA, &pd);
    }
}

/* Converts b's list into *info and releases it; returns the first
 * failure met while building it. */
static pmix_status_t
pmixsrv_info_finish(struct pmixsrv_info *b, pmix_data_array_t *info)
{
    memset(info, 0, sizeof(*info));
    if (b->rc == PMIX_SUCCESS)
        b->rc = PMIx_Info_list_convert(b->list, info);
    if (b->list != NULL)
        PMIx_Info_list_release(b->list);
    b->list = NULL;
    return b->rc;
}

static void
pmixsrv_info_job(struct pmixsrv_info *b, const char *ns,
    const struct pmixsrv_layout *lo)
{
    const struct proto_launch *l = lo->l;
    struct pmixsrv_info node;
    int k;

    pmixsrv_info_add(b, PMIX_JOBID, ns, PMIX_STRING);
    pmixsrv_info_u32(b, PMIX_UNIV_SIZE, (uint32_t)l->world_size);
    pmixsrv_info_u32(b, PMIX_JOB_SIZE, (uint32_t)l->world_size);
    pmixsrv_info_u32(b, PMIX_MAX_PROCS, (uint32_t)l->world_size);
    pmixsrv_info_u32(b, PMIX_NUM_NODES, (uint32_t)lo->nnodes);
    pmixsrv_info_u32(b, PMIX_JOB_NUM_APPS, 1);
    pmixsrv_info_maps(b, lo);
    pmixsrv_info_node(b, lo, l->node_rank);
    pmixsrv_info_app(b, lo);
    for (k = 0; k < lo->nnodes; k++) {
        pmixsrv_info_start(&node);
        pmixsrv_info_node(&node, lo, k);
        pmixsrv_info_nest(b, PMIX_NODE_INFO_ARRAY, &node);
    }
    pmixsrv_info_procs(b, lo);
}

pmix_status_t
pmixsrv_info_ns(const char *ns, const struct proto_launch *l, const char *host,
    pmix_data_array_t *info)
{
    struct pmixsrv_layout lo = { .l = l };
    struct pmixsrv_info b;
    pmix_status_t rc;
    int k;

    lo.nnodes = l->nnodes > l->node_rank ? l->nnodes : l->node_rank + 1;
    lo.rpn = l->ranks_per_node;
    lo.names = xcalloc((size_t)lo.nnodes, sizeof(*lo.names));
    for (k = 0; k < lo.nnodes; k++)
        lo.names[k] = k == l->node_rank  ? xstrdup(host)
                      : l->nodes != NULL ? xstrdup(l->nodes[k])
                                         : xasprintf("lockstep-node-%d", k);
    pmixsrv_info_start(&b);
    pmixsrv_info_job(&b, ns, &lo);
    rc = pmixsrv_info_finish(&b, info);
    for (k = 0; k < lo.nnodes; k++)
        free(lo.names[k]);
    free(lo.names);
    return rc;
}

pmix_status_t
pmixsrv_info_server(const char *dir, const char *nspace,
    pmix_data_array_t *info)
{
    struct pmixsrv_info b;
    bool no = false;

    pmixsrv_info_start(&b);
    pmixsrv_info_add(&b, PMIX_SERVER_TMPDIR, dir, PMIX_STRING);
    pmixsrv_info_add(&b, PMIX_SYSTEM_TMPDIR, dir, PMIX_STRING);
    pmixsrv_info_add(&b, PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    pmixsrv_info_add(&b, PMIX_SERVER_SYSTEM_SUPPORT, &no, PMIX_BOOL);
    pmixsrv_info_add(&b, PMIX_SERVER_NSPACE, nspace, PMIX_STRING);
    pmixsrv_info_rank(&b, PMIX_SERVER_RANK, 0);
    return pmixsrv_info_finish(&b, info);
}
