/*
 * ctlfile.c - the control file: directives from the agent to its ranks
 *
 * Self-contained (libc only): liblockstep, the C rank SDK, builds it in.
 */
#include "ctlfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define OFF_VERSION 8
#define OFF_NSLOTS 12
#define OFF_ATTEMPT 16
#define OFF_GEN 24

struct ctlfile {
    unsigned char *map;
};

static uint64_t *
u64_at(const void *map, size_t off)
{
    return (uint64_t *)((uintptr_t)map + off);
}

static uint32_t *
u32_at(const void *map, size_t off)
{
    return (uint32_t *)((uintptr_t)map + off);
}

static size_t
slot_off(uint64_t seq)
{
    return CTLFILE_HEADER +
           (size_t)((seq - 1) % CTLFILE_SLOTS) * CTLFILE_SLOT_SIZE;
}

/* The magic as the 64-bit word at offset 0. */
static uint64_t
ctlfile_magic(void)
{
    uint64_t m;

    memcpy(&m, CTLFILE_MAGIC, sizeof(m));
    return m;
}

/* Whether map holds a control file of attempt. */
static bool
ctlfile_valid(const void *map, uint64_t attempt)
{
    return __atomic_load_n(u64_at(map, 0), __ATOMIC_ACQUIRE) ==
               ctlfile_magic() &&
           *u32_at(map, OFF_VERSION) == CTLFILE_VERSION &&
           *u32_at(map, OFF_NSLOTS) == CTLFILE_SLOTS &&
           __atomic_load_n(u64_at(map, OFF_ATTEMPT), __ATOMIC_ACQUIRE) ==
               attempt;
}

static void
ctlfile_init(unsigned char *map, uint64_t attempt)
{
    memset(map, 0, CTLFILE_SIZE);
    *u32_at(map, OFF_VERSION) = CTLFILE_VERSION;
    *u32_at(map, OFF_NSLOTS) = CTLFILE_SLOTS;
    *u64_at(map, OFF_ATTEMPT) = attempt;
    /* The magic last, as one release store: a reader that loads it (with
     * acquire) sees the whole header, on any CPU. */
    __atomic_store_n(u64_at(map, 0), ctlfile_magic(), __ATOMIC_RELEASE);
}

int
ctlfile_open(const char *path, uint64_t attempt, struct ctlfile **out)
{
    struct ctlfile *cf;
    struct stat st;
    void *map;
    int fd, rc = 0;

    *out = NULL;
    /* The directory may belong to the ranks' user: no link is followed,
     * no FIFO blocked on, and only a file of the writer's own with one
     * name is written (one the user could truncate would fault the
     * writer's mapping). */
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
        0644);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        rc = -errno;
    else if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
        rc = -EINVAL;
    else if (st.st_uid != geteuid())
        rc = -EPERM;
    else if (st.st_size != CTLFILE_SIZE && ftruncate(fd, CTLFILE_SIZE) < 0)
        rc = -errno;
    if (rc < 0) {
        close(fd);
        return rc;
    }
    map = mmap(NULL, CTLFILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    rc = map == MAP_FAILED ? -errno : 0;
    close(fd);
    if (rc < 0)
        return rc;
    if (!ctlfile_valid(map, attempt))
        ctlfile_init(map, attempt);
    cf = calloc(1, sizeof(*cf));
    if (cf == NULL) {
        munmap(map, CTLFILE_SIZE);
        return -ENOMEM;
    }
    cf->map = map;
    *out = cf;
    return 0;
}

void
ctlfile_post(struct ctlfile *cf, uint64_t seq, uint32_t kind, int64_t step)
{
    size_t off = slot_off(seq);
    uint64_t *sseq = u64_at(cf->map, off);

    if (seq == 0)
        return;
    if (__atomic_load_n(sseq, __ATOMIC_RELAXED) == seq &&
        *u32_at(cf->map, off + 8) == kind &&
        *(int64_t *)u64_at(cf->map, off + 16) == step &&
        *u64_at(cf->map, off + 24) == seq)
        return;
    __atomic_store_n(sseq, 0, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(u32_at(cf->map, off + 8), kind, __ATOMIC_RELAXED);
    __atomic_store_n((int64_t *)u64_at(cf->map, off + 16), step,
        __ATOMIC_RELAXED);
    __atomic_store_n(u64_at(cf->map, off + 24), seq, __ATOMIC_RELAXED);
    __atomic_store_n(sseq, seq, __ATOMIC_RELEASE);
    __atomic_add_fetch(u64_at(cf->map, OFF_GEN), 1, __ATOMIC_RELEASE);
}

void
ctlfile_close(struct ctlfile *cf)
{
    if (cf == NULL)
        return;
    munmap(cf->map, CTLFILE_SIZE);
    free(cf);
}

int
ctlfile_map(const char *path, const void **map)
{
    struct stat st;
    void *m;
    int fd, rc = 0;

    *map = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        rc = -errno;
    else if (st.st_size < CTLFILE_SIZE)
        rc = -EINVAL;
    if (rc == 0) {
        m = mmap(NULL, CTLFILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            rc = -errno;
        else
            *map = m;
    }
    close(fd);
    return rc;
}

void
ctlfile_unmap(const void *map)
{
    if (map)
        munmap((void *)(uintptr_t)map, CTLFILE_SIZE);
}

uint64_t
ctlfile_gen(const void *map, uint64_t attempt)
{
    if (map == NULL || !ctlfile_valid(map, attempt))
        return 0;
    /* Never 0 for a valid file, so 0 can mean "none". */
    return __atomic_load_n(u64_at(map, OFF_GEN), __ATOMIC_ACQUIRE) + 1;
}

size_t
ctlfile_read(const void *map, uint64_t attempt, struct ctlfile_entry *out,
    size_t max, uint64_t *gen)
{
    uint64_t g = ctlfile_gen(map, attempt);
    size_t n = 0;

    *gen = 0;
    if (g == 0)
        return 0;
    for (size_t i = 0; i < CTLFILE_SLOTS && n < max; i++) {
        size_t off = CTLFILE_HEADER + i * CTLFILE_SLOT_SIZE;
        uint64_t s1 = __atomic_load_n(u64_at(map, off), __ATOMIC_ACQUIRE);
        uint32_t kind;
        int64_t step;
        uint64_t check, s2;

        if (s1 == 0)
            continue;
        kind = __atomic_load_n(u32_at(map, off + 8), __ATOMIC_RELAXED);
        step = __atomic_load_n((int64_t *)u64_at(map, off + 16),
            __ATOMIC_RELAXED);
        check = __atomic_load_n(u64_at(map, off + 24), __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        s2 = __atomic_load_n(u64_at(map, off), __ATOMIC_RELAXED);
        if (s1 != s2 || check != s1)
            continue;
        out[n].seq = s1;
        out[n].kind = kind;
        out[n].step = step;
        n++;
    }
    if (ctlfile_gen(map, attempt) == g)
        *gen = g;
    return n;
}
