/*
 * fuzz_relay.c - the relayed PMIx messages (POST /v1/agent/collective,
 * POST /v1/agent/modex, POST /v1/agent/modex/reply)
 *
 * A fence contribution, a direct modex request and its reply, each with
 * its base64 blob, round-tripped (fuzz_msg.h): the agents print them
 * with the same code. The first byte picks the message; 3 decodes the
 * rest as base64 alone and checks that its encoding decodes back to it.
 */
#include "fuzz/fuzz_msg.h"

#include "common/b64.h"
#include "common/proto.h"

FUZZ_MSG_DEFINE(coll_req, struct proto_coll_req, NULL, proto_coll_req_from_json,
    proto_coll_req_to_json, proto_coll_req_release);
FUZZ_MSG_DEFINE(modex_req, struct proto_modex_req, NULL,
    proto_modex_req_from_json, proto_modex_req_to_json,
    proto_modex_req_release);
FUZZ_MSG_DEFINE(modex_reply, struct proto_modex_reply, NULL,
    proto_modex_reply_from_json, proto_modex_reply_to_json,
    proto_modex_reply_release);

static const struct fuzz_msg *const msgs[] = { &coll_req, &modex_req,
    &modex_reply };

FUZZ_INIT_QUIET

/* base64: what decodes re-encodes to a text that decodes the same. */
static void
fuzz_b64(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *out = NULL, *enc, *again = NULL;
    size_t len = 0, len2 = 0;

    if (b64_decode(text, &out, &len) == 0) {
        enc = b64_encode(out, len);
        fuzz_assert(b64_decode(enc, &again, &len2) == 0);
        fuzz_assert(len2 == len && memcmp(again, out, len) == 0);
        free(enc);
        free(again);
        free(out);
    }
    free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned which = fuzz_take_byte(&data, &size) % 4;
    cJSON *json;

    if (which == 3) {
        fuzz_b64(data, size);
        return 0;
    }
    if ((json = fuzz_json_parse(data, size)) == NULL)
        return 0;
    fuzz_msg_check(msgs[which], json);
    cJSON_Delete(json);
    return 0;
}
