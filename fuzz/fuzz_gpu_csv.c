/*
 * fuzz_gpu_csv.c - nvidia-smi's answers as the GPU check judges them
 *
 * The gpu check of lockstep-check runs nvidia-smi twice and judges its CSV
 * (hc_gpu_parse: one line per GPU of ten fields, then the remapped-rows
 * query) and the way each run ended. A driver in a bad state prints
 * anything; every result must still make the trip to the scheduler
 * (fuzz_check.h).
 *
 * Input: two bytes of settings, then the --query-gpu answer, optionally
 * followed by "\n\xff\xff\n" and the --query-remapped-rows answer.
 *   byte 0 bits 0-2  how the first run ended (exits[] below)
 *          bits 3-5  how the second ended
 *          bit 6     the second was asked
 *          bit 7     allow_ecc_off
 *   byte 1           GPUs expected (mod 17)
 */
#include "fuzz/fuzz_check.h"

#include "agent/hc_gpu.h"

static const int exits[8] = { 0, 1, 6, 9, HC_EXIT_NOEXEC, HC_EXIT_TIMEOUT,
    HC_EXIT_SIGNAL(9), HC_EXIT_SIGNAL(11) };

FUZZ_INIT_QUIET

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned set = fuzz_take_byte(&data, &size);
    unsigned expect = fuzz_take_byte(&data, &size) % 17;
    struct hc_gpu_opts opts = { (int)expect, 90, 100, (set & 0x80) != 0 };
    const uint8_t *sep = memmem(data, size, "\n\xff\xff\n", 4);
    size_t len = sep ? (size_t)(sep - data) : size;
    char *text = xmalloc(len + 1), *remap = NULL;
    size_t rlen = 0;
    struct hc_res out = { 0 };

    memcpy(text, data, len);
    text[len] = '\0';
    if (set & 0x40) {
        rlen = sep ? size - len - 4 : 0;
        remap = xmalloc(rlen + 1);
        if (rlen > 0)
            memcpy(remap, sep + 4, rlen);
        remap[rlen] = '\0';
    }
    hc_gpu_parse(text, len, exits[set & 7], remap, rlen, exits[(set >> 3) & 7],
        &opts, &out);
    fuzz_results_travel(&out, "gpu");
    hc_res_release(&out);
    free(remap);
    free(text);
    return 0;
}
