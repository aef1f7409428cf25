/*
** client.c -- an RCP/1 client over stdio that pairs responses by id.
**
** NOTES ON THE DESIGN
**
** The client launches the server as a child process (§5.1) and talks to
** it through two pipes.  Seed 002's four checkpoints are the structure:
**
**   before send   rcp_client_request: a fresh id, unique among the ids in
**                 flight (§4.7), entered in the pending map *before* a
**                 byte is written, so a fast reply always finds it.
**   on receive    handle_line / handle_message: jsonrpc is "2.0", exactly
**                 one of result and error, an id of a legal type.
**   when pairing  pair(): look the id up in the pending map -- by id,
**                 never by position or arrival order (§4.7, §11).  No
**                 entry: a duplicate (the id was answered already), a late
**                 reply (its deadline passed, §13.1) or an unknown id.
**   at batch end  settle(): when every member of a batch has an outcome,
**                 a reply count other than the member count is a
**                 response_count_mismatch; members whose deadline passed
**                 are missing responses.
**
** Invariants:
**   1. A request is in the pending map from before its first byte is
**      written until a response pairs with it -- also after its deadline
**      (state TIMEOUT) and after the caller freed it (released), so its id
**      is never reused while a reply could still come (§4.7 "MAY reuse an
**      id only after it has received the response").
**   2. Ids are compared as JSON values (§4.7 "same JSON type and value"):
**      the map key is the canonical form made by id_key().
**   3. Every byte the server writes is read, also while we write, so a
**      server blocked on a full stdout can never deadlock a client blocked
**      on a full stdin.  Writes never raise SIGPIPE.
**   4. Parse trees never point into the input buffer, which moves when it
**      grows: a line is copied into an arena before it is parsed.
*/
#include "rcp.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_FRAME ((size_t)256 << 20)
#define DEFAULT_WRITE_MS  10000
#define STDERR_KEEP       65536u
#define DONE_KEEP         4096u   /* answered ids remembered for duplicates */

/* MARK: - Types ---------------------------------------------------------- */

typedef struct batch {
    size_t expected;    /* request members */
    size_t replied;     /* responses attributed to it (see attribute()) */
    size_t unsettled;   /* members still pending */
    int    refs;        /* members holding it + 1 until settled */
} batch;

struct rcp_request {
    char             *id, *key;   /* id as sent (JSON text); map key */
    size_t            idlen, keylen;
    rcp_request_state state;
    int               released;   /* freed by the caller while in flight */
    unsigned          flags;
    double            t_sent, deadline, latency_ms;
    char             *text;       /* the response, compact JSON; owned */
    size_t            len;
    rcp_arena         arena;      /* holds the parse of text */
    const rcp_json   *resp;
    batch            *batch;
    uint64_t          xid;        /* HTTP: the exchange that carries it */
    int               http_status;   /* HTTP: its exchange's status */
    rcp_request      *prev, *next;   /* every live request */
};

/* An open-addressing map from canonical id key to request (linear probing,
** deletion by backward shift).  The done set uses it with req == NULL. */
typedef struct slot {
    char        *key;          /* owned copy */
    size_t       n;
    rcp_request *req;
} slot;

typedef struct idmap {
    slot  *v;
    size_t cap, count;
} idmap;

typedef struct http http;          /* the HTTP transport (§5.2), below */

struct rcp_client {
    rcp_client_opts    opts;
    http              *http;        /* NULL: stdio (§5.1) */
    pid_t              pid;
    int                in_fd, out_fd, err_fd;  /* child's stdin/out/err */
    int                dead;        /* stdout closed */
    int                exited, status;
    double             t0;
    /* reading */
    transport_framer   in;          /* the server's stdout, in lines */
    rcp_arena          scratch;
    /* requests */
    idmap              pending, done;
    rcp_request       *all;
    uint64_t           next_id;
    double             next_deadline;   /* earliest pending deadline */
    /* batching */
    int                in_batch;
    rcp_buf            batchbuf;
    size_t             batch_members;
    batch             *cur;
    uint64_t           batch_xid;   /* HTTP: the exchange of the batch */
    uint64_t           next_xid;    /* HTTP: exchanges numbered from 1 */
    /* logs */
    rcp_frame         *frames;
    size_t             nframes, frames_cap;
    rcp_arena          logarena;
    rcp_buf            errtext;
    rcp_client_metrics m;
};

/* The HTTP transport's entry points (its section is at the end). */
static int  http_post(rcp_client *c, const char *method, const char *body,
                      size_t n, uint64_t xid, size_t nreq,
                      const char *one_id);
static int  http_send_raw(rcp_client *c, const char *p, size_t n);
static void http_wait(rcp_client *c, int timeout_ms);
static void http_free(http *h);
static void http_frame(const rcp_client *c, rcp_frame *f);
static int  http_cur_status(const rcp_client *c);
static int  http_broken(const rcp_client *c);
static nfds_t http_pollfds(const rcp_client *c, struct pollfd *p,
                           nfds_t room);
static void http_session(rcp_client *c, const rcp_json *msg);

/* MARK: - Time ----------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Milliseconds left until t (>= 0), for poll(); -1 when t is 0 (never). */
static int ms_until(double t)
{
    double left;
    if (t <= 0)
        return -1;
    left = t - now_ms();
    if (left <= 0)
        return 0;
    return left > 1e9 ? 1000000000 : (int)left + 1;
}

static int min_timeout(int a, int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

/* MARK: - Ids (§4.7) ----------------------------------------------------- */

/* Canonical decimal of a JSON number's text: sign, significant digits,
** exponent -- "1e2", "100", "100.0" all give "1e2"; -0 and 0 give "0". */
static void number_key(rcp_buf *b, const char *s, size_t n)
{
    size_t i = 0, ndig = 0, start = b->len, dstart;
    long exp = 0, frac = 0, e = 0;
    int eneg = 0, in_frac = 0;
    char *digits;
    if (i < n && s[i] == '-') {
        rcp_buf_putc(b, '-');
        i++;
    }
    dstart = b->len;
    for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] == '.') {
            in_frac = 1;
            continue;
        }
        if (ndig == 0 && s[i] == '0') {
            if (in_frac)
                frac++;
            continue;           /* leading zeros carry no value */
        }
        rcp_buf_putc(b, s[i]);
        ndig++;
        if (in_frac)
            frac++;
    }
    if (i < n) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            e = e < 100000000L ? e * 10 + (s[i] - '0') : e;
    }
    if (ndig == 0) {
        b->len = start;
        rcp_buf_putc(b, '0');
        return;
    }
    if (b->oom)
        return;
    digits = b->data + dstart;
    while (ndig > 1 && digits[ndig - 1] == '0')
        ndig--, exp++;
    b->len = dstart + ndig;
    exp += (eneg ? -e : e) - frac;
    {
        char tail[32];
        sprintf(tail, "e%ld", exp);
        rcp_buf_puts(b, tail);
    }
}

/* The map key of an id (invariant 2): 's' + bytes, 'n' + canonical
** number, 'z' for null.  -1 for any other type. */
static int id_key(rcp_buf *b, const rcp_json *id)
{
    b->len = 0;
    if (!id)
        return -1;
    switch (id->type) {
    case RCP_JSON_STRING:
        rcp_buf_putc(b, 's');
        rcp_buf_put(b, id->s, id->n);
        break;
    case RCP_JSON_NUMBER:
        rcp_buf_putc(b, 'n');
        number_key(b, id->s, id->n);
        break;
    case RCP_JSON_NULL:
        rcp_buf_putc(b, 'z');
        break;
    default:
        return -1;
    }
    return b->oom ? -1 : 0;
}

int rcp_id_equal(const rcp_json *a, const rcp_json *b)
{
    rcp_buf ka, kb;
    int eq;
    rcp_buf_init(&ka);
    rcp_buf_init(&kb);
    eq = id_key(&ka, a) == 0 && id_key(&kb, b) == 0 && ka.len == kb.len
        && memcmp(ka.data, kb.data, ka.len) == 0;
    rcp_buf_free(&ka);
    rcp_buf_free(&kb);
    return eq;
}

int rcp_code_known(int code)
{
    static const int codes[] = { -32700, -32600, -32601, -32602, -32603,
        -32001, -32002, -32003, -32004, -32005, -32006, -32010, -32011,
        -32012, -32013, -32014, -32015, -32016 };
    size_t i;
    for (i = 0; i < sizeof codes / sizeof *codes; i++)
        if (codes[i] == code)
            return 1;
    return 0;
}

/* MARK: - The id map ----------------------------------------------------- */

static size_t hash_key(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    size_t i;
    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
}

static slot *map_find(const idmap *m, const char *k, size_t n)
{
    size_t i;
    if (m->cap == 0)
        return NULL;
    for (i = hash_key(k, n) & (m->cap - 1); m->v[i].key;
         i = (i + 1) & (m->cap - 1))
        if (m->v[i].n == n && memcmp(m->v[i].key, k, n) == 0)
            return &m->v[i];
    return NULL;
}

static int map_grow(idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64, i, j;
    slot *v = rcp_malloc(cap * sizeof *v);
    if (!v)
        return -1;
    memset(v, 0, cap * sizeof *v);
    for (i = 0; i < m->cap; i++) {
        if (!m->v[i].key)
            continue;
        for (j = hash_key(m->v[i].key, m->v[i].n) & (cap - 1); v[j].key;
             j = (j + 1) & (cap - 1))
            ;
        v[j] = m->v[i];
    }
    rcp_free(m->v);
    m->v = v;
    m->cap = cap;
    return 0;
}

/* Insert k -> req (k is copied).  0, or -1 when out of memory. */
static int map_put(idmap *m, const char *k, size_t n, rcp_request *req)
{
    size_t i;
    char *copy;
    if ((m->count + 1) * 4 > m->cap * 3 && map_grow(m) != 0)
        return -1;
    copy = rcp_malloc(n ? n : 1);
    if (!copy)
        return -1;
    memcpy(copy, k, n);
    for (i = hash_key(k, n) & (m->cap - 1); m->v[i].key;
         i = (i + 1) & (m->cap - 1))
        ;
    m->v[i].key = copy;
    m->v[i].n = n;
    m->v[i].req = req;
    m->count++;
    return 0;
}

/* Remove the slot s (from map_find), shifting later entries back so no
** probe chain is broken. */
static void map_del(idmap *m, slot *s)
{
    size_t i = (size_t)(s - m->v), j = i, mask = m->cap - 1;
    rcp_free(s->key);
    for (;;) {
        size_t home;
        m->v[i].key = NULL;
        for (;;) {
            j = (j + 1) & mask;
            if (!m->v[j].key) {
                m->count--;
                return;
            }
            home = hash_key(m->v[j].key, m->v[j].n) & mask;
            /* j may move to i when its home is not in (i, j] cyclically */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        m->v[i] = m->v[j];
        i = j;
    }
}

static void map_clear(idmap *m)
{
    size_t i;
    for (i = 0; i < m->cap; i++)
        rcp_free(m->v[i].key);
    rcp_free(m->v);
    m->v = NULL;
    m->cap = m->count = 0;
}

/* Remember an answered id, to tell a duplicate from an unknown id. */
static void done_add(rcp_client *c, const char *k, size_t n)
{
    if (c->done.count >= DONE_KEEP)
        map_clear(&c->done);
    if (!map_find(&c->done, k, n))
        (void)map_put(&c->done, k, n, NULL);
}

/* MARK: - Requests and batches ------------------------------------------- */

static void batch_unref(batch *b)
{
    if (b && --b->refs == 0)
        rcp_free(b);
}

/* At batch end (seed 002): every member has an outcome. */
static void settle(rcp_client *c, rcp_request *r)
{
    batch *b = r->batch;
    if (!b)
        return;
    if (--b->unsettled == 0) {
        if (b->replied != b->expected)
            c->m.batch_response_count_mismatch++;
        batch_unref(b);
    }
}

static void request_unlink(rcp_client *c, rcp_request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        c->all = r->next;
    if (r->next)
        r->next->prev = r->prev;
}

static void request_destroy(rcp_client *c, rcp_request *r)
{
    request_unlink(c, r);
    batch_unref(r->batch);
    rcp_arena_free(&r->arena);
    rcp_free(r->text);
    rcp_free(r->id);
    rcp_free(r->key);
    rcp_free(r);
}

/* A new pending request for id text idjson whose map key is key. */
static rcp_request *request_new(rcp_client *c, const char *idjson, size_t n,
                                const rcp_buf *key, int timeout_ms)
{
    rcp_request *r = rcp_malloc(sizeof *r);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->id = rcp_malloc(n ? n : 1);
    r->key = rcp_malloc(key->len);
    if (!r->id || !r->key
        || map_put(&c->pending, key->data, key->len, r) != 0) {
        rcp_free(r->id);
        rcp_free(r->key);
        rcp_free(r);
        return NULL;
    }
    memcpy(r->id, idjson, n);
    memcpy(r->key, key->data, key->len);
    r->idlen = n;
    r->keylen = key->len;
    rcp_arena_init(&r->arena, 0);
    r->t_sent = now_ms();
    if (timeout_ms > 0) {
        r->deadline = r->t_sent + timeout_ms;
        if (c->next_deadline == 0 || r->deadline < c->next_deadline)
            c->next_deadline = r->deadline;
    }
    r->next = c->all;
    if (c->all)
        c->all->prev = r;
    c->all = r;
    return r;
}

/* The request leaves the pending map; the caller decides its state. */
static void unpend(rcp_client *c, rcp_request *r)
{
    slot *s = map_find(&c->pending, r->key, r->keylen);
    if (s && s->req == r)
        map_del(&c->pending, s);
}

/* §13.1: deadlines pass; the id stays reserved (invariant 1). */
static void expire(rcp_client *c)
{
    double t = now_ms(), next = 0;
    rcp_request *r;
    if (c->next_deadline == 0 || t < c->next_deadline)
        return;
    for (r = c->all; r; r = r->next) {
        if (r->state != RCP_REQ_PENDING || r->deadline == 0)
            continue;
        if (r->deadline <= t) {
            r->state = RCP_REQ_TIMEOUT;
            c->m.batch_missing_response++;
            settle(c, r);
        } else if (next == 0 || r->deadline < next) {
            next = r->deadline;
        }
    }
    c->next_deadline = next;
}

/* §13.1: on transport death every request in flight fails locally. */
static void abandon_all(rcp_client *c)
{
    rcp_request *r, *nx;
    for (r = c->all; r; r = nx) {
        nx = r->next;
        if (r->state == RCP_REQ_PENDING) {
            r->state = RCP_REQ_ABANDONED;
            c->m.batch_missing_response++;
            settle(c, r);
        }
        if (r->state != RCP_REQ_DONE) {
            unpend(c, r);
            if (r->released)
                request_destroy(c, r);
        }
    }
}

/* MARK: - Receiving: validation (seed 002 "on receive") ------------------ */

static void latency(rcp_client *c, rcp_request *r)
{
    double us = (now_ms() - r->t_sent) * 1e3;
    uint64_t u = us > 0 ? (uint64_t)us : 0;
    int bucket = 0;
    r->latency_ms = us / 1e3;
    c->m.pairs++;
    c->m.pair_us_sum += u;
    if (u > c->m.pair_us_max)
        c->m.pair_us_max = u;
    while (bucket < 31 && (u >> (bucket + 1)) != 0)
        bucket++;
    c->m.pair_us_hist[bucket]++;
}

/* §4, §4.2, §4.3, §12: what is wrong with a response object. */
static unsigned response_flags(rcp_client *c, const rcp_json *msg)
{
    const rcp_json *res = rcp_json_get(msg, "result");
    const rcp_json *err = rcp_json_get(msg, "error");
    const rcp_json *code = err ? rcp_json_get(err, "code") : NULL;
    const rcp_json *text = err ? rcp_json_get(err, "message") : NULL;
    unsigned f = 0;
    int64_t v = 0;
    if (!rcp_json_streq(rcp_json_get(msg, "jsonrpc"), "2.0"))
        f |= RCP_RESP_BAD_JSONRPC, c->m.bad_jsonrpc++;
    if (res && err)
        f |= RCP_RESP_BOTH, c->m.both_result_error++;
    if (!res && !err)
        f |= RCP_RESP_NEITHER, c->m.neither_result_error++;
    if (res && !err && res->type != RCP_JSON_OBJECT)
        f |= RCP_RESP_BAD_RESULT;
    if (err && (err->type != RCP_JSON_OBJECT || !code
                || !rcp_json_int(code, &v) || !text
                || text->type != RCP_JSON_STRING))
        f |= RCP_RESP_BAD_ERROR, c->m.bad_error_object++;
    else if (err && !rcp_code_known((int)v))
        f |= RCP_RESP_UNKNOWN_CODE, c->m.unknown_error_code++;
    return f;
}

/* Keep a compact copy of the response with its request. */
static void deliver(rcp_client *c, rcp_request *r, const rcp_json *msg,
                    unsigned flags)
{
    rcp_buf b;
    rcp_jw w;
    rcp_json_err err;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_value(&w, msg);
    r->flags = flags;
    r->state = RCP_REQ_DONE;
    latency(c, r);
    if (!b.oom) {
        r->text = b.data;
        r->len = b.len;
        r->resp = rcp_json_parse(&r->arena, r->text, r->len, 0, &err);
    } else {
        rcp_buf_free(&b);
    }
    settle(c, r);
}

/* A reply array answers the batch of the first member it pairs with (a
** batch reply is one array, §11); it counts every entry with a non-null
** id, paired or not (seed 002: "responses received, null ids excluded").
** Counted before any entry is paired, so the count is complete when the
** last member settles. */
static void attribute(rcp_client *c, const rcp_json *arr, rcp_buf *key)
{
    batch *b = NULL;
    size_t i, replies = 0;
    for (i = 0; i < arr->n; i++) {
        const rcp_json *m = &arr->kids[i];
        slot *s;
        if (m->type != RCP_JSON_OBJECT || rcp_json_get(m, "method")
            || id_key(key, rcp_json_get(m, "id")) != 0 || key->data[0] == 'z')
            continue;
        replies++;
        s = map_find(&c->pending, key->data, key->len);
        if (!b && s && s->req->batch && s->req->state == RCP_REQ_PENDING)
            b = s->req->batch;
    }
    if (b)
        b->replied += replies;
}

/* MARK: - Receiving: pairing (seed 002 "when pairing") ------------------- */

static void orphan(rcp_client *c, const rcp_json *msg)
{
    if (c->opts.on_notify)
        c->opts.on_notify(c->opts.ud, msg);
}

/* A response: pair it by id with its request, or say why not. */
static void pair(rcp_client *c, const rcp_json *msg, rcp_buf *key,
                 int in_array)
{
    const rcp_json *id = rcp_json_get(msg, "id");
    unsigned flags = response_flags(c, msg);
    slot *s;
    rcp_request *r;
    c->m.responses++;
    if (c->http)
        http_session(c, msg);           /* raw-sent initialize too */
    if (id && id->type == RCP_JSON_NULL) {
        c->m.batch_null_id_response++;
        orphan(c, msg);
        return;
    }
    if (id_key(key, id) != 0) {
        c->m.bad_id_type++;            /* absent, bool, object, array */
        orphan(c, msg);
        return;
    }
    s = map_find(&c->pending, key->data, key->len);
    if (!s) {
        if (map_find(&c->done, key->data, key->len))
            c->m.duplicate_response++;
        c->m.batch_unknown_id_response++;
        orphan(c, msg);
        return;
    }
    r = s->req;
    map_del(&c->pending, s);
    done_add(c, key->data, key->len);
    if (c->http)
        r->http_status = http_cur_status(c);
    if (r->batch && !in_array)
        r->batch->replied++;           /* a batch member answered alone */
    if (r->state == RCP_REQ_TIMEOUT) {
        c->m.late_response++;          /* §13.1: paired, then discarded */
        r->flags = flags;
    } else if (!r->released) {
        deliver(c, r, msg, flags);
        return;
    } else {
        settle(c, r);
    }
    if (r->released)
        request_destroy(c, r);
}

static void notification(rcp_client *c, const rcp_json *msg)
{
    const rcp_json *method = rcp_json_get(msg, "method");
    if (!rcp_json_streq(rcp_json_get(msg, "jsonrpc"), "2.0"))
        c->m.bad_jsonrpc++;
    c->m.notifications++;
    if (rcp_json_streq(method, "notifications/progress"))
        c->m.progress++;
    else if (rcp_json_streq(method, "notifications/log"))
        c->m.logs++;
    else
        c->m.unknown_notifications++;  /* §4.5: ignored */
    if (c->opts.on_notify)
        c->opts.on_notify(c->opts.ud, msg);
}

static void handle_message(rcp_client *c, const rcp_json *msg, rcp_buf *key,
                           int in_array)
{
    if (msg->type != RCP_JSON_OBJECT) {
        c->m.not_a_message++;
        return;
    }
    if (rcp_json_get(msg, "method")) {
        if (rcp_json_get(msg, "id")) {
            c->m.server_requests++;
            orphan(c, msg);
        } else {
            notification(c, msg);
        }
        return;
    }
    pair(c, msg, key, in_array);
}

/* MARK: - Receiving: framing (§5.1) -------------------------------------- */

/* Copy and parse a line into arena a (invariant 4). */
static const rcp_json *parse_copy(rcp_arena *a, const char *p, size_t n,
                                  const char **copy)
{
    rcp_json_err err;
    char *q = rcp_arena_alloc(a, n ? n : 1);
    *copy = q;
    if (!q)
        return NULL;
    memcpy(q, p, n);
    return rcp_json_parse(a, q, n, 0, &err);
}

static void log_frame(rcp_client *c, const char *line, size_t n,
                      const rcp_json *root)
{
    if (c->nframes == c->frames_cap) {
        size_t cap = c->frames_cap ? c->frames_cap * 2 : 64;
        rcp_frame *f = rcp_realloc(c->frames, cap * sizeof *f);
        if (!f)
            return;
        c->frames = f;
        c->frames_cap = cap;
    }
    c->frames[c->nframes].line = line;
    c->frames[c->nframes].len = n;
    c->frames[c->nframes].root = root;
    c->frames[c->nframes].t_ms = now_ms() - c->t0;
    c->frames[c->nframes].http_status = 0;
    c->frames[c->nframes].http_flags = 0;
    if (c->http)
        http_frame(c, &c->frames[c->nframes]);
    c->nframes++;
}

static void handle_line(rcp_client *c, const char *p, size_t n)
{
    rcp_arena *a = c->opts.keep_frames ? &c->logarena : &c->scratch;
    const rcp_json *root;
    const char *copy;
    rcp_buf key;
    size_t i;
    if (transport_blank(p, n)) {
        c->m.blank_lines++;
        return;
    }
    c->m.frames++;
    if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        c->m.bom++;                      /* §5.1: a BOM MUST NOT be sent */
    root = parse_copy(a, p, n, &copy);
    if (c->opts.keep_frames && copy)
        log_frame(c, copy, n, root);
    if (!root) {
        c->m.unparseable++;
    } else {
        rcp_buf_init(&key);
        if (root->type == RCP_JSON_ARRAY && root->n > 0) {
            attribute(c, root, &key);
            for (i = 0; i < root->n; i++)
                handle_message(c, &root->kids[i], &key, 1);
        } else if (root->type == RCP_JSON_OBJECT) {
            handle_message(c, root, &key, 0);
        } else {
            c->m.not_a_message++;        /* a scalar, or [] */
        }
        rcp_buf_free(&key);
    }
    if (!c->opts.keep_frames)
        rcp_arena_reset(&c->scratch);
}

/* Every complete line the framer holds (transport.c: each byte searched
** once however the lines are split across reads); a line over max_frame
** is unparseable, and its bytes are dropped as they come. */
static void drain_lines(rcp_client *c)
{
    const char *p;
    size_t n;
    int k;
    while ((k = transport_framer_next(&c->in, &p, &n)) != TRANSPORT_NONE)
        if (k == TRANSPORT_LINE)
            handle_line(c, p, n);
        else
            c->m.unparseable++;         /* too long to keep */
}

static void mark_dead(rcp_client *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    c->in.eof = 1;
    drain_lines(c);                     /* an unterminated last line */
    c->m.bytes_searched = c->in.bytes_searched;
    transport_framer_free(&c->in);
    abandon_all(c);
}

/* One read() of the server's stdout.  1 bytes, 0 nothing, -1 EOF. */
static int read_stdout(rcp_client *c)
{
    int r = transport_framer_read(&c->in, c->out_fd);
    c->m.bytes_read = c->in.bytes_read;
    if (r == -2)
        return 0;                       /* no memory: try again later */
    if (r < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    if (r == 0)
        return -1;
    drain_lines(c);
    c->m.bytes_searched = c->in.bytes_searched;
    return 1;
}

static void read_stderr(rcp_client *c)
{
    char tmp[4096];
    ssize_t n;
    for (;;) {
        n = read(c->err_fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0) {
                close(c->err_fd);
                c->err_fd = -1;
            }
            return;
        }
        if (c->errtext.len < STDERR_KEEP)
            rcp_buf_put(&c->errtext, tmp,
                        (size_t)n < STDERR_KEEP - c->errtext.len
                        ? (size_t)n : STDERR_KEEP - c->errtext.len);
    }
}

/* Wait up to timeout_ms for output (and, with want_write, for room in
** the server's stdin), reading whatever arrives.  Returns 1 when stdin
** can take bytes, else 0. */
static int io_wait(rcp_client *c, int timeout_ms, int want_write)
{
    struct pollfd p[3];
    int np = 0, iw = -1, io = -1, ie = -1, rc;
    if (want_write && c->in_fd >= 0)
        p[iw = np++].fd = c->in_fd, p[iw].events = POLLOUT;
    if (!c->dead)
        p[io = np++].fd = c->out_fd, p[io].events = POLLIN;
    if (c->err_fd >= 0)
        p[ie = np++].fd = c->err_fd, p[ie].events = POLLIN;
    if (np == 0) {
        if (timeout_ms > 0)
            (void)poll(NULL, 0, timeout_ms);
        return 0;
    }
    do
        rc = poll(p, (nfds_t)np, timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc <= 0)
        return 0;
    if (ie >= 0 && p[ie].revents)
        read_stderr(c);
    if (io >= 0 && p[io].revents) {
        int k = 0;
        while (k++ < 64 && (rc = read_stdout(c)) > 0)
            ;
        if (rc < 0)
            mark_dead(c);
    }
    return iw >= 0 && (p[iw].revents & (POLLOUT | POLLERR | POLLHUP)) != 0;
}

/* MARK: - Sending (invariant 3) ------------------------------------------ */

/* write() that reports EPIPE instead of raising SIGPIPE: block the signal
** and consume it if our write raised it. */
static ssize_t write_quiet(int fd, const void *p, size_t n)
{
    sigset_t pipe_set, old, pend;
    ssize_t r;
    int e, had;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pend);
    had = sigismember(&pend, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old);
    r = write(fd, p, n);
    e = errno;
    if (r < 0 && e == EPIPE && !had) {
        int sig;
        sigpending(&pend);
        if (sigismember(&pend, SIGPIPE))
            sigwait(&pipe_set, &sig);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return r;
}

static void close_stdin(rcp_client *c)
{
    if (c->in_fd >= 0) {
        close(c->in_fd);
        c->in_fd = -1;
    }
}

/* Write all n bytes, draining the server meanwhile.  A write that makes
** no progress for write_ms means the server is wedged: -1. */
static int send_bytes(rcp_client *c, const char *p, size_t n)
{
    double stall = now_ms() + c->opts.write_ms;
    while (n > 0) {
        ssize_t w;
        if (c->in_fd < 0)
            return -1;
        if (!io_wait(c, ms_until(stall), 1)) {
            if (now_ms() >= stall)
                return -1;
            continue;
        }
        w = write_quiet(c->in_fd, p, n);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            close_stdin(c);              /* EPIPE: the server is gone */
            return -1;
        }
        p += w;
        n -= (size_t)w;
        stall = now_ms() + c->opts.write_ms;
    }
    return 0;
}

int rcp_client_send_raw(rcp_client *c, const void *bytes, size_t n)
{
    if (c && c->http)
        return c->dead ? -1 : http_send_raw(c, bytes, n);
    return c ? send_bytes(c, bytes, n) : -1;
}

static void frame_tail(rcp_jw *w, const char *method, const char *params)
{
    rcp_jw_key(w, "method");
    rcp_jw_cstr(w, method);
    if (params) {
        rcp_jw_key(w, "params");
        rcp_jw_raw(w, params, strlen(params));
    }
    rcp_jw_obj_end(w);
}

/* Put one message where it goes: the open batch, or the wire now (over
** HTTP, a POST to <base>/<method> as exchange xid, carrying the request
** whose id is id, or none). */
static int emit(rcp_client *c, rcp_buf *msg, const char *method,
                uint64_t xid, const char *id)
{
    int rc;
    if (msg->oom)
        return -1;
    if (c->in_batch) {
        if (c->batchbuf.len > 1)
            rcp_buf_putc(&c->batchbuf, ',');
        rcp_buf_put(&c->batchbuf, msg->data, msg->len);
        return c->batchbuf.oom ? -1 : 0;
    }
    if (c->http)
        return c->dead ? -1 : http_post(c, method, msg->data, msg->len, xid,
                                        id ? 1 : 0, id);
    rcp_buf_putc(msg, '\n');
    rc = msg->oom ? -1 : send_bytes(c, msg->data, msg->len);
    return rc;
}

/* A fresh id unique among the ids in flight (§4.7). */
static int fresh_id(rcp_client *c, char *out, rcp_buf *key)
{
    rcp_json j;
    for (;;) {
        memset(&j, 0, sizeof j);
        sprintf(out, "%lu", (unsigned long)(++c->next_id));
        j.type = RCP_JSON_NUMBER;
        j.s = out;
        j.n = strlen(out);
        if (id_key(key, &j) != 0)
            return -1;
        if (!map_find(&c->pending, key->data, key->len))
            return 0;
    }
}

static batch *current_batch(rcp_client *c)
{
    if (!c->cur) {
        c->cur = rcp_malloc(sizeof *c->cur);
        if (!c->cur)
            return NULL;
        memset(c->cur, 0, sizeof *c->cur);
        c->cur->refs = 1;
    }
    return c->cur;
}

rcp_request *rcp_client_request(rcp_client *c, const char *method,
                                const char *params, int timeout_ms)
{
    char id[32];
    rcp_buf key, msg;
    rcp_jw w;
    rcp_request *r = NULL;
    if (!c || !method || (c->http ? c->dead : c->in_fd < 0))
        return NULL;
    rcp_buf_init(&key);
    rcp_buf_init(&msg);
    if (fresh_id(c, id, &key) == 0)
        r = request_new(c, id, strlen(id), &key, timeout_ms);
    if (r && c->http)
        r->xid = c->in_batch ? c->batch_xid : ++c->next_xid;
    if (r && c->in_batch) {
        batch *b = current_batch(c);
        if (b) {
            r->batch = b;
            b->refs++;
            b->expected++;
            b->unsettled++;
        }
        c->batch_members++;
    }
    if (r) {
        rcp_jw_init(&w, &msg);
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "jsonrpc");
        rcp_jw_cstr(&w, "2.0");
        rcp_jw_key(&w, "id");
        rcp_jw_raw(&w, id, strlen(id));
        frame_tail(&w, method, params);
        if (emit(c, &msg, method, r->xid, id) != 0) {
            if (r->batch) {              /* never sent: not a member */
                r->batch->expected--;
                r->batch->unsettled--;
            }
            unpend(c, r);
            request_destroy(c, r);
            r = NULL;
        }
    }
    rcp_buf_free(&key);
    rcp_buf_free(&msg);
    return r;
}

int rcp_client_notify(rcp_client *c, const char *method, const char *params)
{
    rcp_buf msg;
    rcp_jw w;
    int rc;
    if (!c || !method)
        return -1;
    rcp_buf_init(&msg);
    rcp_jw_init(&w, &msg);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    frame_tail(&w, method, params);
    if (c->in_batch)
        c->batch_members++;
    rc = emit(c, &msg, method, c->http ? ++c->next_xid : 0, NULL);
    rcp_buf_free(&msg);
    return rc;
}

int rcp_client_batch_begin(rcp_client *c)
{
    if (!c || c->in_batch)
        return -1;
    c->in_batch = 1;
    c->batch_members = 0;
    c->batch_xid = c->http ? ++c->next_xid : 0;
    c->batchbuf.len = 0;
    c->batchbuf.oom = 0;
    rcp_buf_putc(&c->batchbuf, '[');
    return 0;
}

/* Abandon the members of a batch that could not be sent (no reply was
** due, so no mismatch either). */
static void batch_fail(rcp_client *c, batch *b)
{
    rcp_request *r, *nx;
    b->replied = b->expected;
    for (r = c->all; r; r = nx) {
        nx = r->next;
        if (r->batch == b && r->state == RCP_REQ_PENDING) {
            r->state = RCP_REQ_ABANDONED;
            unpend(c, r);
            settle(c, r);
        }
    }
}

int rcp_client_batch_end(rcp_client *c)
{
    batch *b;
    int rc = 0;
    if (!c || !c->in_batch)
        return -1;
    c->in_batch = 0;
    b = c->cur;
    c->cur = NULL;
    if (c->batch_members > 0) {
        c->m.batches++;
        c->m.batch_size_sum += c->batch_members;
        if (c->batch_members > c->m.batch_size_max)
            c->m.batch_size_max = c->batch_members;
        rcp_buf_puts(&c->batchbuf, c->http ? "]" : "]\n");
        if (c->batchbuf.oom || (c->http && c->dead))
            rc = -1;
        else if (c->http)                /* §5.2: a batch goes to <base> */
            rc = http_post(c, NULL, c->batchbuf.data, c->batchbuf.len,
                           c->batch_xid, b ? b->expected : 0, NULL);
        else
            rc = send_bytes(c, c->batchbuf.data, c->batchbuf.len);
        if (rc != 0 && b)
            batch_fail(c, b);
    }
    if (b && b->expected == 0)
        batch_unref(b);          /* nothing will settle it */
    return rc;
}

rcp_request *rcp_client_expect(rcp_client *c, const char *idjson, size_t n,
                               int timeout_ms)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *id;
    rcp_buf key;
    rcp_request *r = NULL;
    if (!c || !idjson)
        return NULL;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&key);
    id = rcp_json_parse(&a, idjson, n, 0, &err);
    if (id && (id->type == RCP_JSON_STRING || id->type == RCP_JSON_NUMBER)
        && id_key(&key, id) == 0
        && !map_find(&c->pending, key.data, key.len))
        r = request_new(c, idjson, n, &key, timeout_ms);
    rcp_buf_free(&key);
    rcp_arena_free(&a);
    return r;
}

/* MARK: - Public: receiving ---------------------------------------------- */

int rcp_client_pump(rcp_client *c, int timeout_ms)
{
    uint64_t before;
    if (!c)
        return -1;
    before = c->m.frames + c->m.blank_lines;
    if (c->http && http_broken(c))
        mark_dead(c);                    /* the server refuses connections */
    if (c->http && !c->dead)
        http_wait(c, min_timeout(timeout_ms, ms_until(c->next_deadline)));
    else if (!c->http && (!c->dead || c->err_fd >= 0))
        (void)io_wait(c, min_timeout(timeout_ms, ms_until(c->next_deadline)),
                      0);
    expire(c);
    if (c->dead && c->m.frames + c->m.blank_lines == before)
        return -1;
    return (int)(c->m.frames + c->m.blank_lines - before);
}

rcp_request_state rcp_client_wait(rcp_client *c, rcp_request *r,
                                  int timeout_ms)
{
    double end = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    if (!c || !r)
        return RCP_REQ_ABANDONED;
    while (r->state == RCP_REQ_PENDING) {
        int left = ms_until(end);
        if (left == 0 || rcp_client_pump(c, left) < 0)
            break;
    }
    expire(c);
    return r->state;
}

size_t rcp_client_pending(const rcp_client *c)
{
    const rcp_request *r;
    size_t n = 0;
    if (!c)
        return 0;
    for (r = c->all; r; r = r->next)
        n += r->state == RCP_REQ_PENDING;
    return n;
}

size_t rcp_client_wait_all(rcp_client *c, int timeout_ms)
{
    double end = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (rcp_client_pending(c) > 0) {
        int left = ms_until(end);
        if (left == 0 || rcp_client_pump(c, left) < 0)
            break;
    }
    return rcp_client_pending(c);
}

/* One poll over every client's stdout and stderr, then each pumped for
** what is ready: n servers answer concurrently, and no one of them is
** waited on while another has written (§16.2 fan-out). */
#define PUMP_MANY_MAX 64
int rcp_client_pump_many(rcp_client *const *cs, size_t n, int timeout_ms)
{
    struct pollfd p[2 * PUMP_MANY_MAX + 64];
    nfds_t np = 0;
    size_t i;
    int t = timeout_ms, total = 0, rc;
    if (n > PUMP_MANY_MAX)
        n = PUMP_MANY_MAX;
    for (i = 0; i < n; i++) {
        const rcp_client *c = cs[i];
        if (!c)
            continue;
        t = min_timeout(t, ms_until(c->next_deadline));
        if (c->http)                     /* its exchanges in flight */
            np += http_pollfds(c, p + np, sizeof p / sizeof *p - np);
        else if (!c->dead)
            p[np].fd = c->out_fd, p[np++].events = POLLIN;
        if (c->err_fd >= 0)
            p[np].fd = c->err_fd, p[np++].events = POLLIN;
    }
    if (np == 0 && t < 0)
        t = 0;                          /* nothing could ever wake us */
    do
        rc = poll(np ? p : NULL, np, t);
    while (rc < 0 && errno == EINTR);
    for (i = 0; i < n; i++)
        if (cs[i] && (rc = rcp_client_pump(cs[i], 0)) > 0)
            total += rc;
    return total;
}

/* MARK: - Public: process ------------------------------------------------ */

static int set_flags(int fd, int nonblock)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
        return -1;
    if (!nonblock)
        return 0;
    fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void close_pair(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    p[0] = p[1] = -1;
}

/* A forked peer that runs a function shares our memory but must not keep
** our other pipes open (their servers would never see EOF). */
static void close_others(void)
{
    long max = sysconf(_SC_OPEN_MAX), fd;
    if (max < 0 || max > 65536)
        max = 65536;
    for (fd = 3; fd < max; fd++)
        close((int)fd);
}

typedef struct peer {
    char *const *argv;              /* a program, or */
    int (*fn)(void *ud);            /* a function in the forked child */
    void *ud;
} peer;

/* In the child: wire the pipes to 0/1/2 and exec (or run the function);
** on exec failure report errno through the status pipe. */
static void child(const peer *pr, int in[2], int out[2], int err[2],
                  int st[2], rcp_client_stderr mode)
{
    sigset_t none;
    int e;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
        _exit(127);
    if (mode == RCP_STDERR_CAPTURE && dup2(err[1], 2) < 0)
        _exit(127);
    if (mode == RCP_STDERR_DISCARD) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0 && fd != 2) {
            dup2(fd, 2);
            close(fd);
        }
    }
    if (in[0] > 2) close(in[0]);
    if (out[1] > 2) close(out[1]);
    if (err[1] > 2) close(err[1]);
    if (pr->fn) {
        close_others();                  /* the status pipe too: "exec ok" */
        _exit(pr->fn(pr->ud));
    }
    execvp(pr->argv[0], pr->argv);
    e = errno;
    if (write(st[1], &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

static void errmsg(char *err, size_t n, const char *what, int e)
{
    if (err && n)
        snprintf(err, n, "%s: %s", what, strerror(e));
}

static rcp_client *client_alloc(const rcp_client_opts *opts)
{
    rcp_client *c = rcp_malloc(sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    if (opts)
        c->opts = *opts;
    if (c->opts.max_frame == 0)
        c->opts.max_frame = DEFAULT_MAX_FRAME;
    transport_framer_init(&c->in, c->opts.max_frame);
    if (c->opts.write_ms <= 0)
        c->opts.write_ms = DEFAULT_WRITE_MS;
    c->in_fd = c->out_fd = c->err_fd = -1;
    c->t0 = now_ms();
    rcp_arena_init(&c->scratch, 0);
    rcp_arena_init(&c->logarena, 0);
    rcp_buf_init(&c->batchbuf);
    rcp_buf_init(&c->errtext);
    return c;
}

static void client_free(rcp_client *c)
{
    http_free(c->http);
    while (c->all)
        request_destroy(c, c->all);
    batch_unref(c->cur);
    map_clear(&c->pending);
    map_clear(&c->done);
    transport_framer_free(&c->in);
    rcp_free(c->frames);
    rcp_arena_free(&c->scratch);
    rcp_arena_free(&c->logarena);
    rcp_buf_free(&c->batchbuf);
    rcp_buf_free(&c->errtext);
    if (c->in_fd >= 0) close(c->in_fd);
    if (c->out_fd >= 0) close(c->out_fd);
    if (c->err_fd >= 0) close(c->err_fd);
    rcp_free(c);
}

/* After the fork: did the exec succeed?  0 yes, else its errno. */
static int exec_status(int st[2])
{
    int e = 0;
    ssize_t n;
    close(st[1]);
    st[1] = -1;
    do
        n = read(st[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(st[0]);
    st[0] = -1;
    return n == (ssize_t)sizeof e ? e : 0;
}

static rcp_client *start(const peer *pr, const rcp_client_opts *opts,
                         char *err, size_t errlen)
{
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, ep[2] = { -1, -1 };
    int st[2] = { -1, -1 }, e;
    rcp_client *c;
    if (!(c = client_alloc(opts))) {
        errmsg(err, errlen, "client", ENOMEM);
        return NULL;
    }
    if (pipe(in) || pipe(out) || pipe(st)
        || (c->opts.err == RCP_STDERR_CAPTURE && pipe(ep))
        || set_flags(in[1], 1) || set_flags(out[0], 1) || set_flags(st[0], 0)
        || set_flags(st[1], 0) || (ep[0] >= 0 && set_flags(ep[0], 1))) {
        errmsg(err, errlen, "pipe", errno);
        goto fail;
    }
    c->pid = fork();
    if (c->pid < 0) {
        errmsg(err, errlen, "fork", errno);
        goto fail;
    }
    if (c->pid == 0)
        child(pr, in, out, ep, st, c->opts.err);
    close(in[0]);
    close(out[1]);
    if (ep[1] >= 0)
        close(ep[1]);
    c->in_fd = in[1];
    c->out_fd = out[0];
    c->err_fd = ep[0];
    if ((e = exec_status(st)) != 0) {
        errmsg(err, errlen, pr->argv ? pr->argv[0] : "peer", e);
        waitpid(c->pid, NULL, 0);
        client_free(c);
        return NULL;
    }
    return c;
fail:
    close_pair(in);
    close_pair(out);
    close_pair(ep);
    close_pair(st);
    client_free(c);
    return NULL;
}

rcp_client *rcp_client_spawn(char *const argv[], const rcp_client_opts *opts,
                             char *err, size_t errlen)
{
    peer pr;
    if (!argv || !argv[0]) {
        if (err && errlen)
            snprintf(err, errlen, "no server command given");
        return NULL;
    }
    pr.argv = argv;
    pr.fn = NULL;
    pr.ud = NULL;
    return start(&pr, opts, err, errlen);
}

rcp_client *rcp_client_fork(int (*fn)(void *ud), void *ud,
                            const rcp_client_opts *opts, char *err,
                            size_t errlen)
{
    peer pr;
    if (!fn) {
        if (err && errlen)
            snprintf(err, errlen, "no peer function given");
        return NULL;
    }
    pr.argv = NULL;
    pr.fn = fn;
    pr.ud = ud;
    return start(&pr, opts, err, errlen);
}

void rcp_client_eof(rcp_client *c)
{
    if (c && !c->http)
        close_stdin(c);
}

int rcp_client_wait_exit(rcp_client *c, int timeout_ms, int *status)
{
    double end = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    if (!c)
        return 0;
    if (c->http) {                       /* no process of ours to wait for */
        if (timeout_ms > 0 && !c->dead)
            rcp_client_wait_all(c, timeout_ms);
        return 0;
    }
    for (;;) {
        int left;
        if (!c->exited) {
            pid_t p = waitpid(c->pid, &c->status, WNOHANG);
            if (p == c->pid || (p < 0 && errno == ECHILD))
                c->exited = 1;
        }
        if (c->exited) {
            /* what it wrote before it exited is all there: read it now,
            ** so its stderr text is whole once the exit is seen */
            (void)io_wait(c, 0, 0);
            if (status)
                *status = c->status;
            return 1;
        }
        left = ms_until(end);
        if (left == 0)
            return 0;
        (void)io_wait(c, left < 5 ? left : 5, 0);
        expire(c);
    }
}

int rcp_client_close(rcp_client *c, int grace_ms)
{
    int status = -1;
    if (!c)
        return -1;
    if (c->http) {                       /* HTTP: nothing to end but sockets */
        mark_dead(c);
        client_free(c);
        return 0;
    }
    close_stdin(c);
    if (!rcp_client_wait_exit(c, grace_ms, &status)) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        status = -1;
    }
    mark_dead(c);
    client_free(c);
    return status;
}

int rcp_client_alive(const rcp_client *c)
{
    return c && !c->dead;
}

long rcp_client_pid(const rcp_client *c)
{
    return c && !c->http ? (long)c->pid : -1;
}

/* MARK: - Public: requests, logs, metrics -------------------------------- */

rcp_request_state rcp_request_state_get(const rcp_request *r)
{
    return r ? r->state : RCP_REQ_ABANDONED;
}

const char *rcp_request_id(const rcp_request *r, size_t *n)
{
    if (n)
        *n = r ? r->idlen : 0;
    return r ? r->id : NULL;
}

const rcp_json *rcp_request_response(const rcp_request *r)
{
    return r && r->state == RCP_REQ_DONE ? r->resp : NULL;
}

const rcp_json *rcp_request_result(const rcp_request *r)
{
    const rcp_json *resp = rcp_request_response(r);
    if (!resp || rcp_json_get(resp, "error"))
        return NULL;
    return rcp_json_get(resp, "result");
}

int rcp_request_error(const rcp_request *r, int *code)
{
    const rcp_json *resp = rcp_request_response(r);
    const rcp_json *err = resp ? rcp_json_get(resp, "error") : NULL;
    int64_t v = 0;
    if (!err)
        return 0;
    if (code)
        *code = rcp_json_int(rcp_json_get(err, "code"), &v) ? (int)v
            : RCP_INTERNAL_ERROR;
    return 1;
}

unsigned rcp_request_flags(const rcp_request *r)
{
    return r ? r->flags : 0;
}

double rcp_request_latency_ms(const rcp_request *r)
{
    return r ? r->latency_ms : 0;
}

void rcp_request_free(rcp_client *c, rcp_request *r)
{
    if (!c || !r)
        return;
    if (r->state == RCP_REQ_PENDING || r->state == RCP_REQ_TIMEOUT) {
        if (map_find(&c->pending, r->key, r->keylen)) {
            r->released = 1;             /* invariant 1 */
            return;
        }
    }
    request_destroy(c, r);
}

size_t rcp_client_frames(const rcp_client *c, const rcp_frame **out)
{
    if (out)
        *out = c ? c->frames : NULL;
    return c ? c->nframes : 0;
}

void rcp_client_frames_clear(rcp_client *c)
{
    if (!c)
        return;
    c->nframes = 0;
    rcp_arena_reset(&c->logarena);
}

const char *rcp_client_stderr_text(const rcp_client *c, size_t *n)
{
    if (n)
        *n = c ? c->errtext.len : 0;
    return c ? c->errtext.data : NULL;
}

const rcp_client_metrics *rcp_client_metrics_get(const rcp_client *c)
{
    return c ? &c->m : NULL;
}

/* The latency below which a fraction q of the pairs fell, from the
** histogram (upper bucket bound, so an over-estimate by < 2x). */
static uint64_t quantile_us(const rcp_client_metrics *m, double q)
{
    uint64_t want = (uint64_t)(q * (double)m->pairs), seen = 0;
    int i;
    for (i = 0; i < 32; i++) {
        seen += m->pair_us_hist[i];
        if (seen > want || seen == m->pairs)
            return (uint64_t)1 << (i + 1);
    }
    return m->pair_us_max;
}

static void jw_count(rcp_jw *w, const char *k, uint64_t v)
{
    rcp_jw_key(w, k);
    rcp_jw_int(w, (int64_t)v);
}

void rcp_client_metrics_json(const rcp_client *c, rcp_buf *out)
{
    const rcp_client_metrics *m = &c->m;
    rcp_jw w;
    rcp_jw_init(&w, out);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "batch.size");
    rcp_jw_obj(&w);
    jw_count(&w, "batches", m->batches);
    jw_count(&w, "members", m->batch_size_sum);
    jw_count(&w, "max", m->batch_size_max);
    rcp_jw_obj_end(&w);
    jw_count(&w, "batch.response_count_mismatch",
             m->batch_response_count_mismatch);
    jw_count(&w, "batch.unknown_id_response", m->batch_unknown_id_response);
    jw_count(&w, "batch.missing_response", m->batch_missing_response);
    rcp_jw_key(&w, "batch.pair_latency");
    rcp_jw_obj(&w);
    jw_count(&w, "count", m->pairs);
    jw_count(&w, "meanUs", m->pairs ? m->pair_us_sum / m->pairs : 0);
    jw_count(&w, "p50Us", m->pairs ? quantile_us(m, 0.5) : 0);
    jw_count(&w, "p99Us", m->pairs ? quantile_us(m, 0.99) : 0);
    jw_count(&w, "maxUs", m->pair_us_max);
    rcp_jw_obj_end(&w);
    jw_count(&w, "batch.null_id_response", m->batch_null_id_response);
    jw_count(&w, "client.duplicate_response", m->duplicate_response);
    jw_count(&w, "client.late_response", m->late_response);
    jw_count(&w, "client.bad_jsonrpc", m->bad_jsonrpc);
    jw_count(&w, "client.both_result_error", m->both_result_error);
    jw_count(&w, "client.neither_result_error", m->neither_result_error);
    jw_count(&w, "client.bad_error_object", m->bad_error_object);
    jw_count(&w, "client.bad_id_type", m->bad_id_type);
    jw_count(&w, "client.unknown_error_code", m->unknown_error_code);
    jw_count(&w, "client.unparseable", m->unparseable);
    jw_count(&w, "client.not_a_message", m->not_a_message);
    jw_count(&w, "client.bom", m->bom);
    jw_count(&w, "client.server_requests", m->server_requests);
    jw_count(&w, "client.frames", m->frames);
    jw_count(&w, "client.responses", m->responses);
    jw_count(&w, "client.notifications", m->notifications);
    if (c->http) {                       /* §5.2 */
        jw_count(&w, "http.exchanges", m->http_exchanges);
        jw_count(&w, "http.not_200", m->http_not_200);
        jw_count(&w, "http.failed", m->http_failed);
        jw_count(&w, "http.reconnects", m->http_reconnects);
        jw_count(&w, "http.connect_failures", m->http_connect_failures);
        jw_count(&w, "http.standins", m->http_standins);
        jw_count(&w, "sse.events", m->sse_events);
        jw_count(&w, "sse.multiline", m->sse_multiline);
        jw_count(&w, "sse.after_final", m->sse_after_final);
        jw_count(&w, "sse.no_final", m->sse_no_final);
        jw_count(&w, "sse.unterminated", m->sse_unterminated);
    }
    rcp_jw_obj_end(&w);
}

/* MARK: - HTTP (§5.2) ---------------------------------------------------- */

/* Over HTTP every request is one exchange: a POST of one JSON-RPC body to
** <base>/<method> (a batch to <base>), its answer the response body --
** or, when the client asked for SSE and the server chose it, a stream of
** `data:` events ending with the response (§5.2).  Each exchange takes a
** connection of its own from a keep-alive pool, so requests in flight
** run side by side (a cancel reaches its request while it runs, §7.14)
** and no server needs to support pipelining.  What arrives is handed to
** the same handle_line as a stdio line: pairing by id, the metrics and
** the frame log do not know the transport. */

#define HTTP_MAX_HEAD   65536u   /* a response head longer than this is
                                    not HTTP we can judge */
#define HTTP_MAX_CONNS  32       /* exchanges in flight at once: more
                                    wait for one to end (a server caps
                                    its connections too) */

enum { H_HEAD, H_BODY_LEN, H_CHUNK_SIZE, H_CHUNK_DATA, H_CHUNK_CRLF,
       H_TRAILER, H_BODY_CLOSE, H_DONE };

typedef struct hconn {
    int       fd;
    int       busy;       /* an exchange is in flight */
    int       reused;     /* an earlier exchange ran on it (keep-alive) */
    int       retried;    /* this exchange was sent again once already */
    uint64_t  xid;        /* the exchange, as the requests note it */
    size_t    nreq;       /* requests the exchange carries */
    char      one_id[64]; /* the id of its only request, or "" */
    int       sent_json;  /* the body sent parses as JSON */
    rcp_buf   req;        /* the request as written (kept to resend) */
    /* the response */
    rcp_buf   in;         /* received and not yet consumed */
    size_t    got;        /* bytes received in this exchange */
    int       phase, status, keep, sse, json, no_body;
    uint64_t  left;       /* bytes still due in the body or chunk */
    rcp_buf   head;       /* status line and headers */
    rcp_buf   body;       /* the body (de-chunked) */
    size_t    sse_at;     /* body bytes already split into SSE lines */
    rcp_buf   data;       /* the SSE event's data so far */
    int       data_lines, finals;
    rcp_http_reply *capture;  /* a raw exchange: fill this, deliver nothing */
} hconn;

struct http {
    char            *host, *port, *base, *hosthdr;
    struct addrinfo *ai;
    rcp_buf          headers;    /* the caller's, "Name: value\r\n"... */
    int              sse;        /* Accept: text/event-stream */
    hconn           *conn;
    size_t           nconn;
    int              broken;     /* a connection was refused: gone */
    char             session[256];   /* §5.2: RCP-Session, or "" */
    rcp_buf          raw;        /* raw bytes not yet a whole line */
    /* the exchange whose body is being handed over */
    uint64_t         cur_xid;
    int              cur_status, cur_sse, cur_standin;
};

static int hexdigit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static void hconn_close(hconn *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    k->reused = 0;
}

static void hconn_reset(hconn *k)
{
    k->in.len = k->head.len = k->body.len = k->data.len = 0;
    k->in.oom = k->head.oom = k->body.oom = k->data.oom = 0;
    k->got = k->sse_at = 0;
    k->phase = H_HEAD;
    k->status = k->keep = k->sse = k->json = k->no_body = 0;
    k->data_lines = k->finals = 0;
    k->left = 0;
}

static void http_free(http *h)
{
    size_t i;
    if (!h)
        return;
    for (i = 0; i < h->nconn; i++) {
        hconn *k = &h->conn[i];
        hconn_close(k);
        rcp_buf_free(&k->req);
        rcp_buf_free(&k->in);
        rcp_buf_free(&k->head);
        rcp_buf_free(&k->body);
        rcp_buf_free(&k->data);
    }
    rcp_free(h->conn);
    if (h->ai)
        freeaddrinfo(h->ai);
    rcp_free(h->host);
    rcp_free(h->port);
    rcp_free(h->base);
    rcp_free(h->hosthdr);
    rcp_buf_free(&h->headers);
    rcp_buf_free(&h->raw);
    rcp_free(h);
}

static char *dupn(const char *s, size_t n)
{
    char *d = rcp_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* http://host[:port][/base]: host a name, an IPv4 literal or [IPv6].  No
** path means §5.2's default base /rcp; a trailing '/' is dropped. */
static int parse_url(http *h, const char *url, char *err, size_t errlen)
{
    const char *p, *host, *hend, *port = NULL, *pend, *path;
    size_t plen;
    if (strncmp(url, "https://", 8) == 0) {
        snprintf(err, errlen, "https is not supported (rcp has no TLS; "
                 "put a TLS-terminating proxy in front)");
        return -1;
    }
    if (strncmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "not an http:// URL: %s", url);
        return -1;
    }
    p = url + 7;
    if (*p == '[') {
        host = p + 1;
        if (!(hend = strchr(host, ']'))) {
            snprintf(err, errlen, "unterminated [IPv6] host in %s", url);
            return -1;
        }
        p = hend + 1;
    } else {
        host = p;
        while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#')
            p++;
        hend = p;
    }
    if (*p == ':') {
        port = ++p;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    pend = p;
    path = p;
    if (*p && *p != '/') {
        snprintf(err, errlen, "bad host or port in %s", url);
        return -1;
    }
    if (hend == host || (port && (pend == port || pend - port > 5))) {
        snprintf(err, errlen, "bad host or port in %s", url);
        return -1;
    }
    plen = strcspn(path, "?#");
    if (path[plen]) {
        snprintf(err, errlen, "a query or fragment has no place in an RCP "
                 "base URL: %s", url);
        return -1;
    }
    while (plen > 0 && path[plen - 1] == '/')
        plen--;
    h->host = dupn(host, (size_t)(hend - host));
    h->port = port ? dupn(port, (size_t)(pend - port)) : dupn("80", 2);
    h->base = *path ? dupn(path, plen) : dupn("/rcp", 4);
    h->hosthdr = dupn(url + 7, (size_t)(pend - (url + 7)));
    if (!h->host || !h->port || !h->base || !h->hosthdr) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* The caller's headers, each "Name: value" with a token name and no CR
** or LF anywhere (a header must never smuggle a second request). */
static int add_headers(http *h, const char *const *hs, char *err,
                       size_t errlen)
{
    size_t i;
    for (i = 0; hs && hs[i]; i++) {
        const char *s = hs[i], *colon = strchr(s, ':');
        const char *q;
        if (!colon || colon == s || strpbrk(s, "\r\n")) {
            snprintf(err, errlen, "not a header line \"Name: value\": %s", s);
            return -1;
        }
        for (q = s; q < colon; q++)
            if (*q <= ' ' || *q >= 127 || strchr("()<>@,;\\\"/[]?={}", *q)) {
                snprintf(err, errlen, "bad header name in: %s", s);
                return -1;
            }
        rcp_buf_puts(&h->headers, s);
        rcp_buf_puts(&h->headers, "\r\n");
    }
    if (h->headers.oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Connect to the first address that takes the connection within ms. */
static int tcp_connect(const http *h, int ms)
{
    const struct addrinfo *a;
    for (a = h->ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        int rc, e = 0, one = 1;
        socklen_t el = sizeof e;
        struct pollfd p;
        if (fd < 0)
            continue;
        if (set_flags(fd, 1) != 0) {
            close(fd);
            continue;
        }
        do
            rc = connect(fd, a->ai_addr, a->ai_addrlen);
        while (rc < 0 && errno == EINTR);
        if (rc < 0 && errno == EINPROGRESS) {
            p.fd = fd;
            p.events = POLLOUT;
            do
                rc = poll(&p, 1, ms);
            while (rc < 0 && errno == EINTR);
            if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0
                && e == 0)
                rc = 0;
            else
                rc = -1, errno = e ? e : ETIMEDOUT;
        }
        if (rc == 0) {
            /* requests are small and answered at once: no Nagle delay */
            (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return fd;
        }
        close(fd);
    }
    return -1;
}

/* An idle keep-alive connection the server has closed (or written to
** unasked) is useless: 1 when k can carry a new exchange. */
static int idle_usable(hconn *k)
{
    struct pollfd p;
    p.fd = k->fd;
    p.events = POLLIN;
    p.revents = 0;
    return k->fd >= 0 && poll(&p, 1, 0) == 0;
}

/* A connection for a new exchange: an idle usable one, or a new one. */
static hconn *take_conn(rcp_client *c)
{
    http *h = c->http;
    hconn *k = NULL;
    size_t i;
    for (i = 0; i < h->nconn; i++) {
        hconn *t = &h->conn[i];
        if (t->busy)
            continue;
        if (t->fd >= 0 && idle_usable(t))
            return t;
        hconn_close(t);
        if (!k)
            k = t;
    }
    if (!k) {
        /* the slots never move (they are made once, at connect): a
        ** callback that sends while a body is handed over is safe */
        if (h->nconn == HTTP_MAX_CONNS)
            return NULL;
        k = &h->conn[h->nconn++];
        memset(k, 0, sizeof *k);
        k->fd = -1;
        rcp_buf_init(&k->req);
        rcp_buf_init(&k->in);
        rcp_buf_init(&k->head);
        rcp_buf_init(&k->body);
        rcp_buf_init(&k->data);
    }
    if ((k->fd = tcp_connect(h, c->opts.write_ms)) < 0) {
        h->broken = 1;
        return NULL;
    }
    return k;
}

/* Write k's request whole; reads on it meanwhile are left for later
** (the server may answer early, e.g. 413, and close).  0, or -1. */
static int conn_write(rcp_client *c, hconn *k)
{
    const char *p = k->req.data;
    size_t n = k->req.len;
    double stall = now_ms() + c->opts.write_ms;
    while (n > 0) {
        struct pollfd pf;
        ssize_t w;
        int rc;
        pf.fd = k->fd;
        pf.events = POLLOUT;
        rc = poll(&pf, 1, ms_until(stall));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        w = write_quiet(k->fd, p, n);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        stall = now_ms() + c->opts.write_ms;
    }
    return 0;
}

/* Put k's request on the wire, on a fresh connection once more when a
** kept-alive one turns out to be closed (the server may close an idle
** connection at any time: RFC 9112 §9.3.1). */
static int conn_send(rcp_client *c, hconn *k)
{
    if (conn_write(c, k) == 0)
        return 0;
    if (!k->reused || k->retried)
        return -1;
    k->retried = 1;
    c->m.http_reconnects++;
    hconn_close(k);
    if ((k->fd = tcp_connect(c->http, c->opts.write_ms)) < 0)
        return -1;
    return conn_write(c, k);
}

static void put_path(rcp_buf *b, const char *base, const char *method)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *m = (const unsigned char *)method;
    rcp_buf_puts(b, base);
    if (!m)
        return;
    rcp_buf_putc(b, '/');
    for (; *m; m++) {
        /* RFC 3986 unreserved and '/' as they are (method names such as
        ** embed/sparse), everything else percent-encoded */
        if ((*m >= 'a' && *m <= 'z') || (*m >= 'A' && *m <= 'Z')
            || (*m >= '0' && *m <= '9') || strchr("-._~/", *m)) {
            rcp_buf_putc(b, (char)*m);
        } else {
            rcp_buf_putc(b, '%');
            rcp_buf_putc(b, hex[*m >> 4]);
            rcp_buf_putc(b, hex[*m & 15]);
        }
    }
}

/* The request text: verb, path, Host, the caller's headers, extra
** header lines (each ending in CRLF), the body. */
static void build_request(rcp_client *c, rcp_buf *b, const char *verb,
                          const char *path, const char *extra,
                          const void *body, size_t n, int has_body)
{
    http *h = c->http;
    char len[32];
    b->len = 0;
    b->oom = 0;
    rcp_buf_puts(b, verb);
    rcp_buf_putc(b, ' ');
    rcp_buf_puts(b, path);
    rcp_buf_puts(b, " HTTP/1.1\r\nHost: ");
    rcp_buf_puts(b, h->hosthdr);
    rcp_buf_puts(b, "\r\n");
    if (extra)
        rcp_buf_puts(b, extra);
    rcp_buf_put(b, h->headers.data, h->headers.len);
    if (h->session[0]) {
        rcp_buf_puts(b, "RCP-Session: ");
        rcp_buf_puts(b, h->session);
        rcp_buf_puts(b, "\r\n");
    }
    if (has_body) {
        sprintf(len, "%lu", (unsigned long)n);
        rcp_buf_puts(b, "Content-Length: ");
        rcp_buf_puts(b, len);
        rcp_buf_puts(b, "\r\n");
    }
    rcp_buf_puts(b, "\r\n");
    rcp_buf_put(b, body, n);
}

/* Start an exchange on a connection of its own.  0, or -1 when no
** connection could carry it (every request it carried is then failed:
** nothing is assumed about its effect, §13.1). */
static int http_start(rcp_client *c, const char *verb, const char *path,
                      const char *extra, const void *body, size_t n,
                      int has_body, uint64_t xid, size_t nreq,
                      const char *one_id, rcp_http_reply *capture)
{
    hconn *k;
    int waited = 0;
    double end = now_ms() + c->opts.write_ms;
    while (!(k = take_conn(c))) {
        /* every connection busy: let one finish (or fail to connect) */
        if (c->http->nconn < HTTP_MAX_CONNS || ms_until(end) == 0) {
            if (c->http->nconn < HTTP_MAX_CONNS || !waited)
                c->m.http_connect_failures++;
            return -1;
        }
        waited = 1;
        (void)rcp_client_pump(c, ms_until(end));
    }
    hconn_reset(k);
    k->xid = xid;
    k->nreq = nreq;
    k->retried = 0;
    k->capture = capture;
    k->sent_json = 0;
    snprintf(k->one_id, sizeof k->one_id, "%s", one_id ? one_id : "");
    k->no_body = strcmp(verb, "HEAD") == 0;
    build_request(c, &k->req, verb, path, extra, body, n, has_body);
    if (has_body && n) {
        rcp_arena a;
        rcp_json_err err;
        rcp_arena_init(&a, 0);
        k->sent_json = rcp_json_parse(&a, body, n, 0, &err) != NULL;
        rcp_arena_free(&a);
    }
    if (k->req.oom || conn_send(c, k) != 0) {
        hconn_close(k);
        return -1;
    }
    k->busy = 1;
    c->m.http_exchanges++;
    return 0;
}

/* POST one JSON-RPC body: to <base>/<method> for a message, to <base>
** for a batch (method NULL). */
static int http_post(rcp_client *c, const char *method, const char *body,
                     size_t n, uint64_t xid, size_t nreq, const char *one_id)
{
    rcp_buf path;
    int rc;
    const char *extra = c->http->sse
        ? "Content-Type: application/json\r\n"
          "Accept: text/event-stream, application/json\r\n"
        : "Content-Type: application/json\r\nAccept: application/json\r\n";
    rcp_buf_init(&path);
    put_path(&path, c->http->base, method);
    rcp_buf_putc(&path, '\0');
    rc = path.oom ? -1 : http_start(c, "POST", path.data, extra, body, n, 1,
                                    xid, nreq, one_id, NULL);
    rcp_buf_free(&path);
    return rc;
}

/* --- The response ---------------------------------------------------- */

/* Case-insensitive prefix test of a header line. */
static int header_is(const char *line, size_t n, const char *name)
{
    size_t i, k = strlen(name);
    if (n <= k || line[k] != ':')
        return 0;
    for (i = 0; i < k; i++) {
        char a = line[i], b = name[i];
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != b)
            return 0;
    }
    return 1;
}

/* The value of a header line (leading and trailing blanks cut). */
static const char *header_value(const char *line, size_t n, size_t *vn)
{
    const char *v = memchr(line, ':', n), *e = line + n;
    v = v ? v + 1 : e;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    *vn = (size_t)(e - v);
    return v;
}

static int has_token(const char *v, size_t n, const char *tok)
{
    size_t k = strlen(tok), i, j;
    for (i = 0; i + k <= n; i++) {
        for (j = 0; j < k; j++) {
            char a = v[i + j];
            if (a >= 'A' && a <= 'Z')
                a = (char)(a - 'A' + 'a');
            if (a != tok[j])
                break;
        }
        if (j == k)
            return 1;
    }
    return 0;
}

/* The status line and headers in k->head: how the body is framed (RFC
** 9112 §6.3).  0, or -1 when it is not an HTTP/1.x response. */
static int parse_head(hconn *k)
{
    const char *p = k->head.data, *e = p + k->head.len, *nl;
    int minor, chunked = 0, have_len = 0, close_hdr = 0, ka_hdr = 0;
    uint64_t len = 0;
    if (k->head.len < 12 || memcmp(p, "HTTP/1.", 7) != 0
        || (p[7] != '0' && p[7] != '1') || p[8] != ' '
        || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9'
        || p[11] < '0' || p[11] > '9')
        return -1;
    minor = p[7] - '0';
    k->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    for (p = memchr(p, '\n', (size_t)(e - p)); p && p + 1 < e; p = nl) {
        const char *line = p + 1, *v;
        size_t ln, vn;
        nl = memchr(line, '\n', (size_t)(e - line));
        ln = (size_t)((nl ? nl : e) - line);
        if (ln && line[ln - 1] == '\r')
            ln--;
        v = header_value(line, ln, &vn);
        if (header_is(line, ln, "content-length")) {
            size_t i;
            if (vn == 0 || vn > 18 || (have_len && len != 0))
                return -1;
            for (i = 0, len = 0; i < vn; i++) {
                if (v[i] < '0' || v[i] > '9')
                    return -1;
                len = len * 10 + (uint64_t)(v[i] - '0');
            }
            have_len = 1;
        } else if (header_is(line, ln, "transfer-encoding")) {
            chunked = has_token(v, vn, "chunked");
        } else if (header_is(line, ln, "connection")) {
            close_hdr |= has_token(v, vn, "close");
            ka_hdr |= has_token(v, vn, "keep-alive");
        } else if (header_is(line, ln, "content-type")) {
            k->sse = has_token(v, vn, "text/event-stream");
            k->json = has_token(v, vn, "json");
        }
        if (!nl)
            break;
    }
    k->keep = minor == 1 ? !close_hdr : ka_hdr;
    if (k->no_body || k->status == 204 || k->status == 304) {
        k->phase = H_DONE;
    } else if (chunked) {
        k->phase = H_CHUNK_SIZE;
    } else if (have_len) {
        k->left = len;
        k->phase = len ? H_BODY_LEN : H_DONE;
    } else {
        k->phase = H_BODY_CLOSE;        /* the body ends with the connection */
        k->keep = 0;
    }
    return 0;
}

static void sse_bytes(rcp_client *c, hconn *k);

static void body_put(rcp_client *c, hconn *k, const char *p, size_t n)
{
    rcp_buf_put(&k->body, p, n);
    if (k->sse && !k->capture)
        sse_bytes(c, k);
}

/* Consume what k->in holds; the phase says what is expected.  -1 on a
** framing error (the exchange fails). */
static int parse_in(rcp_client *c, hconn *k)
{
    size_t at = 0;
    int rc = 0;
    while (k->phase != H_DONE && at < k->in.len && rc == 0) {
        const char *p = k->in.data + at;
        size_t n = k->in.len - at;
        const char *nl;
        if (k->phase == H_HEAD) {
            /* the head ends at the first empty line */
            const char *end = NULL;
            size_t i;
            for (i = 0; i < n && !end; i++)
                if (p[i] == '\n' && ((i >= 1 && p[i - 1] == '\n')
                                     || (i >= 2 && p[i - 1] == '\r'
                                         && p[i - 2] == '\n')))
                    end = p + i + 1;
            if (!end) {
                if (n > HTTP_MAX_HEAD)
                    rc = -1;
                break;
            }
            k->head.len = 0;
            rcp_buf_put(&k->head, p, (size_t)(end - p));
            at += (size_t)(end - p);
            if (k->head.oom || parse_head(k) != 0)
                rc = -1;
            else if (k->status >= 100 && k->status < 200)
                k->phase = H_HEAD;      /* 100 Continue: the real one follows */
        } else if (k->phase == H_BODY_LEN || k->phase == H_CHUNK_DATA) {
            size_t take = n < k->left ? n : (size_t)k->left;
            body_put(c, k, p, take);
            at += take;
            k->left -= take;
            if (k->left == 0)
                k->phase = k->phase == H_BODY_LEN ? H_DONE : H_CHUNK_CRLF;
        } else if (k->phase == H_BODY_CLOSE) {
            body_put(c, k, p, n);
            at += n;
        } else if (!(nl = memchr(p, '\n', n))) {
            if (n > 4096)
                rc = -1;                /* a chunk line that never ends */
            break;
        } else if (k->phase == H_CHUNK_SIZE) {
            uint64_t v = 0;
            size_t i, digits = 0;
            for (i = 0; p + i < nl; i++, digits++) {
                int d = hexdigit(p[i]);
                if (d < 0 || digits > 15)
                    break;
                v = v * 16 + (uint64_t)d;
            }
            if (digits == 0)
                rc = -1;
            at += (size_t)(nl - p) + 1;
            k->left = v;
            k->phase = v ? H_CHUNK_DATA : H_TRAILER;
        } else if (k->phase == H_CHUNK_CRLF) {
            at += (size_t)(nl - p) + 1;
            k->phase = H_CHUNK_SIZE;
        } else {                         /* H_TRAILER: until an empty line */
            size_t ln = (size_t)(nl - p);
            at += ln + 1;
            if (ln == 0 || (ln == 1 && p[0] == '\r'))
                k->phase = H_DONE;
        }
        if (k->body.oom)
            rc = -1;
    }
    memmove(k->in.data, k->in.data + at, k->in.len - at);
    k->in.len -= at;
    return rc;
}

/* Hand one JSON-RPC text (a body or an SSE event's data) to the stdio
** path, noting which exchange it came by. */
static void deliver_text(rcp_client *c, hconn *k, const char *p, size_t n,
                         int sse, int standin)
{
    http *h = c->http;
    h->cur_xid = k->xid;
    h->cur_status = k->status;
    h->cur_sse = sse;
    h->cur_standin = standin;
    handle_line(c, p, n);
    h->cur_xid = 0;
    h->cur_status = h->cur_sse = h->cur_standin = 0;
}

/* One SSE event (WHATWG HTML §9.2.6: data lines joined by '\n'). */
static void sse_dispatch(rcp_client *c, hconn *k)
{
    uint64_t before = c->m.responses;
    if (k->data_lines == 0)
        return;
    c->m.sse_events++;
    if (k->data_lines > 1)
        c->m.sse_multiline++;            /* §5.2: one data: line a frame */
    if (k->finals > 0)
        c->m.sse_after_final++;          /* §5.2: the stream ends after it */
    deliver_text(c, k, k->data.data ? k->data.data : "", k->data.len, 1, 0);
    if (c->m.responses != before)
        k->finals++;
    k->data.len = 0;
    k->data_lines = 0;
}

/* Split the body's new bytes into SSE lines (ending in LF, CRLF or CR). */
static void sse_bytes(rcp_client *c, hconn *k)
{
    const char *b = k->body.data;
    size_t i = k->sse_at, start = 0;     /* the body holds one open line */
    for (; i < k->body.len; i++) {
        size_t ln;
        const char *line;
        if (b[i] != '\n' && b[i] != '\r')
            continue;
        if (b[i] == '\r' && i + 1 == k->body.len)
            break;                       /* a CR: is an LF next? */
        line = b + start;
        ln = i - start;
        if (b[i] == '\r' && b[i + 1] == '\n')
            i++;
        start = i + 1;
        if (ln == 0) {
            sse_dispatch(c, k);
        } else if (line[0] == ':') {
            c->m.sse_comments++;         /* a comment: keep-alive, ignored */
        } else if (ln >= 5 && memcmp(line, "data", 4) == 0
                   && (line[4] == ':')) {
            size_t v = 5 + (ln > 5 && line[5] == ' ');
            if (k->data_lines++)
                rcp_buf_putc(&k->data, '\n');
            rcp_buf_put(&k->data, line + v, ln - v);
        } else if (ln == 4 && memcmp(line, "data", 4) == 0) {
            if (k->data_lines++)
                rcp_buf_putc(&k->data, '\n');
        }                                /* event:, id:, retry: ignored */
    }
    /* keep only the unfinished line; a CR at the very end is looked at
    ** again with what follows it */
    memmove(k->body.data, b + start, k->body.len - start);
    k->body.len -= start;
    k->sse_at = i - start;
}

/* The JSON-RPC error §5.2's table says a status without a JSON-RPC body
** stands for (400 = -32700 or -32600, 429 = -32011, 500 = -32603, 503 =
** -32010), or 0. */
static int standin_code(const hconn *k)
{
    switch (k->status) {
    case 400: return k->sent_json ? RCP_INVALID_REQUEST : RCP_PARSE_ERROR;
    case 429: return RCP_RATE_LIMITED;
    case 500: return RCP_INTERNAL_ERROR;
    case 503: return RCP_BACKEND_UNAVAILABLE;
    default:  return 0;
    }
}

static int looks_json(const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++, n--;
    return n && (*p == '{' || *p == '[');
}

/* The exchange on k is over (complete, or failed with ok 0). */
static void exchange_end(rcp_client *c, hconn *k, int ok)
{
    http *h = c->http;
    rcp_request *r, *nx;
    int delivered = 0;
    if (k->capture) {
        k->capture->status = ok ? k->status : 0;
        rcp_buf_put(&k->capture->head, k->head.data, k->head.len);
        rcp_buf_put(&k->capture->body, k->body.data, k->body.len);
        k->capture->closed = !(ok && k->keep);
        k->capture->done = 1;
    } else if (k->sse) {
        if (ok && k->data_lines)
            c->m.sse_unterminated++;     /* no blank line after it */
        delivered = k->finals > 0;
        if (ok && k->nreq && k->finals == 0)
            c->m.sse_no_final++;
    } else if (ok && k->body.len && (k->json || looks_json(k->body.data,
                                                           k->body.len))) {
        deliver_text(c, k, k->body.data, k->body.len, 0, 0);
        delivered = 1;
    }
    if (!k->capture) {
        if (ok && k->status != 200)
            c->m.http_not_200++;
        if (!ok)
            c->m.http_failed++;
        if (ok && !delivered && (k->nreq || k->status == 400)
            && standin_code(k)) {
            /* §5.2: the status is the JSON-RPC error it mirrors */
            char t[192];
            int code = standin_code(k);
            snprintf(t, sizeof t, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":"
                     "{\"code\":%d,\"message\":\"HTTP %d\"}}",
                     k->one_id[0] && code != RCP_PARSE_ERROR
                     && code != RCP_INVALID_REQUEST ? k->one_id : "null",
                     code, k->status);
            deliver_text(c, k, t, strlen(t), 0, 1);
            c->m.http_standins++;
        }
        /* §13.1: a request its exchange did not answer never will be */
        for (r = c->all; r; r = nx) {
            nx = r->next;
            if (r->xid != k->xid)
                continue;
            if (!r->http_status)
                r->http_status = ok ? k->status : 0;
            if (r->state != RCP_REQ_PENDING)
                continue;
            r->state = RCP_REQ_ABANDONED;
            c->m.batch_missing_response++;
            unpend(c, r);
            settle(c, r);
            if (r->released)
                request_destroy(c, r);
        }
    }
    k->busy = 0;
    k->capture = NULL;
    if (ok && k->keep && k->phase == H_DONE && k->in.len == 0)
        k->reused = 1;                   /* back in the pool */
    else
        hconn_close(k);
    (void)h;
}

/* Read what k's server sent; 1 when the exchange ended. */
static int conn_read(rcp_client *c, hconn *k)
{
    char tmp[65536];
    int reads = 0;
    while (reads++ < 16) {
        ssize_t n = read(k->fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) {
            if (k->got == 0 && k->reused && !k->retried) {
                /* closed while idle, as we sent: once more, afresh */
                k->retried = 1;
                c->m.http_reconnects++;
                hconn_close(k);
                if ((k->fd = tcp_connect(c->http, c->opts.write_ms)) >= 0
                    && conn_write(c, k) == 0)
                    return 0;
                exchange_end(c, k, 0);
                return 1;
            }
            exchange_end(c, k, k->phase == H_BODY_CLOSE);
            return 1;
        }
        k->got += (size_t)n;
        c->m.bytes_read += (uint64_t)n;
        rcp_buf_put(&k->in, tmp, (size_t)n);
        if (k->in.oom || parse_in(c, k) != 0) {
            exchange_end(c, k, 0);
            return 1;
        }
        if (k->phase == H_DONE) {
            exchange_end(c, k, 1);
            return 1;
        }
    }
    return 0;
}

/* Wait up to timeout_ms for any exchange in flight to make progress. */
static void http_wait(rcp_client *c, int timeout_ms)
{
    http *h = c->http;
    struct pollfd p[HTTP_MAX_CONNS];
    size_t idx[HTTP_MAX_CONNS], i;
    nfds_t np = 0;
    int rc;
    for (i = 0; i < h->nconn; i++)
        if (h->conn[i].busy && h->conn[i].fd >= 0) {
            p[np].fd = h->conn[i].fd;
            p[np].events = POLLIN;
            p[np].revents = 0;
            idx[np++] = i;
        }
    if (np == 0) {
        if (timeout_ms > 0)
            (void)poll(NULL, 0, timeout_ms);
        return;
    }
    do
        rc = poll(p, np, timeout_ms);
    while (rc < 0 && errno == EINTR);
    for (i = 0; rc > 0 && i < np; i++)
        if (p[i].revents)
            (void)conn_read(c, &h->conn[idx[i]]);
}

/* Raw bytes over HTTP: each complete line is one message, POSTed where
** §5.2 sends it -- <base>/<method> when it is an object naming a method,
** else <base> (a batch, or a body the server must refuse) -- so the
** stdio checks' frames mean the same over HTTP.  Blank lines carry no
** message. */
static int http_send_raw(rcp_client *c, const char *p, size_t n)
{
    http *h = c->http;
    const char *nl;
    size_t at = 0;
    int rc = 0;
    rcp_buf_put(&h->raw, p, n);
    if (h->raw.oom)
        return -1;
    while (rc == 0 && (nl = memchr(h->raw.data + at, '\n', h->raw.len - at))) {
        const char *line = h->raw.data + at;
        size_t ln = (size_t)(nl - line);
        at += ln + 1;
        if (transport_blank(line, ln))
            continue;
        {
            rcp_arena a;
            rcp_json_err err;
            const rcp_json *j, *m = NULL, *id = NULL;
            char method[256], idtext[64];
            rcp_buf ib;
            rcp_jw w;
            method[0] = idtext[0] = '\0';
            rcp_arena_init(&a, 0);
            j = rcp_json_parse(&a, line, ln, 0, &err);
            if (j && j->type == RCP_JSON_OBJECT) {
                m = rcp_json_get(j, "method");
                id = rcp_json_get(j, "id");
            }
            if (m && m->type == RCP_JSON_STRING && m->n < sizeof method
                && !memchr(m->s, '\0', m->n)) {
                memcpy(method, m->s, m->n);
                method[m->n] = '\0';
            }
            if (id && (id->type == RCP_JSON_STRING
                       || id->type == RCP_JSON_NUMBER)) {
                rcp_buf_init(&ib);
                rcp_jw_init(&w, &ib);
                rcp_jw_value(&w, id);
                if (!ib.oom && ib.len < sizeof idtext) {
                    memcpy(idtext, ib.data, ib.len);
                    idtext[ib.len] = '\0';
                }
                rcp_buf_free(&ib);
            }
            rcp_arena_free(&a);
            rc = http_post(c, method[0] ? method : NULL, line, ln,
                           ++c->next_xid, idtext[0] ? 1 : 0, idtext);
        }
    }
    memmove(h->raw.data, h->raw.data + at, h->raw.len - at);
    h->raw.len -= at;
    return rc;
}

rcp_client *rcp_client_connect(const char *url, const rcp_client_opts *opts,
                               char *err, size_t errlen)
{
    char ebuf[256];
    rcp_client *c;
    http *h;
    struct addrinfo hints;
    int rc;
    if (!err || !errlen)
        err = ebuf, errlen = sizeof ebuf;
    err[0] = '\0';
    if (!url) {
        snprintf(err, errlen, "no URL given");
        return NULL;
    }
    if (!(c = client_alloc(opts)) || !(h = rcp_malloc(sizeof *h))) {
        if (c)
            client_free(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memset(h, 0, sizeof *h);
    rcp_buf_init(&h->headers);
    rcp_buf_init(&h->raw);
    c->http = h;
    if (!(h->conn = rcp_malloc(HTTP_MAX_CONNS * sizeof *h->conn))) {
        snprintf(err, errlen, "out of memory");
        client_free(c);
        return NULL;
    }
    c->opts.headers = NULL;              /* not kept: copied into h */
    h->sse = opts ? opts->sse : 0;
    if (parse_url(h, url, err, errlen) != 0
        || add_headers(h, opts ? opts->headers : NULL, err, errlen) != 0) {
        client_free(c);
        return NULL;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if ((rc = getaddrinfo(h->host, h->port, &hints, &h->ai)) != 0) {
        snprintf(err, errlen, "%s: %s", h->host, gai_strerror(rc));
        h->ai = NULL;
        client_free(c);
        return NULL;
    }
    /* One connection now, so a wrong address is an error here, not a
    ** request that fails later; it stays in the pool. */
    {
        hconn *k = take_conn(c);
        if (!k) {
            snprintf(err, errlen, "cannot connect to %s:%s: %s", h->host,
                     h->port, strerror(errno));
            client_free(c);
            return NULL;
        }
    }
    return c;
}

const char *rcp_client_base(const rcp_client *c)
{
    return c && c->http ? c->http->base : NULL;
}

size_t rcp_client_exchanges(const rcp_client *c)
{
    size_t i, n = 0;
    if (!c || !c->http)
        return 0;
    for (i = 0; i < c->http->nconn; i++)
        n += c->http->conn[i].busy;
    return n;
}

int rcp_client_http(rcp_client *c, const char *verb, const char *path,
                    const char *headers, const void *body, size_t n,
                    int timeout_ms, rcp_http_reply *out)
{
    double end = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    rcp_buf_init(&out->head);
    rcp_buf_init(&out->body);
    if (!c || !c->http || !verb || !path
        || http_start(c, verb, path, headers, body, n, body != NULL, 0, 0,
                      NULL, out) != 0)
        return -1;
    while (!out->done) {
        int left = ms_until(end);
        if (left == 0)
            break;
        http_wait(c, left);
    }
    if (!out->done) {                    /* not in time: give it up */
        size_t i;
        for (i = 0; i < c->http->nconn; i++)
            if (c->http->conn[i].capture == out) {
                c->http->conn[i].capture = NULL;
                c->http->conn[i].busy = 0;
                hconn_close(&c->http->conn[i]);
            }
        return -1;
    }
    return out->status ? 0 : -1;
}

const char *rcp_http_header(const rcp_http_reply *r, const char *name,
                            size_t *n)
{
    const char *p, *e, *nl;
    char low[64];
    size_t i, k = strlen(name);
    if (!r || !r->head.data || k >= sizeof low)
        return NULL;
    for (i = 0; i <= k; i++)
        low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z'
                        ? name[i] - 'A' + 'a' : name[i]);
    p = r->head.data;
    e = p + r->head.len;
    for (p = memchr(p, '\n', (size_t)(e - p)); p && p + 1 < e; p = nl) {
        const char *line = p + 1;
        size_t ln;
        nl = memchr(line, '\n', (size_t)(e - line));
        ln = (size_t)((nl ? nl : e) - line);
        if (ln && line[ln - 1] == '\r')
            ln--;
        if (header_is(line, ln, low)) {
            size_t vn;
            const char *v = header_value(line, ln, &vn);
            if (n)
                *n = vn;
            return v;
        }
        if (!nl)
            break;
    }
    return NULL;
}

void rcp_http_reply_free(rcp_http_reply *r)
{
    if (!r)
        return;
    rcp_buf_free(&r->head);
    rcp_buf_free(&r->body);
    r->status = 0;
}

int rcp_request_http_status(const rcp_request *r)
{
    return r ? r->http_status : 0;
}

static void http_frame(const rcp_client *c, rcp_frame *f)
{
    f->http_status = c->http->cur_status;
    f->http_flags = (c->http->cur_sse ? RCP_FRAME_SSE : 0u)
        | (c->http->cur_standin ? RCP_FRAME_STANDIN : 0u);
}

static int http_cur_status(const rcp_client *c)
{
    return c->http->cur_status;
}

static int http_broken(const rcp_client *c)
{
    return c->http->broken;
}

/* §5.2: "A stateful HTTP server MAY issue a session token in
** initialize.result._meta.session and require it (e.g. header
** RCP-Session) on subsequent requests": an initialize result carrying
** one makes every later request carry it.  Only visible ASCII is taken:
** the token goes into a header line. */
static void http_session(rcp_client *c, const rcp_json *msg)
{
    const rcp_json *res = rcp_json_get(msg, "result"), *meta, *tok;
    size_t i;
    if (!res || res->type != RCP_JSON_OBJECT
        || !rcp_json_get(res, "protocolVersion")
        || !rcp_json_get(res, "capabilities")
        || !(meta = rcp_json_get(res, "_meta"))
        || meta->type != RCP_JSON_OBJECT
        || !(tok = rcp_json_get(meta, "session"))
        || tok->type != RCP_JSON_STRING || tok->n == 0
        || tok->n >= sizeof c->http->session)
        return;
    for (i = 0; i < tok->n; i++)
        if (tok->s[i] <= ' ' || tok->s[i] >= 127)
            return;
    memcpy(c->http->session, tok->s, tok->n);
    c->http->session[tok->n] = '\0';
}

/* The sockets of c's exchanges in flight, for rcp_client_pump_many: at
** most room of them (the others are read at the next pump). */
static nfds_t http_pollfds(const rcp_client *c, struct pollfd *p,
                           nfds_t room)
{
    nfds_t n = 0;
    size_t i;
    for (i = 0; i < c->http->nconn && n < room; i++)
        if (c->http->conn[i].busy && c->http->conn[i].fd >= 0) {
            p[n].fd = c->http->conn[i].fd;
            p[n].events = POLLIN;
            p[n++].revents = 0;
        }
    return n;
}
