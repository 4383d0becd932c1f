/*
 * hc_kmsg_event.c - the known events of the kernel log (see hc_kmsg_event.h)
 *
 * Matching is by fixed substrings of the kernel's own format strings, so a
 * user-space process cannot forge one: the caller passes only records of
 * the kernel facility.
 */
#include "hc_kmsg_event.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
set(struct hc_kev *ev, enum proto_check_status st, const char *code,
    const char *scope)
{
    ev->finding = true;
    ev->status = st;
    snprintf(ev->code, sizeof(ev->code), "%s", code);
    snprintf(ev->scope, sizeof(ev->scope), "%s", scope ? scope : "node");
}

/* "pci:" and the first PCI address (dddd:bb:dd[.f]) in s, lower case;
 * "node" when there is none. */
static void
pci_scope(const char *s, char *out, size_t cap)
{
    for (const char *p = s; *p; p++) {
        size_t n = 0;

        while (isxdigit((unsigned char)p[n]) || p[n] == ':' || p[n] == '.')
            n++;
        if (n >= 10 && p[4] == ':' && p[7] == ':' &&
            (p == s || !isalnum((unsigned char)p[-1]))) {
            snprintf(out, cap, "pci:%.*s", (int)(n > 12 ? 12 : n), p);
            for (char *q = out; *q; q++)
                *q = (char)tolower((unsigned char)*q);
            return;
        }
    }
    snprintf(out, cap, "node");
}

/* NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus. */
static bool
xid(const char *msg, const struct hc_xid_table *xids, struct hc_kev *ev)
{
    const char *p = strstr(msg, "NVRM: Xid (");
    const struct hc_xid *e;
    char code[32];
    int n;

    if (p == NULL || (p = strstr(p, "): ")) == NULL ||
        sscanf(p + 3, "%d", &n) != 1 || n < 0)
        return false;
    e = hc_xid_lookup(xids, n);
    snprintf(code, sizeof(code), "kmsg.xid.%d", n);
    set(ev, e ? e->status : PROTO_CHECK_WARN, code, NULL);
    pci_scope(strstr(msg, "NVRM: Xid (") + 11, ev->scope, sizeof(ev->scope));
    return true;
}

/* nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, ... */
static bool
sxid(const char *msg, struct hc_kev *ev)
{
    const char *p = strstr(msg, "SXid (");
    char code[32];
    int n;

    if (p == NULL || (p = strstr(p, "): ")) == NULL ||
        sscanf(p + 3, "%d", &n) != 1 || n < 0)
        return false;
    snprintf(code, sizeof(code), "kmsg.sxid.%d", n);
    set(ev,
        strstr(msg, "Fatal") || strstr(msg, "fatal") ? PROTO_CHECK_FAIL
                                                     : PROTO_CHECK_WARN,
        code, NULL);
    pci_scope(strstr(msg, "SXid (") + 6, ev->scope, sizeof(ev->scope));
    return true;
}

static bool
edac(const char *msg, struct hc_kev *ev)
{
    if (strncmp(msg, "EDAC ", 5) != 0 && strstr(msg, "EDAC MC") == NULL)
        return false;
    if (strstr(msg, " UE ") || strstr(msg, "Uncorrected") ||
        strstr(msg, "uncorrected") || strstr(msg, "UE memory"))
        set(ev, PROTO_CHECK_FAIL, "kmsg.edac_ue", NULL);
    else if (strstr(msg, " CE ") || strstr(msg, "Corrected") ||
             strstr(msg, "corrected"))
        set(ev, PROTO_CHECK_WARN, "kmsg.edac_ce", NULL);
    else
        return false; /* "EDAC MC: Ver: 3.0.0" and the like */
    return true;
}

static bool
mce(const char *msg, struct hc_kev *ev)
{
    if (strstr(msg, "Fatal machine check") ||
        strstr(msg, "Machine Check Exception") ||
        (strstr(msg, "[Hardware Error]") &&
            (strstr(msg, "Uncorrected") || strstr(msg, "uncorrected") ||
                strstr(msg, "Fatal") || strstr(msg, "fatal")))) {
        set(ev, PROTO_CHECK_FAIL, "kmsg.mce_fatal", NULL);
        return true;
    }
    if (strstr(msg, "[Hardware Error]") ||
        strstr(msg, "Machine check events logged")) {
        set(ev, PROTO_CHECK_WARN, "kmsg.mce", NULL);
        return true;
    }
    return false;
}

/* An AER detail line: "...: AER: ... error received", "device [10de:2330]
 * error status/mask=...", "   [ 0] RxErr", "AER:   Error of this Agent". */
static bool
aer_detail(const char *msg)
{
    const char *p;
    char scope[64];

    if (strstr(msg, "error status/mask=") || strstr(msg, "Error of this Agent"))
        return true;
    if (strstr(msg, "AER:") && strstr(msg, "error received"))
        return true;
    pci_scope(msg, scope, sizeof(scope));
    if (strcmp(scope, "node") == 0 || (p = strstr(msg, ": ")) == NULL)
        return false;
    p += strspn(p + 2, " ") + 2;
    return p[0] == '[' && strchr(p, ']') &&
           strspn(p + 1, " 0123456789") == (size_t)(strchr(p, ']') - p - 1);
}

static bool
aer(const char *msg, struct hc_kev *ev)
{
    const char *sev = strstr(msg, "PCIe Bus Error: severity=");

    if (sev == NULL) {
        if (!aer_detail(msg))
            return false;
        ev->finding = false;
        return true;
    }
    sev += strlen("PCIe Bus Error: severity=");
    if (strncmp(sev, "Corrected", 9) == 0)
        set(ev, PROTO_CHECK_WARN, "kmsg.aer_corrected", NULL);
    else if (strstr(sev, "Fatal") && !strstr(sev, "Non-Fatal"))
        set(ev, PROTO_CHECK_FAIL, "kmsg.aer_fatal", NULL);
    else
        set(ev, PROTO_CHECK_FAIL, "kmsg.aer_uncorrected", NULL);
    pci_scope(msg, ev->scope, sizeof(ev->scope));
    return true;
}

/* Events that open a block (a trace or a report follows). */
static bool
blocks(const char *msg, struct hc_kev *ev)
{
    static const struct {
        const char *needle;
        enum proto_check_status st;
        const char *code; /* NULL: no finding of its own */
    } t[] = {
        { "blocked for more than ", PROTO_CHECK_WARN, "kmsg.hung_task" },
        { "soft lockup - CPU#", PROTO_CHECK_WARN, "kmsg.soft_lockup" },
        { "hard LOCKUP", PROTO_CHECK_FAIL, "kmsg.hard_lockup" },
        { "self-detected stall on CPU", PROTO_CHECK_WARN, "kmsg.rcu_stall" },
        { "detected stalls on CPUs", PROTO_CHECK_WARN, "kmsg.rcu_stall" },
        { "Kernel panic - not syncing", PROTO_CHECK_FAIL, "kmsg.kernel_oops" },
        { "BUG: unable to handle", PROTO_CHECK_FAIL, "kmsg.kernel_oops" },
        { "Oops: ", PROTO_CHECK_FAIL, "kmsg.kernel_oops" },
        { "kernel BUG at ", PROTO_CHECK_FAIL, "kmsg.kernel_oops" },
        { "WARNING: CPU: ", PROTO_CHECK_WARN, "kmsg.kernel_warning" },
        { " invoked oom-killer: ", PROTO_CHECK_PASS, NULL },
        { "Call Trace:", PROTO_CHECK_PASS, NULL },
    };

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (strstr(msg, t[i].needle) == NULL)
            continue;
        if (t[i].code)
            set(ev, t[i].st, t[i].code, NULL);
        ev->block_start = true;
        return true;
    }
    return false;
}

bool
hc_kmsg_block_end(const char *msg)
{
    return strstr(msg, "</TASK>") || strstr(msg, "---[ end trace") ||
           strstr(msg, "Killed process");
}

bool
hc_kmsg_event(const char *msg, const struct hc_xid_table *xids,
    struct hc_kev *ev)
{
    memset(ev, 0, sizeof(*ev));
    if (xid(msg, xids, ev) || sxid(msg, ev))
        return true;
    if (strstr(msg, "fallen off the bus")) {
        set(ev, PROTO_CHECK_FAIL, "kmsg.gpu_fallen_off_bus", NULL);
        pci_scope(msg, ev->scope, sizeof(ev->scope));
        return true;
    }
    if (strstr(msg, "Out of memory: Killed process") ||
        strstr(msg, "out of memory: Killed process")) {
        set(ev, PROTO_CHECK_WARN, "kmsg.oom_kill", NULL);
        ev->block_end = true;
        return true;
    }
    if (strstr(msg, "oom-kill:constraint=") ||
        strstr(msg, "oom_reaper: reaped process")) {
        ev->finding = false; /* part of the OOM report */
        return true;
    }
    return edac(msg, ev) || mce(msg, ev) || aer(msg, ev) || blocks(msg, ev);
}
