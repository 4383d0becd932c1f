/*
 * hc_kmsg_norm.c - kernel log lines to templates; sets of templates
 *
 * See hc_kmsg_norm.h for the rules. The scanner tries the specific tokens
 * (UUID, PCI address, MAC, IPv4, 0x-hex, long hex words, disk names)
 * before the generic digit run, at token boundaries only, so "eth0" becomes
 * "eth<n>" and "sdhci" stays as it is.
 */
#include "hc_kmsg_norm.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

static bool
ishex(char c)
{
    return isxdigit((unsigned char)c) != 0;
}

static bool
isalnum_(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Length of the match of pat at p (h = hex digit, d = digit, else the
 * literal character) followed by a token boundary; 0 if none. */
static size_t
match_pat(const char *p, const char *end, const char *pat)
{
    size_t n = strlen(pat);

    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];

        if (pat[i] == 'h'   ? !ishex(c)
            : pat[i] == 'd' ? !isdigit((unsigned char)c)
                            : c != pat[i])
            return 0;
    }
    return (p + n == end || !isalnum_(p[n])) ? n : 0;
}

/* An IPv4 address: four dot-separated groups of 1-3 digits. */
static size_t
match_ipv4(const char *p, const char *end)
{
    const char *q = p;

    for (int g = 0; g < 4; g++) {
        int d = 0;

        if (g > 0) {
            if (q >= end || *q != '.')
                return 0;
            q++;
        }
        while (q < end && isdigit((unsigned char)*q) && d < 4)
            q++, d++;
        if (d == 0 || d > 3)
            return 0;
    }
    return (q == end || !isalnum_(*q)) && (q == end || *q != '.')
               ? (size_t)(q - p)
               : 0;
}

/* 0x and hex digits. */
static size_t
match_0x(const char *p, const char *end)
{
    const char *q = p + 2;

    if (end - p < 3 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X') ||
        !ishex(p[2]))
        return 0;
    while (q < end && ishex(*q))
        q++;
    return (size_t)(q - p);
}

/* A word of >= 8 hex digits holding both a digit and a letter. */
static size_t
match_hexword(const char *p, const char *end)
{
    const char *q = p;
    bool digit = false, letter = false;

    while (q < end && ishex(*q)) {
        digit |= isdigit((unsigned char)*q) != 0;
        letter |= !isdigit((unsigned char)*q);
        q++;
    }
    if (q - p < 8 || !digit || !letter || (q < end && isalnum_(*q)))
        return 0;
    return (size_t)(q - p);
}

/* sd + 1 or 2 lower-case letters, then a digit or a boundary. */
static size_t
match_disk(const char *p, const char *end)
{
    const char *q = p + 2;

    if (end - p < 3 || p[0] != 's' || p[1] != 'd' ||
        !islower((unsigned char)p[2]))
        return 0;
    q++;
    if (q < end && islower((unsigned char)*q))
        q++;
    if (q < end && isalnum_(*q) && !isdigit((unsigned char)*q))
        return 0;
    return (size_t)(q - p);
}

/* The placeholder for a token at p (at a boundary), its length in *n. */
static const char *
token_at(const char *p, const char *end, size_t *n)
{
    static const struct {
        const char *pat, *ph;
    } pats[] = {
        { "hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh", "<uuid>" },
        { "hhhh:hh:hh.d", "<pci>" },
        { "hh:hh:hh:hh:hh:hh", "<mac>" },
        { "hhhh:hh:hh", "<pci>" },
        { "hh:hh.d", "<pci>" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(pats); i++)
        if ((*n = match_pat(p, end, pats[i].pat)) > 0)
            return pats[i].ph;
    if ((*n = match_ipv4(p, end)) > 0)
        return "<ip>";
    if ((*n = match_0x(p, end)) > 0 || (*n = match_hexword(p, end)) > 0)
        return "<hex>";
    if ((*n = match_disk(p, end)) > 0)
        return "<disk>";
    return NULL;
}

size_t
hc_kmsg_normalise(const char *in, size_t len, char *out, size_t outcap)
{
    const char *p = in,
               *end = in + (len < HC_KMSG_LINE_MAX ? len : HC_KMSG_LINE_MAX);
    size_t o = 0;
    bool cut = false;

#define PUT(s, k)                                                              \
    do {                                                                       \
        size_t k_ = (k);                                                       \
        if (o + k_ >= outcap) {                                                \
            k_ = outcap - 1 - o;                                               \
            cut = true;                                                        \
        }                                                                      \
        memcpy(out + o, (s), k_);                                              \
        o += k_;                                                               \
    } while (0)
    if (outcap == 0)
        return 0;
    while (p < end && isspace((unsigned char)*p))
        p++;
    while (p < end && o < outcap - 1) {
        const char *ph = NULL;
        size_t n = 0;

        if (isspace((unsigned char)*p)) {
            while (p < end && isspace((unsigned char)*p))
                p++;
            if (p < end)
                PUT(" ", 1);
            continue;
        }
        /* A token starts where the template so far ends a word: the
         * template's last byte, not the message's, so that what follows
         * a placeholder ("12sdad": "<n>" then "sdad") reads the same when
         * the template is normalised again. */
        if (o == 0 || !isalnum_(out[o - 1]))
            ph = token_at(p, end, &n);
        if (ph == NULL && isdigit((unsigned char)*p)) {
            for (n = 0; p + n < end && isdigit((unsigned char)p[n]); n++)
                ;
            ph = "<n>";
        }
        if (ph) {
            PUT(ph, strlen(ph));
            p += n;
        } else {
            PUT(p, 1);
            p++;
        }
    }
#undef PUT
    while (p < end && isspace((unsigned char)*p))
        p++;
    /* A template cut at outcap ends with its last whole word, trimmed, or
     * it would not be its own template: the cut end of a word may read
     * as another token when normalised again ("sddress" cut to "sdd", a
     * disk), a cut space goes, and a learned baseline read back would
     * never match. Tokens hold no space, so the words before the last
     * space are whole. */
    if (cut || p < end) {
        while (o > 0 && out[o - 1] != ' ')
            o--;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
    return o;
}

uint32_t
hc_kmsg_hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static size_t
slot_of(const struct hc_tmplset *s, const char *t)
{
    size_t i = hc_kmsg_hash(t) & (s->cap - 1);

    while (s->slot[i] && strcmp(s->slot[i], t) != 0)
        i = (i + 1) & (s->cap - 1);
    return i;
}

bool
hc_tmplset_has(const struct hc_tmplset *s, const char *tmpl)
{
    return s->cap > 0 && s->slot[slot_of(s, tmpl)] != NULL;
}

static void
grow(struct hc_tmplset *s)
{
    struct hc_tmplset bigger = { 0 };

    bigger.cap = s->cap ? 2 * s->cap : 256;
    bigger.slot = xcalloc(bigger.cap, sizeof(*bigger.slot));
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i])
            bigger.slot[slot_of(&bigger, s->slot[i])] = s->slot[i];
    bigger.n = s->n;
    free(s->slot);
    *s = bigger;
}

int
hc_tmplset_add(struct hc_tmplset *s, const char *line)
{
    char t[HC_KMSG_TMPL_MAX];
    size_t i;

    hc_kmsg_normalise(line, strlen(line), t, sizeof(t));
    if (hc_tmplset_has(s, t))
        return 0;
    if (s->n >= HC_TMPLSET_MAX)
        return -ENOSPC;
    if (2 * (s->n + 1) > s->cap)
        grow(s);
    i = slot_of(s, t);
    s->slot[i] = xstrdup(t);
    s->n++;
    return 1;
}

int
hc_tmplset_load(struct hc_tmplset *s, const char *path, char **why)
{
    char line[HC_KMSG_LINE_MAX + 2];
    FILE *f = fopen(path, "re");
    int added = 0, rc;

    if (f == NULL) {
        rc = -errno;
        *why = xasprintf("cannot open %s: %s", path, strerror(errno));
        return rc;
    }
    while (fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);
        bool whole = n > 0 && line[n - 1] == '\n';
        int c;

        if (!whole) /* cut: drop the rest of the line */
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
        line[strcspn(line, "\n")] = '\0';
        if (line[strspn(line, " \t")] == '\0' ||
            line[strspn(line, " \t")] == '#')
            continue;
        if ((rc = hc_tmplset_add(s, line)) < 0) {
            *why = xasprintf("%s: more than %d templates", path,
                HC_TMPLSET_MAX);
            fclose(f);
            return rc;
        }
        added += rc;
    }
    fclose(f);
    return added;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **
hc_tmplset_sorted(const struct hc_tmplset *s)
{
    char **v = xcalloc(s->n + 1, sizeof(*v));
    size_t k = 0;

    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i])
            v[k++] = s->slot[i];
    qsort(v, k, sizeof(*v), cmp_str);
    return v;
}

void
hc_tmplset_release(struct hc_tmplset *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slot[i]);
    free(s->slot);
    memset(s, 0, sizeof(*s));
}
