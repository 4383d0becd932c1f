/*
 * test_config.c - the key = value config parser
 */
#include "common/config.h"
#include "common/sbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "tests/testdir.h"

static const struct config_key keys[] = {
    { "listen", CONFIG_STR, "127.0.0.1:7300", 0, 0, "address" },
    { "timeout_ms", CONFIG_INT, "1000", 100, 60000, "timeout" },
    { "verbose", CONFIG_BOOL, "false", 0, 0, "chatty" },
    { "labels", CONFIG_STR, NULL, 0, 0, "labels" },
    { NULL, 0, NULL, 0, 0, NULL },
};

static char dir[] = "/tmp/lockstep-test-config-XXXXXX";

static const char *
write_file(const char *name, const char *text)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* A file (name, text) that must fail to load with rc; when want is set,
 * the message must contain it (the check is named want_desc). */
static void
load_fails(struct config *cfg, const char *name, const char *text, int rc,
    const char *desc, const char *want, const char *want_desc)
{
    struct err err;

    err_clear(&err);
    is_int(config_load_file(cfg, write_file(name, text), &err), rc, "%s", desc);
    if (want != NULL)
        ok(strstr(err.msg, want) != NULL, "%s (%s)", want_desc, err.msg);
}

/* Items joined with '|' (config_each_item); stops at "stop". */
static int
join_item(const char *item, size_t n, void *arg)
{
    struct sbuf *sb = arg;

    if (n == 4 && memcmp(item, "stop", 4) == 0)
        return -EINTR;
    sbuf_addf(sb, "%.*s|", (int)n, item);
    return 0;
}

static void
test_each_item(void)
{
    struct sbuf sb;

    sbuf_init(&sb);
    is_int(config_each_item(" a ,b\t,, https://x:1 ,", join_item, &sb), 0,
        "a list of three");
    is_str(sb.buf, "a|b|https://x:1|", "blanks trimmed, empty items skipped");
    sbuf_reset(&sb);
    is_int(config_each_item(" , ,", join_item, &sb), -ENOENT,
        "no item is -ENOENT");
    is_int(config_each_item("a,stop,c", join_item, &sb), -EINTR,
        "fn's error stops the walk");
    is_str(sb.buf, "a|", "before the rest");
    sbuf_release(&sb);
}

int
main(void)
{
    struct config *cfg;
    struct err err;
    const char *p;

    plan(NO_PLAN);
    if (mkdtemp(dir) == NULL)
        return 1;

    cfg = config_create(keys);
    is_str(config_str(cfg, "listen"), "127.0.0.1:7300", "default string");
    is_int(config_int(cfg, "timeout_ms"), 1000, "default int");
    ok(!config_bool(cfg, "verbose"), "default bool");
    is_str(config_str(cfg, "labels"), "", "NULL default is empty");
    ok(!config_is_set(cfg, "listen"), "defaults are not 'set'");

    p = write_file("good.conf", "# a comment\n"
                                "\n"
                                "listen = 0.0.0.0:9000   # trailing comment\n"
                                "  timeout_ms=2500\n"
                                "verbose = yes\n"
                                "labels = \"rack=r1 # not a comment\"\n");
    err_clear(&err);
    is_int(config_load_file(cfg, p, &err), 0, "good file loads");
    is_str(config_str(cfg, "listen"), "0.0.0.0:9000", "value with comment");
    is_int(config_int(cfg, "timeout_ms"), 2500, "int without spaces");
    ok(config_bool(cfg, "verbose"), "yes is true");
    is_str(config_str(cfg, "labels"), "rack=r1 # not a comment",
        "quoted value keeps '#'");
    ok(config_is_set(cfg, "listen"), "file values are 'set'");

    p = write_file("unknown.conf", "listen = x\nbogus = 1\n");
    err_clear(&err);
    is_int(config_load_file(cfg, p, &err), -EINVAL, "unknown key fails");
    ok(strstr(err.msg, "unknown.conf:2") != NULL, "error names file:line (%s)",
        err.msg);
    ok(strstr(err.msg, "'bogus'") != NULL, "error names the key");

    load_fails(cfg, "noeq.conf", "listen\n", -EINVAL, "line without '=' fails",
        "noeq.conf:1", "names the line");
    load_fails(cfg, "range.conf", "timeout_ms = 5\n", -ERANGE,
        "out of range fails", "100..60000", "range shown");
    load_fails(cfg, "type.conf", "timeout_ms = 12abc\nverbose = maybe\n",
        -EINVAL, "non-integer fails", "not an integer", "says why");
    load_fails(cfg, "bool.conf", "verbose = maybe\n", -EINVAL,
        "bad boolean fails", NULL, NULL);
    load_fails(cfg, "quote.conf", "listen = \"abc\n", -EINVAL,
        "unterminated quote", NULL, NULL);

    err_clear(&err);
    ok(config_load_file(cfg, "/nonexistent/x.conf", &err) == -ENOENT,
        "missing file is ENOENT");
    ok(strstr(err.msg, "/nonexistent/x.conf") != NULL, "names the file");

    err_clear(&err);
    is_int(config_set_arg(cfg, "timeout_ms=700", &err), 0, "override works");
    is_int(config_int(cfg, "timeout_ms"), 700, "override applied");
    is_int(config_set_arg(cfg, "nope=1", &err), -EINVAL, "unknown override");
    ok(strstr(err.msg, "command line") != NULL, "origin named (%s)", err.msg);
    is_int(config_set_arg(cfg, "=1", &err), -EINVAL, "empty key override");
    is_int(config_set_arg(cfg, "listen", &err), -EINVAL, "override lacks '='");
    is_int(config_set_arg(cfg, "listen=", &err), 0, "empty value allowed");
    is_str(config_str(cfg, "listen"), "", "empty value kept");

    config_destroy(cfg);
    config_destroy(NULL);
    test_each_item();
    test_rmtree(dir);
    return done_testing();
}
