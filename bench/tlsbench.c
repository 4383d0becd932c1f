/*
 * tlsbench.c - lockstep-tlsbench: the cost of TLS per request, side by
 * side with plain HTTP (bench/tls.sh runs it)
 *
 * Two lockstepd are given, one serving plain HTTP and one TLS, each with
 * its PID. For each way of connecting the client sends `-n` GET requests
 * of one path to each, in turn, for `-r` rounds (interleaved, so that a
 * machine busy with something else slows both alike):
 *
 *   keep-alive   one connection for every request
 *   new          a new connection per request (with TLS, a full
 *                handshake: no session is resumed)
 *   resumed      a new connection per request, the TLS session resumed
 *                (a ticket from the last one, as curl does by default)
 *
 * It measures the client's wall time per request, and the scheduler's
 * own CPU time per request (its loop thread's run time in
 * /proc/PID/task/PID/schedstat, nanoseconds), and prints for each way the
 * median over the rounds for both servers and the ratio TLS / plain.
 * libcurl's easy interface, one request at a time; nothing is asserted.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#define MAX_ROUNDS 64

enum mode { MODE_KEEPALIVE, MODE_NEW, MODE_RESUMED, MODE_N };

static const char *const mode_names[MODE_N] = { "keep-alive", "new connection",
    "new, TLS resumed" };

struct target {
    const char *url; /* base URL */
    long pid;        /* the scheduler's, for its CPU time */
};

struct opts {
    struct target t[2]; /* plain, tls */
    const char *ca;
    const char *path;
    int n;
    int rounds;
};

static size_t
discard_cb(char *data, size_t size, size_t nmemb, void *arg)
{
    (void)data;
    (void)arg;
    return size * nmemb;
}

static double
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The run time of pid's main thread (its loop), in microseconds. */
static double
cpu_us(long pid)
{
    char path[64];
    unsigned long long ns = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/schedstat", pid, pid);
    f = fopen(path, "r");
    if (f == NULL || fscanf(f, "%llu", &ns) != 1) {
        fprintf(stderr, "lockstep-tlsbench: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    return ns / 1e3;
}

/* n requests to t in mode; wall and server CPU microseconds per request.
 * False when a request failed. */
static bool
run(const struct opts *o, const struct target *t, enum mode mode, double *wall,
    double *cpu)
{
    char url[512], errbuf[CURL_ERROR_SIZE] = "";
    CURL *c = curl_easy_init();
    double w0, c0;
    long status = 0;
    CURLcode cc = CURLE_OK;

    snprintf(url, sizeof(url), "%s%s", t->url, o->path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    if (o->ca != NULL)
        curl_easy_setopt(c, CURLOPT_CAINFO, o->ca);
    if (mode != MODE_KEEPALIVE) {
        curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    }
    curl_easy_setopt(c, CURLOPT_SSL_SESSIONID_CACHE,
        mode == MODE_NEW ? 0L : 1L);
    /* One request first: the connection (and a session) for the modes
     * that keep one, and a warm path for all. */
    cc = curl_easy_perform(c);
    w0 = now_us();
    c0 = cpu_us(t->pid);
    for (int i = 0; i < o->n && cc == CURLE_OK; i++)
        cc = curl_easy_perform(c);
    *wall = (now_us() - w0) / o->n;
    *cpu = (cpu_us(t->pid) - c0) / o->n;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK || status != 200) {
        fprintf(stderr, "lockstep-tlsbench: %s: %s (HTTP %ld)\n", url,
            errbuf[0] ? errbuf : curl_easy_strerror(cc), status);
        return false;
    }
    return true;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: lockstep-tlsbench --plain URL --plain-pid PID "
               "--tls URL --tls-pid PID\n"
               "           [--ca FILE] [--path PATH] [-n REQUESTS] "
               "[-r ROUNDS]\n");
}

static void
parse(int argc, char **argv, struct opts *o)
{
    static const struct option longs[] = {
        { "plain", 1, 0, 'p' },
        { "plain-pid", 1, 0, 'P' },
        { "tls", 1, 0, 't' },
        { "tls-pid", 1, 0, 'T' },
        { "ca", 1, 0, 'c' },
        { "path", 1, 0, 'a' },
        { 0, 0, 0, 0 },
    };
    int ch;

    *o = (struct opts){ .path = "/v1/health", .n = 1000, .rounds = 5 };
    while ((ch = getopt_long(argc, argv, "n:r:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'p':
            o->t[0].url = optarg;
            break;
        case 'P':
            o->t[0].pid = strtol(optarg, NULL, 10);
            break;
        case 't':
            o->t[1].url = optarg;
            break;
        case 'T':
            o->t[1].pid = strtol(optarg, NULL, 10);
            break;
        case 'c':
            o->ca = optarg;
            break;
        case 'a':
            o->path = optarg;
            break;
        case 'n':
            o->n = atoi(optarg);
            break;
        case 'r':
            o->rounds = atoi(optarg);
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            exit(2);
        }
    }
    if (o->t[0].url == NULL || o->t[1].url == NULL || o->t[0].pid <= 0 ||
        o->t[1].pid <= 0 || o->n < 1 || o->rounds < 1 ||
        o->rounds > MAX_ROUNDS || optind != argc) {
        usage(stderr);
        exit(2);
    }
}

int
main(int argc, char **argv)
{
    static double wall[MODE_N][2][MAX_ROUNDS], cpu[MODE_N][2][MAX_ROUNDS];
    struct opts o;

    parse(argc, argv, &o);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 1;
    for (int r = 0; r < o.rounds; r++) {
        for (int m = 0; m < MODE_N; m++) {
            for (int k = 0; k < 2; k++) {
                if (!run(&o, &o.t[k], (enum mode)m, &wall[m][k][r],
                        &cpu[m][k][r]))
                    return 1;
            }
        }
    }
    printf("# GET %s, %d requests x %d rounds per cell (median of the "
           "rounds), one at a time over loopback\n",
        o.path, o.n, o.rounds);
    printf("# wall: the client's time per request; server CPU: lockstepd's "
           "loop thread per request\n");
    printf("%-18s %10s %10s %7s   %10s %10s %7s\n", "", "wall us", "", "",
        "server", "CPU us", "");
    printf("%-18s %10s %10s %7s   %10s %10s %7s\n", "connection", "plain",
        "tls", "ratio", "plain", "tls", "ratio");
    for (int m = 0; m < MODE_N; m++) {
        double wp = median(wall[m][0], o.rounds);
        double wt = median(wall[m][1], o.rounds);
        double cp = median(cpu[m][0], o.rounds);
        double ct = median(cpu[m][1], o.rounds);

        printf("%-18s %10.1f %10.1f %7.2f   %10.1f %10.1f %7.2f\n",
            mode_names[m], wp, wt, wt / wp, cp, ct, ct / cp);
    }
    curl_global_cleanup();
    return 0;
}
