/*
** test_federation.c -- federation.c, the §16 aggregator, driven as a user
** drives it: real rcp shards over stdio behind `rcp serve --registry`,
** the answers judged against what the shards themselves say.
*/
#define RCP_TEST_HTTP_SERVE    /* testutil.h: test_http_serve() */
#include "testutil.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bin(void)
{
    const char *b = getenv("RCP_BIN");
    return b ? b : "./rcp";
}

/* MARK: - Fixtures: a temporary directory with three overlapping shards */

static char dir[64];

static void path_of(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* Lines [from, to) of the sample corpus (1-based) into dir/name. */
static void shard_file(const char *name, int from, int to, int from2,
                       int to2)
{
    char p[128], line[1 << 16];
    FILE *in = fopen("tests/sample-corpus.jsonl", "r"), *out;
    int no = 0;
    ck_assert_ptr_nonnull(in);
    path_of(p, sizeof p, name);
    out = fopen(p, "w");
    ck_assert_ptr_nonnull(out);
    while (fgets(line, sizeof line, in)) {
        no++;
        if ((no >= from && no < to) || (no >= from2 && no < to2))
            fputs(line, out);
    }
    fclose(in);
    fclose(out);
}

static void setup(void)
{
    strcpy(dir, "/tmp/rcp-fed-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    /* overlapping on purpose: documents 40-49 and 80-89 are in two
    ** shards, so deduplication and summed evidence are exercised */
    shard_file("s0.jsonl", 1, 50, 0, 0);
    shard_file("s1.jsonl", 40, 90, 0, 0);
    shard_file("s2.jsonl", 80, 200, 1, 11);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)system(cmd);
}

static void write_file(const char *name, const char *text)
{
    char p[128];
    FILE *f;
    path_of(p, sizeof p, name);
    f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A registry entry for an rcp shard over dir/<corpus>; extra is more
** members (",\"weight\":2"), pre is a shell prefix that wraps the
** server (NULL: none): "sh -c '<pre> rcp serve --corpus ...'". */
static void engine_json(char *out, size_t n, const char *id,
                        const char *corpus, const char *extra,
                        const char *pre)
{
    if (!pre)
        snprintf(out, n, "{\"id\":\"%s\",\"transport\":\"stdio\","
                 "\"command\":[\"%s\",\"serve\",\"--corpus\",\"%s/%s\"]%s}",
                 id, bin(), dir, corpus, extra ? extra : "");
    else
        snprintf(out, n, "{\"id\":\"%s\",\"transport\":\"stdio\","
                 "\"command\":[\"sh\",\"-c\",\"%s exec %s serve --corpus "
                 "%s/%s 2>/dev/null\"]%s}", id, pre, bin(), dir, corpus,
                 extra ? extra : "");
}

/* A shell prefix that holds each line a second before passing it on: a
** shard slower than any deadline the tests give.  With log, every line
** the aggregator sent is also written there as it arrives. */
static void slow_pre(char *out, size_t n, const char *log)
{
    snprintf(out, n, "%s%s%s while IFS= read -r l; do sleep %d; "
             "printf '%%s\\\\n' \\\"$l\\\"; done |", log ? "tee " : "",
             log ? log : "", log ? " |" : "", test_time_scale());
}

/* params with its "deadlineMs":N made N times test_time_scale(), so a
** deadline keeps its place between the healthy shards and the slow one
** (held test_time_scale() seconds a line) under emulation. */
static const char *scaled(const char *params)
{
    static char out[1024];
    const char *at = strstr(params, "\"deadlineMs\":");
    size_t head;
    ck_assert_ptr_nonnull(at);
    at += strlen("\"deadlineMs\":");
    head = (size_t)(at - params);
    ck_assert_uint_lt(head + 32 + strlen(at), sizeof out);
    memcpy(out, params, head);
    {
        char *rest;
        long ms = strtol(at, &rest, 10);
        snprintf(out + head, sizeof out - head, "%ld%s",
                 ms * test_time_scale(), rest);
    }
    return out;
}

static void registry3(const char *name, const char *e0, const char *e1,
                      const char *e2, const char *top)
{
    char text[8192];
    snprintf(text, sizeof text, "{%s\"engines\":[%s%s%s%s%s]}\n",
             top ? top : "", e0, e1 ? "," : "", e1 ? e1 : "", e2 ? "," : "",
             e2 ? e2 : "");
    write_file(name, text);
}

/* MARK: - Driving a server ------------------------------------------------ */

typedef struct srv {
    rcp_client *c;
    size_t progress;             /* notifications/progress seen */
    int    engine_stage;         /* one staged "engine <id>" */
} srv;

static void count_progress(void *ud, const rcp_json *msg)
{
    srv *s = ud;
    const rcp_json *st = rcp_json_get(rcp_json_get(msg, "params"), "stage");
    if (!rcp_json_streq(rcp_json_get(msg, "method"),
                        "notifications/progress"))
        return;
    s->progress++;
    if (st && st->type == RCP_JSON_STRING && st->n > 7
        && memcmp(st->s, "engine ", 7) == 0)
        s->engine_stage = 1;
}

static void spawn(srv *s, char *const argv[])
{
    rcp_client_opts o;
    char err[256];
    memset(&o, 0, sizeof o);
    memset(s, 0, sizeof *s);
    o.err = RCP_STDERR_DISCARD;
    o.on_notify = count_progress;
    o.ud = s;
    s->c = rcp_client_spawn(argv, &o, err, sizeof err);
    ck_assert_msg(s->c != NULL, "%s", err);
}

/* Request and wait (60 s at most); the request stays the client's. */
static rcp_request *ask(srv *s, const char *method, const char *params)
{
    rcp_request *r = rcp_client_request(s->c, method, params, 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(rcp_client_wait(s->c, r, 60000), RCP_REQ_DONE);
    return r;
}

static void init(srv *s)
{
    rcp_request *r = ask(s, "initialize", "{\"protocolVersion\":1}");
    ck_assert_ptr_nonnull(rcp_request_result(r));
}

static void aggregator(srv *s, const char *registry, const char *more)
{
    char p[128];
    char *argv[8];
    int n = 0;
    path_of(p, sizeof p, registry);
    argv[n++] = (char *)bin();
    argv[n++] = "serve";
    argv[n++] = "--registry";
    argv[n++] = p;
    if (more)
        argv[n++] = (char *)more;
    argv[n] = NULL;
    spawn(s, argv);
    init(s);
}

/* An aggregator over dir/<registry> with an own index over dir/<corpus>
** (--corpus), its engine `local`. */
static void aggregator_own(srv *s, const char *registry, const char *corpus)
{
    char p[128], c[128];
    char *argv[] = { (char *)bin(), "serve", "--registry", p, "--corpus", c,
                     NULL };
    path_of(p, sizeof p, registry);
    path_of(c, sizeof c, corpus);
    spawn(s, argv);
    init(s);
}

static void shard(srv *s, const char *corpus)
{
    char p[128];
    char *argv[] = { (char *)bin(), "serve", "--corpus", p, NULL };
    path_of(p, sizeof p, corpus);
    spawn(s, argv);
    init(s);
}

static long long num_of(const rcp_json *v)
{
    int64_t x = -1;
    ck_assert(v && rcp_json_int(v, &x));
    return (long long)x;
}

static int error_code(rcp_request *r)
{
    int code = 0;
    ck_assert_msg(rcp_request_error(r, &code), "expected an error");
    return code;
}

static const rcp_json *hits_of(rcp_request *r)
{
    const rcp_json *h = rcp_json_get(rcp_request_result(r), "hits");
    ck_assert_msg(h && h->type == RCP_JSON_ARRAY, "no hits: %s",
                  rcp_request_result(r) ? "result without hits" : "error");
    return h;
}

/* 1 when some usage.notes entry contains s. */
static int noted(rcp_request *r, const char *s)
{
    const rcp_json *ns = rcp_json_get(rcp_json_get(rcp_request_result(r),
                                                   "usage"), "notes");
    size_t i;
    for (i = 0; ns && i < ns->n; i++) {
        char b[512];
        snprintf(b, sizeof b, "%.*s", (int)ns->kids[i].n, ns->kids[i].s);
        if (strstr(b, s))
            return 1;
    }
    return 0;
}

static int degraded_has(rcp_request *r, const char *id)
{
    const rcp_json *d = rcp_json_get(rcp_json_get(rcp_request_result(r),
                                                  "_meta"), "degraded");
    size_t i;
    for (i = 0; d && i < d->n; i++)
        if (rcp_json_streq(&d->kids[i], id))
            return 1;
    return 0;
}

static int all_from(const rcp_json *hits, const char *engine)
{
    size_t i;
    for (i = 0; i < hits->n; i++)
        if (!rcp_json_streq(rcp_json_get(rcp_json_get(&hits->kids[i],
                                                      "meta"), "engine"),
                            engine))
            return 0;
    return 1;
}

static int any_from(const rcp_json *hits, const char *engine)
{
    size_t i;
    for (i = 0; i < hits->n; i++)
        if (rcp_json_streq(rcp_json_get(rcp_json_get(&hits->kids[i],
                                                     "meta"), "engine"),
                           engine))
            return 1;
    return 0;
}

static void three_shards(const char *name, const char *top)
{
    char e0[1024], e1[1024], e2[1024];
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    engine_json(e1, sizeof e1, "s1", "s1.jsonl", NULL, NULL);
    engine_json(e2, sizeof e2, "s2", "s2.jsonl", NULL, NULL);
    registry3(name, e0, e1, e2, top);
}

/* MARK: - §16.3 fusion against an offline RRF ----------------------------- */

typedef struct fitem {
    char   id[128];
    double score, weight;
    char  *text;            /* the richest body (longest, earlier on a tie) */
} fitem;

static int fitem_cmp(const void *pa, const void *pb)
{
    const fitem *a = pa, *b = pb;
    size_t la = strlen(a->id), lb = strlen(b->id);
    int c;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    c = memcmp(a->id, b->id, la < lb ? la : lb);
    return c ? c : (la < lb ? -1 : la > lb);
}

/* §16.3 by its formula, over each shard's own answer to the same
** request (k doubled, as the aggregator asks), summed in registry order
** and sorted by the MUST tie-break; written here, not with rcp_fuse. */
static size_t offline_fuse(const char *params, const double *weights,
                           int convex, fitem *out, size_t cap)
{
    static const char *const corp[] = { "s0.jsonl", "s1.jsonl",
                                        "s2.jsonl" };
    size_t n = 0, i, j, m;
    for (i = 0; i < 3; i++) {
        srv s;
        const rcp_json *h;
        double floor = 0, max = 0;
        shard(&s, corp[i]);
        if (convex)     /* §16.3: the floor the engine advertises */
            floor = rcp_json_num(rcp_json_get(rcp_json_get(rcp_json_get(
                rcp_request_result(ask(&s, "info", "{}")), "capabilities"),
                "retrieve"), "scoreFloor"));
        h = hits_of(ask(&s, "retrieve", params));
        for (j = 0; j < h->n; j++) {
            double sc = rcp_json_num(rcp_json_get(&h->kids[j], "score"));
            if (j == 0 || sc > max)
                max = sc;
        }
        for (j = 0; j < h->n; j++) {
            double sc = rcp_json_num(rcp_json_get(&h->kids[j], "score")),
                   term;
            const rcp_json *id = rcp_json_get(&h->kids[j], "id");
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)id->n, id->s);
            for (m = 0; m < n && strcmp(out[m].id, key); m++)
                ;
            if (m == n) {
                ck_assert_uint_lt(n, cap);
                memset(&out[n], 0, sizeof out[n]);
                strcpy(out[n++].id, key);
            }
            {   /* §16.3 the richest body is kept */
                const rcp_json *tx = rcp_json_get(&h->kids[j], "text");
                if (tx && (!out[m].text || tx->n > strlen(out[m].text))) {
                    free(out[m].text);
                    out[m].text = malloc(tx->n + 1);
                    ck_assert_ptr_nonnull(out[m].text);
                    memcpy(out[m].text, tx->s, tx->n);
                    out[m].text[tx->n] = '\0';
                }
            }
            if (!convex)
                term = 1.0 / (60.0 + (double)(j + 1));
            else
                term = max > floor ? (sc <= floor ? 0 : (sc - floor)
                                      / (max - floor)) : 0;
            out[m].score += weights[i] * term;
            out[m].weight += weights[i];
        }
        rcp_client_close(s.c, 5000);
    }
    qsort(out, n, sizeof *out, fitem_cmp);
    return n;
}

static void fitems_free(fitem *f, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        free(f[i].text);
        f[i].text = NULL;
    }
}

static void expect_fused(rcp_request *r, const fitem *want, size_t nwant,
                         size_t k)
{
    const rcp_json *h = hits_of(r);
    size_t i, n = nwant < k ? nwant : k;
    ck_assert_uint_eq(h->n, n);
    for (i = 0; i < n; i++) {
        const rcp_json *id = rcp_json_get(&h->kids[i], "id");
        double sc = rcp_json_num(rcp_json_get(&h->kids[i], "score"));
        ck_assert_msg(id->n == strlen(want[i].id)
                      && !memcmp(id->s, want[i].id, id->n),
                      "rank %lu: got %.*s, offline RRF says %s",
                      (unsigned long)i + 1, (int)id->n, id->s, want[i].id);
        ck_assert_msg(fabs(sc - want[i].score) < 1e-12, "rank %lu score "
                      "%.17g, offline %.17g", (unsigned long)i + 1, sc,
                      want[i].score);
    }
}

START_TEST(fused_hits_equal_an_offline_rrf_over_the_shards_own_answers)
{
    static const double w[] = { 1, 1, 1 };
    fitem want[128];
    size_t n, i, ties = 0;
    srv a;
    rcp_request *r;
    three_shards("rcp.json", NULL);
    n = offline_fuse("{\"query\":\"fusion score rank\",\"k\":20,"
                    "\"mode\":\"sparse\"}", w, 0, want,
                     128);
    ck_assert_uint_ge(n, 10);
    for (i = 1; i < 10; i++)
        ties += want[i].score == want[i - 1].score;
    ck_assert_msg(ties > 0, "the query must produce score ties (the "
                  "tie-break is under test)");
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "retrieve", "{\"query\":\"fusion score rank\",\"k\":10,"
            "\"mode\":\"sparse\"}");
    expect_fused(r, want, n, 10);
    fitems_free(want, n);
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(engine_weights_scale_each_engines_contribution)
{
    static const double w[] = { 1, 1, 2.5 };
    char e0[1024], e1[1024], e2[1024];
    fitem want[128];
    size_t n;
    srv a;
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    engine_json(e1, sizeof e1, "s1", "s1.jsonl", NULL, NULL);
    engine_json(e2, sizeof e2, "s2", "s2.jsonl", ",\"weight\":2.5", NULL);
    registry3("rcp.json", e0, e1, e2, NULL);
    n = offline_fuse("{\"query\":\"durable store log\",\"k\":16}", w, 0,
                     want, 128);
    aggregator(&a, "rcp.json", NULL);
    expect_fused(ask(&a, "retrieve", "{\"query\":\"durable store log\","
                     "\"k\":8}"), want, n, 8);
    fitems_free(want, n);
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(duplicates_collapse_by_id_with_origin_and_merged_meta)
{
    srv a;
    const rcp_json *h;
    size_t i, j;
    rcp_request *r;
    three_shards("rcp.json", NULL);
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "retrieve", "{\"query\":\"the\",\"k\":60,\"mode\":"
            "\"sparse\"}");
    h = hits_of(r);
    for (i = 0; i < h->n; i++) {
        const rcp_json *id = rcp_json_get(&h->kids[i], "id"),
                       *meta = rcp_json_get(&h->kids[i], "meta");
        int64_t rank;
        for (j = 0; j < i; j++) {
            const rcp_json *o = rcp_json_get(&h->kids[j], "id");
            ck_assert(!(o->n == id->n && !memcmp(o->s, id->s, id->n)));
        }
        ck_assert(rcp_json_get(meta, "engine"));
        ck_assert(rcp_json_int(rcp_json_get(meta, "engineRank"), &rank)
                  && rank >= 1);
        ck_assert(rcp_json_get(meta, "engineScore"));
        ck_assert(rcp_json_get(meta, "file"));    /* the shard's own meta */
    }
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(convex_equals_an_offline_floor_anchored_fusion)
{
    static const double w[] = { 1, 1, 1 };
    fitem want[128];
    size_t n;
    srv a;
    rcp_request *r;
    three_shards("rcp.json", NULL);
    n = offline_fuse("{\"query\":\"fusion score rank\",\"k\":20,"
                     "\"mode\":\"dense\"}", w, 1, want, 128);
    aggregator(&a, "rcp.json", NULL);
    /* every rcp shard advertises scoreFloor: convex is applied */
    r = ask(&a, "retrieve", "{\"query\":\"fusion score rank\",\"k\":10,"
            "\"mode\":\"dense\",\"_meta\":{\"federation\":{\"fusion\":"
            "{\"method\":\"convex\"}}}}");
    expect_fused(r, want, n, 10);
    ck_assert(!noted(r, "fused by rrf"));
    r = ask(&a, "retrieve", "{\"query\":\"fusion\",\"k\":5,\"_meta\":"
            "{\"federation\":{\"fusion\":{\"method\":\"bogus\"}}}}");
    ck_assert_int_eq(error_code(r), RCP_OPTION_UNSUPPORTED);
    fitems_free(want, n);
    rcp_client_close(a.c, 5000);
}
END_TEST

/* A registry entry for an rcp shard over dir/<corpus> whose output goes
** through `sed -u EXPR` (JSON-escaped): a real engine that advertises
** less than rcp does, e.g. no scoreFloor -- what another implementation
** may well do. */
static void filtered_json(char *out, size_t n, const char *id,
                          const char *corpus, const char *expr)
{
    snprintf(out, n, "{\"id\":\"%s\",\"command\":[\"sh\",\"-c\",\"%s serve "
             "--corpus %s/%s 2>/dev/null | sed -u '%s'\"]}", id, bin(), dir,
             corpus, expr);
}

#define NO_FLOOR  "s/\\\"scoreFloor\\\":[-0-9.e]*,//"
#define NO_RERANK "s/\\\"rerank\\\":{[^}]*},//"
#define NO_RETRIEVE "s/\\\"retrieve\\\":{[^}]*},//"

START_TEST(convex_falls_back_to_rrf_when_an_engine_has_no_score_floor)
{
    static const double w[] = { 1, 1, 1 };
    char e0[1024], e1[1024], e2[1024];
    fitem want[128];
    size_t n;
    srv a;
    rcp_request *r;
    const rcp_json *es;
    /* s0 advertises no scoreFloor; its answers are rcp's own */
    filtered_json(e0, sizeof e0, "s0", "s0.jsonl", NO_FLOOR);
    engine_json(e1, sizeof e1, "s1", "s1.jsonl", NULL, NULL);
    engine_json(e2, sizeof e2, "s2", "s2.jsonl", NULL, NULL);
    registry3("rcp.json", e0, e1, e2, NULL);
    n = offline_fuse("{\"query\":\"fusion score rank\",\"k\":20,"
                     "\"mode\":\"dense\"}", w, 0, want, 128);
    aggregator(&a, "rcp.json", NULL);
    es = rcp_json_get(rcp_request_result(ask(&a, "catalog/list", "{}")),
                      "engines");
    ck_assert(!rcp_json_get(rcp_json_get(rcp_json_get(&es->kids[0],
              "capabilities"), "retrieve"), "scoreFloor"));
    ck_assert(rcp_json_get(rcp_json_get(rcp_json_get(&es->kids[1],
              "capabilities"), "retrieve"), "scoreFloor"));
    /* §16.3 "MUST fall back to RRF when any of them does not" */
    r = ask(&a, "retrieve", "{\"query\":\"fusion score rank\",\"k\":10,"
            "\"mode\":\"dense\",\"_meta\":{\"federation\":{\"fusion\":"
            "{\"method\":\"convex\"}}}}");
    expect_fused(r, want, n, 10);
    ck_assert(noted(r, "engine s0 advertises none: fused by rrf"));
    fitems_free(want, n);
    rcp_client_close(a.c, 5000);
}
END_TEST

/* MARK: - §16.3 the second stage: rerank over the union ------------------ */

/* §7.6 rerank params {query, passages: the items' texts} into b. */
static void rerank_params(rcp_buf *b, const char *query, const fitem *items,
                          size_t n)
{
    rcp_jw w;
    size_t i;
    rcp_buf_init(b);
    rcp_jw_init(&w, b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "query");
    rcp_jw_cstr(&w, query);
    rcp_jw_key(&w, "passages");
    rcp_jw_arr(&w);
    for (i = 0; i < n; i++)
        rcp_jw_cstr(&w, items[i].text);
    rcp_jw_arr_end(&w);
    rcp_jw_obj_end(&w);
    rcp_buf_putc(b, '\0');
    ck_assert(!b->oom);
}

/* scores[i] for texts[0..n) by `rcp serve --corpus dir/<corpus>`'s own
** §7.6 rerank (its default method, cross-encoder). */
static void shard_rerank(const char *corpus, const char *query,
                         const fitem *items, size_t n, double *scores)
{
    rcp_buf b;
    srv s;
    const rcp_json *sc;
    size_t i;
    rerank_params(&b, query, items, n);
    shard(&s, corpus);
    sc = rcp_json_get(rcp_request_result(ask(&s, "rerank", b.data)),
                      "scores");
    ck_assert_uint_eq(sc->n, n);
    for (i = 0; i < n; i++)
        scores[i] = rcp_json_num(&sc->kids[i]);
    rcp_client_close(s.c, 5000);
    rcp_buf_free(&b);
}

typedef struct cascaded {
    size_t pos;             /* fused position */
    long   rank;            /* rerank rank */
    double score, rr;
} cascaded;

static int cascaded_cmp(const void *pa, const void *pb)
{
    const cascaded *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->pos < b->pos ? -1 : 1;
}

/* The README's second stage by its words, over the fused top
** [0..top) with their rerank scores: rerank ranks by score (ties: the
** fused position), then Σ 1/(60 + rank) over the fused and the rerank
** rank, ties by the rerank rank. */
static void offline_cascade(size_t top, const double *scores, cascaded *out)
{
    size_t i, j;
    for (i = 0; i < top; i++) {
        out[i].pos = i;
        out[i].rr = scores[i];
        out[i].rank = 0;
        for (j = 0; j < top; j++)
            if (scores[j] > scores[i] || (scores[j] == scores[i] && j < i))
                out[i].rank++;
        out[i].score = 1.0 / (60.0 + (double)(i + 1));
        out[i].score += 1.0 / (60.0 + (double)(out[i].rank + 1));
    }
    qsort(out, top, sizeof *out, cascaded_cmp);
}

START_TEST(a_federated_rerank_equals_the_offline_fusion_reranked_by_a_shard)
{
    static const double w[] = { 1, 1, 1 };
    static const char q[] = "durable store log fusion";
    fitem want[128];
    cascaded cas[16];
    double sc[16];
    size_t n, i, moved = 0;
    srv a;
    rcp_request *r;
    const rcp_json *h, *u;
    three_shards("rcp.json", NULL);
    /* k 5, topN 12: each engine is asked for max(2k, topN) = 12 */
    n = offline_fuse("{\"query\":\"durable store log fusion\",\"k\":12,"
                     "\"mode\":\"sparse\"}", w, 0, want, 128);
    ck_assert_uint_ge(n, 12);
    for (i = 0; i < 12; i++)
        ck_assert_ptr_nonnull(want[i].text);
    /* the reranker is the first engine in registry order: s0 */
    shard_rerank("s0.jsonl", q, want, 12, sc);
    offline_cascade(12, sc, cas);
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "retrieve", "{\"query\":\"durable store log fusion\","
            "\"k\":5,\"mode\":\"sparse\",\"rerank\":{\"method\":"
            "\"cross-encoder\",\"topN\":12}}");
    h = hits_of(r);
    ck_assert_uint_eq(h->n, 5);
    for (i = 0; i < 5; i++) {
        const rcp_json *hit = &h->kids[i], *id = rcp_json_get(hit, "id"),
                       *meta = rcp_json_get(hit, "meta");
        const fitem *x = &want[cas[i].pos];
        ck_assert_msg(id->n == strlen(x->id) && !memcmp(id->s, x->id, id->n),
                      "rank %lu: got %.*s, offline says %s",
                      (unsigned long)i + 1, (int)id->n, id->s, x->id);
        ck_assert_msg(fabs(rcp_json_num(rcp_json_get(hit, "score"))
                           - cas[i].score) < 1e-12, "rank %lu score",
                      (unsigned long)i + 1);
        ck_assert(fabs(rcp_json_num(rcp_json_get(rcp_json_get(hit, "scores"),
                                                 "rerank")) - cas[i].rr)
                  < 1e-9 * (1 + fabs(cas[i].rr)));
        ck_assert(rcp_json_get(meta, "engine"));
        ck_assert(rcp_json_get(meta, "engineRank"));
        ck_assert(rcp_json_get(meta, "engineScore"));
        ck_assert(rcp_json_get(hit, "text"));
        moved += cas[i].pos != i;
    }
    ck_assert_msg(moved > 0, "the rerank must change the fused order (the "
                  "second stage is under test)");
    u = rcp_json_get(rcp_request_result(r), "usage");
    ck_assert_int_eq(num_of(rcp_json_get(u, "reranked")), 12);
    ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(u, "reranker"), "id"),
                             "s0"));
    ck_assert(!rcp_json_get(rcp_request_result(r), "_meta"));
    /* includeText false: the same order, the text asked for the reranker
    ** only */
    r = ask(&a, "retrieve", "{\"query\":\"durable store log fusion\","
            "\"k\":5,\"mode\":\"sparse\",\"includeText\":false,\"rerank\":"
            "{\"method\":\"cross-encoder\",\"topN\":12}}");
    h = hits_of(r);
    for (i = 0; i < 5; i++) {
        const rcp_json *id = rcp_json_get(&h->kids[i], "id");
        ck_assert(id->n == strlen(want[cas[i].pos].id)
                  && !memcmp(id->s, want[cas[i].pos].id, id->n));
        ck_assert(!rcp_json_get(&h->kids[i], "text"));
    }
    /* the standalone rerank goes to the same reranker: s0's own scores */
    {
        rcp_buf b;
        const rcp_json *got;
        rerank_params(&b, q, want, 12);
        got = rcp_json_get(rcp_request_result(ask(&a, "rerank", b.data)),
                           "scores");
        ck_assert_uint_eq(got->n, 12);
        for (i = 0; i < 12; i++)
            ck_assert(rcp_json_num(&got->kids[i]) == sc[i]);
        rcp_buf_free(&b);
    }
    fitems_free(want, n);
    rcp_client_close(a.c, 5000);
}
END_TEST

static const rcp_json *usage_of(rcp_request *r)
{
    return rcp_json_get(rcp_request_result(r), "usage");
}

static const char *field_of(rcp_request *r)
{
    static char b[64];
    const rcp_json *f = rcp_json_get(rcp_json_get(rcp_json_get(
        rcp_request_response(r), "error"), "data"), "field");
    snprintf(b, sizeof b, "%.*s", f ? (int)f->n : 0, f ? f->s : "");
    return b;
}

START_TEST(rerank_top_n_and_candidate_k_keep_the_funnel)
{
    srv a;
    rcp_request *r;
    const rcp_json *es;
    size_t i;
    three_shards("rcp.json", NULL);
    aggregator(&a, "rcp.json", NULL);
    /* §7.7 candidateK >= rerank.topN >= k, judged as sent */
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":5,\"rerank\":"
            "{\"topN\":3}}");
    ck_assert_int_eq(error_code(r), RCP_INVALID_PARAMS);
    ck_assert_str_eq(field_of(r), "rerank.topN");
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":5,\"candidateK\":8,"
            "\"rerank\":{\"topN\":10}}");
    ck_assert_int_eq(error_code(r), RCP_INVALID_PARAMS);
    ck_assert_str_eq(field_of(r), "candidateK");
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":5,\"candidateK\":4}");
    ck_assert_int_eq(error_code(r), RCP_INVALID_PARAMS);
    ck_assert_str_eq(field_of(r), "candidateK");
    /* a candidateK below the 2k each engine is asked for is raised with
    ** it (the engines would refuse candidateK < k) */
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":10,"
            "\"candidateK\":15}");
    ck_assert_uint_eq(hits_of(r)->n, 10);
    ck_assert(!rcp_json_get(rcp_request_result(r), "_meta"));
    /* topN: each engine is asked for it, the union's top topN reranked */
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"candidateK\":7,"
            "\"rerank\":{\"topN\":7}}");
    ck_assert_uint_eq(hits_of(r)->n, 3);
    es = rcp_json_get(usage_of(r), "engines");
    for (i = 0; i < es->n; i++)
        ck_assert_int_eq(num_of(rcp_json_get(&es->kids[i], "hits")), 7);
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 7);
    /* no topN: candidateK's default, max(k, 100), capped by the union */
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"rerank\":{}}");
    ck_assert_int_gt(num_of(rcp_json_get(usage_of(r), "reranked")), 14);
    ck_assert_int_le(num_of(rcp_json_get(usage_of(r), "reranked")), 100);
    /* clamped to maxK / maxCandidates, not refused, and said */
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"candidateK\":"
            "1000000,\"rerank\":{\"topN\":1000000}}");
    ck_assert_uint_eq(hits_of(r)->n, 3);
    ck_assert(noted(r, "rerank.topN clamped to 1000"));
    /* a method no reranker has: -32005, or the default under strict false */
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"rerank\":"
            "{\"method\":\"llm\"}}");
    ck_assert_int_eq(error_code(r), RCP_OPTION_UNSUPPORTED);
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"strict\":false,"
            "\"rerank\":{\"method\":\"llm\",\"topN\":5}}");
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 5);
    ck_assert(noted(r, "ignored rerank.method"));
    /* no reranker lists a model (rcp advertises no rerank.models) */
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"rerank\":"
            "{\"model\":\"bge-reranker\"}}");
    ck_assert_int_eq(error_code(r), RCP_OPTION_UNSUPPORTED);
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"strict\":false,"
            "\"rerank\":{\"model\":\"bge-reranker\",\"topN\":4}}");
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 4);
    ck_assert(noted(r, "ignored rerank.model"));
    ck_assert_int_eq(error_code(ask(&a, "rerank", "{\"query\":\"q\","
                     "\"passages\":[\"a\"],\"model\":\"bge-reranker\"}")),
                     RCP_OPTION_UNSUPPORTED);
    rcp_client_close(a.c, 5000);
}
END_TEST

/* A shell prefix for a shard that answers everything but a rerank: it
** exits when one arrives (die) or holds it a second (slow).  With log,
** every line the aggregator sent is also written there. */
static void rerank_pre(char *out, size_t n, int die, const char *log)
{
    char act[32];
    if (die)
        strcpy(act, "exit 0");
    else
        snprintf(act, sizeof act, "sleep %d", test_time_scale());
    snprintf(out, n, "%s%s%s while IFS= read -r l; do case $l in *rerank*) "
             "%s;; esac; printf '%%s\\\\n' \\\"$l\\\"; done |",
             log ? "tee " : "", log ? log : "", log ? " |" : "", act);
}

/* The ids of r's hits, in order, as one string. */
static void ids_of(rcp_request *r, char *out, size_t n)
{
    const rcp_json *h = hits_of(r);
    size_t i, at = 0;
    out[0] = '\0';
    for (i = 0; i < h->n && at < n; i++) {
        const rcp_json *id = rcp_json_get(&h->kids[i], "id");
        at += (size_t)snprintf(out + at, n - at, "%.*s ", (int)id->n, id->s);
    }
}

START_TEST(a_reranker_that_fails_or_is_late_leaves_the_fused_order)
{
    char e0[2048], e1[1024], e2[1024], pre[512], want[2048], got[2048];
    srv a;
    rcp_request *r;
    rerank_pre(pre, sizeof pre, 1, NULL);
    engine_json(e0, sizeof e0, "rr", "s0.jsonl", NULL, pre);
    engine_json(e1, sizeof e1, "s1", "s1.jsonl", NULL, NULL);
    engine_json(e2, sizeof e2, "s2", "s2.jsonl", NULL, NULL);
    registry3("rcp.json", e0, e1, e2, NULL);
    aggregator(&a, "rcp.json", NULL);
    /* topN 2k: the engines are asked what they are asked without it */
    ids_of(ask(&a, "retrieve", "{\"query\":\"durable store log\",\"k\":6}"),
           want, sizeof want);
    r = ask(&a, "retrieve", "{\"query\":\"durable store log\",\"k\":6,"
            "\"rerank\":{\"topN\":12}}");
    ids_of(r, got, sizeof got);
    ck_assert_str_eq(got, want);
    ck_assert(any_from(hits_of(r), "rr"));      /* its hits outlive it */
    ck_assert(noted(r, "rerank: engine rr"));
    ck_assert(degraded_has(r, "rr"));
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 0);
    ck_assert(!rcp_json_get(rcp_json_get(&hits_of(r)->kids[0], "scores"),
                            "rerank"));
    /* down now (its backoff): the next reranker in registry order serves */
    r = ask(&a, "retrieve", "{\"query\":\"durable store log\",\"k\":6,"
            "\"rerank\":{\"topN\":12}}");
    ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(usage_of(r),
                             "reranker"), "id"), "s1"));
    ck_assert_int_gt(num_of(rcp_json_get(usage_of(r), "reranked")), 0);
    rcp_client_close(a.c, 5000);
    /* a reranker past the deadline is cancelled; the fused order stands */
    rerank_pre(pre, sizeof pre, 0, NULL);
    engine_json(e0, sizeof e0, "slow", "s0.jsonl", NULL, pre);
    registry3("rcp.json", e0, e1, e2, NULL);
    aggregator(&a, "rcp.json", NULL);
    ids_of(ask(&a, "retrieve", "{\"query\":\"durable store log\",\"k\":6}"),
           want, sizeof want);
    r = ask(&a, "retrieve", scaled("{\"query\":\"durable store log\","
            "\"k\":6,\"rerank\":{\"topN\":12},\"_meta\":"
            "{\"deadlineMs\":800}}"));
    ids_of(r, got, sizeof got);
    ck_assert_str_eq(got, want);
    ck_assert(noted(r, "past the deadline"));
    ck_assert(degraded_has(r, "slow"));
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 0);
    /* the standalone rerank past the deadline: -32014 */
    ck_assert_int_eq(error_code(ask(&a, "rerank",
                     scaled("{\"query\":\"store\","
                     "\"passages\":[\"a store\",\"b\"],\"_meta\":"
                     "{\"deadlineMs\":300}}"))), RCP_TIMEOUT);
    rcp_client_close(a.c, 5000);
    /* a required reranker's failure fails the query with its code */
    rerank_pre(pre, sizeof pre, 1, NULL);
    engine_json(e0, sizeof e0, "rr", "s0.jsonl", ",\"required\":true", pre);
    registry3("rcp.json", e0, e1, e2, NULL);
    aggregator(&a, "rcp.json", NULL);
    ck_assert_int_eq(error_code(ask(&a, "retrieve", "{\"query\":\"durable\","
                     "\"k\":3,\"rerank\":{}}")), RCP_BACKEND_UNAVAILABLE);
    rcp_client_close(a.c, 5000);
}
END_TEST

static int log_has(const char *name, const char *s);

START_TEST(a_cancel_while_the_reranker_works_cancels_its_request)
{
    char e0[2048], e1[1024], pre[512], log[128];
    srv a;
    rcp_request *r;
    size_t n;
    const char *id;
    char params[64];
    int i;
    path_of(log, sizeof log, "rr.log");
    rerank_pre(pre, sizeof pre, 0, log);
    engine_json(e0, sizeof e0, "slow", "s0.jsonl", NULL, pre);
    engine_json(e1, sizeof e1, "s1", "s1.jsonl", NULL, NULL);
    registry3("rcp.json", e0, e1, NULL, NULL);
    aggregator(&a, "rcp.json", NULL);
    r = rcp_client_request(a.c, "retrieve", "{\"query\":\"store\",\"k\":3,"
                           "\"rerank\":{}}", 0);
    ck_assert_ptr_nonnull(r);
    for (i = 0; i < 50 && !log_has("rr.log", "\"method\":\"rerank\""); i++)
        (void)poll(NULL, 0, 100);       /* the second stage is under way */
    ck_assert(log_has("rr.log", "\"method\":\"rerank\""));
    ck_assert_int_eq(rcp_request_state_get(r), RCP_REQ_PENDING);
    id = rcp_request_id(r, &n);
    snprintf(params, sizeof params, "{\"id\":%.*s}", (int)n, id);
    ck_assert_int_eq(rcp_client_notify(a.c, "notifications/cancel", params),
                     0);
    ck_assert_int_eq(rcp_client_wait(a.c, r, 5000), RCP_REQ_DONE);
    ck_assert_int_eq(error_code(r), RCP_CANCELLED);
    for (i = 0; i < 50 && !log_has("rr.log", "notifications/cancel"); i++)
        (void)poll(NULL, 0, 100);
    ck_assert(log_has("rr.log", "notifications/cancel"));
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(rerank_is_advertised_only_with_a_reachable_reranker)
{
    char e0[1024], e1[1024];
    srv a;
    const rcp_json *caps;
    rcp_request *r;
    /* engines that do not offer §7.6 rerank (though they rerank inside
    ** their own retrieve): nothing to rerank the union with */
    filtered_json(e0, sizeof e0, "s0", "s0.jsonl", NO_RERANK);
    filtered_json(e1, sizeof e1, "s1", "s1.jsonl", NO_RERANK);
    registry3("rcp.json", e0, e1, NULL, NULL);
    aggregator(&a, "rcp.json", NULL);
    caps = rcp_json_get(rcp_request_result(ask(&a, "info", "{}")),
                        "capabilities");
    ck_assert(!rcp_json_get(caps, "rerank"));
    ck_assert_int_eq(rcp_json_get(rcp_json_get(caps, "retrieve"),
                                  "rerankBuiltin")->type, RCP_JSON_FALSE);
    ck_assert_int_eq(error_code(ask(&a, "rerank", "{\"query\":\"q\","
                     "\"passages\":[\"a\"]}")), RCP_CAPABILITY_MISSING);
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"rerank\":{}}");
    ck_assert_int_eq(error_code(r), RCP_OPTION_UNSUPPORTED);
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"strict\":false,"
            "\"rerank\":{}}");
    ck_assert_uint_eq(hits_of(r)->n, 3);
    ck_assert(noted(r, "ignored rerank"));
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 0);
    rcp_client_close(a.c, 5000);
    /* the same engines and an own index: the own index reranks */
    shard_file("own.jsonl", 1, 40, 0, 0);
    aggregator_own(&a, "rcp.json", "own.jsonl");
    caps = rcp_json_get(rcp_request_result(ask(&a, "info", "{}")),
                        "capabilities");
    ck_assert_uint_eq(rcp_json_get(rcp_json_get(caps, "rerank"),
                                   "methods")->n, 2);
    ck_assert_int_eq(rcp_json_get(rcp_json_get(caps, "retrieve"),
                                  "rerankBuiltin")->type, RCP_JSON_TRUE);
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":3,\"rerank\":"
            "{\"method\":\"colbert\",\"topN\":9}}");
    ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(usage_of(r),
                             "reranker"), "id"), "local"));
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 9);
    ck_assert(rcp_json_get(rcp_json_get(&hits_of(r)->kids[0], "scores"),
                           "rerank"));
    r = ask(&a, "rerank", "{\"query\":\"q\",\"passages\":[\"a\",\"q q\"]}");
    ck_assert_uint_eq(rcp_json_get(rcp_request_result(r), "scores")->n, 2);
    ck_assert_int_eq(error_code(ask(&a, "rerank", "{\"query\":\"q\","
                     "\"passages\":[\"a\"],\"method\":\"llm\"}")),
                     RCP_OPTION_UNSUPPORTED);
    rcp_client_close(a.c, 5000);
    /* §16.3 "when one engine offers rerank": an engine that only reranks
    ** (no retrieve) beside one that only retrieves */
    filtered_json(e1, sizeof e1, "ronly", "s1.jsonl", NO_RETRIEVE);
    registry3("rcp.json", e0, e1, NULL, NULL);
    aggregator(&a, "rcp.json", NULL);
    caps = rcp_json_get(rcp_request_result(ask(&a, "info", "{}")),
                        "capabilities");
    ck_assert(rcp_json_get(caps, "rerank"));
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":4,\"rerank\":"
            "{\"topN\":8}}");
    ck_assert(all_from(hits_of(r), "s0"));
    ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(usage_of(r),
                             "reranker"), "id"), "ronly"));
    ck_assert_int_eq(num_of(rcp_json_get(usage_of(r), "reranked")), 8);
    ck_assert(noted(r, "engine ronly: skipped: does not advertise retrieve"));
    rcp_client_close(a.c, 5000);
}
END_TEST

/* MARK: - §16.2 partial failure -------------------------------------------- */

START_TEST(a_dead_shard_is_skipped_noted_and_degraded)
{
    char e0[1024], e1[1024];
    srv a;
    rcp_request *r;
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    engine_json(e1, sizeof e1, "s1", "s1.jsonl", NULL, NULL);
    registry3("rcp.json", e0, e1, "{\"id\":\"dead\",\"transport\":\"stdio\","
              "\"command\":[\"/nonexistent/rcp-engine\"]}", NULL);
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "retrieve", "{\"query\":\"fusion\",\"k\":5}");
    ck_assert_uint_eq(hits_of(r)->n, 5);
    ck_assert(degraded_has(r, "dead"));
    ck_assert(!degraded_has(r, "s0"));
    ck_assert(noted(r, "engine dead"));
    {   /* usage.engines: who answered, how fast, with how many */
        const rcp_json *es = rcp_json_get(rcp_json_get(rcp_request_result(r),
                                                       "usage"), "engines");
        ck_assert_uint_eq(es->n, 3);
        ck_assert(rcp_json_streq(rcp_json_get(&es->kids[0], "id"), "s0"));
        ck_assert_int_eq(rcp_json_get(&es->kids[0], "answered")->type,
                         RCP_JSON_TRUE);
        ck_assert(rcp_json_num(rcp_json_get(&es->kids[0], "latencyMs")) > 0);
        ck_assert_int_eq(num_of(rcp_json_get(&es->kids[0], "hits")), 10);
        ck_assert_int_eq(rcp_json_get(&es->kids[2], "answered")->type,
                         RCP_JSON_FALSE);
    }
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(a_shard_that_dies_is_reconnected_after_its_backoff)
{
    char e0[1024], e1[2048], pre[512], flag[128];
    srv a;
    rcp_request *r;
    path_of(flag, sizeof flag, "flag");
    /* its first life ends after initialize; the second one lasts */
    snprintf(pre, sizeof pre, "if [ -e %s ]; then :; else touch %s; "
             "head -n 1 | %s serve --corpus %s/s1.jsonl 2>/dev/null; "
             "exit 1; fi;", flag, flag, bin(), dir);
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    engine_json(e1, sizeof e1, "flaky", "s1.jsonl", NULL, pre);
    registry3("rcp.json", e0, e1, NULL, NULL);
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "retrieve", "{\"query\":\"fusion store\",\"k\":20}");
    ck_assert(degraded_has(r, "flaky"));
    ck_assert(all_from(hits_of(r), "s0"));
    (void)poll(NULL, 0, 300);           /* past the first backoff */
    r = ask(&a, "retrieve", "{\"query\":\"fusion store\",\"k\":20}");
    ck_assert(!degraded_has(r, "flaky"));
    ck_assert(any_from(hits_of(r), "flaky"));
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(a_slow_shard_past_the_deadline_is_dropped_and_cancelled)
{
    char e0[1024], e1[1024], e2[2048], pre[512], log[128];
    srv a;
    rcp_request *r;
    path_of(log, sizeof log, "slow.log");
    slow_pre(pre, sizeof pre, log);
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    engine_json(e1, sizeof e1, "s1", "s1.jsonl", NULL, NULL);
    engine_json(e2, sizeof e2, "slow", "s2.jsonl", NULL, pre);
    registry3("rcp.json", e0, e1, e2, NULL);
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "retrieve", scaled("{\"query\":\"fusion\",\"k\":5,\"_meta\":"
            "{\"deadlineMs\":500}}"));
    ck_assert_uint_eq(hits_of(r)->n, 5);
    ck_assert(degraded_has(r, "slow"));
    ck_assert(noted(r, "past the deadline"));
    ck_assert(!any_from(hits_of(r), "slow"));
    rcp_client_close(a.c, 5000);
}
END_TEST

/* What the aggregator sent the slow shard, as its tee logged it. */
static int log_has(const char *name, const char *s)
{
    char p[128], b[1 << 15];
    FILE *f;
    size_t n;
    path_of(p, sizeof p, name);
    if (!(f = fopen(p, "r")))
        return 0;
    n = fread(b, 1, sizeof b - 1, f);
    b[n] = '\0';
    fclose(f);
    return strstr(b, s) != NULL;
}

START_TEST(the_forwarded_deadline_is_strictly_smaller)
{
    char e0[2048], pre[512], log[128], b[1 << 15], *p;
    FILE *f;
    size_t n;
    srv a;
    double fwd;
    path_of(log, sizeof log, "slow.log");
    slow_pre(pre, sizeof pre, log);
    engine_json(e0, sizeof e0, "slow", "s0.jsonl", NULL, pre);
    registry3("rcp.json", e0, NULL, NULL, NULL);
    aggregator(&a, "rcp.json", NULL);
    ck_assert_int_eq(error_code(ask(&a, "retrieve",
                     scaled("{\"query\":\"x\","
                     "\"k\":3,\"_meta\":{\"deadlineMs\":300}}"))),
                     RCP_BACKEND_UNAVAILABLE);
    f = fopen(log, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(b, 1, sizeof b - 1, f);
    b[n] = '\0';
    fclose(f);
    p = strstr(b, "\"deadlineMs\":");
    ck_assert_ptr_nonnull(p);
    fwd = atof(p + 13);
    ck_assert_msg(fwd > 0 && fwd < 300 * test_time_scale(), "forwarded %g",
                  fwd);
    ck_assert_ptr_nonnull(strstr(b, "\"federation\":{\"depth\":2,"
                                    "\"path\":[\""));
    ck_assert_ptr_nonnull(strstr(b, "\"k\":6"));      /* headroom: 2k */
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(a_required_shard_failing_fails_the_query_with_its_code)
{
    char e0[1024], e1[2048], pre[512];
    srv a;
    slow_pre(pre, sizeof pre, NULL);
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    engine_json(e1, sizeof e1, "slow", "s1.jsonl", ",\"required\":true",
                pre);
    registry3("rcp.json", e0, e1, NULL, NULL);
    aggregator(&a, "rcp.json", NULL);
    ck_assert_int_eq(error_code(ask(&a, "retrieve",
                     scaled("{\"query\":\"fusion\","
                     "\"k\":5,\"_meta\":{\"deadlineMs\":400}}"))),
                     RCP_TIMEOUT);
    rcp_client_close(a.c, 5000);
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    registry3("rcp.json", e0, "{\"id\":\"gone\",\"command\":"
              "[\"/nonexistent/rcp-engine\"],\"required\":true}", NULL,
              NULL);
    aggregator(&a, "rcp.json", NULL);
    ck_assert_int_eq(error_code(ask(&a, "retrieve", "{\"query\":\"fusion\","
                     "\"k\":5}")), RCP_BACKEND_UNAVAILABLE);
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(every_shard_failing_is_backend_unavailable_not_empty)
{
    char e0[2048], e1[2048], e2[2048], pre[512];
    srv a;
    slow_pre(pre, sizeof pre, NULL);
    engine_json(e0, sizeof e0, "a", "s0.jsonl", NULL, pre);
    engine_json(e1, sizeof e1, "b", "s1.jsonl", NULL, pre);
    engine_json(e2, sizeof e2, "c", "s2.jsonl", NULL, pre);
    registry3("rcp.json", e0, e1, e2, NULL);
    aggregator(&a, "rcp.json", NULL);
    ck_assert_int_eq(error_code(ask(&a, "retrieve",
                     scaled("{\"query\":\"fusion\","
                     "\"k\":5,\"_meta\":{\"deadlineMs\":300}}"))),
                     RCP_BACKEND_UNAVAILABLE);
    rcp_client_close(a.c, 5000);
}
END_TEST

/* MARK: - §16.2 loop detection ---------------------------------------------- */

START_TEST(a_cycle_a_lists_b_lists_a_terminates_and_is_noted)
{
    char e0[1024], eb[1024], ea[1024], p[128];
    srv a;
    rcp_request *r;
    const rcp_json *h;
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    path_of(p, sizeof p, "rb.json");
    snprintf(eb, sizeof eb, "{\"id\":\"b\",\"command\":[\"%s\",\"serve\","
             "\"--registry\",\"%s\"]}", bin(), p);
    registry3("ra.json", e0, eb, NULL, "\"id\":\"A\",");
    engine_json(e0, sizeof e0, "s1", "s1.jsonl", NULL, NULL);
    path_of(p, sizeof p, "ra.json");
    snprintf(ea, sizeof ea, "{\"id\":\"a-again\",\"command\":[\"%s\","
             "\"serve\",\"--registry\",\"%s\"]}", bin(), p);
    registry3("rb.json", e0, ea, NULL, "\"id\":\"B\",");
    aggregator(&a, "ra.json", NULL);
    r = ask(&a, "retrieve", "{\"query\":\"fusion store\",\"k\":30}");
    h = hits_of(r);
    ck_assert(any_from(h, "s0"));
    ck_assert(any_from(h, "b"));        /* s1's hits, through B */
    ck_assert(noted(r, "cycle"));
    /* a request already carrying our identity is answered, not forwarded */
    r = ask(&a, "retrieve", "{\"query\":\"fusion\",\"k\":5,\"_meta\":"
            "{\"federation\":{\"depth\":3,\"path\":[\"X\",\"A\"]}}}");
    ck_assert_uint_eq(hits_of(r)->n, 0);
    ck_assert(noted(r, "cycle"));
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(depth_zero_answers_from_the_own_index_only)
{
    char e0[1024];
    srv a;
    rcp_request *r;
    /* the own index holds documents no engine has, so the origin of a
    ** hit tells where it came from */
    shard_file("own.jsonl", 1, 40, 0, 0);
    engine_json(e0, sizeof e0, "s1", "s1.jsonl", NULL, NULL);
    registry3("rcp.json", e0, NULL, NULL, NULL);
    aggregator_own(&a, "rcp.json", "own.jsonl");
    r = ask(&a, "retrieve", "{\"query\":\"fusion store\",\"k\":20}");
    ck_assert(any_from(hits_of(r), "local"));
    ck_assert(any_from(hits_of(r), "s1"));
    r = ask(&a, "retrieve", "{\"query\":\"fusion store\",\"k\":20,\"_meta\":"
            "{\"federation\":{\"depth\":0,\"path\":[]}}}");
    ck_assert_uint_gt(hits_of(r)->n, 0);
    ck_assert(all_from(hits_of(r), "local"));
    ck_assert(noted(r, "depth is 0"));
    ck_assert_int_eq(error_code(ask(&a, "retrieve", "{\"query\":\"x\","
                     "\"_meta\":{\"federation\":{\"depth\":-1}}}")),
                     RCP_INVALID_PARAMS);
    rcp_client_close(a.c, 5000);
}
END_TEST

/* MARK: - §7.14 cancel and §9 progress pass through ----------------------- */

START_TEST(a_cancel_mid_fan_out_cancels_every_downstream_request)
{
    char e0[1024], e1[2048], pre[512], log[128];
    srv a;
    rcp_request *r;
    int i;
    path_of(log, sizeof log, "slow.log");
    slow_pre(pre, sizeof pre, log);
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    engine_json(e1, sizeof e1, "slow", "s1.jsonl", NULL, pre);
    registry3("rcp.json", e0, e1, NULL, NULL);
    aggregator(&a, "rcp.json", NULL);
    r = rcp_client_request(a.c, "retrieve", "{\"query\":\"fusion\",\"k\":5}",
                           0);
    ck_assert_ptr_nonnull(r);
    (void)rcp_client_wait(a.c, r, 300); /* the fan-out is under way */
    ck_assert_int_eq(rcp_request_state_get(r), RCP_REQ_PENDING);
    {
        size_t n;
        const char *id = rcp_request_id(r, &n);
        char params[64];
        snprintf(params, sizeof params, "{\"id\":%.*s}", (int)n, id);
        ck_assert_int_eq(rcp_client_notify(a.c, "notifications/cancel",
                                           params), 0);
    }
    ck_assert_int_eq(rcp_client_wait(a.c, r, 5000), RCP_REQ_DONE);
    ck_assert_int_eq(error_code(r), RCP_CANCELLED);
    for (i = 0; i < 50 && !log_has("slow.log", "notifications/cancel"); i++)
        (void)poll(NULL, 0, 100);
    ck_assert(log_has("slow.log", "\"method\":\"retrieve\""));
    ck_assert(log_has("slow.log", "notifications/cancel"));
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(progress_is_reported_per_engine)
{
    srv a;
    rcp_request *r;
    three_shards("rcp.json", NULL);
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "retrieve", "{\"query\":\"fusion\",\"k\":5,\"_meta\":"
            "{\"progressToken\":\"t\"}}");
    ck_assert_uint_eq(hits_of(r)->n, 5);
    ck_assert_uint_gt(a.progress, 0);
    ck_assert(a.engine_stage);
    rcp_client_close(a.c, 5000);
}
END_TEST

/* MARK: - §7.13 catalog/list, §16.4 capabilities ------------------------------ */

START_TEST(catalog_list_gives_each_engines_initialize_endpoint_on_request)
{
    srv a;
    const rcp_json *es, *caps;
    rcp_request *r;
    size_t i;
    three_shards("rcp.json", NULL);
    aggregator(&a, "rcp.json", NULL);
    r = ask(&a, "info", "{}");
    caps = rcp_json_get(rcp_request_result(r), "capabilities");
    ck_assert(rcp_json_get(caps, "catalog"));
    ck_assert(rcp_json_get(caps, "retrieve"));
    ck_assert(!rcp_json_get(caps, "embed"));   /* not routed: -32003 */
    ck_assert(!rcp_json_get(caps, "index"));
    ck_assert(!rcp_json_get(caps, "pagination"));
    ck_assert_int_eq(error_code(ask(&a, "embed", "{\"inputs\":[\"x\"]}")),
                     RCP_CAPABILITY_MISSING);
    /* options the federation does not offer: refused, or under strict
    ** false dropped with a note (never half-honoured by each engine) */
    ck_assert_int_eq(error_code(ask(&a, "retrieve", "{\"query\":\"x\","
                     "\"k\":3,\"tokenBudget\":5}")), RCP_OPTION_UNSUPPORTED);
    ck_assert_int_eq(error_code(ask(&a, "retrieve", "{\"query\":\"x\","
                     "\"k\":3,\"cursor\":\"c1\"}")), RCP_OPTION_UNSUPPORTED);
    r = ask(&a, "retrieve", "{\"query\":\"fusion\",\"k\":3,\"strict\":false,"
            "\"tokenBudget\":1}");
    ck_assert_uint_eq(hits_of(r)->n, 3);
    ck_assert(noted(r, "ignored tokenBudget"));
    /* k past maxK is clamped, not refused (§7.7) */
    ck_assert_ptr_nonnull(rcp_request_result(ask(&a, "retrieve",
                          "{\"query\":\"x\",\"k\":1000000}")));
    r = ask(&a, "catalog/list", "{}");
    es = rcp_json_get(rcp_request_result(r), "engines");
    ck_assert_uint_eq(es->n, 3);
    for (i = 0; i < 3; i++) {
        const rcp_json *e = &es->kids[i];
        ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(e, "server"),
                                              "name"), "rcp"));
        ck_assert(rcp_json_get(rcp_json_get(e, "capabilities"), "embed"));
        ck_assert(!rcp_json_get(e, "endpoint"));
    }
    ck_assert(rcp_json_streq(rcp_json_get(&es->kids[1], "id"), "s1"));
    rcp_client_close(a.c, 5000);
    aggregator(&a, "rcp.json", "--expose-endpoints");
    r = ask(&a, "catalog/list", "{}");
    es = rcp_json_get(rcp_request_result(r), "engines");
    ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(&es->kids[0],
                             "endpoint"), "transport"), "stdio"));
    ck_assert_uint_eq(rcp_json_get(rcp_json_get(&es->kids[0], "endpoint"),
                                   "command")->n, 4);
    rcp_client_close(a.c, 5000);
}
END_TEST

START_TEST(filter_fields_are_the_intersection_of_the_engines)
{
    char e0[1024], e1[1024], e2[1024];
    srv a;
    const rcp_json *flt;
    rcp_request *r;
    /* entries with --field options in their commands */
    snprintf(e0, sizeof e0, "{\"id\":\"s0\",\"command\":[\"%s\",\"serve\","
             "\"--field\",\"file:keyword\",\"--field\",\"kind:keyword\","
             "\"--corpus\",\"%s/s0.jsonl\"]}", bin(), dir);
    snprintf(e1, sizeof e1, "{\"id\":\"s1\",\"command\":[\"%s\",\"serve\","
             "\"--field\",\"file:keyword\",\"--field\",\"kind:text\","
             "\"--corpus\",\"%s/s1.jsonl\"]}", bin(), dir);
    snprintf(e2, sizeof e2, "{\"id\":\"s2\",\"command\":[\"%s\",\"serve\","
             "\"--field\",\"file:keyword\",\"--field\",\"section:text\","
             "\"--corpus\",\"%s/s2.jsonl\"]}", bin(), dir);
    registry3("rcp.json", e0, e1, e2, NULL);
    aggregator(&a, "rcp.json", NULL);
    flt = rcp_json_get(rcp_json_get(rcp_request_result(ask(&a, "info",
                       "{}")), "capabilities"), "filter");
    ck_assert_ptr_nonnull(flt);
    /* file is everyone's keyword; kind has two types; section one engine */
    ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(flt, "fields"),
                                          "file"), "keyword"));
    ck_assert_uint_eq(rcp_json_get(flt, "fields")->n, 1);
    r = ask(&a, "retrieve", "{\"query\":\"store\",\"k\":50,\"filter\":"
            "{\"field\":\"file\",\"op\":\"eq\",\"value\":\"store.c\"}}");
    ck_assert_uint_gt(hits_of(r)->n, 0);
    ck_assert(!any_from(hits_of(r), "nobody"));
    {
        const rcp_json *h = hits_of(r);
        size_t i;
        for (i = 0; i < h->n; i++)
            ck_assert(rcp_json_streq(rcp_json_get(rcp_json_get(&h->kids[i],
                                     "meta"), "file"), "store.c"));
    }
    ck_assert_int_eq(error_code(ask(&a, "retrieve", "{\"query\":\"x\","
                     "\"k\":3,\"filter\":{\"field\":\"section\",\"op\":"
                     "\"eq\",\"value\":\"a\"}}")), RCP_INVALID_PARAMS);
    rcp_client_close(a.c, 5000);
    /* one engine without filter: none is advertised, a filter is refused */
    three_shards("rcp.json", NULL);
    aggregator(&a, "rcp.json", NULL);
    ck_assert_int_eq(error_code(ask(&a, "retrieve", "{\"query\":\"x\","
                     "\"k\":3,\"filter\":{\"field\":\"file\",\"op\":"
                     "\"eq\",\"value\":\"a\"}}")), RCP_OPTION_UNSUPPORTED);
    rcp_client_close(a.c, 5000);
}
END_TEST

/* MARK: - §16.1 an http engine ------------------------------------------- */

/* `rcp serve --http 127.0.0.1:0` over dir/corpus, its URL read from the
** line it prints on stderr (rcp.1: "rcp: listening on URL"). */
static pid_t http_shard(const char *corpus, char *url, size_t n)
{
    char p[128];
    path_of(p, sizeof p, corpus);
    return test_http_serve(bin(), "--corpus", p, url, n);
}

/* An http engine is one more engine: the fused answer over two stdio
** shards and one served over HTTP is the offline RRF of the three
** shards' own answers, and catalog/list shows its url when exposed. */
START_TEST(an_http_engine_fuses_like_a_stdio_one)
{
    static const double w[] = { 1, 1, 1 };
    char e0[1024], e1[1024], e2[1024], url[256];
    fitem want[128];
    size_t n;
    int st;
    srv a;
    rcp_request *r;
    pid_t pid = http_shard("s1.jsonl", url, sizeof url);
    engine_json(e0, sizeof e0, "s0", "s0.jsonl", NULL, NULL);
    snprintf(e1, sizeof e1, "{\"id\":\"s1\",\"transport\":\"http\","
             "\"url\":\"%s\"}", url);
    engine_json(e2, sizeof e2, "s2", "s2.jsonl", NULL, NULL);
    registry3("rcp.json", e0, e1, e2, NULL);
    n = offline_fuse("{\"query\":\"fusion score rank\",\"k\":20,"
                     "\"mode\":\"sparse\"}", w, 0, want, 128);
    aggregator(&a, "rcp.json", "--expose-endpoints");
    r = ask(&a, "retrieve", "{\"query\":\"fusion score rank\",\"k\":10,"
            "\"mode\":\"sparse\"}");
    expect_fused(r, want, n, 10);
    ck_assert_msg(any_from(hits_of(r), "s1"), "no hit came from the http "
                  "engine");
    fitems_free(want, n);
    r = ask(&a, "catalog/list", "{}");
    {
        const rcp_json *es = rcp_json_get(rcp_request_result(r), "engines");
        const rcp_json *ep, *u;
        ck_assert_uint_eq(es->n, 3);
        ep = rcp_json_get(&es->kids[1], "endpoint");
        ck_assert(rcp_json_streq(rcp_json_get(ep, "transport"), "http"));
        u = rcp_json_get(ep, "url");
        ck_assert(u && u->n == strlen(url) && !memcmp(u->s, url, u->n));
    }
    rcp_client_close(a.c, 5000);
    kill(pid, SIGTERM);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
}
END_TEST

/* MARK: - §16.1 the registry's errors ----------------------------------------- */

/* rcp serve --registry over text: its exit status and what it said. */
static int bad_registry(const char *text, char *said, size_t n)
{
    rcp_client_opts o;
    char p[128], err[256];
    char *argv[] = { (char *)bin(), "serve", "--registry", p, NULL };
    rcp_client *c;
    const char *t;
    size_t len;
    int st = -1;
    write_file("bad.json", text);
    path_of(p, sizeof p, "bad.json");
    memset(&o, 0, sizeof o);
    o.err = RCP_STDERR_CAPTURE;
    c = rcp_client_spawn(argv, &o, err, sizeof err);
    ck_assert_ptr_nonnull(c);
    ck_assert(rcp_client_wait_exit(c, 10000, &st));
    t = rcp_client_stderr_text(c, &len);
    snprintf(said, n, "%.*s", (int)len, t ? t : "");
    rcp_client_close(c, 0);
    return st;
}

START_TEST(a_malformed_registry_names_path_pointer_and_reason)
{
    static const struct { const char *text, *want; } cases[] = {
        { "{\"engines\": [\n  {\"id\": \"a\",, }]}", "line 2, column" },
        { "[]", "/: must be an object" },
        { "{\"engine\": []}", "/engines: missing" },
        { "{\"engines\": [{\"id\":\"a\",\"command\":\"rcp serve\"}]}",
          "/engines/0/command: must be a non-empty array of strings" },
        { "{\"engines\": [{\"command\":[\"rcp\"]}]}", "/engines/0/id: "
          "missing" },
        { "{\"engines\": [{\"id\":\"a\",\"command\":[\"x\"]},{\"id\":\"a\","
          "\"command\":[\"y\"]}]}", "/engines/1/id: \"a\" again" },
        { "{\"engines\": [{\"id\":\"a\",\"command\":[\"x\"],\"weight\":-1}]}",
          "/engines/0/weight: must be a finite number >= 0" },
        { "{\"engines\": [{\"id\":\"a\",\"transport\":\"grpc\",\"command\":"
          "[\"x\"]}]}", "/engines/0/transport: must be \"stdio\" or "
          "\"http\"" },
        { "{\"engines\": [{\"id\":\"a\",\"command\":[\"x\"],\"required\":1}]}",
          "/engines/0/required: must be true or false" },
        { "{\"engines\": [{\"id\":\"a\",\"transport\":\"stdio\",\"url\":"
          "\"http://x\"}]}", "/engines/0/command: missing" },
        { "{\"engines\": []}", "/engines: empty" },
        { "{\"engines\": [{\"id\":\"w\",\"url\":\"http://127.0.0.1:1/rcp\","
          "\"required\":true}]}", "no engine answered initialize" }
    };
    char said[2048], p[128];
    size_t i;
    path_of(p, sizeof p, "bad.json");
    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        int st = bad_registry(cases[i].text, said, sizeof said);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "case %lu: "
                      "status %d", (unsigned long)i, st);
        ck_assert_msg(strstr(said, p) && strstr(said, cases[i].want),
                      "case %lu: wanted '%s' and the path, got: %s",
                      (unsigned long)i, cases[i].want, said);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("federation");
    TCase *fuse = tcase_create("fusion"), *fail = tcase_create("failure"),
          *loop = tcase_create("loops"), *pass = tcase_create("pass-through"),
          *cat = tcase_create("catalog"), *reg = tcase_create("registry"),
          *rr = tcase_create("rerank");
    TCase *all[] = { fuse, rr, fail, loop, pass, cat, reg };
    size_t i;
    tcase_add_test(fuse,
        fused_hits_equal_an_offline_rrf_over_the_shards_own_answers);
    tcase_add_test(fuse, engine_weights_scale_each_engines_contribution);
    tcase_add_test(fuse, an_http_engine_fuses_like_a_stdio_one);
    tcase_add_test(fuse, duplicates_collapse_by_id_with_origin_and_merged_meta);
    tcase_add_test(fuse, convex_equals_an_offline_floor_anchored_fusion);
    tcase_add_test(fuse,
        convex_falls_back_to_rrf_when_an_engine_has_no_score_floor);
    tcase_add_test(rr,
        a_federated_rerank_equals_the_offline_fusion_reranked_by_a_shard);
    tcase_add_test(rr, rerank_top_n_and_candidate_k_keep_the_funnel);
    tcase_add_test(rr, a_reranker_that_fails_or_is_late_leaves_the_fused_order);
    tcase_add_test(rr, rerank_is_advertised_only_with_a_reachable_reranker);
    tcase_add_test(rr,
        a_cancel_while_the_reranker_works_cancels_its_request);
    tcase_add_test(fail, a_dead_shard_is_skipped_noted_and_degraded);
    tcase_add_test(fail, a_shard_that_dies_is_reconnected_after_its_backoff);
    tcase_add_test(fail,
        a_slow_shard_past_the_deadline_is_dropped_and_cancelled);
    tcase_add_test(fail, the_forwarded_deadline_is_strictly_smaller);
    tcase_add_test(fail,
        a_required_shard_failing_fails_the_query_with_its_code);
    tcase_add_test(fail, every_shard_failing_is_backend_unavailable_not_empty);
    tcase_add_test(loop, a_cycle_a_lists_b_lists_a_terminates_and_is_noted);
    tcase_add_test(loop, depth_zero_answers_from_the_own_index_only);
    tcase_add_test(pass,
        a_cancel_mid_fan_out_cancels_every_downstream_request);
    tcase_add_test(pass, progress_is_reported_per_engine);
    tcase_add_test(cat,
        catalog_list_gives_each_engines_initialize_endpoint_on_request);
    tcase_add_test(cat, filter_fields_are_the_intersection_of_the_engines);
    tcase_add_test(reg, a_malformed_registry_names_path_pointer_and_reason);
    for (i = 0; i < sizeof all / sizeof *all; i++) {
        tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_set_timeout(all[i], 120);
        suite_add_tcase(s, all[i]);
    }
    return s;
}

TEST_MAIN(make_suite)
