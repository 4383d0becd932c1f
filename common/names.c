/*
 * names.c - an enum's values spelled through a table of names
 *
 * A linear search: the tables hold a handful of words, and the lookups
 * happen when a request or a row is parsed, never in a loop over jobs.
 */
#include "names.h"

#include <errno.h>
#include <string.h>

const char *
names_str(const char *const *names, size_t n, int i, const char *dflt)
{
    if (i < 0 || (size_t)i >= n || names[i] == NULL)
        return dflt;
    return names[i];
}

int
names_index(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (names[i] != NULL && strcmp(s, names[i]) == 0)
            return (int)i;
    }
    return -EINVAL;
}
