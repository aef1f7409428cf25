/*
** test_delegate.c -- delegate.c, issue 18's delegation of embed and
** rerank, driven as a user drives it: `rcp serve --embed-engine CMD` /
** `--rerank-engine CMD` (and the -url forms) in front of a second real
** `rcp serve` as the engine, each answer judged against what the engine
** itself (or an rcp without delegation) says.
*/
#define RCP_TEST_HTTP_SERVE    /* testutil.h: test_http_serve() */
#include "testutil.h"

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

static const char corpus[] = "tests/sample-corpus.jsonl";
static const char *self;        /* this program: `self fake-engine` */

/* MARK: - A fake engine: what rcp as an engine never does ---------------- */

/* A server over the protocol core with a backend of its own, run as
** `test_delegate fake-engine`: embed gives [len, 1, 0] (not normalised)
** with batchLimit 2 and identity "fake-3"; rerank offers llm and colbert
** (no cross-encoder) with maxCandidates 2 and scores by length (llm) or
** minus length (colbert); "wrongdim" embeds to two numbers; every
** request reports progress (§9). */
static unsigned long fake_offers(const void *ud)
{
    (void)ud;
    return PROTO_CAP(PROTO_CAP_EMBED) | PROTO_CAP(PROTO_CAP_RERANK)
           | PROTO_CAP(PROTO_CAP_STREAMING);
}

static unsigned long fake_partial(const void *ud)
{
    (void)ud;
    return 0;
}

static void fake_describe(const void *ud, int cap, rcp_jw *w)
{
    static const char embed[] = "{\"dimension\":3,\"identity\":\"fake-3\","
        "\"batchLimit\":2}";
    static const char rerank[] = "{\"methods\":[\"llm\",\"colbert\"],"
        "\"maxCandidates\":2,\"models\":[\"m1\"]}";
    (void)ud;
    if (cap == PROTO_CAP_EMBED)
        rcp_jw_raw(w, embed, sizeof embed - 1);
    else if (cap == PROTO_CAP_RERANK)
        rcp_jw_raw(w, rerank, sizeof rerank - 1);
    else
        rcp_jw_raw(w, "{}", 2);
}

static int fake_embed(void *ud, rcp_call *c)
{
    const rcp_json *in = proto_get(call_params(c), "inputs");
    rcp_jw *w = call_w(c);
    size_t i;
    (void)ud;
    if (!in || in->type != RCP_JSON_ARRAY || in->n > 2)
        return call_fail(c, RCP_INVALID_PARAMS, "inputs", NULL, "fake: at "
                         "most two inputs");
    (void)call_checkpoint(c, 0.5, "fake");
    rcp_jw_obj(w);
    rcp_jw_key(w, "vectors");
    rcp_jw_arr(w);
    for (i = 0; i < in->n; i++) {
        int bad = rcp_json_streq(&in->kids[i], "wrongdim");
        rcp_jw_arr(w);
        rcp_jw_int(w, (int64_t)in->kids[i].n);
        rcp_jw_int(w, 1);
        if (!bad)
            rcp_jw_int(w, 0);
        rcp_jw_arr_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    return 0;
}

static int fake_rerank(void *ud, rcp_call *c)
{
    const rcp_json *ps = proto_get(call_params(c), "passages");
    const rcp_json *m = proto_get(call_params(c), "method");
    rcp_jw *w = call_w(c);
    int sign = rcp_json_streq(m, "colbert") ? -1 : 1;
    size_t i;
    (void)ud;
    if (m && !rcp_json_streq(m, "llm") && sign > 0)
        return call_fail(c, RCP_OPTION_UNSUPPORTED, NULL, "method", "fake: "
                         "llm or colbert");
    if (!ps || ps->type != RCP_JSON_ARRAY || ps->n > 2)
        return call_fail(c, RCP_INVALID_PARAMS, "passages", NULL, "fake: "
                         "at most two passages");
    rcp_jw_obj(w);
    rcp_jw_key(w, "scores");
    rcp_jw_arr(w);
    for (i = 0; i < ps->n; i++)
        rcp_jw_int(w, sign * (int64_t)ps->kids[i].n);
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    return 0;
}

static int fake_engine(void)
{
    static proto_backend be;
    rcp_server *srv;
    int rc;
    memset(&be, 0, sizeof be);
    be.offers = fake_offers;
    be.partial = fake_partial;
    be.describe = fake_describe;
    be.handle[PROTO_M_EMBED] = fake_embed;
    be.handle[PROTO_M_RERANK] = fake_rerank;
    if (!(srv = proto_server_new(NULL, &be, NULL)))
        return 1;
    rc = rcp_server_run(srv, 0, 1);
    rcp_server_free(srv);
    return rc ? 1 : 0;
}
static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/rcp-dl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)system(cmd);
}

/* MARK: - Driving a server ------------------------------------------------ */

typedef struct srv {
    rcp_client  *c;
    rcp_request *init;          /* its initialize, answered */
} srv;

/* `rcp serve WORDS...` (words NULL-terminated) started and initialised;
** notify (NULL: none) sees its notifications. */
static void serve_n(srv *s, const char *const *words,
                    rcp_client_notify_fn notify)
{
    char *argv[16];
    rcp_client_opts o;
    char err[256];
    int n = 0;
    argv[n++] = (char *)bin();
    argv[n++] = "serve";
    while (*words)
        argv[n++] = (char *)*words++;
    argv[n] = NULL;
    memset(&o, 0, sizeof o);
    o.err = RCP_STDERR_DISCARD;
    o.on_notify = notify;
    s->c = rcp_client_spawn(argv, &o, err, sizeof err);
    ck_assert_msg(s->c != NULL, "%s", err);
    s->init = rcp_client_request(s->c, "initialize",
                                 "{\"protocolVersion\":1}", 0);
    ck_assert_ptr_nonnull(s->init);
    ck_assert_int_eq(rcp_client_wait(s->c, s->init, 60000), RCP_REQ_DONE);
    ck_assert_msg(rcp_request_result(s->init) != NULL, "initialize failed");
}

static void serve(srv *s, const char *const *words)
{
    serve_n(s, words, NULL);
}

static rcp_request *ask(srv *s, const char *method, const char *params)
{
    rcp_request *r = rcp_client_request(s->c, method, params, 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(rcp_client_wait(s->c, r, 60000), RCP_REQ_DONE);
    return r;
}

/* v serialised, without its member `drop` (NULL: all), into out. */
static const char *text_of(const rcp_json *v, const char *drop, char *out,
                           size_t n)
{
    rcp_buf b;
    rcp_jw w;
    size_t i;
    ck_assert_ptr_nonnull(v);
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    if (drop && v->type == RCP_JSON_OBJECT) {
        rcp_jw_obj(&w);
        for (i = 0; i < v->n; i++)
            if (strlen(drop) != v->kids[i].keylen
                || memcmp(drop, v->kids[i].key, v->kids[i].keylen)) {
                rcp_jw_keyn(&w, v->kids[i].key, v->kids[i].keylen);
                rcp_jw_value(&w, &v->kids[i]);
            }
        rcp_jw_obj_end(&w);
    } else {
        rcp_jw_value(&w, v);
    }
    ck_assert(!b.oom && b.len < n);
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    rcp_buf_free(&b);
    return out;
}

/* The result of method(params) on s, serialised without drop. */
static const char *answer(srv *s, const char *method, const char *params,
                          const char *drop, char *out, size_t n)
{
    rcp_request *r = ask(s, method, params);
    ck_assert_msg(rcp_request_result(r) != NULL, "%s failed", method);
    return text_of(rcp_request_result(r), drop, out, n);
}

static int error_code(rcp_request *r)
{
    int code = 0;
    ck_assert_msg(rcp_request_error(r, &code), "expected an error");
    return code;
}

/* error.data.member of r, as text ("" when absent). */
static const char *error_data(rcp_request *r, const char *member, char *out,
                              size_t n)
{
    const rcp_json *v = rcp_json_get(rcp_json_get(rcp_json_get(
        rcp_request_response(r), "error"), "data"), member);
    if (!v)
        return strcpy(out, "");
    return text_of(v, NULL, out, n);
}

static void close_srv(srv *s)
{
    rcp_client_close(s->c, 5000);
}

/* What initialize answered for capability key, serialised. */
static const char *first_cap(const char *const *words, const char *key,
                             char *out, size_t n)
{
    srv s;
    serve(&s, words);
    text_of(rcp_json_get(rcp_json_get(rcp_request_result(s.init),
                                      "capabilities"), key), NULL, out, n);
    close_srv(&s);
    return out;
}

/* "BIN serve ARGS" as one --embed-engine value. */
static const char *engine_cmd(char *out, size_t n, const char *args)
{
    snprintf(out, n, "%s serve%s%s", bin(), args ? " " : "",
             args ? args : "");
    return out;
}

/* An HTTP engine `rcp serve ARGS --http 127.0.0.1:0`: its pid, its URL
** in url. */
static pid_t http_engine(const char *a1, const char *a2, char *url,
                         size_t n)
{
    return test_http_serve(bin(), a1, a2, url, n);
}

static void stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* MARK: - embed ------------------------------------------------------------ */

static const char embed_json[] =
    "{\"inputs\":[\"Retrieval over many engines\",\"fused by rank\","
    "{\"type\":\"text\",\"text\":\"a text block\"}],\"kind\":\"query\"}";
static const char embed_b64[] =
    "{\"inputs\":[\"Retrieval over many engines\"],\"encoding\":"
    "\"f32-base64\"}";

/* The delegating server's embed answers and capability are the engine's,
** byte for byte, in both encodings. */
static void same_embed(srv *front, srv *eng, const char *const *eng_words,
                       const char *const *front_words)
{
    static char a[1 << 16], b[1 << 16];
    ck_assert_str_eq(answer(front, "embed", embed_json, NULL, a, sizeof a),
                     answer(eng, "embed", embed_json, NULL, b, sizeof b));
    ck_assert_str_eq(answer(front, "embed", embed_b64, NULL, a, sizeof a),
                     answer(eng, "embed", embed_b64, NULL, b, sizeof b));
    ck_assert_str_eq(first_cap(front_words, "embed", a, sizeof a),
                     first_cap(eng_words, "embed", b, sizeof b));
    ck_assert_ptr_nonnull(strstr(a, "\"identity\":\"rcp-hash-ngram-"));
    ck_assert_ptr_nonnull(strstr(a, "\"dimension\":48"));
}

START_TEST(embed_is_the_engines_answer_bit_for_bit_with_its_identity)
{
    char cmd[256];
    const char *ew[] = { "--dim", "48", NULL };
    const char *fw[] = { "--embed-engine", cmd, NULL };
    srv front, eng;
    engine_cmd(cmd, sizeof cmd, "--dim 48");
    serve(&eng, ew);
    serve(&front, fw);
    same_embed(&front, &eng, ew, fw);
    close_srv(&front);
    close_srv(&eng);
}
END_TEST

START_TEST(embed_over_http_is_the_engines_answer_bit_for_bit)
{
    char url[128];
    pid_t pid = http_engine("--dim", "48", url, sizeof url);
    const char *ew[] = { "--dim", "48", NULL };
    const char *fw[] = { "--embed-url", url, NULL };
    srv front, eng;
    serve(&eng, ew);
    serve(&front, fw);
    same_embed(&front, &eng, ew, fw);
    close_srv(&front);
    close_srv(&eng);
    stop(pid);
}
END_TEST

/* MARK: - The dense leg and the rerank stage ------------------------------- */

static const char *const retrieves[] = {
    "{\"query\":\"vector search\",\"k\":8,\"mode\":\"dense\","
    "\"includeVectors\":true}",
    "{\"query\":\"crash recovery of the log\",\"k\":8,\"mode\":\"hybrid\"}",
    "{\"query\":\"fusion of ranked lists\",\"k\":5,\"mode\":\"hybrid\","
    "\"mmr\":{\"lambda\":0.5}}",
    "{\"query\":\"vector search\",\"k\":5,\"mode\":\"hybrid\",\"rerank\":{}}",
    "{\"query\":\"store\",\"k\":4,\"mode\":\"hybrid\","
    "\"rerank\":{\"method\":\"colbert\",\"topN\":20}}",
};

/* retrieve through a delegated embedder (documents embedded at --corpus
** load and at index/add, queries at retrieve) and reranker answers as the
** same server with the built-in ones does, hit for hit, score for score
** (usage, which holds the latency, aside); a request that names no mode is
** hybrid there (the operator's model is in use: rcp_model_default_mode),
** sparse on the built-in embedder's server. */
START_TEST(retrieve_through_the_engines_equals_the_local_equivalent)
{
    static char a[1 << 18], b[1 << 18];
    char ecmd[256], rcmd[256];
    const char *lw[] = { "--corpus", corpus, NULL };
    const char *fw[] = { "--corpus", corpus, "--embed-engine", ecmd,
                         "--rerank-engine", rcmd, NULL };
    static const char add[] = "{\"documents\":[{\"id\":\"new\",\"text\":"
        "\"a vector search over fresh documents\"}]}";
    srv front, local;
    size_t i;
    engine_cmd(ecmd, sizeof ecmd, NULL);
    engine_cmd(rcmd, sizeof rcmd, "--corpus tests/sample-corpus.jsonl");
    serve(&local, lw);
    serve(&front, fw);
    for (i = 0; i < sizeof retrieves / sizeof *retrieves; i++)
        ck_assert_str_eq(answer(&front, "retrieve", retrieves[i], "usage",
                                a, sizeof a),
                         answer(&local, "retrieve", retrieves[i], "usage",
                                b, sizeof b));
    (void)answer(&front, "index/add", add, NULL, a, sizeof a);
    (void)answer(&local, "index/add", add, NULL, b, sizeof b);
    ck_assert_str_eq(answer(&front, "retrieve", retrieves[0], "usage", a,
                            sizeof a),
                     answer(&local, "retrieve", retrieves[0], "usage", b,
                            sizeof b));
    ck_assert_ptr_nonnull(strstr(a, "\"id\":\"new\""));
    ck_assert_ptr_nonnull(strstr(answer(&front, "retrieve", "{\"query\":"
                                        "\"crash\",\"k\":2}", "usage", a,
                                        sizeof a), "\"fused\":"));
    ck_assert_ptr_null(strstr(answer(&local, "retrieve", "{\"query\":"
                                     "\"crash\",\"k\":2}", "usage", b,
                                     sizeof b), "\"fused\":"));
    close_srv(&front);
    close_srv(&local);
}
END_TEST

START_TEST(rerank_is_the_engines_rerank_and_capability)
{
    static char a[1 << 16], b[1 << 16];
    char cmd[256];
    const char *ew[] = { "--corpus", corpus, NULL };
    const char *fw[] = { "--rerank-engine", cmd, NULL };
    static const char *const asks[] = {
        "{\"query\":\"vector search\",\"passages\":[\"a vector index\","
        "\"search the vectors\",\"nothing here\"],\"topN\":2}",
        "{\"query\":\"vector search\",\"passages\":[\"a vector index\","
        "{\"type\":\"text\",\"text\":\"search\"}],\"method\":\"colbert\"}",
        "{\"query\":\"vector\",\"documents\":[{\"text\":\"vector\"},"
        "{\"text\":\"other\"}]}",
    };
    srv front, eng;
    size_t i;
    engine_cmd(cmd, sizeof cmd, "--corpus tests/sample-corpus.jsonl");
    serve(&eng, ew);
    serve(&front, fw);
    for (i = 0; i < sizeof asks / sizeof *asks; i++)
        ck_assert_str_eq(answer(&front, "rerank", asks[i], "usage", a,
                                sizeof a),
                         answer(&eng, "rerank", asks[i], "usage", b,
                                sizeof b));
    ck_assert_str_eq(first_cap(fw, "rerank", a, sizeof a),
                     first_cap(ew, "rerank", b, sizeof b));
    close_srv(&front);
    close_srv(&eng);
}
END_TEST

/* MARK: - Errors, deadlines, cancellation, failure ------------------------- */

START_TEST(an_engine_error_passes_through_with_its_code_and_field)
{
    char cmd[256], t[512];
    const char *fw[] = { "--embed-engine", cmd, "--rerank-engine", cmd,
                         NULL };
    srv front;
    rcp_request *r;
    engine_cmd(cmd, sizeof cmd, NULL);
    serve(&front, fw);
    r = ask(&front, "embed", "{\"inputs\":7}");
    ck_assert_int_eq(error_code(r), RCP_INVALID_PARAMS);
    ck_assert_str_eq(error_data(r, "field", t, sizeof t), "\"inputs\"");
    ck_assert_ptr_nonnull(strstr(error_data(r, "detail", t, sizeof t),
                                 "embed and rerank engine: inputs must be"));
    r = ask(&front, "rerank", "{\"query\":\"q\",\"passages\":[\"a\"],"
            "\"method\":\"llm\"}");
    ck_assert_int_eq(error_code(r), RCP_OPTION_UNSUPPORTED);
    ck_assert_str_eq(error_data(r, "option", t, sizeof t), "\"method\"");
    /* and the server goes on serving */
    ck_assert_ptr_nonnull(rcp_request_result(ask(&front, "embed",
                          "{\"inputs\":[\"x\"]}")));
    close_srv(&front);
}
END_TEST

/* An engine behind a shell that logs every line it is sent into log and
** holds each line after the first (initialize) for hold seconds. */
static const char *logged(char *out, size_t n, const char *log, int hold,
                          const char *engine)
{
    snprintf(out, n, "[\"sh\",\"-c\",\"tee %s | { IFS= read -r l; "
             "printf '%%s\\\\n' \\\"$l\\\"; while IFS= read -r l; do "
             "sleep %d; printf '%%s\\\\n' \\\"$l\\\"; done; } | "
             "exec %s 2>/dev/null\"]", log, hold, engine);
    return out;
}

static const char *logged_engine(char *out, size_t n, const char *log,
                                 int hold)
{
    char e[256];
    snprintf(e, sizeof e, "%s serve", bin());
    return logged(out, n, log, hold, e);
}

/* What the engine was sent so far ("" when nothing yet). */
static char *read_log(const char *log, char *b, size_t cap)
{
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(b, 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    b[n] = '\0';
    return b;
}

static int log_has(const char *log, const char *s)
{
    char b[1 << 15];
    return strstr(read_log(log, b, sizeof b), s) != NULL;
}

START_TEST(the_forwarded_deadline_is_strictly_smaller)
{
    char cmd[1024], log[128], b[1 << 15], *p;
    const char *fw[] = { "--embed-engine", cmd, NULL };
    srv front;
    double fwd;
    snprintf(log, sizeof log, "%s/engine.log", dir);
    logged_engine(cmd, sizeof cmd, log, 0);
    serve(&front, fw);
    ck_assert_ptr_nonnull(rcp_request_result(ask(&front, "embed",
        "{\"inputs\":[\"x\"],\"_meta\":{\"deadlineMs\":4000,"
        "\"traceId\":\"t-1\"}}")));
    p = strstr(read_log(log, b, sizeof b), "\"deadlineMs\":");
    ck_assert_ptr_nonnull(p);
    fwd = atof(p + 13);
    ck_assert_msg(fwd > 0 && fwd < 4000, "forwarded %g", fwd);
    ck_assert_ptr_nonnull(strstr(b, "\"traceId\":\"t-1\"")); /* the rest */
    close_srv(&front);
}
END_TEST

START_TEST(a_slow_engine_past_the_deadline_is_cancelled_and_timed_out)
{
    char cmd[1024], log[128];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    srv front;
    int i;
    snprintf(log, sizeof log, "%s/engine.log", dir);
    logged_engine(cmd, sizeof cmd, log, 2);
    serve(&front, fw);
    ck_assert_int_eq(error_code(ask(&front, "embed", "{\"inputs\":[\"x\"],"
                     "\"_meta\":{\"deadlineMs\":300}}")), RCP_TIMEOUT);
    for (i = 0; i < 50 && !log_has(log, "notifications/cancel"); i++)
        (void)poll(NULL, 0, 100);
    ck_assert(log_has(log, "notifications/cancel"));
    close_srv(&front);
}
END_TEST

/* A cancel of an index/add whose document is being embedded reaches the
** engine, and nothing is stored. */
START_TEST(a_cancel_is_forwarded_to_the_engine)
{
    char cmd[1024], log[128], params[64];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    const char *id;
    srv front;
    rcp_request *r;
    size_t n;
    int i;
    snprintf(log, sizeof log, "%s/engine.log", dir);
    logged_engine(cmd, sizeof cmd, log, 1);
    serve(&front, fw);
    r = rcp_client_request(front.c, "index/add", "{\"documents\":[{\"id\":"
                           "\"d\",\"text\":\"fusion\"}]}", 0);
    ck_assert_ptr_nonnull(r);
    (void)rcp_client_wait(front.c, r, 300);    /* it is being embedded */
    ck_assert_int_eq(rcp_request_state_get(r), RCP_REQ_PENDING);
    id = rcp_request_id(r, &n);
    snprintf(params, sizeof params, "{\"id\":%.*s}", (int)n, id);
    ck_assert_int_eq(rcp_client_notify(front.c, "notifications/cancel",
                                       params), 0);
    ck_assert_int_eq(rcp_client_wait(front.c, r, 5000), RCP_REQ_DONE);
    ck_assert_int_eq(error_code(r), RCP_CANCELLED);
    for (i = 0; i < 50 && !log_has(log, "notifications/cancel"); i++)
        (void)poll(NULL, 0, 100);
    ck_assert(log_has(log, "\"method\":\"embed\""));
    ck_assert(log_has(log, "notifications/cancel"));
    r = ask(&front, "retrieve", "{\"query\":\"fusion\",\"k\":3,"
            "\"mode\":\"sparse\"}");
    ck_assert_uint_eq(rcp_json_get(rcp_request_result(r), "hits")->n, 0);
    close_srv(&front);
}
END_TEST

static int log_count(const char *log, const char *s)
{
    char b[1 << 15], *p;
    int k = 0;
    for (p = read_log(log, b, sizeof b); (p = strstr(p, s)) != NULL; p++)
        k++;
    return k;
}

/* index/add embeds its documents in one request per embed.batchLimit,
** not one per document, and they retrieve as a local server's do. */
START_TEST(index_add_embeds_its_documents_in_one_batch)
{
    static char a[1 << 16], b[1 << 16];
    char cmd[1024], log[128];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    const char *lw[] = { NULL };
    static const char add[] = "{\"documents\":[{\"id\":\"a\",\"text\":"
        "\"ranked list fusion\"},{\"id\":\"b\",\"text\":\"crash recovery\"},"
        "{\"id\":\"c\",\"text\":\"vector search\"},{\"id\":\"d\","
        "\"text\":\"vector search\"}]}";
    static const char q[] = "{\"query\":\"vector fusion\",\"k\":4,"
        "\"mode\":\"dense\"}";
    srv front, local;
    snprintf(log, sizeof log, "%s/engine.log", dir);
    logged_engine(cmd, sizeof cmd, log, 0);
    serve(&front, fw);
    serve(&local, lw);
    (void)answer(&front, "index/add", add, NULL, a, sizeof a);
    (void)answer(&local, "index/add", add, NULL, b, sizeof b);
    ck_assert_int_eq(log_count(log, "\"method\":\"embed\""), 1);
    ck_assert_int_eq(log_count(log, "\"inputs\":[\"ranked list fusion\","
                               "\"crash recovery\",\"vector search\","
                               "\"vector search\"]"), 1);
    ck_assert_str_eq(answer(&front, "retrieve", q, "usage", a, sizeof a),
                     answer(&local, "retrieve", q, "usage", b, sizeof b));
    close_srv(&front);
    close_srv(&local);
}
END_TEST

/* MARK: - What only another implementation shows (the fake engine) ------ */

static const char *fake_cmd(char *out, size_t n)
{
    snprintf(out, n, "%s fake-engine", self);
    return out;
}

/* batchLimit 2: five documents are three embed requests; the vectors
** are stored normalised ([len,1,0] / |.|), so dense scores are cosines;
** the identity is the fake's. */
START_TEST(a_batch_limit_splits_index_add_and_vectors_are_normalised)
{
    char cmd[1024], log[128], e[256], t[512];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    static const char add[] = "{\"documents\":[{\"id\":\"a\",\"text\":"
        "\"x\"},{\"id\":\"b\",\"text\":\"xx\"},{\"id\":\"c\",\"text\":"
        "\"xxx\"},{\"id\":\"d\",\"text\":\"xxxx\"},{\"id\":\"e\",\"text\":"
        "\"xxxxx\"}]}";
    srv front;
    rcp_request *r;
    const rcp_json *h, *v;
    snprintf(log, sizeof log, "%s/engine.log", dir);
    logged(cmd, sizeof cmd, log, 0, fake_cmd(e, sizeof e));
    serve(&front, fw);
    ck_assert_ptr_nonnull(rcp_request_result(ask(&front, "index/add", add)));
    ck_assert_int_eq(log_count(log, "\"method\":\"embed\""), 3);
    r = ask(&front, "retrieve", "{\"query\":\"x\",\"k\":5,\"mode\":"
            "\"dense\",\"includeVectors\":true}");
    h = rcp_json_get(rcp_request_result(r), "hits");
    ck_assert_uint_eq(h->n, 5);
    /* the query [1,1,0]/sqrt2 is nearest the document [1,1,0]/sqrt2 */
    ck_assert(rcp_json_streq(rcp_json_get(&h->kids[0], "id"), "a"));
    ck_assert_double_eq_tol(rcp_json_num(rcp_json_get(&h->kids[0],
                                                      "score")), 1.0, 1e-6);
    v = rcp_json_get(&h->kids[0], "vector");
    ck_assert_uint_eq(v->n, 3);
    ck_assert_double_eq_tol(rcp_json_num(&v->kids[0]), 0.70710678, 1e-6);
    r = ask(&front, "embed", "{\"inputs\":[\"x\"]}");  /* as it came */
    ck_assert_str_eq(text_of(rcp_request_result(r), NULL, t, sizeof t),
                     "{\"vectors\":[[1,1,0]]}");
    r = ask(&front, "index/add", "{\"documents\":[{\"id\":\"f\","
            "\"text\":\"wrongdim\"}]}");
    ck_assert_int_eq(error_code(r), RCP_BACKEND_UNAVAILABLE);
    ck_assert_msg(strstr(error_data(r, "detail", t, sizeof t),
                         "not 1 vector of dimension 3"), "said %s", t);
    close_srv(&front);
}
END_TEST

/* A --corpus load embeds its documents a batchLimit at a time too. */
START_TEST(a_corpus_load_embeds_in_batches_of_the_batch_limit)
{
    char cmd[1024], log[128], e[256], path[128];
    const char *fw[] = { "--corpus", path, "--embed-engine", cmd, NULL };
    srv front;
    rcp_request *r;
    FILE *f;
    snprintf(log, sizeof log, "%s/engine.log", dir);
    snprintf(path, sizeof path, "%s/c.jsonl", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\"xx\"}\n"
          "\n{\"id\":\"c\",\"text\":\"xxx\"}\n{\"id\":\"d\",\"text\":"
          "\"xxxx\"}\n{\"id\":\"e\",\"text\":\"xxxxx\"}\n", f);
    fclose(f);
    logged(cmd, sizeof cmd, log, 0, fake_cmd(e, sizeof e));
    serve(&front, fw);
    ck_assert_int_eq(log_count(log, "\"method\":\"embed\""), 3);
    ck_assert(log_has(log, "\"inputs\":[\"xxx\",\"xxxx\"]"));
    r = ask(&front, "retrieve", "{\"query\":\"x\",\"k\":5,\"mode\":"
            "\"dense\"}");
    ck_assert_uint_eq(rcp_json_get(rcp_request_result(r), "hits")->n, 5);
    ck_assert_int_eq(log_count(log, "\"method\":\"embed\""), 4);
    close_srv(&front);
}
END_TEST

/* The engine offers llm and colbert: retrieve's stage uses llm when no
** method is named, colbert when asked, and cross-encoder is -32005, or
** with strict false a note and llm; maxCandidates 2 splits the stage. */
START_TEST(the_rerank_stage_uses_what_the_engine_offers)
{
    char cmd[256], t[1024];
    const char *fw[] = { "--corpus", corpus, "--rerank-engine", cmd, NULL };
    srv front;
    rcp_request *r;
    const rcp_json *h;
    size_t i;
    fake_cmd(cmd, sizeof cmd);
    serve(&front, fw);
    ck_assert_ptr_nonnull(strstr(first_cap(fw, "retrieve", t, sizeof t),
                                 "\"rerankBuiltin\":true"));
    r = ask(&front, "retrieve", "{\"query\":\"store\",\"k\":5,"
            "\"rerank\":{\"topN\":5}}");
    h = rcp_json_get(rcp_request_result(r), "hits");
    ck_assert_uint_eq(h->n, 5);
    for (i = 0; i < h->n; i++) {    /* llm: each passage's length */
        const rcp_json *st = rcp_json_get(rcp_json_get(&h->kids[i],
                                                       "scores"), "rerank");
        ck_assert_ptr_nonnull(st);
        ck_assert_double_eq(rcp_json_num(st), (double)rcp_json_get(
            &h->kids[i], "text")->n);
    }
    r = ask(&front, "retrieve", "{\"query\":\"store\",\"k\":3,"
            "\"rerank\":{\"method\":\"colbert\"}}");
    h = rcp_json_get(rcp_request_result(r), "hits");
    ck_assert(rcp_json_num(rcp_json_get(rcp_json_get(&h->kids[0], "scores"),
                                        "rerank")) < 0);
    r = ask(&front, "retrieve", "{\"query\":\"store\",\"k\":3,"
            "\"rerank\":{\"method\":\"cross-encoder\"}}");
    ck_assert_int_eq(error_code(r), RCP_OPTION_UNSUPPORTED);
    ck_assert_str_eq(error_data(r, "option", t, sizeof t),
                     "\"rerank.method\"");
    r = ask(&front, "retrieve", "{\"query\":\"store\",\"k\":3,"
            "\"strict\":false,\"rerank\":{\"method\":\"cross-encoder\"}}");
    h = rcp_json_get(rcp_request_result(r), "hits");
    ck_assert(rcp_json_num(rcp_json_get(rcp_json_get(&h->kids[0], "scores"),
                                        "rerank")) > 0);
    ck_assert_ptr_nonnull(strstr(text_of(rcp_json_get(rcp_request_result(r),
                                 "usage"), NULL, t, sizeof t),
                                 "rerank by the engine's llm"));
    /* the rerank method itself is the engine's, model and all */
    r = ask(&front, "rerank", "{\"query\":\"q\",\"passages\":[\"ab\","
            "\"abc\"],\"model\":\"m1\"}");
    ck_assert_str_eq(text_of(rcp_request_result(r), NULL, t, sizeof t),
                     "{\"scores\":[2,3]}");
    close_srv(&front);
}
END_TEST

/* §9: the engine's progress for a forwarded request reaches our client
** under its own token. */
static size_t progress_seen;
static void on_progress(void *ud, const rcp_json *msg)
{
    (void)ud;
    if (rcp_json_streq(rcp_json_get(rcp_json_get(msg, "params"),
                                    "progressToken"), "p-1"))
        progress_seen++;
}

START_TEST(the_engines_progress_is_relayed)
{
    char cmd[256];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    srv front;
    fake_cmd(cmd, sizeof cmd);
    serve_n(&front, fw, on_progress);
    progress_seen = 0;
    ck_assert_ptr_nonnull(rcp_request_result(ask(&front, "embed",
        "{\"inputs\":[\"x\"],\"_meta\":{\"progressToken\":\"p-1\"}}")));
    ck_assert_uint_ge(progress_seen, 1);
    close_srv(&front);
}
END_TEST

/* An engine whose first life reads initialize and (mid 1) the next
** request, then exits without answering it; its second life serves. */
static const char *flaky(char *out, size_t n, const char *flag,
                         const char *second, int mid)
{
    snprintf(out, n, "[\"sh\",\"-c\",\"if [ -e %s ]; then exec %s serve "
             "%s 2>/dev/null; fi; touch %s; { IFS= read -r l; printf "
             "'%%s\\\\n' \\\"$l\\\"; %s } | %s serve 2>/dev/null; "
             "exit 1\"]", flag, bin(), second, flag,
             mid ? "IFS= read -r l;" : "", bin());
    return out;
}

static const char *flaky_engine(char *out, size_t n, const char *flag,
                                const char *second)
{
    return flaky(out, n, flag, second, 1);
}

/* One that exits while idle is started again at once: the next request
** is answered, not refused. */
START_TEST(an_engine_that_exited_while_idle_is_restarted_at_once)
{
    char cmd[1024], flag[128];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    srv front;
    snprintf(flag, sizeof flag, "%s/flag", dir);
    flaky(cmd, sizeof cmd, flag, "", 0);
    serve(&front, fw);
    (void)poll(NULL, 0, 200);           /* its first life is over */
    ck_assert_ptr_nonnull(rcp_request_result(ask(&front, "embed",
                          "{\"inputs\":[\"x\"]}")));
    close_srv(&front);
}
END_TEST

START_TEST(an_engine_dying_mid_request_is_unavailable_then_recovers)
{
    char cmd[1024], flag[128], t[512];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    static const char add[] = "{\"documents\":[{\"id\":\"d1\",\"text\":"
        "\"fusion of ranked lists\"}]}";
    srv front;
    rcp_request *r;
    snprintf(flag, sizeof flag, "%s/flag", dir);
    flaky_engine(cmd, sizeof cmd, flag, "");
    serve(&front, fw);
    r = ask(&front, "index/add", add);          /* it dies under this */
    ck_assert_int_eq(error_code(r), RCP_BACKEND_UNAVAILABLE);
    ck_assert_str_eq(error_data(r, "retryable", t, sizeof t), "true");
    ck_assert_msg(strstr(error_data(r, "detail", t, sizeof t),
                         "closed before it answered embed"), "said %s", t);
    /* nothing was stored without its vector */
    r = ask(&front, "retrieve", "{\"query\":\"fusion\",\"k\":3,"
            "\"mode\":\"sparse\"}");
    ck_assert_uint_eq(rcp_json_get(rcp_request_result(r), "hits")->n, 0);
    (void)poll(NULL, 0, 300);                   /* past the backoff */
    r = ask(&front, "index/add", add);
    ck_assert_ptr_nonnull(rcp_request_result(r));
    r = ask(&front, "retrieve", "{\"query\":\"fusion\",\"k\":3,"
            "\"mode\":\"dense\"}");
    ck_assert_uint_eq(rcp_json_get(rcp_request_result(r), "hits")->n, 1);
    close_srv(&front);
}
END_TEST

START_TEST(an_engine_back_with_another_identity_is_not_used)
{
    char cmd[1024], flag[128], t[512];
    const char *fw[] = { "--embed-engine", cmd, NULL };
    srv front;
    rcp_request *r;
    snprintf(flag, sizeof flag, "%s/flag", dir);
    flaky_engine(cmd, sizeof cmd, flag, "--dim 32");
    serve(&front, fw);
    ck_assert_int_eq(error_code(ask(&front, "embed", "{\"inputs\":"
                                    "[\"x\"]}")), RCP_BACKEND_UNAVAILABLE);
    (void)poll(NULL, 0, 300);
    r = ask(&front, "embed", "{\"inputs\":[\"x\"]}");
    ck_assert_int_eq(error_code(r), RCP_BACKEND_UNAVAILABLE);
    ck_assert_msg(strstr(error_data(r, "detail", t, sizeof t),
                         "model swap"), "said %s", t);
    ck_assert_str_eq(error_data(r, "retryable", t, sizeof t), "false");
    close_srv(&front);
}
END_TEST

/* An engine that answers initialize once and is never to be had again:
** index/add's own checks come first (-32003 read-only, -32602 a bad
** document), then the engine's absence (-32010), and nothing is stored. */
START_TEST(an_engine_that_is_gone_fails_only_what_needs_it)
{
    char cmd[1024], flag[128], t[512];
    const char *ro[] = { "--read-only", "--embed-engine", cmd, NULL };
    const char *rw[] = { "--embed-engine", cmd, NULL };
    static const char add2[] = "{\"documents\":[{\"id\":\"a\",\"text\":"
        "\"one\"},{\"id\":\"b\",\"text\":\"two\"}]}";
    srv front;
    rcp_request *r;
    snprintf(flag, sizeof flag, "%s/flag", dir);
    snprintf(cmd, sizeof cmd, "[\"sh\",\"-c\",\"[ -e %s ] && exit 1; touch "
             "%s; { IFS= read -r l; printf '%%s\\\\n' \\\"$l\\\"; } | %s "
             "serve 2>/dev/null\"]", flag, flag, bin());
    serve(&front, ro);
    ck_assert_int_eq(error_code(ask(&front, "index/add", add2)),
                     RCP_CAPABILITY_MISSING);
    close_srv(&front);
    remove(flag);
    serve(&front, rw);
    (void)poll(NULL, 0, 200);
    ck_assert_int_eq(error_code(ask(&front, "index/add", "{\"documents\":"
                     "[{\"id\":\"a\",\"text\":\"one\"},{\"text\":5}]}")),
                     RCP_INVALID_PARAMS);
    r = ask(&front, "index/add", add2);
    ck_assert_int_eq(error_code(r), RCP_BACKEND_UNAVAILABLE);
    ck_assert_msg(strstr(error_data(r, "detail", t, sizeof t),
                         "embed engine is unavailable"), "said %s", t);
    r = ask(&front, "retrieve", "{\"query\":\"one\",\"k\":3,"
            "\"mode\":\"sparse\"}");
    ck_assert_uint_eq(rcp_json_get(rcp_request_result(r), "hits")->n, 0);
    ck_assert_ptr_nonnull(rcp_request_result(ask(&front, "embed/sparse",
                          "{\"texts\":[\"one\"]}")));  /* the rest serves */
    close_srv(&front);
}
END_TEST

/* MARK: - The store and the command line ----------------------------------- */

/* §15.7: --data records the engine's identity like any other; opening it
** with the built-in embedder is refused, naming both. */
START_TEST(the_store_records_the_engines_identity)
{
    char cmd[256], data[128], line[512];
    const char *fw[] = { "--data", data, "--embed-engine", cmd, NULL };
    srv front;
    FILE *p;
    int found = 0;
    snprintf(data, sizeof data, "%s/store", dir);
    engine_cmd(cmd, sizeof cmd, "--dim 40");
    serve(&front, fw);
    ck_assert_ptr_nonnull(rcp_request_result(ask(&front, "index/add",
        "{\"documents\":[{\"id\":\"a\",\"text\":\"some text\"}]}")));
    close_srv(&front);
    snprintf(line, sizeof line, "%s stats --data %s", bin(), data);
    p = popen(line, "r");
    ck_assert_ptr_nonnull(p);
    while (fgets(line, sizeof line, p))
        found |= strstr(line, "embedder: rcp-hash-ngram-v4-40") != NULL;
    pclose(p);
    ck_assert(found);
    snprintf(line, sizeof line, "%s serve --data %s </dev/null 2>&1",
             bin(), data);
    p = popen(line, "r");
    ck_assert_ptr_nonnull(p);
    found = 0;
    while (fgets(line, sizeof line, p))
        found |= strstr(line, "rcp-hash-ngram-v4-40") != NULL;
    ck_assert_int_ne(pclose(p), 0);
    ck_assert(found);
}
END_TEST

/* What `rcp serve ARGS </dev/null` printed on stderr, and its status. */
static int serve_says(const char *args, char *out, size_t n)
{
    char cmd[1024];
    FILE *p;
    size_t got;
    snprintf(cmd, sizeof cmd, "%s serve %s </dev/null 2>&1", bin(), args);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    got = fread(out, 1, n - 1, p);
    out[got] = '\0';
    return pclose(p);
}

START_TEST(a_bad_engine_flag_is_a_clear_error)
{
    static const struct { const char *args, *want; } cases[] = {
        { "--embed-engine \"'rcp serve\"", "an unclosed '" },
        { "--embed-engine '[1]'", "array of 1..64 strings" },
        { "--embed-engine x --embed-url http://127.0.0.1:1/", "give one" },
        { "--embed-engine x --dim 16", "no --dim or --vectors" },
        { "--dim 384 --embed-engine x", "no --dim or --vectors" },
        { "--embed-engine x --vectors v.txt", "no --dim or --vectors" },
        { "--embed-engine x --registry r.json", "no --embed-engine" },
        { "--embed-url http://127.0.0.1:1/rcp", "cannot connect to" },
        { "--embed-engine /nonexistent/engine", "cannot start" },
        { "--embed-engine false", "did not answer initialize" },
    };
    char out[2048];
    size_t i;
    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        ck_assert_int_ne(serve_says(cases[i].args, out, sizeof out), 0);
        ck_assert_msg(strstr(out, cases[i].want), "%s: said %s",
                      cases[i].args, out);
    }
}
END_TEST

START_TEST(an_engine_without_the_capability_is_refused)
{
    char args[512], out[2048], reg[128];
    FILE *f;
    snprintf(reg, sizeof reg, "%s/r.json", dir);
    f = fopen(reg, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"engines\":[{\"id\":\"a\",\"transport\":\"stdio\","
            "\"command\":[\"%s\",\"serve\"]}]}\n", bin());
    fclose(f);
    /* an aggregator serves retrieve, not embed */
    snprintf(args, sizeof args, "--embed-engine '%s serve --registry %s'",
             bin(), reg);
    ck_assert_int_ne(serve_says(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "does not advertise embed"), "said %s", out);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("delegate");
    TCase *emb = tcase_create("embed"), *ret = tcase_create("retrieve"),
          *fail = tcase_create("failure"), *cli = tcase_create("cli");
    TCase *all[] = { emb, ret, fail, cli };
    size_t i;
    tcase_add_test(emb,
        embed_is_the_engines_answer_bit_for_bit_with_its_identity);
    tcase_add_test(emb, embed_over_http_is_the_engines_answer_bit_for_bit);
    tcase_add_test(ret,
        retrieve_through_the_engines_equals_the_local_equivalent);
    tcase_add_test(ret, rerank_is_the_engines_rerank_and_capability);
    tcase_add_test(ret, index_add_embeds_its_documents_in_one_batch);
    tcase_add_test(ret,
        a_batch_limit_splits_index_add_and_vectors_are_normalised);
    tcase_add_test(ret, the_rerank_stage_uses_what_the_engine_offers);
    tcase_add_test(ret, a_corpus_load_embeds_in_batches_of_the_batch_limit);
    tcase_add_test(fail, the_engines_progress_is_relayed);
    tcase_add_test(fail,
        an_engine_error_passes_through_with_its_code_and_field);
    tcase_add_test(fail, the_forwarded_deadline_is_strictly_smaller);
    tcase_add_test(fail,
        a_slow_engine_past_the_deadline_is_cancelled_and_timed_out);
    tcase_add_test(fail, a_cancel_is_forwarded_to_the_engine);
    tcase_add_test(fail,
        an_engine_dying_mid_request_is_unavailable_then_recovers);
    tcase_add_test(fail, an_engine_back_with_another_identity_is_not_used);
    tcase_add_test(fail,
        an_engine_that_exited_while_idle_is_restarted_at_once);
    tcase_add_test(fail, an_engine_that_is_gone_fails_only_what_needs_it);
    tcase_add_test(cli, the_store_records_the_engines_identity);
    tcase_add_test(cli, a_bad_engine_flag_is_a_clear_error);
    tcase_add_test(cli, an_engine_without_the_capability_is_refused);
    for (i = 0; i < sizeof all / sizeof *all; i++) {
        tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_set_timeout(all[i], 120);
        suite_add_tcase(s, all[i]);
    }
    return s;
}

int main(int argc, char **argv)
{
    SRunner *sr;
    int failed;
    /* under qemu-user (make cross-check) argv[0] is this program's
    ** foreign binary, which exec cannot start; RCP_TEST_SELF names a
    ** wrapper that can (as in test_main) */
    self = getenv("RCP_TEST_SELF") ? getenv("RCP_TEST_SELF") : argv[0];
    if (argc > 1 && !strcmp(argv[1], "fake-engine"))
        return fake_engine();
    sr = srunner_create(make_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
