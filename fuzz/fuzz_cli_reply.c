/*
 * fuzz_cli_reply.c - the CLI reading whatever a server answers
 *
 * No seam: a lockstep command runs as `lockstep` runs it (its entry's
 * function with a struct cli, its HTTP client and all) against a server thread
 * of the harness on a Unix socket, which answers each request with the next
 * reply of the input: the replies of a listing, a job, a node, a token, a
 * submit, an error body. The command parses and prints them (to
 * /dev/null).
 *
 * Input: one byte picks the command line (cmdlines[] below), then the
 * replies, separated by the 4 bytes "\n\xff\xff\n"; each starts with
 * one byte of settings:
 *   bits 0-3  the status (statuses[] below)
 *   bit 4     a Retry-After header
 *   bit 5     Content-Type text/html instead of application/json
 *   bit 6     no reply at all: the connection closes after the request
 *   bit 7     an X-Lockstep-Log-More header (the many-ranks log read was
 *             cut by its byte limit: the command asks again)
 * Requests after the last reply are answered 404 with an API error body.
 *
 * Checked beyond the sanitizers: the command ends with an exit status
 * the CLI defines, and it is not looping on what it was told: it sends
 * at most FUZZ_CLI_REQ_MAX requests for one invocation, plus one per
 * reply of the input (a reply that says more is left may be followed by
 * another request), plus one per PROTO_LOG_RANKS_MAX ranks of the
 * largest job a reply describes (`logs JOB` reads that many ranks a
 * request: common/proto_logs.h; a CLI that asked rank by rank would
 * fail here). An input whose replies describe a job of more than
 * FUZZ_CLI_WORLD_MAX ranks is not run (the command's per-rank state
 * would only take memory and time).
 */
#include "fuzz/fuzz.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "common/proto.h"
#include "common/proto_logs.h"

#define FUZZ_CLI_REQ_MAX 64
#define FUZZ_CLI_WORLD_MAX 65536
#define FUZZ_CLI_SEP "\n\xff\xff\n"

static const char *const cmdlines[][8] = {
    { "jobs" },
    { "jobs", "--all" },
    { "jobs", "--json" },
    { "history" },
    { "history", "--since", "1d" },
    { "show", "7" },
    { "show", "7", "--json" },
    { "nodes" },
    { "node", "n1" },
    { "events" },
    { "events", "--job", "7" },
    { "stats" },
    { "whoami" },
    { "token", "list" },
    { "token", "create", "--user", "bob" },
    { "cancel", "7" },
    { "cancel", "7", "8" },
    { "hold", "7" },
    { "release", "7" },
    { "requeue", "7" },
    { "checkpoint", "7" },
    { "cordon", "n1", "--reason", "r" },
    { "uncordon", "n1" },
    { "drain", "n1", "--reason", "r" },
    { "health", "ack", "n1", "gpu.ecc", "--reason", "r" },
    { "logs", "7" },
    { "logs", "7", "--rank", "0", "--stream", "err" },
    { "submit", "--", "true" },
    { "submit", "--json", "--nodes", "2", "--", "true" },
    { "logs", "7", "--json", "--attempt", "1" },
};
#define NCMDLINES (sizeof(cmdlines) / sizeof(cmdlines[0]))

static const int statuses[16] = { 200, 201, 202, 204, 400, 401, 403, 404, 409,
    413, 429, 500, 502, 503, 504, 302 };

/* The replies of the input being run; the server thread takes them in
 * order under the lock. */
static struct {
    pthread_mutex_t lock;
    const uint8_t *data;
    size_t size;
    size_t off;
    unsigned nreq;
    unsigned maxreq; /* FUZZ_CLI_REQ_MAX + replies + windows (above) */
    int listen_fd;
    char path[256];
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The next reply: its settings byte and body; false when none is left. */
static bool
next_reply(unsigned *set, const uint8_t **body, size_t *len)
{
    const uint8_t *p, *end;

    if (srv.off > srv.size || srv.size - srv.off == 0)
        return false;
    p = srv.data + srv.off;
    end = memmem(p, srv.size - srv.off, FUZZ_CLI_SEP, 4);
    if (end == NULL)
        end = srv.data + srv.size;
    srv.off = (size_t)(end - srv.data) + 4;
    *set = *p;
    *body = p + 1;
    *len = end > p ? (size_t)(end - p) - 1 : 0;
    return true;
}

/* Read one request: its head, then Content-Length bytes of body. */
static bool
read_request(int fd)
{
    char buf[65536];
    size_t n = 0, want = SIZE_MAX;
    ssize_t r;
    char *eoh, *cl;

    for (;;) {
        if (n == sizeof(buf) - 1)
            return true; /* too long to keep: answer anyway */
        r = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        n += (size_t)r;
        buf[n] = '\0';
        eoh = strstr(buf, "\r\n\r\n");
        if (eoh == NULL)
            continue;
        if (want == SIZE_MAX) {
            cl = strcasestr(buf, "\r\nContent-Length:");
            want = (size_t)(eoh + 4 - buf) +
                   (cl && cl < eoh ? strtoul(cl + 17, NULL, 10) : 0);
        }
        if (n >= want)
            return true;
    }
}

static void
write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    ssize_t w;

    while (len > 0) {
        w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* the CLI gave up on us */
        p += w;
        len -= (size_t)w;
    }
}

static void
answer(int fd)
{
    static const char missing[] =
        "{\"error\":{\"code\":\"not_found\",\"message\":\"no more replies\"}}";
    const uint8_t *p = (const uint8_t *)missing;
    size_t len = sizeof(missing) - 1;
    unsigned set = 7; /* 404 */
    char head[256], *body;
    int n;

    /* A copy: the input is gone once the command returned. */
    pthread_mutex_lock(&srv.lock);
    if (++srv.nreq > srv.maxreq)
        fuzz_fail("the command sent more than %u requests\n", srv.maxreq);
    (void)next_reply(&set, &p, &len);
    body = xmalloc(len + 1);
    memcpy(body, p, len);
    pthread_mutex_unlock(&srv.lock);
    if (set & 0x40) {
        free(body);
        return;
    }
    n = snprintf(head, sizeof(head),
        "HTTP/1.1 %d Fuzz\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
        "%s%sConnection: close\r\n\r\n",
        statuses[set & 15], (set & 0x20) ? "text/html" : "application/json",
        len, (set & 0x10) ? "Retry-After: 1\r\n" : "",
        (set & 0x80) ? "X-Lockstep-Log-More: 0\r\n" : "");
    write_all(fd, head, (size_t)n);
    write_all(fd, body, len);
    free(body);
}

static void *
server_main(void *arg)
{
    int fd;

    (void)arg;
    for (;;) {
        fd = accept4(srv.listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        if (read_request(fd))
            answer(fd);
        close(fd);
    }
    return NULL;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    pthread_t t;
    FILE *devnull;

    (void)argc;
    (void)argv;
    fuzz_quiet();
    snprintf(srv.path, sizeof(srv.path), "%s/cli.sock", fuzz_dir());
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", srv.path);
    srv.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fuzz_assert(srv.listen_fd >= 0);
    fuzz_assert(bind(srv.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    fuzz_assert(listen(srv.listen_fd, 16) == 0);
    fuzz_assert(pthread_create(&t, NULL, server_main, NULL) == 0);
    /* What the commands print, for people, goes nowhere; findings are
     * written to descriptor 2 (fuzz_fail) and the sanitizers' too. */
    devnull = fopen("/dev/null", "w");
    fuzz_assert(devnull != NULL);
    stdout = devnull;
    stderr = devnull;
    /* submit takes the environment along; keep it small and fixed. */
    clearenv();
    setenv("PATH", "/usr/bin:/bin", 1);
    setenv("HOME", fuzz_dir(), 1);
    setenv("USER", "fuzz", 1);
    return 0;
}

/* The most ranks a reply of the input gives a job (nodes x
 * ranks_per_node of a JSON object, each in the range a job can have, as
 * the CLI reads them), and (*n) how many replies it has; under
 * srv.lock. */
static int64_t
replies_world(unsigned *n)
{
    const uint8_t *body;
    size_t len;
    unsigned set;
    int64_t most = 0;

    *n = 0;
    while (next_reply(&set, &body, &len)) {
        (*n)++;
        cJSON *o = cJSON_ParseWithLength((const char *)body, len);
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "nodes");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "ranks_per_node");

        if (cJSON_IsNumber(n) && cJSON_IsNumber(r) && n->valuedouble >= 0 &&
            n->valuedouble <= PROTO_NODES_MAX && r->valuedouble >= 0 &&
            r->valuedouble <= PROTO_RANKS_PER_NODE_MAX &&
            (int64_t)n->valuedouble * (int64_t)r->valuedouble > most)
            most = (int64_t)n->valuedouble * (int64_t)r->valuedouble;
        cJSON_Delete(o);
    }
    srv.off = 0;
    return most;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *const *line;
    char *argv[9];
    struct cli cli;
    struct err err = { 0 };
    int64_t world;
    unsigned nreplies;
    int argc = 0, rc;

    line = cmdlines[fuzz_take_byte(&data, &size) % NCMDLINES];

    pthread_mutex_lock(&srv.lock);
    srv.data = data;
    srv.size = size;
    srv.off = 0;
    srv.nreq = 0;
    world = replies_world(&nreplies);
    srv.maxreq = FUZZ_CLI_REQ_MAX + nreplies +
                 (unsigned)(world / PROTO_LOG_RANKS_MAX);
    if (world > FUZZ_CLI_WORLD_MAX) {
        srv.data = NULL;
        srv.size = 0;
    }
    pthread_mutex_unlock(&srv.lock);
    if (world > FUZZ_CLI_WORLD_MAX)
        return 0;

    for (; argc < 8 && line[argc] != NULL; argc++)
        argv[argc] = xstrdup(line[argc]);
    argv[argc] = NULL;

    fuzz_assert(cli_init(&cli, srv.path, "lst_fuzz", &err) == 0);
    cli.cmd = cli_cmd_find(cli_cmds, argv[0]);
    fuzz_assert(cli.cmd != NULL);
    cli.cmds = cli_cmds;
    optind = 0;
    rc = cli.cmd->fn(argc, argv, &cli);
    fuzz_assert(
        rc == CLI_EXIT_OK || rc == CLI_EXIT_FAIL || rc == CLI_EXIT_USAGE);
    fflush(stdout);
    cli_release(&cli);

    pthread_mutex_lock(&srv.lock);
    srv.data = NULL;
    srv.size = 0;
    pthread_mutex_unlock(&srv.lock);
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return 0;
}
