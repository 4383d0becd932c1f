/*
 * repl.c - a replicated scheduler on libraft (repl.h)
 *
 * libraft 0.15 with its libuv I/O (raft_uv: the log, the snapshots and
 * the term/vote metadata under state_dir/raft) and TCP transport
 * (raft_uv_tcp), both on the scheduler's own loop.
 *
 * An entry is a header and a changeset:
 *
 *   0  "LSR1"       4 bytes
 *   4  kind         u8, 1: a transaction's changes, 2: rank output,
 *                   3: a seed (3 bytes zero)
 *   8  incarnation  u64, random per process: whose entry it is
 *   16 seq          u64, the proposal's number in that incarnation
 *   24 length       u64, of the payload
 *   32 payload      zero-padded to a multiple of 8: the changeset
 *                   (db_txn_changes), or for rank output a job (u64), an
 *                   attempt and a rank (u32 each, in one u64, the rank
 *                   high), the stream (u8, 1: stderr; 7 bytes zero), an
 *                   offset (u64), then the bytes the leader stored there
 *                   (logstore.h); for a seed, a database image
 *                   (db_seed_image)
 *
 * all little-endian. The padding is libraft's need, not ours: it sends
 * a batch of entries back to back but decodes each at an 8-byte
 * boundary, so an entry of another length shifts every later one of
 * the batch. The state machine applies an entry of another
 * incarnation with db_changes_apply; one of its own incarnation is in
 * its database since it was proposed. That holds because every process
 * that stops leading re-executes (a new incarnation whose database is
 * rebuilt): an incarnation's entries are only ever applied by itself
 * while it leads.
 *
 * A seed (lockstepd --seed-from) is the first entry after the bootstrap
 * configuration, proposed by the replica that bootstrapped the set once
 * it is elected and before it serves: every replica, its proposer
 * included, replaces its database by the image when it applies it, so
 * each starts from the seed and rebuilds it from the log (or from a
 * snapshot taken since) at every start, as any other state.
 *
 * The snapshot is the database image. A leader's database runs ahead of
 * what is committed while its proposals are in flight (and holds the
 * iteration's open transaction): it refuses to snapshot then (RAFT_BUSY,
 * libraft tries again after the next entries are applied).
 *
 * Roles are watched from a check handle (every loop turn; libraft's own
 * tick timer turns the loop at least every heartbeat): libraft 0.15 has
 * no callback for a change of state.
 */
#include "scheduler/repl.h"
#include "scheduler/repl_int.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/config.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/schedd.h"

#define REPL_MAGIC "LSR1"
#define REPL_HDR 32
#define REPL_KIND_CHANGES 1
#define REPL_KIND_LOG 2
#define REPL_KIND_SEED 3
#define REPL_LOG_HDR 32

/* ---- configuration ------------------------------------------------------ */

int
repl_parse_peers(const char *list, struct repl_opts *o, struct err *err)
{
    const char *p = list;

    o->npeers = 0;
    while (*p) {
        struct repl_peer *peer;
        char item[160], *at, *end;
        size_t n;
        unsigned long long id;

        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        n = strcspn(p, ", \t");
        if (n == 0)
            break;
        if (n >= sizeof(item))
            return err_set(err, -EINVAL, "replicas: '%.*s' is too long", (int)n,
                p);
        memcpy(item, p, n);
        item[n] = '\0';
        p += n;
        at = strchr(item, '@');
        errno = 0;
        id = at ? strtoull(item, &end, 10) : 0;
        if (at == NULL || errno != 0 || end != at || id == 0 || id > 65535 ||
            strchr(at + 1, ':') == NULL || at[1] == ':')
            return err_set(err, -EINVAL,
                "replicas: '%s' is not of the form ID@HOST:PORT (ID from "
                "1 to 65535)",
                item);
        if (o->npeers == REPL_MAX_PEERS)
            return err_set(err, -EINVAL, "replicas: more than %d",
                REPL_MAX_PEERS);
        for (size_t i = 0; i < o->npeers; i++) {
            if (o->peers[i].id == id ||
                strcmp(o->peers[i].address, at + 1) == 0)
                return err_set(err, -EINVAL,
                    "replicas: '%s' repeats an id or an address", item);
        }
        peer = &o->peers[o->npeers++];
        peer->id = id;
        snprintf(peer->address, sizeof(peer->address), "%s", at + 1);
    }
    return 0;
}

/* host:port with a non-empty host and a port from 1 to 65535. */
static bool
repl_hostport_ok(const char *s)
{
    const char *colon = strrchr(s, ':');
    char *end = NULL;
    long port;

    if (colon == NULL || colon == s)
        return false;
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    return errno == 0 && end != colon + 1 && *end == '\0' && port > 0 &&
           port <= 65535;
}

int
repl_conf(const struct config *cfg, const char *listen_host, int lease_ms,
    int node_timeout_ms, struct repl_opts *o, struct err *err)
{
    const char *addr = config_str(cfg, "replica_address");
    const char *list = config_str(cfg, "replicas");
    const char *url = config_str(cfg, "replica_url");
    const char *bind = config_str(cfg, "replica_bind_address");
    int et, rc;

    o->id = (uint64_t)config_int(cfg, "replica_id");
    if (o->id == 0) {
        if (addr[0] || list[0] || url[0] || bind[0])
            return err_set(err, -EINVAL,
                "replica_address, replica_bind_address, replicas and "
                "replica_url need replica_id (0 is a single scheduler)");
        return 0;
    }
    if (addr[0] == '\0')
        return err_set(err, -EINVAL,
            "replica_id is %" PRIu64 ": replica_address must name this "
            "replica's Raft host:port",
            o->id);
    if (!repl_hostport_ok(addr))
        return err_set(err, -EINVAL,
            "replica_address: '%s' is not of the form host:port (a port "
            "above 0)",
            addr);
    if (bind[0] && !repl_hostport_ok(bind))
        return err_set(err, -EINVAL,
            "replica_bind_address: '%s' is not of the form host:port (a "
            "port above 0)",
            bind);
    if ((rc = repl_parse_peers(list, o, err)) < 0)
        return rc;
    for (size_t i = 0; i < o->npeers; i++) {
        if (o->peers[i].id == o->id && strcmp(o->peers[i].address, addr) != 0)
            return err_set(err, -EINVAL,
                "replicas names replica %" PRIu64 " at '%s' but "
                "replica_address is '%s'",
                o->id, o->peers[i].address, addr);
    }
    if (url[0] && strncmp(url, "http://", 7) != 0 &&
        strncmp(url, "https://", 8) != 0)
        return err_set(err, -EINVAL,
            "replica_url: '%s' is not an http:// or https:// URL", url);
    if (url[0] == '\0' &&
        (listen_host[0] == '\0' || strcmp(listen_host, "0.0.0.0") == 0 ||
            strcmp(listen_host, "::") == 0))
        return err_set(err, -EINVAL,
            "replica_url is needed: clients are sent to the leader by URL, "
            "and listen ('%s') names no address they could use",
            listen_host);
    et = (int)config_int(cfg, "replica_election_timeout_ms");
    /* A leader cut off from its peers answers its agents until its lease
     * runs out and steps down within two election timeouts of last
     * hearing a majority; a new leader replaces nothing before
     * node_timeout_ms after it starts (docs/fault-tolerance.md "Replicas
     * and fencing"): a margin on top of the lease. */
    if (2 * et + lease_ms >= node_timeout_ms)
        return err_set(err, -EINVAL,
            "2 x replica_election_timeout_ms (%d) + lease_ms (%d) must be "
            "below node_timeout_ms (%d): ranks that a deposed leader kept "
            "alive must be dead before a new leader may replace them",
            2 * et, lease_ms, node_timeout_ms);
    o->address = addr;
    o->bind_address = bind;
    o->url = url;
    o->election_ms = et;
    o->snapshot_entries = (unsigned)config_int(cfg, "replica_snapshot_entries");
    return 1;
}

/* ---- re-execution ------------------------------------------------------- */

/* Crash-only: this process stops leading (or its state machine failed)
 * and starts again as a follower, its database rebuilt from the
 * snapshot and the log. Nothing to clean up: every descriptor is closed
 * by the exec (the listening sockets, the database, the lock, the Raft
 * files), exactly as after a kill -9. */
static void
repl_reexec(struct repl *r, const char *why)
{
    log_notice("replica=%" PRIu64 " %s: restarting as a follower", r->id, why);
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        log_warn("close_range: %s", strerror(errno));
    execv("/proc/self/exe", r->argv);
    fatal("cannot re-execute lockstepd");
}

/* ---- the state machine -------------------------------------------------- */

static uint64_t
rd64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void
wr64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void
repl_break(struct repl *r, const char *why)
{
    if (!r->broken)
        log_error("replica=%" PRIu64 " state machine failed: %s", r->id, why);
    r->broken = true;
    r->broken_why = "its state machine failed";
}

/* Rank output the leader stored: store it here too. Written at its
 * offset, so applying it again (a replica rebuilding its state from the
 * log) changes nothing; refused when this replica lacks what comes
 * before it (it caught up from a snapshot, which holds no rank output):
 * an agent still running that attempt ships it all again to a leader
 * that lacks it (agent/logship.c), output of an attempt that ended
 * stays short here. A write that fails costs this output only. Written
 * off the loop, in order with every other write (schedd_log_apply). */
static void
repl_apply_log(struct repl *r, const unsigned char *p, size_t len)
{
    struct schedd_log_chunk c = {
        .job = (int64_t)rd64(p),
        .attempt = (int)(uint32_t)(rd64(p + 8) & 0xffffffffu),
        .rank = (int)(uint32_t)(rd64(p + 8) >> 32),
        .err_stream = p[16] == 1,
        .offset = (int64_t)rd64(p + 24),
        .data = p + REPL_LOG_HDR,
        .len = len - REPL_LOG_HDR,
    };

    schedd_log_apply(r->sd, &c);
}

/* The seed: the database becomes the image, on every replica (its
 * proposer's too: it loads the seed only when the entry is committed,
 * before it serves). */
static int
repl_apply_seed(struct repl *r, const unsigned char *p, size_t len)
{
    struct err err;

    err_clear(&err);
    if (r->serving) {
        repl_break(r, "a serving leader got a seed");
        return 0;
    }
    if (db_image_load(r->sd->db, p, len, &err) < 0) {
        repl_break(r, err.msg);
        return 0;
    }
    log_notice("replica=%" PRIu64 " state replaced by the seed: %zu bytes",
        r->id, len);
    return 0;
}

static int
repl_fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
    void **result)
{
    struct repl *r = fsm->data;
    const unsigned char *p = buf->base;
    struct err err;

    *result = NULL;
    if (r->broken)
        return 0;
    if (buf->len < REPL_HDR || memcmp(p, REPL_MAGIC, 4) != 0 ||
        p[4] < REPL_KIND_CHANGES || p[4] > REPL_KIND_SEED ||
        rd64(p + 24) > buf->len - REPL_HDR ||
        (p[4] == REPL_KIND_LOG && rd64(p + 24) < REPL_LOG_HDR)) {
        repl_break(r, "an entry of an unknown format");
        return 0;
    }
    r->applied_any = true;
    if (p[4] == REPL_KIND_SEED)
        return repl_apply_seed(r, p + REPL_HDR, (size_t)rd64(p + 24));
    if (rd64(p + 8) == r->incarnation)
        return 0; /* ours: in our database since we proposed it */
    if (r->serving) {
        repl_break(r, "a serving leader got another replica's entry");
        return 0;
    }
    if (p[4] == REPL_KIND_LOG) {
        repl_apply_log(r, p + REPL_HDR, (size_t)rd64(p + 24));
        return 0;
    }
    err_clear(&err);
    if (db_changes_apply(r->sd->db, p + REPL_HDR, (size_t)rd64(p + 24), &err) <
        0)
        repl_break(r, err.msg);
    return 0;
}

static int
repl_fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned *n_bufs)
{
    struct repl *r = fsm->data;
    void *img = NULL;
    size_t len = 0;

    if (r->broken || db_txn_is_open(r->sd->db) || r->proposed != r->committed)
        return RAFT_BUSY;
    if (db_image_save(r->sd->db, &img, &len) < 0)
        return RAFT_BUSY;
    *bufs = raft_malloc(sizeof(**bufs));
    (*bufs)[0].base = raft_malloc(len);
    if (*bufs == NULL || (*bufs)[0].base == NULL)
        fatalx("out of memory");
    memcpy((*bufs)[0].base, img, len);
    (*bufs)[0].len = len;
    *n_bufs = 1;
    free(img);
    log_info("replica=%" PRIu64 " snapshot taken: %zu bytes, applied=%llu",
        r->id, len, raft_last_applied(&r->raft));
    return 0;
}

static int
repl_fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct repl *r = fsm->data;
    struct err err;
    int rc;

    err_clear(&err);
    if (r->serving) {
        repl_break(r, "a serving leader was sent a snapshot");
        return RAFT_BUSY;
    }
    r->applied_any = true;
    rc = db_image_load(r->sd->db, buf->base, buf->len, &err);
    if (rc < 0) {
        repl_break(r, err.msg);
        return RAFT_IOERR;
    }
    log_info("replica=%" PRIu64 " state restored from a snapshot: %zu bytes",
        r->id, buf->len);
    raft_free(buf->base);
    return 0;
}

/* ---- proposals (the replicate hooks) ------------------------------------ */

static void
repl_applied_cb(struct raft_apply *req, int status, void *result)
{
    struct repl_prop *prop = req->data;
    struct repl *r = prop->r;

    (void)result;
    if (status == 0) {
        r->committed = prop->seq;
        if (prop->proposed_ms > r->proof_ms)
            r->proof_ms = prop->proposed_ms;
        schedd_committed(r->sd, prop->seq, 0);
    } else if (status == RAFT_SHUTDOWN) {
        schedd_committed(r->sd, prop->seq, -ECANCELED);
    } else if (!r->broken) {
        /* The entry may or may not survive under the next leader; what
         * is certain is that this replica no longer leads. */
        log_warn("replica=%" PRIu64 " entry seq=%" PRIu64 " failed: %s", r->id,
            prop->seq, raft_strerror(status));
        r->broken = true;
        r->broken_why = "it lost the lead";
        schedd_committed(r->sd, prop->seq, -EIO);
    }
    free(prop);
}

/* Propose an entry of kind whose payload is a (alen bytes) then b (blen
 * bytes). 0, or -EIO when libraft refuses it (this replica then
 * re-executes: its database may hold what no other replica will). */
static int
repl_propose(struct repl *r, int kind, const void *a, size_t alen,
    const void *b, size_t blen)
{
    struct repl_prop *prop;
    struct raft_buffer buf;
    unsigned char *p;
    int rc;

    if (!r->serving || r->broken) {
        repl_break(r, "a write while not serving");
        return -EROFS;
    }
    buf.len = (REPL_HDR + alen + blen + 7) & ~(size_t)7;
    buf.base = raft_calloc(1, buf.len);
    if (buf.base == NULL)
        fatalx("out of memory");
    p = buf.base;
    memcpy(p, REPL_MAGIC, 4);
    p[4] = (unsigned char)kind;
    wr64(p + 8, r->incarnation);
    prop = xcalloc(1, sizeof(*prop));
    prop->r = r;
    prop->seq = ++r->proposed;
    prop->proposed_ms = uv_now(r->sd->loop);
    prop->req.data = prop;
    wr64(p + 16, prop->seq);
    wr64(p + 24, alen + blen);
    memcpy(p + REPL_HDR, a, alen);
    if (blen > 0)
        memcpy(p + REPL_HDR + alen, b, blen);
    rc = raft_apply(&r->raft, &prop->req, &buf, 1, repl_applied_cb);
    if (rc != 0) {
        /* Committed here and proposed nowhere: only a restart undoes it
         * (the buffer is libraft's or lost; this process ends soon). */
        log_warn("replica=%" PRIu64 " cannot propose: %s", r->id,
            raft_strerror(rc));
        free(prop);
        r->broken = true;
        r->broken_why = "it cannot propose";
        return -EIO;
    }
    return 0;
}

static int
repl_replicate_hook(struct schedd *sd, void *data, size_t len, void *arg)
{
    int rc = repl_propose(arg, REPL_KIND_CHANGES, data, len, NULL, 0);

    (void)sd;
    free(data);
    return rc;
}

static int
repl_log_hook(struct schedd *sd, const struct schedd_log_chunk *c, void *arg)
{
    unsigned char h[REPL_LOG_HDR] = { 0 };

    (void)sd;
    wr64(h, (uint64_t)c->job);
    wr64(h + 8,
        (uint64_t)(uint32_t)c->attempt | (uint64_t)(uint32_t)c->rank << 32);
    h[16] = c->err_stream ? 1 : 0;
    wr64(h + 24, (uint64_t)c->offset);
    return repl_propose(arg, REPL_KIND_LOG, h, sizeof(h), c->data, c->len);
}

static void
repl_lease_cb(struct raft_barrier *req, int status)
{
    struct repl_prop *prop = container_of(req, struct repl_prop, barrier);

    repl_applied_cb(&prop->req, status, NULL);
}

/*
 * What replies written now wait for. After writes: the latest entry
 * (they may show what it holds). Otherwise a reply shows only committed
 * state, but this replica may have been deposed without knowing it yet
 * (cut off from the others, it steps down only after an election
 * timeout): it answers only while a majority followed it less than half
 * an election timeout ago. A majority that heard from the leader at t
 * refuses every other candidate until t + one election timeout (libraft
 * grants no vote while it has a leader), so no other leader can have
 * acknowledged anything before then. When that proof is older, a
 * barrier renews it and the replies wait for it; a leader cut off never
 * gets it, and so acknowledges nothing after half an election timeout.
 */
static uint64_t
repl_wait_hook(struct schedd *sd, void *arg)
{
    struct repl *r = arg;
    struct repl_prop *prop;
    uint64_t now = uv_now(sd->loop);
    int rc;

    /* Once broken, nothing will release replies: they wait for the
     * re-execution to drop their connections (and tickets must not go
     * back down). */
    if (r->broken)
        return UINT64_MAX;
    if (r->proposed != r->committed)
        return r->proposed;
    if (now - r->proof_ms < (uint64_t)r->election_ms / 2 || !r->serving)
        return 0;
    prop = xcalloc(1, sizeof(*prop));
    prop->r = r;
    prop->seq = r->proposed + 1;
    prop->proposed_ms = now;
    prop->req.data = prop;
    rc = raft_barrier(&r->raft, &prop->barrier, repl_lease_cb);
    if (rc != 0) {
        log_warn("replica=%" PRIu64 " cannot renew its lease: %s", r->id,
            raft_strerror(rc));
        free(prop);
        r->broken = true;
        r->broken_why = "it cannot renew its lease";
        /* Nothing committed will release these replies: the re-exec
         * drops their connections. */
        return UINT64_MAX;
    }
    return ++r->proposed;
}

/* ---- roles
 * -------------------------------------------------------------------- */

/* Every entry before the barrier is applied: load the model, record this
 * replica's URL, start the services. */
static void
repl_barrier_cb(struct raft_barrier *req, int status)
{
    struct repl *r = container_of(req, struct repl, barrier);
    struct err err;

    r->promoting = false;
    if (status != 0 || raft_state(&r->raft) != RAFT_LEADER || r->broken)
        return;
    r->proof_ms = r->promote_ms;
    err_clear(&err);
    if (schedd_reload(r->sd, &err) < 0) {
        repl_break(r, err.msg);
        return;
    }
    r->serving = true;
    if (schedd_db_check(r->sd, db_replica_set(r->sd->db, r->id, r->address,
                                   r->url ? r->url : "", timeid_now_ms())) <
        0) {
        repl_break(r, "cannot record this replica's URL");
        return;
    }
    if (r->promote(r->sd, r->promote_arg, &err) < 0) {
        repl_break(r, err.msg);
        return;
    }
    log_notice("replica=%" PRIu64 " leads: term=%llu applied=%llu url=%s",
        r->id, r->raft.current_term, raft_last_applied(&r->raft),
        r->url ? r->url : "-");
}

static void
repl_seed_cb(struct raft_apply *req, int status, void *result)
{
    struct repl *r = container_of(req, struct repl, seed_req);

    (void)result;
    if (status == RAFT_SHUTDOWN) {
        log_warn("replica=%" PRIu64 " stopped before its seed was committed: "
                 "stop every replica, remove their state directories and "
                 "seed again (docs/operations.md \"Replicas\")",
            r->id);
        return;
    }
    if (status != 0)
        fatalx("replica=%" PRIu64 " the seed entry failed (%s) and may or "
               "may not be committed: stop every replica, remove their "
               "state directories and seed again (docs/operations.md "
               "\"Replicas\")",
            r->id, raft_strerror(status));
    log_notice("replica=%" PRIu64 " seeded the replica set from '%s' "
               "(%zu bytes, committed)",
        r->id, r->seed_path, r->seed_len);
    free(r->seed);
    r->seed = NULL;
}

/* Elected with a seed: propose it, first of all (the barrier that comes
 * next waits for it to be applied). A log that changed the database
 * since the start means another leader wrote to this replica set: the
 * seed would overwrite its state, which is refused. */
static void
repl_propose_seed(struct repl *r)
{
    struct raft_buffer buf;
    unsigned char *p;
    int rc;

    if (r->applied_any)
        fatalx("replica=%" PRIu64 " --seed-from '%s' refused: the replica set "
               "already has state (another replica led it and wrote to it); "
               "a seed never overwrites a replica set's state",
            r->id, r->seed_path);
    buf.len = (REPL_HDR + r->seed_len + 7) & ~(size_t)7;
    buf.base = raft_calloc(1, buf.len);
    if (buf.base == NULL)
        fatalx("out of memory");
    p = buf.base;
    memcpy(p, REPL_MAGIC, 4);
    p[4] = REPL_KIND_SEED;
    wr64(p + 8, r->incarnation);
    wr64(p + 24, r->seed_len);
    memcpy(p + REPL_HDR, r->seed, r->seed_len);
    r->seed_req.data = r;
    rc = raft_apply(&r->raft, &r->seed_req, &buf, 1, repl_seed_cb);
    if (rc != 0)
        fatalx("replica=%" PRIu64 " cannot propose the seed: %s", r->id,
            raft_strerror(rc));
    r->seed_sent = true;
    log_notice("replica=%" PRIu64 " proposed the seed '%s': %zu bytes", r->id,
        r->seed_path, r->seed_len);
}

/* A standby made a voter (or not: the watch tries again). */
static void
repl_widen_cb(struct raft_change *req, int status)
{
    struct repl *r = container_of(req, struct repl, widen);

    r->promoting = false;
    if (status == 0)
        log_notice("replica=%" PRIu64 " replica %llu votes now", r->id,
            (unsigned long long)r->widen_id);
    else if (!r->widen_warned)
        log_warn("replica=%" PRIu64 " cannot make replica %llu a voter yet: "
                 "%s; trying again",
            r->id, (unsigned long long)r->widen_id, raft_strerror(status));
    r->widen_warned = r->widen_warned || status != 0;
}

/*
 * The next step of an elected replica towards serving: the seed first
 * (when it has one), then every standby made a voter (a seeded set is
 * bootstrapped with the other replicas as standbys, so that nothing but
 * the seeding replica can lead it before it holds the seed: see
 * repl_bootstrap), one at a time, libraft catching each up first; then
 * the barrier. A set of voters that is not yet the whole list never
 * serves: what it acknowledged would have a quorum of fewer replicas.
 */
static void
repl_promote_step(struct repl *r)
{
    const struct raft_configuration *c = &r->raft.configuration;
    int rc;

    if (r->seed && !r->seed_sent)
        repl_propose_seed(r);
    r->promoting = true;
    for (unsigned i = 0; i < c->n; i++) {
        if (c->servers[i].role != RAFT_STANDBY)
            continue;
        r->widen_id = c->servers[i].id;
        rc = raft_assign(&r->raft, &r->widen, r->widen_id, RAFT_VOTER,
            repl_widen_cb);
        if (rc != 0) {
            r->promoting = false;
            if (!r->widen_warned)
                log_warn("replica=%" PRIu64 " cannot make replica %llu a "
                         "voter yet: %s; trying again",
                    r->id, (unsigned long long)r->widen_id, raft_strerror(rc));
            r->widen_warned = true;
        }
        return;
    }
    r->promote_ms = uv_now(r->sd->loop);
    rc = raft_barrier(&r->raft, &r->barrier, repl_barrier_cb);
    if (rc != 0) {
        r->promoting = false;
        log_warn("replica=%" PRIu64 " cannot append a barrier: %s", r->id,
            raft_strerror(rc));
    }
}

static void
repl_watch_cb(uv_check_t *h)
{
    struct repl *r = container_of(h, struct repl, watch);
    int state = raft_state(&r->raft);

    if (r->broken)
        repl_reexec(r, r->broken_why ? r->broken_why : "it failed");
    if (r->serving && state != RAFT_LEADER)
        repl_reexec(r, "it no longer leads");
    if (!r->serving && !r->promoting && state == RAFT_LEADER) {
        if (r->elected_term != r->raft.current_term)
            log_info("replica=%" PRIu64 " elected: term=%llu; catching up",
                r->id, r->raft.current_term);
        r->elected_term = r->raft.current_term;
        repl_promote_step(r);
    }
}

/* ---- create / start / close
 * --------------------------------------------------- */

static int
repl_bootstrap(struct repl *r, struct err *err)
{
    struct raft_configuration conf;
    bool listed = false;
    int rc = 0;

    for (size_t i = 0; i < r->npeers; i++)
        listed = listed || r->peers[i].id == r->id;
    if (!listed)
        return 0; /* joins: an operator adds it (raft_add) */
    /* With a seed, the others are standbys until it is committed (only
     * this replica can lead a set that lacks it; repl_promote_step). */
    raft_configuration_init(&conf);
    for (size_t i = 0; rc == 0 && i < r->npeers; i++)
        rc = raft_configuration_add(&conf, r->peers[i].id, r->peers[i].address,
            r->seed == NULL || r->peers[i].id == r->id ? RAFT_VOTER
                                                       : RAFT_STANDBY);
    if (rc == 0)
        rc = raft_bootstrap(&r->raft, &conf);
    raft_configuration_close(&conf);
    if (rc == RAFT_CANTBOOTSTRAP)
        return 0; /* it has state already */
    if (rc != 0)
        return err_set(err, -EIO, "cannot bootstrap the replicas: %s",
            raft_errmsg(&r->raft));
    log_notice("replica=%" PRIu64 " bootstrapped a cluster of %zu", r->id,
        r->npeers);
    return 0;
}

static int
repl_init_raft(struct repl *r, struct err *err)
{
    int rc;

    if ((rc = raft_uv_tcp_init(&r->transport, r->sd->loop)) != 0)
        return err_set(err, -EIO, "cannot set up the Raft transport: %s",
            raft_strerror(rc));
    r->transport_init = true;
    if (r->bind_address && (rc = raft_uv_tcp_set_bind_address(&r->transport,
                                r->bind_address)) != 0)
        return err_set(err, -EINVAL, "cannot bind Raft to %s: %s",
            r->bind_address, raft_strerror(rc));
    if ((rc = raft_uv_init(&r->io, r->sd->loop, r->dir, &r->transport)) != 0)
        return err_set(err, -EIO, "cannot use '%s' for Raft: %s", r->dir,
            r->io.errmsg);
    r->io_init = true;
    raft_uv_set_connect_retry_delay(&r->io, 200);
    r->fsm.version = 1;
    r->fsm.data = r;
    r->fsm.apply = repl_fsm_apply;
    r->fsm.snapshot = repl_fsm_snapshot;
    r->fsm.restore = repl_fsm_restore;
    if ((rc = raft_init(&r->raft, &r->io, &r->fsm, r->id, r->address)) != 0)
        return err_set(err, -EIO, "cannot set up Raft: %s",
            raft_errmsg(&r->raft));
    r->raft_init = true;
    r->raft.data = r;
    raft_set_election_timeout(&r->raft, (unsigned)r->election_ms);
    raft_set_heartbeat_timeout(&r->raft,
        (unsigned)(r->election_ms / 10 > 10 ? r->election_ms / 10 : 10));
    raft_set_snapshot_threshold(&r->raft, r->snapshot_entries);
    raft_set_snapshot_trailing(&r->raft, r->snapshot_entries);
    raft_set_pre_vote(&r->raft, true);
    return repl_bootstrap(r, err);
}

struct repl *
repl_create(struct schedd *sd, const struct repl_opts *o,
    repl_promote_fn *promote, void *arg)
{
    struct repl *r = xcalloc(1, sizeof(*r));

    r->sd = sd;
    r->id = o->id;
    r->address = xstrdup(o->address);
    if (o->bind_address && o->bind_address[0])
        r->bind_address = xstrdup(o->bind_address);
    r->url = o->url && o->url[0] ? xstrdup(o->url) : NULL;
    r->dir = xasprintf("%s/raft", sd->state_dir);
    r->argv = o->argv;
    memcpy(r->peers, o->peers, sizeof(r->peers));
    r->npeers = o->npeers;
    r->election_ms = o->election_ms;
    r->snapshot_entries = o->snapshot_entries;
    r->promote = promote;
    r->promote_arg = arg;
    r->seed = o->seed;
    r->seed_len = o->seed_len;
    r->seed_path = o->seed_path ? xstrdup(o->seed_path) : NULL;
    if (getrandom(&r->incarnation, sizeof(r->incarnation), 0) !=
        sizeof(r->incarnation))
        r->incarnation = (uint64_t)timeid_now_ms() ^ ((uint64_t)getpid() << 40);
    uv_check_init(sd->loop, &r->watch);
    sd->hooks.replicate = repl_replicate_hook;
    sd->hooks.replicate_log = repl_log_hook;
    sd->hooks.replicate_wait = repl_wait_hook;
    sd->hooks.repl_arg = r;
    sd->repl = r;
    return r;
}

int
repl_start(struct repl *r, struct err *err)
{
    int rc;

    if ((rc = repl_init_raft(r, err)) < 0)
        return rc;
    if ((rc = raft_start(&r->raft)) != 0)
        return err_set(err, -EIO, "cannot start Raft on %s: %s", r->address,
            raft_errmsg(&r->raft));
    /* Index 1 is the bootstrap configuration; anything past it (or a
     * snapshot) is the state of a replica set that already ran. */
    if (r->seed && (raft_last_index(&r->raft) > 1 || r->applied_any)) {
        log_error("replica=%" PRIu64 " '%s' holds the Raft state of a replica "
                  "set that already has state (its log reaches index %llu): "
                  "a seed never overwrites it; start without --seed-from, or "
                  "remove the state directory of every replica to seed a "
                  "new set",
            r->id, r->dir, raft_last_index(&r->raft));
        return err_set(err, -EEXIST,
            "--seed-from refused: the replica set already has state");
    }
    rc = uv_check_start(&r->watch, repl_watch_cb);
    if (rc < 0)
        return err_set(err, rc, "cannot watch the Raft role: %s",
            uv_strerror(rc));
    uv_unref((uv_handle_t *)&r->watch);
    log_notice("replica=%" PRIu64 " started: raft=%s term=%llu "
               "last_index=%llu",
        r->id, r->address, r->raft.current_term, raft_last_index(&r->raft));
    return 0;
}

void
repl_set_url(struct repl *r, const char *url)
{
    free(r->url);
    r->url = xstrdup(url);
}

static void
repl_closed(void *arg)
{
    struct repl *r = arg;

    if (r->closed_cb)
        r->closed_cb(r->closed_arg);
}

static void
repl_watch_closed_cb(uv_handle_t *h)
{
    repl_closed(container_of((uv_check_t *)h, struct repl, watch));
}

static void
repl_raft_closed_cb(struct raft *raft)
{
    struct repl *r = raft->data;

    raft_uv_close(&r->io);
    raft_uv_tcp_close(&r->transport);
    r->io_init = r->transport_init = false;
    uv_close((uv_handle_t *)&r->watch, repl_watch_closed_cb);
}

static void
repl_close_raft(struct repl *r)
{
    r->raft_init = false;
    raft_close(&r->raft, repl_raft_closed_cb);
}

static void
repl_transfer_cb(struct raft_transfer *req)
{
    struct repl *r = container_of(req, struct repl, transfer);
    raft_id id = 0;
    const char *address = NULL;

    raft_leader(&r->raft, &id, &address);
    log_notice("replica=%" PRIu64 " stops; replica %llu leads now", r->id,
        (unsigned long long)id);
    repl_close_raft(r);
}

void
repl_close(struct repl *r, void (*cb)(void *), void *arg)
{
    r->closed_cb = cb;
    r->closed_arg = arg;
    uv_check_stop(&r->watch);
    /* A leader that is told to stop hands the lead over first (libraft
     * catches a follower up and tells it to start an election at once),
     * so that clients wait for that, not for an election timeout. */
    if (r->raft_init && r->serving && !r->broken &&
        raft_state(&r->raft) == RAFT_LEADER &&
        raft_transfer(&r->raft, &r->transfer, 0, repl_transfer_cb) == 0) {
        log_notice("replica=%" PRIu64 " stops: handing the lead over", r->id);
        return;
    }
    if (r->raft_init) {
        repl_close_raft(r);
        return;
    }
    if (r->io_init)
        raft_uv_close(&r->io);
    if (r->transport_init)
        raft_uv_tcp_close(&r->transport);
    r->io_init = r->transport_init = false;
    if (!uv_is_closing((uv_handle_t *)&r->watch))
        uv_close((uv_handle_t *)&r->watch, repl_watch_closed_cb);
}

void
repl_destroy(struct repl *r)
{
    if (r == NULL)
        return;
    if (r->sd->repl == r)
        r->sd->repl = NULL;
    if (r->sd->hooks.repl_arg == r) {
        r->sd->hooks.replicate = NULL;
        r->sd->hooks.replicate_log = NULL;
        r->sd->hooks.replicate_wait = NULL;
        r->sd->hooks.repl_arg = NULL;
    }
    free(r->address);
    free(r->bind_address);
    free(r->url);
    free(r->dir);
    free(r->seed);
    free(r->seed_path);
    free(r);
}

bool
repl_serving(const struct repl *r)
{
    return r->serving && !r->broken;
}
