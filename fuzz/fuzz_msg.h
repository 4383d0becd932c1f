/*
 * fuzz_msg.h - one protocol message through its parser, and back
 *
 * The property every common/proto message must have, checked for any
 * input the parser takes:
 *
 *   - a refused message comes with a message for a person (err.msg);
 *   - an accepted one prints (to_json), and what it prints is accepted
 *     again and prints the same text: nothing a sender builds from a
 *     message its peer accepted is refused or changed on the way back
 *     (the scheduler's launch must parse on the agent; an agent's report
 *     of a site check's result must parse on the scheduler).
 *
 * The sanitizers check the rest: no overflow, no leak on any path.
 */
#ifndef FUZZ_FUZZ_MSG_H
#define FUZZ_FUZZ_MSG_H

#include "fuzz/fuzz.h"

#include "common/err.h"
#include "common/jsonx.h"

struct fuzz_msg {
    const char *name;
    size_t size; /* of the message struct */
    /* Defaults before parsing (NULL: zeroed is the default). */
    void (*init)(void *msg);
    int (*from)(const cJSON *json, void *msg, struct err *err);
    cJSON *(*to)(const void *msg);
    void (*release)(void *msg);
};

/* Parse json as m; on success print it, parse the print and print again.
 * Returns the parser's result. */
static inline int
fuzz_msg_check(const struct fuzz_msg *m, const cJSON *json)
{
    void *a = xcalloc(1, m->size), *b = xcalloc(1, m->size);
    struct err err = { 0 }, err2 = { 0 };
    cJSON *out = NULL, *out2 = NULL;
    char *t1 = NULL, *t2 = NULL;
    int rc;

    if (m->init) {
        m->init(a);
        m->init(b);
    }
    rc = m->from(json, a, &err);
    if (rc < 0) {
        /* Refused with a reason; the parser released what it had. */
        fuzz_assert(rc > -4096);
        fuzz_assert(err.msg[0] != '\0');
        goto out;
    }
    fuzz_assert(rc == 0);
    out = m->to(a);
    t1 = fuzz_json_text(out);
    if (m->from(out, b, &err2) < 0) {
        fuzz_fail("%s: its own print is refused: %s\n%s\n", m->name, err2.msg,
            t1);
    }
    out2 = m->to(b);
    t2 = fuzz_json_text(out2);
    if (strcmp(t1, t2) != 0) {
        fuzz_fail("%s: printed differently after a round trip:\n%s\n%s\n",
            m->name, t1, t2);
    }
    m->release(a);
    m->release(b);
out:
    cJSON_Delete(out);
    cJSON_Delete(out2);
    free(t1);
    free(t2);
    free(a);
    free(b);
    return rc;
}

/* The input as JSON (jsonx_parse: one value, whitespace after), or NULL. */
static inline cJSON *
fuzz_json_parse(const uint8_t *data, size_t size)
{
    struct err err = { 0 };
    cJSON *json = NULL;

    if (jsonx_parse((const char *)data, size, &json, &err) < 0) {
        fuzz_assert(json == NULL && err.msg[0] != '\0');
        return NULL;
    }
    return json;
}

/* Wrappers that give each message's functions the generic types. */
#define FUZZ_MSG_DEFINE(name_, type_, init_fn, from_fn, to_fn, release_fn)     \
    static int name_##_from(const cJSON *j, void *m, struct err *e)            \
    {                                                                          \
        return from_fn(j, (type_ *)m, e);                                      \
    }                                                                          \
    static cJSON *name_##_to(const void *m)                                    \
    {                                                                          \
        return to_fn((const type_ *)m);                                        \
    }                                                                          \
    static void name_##_release(void *m)                                       \
    {                                                                          \
        release_fn((type_ *)m);                                                \
    }                                                                          \
    static const struct fuzz_msg name_ = {                                     \
        .name = #name_,                                                        \
        .size = sizeof(type_),                                                 \
        .init = init_fn,                                                       \
        .from = name_##_from,                                                  \
        .to = name_##_to,                                                      \
        .release = name_##_release,                                            \
    }

#endif
