/*
** bench_json.c -- parse and write speed of json.c beside simdjson and
** cJSON, measured in the same run on the same bytes (issues 2 and 17).
**
** Three payloads built in memory: a float-heavy embed result (64 x 384
** floats), a text-heavy retrieve result (100 hits with meta and
** citations) and 1,000 retrieve request lines, parsed one line at a time
** as a server reads them.  Every row times its contenders interleaved
** (one run each in turn, RUNS times), so a noisy machine slows them
** alike; it prints the best and the median of the RUNS runs and the
** ratios, which are what to compare across machines.
**
** The anchors are bench-only: cJSON (Debian's libcjson-dev) is compiled
** in when the Makefile finds it (RCP_ANCHOR_CJSON), simdjson
** (libsimdjson-dev, C++) through tests/anchor_simdjson.cpp
** (RCP_ANCHOR_SIMDJSON).  Without them their columns are skipped with a
** note; a limit measured on the same bytes stays beside rcp either way
** (a table-lookup byte loop for parsing, memcpy for writing).  "schema"
** is the oracle's judgement of the same frame (conformance/schema.c: the
** frame against rcp-1.0.json, its result against its method's def),
** timed next to the parse it follows.
*/
#include "rcp.h"
#include "conformance/conform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef RCP_ANCHOR_CJSON
#include <cJSON.h>
#endif
#ifdef RCP_ANCHOR_SIMDJSON
#include "anchor.h"
#endif

#define RUNS     9
#define MIN_TIME 0.02       /* seconds per run */
#define DIM      384
#define NVEC     64
#define NHITS    100
#define NLINES   1000
#define PAD      64         /* readable bytes after a text (simdjson's) */

/* MARK: - timing -------------------------------------------------------- */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef void (*bench_fn)(void *ctx);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One contender of a row: fn(ctx) does the row's work once. */
typedef struct contender {
    bench_fn fn;            /* NULL: not measured (anchor absent, n/a) */
    void *ctx;
    long reps;
    double mbs[RUNS];       /* sorted after the race */
} contender;

enum { C_RCP, C_SJ, C_CJ, C_LIMIT, NCONT };

/* Seconds for reps calls.  fn is read through a volatile so the compiler
** cannot inline it and hoist a pure call (memcpy) out of the loop. */
static double run(bench_fn volatile fn, void *ctx, long reps)
{
    double t0 = now();
    long i;
    for (i = 0; i < reps; i++)
        fn(ctx);
    return now() - t0;
}

/* Calibrates each contender to MIN_TIME a run, then RUNS rounds with each
** contender once per round, the order rotating; MB/s of bytes per call. */
static void race(contender *c, size_t bytes)
{
    int i, r;
    for (i = 0; i < NCONT; i++) {
        double dt;
        if (!c[i].fn)
            continue;
        for (c[i].reps = 1;; c[i].reps *= dt < MIN_TIME / 8 ? 8 : 2) {
            dt = run(c[i].fn, c[i].ctx, c[i].reps);
            if (dt >= MIN_TIME)
                break;
        }
    }
    for (r = 0; r < RUNS; r++)
        for (i = 0; i < NCONT; i++) {
            contender *k = &c[(i + r) % NCONT];
            if (k->fn)
                k->mbs[r] = (double)bytes * (double)k->reps /
                            run(k->fn, k->ctx, k->reps) / 1e6;
        }
    for (i = 0; i < NCONT; i++)
        qsort(c[i].mbs, RUNS, sizeof c[i].mbs[0], cmp_double);
}

static double best(const contender *c)   { return c->mbs[RUNS - 1]; }
static double median(const contender *c) { return c->mbs[RUNS / 2]; }

/* MARK: - payloads ------------------------------------------------------ */

static uint64_t rng_state = 0x2545F4914F6CDD1Du;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Roughly N(0, 1/sqrt(DIM)): a unit embedding's components. */
static float rng_component(void)
{
    double s = 0;
    int i;
    for (i = 0; i < 4; i++)
        s += (double)(rng() >> 11) / 9007199254740992.0 - 0.5;
    return (float)(s * 0.0884);
}

static float vectors[NVEC][DIM];
/* The same components as binary64 values whose shortest text is the
** float's (read back from the embed text): a server holding doubles
** writes the same bytes. */
static double dvectors[NVEC][DIM];

static void write_vectors(rcp_jw *w, int dbl)
{
    int i, j;
    rcp_jw_arr(w);
    for (i = 0; i < NVEC; i++) {
        rcp_jw_arr(w);
        if (dbl)
            for (j = 0; j < DIM; j++)
                rcp_jw_double(w, dvectors[i][j]);
        else
            for (j = 0; j < DIM; j++)
                rcp_jw_float(w, vectors[i][j]);
        rcp_jw_arr_end(w);
    }
    rcp_jw_arr_end(w);
}

static void write_embed_as(rcp_buf *b, int dbl)
{
    rcp_jw w;
    rcp_jw_init(&w, b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    rcp_jw_int(&w, 1);
    rcp_jw_key(&w, "result");
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "vectors");
    write_vectors(&w, dbl);
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
}

static void write_embed(rcp_buf *b)
{
    write_embed_as(b, 0);
}

static const char *const words[] = {
    "retrieval", "the", "of", "context", "protocol", "and", "a", "vector",
    "index", "query", "document", "with", "score", "café", "naïve",
    "Zürich", "déjà", "vu", "—", "日本語", "テキスト", "Ελληνικά", "résumé",
    "boundary", "layer", "flow", "pressure", "supersonic", "wing", "is",
    "to", "in", "for", "on", "that", "by", "heat", "transfer", "model",
    "emoji 😀", "\"quoted\"", "line\nbreak", "tab\there"
};
#define NWORDS (sizeof words / sizeof *words)
#define NPLAIN (NWORDS - 3)     /* a query's words: none needs escaping */

static void put_text_from(rcp_jw *w, size_t target, size_t nwords)
{
    char text[1024];
    size_t n = 0;
    while (n < target) {
        const char *wd = words[rng() % nwords];
        size_t l = strlen(wd);
        memcpy(text + n, wd, l);
        n += l;
        text[n++] = ' ';
    }
    text[n - 1] = '.';
    rcp_jw_str(w, text, n);
}

static void put_text(rcp_jw *w, size_t target)
{
    put_text_from(w, target, NWORDS);
}

static void write_hit(rcp_jw *w, int i)
{
    char id[32];
    sprintf(id, "cranfield-%04d#chunk-%d", (int)(rng() % 1400), i % 7);
    rcp_jw_obj(w);
    rcp_jw_key(w, "id");
    rcp_jw_cstr(w, id);
    rcp_jw_key(w, "score");
    rcp_jw_double(w, 30.0 - i * 0.173 - (double)(rng() % 1000) / 1e4);
    rcp_jw_key(w, "text");
    put_text(w, 250 + rng() % 250);
    rcp_jw_key(w, "unit");
    rcp_jw_cstr(w, "chunk");
    rcp_jw_key(w, "meta");
    rcp_jw_obj(w);
    rcp_jw_key(w, "title");
    put_text(w, 40);
    rcp_jw_key(w, "year");
    rcp_jw_int(w, 1950 + (int64_t)(rng() % 70));
    rcp_jw_key(w, "tags");
    rcp_jw_arr(w);
    rcp_jw_cstr(w, "aero");
    rcp_jw_cstr(w, "fluid-dynamics");
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    rcp_jw_key(w, "citation");
    rcp_jw_obj(w);
    rcp_jw_key(w, "source");
    rcp_jw_cstr(w, id);
    rcp_jw_key(w, "uri");
    rcp_jw_cstr(w, "file:///data/cranfield/docs.jsonl");
    rcp_jw_key(w, "start");
    rcp_jw_int(w, (int64_t)(rng() % 100000));
    rcp_jw_key(w, "end");
    rcp_jw_int(w, (int64_t)(rng() % 100000) + 100000);
    rcp_jw_obj_end(w);
    rcp_jw_obj_end(w);
}

static void write_retrieve(rcp_buf *b)
{
    rcp_jw w;
    int i;
    rcp_jw_init(&w, b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    rcp_jw_int(&w, 2);
    rcp_jw_key(&w, "result");
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "hits");
    rcp_jw_arr(&w);
    for (i = 0; i < NHITS; i++)
        write_hit(&w, i);
    rcp_jw_arr_end(&w);
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
}

/* §7 retrieve requests as a client sends them: a query of a few words,
** k, a mode, a filter on every other line, _meta on every fourth. */
static void write_requests(rcp_buf *b)
{
    static const char *const modes[] = {"dense", "sparse", "hybrid"};
    int i;
    for (i = 0; i < NLINES; i++) {
        rcp_jw w;
        rcp_jw_init(&w, b);
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "jsonrpc");
        rcp_jw_cstr(&w, "2.0");
        rcp_jw_key(&w, "id");
        rcp_jw_int(&w, i + 1);
        rcp_jw_key(&w, "method");
        rcp_jw_cstr(&w, "retrieve");
        rcp_jw_key(&w, "params");
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "query");
        put_text_from(&w, 20 + rng() % 60, NPLAIN);
        rcp_jw_key(&w, "k");
        rcp_jw_int(&w, 1 + (int64_t)(rng() % 20));
        rcp_jw_key(&w, "mode");
        rcp_jw_cstr(&w, modes[rng() % 3]);
        if (i % 2) {
            rcp_jw_key(&w, "filter");
            rcp_jw_obj(&w);
            rcp_jw_key(&w, "field");
            rcp_jw_cstr(&w, "year");
            rcp_jw_key(&w, "op");
            rcp_jw_cstr(&w, "gte");
            rcp_jw_key(&w, "value");
            rcp_jw_int(&w, 1950 + (int64_t)(rng() % 70));
            rcp_jw_obj_end(&w);
        }
        if (i % 4 == 0) {
            char tok[16];
            sprintf(tok, "t%d", i);
            rcp_jw_key(&w, "_meta");
            rcp_jw_obj(&w);
            rcp_jw_key(&w, "progressToken");
            rcp_jw_cstr(&w, tok);
            rcp_jw_obj_end(&w);
        }
        rcp_jw_obj_end(&w);
        rcp_jw_obj_end(&w);
        rcp_buf_putc(b, '\n');
    }
}

/* MARK: - measured operations ------------------------------------------- */

typedef struct payload {
    const char *name;
    rcp_buf text;                   /* PAD zero bytes readable past len */
    size_t line_off[NLINES + 1];    /* lines only: line starts */
    int nlines;                     /* 0: one document */
    rcp_arena arena;                /* for parsing in the timed loop */
    rcp_arena keep;                 /* the trees written back */
    const rcp_json *root;           /* a document's tree */
    const rcp_json *roots[NLINES];  /* each line's tree */
    rcp_buf out;
    const char *method;             /* the result's method, for the schema */
#ifdef RCP_ANCHOR_CJSON
    cJSON *cj;                      /* the document as cJSON */
    cJSON *cj_lines[NLINES];
#endif
} payload;

static volatile size_t sink;
static unsigned char quote_class[256];

static const char *line_at(const payload *p, int i, size_t *n)
{
    *n = p->line_off[i + 1] - p->line_off[i] - 1;
    return p->text.data + p->line_off[i];
}

static void op_parse(void *ctx)
{
    payload *p = ctx;
    rcp_json_err err;
    int i;
    if (!p->nlines) {
        rcp_arena_reset(&p->arena);
        sink += rcp_json_parse(&p->arena, p->text.data, p->text.len, 0,
                               &err) != NULL;
        return;
    }
    for (i = 0; i < p->nlines; i++) {
        size_t n;
        const char *s = line_at(p, i, &n);
        rcp_arena_reset(&p->arena);
        sink += rcp_json_parse(&p->arena, s, n, 0, &err) != NULL;
    }
}

static void op_write_tree(void *ctx)
{
    payload *p = ctx;
    rcp_jw w;
    int i;
    p->out.len = 0;
    if (!p->nlines) {
        rcp_jw_init(&w, &p->out);
        rcp_jw_value(&w, p->root);
    }
    for (i = 0; i < p->nlines; i++) {
        rcp_jw_init(&w, &p->out);
        rcp_jw_value(&w, p->roots[i]);
        rcp_buf_putc(&p->out, '\n');
    }
    sink += p->out.len;
}

static void op_write_doubles(void *ctx)
{
    payload *p = ctx;
    p->out.len = 0;
    write_embed_as(&p->out, 1);
    sink += p->out.len;
}

static void op_write_floats(void *ctx)
{
    payload *p = ctx;
    p->out.len = 0;
    write_embed_as(&p->out, 0);
    sink += p->out.len;
}

/* The oracle's judgement of a frame (conformance/schema.c): the frame
** against rcp-1.0.json's root, then its result against its method's. */
static void op_validate(void *ctx)
{
    payload *p = ctx;
    const rcp_schema *s = rcp_schema_rcp1();
    sink += (size_t)(rcp_schema_validate(s, "#", p->root, NULL, 0) +
                     rcp_schema_validate_result(s, p->method,
                         rcp_json_get(p->root, "result"), NULL, 0));
}

static void op_byteloop(void *ctx)
{
    payload *p = ctx;
    const unsigned char *u = (const unsigned char *)p->text.data;
    size_t i, n = 0;
    for (i = 0; i < p->text.len; i++)
        n += quote_class[u[i]];
    sink += n;
}

static void op_memcpy(void *ctx)
{
    payload *p = ctx;
    memcpy(p->out.data, p->text.data, p->text.len);
    sink += (unsigned char)p->out.data[p->text.len / 2];
}

#ifdef RCP_ANCHOR_SIMDJSON
static anchor_sj *sj;
static void op_sj_parse(void *ctx)
{
    payload *p = ctx;
    int i;
    if (!p->nlines) {
        sink += anchor_sj_parse(sj, p->text.data, p->text.len);
        return;
    }
    for (i = 0; i < p->nlines; i++) {
        size_t n;
        const char *s = line_at(p, i, &n);
        sink += anchor_sj_parse(sj, s, n);
    }
}
#endif

#ifdef RCP_ANCHOR_CJSON
static void op_cj_parse(void *ctx)
{
    payload *p = ctx;
    cJSON *v;
    int i;
    if (!p->nlines) {
        v = cJSON_ParseWithLength(p->text.data, p->text.len);
        sink += v != NULL;
        cJSON_Delete(v);
        return;
    }
    for (i = 0; i < p->nlines; i++) {
        size_t n;
        const char *s = line_at(p, i, &n);
        v = cJSON_ParseWithLength(s, n);
        sink += v != NULL;
        cJSON_Delete(v);
    }
}

/* cJSON's fastest writer: into a buffer given once, no malloc per call. */
static void op_cj_write(void *ctx)
{
    payload *p = ctx;
    size_t off = 0;
    int i;
    if (!p->nlines) {
        cJSON_PrintPreallocated(p->cj, p->out.data, (int)p->out.cap, 0);
        sink += (unsigned char)p->out.data[0];
        return;
    }
    for (i = 0; i < p->nlines; i++) {
        cJSON_PrintPreallocated(p->cj_lines[i], p->out.data + off,
                                (int)(p->out.cap - off), 0);
        off += strlen(p->out.data + off);
        p->out.data[off++] = '\n';
    }
    sink += off;
}
#endif

/* MARK: - payload set-up ------------------------------------------------ */

static void die(const char *what, const char *name)
{
    fprintf(stderr, "bench_json: %s: %s\n", name, what);
    exit(1);
}

static void prepare(payload *p, const char *name, void (*gen)(rcp_buf *),
                    int lines)
{
    rcp_json_err err;
    size_t i;
    int k;
    p->name = name;
    rcp_buf_init(&p->text);
    rcp_buf_init(&p->out);
    rcp_arena_init(&p->arena, 0);
    rcp_arena_init(&p->keep, 0);
    gen(&p->text);
    if (rcp_buf_reserve(&p->text, PAD) || rcp_buf_reserve(&p->out,
                                                      p->text.len * 2 + 64))
        die("out of memory", name);
    memset(p->text.data + p->text.len, 0, PAD);
    p->nlines = 0;
    if (lines) {
        p->line_off[0] = 0;
        for (i = 0; i < p->text.len; i++)
            if (p->text.data[i] == '\n')
                p->line_off[++p->nlines] = i + 1;
    }
    if (!lines) {
        p->root = rcp_json_parse(&p->keep, p->text.data, p->text.len, 0,
                                 &err);
        if (!p->root)
            die(err.msg, name);
    }
    for (k = 0; k < p->nlines; k++) {
        size_t n;
        const char *s = line_at(p, k, &n);
        p->roots[k] = rcp_json_parse(&p->keep, s, n, 0, &err);
        if (!p->roots[k])
            die(err.msg, name);
    }
#ifdef RCP_ANCHOR_CJSON
    p->cj = lines ? NULL : cJSON_ParseWithLength(p->text.data, p->text.len);
    if (!lines && !p->cj)
        die("cJSON does not parse it", name);
    for (k = 0; k < p->nlines; k++) {
        size_t n;
        const char *s = line_at(p, k, &n);
        p->cj_lines[k] = cJSON_ParseWithLength(s, n);
        if (!p->cj_lines[k])
            die("cJSON does not parse a line", name);
    }
#endif
#ifdef RCP_ANCHOR_SIMDJSON
    if (!sj && !(sj = anchor_sj_new()))
        die("out of memory", "simdjson");
    if (PAD < anchor_sj_padding())
        die("PAD is less than SIMDJSON_PADDING", name);
    sink = 0;
    op_sj_parse(p);
    if (sink != (size_t)(lines ? p->nlines : 1))
        die("simdjson does not parse it", name);
#endif
}

static void release(payload *p)
{
    int k;
    rcp_buf_free(&p->text);
    rcp_buf_free(&p->out);
    rcp_arena_free(&p->arena);
    rcp_arena_free(&p->keep);
#ifdef RCP_ANCHOR_CJSON
    cJSON_Delete(p->cj);
    for (k = 0; k < p->nlines; k++)
        cJSON_Delete(p->cj_lines[k]);
#endif
    (void)k;
}

/* MARK: - the table ----------------------------------------------------- */

static void print_ratio(const contender *a, const contender *b)
{
    if (a->fn && b->fn)
        printf("  %5.2f %5.2f", best(a) / best(b), median(a) / median(b));
    else
        printf("  %11s", "-");
}

static void print_mbs(const contender *c)
{
    if (c->fn)
        printf("  %5.0f %5.0f", best(c), median(c));
    else
        printf("  %11s", "-");
}

/* Races one row and prints it: rcp, the anchors, the ratios, the limit. */
static void row(const char *what, size_t bytes, contender *c,
                const char *limit)
{
    race(c, bytes);
    printf("%-34s", what);
    print_mbs(&c[C_RCP]);
    print_mbs(&c[C_SJ]);
    print_mbs(&c[C_CJ]);
    print_ratio(&c[C_RCP], &c[C_SJ]);
    print_ratio(&c[C_RCP], &c[C_CJ]);
    print_mbs(&c[C_LIMIT]);
    printf(" %s\n", limit);
}

static void set(contender *c, int who, bench_fn fn, void *ctx)
{
    c[who].fn = fn;
    c[who].ctx = ctx;
}

/* Validation against the normative schema, raced against the parse of
** the same bytes; the payload must be valid, or the figure would time a
** shortcut. */
static void schema_row(payload *p)
{
    contender c[NCONT];
    char err[256];
    memset(c, 0, sizeof c);
    if (rcp_schema_validate(rcp_schema_rcp1(), "#", p->root, err,
                            sizeof err) != 0 ||
        rcp_schema_validate_result(rcp_schema_rcp1(), p->method,
                                   rcp_json_get(p->root, "result"), err,
                                   sizeof err) != 0)
        die(err, p->name);
    set(c, C_RCP, op_validate, p);
    set(c, C_LIMIT, op_parse, p);
    race(c, p->text.len);
    printf("schema, %-26s  %5.0f %5.0f  %.2f x parse (%s result and "
           "frame against rcp-1.0.json)\n", p->name, best(&c[C_RCP]),
           median(&c[C_RCP]), median(&c[C_RCP]) / median(&c[C_LIMIT]),
           p->method);
}

/* A target of issue 17 against what this run measured (medians). */
static void target(const char *what, const contender *a, const contender *b,
                   double want)
{
    if (!a->fn || !b->fn) {
        printf("  %-46s >= %5.2f   not measured (anchor absent)\n", what,
               want);
        return;
    }
    printf("  %-46s >= %5.2f   %5.2f (best %5.2f)  %s\n", what, want,
           median(a) / median(b), best(a) / best(b),
           median(a) / median(b) >= want ? "met" : "NOT met");
}

int main(void)
{
    static payload embed, retrieve, lines;
    static contender pe[NCONT], pr[NCONT], pl[NCONT], wr[NCONT], wl[NCONT],
        wd[NCONT], wf[NCONT];
    char name[64];
    double t0 = now();
    int i, j;
    quote_class['"'] = 1;
    for (i = 0; i < NVEC; i++)
        for (j = 0; j < DIM; j++)
            vectors[i][j] = rng_component();
    prepare(&embed, "embed result", write_embed, 0);
    prepare(&retrieve, "retrieve result", write_retrieve, 0);
    prepare(&lines, "request lines", write_requests, 1);
    for (i = 0; i < NVEC; i++)      /* the floats' shortest texts, read */
        for (j = 0; j < DIM; j++)
            dvectors[i][j] = rcp_json_num(
                &embed.root->kids[2].kids[0].kids[i].kids[j]);

    printf("json.c beside:");
#ifdef RCP_ANCHOR_SIMDJSON
    printf(" simdjson (DOM, %s kernel)", anchor_sj_kernel());
#endif
#ifdef RCP_ANCHOR_CJSON
    printf(" cJSON %d.%d.%d", CJSON_VERSION_MAJOR, CJSON_VERSION_MINOR,
           CJSON_VERSION_PATCH);
#endif
#ifndef RCP_ANCHOR_SIMDJSON
    printf(" [simdjson column skipped: apt-get install libsimdjson-dev g++]");
#endif
#ifndef RCP_ANCHOR_CJSON
    printf(" [cJSON column skipped: apt-get install libcjson-dev]");
#endif
    printf("\n");
    printf("MB/s = 10^6 bytes of the payload's JSON text per second; "
           "best and median of %d interleaved runs\n", RUNS);
    printf("(vector rows write the embed text's numbers; cJSON has one "
           "writer, from binary64)\n");
    printf("%-34s  %11s  %11s  %11s  %11s  %11s  %11s\n", "", "rcp",
           "simdjson", "cJSON", "rcp/simdj", "rcp/cJSON", "limit");
    printf("%-34s  %11s  %11s  %11s  %11s  %11s  %11s\n", "", "best   med",
           "best   med", "best   med", "best   med", "best   med",
           "best   med");

    set(pe, C_RCP, op_parse, &embed);
    set(pr, C_RCP, op_parse, &retrieve);
    set(pl, C_RCP, op_parse, &lines);
    set(pe, C_LIMIT, op_byteloop, &embed);
    set(pr, C_LIMIT, op_byteloop, &retrieve);
    set(pl, C_LIMIT, op_byteloop, &lines);
    set(wr, C_RCP, op_write_tree, &retrieve);
    set(wl, C_RCP, op_write_tree, &lines);
    set(wd, C_RCP, op_write_doubles, &embed);
    set(wf, C_RCP, op_write_floats, &embed);
    set(wr, C_LIMIT, op_memcpy, &retrieve);
    set(wl, C_LIMIT, op_memcpy, &lines);
    set(wd, C_LIMIT, op_memcpy, &embed);
    set(wf, C_LIMIT, op_memcpy, &embed);
#ifdef RCP_ANCHOR_SIMDJSON
    set(pe, C_SJ, op_sj_parse, &embed);
    set(pr, C_SJ, op_sj_parse, &retrieve);
    set(pl, C_SJ, op_sj_parse, &lines);
#endif
#ifdef RCP_ANCHOR_CJSON
    set(pe, C_CJ, op_cj_parse, &embed);
    set(pr, C_CJ, op_cj_parse, &retrieve);
    set(pl, C_CJ, op_cj_parse, &lines);
    set(wr, C_CJ, op_cj_write, &retrieve);
    set(wl, C_CJ, op_cj_write, &lines);
    set(wd, C_CJ, op_cj_write, &embed);  /* its numbers are binary64 */
    set(wf, C_CJ, op_cj_write, &embed);  /* its only writer: binary64 */
#endif
    sprintf(name, "parse, embed result %.0f KB", embed.text.len / 1e3);
    row(name, embed.text.len, pe, "byte loop");
    sprintf(name, "parse, retrieve result %.0f KB",
            retrieve.text.len / 1e3);
    row(name, retrieve.text.len, pr, "byte loop");
    sprintf(name, "parse, %d request lines %.0f KB", NLINES,
            lines.text.len / 1e3);
    row(name, lines.text.len, pl, "byte loop");
    row("write, retrieve tree", retrieve.text.len, wr, "memcpy");
    row("write, 1000 request trees", lines.text.len, wl, "memcpy");
    row("write, embed vectors from binary64", embed.text.len, wd, "memcpy");
    row("write, embed vectors from binary32", embed.text.len, wf, "memcpy");
    printf("%-34s  %5.2f %5.2f M lines/s parsed\n", "",
           best(&pl[C_RCP]) / lines.text.len * NLINES,
           median(&pl[C_RCP]) / lines.text.len * NLINES);
    embed.method = "embed";
    retrieve.method = "retrieve";
    schema_row(&embed);
    schema_row(&retrieve);
    printf("targets (issue 17), rcp's speed as a ratio (medians):\n");
    target("parse request lines / simdjson", &pl[C_RCP], &pl[C_SJ], 0.75);
    target("parse retrieve result / simdjson", &pr[C_RCP], &pr[C_SJ],
           0.55);
    target("write retrieve tree / cJSON", &wr[C_RCP], &wr[C_CJ], 8);
    target("write vectors from binary64 / cJSON", &wd[C_RCP], &wd[C_CJ],
           15);
    target("write vectors from binary32 / cJSON (binary64)", &wf[C_RCP],
           &wf[C_CJ], 15);
    target("write binary32 / write binary64 (rcp)", &wf[C_RCP], &wd[C_RCP],
           1);
    printf("(%.1f s)\n", now() - t0);
    release(&embed);
    release(&retrieve);
    release(&lines);
#ifdef RCP_ANCHOR_SIMDJSON
    anchor_sj_free(sj);
#endif
    return 0;
}
