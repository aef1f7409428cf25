/*
** bench_model.c -- speed of the built-in engine on a synthetic corpus:
** 100 000 documents of ~100 words drawn from a Zipfian vocabulary of
** 20 000 made-up words (a fixed seed, so every run indexes the same text).
**
** Prints bulk indexing docs/s, bytes of memory per document, and the
** median and p99 latency of sparse, dense and hybrid top-10 queries of
** 2-5 words.  Next to each: the bar issue 4 sets (twice as fast as SQLite
** FTS5 measured on this machine: 27 000 docs/s, 2.2 ms median, 19 ms p99)
** and, for dense, the time of one bare vec.c scan over the same matrix
** (the floor a brute-force dense query cannot beat).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcp.h"

#define NDOCS   100000
#define VOCAB   20000
#define NQUERY  200

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char words[VOCAB][12];
static double cdf[VOCAB];

/* Pronounceable made-up words, and a Zipf(1) cumulative distribution. */
static void make_vocab(void)
{
    static const char cons[] = "bcdfghklmnprstvz", vow[] = "aeiou";
    double s = 0;
    int i, j;
    for (i = 0; i < VOCAB; i++) {
        int syl = 2 + (int)(next() % 3);
        for (j = 0; j < syl; j++) {
            words[i][2 * j] = cons[next() % 16];
            words[i][2 * j + 1] = vow[next() % 5];
        }
        words[i][2 * syl] = 0;
        s += 1.0 / (i + 1);
        cdf[i] = s;
    }
    for (i = 0; i < VOCAB; i++)
        cdf[i] /= s;
}

static const char *zipf_word(void)
{
    double u = (double)(next() >> 11) / 9007199254740992.0;
    int lo = 0, hi = VOCAB - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return words[lo];
}

static size_t make_text(char *out, int nwords)
{
    size_t n = 0;
    int i;
    for (i = 0; i < nwords; i++) {
        const char *w = zipf_word();
        size_t l = strlen(w);
        memcpy(out + n, w, l);
        n += l;
        out[n++] = ' ';
    }
    out[n] = 0;
    return n;
}

/* A counting allocator: 16-byte header holding the size. */
static size_t live_bytes;

static void *counting(void *ud, void *p, size_t n)
{
    size_t old = 0;
    char *b = p ? (char *)p - 16 : NULL;
    (void)ud;
    if (b)
        memcpy(&old, b, sizeof old);
    if (n == 0) {
        free(b);
        live_bytes -= old;
        return NULL;
    }
    b = realloc(b, n + 16);
    if (!b)
        return NULL;
    memcpy(b, &n, sizeof n);
    live_bytes += n - old;
    return b + 16;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void latency(const rcp_model *m, int mode, const char *label,
                    char qs[][64], const char *bar, double floor_ms)
{
    static double t[NQUERY];
    rcp_model_hit hits[10];
    rcp_model_query q;
    size_t n;
    int i;
    for (i = 0; i < NQUERY; i++) {
        double t0;
        rcp_model_query_init(&q);
        q.text = qs[i];
        q.len = strlen(qs[i]);
        q.k = 10;
        q.mode = mode;
        t0 = now();
        if (rcp_model_search(m, &q, hits, &n)) {
            fprintf(stderr, "bench_model: search failed\n");
            exit(1);
        }
        t[i] = (now() - t0) * 1e3;
    }
    qsort(t, NQUERY, sizeof t[0], cmp_double);
    printf("%-28s median %7.2f ms   p99 %7.2f ms   (%s", label,
           t[NQUERY / 2], t[NQUERY * 99 / 100], bar);
    if (floor_ms > 0)
        printf("one bare vec.c scan: %.2f ms", floor_ms);
    printf(")\n");
}

/* One bare dense top-10 scan of the model's matrix: the dense floor. */
static double bare_scan(size_t d)
{
    float *mtx = malloc((size_t)NDOCS * d * sizeof *mtx), *q;
    rcp_vec_hit out[10];
    double t0, best = 1e9;
    size_t i;
    int r;
    q = malloc(d * sizeof *q);
    for (i = 0; i < (size_t)NDOCS * d; i++)
        mtx[i] = (float)((double)(next() % 1000) / 1000.0 - 0.5);
    for (i = 0; i < d; i++)
        q[i] = 0.05f;
    for (r = 0; r < 5; r++) {
        t0 = now();
        rcp_vec_search(q, mtx, NDOCS, d, 10, NULL, out);
        if ((now() - t0) * 1e3 < best)
            best = (now() - t0) * 1e3;
    }
    free(mtx);
    free(q);
    return best;
}

int main(void)
{
    static char text[4096], qs[NQUERY][64];
    rcp_model *m;
    char err[128], id[16];
    double t0, secs;
    int i;
    rcp_set_allocator(counting, NULL);
    make_vocab();
    m = rcp_model_new(NULL, err, sizeof err);
    if (!m)
        return 1;
    t0 = now();
    for (i = 0; i < NDOCS; i++) {
        size_t n = make_text(text, 80 + (int)(next() % 41));
        int l = snprintf(id, sizeof id, "doc%d", i);
        if (rcp_model_add(m, id, (size_t)l, text, n, NULL, 0)) {
            fprintf(stderr, "bench_model: add failed\n");
            return 1;
        }
    }
    secs = now() - t0;
    printf("corpus: %d documents of 80-120 words, vocabulary %d (Zipf)\n",
           NDOCS, VOCAB);
    printf("%-28s %9.0f docs/s          (bar: 54 000 docs/s)\n",
           "bulk indexing (no store)", NDOCS / secs);
    printf("%-28s %9.0f bytes/doc       (text ~700 bytes, vector %u)\n",
           "memory per document", (double)live_bytes / NDOCS,
           (unsigned)(rcp_model_dim(m) * 4));
    for (i = 0; i < NQUERY; i++)
        make_text(qs[i], 2 + (int)(next() % 4));
    latency(m, RCP_MODE_SPARSE, "sparse query (BM25)", qs,
            "bar: 1.1 / 9.5 ms", 0);
    latency(m, RCP_MODE_DENSE, "dense query (exact scan)", qs, "",
            bare_scan(rcp_model_dim(m)));
    latency(m, RCP_MODE_HYBRID, "hybrid query (rrf+feedback)", qs,
            "two BM25 passes, RM3, one scan", 0);
    rcp_model_free(m);
    rcp_set_allocator(NULL, NULL);
    return 0;
}
