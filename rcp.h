/*
** rcp.h -- the whole public API of rcp, the C99 reference implementation of
** RCP/1, the Retrieval Context Protocol (spec: rcp-1.0.md).
**
** Read it like the spec: version and limits, error codes, the allocator
** hook, then the API most programs need -- JSON, a server, a client --
** and then the engine's parts, for a program that builds its own server
** or measures one, one labelled group per source file:
**
**   Core     allocator hook, arena, growable buffer  json.c
**   JSON     RFC 8259 parser, compact writer         json.c       §4.6
**   Server   a server: stdio or in-process           rcp.c,       §4-§14
**                                                    transport.c,
**                                                    methods.c
**   Client   an id-correlating client                client.c     §4.7, §11
**   Vectors  kernels, SIMD dispatch, codecs          vec.c        §7.3-§7.5
**   Text     tokenizer, stemmer, chunker             text.c       §7.10
**   Engine   the built-in retrieval engine           model.c      §7.7, §8
**   Storage  durable, crash-safe documents           store.c      §7.10
**
** The conformance machinery (the runner, the bundled data, the schema
** validator) is not library API: conformance/conform.h.
**
** Ownership: every function says who owns what it returns.  "Borrowed"
** means the pointer lives as long as the object it came from.  No function
** keeps a pointer to caller memory after it returns unless it says so.
** A pointer argument may be NULL only where its function says so.
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

/* Caps on what a client can make the server keep or repeat (README,
** Decisions: "Limits"); past one a request is -32602 naming the field. */
#define RCP_MAX_ID_BYTES       512u        /* §7.10, §7.11 a document id */
#define RCP_MAX_TEXT_BYTES     (16u << 20) /* §7.10 a document's text */
#define RCP_MAX_META_BYTES     (1u << 20)  /* §7.10 its meta, serialised */
#define RCP_MAX_TOKEN_BYTES    256u        /* §9 a progressToken's text */
#define RCP_MAX_IDEM_KEY_BYTES 256u        /* §7.10 an idempotencyKey */
#define RCP_IDEM_BYTES         (16u << 20) /* §7.10 remembered results */

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
void *rcp_realloc(void *p, size_t n);   /* NULL on failure or n == 0;
                                           p untouched then */
void  rcp_free(void *p);                /* NULL is a no-op */

/* A region allocator: many allocations, one release.  Each request's parse
** tree and scratch space live in one arena (GUIDE: "one arena per
** request").  limit caps used, the bytes handed out (padding included)
** since the last reset; 0 = no cap.  rcp_json_parse holds its scratch
** stacks to the same cap, so a limit bounds all memory one parse takes. */
typedef struct rcp_arena_block rcp_arena_block;
typedef struct rcp_arena {
    rcp_arena_block *head;
    size_t used;     /* bytes handed out since the last reset */
    size_t limit;
    int    full;     /* the last NULL came from the limit, not malloc */
} rcp_arena;
void  rcp_arena_init(rcp_arena *a, size_t limit);
/* n bytes aligned for any scalar type (n == 0 counts as 1); NULL when out
** of memory or over the limit.  Owned by the arena. */
void *rcp_arena_alloc(rcp_arena *a, size_t n);
/* Release all; keep one block, sized to what the arena needed (up to
** 8 MiB), so a stream of similar requests stops calling malloc. */
void  rcp_arena_reset(rcp_arena *a);
void  rcp_arena_free(rcp_arena *a);     /* release everything */

/* A growable byte buffer.  Appends never fail loudly: on allocation
** failure the buffer sets oom and ignores further appends (len stays
** where it was), so a writer checks once at the end.  oom belongs to
** the text being written, not to the buffer: whoever observes it
** handles the loss and starts the next text with rcp_buf_clear, which
** empties the buffer, clears oom and keeps the memory (cap is always
** what is really allocated).  rcp_buf_free releases the bytes and
** clears oom. */
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
void rcp_buf_clear(rcp_buf *b);                  /* len 0, oom 0, keeps cap */
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
**   NULL, TRUE, FALSE  s, n: the literal's text; containers: s == NULL
** Duplicate names are kept; lookups honour the last one.  A string
** without escapes points into the input; one with escapes is decoded into
** the arena.  Keys are never NULL inside an object. */
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
    RCP_JSON_E_NOMEM,        /* an allocation failed (the server's
                                trouble, not the text's: -32603) */
    RCP_JSON_E_LIMIT         /* the tree would pass the arena's limit
                                (the text is too large: -32013) */
} rcp_json_errcode;

typedef struct rcp_json_err {
    rcp_json_errcode code;
    size_t           offset;  /* byte offset of the offending byte */
    const char      *msg;     /* static, from the table */
} rcp_json_err;

/* Parse exactly one RFC 8259 JSON text from text[0..len).  Bytes, not a C
** string: a NUL byte is judged like any other.  max_depth bounds nesting
** (0 = RCP_JSON_MAX_DEPTH); the parser never recurses on the C stack.
** Strict: whitespace is space/tab/CR/LF only, no BOM, UTF-8 is validated
** (Unicode Table 3-7), a lone \uD800-\uDFFF escape is
** RCP_JSON_E_SURROGATE.  Returns the root (owned by a) or NULL with *err
** filled (err may be NULL); a must not be NULL; text may be NULL if len
** is 0.  The offset of a truncated text is len. */
const rcp_json *rcp_json_parse(rcp_arena *a, const char *text, size_t len,
                               size_t max_depth, rcp_json_err *err);

/* The member named key (a C string) of obj, the last one when names repeat;
** NULL when obj is NULL, not an object, or has no such member. */
const rcp_json *rcp_json_get(const rcp_json *obj, const char *key);
/* 1 when v is a string equal to the C string s. */
int    rcp_json_streq(const rcp_json *v, const char *s);
/* A number's value as a double, correctly rounded at any length (overflow
** gives +-HUGE_VAL, -0 stays -0); 0.0 when v is not a number. */
double rcp_json_num(const rcp_json *v);
/* 1 and *out when v is a number with no fractional part inside the §4.6
** 53-bit range (so 1e2 and 10.0 are integers, 0.5 and 1e300 are not). */
int    rcp_json_int(const rcp_json *v, int64_t *out);

/* Shortest text that reads back to exactly the same value (the closest
** such when several are as short); out has room for at least
** RCP_JSON_FMT_SIZE bytes, any of which may be written (the fast layout
** stores whole words); returns the length (no NUL is written).
** Layout as ECMAScript's Number::toString: 3, -0, 0.1, 0.000001, 1e-7,
** 100000000000000000000, 1e+21, 1.5e+300.
** A non-finite input writes a finite sentinel (§4.6): 0 for NaN and the
** largest finite value of the type for +-Infinity. */
#define RCP_JSON_FMT_SIZE 32
size_t rcp_json_fmt_double(char *out, double v);
size_t rcp_json_fmt_float(char *out, float v);

/* A streaming compact writer: one line, no BOM, commas placed for you.
** Strings and keys are escaped (", \, control bytes; U+2028/9 stay raw)
** and bytes that are not UTF-8 become U+FFFD, so the output is always
** valid JSON.  Nesting deeper than RCP_JSON_MAX_DEPTH + 15 sets b->oom. */
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

/* A 64-bit fingerprint (FNV-1a) of a parsed value, continuing from h (the
** FNV offset basis 14695981039346656037 to start): equal for two values
** that rcp_jw_value writes the same, different otherwise but for hash
** collisions.  Allocates nothing, so it cannot fail.  NULL hashes like
** nothing at all. */
uint64_t rcp_json_hash(uint64_t h, const rcp_json *v);

/* MARK: - Server (rcp.c, transport.c, methods.c) §4-§14 ---------------- */

/* A server is the protocol (rcp.c) serving the built-in engine's methods
** (methods.c) over stdio (transport.c) or in-process, one frame at a
** time.  One thread per server. */

typedef struct rcp_server rcp_server;
typedef struct rcp_model  rcp_model;    /* the engine (model.c, below) */
typedef struct rcp_store  rcp_store;    /* its storage (store.c, below) */

/* §8: a metadata field clients may filter on, with its declared type. */
typedef enum rcp_field_type {
    RCP_FIELD_KEYWORD, RCP_FIELD_TEXT, RCP_FIELD_INT, RCP_FIELD_FLOAT,
    RCP_FIELD_BOOL, RCP_FIELD_DATE
} rcp_field_type;
typedef struct rcp_field {
    const char    *name;    /* a top-level key of a document's meta */
    size_t         namelen;
    rcp_field_type type;
} rcp_field;
/* "name:type" with type keyword|text|int|float|bool|date into *out (name
** borrowed from spec: the bytes before the last ':').  0 ok, -1 malformed
** or unknown type. */
int rcp_field_parse(const char *spec, rcp_field *out);
/* §8: does v fit field f -- a value of its type, an array of them, or
** null (absent)?  1 yes, 0 no.  index/add and --corpus refuse a meta
** that does not (issue 12), so a filter meets only values it can
** compare. */
int rcp_field_accepts(const rcp_field *f, const rcp_json *v);

typedef struct rcp_server_opts {
    size_t max_line;      /* §5.1 bytes in one frame (0 = default) */
    size_t max_batch;     /* §11 members in one batch (0 = default) */
    long   deadline_ms;   /* §13.1 the server's own per-request deadline;
                             0 = none, < 0 = default (60 s) */
    int    debug;         /* adds the x-rcp/sleep test method (§6.2) and
                             advertises its x-rcp capability; retrieve
                             then offers all five §7.8 rewrites (for
                             measuring them, tests/eval.c) */
    rcp_model *model;     /* the engine serving the retrieval methods, or
                             NULL for none; borrowed, must outlive s */
    const rcp_field *fields;  /* §8 filterable fields (borrowed); the
                             filter capability is advertised when any.
                             Each must be one the model was made with
                             (rcp_model_opts.fields: same name, same
                             type), whose values it reads at add */
    size_t nfields;
    rcp_store *store;     /* durable home of the model's documents
                             (borrowed), or NULL to keep them in memory */
    /* §15.2 provenance of what clients write (index/add): the trust
    ** level and the source name every such document is recorded with.
    ** NULL = "untrusted" and "clients".  An operator may vouch for its
    ** writers ("trusted", "community"); this is the hook an HTTP write
    ** token's scope sets (§15.3: authorise writes apart from reads).
    ** Each document keeps its own origin (--corpus records its own), and a
    ** hit's trust.level is its document's, never "trusted" when the
    ** injection screen flags its text. */
    const char *write_trust;
    const char *write_source;
    int    read_only;     /* §6 index {writable:false}: index/add and
                             index/delete are -32003 (README, Decisions) */
    size_t max_request_memory;  /* bytes one frame's parse tree and
                             scratch may take; more is -32013 (§15.5);
                             0 = default (256 MiB) */
} rcp_server_opts;

/* A new server in the uninitialised state (§13).  opts may be NULL (all
** defaults); it is copied, and what it points to is borrowed.  The
** capabilities it advertises follow from opts now and never change
** (§13.2).  NULL on allocation failure, or when opts->fields names a
** field opts->model was not made with.  Free with rcp_server_free. */
rcp_server *rcp_server_new(const rcp_server_opts *opts);
/* §7.7 trust.level names: "untrusted", "community", "trusted" as
** RCP_TRUST_* (0, 1, 2; rcp_model_origin), or -1 for any other name. */
int rcp_trust_level(const char *name);
void        rcp_server_free(rcp_server *s);    /* NULL is a no-op */

/* §5.1: serve newline-delimited JSON-RPC from in_fd to out_fd until EOF on
** in_fd (an implicit shutdown: what was received is finished and flushed),
** a shutdown request, or a closed out_fd.  Diagnostics go to stderr, never
** out_fd; neither descriptor is closed; SIGPIPE is ignored from then on.
** Afterwards s answers nothing more.  Returns 0 on a clean end, -1 on an
** I/O error reading in_fd (or no memory for the input buffer). */
int rcp_server_run(rcp_server *s, int in_fd, int out_fd);

/* One frame (one line, without its newline; borrowed for the call) in,
** its response line(s) (each ending in '\n') appended to out, the
** caller's; nothing is appended for notifications.  For embedding a
** server in-process and for tests.  A line is appended whole or not at
** all: when out cannot grow, out->oom is set (the caller sees it and
** clears it with rcp_buf_clear).  Returns 1 once the server has answered
** shutdown (and then does nothing more), else 0. */
int rcp_server_handle(rcp_server *s, const char *frame, size_t len,
                      rcp_buf *out);

/* §5.2: serve RCP/1 over HTTP/1.1 (http.c) -- POST <base>/<method> with
** the JSON-RPC object as the body, a batch POSTed to <base>; one
** poll(2) loop over non-blocking sockets, keep-alive and pipelining, SSE
** for progress.  rcp_http_opts_init fills the defaults, each field's
** zero meaning its default. */
typedef struct rcp_http_opts {
    const char *listen;     /* "[ADDR:]PORT"; an IPv6 ADDR in brackets
                               ("[::1]:8080"); ADDR defaults to 127.0.0.1;
                               PORT 0 picks a free one */
    const char *base;       /* the endpoint's path (default "/rcp") */
    int   sessions;         /* stateful: initialize issues a session
                               token (_meta.session, RCP-Session) */
    long  session_idle_ms;  /* a session unused this long expires
                               (default 30 min) */
    const char *auth_token_file;  /* one bearer token per line, optionally
                               followed by its scope read|write (default
                               both); NULL: no auth */
    int   allow_remote;     /* serve a non-loopback address without auth */
    const char *const *cors;  /* allowed Origins ("*": any), or NULL */
    size_t ncors;
    double rate;            /* requests per second per client (token
                               bucket, burst of one second); 0 = no limit */
    int   log_requests;     /* one access-log line per request on stderr
                               (never a body, §15.6) */
    size_t max_body;        /* bytes (default: the server's max_line) */
    size_t max_header;      /* bytes of request line + headers (16 KiB) */
    size_t max_conns;       /* connections at once (default 4096) */
    long  idle_ms;          /* keep-alive idle timeout (default 60 s) */
    long  header_ms;        /* to receive a whole header (default 10 s) */
    long  body_ms;          /* to receive a whole body (default 30 s) */
    int   stop_fd;          /* readable (a byte or EOF): finish what is in
                               flight and return; -1 = none */
} rcp_http_opts;
void rcp_http_opts_init(rcp_http_opts *o);
/* Serve s over HTTP until o->stop_fd is readable.  Once listening it
** prints one line on stderr, "rcp: listening on http://HOST:PORT/BASE"
** (HOST an IPv6 address in brackets), the URL to POST to.  Returns 0 on
** a clean stop, -1 (the reason on stderr) when it cannot start: a bad
** address, a port in use, an unreadable or empty token file, a
** non-loopback address with neither auth nor allow_remote. */
int rcp_server_run_http(rcp_server *s, const rcp_http_opts *o);

/* Counters a server keeps about its own work, for operators, tests and
** benchmarks.  Copied into *out by rcp_server_stat; they only ever
** grow. */
typedef struct rcp_server_stats {
    uint64_t bytes_read;       /* from in_fd (rcp_server_run) */
    uint64_t bytes_searched;   /* examined for a line end: each byte read
                                  at most twice (§5.1 framing is linear) */
    uint64_t frames;           /* lines handled */
    uint64_t oom_answers;      /* answers that ran out of memory and went
                                  out as -32603 instead */
    uint64_t unqueued;         /* lines written straight out because the
                                  output queue could not grow */
    uint64_t progress_dropped; /* §9 progress frames not sent for lack of
                                  memory (or inside a spilled batch) */
} rcp_server_stats;
void rcp_server_stat(const rcp_server *s, rcp_server_stats *out);

/* MARK: - Client (client.c) §4.7, §11 ------------------------------------- */

/* An RCP/1 client over stdio (§5.1) or HTTP (§5.2).  Over stdio it
** launches the server as a child process, writes to the child's stdin and
** reads frames from its stdout.  Over HTTP (rcp_client_connect) each
** message is one POST -- to <base>/<method>, a batch to <base> -- on a
** keep-alive connection of its own, so requests in flight run side by
** side; a response body, or each `data:` event of an SSE stream, is a
** frame as a stdio line is, and everything below works the same.
** Every response is paired with its request by id alone (§4.7, §11): the
** client keeps a pending map id -> request and never pairs by position or
** arrival order (seed 002).  Single-threaded: frames are read and paired
** only inside rcp_client_pump, rcp_client_wait and the send functions
** (a send also drains the server's output, so neither side can block the
** other on a full pipe).  Writes never raise SIGPIPE: a dead server is an
** error value.  The client does not keep a pointer to caller memory. */

typedef struct rcp_client  rcp_client;
typedef struct rcp_request rcp_request;   /* one request the client sent */

typedef enum rcp_request_state {
    RCP_REQ_PENDING = 0, /* sent; no response yet */
    RCP_REQ_DONE,        /* its response arrived (a result or an error) */
    RCP_REQ_TIMEOUT,     /* its deadline passed first: counted missing; a
                            late response is still paired by id and
                            discarded (§13.1) */
    RCP_REQ_ABANDONED    /* the transport died first (§13.1): failed here,
                            nothing assumed about its effect */
} rcp_request_state;

/* What was wrong with a response that was still paired (bit flags). */
#define RCP_RESP_BAD_JSONRPC   1u  /* "jsonrpc" is not "2.0" (§4) */
#define RCP_RESP_BOTH          2u  /* both result and error */
#define RCP_RESP_NEITHER       4u  /* neither result nor error */
#define RCP_RESP_BAD_ERROR     8u  /* error not {code:int, message:str} */
#define RCP_RESP_UNKNOWN_CODE 16u  /* a code §12 does not define: treated
                                      as a generic failure of its sign */
#define RCP_RESP_BAD_RESULT   32u  /* result is not an object (schema) */

/* Counters.  The first group is seed 002's: despite the batch. prefix
** they count every response, batched or not, except where noted. */
typedef struct rcp_client_metrics {
    /* batch.size: batches sent, sum and maximum of their member counts */
    uint64_t batches, batch_size_sum, batch_size_max;
    /* batch.response_count_mismatch: batches whose reply carried a number
    ** of non-null-id responses other than their number of requests */
    uint64_t batch_response_count_mismatch;
    uint64_t batch_unknown_id_response; /* id matches nothing in flight */
    uint64_t batch_missing_response;    /* deadline passed, no response */
    uint64_t batch_null_id_response;    /* id null: a request failed to
                                           parse or was malformed */
    /* batch.pair_latency: send -> pairing, in microseconds; bucket i of
    ** the histogram holds latencies in [2^i, 2^(i+1)) us */
    uint64_t pairs, pair_us_sum, pair_us_max, pair_us_hist[32];
    /* what a broken server does */
    uint64_t duplicate_response; /* an id answered twice (these are also
                                    counted in batch_unknown_id_response) */
    uint64_t late_response;      /* arrived after its deadline; discarded */
    uint64_t bad_jsonrpc, both_result_error, neither_result_error;
    uint64_t bad_error_object, bad_id_type, unknown_error_code;
    uint64_t unparseable;        /* a line that is not JSON */
    uint64_t not_a_message;      /* JSON, but not an object or array */
    uint64_t bom;                /* a line starting with U+FEFF (§5.1) */
    uint64_t server_requests;    /* frames with id and method: RCP/1
                                    servers send none */
    /* what a correct server may do */
    uint64_t frames;             /* non-blank lines received */
    uint64_t blank_lines;        /* ignored (§5.1) */
    uint64_t notifications, progress, logs, unknown_notifications;
    uint64_t responses;          /* response objects received */
    /* reading (§5.1 framing is linear: each byte searched at most once) */
    uint64_t bytes_read;         /* from the server's stdout (or sockets) */
    uint64_t bytes_searched;     /* examined for a line end */
    /* HTTP (§5.2) */
    uint64_t http_exchanges;     /* requests POSTed (or sent raw) */
    uint64_t http_not_200;       /* responses with another status */
    uint64_t http_failed;        /* exchanges that ended without a whole
                                    response (reset, bad framing) */
    uint64_t http_reconnects;    /* a kept-alive connection was found
                                    closed and the request sent afresh */
    uint64_t http_connect_failures;
    uint64_t http_standins;      /* a status without a JSON-RPC body taken
                                    for the error it mirrors (400, 429,
                                    500, 503: §5.2's table) */
    uint64_t sse_events;         /* SSE events carrying data */
    uint64_t sse_comments;       /* ":" lines (ignored) */
    uint64_t sse_multiline;      /* events of more than one data: line */
    uint64_t sse_after_final;    /* events after the stream's response */
    uint64_t sse_no_final;       /* streams that ended without one */
    uint64_t sse_unterminated;   /* data at the end without a blank line */
} rcp_client_metrics;

typedef enum rcp_client_stderr {
    RCP_STDERR_INHERIT = 0,      /* the server writes to our stderr */
    RCP_STDERR_DISCARD,          /* /dev/null */
    RCP_STDERR_CAPTURE           /* kept (the first 64 KiB) for inspection */
} rcp_client_stderr;

/* A notification, or any frame that pairs with nothing, as it arrives.
** msg is borrowed for the duration of the call. */
typedef void (*rcp_client_notify_fn)(void *ud, const rcp_json *msg);

typedef struct rcp_client_opts {
    rcp_client_stderr    err;
    size_t               max_frame;   /* longest line read (0: 256 MiB);
                                         a longer one is unparseable */
    int                  keep_frames; /* 1: log every received line */
    int                  write_ms;    /* a write blocked this long means a
                                         wedged server (0: 10000) */
    rcp_client_notify_fn on_notify;
    void                *ud;
    /* HTTP only (rcp_client_connect) */
    const char *const   *headers;     /* NULL-terminated "Name: value"
                                         lines sent with every request
                                         (e.g. "Authorization: Bearer t");
                                         copied; NULL: none */
    int                  sse;         /* 1: ask for SSE (Accept:
                                         text/event-stream, §5.2) */
} rcp_client_opts;

/* Start argv[0] (searched in PATH) with argv (NULL-terminated) as a child
** whose stdin and stdout are pipes to us.  opts may be NULL (defaults).
** Returns the client, or NULL with a message in err[0..errlen) (err may
** be NULL) when the pipes, the fork or the exec failed. */
rcp_client *rcp_client_spawn(char *const argv[], const rcp_client_opts *opts,
                             char *err, size_t errlen);
/* The same, but the child runs fn(ud) instead of a program (its stdin and
** stdout are the pipes, every other descriptor above 2 is closed, its
** return value is the exit status): an in-process peer for tests, e.g. a
** deliberately broken server. */
rcp_client *rcp_client_fork(int (*fn)(void *ud), void *ud,
                            const rcp_client_opts *opts, char *err,
                            size_t errlen);
/* An HTTP client of the endpoint url, "http://HOST[:PORT][/BASE]" (HOST a
** name, an IPv4 literal or [an IPv6 literal]; PORT 80 by default; no
** BASE: §5.2's default /rcp).  One connection is made now, so an address
** that takes none is an error here.  opts may be NULL.  Returns the
** client, or NULL with a message in err[0..errlen) (err may be NULL) for
** a bad URL or header line, https (no TLS), a name that does not resolve
** or a refused connection.  Close with rcp_client_close (it returns 0). */
rcp_client *rcp_client_connect(const char *url, const rcp_client_opts *opts,
                               char *err, size_t errlen);
/* End the session: close the child's stdin (EOF = shutdown, §5.1), wait up
** to grace_ms for it to exit, then kill it (SIGKILL) and reap it.  Every
** request still pending is abandoned; every rcp_request is freed.  Returns
** the child's wait status (as waitpid gives it) or -1 if it had to be
** killed.  NULL is a no-op returning -1. */
int  rcp_client_close(rcp_client *c, int grace_ms);
/* Close the child's stdin only: the server sees EOF (§5.1, §13.1).  Over
** HTTP there is no stdin: a no-op. */
void rcp_client_eof(rcp_client *c);
/* Wait up to timeout_ms for the child to exit, reading its output
** meanwhile.  1 and *status (may be NULL) when it exited, else 0. */
int  rcp_client_wait_exit(rcp_client *c, int timeout_ms, int *status);
/* 1 while the server's stdout is open (no EOF or error seen); over HTTP,
** until a connection is refused. */
int  rcp_client_alive(const rcp_client *c);
long rcp_client_pid(const rcp_client *c);      /* -1 over HTTP, or NULL */

/* --- Sending.  Every request gets an id unique among the requests in
** flight (§4.7); the pending entry is made before a byte is written. --- */

/* Send {"jsonrpc":"2.0","id":N,"method":method,"params":params}.  params
** is JSON text (an object) or NULL for none.  timeout_ms > 0 sets the
** request's deadline (0: none).  Returns the request, owned by the client
** until rcp_request_free or rcp_client_close; NULL when out of memory or
** the write failed (the server is dead or wedged). */
rcp_request *rcp_client_request(rcp_client *c, const char *method,
                                const char *params, int timeout_ms);
/* A notification (no id, never answered, §4.5).  0, or -1 on failure. */
int rcp_client_notify(rcp_client *c, const char *method, const char *params);
/* Between begin and end, rcp_client_request and rcp_client_notify add
** members to one JSON-RPC batch (§11) instead of writing; end sends the
** array (nothing if it is empty).  0, or -1 on failure (every request of
** the batch is then abandoned). */
int rcp_client_batch_begin(rcp_client *c);
int rcp_client_batch_end(rcp_client *c);
/* Raw bytes exactly as given (invalid JSON, partial lines...): for tests
** and the conformance suite.  0, or -1 when the server is dead/wedged.
** Over HTTP each complete line is one message, POSTed to <base>/<method>
** when it is an object with a string method, else to <base>; bytes
** after the last newline wait for the next call; blank lines send
** nothing. */
int rcp_client_send_raw(rcp_client *c, const void *bytes, size_t n);
/* Register a pending request for an id that raw bytes carried: idjson is
** its JSON text ("7", "\"a\"").  NULL if it is not a string or number,
** is already in flight, or out of memory. */
rcp_request *rcp_client_expect(rcp_client *c, const char *idjson,
                               size_t n, int timeout_ms);

/* --- Receiving --- */

/* Read what the server wrote within timeout_ms (0: only what is ready),
** pair responses, deliver notifications, expire deadlines.  Returns the
** number of frames handled, or -1 once the server's stdout is closed
** (every pending request is then abandoned). */
int rcp_client_pump(rcp_client *c, int timeout_ms);
/* Pump until r is no longer pending or timeout_ms passes (r's own
** deadline may end it sooner).  Returns r's state. */
rcp_request_state rcp_client_wait(rcp_client *c, rcp_request *r,
                                  int timeout_ms);
/* Pump until nothing is pending or timeout_ms passes; returns how many
** are still pending. */
size_t rcp_client_wait_all(rcp_client *c, int timeout_ms);
/* Pump every client of cs[0..n) (NULL entries are skipped) at once: wait
** up to timeout_ms until any of them wrote, then read what each wrote.
** For a program talking to many servers concurrently (§16.2 fan-out).
** Returns the frames handled in total (0 when the wait ran out). */
int rcp_client_pump_many(rcp_client *const *cs, size_t n, int timeout_ms);
size_t rcp_client_pending(const rcp_client *c);

const rcp_client_metrics *rcp_client_metrics_get(const rcp_client *c);
/* The metrics as one compact JSON object under seed 002's names
** ("batch.size": {...}, "batch.unknown_id_response": n, ...); over HTTP
** also "http.*" and "sse.*" (the fields below by those names). */
void rcp_client_metrics_json(const rcp_client *c, rcp_buf *out);

/* --- A request and its response (all borrowed from the request) --- */

rcp_request_state rcp_request_state_get(const rcp_request *r);
/* The id as sent (JSON text), its length in *n. */
const char *rcp_request_id(const rcp_request *r, size_t *n);
/* The whole response object, or NULL while none has arrived. */
const rcp_json *rcp_request_response(const rcp_request *r);
/* result, or NULL (pending, failed, or an error response). */
const rcp_json *rcp_request_result(const rcp_request *r);
/* 1 and *code (may be NULL) for an error response, else 0.  A code §12
** does not define is still returned; rcp_code_known() tells them apart. */
int rcp_request_error(const rcp_request *r, int *code);
unsigned rcp_request_flags(const rcp_request *r);   /* RCP_RESP_* */
double   rcp_request_latency_ms(const rcp_request *r);
/* Forget r.  If it is still pending its id stays reserved and a later
** response is discarded quietly.  NULL is a no-op. */
void rcp_request_free(rcp_client *c, rcp_request *r);
/* Over HTTP: the status of the exchange that answered r (or ended
** without answering it: r is then RCP_REQ_ABANDONED, §13.1); 0 over
** stdio, while pending, when no response came at all, or r NULL. */
int rcp_request_http_status(const rcp_request *r);

/* --- The frame log (opts.keep_frames) --- */

#define RCP_FRAME_SSE     1u  /* came as an SSE data: event (§5.2) */
#define RCP_FRAME_STANDIN 2u  /* made by the client: a status without a
                                 JSON-RPC body, as the error §5.2's table
                                 says it mirrors ("message": "HTTP 400") */
typedef struct rcp_frame {
    const char     *line;   /* the bytes received, without '\n' (over
                               HTTP a whole body, or an event's data) */
    size_t          len;
    const rcp_json *root;   /* parsed, or NULL when not JSON */
    double          t_ms;   /* arrival, ms since the client started */
    int             http_status;  /* its exchange's status; 0 over stdio */
    unsigned        http_flags;   /* RCP_FRAME_* */
} rcp_frame;
/* The frames received since the last clear, in arrival order; borrowed
** until the next clear or close. */
size_t rcp_client_frames(const rcp_client *c, const rcp_frame **out);
void   rcp_client_frames_clear(rcp_client *c);
/* What the server wrote on stderr (RCP_STDERR_CAPTURE), borrowed. */
const char *rcp_client_stderr_text(const rcp_client *c, size_t *n);

/* --- HTTP itself (§5.2), for the conformance suite and tests --- */

/* The endpoint's base path ("/rcp"), borrowed; NULL over stdio. */
const char *rcp_client_base(const rcp_client *c);
/* HTTP exchanges in flight (0 over stdio): once it is 0, everything the
** server will send for what was sent so far has arrived. */
size_t rcp_client_exchanges(const rcp_client *c);

/* One exchange whose answer the caller judges: nothing of it is paired,
** logged or counted.  The caller owns head and body (the bytes received;
** a chunked body de-chunked, an SSE body as it came). */
typedef struct rcp_http_reply {
    int     status;     /* e.g. 200; 0 when no response arrived */
    rcp_buf head;       /* the status line and headers, as received */
    rcp_buf body;
    int     closed;     /* the connection did not stay open after it */
    int     done;       /* the response is complete */
} rcp_http_reply;
/* Send verb path (e.g. "POST", "/rcp/ping"; verb and path are written as
** given) with the Host header, the client's opts.headers, headers (extra
** lines, each ending in "\r\n", or NULL) and, when body is not NULL,
** Content-Length and the n bytes; wait up to timeout_ms for the whole
** response.  *out is initialised here; free it with rcp_http_reply_free,
** also after a failure.  0, or -1 (no response in time, a connection
** failed; out->status is then 0), or when c is not an HTTP client. */
int rcp_client_http(rcp_client *c, const char *verb, const char *path,
                    const char *headers, const void *body, size_t n,
                    int timeout_ms, rcp_http_reply *out);
/* The value of the first header called name (any case), borrowed from
** r, its length in *n; NULL when absent. */
const char *rcp_http_header(const rcp_http_reply *r, const char *name,
                            size_t *n);
void rcp_http_reply_free(rcp_http_reply *r);   /* NULL is a no-op */

/* --- Helpers shared with the conformance suite --- */

/* §4.7 "same JSON type and value": strings byte for byte, numbers by
** exact decimal value (1e2 == 100, 9007199254740993 != ...992), null ==
** null; anything else is never an id.  NULL pointers compare unequal. */
int rcp_id_equal(const rcp_json *a, const rcp_json *b);
/* 1 when §12 defines code. */
int rcp_code_known(int code);

/* ----------------------------------------------------------------------
** The engine's parts, for a program that builds its own server on them,
** tests them or measures them: vector kernels, text analysis, the
** retrieval engine and its durable storage.
** ---------------------------------------------------------------------- */

/* MARK: - Vectors (vec.c) §7.3-§7.5 -------------------------------------- */

/* Every kernel has a portable scalar reference and, where the CPU has them,
** SIMD paths: "sse2", "avx2" (with FMA), "avx512" on x86-64, "neon" on
** aarch64.  One path serves the whole process, chosen at run time from what
** the CPU reports (never from what the build machine had).  Paths differ
** only in summation order, so float results agree with the scalar path to
** rounding (the bound is stated in tests/test_vec.c); integer-valued data
** gives identical results on every path.  Vectors are float arrays; no
** pointer needs any alignment; n == 0 is valid (pointers may then be NULL).
** No function keeps a pointer to its arguments after it returns. */

/* Choose the path: "scalar", "sse2", "avx2", "avx512" or "neon"; NULL or ""
** means the environment variable RCP_SIMD when set and non-empty, else the
** best path this CPU supports.  Returns 0, or -1 with *err (when err is not
** NULL) set to a static message naming the reason: an unknown name, a path
** not built into this binary, or one this CPU (or OS) does not support.  On
** error the previous path stays.  Kernels called before any rcp_vec_init use
** the best supported path and ignore RCP_SIMD, so programs call
** rcp_vec_init(NULL, &err) at start-up to report a bad RCP_SIMD.  Call it
** before starting threads: the choice is one unsynchronised global. */
int rcp_vec_init(const char *name, const char **err);
/* The name of the path in use; static storage. */
const char *rcp_vec_path(void);
/* 1 when the named path is built in and this CPU supports it, else 0. */
int rcp_vec_path_available(const char *name);

float rcp_vec_dot(const float *a, const float *b, size_t n);
float rcp_vec_l2sq(const float *a, const float *b, size_t n); /* |a-b|^2 */
float rcp_vec_sum(const float *a, size_t n);       /* sum of the elements */
float rcp_vec_norm(const float *a, size_t n);      /* Euclidean length */
/* Scale a to unit length in place; returns the length it had.  A vector of
** length 0 (or non-finite length) is left unchanged. */
float rcp_vec_normalize(float *a, size_t n);
/* dot(a,b) / (|a| |b|); 0 when either vector has length 0. */
float rcp_vec_cosine(const float *a, const float *b, size_t n);

/* A scored row.  The order everywhere (§7.7.1 determinism): higher score
** first, ties by lower row first.  A NaN score ranks as -infinity. */
typedef struct rcp_vec_hit {
    float  score;
    size_t row;
} rcp_vec_hit;

/* Row filters are bitmaps: row r is allowed when bit (r & 7) of
** allow[r >> 3] is set.  A NULL bitmap allows every row. */
#define RCP_VEC_ALLOWED(allow, r) \
    ((allow) == NULL || (((allow)[(r) >> 3] >> ((r) & 7)) & 1))

/* Keeps the best k of any number of offered (score, row) pairs in caller
** memory, no allocation: hits[] has room for k.  Offer with push (or a
** scan), then sort once; the order of offers does not change the result. */
typedef struct rcp_vec_topk {
    rcp_vec_hit *hits;   /* borrowed; a heap until rcp_vec_topk_sort */
    size_t       k, n;   /* capacity, held */
} rcp_vec_topk;
void rcp_vec_topk_init(rcp_vec_topk *t, rcp_vec_hit *hits, size_t k);
void rcp_vec_topk_push(rcp_vec_topk *t, float score, size_t row);
/* Sort hits[0..n) best first; returns n.  No push after this. */
size_t rcp_vec_topk_sort(rcp_vec_topk *t);

/* Offer dot(q, row r) for every allowed r in [begin, end) of the row-major
** matrix m (row r at m + r*d) to t.  Chunked calls (a checkpoint between)
** give exactly what one call over the whole range gives. */
void rcp_vec_scan(rcp_vec_topk *t, const float *q, const float *m, size_t d,
                  size_t begin, size_t end, const unsigned char *allow);
/* One shot: the best min(k, allowed rows) of rows [0, n) by dot product
** into out[0..k), best first; returns how many. */
size_t rcp_vec_search(const float *q, const float *m, size_t n, size_t d,
                      size_t k, const unsigned char *allow, rcp_vec_hit *out);

/* §7.5 MaxSim: the sum over the nq query rows of the maximum, over the nd
** document rows, of sim(query row, document row); rows have dim floats,
** row-major.  Cosine counts a zero-length row as similarity 0.  nq == 0 or
** nd == 0 gives 0.  No allocation (up to ~34 KiB of stack on x86). */
typedef enum rcp_vec_sim { RCP_VEC_DOT = 0, RCP_VEC_COSINE = 1 } rcp_vec_sim;
float rcp_vec_maxsim(const float *qm, size_t nq, const float *dm, size_t nd,
                     size_t dim, rcp_vec_sim sim);

/* §7.4 sparse dot product: the sum of av[i]*bv[j] over ai[i] == bj[j].
** Both index lists must be strictly ascending (the caller validates);
** otherwise the result is unspecified but memory stays in bounds. */
float rcp_vec_sparse_dot(const uint32_t *ai, const float *av, size_t an,
                         const uint32_t *bi, const float *bv, size_t bn);

/* An 8-bit scalar-quantised copy of float rows: row r is kept as d codes
** c in 0..255 with x ~ offset[r] + scale[r] * c (per-row min and max), a
** quarter of the bytes, so a scan reads a quarter of the memory.  Scores
** are approximate; re-score the best candidates with the float rows.
** Dimension at most RCP_VEC_Q8_MAX_DIM (the integer dot cannot overflow). */
#define RCP_VEC_Q8_MAX_DIM 65536u
typedef struct rcp_vec_q8 {
    size_t   n, d, cap;      /* rows held, dimension, rows allocated */
    uint8_t *codes;          /* n*d, row-major; owned */
    float   *scale, *offset; /* n each; owned */
} rcp_vec_q8;
/* An empty store of dimension d (1..RCP_VEC_Q8_MAX_DIM); no allocation. */
void rcp_vec_q8_init(rcp_vec_q8 *s, size_t d);
/* Append v (d floats) as row s->n.  0, or -1 when out of memory or d is
** not in 1..RCP_VEC_Q8_MAX_DIM (store unchanged).  Non-finite components
** are stored as 0. */
int  rcp_vec_q8_add(rcp_vec_q8 *s, const float *v);
/* Room for at least `rows` rows, so adds up to there cannot fail (for a
** caller that must reserve before it changes anything).  0, or -1 as
** rcp_vec_q8_add (store unchanged but perhaps with more room). */
int  rcp_vec_q8_reserve(rcp_vec_q8 *s, size_t rows);
/* Overwrite row r (< s->n) with v. */
void rcp_vec_q8_set(rcp_vec_q8 *s, size_t r, const float *v);
void rcp_vec_q8_free(rcp_vec_q8 *s);   /* back to empty; NULL is a no-op */
/* Offer the approximate dot(q, row r) of every allowed r in [begin, end)
** to t.  0, or -1 when out of memory (t unchanged). */
int  rcp_vec_q8_scan(rcp_vec_topk *t, const rcp_vec_q8 *s, const float *q,
                     size_t begin, size_t end, const unsigned char *allow);
/* Replace each hit's score by the exact dot(q, row) of the float matrix m
** (d columns) and sort hits best first. */
void rcp_vec_rescore(rcp_vec_hit *hits, size_t n, const float *q,
                     const float *m, size_t d);
/* One shot: q8-scan all s->n rows for max(k, cand) candidates (cand == 0:
** RCP_VEC_Q8_CAND(k)), re-score them exactly against m (the float rows the
** store was built from; NULL keeps approximate scores), and put the best
** min(k, allowed rows) in out[0..k), best first.  Returns how many, or -1
** when out of memory. */
#define RCP_VEC_Q8_CAND(k) ((k) * 8 + 64)
long rcp_vec_q8_search(const rcp_vec_q8 *s, const float *q, const float *m,
                       size_t k, size_t cand, const unsigned char *allow,
                       rcp_vec_hit *out);

/* §7.3.1 "f32-base64": the floats as little-endian IEEE-754 binary32 on any
** host, base64 (RFC 4648 §4, standard alphabet, with padding). */
typedef enum rcp_vec_b64_err {
    RCP_VEC_B64_OK = 0,
    RCP_VEC_B64_E_CHAR,    /* a byte outside the alphabet, '=' included,
                              anywhere but the final padding */
    RCP_VEC_B64_E_PADDING, /* length not a multiple of 4, more than two
                              '=', or non-zero bits under the padding */
    RCP_VEC_B64_E_LENGTH   /* well-formed, but decodes to a byte count other
                              than dim * 4 (§7.3.1: MUST reject, -32602) */
} rcp_vec_b64_err;
/* Text length for n floats: 4 * ceil(4n / 3).  No NUL is counted. */
size_t rcp_vec_b64_len(size_t n);
/* Write the encoding of v[0..n) to out (room for rcp_vec_b64_len(n) bytes;
** no NUL written); returns that length. */
size_t rcp_vec_b64_encode(char *out, const float *v, size_t n);
/* Decode text[0..len) into out[0..dim).  Checks in this order: padding
** shape (length, '=' count), then length, then characters and pad bits; the
** first failing class is returned.  out may be partly written on error. */
rcp_vec_b64_err rcp_vec_b64_decode(float *out, size_t dim, const char *text,
                                   size_t len);
/* A static message for e ("invalid base64 character", ...). */
const char *rcp_vec_b64_message(rcp_vec_b64_err e);

/* For benchmarks: run a register-only multiply-add loop on the current
** path and return the floating-point operations it performed (the caller
** times it) -- the core's peak, measured. */
double rcp_vec_flops_probe(size_t iters);

/* MARK: - Text (text.c): one tokenizer for every stage, §7.10 chunking --- */

/* The index, the embedders and the rerankers all read text through
** rcp_tokenize, so a term means the same thing in every stage. */

/* Flags: which normalisations run.  RCP_TOK_DEFAULT is all of them. */
#define RCP_TOK_FOLD    1u  /* case folding: ASCII, Latin-1, Latin Ext-A and
                            ** Ext Additional, Greek, Cyrillic, fullwidth */
#define RCP_TOK_STOP    2u  /* drop English stopwords (positions still count) */
#define RCP_TOK_STEM    4u  /* Porter (1980) stemming of a-z words */
#define RCP_TOK_DEFAULT 7u

enum { RCP_TOKEN_WORD, RCP_TOKEN_NUM, RCP_TOKEN_CJK };

/* One token.  term/word are offsets into the owning rcp_tokens.buf (not
** NUL-terminated): term is what the index keys on (folded, stemmed),
** word the folded surface form before stemming.  CJK runs give character
** bigrams (a lone character: a unigram) with term == word. */
typedef struct rcp_token {
    uint32_t term, tlen;
    uint32_t word, wlen;
    uint32_t start, end;    /* byte span [start, end) in the input text */
    uint32_t pos;           /* ordinal, counting dropped stopwords */
    uint32_t kind;          /* RCP_TOKEN_* */
} rcp_token;

typedef struct rcp_tokens {
    rcp_token *v;
    size_t     n, cap;
    char      *buf;
    size_t     len, bcap;
} rcp_tokens;

void rcp_tokens_init(rcp_tokens *t);
void rcp_tokens_free(rcp_tokens *t);  /* frees the arrays; t reusable */
/* Tokenize text[0..len) (UTF-8; an invalid byte just separates words)
** into out, replacing what it held.  0 ok, -1 out of memory or len >=
** 4 GiB (out is then empty or partial, still safe to free). */
int rcp_tokenize(rcp_tokens *out, const char *text, size_t len,
                 unsigned flags);
/* Porter-stem w[0..n) in place (lower-case ASCII letters only; anything
** else is returned unchanged); returns the new length. */
size_t rcp_stem_porter(char *w, size_t n);
/* 1 when w[0..n) (folded) is on the built-in English stopword list. */
int rcp_stopword(const char *w, size_t n);

/* §7.10 server-side chunking: split text[0..len) into spans of at most
** max_tokens tokens (as rcp_tokenize counts them with flags 0; a CJK
** bigram counts one), ending at a sentence end (. ! ? 。 ！ ？ or a blank
** line) when one falls in the second half of the span, consecutive
** chunks sharing overlap tokens (< max_tokens).  The spans cover the text
** from byte 0 to len, each running to the next one's first token; a text
** without tokens is one span.  *spans (rcp_free) has *n entries.  0 ok,
** -1 out of memory or max_tokens 0. */
typedef struct rcp_span {
    size_t start, end;      /* byte offsets [start, end) */
} rcp_span;
int rcp_text_chunk(const char *text, size_t len, size_t max_tokens,
                   size_t overlap, rcp_span **spans, size_t *n);

/* §15.2 the injection screen (text.c, its notes): 1 when text[0..len)
** holds an instruction-like cue ("ignore previous instructions", in
** English, German, French, Spanish, Russian or Chinese, through case,
** look-alike letters, zero-width characters, spacing and punctuation),
** else 0; -1 out of memory.  Advisory: 0 is no proof a text is safe. */
int rcp_text_injection(const char *text, size_t len);

/* MARK: - Engine (model.c) §3, §7.3-§7.11, §8, §16.3 ---------------------- */

/* --- The model: embedders + index + retrieval pipeline --- */

#define RCP_MODEL_DEFAULT_DIM       384u
#define RCP_MODEL_DEFAULT_MULTI_DIM 128u
#define RCP_MODEL_DEFAULT_VOCAB     (1u << 18) /* embed/sparse id space */
#define RCP_MODEL_MAX_DIM           4096u
#define RCP_MODEL_SNAPSHOT_BYTES    ((size_t)64 << 20)
/* §6.1 scoreFloor of each recall scorer: cosine >= -1, BM25 >= 0. */
#define RCP_MODEL_DENSE_FLOOR       (-1.0)
#define RCP_MODEL_SPARSE_FLOOR      0.0
/* Hybrid's default fusion (the request names none): RRF with the dense
** leg at this weight, the lexical leg at 1.  The hashed embedder's leg is
** the weaker one, and equal weights put the fusion below its lexical leg
** (make eval); 0.15 was chosen on the Cranfield development half only,
** from 0.1..0.5, as the weight whose hybrid is at or above the lexical
** leg in nDCG@10, MAP and R@100 with the largest summed gain. */
#define RCP_MODEL_DEFAULT_W_DENSE   0.15
/* ... and with the corpus-learned (LSA) embedder, whose leg is the
** stronger one on Cranfield, at this one: chosen on the development half
** only, from 0.15..2.5, by the same rule against the better of the two
** legs (see README, Decisions, "The corpus-learned dense embedder").  A
** query's w_dense below 0 (rcp_model_query_init's) means "the default of
** the embedder in use". */
#define RCP_MODEL_LSA_W_DENSE       0.7

/* The rerank cascade's weight of the reranker, per method: hit.score =
** (1 - w) x the recall score + w x the rerank score, each min-max
** normalised over the reranked candidates (rcp_model_search).  A
** reranker that replaces the recall score, or is fused with it by
** equal-weight RRF, falls below its input (make eval).  Both were chosen
** on the Cranfield development half only, as the weight at or above the
** input in nDCG@10, MAP and R@100 with the largest summed gain: 0.2 for
** the cross-encoder (from 0.1..0.5); 0.05 for colbert (from 0.02..0.3:
** from 0.1 up it falls below -- MaxSim over hashed rows adds little to
** what the hybrid already knows). */
#define RCP_MODEL_RERANK_WEIGHT     0.2
#define RCP_MODEL_COLBERT_WEIGHT    0.05

/* §8 the fields a filter may name: rcp_field (the server's, above), the
** same declarations the server advertises. */
#define RCP_MODEL_MAX_FIELDS 1024u

typedef struct rcp_model_opts {
    unsigned    dim;          /* dense dimension (1..4096); default 384 */
    unsigned    multi_dim;    /* embed/multi row dimension; default 128 */
    uint32_t    sparse_vocab; /* embed/sparse vocabulary size; 2^18 */
    unsigned    tok_flags;    /* the index's tokenizer; RCP_TOK_DEFAULT */
    double      k1, b;        /* BM25; 1.2 and 0.75 */
    /* Hybrid recall takes feedback from the top prf_docs hits of a first
    ** BM25 pass: the dense query moves towards their centroid with weight
    ** prf_beta (Rocchio; SMART's 0.75) and the lexical query is expanded
    ** by RM3 (10 terms, original weight 0.5; Anserini's defaults).
    ** Default 10 documents; 0 turns feedback off in both legs.  Modes
    ** "dense" and "sparse" never use feedback. */
    unsigned    prf_docs;
    double      prf_beta;
    /* §7.7.1 snapshots: a search may pin any of the last snapshot_keep
    ** versions (default 1024; 0 = the live index only). */
    unsigned    snapshot_keep;
    /* ... as long as the dead documents kept for them (texts, metas, ids,
    ** postings, dense rows) take at most snapshot_bytes; past it the
    ** oldest are dropped first and the versions that saw them expire
    ** early (default RCP_MODEL_SNAPSHOT_BYTES; 0 = keep none). */
    size_t      snapshot_bytes;
    /* A word2vec/GloVe text file ("word v1 .. vD" per line, optional
    ** "count dim" header) read once by rcp_model_new; NULL = the built-in
    ** hashed n-gram embedder.  The file's dimension replaces dim. */
    const char *vectors_path;
    /* Indexing remembers, per distinct word, its stopword status, term
    ** and dense features (a cache: results never depend on it).  Past
    ** this many bytes it is emptied before the next document; default
    ** 64 MiB, 0 = empty it before every document. */
    size_t      lexicon_bytes;
    /* 1 = no dense index (make tiny): documents get no stored vector and
    ** the lexicon no dense features, so dense and hybrid retrieval, MMR
    ** and hit vectors do not exist (rcp_model_search refuses them, a
    ** docview's vector is NULL); embed, embed/multi and both rerankers,
    ** which embed their inputs when asked, work as ever.  Default 0. */
    int         no_dense_index;
    /* §8 the fields filters may name (at most RCP_MODEL_MAX_FIELDS,
    ** distinct names; copied by rcp_model_new).  Each document's values
    ** of them are read from its meta once, when it is added, as values
    ** of the declared type (rcp_model_value_of), so a filter never parses
    ** meta again.  NULL / 0: none. */
    const rcp_field *fields;
    size_t      nfields;
    /* Issue 18: an outside embedder and reranker (delegate.c: another RCP
    ** server does the work).  ext_embed, when set, makes every dense
    ** vector -- each document's at add (and replay), each query's at
    ** search, rcp_model_embed's -- ext_embed(ext_ud, text, len, kind,
    ** out) into dim floats, L2-normalised by the callee (dim is then the
    ** engine's; vectors_path must be NULL), and ext_identity (borrowed:
    ** it must outlive the model) is the dense identity (§15.7).
    ** ext_rerank, when set, gives every reranker score (rcp_model_rerank
    ** and the search's rerank stage, one call for the stage's batch).  A
    ** nonzero return fails the add, search or call as out of memory does
    ** (-1, nothing changed); the callee keeps the reason. */
    int (*ext_embed)(void *ud, const char *text, size_t len, int kind,
                     float *out);
    int (*ext_rerank)(void *ud, int method, const char *query, size_t qlen,
                      const char *const *texts, const size_t *lens,
                      size_t n, double *scores);
    void       *ext_ud;
    const char *ext_identity;
    /* The dense embedder learned from the corpus (model.c, "Corpus-
    ** learned dense embedder"): 1 = LSA, a truncated SVD of the log-
    ** entropy weighted term-document matrix, trained by rcp_model_train
    ** once the corpus has lsa_min_docs live documents (0:
    ** RCP_MODEL_LSA_MIN_DOCS), again once it has grown RCP_MODEL_LSA_
    ** GROWTH-fold; until then (and with 0) the hashed n-gram embedder.  Ignored with vectors_path and
    ** with ext_embed. */
    int         lsa;
    size_t      lsa_min_docs;
} rcp_model_opts;

#define RCP_MODEL_LSA_MIN_DOCS 1000u
#define RCP_MODEL_LSA_GROWTH   2u

void rcp_model_opts_init(rcp_model_opts *o);   /* the defaults above */

/* A new, empty model; opts NULL = defaults.  NULL on failure with a
** message in err[0..errlen) (bad option, unreadable or malformed vectors
** file with its line number, out of memory).  Owned by the caller. */
rcp_model *rcp_model_new(const rcp_model_opts *opts, char *err,
                         size_t errlen);
void rcp_model_free(rcp_model *m);             /* NULL is a no-op */

enum { RCP_EMBED_DENSE, RCP_EMBED_SPARSE, RCP_EMBED_MULTI };
enum { RCP_KIND_QUERY, RCP_KIND_DOCUMENT };
/* §15.7 identity of an embedder (RCP_EMBED_*): "rcp-hash-ngram-v4-384",
** "rcp-lsa-v1-<dim>-<fingerprint of the training corpus>" once trained,
** or "rcp-static-<hash of the vectors file>-<dim>".  Borrowed; a
** training changes it, so read it again after a change. */
const char *rcp_model_identity(const rcp_model *m, int which);
size_t rcp_model_dim(const rcp_model *m);      /* dense dimension */
/* The corpus-learned embedder (opts.lsa) learns only when asked: an add
** never retrains (so a session's embed.identity holds, §13.2), it folds
** the new text into the model in use.  rcp_model_train trains when the
** schedule says so -- the corpus has lsa_min_docs live documents and,
** after a training, RCP_MODEL_LSA_GROWTH times those it had then --
** (force: whenever it has two), re-embeds every stored text, and drops
** the pinned versions (they saw other vectors): 1 trained, 0 nothing to
** do, -1 out of memory (the model as it was).  rcp serve calls it once,
** after the replay and the --corpus load.  rcp_model_generation: the
** trainings behind the embedder in use (0: hashed). */
int rcp_model_train(rcp_model *m, int force);
unsigned rcp_model_generation(const rcp_model *m);
/* 1 unless the model was opened with no_dense_index. */
int rcp_model_has_dense_index(const rcp_model *m);
/* The mode a retrieve that names none runs (§6.1 defaultMode):
** RCP_MODE_HYBRID when the dense embedder is the operator's model
** (opts.ext_embed, or word vectors from opts.vectors_path),
** RCP_MODE_SPARSE (BM25, then RM3) with the built-in embedders and
** without a dense index: their hybrid is not at or above its lexical leg
** on every collection measured (README, Decisions). */
int rcp_model_default_mode(const rcp_model *m);
/* The declared fields (opts.fields as copied; borrowed), *n of them. */
const rcp_field *rcp_model_fields(const rcp_model *m, size_t *n);

/* §7.3 dense embedding of text[0..len) into out[0..dim): L2-normalised
** (all zeros when the text has no usable token), a fixed function of the
** text and of the identity (the learned embedder's: of the corpus it was
** trained on, rcp_model_train).  kind is RCP_KIND_*; both give the same
** vector (the model is symmetric).  0 ok, -1 out of memory. */
int rcp_model_embed(const rcp_model *m, const char *text, size_t len,
                    int kind, float *out);
/* §7.4 sparse embedding ("rcp-hash-sparse-v3-<vocabulary>"): each stem
** hashed to an id < rcp_model_vocab(m), weight = fixed token weight x (1 +
** ln tf); no learned expansion.  *idx (strictly ascending) and *val, *n
** entries, both owned by the caller (rcp_free them; non-NULL on success,
** even when *n == 0).  0 ok, -1 out of memory. */
int rcp_model_embed_sparse(const rcp_model *m, const char *text, size_t len,
                           int kind, uint32_t **idx, float **val, size_t *n);
uint32_t rcp_model_vocab(const rcp_model *m);  /* advertise as vocabulary */
/* §7.5 multi-vector embedding ("rcp-hash-multi-v2-<dim>"): one row per
** content token (stopwords skipped), each the token's hashed features plus
** half of each neighbour's, L2-normalised; compare by cosine.  *rows is
** nrows x rcp_model_multi_dim(m) floats, row-major, owned by the caller
** (rcp_free).  A text without content tokens gives 0 rows.  0 / -1 OOM. */
int rcp_model_embed_multi(const rcp_model *m, const char *text, size_t len,
                          int kind, float **rows, size_t *nrows);
size_t rcp_model_multi_dim(const rcp_model *m);

/* §7.10 server-side chunking stores each chunk of a document as a
** document of its own; this is its link to the document it was cut from.
** The link is the engine's own attribute, never a part of meta, so
** nothing a client writes can forge it (§15.2: a client's meta is data,
** never control). */
typedef struct rcp_model_chunkref {
    const char *of;         /* the id of its document; NULL: not a chunk */
    size_t      oflen;
    uint32_t    index;      /* its place among that document's chunks */
    uint64_t    start, end; /* its bytes [start, end) in that document */
} rcp_model_chunkref;

/* §7.10 upsert: id[0..idlen) replaces any live document with that id.
** text and meta (serialised JSON object or NULL) are copied.  Re-adding
** the same id, text and meta changes nothing (not even the version).
** 0 ok, -1 out of memory or a NULL pointer with a length (the model is
** unchanged). */
int rcp_model_add(rcp_model *m, const char *id, size_t idlen,
                  const char *text, size_t len, const char *meta,
                  size_t metalen);
/* rcp_model_add of a chunk: ck (copied; NULL = a whole document, which
** is rcp_model_add) must have end - start == len.  A re-add is a no-op
** only when ck is the same too.  0 ok, -1 out of memory or a span that
** does not match len (the model is unchanged). */
int rcp_model_add_chunk(rcp_model *m, const char *id, size_t idlen,
                        const char *text, size_t len, const char *meta,
                        size_t metalen, const rcp_model_chunkref *ck);
/* §15.2, §15.3 a document's provenance: the trust level of the source
** it came from and the operator's name for that source ("corpus:FILE",
** "clients", ...).  The engine keeps it per document, as data: it ranks
** nothing by it. */
enum { RCP_TRUST_UNTRUSTED, RCP_TRUST_COMMUNITY, RCP_TRUST_TRUSTED };
typedef struct rcp_model_origin {
    int         trust;          /* RCP_TRUST_* */
    const char *source;         /* sourcelen bytes (NULL with 0: none) */
    size_t      sourcelen;
} rcp_model_origin;
#define RCP_MODEL_MAX_ORIGINS 4096u   /* distinct (trust, source) pairs */
#define RCP_MAX_SOURCE_BYTES  256u
/* rcp_model_add_chunk with the document's origin (NULL: untrusted, no
** source).  The same id, text, meta and link from another origin is a
** change (a new version).  -1 also for a trust level out of range, a
** source over RCP_MAX_SOURCE_BYTES or one origin too many. */
int rcp_model_add_from(rcp_model *m, const char *id, size_t idlen,
                       const char *text, size_t len, const char *meta,
                       size_t metalen, const rcp_model_chunkref *ck,
                       const rcp_model_origin *origin);
/* §7.11: 1 when a live document was removed, 0 when absent, -1 when id
** is NULL with idlen > 0. */
int rcp_model_delete(rcp_model *m, const char *id, size_t idlen);
/* Undo every change made after version v, so the model serves exactly
** what it served at v and goes on from v as if those changes never were
** (store.c: a write that did not reach the disk must not stay visible,
** §13.1).  Documents added since go; those replaced or deleted since
** come back.  Versions after v are forgotten, and a retained snapshot
** that lost a document since v is given up (has_version says 0).
** 0 ok (also when v is the current version); -1 when v is in the future
** or more than snapshot_keep changes back, when a document to bring back
** was dropped for snapshot_bytes, or memory is lacking -- the model is
** then unchanged. */
int rcp_model_rollback(rcp_model *m, uint64_t v);
size_t   rcp_model_count(const rcp_model *m);    /* live documents */
/* Bumped by every add/delete that changed something (for indexVersion). */
uint64_t rcp_model_version(const rcp_model *m);
/* The live document numbered docno (hits name documents this way), or
** -1.  Everything in the view is borrowed until the next add/delete,
** and so are docnos: an add or delete may renumber the documents (dead
** ones are reclaimed, design note 4 in model.c). */
typedef struct rcp_model_docview {
    const char  *id, *text, *meta;   /* meta NULL when none was given */
    size_t       idlen, textlen, metalen;
    const float *vector;             /* its dense embedding (dim floats) */
    rcp_model_chunkref chunk;        /* chunk.of NULL: a whole document */
    rcp_model_origin   origin;       /* §15.2 its provenance; source
                                     ** lives as long as the model */
} rcp_model_docview;
int  rcp_model_doc(const rcp_model *m, uint32_t docno, rcp_model_docview *out);
long rcp_model_find(const rcp_model *m, const char *id, size_t idlen);
/* §7.7.1: 1 when version v can still be searched (v <= the current
** version, at most snapshot_keep changes old, and no document it saw was
** dropped for snapshot_bytes), else 0. */
int  rcp_model_has_version(const rcp_model *m, uint64_t v);
/* The document numbered docno as it was at version v (a hit of a search
** pinned to v), or -1 when it was not visible then or v has expired.
** Borrowed until the next add/delete. */
int  rcp_model_doc_at(const rcp_model *m, uint32_t docno, uint64_t v,
                      rcp_model_docview *out);
/* §7.10 the chunks of document of[0..oflen) visible at version v (the
** live index at rcp_model_version(m)), each once, in no particular order:
** fn(ud, docno, view) for each, until fn returns nonzero, which is then
** returned.  fn must not change the model.  The walk visits only
** documents that exist.  0 when done (fn never called: no chunks),
** RCP_MODEL_GONE when v can no longer be searched. */
typedef int (*rcp_model_chunk_fn)(void *ud, uint32_t docno,
                                  const rcp_model_docview *d);
int  rcp_model_chunks(const rcp_model *m, const char *of, size_t oflen,
                      uint64_t v, rcp_model_chunk_fn fn, void *ud);
/* What the model holds, for tests and benchmarks (memory stays
** proportional to live content under churn, design note 4). */
typedef struct rcp_model_stats {
    size_t   live;          /* live documents */
    size_t   retained;      /* dead documents kept for snapshots */
    size_t   slots;         /* docnos in use (live, retained, not yet
                            ** reclaimed) */
    size_t   rows;          /* dense rows allocated */
    size_t   retained_bytes;/* what the retained ones take */
    size_t   terms;         /* index terms */
    uint64_t oldest;        /* the oldest version still searchable */
} rcp_model_stats;
void rcp_model_stat(const rcp_model *m, rcp_model_stats *out);
/* The engine's integrity check (SQLite's PRAGMA integrity_check): every
** invariant of model.c's design notes recomputed from scratch -- posting
** lists sorted and naming existing documents, document frequencies,
** counts and lengths those of the live documents, the id and chunk
** tables, the retained ring and its byte count, each searchable
** version's statistics, the lexicon, each document's §8 values (what
** its meta reads as); with RCP_MODEL_CHECK_TEXTS also every stored
** text's postings, length and dense row exactly what rcp_tokenize and
** rcp_model_embed give it (design note 14: the fast paths agree with
** the plain ones).  0 when all hold; else -1 and the
** first violation in err[0..errlen) ("out of memory" when the check
** itself could not allocate).  It reads everything the model holds
** (and with the flag tokenizes and embeds every text): for tests. */
#define RCP_MODEL_CHECK_TEXTS 1u
int  rcp_model_check(const rcp_model *m, unsigned flags, char *err,
                     size_t errlen);

/* --- §16.3 fusion of ranked lists (usable on its own) --- */

enum { RCP_FUSE_RRF, RCP_FUSE_WEIGHTED, RCP_FUSE_CONVEX };
#define RCP_FUSE_MAX_LISTS 16  /* a federation fuses one list per engine */
typedef struct rcp_fuse_item {
    const char *id;     /* the stringified id, borrowed */
    size_t      idlen;
    double      score;
} rcp_fuse_item;
typedef struct rcp_fuse_list {
    const rcp_fuse_item *items;  /* best first (RRF uses the positions) */
    size_t n;
    double weight;      /* RRF/weighted: the list's weight; convex: alpha
                        ** for the dense list, 1 - alpha for the lexical */
    double floor;       /* convex: the list's §6.1 scoreFloor */
} rcp_fuse_list;
typedef struct rcp_fused {
    const char *id;     /* borrowed from the input items */
    size_t      idlen;
    double      score;  /* fused score */
    double      weight; /* summed weight of the lists that had the id */
    int32_t     pos[RCP_FUSE_MAX_LISTS]; /* 0-based position per list, -1 */
} rcp_fused;
/* Fuse nlists (<= RCP_FUSE_MAX_LISTS) lists by RCP_FUSE_RRF (weight /
** (rrf_k + rank)), _WEIGHTED (min-max per list; a list whose scores are all
** equal normalises to 1) or _CONVEX (floor-anchored: (s - floor) / (max -
** floor); max == floor gives 0).  An id repeated in one list counts once,
** at its first position.  *out (rcp_free it) is sorted by the §16.3 total
** order: score desc, summed weight desc, byte-wise smaller id.  Returns
** the count, or -1 (out of memory, too many lists). */
long rcp_fuse(int method, const rcp_fuse_list *lists, size_t nlists,
              double rrf_k, rcp_fused **out);

/* --- §8 filters over the declared fields --- */

/* A value of a declared field's type. */
typedef struct rcp_model_value {
    double      num;    /* int, float */
    int64_t     ms;     /* date: epoch milliseconds (UTC); bool: 1 or 0 */
    const char *s;      /* keyword, text: the bytes (borrowed) */
    size_t      len;
} rcp_model_value;
/* The §8 table, one definition for filters and documents: v as a value
** of type t -- keyword and text a string, int and float any number (JSON
** has one number type), bool true or false, date an RFC 3339 date-time
** (any offset, fractions) or full-date (midnight UTC) string, or an
** integer of epoch milliseconds (§4.6).  0 and *out (out->s borrows v)
** when v fits, -1 when it does not. */
int rcp_model_value_of(rcp_field_type t, const rcp_json *v,
                       rcp_model_value *out);

/* A filter tree (§8): and / or over nkids >= 1 subtrees, not over one,
** and leaves {field, op, values}.  A leaf names a field by its index in
** opts.fields and carries values of the field's type: one for eq, ne,
** gt, gte, lt, lte and contains; the list (any order, any length) for in
** and nin; for exists one bool (ms 1: present, 0: absent).  What matches
** (README, Decisions, "Filters"): an array-valued field matches when
** any element does (contains then compares elements); ne and nin are
** the negations of eq and in, so they hold where the field is absent,
** null or of another type; contains on a text field is a case-sensitive
** byte substring test, and on any other field matches nothing; strings
** compare byte-wise, dates as instants; the ordered operators apply to
** int, float and date fields only. */
enum { RCP_FILTER_LEAF, RCP_FILTER_AND, RCP_FILTER_OR, RCP_FILTER_NOT };
enum { RCP_OP_EQ, RCP_OP_NE, RCP_OP_GT, RCP_OP_GTE, RCP_OP_LT, RCP_OP_LTE,
       RCP_OP_IN, RCP_OP_NIN, RCP_OP_CONTAINS, RCP_OP_EXISTS };
#define RCP_MODEL_FILTER_DEPTH 256u   /* nesting bound of a tree */
typedef struct rcp_model_filter {
    int          kind;                   /* RCP_FILTER_* */
    const struct rcp_model_filter *kids; /* and, or, not */
    size_t       nkids;
    size_t       field;                  /* leaf: index in opts.fields */
    int          op;                     /* leaf: RCP_OP_* */
    const rcp_model_value *values;       /* leaf */
    size_t       nvalues;
} rcp_model_filter;

/* --- §7.7 retrieval --- */

enum { RCP_MODE_DENSE, RCP_MODE_SPARSE, RCP_MODE_HYBRID };
enum { RCP_RERANK_NONE, RCP_RERANK_CROSS, RCP_RERANK_COLBERT };

#define RCP_HIT_DENSE  1u
#define RCP_HIT_SPARSE 2u
#define RCP_HIT_FUSED  4u
#define RCP_HIT_RERANK 8u
typedef struct rcp_model_hit {
    uint32_t doc;           /* docno: see rcp_model_doc */
    double   score;         /* the last stage's score */
    double   dense, sparse, fused, rerank; /* per stage, valid per `has` */
    unsigned has;           /* RCP_HIT_* bits */
    double   confidence;    /* [0,1], see rcp_model_confidence */
} rcp_model_hit;

typedef struct rcp_model_query {
    const char *text;          /* the query, text[0..len) */
    size_t      len;
    size_t      k;             /* hits wanted (the caller clamps, §7.7) */
    size_t      candidate_k;   /* recall depth per list, raised to k;
                               ** 0 = max(k, 100) */
    size_t      rerank_top;    /* rerank the best N (0 = all candidates) */
    int         mode;          /* RCP_MODE_*; default hybrid (sparse:
                               ** BM25, then its RM3 second pass) */
    int         fusion;        /* RCP_FUSE_*; default RRF */
    double      w_dense, w_sparse;  /* rrf / weighted weights; -1 (the
                                    ** embedder's default: RCP_MODEL_
                                    ** DEFAULT_W_DENSE or _LSA_W_DENSE), 1 */
    double      rrf_k;         /* 60 */
    double      alpha;         /* convex: weight of dense; 0.5 */
    int         rerank;        /* RCP_RERANK_*; default none */
    double      rerank_weight; /* the reranker's share of hit.score, in
                               ** [0, 1] (1: the reranker's order alone);
                               ** < 0 (default): the method's, above */
    double      mmr_lambda;    /* < 0: no MMR; else in [0, 1] */
    int         no_confidence; /* 1: leave hit.confidence 0 (saves work) */
    int         no_feedback;   /* 1: no second pass (RM3, Rocchio): sparse
                               ** is plain BM25, hybrid fuses plain BM25
                               ** and plain dense recall */
    /* §7.7.1: pinned = 1 searches the index as it was at `version` (see
    ** rcp_model_has_version); hits then come from rcp_model_doc_at. */
    int         pinned;
    uint64_t    version;
    /* Optional §8 filter (rcp_model_filter, borrowed for the call):
    ** compiled once into a bitmap over the documents searched, which
    ** every recall stage honours.  NULL: none. */
    const rcp_model_filter *filter;
    /* Optional checkpoint (§9 progress, §7.14 cancellation, deadlines):
    ** called between stages and every 65536 rows of a scan, with progress
    ** in [0, 1) rising, the stage ("recall", "rerank", "diversify") and,
    ** once recall is done, the candidates so far (best first, borrowed for
    ** the call; NULL before).  A nonzero return stops the search, and
    ** rcp_model_search returns that value (so use one other than -1,
    ** RCP_MODEL_GONE and RCP_MODEL_INVALID). */
    int       (*checkpoint)(void *ud, double progress, const char *stage,
                            const rcp_model_hit *partial, size_t npartial);
    void       *ud;            /* passed to checkpoint */
    /* 1: dense recall scores every row with the float vectors (the
    ** reference).  0 (default): it scans the 8-bit copy and re-scores the
    ** best candidates exactly -- every score returned is exact, and it
    ** finds >= 99% of the reference's top 10 (tests/test_model.c). */
    int         exact;
} rcp_model_query;
void rcp_model_query_init(rcp_model_query *q);  /* the defaults above */


/* Run recall -> fuse -> rerank -> MMR for q; hits[] has room for q->k.
** *nhits <= q->k, best first; ties broken by the smaller id.  hit.score is
** the last stage's: BM25 (sparse), cosine (dense), the fused score
** (hybrid), or with a reranker the cascade's interpolation of the two
** (rerank_weight; the result is in [0, 1]; hit.rerank keeps the
** reranker's own score).  With MMR the order is MMR's selection order
** and score stays the relevance score, so scores need not fall
** monotonically.  With rerank_top < k only the reranked
** hits are returned (§3.3 funnel: the caller clamps).  0 ok, -1 out of
** memory (or m, q, nhits NULL, hits NULL with k > 0, or, with no dense
** index, a dense or hybrid mode or MMR), RCP_MODEL_GONE when q pins a
** version no longer kept (§7.7.1: -32010), RCP_MODEL_INVALID when q is
** out of its bounds above (text NULL with len > 0, an unknown mode,
** fusion or rerank, mmr_lambda or rerank_weight above 1 or NaN, a filter
** that breaks a rule of rcp_model_filter or nests deeper than
** RCP_MODEL_FILTER_DEPTH),
** or the nonzero value q->checkpoint returned. */
#define RCP_MODEL_GONE    (-2)
#define RCP_MODEL_INVALID (-3)
int rcp_model_search(const rcp_model *m, const rcp_model_query *q,
                     rcp_model_hit *hits, size_t *nhits);

/* §7.6 rerank: scores[i] for texts[i] (lens[i] bytes), higher is better,
** for method RCP_RERANK_CROSS (the joint lexical scorer: exact and near
** matches with BM25 saturation plus term-pair proximity; >= 0, unbounded)
** or RCP_RERANK_COLBERT (MaxSim of the multi-vector rows, cosine: in
** [-nq, nq] for nq query rows).  0 ok, -1 out of memory or bad method. */
int rcp_model_rerank(const rcp_model *m, int method, const char *query,
                     size_t qlen, const char *const *texts,
                     const size_t *lens, size_t n, double *scores);
/* §7.7.2 confidence in [0,1], the same definition in every call and
** independent of the corpus: 0.7 coverage + 0.3 adjacency, where
** coverage is the share of the query's distinct content terms (each
** weighted by the fixed token weight) found in text -- exactly (1) or as a
** near spelling (trigram Dice >= 0.6, counted at its Dice) -- and
** adjacency the weighted share of consecutive query term pairs that occur
** in order within two tokens (a one-term query: adjacency = coverage).
** 1 means every query word appears, in order, side by side. */
int rcp_model_confidence(const rcp_model *m, const char *query, size_t qlen,
                         const char *text, size_t len, double *out);

/* --- §7.8 the vocabulary, for query/transform --- */

/* The live document frequency of the term word[0..len) (its first token,
** analysed as the index analyses text): >= 0 (0: the index has no such
** term), -1 when it is no term at all (a stopword), -2 out of memory. */
long rcp_model_df(const rcp_model *m, const char *word, size_t len);
/* Spelling correction: for a word of 4+ letters the index has no term
** for, the surface word of the live term nearest it (trigram Dice >= 3/5;
** ties: higher df, then the smaller term), NUL-terminated in out[0..cap).
** Its length; 0 when the word is known or nothing is near; -1 oom. */
long rcp_model_correct(const rcp_model *m, const char *word, size_t len,
                       char *out, size_t cap);
/* Pseudo-relevance terms: RM3's relevance model over the query's top
** opts.prf_docs BM25 documents, best first, leaving out the query's own
** terms; up to cap of them in out, *n how many.  0, or -1 out of memory. */
typedef struct rcp_model_term {
    char     word[64];          /* the surface (folded) word */
    double   weight;            /* P(t|R) */
    uint32_t df;                /* live documents holding it */
} rcp_model_term;
int rcp_model_expand(const rcp_model *m, const char *query, size_t qlen,
                     rcp_model_term *out, size_t cap, size_t *n);

/* MARK: - Storage (store.c) §7.7.1, §7.10, §7.11, §13.1 ------------------ */

/* A durable home for a model's documents: a directory holding an
** append-only, checksummed log (DIR/rcp.log) and a lock file (DIR/lock).
** The file format and the crash cases are described at the top of
** store.c.  One process, one thread per store; the store borrows the
** model, and once a store is open every change to that model MUST go
** through rcp_store_add / rcp_store_delete (a change made behind the
** store's back is detected and makes the store refuse further writes).
** (rcp_store is declared with the server, above.) */

/* Open (creating if needed) the store in dir and replay its log into m,
** which must be empty.  dir is created (one level, not its parents) and
** locked: a second open of the same dir, by this or any other process,
** fails with "DIR: in use by process PID".  A bad last commit -- torn by
** a crash mid-append (never acknowledged) or damaged after it was
** acknowledged; the two look alike -- is cut off, but never silently:
** its bytes are first copied to DIR/rcp.log.torn (.1, .2, ... if that
** exists) and rcp_store_stat's warning says what was dropped (byte
** offset, bytes, commits, the documents they touched) -- show it to the
** operator.  Damage followed by valid commits, a bad header or an unknown
** format version is an error, never skipped.  NULL on failure with a
** message in err[0..errlen); m may then hold part of the log (free it).
** The store is owned by the caller; close it with rcp_store_close. */
rcp_store *rcp_store_open(const char *dir, rcp_model *m, char *err,
                          size_t errlen);
/* The same with flags.  RCP_STORE_SALVAGE: damage followed by valid
** commits is treated like a bad last commit -- everything from the
** damage on is set aside and described (those later commits cannot be
** replayed without the damaged one), the good prefix opens.  For an
** operator who chose to, never by default. */
#define RCP_STORE_SALVAGE 1u
rcp_store *rcp_store_open_flags(const char *dir, rcp_model *m,
                                unsigned flags, char *err, size_t errlen);

/* What a log records about the server that writes it, so a store is
** never read with another schema or model (§8, §15.7): the §8 field
** declarations (has_schema 0: none recorded -- a new store, or one
** written before format 3) and the dense embedder's identity (§6
** embed.identity with its dimension; NULL: none recorded). */
#define RCP_STORE_MAX_FIELDS     1024u
#define RCP_STORE_MAX_FIELD_NAME 256u
#define RCP_STORE_MAX_IDENTITY   1024u
typedef struct rcp_store_config {
    int              has_schema;
    const rcp_field *fields;
    size_t           nfields;
    const char      *embedder;
} rcp_store_config;
/* What the log in dir records, read without opening the store (to build
** the model it will be opened with): a config in one allocation (free
** it with rcp_free), all zero when dir holds no log yet.  NULL with a
** message in err on a read error or a damaged first commit. */
rcp_store_config *rcp_store_peek(const char *dir, char *err, size_t errlen);
/* rcp_store_open_flags for a server whose config is want (NULL: no
** check).  The store is refused, with a message naming both, when it
** records another embedder, or a field want lacks or declares with
** another type; fields want adds are recorded (their values are read
** from the documents' meta as they are replayed), and so is what the
** log did not record yet.  Recording rewrites the log (a compaction), so
** the config is always in its first commit, where rcp_store_peek finds
** it. */
rcp_store *rcp_store_open_config(const char *dir, rcp_model *m,
                                 unsigned flags, const rcp_store_config *want,
                                 char *err, size_t errlen);
/* The config the open store runs under (borrowed until close). */
const rcp_store_config *rcp_store_get_config(const rcp_store *st);

/* Commit what is pending (best effort; call rcp_store_commit first to
** learn whether that worked), release the lock, free st.  The model is
** not freed.  NULL is a no-op. */
void rcp_store_close(rcp_store *st);

/* §7.10 upsert into the model and, when the model changed, append the
** change to the pending commit and bump the store's version.  An
** identical re-add (same id, text, meta) changes nothing: no record, no
** version (§7.10 "observationally identical").  meta is a serialised
** JSON object (NULL = none); all bytes are copied.  0 ok; -1 with
** rcp_store_error(st) set: out of memory (nothing changed), a document
** over 1 GiB, or the store has failed (see rcp_store_commit).  When the
** pending commit passes 32 MiB it is committed on the spot, which
** bounds memory during bulk loads. */
int rcp_store_add(rcp_store *st, const char *id, size_t idlen,
                  const char *text, size_t len, const char *meta,
                  size_t metalen);

/* rcp_store_add of a chunk (rcp_model_add_chunk): ck is persisted with
** it; NULL = a whole document, which is rcp_store_add. */
int rcp_store_add_chunk(rcp_store *st, const char *id, size_t idlen,
                        const char *text, size_t len, const char *meta,
                        size_t metalen, const rcp_model_chunkref *ck);
/* ... with its §15.2 origin (rcp_model_add_from), persisted with it. */
int rcp_store_add_from(rcp_store *st, const char *id, size_t idlen,
                       const char *text, size_t len, const char *meta,
                       size_t metalen, const rcp_model_chunkref *ck,
                       const rcp_model_origin *origin);

/* §7.11 delete id from the model; *removed (may be NULL) is 1 when a live
** document went, 0 when it was absent (no record, no version bump).
** 0 ok, -1 as for rcp_store_add. */
int rcp_store_delete(rcp_store *st, const char *id, size_t idlen,
                     int *removed);

/* Write what is pending as one commit and fsync it before returning, so a
** write is durable once this returns 0 (call it before writing the
** response of index/add and index/delete; with nothing pending it does
** nothing and costs nothing).  May compact the log afterwards (a failed
** compaction is not an error: the commit is safe; see rcp_store_stat).
** -1 when writing or fsync failed: the pending changes are then undone
** in the model too (rcp_model_rollback), so nothing unacknowledged stays
** visible, and the log is cut back to its last commit.  A write() that
** found no room (ENOSPC, EDQUOT, EFBIG) leaves the store working: later
** writes may succeed once there is room.  Any other failure -- a failed
** fsync above all, after which the kernel may have dropped the data and
** a retry can falsely succeed -- makes the store refuse every later write
** (add, delete, commit return -1) until it is closed and reopened.  On
** disk stays every commit acknowledged before (after a failed fsync,
** possibly the failed one too, all of it or none of it). */
int rcp_store_commit(rcp_store *st);

/* Commit, then rewrite the log with only the live documents and the
** version (write a new file, fsync, rename over the old, fsync the
** directory).  Commits do this by themselves when the log is over 1 MiB
** and more than twice the live data; tests and tools may force it.
** 0 ok, -1 with rcp_store_error(st). */
int rcp_store_compact(rcp_store *st);

/* §7.7.1 the store's index version: bumped exactly when a write changes
** the model, persisted in the log, restored by rcp_store_open and kept by
** compaction, so a restarted server reports the same indexVersion.  Use
** it instead of rcp_model_version while a store is open. */
uint64_t rcp_store_version(const rcp_store *st);

/* The last error message ("" when none).  Borrowed until the next call. */
const char *rcp_store_error(const rcp_store *st);

typedef struct rcp_store_info {
    uint64_t version;       /* rcp_store_version */
    uint32_t format;        /* of the log (after any upgrade) */
    size_t   idem_keys;     /* §7.10 idempotency keys remembered */
    uint64_t log_bytes;     /* committed bytes in DIR/rcp.log */
    uint64_t live_bytes;    /* what a compacted log would take (estimate) */
    uint64_t pending_bytes; /* written by the next commit */
    uint64_t compactions;   /* done since open */
    int      failed;        /* 1: refuses writes until reopened */
    const char *warning;    /* what open dropped or set aside, or the last
                               failed compaction, or ""; borrowed */
} rcp_store_info;
void rcp_store_stat(const rcp_store *st, rcp_store_info *out);

/* Side files: state kept beside the log, not in it (the §7.17 memories):
** DIR/name replaced whole and atomically by data[0..n) (name.new, fsync,
** rename, fsync the directory), at most 64 MiB; a name is a lower-case
** letter, then a-z, 0-9, '-', '.' (never the log's, the lock's or one
** ending ".new").  0, or -1 with rcp_store_error(st).  get: *data
** (rcp_free; NUL-terminated) and *n: 0, 1 when there is no such file,
** -1 with rcp_store_error(st). */
int rcp_store_put_file(rcp_store *st, const char *name, const char *data,
                       size_t n);
int rcp_store_get_file(rcp_store *st, const char *name, char **data,
                       size_t *n);

/* Test hook (like rcp_set_allocator, process-wide): fn(ud, op) is called
** before every write, fsync and truncate a store makes, op being "write",
** "fsync" or "truncate"; a non-zero return makes that call fail with that
** value as errno.  NULL removes the hook. */
typedef int (*rcp_store_fault_fn)(void *ud, const char *op);
void rcp_store_set_fault(rcp_store_fault_fn fn, void *ud);

/* Bulk-load a JSON Lines corpus: one {"id"?: string, "text": string,
** "meta"?: object} per line (§7.10 document shape; null = absent, other
** members ignored, blank lines skipped).  The whole file is validated
** first: a bad line fails with "PATH:LINE: reason" and loads nothing.
** Then every document is upserted -- through st when st is non-NULL
** (durable: one commit at the end), else straight into m (in memory
** only).  m may be NULL when st is given; otherwise it must be st's
** model.  A line without an id gets "<file name>:<line>", so loading
** the same file again replaces instead of duplicating.  progress_fd
** (-1 = none; 2, stderr, in the server) gets one line rewritten with \r
** as the load advances, then a newline (a file descriptor, not a FILE *,
** keeps <stdio.h> out of this header).  Returns the number of documents,
** or -1 with a message in err[0..errlen); after an error in the loading
** pass (out of memory, storage) the documents before the failing line
** stay loaded and the message says how many. */
long rcp_store_load_jsonl(rcp_store *st, rcp_model *m, const char *path,
                          int progress_fd, char *err, size_t errlen);
/* rcp_store_load_jsonl with options: every document gets origin (§15.2:
** the operator's trust level and name for this source; NULL: untrusted,
** no source); a meta value of a declared field (fields[0..nfields)) that
** does not fit it (rcp_field_accepts) fails the validation pass as
** "PATH:LINE: meta.FIELD must be TYPE". */
typedef struct rcp_store_load_opts {
    const rcp_model_origin *origin;
    const rcp_field        *fields;
    size_t                  nfields;
    int                     chunk;   /* 1: as server-side chunks (§7.10,
                                     ** rcp_store_add_chunked) */
    int                     progress_fd;   /* as above; -1 none */
    /* Optional look-ahead (issue 18): before each run of up to ahead_n
    ** documents is added (not with chunk), ahead(ahead_ud, texts, lens, k)
    ** sees their texts, in file order -- a delegated embedder embeds them
    ** in one request (delegate.c).  NULL: none. */
    void (*ahead)(void *ud, const char *const *texts, const size_t *lens,
                  size_t n);
    void                   *ahead_ud;
    size_t                  ahead_n;
} rcp_store_load_opts;

/* §7.10 server-side chunking, one definition for index/add chunk:true
** and --corpus --chunk: the text cut by rcp_text_chunk into chunks of
** RCP_CHUNK_TOKENS tokens overlapping by RCP_CHUNK_OVERLAP, upserted as
** documents "<id>#0".."<id>#n-1" linked to id (rcp_model_chunkref), each
** with the document's meta and origin, then the document's stale chunks
** and any whole-document copy removed; *count += n.  Through st when
** non-NULL (m is then st's), else into m.  0, or -1 (rcp_store_error(st)
** when st; out of memory otherwise). */
#define RCP_CHUNK_TOKENS  128
#define RCP_CHUNK_OVERLAP 16
int rcp_store_add_chunked(rcp_store *st, rcp_model *m, const char *id,
                          size_t idlen, const char *text, size_t len,
                          const char *meta, size_t metalen,
                          const rcp_model_origin *origin, size_t *count);
/* Delete the live chunks of document id numbered from on (st or m as
** above); *any |= 1 when one went.  0 or -1. */
int rcp_store_drop_chunks(rcp_store *st, rcp_model *m, const char *id,
                          size_t idlen, uint32_t from, int *any);
long rcp_store_load(rcp_store *st, rcp_model *m, const char *path,
                    const rcp_store_load_opts *o, char *err, size_t errlen);

/* §7.16 feedback, kept durably beside the log (DIR/feedback.log; store.c
** says why not in it): rcp_store_feedback appends line[0..n) (no newline
** in it) as one line and fsyncs it; 0, or -1 with rcp_store_error.
** rcp_store_feedback_each calls fn for every whole line in order (a torn
** last one, never acknowledged, is cut off); it stops at and returns the
** first nonzero fn returns, else 0, or -1 when the file cannot be read. */
typedef int (*rcp_store_feedback_fn)(void *ud, const char *line, size_t n);
int rcp_store_feedback(rcp_store *st, const char *line, size_t n);
int rcp_store_feedback_each(rcp_store *st, rcp_store_feedback_fn fn,
                            void *ud);

/* ======================================================================
** INTERNAL: shared between rcp's files, not part of the public API; may
** change in any release (the sqliteInt.h role).  A program using rcp
** calls nothing below, and the shared library exports none of it (only
** rcp_* symbols are).  Each name carries the prefix of its file or of the
** object it works on: proto_ (rcp.c, the protocol's seams), call_ (rcp.c,
** what a method body uses of the request it serves), methods_
** (methods.c), graph_ (graph.c), transport_ (transport.c), json_,
** model_, MODEL_, text_ and TEXT_; what only one file needs stays static
** there.
**
** A request changes hands four times, each at one seam:
**   bytes -> frame       transport.c  transport_framer (server and client)
**   frame -> message     rcp.c        rcp_server_handle, lent a proto_io
**   message -> method    rcp.c        the roster row -> proto_backend
**   method -> engine     methods.c    rcp_model_*, rcp_store_* (public)
** ====================================================================== */

/* MARK: - The protocol's tables (rcp.c): capabilities, roster rows ----- */

/* §6: every capability RCP/1 names, in the order info writes them; a set
** of them is a mask of PROTO_CAP(x) bits. */
enum proto_cap {
    PROTO_CAP_EMBED, PROTO_CAP_SPARSE /* sparseEmbed */,
    PROTO_CAP_MULTI /* multiVector */, PROTO_CAP_RERANK, PROTO_CAP_RETRIEVE,
    PROTO_CAP_FILTER, PROTO_CAP_CITATIONS, PROTO_CAP_STREAMING,
    PROTO_CAP_PAGINATION, PROTO_CAP_INDEX, PROTO_CAP_TRANSFORM,
    PROTO_CAP_GRAPH, PROTO_CAP_SESSION, PROTO_CAP_FEEDBACK, PROTO_CAP_MEMORY,
    PROTO_CAP_LOG, PROTO_CAP_CATALOG,
    PROTO_CAP_X_RCP,            /* §6.2 the vendor capability of --debug */
    PROTO_NCAPS
};
#define PROTO_CAP(x) (1ul << (x))

/* §7: the roster's gated rows, in the spec's order; a backend has one
** handler per row. */
enum proto_method {
    PROTO_M_EMBED, PROTO_M_SPARSE, PROTO_M_MULTI, PROTO_M_RERANK,
    PROTO_M_RETRIEVE, PROTO_M_TRANSFORM, PROTO_M_GRAPH, PROTO_M_INDEX_ADD,
    PROTO_M_INDEX_DELETE, PROTO_M_CATALOG_LIST, PROTO_M_FEEDBACK,
    PROTO_M_MEMORY_BUILD, PROTO_M_MEMORY_RECALL, PROTO_NMETHODS
};

/* MARK: - The backend seam (rcp.c -> methods.c) ------------------------ */

/* A request being served; a method body reaches it through call_*.  It
** lives while its handler runs; never keep it. */
typedef struct rcp_call rcp_call;

/* A method body: it writes its result with call_w(c) and returns 0, or
** returns the code call_fail recorded (the protocol then answers that
** error instead of the result).  ud is the backend's. */
typedef int (*proto_handler)(void *ud, rcp_call *c);

/* What serves the gated methods, in the role of sqlite3_module: the
** built-in engine (methods.c) or, one day, a federating aggregator (§16).
** offers: the capabilities it serves, a PROTO_CAP mask, asked once when
** the server is made (§13.2: the set never changes); PROTO_CAP_X_RCP is
** the protocol's own and is ignored.  partial (NULL: none): those of them
** it serves only in part as §14 counts them -- retrieve without all three
** modes advertises, but proves no L1.  describe: the §6 value of one
** offered capability (its key is written already).  handle[row]: the
** body of each roster row; NULL, like a capability not offered, answers
** -32003.  close: releases ud with the server; NULL when the server does
** not own ud. */
typedef struct proto_backend {
    unsigned long (*offers)(const void *ud);
    unsigned long (*partial)(const void *ud);
    void (*describe)(const void *ud, int cap, rcp_jw *w);
    proto_handler handle[PROTO_NMETHODS];
    void (*close)(void *ud);
} proto_backend;

/* A server whose gated methods be serves with ud (be NULL: the session
** methods only; opts NULL: all defaults, as rcp_server_new).  The server
** owns ud from here on (be->close), also when this fails: NULL, out of
** memory.  be is borrowed and must outlive the server. */
rcp_server *proto_server_new(const rcp_server_opts *opts,
                             const proto_backend *be, void *ud);
/* The built-in backend over opts->model, store, fields and trust (all
** borrowed from opts' owner): *be and *ud to hand to proto_server_new, or
** *be NULL when opts (or its model) is NULL.  0, or -1 out of memory or
** a field of opts->fields the model does not declare (name and type). */
int methods_open(const rcp_server_opts *opts, const proto_backend **be,
                 void **ud);
/* §16 the aggregator backend (federation.c) over the engines of the
** rcp.json registry at path, plus, when local is non-NULL and has a
** model, the server's own index as one more engine ("local").  The
** engines are started and initialised before it returns.  expose: §7.13
** catalog/list gives each engine's endpoint.  0 and *be, *ud for
** proto_server_new, or -1 with a message (path, JSON pointer, reason)
** in err[0..errlen). */
int federation_open(const char *path, int expose,
                    const rcp_server_opts *local, const proto_backend **be,
                    void **ud, char *err, size_t errlen);
/* Issue 18: embed and rerank delegated to other RCP servers
** (delegate.c).  An engine is a command (a JSON array of strings, as a
** registry's "command", or words with shell quoting) started as a stdio
** child, or an http:// URL; one named the same way for both is one
** engine.  delegate_open starts and initialises them (an engine that
** does not advertise what it is named for is an error); then
** delegate_model_opts points a model's hooks (rcp_model_opts.ext_*) and
** dimension at them, and delegate_wrap puts a backend around the
** built-in one (methods_open's *be, *ud) that forwards embed and rerank
** and advertises the engines' capabilities.  The delegate outlives the
** model and the server; delegate_error: why a hook failed outside any
** request (a --corpus load), or NULL. */
typedef struct delegate delegate;
typedef struct delegate_opts {
    const char *embed_cmd, *embed_url;      /* at most one of each pair */
    const char *rerank_cmd, *rerank_url;
} delegate_opts;
delegate *delegate_open(const delegate_opts *o, char *err, size_t errlen);
void delegate_model_opts(delegate *d, rcp_model_opts *mo);
void delegate_wrap(delegate *d, const proto_backend **be, void **ud);
/* A --corpus load's look-ahead (rcp_store_load_opts.ahead), when there
** is an embed engine: the documents embedded a batch at a time. */
void delegate_load_opts(delegate *d, rcp_store_load_opts *lo);
const char *delegate_error(const delegate *d);
void delegate_free(delegate *d);

/* MARK: - What a method body uses of its request (rcp.c) --------------- */

/* Its params (always an object), its result writer, and its arenas:
** call_arena lives until the frame is answered; call_scratch is the
** backend's, reset by whoever used it, never held across a checkpoint.
** All borrowed from the server; c is never NULL. */
const rcp_json *call_params(const rcp_call *c);
rcp_jw    *call_w(rcp_call *c);
rcp_arena *call_arena(rcp_call *c);
rcp_arena *call_scratch(rcp_call *c);
/* 1 when the server offers capability cap (the set info advertised). */
int call_offers(const rcp_call *c, int cap);
/* Monotonic milliseconds (the clock deadlines, latencyMs and the §7.7.3
** session TTL use). */
double proto_now_ms(void);
/* Test hook (like rcp_set_allocator, process-wide; a C call only, so
** nothing on the wire reaches it): proto_now_ms returns now_ms(ud)
** instead of the monotonic clock.  NULL restores the clock. */
void proto_set_clock(double (*now_ms)(void *ud), void *ud);
/* key: ms, a duration in milliseconds to the microsecond (§17 latencyMs
** and its kin: one rounding for every answer and log). */
void proto_write_ms(rcp_jw *w, const char *key, double ms);
/* key: an array of the names[i] (i < n <= 32, the bits C99 promises an
** unsigned long) whose bit 1 << i is set in mask (~0ul: all of them) --
** §6 capability values (modes, operators, ...). */
void proto_write_names(rcp_jw *w, const char *key,
                       const char *const *names, size_t n,
                       unsigned long mask);
/* The request's deadline on that clock (§13.1 the server's own, or a
** smaller _meta.deadlineMs), 0 when none: what a federating backend has
** left to forward (§16.2 budget propagation). */
double call_deadline(const rcp_call *c);

/* Record the request's error and return code (§12.1: field for -32602,
** option for -32005, each NULL when none; the printf-style detail always;
** each copied).  call_oom: the -32603 "out of memory" every NULL from an
** allocation becomes. */
int call_fail(rcp_call *c, int code, const char *field, const char *option,
              const char *fmt, ...);
int call_oom(rcp_call *c);
/* §7.7 strict: an option not offered is -32005 naming it, or under strict
** 0 a note in usage.notes and 0.  call_note(c, i): the i-th note, NULL
** past the last (borrowed). */
int call_unsupported(rcp_call *c, int strict, const char *option,
                     const char *why);
const char *call_note(const rcp_call *c, size_t i);
/* call_note_add: a printf-style note of what the server did (§7.7
** "SHOULD reflect what it actually did in usage"), dropped past the last
** slot.  call_retryable(c, code, yes): after call_fail, overrides the
** §12.2 error.data.retryable its code implies (a -32010 no retry can
** cure: a snapshot that is gone); returns code. */
void call_note_add(rcp_call *c, const char *fmt, ...);
/* §17.1 notifications/log at level (PROTO_LOG_*) from logger, with a
** printf-style message and data written by data(w, ud) (NULL: none; an
** object) -- sent only when the client asked for that level (rcp.c says
** how); never put document text in it. */
enum { PROTO_LOG_DEBUG, PROTO_LOG_INFO, PROTO_LOG_NOTICE, PROTO_LOG_WARNING,
       PROTO_LOG_ERROR, PROTO_LOG_OFF };
void call_log(rcp_call *c, int level, const char *logger,
              void (*data)(rcp_jw *w, const void *ud), const void *ud,
              const char *fmt, ...);
int call_retryable(rcp_call *c, int code, int yes);

/* The parameter readers, one per JSON type (Lua's luaL_check*): path is
** what error.data.field names, and its last part is the key read from obj
** ("fusion.rrfK" reads "rrfK").  Each stores the value (or def) in *out
** and returns 0, or the -32602 it recorded (call_enum: -32005 under
** strict for a name not in names[0..n)).  Values are borrowed from obj.
** proto_get: obj's member key, NULL when absent or null (§4.6).
** call_need: the member must be there.  call_str and call_obj store NULL
** when absent.  proto_pick: v's index in names, -1 when v is NULL or none
** of them.  call_too_big: the -32602 for a value of n bytes over cap. */
const rcp_json *proto_get(const rcp_json *obj, const char *key);
int call_need(rcp_call *c, const rcp_json *obj, const char *path,
              const rcp_json **out);
int call_bool(rcp_call *c, const rcp_json *obj, const char *path, int def,
              int *out);
int call_int(rcp_call *c, const rcp_json *obj, const char *path, int64_t lo,
             int64_t hi, int64_t def, int64_t *out);
int call_num(rcp_call *c, const rcp_json *obj, const char *path, double lo,
             double hi, double def, double *out);
int call_str(rcp_call *c, const rcp_json *obj, const char *path,
             const rcp_json **out);
int call_obj(rcp_call *c, const rcp_json *obj, const char *path,
             const rcp_json **out);
int call_enum(rcp_call *c, const rcp_json *obj, const char *path,
              const char *const *names, int n, int strict, int *out);
int proto_pick(const rcp_json *v, const char *const *names, int n);
int call_too_big(rcp_call *c, const char *field, size_t n, size_t cap);

/* Long work calls a checkpoint every so often (§7.14 cancel, §13.1
** deadline, §9 progress): it takes in what arrived, then returns 0 to go
** on or the code to stop with (RCP_CANCELLED, RCP_TIMEOUT).  progress in
** [0, 1] rising and stage (NULL: none) go out as notifications/progress
** when the request carried a progressToken and streaming is offered;
** call_progress adds a "partial" member, written by partial(w, ud) while
** the call runs.  call_still_wanted sends no progress. */
typedef void (*call_partial_fn)(rcp_jw *w, const void *ud);
int call_checkpoint(rcp_call *c, double progress, const char *stage);
int call_progress(rcp_call *c, double progress, const char *stage,
                  call_partial_fn partial, const void *ud);
int call_still_wanted(rcp_call *c);

/* A write's answer must not fail once the write is done (§13.1), so a
** write method reserves the room its result needs before it changes
** anything: 0, or the -32603 recorded.  call_mark: how much result is
** written so far; call_since: the bytes written after a mark (borrowed
** until the next write), NULL when the result ran out of memory. */
int call_reserve(rcp_call *c, size_t n);
size_t call_mark(const rcp_call *c);
const char *call_since(const rcp_call *c, size_t mark, size_t *len);

/* MARK: - The term graph (graph.c), for graph and memory (methods.c) --- */

/* §7.9 the term graph of a set of passages: nodes are salient terms and
** phrases, edges their co-occurrence in passages, Louvain communities
** with extractive summaries (the design notes at the top of graph.c).
** Owned by its caller; nothing in it points into the source's texts. */
typedef struct graph graph;

/* Where a sync reads its passages: get(ud, i, ...) for i in [0, n) fills
** the passage's id and text (borrowed until the next get) and returns 0,
** 1 when there is none at i, -1 on failure.  check (NULL: none) is called
** between passages and sweeps; a nonzero return stops the work with it. */
typedef struct graph_src {
    size_t n;
    int  (*get)(void *ud, size_t i, const char **id, size_t *idlen,
                const char **text, size_t *len);
    int  (*check)(void *ud);
    void  *ud;
} graph_src;

/* A listed community (of two nodes or more) at a level: its nodes, most
** central first; its representative passages (indices, best first); its
** extractive summary.  Borrowed from the graph until the next sync. */
typedef struct graph_comm {
    uint32_t        level, index;
    const uint32_t *nodes;
    size_t          nnodes;
    const uint32_t *reps;
    size_t          nreps;
    double          weight;     /* the weight of its internal edges */
    const char     *summary;
    size_t          sumlen;
} graph_comm;

graph *graph_new(void);                         /* NULL: out of memory */
void   graph_free(graph *g);                    /* NULL is a no-op */
/* Make g the graph of src's passages, tokenising only those whose text
** changed since the last sync (by id).  0; -1 out of memory or a failed
** get; or check's code.  After a failure g is the empty graph. */
int    graph_sync(graph *g, const graph_src *src);
/* 1 when the last sync left passages, nodes or edges past the caps out. */
int    graph_truncated(const graph *g);
size_t graph_npassages(const graph *g);
size_t graph_nnodes(const graph *g);
size_t graph_nedges(const graph *g);
/* Passage p's id (by id order); node i's label (its id on the wire). */
const char *graph_passage_id(const graph *g, size_t p, size_t *len);
const char *graph_label(const graph *g, uint32_t node, size_t *len);
/* The node named s[0..n): a label, or else text whose one term (or
** phrase) is a node.  -1 when none. */
long   graph_node(const graph *g, const char *s, size_t n);
/* The nodes among text's terms and phrases, each once, in text order,
** at most cap in out: their count, or -1 out of memory. */
long   graph_entities(const graph *g, const char *text, size_t len,
                      uint32_t *out, size_t cap);
/* Node i's neighbours and edge weights (sorted by neighbour): count. */
size_t graph_adj(const graph *g, uint32_t node, const uint32_t **nbr,
                 const double **w);
/* Node i's idf over the passages: ln(1 + N / df). */
double graph_idf(const graph *g, uint32_t node);
/* Passage p's salient nodes: count. */
size_t graph_passage_nodes(const graph *g, size_t p, const uint32_t **nodes);
/* Personalised PageRank from seeds (each weighed by its idf) into
** out[0..nnodes): 0, -1 out of memory, or check's code. */
int    graph_ppr(const graph *g, const uint32_t *seeds, size_t nseeds,
                 double *out, int (*check)(void *), void *ud);
/* §7.17 a graph kept as a memory: g as JSON into w -- its nodes
** [label, term, df], for each node its `per` strongest edges (a, b,
** weight, ...), its level-0 communities (nodes, representative passage
** ids) -- with the words of its labels in *tokens; and back: g becomes
** the graph v describes (its nodes, edges and idf; no passages, no
** communities: entities, PageRank, labels and adjacency work).  Both:
** 0, or -1 out of memory (read: or v is not such a graph; g is then
** empty). */
int    graph_write(const graph *g, rcp_jw *w, size_t per, size_t *tokens);
int    graph_read(graph *g, const rcp_json *v);
/* Levels computed (0 when the graph has no node); listed communities at
** a level; the i-th of them; the listed community of a node at a level
** (-1 when its community is not listed). */
size_t graph_levels(const graph *g);
size_t graph_ncomms(const graph *g, size_t level);
const graph_comm *graph_comm_at(const graph *g, size_t level, size_t i);
long   graph_comm_of(const graph *g, size_t level, uint32_t node);

/* MARK: - The transport seam (transport.c -> rcp.c) -------------------- */

/* The I/O hook, in the role of SQLite's os_unix.c: while it runs, a
** transport lends the protocol what a request may need of its connection.
** intake takes in what has arrived, without blocking, and shows each
** frame now complete to proto_peek (§7.14: a cancel acts at once); flush
** writes the lines queued in the frame's out now (before a gated method
** runs, after a progress frame: for HTTP, an SSE flush); wait blocks up to
** ms or until input arrives; raw puts bytes straight out after the queue
** (the last resort when out cannot grow).  A NULL member: not available
** (intake NULL: nothing arrives while a request runs).  Without a hook
** the server is in-process (rcp_server_handle): out is the caller's. */
typedef struct proto_io {
    void  *ud;
    void (*intake)(void *ud);
    void (*flush)(void *ud);
    void (*wait)(void *ud, int ms);
    void (*raw)(void *ud, const char *p, size_t n);
} proto_io;

/* Lend io (borrowed until taken back with NULL) for the frames the
** transport hands to rcp_server_handle with its queue as out. */
void proto_lend_io(rcp_server *s, const proto_io *io);
/* A frame that arrived while a request runs, before its turn; frame is
** borrowed for the call. */
void proto_peek(rcp_server *s, const char *frame, size_t n);
/* §13.1 transport death: cancel the running request id (any JSON value
** equal to its id, from the transport's own parse of the frame), as a
** notifications/cancel the client can no longer send would. */
void proto_cancel(rcp_server *s, const rcp_json *id);
/* §5.2, §13: the lifecycle state of one session.  Over stdio the server
** has one of its own; an HTTP transport lends the session each frame
** belongs to (proto_use_session) -- a fresh implicit one per request when
** stateless, a kept one per RCP-Session token when stateful.  implicit:
** every request is initialised at the advertised capabilities and
** initialize answers idempotently (§5.2); token: initialize's result
** carries it as _meta.session (NULL: none, borrowed).  The protocol sets
** initialized on a successful initialize and ended once it answered
** shutdown; rcp_server_handle then returns 1 and serves that session no
** more. */
typedef struct proto_session {
    int         initialized;
    int         ended;
    int         implicit;
    const char *token;
    int         log;            /* §17.1 asked at initialize: PROTO_LOG_*
                                   + 1; 0 none (a zeroed session) */
} proto_session;
/* The session of the frames handed next (borrowed until the next call);
** NULL: the server's own again. */
void proto_use_session(rcp_server *s, proto_session *ss);
/* A frame of more than n bytes could not be buffered (no memory) and is
** being dropped: its -32603 (id null) as one line appended to out. */
void proto_unbuffered(rcp_server *s, size_t n, rcp_buf *out);
/* §5.1 the largest frame, in bytes (rcp_server_opts.max_line). */
size_t proto_max_line(const rcp_server *s);
/* The server's counters (borrowed), for the transport to add its own. */
rcp_server_stats *proto_stats(rcp_server *s);
/* §7.12 EOF: the session is over; nothing more is processed. */
void proto_end(rcp_server *s);

/* MARK: - The line framer (transport.c) -------------------------------- */

/* §5.1 newline-delimited frames out of a byte stream, for the server's
** stdio loop and the client alike.  Bytes come in by transport_framer_read
** (one read(2)); transport_framer_next hands out each complete line once,
** without its '\n' (the tail too, once eof is set).  A line longer than
** max_line is handed out once as TRANSPORT_OVERSIZED with its length so
** far and its bytes are dropped up to its '\n', so memory stays bounded.
** transport_framer_peek shows, once each, the complete lines beyond the
** last one handed out (a look-ahead for cancels), never an oversized one.
** Every byte is searched at most once by each (bytes_searched <= 2 x
** bytes_read).  A line handed out is borrowed: the next read or next may
** move it, so a consumer copies what it keeps.  f is never NULL. */
typedef struct transport_framer {
    char    *buf;           /* owned; rcp_malloc'd */
    size_t   len, cap;
    size_t   pos;           /* the first byte not yet handed out */
    size_t   seen;          /* buf[pos, seen) holds no '\n' */
    size_t   scan;          /* look-ahead: the lines before it were shown */
    size_t   scan_seen;     /* buf[scan, scan_seen) holds no '\n' */
    size_t   max_line;
    int      eof;           /* no more bytes will come */
    int      discarding;    /* inside an oversized line */
    uint64_t bytes_read, bytes_searched;
} transport_framer;
enum { TRANSPORT_NONE, TRANSPORT_LINE, TRANSPORT_OVERSIZED };

void transport_framer_init(transport_framer *f, size_t max_line);
void transport_framer_free(transport_framer *f);   /* back to empty */
/* Room for n more bytes: 0, or -1 out of memory (nothing changed). */
int  transport_framer_reserve(transport_framer *f, size_t n);
/* One read(2) of fd into the buffer: 1 bytes came, 0 end of file (eof is
** set), -1 a read error (errno says which; EAGAIN on a non-blocking fd),
** -2 no memory to grow the buffer (nothing was read). */
int  transport_framer_read(transport_framer *f, int fd);
/* TRANSPORT_LINE or _OVERSIZED with *line, *n (borrowed), or _NONE when
** no complete line is buffered. */
int  transport_framer_next(transport_framer *f, const char **line,
                           size_t *n);
/* 1 with *line, *n (borrowed) for the next complete line not yet shown,
** else 0. */
int  transport_framer_peek(transport_framer *f, const char **line,
                           size_t *n);
/* Give up the line being buffered (no memory to hold it): its bytes and
** the rest of it up to '\n' are dropped.  Returns how many were held. */
size_t transport_framer_drop(transport_framer *f);
/* Bytes buffered and not yet handed out. */
size_t transport_framer_pending(const transport_framer *f);
/* §5.1: a line of only spaces, tabs and CRs carries no frame. */
int  transport_blank(const char *p, size_t n);
/* Sleep ms milliseconds (poll(2) with no descriptor). */
void transport_sleep(int ms);

/* MARK: - JSON internals (json.c): fast paths and their plain versions - */

/* json.c's fast paths beside their plain versions, so tests/test_json.c
** can check on random and edge inputs that each gives
** exactly what the plain one gives (fast = 0: the plain version). */
/* The offset of the first byte in u[0..n) where a string needs more than
** a copy ('"', '\\', a control byte, a byte >= 0x80 not starting a common
** well-formed UTF-8 sequence); n when none. */
size_t json_text_run(const unsigned char *u, size_t n, int fast);
/* The offset of the first byte in u[0..n) that is not an ASCII digit. */
size_t json_digit_run(const unsigned char *u, size_t n, int fast);
/* rcp_json_fmt_double; fast = 0 computes Schubfach's three products with
** three multiplications. */
size_t json_fmt_double(char *out, double v, int fast);
/* A string as the writer puts it (quoted, escaped, U+FFFD for bytes that
** are not UTF-8), appended to b; fast = 0 appends piece by piece. */
void   json_write_string(rcp_buf *b, const char *s, size_t n, int fast);
/* rcp_jw_value; fast = 0 writes through the public rcp_jw_ calls. */
void   json_write_value(rcp_jw *w, const rcp_json *v, int fast);


/* MARK: - Engine internals (model.c): the checker's test hook ------------ */

/* Break one invariant of m on purpose, so tests/test_model.c can prove
** that rcp_model_check sees each kind of damage (SQLite's
** sqlite3_test_control).  Afterwards m may only be checked and freed.
** 0 done; -1 when m holds nothing to break that way. */
enum {
    MODEL_BREAK_POSTING_ORDER, MODEL_BREAK_DF, MODEL_BREAK_TF,
    MODEL_BREAK_LIVE_COUNT, MODEL_BREAK_TOTAL_LEN, MODEL_BREAK_LIVE_BIT,
    MODEL_BREAK_ID_TABLE, MODEL_BREAK_CHUNK_CHAIN,
    MODEL_BREAK_RETAINED_BYTES, MODEL_BREAK_VERSION_STATS, MODEL_BREAK_ROW,
    MODEL_BREAK_LEXICON, MODEL_BREAK_FIELD_VALUE, MODEL_BREAK_KINDS
};
int model_break(rcp_model *m, int what);

/* MARK: - Text internals (text.c): the scanner under rcp_tokenize -------- */

/* model.c reads text exactly as rcp_tokenize does, through these: its
** indexing fast path runs the scanner with a sink of its own (the
** lexicon's) and builds tokens from the same pieces; its embedders and
** rerankers walk code points and size word buffers the same way. */

#define TEXT_MAX_WORD_BYTES 128 /* longer runs are cut at a code point */

/* Character classes; a sink sees only TEXT_CC_WORD and TEXT_CC_CJK. */
enum { TEXT_CC_SEP, TEXT_CC_WORD, TEXT_CC_CJK };

/* Decode the code point at s[*i..n) and advance *i; an invalid sequence
** yields U+FFFD and consumes one byte. */
uint32_t text_utf8_next(const unsigned char *s, size_t n, size_t *i);
/* 1 when w[0..n) is one of list[0..count) (C strings sorted byte-wise). */
int text_in_list(const char *const *list, size_t count, const char *w,
                 size_t n);

/* What the scanner hands on: a word (folded when asked; cc TEXT_CC_WORD;
** followed by 16 zero bytes) or a CJK character pair (cc TEXT_CC_CJK, raw
** bytes), with its byte span.  The sink decides what to keep:
** rcp_tokenize's makes tokens, the index's fast path looks words up in
** the lexicon instead.  w is borrowed for the call; non-zero stops the
** scan. */
typedef int (*text_sink)(void *ctx, int cc, const char *w, size_t n,
                         uint32_t start, uint32_t end);
/* Every word (folded when flags has RCP_TOK_FOLD) and CJK pair of
** text[0..len), in order, to f.  0 ok; -1 when f failed or len >= 4 GiB. */
int text_scan(const char *text, size_t len, unsigned flags,
              text_sink f, void *ctx);

/* rcp_tokenize's sink (ctx a text_tok_ctx): the token for w, or nothing
** for a stopword (pos still advances).  -1 out of memory. */
typedef struct text_tok_ctx {
    rcp_tokens *t;
    unsigned    flags;
    uint32_t    pos;
} text_tok_ctx;
int text_emit_token(void *ctx, int cc, const char *w, size_t n,
                    uint32_t start, uint32_t end);
/* Append the token for word w[0..n) (text class cc) with term
** term[0..tn) -- stored once when the two are byte-equal -- ordinal pos,
** byte span [start, end): the one token maker every sink uses.  0 ok, -1
** out of memory or past 4 GiB of token text. */
int text_push_token(rcp_tokens *t, int cc, const char *w, size_t n,
                    const char *term, size_t tn, uint32_t pos,
                    uint32_t start, uint32_t end);
/* 1 when w[0..n) is all a-z: a word the stopword list and the stemmer
** apply to. */
int text_is_ascii_alpha(const char *w, size_t n);
/* 1 when w[0..n) is all 0-9: an RCP_TOKEN_NUM. */
int text_is_digits(const char *w, size_t n);

/* MARK: - Text internals (text.c): the §15.2 screen, built once ------- */

/* The screen's cues, normalised once (rcp_text_injection builds one per
** call); free with rcp_free.  NULL out of memory. */
typedef struct text_screen text_screen;
text_screen *text_screen_new(void);
int text_screen_hit(const text_screen *t, const char *text, size_t len);

/* MARK: - Storage internals (store.c): §7.10 idempotency keys ----------- */

/* The results of keyed index/add writes (_meta.idempotencyKey), one
** bounded table: at most STORE_IDEM_SLOTS keys whose keys and results
** take at most RCP_IDEM_BYTES, the oldest forgotten first (§7.10 asks a
** SHOULD of a server that recognises keys, not unbounded memory).  The
** built-in backend keeps one in memory, or uses its store's, which is
** durable: each key is logged in the commit of its write, replayed at
** open and kept by compaction, so a retry after a restart is still
** answered from it. */
#define STORE_IDEM_SLOTS 256u
typedef struct store_idem {
    struct store_idem_entry {
        char    *key;           /* rcp_malloc'd; NULL = free slot */
        char    *result;        /* the serialised result */
        size_t   keylen, len;
        uint64_t fp;            /* fingerprint of the write */
    } e[STORE_IDEM_SLOTS];
    size_t next, bytes;         /* next slot to fill; keys + results */
} store_idem;
const struct store_idem_entry *store_idem_find(const store_idem *t,
                                               const char *key, size_t n);
/* Remember key -> (fp, result); 0, or -1 out of memory (nothing kept). */
int  store_idem_put(store_idem *t, const char *key, size_t n, uint64_t fp,
                    const char *result, size_t len);
void store_idem_free(store_idem *t);
/* The open store's table (durable). */
store_idem *store_idem_table(rcp_store *st);
/* Log key -> (fp, result) in the pending commit, so it becomes durable
** with the write it answers; put it in the table only once that commit
** returned 0.  0, or -1 with rcp_store_error(st). */
int  store_log_idem(rcp_store *st, const char *key, size_t n, uint64_t fp,
                    const char *result, size_t len);

#endif /* RCP_H */
