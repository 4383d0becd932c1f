/*
 * mkdirp.c - mkdir -p (mkdirp.h)
 */
#include "agent/mkdirp.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/xalloc.h"

int
mkdirp(const char *path, mode_t mode)
{
    char *copy = xstrdup(path), *p, c;
    int rc = 0;

    for (p = copy + 1;; p++) {
        c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(copy, mode) < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    free(copy);
    return rc;
}
