/*
 * fuzz_job_spec.c - the job spec a user submits (POST /v1/jobs)
 *
 * The body as the scheduler reads it (jsonx_parse, then
 * proto_job_spec_from_json, which validates every field), and the spec
 * it stores printed and read back (fuzz_msg.h). An accepted spec must
 * also pass proto_job_spec_validate on its own: the CLI checks a spec it
 * built with that before sending.
 */
#include "fuzz/fuzz_msg.h"

#include "common/proto.h"

static void
spec_init(void *m)
{
    proto_job_spec_init(m);
}

FUZZ_MSG_DEFINE(job_spec, struct proto_job_spec, spec_init,
    proto_job_spec_from_json, proto_job_spec_to_json, proto_job_spec_release);

FUZZ_INIT_QUIET

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proto_job_spec spec;
    struct err err = { 0 };
    cJSON *json = fuzz_json_parse(data, size);

    if (json == NULL)
        return 0;
    if (fuzz_msg_check(&job_spec, json) == 0) {
        fuzz_assert(proto_job_spec_from_json(json, &spec, &err) == 0);
        if (proto_job_spec_validate(&spec, &err) < 0) {
            fuzz_fail("accepted, then invalid: %s\n", err.msg);
        }
        /* The checkpoint convention's step of the paths it names. */
        (void)proto_ckpt_path_step(spec.checkpoint_dir);
        (void)proto_ckpt_path_step(spec.resume_from);
        proto_job_spec_release(&spec);
    }
    cJSON_Delete(json);
    return 0;
}
