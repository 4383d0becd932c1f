/*
 * fuzz_agent_work.c - what an agent reads from the scheduler
 *
 * The work long poll's reply (GET /v1/agent/work: the node's desired
 * state, each launch with its ranks, environment, node list and pending
 * directives) and the reply to a status report (heartbeat, gen, lease,
 * witnesses), both round-tripped (fuzz_msg.h): the scheduler prints
 * them with the same code. The first byte picks which one; a launch
 * alone goes through too when the input is a work reply with jobs. An
 * error reply's body becomes the agent's log line (curlx_error_text).
 */
#include "fuzz/fuzz_msg.h"

#include "common/curlx.h"
#include "common/proto.h"
#include "common/sbuf.h"

static void
reply_init(void *m)
{
    struct proto_status_reply *r = m;

    /* report.c's defaults for what a reply leaves out */
    r->heartbeat_ms = 1000;
    r->lease_ms = 5000;
}

FUZZ_MSG_DEFINE(work, struct proto_work, NULL, proto_work_from_json,
    proto_work_to_json, proto_work_release);
FUZZ_MSG_DEFINE(launch, struct proto_launch, NULL, proto_launch_from_json,
    proto_launch_to_json, proto_launch_release);

/* The status reply has no release: it holds no pointers. */
static void
reply_release(struct proto_status_reply *r)
{
    (void)r;
}

FUZZ_MSG_DEFINE(status_reply, struct proto_status_reply, reply_init,
    proto_status_reply_from_json, proto_status_reply_to_json, reply_release);

FUZZ_INIT_QUIET

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned which = fuzz_take_byte(&data, &size);
    struct sbuf body;
    char text[200];
    const cJSON *jobs, *item;
    cJSON *json;

    if (which >= 0x80) {
        sbuf_init(&body);
        sbuf_add(&body, data, size);
        curlx_error_text(0, 400 + (long)(which & 0x7f), &body, text,
            sizeof(text));
        fuzz_assert(strlen(text) < sizeof(text));
        sbuf_release(&body);
        return 0;
    }
    if ((json = fuzz_json_parse(data, size)) == NULL)
        return 0;
    if (which & 1) {
        fuzz_msg_check(&status_reply, json);
    } else {
        fuzz_msg_check(&work, json);
        jobs = cJSON_GetObjectItemCaseSensitive(json, "jobs");
        if (cJSON_IsArray(jobs)) {
            cJSON_ArrayForEach(item, jobs)
                fuzz_msg_check(&launch, item);
        }
    }
    cJSON_Delete(json);
    return 0;
}
