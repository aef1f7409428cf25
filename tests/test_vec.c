/*
** test_vec.c -- vec.c: every SIMD path the CPU has against the scalar
** reference, top-k order, MaxSim (§7.5), sparse dot (§7.4), the 8-bit
** store's recall, and the f32-base64 codec (§7.3.1).
**
** TOLERANCE.  Paths differ only in the order they add products (lanes,
** partial sums, FMA).  For any order, the computed dot product of n terms
** differs from the exact one by at most gamma_n * sum|a_i b_i|, where
** gamma_n = n*u / (1 - n*u) and u = 2^-24 (Higham, "Accuracy and Stability
** of Numerical Algorithms", 2nd ed., §3.1; an FMA only removes roundings).
** So two paths differ by at most 2 * gamma_n * sum|a_i b_i|: this bound is
** rigorous -- the test cannot flake -- and relative to sum|a_i b_i|, not to
** the result, because a dot product can cancel to ~0.  It is loose enough
** for any order yet catches a dropped or doubled term of typical size
** (sum|ab| / n > 2 n u sum|ab| while n < 2896; we test n <= 1100).  Small
** dropped terms are caught by the exact tests: integer-valued data has
** exact products and partial sums (|sum| < 2^24), so there every path
** must equal the exact result bit for bit, for every n and alignment.
** MaxSim inherits the bound (a maximum moves by at most the largest error
** among its candidates; see ref_maxsim), and the 8-bit store's dots are
** exact integers, so its scores are compared bit for bit across paths.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rcp.h"
#include "testutil.h"

/* MARK: - helpers ------------------------------------------------------- */

static const char *const all_paths[] = {
    "scalar", "sse2", "avx2", "avx512", "neon"
};
#define NPATHS (sizeof all_paths / sizeof all_paths[0])

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
    rng_state = s;
}

static uint64_t rng_next(void)   /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_unit(void)      /* uniform in [-1, 1) */
{
    return (float)((double)(rng_next() >> 11) / 4503599627370496.0 - 1.0);
}

static float rng_int(int lo, int hi)
{
    return (float)(lo + (int)(rng_next() % (uint64_t)(hi - lo + 1)));
}

static float rng_gauss(void)
{
    double u1 = ((double)(rng_next() >> 11) + 1.0) / 9007199254740993.0;
    double u2 = (double)(rng_next() >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static float *fill(size_t n, int integers)
{
    float *a = malloc((n ? n : 1) * sizeof *a);
    size_t i;
    ck_assert_ptr_nonnull(a);
    for (i = 0; i < n; i++)
        a[i] = integers ? rng_int(-8, 8) : rng_unit();
    return a;
}

static void use_path(const char *name)
{
    const char *err = NULL;
    ck_assert_msg(rcp_vec_init(name, &err) == 0, "%s: %s", name,
                  err ? err : "?");
    ck_assert_str_eq(rcp_vec_path(), name);
}

static double gamma_n(size_t n)
{
    double nu = (double)n * ldexp(1.0, -24);
    return nu / (1.0 - nu);
}

static double abs_dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s += fabs((double)a[i] * b[i]);
    return s;
}

static double exact_dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* MARK: - path selection -------------------------------------------------- */

START_TEST(init_rejects_unknown_path)
{
    const char *err = NULL;
    ck_assert_int_eq(rcp_vec_init("mmx", &err), -1);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "unknown"));
    ck_assert_int_eq(rcp_vec_path_available("mmx"), 0);
    ck_assert_int_eq(rcp_vec_path_available(NULL), 0);
}
END_TEST

START_TEST(init_rejects_every_unavailable_path_and_keeps_previous)
{
    const char *err;
    size_t i, refused = 0;
    use_path("scalar");
    for (i = 0; i < NPATHS; i++) {
        if (rcp_vec_path_available(all_paths[i]))
            continue;
        err = NULL;
        ck_assert_int_eq(rcp_vec_init(all_paths[i], &err), -1);
        ck_assert_ptr_nonnull(err);
        ck_assert_ptr_nonnull(strstr(err, all_paths[i]));
        ck_assert_str_eq(rcp_vec_path(), "scalar");
        refused++;
    }
    /* x86 has no neon, aarch64 no avx: at least one is always refused */
    ck_assert_uint_ge(refused, 1);
}
END_TEST

START_TEST(env_rcp_simd_forces_a_path_and_bad_value_is_an_error)
{
    const char *err = NULL;
    size_t i;
    ck_assert_int_eq(setenv("RCP_SIMD", "scalar", 1), 0);
    ck_assert_int_eq(rcp_vec_init(NULL, &err), 0);
    ck_assert_str_eq(rcp_vec_path(), "scalar");
    for (i = 0; i < NPATHS; i++)
        if (!rcp_vec_path_available(all_paths[i])) {
            setenv("RCP_SIMD", all_paths[i], 1);
            ck_assert_int_eq(rcp_vec_init("", &err), -1);
        }
    setenv("RCP_SIMD", "bogus", 1);
    ck_assert_int_eq(rcp_vec_init(NULL, &err), -1);
    unsetenv("RCP_SIMD");
}
END_TEST

START_TEST(default_path_is_the_best_available)
{
    size_t i;
    unsetenv("RCP_SIMD");
    ck_assert_int_eq(rcp_vec_init(NULL, NULL), 0);
    ck_assert_int_eq(rcp_vec_path_available(rcp_vec_path()), 1);
    ck_assert_int_eq(rcp_vec_path_available("scalar"), 1);
    /* every wider path the CPU has outranks a narrower one */
    for (i = 0; i < 3; i++)
        if (rcp_vec_path_available(all_paths[3 - i])) {
            ck_assert_str_eq(rcp_vec_path(), all_paths[3 - i]);
            break;
        }
    printf("vec: default path %s; available:", rcp_vec_path());
    for (i = 0; i < NPATHS; i++)
        if (rcp_vec_path_available(all_paths[i]))
            printf(" %s", all_paths[i]);
    printf("\n");
}
END_TEST

/* MARK: - dense kernels ------------------------------------------------- */

#define MAXDIM 1100

/* Integer data: every path, every n in 0..1100, four alignments: exact. */
static void exact_every_path(const float *x, const float *y, size_t n)
{
    double d = 0, l = 0, s = 0;
    size_t i, p;
    for (i = 0; i < n; i++) {
        d += (double)x[i] * y[i];
        l += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        s += x[i];
    }
    for (p = 0; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        ck_assert_msg(rcp_vec_dot(x, y, n) == (float)d, "%s dot n=%u",
                      all_paths[p], (unsigned)n);
        ck_assert_msg(rcp_vec_l2sq(x, y, n) == (float)l, "%s l2sq n=%u",
                      all_paths[p], (unsigned)n);
        ck_assert_msg(rcp_vec_sum(x, n) == (float)s, "%s sum n=%u",
                      all_paths[p], (unsigned)n);
    }
}

START_TEST(kernels_exact_on_integer_data_every_path_dim_alignment)
{
    float *a, *b;
    size_t n, off;
    rng_seed(1);
    a = fill(MAXDIM + 4, 1);
    b = fill(MAXDIM + 4, 1);
    for (off = 0; off < 4; off++)
        for (n = 0; n <= MAXDIM; n++)
            exact_every_path(a + off, b + (3 - off), n);
    free(a);
    free(b);
}
END_TEST

/* One n and alignment: scalar's results and the bounds once, then every
** other path against them. */
static void compare_paths_random(const float *x, const float *y, size_t n)
{
    float ref[3], got[3];
    double tol[3], e;
    size_t p, k;
    use_path("scalar");
    ref[0] = rcp_vec_dot(x, y, n);
    ref[1] = rcp_vec_l2sq(x, y, n);
    ref[2] = rcp_vec_sum(x, n);
    tol[0] = 2 * gamma_n(n) * abs_dot(x, y, n);
    /* l2sq: every path rounds x_i - y_i identically, then sums n squares
    ** (all >= 0, so sum|.| is the result itself) */
    tol[1] = 2 * gamma_n(n) * ref[1] * (1 + 2 * gamma_n(n));
    for (tol[2] = 0, k = 0; k < n; k++)
        tol[2] += fabs(x[k]);
    tol[2] *= 2 * gamma_n(n);
    for (p = 1; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        got[0] = rcp_vec_dot(x, y, n);
        got[1] = rcp_vec_l2sq(x, y, n);
        got[2] = rcp_vec_sum(x, n);
        for (k = 0; k < 3; k++) {
            e = fabs((double)got[k] - ref[k]);
            ck_assert_msg(e <= tol[k], "%s %s n=%u err %g > %g",
                          all_paths[p], k == 0 ? "dot" : k == 1 ? "l2sq"
                          : "sum", (unsigned)n, e, tol[k]);
        }
    }
}

START_TEST(kernels_match_scalar_within_tolerance_random_every_dim)
{
    float *a, *b;
    size_t n, off;
    rng_seed(2);
    a = fill(MAXDIM + 4, 0);
    b = fill(MAXDIM + 4, 0);
    for (off = 0; off < 4; off++)
        for (n = 1; n <= MAXDIM; n++)
            compare_paths_random(a + off, b + (3 - off), n);
    free(a);
    free(b);
}
END_TEST

START_TEST(scalar_is_within_the_bound_of_exact)
{
    float *a, *b;
    size_t n;
    rng_seed(3);
    a = fill(MAXDIM, 0);
    b = fill(MAXDIM, 0);
    use_path("scalar");
    for (n = 1; n <= MAXDIM; n++)
        ck_assert(fabs(rcp_vec_dot(a, b, n) - exact_dot(a, b, n))
                  <= gamma_n(n) * abs_dot(a, b, n));
    free(a);
    free(b);
}
END_TEST

START_TEST(norm_normalize_cosine)
{
    float v[5] = { 3, 4, 0, 0, 0 }, z[5] = { 0 }, big[3] = { 3e30f, 4e30f,
                                                             0 };
    size_t p;
    for (p = 0; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        v[0] = 3;
        v[1] = 4;
        ck_assert_float_eq(rcp_vec_norm(v, 5), 5.0f);
        ck_assert_float_eq(rcp_vec_normalize(v, 5), 5.0f);
        ck_assert_float_eq_tol(v[0], 0.6f, 1e-7f);
        ck_assert_float_eq_tol(v[1], 0.8f, 1e-7f);
        ck_assert_float_eq(rcp_vec_normalize(z, 5), 0.0f);
        ck_assert_float_eq(z[0], 0.0f);
        ck_assert_float_eq(rcp_vec_cosine(v, z, 5), 0.0f);
        ck_assert_float_eq_tol(rcp_vec_cosine(v, v, 5), 1.0f, 1e-6f);
        ck_assert_float_eq(rcp_vec_normalize(NULL, 0), 0.0f);
    }
    /* the float sum of squares overflows; normalising must still work */
    rcp_vec_normalize(big, 3);
    ck_assert_float_eq_tol(big[0], 0.6f, 1e-6f);
    ck_assert_float_eq_tol(big[1], 0.8f, 1e-6f);
}
END_TEST

/* MARK: - top-k and scans ------------------------------------------------- */

static int ref_cmp(const void *pa, const void *pb)
{
    const rcp_vec_hit *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

/* All allowed rows, scored in double (exact for integer data), sorted. */
static size_t ref_search(const float *q, const float *m, size_t n, size_t d,
                         const unsigned char *allow, rcp_vec_hit *out)
{
    size_t r, c = 0;
    for (r = 0; r < n; r++)
        if (RCP_VEC_ALLOWED(allow, r)) {
            out[c].score = (float)exact_dot(q, m + r * d, d);
            out[c++].row = r;
        }
    qsort(out, c, sizeof *out, ref_cmp);
    return c;
}

static void check_hits(const rcp_vec_hit *got, size_t ng,
                       const rcp_vec_hit *want, size_t nw, size_t k)
{
    size_t i;
    ck_assert_uint_eq(ng, nw < k ? nw : k);
    for (i = 0; i < ng; i++) {
        ck_assert_uint_eq(got[i].row, want[i].row);
        ck_assert_float_eq(got[i].score, want[i].score);
    }
}

/* Small integers in 37 dims: many exactly tied scores, so the row order of
** ties is tested; exact scores make every path agree bit for bit. */
START_TEST(search_every_k_every_path_ties_by_row)
{
    enum { N = 203, D = 37 };
    float *q, *m;
    rcp_vec_hit want[N], got[N + 1];
    unsigned char allow[(N + 7) / 8];
    size_t p, k, nw, ng, i, ties = 0;
    rng_seed(4);
    q = malloc((D + 1) * sizeof *q);
    m = malloc((N * D + 1) * sizeof *m);
    for (i = 0; i < D; i++)
        q[i + 1] = rng_int(-1, 1);
    for (i = 0; i < N * D; i++)
        m[i + 1] = rng_int(-1, 1);
    for (i = 0; i < sizeof allow; i++)
        allow[i] = (unsigned char)rng_next();
    nw = ref_search(q + 1, m + 1, N, D, NULL, want);
    for (i = 1; i < nw; i++)
        ties += want[i].score == want[i - 1].score;
    ck_assert_uint_gt(ties, N / 2);
    for (p = 0; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        nw = ref_search(q + 1, m + 1, N, D, NULL, want);
        for (k = 1; k <= N + 1; k++) {
            ng = rcp_vec_search(q + 1, m + 1, N, D, k, NULL, got);
            check_hits(got, ng, want, nw, k);
        }
        nw = ref_search(q + 1, m + 1, N, D, allow, want);
        for (k = 1; k <= N + 1; k += 7) {
            ng = rcp_vec_search(q + 1, m + 1, N, D, k, allow, got);
            check_hits(got, ng, want, nw, k);
        }
    }
    free(q);
    free(m);
}
END_TEST

START_TEST(chunked_scan_equals_one_scan)
{
    enum { N = 500, D = 19, K = 25 };
    float *q = NULL, *m = NULL;
    rcp_vec_hit a[K], b[K];
    rcp_vec_topk t;
    unsigned char allow[(N + 7) / 8];
    size_t r, step, na, nb, i;
    rng_seed(5);
    q = fill(D, 1);
    m = fill(N * D, 1);
    memset(allow, 0xff, sizeof allow);
    allow[3] = 0x5a;
    allow[40] = 0;
    na = rcp_vec_search(q, m, N, D, K, allow, a);
    rcp_vec_topk_init(&t, b, K);
    for (r = 0; r < N; r += step) {
        step = 1 + (size_t)(rng_next() % 97);
        rcp_vec_scan(&t, q, m, D, r, r + step < N ? r + step : N, allow);
    }
    nb = rcp_vec_topk_sort(&t);
    ck_assert_uint_eq(na, nb);
    for (i = 0; i < na; i++) {
        ck_assert_uint_eq(a[i].row, b[i].row);
        ck_assert(RCP_VEC_ALLOWED(allow, a[i].row));
    }
    free(q);
    free(m);
}
END_TEST

START_TEST(topk_order_is_total_and_offer_order_free)
{
    rcp_vec_hit h1[4], h2[4];
    rcp_vec_topk t1, t2;
    float s[8] = { 1, NAN, 3, 3, -HUGE_VALF, 2, 3, NAN };
    size_t i;
    rcp_vec_topk_init(&t1, h1, 4);
    rcp_vec_topk_init(&t2, h2, 4);
    for (i = 0; i < 8; i++) {
        rcp_vec_topk_push(&t1, s[i], i);
        rcp_vec_topk_push(&t2, s[7 - i], 7 - i);
    }
    ck_assert_uint_eq(rcp_vec_topk_sort(&t1), 4);
    ck_assert_uint_eq(rcp_vec_topk_sort(&t2), 4);
    for (i = 0; i < 4; i++)
        ck_assert_uint_eq(h1[i].row, h2[i].row);
    ck_assert_uint_eq(h1[0].row, 2);   /* 3 at rows 2, 3, 6: lowest first */
    ck_assert_uint_eq(h1[1].row, 3);
    ck_assert_uint_eq(h1[2].row, 6);
    ck_assert_uint_eq(h1[3].row, 5);
    /* NaN ranks as -infinity: below 1, tied with row 4 by row */
    rcp_vec_topk_init(&t1, h1, 4);
    rcp_vec_topk_push(&t1, NAN, 1);
    rcp_vec_topk_push(&t1, -HUGE_VALF, 4);
    rcp_vec_topk_push(&t1, 1, 0);
    ck_assert_uint_eq(rcp_vec_topk_sort(&t1), 3);
    ck_assert_uint_eq(h1[0].row, 0);
    ck_assert_uint_eq(h1[1].row, 1);
    ck_assert(h1[1].score == -HUGE_VALF);
    rcp_vec_topk_init(&t1, h1, 0);
    rcp_vec_topk_push(&t1, 1, 0);
    ck_assert_uint_eq(rcp_vec_topk_sort(&t1), 0);
}
END_TEST

START_TEST(scan_of_float_data_matches_scalar_scores)
{
    enum { N = 1000, D = 385, K = 50 };
    float *q, *m;
    rcp_vec_hit ref[K], got[K];
    double maxtol = 0;
    size_t p, i, nr;
    rng_seed(6);
    q = fill(D, 0);
    m = fill(N * D, 0);
    for (i = 0; i < N; i++)
        if (gamma_n(D) * abs_dot(q, m + i * D, D) > maxtol)
            maxtol = gamma_n(D) * abs_dot(q, m + i * D, D);
    use_path("scalar");
    nr = rcp_vec_search(q, m, N, D, K, NULL, ref);
    for (p = 1; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        ck_assert_uint_eq(rcp_vec_search(q, m, N, D, K, NULL, got), nr);
        /* each score within the bound of its row's exact dot; the i-th
        ** best moves by at most the largest error, so rows may swap only
        ** between scores that close */
        for (i = 0; i < nr; i++) {
            const float *row = m + got[i].row * D;
            ck_assert(fabs(got[i].score - exact_dot(q, row, D))
                      <= gamma_n(D) * abs_dot(q, row, D));
            ck_assert(fabs(got[i].score - ref[i].score) <= 2 * maxtol);
        }
    }
    free(q);
    free(m);
}
END_TEST

/* MARK: - MaxSim (§7.5) ------------------------------------------------- */

/* The exact MaxSim (double) and a rigorous bound on a path's error: a
** max moves by at most the largest error among its candidates, i.e.
** gamma_dim * sum|q d| for dot; for cosine sum|q d| <= |q||d| (Cauchy-
** Schwarz) and the two norms, the inverse and the products add a few
** roundings: 2 * gamma_dim + 8u.  Plus the final rounding to float. */
static double ref_maxsim(const float *qm, size_t nq, const float *dm,
                         size_t nd, size_t dim, int cosine, double *bound)
{
    double total = 0, best, v, nqv, ndv, bb = 0, eb, u = ldexp(1.0, -24);
    size_t i, j;
    for (i = 0; i < nq; i++) {
        const float *q = qm + i * dim;
        best = -HUGE_VAL;
        eb = 0;
        nqv = sqrt(exact_dot(q, q, dim));
        for (j = 0; j < nd; j++) {
            v = exact_dot(q, dm + j * dim, dim);
            ndv = sqrt(exact_dot(dm + j * dim, dm + j * dim, dim));
            if (cosine)
                v = nqv > 0 && ndv > 0 ? v / (nqv * ndv) : 0;
            best = v > best ? v : best;
            v = gamma_n(dim) * abs_dot(q, dm + j * dim, dim);
            eb = v > eb ? v : eb;
        }
        bb += cosine ? 2 * gamma_n(dim) + 8 * u : eb;
        total += best;
    }
    *bound = bb + u * fabs(total);
    return total;
}

START_TEST(maxsim_matches_reference_every_path_and_shape)
{
    static const size_t nqs[] = { 1, 3, 4, 5, 32, 70 };
    static const size_t nds[] = { 1, 2, 4, 7, 65, 130 };
    /* 300 > 256: avx512 falls back from its transposed-query kernel */
    static const size_t dims[] = { 1, 3, 16, 17, 131, 300 };
    float *qm, *dm, got;
    double ref[6][6][6][2], bound[6][6][6][2];
    size_t p, a, b, c, sim;
    rng_seed(7);
    qm = fill(70 * 300, 0);
    dm = fill(130 * 300, 0);
    memset(dm + 5 * 300, 0, 300 * sizeof *dm);  /* a zero-length row */
    for (a = 0; a < 6; a++)
        for (b = 0; b < 6; b++)
            for (c = 0; c < 6; c++)
                for (sim = 0; sim < 2; sim++)
                    ref[a][b][c][sim] = ref_maxsim(qm, nqs[a], dm, nds[b],
                                                   dims[c], (int)sim,
                                                   &bound[a][b][c][sim]);
    for (p = 0; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        for (a = 0; a < 6; a++)
            for (b = 0; b < 6; b++)
                for (c = 0; c < 6; c++)
                    for (sim = 0; sim < 2; sim++) {
                        got = rcp_vec_maxsim(qm, nqs[a], dm, nds[b], dims[c],
                                             (rcp_vec_sim)sim);
                        ck_assert_msg(fabs(got - ref[a][b][c][sim])
                                      <= bound[a][b][c][sim],
                                      "%s nq=%u nd=%u dim=%u sim=%u",
                                      all_paths[p], (unsigned)nqs[a],
                                      (unsigned)nds[b], (unsigned)dims[c],
                                      (unsigned)sim);
                    }
    }
    ck_assert_float_eq(rcp_vec_maxsim(qm, 0, dm, 3, 4, RCP_VEC_DOT), 0.0f);
    ck_assert_float_eq(rcp_vec_maxsim(qm, 3, dm, 0, 4, RCP_VEC_DOT), 0.0f);
    free(qm);
    free(dm);
}
END_TEST

START_TEST(maxsim_exact_on_integer_data_every_path)
{
    float *qm, *dm, want = 0, got;
    double ref, bound;
    size_t p;
    rng_seed(8);
    qm = fill(33 * 129, 1);
    dm = fill(67 * 129, 1);
    ref = ref_maxsim(qm, 33, dm, 67, 129, 0, &bound);
    for (p = 0; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        got = rcp_vec_maxsim(qm, 33, dm, 67, 129, RCP_VEC_DOT);
        ck_assert_float_eq(got, (float)ref);
        if (p == 0)
            want = got;
        ck_assert_float_eq(got, want);
    }
    free(qm);
    free(dm);
}
END_TEST

/* MARK: - sparse dot (§7.4) ----------------------------------------------- */

START_TEST(sparse_dot_sums_matching_indices_only)
{
    uint32_t ai[] = { 1, 4, 7, 9, 4000000000u };
    float av[] = { 1, 2, 3, 4, 5 };
    uint32_t bi[] = { 0, 4, 8, 9, 4000000000u };
    float bv[] = { 10, 20, 30, 40, 50 };
    ck_assert_float_eq(rcp_vec_sparse_dot(ai, av, 5, bi, bv, 5),
                       2 * 20 + 4 * 40 + 5 * 50);
    ck_assert_float_eq(rcp_vec_sparse_dot(ai, av, 5, bi, bv, 1), 0);
    ck_assert_float_eq(rcp_vec_sparse_dot(NULL, NULL, 0, bi, bv, 5), 0);
    ck_assert_float_eq(rcp_vec_sparse_dot(ai, av, 1, ai, av, 1), 1);
}
END_TEST

START_TEST(sparse_dot_equals_dense_dot)
{
    enum { V = 300 };
    float da[V] = { 0 }, db[V] = { 0 }, av[V], bv[V];
    uint32_t ai[V], bi[V];
    size_t i, an = 0, bn = 0;
    rng_seed(9);
    for (i = 0; i < V; i++) {
        if (rng_next() % 3 == 0) {
            da[i] = av[an] = rng_int(-9, 9);
            ai[an++] = (uint32_t)i;
        }
        if (rng_next() % 2 == 0) {
            db[i] = bv[bn] = rng_int(-9, 9);
            bi[bn++] = (uint32_t)i;
        }
    }
    ck_assert_float_eq(rcp_vec_sparse_dot(ai, av, an, bi, bv, bn),
                       (float)exact_dot(da, db, V));
}
END_TEST

/* MARK: - 8-bit quantised store ------------------------------------------- */

static float *unit_rows(size_t n, size_t d)
{
    float *m = malloc(n * d * sizeof *m);
    size_t i;
    ck_assert_ptr_nonnull(m);
    for (i = 0; i < n * d; i++)
        m[i] = rng_gauss();
    for (i = 0; i < n; i++)
        rcp_vec_normalize(m + i * d, d);
    return m;
}

/* Recall@10 of the 8-bit scan (re-scored) against the exact float scan on
** random unit vectors: the issue asks >= 0.95. */
START_TEST(q8_recall_at_10_after_rescoring)
{
    enum { N = 10000, D = 384, NQ = 40, K = 10 };
    float *m, *qs;
    rcp_vec_q8 s;
    rcp_vec_hit exact[K], approx[K], raw[K];
    size_t i, j, l, hit = 0, hit_raw = 0;
    rng_seed(10);
    m = unit_rows(N, D);
    qs = unit_rows(NQ, D);
    rcp_vec_q8_init(&s, D);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(rcp_vec_q8_add(&s, m + i * D), 0);
    for (i = 0; i < NQ; i++) {
        const float *q = qs + i * D;
        ck_assert_uint_eq(rcp_vec_search(q, m, N, D, K, NULL, exact), K);
        ck_assert_int_eq(rcp_vec_q8_search(&s, q, m, K, 0, NULL, approx), K);
        ck_assert_int_eq(rcp_vec_q8_search(&s, q, NULL, K, K, NULL, raw), K);
        for (j = 0; j < K; j++)
            for (l = 0; l < K; l++) {
                hit += approx[l].row == exact[j].row;
                hit_raw += raw[l].row == exact[j].row;
            }
    }
    printf("vec: q8 recall@10 = %.3f re-scored (%.3f without), "
           "N=%d D=%d, %d queries\n", (double)hit / (NQ * K),
           (double)hit_raw / (NQ * K), N, D, NQ);
    ck_assert_uint_ge(hit * 100, (size_t)95 * NQ * K);
    rcp_vec_q8_free(&s);
    free(m);
    free(qs);
}
END_TEST

/* The 8-bit dot is integer arithmetic: every path, bit-identical --
** rows one by one (a filter) and in blocks (none: the four-row kernels),
** keeping all rows or the best 10 (the inline cut), at a dimension with
** a tail (77) and the default (384). */
static void q8_paths_agree(size_t N, size_t D, size_t K, int filtered)
{
    float *m, *q;
    rcp_vec_q8 s;
    rcp_vec_hit *ref = malloc(K * sizeof *ref), *got = malloc(K * sizeof *got);
    rcp_vec_topk t;
    unsigned char *allow = malloc((N + 7) / 8), *a;
    size_t p, i, nr;
    rng_seed(11);
    m = fill(N * D, 0);
    q = fill(D, 0);
    ck_assert(ref && got && allow);
    for (i = 0; i < (N + 7) / 8; i++)
        allow[i] = (unsigned char)(rng_next() | 0x81);
    a = filtered ? allow : NULL;
    rcp_vec_q8_init(&s, D);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(rcp_vec_q8_add(&s, m + i * D), 0);
    use_path("scalar");
    rcp_vec_topk_init(&t, ref, K);
    ck_assert_int_eq(rcp_vec_q8_scan(&t, &s, q, 0, N, a), 0);
    nr = rcp_vec_topk_sort(&t);
    ck_assert(filtered || nr == (K < N ? K : N));
    for (p = 1; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        rcp_vec_topk_init(&t, got, K);
        ck_assert_int_eq(rcp_vec_q8_scan(&t, &s, q, 0, N, a), 0);
        ck_assert_uint_eq(rcp_vec_topk_sort(&t), nr);
        for (i = 0; i < nr; i++) {
            ck_assert_uint_eq(got[i].row, ref[i].row);
            ck_assert(got[i].score == ref[i].score);
        }
    }
    for (i = 0; i < nr; i++)
        ck_assert(RCP_VEC_ALLOWED(a, ref[i].row));
    rcp_vec_q8_free(&s);
    free(m);
    free(q);
    free(ref);
    free(got);
    free(allow);
}

START_TEST(q8_scan_identical_on_every_path)
{
    q8_paths_agree(301, 77, 301, 1);
    q8_paths_agree(301, 77, 301, 0);
    q8_paths_agree(1000, 77, 10, 0);
    q8_paths_agree(1000, 384, 10, 0);
    q8_paths_agree(1000, 384, 10, 1);
}
END_TEST

START_TEST(q8_codes_reconstruct_within_half_a_step)
{
    float v[6] = { -1, 0.25f, 3, NAN, HUGE_VALF, 0 }, c[4] = { 2, 2, 2, 2 };
    float x, step;
    rcp_vec_q8 s;
    size_t i;
    rcp_vec_q8_init(&s, 6);
    ck_assert_int_eq(rcp_vec_q8_add(&s, v), 0);
    step = s.scale[0];
    ck_assert_float_eq_tol(step, 4.0f / 255, 1e-7f);
    for (i = 0; i < 6; i++) {
        x = s.offset[0] + step * s.codes[i];
        ck_assert_float_le(fabsf(x - (i == 3 || i == 4 ? 0 : v[i])),
                           step / 2 + 1e-6f);
    }
    /* set overwrites in place */
    for (i = 0; i < 6; i++)
        v[i] = (float)i;
    rcp_vec_q8_set(&s, 0, v);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_float_eq(s.offset[0], 0.0f);
    ck_assert_uint_eq(s.codes[5], 255);
    rcp_vec_q8_free(&s);
    /* finite rows (the multiply-by-the-inverse path): every component
    ** within half a step, the extremes exact */
    {
        float *m = fill(100 * 384, 0), y;
        size_t r, j;
        rng_seed(5);
        rcp_vec_q8_init(&s, 384);
        for (r = 0; r < 100; r++) {
            ck_assert_int_eq(rcp_vec_q8_add(&s, m + r * 384), 0);
            for (j = 0; j < 384; j++) {
                y = s.offset[r] + s.scale[r] * s.codes[r * 384 + j];
                ck_assert_float_le(fabsf(y - m[r * 384 + j]),
                                   s.scale[r] * 0.5f + 1e-6f);
            }
        }
        rcp_vec_q8_free(&s);
        free(m);
    }
    /* a constant row is exact */
    rcp_vec_q8_init(&s, 4);
    ck_assert_int_eq(rcp_vec_q8_add(&s, c), 0);
    ck_assert_float_eq(s.offset[0] + s.scale[0] * s.codes[1], 2.0f);
    rcp_vec_q8_free(&s);
    rcp_vec_q8_free(NULL);
}
END_TEST

static int fail_allocs;
static void *failing_alloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (n == 0) {
        free(p);
        return NULL;
    }
    if (fail_allocs)
        return NULL;
    return realloc(p, n);
}

START_TEST(q8_out_of_memory_is_an_error_not_a_crash)
{
    float v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    rcp_vec_hit h[2];
    rcp_vec_topk t;
    rcp_vec_q8 s;
    rcp_set_allocator(failing_alloc, NULL);
    rcp_vec_q8_init(&s, 8);
    fail_allocs = 1;
    ck_assert_int_eq(rcp_vec_q8_add(&s, v), -1);
    ck_assert_uint_eq(s.n, 0);
    fail_allocs = 0;
    ck_assert_int_eq(rcp_vec_q8_add(&s, v), 0);
    fail_allocs = 1;
    rcp_vec_topk_init(&t, h, 2);
    ck_assert_int_eq(rcp_vec_q8_scan(&t, &s, v, 0, 1, NULL), -1);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_int_eq(rcp_vec_q8_search(&s, v, NULL, 2, 0, NULL, h), -1);
    fail_allocs = 0;
    ck_assert_int_eq(rcp_vec_q8_search(&s, v, NULL, 2, 0, NULL, h), 1);
    rcp_vec_q8_free(&s);
    rcp_set_allocator(NULL, NULL);
}
END_TEST

START_TEST(q8_search_with_filter_and_rescore_is_exact_order)
{
    enum { N = 100, D = 16 };
    float *m, *q;
    rcp_vec_q8 s;
    rcp_vec_hit h[N], want[N];
    unsigned char allow[(N + 7) / 8];
    long got;
    size_t i, nw;
    rng_seed(12);
    m = fill(N * D, 1);
    q = fill(D, 1);
    memset(allow, 0x55, sizeof allow);
    rcp_vec_q8_init(&s, D);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(rcp_vec_q8_add(&s, m + i * D), 0);
    /* every candidate re-scored: the exact order, filter honoured */
    got = rcp_vec_q8_search(&s, q, m, N, N, allow, h);
    nw = ref_search(q, m, N, D, allow, want);
    ck_assert_int_eq(got, (long)nw);
    check_hits(h, (size_t)got, want, nw, N);
    rcp_vec_q8_free(&s);
    free(m);
    free(q);
}
END_TEST

/* MARK: - f32-base64 (§7.3.1) --------------------------------------------- */

static float from_bytes(const char *b)
{
    uint32_t u = (uint32_t)(unsigned char)b[0]
               | (uint32_t)(unsigned char)b[1] << 8
               | (uint32_t)(unsigned char)b[2] << 16
               | (uint32_t)(unsigned char)b[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void expect_encoding(const float *v, size_t n, const char *want)
{
    char out[64];
    float back[8];
    size_t len = rcp_vec_b64_encode(out, v, n);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert_uint_eq(len, rcp_vec_b64_len(n));
    ck_assert(len == 0 || memcmp(out, want, len) == 0);
    ck_assert_int_eq(rcp_vec_b64_decode(back, n, want, len), RCP_VEC_B64_OK);
    ck_assert(n == 0 || memcmp(back, v, n * 4) == 0);
}

/* RFC 4648 §10 vectors whose length is a multiple of 4 bytes (the only
** ones a float vector can carry), and binary32 little-endian values. */
START_TEST(b64_rfc4648_vectors_and_little_endian_floats)
{
    float foob = from_bytes("foob"), v[4] = { 1.0f, -2.0f, 0.5f, -0.0f };
    float w[2] = { from_bytes("foob"), from_bytes("ar\0\0") };
    expect_encoding(NULL, 0, "");
    expect_encoding(&foob, 1, "Zm9vYg==");
    expect_encoding(w, 2, "Zm9vYmFyAAA=");
    expect_encoding(v, 1, "AACAPw==");
    expect_encoding(v, 4, "AACAPwAAAMAAAAA/AAAAgA==");
    v[1] = 2.0f;
    v[2] = 3.0f;
    expect_encoding(v, 2, "AACAPwAAAEA=");
    expect_encoding(v, 3, "AACAPwAAAEAAAEBA");
}
END_TEST

/* Random bit patterns (NaN payloads, infinities, denormals) of every
** length 0..64 through the path's codec; its text must equal scalar's. */
static void round_trip_on_path(const char *path)
{
    float v[64], back[64];
    char text[352], ref[352];   /* rcp_vec_b64_len(64) = 344 */
    size_t n, i, len;
    uint32_t u;
    rng_seed(13);
    for (n = 0; n <= 64; n++) {
        for (i = 0; i < n; i++) {
            u = (uint32_t)rng_next();
            if (i % 5 == 0)
                u = (uint32_t)0x7fc00001u + (uint32_t)i;
            memcpy(&v[i], &u, 4);
        }
        use_path(path);
        len = rcp_vec_b64_encode(text, v, n);
        ck_assert_uint_eq(len, rcp_vec_b64_len(n));
        ck_assert_int_eq(rcp_vec_b64_decode(back, n, text, len),
                         RCP_VEC_B64_OK);
        ck_assert(n == 0 || memcmp(back, v, n * 4) == 0);
        use_path("scalar");
        ck_assert_uint_eq(rcp_vec_b64_encode(ref, v, n), len);
        ck_assert(len == 0 || memcmp(ref, text, len) == 0);
    }
}

START_TEST(b64_round_trips_every_length_and_bit_pattern)
{
    size_t p;
    for (p = 0; p < NPATHS; p++)
        if (rcp_vec_path_available(all_paths[p]))
            round_trip_on_path(all_paths[p]);
}
END_TEST

static rcp_vec_b64_err dec(const char *text, size_t dim)
{
    float out[8];
    return rcp_vec_b64_decode(out, dim, text, strlen(text));
}

/* Encode n floats, then put each non-alphabet byte at each position that
** is not padding: RCP_VEC_B64_E_CHAR (except '=' just before the padding,
** which makes "AACAP===": a padding error, checked first). */
static void check_every_position_rejected(size_t n)
{
    static const char badc[] = { ' ', '=', '-', '\0', '\x80', '@' };
    float v[24], out[24];
    char text[160], copy[160];
    size_t len, pads = 0, i, j;
    for (i = 0; i < n; i++)
        v[i] = (float)i * 1.37f - 9.5f;
    len = rcp_vec_b64_encode(text, v, n);
    while (pads < len && text[len - 1 - pads] == '=')
        pads++;
    for (i = 0; i + pads < len; i++)
        for (j = 0; j < sizeof badc; j++) {
            if (badc[j] == '=' && i + 1 == len - pads)
                continue;   /* lengthens the padding: a padding error */
            memcpy(copy, text, len);
            copy[i] = badc[j];
            ck_assert_msg(rcp_vec_b64_decode(out, n, copy, len)
                          == RCP_VEC_B64_E_CHAR, "n=%u pos=%u byte=%d",
                          (unsigned)n, (unsigned)i, badc[j]);
        }
}

START_TEST(b64_rejects_bad_characters)
{
    /* right length and padding; one byte outside the alphabet: space,
    ** control characters, URL-safe '-' and '_', '=' not at the end, a
    ** high byte */
    static const char *const bad[] = {
        "AAC Pw==", "AAC-Pw==", "AAC_Pw==", "AA=APw==", "AACA\tw==",
        "AACA\x80w==", "AACA.w==", "=ACAPw==", "AACAPwAAAEAAAE@A",
        "AACAPwAA\rEAAAEBA", "AACAPwAAAEAA\nEBA", "AACAP\xff=="
    };
    size_t i, p;
    float out[3];
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len = strlen(bad[i]);
        ck_assert_msg(rcp_vec_b64_decode(out, len == 16 ? 3 : 1, bad[i], len)
                      == RCP_VEC_B64_E_CHAR, "%s", bad[i]);
    }
    /* every position of full groups and of the padded tail, on every
    ** path (avx2 and avx512 decode 32 characters at a time) */
    for (p = 0; p < NPATHS; p++) {
        if (!rcp_vec_path_available(all_paths[p]))
            continue;
        use_path(all_paths[p]);
        for (i = 0; i <= 24; i++)
            check_every_position_rejected(i);
    }
    /* an embedded NUL byte is a character like any other */
    ck_assert_int_eq(rcp_vec_b64_decode(out, 1, "AAC\0Pw==", 8),
                     RCP_VEC_B64_E_CHAR);
    ck_assert_int_eq(dec("AACAPw==\n", 1), RCP_VEC_B64_E_PADDING);
}
END_TEST

START_TEST(b64_rejects_bad_padding)
{
    ck_assert_int_eq(dec("AACAPw", 1), RCP_VEC_B64_E_PADDING);   /* none */
    ck_assert_int_eq(dec("AACAPw=", 1), RCP_VEC_B64_E_PADDING);  /* short */
    ck_assert_int_eq(dec("AACAP===", 1), RCP_VEC_B64_E_PADDING); /* three */
    ck_assert_int_eq(dec("AACA====", 1), RCP_VEC_B64_E_PADDING);
    ck_assert_int_eq(dec("AACAPx==", 1), RCP_VEC_B64_E_PADDING); /* bits */
    ck_assert_int_eq(dec("AACAPwAAAEB=", 2), RCP_VEC_B64_E_PADDING);
    ck_assert_int_eq(dec("AACAPw==A", 1), RCP_VEC_B64_E_PADDING);
    ck_assert_int_eq(dec("A", 0), RCP_VEC_B64_E_PADDING);
}
END_TEST

START_TEST(b64_rejects_any_length_but_dimension_times_4)
{
    ck_assert_int_eq(dec("AACAPw==", 2), RCP_VEC_B64_E_LENGTH);
    ck_assert_int_eq(dec("AACAPw==", 0), RCP_VEC_B64_E_LENGTH);
    ck_assert_int_eq(dec("AACAPwAAAEA=", 1), RCP_VEC_B64_E_LENGTH);
    ck_assert_int_eq(dec("AACAPwAAAEAAAEBA", 2), RCP_VEC_B64_E_LENGTH);
    ck_assert_int_eq(dec("AACAPwAA", 1), RCP_VEC_B64_E_LENGTH); /* 6 bytes */
    ck_assert_int_eq(dec("AACA", 1), RCP_VEC_B64_E_LENGTH);     /* 3 bytes */
    ck_assert_int_eq(dec("", 1), RCP_VEC_B64_E_LENGTH);
    ck_assert_int_eq(dec("", 0), RCP_VEC_B64_OK);
    ck_assert_int_eq(dec("AACAPw==", (size_t)-1), RCP_VEC_B64_E_LENGTH);
}
END_TEST

START_TEST(b64_error_messages_are_distinct)
{
    const char *m[4];
    size_t i, j;
    for (i = 0; i < 4; i++) {
        m[i] = rcp_vec_b64_message((rcp_vec_b64_err)i);
        ck_assert_ptr_nonnull(m[i]);
        for (j = 0; j < i; j++)
            ck_assert_str_ne(m[i], m[j]);
    }
    ck_assert_ptr_nonnull(rcp_vec_b64_message((rcp_vec_b64_err)99));
}
END_TEST

/* MARK: - suite ---------------------------------------------------------- */

static Suite *make_suite(void)
{
    Suite *s = suite_create("vec");
    TCase *tc = tcase_create("vec");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, init_rejects_unknown_path);
    tcase_add_test(tc, init_rejects_every_unavailable_path_and_keeps_previous);
    tcase_add_test(tc, env_rcp_simd_forces_a_path_and_bad_value_is_an_error);
    tcase_add_test(tc, default_path_is_the_best_available);
    tcase_add_test(tc, kernels_exact_on_integer_data_every_path_dim_alignment);
    tcase_add_test(tc, kernels_match_scalar_within_tolerance_random_every_dim);
    tcase_add_test(tc, scalar_is_within_the_bound_of_exact);
    tcase_add_test(tc, norm_normalize_cosine);
    tcase_add_test(tc, search_every_k_every_path_ties_by_row);
    tcase_add_test(tc, chunked_scan_equals_one_scan);
    tcase_add_test(tc, topk_order_is_total_and_offer_order_free);
    tcase_add_test(tc, scan_of_float_data_matches_scalar_scores);
    tcase_add_test(tc, maxsim_matches_reference_every_path_and_shape);
    tcase_add_test(tc, maxsim_exact_on_integer_data_every_path);
    tcase_add_test(tc, sparse_dot_sums_matching_indices_only);
    tcase_add_test(tc, sparse_dot_equals_dense_dot);
    tcase_add_test(tc, q8_recall_at_10_after_rescoring);
    tcase_add_test(tc, q8_scan_identical_on_every_path);
    tcase_add_test(tc, q8_codes_reconstruct_within_half_a_step);
    tcase_add_test(tc, q8_out_of_memory_is_an_error_not_a_crash);
    tcase_add_test(tc, q8_search_with_filter_and_rescore_is_exact_order);
    tcase_add_test(tc, b64_rfc4648_vectors_and_little_endian_floats);
    tcase_add_test(tc, b64_round_trips_every_length_and_bit_pattern);
    tcase_add_test(tc, b64_rejects_bad_characters);
    tcase_add_test(tc, b64_rejects_bad_padding);
    tcase_add_test(tc, b64_rejects_any_length_but_dimension_times_4);
    tcase_add_test(tc, b64_error_messages_are_distinct);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
