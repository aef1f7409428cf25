/*
** delegate.c -- issue 18: real models plug in without a dependency.
** `rcp serve --embed-engine CMD` / `--rerank-engine CMD` (or --embed-url
** URL / --rerank-url URL) hand embed and rerank to another RCP server --
** any implementation with a neural model -- through client.c's client
** (a spawned child over stdio, or an endpoint over HTTP, §5.2), the way
** federation.c reaches its engines.
**
** NOTES ON THE DESIGN
**
** A delegate is one or two engines (one when both flags name the same)
** and serves two seams:
**   the model's hooks (rcp_model_opts.ext_*)  every dense vector -- each
**        document's at index/add, --corpus and replay, each query's at
**        retrieve -- and every reranker score (the rerank stage of
**        retrieve) come from the engine, so the dense leg, MMR, hit
**        vectors and the store's recorded identity are the engine's;
**   a backend around the built-in one (proto_backend)  embed and rerank
**        are forwarded as they came (params verbatim, _meta rewritten)
**        and answered with the engine's result as it sent it; every other
**        method is the built-in's, run with the call bound so that the
**        hooks forward its deadline and its cancel.
**
** Invariants:
**   1. What is advertised is fixed at start (§13.2): the engine's own
**      embed / rerank capability values, read from its initialize, and
**      the model's dimension and identity (§15.7) are its embed.dimension
**      and embed.identity.  A reconnect that finds other values is not
**      used (-32010, not retryable): a silent model swap would corrupt
**      the stored vectors.
**   2. A forwarded request's _meta.deadlineMs is strictly smaller than
**      what is left of ours (§16.2's rule: a reserve of a tenth, 2..250
**      ms, for transit); an engine still silent when the reserve begins
**      is cancelled and the request fails -32014.
**   3. An upstream cancel (§7.14) is seen within DL_SLICE_MS and sent on
**      as notifications/cancel for the downstream id.
**   4. An engine that is down fails what needs it with -32010, retryable
**      (§12.2), and is started (connected) again when its backoff allows
**      (100 ms doubling to 30 s, as federation.c's engines); a document
**      whose vector cannot be made is not stored (the add fails whole).
**   5. The engine's errors pass through wrapped, as federation.c's
**      surface does: its code (an unknown one becomes -32603), data.field,
**      data.option and data.retryable kept, its detail prefixed by which
**      engine said it.
*/
#include "rcp.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DL_START_MS     30000   /* initialize, and a hook with no call */
#define DL_BACKOFF_MIN  100
#define DL_BACKOFF_MAX  30000
#define DL_RESERVE_MIN  2.0     /* invariant 2, ms */
#define DL_RESERVE_MAX  250.0
#define DL_SLICE_MS     20      /* invariant 3 */
#define DL_MAX_ARGS     64

typedef struct dl_engine {
    const char *spec;           /* the flag's value */
    char        name[80];       /* its command's first word, or the url,
                                   for messages */
    const char *role;           /* "embed engine", "rerank engine" */
    char      **argv;           /* stdio: the command; NULL: url */
    const char *url;
    rcp_client *cl;             /* NULL: down */
    double      retry_at;
    int         backoff;
    char        why[200];       /* the last failure */
    rcp_arena   arena;          /* its first initialize's capabilities */
    const rcp_json *caps;
    char       *capstext;
} dl_engine;

struct delegate {
    dl_engine   eng[2];
    dl_engine  *embed, *rerank; /* NULL: not delegated */
    /* invariant 1: fixed at open */
    char       *embed_cap, *rerank_cap;   /* the values, serialised */
    char       *identity;       /* embed.identity, NUL-terminated */
    const rcp_json *ecap, *rcap;
    unsigned    dim;
    int         b64;            /* the engine offers f32-base64 */
    int64_t     max_passages;   /* rerank.maxCandidates; 0: not said */
    int         rr_cross, rr_colbert;     /* its methods the stage names */
    int         rr_any;         /* it names a first method at all */
    /* the wrapped built-in backend */
    const proto_backend *inner;
    void       *inner_ud;
    proto_backend be;
    rcp_call   *cur;            /* the call running, for the hooks */
    int         rr_first;       /* retrieve: use the engine's first method */
    int         relay;          /* forwarding embed/rerank: relay §9 progress
                                   (a hook's would jump its call's) */
    /* the first failure a hook met while cur ran */
    int         fcode, fretry;
    char        ffield[128], foption[64], fdetail[256];
    struct dl_pre {             /* documents' vectors made in batches */
        char        *text;      /* their texts, one after another */
        size_t      *off, *lens, n, next;
        float       *vecs;      /* n x dim */
    } pre;
    unsigned long tokens;       /* downstream progress tokens */
    char        token[32];      /* the current one, "" none */
};

/* MARK: - Small helpers --------------------------------------------------- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *d = rcp_malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

/* A hook's or a forward's failure: kept for the bound call (invariant
** 5) and returned. */
static int dl_fail(delegate *d, int code, int retry, const char *field,
                   const char *option, const char *fmt, ...)
{
    va_list ap;
    if (!d->fcode) {
        d->fcode = code;
        d->fretry = retry;
        snprintf(d->ffield, sizeof d->ffield, "%s", field ? field : "");
        snprintf(d->foption, sizeof d->foption, "%s", option ? option : "");
        va_start(ap, fmt);
        vsnprintf(d->fdetail, sizeof d->fdetail, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* The kept failure as c's error. */
static int dl_surface(delegate *d, rcp_call *c)
{
    int code = d->fcode, rc;
    d->fcode = 0;
    rc = call_fail(c, code, d->ffield[0] ? d->ffield : NULL,
                   d->foption[0] ? d->foption : NULL, "%s", d->fdetail);
    return d->fretry >= 0 ? call_retryable(c, rc, d->fretry) : rc;
}

/* The text of a string member (NULL when absent or not a string). */
static const char *member_text(const rcp_json *o, const char *k, int *n)
{
    const rcp_json *v = rcp_json_get(o, k);
    if (!v || v->type != RCP_JSON_STRING)
        return NULL;
    *n = v->n > 200 ? 200 : (int)v->n;
    return v->s;
}

/* Invariant 5: an error response of e's. */
static int dl_engine_error(delegate *d, dl_engine *e,
                           const rcp_json *err)
{
    const rcp_json *data = rcp_json_get(err, "data"), *ry;
    int64_t code = RCP_INTERNAL_ERROR;
    int n = 0, fn = 0, on = 0, mn = 0;
    const char *det = member_text(data, "detail", &n),
               *fld = member_text(data, "field", &fn),
               *opt = member_text(data, "option", &on),
               *msg = member_text(err, "message", &mn);
    char fb[128], ob[64];
    if (!rcp_json_int(rcp_json_get(err, "code"), &code)
        || code < INT32_MIN || code > INT32_MAX || !rcp_code_known((int)code))
        return dl_fail(d, RCP_INTERNAL_ERROR, -1, NULL, NULL, "%s %s "
                       "answered an error code RCP/1 does not define "
                       "(%lld): %.*s", e->role, e->name, (long long)code,
                       msg ? mn : 0, msg ? msg : "");
    ry = rcp_json_get(data, "retryable");
    snprintf(fb, sizeof fb, "%.*s", fld ? fn : 0, fld ? fld : "");
    snprintf(ob, sizeof ob, "%.*s", opt ? on : 0, opt ? opt : "");
    return dl_fail(d, (int)code, ry ? ry->type == RCP_JSON_TRUE : -1, fb, ob,
                   "%s: %.*s", e->role, det ? n : msg ? mn : 7,
                   det ? det : msg ? msg : "refused");
}

/* MARK: - Engines: connect, initialize, reconnect ------------------------ */

static void dl_on_notify(void *ud, const rcp_json *msg);

static const char init_params[] =
    "{\"protocolVersion\":1,\"client\":{\"name\":\"rcp-delegate\","
    "\"version\":\"" RCP_VERSION "\"}}";

static void engine_down(dl_engine *e)
{
    if (e->cl)
        rcp_client_close(e->cl, 0);
    e->cl = NULL;
    e->backoff = e->backoff ? e->backoff * 2 : DL_BACKOFF_MIN;
    if (e->backoff > DL_BACKOFF_MAX)
        e->backoff = DL_BACKOFF_MAX;
    e->retry_at = proto_now_ms() + e->backoff;
}

/* The serialised value of capability key in caps ("" when absent), or
** NULL out of memory. */
static char *cap_text(const rcp_json *caps, const char *key)
{
    const rcp_json *v = rcp_json_get(caps, key);
    rcp_buf b;
    rcp_jw w;
    if (!v)
        return dup_str("");
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_value(&w, v);
    rcp_buf_putc(&b, '\0');
    if (b.oom) {
        rcp_buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* Start (connect) e and initialize it, waiting up to ms.  The first
** time its capabilities are kept; later, invariant 1 is checked.  0, or
** -1 with e->why said. */
static int engine_up(delegate *d, dl_engine *e, int ms)
{
    rcp_client_opts o;
    rcp_request *r;
    const rcp_json *caps;
    char err[160], *now;
    int code, same = 1;
    memset(&o, 0, sizeof o);
    o.err = RCP_STDERR_INHERIT;         /* an operator sees the engine's */
    o.on_notify = dl_on_notify;
    o.ud = d;
    e->cl = e->argv ? rcp_client_spawn(e->argv, &o, err, sizeof err)
                    : rcp_client_connect(e->url, &o, err, sizeof err);
    if (!e->cl) {
        snprintf(e->why, sizeof e->why, "cannot %s %.60s: %.100s", e->argv
                 ? "start" : "connect to", e->name, err);
        engine_down(e);
        return -1;
    }
    r = rcp_client_request(e->cl, "initialize", init_params, ms);
    if (!r || rcp_client_wait(e->cl, r, ms) != RCP_REQ_DONE
        || rcp_request_error(r, &code)
        || !(caps = rcp_json_get(rcp_request_result(r), "capabilities"))) {
        snprintf(e->why, sizeof e->why, "%s did not answer initialize "
                 "with capabilities", e->name);
        engine_down(e);
        return -1;
    }
    if (!e->caps) {                 /* the first: keep them */
        rcp_json_err je;
        if (!(e->capstext = cap_text(rcp_request_result(r), "capabilities"))
            || !(e->caps = rcp_json_parse(&e->arena, e->capstext,
                                          strlen(e->capstext), 0, &je))) {
            snprintf(e->why, sizeof e->why, "out of memory");
            engine_down(e);
            return -1;
        }
    } else {                        /* invariant 1 */
        const char *keys[2] = { "embed", "rerank" };
        int i;
        for (i = 0; i < 2 && same; i++) {
            char *was = cap_text(e->caps, keys[i]);
            now = cap_text(caps, keys[i]);
            same = was && now && !strcmp(was, now);
            rcp_free(was);
            rcp_free(now);
        }
        if (!same) {
            snprintf(e->why, sizeof e->why, "%s came back advertising "
                     "another embed or rerank capability than at start "
                     "(a model swap, §15.7)", e->name);
            engine_down(e);
            e->retry_at = 1e300;    /* never again */
            return -1;
        }
    }
    rcp_request_free(e->cl, r);
    e->backoff = 0;
    e->why[0] = '\0';
    return 0;
}

/* Invariant 4: e connected, or the -32010 kept.  An engine that exited
** while idle (its EOF is read here) is started again at once: nothing
** was sent to it, so nothing is lost by trying; one that fails to start
** backs off. */
static int engine_ready(delegate *d, dl_engine *e, double deadline)
{
    double now = proto_now_ms();
    int ms = DL_START_MS;
    if (e->cl && rcp_client_pump(e->cl, 0) >= 0 && rcp_client_alive(e->cl))
        return 0;
    if (e->cl) {
        rcp_client_close(e->cl, 0);
        e->cl = NULL;
        e->retry_at = 0;
    }
    if (deadline > 0 && deadline - now < ms)
        ms = deadline - now > 1 ? (int)(deadline - now) : 1;
    if (now < e->retry_at || engine_up(d, e, ms) != 0)
        return dl_fail(d, RCP_BACKEND_UNAVAILABLE, e->retry_at < 1e300,
                       NULL, NULL, "%s is unavailable: %s", e->role,
                       e->why);
    return 0;
}

/* MARK: - Forwarding: deadline, cancel, progress ------------------------- */

/* _meta of the forwarded request: the caller's members but deadlineMs
** and progressToken, then ours (invariant 2; for embed and rerank
** themselves, §9 progress relayed under our own token). */
static void write_meta(delegate *d, rcp_jw *w, rcp_call *c, double left)
{
    const rcp_json *m = c ? proto_get(call_params(c), "_meta") : NULL;
    size_t i;
    rcp_jw_key(w, "_meta");
    rcp_jw_obj(w);
    for (i = 0; m && m->type == RCP_JSON_OBJECT && i < m->n; i++) {
        const rcp_json *k = &m->kids[i];
        if ((k->keylen == 10 && !memcmp(k->key, "deadlineMs", 10))
            || (k->keylen == 13 && !memcmp(k->key, "progressToken", 13)))
            continue;
        rcp_jw_keyn(w, k->key, k->keylen);
        rcp_jw_value(w, k);
    }
    if (left > 0) {
        rcp_jw_key(w, "deadlineMs");
        rcp_jw_int(w, (int64_t)left);
    }
    if (c && d->relay
        && proto_get(proto_get(call_params(c), "_meta"), "progressToken")) {
        snprintf(d->token, sizeof d->token, "rcp-delegate-%lu", ++d->tokens);
        rcp_jw_key(w, "progressToken");
        rcp_jw_cstr(w, d->token);
    }
    rcp_jw_obj_end(w);
}

/* §9: the engine's progress for our token, relayed for the bound call. */
static void dl_on_notify(void *ud, const rcp_json *msg)
{
    delegate *d = ud;
    const rcp_json *p = rcp_json_get(msg, "params"), *pr, *st;
    if (!d->cur || !d->token[0]
        || !rcp_json_streq(rcp_json_get(msg, "method"),
                           "notifications/progress")
        || !rcp_json_streq(rcp_json_get(p, "progressToken"), d->token)
        || !(pr = rcp_json_get(p, "progress"))
        || pr->type != RCP_JSON_NUMBER)
        return;
    st = rcp_json_get(p, "stage");
    (void)call_progress(d->cur, rcp_json_num(pr) * 0.99, st && st->type
                        == RCP_JSON_STRING ? "engine" : NULL, NULL, NULL);
}

/* §7.14 pass-through (invariant 3). */
static void send_cancel(dl_engine *e, rcp_request *r, const char *reason)
{
    char b[160];
    size_t n;
    const char *id = rcp_request_id(r, &n);
    if (n > 100 || rcp_request_state_get(r) != RCP_REQ_PENDING)
        return;
    snprintf(b, sizeof b, "{\"id\":%.*s,\"reason\":\"%s\"}", (int)n, id,
             reason);
    (void)rcp_client_notify(e->cl, "notifications/cancel", b);
}

/* Send method with params (an object's members, written by put) to e
** and wait for the answer: 0 and *out (the response, e's until
** rcp_request_free) with a result, or the code kept in d (the engine's
** error, down, late, cancelled). */
typedef void (*dl_put)(rcp_jw *w, const void *ud);
static int dl_call(delegate *d, dl_engine *e, rcp_call *c,
                   const char *method, dl_put put, const void *ud,
                   rcp_request **out)
{
    double deadline = c ? call_deadline(c) : proto_now_ms() + DL_START_MS;
    double left = 0, reserve = 0, stop;
    rcp_request *r;
    rcp_request_state st;
    rcp_buf b;
    rcp_jw w;
    int rc, code;
    *out = NULL;
    d->token[0] = '\0';
    if ((rc = engine_ready(d, e, deadline)) != 0)
        return rc;
    if (deadline > 0) {
        left = deadline - proto_now_ms();
        reserve = left / 10;
        reserve = reserve < DL_RESERVE_MIN ? DL_RESERVE_MIN
                : reserve > DL_RESERVE_MAX ? DL_RESERVE_MAX : reserve;
        if (left - reserve < 1)
            return dl_fail(d, RCP_TIMEOUT, -1, NULL, NULL, "the deadline "
                           "left no time to ask the %s", e->role);
    }
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_obj(&w);
    put(&w, ud);
    write_meta(d, &w, c, deadline > 0 ? floor(left - reserve) : 0);
    rcp_jw_obj_end(&w);
    rcp_buf_putc(&b, '\0');
    r = b.oom ? NULL : rcp_client_request(e->cl, method, b.data, 0);
    rcp_buf_free(&b);
    if (!r) {
        snprintf(e->why, sizeof e->why, "the connection to %s is lost",
                 e->name);
        engine_down(e);
        return dl_fail(d, RCP_BACKEND_UNAVAILABLE, 1, NULL, NULL, "%s: %s",
                       e->role, e->why);
    }
    stop = deadline > 0 ? deadline - reserve : 0;
    while ((st = rcp_request_state_get(r)) == RCP_REQ_PENDING) {
        double now = proto_now_ms();
        int ms = DL_SLICE_MS;
        if (stop > 0 && now >= stop) {
            send_cancel(e, r, "deadline");
            rcp_request_free(e->cl, r);
            return dl_fail(d, RCP_TIMEOUT, -1, NULL, NULL, "the %s did not "
                           "answer %s within the deadline", e->role, method);
        }
        if (stop > 0 && stop - now < ms)
            ms = (int)(stop - now) + 1;
        rcp_client_pump(e->cl, ms);
        if (c && (rc = call_still_wanted(c)) != 0) {
            send_cancel(e, r, rc == RCP_CANCELLED ? "cancelled upstream"
                        : "deadline");
            rcp_request_free(e->cl, r);
            return dl_fail(d, rc, -1, NULL, NULL, "%s %s", method,
                           rc == RCP_CANCELLED ? "cancelled" : "timed out");
        }
    }
    if (st != RCP_REQ_DONE) {           /* the engine died under it */
        snprintf(e->why, sizeof e->why, "%s closed before it answered %s",
                 e->name, method);
        rcp_request_free(e->cl, r);
        engine_down(e);
        return dl_fail(d, RCP_BACKEND_UNAVAILABLE, 1, NULL, NULL, "%s: %s",
                       e->role, e->why);
    }
    if (rcp_request_error(r, &code)) {
        rc = dl_engine_error(d, e, rcp_json_get(rcp_request_response(r),
                                                "error"));
        rcp_request_free(e->cl, r);
        return rc;
    }
    *out = r;
    return 0;
}

/* MARK: - The model's hooks (rcp_model_opts.ext_*) ----------------------- */

typedef struct embed_in {
    const char *const *texts;
    const size_t *lens;
    size_t      n;
    int         kind;
    int         b64;
} embed_in;

static void put_embed(rcp_jw *w, const void *ud)
{
    const embed_in *in = ud;
    size_t i;
    rcp_jw_key(w, "inputs");
    rcp_jw_arr(w);
    for (i = 0; i < in->n; i++)
        rcp_jw_str(w, in->texts[i], in->lens[i]);
    rcp_jw_arr_end(w);
    rcp_jw_key(w, "kind");
    rcp_jw_cstr(w, in->kind == RCP_KIND_QUERY ? "query" : "document");
    if (in->b64) {
        rcp_jw_key(w, "encoding");
        rcp_jw_cstr(w, "f32-base64");
    }
}

/* One vector of an embed result (a JSON array, or f32-base64 text) into
** out[0..dim).  0, or -1 when it is not one of dim numbers. */
static int read_vector(const rcp_json *v, unsigned dim, float *out)
{
    size_t i;
    if (v && v->type == RCP_JSON_STRING)
        return rcp_vec_b64_decode(out, dim, v->s, v->n) == RCP_VEC_B64_OK
               ? 0 : -1;
    if (!v || v->type != RCP_JSON_ARRAY || v->n != dim)
        return -1;
    for (i = 0; i < dim; i++) {
        if (v->kids[i].type != RCP_JSON_NUMBER)
            return -1;
        out[i] = (float)rcp_json_num(&v->kids[i]);
    }
    return 0;
}

/* The dense leg compares by cosine over unit vectors (the 8-bit copy
** assumes them), so an engine's vector is stored L2-normalised: the same
** cosine, and the same vector where the engine says normalized. */
static void normalise(float *v, unsigned dim)
{
    double s = 0;
    unsigned i;
    for (i = 0; i < dim; i++)
        s += (double)v[i] * v[i];
    if (s > 0 && fabs(s - 1.0) > 1e-6)
        for (i = 0, s = 1.0 / sqrt(s); i < dim; i++)
            v[i] = (float)(v[i] * s);
}

/* Embed texts[0..n) into out (n x dim, normalised) in one request. */
static int embed_batch(delegate *d, const char *const *texts,
                       const size_t *lens, size_t n, int kind, float *out)
{
    rcp_request *r;
    embed_in in;
    const rcp_json *vs;
    size_t i;
    int rc;
    in.texts = texts;
    in.lens = lens;
    in.n = n;
    in.kind = kind;
    in.b64 = d->b64;
    if ((rc = dl_call(d, d->embed, d->cur, "embed", put_embed, &in, &r)))
        return rc;
    vs = rcp_json_get(rcp_request_result(r), "vectors");
    rc = !vs || vs->type != RCP_JSON_ARRAY || vs->n != n;
    for (i = 0; !rc && i < n; i++)
        rc = read_vector(&vs->kids[i], d->dim, out + i * d->dim);
    rcp_request_free(d->embed->cl, r);
    if (rc)
        return dl_fail(d, RCP_BACKEND_UNAVAILABLE, 0, NULL, NULL, "embed "
                       "engine: its answer is not %lu vector%s of dimension "
                       "%u", (unsigned long)n, n == 1 ? "" : "s", d->dim);
    for (i = 0; i < n; i++)
        normalise(out + i * d->dim, d->dim);
    return 0;
}

/* The vector made ahead for a document's text, if any: documents are
** added in the order they were embedded, so the next one is looked at
** first. */
static const float *prefetched(delegate *d, const char *text, size_t len)
{
    struct dl_pre *p = &d->pre;
    size_t i, k;
    for (k = 0; k < p->n; k++) {
        i = (p->next + k) % p->n;
        if (p->lens[i] == len && !memcmp(p->text + p->off[i], text, len)) {
            p->next = i + 1;
            return p->vecs + i * d->dim;
        }
    }
    return NULL;
}

static int dl_embed(void *ud, const char *text, size_t len, int kind,
                    float *out)
{
    delegate *d = ud;
    const float *v = kind == RCP_KIND_DOCUMENT && d->pre.n
                     ? prefetched(d, text, len) : NULL;
    if (v) {
        memcpy(out, v, d->dim * sizeof *out);
        return 0;
    }
    return embed_batch(d, &text, &len, 1, kind, out);
}

static void pre_free(struct dl_pre *p)
{
    rcp_free(p->text);
    rcp_free(p->off);
    rcp_free(p->lens);
    rcp_free(p->vecs);
    memset(p, 0, sizeof *p);
}

/* Embed texts[0..n) ahead of their adds, in batches of the engine's
** embed.batchLimit (§7.3 SHOULD respect it): one request per batch
** instead of one per document.  Best effort: when it fails (no memory,
** the engine down or refusing), nothing is kept and each add embeds its
** own, so the failure is met, if at all, where it applies. */
static void pre_fill(delegate *d, const char *const *texts,
                     const size_t *lens, size_t n)
{
    const rcp_json *bl = rcp_json_get(d->ecap, "batchLimit");
    struct dl_pre *p = &d->pre;
    const char **t = NULL;
    size_t i, at, step, bytes = 0;
    int64_t lim;
    pre_free(p);
    for (i = 0; i < n; i++)
        bytes += lens[i];
    step = bl && rcp_json_int(bl, &lim) && lim > 0 ? (size_t)lim : n;
    if (n < 2 || !(p->text = rcp_malloc(bytes + 1))
        || !(p->off = rcp_malloc(n * sizeof *p->off))
        || !(p->lens = rcp_malloc(n * sizeof *p->lens))
        || !(p->vecs = rcp_malloc(n * d->dim * sizeof *p->vecs))
        || !(t = rcp_malloc(n * sizeof *t))) {
        pre_free(p);
        return;
    }
    for (i = bytes = 0; i < n; bytes += lens[i++]) {
        memcpy(p->text + bytes, texts[i], lens[i]);
        p->off[i] = bytes;
        p->lens[i] = lens[i];
        t[i] = p->text + bytes;
    }
    for (at = 0; at < n; at += step)
        if (embed_batch(d, t + at, p->lens + at, n - at < step ? n - at
                        : step, RCP_KIND_DOCUMENT, p->vecs + at * d->dim)) {
            pre_free(p);
            d->fcode = 0;       /* met again where it applies */
            break;
        }
    if (p->vecs)
        p->n = n;
    rcp_free((void *)t);
}

/* index/add's documents (whole, not chunked), embedded before the add:
** should that fail, the add embeds document by document after its own
** checks, so its errors keep their precedence (-32003 read-only, -32602,
** a replayed idempotency key). */
static void prefetch(delegate *d, rcp_call *c)
{
    const rcp_json *docs = proto_get(call_params(c), "documents"),
                   *ck = proto_get(call_params(c), "chunk");
    const char **texts;
    size_t i, n = 0, *lens;
    if (!docs || docs->type != RCP_JSON_ARRAY || docs->n < 2
        || (ck && ck->type == RCP_JSON_TRUE))
        return;
    texts = rcp_malloc(docs->n * sizeof *texts);
    lens = rcp_malloc(docs->n * sizeof *lens);
    for (i = 0; texts && lens && i < docs->n; i++) {
        const rcp_json *t = proto_get(&docs->kids[i], "text");
        if (t && t->type == RCP_JSON_STRING) {
            texts[n] = t->s;
            lens[n++] = t->n;
        }
    }
    if (texts && lens)
        pre_fill(d, texts, lens, n);
    rcp_free((void *)texts);
    rcp_free(lens);
}

/* rcp_store_load_opts.ahead: a --corpus load's next documents. */
static void load_ahead(void *ud, const char *const *texts,
                       const size_t *lens, size_t n)
{
    pre_fill(ud, texts, lens, n);
}

typedef struct rerank_in {
    const char *method, *q;
    size_t      ml, ql;
    const char *const *texts;
    const size_t *lens;
    size_t      n;
} rerank_in;

static void put_rerank(rcp_jw *w, const void *ud)
{
    const rerank_in *in = ud;
    size_t i;
    rcp_jw_key(w, "query");
    rcp_jw_str(w, in->q, in->ql);
    rcp_jw_key(w, "passages");
    rcp_jw_arr(w);
    for (i = 0; i < in->n; i++)
        rcp_jw_str(w, in->texts[i], in->lens[i]);
    rcp_jw_arr_end(w);
    rcp_jw_key(w, "method");
    rcp_jw_str(w, in->method, in->ml);
}

/* The stage's method into in: the one asked for, or (retrieve named
** none, or strict:false let us) the engine's first. */
static void stage_method(const delegate *d, int method, rerank_in *in)
{
    const rcp_json *ms = rcp_json_get(d->rcap, "methods");
    in->method = method == RCP_RERANK_COLBERT ? "colbert" : "cross-encoder";
    if (d->rr_first && ms && ms->type == RCP_JSON_ARRAY && ms->n
        && ms->kids[0].type == RCP_JSON_STRING) {
        in->method = ms->kids[0].s;         /* not NUL-terminated */
        in->ml = ms->kids[0].n;
        return;
    }
    in->ml = strlen(in->method);
}

static int dl_rerank(void *ud, int method, const char *query, size_t qlen,
                     const char *const *texts, const size_t *lens, size_t n,
                     double *scores)
{
    delegate *d = ud;
    size_t at, i, step = d->max_passages > 0 ? (size_t)d->max_passages : n;
    rerank_in in;
    rcp_request *r;
    const rcp_json *sc;
    int rc;
    stage_method(d, method, &in);
    in.q = query;
    in.ql = qlen;
    for (at = 0; at < n; at += in.n) {  /* maxCandidates at a time */
        in.texts = texts + at;
        in.lens = lens + at;
        in.n = n - at < step ? n - at : step;
        if ((rc = dl_call(d, d->rerank, d->cur, "rerank", put_rerank, &in,
                          &r)))
            return rc;
        sc = rcp_json_get(rcp_request_result(r), "scores");
        rc = !sc || sc->type != RCP_JSON_ARRAY || sc->n != in.n;
        for (i = 0; !rc && i < in.n; i++) {
            rc = sc->kids[i].type != RCP_JSON_NUMBER;
            scores[at + i] = rc ? 0 : rcp_json_num(&sc->kids[i]);
        }
        rcp_request_free(d->rerank->cl, r);
        if (rc)
            return dl_fail(d, RCP_BACKEND_UNAVAILABLE, 0, NULL, NULL,
                           "rerank engine: its answer is not one score per "
                           "passage");
    }
    return 0;
}

/* MARK: - The backend around the built-in one ---------------------------- */

/* embed and rerank as they came: the params but _meta, then ours. */
static void put_params(rcp_jw *w, const void *ud)
{
    const rcp_json *p = call_params((const rcp_call *)ud);
    size_t i;
    for (i = 0; i < p->n; i++) {
        const rcp_json *k = &p->kids[i];
        if (k->keylen == 5 && !memcmp(k->key, "_meta", 5))
            continue;
        rcp_jw_keyn(w, k->key, k->keylen);
        rcp_jw_value(w, k);
    }
}

static int forward(delegate *d, dl_engine *e, rcp_call *c,
                   const char *method)
{
    rcp_request *r;
    int rc;
    d->fcode = 0;
    d->cur = c;
    d->relay = 1;
    rc = dl_call(d, e, c, method, put_params, c, &r);
    d->cur = NULL;
    d->relay = 0;
    if (rc)
        return dl_surface(d, c);
    rcp_jw_value(call_w(c), rcp_request_result(r));   /* as it came */
    rcp_request_free(e->cl, r);
    return 0;
}

static int dl_m_embed(void *ud, rcp_call *c)
{
    delegate *d = ud;
    return forward(d, d->embed, c, "embed");
}

static int dl_m_rerank(void *ud, rcp_call *c)
{
    delegate *d = ud;
    return forward(d, d->rerank, c, "rerank");
}

/* retrieve's rerank.method against what the engine offers (§7.7 strict:
** -32005, or the engine's first method with a note). */
static int check_stage_method(delegate *d, rcp_call *c)
{
    const rcp_json *rr = proto_get(call_params(c), "rerank"), *m, *st;
    int ok;
    d->rr_first = 0;
    if (!d->rerank || !rr || rr->type != RCP_JSON_OBJECT)
        return 0;
    if (!d->rr_any)             /* retrieve.rerankBuiltin is false */
        return call_fail(c, RCP_OPTION_UNSUPPORTED, NULL, "rerank", "the "
                         "rerank engine advertises no method");
    m = proto_get(rr, "method");
    if (!m) {       /* the server's choice: the engine's first if need be */
        d->rr_first = !d->rr_cross;
        return 0;
    }
    ok = (rcp_json_streq(m, "cross-encoder") && d->rr_cross)
         || (rcp_json_streq(m, "colbert") && d->rr_colbert)
         || (!rcp_json_streq(m, "cross-encoder")
             && !rcp_json_streq(m, "colbert"));  /* the built-in's -32602 */
    if (ok)
        return 0;
    st = proto_get(call_params(c), "strict");
    d->rr_first = 1;
    if (call_unsupported(c, !st || st->type != RCP_JSON_FALSE,
                         "rerank.method", "the rerank engine does not "
                         "offer it"))
        return RCP_OPTION_UNSUPPORTED;
    m = rcp_json_get(d->rcap, "methods");
    call_note_add(c, "rerank by the engine's %.*s", (int)(m->kids[0].n > 40
                  ? 40 : m->kids[0].n), m->kids[0].s);
    return 0;
}

/* Every other method: the built-in's, with c bound for the hooks; a
** failure a hook kept is the answer, not the -32603 it became. */
static int dl_inner(delegate *d, rcp_call *c, int m)
{
    int rc;
    if (m == PROTO_M_RETRIEVE && (rc = check_stage_method(d, c)) != 0)
        return rc;
    d->fcode = 0;
    d->cur = c;
    pre_free(&d->pre);              /* a load's last batch */
    if (m == PROTO_M_INDEX_ADD && d->embed)
        prefetch(d, c);
    rc = d->inner->handle[m](d->inner_ud, c);
    d->cur = NULL;
    d->rr_first = 0;
    pre_free(&d->pre);
    if (rc && d->fcode)
        return dl_surface(d, c);
    d->fcode = 0;
    return rc;
}

#define DL_WRAP(M) \
    static int wrap_##M(void *ud, rcp_call *c) \
    { return dl_inner(ud, c, PROTO_M_##M); }
DL_WRAP(EMBED) DL_WRAP(SPARSE) DL_WRAP(MULTI) DL_WRAP(RERANK)
DL_WRAP(RETRIEVE) DL_WRAP(TRANSFORM) DL_WRAP(GRAPH) DL_WRAP(INDEX_ADD)
DL_WRAP(INDEX_DELETE) DL_WRAP(CATALOG_LIST) DL_WRAP(FEEDBACK)
DL_WRAP(MEMORY_BUILD) DL_WRAP(MEMORY_RECALL)
static const proto_handler wrappers[PROTO_NMETHODS] = {
    wrap_EMBED, wrap_SPARSE, wrap_MULTI, wrap_RERANK, wrap_RETRIEVE,
    wrap_TRANSFORM, wrap_GRAPH, wrap_INDEX_ADD, wrap_INDEX_DELETE,
    wrap_CATALOG_LIST, wrap_FEEDBACK, wrap_MEMORY_BUILD, wrap_MEMORY_RECALL
};

static unsigned long dl_offers(const void *ud)
{
    const delegate *d = ud;
    unsigned long o = d->inner->offers(d->inner_ud);
    if (d->embed)
        o |= PROTO_CAP(PROTO_CAP_EMBED);
    if (d->rerank)
        o |= PROTO_CAP(PROTO_CAP_RERANK);
    return o;
}

static unsigned long dl_partial(const void *ud)
{
    const delegate *d = ud;
    return d->inner->partial ? d->inner->partial(d->inner_ud) : 0;
}

/* retrieve's value with rerankBuiltin false when the engine names no
** rerank method. */
static void write_retrieve(const delegate *d, rcp_jw *w)
{
    rcp_buf b;
    rcp_jw bw;
    rcp_arena a;
    rcp_json_err je;
    const rcp_json *v;
    size_t i;
    rcp_buf_init(&b);
    rcp_jw_init(&bw, &b);
    d->inner->describe(d->inner_ud, PROTO_CAP_RETRIEVE, &bw);
    rcp_arena_init(&a, 0);
    v = b.oom ? NULL : rcp_json_parse(&a, b.data, b.len, 0, &je);
    rcp_jw_obj(w);
    for (i = 0; v && i < v->n; i++) {
        const rcp_json *k = &v->kids[i];
        rcp_jw_keyn(w, k->key, k->keylen);
        if (k->keylen == 13 && !memcmp(k->key, "rerankBuiltin", 13))
            rcp_jw_bool(w, k->type == RCP_JSON_TRUE && d->rr_any);
        else
            rcp_jw_value(w, k);
    }
    rcp_jw_obj_end(w);
    rcp_arena_free(&a);
    rcp_buf_free(&b);
}

static void dl_describe(const void *ud, int cap, rcp_jw *w)
{
    const delegate *d = ud;
    if (cap == PROTO_CAP_EMBED && d->embed)
        rcp_jw_raw(w, d->embed_cap, strlen(d->embed_cap));
    else if (cap == PROTO_CAP_RERANK && d->rerank)
        rcp_jw_raw(w, d->rerank_cap, strlen(d->rerank_cap));
    else if (cap == PROTO_CAP_RETRIEVE && d->rerank)
        write_retrieve(d, w);
    else
        d->inner->describe(d->inner_ud, cap, w);
}

static void dl_close(void *ud)
{
    delegate *d = ud;
    if (d->inner && d->inner->close)
        d->inner->close(d->inner_ud);
    d->inner = NULL;
}

/* MARK: - Opening ---------------------------------------------------------- */

/* A command line as argv: a JSON array of strings (the registry's
** "command", §16.1), or words split at blanks with '...' and "..."
** quoting and \ escaping (a shell's words, without expansion). */
static char **split_command(const char *s, char *err, size_t errlen)
{
    char **argv = rcp_malloc((DL_MAX_ARGS + 1) * sizeof *argv), *buf;
    size_t n = 0, len = strlen(s);
    if (!argv || !(buf = rcp_malloc(2 * len + 2))) {
        rcp_free(argv);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    argv[0] = buf;                  /* the words live in one buffer */
    while (*s) {
        char q = 0;
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        if (n == DL_MAX_ARGS) {
            snprintf(err, errlen, "more than %d words", DL_MAX_ARGS);
            goto fail;
        }
        argv[n++] = buf;
        for (; *s && (q || (*s != ' ' && *s != '\t')); s++) {
            if (q ? *s == q : (*s == '\'' || *s == '"')) {
                q = q ? 0 : *s;         /* a quote opens or closes */
                continue;
            }
            if (*s == '\\' && q != '\'' && s[1])
                s++;                    /* the next byte as it is */
            *buf++ = *s;
        }
        *buf++ = '\0';
        if (q) {
            snprintf(err, errlen, "an unclosed %c", q);
            goto fail;
        }
    }
    if (!n) {
        snprintf(err, errlen, "no command");
        goto fail;
    }
    argv[n] = NULL;
    return argv;
fail:
    rcp_free(argv[0]);
    rcp_free(argv);
    return NULL;
}

/* The JSON-array form of a command. */
static char **json_command(const char *s, char *err, size_t errlen)
{
    rcp_arena a;
    rcp_json_err je;
    const rcp_json *v;
    char **argv = NULL, *buf;
    size_t i, bytes = 0;
    rcp_arena_init(&a, 0);
    v = rcp_json_parse(&a, s, strlen(s), 0, &je);
    for (i = 0; v && v->type == RCP_JSON_ARRAY && i < v->n; i++)
        if (v->kids[i].type != RCP_JSON_STRING
            || memchr(v->kids[i].s, '\0', v->kids[i].n))
            v = NULL;
        else
            bytes += v->kids[i].n + 1;
    if (!v || v->type != RCP_JSON_ARRAY || !v->n || v->n > DL_MAX_ARGS) {
        snprintf(err, errlen, "a JSON command must be an array of 1..%d "
                 "strings (as a registry's \"command\")", DL_MAX_ARGS);
    } else if (!(argv = rcp_malloc((v->n + 1) * sizeof *argv))
               || !(buf = rcp_malloc(bytes))) {
        rcp_free(argv);
        argv = NULL;
        snprintf(err, errlen, "out of memory");
    } else {
        for (i = 0; i < v->n; i++) {
            argv[i] = buf;
            memcpy(buf, v->kids[i].s, v->kids[i].n);
            buf += v->kids[i].n;
            *buf++ = '\0';
        }
        argv[v->n] = NULL;
    }
    rcp_arena_free(&a);
    return argv;
}

static void engine_free(dl_engine *e)
{
    if (e->cl)
        rcp_client_close(e->cl, 2000);
    e->cl = NULL;
    if (e->argv)
        rcp_free(e->argv[0]);
    rcp_free(e->argv);
    rcp_free(e->capstext);
    rcp_arena_free(&e->arena);
}

/* One engine from a flag's value (cmd, or url), started and initialised. */
static int engine_open(delegate *d, dl_engine *e, const char *role,
                       const char *cmd, const char *url, char *err,
                       size_t errlen)
{
    char why[160];
    e->role = role;
    e->spec = cmd ? cmd : url;
    e->url = url;
    snprintf(e->name, sizeof e->name, "%s", e->spec);
    rcp_arena_init(&e->arena, 0);
    if (cmd && !(e->argv = cmd[0] == '[' ? json_command(cmd, why, sizeof why)
                                         : split_command(cmd, why,
                                                         sizeof why))) {
        snprintf(err, errlen, "%s '%s': %s", role, cmd, why);
        return -1;
    }
    if (e->argv)
        snprintf(e->name, sizeof e->name, "%s", e->argv[0]);
    if (engine_up(d, e, DL_START_MS) != 0) {
        snprintf(err, errlen, "%s: %s", role, e->why);
        return -1;
    }
    return 0;
}

/* The rerank methods the retrieve stage can use. */
static void learn_rerank(delegate *d)
{
    const rcp_json *ms = rcp_json_get(d->rcap, "methods"), *mc;
    size_t i;
    int64_t k;
    for (i = 0; ms && ms->type == RCP_JSON_ARRAY && i < ms->n; i++) {
        d->rr_cross |= rcp_json_streq(&ms->kids[i], "cross-encoder");
        d->rr_colbert |= rcp_json_streq(&ms->kids[i], "colbert");
    }
    d->rr_any = ms && ms->type == RCP_JSON_ARRAY && ms->n
                && ms->kids[0].type == RCP_JSON_STRING;
    mc = rcp_json_get(d->rcap, "maxCandidates");
    d->max_passages = mc && rcp_json_int(mc, &k) && k > 0 ? k : 0;
}

/* The embed capability: dimension (1..RCP_MODEL_MAX_DIM) and identity
** are what the model needs (§6). */
static int learn_embed(delegate *d, char *err, size_t errlen)
{
    const rcp_json *dim = rcp_json_get(d->ecap, "dimension"),
                   *id = rcp_json_get(d->ecap, "identity"),
                   *enc = rcp_json_get(d->ecap, "encodings");
    int64_t n;
    size_t i;
    if (!dim || !rcp_json_int(dim, &n) || n < 1 || n > RCP_MODEL_MAX_DIM
        || !id || id->type != RCP_JSON_STRING || !id->n
        || id->n > RCP_STORE_MAX_IDENTITY || memchr(id->s, '\0', id->n)) {
        snprintf(err, errlen, "embed engine %s: its embed capability needs "
                 "a dimension from 1 to %u and an identity (§6)",
                 d->embed->name, RCP_MODEL_MAX_DIM);
        return -1;
    }
    d->dim = (unsigned)n;
    if (!(d->identity = rcp_malloc(id->n + 1))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(d->identity, id->s, id->n);
    d->identity[id->n] = '\0';
    for (i = 0; enc && enc->type == RCP_JSON_ARRAY && i < enc->n; i++)
        d->b64 |= rcp_json_streq(&enc->kids[i], "f32-base64");
    return 0;
}

/* One role's engine: a new one, or the other role's when it is named
** the same way. */
static int open_role(delegate *d, dl_engine **slot, const char *role,
                     const char *cmd, const char *url, const char *key,
                     char *err, size_t errlen)
{
    dl_engine *e = &d->eng[0];
    const char *spec = cmd ? cmd : url;
    if (!spec)
        return 0;
    if (e->spec && !strcmp(e->spec, spec) && !e->argv == !cmd) {
        e->role = "embed and rerank engine";    /* one engine, both */
    } else {
        if (e->spec)
            e = &d->eng[1];
        if (engine_open(d, e, role, cmd, url, err, errlen))
            return -1;
    }
    if (!rcp_json_get(e->caps, key)) {
        snprintf(err, errlen, "%s %s does not advertise %s (§6)", role,
                 spec, key);
        return -1;
    }
    *slot = e;
    return 0;
}

delegate *delegate_open(const delegate_opts *o, char *err,
                                size_t errlen)
{
    delegate *d = rcp_malloc(sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memset(d, 0, sizeof *d);
    if (open_role(d, &d->embed, "embed engine", o->embed_cmd, o->embed_url,
                  "embed", err, errlen)
        || open_role(d, &d->rerank, "rerank engine", o->rerank_cmd,
                     o->rerank_url, "rerank", err, errlen))
        goto fail;
    if (d->embed) {
        d->ecap = rcp_json_get(d->embed->caps, "embed");
        if (!(d->embed_cap = cap_text(d->embed->caps, "embed")))
            goto oom;
        if (learn_embed(d, err, errlen))
            goto fail;
    }
    if (d->rerank) {
        d->rcap = rcp_json_get(d->rerank->caps, "rerank");
        if (!(d->rerank_cap = cap_text(d->rerank->caps, "rerank")))
            goto oom;
        learn_rerank(d);
    }
    return d;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    delegate_free(d);
    return NULL;
}

void delegate_model_opts(delegate *d, rcp_model_opts *mo)
{
    mo->ext_ud = d;
    if (d->embed) {
        mo->ext_embed = dl_embed;
        mo->ext_identity = d->identity;
        mo->dim = d->dim;
    }
    if (d->rerank)
        mo->ext_rerank = dl_rerank;
}

void delegate_load_opts(delegate *d, rcp_store_load_opts *lo)
{
    const rcp_json *bl = rcp_json_get(d->ecap, "batchLimit");
    int64_t lim;
    if (!d->embed)
        return;
    lo->ahead = load_ahead;
    lo->ahead_ud = d;
    lo->ahead_n = bl && rcp_json_int(bl, &lim) && lim > 0
                  ? (size_t)(lim < 4096 ? lim : 4096) : 256;
}

void delegate_wrap(delegate *d, const proto_backend **be, void **ud)
{
    int i;
    d->inner = *be;
    d->inner_ud = *ud;
    d->be.offers = dl_offers;
    d->be.partial = dl_partial;
    d->be.describe = dl_describe;
    d->be.close = dl_close;
    for (i = 0; i < PROTO_NMETHODS; i++)
        d->be.handle[i] = d->inner->handle[i] ? wrappers[i] : NULL;
    if (d->embed)
        d->be.handle[PROTO_M_EMBED] = dl_m_embed;
    if (d->rerank)
        d->be.handle[PROTO_M_RERANK] = dl_m_rerank;
    *be = &d->be;
    *ud = d;
}

const char *delegate_error(const delegate *d)
{
    return d && d->fcode ? d->fdetail : NULL;
}

void delegate_free(delegate *d)
{
    if (!d)
        return;
    engine_free(&d->eng[0]);
    engine_free(&d->eng[1]);
    rcp_free(d->embed_cap);
    rcp_free(d->rerank_cap);
    rcp_free(d->identity);
    pre_free(&d->pre);
    rcp_free(d);
}
