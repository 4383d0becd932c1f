/*
 * cli.h - what the lockstep subcommands share
 *
 * Each subcommand is one `struct cli_cmd` entry in its own
 * `cmd_<name>.c` (tmux's cmd-*.c): its name, summary, usage text, option
 * table and function; a command that only shows one GET reply names its
 * path and printer instead, with cli_run_get as its function. `main.c`
 * lists the entries, parses the global options into a `struct cli`, finds
 * the subcommand and calls its function
 * with argv[0] the subcommand's name. The function parses its own options
 * with cli_parse() and returns the exit status: CLI_EXIT_OK, CLI_EXIT_FAIL
 * (the request failed, including HTTP errors) or CLI_EXIT_USAGE. Messages
 * for a person go to stderr as "lockstep <cmd>: <message>"; stdout carries
 * only results.
 *
 * Everything here runs on the one thread of a short-lived process.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "common/proto.h"
#include "common/sbuf.h"

#define CLI_PROG "lockstep"
#define CLI_DEFAULT_SERVER "/run/lockstep/lockstepd.sock"

enum cli_exit {
    CLI_CONTINUE = -1, /* no exit status: cli_parse's "go on" */
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,
    CLI_EXIT_USAGE = 2,
    CLI_EXIT_UNREACHABLE = 3,   /* the scheduler could not be reached (its
                                 * last request got no connection) */
    CLI_EXIT_INTERRUPTED = 130, /* Ctrl-C ended `submit --wait` */
};

struct cli;
struct hc_conn;

typedef int cli_cmd_fn(int argc, char **argv, struct cli *cli);

/* Prints a reply as a person reads it (a table, a summary); name is the
 * object the command is about, as the user gave it, or NULL. */
typedef void cli_print_fn(const cJSON *reply, const char *name);

/* ---- option tables (cli_opt.c) ------------------------------------------ */

/* What an option takes, and so what it stores in its target. */
enum cli_opt_kind {
    CLI_OPT_KIND_FLAG, /* no value; the bool target becomes true */
    CLI_OPT_KIND_STR,  /* a value, stored as a borrowed pointer
                        * into argv (const char *) */
    CLI_OPT_KIND_INT,  /* an integer in [min, max], stored in an
                        * int or int64_t target */
    CLI_OPT_KIND_PATH, /* a non-empty path, made absolute
                        * against the current directory, stored
                        * as a new string in a char * target
                        * (whose old value is freed) */
    CLI_OPT_KIND_WORD, /* a value that is one of the row's words,
                        * stored as that (static) word in a
                        * const char * target */
};

/* Called instead of storing, for an option with a setter: opts is the
 * command's options struct, value the option's value (NULL for a flag).
 * Returns 0, or a negative errno with why (empty on entry) saying what is
 * wrong, for a person: a usage error. */
typedef int cli_opt_set_fn(void *opts, const char *value, struct sbuf *why);

/* One row of a command's option table, which ends with a row whose name is
 * NULL. The target is a field of the command's own options struct, which
 * the command fills with its defaults before parsing. --json and --help
 * are never listed: cli_parse_opts adds them to every command. */
struct cli_opt {
    const char *name; /* long name, without "--" */
    int letter;       /* short option ('f'), or 0 */
    enum cli_opt_kind kind;
    size_t offset;            /* of the target in the options struct */
    size_t size;              /* of the target */
    int64_t min, max;         /* CLI_OPT_KIND_INT's range */
    const char *const *words; /* CLI_OPT_KIND_WORD's, NULL-terminated */
    cli_opt_set_fn *set;      /* when set, called instead of storing */
    bool selects;             /* given, it selects what the command acts
                               * on in place of operands: min_args is
                               * not enforced (cancel --user) */
};

/* clang-format off */
#define CLI_OPT_TARGET(type, field) \
    .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)
/* --NAME sets the bool field of type to true. */
#define CLI_OPT_FLAG(name_, type, field) \
    { .name = (name_), .kind = CLI_OPT_KIND_FLAG, CLI_OPT_TARGET(type, field) }
/* CLI_OPT_FLAG that -LETTER sets too. */
#define CLI_OPT_FLAG_LETTER(name_, letter_, type, field) \
    { .name = (name_), .letter = (letter_), .kind = CLI_OPT_KIND_FLAG, \
      CLI_OPT_TARGET(type, field) }
/* --NAME VALUE stores VALUE in the const char * field of type. */
#define CLI_OPT_STR(name_, type, field) \
    { .name = (name_), .kind = CLI_OPT_KIND_STR, CLI_OPT_TARGET(type, field) }
/* --NAME N stores N, from min to max, in the int or int64_t field. */
#define CLI_OPT_INT(name_, type, field, min_, max_) \
    { .name = (name_), .kind = CLI_OPT_KIND_INT, \
      CLI_OPT_TARGET(type, field), .min = (min_), .max = (max_) }
/* --NAME WORD stores WORD, which must be one of the words listed after
 * field, in the const char * field; any other value is a usage error,
 * "invalid --NAME 'x': expected a, b or c". */
#define CLI_OPT_WORD(name_, type, field, ...) \
    { .name = (name_), .kind = CLI_OPT_KIND_WORD, \
      CLI_OPT_TARGET(type, field), \
      .words = (const char *const[]){ __VA_ARGS__, NULL } }
/* --NAME PATH stores PATH, made absolute, in the char * field. */
#define CLI_OPT_PATH(name_, type, field) \
    { .name = (name_), .kind = CLI_OPT_KIND_PATH, CLI_OPT_TARGET(type, field) }
/* --NAME (kind FLAG) or --NAME VALUE (kind STR) calls fn. */
#define CLI_OPT_CALL(name_, kind_, fn) \
    { .name = (name_), .kind = CLI_OPT_KIND_##kind_, .set = (fn) }
/* CLI_OPT_CALL of kind STR that stands in for the operands. */
#define CLI_OPT_SELECT(name_, fn) \
    { .name = (name_), .kind = CLI_OPT_KIND_STR, .set = (fn), \
      .selects = true }
#define CLI_OPT_END { .name = NULL }
/* clang-format on */

/* What a command's one operand is, when it has one. */
enum cli_operand {
    CLI_OPERAND_NONE,
    CLI_OPERAND_NODE, /* a node name */
    CLI_OPERAND_JOB,  /* a job id */
};

enum cli_cmd_flags {
    CLI_CMD_OPERATOR = (1 << 0),   /* needs the operator role */
    CLI_CMD_LOCAL = (1 << 1),      /* never talks to the scheduler */
    CLI_CMD_OPTS_FIRST = (1 << 2), /* options end at the first operand, so
                                    * the operands may carry their own */
    CLI_CMD_NO_JSON = (1 << 3),    /* no --json option */
};

/* A subcommand: one per cmd_<name>.c, listed by main.c. */
struct cli_cmd {
    const char *name;
    const char *summary;        /* one line for `lockstep help` */
    const char *usage;          /* man-page synopsis and options */
    const struct cli_opt *opts; /* its options, or NULL for none */
    int min_args;               /* operands: at least min_args ... */
    int max_args;               /* ... and at most max_args (-1: any) */
    const char *missing;        /* the usage error for too few */
    const char *hint;           /* added to the one for too many */
    cli_cmd_fn *fn;
    unsigned flags;           /* enum cli_cmd_flags */
    enum cli_operand operand; /* what its one operand is */
    const char *get;          /* cli_run_get's request path (the
                               * operand is added to it) ... */
    cli_print_fn *print;      /* ... and how it prints the reply */
};

/* The operand of a command about one node, or about one job. */
#define CLI_ONE_NODE                                                           \
    .min_args = 1, .max_args = 1, .missing = "which node? give its name",      \
    .operand = CLI_OPERAND_NODE
#define CLI_ONE_JOB                                                            \
    .min_args = 1, .max_args = 1, .missing = "which job? give its id",         \
    .operand = CLI_OPERAND_JOB

/* A command that shows one GET reply: its usage, given the synopsis after
 * "lockstep" (its one option is --json), the request path and the
 * printer, with cli_run_get as its function. */
#define CLI_GET(synopsis, path, print_fn)                                      \
    .usage = "usage: lockstep " synopsis " [--json]\n"                         \
             "\n"                                                              \
             "  --json  print the API reply unchanged\n",                      \
    .fn = cli_run_get, .get = (path), .print = (print_fn)

/* What option parsing leaves: the operands, and the common options. */
struct cli_args {
    int argc; /* operands, borrowed from argv */
    char **argv;
    bool json; /* --json */
    bool help; /* --help or -h: parsing stopped there */
};

/* Parse a command's arguments (argv[0] is its name) with getopt_long from
 * cmd's option table plus --json and --help, filling the targets in opts
 * (may be NULL when cmd has no options) in the order given, then count the
 * operands against cmd's min_args and max_args. Stops at --help without
 * counting; an option that selects (CLI_OPT_SELECT) waives min_args.
 * Resets getopt first, so it may be called more than once.
 * Returns 0 with *args filled, or a negative errno (a setter's, else
 * -EINVAL) with why holding the usage error: an unknown option, a missing
 * or bad value, too few or too many operands. */
int cli_parse_opts(const struct cli_cmd *cmd, int argc, char **argv, void *opts,
    struct cli_args *args, struct sbuf *why);

/* cli_parse_opts for the running command (cli->cmd), the one helper every
 * command parses with: --help prints the command's usage, an error
 * prints a usage error, and --json sets cli->json. Returns CLI_CONTINUE
 * with the operands in *args, or the exit status to return now
 * (CLI_EXIT_OK after --help, CLI_EXIT_USAGE). */
int cli_parse(struct cli *cli, int argc, char **argv, void *opts,
    struct cli_args *args);

/* The usage error for getopt's '?' (unknown option) or ':' (missing
 * value), for a getopt_long loop of its own (main's global options); call
 * right after getopt_long returned c. Needs opterr = 0 and an optstring
 * starting with ':' (after any '+'). Returns CLI_EXIT_USAGE. */
int cli_opt_error(struct cli *cli, char **argv, int c);
/* Parse a job id (a positive integer); on failure prints a usage error and
 * returns CLI_EXIT_USAGE, else 0. */
int cli_parse_job_id(struct cli *cli, const char *s, int64_t *id);
/* Same contract for a node name. */
int cli_check_node_name(struct cli *cli, const char *s);

struct cli {
    const struct cli_cmd *cmd;         /* the subcommand running */
    const struct cli_cmd *const *cmds; /* every command, NULL-terminated */
    const char *server;                /* URL or socket path; borrowed */
    const char *server_from;           /* where server came from, for
                                        * errors: "--server",
                                        * "LOCKSTEP_SERVER" or NULL (the
                                        * default) */
    const char *hint;     /* static; said after the next warning (how to
                           * point the CLI elsewhere), then cleared */
    const char *token;    /* bearer token or NULL; borrowed */
    const char *ca;       /* CA file for https:// or NULL; borrowed */
    const char *ca_from;  /* "--ca" or "LOCKSTEP_CA", for errors */
    bool json;            /* --json, before or after the command */
    bool unreachable;     /* the last request could not connect (a failing
                           * command then exits CLI_EXIT_UNREACHABLE) */
    char *failure;        /* the whole text of the last request's failure to
                           * get a reply (err may hold it cut short), or NULL */
    struct hc_conn *conn; /* to the scheduler (http_client.h): created on
                           * first use, reused */
    /* Replicas: server may name several, comma-separated (URLs or
     * sockets). Requests go to servers[cur]; a replica that does not
     * lead answers `not_leader` with the leader's URL, which the CLI then
     * uses (leader_url when it is none of servers), and one that cannot
     * be reached is skipped for the next (cli_http). */
    char **servers;
    size_t nservers;
    size_t cur;
    char *leader_url; /* the leader, when not in servers, or NULL */
};

/* Set up from the server and token (borrowed; must outlive cli). Checks
 * that server is an http(s):// URL or an absolute path, or a
 * comma-separated list of them; on failure sets err and returns
 * -EINVAL. */
int cli_init(struct cli *cli, const char *server, const char *token,
    struct err *err);
void cli_release(struct cli *cli);

/* ---- messages (cli_msg.c) ---------------------------------------------- */

/* "lockstep <cmd>: <message>" on stderr, then cli->hint (if any) on a
 * line of its own, clearing it. */
void cli_warn(struct cli *cli, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* cli_warn, then returns CLI_EXIT_FAIL. */
#define cli_fail(cli, ...) (cli_warn((cli), __VA_ARGS__), CLI_EXIT_FAIL)
/* cli_warn, then the command's synopsis on stderr; returns CLI_EXIT_USAGE.
 * cli is evaluated twice. */
#define cli_usage(cli, ...) (cli_warn((cli), __VA_ARGS__), cli_synopsis(cli))
/* The running command's synopsis and where to read more, on stderr (no
 * command: nothing); returns CLI_EXIT_USAGE. */
int cli_synopsis(struct cli *cli);
/* The command's full usage on stdout (for --help); returns CLI_EXIT_OK. */
int cli_help(struct cli *cli);
/* Print a command's usage text to out. */
void cli_print_usage(const struct cli_cmd *cmd, FILE *out);

/* ---- HTTP (cli_http.c) -------------------------------------------------- */

struct cli_header {
    char *name;
    char *value;
};

struct cli_resp {
    long status; /* 0 when no reply came */
    struct sbuf body;
    struct cli_header *headers; /* of the final reply only */
    size_t nheaders;
};

void cli_resp_init(struct cli_resp *resp);
/* Accepts an initialised, used or released resp; leaves it initialised. */
void cli_resp_release(struct cli_resp *resp);
/* Case-insensitive lookup; borrowed, valid until resp is released. */
const char *cli_resp_header(const struct cli_resp *resp, const char *name);

enum cli_http_flags {
    CLI_HTTP_QUIET = (1 << 0),      /* do not print errors; see err */
    CLI_HTTP_QUIET_DOWN = (1 << 1), /* do not print a failure to reach the
                                     * scheduler (the caller waits it out:
                                     * cli_outage_wait); an error reply is */
};

/* Send one request to the scheduler. path starts with "/v1/"; body is
 * printed as the JSON request body, or NULL for none. Returns 0 when a
 * reply arrived, whatever its status (in resp->status), and a negative
 * errno when the scheduler could not be reached; then err (may be NULL)
 * holds "cannot reach scheduler at <server> (<where that came from>):
 * <cause>", or, for a peer that does not speak HTTP, that it is not a
 * lockstep scheduler; the message is also printed unless CLI_HTTP_QUIET.
 * Either way cli->hint says how to point the CLI elsewhere
 * (LOCKSTEP_SERVER, --server, `. DIR/env`), for the next cli_warn; a
 * reply clears it. resp is reset first. */
int cli_http(struct cli *cli, const char *method, const char *path,
    const cJSON *body, unsigned flags, struct cli_resp *resp, struct err *err);

/* cli_http, and a reply that is not 2xx becomes an error: the API's
 * {"error": {"message"}} is printed unless CLI_HTTP_QUIET and kept in
 * err; an error reply without it (not JSON, or JSON of another shape)
 * says that the server is not a lockstep scheduler, with its status and
 * first line (and sets cli->hint). When out is not NULL, a 2xx body is parsed
 * into *out (caller deletes); one that is not JSON says the same. Returns 0,
 * -EIO for an HTTP error, -EPROTO for a reply that is not JSON, or cli_http's
 * error. */
int cli_call(struct cli *cli, const char *method, const char *path,
    const cJSON *body, unsigned flags, struct cli_resp *resp, cJSON **out,
    struct err *err);

/* Report a failed cli_call about one object (kind "job", name "12"):
 * an HTTP error is printed as "job 12: <message>" unless the message
 * already names it; other errors as they are. Returns CLI_EXIT_FAIL. */
int cli_fail_about(struct cli *cli, const char *kind, const char *name, int rc,
    const struct err *err);

/* Write the reply body to stdout unchanged, plus a newline when it does
 * not end with one (--json). */
void cli_print_body(const struct cli_resp *resp);

/* GET path, whose reply must be a JSON array (a listing): printed
 * unchanged with --json, else by print, or, when it is empty, as the line
 * none on stderr. Returns the command's exit status. */
int cli_get_list(struct cli *cli, const char *path, const char *none,
    void (*print)(const cJSON *list));

/* Send one request and print its reply: unchanged with --json, else
 * through print. For a request about one object (kind "job", name "12") a
 * failure is reported with cli_fail_about; with kind NULL, as cli_call
 * prints it. Returns the command's exit status. */
int cli_call_print(struct cli *cli, const char *method, const char *path,
    const cJSON *body, const char *kind, const char *name, cli_print_fn *print);

/* The function of a command that only shows one GET reply, of no
 * operand or of one (the entry's .operand: a node name, checked and
 * encoded, or a job id, checked and written as a number, after .get and
 * a '/'): the entry (cli->cmd) names the path (.get) and the printer
 * (.print). Parse, GET, then print the reply unchanged (--json) or
 * through print; a failure about the operand names it ("node n1: ...").
 * A stray argument is a usage error (with the entry's hint). Returns the
 * command's exit status. */
int cli_run_get(int argc, char **argv, struct cli *cli);

/* Sleep ms milliseconds, resuming after a signal handler. */
void cli_sleep_ms(int64_t ms);

/* URL-encode s for a query string; caller frees. */
char *cli_escape(struct cli *cli, const char *s);
/* Append "?key=value" to path, or "&key=value" when it has a query
 * already, value URL-encoded; nothing when value is NULL. */
void cli_query_add(struct cli *cli, struct sbuf *path, const char *key,
    const char *value);
/* "<base>/<name, encoded>", then "/<verb>" when verb is not NULL, as in
 * "/v1/nodes/n1/cordon"; caller frees. */
char *cli_path(struct cli *cli, const char *base, const char *name,
    const char *verb);

/* ---- display helpers (cli_fmt.c) ---------------------------------------- */

/* Borrowed string field of o, or "" when missing, null or not a string. */
const char *cli_jstr(const cJSON *o, const char *key);
/* Integer field of o, or def when missing, null or not a number (or one
 * outside int64_t: a reply is never trusted). */
int64_t cli_jint(const cJSON *o, const char *key, int64_t def);
/* The same of the item v itself. */
int64_t cli_jnum(const cJSON *v, int64_t def);
/* Whether o has key as a number (not null). */
bool cli_jhas_num(const cJSON *o, const char *key);

/* Whether a job state name is final (SUCCEEDED, FAILED, CANCELLED). */
bool cli_job_state_final(const char *state);
/* Whether s names a job state; returns the canonical (upper-case) name or
 * NULL. */
const char *cli_job_state_parse(const char *s);

/* "45s", "12m", "3h20m", "2d4h" for the time since ms; "-" when 0. */
const char *cli_fmt_age(int64_t ms, int64_t now_ms, char *buf, size_t len);
/* Local time "2026-11-21 20:07:46"; "-" when 0. */
const char *cli_fmt_time(int64_t ms, char *buf, size_t len);
/* Megabytes as "512M", "16G", "1.5T". */
const char *cli_fmt_mb(int64_t mb, char *buf, size_t len);
/* Join an array of integers ("0,1,2") or, when compact, ranges
 * ("0-3,6"); "-" when empty or not an array. Caller frees. */
char *cli_fmt_int_list(const cJSON *arr, bool compact);
/* "k=v,k2=v2" for an object of strings; "-" when empty. Caller frees. */
char *cli_fmt_labels(const cJSON *obj);
/* A command line for display: arguments that need it are quoted. */
char *cli_fmt_argv(const cJSON *argv);

/* An aligned text table. Cells are copied. The last column is not padded,
 * so a long free-text column (REASON) does not widen the others. */
struct cli_table;

struct cli_table *cli_table_create(const char *const *headers, size_t ncols);
void cli_table_destroy(struct cli_table *t);
/* Start a new row; then one cli_table_cell per column. */
void cli_table_row(struct cli_table *t);
void cli_table_cell(struct cli_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* indent spaces before each line. */
void cli_table_print(const struct cli_table *t, FILE *out, int indent);

/* Print each line of text with prefix before it (stderr tails). */
void cli_print_indented(FILE *out, const char *prefix, const char *text);

/* ---- a job's progress, one line per change (cli_progress.c) ---------- */

struct cli_progress {
    int64_t id;
    char state[32];    /* the state of the last reply, "" before one */
    char *reason;      /* its reason */
    int64_t attempt;   /* the latest attempt announced as placed */
    int64_t restarted; /* the latest attempt whose restart was announced */
};

void cli_progress_init(struct cli_progress *p, int64_t id);
void cli_progress_release(struct cli_progress *p);
/* Given the next GET /v1/jobs/ID reply, append to out one line per change
 * since the last one: "job 7 PENDING: <reason>" (again when the reason
 * changes; a RESTARTING reason is told once), "job 7 PLACED on n1, n2 (attempt
 * 1)", "job 7 RUNNING (attempt 1)", "job 7 RESTARTING after attempt 1:
 * <reason>". A missed placement or restart (the attempt number grew) is still
 * told, in order. A final state adds nothing: the caller prints the outcome. */
void cli_progress_update(struct cli_progress *p, const cJSON *job,
    struct sbuf *out);

/* ---- outages (cli_outage.c) --------------------------------------------- */

/* How long `submit --wait` and `logs --follow` wait out a scheduler that
 * cannot be reached (or answers 5xx) before giving up, unless
 * --retry-for says otherwise: 5 minutes, what a restart, an upgrade or a
 * reboot of the scheduler's machine takes; longer wants a person. */
#define CLI_RETRY_DEFAULT_MS 300000
/* How often they try again meanwhile. */
#define CLI_RETRY_POLL_MS 1000

/* What to do after a failed poll: it is an answer (a 4xx, not lockstep:
 * FINAL), the outage begins (FIRST: say so once), goes on (RETRY), or
 * has lasted retry_ms (GIVE_UP; at once when retry_ms is 0). Pure. */
enum cli_outage_step {
    CLI_OUTAGE_FINAL,
    CLI_OUTAGE_FIRST,
    CLI_OUTAGE_RETRY,
    CLI_OUTAGE_GIVE_UP,
};
enum cli_outage_step cli_outage_decide(int rc, long status, int64_t down_since,
    int64_t now, int64_t retry_ms);

/* An outage being waited out. */
struct cli_outage {
    int64_t retry_ms;   /* --retry-for; -1: CLI_RETRY_DEFAULT_MS */
    int64_t down_since; /* monotonic ms of its first failure, or 0 */
};
/* --retry-for's value ("5m", "1h", "0") into *ms; -EINVAL with why. */
int cli_set_retry_for(const char *value, int64_t *ms, struct sbuf *why);
/* After a request failed with rc (resp, err): says the outage once,
 * sleeps CLI_RETRY_POLL_MS and returns true to try again, or returns
 * false (an answer that is final, or the bound reached: said). */
bool cli_outage_wait(struct cli *cli, struct cli_outage *o, int rc,
    const struct cli_resp *resp, const struct err *err);
/* After a request succeeded: if an outage was being waited out, say that
 * it is over and forget it. */
void cli_outage_over(struct cli *cli, struct cli_outage *o);

/* ---- submit's argument parsing, apart for unit tests (cmd_submit.c) ----- */

struct cli_submit_opts {
    struct proto_job_spec spec;
    char *export;         /* --export, NULL: ALL (cli_env.h) */
    const char *specs;    /* --specs FILE|-: many jobs (cli_specs.c); the
                           * options are their common fields */
    int64_t retry_for_ms; /* --retry-for; -1: CLI_RETRY_DEFAULT_MS */
    bool wait;
    bool json;
    bool help;
};

/* Parse `submit` arguments (argv[0] is "submit") into opts, which it
 * initialises (proto_job_spec_init) and the caller releases with
 * cli_submit_opts_release, also on failure. The workdir defaults to the
 * current directory. The submitter's environment is not read here: the
 * command adds it (cli_env_export, with opts->export) before sending.
 * Returns 0, or -EINVAL with err naming the bad argument (a usage
 * error). */
int cli_submit_parse(int argc, char **argv, struct cli_submit_opts *opts,
    struct err *err);
void cli_submit_opts_release(struct cli_submit_opts *opts);
/* lockstep submit --specs FILE|- (cli_specs.c): the job specs of FILE, one
 * JSON object a line, with spec (the command line's options, the
 * environment) as their common fields, in as few requests as the API
 * allows. Prints what was submitted (json: {"count", "ids"}). Returns the
 * exit status. */
int cli_submit_specs(struct cli *cli, const char *file,
    const struct proto_job_spec *spec, bool json);
/* The one-line warning for a checkpoint directory that is not empty at
 * submit (docs/fault-tolerance.md §Checkpoints), from this machine's own
 * look at spec->checkpoint_dir: what is there (complete checkpoints,
 * the newest) will not be resumed, and what attempt 1 resumes from
 * instead (spec->resume_from / resume_from_job). Returns true with the
 * text in out, false (out untouched) when the directory is empty, absent
 * or unreadable here, or the job has none. */
bool cli_submit_ckpt_warning(const struct proto_job_spec *spec,
    struct sbuf *out);

/* ---- history's --since, apart for unit tests (cmd_history.c) ------------ */

/* A point in time as a person gives it: a duration back from now_ms
 * ("90s", "15m", "2h", "3d", "1w", or several: "1d12h"), a local date
 * with an optional time ("2026-11-24", "2026-11-24 10:00",
 * "2026-11-24T10:00:05") or an ISO 8601 UTC time
 * ("2026-11-24T10:00:05Z"). Returns 0 with *out in epoch milliseconds, or
 * -EINVAL with why (empty on entry) saying what was expected. */
int cli_parse_since(const char *s, int64_t now_ms, int64_t *out,
    struct sbuf *why);
/* A duration as a person gives it ("90s", "15m", "2h", "3d", "1w", or
 * several: "1d12h"; token --ttl, --retry-for): its milliseconds, or -1
 * when s is not one. */
int64_t cli_parse_duration(const char *s);

/* ---- the list of commands (cmd_help.c) --------------------------------- */

/* Every command, NULL-terminated: the whole command surface. */
extern const struct cli_cmd *const cli_cmds[];
/* The command named exactly name (no prefix matching), or NULL. */
const struct cli_cmd *cli_cmd_find(const struct cli_cmd *const *cmds,
    const char *name);
/* The synopsis of `lockstep` itself. */
void cli_print_main_usage(FILE *out);
/* `lockstep help`: the synopsis, every command and the global options. */
void cli_print_main_help(const struct cli_cmd *const *cmds, FILE *out);

/* ---- subcommands (cmd_<name>.c) ----------------------------------------- */

extern const struct cli_cmd cli_cmd_submit;
extern const struct cli_cmd cli_cmd_jobs;
extern const struct cli_cmd cli_cmd_history;
extern const struct cli_cmd cli_cmd_events;
extern const struct cli_cmd cli_cmd_show;
extern const struct cli_cmd cli_cmd_logs;
extern const struct cli_cmd cli_cmd_cancel;
extern const struct cli_cmd cli_cmd_hold;
extern const struct cli_cmd cli_cmd_release;
extern const struct cli_cmd cli_cmd_requeue;
extern const struct cli_cmd cli_cmd_checkpoint;
extern const struct cli_cmd cli_cmd_nodes;
extern const struct cli_cmd cli_cmd_node;
extern const struct cli_cmd cli_cmd_cordon;
extern const struct cli_cmd cli_cmd_uncordon;
extern const struct cli_cmd cli_cmd_drain;
extern const struct cli_cmd cli_cmd_health;
extern const struct cli_cmd cli_cmd_token;
extern const struct cli_cmd cli_cmd_admin;
extern const struct cli_cmd cli_cmd_replicas;
extern const struct cli_cmd cli_cmd_stats;
extern const struct cli_cmd cli_cmd_whoami;
extern const struct cli_cmd cli_cmd_help;

#endif
