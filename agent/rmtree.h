/*
 * rmtree.h - remove a directory tree without following symbolic links
 *
 * Blocking: call it on libuv's thread pool for trees of the user's
 * (checkpoints on a network file system, proc_ckpt.c), or on the loop for
 * the agent's own small trees (an attempt directory). No libuv.
 */
#ifndef AGENT_RMTREE_H
#define AGENT_RMTREE_H

/*
 * Remove the directory entry `name` of dirfd (AT_FDCWD: a path) and, if
 * it is a directory, everything below it, never following a symbolic link
 * (a link is removed, not its target). Stops early, returning -ECANCELED,
 * once *cancel is true (cancel may be NULL). A missing entry is no error.
 * Returns 0 or the first -errno met (it goes on past errors); -ELOOP for a
 * tree deeper than it descends.
 */
int rmtree_at(int dirfd, const char *name, const volatile int *cancel);

#endif
