/*
 * cli_specs.c - lockstep submit --specs FILE|-: many jobs in one request
 *
 * FILE (or stdin for "-") holds one job spec per line as JSON objects
 * with the fields of POST /v1/jobs (docs/api.md; "version" may be left
 * out); blank lines and lines starting with '#' are skipped. The options
 * given on the command line (and the submitter's environment and working
 * directory, as for one job) go once, as the batch's "common" fields:
 * every job gets them unless its line sets the field itself ("env":
 * added to, its own variables winning). The jobs go in as few requests as
 * the API allows (PROTO_BATCH_MAX jobs, CLI_SPECS_BODY_MAX bytes of
 * lines each), each all or nothing: the scheduler checks every spec of a
 * request before it submits any, in one transaction.
 *
 * A line that is not a JSON object is refused here, naming the file and
 * line, before anything is sent.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

/* Bytes of spec lines per request: well under the scheduler's default
 * max_body_bytes (1 MiB), leaving room for "common" (the environment). */
#define CLI_SPECS_BODY_MAX (512 * 1024)

/* The lines of file as JSON objects, appended to jobs. */
static int
specs_read(FILE *f, const char *name, cJSON *jobs, struct err *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;

    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        const char *p = line, *end = NULL;
        cJSON *o;

        lineno++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0' || *p == '#')
            continue;
        o = cJSON_ParseWithOpts(p, &end, false);
        while (o && end &&
               (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
            end++;
        if (!cJSON_IsObject(o) || (end && *end != '\0'))
            rc = err_set(err, -EINVAL, "%s:%d: not a JSON object: %.*s", name,
                lineno,
                (int)strcspn(p, "\r\n") < 60 ? (int)strcspn(p, "\r\n") : 60, p);
        if (rc == 0)
            cJSON_AddItemToArray(jobs, o);
        else
            cJSON_Delete(o);
    }
    if (rc == 0 && ferror(f))
        rc = err_set(err, -EIO, "cannot read '%s': %s", name, strerror(errno));
    free(line);
    return rc;
}

/* The batch's common fields: the options' spec, less what is per job. */
static cJSON *
specs_common(const struct proto_job_spec *spec)
{
    cJSON *c = proto_job_spec_to_json(spec);

    cJSON_DeleteItemFromObjectCaseSensitive(c, "version");
    cJSON_DeleteItemFromObjectCaseSensitive(c, "argv");
    return c;
}

/* POST jobs[from..to) with common; their ids appended to ids. */
static int
specs_post(struct cli *cli, cJSON *jobs, int from, int to, const cJSON *common,
    cJSON *ids)
{
    cJSON *body = cJSON_CreateObject(), *chunk = cJSON_CreateArray();
    cJSON *reply = NULL, *item;
    struct cli_resp resp;
    struct err err;
    int rc;

    jsonx_add_int(body, "version", PROTO_VERSION);
    for (int i = from; i < to; i++)
        cJSON_AddItemReferenceToArray(chunk, cJSON_GetArrayItem(jobs, i));
    cJSON_AddItemToObject(body, "jobs", chunk);
    cJSON_AddItemReferenceToObject(body, "common", (cJSON *)common);
    cli_resp_init(&resp);
    rc = cli_call(cli, "POST", "/v1/jobs", body, 0, &resp, &reply, &err);
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(reply, "ids"))
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(item->valuedouble));
    cJSON_Delete(reply);
    cJSON_Delete(body);
    cli_resp_release(&resp);
    return rc;
}

/* "ids 5-1004" when they follow each other, else "ids 5, 9, ...". */
static void
specs_say(const cJSON *ids)
{
    int n = cJSON_GetArraySize(ids);
    double first = n ? cJSON_GetArrayItem(ids, 0)->valuedouble : 0;
    double last = n ? cJSON_GetArrayItem(ids, n - 1)->valuedouble : 0;

    if (n > 0 && last - first == n - 1)
        printf("submitted %d job%s: %.0f-%.0f\n", n, n == 1 ? "" : "s", first,
            last);
    else
        printf("submitted %d jobs\n", n);
}

int
cli_submit_specs(struct cli *cli, const char *file,
    const struct proto_job_spec *spec, bool json)
{
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    cJSON *jobs = cJSON_CreateArray(), *ids = cJSON_CreateArray(), *common;
    int n = 0, from = 0, rc = 0;
    size_t bytes = 0;
    struct err err;

    if (f == NULL) {
        rc = cli_fail(cli, "cannot open '%s': %s", file, strerror(errno));
        goto out;
    }
    rc = specs_read(f, f == stdin ? "stdin" : file, jobs, &err);
    if (f != stdin)
        fclose(f);
    if (rc < 0 || (n = cJSON_GetArraySize(jobs)) == 0) {
        rc = cli_fail(cli, "%s", rc < 0 ? err.msg : "no job spec given");
        goto out;
    }
    common = specs_common(spec);
    for (int i = 0; i < n && rc == 0; i++) {
        char *text = jsonx_print(cJSON_GetArrayItem(jobs, i));

        bytes += strlen(text);
        free(text);
        if (i + 1 == n || i + 1 - from == PROTO_BATCH_MAX ||
            bytes >= CLI_SPECS_BODY_MAX) {
            rc = specs_post(cli, jobs, from, i + 1, common, ids);
            from = i + 1;
            bytes = 0;
        }
    }
    cJSON_Delete(common);
    if (rc < 0) {
        if (cJSON_GetArraySize(ids) > 0)
            cli_warn(cli,
                "%d job(s) before the refused request were "
                "submitted; the rest were not",
                cJSON_GetArraySize(ids));
        rc = CLI_EXIT_FAIL;
    } else if (json) {
        cJSON *o = cJSON_CreateObject();
        char *text;

        jsonx_add_int(o, "count", cJSON_GetArraySize(ids));
        cJSON_AddItemToObject(o, "ids", ids);
        ids = NULL;
        text = cJSON_Print(o);
        printf("%s\n", text);
        cJSON_free(text);
        cJSON_Delete(o);
    } else {
        specs_say(ids);
    }
out:
    cJSON_Delete(ids);
    cJSON_Delete(jobs);
    return rc;
}
