/*
 * testdir.h - the unit tests' scratch directories and built binaries
 *
 * Header-only, like tap.h: each test binary includes it once. The
 * binaries run from build/tests/, so the daemons they drive are found
 * relative to their own path.
 */
#ifndef TESTS_TESTDIR_H
#define TESTS_TESTDIR_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"

/* buf := "<build>/<rel>", the build directory being the parent of this
 * binary's directory (build/tests/test_x). 0, or -1 when /proc/self/exe
 * cannot be read. */
static inline int
test_built_path(char *buf, size_t len, const char *rel)
{
    char exe[PATH_MAX], *slash;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n <= 0)
        return -1;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    *slash = '\0';
    slash = strrchr(exe, '/');
    *slash = '\0';
    snprintf(buf, len, "%s/%s", exe, rel);
    return 0;
}

/* buf := a new directory "$TMPDIR/<name>.XXXXXX" (/tmp without TMPDIR).
 * 0, or -1 (with a diagnostic). */
static inline int
test_tmpdir(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s.XXXXXX",
        getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp", name);
    if (mkdtemp(buf) == NULL) {
        diag("mkdtemp: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* rm -rf dir, with a diagnostic when that fails. */
static inline void
test_rmtree(const char *dir)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("cannot remove %s", dir);
}

#endif
