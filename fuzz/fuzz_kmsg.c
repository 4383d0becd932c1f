/*
 * fuzz_kmsg.c - the kernel log as the kmsg check reads it
 *
 * Kernel messages carry text users control (process and file names,
 * device strings, a module's printk), so the kmsg check of lockstep-check
 * reads untrusted input: records in /dev/kmsg's format (hc_kmsg_check,
 * given a regular file), the known events among them (hc_kmsg_event),
 * the templates of the rest (hc_kmsg_norm), its own state file, and the
 * template and XID table files it is given. Every result makes the trip
 * to the scheduler (fuzz_check.h).
 *
 * Input: one byte, then the text.
 *   bits 0-1  0: a kmsg file, checked three times: a first run, a second
 *                with the state the first left (nothing new), a third
 *                after a reboot (another boot id)
 *             1: one message: its template must be a fixed point of the
 *                normaliser (hc_kmsg_norm.h: idempotent), a template set
 *                that took it must hold that template, and the event
 *                recogniser classifies it
 *             2: a template file (allowlist, baseline) and an XID table
 *             3: a state file (kmsg-state.json), then a run over it
 *   bits 2-4  --max-level (0-7)
 */
#include "fuzz/fuzz_check.h"

#include "agent/hc_kmsg.h"
#include "agent/hc_kmsg_event.h"
#include "agent/hc_kmsg_norm.h"
#include "agent/hc_xid.h"

static char state_dir[512];
static char kmsg_path[512];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    snprintf(state_dir, sizeof(state_dir), "%s/state", fuzz_dir());
    snprintf(kmsg_path, sizeof(kmsg_path), "%s/kmsg", fuzz_dir());
    return 0;
}

static void
check_once(const char *boot, int level)
{
    struct hc_kmsg_opts o = {
        .path = kmsg_path,
        .state_dir = state_dir,
        .boot_id = boot,
        .max_level = level,
    };
    struct hc_res out = { 0 };

    (void)hc_kmsg_check(&o, &out);
    fuzz_results_travel(&out, "kmsg");
    hc_res_release(&out);
}

static void
state_reset(void)
{
    char path[600];

    snprintf(path, sizeof(path), "%s/kmsg-state.json", state_dir);
    (void)unlink(path);
}

static void
one_message(const uint8_t *data, size_t size)
{
    char t1[HC_KMSG_TMPL_MAX], t2[HC_KMSG_TMPL_MAX], *msg;
    struct hc_xid_table xids;
    struct hc_tmplset set = { 0 };
    struct hc_kev ev;
    size_t n1, n2;

    /* A message is a C string by then (hc_kmsg.c copies it with %s); its
     * template as long as hc_kmsg.c and the template sets keep it. */
    msg = fuzz_cstr(data, size);
    n1 = hc_kmsg_normalise(msg, strlen(msg), t1, sizeof(t1));
    fuzz_assert(n1 == strlen(t1));
    n2 = hc_kmsg_normalise(t1, n1, t2, sizeof(t2));
    if (n2 != n1 || strcmp(t1, t2) != 0)
        fuzz_fail("the normaliser is not idempotent:\n%s\n%s\n", t1, t2);
    if (hc_tmplset_add(&set, msg) >= 0)
        fuzz_assert(hc_tmplset_has(&set, t1));
    hc_tmplset_release(&set);
    hc_xid_table_init(&xids);
    memset(&ev, 0, sizeof(ev));
    if (hc_kmsg_event(msg, &xids, &ev))
        fuzz_assert(!ev.finding || ev.code[0] != '\0');
    (void)hc_kmsg_block_end(msg);
    hc_xid_table_release(&xids);
    free(msg);
}

static void
table_files(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file(fuzz_dir(), "table", data, size);
    struct hc_xid_table xids;
    struct hc_tmplset set = { 0 };
    char *why = NULL, **sorted;
    int n;

    n = hc_tmplset_load(&set, path, &why);
    if (n < 0) {
        fuzz_assert(why != NULL && why[0] != '\0');
    } else {
        fuzz_assert((size_t)n <= set.n);
        sorted = hc_tmplset_sorted(&set);
        for (size_t i = 0; i + 1 < set.n; i++)
            fuzz_assert(strcmp(sorted[i], sorted[i + 1]) < 0);
        free(sorted);
    }
    free(why);
    why = NULL;
    hc_tmplset_release(&set);
    hc_xid_table_init(&xids);
    if (hc_xid_table_load(&xids, path, &why) < 0)
        fuzz_assert(why != NULL && why[0] != '\0');
    free(why);
    hc_xid_table_release(&xids);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned set = fuzz_take_byte(&data, &size);
    int level = (int)((set >> 2) & 7);

    switch (set & 3) {
    case 0:
        state_reset();
        fuzz_write_file(fuzz_dir(), "kmsg", data, size);
        check_once("boot-1", level);
        check_once("boot-1", level);
        check_once("boot-2", level);
        break;
    case 1:
        one_message(data, size);
        break;
    case 2:
        table_files(data, size);
        break;
    default:
        mkdir(state_dir, 0700);
        fuzz_write_file(state_dir, "kmsg-state.json", data, size);
        fuzz_write_file(fuzz_dir(), "kmsg",
            "6,1,100,-;fuzz: a record\n6,2,200,-;fuzz: another\n", 49);
        check_once("boot-1", level);
        break;
    }
    return 0;
}
