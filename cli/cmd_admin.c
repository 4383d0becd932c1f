/*
 * cmd_admin.c - lockstep admin backup FILE: an online backup of the
 * scheduler's state
 *
 * The scheduler copies its committed state while it goes on serving
 * (GET /v1/admin/backup); the CLI writes it to FILE.tmp, syncs it and
 * renames it to FILE, so FILE is either the whole copy or untouched.
 * docs/operations.md "Backup and restore" says how to restore one.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"

/* Every SQLite database file starts with these 16 bytes. */
static const char sqlite_magic[16] = "SQLite format 3";

/* Write len bytes of data to path through path.tmp: 0, or -errno with
 * err saying what failed. */
static int
write_file(const char *path, const char *data, size_t len, struct err *err)
{
    char *tmp = xasprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = 0;

    if (fd < 0) {
        rc = err_set(err, -errno, "cannot create '%s': %s", tmp,
            strerror(errno));
        goto out;
    }
    while (len > 0) {
        ssize_t n = write(fd, data, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = err_set(err, -errno, "cannot write '%s': %s", tmp,
                strerror(errno));
            goto out;
        }
        data += n;
        len -= (size_t)n;
    }
    if (fsync(fd) < 0) {
        rc = err_set(err, -errno, "cannot sync '%s': %s", tmp, strerror(errno));
        goto out;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = err_set(err, -errno, "cannot write '%s': %s", tmp,
            strerror(errno));
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) < 0)
        rc = err_set(err, -errno, "cannot rename '%s' to '%s': %s", tmp, path,
            strerror(errno));
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc;
}

static int
admin_backup(struct cli *cli, const char *path)
{
    struct cli_resp resp;
    struct err err;
    int status = CLI_EXIT_FAIL;

    err_clear(&err);
    cli_resp_init(&resp);
    if (cli_call(cli, "GET", "/v1/admin/backup", NULL, 0, &resp, NULL, &err) <
        0)
        goto out;
    if (resp.body.len < sizeof(sqlite_magic) ||
        memcmp(resp.body.buf, sqlite_magic, sizeof(sqlite_magic)) != 0) {
        cli_warn(cli, "unexpected reply from the scheduler: not a database "
                      "file");
        goto out;
    }
    if (write_file(path, resp.body.buf, resp.body.len, &err) < 0) {
        cli_warn(cli, "%s", err.msg);
        goto out;
    }
    printf("backup written to %s (%zu bytes)\n", path, resp.body.len);
    status = CLI_EXIT_OK;
out:
    cli_resp_release(&resp);
    return status;
}

static int
cmd_admin(int argc, char **argv, struct cli *cli)
{
    struct cli_args args;
    int status;

    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 &&
            (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
            return cli_help(cli);
        return cli_usage(cli, "missing subcommand: expected 'backup'");
    }
    if (strcmp(argv[1], "backup") != 0)
        return cli_usage(cli, "unknown subcommand '%s': expected 'backup'",
            argv[1]);
    status = cli_parse(cli, argc - 1, argv + 1, NULL, &args);
    if (status != CLI_CONTINUE)
        return status;
    if (args.argc != 1)
        return cli_usage(cli, args.argc == 0
                                  ? "admin backup: where to? give a file name"
                                  : "admin backup takes one file name");
    return admin_backup(cli, args.argv[0]);
}

const struct cli_cmd cli_cmd_admin = {
    .name = "admin",
    .summary = "administer the scheduler (backup)",
    .usage = "usage: lockstep admin backup FILE\n"
             "\n"
             "backup FILE writes a consistent copy of the scheduler's state\n"
             "to FILE while it goes on serving (operators). Restore it as\n"
             "docs/operations.md \"Backup and restore\" says.\n",
    .fn = cmd_admin,
    .max_args = 1,
    .flags = CLI_CMD_OPERATOR | CLI_CMD_NO_JSON,
};
