/*
** bench_vec.c -- speed of vec.c, each figure next to a limit measured in
** the same run, for the path in use (RCP_SIMD forces one) and for scalar.
**
**   read bandwidth   one thread summing 1 GiB with the best path's sum
**   f32 scan         1 000 000 x 384, top 10: GB/s / bandwidth (>= 0.8)
**   q8 scan          same corpus, 8-bit store, top 10 re-scored exactly:
**                    speed-up over the f32 scan (>= 3)
**   MaxSim           32 query x 256 document rows x 128 dims, 256 documents
**                    (32 MiB, streamed from memory): GFLOP/s / the path's
**                    register-only multiply-add loop (>= 0.5)
**   base64           encode and decode of 16 MiB of floats, GB/s counted
**                    in bytes of floats (>= 1)
**
** The machine is shared, so every ratio is taken inside one round from
** measurements made back to back (a neighbour's load hits both sides),
** and the table shows medians of RUNS rounds.  "scalar" is the portable
** C as the compiler built it: GCC vectorises its 4 partial sums with the
** baseline SSE2, while its multiply-add loop stays scalar, so its ratio to
** its own "peak" can exceed 1.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../rcp.h"

#define RUNS   5
#define N      1000000u
#define D      384u
#define K      10u
#define MQ     32u
#define MD     256u
#define MDIM   128u
#define MDOCS  256u
#define B64N   (4u << 20)   /* floats: 16 MiB */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, dbl_cmp);
    return t[n / 2];
}

static uint32_t lcg = 12345u;
static float rnd(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return (float)(lcg >> 8) / 8388608.0f - 1.0f;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        fprintf(stderr, "bench_vec: out of memory (%lu bytes)\n",
                (unsigned long)n);
        exit(1);
    }
    return p;
}

static void use(const char *path)
{
    const char *err = NULL;
    if (rcp_vec_init(path, &err) != 0) {
        fprintf(stderr, "bench_vec: %s\n", err);
        exit(1);
    }
}

/* MARK: - measurements ---------------------------------------------------- */

static volatile float sink;

static double t_sum(const float *m)
{
    double t = now();
    sink = rcp_vec_sum(m, (1u << 30) / sizeof(float));
    return now() - t;
}

static double t_scan(const float *q, const float *m)
{
    rcp_vec_hit h[K];
    double t = now();
    rcp_vec_search(q, m, N, D, K, NULL, h);
    sink = h[0].score;
    return now() - t;
}

static double t_q8(const rcp_vec_q8 *s, const float *q, const float *m)
{
    rcp_vec_hit h[K];
    double t = now();
    if (rcp_vec_q8_search(s, q, m, K, 0, NULL, h) != (long)K)
        exit(1);
    sink = h[0].score;
    return now() - t;
}

/* MaxSim of one query against all MDOCS documents. */
static double t_maxsim(const float *qm, const float *docs)
{
    double t = now();
    float s = 0;
    size_t d;
    for (d = 0; d < MDOCS; d++)
        s += rcp_vec_maxsim(qm, MQ, docs + d * MD * MDIM, MD, MDIM,
                            RCP_VEC_DOT);
    sink = s;
    return now() - t;
}

/* FLOP/s of the register-only multiply-add loop on the current path. */
static double peak_flops(void)
{
    double t = now(), f = rcp_vec_flops_probe(4000000);
    return f / (now() - t);
}

static void t_b64(const float *v, char *text, float *back, double *enc,
                  double *dec)
{
    size_t len = rcp_vec_b64_len(B64N);
    double t = now();
    rcp_vec_b64_encode(text, v, B64N);
    *enc = now() - t;
    t = now();
    if (rcp_vec_b64_decode(back, B64N, text, len) != RCP_VEC_B64_OK)
        exit(1);
    *dec = now() - t;
    if (memcmp(back, v, B64N * sizeof *v) != 0)
        exit(1);
}

/* MARK: - report ------------------------------------------------------- */

/* Medians over RUNS rounds.  Each ratio is taken within one round, from
** measurements made back to back, so a neighbour's load that comes and
** goes hits both sides of it. */
struct figures {
    double bw;        /* bytes/s, read bandwidth (best path's sum) */
    double scan, q8;  /* seconds */
    double scan_bw;   /* scan GB/s over bandwidth */
    double speedup;   /* f32 scan time over q8 time */
    double gflops, peak, ms_peak;
    double enc, dec;  /* seconds */
};

struct ctx {
    const char *best;
    const float *q, *m, *mq, *docs;
    const rcp_vec_q8 *s;
    char *text;
    float *back;
};

static void measure(const struct ctx *c, const char *path, struct figures *f)
{
    double bw[RUNS], sc[RUNS], q8[RUNS], r1[RUNS], r2[RUNS], gf[RUNS],
           pk[RUNS], r3[RUNS], en[RUNS], de[RUNS];
    double gb = (double)N * D * 4, flop = 2.0 * MQ * MD * MDIM * MDOCS;
    int i;
    for (i = 0; i < RUNS; i++) {
        use(c->best);
        bw[i] = (double)(1u << 30) / t_sum(c->m);
        use(path);
        sc[i] = t_scan(c->q, c->m);
        q8[i] = t_q8(c->s, c->q, c->m);
        r1[i] = gb / sc[i] / bw[i];
        r2[i] = sc[i] / q8[i];
        pk[i] = peak_flops();
        gf[i] = flop / t_maxsim(c->mq, c->docs);
        r3[i] = gf[i] / pk[i];
        t_b64(c->m, c->text, c->back, &en[i], &de[i]);
    }
    f->bw = median(bw, RUNS);
    f->scan = median(sc, RUNS);
    f->q8 = median(q8, RUNS);
    f->scan_bw = median(r1, RUNS);
    f->speedup = median(r2, RUNS);
    f->gflops = median(gf, RUNS);
    f->peak = median(pk, RUNS);
    f->ms_peak = median(r3, RUNS);
    f->enc = median(en, RUNS);
    f->dec = median(de, RUNS);
}

static const char *verdict(double v, double target)
{
    return v >= target ? "ok" : "BELOW";
}

static void row(const char *label, double a, double b, int prec)
{
    printf("\n%-36s %10.*f %10.*f", label, prec, a, prec, b);
}

static void report(const char *best, const struct figures *f,
                   const struct figures *sc)
{
    double gb = (double)N * D * 4 / 1e9, b64 = (double)B64N * 4 / 1e9;
    printf("%-36s %10s %10s   target", "", best, "scalar");
    row("read bandwidth, 1 thread (GB/s)", f->bw / 1e9, sc->bw / 1e9, 2);
    row("f32 scan 1M x 384, top 10 (ms)", f->scan * 1e3, sc->scan * 1e3, 1);
    row("  GB/s", gb / f->scan, gb / sc->scan, 2);
    row("  / read bandwidth", f->scan_bw, sc->scan_bw, 2);
    printf("   >= 0.8 %s", verdict(f->scan_bw, 0.8));
    row("q8 scan + exact re-score (ms)", f->q8 * 1e3, sc->q8 * 1e3, 1);
    row("  speed-up over f32 scan", f->speedup, sc->speedup, 2);
    printf("   >= 3   %s", verdict(f->speedup, 3));
    row("MaxSim 32x256x128 (GFLOP/s)", f->gflops / 1e9, sc->gflops / 1e9,
        1);
    row("  FMA-loop peak of the path", f->peak / 1e9, sc->peak / 1e9, 1);
    row("  / peak of the path", f->ms_peak, sc->ms_peak, 2);
    printf("   >= 0.5 %s", verdict(f->ms_peak, 0.5));
    row("  / core peak (best path's loop)", f->gflops / f->peak,
        sc->gflops / f->peak, 2);
    row("base64 encode (GB/s of floats)", b64 / f->enc, b64 / sc->enc, 2);
    printf("   >= 1   %s", verdict(b64 / f->enc, 1));
    row("base64 decode (GB/s of floats)", b64 / f->dec, b64 / sc->dec, 2);
    printf("   >= 1   %s\n", verdict(b64 / f->dec, 1));
}

int main(void)
{
    struct ctx c;
    struct figures f, sc;
    rcp_vec_q8 s;
    float *m = xmalloc((size_t)N * D * sizeof *m), q[D];
    float *mq = xmalloc(MQ * MDIM * sizeof *mq);
    float *docs = xmalloc((size_t)MDOCS * MD * MDIM * sizeof *docs);
    char best[16];
    double t0 = now();
    size_t i;
    use(NULL);
    snprintf(best, sizeof best, "%s", rcp_vec_path());
    for (i = 0; i < (size_t)N * D; i++)
        m[i] = rnd();
    for (i = 0; i < D; i++)
        q[i] = rnd();
    for (i = 0; i < MQ * MDIM; i++)
        mq[i] = rnd();
    for (i = 0; i < (size_t)MDOCS * MD * MDIM; i++)
        docs[i] = rnd();
    rcp_vec_q8_init(&s, D);
    for (i = 0; i < N; i++)
        if (rcp_vec_q8_add(&s, m + i * D) != 0)
            return 1;
    printf("path in use: %s (RCP_SIMD forces one); setup %.1f s; medians of "
           "%d rounds\n", best, now() - t0, RUNS);
    c.best = best;
    c.q = q;
    c.m = m;
    c.mq = mq;
    c.docs = docs;
    c.s = &s;
    c.text = xmalloc(rcp_vec_b64_len(B64N));
    c.back = xmalloc(B64N * sizeof *c.back);
    measure(&c, best, &f);
    measure(&c, "scalar", &sc);
    report(best, &f, &sc);
    printf("total %.1f s\n", now() - t0);
    rcp_vec_q8_free(&s);
    free(c.text);
    free(c.back);
    free(m);
    free(mq);
    free(docs);
    return 0;
}
