/*
 * names.h - an enum's values spelled through a table of names
 *
 * Each enum with a _str/_parse pair (STYLE 2.2) keeps one static table,
 * `static const char *const x_names[] = { [X_A] = "a", ... }`, indexed by
 * its values; these two look it up, so every pair treats a value out of
 * range and a word it does not know the same way.
 */
#ifndef COMMON_NAMES_H
#define COMMON_NAMES_H

#include <stddef.h>

/* names[i], or dflt when i is outside [0, n) or names[i] is NULL (a gap
 * in the table). Both are borrowed: the result lives as long as they do. */
const char *names_str(const char *const *names, size_t n, int i,
    const char *dflt);

/* The index of s in names[0..n) (NULL entries are skipped), or -EINVAL
 * when s is none of them. */
int names_index(const char *const *names, size_t n, const char *s);

#endif
