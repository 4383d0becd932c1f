/*
 * hc_kmsg_norm.h - kernel log lines normalised to templates, and sets of
 * templates (the allowlist, a node's baseline)
 *
 * The normaliser replaces, left to right and each token once, what differs
 * between boots and nodes by placeholders: a UUID -> <uuid>, a PCI address
 * (0000:18:00.0, 18:00.0, PCI:0000:18:00) -> <pci>, a MAC -> <mac>, an IPv4
 * address -> <ip>, 0x-hex -> <hex>, a word of 8 or more hex digits with a
 * digit in it -> <hex>, a disk name sda/vdb/xvdc -> <disk>, and every other
 * run of digits -> <n>; runs of blanks become one space and the ends are
 * trimmed. It is idempotent: a template normalises to itself.
 */
#ifndef AGENT_HC_KMSG_NORM_H
#define AGENT_HC_KMSG_NORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HC_KMSG_LINE_MAX 1024 /* bytes of a message that are judged */
#define HC_KMSG_TMPL_MAX 1024 /* bytes of a template */
#define HC_TMPLSET_MAX 65536  /* templates a set holds at most */

/* Writes the template of in[0..len) to out (NUL-terminated, cut at
 * outcap - 1 bytes). Returns its length. */
size_t hc_kmsg_normalise(const char *in, size_t len, char *out, size_t outcap);

/* 32-bit FNV-1a of s; names an unknown template ("tmpl:%08x"). */
uint32_t hc_kmsg_hash(const char *s);

/* A set of templates. */
struct hc_tmplset {
    char **slot; /* open addressing; NULL = empty */
    size_t cap, n;
};

/* Adds the template of line (normalised here). Returns 1 if added, 0 if
 * it was there, -ENOSPC when the set is full. */
int hc_tmplset_add(struct hc_tmplset *s, const char *line);
bool hc_tmplset_has(const struct hc_tmplset *s, const char *tmpl);

/*
 * Adds every line of the file at path: '#' starts a comment line, blank
 * lines are skipped, each other line (raw or already a template) is
 * normalised. Returns the number added, or a negative errno (message in
 * *why, caller frees).
 */
int hc_tmplset_load(struct hc_tmplset *s, const char *path, char **why);

/* The templates, sorted (caller frees the array, not the strings). */
char **hc_tmplset_sorted(const struct hc_tmplset *s);

void hc_tmplset_release(struct hc_tmplset *s);

#endif
