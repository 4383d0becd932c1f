/*
 * fuzz.h - what the libFuzzer harnesses share (docs/fuzzing.md)
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput over one parser of
 * untrusted input and is linked with -fsanitize=fuzzer, so libFuzzer's
 * main drives it. Header-only: each harness includes it once.
 *
 * A harness must not depend on anything but its input: no clock in a
 * decision, no state kept from one input to the next unless it is reset,
 * so that every finding reproduces from its file alone. A harness that
 * needs files writes them under fuzz_dir(), a private directory (in
 * /dev/shm when there is one: no disk I/O per input) removed at exit.
 */
#ifndef FUZZ_FUZZ_H
#define FUZZ_FUZZ_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/log.h"
#include "common/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A harness finding that is no sanitizer's: print why and abort, which
 * libFuzzer reports as a crash with the input that caused it. Written to
 * file descriptor 2 itself, since a harness may point the stderr stream
 * of the code under test elsewhere. */
#define fuzz_fail(...)                                                         \
    do {                                                                       \
        dprintf(STDERR_FILENO, __VA_ARGS__);                                   \
        abort();                                                               \
    } while (0)

#define fuzz_assert(cond)                                                      \
    do {                                                                       \
        if (!(cond))                                                           \
            fuzz_fail("%s:%d: fuzz_assert(%s) failed\n", __FILE__, __LINE__,   \
                #cond);                                                        \
    } while (0)

/* Silence the code under test: a log line per input costs more than the
 * input. Below error level nothing is printed (log.c prints a line only
 * at or under the level set), so a sanitizer's report stands alone. */
static inline void
fuzz_quiet(void)
{
    log_init("fuzz", LOG_LEVEL_ERROR, LOG_MODE_PLAIN);
    log_set_level((enum log_level)(LOG_LEVEL_ERROR - 1));
}

/* The whole LLVMFuzzerInitialize of a harness that needs nothing set up
 * but quiet logs: FUZZ_INIT_QUIET at file scope. */
#define FUZZ_INIT_QUIET                                                        \
    int LLVMFuzzerInitialize(int *argc, char ***argv)                          \
    {                                                                          \
        (void)argc;                                                            \
        (void)argv;                                                            \
        fuzz_quiet();                                                          \
        return 0;                                                              \
    }

/* data[0..size) as a NUL-terminated string (caller frees). An embedded
 * NUL ends the string early, as it would for C code reading the bytes. */
static inline char *
fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = xmalloc(size + 1);

    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Take the first byte of the input as a selector (0 when empty). */
static inline unsigned
fuzz_take_byte(const uint8_t **data, size_t *size)
{
    unsigned b;

    if (*size == 0)
        return 0;
    b = (*data)[0];
    (*data)++;
    (*size)--;
    return b;
}

static char fuzz_dir_path[128];

static inline void
fuzz_dir_remove(void)
{
    char cmd[sizeof(fuzz_dir_path) + 16];

    if (fuzz_dir_path[0] == '\0')
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_dir_path);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: cannot remove '%s'\n", fuzz_dir_path);
}

/* This process's private directory, created on first use. */
static inline const char *
fuzz_dir(void)
{
    struct stat st;
    const char *base = "/dev/shm";

    if (fuzz_dir_path[0] != '\0')
        return fuzz_dir_path;
    if (stat(base, &st) < 0 || !S_ISDIR(st.st_mode) || access(base, W_OK) < 0)
        base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/lockstep-fuzz.XXXXXX",
        base);
    if (mkdtemp(fuzz_dir_path) == NULL) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz_dir_remove);
    return fuzz_dir_path;
}

/* Replace the file dir/name with data[0..size); returns its path (static
 * buffer, valid until the next call). */
static inline const char *
fuzz_write_file(const char *dir, const char *name, const void *data,
    size_t size)
{
    static char path[512];
    const char *p = data;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror("fuzz: open");
        abort();
    }
    while (size > 0) {
        n = write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            perror("fuzz: write");
            abort();
        }
        p += n;
        size -= (size_t)n;
    }
    close(fd);
    return path;
}

/* The compact text of json (caller frees); NULL stays NULL. */
static inline char *
fuzz_json_text(const cJSON *json)
{
    char *s, *out;

    if (json == NULL)
        return NULL;
    s = cJSON_PrintUnformatted(json);
    fuzz_assert(s != NULL);
    out = xstrdup(s);
    cJSON_free(s);
    return out;
}

#endif
