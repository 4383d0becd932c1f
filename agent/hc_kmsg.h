/*
 * hc_kmsg.h - the kernel log check of lockstep-check
 *
 * `lockstep-check kmsg --path P --state-dir DIR [--allowlist F]
 * [--baseline F] [--xid-table F] [--boot-id-file F] [--max-level N]
 * [--learn FILE]` reads the records of /dev/kmsg (or a regular file in its
 * format) that are newer than its cursor, recognises the known events
 * (hc_kmsg_event.h), normalises every other record at --max-level or more
 * severe to a template (hc_kmsg_norm.h) and raises one WARN per template
 * that neither the allowlist nor the node's baseline holds, with a count.
 *
 * DIR/kmsg-state.json keeps, for the current boot, the last sequence
 * number read and the open findings with their counts; it is replaced
 * atomically after each run, and a new boot id starts it afresh. Every run
 * reports every open finding of the boot (the same counts when nothing new
 * came), plus one kmsg.scan result about the reading itself.
 */
#ifndef AGENT_HC_KMSG_H
#define AGENT_HC_KMSG_H

#include <cjson/cJSON.h>

#include "hc_res.h"

#define HC_KMSG_FINDINGS_MAX 256 /* open findings kept per boot */

struct hc_kmsg_opts {
    const char *path;      /* /dev/kmsg or a file in its format */
    const char *state_dir; /* where kmsg-state.json lives */
    const char *allowlist; /* template file, or NULL */
    const char *baseline;  /* template file, or NULL (missing = empty) */
    const char *xid_table; /* XID table file, or NULL (built-in only) */
    const char *boot_id;   /* the running boot's id */
    int max_level;         /* judge templates of levels 0..max_level */
    const char *learn;     /* write a baseline here instead of judging */
};

/* One run; appends results of check "kmsg" to out. Returns 0, or a
 * negative errno when it could not run at all (also reported in out). */
int hc_kmsg_check(const struct hc_kmsg_opts *o, struct hc_res *out);

/* The subcommand: `kmsg` of lockstep-check (argv after "kmsg"). Returns 0,
 * or 2 on a usage error (message on stderr). */
int hc_kmsg_run(int argc, char **argv, cJSON *out);

#endif
