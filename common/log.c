/*
 * log.c - one line per event on stderr
 *
 * The whole line is formatted into one buffer and written with a single
 * write(2), so lines from several processes sharing a stderr do not
 * interleave mid-line.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "names.h"
#include "xalloc.h"

static struct {
    char ident[32];
    enum log_level level;
    int syslog_prefix;
} logger = { "lockstep", LOG_LEVEL_INFO, 0 };

static const char *const level_names[] = {
    [LOG_LEVEL_ERROR] = "error",
    [LOG_LEVEL_WARN] = "warn",
    [LOG_LEVEL_NOTICE] = "notice",
    [LOG_LEVEL_INFO] = "info",
    [LOG_LEVEL_DEBUG] = "debug",
};

void
log_init(const char *ident, enum log_level level, enum log_mode mode)
{
    snprintf(logger.ident, sizeof(logger.ident), "%s", ident);
    logger.level = level;
    if (mode == LOG_MODE_AUTO)
        logger.syslog_prefix = getenv("JOURNAL_STREAM") != NULL;
    else
        logger.syslog_prefix = mode == LOG_MODE_SYSLOG_PREFIX;
}

void
log_set_level(enum log_level level)
{
    logger.level = level;
}

enum log_level
log_get_level(void)
{
    return logger.level;
}

const char *
log_level_str(enum log_level level)
{
    return names_str(level_names, ARRAY_SIZE(level_names), level, "unknown");
}

int
log_level_parse(const char *s, enum log_level *out)
{
    int i = names_index(level_names, ARRAY_SIZE(level_names), s);

    if (i < 0)
        return i;
    *out = (enum log_level)i;
    return 0;
}

__attribute__((format(printf, 5, 0))) static void
log_vmsg(enum log_level level, const char *file, int line, const char *func,
    const char *fmt, va_list ap)
{
    char buf[2048];
    size_t n = 0;
    int saved = errno;

    if (level > logger.level)
        return;
    if (logger.syslog_prefix) {
        n += (size_t)snprintf(buf, sizeof(buf), "<%d>%s: ", (int)level,
            logger.ident);
    } else {
        struct timespec ts;
        struct tm tm;

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n += strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
            ".%03ldZ %s[%d] %s: ", ts.tv_nsec / 1000000, logger.ident,
            (int)getpid(), log_level_str(level));
    }
    if (logger.level >= LOG_LEVEL_DEBUG && n < sizeof(buf)) {
        const char *base = strrchr(file, '/');
        const char *dir = file;

        /* Keep "scheduler/api.c" from an absolute build path. */
        if (base != NULL) {
            const char *p = base;
            while (p > file && p[-1] != '/')
                p--;
            dir = p;
        }
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s:%d %s: ", dir, line,
            func);
    }
    if (n < sizeof(buf))
        n += (size_t)vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
    if (n >= sizeof(buf) - 1)
        n = sizeof(buf) - 2;
    buf[n++] = '\n';
    /* One write per line; a short write to stderr is not worth a retry. */
    if (write(STDERR_FILENO, buf, n) < 0)
        (void)0;
    errno = saved;
}

void
log_msg(enum log_level level, const char *file, int line, const char *func,
    const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, file, line, func, fmt, ap);
    va_end(ap);
}

void
fatal(const char *fmt, ...)
{
    char msg[1024];
    int saved = errno;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_msg(LOG_LEVEL_ERROR, __FILE__, __LINE__, __func__, "%s: %s", msg,
        strerror(saved));
    exit(1);
}

void
fatalx(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(LOG_LEVEL_ERROR, __FILE__, __LINE__, __func__, fmt, ap);
    va_end(ap);
    exit(1);
}
