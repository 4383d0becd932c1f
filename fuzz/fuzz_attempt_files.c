/*
 * fuzz_attempt_files.c - the files of an attempt directory, and the
 * checkpoint directory's names
 *
 * An attempt's directory (agent/supfile.h) holds files the agent, its
 * supervisor and the ranks read: spec.json and status.json (between agent
 * and supervisor; read again when an agent restarts and re-adopts), the
 * lease, the control file the ranks map (common/ctlfile.h), and the
 * checkpoint baseline (ckpt-base). The checkpoint directory itself is the
 * user's: the agent reads its entries' names (step-<N>). No seam: each is
 * written as a file and read by the code that reads it.
 *
 * Input: one byte picks the file (mod 6), the rest is its content.
 *   0  spec.json: loaded, saved, loaded again: the second save writes the
 *      same bytes as the first (nothing the agent saved reads back
 *      different)
 *   1  status.json: the same
 *   2  lease
 *   3  control file (4096 bytes, padded with zeros): the SDK's reader
 *      over it (ctlfile_gen, ctlfile_read); the agent opening it for the
 *      attempt the file's header names (an existing file of the attempt
 *      is kept as it is) and posting a directive, which every reader must
 *      then see whole
 *   4  ckpt-base (proc_ckpt_base_load): its marks come out sorted
 *   5  a checkpoint directory entry's name: the agent's reading
 *      (proc_ckpt_name_parse) and the scheduler's (proto_ckpt_path_step
 *      of <dir>/<name>) agree
 */
#include "fuzz/fuzz.h"

#include "agent/proc_ckpt.h"
#include "agent/proc_job.h"
#include "agent/supfile.h"
#include "common/ctlfile.h"
#include "common/err.h"

static char dir[512];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    snprintf(dir, sizeof(dir), "%s/attempt", fuzz_dir());
    fuzz_assert(mkdir(dir, 0700) == 0);
    return 0;
}

/* The bytes of dir/name (caller frees). */
static char *
slurp(const char *name, size_t *len)
{
    char path[600], *text = NULL;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fuzz_assert(supfile_read(path, SUPFILE_MAX_BYTES, &text, len) == 0);
    return text;
}

static void
spec(void)
{
    struct supfile_spec a = { 0 }, b = { 0 };
    struct err err = { 0 };
    char *t1, *t2;
    size_t n1, n2;

    if (supfile_spec_load(dir, &a, &err) < 0)
        return;
    fuzz_assert(supfile_spec_save(dir, &a) == 0);
    t1 = slurp(SUPFILE_SPEC, &n1);
    if (supfile_spec_load(dir, &b, &err) < 0)
        fuzz_fail("spec.json the agent saved does not load: %s\n%s\n", err.msg,
            t1);
    fuzz_assert(supfile_spec_save(dir, &b) == 0);
    t2 = slurp(SUPFILE_SPEC, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0)
        fuzz_fail("spec.json changed on its way back:\n%s\n%s\n", t1, t2);
    free(t1);
    free(t2);
    supfile_spec_release(&a);
    supfile_spec_release(&b);
}

static void
status(void)
{
    struct supfile_status a = { 0 }, b = { 0 };
    struct err err = { 0 };
    char *t1, *t2;
    size_t n1, n2;

    if (supfile_status_load(dir, &a, &err) < 0)
        return;
    fuzz_assert(supfile_status_save(dir, &a) == 0);
    t1 = slurp(SUPFILE_STATUS, &n1);
    if (supfile_status_load(dir, &b, &err) < 0)
        fuzz_fail("status.json saved does not load: %s\n%s\n", err.msg, t1);
    fuzz_assert(supfile_status_save(dir, &b) == 0);
    t2 = slurp(SUPFILE_STATUS, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0)
        fuzz_fail("status.json changed on its way back:\n%s\n%s\n", t1, t2);
    free(t1);
    free(t2);
    supfile_status_release(&a);
    supfile_status_release(&b);
}

/* The SDK's view of the control file at path for attempt. */
static void
control_read(const char *path, uint64_t attempt, uint64_t want_seq,
    uint32_t want_kind, int64_t want_step)
{
    struct ctlfile_entry e[CTLFILE_SLOTS];
    const void *map = NULL;
    uint64_t gen = 0;
    size_t n;
    bool seen = want_seq == 0;

    if (ctlfile_map(path, &map) < 0)
        return;
    (void)ctlfile_gen(map, attempt);
    n = ctlfile_read(map, attempt, e, CTLFILE_SLOTS, &gen);
    fuzz_assert(n <= CTLFILE_SLOTS);
    for (size_t i = 0; i < n; i++) {
        fuzz_assert(e[i].seq != 0);
        /* Only the agent writes the file (ctlfile_open refuses one of
         * another owner), so another slot holding the same seq is one
         * left by an earlier agent in the file it kept: the posted one
         * must be there beside it. */
        if (e[i].seq == want_seq && e[i].kind == want_kind &&
            e[i].step == want_step)
            seen = true;
    }
    if (!seen)
        fuzz_fail("directive %llu (kind %u, step %lld) the agent posted is "
                  "not there\n",
            (unsigned long long)want_seq, want_kind, (long long)want_step);
    ctlfile_unmap(map);
}

static void
control(const uint8_t *data, size_t size)
{
    uint8_t page[CTLFILE_SIZE] = { 0 };
    struct ctlfile *cf = NULL;
    const char *path;
    uint64_t attempt, seq, gen;
    int64_t step;

    memcpy(page, data, size < sizeof(page) ? size : sizeof(page));
    /* gen counts the agent's slot changes from 0: one at 2^64 - 2 or
     * more, whose next bump wraps the readers' "never 0", takes 2^64
     * directives and is never there. */
    memcpy(&gen, page + 24, sizeof(gen));
    if (gen >= UINT64_MAX - 1) {
        gen = 0;
        memcpy(page + 24, &gen, sizeof(gen));
    }
    path = fuzz_write_file(dir, SUPFILE_CONTROL, page, sizeof(page));
    memcpy(&attempt, page + 16, sizeof(attempt));
    control_read(path, attempt, 0, 0, 0);
    /* A directive the input chooses, from the bytes past the file. */
    seq = 1;
    step = -1;
    if (size >= sizeof(page) + 16) {
        memcpy(&seq, data + sizeof(page), sizeof(seq));
        memcpy(&step, data + sizeof(page) + 8, sizeof(step));
        seq = seq % 1000000 + 1;
        step = step < -1 ? -1 : step;
    }
    if (ctlfile_open(path, attempt, &cf) < 0)
        return;
    ctlfile_post(cf, seq, CTLFILE_KIND_CHECKPOINT, step);
    control_read(path, attempt, seq, CTLFILE_KIND_CHECKPOINT, step);
    ctlfile_close(cf);
}

static void
ckpt_base(void)
{
    struct proc_job job = { .job = 7, .attempt = 1, .dir = dir };

    proc_ckpt_base_load(&job);
    for (size_t i = 1; i < job.nckpt_base; i++)
        fuzz_assert(job.ckpt_base[i - 1].step <= job.ckpt_base[i].step);
    free(job.ckpt_base);
}

static void
ckpt_name(const uint8_t *data, size_t size)
{
    char *name = fuzz_cstr(data, size), *path;
    int64_t step = -1, theirs;
    bool ours;

    if (strchr(name, '/') != NULL || name[0] == '\0') {
        free(name);
        return;
    }
    ours = proc_ckpt_name_parse(name, &step);
    path = xasprintf("/ck/%s", name);
    theirs = proto_ckpt_path_step(path);
    if (ours != (theirs >= 0) || (ours && step != theirs))
        fuzz_fail("'%s': the agent reads step %lld (%d), the scheduler %lld\n",
            name, (long long)step, ours, (long long)theirs);
    free(path);
    free(name);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned which = fuzz_take_byte(&data, &size) % 6;
    int64_t deadline;

    switch (which) {
    case 0:
        fuzz_write_file(dir, SUPFILE_SPEC, data, size);
        spec();
        break;
    case 1:
        fuzz_write_file(dir, SUPFILE_STATUS, data, size);
        status();
        break;
    case 2:
        fuzz_write_file(dir, SUPFILE_LEASE, data, size);
        (void)supfile_lease_read(dir, &deadline);
        break;
    case 3:
        control(data, size);
        break;
    case 4:
        fuzz_write_file(dir, "ckpt-base", data, size);
        ckpt_base();
        break;
    default:
        ckpt_name(data, size);
        break;
    }
    return 0;
}
