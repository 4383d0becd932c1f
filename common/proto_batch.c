/*
 * proto_batch.c - many job specs in one request (proto.h)
 *
 * A batch is checked as a whole before anyone acts on it: its own fields,
 * then each job merged with "common" into one spec object, validated by
 * proto_job_spec_from_json. The merge copies common's fields the job
 * lacks and, for "env", common's variables the job's env does not name.
 */
#include "proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "xalloc.h"

bool
proto_job_batch_is(const cJSON *json)
{
    return cJSON_IsObject(json) && cJSON_GetObjectItem(json, "jobs") != NULL;
}

/* Add to obj a copy of every field of from it lacks; for "env" (both
 * objects), every variable its env lacks. */
static void
batch_merge(cJSON *obj, const cJSON *from)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, from) {
        cJSON *have = cJSON_GetObjectItemCaseSensitive(obj, item->string);

        if (have == NULL) {
            cJSON_AddItemToObject(obj, item->string,
                cJSON_Duplicate(item, true));
        } else if (strcmp(item->string, "env") == 0 && cJSON_IsObject(have) &&
                   cJSON_IsObject(item)) {
            const cJSON *kv;

            cJSON_ArrayForEach(kv, item) {
                if (!cJSON_GetObjectItemCaseSensitive(have, kv->string))
                    cJSON_AddItemToObject(have, kv->string,
                        cJSON_Duplicate(kv, true));
            }
        }
    }
}

/* Job i of the batch as a whole spec: its fields, common's, a version. */
static int
batch_one(const cJSON *job, const cJSON *common, size_t i,
    struct proto_job_spec *spec, struct err *err)
{
    cJSON *obj;
    int rc;

    if (!cJSON_IsObject(job))
        return err_set(err, -EINVAL, "jobs[%zu]: must be an object", i);
    obj = cJSON_Duplicate(job, true);
    if (common)
        batch_merge(obj, common);
    if (!cJSON_GetObjectItemCaseSensitive(obj, "version"))
        cJSON_AddNumberToObject(obj, "version", PROTO_VERSION);
    rc = proto_job_spec_from_json(obj, spec, err);
    cJSON_Delete(obj);
    if (rc < 0)
        err_prefix(err, "jobs[%zu]: ", i);
    return rc;
}

int
proto_job_batch_from_json(const cJSON *json, struct proto_job_spec **specs,
    size_t *n, struct err *err)
{
    static const char *const keys[] = { "version", "jobs", "common", NULL };
    const cJSON *jobs, *common, *job;
    struct proto_job_spec *out = NULL;
    size_t count, i = 0;
    int rc;

    *specs = NULL;
    *n = 0;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)))
        return rc;
    jobs = cJSON_GetObjectItemCaseSensitive(json, "jobs");
    common = cJSON_GetObjectItemCaseSensitive(json, "common");
    if (!cJSON_IsArray(jobs))
        return err_set(err, -EINVAL, "field 'jobs': must be an array");
    count = (size_t)cJSON_GetArraySize(jobs);
    if (count < 1 || count > PROTO_BATCH_MAX)
        return err_set(err, -EINVAL,
            "field 'jobs': must have 1 to %d entries (has %zu)",
            PROTO_BATCH_MAX, count);
    if (common && !cJSON_IsObject(common))
        return err_set(err, -EINVAL, "field 'common': must be an object");
    out = xcalloc(count, sizeof(*out));
    cJSON_ArrayForEach(job, jobs) {
        if ((rc = batch_one(job, common, i, &out[i], err)) < 0)
            break;
        i++;
    }
    if (rc < 0) {
        for (size_t k = 0; k < i; k++)
            proto_job_spec_release(&out[k]);
        free(out);
        return rc;
    }
    *specs = out;
    *n = count;
    return 0;
}
