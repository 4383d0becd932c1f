/*
 * pmix_fence.c - a bare PMIx client for tests/integration/t2007, t4110
 *
 * Usage: pmix_fence [NFENCES [DELAY_S [TIMEOUT_S]]]. Every rank puts and
 * commits its own key, and prints the host name PMIx gives for the next
 * node's first rank ("rank R peer P host H"). The ranks of node rank 0
 * fence at once; the others sleep DELAY_S seconds first (so that a fence
 * is pending on node 0 meanwhile). Then NFENCES fences over the whole
 * namespace, the first collecting data (the keys are read back after
 * it), each with PMIX_TIMEOUT TIMEOUT_S when given; prints "rank R
 * fences N median_us M max_us X", or "rank R fence failed: <status>"
 * and exits 7.
 */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long
now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return x < y ? -1 : x > y;
}

/* An unsigned 32-bit job-level value, or -1. */
static long
get_u32(const pmix_proc_t *me, const char *key)
{
    pmix_proc_t wild;
    pmix_value_t *v = NULL;
    long out = -1;

    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&wild, key, NULL, 0, &v) == PMIX_SUCCESS && v != NULL) {
        out = (long)v->data.uint32;
        PMIX_VALUE_RELEASE(v);
    }
    return out;
}

/* Fence over the namespace; collect data when asked. */
static pmix_status_t
fence(const pmix_proc_t *me, int collect, int timeout_s)
{
    pmix_info_t info[2];
    pmix_proc_t wild;
    size_t n = 0;
    int yes = 1;

    PMIX_LOAD_PROCID(&wild, me->nspace, PMIX_RANK_WILDCARD);
    if (collect)
        PMIX_INFO_LOAD(&info[n++], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    if (timeout_s > 0)
        PMIX_INFO_LOAD(&info[n++], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
    return PMIx_Fence(&wild, 1, n > 0 ? info : NULL, n);
}

int
main(int argc, char **argv)
{
    int nf = argc > 1 ? atoi(argv[1]) : 1, delay = argc > 2 ? atoi(argv[2]) : 0;
    int timeout_s = argc > 3 ? atoi(argv[3]) : 0;
    long long *t = calloc((size_t)(nf > 0 ? nf : 1), sizeof(*t)), t0;
    pmix_proc_t me, peer;
    pmix_value_t val, *v = NULL;
    pmix_status_t rc;
    long size, rpn;
    char key[64], want[64];

    if ((rc = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    size = get_u32(&me, PMIX_JOB_SIZE);
    rpn = get_u32(&me, PMIX_LOCAL_SIZE);
    snprintf(key, sizeof(key), "test.key.%u", me.rank);
    PMIX_VALUE_LOAD(&val, key, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, key, &val);
    PMIx_Commit();
    if (delay > 0 && rpn > 0 && (long)me.rank >= rpn)
        sleep((unsigned)delay);
    for (int i = 0; i < nf; i++) {
        t0 = now_us();
        rc = fence(&me, i == 0, timeout_s);
        t[i] = now_us() - t0;
        if (rc != PMIX_SUCCESS) {
            printf("rank %u fence failed: %s\n", me.rank,
                PMIx_Error_string(rc));
            fflush(stdout);
            PMIx_Finalize(NULL, 0);
            return 7;
        }
    }
    if (size > 0 && rpn > 0) {
        PMIX_LOAD_PROCID(&peer, me.nspace,
            (pmix_rank_t)((me.rank / rpn + 1) * rpn % size));
        snprintf(key, sizeof(key), "test.key.%u", peer.rank);
        snprintf(want, sizeof(want), "%s", key);
        if (PMIx_Get(&peer, key, NULL, 0, &v) == PMIX_SUCCESS && v != NULL &&
            strcmp(v->data.string, want) == 0)
            printf("rank %u got the key of rank %u\n", me.rank, peer.rank);
        if (v != NULL)
            PMIX_VALUE_RELEASE(v);
        v = NULL;
        if (PMIx_Get(&peer, PMIX_HOSTNAME, NULL, 0, &v) == PMIX_SUCCESS &&
            v != NULL)
            printf("rank %u peer %u host %s\n", me.rank, peer.rank,
                v->data.string);
    }
    qsort(t, (size_t)nf, sizeof(*t), cmp_ll);
    printf("rank %u fences %d median_us %lld max_us %lld\n", me.rank, nf,
        t[nf / 2], t[nf - 1]);
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    free(t);
    return 0;
}
