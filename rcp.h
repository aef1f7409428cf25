/*
** rcp.h -- the whole public API of rcp, the C99 reference implementation of
** RCP/1, the Retrieval Context Protocol (spec: rcp-1.0.md).
**
** Read it like the spec: version and limits, error codes, the allocator
** hook, then one labelled group per source file:
**
**   MARK: - Core      allocator, arena, growable buffer      (json.c)
**   MARK: - JSON      RFC 8259 parser and compact writer      (json.c)  §4.6
**   MARK: - Vectors   kernels, SIMD dispatch, codecs, top-k   (vec.c)   §7.3-7.5
**   MARK: - Engine    the built-in retrieval engine           (model.c) §7.7, §8
**   MARK: - Server    the protocol and the stdio transport    (rcp.c)   §4-§13
**   MARK: - Client    an id-correlating client                (client.c) §4.7, §11
**
** Ownership: every function says who owns what it returns.  "Borrowed"
** means the pointer lives as long as the object it came from.  No function
** keeps a pointer to caller memory after it returns unless it says so.
**
** Names: public rcp_<area>_<verb>; RCP_ macros.  Cross-file internals are
** in the block marked INTERNAL at the end; they are not a stable API.
*/
#ifndef RCP_H
#define RCP_H

#include <stddef.h>
#include <stdint.h>

/* MARK: - Version and limits ------------------------------------------- */

#define RCP_VERSION           "0.1.0"
#define RCP_PROTOCOL_VERSION  1        /* §7.1: the highest version we speak */

/* §4.6: integers on the wire must fit the IEEE-754 double-exact range. */
#define RCP_INT53_MAX  9007199254740991.0

/* Default bounds; each is a server option (see rcp_server_opts). */
#define RCP_DEFAULT_MAX_LINE   (16u << 20) /* §5.1 bytes in one stdio frame */
#define RCP_DEFAULT_MAX_BATCH  1024u       /* §11 members in one batch */
#define RCP_JSON_MAX_DEPTH     256u        /* nesting bound of the parser */

/* MARK: - Error codes (§12) --------------------------------------------- */

enum rcp_code {
    RCP_PARSE_ERROR         = -32700,
    RCP_INVALID_REQUEST     = -32600,
    RCP_METHOD_NOT_FOUND    = -32601, /* reserved; RCP uses -32004 */
    RCP_INVALID_PARAMS      = -32602,
    RCP_INTERNAL_ERROR      = -32603,
    RCP_NOT_INITIALIZED     = -32001,
    RCP_VERSION_MISMATCH    = -32002,
    RCP_CAPABILITY_MISSING  = -32003,
    RCP_UNKNOWN_METHOD      = -32004,
    RCP_OPTION_UNSUPPORTED  = -32005,
    RCP_CANCELLED           = -32006,
    RCP_BACKEND_UNAVAILABLE = -32010,
    RCP_RATE_LIMITED        = -32011,
    RCP_UNAUTHORIZED        = -32012,
    RCP_PAYLOAD_TOO_LARGE   = -32013,
    RCP_TIMEOUT             = -32014,
    RCP_NOT_FOUND           = -32015,
    RCP_CONFLICT            = -32016
};

/* The §12 symbol's message for a code ("Invalid params", ...); a generic
** message for a code the table does not know (§12: unknown codes are
** generic failures).  Never NULL; static storage. */
const char *rcp_code_message(int code);

/* MARK: - Core: allocator, arena, buffer (json.c) ------------------------ */

/* One allocator hook for the whole library (Lua's lua_Alloc).  fn(ud, p, n)
** behaves like realloc(p, n) when n > 0 and like free(p) returning NULL
** when n == 0.  A NULL fn restores the C library's.  Tests install one that
** fails the Nth call to prove every NULL becomes an error, never a crash. */
typedef void *(*rcp_alloc_fn)(void *ud, void *ptr, size_t size);
void  rcp_set_allocator(rcp_alloc_fn fn, void *ud);
void *rcp_malloc(size_t n);             /* NULL on failure or n == 0 */
void *rcp_realloc(void *p, size_t n);   /* NULL on failure; p untouched */
void  rcp_free(void *p);                /* NULL is a no-op */

/* A region allocator: many allocations, one release.  Each request's parse
** tree and scratch space live in one arena (GUIDE: "one arena per
** request").  limit caps the bytes it may hold (0 = no cap). */
typedef struct rcp_arena_block rcp_arena_block;
typedef struct rcp_arena {
    rcp_arena_block *head;
    size_t used;     /* bytes handed out since the last reset */
    size_t limit;
} rcp_arena;
void  rcp_arena_init(rcp_arena *a, size_t limit);
/* n bytes aligned for any scalar type; NULL when out of memory or over the
** limit.  Owned by the arena. */
void *rcp_arena_alloc(rcp_arena *a, size_t n);
void  rcp_arena_reset(rcp_arena *a);    /* release all; keep one block */
void  rcp_arena_free(rcp_arena *a);     /* release everything */

/* A growable byte buffer.  Appends never fail loudly: on allocation
** failure the buffer sets oom and ignores further appends, so a writer
** checks once at the end. */
typedef struct rcp_buf {
    char  *data;
    size_t len, cap;
    int    oom;
} rcp_buf;
void rcp_buf_init(rcp_buf *b);
int  rcp_buf_reserve(rcp_buf *b, size_t extra);  /* 0 ok, -1 oom */
void rcp_buf_put(rcp_buf *b, const void *p, size_t n);
void rcp_buf_putc(rcp_buf *b, char c);
void rcp_buf_puts(rcp_buf *b, const char *s);
void rcp_buf_free(rcp_buf *b);

/* MARK: - JSON (json.c) §4.6, RFC 8259 ------------------------------------ */

typedef enum rcp_json_type {
    RCP_JSON_NULL, RCP_JSON_FALSE, RCP_JSON_TRUE, RCP_JSON_NUMBER,
    RCP_JSON_STRING, RCP_JSON_ARRAY, RCP_JSON_OBJECT
} rcp_json_type;

/* A parsed value.  The tree lives in the arena given to rcp_json_parse and
** MAY point into the input text, so the input must outlive the tree.
**   STRING  s, n: the decoded UTF-8 bytes (may contain NUL; not terminated)
**   NUMBER  s, n: the number's original text, exactly as received
**   ARRAY   kids[0..n): the elements, in order
**   OBJECT  kids[0..n): the members in order; each has key, keylen
** Duplicate names are kept; lookups honour the last one. */
typedef struct rcp_json rcp_json;
struct rcp_json {
    rcp_json_type type;
    size_t        n;
    const char   *s;
    rcp_json     *kids;
    const char   *key;      /* member name (decoded) when inside an object */
    size_t        keylen;
};

/* Parse errors: {code, offset, message} from one table. */
typedef enum rcp_json_errcode {
    RCP_JSON_OK = 0,
    RCP_JSON_E_EMPTY,        /* no value */
    RCP_JSON_E_TRAILING,     /* something after the value */
    RCP_JSON_E_TOKEN,        /* unexpected byte */
    RCP_JSON_E_NUMBER,       /* malformed number */
    RCP_JSON_E_STRING_CTRL,  /* raw control character in a string */
    RCP_JSON_E_ESCAPE,       /* invalid escape */
    RCP_JSON_E_SURROGATE,    /* lone or mismatched \u surrogate */
    RCP_JSON_E_UTF8,         /* invalid UTF-8 */
    RCP_JSON_E_UNTERMINATED, /* input ends inside a string/array/object */
    RCP_JSON_E_DEPTH,        /* nesting deeper than the limit */
    RCP_JSON_E_NOMEM         /* arena exhausted */
} rcp_json_errcode;

typedef struct rcp_json_err {
    rcp_json_errcode code;
    size_t           offset;  /* byte offset of the offending byte */
    const char      *msg;     /* static, from the table */
} rcp_json_err;

/* Parse exactly one RFC 8259 JSON text from text[0..len).  Bytes, not a C
** string: a NUL byte is judged like any other.  max_depth bounds nesting
** (0 = RCP_JSON_MAX_DEPTH); the parser never recurses on the C stack.
** Returns the root (owned by a) or NULL with *err filled. */
const rcp_json *rcp_json_parse(rcp_arena *a, const char *text, size_t len,
                               size_t max_depth, rcp_json_err *err);

/* The member named key (a C string) of obj, the last one when names repeat;
** NULL when obj is NULL, not an object, or has no such member. */
const rcp_json *rcp_json_get(const rcp_json *obj, const char *key);
/* 1 when v is a string equal to the C string s. */
int    rcp_json_streq(const rcp_json *v, const char *s);
/* A number's value as a double (nearest; overflow gives +-HUGE_VAL). */
double rcp_json_num(const rcp_json *v);
/* 1 and *out when v is a number with no fractional part inside the §4.6
** 53-bit range (so 1e2 and 10.0 are integers, 0.5 and 1e300 are not). */
int    rcp_json_int(const rcp_json *v, int64_t *out);

/* Shortest text that reads back to exactly the same value; out has room
** for at least 32 bytes; returns the length (no NUL written past it).
** A non-finite input writes a finite sentinel (§4.6): 0 for NaN and the
** largest finite value of the type for +-Infinity. */
size_t rcp_json_fmt_double(char *out, double v);
size_t rcp_json_fmt_float(char *out, float v);

/* A streaming compact writer: one line, no BOM, commas placed for you. */
typedef struct rcp_jw {
    rcp_buf      *b;
    unsigned      depth;
    unsigned char first[RCP_JSON_MAX_DEPTH + 16];  /* 1 = nothing yet */
} rcp_jw;
void rcp_jw_init(rcp_jw *w, rcp_buf *b);
void rcp_jw_obj(rcp_jw *w);
void rcp_jw_obj_end(rcp_jw *w);
void rcp_jw_arr(rcp_jw *w);
void rcp_jw_arr_end(rcp_jw *w);
void rcp_jw_key(rcp_jw *w, const char *k);              /* C string */
void rcp_jw_keyn(rcp_jw *w, const char *k, size_t n);
void rcp_jw_str(rcp_jw *w, const char *s, size_t n);    /* escaped */
void rcp_jw_cstr(rcp_jw *w, const char *s);
void rcp_jw_int(rcp_jw *w, int64_t v);
void rcp_jw_double(rcp_jw *w, double v);
void rcp_jw_float(rcp_jw *w, float v);
void rcp_jw_bool(rcp_jw *w, int v);
void rcp_jw_null(rcp_jw *w);
/* A parsed value, compact; numbers keep their original text. */
void rcp_jw_value(rcp_jw *w, const rcp_json *v);
/* Already-serialised JSON, copied verbatim as one value. */
void rcp_jw_raw(rcp_jw *w, const char *json, size_t n);

/* MARK: - Vectors (vec.c) §7.3-§7.5 -------------------------------------- */

/* (declared by vec.c's owner) */

/* MARK: - Engine (model.c) §3, §7.3-§7.11, §8, §16.3 ---------------------- */

/* (declared by model.c's owner) */

/* MARK: - Server (rcp.c) §4-§13 ------------------------------------------- */

/* (declared by rcp.c's owner) */

/* MARK: - Client (client.c) §4.7, §11 ------------------------------------- */

/* (declared by client.c's owner) */

#endif /* RCP_H */
