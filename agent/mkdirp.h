/*
 * mkdirp.h - make a directory and its missing parents (mkdir -p)
 *
 * Blocking, like mkdir(2): for the agent's own directories (start-up, a
 * job's log directory), never the user's file systems. No libuv.
 */
#ifndef AGENT_MKDIRP_H
#define AGENT_MKDIRP_H

#include <sys/types.h>

/* Make path and every missing parent with mode (existing ones are left as
 * they are). Returns 0 or the -errno of the first mkdir that failed. */
int mkdirp(const char *path, mode_t mode);

#endif
