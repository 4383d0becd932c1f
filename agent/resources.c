/*
 * resources.c - what a node offers: CPUs, memory, GPUs, labels
 *
 * Detection reads the kernel's view (the CPU affinity mask, /proc/meminfo,
 * the NVIDIA device nodes); the parsers turn the `gpus` and `labels`
 * settings into what the status report carries. Everything here is called
 * once at start-up, before the loop runs.
 */
#include "agent/resources.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"

#define RESOURCES_LABEL_VALUE_MAX 256

/* Count device nodes named nvidia<digits> ("nvidiactl", "nvidia-uvm" and
 * friends are not GPUs). */
static int
resources_count_nvidia(const char *devdir, size_t *n, struct err *err)
{
    struct dirent *de;
    const char *p;
    DIR *d;

    *n = 0;
    d = opendir(devdir);
    if (d == NULL) {
        if (errno == ENOENT)
            return 0;
        return err_set(err, -errno, "cannot read '%s': %s", devdir,
            strerror(errno));
    }
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "nvidia", 6) != 0)
            continue;
        p = de->d_name + 6;
        if (*p == '\0')
            continue;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p == '\0')
            (*n)++;
    }
    closedir(d);
    return 0;
}

int
resources_gpus_parse(const char *spec, const char *devdir, int **ids, size_t *n,
    struct err *err)
{
    size_t count, i;
    int rc;

    *ids = NULL;
    *n = 0;
    if (spec == NULL || spec[0] == '\0' || strcmp(spec, "none") == 0)
        return 0;
    if (strcmp(spec, "auto") == 0) {
        rc = resources_count_nvidia(devdir, &count, err);
        if (rc < 0)
            return rc;
        if (count > PROTO_GPUS_MAX)
            count = PROTO_GPUS_MAX;
        if (count == 0)
            return 0;
        *ids = xcalloc(count, sizeof(**ids));
        for (i = 0; i < count; i++)
            (*ids)[i] = (int)i;
        *n = count;
        return 0;
    }
    rc = proto_parse_id_list(spec, ids, n, err);
    if (rc < 0)
        return err_prefix(err, "gpus: ");
    if (*n > PROTO_GPUS_MAX) {
        free(*ids);
        *ids = NULL;
        *n = 0;
        return err_set(err, -EINVAL, "gpus '%s': more than %d ids", spec,
            PROTO_GPUS_MAX);
    }
    return 0;
}

/* Trim spaces in place; returns the first non-space character. */
static char *
resources_trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int
resources_labels_parse(const char *spec, struct proto_kv **kv, size_t *n,
    struct err *err)
{
    struct proto_kv *out = NULL;
    char *copy, *entry, *save = NULL, *item, *eq, *k, *v;
    size_t count = 0, i;
    int rc = 0;

    *kv = NULL;
    *n = 0;
    if (spec == NULL)
        return 0;
    copy = xstrdup(spec);
    for (entry = strtok_r(copy, ",", &save); entry != NULL;
         entry = strtok_r(NULL, ",", &save)) {
        item = resources_trim(entry);
        if (item[0] == '\0')
            continue;
        eq = strchr(item, '=');
        if (eq == NULL) {
            rc = err_set(err, -EINVAL, "label '%s': expected key=value", item);
            goto out;
        }
        *eq = '\0';
        k = resources_trim(item);
        v = resources_trim(eq + 1);
        if (!proto_valid_name(k, PROTO_NAME_MAX)) {
            rc = err_set(err, -EINVAL,
                "label key '%s': must be 1..%d of [A-Za-z0-9._-]", k,
                PROTO_NAME_MAX);
            goto out;
        }
        if (strlen(v) > RESOURCES_LABEL_VALUE_MAX) {
            rc = err_set(err, -EINVAL, "label '%s': value over %d bytes", k,
                RESOURCES_LABEL_VALUE_MAX);
            goto out;
        }
        for (i = 0; i < count; i++) {
            if (strcmp(out[i].key, k) == 0) {
                rc = err_set(err, -EINVAL, "label '%s' given twice", k);
                goto out;
            }
        }
        if (count == PROTO_LABELS_MAX) {
            rc = err_set(err, -EINVAL, "more than %d labels", PROTO_LABELS_MAX);
            goto out;
        }
        out = xreallocarray(out, count + 1, sizeof(*out));
        out[count].key = xstrdup(k);
        out[count].value = xstrdup(v);
        count++;
    }
out:
    free(copy);
    if (rc < 0) {
        proto_kv_array_free(out, count);
        return rc;
    }
    *kv = out;
    *n = count;
    return 0;
}

int
resources_detect_cpus(void)
{
    cpu_set_t set;
    long n;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int64_t
resources_detect_memory_mb(const char *meminfo_path)
{
    char line[256];
    int64_t kb = 0;
    FILE *f;

    f = fopen(meminfo_path, "re");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemTotal: %" SCNd64 " kB", &kb) == 1)
            break;
        kb = 0;
    }
    fclose(f);
    return kb > 0 ? kb / 1024 : 0;
}
