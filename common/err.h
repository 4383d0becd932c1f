/*
 * err.h - an error code plus a message meant for a person
 *
 * Functions that can fail for a reason worth telling someone (a config
 * error, a bad request, a CLI argument) take a `struct err *` as their last
 * parameter. `err_set()` returns the code so it reads as one statement:
 *
 *     return err_set(err, -EINVAL, "unknown key '%s'", key);
 *
 * `err` may be NULL, in which case only the code is returned.
 */
#ifndef COMMON_ERR_H
#define COMMON_ERR_H

struct err {
    int code; /* negative errno, 0 when unset */
    char msg[160];
};

/* Reset to "no error". Accepts NULL. */
void err_clear(struct err *err);

/* Record code and a printf-style message; returns code. Accepts NULL. */
int err_set(struct err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the existing message with more context ("file:3: <old>"). */
int err_prefix(struct err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
