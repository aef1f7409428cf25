/*
** bench_model.c -- speed of the built-in engine on a synthetic corpus:
** 100 000 documents of ~100 words drawn from a Zipfian vocabulary of
** 20 000 made-up words (a fixed seed, so every run indexes the same text).
**
**   build/rel/tests/bench_model [NDOCS [NDENSE]]
**
** Prints bulk indexing docs/s, bytes of memory per document, and the
** median and p99 latency of sparse, dense and hybrid top-10 queries of
** 2-5 words.  Next to each: the bar issue 4 sets (twice as fast as SQLite
** FTS5 measured on this machine: 27 000 docs/s, 2.2 ms median, 19 ms p99)
** and, for dense, the time of one bare vec.c scan over a matrix of the
** same shape (the floor a brute-force dense query cannot beat).
**
** Then the dense bar at scale: NDENSE (default 1 000 000) tiny documents
** of 6-10 words, added through rcp_model_add like any other (so the 1M x
** 384 matrix is the engine's own, with its ids, postings and bookkeeping),
** and dense top-10 queries over them next to issue 4's bar (twice FAISS
** IndexFlatIP's 290 ms: 145 ms) and a bare vec.c scan of 1M x 384.
** NDENSE 0 skips it (e.g. `bench_model 20000 0` under a profiler).
**
** Then §8 filters (issue 9): NDOCS documents like the first corpus's,
** each with a meta of three declared fields (year: 70 values, lang: 4,
** tags: 2 of 20), indexing speed with their values read, and dense and
** sparse latency under a selective, a broad and a compound filter, each
** query timed unfiltered right before (the anchor: the same model, the
** same load) and the median of the pairs' ratios; then the 8-bit dense
** scan against the exact one under a filter that keeps half the rows
** (year lt 1985).
**
** Then English stopwords (issue 12): NDOCS documents with 45% of their
** words the commonest stopwords, which have postings, next to the same
** documents with them cut out (`bench_model stopwords [NDOCS]` alone).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcp.h"

#define NDOCS   100000
#define NDENSE  1000000
#define VOCAB   20000
#define NQUERY  200
#define NQDENSE 40             /* queries at 1M rows: ~2 s at the bar */

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
static size_t live_bytes, peak_bytes;

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
    if (live_bytes > peak_bytes)
        peak_bytes = live_bytes;
    return b + 16;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median (and *p99) in ms of nq top-10 queries in mode over m under
** filter f (NULL: none). */
/* One top-10 query in mode under filter f (NULL: none); its ms. */
static double one_query(const rcp_model *m, int mode, const char *text,
                        const rcp_model_filter *f)
{
    rcp_model_hit hits[10];
    rcp_model_query q;
    size_t n;
    double t0;
    rcp_model_query_init(&q);
    q.text = text;
    q.len = strlen(text);
    q.k = 10;
    q.mode = mode;
    q.filter = f;
    t0 = now();
    if (rcp_model_search(m, &q, hits, &n)) {
        fprintf(stderr, "bench_model: search failed\n");
        exit(1);
    }
    return (now() - t0) * 1e3;
}

/* The median (and *p99) in ms of nq top-10 queries in mode. */
static double time_queries(const rcp_model *m, int mode, char qs[][64],
                           int nq, double *p99)
{
    static double t[NQUERY];
    int i;
    for (i = 0; i < nq; i++)
        t[i] = one_query(m, mode, qs[i], NULL);
    qsort(t, (size_t)nq, sizeof t[0], cmp_double);
    *p99 = t[nq * 99 / 100];
    return t[nq / 2];
}

/* Median and p99 of nq top-10 queries in mode over m, printed. */
static void latency(const rcp_model *m, int mode, const char *label,
                    char qs[][64], int nq, const char *bar, double floor_ms)
{
    double p99, med = time_queries(m, mode, qs, nq, &p99);
    printf("%-28s median %7.2f ms   p99 %7.2f ms   (%s", label, med, p99,
           bar);
    if (floor_ms > 0)
        printf("one bare vec.c scan: %.2f ms", floor_ms);
    printf(")\n");
}

/* The median of 5 bare dense top-10 scans of a random rows x d matrix
** with vec.c (rcp_vec_search): the floor of a brute-force dense query. */
static double bare_scan(size_t rows, size_t d)
{
    float *mtx = malloc(rows * d * sizeof *mtx), *q = malloc(d * sizeof *q);
    rcp_vec_hit out[10];
    double t[5];
    size_t i;
    int r;
    if (!mtx || !q) {
        fprintf(stderr, "bench_model: out of memory\n");
        exit(1);
    }
    for (i = 0; i < rows * d; i++)
        mtx[i] = (float)((double)(next() % 1000) / 1000.0 - 0.5);
    for (i = 0; i < d; i++)
        q[i] = 0.05f;
    for (r = 0; r < 5; r++) {
        double t0 = now();
        rcp_vec_search(q, mtx, rows, d, 10, NULL, out);
        t[r] = (now() - t0) * 1e3;
    }
    free(mtx);
    free(q);
    qsort(t, 5, sizeof t[0], cmp_double);
    return t[2];
}

/* Texts and ids made before the clock starts, so the figure is the
** engine's alone: n documents of minw..minw+spread words. */
typedef struct corpus {
    char   *buf;
    size_t *off;                /* text i: buf[off[2i] .. off[2i+1]) */
    char  (*id)[16];
    int     n;
} corpus;

static corpus make_corpus(int n, int minw, int spread, const char *prefix)
{
    corpus c;
    size_t cap = (size_t)n * (size_t)(minw + spread) * 11 + 1, used = 0;
    int i;
    c.buf = malloc(cap);
    c.off = malloc(2 * (size_t)n * sizeof *c.off);
    c.id = malloc((size_t)n * sizeof *c.id);
    c.n = n;
    if (!c.buf || !c.off || !c.id) {
        fprintf(stderr, "bench_model: out of memory\n");
        exit(1);
    }
    for (i = 0; i < n; i++) {
        c.off[2 * i] = used;
        used += make_text(c.buf + used, minw + (int)(next() % (spread + 1)));
        c.off[2 * i + 1] = used;
        snprintf(c.id[i], sizeof c.id[i], "%s%d", prefix, i);
    }
    return c;
}

/* The metas of the filtered corpus: meta i in metas[i], metalen[i]. */
static char **make_metas(int n, size_t **lens)
{
    static const char *const langs[] = { "en", "de", "fr", "ja" };
    char **metas = malloc((size_t)n * sizeof *metas);
    int i;
    *lens = malloc((size_t)n * sizeof **lens);
    if (!metas || !*lens) {
        fprintf(stderr, "bench_model: out of memory\n");
        exit(1);
    }
    for (i = 0; i < n; i++) {
        char b[96];
        int l = snprintf(b, sizeof b, "{\"year\":%d,\"lang\":\"%s\","
                         "\"tags\":[\"t%u\",\"t%u\"]}", 1950 + i % 70,
                         langs[i % 4], (unsigned)(next() % 20),
                         (unsigned)(next() % 20));
        if (!(metas[i] = malloc((size_t)l + 1))) {
            fprintf(stderr, "bench_model: out of memory\n");
            exit(1);
        }
        memcpy(metas[i], b, (size_t)l + 1);
        (*lens)[i] = (size_t)l;
    }
    return metas;
}

static void free_corpus(corpus *c)
{
    free(c->buf);
    free(c->off);
    free(c->id);
}

/* Add the whole corpus; returns the seconds it took. */
static double add_corpus(rcp_model *m, const corpus *c)
{
    double t0 = now();
    int i;
    for (i = 0; i < c->n; i++)
        if (rcp_model_add(m, c->id[i], strlen(c->id[i]),
                          c->buf + c->off[2 * i],
                          c->off[2 * i + 1] - c->off[2 * i], NULL, 0)) {
            fprintf(stderr, "bench_model: add failed\n");
            exit(1);
        }
    return now() - t0;
}

/* lsa: the default embedder (1), or the hashed one (0) where a figure
** is of the scan or of filters, which no vector's values change: the
** 1M-document corpus would otherwise spend its time training. */
static rcp_model *new_model(int lsa)
{
    char err[128];
    rcp_model_opts o;
    rcp_model *m;
    rcp_model_opts_init(&o);
    o.lsa = lsa;
    m = rcp_model_new(&o, err, sizeof err);
    if (!m) {
        fprintf(stderr, "bench_model: %s\n", err);
        exit(1);
    }
    return m;
}

/* Dense top 10 by the 8-bit scan (the default) and by the float
** reference (q.exact), each query both ways in turn: their median
** latencies, the ratio, and recall@10 of the scan against the reference
** (issue 17: >= 0.99; tests/test_model.c asserts it); under the §8
** filter f when it is not NULL. */
static void dense_paired(const rcp_model *m, char qs[][64], int nq,
                         const rcp_model_filter *f)
{
    static double t[2][NQUERY];
    rcp_model_hit h[2][10];
    rcp_model_query q;
    size_t n[2], i, j, found = 0, total = 0;
    int x, e;
    for (x = 0; x < nq; x++)
        for (e = 0; e < 2; e++) {
            double t0;
            rcp_model_query_init(&q);
            q.text = qs[x];
            q.len = strlen(qs[x]);
            q.k = 10;
            q.mode = RCP_MODE_DENSE;
            q.exact = e;
            q.filter = f;
            t0 = now();
            if (rcp_model_search(m, &q, h[e], &n[e])) {
                fprintf(stderr, "bench_model: search failed\n");
                exit(1);
            }
            t[e][x] = (now() - t0) * 1e3;
            if (e == 1) {
                for (i = 0; i < n[0]; i++)
                    for (j = 0; j < n[1]; j++)
                        found += h[0][i].doc == h[1][j].doc;
                total += n[1];
            }
        }
    qsort(t[0], (size_t)nq, sizeof t[0][0], cmp_double);
    qsort(t[1], (size_t)nq, sizeof t[1][0], cmp_double);
    printf("%-28s median %7.2f ms   exact %7.2f ms   %.2fx   recall@10 "
           "%.3f (>= 0.99)\n", f ? "  8-bit vs exact, filtered"
           : "  8-bit vs exact", t[0][nq / 2], t[1][nq / 2],
           t[1][nq / 2] / t[0][nq / 2],
           total ? (double)found / (double)total : 1.0);
}

/* The dense embedder learned from the corpus (model.c, LSA): its one
** training at the end of the bulk load -- the model, and every stored
** text embedded again -- timed next to the anchor of the same run, the
** bulk indexing of that corpus, and the memory it took at its peak over
** the index's own. */
static void lsa_training(rcp_model *m, double index_secs)
{
    size_t base = live_bytes;
    double t0 = now(), secs;
    int rc;
    peak_bytes = live_bytes;
    rc = rcp_model_train(m, 0);
    secs = now() - t0;
    if (rc != 1) {
        fprintf(stderr, "bench_model: training failed\n");
        exit(1);
    }
    printf("%-28s %9.2f s               (%.2fx the bulk indexing, %.2f s;"
           " peak +%.0f MB, model %.0f MB)\n", "dense training (LSA)",
           secs, secs / index_secs, index_secs,
           (double)(peak_bytes - base) / 1e6,
           (double)(live_bytes - base) / 1e6);
}

/* The main corpus: indexing speed (the median of INDEX_RUNS fresh
** models: the machine is shared, one run can land in a neighbour's burst),
** memory, query latency per mode. */
#define INDEX_RUNS 3

static void main_corpus(int ndocs, char qs[][64])
{
    corpus c = make_corpus(ndocs, 80, 40, "doc");
    size_t base = live_bytes;
    rcp_model *m = NULL;
    double secs[INDEX_RUNS];
    int i;
    for (i = 0; i < INDEX_RUNS; i++) {
        rcp_model_free(m);
        base = live_bytes;
        m = new_model(1);
        secs[i] = add_corpus(m, &c);
    }
    free_corpus(&c);
    qsort(secs, INDEX_RUNS, sizeof secs[0], cmp_double);
    printf("corpus: %d documents of 80-120 words, vocabulary %d (Zipf)\n",
           ndocs, VOCAB);
    printf("%-28s %9.0f docs/s          (bar: 54 000 docs/s; median of %d,"
           " %.0f-%.0f)\n", "bulk indexing (no store)",
           ndocs / secs[INDEX_RUNS / 2], INDEX_RUNS,
           ndocs / secs[INDEX_RUNS - 1], ndocs / secs[0]);
    lsa_training(m, secs[INDEX_RUNS / 2]);
    printf("%-28s %9.0f bytes/doc       (text ~700 bytes, vector %u)\n",
           "memory per document", (double)(live_bytes - base) / ndocs,
           (unsigned)(rcp_model_dim(m) * 4));
    for (i = 0; i < NQUERY; i++)        /* after the corpus, as ever */
        make_text(qs[i], 2 + (int)(next() % 4));
    latency(m, RCP_MODE_SPARSE, "sparse query (BM25)", qs, NQUERY,
            "bar: 1.1 / 9.5 ms", 0);
    latency(m, RCP_MODE_DENSE, "dense query (8-bit scan)", qs, NQUERY, "",
            bare_scan((size_t)ndocs, rcp_model_dim(m)));
    dense_paired(m, qs, NQUERY, NULL);
    latency(m, RCP_MODE_HYBRID, "hybrid query (rrf+feedback)", qs, NQUERY,
            "two BM25 passes, RM3, one scan", 0);
    rcp_model_free(m);
}

/* Median and p99 of nq top-10 queries in mode under filter f (NULL:
** none), printed next to the unfiltered median anchor (0: this is it). */
/* Each query unfiltered and under f, one after the other (the machine is
** shared: a pair sees the same load), printed: the filtered median and
** p99, the unfiltered median, and the median of the pairs' ratios. */
static void filtered(const rcp_model *m, int mode, const char *label,
                     char qs[][64], int nq, const rcp_model_filter *f)
{
    static double t[NQUERY], u[NQUERY], r[NQUERY];
    int i;
    for (i = 0; i < nq; i++) {
        u[i] = one_query(m, mode, qs[i], NULL);
        t[i] = one_query(m, mode, qs[i], f);
        r[i] = t[i] / u[i];
    }
    qsort(t, (size_t)nq, sizeof t[0], cmp_double);
    qsort(u, (size_t)nq, sizeof u[0], cmp_double);
    qsort(r, (size_t)nq, sizeof r[0], cmp_double);
    printf("%-28s median %7.2f ms   p99 %7.2f ms   (unfiltered %.2f ms; "
           "paired %.2f x)\n", label, t[nq / 2], t[nq * 99 / 100], u[nq / 2],
           r[nq / 2]);
}

static rcp_model_filter leaf(size_t field, int op,
                             const rcp_model_value *v, size_t n)
{
    rcp_model_filter f;
    memset(&f, 0, sizeof f);
    f.kind = RCP_FILTER_LEAF;
    f.field = field;
    f.op = op;
    f.values = v;
    f.nvalues = n;
    return f;
}

/* §8: the first corpus again with a meta per document, its fields
** declared; indexing speed, then each mode unfiltered and filtered. */
static void filter_corpus(int ndocs, char qs[][64])
{
    static const rcp_field fields[] = {
        { "year", 4, RCP_FIELD_INT }, { "lang", 4, RCP_FIELD_KEYWORD },
        { "tags", 4, RCP_FIELD_KEYWORD }
    };
    static const char *const modes[] = { "dense", "sparse" };
    corpus c = make_corpus(ndocs, 80, 40, "doc");
    size_t *lens;
    char **metas = make_metas(ndocs, &lens), err[128], label[64];
    rcp_model_value y1999, de, tags[2], y2000, y1985;
    rcp_model_filter f[3], kids[2], half;
    rcp_model_opts o;
    rcp_model *m;
    double t0, secs;
    int i, mode;
    rcp_model_opts_init(&o);
    o.fields = fields;
    o.nfields = 3;
    o.lsa = 0;                          /* see new_model */
    if (!(m = rcp_model_new(&o, err, sizeof err))) {
        fprintf(stderr, "bench_model: %s\n", err);
        exit(1);
    }
    t0 = now();
    for (i = 0; i < ndocs; i++)
        if (rcp_model_add(m, c.id[i], strlen(c.id[i]), c.buf + c.off[2 * i],
                          c.off[2 * i + 1] - c.off[2 * i], metas[i],
                          lens[i])) {
            fprintf(stderr, "bench_model: add failed\n");
            exit(1);
        }
    secs = now() - t0;
    printf("filters: the corpus again, each document with a meta of 3 "
           "declared fields\n");
    printf("%-28s %9.0f docs/s\n", "bulk indexing (values read)",
           ndocs / secs);
    memset(&y1999, 0, sizeof y1999);
    y1999.num = 1999;
    y2000 = y1999;
    y2000.num = 2000;
    y1985 = y1999;
    y1985.num = 1985;
    memset(&de, 0, sizeof de);
    de.s = "de";
    de.len = 2;
    tags[0] = tags[1] = de;
    tags[0].s = "t1";
    tags[1].s = "t2";
    f[0] = leaf(0, RCP_OP_EQ, &y1999, 1);
    f[1] = leaf(1, RCP_OP_NE, &de, 1);
    kids[0] = leaf(2, RCP_OP_IN, tags, 2);
    kids[1] = leaf(0, RCP_OP_GTE, &y2000, 1);
    memset(&f[2], 0, sizeof f[2]);
    f[2].kind = RCP_FILTER_AND;
    f[2].kids = kids;
    f[2].nkids = 2;
    for (mode = 0; mode < 2; mode++) {
        int md = mode ? RCP_MODE_SPARSE : RCP_MODE_DENSE;
        snprintf(label, sizeof label, "%s year eq (1/70)", modes[mode]);
        filtered(m, md, label, qs, NQUERY, &f[0]);
        snprintf(label, sizeof label, "%s lang ne (3/4)", modes[mode]);
        filtered(m, md, label, qs, NQUERY, &f[1]);
        snprintf(label, sizeof label, "%s and(in, gte)", modes[mode]);
        filtered(m, md, label, qs, NQUERY, &f[2]);
    }
    half = leaf(0, RCP_OP_LT, &y1985, 1);       /* 35 of 70 years */
    dense_paired(m, qs, NQUERY, &half);
    rcp_model_free(m);
    for (i = 0; i < ndocs; i++)
        free(metas[i]);
    free(metas);
    free(lens);
    free_corpus(&c);
}

/* The dense bar at scale: ndense tiny documents, dense top-10; the bare
** scan runs first, so its matrix is freed before the model is built. */
static void dense_corpus(int ndense, char qs[][64])
{
    double bare = bare_scan((size_t)ndense, RCP_MODEL_DEFAULT_DIM);
    corpus c = make_corpus(ndense, 6, 4, "t");
    size_t base = live_bytes;
    rcp_model *m = new_model(0);
    double secs = add_corpus(m, &c);
    free_corpus(&c);
    printf("dense corpus: %d documents of 6-10 words, %u dimensions\n",
           ndense, (unsigned)rcp_model_dim(m));
    printf("%-28s %9.0f docs/s\n", "bulk indexing (no store)",
           ndense / secs);
    printf("%-28s %9.0f bytes/doc       (vector %u)\n",
           "memory per document", (double)(live_bytes - base) / ndense,
           (unsigned)(rcp_model_dim(m) * 4));
    latency(m, RCP_MODE_DENSE, "dense query (8-bit scan)", qs, NQDENSE,
            "bar: 145 ms; ", bare);
    dense_paired(m, qs, NQDENSE, NULL);
    rcp_model_free(m);
}

/* Issue 12: English text's function words have postings (model.c note
** 16).  NDOCS documents of 80-120 words, each word with probability
** STOP_PCT% one of the commonest English stopwords (Zipf over the list,
** in order of frequency -- roughly English's share of them) and else a
** word of the main vocabulary; the anchor, in the same run, is the same
** documents with the stopwords cut out.  Printed: indexing docs/s and
** memory per document of both, then ordinary queries' latency over both
** and a query of stopwords only over the first. */
#define STOP_PCT 45
static const char *const stop_freq[] = {
    "the", "of", "and", "to", "a", "in", "is", "it", "that", "was", "for",
    "on", "are", "as", "with", "he", "be", "at", "by", "this", "have",
    "from", "or", "an", "but", "not", "all", "were", "we", "when", "there",
    "can", "which", "their", "if", "do", "will", "about", "up", "out",
    "them", "then", "she", "some", "so", "these", "her", "into", "has",
    "more", "other", "than", "been", "its", "who", "now", "my", "over",
    "did", "down", "only", "very", "after", "just", "where", "most",
    "through", "our", "me", "those", "both", "few", "such", "own", "same",
    "too", "any", "each", "why", "how", "because", "again", "here", "once",
    "off", "under", "until", "while", "what", "you", "his", "they", "i",
};
#define NSTOP (sizeof stop_freq / sizeof *stop_freq)

static const char *stop_word(const double *scdf)
{
    double u = (double)(next() >> 11) / 9007199254740992.0;
    size_t i;
    for (i = 0; i + 1 < NSTOP && scdf[i] < u; i++)
        ;
    return stop_freq[i];
}

/* Document i of both corpora: the words once, the stopwords only in
** with. */
static void stop_pair(corpus *with, corpus *without, int i,
                      const double *scdf, size_t *uw, size_t *uo)
{
    int nw = 80 + (int)(next() % 41), j;
    with->off[2 * i] = *uw;
    without->off[2 * i] = *uo;
    for (j = 0; j < nw; j++) {
        int stop = (int)(next() % 100) < STOP_PCT;
        const char *w = stop ? stop_word(scdf) : zipf_word();
        size_t l = strlen(w);
        memcpy(with->buf + *uw, w, l);
        *uw += l;
        with->buf[(*uw)++] = ' ';
        if (!stop) {
            memcpy(without->buf + *uo, w, l);
            *uo += l;
            without->buf[(*uo)++] = ' ';
        }
    }
    with->off[2 * i + 1] = *uw;
    without->off[2 * i + 1] = *uo;
    snprintf(with->id[i], sizeof with->id[i], "e%d", i);
    snprintf(without->id[i], sizeof without->id[i], "e%d", i);
}

static void stop_corpora(int n, corpus *with, corpus *without)
{
    double scdf[NSTOP], sum = 0;
    size_t i, uw = 0, uo = 0;
    for (i = 0; i < NSTOP; i++) {
        if (!rcp_stopword(stop_freq[i], strlen(stop_freq[i]))) {
            fprintf(stderr, "bench_model: %s is no stopword\n",
                    stop_freq[i]);
            exit(1);
        }
        sum += 1.0 / (double)(i + 1);
        scdf[i] = sum;
    }
    for (i = 0; i < NSTOP; i++)
        scdf[i] /= sum;
    with->n = without->n = n;
    with->buf = malloc((size_t)n * 120 * 11 + 1);
    without->buf = malloc((size_t)n * 120 * 11 + 1);
    with->off = malloc(2 * (size_t)n * sizeof *with->off);
    without->off = malloc(2 * (size_t)n * sizeof *without->off);
    with->id = malloc((size_t)n * sizeof *with->id);
    without->id = malloc((size_t)n * sizeof *without->id);
    if (!with->buf || !without->buf || !with->off || !without->off
        || !with->id || !without->id) {
        fprintf(stderr, "bench_model: out of memory\n");
        exit(1);
    }
    for (i = 0; i < (size_t)n; i++)
        stop_pair(with, without, (int)i, scdf, &uw, &uo);
}

/* Index c INDEX_RUNS times; the median docs/s, *bytes per document. */
static rcp_model *index_runs(const corpus *c, double *dps, double *bytes)
{
    double secs[INDEX_RUNS];
    rcp_model *m = NULL;
    size_t base = live_bytes;
    int i;
    for (i = 0; i < INDEX_RUNS; i++) {
        rcp_model_free(m);
        base = live_bytes;
        m = new_model();
        secs[i] = add_corpus(m, c);
    }
    qsort(secs, INDEX_RUNS, sizeof secs[0], cmp_double);
    *dps = c->n / secs[INDEX_RUNS / 2];
    *bytes = (double)(live_bytes - base) / c->n;
    return m;
}

static void stop_corpus(int ndocs, char qs[][64])
{
    static char sq[NQUERY][64];
    static const char *const stopq[] = {
        "to be or not to be", "the who", "it", "what is it", "all of them",
    };
    corpus with, without;
    rcp_model *mw, *mo;
    double dw, dout, bw, bo, p99;
    int i;
    stop_corpora(ndocs, &with, &without);
    mo = index_runs(&without, &dout, &bo);
    mw = index_runs(&with, &dw, &bw);
    printf("\nEnglish stopwords (issue 12): %d documents of 80-120 words, "
           "%d%% of them stopwords\n", ndocs, STOP_PCT);
    printf("%-28s %9.0f docs/s          (the anchor, stopwords cut out: "
           "%.0f docs/s; ratio %.2f)\n", "bulk indexing (no store)", dw,
           dout, dw / dout);
    printf("%-28s %9.0f bytes/doc       (the anchor: %.0f bytes/doc; "
           "ratio %.2f)\n", "memory per document", bw, bo, bw / bo);
    free_corpus(&with);
    free_corpus(&without);
    for (i = 0; i < NQUERY; i++)
        snprintf(sq[i], sizeof sq[i], "%s",
                 stopq[i % (int)(sizeof stopq / sizeof *stopq)]);
    printf("%-28s median %7.2f ms   (the anchor: %.2f ms)\n",
           "sparse query, with them", time_queries(mw, RCP_MODE_SPARSE, qs,
                                                   NQUERY, &p99),
           time_queries(mo, RCP_MODE_SPARSE, qs, NQUERY, &p99));
    latency(mw, RCP_MODE_SPARSE, "stopwords-only sparse query", sq, NQUERY,
            "\"to be or not to be\", \"the who\", \"it\"...", 0);
    rcp_model_free(mw);
    rcp_model_free(mo);
}

int main(int argc, char **argv)
{
    static char qs[NQUERY][64];
    int alone = argc > 1 && !strcmp(argv[1], "stopwords"), i;
    int ndocs = argc > 1 + alone ? atoi(argv[1 + alone]) : NDOCS;
    int ndense = argc > 2 ? atoi(argv[2]) : NDENSE;
    if (ndocs < 1 || ndense < 0) {
        fprintf(stderr, "usage: bench_model [NDOCS [NDENSE]]\n"
                "       bench_model stopwords [NDOCS]\n");
        return 2;
    }
    rcp_set_allocator(counting, NULL);
    make_vocab();
    if (alone) {
        for (i = 0; i < NQUERY; i++)
            make_text(qs[i], 2 + (int)(next() % 4));
        stop_corpus(ndocs, qs);
        rcp_set_allocator(NULL, NULL);
        return 0;
    }
    main_corpus(ndocs, qs);
    if (ndense)
        dense_corpus(ndense, qs);
    filter_corpus(ndocs, qs);
    stop_corpus(ndocs, qs);
    rcp_set_allocator(NULL, NULL);
    return 0;
}
