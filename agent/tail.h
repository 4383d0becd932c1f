/*
 * tail.h - the last lines of a file, as valid UTF-8
 *
 * For the stderr tails of ranks (what a status report shows of a rank
 * that ended) and the stderr part of stack dumps. Blocking but bounded:
 * one open, one fstat, at most `max` bytes read. No libuv.
 */
#ifndef AGENT_TAIL_H
#define AGENT_TAIL_H

#include <stddef.h>

/*
 * The last lines of a file, at most max bytes: starts after the first
 * newline of the last max bytes when the file is longer. Bytes that are
 * not valid UTF-8, and NULs, become '?'. Returns "" for a missing or empty
 * file; caller frees.
 */
char *tail_read(const char *path, size_t max);

#endif
