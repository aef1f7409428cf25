/*
** rcp.c -- the RCP/1 protocol, knowing no engine: the §12 writers, the §4
** envelope, the §6 capability framework and §14 level, the §7 roster and
** dispatch, the session methods, §7.14 cancel, §9 progress and the
** checkpoint, §11 batching, §13 lifecycle, and the parameter readers.
**
** The file follows the spec's table of contents, with two exceptions: the
** capability table and the roster come first, because they are what the
** rest reads, and the §12 error writers next, because everything below
** uses them.  Grep for a section number ("§11") to find its code and its
** tests (tests/test_rcp.c).
**
** NOTES ON THE DESIGN
**
** A request changes hands four times, each at one seam (rcp.h, INTERNAL):
**
**   bytes -> frame      transport.c reads, frames (§5.1) and hands each
**                       line to rcp_server_handle, lending a proto_io hook
**   frame -> message    here: JSON parse, envelope checks (§4), batch split
**                       (§11), lifecycle (§13), gating (§7, §12), _meta
**   message -> method   the roster row: a session method here, a gated
**                       one through the backend's table (proto_backend)
**   method -> engine    methods.c: params checks, the engine, the result
**
** Nothing flows back up.  The protocol never reads, writes or polls: what
** a request needs of its connection (take in arrived cancels, write the
** queue now, wait) it asks of the hook, and in-process (no hook) nothing
** arrives and the caller's buffer is the peer.  It never names an engine
** call either: which capabilities exist, what they say in info and what
** serves each gated row is the backend's table, asked once (§13.2).
**
** Invariants:
**   1. Every request is answered exactly once (§13.1); a notification never
**      (§4.5).  One function, call(), writes every response to a request.
**   2. The response id is the request id re-serialised from its parsed
**      text, so it keeps its JSON type and its bytes (§4.7).
**   3. A frame's parse tree and scratch live in s->arena, released at once
**      when the frame is done.  The frame is copied into the arena before
**      parsing, so the transport reading more input while it runs (the
**      checkpoint) can never move bytes the tree points into.
**   4. The peer gets only frames (§5.1).  Progress notifications go to
**      the frame's out as whole lines, never inside a response.
**   5. After the shutdown response nothing more is processed (§13.1).
**   6. Nothing malformed reaches the peer.  An answer is built in s->resp
**      and checked in one place, seal(), before it is sent: one that ran
**      out of memory becomes -32603 for the same id.  The out queue and a
**      batch array take a line whole or not at all; when memory to hold
**      one is lacking it goes straight out through the hook instead of
**      being dropped (send_line, batch_add).  Whoever sees a buffer's oom
**      clears it.
**   7. A finished answer never waits behind a long handler: the hook is
**      flushed before any gated method runs (dispatch), while answers of
**      session methods (ping, info, ...) are left to the transport to
**      batch into few writes.
**   8. The capabilities are one table (caps[], in info's order) and a set
**      of them one mask, fixed when the server is made (§13.2): info and
**      initialize agree, the level is computed from the table, and a
**      capability offered is fully served -- its rows have handlers
**      (asserted when the server is made).
**   9. A gated row runs only after every check the protocol owns (§13,
**      §7, _meta, cancel, deadline): a backend never sees a request that
**      is cancelled, out of time or not advertised.
**
** Lifecycle (§13), state -> event -> state, and the function doing it:
**
**   UNINIT  initialize ok             READY   m_initialize
**   UNINIT  initialize -32002/-32602  UNINIT  m_initialize
**   UNINIT  any other but info/ping/  UNINIT  dispatch (-32001)
**           shutdown
**   READY   initialize                READY   dispatch (-32600)
**   an implicit session (§5.2 stateless HTTP) is READY from its start,
**   and its initialize is answered again (m_initialize), never -32600
**   any     shutdown answered         ended   m_shutdown (the session's:
**                                             over stdio the server's own;
**                                             over HTTP the one lent,
**                                             proto_use_session);
**                                             rcp_server_handle returns 1,
**                                             the transport stops serving
**                                             that session once written
**   any     EOF on the transport      closing proto_end, called by
**                                             rcp_server_run once what was
**                                             received is finished and
**                                             flushed
*/
#include "rcp.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARENA_LIMIT     ((size_t)256 << 20)
#define DEFAULT_DEADLINE_MS 60000L
#define SLEEP_MAX_MS    3600000L
#define MAX_NOTES       8
#define SLOW_REQUEST_MS 1000.0  /* §17.1 a request slower is logged */

/* A request of the frame being served that may still be cancelled. */
typedef struct flight {
    const rcp_json *id;
    int cancelled;
} flight;

struct rcp_server {
    rcp_server_opts opts;
    proto_session own;      /* the session when no transport lends one */
    proto_session *sess;    /* the session of the frame being served */
    unsigned long caps;     /* §6 what is offered: PROTO_CAP bits, fixed
                               when the server is made (§13.2) */
    const char *level;      /* §14 the level they prove, or NULL */
    const proto_backend *be;  /* serves the gated methods, or NULL */
    void    *be_ud;
    rcp_arena arena;        /* the current frame (invariant 3) */
    rcp_arena scratch;      /* the backend's, reset after each use */
    rcp_arena peek;         /* checkpoint look-ahead parses */
    rcp_buf  resp;          /* the answer being built (invariant 6) */
    rcp_buf  batch;         /* the batch array being built (§11) */
    size_t   nanswers;      /* members in it so far */
    int      batch_open;    /* its head is already written (spilled) */
    rcp_buf *sink;          /* where finished lines go: the frame's out */
    const proto_io *io;     /* lent by the transport while it runs */
    rcp_server_stats stats;
    int      closing;       /* EOF: the transport is done (proto_end;
                               shutdown ends a session: sess->ended) */
    /* §7.14: the requests of the current frame */
    flight  *flights;
    size_t   nflights;
};

struct rcp_call {
    rcp_server     *s;
    const rcp_json *id;        /* NULL for a notification */
    const rcp_json *params;    /* always an object */
    const rcp_json *token;     /* _meta.progressToken, or NULL */
    flight         *fl;        /* cancellation slot, or NULL */
    double          deadline;  /* monotonic ms; 0 = none */
    double          progress;  /* last progress sent (§9: rising) */
    rcp_jw          w;         /* writes the result into s->resp */
    size_t nnotes;
    int retry;                  /* §12.2 error.data.retryable: -1 by the
                                   code (retryable()), 0 no, 1 yes */
    int log_level;              /* §17.1 this request's: its _meta.logLevel,
                                   else the session's */
    const char *method;         /* its name, for the logs */
    size_t methodlen;
    /* the message buffers last: call() zeroes what comes before them and
    ** only their first bytes (1.4 KB; a ping is ~2400 instructions, and
    ** clearing them all was 380 of them) */
    char field[128], option[64], detail[256];
    char notes[MAX_NOTES][96];  /* §7.7 usage.notes (strict:false) */
};

/* MARK: - §6 and §7: the capabilities and the roster -------------------- */

/* §6: every capability RCP/1 names, once, in the order info writes them.
** The flags are what §14 counts it for: a retrieval capability (§14.1
** item 2), one L1 asks for (§14.2), one of L2's selection (§14.3). */
enum { CAP_RETRIEVAL = 1, CAP_L1 = 2, CAP_L2 = 4 };
static const struct cap {
    const char *key;
    unsigned    flags;
} caps[PROTO_NCAPS] = {
    [PROTO_CAP_EMBED]      = { "embed",       CAP_RETRIEVAL },
    [PROTO_CAP_SPARSE]     = { "sparseEmbed", CAP_L2 },
    [PROTO_CAP_MULTI]      = { "multiVector", CAP_L2 },
    [PROTO_CAP_RERANK]     = { "rerank",      CAP_RETRIEVAL | CAP_L2 },
    [PROTO_CAP_RETRIEVE]   = { "retrieve",    CAP_RETRIEVAL | CAP_L1 },
    [PROTO_CAP_FILTER]     = { "filter",      CAP_L1 },
    [PROTO_CAP_CITATIONS]  = { "citations",   CAP_L1 },
    [PROTO_CAP_STREAMING]  = { "streaming",   CAP_L2 },
    [PROTO_CAP_PAGINATION] = { "pagination",  CAP_L2 },
    [PROTO_CAP_INDEX]      = { "index",       0 },
    [PROTO_CAP_TRANSFORM]  = { "transform",   CAP_L2 },
    [PROTO_CAP_GRAPH]      = { "graph",       CAP_RETRIEVAL | CAP_L2 },
    [PROTO_CAP_SESSION]    = { "session",     0 },
    [PROTO_CAP_FEEDBACK]   = { "feedback",    0 },
    [PROTO_CAP_MEMORY]     = { "memory",      0 },
    [PROTO_CAP_LOG]        = { "log",         CAP_L2 },
    [PROTO_CAP_CATALOG]    = { "catalog",     0 },
    [PROTO_CAP_X_RCP]      = { "x-rcp",       0 }   /* §6.2, --debug */
};


static int m_initialize(rcp_call *c);
static int m_info(rcp_call *c);
static int m_ping(rcp_call *c);
static int m_shutdown(rcp_call *c);
static int m_sleep(rcp_call *c);

/* §7: the roster, mirrored, in the spec's order.  cap is the capability
** that gates the method (-1: a REQUIRED core method); anytime marks the
** methods callable before initialize (§13).  The session methods are
** served here (fn); a gated one by the backend's handler for its row, so
** a row the backend leaves NULL, like a capability it does not offer, is
** -32003 (§7: defined by RCP, not offered here). */
typedef struct method {
    const char *name;
    int         cap;
    int         anytime;
    int       (*fn)(rcp_call *c);
    int         row;        /* PROTO_M_* when the backend serves it */
} method;

static const method roster[] = {
    { "initialize",      -1, 1, m_initialize, -1 },
    { "info",            -1, 1, m_info,       -1 },
    { "ping",            -1, 1, m_ping,       -1 },
    { "shutdown",        -1, 1, m_shutdown,   -1 },
    { "embed",           PROTO_CAP_EMBED,     0, NULL, PROTO_M_EMBED },
    { "embed/sparse",    PROTO_CAP_SPARSE,    0, NULL, PROTO_M_SPARSE },
    { "embed/multi",     PROTO_CAP_MULTI,     0, NULL, PROTO_M_MULTI },
    { "rerank",          PROTO_CAP_RERANK,    0, NULL, PROTO_M_RERANK },
    { "retrieve",        PROTO_CAP_RETRIEVE,  0, NULL, PROTO_M_RETRIEVE },
    { "query/transform", PROTO_CAP_TRANSFORM, 0, NULL, PROTO_M_TRANSFORM },
    { "graph",           PROTO_CAP_GRAPH,     0, NULL, PROTO_M_GRAPH },
    { "index/add",       PROTO_CAP_INDEX,     0, NULL, PROTO_M_INDEX_ADD },
    { "index/delete",    PROTO_CAP_INDEX,     0, NULL, PROTO_M_INDEX_DELETE },
    { "catalog/list",    PROTO_CAP_CATALOG,   0, NULL, PROTO_M_CATALOG_LIST },
    { "feedback",        PROTO_CAP_FEEDBACK,  0, NULL, PROTO_M_FEEDBACK },
    { "memory/build",    PROTO_CAP_MEMORY,    0, NULL, PROTO_M_MEMORY_BUILD },
    { "memory/recall",   PROTO_CAP_MEMORY,    0, NULL, PROTO_M_MEMORY_RECALL },
    { "x-rcp/sleep",     PROTO_CAP_X_RCP,     0, m_sleep,      -1 }
};

static const rcp_json empty_object = { RCP_JSON_OBJECT, 0, NULL, NULL,
                                       NULL, 0 };

static int has_cap(const rcp_server *s, int cap)
{
    return (s->caps & PROTO_CAP(cap)) != 0;
}

/* Does anyone serve m?  A session method always; a gated one when its
** capability is offered and the backend has a handler for its row. */
static int served(const rcp_server *s, const method *m)
{
    if (m->cap >= 0 && !has_cap(s, m->cap))
        return 0;
    return m->fn || (s->be && s->be->handle[m->row]);
}

#ifndef NDEBUG
/* The backend's side of the seam: a capability it offers is one it fully
** serves -- a handler for every roster row the capability gates. */
static int complete(const rcp_server *s)
{
    size_t i;
    for (i = 0; i < sizeof roster / sizeof *roster; i++)
        if (roster[i].cap >= 0 && has_cap(s, roster[i].cap)
            && !served(s, &roster[i]))
            return 0;
    return 1;
}
#endif

/* A method by name; vendor methods exist only while their capability is
** advertised (an x- name we do not offer is simply undefined, §6.2). */
static const method *find_method(const rcp_server *s, const rcp_json *name)
{
    size_t i;
    for (i = 0; i < sizeof roster / sizeof *roster; i++) {
        const method *m = &roster[i];
        if (strlen(m->name) == name->n && memcmp(m->name, name->s,
                                                 name->n) == 0)
            return (m->name[0] == 'x' && !has_cap(s, m->cap)) ? NULL : m;
    }
    return NULL;
}

static double (*test_clock)(void *ud);
static void *test_clock_ud;

void proto_set_clock(double (*now_ms)(void *ud), void *ud)
{
    test_clock = now_ms;
    test_clock_ud = ud;
}

double proto_now_ms(void)
{
    struct timespec ts;
    if (test_clock)
        return test_clock(test_clock_ud);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void proto_write_ms(rcp_jw *w, const char *key, double ms)
{
    rcp_jw_key(w, key);
    rcp_jw_double(w, (double)(long)(ms * 1000) / 1000);
}

void proto_write_names(rcp_jw *w, const char *key,
                       const char *const *names, size_t n,
                       unsigned long mask)
{
    size_t i;
    assert(n <= 32);
    rcp_jw_key(w, key);
    rcp_jw_arr(w);
    for (i = 0; i < n; i++)
        if (mask & (1ul << i))
            rcp_jw_cstr(w, names[i]);
    rcp_jw_arr_end(w);
}

/* MARK: - §12 Errors ----------------------------------------------------- */

/* Record an error on c and return its code, so handlers can
** `return call_fail(c, RCP_INVALID_PARAMS, "k", NULL, "k must be ...")`.
** §12.1: field for -32602, option for -32005, detail always. */
int call_fail(rcp_call *c, int code, const char *field, const char *option,
              const char *fmt, ...)
{
    va_list ap;
    c->field[0] = c->option[0] = '\0';
    if (field)
        snprintf(c->field, sizeof c->field, "%s", field);
    if (option)
        snprintf(c->option, sizeof c->option, "%s", option);
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
    return code;
}

/* §12.2, §12.1 retryable: "whether an identical retry might succeed".
** The table's "yes" rows (-32011, -32010 transient, -32014) and "maybe"
** (-32603: retry once) are true; the rows whose retry needs the request or
** the state to change first (-32001 after initialize, -32016 re-read) and
** -32006 (n/a) carry nothing, like the "no" rows: only a retryable error
** says so (README Decisions, "Errors").  -1: say nothing. */
static int retryable(int code)
{
    switch (code) {
    case RCP_RATE_LIMITED: case RCP_BACKEND_UNAVAILABLE: case RCP_TIMEOUT:
    case RCP_INTERNAL_ERROR:
        return 1;
    default:
        return -1;
    }
}

static void write_id(rcp_jw *w, const rcp_json *id)
{
    if (id)
        rcp_jw_value(w, id);
    else
        rcp_jw_null(w);
}

/* §4.3 and §12: {"jsonrpc":"2.0","id":..,"error":{code,message,data}}. */
static void write_error(rcp_buf *b, const rcp_json *id, int code,
                        const char *field, const char *option,
                        const char *detail, int retry)
{
    rcp_jw w;
    if (retry < 0)
        retry = retryable(code);
    rcp_jw_init(&w, b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    write_id(&w, id);
    rcp_jw_key(&w, "error");
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "code");
    rcp_jw_int(&w, code);
    rcp_jw_key(&w, "message");
    rcp_jw_cstr(&w, rcp_code_message(code));
    if ((field && *field) || (option && *option) || (detail && *detail)
        || retry >= 0) {
        rcp_jw_key(&w, "data");
        rcp_jw_obj(&w);
        if (field && *field) {
            rcp_jw_key(&w, "field");
            rcp_jw_cstr(&w, field);
        }
        if (option && *option) {
            rcp_jw_key(&w, "option");
            rcp_jw_cstr(&w, option);
        }
        if (detail && *detail) {
            rcp_jw_key(&w, "detail");
            rcp_jw_cstr(&w, detail);
        }
        if (retry >= 0) {
            rcp_jw_key(&w, "retryable");
            rcp_jw_bool(&w, retry);
        }
        rcp_jw_obj_end(&w);
    }
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
}

/* An error answered outside any request (id null): parse errors, frames
** too large, empty or oversized batches. */
static void seal(rcp_server *s, const rcp_json *id);
static void frame_error(rcp_server *s, int code, const char *fmt, ...)
{
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    rcp_buf_clear(&s->resp);
    write_error(&s->resp, NULL, code, NULL, NULL, detail, -1);
    seal(s, NULL);
}

/* The last resort when not even -32603 for the request's id can be built
** (an id too long for the memory left): an answer without the id, so the
** client at least learns that something failed, never silence. */
static const char oom_line[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
    "{\"code\":-32603,\"message\":\"Internal error\",\"data\":{\"detail\":"
    "\"out of memory: the answer and its request id were lost\"}}}";
#define RESP_RESERVE 4096   /* s->resp never has less: room for -32603 */

/* Invariant 6: every answer passes here before it is sent.  One that ran
** out of memory while being built becomes -32603 for the same id (a
** bigger answer cannot be more correct than that), and the flag is
** cleared here, by the one who saw it. */
static void seal(rcp_server *s, const rcp_json *id)
{
    if (!s->resp.oom)
        return;
    s->stats.oom_answers++;
    rcp_buf_clear(&s->resp);
    write_error(&s->resp, id, RCP_INTERNAL_ERROR, NULL, NULL,
                "out of memory while building the response", -1);
    if (!s->resp.oom)
        return;
    rcp_buf_clear(&s->resp);     /* fits RESP_RESERVE: never fails */
    rcp_buf_put(&s->resp, oom_line, sizeof oom_line - 1);
}

/* A write's answer must not fail once the write is done (§13.1, §7.10:
** an applied write is acknowledged), so a handler reserves the room its
** result needs before it changes anything. */
/* Every NULL from an allocation becomes this answer, never a crash.
** When it came from the request's memory cap rather than from malloc
** (the arena says which), the request is too large -- the client's to
** fix, §15.5 -- not the server's failure. */
int call_oom(rcp_call *c)
{
    if (c->s->arena.full || c->s->scratch.full)
        return call_fail(c, RCP_PAYLOAD_TOO_LARGE, NULL, NULL, "the "
                         "request needs more memory than this server "
                         "allows (§15.5)");
    return call_fail(c, RCP_INTERNAL_ERROR, NULL, NULL, "out of memory");
}

int call_reserve(rcp_call *c, size_t n)
{
    if (rcp_buf_reserve(&c->s->resp, n) == 0)
        return 0;
    return call_fail(c, RCP_INTERNAL_ERROR, NULL, NULL,
                     "out of memory: nothing was written");
}

/* MARK: - §4 Message format ---------------------------------------------- */

/* §4.1, §4.7: a request id is a string or a number, never null. */
static int valid_id(const rcp_json *id)
{
    return id && (id->type == RCP_JSON_STRING || id->type == RCP_JSON_NUMBER);
}

/* §4.7: "same JSON type and value".  Numbers compare by value where a
** double holds it exactly: integers within 2^53 (so a cancel naming 1.0
** finds request 1) and fractions; integers beyond 2^53 only by their
** text, so 9007199254740993 never names 9007199254740992. */
static int same_id(const rcp_json *a, const rcp_json *b)
{
    int64_t x, y;
    int ix, iy;
    double p, q;
    if (a->type != b->type)
        return 0;
    if (a->n == b->n && memcmp(a->s, b->s, a->n) == 0)
        return 1;
    if (a->type != RCP_JSON_NUMBER)
        return 0;
    ix = rcp_json_int(a, &x);
    iy = rcp_json_int(b, &y);
    if (ix || iy)
        return ix && iy && x == y;
    p = rcp_json_num(a);
    q = rcp_json_num(b);
    return p == q && p != floor(p);
}

static int has_prefix(const rcp_json *v, const char *prefix)
{
    size_t n = strlen(prefix);
    return v->n >= n && memcmp(v->s, prefix, n) == 0;
}

/* MARK: - Parameter readers (§4.6, §12.1) ------------------------------- */

/* One reader per JSON type, after Lua's luaL_check*: each takes the
** object and the path error.data.field names ("fusion.rrfK": the key is
** its last part), stores the value or the default, and returns 0 or the
** -32602 it recorded.  Every method body reads its params through them,
** so a wrong type is reported the same way everywhere. */

/* §4.6: null where the schema does not permit it means absent. */
const rcp_json *proto_get(const rcp_json *obj, const char *key)
{
    const rcp_json *v = rcp_json_get(obj, key);
    return v && v->type == RCP_JSON_NULL ? NULL : v;
}

static const char *path_key(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

int call_need(rcp_call *c, const rcp_json *obj, const char *path,
              const rcp_json **out)
{
    if ((*out = proto_get(obj, path_key(path))) != NULL)
        return 0;
    return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "%s is required",
                     path);
}

int call_bool(rcp_call *c, const rcp_json *obj, const char *path, int def,
              int *out)
{
    const rcp_json *v = proto_get(obj, path_key(path));
    *out = def;
    if (!v)
        return 0;
    if (v->type != RCP_JSON_TRUE && v->type != RCP_JSON_FALSE)
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL,
                         "%s must be a boolean", path);
    *out = v->type == RCP_JSON_TRUE;
    return 0;
}

int call_int(rcp_call *c, const rcp_json *obj, const char *path, int64_t lo,
             int64_t hi, int64_t def, int64_t *out)
{
    const rcp_json *v = proto_get(obj, path_key(path));
    *out = def;
    if (!v)
        return 0;
    if (!rcp_json_int(v, out) || *out < lo || *out > hi)
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL,
                         "%s must be an integer from %lld to %lld", path,
                         (long long)lo, (long long)hi);
    return 0;
}

int call_num(rcp_call *c, const rcp_json *obj, const char *path, double lo,
             double hi, double def, double *out)
{
    const rcp_json *v = proto_get(obj, path_key(path));
    *out = def;
    if (!v)
        return 0;
    *out = v->type == RCP_JSON_NUMBER ? rcp_json_num(v) : lo - 1;
    if (!(*out >= lo && *out <= hi))
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL,
                         "%s must be a number from %g to %g", path, lo, hi);
    return 0;
}

/* The typed readers of a value that stays JSON: *out NULL when absent. */
static int typed(rcp_call *c, const rcp_json *obj, const char *path,
                 rcp_json_type type, const char *what, const rcp_json **out)
{
    *out = proto_get(obj, path_key(path));
    if (*out && (*out)->type != type)
        return call_fail(c, RCP_INVALID_PARAMS, path, NULL, "%s must be %s",
                         path, what);
    return 0;
}

int call_str(rcp_call *c, const rcp_json *obj, const char *path,
             const rcp_json **out)
{
    return typed(c, obj, path, RCP_JSON_STRING, "a string", out);
}

int call_obj(rcp_call *c, const rcp_json *obj, const char *path,
             const rcp_json **out)
{
    return typed(c, obj, path, RCP_JSON_OBJECT, "an object", out);
}

int proto_pick(const rcp_json *v, const char *const *names, int n)
{
    int i;
    for (i = 0; v && i < n; i++)
        if (rcp_json_streq(v, names[i]))
            return i;
    return -1;
}

/* §7.7: an option this server does not offer is -32005 (error.data.option)
** unless the client set strict:false, in which case it is skipped and the
** skip is reported in usage.notes.  Returns 0 to go on without it. */
int call_unsupported(rcp_call *c, int strict, const char *option,
                     const char *why)
{
    if (strict)
        return call_fail(c, RCP_OPTION_UNSUPPORTED, NULL, option, "%s",
                         why);
    if (c->nnotes < MAX_NOTES)
        snprintf(c->notes[c->nnotes++], sizeof c->notes[0],
                 "ignored %s: not supported", option);
    call_log(c, PROTO_LOG_WARNING, "options", NULL, NULL, "%.*s: %s ignored "
             "(strict false): %s", (int)c->methodlen, c->method, option, why);
    return 0;
}

int call_enum(rcp_call *c, const rcp_json *obj, const char *path,
              const char *const *names, int n, int strict, int *out)
{
    const rcp_json *v;
    int rc, i;
    if ((rc = call_str(c, obj, path, &v)) != 0 || !v)
        return rc;
    if ((i = proto_pick(v, names, n)) >= 0) {
        *out = i;
        return 0;
    }
    return call_unsupported(c, strict, path, "this value is not advertised");
}

/* A size cap (README Decisions, "Limits"): -32602 naming the field. */
int call_too_big(rcp_call *c, const char *field, size_t n, size_t cap)
{
    return call_fail(c, RCP_INVALID_PARAMS, field, NULL, "%s is %lu bytes; "
                     "this server takes at most %lu", field,
                     (unsigned long)n, (unsigned long)cap);
}

/* MARK: - §6 Capabilities, §14 the conformance level -------------------- */

/* §14: the level the offered capabilities prove.  L0 needs a retrieval
** capability (§14.1 item 2); L1 adds every capability §14.2 asks for
** (retrieve, filter, citations), each served whole (partial: retrieve
** without its three modes is not); L2 adds a selection -- here at least
** two -- of the §14.3 surfaces.  Without a retrieval capability no level
** is proven, so none is declared rather than overclaimed (§14.5). */
static const char *conformance_level(unsigned long offered,
                                     unsigned long partial)
{
    unsigned long l1 = 0;
    size_t i, l2 = 0;
    int l0 = 0;
    for (i = 0; i < PROTO_NCAPS; i++) {
        int on = (offered & PROTO_CAP(i)) != 0;
        l0 |= on && (caps[i].flags & CAP_RETRIEVAL);
        l2 += on && (caps[i].flags & CAP_L2);
        if (caps[i].flags & CAP_L1)
            l1 |= PROTO_CAP(i);
    }
    if (!l0)
        return NULL;
    if ((offered & l1) != l1 || (partial & l1))
        return "L0";
    return l2 >= 2 ? "L2" : "L1";
}

/* §6.2: the vendor capability of --debug gates its x-rcp/ methods. */
static void write_vendor_cap(rcp_jw *w)
{
    rcp_jw_obj(w);
    rcp_jw_key(w, "methods");
    rcp_jw_arr(w);
    rcp_jw_cstr(w, "x-rcp/sleep");
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
}

/* §17.1 the levels notifications/log uses, least severe first. */
static const char *const log_levels[PROTO_LOG_OFF] = {
    "debug", "info", "notice", "warning", "error"
};

/* §6 log {levels}: the protocol's own, for every server. */
static void write_log_cap(rcp_jw *w)
{
    rcp_jw_obj(w);
    proto_write_names(w, "levels", log_levels, PROTO_LOG_OFF, ~0ul);
    rcp_jw_obj_end(w);
}

/* §6: presence => supported; each value is the backend's to describe. */
static void write_capabilities(rcp_jw *w, const rcp_server *s)
{
    size_t i;
    unsigned depth;
    rcp_jw_obj(w);
    depth = w->depth;
    for (i = 0; i < PROTO_NCAPS; i++) {
        if (!has_cap(s, (int)i))
            continue;
        rcp_jw_key(w, caps[i].key);
        if (i == PROTO_CAP_X_RCP)
            write_vendor_cap(w);
        else if (i == PROTO_CAP_LOG)
            write_log_cap(w);
        else
            s->be->describe(s->be_ud, (int)i, w);
        assert(w->depth == depth);      /* describe wrote one value */
    }
    (void)depth;
    rcp_jw_obj_end(w);
}

/* §7.1, §7.2: initialize and info share this result shape; session, for
** initialize on a stateful HTTP session (§5.2), goes in _meta.session. */
static void write_server_info(rcp_jw *w, const rcp_server *s,
                              const char *session)
{
    rcp_jw_obj(w);
    rcp_jw_key(w, "protocolVersion");
    rcp_jw_int(w, RCP_PROTOCOL_VERSION);
    rcp_jw_key(w, "server");
    rcp_jw_obj(w);
    rcp_jw_key(w, "name");
    rcp_jw_cstr(w, "rcp");
    rcp_jw_key(w, "version");
    rcp_jw_cstr(w, RCP_VERSION);
    rcp_jw_obj_end(w);
    rcp_jw_key(w, "capabilities");
    write_capabilities(w, s);
    if (s->level || session) {
        rcp_jw_key(w, "_meta");
        rcp_jw_obj(w);
        if (s->level) {
            rcp_jw_key(w, "conformance");
            rcp_jw_cstr(w, s->level);
        }
        if (session) {
            rcp_jw_key(w, "session");
            rcp_jw_cstr(w, session);
        }
        rcp_jw_obj_end(w);
    }
    rcp_jw_obj_end(w);
}

/* MARK: - §7.14 Cancellation, §13.1 deadlines, §9 progress --------------- */

static flight *find_flight(rcp_server *s, const rcp_json *id)
{
    size_t i;
    for (i = 0; i < s->nflights; i++)
        if (s->flights[i].id && same_id(s->flights[i].id, id))
            return &s->flights[i];
    return NULL;
}

/* §7.14: a cancel for an unknown or answered id is a no-op. */
static void apply_cancel(rcp_server *s, const rcp_json *msg)
{
    const rcp_json *params, *id;
    flight *f;
    if (!msg || msg->type != RCP_JSON_OBJECT || rcp_json_get(msg, "id"))
        return;
    if (!rcp_json_streq(rcp_json_get(msg, "method"), "notifications/cancel")
        || !rcp_json_streq(rcp_json_get(msg, "jsonrpc"), "2.0"))
        return;
    params = proto_get(msg, "params");
    id = params ? proto_get(params, "id") : NULL;
    if (valid_id(id) && (f = find_flight(s, id)) != NULL)
        f->cancelled = 1;
}

static void apply_cancels(rcp_server *s, const rcp_json *root)
{
    size_t i;
    if (root->type == RCP_JSON_ARRAY)
        for (i = 0; i < root->n; i++)
            apply_cancel(s, &root->kids[i]);
    else
        apply_cancel(s, root);
}

/* §13.1: the transport lost the client of the running request id. */
void proto_cancel(rcp_server *s, const rcp_json *id)
{
    flight *f;
    if (valid_id(id) && (f = find_flight(s, id)) != NULL)
        f->cancelled = 1;
}

/* 1 when needle[0..k) occurs in p[0..n) (the empty needle always). */
static int find_bytes(const char *p, size_t n, const char *needle, size_t k)
{
    size_t i;
    for (i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0)
            return 1;
    return 0;
}

/* §7.14: a frame that arrived while a request runs, shown by the
** transport before its turn comes: a cancel in it is acted on at once;
** the frame itself is processed in order later (a second look at a cancel
** is a harmless no-op). */
void proto_peek(rcp_server *s, const char *frame, size_t n)
{
    rcp_json_err err;
    const rcp_json *root;
    assert(frame && n <= s->opts.max_line);  /* never an oversized one */
    if (!find_bytes(frame, n, "notifications/cancel", 20))
        return;
    root = rcp_json_parse(&s->peek, frame, n, 0, &err);
    if (root)
        apply_cancels(s, root);
    rcp_arena_reset(&s->peek);
}

/* The I/O hook the transport lends while it runs (proto_lend_io); without
** one, the server is in-process (rcp_server_handle): nothing arrives while
** a request runs and the caller's buffer is the peer. */
static void io_intake(rcp_server *s)
{
    if (s->io && s->io->intake)
        s->io->intake(s->io->ud);
}

/* Finished lines go out now: before a long handler (invariant 7) and
** after a progress frame.  Never while a spilled batch array is open on
** the wire (batch_add). */
static void io_flush(rcp_server *s)
{
    if (s->io && s->io->flush && !s->batch_open)
        s->io->flush(s->io->ud);
}

/* Bytes straight to the peer, after what is queued (so order holds);
** in-process, the caller's buffer. */
static void io_raw(rcp_server *s, const char *p, size_t n)
{
    if (s->io && s->io->raw)
        s->io->raw(s->io->ud, p, n);
    else
        rcp_buf_put(s->sink, p, n);
}

/* One line (p[0..n) and '\n') to the sink, whole or not at all; when the
** queue cannot grow, the line is written straight out instead of lost. */
static void send_line(rcp_server *s, const char *p, size_t n)
{
    rcp_buf *b = s->sink;
    if (rcp_buf_reserve(b, n + 1) == 0) {
        if (n)
            memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len++] = '\n';
        return;
    }
    if (!s->io || !s->io->raw)
        return;                 /* the caller's buffer: its oom tells */
    s->stats.unqueued++;
    io_raw(s, p, n);            /* writes the queue and clears its oom */
    io_raw(s, "\n", 1);
}

/* The sealed answer in s->resp, if any, as one line (§5.1). */
static void send_resp(rcp_server *s)
{
    if (s->resp.len)
        send_line(s, s->resp.data, s->resp.len);
    rcp_buf_clear(&s->resp);
}

/* A notification to the frame's out (invariant 4): its head up to the
** open params object, then note_end closes it as one whole line, or
** takes it back when memory ran out (invariant 6: never half a line);
** note_end returns 0 sent, -1 dropped. */
static size_t note_begin(rcp_server *s, rcp_jw *w, const char *method)
{
    size_t mark = s->sink->len;
    rcp_jw_init(w, s->sink);
    rcp_jw_obj(w);
    rcp_jw_key(w, "jsonrpc");
    rcp_jw_cstr(w, "2.0");
    rcp_jw_key(w, "method");
    rcp_jw_cstr(w, method);
    rcp_jw_key(w, "params");
    rcp_jw_obj(w);
    return mark;
}

static int note_end(rcp_server *s, rcp_jw *w, size_t mark)
{
    rcp_jw_obj_end(w);
    rcp_jw_obj_end(w);
    rcp_buf_putc(s->sink, '\n');
    if (!s->sink->oom)
        return 0;
    s->sink->len = mark;
    s->sink->oom = 0;
    return -1;
}

/* §9: progress only for a request that carried a token, only while the
** streaming capability is advertised, and only rising. */
static void emit_progress(rcp_call *c, double progress, const char *stage,
                          call_partial_fn partial, const void *ud)
{
    rcp_server *s = c->s;
    rcp_jw w;
    size_t mark;
    /* at most about twenty frames a request, but never the partial hits */
    if (!c->token || !has_cap(s, PROTO_CAP_STREAMING) || progress > 1.0
        || progress < c->progress || (!partial && (progress == c->progress
            || (c->progress >= 0 && progress < c->progress + 0.05))))
        return;
    if (s->batch_open || s->sink->oom) {
        s->stats.progress_dropped++;    /* §9 progress is advisory */
        return;
    }
    c->progress = progress;
    mark = note_begin(s, &w, "notifications/progress");
    rcp_jw_key(&w, "progressToken");
    rcp_jw_value(&w, c->token);
    rcp_jw_key(&w, "progress");
    rcp_jw_double(&w, round(progress * 1e4) / 1e4);   /* as read: 0.82 */
    if (stage) {
        rcp_jw_key(&w, "stage");
        rcp_jw_cstr(&w, stage);
    }
    if (partial) {
        rcp_jw_key(&w, "partial");
        partial(&w, ud);
    }
    if (note_end(s, &w, mark)) {
        s->stats.progress_dropped++;
        return;
    }
    io_flush(s);
}

/* §17.1 notifications/log {level, message, logger, data}: only at or
** above the request's level (none unless the client opted in: the log
** capability at initialize, or _meta.logLevel on the request, §7.1), as
** whole lines before the answer, dropped (advisory, like progress) when
** a batch answer is already spilling or memory is short.  data (NULL:
** none) writes an object; the request's id is added to it. */
void call_log(rcp_call *c, int level, const char *logger,
              call_partial_fn data, const void *ud, const char *fmt, ...)
{
    rcp_server *s = c->s;
    char msg[256];
    va_list ap;
    rcp_jw w;
    size_t mark;
    if (level < c->log_level || c->log_level >= PROTO_LOG_OFF || !s->sink
        || s->batch_open || s->sink->oom)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mark = note_begin(s, &w, "notifications/log");
    rcp_jw_key(&w, "level");
    rcp_jw_cstr(&w, log_levels[level]);
    rcp_jw_key(&w, "message");
    rcp_jw_cstr(&w, msg);
    rcp_jw_key(&w, "logger");
    rcp_jw_cstr(&w, logger);
    if (data) {
        rcp_jw_key(&w, "data");
        data(&w, ud);
    }
    if (c->id || c->token) {            /* correlation lives in _meta */
        rcp_jw_key(&w, "_meta");
        rcp_jw_obj(&w);
        if (c->id) {
            rcp_jw_key(&w, "requestId");
            rcp_jw_value(&w, c->id);
        }
        if (c->token) {
            rcp_jw_key(&w, "progressToken");
            rcp_jw_value(&w, c->token);
        }
        rcp_jw_obj_end(&w);
    }
    (void)note_end(s, &w, mark);        /* advisory: dropped, not sent */
}

static int checkpoint(rcp_call *c, double progress, const char *stage,
                      call_partial_fn partial, const void *ud)
{
    io_intake(c->s);
    if (c->fl && c->fl->cancelled)
        return RCP_CANCELLED;
    if (c->deadline > 0 && proto_now_ms() >= c->deadline)
        return RCP_TIMEOUT;
    emit_progress(c, progress, stage, partial, ud);
    return 0;
}

int call_checkpoint(rcp_call *c, double progress, const char *stage)
{
    return checkpoint(c, progress, stage, NULL, NULL);
}

int call_progress(rcp_call *c, double progress, const char *stage,
                  call_partial_fn partial, const void *ud)
{
    return checkpoint(c, progress, stage, partial, ud);
}

/* Cancel and deadline checks, without a progress frame (§7.14, §13.1):
** the progress already sent is never sent twice. */
int call_still_wanted(rcp_call *c)
{
    return checkpoint(c, c->progress, NULL, NULL, NULL);
}

/* Wait up to ms, returning early when input arrives (so a cancel is seen
** at once) when the transport can tell. */
static void wait_a_little(rcp_server *s, int ms)
{
    if (s->io && s->io->wait)
        s->io->wait(s->io->ud, ms);
    else
        transport_sleep(ms);
}

/* MARK: - §7 Methods ----------------------------------------------------- */

/* §7.1 initialize.  The version check runs before any state changes so a
** failed negotiation leaves the session uninitialised (§13). */
static int m_initialize(rcp_call *c)
{
    const rcp_json *pv, *client = proto_get(c->params, "client"), *cs;
    int64_t v;
    int rc;
    if ((rc = call_need(c, c->params, "protocolVersion", &pv)))
        return rc;
    if (!rcp_json_int(pv, &v))
        return call_fail(c, RCP_INVALID_PARAMS, "protocolVersion", NULL,
                         "protocolVersion must be an integer");
    if (client && (client->type != RCP_JSON_OBJECT
                   || !rcp_json_get(client, "name")
                   || rcp_json_get(client, "name")->type != RCP_JSON_STRING))
        return call_fail(c, RCP_INVALID_PARAMS, "client", NULL,
                         "client must be an object with a string name");
    if ((rc = call_obj(c, c->params, "capabilities", &cs)))
        return rc;
    /* §7.1: each peer supports [1 .. protocolVersion]; below 1 there is
    ** no common version. */
    if (v < 1)
        return call_fail(c, RCP_VERSION_MISMATCH, NULL, NULL,
                         "client supports no version >= 1; this server speaks "
                         "1..%d", RCP_PROTOCOL_VERSION);
    c->s->sess->initialized = 1;
    /* §7.1, §17.1: logs only for a client that advertised log, from
    ** _meta.logLevel (read with the request's _meta) or info; kept per
    ** session, so one client's opt-in is never another's */
    c->s->sess->log = !cs || !proto_get(cs, "log") ? 0
        : proto_get(proto_get(c->params, "_meta"), "logLevel")
        ? c->log_level + 1 : PROTO_LOG_INFO + 1;
    write_server_info(&c->w, c->s, c->s->sess->token);
    return 0;
}

/* §7.2 info: same shape as initialize's result, no state change. */
static int m_info(rcp_call *c)
{
    write_server_info(&c->w, c->s, NULL);
    return 0;
}

/* §7.15 ping: echo any nonce exactly (its parsed text, invariant 2). */
static int m_ping(rcp_call *c)
{
    const rcp_json *nonce = proto_get(c->params, "nonce");
    if (nonce && nonce->type != RCP_JSON_STRING
        && nonce->type != RCP_JSON_NUMBER)
        return call_fail(c, RCP_INVALID_PARAMS, "nonce", NULL,
                         "nonce must be a string or a number");
    rcp_jw_obj(&c->w);
    if (nonce) {
        rcp_jw_key(&c->w, "nonce");
        rcp_jw_value(&c->w, nonce);
    }
    rcp_jw_obj_end(&c->w);
    return 0;
}

/* §7.12 shutdown: {} -> {}; the transport stops once this is written. */
static int m_shutdown(rcp_call *c)
{
    rcp_jw_obj(&c->w);
    rcp_jw_obj_end(&c->w);
    c->s->sess->ended = 1;
    return 0;
}

/* x-rcp/sleep {ms}: a vendor method (§6.2) that only exists with --debug.
** It waits in slices, calling the checkpoint, so tests can cancel it
** (§7.14) or let its deadline pass (§13.1). */
static int m_sleep(rcp_call *c)
{
    const rcp_json *msv = proto_get(c->params, "ms");
    int64_t ms;
    double end;
    int rc;
    if (!msv || !rcp_json_int(msv, &ms) || ms < 0 || ms > SLEEP_MAX_MS)
        return call_fail(c, RCP_INVALID_PARAMS, "ms", NULL,
                         "ms must be an integer from 0 to %ld", SLEEP_MAX_MS);
    end = proto_now_ms() + (double)ms;
    for (;;) {
        double left = end - proto_now_ms();
        rc = call_checkpoint(c, 1.0 - left / ((double)ms + 1.0), "sleep");
        if (rc)
            return call_fail(c, rc, NULL, NULL, rc == RCP_CANCELLED
                             ? "cancelled by notifications/cancel"
                             : "deadline elapsed");
        if (left <= 0)
            break;
        wait_a_little(c->s, left > 20 ? 20 : (int)left + 1);
    }
    rcp_jw_obj(&c->w);
    rcp_jw_key(&c->w, "slept");
    rcp_jw_int(&c->w, ms);
    rcp_jw_obj_end(&c->w);
    return 0;
}

/* MARK: - §13 Lifecycle and gating --------------------------------------- */

/* §17.1 _meta.logLevel, one of the levels: *level, unchanged when absent;
** else -32602. */
static int get_log_level(rcp_call *c, const rcp_json *meta, int *level)
{
    const rcp_json *v = proto_get(meta, "logLevel");
    int i;
    if (!v)
        return 0;
    if ((i = proto_pick(v, log_levels, PROTO_LOG_OFF)) < 0)
        return call_fail(c, RCP_INVALID_PARAMS, "_meta.logLevel", NULL,
                         "logLevel must be one of debug, info, notice, "
                         "warning, error (§17.1)");
    *level = i;
    return 0;
}

/* §4.4, §9, §16.2: the _meta keys this server acts on. */
static int check_meta(rcp_call *c, double t0)
{
    const rcp_json *meta, *dl;
    long own = c->s->opts.deadline_ms;
    int64_t tok;
    int rc;
    if (own != 0)
        c->deadline = t0 + (double)own;
    if ((rc = call_obj(c, c->params, "_meta", &meta)) || !meta)
        return rc;
    dl = proto_get(meta, "deadlineMs");
    if (dl) {
        double ms = dl->type == RCP_JSON_NUMBER ? rcp_json_num(dl) : -1;
        if (!(ms >= 0))
            return call_fail(c, RCP_INVALID_PARAMS, "_meta.deadlineMs", NULL,
                             "deadlineMs must be a non-negative number of "
                             "milliseconds");
        if (c->deadline == 0 || t0 + ms < c->deadline)
            c->deadline = t0 + ms;
    }
    if ((rc = get_log_level(c, meta, &c->log_level)))
        return rc;
    c->token = proto_get(meta, "progressToken");
    if (c->token && c->token->type != RCP_JSON_STRING
        && !rcp_json_int(c->token, &tok))
        return call_fail(c, RCP_INVALID_PARAMS, "_meta.progressToken", NULL,
                         "progressToken must be a string or an integer");
    /* every progress frame echoes it verbatim (a number by its text) */
    if (c->token && c->token->n > RCP_MAX_TOKEN_BYTES)
        return call_too_big(c, "_meta.progressToken", c->token->n,
                            RCP_MAX_TOKEN_BYTES);
    return 0;
}

/* Lifecycle (§13) then gating (§7, §12: -32004 before -32003) then _meta,
** then the handler.  Returns 0 or the error code recorded on c. */
static int dispatch(rcp_call *c, const rcp_json *name, double t0)
{
    rcp_server *s = c->s;
    const method *m = find_method(s, name);
    int rc;
    if (has_prefix(name, "notifications/"))
        return call_fail(c, RCP_INVALID_REQUEST, NULL, NULL,
                         "notifications/* are notifications and must not "
                         "carry an id (§4.5, §7.14)");
    /* §5.2: a stateless HTTP request is implicitly initialised, and its
    ** initialize answers idempotently (its checks still apply) */
    if (!s->sess->initialized && !s->sess->implicit && !(m && m->anytime))
        return call_fail(c, RCP_NOT_INITIALIZED, NULL, NULL,
                         "call initialize first; only info, ping and shutdown "
                         "are allowed before it (§13)");
    if (s->sess->initialized && !s->sess->implicit && m
        && m->fn == m_initialize)
        return call_fail(c, RCP_INVALID_REQUEST, NULL, NULL,
                         "the session is already initialized (§13)");
    if (!m)
        return call_fail(c, RCP_UNKNOWN_METHOD, NULL, NULL,
                         "method '%.*s' is not defined by RCP/1",
                         (int)(name->n > 64 ? 64 : name->n), name->s);
    if (!served(s, m))
        return call_fail(c, RCP_CAPABILITY_MISSING, NULL, NULL, "this server "
                         "does not advertise '%s'", caps[m->cap].key);

    if ((rc = check_meta(c, t0)) != 0)
        return rc;
    if (c->fl && c->fl->cancelled)
        return call_fail(c, RCP_CANCELLED, NULL, NULL,
                         "cancelled by notifications/cancel");
    /* a session method is answered the moment it is read: its deadline is
    ** judged at the frame's arrival (t0), with no second clock read */
    if (c->deadline > 0
        && (m->cap < 0 ? t0 : proto_now_ms()) >= c->deadline)
        return call_fail(c, RCP_TIMEOUT, NULL, NULL, "deadline elapsed");
    if (m->cap < 0)
        return m->fn(c);
    io_flush(s);            /* invariant 7: it may run long */
    if (m->fn)
        return m->fn(c);
    assert(m->row >= 0 && m->row < PROTO_NMETHODS);
    return s->be->handle[m->row](s->be_ud, c);
}

/* §17.1 data {latencyMs, code?} of a request's closing log. */
typedef struct answer_log {
    double ms;
    int code;
} answer_log;

static void write_answer_log(rcp_jw *w, const void *ud)
{
    const answer_log *a = ud;
    rcp_jw_obj(w);
    proto_write_ms(w, "latencyMs", a->ms);
    if (a->code) {
        rcp_jw_key(w, "code");
        rcp_jw_int(w, a->code);
    }
    rcp_jw_obj_end(w);
}

/* §17.1 how a request ended: an internal error at error, one slower
** than SLOW_REQUEST_MS at warning, any other at debug. */
static void log_answer(rcp_call *c, int rc, double t0)
{
    answer_log a;
    int level;
    a.ms = proto_now_ms() - t0;
    a.code = rc;
    level = rc == RCP_INTERNAL_ERROR ? PROTO_LOG_ERROR
          : a.ms >= SLOW_REQUEST_MS ? PROTO_LOG_WARNING : PROTO_LOG_DEBUG;
    call_log(c, level, "server", write_answer_log, &a, "%.*s %s in %.3f ms%s",
             (int)(c->methodlen > 64 ? 64 : c->methodlen), c->method,
             rc ? "failed" : "answered", a.ms, level == PROTO_LOG_WARNING
             ? " (slow)" : "");
}

/* Answer one request (invariant 1): the envelope and the handler's result
** into s->resp, or, if the handler failed, the error in its place. */
static void call(rcp_server *s, const rcp_json *id, const rcp_json *name,
                 const rcp_json *params, flight *fl, double t0)
{
    /* the envelope's fixed first member as its bytes (to the writer, one
    ** item: the next member takes its comma) */
    static const char head[] = "\"jsonrpc\":\"2.0\"";
    rcp_call c;
    int rc;
    memset(&c, 0, offsetof(rcp_call, field));  /* not the buffers */
    c.field[0] = c.option[0] = c.detail[0] = '\0';
    c.s = s;
    c.id = id;
    c.params = params;
    c.fl = fl;
    c.progress = -1;
    c.retry = -1;
    c.log_level = s->sess->log ? s->sess->log - 1 : PROTO_LOG_OFF;
    c.method = name->s;
    c.methodlen = name->n;
    s->arena.full = s->scratch.full = 0;    /* this request's own (call_oom) */

    rcp_buf_clear(&s->resp);
    rcp_jw_init(&c.w, &s->resp);
    rcp_jw_obj(&c.w);
    rcp_jw_raw(&c.w, head, sizeof head - 1);
    rcp_jw_key(&c.w, "id");
    rcp_jw_value(&c.w, id);
    rcp_jw_key(&c.w, "result");
    rc = dispatch(&c, name, t0);
    /* the handler's side of the seam: a result is one whole value; an
    ** error is a §12 code it recorded with call_fail */
    assert(rc != 0 || c.w.depth == 1);
    assert(rc == 0 || (rcp_code_known(rc) && c.detail[0]));
    log_answer(&c, rc, t0);
    if (rc == 0) {
        rcp_jw_obj_end(&c.w);
        return;                 /* an oom is seal()'s to see */
    }
    rcp_buf_clear(&s->resp);
    write_error(&s->resp, id, rc, c.field, c.option, c.detail, c.retry);
}

/* §4.5: a notification is never answered.  Cancel, the one RCP/1 defines
** for a server to act on, is applied here or on arrival (apply_cancels);
** any other notification, known or not, is silently ignored. */
static void notify(rcp_server *s, const rcp_json *msg)
{
    apply_cancel(s, msg);
}

/* §4.1 the members of a request's envelope, read in one pass over the
** object's members (a ping's frame was looked up six times, ~15% of its
** instructions).  Duplicates: the last one wins, as rcp_json_get (README
** Decisions); params null reads as absent, as proto_get. */
typedef struct envelope {
    const rcp_json *id, *ver, *name, *params;
} envelope;

static void read_envelope(const rcp_json *msg, envelope *e)
{
    size_t i;
    unsigned seen = 0;
    e->id = e->ver = e->name = e->params = NULL;
    if (msg->type != RCP_JSON_OBJECT)
        return;
    for (i = msg->n; i-- > 0 && seen != 15;) {
        const rcp_json *m = &msg->kids[i];
        const char *k = m->key;
        unsigned bit;
        const rcp_json **slot;
        if (m->keylen == 2 && k[0] == 'i' && k[1] == 'd')
            bit = 1, slot = &e->id;
        else if (m->keylen == 7 && !memcmp(k, "jsonrpc", 7))
            bit = 2, slot = &e->ver;
        else if (m->keylen == 6 && !memcmp(k, "method", 6))
            bit = 4, slot = &e->name;
        else if (m->keylen == 6 && !memcmp(k, "params", 6))
            bit = 8, slot = &e->params;
        else
            continue;
        if (!(seen & bit))
            *slot = m;
        seen |= bit;
    }
    if (e->params && e->params->type == RCP_JSON_NULL)
        e->params = NULL;
}

/* One message (a whole frame or a batch member).  §4.1, §4.7: jsonrpc
** "2.0", an id that is a string or number, a string method, an object
** params (null/absent = {}).  A bad envelope is -32600 with the id when the
** id itself was valid, else null.  Writes s->resp, or nothing. */
static void handle_message(rcp_server *s, const rcp_json *msg,
                           const envelope *e, flight *fl, double t0)
{
    const rcp_json *id = e->id, *ver = e->ver, *name = e->name,
                   *params = e->params;
    rcp_buf_clear(&s->resp);
    if (msg->type != RCP_JSON_OBJECT) {
        frame_error(s, RCP_INVALID_REQUEST, "a request must be a JSON "
                    "object (§4.1)");
        return;
    }
    if (!id && rcp_json_streq(ver, "2.0") && name
        && name->type == RCP_JSON_STRING) {
        notify(s, msg);
        return;
    }
    if (!valid_id(id))
        id = NULL;
    if (!id || !rcp_json_streq(ver, "2.0") || !name
        || name->type != RCP_JSON_STRING
        || (params && params->type != RCP_JSON_OBJECT)) {
        const char *why = !id ? "id must be a string or a number (§4.7)"
            : !rcp_json_streq(ver, "2.0") ? "jsonrpc must be \"2.0\" (§4)"
            : (!name || name->type != RCP_JSON_STRING)
                ? "method must be a string (§4.1)"
                : "params must be an object (§4.1)";
        write_error(&s->resp, id, RCP_INVALID_REQUEST, NULL, NULL, why, -1);
    } else {
        call(s, id, name, params ? params : &empty_object, fl, t0);
    }
    seal(s, id);
}

/* MARK: - §11 Batching --------------------------------------------------- */

/* Every request member of a received batch is in flight (§7.14), so a
** cancel member can name a sibling. */
static int batch_flights(rcp_server *s, const rcp_json *arr)
{
    size_t i;
    s->nflights = 0;
    s->flights = rcp_arena_alloc(&s->arena, arr->n * sizeof *s->flights);
    if (!s->flights)
        return -1;
    for (i = 0; i < arr->n; i++) {
        const rcp_json *id = rcp_json_get(&arr->kids[i], "id");
        s->flights[i].id = valid_id(id) ? id : NULL;
        s->flights[i].cancelled = 0;
    }
    s->nflights = arr->n;
    return 0;
}

/* The sealed answer in s->resp as the batch's next member.  When the
** array cannot grow, it is streamed instead: what it holds goes out now,
** each later member as it comes, and until the array is closed nothing
** else may be written (progress is held back, io_flush waits), so the
** peer still gets one whole line (invariant 6). */
static void batch_add(rcp_server *s)
{
    rcp_buf *b = &s->batch;
    const char *sep = s->nanswers++ ? "," : "[";
    size_t n = s->resp.len;
    if (!s->batch_open && rcp_buf_reserve(b, n + 1) == 0) {
        b->data[b->len++] = *sep;
        memcpy(b->data + b->len, s->resp.data, n);
        b->len += n;
        return;
    }
    if (!s->batch_open) {
        io_raw(s, b->data, b->len);
        rcp_buf_clear(b);
        s->batch_open = 1;
    }
    io_raw(s, sep, 1);
    io_raw(s, s->resp.data, n);
}

static void batch_end(rcp_server *s)
{
    rcp_buf *b = &s->batch;
    if (s->batch_open) {
        io_raw(s, "]\n", 2);
        s->batch_open = 0;
    } else if (s->nanswers) {
        rcp_buf_putc(b, ']');
        if (b->oom) {
            io_raw(s, b->data, b->len);
            io_raw(s, "]\n", 2);
        } else {
            send_line(s, b->data, b->len);
        }
    }
    rcp_buf_clear(b);
    s->nanswers = 0;
}

/* §11: one response per request member in one array; none for
** notifications; nothing at all if every member is a notification; [] is
** a single -32600; an oversized batch is a single -32602. */
static void handle_batch(rcp_server *s, const rcp_json *arr, double t0)
{
    size_t i;
    if (arr->n == 0) {
        frame_error(s, RCP_INVALID_REQUEST, "an empty batch is not a "
                    "valid request (§11)");
        return;
    }
    if (arr->n > s->opts.max_batch) {
        frame_error(s, RCP_INVALID_PARAMS, "a batch of %lu members exceeds "
                    "this server's limit of %lu (§11)",
                    (unsigned long)arr->n, (unsigned long)s->opts.max_batch);
        return;
    }
    if (batch_flights(s, arr) != 0) {
        frame_error(s, RCP_INTERNAL_ERROR, "out of memory: the batch of "
                    "%lu members was not run", (unsigned long)arr->n);
        return;
    }
    apply_cancels(s, arr);
    rcp_buf_clear(&s->batch);
    s->nanswers = 0;
    for (i = 0; i < arr->n; i++) {
        flight *fl = s->flights[i].id ? &s->flights[i] : NULL;
        envelope e;
        read_envelope(&arr->kids[i], &e);
        handle_message(s, &arr->kids[i], &e, fl, t0);
        if (s->resp.len)
            batch_add(s);
    }
    rcp_buf_clear(&s->resp);    /* the members' answers are in the array */
    batch_end(s);
}

/* MARK: - §5 Frames ---------------------------------------------------- */

/* One frame: copy (invariant 3), parse, answer, release.  A frame the
** arena's limit refuses is too large (-32013, §15.5); one that met a
** failed allocation is the server's trouble (-32603).  Either way the id
** could not be read, so it is null. */
static void handle_frame(rcp_server *s, const char *line, size_t len)
{
    double t0 = proto_now_ms();
    rcp_json_err err;
    const rcp_json *root = NULL;
    char *copy = rcp_arena_alloc(&s->arena, len ? len : 1);
    rcp_buf_clear(&s->resp);
    if (copy) {
        memcpy(copy, line, len);
        root = rcp_json_parse(&s->arena, copy, len, 0, &err);
    } else {
        err.code = s->arena.full ? RCP_JSON_E_LIMIT : RCP_JSON_E_NOMEM;
    }
    if (!root && err.code == RCP_JSON_E_LIMIT)
        frame_error(s, RCP_PAYLOAD_TOO_LARGE, "the request needs more "
                    "memory than this server allows (§15.5)");
    else if (!root && err.code == RCP_JSON_E_NOMEM)
        frame_error(s, RCP_INTERNAL_ERROR, "out of memory reading the "
                    "request; it was not run");
    else if (!root)
        frame_error(s, RCP_PARSE_ERROR, "error at byte %lu: %s",
                    (unsigned long)err.offset, err.msg);
    else if (root->type == RCP_JSON_ARRAY)
        handle_batch(s, root, t0);
    else {
        flight one;
        envelope e;
        read_envelope(root, &e);
        one.id = valid_id(e.id) ? e.id : NULL;
        one.cancelled = 0;
        s->flights = &one;
        s->nflights = one.id ? 1 : 0;
        handle_message(s, root, &e, one.id ? &one : NULL, t0);
    }
    send_resp(s);
    s->flights = NULL;
    s->nflights = 0;
    rcp_arena_reset(&s->arena);
}

static void line(rcp_server *s, const char *p, size_t n)
{
    s->stats.frames++;
    if (n > s->opts.max_line) {
        frame_error(s, RCP_PAYLOAD_TOO_LARGE, "frame of %lu bytes exceeds "
                    "the limit of %lu; discarded (§5.1, §15.5)",
                    (unsigned long)n, (unsigned long)s->opts.max_line);
        send_resp(s);
    } else if (!transport_blank(p, n)) {
        handle_frame(s, p, n);
    }
}

/* A line the transport could not buffer for lack of memory is answered
** once (-32603, id null: it was never read whole) while the transport
** drops it as it arrives, like one over max_line, and serving goes on. */
void proto_unbuffered(rcp_server *s, size_t n, rcp_buf *out)
{
    rcp_buf *saved = s->sink;
    assert(out);
    s->sink = out;
    frame_error(s, RCP_INTERNAL_ERROR, "out of memory buffering a frame "
                "of more than %lu bytes; discarded", (unsigned long)n);
    send_resp(s);
    s->sink = saved;
}

/* MARK: - What a method body sees of its request ------------------------ */

const rcp_json *call_params(const rcp_call *c)
{
    return c->params;
}

rcp_jw *call_w(rcp_call *c)
{
    return &c->w;
}

rcp_arena *call_arena(rcp_call *c)
{
    return &c->s->arena;
}

rcp_arena *call_scratch(rcp_call *c)
{
    return &c->s->scratch;
}

double call_deadline(const rcp_call *c)
{
    return c->deadline;
}

int call_offers(const rcp_call *c, int cap)
{
    return has_cap(c->s, cap);
}

int call_retryable(rcp_call *c, int code, int yes)
{
    c->retry = yes != 0;
    return code;
}

void call_note_add(rcp_call *c, const char *fmt, ...)
{
    va_list ap;
    if (c->nnotes >= MAX_NOTES)
        return;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->nnotes++], sizeof c->notes[0], fmt, ap);
    va_end(ap);
}

const char *call_note(const rcp_call *c, size_t i)
{
    return i < c->nnotes ? c->notes[i] : NULL;
}

size_t call_mark(const rcp_call *c)
{
    return c->s->resp.len;
}

const char *call_since(const rcp_call *c, size_t mark, size_t *len)
{
    const rcp_buf *b = &c->s->resp;
    if (b->oom || mark > b->len)
        return NULL;
    *len = b->len - mark;
    return b->data + mark;
}

/* MARK: - Public API ----------------------------------------------------- */

rcp_server *proto_server_new(const rcp_server_opts *opts,
                             const proto_backend *be, void *ud)
{
    rcp_server *s = rcp_malloc(sizeof *s);
    if (!s) {
        if (be && be->close)
            be->close(ud);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    if (opts)
        s->opts = *opts;
    if (s->opts.max_line == 0)
        s->opts.max_line = RCP_DEFAULT_MAX_LINE;
    if (s->opts.max_batch == 0)
        s->opts.max_batch = RCP_DEFAULT_MAX_BATCH;
    if (s->opts.deadline_ms < 0)
        s->opts.deadline_ms = DEFAULT_DEADLINE_MS;
    s->sess = &s->own;          /* uninitialised (§13) */
    assert(!be || (be->offers && be->describe));
    s->be = be;
    s->be_ud = ud;
    /* §13.2: the set is fixed now; x-rcp is the protocol's own (§6.2) */
    s->caps = be ? be->offers(ud) & ~(PROTO_CAP(PROTO_CAP_X_RCP)
                                      | PROTO_CAP(PROTO_CAP_LOG)) : 0;
    s->caps |= PROTO_CAP(PROTO_CAP_LOG);    /* §17.1: logs are ours */
    if (s->opts.debug)
        s->caps |= PROTO_CAP(PROTO_CAP_X_RCP);
    s->level = conformance_level(s->caps, be && be->partial
                                 ? be->partial(ud) & s->caps : 0);
    assert(complete(s));
    if (s->opts.max_request_memory == 0)
        s->opts.max_request_memory = ARENA_LIMIT;
    rcp_arena_init(&s->arena, s->opts.max_request_memory);
    rcp_arena_init(&s->scratch, s->opts.max_request_memory);
    rcp_arena_init(&s->peek, s->opts.max_request_memory);
    rcp_buf_init(&s->resp);
    rcp_buf_init(&s->batch);
    if (rcp_buf_reserve(&s->resp, RESP_RESERVE) != 0) {   /* invariant 6 */
        rcp_server_free(s);
        return NULL;
    }
    return s;
}

/* The one place the built-in backend is chosen (methods.c): the engine in
** opts->model serves the gated methods; without one, the session methods
** are all there is. */
rcp_server *rcp_server_new(const rcp_server_opts *opts)
{
    const proto_backend *be;
    void *ud;
    if (methods_open(opts, &be, &ud) != 0)
        return NULL;
    return proto_server_new(opts, be, ud);
}

void rcp_server_stat(const rcp_server *s, rcp_server_stats *out)
{
    *out = s->stats;
}

void rcp_server_free(rcp_server *s)
{
    if (!s)
        return;
    if (s->be && s->be->close)
        s->be->close(s->be_ud);
    rcp_arena_free(&s->arena);
    rcp_arena_free(&s->scratch);
    rcp_arena_free(&s->peek);
    rcp_buf_free(&s->resp);
    rcp_buf_free(&s->batch);
    rcp_free(s);
}

int rcp_server_handle(rcp_server *s, const char *frame, size_t len,
                      rcp_buf *out)
{
    rcp_buf *saved = s->sink;
    assert(s && out && (frame || len == 0));
    if (!s->closing && !s->sess->ended) {
        s->sink = out;
        line(s, frame, len);
        s->sink = saved;
    }
    return s->closing || s->sess->ended;
}

/* MARK: - The transport's seam ---------------------------------------- */

void proto_lend_io(rcp_server *s, const proto_io *io)
{
    assert(!io || !s->io);      /* one transport at a time */
    s->io = io;
}

void proto_use_session(rcp_server *s, proto_session *ss)
{
    s->sess = ss ? ss : &s->own;
}

size_t proto_max_line(const rcp_server *s)
{
    return s->opts.max_line;
}

rcp_server_stats *proto_stats(rcp_server *s)
{
    return &s->stats;
}

/* §7.12: EOF is a shutdown; nothing more is processed (invariant 5). */
void proto_end(rcp_server *s)
{
    s->closing = 1;
}
