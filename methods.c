/*
** methods.c -- the built-in backend: the bodies of the gated methods over
** the engine (model.c) and its store (store.c) -- embed, embed/sparse and
** embed/multi (§7.3-§7.5), rerank (§7.6), retrieve (§7.7, with §8
** filters, §10 cursors, packing, citations and the §15.2 screen),
** graph (§7.9, over graph.c), index/add and index/delete (§7.10, §7.11,
** with chunking and idempotency keys), memory/build and memory/recall
** (§7.17) -- and the engine's capability metadata (§6).
**
** NOTES ON THE DESIGN
**
** The protocol (rcp.c) serves the gated methods through a backend table
** (proto_backend, rcp.h), after sqlite3_module: what it offers, the §6
** value of each, one handler per roster row, close.  This file is one
** such backend; a federating aggregator (§16) would be a second, and no
** handler here changes.  A handler sees its request only through call_*
** (params, the result writer, the arenas, the parameter readers,
** checkpoints, errors) and the engine only through rcp_model_* and
** rcp_store_*.
**
** Invariants:
**   1. Every param is checked before anything changes: a bad document
**      writes nothing, and every input is checked before any is embedded.
**   2. An applied write is acknowledged (§13.1): the room for its answer
**      is reserved before the first change, what was applied is made
**      durable even when a later document failed, and once writing starts
**      a cancel gets the normal result (§7.14 allows it).
**   3. A client's meta is data, never control (§15.2, §15.4): chunk links
**      live in the engine, never in meta, so nothing in meta drives a
**      loop or a span.
**   4. Results depend only on the index and the request (§7.7.1): a
**      cursor pages the snapshot it was issued on; recency ages from the
**      newest candidate, never from the clock.
*/
#include "rcp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMBED_BATCH_LIMIT 1024
#define RETRIEVE_MAX_K  1000     /* §6.1 retrieve.maxK */
#define RERANK_MAX      1000     /* §6 rerank.maxCandidates */
#define RERANK_CHUNK    64       /* passages scored between checkpoints */
#define INDEX_BATCH_LIMIT 10000  /* documents in one index/add */
#define MEMORY_MAX      16       /* §7.17 memories kept */
#define SESSION_SLOTS   64       /* §7.7.3 sessions remembered (LRU) */
#define SESSION_IDS     1024     /* hit ids remembered per session */
#define SESSION_TTL_S   600      /* §6 session.ttlSeconds */
#define SESSION_ID_BYTES 256     /* a longer sessionId is -32602 */
#define FEEDBACK_SIGNALS 1000    /* §15.5 signals in one feedback call */
#define FLAG_SLOTS      4096     /* §7.16 hit ids whose reports are kept */

/* §7.7.3 one trajectory's state: the hits it was given, as 64-bit hashes
** of their ids in a ring (the oldest forgotten first past SESSION_IDS);
** 8 KiB each, so all sessions together hold at most 512 KiB. */
typedef struct session {
    char    *id;                /* the sessionId, rcp_malloc'd */
    size_t   idlen;
    double   last;              /* proto_now_ms of its last retrieve */
    uint64_t seen[SESSION_IDS];
    size_t   nseen, head;
} session;

/* The built-in backend's state: the engine it serves (borrowed from the
** server's options) and what the write methods remember between calls. */
typedef struct builtin {
    rcp_model       *model;
    rcp_store       *store;     /* NULL: documents live in memory only */
    const rcp_field *fields;    /* §8 the filterable fields */
    size_t           nfields;
    size_t          *fno;       /* each one's index in the model's fields */
    rcp_model_origin writer;    /* §15.2 the origin of client writes */
    int              read_only; /* §6 index {writable: false} */
    text_screen     *screen;    /* §15.2 the injection screen's cues */
    struct screened {           /* ... and its verdicts, per docno */
        unsigned char *v;       /* 0 not yet screened, 1 clean, 2 flagged */
        size_t   n;             /* docnos covered */
        uint64_t ver;           /* the model version they are valid for */
    }               *screened;
    uint64_t         minted;    /* §7.10 ids minted for documents without */
    store_idem       own_idem;  /* §7.10 keys, without a store */
    store_idem      *idem;      /* the store's (durable) or own_idem */
    uint64_t         voff;      /* §7.7.1 store version - model version */
    graph           *graph;     /* §7.9 of the live index, NULL until used */
    uint64_t         graph_ver; /* the model version it reflects */
    int              graph_fresh;
    struct memory {             /* §7.17 the memories built */
        char    id[32];         /* "mem-<n>"; "" = free slot */
        char   *json;           /* the memory, serialised (rcp_malloc'd) */
        size_t  len, tokens;
        int     scope;          /* SCOPE_* */
        char   *session;        /* the sessionId it was built for, or NULL */
        graph  *g;              /* json read back (recall), or NULL */
        uint64_t used;          /* the last build or recall (eviction) */
    } mem[MEMORY_MAX];
    size_t           nmem;
    uint64_t         mem_next, mem_tick;
    session         *sess[SESSION_SLOTS];   /* NULL: a free slot */
    unsigned         rewrites;  /* TX_* bits retrieve.rewrite offers */
    /* §7.16 the integrity reports of feedback, per hit id (advisory, §15):
    ** the first FLAG_SLOTS ids reported are kept, later ones only on
    ** disk; and how many signals were accepted (replayed with --data) */
    struct flag {
        char    *id;            /* rcp_malloc'd */
        size_t   idlen;
        uint32_t poison, injection;
    } *flags;
    size_t           nflags;
    uint64_t         signals;
} builtin;

/* §7.8 the transforms, which retrieve's rewrite applies too (below). */
enum { TX_REWRITE, TX_HYDE, TX_MULTI, TX_DECOMPOSE, TX_STEPBACK, TX_N };
#define TRANSFORM_MAX_N  10     /* §15.5: multi-query/decompose fan-out */
/* The rewrites retrieve advertises (retrieve.rewrite): those that did not
** lower nDCG@10 on either Cranfield half in make eval (README,
** "query/transform": rewrite alone -- multi-query fell below the plain
** request once the default hybrid weighted its dense leg down);
** a --debug server (opts.debug) offers all five, so eval can measure the
** others. */
#define RETRIEVE_REWRITES      (1u << TX_REWRITE)
#define RETRIEVE_REWRITES_ALL  ((1u << TX_N) - 1)
typedef struct txout {          /* a transform's answer, in the arena */
    const char *q[TRANSFORM_MAX_N];
    size_t n[TRANSFORM_MAX_N], count;
    const char *hyp;            /* hyde's passage, or NULL */
    size_t hyplen;
} txout;
static const char *const transform_names[TX_N];
static int transform(rcp_call *c, const builtin *b, int method,
                     const char *text, size_t len, size_t n, int expand,
                     txout *t);

/* §7.16 the reports kept for a hit id, or NULL (none, or not kept). */
static const struct flag *flag_find(const builtin *b, const char *id,
                                    size_t n)
{
    size_t i;
    for (i = 0; i < b->nflags; i++)
        if (b->flags[i].idlen == n && memcmp(b->flags[i].id, id, n) == 0
            && (b->flags[i].poison || b->flags[i].injection))
            return &b->flags[i];
    return NULL;
}

/* MARK: - §6 Capability metadata ---------------------------------------- */

static void write_strings(rcp_jw *w, const char *key,
                          const char *const *v, size_t n)
{
    proto_write_names(w, key, v, n, ~0ul);
}

/* §7.3.1 vector encodings and §4.8 modalities this server offers. */
static const char *const encodings[] = { "json", "f32-base64" };
static const char *const text_only[] = { "text" };

/* §6 embed: {dimension, identity, batchLimit, normalized, encodings
** (§7.3.1), modalities (§4.8)}. */
static void write_embed_cap(rcp_jw *w, const rcp_model *m)
{
    rcp_jw_obj(w);
    rcp_jw_key(w, "dimension");
    rcp_jw_int(w, (int64_t)rcp_model_dim(m));
    rcp_jw_key(w, "identity");
    rcp_jw_cstr(w, rcp_model_identity(m, RCP_EMBED_DENSE));
    rcp_jw_key(w, "batchLimit");
    rcp_jw_int(w, EMBED_BATCH_LIMIT);
    rcp_jw_key(w, "normalized");
    rcp_jw_bool(w, 1);
    write_strings(w, "encodings", encodings, 2);
    write_strings(w, "modalities", text_only, 1);
    rcp_jw_obj_end(w);
}

/* §6 sparseEmbed {identity, vocabulary}. */
static void write_sparse_cap(rcp_jw *w, const rcp_model *m)
{
    rcp_jw_obj(w);
    rcp_jw_key(w, "identity");
    rcp_jw_cstr(w, rcp_model_identity(m, RCP_EMBED_SPARSE));
    rcp_jw_key(w, "vocabulary");
    rcp_jw_int(w, (int64_t)rcp_model_vocab(m));
    rcp_jw_obj_end(w);
}

/* §6 multiVector {dimension, identity, similarity, modalities} and the
** §7.3.1 encodings, which apply to embed/multi too. */
static void write_multi_cap(rcp_jw *w, const rcp_model *m)
{
    rcp_jw_obj(w);
    rcp_jw_key(w, "dimension");
    rcp_jw_int(w, (int64_t)rcp_model_multi_dim(m));
    rcp_jw_key(w, "identity");
    rcp_jw_cstr(w, rcp_model_identity(m, RCP_EMBED_MULTI));
    rcp_jw_key(w, "similarity");
    rcp_jw_cstr(w, "cosine");
    write_strings(w, "modalities", text_only, 1);
    write_strings(w, "encodings", encodings, 2);
    rcp_jw_obj_end(w);
}

/* §6 rerank {methods, maxCandidates}. */
static void write_rerank_cap(rcp_jw *w)
{
    static const char *const methods[] = { "cross-encoder", "colbert" };
    rcp_jw_obj(w);
    write_strings(w, "methods", methods, 2);
    rcp_jw_key(w, "maxCandidates");
    rcp_jw_int(w, RERANK_MAX);
    rcp_jw_obj_end(w);
}

/* §7.7.2 the retrieval units this server returns. */
enum { UNIT_CHUNK, UNIT_PASSAGE, UNIT_DOCUMENT };
static const char *const unit_names[] = { "chunk", "passage", "document" };

/* §7.7 modes, in RCP_MODE_* order, and hybrid's fusion methods. */
static const char *const mode_names[] = { "dense", "sparse", "hybrid" };
static const char *const fusion_names[] = { "rrf", "weighted", "convex" };

/* §6.1 scoreFloor: "the theoretical minimum of this server's Hit.score
** ... independent of the corpus and of the query", one number for every
** mode.  Cosine (dense) goes to -1; BM25, every fusion (RRF, min-max and
** convex are >= 0), the rerank cascade's interpolation (in [0, 1]) and
** recency's rescaling are all >= 0.  So -1 while dense is offered -- hybrid alone would allow 0,
** but the one number must hold for a dense request too -- and 0 for a
** model without a dense index, where -1 would be a loose floor that
** compresses every convex fusion a client makes over it (§16.3). */
static double score_floor(const rcp_model *m)
{
    return rcp_model_has_dense_index(m) ? RCP_MODEL_DENSE_FLOOR
                                        : RCP_MODEL_SPARSE_FLOOR;
}

/* §6, §7.7: retrieve.rewrite, the transforms retrieve applies (an
** informational member of a known capability, §6: RCP/1 names no key for
** it), and transform.methods, all five. */
static void write_rewrite_cap(rcp_jw *w, unsigned rewrites)
{
    const char *names[TX_N];
    int i, n = 0;
    for (i = 0; i < TX_N; i++)
        if (rewrites & (1u << i))
            names[n++] = transform_names[i];
    write_strings(w, "rewrite", names, (size_t)n);
}

static void write_transform_cap(rcp_jw *w)
{
    rcp_jw_obj(w);
    write_strings(w, "methods", transform_names, TX_N);
    rcp_jw_obj_end(w);
}

static void write_retrieve_cap(rcp_jw *w, const builtin *b)
{
    const rcp_model *m = b->model;
    int dense = rcp_model_has_dense_index(m);
    rcp_jw_obj(w);
    rcp_jw_key(w, "maxK");
    rcp_jw_int(w, RETRIEVE_MAX_K);
    write_strings(w, "modes", dense ? mode_names : mode_names + 1,
                  dense ? 3 : 1);
    rcp_jw_key(w, "defaultMode");
    rcp_jw_cstr(w, mode_names[rcp_model_default_mode(m)]);
    if (dense)
        write_strings(w, "fusion", fusion_names, 3);
    write_strings(w, "units", unit_names, 3);
    rcp_jw_key(w, "mmr");
    rcp_jw_bool(w, dense);
    rcp_jw_key(w, "rerankBuiltin");
    rcp_jw_bool(w, 1);
    rcp_jw_key(w, "confidence");
    rcp_jw_bool(w, 1);
    rcp_jw_key(w, "tokenBudget");
    rcp_jw_bool(w, 1);
    rcp_jw_key(w, "deterministic");
    rcp_jw_bool(w, 1);
    rcp_jw_key(w, "snapshots");
    rcp_jw_bool(w, 1);
    rcp_jw_key(w, "scoreScale");
    rcp_jw_cstr(w, "unbounded");
    rcp_jw_key(w, "scoreFloor");
    rcp_jw_double(w, score_floor(m));
    write_rewrite_cap(w, b->rewrites);
    rcp_jw_obj_end(w);
}

/* §8 filter {fields: {name: type}, operators}. */
static const char *const field_types[] = { "keyword", "text", "int",
                                           "float", "bool", "date" };
static const char *const filter_ops[] = { "eq", "ne", "gt", "gte", "lt",
    "lte", "in", "nin", "contains", "exists" };
enum { NOPS = RCP_OP_EXISTS + 1 };    /* in RCP_OP_* order */

int rcp_field_parse(const char *spec, rcp_field *out)
{
    const char *colon = strrchr(spec, ':');
    size_t i;
    if (!colon || colon == spec)
        return -1;
    for (i = 0; i < sizeof field_types / sizeof *field_types; i++)
        if (strcmp(colon + 1, field_types[i]) == 0) {
            out->name = spec;
            out->namelen = (size_t)(colon - spec);
            out->type = (rcp_field_type)i;
            return 0;
        }
    return -1;
}

static void write_filter_cap(rcp_jw *w, const builtin *b)
{
    size_t i;
    rcp_jw_obj(w);
    rcp_jw_key(w, "fields");
    rcp_jw_obj(w);
    for (i = 0; i < b->nfields; i++) {
        rcp_jw_keyn(w, b->fields[i].name, b->fields[i].namelen);
        rcp_jw_cstr(w, field_types[b->fields[i].type]);
    }
    rcp_jw_obj_end(w);
    write_strings(w, "operators", filter_ops, NOPS);
    rcp_jw_obj_end(w);
}

/* MARK: - §7.3-§7.5 embed ---------------------------------------------- */

/* §7.7: strict defaults to true. */
static int get_strict(rcp_call *c, int *strict)
{
    return call_bool(c, call_params(c), "strict", 1, strict);
}

/* kind: "query" | "document" (§7.3-§7.5). */
static int get_kind(rcp_call *c, int *kind)
{
    const rcp_json *v = proto_get(call_params(c), "kind");
    *kind = RCP_KIND_DOCUMENT;
    if (!v)
        return 0;
    if (rcp_json_streq(v, "query"))
        *kind = RCP_KIND_QUERY;
    else if (!rcp_json_streq(v, "document"))
        return call_fail(c, RCP_INVALID_PARAMS, "kind", NULL,
                         "kind must be \"query\" or \"document\"");
    return 0;
}

/* §4.8: a bare string, or a Content block.  Shape errors are -32602; a
** well-formed block of a modality we do not serve (only text) is -32005;
** a text block or a string gives its text. */
static int content_text(rcp_call *c, const rcp_json *v, const char *field,
                        const char **text, size_t *len)
{
    char f[96];
    const rcp_json *type, *t, *mime, *data, *uri;
    if (v->type == RCP_JSON_STRING) {
        *text = v->s;
        *len = v->n;
        return 0;
    }
    if (v->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, field, NULL, "%s must be a "
                         "string or a Content block (§4.8)", field);
    type = proto_get(v, "type");
    snprintf(f, sizeof f, "%s.type", field);
    if (!type || type->type != RCP_JSON_STRING)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL,
                         "a Content block needs a string type (§4.8)");
    data = proto_get(v, "data");
    uri = proto_get(v, "uri");
    if (data && uri)
        return call_fail(c, RCP_INVALID_PARAMS, field, NULL, "a Content "
                         "block carries data or uri, never both (§4.8)");
    if (rcp_json_streq(type, "text")) {
        t = proto_get(v, "text");
        snprintf(f, sizeof f, "%s.%s", field, uri ? "uri" : "text");
        if (uri)    /* §4.8, §15.5: never silently ignored */
            return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "this server "
                             "does not fetch URIs (§4.8, §15.5); send the "
                             "text inline");
        if (!t || t->type != RCP_JSON_STRING)
            return call_fail(c, RCP_INVALID_PARAMS, f, NULL,
                             "a text block needs a string text (§4.8)");
        *text = t->s;
        *len = t->n;
        return 0;
    }
    if (!rcp_json_streq(type, "image") && !rcp_json_streq(type, "audio")
        && !rcp_json_streq(type, "blob"))
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "type must be text, "
                         "image, audio or blob (§4.8)");
    mime = proto_get(v, "mimeType");
    snprintf(f, sizeof f, "%s.mimeType", field);
    if (!mime || mime->type != RCP_JSON_STRING)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL,
                         "mimeType is REQUIRED for non-text blocks (§4.8)");
    if ((!data && !uri) || (data && data->type != RCP_JSON_STRING)
        || (uri && uri->type != RCP_JSON_STRING))
        return call_fail(c, RCP_INVALID_PARAMS, field, NULL, "a non-text block "
                         "needs a string data or uri (§4.8)");
    return call_fail(c, RCP_OPTION_UNSUPPORTED, NULL, "modality", "this server "
                     "accepts text only; %.*s blocks are not advertised (§4.8)",
                     (int)type->n, type->s);
}

enum { ENC_JSON, ENC_B64 };

/* §7.3.1: encoding "json" (always) or "f32-base64"; anything else is
** -32005 under the strict rule, or falls back to json when strict:false. */
static int get_encoding(rcp_call *c, int strict, int *enc)
{
    *enc = ENC_JSON;
    return call_enum(c, call_params(c), "encoding", encodings, 2,
                     strict, enc);
}

static void write_vector(rcp_call *c, const float *v, size_t d, int enc,
                         char *b64)
{
    rcp_jw *w = call_w(c);
    size_t i;

    if (enc == ENC_B64) {
        rcp_jw_str(w, b64, rcp_vec_b64_encode(b64, v, d));
        return;
    }
    rcp_jw_arr(w);
    for (i = 0; i < d; i++)
        rcp_jw_float(w, v[i]);
    rcp_jw_arr_end(w);
}

/* The end of an embed or embed/multi result: the vectors' array closed,
** then the encoding they are in (§7.3.1) and their dimension. */
static void end_vectors(rcp_jw *w, int enc, size_t d)
{
    rcp_jw_arr_end(w);
    rcp_jw_key(w, "encoding");
    rcp_jw_cstr(w, enc == ENC_B64 ? "f32-base64" : "json");
    rcp_jw_key(w, "dimension");
    rcp_jw_int(w, (int64_t)d);
    rcp_jw_obj_end(w);
}

/* The texts of an embed-family request: "inputs" or its synonym "texts"
** (§7.3), each a string or a text Content block, all checked first. */
static int get_inputs(rcp_call *c, const rcp_json **in, const char **field,
                      size_t limit)
{
    char f[32];
    const char *text;
    size_t i, len;
    int rc;
    *field = "inputs";
    if (!(*in = proto_get(call_params(c), "inputs"))
        && (*in = proto_get(call_params(c), "texts")) != NULL)
        *field = "texts";
    if (!*in || (*in)->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, *field, NULL,
                         "%s must be an array of strings or Content blocks",
                         *field);
    if ((*in)->n > limit)      /* §4.7, §15.5: MUST enforce */
        return call_fail(c, RCP_INVALID_PARAMS, *field, NULL, "%lu inputs "
                         "exceed the batchLimit %lu", (unsigned long)(*in)->n,
                         (unsigned long)limit);
    for (i = 0; i < (*in)->n; i++) {
        snprintf(f, sizeof f, "%s[%lu]", *field, (unsigned long)i);
        if ((rc = content_text(c, &(*in)->kids[i], f, &text, &len)) != 0)
            return rc;
    }
    return 0;
}

/* §7.3 embed {inputs | texts, kind?, encoding?} -> {vectors, encoding,
** dimension}.  Every input is checked before any is embedded. */
static int m_embed(void *ud, rcp_call *c)
{
    const rcp_model *m = ((const builtin *)ud)->model;
    rcp_jw *w = call_w(c);
    const char *field, *text;
    const rcp_json *in;
    size_t d = rcp_model_dim(m), i, len;
    int kind, strict, enc, rc;
    char *b64;
    float *vec;
    if ((rc = get_inputs(c, &in, &field, EMBED_BATCH_LIMIT))
        || (rc = get_kind(c, &kind)) || (rc = get_strict(c, &strict))
        || (rc = get_encoding(c, strict, &enc)))
        return rc;
    vec = rcp_arena_alloc(call_arena(c), d * sizeof *vec);
    b64 = rcp_arena_alloc(call_arena(c), rcp_vec_b64_len(d) + 1);
    if (!vec || !b64)
        return call_oom(c);
    rcp_jw_obj(w);
    rcp_jw_key(w, "vectors");
    rcp_jw_arr(w);
    for (i = 0; i < in->n; i++) {
        content_text(c, &in->kids[i], field, &text, &len);
        if (rcp_model_embed(m, text, len, kind, vec) != 0)
            return call_oom(c);
        write_vector(c, vec, d, enc, b64);
        if ((rc = call_checkpoint(c, (double)(i + 1) / in->n, "embed")))
            return call_fail(c, rc, NULL, NULL, "embed stopped");
    }
    end_vectors(w, enc, d);
    return 0;
}

/* §4.8 query: a string, a text block, or an array of text blocks (their
** texts joined by a space). */
static int get_query_text(rcp_call *c, const char **text, size_t *len)
{
    const rcp_json *v;
    size_t i, n = 0, tl;
    char f[32], *buf;
    const char *t;
    int rc;
    if ((rc = call_need(c, call_params(c), "query", &v)))
        return rc;
    if (v->type != RCP_JSON_ARRAY)
        return content_text(c, v, "query", text, len);
    for (i = 0; i < v->n; i++) {
        snprintf(f, sizeof f, "query[%lu]", (unsigned long)i);
        if (v->kids[i].type != RCP_JSON_OBJECT)
            return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be a "
                             "Content block", f);
        if ((rc = content_text(c, &v->kids[i], f, &t, &tl)) != 0)
            return rc;
        n += tl + 1;
    }
    if (!(buf = rcp_arena_alloc(call_arena(c), n + 1)))
        return call_oom(c);
    for (i = 0, n = 0; i < v->n; i++) {
        content_text(c, &v->kids[i], "query", &t, &tl);
        memcpy(buf + n, t, tl);
        n += tl;
        buf[n++] = ' ';
    }
    *text = buf;
    *len = n ? n - 1 : 0;
    return 0;
}

/* A query to search by: -32602 when it holds no word at all (empty, only
** spaces or punctuation): there is nothing to match, and an empty hit
** list would pass for "no document is relevant" (issue 12).  A query of
** stopwords only is not empty. */
static int get_search_query(rcp_call *c, const char **text, size_t *len)
{
    rcp_tokens t;
    int rc, oom;
    size_t n;
    if ((rc = get_query_text(c, text, len)) != 0)
        return rc;
    rcp_tokens_init(&t);
    oom = rcp_tokenize(&t, *text, *len, 0) != 0;
    n = t.n;
    rcp_tokens_free(&t);
    if (oom)
        return call_oom(c);
    return n ? 0 : call_fail(c, RCP_INVALID_PARAMS, "query", NULL, "query "
                             "has no words to search by");
}

/* §7.4 embed/sparse {texts, kind?} -> {sparse: [{indices, values}]}. */
static int m_embed_sparse(void *ud, rcp_call *c)
{
    const rcp_model *m = ((const builtin *)ud)->model;
    rcp_jw *w = call_w(c);
    const rcp_json *in;
    const char *field, *text;
    size_t i, j, n, len;
    uint32_t *idx;
    float *val;
    int kind, rc;
    if ((rc = get_inputs(c, &in, &field, EMBED_BATCH_LIMIT))
        || (rc = get_kind(c, &kind)))
        return rc;
    rcp_jw_obj(w);
    rcp_jw_key(w, "sparse");
    rcp_jw_arr(w);
    for (i = 0; i < in->n; i++) {
        content_text(c, &in->kids[i], field, &text, &len);
        if (rcp_model_embed_sparse(m, text, len, kind, &idx, &val, &n) != 0)
            return call_oom(c);
        rcp_jw_obj(w);
        rcp_jw_key(w, "indices");
        rcp_jw_arr(w);
        for (j = 0; j < n; j++)
            rcp_jw_int(w, idx[j]);
        rcp_jw_arr_end(w);
        rcp_jw_key(w, "values");
        rcp_jw_arr(w);
        for (j = 0; j < n; j++)
            rcp_jw_float(w, val[j]);
        rcp_jw_arr_end(w);
        rcp_jw_obj_end(w);
        rcp_free(idx);
        rcp_free(val);
        if ((rc = call_checkpoint(c, (double)(i + 1) / in->n, "embed")))
            return call_fail(c, rc, NULL, NULL, "embed/sparse stopped");
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    return 0;
}

/* §7.5 embed/multi {inputs, kind?, encoding?} -> {matrices, dimension}.
** Under f32-base64 each row is one blob of dimension x 4 bytes. */
static int m_embed_multi(void *ud, rcp_call *c)
{
    const rcp_model *m = ((const builtin *)ud)->model;
    rcp_jw *w = call_w(c);
    const rcp_json *in;
    const char *field, *text;
    size_t d = rcp_model_multi_dim(m), i, j, rows, len;
    float *mat;
    char *b64;
    int kind, strict, enc, rc;
    if ((rc = get_inputs(c, &in, &field, EMBED_BATCH_LIMIT))
        || (rc = get_kind(c, &kind)) || (rc = get_strict(c, &strict))
        || (rc = get_encoding(c, strict, &enc)))
        return rc;
    if (!(b64 = rcp_arena_alloc(call_arena(c), rcp_vec_b64_len(d) + 1)))
        return call_oom(c);
    rcp_jw_obj(w);
    rcp_jw_key(w, "matrices");
    rcp_jw_arr(w);
    for (i = 0; i < in->n; i++) {
        content_text(c, &in->kids[i], field, &text, &len);
        if (rcp_model_embed_multi(m, text, len, kind, &mat, &rows) != 0)
            return call_oom(c);
        rcp_jw_arr(w);
        for (j = 0; j < rows; j++)
            write_vector(c, mat + j * d, d, enc, b64);
        rcp_jw_arr_end(w);
        rcp_free(mat);
        if ((rc = call_checkpoint(c, (double)(i + 1) / in->n, "embed")))
            return call_fail(c, rc, NULL, NULL, "embed/multi stopped");
    }
    end_vectors(w, enc, d);
    return 0;
}

/* MARK: - §7.6 rerank */

static const char *const rerank_methods[] = { "cross-encoder", "colbert" };
static const int rerank_ids[] = { RCP_RERANK_CROSS, RCP_RERANK_COLBERT };

/* rerank.method (default cross-encoder) and rerank.model (none offered),
** for the rerank method and for retrieve's inline rerank. */
static int get_rerank_method(rcp_call *c, const rcp_json *obj,
                             const char *prefix, int strict, int *method)
{
    char field[32], mfield[32];
    const rcp_json *model;
    int i = 0, rc;
    snprintf(field, sizeof field, "%smethod", prefix);
    snprintf(mfield, sizeof mfield, "%smodel", prefix);
    if ((rc = call_enum(c, obj, field, rerank_methods, 2, strict,
                        &i))
        || (rc = call_str(c, obj, mfield, &model)))
        return rc;
    *method = rerank_ids[i];
    return model ? call_unsupported(c, strict, mfield, "no rerank models are "
                                    "advertised") : 0;
}

/* One passage: a string, a text Content block or, in the legacy
** documents shape, an object with a string text. */
static int passage_text(rcp_call *c, const rcp_json *v, const char *field,
                        int legacy, const char **text, size_t *len)
{
    const rcp_json *t = v->type == RCP_JSON_OBJECT ? proto_get(v, "text")
                                                   : NULL;
    if (legacy && t && !proto_get(v, "type") && t->type == RCP_JSON_STRING) {
        *text = t->s;
        *len = t->n;
        return 0;
    }
    return content_text(c, v, field, text, len);
}

/* Scores for every passage, a chunk at a time with a checkpoint between
** (cancel, deadline, progress). */
static int score_passages(const builtin *b, rcp_call *c, int method,
                          const char *q, size_t ql, const char **texts,
                          const size_t *lens, size_t n, double *scores)
{
    size_t i, k;
    int rc;
    for (i = 0; i < n; i += k) {
        k = n - i < RERANK_CHUNK ? n - i : RERANK_CHUNK;
        if (rcp_model_rerank(b->model, method, q, ql, texts + i,
                             lens + i, k, scores + i) != 0)
            return call_oom(c);
        if ((rc = call_checkpoint(c, (double)(i + k) / n, "rerank")))
            return call_fail(c, rc, NULL, NULL, "rerank stopped");
    }
    return 0;
}

/* A score and the position it came from, for deterministic sorts. */
typedef struct ranked {
    double score;
    size_t pos;
} ranked;

/* Best first; ties by the lower position (§7.7.1 determinism). */
static int by_rank(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* order[0..n) = the positions of sc sorted best first. */
static int rank_order(rcp_arena *a, const double *sc, size_t n, size_t *order)
{
    ranked *r = rcp_arena_alloc(a, (n + 1) * sizeof *r);
    size_t i;
    if (!r)
        return -1;
    for (i = 0; i < n; i++) {
        r[i].score = sc[i];
        r[i].pos = i;
    }
    qsort(r, n, sizeof *r, by_rank);
    for (i = 0; i < n; i++)
        order[i] = r[i].pos;
    return 0;
}

/* §17.2 usage.latencyMs: since t0, to the microsecond. */
static void write_latency(rcp_jw *w, double t0)
{
    proto_write_ms(w, "latencyMs", proto_now_ms() - t0);
}

/* §17.2 usage on a rerank result: every passage was a candidate and was
** scored, and the time it took. */
static void write_rerank_usage(rcp_jw *w, size_t n, double t0)
{
    rcp_jw_key(w, "usage");
    rcp_jw_obj(w);
    rcp_jw_key(w, "candidates");
    rcp_jw_int(w, (int64_t)n);
    rcp_jw_key(w, "reranked");
    rcp_jw_int(w, (int64_t)n);
    write_latency(w, t0);
    rcp_jw_obj_end(w);
}

static void write_rerank_result(rcp_call *c, int legacy, const double *sc,
                                const size_t *order, size_t n, size_t top,
                                double t0)
{
    rcp_jw *w = call_w(c);
    size_t i;
    rcp_jw_obj(w);
    if (legacy) {   /* spec/README.md: {results: [{index, score}]} */
        rcp_jw_key(w, "results");
        rcp_jw_arr(w);
        for (i = 0; i < top; i++) {
            rcp_jw_obj(w);
            rcp_jw_key(w, "index");
            rcp_jw_int(w, (int64_t)order[i]);
            rcp_jw_key(w, "score");
            rcp_jw_double(w, sc[order[i]]);
            rcp_jw_obj_end(w);
        }
        rcp_jw_arr_end(w);
    } else {        /* §7.6: scores[i] for passages[i]; order best first */
        rcp_jw_key(w, "scores");
        rcp_jw_arr(w);
        for (i = 0; i < n; i++)
            rcp_jw_double(w, sc[i]);
        rcp_jw_arr_end(w);
        rcp_jw_key(w, "order");
        rcp_jw_arr(w);
        for (i = 0; i < top; i++)
            rcp_jw_int(w, (int64_t)order[i]);
        rcp_jw_arr_end(w);
    }
    write_rerank_usage(w, n, t0);
    rcp_jw_obj_end(w);
}

/* §7.6 rerank {query, passages, method?, topN?} -> {scores, order}, and
** the legacy {query, documents, topN} -> {results} shape. */
static int m_rerank(void *ud, rcp_call *c)
{
    const rcp_json *ps = proto_get(call_params(c), "passages");
    const char *field = "passages", *q, **texts;
    size_t ql, i, *order, *lens;
    int legacy = 0, method, strict, rc;
    int64_t top;
    double *sc, t0 = proto_now_ms();
    char f[40];
    if (!ps && (ps = proto_get(call_params(c), "documents")) != NULL) {
        field = "documents";
        legacy = 1;
    }
    if ((rc = get_query_text(c, &q, &ql)))
        return rc;
    if (!ps || ps->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, field, NULL,
                         "%s must be an array of strings", field);
    if (ps->n > RERANK_MAX)    /* §4.7, §15.5: maxCandidates */
        return call_fail(c, RCP_INVALID_PARAMS, field, NULL, "%lu passages "
                         "exceed rerank.maxCandidates %d",
                         (unsigned long)ps->n, RERANK_MAX);
    texts = rcp_arena_alloc(call_arena(c), (ps->n + 1) * sizeof *texts);
    lens = rcp_arena_alloc(call_arena(c), (ps->n + 1) * sizeof *lens);
    order = rcp_arena_alloc(call_arena(c), (ps->n + 1) * sizeof *order);
    sc = rcp_arena_alloc(call_arena(c), (ps->n + 1) * sizeof *sc);
    if (!texts || !lens || !order || !sc)
        return call_oom(c);
    for (i = 0; i < ps->n; i++) {
        snprintf(f, sizeof f, "%s[%lu]", field, (unsigned long)i);
        if ((rc = passage_text(c, &ps->kids[i], f, legacy, &texts[i],
                               &lens[i])))
            return rc;
    }
    if ((rc = get_strict(c, &strict))
        || (rc = get_rerank_method(c, call_params(c), "", strict, &method))
        || (rc = call_int(c, call_params(c), "topN", 1,
                          (int64_t)RCP_INT53_MAX, (int64_t)ps->n, &top))
        || (rc = score_passages(ud, c, method, q, ql, texts, lens, ps->n,
                                sc)))

        return rc;
    if (rank_order(call_arena(c), sc, ps->n, order) != 0)
        return call_oom(c);
    write_rerank_result(c, legacy, sc, order, ps->n,
                        (size_t)top < ps->n ? (size_t)top : ps->n, t0);
    return 0;
}

/* MARK: - §7.10, §7.11 index/add and index/delete */

/* The most an index/add result {ids, chunks} for docs can take: an id is
** written at most 6 bytes per byte (\u escapes), a minted one in 32. */
static size_t add_answer_bytes(const rcp_json *docs)
{
    size_t i, n = 64;
    for (i = 0; i < docs->n; i++) {
        const rcp_json *id = rcp_json_get(&docs->kids[i], "id");
        n += id && id->type == RCP_JSON_STRING ? 6 * id->n + 3 : 32;
    }
    return n;
}

/* §7.7.1 the index version: the store's when documents are durable (it
** survives restarts), else the model's.  The two move together once the
** server runs, so the store's is the model's plus a fixed offset (taken
** at start-up), and a pinned version maps back to the model's. */
static uint64_t index_version(const builtin *b)
{
    return rcp_model_version(b->model) + b->voff;
}

/* §7.10, §13.1: an acknowledged write is on disk before its response is
** written.  A failed fsync leaves the store refusing writes until it is
** reopened, so the error is BackendUnavailable. */
/* §12.2: -32010 is retryable while the store still takes writes (no room
** on the disk: later writes can succeed); after a failed fsync it refuses
** every write until it is reopened, so an identical retry cannot succeed
** (§12.1 retryable, store.c case F). */
static int store_failed(const builtin *b, rcp_call *c, int code)
{
    rcp_store_info si;
    if (code != RCP_BACKEND_UNAVAILABLE || !b->store)
        return code;
    rcp_store_stat(b->store, &si);
    return call_retryable(c, code, !si.failed);
}

static int commit_write(const builtin *b, rcp_call *c)
{
    if (!b->store || rcp_store_commit(b->store) == 0)
        return 0;
    return store_failed(b, c, call_fail(c, RCP_BACKEND_UNAVAILABLE, NULL,
                        NULL, "the write could not be made durable: %s",
                        rcp_store_error(b->store)));
}

static uint64_t fnv1a(uint64_t h, const char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h;
}

/* The write's identity for §7.10 idempotency keys: documents + flags.
** A tree hash allocates nothing, so it cannot silently come out wrong. */
static uint64_t add_fingerprint(rcp_call *c)
{
    static const char *const keys[] = { "documents", "chunk", "contextual" };
    uint64_t h = 14695981039346656037u;
    size_t i;
    for (i = 0; i < 3; i++)
        h = fnv1a(rcp_json_hash(h, proto_get(call_params(c), keys[i])), "|", 1);
    return h;
}

/* The bytes meta takes as stored (its compact serialisation). */
static int meta_bytes(const rcp_json *meta, size_t *n)
{
    rcp_buf b;
    rcp_jw w;
    int oom;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_value(&w, meta);
    *n = b.len;
    oom = b.oom;
    rcp_buf_free(&b);
    return oom ? -1 : 0;
}

/* The §8 table: the engine's definition (rcp_model_value_of), the one
** documents are read by and filter values are built with. */
static int value_fits(const rcp_field *f, const rcp_json *v)
{
    rcp_model_value x;
    return rcp_model_value_of(f->type, v, &x) == 0;
}

int rcp_field_accepts(const rcp_field *f, const rcp_json *v)
{
    size_t i;
    if (v->type == RCP_JSON_NULL)
        return 1;               /* null is absent (§4.6) */
    if (v->type != RCP_JSON_ARRAY)
        return value_fits(f, v);
    for (i = 0; i < v->n; i++)  /* an array of the type, element-wise */
        if (!value_fits(f, &v->kids[i]))
            return 0;
    return 1;
}

/* §8 issue 12: every declared field in meta holds a value of its type,
** so a filter never meets a value it cannot compare. */
static int check_meta_fields(const builtin *b, rcp_call *c,
                             const rcp_json *meta, size_t i)
{
    static const char *const types[] = { "keyword (a string)",
        "text (a string)", "int (a number)", "float (a number)",
        "bool (true or false)", "date (RFC 3339 or epoch milliseconds)" };
    char f[RCP_STORE_MAX_FIELD_NAME + 64];
    const rcp_json *v;
    size_t k, j;
    for (k = 0; k < b->nfields; k++) {
        const rcp_field *fd = &b->fields[k];
        for (j = 0, v = NULL; j < meta->n && !v; j++)
            if (meta->kids[j].keylen == fd->namelen
                && !memcmp(meta->kids[j].key, fd->name, fd->namelen)
                && !rcp_field_accepts(fd, &meta->kids[j]))
                v = &meta->kids[j];
        if (!v)
            continue;
        snprintf(f, sizeof f, "documents[%lu].meta.%.*s", (unsigned long)i,
                 (int)fd->namelen, fd->name);
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be %s, or "
                         "an array of them: the field is declared so (§8)",
                         f, types[fd->type]);
    }
    return 0;
}

/* Check one document {id?: string, text: string, meta?: object}, each
** within its cap: what is kept in memory and on disk is bounded. */
static int check_document(const builtin *b, rcp_call *c, const rcp_json *d,
                          size_t i)
{
    char f[64];
    const rcp_json *v;
    size_t n;
    snprintf(f, sizeof f, "documents[%lu]", (unsigned long)i);
    if (d->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be an object",
                         f);
    snprintf(f, sizeof f, "documents[%lu].id", (unsigned long)i);
    if ((v = proto_get(d, "id")) && v->type != RCP_JSON_STRING)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be a string",
                         f);
    if (v && v->n > RCP_MAX_ID_BYTES)
        return call_too_big(c, f, v->n, RCP_MAX_ID_BYTES);
    snprintf(f, sizeof f, "documents[%lu].text", (unsigned long)i);
    if (!(v = proto_get(d, "text")) || v->type != RCP_JSON_STRING)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be a string",
                         f);
    if (v->n > RCP_MAX_TEXT_BYTES)
        return call_too_big(c, f, v->n, RCP_MAX_TEXT_BYTES);
    snprintf(f, sizeof f, "documents[%lu].meta", (unsigned long)i);
    if ((v = proto_get(d, "meta")) && v->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be an object",
                         f);
    if (v && meta_bytes(v, &n) != 0)
        return call_oom(c);
    if (v && n > RCP_MAX_META_BYTES)
        return call_too_big(c, f, n, RCP_MAX_META_BYTES);
    return v ? check_meta_fields(b, c, v, i) : 0;
}

/* A fresh id no live document has: "rcp-<n>". */
static size_t mint_id(builtin *b, char *out, size_t cap)
{
    size_t n;
    do
        n = (size_t)snprintf(out, cap, "rcp-%llu",
                             (unsigned long long)++b->minted);
    while (rcp_model_find(b->model, out, n) >= 0);
    return n;
}

/* Upsert into the store when there is one, else into the model; ck is a
** chunk's link to its document (§7.10), NULL for a whole document. */
static int put_doc(builtin *b, rcp_call *c, const char *id, size_t idn,
                   const char *text, size_t n, const char *meta, size_t mn,
                   const rcp_model_chunkref *ck)
{
    rcp_store *st = b->store;
    if (st ? rcp_store_add_from(st, id, idn, text, n, meta, mn, ck,
                                &b->writer)
        : rcp_model_add_from(b->model, id, idn, text, n, meta, mn, ck,
                             &b->writer))
        return store_failed(b, c, call_fail(c, st ? RCP_BACKEND_UNAVAILABLE
                            : RCP_INTERNAL_ERROR, NULL, NULL, "adding a "
                            "document: %s", st ? rcp_store_error(st)
                            : "out of memory"));
    return 0;
}

/* Delete through the store when there is one; *removed 1 when it was. */
static int del_doc(builtin *b, rcp_call *c, const char *id, size_t idn,
                   int *removed)
{
    rcp_store *st = b->store;
    if (!st) {
        *removed = rcp_model_delete(b->model, id, idn) == 1;
        return 0;
    }
    if (rcp_store_delete(st, id, idn, removed) != 0)
        return store_failed(b, c, call_fail(c, RCP_BACKEND_UNAVAILABLE,
                            NULL, NULL, "deleting: %s", rcp_store_error(st)));
    return 0;
}

/* §7.10 server-side chunks are documents "<id>#<i>" that the engine links
** to their document (rcp_model_chunkref: document, index, byte span),
** made by rcp_store_add_chunked (store.c: one definition for index/add
** and --corpus --chunk).  The link is never kept in meta, so a client's
** meta -- an "x-rcp-chunk" key included -- is data, stored and returned
** verbatim (§15.2, §15.4), and every walk over a document's chunks visits
** only chunks that exist. */

/* The failure of a chunk write through the store or the model. */
static int chunk_failed(const builtin *b, rcp_call *c)
{
    if (!b->store)
        return call_oom(c);
    return store_failed(b, c, call_fail(c, RCP_BACKEND_UNAVAILABLE, NULL,
                        NULL, "writing chunks: %s",
                        rcp_store_error(b->store)));
}

/* Remove the live chunks of document id numbered from on. */
static int drop_chunks(builtin *b, rcp_call *c, const char *id, size_t idn,
                       uint32_t from, int *any)
{
    return rcp_store_drop_chunks(b->store, b->model, id, idn, from, any)
           ? chunk_failed(b, c) : 0;
}

/* §7.10 chunk:true: the text as chunks "<id>#0".."<id>#n-1", each with
** the document's meta, upserted in order (identical chunks change
** nothing, so a repeat is observationally identical), then any stale
** chunks and a whole-document copy removed. */
static int add_chunks(builtin *b, rcp_call *c, const char *id, size_t idn,
                      const rcp_json *text, const char *meta, size_t mn,
                      size_t *count)
{
    return rcp_store_add_chunked(b->store, b->model, id, idn, text->s,
                                 text->n, meta, mn, &b->writer, count)
           ? chunk_failed(b, c) : 0;
}

/* Upsert one checked document (as chunks when asked); writes its id. */
static int add_document(builtin *b, rcp_call *c, const rcp_json *d,
                        int chunk, size_t *count)
{
    const rcp_json *id = proto_get(d, "id"), *text = proto_get(d, "text");
    const rcp_json *meta = proto_get(d, "meta");
    char minted[32];
    const char *ids = id ? id->s : minted;
    size_t idn = id ? id->n : mint_id(b, minted, sizeof minted);
    rcp_buf mb;
    rcp_jw mw;
    int rc, any = 0;
    rcp_buf_init(&mb);
    if (meta) {
        rcp_jw_init(&mw, &mb);
        rcp_jw_value(&mw, meta);
    }
    if (mb.oom)
        rc = call_oom(c);
    else if (chunk)
        rc = add_chunks(b, c, ids, idn, text, mb.data, mb.len, count);
    else if ((rc = put_doc(b, c, ids, idn, text->s, text->n, mb.data,
                           mb.len, NULL)) == 0)  /* and its old chunks go */
        rc = drop_chunks(b, c, ids, idn, 0, &any);
    rcp_buf_free(&mb);
    if (rc == 0)
        rcp_jw_str(call_w(c), ids, idn);
    return rc;
}

/* §6 index {writable: false} (--read-only): no write method is served.
** -32003, as for a method whose capability is not advertised: §7.10 is
** gated by `index` with writable:true, which this server does not
** advertise (README, Decisions). */
static int refuse_read_only(const builtin *b, rcp_call *c)
{
    if (!b->read_only)
        return 0;
    return call_fail(c, RCP_CAPABILITY_MISSING, NULL, NULL, "this server is "
                     "read-only (index.writable is false): it takes no "
                     "index/add or index/delete");
}

static int id_order(const void *a, const void *b)
{
    const rcp_json *x = *(const rcp_json *const *)a;
    const rcp_json *y = *(const rcp_json *const *)b;
    int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return c ? c : x->n < y->n ? -1 : x->n > y->n;
}

/* How many distinct documents docs names: a repeated explicit id is one
** document (the last one wins, §7.10 upsert), a minted id always a new
** one.  -1 out of memory. */
static long distinct_docs(rcp_call *c, const rcp_json *docs)
{
    const rcp_json **ids, *id;
    size_t i, n = 0;
    long d;
    if (!(ids = rcp_arena_alloc(call_arena(c), docs->n * sizeof *ids + 1)))
        return -1;
    for (i = 0; i < docs->n; i++)
        if ((id = proto_get(&docs->kids[i], "id")) != NULL)
            ids[n++] = id;
    qsort(ids, n, sizeof *ids, id_order);
    d = (long)(docs->n - n);
    for (i = 0; i < n; i++)
        d += i == 0 || id_order(&ids[i - 1], &ids[i]) != 0;
    return d;
}

/* §7.10 index/add {documents, chunk?, contextual?} -> {ids}.  Every
** document is checked before any is written, so a bad one writes nothing.
** Once writing starts the request runs to completion: a cancel then gets
** the normal result (§7.14 allows it), never a half-applied write. */
static int m_index_add(void *ud, rcp_call *c)
{
    builtin *b = ud;
    rcp_jw *w = call_w(c);
    const rcp_json *docs = proto_get(call_params(c), "documents"), *key = NULL;
    const rcp_json *meta = proto_get(call_params(c), "_meta");
    int strict, rc, chunk, ctx;
    uint64_t fp = 0;
    size_t i, start, chunks = 0, len;
    long distinct;
    const char *result;
    const struct store_idem_entry *e;
    if ((rc = refuse_read_only(b, c)) != 0)
        return rc;
    if (!docs || docs->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, "documents", NULL,
                         "documents must be an array of {id?, text, meta?}");
    if (docs->n > INDEX_BATCH_LIMIT)
        return call_fail(c, RCP_INVALID_PARAMS, "documents", NULL, "%lu "
                         "documents exceed the limit of %d per call",
                         (unsigned long)docs->n, INDEX_BATCH_LIMIT);
    for (i = 0; i < docs->n; i++)
        if ((rc = check_document(b, c, &docs->kids[i], i)) != 0)
            return rc;
    if ((rc = get_strict(c, &strict))
        || (rc = call_bool(c, call_params(c), "chunk", 0, &chunk))
        || (rc = call_bool(c, call_params(c), "contextual", 0, &ctx)))
        return rc;
    if (ctx && (rc = call_unsupported(c, strict, "contextual", "contextual "
                                      "chunks are not advertised")))
        return rc;
    if (meta && (rc = call_str(c, meta, "_meta.idempotencyKey", &key)))
        return rc;
    if (key && key->n > RCP_MAX_IDEM_KEY_BYTES)
        return call_too_big(c, "_meta.idempotencyKey", key->n,
                            RCP_MAX_IDEM_KEY_BYTES);
    if ((distinct = distinct_docs(c, docs)) < 0)
        return call_oom(c);
    if (key) {
        fp = add_fingerprint(c);
        if ((e = store_idem_find(b->idem, key->s, key->n)) != NULL) {
            if (e->fp != fp)
                return call_fail(c, RCP_CONFLICT, NULL, NULL, "idempotencyKey "
                                 "was used for a different write (§7.10)");
            rcp_jw_raw(w, e->result, e->len);
            return 0;
        }
    }
    if ((rc = call_reserve(c, add_answer_bytes(docs))) != 0)
        return rc;
    start = call_mark(c);
    rcp_jw_obj(w);
    rcp_jw_key(w, "ids");
    rcp_jw_arr(w);
    for (i = 0, rc = 0; i < docs->n && rc == 0; i++) {
        rc = add_document(b, c, &docs->kids[i], chunk, &chunks);
        (void)call_checkpoint(c, (double)(i + 1) / docs->n, "index");
    }
    /* what was applied is made durable even when a later document failed,
    ** so memory and disk never disagree */
    if (rc != 0)
        return commit_write(b, c) ? RCP_BACKEND_UNAVAILABLE : rc;
    rcp_jw_arr_end(w);
    if (chunk) {
        rcp_jw_key(w, "chunks");
        rcp_jw_int(w, (int64_t)chunks);
    }
    if ((size_t)distinct < docs->n) {  /* repeated ids: the last one won */
        rcp_jw_key(w, "x-rcp-distinct");
        rcp_jw_int(w, distinct);
    }
    rcp_jw_obj_end(w);
    result = key ? call_since(c, start, &len) : NULL;
    /* a key is logged in the commit of its write (durable with it) and
    ** remembered once that commit is on disk */
    if (result && b->store && store_log_idem(b->store, key->s, key->n, fp,
                                             result, len) != 0)
        result = NULL;
    if (commit_write(b, c) != 0)
        return RCP_BACKEND_UNAVAILABLE;
    if (result && store_idem_put(b->idem, key->s, key->n, fp, result, len))
        return 0;   /* not remembered (out of memory): a SHOULD, not a MUST */
    return 0;
}

/* §7.11 index/delete {ids} -> {deleted}: idempotent; deleted counts only
** documents this call removed. */
static int m_index_delete(void *ud, rcp_call *c)
{
    builtin *b = ud;

    const rcp_json *ids = proto_get(call_params(c), "ids");
    size_t i;
    int64_t deleted = 0;
    char f[32];
    int rc;
    if ((rc = refuse_read_only(b, c)) != 0)
        return rc;
    if (!ids || ids->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, "ids", NULL,
                         "ids must be an array of strings");
    if (ids->n > INDEX_BATCH_LIMIT)
        return call_fail(c, RCP_INVALID_PARAMS, "ids", NULL, "%lu ids exceed "
                         "the limit of %d per call", (unsigned long)ids->n,
                         INDEX_BATCH_LIMIT);
    for (i = 0; i < ids->n; i++) {
        snprintf(f, sizeof f, "ids[%lu]", (unsigned long)i);
        if (ids->kids[i].type != RCP_JSON_STRING)
            return call_fail(c, RCP_INVALID_PARAMS, f, NULL,
                             "%s must be a string", f);
        /* longer than any id index/add takes: not an id (§12 -32602) */
        if (ids->kids[i].n > RCP_MAX_ID_BYTES)
            return call_too_big(c, f, ids->kids[i].n, RCP_MAX_ID_BYTES);
    }
    for (i = 0, rc = 0; i < ids->n && rc == 0; i++) {
        int whole = 0, parts = 0;
        const rcp_json *id = &ids->kids[i];
        if ((rc = del_doc(b, c, id->s, id->n, &whole)) == 0)
            rc = drop_chunks(b, c, id->s, id->n, 0, &parts);
        deleted += whole || parts;    /* a chunked document counts once */
    }
    if (commit_write(b, c) != 0 || rc != 0)
        return rc ? rc : RCP_BACKEND_UNAVAILABLE;
    rcp_jw_obj(call_w(c));
    rcp_jw_key(call_w(c), "deleted");
    rcp_jw_int(call_w(c), deleted);
    rcp_jw_obj_end(call_w(c));

    return 0;
}

/* MARK: - §8 Metadata filtering (used by §7.7 retrieve) */

/* The protocol's side of a filter: the request's JSON is checked against
** §8 (shapes, advertised fields and operators, value types) with errors
** naming the clause, and built once into the engine's tree
** (rcp_model_filter, in the call arena) of typed values.  The engine
** evaluates it against the values it read from each document's meta when
** the document was added (model.c design note 15), so no meta is parsed
** per candidate and a filtered dense query keeps its SIMD scan. */

static const rcp_field *find_field(const builtin *b, const rcp_json *name)
{
    size_t i;
    for (i = 0; i < b->nfields; i++)
        if (b->fields[i].namelen == name->n
            && memcmp(b->fields[i].name, name->s, name->n) == 0)
            return &b->fields[i];
    return NULL;
}

/* One filter value of field f as the engine's typed value: the §8 table
** (rcp_model_value_of, the definition documents are read by, too); the
** -32602 naming "filter.<field>" when it does not fit. */
static int filter_value(rcp_call *c, const rcp_field *f, const rcp_json *v,
                        const char *path, const char *which,
                        rcp_model_value *out)
{
    if (rcp_model_value_of(f->type, v, out) == 0)
        return 0;
    return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "%s does not fit "
                     "the field's type %s (§8)", which, field_types[f->type]);
}

/* §8 value shapes per operator, into out->values (call arena); -32602
** naming "filter.<field>". */
static int leaf_values(rcp_call *c, const rcp_field *f, const rcp_json *v,
                       const char *path, rcp_model_filter *out)
{
    rcp_model_value *vals;
    size_t i;
    int rc, op = out->op;
    if (op == RCP_OP_EXISTS && (!v || (v->type != RCP_JSON_TRUE
                                       && v->type != RCP_JSON_FALSE)))
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "exists takes "
                         "true or false (§8)");
    if (op >= RCP_OP_GT && op <= RCP_OP_LTE && f->type != RCP_FIELD_INT
        && f->type != RCP_FIELD_FLOAT && f->type != RCP_FIELD_DATE)
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "%s applies to "
                         "int, float and date fields only (§8)",
                         filter_ops[op]);
    if (!v)
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "%s needs a "
                         "value (§8)", filter_ops[op]);
    if ((op == RCP_OP_IN || op == RCP_OP_NIN) && v->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "%s takes an "
                         "array of scalars (§8)", filter_ops[op]);
    out->nvalues = op == RCP_OP_IN || op == RCP_OP_NIN ? v->n : 1;
    vals = rcp_arena_alloc(call_arena(c), (out->nvalues ? out->nvalues : 1)
                           * sizeof *vals);
    if (!vals)
        return call_oom(c);
    out->values = vals;
    if (op == RCP_OP_EXISTS) {
        memset(vals, 0, sizeof *vals);
        vals->ms = v->type == RCP_JSON_TRUE;  /* present or absent */
        return 0;
    }
    if (op != RCP_OP_IN && op != RCP_OP_NIN)
        return filter_value(c, f, v, path, "the value", vals);
    for (i = 0; i < v->n; i++)
        if ((rc = filter_value(c, f, &v->kids[i], path, "a value",
                               &vals[i])) != 0)
            return rc;
    return 0;
}

static int build_filter(const builtin *b, rcp_call *c, const rcp_json *v,
                        rcp_model_filter *out);

/* {"and": [...]} / {"or": [...]}: nest arbitrarily; empty is -32602. */
static int build_list(const builtin *b, rcp_call *c, const rcp_json *list,
                      rcp_model_filter *out)
{
    rcp_model_filter *kids;
    size_t i;
    int rc;
    if (list->type != RCP_JSON_ARRAY || list->n == 0)
        return call_fail(c, RCP_INVALID_PARAMS, "filter", NULL, "and/or take a "
                         "non-empty array of clauses (§8)");
    if (!(kids = rcp_arena_alloc(call_arena(c), list->n * sizeof *kids)))
        return call_oom(c);
    out->kids = kids;
    out->nkids = list->n;
    for (i = 0; i < list->n; i++)
        if ((rc = build_filter(b, c, &list->kids[i], &kids[i])) != 0)
            return rc;
    return 0;
}

/* A leaf {field, op, value}: §8 and §15.4 -- names are checked against
** the advertised set, never used to reach anything else. */
static int build_leaf(const builtin *b, rcp_call *c, const rcp_json *v,
                      rcp_model_filter *out)
{
    const rcp_json *name = proto_get(v, "field"), *op = proto_get(v, "op");
    const rcp_field *f;
    char path[96];
    int i;
    if (!name || name->type != RCP_JSON_STRING || !op
        || op->type != RCP_JSON_STRING)
        return call_fail(c, RCP_INVALID_PARAMS, "filter", NULL, "a clause is "
                         "{field, op, value} or and/or/not (§8)");
    snprintf(path, sizeof path, "filter.%.*s",
             (int)(name->n > 80 ? 80 : name->n), name->s);
    if (!(f = find_field(b, name)))
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "field is not in "
                         "the advertised filter.fields (§8)");
    if ((i = proto_pick(op, filter_ops, NOPS)) < 0)
        return call_fail(c, RCP_OPTION_UNSUPPORTED, NULL, "filter.op",
                         "operator '%.*s' is not in filter.operators (§8)",
                         (int)(op->n > 16 ? 16 : op->n), op->s);
    out->kind = RCP_FILTER_LEAF;
    out->field = b->fno[f - b->fields];
    out->op = i;
    return leaf_values(c, f, proto_get(v, "value"), path, out);
}

/* A clause, whichever of the four forms (the JSON parser bounds its
** nesting at RCP_JSON_MAX_DEPTH, within RCP_MODEL_FILTER_DEPTH). */
static int build_filter(const builtin *b, rcp_call *c, const rcp_json *v,
                        rcp_model_filter *out)
{
    const rcp_json *and_ = proto_get(v, "and"), *or_ = proto_get(v, "or");
    const rcp_json *not_ = proto_get(v, "not");
    rcp_model_filter *kid;
    int forms;
    memset(out, 0, sizeof *out);
    if (v->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, "filter", NULL, "a filter "
                         "clause must be an object (§8)");
    forms = !!and_ + !!or_ + !!not_ + !!proto_get(v, "field");
    if (forms != 1)
        return call_fail(c, RCP_INVALID_PARAMS, "filter", NULL, "a clause is "
                         "exactly one of and, or, not, or {field, op, value} "
                         "(§8)");
    if (and_ || or_) {
        out->kind = and_ ? RCP_FILTER_AND : RCP_FILTER_OR;
        return build_list(b, c, and_ ? and_ : or_, out);
    }
    if (not_) {
        if (!(kid = rcp_arena_alloc(call_arena(c), sizeof *kid)))
            return call_oom(c);
        out->kind = RCP_FILTER_NOT;
        out->kids = kid;
        out->nkids = 1;
        return build_filter(b, c, not_, kid);
    }
    return build_leaf(b, c, v, out);
}

/* MARK: - §7.7 retrieve */

/* The parsed retrieve request beyond what the engine's query holds; it is
** also the engine's callback context (q.ud). */
typedef struct rq {
    rcp_model_query q;
    rcp_call *c;
    const builtin *b;
    int     strict, include_text, include_vectors, enc;
    double  min_score;
    int64_t budget;          /* §7.7.2 tokenBudget; 0 = none */
    size_t  offset;          /* §10 page start */
    uint64_t fp;             /* request fingerprint for cursors */
    const rcp_field *recency; /* §7.7 recency date field, or NULL */
    double   half_life;      /* days */
    double  *decay;          /* per hit, when recency is on */
    uint64_t served;         /* §7.7.1 the index version served */
    int      sent_partial;   /* §9 partial.hits sent once, after recall */
    size_t   k;              /* the page size asked for */
    int      unit;           /* §7.7.2 UNIT_* */
    size_t   recalled;       /* §7.7 usage.candidates: what recall found */
    int      rewrite;        /* §7.7 rewrite: TX_*, or -1 */
    txout    tx;             /* what it gave */
    const char *searched;    /* rewrittenQuery: the text searched */
    size_t   searchedlen;
    const rcp_json *session_id;  /* §7.7.3 sessionId, or NULL */
    session *sess;           /* its state (dedup), or NULL */
} rq;


/* The document behind a hit: as of the pinned snapshot when one is. */
static int view_doc(const rq *r, uint32_t docno, rcp_model_docview *d)
{
    const rcp_model *m = r->b->model;
    return r->q.pinned ? rcp_model_doc_at(m, docno, r->q.version, d)
                       : rcp_model_doc(m, docno, d);
}

/* §9 partial.hits: the recall stage's best candidates, id and score. */
typedef struct partial_hits {
    const rq *r;
    const rcp_model_hit *h;
    size_t n;
} partial_hits;

static void write_partial(rcp_jw *w, const void *ud)
{
    const partial_hits *p = ud;
    rcp_model_docview d;
    size_t i;
    rcp_jw_obj(w);
    rcp_jw_key(w, "hits");
    rcp_jw_arr(w);
    for (i = 0; i < p->n; i++) {
        if (view_doc(p->r, p->h[i].doc, &d) != 0)
            continue;
        rcp_jw_obj(w);
        rcp_jw_key(w, "id");
        rcp_jw_str(w, d.id, d.idlen);
        rcp_jw_key(w, "score");
        rcp_jw_double(w, p->h[i].score);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
}

/* The engine's checkpoint: cancellation, deadline, progress (§7.14,
** §13.1, §9), with the candidates once recall is done.  Returns the RCP
** error code that stops the search, which rcp_model_search passes back. */
static int search_checkpoint(void *ud, double progress, const char *stage,
                             const rcp_model_hit *partial, size_t n)
{
    rq *r = ud;
    partial_hits ph;
    if (partial)                /* recall is done: its effective count */
        r->recalled = n;
    if (!partial || r->sent_partial)
        return call_checkpoint(r->c, progress, stage);
    r->sent_partial = 1;
    ph.r = r;
    ph.h = partial;
    ph.n = n < r->k ? n : r->k;
    return call_progress(r->c, progress, stage, write_partial, &ph);
}

static int get_fusion(rcp_call *c, rq *r)
{
    /* no method is advertised without hybrid; rrfK still sets the RRF
    ** that fuses a rewrite's several queries */
    int nmethods = rcp_model_has_dense_index(r->b->model) ? 3 : 0;
    const rcp_json *f, *w;
    int64_t rrfk;
    int rc;
    if ((rc = call_obj(c, call_params(c), "fusion", &f)) || !f)
        return rc;
    if ((rc = call_enum(c, f, "fusion.method", fusion_names, nmethods,
                        r->strict, &r->q.fusion))
        || (rc = call_int(c, f, "fusion.rrfK", 0, 1000000, 60, &rrfk))
        || (rc = call_num(c, f, "fusion.alpha", 0, 1, 0.5,
                          &r->q.alpha)))
        return rc;
    r->q.rrf_k = (double)rrfk;
    /* a fusion the request names is the §7.7 one, its omitted weights
    ** equal ({"dense":0.5,"sparse":0.5}: only their ratio counts); the
    ** engine's tuned weights are its default when fusion is absent */
    r->q.w_dense = r->q.w_sparse = 1.0;
    if ((rc = call_obj(c, f, "fusion.weights", &w)) || !w)
        return rc;
    if ((rc = call_num(c, w, "fusion.weights.dense", 0, 1e9, 1,

                       &r->q.w_dense)))
        return rc;
    return call_num(c, w, "fusion.weights.sparse", 0, 1e9, 1,
                    &r->q.w_sparse);
}

/* §8 filter: built once per request into the engine's tree, which the
** engine compiles into one bitmap over the documents it searches. */
static int get_filter(rcp_call *c, rq *r)
{
    const rcp_json *f = proto_get(call_params(c), "filter");
    rcp_model_filter *root;
    int rc;
    if (!f)
        return 0;
    if (f->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, "filter", NULL,
                         "filter must be an object (§8)");
    if (!call_offers(c, PROTO_CAP_FILTER))
        return call_unsupported(c, r->strict, "filter", "filter is not "
                                "advertised");
    if (!(root = rcp_arena_alloc(call_arena(c), sizeof *root)))
        return call_oom(c);
    if ((rc = build_filter(r->b, c, f, root)) != 0)
        return rc;
    r->q.filter = root;
    return 0;
}

/* §7.7 recency {field, halfLifeDays}: field must be an advertised date
** field (§4.6: "recency.field references such a field"). */
static int get_recency(rcp_call *c, rq *r)
{
    const rcp_json *rec, *f;
    size_t i;
    int rc;
    if ((rc = call_obj(c, call_params(c), "recency", &rec)) || !rec)
        return rc;
    if ((rc = call_str(c, rec, "recency.field", &f))
        || (rc = call_num(c, rec, "recency.halfLifeDays",
                          1e-9, 1e9, 30, &r->half_life)))
        return rc;
    for (i = 0; i < r->b->nfields; i++)
        if (r->b->fields[i].type == RCP_FIELD_DATE)
            break;
    if (i == r->b->nfields)
        return call_unsupported(c, r->strict, "recency", "no date field is "
                                "advertised, so recency cannot apply");
    r->recency = f ? find_field(r->b, f) : NULL;
    if (!r->recency || r->recency->type != RCP_FIELD_DATE)
        return call_fail(c, RCP_INVALID_PARAMS, "recency.field", NULL,
                         "recency.field must name an advertised date field");
    return 0;
}

/* A size as the request sent it (validated by get_sizes), or -1. */
static int64_t sent_size(const rcp_json *params, const char *name)
{
    int64_t v;
    const rcp_json *p = proto_get(params, name);
    return p && rcp_json_int(p, &v) ? v : -1;
}

/* §3.3, §7.7: "candidateK >= rerank.topN >= k" is a constraint the wire
** carries, judged on the values as sent: a request that breaks it is
** malformed (-32602, error.data.field naming the knob that is too small
** for the one it must cover).  Clamping to maxK and maxCandidates (§12)
** applies to requests that keep it. */
static int funnel_top(rcp_call *c, const rcp_json *rr, int64_t top)
{
    int64_t k = sent_size(call_params(c), "k");
    int64_t ck = sent_size(call_params(c), "candidateK");
    if (!proto_get(rr, "topN"))
        return 0;
    if (top < k)
        return call_fail(c, RCP_INVALID_PARAMS, "rerank.topN", NULL,
                         "rerank.topN (%lld) is below k (%lld): the funnel is "
                         "candidateK >= rerank.topN >= k (§3.3)",
                         (long long)top, (long long)k);
    if (ck >= 0 && ck < top)
        return call_fail(c, RCP_INVALID_PARAMS, "candidateK", NULL,
                         "candidateK (%lld) is below rerank.topN (%lld): the "
                         "funnel is candidateK >= rerank.topN >= k (§3.3)",
                         (long long)ck, (long long)top);
    return 0;
}

/* §7.7 rerank {method?, model?, topN?} | false, and mmr {lambda?}.  The
** funnel (§3.3): k <= topN <= candidateK as sent (funnel_top), each then
** clamped; a topN above the default candidateK raises it. */
static int get_rerank_mmr(rcp_call *c, rq *r)
{
    const rcp_json *rr = proto_get(call_params(c), "rerank"), *mmr;
    int64_t top;
    int rc;
    if (rr && rr->type != RCP_JSON_FALSE) {
        if (rr->type != RCP_JSON_OBJECT)
            return call_fail(c, RCP_INVALID_PARAMS, "rerank", NULL,
                             "rerank must be an object or false");
        if ((rc = get_rerank_method(c, rr, "rerank.", r->strict,
                                    &r->q.rerank))
            || (rc = call_int(c, rr, "rerank.topN", 1,
                              (int64_t)RCP_INT53_MAX,
                              (int64_t)r->q.candidate_k, &top))
            || (rc = funnel_top(c, rr, top)))
            return rc;
        if ((size_t)top > r->q.candidate_k)      /* candidateK not sent */
            r->q.candidate_k = (size_t)(top < RETRIEVE_MAX_K ? top
                                        : RETRIEVE_MAX_K);
        if ((size_t)top > r->q.candidate_k)
            top = (int64_t)r->q.candidate_k;
        if ((size_t)top < r->q.k)
            top = (int64_t)r->q.k;
        r->q.rerank_top = (size_t)(top < RERANK_MAX ? top : RERANK_MAX);
        if (proto_get(rr, "topN") && (size_t)top < (size_t)sent_size(rr,
                                                                 "topN"))
            call_note_add(c, "rerank.topN clamped to %lu",
                          (unsigned long)top);
    }
    if ((rc = call_obj(c, call_params(c), "mmr", &mmr)) || !mmr)
        return rc;
    if ((rc = call_num(c, mmr, "mmr.lambda", 0, 1, 0.5, &r->q.mmr_lambda)))
        return rc;
    if (rcp_model_has_dense_index(r->b->model))
        return 0;
    r->q.mmr_lambda = -1;               /* MMR compares dense vectors */
    return call_unsupported(c, r->strict, "mmr", "mmr is not advertised");
}

/* §7.7.2 unit (chunk, passage or document), level (the corpus is flat:
** 0), modality (text). */
static int get_granularity(rcp_call *c, rq *r)
{
    static const char *const modalities[] = { "text" };
    int mod = 0, rc;
    int64_t level;
    if ((rc = call_enum(c, call_params(c), "unit", unit_names, 3,
                        r->strict, &r->unit))
        || (rc = call_enum(c, call_params(c), "modality", modalities,
                           1, r->strict, &mod))
        || (rc = call_int(c, call_params(c), "level", 0,
                          (int64_t)RCP_INT53_MAX, 0, &level)))
        return rc;
    if (level > 0)
        return call_unsupported(c, r->strict, "level", "the corpus is flat "
                                "(no levels advertised)");
    return 0;
}

/* §7.7 funnel: candidateK >= rerank.topN >= k as sent (a candidateK below
** k is -32602, §3.3), each clamped to maxK (§12). */
static int get_sizes(rcp_call *c, rq *r)
{
    const rcp_json *kv;
    int64_t k, ck, budget;

    int rc;
    if ((rc = call_need(c, call_params(c), "k", &kv))
        || (rc = call_int(c, call_params(c), "k", 1, (int64_t)RCP_INT53_MAX,
                          10, &k))
        || (rc = call_int(c, call_params(c), "candidateK", 1,
                          (int64_t)RCP_INT53_MAX, 100, &ck))
        || (rc = call_int(c, call_params(c), "tokenBudget", 1,
                          (int64_t)RCP_INT53_MAX, 0, &budget)))
        return rc;
    if (proto_get(call_params(c), "candidateK") && ck < k)
        return call_fail(c, RCP_INVALID_PARAMS, "candidateK", NULL,
                         "candidateK (%lld) is below k (%lld): the funnel is "
                         "candidateK >= rerank.topN >= k (§3.3)", (long long)ck,
                         (long long)k);
    r->q.k = (size_t)(k < RETRIEVE_MAX_K ? k : RETRIEVE_MAX_K);
    r->q.candidate_k = (size_t)(ck < RETRIEVE_MAX_K ? ck : RETRIEVE_MAX_K);
    if (k > RETRIEVE_MAX_K)             /* §12: clamped, and said (§7.7) */
        call_note_add(c, "k clamped to maxK %d", RETRIEVE_MAX_K);
    if (ck > RETRIEVE_MAX_K)
        call_note_add(c, "candidateK clamped to maxK %d", RETRIEVE_MAX_K);
    if (r->q.candidate_k < r->q.k)
        r->q.candidate_k = r->q.k;
    r->budget = budget;
    return 0;
}

/* The request's identity for §10 cursors: its params without cursor. */
static uint64_t retrieve_fingerprint(rcp_call *c)
{
    size_t i;
    uint64_t h = 14695981039346656037u;
    for (i = 0; i < call_params(c)->n; i++) {
        const rcp_json *kv = &call_params(c)->kids[i];
        rcp_json key;
        if ((kv->keylen == 6 && memcmp(kv->key, "cursor", 6) == 0)
            || (kv->keylen == 5 && memcmp(kv->key, "_meta", 5) == 0))
            continue;
        memset(&key, 0, sizeof key);
        key.type = RCP_JSON_STRING;
        key.s = kv->key;
        key.n = kv->keylen;
        h = rcp_json_hash(rcp_json_hash(h, &key), kv);
    }
    return h;
}

/* Pin the search to version v ("v<n>" as served): the live index needs no
** pin; an older one must still be kept (§7.7.1), else gone_code. */
static int pin_version(rcp_call *c, rq *r, uint64_t v, int gone_code)
{
    const builtin *b = r->b;
    uint64_t now = index_version(b);
    r->served = v;
    if (v == now)
        return 0;
    if (v < b->voff || v > now
        || !rcp_model_has_version(b->model, v - b->voff))
        return call_retryable(c, call_fail(c, gone_code, NULL, NULL,
                              gone_code == RCP_NOT_FOUND ? "the cursor "
                              "expired: its snapshot is no longer kept (§10, "
                              "§12)" : "snapshot v%llu is not available; "
                              "the live index is v%llu (§7.7.1)",
                              (unsigned long long)v, (unsigned long long)now),
                              0);
    r->q.pinned = 1;
    r->q.version = v - b->voff;
    return 0;
}

/* A number as this server writes it into versions and cursors: digits
** in base 10 or 16 (lower case), no sign, no leading zero, no overflow
** (sscanf would take "+1", " 1" and "-1", and overflow is undefined).
** Advances *p past it; 0 ok, -1 not such a number. */
static int read_number(const char **p, const char *end, unsigned base,
                       uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    for (; s < end; s++) {
        unsigned d = *s >= '0' && *s <= '9' ? (unsigned)(*s - '0')
                   : base == 16 && *s >= 'a' && *s <= 'f'
                   ? (unsigned)(*s - 'a' + 10) : base;
        if (d >= base)
            break;
        if ((s > *p && v == 0) || v > (UINT64_MAX - d) / base)
            return -1;
        v = v * base + d;
    }
    if (s == *p)
        return -1;
    *p = s;
    *out = v;
    return 0;
}

/* Does [*p, end) start with lit?  Advances past it. */
static int read_lit(const char **p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
        return -1;
    *p += n;
    return 0;
}

/* "v<n>" exactly. */
static int parse_version(const rcp_json *iv, uint64_t *ver)
{
    const char *p = iv->s, *end = iv->s + iv->n;
    return read_lit(&p, end, "v") || read_number(&p, end, 10, ver)
        || p != end ? -1 : 0;
}

/* "c1.v<version>.<offset>.<fingerprint, hex>" exactly, with an offset
** this server can have issued: the next page starts below maxK. */
static int parse_cursor(const rcp_json *cur, uint64_t *ver, uint64_t *off,
                        uint64_t *fp)
{
    const char *p = cur->s, *end = cur->s + cur->n;
    return read_lit(&p, end, "c1.v") || read_number(&p, end, 10, ver)
        || read_lit(&p, end, ".") || read_number(&p, end, 10, off)
        || *off >= RETRIEVE_MAX_K || read_lit(&p, end, ".")
        || read_number(&p, end, 16, fp) || p != end ? -1 : 0;
}

/* §7.7.1 indexVersion and §10 cursor.  Versions are "v<n>"; a cursor is
** "c1.<version>.<offset>.<fingerprint>" -- opaque to clients -- and
** pages the snapshot it was issued on, so later writes never shift a
** page; it expires only when that snapshot is no longer kept.  Both are
** read strictly: the numbers in them drive a pin and an offset. */
static int get_snapshot(rcp_call *c, rq *r)
{
    const rcp_json *iv, *cur;
    uint64_t ver, off, fp;
    int rc;
    r->served = index_version(r->b);
    if ((rc = call_str(c, call_params(c), "indexVersion", &iv))
        || (rc = call_str(c, call_params(c), "cursor", &cur)))
        return rc;
    r->fp = retrieve_fingerprint(c);
    if (iv) {
        if (parse_version(iv, &ver) != 0)
            return call_retryable(c, call_fail(c, RCP_BACKEND_UNAVAILABLE,
                                  NULL, NULL, "snapshot '%.*s' is not one "
                                  "this server issued (§7.7.1)", (int)(iv->n
                                  < 100 ? iv->n : 100), iv->s), 0);
        if ((rc = pin_version(c, r, ver, RCP_BACKEND_UNAVAILABLE)))
            return rc;
    }
    if (!cur || cur->n == 0)
        return 0;
    if (parse_cursor(cur, &ver, &off, &fp) != 0 || fp != r->fp)
        return call_fail(c, RCP_INVALID_PARAMS, "cursor", NULL, "not a cursor "
                         "this server issued for this request (§10)");
    r->offset = (size_t)off;
    return pin_version(c, r, ver, RCP_NOT_FOUND);
}

/* §7.7 mode and includeVectors: without a dense index (make tiny) only
** sparse is advertised and there are no stored vectors to include. */
static int get_mode_vectors(rcp_call *c, rq *r)
{
    int dense = rcp_model_has_dense_index(r->b->model), rc;
    r->q.mode = rcp_model_default_mode(r->b->model);
    if ((rc = call_enum(c, call_params(c), "mode", mode_names, 3, r->strict,
                        &r->q.mode))
        || (rc = call_bool(c, call_params(c), "includeVectors", 0,
                           &r->include_vectors)))
        return rc;
    if (dense)
        return 0;
    if (r->q.mode != RCP_MODE_SPARSE) {
        r->q.mode = RCP_MODE_SPARSE;
        if ((rc = call_unsupported(c, r->strict, "mode", "only sparse is "
                                   "advertised: this server has no dense "
                                   "index")))
            return rc;
    }
    if (!r->include_vectors)
        return 0;
    r->include_vectors = 0;
    return call_unsupported(c, r->strict, "includeVectors", "this server "
                            "stores no vectors");
}

/* §7.7 rewrite: a transform (§7.8) retrieve.rewrite advertises, or
** false; under strict false another is noted and not applied. */
static int get_rewrite(rcp_call *c, rq *r)
{
    const rcp_json *v = proto_get(call_params(c), "rewrite");
    int i;
    r->rewrite = -1;
    if (!v || v->type == RCP_JSON_FALSE)
        return 0;
    if (v->type != RCP_JSON_STRING)
        return call_fail(c, RCP_INVALID_PARAMS, "rewrite", NULL, "rewrite "
                         "must be a transform method or false");
    i = proto_pick(v, transform_names, TX_N);
    if (i < 0 || !(r->b->rewrites & (1u << i)))
        return call_unsupported(c, r->strict, "rewrite", "this rewrite is "
                                "not in retrieve.rewrite");
    r->rewrite = i;
    return 0;
}

/* Apply the rewrite: rewrite and step-back search their query; hyde the
** query and its hypothetical passage together (the query's own words
** keep their weight); multi-query and decompose search each of theirs
** (fused, search_rewritten).  rewrittenQuery says what was searched. */
static int apply_rewrite(rcp_call *c, rq *r)
{
    txout *t = &r->tx;
    char *p;
    size_t i, n = 0;
    int rc;
    if (r->rewrite < 0)
        return 0;
    if ((rc = transform(c, r->b, r->rewrite, r->q.text, r->q.len, 3, 0,
                        t)))
        return rc;
    for (i = 0; i < t->count; i++)
        n += t->n[i] + 3;
    if (!(p = rcp_arena_alloc(call_arena(c), n + t->hyplen + 2)))
        return call_oom(c);
    n = 0;
    for (i = 0; i < t->count; i++) {
        if (i) {
            memcpy(p + n, " | ", 3);
            n += 3;
        }
        memcpy(p + n, t->q[i], t->n[i]);
        n += t->n[i];
    }
    if (t->hyp) {
        p[n++] = ' ';
        memcpy(p + n, t->hyp, t->hyplen);
        n += t->hyplen;
    }
    r->searched = p;
    r->searchedlen = n;
    if (t->count == 1 || t->hyp) {
        r->q.text = p;
        r->q.len = n;
    }
    call_note_add(c, "rewrite %s: %lu %s", transform_names[r->rewrite],
                  (unsigned long)t->count, t->count == 1 ? "query"
                  : "queries fused by RRF");
    return 0;
}

static int get_retrieve(rcp_call *c, rq *r)
{
    int64_t seed;
    int rc;
    rcp_model_query_init(&r->q);
    if ((rc = get_strict(c, &r->strict))
        || (rc = get_search_query(c, &r->q.text, &r->q.len))
        || (rc = get_sizes(c, r))
        || (rc = get_mode_vectors(c, r))
        || (rc = get_fusion(c, r)) || (rc = get_rerank_mmr(c, r))
        || (rc = get_filter(c, r)) || (rc = get_recency(c, r))
        || (rc = get_granularity(c, r))
        || (rc = get_rewrite(c, r))
        || (rc = call_bool(c, call_params(c), "includeText", 1,
                           &r->include_text))
        || (rc = call_enum(c, call_params(c), "encoding", encodings, 2,
                           r->strict, &r->enc))
        || (rc = call_int(c, call_params(c), "seed",
                          -(int64_t)RCP_INT53_MAX, (int64_t)RCP_INT53_MAX, 0,
                          &seed))
        || (rc = call_str(c, call_params(c), "sessionId", &r->session_id)))
        return rc;
    if (r->session_id && r->session_id->n > SESSION_ID_BYTES)
        return call_too_big(c, "sessionId", r->session_id->n,
                            SESSION_ID_BYTES);
    /* §7.7.1: every stage is deterministic, so any seed is honoured
    ** trivially (a session's dedup is trajectory state, §7.7.3) */
    if ((rc = call_num(c, call_params(c), "minScore", -1e300, 1e300,
                       -HUGE_VAL, &r->min_score)))
        return rc;
    return get_snapshot(c, r);
}

/* §7.7.2 tokens: runs of non-space bytes in a hit's text. */
static size_t count_tokens(const char *p, size_t n)
{
    size_t i, count = 0;
    int in = 0;
    for (i = 0; i < n; i++) {
        int sp = p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'
                 || p[i] == '\f' || p[i] == '\v';
        count += !sp && !in;
        in = !sp;
    }
    return count;
}

static void write_stage_scores(rcp_jw *w, const rcp_model_hit *h,
                               double decay)
{
    rcp_jw_key(w, "scores");
    rcp_jw_obj(w);
    if (h->has & RCP_HIT_DENSE) {
        rcp_jw_key(w, "dense");
        rcp_jw_double(w, h->dense);
    }
    if (h->has & RCP_HIT_SPARSE) {
        rcp_jw_key(w, "sparse");
        rcp_jw_double(w, h->sparse);
    }
    if (h->has & RCP_HIT_FUSED) {
        rcp_jw_key(w, "fused");
        rcp_jw_double(w, h->fused);
    }
    if (h->has & RCP_HIT_RERANK) {
        rcp_jw_key(w, "rerank");
        rcp_jw_double(w, h->rerank);
    }
    if (decay >= 0) {
        rcp_jw_key(w, "recency");        /* the decay factor applied */
        rcp_jw_double(w, decay);
    }
    rcp_jw_obj_end(w);
}

/* A string member of the document's meta (NULL meta: none). */
static const rcp_json *meta_str(const rcp_json *meta, const char *key)
{
    const rcp_json *v = meta ? proto_get(meta, key) : NULL;
    return v && v->type == RCP_JSON_STRING ? v : NULL;
}


/* The version a retrieve reads: the one it pins (§7.7.1), or the live
** index. */
static uint64_t read_version(const rq *r)
{
    return r->q.pinned ? r->q.version
                       : rcp_model_version(r->b->model);
}

/* A hit as the request's unit sees it (§7.7.2): a chunk (a whole
** document that was not chunked is its own chunk 0) or the whole
** document a chunk belongs to. */
typedef struct hitview {
    rcp_model_docview d;        /* the engine's document */
    const rcp_json   *meta;     /* d's meta, parsed */
    const char       *id, *text;
    size_t            idlen, textlen;
    int64_t           start, end;   /* span in the source document */
    uint32_t          docno;    /* whose text is text, when own */
    int               own;      /* text is docno's stored text */
} hitview;

/* A document put back together from its chunks' spans, which cover it
** from byte 0, overlapping: one walk over the chunks that exist measures,
** a second copies (the engine keeps end - start == the chunk's length). */
typedef struct assemble {
    rcp_call *c;
    char     *buf;      /* NULL while measuring */
    size_t    len, seen;
} assemble;

#define ASSEMBLE_CHECK 1024     /* chunks between two checkpoints */

static int assemble_chunk(void *ud, uint32_t docno,
                          const rcp_model_docview *d)
{
    assemble *a = ud;
    int rc;
    (void)docno;
    if (++a->seen % ASSEMBLE_CHECK == 0 && (rc = call_still_wanted(a->c)) != 0)
        return rc;
    if (!a->buf) {
        if (d->chunk.end > a->len)
            a->len = (size_t)d->chunk.end;
    } else if (d->textlen) {
        memcpy(a->buf + d->chunk.start, d->text, d->textlen);
    }
    return 0;
}

/* The text of the document chunk d belongs to, as of the version read. */
static int whole_text(const rq *r, const rcp_model_docview *d, hitview *hv)
{
    const rcp_model *m = r->b->model;
    assemble a;
    int rc;
    memset(&a, 0, sizeof a);
    a.c = r->c;
    if ((rc = rcp_model_chunks(m, d->chunk.of, d->chunk.oflen,
                               read_version(r), assemble_chunk, &a)) != 0)
        return rc;
    if (!(a.buf = rcp_arena_alloc(call_arena(r->c), a.len + 1)))
        return -1;
    memset(a.buf, ' ', a.len);
    if ((rc = rcp_model_chunks(m, d->chunk.of, d->chunk.oflen,
                               read_version(r), assemble_chunk, &a)) != 0)
        return rc;
    hv->text = a.buf;
    hv->textlen = a.len;
    return 0;
}

/* 0, -1 out of memory, or a checkpoint's verdict (RCP_CANCELLED, ...). */
static int resolve_hit(const rq *r, uint32_t docno, hitview *hv)
{
    const rcp_model_chunkref *ck = &hv->d.chunk;
    rcp_json_err err;
    int rc;
    if (view_doc(r, docno, &hv->d) != 0)
        return -1;
    hv->meta = hv->d.meta ? rcp_json_parse(call_arena(r->c), hv->d.meta,
                                           hv->d.metalen, 0, &err) : NULL;
    if (hv->d.meta && !hv->meta)
        return -1;          /* never a hit written without its meta */

    hv->id = hv->d.id;
    hv->idlen = hv->d.idlen;
    hv->text = hv->d.text;
    hv->textlen = hv->d.textlen;
    hv->start = ck->of ? (int64_t)ck->start : 0;
    hv->end = ck->of ? (int64_t)ck->end : (int64_t)hv->d.textlen;
    hv->docno = docno;
    hv->own = 1;
    if (r->unit != UNIT_DOCUMENT || !ck->of)
        return 0;
    hv->own = 0;
    hv->id = ck->of;
    hv->idlen = ck->oflen;
    if ((rc = whole_text(r, &hv->d, hv)) != 0)
        return rc;
    hv->start = 0;
    hv->end = (int64_t)hv->textlen;
    return 0;
}

static const char *const trust_names[] = { "untrusted", "community",
                                           "trusted" };

int rcp_trust_level(const char *name)
{
    int i;
    for (i = RCP_TRUST_UNTRUSTED; name && i <= RCP_TRUST_TRUSTED; i++)
        if (strcmp(name, trust_names[i]) == 0)
            return i;
    return -1;
}

/* §15.2 does the screen flag the hit's text?  A docno's text never
** changes, so its verdict is kept until the next add or delete (which
** may renumber docnos, model.c invariant 4): a hit shown again is not
** screened again (on a small corpus the screen was ~2/3 of a retrieve's
** CPU).  Where no memory is to be had the text is simply screened. */
static int screen_flags(const rq *r, const hitview *hv)
{
    struct screened *sc = r->b->screened;
    uint64_t ver = rcp_model_version(r->b->model);
    int flagged;
    if (!hv->own || !sc)
        return text_screen_hit(r->b->screen, hv->text, hv->textlen);
    if (sc->ver != ver) {
        if (sc->v)
            memset(sc->v, 0, sc->n);
        sc->ver = ver;
    }
    if (hv->docno < sc->n && sc->v[hv->docno])
        return sc->v[hv->docno] == 2;
    flagged = text_screen_hit(r->b->screen, hv->text, hv->textlen);
    if (hv->docno >= sc->n) {
        size_t n = (size_t)hv->docno + 1 + sc->n;      /* amortised */
        unsigned char *v = rcp_realloc(sc->v, n);
        if (!v)
            return flagged;
        memset(v + sc->n, 0, n - sc->n);
        sc->v = v;
        sc->n = n;
    }
    sc->v[hv->docno] = (unsigned char)(flagged ? 2 : 1);
    return flagged;
}

/* §7.7 citation {source, uri?, title?, start, end} and trust {level,
** injectionSuspected, x-rcp-source}.  source is meta.source or else the
** document's id; the span is the hit's bytes in its document.  The level
** is the hit's own document's, recorded when it was written (§15.2: the
** operator's --trust for a --corpus source, untrusted for client writes
** unless the operator vouches for its writers), and never "trusted" when
** the screen flags the text: such a hit is labelled untrusted.
** x-rcp-source (§6.2 vendor field) names the document's source. */
static void write_citation(rcp_call *c, const rq *r, const hitview *hv)
{
    static const char *const keys[] = { "uri", "title" };
    const rcp_model_origin *o = &hv->d.origin;
    int flagged = screen_flags(r, hv);
    int level = flagged && o->trust == RCP_TRUST_TRUSTED
                ? RCP_TRUST_UNTRUSTED : o->trust;
    const struct flag *f = flag_find(r->b, hv->id, hv->idlen);
    rcp_jw *w = call_w(c);
    const rcp_json *v;
    size_t i;
    rcp_jw_key(w, "citation");
    rcp_jw_obj(w);
    rcp_jw_key(w, "source");
    if ((v = meta_str(hv->meta, "source")) != NULL)
        rcp_jw_str(w, v->s, v->n);
    else if (hv->d.chunk.of)
        rcp_jw_str(w, hv->d.chunk.of, hv->d.chunk.oflen);
    else
        rcp_jw_str(w, hv->id, hv->idlen);
    for (i = 0; i < 2; i++)
        if ((v = meta_str(hv->meta, keys[i])) != NULL) {
            rcp_jw_key(w, keys[i]);
            rcp_jw_str(w, v->s, v->n);
        }
    rcp_jw_key(w, "start");
    rcp_jw_int(w, hv->start);
    rcp_jw_key(w, "end");
    rcp_jw_int(w, hv->end);
    rcp_jw_obj_end(w);
    rcp_jw_key(w, "trust");
    rcp_jw_obj(w);
    rcp_jw_key(w, "level");
    rcp_jw_cstr(w, trust_names[level]);
    rcp_jw_key(w, "injectionSuspected");
    rcp_jw_bool(w, flagged || (f && f->injection));
    if (o->sourcelen) {
        rcp_jw_key(w, "x-rcp-source");
        rcp_jw_str(w, o->source, o->sourcelen);
    }
    if (f) {        /* §7.16, §15.3: what clients reported, advisory */
        rcp_jw_key(w, "x-rcp-reported");
        rcp_jw_obj(w);
        rcp_jw_key(w, "poisonSuspected");
        rcp_jw_int(w, f->poison);
        rcp_jw_key(w, "injectionSuspected");
        rcp_jw_int(w, f->injection);
        rcp_jw_obj_end(w);
    }
    rcp_jw_obj_end(w);
}

/* §7.7.2 unit, and chunk {docId, index} for chunk-level hits. */
static void write_unit(rcp_call *c, const rq *r, const hitview *hv)
{
    const rcp_model_chunkref *ck = &hv->d.chunk;
    rcp_jw *w = call_w(c);

    rcp_jw_key(w, "unit");
    rcp_jw_cstr(w, unit_names[r->unit]);
    if (r->unit == UNIT_DOCUMENT)
        return;
    rcp_jw_key(w, "chunk");
    rcp_jw_obj(w);
    rcp_jw_key(w, "docId");
    if (ck->of)
        rcp_jw_str(w, ck->of, ck->oflen);
    else
        rcp_jw_str(w, hv->id, hv->idlen);
    rcp_jw_key(w, "index");
    rcp_jw_int(w, ck->of ? (int64_t)ck->index : 0);
    rcp_jw_obj_end(w);
}

/* §7.7 Hit: id, score, confidence, text, unit, chunk, meta (the client's,
** verbatim), per-stage scores, citation, trust, vector.  0, -1 out of
** memory, or a checkpoint's verdict. */
static int write_hit(rcp_call *c, const rq *r, const rcp_model_hit *h,
                     double decay, char *b64)
{
    const rcp_model *m = r->b->model;
    rcp_jw *w = call_w(c);
    hitview hv;
    int rc;
    if ((rc = resolve_hit(r, h->doc, &hv)) != 0)
        return rc;
    rcp_jw_obj(w);
    rcp_jw_key(w, "id");
    rcp_jw_str(w, hv.id, hv.idlen);
    rcp_jw_key(w, "score");
    rcp_jw_double(w, h->score);
    rcp_jw_key(w, "confidence");     /* §7.7.2: in [0,1] */
    rcp_jw_double(w, h->confidence < 0 ? 0 : h->confidence > 1 ? 1
                  : h->confidence);
    if (r->include_text) {
        rcp_jw_key(w, "text");
        rcp_jw_str(w, hv.text, hv.textlen);
    }
    write_unit(c, r, &hv);
    if (hv.meta && hv.meta->type == RCP_JSON_OBJECT) {
        rcp_jw_key(w, "meta");
        rcp_jw_value(w, hv.meta);
    }
    write_stage_scores(w, h, decay);
    write_citation(c, r, &hv);
    if (r->include_vectors) {
        rcp_jw_key(w, "vector");
        write_vector(c, hv.d.vector, rcp_model_dim(m), r->enc, b64);
    }
    rcp_jw_obj_end(w);
    return 0;
}

/* The document's date in the recency field (epoch ms): 0, 1 when it has
** none, -1 out of memory (its meta could not be parsed). */
static int doc_date(rcp_call *c, const rq *r, uint32_t doc, int64_t *ms)
{
    rcp_model_docview d;
    rcp_json_err err;
    const rcp_json *meta, *v = NULL;
    rcp_model_value x;
    size_t i;
    if (view_doc(r, doc, &d) != 0 || !d.meta)
        return 1;
    if (!(meta = rcp_json_parse(call_scratch(c), d.meta, d.metalen, 0,
                                &err)))
        return -1;
    for (i = 0; i < meta->n; i++)
        if (meta->kids[i].keylen == r->recency->namelen
            && memcmp(meta->kids[i].key, r->recency->name,
                      r->recency->namelen) == 0)
            v = &meta->kids[i];
    i = v && rcp_model_value_of(RCP_FIELD_DATE, v, &x) == 0;
    if (i)
        *ms = x.ms;
    rcp_arena_reset(call_scratch(c));
    return i ? 0 : 1;
}

/* §7.7 recency: score' = (score - floor) / (max - floor) * 0.5^(age /
** halfLifeDays), the floor being the §6.1 scoreFloor (score_floor).
** Age counts from the newest date among the candidates, so results
** depend only on the index and the request (§7.7.1), never on the wall
** clock; a candidate without a date counts as infinitely old. */
static int apply_recency(rcp_call *c, rq *r, rcp_model_hit *h, size_t n)
{
    int64_t *when = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *when);
    size_t *ord = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *ord);
    rcp_model_hit *tmp = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *tmp);
    double *dec = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *dec);
    double *adj = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *adj);
    double floor = score_floor(r->b->model), top = floor;
    int64_t newest = INT64_MIN;
    size_t i;
    int rc;
    if (!when || !ord || !tmp || !dec || !adj)
        return call_oom(c);
    for (i = 0; i < n; i++) {
        if ((rc = doc_date(c, r, h[i].doc, &when[i])) < 0)
            return call_oom(c);
        if (rc)
            when[i] = INT64_MIN;
        else if (when[i] > newest)
            newest = when[i];
        if (h[i].score > top)
            top = h[i].score;
    }
    for (i = 0; i < n; i++) {
        /* dates are within +-2^53 ms, so only an undated candidate (the
        ** INT64_MIN mark) could overflow the difference: it is not taken */
        tmp[i] = h[i];
        dec[i] = when[i] == INT64_MIN ? 0 : pow(0.5, (double)(newest
                 - when[i]) / 86400000.0 / r->half_life);
        adj[i] = (top > floor ? (h[i].score - floor) / (top - floor)
                              : 1.0) * dec[i];
    }
    if (rank_order(call_arena(c), adj, n, ord) != 0)
        return call_oom(c);
    for (i = 0; i < n; i++) {
        h[i] = tmp[ord[i]];
        h[i].score = adj[ord[i]];
    }
    for (i = 0; i < n; i++)         /* the decays, in the new order */
        adj[i] = dec[ord[i]];
    memcpy(dec, adj, n * sizeof *dec);
    r->decay = dec;
    return 0;
}

/* §7.7.2 unit "document": one hit per document, its best chunk's. */
static size_t group_by_document(const rq *r, rcp_model_hit *h, size_t n,
                                size_t want)
{
    const char **key = rcp_arena_alloc(call_arena(r->c), (want + 1)
                                       * sizeof *key);
    size_t *klen = rcp_arena_alloc(call_arena(r->c), (want + 1)
                                   * sizeof *klen);
    size_t i, j, kept = 0;
    if (!key || !klen)
        return 0;
    for (i = 0; i < n && kept < want; i++) {
        rcp_model_docview d;
        const char *k;
        size_t kn;
        if (view_doc(r, h[i].doc, &d) != 0)
            continue;
        k = d.chunk.of ? d.chunk.of : d.id;
        kn = d.chunk.of ? d.chunk.oflen : d.idlen;
        for (j = 0; j < kept; j++)
            if (klen[j] == kn && memcmp(key[j], k, kn) == 0)
                break;
        if (j < kept)
            continue;
        key[kept] = k;
        klen[kept] = kn;
        h[kept++] = h[i];
    }
    return kept;
}

/* Keep hits scoring at least minScore (§7.7, in the server's own scale);
** returns how many remain, in order. */
static size_t apply_min_score(const rq *r, rcp_model_hit *h, size_t n)
{
    size_t i, kept = 0;
    for (i = 0; i < n; i++)
        if (h[i].score >= r->min_score)
            h[kept++] = h[i];
    return kept;
}

/* §7.7.2 packing: top-ranked hits until the next would pass the budget;
** *n becomes how many fit.  0, or resolve_hit's failure. */
static int apply_budget(const rq *r, const rcp_model_hit *h, size_t *n,
                        size_t *tokens)
{
    size_t i;
    int rc;
    *tokens = 0;
    for (i = 0; r->budget && i < *n; i++) {
        hitview hv;
        size_t t;
        if ((rc = resolve_hit(r, h[i].doc, &hv)) != 0)
            return rc;
        t = count_tokens(hv.text, hv.textlen);
        if (*tokens + t > (uint64_t)r->budget)
            break;
        *tokens += t;
    }
    if (r->budget)
        *n = i;
    return 0;
}

static void write_usage(rcp_call *c, const rq *r, double t0, size_t tokens)
{
    rcp_jw *w = call_w(c);
    const char *note;
    size_t i, reranked = r->q.rerank_top && r->q.rerank_top < r->recalled
                         ? r->q.rerank_top : r->recalled;
    rcp_jw_key(w, "usage");
    rcp_jw_obj(w);
    /* §7.7 "the effective counts": what recall found and what the reranker
    ** scored, never the depth asked for (a 7-document corpus has at most 7
    ** candidates) */
    rcp_jw_key(w, "candidates");
    rcp_jw_int(w, (int64_t)r->recalled);
    rcp_jw_key(w, "reranked");
    rcp_jw_int(w, r->q.rerank ? (int64_t)reranked : 0);
    write_latency(w, t0);
    if (r->budget) {
        rcp_jw_key(w, "tokens");
        rcp_jw_int(w, (int64_t)tokens);
    }
    if (r->searched) {                  /* issue 15: and in usage */
        rcp_jw_key(w, "rewrittenQuery");
        rcp_jw_str(w, r->searched, r->searchedlen);
    }
    if (call_note(c, 0)) {
        rcp_jw_key(w, "notes");
        rcp_jw_arr(w);
        for (i = 0; (note = call_note(c, i)) != NULL; i++)
            rcp_jw_cstr(w, note);

        rcp_jw_arr_end(w);
    }
    rcp_jw_obj_end(w);
}

/* The answer to a failed search or hit: -1 is out of memory, the rest
** the engine's or a checkpoint's verdict. */
static int retrieve_failed(rcp_call *c, int rc)
{
    if (rc == -1)
        return call_oom(c);
    if (rc == RCP_MODEL_INVALID)        /* what get_retrieve let through */
        return call_fail(c, RCP_INTERNAL_ERROR, NULL, NULL, "the engine "
                         "refused the query as built (a defect)");
    if (rc == RCP_MODEL_GONE)   /* gone for good: no retry brings it back */
        return call_retryable(c, call_fail(c, RCP_BACKEND_UNAVAILABLE, NULL,
                              NULL, "the pinned snapshot is no longer kept "
                              "(§7.7.1)"), 0);
    return call_fail(c, rc, NULL, NULL, "%s", rc == RCP_CANCELLED
                     ? "cancelled by notifications/cancel"
                     : "deadline elapsed");
}


/* MARK: - §7.7.3 sessions: dedup across a trajectory */

/* The session named id, made when new: expired ones (SESSION_TTL_S after
** their last retrieve) are forgotten first, and a new one past
** SESSION_SLOTS takes the least recently used slot.  NULL out of memory. */
static session *session_get(builtin *b, const rcp_json *id, double now)
{
    session *s;
    size_t i, lru = 0;
    for (i = 0; i < SESSION_SLOTS; i++) {
        s = b->sess[i];
        if (s && now - s->last > SESSION_TTL_S * 1000.0) {
            rcp_free(s->id);
            rcp_free(s);
            b->sess[i] = s = NULL;
        }
        if (s && s->idlen == id->n && memcmp(s->id, id->s, id->n) == 0) {
            s->last = now;
            return s;
        }
        if (!s || (b->sess[lru] && s->last < b->sess[lru]->last))
            lru = i;
    }
    if ((s = b->sess[lru]) != NULL) {       /* evicted: forgotten whole */
        rcp_free(s->id);
        rcp_free(s);
        b->sess[lru] = NULL;
    }
    if (!(s = rcp_malloc(sizeof *s)) || !(s->id = rcp_malloc(id->n + 1))) {
        rcp_free(s);
        return NULL;
    }
    memcpy(s->id, id->s, id->n);
    s->idlen = id->n;
    s->last = now;
    s->nseen = s->head = 0;
    return b->sess[lru] = s;
}

static int session_saw(const session *s, uint64_t h)
{
    size_t i;
    for (i = 0; i < s->nseen; i++)
        if (s->seen[i] == h)
            return 1;
    return 0;
}

static void session_add(session *s, uint64_t h)
{
    s->seen[s->head] = h;
    s->head = (s->head + 1) % SESSION_IDS;
    if (s->nseen < SESSION_IDS)
        s->nseen++;
}

/* The id a hit is written under (its document's when unit is document),
** hashed: what the session remembers.  A collision (2^-64 a pair) would
** hide one hit; nothing else depends on it. */
static uint64_t hit_hash(const rq *r, uint32_t docno)
{
    rcp_model_docview d;
    if (view_doc(r, docno, &d) != 0)
        return 0;
    if (r->unit == UNIT_DOCUMENT && d.chunk.of)
        return fnv1a(14695981039346656037u, d.chunk.of, d.chunk.oflen);
    return fnv1a(14695981039346656037u, d.id, d.idlen);
}

/* Drop the hits the session was given before; returns how many remain. */
static size_t session_filter(rq *r, rcp_model_hit *h, size_t n)
{
    size_t i, kept = 0;
    for (i = 0; i < n; i++)
        if (!session_saw(r->sess, hit_hash(r, h[i].doc)))
            h[kept++] = h[i];
    if (kept < n)
        call_note_add(r->c, "session: %lu hits returned before left out",
                      (unsigned long)(n - kept));
    return kept;
}

/* One fused hit: the list it ranked best in and its summed RRF. */
typedef struct fusedhit {
    rcp_model_hit h;
    size_t best;            /* its best rank in any list */
} fusedhit;

static int fused_by_doc(const void *a, const void *b)
{
    const fusedhit *x = a, *y = b;
    if (x->h.doc != y->h.doc)
        return x->h.doc < y->h.doc ? -1 : 1;
    return x->best < y->best ? -1 : x->best > y->best;
}

static int fused_by_score(const void *a, const void *b)
{
    const fusedhit *x = a, *y = b;
    if (x->h.fused != y->h.fused)
        return x->h.fused > y->h.fused ? -1 : 1;
    if (x->best != y->best)
        return x->best < y->best ? -1 : 1;
    return x->h.doc < y->h.doc ? -1 : x->h.doc > y->h.doc;
}

/* The search, or for multi-query and decompose one search per query fused
** by RRF (k = fusion.rrfK, 60; Cormack et al. 2009): a document's score
** is the sum of 1 / (rrfK + rank) over the lists it is in, each list
** candidateK deep (a list cut at the page would drop what the others rank
** high); ties by its best rank, then docno.  Its stage scores are those
** of its best list. */
static int search_rewritten(rq *r, rcp_model_hit *hits, size_t *n)
{
    const txout *t = &r->tx;
    size_t pool = r->q.k, deep = r->q.candidate_k, i, j, all = 0, got;
    size_t kept = 0;
    fusedhit *f;
    rcp_model_hit *one;
    int rc;
    if ((r->rewrite != TX_MULTI && r->rewrite != TX_DECOMPOSE)
        || t->count < 2)
        return rcp_model_search(r->b->model, &r->q, hits, n);
    f = rcp_arena_alloc(call_arena(r->c), (t->count * deep + 1) * sizeof *f);
    one = rcp_arena_alloc(call_arena(r->c), (deep + 1) * sizeof *one);
    if (!f || !one)
        return -1;
    for (i = 0; i < t->count; i++) {
        rcp_model_query q = r->q;
        q.text = t->q[i];
        q.len = t->n[i];
        q.k = deep;
        if ((rc = rcp_model_search(r->b->model, &q, one, &got)) != 0)
            return rc;
        for (j = 0; j < got; j++, all++) {
            f[all].h = one[j];
            f[all].h.fused = 1.0 / (r->q.rrf_k + (double)(j + 1));
            f[all].best = j;
        }
    }
    qsort(f, all, sizeof *f, fused_by_doc);
    for (i = 0; i < all; i++) {         /* one per document, summed */
        if (kept && f[kept - 1].h.doc == f[i].h.doc) {
            f[kept - 1].h.fused += f[i].h.fused;
            continue;
        }
        f[kept++] = f[i];
    }
    qsort(f, kept, sizeof *f, fused_by_score);
    r->recalled = kept;
    for (i = 0; i < kept && i < pool; i++) {
        hits[i] = f[i].h;
        hits[i].score = hits[i].fused;
        hits[i].has |= RCP_HIT_FUSED;
    }
    *n = i;
    return 0;
}

/* §17.1 a retrieve's stages, for notifications/log: counts and times,
** never a document's text. */
typedef struct stage_log {
    size_t candidates, reranked, hits;
    double recall_ms, total_ms;
} stage_log;

static void write_stage_log(rcp_jw *w, const void *ud)
{
    const stage_log *l = ud;
    rcp_jw_obj(w);
    rcp_jw_key(w, "candidates");
    rcp_jw_int(w, (int64_t)l->candidates);
    rcp_jw_key(w, "reranked");
    rcp_jw_int(w, (int64_t)l->reranked);
    rcp_jw_key(w, "hits");
    rcp_jw_int(w, (int64_t)l->hits);
    proto_write_ms(w, "recallMs", l->recall_ms);
    proto_write_ms(w, "latencyMs", l->total_ms);
    rcp_jw_obj_end(w);
}

static void log_stages(rcp_call *c, const rq *r, size_t hits, double t0,
                       double t1)
{
    stage_log l;
    l.candidates = r->recalled;
    l.reranked = !r->q.rerank ? 0 : r->q.rerank_top && r->q.rerank_top
                 < r->recalled ? r->q.rerank_top : r->recalled;
    l.hits = hits;
    l.recall_ms = t1 - t0;
    l.total_ms = proto_now_ms() - t0;
    call_log(c, PROTO_LOG_INFO, "retrieve", write_stage_log, &l, "recall "
             "%lu candidates, reranked %lu, %lu hits", (unsigned long)
             l.candidates, (unsigned long)l.reranked, (unsigned long)hits);
}

/* §7.7 retrieve: recall -> fuse -> pack, one page (§10) at a time. */
static int m_retrieve(void *ud, rcp_call *c)
{
    builtin *b = ud;
    const rcp_model *m = b->model;
    rcp_jw *w = call_w(c);
    double t0 = proto_now_ms(), t1;
    rq r;
    rcp_model_hit *hits;
    size_t n = 0, page, want, pool, tokens, i;
    char *b64;
    int rc;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.b = b;
    if ((rc = get_retrieve(c, &r)) != 0 || (rc = apply_rewrite(c, &r)) != 0)
        return rc;
    r.q.ud = &r;
    r.q.checkpoint = search_checkpoint;
    r.k = r.q.k;
    want = r.offset + r.q.k + 1;        /* one more tells a next page */
    if (want > RETRIEVE_MAX_K + 1)
        want = RETRIEVE_MAX_K + 1;
    /* the recall depth stays within maxK (§7.7 "MUST clamp"): at the cap
    ** there is no next page to look ahead for (no cursor past maxK) */
    pool = want > RETRIEVE_MAX_K ? RETRIEVE_MAX_K : want;
    if (r.recency && r.q.candidate_k > pool)
        pool = r.q.candidate_k;
    if (r.session_id && !(r.sess = session_get(b, r.session_id, t0)))
        return call_oom(c);
    if (r.sess)             /* room for the hits it will leave out */
        pool = pool + r.sess->nseen < RETRIEVE_MAX_K
               ? pool + r.sess->nseen : RETRIEVE_MAX_K;
    if (r.unit == UNIT_DOCUMENT)    /* several chunks share a document */
        pool = pool * 4 < RETRIEVE_MAX_K ? pool * 4 : RETRIEVE_MAX_K;
    hits = rcp_arena_alloc(call_arena(c), pool * sizeof *hits);
    b64 = rcp_arena_alloc(call_arena(c), rcp_vec_b64_len(rcp_model_dim(m)));
    if (!hits || !b64)
        return call_oom(c);
    r.q.k = pool;
    if (r.q.candidate_k < pool)
        r.q.candidate_k = pool;
    if ((rc = search_rewritten(&r, hits, &n)) != 0)
        return retrieve_failed(c, rc);
    t1 = proto_now_ms();
    if (r.recency && (rc = apply_recency(c, &r, hits, n)) != 0)
        return rc;
    if (r.unit == UNIT_DOCUMENT)
        n = group_by_document(&r, hits, n, r.sess ? pool : want);
    if (r.sess)
        n = session_filter(&r, hits, n);
    n = apply_min_score(&r, hits, n);
    r.q.k = want - 1 - r.offset;
    page = n > r.offset ? n - r.offset : 0;
    if (page > r.q.k)
        page = r.q.k;
    if ((rc = apply_budget(&r, hits + r.offset, &page, &tokens)) != 0)
        return retrieve_failed(c, rc);
    rcp_jw_obj(w);
    rcp_jw_key(w, "hits");
    rcp_jw_arr(w);
    for (i = 0; i < page; i++)
        if ((rc = write_hit(c, &r, &hits[r.offset + i], r.decay
                            ? r.decay[r.offset + i] : -1, b64)) != 0)
            return retrieve_failed(c, rc);
    rcp_jw_arr_end(w);
    for (i = 0; r.sess && i < page; i++)    /* given now: not again */
        session_add(r.sess, hit_hash(&r, hits[r.offset + i].doc));
    /* §7.7.3 with a session the next page is the session's next retrieve
    ** (nothing given is given again), so no cursor is issued */
    if (r.offset + page < n && !r.budget && r.offset + page < RETRIEVE_MAX_K
        && !r.sess && call_offers(c, PROTO_CAP_PAGINATION)) {
        char cur[96];
        rcp_jw_key(w, "nextCursor");
        rcp_jw_str(w, cur, (size_t)snprintf(cur, sizeof cur,
                   "c1.v%llu.%lu.%llx",
                   (unsigned long long)r.served,
                   (unsigned long)(r.offset + page),
                   (unsigned long long)r.fp));
    }
    if (r.include_vectors) {
        rcp_jw_key(w, "encoding");
        rcp_jw_cstr(w, r.enc ? "f32-base64" : "json");
    }
    rcp_jw_key(w, "indexVersion");
    rcp_jw_str(w, b64, (size_t)sprintf(b64, "v%llu",
               (unsigned long long)r.served));
    if (r.searched) {                   /* §7.7 Result */
        rcp_jw_key(w, "rewrittenQuery");
        rcp_jw_str(w, r.searched, r.searchedlen);
    }
    write_usage(c, &r, t0, tokens);
    rcp_jw_obj_end(w);
    log_stages(c, &r, page, t0, t1);
    return 0;
}

/* MARK: - §7.8 query/transform */

/* Classical IR in place of a language model (README, "query/transform"):
** every method reads the query as the index's tokenizer folds it, and
** what it adds comes from the corpus -- its vocabulary (spelling), its
** pseudo-relevant documents (RM3 terms, hyde's sentences) and its
** document frequencies (step-back).  Deterministic: the same index and
** query give the same queries. */
#define TRANSFORM_FIX    32     /* words spell-corrected, at most (each
                                   scans the vocabulary) */
#define EXPAND_TERMS     3      /* pseudo-relevance words rewrite adds */
#define HYDE_PASSAGES    3      /* passages hyde takes a sentence from */
#define HYDE_SENTENCE    600    /* bytes of a sentence it takes, at most */

static const char *const transform_names[TX_N] = {
    "rewrite", "hyde", "multi-query", "decompose", "step-back"
};

/* A query word: folded, or its correction from the vocabulary. */
typedef struct qword {
    const char *w;
    size_t n;
    long   df;          /* of w: -1 a stopword, 0 unknown to the index */
    size_t start, end;  /* its span in the query as sent */
} qword;

typedef struct qwords {
    qword *v;
    size_t n;
} qwords;

/* The query's words, folded (RCP_TOK_FOLD: no stopword is dropped, no
** stem is taken, so they read as typed), the first TRANSFORM_FIX unknown
** ones corrected against the vocabulary. */
static int tx_words(rcp_call *c, const rcp_model *m, const char *text,
                    size_t len, qwords *out)
{
    rcp_tokens tk;
    size_t i, fixes = 0;
    char fix[64];
    int rc = 0;
    rcp_tokens_init(&tk);
    out->n = 0;
    if (rcp_tokenize(&tk, text, len, RCP_TOK_FOLD)
        || !(out->v = rcp_arena_alloc(call_arena(c), (tk.n + 1)
                                      * sizeof *out->v))) {
        rcp_tokens_free(&tk);
        return call_oom(c);
    }
    for (i = 0; i < tk.n && !rc; i++) {
        qword *q = &out->v[out->n++];
        const char *w = tk.buf + tk.v[i].word;
        long fl = 0;
        char *copy;
        q->start = tk.v[i].start;
        q->end = tk.v[i].end;
        q->n = tk.v[i].wlen;
        q->df = rcp_model_df(m, w, q->n);
        if (q->df == 0 && fixes < TRANSFORM_FIX) {
            fixes++;
            fl = rcp_model_correct(m, w, q->n, fix, sizeof fix);
        }
        if (q->df < -1 || fl < 0)
            rc = -1;
        if (fl > 0) {
            w = fix;
            q->n = (size_t)fl;
            q->df = rcp_model_df(m, fix, q->n);
        }
        if (!(copy = rcp_arena_alloc(call_arena(c), q->n + 1)))
            rc = -1;
        else
            memcpy(copy, w, q->n);
        q->w = copy;
    }
    rcp_tokens_free(&tk);
    return rc ? call_oom(c) : 0;
}

/* The words of w[from, to) not in drop (may be NULL), then the words
** extra[0..nx), one space apart, into the arena. */
static int tx_join(rcp_call *c, const qwords *w, size_t from, size_t to,
                   const unsigned char *drop, const rcp_model_term *extra,
                   size_t nx, const char **out, size_t *len)
{
    size_t i, n = 0;
    char *p;
    for (i = from; i < to; i++)
        n += w->v[i].n + 1;
    for (i = 0; i < nx; i++)
        n += strlen(extra[i].word) + 1;
    if (!(p = rcp_arena_alloc(call_arena(c), n + 1)))
        return call_oom(c);
    *out = p;
    n = 0;
    for (i = from; i < to; i++) {
        if (drop && drop[i])
            continue;
        if (n)
            p[n++] = ' ';
        memcpy(p + n, w->v[i].w, w->v[i].n);
        n += w->v[i].n;
    }
    for (i = 0; i < nx; i++) {
        size_t k = strlen(extra[i].word);
        if (n)
            p[n++] = ' ';
        memcpy(p + n, extra[i].word, k);
        n += k;
    }
    p[n] = '\0';
    *len = n;
    return 0;
}

/* Add q[0..n) to t unless it is empty or already there. */
static void tx_add(txout *t, const char *q, size_t n)
{
    size_t i;
    for (i = 0; i < t->count; i++)
        if (t->n[i] == n && memcmp(t->q[i], q, n) == 0)
            return;
    if (t->count < TRANSFORM_MAX_N && (n || t->count == 0)) {
        t->q[t->count] = q;
        t->n[t->count++] = n;
    }
}

/* RM3 words for the corrected query q (up to cap). */
static int tx_expand(rcp_call *c, const rcp_model *m, const char *q,
                     size_t n, size_t cap, rcp_model_term **ex, size_t *nx)
{
    *nx = 0;
    if (!(*ex = rcp_arena_alloc(call_arena(c), (cap + 1) * sizeof **ex))
        || rcp_model_expand(m, q, n, *ex, cap, nx))
        return call_oom(c);
    return 0;
}

/* step-back: a more general query -- drop the ceil(k/3) most specific of
** its k known content words (highest IDF, ties the later word), k >= 2;
** stopwords and unknown words stay. */
static int tx_step_back(rcp_call *c, const qwords *w, const char **out,
                        size_t *len)
{
    unsigned char *drop = rcp_arena_alloc(call_arena(c), w->n + 1);
    size_t i, j, k = 0, ndrop;
    if (!drop)
        return call_oom(c);
    memset(drop, 0, w->n + 1);
    for (i = 0; i < w->n; i++)
        k += w->v[i].df > 0;
    ndrop = k >= 2 ? (k + 2) / 3 : 0;
    for (j = 0; j < ndrop; j++) {
        size_t best = w->n;
        for (i = 0; i < w->n; i++)      /* the rarest left: lowest df */
            if (w->v[i].df > 0 && !drop[i]
                && (best == w->n || w->v[i].df <= w->v[best].df))
                best = i;
        drop[best] = 1;
    }
    for (i = 0; ndrop && i < w->n && (drop[i] || w->v[i].df < 0); i++)
        drop[i] = 1;                    /* no stopword left dangling */
    for (i = w->n; ndrop && i > 0 && (drop[i - 1] || w->v[i - 1].df < 0); i--)
        drop[i - 1] = 1;
    return tx_join(c, w, 0, w->n, drop, NULL, 0, out, len);
}

/* Is the text between two words a clause break (; ? , : or a newline)? */
static int tx_break(const char *text, size_t from, size_t to)
{
    for (; from < to; from++)
        if (strchr(";?,:!\n", text[from]))
            return 1;
    return 0;
}

static int tx_conjunction(const qword *q)
{
    static const char *const conj[] = { "and", "or", "versus", "vs",
                                        "also", "plus" };
    size_t i;
    for (i = 0; i < sizeof conj / sizeof *conj; i++)
        if (q->n == strlen(conj[i]) && memcmp(q->w, conj[i], q->n) == 0)
            return 1;
    return 0;
}

/* decompose: cut the query at clause punctuation and at the conjunctions
** and, or, versus, vs, also, plus; a piece without a known content word
** joins the piece before it (leading ones, the piece after); past n
** pieces the rest stays in the last.  It does not distribute shared words
** ("A and B of C" gives "A" and "B of C"). */
static int tx_decompose(rcp_call *c, const char *text, const qwords *w,
                        size_t n, txout *t)
{
    size_t s[TRANSFORM_MAX_N], e[TRANSFORM_MAX_N], np = 0, from = 0, i, j;
    const char *q;
    size_t ql;
    int rc;
    for (i = 0; i <= w->n; i++) {
        int conj = i < w->n && tx_conjunction(&w->v[i]);
        size_t content = 0;
        if (i < w->n && !conj
            && !(i > 0 && tx_break(text, w->v[i - 1].end, w->v[i].start)))
            continue;
        for (j = from; j < i; j++)
            content += w->v[j].df > 0;
        if (content && np < n) {
            s[np] = from;
            e[np++] = i;
        } else if (np) {
            e[np - 1] = i;              /* joins the piece before */
        } else {
            continue;                   /* leading: joins the next */
        }
        from = i + (size_t)conj;
    }
    if (np == 0) {
        s[0] = 0;
        e[np++] = w->n;
    }
    for (i = 0; i < np; i++) {
        if ((rc = tx_join(c, w, s[i], e[i], NULL, NULL, 0, &q, &ql)))
            return rc;
        tx_add(t, q, ql);
    }
    return 0;
}

/* One sentence of a passage: the span ending at . ! ? or a newline. */
static size_t tx_sentence_end(const char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] == '.' || p[i] == '!' || p[i] == '?' || p[i] == '\n')
            return i + 1;
    return n;
}

/* hyde: a hypothetical answer passage assembled, in rank order, from the
** best sentence (by rcp_model_confidence against the query: coverage and
** adjacency of its words) of each of the top HYDE_PASSAGES passages the
** query retrieves; the query itself when nothing is retrieved. */
static int tx_hyde(rcp_call *c, const builtin *b, const char *q, size_t ql,
                   txout *t)
{
    rcp_model_hit hits[HYDE_PASSAGES];
    rcp_model_query mq;
    rcp_model_docview d;
    size_t nh = 0, i, n = 0;
    char *p = rcp_arena_alloc(call_arena(c), HYDE_PASSAGES
                              * (HYDE_SENTENCE + 1) + ql + 1);
    if (!p)
        return call_oom(c);
    rcp_model_query_init(&mq);
    mq.text = q;
    mq.len = ql;
    mq.k = HYDE_PASSAGES;
    mq.no_confidence = 1;
    mq.mode = rcp_model_has_dense_index(b->model) ? RCP_MODE_HYBRID
                                                  : RCP_MODE_SPARSE;
    if (rcp_model_search(b->model, &mq, hits, &nh))
        return call_oom(c);
    for (i = 0; i < nh; i++) {
        size_t at = 0, best = 0, bl = 0, e;
        double bs = -1, s;
        if (rcp_model_doc(b->model, hits[i].doc, &d) != 0)
            continue;
        for (; at < d.textlen; at += e) {
            e = tx_sentence_end(d.text + at, d.textlen - at);
            if (rcp_model_confidence(b->model, q, ql, d.text + at, e, &s))
                return call_oom(c);
            if (s > bs) {
                bs = s;
                best = at;
                bl = e;
            }
        }
        while (bl && (d.text[best] == ' ' || d.text[best] == '\n')) {
            best++;
            bl--;
        }
        if (bl > HYDE_SENTENCE) {       /* at a word boundary */
            bl = HYDE_SENTENCE;
            while (bl > 1 && d.text[best + bl] != ' ')
                bl--;
        }
        if (n && bl)
            p[n++] = ' ';
        memcpy(p + n, d.text + best, bl);
        n += bl;
    }
    if (n == 0) {
        memcpy(p, q, ql);
        n = ql;
    }
    p[n] = '\0';
    t->hyp = p;
    t->hyplen = n;
    return 0;
}

/* The transform of query text[0..len) by method (TX_*), at most n
** queries (multi-query, decompose), into t.  expand 0: rewrite without
** its expansion step (retrieve's, whose pipeline expands by RM3 itself). */
static int transform(rcp_call *c, const builtin *b, int method,
                     const char *text, size_t len, size_t n, int expand,
                     txout *t)
{
    const rcp_model *m = b->model;
    rcp_model_term *ex;
    qwords w;
    const char *q, *x;
    size_t ql, xl, nx, i;
    int rc;
    memset(t, 0, sizeof *t);
    if ((rc = tx_words(c, m, text, len, &w))
        || (rc = tx_join(c, &w, 0, w.n, NULL, NULL, 0, &q, &ql)))
        return rc;
    switch (method) {
    case TX_REWRITE:        /* normalised, corrected, expanded */
        if ((rc = tx_expand(c, m, q, ql, expand ? EXPAND_TERMS : 0, &ex,
                            &nx))
            || (rc = tx_join(c, &w, 0, w.n, NULL, ex, nx, &x, &xl)))
            return rc;
        tx_add(t, x, xl);
        return 0;
    case TX_MULTI:          /* the query, then a pair of RM3 words each */
        tx_add(t, q, ql);
        if ((rc = tx_expand(c, m, q, ql, 2 * (n - 1), &ex, &nx)))
            return rc;
        for (i = 0; i < nx && t->count < n; i += 2) {
            if ((rc = tx_join(c, &w, 0, w.n, NULL, ex + i, nx - i < 2
                              ? nx - i : 2, &x, &xl)))
                return rc;
            tx_add(t, x, xl);
        }
        if (t->count < n && (rc = tx_step_back(c, &w, &x, &xl)) == 0)
            tx_add(t, x, xl);
        return rc;
    case TX_DECOMPOSE:
        return tx_decompose(c, text, &w, n, t);
    case TX_STEPBACK:
        if ((rc = tx_step_back(c, &w, &x, &xl)))
            return rc;
        tx_add(t, x, xl);
        return 0;
    default:                /* TX_HYDE */
        tx_add(t, q, ql);
        return tx_hyde(c, b, q, ql, t);
    }
}

/* §7.8 query/transform {query, method, n?} -> {queries, hypothetical?}. */
static int m_transform(void *ud, rcp_call *c)
{
    const rcp_json *qv, *mv;
    int method = 0, rc;
    int64_t n;
    txout t;
    size_t i;
    rcp_jw *w = call_w(c);
    if ((rc = call_need(c, call_params(c), "query", &qv))
        || (rc = call_str(c, call_params(c), "query", &qv))
        || (rc = call_need(c, call_params(c), "method", &mv))
        || (rc = call_enum(c, call_params(c), "method", transform_names,
                           TX_N, 1, &method))
        || (rc = call_int(c, call_params(c), "n", 1, (int64_t)RCP_INT53_MAX,
                          3, &n)))
        return rc;
    if (n > TRANSFORM_MAX_N)            /* §12, §15.5: clamped */
        n = TRANSFORM_MAX_N;
    if ((rc = transform(c, ud, method, qv->s, qv->n, (size_t)n, 1, &t)))
        return rc;
    rcp_jw_obj(w);
    rcp_jw_key(w, "queries");
    rcp_jw_arr(w);
    for (i = 0; i < t.count; i++)
        rcp_jw_str(w, t.q[i], t.n[i]);
    rcp_jw_arr_end(w);
    if (t.hyp) {
        rcp_jw_key(w, "hypothetical");
        rcp_jw_str(w, t.hyp, t.hyplen);
    }
    rcp_jw_obj_end(w);
    return 0;
}

/* §7: the roster, mirrored.  cap is the capability that gates the method
** (NULL: REQUIRED core method); anytime marks the methods callable before
** initialize (§13); fn NULL means "defined by RCP, not implemented here",
** which is only reachable if its capability were advertised -- never. */

/* MARK: - §7.9 graph */

#define GRAPH_MAX_K     1000     /* nodes, hits or communities per answer */
#define GRAPH_MAX_HOPS  3        /* §15.5: hops on graph are capped */
#define GRAPH_MAX_SEEDS 256
#define GRAPH_ENTITIES  64       /* query terms that seed a walk */
#define GRAPH_FOLLOWUPS 3        /* drift's followups */
#define GRAPH_PROV      5        /* provenance nodes per hit */

static const char *const graph_ops[] = {
    "local", "global", "drift", "communities", "neighbors"
};
enum { OP_LOCAL, OP_GLOBAL, OP_DRIFT, OP_COMMUNITIES, OP_NEIGHBORS };

/* The source of the live index's passages (graph.c): docno i. */
typedef struct model_src {
    const rcp_model *m;
    rcp_call        *c;
} model_src;

static int model_passage(void *ud, size_t i, const char **id, size_t *idlen,
                         const char **text, size_t *len)
{
    const model_src *ms = ud;
    rcp_model_docview d;
    if (rcp_model_doc(ms->m, (uint32_t)i, &d) != 0)
        return 1;
    *id = d.id;
    *idlen = d.idlen;
    *text = d.text;
    *len = d.textlen;
    return 0;
}

static int graph_wanted(void *ud)
{
    return call_still_wanted(((model_src *)ud)->c);
}

static int call_wanted(void *ud)
{
    return call_still_wanted(ud);
}

/* The graph of the live index, brought up to date when the index changed
** since the last call (graph.c note 6: only changed passages are
** tokenised again).  After a restart the first call builds it from the
** replayed documents.  0, or the error recorded. */
static int live_graph(builtin *b, rcp_call *c, const graph **out)
{
    rcp_model_stats st;
    graph_src src;
    model_src ms;
    int rc;
    if (!b->graph && !(b->graph = graph_new()))
        return call_oom(c);
    if (!b->graph_fresh || b->graph_ver != rcp_model_version(b->model)) {
        rcp_model_stat(b->model, &st);
        ms.m = b->model;
        ms.c = c;
        src.n = st.slots;
        src.get = model_passage;
        src.check = graph_wanted;
        src.ud = &ms;
        b->graph_fresh = 0;
        if ((rc = graph_sync(b->graph, &src)) != 0)
            return retrieve_failed(c, rc);
        b->graph_fresh = 1;
        b->graph_ver = rcp_model_version(b->model);
    }
    *out = b->graph;
    return 0;
}

/* The parsed graph request. */
typedef struct gq {
    int             op;
    const rcp_json *query, *seeds, *cursor;
    int64_t         k, hops, level;
    const char     *notes[4];
    size_t          nnotes;
} gq;

static int get_graph(rcp_call *c, gq *q)
{
    const rcp_json *p = call_params(c), *op;
    int rc;
    size_t i;
    memset(q, 0, sizeof *q);
    if ((rc = call_need(c, p, "op", &op)) != 0
        || (rc = call_enum(c, p, "op", graph_ops, 5, 1, &q->op)) != 0
        || (rc = call_str(c, p, "query", &q->query)) != 0
        || (rc = call_int(c, p, "k", 1, RCP_INT53_MAX, 10, &q->k)) != 0
        || (rc = call_int(c, p, "hops", 1, GRAPH_MAX_HOPS, 1, &q->hops)) != 0
        || (rc = call_int(c, p, "level", 0, RCP_INT53_MAX, 0, &q->level))
        || (rc = call_str(c, p, "cursor", &q->cursor)) != 0)
        return rc;
    if (q->k > GRAPH_MAX_K)             /* §12: clamped, not an error */
        q->k = GRAPH_MAX_K;
    if ((q->seeds = proto_get(p, "seedIds")) != NULL) {
        if (q->seeds->type != RCP_JSON_ARRAY)
            return call_fail(c, RCP_INVALID_PARAMS, "seedIds", NULL,
                             "seedIds must be an array of strings");
        if (q->seeds->n > GRAPH_MAX_SEEDS)
            return call_fail(c, RCP_INVALID_PARAMS, "seedIds", NULL,
                             "at most %d seedIds", GRAPH_MAX_SEEDS);
        for (i = 0; i < q->seeds->n; i++)
            if (q->seeds->kids[i].type != RCP_JSON_STRING)
                return call_fail(c, RCP_INVALID_PARAMS, "seedIds", NULL,
                                 "seedIds[%lu] is not a string",
                                 (unsigned long)i);
    }
    if (q->op == OP_NEIGHBORS && (!q->seeds || q->seeds->n == 0))
        return call_fail(c, RCP_INVALID_PARAMS, "seedIds", NULL,
                         "neighbors needs seedIds (the nodes to start from)");
    if ((q->op == OP_LOCAL || q->op == OP_DRIFT) && !q->query
        && (!q->seeds || q->seeds->n == 0))
        return call_fail(c, RCP_INVALID_PARAMS, "query", NULL,
                         "%s needs a query or seedIds", graph_ops[q->op]);
    return 0;
}

static void graph_note(gq *q, const char *note)
{
    if (q->nnotes < sizeof q->notes / sizeof *q->notes)
        q->notes[q->nnotes++] = note;
}

/* The walk's seeds: the query's terms and phrases that are nodes, then
** the seedIds that name nodes (graph.c: a label, or a term's text). */
static long graph_seeds(rcp_call *c, const graph *g, gq *q, uint32_t *out)
{
    long n = 0, nd;
    size_t i, j;
    if (q->query && (n = graph_entities(g, q->query->s, q->query->n, out,
                                        GRAPH_ENTITIES)) < 0)
        return call_oom(c), -1;
    for (i = 0; q->seeds && i < q->seeds->n; i++) {
        const rcp_json *v = &q->seeds->kids[i];
        if ((nd = graph_node(g, v->s, v->n)) < 0) {
            graph_note(q, "a seedId that is not a node of the graph was "
                          "ignored");
            continue;
        }
        for (j = 0; j < (size_t)n && out[j] != (uint32_t)nd; j++)
            ;
        if (j == (size_t)n)
            out[n++] = (uint32_t)nd;
    }
    if (n == 0)
        graph_note(q, "no query term or seedId is a node of the graph");
    return n;
}

/* A node, passage or community with its score (h: the hop a neighbour
** was reached at, else 0), in the order answers list them: score, then
** nearest (a seed before a neighbour as strong), then index. */
typedef struct gscored {
    uint32_t i, h;
    double   s;
} gscored;

static int by_gscore(const void *a, const void *b)
{
    const gscored *x = a, *y = b;
    if (x->s != y->s)
        return x->s > y->s ? -1 : 1;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* §7.9 local: passages scored by the PageRank mass of their salient
** nodes (HippoRAG), best first, ties by id; *n of them. */
static gscored *rank_passages(rcp_call *c, const graph *g, const double *pr,
                              size_t *n)
{
    size_t np = graph_npassages(g), p, i, m = 0, k;
    gscored *v = rcp_arena_alloc(call_arena(c), (np + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (p = 0; p < np; p++) {
        const uint32_t *nd;
        double s = 0;
        k = graph_passage_nodes(g, p, &nd);
        for (i = 0; i < k; i++)
            s += pr[nd[i]];
        if (s > 0) {
            v[m].i = (uint32_t)p;
            v[m].h = 0;
            v[m++].s = s;
        }
    }
    qsort(v, m, sizeof *v, by_gscore);
    *n = m;
    return v;
}

/* A graph hit: the passage as retrieve writes it (§7.7 Hit: text, unit,
** chunk, meta, citation, trust) with provenance.nodes, the passage's
** salient nodes the walk reached, most visited first (§7.7.2). */
static int write_graph_hit(rcp_call *c, const builtin *b, const graph *g,
                           const gscored *h, const double *pr)
{
    rcp_jw *w = call_w(c);
    const uint32_t *nd;
    gscored prov[GRAPH_PROV + 1];
    size_t idlen, k, i, j, np = 0;
    const char *id = graph_passage_id(g, h->i, &idlen);
    long docno = rcp_model_find(b->model, id, idlen);
    hitview hv;
    rq r;
    int rc;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.b = b;
    r.unit = UNIT_CHUNK;
    if (docno < 0)
        return -1;          /* the graph is of this very version */
    if ((rc = resolve_hit(&r, (uint32_t)docno, &hv)) != 0)
        return rc;
    k = graph_passage_nodes(g, h->i, &nd);
    for (i = 0; i < k; i++) {           /* the GRAPH_PROV most visited */
        gscored x;
        if (pr[nd[i]] <= 0)
            continue;
        x.i = nd[i];
        x.h = 0;
        x.s = pr[nd[i]];
        for (j = np; j > 0 && by_gscore(&prov[j - 1], &x) > 0; j--)
            prov[j] = prov[j - 1];
        prov[j] = x;
        if (np < GRAPH_PROV)
            np++;
    }
    rcp_jw_obj(w);
    rcp_jw_key(w, "id");
    rcp_jw_str(w, hv.id, hv.idlen);
    rcp_jw_key(w, "score");
    rcp_jw_double(w, h->s);
    rcp_jw_key(w, "text");
    rcp_jw_str(w, hv.text, hv.textlen);
    write_unit(c, &r, &hv);
    if (hv.meta && hv.meta->type == RCP_JSON_OBJECT) {
        rcp_jw_key(w, "meta");
        rcp_jw_value(w, hv.meta);
    }
    write_citation(c, &r, &hv);
    rcp_jw_key(w, "provenance");
    rcp_jw_obj(w);
    rcp_jw_key(w, "nodes");
    rcp_jw_arr(w);
    for (i = 0; i < np; i++) {
        size_t ln;
        const char *l = graph_label(g, prov[i].i, &ln);
        rcp_jw_str(w, l, ln);
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    rcp_jw_obj_end(w);
    return 0;
}

static int write_graph_hits(rcp_call *c, const builtin *b, const graph *g,
                            const double *pr, const gq *q, size_t *scored)
{
    rcp_jw *w = call_w(c);
    size_t n = 0, i;
    gscored *v = pr ? rank_passages(c, g, pr, &n) : NULL;
    int rc;
    if (pr && !v)
        return call_oom(c);
    *scored = n;
    rcp_jw_key(w, "hits");
    rcp_jw_arr(w);
    for (i = 0; i < n && i < (size_t)q->k; i++)
        if ((rc = write_graph_hit(c, b, g, &v[i], pr)) != 0)
            return retrieve_failed(c, rc);
    rcp_jw_arr_end(w);
    return 0;
}

/* Bytes equal but for ASCII case (labels are folded, a query need not
** be). */
static int same_folded(const char *a, const char *b, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z')
            x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (char)(y - 'A' + 'a');
        if (x != y)
            return 0;
    }
    return 1;
}

/* 1 when every word of label[0..n) is a word of text: a followup that
** adds nothing. */
static int words_in(const char *label, size_t n, const rcp_json *text)
{
    size_t i = 0, j;
    while (i < n) {
        const char *hit;
        size_t wl, at;
        for (j = i; j < n && label[j] != ' '; j++)
            ;
        wl = j - i;
        for (at = 0, hit = NULL; text && at + wl <= text->n; at++)
            if (same_folded(text->s + at, label + i, wl)
                && (at == 0 || text->s[at - 1] == ' ')
                && (at + wl == text->n || text->s[at + wl] == ' ')) {
                hit = text->s + at;
                break;
            }
        if (!hit)
            return 0;
        i = j + 1;
    }
    return 1;
}

/* The frontier of a walk (DRIFT's followups, §7.9 drift; memory clues,
** §7.17): the nodes the walk reached most that are neither seeds nor
** words of the query, best first, at most cap in out; their count. */
static size_t frontier(const graph *g, const double *pr, const rcp_json *query,
                       const uint32_t *seeds, size_t ns, gscored *out,
                       size_t cap)
{
    size_t n = graph_nnodes(g), i, j, nb = 0, ln;
    for (i = 0; pr && ns && i < n; i++) {
        gscored x;
        const char *l;
        if (pr[i] <= 0)
            continue;
        for (j = 0; j < ns && seeds[j] != i; j++)
            ;
        l = graph_label(g, (uint32_t)i, &ln);
        if (j < ns || (query && words_in(l, ln, query)))
            continue;
        x.i = (uint32_t)i;
        x.h = 0;
        x.s = pr[i];
        for (j = nb; j > 0 && by_gscore(&out[j - 1], &x) > 0; j--)
            if (j < cap)
                out[j] = out[j - 1];
        if (j < cap)
            out[j] = x;
        if (nb < cap)
            nb++;
    }
    return nb;
}

/* The seed a frontier node is most strongly linked to (the first seed
** when it touches none). */
static uint32_t linked_seed(const graph *g, uint32_t node,
                            const uint32_t *seeds, size_t ns)
{
    const uint32_t *nbr;
    const double *ew;
    size_t k = graph_adj(g, node, &nbr, &ew), e, j;
    uint32_t seed = seeds[0];
    double sw = 0;
    for (e = 0; e < k; e++)
        for (j = 0; j < ns; j++)
            if (nbr[e] == seeds[j] && ew[e] > sw) {
                sw = ew[e];
                seed = seeds[j];
            }
    return seed;
}

/* A followup: the query (without one: the frontier node's linked seed)
** refined by the frontier node; in the arena, its length in *n. */
static const char *refine(rcp_call *c, const graph *g, const rcp_json *query,
                          uint32_t node, const uint32_t *seeds, size_t ns,
                          size_t *n)
{
    size_t ln, sn;
    const char *l = graph_label(g, node, &ln), *sl;
    char *buf;
    if (query) {
        sl = query->s;
        sn = query->n;
    } else {
        sl = graph_label(g, linked_seed(g, node, seeds, ns), &sn);
    }
    if (!(buf = rcp_arena_alloc(call_arena(c), sn + ln + 2)))
        return NULL;
    memcpy(buf, sl, sn);
    buf[sn] = ' ';
    memcpy(buf + sn + 1, l, ln);
    *n = sn + 1 + ln;
    return buf;
}

static int write_followups(rcp_call *c, const graph *g, const double *pr,
                           const gq *q, const uint32_t *seeds, size_t ns)
{
    rcp_jw *w = call_w(c);
    gscored best[GRAPH_FOLLOWUPS];
    size_t nb = frontier(g, pr, q->query, seeds, ns, best, GRAPH_FOLLOWUPS);
    size_t i, n;
    rcp_jw_key(w, "followups");
    rcp_jw_arr(w);
    for (i = 0; i < nb; i++) {
        const char *f = refine(c, g, q->query, best[i].i, seeds, ns, &n);
        if (!f)
            return call_oom(c);
        rcp_jw_str(w, f, n);
    }
    rcp_jw_arr_end(w);
    return 0;
}

static void write_comm_id(rcp_jw *w, const graph_comm *cm)
{
    char id[48];
    rcp_jw_key(w, "id");
    rcp_jw_str(w, id, (size_t)sprintf(id, "c%lu.%lu",
               (unsigned long)cm->level, (unsigned long)cm->index));
}

/* A community: id, level, summary, score, and its top nodes. */
static void write_community(rcp_jw *w, const graph *g, const graph_comm *cm,
                            double score)
{
    size_t i, ln;
    write_comm_id(w, cm);
    rcp_jw_key(w, "level");
    rcp_jw_int(w, cm->level);
    rcp_jw_key(w, "summary");
    rcp_jw_str(w, cm->summary, cm->sumlen);
    rcp_jw_key(w, "score");
    rcp_jw_double(w, score);
    rcp_jw_key(w, "size");
    rcp_jw_int(w, (int64_t)cm->nnodes);
    rcp_jw_key(w, "nodes");
    rcp_jw_arr(w);
    for (i = 0; i < cm->nnodes && i < 8; i++) {
        const char *l = graph_label(g, cm->nodes[i], &ln);
        rcp_jw_str(w, l, ln);
    }
    rcp_jw_arr_end(w);
}

static size_t graph_level(const graph *g, gq *q)
{
    size_t levels = graph_levels(g);
    if (levels && (size_t)q->level >= levels) {
        graph_note(q, "level past the graph's top level: the top level "
                      "was used");
        return levels - 1;
    }
    return (size_t)q->level;
}

/* §7.9 global: the communities of a level ranked for the query by the
** PageRank mass of their nodes (no query: by their internal weight), with
** a summary of the best three. */
static int graph_global(rcp_call *c, const graph *g, gq *q, const double *pr)
{
    rcp_jw *w = call_w(c);
    size_t lev = graph_level(g, q), n = graph_ncomms(g, lev), i, j, m = 0;
    gscored *v = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *v);
    double total = 0;
    if (!v)
        return call_oom(c);
    for (i = 0; i < n; i++)
        total += graph_comm_at(g, lev, i)->weight;
    for (i = 0; i < n; i++) {
        const graph_comm *cm = graph_comm_at(g, lev, i);
        double s = 0;
        if (pr)
            for (j = 0; j < cm->nnodes; j++)
                s += pr[cm->nodes[j]];
        else if (!q->query && total > 0)
            s = cm->weight / total;
        if (s > 0) {
            v[m].i = (uint32_t)i;
            v[m].h = 0;
            v[m++].s = s;
        }
    }
    qsort(v, m, sizeof *v, by_gscore);
    if (m > (size_t)q->k)
        m = (size_t)q->k;
    rcp_jw_key(w, "summary");
    {
        size_t len = 0;
        char *sum;
        for (i = 0; i < m && i < 3; i++)
            len += graph_comm_at(g, lev, v[i].i)->sumlen + 1;
        if (!(sum = rcp_arena_alloc(call_arena(c), len + 1)))
            return call_oom(c);
        for (i = 0, len = 0; i < m && i < 3; i++) {
            const graph_comm *cm = graph_comm_at(g, lev, v[i].i);
            if (i)
                sum[len++] = ' ';
            memcpy(sum + len, cm->summary, cm->sumlen);
            len += cm->sumlen;
        }
        rcp_jw_str(w, sum, len);
    }
    rcp_jw_key(w, "communities");
    rcp_jw_arr(w);
    for (i = 0; i < m; i++) {
        rcp_jw_obj(w);
        write_community(w, g, graph_comm_at(g, lev, v[i].i), v[i].s);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
    return 0;
}

/* §7.9 communities, a page (§10) at a time: cursor "g1.v<version>.l<level>
** .o<offset>" pages the graph of the version it was issued on; once the
** index changed it is gone (-32015, §12). */
static int graph_communities(rcp_call *c, const builtin *b, const graph *g,
                             gq *q)
{
    rcp_jw *w = call_w(c);
    size_t lev = graph_level(g, q), n, i, off = 0;
    double total = 0;
    if (q->cursor) {
        unsigned long long v;
        unsigned long l, o;
        char tail;
        char buf[96];
        if (q->cursor->n >= sizeof buf)
            return call_fail(c, RCP_INVALID_PARAMS, "cursor", NULL,
                             "not a cursor this server issued");
        memcpy(buf, q->cursor->s, q->cursor->n);
        buf[q->cursor->n] = 0;
        if (sscanf(buf, "g1.v%llu.l%lu.o%lu%c", &v, &l, &o, &tail) != 3)
            return call_fail(c, RCP_INVALID_PARAMS, "cursor", NULL,
                             "not a cursor this server issued");
        if (v != index_version(b))
            return call_fail(c, RCP_NOT_FOUND, "cursor", NULL, "the index "
                             "changed since this cursor was issued; start "
                             "again without it (§10)");
        lev = l < graph_levels(g) ? l : 0;
        off = o;
    }
    n = graph_ncomms(g, lev);
    for (i = 0; i < n; i++)
        total += graph_comm_at(g, lev, i)->weight;
    rcp_jw_key(w, "communities");
    rcp_jw_arr(w);
    for (i = off; i < n && i < off + (size_t)q->k; i++) {
        const graph_comm *cm = graph_comm_at(g, lev, i);
        rcp_jw_obj(w);
        write_community(w, g, cm, total > 0 ? cm->weight / total : 0);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
    if (off + (size_t)q->k < n && call_offers(c, PROTO_CAP_PAGINATION)) {
        char cur[96];
        rcp_jw_key(w, "nextCursor");
        rcp_jw_str(w, cur, (size_t)sprintf(cur, "g1.v%llu.l%lu.o%lu",
                   (unsigned long long)index_version(b), (unsigned long)lev,
                   (unsigned long)(off + (size_t)q->k)));
    }
    return 0;
}

/* §7.9 neighbors: the nodes within hops of the seeds.  A seed scores 1;
** a node reached at hop h scores the best, over its neighbours u at hop
** h - 1, of score(u) x w(u, v) / (u's strongest edge).  The k best, and
** the edges among them. */
static int graph_neighbors(rcp_call *c, const graph *g, gq *q,
                           const uint32_t *seeds, size_t ns)
{
    rcp_jw *w = call_w(c);
    size_t n = graph_nnodes(g), i, j, h, m = 0;
    double *sc = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *sc);
    uint8_t *hop = rcp_arena_alloc(call_arena(c), n + 1);
    gscored *v = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *v);
    int32_t *pos = rcp_arena_alloc(call_arena(c), (n + 1) * sizeof *pos);
    int rc;
    if (!sc || !hop || !v || !pos)
        return call_oom(c);
    for (i = 0; i < n; i++) {
        sc[i] = 0;
        hop[i] = 0xFF;
        pos[i] = -1;
    }
    for (i = 0; i < ns; i++) {
        sc[seeds[i]] = 1;
        hop[seeds[i]] = 0;
    }
    for (h = 1; h <= (size_t)q->hops; h++) {
        if ((rc = call_still_wanted(c)) != 0)
            return retrieve_failed(c, rc);
        for (i = 0; i < n; i++) {
            const uint32_t *nbr;
            const double *ew;
            size_t k;
            double top = 0;
            if (hop[i] != h - 1)
                continue;
            k = graph_adj(g, (uint32_t)i, &nbr, &ew);
            for (j = 0; j < k; j++)
                if (ew[j] > top)
                    top = ew[j];
            for (j = 0; j < k; j++) {
                double s = sc[i] * ew[j] / top;
                if (hop[nbr[j]] < h)
                    continue;
                hop[nbr[j]] = (uint8_t)h;
                if (s > sc[nbr[j]])
                    sc[nbr[j]] = s;
            }
        }
    }
    for (i = 0; i < n; i++)
        if (hop[i] != 0xFF) {
            v[m].i = (uint32_t)i;
            v[m].h = hop[i];
            v[m++].s = sc[i];
        }
    qsort(v, m, sizeof *v, by_gscore);
    if (m > (size_t)q->k)
        m = (size_t)q->k;
    for (i = 0; i < m; i++)
        pos[v[i].i] = (int32_t)i;
    rcp_jw_key(w, "nodes");
    rcp_jw_arr(w);
    for (i = 0; i < m; i++) {
        size_t ln;
        const char *l = graph_label(g, v[i].i, &ln);
        rcp_jw_obj(w);
        rcp_jw_key(w, "id");
        rcp_jw_str(w, l, ln);
        rcp_jw_key(w, "score");
        rcp_jw_double(w, v[i].s);
        rcp_jw_key(w, "hop");
        rcp_jw_int(w, hop[v[i].i]);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_key(w, "edges");
    rcp_jw_arr(w);
    for (i = 0; i < m; i++) {           /* each edge once: from the smaller */
        const uint32_t *nbr;
        const double *ew;
        size_t k = graph_adj(g, v[i].i, &nbr, &ew);
        for (j = 0; j < k; j++) {
            size_t ln;
            const char *l;
            if (nbr[j] <= v[i].i || pos[nbr[j]] < 0)
                continue;
            rcp_jw_obj(w);
            rcp_jw_key(w, "src");
            l = graph_label(g, v[i].i, &ln);
            rcp_jw_str(w, l, ln);
            rcp_jw_key(w, "dst");
            l = graph_label(g, nbr[j], &ln);
            rcp_jw_str(w, l, ln);
            rcp_jw_key(w, "weight");
            rcp_jw_double(w, ew[j]);
            rcp_jw_obj_end(w);
        }
    }
    rcp_jw_arr_end(w);
    return 0;
}

/* §17.2 usage: latency, what was scored, the graph's size, notes. */
static void write_graph_usage(rcp_call *c, const graph *g, const gq *q,
                              double t0, size_t candidates)
{
    rcp_jw *w = call_w(c);
    size_t i;
    rcp_jw_key(w, "usage");
    rcp_jw_obj(w);
    rcp_jw_key(w, "candidates");
    rcp_jw_int(w, (int64_t)candidates);
    write_latency(w, t0);
    rcp_jw_key(w, "passages");
    rcp_jw_int(w, (int64_t)graph_npassages(g));
    rcp_jw_key(w, "graphNodes");
    rcp_jw_int(w, (int64_t)graph_nnodes(g));
    rcp_jw_key(w, "graphEdges");
    rcp_jw_int(w, (int64_t)graph_nedges(g));
    if (q->nnotes || graph_truncated(g)) {
        rcp_jw_key(w, "notes");
        rcp_jw_arr(w);
        for (i = 0; i < q->nnotes; i++)
            rcp_jw_cstr(w, q->notes[i]);
        if (graph_truncated(g))
            rcp_jw_cstr(w, "the graph was capped (passages, nodes or edges)");
        rcp_jw_arr_end(w);
    }
    rcp_jw_obj_end(w);
}

static int m_graph(void *ud, rcp_call *c)
{
    builtin *b = ud;
    rcp_jw *w = call_w(c);
    double t0 = proto_now_ms(), *pr = NULL;
    const graph *g = NULL;
    uint32_t *seeds;
    long ns = 0;
    size_t scored = 0;
    gq q;
    int rc;
    if ((rc = get_graph(c, &q)) != 0 || (rc = live_graph(b, c, &g)) != 0)
        return rc;
    seeds = rcp_arena_alloc(call_arena(c), (GRAPH_ENTITIES + GRAPH_MAX_SEEDS)
                            * sizeof *seeds);
    if (!seeds)
        return call_oom(c);
    if (q.op != OP_COMMUNITIES && (q.query || q.seeds)
        && (ns = graph_seeds(c, g, &q, seeds)) < 0)
        return RCP_INTERNAL_ERROR;
    if (ns > 0 && q.op != OP_NEIGHBORS) {
        if (!(pr = rcp_arena_alloc(call_arena(c), (graph_nnodes(g) + 1)
                                   * sizeof *pr)))
            return call_oom(c);
        if ((rc = graph_ppr(g, seeds, (size_t)ns, pr, call_wanted, c)) != 0)
            return retrieve_failed(c, rc);
    }
    rcp_jw_obj(w);
    switch (q.op) {
    case OP_LOCAL:
    case OP_DRIFT:
        if ((rc = write_graph_hits(c, b, g, pr, &q, &scored)) != 0)
            return rc;
        if (q.op == OP_DRIFT
            && (rc = write_followups(c, g, pr, &q, seeds, (size_t)ns)) != 0)
            return rc;
        break;
    case OP_GLOBAL:
        if ((rc = graph_global(c, g, &q, (q.query || q.seeds) ? pr
                               : NULL)) != 0)
            return rc;
        break;
    case OP_COMMUNITIES:
        if ((rc = graph_communities(c, b, g, &q)) != 0)
            return rc;
        break;
    default:
        if ((rc = graph_neighbors(c, g, &q, seeds, (size_t)ns)) != 0)
            return rc;
    }
    write_graph_usage(c, g, &q, t0, scored);
    rcp_jw_obj_end(w);
    return 0;
}

/* MARK: - §7.17 memory/build and memory/recall */

/* A memory is a snapshot of a corpus's term graph (graph.c): its nodes,
** each node's MEMORY_EDGES strongest edges, and its topic clusters (the
** level-0 communities: key terms, representative passages), as JSON
** (graph_write).  Recall walks it as HippoRAG does -- personalised
** PageRank from the query's terms -- and returns the frontier, the terms
** the walk reached most beyond the query, as clues: the query refined by
** one of them (a surrogate query for retrieve), the term and the query
** term it hangs on as seedIds (graph node ids).  Measured on Cranfield
** (README, Measured).  A global memory of a --data server is durable:
** the memories live in the store's side file MEMORY_FILE, rewritten
** whole (atomically) by every memory/build; a session memory lives in
** the process only. */
#define MEMORY_EDGES     8       /* strongest edges kept per node */
#define MEMORY_MAX_N     50      /* clues per recall (§15.5 fan-out) */
#define MEMORY_FILE      "memories.json"

static const char *const memory_scopes[] = { "global", "session" };
enum { SCOPE_GLOBAL, SCOPE_SESSION };

/* A memory (struct memory in builtin): its id, scope, owner session. */
static struct memory *find_memory(builtin *b, const char *id, size_t n)
{
    size_t i;
    for (i = 0; i < b->nmem; i++)       /* "" is a free slot, never an id */
        if (b->mem[i].id[0] && strlen(b->mem[i].id) == n
            && memcmp(b->mem[i].id, id, n) == 0)
            return &b->mem[i];
    return NULL;
}

static void memory_free(struct memory *m)
{
    graph_free(m->g);
    rcp_free(m->json);
    rcp_free(m->session);
    memset(m, 0, sizeof *m);
}

/* The side file: every global memory, and the next id to mint. */
static int save_memories(const builtin *b)
{
    rcp_buf buf;
    rcp_jw w;
    size_t i;
    int rc;
    if (!b->store)
        return 0;
    rcp_buf_init(&buf);
    rcp_jw_init(&w, &buf);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "format");
    rcp_jw_int(&w, 1);
    rcp_jw_key(&w, "next");
    rcp_jw_int(&w, (int64_t)b->mem_next);
    rcp_jw_key(&w, "memories");
    rcp_jw_arr(&w);
    for (i = 0; i < b->nmem; i++) {
        const struct memory *m = &b->mem[i];
        if (m->scope != SCOPE_GLOBAL)
            continue;
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "id");
        rcp_jw_cstr(&w, m->id);
        rcp_jw_key(&w, "tokens");
        rcp_jw_int(&w, (int64_t)m->tokens);
        rcp_jw_key(&w, "memory");
        rcp_jw_raw(&w, m->json, m->len);
        rcp_jw_obj_end(&w);
    }
    rcp_jw_arr_end(&w);
    rcp_jw_obj_end(&w);
    rc = buf.oom ? -1 : rcp_store_put_file(b->store, MEMORY_FILE, buf.data,
                                           buf.len);
    rcp_buf_free(&buf);
    return rc;
}

/* At open: the global memories a --data server kept.  A side file that
** cannot be read as one is left alone (its memoryIds answer -32015,
** whose remedy is to build again, §12.2); -1 only for lack of memory. */
static int load_memories(builtin *b)
{
    rcp_arena a;
    rcp_buf buf;
    rcp_jw w;
    const rcp_json *root, *list, *v;
    char *data;
    size_t n, i;
    int64_t next;
    int rc = rcp_store_get_file(b->store, MEMORY_FILE, &data, &n);
    if (rc != 0)
        return 0;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&buf);
    root = rcp_json_parse(&a, data, n, 0, NULL);
    list = rcp_json_get(root, "memories");
    if (root && rcp_json_int(rcp_json_get(root, "next"), &next) && next > 0)
        b->mem_next = (uint64_t)next;
    for (i = 0; list && list->type == RCP_JSON_ARRAY && i < list->n
                && b->nmem < MEMORY_MAX; i++) {
        const rcp_json *id = rcp_json_get(&list->kids[i], "id");
        int64_t tokens = 0;
        struct memory *m = &b->mem[b->nmem];
        v = rcp_json_get(&list->kids[i], "memory");
        if (!id || id->type != RCP_JSON_STRING || id->n >= sizeof m->id
            || !v || v->type != RCP_JSON_OBJECT)
            continue;
        (void)rcp_json_int(rcp_json_get(&list->kids[i], "tokens"), &tokens);
        rcp_buf_clear(&buf);
        rcp_jw_init(&w, &buf);
        rcp_jw_value(&w, v);
        if (buf.oom || !(m->json = rcp_malloc(buf.len)))
            goto oom;
        memcpy(m->json, buf.data, buf.len);
        m->len = buf.len;
        memcpy(m->id, id->s, id->n);
        m->id[id->n] = 0;
        m->scope = SCOPE_GLOBAL;
        m->tokens = tokens > 0 ? (size_t)tokens : 0;
        {                           /* ids are never reused, whatever the
                                    ** file says its counter is */
            unsigned long long k;
            if (sscanf(m->id, "mem-%llu", &k) == 1 && k > b->mem_next)
                b->mem_next = k;
        }
        b->nmem++;
    }
    rc = 0;
    if (0) {
oom:
        rc = -1;
    }
    rcp_buf_free(&buf);
    rcp_arena_free(&a);
    rcp_free(data);
    return rc;
}

/* An inline memory/build's documents as a graph source. */
typedef struct inline_src {
    const rcp_json *docs;
    rcp_call       *c;
    char            idbuf[32];
} inline_src;

static int inline_passage(void *ud, size_t i, const char **id, size_t *idlen,
                          const char **text, size_t *len)
{
    inline_src *s = ud;
    const rcp_json *d = &s->docs->kids[i], *v = proto_get(d, "id");
    const rcp_json *t = proto_get(d, "text");
    if (v) {
        *id = v->s;
        *idlen = v->n;
    } else {                    /* no id: its place in documents */
        *id = s->idbuf;
        *idlen = (size_t)sprintf(s->idbuf, "#%lu", (unsigned long)i);
    }
    *text = t->s;
    *len = t->n;
    return 0;
}

static int inline_wanted(void *ud)
{
    return call_still_wanted(((inline_src *)ud)->c);
}

static int check_memory_docs(rcp_call *c, const rcp_json *docs)
{
    size_t i;
    char field[48];
    if (docs->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, "documents", NULL,
                         "documents must be an array of {id?, text}");
    if (docs->n > INDEX_BATCH_LIMIT)
        return call_fail(c, RCP_INVALID_PARAMS, "documents", NULL, "%lu "
                         "documents exceed the limit of %d per call",
                         (unsigned long)docs->n, INDEX_BATCH_LIMIT);
    for (i = 0; i < docs->n; i++) {
        const rcp_json *d = &docs->kids[i], *v;
        if (d->type != RCP_JSON_OBJECT) {
            sprintf(field, "documents[%lu]", (unsigned long)i);
            return call_fail(c, RCP_INVALID_PARAMS, field, NULL,
                             "%s must be an object {id?, text}", field);
        }
        v = proto_get(d, "text");
        if (!v || v->type != RCP_JSON_STRING) {
            sprintf(field, "documents[%lu].text", (unsigned long)i);
            return call_fail(c, RCP_INVALID_PARAMS, field, NULL,
                             "%s must be a string", field);
        }
        v = proto_get(d, "id");
        if (v && v->type != RCP_JSON_STRING) {
            sprintf(field, "documents[%lu].id", (unsigned long)i);
            return call_fail(c, RCP_INVALID_PARAMS, field, NULL,
                             "%s must be a string", field);
        }
    }
    return 0;
}

/* The slot a new memory takes: a free one, else the least recently used
** session memory, else the least recently used global one (its id then
** answers -32015: re-create it, §12.2). */
static struct memory *memory_slot(builtin *b)
{
    size_t i, pick = 0;
    if (b->nmem < MEMORY_MAX)
        return &b->mem[b->nmem++];
    for (i = 1; i < b->nmem; i++) {
        const struct memory *x = &b->mem[i], *y = &b->mem[pick];
        if (x->scope != y->scope ? x->scope == SCOPE_SESSION
                                 : x->used < y->used)
            pick = i;
    }
    memory_free(&b->mem[pick]);
    return &b->mem[pick];
}

/* §7.17 memory/build: a memory over the inline documents or the live
** index, new (a minted memoryId) or replacing the one named. */
static int m_memory_build(void *ud, rcp_call *c)
{
    builtin *b = ud;
    const rcp_json *p = call_params(c), *docs = proto_get(p, "documents");
    const rcp_json *mid, *sid;
    struct memory *m = NULL, old;
    rcp_buf buf;
    rcp_jw w, *out = call_w(c);
    graph *own = NULL;
    const graph *g;
    size_t tokens;
    int rc, scope = SCOPE_GLOBAL;
    char *json, *session = NULL;
    if ((rc = call_str(c, p, "memoryId", &mid)) != 0
        || (rc = call_str(c, p, "sessionId", &sid)) != 0
        || (rc = call_enum(c, p, "scope", memory_scopes, 2, 1, &scope)) != 0
        || (docs && (rc = check_memory_docs(c, docs)) != 0))
        return rc;
    if (mid && !(m = find_memory(b, mid->s, mid->n)))
        return call_fail(c, RCP_NOT_FOUND, "memoryId", NULL, "no memory "
                         "has this memoryId (never built, or evicted): "
                         "build one without memoryId");
    if (docs) {
        inline_src is;
        graph_src src;
        memset(&is, 0, sizeof is);
        is.docs = docs;
        is.c = c;
        src.n = docs->n;
        src.get = inline_passage;
        src.check = inline_wanted;
        src.ud = &is;
        if (!(own = graph_new()))
            return call_oom(c);
        if ((rc = graph_sync(own, &src)) != 0) {
            graph_free(own);
            return retrieve_failed(c, rc);
        }
        g = own;
    } else if ((rc = live_graph(b, c, &g)) != 0) {
        return rc;
    }
    rcp_buf_init(&buf);
    rcp_jw_init(&w, &buf);
    rc = graph_write(g, &w, MEMORY_EDGES, &tokens);
    graph_free(own);
    if (rc || buf.oom || (sid && !(session = rcp_malloc(sid->n + 1)))
        || (rc = call_reserve(c, 128)) != 0) {
        rcp_buf_free(&buf);
        rcp_free(session);
        return call_oom(c);
    }
    json = buf.data;                    /* the memory owns the bytes now */
    if (session) {
        memcpy(session, sid->s, sid->n);
        session[sid->n] = 0;
    }
    if (!mid) {
        m = memory_slot(b);
        sprintf(m->id, "mem-%llu", (unsigned long long)++b->mem_next);
    }
    old = *m;
    m->g = NULL;                        /* read again at the next recall */
    m->json = json;
    m->len = buf.len;
    m->tokens = tokens;
    m->scope = scope;
    m->session = session;
    m->used = ++b->mem_tick;
    if (scope == SCOPE_GLOBAL || old.scope == SCOPE_GLOBAL) {
        if (save_memories(b) != 0) {    /* not durable: not made */
            rcp_free(m->json);
            rcp_free(m->session);
            if (mid) {
                *m = old;
            } else {
                memset(m, 0, sizeof *m);
                if (m == &b->mem[b->nmem - 1])
                    b->nmem--;
            }
            return call_fail(c, RCP_INTERNAL_ERROR, NULL, NULL, "the memory "
                             "could not be stored: %s",
                             rcp_store_error(b->store));
        }
    }
    graph_free(old.g);
    rcp_free(old.json);
    rcp_free(old.session);
    rcp_jw_obj(out);
    rcp_jw_key(out, "memoryId");
    rcp_jw_cstr(out, m->id);
    rcp_jw_key(out, "tokens");
    rcp_jw_int(out, (int64_t)tokens);
    rcp_jw_obj_end(out);
    return 0;
}

/* The memory a recall reads: the one named, else the newest built for its
** session, else (NULL) none -- the live index's own graph. */
static int recall_memory(builtin *b, rcp_call *c, struct memory **out)
{
    const rcp_json *p = call_params(c), *mid, *sid;
    struct memory *m = NULL;
    size_t i;
    int rc;
    *out = NULL;
    if ((rc = call_str(c, p, "memoryId", &mid)) != 0
        || (rc = call_str(c, p, "sessionId", &sid)) != 0)
        return rc;
    if (mid && !(m = find_memory(b, mid->s, mid->n)))
        return call_fail(c, RCP_NOT_FOUND, "memoryId", NULL, "no memory "
                         "has this memoryId (never built, or evicted): "
                         "build one with memory/build");
    for (i = 0; !mid && sid && i < b->nmem; i++) {
        struct memory *x = &b->mem[i];
        if (x->session && strlen(x->session) == sid->n
            && memcmp(x->session, sid->s, sid->n) == 0
            && (!m || x->used > m->used))
            m = x;
    }
    if (m)
        m->used = ++b->mem_tick;
    *out = m;
    return 0;
}

/* The graph a recall walks: the memory's (read once, then kept with
** it), or the live index's. */
static int recall_graph(builtin *b, rcp_call *c, const graph **out)
{
    struct memory *m;
    rcp_json_err err;
    const rcp_json *v;
    int rc;
    if ((rc = recall_memory(b, c, &m)) != 0)
        return rc;
    if (!m)
        return live_graph(b, c, out);
    if (!m->g) {
        if (!(m->g = graph_new()))
            return call_oom(c);
        v = rcp_json_parse(call_scratch(c), m->json, m->len, 0, &err);
        rc = v ? graph_read(m->g, v) : -1;
        rcp_arena_reset(call_scratch(c));
        if (rc) {
            graph_free(m->g);
            m->g = NULL;
            return call_fail(c, RCP_INTERNAL_ERROR, "memoryId", NULL, "the "
                             "memory could not be read (out of memory, or "
                             "damaged): build it again");
        }
    }
    *out = m->g;
    return 0;
}

/* §7.17 memory/recall: clues from a walk of the memory. */
static int m_memory_recall(void *ud, rcp_call *c)
{
    builtin *b = ud;
    const rcp_json *p = call_params(c), *query;
    rcp_jw *w = call_w(c);
    const graph *g = NULL;
    uint32_t seeds[GRAPH_ENTITIES];
    gscored best[MEMORY_MAX_N];
    double *pr = NULL;
    long ns;
    size_t nb = 0, i, n, ln;
    int64_t want;
    int rc;
    if ((rc = call_need(c, p, "query", &query)) != 0
        || (rc = call_str(c, p, "query", &query)) != 0
        || (rc = call_int(c, p, "n", 1, RCP_INT53_MAX, 5, &want)) != 0
        || (rc = recall_graph(b, c, &g)) != 0)
        return rc;
    if (want > MEMORY_MAX_N)
        want = MEMORY_MAX_N;            /* §12: clamped */
    if ((ns = graph_entities(g, query->s, query->n, seeds,
                             GRAPH_ENTITIES)) < 0)
        return call_oom(c);
    if (ns > 0) {
        if (!(pr = rcp_arena_alloc(call_arena(c), (graph_nnodes(g) + 1)
                                   * sizeof *pr)))
            return call_oom(c);
        if ((rc = graph_ppr(g, seeds, (size_t)ns, pr, call_wanted, c)) != 0)
            return retrieve_failed(c, rc);
        nb = frontier(g, pr, query, seeds, (size_t)ns, best, (size_t)want);
    }
    rcp_jw_obj(w);
    rcp_jw_key(w, "clues");
    rcp_jw_arr(w);
    for (i = 0; i < nb; i++) {
        const char *q = refine(c, g, query, best[i].i, seeds, (size_t)ns, &n);
        const char *l;
        if (!q)
            return call_oom(c);
        rcp_jw_obj(w);
        rcp_jw_key(w, "query");
        rcp_jw_str(w, q, n);
        rcp_jw_key(w, "seedIds");
        rcp_jw_arr(w);
        l = graph_label(g, best[i].i, &ln);
        rcp_jw_str(w, l, ln);
        l = graph_label(g, linked_seed(g, best[i].i, seeds, (size_t)ns), &ln);
        rcp_jw_str(w, l, ln);
        rcp_jw_arr_end(w);
        rcp_jw_key(w, "weight");        /* (0, 1]: relative to the best */
        rcp_jw_double(w, best[i].s / best[0].s);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    return 0;
}

/* MARK: - §7.16 feedback */

/* One signal: an object with hitId (string or number), the booleans and a
** reward in [-1, 1]; other members are ignored (§7.16: MAY ignore). */
static int check_signal(rcp_call *c, const rcp_json *sig, size_t i)
{
    static const char *const flags[] = { "used", "cited", "helpful",
        "poisonSuspected", "injectionSuspected" };
    char f[64];
    const rcp_json *id;
    double reward;
    size_t k;
    int yes, rc;
    snprintf(f, sizeof f, "signals[%lu]", (unsigned long)i);
    if (sig->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be an "
                         "object", f);
    snprintf(f, sizeof f, "signals[%lu].hitId", (unsigned long)i);
    if ((rc = call_need(c, sig, f, &id)))
        return rc;
    if (id->type != RCP_JSON_STRING && id->type != RCP_JSON_NUMBER)
        return call_fail(c, RCP_INVALID_PARAMS, f, NULL, "%s must be a "
                         "string or a number", f);
    for (k = 0; k < sizeof flags / sizeof *flags; k++) {
        snprintf(f, sizeof f, "signals[%lu].%s", (unsigned long)i, flags[k]);
        if ((rc = call_bool(c, sig, f, 0, &yes)))
            return rc;
    }
    snprintf(f, sizeof f, "signals[%lu].reward", (unsigned long)i);
    return call_num(c, sig, f, -1, 1, 0, &reward);
}

/* The slot of hit id (made when new and there is room), or NULL: no
** room (FLAG_SLOTS), or *oom set. */
static struct flag *flag_slot(builtin *b, const rcp_json *id, int *oom)
{
    struct flag *f = (struct flag *)flag_find(b, id->s, id->n);
    size_t i;
    for (i = 0; !f && i < b->nflags; i++)       /* one with no report yet */
        if (b->flags[i].idlen == id->n
            && memcmp(b->flags[i].id, id->s, id->n) == 0)
            f = &b->flags[i];
    if (f || b->nflags == FLAG_SLOTS)
        return f;
    if (!b->flags && !(b->flags = rcp_malloc(FLAG_SLOTS * sizeof *b->flags)))
        goto oom;
    f = &b->flags[b->nflags];
    if (!(f->id = rcp_malloc(id->n + 1)))
        goto oom;
    memcpy(f->id, id->s, id->n);
    f->idlen = id->n;
    f->poison = f->injection = 0;
    b->nflags++;
    return f;
oom:
    *oom = 1;
    return NULL;
}

/* Apply signals: count them; with count 0, only make the slots of the
** reported ids (what may fail), so the durable write that follows is
** never left unapplied.  0, or -1 out of memory. */
static int apply_signals(builtin *b, const rcp_json *sigs, int count)
{
    size_t i;
    for (i = 0; i < sigs->n; i++) {
        const rcp_json *s = &sigs->kids[i];
        const rcp_json *p = proto_get(s, "poisonSuspected");
        const rcp_json *j = proto_get(s, "injectionSuspected");
        int po = p && p->type == RCP_JSON_TRUE;
        int in = j && j->type == RCP_JSON_TRUE, oom = 0;
        struct flag *f = po || in ? flag_slot(b, proto_get(s, "hitId"), &oom)
                                  : NULL;
        if (oom)
            return -1;
        if (count && f) {
            f->poison += (uint32_t)po;
            f->injection += (uint32_t)in;
        }
    }
    if (count)
        b->signals += sigs->n;
    return 0;
}

/* --data: a line of DIR/feedback.log, replayed at start.  The lines are
** this server's own compact JSON; one that does not parse (damage) is
** skipped: feedback is advisory, no document depends on it.  -1 only out
** of memory. */
static int replay_feedback(void *ud, const char *line, size_t n)
{
    builtin *b = ud;
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *v, *sigs;
    int rc = -1;
    rcp_arena_init(&a, 0);
    v = rcp_json_parse(&a, line, n, 0, &err);
    sigs = v && v->type == RCP_JSON_OBJECT ? proto_get(v, "signals") : NULL;
    if (!sigs || sigs->type != RCP_JSON_ARRAY)
        rc = 0;
    else
        rc = apply_signals(b, sigs, 0) || apply_signals(b, sigs, 1) ? -1 : 0;
    rcp_arena_free(&a);
    return rc;
}

/* §7.16 feedback {sessionId?, query?, signals} -> {accepted}.  Every
** signal is checked first (a bad one records nothing), then the call is
** made durable (--data: its params, as one line of DIR/feedback.log),
** then applied.  used, cited, helpful and reward are recorded only: they
** change no ranking (README, "feedback").  poisonSuspected and
** injectionSuspected label the hit's trust from then on, advisory; no
** retrieve ranks differently for them.  A request is served whole before
** the next (rcp.c), so no retrieve sees a feedback half applied. */
static int m_feedback(void *ud, rcp_call *c)
{
    builtin *b = ud;
    const rcp_json *sigs, *v;
    rcp_buf line;
    rcp_jw lw;
    size_t i;
    int rc;
    if ((rc = call_str(c, call_params(c), "sessionId", &v)))
        return rc;
    if (v && v->n > SESSION_ID_BYTES)
        return call_too_big(c, "sessionId", v->n, SESSION_ID_BYTES);
    if ((rc = call_str(c, call_params(c), "query", &v))
        || (rc = call_need(c, call_params(c), "signals", &sigs)))
        return rc;
    if (sigs->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, "signals", NULL, "signals "
                         "must be an array of signal objects");
    if (sigs->n > FEEDBACK_SIGNALS)
        return call_fail(c, RCP_INVALID_PARAMS, "signals", NULL, "%lu "
                         "signals; one feedback call takes at most %d "
                         "(§15.5)", (unsigned long)sigs->n,
                         FEEDBACK_SIGNALS);
    for (i = 0; i < sigs->n; i++)
        if ((rc = check_signal(c, &sigs->kids[i], i)))
            return rc;
    if ((rc = call_reserve(c, 64)) || apply_signals(b, sigs, 0))
        return rc ? rc : call_oom(c);
    if (b->store) {
        rcp_buf_init(&line);
        rcp_jw_init(&lw, &line);
        rcp_jw_obj(&lw);
        for (i = 0; i < call_params(c)->n; i++) {
            const rcp_json *m = &call_params(c)->kids[i];
            if (m->keylen == 5 && memcmp(m->key, "_meta", 5) == 0)
                continue;
            rcp_jw_keyn(&lw, m->key, m->keylen);
            rcp_jw_value(&lw, m);
        }
        rcp_jw_obj_end(&lw);
        rc = line.oom ? call_oom(c)
             : rcp_store_feedback(b->store, line.data, line.len)
             ? store_failed(b, c, call_fail(c, RCP_BACKEND_UNAVAILABLE, NULL,
                            NULL, "feedback not recorded: %s",
                            rcp_store_error(b->store))) : 0;
        rcp_buf_free(&line);
        if (rc)
            return rc;
    }
    apply_signals(b, sigs, 1);
    rcp_jw_obj(call_w(c));
    rcp_jw_key(call_w(c), "accepted");
    rcp_jw_int(call_w(c), (int64_t)sigs->n);
    rcp_jw_obj_end(call_w(c));
    return 0;
}

/* MARK: - The backend table --------------------------------------------- */

/* §6: what the built-in engine offers.  Everything but filter, which
** needs fields to filter on (presence => supported). */
static unsigned long builtin_offers(const void *ud)
{
    const builtin *b = ud;
    unsigned long caps = PROTO_CAP(PROTO_CAP_EMBED)
        | PROTO_CAP(PROTO_CAP_SPARSE) | PROTO_CAP(PROTO_CAP_MULTI)
        | PROTO_CAP(PROTO_CAP_RERANK) | PROTO_CAP(PROTO_CAP_RETRIEVE)
        | PROTO_CAP(PROTO_CAP_CITATIONS) | PROTO_CAP(PROTO_CAP_STREAMING)
        | PROTO_CAP(PROTO_CAP_PAGINATION) | PROTO_CAP(PROTO_CAP_INDEX)
        | PROTO_CAP(PROTO_CAP_GRAPH) | PROTO_CAP(PROTO_CAP_MEMORY)
        | PROTO_CAP(PROTO_CAP_TRANSFORM) | PROTO_CAP(PROTO_CAP_SESSION)
        | PROTO_CAP(PROTO_CAP_FEEDBACK);
    return b->nfields ? caps | PROTO_CAP(PROTO_CAP_FILTER) : caps;
}

/* §14.2: retrieve without a dense index (make tiny) serves sparse alone,
** not the three modes L1 asks for. */
static unsigned long builtin_partial(const void *ud)
{
    const builtin *b = ud;
    return rcp_model_has_dense_index(b->model) ? 0
                                               : PROTO_CAP(PROTO_CAP_RETRIEVE);
}

/* §6: the value of each capability it offers. */
static void builtin_describe(const void *ud, int cap, rcp_jw *w)

{
    const builtin *b = ud;
    switch (cap) {
    case PROTO_CAP_EMBED:
        write_embed_cap(w, b->model);
        break;
    case PROTO_CAP_SPARSE:
        write_sparse_cap(w, b->model);
        break;
    case PROTO_CAP_MULTI:
        write_multi_cap(w, b->model);
        break;
    case PROTO_CAP_RERANK:
        write_rerank_cap(w);
        break;
    case PROTO_CAP_RETRIEVE:
        write_retrieve_cap(w, b);
        break;

    case PROTO_CAP_FILTER:
        write_filter_cap(w, b);
        break;
    case PROTO_CAP_GRAPH:       /* §7.9: exactly the ops m_graph serves */
        rcp_jw_obj(w);
        write_strings(w, "ops", graph_ops, 5);
        rcp_jw_obj_end(w);
        break;
    case PROTO_CAP_MEMORY:      /* §7.17: both scopes, and recall's clues */
        rcp_jw_obj(w);
        write_strings(w, "scopes", memory_scopes, 2);
        rcp_jw_key(w, "clues");
        rcp_jw_bool(w, 1);
        rcp_jw_obj_end(w);
        break;
    case PROTO_CAP_TRANSFORM:
        write_transform_cap(w);
        break;
    case PROTO_CAP_SESSION:             /* §7.7.3 */
        rcp_jw_obj(w);
        rcp_jw_key(w, "dedup");
        rcp_jw_bool(w, 1);
        rcp_jw_key(w, "ttlSeconds");
        rcp_jw_int(w, SESSION_TTL_S);
        rcp_jw_obj_end(w);
        break;
    case PROTO_CAP_INDEX:
        rcp_jw_obj(w);
        rcp_jw_key(w, "writable");
        rcp_jw_bool(w, !b->read_only);
        if (!b->read_only) {
            rcp_jw_key(w, "chunking");  /* §7.10 chunk: true */
            rcp_jw_bool(w, 1);
        }
        rcp_jw_obj_end(w);
        break;
    default:    /* citations (§7.7: hits carry citation, trust), streaming
                ** (§9: progress with a token), pagination (§10): presence
                ** is all they say (§6: the value MAY be {}) */
        rcp_jw_obj(w);
        rcp_jw_obj_end(w);
    }
}

static void builtin_close(void *ud)
{
    builtin *b = ud;
    size_t i;
    graph_free(b->graph);
    for (i = 0; i < b->nflags; i++)
        rcp_free(b->flags[i].id);
    rcp_free(b->flags);
    for (i = 0; i < SESSION_SLOTS; i++)
        if (b->sess[i]) {
            rcp_free(b->sess[i]->id);
            rcp_free(b->sess[i]);
        }
    store_idem_free(&b->own_idem);
    rcp_free(b->screen);
    rcp_free(b->screened->v);
    rcp_free(b->screened);
    for (i = 0; i < b->nmem; i++)
        memory_free(&b->mem[i]);
    rcp_free(b->fno);
    rcp_free(b);
}

/* One handler per roster row; the rows RCP/1 defines that this engine
** does not serve stay NULL (their capabilities are not offered). */
static const proto_backend builtin_backend = {
    builtin_offers,
    builtin_partial,
    builtin_describe,
    {
        [PROTO_M_EMBED]        = m_embed,
        [PROTO_M_SPARSE]       = m_embed_sparse,
        [PROTO_M_MULTI]        = m_embed_multi,
        [PROTO_M_RERANK]       = m_rerank,
        [PROTO_M_RETRIEVE]     = m_retrieve,
        [PROTO_M_TRANSFORM]    = m_transform,
        [PROTO_M_GRAPH]        = m_graph,
        [PROTO_M_FEEDBACK]     = m_feedback,
        [PROTO_M_INDEX_ADD]    = m_index_add,
        [PROTO_M_INDEX_DELETE] = m_index_delete,
        [PROTO_M_MEMORY_BUILD] = m_memory_build,
        [PROTO_M_MEMORY_RECALL] = m_memory_recall
    },
    builtin_close
};


/* §8: each field the server advertises is one the engine reads values
** of (rcp_model_opts.fields), under the same name with the same type:
** the engine filters on the values it typed when documents were added,
** so a field it was not told of could only ever match nothing.  0, or -1
** (out of memory, or a field the model does not declare so). */
static int map_fields(builtin *b)
{
    size_t i, j, n;
    const rcp_field *mf = rcp_model_fields(b->model, &n);
    if (!b->nfields)
        return 0;
    if (!b->fields || !(b->fno = rcp_malloc(b->nfields * sizeof *b->fno)))
        return -1;
    for (i = 0; i < b->nfields; i++) {
        const rcp_field *f = &b->fields[i];
        for (j = 0; j < n; j++)
            if (mf[j].namelen == f->namelen && mf[j].type == f->type
                && (!f->namelen || memcmp(mf[j].name, f->name,
                                          f->namelen) == 0))
                break;
        if (j == n)
            return -1;
        b->fno[i] = j;
    }
    return 0;
}

int methods_open(const rcp_server_opts *o, const proto_backend **be,
                 void **ud)
{
    builtin *b;
    *be = NULL;
    *ud = NULL;
    if (!o || !o->model)
        return 0;
    if (!(b = rcp_malloc(sizeof *b)))
        return -1;
    memset(b, 0, sizeof *b);
    if (!(b->screen = text_screen_new())
        || !(b->screened = rcp_malloc(sizeof *b->screened))) {
        rcp_free(b->screen);
        rcp_free(b);
        return -1;
    }
    memset(b->screened, 0, sizeof *b->screened);
    b->model = o->model;
    b->store = o->store;
    b->fields = o->fields;
    b->nfields = o->nfields;
    /* §15.2: an unknown level is never read as more than untrusted */
    b->writer.trust = o->write_trust && rcp_trust_level(o->write_trust) > 0
                      ? rcp_trust_level(o->write_trust) : RCP_TRUST_UNTRUSTED;
    b->writer.source = o->write_source ? o->write_source : "clients";
    b->writer.sourcelen = strlen(b->writer.source);
    if (b->writer.sourcelen > RCP_MAX_SOURCE_BYTES)
        b->writer.sourcelen = RCP_MAX_SOURCE_BYTES;
    b->read_only = o->read_only;
    b->idem = b->store ? store_idem_table(b->store) : &b->own_idem;
    if (map_fields(b) != 0) {
        builtin_close(b);
        return -1;
    }
    b->rewrites = o->debug ? RETRIEVE_REWRITES_ALL : RETRIEVE_REWRITES;
    if (b->store)
        b->voff = rcp_store_version(b->store) - rcp_model_version(b->model);
    if (b->store && (load_memories(b) != 0
                     || rcp_store_feedback_each(b->store, replay_feedback,
                                                b))) {
        builtin_close(b);
        return -1;
    }
    *be = &builtin_backend;
    *ud = b;
    return 0;
}
