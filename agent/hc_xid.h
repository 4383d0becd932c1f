/*
 * hc_xid.h - what an NVIDIA XID means for the node: the severity table
 *
 * The table is data: hc_xid.c holds the built-in one (docs/health.md shows
 * it), and a table file (`lockstep-check kmsg --xid-table FILE`) overrides
 * or adds entries without a rebuild.
 */
#ifndef AGENT_HC_XID_H
#define AGENT_HC_XID_H

#include "common/proto.h"

struct hc_xid {
    int xid;
    enum proto_check_status status; /* PASS = a job's event, not the node's */
    const char *what;
};

/* A table: the built-in entries plus a file's. */
struct hc_xid_table {
    struct hc_xid *v;
    size_t n;
};

/* The built-in table. */
void hc_xid_table_init(struct hc_xid_table *t);

/*
 * Reads a table file: '#' comments, blank lines, and lines
 * "XID STATUS [WHAT...]" (STATUS one of PASS, WARN, FAIL), each replacing
 * or adding the entry of XID. Returns 0 or a negative errno with *why set
 * (caller frees).
 */
int hc_xid_table_load(struct hc_xid_table *t, const char *path, char **why);

/* The entry of xid; NULL when the table does not name it (the caller
 * reports it as WARN, "unclassified"). */
const struct hc_xid *hc_xid_lookup(const struct hc_xid_table *t, int xid);

void hc_xid_table_release(struct hc_xid_table *t);

#endif
