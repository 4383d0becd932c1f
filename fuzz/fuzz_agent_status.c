/*
 * fuzz_agent_status.c - an agent's status report (POST /v1/agent/status)
 *
 * What the scheduler reads from every agent: the node, its resources,
 * every job's ranks (states, steps, acks, sections, stack dumps, stderr
 * tails) and its health results. Parsed and round-tripped (fuzz_msg.h):
 * the agent builds its report with the same printer, so a report the
 * scheduler would refuse after the round trip is one an agent can send.
 * The health part alone (proto_health) goes through too when the input
 * is an object holding "health".
 */
#include "fuzz/fuzz_msg.h"

#include "common/proto.h"

FUZZ_MSG_DEFINE(node_report, struct proto_node_report, NULL,
    proto_node_report_from_json, proto_node_report_to_json,
    proto_node_report_release);
FUZZ_MSG_DEFINE(health, struct proto_health, NULL, proto_health_from_json,
    proto_health_to_json, proto_health_release);

FUZZ_INIT_QUIET

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *json = fuzz_json_parse(data, size);
    const cJSON *h;

    if (json == NULL)
        return 0;
    fuzz_msg_check(&node_report, json);
    h = cJSON_GetObjectItemCaseSensitive(json, "health");
    if (h != NULL)
        fuzz_msg_check(&health, h);
    cJSON_Delete(json);
    return 0;
}
