/*
 * pmix_dmodex.c - a bare PMIx client for tests/integration/t2007, t4110:
 * the data of ranks of other nodes fetched by direct modex
 *
 * Usage: pmix_dmodex get|hold [TIMEOUT_S]. Every rank puts its key
 * "test.key.<rank>" (ranks of other nodes than node rank 0 only after
 * 600 s in "hold" mode).
 * get: a fence that collects no data, then a PMIx_Get of the key of
 * every rank of another node; prints "rank R got N remote keys median_us
 * M max_us X", or "rank R get of rank P failed: <status>" and exits 7.
 * hold: the ranks of node rank 0 get the key of the first rank of node
 * rank 1 at once (no fence: its data is not there yet); prints "rank R
 * get of rank P failed: <status> after MS ms" and exits 7, or "rank R
 * got the key of rank P". The others wait. TIMEOUT_S is PMIX_TIMEOUT of
 * the Gets.
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

/* Gets rank's key and checks it; PMIX_SUCCESS or the failure. */
static pmix_status_t
get_key(const pmix_proc_t *me, pmix_rank_t rank, int timeout_s)
{
    pmix_info_t info;
    pmix_value_t *v = NULL;
    pmix_proc_t peer;
    pmix_status_t rc;
    char key[64];

    PMIX_LOAD_PROCID(&peer, me->nspace, rank);
    snprintf(key, sizeof(key), "test.key.%u", rank);
    if (timeout_s > 0)
        PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout_s, PMIX_INT);
    rc = PMIx_Get(&peer, key, timeout_s > 0 ? &info : NULL,
        timeout_s > 0 ? 1 : 0, &v);
    if (rc == PMIX_SUCCESS &&
        (v == NULL || v->type != PMIX_STRING || strcmp(v->data.string, key)))
        rc = PMIX_ERR_BAD_PARAM;
    if (v != NULL)
        PMIX_VALUE_RELEASE(v);
    return rc;
}

static int
fail(const pmix_proc_t *me, pmix_rank_t rank, pmix_status_t rc, long long us)
{
    printf("rank %u get of rank %u failed: %s after %lld ms\n", me->rank, rank,
        PMIx_Error_string(rc), us / 1000);
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return 7;
}

int
main(int argc, char **argv)
{
    int hold = argc > 1 && strcmp(argv[1], "hold") == 0;
    int timeout_s = argc > 2 ? atoi(argv[2]) : 0;
    long long t[256], t0;
    pmix_proc_t me, wild;
    pmix_value_t val;
    pmix_status_t rc;
    long size, rpn;
    int n = 0;
    char key[64];

    if ((rc = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    size = get_u32(&me, PMIX_JOB_SIZE);
    rpn = get_u32(&me, PMIX_LOCAL_SIZE);
    if (size <= 0 || rpn <= 0 || size > 256)
        return 1;
    if (hold && (long)me.rank >= rpn)
        sleep(600);
    snprintf(key, sizeof(key), "test.key.%u", me.rank);
    PMIX_VALUE_LOAD(&val, key, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, key, &val);
    PMIx_Commit();
    if (hold) {
        t0 = now_us();
        if ((rc = get_key(&me, (pmix_rank_t)rpn, timeout_s)) != PMIX_SUCCESS)
            return fail(&me, (pmix_rank_t)rpn, rc, now_us() - t0);
        printf("rank %u got the key of rank %ld\n", me.rank, rpn);
    } else {
        PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
        if ((rc = PMIx_Fence(&wild, 1, NULL, 0)) != PMIX_SUCCESS)
            return fail(&me, PMIX_RANK_WILDCARD, rc, 0);
        for (long r = 0; r < size; r++) {
            if (r / rpn == (long)me.rank / rpn)
                continue;
            t0 = now_us();
            if ((rc = get_key(&me, (pmix_rank_t)r, timeout_s)) != PMIX_SUCCESS)
                return fail(&me, (pmix_rank_t)r, rc, now_us() - t0);
            t[n++] = now_us() - t0;
        }
        qsort(t, (size_t)n, sizeof(*t), cmp_ll);
        printf("rank %u got %d remote keys median_us %lld max_us %lld\n",
            me.rank, n, n > 0 ? t[n / 2] : 0, n > 0 ? t[n - 1] : 0);
    }
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return 0;
}
