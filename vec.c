/*
** vec.c -- the vector core of rcp: dot products, norms, top-k scans,
** MaxSim (§7.5), sparse dot (§7.4), an 8-bit quantised store, and the
** f32-base64 codec (§7.3.1).
**
** NOTES ON THE DESIGN
**
**  1. One source, several objects.  The Makefile compiles this file once
**     as the main object (scalar reference kernels, CPU detection, the
**     dispatcher and the public rcp_vec_* API) and once per SIMD path with
**     -DRCP_VEC_UNIT_<path> and that path's -m flags; such a unit holds only
**     vec_<path>_* kernels.  No compiler attributes are needed, and the
**     main object never contains an instruction the CPU might lack.
**  2. A path is a table of seven kernels (struct vec_ops), plus optional
**     ones where a path measured much faster: MaxSim over a transposed
**     query tile (avx2, avx512) and base64 (avx2, also used by avx512;
**     neon).
**     Everything else -- top-k, filtering, MaxSim's tiling and maxima,
**     quantisation, re-scoring, base64 tails and validation -- is portable
**     C shared by all paths, so float results differ between paths only in
**     how a kernel orders its additions, and base64 not at all.
**  3. The path is chosen once: rcp_vec_init() (RCP_SIMD, or the best the
**     CPU and OS support), or on first use.  Asking for a path that is
**     unknown, not built, or unsupported is an error, never a fallback.
**  4. The top-k order is total (score descending, then row ascending, NaN
**     as -infinity), so results never depend on the order rows were
**     offered in, nor on how a scan was split into chunks.
**  5. The quantised dot is exact integer arithmetic (u8 codes times a
**     query rounded to -63..63, int32 sums that cannot overflow for
**     d <= 65536), so every path gives bit-identical approximate scores.
**  6. Base64 reads and writes binary32 through shifts on uint32_t, so the
**     wire is little-endian on any host (§7.3.1); the SIMD base64 exists
**     only on x86, where memory order is little-endian already.
**  7. Measured, not guessed (tests/bench_vec.c): scans read one row at a
**     time (interleaving four rows' streams halved the bandwidth: the
**     prefetcher lost track), and register blocks use named accumulators
**     (arrays of vectors stayed in memory at -O2).
*/
#include "rcp.h"

#if defined(RCP_VEC_UNIT_sse2) || defined(RCP_VEC_UNIT_avx2) || \
    defined(RCP_VEC_UNIT_avx512) || defined(RCP_VEC_UNIT_neon)
#define VEC_UNIT 1
#endif

/* The kernels every path provides (P is vec_<path>):
**   dot, l2sq, sum   as the public functions;
**   scores           out[r] = dot(q, m + r*d) for r < nrows;
**   dot4x4           out[i*4 + j] = dot(qr[i], dr[j]), rows of dim floats;
**   q8dot            out[r] = sum qc[i] * codes[r*d + i] (exact int32);
**   flops            a register-only multiply-add loop; returns its flops. */
#define VEC_KERNELS(P)                                                      \
    float  P##_dot(const float *a, const float *b, size_t n);              \
    float  P##_l2sq(const float *a, const float *b, size_t n);             \
    float  P##_sum(const float *a, size_t n);                              \
    void   P##_scores(const float *q, const float *m, size_t d,            \
                      size_t nrows, float *out);                            \
    void   P##_dot4x4(const float *const *qr, const float *const *dr,      \
                      size_t dim, float *out);                              \
    void   P##_q8dot(const int8_t *qc, const uint8_t *codes, size_t d,    \
                     size_t nrows, int32_t *out);                           \
    double P##_flops(size_t iters);

/* MARK: - SSE2 path (unit) ----------------------------------------------- */
#if defined(RCP_VEC_UNIT_sse2)
#include <emmintrin.h>

VEC_KERNELS(vec_sse2)

static float sse2_hsum(__m128 v)
{
    __m128 s = _mm_add_ps(v, _mm_movehl_ps(v, v));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static int32_t sse2_hsum_i32(__m128i v)
{
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1));
    return _mm_cvtsi128_si32(v);
}

float vec_sse2_dot(const float *a, const float *b, size_t n)
{
    __m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps();
    size_t i = 0;
    float t;
    for (; i + 8 <= n; i += 8) {
        s0 = _mm_add_ps(s0, _mm_mul_ps(_mm_loadu_ps(a + i),
                                       _mm_loadu_ps(b + i)));
        s1 = _mm_add_ps(s1, _mm_mul_ps(_mm_loadu_ps(a + i + 4),
                                       _mm_loadu_ps(b + i + 4)));
    }
    for (; i + 4 <= n; i += 4)
        s0 = _mm_add_ps(s0, _mm_mul_ps(_mm_loadu_ps(a + i),
                                       _mm_loadu_ps(b + i)));
    t = sse2_hsum(_mm_add_ps(s0, s1));
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

float vec_sse2_l2sq(const float *a, const float *b, size_t n)
{
    __m128 s = _mm_setzero_ps(), e;
    size_t i = 0;
    float t;
    for (; i + 4 <= n; i += 4) {
        e = _mm_sub_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
        s = _mm_add_ps(s, _mm_mul_ps(e, e));
    }
    t = sse2_hsum(s);
    for (; i < n; i++)
        t += (a[i] - b[i]) * (a[i] - b[i]);
    return t;
}

float vec_sse2_sum(const float *a, size_t n)
{
    __m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps();
    size_t i = 0;
    float t;
    for (; i + 8 <= n; i += 8) {
        s0 = _mm_add_ps(s0, _mm_loadu_ps(a + i));
        s1 = _mm_add_ps(s1, _mm_loadu_ps(a + i + 4));
    }
    for (; i + 4 <= n; i += 4)
        s0 = _mm_add_ps(s0, _mm_loadu_ps(a + i));
    t = sse2_hsum(_mm_add_ps(s0, s1));
    for (; i < n; i++)
        t += a[i];
    return t;
}

/* Row by row: one sequential stream keeps the hardware prefetcher on
** (interleaving four rows' streams measured at half the bandwidth). */
void vec_sse2_scores(const float *q, const float *m, size_t d, size_t nrows,
                    float *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = vec_sse2_dot(q, m + r * d, d);
}

/* c<i><j> += a<i> * b: query row i, document row j (named, not an array,
** so the accumulators stay in registers at any optimisation level). */
#define SSE2_MAC(c, a, b) c = _mm_add_ps(c, _mm_mul_ps(a, b))

/* Two query rows times four document rows: 8 accumulators, 14 registers. */
static void sse2_dot2x4(const float *const *qr, const float *const *dr,
                        size_t dim, float *out)
{
    __m128 c00 = _mm_setzero_ps(), c01 = c00, c02 = c00, c03 = c00,
           c10 = c00, c11 = c00, c12 = c00, c13 = c00, a0, a1, b;
    size_t i, j;
    for (i = 0; i + 4 <= dim; i += 4) {
        a0 = _mm_loadu_ps(qr[0] + i);
        a1 = _mm_loadu_ps(qr[1] + i);
        b = _mm_loadu_ps(dr[0] + i);
        SSE2_MAC(c00, a0, b);
        SSE2_MAC(c10, a1, b);
        b = _mm_loadu_ps(dr[1] + i);
        SSE2_MAC(c01, a0, b);
        SSE2_MAC(c11, a1, b);
        b = _mm_loadu_ps(dr[2] + i);
        SSE2_MAC(c02, a0, b);
        SSE2_MAC(c12, a1, b);
        b = _mm_loadu_ps(dr[3] + i);
        SSE2_MAC(c03, a0, b);
        SSE2_MAC(c13, a1, b);
    }
    out[0] = sse2_hsum(c00);
    out[1] = sse2_hsum(c01);
    out[2] = sse2_hsum(c02);
    out[3] = sse2_hsum(c03);
    out[4] = sse2_hsum(c10);
    out[5] = sse2_hsum(c11);
    out[6] = sse2_hsum(c12);
    out[7] = sse2_hsum(c13);
    for (j = 0; j < 8; j++)
        for (i = dim & ~(size_t)3; i < dim; i++)
            out[j] += qr[j >> 2][i] * dr[j & 3][i];
}

void vec_sse2_dot4x4(const float *const *qr, const float *const *dr,
                     size_t dim, float *out)
{
    sse2_dot2x4(qr, dr, dim, out);
    sse2_dot2x4(qr + 2, dr, dim, out + 8);
}

static int32_t sse2_q8row(const int8_t *qc, const uint8_t *c, size_t d)
{
    __m128i s = _mm_setzero_si128(), z = _mm_setzero_si128(), x, q;
    size_t i = 0;
    int32_t t;
    for (; i + 8 <= d; i += 8) {
        x = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(c + i)), z);
        q = _mm_loadl_epi64((const __m128i *)(qc + i));
        q = _mm_srai_epi16(_mm_unpacklo_epi8(q, q), 8);   /* sign-extend */
        s = _mm_add_epi32(s, _mm_madd_epi16(x, q));
    }
    t = sse2_hsum_i32(s);
    for (; i < d; i++)
        t += (int32_t)qc[i] * c[i];
    return t;
}

void vec_sse2_q8dot(const int8_t *qc, const uint8_t *codes, size_t d,
                    size_t nrows, int32_t *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = sse2_q8row(qc, codes + r * d, d);
}

/* Twelve independent chains, named so they live in registers. */
#define SSE2_FLOP(a) a = _mm_add_ps(_mm_mul_ps(a, x), y)
double vec_sse2_flops(size_t iters)
{
    __m128 x = _mm_set1_ps(0.999f), y = _mm_set1_ps(0.001f);
    /* distinct starts, or the compiler merges identical chains */
    __m128 a0 = _mm_set1_ps(1), a1 = _mm_set1_ps(2), a2 = _mm_set1_ps(3),
           a3 = _mm_set1_ps(4), a4 = _mm_set1_ps(5), a5 = _mm_set1_ps(6),
           a6 = _mm_set1_ps(7), a7 = _mm_set1_ps(8), a8 = _mm_set1_ps(9),
           a9 = _mm_set1_ps(10), a10 = _mm_set1_ps(11), a11 = _mm_set1_ps(12);
    float sink[4];
    size_t i;
    for (i = 0; i < iters; i++) {
        SSE2_FLOP(a0); SSE2_FLOP(a1); SSE2_FLOP(a2); SSE2_FLOP(a3);
        SSE2_FLOP(a4); SSE2_FLOP(a5); SSE2_FLOP(a6); SSE2_FLOP(a7);
        SSE2_FLOP(a8); SSE2_FLOP(a9); SSE2_FLOP(a10); SSE2_FLOP(a11);
    }
    a0 = _mm_add_ps(_mm_add_ps(_mm_add_ps(a0, a1), _mm_add_ps(a2, a3)),
                    _mm_add_ps(_mm_add_ps(a4, a5), _mm_add_ps(a6, a7)));
    a0 = _mm_add_ps(a0, _mm_add_ps(_mm_add_ps(a8, a9), _mm_add_ps(a10, a11)));
    _mm_storeu_ps(sink, a0);
    return sink[0] == 12345.0f ? 0.0 : (double)iters * 12 * 4 * 2;
}

/* MARK: - AVX2 + FMA path (unit) ----------------------------------------- */
#elif defined(RCP_VEC_UNIT_avx2)
#include <immintrin.h>
#include <math.h>

VEC_KERNELS(vec_avx2)
int vec_avx2_maxsim(const float *qm, size_t nq, const float *dm, size_t nd,
                    size_t dim, int cosine, float *best);
size_t vec_avx2_b64enc(char *out, const float *v, size_t n);
size_t vec_avx2_b64dec(float *out, const char *t, size_t n, uint32_t *bad);

static float avx2_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static int32_t avx2_hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v),
                              _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

float vec_avx2_dot(const float *a, const float *b, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    float t;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i),
                             _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
                             _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16),
                             _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24),
                             _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i),
                             _mm256_loadu_ps(b + i), s0);
    t = avx2_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1),
                                _mm256_add_ps(s2, s3)));
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

float vec_avx2_l2sq(const float *a, const float *b, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, e0, e1;
    size_t i = 0;
    float t;
    for (; i + 16 <= n; i += 16) {
        e0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        e1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8),
                           _mm256_loadu_ps(b + i + 8));
        s0 = _mm256_fmadd_ps(e0, e0, s0);
        s1 = _mm256_fmadd_ps(e1, e1, s1);
    }
    for (; i + 8 <= n; i += 8) {
        e0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        s0 = _mm256_fmadd_ps(e0, e0, s0);
    }
    t = avx2_hsum(_mm256_add_ps(s0, s1));
    for (; i < n; i++)
        t += (a[i] - b[i]) * (a[i] - b[i]);
    return t;
}

float vec_avx2_sum(const float *a, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    float t;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(a + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(a + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_loadu_ps(a + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_loadu_ps(a + i + 24));
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(a + i));
    t = avx2_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1),
                                _mm256_add_ps(s2, s3)));
    for (; i < n; i++)
        t += a[i];
    return t;
}

/* Row by row: one sequential stream keeps the hardware prefetcher on
** (interleaving four rows' streams measured at half the bandwidth). */
void vec_avx2_scores(const float *q, const float *m, size_t d, size_t nrows,
                    float *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = vec_avx2_dot(q, m + r * d, d);
}

/* The sums of four vectors into out[0..4). */
static void avx2_hsum4(__m256 a, __m256 b, __m256 c, __m256 d, float *out)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t),
                                  _mm256_extractf128_ps(t, 1)));
}

#define AVX2_MAC(c, a, b) c = _mm256_fmadd_ps(a, b, c)

/* Two query rows times four document rows: 8 accumulators (named, so they
** stay in registers), 14 of the 16 registers. */
static void avx2_dot2x4(const float *const *qr, const float *const *dr,
                        size_t dim, float *out)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c03 = c00,
           c10 = c00, c11 = c00, c12 = c00, c13 = c00, a0, a1, b;
    size_t i, j;
    for (i = 0; i + 8 <= dim; i += 8) {
        a0 = _mm256_loadu_ps(qr[0] + i);
        a1 = _mm256_loadu_ps(qr[1] + i);
        b = _mm256_loadu_ps(dr[0] + i);
        AVX2_MAC(c00, a0, b);
        AVX2_MAC(c10, a1, b);
        b = _mm256_loadu_ps(dr[1] + i);
        AVX2_MAC(c01, a0, b);
        AVX2_MAC(c11, a1, b);
        b = _mm256_loadu_ps(dr[2] + i);
        AVX2_MAC(c02, a0, b);
        AVX2_MAC(c12, a1, b);
        b = _mm256_loadu_ps(dr[3] + i);
        AVX2_MAC(c03, a0, b);
        AVX2_MAC(c13, a1, b);
    }
    avx2_hsum4(c00, c01, c02, c03, out);
    avx2_hsum4(c10, c11, c12, c13, out + 4);
    for (j = 0; j < 8; j++)
        for (i = dim & ~(size_t)7; i < dim; i++)
            out[j] += qr[j >> 2][i] * dr[j & 3][i];
}

void vec_avx2_dot4x4(const float *const *qr, const float *const *dr,
                     size_t dim, float *out)
{
    avx2_dot2x4(qr, dr, dim, out);
    avx2_dot2x4(qr + 2, dr, dim, out + 8);
}

/* 32 codes (unsigned) times 32 query bytes (signed): maddubs sums pairs
** into int16 -- |2 * 255 * 63| < 32767, so it never saturates (Q8_QMAX)
** -- and madd with ones sums pairs of those into int32. */
static __m256i avx2_q8step(__m256i s, const uint8_t *c, const int8_t *q)
{
    __m256i p = _mm256_maddubs_epi16(
        _mm256_loadu_si256((const __m256i *)c),
        _mm256_loadu_si256((const __m256i *)q));
    return _mm256_add_epi32(s, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

static int32_t avx2_q8row(const int8_t *qc, const uint8_t *c, size_t d)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    size_t i = 0;
    int32_t t;
    for (; i + 64 <= d; i += 64) {
        s0 = avx2_q8step(s0, c + i, qc + i);
        s1 = avx2_q8step(s1, c + i + 32, qc + i + 32);
    }
    for (; i + 32 <= d; i += 32)
        s0 = avx2_q8step(s0, c + i, qc + i);
    t = avx2_hsum_i32(_mm256_add_epi32(s0, s1));
    for (; i < d; i++)
        t += (int32_t)qc[i] * c[i];
    return t;
}

void vec_avx2_q8dot(const int8_t *qc, const uint8_t *codes, size_t d,
                    size_t nrows, int32_t *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = avx2_q8row(qc, codes + r * d, d);
}

/* Twelve independent chains, named so they live in registers. */
#define AVX2_FLOP(a) a = _mm256_fmadd_ps(a, x, y)
double vec_avx2_flops(size_t iters)
{
    __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(0.001f);
    /* distinct starts, or the compiler merges identical chains */
    __m256 a0 = _mm256_set1_ps(1), a1 = _mm256_set1_ps(2),
           a2 = _mm256_set1_ps(3), a3 = _mm256_set1_ps(4),
           a4 = _mm256_set1_ps(5), a5 = _mm256_set1_ps(6),
           a6 = _mm256_set1_ps(7), a7 = _mm256_set1_ps(8),
           a8 = _mm256_set1_ps(9), a9 = _mm256_set1_ps(10),
           a10 = _mm256_set1_ps(11), a11 = _mm256_set1_ps(12);
    float sink[8];
    size_t i;
    for (i = 0; i < iters; i++) {
        AVX2_FLOP(a0); AVX2_FLOP(a1); AVX2_FLOP(a2); AVX2_FLOP(a3);
        AVX2_FLOP(a4); AVX2_FLOP(a5); AVX2_FLOP(a6); AVX2_FLOP(a7);
        AVX2_FLOP(a8); AVX2_FLOP(a9); AVX2_FLOP(a10); AVX2_FLOP(a11);
    }
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1),
                                     _mm256_add_ps(a2, a3)),
                       _mm256_add_ps(_mm256_add_ps(a4, a5),
                                     _mm256_add_ps(a6, a7)));
    a0 = _mm256_add_ps(a0, _mm256_add_ps(_mm256_add_ps(a8, a9),
                                         _mm256_add_ps(a10, a11)));
    _mm256_storeu_ps(sink, a0);
    return sink[0] == 12345.0f ? 0.0 : (double)iters * 12 * 8 * 2;
}

/* MaxSim as on AVX-512 (see vec_avx512_maxsim): the query tile is
** transposed 16 rows at a time (lane i of qt[k] is q_i[k]) and each
** document element is broadcast against 16 query lanes, 6 document rows at
** a time: 12 accumulators + 3 of the 16 registers, 2 + 6 loads per 12
** FMAs.  Handles nq <= 32 and dim <= AVX2_QT_DIM; else returns 0. */
#define AVX2_QT_DIM 256

#define AVX2_BMAC(r, c0, c1)                                                \
    do {                                                                    \
        b = _mm256_broadcast_ss(p[r] + k);                                  \
        c0 = _mm256_fmadd_ps(t0, b, c0);                                    \
        c1 = _mm256_fmadd_ps(t1, b, c1);                                    \
    } while (0)

#define AVX2_BMAX(r, c0, c1)                                                \
    do {                                                                    \
        b = _mm256_set1_ps(ds[r]);                                          \
        m0 = _mm256_max_ps(_mm256_mul_ps(c0, b), m0);                       \
        m1 = _mm256_max_ps(_mm256_mul_ps(c1, b), m1);                       \
    } while (0)

/* Rows past the end repeat the last one: a repeat cannot change a max. */
static void avx2_rows6(const float *dm, size_t j, size_t nd, size_t dim,
                       int cosine, const float **p, float *ds)
{
    size_t r;
    float len;
    for (r = 0; r < 6; r++) {
        p[r] = dm + (j + r < nd ? j + r : nd - 1) * dim;
        len = cosine ? sqrtf(vec_avx2_dot(p[r], p[r], dim)) : 1.0f;
        ds[r] = len > 0.0f ? 1.0f / len : 0.0f;
    }
}

/* Query rows [0, 16) of qm (past nq, the last row again) transposed. */
static void avx2_qt(float *qt, const float *qm, size_t nq, size_t dim)
{
    size_t i, k;
    const float *q;
    for (i = 0; i < 16; i++) {
        q = qm + (i < nq ? i : nq - 1) * dim;
        for (k = 0; k < dim; k++)
            qt[k * 16 + i] = q[k];
    }
}

/* Maxima of the 16 transposed query rows over all documents. */
static void avx2_maxsim16(const float *qt, const float *dm, size_t nd,
                          size_t dim, int cosine, float *lanes)
{
    __m256 m0 = _mm256_set1_ps(-HUGE_VALF), m1 = m0, t0, t1, b;
    const float *p[6];
    float ds[6];
    size_t j, k;
    for (j = 0; j < nd; j += 6) {
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00,
               c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00,
               c41 = c00, c50 = c00, c51 = c00;
        /* the next 6 rows (24 * dim bytes), 24 bytes per step (as on
        ** AVX-512) */
        const char *pf = j + 12 <= nd ? (const char *)(dm + (j + 6) * dim)
                                      : NULL;
        avx2_rows6(dm, j, nd, dim, cosine, p, ds);
        for (k = 0; k < dim; k++) {
            if (pf != NULL)
                _mm_prefetch(pf + k * 24, _MM_HINT_T0);
            t0 = _mm256_loadu_ps(qt + k * 16);
            t1 = _mm256_loadu_ps(qt + k * 16 + 8);
            AVX2_BMAC(0, c00, c01); AVX2_BMAC(1, c10, c11);
            AVX2_BMAC(2, c20, c21); AVX2_BMAC(3, c30, c31);
            AVX2_BMAC(4, c40, c41); AVX2_BMAC(5, c50, c51);
        }
        AVX2_BMAX(0, c00, c01); AVX2_BMAX(1, c10, c11);
        AVX2_BMAX(2, c20, c21); AVX2_BMAX(3, c30, c31);
        AVX2_BMAX(4, c40, c41); AVX2_BMAX(5, c50, c51);
    }
    _mm256_storeu_ps(lanes, m0);
    _mm256_storeu_ps(lanes + 8, m1);
}

int vec_avx2_maxsim(const float *qm, size_t nq, const float *dm, size_t nd,
                    size_t dim, int cosine, float *best)
{
    float qt[AVX2_QT_DIM * 16], lanes[16];
    size_t h, i;
    if (nq > 32 || dim > AVX2_QT_DIM || nq == 0 || nd == 0 || dim == 0)
        return 0;
    for (h = 0; h < nq; h += 16) {
        avx2_qt(qt, qm + h * dim, nq - h, dim);
        avx2_maxsim16(qt, dm, nd, dim, cosine, lanes);
        for (i = 0; i < 16 && h + i < nq; i++)
            if (lanes[i] > best[h + i])
                best[h + i] = lanes[i];
    }
    return 1;
}

/* f32-base64 (§7.3.1) on x86, where the bytes of a float in memory are
** already little-endian: 24 bytes <-> 32 characters per step.  The
** technique is Wojciech Mula's (as in Alfred Klomp's base64 library):
** split 3 bytes into 4 sextets with multiplies, map sextets to characters
** through range offsets; decode validates with two nibble tables. */
static __m256i avx2_enc_reshuffle(__m256i in)
{
    /* each 32-bit lane gets bytes (b1 b0 b2 b1) of its 3-byte group */
    __m256i t = _mm256_shuffle_epi8(in, _mm256_setr_epi8(
        1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10,
        1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10));
    __m256i t0 = _mm256_and_si256(t, _mm256_set1_epi32(0x0fc0fc00));
    __m256i t1 = _mm256_mulhi_epu16(t0, _mm256_set1_epi32(0x04000040));
    __m256i t2 = _mm256_and_si256(t, _mm256_set1_epi32(0x003f03f0));
    __m256i t3 = _mm256_mullo_epi16(t2, _mm256_set1_epi32(0x01000010));
    return _mm256_or_si256(t1, t3);   /* one sextet per byte */
}

static __m256i avx2_enc_translate(__m256i in)
{
    /* offset per range: A-Z +65, a-z +71, 0-9 -4, '+' -19, '/' -16 */
    const __m256i lut = _mm256_setr_epi8(
        65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0,
        65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0);
    __m256i idx = _mm256_subs_epu8(in, _mm256_set1_epi8(51));
    __m256i gt25 = _mm256_cmpgt_epi8(in, _mm256_set1_epi8(25));
    idx = _mm256_sub_epi8(idx, gt25);
    return _mm256_add_epi8(in, _mm256_shuffle_epi8(lut, idx));
}

/* Encodes whole 6-float steps while 4 bytes of read slack remain; returns
** the floats consumed. */
size_t vec_avx2_b64enc(char *out, const float *v, size_t n)
{
    const unsigned char *b = (const unsigned char *)v;
    size_t i;
    __m256i in;
    for (i = 0; i + 28 <= n * 4; i += 24) {
        in = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(b + i))),
            _mm_loadu_si128((const __m128i *)(b + i + 12)), 1);
        _mm256_storeu_si256((__m256i *)(out + i / 3 * 4),
                            avx2_enc_translate(avx2_enc_reshuffle(in)));
    }
    return i / 4;
}

/* Sextets (00aaaaaa 00bbbbbb 00cccccc 00dddddd per 32 bits) -> 24 packed
** bytes in the low 24 of the 32. */
static __m256i avx2_dec_reshuffle(__m256i in)
{
    __m256i ab = _mm256_maddubs_epi16(in, _mm256_set1_epi32(0x01400140));
    __m256i out = _mm256_madd_epi16(ab, _mm256_set1_epi32(0x00011000));
    out = _mm256_shuffle_epi8(out, _mm256_setr_epi8(
        2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
        2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
    return _mm256_permutevar8x32_epi32(out,
                                       _mm256_setr_epi32(0, 1, 2, 4, 5, 6,
                                                         7, 7));
}

/* Decodes whole 6-float steps while the 32-byte store fits in out[0..n);
** returns the floats written; *bad is nonzero when a character is not in
** the alphabet ('=' included). */
size_t vec_avx2_b64dec(float *out, const char *t, size_t n, uint32_t *bad)
{
    const __m256i lut_lo = _mm256_setr_epi8(
        0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
        0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b, 0x1b, 0x1a,
        0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
        0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b, 0x1b, 0x1a);
    const __m256i lut_hi = _mm256_setr_epi8(
        0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
        0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
        0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m256i lut_roll = _mm256_setr_epi8(
        0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i m2f = _mm256_set1_epi8(0x2f);
    __m256i s, hn, err = _mm256_setzero_si256();
    unsigned char *o = (unsigned char *)out;
    size_t j;
    for (j = 0; j + 32 <= n * 4; j += 24, t += 32) {
        s = _mm256_loadu_si256((const __m256i *)t);
        hn = _mm256_and_si256(_mm256_srli_epi32(s, 4), m2f);
        err = _mm256_or_si256(err, _mm256_and_si256(
            _mm256_shuffle_epi8(lut_lo, _mm256_and_si256(s, m2f)),
            _mm256_shuffle_epi8(lut_hi, hn)));
        s = _mm256_add_epi8(s, _mm256_shuffle_epi8(lut_roll,
                _mm256_add_epi8(_mm256_cmpeq_epi8(s, m2f), hn)));
        _mm256_storeu_si256((__m256i *)(o + j), avx2_dec_reshuffle(s));
    }
    *bad = (uint32_t)!_mm256_testz_si256(err, err);
    return j / 4;
}

/* MARK: - AVX-512 path (unit) -------------------------------------------- */
#elif defined(RCP_VEC_UNIT_avx512)
#include <immintrin.h>
#include <math.h>

VEC_KERNELS(vec_avx512)
int vec_avx512_maxsim(const float *qm, size_t nq, const float *dm,
                      size_t nd, size_t dim, int cosine, float *best);

/* Lanes [0, n) of 16, n < 16: tails are masked loads, never scalar. */
static __mmask16 avx512_mask(size_t n)
{
    return (__mmask16)((1u << n) - 1u);
}

float vec_avx512_dot(const float *a, const float *b, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    __mmask16 k;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i),
                             _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16),
                             _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32),
                             _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48),
                             _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i),
                             _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        k = avx512_mask(n - i);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i),
                             _mm512_maskz_loadu_ps(k, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1),
                                              _mm512_add_ps(s2, s3)));
}

float vec_avx512_l2sq(const float *a, const float *b, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, e0, e1;
    __mmask16 k;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        e0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
        e1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16),
                           _mm512_loadu_ps(b + i + 16));
        s0 = _mm512_fmadd_ps(e0, e0, s0);
        s1 = _mm512_fmadd_ps(e1, e1, s1);
    }
    for (; i + 16 <= n; i += 16) {
        e0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
        s0 = _mm512_fmadd_ps(e0, e0, s0);
    }
    if (i < n) {
        k = avx512_mask(n - i);
        e1 = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, a + i),
                           _mm512_maskz_loadu_ps(k, b + i));
        s1 = _mm512_fmadd_ps(e1, e1, s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

float vec_avx512_sum(const float *a, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(a + i));
        s1 = _mm512_add_ps(s1, _mm512_loadu_ps(a + i + 16));
        s2 = _mm512_add_ps(s2, _mm512_loadu_ps(a + i + 32));
        s3 = _mm512_add_ps(s3, _mm512_loadu_ps(a + i + 48));
    }
    for (; i + 16 <= n; i += 16)
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(a + i));
    if (i < n)
        s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(avx512_mask(n - i),
                                                     a + i));
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1),
                                              _mm512_add_ps(s2, s3)));
}

/* Row by row: one sequential stream keeps the hardware prefetcher on
** (interleaving four rows' streams measured at half the bandwidth). */
void vec_avx512_scores(const float *q, const float *m, size_t d, size_t nrows,
                    float *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = vec_avx512_dot(q, m + r * d, d);
}

/* Fold pairs of vectors: the result's low half reduces a, the high half b
** (imm 0x44/0xEE pick 256-bit halves; 0x88/0xDD pick 128-bit quarters). */
static __m512 avx512_fold(__m512 a, __m512 b, int quarters)
{
    if (quarters)
        return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88),
                             _mm512_shuffle_f32x4(a, b, 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44),
                         _mm512_shuffle_f32x4(a, b, 0xee));
}

/* Four vectors folded to one: 128-bit quarter L holds four partial sums
** of the L-th argument. */
static __m512 avx512_quarters(__m512 a, __m512 b, __m512 c, __m512 d)
{
    return avx512_fold(avx512_fold(a, b, 0), avx512_fold(c, d, 0), 1);
}

/* Sixteen sums from four quartered vectors, transposed: lane 4L + t is the
** sum of argument L of the call that built w<t>. */
static __m512 avx512_sum16(__m512 w0, __m512 w1, __m512 w2, __m512 w3)
{
    __m512 v0 = _mm512_add_ps(_mm512_unpacklo_ps(w0, w1),
                              _mm512_unpackhi_ps(w0, w1));
    __m512 v1 = _mm512_add_ps(_mm512_unpacklo_ps(w2, w3),
                              _mm512_unpackhi_ps(w2, w3));
    __m512d x = _mm512_castps_pd(v0), y = _mm512_castps_pd(v1);
    return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
}

/* One document vector b against the four query vectors: c<j><i> is
** (document row j, query row i). */
#define AVX512_MAC4(b, c0, c1, c2, c3)                                     \
    do {                                                                    \
        c0 = _mm512_fmadd_ps(a0, b, c0);                                    \
        c1 = _mm512_fmadd_ps(a1, b, c1);                                    \
        c2 = _mm512_fmadd_ps(a2, b, c2);                                    \
        c3 = _mm512_fmadd_ps(a3, b, c3);                                    \
    } while (0)

/* Four query rows times four document rows: 16 named accumulators (an
** array would live in memory at -O2), 21 of the 32 registers; the
** dimension tail is one masked step.  Lane i*4 + j: dot(qr[i], dr[j]). */
static __m512 avx512_dot4x4(const float *const *qr, const float *const *dr,
                            size_t dim)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00,
           c10 = c00, c11 = c00, c12 = c00, c13 = c00, c20 = c00, c21 = c00,
           c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
    __m512 a0, a1, a2, a3, b;
    __mmask16 k = (__mmask16)0xffff;
    size_t i;
    for (i = 0; i < dim; i += 16) {
        if (dim - i < 16)
            k = avx512_mask(dim - i);
        a0 = _mm512_maskz_loadu_ps(k, qr[0] + i);
        a1 = _mm512_maskz_loadu_ps(k, qr[1] + i);
        a2 = _mm512_maskz_loadu_ps(k, qr[2] + i);
        a3 = _mm512_maskz_loadu_ps(k, qr[3] + i);
        b = _mm512_maskz_loadu_ps(k, dr[0] + i);
        AVX512_MAC4(b, c00, c01, c02, c03);
        b = _mm512_maskz_loadu_ps(k, dr[1] + i);
        AVX512_MAC4(b, c10, c11, c12, c13);
        b = _mm512_maskz_loadu_ps(k, dr[2] + i);
        AVX512_MAC4(b, c20, c21, c22, c23);
        b = _mm512_maskz_loadu_ps(k, dr[3] + i);
        AVX512_MAC4(b, c30, c31, c32, c33);
    }
    /* w<j> holds document row j; lane i*4 + j is dot(qr[i], dr[j]) */
    return avx512_sum16(avx512_quarters(c00, c01, c02, c03),
                        avx512_quarters(c10, c11, c12, c13),
                        avx512_quarters(c20, c21, c22, c23),
                        avx512_quarters(c30, c31, c32, c33));
}

void vec_avx512_dot4x4(const float *const *qr, const float *const *dr,
                       size_t dim, float *out)
{
    _mm512_storeu_ps(out, avx512_dot4x4(qr, dr, dim));
}

/* MaxSim without horizontal sums: the query tile is transposed once (lane
** i of qt[k] is q_i[k]), then each document element is broadcast against
** 32 query lanes, 8 document rows at a time: 16 accumulators, 2 + 8 loads
** per 16 FMAs, and one max per document row.  Handles nq <= 32 and
** dim <= AVX512_QT_DIM (a 32 KiB stack tile); else returns 0. */
#define AVX512_QT_DIM 256

#define AVX512_BMAC(r, c0, c1)                                              \
    do {                                                                    \
        b = _mm512_set1_ps(p[r][k]);                                        \
        c0 = _mm512_fmadd_ps(t0, b, c0);                                    \
        c1 = _mm512_fmadd_ps(t1, b, c1);                                    \
    } while (0)

#define AVX512_BMAX(r, c0, c1)                                              \
    do {                                                                    \
        b = _mm512_set1_ps(ds[r]);                                          \
        m0 = _mm512_max_ps(_mm512_mul_ps(c0, b), m0);                       \
        m1 = _mm512_max_ps(_mm512_mul_ps(c1, b), m1);                       \
    } while (0)

/* Rows past the end repeat the last one: a repeat cannot change a max. */
static void avx512_rows8(const float *dm, size_t j, size_t nd, size_t dim,
                         int cosine, const float **p, float *ds)
{
    size_t r;
    float len;
    for (r = 0; r < 8; r++) {
        p[r] = dm + (j + r < nd ? j + r : nd - 1) * dim;
        len = cosine ? sqrtf(vec_avx512_dot(p[r], p[r], dim)) : 1.0f;
        ds[r] = len > 0.0f ? 1.0f / len : 0.0f;
    }
}

static void avx512_qt(float *qt, const float *qm, size_t nq, size_t dim)
{
    size_t i, k;
    const float *q;
    for (i = 0; i < 32; i++) {
        q = qm + (i < nq ? i : nq - 1) * dim;
        for (k = 0; k < dim; k++)
            qt[k * 32 + i] = q[k];
    }
}

int vec_avx512_maxsim(const float *qm, size_t nq, const float *dm,
                      size_t nd, size_t dim, int cosine, float *best)
{
    float qt[AVX512_QT_DIM * 32], ds[8], lanes[32];
    const float *p[8];
    __m512 m0 = _mm512_set1_ps(-HUGE_VALF), m1 = m0, t0, t1, b;
    size_t j, k, i;
    if (nq > 32 || dim > AVX512_QT_DIM || nq == 0 || nd == 0 || dim == 0)
        return 0;
    avx512_qt(qt, qm, nq, dim);
    for (j = 0; j < nd; j += 8) {
        __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00,
               c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00,
               c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00,
               c70 = c00, c71 = c00;
        /* the next 8 rows (32 * dim bytes), 32 bytes per step: the 8
        ** slow streams of a block do not wake the hardware prefetcher */
        const char *pf = j + 16 <= nd ? (const char *)(dm + (j + 8) * dim)
                                      : NULL;
        avx512_rows8(dm, j, nd, dim, cosine, p, ds);
        for (k = 0; k < dim; k++) {
            if (pf != NULL)
                _mm_prefetch(pf + k * 32, _MM_HINT_T0);
            t0 = _mm512_loadu_ps(qt + k * 32);
            t1 = _mm512_loadu_ps(qt + k * 32 + 16);
            AVX512_BMAC(0, c00, c01); AVX512_BMAC(1, c10, c11);
            AVX512_BMAC(2, c20, c21); AVX512_BMAC(3, c30, c31);
            AVX512_BMAC(4, c40, c41); AVX512_BMAC(5, c50, c51);
            AVX512_BMAC(6, c60, c61); AVX512_BMAC(7, c70, c71);
        }
        AVX512_BMAX(0, c00, c01); AVX512_BMAX(1, c10, c11);
        AVX512_BMAX(2, c20, c21); AVX512_BMAX(3, c30, c31);
        AVX512_BMAX(4, c40, c41); AVX512_BMAX(5, c50, c51);
        AVX512_BMAX(6, c60, c61); AVX512_BMAX(7, c70, c71);
    }
    _mm512_storeu_ps(lanes, m0);
    _mm512_storeu_ps(lanes + 16, m1);
    for (i = 0; i < nq; i++)
        if (lanes[i] > best[i])
            best[i] = lanes[i];
    return 1;
}

/* 64 codes times 64 query bytes q (k: which), as avx2_q8step. */
static __m512i avx512_q8step(__m512i s, const uint8_t *c, __m512i q,
                             __mmask64 k)
{
    __m512i p = _mm512_maddubs_epi16(_mm512_maskz_loadu_epi8(k, c), q);
    return _mm512_add_epi32(s, _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
}

static int32_t avx512_q8row(const int8_t *qc, const uint8_t *c, size_t d)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = s0;
    __mmask64 k = ~(__mmask64)0;
    size_t i = 0;
    for (; i + 128 <= d; i += 128) {
        s0 = avx512_q8step(s0, c + i, _mm512_loadu_si512(qc + i), k);
        s1 = avx512_q8step(s1, c + i + 64, _mm512_loadu_si512(qc + i + 64),
                           k);
    }
    for (; i < d; i += 64) {
        if (d - i < 64)
            k = ((__mmask64)1 << (d - i)) - 1;
        s0 = avx512_q8step(s0, c + i, _mm512_maskz_loadu_epi8(k, qc + i), k);
    }
    return _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
}

/* The sum of each of a, b, c, d's sixteen lanes, as four int32. */
static __m128i avx512_sum4(__m512i a, __m512i b, __m512i c, __m512i d)
{
    __m256i x = _mm256_add_epi32(_mm512_castsi512_si256(a),
                                 _mm512_extracti64x4_epi64(a, 1));
    __m256i y = _mm256_add_epi32(_mm512_castsi512_si256(b),
                                 _mm512_extracti64x4_epi64(b, 1));
    __m256i z = _mm256_add_epi32(_mm512_castsi512_si256(c),
                                 _mm512_extracti64x4_epi64(c, 1));
    __m256i w = _mm256_add_epi32(_mm512_castsi512_si256(d),
                                 _mm512_extracti64x4_epi64(d, 1));
    x = _mm256_hadd_epi32(_mm256_hadd_epi32(x, y), _mm256_hadd_epi32(z, w));
    return _mm_add_epi32(_mm256_castsi256_si128(x),
                         _mm256_extracti128_si256(x, 1));
}

/* Four rows at a time: each 64 query bytes are loaded once for the four,
** and the four sums are reduced together -- per row, a lone row's
** reduction costs as much as its 384 products. */
static void avx512_q8rows4(const int8_t *qc, const uint8_t *c, size_t d,
                           int32_t *out)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    __mmask64 k = ~(__mmask64)0;
    size_t i;
    for (i = 0; i < d; i += 64) {
        __m512i q;
        if (d - i < 64)
            k = ((__mmask64)1 << (d - i)) - 1;
        q = _mm512_maskz_loadu_epi8(k, qc + i);
        s0 = avx512_q8step(s0, c + i, q, k);
        s1 = avx512_q8step(s1, c + d + i, q, k);
        s2 = avx512_q8step(s2, c + 2 * d + i, q, k);
        s3 = avx512_q8step(s3, c + 3 * d + i, q, k);
    }
    _mm_storeu_si128((__m128i *)(void *)out, avx512_sum4(s0, s1, s2, s3));
}

void vec_avx512_q8dot(const int8_t *qc, const uint8_t *codes, size_t d,
                      size_t nrows, int32_t *out)
{
    size_t r = 0;
    for (; r + 4 <= nrows; r += 4)
        avx512_q8rows4(qc, codes + r * d, d, out + r);
    for (; r < nrows; r++)
        out[r] = avx512_q8row(qc, codes + r * d, d);
}

/* Sixteen independent chains, named so they live in registers. */
#define AVX512_FLOP(a) a = _mm512_fmadd_ps(a, x, y)
double vec_avx512_flops(size_t iters)
{
    __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.001f);
    /* distinct starts, or the compiler merges identical chains */
    __m512 a0 = _mm512_set1_ps(1), a1 = _mm512_set1_ps(2),
           a2 = _mm512_set1_ps(3), a3 = _mm512_set1_ps(4),
           a4 = _mm512_set1_ps(5), a5 = _mm512_set1_ps(6),
           a6 = _mm512_set1_ps(7), a7 = _mm512_set1_ps(8),
           a8 = _mm512_set1_ps(9), a9 = _mm512_set1_ps(10),
           a10 = _mm512_set1_ps(11), a11 = _mm512_set1_ps(12),
           a12 = _mm512_set1_ps(13), a13 = _mm512_set1_ps(14),
           a14 = _mm512_set1_ps(15), a15 = _mm512_set1_ps(16);
    size_t i;
    for (i = 0; i < iters; i++) {
        AVX512_FLOP(a0); AVX512_FLOP(a1); AVX512_FLOP(a2); AVX512_FLOP(a3);
        AVX512_FLOP(a4); AVX512_FLOP(a5); AVX512_FLOP(a6); AVX512_FLOP(a7);
        AVX512_FLOP(a8); AVX512_FLOP(a9); AVX512_FLOP(a10);
        AVX512_FLOP(a11); AVX512_FLOP(a12); AVX512_FLOP(a13);
        AVX512_FLOP(a14); AVX512_FLOP(a15);
    }
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1),
                                     _mm512_add_ps(a2, a3)),
                       _mm512_add_ps(_mm512_add_ps(a4, a5),
                                     _mm512_add_ps(a6, a7)));
    a8 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a8, a9),
                                     _mm512_add_ps(a10, a11)),
                       _mm512_add_ps(_mm512_add_ps(a12, a13),
                                     _mm512_add_ps(a14, a15)));
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a8)) == 12345.0f
               ? 0.0 : (double)iters * 16 * 16 * 2;
}

/* MARK: - NEON path (unit, aarch64) -------------------------------------- */
#elif defined(RCP_VEC_UNIT_neon)
#include <arm_neon.h>

VEC_KERNELS(vec_neon)
size_t vec_neon_b64enc(char *out, const float *v, size_t n);
size_t vec_neon_b64dec(float *out, const char *t, size_t n, uint32_t *bad);

float vec_neon_dot(const float *a, const float *b, size_t n)
{
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    float t;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    t = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

float vec_neon_l2sq(const float *a, const float *b, size_t n)
{
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, e0, e1;
    size_t i = 0;
    float t;
    for (; i + 8 <= n; i += 8) {
        e0 = vsubq_f32(vld1q_f32(a + i), vld1q_f32(b + i));
        e1 = vsubq_f32(vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        s0 = vfmaq_f32(s0, e0, e0);
        s1 = vfmaq_f32(s1, e1, e1);
    }
    for (; i + 4 <= n; i += 4) {
        e0 = vsubq_f32(vld1q_f32(a + i), vld1q_f32(b + i));
        s0 = vfmaq_f32(s0, e0, e0);
    }
    t = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; i++)
        t += (a[i] - b[i]) * (a[i] - b[i]);
    return t;
}

float vec_neon_sum(const float *a, size_t n)
{
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    float t;
    for (; i + 16 <= n; i += 16) {
        s0 = vaddq_f32(s0, vld1q_f32(a + i));
        s1 = vaddq_f32(s1, vld1q_f32(a + i + 4));
        s2 = vaddq_f32(s2, vld1q_f32(a + i + 8));
        s3 = vaddq_f32(s3, vld1q_f32(a + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        s0 = vaddq_f32(s0, vld1q_f32(a + i));
    t = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++)
        t += a[i];
    return t;
}

/* Row by row: one sequential stream keeps the hardware prefetcher on
** (interleaving four rows' streams measured at half the bandwidth). */
void vec_neon_scores(const float *q, const float *m, size_t d, size_t nrows,
                    float *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = vec_neon_dot(q, m + r * d, d);
}

/* One document vector b against the four query vectors: c<i><j> is
** (query row i, document row j). */
#define NEON_MAC4(b, c0, c1, c2, c3)                                       \
    do {                                                                    \
        c0 = vfmaq_f32(c0, a0, b);                                          \
        c1 = vfmaq_f32(c1, a1, b);                                          \
        c2 = vfmaq_f32(c2, a2, b);                                          \
        c3 = vfmaq_f32(c3, a3, b);                                          \
    } while (0)

/* Four query rows times four document rows: 16 named accumulators, 21 of
** the 32 registers. */
void vec_neon_dot4x4(const float *const *qr, const float *const *dr,
                     size_t dim, float *out)
{
    float32x4_t c00 = vdupq_n_f32(0), c01 = c00, c02 = c00, c03 = c00,
                c10 = c00, c11 = c00, c12 = c00, c13 = c00, c20 = c00,
                c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00,
                c32 = c00, c33 = c00, a0, a1, a2, a3, b;
    size_t i, j;
    for (i = 0; i + 4 <= dim; i += 4) {
        a0 = vld1q_f32(qr[0] + i);
        a1 = vld1q_f32(qr[1] + i);
        a2 = vld1q_f32(qr[2] + i);
        a3 = vld1q_f32(qr[3] + i);
        b = vld1q_f32(dr[0] + i);
        NEON_MAC4(b, c00, c10, c20, c30);
        b = vld1q_f32(dr[1] + i);
        NEON_MAC4(b, c01, c11, c21, c31);
        b = vld1q_f32(dr[2] + i);
        NEON_MAC4(b, c02, c12, c22, c32);
        b = vld1q_f32(dr[3] + i);
        NEON_MAC4(b, c03, c13, c23, c33);
    }
    out[0] = vaddvq_f32(c00); out[1] = vaddvq_f32(c01);
    out[2] = vaddvq_f32(c02); out[3] = vaddvq_f32(c03);
    out[4] = vaddvq_f32(c10); out[5] = vaddvq_f32(c11);
    out[6] = vaddvq_f32(c12); out[7] = vaddvq_f32(c13);
    out[8] = vaddvq_f32(c20); out[9] = vaddvq_f32(c21);
    out[10] = vaddvq_f32(c22); out[11] = vaddvq_f32(c23);
    out[12] = vaddvq_f32(c30); out[13] = vaddvq_f32(c31);
    out[14] = vaddvq_f32(c32); out[15] = vaddvq_f32(c33);
    for (j = 0; j < 16; j++)
        for (i = dim & ~(size_t)3; i < dim; i++)
            out[j] += qr[j >> 2][i] * dr[j & 3][i];
}

static int32_t neon_q8row(const int8_t *qc, const uint8_t *c, size_t d)
{
    int32x4_t s0 = vdupq_n_s32(0), s1 = s0;
    int16x8_t x, q;
    size_t i = 0;
    int32_t t;
    for (; i + 8 <= d; i += 8) {
        x = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(c + i)));
        q = vmovl_s8(vld1_s8(qc + i));
        s0 = vmlal_s16(s0, vget_low_s16(x), vget_low_s16(q));
        s1 = vmlal_high_s16(s1, x, q);
    }
    t = vaddvq_s32(vaddq_s32(s0, s1));
    for (; i < d; i++)
        t += (int32_t)qc[i] * c[i];
    return t;
}

void vec_neon_q8dot(const int8_t *qc, const uint8_t *codes, size_t d,
                    size_t nrows, int32_t *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = neon_q8row(qc, codes + r * d, d);
}

/* Sixteen independent chains, named so they live in registers. */
#define NEON_FLOP(a) a = vfmaq_f32(y, a, x)
double vec_neon_flops(size_t iters)
{
    float32x4_t x = vdupq_n_f32(0.999f), y = vdupq_n_f32(0.001f);
    /* distinct starts, or the compiler merges identical chains */
    float32x4_t a0 = vdupq_n_f32(1), a1 = vdupq_n_f32(2),
                a2 = vdupq_n_f32(3), a3 = vdupq_n_f32(4),
                a4 = vdupq_n_f32(5), a5 = vdupq_n_f32(6),
                a6 = vdupq_n_f32(7), a7 = vdupq_n_f32(8),
                a8 = vdupq_n_f32(9), a9 = vdupq_n_f32(10),
                a10 = vdupq_n_f32(11), a11 = vdupq_n_f32(12),
                a12 = vdupq_n_f32(13), a13 = vdupq_n_f32(14),
                a14 = vdupq_n_f32(15), a15 = vdupq_n_f32(16);
    size_t i;
    for (i = 0; i < iters; i++) {
        NEON_FLOP(a0); NEON_FLOP(a1); NEON_FLOP(a2); NEON_FLOP(a3);
        NEON_FLOP(a4); NEON_FLOP(a5); NEON_FLOP(a6); NEON_FLOP(a7);
        NEON_FLOP(a8); NEON_FLOP(a9); NEON_FLOP(a10); NEON_FLOP(a11);
        NEON_FLOP(a12); NEON_FLOP(a13); NEON_FLOP(a14); NEON_FLOP(a15);
    }
    a0 = vaddq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)),
                   vaddq_f32(vaddq_f32(a4, a5), vaddq_f32(a6, a7)));
    a8 = vaddq_f32(vaddq_f32(vaddq_f32(a8, a9), vaddq_f32(a10, a11)),
                   vaddq_f32(vaddq_f32(a12, a13), vaddq_f32(a14, a15)));
    return vaddvq_f32(vaddq_f32(a0, a8)) == 12345.0f
               ? 0.0 : (double)iters * 16 * 4 * 2;
}

#if !defined(__ARM_BIG_ENDIAN)
/* f32-base64 (§7.3.1) where a float's bytes in memory are little-endian:
** 48 bytes <-> 64 characters per step.  vld3/vst4 (de)interleave the byte
** triples and character quads, so each lane does plain shifts and a table
** lookup (tbl over 64 or 128 bytes). */
static const uint8_t neon_b64_alphabet[64] = {
    'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M',
    'N', 'O', 'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z',
    'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm',
    'n', 'o', 'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z',
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '+', '/'
};

/* ASCII -> sextet; 0xff outside the alphabet ('=' included). */
#define F 0xff
static const uint8_t neon_b64_value[128] = {
    F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F,
    F, F, F, F, F, F, F, F, F, F, F, F, F, F, F, F,
    F, F, F, F, F, F, F, F, F, F, F, 62, F, F, F, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, F, F, F, F, F, F,
    F, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, F, F, F, F, F,
    F, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, F, F, F, F, F
};
#undef F

static uint8x16x4_t neon_table(const uint8_t *t)
{
    uint8x16x4_t x;
    x.val[0] = vld1q_u8(t);
    x.val[1] = vld1q_u8(t + 16);
    x.val[2] = vld1q_u8(t + 32);
    x.val[3] = vld1q_u8(t + 48);
    return x;
}

/* Encodes whole 12-float steps; returns the floats consumed. */
size_t vec_neon_b64enc(char *out, const float *v, size_t n)
{
    const uint8_t *b = (const uint8_t *)v;
    uint8x16x4_t tbl = neon_table(neon_b64_alphabet), c;
    uint8x16x3_t x;
    size_t i;
    for (i = 0; i + 48 <= n * 4; i += 48) {
        x = vld3q_u8(b + i);
        c.val[0] = vshrq_n_u8(x.val[0], 2);
        c.val[1] = vorrq_u8(vshrq_n_u8(x.val[1], 4),
                            vandq_u8(vshlq_n_u8(x.val[0], 4),
                                     vdupq_n_u8(0x30)));
        c.val[2] = vorrq_u8(vshrq_n_u8(x.val[2], 6),
                            vandq_u8(vshlq_n_u8(x.val[1], 2),
                                     vdupq_n_u8(0x3c)));
        c.val[3] = vandq_u8(x.val[2], vdupq_n_u8(0x3f));
        c.val[0] = vqtbl4q_u8(tbl, c.val[0]);
        c.val[1] = vqtbl4q_u8(tbl, c.val[1]);
        c.val[2] = vqtbl4q_u8(tbl, c.val[2]);
        c.val[3] = vqtbl4q_u8(tbl, c.val[3]);
        vst4q_u8((uint8_t *)out + i / 3 * 4, c);
    }
    return i / 4;
}

/* Sextet of each character; bytes >= 128 look up nothing (0) and are
** flagged through *err, like 0xff table entries. */
static uint8x16_t neon_sextets(uint8x16_t c, uint8x16x4_t lo,
                               uint8x16x4_t hi, uint8x16_t *err)
{
    uint8x16_t v = vqtbx4q_u8(vqtbl4q_u8(lo, c), hi,
                              vsubq_u8(c, vdupq_n_u8(64)));
    *err = vorrq_u8(*err, vorrq_u8(v, c));
    return v;
}

/* Decodes whole 12-float steps; returns the floats written; *bad is
** nonzero when a character is outside the alphabet. */
size_t vec_neon_b64dec(float *out, const char *t, size_t n, uint32_t *bad)
{
    uint8x16x4_t lo = neon_table(neon_b64_value),
                 hi = neon_table(neon_b64_value + 64), c;
    uint8x16x3_t x;
    uint8x16_t err = vdupq_n_u8(0), s0, s1, s2, s3;
    uint8_t *o = (uint8_t *)out;
    size_t j;
    for (j = 0; j + 48 <= n * 4; j += 48, t += 64) {
        c = vld4q_u8((const uint8_t *)t);
        s0 = neon_sextets(c.val[0], lo, hi, &err);
        s1 = neon_sextets(c.val[1], lo, hi, &err);
        s2 = neon_sextets(c.val[2], lo, hi, &err);
        s3 = neon_sextets(c.val[3], lo, hi, &err);
        x.val[0] = vorrq_u8(vshlq_n_u8(s0, 2), vshrq_n_u8(s1, 4));
        x.val[1] = vorrq_u8(vshlq_n_u8(s1, 4), vshrq_n_u8(s2, 2));
        x.val[2] = vorrq_u8(vshlq_n_u8(s2, 6), s3);
        vst3q_u8(o + j, x);
    }
    /* a valid sextet and a valid character both stay below 0x80 */
    *bad = vmaxvq_u8(err) >= 0x80;
    return j / 4;
}
#else
size_t vec_neon_b64enc(char *out, const float *v, size_t n)
{
    (void)out;
    (void)v;
    (void)n;
    return 0;   /* big-endian: the portable code does it all */
}

size_t vec_neon_b64dec(float *out, const char *t, size_t n, uint32_t *bad)
{
    (void)out;
    (void)t;
    (void)n;
    *bad = 0;
    return 0;
}
#endif

#else /* !VEC_UNIT: the main object */

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MARK: - Scalar reference kernels --------------------------------------- */

/* The reference never fuses a multiply and an add, on any compiler or CPU,
** and rounds every operation to float before the next one reads it: each
** product and partial sum is assigned to a float, or cast (C99 5.1.2.3,
** 6.3.1.8: assignments and casts drop excess precision).  That matters
** where C evaluates float in a wider type -- FLT_EVAL_METHOD 1 on s390x
** (double), 2 on i686 (x87) -- which would otherwise round a whole
** expression once, like an FMA.  Rounding the exact result to double or
** x87 extended first, then to float, gives the correctly rounded float
** (both keep >= 2 * 24 + 2 bits), so RCP_SIMD=scalar gives the same bits
** on every target.  GCC in -std=c99 mode already does not contract, and
** warns about the pragma. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* Four partial sums: independent chains the CPU can overlap.  This order is
** the reference; other paths differ from it only by rounding. */
static float vec_scalar_dot(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0, p0, p1, p2, p3;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        p0 = a[i] * b[i];
        p1 = a[i + 1] * b[i + 1];
        p2 = a[i + 2] * b[i + 2];
        p3 = a[i + 3] * b[i + 3];
        s0 += p0;
        s1 += p1;
        s2 += p2;
        s3 += p3;
    }
    for (; i < n; i++) {
        p0 = a[i] * b[i];
        s0 += p0;
    }
    s0 += s1;
    s2 += s3;
    return (float)(s0 + s2);
}

static float vec_scalar_l2sq(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, e0, e1;
    size_t i = 0;
    for (; i + 2 <= n; i += 2) {
        e0 = a[i] - b[i];
        e1 = a[i + 1] - b[i + 1];
        e0 *= e0;
        e1 *= e1;
        s0 += e0;
        s1 += e1;
    }
    if (i < n) {
        e0 = a[i] - b[i];
        e0 *= e0;
        s0 += e0;
    }
    return (float)(s0 + s1);
}

static float vec_scalar_sum(const float *a, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i];
        s1 += a[i + 1];
        s2 += a[i + 2];
        s3 += a[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i];
    s0 += s1;
    s2 += s3;
    return (float)(s0 + s2);
}

static void vec_scalar_scores(const float *q, const float *m, size_t d,
                              size_t nrows, float *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = vec_scalar_dot(q, m + r * d, d);
}

static void vec_scalar_dot4x4(const float *const *qr, const float *const *dr,
                              size_t dim, float *out)
{
    size_t i, j;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++)
            out[i * 4 + j] = vec_scalar_dot(qr[i], dr[j], dim);
}

static void vec_scalar_q8dot(const int8_t *qc, const uint8_t *codes,
                             size_t d, size_t nrows, int32_t *out)
{
    const uint8_t *c;
    size_t r, i;
    int32_t s;
    for (r = 0; r < nrows; r++) {
        c = codes + r * d;
        s = 0;
        for (i = 0; i < d; i++)
            s += (int32_t)qc[i] * c[i];
        out[r] = s;
    }
}

/* Twelve independent multiply-add chains, named so they live in registers;
** x < 1 keeps them finite. */
#define SCALAR_FLOP(a) a = a * x + y
static double vec_scalar_flops(size_t iters)
{
    volatile float vx = 0.999f, vy = 0.001f, sink;
    float x = vx, y = vy, a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6,
          a6 = 7, a7 = 8, a8 = 9, a9 = 10, a10 = 11, a11 = 12;
    size_t i;
    for (i = 0; i < iters; i++) {
        SCALAR_FLOP(a0); SCALAR_FLOP(a1); SCALAR_FLOP(a2); SCALAR_FLOP(a3);
        SCALAR_FLOP(a4); SCALAR_FLOP(a5); SCALAR_FLOP(a6); SCALAR_FLOP(a7);
        SCALAR_FLOP(a8); SCALAR_FLOP(a9); SCALAR_FLOP(a10);
        SCALAR_FLOP(a11);
    }
    sink = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
         + ((a8 + a9) + (a10 + a11));
    (void)sink;
    return (double)iters * 12 * 2;
}

/* MARK: - Paths and run-time choice -------------------------------------- */

struct vec_ops {
    const char *name;
    unsigned    need;     /* VEC_F_* bits the CPU must report */
    float  (*dot)(const float *, const float *, size_t);
    float  (*l2sq)(const float *, const float *, size_t);
    float  (*sum)(const float *, size_t);
    void   (*scores)(const float *, const float *, size_t, size_t, float *);
    void   (*dot4x4)(const float *const *, const float *const *, size_t,
                     float *);
    /* optional (NULL: the generic tiling over dot4x4); 0 = not handled */
    int    (*maxsim)(const float *, size_t, const float *, size_t, size_t,
                     int, float *);
    /* optional base64 prefixes (NULL: all scalar); see vec_avx2_b64enc */
    size_t (*b64enc)(char *, const float *, size_t);
    size_t (*b64dec)(float *, const char *, size_t, uint32_t *);
    void   (*q8dot)(const int8_t *, const uint8_t *, size_t, size_t,
                    int32_t *);
    double (*flops)(size_t);
};

enum { VEC_F_SSE2 = 1, VEC_F_AVX2 = 2, VEC_F_AVX512 = 4, VEC_F_NEON = 8 };

#define VEC_OPS(name, need, P, maxsim, b64e, b64d)                          \
    { name, need, P##_dot, P##_l2sq, P##_sum, P##_scores, P##_dot4x4,      \
      maxsim, b64e, b64d, P##_q8dot, P##_flops }

static const struct vec_ops vec_scalar_ops =
    VEC_OPS("scalar", 0, vec_scalar, NULL, NULL, NULL);

#if defined(RCP_HAVE_X86)
VEC_KERNELS(vec_sse2)
VEC_KERNELS(vec_avx2)
VEC_KERNELS(vec_avx512)
int vec_avx512_maxsim(const float *qm, size_t nq, const float *dm,
                      size_t nd, size_t dim, int cosine, float *best);
int vec_avx2_maxsim(const float *qm, size_t nq, const float *dm, size_t nd,
                    size_t dim, int cosine, float *best);
size_t vec_avx2_b64enc(char *out, const float *v, size_t n);
size_t vec_avx2_b64dec(float *out, const char *t, size_t n, uint32_t *bad);
static const struct vec_ops vec_sse2_ops =
    VEC_OPS("sse2", VEC_F_SSE2, vec_sse2, NULL, NULL, NULL);
static const struct vec_ops vec_avx2_ops =
    VEC_OPS("avx2", VEC_F_AVX2, vec_avx2, vec_avx2_maxsim, vec_avx2_b64enc,
            vec_avx2_b64dec);
static const struct vec_ops vec_avx512_ops =
    VEC_OPS("avx512", VEC_F_AVX512, vec_avx512, vec_avx512_maxsim,
            vec_avx2_b64enc, vec_avx2_b64dec);
#endif
#if defined(RCP_HAVE_NEON)
VEC_KERNELS(vec_neon)
size_t vec_neon_b64enc(char *out, const float *v, size_t n);
size_t vec_neon_b64dec(float *out, const char *t, size_t n, uint32_t *bad);
static const struct vec_ops vec_neon_ops =
    VEC_OPS("neon", VEC_F_NEON, vec_neon, NULL, vec_neon_b64enc,
            vec_neon_b64dec);
#endif

/* Every path name rcp knows, best first; NULL where not built. */
static const struct {
    const char           *name;
    const struct vec_ops *ops;
} vec_paths[] = {
#if defined(RCP_HAVE_X86)
    { "avx512", &vec_avx512_ops }, { "avx2", &vec_avx2_ops },
    { "sse2", &vec_sse2_ops },
#else
    { "avx512", NULL }, { "avx2", NULL }, { "sse2", NULL },
#endif
#if defined(RCP_HAVE_NEON)
    { "neon", &vec_neon_ops },
#else
    { "neon", NULL },
#endif
    { "scalar", &vec_scalar_ops }
};
#define VEC_NPATHS (sizeof vec_paths / sizeof vec_paths[0])

#if defined(RCP_HAVE_X86) && defined(__GNUC__) && \
    (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

/* XCR0: which register states the OS saves on a context switch. */
static unsigned long long vec_xgetbv(void)
{
    unsigned lo, hi;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* A path needs both the instructions (CPUID) and the OS saving its
** registers (XCR0 bits 1-2 for AVX, 5-7 too for AVX-512). */
static unsigned vec_cpu_features(void)
{
    unsigned a, b, c, d, f = 0, b7 = 0, avx = 0;
    unsigned long long xcr0 = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (d & (1u << 26))
        f |= VEC_F_SSE2;
    if (c & (1u << 27))
        xcr0 = vec_xgetbv();
    avx = (c & (1u << 28)) && (c & (1u << 12)) && (xcr0 & 6) == 6;
    if (__get_cpuid_count(7, 0, &a, &b7, &c, &d) == 0)
        b7 = 0;
    if (avx && (b7 & (1u << 5)))
        f |= VEC_F_AVX2;
    if ((f & VEC_F_AVX2) && (xcr0 & 0xe6) == 0xe6 &&
        (b7 & (1u << 16)) && (b7 & (1u << 17)) && (b7 & (1u << 30)) &&
        (b7 & (1u << 31)))
        f |= VEC_F_AVX512;
    return f;
}
#elif defined(RCP_HAVE_X86) && (defined(__x86_64__) || defined(_M_X64))
static unsigned vec_cpu_features(void)
{
    return VEC_F_SSE2;   /* no CPUID access: SSE2 is x86-64 baseline */
}
#elif defined(RCP_HAVE_NEON)
static unsigned vec_cpu_features(void)
{
    return VEC_F_NEON;   /* Advanced SIMD is baseline on AArch64 */
}
#else
static unsigned vec_cpu_features(void)
{
    return 0;
}
#endif

static const struct vec_ops *vec_cur;
static char vec_errbuf[160];

static int vec_supported(const struct vec_ops *o)
{
    return o != NULL && (vec_cpu_features() & o->need) == o->need;
}

static const struct vec_ops *vec_best(void)
{
    size_t i;
    for (i = 0; i < VEC_NPATHS; i++)
        if (vec_supported(vec_paths[i].ops))
            return vec_paths[i].ops;
    return &vec_scalar_ops;
}

static const struct vec_ops *vec_ops(void)
{
    if (vec_cur == NULL)
        vec_cur = vec_best();
    return vec_cur;
}

/* The path named name, or NULL with vec_errbuf saying why. */
static const struct vec_ops *vec_lookup(const char *name)
{
    size_t i;
    for (i = 0; i < VEC_NPATHS; i++) {
        if (strcmp(vec_paths[i].name, name) != 0)
            continue;
        if (vec_supported(vec_paths[i].ops))
            return vec_paths[i].ops;
        snprintf(vec_errbuf, sizeof vec_errbuf, "SIMD path \"%s\" %s", name,
                 vec_paths[i].ops ? "is not supported by this CPU or OS"
                                  : "is not built into this binary");
        return NULL;
    }
    snprintf(vec_errbuf, sizeof vec_errbuf,
             "unknown SIMD path \"%.40s\" (known: scalar, sse2, avx2, "
             "avx512, neon)", name);
    return NULL;
}

int rcp_vec_init(const char *name, const char **err)
{
    const struct vec_ops *o;
    if (name == NULL || *name == '\0')
        name = getenv("RCP_SIMD");
    if (name == NULL || *name == '\0') {
        vec_cur = vec_best();
        return 0;
    }
    o = vec_lookup(name);
    if (o == NULL) {
        if (err != NULL)
            *err = vec_errbuf;
        return -1;
    }
    vec_cur = o;
    return 0;
}

const char *rcp_vec_path(void)
{
    return vec_ops()->name;
}

int rcp_vec_path_available(const char *name)
{
    size_t i;
    if (name == NULL)
        return 0;
    for (i = 0; i < VEC_NPATHS; i++)
        if (strcmp(vec_paths[i].name, name) == 0)
            return vec_supported(vec_paths[i].ops);
    return 0;
}

double rcp_vec_flops_probe(size_t iters)
{
    return vec_ops()->flops(iters);
}

/* MARK: - Dense kernels --------------------------------------------------- */

float rcp_vec_dot(const float *a, const float *b, size_t n)
{
    return n ? vec_ops()->dot(a, b, n) : 0.0f;
}

float rcp_vec_l2sq(const float *a, const float *b, size_t n)
{
    return n ? vec_ops()->l2sq(a, b, n) : 0.0f;
}

float rcp_vec_sum(const float *a, size_t n)
{
    return n ? vec_ops()->sum(a, n) : 0.0f;
}

/* The root goes through a float object in memory: i686's sqrtf leaves
** its result in the x87 register unrounded, and GCC takes that for a float
** (no assignment or cast would round it), so without the store the excess
** precision would leak into every cosine. */
float rcp_vec_norm(const float *a, size_t n)
{
    volatile float r = sqrtf(rcp_vec_dot(a, a, n));
    return r;
}

/* The length in double when the float sum of squares overflowed: finite
** for any finite components. */
static double vec_norm_wide(const float *a, size_t n)
{
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s += (double)a[i] * a[i];
    return sqrt(s);
}

float rcp_vec_normalize(float *a, size_t n)
{
    float len = rcp_vec_norm(a, n);
    double wide = len;
    size_t i;
    if (len > FLT_MAX)
        wide = vec_norm_wide(a, n);
    if (!(wide > 0.0) || wide > DBL_MAX)
        return len;
    for (i = 0; i < n; i++)
        a[i] = (float)(a[i] / wide);
    return len;
}

float rcp_vec_cosine(const float *a, const float *b, size_t n)
{
    float na = rcp_vec_norm(a, n), nb = rcp_vec_norm(b, n), den;
    if (!(na > 0.0f) || !(nb > 0.0f))
        return 0.0f;
    den = na * nb;                  /* rounded, as the scalar kernels do */
    return (float)(rcp_vec_dot(a, b, n) / den);
}

/* MARK: - Top-k (§7.7.1: a total, deterministic order) ------------------- */

/* 1 when a ranks strictly before b: higher score, then lower row. */
static int vec_before(float sa, size_t ra, float sb, size_t rb)
{
    return sa > sb || (sa == sb && ra < rb);
}

/* hits[] is a heap with the worst held hit at the root. */
static void vec_sift_down(rcp_vec_hit *h, size_t n, size_t i)
{
    rcp_vec_hit x = h[i];
    size_t c;
    while ((c = 2 * i + 1) < n) {
        if (c + 1 < n && vec_before(h[c].score, h[c].row,
                                    h[c + 1].score, h[c + 1].row))
            c++;
        if (!vec_before(x.score, x.row, h[c].score, h[c].row))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void vec_sift_up(rcp_vec_hit *h, size_t i)
{
    rcp_vec_hit x = h[i];
    size_t p;
    while (i > 0) {
        p = (i - 1) / 2;
        if (!vec_before(h[p].score, h[p].row, x.score, x.row))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

void rcp_vec_topk_init(rcp_vec_topk *t, rcp_vec_hit *hits, size_t k)
{
    t->hits = hits;
    t->k = k;
    t->n = 0;
}

void rcp_vec_topk_push(rcp_vec_topk *t, float score, size_t row)
{
    if (score != score)
        score = -HUGE_VALF;
    if (t->n < t->k) {
        t->hits[t->n].score = score;
        t->hits[t->n].row = row;
        vec_sift_up(t->hits, t->n++);
    } else if (t->k > 0 && vec_before(score, row, t->hits[0].score,
                                      t->hits[0].row)) {
        t->hits[0].score = score;
        t->hits[0].row = row;
        vec_sift_down(t->hits, t->n, 0);
    }
}

static int vec_hit_cmp(const void *pa, const void *pb)
{
    const rcp_vec_hit *a = pa, *b = pb;
    if (vec_before(a->score, a->row, b->score, b->row))
        return -1;
    return vec_before(b->score, b->row, a->score, a->row);
}

size_t rcp_vec_topk_sort(rcp_vec_topk *t)
{
    if (t->n > 1)
        qsort(t->hits, t->n, sizeof t->hits[0], vec_hit_cmp);
    return t->n;
}

/* MARK: - Scans ------------------------------------------------------------ */

#define VEC_BLOCK 64   /* rows scored per kernel call (stack arrays) */

/* Rows [r, r + n) are all allowed (the common case: score them as one
** block) -- else the caller scores row by row. */
static int vec_all_allowed(const unsigned char *allow, size_t r, size_t n)
{
    size_t i;
    if (allow == NULL)
        return 1;
    for (i = r; i < r + n; i++)
        if (!RCP_VEC_ALLOWED(allow, i))
            return 0;
    return 1;
}

static void vec_offer(rcp_vec_topk *t, const float *s, size_t r, size_t n,
                      const unsigned char *allow)
{
    size_t i;
    for (i = 0; i < n; i++)
        /* below the worst kept cannot enter (the one test, inline) */
        if (!(t->k && t->n == t->k && s[i] < t->hits[0].score)
            && RCP_VEC_ALLOWED(allow, r + i))
            rcp_vec_topk_push(t, s[i], r + i);
}

void rcp_vec_scan(rcp_vec_topk *t, const float *q, const float *m, size_t d,
                  size_t begin, size_t end, const unsigned char *allow)
{
    const struct vec_ops *o = vec_ops();
    float s[VEC_BLOCK];
    size_t r, n, i;
    for (r = begin; r < end; r += n) {
        n = end - r < VEC_BLOCK ? end - r : VEC_BLOCK;
        if (d == 0 || vec_all_allowed(allow, r, n)) {
            if (d > 0)
                o->scores(q, m + r * d, d, n, s);
            else
                memset(s, 0, sizeof s);
        } else {
            for (i = 0; i < n; i++)
                s[i] = RCP_VEC_ALLOWED(allow, r + i)
                           ? o->dot(q, m + (r + i) * d, d) : 0.0f;
        }
        vec_offer(t, s, r, n, allow);
    }
}

size_t rcp_vec_search(const float *q, const float *m, size_t n, size_t d,
                      size_t k, const unsigned char *allow, rcp_vec_hit *out)
{
    rcp_vec_topk t;
    rcp_vec_topk_init(&t, out, k);
    rcp_vec_scan(&t, q, m, d, 0, n, allow);
    return rcp_vec_topk_sort(&t);
}

/* MARK: - MaxSim (§7.5) --------------------------------------------------- */

/* Work is tiled so no memory is allocated: up to VEC_QTILE query rows
** (their running maxima) against VEC_DTILE document rows (their scales:
** 1/|d| for cosine, 1 for dot; the tile stays in L1 for dim <= 128) at a
** time, in 4 x 4 blocks of the path's dot4x4 -- unless the path has its
** own maxsim for the query tile. */
#define VEC_QTILE 32
#define VEC_DTILE 32

static float vec_inv_len(const float *a, size_t n, rcp_vec_sim sim)
{
    float len;
    if (sim != RCP_VEC_COSINE)
        return 1.0f;
    len = rcp_vec_norm(a, n);
    return len > 0.0f ? (float)(1.0f / len) : 0.0f;
}

/* Rows [i, i+4) x [j, j+4) of a tile; past the end, rows repeat the last
** one and their results are dropped. */
static void vec_maxsim_block(const float *qm, size_t nq, size_t i,
                             const float *dm, size_t nd, size_t j,
                             size_t dim, const float *ds, float *best)
{
    const float *qr[4], *dr[4];
    float out[16], v;
    size_t a, b;
    for (a = 0; a < 4; a++) {
        qr[a] = qm + (i + a < nq ? i + a : nq - 1) * dim;
        dr[a] = dm + (j + a < nd ? j + a : nd - 1) * dim;
    }
    vec_ops()->dot4x4(qr, dr, dim, out);
    for (a = 0; a < 4 && i + a < nq; a++)
        for (b = 0; b < 4 && j + b < nd; b++) {
            v = out[a * 4 + b] * ds[j + b];
            if (v > best[i + a])
                best[i + a] = v;
        }
}

static void vec_maxsim_tile(const float *qm, size_t nq, const float *dm,
                            size_t nd, size_t dim, rcp_vec_sim sim,
                            float *best)
{
    float ds[VEC_DTILE];
    size_t d0, dn, j, i;
    const struct vec_ops *o = vec_ops();
    if (o->maxsim && o->maxsim(qm, nq, dm, nd, dim, sim == RCP_VEC_COSINE,
                               best))
        return;
    for (d0 = 0; d0 < nd; d0 += dn) {
        dn = nd - d0 < VEC_DTILE ? nd - d0 : VEC_DTILE;
        for (j = 0; j < dn; j++)
            ds[j] = vec_inv_len(dm + (d0 + j) * dim, dim, sim);
        for (i = 0; i < nq; i += 4)
            for (j = 0; j < dn; j += 4)
                vec_maxsim_block(qm, nq, i, dm + d0 * dim, dn, j, dim, ds,
                                 best);
    }
}

float rcp_vec_maxsim(const float *qm, size_t nq, const float *dm, size_t nd,
                     size_t dim, rcp_vec_sim sim)
{
    float best[VEC_QTILE];
    double total = 0;
    size_t q0, qn, i;
    if (nq == 0 || nd == 0)
        return 0.0f;
    for (q0 = 0; q0 < nq; q0 += qn) {
        qn = nq - q0 < VEC_QTILE ? nq - q0 : VEC_QTILE;
        for (i = 0; i < qn; i++)
            best[i] = -HUGE_VALF;
        vec_maxsim_tile(qm + q0 * dim, qn, dm, nd, dim, sim, best);
        for (i = 0; i < qn; i++) {
            /* the float product rounded first, as FLT_EVAL_METHOD 0 does */
            float c = best[i] * vec_inv_len(qm + (q0 + i) * dim, dim, sim);
            total += c;
        }
    }
    return (float)total;
}

/* MARK: - Sparse dot (§7.4) ----------------------------------------------- */

float rcp_vec_sparse_dot(const uint32_t *ai, const float *av, size_t an,
                         const uint32_t *bi, const float *bv, size_t bn)
{
    size_t i = 0, j = 0;
    float s = 0;
    while (i < an && j < bn) {
        if (ai[i] < bi[j])
            i++;
        else if (ai[i] > bi[j])
            j++;
        else {
            float p = av[i++] * bv[j++];    /* rounded, as in the kernels */
            s += p;
        }
    }
    return s;
}

/* MARK: - 8-bit quantised store ------------------------------------------ */

/* Query components are rounded to integers in [-Q8_QMAX, Q8_QMAX]:
** 2 * 255 * 63 < 2^15, so x86's pairwise u8 x s8 -> int16 step cannot
** saturate (its 2x speed-up over widening first is what makes the 8-bit
** scan ~3x faster than the float one), and 255 * 63 * 65536 < 2^31, so the
** int32 dot of a row cannot overflow at RCP_VEC_Q8_MAX_DIM.  Re-scoring
** with the floats repairs the coarser query. */
#define Q8_QMAX 63

void rcp_vec_q8_init(rcp_vec_q8 *s, size_t d)
{
    memset(s, 0, sizeof *s);
    s->d = d;
}

void rcp_vec_q8_free(rcp_vec_q8 *s)
{
    if (s == NULL)
        return;
    rcp_free(s->codes);
    rcp_free(s->scale);
    rcp_free(s->offset);
    rcp_vec_q8_init(s, s->d);
}

static float vec_finite_or_0(float x)
{
    return x - x == 0.0f ? x : 0.0f;
}

/* Per-row affine code: offset = min, scale = (max - min) / 255, each
** code round((x - offset) / scale), by one multiplication with the
** inverse (a division each was a tenth of a bulk load; a value halfway
** between two codes may take either).  A row with a non-finite
** component (stored as 0) or a step too small to invert takes the same
** steps with a test per component; a finite row none. */
static void vec_q8_code_row(uint8_t *c, const float *v, size_t d, float lo,
                            float inv, int checked)
{
    size_t i;
    float x;
    for (i = 0; i < d; i++) {
        x = checked ? vec_finite_or_0(v[i]) : v[i];
        x = (x - lo) * inv + 0.5f;      /* >= 0.5: x >= lo, inv >= 0 */
        x = x < 255.0f ? x : 255.0f;
        c[i] = (uint8_t)(int)x;
    }
}

void rcp_vec_q8_set(rcp_vec_q8 *s, size_t r, const float *v)
{
    float lo, hi, x, inv = 0;
    double scale;
    int bad = 0;
    size_t i;
    lo = hi = s->d ? vec_finite_or_0(v[0]) : 0;
    for (i = 0; i < s->d; i++) {
        x = v[i];
        bad |= !(x - x == 0.0f);
        lo = x < lo ? x : lo;           /* a NaN is neither */
        hi = x > hi ? x : hi;
    }
    if (bad) {          /* again, each non-finite component as 0 */
        lo = hi = 0;
        for (i = 0; i < s->d; i++) {
            x = vec_finite_or_0(v[i]);
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
    }
    scale = ((double)hi - lo) / 255.0;
    if (scale > 0 && 1.0 / scale <= FLT_MAX)
        inv = (float)(1.0 / scale);
    else
        bad = 1;                        /* inv 0: every code 0 */
    vec_q8_code_row(s->codes + r * s->d, v, s->d, lo, inv, bad);
    s->scale[r] = (float)scale;
    s->offset[r] = lo;
}

static int vec_q8_grow(rcp_vec_q8 *s)
{
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint8_t *c;
    float *sc, *of;
    if (s->d == 0 || s->d > RCP_VEC_Q8_MAX_DIM || cap > SIZE_MAX / s->d)
        return -1;
    c = rcp_realloc(s->codes, cap * s->d);
    if (c == NULL)
        return -1;
    s->codes = c;
    sc = rcp_realloc(s->scale, cap * sizeof *sc);
    if (sc == NULL)
        return -1;
    s->scale = sc;
    of = rcp_realloc(s->offset, cap * sizeof *of);
    if (of == NULL)
        return -1;
    s->offset = of;
    s->cap = cap;
    return 0;
}

int rcp_vec_q8_reserve(rcp_vec_q8 *s, size_t rows)
{
    while (s->cap < rows)
        if (vec_q8_grow(s) != 0)
            return -1;
    return 0;
}

int rcp_vec_q8_add(rcp_vec_q8 *s, const float *v)
{
    if (s->n == s->cap && vec_q8_grow(s) != 0)
        return -1;
    rcp_vec_q8_set(s, s->n, v);
    s->n++;
    return 0;
}

/* The query as integers qc with q ~ qs * qc, and the sum of q (the
** offset term: q . x = offset * sum(q) + scale * sum(q_i * c_i)). */
struct vec_q8q {
    int8_t  *qc;
    float    qs, qsum;
};

static int vec_q8_query(struct vec_q8q *qq, const float *q, size_t d)
{
    double amax = 0, sum = 0, x;
    size_t i;
    qq->qc = rcp_malloc(d * sizeof *qq->qc);
    if (qq->qc == NULL)
        return -1;
    for (i = 0; i < d; i++) {
        x = vec_finite_or_0(q[i]);
        sum += x;
        amax = fabs(x) > amax ? fabs(x) : amax;
    }
    qq->qs = (float)(amax / Q8_QMAX);
    qq->qsum = (float)sum;
    for (i = 0; i < d; i++) {
        x = amax > 0 ? vec_finite_or_0(q[i]) / amax * Q8_QMAX : 0.0;
        qq->qc[i] = (int8_t)(x < 0 ? -(int)(0.5 - x) : (int)(x + 0.5));
    }
    return 0;
}

static void vec_q8_block(rcp_vec_topk *t, const rcp_vec_q8 *s,
                         const struct vec_q8q *qq, size_t r, size_t n,
                         const unsigned char *allow)
{
    int32_t dots[VEC_BLOCK];
    float sc[VEC_BLOCK];
    size_t i;
    if (vec_all_allowed(allow, r, n)) {
        vec_ops()->q8dot(qq->qc, s->codes + r * s->d, s->d, n, dots);
    } else {
        for (i = 0; i < n; i++)
            dots[i] = 0;
        for (i = 0; i < n; i++)
            if (RCP_VEC_ALLOWED(allow, r + i))
                vec_ops()->q8dot(qq->qc, s->codes + (r + i) * s->d, s->d, 1,
                                 dots + i);
    }
    for (i = 0; i < n; i++)
        sc[i] = s->offset[r + i] * qq->qsum
              + s->scale[r + i] * qq->qs * (float)dots[i];
    vec_offer(t, sc, r, n, allow);
}

int rcp_vec_q8_scan(rcp_vec_topk *t, const rcp_vec_q8 *s, const float *q,
                    size_t begin, size_t end, const unsigned char *allow)
{
    struct vec_q8q qq;
    size_t r, n;
    if (end > s->n)
        end = s->n;
    if (begin >= end)
        return 0;
    if (vec_q8_query(&qq, q, s->d) != 0)
        return -1;
    for (r = begin; r < end; r += n) {
        n = end - r < VEC_BLOCK ? end - r : VEC_BLOCK;
        vec_q8_block(t, s, &qq, r, n, allow);
    }
    rcp_free(qq.qc);
    return 0;
}

void rcp_vec_rescore(rcp_vec_hit *hits, size_t n, const float *q,
                     const float *m, size_t d)
{
    rcp_vec_topk t;
    size_t i;
    for (i = 0; i < n; i++) {
        hits[i].score = rcp_vec_dot(q, m + hits[i].row * d, d);
        if (hits[i].score != hits[i].score)
            hits[i].score = -HUGE_VALF;
    }
    t.hits = hits;
    t.k = t.n = n;
    rcp_vec_topk_sort(&t);
}

long rcp_vec_q8_search(const rcp_vec_q8 *s, const float *q, const float *m,
                       size_t k, size_t cand, const unsigned char *allow,
                       rcp_vec_hit *out)
{
    rcp_vec_topk t;
    rcp_vec_hit *c;
    size_t nc, got;
    if (k == 0 || s->n == 0)
        return 0;
    nc = cand ? cand : RCP_VEC_Q8_CAND(k);
    nc = nc < k ? k : nc > s->n ? s->n : nc;
    c = rcp_malloc(nc * sizeof *c);
    if (c == NULL)
        return -1;
    rcp_vec_topk_init(&t, c, nc);
    if (rcp_vec_q8_scan(&t, s, q, 0, s->n, allow) != 0) {
        rcp_free(c);
        return -1;
    }
    got = rcp_vec_topk_sort(&t);
    if (m != NULL)
        rcp_vec_rescore(c, got, q, m, s->d);
    got = got < k ? got : k;
    memcpy(out, c, got * sizeof *c);
    rcp_free(c);
    return (long)got;
}

/* MARK: - f32-base64 (§7.3.1, RFC 4648 §4) ------------------------------- */

static const char vec_b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Byte -> 6-bit value; 0x100 marks every byte outside the alphabet ('='
** included: padding is handled before the table is consulted). */
#define X 0x100
static const uint16_t vec_b64_value[256] = {
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, 62, X, X, X, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, X, X, X, X, X, X,
    X, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, X, X, X, X, X,
    X, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X
};
#undef X

static const char *const vec_b64_messages[] = {
    "ok",
    "invalid base64 character",
    "invalid base64 padding",
    "decoded vector is not dimension x 4 bytes"
};

const char *rcp_vec_b64_message(rcp_vec_b64_err e)
{
    if ((unsigned)e >= sizeof vec_b64_messages / sizeof vec_b64_messages[0])
        return "unknown base64 error";
    return vec_b64_messages[e];
}

size_t rcp_vec_b64_len(size_t n)
{
    return (n * 4 + 2) / 3 * 4;
}

/* binary32 bits as 4 little-endian bytes, whatever the host order. */
static void vec_put_le(unsigned char *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    b[0] = (unsigned char)u;
    b[1] = (unsigned char)(u >> 8);
    b[2] = (unsigned char)(u >> 16);
    b[3] = (unsigned char)(u >> 24);
}

static float vec_get_le(const unsigned char *b)
{
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8
               | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* 3 bytes -> 4 characters. */
static void vec_b64_put3(char *o, const unsigned char *b)
{
    uint32_t v = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
    o[0] = vec_b64_alphabet[v >> 18];
    o[1] = vec_b64_alphabet[(v >> 12) & 63];
    o[2] = vec_b64_alphabet[(v >> 6) & 63];
    o[3] = vec_b64_alphabet[v & 63];
}

/* The last 4 or 8 bytes (n % 3 floats): one or two '=' of padding. */
static size_t vec_b64_tail(char *o, const float *v, size_t n)
{
    unsigned char b[9] = { 0 };
    size_t i, nb = n * 4, len;
    for (i = 0; i < n; i++)
        vec_put_le(b + 4 * i, v[i]);
    vec_b64_put3(o, b);
    vec_b64_put3(o + 4, b + 3);
    len = nb == 4 ? 8 : 12;
    if (nb == 8)
        vec_b64_put3(o + 8, b + 6);
    o[len - 1] = '=';
    if (nb == 4)
        o[len - 2] = '=';
    return len;
}

static uint32_t vec_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* 24 bits -> 4 characters. */
static void vec_b64_put24(char *o, uint32_t g)
{
    o[0] = vec_b64_alphabet[g >> 18];
    o[1] = vec_b64_alphabet[(g >> 12) & 63];
    o[2] = vec_b64_alphabet[(g >> 6) & 63];
    o[3] = vec_b64_alphabet[g & 63];
}

/* Three floats = 12 little-endian bytes b0..b11 -> 16 characters, straight
** from the words (w0 holds b0 in its low byte). */
static void vec_b64_put12(char *o, uint32_t w0, uint32_t w1, uint32_t w2)
{
    vec_b64_put24(o, (w0 & 0xff) << 16 | (w0 & 0xff00) | (w0 >> 16 & 0xff));
    vec_b64_put24(o + 4, (w0 >> 24) << 16 | (w1 & 0xff) << 8
                         | (w1 >> 8 & 0xff));
    vec_b64_put24(o + 8, (w1 >> 16 & 0xff) << 16 | (w1 >> 24) << 8
                         | (w2 & 0xff));
    vec_b64_put24(o + 12, (w2 >> 8 & 0xff) << 16 | (w2 >> 16 & 0xff) << 8
                          | (w2 >> 24));
}

size_t rcp_vec_b64_encode(char *out, const float *v, size_t n)
{
    const struct vec_ops *ops = vec_ops();
    size_t i = ops->b64enc ? ops->b64enc(out, v, n) : 0;
    char *o = out + i / 3 * 16;
    for (; i + 3 <= n; i += 3, o += 16)
        vec_b64_put12(o, vec_bits(v[i]), vec_bits(v[i + 1]),
                      vec_bits(v[i + 2]));
    if (i < n)
        o += vec_b64_tail(o, v + i, n - i);
    return (size_t)(o - out);
}

/* 4 characters -> 24 bits, plus bit 24 when one is not in the alphabet. */
static uint32_t vec_b64_get4(const char *t)
{
    const unsigned char *u = (const unsigned char *)t;
    uint32_t a = vec_b64_value[u[0]], b = vec_b64_value[u[1]],
             c = vec_b64_value[u[2]], d = vec_b64_value[u[3]];
    return ((a << 18 | b << 12 | c << 6 | d) & 0xffffffu)
         | ((a | b | c | d) & 0x100u) << 16;
}

static void vec_b64_bytes3(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 16);
    b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)v;
}

static float vec_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Sixteen characters = four 24-bit groups = 12 little-endian bytes -> 3
** floats; the result has bit 24 set when a character is outside the
** alphabet (out then holds garbage, and the caller reports the error). */
static uint32_t vec_b64_get16(float *out, const char *t)
{
    uint32_t v0 = vec_b64_get4(t), v1 = vec_b64_get4(t + 4),
             v2 = vec_b64_get4(t + 8), v3 = vec_b64_get4(t + 12);
    out[0] = vec_float((v0 >> 16 & 0xff) | (v0 & 0xff00)
                       | (v0 & 0xff) << 16 | (v1 >> 16 & 0xff) << 24);
    out[1] = vec_float((v1 >> 8 & 0xff) | (v1 & 0xff) << 8
                       | (v2 >> 16 & 0xff) << 16 | (v2 >> 8 & 0xff) << 24);
    out[2] = vec_float((v2 & 0xff) | (v3 >> 16 & 0xff) << 8
                       | (v3 >> 8 & 0xff) << 16 | (v3 & 0xff) << 24);
    return v0 | v1 | v2 | v3;
}

/* The final 8 or 12 characters (one or two floats) with their padding.
** RFC 4648 §3.5: the bits under the padding must be zero (canonical). */
static rcp_vec_b64_err vec_b64_tail_dec(float *out, size_t nf,
                                        const char *t, size_t pads)
{
    char last[4];
    unsigned char b[9];
    uint32_t v, bad = 0;
    size_t g, ng = nf == 1 ? 2 : 3, i;
    for (g = 0; g + 1 < ng; g++) {
        v = vec_b64_get4(t + 4 * g);
        bad |= v >> 24;
        vec_b64_bytes3(b + 3 * g, v);
    }
    memcpy(last, t + 4 * g, 4);
    last[3] = 'A';
    if (pads == 2)
        last[2] = 'A';
    v = vec_b64_get4(last);
    if ((bad | v >> 24) != 0)
        return RCP_VEC_B64_E_CHAR;
    if ((pads == 2 ? v & 0xffff : v & 0xff) != 0)
        return RCP_VEC_B64_E_PADDING;
    vec_b64_bytes3(b + 3 * g, v);
    for (i = 0; i < nf; i++)
        out[i] = vec_get_le(b + 4 * i);
    return RCP_VEC_B64_OK;
}

rcp_vec_b64_err rcp_vec_b64_decode(float *out, size_t dim, const char *text,
                                   size_t len)
{
    size_t pads = 0, i, full = dim / 3;
    uint32_t bad = 0;
    if (len % 4 != 0)
        return RCP_VEC_B64_E_PADDING;
    while (pads < len && pads < 3 && text[len - 1 - pads] == '=')
        pads++;
    if (pads > 2)
        return RCP_VEC_B64_E_PADDING;
    if (dim > SIZE_MAX / 4 || len / 4 * 3 - pads != dim * 4)
        return RCP_VEC_B64_E_LENGTH;
    i = vec_ops()->b64dec ? vec_ops()->b64dec(out, text, full * 3, &bad) / 3
                          : 0;
    bad <<= 24;
    for (; i < full; i++)
        bad |= vec_b64_get16(out + 3 * i, text + 16 * i);
    if (bad >> 24)
        return RCP_VEC_B64_E_CHAR;
    if (dim % 3 == 0)
        return RCP_VEC_B64_OK;
    return vec_b64_tail_dec(out + 3 * full, dim % 3, text + 16 * full, pads);
}

#endif /* VEC_UNIT */
