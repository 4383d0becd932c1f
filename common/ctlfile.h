/*
 * ctlfile.h - the control file: directives from the agent to its ranks
 *
 * docs/cadence.md "Delivery". The agent writes the directives a rank's SDK
 * carries out (gc and checkpoint at a step) into one small file per
 * attempt and node, <attempt dir>/sdk/control (LOCKSTEP_CONTROL_FILE in
 * every rank's environment). Ranks map it read-only and look at it on
 * every step() from memory: no system call per training step. The file
 * is never replaced, only written in place through the agent's own
 * shared mapping, so every mapping sees every change.
 *
 * Layout (CTLFILE_SIZE bytes, native byte order, 8-byte aligned fields):
 *
 *   0   char     magic[8]   "LSCTL001"
 *   8   uint32   version    1
 *   12  uint32   nslots     CTLFILE_SLOTS
 *   16  uint64   attempt    the attempt the file belongs to
 *   24  uint64   gen        bumped after every slot change
 *   32  ...      reserved   up to 64
 *   64  slot[nslots], 32 bytes each:
 *       0  uint64 seq       directive number (0: empty or being written)
 *       8  uint32 kind      CTLFILE_KIND_GC or CTLFILE_KIND_CHECKPOINT
 *       12 uint32 reserved
 *       16 int64  step      act at the first step() >= this
 *       24 uint64 check     equals seq once the slot is complete
 *
 * Directive seq goes to slot (seq - 1) % nslots, and a seq is written
 * with one kind and step only (seqs are unique per attempt): the check
 * word proves a slot whole, not that a seq was never rewritten. A writer clears
 * seq, writes kind, step and check, then stores seq and bumps gen (release
 * stores). A reader loads gen; when it changed it reads each slot as
 * seq, fields, seq again, and keeps the slot only when both seqs and
 * check agree and are not 0; it trusts gen only when gen did not move
 * while it read (otherwise it reads again at the next step). A reader
 * ignores the whole file when magic, version or attempt do not match.
 */
#ifndef COMMON_CTLFILE_H
#define COMMON_CTLFILE_H

#include <stddef.h>
#include <stdint.h>

#define CTLFILE_MAGIC "LSCTL001"
#define CTLFILE_VERSION 1
#define CTLFILE_SIZE 4096
#define CTLFILE_SLOTS 32
#define CTLFILE_HEADER 64
#define CTLFILE_SLOT_SIZE 32

#define CTLFILE_KIND_GC 1
#define CTLFILE_KIND_CHECKPOINT 2

/* One directive as a reader sees it. */
struct ctlfile_entry {
    uint64_t seq;
    uint32_t kind;
    int64_t step;
};

/* ---- writer (the agent) ------------------------------------------------ */

struct ctlfile;

/* Open the control file at path for attempt, creating it (mode 0644,
 * CTLFILE_SIZE bytes) when it does not exist or belongs to another
 * attempt; an existing file of this attempt is kept as it is (an agent
 * restarted while its ranks run). A symbolic link (-ELOOP), anything
 * but a regular file with one link (-EINVAL) or a file of another user
 * (-EPERM) is refused. Negative errno on failure. */
int ctlfile_open(const char *path, uint64_t attempt, struct ctlfile **out);
/* Publish directive seq (>= 1): kind and step. Writing a seq already in
 * its slot with the same fields changes nothing (gen stays). */
void ctlfile_post(struct ctlfile *cf, uint64_t seq, uint32_t kind,
    int64_t step);
/* Unmap and close; NULL is fine. The file stays. */
void ctlfile_close(struct ctlfile *cf);

/* ---- reader (the C SDK; the Python SDK does the same in Python) -------- */

/* Map path read-only (CTLFILE_SIZE bytes). *map is NULL on failure
 * (negative errno). Unmap with ctlfile_unmap. */
int ctlfile_map(const char *path, const void **map);
void ctlfile_unmap(const void *map);
/* The generation of a mapped file of attempt (0 when the file is not one:
 * wrong magic, version or attempt). One load; cheap enough per step. */
uint64_t ctlfile_gen(const void *map, uint64_t attempt);
/* The complete slots of map into out (at most max), in slot order.
 * Returns how many; *gen is the generation they are consistent with, or
 * 0 when the writer moved while reading (read again later). */
size_t ctlfile_read(const void *map, uint64_t attempt,
    struct ctlfile_entry *out, size_t max, uint64_t *gen);

#endif
