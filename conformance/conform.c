/*
** conform.c -- the RCP/1 conformance suite: `rcp conform -- CMD ARGS...`.
**
** The checks are data (conformance/sNN-*.json, one file per spec section;
** the format is in conformance/README.md) so that implementers in any
** language can run them; the build compiles them in (bundle.c), --checks
** DIR reads a directory instead.  This file is one interpreter of that
** data: it starts the server under test as a stdio subprocess through the
** client (client.c), plays each check's frames, and judges what comes
** back.  The checks that need state or comparisons the data cannot
** express (what results mean, on the suite's corpus.json) are C functions
** named by the check's "code" member and carry the same metadata as every
** other check.  The reports for people and CI are rendered by report.c
** from the JSON report this file writes.
**
** NOTES ON THE DESIGN
**
**   1. Every wait has a deadline.  A check waits for the responses it
**      names, then sends a "barrier" ping and waits for it: a server that
**      answers what it should not (a notification, a duplicate) has done
**      so by the time the barrier's answer arrives, on a server that
**      answers in order, and a short grace period after the barrier
**      catches servers that do not.  A server that does not answer the
**      barrier is wedged: it is killed and the next check gets a new one.
**   2. One server process at a time: the last one is ended (EOF, a
**      deadline, SIGKILL) and reaped before the next starts, so a server
**      that locks a store can be started again.  Checks that change
**      server state ("fresh": true) get their own process; the others
**      share one, initialized in place when a check needs it so.  A
**      server that cannot be tested (it does not start, or answers
**      initialize under another id) ends the run at once (FATAL).
**   2a. Checks write only documents of their own: ids and texts carry
**      the run's nonce ($run), and what a check adds it deletes.
**   3. Every frame of every check is also judged against the rules that
**      hold for all traffic (valid JSON-RPC 2.0, no BOM, no unsolicited
**      notifications, no custom codes in the reserved range...); those
**      "wire" checks report the first offending frame.
**   4. Certification (§14.5): a level is certified when no MUST check at
**      that level or below failed and the level's defining profile check
**      passed.  SHOULD and MAY checks never block it: they show WARN.
*/
#include "../rcp.h"
#include "conform.h"

#include <dirent.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 3000     /* --timeout: a response, a barrier */
#define START_TIMEOUT_MS   20000    /* --start-timeout: a starting server */
#define GRACE_MS           25
#define CLOSE_MS           3000     /* EOF to exit, before a SIGKILL */
#define CLOSE_AFTER_KILL_MS 300     /* ... once a server ignored EOF */
#define MAX_FAILED_STARTS  2
#define MAX_FINDINGS       4        /* spelled out per check */
#define MAX_FILES          64       /* check files */
#define MAX_REPORTS        16       /* servers in one matrix */
#define MAX_NOTED          (4u << 20) /* longer frames sent are not read */
#define SETTLE_MS          2000     /* a write may take this to show */
#define PAGE_K             3        /* page size of the pagination check */
#define MAX_PAGES          8
#define SHOW_BYTES         240     /* of one frame in the human report */
#define SHOW_LINES         6       /* frames shown there */
#define KEEP_FRAME         8192    /* longer frames are kept truncated */
#define KEEP_FRAMES        64      /* frames kept per check */
#define STDERR_TAIL        600

enum { ST_PASS, ST_FAIL, ST_SKIP, ST_WARN };
static const char *const status_name[] = { "PASS", "FAIL", "SKIP", "WARN" };

/* MARK: - Types ---------------------------------------------------------- */

/* A document of the suite's corpus (corpus.json) as added to a server. */
typedef struct cdoc {
    char            id[64];  /* conform-<run>-<key> */
    const rcp_json *doc;     /* its entry in corpus.json */
    const rcp_json *meta;    /* the meta sent: the filter's ground truth */
} cdoc;

typedef struct check {
    const rcp_json *j;
    const char *id, *level, *keyword, *section, *file;
    int         lvl;         /* 0, 1, 2 */
    int         must;        /* MUST, MUST NOT, REQUIRED, SHALL (NOT) */
    int         defines;     /* -1, or the level this profile defines */
    int         status;
    int         ran;         /* judged (its line is printed) */
    double      ms;          /* how long it took */
    /* Why it did not pass, as the report shows it: a reason in words and
    ** the evidence as JSON texts (a frame array, an expectation, a frame
    ** array, the server's fate), each empty when there is none. */
    rcp_buf     why, sent, expected, got, server;
} check;

/* A violation of a rule that holds for all traffic (invariant 3). */
typedef struct wire_rule {
    const char *code;        /* the "code" name of its check */
    int         seen;
    rcp_buf     example;     /* the reason */
    rcp_buf     frame;       /* the first offending frame, a JSON array */
} wire_rule;

enum { W_JSON, W_BOM, W_JSONRPC, W_XOR, W_ERROBJ, W_RANGE, W_RESULT,
       W_LOG, W_PROGRESS, W_STDERR, W_INTSTR, W_CONTENT, W_SCHEMA,
       W_SCHEMA_NOTES, W_HTTP_STATUS, W_SSE, W_COUNT };

/* A request the suite wrote, so that its response can be judged by the
** schema of its method (JSON-RPC correlates by id only). */
typedef struct sent_req {
    const rcp_json *id;
    const char     *method;  /* NUL-terminated copy */
    int             legacy;  /* rerank with "documents" (spec/README.md) */
} sent_req;

typedef struct runner {
    char      **cmd;
    const char *url;         /* --http URL: the server is there (§5.2) */
    const char *headers[17]; /* --header lines, NULL-terminated */
    size_t      nheaders;
    const char *dir, *only;
    int         json, coverage, max_level, verbose, quiet;
    int         silent;      /* a matrix's run under --json: no output */
    int         tmo;         /* ms to wait for a response (--timeout) */
    int         start_tmo;   /* ms a starting server has to answer */
    char        run[16];     /* this run's nonce, "$run" in the data */
    /* the data */
    rcp_arena   data;
    char      **texts;       /* file contents the trees point into */
    size_t      ntexts;
    check      *checks;
    size_t      n, cap;
    /* the server: one process at a time (invariant 2) */
    rcp_client *cur;
    int         cur_init;    /* cur is initialized */
    int         starts;      /* servers started */
    int         failed_starts; /* in a row */
    int         close_ms;    /* how long end_session waits for an exit */
    int         corpus_loaded; /* cur holds the suite's corpus */
    int         corpus_used;   /* some server got it: delete at the end */
    const rcp_json *corpus;  /* corpus.json, or NULL */
    struct { const char *name; const rcp_json *root; } files[MAX_FILES];
    size_t      nfiles;      /* the check files, in section order */
    /* reports (report.c) */
    int         want_report; /* keep the JSON report in report */
    rcp_buf     report;
    const char *junit, *html;
    const char *from[MAX_REPORTS];   /* --report FILE ... */
    size_t      nfrom;
    int         matrix;      /* --matrix: CMD1 ::: CMD2 ... */
    cdoc       *docs;
    size_t      ndocs;
    rcp_arena   tok_arena;   /* the progress tokens sent to cur (§9) */
    const rcp_json **toks;
    size_t      ntoks, captoks;
    int         log_asked;   /* §7.1 cur was asked for logs: log in
                                initialize's capabilities, or a request's
                                _meta.logLevel (the s17 checks) */
    rcp_arena   req_arena;   /* the requests since the last wire scan */
    sent_req   *reqs;
    size_t      nreqs, capreqs;
    rcp_arena   probe;
    const rcp_json *init_result, *info_pre, *info_post, *caps;
    const char *declared;
    rcp_buf     fatal;       /* why the run could not go on, or empty */
    check       fatal_ev;    /* ... and its evidence */
    rcp_buf     metrics;     /* the first session's client metrics */
    wire_rule   wire[W_COUNT];
    unsigned    barrier;
    rcp_conform_io io;
    rcp_buf     out;         /* the report */
    double      t0;          /* when the run began */
    /* the check being run */
    rcp_client *cc;          /* its server */
    const rcp_client *sse_client;  /* whose SSE faults were counted */
    uint64_t    sse_bad;     /* ... so far */
    rcp_buf     sent;        /* bytes written */
    int         aborted;     /* a step failed: the server is gone */
} runner;

/* One message received during a check. */
typedef struct msg {
    const rcp_json *j;
    int             in_array;
    size_t          line;
    int             used;
} msg;

typedef struct got {
    msg   *v;
    size_t n, cap;
} got;

/* MARK: - Small helpers -------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int left_ms(double end)
{
    double l = end - now_ms();
    return l <= 0 ? 0 : (int)l + 1;
}

static void buf_printf(rcp_buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        rcp_buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n
                    : sizeof tmp - 1);
}

/* Printable, bounded: control bytes and non-ASCII as \xHH. */
static void buf_show(rcp_buf *b, const char *p, size_t n, size_t max)
{
    size_t i;
    for (i = 0; i < n && i < max; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\n')
            rcp_buf_puts(b, "\\n");
        else if (ch < 0x20 || ch >= 0x7f)
            buf_printf(b, "\\x%02X", ch);
        else
            rcp_buf_putc(b, (char)ch);
    }
    if (n > max)
        buf_printf(b, "... (%lu bytes)", (unsigned long)n);
}

static void buf_json(rcp_buf *b, const rcp_json *v, size_t max)
{
    rcp_buf t;
    rcp_jw w;
    if (!v) {
        rcp_buf_puts(b, "(absent)");
        return;
    }
    rcp_buf_init(&t);
    rcp_jw_init(&w, &t);
    rcp_jw_value(&w, v);
    buf_show(b, t.data, t.len, max);
    rcp_buf_free(&t);
}

static const char *cstr(const rcp_json *v, const char *dflt)
{
    /* data strings are NUL-free and were copied NUL-terminated (load) */
    return v && v->type == RCP_JSON_STRING ? v->s : dflt;
}

static int jbool(const rcp_json *v, int dflt)
{
    if (!v)
        return dflt;
    return v->type == RCP_JSON_TRUE;
}

static long jlong(const rcp_json *v, long dflt)
{
    int64_t x;
    return v && rcp_json_int(v, &x) ? (long)x : dflt;
}

/* Is needle[0..k) in p[0..n)?  (memmem is not C99.) */
static int has_bytes(const char *p, size_t n, const char *needle, size_t k)
{
    size_t i;
    for (i = 0; k && i + k <= n; i++)
        if (p[i] == needle[0] && memcmp(p + i, needle, k) == 0)
            return 1;
    return 0;
}


/* A copy of v that lives in arena a (v may live in a frame log that is
** about to be cleared).  NULL for NULL or out of memory. */
static const rcp_json *keep_in(rcp_arena *a, const rcp_json *v)
{
    rcp_buf b;
    rcp_jw w;
    rcp_json_err err;
    char *copy;
    const rcp_json *r = NULL;
    if (!v)
        return NULL;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_value(&w, v);
    copy = b.oom ? NULL : rcp_arena_alloc(a, b.len + 1);
    if (copy) {
        memcpy(copy, b.data, b.len);
        r = rcp_json_parse(a, copy, b.len, 0, &err);
    }
    rcp_buf_free(&b);
    return r;
}

static int level_of(const char *s)
{
    if (s && s[0] == 'L' && s[1] >= '0' && s[1] <= '2' && !s[2])
        return s[1] - '0';
    return -1;
}

/* MARK: - JSON: pointers and equality ------------------------------------ */

/* RFC 6901 JSON pointer; NULL when the path does not exist. */
static const rcp_json *jptr(const rcp_json *v, const char *p)
{
    while (v && *p == '/') {
        char tok[256];
        size_t n = 0;
        p++;
        while (*p && *p != '/' && n + 1 < sizeof tok) {
            if (p[0] == '~' && p[1] == '1')
                tok[n++] = '/', p += 2;
            else if (p[0] == '~' && p[1] == '0')
                tok[n++] = '~', p += 2;
            else
                tok[n++] = *p++;
        }
        tok[n] = '\0';
        if (v->type == RCP_JSON_OBJECT) {
            v = rcp_json_get(v, tok);
        } else if (v->type == RCP_JSON_ARRAY) {
            char *end;
            unsigned long i = strtoul(tok, &end, 10);
            v = (*end || !n || i >= v->n) ? NULL : &v->kids[i];
        } else {
            v = NULL;
        }
    }
    return v;
}

static int json_equal(const rcp_json *a, const rcp_json *b);

/* Objects compare as maps: the same names, each with an equal value
** (the last one when a name repeats, as everywhere in rcp). */
static int object_equal(const rcp_json *a, const rcp_json *b)
{
    size_t i, na = 0, nb = 0;
    char key[512];
    for (i = 0; i < a->n; i++) {
        const rcp_json *k = &a->kids[i];
        if (k->keylen >= sizeof key || memchr(k->key, 0, k->keylen))
            return 0;
        memcpy(key, k->key, k->keylen);
        key[k->keylen] = '\0';
        if (rcp_json_get(a, key) != k)
            continue;                    /* an earlier duplicate */
        na++;
        if (!json_equal(k, rcp_json_get(b, key)))
            return 0;
    }
    for (i = 0; i < b->n; i++) {
        const rcp_json *k = &b->kids[i];
        if (k->keylen >= sizeof key)
            return 0;
        memcpy(key, k->key, k->keylen);
        key[k->keylen] = '\0';
        nb += rcp_json_get(b, key) == k;
    }
    return na == nb;
}

static int json_equal(const rcp_json *a, const rcp_json *b)
{
    size_t i;
    if (!a || !b)
        return 0;
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case RCP_JSON_NUMBER:
    case RCP_JSON_STRING:
        return rcp_id_equal(a, b);    /* exact decimal value / bytes */
    case RCP_JSON_ARRAY:
        if (a->n != b->n)
            return 0;
        for (i = 0; i < a->n; i++)
            if (!json_equal(&a->kids[i], &b->kids[i]))
                return 0;
        return 1;
    case RCP_JSON_OBJECT:
        return object_equal(a, b);
    default:
        return 1;
    }
}

static const char *type_name(const rcp_json *v)
{
    static const char *const names[] = { "null", "boolean", "boolean",
        "number", "string", "array", "object" };
    return v ? names[v->type] : "absent";
}

/* MARK: - Data: loading -------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    rcp_buf b;
    char tmp[65536];
    size_t n;
    if (!f)
        return NULL;
    rcp_buf_init(&b);
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        rcp_buf_put(&b, tmp, n);
    fclose(f);
    rcp_buf_putc(&b, '\0');
    if (b.oom) {
        rcp_buf_free(&b);
        return NULL;
    }
    *len = b.len - 1;
    return b.data;
}

/* Parse a file into the data arena.  Metadata strings are used as C
** strings: the parser gives them unterminated, so each is copied with a
** NUL after it (a value may hold NULs too; those are compared by length).
** "$run" inside a string becomes this run's nonce, so the documents and
** ids a check writes are its own even on a store that outlives runs. */
static int terminate_strings(runner *R, rcp_json *v)
{
    size_t i;
    if (v->type == RCP_JSON_STRING) {
        rcp_buf b;
        char *s;
        rcp_buf_init(&b);
        for (i = 0; i < v->n; i++)
            if (i + 4 <= v->n && memcmp(v->s + i, "$run", 4) == 0) {
                rcp_buf_puts(&b, R->run);
                i += 3;
            } else {
                rcp_buf_putc(&b, v->s[i]);
            }
        s = b.oom ? NULL : rcp_arena_alloc(&R->data, b.len + 1);
        if (s) {
            if (b.len)
                memcpy(s, b.data, b.len);
            s[b.len] = '\0';
            v->s = s;
            v->n = b.len;
        }
        rcp_buf_free(&b);
        if (!s)
            return -1;
    }
    if (v->type == RCP_JSON_ARRAY || v->type == RCP_JSON_OBJECT)
        for (i = 0; i < v->n; i++)
            if (terminate_strings(R, &v->kids[i]) != 0)
                return -1;
    return 0;
}

/* Parse one data file (text lives as long as the run) into the data
** arena; name is for messages. */
static const rcp_json *parse_data(runner *R, const char *name,
                                  const char *text, size_t len)
{
    rcp_json_err err;
    const rcp_json *root = rcp_json_parse(&R->data, text, len, 0, &err);
    if (!root) {
        fprintf(stderr, "rcp conform: %s: error at byte %lu: %s\n", name,
                (unsigned long)err.offset, err.msg);
        return NULL;
    }
    if (terminate_strings(R, (rcp_json *)root) != 0) {
        fprintf(stderr, "rcp conform: %s: out of memory\n", name);
        return NULL;
    }
    return root;
}

static const rcp_json *load_json(runner *R, const char *path)
{
    size_t len;
    char *text = read_file(path, &len), **t;
    if (!text) {
        fprintf(stderr, "rcp conform: cannot read %s\n", path);
        return NULL;
    }
    t = rcp_realloc(R->texts, (R->ntexts + 1) * sizeof *t);
    if (!t) {
        rcp_free(text);
        return NULL;
    }
    R->texts = t;
    R->texts[R->ntexts++] = text;
    return parse_data(R, path, text, len);
}

static char *path_join(const char *dir, const char *name);

/* A data file by base name: from --checks DIR when given, else the copy
** the build compiled in (conformance/bundle.c), so the suite runs from
** any directory. */
static const rcp_json *data_file(runner *R, const char *name)
{
    const rcp_bundled_file *f;
    char *path;
    const rcp_json *root;
    if (R->dir) {
        path = path_join(R->dir, name);
        root = path ? load_json(R, path) : NULL;
        rcp_free(path);
        return root;
    }
    if (!(f = rcp_bundled_find(name))) {
        fprintf(stderr, "rcp conform: %s is not in the bundled data\n", name);
        return NULL;
    }
    return parse_data(R, name, f->data, f->len);
}

/* A check file: sNN-*.json (corpus.json, coverage.json and the schema
** are data of another kind). */
static int is_check_file(const char *name)
{
    size_t n = strlen(name);
    return name[0] == 's' && n > 6 && name[1] >= '0' && name[1] <= '9'
        && strcmp(name + n - 5, ".json") == 0;
}

static int is_must(const char *kw)
{
    return strcmp(kw, "MUST") == 0 || strcmp(kw, "MUST NOT") == 0
        || strcmp(kw, "REQUIRED") == 0 || strcmp(kw, "SHALL") == 0
        || strcmp(kw, "SHALL NOT") == 0;
}

static int add_check(runner *R, const rcp_json *j, const char *file)
{
    check *k;
    size_t i;
    if (R->n == R->cap) {
        size_t cap = R->cap ? R->cap * 2 : 128;
        check *v = rcp_realloc(R->checks, cap * sizeof *v);
        if (!v)
            return -1;
        R->checks = v;
        R->cap = cap;
    }
    k = &R->checks[R->n];
    memset(k, 0, sizeof *k);
    k->j = j;
    k->file = file;
    k->id = cstr(rcp_json_get(j, "id"), NULL);
    k->level = cstr(rcp_json_get(j, "level"), "");
    k->keyword = cstr(rcp_json_get(j, "keyword"), "");
    k->section = cstr(rcp_json_get(j, "section"), "");
    k->lvl = level_of(k->level);
    k->must = is_must(k->keyword);
    k->defines = level_of(cstr(rcp_json_get(j, "defines"), ""));
    rcp_buf_init(&k->why);
    if (!k->id || k->lvl < 0 || !*k->keyword || !*k->section) {
        fprintf(stderr, "rcp conform: %s: a check lacks id, level, keyword "
                "or section\n", file);
        return -1;
    }
    for (i = 0; i < R->n; i++)
        if (strcmp(R->checks[i].id, k->id) == 0) {
            fprintf(stderr, "rcp conform: %s: duplicate check id %s\n",
                    file, k->id);
            return -1;
        }
    R->n++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json files of dir, sorted (section order: s04 < s05 < ...). */
static size_t list_files(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **v = NULL;
    size_t n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char **nv;
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        nv = rcp_realloc(v, (n + 1) * sizeof *v);
        if (!nv)
            break;
        v = nv;
        v[n] = rcp_malloc(len + 1);
        if (!v[n])
            break;
        memcpy(v[n++], e->d_name, len + 1);
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, by_name);
    *out = v;
    return n;
}

static int access_ok(const char *dir, const char *name);

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = rcp_malloc(a + b + 2);
    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

static int access_ok(const char *dir, const char *name)
{
    char *path = path_join(dir, name);
    int ok = path && access(path, R_OK) == 0;
    rcp_free(path);
    return ok;
}

/* The names of the check files, sorted (section order: s04 < s05 <
** ...): DIR's, or the bundled ones. */
static size_t check_names(runner *R, char ***out)
{
    const rcp_bundled_file *f;
    size_t n, i, k = 0;
    char **v;
    if (R->dir)
        return list_files(R->dir, out);
    f = rcp_bundled_files(&n);
    v = rcp_malloc((n + 1) * sizeof *v);
    for (i = 0; v && i < n; i++)
        if (is_check_file(f[i].name) && (v[k] = rcp_malloc(strlen(f[i].name)
                                                           + 1)) != NULL)
            memcpy(v[k++], f[i].name, strlen(f[i].name) + 1);
    *out = v;
    return k;
}

/* Load every check file, and the corpus. */
static int load_checks(runner *R)
{
    char **names = NULL;
    size_t n = check_names(R, &names), i, j;
    int rc = 0;
    for (i = 0; i < n; i++) {
        const rcp_json *root, *cs;
        char *file;
        if (!is_check_file(names[i]))
            continue;
        root = data_file(R, names[i]);
        cs = root ? rcp_json_get(root, "checks") : NULL;
        if (!root)
            rc = -1;
        if (cs && cs->type == RCP_JSON_ARRAY) {
            file = rcp_arena_alloc(&R->data, strlen(names[i]) + 1);
            if (file)
                memcpy(file, names[i], strlen(names[i]) + 1);
            if (file && R->nfiles < MAX_FILES) {
                R->files[R->nfiles].name = file;
                R->files[R->nfiles++].root = root;
            }
            for (j = 0; j < cs->n && rc == 0; j++)
                rc = add_check(R, &cs->kids[j], file ? file : "?");
        }
    }
    for (i = 0; i < n; i++)
        rcp_free(names[i]);
    rcp_free(names);
    if (rc == 0 && (!R->dir || access_ok(R->dir, "corpus.json")))
        R->corpus = data_file(R, "corpus.json");
    if (rc == 0 && R->n == 0) {
        fprintf(stderr, "rcp conform: no checks found in %s\n",
                R->dir ? R->dir : "the bundled data");
        rc = -1;
    }
    return rc;
}

/* MARK: - Data: writing frames ------------------------------------------- */

/* "$capkey:/pointer": the first name of the object (or the first string
** of the array) at pointer in the capabilities, e.g. an advertised filter
** field whether filter.fields is a list or a map. */
static int write_capkey(runner *R, rcp_jw *w, const char *ptr)
{
    const rcp_json *c = R->caps ? jptr(R->caps, ptr) : NULL;
    if (c && c->type == RCP_JSON_OBJECT && c->n > 0) {
        rcp_jw_str(w, c->kids[0].key, c->kids[0].keylen);
        return 0;
    }
    if (c && c->type == RCP_JSON_ARRAY && c->n > 0
        && c->kids[0].type == RCP_JSON_STRING) {
        rcp_jw_value(w, &c->kids[0]);
        return 0;
    }
    return -1;
}

/* "$capkeywhere:/pointer=value": the first name at pointer whose value is
** the string value, e.g. an advertised filter field of type int. */
static int write_capkey_where(runner *R, rcp_jw *w, const char *spec)
{
    char ptr[256];
    const char *eq = strchr(spec, '=');
    const rcp_json *c;
    size_t i;
    if (!eq || (size_t)(eq - spec) >= sizeof ptr)
        return -1;
    memcpy(ptr, spec, (size_t)(eq - spec));
    ptr[eq - spec] = '\0';
    c = R->caps ? jptr(R->caps, ptr) : NULL;
    for (i = 0; c && c->type == RCP_JSON_OBJECT && i < c->n; i++)
        if (rcp_json_streq(&c->kids[i], eq + 1)) {
            rcp_jw_str(w, c->kids[i].key, c->kids[i].keylen);
            return 0;
        }
    return -1;
}

static int write_value(runner *R, rcp_jw *w, const rcp_json *v, long n);

/* {"$array": {"count": N or "$cap:/p", "plus": k, "item": V}}: an array
** of count + k copies of V, e.g. one input more than embed.batchLimit;
** "$n" in V is the element's number 1, 2, ... */
static int write_array(runner *R, rcp_jw *w, const rcp_json *spec)
{
    const rcp_json *cnt = rcp_json_get(spec, "count");
    const rcp_json *item = rcp_json_get(spec, "item");
    int64_t count = 0;
    long i, total;
    if (cnt && cnt->type == RCP_JSON_STRING && strncmp(cnt->s, "$cap:", 5)
        == 0)
        cnt = R->caps ? jptr(R->caps, cnt->s + 5) : NULL;
    if (!cnt || !item || !rcp_json_int(cnt, &count) || count < 0
        || count > 1000000)
        return -1;
    total = (long)count + jlong(rcp_json_get(spec, "plus"), 0);
    rcp_jw_arr(w);
    for (i = 0; i < total; i++)
        if (write_value(R, w, item, i + 1) != 0)
            return -1;
    rcp_jw_arr_end(w);
    return 0;
}

/* A string with each "$n" replaced by the counter n (n >= 0). */
static void write_counted(rcp_jw *w, const rcp_json *v, long n)
{
    rcp_buf b;
    size_t i;
    rcp_buf_init(&b);
    for (i = 0; i < v->n; i++)
        if (i + 2 <= v->n && v->s[i] == '$' && v->s[i + 1] == 'n') {
            buf_printf(&b, "%ld", n);
            i++;
        } else {
            rcp_buf_putc(&b, v->s[i]);
        }
    rcp_jw_str(w, b.data ? b.data : "", b.len);
    rcp_buf_free(&b);
}

/* {"$from": {"id": X, "pointer": P}}: the value at P of the response to
** the request with id X in this check, e.g. the ids index/add minted, for
** the cleanup that deletes them. */
static int write_from(runner *R, rcp_jw *w, const rcp_json *spec)
{
    const rcp_frame *f;
    size_t nf = R->cc ? rcp_client_frames(R->cc, &f) : 0, i, k;
    const rcp_json *id = rcp_json_get(spec, "id");
    const char *ptr = cstr(rcp_json_get(spec, "pointer"), "");
    for (i = 0; i < nf; i++) {
        const rcp_json *r = f[i].root;
        size_t nm = r && r->type == RCP_JSON_ARRAY ? r->n : 1;
        for (k = 0; r && k < nm; k++) {
            const rcp_json *m = r->type == RCP_JSON_ARRAY ? &r->kids[k] : r;
            const rcp_json *v = jptr(m, ptr);
            if (m->type == RCP_JSON_OBJECT && !rcp_json_get(m, "method")
                && rcp_id_equal(rcp_json_get(m, "id"), id) && v) {
                rcp_jw_value(w, v);
                return 0;
            }
        }
    }
    return -1;
}

/* Serialise a data value, replacing "$cap:/pointer" by the server's
** capability value, "$capkey:/pointer" by a name found there, "$n" by the
** generator's counter n (a number when it is the whole string), $array
** and $from.  -1 when a reference is not advertised or not there. */
static int write_value(runner *R, rcp_jw *w, const rcp_json *v, long n)
{
    size_t i;
    if (v->type == RCP_JSON_STRING && strncmp(v->s, "$cap:", 5) == 0) {
        const rcp_json *c = R->caps ? jptr(R->caps, v->s + 5) : NULL;
        if (!c)
            return -1;
        rcp_jw_value(w, c);
        return 0;
    }
    if (v->type == RCP_JSON_STRING && strncmp(v->s, "$capkey:", 8) == 0)
        return write_capkey(R, w, v->s + 8);
    if (v->type == RCP_JSON_STRING
        && strncmp(v->s, "$capkeywhere:", 13) == 0)
        return write_capkey_where(R, w, v->s + 13);
    if (v->type == RCP_JSON_OBJECT && v->n == 1
        && rcp_json_get(v, "$array"))
        return write_array(R, w, rcp_json_get(v, "$array"));
    if (v->type == RCP_JSON_OBJECT && v->n == 1 && rcp_json_get(v, "$from"))
        return write_from(R, w, rcp_json_get(v, "$from"));
    if (v->type == RCP_JSON_STRING && strcmp(v->s, "$n") == 0 && n >= 0) {
        rcp_jw_int(w, n);
        return 0;
    }
    if (v->type == RCP_JSON_STRING && n >= 0 && strstr(v->s, "$n")) {
        write_counted(w, v, n);
        return 0;
    }
    if (v->type == RCP_JSON_ARRAY || v->type == RCP_JSON_OBJECT) {
        int rc = 0;
        if (v->type == RCP_JSON_ARRAY)
            rcp_jw_arr(w);
        else
            rcp_jw_obj(w);
        for (i = 0; i < v->n && rc == 0; i++) {
            if (v->type == RCP_JSON_OBJECT)
                rcp_jw_keyn(w, v->kids[i].key, v->kids[i].keylen);
            rc = write_value(R, w, &v->kids[i], n);
        }
        if (v->type == RCP_JSON_ARRAY)
            rcp_jw_arr_end(w);
        else
            rcp_jw_obj_end(w);
        return rc;
    }
    rcp_jw_value(w, v);
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* "bytes": a string in which \xHH stands for one raw byte, so the data
** can carry invalid UTF-8 and raw control bytes. */
static void put_bytes(rcp_buf *b, const char *s)
{
    while (*s) {
        if (s[0] == '\\' && s[1] == 'x' && hexval(s[2]) >= 0
            && hexval(s[3]) >= 0) {
            rcp_buf_putc(b, (char)(hexval(s[2]) * 16 + hexval(s[3])));
            s += 4;
        } else {
            rcp_buf_putc(b, *s++);
        }
    }
}

/* The bytes of one "send" step (not pause/await/eof).  -1 on bad data. */
static int step_bytes(runner *R, const rcp_json *st, rcp_buf *b)
{
    const rcp_json *v;
    rcp_jw w;
    int nl = jbool(rcp_json_get(st, "nl"), 1);
    if ((v = rcp_json_get(st, "json")) != NULL) {
        rcp_jw_init(&w, b);
        if (write_value(R, &w, v, -1) != 0)
            return -1;
    } else if ((v = rcp_json_get(st, "text")) != NULL) {
        rcp_buf_puts(b, cstr(v, ""));
    } else if ((v = rcp_json_get(st, "bytes")) != NULL) {
        put_bytes(b, cstr(v, ""));
    } else if ((v = rcp_json_get(st, "fill")) != NULL) {
        long count = jlong(rcp_json_get(v, "count"), 0), i;
        const char *ch = cstr(rcp_json_get(v, "byte"), "a");
        rcp_buf_puts(b, cstr(rcp_json_get(v, "before"), ""));
        if (rcp_buf_reserve(b, (size_t)count) != 0)
            return -1;
        for (i = 0; i < count; i++)
            b->data[b->len++] = ch[0];
        rcp_buf_puts(b, cstr(rcp_json_get(v, "after"), ""));
    } else if ((v = rcp_json_get(st, "generate")) != NULL) {
        long count = jlong(rcp_json_get(v, "count"), 0), i;
        const rcp_json *frame = rcp_json_get(v, "frame");
        int batch = jbool(rcp_json_get(v, "batch"), 0);
        if (!frame)
            return -1;
        if (batch)
            rcp_buf_putc(b, '[');
        for (i = 1; i <= count; i++) {
            if (batch && i > 1)
                rcp_buf_putc(b, ',');
            rcp_jw_init(&w, b);
            if (write_value(R, &w, frame, i) != 0)
                return -1;
            if (!batch && i < count)
                rcp_buf_putc(b, '\n');
        }
        if (batch)
            rcp_buf_putc(b, ']');
    } else {
        return -1;
    }
    if (nl)
        rcp_buf_putc(b, '\n');
    return b->oom ? -1 : 0;
}

/* MARK: - Sessions (invariant 2) ----------------------------------------- */

static const char init_params[] =
    "{\"protocolVersion\":1,\"client\":{\"name\":\"rcp-conform\","
    "\"version\":\"" RCP_VERSION "\"},\"capabilities\":{}}";

static void wire_scan(runner *R, rcp_client *c, const char *check_id);
static void stderr_scan(runner *R, rcp_client *c, const char *check_id);
static void note_sent(runner *R, const char *p, size_t n);

/* A request the suite made through the client, written down as evidence
** exactly as the client framed it. */
static void record_call(runner *R, rcp_request *r, const char *method,
                        const char *params)
{
    size_t n;
    const char *id = rcp_request_id(r, &n);
    size_t at = R->sent.len;
    rcp_buf_puts(&R->sent, "{\"jsonrpc\":\"2.0\",\"id\":");
    rcp_buf_put(&R->sent, id, n);
    rcp_buf_puts(&R->sent, ",\"method\":");
    rcp_buf_putc(&R->sent, '"');
    rcp_buf_puts(&R->sent, method);
    rcp_buf_putc(&R->sent, '"');
    if (params) {
        rcp_buf_puts(&R->sent, ",\"params\":");
        rcp_buf_puts(&R->sent, params);
    }
    rcp_buf_puts(&R->sent, "}\n");
    if (!R->sent.oom)
        note_sent(R, R->sent.data + at, R->sent.len - at);
}

static rcp_client *spawn(runner *R, rcp_buf *why)
{
    rcp_client_opts o;
    char err[256];
    rcp_client *c;
    memset(&o, 0, sizeof o);
    o.err = RCP_STDERR_CAPTURE;
    o.keep_frames = 1;
    err[0] = '\0';
    R->starts++;
    if (R->url) {
        /* the shared session asks for SSE, so §9's progress arrives as
        ** it does over stdio; the §5.2 checks make their own clients */
        o.headers = R->headers;
        o.sse = 1;
        c = rcp_client_connect(R->url, &o, err, sizeof err);
        if (!c && why)
            buf_printf(why, "cannot reach the server: %s", err);
        return c;
    }
    c = R->io.spawn ? R->io.spawn(R->io.ud, &o, err, sizeof err)
        : rcp_client_spawn(R->cmd, &o, err, sizeof err);
    if (!c && why)
        buf_printf(why, "cannot start the server: %s", err);
    return c;
}

/* Wait up to ms for r: 1 answered, 0 not in time, -1 the server went
** away, -2 it answered with an id that pairs with nothing (1 echoed as
** "1"): it will never answer r, so there is no point waiting. */
static int await_own(rcp_client *c, rcp_request *r, int ms)
{
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    uint64_t stray = m->batch_unknown_id_response + m->bad_id_type;
    double end = now_ms() + ms;
    for (;;) {
        if (rcp_request_state_get(r) == RCP_REQ_DONE)
            return 1;
        if (m->batch_unknown_id_response + m->bad_id_type != stray)
            return -2;
        if (rcp_request_state_get(r) == RCP_REQ_ABANDONED
            || !rcp_client_alive(c))
            return -1;
        if (left_ms(end) == 0)
            return 0;
        (void)rcp_client_pump(c, left_ms(end));
    }
}

/* Send method on c and wait start_tmo (a server may be slow to start);
** the request, or NULL with the reason in why. */
static rcp_request *start_call(runner *R, rcp_client *c, const char *method,
                               const char *params, rcp_buf *why)
{
    rcp_request *r = rcp_client_request(c, method, params, 0);
    size_t n;
    const char *id;
    int rc;
    if (!r) {
        buf_printf(why, "could not send %s: the server is gone", method);
        return NULL;
    }
    id = rcp_request_id(r, &n);
    record_call(R, r, method, params);
    if ((rc = await_own(c, r, R->start_tmo)) == 1)
        return r;
    if (rc == -1)
        buf_printf(why, "the server exited before answering %s (id %.*s)",
                   method, (int)n, id);
    else if (rc == -2)
        buf_printf(why, "the server answered %s (id %.*s) under another id "
                   "(§4.7: the id MUST be echoed unchanged)", method,
                   (int)n, id);
    else
        buf_printf(why, "%s (id %.*s) was not answered within %d ms "
                   "(--start-timeout)", method, (int)n, id, R->start_tmo);
    rcp_request_free(c, r);
    return NULL;
}

/* initialize on c; 0, or -1 with the reason in why. */
static int initialize(runner *R, rcp_client *c, rcp_buf *why)
{
    rcp_request *r = start_call(R, c, "initialize", init_params, why);
    int code, rc = -1;
    if (!r)
        return -1;
    if (rcp_request_error(r, &code))
        buf_printf(why, "initialize failed with error %d", code);
    else
        rc = 0;
    rcp_request_free(c, r);
    return rc;
}

/* End c and wait for it: EOF, up to close_ms for the server to exit, then
** SIGKILL.  The next server starts only once this one is gone, so a
** server that keeps a store (rcp serve --data DIR) finds it free. */
static void end_session(runner *R, rcp_client *c, const char *check_id)
{
    if (!c)
        return;
    stderr_scan(R, c, check_id);
    wire_scan(R, c, check_id);
    if (rcp_client_close(c, R->close_ms) == -1)
        R->close_ms = CLOSE_AFTER_KILL_MS;   /* it ignores EOF: don't wait */
}

static void drop_cur(runner *R)
{
    end_session(R, R->cur, "(shared session)");
    R->cur = NULL;
    R->cur_init = 0;
    R->corpus_loaded = 0;
    R->ntoks = 0;
    R->log_asked = 0;
    rcp_arena_reset(&R->tok_arena);
}

/* A server in the state the check needs; NULL with why on failure.  An
** uninitialized server is initialized in place when a check needs one;
** a fresh or uninitialized one needs a new process. */
static rcp_client *session_for(runner *R, int init, int fresh, rcp_buf *why)
{
    if (R->cur && (fresh || !rcp_client_alive(R->cur)
                   || (R->cur_init && !init)))
        drop_cur(R);
    if (!R->cur) {
        if (R->failed_starts >= MAX_FAILED_STARTS) {
            rcp_buf_puts(why, "not run: the server stopped starting");
            return NULL;
        }
        if (!(R->cur = spawn(R, why))) {
            R->failed_starts++;
            return NULL;
        }
    }
    if (init && !R->cur_init) {
        R->sent.len = 0;
        if (initialize(R, R->cur, why) != 0) {
            R->failed_starts++;
            drop_cur(R);
            return NULL;
        }
        R->sent.len = 0;
        wire_scan(R, R->cur, "(initialize)");
        R->cur_init = 1;
    }
    R->failed_starts = 0;
    return R->cur;
}

/* MARK: - Receiving ------------------------------------------------------ */

static int add_msg(got *g, const rcp_json *j, int in_array, size_t line)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 32;
        msg *v = rcp_realloc(g->v, cap * sizeof *v);
        if (!v)
            return -1;
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n].j = j;
    g->v[g->n].in_array = in_array;
    g->v[g->n].line = line;
    g->v[g->n].used = 0;
    g->n++;
    return 0;
}

static int is_barrier(const rcp_json *m)
{
    const rcp_json *id = rcp_json_get(m, "id");
    return id && id->type == RCP_JSON_STRING && id->n > 20
        && memcmp(id->s, "rcp-conform-barrier-", 20) == 0;
}

static int is_response(const rcp_json *m)
{
    return m->type == RCP_JSON_OBJECT && !rcp_json_get(m, "method");
}

/* The responses received so far (barrier answers left out); with notes,
** the notifications instead. */
static void collect(rcp_client *c, got *g, int notes)
{
    const rcp_frame *f;
    size_t nf = rcp_client_frames(c, &f), i, k;
    g->n = 0;
    for (i = 0; i < nf; i++) {
        const rcp_json *r = f[i].root;
        if (!r)
            continue;
        if (r->type == RCP_JSON_ARRAY) {
            for (k = 0; k < r->n; k++)
                if (!notes && is_response(&r->kids[k])
                    && !is_barrier(&r->kids[k]))
                    add_msg(g, &r->kids[k], 1, i);
        } else if (notes ? !is_response(r)
                   : (is_response(r) && !is_barrier(r))) {
            add_msg(g, r, 0, i);
        }
    }
}

static int has_response_id(rcp_client *c, const rcp_json *id)
{
    got g;
    size_t i;
    int found = 0;
    memset(&g, 0, sizeof g);
    collect(c, &g, 0);
    for (i = 0; i < g.n && !found; i++)
        found = rcp_id_equal(rcp_json_get(g.v[i].j, "id"), id);
    rcp_free(g.v);
    return found;
}

/* Send a barrier ping and wait for its answer (invariant 1). */
static int barrier(runner *R, rcp_client *c, int timeout_ms)
{
    char frame[128], id[64];
    const rcp_frame *f;
    double end = now_ms() + timeout_ms;
    size_t i, nf;
    sprintf(id, "\"rcp-conform-barrier-%u\"", ++R->barrier);
    sprintf(frame, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}\n",
            id);
    if (rcp_client_send_raw(c, frame, strlen(frame)) != 0)
        return -1;
    for (;;) {
        nf = rcp_client_frames(c, &f);
        for (i = 0; i < nf; i++)
            if (f[i].len < 200 && strstr(f[i].line, id) != NULL)
                goto answered;
        if (left_ms(end) == 0 || rcp_client_pump(c, left_ms(end)) < 0)
            return -1;
    }
answered:
    /* over HTTP every exchange ends: once none is in flight, everything
    ** the check's requests will bring has come (no grace to guess) */
    end = now_ms() + (rcp_client_base(c) ? timeout_ms : GRACE_MS);
    while (left_ms(end) > 0 && (!rcp_client_base(c)
                                || rcp_client_exchanges(c) > 0)
           && rcp_client_pump(c, left_ms(end)) >= 0)
        ;
    return 0;
}

/* MARK: - Predicates ----------------------------------------------------- */

typedef struct pctx {
    runner     *R;
    got        *g;     /* every response of the check, for sameAs */
} pctx;

static int pred(pctx *x, const rcp_json *root, const rcp_json *p,
                rcp_buf *why);

/* A number or "$cap:/pointer" to one. */
static long pred_count(pctx *x, const rcp_json *v, int *ok)
{
    const rcp_json *c = v;
    int64_t n;
    if (v && v->type == RCP_JSON_STRING && strncmp(v->s, "$cap:", 5) == 0)
        c = x->R->caps ? jptr(x->R->caps, v->s + 5) : NULL;
    *ok = c && rcp_json_int(c, &n);
    return *ok ? (long)n : 0;
}

static int type_is(const rcp_json *v, const char *t)
{
    int64_t i;
    if (strcmp(t, "absent") == 0)
        return !v;
    if (!v)
        return 0;
    if (strcmp(t, "integer") == 0)
        return v->type == RCP_JSON_NUMBER && rcp_json_int(v, &i);
    return strcmp(t, type_name(v)) == 0;
}

static int contains_value(const rcp_json *arr, const rcp_json *v)
{
    size_t i;
    if (!arr || arr->type != RCP_JSON_ARRAY)
        return 0;
    for (i = 0; i < arr->n; i++)
        if (json_equal(&arr->kids[i], v))
            return 1;
    return 0;
}

/* Another response's value, for "sameAs": {"id": X, "pointer": P}. */
static const rcp_json *same_as(pctx *x, const rcp_json *spec)
{
    const rcp_json *id = rcp_json_get(spec, "id");
    size_t i;
    for (i = 0; x->g && i < x->g->n; i++)
        if (rcp_id_equal(rcp_json_get(x->g->v[i].j, "id"), id))
            return jptr(x->g->v[i].j, cstr(rcp_json_get(spec, "pointer"),
                                           ""));
    return NULL;
}

/* "ptr what: value" (ptr "" continues a sentence already begun). */
static int fail_at(rcp_buf *why, const char *ptr, const char *what,
                   const rcp_json *v)
{
    buf_printf(why, *ptr ? "%s " : " ", ptr);
    buf_printf(why, "%s: ", what);
    buf_json(why, v, SHOW_BYTES / 2);
    return 0;
}

/* A predicate, or an array of predicates that must all hold. */
static int pred_all(pctx *x, const rcp_json *root, const rcp_json *p,
                    rcp_buf *why)
{
    size_t i;
    if (p->type != RCP_JSON_ARRAY)
        return pred(x, root, p, why);
    for (i = 0; i < p->n; i++)
        if (!pred(x, root, &p->kids[i], why))
            return 0;
    return 1;
}

/* "each": the nested predicate(s) hold for every element (array) or
** member value (object) -- but for the members named in "except". */
static int pred_each(pctx *x, const rcp_json *v, const char *ptr,
                     const rcp_json *sub, const rcp_json *except,
                     rcp_buf *why)
{
    size_t i, k;
    if (!v || (v->type != RCP_JSON_ARRAY && v->type != RCP_JSON_OBJECT))
        return fail_at(why, ptr, "should be an array or object", v);
    for (i = 0; i < v->n; i++) {
        int skip = 0;
        for (k = 0; v->type == RCP_JSON_OBJECT && except && k < except->n;
             k++)
            skip |= except->kids[k].type == RCP_JSON_STRING
                && except->kids[k].n == v->kids[i].keylen
                && memcmp(except->kids[k].s, v->kids[i].key,
                          v->kids[i].keylen) == 0;
        if (!skip && !pred_all(x, &v->kids[i], sub, why)) {
            if (v->type == RCP_JSON_OBJECT)
                buf_printf(why, " (in member \"%.*s\" of %s)",
                           (int)v->kids[i].keylen, v->kids[i].key,
                           *ptr ? ptr : "the message");
            else
                buf_printf(why, " (in element %lu of %s)", (unsigned long)i,
                           *ptr ? ptr : "the message");
            return 0;
        }
    }
    return 1;
}

/* "countWhere": {"max": N, "anyOf": [predicates]} -- how many elements
** satisfy any of the predicates. */
static int pred_count_where(pctx *x, const rcp_json *v, const char *ptr,
                            const rcp_json *spec, rcp_buf *why)
{
    const rcp_json *any = rcp_json_get(spec, "anyOf");
    long max = jlong(rcp_json_get(spec, "max"), 0), n = 0;
    size_t i, k;
    rcp_buf scratch;
    if (!v || v->type != RCP_JSON_ARRAY || !any)
        return fail_at(why, ptr, "should be an array", v);
    rcp_buf_init(&scratch);
    for (i = 0; i < v->n; i++)
        for (k = 0; k < any->n; k++)
            if (pred(x, &v->kids[i], &any->kids[k], &scratch)) {
                n++;
                break;
            }
    rcp_buf_free(&scratch);
    if (n > max) {
        buf_printf(why, "%s has %ld matching elements, at most %ld allowed",
                   ptr, n, max);
        return 0;
    }
    return 1;
}

static int pred_items(pctx *x, const rcp_json *p, const rcp_json *v,
                      const char *ptr, rcp_buf *why)
{
    const rcp_json *q;
    long n;
    int ok;
    size_t have = v && (v->type == RCP_JSON_ARRAY) ? v->n : 0;
    if ((q = rcp_json_get(p, "items")) != NULL
        || (q = rcp_json_get(p, "minItems")) != NULL
        || (q = rcp_json_get(p, "maxItems")) != NULL) {
        n = pred_count(x, q, &ok);
        if (!ok)
            return fail_at(why, ptr, "cannot be judged: the capability "
                           "bound is not advertised", NULL);
        if (!v || v->type != RCP_JSON_ARRAY)
            return fail_at(why, ptr, "should be an array", v);
        if ((rcp_json_get(p, "items") && (long)have != n)
            || (rcp_json_get(p, "minItems") && (long)have < n)
            || (rcp_json_get(p, "maxItems") && (long)have > n)) {
            buf_printf(why, "%s has %lu elements, expected %s %ld", ptr,
                       (unsigned long)have, rcp_json_get(p, "items")
                       ? "exactly" : rcp_json_get(p, "minItems")
                       ? "at least" : "at most", n);
            return 0;
        }
    }
    return 1;
}

/* A number, or "$cap:/pointer" to one; *ok 0 when there is none. */
static double pred_real(pctx *x, const rcp_json *v, int *ok)
{
    const rcp_json *c = v;
    if (v && v->type == RCP_JSON_STRING && strncmp(v->s, "$cap:", 5) == 0)
        c = x->R->caps ? jptr(x->R->caps, v->s + 5) : NULL;
    *ok = c && c->type == RCP_JSON_NUMBER;
    return *ok ? rcp_json_num(c) : 0;
}

/* "minimum" / "maximum": bounds on a number; "b64len": the string is the
** base64 text of that many binary32 values (§7.3.1: dimension x 4
** bytes, padded). */
static int pred_numbers(pctx *x, const rcp_json *p, const rcp_json *v,
                        const char *ptr, rcp_buf *why)
{
    const rcp_json *q;
    double bound;
    int ok;
    if ((q = rcp_json_get(p, "minimum")) || (q = rcp_json_get(p, "maximum"))) {
        int lo = rcp_json_get(p, "minimum") == q;
        bound = pred_real(x, q, &ok);
        if (!ok || !v || v->type != RCP_JSON_NUMBER)
            return fail_at(why, ptr, "should be a number (bound given)", v);
        if (lo ? rcp_json_num(v) < bound : rcp_json_num(v) > bound) {
            buf_printf(why, "%s is below/above its bound %g: ", ptr, bound);
            buf_json(why, v, 40);
            return 0;
        }
    }
    if ((q = rcp_json_get(p, "b64len"))) {
        long floats = pred_count(x, q, &ok);
        size_t want = 4 * (((size_t)floats * 4 + 2) / 3);
        if (!ok || !v || v->type != RCP_JSON_STRING || v->n != want) {
            buf_printf(why, "%s should be %lu base64 characters (%ld "
                       "floats): ", ptr, (unsigned long)want, floats);
            buf_json(why, v, 40);
            return 0;
        }
    }
    return 1;
}

/* One predicate {"pointer": P, op: arg, ...} against root. */
static int pred(pctx *x, const rcp_json *root, const rcp_json *p,
                rcp_buf *why)
{
    const char *ptr;
    const rcp_json *v, *q;
    if (p->type == RCP_JSON_STRING)      /* shorthand: present */
        return jptr(root, p->s) ? 1
            : fail_at(why, p->s, "should be present", NULL);
    ptr = cstr(rcp_json_get(p, "pointer"), "");
    v = jptr(root, ptr);
    if ((q = rcp_json_get(p, "absent")) && jbool(q, 0) && v)
        return fail_at(why, ptr, "should be absent", v);
    if ((q = rcp_json_get(p, "present")) && jbool(q, 0) && !v)
        return fail_at(why, ptr, "should be present", v);
    if ((q = rcp_json_get(p, "equals")) && !json_equal(v, q)) {
        buf_printf(why, "%s should be ", *ptr ? ptr : "(the message)");
        buf_json(why, q, SHOW_BYTES / 2);
        return fail_at(why, "", "but is", v);
    }
    if ((q = rcp_json_get(p, "notEquals")) && json_equal(v, q))
        return fail_at(why, ptr, "should not equal", v);
    if ((q = rcp_json_get(p, "in")) && !contains_value(q, v))
        return fail_at(why, ptr, "is not one of the allowed values", v);
    if ((q = rcp_json_get(p, "type"))) {
        size_t i;
        int ok = 0;
        if (q->type == RCP_JSON_STRING)
            ok = type_is(v, q->s);
        for (i = 0; q->type == RCP_JSON_ARRAY && i < q->n; i++)
            ok |= type_is(v, cstr(&q->kids[i], ""));
        if (!ok) {
            buf_printf(why, "%s should be of type ", *ptr ? ptr : "value");
            buf_json(why, q, 80);
            return fail_at(why, "", "but is", v);
        }
    }
    if ((q = rcp_json_get(p, "contains")) && !contains_value(v, q))
        return fail_at(why, ptr, "should contain the value", q);
    if ((q = rcp_json_get(p, "notContains")) && contains_value(v, q))
        return fail_at(why, ptr, "should not contain the value", q);
    if ((q = rcp_json_get(p, "anyKey"))) {
        size_t i;
        int ok = 0;
        for (i = 0; i < q->n && v && v->type == RCP_JSON_OBJECT; i++)
            ok |= rcp_json_get(v, cstr(&q->kids[i], "")) != NULL;
        if (!ok)
            return fail_at(why, ptr, "should have at least one of the keys "
                           "listed", q);
    }
    if (!pred_items(x, p, v, ptr, why) || !pred_numbers(x, p, v, ptr, why))
        return 0;
    if ((q = rcp_json_get(p, "hasValue"))) {
        size_t i;
        int ok = 0;
        for (i = 0; v && v->type == RCP_JSON_OBJECT && i < v->n; i++)
            ok |= json_equal(&v->kids[i], q);
        if (!ok)
            return fail_at(why, ptr, "has no member whose value is", q);
    }
    if ((q = rcp_json_get(p, "anyOf"))) {    /* alternatives, same root */
        size_t i;
        rcp_buf w;
        int ok = 0;
        rcp_buf_init(&w);
        for (i = 0; i < q->n && !ok; i++) {
            w.len = 0;
            ok = pred_all(x, root, &q->kids[i], &w);
        }
        if (!ok) {
            rcp_buf_puts(why, "none of the alternatives holds (last: ");
            rcp_buf_put(why, w.data, w.len);
            rcp_buf_putc(why, ')');
        }
        rcp_buf_free(&w);
        if (!ok)
            return 0;
    }
    if ((q = rcp_json_get(p, "sameAs")) && !json_equal(v, same_as(x, q)))
        return fail_at(why, ptr, "should equal the other response's value",
                       same_as(x, q));
    if ((q = rcp_json_get(p, "notSameAs")) && v && json_equal(v, same_as(x, q)))
        return fail_at(why, ptr, "should differ from the other response's "
                       "value", v);
    if ((q = rcp_json_get(p, "each"))
        && !pred_each(x, v, ptr, q, rcp_json_get(p, "except"), why))
        return 0;
    if ((q = rcp_json_get(p, "countWhere"))
        && !pred_count_where(x, v, ptr, q, why))
        return 0;
    return 1;
}

/* MARK: - Expectations --------------------------------------------------- */

/* The ids a response spec accepts: "id", or any of "idAnyOf". */
static int spec_id_ok(const rcp_json *spec, const rcp_json *id, long n)
{
    const rcp_json *any = rcp_json_get(spec, "idAnyOf"), *one;
    size_t i;
    if (n >= 0) {
        int64_t v;
        return id && id->type == RCP_JSON_NUMBER && rcp_json_int(id, &v)
            && v == n;
    }
    if ((one = rcp_json_get(spec, "id")) != NULL)
        return rcp_id_equal(one, id);
    for (i = 0; any && i < any->n; i++)
        if (rcp_id_equal(&any->kids[i], id))
            return 1;
    return 0;
}

/* "outcome": "result", an error code, or an array of those. */
static int outcome_ok(const rcp_json *want, const rcp_json *m)
{
    const rcp_json *err = rcp_json_get(m, "error");
    const rcp_json *res = rcp_json_get(m, "result");
    size_t i;
    if (!want)
        return 1;
    if (want->type == RCP_JSON_ARRAY) {
        for (i = 0; i < want->n; i++)
            if (outcome_ok(&want->kids[i], m))
                return 1;
        return 0;
    }
    if (want->type == RCP_JSON_STRING)
        return res && !err;
    return err && !res && json_equal(rcp_json_get(err, "code"), want);
}

/* "result", "error -32600", "result or error -32006". */
static void describe_outcome(rcp_buf *b, const rcp_json *o)
{
    size_t i;
    if (o->type == RCP_JSON_ARRAY) {
        for (i = 0; i < o->n; i++) {
            if (i)
                rcp_buf_puts(b, " or ");
            describe_outcome(b, &o->kids[i]);
        }
    } else if (o->type == RCP_JSON_STRING) {
        rcp_buf_puts(b, "result");
    } else {
        rcp_buf_puts(b, "error ");
        buf_json(b, o, 40);
    }
}

static void describe_spec(rcp_buf *b, const rcp_json *spec, long n)
{
    const rcp_json *o = rcp_json_get(spec, "outcome");
    const char *in = cstr(rcp_json_get(spec, "in"), NULL);
    if (n >= 0)
        buf_printf(b, "id %ld", n);
    else if (rcp_json_get(spec, "id")) {
        rcp_buf_puts(b, "id ");
        buf_json(b, rcp_json_get(spec, "id"), 60);
    } else {
        rcp_buf_puts(b, "id any of ");
        buf_json(b, rcp_json_get(spec, "idAnyOf"), 60);
    }
    rcp_buf_puts(b, " -> ");
    if (!o)
        rcp_buf_puts(b, "any outcome");
    else
        describe_outcome(b, o);
    if (in)
        buf_printf(b, " (%s)", strcmp(in, "batch") == 0 ? "inside a batch "
                   "array" : "a single non-array response");
}

/* Expand "idRange": [a, b] into one spec per id. */
static int spec_range(const rcp_json *spec, long *a, long *b)
{
    const rcp_json *r = rcp_json_get(spec, "idRange");
    if (!r || r->type != RCP_JSON_ARRAY || r->n != 2)
        return 0;
    *a = jlong(&r->kids[0], 1);
    *b = jlong(&r->kids[1], 0);
    return 1;
}

static void describe_expect(rcp_buf *b, const rcp_json *ex)
{
    const rcp_json *rs = rcp_json_get(ex, "responses"), *any;
    size_t i;
    long lo, hi;
    if ((any = rcp_json_get(ex, "anyOf")) != NULL) {
        for (i = 0; i < any->n; i++) {
            if (i)
                rcp_buf_puts(b, "  OR  ");
            describe_expect(b, &any->kids[i]);
        }
        return;
    }
    if (!rs || rs->n == 0)
        rcp_buf_puts(b, "no response at all");
    for (i = 0; rs && i < rs->n; i++) {
        if (i)
            rcp_buf_puts(b, "; ");
        if (spec_range(&rs->kids[i], &lo, &hi)) {
            buf_printf(b, "ids %ld..%ld, each ", lo, hi);
            describe_spec(b, &rs->kids[i], lo);
        } else {
            describe_spec(b, &rs->kids[i], -1);
        }
    }
    if (rcp_json_get(ex, "lines"))
        buf_printf(b, "; in %ld line(s)", jlong(rcp_json_get(ex, "lines"),
                                                0));
    if (jbool(rcp_json_get(ex, "exact"), 1) && rs && rs->n)
        rcp_buf_puts(b, "; nothing else");
}

/* Judge one spec (with id n for ranges) against the responses. */
/* The first unused response whose id the spec accepts. */
static msg *find_msg(got *g, const rcp_json *spec)
{
    size_t i;
    for (i = 0; i < g->n; i++)
        if (!g->v[i].used && spec_id_ok(spec, rcp_json_get(g->v[i].j, "id"),
                                        -1))
            return &g->v[i];
    return NULL;
}

/* For "idRange": v[n - lo] is the first unused response with the integer
** id n, or NULL -- one pass, so a 5000-member batch stays linear. */
static msg **range_index(got *g, long lo, long hi)
{
    msg **v;
    size_t i, span;
    if (hi < lo || hi - lo > 1000000)
        return NULL;
    span = (size_t)(hi - lo) + 1;
    v = rcp_malloc(span * sizeof *v);
    if (!v)
        return NULL;
    memset(v, 0, span * sizeof *v);
    for (i = 0; i < g->n; i++) {
        int64_t id;
        if (!g->v[i].used && rcp_json_int(rcp_json_get(g->v[i].j, "id"), &id)
            && rcp_json_get(g->v[i].j, "id")->type == RCP_JSON_NUMBER
            && id >= lo && id <= hi && !v[id - lo])
            v[id - lo] = &g->v[i];
    }
    return v;
}

/* Judge the response m (NULL: missing) against spec (id n for ranges). */
static int judge_spec(pctx *x, const rcp_json *spec, long n, msg *m,
                      int *soft, rcp_buf *why)
{
    const rcp_json *where = rcp_json_get(spec, "where");
    const char *in = cstr(rcp_json_get(spec, "in"), NULL);
    size_t k;
    if (!m) {
        rcp_buf_puts(why, "missing: ");
        describe_spec(why, spec, n);
        return 0;
    }
    m->used = 1;
    if (!outcome_ok(rcp_json_get(spec, "outcome"), m->j)) {
        describe_spec(why, spec, n);
        rcp_buf_puts(why, " -- got ");
        buf_json(why, m->j, SHOW_BYTES);
        return 0;
    }
    if (in && (strcmp(in, "batch") == 0) != m->in_array) {
        describe_spec(why, spec, n);
        buf_printf(why, " -- it came %s", m->in_array ? "inside an array"
                   : "as a single object");
        return 0;
    }
    for (k = 0; where && k < where->n; k++) {
        rcp_buf w;
        int ok;
        rcp_buf_init(&w);
        ok = pred(x, m->j, &where->kids[k], &w);
        if (!ok && rcp_json_get(&where->kids[k], "note")) {
            w.len = 0;                   /* the data says it better */
            rcp_buf_puts(&w, cstr(rcp_json_get(&where->kids[k], "note"),
                                  ""));
        }
        if (!ok) {
            int should = !is_must(cstr(rcp_json_get(&where->kids[k],
                                                    "keyword"), "MUST"));
            if (!should || !*soft) {
                if (why->len)
                    rcp_buf_puts(why, "; ");
                rcp_buf_put(why, w.data, w.len);
                if (should)
                    rcp_buf_puts(why, " [SHOULD]");
            }
            if (!should) {
                rcp_buf_free(&w);
                return 0;
            }
            *soft = 1;
        }
        rcp_buf_free(&w);
    }
    return 1;
}

static size_t response_lines(const got *g)
{
    size_t i, n = 0, last = (size_t)-1;
    for (i = 0; i < g->n; i++)
        if (g->v[i].line != last) {
            n++;
            last = g->v[i].line;
        }
    return n;
}

/* 1 pass, 0 fail; *soft set when only SHOULD predicates failed. */
static int judge(pctx *x, const rcp_json *ex, int *soft, rcp_buf *why)
{
    const rcp_json *rs = rcp_json_get(ex, "responses"), *any;
    size_t i;
    long lo, hi, n;
    if ((any = rcp_json_get(ex, "anyOf")) != NULL) {
        rcp_buf w;
        rcp_buf_init(&w);
        for (i = 0; i < any->n; i++) {
            int s = 0;
            size_t k;
            for (k = 0; k < x->g->n; k++)
                x->g->v[k].used = 0;
            w.len = 0;
            if (judge(x, &any->kids[i], &s, &w)) {
                const char *warn = cstr(rcp_json_get(&any->kids[i],
                                                     "warn"), NULL);
                if (warn) {              /* an accepted, advisory reading */
                    s = 1;
                    w.len = 0;
                    rcp_buf_puts(&w, warn);
                }
                *soft = s;
                if (s)
                    rcp_buf_put(why, w.data, w.len);
                rcp_buf_free(&w);
                return 1;
            }
        }
        rcp_buf_free(&w);
        rcp_buf_puts(why, "none of the accepted outcomes");
        return 0;
    }
    for (i = 0; rs && i < rs->n; i++) {
        if (spec_range(&rs->kids[i], &lo, &hi)) {
            msg **idx = range_index(x->g, lo, hi);
            int ok = idx != NULL;
            for (n = lo; ok && n <= hi; n++)
                ok = judge_spec(x, &rs->kids[i], n, idx[n - lo], soft, why);
            rcp_free(idx);
            if (!ok)
                return 0;
        } else if (!judge_spec(x, &rs->kids[i], -1,
                               find_msg(x->g, &rs->kids[i]), soft, why)) {
            return 0;
        }
    }
    if (jbool(rcp_json_get(ex, "exact"), 1))
        for (i = 0; i < x->g->n; i++)
            if (!x->g->v[i].used) {
                rcp_buf_puts(why, "unexpected response: ");
                buf_json(why, x->g->v[i].j, SHOW_BYTES);
                return 0;
            }
    if (rcp_json_get(ex, "lines")
        && (long)response_lines(x->g) != jlong(rcp_json_get(ex, "lines"), 0)) {
        buf_printf(why, "the responses came in %lu line(s), expected %ld",
                   (unsigned long)response_lines(x->g),
                   jlong(rcp_json_get(ex, "lines"), 0));
        return 0;
    }
    return 1;
}

/* Are the responses the expectation names all there (by id)?  With
** anyOf: those of any alternative that names at least one. */
static int arrived(got *g, const rcp_json *ex)
{
    const rcp_json *rs = rcp_json_get(ex, "responses"), *any;
    size_t i, k;
    long lo, hi, n;
    if ((any = rcp_json_get(ex, "anyOf")) != NULL) {
        for (i = 0; i < any->n; i++) {
            const rcp_json *r2 = rcp_json_get(&any->kids[i], "responses");
            if (r2 && r2->n && arrived(g, &any->kids[i]))
                return 1;
        }
        return 0;
    }
    for (i = 0; rs && i < rs->n; i++) {
        if (spec_range(&rs->kids[i], &lo, &hi)) {
            msg **idx = range_index(g, lo, hi);
            int all = idx != NULL;
            for (n = lo; all && n <= hi; n++)
                all = idx[n - lo] != NULL;
            rcp_free(idx);
            if (!all)
                return 0;
        } else {
            int found = 0;
            for (k = 0; k < g->n && !found; k++)
                found = spec_id_ok(&rs->kids[i],
                                   rcp_json_get(g->v[k].j, "id"), -1);
            if (!found)
                return 0;
        }
    }
    return 1;
}

/* MARK: - Evidence: what was sent, expected, received ------------------ */

/* One frame as report data: its JSON value, {"raw": text} when it is not
** JSON, {"truncated": its start, "bytes": n} when it is too long to keep. */
static void frame_value(rcp_jw *w, const char *line, size_t len,
                        const rcp_json *root)
{
    rcp_buf t;
    int cut = len > KEEP_FRAME;
    if (root && !cut) {
        rcp_jw_value(w, root);
        return;
    }
    rcp_buf_init(&t);
    buf_show(&t, line, cut ? SHOW_BYTES : len, cut ? SHOW_BYTES : len);
    rcp_jw_obj(w);
    rcp_jw_key(w, cut ? "truncated" : "raw");
    rcp_jw_str(w, t.data ? t.data : "", t.len);
    rcp_jw_key(w, "bytes");
    rcp_jw_int(w, (int64_t)len);
    rcp_jw_obj_end(w);
    rcp_buf_free(&t);
}

/* Close a frame array, saying how many frames were not kept. */
static void frames_end(rcp_jw *w, size_t shown)
{
    if (shown > KEEP_FRAMES) {
        rcp_jw_obj(w);
        rcp_jw_key(w, "more");
        rcp_jw_int(w, (int64_t)(shown - KEEP_FRAMES));
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
}

/* The bytes a check wrote, frame by frame, as a JSON array. */
static void sent_json(rcp_buf *out, const rcp_buf *sent)
{
    rcp_arena a;
    rcp_jw w;
    size_t pos = 0, shown = 0;
    rcp_arena_init(&a, 0);
    rcp_jw_init(&w, out);
    rcp_jw_arr(&w);
    while (pos < sent->len) {
        const char *p = sent->data + pos;
        const char *nl = memchr(p, '\n', sent->len - pos);
        size_t n = nl ? (size_t)(nl - p) : sent->len - pos;
        rcp_json_err err;
        const rcp_json *j = n <= KEEP_FRAME
            ? rcp_json_parse(&a, p, n, 0, &err) : NULL;
        if (shown++ < KEEP_FRAMES)
            frame_value(&w, p, n, j);
        rcp_arena_reset(&a);
        pos += n + 1;
    }
    frames_end(&w, shown);
    rcp_arena_free(&a);
}

/* What the server wrote during the check (barrier answers left out). */
static void got_json(rcp_buf *out, rcp_client *c)
{
    const rcp_frame *f;
    size_t nf = rcp_client_frames(c, &f), i, shown = 0;
    rcp_jw w;
    rcp_jw_init(&w, out);
    rcp_jw_arr(&w);
    for (i = 0; i < nf; i++) {
        if (f[i].root && is_barrier(f[i].root))
            continue;
        if (shown++ < KEEP_FRAMES)
            frame_value(&w, f[i].line, f[i].len, f[i].root);
    }
    frames_end(&w, shown);
}

/* Why a server stopped answering: its exit, and the end of its stderr
** (a crash report or a sanitizer's is what the reader needs). */
static void server_json(rcp_buf *out, rcp_client *c)
{
    int status = 0;
    size_t n;
    const char *err;
    rcp_jw w;
    rcp_jw_init(&w, out);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "state");
    if (rcp_client_base(c)) {
        rcp_jw_cstr(&w, rcp_client_alive(c) ? "wedged" : "unreachable");
        rcp_jw_obj_end(&w);
        return;
    }
    if (!rcp_client_wait_exit(c, 200, &status)) {
        rcp_jw_cstr(&w, "wedged");
    } else if (WIFSIGNALED(status)) {
        rcp_jw_cstr(&w, "killed");
        rcp_jw_key(&w, "signal");
        rcp_jw_int(&w, WTERMSIG(status));
    } else {
        rcp_jw_cstr(&w, "exited");
        rcp_jw_key(&w, "status");
        rcp_jw_int(&w, WEXITSTATUS(status));
    }
    err = rcp_client_stderr_text(c, &n);
    if (n) {
        size_t from = n > STDERR_TAIL ? n - STDERR_TAIL : 0;
        rcp_buf t;
        rcp_buf_init(&t);
        buf_show(&t, err + from, n - from, STDERR_TAIL);
        rcp_jw_key(&w, "stderr");
        rcp_jw_str(&w, t.data ? t.data : "", t.len);
        rcp_buf_free(&t);
    }
    rcp_jw_obj_end(&w);
}

/* A check that did not pass keeps what it sent and what came back. */
static void keep_evidence(runner *R, check *k, rcp_client *c)
{
    if (R->sent.len && !k->sent.len)
        sent_json(&k->sent, &R->sent);
    if (c && !k->got.len)
        got_json(&k->got, c);
    if (c && R->aborted && !k->server.len)
        server_json(&k->server, c);
}

/* k->expected as {"text": description} (and the data's "expect"). */
static void expected_text(check *k, const char *text, const rcp_json *ex)
{
    rcp_jw w;
    k->expected.len = 0;
    rcp_jw_init(&w, &k->expected);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "text");
    rcp_jw_cstr(&w, text);
    if (ex) {
        rcp_jw_key(&w, "expect");
        rcp_jw_value(&w, ex);
    }
    rcp_jw_obj_end(&w);
}

/* MARK: - Running a data check ------------------------------------------- */

static void record_sent(runner *R, const char *p, size_t n)
{
    rcp_buf_put(&R->sent, p, n);
    note_sent(R, p, n);
}

/* Play the "send" steps.  0, or -1 (reason in why). */
static int play(runner *R, rcp_client *c, const rcp_json *steps, int tmo,
                rcp_buf *why)
{
    size_t i;
    for (i = 0; steps && i < steps->n; i++) {
        const rcp_json *st = &steps->kids[i], *v;
        if ((v = rcp_json_get(st, "pauseMs")) != NULL) {
            double end = now_ms() + (double)jlong(v, 0);
            while (left_ms(end) > 0 && rcp_client_pump(c, left_ms(end)) >= 0)
                ;
        } else if ((v = rcp_json_get(st, "await")) != NULL) {
            double end = now_ms() + tmo;
            while (!has_response_id(c, v))
                if (left_ms(end) == 0 || rcp_client_pump(c, left_ms(end)) < 0)
                    break;
        } else if ((v = rcp_json_get(st, "eof")) != NULL) {
            rcp_client_eof(c);
        } else {
            rcp_buf b;
            int rc;
            rcp_buf_init(&b);
            if (step_bytes(R, st, &b) != 0) {
                rcp_buf_free(&b);
                rcp_buf_puts(why, "bad step in the check data (or it "
                             "names a capability value not advertised)");
                return -1;
            }
            record_sent(R, b.data, b.len);
            rc = rcp_client_send_raw(c, b.data, b.len);
            rcp_buf_free(&b);
            if (rc != 0 && !jbool(rcp_json_get(st, "mayFail"), 0)) {
                rcp_buf_puts(why, "the server stopped reading its input "
                             "(it exited or is wedged)");
                return -1;
            }
        }
    }
    return 0;
}

/* "cleanup": steps played after the check was judged (deleting what it
** added, so a store that outlives the run stays small); their answers
** are awaited but not judged.  The wire rules still see them. */
static void cleanup(runner *R, rcp_client *c, const rcp_json *steps)
{
    rcp_buf why;
    if (!steps || !rcp_client_alive(c))
        return;
    rcp_buf_init(&why);
    if (play(R, c, steps, R->tmo, &why) == 0)
        (void)barrier(R, c, R->tmo);
    rcp_buf_free(&why);
}

/* "exit": {"withinMs": T, "status": S, "keyword": K} -- the server must
** end by itself; 1 it did, 0 it did not (a failure, or a WARN when K is
** SHOULD: *soft is set). */
static int judge_exit(rcp_client *c, const rcp_json *ex, int *soft,
                      rcp_buf *why)
{
    long within = jlong(rcp_json_get(ex, "withinMs"), 2000);
    const rcp_json *st = rcp_json_get(ex, "status");
    int should = !is_must(cstr(rcp_json_get(ex, "keyword"), "MUST"));
    int status = 0, ok = 1;
    double end;
    if (!rcp_client_wait_exit(c, (int)within, &status)) {
        buf_printf(why, "the server had not exited %ld ms later", within);
        ok = 0;
    } else if (st && !(WIFEXITED(status)
                       && WEXITSTATUS(status) == jlong(st, 0))) {
        if (WIFSIGNALED(status))
            buf_printf(why, "the server died of signal %d",
                       WTERMSIG(status));
        else
            buf_printf(why, "the server exited with status %d, expected "
                       "%ld", WEXITSTATUS(status), jlong(st, 0));
        ok = 0;
    }
    end = now_ms() + (ok ? 500 : 50);    /* what it wrote before exiting */
    while (left_ms(end) > 0 && rcp_client_pump(c, left_ms(end)) >= 0)
        ;
    if (!ok && should) {
        rcp_buf_puts(why, " [SHOULD]");
        *soft = 1;
        return 1;
    }
    return ok;
}

/* Wait for the named responses, the quiet time, then the barrier. */
static int settle_down(runner *R, rcp_client *c, const rcp_json *ex, int tmo,
                       got *g, rcp_buf *why)
{
    double end = now_ms() + tmo;
    long quiet = jlong(rcp_json_get(ex, "quietMs"), 0);
    for (;;) {
        collect(c, g, 0);
        if (arrived(g, ex) || left_ms(end) == 0
            || rcp_client_pump(c, left_ms(end)) < 0)
            break;
    }
    end = now_ms() + (double)quiet;
    while (left_ms(end) > 0 && rcp_client_pump(c, left_ms(end)) >= 0)
        ;
    if (jbool(rcp_json_get(ex, "barrier"), 1)
        && barrier(R, c, R->tmo) != 0) {
        rcp_buf_puts(why, "the server did not answer a ping sent after the "
                     "check (it exited or is wedged)");
        collect(c, g, 0);
        return -1;
    }
    collect(c, g, 0);
    return 0;
}

/* Notifications the check allows: "notifications": "none" forbids all;
** "eachNotification" is a predicate every one must satisfy. */
static int judge_notes(runner *R, rcp_client *c, const rcp_json *ex,
                       rcp_buf *why)
{
    got n;
    size_t i;
    int ok = 1;
    const char *rule = cstr(rcp_json_get(ex, "notifications"), "any");
    const rcp_json *each = rcp_json_get(ex, "eachNotification");
    pctx x;
    memset(&n, 0, sizeof n);
    x.R = R;
    x.g = NULL;
    collect(c, &n, 1);
    for (i = 0; i < n.n && ok; i++) {
        if (strcmp(rule, "none") == 0) {
            rcp_buf_puts(why, "unexpected notification: ");
            buf_json(why, n.v[i].j, SHOW_BYTES);
            ok = 0;
        } else if (each && !pred_all(&x, n.v[i].j, each, why)) {
            ok = 0;
        }
    }
    rcp_free(n.v);
    return ok;
}

static void run_data_check(runner *R, check *k, rcp_client *c)
{
    const rcp_json *ex = rcp_json_get(k->j, "expect");
    int tmo = (int)jlong(rcp_json_get(k->j, "timeoutMs"), R->tmo);
    rcp_buf why;
    got g;
    pctx x;
    int soft = 0, ok;
    rcp_buf_init(&why);
    memset(&g, 0, sizeof g);
    x.R = R;
    x.g = &g;
    if (play(R, c, rcp_json_get(k->j, "send"), tmo, &why) != 0) {
        R->aborted = 1;
        ok = 0;
    } else if (ex && rcp_json_get(ex, "exit")) {
        ok = judge_exit(c, rcp_json_get(ex, "exit"), &soft, &why);
        collect(c, &g, 0);
        if (ok && rcp_json_get(ex, "responses")) {
            if (why.len)
                rcp_buf_puts(&why, "; ");
            ok = judge(&x, ex, &soft, &why);
        }
    } else {
        ok = settle_down(R, c, ex, tmo, &g, &why) == 0;
        if (!ok) {
            R->aborted = 1;
            rcp_buf_puts(&why, "; ");
        }
        if (judge(&x, ex, &soft, &why) == 0)
            ok = 0;
        if (ok)
            ok = judge_notes(R, c, ex, &why);
    }
    k->status = ok ? (soft ? ST_WARN : ST_PASS) : ST_FAIL;
    if (k->status != ST_PASS) {
        rcp_buf d;
        rcp_buf_put(&k->why, why.data, why.len);
        rcp_buf_init(&d);
        if (ex)
            describe_expect(&d, ex);
        rcp_buf_putc(&d, '\0');
        expected_text(k, d.data ? d.data : "", ex);
        rcp_buf_free(&d);
        keep_evidence(R, k, c);
    }
    if (!R->aborted)
        cleanup(R, c, rcp_json_get(k->j, "cleanup"));
    rcp_free(g.v);
    rcp_buf_free(&why);
}

/* MARK: - Wire rules (invariant 3) --------------------------------------- */

static void wire_note(runner *R, int rule, const char *check_id,
                      const char *line, size_t n, const char *what)
{
    wire_rule *w = &R->wire[rule];
    rcp_arena a;
    rcp_json_err err;
    rcp_jw jw;
    if (w->seen++)
        return;
    buf_printf(&w->example, "%s (during %s)", what, check_id);
    rcp_arena_init(&a, 0);
    rcp_jw_init(&jw, &w->frame);
    rcp_jw_arr(&jw);
    frame_value(&jw, line, n, n <= KEEP_FRAME
                ? rcp_json_parse(&a, line, n, 0, &err) : NULL);
    rcp_jw_arr_end(&jw);
    rcp_arena_free(&a);
}

/* §9: remember every _meta.progressToken the suite sent to this server,
** so a progress frame can be matched against the tokens that exist --
** a token nobody sent (the request's own id, say) is a violation. */
static void note_token(runner *R, const rcp_json *m)
{
    const rcp_json *t = jptr(m, "/params/_meta/progressToken");
    const rcp_json **v;
    if (!t || m->type != RCP_JSON_OBJECT)
        return;
    if (R->ntoks == R->captoks) {
        size_t cap = R->captoks ? 2 * R->captoks : 16;
        if (!(v = rcp_realloc(R->toks, cap * sizeof *v)))
            return;
        R->toks = v;
        R->captoks = cap;
    }
    if ((t = keep_in(&R->tok_arena, t)) != NULL)
        R->toks[R->ntoks++] = t;
}

/* Remember a request: its id and method, for the schema of its result. */
static void note_request(runner *R, const rcp_json *m)
{
    const rcp_json *id = rcp_json_get(m, "id"), *me = rcp_json_get(m, "method");
    sent_req *v;
    char *name;
    if (!id || !me || me->type != RCP_JSON_STRING)
        return;
    if (R->nreqs == R->capreqs) {
        size_t cap = R->capreqs ? 2 * R->capreqs : 64;
        if (!(v = rcp_realloc(R->reqs, cap * sizeof *v)))
            return;
        R->reqs = v;
        R->capreqs = cap;
    }
    name = rcp_arena_alloc(&R->req_arena, me->n + 1);
    id = keep_in(&R->req_arena, id);
    if (!name || !id)
        return;
    memcpy(name, me->s, me->n);
    name[me->n] = '\0';
    R->reqs[R->nreqs].id = id;
    R->reqs[R->nreqs].method = name;
    R->reqs[R->nreqs].legacy = jptr(m, "/params/documents") != NULL;
    R->nreqs++;
}

/* What the suite wrote: the progress tokens and the requests in it. */
static void note_sent(runner *R, const char *p, size_t n)
{
    rcp_arena a;
    size_t pos = 0, k;
    rcp_arena_init(&a, 0);
    while (pos < n) {
        const char *nl = memchr(p + pos, '\n', n - pos);
        size_t len = nl ? (size_t)(nl - (p + pos)) : n - pos;
        rcp_json_err err;
        const rcp_json *j = len <= MAX_NOTED
            ? rcp_json_parse(&a, p + pos, len, 0, &err) : NULL;
        for (k = 0; j && k < (j->type == RCP_JSON_ARRAY ? j->n : 1); k++) {
            const rcp_json *m = j->type == RCP_JSON_ARRAY ? &j->kids[k] : j;
            if (m->type != RCP_JSON_OBJECT)
                continue;
            note_token(R, m);
            note_request(R, m);
            if ((rcp_json_streq(rcp_json_get(m, "method"), "initialize")
                 && jptr(m, "/params/capabilities/log"))
                || jptr(m, "/params/_meta/logLevel"))
                R->log_asked = 1;
        }
        rcp_arena_reset(&a);
        pos += len + 1;
    }
    rcp_arena_free(&a);
}

/* The request a response answers (the last one sent with its id). */
static const sent_req *request_of(const runner *R, const rcp_json *id)
{
    size_t i;
    for (i = R->nreqs; id && i-- > 0;)
        if (rcp_id_equal(R->reqs[i].id, id))
            return &R->reqs[i];
    return NULL;
}

/* §14.4: the normative schema judges every result by its method, every
** error.data, and the notifications the server sends. */
static void wire_schema(runner *R, const rcp_json *m, const char *cid,
                        const rcp_frame *f)
{
    const rcp_schema *sc = rcp_schema_rcp1();
    const rcp_json *me = rcp_json_get(m, "method");
    const rcp_json *res = rcp_json_get(m, "result");
    const rcp_json *data = jptr(m, "/error/data");
    char err[300], what[400];
    const sent_req *q;
    if (!sc)
        return;
    if (me && (rcp_json_streq(me, "notifications/progress")
               || rcp_json_streq(me, "notifications/log"))) {
        if (rcp_schema_validate(sc, rcp_json_streq(me, "notifications/log")
                                ? "#/$defs/LogNotification"
                                : "#/$defs/ProgressNotification", m, err,
                                sizeof err) == 1) {
            snprintf(what, sizeof what, "a notification the schema refuses: "
                     "%s", err);
            wire_note(R, W_SCHEMA_NOTES, cid, f->line, f->len, what);
        }
        return;
    }
    q = request_of(R, rcp_json_get(m, "id"));
    if (res && q && strncmp(q->method, "x-", 2) != 0 && !q->legacy
        && rcp_schema_validate_result(sc, q->method, res, err, sizeof err)
        == 1) {
        snprintf(what, sizeof what, "the result of %s breaks the schema: %s",
                 q->method, err);
        wire_note(R, W_SCHEMA, cid, f->line, f->len, what);
    }
    if (data && rcp_schema_validate(sc, "#/$defs/ErrorData", data, err,
                                    sizeof err) == 1) {
        snprintf(what, sizeof what, "an error.data the schema refuses: %s",
                 err);
        wire_note(R, W_SCHEMA, cid, f->line, f->len, what);
    }
}

static int token_sent(const runner *R, const rcp_json *t)
{
    size_t i;
    for (i = 0; t && i < R->ntoks; i++)
        if (rcp_id_equal(R->toks[i], t))
            return 1;
    return 0;
}

/* §4.8: a non-text Content block (type image/audio/blob carrying data or
** uri) needs a mimeType and never carries both data and uri. */
static int content_bad(const rcp_json *v, unsigned depth)
{
    size_t i;
    if (depth > 64)
        return 0;
    if (v->type == RCP_JSON_OBJECT) {
        const rcp_json *t = rcp_json_get(v, "type");
        int data = rcp_json_get(v, "data") != NULL;
        int uri = rcp_json_get(v, "uri") != NULL;
        if ((rcp_json_streq(t, "image") || rcp_json_streq(t, "audio")
             || rcp_json_streq(t, "blob")) && (data || uri)) {
            const rcp_json *mt = rcp_json_get(v, "mimeType");
            if (!mt || mt->type != RCP_JSON_STRING || (data && uri))
                return 1;
        }
    }
    if (v->type == RCP_JSON_OBJECT || v->type == RCP_JSON_ARRAY)
        for (i = 0; i < v->n; i++)
            if (content_bad(&v->kids[i], depth + 1))
                return 1;
    return 0;
}

static void wire_message(runner *R, const rcp_json *m, const char *cid,
                         const rcp_frame *f)
{
    const rcp_json *err, *code, *res, *pv;
    int64_t v;
    if (m->type != RCP_JSON_OBJECT) {
        wire_note(R, W_JSON, cid, f->line, f->len, "not a JSON-RPC object");
        return;
    }
    if (!rcp_json_streq(rcp_json_get(m, "jsonrpc"), "2.0"))
        wire_note(R, W_JSONRPC, cid, f->line, f->len, "jsonrpc is not 2.0");
    wire_schema(R, m, cid, f);
    if (rcp_json_get(m, "method")) {
        const rcp_json *me = rcp_json_get(m, "method");
        if (rcp_json_streq(me, "notifications/log") && !R->log_asked)
            wire_note(R, W_LOG, cid, f->line, f->len, "log notification "
                      "the client did not opt into");
        if (rcp_json_streq(me, "notifications/progress")
            && !token_sent(R, jptr(m, "/params/progressToken")))
            wire_note(R, W_PROGRESS, cid, f->line, f->len, "progress "
                      "naming a token no request carried");
        return;
    }
    err = rcp_json_get(m, "error");
    res = rcp_json_get(m, "result");
    if (!err == !res)
        wire_note(R, W_XOR, cid, f->line, f->len, "not exactly one of "
                  "result and error");
    code = err ? rcp_json_get(err, "code") : NULL;
    if (err && (err->type != RCP_JSON_OBJECT || !rcp_json_int(code, &v)
                || !rcp_json_get(err, "message")
                || rcp_json_get(err, "message")->type != RCP_JSON_STRING))
        wire_note(R, W_ERROBJ, cid, f->line, f->len, "error is not "
                  "{code: integer, message: string}");
    else if (err && v >= -32099 && v <= -32000 && !rcp_code_known((int)v))
        wire_note(R, W_RANGE, cid, f->line, f->len, "a code in the "
                  "reserved -32000..-32099 range that §12 does not define");
    if (res && res->type != RCP_JSON_OBJECT)
        wire_note(R, W_RESULT, cid, f->line, f->len, "result is not an "
                  "object");
    if (res && res->type == RCP_JSON_OBJECT) {
        static const char *const ints[] = { "protocolVersion", "dimension",
            "deleted", "accepted", "chunks" };
        size_t i;
        for (i = 0; i < sizeof ints / sizeof *ints; i++) {
            pv = rcp_json_get(res, ints[i]);
            if (pv && !rcp_json_int(pv, &v))
                wire_note(R, W_INTSTR, cid, f->line, f->len, "an integer "
                          "field that is not a JSON integer within 2^53");
        }
        if (content_bad(res, 0))
            wire_note(R, W_CONTENT, cid, f->line, f->len, "a non-text "
                      "Content block without mimeType, or with both data "
                      "and uri");
    }
}

/* The JSON-RPC error a non-200 status may carry: the one §5.2's table
** says it mirrors (401/403: -32012 and 413: -32013 by §12's names). */
static int status_mirrors(int status, int64_t code)
{
    switch (status) {
    case 400: return code == RCP_PARSE_ERROR || code == RCP_INVALID_REQUEST;
    case 401:
    case 403: return code == -32012;
    case 413: return code == -32013;
    case 429: return code == RCP_RATE_LIMITED;
    case 500: return code == RCP_INTERNAL_ERROR;
    case 503: return code == RCP_BACKEND_UNAVAILABLE;
    default:  return 0;
    }
}

/* §5.2: a well-formed JSON-RPC response -- an error too -- is a 200;
** another status carries at most the error it mirrors. */
static void wire_http(runner *R, const char *cid, const rcp_frame *f)
{
    const rcp_json *r = f->root, *m;
    size_t i, n;
    int64_t code = 0;
    if (!f->http_status || f->http_status == 200
        || (f->http_flags & RCP_FRAME_STANDIN) || !r)
        return;
    n = r->type == RCP_JSON_ARRAY ? r->n : 1;
    for (i = 0; i < n; i++) {
        m = r->type == RCP_JSON_ARRAY ? &r->kids[i] : r;
        if (m->type != RCP_JSON_OBJECT || rcp_json_get(m, "method"))
            continue;
        if (r->type == RCP_JSON_ARRAY || rcp_json_get(m, "result")
            || !rcp_json_int(jptr(m, "/error/code"), &code)
            || !status_mirrors(f->http_status, code)) {
            char why[96];
            sprintf(why, "a JSON-RPC response with HTTP %d (not 200, nor "
                    "the error that status mirrors)", f->http_status);
            wire_note(R, W_HTTP_STATUS, cid, f->line, f->len, why);
            return;
        }
    }
}

/* §5.2 SSE framing as the client saw it on the shared session: one
** data: line a frame, nothing after the final frame, a final frame. */
static void wire_sse(runner *R, rcp_client *c, const char *cid)
{
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    uint64_t bad = m->sse_multiline + m->sse_after_final + m->sse_no_final
        + m->sse_unterminated;
    if (c != R->sse_client) {
        R->sse_client = c;
        R->sse_bad = 0;
    }
    if (bad > R->sse_bad)
        wire_note(R, W_SSE, cid, "", 0, m->sse_multiline
                  ? "an SSE frame of more than one data: line"
                  : m->sse_after_final ? "an SSE frame after the final one"
                  : m->sse_no_final ? "an SSE stream without a final frame"
                  : "SSE data not ended by a blank line");
    R->sse_bad = bad;
}

/* Judge every frame received on c against the wire rules, then forget
** the frames. */
static void wire_scan(runner *R, rcp_client *c, const char *cid)
{
    const rcp_frame *f;
    size_t nf = rcp_client_frames(c, &f), i, k;
    for (i = 0; i < nf; i++) {
        const rcp_json *r = f[i].root;
        if (f[i].len >= 3 && memcmp(f[i].line, "\xEF\xBB\xBF", 3) == 0)
            wire_note(R, W_BOM, cid, f[i].line, f[i].len, "a BOM");
        if (!r) {
            wire_note(R, W_JSON, cid, f[i].line, f[i].len, "not JSON");
            continue;
        }
        if (r->type == RCP_JSON_ARRAY && r->n == 0)
            wire_note(R, W_JSON, cid, f[i].line, f[i].len, "an empty "
                      "array");
        if (r->type == RCP_JSON_ARRAY)
            for (k = 0; k < r->n; k++)
                wire_message(R, &r->kids[k], cid, &f[i]);
        else
            wire_message(R, r, cid, &f[i]);
        wire_http(R, cid, &f[i]);
    }
    wire_sse(R, c, cid);
    rcp_client_frames_clear(c);
    R->nreqs = 0;
    rcp_arena_reset(&R->req_arena);
}

/* §5.1: stderr MUST NOT carry protocol messages. */
static void stderr_scan(runner *R, rcp_client *c, const char *cid)
{
    size_t n, i = 0;
    const char *t = rcp_client_stderr_text(c, &n);
    rcp_arena a;
    rcp_arena_init(&a, 0);
    while (t && i < n) {
        const char *nl = memchr(t + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (t + i)) : n - i;
        rcp_json_err err;
        const rcp_json *j = rcp_json_parse(&a, t + i, len, 0, &err);
        if (j && j->type == RCP_JSON_OBJECT
            && rcp_json_get(j, "jsonrpc"))
            wire_note(R, W_STDERR, cid, t + i, len, "a JSON-RPC message "
                      "on stderr");
        rcp_arena_reset(&a);
        i += len + 1;
    }
    rcp_arena_free(&a);
}

static const struct {
    int         rule;
    const char *code;
} wire_codes[] = {
    { W_JSON, "wire_json" },         { W_BOM, "wire_bom" },
    { W_JSONRPC, "wire_jsonrpc" },   { W_XOR, "wire_result_xor_error" },
    { W_ERROBJ, "wire_error_object" }, { W_RANGE, "wire_reserved_codes" },
    { W_RESULT, "wire_result_object" }, { W_LOG, "wire_no_unsolicited_log" },
    { W_PROGRESS, "wire_progress_token" }, { W_STDERR, "wire_stderr" },
    { W_INTSTR, "wire_integers_not_strings" },
    { W_SCHEMA, "wire_schema_results" },
    { W_SCHEMA_NOTES, "wire_schema_notifications" },
    { W_CONTENT, "wire_content_blocks" },
    { W_HTTP_STATUS, "wire_http_status" }, { W_SSE, "wire_sse_framing" }
};

static int wire_rule_of(const char *code)
{
    size_t i;
    for (i = 0; i < sizeof wire_codes / sizeof *wire_codes; i++)
        if (strcmp(wire_codes[i].code, code) == 0)
            return wire_codes[i].rule;
    return -1;
}

/* MARK: - Code checks ---------------------------------------------------- */

/* MARK: - Code checks: calls ------------------------------------------- */

static void buf_json_raw(rcp_buf *b, const rcp_json *v)
{
    rcp_jw w;
    rcp_jw_init(&w, b);
    rcp_jw_value(&w, v);
}

/* A request from a code check: sent, recorded as evidence, awaited up to
** tmo.  The request, whatever its state (free it); NULL when it could not
** be sent (the server is gone: the check is aborted). */
static rcp_request *call(runner *R, rcp_client *c, const char *method,
                         const char *params, int tmo)
{
    rcp_request *r = rcp_client_request(c, method, params, 0);
    if (!r) {
        R->aborted = 1;
        return NULL;
    }
    record_call(R, r, method, params);
    if (await_own(c, r, tmo) == -1)
        R->aborted = 1;
    return r;
}

/* 1 when r has its response; else the reason goes to k->why. */
static int answered(runner *R, check *k, rcp_request *r, const char *what)
{
    if (r && rcp_request_state_get(r) == RCP_REQ_DONE)
        return 1;
    if (k->why.len)
        rcp_buf_puts(&k->why, "; ");
    buf_printf(&k->why, "%s was not answered", what);
    R->aborted = 1;                      /* a late answer would mislead */
    return 0;
}

/* Equal up to informational vendor keys: below the top level of the
** capability set, a member named x-... is ignored (§6: an unknown field
** inside a capability is informational; §6.2), so a server may vary one
** (a load figure, a build time) between initialize and info.  Top-level
** x- keys are capabilities that gate methods (§6.2) and must match. */
static int equal_but_x(const rcp_json *a, const rcp_json *b, int depth)
{
    size_t i, k, na = 0, nb = 0;
    if (!a || !b || a->type != b->type)
        return 0;
    if (a->type == RCP_JSON_ARRAY) {
        if (a->n != b->n)
            return 0;
        for (i = 0; i < a->n; i++)
            if (!equal_but_x(&a->kids[i], &b->kids[i], depth + 1))
                return 0;
        return 1;
    }
    if (a->type != RCP_JSON_OBJECT)
        return json_equal(a, b);
    for (i = 0; i < a->n; i++) {
        const rcp_json *ka = &a->kids[i], *kb = NULL;
        if (depth > 0 && ka->keylen >= 2 && memcmp(ka->key, "x-", 2) == 0)
            continue;
        na++;
        for (k = b->n; k-- > 0 && !kb;)          /* the last one wins */
            if (b->kids[k].keylen == ka->keylen
                && memcmp(b->kids[k].key, ka->key, ka->keylen) == 0)
                kb = &b->kids[k];
        if (!equal_but_x(ka, kb, depth + 1))
            return 0;
    }
    for (i = 0; i < b->n; i++)
        nb += !(depth > 0 && b->kids[i].keylen >= 2
                && memcmp(b->kids[i].key, "x-", 2) == 0);
    return na == nb;
}

/* §13.2: info after initialize reports the session's capability set. */
static int code_info_matches(runner *R, check *k, rcp_client *c)
{
    rcp_request *r = call(R, c, "info", "{}", R->tmo);
    const rcp_json *caps;
    int ok = 0;
    if (!answered(R, k, r, "info")) {
        ;
    } else if (!(caps = jptr(rcp_request_result(r), "/capabilities"))) {
        rcp_buf_puts(&k->why, "the info result has no capabilities");
    } else if (!equal_but_x(caps, R->caps, 0)) {
        rcp_buf_puts(&k->why, "info's capabilities differ from "
                     "initialize's (beyond informational x- keys)");
        k->expected.len = 0;
        rcp_buf_puts(&k->expected, "{\"text\":\"initialize's capabilities\","
                     "\"capabilities\":");
        buf_json_raw(&k->expected, R->caps);
        rcp_buf_putc(&k->expected, '}');
    } else {
        ok = 1;
    }
    rcp_request_free(c, r);
    return ok ? ST_PASS : ST_FAIL;
}

static int cap_has(const runner *R, const char *ptr)
{
    return R->caps && jptr(R->caps, ptr) != NULL;
}

static int cap_lists(const runner *R, const char *ptr, const char *value)
{
    const rcp_json *a = R->caps ? jptr(R->caps, ptr) : NULL;
    size_t i;
    for (i = 0; a && a->type == RCP_JSON_ARRAY && i < a->n; i++)
        if (rcp_json_streq(&a->kids[i], value))
            return 1;
    return 0;
}

/* Are citations advertised: the capability ({} or, as the schema allows,
** true), or retrieve.citations as Appendix D has it?  false is absence. */
static int cites(const runner *R)
{
    const rcp_json *c = R->caps ? rcp_json_get(R->caps, "citations") : NULL;
    if (c && c->type != RCP_JSON_FALSE && c->type != RCP_JSON_NULL)
        return 1;
    return jbool(R->caps ? jptr(R->caps, "/retrieve/citations") : NULL, 0);
}

/* §14.2: L1 is retrieve with dense, sparse and hybrid, filter and
** citations. */
static int code_l1_profile(runner *R, check *k, rcp_client *c)
{
    static const char *const modes[] = { "dense", "sparse", "hybrid" };
    size_t i;
    (void)c;
    if (!cap_has(R, "/retrieve"))
        rcp_buf_puts(&k->why, "retrieve is not advertised; ");
    for (i = 0; i < 3; i++)
        if (!cap_lists(R, "/retrieve/modes", modes[i]))
            buf_printf(&k->why, "retrieve.modes lacks \"%s\"; ", modes[i]);
    if (!cap_has(R, "/filter"))
        rcp_buf_puts(&k->why, "filter is not advertised; ");
    if (!cites(R))
        rcp_buf_puts(&k->why, "citations are not advertised; ");
    if (k->why.len == 0)
        return ST_PASS;
    k->why.len -= 2;                     /* the last "; " */
    return ST_FAIL;
}

/* §14.3: L2 is L1 plus a selection of the SOTA surfaces -- we ask for
** at least two of them (one alone is not a "selection"). */
static int code_l2_profile(runner *R, check *k, rcp_client *c)
{
    static const char *const sota[] = { "/rerank", "/multiVector",
        "/sparseEmbed", "/transform", "/graph", "/streaming", "/pagination",
        "/log" };
    size_t i, n = 0;
    (void)c;
    for (i = 0; i < sizeof sota / sizeof *sota; i++)
        n += cap_has(R, sota[i]);
    n += jbool(R->caps ? jptr(R->caps, "/retrieve/deterministic") : NULL, 0)
        || jbool(R->caps ? jptr(R->caps, "/retrieve/snapshots") : NULL, 0);
    if (n < 2)
        buf_printf(&k->why, "%lu of the §14.3 surfaces advertised "
                   "(rerank, multiVector, sparseEmbed, transform, graph, "
                   "streaming, pagination, log, determinism); at least 2 "
                   "make a selection", (unsigned long)n);
    return n >= 2 ? ST_PASS : ST_FAIL;
}

/* MARK: - The corpus ----------------------------------------------------- */

/* "needs" of a check that reads results: the corpus must be loadable. */
static int writable(const runner *R)
{
    return jbool(R->caps ? jptr(R->caps, "/index/writable") : NULL, 0);
}

/* A §8 field type named by a JSON string, as a C string (the parsed
** capabilities hold unterminated text); "unknown" for another. */
static const char *type_word(const rcp_json *t)
{
    static const char *const types[] = { "keyword", "text", "int", "float",
        "bool", "date", "geo" };
    size_t i;
    for (i = 0; i < sizeof types / sizeof *types; i++)
        if (rcp_json_streq(t, types[i]))
            return types[i];
    return "unknown";
}

/* The advertised type of filter field name: "keyword", ... ; "untyped"
** when filter.fields is a list; NULL when not advertised. */
static const char *field_type(const runner *R, const char *name, size_t n)
{
    const rcp_json *f = R->caps ? jptr(R->caps, "/filter/fields") : NULL;
    size_t i;
    for (i = 0; f && i < f->n; i++) {
        const rcp_json *e = &f->kids[i];
        if (f->type == RCP_JSON_OBJECT && e->keylen == n
            && memcmp(e->key, name, n) == 0)
            return type_word(e);
        if (f->type == RCP_JSON_ARRAY && e->type == RCP_JSON_STRING
            && e->n == n && memcmp(e->s, name, n) == 0)
            return "untyped";
    }
    return NULL;
}

/* The value a corpus document gives a field of type t (NULL: none).  An
** untyped field (filter.fields as a list) holds the keyword value. */
static const rcp_json *doc_value(const rcp_json *doc, const char *t)
{
    const rcp_json *v = rcp_json_get(doc, "values");
    return rcp_json_get(v, strcmp(t, "untyped") == 0 ? "keyword" : t);
}

/* A document as the suite adds it: {id, text, meta}. */
static void write_doc(runner *R, rcp_jw *w, const cdoc *d)
{
    const rcp_json *f = jptr(R->caps, "/filter/fields");
    size_t i;
    rcp_jw_obj(w);
    rcp_jw_key(w, "id");
    rcp_jw_cstr(w, d->id);
    rcp_jw_key(w, "text");
    rcp_jw_value(w, rcp_json_get(d->doc, "text"));
    rcp_jw_key(w, "meta");
    rcp_jw_obj(w);
    for (i = 0; f && (f->type == RCP_JSON_OBJECT || f->type == RCP_JSON_ARRAY)
         && i < f->n; i++) {
        const rcp_json *e = &f->kids[i];
        const char *name = f->type == RCP_JSON_OBJECT ? e->key : e->s;
        size_t n = f->type == RCP_JSON_OBJECT ? e->keylen : e->n;
        const char *t = field_type(R, name, n);
        const rcp_json *v = t ? doc_value(d->doc, t) : NULL;
        if (v && (f->type == RCP_JSON_OBJECT || e->type == RCP_JSON_STRING)) {
            rcp_jw_keyn(w, name, n);
            rcp_jw_value(w, v);
        }
    }
    rcp_jw_obj_end(w);
    rcp_jw_obj_end(w);
}

/* The documents, their ids and their meta as sent (for the evaluator). */
static int corpus_docs(runner *R)
{
    const rcp_json *ds = rcp_json_get(R->corpus, "documents");
    size_t i;
    if (R->docs || !ds || ds->type != RCP_JSON_ARRAY)
        return R->docs ? 0 : -1;
    R->docs = rcp_malloc((ds->n + 1) * sizeof *R->docs);
    if (!R->docs)
        return -1;
    for (i = 0; i < ds->n; i++) {
        cdoc *d = &R->docs[i];
        rcp_buf b;
        rcp_jw w;
        d->doc = &ds->kids[i];
        snprintf(d->id, sizeof d->id, "conform-%s-%s", R->run,
                 cstr(rcp_json_get(d->doc, "key"), "?"));
        rcp_buf_init(&b);
        rcp_jw_init(&w, &b);
        write_doc(R, &w, d);
        d->meta = NULL;
        if (!b.oom) {
            rcp_json_err err;
            char *t = rcp_arena_alloc(&R->probe, b.len + 1);
            const rcp_json *j = t ? (memcpy(t, b.data, b.len),
                rcp_json_parse(&R->probe, t, b.len, 0, &err)) : NULL;
            d->meta = j ? rcp_json_get(j, "meta") : NULL;
        }
        rcp_buf_free(&b);
    }
    R->ndocs = ds->n;
    return 0;
}

/* Load the corpus into c, once per server (a store keeps it across
** starts; adding it again is an upsert).  0, or -1 with why. */
static int ensure_corpus(runner *R, rcp_client *c, check *k)
{
    rcp_buf b;
    rcp_jw w;
    rcp_request *r;
    size_t i;
    int code, rc = -1;
    if (R->corpus_loaded)
        return 0;
    if (!R->corpus || corpus_docs(R) != 0) {
        rcp_buf_puts(&k->why, "the corpus (corpus.json) is missing");
        return -1;
    }
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "documents");
    rcp_jw_arr(&w);
    for (i = 0; i < R->ndocs; i++)
        write_doc(R, &w, &R->docs[i]);
    rcp_jw_arr_end(&w);
    rcp_jw_obj_end(&w);
    rcp_buf_putc(&b, '\0');
    r = b.oom ? NULL : call(R, c, "index/add", b.data, R->tmo);
    if (!answered(R, k, r, "the corpus's index/add")) {
        ;
    } else if (rcp_request_error(r, &code)) {
        buf_printf(&k->why, "the corpus's index/add was refused with %d "
                   "(index.writable is advertised)", code);
    } else {
        R->corpus_loaded = R->corpus_used = 1;
        rc = 0;
    }
    rcp_request_free(c, r);
    rcp_buf_free(&b);
    return rc;
}

/* The corpus document a hit is (by id, or chunk.docId), or NULL. */
static const cdoc *hit_doc(const runner *R, const rcp_json *hit)
{
    const rcp_json *id = rcp_json_get(hit, "id");
    const rcp_json *dj = jptr(hit, "/chunk/docId");
    size_t i;
    if (dj && dj->type == RCP_JSON_STRING)
        id = dj;
    for (i = 0; id && id->type == RCP_JSON_STRING && i < R->ndocs; i++)
        if (strlen(R->docs[i].id) == id->n
            && memcmp(R->docs[i].id, id->s, id->n) == 0)
            return &R->docs[i];
    return NULL;
}

static const cdoc *doc_by_key(const runner *R, const char *key)
{
    size_t i;
    for (i = 0; i < R->ndocs; i++)
        if (rcp_json_streq(rcp_json_get(R->docs[i].doc, "key"), key))
            return &R->docs[i];
    return NULL;
}

/* Delete the corpus at the end of the run, so a store that outlives the
** run is left as it was found. */
static void drop_corpus(runner *R)
{
    rcp_buf b, why;
    rcp_client *c;
    size_t i;
    if (!R->corpus_used || !writable(R))
        return;
    rcp_buf_init(&why);
    c = session_for(R, 1, 0, &why);
    rcp_buf_init(&b);
    rcp_buf_puts(&b, "{\"ids\":[");
    for (i = 0; i < R->ndocs; i++)
        buf_printf(&b, "%s\"%s\"", i ? "," : "", R->docs[i].id);
    rcp_buf_puts(&b, "]}");
    rcp_buf_putc(&b, '\0');
    R->cc = c;
    if (c && !b.oom)
        rcp_request_free(c, call(R, c, "index/delete", b.data, R->tmo));
    R->cc = NULL;
    rcp_buf_free(&b);
    rcp_buf_free(&why);
}

/* MARK: - Code checks: what results mean ---------------------------------- */

enum { F_NO = 0, F_YES = 1, F_AMB = 2 };  /* §8 leaves some cases open */

static int value_eq(const rcp_json *a, const rcp_json *b)
{
    if (!a || !b)
        return 0;
    if (a->type == RCP_JSON_NUMBER && b->type == RCP_JSON_NUMBER)
        return rcp_json_num(a) == rcp_json_num(b);
    return json_equal(a, b);
}

/* <0, 0, >0, or 2 when the two cannot be ordered.  Dates are compared
** as text: the corpus and the probes write them all in one RFC 3339 form
** (UTC, whole seconds), in which text order is time order. */
static int value_cmp(const rcp_json *a, const rcp_json *b)
{
    if (a->type == RCP_JSON_NUMBER && b->type == RCP_JSON_NUMBER)
        return (rcp_json_num(a) > rcp_json_num(b))
            - (rcp_json_num(a) < rcp_json_num(b));
    if (a->type == RCP_JSON_STRING && b->type == RCP_JSON_STRING) {
        size_t n = a->n < b->n ? a->n : b->n;
        int r = memcmp(a->s, b->s, n);
        return r ? (r < 0 ? -1 : 1) : (a->n > b->n) - (a->n < b->n);
    }
    return 2;
}

static int in_list(const rcp_json *v, const rcp_json *list)
{
    size_t i;
    for (i = 0; list && list->type == RCP_JSON_ARRAY && i < list->n; i++)
        if (value_eq(v, &list->kids[i]))
            return 1;
    return 0;
}

/* A leaf {field, op, value} on a document's meta, by §8's table.  ne and
** nin on a document without the field are F_AMB: "(in)equality" of an
** absent value is not defined by the text. */
static int eval_leaf(const rcp_json *leaf, const rcp_json *meta)
{
    const rcp_json *fn = rcp_json_get(leaf, "field");
    const rcp_json *val = rcp_json_get(leaf, "value");
    const rcp_json *op = rcp_json_get(leaf, "op");
    const rcp_json *dv = NULL;
    size_t i;
    int c;
    for (i = 0; fn && meta && meta->type == RCP_JSON_OBJECT && i < meta->n;
         i++)
        if (meta->kids[i].keylen == fn->n
            && memcmp(meta->kids[i].key, fn->s, fn->n) == 0)
            dv = &meta->kids[i];
    if (rcp_json_streq(op, "exists"))
        return (dv != NULL) == jbool(val, 0);
    if (!dv)
        return rcp_json_streq(op, "ne") || rcp_json_streq(op, "nin") ? F_AMB
            : F_NO;
    if (rcp_json_streq(op, "eq"))
        return value_eq(dv, val);
    if (rcp_json_streq(op, "ne"))
        return !value_eq(dv, val);
    if (rcp_json_streq(op, "in"))
        return in_list(dv, val);
    if (rcp_json_streq(op, "nin"))
        return !in_list(dv, val);
    if (rcp_json_streq(op, "contains"))   /* whole words: substring = token */
        return dv->type == RCP_JSON_STRING && val
            && val->type == RCP_JSON_STRING && val->n <= dv->n
            && has_bytes(dv->s, dv->n, val->s, val->n);
    c = value_cmp(dv, val);
    if (c == 2)
        return F_NO;
    return rcp_json_streq(op, "gt") ? c > 0 : rcp_json_streq(op, "gte") ? c >= 0
        : rcp_json_streq(op, "lt") ? c < 0 : rcp_json_streq(op, "lte") ? c <= 0
        : F_AMB;
}

/* A filter tree, three-valued (Kleene): and/or/not over F_NO/F_YES/F_AMB. */
static int eval_filter(const rcp_json *f, const rcp_json *meta)
{
    const rcp_json *v;
    size_t i;
    int r;
    if ((v = rcp_json_get(f, "and")) || (v = rcp_json_get(f, "or"))) {
        int is_and = rcp_json_get(f, "and") != NULL, amb = 0;
        for (i = 0; i < v->n; i++) {
            r = eval_filter(&v->kids[i], meta);
            if (r == F_AMB)
                amb = 1;
            else if (r == (is_and ? F_NO : F_YES))
                return r;
        }
        return amb ? F_AMB : is_and ? F_YES : F_NO;
    }
    if ((v = rcp_json_get(f, "not")) != NULL) {
        r = eval_filter(v, meta);
        return r == F_AMB ? F_AMB : !r;
    }
    return eval_leaf(f, meta);
}

/* Append one finding to k->why; at most a few are spelled out. */
static void finding(check *k, int *n, const char *fmt, const char *a,
                    const char *b)
{
    if ((*n)++ == MAX_FINDINGS) {
        rcp_buf_puts(&k->why, "; ...");
        return;
    }
    if (*n > MAX_FINDINGS)
        return;
    if (k->why.len)
        rcp_buf_puts(&k->why, "; ");
    buf_printf(&k->why, fmt, a, b);
}

/* The evidence of one call: k->sent and k->got hold just it. */
static void keep_call(runner *R, check *k, rcp_request *r,
                      const char *method, const char *params,
                      const char *expected)
{
    rcp_buf one, save;
    rcp_jw w;
    if (k->sent.len || !r)
        return;
    save = R->sent;
    rcp_buf_init(&one);
    R->sent = one;
    record_call(R, r, method, params);
    one = R->sent;
    R->sent = save;
    sent_json(&k->sent, &one);
    rcp_buf_free(&one);
    rcp_jw_init(&w, &k->got);
    rcp_jw_arr(&w);
    if (rcp_request_response(r))
        rcp_jw_value(&w, rcp_request_response(r));
    rcp_jw_arr_end(&w);
    if (expected)
        expected_text(k, expected, NULL);
}

static int maxk(const runner *R, int want)
{
    long m = jlong(R->caps ? jptr(R->caps, "/retrieve/maxK") : NULL, want);
    return m > 0 && m < want ? (int)m : want;
}

/* The mode in which "matches the query" is exact: sparse (lexical), when
** advertised; NULL otherwise (then only soundness can be judged). */
static const char *lexical_mode(const runner *R)
{
    return cap_lists(R, "/retrieve/modes", "sparse") ? "sparse" : NULL;
}

/* retrieve params: the query, k, the mode (may be NULL) and more members
** (JSON text without braces, may be NULL). */
static void retrieve_params(rcp_buf *b, const char *query, int k,
                            const char *mode, const char *more)
{
    rcp_jw w;
    b->len = 0;
    rcp_buf_puts(b, "{\"query\":");
    rcp_jw_init(&w, b);
    rcp_jw_cstr(&w, query);
    buf_printf(b, ",\"k\":%d", k);
    if (mode)
        buf_printf(b, ",\"mode\":\"%s\"", mode);
    if (more && *more)
        buf_printf(b, ",%s", more);
    rcp_buf_puts(b, "}");
    rcp_buf_putc(b, '\0');
    b->len--;
}

/* One filter probe: retrieve the run's documents through filter f (JSON
** text) and judge soundness (every corpus hit satisfies f) and, in the
** lexical mode, completeness (every satisfying document is found). */
static void filter_probe(runner *R, check *k, rcp_client *c, const char *f,
                         const char *type, int *bad, int *skipped)
{
    rcp_buf p, more;
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *fj, *hits;
    const char *mode = lexical_mode(R);
    rcp_request *r;
    size_t i, h;
    int code, before = *bad;
    rcp_buf_init(&p);
    rcp_buf_init(&more);
    rcp_arena_init(&a, 0);
    buf_printf(&more, "\"filter\":%s", f);
    rcp_buf_putc(&more, '\0');
    retrieve_params(&p, R->run, maxk(R, 50), mode, more.data);
    r = call(R, c, "retrieve", p.data, R->tmo);
    fj = rcp_json_parse(&a, f, strlen(f), 0, &err);
    if (!answered(R, k, r, "a filtered retrieve")) {
        (*bad)++;
    } else if (rcp_request_error(r, &code)) {
        if ((code == RCP_OPTION_UNSUPPORTED && !cap_has(R, "/filter/operators"))
            || (code == RCP_INVALID_PARAMS && strcmp(type, "date") == 0))
            (*skipped)++;                /* an op not listed, or epoch ms */
        else
            finding(k, bad, "filter %s on an advertised field and operator "
                    "was refused%s", f, "");
    } else {
        hits = jptr(rcp_request_result(r), "/hits");
        for (h = 0; hits && hits->type == RCP_JSON_ARRAY && h < hits->n; h++) {
            const cdoc *d = hit_doc(R, &hits->kids[h]);
            if (d && eval_filter(fj, d->meta) == F_NO)
                finding(k, bad, "filter %s returned %s, which does not "
                        "satisfy it", f, d->id);
        }
        for (i = 0; mode && hits && i < R->ndocs; i++) {
            int found = 0;
            if (eval_filter(fj, R->docs[i].meta) != F_YES)
                continue;
            for (h = 0; h < hits->n && !found; h++)
                found = hit_doc(R, &hits->kids[h]) == &R->docs[i];
            if (!found)
                finding(k, bad, "filter %s did not return %s, which "
                        "satisfies it and matches the query", f,
                        R->docs[i].id);
        }
    }
    if (*bad > before)
        keep_call(R, k, r, "retrieve", p.data, "every hit satisfies the "
                  "filter; in mode sparse, every document of the corpus "
                  "that satisfies it is found");
    rcp_request_free(c, r);
    rcp_arena_free(&a);
    rcp_buf_free(&p);
    rcp_buf_free(&more);
}

/* Is op allowed on a field of type t (§8's table) and advertised? */
static int op_offered(const runner *R, const char *op)
{
    return !cap_has(R, "/filter/operators")
        || cap_lists(R, "/filter/operators", op);
}

/* The first advertised field of type t, or NULL. */
static const rcp_json *field_of_type(const runner *R, const char *t)
{
    const rcp_json *f = R->caps ? jptr(R->caps, "/filter/fields") : NULL;
    size_t i;
    for (i = 0; f && f->type == RCP_JSON_OBJECT && i < f->n; i++)
        if (rcp_json_streq(&f->kids[i], t))
            return &f->kids[i];
    return NULL;
}

/* A combinator from corpus.json with each {"type": T, ...} leaf given
** the first advertised field of type T; -1 when one is missing or its
** operator is not offered. */
static int write_combinator(const runner *R, rcp_jw *w, const rcp_json *v)
{
    size_t i;
    const rcp_json *t = rcp_json_get(v, "type");
    if (v->type == RCP_JSON_ARRAY) {
        rcp_jw_arr(w);
        for (i = 0; i < v->n; i++)
            if (write_combinator(R, w, &v->kids[i]) != 0)
                return -1;
        rcp_jw_arr_end(w);
        return 0;
    }
    if (v->type != RCP_JSON_OBJECT) {
        rcp_jw_value(w, v);
        return 0;
    }
    if (t) {
        const rcp_json *f = field_of_type(R, cstr(t, ""));
        if (!f || !op_offered(R, cstr(rcp_json_get(v, "op"), "")))
            return -1;
        rcp_jw_obj(w);
        rcp_jw_key(w, "field");
        rcp_jw_str(w, f->key, f->keylen);
        rcp_jw_key(w, "op");
        rcp_jw_value(w, rcp_json_get(v, "op"));
        rcp_jw_key(w, "value");
        rcp_jw_value(w, rcp_json_get(v, "value"));
        rcp_jw_obj_end(w);
        return 0;
    }
    rcp_jw_obj(w);
    for (i = 0; i < v->n; i++) {
        rcp_jw_keyn(w, v->kids[i].key, v->kids[i].keylen);
        if (write_combinator(R, w, &v->kids[i]) != 0)
            return -1;
    }
    rcp_jw_obj_end(w);
    return 0;
}

/* §8: filter is applied -- on every advertised field, with every
** advertised operator its type allows, and in and/or/not. */
static int code_filter_applied(runner *R, check *k, rcp_client *c)
{
    const rcp_json *f = jptr(R->caps, "/filter/fields");
    const rcp_json *probes = rcp_json_get(R->corpus, "probes");
    const rcp_json *comb = rcp_json_get(R->corpus, "combinators");
    size_t i, j, tried = 0;
    int bad = 0, skipped = 0;
    if (ensure_corpus(R, c, k) != 0)
        return ST_FAIL;
    for (i = 0; f && i < f->n && !R->aborted; i++) {
        const rcp_json *e = &f->kids[i];
        const char *name = f->type == RCP_JSON_OBJECT ? e->key : e->s;
        size_t n = f->type == RCP_JSON_OBJECT ? e->keylen : e->n;
        const char *t = field_type(R, name, n);
        const rcp_json *ps = t ? rcp_json_get(probes, t) : NULL;
        for (j = 0; ps && j < ps->n && !R->aborted; j++) {
            const char *op = cstr(rcp_json_get(&ps->kids[j], "op"), "");
            rcp_buf fb;
            rcp_jw w;
            if (!op_offered(R, op))
                continue;
            rcp_buf_init(&fb);
            rcp_jw_init(&w, &fb);
            rcp_jw_obj(&w);
            rcp_jw_key(&w, "field");
            rcp_jw_str(&w, name, n);
            rcp_jw_key(&w, "op");
            rcp_jw_cstr(&w, op);
            rcp_jw_key(&w, "value");
            rcp_jw_value(&w, rcp_json_get(&ps->kids[j], "value"));
            rcp_jw_obj_end(&w);
            rcp_buf_putc(&fb, '\0');
            if (!fb.oom)
                filter_probe(R, k, c, fb.data, t, &bad, &skipped);
            tried++;
            rcp_buf_free(&fb);
        }
    }
    for (i = 0; comb && i < comb->n && !R->aborted; i++) {
        rcp_buf fb;
        rcp_jw w;
        rcp_buf_init(&fb);
        rcp_jw_init(&w, &fb);
        if (write_combinator(R, &w, &comb->kids[i]) == 0) {
            rcp_buf_putc(&fb, '\0');
            if (!fb.oom)
                filter_probe(R, k, c, fb.data, "", &bad, &skipped);
            tried++;
        }
        rcp_buf_free(&fb);
    }
    if (!bad && !tried)
        rcp_buf_puts(&k->why, "no advertised field has a type the corpus "
                     "knows");
    return bad ? ST_FAIL : tried ? ST_PASS : ST_SKIP;
}

/* A retrieve from a code check: its hits (NULL with a finding when it
** failed); *out is the request (free it). */
static const rcp_json *retrieve_hits(runner *R, check *k, rcp_client *c,
                                     const char *params, rcp_request **out,
                                     int *bad)
{
    rcp_request *r = call(R, c, "retrieve", params, R->tmo);
    const rcp_json *hits;
    int code;
    *out = r;
    if (!answered(R, k, r, "retrieve")) {
        (*bad)++;
        return NULL;
    }
    hits = jptr(rcp_request_result(r), "/hits");
    if (rcp_request_error(r, &code) || !hits || hits->type != RCP_JSON_ARRAY) {
        finding(k, bad, "retrieve %s was not answered with hits%s", params,
                "");
        keep_call(R, k, r, "retrieve", params, "a result with hits");
        return NULL;
    }
    return hits;
}

/* The hits as "id score, ..." for comparisons and messages. */
static void hits_sig(rcp_buf *b, const rcp_json *hits)
{
    size_t i;
    b->len = 0;
    for (i = 0; hits && i < hits->n; i++) {
        buf_json(b, rcp_json_get(&hits->kids[i], "id"), 80);
        rcp_buf_putc(b, ' ');
        buf_json(b, rcp_json_get(&hits->kids[i], "score"), 40);
        rcp_buf_puts(b, ", ");
    }
    rcp_buf_putc(b, '\0');
    b->len--;
}

/* §7.7, §3.1: mode selects the recall path.  A query only the lexical
** path can match finds its document first in sparse; the advertised modes
** do not all return the same list; a query sharing no term with any
** document is recalled by dense but not by sparse (SHOULD). */
static int code_modes_recall(runner *R, check *k, rcp_client *c)
{
    static const char *const modes[] = { "dense", "sparse", "hybrid" };
    const rcp_json *q = jptr(R->corpus, "/queries");
    const char *only = cstr(jptr(q, "/sparseOnly/text"), "");
    const cdoc *target;
    rcp_buf p, sig[3];
    rcp_request *r;
    const rcp_json *hits;
    int bad = 0, soft = 0, i, j, have[3];
    if (ensure_corpus(R, c, k) != 0)
        return ST_FAIL;
    target = doc_by_key(R, cstr(jptr(q, "/sparseOnly/key"), ""));
    rcp_buf_init(&p);
    if (cap_lists(R, "/retrieve/modes", "sparse")) {
        retrieve_params(&p, only, 5, "sparse", NULL);
        hits = retrieve_hits(R, k, c, p.data, &r, &bad);
        if (hits && (!hits->n || hit_doc(R, &hits->kids[0]) != target)) {
            finding(k, &bad, "sparse retrieve of \"%s\" did not rank %s "
                    "first (the one document holding both words)", only,
                    target ? target->id : "?");
            keep_call(R, k, r, "retrieve", p.data, "the lexical match first");
        }
        rcp_request_free(c, r);
    }
    for (i = 0; i < 3; i++) {
        rcp_buf_init(&sig[i]);
        have[i] = cap_lists(R, "/retrieve/modes", modes[i]);
        if (!have[i] || R->aborted)
            continue;
        retrieve_params(&p, cstr(rcp_json_get(q, "general"), ""), 5,
                        modes[i], NULL);
        hits = retrieve_hits(R, k, c, p.data, &r, &bad);
        hits_sig(&sig[i], hits);
        have[i] = hits != NULL;
        rcp_request_free(c, r);
    }
    for (i = 0; i < 3; i++)
        for (j = i + 1; j < 3; j++)
            if (have[i] && have[j] && sig[i].len
                && strcmp(sig[i].data, sig[j].data) == 0)
                finding(k, &bad, "modes %s and %s returned the very same "
                        "hits and scores: mode is not applied", modes[i],
                        modes[j]);
    for (i = 0; i < 3; i += 1) {
        const char *nowhere = cstr(rcp_json_get(q, "nowhere"), "");
        int corpus_hits = 0;
        size_t h;
        if (i == 2 || !have[i] || R->aborted || bad)
            continue;
        retrieve_params(&p, nowhere, 5, modes[i], NULL);
        hits = retrieve_hits(R, k, c, p.data, &r, &bad);
        for (h = 0; hits && h < hits->n; h++)
            corpus_hits += hit_doc(R, &hits->kids[h]) != NULL;
        if (hits && i == 1 && corpus_hits && !soft++)
            buf_printf(&k->why, "%ssparse recalled documents sharing no "
                       "term with \"%s\" [SHOULD]", k->why.len ? "; " : "",
                       nowhere);
        if (hits && i == 0 && !hits->n && !soft++)
            buf_printf(&k->why, "%sdense recalled nothing for \"%s\" on a "
                       "non-empty corpus [SHOULD]", k->why.len ? "; " : "",
                       nowhere);
        rcp_request_free(c, r);
    }
    for (i = 0; i < 3; i++)
        rcp_buf_free(&sig[i]);
    rcp_buf_free(&p);
    return bad ? ST_FAIL : soft ? ST_WARN : ST_PASS;
}

static int close_enough(double a, double b)
{
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= 1e-5 * (m > 1 ? m : 1);
}

/* §7.6: "order" is a permutation (a prefix when topN truncates) of
** distinct indices sorted best-first by scores. */
static int order_ok(const rcp_json *res, size_t n, rcp_buf *why)
{
    const rcp_json *o = rcp_json_get(res, "order");
    const rcp_json *sc = rcp_json_get(res, "scores");
    char seen[64];
    size_t i;
    int64_t x, prev = -1;
    if (!o)
        return 1;
    memset(seen, 0, sizeof seen);
    if (o->type != RCP_JSON_ARRAY || o->n > n || n > sizeof seen) {
        rcp_buf_puts(why, "order is not an array of at most one index per "
                     "passage");
        return 0;
    }
    for (i = 0; i < o->n; i++) {
        if (!rcp_json_int(&o->kids[i], &x) || x < 0 || (size_t)x >= n
            || seen[x]++) {
            rcp_buf_puts(why, "order holds an index twice or out of range");
            return 0;
        }
        if (prev >= 0 && rcp_json_num(&sc->kids[x])
            > rcp_json_num(&sc->kids[prev])
            && !close_enough(rcp_json_num(&sc->kids[x]),
                             rcp_json_num(&sc->kids[prev]))) {
            rcp_buf_puts(why, "order is not sorted best-first by score");
            return 0;
        }
        prev = x;
    }
    return 1;
}

/* §7.6: scores[i] belongs to passages[i]: permute the passages and the
** scores permute with them; order is a permutation sorted by score. */
static int code_rerank_follows(runner *R, check *k, rcp_client *c)
{
    static const char *const pass[] = {
        "solar panels convert sunlight into electricity",
        "wind turbines turn slowly on the windy hill",
        "a quiet river flows past the old mill",
        "copper wires carry electric current",
        "the baker kneads dough before sunrise" };
    enum { N = 5 };
    static const int shift[3] = { 0, N - 1, 2 };   /* same, reversed, rot */
    double first[N];
    rcp_buf p;
    rcp_jw w;
    int bad = 0, t, i;
    const rcp_json *m = jptr(R->caps, "/rerank/methods");
    if (m && m->type == RCP_JSON_ARRAY && m->n == 1
        && rcp_json_streq(&m->kids[0], "llm")) {
        rcp_buf_puts(&k->why, "only the llm method is offered: its scores "
                     "need not repeat");
        return ST_SKIP;
    }
    rcp_buf_init(&p);
    for (t = 0; t < 3 && !bad && !R->aborted; t++) {
        rcp_request *r;
        const rcp_json *sc;
        int code;
        p.len = 0;
        rcp_jw_init(&w, &p);
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "query");
        rcp_jw_cstr(&w, "solar electricity from sunlight");
        rcp_jw_key(&w, "passages");
        rcp_jw_arr(&w);
        for (i = 0; i < N; i++)      /* passage i is pass[perm(i)] */
            rcp_jw_cstr(&w, pass[t == 1 ? N - 1 - i : (i + shift[t]) % N]);
        rcp_jw_arr_end(&w);
        rcp_jw_obj_end(&w);
        rcp_buf_putc(&p, '\0');
        r = call(R, c, "rerank", p.data, R->tmo);
        sc = jptr(rcp_request_result(r), "/scores");
        if (!answered(R, k, r, "rerank")) {
            bad++;
        } else if (rcp_request_error(r, &code) || !sc
                   || sc->type != RCP_JSON_ARRAY || sc->n != N) {
            finding(k, &bad, "rerank did not give one score per passage%s%s",
                    "", "");
        } else {
            rcp_buf why;
            rcp_buf_init(&why);
            for (i = 0; i < N && !bad; i++) {
                int src = t == 1 ? N - 1 - i : (i + shift[t]) % N;
                double v = rcp_json_num(&sc->kids[i]);
                if (t == 0)
                    first[src] = v;
                else if (!close_enough(v, first[src]))
                    finding(k, &bad, "with the passages permuted, a "
                            "passage's score changed: scores[i] does not "
                            "belong to passages[i]%s%s", "", "");
            }
            if (!bad && !order_ok(rcp_request_result(r), N, &why)) {
                rcp_buf_putc(&why, '\0');
                finding(k, &bad, "%s%s", why.data ? why.data : "", "");
            }
            rcp_buf_free(&why);
        }
        if (bad)
            keep_call(R, k, r, "rerank", p.data, "the same score for the "
                      "same passage wherever it stands; order sorted by "
                      "score");
        rcp_request_free(c, r);
    }
    rcp_buf_free(&p);
    return bad ? ST_FAIL : ST_PASS;
}

/* Scores on the advertised scale (§6.1 scoreScale): the bounds a scale
** implies; 0 when the score is outside them. */
static int on_scale(const char *scale, double v)
{
    const double e = 1e-6;
    if (!scale)
        return 1;
    if (strcmp(scale, "probability") == 0)
        return v >= -e && v <= 1 + e;
    if (strcmp(scale, "cosine") == 0)
        return v >= -1 - e && v <= 1 + e;
    if (strcmp(scale, "bm25") == 0)
        return v >= -e;
    return 1;
}

/* One hit list's invariants; the findings go to k. */
static void judge_hits(runner *R, check *k, const rcp_json *hits, int kk,
                       const char *mode, int *bad)
{
    const rcp_json *ss = R->caps ? jptr(R->caps, "/retrieve/scoreScale")
        : NULL;
    const char *scale = rcp_json_streq(ss, "probability") ? "probability"
        : rcp_json_streq(ss, "cosine") ? "cosine"
        : rcp_json_streq(ss, "bm25") ? "bm25" : NULL;
    int conf = jbool(R->caps ? jptr(R->caps, "/retrieve/confidence") : NULL,
                     0);
    size_t i, j;
    mode = mode ? mode : "the default mode";
    if ((int)hits->n > kk)
        finding(k, bad, "%s returned more than k hits%s", mode, "");
    for (i = 0; i < hits->n; i++) {
        const rcp_json *h = &hits->kids[i];
        const rcp_json *sc = rcp_json_get(h, "score");
        const rcp_json *cf = rcp_json_get(h, "confidence");
        for (j = 0; j < i; j++)
            if (json_equal(rcp_json_get(h, "id"),
                           rcp_json_get(&hits->kids[j], "id")))
                finding(k, bad, "%s returned one id twice%s", mode, "");
        if (!sc || sc->type != RCP_JSON_NUMBER) {
            finding(k, bad, "%s returned a hit without a number score%s",
                    mode, "");
            continue;
        }
        if (i && rcp_json_get(&hits->kids[i - 1], "score")
            && rcp_json_num(sc) > rcp_json_num(rcp_json_get(&hits->kids[i - 1],
                                                            "score")))
            finding(k, bad, "%s returned hits out of score order (§4.6: "
                    "higher = more relevant)%s", mode, "");
        if (!on_scale(scale, rcp_json_num(sc)))
            finding(k, bad, "%s returned a score outside the advertised "
                    "scoreScale %s", mode, scale);
        if ((cf || conf) && !(cf && cf->type == RCP_JSON_NUMBER
                              && rcp_json_num(cf) >= 0
                              && rcp_json_num(cf) <= 1))
            finding(k, bad, "%s returned a hit whose confidence is not in "
                    "[0,1]%s", mode, conf ? " (retrieve.confidence is "
                    "advertised)" : "");
    }
}

/* §7.7, §4.6, §6.1: in every advertised mode at most k hits, unique ids,
** scores descending and on the advertised scale, confidence in [0,1]. */
static int code_hits_invariants(runner *R, check *k, rcp_client *c)
{
    static const char *const modes[] = { "dense", "sparse", "hybrid", NULL };
    const char *q = cstr(jptr(R->corpus, "/queries/general"), "");
    rcp_buf p;
    int bad = 0, i, any = 0, kk;
    if (ensure_corpus(R, c, k) != 0)
        return ST_FAIL;
    rcp_buf_init(&p);
    for (i = 0; i < 4 && !R->aborted; i++) {
        rcp_request *r;
        const rcp_json *hits;
        int before = bad;
        if (i < 3 && !cap_lists(R, "/retrieve/modes", modes[i]))
            continue;
        if (i == 3 && any)
            break;                       /* no modes listed: the default */
        any = 1;
        for (kk = 3; kk <= 12 && !R->aborted; kk += 9) {
            retrieve_params(&p, q, kk, modes[i], NULL);
            hits = retrieve_hits(R, k, c, p.data, &r, &bad);
            if (hits)
                judge_hits(R, k, hits, kk, modes[i], &bad);
            if (bad > before)
                keep_call(R, k, r, "retrieve", p.data, "at most k hits, "
                          "unique ids, scores descending on the advertised "
                          "scale, confidence in [0,1]");
            rcp_request_free(c, r);
        }
    }
    rcp_buf_free(&p);
    return bad ? ST_FAIL : ST_PASS;
}

/* §14.2 (SHOULD honour minScore): with minScore at the median score of a
** first call, every hit scores at least that, and none of the first
** call's hits above it is lost. */
static int code_min_score(runner *R, check *k, rcp_client *c)
{
    const char *q = cstr(jptr(R->corpus, "/queries/general"), "");
    rcp_buf p, more;
    rcp_request *r, *r2 = NULL;
    const rcp_json *h1, *h2 = NULL;
    double t = 0;
    size_t i, j;
    int bad = 0;
    if (ensure_corpus(R, c, k) != 0)
        return ST_FAIL;
    rcp_buf_init(&p);
    rcp_buf_init(&more);
    retrieve_params(&p, q, 8, lexical_mode(R), NULL);
    h1 = retrieve_hits(R, k, c, p.data, &r, &bad);
    if (h1 && h1->n >= 2) {
        t = rcp_json_num(rcp_json_get(&h1->kids[h1->n / 2], "score"));
        buf_printf(&more, "\"minScore\":%.17g", t);
        rcp_buf_putc(&more, '\0');
        retrieve_params(&p, q, 8, lexical_mode(R), more.data);
        h2 = retrieve_hits(R, k, c, p.data, &r2, &bad);
    }
    for (i = 0; h2 && i < h2->n; i++)
        if (rcp_json_num(rcp_json_get(&h2->kids[i], "score")) < t)
            finding(k, &bad, "a hit scored below minScore%s%s", "", "");
    for (i = 0; h2 && i < h1->n; i++) {
        int found = 0;
        if (rcp_json_num(rcp_json_get(&h1->kids[i], "score")) < t)
            continue;
        for (j = 0; j < h2->n && !found; j++)
            found = json_equal(rcp_json_get(&h1->kids[i], "id"),
                               rcp_json_get(&h2->kids[j], "id"));
        if (!found)
            finding(k, &bad, "a hit scoring above minScore was dropped%s%s",
                    "", "");
    }
    if (bad)
        keep_call(R, k, r2 ? r2 : r, "retrieve", p.data, "every hit scores "
                  "at least minScore, and the first call's hits above it "
                  "remain");
    rcp_request_free(c, r);
    rcp_request_free(c, r2);
    rcp_buf_free(&p);
    rcp_buf_free(&more);
    if (!h2 && !bad) {
        rcp_buf_puts(&k->why, "fewer than two hits to set a threshold");
        return ST_SKIP;
    }
    return bad ? ST_FAIL : ST_PASS;
}

/* index/add or index/delete of one document from a code check: 0 done,
** -1 failed (a finding), 1 refused with code *code. */
static int write_one(runner *R, check *k, rcp_client *c, const char *method,
                     const char *params, int *code, int *bad)
{
    rcp_request *r = call(R, c, method, params, R->tmo);
    int rc = 0;
    if (!answered(R, k, r, method)) {
        (*bad)++;
        rc = -1;
    } else if (rcp_request_error(r, code)) {
        rc = 1;
    }
    rcp_request_free(c, r);
    return rc;
}

/* Retrieve until the document's presence is `want` (a store may index
** asynchronously: up to SETTLE_MS); 1 when it got there.  *text: the hit's
** text when it was found (kept in the probe arena). */
static int await_doc(runner *R, check *k, rcp_client *c, const char *params,
                     const char *id, int want, const rcp_json **text,
                     int *bad)
{
    double end = now_ms() + SETTLE_MS;
    for (;;) {
        rcp_request *r;
        const rcp_json *hits = retrieve_hits(R, k, c, params, &r, bad);
        size_t i, n = 0;
        for (i = 0; hits && i < hits->n; i++) {
            const rcp_json *h = &hits->kids[i];
            const rcp_json *hid = rcp_json_get(h, "id");
            const rcp_json *dj = jptr(h, "/chunk/docId");
            if (dj && dj->type == RCP_JSON_STRING)
                hid = dj;
            if (hid && hid->type == RCP_JSON_STRING && hid->n == strlen(id)
                && memcmp(hid->s, id, hid->n) == 0) {
                n++;
                if (text)
                    *text = keep_in(&R->probe, rcp_json_get(h, "text"));
            }
        }
        if (n > 1)
            finding(k, bad, "%s was returned %s times in one list", id,
                    n == 2 ? "two" : "several");
        rcp_request_free(c, r);
        if (!hits || (n > 0) == want || now_ms() >= end || R->aborted)
            return hits && (n > 0) == want;
        poll(NULL, 0, 50);
    }
}

/* §7.11: a deleted document is gone from results. */
static int code_delete_removes(runner *R, check *k, rcp_client *c)
{
    char id[96], doc[256], del[160];
    rcp_buf p;
    int bad = 0, code = 0, st = ST_PASS;
    snprintf(id, sizeof id, "conform-%s-gone", R->run);
    snprintf(doc, sizeof doc, "{\"documents\":[{\"id\":\"%s\",\"text\":\"%s "
             "zanzibar quagga\"}]}", id, R->run);
    snprintf(del, sizeof del, "{\"ids\":[\"%s\"]}", id);
    rcp_buf_init(&p);
    {
        char q[64];
        snprintf(q, sizeof q, "%s zanzibar quagga", R->run);
        retrieve_params(&p, q, 20, lexical_mode(R), NULL);
    }
    if (write_one(R, k, c, "index/add", doc, &code, &bad) != 0) {
        if (!bad)
            finding(k, &bad, "index/add was refused (index.writable is "
                    "advertised)%s%s", "", "");
    } else if (!await_doc(R, k, c, p.data, id, 1, NULL, &bad)) {
        if (!bad) {
            rcp_buf_puts(&k->why, "the added document never came back, so "
                         "its removal cannot be seen");
            st = ST_SKIP;
        }
    } else if (write_one(R, k, c, "index/delete", del, &code, &bad) != 0) {
        finding(k, &bad, "index/delete was refused%s%s", "", "");
    } else if (!await_doc(R, k, c, p.data, id, 0, NULL, &bad) && !bad) {
        finding(k, &bad, "%s is still returned after index/delete removed "
                "it%s", id, "");
    }
    if (bad)
        (void)write_one(R, k, c, "index/delete", del, &code, &bad);
    rcp_buf_free(&p);
    return bad ? ST_FAIL : st;
}

/* §7.10: re-adding an id replaces the document: the new text is what is
** found (once), and the old text no longer finds it (lexical mode). */
static int code_upsert_replaces(runner *R, check *k, rcp_client *c)
{
    char id[96], v1[256], v2[256], del[160], q1[64], q2[64], want[64];
    rcp_buf p1, p2;
    const rcp_json *text = NULL;
    int bad = 0, code = 0, st = ST_PASS, rc;
    snprintf(id, sizeof id, "conform-%s-up", R->run);
    snprintf(q1, sizeof q1, "%s aardvark burrow", R->run);
    snprintf(q2, sizeof q2, "%s bumblebee meadow", R->run);
    snprintf(want, sizeof want, "%s bumblebee meadow", R->run);
    snprintf(v1, sizeof v1, "{\"documents\":[{\"id\":\"%s\",\"text\":\"%s\"}]}",
             id, q1);
    snprintf(v2, sizeof v2, "{\"documents\":[{\"id\":\"%s\",\"text\":\"%s\"}]}",
             id, q2);
    snprintf(del, sizeof del, "{\"ids\":[\"%s\"]}", id);
    rcp_buf_init(&p1);
    rcp_buf_init(&p2);
    /* the old text's own words: the new text shares only the run's word */
    retrieve_params(&p1, "aardvark burrow", 20, lexical_mode(R),
                    "\"includeText\":true");
    retrieve_params(&p2, q2, 20, lexical_mode(R), "\"includeText\":true");
    if (write_one(R, k, c, "index/add", v1, &code, &bad) != 0) {
        if (!bad)
            finding(k, &bad, "index/add was refused%s%s", "", "");
    } else if ((rc = write_one(R, k, c, "index/add", v2, &code, &bad)) != 0) {
        if (rc == 1 && code == RCP_CONFLICT) {
            rcp_buf_puts(&k->why, "this server cannot upsert and says so "
                         "(-32016, allowed by §7.10)");
            st = ST_SKIP;
        } else if (!bad) {
            finding(k, &bad, "re-adding an id failed (§7.10: MUST NOT "
                    "fail)%s%s", "", "");
        }
    } else if (!await_doc(R, k, c, p2.data, id, 1, &text, &bad)) {
        if (!bad)
            finding(k, &bad, "%s is not found by its new text%s", id, "");
    } else if (text && !rcp_json_streq(text, want)) {
        finding(k, &bad, "%s still carries its old text after the re-add%s",
                id, "");
    } else if (lexical_mode(R)
               && !await_doc(R, k, c, p1.data, id, 0, NULL, &bad) && !bad) {
        finding(k, &bad, "the replaced text still finds %s (mode sparse)%s",
                id, "");
    }
    (void)write_one(R, k, c, "index/delete", del, &code, &bad);
    rcp_buf_free(&p1);
    rcp_buf_free(&p2);
    return bad ? ST_FAIL : st;
}

/* §7.7.1: a pinned indexVersion serves its snapshot after a write (or
** fails -32010 when it is gone) -- never the changed corpus. */
static int code_snapshot_pinned(runner *R, check *k, rcp_client *c)
{
    char q[96], doc[320], del[160], more[256];
    rcp_buf p, s1, s2;
    rcp_request *r = NULL, *r2 = NULL;
    const rcp_json *h1, *h2, *v;
    int bad = 0, code = 0;
    if (ensure_corpus(R, c, k) != 0)
        return ST_FAIL;
    snprintf(q, sizeof q, "%s lighthouse keeper storm", R->run);
    snprintf(doc, sizeof doc, "{\"documents\":[{\"id\":\"conform-%s-snap\","
             "\"text\":\"%s lighthouse keeper storm lighthouse keeper "
             "storm\"}]}", R->run, R->run);
    snprintf(del, sizeof del, "{\"ids\":[\"conform-%s-snap\"]}", R->run);
    rcp_buf_init(&p);
    rcp_buf_init(&s1);
    rcp_buf_init(&s2);
    retrieve_params(&p, q, 5, lexical_mode(R), NULL);
    h1 = retrieve_hits(R, k, c, p.data, &r, &bad);
    v = jptr(rcp_request_result(r), "/indexVersion");
    if (h1 && (!v || v->type != RCP_JSON_STRING)) {
        finding(k, &bad, "retrieve.snapshots is advertised but the result "
                "names no indexVersion (§7.7.1: echoes the snapshot "
                "served)%s%s", "", "");
        keep_call(R, k, r, "retrieve", p.data, "an indexVersion");
    } else if (h1 && write_one(R, k, c, "index/add", doc, &code, &bad) == 0) {
        rcp_buf pv;
        rcp_jw w;
        rcp_buf_init(&pv);
        rcp_jw_init(&w, &pv);
        rcp_jw_value(&w, v);
        rcp_buf_putc(&pv, '\0');
        snprintf(more, sizeof more, "\"indexVersion\":%s", pv.data);
        rcp_buf_free(&pv);
        hits_sig(&s1, h1);
        retrieve_params(&p, q, 5, lexical_mode(R), more);
        r2 = call(R, c, "retrieve", p.data, R->tmo);
        h2 = jptr(rcp_request_result(r2), "/hits");
        if (!answered(R, k, r2, "the pinned retrieve")) {
            bad++;
        } else if (rcp_request_error(r2, &code)) {
            if (code != RCP_BACKEND_UNAVAILABLE && code != RCP_CONFLICT
                && code != RCP_NOT_FOUND)
                finding(k, &bad, "the pinned retrieve failed with a code "
                        "other than -32010%s%s", "", "");
        } else if (hits_sig(&s2, h2), strcmp(s1.data, s2.data) != 0) {
            finding(k, &bad, "the pinned indexVersion served results that "
                    "differ from its snapshot's (after a write)%s%s", "", "");
        }
        if (bad)
            keep_call(R, k, r2, "retrieve", p.data, "the snapshot's hits, "
                      "unchanged by the write, or -32010");
        (void)write_one(R, k, c, "index/delete", del, &code, &bad);
    }
    rcp_request_free(c, r);
    rcp_request_free(c, r2);
    rcp_buf_free(&p);
    rcp_buf_free(&s1);
    rcp_buf_free(&s2);
    return bad ? ST_FAIL : ST_PASS;
}

/* §10: pages are disjoint, at most k long, and together they are the
** ranking one unpaged retrieve gives (up to ties). */
static int code_pagination(runner *R, check *k, rcp_client *c)
{
    rcp_buf p, more, ids;
    rcp_arena a;
    const rcp_json *all[MAX_PAGES * PAGE_K], *ref;
    size_t n = 0, i, j;
    int bad = 0, pages = 0, soft = 0;
    const rcp_json *cursor = NULL;
    rcp_request *r;
    if (ensure_corpus(R, c, k) != 0)
        return ST_FAIL;
    rcp_buf_init(&p);
    rcp_buf_init(&more);
    rcp_buf_init(&ids);
    rcp_arena_init(&a, 0);
    do {
        const rcp_json *hits;
        more.len = 0;
        if (cursor) {
            rcp_jw w;
            rcp_buf_puts(&more, "\"cursor\":");
            rcp_jw_init(&w, &more);
            rcp_jw_value(&w, cursor);
        }
        rcp_buf_putc(&more, '\0');
        retrieve_params(&p, R->run, PAGE_K, lexical_mode(R), more.data);
        hits = retrieve_hits(R, k, c, p.data, &r, &bad);
        cursor = keep_in(&a, jptr(rcp_request_result(r), "/nextCursor"));
        if (cursor && (cursor->type != RCP_JSON_STRING || !cursor->n))
            cursor = NULL;               /* missing/empty: no more */
        for (i = 0; hits && i < hits->n; i++) {
            if (i >= PAGE_K) {
                finding(k, &bad, "a page held more than k hits%s%s", "", "");
                break;
            }
            for (j = 0; j < n; j++)
                if (json_equal(rcp_json_get(&hits->kids[i], "id"),
                               rcp_json_get(all[j], "id")))
                    finding(k, &bad, "a hit came again on a later page (the "
                            "pages are not disjoint)%s%s", "", "");
            if (n < sizeof all / sizeof *all)
                all[n++] = keep_in(&a, &hits->kids[i]);
        }
        if (bad)
            keep_call(R, k, r, "retrieve", p.data, "disjoint pages of at "
                      "most k hits");
        rcp_request_free(c, r);
    } while (cursor && ++pages < MAX_PAGES && !bad && !R->aborted);
    if (!bad && pages == 0 && n == PAGE_K) {
        rcp_buf_puts(&k->why, "pagination is advertised but a full first "
                     "page came without nextCursor although the corpus "
                     "holds more [SHOULD]");
        soft = 1;
    }
    if (!bad && pages > 0) {
        /* the pages against one unpaged retrieve of as many hits */
        retrieve_params(&p, R->run, (int)n, lexical_mode(R), NULL);
        ref = retrieve_hits(R, k, c, p.data, &r, &bad);
        for (i = 0; ref && i < n && !bad; i++) {
            const rcp_json *want = i < ref->n ? &ref->kids[i] : NULL;
            double sw = want ? rcp_json_num(rcp_json_get(want, "score")) : 0;
            int found = 0;
            for (j = 0; want && j < ref->n && !found; j++)
                found = json_equal(rcp_json_get(all[i], "id"),
                                   rcp_json_get(&ref->kids[j], "id"))
                    && close_enough(rcp_json_num(rcp_json_get(&ref->kids[j],
                                                              "score")), sw);
            if (!found)
                finding(k, &bad, "the pages together are not the ranking "
                        "one retrieve of that many hits gives%s%s", "", "");
        }
        if (bad)
            keep_call(R, k, r, "retrieve", p.data, "the same ranking as the "
                      "pages, up to ties");
        rcp_request_free(c, r);
    }
    rcp_arena_free(&a);
    rcp_buf_free(&p);
    rcp_buf_free(&more);
    rcp_buf_free(&ids);
    return bad ? ST_FAIL : soft ? ST_WARN : ST_PASS;
}

/* §6 against the normative schema: the capability set initialize gave. */
static int code_capabilities_schema(runner *R, check *k, rcp_client *c)
{
    const rcp_schema *sc = rcp_schema_rcp1();
    char err[300];
    (void)c;
    if (!sc) {
        rcp_buf_puts(&k->why, "the schema could not be loaded (out of "
                     "memory)");
        return ST_FAIL;
    }
    if (rcp_schema_validate(sc, "#/$defs/InitializeResult", R->init_result,
                            err, sizeof err) != 0) {
        buf_printf(&k->why, "the initialize result breaks the schema: %s",
                   err);
        k->got.len = 0;
        rcp_buf_putc(&k->got, '[');
        buf_json_raw(&k->got, R->init_result);
        rcp_buf_putc(&k->got, ']');
        expected_text(k, "a result valid against #/$defs/InitializeResult "
                      "(rcp-1.0.json)", NULL);
        return ST_FAIL;
    }
    return ST_PASS;
}

/* MARK: - Code checks: HTTP (§5.2) --------------------------------------- */

/* These speak HTTP itself (rcp_client_http): the status, the headers and
** the body framing are what they judge, which the JSON-RPC layer of the
** client does not show.  Each records the exchange as its evidence. */

/* A client of the server under test of the check's own: with the
** --header lines or without (auth), asking for SSE or not. */
static rcp_client *http_peer(runner *R, check *k, int with_headers, int sse)
{
    rcp_client_opts o;
    char err[256];
    rcp_client *c;
    memset(&o, 0, sizeof o);
    o.headers = with_headers ? R->headers : NULL;
    o.sse = sse;
    err[0] = '\0';
    if (!(c = rcp_client_connect(R->url, &o, err, sizeof err)))
        buf_printf(&k->why, "cannot reach the server: %s", err);
    return c;
}

/* A frame of evidence: the text of a request or a response, as raw. */
static void evidence_raw(rcp_buf *dst, const char *p, size_t n)
{
    rcp_jw w;
    rcp_buf t;
    if (dst->len == 0)
        rcp_buf_putc(dst, '[');
    else if (dst->data[dst->len - 1] == ']')
        dst->data[--dst->len] = ',';
    rcp_buf_init(&t);
    buf_show(&t, p, n, KEEP_FRAME);
    rcp_jw_init(&w, dst);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "raw");
    rcp_jw_str(&w, t.data ? t.data : "", t.len);
    rcp_jw_key(&w, "bytes");
    rcp_jw_int(&w, (int64_t)n);
    rcp_jw_obj_end(&w);
    rcp_buf_putc(dst, ']');
    rcp_buf_free(&t);
}

/* One exchange a check judges: the path it went to, the reply, and the
** reply's body parsed as one JSON value (NULL when there is none). */
typedef struct http_x {
    rcp_buf         path;
    rcp_http_reply  rep;
    rcp_arena       a;
    const rcp_json *j;
} http_x;

/* verb to the base followed by tail ("/ping"; "" is the base itself) on
** c, with headers and body (NULL: none), kept as k's evidence.  Free x
** with http_done whatever this returns.  0, or -1 (no response in time,
** or no memory for the path: the reason is in k->why). */
static int exchange(runner *R, check *k, rcp_client *c, http_x *x,
                    const char *verb, const char *tail, const char *headers,
                    const char *body)
{
    rcp_buf t;
    rcp_json_err err;
    memset(x, 0, sizeof *x);
    rcp_buf_init(&x->path);
    rcp_arena_init(&x->a, 0);
    rcp_buf_puts(&x->path, rcp_client_base(c));
    rcp_buf_puts(&x->path, tail);
    rcp_buf_putc(&x->path, '\0');
    if (x->path.oom) {
        rcp_buf_puts(&k->why, "out of memory for the request's path");
        return -1;
    }
    rcp_buf_init(&t);
    buf_printf(&t, "%s %s HTTP/1.1\r\n%s\r\n%s", verb, x->path.data,
               headers ? headers : "", body ? body : "");
    evidence_raw(&k->sent, t.data ? t.data : "", t.len);
    rcp_buf_free(&t);
    if (rcp_client_http(c, verb, x->path.data, headers, body,
                        body ? strlen(body) : 0, R->tmo, &x->rep) != 0) {
        buf_printf(&k->why, "%s %s: no response within %d ms", verb,
                   x->path.data, R->tmo);
        return -1;
    }
    rcp_buf_init(&t);
    rcp_buf_put(&t, x->rep.head.data, x->rep.head.len);
    rcp_buf_put(&t, x->rep.body.data, x->rep.body.len);
    evidence_raw(&k->got, t.data ? t.data : "", t.len);
    rcp_buf_free(&t);
    if (x->rep.body.len)
        x->j = rcp_json_parse(&x->a, x->rep.body.data, x->rep.body.len, 0,
                              &err);
    return 0;
}

static void http_done(http_x *x)
{
    rcp_http_reply_free(&x->rep);
    rcp_buf_free(&x->path);
    rcp_arena_free(&x->a);
}

static const char json_hdr[] = "Content-Type: application/json\r\n";

/* 1 when the header's value contains want (any case) as a token. */
static int header_has(const rcp_http_reply *rep, const char *name,
                      const char *want)
{
    size_t n, i, k = strlen(want);
    const char *v = rcp_http_header(rep, name, &n);
    for (i = 0; v && i + k <= n; i++) {
        size_t j;
        for (j = 0; j < k; j++) {
            char a = v[i + j];
            if (a >= 'A' && a <= 'Z')
                a = (char)(a - 'A' + 'a');
            if (a != want[j])
                break;
        }
        if (j == k)
            return 1;
    }
    return 0;
}

/* §5.2: a body method that is not the path's is -32600, with 200. */
static int code_http_method_mismatch(runner *R, check *k, rcp_client *c)
{
    http_x x;
    int64_t code = 0;
    int st = ST_FAIL;
    expected_text(k, "HTTP 200 and a -32600 error (id \"mm\" or null)",
                  NULL);
    if (exchange(R, k, c, &x, "POST", "/ping", json_hdr,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"mm\",\"method\":\"info\"}")
        == 0) {
        if (!x.j || x.j->type != RCP_JSON_OBJECT)
            buf_printf(&k->why, "HTTP %d with no JSON-RPC response",
                       x.rep.status);
        else if (!rcp_json_int(jptr(x.j, "/error/code"), &code)
                 || code != RCP_INVALID_REQUEST)
            rcp_buf_puts(&k->why, "POST .../ping carrying method info was "
                         "not answered -32600 (was it dispatched?)");
        else if (x.rep.status != 200)
            buf_printf(&k->why, "the -32600 came with HTTP %d, not 200",
                       x.rep.status);
        else
            st = ST_PASS;
    }
    http_done(&x);
    return st;
}

/* §5.2: a JSON-RPC error is a 200 with Content-Type application/json. */
static int code_http_error_200(runner *R, check *k, rcp_client *c)
{
    http_x x;
    int st = ST_FAIL;
    expected_text(k, "HTTP 200, Content-Type: application/json, and the "
                  "JSON-RPC error in the body", NULL);
    if (exchange(R, k, c, &x, "POST", "/x-conform-undefined", json_hdr,
                 "{\"jsonrpc\":\"2.0\",\"id\":7,"
                 "\"method\":\"x-conform-undefined\"}") == 0) {
        if (x.rep.status != 200)
            buf_printf(&k->why, "a JSON-RPC error came with HTTP %d",
                       x.rep.status);
        else if (!x.j || !jptr(x.j, "/error/code"))
            rcp_buf_puts(&k->why, "the body is not the JSON-RPC error");
        else if (!header_has(&x.rep, "content-type", "application/json"))
            rcp_buf_puts(&k->why, "Content-Type is not application/json");
        else
            st = ST_PASS;
    }
    http_done(&x);
    return st;
}

/* §5.2's table: a path that is not the RCP endpoint is 404. */
static int code_http_unknown_base(runner *R, check *k, rcp_client *c)
{
    http_x x;
    int st = ST_FAIL;
    if (!*rcp_client_base(c)) {
        rcp_buf_puts(&k->why, "the base is the root: no path is outside it");
        return ST_SKIP;
    }
    expected_text(k, "HTTP 404 (not an RCP endpoint)", NULL);
    if (exchange(R, k, c, &x, "POST", "-conform-not-rcp/ping", json_hdr,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")
        == 0) {
        if (x.rep.status == 404)
            st = ST_PASS;
        else
            buf_printf(&k->why, "a path outside the base got HTTP %d",
                       x.rep.status);
    }
    http_done(&x);
    return st;
}

/* Each request is a POST: another verb on the endpoint is not one. */
static int code_http_other_verbs(runner *R, check *k, rcp_client *c)
{
    static const char *const verbs[] = { "GET", "PUT", "DELETE" };
    http_x x;
    size_t i;
    int st = ST_PASS;
    expected_text(k, "HTTP 405 (with Allow: POST) for GET, PUT, DELETE",
                  NULL);
    for (i = 0; i < sizeof verbs / sizeof *verbs && st == ST_PASS; i++) {
        if (exchange(R, k, c, &x, verbs[i], "/ping", NULL, NULL) != 0)
            st = ST_FAIL;
        else if (x.rep.status != 405)
            st = ST_FAIL, buf_printf(&k->why, "%s got HTTP %d", verbs[i],
                                     x.rep.status);
        http_done(&x);
    }
    return st;
}

/* A retrieve (or, on a debug server, x-rcp/sleep) that reports progress,
** with token "conform-sse" and id "sse". */
static const char *progress_body(const runner *R)
{
    if (cap_has(R, "/retrieve"))
        return "{\"jsonrpc\":\"2.0\",\"id\":\"sse\",\"method\":\"retrieve\","
               "\"params\":{\"query\":\"the\",\"k\":3,"
               "\"_meta\":{\"progressToken\":\"conform-sse\"}}}";
    return "{\"jsonrpc\":\"2.0\",\"id\":\"sse\",\"method\":\"x-rcp/sleep\","
           "\"params\":{\"ms\":100,"
           "\"_meta\":{\"progressToken\":\"conform-sse\"}}}";
}

/* The path of progress_body's method, after the base. */
static const char *progress_tail(const char *body)
{
    return strstr(body, "sleep") ? "/x-rcp/sleep" : "/retrieve";
}

/* Judge an SSE body strictly (§5.2): every event is exactly one data:
** line of a compact JSON object and a blank line; zero or more progress
** frames with our token, then exactly one final frame answering id
** "sse", then the end.  1, or 0 with the reason. */
static int sse_strict(const rcp_buf *b, rcp_buf *why)
{
    rcp_arena a;
    size_t at = 0, frames = 0;
    int finals = 0, ok = 1;
    rcp_arena_init(&a, 0);
    while (ok && at < b->len) {
        const char *p = b->data + at, *nl = memchr(p, '\n', b->len - at);
        size_t n = nl ? (size_t)(nl - p) : b->len - at;
        rcp_json_err err;
        const rcp_json *j;
        if (n && p[n - 1] == '\r')
            n--;
        at += (nl ? (size_t)(nl - p) + 1 : b->len - at);
        if (n == 0)
            continue;                    /* a blank line between events */
        if (p[0] == ':')
            continue;                    /* a comment is no frame */
        frames++;
        if (n < 5 || memcmp(p, "data:", 5) != 0) {
            buf_printf(why, "frame %lu: a line that is not data: (\"%.40s\")",
                       (unsigned long)frames, p);
            ok = 0;
        } else if (finals) {
            buf_printf(why, "frame %lu comes after the final response "
                       "(the stream ends there)", (unsigned long)frames);
            ok = 0;
        } else if (!(j = rcp_json_parse(&a, p + 5, n - 5, 0, &err))
                   || j->type != RCP_JSON_OBJECT) {
            buf_printf(why, "frame %lu: the data is not one JSON object",
                       (unsigned long)frames);
            ok = 0;
        } else if (at >= b->len || (b->data[at] != '\n'
                                    && b->data[at] != '\r')) {
            buf_printf(why, "frame %lu is not followed by a blank line",
                       (unsigned long)frames);
            ok = 0;
        } else if (rcp_json_get(j, "method")) {
            if (!rcp_json_streq(rcp_json_get(j, "method"),
                                "notifications/progress")
                || !rcp_json_streq(jptr(j, "/params/progressToken"),
                                   "conform-sse")) {
                buf_printf(why, "frame %lu is not our progress",
                           (unsigned long)frames);
                ok = 0;
            }
        } else if (!rcp_json_streq(rcp_json_get(j, "id"), "sse")) {
            buf_printf(why, "frame %lu answers another id",
                       (unsigned long)frames);
            ok = 0;
        } else {
            finals++;
        }
        rcp_arena_reset(&a);
    }
    if (ok && finals != 1) {
        rcp_buf_puts(why, "the stream ended without the final response");
        ok = 0;
    }
    rcp_arena_free(&a);
    return ok;
}

/* §5.2 SSE: with Accept: text/event-stream a streaming server MAY stream;
** when it does, the framing is exact. */
static int code_http_sse_framing(runner *R, check *k, rcp_client *c)
{
    http_x x;
    int st = ST_FAIL;
    const char *body = progress_body(R);
    expected_text(k, "Content-Type: text/event-stream; progress frames, "
                  "then exactly one final frame answering id \"sse\", each "
                  "one data: line and a blank line; then the end", NULL);
    if (exchange(R, k, c, &x, "POST", progress_tail(body),
                 "Content-Type: application/json\r\n"
                 "Accept: text/event-stream\r\n", body) == 0) {
        if (x.rep.status != 200) {
            buf_printf(&k->why, "HTTP %d", x.rep.status);
        } else if (!header_has(&x.rep, "content-type",
                               "text/event-stream")) {
            rcp_buf_puts(&k->why, "the server answered with one buffered "
                         "response, as it MAY: no stream to judge");
            st = ST_SKIP;
        } else if (sse_strict(&x.rep.body, &k->why)) {
            st = ST_PASS;
        }
    }
    http_done(&x);
    return st;
}

/* §5.2: without Accept: text/event-stream, one buffered JSON response. */
static int code_http_buffered(runner *R, check *k, rcp_client *c)
{
    http_x x;
    int st = ST_FAIL;
    const char *body = progress_body(R);
    expected_text(k, "HTTP 200, Content-Type: application/json, the body "
                  "one JSON-RPC response to id \"sse\"", NULL);
    if (exchange(R, k, c, &x, "POST", progress_tail(body), json_hdr, body)
        == 0) {
        if (header_has(&x.rep, "content-type", "text/event-stream"))
            rcp_buf_puts(&k->why, "an SSE stream the client did not ask "
                         "for");
        else if (!header_has(&x.rep, "content-type", "application/json"))
            rcp_buf_puts(&k->why, "Content-Type is not application/json");
        else if (!x.j || x.j->type != RCP_JSON_OBJECT
                 || !rcp_json_streq(rcp_json_get(x.j, "id"), "sse")
                 || rcp_json_get(x.j, "method"))
            rcp_buf_puts(&k->why, "the body is not one JSON-RPC response "
                         "to id \"sse\"");
        else if (x.rep.status != 200)
            buf_printf(&k->why, "HTTP %d", x.rep.status);
        else
            st = ST_PASS;
    }
    http_done(&x);
    return st;
}

/* §5.2: auth before initialize -- with --header given, initialize
** without it is refused at the transport (401 with WWW-Authenticate,
** RFC 9110 §11.6.1, or 403). */
static int code_http_auth(runner *R, check *k, rcp_client *c)
{
    http_x x;
    rcp_client *bare;
    int64_t code = 0;
    int st = ST_FAIL;
    (void)c;
    if (!R->nheaders) {
        rcp_buf_puts(&k->why, "no --header given: the server is taken to "
                     "require no auth");
        return ST_SKIP;
    }
    if (!(bare = http_peer(R, k, 0, 0)))
        return ST_FAIL;
    expected_text(k, "without the --header lines: HTTP 401 with "
                  "WWW-Authenticate, or 403, and a -32012 error body "
                  "(§15.6), no initialize result", NULL);
    if (exchange(R, k, bare, &x, "POST", "/initialize", json_hdr,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                 "\"initialize\",\"params\":{\"protocolVersion\":1,"
                 "\"client\":{\"name\":\"rcp-conform\",\"version\":\"1\"},"
                 "\"capabilities\":{}}}") == 0) {
        int status = x.rep.status;
        if (status == 401 && !rcp_http_header(&x.rep, "www-authenticate",
                                              NULL))
            rcp_buf_puts(&k->why, "401 without WWW-Authenticate (RFC 9110 "
                         "§11.6.1: a 401 MUST carry one)");
        else if ((status == 401 || status == 403)
                 && !(x.j && rcp_json_int(jptr(x.j, "/error/code"), &code)
                      && code == -32012))
            rcp_buf_puts(&k->why, "the refusal carries no -32012 error "
                         "(§15.6: a server that rejects a caller MUST answer "
                         "-32012 rather than a bare transport error)");
        else if (status == 401 || status == 403)
            st = ST_PASS;
        else
            buf_printf(&k->why, "initialize without credentials got HTTP "
                       "%d", status);
    }
    http_done(&x);
    rcp_client_close(bare, 0);
    return st;
}

/* §5.2: initialize state does not persist across connections, so each
** client's initialize is answered, with the same capabilities (§13.2). */
static int code_http_initialize_again(runner *R, check *k, rcp_client *c)
{
    rcp_client *two[2];
    rcp_request *r[2];
    int i, st = ST_FAIL;
    (void)c;
    expected_text(k, "two clients' initialize both answered with a result, "
                  "the same capabilities", NULL);
    two[0] = http_peer(R, k, 1, 0);
    two[1] = two[0] ? http_peer(R, k, 1, 0) : NULL;
    for (i = 0; i < 2; i++)
        r[i] = two[i] ? call(R, two[i], "initialize", init_params, R->tmo)
            : NULL;
    R->aborted = 0;                      /* the shared session is fine */
    if (!r[0] || !r[1] || !rcp_request_result(r[0])
        || !rcp_request_result(r[1]))
        rcp_buf_puts(&k->why, "an initialize on a new connection was not "
                     "answered with a result");
    else if (!json_equal(rcp_json_get(rcp_request_result(r[0]),
                                      "capabilities"),
                         rcp_json_get(rcp_request_result(r[1]),
                                      "capabilities")))
        rcp_buf_puts(&k->why, "the two initialize results advertise "
                     "different capabilities (§13.2)");
    else
        st = ST_PASS;
    for (i = 0; i < 2; i++)
        if (two[i]) {
            if (st != ST_PASS && !k->got.len)
                got_json(&k->got, two[i]);
            rcp_client_close(two[i], 0);
        }
    return st;
}

/* Two clients at once: one connected and idle does not keep the other
** from being served. */
static int code_http_two_clients(runner *R, check *k, rcp_client *c)
{
    rcp_client *first, *second;
    rcp_request *r = NULL, *r1 = NULL;
    int st = ST_FAIL;
    (void)c;
    expected_text(k, "a ping from a second client answered while the "
                  "first holds its connection open", NULL);
    if (!(first = http_peer(R, k, 1, 0)))
        return ST_FAIL;
    /* first's connection is open (connect makes one) and stays idle */
    if ((second = http_peer(R, k, 1, 0)) != NULL) {
        r = call(R, second, "ping", NULL, R->tmo);
        r1 = r && rcp_request_result(r) ? call(R, first, "ping", NULL,
                                               R->tmo) : NULL;
        R->aborted = 0;
        if (!r || !rcp_request_result(r))
            rcp_buf_puts(&k->why, "the second client's ping was not "
                         "answered while the first was connected");
        else if (!r1 || !rcp_request_result(r1))
            rcp_buf_puts(&k->why, "the first client's ping was not "
                         "answered afterwards");
        else
            st = ST_PASS;
        rcp_client_close(second, 0);
    }
    rcp_client_close(first, 0);
    return st;
}

/* §4.5, §11: a notification (or a batch of only notifications) gets no
** body; the status may be any 2xx (200 with nothing, 202, 204). */
static int code_http_notification(runner *R, check *k, rcp_client *c)
{
    static const char *const bodies[] = {
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancel\","
        "\"params\":{\"id\":\"conform-nothing\"}}",
        "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancel\","
        "\"params\":{\"id\":\"conform-a\"}},{\"jsonrpc\":\"2.0\","
        "\"method\":\"notifications/cancel\",\"params\":{\"id\":"
        "\"conform-b\"}}]"
    };
    http_x x;
    size_t i;
    int st = ST_PASS;
    expected_text(k, "a 2xx status and an empty body, for a notification "
                  "and for a batch of notifications", NULL);
    for (i = 0; i < 2 && st == ST_PASS; i++) {
        const char *what = i ? "a batch of notifications" : "a notification";
        if (exchange(R, k, c, &x, "POST", i ? "" : "/notifications/cancel",
                     json_hdr, bodies[i]) != 0)
            st = ST_FAIL;
        else if (x.rep.status < 200 || x.rep.status > 299)
            st = ST_FAIL, buf_printf(&k->why, "%s got HTTP %d", what,
                                     x.rep.status);
        else if (x.rep.body.len)
            st = ST_FAIL, buf_printf(&k->why, "%s got a body of %lu bytes",
                                     what, (unsigned long)x.rep.body.len);
        http_done(&x);
    }
    return st;
}

/* A code check: its status (ST_*), the reason in k->why. */
typedef int (*code_fn)(runner *R, check *k, rcp_client *c);

static const struct {
    const char *name;
    code_fn     fn;
    int         needs_session;
} code_checks[] = {
    { "info_matches_initialize", code_info_matches, 1 },
    { "l1_profile", code_l1_profile, 0 },
    { "l2_profile", code_l2_profile, 0 },
    { "filter_applied", code_filter_applied, 1 },
    { "modes_recall", code_modes_recall, 1 },
    { "rerank_follows_passages", code_rerank_follows, 1 },
    { "hits_invariants", code_hits_invariants, 1 },
    { "min_score", code_min_score, 1 },
    { "delete_removes", code_delete_removes, 1 },
    { "upsert_replaces", code_upsert_replaces, 1 },
    { "snapshot_pinned", code_snapshot_pinned, 1 },
    { "pagination", code_pagination, 1 },
    { "capabilities_schema", code_capabilities_schema, 0 },
    { "http_method_mismatch", code_http_method_mismatch, 1 },
    { "http_error_200", code_http_error_200, 1 },
    { "http_unknown_base", code_http_unknown_base, 1 },
    { "http_other_verbs", code_http_other_verbs, 1 },
    { "http_sse_framing", code_http_sse_framing, 1 },
    { "http_buffered", code_http_buffered, 1 },
    { "http_auth", code_http_auth, 1 },
    { "http_initialize_again", code_http_initialize_again, 1 },
    { "http_two_clients", code_http_two_clients, 1 },
    { "http_notification", code_http_notification, 1 }
};

/* MARK: - Running -------------------------------------------------------- */

/* Is every capability the check needs advertised?  why says which not. */
static int needs_met(runner *R, const check *k, rcp_buf *why)
{
    const rcp_json *needs = rcp_json_get(k->j, "needs");
    size_t i;
    pctx x;
    x.R = R;
    x.g = NULL;
    for (i = 0; needs && i < needs->n; i++) {
        rcp_buf w;
        int ok;
        rcp_buf_init(&w);
        ok = R->caps && pred(&x, R->caps, &needs->kids[i], &w);
        rcp_buf_free(&w);
        if (!ok) {
            rcp_buf_puts(why, "needs capability ");
            buf_json(why, &needs->kids[i], 120);
            return 0;
        }
    }
    return 1;
}

/* --only: a check id, or a section ("11", "s11", "§7.14"). */
static int selected(const runner *R, const check *k)
{
    const char *o = R->only, *s = k->section;
    if (!o || strcmp(o, k->id) == 0)
        return 1;
    if (*o == 's' || *o == 'S')
        o++;
    if (strncmp(s, "\xC2\xA7", 2) == 0)       /* § */
        s += 2;
    if (strncmp(o, "\xC2\xA7", 2) == 0)
        o += 2;
    while (*o == '0')
        o++;
    /* "11" selects §11 and §11.x, never §1 or §110 */
    return *o && strncmp(s, o, strlen(o)) == 0
        && (s[strlen(o)] == '\0' || s[strlen(o)] == '.');
}

static int find_code(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof code_checks / sizeof *code_checks; i++)
        if (strcmp(code_checks[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Run one check on the server it needs, then put that server back:
** fresh servers are ended, a shared one that is gone or wedged too. */
static void run_check(runner *R, check *k)
{
    const char *code = cstr(rcp_json_get(k->j, "code"), NULL);
    int init = jbool(rcp_json_get(k->j, "init"), 1);
    int fresh = jbool(rcp_json_get(k->j, "fresh"), 0);
    int ci = code ? find_code(code) : -1;
    rcp_client *c = NULL;
    R->aborted = 0;
    R->sent.len = 0;
    k->ran = 1;
    if (k->lvl > R->max_level) {
        k->status = ST_SKIP;
        rcp_buf_puts(&k->why, "above --level");
        return;
    }
    if (!needs_met(R, k, &k->why)) {
        k->status = ST_SKIP;
        return;
    }
    if (R->url && rcp_json_get(k->j, "stdio")) {
        k->status = ST_SKIP;
        buf_printf(&k->why, "stdio only: %s",
                   cstr(rcp_json_get(k->j, "stdio"), ""));
        return;
    }
    if (!R->url && jbool(rcp_json_get(k->j, "http"), 0)) {
        k->status = ST_SKIP;
        rcp_buf_puts(&k->why, "HTTP only (§5.2): run with --http URL");
        return;
    }
    if (code && (wire_rule_of(code) >= 0
                 || strcmp(code, "declaration_honest") == 0)) {
        k->ran = 0;                      /* judged at the end */
        return;
    }
    if (code && ci < 0) {
        k->status = ST_FAIL;
        buf_printf(&k->why, "no code check named %s", code);
        return;
    }
    if (!code || code_checks[ci].needs_session) {
        if (!(c = session_for(R, init, fresh, &k->why))) {
            k->status = ST_FAIL;
            keep_evidence(R, k, NULL);
            return;
        }
        R->sent.len = 0;
    }
    R->cc = c;
    if (c && jbool(rcp_json_get(k->j, "corpus"), 0)
        && ensure_corpus(R, c, k) != 0) {
        k->status = ST_FAIL;
        keep_evidence(R, k, c);
    } else if (code) {
        if (R->sent.len && c) {          /* the corpus's load: not this */
            wire_scan(R, c, "(corpus)");
            R->sent.len = 0;
        }
        k->status = code_checks[ci].fn(R, k, c);
        if (k->status != ST_PASS && k->status != ST_SKIP && c)
            keep_evidence(R, k, c);
    } else {
        if (R->sent.len && c) {
            wire_scan(R, c, "(corpus)");
            R->sent.len = 0;
        }
        run_data_check(R, k, c);
    }
    if (k->status == ST_FAIL && !k->must)
        k->status = ST_WARN;             /* invariant 4 */
    if (c && (fresh || R->aborted)) {
        if (c == R->cur)
            drop_cur(R);                 /* the next check gets a new one */
    } else if (c) {
        wire_scan(R, c, k->id);
    }
    R->cc = NULL;
}

/* Judge the wire rules once every other check has run. */
static void finish_wire(runner *R)
{
    size_t i;
    for (i = 0; i < R->n; i++) {
        check *k = &R->checks[i];
        const char *code = cstr(rcp_json_get(k->j, "code"), NULL);
        int rule = code ? wire_rule_of(code) : -1;
        if (rule < 0 || k->ran || !selected(R, k))
            continue;
        k->ran = 1;
        if (R->wire[rule].seen) {
            k->status = k->must ? ST_FAIL : ST_WARN;
            rcp_buf_put(&k->why, R->wire[rule].example.data,
                        R->wire[rule].example.len);
            if (R->wire[rule].seen > 1)
                buf_printf(&k->why, " (%d frames in all)",
                           R->wire[rule].seen);
            rcp_buf_put(&k->got, R->wire[rule].frame.data,
                        R->wire[rule].frame.len);
        } else {
            k->status = ST_PASS;
        }
    }
}

/* MARK: - The probe: info, initialize, info ------------------------------ */

static const rcp_json *keep(runner *R, const rcp_json *v)
{
    return keep_in(&R->probe, v);
}

static const rcp_json *call_keep(runner *R, rcp_client *c, const char *m,
                                 const char *params, rcp_buf *why)
{
    rcp_buf w;
    rcp_request *r;
    const rcp_json *res = NULL;
    int code;
    rcp_buf_init(&w);
    r = start_call(R, c, m, params, &w);
    if (r && rcp_request_error(r, &code))
        buf_printf(&w, "%s failed with error %d", m, code);
    else if (r)
        res = keep(R, rcp_request_result(r));
    if (why)
        rcp_buf_put(why, w.data, w.len);
    rcp_buf_free(&w);
    rcp_request_free(c, r);
    return res;
}

/* The fatal end of a run: what the server did, kept for the report. */
static void fatal_evidence(runner *R, rcp_client *c)
{
    check *k = &R->fatal_ev;
    sent_json(&k->sent, &R->sent);
    if (c) {
        got_json(&k->got, c);
        server_json(&k->server, c);
    }
}

/* Start the first server and learn what it advertises.  A server that
** does not start, or never answers initialize under its id, ends the run
** here, at once, with its stderr -- every check needs one that does. */
static int probe(runner *R)
{
    rcp_client *c = spawn(R, &R->fatal);
    const rcp_json *decl;
    if (!c)
        return -1;
    R->sent.len = 0;
    R->info_pre = call_keep(R, c, "info", "{}", NULL);
    if (!rcp_client_alive(c)) {
        rcp_buf_puts(&R->fatal, "the server exited before answering info");
    } else {
        R->init_result = call_keep(R, c, "initialize", init_params,
                                   &R->fatal);
        if (R->init_result)
            R->info_post = call_keep(R, c, "info", "{}", NULL);
    }
    R->caps = jptr(R->init_result, "/capabilities");
    if (R->init_result && !R->caps)
        rcp_buf_puts(&R->fatal, "the initialize result has no "
                     "capabilities");
    if (R->fatal.len) {
        fatal_evidence(R, c);
        end_session(R, c, "(probe)");
        return -1;
    }
    decl = jptr(R->init_result, "/_meta/conformance");
    if (!decl)
        decl = jptr(R->info_post, "/_meta/conformance");
    if (decl && decl->type == RCP_JSON_STRING) {
        char *s = rcp_arena_alloc(&R->probe, decl->n + 1);
        if (s) {
            memcpy(s, decl->s, decl->n);
            s[decl->n] = '\0';
            R->declared = s;
        }
    }
    rcp_client_metrics_json(c, &R->metrics);
    wire_scan(R, c, "(probe)");
    R->cur = c;
    R->cur_init = 1;
    return 0;
}

/* MARK: - Report --------------------------------------------------------- */

static int is_code(const check *k, const char *name)
{
    return rcp_json_streq(rcp_json_get(k->j, "code"), name);
}

static const char *level_name(int lvl)
{
    static const char *const names[] = { "L0", "L1", "L2" };
    return lvl >= 0 && lvl <= 2 ? names[lvl] : "none";
}

/* Does check k keep level lvl from being certified?  A failed MUST at or
** below it, or the level's own profile check not passing (invariant 4).
** The honesty check is judged from certification, so it takes no part. */
static int blocks(const check *k, int lvl)
{
    if (is_code(k, "declaration_honest"))
        return 0;
    if (k->defines == lvl)
        return k->status != ST_PASS;
    return k->lvl <= lvl && k->must && k->status == ST_FAIL;
}

/* Invariant 4: the highest level certified, or -1. */
static int certified(const runner *R)
{
    int lvl, best = -1;
    size_t i;
    for (lvl = 0; lvl <= R->max_level; lvl++) {
        int ok = 1, profile = lvl == 0;
        for (i = 0; i < R->n; i++) {
            ok &= !blocks(&R->checks[i], lvl);
            profile |= R->checks[i].defines == lvl;
        }
        if (!ok || !profile)
            break;
        best = lvl;
    }
    return best;
}

/* The report so far, written out: the human report streams, so a run cut
** short (a CI timeout) leaves what it had found. */
static void flush_out(runner *R)
{
    if (R->io.out)
        rcp_buf_put(R->io.out, R->out.data, R->out.len);
    else if (R->out.len)
        fwrite(R->out.data, 1, R->out.len, stdout);
    fflush(stdout);
    R->out.len = 0;
}

/* One evidence line: "label" and the JSON text's frames, one per line. */
static void show_frames(rcp_buf *o, const char *label, const rcp_buf *j)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *v;
    size_t i;
    if (!j->len)
        return;
    rcp_arena_init(&a, 0);
    v = rcp_json_parse(&a, j->data, j->len, 0, &err);
    buf_printf(o, "\n      %-9s ", label);
    if (!v || v->type != RCP_JSON_ARRAY || v->n == 0)
        rcp_buf_puts(o, v && v->type == RCP_JSON_ARRAY ? "(nothing)" : "?");
    for (i = 0; v && v->type == RCP_JSON_ARRAY && i < v->n; i++) {
        const rcp_json *raw = rcp_json_get(&v->kids[i], "raw");
        const rcp_json *cut = rcp_json_get(&v->kids[i], "truncated");
        if (i == SHOW_LINES) {
            buf_printf(o, "\n                ... %lu more",
                       (unsigned long)(v->n - i));
            break;
        }
        if (i)
            rcp_buf_puts(o, "\n                ");
        if ((raw || cut) && v->kids[i].n == 2)
            buf_printf(o, "%.*s%s (%ld bytes%s)",
                       (int)((raw ? raw : cut)->n < SHOW_BYTES
                             ? (raw ? raw : cut)->n : SHOW_BYTES),
                       (raw ? raw : cut)->s, cut ? "..." : "",
                       jlong(rcp_json_get(&v->kids[i], "bytes"), 0),
                       raw ? ", not JSON" : "");
        else
            buf_json(o, &v->kids[i], SHOW_BYTES);
    }
    rcp_arena_free(&a);
}

static void show_evidence(rcp_buf *o, const check *k)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *v;
    rcp_arena_init(&a, 0);
    if (k->why.len) {
        rcp_buf_puts(o, "\n      ");
        rcp_buf_put(o, k->why.data, k->why.len);
    }
    show_frames(o, "sent:", &k->sent);
    v = k->expected.len ? rcp_json_parse(&a, k->expected.data,
                                         k->expected.len, 0, &err) : NULL;
    if (v && rcp_json_get(v, "text"))
        buf_printf(o, "\n      expected: %.*s",
                   (int)rcp_json_get(v, "text")->n,
                   cstr(rcp_json_get(v, "text"), ""));
    show_frames(o, "got:", &k->got);
    v = k->server.len ? rcp_json_parse(&a, k->server.data, k->server.len, 0,
                                       &err) : NULL;
    if (v) {
        const rcp_json *st = rcp_json_get(v, "state");
        rcp_buf_puts(o, "\n      server:   ");
        if (rcp_json_streq(st, "wedged"))
            rcp_buf_puts(o, "still running, not answering (wedged)");
        else if (rcp_json_streq(st, "killed"))
            buf_printf(o, "killed by signal %ld",
                       jlong(rcp_json_get(v, "signal"), 0));
        else
            buf_printf(o, "exited with status %ld",
                       jlong(rcp_json_get(v, "status"), 0));
        if (rcp_json_get(v, "stderr"))
            buf_printf(o, "\n      stderr:   %.*s",
                       (int)rcp_json_get(v, "stderr")->n,
                       cstr(rcp_json_get(v, "stderr"), ""));
    }
    rcp_arena_free(&a);
}

/* A check's line (and, unless it passed, why), as soon as it is judged. */
static void print_check(runner *R, const check *k)
{
    rcp_buf *o = &R->out;
    if (R->json || R->silent || !selected(R, k)
        || (R->quiet && k->status == ST_PASS))
        return;
    buf_printf(o, "%s  [%s] %-40s %s %s  %s", status_name[k->status],
               k->level, k->id, k->section, k->keyword,
               cstr(rcp_json_get(k->j, "title"), ""));
    if (R->verbose)
        buf_printf(o, " (%.0f ms)", k->ms);
    if (k->status == ST_FAIL || k->status == ST_WARN
        || (R->verbose && k->status == ST_SKIP))
        show_evidence(o, k);
    rcp_buf_putc(o, '\n');
    flush_out(R);
}

static void print_human(runner *R, int cert, int honest, size_t *counts)
{
    rcp_buf *o = &R->out;
    size_t i;
    int lvl;
    if (R->fatal.len) {
        rcp_buf_puts(o, "FATAL  the server cannot be tested: ");
        rcp_buf_put(o, R->fatal.data, R->fatal.len);
        R->fatal_ev.why.len = 0;
        show_evidence(o, &R->fatal_ev);
        rcp_buf_puts(o, "\nCERTIFIED LEVEL: none\n");
        return;
    }
    buf_printf(o, "\n%lu passed, %lu failed, %lu skipped\n",
               (unsigned long)counts[ST_PASS], (unsigned long)counts[ST_FAIL],
               (unsigned long)counts[ST_SKIP]);
    if (counts[ST_WARN])
        buf_printf(o, "%lu SHOULD/MAY checks not met (WARN: advisory, they "
                   "do not block certification)\n",
                   (unsigned long)counts[ST_WARN]);
    if (R->only) {
        buf_printf(o, "certification: not computed (--only %s)\n",
                   R->only);
    } else {
        buf_printf(o, "CERTIFIED LEVEL: %s\n", level_name(cert));
        if (!R->declared)
            buf_printf(o, "declared _meta.conformance: none -- a server "
                       "MUST state its level (§14)\n");
        else if (level_of(R->declared) > R->max_level)
            buf_printf(o, "declared _meta.conformance='%s' -- not judged "
                       "(above --level)\n", R->declared);
        else
            buf_printf(o, "declared _meta.conformance='%s' -- %s\n",
                       R->declared, honest ? "consistent" : "OVERCLAIM "
                       "(§14.5: fails certification)");
    }
    if (counts[ST_FAIL]) {
        rcp_buf_puts(o, "failed:");
        for (i = 0; i < R->n; i++)
            if (selected(R, &R->checks[i])
                && R->checks[i].status == ST_FAIL)
                buf_printf(o, " %s", R->checks[i].id);
        rcp_buf_putc(o, '\n');
    }
    lvl = cert + 1;
    if (!R->only && lvl <= R->max_level) {
        buf_printf(o, "%s is blocked by:", level_name(lvl));
        for (i = 0; i < R->n; i++)
            if (blocks(&R->checks[i], lvl))
                buf_printf(o, " %s", R->checks[i].id);
        rcp_buf_putc(o, '\n');
    }
}

static void jw_raw_or_null(rcp_jw *w, const char *key, const rcp_buf *b)
{
    if (!b->len)
        return;
    rcp_jw_key(w, key);
    rcp_jw_raw(w, b->data, b->len);
}

static void json_evidence(rcp_jw *w, const check *k)
{
    if (k->why.len) {
        rcp_jw_key(w, "reason");
        rcp_jw_str(w, k->why.data, k->why.len);
    }
    jw_raw_or_null(w, "sent", &k->sent);
    jw_raw_or_null(w, "expected", &k->expected);
    jw_raw_or_null(w, "got", &k->got);
    jw_raw_or_null(w, "server", &k->server);
}

static void json_check(rcp_jw *w, const check *k)
{
    static const char *const st[] = { "pass", "fail", "skip", "warn" };
    rcp_jw_obj(w);
    rcp_jw_key(w, "id");
    rcp_jw_cstr(w, k->id);
    rcp_jw_key(w, "level");
    rcp_jw_cstr(w, k->level);
    rcp_jw_key(w, "keyword");
    rcp_jw_cstr(w, k->keyword);
    rcp_jw_key(w, "section");
    rcp_jw_cstr(w, k->section);
    rcp_jw_key(w, "title");
    rcp_jw_cstr(w, cstr(rcp_json_get(k->j, "title"), ""));
    rcp_jw_key(w, "sentence");
    rcp_jw_cstr(w, cstr(rcp_json_get(k->j, "quote"), ""));
    rcp_jw_key(w, "file");
    rcp_jw_cstr(w, k->file);
    rcp_jw_key(w, "status");
    rcp_jw_cstr(w, st[k->status]);
    rcp_jw_key(w, "ms");
    rcp_jw_int(w, (int64_t)(k->ms + 0.5));
    if (k->status != ST_PASS)
        json_evidence(w, k);
    rcp_jw_obj_end(w);
}

/* "levels": for each level, whether it is certified and what blocks it. */
static void json_levels(rcp_jw *w, const runner *R, int cert)
{
    int lvl;
    size_t i;
    rcp_jw_key(w, "levels");
    rcp_jw_arr(w);
    for (lvl = 0; lvl <= 2; lvl++) {
        rcp_jw_obj(w);
        rcp_jw_key(w, "level");
        rcp_jw_cstr(w, level_name(lvl));
        rcp_jw_key(w, "certified");
        rcp_jw_bool(w, !R->only && lvl <= cert);
        rcp_jw_key(w, "blockedBy");
        rcp_jw_arr(w);
        for (i = 0; i < R->n && !R->only && lvl <= R->max_level; i++)
            if (blocks(&R->checks[i], lvl))
                rcp_jw_cstr(w, R->checks[i].id);
        rcp_jw_arr_end(w);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
}

static void json_header(rcp_jw *w, const runner *R)
{
    size_t i;
    rcp_jw_key(w, "suite");
    rcp_jw_obj(w);
    rcp_jw_key(w, "name");
    rcp_jw_cstr(w, "rcp conform");
    rcp_jw_key(w, "version");
    rcp_jw_cstr(w, RCP_VERSION);
    rcp_jw_key(w, "spec");
    rcp_jw_cstr(w, "RCP/1");
    rcp_jw_key(w, "checks");
    rcp_jw_int(w, (int64_t)R->n);
    rcp_jw_obj_end(w);
    rcp_jw_key(w, "server");
    rcp_jw_obj(w);
    rcp_jw_key(w, "command");
    rcp_jw_arr(w);
    for (i = 0; R->cmd && R->cmd[i]; i++)
        rcp_jw_cstr(w, R->cmd[i]);
    rcp_jw_arr_end(w);
    if (R->url) {
        rcp_jw_key(w, "url");
        rcp_jw_cstr(w, R->url);
    }
    if (jptr(R->init_result, "/server")) {
        rcp_jw_key(w, "info");
        rcp_jw_value(w, jptr(R->init_result, "/server"));
    }
    rcp_jw_key(w, "starts");
    rcp_jw_int(w, R->starts);
    rcp_jw_obj_end(w);
    rcp_jw_key(w, "run");
    rcp_jw_obj(w);
    rcp_jw_key(w, "nonce");
    rcp_jw_cstr(w, R->run);
    rcp_jw_key(w, "ms");
    rcp_jw_int(w, (int64_t)(now_ms() - R->t0 + 0.5));
    if (R->only) {
        rcp_jw_key(w, "only");
        rcp_jw_cstr(w, R->only);
    }
    rcp_jw_key(w, "maxLevel");
    rcp_jw_cstr(w, level_name(R->max_level));
    rcp_jw_obj_end(w);
}

/* "files": the check files in order, with their section and title: the
** rows of the reports' tables (report.c). */
static void json_files(rcp_jw *w, const runner *R)
{
    size_t i;
    rcp_jw_key(w, "files");
    rcp_jw_arr(w);
    for (i = 0; i < R->nfiles; i++) {
        rcp_jw_obj(w);
        rcp_jw_key(w, "file");
        rcp_jw_cstr(w, R->files[i].name);
        rcp_jw_key(w, "section");
        rcp_jw_value(w, rcp_json_get(R->files[i].root, "section"));
        rcp_jw_key(w, "title");
        rcp_jw_value(w, rcp_json_get(R->files[i].root, "title"));
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
}

static void print_json(runner *R, int cert, int honest, size_t *counts,
                       rcp_buf *dst)
{
    rcp_jw w;
    size_t i;
    rcp_jw_init(&w, dst);
    rcp_jw_obj(&w);
    json_header(&w, R);
    json_files(&w, R);
    if (R->fatal.len) {
        rcp_jw_key(&w, "fatal");
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "reason");
        rcp_jw_str(&w, R->fatal.data, R->fatal.len);
        json_evidence(&w, &R->fatal_ev);
        rcp_jw_obj_end(&w);
    }
    rcp_jw_key(&w, "certifiedLevel");
    if (cert < 0 || R->only)
        rcp_jw_null(&w);
    else
        rcp_jw_cstr(&w, level_name(cert));
    rcp_jw_key(&w, "declaredLevel");
    if (R->declared)
        rcp_jw_cstr(&w, R->declared);
    else
        rcp_jw_null(&w);
    rcp_jw_key(&w, "declarationHonest");
    rcp_jw_bool(&w, honest);
    json_levels(&w, R, cert);
    rcp_jw_key(&w, "summary");
    rcp_jw_obj(&w);
    for (i = 0; i < 4; i++) {
        rcp_jw_key(&w, i == 0 ? "passed" : i == 1 ? "failed" : i == 2
                   ? "skipped" : "warned");
        rcp_jw_int(&w, (int64_t)counts[i]);
    }
    rcp_jw_obj_end(&w);
    rcp_jw_key(&w, "failed");
    rcp_jw_arr(&w);
    for (i = 0; i < R->n; i++)
        if (selected(R, &R->checks[i]) && R->checks[i].ran
            && R->checks[i].status == ST_FAIL)
            rcp_jw_cstr(&w, R->checks[i].id);
    rcp_jw_arr_end(&w);
    rcp_jw_key(&w, "checks");
    rcp_jw_arr(&w);
    for (i = 0; i < R->n; i++)
        if (selected(R, &R->checks[i]) && R->checks[i].ran)
            json_check(&w, &R->checks[i]);
    rcp_jw_arr_end(&w);
    if (R->metrics.len) {
        rcp_jw_key(&w, "clientMetrics");
        rcp_jw_raw(&w, R->metrics.data, R->metrics.len);
    }
    rcp_jw_obj_end(&w);
    rcp_buf_putc(dst, '\n');
}

/* MARK: - Coverage ------------------------------------------------------- */

static const check *find_check(const runner *R, const char *id)
{
    size_t i;
    for (i = 0; i < R->n; i++)
        if (strcmp(R->checks[i].id, id) == 0)
            return &R->checks[i];
    return NULL;
}

/* --coverage: every MUST-class sentence with the checks that observe it,
** or why the wire cannot show it (conformance/coverage.json). */
static int coverage(runner *R)
{
    const rcp_json *root = data_file(R, "coverage.json");
    const rcp_json *reqs = root ? rcp_json_get(root, "requirements") : NULL;
    size_t i, k, checked = 0, unobs = 0, bad = 0, clients = 0;
    rcp_buf *o = &R->out;
    if (!reqs || reqs->type != RCP_JSON_ARRAY)
        return 2;
    for (i = 0; i < reqs->n; i++) {
        const rcp_json *q = &reqs->kids[i];
        const rcp_json *ids = rcp_json_get(q, "checks");
        const char *why = cstr(rcp_json_get(q, "unobservable"), NULL);
        rcp_buf_puts(o, cstr(rcp_json_get(q, "section"), "?"));
        rcp_buf_putc(o, ' ');
        rcp_buf_puts(o, cstr(rcp_json_get(q, "keyword"), "?"));
        rcp_buf_puts(o, "  ");
        rcp_buf_puts(o, cstr(rcp_json_get(q, "sentence"), "?"));
        rcp_buf_putc(o, '\n');
        if (ids && ids->n) {
            rcp_buf_puts(o, "    checked by:");
            for (k = 0; k < ids->n; k++) {
                const char *id = cstr(&ids->kids[k], "?");
                buf_printf(o, " %s%s", id, find_check(R, id) ? ""
                           : "(MISSING!)");
                bad += !find_check(R, id);
            }
            rcp_buf_putc(o, '\n');
            checked++;
        } else if (why) {
            rcp_buf_puts(o, "    not observable: ");
            rcp_buf_puts(o, why);
            rcp_buf_putc(o, '\n');
            unobs++;
            clients += jbool(rcp_json_get(q, "client"), 0);
        } else {
            rcp_buf_puts(o, "    NOT COVERED\n");
            bad++;
        }
    }
    buf_printf(o, "\n%lu requirements (MUST / MUST NOT / REQUIRED): %lu "
               "checked on the wire, %lu not observable from outside (%lu "
               "of them duties of clients), %lu uncovered or naming a "
               "missing check\n", (unsigned long)reqs->n,
               (unsigned long)checked, (unsigned long)unobs,
               (unsigned long)clients, (unsigned long)bad);
    return bad ? 1 : 0;
}

/* MARK: - Entry ---------------------------------------------------------- */

static const char usage[] =
    "usage: rcp conform [--json] [--level L0|L1|L2] [--only WHAT]\n"
    "                   [--checks DIR] [--timeout MS] [--start-timeout MS]\n"
    "                   [--quiet] [--verbose] [--junit FILE] [--html FILE]\n"
    "                   -- CMD ARGS...\n"
    "       rcp conform [options] --http URL [--header 'NAME: VALUE']...\n"
    "       rcp conform --matrix [options] -- CMD1 ARGS ::: CMD2 ARGS ...\n"
    "       rcp conform --report A.json [--report B.json ...] [--html FILE]\n"
    "       rcp conform --coverage [--checks DIR]\n"
    "\n"
    "Run the RCP/1 conformance suite against the stdio server started by\n"
    "CMD ARGS..., print one line per check as it is judged (PASS, FAIL,\n"
    "SKIP, or WARN for an advisory SHOULD/MAY check), then the certified\n"
    "level, whether the server's _meta.conformance is honest (§14.5), the\n"
    "failed checks and what blocks the next level.  Exit status 1 on any\n"
    "failed check, an overclaim or a server that cannot be tested, 2 on a\n"
    "usage error.\n"
    "\n"
    "  --http URL      test the HTTP server at URL (http://HOST:PORT/BASE,\n"
    "                  §5.2) instead of starting one: the checks that apply\n"
    "                  over HTTP, and §5.2's own; stdio-only checks SKIP\n"
    "  --header 'N: V' send this header with every request (--http; repeat\n"
    "                  for more, e.g. 'Authorization: Bearer TOKEN'); given,\n"
    "                  the server must refuse a request without it\n"
    "  --json          machine-readable report on stdout\n"
    "  --level L       run checks up to level L only\n"
    "  --only WHAT     run one section's checks (11, s11, §7.14) or one\n"
    "                  check (its id)\n"
    "  --coverage      list every MUST of the spec with the checks that\n"
    "                  observe it (no server needed)\n"
    "  --checks DIR    run the check files of DIR (sNN-*.json, corpus.json,\n"
    "                  coverage.json) instead of the copies built into rcp\n"
    "                  (also $RCP_CONFORMANCE)\n"
    "  --timeout MS    how long to wait for a response the check expects,\n"
    "                  unless the check sets its own (default 3000)\n"
    "  --start-timeout MS  how long a starting server has to answer\n"
    "                  initialize (default 20000)\n"
    "  --quiet         leave out the PASS lines\n"
    "  --verbose       also say why checks were skipped, and time each\n"
    "  --junit FILE    also write the report as JUnit XML\n"
    "  --html FILE     also write it as one self-contained HTML page\n"
    "  --matrix        run every command (separated by :::) and print a\n"
    "                  section x server compatibility matrix\n"
    "  --report FILE   a saved --json report: draw the matrix (and --html)\n"
    "                  from these instead of running servers; repeatable\n";

/* A usage error: one line on stderr, exit status 2. */
static int usage_error(const char *fmt, const char *arg)
{
    fputs("rcp conform: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (rcp conform --help)\n", stderr);
    return -1;
}

static int parse_ms(const char *s)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    return s && *s && !*end && v > 0 && v <= 3600000L ? (int)v : -1;
}

/* 0 to run, 1 done (--help), -1 a usage error (reported). */
static int parse_args(runner *R, int argc, char **argv)
{
    int i;
    R->max_level = 2;
    R->tmo = DEFAULT_TIMEOUT_MS;
    R->start_tmo = START_TIMEOUT_MS;
    R->dir = getenv("RCP_CONFORMANCE");  /* as --checks */
    if (R->dir && !*R->dir)
        R->dir = NULL;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            R->cmd = argv + i + 1;
            if (R->url)
                return usage_error("--http names a running server: no "
                                   "command after '--'%s", "");
            if (R->nheaders)
                return usage_error("--header is for --http URL%s", "");
            if (R->nfrom)
                return usage_error("--report reads saved reports: no server "
                                   "command%s", "");
            if (!argv[i + 1] && !R->coverage && !R->io.spawn)
                return usage_error("nothing after '--': give the server "
                                   "command to test%s", "");
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            R->json = 1;
        } else if (strcmp(a, "--coverage") == 0) {
            R->coverage = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            R->verbose = 1;
        } else if (strcmp(a, "--quiet") == 0) {
            R->quiet = 1;
        } else if (strcmp(a, "--help") == 0) {
            rcp_buf_puts(&R->out, usage);
            return 1;
        } else if (strcmp(a, "--matrix") == 0) {
            R->matrix = 1;
        } else if (!v && (strcmp(a, "--level") == 0 || strcmp(a, "--only")
                          == 0 || strcmp(a, "--checks") == 0
                          || strcmp(a, "--dir") == 0
                          || strcmp(a, "--timeout") == 0
                          || strcmp(a, "--start-timeout") == 0
                          || strcmp(a, "--junit") == 0
                          || strcmp(a, "--html") == 0
                          || strcmp(a, "--http") == 0
                          || strcmp(a, "--header") == 0
                          || strcmp(a, "--report") == 0)) {
            return usage_error("%s needs a value", a);
        } else if (strcmp(a, "--http") == 0) {
            R->url = argv[++i];
        } else if (strcmp(a, "--header") == 0) {
            if (R->nheaders + 1 == sizeof R->headers / sizeof *R->headers)
                return usage_error("at most 16 --header lines (%s)", v);
            if (!strchr(v, ':'))
                return usage_error("--header takes 'Name: value', not '%s'",
                                   v);
            R->headers[R->nheaders++] = argv[++i];
            R->headers[R->nheaders] = NULL;
        } else if (strcmp(a, "--junit") == 0) {
            R->junit = argv[++i];
        } else if (strcmp(a, "--html") == 0) {
            R->html = argv[++i];
        } else if (strcmp(a, "--report") == 0) {
            if (R->nfrom == MAX_REPORTS)
                return usage_error("at most 16 reports (--report %s)", v);
            R->from[R->nfrom++] = argv[++i];
        } else if (strcmp(a, "--level") == 0) {
            if (level_of(v) < 0)
                return usage_error("--level must be L0, L1 or L2, not '%s'",
                                   v);
            R->max_level = level_of(argv[++i]);
        } else if (strcmp(a, "--only") == 0) {
            R->only = argv[++i];
        } else if (strcmp(a, "--checks") == 0 || strcmp(a, "--dir") == 0) {
            R->dir = argv[++i];
        } else if (strcmp(a, "--timeout") == 0
                   || strcmp(a, "--start-timeout") == 0) {
            if (parse_ms(v) < 0)
                return usage_error("%s takes milliseconds (1..3600000)", a);
            *(a[2] == 't' ? &R->tmo : &R->start_tmo) = parse_ms(argv[++i]);
        } else if (a[0] != '-') {
            return usage_error("missing '--' before the server command "
                               "'%s'", a);
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (R->nheaders && !R->url)
        return usage_error("--header is for --http URL%s", "");
    if (R->url && (R->matrix || R->nfrom))
        return usage_error("--http tests one server: not with --matrix or "
                           "--report%s", "");
    if (!R->coverage && !R->io.spawn && !R->nfrom && !R->url)
        return usage_error("missing '-- CMD ARGS...': the server command "
                           "to test%s", "");
    return 0;
}

static void check_free(check *k)
{
    rcp_buf_free(&k->why);
    rcp_buf_free(&k->sent);
    rcp_buf_free(&k->expected);
    rcp_buf_free(&k->got);
    rcp_buf_free(&k->server);
}

static void runner_free(runner *R)
{
    size_t i;
    drop_cur(R);
    for (i = 0; i < R->n; i++)
        check_free(&R->checks[i]);
    check_free(&R->fatal_ev);
    for (i = 0; i < R->ntexts; i++)
        rcp_free(R->texts[i]);
    for (i = 0; i < W_COUNT; i++) {
        rcp_buf_free(&R->wire[i].example);
        rcp_buf_free(&R->wire[i].frame);
    }
    rcp_free(R->texts);
    rcp_free(R->checks);
    rcp_free(R->toks);
    rcp_free(R->docs);
    rcp_free(R->reqs);
    rcp_arena_free(&R->req_arena);
    rcp_arena_free(&R->data);
    rcp_arena_free(&R->probe);
    rcp_arena_free(&R->tok_arena);
    rcp_buf_free(&R->sent);
    rcp_buf_free(&R->out);
    rcp_buf_free(&R->fatal);
    rcp_buf_free(&R->metrics);
    rcp_buf_free(&R->report);
}

/* §14.5: an overclaim fails certification; so does no claim (§14). */
static void judge_honesty(runner *R, check *k, int cert)
{
    int d = R->declared ? level_of(R->declared) : -1;
    if (k->status == ST_SKIP && k->ran)
        return;
    k->ran = 1;
    if (R->only || d > R->max_level) {
        k->status = ST_SKIP;
        rcp_buf_puts(&k->why, R->only ? "needs the whole suite (--only)"
                     : "the declared level is above --level");
    } else if (d >= 0 && d <= cert) {
        k->status = ST_PASS;
    } else if (d < 0) {
        k->status = ST_FAIL;
        buf_printf(&k->why, "declared %s%s%s, certified %s",
                   R->declared ? "'" : "", R->declared ? R->declared
                   : "nothing", R->declared ? "'" : "", level_name(cert));
    } else {
        k->status = ST_FAIL;
        buf_printf(&k->why, "declared '%s' but certified %s", R->declared,
                   level_name(cert));
    }
}

static int run_all(runner *R)
{
    size_t i, counts[4] = { 0, 0, 0, 0 };
    int cert = -1, honest = 0;
    R->t0 = now_ms();
    if (probe(R) == 0) {
        for (i = 0; i < R->n; i++) {
            check *k = &R->checks[i];
            double t0 = now_ms();
            if (!selected(R, k))
                continue;
            run_check(R, k);
            k->ms = now_ms() - t0;
            if (k->ran)
                print_check(R, k);
        }
        drop_corpus(R);
        drop_cur(R);
        finish_wire(R);
        cert = certified(R);
        honest = R->declared && level_of(R->declared) >= 0
            && (level_of(R->declared) <= cert
                || level_of(R->declared) > R->max_level);
        for (i = 0; i < R->n; i++) {
            check *k = &R->checks[i];
            if (selected(R, k) && is_code(k, "declaration_honest"))
                judge_honesty(R, k, cert);
            if (selected(R, k) && !k->ran)
                k->ran = 1;
        }
        for (i = 0; i < R->n; i++)       /* the lines judged at the end */
            if (selected(R, &R->checks[i])
                && (is_code(&R->checks[i], "declaration_honest")
                    || wire_rule_of(cstr(rcp_json_get(R->checks[i].j,
                                                      "code"), "")) >= 0))
                print_check(R, &R->checks[i]);
        for (i = 0; i < R->n; i++)
            if (selected(R, &R->checks[i]))
                counts[R->checks[i].status]++;
    }
    if (R->json && !R->silent)
        print_json(R, cert, honest, counts, &R->out);
    else if (!R->silent)
        print_human(R, cert, honest, counts);
    if (R->want_report)
        print_json(R, cert, honest, counts, &R->report);
    flush_out(R);
    if (R->fatal.len || counts[ST_FAIL])
        return 1;
    return !R->only && !honest ? 1 : 0;
}

/* This run's nonce: lower-case letters only, consonant-vowel so that a
** tokenizer keeps it one word and a stemmer leaves it alone. */
static void make_nonce(runner *R)
{
    static const char cons[] = "bcdfgjklmnprtvz", vow[] = "aeiou";
    struct timespec ts;
    uint64_t x;
    int i;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec
        ^ (uint64_t)getpid() << 40;
    for (i = 0; i < 9; i++) {
        x ^= x >> 31;                    /* splitmix64's finaliser */
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 27;
        R->run[i] = i % 2 ? vow[x % 5] : cons[x % 15];
    }
    R->run[0] = 'q';                     /* "q..." words are rare */
    R->run[9] = '\0';
}

/* How many checks --only selects; 0 is a usage error. */
static size_t count_selected(const runner *R)
{
    size_t i, n = 0;
    for (i = 0; i < R->n; i++)
        n += selected(R, &R->checks[i]);
    return n;
}

static void runner_init(runner *R, const rcp_conform_io *io)
{
    memset(R, 0, sizeof *R);
    if (io)
        R->io = *io;
    rcp_arena_init(&R->data, 0);
    rcp_arena_init(&R->probe, 0);
    rcp_arena_init(&R->tok_arena, 0);
    rcp_arena_init(&R->req_arena, 0);
    rcp_buf_init(&R->sent);
    rcp_buf_init(&R->out);
    rcp_buf_init(&R->fatal);
    rcp_buf_init(&R->metrics);
    rcp_buf_init(&R->report);
    R->close_ms = CLOSE_MS;
    make_nonce(R);
}

/* MARK: - Reports: files, matrix ---------------------------------------- */

static int write_file(const char *path, const rcp_buf *b)
{
    FILE *f = fopen(path, "wb");
    int ok = f && (!b->len || fwrite(b->data, 1, b->len, f) == b->len);
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "rcp conform: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* --junit FILE and --html FILE from the parsed reports. */
static int write_reports(runner *R, const rcp_json *const *reports,
                         size_t n)
{
    rcp_buf b;
    int rc = 0;
    rcp_buf_init(&b);
    if (R->junit && (rcp_conform_junit(reports, n, &b) != 0
                     || write_file(R->junit, &b) != 0))
        rc = -1;
    b.len = 0;
    if (R->html && (rcp_conform_html(reports, n, &b) != 0
                    || write_file(R->html, &b) != 0))
        rc = -1;
    rcp_buf_free(&b);
    return rc;
}

/* Keep a report's text for the rest of the run and parse it. */
static const rcp_json *keep_report(runner *R, char *text, size_t len)
{
    char **t = rcp_realloc(R->texts, (R->ntexts + 1) * sizeof *t);
    rcp_json_err err;
    if (!t) {
        rcp_free(text);
        return NULL;
    }
    R->texts = t;
    R->texts[R->ntexts++] = text;
    return rcp_json_parse(&R->data, text, len, 0, &err);
}

/* Did the run a report tells of pass (exit status 0)? */
static int report_passed(const rcp_json *rp)
{
    const rcp_json *f = rcp_json_get(rp, "failed");
    const rcp_json *h = rcp_json_get(rp, "declarationHonest");
    return !rcp_json_get(rp, "fatal") && f && f->type == RCP_JSON_ARRAY
        && f->n == 0 && (rcp_json_get(rp, "run")
                         && jptr(rp, "/run/only") ? 1
                         : h && h->type == RCP_JSON_TRUE);
}

/* Several reports at once: a JSON array, or the text matrix; the files. */
static int show_reports(runner *R, const rcp_json *const *rs, size_t n,
                        int rc)
{
    size_t i;
    if (R->json) {
        rcp_jw w;
        rcp_jw_init(&w, &R->out);
        rcp_jw_arr(&w);
        for (i = 0; i < n; i++)
            rcp_jw_value(&w, rs[i]);
        rcp_jw_arr_end(&w);
        rcp_buf_putc(&R->out, '\n');
    } else {
        rcp_conform_matrix_text(rs, n, &R->out);
    }
    flush_out(R);
    return write_reports(R, rs, n) != 0 ? 2 : rc;
}

/* --report A.json --report B.json: tables from reports saved earlier. */
static int from_reports(runner *R)
{
    const rcp_json *rs[MAX_REPORTS];
    size_t i;
    int rc = 0;
    for (i = 0; i < R->nfrom; i++) {
        size_t len;
        char *text = read_file(R->from[i], &len);
        if (!text || !(rs[i] = keep_report(R, text, len))
            || rs[i]->type != RCP_JSON_OBJECT || !rcp_json_get(rs[i],
                                                               "checks")) {
            fprintf(stderr, "rcp conform: %s is not an rcp conform --json "
                    "report\n", R->from[i]);
            return 2;
        }
        rc |= !report_passed(rs[i]);
    }
    return show_reports(R, rs, R->nfrom, rc);
}

static int run_one(runner *R);

/* --matrix -- CMD1 ARGS ::: CMD2 ARGS ...: the suite against each server
** in turn (one at a time, each with its own runner), then the matrix. */
static int run_matrix(runner *R)
{
    const rcp_json *rs[MAX_REPORTS];
    char **seg[MAX_REPORTS];
    size_t n = 0, i, w;
    int failed = 0;
    for (i = 0; R->cmd && R->cmd[i]; i++)
        if (strcmp(R->cmd[i], ":::") == 0)
            R->cmd[i] = NULL;
        else if ((i == 0 || !R->cmd[i - 1]) && n < MAX_REPORTS)
            seg[n++] = R->cmd + i;
    for (i = 0; i < n; i++) {
        runner S;
        runner_init(&S, &R->io);
        S.cmd = seg[i];
        S.dir = R->dir;
        S.only = R->only;
        S.max_level = R->max_level;
        S.tmo = R->tmo;
        S.start_tmo = R->start_tmo;
        S.verbose = R->verbose;
        S.quiet = R->quiet;
        S.silent = R->json;
        S.want_report = 1;
        if (!R->json) {
            buf_printf(&R->out, "%s== server %lu:", i ? "\n" : "",
                       (unsigned long)(i + 1));
            for (w = 0; seg[i][w]; w++)
                buf_printf(&R->out, " %s", seg[i][w]);
            rcp_buf_puts(&R->out, "\n");
            flush_out(R);
        }
        failed |= (load_checks(&S) == 0 ? run_one(&S) : 2) != 0;
        if (S.report.len) {
            rs[i] = keep_report(R, S.report.data, S.report.len);
            S.report.data = NULL;        /* R keeps the text */
            S.report.len = 0;
        } else {
            rs[i] = NULL;
        }
        runner_free(&S);
        if (!rs[i])
            return 2;
    }
    if (!n) {
        usage_error("--matrix needs commands: -- CMD1 ARGS ::: CMD2 ARGS%s",
                    "");
        return 2;
    }
    return show_reports(R, rs, n, failed);
}

/* One server: the checks, then the report files. */
static int run_one(runner *R)
{
    const rcp_json *rp;
    int rc;
    R->want_report |= R->junit || R->html;
    rc = run_all(R);
    if ((R->junit || R->html) && R->report.len) {
        rcp_arena a;
        rcp_json_err err;
        rcp_arena_init(&a, 0);
        rp = rcp_json_parse(&a, R->report.data, R->report.len, 0, &err);
        if (!rp || write_reports(R, &rp, 1) != 0)
            rc = 2;
        rcp_arena_free(&a);
    }
    return rc;
}

int rcp_conform_run(int argc, char **argv, const rcp_conform_io *io)
{
    runner R;
    int rc;
    runner_init(&R, io);
    rc = parse_args(&R, argc, argv);
    if (rc == 0 && R.nfrom) {
        rc = from_reports(&R);
    } else if (rc == 0 && R.matrix && !R.coverage) {
        rc = run_matrix(&R);
    } else {
        if (rc == 0 && load_checks(&R) != 0)
            rc = -1;
        if (rc == 0 && R.only && !R.coverage && count_selected(&R) == 0)
            rc = usage_error("--only %s matches no check id and no "
                             "section", R.only);
        if (rc == 0)
            rc = R.coverage ? coverage(&R) : run_one(&R);
        else
            rc = rc < 0 ? 2 : 0;
    }
    flush_out(&R);
    runner_free(&R);
    return rc;
}

int rcp_conform_main(int argc, char **argv)
{
    return rcp_conform_run(argc, argv, NULL);
}
