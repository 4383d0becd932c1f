/*
 * cli_opt.c - the one option parser every subcommand uses
 *
 * A command declares its options as a table of `struct cli_opt` rows in
 * its entry; cli_parse_opts turns the table into getopt_long's long
 * options (adding --json and --help, which every command has) and fills
 * the command's options struct: flags, strings, range-checked integers,
 * or a setter for anything else. Option errors read the same for every
 * command ("unknown option '--x'", "option '--rank' requires a value"),
 * and so do the operand-count errors, from the entry's min_args,
 * max_args, missing and hint. cli_parse is the wrapper commands call: it
 * prints --help's usage or the usage error.
 *
 * Messages are built in an sbuf rather than a `struct err`, so that a long
 * argument quoted in a message is never cut short.
 */
#include "cli/cli.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"

/* getopt_long's val for an option without a letter: CLI_OPT_VAL + its row.
 * --json follows the command's own rows. */
#define CLI_OPT_VAL 256

/* The message for getopt's '?' (unknown option) or ':' (missing value). */
static void
opt_error_msg(char **argv, int c, struct sbuf *why)
{
    /* getopt_long leaves optind just past the offending word, except for
     * an unknown short option inside a cluster ("-xv"), where optopt is
     * the only trace. */
    const char *word = optind > 0 ? argv[optind - 1] : "";
    bool is_long = word[0] == '-' && word[1] == '-';

    if (c == ':') {
        if (is_long)
            sbuf_addf(why, "option '%s' requires a value", word);
        else
            sbuf_addf(why, "option '-%c' requires a value", optopt);
    } else if (optopt && !is_long) {
        sbuf_addf(why, "unknown option '-%c'", optopt);
    } else {
        sbuf_addf(why, "unknown option '%s'", word);
    }
}

int
cli_opt_error(struct cli *cli, char **argv, int c)
{
    struct sbuf why;

    sbuf_init(&why);
    opt_error_msg(argv, c, &why);
    cli_usage(cli, "%s", why.buf);
    sbuf_release(&why);
    return CLI_EXIT_USAGE;
}

static size_t
opt_count(const struct cli_opt *opts)
{
    size_t n = 0;

    while (opts && opts[n].name)
        n++;
    return n;
}

/* getopt_long's tables for cmd: the long options (caller frees) and the
 * short ones in optstring (at least nopts + 5 bytes). */
static struct option *
opt_tables(const struct cli_cmd *cmd, size_t nopts, char *optstring)
{
    struct option *lopts = xcalloc(nopts + 3, sizeof(*lopts));
    size_t n = 0;

    if (cmd->flags & CLI_CMD_OPTS_FIRST)
        *optstring++ = '+';
    *optstring++ = ':';
    for (size_t i = 0; i < nopts; i++) {
        const struct cli_opt *o = &cmd->opts[i];

        assert(o->letter != 'h' && o->letter < CLI_OPT_VAL);
        lopts[n].name = o->name;
        lopts[n].has_arg = o->kind == CLI_OPT_KIND_FLAG ? no_argument
                                                        : required_argument;
        lopts[n++].val = o->letter ? o->letter : CLI_OPT_VAL + (int)i;
        if (o->letter)
            *optstring++ = (char)o->letter;
    }
    if (!(cmd->flags & CLI_CMD_NO_JSON))
        lopts[n++] = (struct option){ "json", no_argument, NULL,
            CLI_OPT_VAL + (int)nopts };
    lopts[n] = (struct option){ "help", no_argument, NULL, 'h' };
    *optstring++ = 'h';
    *optstring = '\0';
    return lopts;
}

/* The row getopt_long's c stands for. */
static const struct cli_opt *
opt_find(const struct cli_opt *opts, size_t nopts, int c)
{
    if (c >= CLI_OPT_VAL)
        return &opts[c - CLI_OPT_VAL];
    for (size_t i = 0; i < nopts; i++) {
        if (opts[i].letter == c)
            return &opts[i];
    }
    abort();
}

static int
opt_int(const struct cli_opt *o, const char *s, int64_t *out, struct sbuf *why)
{
    char *end = NULL;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < o->min ||
        v > o->max) {
        sbuf_addf(why,
            "invalid value '%s' for --%s: expected an integer from %lld to "
            "%lld",
            s, o->name, (long long)o->min, (long long)o->max);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

/* s as given, or made absolute against the current directory, into
 * *out (freeing what it held). The message is cut where a struct err
 * cuts it, as it always was. */
static int
opt_path(const struct cli_opt *o, const char *s, char **out, struct sbuf *why)
{
    struct err err;
    char *cwd;
    int e;

    if (*s == '\0') {
        err_set(&err, -EINVAL, "--%s must not be empty", o->name);
        sbuf_addstr(why, err.msg);
        return -EINVAL;
    }
    if (s[0] == '/') {
        free(*out);
        *out = xstrdup(s);
        return 0;
    }
    cwd = getcwd(NULL, 0);
    if (cwd == NULL) {
        e = errno;
        err_set(&err, -e,
            "--%s '%s' is relative and the current directory is unknown: %s",
            o->name, s, strerror(e));
        sbuf_addstr(why, err.msg);
        return -e;
    }
    free(*out);
    *out = xasprintf("%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", s);
    free(cwd);
    return 0;
}

/* value as the word of o's list it is, or a usage error naming them. */
static int
opt_word(const struct cli_opt *o, const char *value, const char **out,
    struct sbuf *why)
{
    size_t i;

    for (i = 0; o->words[i] != NULL; i++) {
        if (strcmp(value, o->words[i]) == 0) {
            *out = o->words[i];
            return 0;
        }
    }
    sbuf_addf(why, "invalid --%s '%s': expected ", o->name, value);
    for (i = 0; o->words[i] != NULL; i++)
        sbuf_addf(why, "%s%s",
            i == 0                    ? ""
            : o->words[i + 1] != NULL ? ", "
                                      : " or ",
            o->words[i]);
    return -EINVAL;
}

/* Act on one option: call its setter or fill its target. */
static int
opt_apply(const struct cli_opt *o, void *opts, const char *value,
    struct sbuf *why)
{
    char *target = (char *)opts + o->offset;
    int64_t v;
    int rc;

    if (o->set)
        return o->set(opts, o->kind == CLI_OPT_KIND_FLAG ? NULL : value, why);
    switch (o->kind) {
    case CLI_OPT_KIND_FLAG:
        assert(o->size == sizeof(bool));
        *(bool *)target = true;
        return 0;
    case CLI_OPT_KIND_STR:
        assert(o->size == sizeof(const char *));
        *(const char **)target = value;
        return 0;
    case CLI_OPT_KIND_INT:
        if ((rc = opt_int(o, value, &v, why)) < 0)
            return rc;
        if (o->size == sizeof(int64_t)) {
            *(int64_t *)target = v;
        } else {
            assert(o->size == sizeof(int));
            *(int *)target = (int)v;
        }
        return 0;
    case CLI_OPT_KIND_PATH:
        assert(o->size == sizeof(char *));
        return opt_path(o, value, (char **)target, why);
    case CLI_OPT_KIND_WORD:
        assert(o->size == sizeof(const char *));
        return opt_word(o, value, (const char **)target, why);
    }
    abort();
}

/* Too few or too many operands for cmd. */
static int
check_operands(const struct cli_cmd *cmd, const struct cli_args *args,
    bool selected, struct sbuf *why)
{
    const char *hint = cmd->hint;

    if (args->argc < cmd->min_args && !selected) {
        sbuf_addstr(why, cmd->missing);
        return -EINVAL;
    }
    if (cmd->max_args >= 0 && args->argc > cmd->max_args) {
        sbuf_addf(why, "unexpected argument '%s'%s%s%s",
            args->argv[cmd->max_args], hint ? " (" : "", hint ? hint : "",
            hint ? ")" : "");
        return -EINVAL;
    }
    return 0;
}

int
cli_parse_opts(const struct cli_cmd *cmd, int argc, char **argv, void *opts,
    struct cli_args *args, struct sbuf *why)
{
    size_t nopts = opt_count(cmd->opts);
    char *optstring = xmalloc(nopts + 5);
    struct option *lopts = opt_tables(cmd, nopts, optstring);
    const struct cli_opt *o;
    bool selected = false;
    int c, rc = 0;

    memset(args, 0, sizeof(*args));
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, optstring, lopts, NULL)) != -1) {
        if (c == 'h') {
            args->help = true;
            goto out;
        }
        if (c == '?' || c == ':') {
            opt_error_msg(argv, c, why);
            rc = -EINVAL;
            goto out;
        }
        if (c == CLI_OPT_VAL + (int)nopts) {
            args->json = true;
            continue;
        }
        o = opt_find(cmd->opts, nopts, c);
        selected = selected || o->selects;
        if ((rc = opt_apply(o, opts, optarg, why)) < 0)
            goto out;
    }
    args->argc = argc - optind;
    args->argv = argv + optind;
    rc = check_operands(cmd, args, selected, why);
out:
    free(lopts);
    free(optstring);
    return rc;
}

int
cli_parse(struct cli *cli, int argc, char **argv, void *opts,
    struct cli_args *args)
{
    struct sbuf why;
    int rc;

    sbuf_init(&why);
    if (cli_parse_opts(cli->cmd, argc, argv, opts, args, &why) < 0) {
        rc = cli_usage(cli, "%s", why.buf);
    } else if (args->help) {
        rc = cli_help(cli);
    } else {
        if (args->json)
            cli->json = true;
        rc = CLI_CONTINUE;
    }
    sbuf_release(&why);
    return rc;
}

int
cli_parse_job_id(struct cli *cli, const char *s, int64_t *id)
{
    char *end = NULL;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || v < 1)
        return cli_usage(cli, "invalid job id '%s'", s);
    *id = v;
    return 0;
}

int
cli_check_node_name(struct cli *cli, const char *s)
{
    if (!proto_valid_name(s, PROTO_NODE_NAME_MAX))
        return cli_usage(cli, "invalid node name '%s'", s);
    return 0;
}
