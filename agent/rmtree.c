/*
 * rmtree.c - rm -r with *at() calls that never follow a link (rmtree.h)
 *
 * Each directory is opened with O_NOFOLLOW relative to its parent's
 * descriptor, so a symbolic link planted anywhere in the tree (by the
 * user whose tree it is, while we delete it) is unlinked, never
 * traversed.
 */
#include "agent/rmtree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define RMTREE_DEPTH_MAX 256
#define RMTREE_PASSES 3

static int
rmtree_depth(int dirfd, const char *name, const volatile int *cancel, int depth)
{
    struct dirent *de;
    int fd, rc = 0, r, pass;
    DIR *d;

    if (cancel != NULL && *cancel)
        return -ECANCELED;
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -errno;
    if (depth >= RMTREE_DEPTH_MAX)
        return -ELOOP;
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    d = fdopendir(fd);
    if (d == NULL) {
        rc = -errno;
        close(fd);
        return rc;
    }
    /* Entries removed while reading may make some file systems skip
     * others: read again while the directory is not empty. */
    for (pass = 0; pass < RMTREE_PASSES; pass++) {
        if (pass > 0)
            rewinddir(d);
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            r = rmtree_depth(fd, de->d_name, cancel, depth + 1);
            if (r == -ECANCELED) {
                closedir(d);
                return r;
            }
            if (r < 0 && rc == 0)
                rc = r;
        }
        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
            closedir(d);
            return rc;
        }
        if (errno != ENOTEMPTY && errno != EEXIST)
            break;
    }
    if (rc == 0)
        rc = -errno;
    closedir(d);
    return rc;
}

int
rmtree_at(int dirfd, const char *name, const volatile int *cancel)
{
    return rmtree_depth(dirfd, name, cancel, 0);
}
