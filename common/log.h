/*
 * log.h - one line per event on stderr
 *
 * Each line carries a timestamp, the component (the ident given to
 * log_init) and the level. Under systemd (JOURNAL_STREAM set, or mode
 * LOG_MODE_SYSLOG_PREFIX) each line starts with a "<N>" syslog priority so
 * journald files it at the right level, and no timestamp is printed (the
 * journal has its own). At debug level every line also names file:line and
 * the function.
 *
 * Subjects are key=value: log_info("job=%ld attempt=%d started", ...).
 */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

enum log_level {
    LOG_LEVEL_ERROR = 3,
    LOG_LEVEL_WARN = 4,
    LOG_LEVEL_NOTICE = 5,
    LOG_LEVEL_INFO = 6,
    LOG_LEVEL_DEBUG = 7,
};

enum log_mode {
    LOG_MODE_AUTO, /* syslog prefix under systemd, plain otherwise */
    LOG_MODE_PLAIN,
    LOG_MODE_SYSLOG_PREFIX,
};

void log_init(const char *ident, enum log_level level, enum log_mode mode);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* "error", "warn", "notice", "info", "debug"; returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
const char *log_level_str(enum log_level level);

void log_msg(enum log_level level, const char *file, int line, const char *func,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define log_error(...)                                                         \
    log_msg(LOG_LEVEL_ERROR, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_warn(...)                                                          \
    log_msg(LOG_LEVEL_WARN, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_notice(...)                                                        \
    log_msg(LOG_LEVEL_NOTICE, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_info(...)                                                          \
    log_msg(LOG_LEVEL_INFO, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...)                                                         \
    log_msg(LOG_LEVEL_DEBUG, __FILE__, __LINE__, __func__, __VA_ARGS__)

/* Log at error level and exit(1). fatal() appends strerror(errno). */
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
