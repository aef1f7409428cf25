/*
** federation.c -- §16: rcp as an aggregator over RCP engines.  A second
** backend (proto_backend, rcp.h) beside the built-in one: it reads a
** §16.1 rcp.json registry, starts and initialises every engine, and
** serves retrieve by a concurrent fan-out (§16.2) fused by rank or by
** score (§16.3, rcp_fuse in model.c), and catalog/list (§7.13).
**
** NOTES ON THE DESIGN
**
** An engine is a connection of one of three kinds behind one interface
** (send a request, see whether it answered, cancel it, close):
**   stdio  a child process through client.c's id-correlating client;
**   local  the aggregator's own index (--data/--corpus), an in-process
**          built-in server answered through rcp_server_handle;
**   http   an endpoint (§5.2) through the same client, connected with
**          rcp_client_connect instead of started: from there on it is
**          the same rcp_client (requests paired by id, cancel, close), so
**          the only branch is where the connection is made
**          (engine_spawn).
**
** Invariants:
**   1. The advertised capabilities are fixed when the server is made
**      (§13.2), from the engines that answered initialize then: retrieve
**      is the union (§16.4 "effective"), each request runs against the
**      engines that can serve it (§16.2: the others are skipped, which is
**      not an error, and noted); what every hit must carry (citations,
**      confidence) is the intersection (§16.4 "guaranteed").
**   2. Every downstream request leaves before any answer is awaited, and
**      all are awaited in one poll (rcp_client_pump_many): the query
**      costs the slowest engine, not the sum.
**   3. Downstream deadlines are strictly smaller than ours (§16.2): a
**      reserve (a tenth of what is left, 2..250 ms) is kept for transit
**      and fusion; an engine still silent when the reserve begins is
**      cancelled and dropped.
**   4. A federated request always carries _meta.federation (§16.2): depth
**      decremented, our identity appended; at depth 0, or when our
**      identity is already on the path (a cycle), nothing is forwarded.
**   5. The fused order is a total order independent of arrival order
**      (§16.3): lists are fused in registry order by rcp_fuse, whose
**      sort is the MUST tie-break.
**   6. A rerank is ours, never the engines' (§16.3 "a second-stage
**      rerank over the union"): `rerank` is not forwarded; the top
**      rerank.topN of the fused union go to one reranker -- the own
**      index in-process, else the first engine in registry order that
**      advertises the method -- by a §7.6 rerank call, and the final
**      order is the cascade's RRF of fused rank and rerank rank.  A
**      quarter of the deadline is kept for it; a reranker that fails or
**      runs late leaves the fused order, noted and degraded.
*/
#include "rcp.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FED_MAX_ENGINES   RCP_FUSE_MAX_LISTS
#define FED_DEFAULT_DEPTH 3          /* §16.2 RECOMMENDED */
#define FED_MAX_DEPTH     16
#define FED_MAX_PATH      64
#define FED_START_MS      30000      /* initialize at start-up */
#define FED_BACKOFF_MIN   100        /* reconnect backoff, doubling */
#define FED_BACKOFF_MAX   30000
#define FED_RESERVE_MIN   2.0        /* §16.2 reserve for fusion, ms */
#define FED_RESERVE_MAX   250.0
#define FED_SLICE_MS      20         /* upstream cancel latency while
                                        waiting on the engines */
#define FED_NOTES         64
#define FED_RR_SHARE      0.25       /* of the deadline, kept for the
                                        second-stage rerank */
#define FED_RR_DEFAULT    100        /* rerank.topN when neither it nor
                                        candidateK is sent (§7.7's
                                        max(k, 100)) */
#define FED_ENV_PATH      "RCP_FEDERATION_PATH"
#define LOCAL_ID          "local"

enum { T_STDIO, T_HTTP, T_LOCAL };
enum { E_DEAD, E_STARTING, E_READY };

/* §6.1 retrieve.modes and .fusion as bit masks. */
static const char *const mode_names[] = { "dense", "sparse", "hybrid" };
static const char *const fuse_names[] = { "rrf", "weighted", "convex" };
/* §6 rerank.methods, a mask too. */
static const char *const rr_names[] = { "cross-encoder", "colbert", "llm" };
static const char *const op_names[] = { "eq", "ne", "gt", "gte", "lt", "lte",
    "in", "nin", "contains", "exists" };
#define NOPS 10

typedef struct engine {
    char   *id;                 /* §16.1 registry id */
    int     transport;
    char  **argv;               /* stdio: the command, NULL-terminated */
    char   *url;                /* http */
    double  weight;
    int     required;
    /* the connection */
    int          state;
    rcp_client  *cl;            /* stdio */
    rcp_request *init;          /* its initialize, while E_STARTING */
    rcp_server  *local;         /* local */
    rcp_buf      lout;          /* local: the answer's line */
    rcp_arena    larena;        /* local: its parse */
    double       retry_at;      /* E_DEAD: when to try again */
    int          backoff;
    char         why[200];      /* the last failure */
    /* what its last initialize said (catalog/list, §7.13) */
    char        *info;          /* the result, serialised; NULL: never */
    rcp_arena    iarena;
    const rcp_json *server, *caps;
    /* from caps */
    unsigned long offers;       /* PROTO_CAP mask */
    unsigned      modes, fusions;
    int64_t       maxk;
    int           has_floor;
    double        floor;
    const rcp_json *identity;   /* catalog.identity: another aggregator */
    unsigned      rr_methods;   /* §6 rerank.methods, a mask */
    int64_t       rr_max;       /* rerank.maxCandidates; 0: not said */
    const rcp_json *rr_models;  /* rerank.models, or NULL */
    struct leg     *active;     /* the query's request to it, if any */
    int           down_later;   /* lost while its hits are still read:
                                   engine_down once the answer is out */
    rcp_buf       rout;         /* local: a rerank's answer ... */
    rcp_arena     rarena;       /* ... and its parse (lout holds the
                                   retrieve's hits meanwhile) */
} engine;

enum { L_SKIP, L_SENT, L_DONE, L_FAILED };

/* One engine's part of one federated retrieve. */
typedef struct leg {
    engine      *e;
    int          state;
    rcp_request *r;             /* stdio */
    const rcp_json *res;        /* L_DONE: its result */
    const rcp_json *err;        /* its error response's error, if any */
    int          code;          /* L_FAILED: the code to surface */
    double       progress;
    double       ms;            /* sent -> answered (usage.engines) */
    char         token[24];     /* the downstream progressToken */
    int          keep;          /* the engine's hits are in use: a lost
                                   connection is closed later */
} leg;

typedef struct fed {
    engine *e;
    size_t  n;
    char   *self;               /* our identity on _meta.federation.path */
    int     expose;
    int     in_cycle;           /* start-up: our identity was on the
                                   environment's path (a spawn loop) */
    char   *env_path;           /* what our children inherit */
    /* the merged capabilities, fixed at open (invariant 1) */
    unsigned long offers;
    unsigned      modes, fusions;
    int64_t       maxk;
    int           all_mmr, all_conf, all_det;
    unsigned      rr_methods;   /* the rerankers' methods, united */
    int64_t       rr_max;       /* their smallest maxCandidates; 0: none */
    /* §8 filter: the fields (name, type or NULL) and operators every
    ** retrieving engine advertises */
    char        **fname, **ftype;
    size_t        nfields;
    unsigned      ops;          /* mask over op_names; all: not said */
    int           ops_known;
    const char   *default_mode;
    /* one query */
    rcp_call   *cur;
    struct leg *legs;           /* nlegs of them while it runs */
    size_t      nlegs;
    char      notes[FED_NOTES][160];
    size_t    nnotes;
} fed;

/* MARK: - Small helpers --------------------------------------------------- */

static char *dupn(const char *s, size_t n)
{
    char *d = rcp_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void note(fed *f, const char *fmt, ...)
{
    va_list ap;
    if (f->nnotes == FED_NOTES)
        return;
    va_start(ap, fmt);
    vsnprintf(f->notes[f->nnotes++], sizeof f->notes[0], fmt, ap);
    va_end(ap);
}

static void seterr(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    if (!err || !n)
        return;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

/* proto_pick for an object member's name. */
static int key_pick(const char *k, size_t n, const char *const *names,
                    int nn)
{
    rcp_json v;
    memset(&v, 0, sizeof v);
    v.type = RCP_JSON_STRING;
    v.s = k;
    v.n = n;
    return proto_pick(&v, names, nn);
}

static int str_is(const rcp_json *v, const char *s, size_t n)
{
    return v && v->type == RCP_JSON_STRING && v->n == n
        && memcmp(v->s, s, n) == 0;
}

/* A names list (["dense","hybrid"]) as a mask of indices into names. */
static unsigned name_mask(const rcp_json *arr, const char *const *names,
                          int n)
{
    unsigned m = 0;
    size_t i;
    if (!arr || arr->type != RCP_JSON_ARRAY)
        return 0;
    for (i = 0; i < arr->n; i++) {
        int k = proto_pick(&arr->kids[i], names, n);
        if (k >= 0)
            m |= 1u << k;
    }
    return m;
}

/* The §16.3 dedup key: a string id's bytes, a number's text. */
static const char *id_text(const rcp_json *id, size_t *n)
{
    if (!id || (id->type != RCP_JSON_STRING && id->type != RCP_JSON_NUMBER))
        return NULL;
    *n = id->n;
    return id->s ? id->s : "";
}

/* MARK: - §16.1 The registry --------------------------------------------- */

/* A pointer of the registry: "/engines/2/command". */
static void where(char *out, size_t n, size_t i, const char *member)
{
    if (member)
        snprintf(out, n, "/engines/%lu/%s", (unsigned long)i, member);
    else
        snprintf(out, n, "/engines/%lu", (unsigned long)i);
}

/* Line and column (1-based) of a byte offset, for a parse error. */
static void line_col(const char *t, size_t off, size_t *line, size_t *col)
{
    size_t i;
    *line = *col = 1;
    for (i = 0; i < off; i++) {
        if (t[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static char *read_file(const char *path, size_t *len, char *err,
                       size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, r;
    if (!fp) {
        seterr(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            char *nb = cap > (64u << 20) ? NULL
                : rcp_realloc(buf, cap ? cap * 2 : 4096);
            if (!nb) {
                seterr(err, errlen, "%s: too large or out of memory", path);
                rcp_free(buf);
                fclose(fp);
                return NULL;
            }
            buf = nb;
            cap = cap ? cap * 2 : 4096;
        }
        r = fread(buf + n, 1, cap - n, fp);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(fp)) {
        seterr(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        rcp_free(buf);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    *len = n;
    return buf;
}

/* One engine entry into e; 0, or -1 with "PATH: POINTER: reason". */
static int parse_engine(const char *path, const rcp_json *v, size_t i,
                        engine *e, char *err, size_t errlen)
{
    const rcp_json *id, *tr, *cmd, *url, *wt, *req, *pri;
    char ptr[64];
    size_t k;
    where(ptr, sizeof ptr, i, NULL);
    if (v->type != RCP_JSON_OBJECT) {
        seterr(err, errlen, "%s: %s: an engine must be an object "
               "{\"id\", \"transport\", \"command\" | \"url\"}", path, ptr);
        return -1;
    }
    id = rcp_json_get(v, "id");
    where(ptr, sizeof ptr, i, "id");
    if (!id || id->type != RCP_JSON_STRING || id->n == 0
        || memchr(id->s, '\0', id->n)) {
        seterr(err, errlen, "%s: %s: %s", path, ptr, !id ? "missing: every "
               "engine needs an id (the label its hits are tagged with)"
               : "must be a non-empty string");
        return -1;
    }
    if (!(e->id = dupn(id->s, id->n)))
        goto oom;
    tr = rcp_json_get(v, "transport");
    cmd = rcp_json_get(v, "command");
    url = rcp_json_get(v, "url");
    where(ptr, sizeof ptr, i, "transport");
    if (tr && !rcp_json_streq(tr, "stdio") && !rcp_json_streq(tr, "http")) {
        seterr(err, errlen, "%s: %s: must be \"stdio\" or \"http\"", path,
               ptr);
        return -1;
    }
    /* §16.1 shows transport on every entry; absent, the one member given
    ** (command or url) says which it is */
    if (!tr && !cmd == !url) {
        seterr(err, errlen, "%s: %s: missing, and the entry does not say "
               "by a command or a url alone", path, ptr);
        return -1;
    }
    e->transport = (tr ? rcp_json_streq(tr, "http") : url != NULL)
        ? T_HTTP : T_STDIO;
    if (e->transport == T_STDIO) {
        where(ptr, sizeof ptr, i, "command");
        if (!cmd || cmd->type != RCP_JSON_ARRAY || cmd->n == 0) {
            seterr(err, errlen, "%s: %s: %s", path, ptr, !cmd
                   ? "missing: a stdio engine needs its command, an array "
                     "of strings (argv)"
                   : "must be a non-empty array of strings (argv), e.g. "
                     "[\"rcp\", \"serve\"]");
            return -1;
        }
        if (!(e->argv = rcp_malloc((cmd->n + 1) * sizeof *e->argv)))
            goto oom;
        memset(e->argv, 0, (cmd->n + 1) * sizeof *e->argv);
        for (k = 0; k < cmd->n; k++) {
            const rcp_json *a = &cmd->kids[k];
            if (a->type != RCP_JSON_STRING || memchr(a->s, '\0', a->n)
                || (k == 0 && a->n == 0)) {
                seterr(err, errlen, "%s: /engines/%lu/command/%lu: must be "
                       "a%s string", path, (unsigned long)i,
                       (unsigned long)k, k == 0 ? " non-empty" : "");
                return -1;
            }
            if (!(e->argv[k] = dupn(a->s, a->n)))
                goto oom;
        }
    } else {
        where(ptr, sizeof ptr, i, "url");
        if (!url || url->type != RCP_JSON_STRING || url->n == 0) {
            seterr(err, errlen, "%s: %s: %s", path, ptr, !url
                   ? "missing: an http engine needs its url"
                   : "must be a non-empty string");
            return -1;
        }
        if (!(e->url = dupn(url->s, url->n)))
            goto oom;
    }
    e->weight = 1.0;
    if ((wt = rcp_json_get(v, "weight")) != NULL) {
        where(ptr, sizeof ptr, i, "weight");
        e->weight = rcp_json_num(wt);
        if (wt->type != RCP_JSON_NUMBER || !(e->weight >= 0)
            || e->weight > 1e300) {
            seterr(err, errlen, "%s: %s: must be a finite number >= 0 "
                   "(default 1.0)", path, ptr);
            return -1;
        }
    }
    if ((req = rcp_json_get(v, "required")) != NULL) {
        where(ptr, sizeof ptr, i, "required");
        if (req->type != RCP_JSON_TRUE && req->type != RCP_JSON_FALSE) {
            seterr(err, errlen, "%s: %s: must be true or false (default "
                   "false)", path, ptr);
            return -1;
        }
        e->required = req->type == RCP_JSON_TRUE;
    }
    if ((pri = rcp_json_get(v, "priority")) != NULL) {
        int64_t p;
        where(ptr, sizeof ptr, i, "priority");
        if (!rcp_json_int(pri, &p)) {
            seterr(err, errlen, "%s: %s: must be an integer", path, ptr);
            return -1;
        }
    }
    for (k = 0; k < v->n; k++) {   /* a typo must not pass silently */
        static const char *const known[] = { "id", "transport", "command",
            "url", "weight", "required", "priority" };
        if (key_pick(v->kids[k].key, v->kids[k].keylen, known, 7) < 0)
            fprintf(stderr, "rcp serve: %s: /engines/%lu/%.*s: not a §16.1 "
                    "registry member; ignored\n", path, (unsigned long)i,
                    (int)(v->kids[k].keylen > 64 ? 64 : v->kids[k].keylen),
                    v->kids[k].key);
    }
    return 0;
oom:
    seterr(err, errlen, "%s: out of memory", path);
    return -1;
}

/* §16.1: the file into f's engines (room for one more, the local). */
static int parse_registry(fed *f, const char *path, int with_local,
                          char *err, size_t errlen)
{
    rcp_arena a;
    rcp_json_err je;
    const rcp_json *root, *engines, *self;
    size_t len, i, j, line, col;
    char *text = read_file(path, &len, err, errlen);
    int rc = -1;
    if (!text)
        return -1;
    rcp_arena_init(&a, 0);
    root = rcp_json_parse(&a, text, len, 0, &je);
    if (!root) {
        line_col(text, je.offset, &line, &col);
        seterr(err, errlen, "%s: line %lu, column %lu: not JSON: %s", path,
               (unsigned long)line, (unsigned long)col, je.msg);
        goto out;
    }
    engines = rcp_json_get(root, "engines");
    if (root->type != RCP_JSON_OBJECT) {
        seterr(err, errlen, "%s: /: must be an object {\"engines\": [...]}",
               path);
        goto out;
    }
    if (!engines || engines->type != RCP_JSON_ARRAY) {
        seterr(err, errlen, "%s: /engines: %s", path, engines ? "must be an "
               "array of engines" : "missing: the registry lists its "
               "engines in \"engines\": [...]");
        goto out;
    }
    if (engines->n + (with_local != 0) == 0) {
        seterr(err, errlen, "%s: /engines: empty, and no own index "
               "(--data, --corpus): nothing to federate", path);
        goto out;
    }
    if (engines->n + (with_local != 0) > FED_MAX_ENGINES) {
        seterr(err, errlen, "%s: /engines: %lu engines%s; this build fuses "
               "at most %d", path, (unsigned long)engines->n,
               with_local ? " and the own index" : "", FED_MAX_ENGINES);
        goto out;
    }
    if ((self = rcp_json_get(root, "id")) != NULL) {
        if (self->type != RCP_JSON_STRING || self->n == 0
            || memchr(self->s, '\0', self->n)) {
            seterr(err, errlen, "%s: /id: the aggregator's identity must "
                   "be a non-empty string", path);
            goto out;
        }
        if (!(f->self = dupn(self->s, self->n)))
            goto oom;
    }
    f->e = rcp_malloc((engines->n + 1) * sizeof *f->e);
    if (!f->e)
        goto oom;
    memset(f->e, 0, (engines->n + 1) * sizeof *f->e);
    for (i = 0; i < engines->n; i++) {
        engine *e = &f->e[f->n++];
        rcp_buf_init(&e->lout);
        rcp_buf_init(&e->rout);
        rcp_arena_init(&e->larena, 0);
        rcp_arena_init(&e->rarena, 0);
        rcp_arena_init(&e->iarena, 0);
        if (parse_engine(path, &engines->kids[i], i, e, err, errlen))
            goto out;
        for (j = 0; j < i; j++)
            if (strcmp(f->e[j].id, e->id) == 0) {
                seterr(err, errlen, "%s: /engines/%lu/id: \"%s\" again (it "
                       "is /engines/%lu/id's): ids tag hits, so they must "
                       "differ", path, (unsigned long)i, e->id,
                       (unsigned long)j);
                goto out;
            }
        if (with_local && strcmp(e->id, LOCAL_ID) == 0) {
            seterr(err, errlen, "%s: /engines/%lu/id: \"" LOCAL_ID "\" "
                   "names the aggregator's own index (--data, --corpus)",
                   path, (unsigned long)i);
            goto out;
        }
    }
    rc = 0;
    goto out;
oom:
    seterr(err, errlen, "%s: out of memory", path);
out:
    rcp_arena_free(&a);
    rcp_free(text);
    return rc;
}

/* Our identity on the path (§16.2 "its own identity"): the registry's
** "id", else one derived from the host and the registry's real path --
** stable across restarts, the same for two aggregators started from one
** registry (which is exactly a cycle), different otherwise. */
static int derive_identity(fed *f, const char *path)
{
    char host[256], cwd[PATH_MAX], real[PATH_MAX + 256], buf[48];
    uint64_t h = 14695981039346656037ull;
    const char *p;
    if (f->self)
        return 0;
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "localhost");
    host[sizeof host - 1] = '\0';
    /* the absolute path (realpath is XSI, not POSIX.1 base) */
    if (path[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(real, sizeof real, "%s/%s", cwd, path);
    else
        snprintf(real, sizeof real, "%s", path);
    for (p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ '\n') * 1099511628211ull;
    for (p = real; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    snprintf(buf, sizeof buf, "rcp-%016llx", (unsigned long long)h);
    return (f->self = dupn(buf, strlen(buf))) ? 0 : -1;
}

/* MARK: - Engines: connect, initialize, reconnect ------------------------ */

static void on_notify(void *ud, const rcp_json *msg);

static const char init_params[] =
    "{\"protocolVersion\":1,\"client\":{\"name\":\"rcp-federation\","
    "\"version\":\"" RCP_VERSION "\"}}";

static void engine_fail(engine *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->why, sizeof e->why, fmt, ap);
    va_end(ap);
}

/* Down: close what is left and try again after the backoff. */
static void engine_down(engine *e)
{
    if (e->active) {                /* its request goes with the client */
        e->active->r = NULL;
        if (e->active->state == L_SENT) {
            e->active->state = L_FAILED;
            e->active->code = RCP_BACKEND_UNAVAILABLE;
        }
        e->active = NULL;
    }
    if (e->cl) {
        rcp_client_close(e->cl, 0);
        e->cl = NULL;
    }
    e->init = NULL;                     /* freed by the close */
    e->state = E_DEAD;
    e->backoff = e->backoff ? e->backoff * 2 : FED_BACKOFF_MIN;
    if (e->backoff > FED_BACKOFF_MAX)
        e->backoff = FED_BACKOFF_MAX;
    e->retry_at = proto_now_ms() + e->backoff;
}

/* What its initialize said: kept (a copy, in its own arena) for the
** capability merge and catalog/list; the first one fixes what we
** advertise, a later one updates what we route on. */
static int engine_learn(engine *e, const rcp_json *res)
{
    rcp_buf b;
    rcp_jw w;
    rcp_json_err je;
    const rcp_json *root, *ret, *floor, *mk, *cat, *rr;
    int64_t k;
    size_t i;
    if (!res || res->type != RCP_JSON_OBJECT) {
        engine_fail(e, "initialize answered no result object");
        return -1;
    }
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_value(&w, res);
    if (b.oom) {
        rcp_buf_free(&b);
        engine_fail(e, "out of memory");
        return -1;
    }
    rcp_arena_reset(&e->iarena);
    rcp_free(e->info);
    e->info = b.data;               /* the tree points into it */
    root = rcp_json_parse(&e->iarena, b.data, b.len, 0, &je);
    if (!root) {
        e->info = NULL;
        rcp_free(b.data);
        engine_fail(e, "out of memory");
        return -1;
    }
    e->server = rcp_json_get(root, "server");
    e->caps = rcp_json_get(root, "capabilities");
    e->offers = 0;
    if (e->caps && e->caps->type == RCP_JSON_OBJECT)
        for (i = 0; i < e->caps->n; i++) {
            static const char *const keys[] = { "embed", "sparseEmbed",
                "multiVector", "rerank", "retrieve", "filter", "citations",
                "streaming", "pagination", "index", "transform", "graph",
                "session", "feedback", "memory", "log", "catalog" };
            int c = key_pick(e->caps->kids[i].key, e->caps->kids[i].keylen,
                             keys, (int)(sizeof keys / sizeof *keys));
            if (c >= 0)
                e->offers |= PROTO_CAP(c);
        }
    ret = rcp_json_get(e->caps, "retrieve");
    e->modes = name_mask(rcp_json_get(ret, "modes"), mode_names, 3);
    if (ret && !rcp_json_get(ret, "modes"))
        e->modes = 7;           /* not said: it takes whatever it takes */
    e->fusions = name_mask(rcp_json_get(ret, "fusion"), fuse_names, 3);
    mk = rcp_json_get(ret, "maxK");
    e->maxk = mk && rcp_json_int(mk, &k) && k > 0 ? k : 0;
    floor = rcp_json_get(ret, "scoreFloor");
    e->has_floor = floor && floor->type == RCP_JSON_NUMBER;
    e->floor = e->has_floor ? rcp_json_num(floor) : 0;
    cat = rcp_json_get(e->caps, "catalog");
    e->identity = rcp_json_get(cat, "identity");
    rr = rcp_json_get(e->caps, "rerank");
    e->rr_methods = name_mask(rcp_json_get(rr, "methods"), rr_names, 3);
    mk = rcp_json_get(rr, "maxCandidates");
    e->rr_max = mk && rcp_json_int(mk, &k) && k > 0 ? k : 0;
    e->rr_models = rcp_json_get(rr, "models");
    if (!rr || !(e->offers & PROTO_CAP(PROTO_CAP_RERANK)))
        e->rr_methods = 0;
    e->state = E_READY;
    e->backoff = 0;
    e->why[0] = '\0';
    return 0;
}

/* Start a stdio engine (or connect to an http one) and send its
** initialize; its answer is awaited with everything else
** (engine_poll_init). */
static void engine_spawn(fed *f, engine *e)
{
    rcp_client_opts o;
    char err[160];
    memset(&o, 0, sizeof o);
    o.err = RCP_STDERR_INHERIT;         /* an operator sees the engine's */
    o.on_notify = on_notify;            /* §9 progress, relayed */
    o.ud = f;
    if (e->transport == T_HTTP) {
        /* No process is started, so no start-up cycle can come of it: a
        ** loop through HTTP engines is caught per query by
        ** _meta.federation's path (§16.2). */
        e->cl = rcp_client_connect(e->url, &o, err, sizeof err);
        if (!e->cl) {
            engine_fail(e, "cannot connect to %s: %s", e->url, err);
            engine_down(e);
            return;
        }
    } else if (f->in_cycle) {
        engine_fail(e, "not started: this aggregator (%s) is already on the "
                    "start-up path (" FED_ENV_PATH "), a registry cycle",
                    f->self);
        e->state = E_DEAD;
        e->retry_at = 1e300;
        return;
    }
    if (e->transport != T_HTTP) {
        e->cl = rcp_client_spawn(e->argv, &o, err, sizeof err);
        if (!e->cl) {
            engine_fail(e, "cannot start %s: %s", e->argv[0], err);
            engine_down(e);
            return;
        }
    }
    e->init = rcp_client_request(e->cl, "initialize", init_params, 0);
    if (!e->init) {
        engine_fail(e, "exited before initialize");
        engine_down(e);
        return;
    }
    e->state = E_STARTING;
}

/* A stdio engine's initialize, if it has answered. */
static void engine_poll_init(engine *e)
{
    const rcp_json *res;
    int code;
    rcp_request_state st;
    if (e->state != E_STARTING)
        return;
    st = rcp_request_state_get(e->init);
    if (st == RCP_REQ_PENDING)
        return;
    res = rcp_request_result(e->init);
    if (st != RCP_REQ_DONE || rcp_request_error(e->init, &code) || !res) {
        if (st == RCP_REQ_DONE && rcp_request_error(e->init, &code))
            engine_fail(e, "initialize failed with %d", code);
        else
            engine_fail(e, "exited before answering initialize");
        engine_down(e);
        return;
    }
    if (engine_learn(e, res) != 0) {
        engine_down(e);
        return;
    }
    rcp_request_free(e->cl, e->init);
    e->init = NULL;
}

/* The own index: a built-in server in-process, initialised now. */
static int engine_local(engine *e, const rcp_server_opts *o, char *err,
                        size_t errlen)
{
    static const char frame[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":1}}";
    rcp_server_opts lo = *o;
    rcp_json_err je;
    const rcp_json *r;
    lo.deadline_ms = 0;                 /* only the forwarded deadline */
    lo.debug = 0;
    e->transport = T_LOCAL;
    e->weight = 1.0;
    if (!(e->id = dupn(LOCAL_ID, strlen(LOCAL_ID)))
        || !(e->local = rcp_server_new(&lo))) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    rcp_server_handle(e->local, frame, sizeof frame - 1, &e->lout);
    r = e->lout.oom ? NULL : rcp_json_parse(&e->larena, e->lout.data,
                                            e->lout.len, 0, &je);
    if (!r || engine_learn(e, rcp_json_get(r, "result")) != 0) {
        seterr(err, errlen, "the own index: %s", e->why[0] ? e->why
               : "out of memory");
        return -1;
    }
    return 0;
}

static void engine_close(engine *e)
{
    size_t i;
    if (e->cl)
        rcp_client_close(e->cl, 2000);
    rcp_server_free(e->local);
    rcp_buf_free(&e->lout);
    rcp_buf_free(&e->rout);
    rcp_arena_free(&e->larena);
    rcp_arena_free(&e->rarena);
    rcp_arena_free(&e->iarena);
    rcp_free(e->info);
    for (i = 0; e->argv && e->argv[i]; i++)
        rcp_free(e->argv[i]);
    rcp_free(e->argv);
    rcp_free(e->url);
    rcp_free(e->id);
}

/* Pump every stdio engine at once for up to ms. */
static void pump_all(fed *f, int ms)
{
    rcp_client *cs[FED_MAX_ENGINES];
    size_t i;
    for (i = 0; i < f->n; i++)
        cs[i] = f->e[i].cl;
    rcp_client_pump_many(cs, f->n, ms);
    for (i = 0; i < f->n; i++)
        engine_poll_init(&f->e[i]);
}

/* MARK: - §16.2 The start-up path (a registry cycle among stdio engines) */

/* An aggregator starts its engines, so A listing B listing A would spawn
** without end before any request carried _meta.federation.  Children
** inherit the identities of the aggregators above them in
** RCP_FEDERATION_PATH (a JSON array); one that finds its own there
** starts no engine (§16.2's cycle rule, applied to start-up). */
static int startup_path(fed *f)
{
    const char *env = getenv(FED_ENV_PATH);
    rcp_arena a;
    rcp_buf b;
    rcp_jw w;
    rcp_json_err je;
    const rcp_json *p = NULL;
    size_t i;
    rcp_arena_init(&a, 0);
    if (env)
        p = rcp_json_parse(&a, env, strlen(env), 0, &je);
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_arr(&w);
    for (i = 0; p && p->type == RCP_JSON_ARRAY && i < p->n; i++) {
        if (str_is(&p->kids[i], f->self, strlen(f->self)))
            f->in_cycle = 1;
        rcp_jw_value(&w, &p->kids[i]);
    }
    rcp_jw_cstr(&w, f->self);
    rcp_jw_arr_end(&w);
    rcp_buf_putc(&b, '\0');
    rcp_arena_free(&a);
    if (b.oom)
        return -1;
    f->env_path = b.data;
    return setenv(FED_ENV_PATH, f->env_path, 1);
}

/* MARK: - §16.4 Federated capabilities ----------------------------------- */

/* filter.fields of an engine: 1 and *type (NULL: not said) when it
** advertises name. */
static int has_field(const rcp_json *fields, const char *name,
                     const rcp_json **type)
{
    size_t i, n = strlen(name);
    *type = NULL;
    if (fields && fields->type == RCP_JSON_OBJECT) {
        for (i = 0; i < fields->n; i++)
            if (fields->kids[i].keylen == n
                && !memcmp(fields->kids[i].key, name, n)) {
                *type = &fields->kids[i];
                return 1;
            }
    } else if (fields && fields->type == RCP_JSON_ARRAY) {
        for (i = 0; i < fields->n; i++)
            if (str_is(&fields->kids[i], name, n))
                return 1;
    }
    return 0;
}

/* §16.4 "guaranteed": a field is filterable across the federation only
** when every retrieving engine declares it (with one type), so a filter
** is never honoured by some engines and refused or ignored by others.
** 0, or -1 out of memory. */
static int merge_filter(fed *f)
{
    const rcp_json *first = NULL;
    size_t i, j, nret = 0;
    f->ops = (1u << NOPS) - 1;
    f->ops_known = 1;
    for (i = 0; i < f->n; i++) {
        const engine *e = &f->e[i];
        const rcp_json *flt, *ops;
        if (!e->info || !(e->offers & PROTO_CAP(PROTO_CAP_RETRIEVE)))
            continue;
        nret++;
        if (!(e->offers & PROTO_CAP(PROTO_CAP_FILTER)))
            return 0;
        flt = rcp_json_get(e->caps, "filter");
        if (!first)
            first = rcp_json_get(flt, "fields");
        ops = rcp_json_get(flt, "operators");
        if (ops && ops->type == RCP_JSON_ARRAY)
            f->ops &= name_mask(ops, op_names, NOPS);
        else
            f->ops_known = 0;
    }
    if (!nret || !first || (first->type != RCP_JSON_OBJECT
                            && first->type != RCP_JSON_ARRAY))
        return 0;
    f->fname = rcp_malloc((first->n + 1) * sizeof *f->fname);
    f->ftype = rcp_malloc((first->n + 1) * sizeof *f->ftype);
    if (!f->fname || !f->ftype)
        return -1;
    for (j = 0; j < first->n; j++) {
        const rcp_json *nm = first->type == RCP_JSON_OBJECT ? NULL
            : &first->kids[j], *ty = NULL, *t2;
        char name[128];
        int ok = 1;
        if (nm && nm->type != RCP_JSON_STRING)
            continue;
        snprintf(name, sizeof name, "%.*s", nm ? (int)nm->n
                 : (int)first->kids[j].keylen, nm ? nm->s
                 : first->kids[j].key);
        for (i = 0; ok && i < f->n; i++) {
            const engine *e = &f->e[i];
            if (!e->info || !(e->offers & PROTO_CAP(PROTO_CAP_RETRIEVE)))
                continue;
            ok = has_field(rcp_json_get(rcp_json_get(e->caps, "filter"),
                                        "fields"), name, &t2);
            if (ok && t2 && t2->type == RCP_JSON_STRING) {
                if (ty && !(ty->n == t2->n && !memcmp(ty->s, t2->s, t2->n)))
                    ok = 0;         /* one name, two types: not one field */
                ty = t2;
            }
        }
        if (!ok)
            continue;
        f->fname[f->nfields] = dupn(name, strlen(name));
        f->ftype[f->nfields] = ty ? dupn(ty->s, ty->n) : NULL;
        if (!f->fname[f->nfields] || (ty && !f->ftype[f->nfields]))
            return -1;
        f->nfields++;
    }
    if (f->nfields)
        f->offers |= PROTO_CAP(PROTO_CAP_FILTER);
    return 0;
}

static void write_filter_cap(const fed *f, rcp_jw *w)
{
    size_t i;
    int typed = 1;
    for (i = 0; i < f->nfields; i++)
        typed &= f->ftype[i] != NULL;
    rcp_jw_key(w, "fields");
    if (typed) {
        rcp_jw_obj(w);
        for (i = 0; i < f->nfields; i++) {
            rcp_jw_key(w, f->fname[i]);
            rcp_jw_cstr(w, f->ftype[i]);
        }
        rcp_jw_obj_end(w);
    } else {
        rcp_jw_arr(w);
        for (i = 0; i < f->nfields; i++)
            rcp_jw_cstr(w, f->fname[i]);
        rcp_jw_arr_end(w);
    }
    if (f->ops_known)
        proto_write_names(w, "operators", op_names, NOPS, f->ops);
}

/* §8 "MUST reject filters referencing unadvertised fields with -32602"
** and an operator outside filter.operators with -32005: checked against
** the federation's own (intersected) lists; the engines judge the rest
** (value types), and their refusal surfaces (refused). */
static int check_filter(const fed *f, rcp_call *c, const rcp_json *n,
                        unsigned depth)
{
    const rcp_json *fld, *op;
    size_t i;
    int rc;
    if (!n || depth > 64)
        return 0;
    if (n->type == RCP_JSON_ARRAY) {
        for (i = 0; i < n->n; i++)
            if ((rc = check_filter(f, c, &n->kids[i], depth + 1)))
                return rc;
        return 0;
    }
    if (n->type != RCP_JSON_OBJECT)
        return 0;
    if ((fld = rcp_json_get(n, "field")) != NULL) {
        for (i = 0; i < f->nfields; i++)
            if (str_is(fld, f->fname[i], strlen(f->fname[i])))
                break;
        if (i == f->nfields)
            return call_fail(c, RCP_INVALID_PARAMS, "filter", NULL,
                             "field '%.*s' is not filterable on every engine "
                             "of this federation (filter.fields)",
                             fld->type == RCP_JSON_STRING
                             ? (int)(fld->n > 64 ? 64 : fld->n) : 0,
                             fld->type == RCP_JSON_STRING ? fld->s : "");
        op = rcp_json_get(n, "op");
        if (f->ops_known && op && proto_pick(op, op_names, NOPS) >= 0
            && !(f->ops & (1u << proto_pick(op, op_names, NOPS))))
            return call_fail(c, RCP_OPTION_UNSUPPORTED, "filter", "filter.op",
                             "operator '%.*s' is not in filter.operators "
                             "of every engine", (int)op->n, op->s);
        return 0;
    }
    for (i = 0; i < n->n; i++)
        if ((rc = check_filter(f, c, &n->kids[i], depth + 1)))
            return rc;
    return 0;
}

/* Invariant 6: the rerankers (the own index and every engine with a
** §7.6 rerank) are what the second stage and the rerank method route
** to, so their methods are united (each request goes to one that has
** its method) and the limit is the smallest maxCandidates said. */
static void merge_rerankers(fed *f)
{
    size_t i;
    for (i = 0; i < f->n; i++) {
        const engine *e = &f->e[i];
        if (!e->info || !e->rr_methods)
            continue;
        f->rr_methods |= e->rr_methods;
        if (e->rr_max && (!f->rr_max || e->rr_max < f->rr_max))
            f->rr_max = e->rr_max;
    }
    if (f->rr_methods && (f->offers & PROTO_CAP(PROTO_CAP_RETRIEVE)))
        f->offers |= PROTO_CAP(PROTO_CAP_RERANK);
}

/* Invariant 1: union for what routes (retrieve and its modes, fusion
** methods, maxK), intersection for what every hit must carry. */
static void merge_caps(fed *f)
{
    size_t i, nret = 0;
    int mixed_default = 0, k;
    unsigned long all = ~0ul;
    f->all_mmr = f->all_conf = f->all_det = 1;
    for (i = 0; i < f->n; i++) {
        const engine *e = &f->e[i];
        const rcp_json *ret, *dm;
        if (!e->info || !(e->offers & PROTO_CAP(PROTO_CAP_RETRIEVE)))
            continue;
        ret = rcp_json_get(e->caps, "retrieve");
        nret++;
        all &= e->offers;
        f->modes |= e->modes;
        f->fusions |= e->fusions;
        if ((e->maxk ? e->maxk : 1000) > f->maxk)
            f->maxk = e->maxk ? e->maxk : 1000;   /* not said: §6.1 */
        f->all_mmr &= rcp_json_get(ret, "mmr")
            && rcp_json_get(ret, "mmr")->type == RCP_JSON_TRUE;
        f->all_conf &= rcp_json_get(ret, "confidence")
            && rcp_json_get(ret, "confidence")->type == RCP_JSON_TRUE;
        f->all_det &= rcp_json_get(ret, "deterministic")
            && rcp_json_get(ret, "deterministic")->type == RCP_JSON_TRUE;
        /* one defaultMode is advertised only when all share it */
        dm = rcp_json_get(ret, "defaultMode");
        k = proto_pick(dm, mode_names, 3);
        if (nret == 1 && k >= 0)
            f->default_mode = mode_names[k];
        else if (k < 0 || !f->default_mode
                 || strcmp(f->default_mode, mode_names[k]) != 0)
            mixed_default = 1;
    }
    if (mixed_default)
        f->default_mode = NULL;
    f->offers = PROTO_CAP(PROTO_CAP_CATALOG);
    if (!nret && f->in_cycle) {
        /* a start-up cycle: it answers, from nothing, with the note */
        f->modes = 7;
        f->maxk = 1000;
        f->all_mmr = f->all_conf = f->all_det = 0;
        all = 0;
        nret = 1;
    }
    if (nret) {
        f->offers |= PROTO_CAP(PROTO_CAP_RETRIEVE)
            | PROTO_CAP(PROTO_CAP_STREAMING);
        if (all & PROTO_CAP(PROTO_CAP_CITATIONS))
            f->offers |= PROTO_CAP(PROTO_CAP_CITATIONS);
    }
    merge_rerankers(f);
}

static unsigned long fed_offers(const void *ud)
{
    return ((const fed *)ud)->offers;
}

/* §14.2: retrieve counts whole only when the union has the three modes. */
static unsigned long fed_partial(const void *ud)
{
    const fed *f = ud;
    return f->modes == 7 ? 0 : PROTO_CAP(PROTO_CAP_RETRIEVE);
}

static void write_bool_key(rcp_jw *w, const char *k, int v)
{
    rcp_jw_key(w, k);
    rcp_jw_bool(w, v);
}

/* 1 when arr (an array, or NULL) holds the string s. */
static int holds(const rcp_json *arr, const rcp_json *s)
{
    size_t i;
    for (i = 0; arr && arr->type == RCP_JSON_ARRAY && i < arr->n; i++)
        if (s && s->type == RCP_JSON_STRING && str_is(&arr->kids[i], s->s,
                                                      s->n))
            return 1;
    return 0;
}

/* §6 rerank {methods, maxCandidates?, models?}: the rerankers' methods
** and models united, the smallest maxCandidates (invariant 6). */
static void write_rerank_cap(const fed *f, rcp_jw *w)
{
    size_t i, j, k;
    int any = 0;
    proto_write_names(w, "methods", rr_names, 3, f->rr_methods);
    if (f->rr_max) {
        rcp_jw_key(w, "maxCandidates");
        rcp_jw_int(w, f->rr_max);
    }
    for (i = 0; i < f->n; i++) {
        const rcp_json *ms = f->e[i].info && f->e[i].rr_methods
            ? f->e[i].rr_models : NULL;
        for (j = 0; ms && ms->type == RCP_JSON_ARRAY && j < ms->n; j++) {
            int seen = ms->kids[j].type != RCP_JSON_STRING;
            for (k = 0; !seen && k < i; k++)
                seen = f->e[k].info && f->e[k].rr_methods
                    && holds(f->e[k].rr_models, &ms->kids[j]);
            for (k = 0; !seen && k < j; k++)
                seen = str_is(&ms->kids[k], ms->kids[j].s, ms->kids[j].n);
            if (seen)
                continue;
            if (!any++) {
                rcp_jw_key(w, "models");
                rcp_jw_arr(w);
            }
            rcp_jw_value(w, &ms->kids[j]);
        }
    }
    if (any)
        rcp_jw_arr_end(w);
}

static void fed_describe(const void *ud, int cap, rcp_jw *w)
{
    const fed *f = ud;
    rcp_jw_obj(w);
    if (cap == PROTO_CAP_RETRIEVE) {
        rcp_jw_key(w, "maxK");
        rcp_jw_int(w, f->maxk);
        proto_write_names(w, "modes", mode_names, 3, f->modes);
        if (f->default_mode) {
            rcp_jw_key(w, "defaultMode");
            rcp_jw_cstr(w, f->default_mode);
        }
        if (f->fusions)
            proto_write_names(w, "fusion", fuse_names, 3, f->fusions);
        write_bool_key(w, "mmr", f->all_mmr);
        write_bool_key(w, "rerankBuiltin", f->rr_methods != 0);
        write_bool_key(w, "confidence", f->all_conf);
        write_bool_key(w, "deterministic", f->all_det);
        rcp_jw_key(w, "scoreScale");
        rcp_jw_cstr(w, "unbounded");
        /* RRF, min-max and floor-anchored sums are all >= 0 */
        rcp_jw_key(w, "scoreFloor");
        rcp_jw_double(w, 0.0);
    } else if (cap == PROTO_CAP_RERANK) {
        write_rerank_cap(f, w);
    } else if (cap == PROTO_CAP_FILTER) {
        write_filter_cap(f, w);
    } else if (cap == PROTO_CAP_CATALOG) {
        rcp_jw_key(w, "engines");
        rcp_jw_int(w, (int64_t)f->n);
        /* §6.2 an informational field: what an upstream aggregator
        ** compares with its path to skip us in a cycle (§16.2) */
        rcp_jw_key(w, "identity");
        rcp_jw_cstr(w, f->self);
    }
    rcp_jw_obj_end(w);
}

/* MARK: - §7.13 catalog/list --------------------------------------------- */

static void write_endpoint(rcp_jw *w, const engine *e)
{
    size_t i;
    rcp_jw_key(w, "endpoint");
    rcp_jw_obj(w);
    rcp_jw_key(w, "transport");
    rcp_jw_cstr(w, e->transport == T_HTTP ? "http" : "stdio");
    if (e->transport == T_HTTP) {
        rcp_jw_key(w, "url");
        rcp_jw_cstr(w, e->url);
    } else {
        rcp_jw_key(w, "command");
        rcp_jw_arr(w);
        for (i = 0; e->argv[i]; i++)
            rcp_jw_cstr(w, e->argv[i]);
        rcp_jw_arr_end(w);
    }
    rcp_jw_obj_end(w);
}

/* Each engine that has ever answered initialize, as it answered; an
** engine never reached has no identity to give and is not listed. */
static int m_catalog_list(void *ud, rcp_call *c)
{
    fed *f = ud;
    rcp_jw *w = call_w(c);
    size_t i;
    rcp_jw_obj(w);
    rcp_jw_key(w, "engines");
    rcp_jw_arr(w);
    for (i = 0; i < f->n; i++) {
        const engine *e = &f->e[i];
        if (!e->info)
            continue;
        rcp_jw_obj(w);
        rcp_jw_key(w, "id");
        rcp_jw_cstr(w, e->id);
        rcp_jw_key(w, "server");
        if (e->server)
            rcp_jw_value(w, e->server);
        else
            rcp_jw_raw(w, "{\"name\":\"unknown\"}", 18);
        rcp_jw_key(w, "capabilities");
        if (e->caps)
            rcp_jw_value(w, e->caps);
        else
            rcp_jw_raw(w, "{}", 2);
        if (f->expose && e->transport != T_LOCAL)
            write_endpoint(w, e);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    return 0;
}

/* MARK: - §16.2 Fan-out ---------------------------------------------------- */


/* What the request asks of the federation. */
typedef struct fq {
    int64_t k, ask;             /* k, and the headroom asked of each */
    int     mode;               /* -1: each engine's default */
    int     fuse;               /* -1: each engine's default */
    int     method;             /* RCP_FUSE_* across engines */
    double  rrf_k;
    int64_t depth;
    const rcp_json *path;       /* array or NULL */
    const rcp_json *fusion;     /* _meta.federation.fusion, forwarded */
    double  fwd_ms;             /* deadlineMs forwarded; < 0: none */
    double  wait_until;         /* monotonic: stop waiting for engines */
    const rcp_json *token;      /* upstream progressToken */
    int64_t ck;                 /* candidateK as sent, clamped; 0: none */
    /* the second stage (invariant 6); rr NULL: none */
    engine *rr;
    int     rr_method;          /* index into rr_names; -1: its default */
    const rcp_json *rr_model;
    int64_t rr_top;             /* rerank.topN, clamped */
    int     drop_text;          /* includeText false: text only for us */
} fq;

/* §7.7 options a federation does not offer (README Decisions): a
** federated cursor, a token budget over the fused list, a pinned index
** version.  Refused under strict, else dropped with a note -- never
** forwarded, where each engine would honour it for its own list only. */
static const char *const not_offered[] = { "cursor", "tokenBudget",
                                           "indexVersion" };
#define NNOT_OFFERED 3

static int check_not_offered(rcp_call *c, const rcp_json *p)
{
    size_t i;
    int strict, rc;
    if ((rc = call_bool(c, p, "strict", 1, &strict)))
        return rc;
    for (i = 0; i < NNOT_OFFERED; i++)
        if (proto_get(p, not_offered[i])
            && (rc = call_unsupported(c, strict, not_offered[i],
                                      "not offered by this federation")))
            return rc;
    return 0;
}

static int on_path(const rcp_json *path, const char *s, size_t n)
{
    size_t i;
    for (i = 0; path && i < path->n; i++)
        if (str_is(&path->kids[i], s, n))
            return 1;
    return 0;
}

/* §16.2 "MUST NOT forward to that engine": an aggregator whose identity
** is already on the path, or is ours. */
static int looped(const fed *f, const fq *q, const engine *e)
{
    return e->identity && e->identity->type == RCP_JSON_STRING
        && (on_path(q->path, e->identity->s, e->identity->n)
            || str_is(e->identity, f->self, strlen(f->self)));
}

/* _meta.federation {depth, path, fusion {method, rrfK}}: -32602 when it
** is not that shape. */
static int read_federation(rcp_call *c, fq *q)
{
    static const char *const methods[] = { "rrf", "weighted", "convex" };
    const rcp_json *meta = proto_get(call_params(c), "_meta"), *fm;
    size_t i;
    int rc;
    q->depth = FED_DEFAULT_DEPTH;
    q->method = RCP_FUSE_RRF;
    q->rrf_k = 60;
    fm = meta ? proto_get(meta, "federation") : NULL;
    if (!fm)
        return 0;
    if (fm->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, "_meta.federation", NULL,
                         "_meta.federation must be an object {depth, path}");
    if ((rc = call_int(c, fm, "_meta.federation.depth", 0, FED_MAX_DEPTH,
                       FED_DEFAULT_DEPTH, &q->depth)))
        return rc;
    q->path = proto_get(fm, "path");
    if (q->path && (q->path->type != RCP_JSON_ARRAY
                    || q->path->n > FED_MAX_PATH))
        return call_fail(c, RCP_INVALID_PARAMS, "_meta.federation.path",
                         NULL, "path must be an array of at most %d "
                         "identities", FED_MAX_PATH);
    for (i = 0; q->path && i < q->path->n; i++)
        if (q->path->kids[i].type != RCP_JSON_STRING)
            return call_fail(c, RCP_INVALID_PARAMS, "_meta.federation.path",
                             NULL, "path holds identities (strings)");
    if ((rc = call_obj(c, fm, "_meta.federation.fusion", &q->fusion))
        || !q->fusion)
        return rc;
    if ((rc = call_enum(c, q->fusion, "_meta.federation.fusion.method",
                        methods, 3, 1, &q->method)))
        return rc;
    if (!proto_get(q->fusion, "method"))
        q->method = RCP_FUSE_RRF;
    return call_num(c, q->fusion, "_meta.federation.fusion.rrfK", 0, 1e9,
                    60, &q->rrf_k);
}

/* §16.2 budget propagation for one request downstream: of what is left
** until `until`, a reserve of a tenth (2..250 ms) is kept; the engine
** gets floor(left - reserve) as its deadlineMs (strictly smaller), and
** is awaited until half the reserve is left -- the answer is in transit
** for a while, and the other half is for our own work (fusion, the
** answer).  -1 when less than 1 ms would be left to forward. */
static int budget(double until, double now, double *fwd, double *wait_until)
{
    double left = until - now, reserve = left / 10;
    reserve = reserve < FED_RESERVE_MIN ? FED_RESERVE_MIN
        : reserve > FED_RESERVE_MAX ? FED_RESERVE_MAX : reserve;
    *fwd = floor(left - reserve);
    *wait_until = now + *fwd + reserve / 2;
    return *fwd < 1 ? -1 : 0;
}

/* MARK: - §16.3 The second stage: which reranker, how many ------------- */

/* §16.3 "a second-stage cross-encoder rerank over the union ... when one
** engine offers rerank": the reranker for method (-1: any) and model
** (NULL: any) -- the own index first (in-process, no transit), then the
** registry's order, so the choice is deterministic.  An engine down and
** not yet due for a retry, or an aggregator on the path, is passed over;
** at depth 0 or in a cycle only the own index may serve (§16.2). */
static engine *pick_reranker(fed *f, const fq *q, int method,
                             const rcp_json *model)
{
    int cut = q->depth == 0 || f->in_cycle
        || on_path(q->path, f->self, strlen(f->self));
    double now = proto_now_ms();
    size_t pass, i;
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < f->n; i++) {
            engine *e = &f->e[i];
            if ((e->transport == T_LOCAL) != (pass == 0) || !e->info
                || !(method >= 0 ? e->rr_methods & (1u << method)
                     : e->rr_methods)
                || (model && !holds(e->rr_models, model)))
                continue;
            if (e->transport != T_LOCAL
                && (cut || looped(f, q, e)
                    || (e->state == E_DEAD && now < e->retry_at)))
                continue;
            return e;
        }
    return NULL;
}

/* 1 when a reranker advertised model in its rerank.models (§6). */
static int model_offered(const fed *f, const rcp_json *model)
{
    size_t i;
    for (i = 0; i < f->n; i++)
        if (f->e[i].info && f->e[i].rr_methods
            && holds(f->e[i].rr_models, model))
            return 1;
    return 0;
}

/* §3.3, §7.7 the funnel candidateK >= rerank.topN >= k, judged on the
** values as sent (-32602 naming the knob that is too small, as the
** built-in backend does), then clamped: candidateK and topN to maxK,
** topN to the reranker's maxCandidates, and topN raised to k (unless
** maxCandidates is below k). */
static int read_funnel(fed *f, rcp_call *c, fq *q, const rcp_json *rr,
                       int64_t *top)
{
    const rcp_json *p = call_params(c);
    int64_t k, ck, def;
    int rc;
    if ((rc = call_int(c, p, "k", 1, (int64_t)RCP_INT53_MAX, 10, &k))
        || (rc = call_int(c, p, "candidateK", 1, (int64_t)RCP_INT53_MAX, 0,
                          &ck)))
        return rc;
    if (ck && ck < k)
        return call_fail(c, RCP_INVALID_PARAMS, "candidateK", NULL,
                         "candidateK (%lld) is below k (%lld): the funnel is "
                         "candidateK >= rerank.topN >= k (§3.3)",
                         (long long)ck, (long long)k);
    q->ck = ck > f->maxk ? f->maxk : ck;
    def = q->ck ? q->ck : q->k > FED_RR_DEFAULT ? q->k : FED_RR_DEFAULT;
    if (!rr || (rc = call_int(c, rr, "rerank.topN", 1,
                              (int64_t)RCP_INT53_MAX, def, top)))
        return rc;
    if (proto_get(rr, "topN") && *top < k)
        return call_fail(c, RCP_INVALID_PARAMS, "rerank.topN", NULL,
                         "rerank.topN (%lld) is below k (%lld): the funnel "
                         "is candidateK >= rerank.topN >= k (§3.3)",
                         (long long)*top, (long long)k);
    if (ck && ck < *top)
        return call_fail(c, RCP_INVALID_PARAMS, "candidateK", NULL,
                         "candidateK (%lld) is below rerank.topN (%lld): the "
                         "funnel is candidateK >= rerank.topN >= k (§3.3)",
                         (long long)ck, (long long)*top);
    return 0;
}

/* §7.7 rerank {method?, model?, topN?} | false: the second stage
** (invariant 6).  A method no reranker offers is -32005 under strict; a
** rerank with no reranker reachable now (all down, or past the hop
** budget) is answered in the fused order with a note. */
static int read_rerank(fed *f, rcp_call *c, fq *q)
{
    const rcp_json *p = call_params(c), *rr = proto_get(p, "rerank");
    int64_t top = 0, sent = 0;
    int strict, inc, rc;
    q->rr_method = -1;
    if (rr && rr->type == RCP_JSON_FALSE)
        rr = NULL;
    if (rr && rr->type != RCP_JSON_OBJECT)
        return call_fail(c, RCP_INVALID_PARAMS, "rerank", NULL,
                         "rerank must be an object or false");
    if ((rc = read_funnel(f, c, q, rr, &top)) || !rr)
        return rc;
    if ((rc = call_bool(c, p, "strict", 1, &strict))
        || (rc = call_bool(c, p, "includeText", 1, &inc))
        || (rc = call_enum(c, rr, "rerank.method", rr_names, 3, strict,
                           &q->rr_method))
        || (rc = call_str(c, rr, "rerank.model", &q->rr_model)))
        return rc;
    if (!f->rr_methods)
        return call_unsupported(c, strict, "rerank", "no engine of this "
                                "federation offers rerank (§7.6), and it "
                                "has no index of its own");
    if (q->rr_method >= 0 && !(f->rr_methods & (1u << q->rr_method))) {
        q->rr_method = -1;
        if ((rc = call_unsupported(c, strict, "rerank.method", "no reranker "
                                   "of this federation offers it")))
            return rc;
    }
    if (q->rr_model && !model_offered(f, q->rr_model)) {
        q->rr_model = NULL;
        if ((rc = call_unsupported(c, strict, "rerank.model", "no reranker "
                                   "of this federation lists it in "
                                   "rerank.models")))
            return rc;
    }
    if (!(q->rr = pick_reranker(f, q, q->rr_method, q->rr_model))) {
        call_note_add(c, "rerank: no reranker reachable now (down, or past "
                      "_meta.federation's hop budget): fused order");
        return 0;
    }
    top = top > f->maxk ? f->maxk : top < q->k ? q->k : top;
    if (q->rr->rr_max && top > q->rr->rr_max)
        top = q->rr->rr_max;
    if (rcp_json_int(proto_get(rr, "topN"), &sent) && sent > top)
        call_note_add(c, "rerank.topN clamped to %lld", (long long)top);
    q->rr_top = top;
    if (q->ask < top)       /* the fused top-N is exact only when every
                            ** engine was asked for N */
        q->ask = top;
    q->drop_text = !inc;
    return 0;
}

/* k, mode, fusion.method, rerank, the deadline and the federation meta. */
static int read_query(fed *f, rcp_call *c, fq *q)
{
    const rcp_json *p = call_params(c), *fusion, *meta;
    double dl = call_deadline(c), now = proto_now_ms();
    int rc;
    const rcp_json *v;
    memset(q, 0, sizeof *q);
    q->mode = q->fuse = -1;
    /* what every engine would refuse is refused here, once (§7.7) */
    if ((rc = call_need(c, p, "query", &v)) || (rc = call_need(c, p, "k", &v))
        || (rc = call_int(c, p, "k", 1, (int64_t)RCP_INT53_MAX, 10, &q->k)))
        return rc;
    if (q->k > f->maxk)                 /* §7.7 clamped to maxK */
        q->k = f->maxk;
    if (proto_get(p, "filter") && !call_offers(c, PROTO_CAP_FILTER))
        return call_fail(c, RCP_OPTION_UNSUPPORTED, "filter", "filter",
                         "filter is not advertised: no filter every engine "
                         "of this federation honours (§16.4)");
    if ((rc = check_filter(f, c, proto_get(p, "filter"), 0))
        || (rc = check_not_offered(c, p)))
        return rc;
    /* §16.2 "k or a small multiple": twice k lets a document ranked just
    ** past k by one engine still win by the evidence of another */
    q->ask = q->k * 2;
    if (proto_get(p, "mode")
        && (rc = call_enum(c, p, "mode", mode_names, 3, 1, &q->mode)))
        return rc;
    if (q->mode >= 0 && !(f->modes & (1u << q->mode)))
        return call_fail(c, RCP_OPTION_UNSUPPORTED, "mode", "mode",
                         "no engine of this federation serves mode %s",
                         mode_names[q->mode]);
    if ((rc = call_obj(c, p, "fusion", &fusion)))
        return rc;
    if (fusion && proto_get(fusion, "method")
        && (rc = call_enum(c, fusion, "fusion.method", fuse_names, 3, 1,
                           &q->fuse)))
        return rc;
    if ((rc = read_federation(c, q)))
        return rc;
    meta = proto_get(p, "_meta");
    q->token = meta ? proto_get(meta, "progressToken") : NULL;
    if ((rc = read_rerank(f, c, q)))
        return rc;
    q->fwd_ms = -1;
    q->wait_until = 0;
    /* invariant 6: with a second stage the fan-out has three quarters */
    if (dl > 0 && budget(q->rr ? now + (dl - now) * (1 - FED_RR_SHARE) : dl,
                         now, &q->fwd_ms, &q->wait_until) != 0)
        return call_fail(c, RCP_TIMEOUT, NULL, NULL, "%.0f ms left: no "
                         "time to fan out and fuse", dl - now);
    return 0;
}

/* A downstream request's _meta: the caller's members but ours (§16.2
** the budget fwd, < 0: none; the hop budget and path, except to the own
** index, which forwards nothing; our progress token for the leg, when
** the caller asked for progress and the leg has one). */
static void write_leg_meta(rcp_jw *w, const fed *f, rcp_call *c,
                           const fq *q, const leg *l, double fwd)
{
    static const char *const ours[] = { "deadlineMs", "federation",
                                        "progressToken" };
    const rcp_json *meta = proto_get(call_params(c), "_meta");
    size_t i;
    rcp_jw_key(w, "_meta");
    rcp_jw_obj(w);
    for (i = 0; meta && meta->type == RCP_JSON_OBJECT && i < meta->n; i++) {
        const rcp_json *m = &meta->kids[i];
        if (key_pick(m->key, m->keylen, ours, 3) >= 0)
            continue;
        rcp_jw_keyn(w, m->key, m->keylen);
        rcp_jw_value(w, m);
    }
    if (fwd >= 0) {
        rcp_jw_key(w, "deadlineMs");
        rcp_jw_int(w, (int64_t)fwd);
    }
    if (l->e->transport != T_LOCAL) {
        rcp_jw_key(w, "federation");
        rcp_jw_obj(w);
        rcp_jw_key(w, "depth");
        rcp_jw_int(w, q->depth - 1);
        rcp_jw_key(w, "path");
        rcp_jw_arr(w);
        for (i = 0; q->path && i < q->path->n; i++)
            rcp_jw_value(w, &q->path->kids[i]);
        rcp_jw_cstr(w, f->self);
        rcp_jw_arr_end(w);
        if (q->fusion) {
            rcp_jw_key(w, "fusion");
            rcp_jw_value(w, q->fusion);
        }
        rcp_jw_obj_end(w);
        if (q->token && l->token[0]) {
            rcp_jw_key(w, "progressToken");
            rcp_jw_cstr(w, l->token);
        }
    }
    rcp_jw_obj_end(w);
}

/* The params one engine gets: the caller's, with k raised for headroom
** (candidateK with it, so the engine's funnel holds), _meta replaced
** (§16.2 budget, hop budget and path, a progress token of ours), and
** no rerank (invariant 6; the text it needs is asked for). */
static void write_leg_params(rcp_jw *w, const fed *f, const fq *q,
                             rcp_call *c, const leg *l)
{
    const rcp_json *p = call_params(c);
    static const char *const rewritten[] = { "k", "_meta", "rerank",
                                             "candidateK", "includeText" };
    int64_t ask = q->ask;
    size_t i;
    if (l->e->maxk > 0 && ask > l->e->maxk)
        ask = l->e->maxk > q->k ? l->e->maxk : q->k;
    rcp_jw_obj(w);
    for (i = 0; i < p->n; i++) {
        const rcp_json *m = &p->kids[i];
        int r = key_pick(m->key, m->keylen, rewritten, 5);
        if ((r >= 0 && (r < 4 || q->rr))
            || key_pick(m->key, m->keylen, not_offered, NNOT_OFFERED) >= 0)
            continue;
        rcp_jw_keyn(w, m->key, m->keylen);
        rcp_jw_value(w, m);
    }
    rcp_jw_key(w, "k");
    rcp_jw_int(w, ask);
    if (q->ck) {
        rcp_jw_key(w, "candidateK");
        rcp_jw_int(w, q->ck > ask ? q->ck : ask);
    }
    if (q->rr)
        write_bool_key(w, "includeText", 1);
    write_leg_meta(w, f, c, q, l, q->fwd_ms);
    rcp_jw_obj_end(w);
}

/* §16.2 "Engines lacking a requested capability are skipped (not an
** error)": the reason to skip e for q, or NULL to ask it. */
static const char *skip_reason(const fed *f, const fq *q, const engine *e)
{
    if (!e->info)
        return NULL;            /* not known yet: ask, it may serve */
    if (!(e->offers & PROTO_CAP(PROTO_CAP_RETRIEVE)))
        return "does not advertise retrieve";
    if (q->mode >= 0 && !(e->modes & (1u << q->mode)))
        return "does not serve the requested mode";
    if (q->fuse >= 0 && !(e->fusions & (1u << q->fuse)))
        return "does not offer the requested fusion.method";
    if (looped(f, q, e))
        return "is an aggregator already on _meta.federation.path (a cycle)";
    return NULL;
}

/* The local engine answers in-process, at once: the answer's line in
** out, parsed into a (a retrieve's in lout/larena, a rerank's in
** rout/rarena, since the rerank reads the retrieve's hits). */
static void leg_local(leg *l, const char *method, const char *params,
                      size_t n, rcp_buf *out, rcp_arena *a)
{
    engine *e = l->e;
    rcp_buf fr;
    rcp_json_err je;
    const rcp_json *r, *err;
    rcp_buf_init(&fr);
    rcp_buf_puts(&fr, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"");
    rcp_buf_puts(&fr, method);
    rcp_buf_puts(&fr, "\",\"params\":");
    rcp_buf_put(&fr, params, n);
    rcp_buf_putc(&fr, '}');
    rcp_buf_clear(out);
    rcp_arena_reset(a);
    l->state = L_FAILED;
    l->code = RCP_INTERNAL_ERROR;
    if (!fr.oom) {
        rcp_server_handle(e->local, fr.data, fr.len, out);
        r = out->oom ? NULL : rcp_json_parse(a, out->data, out->len, 0, &je);
        err = rcp_json_get(r, "error");
        if (r && !err && rcp_json_get(r, "result")) {
            l->res = rcp_json_get(r, "result");
            l->state = L_DONE;
        } else if (err) {
            int64_t code;
            l->err = err;
            l->code = rcp_json_int(rcp_json_get(err, "code"), &code)
                ? (int)code : RCP_INTERNAL_ERROR;
            engine_fail(e, "answered %d", l->code);
        } else {
            engine_fail(e, "out of memory");
        }
    } else {
        engine_fail(e, "out of memory");
    }
    rcp_buf_free(&fr);
}

/* A lost connection: closed now, or once the answer is written when the
** engine's hits are still read (a leg with keep). */
static void leg_lost(leg *l)
{
    if (l->keep)
        l->e->down_later = 1;
    else
        engine_down(l->e);
}

/* Send e method with params b (a NUL-terminated buffer; a stdio engine
** that is down is started again first, when its backoff allows:
** initialize and the request go together, the client pairs them by id).
** The leg is L_SENT, L_DONE (local) or L_FAILED. */
static void leg_issue(fed *f, leg *l, const char *method, const rcp_buf *b)
{
    engine *e = l->e;
    l->code = RCP_BACKEND_UNAVAILABLE;
    if (e->state == E_DEAD && proto_now_ms() >= e->retry_at)
        engine_spawn(f, e);
    if (e->state == E_DEAD) {
        l->state = L_FAILED;
        return;
    }
    if (b->oom) {
        l->state = L_FAILED;
        l->code = RCP_INTERNAL_ERROR;
        engine_fail(e, "out of memory");
        return;
    }
    if (e->transport == T_LOCAL) {
        double t0 = proto_now_ms();
        int rr = strcmp(method, "retrieve") != 0;
        leg_local(l, method, b->data, b->len - 1, rr ? &e->rout : &e->lout,
                  rr ? &e->rarena : &e->larena);
        l->ms = proto_now_ms() - t0;
        return;
    }
    l->r = rcp_client_request(e->cl, method, b->data, 0);
    if (!l->r) {
        engine_fail(e, "the connection is lost");
        leg_lost(l);
        l->state = L_FAILED;
        return;
    }
    l->state = L_SENT;
    e->active = l;
}

/* Send e its retrieve. */
static void leg_send(fed *f, const fq *q, rcp_call *c, leg *l, rcp_buf *b)
{
    rcp_jw w;
    rcp_buf_clear(b);
    rcp_jw_init(&w, b);
    write_leg_params(&w, f, q, c, l);
    rcp_buf_putc(b, '\0');
    leg_issue(f, l, "retrieve", b);
}

/* §7.14 pass-through: a leg no longer wanted is cancelled downstream. */
static void leg_cancel(engine *e, leg *l, const char *reason)
{
    rcp_buf b;
    rcp_jw w;
    size_t n;
    const char *id;
    if (l->state != L_SENT || !l->r)
        return;
    if (e->cl && rcp_request_state_get(l->r) == RCP_REQ_PENDING) {
        id = rcp_request_id(l->r, &n);
        rcp_buf_init(&b);
        rcp_jw_init(&w, &b);
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "id");
        rcp_jw_raw(&w, id, n);
        rcp_jw_key(&w, "reason");
        rcp_jw_cstr(&w, reason);
        rcp_jw_obj_end(&w);
        rcp_buf_putc(&b, '\0');
        if (!b.oom)
            (void)rcp_client_notify(e->cl, "notifications/cancel", b.data);
        rcp_buf_free(&b);
    }
    rcp_request_free(e->cl, l->r);   /* a late answer is dropped by id */
    l->r = NULL;
}

/* A sent leg's answer, if any: L_DONE or L_FAILED (dead engine, error). */
static void leg_poll(leg *l)
{
    engine *e = l->e;
    rcp_request_state st;
    int code;
    if (l->state != L_SENT)
        return;
    st = rcp_request_state_get(l->r);
    if (st == RCP_REQ_PENDING)
        return;
    l->progress = 1;
    l->ms = rcp_request_latency_ms(l->r);
    if (st == RCP_REQ_DONE && rcp_request_error(l->r, &code)) {
        l->state = L_FAILED;
        l->code = code;
        l->err = rcp_json_get(rcp_request_response(l->r), "error");
        engine_fail(e, "answered %d", code);
    } else if (st == RCP_REQ_DONE && rcp_request_result(l->r)) {
        l->state = L_DONE;
        l->res = rcp_request_result(l->r);
    } else {
        l->state = L_FAILED;
        l->code = RCP_BACKEND_UNAVAILABLE;
        engine_fail(e, "the connection closed before it answered");
        leg_lost(l);
    }
}

/* §9 progress per engine: a downstream progress frame for one of our
** tokens moves that leg's share; the mean goes upstream, staged by the
** engine's id. */
static void relay_progress(fed *f, leg *legs, const rcp_json *msg)
{
    const rcp_json *p = rcp_json_get(msg, "params"), *tok, *pr;
    char stage[96] = "";
    double sum = 0;
    size_t i, sent = 0;
    if (!f->cur || !rcp_json_streq(rcp_json_get(msg, "method"),
                                   "notifications/progress"))
        return;
    tok = rcp_json_get(p, "progressToken");
    pr = rcp_json_get(p, "progress");
    for (i = 0; i < f->nlegs; i++) {
        leg *l = &legs[i];
        if (l->state == L_SKIP)
            continue;
        sent++;
        if (tok && str_is(tok, l->token, strlen(l->token)) && pr
            && rcp_json_num(pr) > l->progress && rcp_json_num(pr) <= 1) {
            l->progress = rcp_json_num(pr);
            snprintf(stage, sizeof stage, "engine %s", l->e->id);
        }
        sum += l->progress;
    }
    if (sent && stage[0])
        (void)call_progress(f->cur, sum / (double)sent * 0.99, stage, NULL,
                            NULL);
}

static void on_notify(void *ud, const rcp_json *msg)
{
    fed *f = ud;
    if (f->legs)
        relay_progress(f, f->legs, msg);
}

static size_t legs_pending(const leg *legs, size_t n)
{
    size_t i, k = 0;
    for (i = 0; i < n; i++)
        k += legs[i].state == L_SENT;
    return k;
}

/* Invariant 2: wait on every engine at once until wait_until (0: no
** end), an upstream cancel or the deadline seen within FED_SLICE_MS.
** 0, or the code to stop with. */
static int await_legs(fed *f, double wait_until, rcp_call *c, leg *legs,
                      size_t n)
{
    size_t i;
    int rc;
    while (legs_pending(legs, n)) {
        double now = proto_now_ms();
        int ms = FED_SLICE_MS;
        if (wait_until > 0) {
            if (now >= wait_until)
                return 0;
            if (wait_until - now < ms)
                ms = (int)(wait_until - now) + 1;
        }
        pump_all(f, ms);
        for (i = 0; i < n; i++)
            leg_poll(&legs[i]);
        if ((rc = call_still_wanted(c)) != 0)
            return rc;
    }
    return 0;
}

/* MARK: - §16.3 Fusion ---------------------------------------------------- */

typedef struct src {            /* one answering engine's ranked list */
    leg            *l;
    rcp_fuse_item  *items;
    const rcp_json **hit;       /* hit[i] is items[i]'s */
    size_t          n;
} src;

/* §16.3 "the richest body (longest text / most content)": 1 when a's
** is richer than b's. */
static int richer(const rcp_json *a, const rcp_json *b)
{
    const rcp_json *ta = rcp_json_get(a, "text"), *tb = rcp_json_get(b, "text"),
                   *ca = rcp_json_get(a, "content"),
                   *cb = rcp_json_get(b, "content");
    size_t la = ta && ta->type == RCP_JSON_STRING ? ta->n : 0,
           lb = tb && tb->type == RCP_JSON_STRING ? tb->n : 0,
           na = ca && ca->type == RCP_JSON_ARRAY ? ca->n : 0,
           nb = cb && cb->type == RCP_JSON_ARRAY ? cb->n : 0;
    return la != lb ? la > lb : na > nb;
}

static int key_in(const rcp_json *obj, const char *k, size_t n)
{
    size_t i;
    for (i = 0; obj && obj->type == RCP_JSON_OBJECT && i < obj->n; i++)
        if (obj->kids[i].keylen == n && !memcmp(obj->kids[i].key, k, n))
            return 1;
    return 0;
}

static int is_origin_key(const char *k, size_t n)
{
    return (n == 6 && !memcmp(k, "engine", 6))
        || (n == 10 && !memcmp(k, "engineRank", 10))
        || (n == 11 && !memcmp(k, "engineScore", 11));
}

/* §16.3 "the richest body (longest text / most content)": the hit kept
** for fused item fz (the earlier engine on a tie), from list *bi. */
static const rcp_json *kept_hit(const src *s, size_t ns,
                                const rcp_fused *fz, size_t *bi)
{
    const rcp_json *best = NULL;
    size_t i;
    *bi = 0;
    for (i = 0; i < ns; i++) {
        const rcp_json *h;
        if (fz->pos[i] < 0)
            continue;
        h = s[i].hit[fz->pos[i]];
        if (!best || richer(h, best)) {
            best = h;
            *bi = i;
        }
    }
    assert(best != NULL);       /* a fused id came from some list */
    return best;
}

/* One fused hit after the second stage (invariant 6). */
typedef struct staged {
    size_t pos;                 /* its fused position, 0-based */
    double score;               /* the cascade's */
    long   rank;                /* its rerank rank, 0-based; -1: none */
    double rr;                  /* the reranker's score, when ranked */
} staged;

/* §7.7 Hit.scores: the kept hit's stages, and the federation's rerank. */
static void write_scores(rcp_jw *w, const rcp_json *best, const staged *st)
{
    const rcp_json *sc = rcp_json_get(best, "scores");
    size_t j;
    rcp_jw_key(w, "scores");
    rcp_jw_obj(w);
    for (j = 0; sc && sc->type == RCP_JSON_OBJECT && j < sc->n; j++)
        if (!(sc->kids[j].keylen == 6
              && !memcmp(sc->kids[j].key, "rerank", 6))) {
            rcp_jw_keyn(w, sc->kids[j].key, sc->kids[j].keylen);
            rcp_jw_value(w, &sc->kids[j]);
        }
    rcp_jw_key(w, "rerank");
    rcp_jw_double(w, st->rr);
    rcp_jw_obj_end(w);
}

/* One fused hit: the richest body among the engines that returned it,
** meta merged (the kept hit's members first, then the others' new ones),
** its origin in meta.engine, engineRank (1-based) and engineScore
** (§16.3); after a second stage (st non-NULL) the cascade's score and
** scores.rerank.  drop_text: the caller did not ask for text (we did,
** for the reranker). */
static void write_fused(rcp_jw *w, const src *s, size_t ns,
                        const rcp_fused *fz, const staged *st, int drop_text)
{
    const rcp_json *best, *meta;
    size_t i, j, bi;
    best = kept_hit(s, ns, fz, &bi);
    rcp_jw_obj(w);
    for (j = 0; j < best->n; j++) {
        const rcp_json *m = &best->kids[j];
        if ((m->keylen == 5 && !memcmp(m->key, "score", 5))
            || (m->keylen == 4 && !memcmp(m->key, "meta", 4))
            || (drop_text && m->keylen == 4 && !memcmp(m->key, "text", 4))
            || (st && st->rank >= 0 && m->keylen == 6
                && !memcmp(m->key, "scores", 6)))
            continue;
        rcp_jw_keyn(w, m->key, m->keylen);
        rcp_jw_value(w, m);
    }
    if (st && st->rank >= 0)
        write_scores(w, best, st);
    rcp_jw_key(w, "score");
    rcp_jw_double(w, st ? st->score : fz->score);
    rcp_jw_key(w, "meta");
    rcp_jw_obj(w);
    meta = rcp_json_get(best, "meta");
    for (j = 0; meta && meta->type == RCP_JSON_OBJECT && j < meta->n; j++)
        if (!is_origin_key(meta->kids[j].key, meta->kids[j].keylen)) {
            rcp_jw_keyn(w, meta->kids[j].key, meta->kids[j].keylen);
            rcp_jw_value(w, &meta->kids[j]);
        }
    for (i = 0; i < ns; i++) {
        const rcp_json *om;
        size_t k;
        if (i == bi || fz->pos[i] < 0)
            continue;
        om = rcp_json_get(s[i].hit[fz->pos[i]], "meta");
        for (j = 0; om && om->type == RCP_JSON_OBJECT && j < om->n; j++) {
            const rcp_json *m = &om->kids[j];
            int dup = key_in(meta, m->key, m->keylen)
                || is_origin_key(m->key, m->keylen);
            for (k = 0; !dup && k < i; k++)     /* an earlier one had it */
                dup = k != bi && fz->pos[k] >= 0
                    && key_in(rcp_json_get(s[k].hit[fz->pos[k]], "meta"),
                              m->key, m->keylen);
            if (!dup) {
                rcp_jw_keyn(w, m->key, m->keylen);
                rcp_jw_value(w, m);
            }
        }
    }
    rcp_jw_key(w, "engine");
    rcp_jw_cstr(w, s[bi].l->e->id);
    rcp_jw_key(w, "engineRank");
    rcp_jw_int(w, fz->pos[bi] + 1);
    rcp_jw_key(w, "engineScore");
    rcp_jw_double(w, s[bi].items[fz->pos[bi]].score);
    rcp_jw_obj_end(w);
    rcp_jw_obj_end(w);
}

/* What an engine noted (a nested aggregator's skips and cycles among
** them) is the caller's to see too. */
static void downstream_notes(fed *f, const leg *l)
{
    const rcp_json *ns = rcp_json_get(rcp_json_get(l->res, "usage"),
                                      "notes");
    size_t i;
    for (i = 0; ns && ns->type == RCP_JSON_ARRAY && i < ns->n; i++)
        if (ns->kids[i].type == RCP_JSON_STRING)
            note(f, "engine %s: %.*s", l->e->id,
                 (int)(ns->kids[i].n > 120 ? 120 : ns->kids[i].n),
                 ns->kids[i].s);
}

/* Each answering engine's hits as a rank list (registry order, invariant
** 5).  A hit without a usable id cannot be deduplicated and is left out
** (noted).  The items live in the call's arena. */
static int build_lists(fed *f, rcp_call *c, leg *legs, src *s, size_t *ns,
                       int method, rcp_fuse_list *lists)
{
    size_t i, j;
    *ns = 0;
    for (i = 0; i < f->n; i++) {
        leg *l = &legs[i];
        const rcp_json *hits = l->state == L_DONE
            ? rcp_json_get(l->res, "hits") : NULL;
        src *x;
        size_t bad = 0;
        if (l->state != L_DONE)
            continue;
        if (!hits || hits->type != RCP_JSON_ARRAY) {
            note(f, "engine %s: its result has no hits array; dropped",
                 l->e->id);
            l->state = L_FAILED;
            l->code = RCP_INTERNAL_ERROR;
            continue;
        }
        x = &s[(*ns)++];
        x->l = l;
        x->n = 0;
        x->items = rcp_arena_alloc(call_arena(c), (hits->n + 1)
                                   * sizeof *x->items);
        x->hit = rcp_arena_alloc(call_arena(c), (hits->n + 1)
                                 * sizeof *x->hit);
        if (!x->items || !x->hit)
            return call_oom(c);
        for (j = 0; j < hits->n; j++) {
            const rcp_json *h = &hits->kids[j], *sc = rcp_json_get(h, "score");
            rcp_fuse_item *it = &x->items[x->n];
            if (!(it->id = id_text(rcp_json_get(h, "id"), &it->idlen))) {
                bad++;                  /* no identity to fuse it by */
                continue;
            }
            it->score = sc && sc->type == RCP_JSON_NUMBER ? rcp_json_num(sc)
                : 0;
            x->hit[x->n++] = h;
        }
        if (bad)
            note(f, "engine %s: %lu hit(s) without a string or number id "
                 "left out", l->e->id, (unsigned long)bad);
        downstream_notes(f, l);
        lists[*ns - 1].items = x->items;
        lists[*ns - 1].n = x->n;
        lists[*ns - 1].weight = l->e->weight;
        lists[*ns - 1].floor = method == RCP_FUSE_CONVEX ? l->e->floor : 0;
    }
    return 0;
}

/* MARK: - §16.3 The second stage: rerank over the union (invariant 6) */

/* The reranker's §7.6 answer: scores[i] for passage i, n numbers. */
static int read_scores(const rcp_json *res, size_t n, double *out)
{
    const rcp_json *sc = rcp_json_get(res, "scores");
    size_t i;
    if (!sc || sc->type != RCP_JSON_ARRAY || sc->n != n)
        return -1;
    for (i = 0; i < n; i++) {
        if (sc->kids[i].type != RCP_JSON_NUMBER)
            return -1;
        out[i] = rcp_json_num(&sc->kids[i]);
    }
    return 0;
}

/* §7.6 params for the passages: the caller's query, the method and model
** it asked for, topN all of them, and the leg's _meta. */
static void write_rerank_params(rcp_jw *w, const fed *f, rcp_call *c,
                                const fq *q, const leg *l,
                                const rcp_json *const *texts, size_t n,
                                double fwd)
{
    size_t i;
    rcp_jw_obj(w);
    rcp_jw_key(w, "query");
    rcp_jw_value(w, proto_get(call_params(c), "query"));
    rcp_jw_key(w, "passages");
    rcp_jw_arr(w);
    for (i = 0; i < n; i++)
        rcp_jw_value(w, texts[i]);
    rcp_jw_arr_end(w);
    if (q->rr_method >= 0) {
        rcp_jw_key(w, "method");
        rcp_jw_cstr(w, rr_names[q->rr_method]);
    }
    if (q->rr_model) {
        rcp_jw_key(w, "model");
        rcp_jw_value(w, q->rr_model);
    }
    rcp_jw_key(w, "topN");
    rcp_jw_int(w, (int64_t)n);
    write_leg_meta(w, f, c, q, l, fwd);
    rcp_jw_obj_end(w);
}

/* A score and its position, for the deterministic sorts below. */
typedef struct byscore {
    double score;
    size_t pos;
} byscore;

static int byscore_cmp(const void *pa, const void *pb)
{
    const byscore *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* The cascade's order: its score, then the better rerank rank (a hit
** without one after), then the fused position -- a total order. */
static int staged_cmp(const void *pa, const void *pb)
{
    const staged *a = pa, *b = pb;
    unsigned long ra = (unsigned long)a->rank, rb = (unsigned long)b->rank;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (ra != rb)               /* -1 is the largest unsigned: last */
        return ra < rb ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* The reranker failed or ran late: the fused order stands (noted, and
** degraded by the caller), unless it is required (§16.1: its failure
** fails the query, with its code). */
static int rerank_failed(fed *f, rcp_call *c, const leg *l)
{
    const rcp_json *msg = rcp_json_get(l->err, "message");
    int ml = msg && msg->type == RCP_JSON_STRING
        ? (int)(msg->n > 120 ? 120 : msg->n) : 0;
    note(f, "rerank: engine %s: %s%s%.*s; the fused order is returned",
         l->e->id, l->e->why[0] ? l->e->why : "failed", ml ? ": " : "", ml,
         ml ? msg->s : "");
    if (l->e->required)
        return call_fail(c, l->code, NULL, NULL, "required engine %s failed "
                         "the rerank: %s", l->e->id, l->e->why);
    return 0;
}

/* A cancel (§7.14) or the request's own deadline (§13.1) while the
** reranker works: the query's error. */
static int stopped(rcp_call *c, int rc)
{
    return call_fail(c, rc, NULL, NULL, rc == RCP_CANCELLED
                     ? "cancelled by notifications/cancel during the rerank "
                       "(and the reranker's request with it)"
                     : "deadline elapsed during the rerank");
}

/* Send the passages to the reranker and wait (the deadline's budget, an
** upstream cancel seen within FED_SLICE_MS).  0, or the code to stop
** the query with; the leg says what became of the rerank. */
static int rerank_call(fed *f, rcp_call *c, const fq *q, leg *l,
                       const rcp_json *const *texts, size_t n)
{
    double dl = call_deadline(c), now = proto_now_ms(), fwd = -1, wait = 0;
    rcp_buf b;
    rcp_jw w;
    int rc;
    if (dl > 0 && budget(dl, now, &fwd, &wait) != 0) {
        l->state = L_FAILED;
        l->code = RCP_TIMEOUT;
        engine_fail(l->e, "no time left to rerank (%.0f ms)", dl - now);
        return 0;
    }
    if ((rc = call_progress(c, 0.995, "rerank", NULL, NULL)))
        return stopped(c, rc);
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    write_rerank_params(&w, f, c, q, l, texts, n, fwd);
    rcp_buf_putc(&b, '\0');
    leg_issue(f, l, "rerank", &b);
    rcp_buf_free(&b);
    if ((rc = await_legs(f, wait, c, l, 1)) != 0) {
        leg_cancel(l->e, l, rc == RCP_CANCELLED ? "the federated request "
                   "was cancelled" : "the federated request's deadline "
                   "passed");
        l->state = L_FAILED;
        return stopped(c, rc);
    }
    if (l->state == L_SENT) {
        leg_cancel(l->e, l, "past the federation's deadline");
        l->state = L_FAILED;
        l->code = RCP_TIMEOUT;
        engine_fail(l->e, "past the deadline (%.0f ms forwarded); dropped",
                    fwd);
    }
    return 0;
}

/* Invariant 6: the top rr_top of the fused list fz[0..nf) (the hits with
** text) are reranked by one reranker, and st[0..nf) is the final order:
** Σ 1/(rrfK + rank) over the fused rank and the rerank rank (§16.3's RRF
** with the request's rrfK: ranks, since fused scores and another
** engine's rerank scores share no scale -- README "Federation"), ties
** by the rerank rank, then the fused position.  *reranked: how many
** were; 0: the fused order stands.  0, or the code to fail the query
** with. */
static int second_stage(fed *f, rcp_call *c, const fq *q, const src *s,
                        size_t ns, const rcp_fused *fz, size_t nf,
                        staged *st, leg *l, size_t *reranked)
{
    size_t i, np = 0, top = (size_t)q->rr_top < nf ? (size_t)q->rr_top : nf;
    const rcp_json **texts = rcp_arena_alloc(call_arena(c),
                                             (top + 1) * sizeof *texts);
    byscore *r = rcp_arena_alloc(call_arena(c), (top + 1) * sizeof *r);
    double *sc = rcp_arena_alloc(call_arena(c), (top + 1) * sizeof *sc);
    size_t *at = rcp_arena_alloc(call_arena(c), (top + 1) * sizeof *at);
    int rc;
    *reranked = 0;
    if (!texts || !r || !sc || !at)
        return call_oom(c);
    for (i = 0; i < top; i++) {
        size_t bi;
        const rcp_json *t = rcp_json_get(kept_hit(s, ns, &fz[i], &bi),
                                         "text");
        if (t && t->type == RCP_JSON_STRING) {
            texts[np] = t;
            at[np++] = i;
        }
    }
    if (np < top)
        note(f, "rerank: %lu of the top %lu hit(s) carry no text and keep "
             "only their fused rank", (unsigned long)(top - np),
             (unsigned long)top);
    /* the reranker is chosen again now: one that went down during the
    ** fan-out is passed over (the same rule, so still deterministic) */
    l->e = pick_reranker(f, q, q->rr_method, q->rr_model);
    if (!np || !l->e) {
        if (np)
            note(f, "rerank: no reranker reachable now: fused order");
        return 0;
    }
    if ((rc = rerank_call(f, c, q, l, texts, np)) != 0)
        return rc;
    if (l->state == L_DONE && read_scores(l->res, np, sc) != 0) {
        l->state = L_FAILED;
        l->code = RCP_INTERNAL_ERROR;
        engine_fail(l->e, "its rerank answered no score per passage");
    }
    if (l->r) {                 /* the scores are copied out */
        rcp_request_free(l->e->cl, l->r);
        l->r = NULL;
    }
    l->res = NULL;
    l->e->active = NULL;
    if (l->state != L_DONE)
        return rerank_failed(f, c, l);
    for (i = 0; i < nf; i++) {
        st[i].pos = i;
        st[i].score = 1.0 / (q->rrf_k + (double)(i + 1));
        st[i].rank = -1;
        st[i].rr = 0;
    }
    for (i = 0; i < np; i++) {
        r[i].score = sc[i];
        r[i].pos = at[i];
    }
    qsort(r, np, sizeof *r, byscore_cmp);
    for (i = 0; i < np; i++) {
        /* each term is a double before the sum (as model.c's cascade),
        ** so equal rank pairs tie exactly */
        double term = 1.0 / (q->rrf_k + (double)(i + 1));
        staged *x = &st[r[i].pos];
        x->score += term;
        x->rank = (long)i;
        x->rr = r[i].score;
    }
    qsort(st, nf, sizeof *st, staged_cmp);
    *reranked = np;
    return 0;
}

/* usage.engines: each engine asked, what became of it, how long it
** took (send to answer, as the aggregator saw it) and how many hits it
** gave -- what an operator needs to see which shard is slow. */
static void write_engines_usage(const fed *f, rcp_jw *w, const leg *legs)
{
    size_t i;
    rcp_jw_key(w, "engines");
    rcp_jw_arr(w);
    for (i = 0; i < f->n; i++) {
        const leg *l = &legs[i];
        const rcp_json *h = l->state == L_DONE ? rcp_json_get(l->res, "hits")
            : NULL;
        if (l->state == L_SKIP)
            continue;
        rcp_jw_obj(w);
        rcp_jw_key(w, "id");
        rcp_jw_cstr(w, l->e->id);
        rcp_jw_key(w, "answered");
        rcp_jw_bool(w, l->state == L_DONE);
        if (l->state == L_DONE) {
            proto_write_ms(w, "latencyMs", l->ms);
            rcp_jw_key(w, "hits");
            rcp_jw_int(w, h && h->type == RCP_JSON_ARRAY ? (int64_t)h->n : 0);
        }
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
}

/* usage.reranker: the second stage's engine, as usage.engines has it. */
static void write_reranker_usage(rcp_jw *w, const leg *rl)
{
    if (rl->state == L_SKIP)
        return;
    rcp_jw_key(w, "reranker");
    rcp_jw_obj(w);
    rcp_jw_key(w, "id");
    rcp_jw_cstr(w, rl->e->id);
    rcp_jw_key(w, "answered");
    rcp_jw_bool(w, rl->state == L_DONE);
    if (rl->state == L_DONE) {
        proto_write_ms(w, "latencyMs", rl->ms);
    }
    rcp_jw_obj_end(w);
}

/* §7.7 usage: the effective counts (candidates the engines gave, hits
** reranked), latency, the engines and the reranker, the notes. */
static void write_notes_usage(fed *f, rcp_call *c, rcp_jw *w, double t0,
                              size_t candidates, size_t reranked,
                              const leg *legs, const leg *rl)
{
    const char *nt;
    size_t i;
    rcp_jw_key(w, "usage");
    rcp_jw_obj(w);
    rcp_jw_key(w, "candidates");
    rcp_jw_int(w, (int64_t)candidates);
    rcp_jw_key(w, "reranked");
    rcp_jw_int(w, (int64_t)reranked);
    proto_write_ms(w, "latencyMs", proto_now_ms() - t0);
    write_engines_usage(f, w, legs);
    write_reranker_usage(w, rl);
    if (f->nnotes || call_note(c, 0)) {
        rcp_jw_key(w, "notes");
        rcp_jw_arr(w);
        for (i = 0; (nt = call_note(c, i)) != NULL; i++)
            rcp_jw_cstr(w, nt);
        for (i = 0; i < f->nnotes; i++)
            rcp_jw_cstr(w, f->notes[i]);
        rcp_jw_arr_end(w);
    }
    rcp_jw_obj_end(w);
}

/* _meta.degraded (§16.2 MAY): the engines that failed, and the reranker
** when the second stage did. */
static void write_degraded(const fed *f, rcp_jw *w, const leg *legs,
                           const leg *rl)
{
    size_t i;
    int any = rl->state == L_FAILED, listed = 0;
    for (i = 0; i < f->n; i++)
        any |= legs[i].state == L_FAILED;
    if (!any)
        return;
    rcp_jw_key(w, "_meta");
    rcp_jw_obj(w);
    rcp_jw_key(w, "degraded");
    rcp_jw_arr(w);
    for (i = 0; i < f->n; i++)
        if (legs[i].state == L_FAILED) {
            rcp_jw_cstr(w, legs[i].e->id);
            listed |= rl->state == L_FAILED && legs[i].e == rl->e;
        }
    if (rl->state == L_FAILED && !listed)
        rcp_jw_cstr(w, rl->e->id);
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
}

/* The answer: fused (and reranked) hits, usage with the notes,
** _meta.degraded. */
static int write_answer(fed *f, rcp_call *c, const fq *q, leg *legs,
                        double t0)
{
    rcp_fuse_list lists[FED_MAX_ENGINES];
    src s[FED_MAX_ENGINES];
    rcp_fused *fz = NULL;
    staged *st = NULL;
    leg rl;
    rcp_jw *w = call_w(c);
    size_t ns, i, cand = 0, reranked = 0;
    long nf;
    int method = q->method, rc;
    memset(&rl, 0, sizeof rl);
    rl.state = L_SKIP;
    rl.keep = 1;                        /* the hits are read after it */
    if (method == RCP_FUSE_CONVEX)
        for (i = 0; i < f->n; i++)
            if (legs[i].state == L_DONE && !legs[i].e->has_floor) {
                /* §16.3 MUST fall back to RRF when any does not */
                note(f, "convex fusion needs every engine's scoreFloor; "
                     "engine %s advertises none: fused by rrf",
                     legs[i].e->id);
                method = RCP_FUSE_RRF;
                break;
            }
    if ((rc = build_lists(f, c, legs, s, &ns, method, lists)))
        return rc;
    for (i = 0; i < ns; i++)
        cand += s[i].n;
    nf = ns ? rcp_fuse(method, lists, ns, q->rrf_k, &fz) : 0;
    if (nf < 0)
        return call_oom(c);
    if (q->rr && nf > 0
        && (!(st = rcp_arena_alloc(call_arena(c), (size_t)nf * sizeof *st))
            || (rc = second_stage(f, c, q, s, ns, fz, (size_t)nf, st, &rl,
                                  &reranked)) != 0)) {
        rcp_free(fz);
        return st ? rc : call_oom(c);
    }
    rcp_jw_obj(w);
    rcp_jw_key(w, "hits");
    rcp_jw_arr(w);
    for (i = 0; i < (size_t)nf && (int64_t)i < q->k; i++)
        write_fused(w, s, ns, &fz[reranked ? st[i].pos : i],
                    reranked ? &st[i] : NULL, q->drop_text);
    rcp_jw_arr_end(w);
    rcp_free(fz);
    write_notes_usage(f, c, w, t0, cand, reranked, legs, &rl);
    write_degraded(f, w, legs, &rl);
    rcp_jw_obj_end(w);
    return 0;
}

/* MARK: - §7.7 retrieve, federated --------------------------------------- */

/* Which engines to ask (§16.2 skips, §16.2 loop detection). */
static void plan_legs(fed *f, const fq *q, leg *legs)
{
    int cycle = on_path(q->path, f->self, strlen(f->self));
    size_t i;
    if (cycle)
        note(f, "cycle: this aggregator (%s) is already on "
             "_meta.federation.path; nothing forwarded, answered from its "
             "own index only", f->self);
    else if (q->depth == 0)
        note(f, "_meta.federation.depth is 0: nothing forwarded, answered "
             "from its own index only");
    for (i = 0; i < f->n; i++) {
        leg *l = &legs[i];
        const char *why;
        memset(l, 0, sizeof *l);
        l->e = &f->e[i];
        snprintf(l->token, sizeof l->token, "fed-%u", (unsigned)i % 100u);
        l->state = L_SENT;
        if (l->e->transport != T_LOCAL && (cycle || q->depth == 0))
            l->state = L_SKIP;
        else if (l->e->transport != T_LOCAL && f->in_cycle) {
            l->state = L_SKIP;
            note(f, "engine %s: skipped: %s", l->e->id, l->e->why);
        }
        else if ((why = skip_reason(f, q, l->e)) != NULL) {
            l->state = L_SKIP;
            note(f, "engine %s: skipped: %s", l->e->id, why);
        }
    }
}

/* An engine that answered that the request is wrong says so for us all:
** nothing else answered, so the caller gets its error, not -32010. */
static int refused(int code)
{
    return code == RCP_INVALID_PARAMS || code == RCP_OPTION_UNSUPPORTED
        || code == RCP_INVALID_REQUEST;
}

static int surface(rcp_call *c, const leg *l)
{
    const rcp_json *d = rcp_json_get(l->err, "data"),
                   *fld = rcp_json_get(d, "field"),
                   *opt = rcp_json_get(d, "option"),
                   *det = rcp_json_get(d, "detail");
    char fb[128], ob[64];
    snprintf(fb, sizeof fb, "%.*s", fld && fld->type == RCP_JSON_STRING
             ? (int)(fld->n > 120 ? 120 : fld->n) : 0, fld ? fld->s : "");
    snprintf(ob, sizeof ob, "%.*s", opt && opt->type == RCP_JSON_STRING
             ? (int)(opt->n > 60 ? 60 : opt->n) : 0, opt ? opt->s : "");
    return call_fail(c, l->code, fb[0] ? fb : NULL, ob[0] ? ob : NULL,
                     "engine %s: %.*s", l->e->id, det && det->type
                     == RCP_JSON_STRING ? (int)(det->n > 200 ? 200 : det->n)
                     : 7, det && det->type == RCP_JSON_STRING ? det->s
                     : "refused");
}

/* What failed and why, into the notes; the verdict: 0 to answer, or the
** code of a required engine's failure, or -32010 when nothing answered
** (§16.2). */
static int judge(fed *f, rcp_call *c, leg *legs)
{
    size_t i, asked = 0, ok = 0;
    for (i = 0; i < f->n; i++) {
        leg *l = &legs[i];
        if (l->state == L_SKIP)
            continue;
        asked++;
        if (l->state == L_DONE) {
            ok++;
            continue;
        }
        note(f, "engine %s: %s", l->e->id, l->e->why[0] ? l->e->why
             : "unavailable");
        if (l->e->required)
            return call_fail(c, l->code, NULL, NULL, "required engine %s "
                             "failed: %s", l->e->id, l->e->why);
    }
    for (i = 0; asked && !ok && i < f->n; i++)
        if (legs[i].state == L_FAILED && refused(legs[i].code))
            return surface(c, &legs[i]);
    if (asked && !ok)
        return call_fail(c, RCP_BACKEND_UNAVAILABLE, NULL, NULL,
                         "no engine answered (%lu asked): %s",
                         (unsigned long)asked, f->nnotes
                         ? f->notes[f->nnotes - 1] : "");
    return 0;
}

static int m_retrieve(void *ud, rcp_call *c)
{
    fed *f = ud;
    leg legs[FED_MAX_ENGINES];
    rcp_buf b;
    fq q;
    double t0 = proto_now_ms();
    size_t i;
    int rc;
    f->nnotes = 0;
    if ((rc = read_query(f, c, &q)))
        return rc;
    plan_legs(f, &q, legs);
    f->cur = c;
    f->legs = legs;                     /* progress of this query only */
    f->nlegs = f->n;
    rcp_buf_init(&b);
    /* invariant 2: the stdio engines first, then the own index, which
    ** answers in-process while they work */
    for (i = 0; i < f->n; i++)
        if (legs[i].state == L_SENT && f->e[i].transport != T_LOCAL)
            leg_send(f, &q, c, &legs[i], &b);
    for (i = 0; i < f->n; i++)
        if (legs[i].state == L_SENT && f->e[i].transport == T_LOCAL)
            leg_send(f, &q, c, &legs[i], &b);
    rcp_buf_free(&b);
    rc = await_legs(f, q.wait_until, c, legs, f->n);
    for (i = 0; i < f->n; i++) {
        leg *l = &legs[i];
        if (l->state != L_SENT)
            continue;
        if (rc) {
            leg_cancel(l->e, l, rc == RCP_CANCELLED
                       ? "the federated request was cancelled"
                       : "the federated request's deadline passed");
            l->state = L_FAILED;
            continue;
        }
        leg_cancel(l->e, l, "past the federation's deadline");
        l->state = L_FAILED;
        l->code = RCP_TIMEOUT;
        engine_fail(l->e, "past the deadline (%.0f ms forwarded); dropped",
                    q.fwd_ms);
    }
    if (!rc && (rc = judge(f, c, legs)) == 0)
        rc = write_answer(f, c, &q, legs, t0);
    else if (rc == RCP_CANCELLED || rc == RCP_TIMEOUT)
        rc = call_fail(c, rc, NULL, NULL, rc == RCP_CANCELLED
                       ? "cancelled by notifications/cancel (and every "
                         "engine's request with it)"
                       : "deadline elapsed");
    for (i = 0; i < f->n; i++) {
        if (legs[i].r)
            rcp_request_free(f->e[i].cl, legs[i].r);
        f->e[i].active = NULL;
    }
    for (i = 0; i < f->n; i++)          /* the hits are out: close now */
        if (f->e[i].down_later) {
            f->e[i].down_later = 0;
            engine_down(&f->e[i]);
        }
    f->cur = NULL;
    f->legs = NULL;
    f->nlegs = 0;
    return rc;
}

/* MARK: - §7.6 rerank, routed ------------------------------------------ */

/* The params the reranker gets: the caller's, but _meta (ours: the
** budget, the hop budget and path, our progress token) and a method or
** model ignored under strict false. */
static void write_routed_params(rcp_jw *w, const fed *f, rcp_call *c,
                                const fq *q, const leg *l, int drop_method,
                                int drop_model)
{
    const rcp_json *p = call_params(c);
    size_t i;
    rcp_jw_obj(w);
    for (i = 0; i < p->n; i++) {
        const rcp_json *m = &p->kids[i];
        if ((m->keylen == 5 && !memcmp(m->key, "_meta", 5))
            || (drop_method && m->keylen == 6 && !memcmp(m->key, "method", 6))
            || (drop_model && m->keylen == 5 && !memcmp(m->key, "model", 5)))
            continue;
        rcp_jw_keyn(w, m->key, m->keylen);
        rcp_jw_value(w, m);
    }
    write_leg_meta(w, f, c, q, l, q->fwd_ms);
    rcp_jw_obj_end(w);
}

/* §7.6 rerank's method and model, and the reranker that serves them
** (pick_reranker, as for the second stage).  0, or the error. */
static int route_rerank(fed *f, rcp_call *c, fq *q, leg *l, int *dm,
                        int *dmo)
{
    const rcp_json *p = call_params(c), *ps, *model;
    int strict, method = -1, rc;
    *dm = *dmo = 0;
    if ((rc = call_bool(c, p, "strict", 1, &strict))
        || (rc = read_federation(c, q))
        || (rc = call_enum(c, p, "method", rr_names, 3, strict, &method))
        || (rc = call_str(c, p, "model", &model)))
        return rc;
    *dm = proto_get(p, "method") && method < 0;
    ps = proto_get(p, "passages") ? proto_get(p, "passages")
        : proto_get(p, "documents");
    if (ps && ps->type == RCP_JSON_ARRAY && f->rr_max
        && (int64_t)ps->n > f->rr_max)   /* §4.7, §15.5: what we advertise */
        return call_fail(c, RCP_INVALID_PARAMS, proto_get(p, "passages")
                         ? "passages" : "documents", NULL, "%lu passages "
                         "exceed rerank.maxCandidates %lld",
                         (unsigned long)ps->n, (long long)f->rr_max);
    if (method >= 0 && !(f->rr_methods & (1u << method))) {
        *dm = 1;                /* §7.6 "method MUST be in rerank.methods" */
        method = -1;
        if ((rc = call_unsupported(c, strict, "method", "not in this "
                                   "federation's rerank.methods")))
            return rc;
    }
    if (model && !model_offered(f, model)) {
        *dmo = 1;
        model = NULL;
        if ((rc = call_unsupported(c, strict, "model", "no reranker of this "
                                   "federation lists it in rerank.models")))
            return rc;
    }
    if (!(l->e = pick_reranker(f, q, method, model)))
        return call_fail(c, RCP_BACKEND_UNAVAILABLE, NULL, NULL, "no "
                         "reranker reachable now (down, or past "
                         "_meta.federation's hop budget)");
    return 0;
}

/* §7.6 rerank through the federation: routed to one reranker (invariant
** 6), its answer relayed as it gave it -- scores and order, or the legacy
** shape (spec/README.md) -- and its error with its code (surface); a
** cancel and the deadline pass through as for retrieve. */
static int m_rerank(void *ud, rcp_call *c)
{
    fed *f = ud;
    fq q;
    leg l;
    rcp_buf b;
    rcp_jw w;
    const rcp_json *meta;
    double dl = call_deadline(c), now = proto_now_ms();
    int dm, dmo, rc;
    memset(&q, 0, sizeof q);
    memset(&l, 0, sizeof l);
    q.fwd_ms = -1;
    if ((rc = route_rerank(f, c, &q, &l, &dm, &dmo)))
        return rc;
    if (dl > 0 && budget(dl, now, &q.fwd_ms, &q.wait_until) != 0)
        return call_fail(c, RCP_TIMEOUT, NULL, NULL, "%.0f ms left: no time "
                         "to forward the rerank", dl - now);
    meta = proto_get(call_params(c), "_meta");
    q.token = meta ? proto_get(meta, "progressToken") : NULL;
    strcpy(l.token, "fed-rr");
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    write_routed_params(&w, f, c, &q, &l, dm, dmo);
    rcp_buf_putc(&b, '\0');
    f->cur = c;
    f->legs = &l;                       /* its progress, relayed */
    f->nlegs = 1;
    leg_issue(f, &l, "rerank", &b);
    rcp_buf_free(&b);
    rc = await_legs(f, q.wait_until, c, &l, 1);
    if (rc || l.state == L_SENT) {
        leg_cancel(l.e, &l, rc == RCP_CANCELLED ? "the federated request "
                   "was cancelled" : "past the federation's deadline");
        rc = rc == RCP_CANCELLED
            ? call_fail(c, rc, NULL, NULL, "cancelled by "
                        "notifications/cancel (and the engine's request "
                        "with it)")
            : call_fail(c, RCP_TIMEOUT, NULL, NULL, "engine %s: past the "
                        "deadline (%.0f ms forwarded)", l.e->id, q.fwd_ms);
    } else if (l.state == L_DONE) {
        rcp_jw_value(call_w(c), l.res);
    } else if (l.err) {
        rc = surface(c, &l);
    } else {
        rc = call_fail(c, l.code, NULL, NULL, "engine %s: %s", l.e->id,
                       l.e->why[0] ? l.e->why : "unavailable");
    }
    if (l.r)
        rcp_request_free(l.e->cl, l.r);
    l.e->active = NULL;
    f->cur = NULL;
    f->legs = NULL;
    f->nlegs = 0;
    return rc;
}

/* MARK: - The backend table and its start ------------------------------- */

static void fed_close(void *ud)
{
    fed *f = ud;
    size_t i;
    if (!f)
        return;
    for (i = 0; i < f->n; i++)      /* all see EOF at once, then each ends */
        if (f->e[i].cl)
            rcp_client_eof(f->e[i].cl);
    for (i = 0; i < f->n; i++)
        engine_close(&f->e[i]);
    for (i = 0; i < f->nfields; i++) {
        rcp_free(f->fname[i]);
        rcp_free(f->ftype[i]);
    }
    rcp_free(f->fname);
    rcp_free(f->ftype);
    rcp_free(f->e);
    rcp_free(f->self);
    rcp_free(f->env_path);
    rcp_free(f);
}

/* retrieve, rerank (routed, when a reranker is reachable) and
** catalog/list: embed and index/add are not offered (README Decisions,
** "Federation (§16)"), so they are -32003. */
static const proto_backend fed_backend = {
    fed_offers,
    fed_partial,
    fed_describe,
    {
        [PROTO_M_RERANK]       = m_rerank,
        [PROTO_M_RETRIEVE]     = m_retrieve,
        [PROTO_M_CATALOG_LIST] = m_catalog_list
    },
    fed_close
};

/* Start every engine and await their initialize together. */
static void start_engines(fed *f)
{
    double end = proto_now_ms() + FED_START_MS;
    size_t i, waiting;
    for (i = 0; i < f->n; i++)
        if (f->e[i].transport != T_LOCAL)
            engine_spawn(f, &f->e[i]);
    for (;;) {
        double now = proto_now_ms();
        for (i = waiting = 0; i < f->n; i++)
            waiting += f->e[i].state == E_STARTING;
        if (!waiting || now >= end)
            break;
        pump_all(f, (int)(end - now) + 1);
    }
    for (i = 0; i < f->n; i++) {
        engine *e = &f->e[i];
        if (e->state == E_STARTING) {
            engine_fail(e, "no answer to initialize in %d ms", FED_START_MS);
            engine_down(e);
        }
        if (e->state == E_DEAD)
            fprintf(stderr, "rcp serve: engine %s: %s\n", e->id, e->why);
    }
}

int federation_open(const char *path, int expose,
                    const rcp_server_opts *local, const proto_backend **be,
                    void **ud, char *err, size_t errlen)
{
    fed *f = rcp_malloc(sizeof *f);
    int with_local = local && local->model;
    *be = NULL;
    *ud = NULL;
    if (!f) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    memset(f, 0, sizeof *f);
    f->expose = expose;
    if (parse_registry(f, path, with_local, err, errlen) != 0)
        goto fail;
    if (derive_identity(f, path) != 0 || startup_path(f) != 0) {
        seterr(err, errlen, "out of memory");
        goto fail;
    }
    if (with_local) {
        engine *e = &f->e[f->n++];
        memset(e, 0, sizeof *e);
        rcp_buf_init(&e->lout);
        rcp_buf_init(&e->rout);
        rcp_arena_init(&e->larena, 0);
        rcp_arena_init(&e->rarena, 0);
        rcp_arena_init(&e->iarena, 0);
        if (engine_local(e, local, err, errlen) != 0)
            goto fail;
    }
    start_engines(f);
    merge_caps(f);
    if (merge_filter(f) != 0) {
        seterr(err, errlen, "out of memory");
        goto fail;
    }
    if (!(f->offers & PROTO_CAP(PROTO_CAP_RETRIEVE)) && !f->in_cycle) {
        seterr(err, errlen, "%s: no engine answered initialize with a "
               "retrieve capability: nothing to federate", path);
        goto fail;
    }
    *be = &fed_backend;
    *ud = f;
    return 0;
fail:
    fed_close(f);
    return -1;
}
