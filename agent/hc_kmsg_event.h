/*
 * hc_kmsg_event.h - the kernel log's known events, recognised before any
 * line is judged by its template
 *
 * NVIDIA XID (severity from the XID table), NVSwitch SXid, "fallen off the
 * bus", EDAC corrected/uncorrected, machine checks, PCIe AER, hung tasks,
 * soft lockups, RCU stalls, oopses and kernel warnings, OOM kills. Some
 * start a block (a call trace, an OOM report): the lines that follow are
 * part of the event until its end marker, at most HC_KEV_BLOCK_LINES
 * records or HC_KEV_BLOCK_US of kernel time.
 */
#ifndef AGENT_HC_KMSG_EVENT_H
#define AGENT_HC_KMSG_EVENT_H

#include <stdbool.h>

#include "common/proto.h"
#include "hc_xid.h"

#define HC_KEV_BLOCK_LINES 200
#define HC_KEV_BLOCK_US 5000000

struct hc_kev {
    bool finding; /* raises (or counts) a finding; false: a known line
                   * that is only part of an event */
    enum proto_check_status status;
    char code[PROTO_CHECK_CODE_MAX];
    char scope[PROTO_CHECK_SCOPE_MAX];
    bool block_start; /* the lines that follow belong to it */
    bool block_end;   /* it ends the open block */
};

/* Whether msg (a kernel-facility message) is a known event; fills ev. */
bool hc_kmsg_event(const char *msg, const struct hc_xid_table *xids,
    struct hc_kev *ev);

/* Whether msg ends an open block (end of a call trace or an OOM report). */
bool hc_kmsg_block_end(const char *msg);

#endif
