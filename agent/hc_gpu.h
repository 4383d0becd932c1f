/*
 * hc_gpu.h - the GPU check of lockstep-check: nvidia-smi's answers judged
 *
 * `lockstep-check gpu --nvidia-smi PATH --expect N` runs
 *
 *   PATH --query-gpu=HC_GPU_FIELDS --format=csv,noheader,nounits
 *   PATH --query-remapped-rows=HC_GPU_REMAP_FIELDS
 * --format=csv,noheader,nounits
 *
 * each as a child with an inner deadline (--timeout-ms, for both together),
 * and judges the text with hc_gpu_parse. docs/health.md has the codes.
 */
#ifndef AGENT_HC_GPU_H
#define AGENT_HC_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "hc_res.h"

/* The throttle fields are named clocks_event_reasons.* by newer drivers and
 * clocks_throttle_reasons.* by older ones; %s is one of the two. */
#define HC_GPU_FIELDS_FMT                                                      \
    "index,pci.bus_id,uuid,ecc.mode.current,"                                  \
    "ecc.errors.uncorrected.volatile.total,retired_pages.pending,"             \
    "%s.hw_thermal_slowdown,%s.hw_power_brake_slowdown,temperature.gpu,"       \
    "power.draw"
#define HC_GPU_NFIELDS 10
#define HC_GPU_REMAP_FIELDS                                                    \
    "gpu_bus_id,remapped_rows.pending,remapped_rows.failure"

/*
 * How a child ended, as hc_gpu_parse takes it: >= 0 its exit code, or
 * HC_EXIT_NOEXEC (it could not be started: missing, not executable),
 * HC_EXIT_TIMEOUT (killed at the inner deadline) or HC_EXIT_SIGNAL(n)
 * (killed by signal n).
 */
#define HC_EXIT_NOEXEC (-1)
#define HC_EXIT_TIMEOUT (-2)
#define HC_EXIT_SIGNAL(n) (-100 - (n))

struct hc_gpu_opts {
    int expect;         /* GPUs the node must have */
    int temp_warn;      /* degrees C: WARN at or above (default 90) */
    int temp_fail;      /* degrees C: FAIL at or above (default 100) */
    bool allow_ecc_off; /* ECC disabled or unsupported is WARN, not FAIL */
};

/*
 * Judges nvidia-smi's answers; pure (no I/O). text/len: the --query-gpu
 * output (stdout; with stderr appended when exit_status != 0), ended by
 * exit_status. remap/remap_len/remap_exit: the --query-remapped-rows
 * answer, or remap NULL when it was not asked. Appends results of check
 * "gpu" to out: one per GPU (scope gpu:N) and the count (scope node), or
 * one node result when the tool itself failed. Never a PASS for a GPU
 * whose required fields (ECC mode and uncorrectable count) are unknown.
 */
void hc_gpu_parse(const char *text, size_t len, int exit_status,
    const char *remap, size_t remap_len, int remap_exit,
    const struct hc_gpu_opts *opts, struct hc_res *out);

/* The subcommand: `gpu` of lockstep-check (argv after "gpu"). Returns 0,
 * or 2 on a usage error (message on stderr). */
int hc_gpu_run(int argc, char **argv, cJSON *out);

#endif
