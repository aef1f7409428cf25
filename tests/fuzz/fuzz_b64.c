/*
** fuzz_b64.c -- §7.3.1 "f32-base64" (vec.c): little-endian binary32,
** base64 with padding.
**
** Input: one byte d (the dimension asked for, 0..255), then text.
** Oracles:
**   - decoding text into d floats either fails with one of the three
**     errors or succeeds; on success the text is exactly 4 * ceil(4d / 3)
**     bytes and encoding the floats gives the text back byte for byte
**     (base64 with zero pad bits has one spelling: any other is refused);
**   - the decoder's verdict on the length agrees with the arithmetic: a
**     well-padded text of the wrong size is RCP_VEC_B64_E_LENGTH;
**   - the text's bytes taken as floats (whatever they are: NaN payloads,
**     infinities, subnormals) encode and decode back to the same bits.
*/
#include "fuzz.h"

static void round_trip_bits(const uint8_t *data, size_t size)
{
    size_t n = size / 4, len = rcp_vec_b64_len(n);
    float *v = malloc(n ? n * 4 : 1), *back = malloc(n ? n * 4 : 1);
    char *text = malloc(len + 1);
    FZ_ASSERT(v && back && text, "malloc");
    memcpy(v, data, n * 4);
    FZ_ASSERT(rcp_vec_b64_encode(text, v, n) == len, "encoded length");
    FZ_ASSERT(rcp_vec_b64_decode(back, n, text, len) == RCP_VEC_B64_OK,
              "our own encoding does not decode");
    FZ_ASSERT(n == 0 || memcmp(v, back, n * 4) == 0, "bits changed");
    free(v);
    free(back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t dim, len;
    const char *text;
    float *out;
    char *again;
    rcp_vec_b64_err e;
    if (size < 1)
        return 0;
    dim = data[0];
    text = (const char *)data + 1;
    len = size - 1;
    round_trip_bits(data + 1, len);
    out = malloc(dim ? dim * 4 : 1);
    again = malloc(rcp_vec_b64_len(dim) + 1);
    FZ_ASSERT(out && again, "malloc");
    e = rcp_vec_b64_decode(out, dim, text, len);
    FZ_ASSERT(e == RCP_VEC_B64_OK || e == RCP_VEC_B64_E_CHAR
              || e == RCP_VEC_B64_E_PADDING || e == RCP_VEC_B64_E_LENGTH,
              "unknown error %d", (int)e);
    FZ_ASSERT(rcp_vec_b64_message(e) != NULL, "no message");
    if (e == RCP_VEC_B64_OK) {
        FZ_ASSERT(len == rcp_vec_b64_len(dim), "accepted %zu bytes for %zu "
                  "floats", len, dim);
        FZ_ASSERT(rcp_vec_b64_encode(again, out, dim) == len
                  && memcmp(again, text, len) == 0,
                  "decode then encode is not the identity");
    } else if (len % 4 == 0 && len != rcp_vec_b64_len(dim)) {
        /* the right shape but the wrong size: E_LENGTH unless the padding
        ** itself is malformed (checked first) */
        FZ_ASSERT(e == RCP_VEC_B64_E_LENGTH || e == RCP_VEC_B64_E_PADDING,
                  "wrong size answered %s", rcp_vec_b64_message(e));
    }
    free(out);
    free(again);
    return 0;
}
