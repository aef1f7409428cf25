/*
** bench_json.c -- parse and write speed of json.c on three payloads built
** in memory (issue 2): a float-heavy embed result (64 x 384 floats), a
** text-heavy retrieve result (100 hits with meta and citations) and a
** stream of 1000 small request lines.
**
** Each figure is the median of RUNS runs, printed next to limits measured
** in the same run on the same bytes: memchr (the C library's vectorised
** scan) and a byte loop (one table lookup per byte, what a byte-at-a-time
** scanner cannot beat) for parsing, memcpy for writing.  The ratios are
** what to compare across machines.  "schema" is the oracle's judgement of
** the same frame (conformance/schema.c: the frame against rcp-1.0.json,
** its result against its method's def), next to the parse it follows.
*/
#include "rcp.h"
#include "conformance/conform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS     7
#define MIN_TIME 0.03       /* seconds per run */
#define DIM      384
#define NVEC     64
#define NHITS    100
#define NLINES   1000

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

/* MB/s (10^6 bytes) of fn over bytes per call, median of RUNS runs.  fn
** is read through a volatile so the compiler cannot inline it and hoist
** a pure call (memchr) out of the timing loop. */
static double measure(bench_fn volatile fn, void *ctx, size_t bytes)
{
    double t0, dt, mbs[RUNS];
    long reps = 1, i;
    int r;
    for (;;) {                                  /* calibrate */
        t0 = now();
        for (i = 0; i < reps; i++)
            fn(ctx);
        dt = now() - t0;
        if (dt >= MIN_TIME)
            break;
        reps *= dt < MIN_TIME / 8 ? 8 : 2;
    }
    for (r = 0; r < RUNS; r++) {
        t0 = now();
        for (i = 0; i < reps; i++)
            fn(ctx);
        dt = now() - t0;
        mbs[r] = (double)bytes * (double)reps / dt / 1e6;
    }
    qsort(mbs, RUNS, sizeof mbs[0], cmp_double);
    return mbs[RUNS / 2];
}

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

static void write_embed(rcp_buf *b)
{
    rcp_jw w;
    int i, j;
    rcp_jw_init(&w, b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    rcp_jw_int(&w, 1);
    rcp_jw_key(&w, "result");
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "vectors");
    rcp_jw_arr(&w);
    for (i = 0; i < NVEC; i++) {
        rcp_jw_arr(&w);
        for (j = 0; j < DIM; j++)
            rcp_jw_float(&w, vectors[i][j]);
        rcp_jw_arr_end(&w);
    }
    rcp_jw_arr_end(&w);
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
}

static const char *const words[] = {
    "retrieval", "the", "of", "context", "protocol", "and", "a", "vector",
    "index", "query", "document", "with", "score", "café", "naïve",
    "Zürich", "déjà", "vu", "—", "日本語", "テキスト", "Ελληνικά", "résumé",
    "boundary", "layer", "flow", "pressure", "supersonic", "wing", "is",
    "to", "in", "for", "on", "that", "by", "heat", "transfer", "model",
    "\"quoted\"", "line\nbreak", "tab\there", "emoji 😀"
};

static void put_text(rcp_jw *w, size_t target)
{
    char text[1024];
    size_t n = 0;
    while (n < target) {
        const char *wd = words[rng() % (sizeof words / sizeof *words)];
        size_t l = strlen(wd);
        memcpy(text + n, wd, l);
        n += l;
        text[n++] = ' ';
    }
    text[n - 1] = '.';
    rcp_jw_str(w, text, n);
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

static void write_stream(rcp_buf *b)
{
    char line[128];
    int i;
    for (i = 0; i < NLINES; i++) {
        sprintf(line, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\","
                      "\"params\":{\"nonce\":%d}}\n", i + 1, i * 7919);
        rcp_buf_puts(b, line);
    }
}

/* MARK: - measured operations ------------------------------------------- */

typedef struct payload {
    const char *name;
    rcp_buf text;
    size_t line_off[NLINES + 1];    /* stream only: line starts */
    int nlines;                     /* 0: one document */
    rcp_arena arena;
    const rcp_json *root;
    rcp_buf out;
    const char *method;             /* the result's method, for the schema */
} payload;

static volatile size_t sink;

static void op_parse(void *ctx)
{
    payload *p = ctx;
    rcp_json_err err;
    int i;
    if (!p->nlines) {
        rcp_arena_reset(&p->arena);
        p->root = rcp_json_parse(&p->arena, p->text.data, p->text.len, 0,
                                 &err);
        sink += p->root != NULL;
        return;
    }
    for (i = 0; i < p->nlines; i++) {
        rcp_arena_reset(&p->arena);
        sink += rcp_json_parse(&p->arena, p->text.data + p->line_off[i],
                               p->line_off[i + 1] - p->line_off[i] - 1, 0,
                               &err) != NULL;
    }
}

static void op_write_tree(void *ctx)
{
    payload *p = ctx;
    rcp_jw w;
    p->out.len = 0;
    rcp_jw_init(&w, &p->out);
    rcp_jw_value(&w, p->root);
    sink += p->out.len;
}

/* The stream: each line parsed then written back, as a server would. */
static void op_write_stream(void *ctx)
{
    payload *p = ctx;
    rcp_json_err err;
    int i;
    p->out.len = 0;
    for (i = 0; i < p->nlines; i++) {
        rcp_jw w;
        rcp_arena_reset(&p->arena);
        rcp_jw_init(&w, &p->out);
        rcp_jw_value(&w, rcp_json_parse(&p->arena,
                                        p->text.data + p->line_off[i],
                                        p->line_off[i + 1] - p->line_off[i]
                                            - 1, 0, &err));
        rcp_buf_putc(&p->out, '\n');
    }
    sink += p->out.len;
}

static void op_write_floats(void *ctx)
{
    payload *p = ctx;
    p->out.len = 0;
    write_embed(&p->out);
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

static void op_memchr(void *ctx)
{
    payload *p = ctx;
    sink += memchr(p->text.data, 0x01, p->text.len) != NULL;
}

static unsigned char quote_class[256];

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

/* MARK: - report -------------------------------------------------------- */

static void prepare(payload *p, const char *name, void (*gen)(rcp_buf *),
                    int lines)
{
    rcp_json_err err;
    size_t i;
    p->name = name;
    rcp_buf_init(&p->text);
    rcp_buf_init(&p->out);
    rcp_arena_init(&p->arena, 0);
    gen(&p->text);
    p->nlines = 0;
    if (lines) {
        p->line_off[0] = 0;
        for (i = 0; i < p->text.len; i++)
            if (p->text.data[i] == '\n')
                p->line_off[++p->nlines] = i + 1;
    }
    rcp_buf_reserve(&p->out, p->text.len * 2 + 64);
    p->root = lines ? NULL : rcp_json_parse(&p->arena, p->text.data,
                                            p->text.len, 0, &err);
    if (!lines && !p->root) {
        fprintf(stderr, "%s: generated text does not parse: %s at %u\n",
                name, err.msg, (unsigned)err.offset);
        exit(1);
    }
}

/* Validation against the normative schema, next to the parse of the same
** bytes; the payload must be valid, or the figure would time a shortcut. */
static void report_schema(payload *p, double parse)
{
    char err[256];
    double v;
    if (rcp_schema_validate(rcp_schema_rcp1(), "#", p->root, err,
                            sizeof err) != 0 ||
        rcp_schema_validate_result(rcp_schema_rcp1(), p->method,
                                   rcp_json_get(p->root, "result"), err,
                                   sizeof err) != 0) {
        fprintf(stderr, "%s: not valid against rcp-1.0.json: %s\n",
                p->name, err);
        exit(1);
    }
    v = measure(op_validate, p, p->text.len);
    printf("  schema  %7.0f MB/s   %.3f x parse  (frame + %s result "
           "against rcp-1.0.json)\n", v, v / parse, p->method);
}

static void report(payload *p)
{
    double scan = measure(op_memchr, p, p->text.len);
    double loop = measure(op_byteloop, p, p->text.len);
    double copy = measure(op_memcpy, p, p->text.len);
    double parse = measure(op_parse, p, p->text.len);
    double write = measure(p->nlines ? op_write_stream : op_write_tree, p,
                           p->text.len);
    printf("%-28s %8.1f KB\n", p->name, (double)p->text.len / 1e3);
    printf("  parse   %7.0f MB/s   %.2f x byte loop (%.0f MB/s), "
           "%.3f x memchr (%.0f MB/s)\n", parse, parse / loop, loop,
           parse / scan, scan);
    if (p->nlines) {
        printf("          %7.2f M lines/s\n",
               parse * 1e6 / (double)p->text.len * p->nlines / 1e6);
        printf("  parse+write %3.0f MB/s   %.3f x memcpy (%.0f MB/s)\n",
               write, write / copy, copy);
        return;
    }
    printf("  write   %7.0f MB/s   %.3f x memcpy (%.0f MB/s)  (tree)\n",
           write, write / copy, copy);
    report_schema(p, parse);
}

int main(void)
{
    static payload embed, retrieve, stream;
    double t0 = now(), fl;
    int i, j;
    quote_class['"'] = 1;
    for (i = 0; i < NVEC; i++)
        for (j = 0; j < DIM; j++)
            vectors[i][j] = rng_component();
    prepare(&embed, "embed result 64 x 384 floats", write_embed, 0);
    prepare(&retrieve, "retrieve result 100 hits", write_retrieve, 0);
    prepare(&stream, "1000 ping request lines", write_stream, 1);
    embed.method = "embed";
    retrieve.method = "retrieve";
    printf("json.c: MB/s = 10^6 bytes of JSON text per second; median of "
           "%d runs\n", RUNS);
    report(&embed);
    fl = measure(op_write_floats, &embed, embed.text.len);
    printf("  write   %7.0f MB/s   %.2f M floats/s  (rcp_jw_float from "
           "binary, shortest)\n", fl, fl * 1e6 / (double)embed.text.len *
           NVEC * DIM / 1e6);
    report(&retrieve);
    report(&stream);
    printf("(%.1f s)\n", now() - t0);
    rcp_buf_free(&embed.text);
    rcp_buf_free(&embed.out);
    rcp_arena_free(&embed.arena);
    rcp_buf_free(&retrieve.text);
    rcp_buf_free(&retrieve.out);
    rcp_arena_free(&retrieve.arena);
    rcp_buf_free(&stream.text);
    rcp_buf_free(&stream.out);
    rcp_arena_free(&stream.arena);
    return 0;
}
