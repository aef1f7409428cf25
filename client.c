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
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

struct rcp_client {
    rcp_client_opts    opts;
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
    /* logs */
    rcp_frame         *frames;
    size_t             nframes, frames_cap;
    rcp_arena          logarena;
    rcp_buf            errtext;
    rcp_client_metrics m;
};

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

/* Put one message where it goes: the open batch, or the wire now. */
static int emit(rcp_client *c, rcp_buf *msg)
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
    if (!c || !method || c->in_fd < 0)
        return NULL;
    rcp_buf_init(&key);
    rcp_buf_init(&msg);
    if (fresh_id(c, id, &key) == 0)
        r = request_new(c, id, strlen(id), &key, timeout_ms);
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
        if (emit(c, &msg) != 0) {
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
    rc = emit(c, &msg);
    rcp_buf_free(&msg);
    return rc;
}

int rcp_client_batch_begin(rcp_client *c)
{
    if (!c || c->in_batch)
        return -1;
    c->in_batch = 1;
    c->batch_members = 0;
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
        rcp_buf_puts(&c->batchbuf, "]\n");
        rc = c->batchbuf.oom ? -1
            : send_bytes(c, c->batchbuf.data, c->batchbuf.len);
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
    if (!c->dead || c->err_fd >= 0)
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
    struct pollfd p[2 * PUMP_MANY_MAX];
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
        if (!c->dead)
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
    if (c)
        close_stdin(c);
}

int rcp_client_wait_exit(rcp_client *c, int timeout_ms, int *status)
{
    double end = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    if (!c)
        return 0;
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
    return c ? (long)c->pid : -1;
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
    rcp_jw_obj_end(&w);
}
