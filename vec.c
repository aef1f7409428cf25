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
**  2. A path is a table of seven kernels (struct vec_ops).  Everything
**     else -- top-k, filtering, MaxSim's maxima, quantisation, re-scoring,
**     base64 -- is portable C shared by all paths, so paths can differ only
**     in how a kernel orders its additions.
**  3. The path is chosen once: rcp_vec_init() (RCP_SIMD, or the best the
**     CPU and OS support), or on first use.  Asking for a path that is
**     unknown, not built, or unsupported is an error, never a fallback.
**  4. The top-k order is total (score descending, then row ascending, NaN
**     as -infinity), so results never depend on the order rows were
**     offered in, nor on how a scan was split into chunks.
**  5. The quantised dot is exact integer arithmetic (u8 codes times an
**     int8-range query, int32 sums that cannot overflow for d <= 65536),
**     so every path gives bit-identical approximate scores.
**  6. Base64 reads and writes binary32 through shifts on uint32_t, so the
**     wire is little-endian on any host (§7.3.1).
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
    void   P##_q8dot(const int16_t *qc, const uint8_t *codes, size_t d,    \
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

/* Four rows share each load of q. */
static void sse2_scores4(const float *q, const float *m, size_t d,
                         float *out)
{
    __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, x;
    size_t i, j;
    for (i = 0; i + 4 <= d; i += 4) {
        x = _mm_loadu_ps(q + i);
        s0 = _mm_add_ps(s0, _mm_mul_ps(x, _mm_loadu_ps(m + i)));
        s1 = _mm_add_ps(s1, _mm_mul_ps(x, _mm_loadu_ps(m + d + i)));
        s2 = _mm_add_ps(s2, _mm_mul_ps(x, _mm_loadu_ps(m + 2 * d + i)));
        s3 = _mm_add_ps(s3, _mm_mul_ps(x, _mm_loadu_ps(m + 3 * d + i)));
    }
    out[0] = sse2_hsum(s0);
    out[1] = sse2_hsum(s1);
    out[2] = sse2_hsum(s2);
    out[3] = sse2_hsum(s3);
    for (j = 0; j < 4; j++)
        for (i = d & ~(size_t)3; i < d; i++)
            out[j] += q[i] * m[j * d + i];
}

void vec_sse2_scores(const float *q, const float *m, size_t d, size_t nrows,
                     float *out)
{
    size_t r = 0;
    for (; r + 4 <= nrows; r += 4)
        sse2_scores4(q, m + r * d, d, out + r);
    for (; r < nrows; r++)
        out[r] = vec_sse2_dot(q, m + r * d, d);
}

/* Two query rows times four document rows: 8 accumulators, 14 registers. */
static void sse2_dot2x4(const float *const *qr, const float *const *dr,
                        size_t dim, float *out)
{
    __m128 acc[8], a0, a1, b;
    size_t i, j;
    for (j = 0; j < 8; j++)
        acc[j] = _mm_setzero_ps();
    for (i = 0; i + 4 <= dim; i += 4) {
        a0 = _mm_loadu_ps(qr[0] + i);
        a1 = _mm_loadu_ps(qr[1] + i);
        for (j = 0; j < 4; j++) {
            b = _mm_loadu_ps(dr[j] + i);
            acc[j] = _mm_add_ps(acc[j], _mm_mul_ps(a0, b));
            acc[4 + j] = _mm_add_ps(acc[4 + j], _mm_mul_ps(a1, b));
        }
    }
    for (j = 0; j < 8; j++)
        out[(j >> 2) * 4 + (j & 3)] = sse2_hsum(acc[j]);
    for (j = 0; j < 8; j++)
        for (i = dim & ~(size_t)3; i < dim; i++)
            out[(j >> 2) * 4 + (j & 3)] += qr[j >> 2][i] * dr[j & 3][i];
}

void vec_sse2_dot4x4(const float *const *qr, const float *const *dr,
                     size_t dim, float *out)
{
    sse2_dot2x4(qr, dr, dim, out);
    sse2_dot2x4(qr + 2, dr, dim, out + 8);
}

static int32_t sse2_q8row(const int16_t *qc, const uint8_t *c, size_t d)
{
    __m128i s = _mm_setzero_si128(), z = _mm_setzero_si128(), x;
    size_t i = 0;
    int32_t t;
    for (; i + 8 <= d; i += 8) {
        x = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(c + i)), z);
        s = _mm_add_epi32(s, _mm_madd_epi16(x,
                _mm_loadu_si128((const __m128i *)(qc + i))));
    }
    t = sse2_hsum_i32(s);
    for (; i < d; i++)
        t += (int32_t)qc[i] * c[i];
    return t;
}

void vec_sse2_q8dot(const int16_t *qc, const uint8_t *codes, size_t d,
                    size_t nrows, int32_t *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = sse2_q8row(qc, codes + r * d, d);
}

double vec_sse2_flops(size_t iters)
{
    __m128 acc[12], x = _mm_set1_ps(0.999f), y = _mm_set1_ps(0.001f);
    float sink[4];
    size_t i, j;
    for (j = 0; j < 12; j++)
        acc[j] = _mm_set1_ps((float)j);
    for (i = 0; i < iters; i++)
        for (j = 0; j < 12; j++)
            acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], x), y);
    for (j = 1; j < 12; j++)
        acc[0] = _mm_add_ps(acc[0], acc[j]);
    _mm_storeu_ps(sink, acc[0]);
    return sink[0] == 12345.0f ? 0.0 : (double)iters * 12 * 4 * 2;
}

/* MARK: - AVX2 + FMA path (unit) ----------------------------------------- */
#elif defined(RCP_VEC_UNIT_avx2)
#include <immintrin.h>

VEC_KERNELS(vec_avx2)

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

/* Four rows share each load of q. */
static void avx2_scores4(const float *q, const float *m, size_t d,
                         float *out)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, x;
    size_t i, j;
    for (i = 0; i + 8 <= d; i += 8) {
        x = _mm256_loadu_ps(q + i);
        s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(m + i), s0);
        s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(m + d + i), s1);
        s2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(m + 2 * d + i), s2);
        s3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(m + 3 * d + i), s3);
    }
    out[0] = avx2_hsum(s0);
    out[1] = avx2_hsum(s1);
    out[2] = avx2_hsum(s2);
    out[3] = avx2_hsum(s3);
    for (j = 0; j < 4; j++)
        for (i = d & ~(size_t)7; i < d; i++)
            out[j] += q[i] * m[j * d + i];
}

void vec_avx2_scores(const float *q, const float *m, size_t d, size_t nrows,
                     float *out)
{
    size_t r = 0;
    for (; r + 4 <= nrows; r += 4)
        avx2_scores4(q, m + r * d, d, out + r);
    for (; r < nrows; r++)
        out[r] = vec_avx2_dot(q, m + r * d, d);
}

/* The 8 sums of acc[0..8) in two vectors: lanes 0-3 of *lo hold acc 0-3. */
static void avx2_hsum8(const __m256 *acc, float *out)
{
    __m256 t0 = _mm256_hadd_ps(acc[0], acc[1]);
    __m256 t1 = _mm256_hadd_ps(acc[2], acc[3]);
    __m256 t2 = _mm256_hadd_ps(acc[4], acc[5]);
    __m256 t3 = _mm256_hadd_ps(acc[6], acc[7]);
    t0 = _mm256_hadd_ps(t0, t1);
    t2 = _mm256_hadd_ps(t2, t3);
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(t0),
                                  _mm256_extractf128_ps(t0, 1)));
    _mm_storeu_ps(out + 4, _mm_add_ps(_mm256_castps256_ps128(t2),
                                      _mm256_extractf128_ps(t2, 1)));
}

/* Two query rows times four document rows: 8 accumulators, 14 registers. */
static void avx2_dot2x4(const float *const *qr, const float *const *dr,
                        size_t dim, float *out)
{
    __m256 acc[8], a0, a1, b;
    size_t i, j;
    for (j = 0; j < 8; j++)
        acc[j] = _mm256_setzero_ps();
    for (i = 0; i + 8 <= dim; i += 8) {
        a0 = _mm256_loadu_ps(qr[0] + i);
        a1 = _mm256_loadu_ps(qr[1] + i);
        for (j = 0; j < 4; j++) {
            b = _mm256_loadu_ps(dr[j] + i);
            acc[j] = _mm256_fmadd_ps(a0, b, acc[j]);
            acc[4 + j] = _mm256_fmadd_ps(a1, b, acc[4 + j]);
        }
    }
    avx2_hsum8(acc, out);
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

/* Widen 16 codes to int16 and multiply-add pairs into int32 lanes. */
static __m256i avx2_q8step(__m256i s, const uint8_t *c, __m256i q)
{
    __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)c));
    return _mm256_add_epi32(s, _mm256_madd_epi16(x, q));
}

static void avx2_q8rows4(const int16_t *qc, const uint8_t *c, size_t d,
                         int32_t *out)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0, q;
    size_t i, j;
    for (i = 0; i + 16 <= d; i += 16) {
        q = _mm256_loadu_si256((const __m256i *)(qc + i));
        s0 = avx2_q8step(s0, c + i, q);
        s1 = avx2_q8step(s1, c + d + i, q);
        s2 = avx2_q8step(s2, c + 2 * d + i, q);
        s3 = avx2_q8step(s3, c + 3 * d + i, q);
    }
    out[0] = avx2_hsum_i32(s0);
    out[1] = avx2_hsum_i32(s1);
    out[2] = avx2_hsum_i32(s2);
    out[3] = avx2_hsum_i32(s3);
    for (j = 0; j < 4; j++)
        for (i = d & ~(size_t)15; i < d; i++)
            out[j] += (int32_t)qc[i] * c[j * d + i];
}

void vec_avx2_q8dot(const int16_t *qc, const uint8_t *codes, size_t d,
                    size_t nrows, int32_t *out)
{
    size_t r = 0, i;
    for (; r + 4 <= nrows; r += 4)
        avx2_q8rows4(qc, codes + r * d, d, out + r);
    for (; r < nrows; r++) {
        const uint8_t *c = codes + r * d;
        __m256i s = _mm256_setzero_si256();
        for (i = 0; i + 16 <= d; i += 16)
            s = avx2_q8step(s, c + i,
                            _mm256_loadu_si256((const __m256i *)(qc + i)));
        out[r] = avx2_hsum_i32(s);
        for (; i < d; i++)
            out[r] += (int32_t)qc[i] * c[i];
    }
}

double vec_avx2_flops(size_t iters)
{
    __m256 acc[12], x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(0.001f);
    float sink[8];
    size_t i, j;
    for (j = 0; j < 12; j++)
        acc[j] = _mm256_set1_ps((float)j);
    for (i = 0; i < iters; i++)
        for (j = 0; j < 12; j++)
            acc[j] = _mm256_fmadd_ps(acc[j], x, y);
    for (j = 1; j < 12; j++)
        acc[0] = _mm256_add_ps(acc[0], acc[j]);
    _mm256_storeu_ps(sink, acc[0]);
    return sink[0] == 12345.0f ? 0.0 : (double)iters * 12 * 8 * 2;
}

/* MARK: - AVX-512 path (unit) -------------------------------------------- */
#elif defined(RCP_VEC_UNIT_avx512)
#include <immintrin.h>

VEC_KERNELS(vec_avx512)

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

/* Four rows share each load of q; the tail is one masked step. */
static void avx512_scores4(const float *q, const float *m, size_t d,
                           float *out)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, x;
    __mmask16 k = (__mmask16)0xffff;
    size_t i;
    for (i = 0; i < d; i += 16) {
        if (d - i < 16)
            k = avx512_mask(d - i);
        x = _mm512_maskz_loadu_ps(k, q + i);
        s0 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(k, m + i), s0);
        s1 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(k, m + d + i), s1);
        s2 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(k, m + 2 * d + i), s2);
        s3 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(k, m + 3 * d + i), s3);
    }
    out[0] = _mm512_reduce_add_ps(s0);
    out[1] = _mm512_reduce_add_ps(s1);
    out[2] = _mm512_reduce_add_ps(s2);
    out[3] = _mm512_reduce_add_ps(s3);
}

void vec_avx512_scores(const float *q, const float *m, size_t d,
                       size_t nrows, float *out)
{
    size_t r = 0;
    for (; r + 4 <= nrows; r += 4)
        avx512_scores4(q, m + r * d, d, out + r);
    for (; r < nrows; r++)
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

/* The 16 sums of acc[0..16) as one vector, transposed: lane 4L+t holds the
** sum of acc[4t+L].  Accumulators are numbered acc[j*4 + i] (document row
** j, query row i), so lane i*4 + j is dot(qr[i], dr[j]). */
static __m512 avx512_hsum16(const __m512 *acc)
{
    __m512 v1[8], v2[4], v3[2], lo, hi;
    int i;
    for (i = 0; i < 8; i++)
        v1[i] = avx512_fold(acc[2 * i], acc[2 * i + 1], 0);
    for (i = 0; i < 4; i++)
        v2[i] = avx512_fold(v1[2 * i], v1[2 * i + 1], 1);
    for (i = 0; i < 2; i++)
        v3[i] = _mm512_add_ps(_mm512_unpacklo_ps(v2[2 * i], v2[2 * i + 1]),
                              _mm512_unpackhi_ps(v2[2 * i], v2[2 * i + 1]));
    lo = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(v3[0]),
                                             _mm512_castps_pd(v3[1])));
    hi = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(v3[0]),
                                             _mm512_castps_pd(v3[1])));
    return _mm512_add_ps(lo, hi);
}

/* Four query rows times four document rows: 16 accumulators, 20 of the
** 32 registers; the dimension tail is one masked step. */
void vec_avx512_dot4x4(const float *const *qr, const float *const *dr,
                       size_t dim, float *out)
{
    __m512 acc[16], a[4], b;
    __mmask16 k = (__mmask16)0xffff;
    size_t i, j, t;
    for (j = 0; j < 16; j++)
        acc[j] = _mm512_setzero_ps();
    for (i = 0; i < dim; i += 16) {
        if (dim - i < 16)
            k = avx512_mask(dim - i);
        for (t = 0; t < 4; t++)
            a[t] = _mm512_maskz_loadu_ps(k, qr[t] + i);
        for (j = 0; j < 4; j++) {
            b = _mm512_maskz_loadu_ps(k, dr[j] + i);
            for (t = 0; t < 4; t++)
                acc[j * 4 + t] = _mm512_fmadd_ps(a[t], b, acc[j * 4 + t]);
        }
    }
    _mm512_storeu_ps(out, avx512_hsum16(acc));
}

/* Widen 32 codes (k: which) to int16 and multiply-add pairs into int32. */
static __m512i avx512_q8step(__m512i s, const uint8_t *c, __m512i q,
                             __mmask32 k)
{
    __m512i x = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(k, c));
    return _mm512_add_epi32(s, _mm512_madd_epi16(x, q));
}

static void avx512_q8rows4(const int16_t *qc, const uint8_t *c, size_t d,
                           int32_t *out)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0, q;
    __mmask32 k = (__mmask32)0xffffffffu;
    size_t i;
    for (i = 0; i < d; i += 32) {
        if (d - i < 32)
            k = (__mmask32)((1u << (d - i)) - 1u);
        q = _mm512_maskz_loadu_epi16(k, qc + i);
        s0 = avx512_q8step(s0, c + i, q, k);
        s1 = avx512_q8step(s1, c + d + i, q, k);
        s2 = avx512_q8step(s2, c + 2 * d + i, q, k);
        s3 = avx512_q8step(s3, c + 3 * d + i, q, k);
    }
    out[0] = _mm512_reduce_add_epi32(s0);
    out[1] = _mm512_reduce_add_epi32(s1);
    out[2] = _mm512_reduce_add_epi32(s2);
    out[3] = _mm512_reduce_add_epi32(s3);
}

void vec_avx512_q8dot(const int16_t *qc, const uint8_t *codes, size_t d,
                      size_t nrows, int32_t *out)
{
    __m512i s, q;
    __mmask32 k;
    size_t r = 0, i;
    for (; r + 4 <= nrows; r += 4)
        avx512_q8rows4(qc, codes + r * d, d, out + r);
    for (; r < nrows; r++) {
        s = _mm512_setzero_si512();
        k = (__mmask32)0xffffffffu;
        for (i = 0; i < d; i += 32) {
            if (d - i < 32)
                k = (__mmask32)((1u << (d - i)) - 1u);
            q = _mm512_maskz_loadu_epi16(k, qc + i);
            s = avx512_q8step(s, codes + r * d + i, q, k);
        }
        out[r] = _mm512_reduce_add_epi32(s);
    }
}

double vec_avx512_flops(size_t iters)
{
    __m512 acc[16], x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.001f);
    float sink[16];
    size_t i, j;
    for (j = 0; j < 16; j++)
        acc[j] = _mm512_set1_ps((float)j);
    for (i = 0; i < iters; i++)
        for (j = 0; j < 16; j++)
            acc[j] = _mm512_fmadd_ps(acc[j], x, y);
    for (j = 1; j < 16; j++)
        acc[0] = _mm512_add_ps(acc[0], acc[j]);
    _mm512_storeu_ps(sink, acc[0]);
    return sink[0] == 12345.0f ? 0.0 : (double)iters * 16 * 16 * 2;
}

/* MARK: - NEON path (unit, aarch64) -------------------------------------- */
#elif defined(RCP_VEC_UNIT_neon)
#include <arm_neon.h>

VEC_KERNELS(vec_neon)

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

/* Four rows share each load of q. */
static void neon_scores4(const float *q, const float *m, size_t d,
                         float *out)
{
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0, x;
    size_t i, j;
    for (i = 0; i + 4 <= d; i += 4) {
        x = vld1q_f32(q + i);
        s0 = vfmaq_f32(s0, x, vld1q_f32(m + i));
        s1 = vfmaq_f32(s1, x, vld1q_f32(m + d + i));
        s2 = vfmaq_f32(s2, x, vld1q_f32(m + 2 * d + i));
        s3 = vfmaq_f32(s3, x, vld1q_f32(m + 3 * d + i));
    }
    out[0] = vaddvq_f32(s0);
    out[1] = vaddvq_f32(s1);
    out[2] = vaddvq_f32(s2);
    out[3] = vaddvq_f32(s3);
    for (j = 0; j < 4; j++)
        for (i = d & ~(size_t)3; i < d; i++)
            out[j] += q[i] * m[j * d + i];
}

void vec_neon_scores(const float *q, const float *m, size_t d, size_t nrows,
                     float *out)
{
    size_t r = 0;
    for (; r + 4 <= nrows; r += 4)
        neon_scores4(q, m + r * d, d, out + r);
    for (; r < nrows; r++)
        out[r] = vec_neon_dot(q, m + r * d, d);
}

/* Four query rows times four document rows: 16 accumulators of 32. */
void vec_neon_dot4x4(const float *const *qr, const float *const *dr,
                     size_t dim, float *out)
{
    float32x4_t acc[16], a[4], b;
    size_t i, j, t;
    for (j = 0; j < 16; j++)
        acc[j] = vdupq_n_f32(0);
    for (i = 0; i + 4 <= dim; i += 4) {
        for (t = 0; t < 4; t++)
            a[t] = vld1q_f32(qr[t] + i);
        for (j = 0; j < 4; j++) {
            b = vld1q_f32(dr[j] + i);
            for (t = 0; t < 4; t++)
                acc[t * 4 + j] = vfmaq_f32(acc[t * 4 + j], a[t], b);
        }
    }
    for (j = 0; j < 16; j++) {
        out[j] = vaddvq_f32(acc[j]);
        for (i = dim & ~(size_t)3; i < dim; i++)
            out[j] += qr[j >> 2][i] * dr[j & 3][i];
    }
}

static int32_t neon_q8row(const int16_t *qc, const uint8_t *c, size_t d)
{
    int32x4_t s0 = vdupq_n_s32(0), s1 = s0;
    int16x8_t x, q;
    size_t i = 0;
    int32_t t;
    for (; i + 8 <= d; i += 8) {
        x = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(c + i)));
        q = vld1q_s16(qc + i);
        s0 = vmlal_s16(s0, vget_low_s16(x), vget_low_s16(q));
        s1 = vmlal_high_s16(s1, x, q);
    }
    t = vaddvq_s32(vaddq_s32(s0, s1));
    for (; i < d; i++)
        t += (int32_t)qc[i] * c[i];
    return t;
}

void vec_neon_q8dot(const int16_t *qc, const uint8_t *codes, size_t d,
                    size_t nrows, int32_t *out)
{
    size_t r;
    for (r = 0; r < nrows; r++)
        out[r] = neon_q8row(qc, codes + r * d, d);
}

double vec_neon_flops(size_t iters)
{
    float32x4_t acc[16], x = vdupq_n_f32(0.999f), y = vdupq_n_f32(0.001f);
    size_t i, j;
    for (j = 0; j < 16; j++)
        acc[j] = vdupq_n_f32((float)j);
    for (i = 0; i < iters; i++)
        for (j = 0; j < 16; j++)
            acc[j] = vfmaq_f32(y, acc[j], x);
    for (j = 1; j < 16; j++)
        acc[0] = vaddq_f32(acc[0], acc[j]);
    return vgetq_lane_f32(acc[0], 0) == 12345.0f ? 0.0
                                                 : (double)iters * 16 * 4 * 2;
}

#else /* !VEC_UNIT: the main object */

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MARK: - Scalar reference kernels --------------------------------------- */

/* Four partial sums: independent chains the CPU can overlap.  This order is
** the reference; other paths differ from it only by rounding. */
static float vec_scalar_dot(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

static float vec_scalar_l2sq(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, e0, e1;
    size_t i = 0;
    for (; i + 2 <= n; i += 2) {
        e0 = a[i] - b[i];
        e1 = a[i + 1] - b[i + 1];
        s0 += e0 * e0;
        s1 += e1 * e1;
    }
    if (i < n)
        s0 += (a[i] - b[i]) * (a[i] - b[i]);
    return s0 + s1;
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
    return (s0 + s1) + (s2 + s3);
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

static void vec_scalar_q8dot(const int16_t *qc, const uint8_t *codes,
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

/* Twelve independent multiply-add chains; x < 1 keeps them finite. */
static double vec_scalar_flops(size_t iters)
{
    volatile float vx = 0.999f, vy = 0.001f, sink;
    float acc[12], x = vx, y = vy;
    size_t i, j;
    for (j = 0; j < 12; j++)
        acc[j] = (float)j;
    for (i = 0; i < iters; i++)
        for (j = 0; j < 12; j++)
            acc[j] = acc[j] * x + y;
    for (j = 1; j < 12; j++)
        acc[0] += acc[j];
    sink = acc[0];
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
    void   (*q8dot)(const int16_t *, const uint8_t *, size_t, size_t,
                    int32_t *);
    double (*flops)(size_t);
};

enum { VEC_F_SSE2 = 1, VEC_F_AVX2 = 2, VEC_F_AVX512 = 4, VEC_F_NEON = 8 };

#define VEC_OPS(name, need, P)                                              \
    { name, need, P##_dot, P##_l2sq, P##_sum, P##_scores, P##_dot4x4,      \
      P##_q8dot, P##_flops }

static const struct vec_ops vec_scalar_ops =
    VEC_OPS("scalar", 0, vec_scalar);

#if defined(RCP_HAVE_X86)
VEC_KERNELS(vec_sse2)
VEC_KERNELS(vec_avx2)
VEC_KERNELS(vec_avx512)
static const struct vec_ops vec_sse2_ops =
    VEC_OPS("sse2", VEC_F_SSE2, vec_sse2);
static const struct vec_ops vec_avx2_ops =
    VEC_OPS("avx2", VEC_F_AVX2, vec_avx2);
static const struct vec_ops vec_avx512_ops =
    VEC_OPS("avx512", VEC_F_AVX512, vec_avx512);
#endif
#if defined(RCP_HAVE_NEON)
VEC_KERNELS(vec_neon)
static const struct vec_ops vec_neon_ops =
    VEC_OPS("neon", VEC_F_NEON, vec_neon);
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

float rcp_vec_norm(const float *a, size_t n)
{
    return sqrtf(rcp_vec_dot(a, a, n));
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
    float na = rcp_vec_norm(a, n), nb = rcp_vec_norm(b, n);
    if (!(na > 0.0f) || !(nb > 0.0f))
        return 0.0f;
    return rcp_vec_dot(a, b, n) / (na * nb);
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
        if (RCP_VEC_ALLOWED(allow, r + i))
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

/* Work is tiled: up to VEC_TILE query rows (their running maxima) against
** VEC_TILE document rows (their inverse lengths) at a time, so no memory
** is allocated; inside a tile, 4 x 4 blocks of dot products. */
#define VEC_TILE 64

struct vec_tile {
    const float *qm, *dm;
    size_t       nq, nd, dim;        /* rows in this tile, row length */
    float        best[VEC_TILE];     /* max over documents so far */
    float        dinv[VEC_TILE];     /* 1/|d| (cosine) or 1 (dot) */
};

static float vec_inv_len(const float *a, size_t n, rcp_vec_sim sim)
{
    float len;
    if (sim != RCP_VEC_COSINE)
        return 1.0f;
    len = rcp_vec_norm(a, n);
    return len > 0.0f ? 1.0f / len : 0.0f;
}

/* Rows [i, i+4) x [j, j+4) of the tile; past the end, rows repeat the last
** one and their results are ignored. */
static void vec_block(struct vec_tile *tl, size_t i, size_t j)
{
    const float *qr[4], *dr[4];
    float out[16], v;
    size_t a, b;
    for (a = 0; a < 4; a++) {
        qr[a] = tl->qm + (i + a < tl->nq ? i + a : tl->nq - 1) * tl->dim;
        dr[a] = tl->dm + (j + a < tl->nd ? j + a : tl->nd - 1) * tl->dim;
    }
    vec_ops()->dot4x4(qr, dr, tl->dim, out);
    for (a = 0; a < 4 && i + a < tl->nq; a++)
        for (b = 0; b < 4 && j + b < tl->nd; b++) {
            v = out[a * 4 + b] * tl->dinv[j + b];
            if (v > tl->best[i + a])
                tl->best[i + a] = v;
        }
}

static void vec_tile_docs(struct vec_tile *tl, rcp_vec_sim sim)
{
    size_t i, j;
    for (j = 0; j < tl->nd; j++)
        tl->dinv[j] = vec_inv_len(tl->dm + j * tl->dim, tl->dim, sim);
    for (i = 0; i < tl->nq; i += 4)
        for (j = 0; j < tl->nd; j += 4)
            vec_block(tl, i, j);
}

float rcp_vec_maxsim(const float *qm, size_t nq, const float *dm, size_t nd,
                     size_t dim, rcp_vec_sim sim)
{
    struct vec_tile tl;
    double total = 0;
    size_t q0, d0, i;
    if (nq == 0 || nd == 0)
        return 0.0f;
    tl.dim = dim;
    for (q0 = 0; q0 < nq; q0 += VEC_TILE) {
        tl.qm = qm + q0 * dim;
        tl.nq = nq - q0 < VEC_TILE ? nq - q0 : VEC_TILE;
        for (i = 0; i < tl.nq; i++)
            tl.best[i] = -HUGE_VALF;
        for (d0 = 0; d0 < nd; d0 += VEC_TILE) {
            tl.dm = dm + d0 * dim;
            tl.nd = nd - d0 < VEC_TILE ? nd - d0 : VEC_TILE;
            vec_tile_docs(&tl, sim);
        }
        for (i = 0; i < tl.nq; i++)
            total += tl.best[i] * vec_inv_len(tl.qm + i * dim, dim, sim);
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
        else
            s += av[i++] * bv[j++];
    }
    return s;
}

/* MARK: - 8-bit quantised store ------------------------------------------ */

/* Query components are rounded to integers in [-Q8_QMAX, Q8_QMAX]:
** 255 * 127 * 65536 < 2^31, so the int32 dot of any row cannot overflow
** at RCP_VEC_Q8_MAX_DIM. */
#define Q8_QMAX 127

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

/* Per-row affine code: offset = min, scale = (max - min) / 255. */
void rcp_vec_q8_set(rcp_vec_q8 *s, size_t r, const float *v)
{
    uint8_t *c = s->codes + r * s->d;
    double lo = 0, hi = 0, x, scale;
    size_t i;
    for (i = 0; i < s->d; i++) {
        x = vec_finite_or_0(v[i]);
        if (i == 0 || x < lo)
            lo = x;
        if (i == 0 || x > hi)
            hi = x;
    }
    scale = (hi - lo) / 255.0;
    for (i = 0; i < s->d; i++) {
        x = scale > 0 ? (vec_finite_or_0(v[i]) - lo) / scale : 0.0;
        c[i] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : (int)(x + 0.5));
    }
    s->scale[r] = (float)scale;
    s->offset[r] = (float)lo;
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
    int16_t *qc;
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
        qq->qc[i] = (int16_t)(x < 0 ? -(int)(0.5 - x) : (int)(x + 0.5));
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

size_t rcp_vec_b64_encode(char *out, const float *v, size_t n)
{
    unsigned char b[12];
    char *o = out;
    size_t i;
    for (i = 0; i + 3 <= n; i += 3) {
        vec_put_le(b, v[i]);
        vec_put_le(b + 4, v[i + 1]);
        vec_put_le(b + 8, v[i + 2]);
        vec_b64_put3(o, b);
        vec_b64_put3(o + 4, b + 3);
        vec_b64_put3(o + 8, b + 6);
        vec_b64_put3(o + 12, b + 9);
        o += 16;
    }
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

/* Sixteen characters -> 12 bytes -> 3 floats; nonzero when a character is
** outside the alphabet. */
static uint32_t vec_b64_get16(float *out, const char *t)
{
    unsigned char b[12];
    uint32_t v0 = vec_b64_get4(t), v1 = vec_b64_get4(t + 4),
             v2 = vec_b64_get4(t + 8), v3 = vec_b64_get4(t + 12);
    vec_b64_bytes3(b, v0);
    vec_b64_bytes3(b + 3, v1);
    vec_b64_bytes3(b + 6, v2);
    vec_b64_bytes3(b + 9, v3);
    out[0] = vec_get_le(b);
    out[1] = vec_get_le(b + 4);
    out[2] = vec_get_le(b + 8);
    return (v0 | v1 | v2 | v3) >> 24;
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
    for (i = 0; i < full; i++)
        bad |= vec_b64_get16(out + 3 * i, text + 16 * i);
    if (bad)
        return RCP_VEC_B64_E_CHAR;
    if (dim % 3 == 0)
        return RCP_VEC_B64_OK;
    return vec_b64_tail_dec(out + 3 * full, dim % 3, text + 16 * full, pads);
}

#endif /* VEC_UNIT */
