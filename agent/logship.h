/*
 * logship.h - ship the ranks' stdout/stderr files to the scheduler
 *
 * The owner of a rank (proc) embeds a `struct logship_output` in it, opens
 * the rank's two output files into it and registers it with logship_add;
 * logship keeps its own registry of what to ship and knows nothing of jobs
 * beyond the (job, attempt, rank) each output names. A timer reads what is
 * new in each registered file and POSTs it to /v1/agent/logs at the offset
 * the scheduler has acknowledged, so logs stay readable after the node is
 * gone. At most one request per file is in flight and each carries at most
 * 1 MiB; the size in the scheduler's reply is the next offset (it also
 * repairs a gap or an overlap, e.g. after an agent restart).
 *
 * A full log directory (no block left for the ranks, statvfs at each
 * tick): the ranks write their output files themselves, so their writes
 * fail (they neither block nor die of it) and that output is lost. Each
 * output registered meanwhile gets a line in both its files, which ships
 * with them and shows in `lockstep logs`: at once if its file has room
 * for it, "[lockstep: 2026-11-21T20:07:46Z: the disk of the job's output
 * (log_dir '/var/lib/lockstep-agent/logs') is full: output from here on
 * may be lost]", and once there is room again (256 KiB free), "[lockstep:
 * output written from 2026-11-21T20:07:46Z to 2026-11-21T20:09:02Z may
 * be lost: the disk of the job's output (log_dir '...') was full]". An
 * output released while the disk is still full gets no second line.
 *
 * Everything runs on the loop thread.
 */
#ifndef AGENT_LOGSHIP_H
#define AGENT_LOGSHIP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common/err.h"

struct agentd;
struct logship;

/* Shipping state of one output file. */
struct logship_file {
    int fd;              /* read side; -1 when there is no file */
    const char *path;    /* borrowed from the owner until release */
    uint64_t acked;      /* bytes the scheduler holds */
    int64_t retry_at_ms; /* monotonic; no request before this */
    int64_t backoff_ms;
    bool in_flight;
    bool abandoned; /* the scheduler refused it for good */
};

/* The two output files of one rank, embedded in it; read-only outside
 * logship.c. */
struct logship_output {
    int64_t job;
    int attempt;
    int rank;
    struct logship_file out;
    struct logship_file err;
    int64_t lost_since_ms;   /* the log disk was full from then (wall
                              * clock) while o was registered; 0: not */
    int64_t shipped_mono_ms; /* when an ack last moved either file on; 0 */
    struct logship *ls;      /* registered with; NULL when not */
    LIST_ENTRY(logship_output) link;
};

/* Set up o for rank `rank` of (job, attempt), unregistered (o must not
 * be registered), then open out_path and err_path as logship_output_open
 * does. The paths are borrowed: they must stay valid until
 * logship_output_release. */
void logship_output_init(struct logship_output *o, int64_t job, int attempt,
    int rank, const char *out_path, const char *err_path);
/* Open for reading each of the two files that is not open yet and whose
 * path is not NULL (the file exists: proc created it). A file that cannot
 * be opened is simply not shipped (fd -1). */
void logship_output_open(struct logship_output *o, const char *out_path,
    const char *err_path);
/* Unregisters o (logship_remove) and closes its files. Nothing of it may
 * be in flight. */
void logship_output_release(struct logship_output *o);

/* Current size of a file (0 when it is not open); proc_progress.c
 * measures output with it. */
uint64_t logship_file_size(const struct logship_file *f);
/* True once everything written to both files so far has been acknowledged
 * (or the file was abandoned or never opened), and nothing is in
 * flight. */
bool logship_output_flushed(const struct logship_output *o);
/* Whether a request for either file is in flight. */
bool logship_output_in_flight(const struct logship_output *o);

/*
 * Ship o from now on. Outputs are visited newest registration first, each
 * output's stdout before its stderr. ls NULL (no shipper: unit tests):
 * nothing happens. o must stay put until logship_remove.
 */
void logship_add(struct logship *ls, struct logship_output *o);
/* Stop shipping o (no-op when it is not registered). A request in flight
 * still refers to o: remove it only once none is, or destroy curlx in the
 * same loop turn. */
void logship_remove(struct logship_output *o);

/* Ship what is new at once instead of at the next tick (a rank just
 * ended: report.c wants its output at the scheduler before its exit).
 * Files in their failure backoff still wait it out. Accepts NULL. */
void logship_kick(struct logship *ls);
/* The scheduler answers again (a status got through after failing):
 * every file's failure backoff is forgotten and what is new is shipped at
 * once, so output written while it was away reaches it now, not up to a
 * backoff (5 s) later. Accepts NULL. */
void logship_resume(struct logship *ls);

/* Starts the shipping timer. */
struct logship *logship_create(struct agentd *ad, struct err *err);
/* Stops the timer, forgets every registered output and frees once the
 * timer is closed. Requests in flight must be dropped with curlx_destroy
 * in the same loop turn (their callbacks use the logship). Accepts
 * NULL. */
void logship_destroy(struct logship *ls);

#endif
