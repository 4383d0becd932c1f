/*
 * proto.h - the messages exchanged by the CLI, the scheduler and the agents
 *
 * One struct per message, with _from_json (validates every field: type,
 * range, length; rejects unknown fields; requires "version": 1) and
 * _to_json (builds a new cJSON object; caller owns it and frees the root
 * with cJSON_Delete). docs/api.md is the reference for every field.
 *
 * Memory: every pointer inside a struct is owned by the struct and freed by
 * its _release function. _from_json fills a zeroed struct; on failure it
 * leaves nothing to free (it releases what it built) and sets err with a
 * message naming the field, e.g. "field 'nodes': must be between 1 and
 * 10000". _release accepts a zeroed struct and leaves it zeroed.
 */
#ifndef COMMON_PROTO_H
#define COMMON_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"

#define PROTO_VERSION 1

/* Limits shared by every validator (docs/api.md). */
#define PROTO_NAME_MAX 128
#define PROTO_ARGV_MAX 1024
#define PROTO_ARG_LEN_MAX 4096
#define PROTO_ENV_MAX 256
#define PROTO_ENV_VALUE_MAX 32768
#define PROTO_PATH_MAX 4096
#define PROTO_NODES_MAX 10000
#define PROTO_RANKS_PER_NODE_MAX 1024
#define PROTO_GPUS_MAX 1024
#define PROTO_CPUS_MAX 4096
#define PROTO_TAIL_MAX 4096
#define PROTO_LABELS_MAX 64
#define PROTO_NODE_NAME_MAX 64
#define PROTO_DUMP_MAX 16384
#define PROTO_STEPS_MAX 64 /* checkpoint steps listed per report */
#define PROTO_HANG_TIMEOUT_MAX (7 * 24 * 3600)
#define PROTO_CADENCE_S_MAX (7 * 24 * 3600)
#define PROTO_CADENCE_STEPS_MAX ((int64_t)1 << 40)

/* Defaults a job gets when its spec leaves them out (docs/api.md). */
#define PROTO_DEFAULT_MAX_RESTARTS 3
#define PROTO_DEFAULT_MAX_INFRA_RESTARTS 20
#define PROTO_DEFAULT_HANG_TIMEOUT_S 1800

/* A string-to-string map entry (env, labels). */
struct proto_kv {
    char *key;
    char *value;
};

/* ---- cadence: how often every rank acts at one step ------------------ */

/* Every `s` seconds or every `steps` steps; at most one is non-zero, and
 * both 0 means none (docs/cadence.md). */
struct proto_cadence {
    int64_t s;
    int64_t steps;
};

/* Parse a duration ("90s", "5m", "1h"; a bare number is seconds) or a
 * step count ("500steps", "500 steps", "1step"). "0" and "off" are no
 * cadence. The error quotes the text. */
int proto_cadence_parse(const char *text, struct proto_cadence *out,
    struct err *err);
/* "60s", "15m", "1h", "500 steps" or "off", into buf. */
const char *proto_cadence_format(const struct proto_cadence *c, char *buf,
    size_t len);
static inline bool
proto_cadence_set(const struct proto_cadence *c)
{
    return c->s > 0 || c->steps > 0;
}

/* ---- the rank environment ---------------------------------------------- */

/* Whether key is one of the variables lockstep sets for every rank
 * (docs/api.md "Rank environment": torchrun's, lockstep's own, PWD): a
 * job's env never overrides them, and the CLI never sends them. */
bool proto_rank_env_key(const char *key);

/* ---- job spec: POST /v1/jobs ---------------------------------------- */

struct proto_job_spec {
    char *name;  /* never NULL after from_json */
    char **argv; /* argc entries, NULL-terminated */
    size_t argc;
    int nodes;
    int ranks_per_node;
    int gpus_per_node;
    int cpus_per_rank;
    int64_t memory_mb_per_node;
    int priority;
    struct proto_kv *env;
    size_t nenv;
    char *workdir;                 /* never NULL after from_json ("/") */
    int max_restarts;              /* the job's own failures */
    int max_infra_restarts;        /* node lost, hang, node excluded */
    int hang_timeout_s;            /* 0: no hang watchdog */
    int keep_checkpoints;          /* 0: keep every complete checkpoint */
    char *checkpoint_dir;          /* never NULL after from_json ("") */
    struct proto_cadence gc_every; /* "gc_every_s"/"_steps" */
    struct proto_cadence checkpoint_every; /* "checkpoint_every_s"/... */
    /* Continue an earlier run (docs/fault-tolerance.md §Checkpoints):
     * "resume_from" (an absolute path, "" none) or "resume_from_job" (a
     * job id, 0 none), at most one of the two. The scheduler resolves a
     * job to its latest complete checkpoint at submit and stores the path
     * here; resume_step is the step (from the job's registry, or N for a
     * path ending in step-<N>; -1 unknown). resume_step is never read
     * from JSON. */
    char *resume_from; /* never NULL after from_json ("") */
    int64_t resume_from_job;
    int64_t resume_step;
    /* Accept it even when no set of registered nodes could hold it
     * (submit only: not stored). */
    bool wait_for_nodes;
};

/* Fill defaults (nodes 1, ranks 1, cpus 1, ...); pointers stay NULL. */
void proto_job_spec_init(struct proto_job_spec *spec);
int proto_job_spec_from_json(const cJSON *json, struct proto_job_spec *spec,
    struct err *err);
/* Includes "version". */
cJSON *proto_job_spec_to_json(const struct proto_job_spec *spec);
/* Checks ranges and strings of an already-built spec (the CLI uses it
 * before sending). from_json calls it too. */
int proto_job_spec_validate(const struct proto_job_spec *spec, struct err *err);
void proto_job_spec_release(struct proto_job_spec *spec);

/*
 * Many jobs in one request (POST /v1/jobs with "jobs"; proto_batch.c):
 *   {"version": 1, "jobs": [SPEC, ...], "common": {FIELDS}}
 * Each SPEC is a job spec without "version" (or with 1); "common"
 * (optional) holds spec fields every job gets unless it sets the field
 * itself, except "env", whose variables every job gets with its own added
 * on top (its value wins). 1..PROTO_BATCH_MAX jobs (a batch is handled in
 * one turn of the scheduler's loop: about 30-60 ms for 1000 jobs, which
 * bounds the lag it causes everyone else). Every spec is
 * validated as proto_job_spec_from_json does; the first error names its
 * index: "jobs[7]: field 'argv': required".
 */
#define PROTO_BATCH_MAX 1000

/* Whether json (an object) is a batch: it has "jobs". */
bool proto_job_batch_is(const cJSON *json);
/* The specs of a batch into *specs (*n of them; the caller releases each
 * and frees the array), or a negative errno with err set (nothing to
 * free). */
int proto_job_batch_from_json(const cJSON *json, struct proto_job_spec **specs,
    size_t *n, struct err *err);
/* The step N of a checkpoint path whose last component is "step-<N>" (N
 * decimal, no leading zeros, trailing slashes allowed), as the convention
 * names them; -1 for any other path. */
int64_t proto_ckpt_path_step(const char *path);

/* ---- states (proto_state.c) -------------------------------------------- */

/* A job's state (docs/api.md "Job lifecycle"); the names are uppercase. */
enum proto_job_state {
    PROTO_JOB_PENDING,
    PROTO_JOB_PLACED,
    PROTO_JOB_RUNNING,
    PROTO_JOB_RESTARTING,
    PROTO_JOB_SUCCEEDED,
    PROTO_JOB_FAILED,
    PROTO_JOB_CANCELLED,
};
#define PROTO_JOB_STATE_COUNT 7

/* One start of a job. */
enum proto_attempt_state {
    PROTO_ATTEMPT_STARTING,
    PROTO_ATTEMPT_RUNNING,
    PROTO_ATTEMPT_SUCCEEDED,
    PROTO_ATTEMPT_FAILED,
    PROTO_ATTEMPT_CANCELLED,
};
#define PROTO_ATTEMPT_STATE_COUNT 5

/* "PENDING", ... exactly as the API and the database spell them;
 * "UNKNOWN" out of range. _parse: 0, or -EINVAL for an unknown name. */
const char *proto_job_state_str(enum proto_job_state s);
int proto_job_state_parse(const char *s, enum proto_job_state *out);
/* SUCCEEDED, FAILED and CANCELLED are final. */
bool proto_job_state_finished(enum proto_job_state s);
/* PENDING or RESTARTING: waiting in the queue for a placement. */
bool proto_job_state_queued(enum proto_job_state s);

const char *proto_attempt_state_str(enum proto_attempt_state s);
int proto_attempt_state_parse(const char *s, enum proto_attempt_state *out);
/* STARTING or RUNNING. */
bool proto_attempt_state_active(enum proto_attempt_state s);

/* ---- directives: the scheduler's instructions to the ranks -------------- */

/* docs/architecture.md "Directives"; docs/cadence.md for gc and
 * checkpoint, which the rank's SDK carries out at a step. */
enum proto_directive_kind {
    PROTO_DIRECTIVE_DUMP,       /* stack dumps now (hang evidence) */
    PROTO_DIRECTIVE_GC,         /* a full garbage collection at the step */
    PROTO_DIRECTIVE_CHECKPOINT, /* a checkpoint of the step */
};
#define PROTO_DIRECTIVE_KIND_COUNT 3
#define PROTO_DIRECTIVES_MAX 64 /* per launch, and acks per rank */

/* Who carries a directive out. */
enum proto_directive_target {
    PROTO_TARGET_AGENT, /* the agent itself (a hung rank cannot) */
    PROTO_TARGET_RANK,  /* the rank, through its SDK */
};

const char *proto_directive_kind_str(enum proto_directive_kind k);
int proto_directive_kind_parse(const char *s, enum proto_directive_kind *out);
enum proto_directive_target proto_directive_target(enum proto_directive_kind k);

/* One directive in a launch. */
struct proto_directive {
    uint64_t seq; /* within the attempt, from 1 */
    enum proto_directive_kind kind;
    int64_t step; /* act at this step; -1: at once */
};

/* A rank carried a directive out (part of its status). */
struct proto_ack {
    uint64_t seq;
    int64_t step;        /* the step it acted at; -1: none */
    int64_t duration_ms; /* how long it took */
};

/* A timed section's figures over the SDK's step window (docs/cadence.md
 * "Sections"): the time a rank spent inside the section per step. */
#define PROTO_SECTIONS_MAX 16     /* per rank; the SDKs keep this many */
#define PROTO_SECTION_NAME_MAX 32 /* bytes, [A-Za-z0-9_.:-] */
struct proto_section {
    char name[PROTO_SECTION_NAME_MAX + 1];
    int64_t p50_us; /* median per step, microseconds */
    int64_t p99_us;
    int64_t n; /* steps measured (at most the SDK's window) */
};

/* Whether name is a valid section name (1..PROTO_SECTION_NAME_MAX bytes of
 * letters, digits, '_', '.', ':' and '-'). */
bool proto_section_name_valid(const char *name);

/* ---- rank status: part of the node report ----------------------------- */

enum proto_rank_state {
    PROTO_RANK_PENDING,
    PROTO_RANK_RUNNING,
    PROTO_RANK_EXITED,
    PROTO_RANK_LOST,
};

/* What a rank's progress was last measured by (the hang watchdog says
 * which one it used). */
enum proto_progress {
    PROTO_PROGRESS_NONE,   /* neither a step nor output yet */
    PROTO_PROGRESS_STEP,   /* the SDK reported a step */
    PROTO_PROGRESS_OUTPUT, /* stdout/stderr grew */
};

const char *proto_progress_str(enum proto_progress p);
int proto_progress_parse(const char *s, enum proto_progress *out);

const char *proto_rank_state_str(enum proto_rank_state s);
int proto_rank_state_parse(const char *s, enum proto_rank_state *out);
/* EXITED or LOST: the rank's end is known. */
bool proto_rank_state_final(enum proto_rank_state s);

struct proto_rank_status {
    int rank;
    enum proto_rank_state state;
    int pid;
    int64_t start_ms;
    int64_t end_ms;
    int exit_code;     /* valid when EXITED; -1 when signalled */
    int signal;        /* 0 unless killed by a signal */
    char *stderr_tail; /* may be NULL */
    bool fenced;       /* killed by its supervisor: lease expired */
    int64_t step;      /* last step the SDK reported; -1 none */
    int64_t idle_ms;   /* ms since the last progress (agent clock) */
    enum proto_progress progress;
    char *dump;          /* stack/proc evidence; may be NULL */
    int64_t *ckpt_steps; /* steps this rank committed (SDK) */
    size_t nckpt_steps;
    struct proto_ack *acks; /* directives carried out (pending ones) */
    size_t nacks;
    int64_t step_p50_us; /* the SDK's step time over its last window: */
    int64_t step_p99_us; /* median and p99, microseconds; 0: unknown */
    /* The SDK's timed sections (optional: none from an older SDK or
     * agent), at most PROTO_SECTIONS_MAX. */
    struct proto_section *sections;
    size_t nsections;
    /* EXITED without ever running: why it could not be started (its
     * working directory, its command, its user); NULL otherwise. */
    char *launch_error;
};

struct proto_job_status {
    int64_t job;
    int attempt;
    struct proto_rank_status *ranks;
    size_t nranks;
    /* Complete checkpoint steps found by the convention scan (node rank 0
     * only), newest last, at most PROTO_STEPS_MAX. */
    int64_t *checkpoints;
    size_t ncheckpoints;
};

/* ---- node health: check results, part of the node report -------------- */

/*
 * A check's verdict. A check that cannot decide is never PASS: UNKNOWN (it
 * ran but could not tell), TIMEOUT (it passed its deadline and was killed),
 * HUNG (it could not be killed: stuck in the kernel; never started again
 * while stuck), SKIPPED (not applicable here, e.g. GPU checks on a node
 * without GPUs).
 */
enum proto_check_status {
    PROTO_CHECK_PASS,
    PROTO_CHECK_WARN,
    PROTO_CHECK_FAIL,
    PROTO_CHECK_UNKNOWN,
    PROTO_CHECK_TIMEOUT,
    PROTO_CHECK_HUNG,
    PROTO_CHECK_SKIPPED,
};
#define PROTO_CHECK_STATUS_COUNT 7

#define PROTO_CHECK_NAME_MAX 64   /* "gpu", "disk", "kmsg", "site:ib-bw" */
#define PROTO_CHECK_CODE_MAX 128  /* stable: "gpu.ecc_uncorrectable" */
#define PROTO_CHECK_SCOPE_MAX 256 /* "node", "gpu:3", "mount:/data" */
#define PROTO_CHECK_EVIDENCE_MAX 2048
#define PROTO_CHECK_NUMBERS_MAX 32
#define PROTO_CHECK_RESULTS_MAX 1024 /* per report */

/* A named figure of a result ("temperature_c": 91). */
struct proto_check_number {
    char *name;
    double value;
};

/*
 * One result of one run of one check. A check may yield several results
 * per run (one per GPU, per mount): (check, code, scope) names a result.
 */
struct proto_check_result {
    char *check; /* the check that produced it */
    enum proto_check_status status;
    char *code;     /* stable identifier of what was found */
    char *scope;    /* what it is about; "node" by default */
    char *evidence; /* for people; "" when none */
    int64_t duration_ms;
    int64_t at_ms; /* wall clock when the run ended */
    uint64_t run;  /* the check's run counter (per agent process) */
    int64_t count; /* occurrences behind it (kmsg repeats); >= 1 */
    struct proto_check_number *numbers;
    size_t nnumbers;
};

/* A node's health as its agent last saw it: the latest results of every
 * check. Sent with each node report once the agent has any. */
struct proto_health {
    char *boot_id;  /* the kernel's boot id ("" when unknown) */
    bool full_pass; /* every configured check has finished at least once
                     * since the agent started */
    struct proto_check_result *results;
    size_t nresults;
};

const char *proto_check_status_str(enum proto_check_status s);
int proto_check_status_parse(const char *s, enum proto_check_status *out);

/*
 * One result. With `strict` false (a site check's stdout), only "status"
 * and "code" are required, "version" is not, and check/run/duration/at
 * are left as they are for the caller to fill; with `strict` true (inside
 * a node report) "check" is required too. Unknown fields are refused
 * either way.
 */
int proto_check_result_from_json(const cJSON *json, bool strict,
    struct proto_check_result *r, struct err *err);
cJSON *proto_check_result_to_json(const struct proto_check_result *r);
void proto_check_result_release(struct proto_check_result *r);
/* Deep copy of src into a zeroed dst. */
void proto_check_result_copy(struct proto_check_result *dst,
    const struct proto_check_result *src);

int proto_health_from_json(const cJSON *json, struct proto_health *h,
    struct err *err);
cJSON *proto_health_to_json(const struct proto_health *h);
void proto_health_release(struct proto_health *h);

/* ---- node report: POST /v1/agent/status ------------------------------- */

/* What a node offers: its agent's settings, carried by every report. */
struct proto_resources {
    int cpus;
    int64_t memory_mb;
    int *gpus;
    size_t ngpus;
    struct proto_kv *labels;
    size_t nlabels;
};

/* Frees the GPUs and labels and zeroes res. */
void proto_resources_release(struct proto_resources *res);

struct proto_node_report {
    char *node;
    bool reg; /* "register" */
    char *agent_id;
    char *addr;
    struct proto_resources res;
    uint64_t gen;
    struct proto_job_status *jobs;
    size_t njobs;
    struct proto_health *health; /* NULL: the agent sent none */
    /* its witness UDP port; 0: it answers none */
    int witness_port;
};

int proto_node_report_from_json(const cJSON *json,
    struct proto_node_report *rep, struct err *err);
cJSON *proto_node_report_to_json(const struct proto_node_report *rep);
void proto_node_report_release(struct proto_node_report *rep);

/* ---- the scheduler's reply to a node report ----------------------------- */

/* The lease the scheduler may grant supervisors (milliseconds). */
#define PROTO_LEASE_MIN_MS 100
#define PROTO_LEASE_MAX_MS 3600000
#define PROTO_HEARTBEAT_MIN_MS 100
#define PROTO_HEARTBEAT_MAX_MS 60000

/* A witness of the node (common/witness.h): its agent's address and
 * witness port (0: not known yet, it has not reported since the
 * scheduler started). */
#define PROTO_WITNESSES_MAX 5
struct proto_witness {
    char node[PROTO_NODE_NAME_MAX + 1];
    char addr[256];
    int port;
};

struct proto_status_reply {
    int64_t heartbeat_ms; /* the status interval to keep */
    uint64_t gen;         /* the node's desired-state generation */
    int64_t lease_ms;     /* every supervisor's lease, from the send */
    /* The status interval of this grant: what the agent's witness rule
     * counts with while this reply is its last success (0: the scheduler
     * sent none, an older one: the agent's own status interval). */
    int64_t lease_interval_ms;
    /* Renew the leases with a lease ping every ping_ms while supervisors
     * hold them (common/leaseping.h); 0: do not. */
    int64_t ping_ms;
    /* W(N); has_witnesses false: the scheduler sent none (an older one:
     * the agent keeps what it had) */
    bool has_witnesses;
    struct proto_witness witnesses[PROTO_WITNESSES_MAX];
    size_t nwitnesses;
};

/* Includes "version". */
cJSON *proto_status_reply_to_json(const struct proto_status_reply *r);
/* Unknown fields are tolerated (a newer scheduler may add some); gen is
 * required; an absent heartbeat_ms or lease_ms leaves r's value (the
 * caller's default) as it is; an absent lease_interval_ms or ping_ms is
 * 0. */
int proto_status_reply_from_json(const cJSON *json,
    struct proto_status_reply *r, struct err *err);

/* ---- launch and work: GET /v1/agent/work ------------------------------ */

struct proto_launch_rank {
    int rank;
    int local_rank;
    int *gpus;
    size_t ngpus;
};

struct proto_launch {
    int64_t job;
    int attempt;
    char *name;
    char *user;
    char **argv; /* argc entries, NULL-terminated */
    size_t argc;
    struct proto_kv *env;
    size_t nenv;
    char *workdir;
    int nnodes;
    int node_rank;
    int ranks_per_node;
    int world_size;
    char *master_addr;
    int master_port;
    struct proto_launch_rank *ranks;
    size_t nranks;
    char *checkpoint_dir;  /* never NULL after from_json */
    char *resume_from;     /* never NULL after from_json */
    int64_t resume_step;   /* -1 when none */
    int keep_checkpoints;  /* 0: keep all (node rank 0 prunes) */
    int max_restarts;      /* the job's (TORCHELASTIC_MAX_RESTARTS) */
    bool scan_checkpoints; /* this node reports complete checkpoints */
    bool gc_managed;       /* the job has a GC cadence: the SDK collects */
    struct proto_directive *directives; /* pending for this node's ranks */
    size_t ndirectives;
    /* The attempt's node names by node rank (nnodes entries, NULL-
     * terminated) for the PMIx server's node map and cross-node
     * collectives; NULL when the scheduler sent none (older ones). */
    char **nodes;
    size_t nnodes_named;
    /* The same names already written as a JSON array, which
     * proto_launch_to_json then writes as it is: the scheduler writes it
     * once per attempt, where every node of a gang carrying the names
     * made nodes x nodes strings. Borrowed; from_json never sets it. */
    const char *nodes_json;
};

int proto_launch_from_json(const cJSON *json, struct proto_launch *l,
    struct err *err);
/* Without "version" (it is embedded in the work message). */
cJSON *proto_launch_to_json(const struct proto_launch *l);
void proto_launch_release(struct proto_launch *l);

struct proto_work {
    uint64_t gen;
    struct proto_launch *jobs;
    size_t njobs;
};

int proto_work_from_json(const cJSON *json, struct proto_work *w,
    struct err *err);
cJSON *proto_work_to_json(const struct proto_work *w);
void proto_work_release(struct proto_work *w);

/* ---- collectives: PMIx fences relayed through the scheduler ------------ */

/* docs/api.md POST /v1/agent/collective. The collective's timeout when the
 * ranks gave none (PMIX_TIMEOUT), and the most one may ask. */
#define PROTO_COLL_TIMEOUT_MS (300 * 1000)
#define PROTO_COLL_TIMEOUT_MAX_MS (24 * 3600 * 1000)
#define PROTO_COLL_ID_MAX 128
#define PROTO_COLL_DATA_MAX (8 * 1024 * 1024) /* decoded bytes */

/* One node's contribution to a collective of (job, attempt). */
struct proto_coll_req {
    int64_t job;
    int attempt;
    char *id;     /* the same on every node: participant signature + count */
    char *node;   /* the contributor */
    char **nodes; /* the participants, by node rank; NULL-terminated */
    size_t nnodes;
    char *data; /* decoded blob (NUL-terminated past len) */
    size_t len;
    int64_t timeout_ms; /* 1..PROTO_COLL_TIMEOUT_MAX_MS */
};

int proto_coll_req_from_json(const cJSON *json, struct proto_coll_req *c,
    struct err *err);
cJSON *proto_coll_req_to_json(const struct proto_coll_req *c);
void proto_coll_req_release(struct proto_coll_req *c);

/* ---- direct modex: a rank's PMIx data fetched from its node ------------ */

/* docs/api.md POST /v1/agent/modex: node asks owner (the node of rank)
 * for the data of rank of (job, attempt); the timeout defaults to the
 * collectives'. */
struct proto_modex_req {
    int64_t job;
    int attempt;
    char *node;  /* the requester */
    char *owner; /* the node that hosts rank */
    int64_t rank;
    int64_t timeout_ms; /* 1..PROTO_COLL_TIMEOUT_MAX_MS */
};

int proto_modex_req_from_json(const cJSON *json, struct proto_modex_req *m,
    struct err *err);
cJSON *proto_modex_req_to_json(const struct proto_modex_req *m);
void proto_modex_req_release(struct proto_modex_req *m);

/* docs/api.md POST /v1/agent/modex/reply: the owner node's answer to
 * request id: the rank's data, or error (then data is empty). */
struct proto_modex_reply {
    int64_t id;
    char *node;
    char *data; /* decoded blob (NUL-terminated past len) */
    size_t len;
    char *error; /* NULL: the data came */
};

int proto_modex_reply_from_json(const cJSON *json, struct proto_modex_reply *m,
    struct err *err);
cJSON *proto_modex_reply_to_json(const struct proto_modex_reply *m);
void proto_modex_reply_release(struct proto_modex_reply *m);

/* ---- small shared helpers --------------------------------------------- */

/* Name rules: job names [A-Za-z0-9._-]{1,128}; node names
 * [A-Za-z0-9._-]{1,64}; env keys [A-Za-z_][A-Za-z0-9_]*. */
bool proto_valid_name(const char *s, size_t max);
bool proto_valid_env_key(const char *s);

/* Parse "0-3,6,8-9" (GPU ids) into a sorted, de-duplicated array (caller
 * frees). Empty string → 0 ids. Returns 0 or -EINVAL with err set. */
int proto_parse_id_list(const char *s, int **out, size_t *n, struct err *err);

/* "K=V" → kv (copies). -EINVAL with err naming the entry when no '='. */
int proto_kv_parse(const char *s, struct proto_kv *kv, struct err *err);
void proto_kv_array_free(struct proto_kv *kv, size_t n);
/* The value of key among the n kv; NULL when absent. */
const char *proto_kv_value(const struct proto_kv *kv, size_t n,
    const char *key);
/* Add kv as the object `key` of obj (env, labels). */
void proto_kv_to_json(cJSON *obj, const char *key, const struct proto_kv *kv,
    size_t n);

#endif
