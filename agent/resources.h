/*
 * resources.h - what a node offers: CPUs, memory, GPUs, labels
 *
 * Detection and the parsers of the `gpus` and `labels` settings, for
 * agentd_settings_load; the result is struct proto_resources (common/proto.h).
 * Called once at start-up, before the loop runs.
 */
#ifndef AGENT_RESOURCES_H
#define AGENT_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/proto.h"

/*
 * GPU ids from the `gpus` setting: "auto" counts the devices named
 * nvidia<digits> in devdir (normally "/dev") and offers ids 0..n-1,
 * "none" or "" offers none, anything else is an id list like "0-7" or
 * "0,2,4". *ids: caller frees (NULL when n is 0). -EINVAL with err set.
 */
int resources_gpus_parse(const char *spec, const char *devdir, int **ids,
    size_t *n, struct err *err);

/*
 * Labels from "k=v,k2=v2" (spaces around entries are ignored; "" gives
 * none). Keys follow the name rule [A-Za-z0-9._-]{1,128}; values are up to
 * 256 bytes without ',' ; keys must be unique; at most PROTO_LABELS_MAX.
 * *kv: caller frees with proto_kv_array_free. -EINVAL with err set.
 */
int resources_labels_parse(const char *spec, struct proto_kv **kv, size_t *n,
    struct err *err);

/* CPUs this process may run on (sched_getaffinity), at least 1. */
int resources_detect_cpus(void);

/* MemTotal from meminfo_path (normally "/proc/meminfo") in MiB; 0 when
 * unreadable. */
int64_t resources_detect_memory_mb(const char *meminfo_path);

#endif
