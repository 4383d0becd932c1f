/*
 * repl_seed.c - lockstepd --seed-from: the state a new replica set
 * starts from (docs/operations.md "Replicas", "From one scheduler to
 * replicas")
 *
 * The replica that bootstraps the set (it is listed in `replicas`)
 * reads the seed before anything starts: a backup or a stopped single
 * scheduler's lockstep.db, checked and brought to this binary's schema
 * by db_seed_image. repl.c proposes it as the set's first entry once
 * this replica is elected. It bootstraps the set with itself the only
 * voter and the other replicas standbys, so it leads at once; the
 * others start without bootstrapping (an empty `replicas`), receive the
 * seed from it as they receive any entry or snapshot, and are made
 * voters one by one before it serves (repl.c, repl_promote_step).
 *
 * Threading: main's thread, before the loop runs.
 */
#include "scheduler/repl.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/db.h"

int
repl_seed_load(struct repl_opts *o, const char *path, struct err *err)
{
    bool listed = false;
    int rc;

    if (o->id == 0)
        return err_set(err, -EINVAL,
            "--seed-from needs replica_id: a single scheduler restores a "
            "backup by putting it in place of its lockstep.db");
    for (size_t i = 0; i < o->npeers; i++)
        listed = listed || o->peers[i].id == o->id;
    if (!listed)
        return err_set(err, -EINVAL,
            "--seed-from: replica %" PRIu64 " is not in `replicas`: only "
            "the replica that bootstraps the set loads a seed",
            o->id);
    rc = db_seed_image(path, &o->seed, &o->seed_len, err);
    if (rc < 0)
        return err_prefix(err, "--seed-from: ");
    o->seed_path = path;
    return 0;
}

char **
repl_seed_argv(char **argv)
{
    size_t n = 0, k = 0;
    char **out;

    while (argv[n])
        n++;
    out = xcalloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[i], "--seed-from") == 0 && i + 1 < n) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--seed-from=", 12) == 0)
            continue;
        out[k++] = argv[i];
    }
    return out;
}
