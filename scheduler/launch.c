/*
 * launch.c - place attempts; build each node's desired state
 *
 * Persist before acting: the attempt, its placements and the job's new
 * state are written to the iteration's transaction before the agents are
 * woken, and the long-poll answers carrying the launch are written only
 * after the commit (http.h).
 */
#include "scheduler/launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/directive.h"
#include "scheduler/event.h"

/* The job_placed event: where, and for a restart what it resumes from and
 * which nodes it kept. */
static cJSON *
placed_detail(const struct job *job, const struct attempt *a,
    struct node **nodes)
{
    cJSON *detail = cJSON_CreateObject();
    cJSON *names = cJSON_AddArrayToObject(detail, "nodes");

    jsonx_add_int(detail, "attempt", a->num);
    for (int k = 0; k < a->nnodes; k++)
        cJSON_AddItemToArray(names, cJSON_CreateString(nodes[k]->name));
    jsonx_add_str(detail, "master_addr", a->master_addr);
    jsonx_add_int(detail, "master_port", a->master_port);
    if (a->resume_from[0] != '\0') {
        jsonx_add_int(detail, "resume_step", a->resume_step);
        jsonx_add_str(detail, "resume_from", a->resume_from);
    }
    if (job->nreserved > 0) {
        cJSON *kept = cJSON_AddArrayToObject(detail, "kept");

        for (int k = 0; k < a->nnodes; k++) {
            for (size_t i = 0; i < job->nreserved; i++) {
                if (strcmp(job->reserved[i], nodes[k]->name) == 0) {
                    cJSON_AddItemToArray(kept,
                        cJSON_CreateString(nodes[k]->name));
                    break;
                }
            }
        }
    }
    return detail;
}

/* The attempt job would start now on nodes: resources, resume point, and
 * the generation that first carries each placement. */
static struct attempt *
attempt_build(struct schedd *sd, const struct job *job, struct node **nodes,
    const int *gpus, int port)
{
    const struct proto_job_spec *s = &job->spec;
    struct attempt *a = attempt_create(job->id, job->attempt + 1, s->nodes,
        s->ranks_per_node);

    a->start_ms = timeid_now_ms();
    free(a->master_addr);
    a->master_addr = xstrdup(nodes[0]->addr);
    a->master_port = port;
    /* Resume from the job's own highest complete checkpoint; never from
     * one that not every rank committed, nor one older than the job
     * (neither is in the registry). Without one, from what the job was
     * told to continue (--resume-from), attempt 1 and every later one. */
    if (job->ckpt_step >= 0) {
        char *path = job_ckpt_path(job, job->ckpt_step);

        attempt_set_resume(a, job->ckpt_step, path);
        free(path);
    } else if (s->resume_from != NULL && s->resume_from[0] != '\0') {
        attempt_set_resume(a, s->resume_step, s->resume_from);
    }
    for (int k = 0; k < s->nodes; k++) {
        struct placement *p = &a->placements[k];

        p->node_name = xstrdup(nodes[k]->name);
        p->node = nodes[k];
        p->ngpus = (size_t)s->gpus_per_node;
        p->gpus = xcalloc(p->ngpus + 1, sizeof(*p->gpus));
        if (p->ngpus)
            memcpy(p->gpus, gpus + (size_t)k * p->ngpus,
                p->ngpus * sizeof(*p->gpus));
        p->cpus = s->ranks_per_node * s->cpus_per_rank;
        p->memory_mb = s->memory_mb_per_node;
        /* An agent reporting this generation or a later one has seen
         * the placement. */
        nodes[k]->gen = schedd_next_gen(sd);
        p->gen = nodes[k]->gen;
    }
    return a;
}

int
launch_place(struct schedd *sd, struct job *job, struct node **nodes,
    const int *gpus, int port)
{
    struct event_job_change c = { 0 };
    struct attempt *a;
    int rc, erc;

    if (!job_transition_ok(job->state, PROTO_JOB_PLACED))
        return -EINVAL;
    a = attempt_build(sd, job, nodes, gpus, port);
    rc = schedd_db_check(sd, db_attempt_insert(sd->db, a));
    c.attempt = a;
    c.detail = placed_detail(job, a, nodes);
    a->job = job;
    erc = event_job(sd, job, PROTO_JOB_PLACED, &c);
    if (rc == 0)
        rc = erc;
    /* The model, then the agents (whose replies wait for the commit). */
    schedd_attempt_add(sd, a);
    for (int k = 0; k < a->nnodes; k++)
        schedd_node_wake(sd, nodes[k]);
    log_info("job=%lld attempt=%d placed on %d node(s) master=%s:%d%s",
        (long long)job->id, a->num, a->nnodes, a->master_addr, port,
        a->resume_from[0] != '\0' ? " (resuming)" : "");
    return rc;
}

/* ---- desired state ------------------------------------------------------ */

/* The ranks node rank p->node_rank runs, with their GPUs. */
static void
launch_ranks(const struct attempt *a, const struct placement *p,
    struct proto_launch *l)
{
    l->nranks = (size_t)a->ranks_per_node;
    l->ranks = xcalloc(l->nranks, sizeof(*l->ranks));
    for (int lr = 0; lr < a->ranks_per_node; lr++) {
        struct proto_launch_rank *rk = &l->ranks[lr];

        rk->rank = p->node_rank * a->ranks_per_node + lr;
        rk->local_rank = lr;
        rk->gpus = xcalloc(p->ngpus + 1, sizeof(*rk->gpus));
        rk->ngpus = attempt_rank_gpus(p, a->ranks_per_node, lr, rk->gpus);
    }
}

/* Whether node's agent may still start p's attempt: it has not reported
 * the generation that first carried the placement. Once it has, it
 * either holds the attempt or the placement is lost (status.c,
 * status_reconcile): it never starts it from a later desired state. */
static bool
launch_unseen(const struct node *node, const struct placement *p)
{
    return node->agent_gen < p->gen;
}

/* The attempt's node names by node rank as a JSON array, written at its
 * first use and kept: each node of a gang gets them once, and writing
 * them for each node (nodes x nodes strings made, printed and freed)
 * was about 40% of the scheduler's time placing a 3,000-node gang. */
static const char *
launch_nodes_json(struct attempt *a)
{
    if (a->nodes_json == NULL) {
        cJSON *names = cJSON_CreateArray();

        for (int k = 0; k < a->nnodes; k++)
            cJSON_AddItemToArray(names,
                cJSON_CreateString(a->placements[k].node_name));
        a->nodes_json = jsonx_print(names);
        cJSON_Delete(names);
    }
    return a->nodes_json;
}

static void
launch_fill(const struct node *node, const struct placement *p,
    struct proto_launch *l)
{
    struct attempt *a = p->attempt;
    const struct job *job = a->job;

    l->job = job->id;
    l->attempt = a->num;
    l->name = job->spec.name;
    l->user = job->user;
    l->argv = job->spec.argv;
    l->argc = job->spec.argc;
    l->env = job->spec.env;
    l->nenv = job->spec.nenv;
    l->workdir = job->spec.workdir;
    l->nnodes = a->nnodes;
    l->node_rank = p->node_rank;
    l->ranks_per_node = a->ranks_per_node;
    l->world_size = a->nnodes * a->ranks_per_node;
    l->master_addr = a->master_addr;
    l->master_port = a->master_port;
    l->checkpoint_dir = job->spec.checkpoint_dir;
    l->resume_from = a->resume_from;
    l->resume_step = a->resume_step;
    l->keep_checkpoints = job->spec.keep_checkpoints;
    l->gc_managed = proto_cadence_set(&job->spec.gc_every);
    l->max_restarts = job->spec.max_restarts;
    /* Node rank 0 scans the directory for the convention's COMPLETE
     * markers (and prunes beyond keep_checkpoints). */
    l->scan_checkpoints = p->node_rank == 0 &&
                          job->spec.checkpoint_dir[0] != '\0';
    directive_launch(a, p, l);
    launch_ranks(a, p, l);
    /* A one-node launch, which needs no names, stays as agents before
     * them knew it. The agent reads them only when it starts the
     * attempt (its PMIx server), so only the desired states it may
     * start it from carry them: re-sent to every node of a gang at each
     * of its generations, they made a gang's launch cost nodes x nodes
     * names. (Each of its nodes still gets them once: nodes x nodes
     * names on the wire, written once.) */
    if (a->nnodes < 2 || !launch_unseen(node, p))
        return;
    l->nodes_json = launch_nodes_json(a);
}

void
launch_work(const struct node *node, struct proto_work *w)
{
    memset(w, 0, sizeof(*w));
    w->gen = node->gen;
    w->jobs = xcalloc(node->nholds + 1, sizeof(*w->jobs));
    for (size_t i = 0; i < node->nholds; i++) {
        const struct placement *p = node->holds[i];

        if (proto_attempt_state_active(p->attempt->state) && p->attempt->job)
            launch_fill(node, p, &w->jobs[w->njobs++]);
    }
}

void
launch_work_release(struct proto_work *w)
{
    for (size_t i = 0; i < w->njobs; i++) {
        for (size_t r = 0; r < w->jobs[i].nranks; r++)
            free(w->jobs[i].ranks[r].gpus);
        free(w->jobs[i].ranks);
        free(w->jobs[i].directives);
    }
    free(w->jobs);
    memset(w, 0, sizeof(*w));
}
