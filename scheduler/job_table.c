/*
 * job_table.c - the table of unfinished jobs: by id, the queue, per user
 *
 * job.h says what the table keeps. The jobs by id are an itab. The queue
 * is an array of classes in queue order (RESTARTING before the rest, then
 * higher priority first), each class a doubly linked list of its jobs in
 * id order: ids grow, so a new submission goes at the tail of its class;
 * a job that comes back to the queue (requeued, restarting) is walked
 * into place from the tail, which costs O(jobs of its class behind it)
 * once. Classes are found by binary search and stay, empty, until the
 * table is released: priorities in use are few.
 *
 * The per-user counts are what quota.h's limits compare with, kept here
 * so that a submission costs no walk over every job.
 */
#include "scheduler/job.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

/* A class's jobs in id order, in two lists: those the pass walks, and
 * those parked (job_table_park). */
struct job_qlist {
    struct job *head, *tail;
};

struct job_qclass {
    bool restarting;
    int priority;
    struct job_qlist live;
    struct job_qlist parked;
};

/* ---- by id -------------------------------------------------------------- */

static size_t
job_hash(int64_t id)
{
    return (size_t)(((uint64_t)id * 0x9e3779b97f4a7c15ULL) >> 17);
}

static struct job *
job_of(const struct itab_link *l)
{
    return l ? container_of(l, struct job, link) : NULL;
}

static bool
job_has_id(const struct itab_link *l, const void *id)
{
    return job_of(l)->id == *(const int64_t *)id;
}

static void
job_free_link(struct itab_link *l)
{
    job_destroy(job_of(l));
}

/* ---- per user ----------------------------------------------------------- */

static size_t
user_hash(const char *name)
{
    uint64_t h = 1469598103934665603ULL;

    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)h;
}

static struct job_user *
user_of(const struct itab_link *l)
{
    return l ? container_of(l, struct job_user, link) : NULL;
}

static bool
user_has_name(const struct itab_link *l, const void *name)
{
    return strcmp(user_of(l)->name, name) == 0;
}

static void
user_free_link(struct itab_link *l)
{
    struct job_user *u = user_of(l);

    free(u->name);
    free(u);
}

static struct job_user *
user_find(const struct job_table *t, const char *name)
{
    return user_of(itab_find(&t->users, user_hash(name), user_has_name, name));
}

/* Count (add) or uncount job under flags in its user's entry. */
static void
user_count(struct job_table *t, const struct job *job, unsigned flags, bool add)
{
    struct job_user *u;

    const char *name = job->user ? job->user : "";

    if (flags == 0)
        return;
    u = user_find(t, name);
    if (u == NULL) {
        if (!add)
            return;
        u = xcalloc(1, sizeof(*u));
        u->name = xstrdup(name);
        itab_add(&t->users, &u->link, user_hash(u->name));
    }
    if (flags & JOB_COUNT_QUEUED)
        u->queued = add ? u->queued + 1 : u->queued - 1;
    if (flags & JOB_COUNT_RUNNING)
        u->running = add ? u->running + 1 : u->running - 1;
    if (u->queued == 0 && u->running == 0) {
        itab_remove(&t->users, &u->link);
        user_free_link(&u->link);
    }
}

/* What job counts under now. */
static unsigned
job_count_flags(const struct job *job)
{
    unsigned f = 0;

    if (job->state == PROTO_JOB_PENDING || job_held(job))
        f |= JOB_COUNT_QUEUED;
    if (job->state == PROTO_JOB_PLACED || job->state == PROTO_JOB_RUNNING ||
        job->state == PROTO_JOB_RESTARTING)
        f |= JOB_COUNT_RUNNING;
    return f;
}

struct job_user
job_table_user(const struct job_table *t, const char *user)
{
    const struct job_user *u = user_find(t, user);
    struct job_user out = { 0 };

    if (u) {
        out.queued = u->queued;
        out.running = u->running;
    }
    return out;
}

/* ---- the queue ---------------------------------------------------------- */

/* Negative when class (restarting, priority) a goes before b. */
static int
class_cmp(bool ra, int pa, bool rb, int pb)
{
    if (ra != rb)
        return ra ? -1 : 1;
    return pa != pb ? (pa > pb ? -1 : 1) : 0;
}

bool
job_queue_before(const struct job *a, const struct job *b)
{
    int c = class_cmp(a->state == PROTO_JOB_RESTARTING, a->spec.priority,
        b->state == PROTO_JOB_RESTARTING, b->spec.priority);

    return c != 0 ? c < 0 : a->id < b->id;
}

/* The class of (restarting, priority), created at its place if new. */
static struct job_qclass *
class_get(struct job_table *t, bool restarting, int priority)
{
    size_t lo = 0, hi = t->nclasses;
    struct job_qclass *c;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = class_cmp(t->classes[mid]->restarting,
            t->classes[mid]->priority, restarting, priority);

        if (r == 0)
            return t->classes[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    t->classes = xreallocarray(t->classes, t->nclasses + 1,
        sizeof(*t->classes));
    memmove(t->classes + lo + 1, t->classes + lo,
        (t->nclasses - lo) * sizeof(*t->classes));
    c = xcalloc(1, sizeof(*c));
    c->restarting = restarting;
    c->priority = priority;
    t->classes[lo] = c;
    t->nclasses++;
    return c;
}

static struct job_qlist *
queue_list(struct job *job)
{
    return job->qparked ? &job->qclass->parked : &job->qclass->live;
}

static void
queue_unlink(struct job_table *t, struct job *job)
{
    struct job_qlist *l;

    if (job->qclass == NULL)
        return;
    l = queue_list(job);
    if (job->qprev)
        job->qprev->qnext = job->qnext;
    else
        l->head = job->qnext;
    if (job->qnext)
        job->qnext->qprev = job->qprev;
    else
        l->tail = job->qprev;
    job->qprev = job->qnext = NULL;
    job->qclass = NULL;
    job->qparked = false;
    t->nqueued--;
}

/* Link job into list l of class c in id order, from the tail. */
static void
queue_link_list(struct job_qlist *l, struct job *job)
{
    struct job *after = l->tail;

    while (after && after->id > job->id)
        after = after->qprev;
    job->qprev = after;
    job->qnext = after ? after->qnext : l->head;
    if (job->qnext)
        job->qnext->qprev = job;
    else
        l->tail = job;
    if (after)
        after->qnext = job;
    else
        l->head = job;
}

static void
queue_link(struct job_table *t, struct job_qclass *c, struct job *job)
{
    job->qclass = c;
    job->qparked = false;
    queue_link_list(&c->live, job);
    t->nqueued++;
}

void
job_table_park(struct job_table *t, struct job *job)
{
    struct job_qclass *c = job->qclass;

    if (c == NULL || job->qparked)
        return;
    queue_unlink(t, job);
    job->qclass = c;
    job->qparked = true;
    queue_link_list(&c->parked, job);
    t->nqueued++;
    t->nparked++;
}

/* Merge the parked list of c into its live one, both in id order. */
static void
queue_unpark_class(struct job_qclass *c)
{
    struct job *a = c->live.head, *b = c->parked.head, *prev = NULL;

    c->live.head = c->live.tail = NULL;
    c->parked.head = c->parked.tail = NULL;
    while (a || b) {
        struct job *j;

        if (b == NULL || (a && a->id < b->id)) {
            j = a;
            a = a->qnext;
        } else {
            j = b;
            b = b->qnext;
            j->qparked = false;
        }
        j->qprev = prev;
        j->qnext = NULL;
        if (prev)
            prev->qnext = j;
        else
            c->live.head = j;
        prev = j;
    }
    c->live.tail = prev;
}

void
job_table_unpark_all(struct job_table *t)
{
    if (t->nparked == 0)
        return;
    for (size_t i = 0; i < t->nclasses; i++)
        queue_unpark_class(t->classes[i]);
    t->nparked = 0;
}

void
job_table_sync(struct job_table *t, struct job *job)
{
    bool queued = proto_job_state_queued(job->state);
    bool restarting = job->state == PROTO_JOB_RESTARTING;
    unsigned flags = job_count_flags(job);
    struct job_qclass *c = job->qclass;

    if (flags != job->counted) {
        user_count(t, job, job->counted & ~flags, false);
        user_count(t, job, flags & ~job->counted, true);
        job->counted = flags;
    }
    if (c && queued && c->restarting == restarting &&
        c->priority == job->spec.priority && !job->qparked)
        return;
    if (job->qparked)
        t->nparked--;
    queue_unlink(t, job);
    if (queued)
        queue_link(t, class_get(t, restarting, job->spec.priority), job);
}

struct job *
job_queue_first(const struct job_table *t)
{
    for (size_t i = 0; i < t->nclasses; i++) {
        if (t->classes[i]->live.head)
            return t->classes[i]->live.head;
    }
    return NULL;
}

struct job *
job_queue_next(const struct job_table *t, const struct job *job)
{
    size_t lo = 0, hi = t->nclasses;

    if (job->qnext || job->qclass == NULL || job->qparked)
        return job->qnext;
    /* The first job of the next class that has one. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (class_cmp(t->classes[mid]->restarting, t->classes[mid]->priority,
                job->qclass->restarting, job->qclass->priority) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < t->nclasses; i++) {
        if (t->classes[i]->live.head)
            return t->classes[i]->live.head;
    }
    return NULL;
}

size_t
job_queue_count(const struct job_table *t)
{
    return t->nqueued;
}

/* ---- the table ---------------------------------------------------------- */

void
job_table_init(struct job_table *t)
{
    memset(t, 0, sizeof(*t));
    itab_init(&t->t);
    itab_init(&t->users);
}

void
job_table_release(struct job_table *t)
{
    itab_release(&t->t, job_free_link);
    itab_release(&t->users, user_free_link);
    for (size_t i = 0; i < t->nclasses; i++)
        free(t->classes[i]);
    free(t->classes);
    t->classes = NULL;
    t->nclasses = 0;
    t->nqueued = 0;
    t->nparked = 0;
}

void
job_table_add(struct job_table *t, struct job *job)
{
    itab_add(&t->t, &job->link, job_hash(job->id));
    job->counted = 0;
    job->qclass = NULL;
    job_table_sync(t, job);
}

void
job_table_remove(struct job_table *t, struct job *job)
{
    user_count(t, job, job->counted, false);
    job->counted = 0;
    if (job->qparked)
        t->nparked--;
    queue_unlink(t, job);
    itab_remove(&t->t, &job->link);
}

struct job *
job_table_find(const struct job_table *t, int64_t id)
{
    return job_of(itab_find(&t->t, job_hash(id), job_has_id, &id));
}

struct job *
job_table_first(const struct job_table *t)
{
    return job_of(t->t.head);
}

struct job *
job_table_next(const struct job *job)
{
    return job_of(job->link.next);
}

struct job *
job_table_last(const struct job_table *t)
{
    return job_of(t->t.tail);
}

struct job *
job_table_prev(const struct job *job)
{
    return job_of(job->link.prev);
}

size_t
job_table_count(const struct job_table *t)
{
    return t->t.count;
}
