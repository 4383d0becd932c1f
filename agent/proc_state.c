/*
 * proc_state.c - the record of held jobs that outlives the agent
 *
 * Ranks survive the agent (proc.h); this file lets the next agent find
 * them. Each held job is one small JSON file,
 * <state_dir>/jobs/<job>.<attempt>.json, rewritten atomically (write a
 * temporary file, rename) whenever a rank starts or ends and removed when
 * the job is released. A rank is identified by its pid and its start time
 * in /proc/<pid>/stat, so a recycled pid is never mistaken for a rank.
 *
 * On start-up every record is re-adopted: its ranks are reported as they
 * were recorded, a running one that is still alive stays "running" (and is
 * polled), one that ended while no agent watched it is "lost". Adopted jobs
 * count as desired until the scheduler's first answer, so the register
 * status lists them and the scheduler decides.
 */
#include "agent/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

#define PROC_STATE_MAX_BYTES (4u << 20)

uint64_t
proc_pid_start_time(int pid)
{
    char path[64], buf[1024], *p, *tok, *save = NULL;
    unsigned long long start = 0;
    ssize_t n;
    int fd, field;

    if (pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: the
     * fields we want follow the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    p++;
    for (field = 3, tok = strtok_r(p, " ", &save); tok != NULL;
         field++, tok = strtok_r(NULL, " ", &save)) {
        if (field == 3 && (tok[0] == 'Z' || tok[0] == 'X'))
            return 0;           /* dead, waiting to be reaped */
        if (field == 22) {
            start = strtoull(tok, NULL, 10);
            break;
        }
    }
    return start;
}

static char *
proc_state_path(const struct proc_job *job, const char *suffix)
{
    return xasprintf("%s/%lld.%d.json%s", proc_state_dir(job->pt),
        (long long)job->job, job->attempt, suffix);
}

void
proc_state_save(const struct proc_job *job)
{
    char *path = proc_state_path(job, ""), *tmp = proc_state_path(job,
        ".tmp"), *text;
    cJSON *root = cJSON_CreateObject(), *ranks, *o;
    size_t i, len;
    ssize_t n;
    int fd;

    jsonx_add_int(root, "version", 1);
    jsonx_add_int(root, "job", job->job);
    jsonx_add_int(root, "attempt", job->attempt);
    ranks = cJSON_AddArrayToObject(root, "ranks");
    for (i = 0; i < job->nranks; i++) {
        const struct proc_rank *r = &job->ranks[i];

        o = cJSON_CreateObject();
        jsonx_add_int(o, "rank", r->rank);
        jsonx_add_int(o, "local_rank", r->local_rank);
        jsonx_add_str(o, "state", proto_rank_state_str(r->state));
        jsonx_add_int(o, "pid", r->pid);
        jsonx_add_int(o, "proc_start", (int64_t)r->proc_start);
        jsonx_add_int(o, "start_ms", r->start_ms);
        jsonx_add_int(o, "end_ms", r->end_ms);
        jsonx_add_int(o, "exit_code", r->exit_code);
        jsonx_add_int(o, "signal", r->signal);
        cJSON_AddItemToArray(ranks, o);
    }
    text = jsonx_print(root);
    cJSON_Delete(root);
    len = strlen(text);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        log_error("job=%lld attempt=%d cannot write '%s': %s",
            (long long)job->job, job->attempt, tmp, strerror(errno));
        goto out;
    }
    n = write(fd, text, len);
    if (n < 0 || (size_t)n != len) {
        log_error("job=%lld attempt=%d cannot write '%s': %s",
            (long long)job->job, job->attempt, tmp,
            n < 0 ? strerror(errno) : "short write");
        close(fd);
        unlink(tmp);
        goto out;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        log_error("job=%lld attempt=%d cannot rename '%s': %s",
            (long long)job->job, job->attempt, tmp, strerror(errno));
        unlink(tmp);
    }
out:
    free(text);
    free(tmp);
    free(path);
}

void
proc_state_remove(const struct proc_job *job)
{
    char *path = proc_state_path(job, "");

    if (unlink(path) < 0 && errno != ENOENT)
        log_error("job=%lld attempt=%d cannot remove '%s': %s",
            (long long)job->job, job->attempt, path, strerror(errno));
    free(path);
}

static int
proc_state_read(const char *path, char **text, size_t *len)
{
    struct stat st;
    ssize_t n;
    size_t got = 0;
    int fd, rc = 0;

    *text = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    if (st.st_size > (off_t)PROC_STATE_MAX_BYTES) {
        rc = -EFBIG;
        goto out;
    }
    *text = xmalloc((size_t)st.st_size + 1);
    while (got < (size_t)st.st_size) {
        n = read(fd, *text + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    (*text)[got] = '\0';
    *len = got;
out:
    close(fd);
    if (rc < 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* Restore one rank from its record; returns whether it is still running. */
static int
proc_state_adopt_rank(struct proc_rank *r, const cJSON *o, struct err *err)
{
    struct proc_job *job = r->job;
    char *state = NULL;
    int64_t rank, local_rank, pid, proc_start, start_ms, end_ms, code, sig;
    enum proto_rank_state st;
    uint64_t now_start;
    int rc;

    rank = local_rank = pid = proc_start = start_ms = end_ms = sig = 0;
    code = -1;
    if ((rc = jsonx_get_int(o, "rank", true, 0, INT32_MAX, &rank, err))
        || (rc = jsonx_get_int(o, "local_rank", true, 0, INT32_MAX,
                &local_rank, err))
        || (rc = jsonx_get_str(o, "state", true, 16, &state, err))
        || (rc = jsonx_get_int(o, "pid", true, 0, INT32_MAX, &pid, err))
        || (rc = jsonx_get_int(o, "proc_start", false, 0, INT64_MAX,
                &proc_start, err))
        || (rc = jsonx_get_int(o, "start_ms", false, 0, INT64_MAX,
                &start_ms, err))
        || (rc = jsonx_get_int(o, "end_ms", false, 0, INT64_MAX, &end_ms,
                err))
        || (rc = jsonx_get_int(o, "exit_code", false, -1, 255, &code, err))
        || (rc = jsonx_get_int(o, "signal", false, 0, 128, &sig, err)))
        goto out;
    if (proto_rank_state_parse(state, &st) < 0) {
        rc = err_set(err, -EINVAL, "unknown rank state '%s'", state);
        goto out;
    }
    r->rank = (int)rank;
    r->local_rank = (int)local_rank;
    r->pid = (int)pid;
    r->proc_start = (uint64_t)proc_start;
    r->start_ms = start_ms;
    r->out_path = proc_log_path(job->pt, job->job, job->attempt, r->rank,
        "out");
    r->err_path = proc_log_path(job->pt, job->job, job->attempt, r->rank,
        "err");
    logship_file_init(&r->out, r->out_path);
    logship_file_init(&r->err, r->err_path);

    if (st == PROTO_RANK_RUNNING || st == PROTO_RANK_PENDING) {
        now_start = proc_pid_start_time(r->pid);
        if (now_start != 0
            && (r->proc_start == 0 || now_start == r->proc_start)) {
            r->state = PROTO_RANK_RUNNING;
            r->adopted = true;
            log_info("job=%lld attempt=%d rank=%d pid=%d adopted (still "
                "running)", (long long)job->job, job->attempt, r->rank,
                r->pid);
            goto out;
        }
        r->state = PROTO_RANK_LOST;
        r->end_ms = timeid_now_ms();
        r->exit_code = -1;
        r->signal = 0;
        log_info("job=%lld attempt=%d rank=%d pid=%d lost (ended while no "
            "agent ran; exit status unknown)", (long long)job->job,
            job->attempt, r->rank, r->pid);
    } else {
        r->state = st;
        r->end_ms = end_ms;
        r->exit_code = (int)code;
        r->signal = (int)sig;
    }
    r->stderr_tail = proc_read_tail(r->err_path, PROTO_TAIL_MAX);
out:
    free(state);
    return rc;
}

static int
proc_state_adopt_one(struct proc_table *pt, const char *path,
    struct err *err)
{
    static const char *const keys[] = { "version", "job", "attempt",
        "ranks", NULL };
    struct proc_job *job;
    const cJSON *ranks, *item;
    cJSON *root = NULL;
    int64_t jobid, attempt;
    char *text = NULL;
    size_t len = 0, n, i;
    int rc;

    if ((rc = proc_state_read(path, &text, &len)) < 0)
        return err_set(err, rc, "cannot read: %s", strerror(-rc));
    if ((rc = jsonx_parse(text, len, &root, err)) < 0)
        goto out;
    if ((rc = jsonx_check_keys(root, keys, err))
        || (rc = jsonx_check_version(root, 1, err))
        || (rc = jsonx_get_int(root, "job", true, 1, INT64_MAX, &jobid, err))
        || (rc = jsonx_get_int(root, "attempt", true, 1, INT32_MAX, &attempt,
                err)))
        goto out;
    ranks = cJSON_GetObjectItemCaseSensitive(root, "ranks");
    if (!cJSON_IsArray(ranks)) {
        rc = err_set(err, -EINVAL, "field 'ranks': must be an array");
        goto out;
    }
    n = (size_t)cJSON_GetArraySize(ranks);
    job = proc_job_new(pt, jobid, (int)attempt, n);
    /* Listed in the register status; the scheduler's answer decides. */
    job->desired = true;
    i = 0;
    cJSON_ArrayForEach(item, ranks) {
        if ((rc = proc_state_adopt_rank(&job->ranks[i], item, err)) < 0) {
            /* Keep what the other ranks say; this one is lost. */
            log_warn("job=%lld attempt=%d rank entry %zu in '%s': %s",
                (long long)jobid, (int)attempt, i, path, err->msg);
            job->ranks[i].state = PROTO_RANK_LOST;
            job->ranks[i].exit_code = -1;
            rc = 0;
        }
        i++;
    }
    for (i = 0; i < job->nranks && job->ranks[i].state != PROTO_RANK_RUNNING;
         i++)
        ;
    if (i == job->nranks)
        job->finished_ms = timeid_mono_ms();
    proc_state_save(job);
out:
    cJSON_Delete(root);
    free(text);
    return rc;
}

void
proc_state_adopt(struct proc_table *pt)
{
    const char *dir = proc_state_dir(pt);
    struct err err = { 0 };
    struct dirent *de;
    char *path;
    size_t len;
    DIR *d;

    d = opendir(dir);
    if (d == NULL) {
        log_error("cannot read '%s': %s", dir, strerror(errno));
        return;
    }
    while ((de = readdir(d)) != NULL) {
        len = strlen(de->d_name);
        path = xasprintf("%s/%s", dir, de->d_name);
        if (len > 9 && strcmp(de->d_name + len - 9, ".json.tmp") == 0) {
            unlink(path);       /* an interrupted save */
        } else if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0) {
            err_clear(&err);
            if (proc_state_adopt_one(pt, path, &err) < 0) {
                log_error("cannot adopt '%s': %s (removing it)", path,
                    err.msg);
                unlink(path);
            }
        }
        free(path);
    }
    closedir(d);
}
