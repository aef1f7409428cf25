/*
** json.c -- the library core (allocator hook, arena, growable buffer,
** §12 messages) and JSON exactly as RFC 8259 defines it (§4.6): a strict
** iterative parser into an arena and a compact one-line writer with
** shortest round-trip number formatting.
**
** Design notes
**   1. The parser never recurses: an open container keeps its slot on a
**      value stack, its finished children after it; when it closes, they
**      are copied contiguously into the arena (kids[]) and the slot is
**      complete.  So there is no per-node malloc, and depth is bounded by
**      a counter, not by the C stack.  The stack starts on the C stack
**      and spills to rcp_malloc only for large texts.
**   2. A string without escapes points straight into the input; one with
**      escapes is validated in a first pass and decoded in a second into
**      the arena (decoding never grows the text, so one allocation).
**   3. Numbers are only validated while parsing; their text is kept and
**      converted on demand (rcp_json_num, rcp_json_int), so an id such as
**      9007199254740993, 1e2 or -0 is echoed byte for byte (§4.7).
**   4. Doubles and floats are written with Schubfach (R. Giulietti, "The
**      Schubfach way to render doubles", 2020): the shortest decimal that
**      reads back to the same binary64/binary32, closest to the exact
**      value, in integer arithmetic (128-bit products emulated with
**      uint64_t halves: C99 has no 128-bit type).  The decimal is laid out
**      like ECMAScript's Number::toString (plain up to 1e21, else "1e+21").
**   5. Speed (issue 17) comes from fast paths that each sit after a plain
**      version of the same step: scans eight bytes at a time (SWAR on
**      words assembled byte by byte, so any byte order and word size),
**      strings copied into reserved room while scanned, the tree written
**      without the per-call comma flags, Schubfach's three products from
**      two multiplications, digits in blocks.  The INTERNAL json_* calls
**      in rcp.h reach both versions, and tests/test_json.c checks that
**      they agree; `make json-cross-check` runs that on big-endian s390x.
*/
#include "rcp.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MARK: - Core: allocator hook ------------------------------------------ */

static void *std_alloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (n == 0) {
        free(p);
        return NULL;
    }
    return realloc(p, n);
}

static rcp_alloc_fn alloc_fn = std_alloc;
static void *alloc_ud;

void rcp_set_allocator(rcp_alloc_fn fn, void *ud)
{
    alloc_fn = fn ? fn : std_alloc;
    alloc_ud = fn ? ud : NULL;
}

void *rcp_malloc(size_t n)
{
    return n ? alloc_fn(alloc_ud, NULL, n) : NULL;
}

void *rcp_realloc(void *p, size_t n)
{
    return n ? alloc_fn(alloc_ud, p, n) : NULL;
}

void rcp_free(void *p)
{
    if (p)
        alloc_fn(alloc_ud, p, 0);
}

/* MARK: - Core: arena --------------------------------------------------- */

/* The strictest alignment of any scalar type, without C11's alignof. */
union arena_max {
    long double ld;
    long long ll;
    double d;
    void *p;
    void (*fn)(void);
};
struct arena_probe {
    char c;
    union arena_max u;
};
#define ARENA_ALIGN offsetof(struct arena_probe, u)

struct rcp_arena_block {
    rcp_arena_block *next;
    size_t cap, used;   /* data bytes after the header */
};
#define ARENA_HDR \
    ((sizeof(rcp_arena_block) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN)
#define ARENA_FIRST  (8u << 10)     /* first block */
#define ARENA_STEP   (8u << 20)     /* blocks double up to this size */
#define ARENA_RETAIN (8u << 20)     /* reset keeps at most this much */

void rcp_arena_init(rcp_arena *a, size_t limit)
{
    a->head = NULL;
    a->used = 0;
    a->limit = limit;
    a->full = 0;
}

static char *block_data(rcp_arena_block *b)
{
    return (char *)b + ARENA_HDR;
}

static rcp_arena_block *arena_block_new(size_t cap)
{
    rcp_arena_block *b;
    if (cap > (size_t)-1 - ARENA_HDR)
        return NULL;
    b = rcp_malloc(ARENA_HDR + cap);
    if (b) {
        b->next = NULL;
        b->cap = cap;
        b->used = 0;
    }
    return b;
}

/* Slow path (no padding needed at the start of a block).  A large request
** gets a block of its own behind the head, so the head keeps serving the
** small ones; otherwise a new head, each twice the last up to ARENA_STEP. */
static void *arena_grow(rcp_arena *a, size_t n)
{
    size_t cap = a->head ? a->head->cap : ARENA_FIRST / 2;
    rcp_arena_block *b;
    cap = cap < ARENA_STEP ? cap * 2 : cap;
    b = arena_block_new(a->head && n > cap / 4 ? n : cap < n ? n : cap);
    if (!b) {
        a->full = 0;
        return NULL;
    }
    if (a->head && n > cap / 4) {
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    b->used = n;
    a->used += n;
    return block_data(b);
}

/* n bytes aligned to align (a power of two <= ARENA_ALIGN). */
static inline void *arena_take(rcp_arena *a, size_t n, size_t align)
{
    rcp_arena_block *b = a->head;
    size_t pad = 0, room = 0;
    if (n == 0)
        n = 1;
    if (b) {
        pad = (align - (b->used & (align - 1))) & (align - 1);
        room = b->cap - b->used;
    }
    if (a->limit && (a->used > a->limit || a->limit - a->used < n + pad)) {
        a->full = 1;
        return NULL;
    }
    if (b && room >= pad && room - pad >= n) {
        char *p = block_data(b) + b->used + pad;
        b->used += pad + n;
        a->used += pad + n;
        return p;
    }
    return arena_grow(a, n);
}

void *rcp_arena_alloc(rcp_arena *a, size_t n)
{
    return arena_take(a, n, ARENA_ALIGN);
}

/* Keep the largest block; if the arena needed several, swap it for one
** block of their total size (up to ARENA_RETAIN), so a steady stream of
** similar requests stops calling malloc after the first. */
void rcp_arena_reset(rcp_arena *a)
{
    rcp_arena_block *b, *next, *keep = NULL;
    size_t total = 0;
    if (a->head && !a->head->next) {    /* one block: nothing to merge */
        a->head->used = 0;
        a->used = 0;
        return;
    }
    for (b = a->head; b; b = b->next)
        if (!keep || b->cap > keep->cap)
            keep = b;
    for (b = a->head; b; b = next) {
        next = b->next;
        total += b->cap;
        if (b != keep)
            rcp_free(b);
    }
    if (keep && total > keep->cap && total <= ARENA_RETAIN) {
        rcp_arena_block *big = arena_block_new(total);
        if (big) {
            rcp_free(keep);
            keep = big;
        }
    }
    if (keep) {
        keep->next = NULL;
        keep->used = 0;
    }
    a->head = keep;
    a->used = 0;
}

void rcp_arena_free(rcp_arena *a)
{
    rcp_arena_block *b, *next;
    for (b = a->head; b; b = next) {
        next = b->next;
        rcp_free(b);
    }
    a->head = NULL;
    a->used = 0;
}

/* MARK: - Core: growable buffer ----------------------------------------- */

void rcp_buf_init(rcp_buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

int rcp_buf_reserve(rcp_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;
    if (b->oom)
        return -1;
    if (b->cap - b->len >= extra)
        return 0;
    if (extra > (size_t)-1 - b->len)
        goto fail;
    need = b->len + extra;
    cap = b->cap < 64 ? 64 : b->cap;
    while (cap < need)
        cap = cap > (size_t)-1 / 2 ? need : cap * 2;
    p = rcp_realloc(b->data, cap);
    if (!p)
        goto fail;
    b->data = p;
    b->cap = cap;
    return 0;
fail:
    b->oom = 1;     /* cap stays true, so rcp_buf_clear can reuse the bytes */
    return -1;
}

/* Appends test oom first: a text that lost a piece must not go on to
** gain later ones (a failed string followed by a fitting ':' is how a
** broken buffer turns into "{:,:}"). */
void rcp_buf_put(rcp_buf *b, const void *p, size_t n)
{
    if (n == 0 || b->oom
        || (b->cap - b->len < n && rcp_buf_reserve(b, n)))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void rcp_buf_putc(rcp_buf *b, char c)
{
    if (b->oom || (b->len == b->cap && rcp_buf_reserve(b, 1)))
        return;
    b->data[b->len++] = c;
}

void rcp_buf_puts(rcp_buf *b, const char *s)
{
    rcp_buf_put(b, s, strlen(s));
}

void rcp_buf_clear(rcp_buf *b)
{
    b->len = 0;
    b->oom = 0;
}

void rcp_buf_free(rcp_buf *b)
{
    rcp_free(b->data);
    rcp_buf_init(b);
}

/* MARK: - Core: §12 error messages -------------------------------------- */

const char *rcp_code_message(int code)
{
    switch (code) {
    case RCP_PARSE_ERROR:         return "Parse error";
    case RCP_INVALID_REQUEST:     return "Invalid Request";
    case RCP_METHOD_NOT_FOUND:    return "Method not found";
    case RCP_INVALID_PARAMS:      return "Invalid params";
    case RCP_INTERNAL_ERROR:      return "Internal error";
    case RCP_NOT_INITIALIZED:     return "Not initialized";
    case RCP_VERSION_MISMATCH:    return "Version mismatch";
    case RCP_CAPABILITY_MISSING:  return "Capability missing";
    case RCP_UNKNOWN_METHOD:      return "Unknown method";
    case RCP_OPTION_UNSUPPORTED:  return "Option unsupported";
    case RCP_CANCELLED:           return "Cancelled";
    case RCP_BACKEND_UNAVAILABLE: return "Backend unavailable";
    case RCP_RATE_LIMITED:        return "Rate limited";
    case RCP_UNAUTHORIZED:        return "Unauthorized";
    case RCP_PAYLOAD_TOO_LARGE:   return "Payload too large";
    case RCP_TIMEOUT:             return "Timeout";
    case RCP_NOT_FOUND:           return "Not found";
    case RCP_CONFLICT:            return "Conflict";
    }
    /* §12: an unrecognised code is a generic failure */
    return code <= -32000 && code >= -32099 ? "Server error" : "Error";
}

/* MARK: - JSON: byte classes -------------------------------------------- */

/* json_cls bits (generated; see the names for what each byte is) */
#define C_WS    1   /* RFC 8259 §2 whitespace: space, tab, LF, CR only */
#define C_PLAIN 2   /* string byte needing no work: 0x20..0x7F but " \ */
#define C_NUMC  4   /* alnum . + - _ : cannot follow a number, so a byte
                       that makes a malformed number, not a new token */
#define C_ESC   8   /* the letter after \ of a one-letter escape */

static const unsigned char json_cls[256] = {
     0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     3, 2, 8, 2, 2, 2, 2, 2, 2, 2, 2, 6, 2, 6, 6,10,
     6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 2, 2, 2, 2, 2, 2,
     2, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
     6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 2, 8, 2, 2, 6,
     2, 6,14, 6, 6, 6,14, 6, 6, 6, 6, 6, 6, 6,14, 6,
     6, 6,14, 6,14, 6, 6, 6, 6, 6, 6, 2, 2, 2, 2, 2,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
static const signed char json_hex[256] = {
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
     0, 1, 2, 3, 4, 5, 6, 7, 8, 9,-1,-1,-1,-1,-1,-1,
    -1,10,11,12,13,14,15,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,10,11,12,13,14,15,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
    -1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,
};

/* The bytes a string scan (and the writer's escaper) must stop at: '"',
** '\\', a control byte (< 0x20) or the first byte of a multi-byte UTF-8
** sequence (>= 0x80); every other byte is copied as it is.  The plain
** version looks at one byte at a time; the fast one (below) at eight, and
** tests/test_json.c checks that both give the same offset on random and
** edge inputs.  Returns the offset of the first such byte in u[0..n), n
** when there is none. */
static size_t plain_run_plain(const unsigned char *u, size_t n)
{
    size_t i = 0;
    while (i < n && (json_cls[u[i]] & C_PLAIN))
        i++;
    return i;
}

/* SWAR: eight bytes in one uint64_t.  The word is assembled from its bytes
** with byte i in bits 8i..8i+7 whatever the host's byte order or word size
** (compilers make one load of it where that is cheaper); no alignment is
** needed. */
#define SW_ONES  ((uint64_t)0x0101010101010101u)
#define SW_HIGHS ((uint64_t)0x8080808080808080u)

static inline uint64_t sw_load(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
           (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

/* The high bit of each byte of w that plain_run stops at, exact for the
** lowest such byte (bits above it may be spurious).  Per byte b:
**   (b ^ 0x02) - 0x21 sets the high bit for b < 0x20 and for b == '"'
**       (xor 2 maps 0x22 to 0x20 and keeps every other byte >= 0x21),
**   (b ^ '\\') - 1 sets it for b == '\\',
**   b itself for b >= 0x80.
** A subtraction borrows into the byte above only from a byte whose result
** has its high bit set, one that is flagged; and without a borrow in, a
** high bit set by these subtractions alone means b is special or b >=
** 0x80.  So no byte below the first flagged one is wrong. */
static uint64_t sw_special(uint64_t w)
{
    return (((w ^ SW_ONES * 0x02) - SW_ONES * 0x21) |
            ((w ^ SW_ONES * '\\') - SW_ONES) | w) & SW_HIGHS;
}

/* The index (0..7) of the lowest flagged byte of m (m != 0, high bits
** only): its bit is 8i+7, so (lowest >> 7) is 2^(8i) and multiplying by
** 0x0001020304050607 shifts that constant up i bytes, leaving byte 7-i of
** it, which is i, on top. */
static size_t sw_first(uint64_t m)
{
    return (size_t)((((m & (0 - m)) >> 7) *
                     (uint64_t)0x0001020304050607u) >> 56);
}

/* The scan both runs share: whole words while mask flags none of their
** bytes (mask must be exact for the lowest flagged byte), the last few
** bytes by the plain version.  Inline, the calls through the pointers
** become direct ones. */
static inline size_t word_run(const unsigned char *u, size_t n,
                              uint64_t (*mask)(uint64_t),
                              size_t (*plain)(const unsigned char *, size_t))
{
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t m = mask(sw_load(u + i));
        if (m)
            return i + sw_first(m);
    }
    return i + plain(u + i, n - i);
}

static inline size_t plain_run(const unsigned char *u, size_t n)
{
    return word_run(u, n, sw_special, plain_run_plain);
}

/* The offset of the first byte in u[0..n) that is not an ASCII digit, n
** when there is none: one byte at a time, then eight (tested to agree, as
** plain_run). */
static size_t digit_run_plain(const unsigned char *u, size_t n)
{
    size_t i = 0;
    while (i < n && (unsigned char)(u[i] - '0') < 10)
        i++;
    return i;
}

/* The high bit of each byte of w that is not a digit, exact for the
** lowest one: y = b ^ '0' is 0..9 for a digit; y + 0x76 sets the high bit
** for 10 <= y < 0x8A, y itself for y >= 0x80.  The addition carries out
** of a byte only when y >= 0x8A, a flagged byte, so none below the first
** flagged one is wrong. */
static uint64_t sw_nondigit(uint64_t w)
{
    uint64_t y = w ^ SW_ONES * '0';
    return ((y + SW_ONES * 0x76) | y) & SW_HIGHS;
}

static inline size_t digit_run(const unsigned char *u, size_t n)
{
    return word_run(u, n, sw_nondigit, digit_run_plain);
}

/* MARK: - JSON: error messages ------------------------------------------ */

/* One table for every parse error: the code it carries and its text. */
enum json_msg {
    M_NOMEM, M_LIMIT, M_EMPTY, M_TRAILING, M_VALUE, M_BYTE, M_NONASCII, M_NUL,
    M_BOM, M_QUOTE1, M_LITERAL, M_LIT_END, M_NAME, M_COLON, M_ARR_SEP,
    M_OBJ_SEP, M_UNTERM_ARR, M_UNTERM_OBJ, M_DEPTH,
    M_NUM_PLUS, M_NUM_DOT, M_NUM_NAN, M_NUM_MINUS, M_NUM_ZERO, M_NUM_FRAC,
    M_NUM_EXP, M_NUM_CHAR,
    M_STR_CTRL, M_STR_NUL, M_STR_END, M_ESC, M_ESC_HEX, M_SUR_HIGH,
    M_SUR_LOW,
    M_UTF8_STRAY, M_UTF8_LEAD, M_UTF8_OVERLONG, M_UTF8_SURROGATE,
    M_UTF8_RANGE, M_UTF8_TRUNC
};

static const struct json_msg_entry {
    rcp_json_errcode code;
    const char *text;
} json_msgs[] = {
    {RCP_JSON_E_NOMEM, "out of memory (an allocation failed)"},
    {RCP_JSON_E_LIMIT, "the parse tree would pass the memory limit"},
    {RCP_JSON_E_EMPTY, "no JSON value (empty input)"},
    {RCP_JSON_E_TRAILING, "unexpected data after the JSON value"},
    {RCP_JSON_E_TOKEN, "expected a value"},
    {RCP_JSON_E_TOKEN, "unexpected byte"},
    {RCP_JSON_E_TOKEN, "unexpected non-ASCII byte outside a string"},
    {RCP_JSON_E_TOKEN, "unexpected NUL byte outside a string"},
    {RCP_JSON_E_TOKEN, "byte order mark (U+FEFF) is not allowed"},
    {RCP_JSON_E_TOKEN, "strings take double quotes, not single"},
    {RCP_JSON_E_TOKEN, "invalid literal (expected true, false or null)"},
    {RCP_JSON_E_TOKEN, "input ends inside a literal"},
    {RCP_JSON_E_TOKEN, "expected a string member name"},
    {RCP_JSON_E_TOKEN, "expected ':' after the member name"},
    {RCP_JSON_E_TOKEN, "expected ',' or ']' after an array element"},
    {RCP_JSON_E_TOKEN, "expected ',' or '}' after an object member"},
    {RCP_JSON_E_UNTERMINATED, "unterminated array"},
    {RCP_JSON_E_UNTERMINATED, "unterminated object"},
    {RCP_JSON_E_DEPTH, "nesting deeper than the limit"},
    {RCP_JSON_E_NUMBER, "a number may not start with '+'"},
    {RCP_JSON_E_NUMBER, "a number needs a digit before the decimal point"},
    {RCP_JSON_E_NUMBER, "NaN and Infinity are not JSON numbers"},
    {RCP_JSON_E_NUMBER, "digit expected after '-'"},
    {RCP_JSON_E_NUMBER, "leading zero in number"},
    {RCP_JSON_E_NUMBER, "digit expected after the decimal point"},
    {RCP_JSON_E_NUMBER, "digit expected in the exponent"},
    {RCP_JSON_E_NUMBER, "invalid character in number"},
    {RCP_JSON_E_STRING_CTRL, "raw control character in string"},
    {RCP_JSON_E_STRING_CTRL, "raw NUL byte in string (escape it: \\u0000)"},
    {RCP_JSON_E_UNTERMINATED, "unterminated string"},
    {RCP_JSON_E_ESCAPE,
     "invalid escape (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"},
    {RCP_JSON_E_ESCAPE, "\\u escape needs four hex digits"},
    {RCP_JSON_E_SURROGATE,
     "lone surrogate: \\uD800-\\uDBFF not followed by \\uDC00-\\uDFFF"},
    {RCP_JSON_E_SURROGATE,
     "lone surrogate: \\uDC00-\\uDFFF without \\uD800-\\uDBFF before it"},
    {RCP_JSON_E_UTF8, "invalid UTF-8 sequence: stray continuation byte"},
    {RCP_JSON_E_UTF8, "invalid UTF-8 sequence: byte 0xF8-0xFF"},
    {RCP_JSON_E_UTF8, "invalid UTF-8 sequence: overlong encoding"},
    {RCP_JSON_E_UTF8,
     "invalid UTF-8 sequence: encoded surrogate U+D800-U+DFFF"},
    {RCP_JSON_E_UTF8, "invalid UTF-8 sequence: code point above U+10FFFF"},
    {RCP_JSON_E_UTF8,
     "invalid UTF-8 sequence: truncated (continuation byte expected)"}
};

/* MARK: - JSON: UTF-8 --------------------------------------------------- */

/* Checks the sequence at p (p[0] >= 0x80) against Unicode Table 3-7.
** Returns 0 and *len = its length, or a message with *len = the offset
** of the offending byte (end - p when the input ends inside it).  For the
** writer *len is also the "maximal subpart" to replace (Unicode §3.9). */
static int utf8_seq(const unsigned char *p, const unsigned char *end,
                    size_t *len)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t need, i;
    int bad2 = M_UTF8_TRUNC;
    *len = 0;
    if (c < 0xC2)
        return c < 0xC0 ? M_UTF8_STRAY : M_UTF8_OVERLONG;
    if (c < 0xE0) {
        need = 1;
    } else if (c < 0xF0) {
        need = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
        bad2 = c == 0xE0 ? M_UTF8_OVERLONG : M_UTF8_SURROGATE;
    } else if (c < 0xF5) {
        need = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
        bad2 = c == 0xF0 ? M_UTF8_OVERLONG : M_UTF8_RANGE;
    } else {
        return c < 0xF8 ? M_UTF8_RANGE : M_UTF8_LEAD;
    }
    for (i = 1; i <= need; i++, lo = 0x80, hi = 0xBF) {
        *len = i;
        if (p + i == end)
            return M_UTF8_TRUNC;
        if (p[i] < lo || p[i] > hi)
            return i == 1 && (p[i] & 0xC0) == 0x80 ? bad2 : M_UTF8_TRUNC;
    }
    *len = need + 1;
    return 0;
}

static size_t utf8_put(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The common well-formed sequences, checked inline: two bytes led by
** C2..DF, three led by E1..EF but ED (the leads whose second byte may be
** any of 80..BF), with three bytes readable.  Their length, or 0 for
** anything else, which utf8_seq then judges. */
static inline size_t utf8_easy(const unsigned char *u, size_t avail)
{
    int ok = avail >= 3 &&
             (u[0] >= 0xC2 && u[0] <= 0xDF ? (u[1] & 0xC0) == 0x80
              : u[0] >= 0xE1 && u[0] <= 0xEF && u[0] != 0xED &&
                (u[1] & 0xC0) == 0x80 && (u[2] & 0xC0) == 0x80);
    return ok ? 2 + (size_t)(u[0] >= 0xE0) : 0;
}

/* The offset of the first byte in u[0..n) where a string needs more than
** a copy: '"', '\\', a control byte, or a byte >= 0x80 that does not start
** an easy sequence; n when there is none.  Both the parser and the writer
** scan strings with it.  The plain version, one byte at a time: */
static size_t text_run_plain(const unsigned char *u, size_t n)
{
    size_t i = 0, k;
    while (i < n) {
        if (json_cls[u[i]] & C_PLAIN)
            i++;
        else if (u[i] >= 0x80 && (k = utf8_easy(u + i, n - i)) != 0)
            i += k;
        else
            break;
    }
    return i;
}

/* The fast one: plain runs eight bytes at a time, easy sequences between
** them (tests/test_json.c checks that both agree). */
static inline size_t text_run(const unsigned char *u, size_t n)
{
    size_t i = 0, k;
    for (;;) {
        i += plain_run(u + i, n - i);
        if (i == n || u[i] < 0x80 || (k = utf8_easy(u + i, n - i)) == 0)
            return i;
        i += k;
    }
}

size_t json_text_run(const unsigned char *u, size_t n, int fast)
{
    return fast ? text_run(u, n) : text_run_plain(u, n);
}

size_t json_digit_run(const unsigned char *u, size_t n, int fast)
{
    return fast ? digit_run(u, n) : digit_run_plain(u, n);
}

/* MARK: - JSON: parser state -------------------------------------------- */

#define JP_LOCAL_VALS 64
#define JP_NONE ((size_t)-1)   /* no container open */

/* The value stack holds, in document order, each open container's slot
** followed by its finished children.  An open container's slot already
** has its type and member name; its n links to the slot of the container
** around it (JP_NONE at the top) until it closes and n becomes the
** number of its children.  So there is no second stack of frames. */
typedef struct json_parser {
    rcp_arena *a;
    const char *base, *end;
    rcp_json *st;        /* value stack */
    size_t top, cap;
    size_t open;         /* slot of the innermost open container */
    int obj;             /* 1 when that container is an object */
    size_t depth, maxdepth;
    rcp_json_err *err;
    rcp_json st_local[JP_LOCAL_VALS];
} json_parser;

/* Records the first error; returns NULL so callers can `return fail()`.
** A failed allocation is told apart here from a refusal by the limit (the
** arena, and grow_stack for the value stack, say which it was). */
static const char *fail(json_parser *P, int msg, const char *at)
{
    if (msg == M_NOMEM && P->a->full)
        msg = M_LIMIT;
    P->err->code = json_msgs[msg].code;
    P->err->msg = json_msgs[msg].text;
    P->err->offset = (size_t)(at - P->base);
    return NULL;
}

/* Doubles the value stack (moving it off the C stack the first time).
** Scratch is held to the arena's limit too, so a limit bounds all the
** memory one parse may use.  -1 (recorded at at) when that fails. */
static int grow_stack(json_parser *P, const char *at)
{
    size_t ncap = P->cap * 2, elem = sizeof *P->st;
    rcp_json *q = NULL;
    P->a->full = 1;             /* fail() tells the limit from no memory */
    if (ncap <= (size_t)-1 / elem &&
        !(P->a->limit && ncap * elem > P->a->limit)) {
        P->a->full = 0;
        if (P->st == P->st_local) {
            q = rcp_malloc(ncap * elem);
            if (q)
                memcpy(q, P->st_local, P->cap * elem);
        } else {
            q = rcp_realloc(P->st, ncap * elem);
        }
    }
    if (!q) {
        fail(P, M_NOMEM, at);
        return -1;
    }
    P->st = q;
    P->cap = ncap;
    return 0;
}

/* The slot for the next value (top of the stack), not yet counted; NULL
** when the stack cannot grow (recorded at at). */
static rcp_json *slot(json_parser *P, const char *at)
{
    if (P->top == P->cap && grow_stack(P, at))
        return NULL;
    return &P->st[P->top];
}

/* Completes a scalar in its slot v (the top one, member name set). */
static void put_scalar(json_parser *P, rcp_json *v, rcp_json_type t,
                       const char *s, size_t n)
{
    v->type = t;
    v->n = n;
    v->s = s;
    v->kids = NULL;
    P->top++;
}

/* Callers test first for the byte they expect: compact JSON, what servers
** mostly see, has no whitespace. */
static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (json_cls[(unsigned char)*p] & C_WS))
        p++;
    return p;
}

/* MARK: - JSON: strings (RFC 8259 §7) ----------------------------------- */

/* Four hex digits at p; -1 (error recorded) when they are not there. */
static long check_hex4(json_parser *P, const char *p)
{
    long v = 0;
    int i, h;
    for (i = 0; i < 4; i++) {
        if (p + i == P->end) {
            fail(P, M_STR_END, P->end);
            return -1;
        }
        h = json_hex[(unsigned char)p[i]];
        if (h < 0) {
            fail(P, M_ESC_HEX, p + i);
            return -1;
        }
        v = v << 4 | h;
    }
    return v;
}

/* RFC 8259 §7: a character outside the BMP is escaped as a surrogate pair;
** a lone surrogate cannot become UTF-8 (§4.6: strings are UTF-8), so it is
** an error rather than a replacement character.  p is at the backslash of
** a high surrogate escape. */
static const char *check_pair(json_parser *P, const char *p)
{
    const char *end = P->end;
    long lo;
    if (end - p >= 8 && p[6] == '\\' && p[7] == 'u') {
        lo = check_hex4(P, p + 8);
        if (lo < 0)
            return NULL;
        return lo >= 0xDC00 && lo <= 0xDFFF ? p + 12
                                             : fail(P, M_SUR_HIGH, p);
    }
    if (end - p == 6 || (end - p == 7 && p[6] == '\\'))
        return fail(P, M_STR_END, end);
    return fail(P, M_SUR_HIGH, p);
}

/* One escape at p (a backslash), validated; returns what follows it. */
static const char *check_escape(json_parser *P, const char *p)
{
    long cp;
    if (P->end - p < 2)
        return fail(P, M_STR_END, P->end);
    if (p[1] != 'u')
        return json_cls[(unsigned char)p[1]] & C_ESC ? p + 2
                                                    : fail(P, M_ESC, p + 1);
    cp = check_hex4(P, p + 2);
    if (cp < 0)
        return NULL;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(P, M_SUR_LOW, p);
    return cp >= 0xD800 && cp <= 0xDBFF ? check_pair(P, p) : p + 6;
}

/* Pass 1: p is inside a string, after its opening quote and any bytes
** plain_run passed.  Validates up to the closing quote; returns the byte
** after it and sets *esc when a \ was seen. */
static const char *scan_string(json_parser *P, const char *p, int *esc)
{
    const unsigned char *u = (const unsigned char *)p;
    const unsigned char *end = (const unsigned char *)P->end;
    size_t len;
    int m;
    for (;;) {
        u += plain_run(u, (size_t)(end - u));
        if (u == end)
            return fail(P, M_STR_END, P->end);
        if (*u == '"')
            return (const char *)u + 1;
        if (*u == '\\') {
            *esc = 1;
            p = check_escape(P, (const char *)u);
            if (!p)
                return NULL;
            u = (const unsigned char *)p;
        } else if (*u < 0x20) {
            return fail(P, *u ? M_STR_CTRL : M_STR_NUL, (const char *)u);
        } else if ((len = utf8_easy(u, (size_t)(end - u))) != 0) {
            do                      /* a word of CJK, Greek, ... */
                u += len;
            while (u < end && *u >= 0x80 &&
                   (len = utf8_easy(u, (size_t)(end - u))) != 0);
        } else {
            m = utf8_seq(u, end, &len);
            if (m)
                return fail(P, m, (const char *)u + len);
            u += len;
        }
    }
}

static unsigned long hex4(const char *p)
{
    unsigned long v = 0;
    int i;
    for (i = 0; i < 4; i++)
        v = v << 4 | (unsigned long)json_hex[(unsigned char)p[i]];
    return v;
}

/* Pass 2 for one escape already validated by pass 1. */
static const char *decode_escape(const char *p, char **o)
{
    unsigned long cp;
    switch (p[1]) {
    case 'b': *(*o)++ = '\b'; return p + 2;
    case 'f': *(*o)++ = '\f'; return p + 2;
    case 'n': *(*o)++ = '\n'; return p + 2;
    case 'r': *(*o)++ = '\r'; return p + 2;
    case 't': *(*o)++ = '\t'; return p + 2;
    case 'u': break;
    default:  *(*o)++ = p[1]; return p + 2;      /* " \ / */
    }
    cp = hex4(p + 2);
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(p + 2) - 0xDC00);
        p += 6;
    }
    *o += utf8_put(*o, cp);
    return p;
}

/* Pass 2: decodes the validated body [p, end) into out (never longer). */
static size_t decode_string(char *out, const char *p, const char *end)
{
    char *o = out;
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t run = (size_t)((bs ? bs : end) - p);
        memcpy(o, p, run);
        o += run;
        if (!bs)
            break;
        p = decode_escape(bs, &o);
    }
    return (size_t)(o - out);
}

/* The string from p (after its opening quote) when it needs more than
** plain bytes: from at on, escapes, UTF-8 or an error. */
static const char *parse_string_rest(json_parser *P, const char *p,
                                     const char *at, const char **s,
                                     size_t *n)
{
    int esc = 0;
    const char *q = scan_string(P, at, &esc);
    char *buf;
    if (!q)
        return NULL;
    if (!esc) {
        *s = p;
        *n = (size_t)(q - 1 - p);
        return q;
    }
    buf = arena_take(P->a, (size_t)(q - 1 - p), 1);
    if (!buf)
        return fail(P, M_NOMEM, p);
    *s = buf;
    *n = decode_string(buf, p, q - 1);
    return q;
}

/* p is after the opening quote; *s, *n get the decoded bytes.  Most
** strings (member names above all) hold no escape and only easy UTF-8,
** so the first byte text_run stops at is their closing quote. */
static inline const char *parse_string(json_parser *P, const char *p,
                                       const char **s, size_t *n)
{
    size_t i = plain_run((const unsigned char *)p, (size_t)(P->end - p));
    if (p + i < P->end && p[i] == '"') {
        *s = p;
        *n = i;
        return p + i + 1;
    }
    return parse_string_rest(P, p, p + i, s, n);
}

/* MARK: - JSON: numbers and literals (RFC 8259 §6, §3) ------------------ */

static int is_digit_at(const char *p, const char *end)
{
    return p < end && (unsigned char)(*p - '0') < 10;
}

static const char *digits(const char *p, const char *end)
{
    return p + digit_run((const unsigned char *)p, (size_t)(end - p));
}

/* number = [ minus ] int [ frac ] [ exp ]; only validated here, the text
** is kept (design note 3).  Completes slot v. */
static const char *parse_number(json_parser *P, rcp_json *v, const char *p)
{
    const char *s = p, *end = P->end;
    if (*p == '-')
        p++;
    if (!is_digit_at(p, end))
        return fail(P, M_NUM_MINUS, p);
    if (*p++ == '0') {
        if (is_digit_at(p, end))
            return fail(P, M_NUM_ZERO, p);
    } else {
        p = digits(p, end);
    }
    if (p < end && *p == '.') {
        if (!is_digit_at(++p, end))
            return fail(P, M_NUM_FRAC, p);
        p = digits(p, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit_at(p, end))
            return fail(P, M_NUM_EXP, p);
        p = digits(p, end);
    }
    if (p < end && (json_cls[(unsigned char)*p] & C_NUMC))
        return fail(P, M_NUM_CHAR, p);
    put_scalar(P, v, RCP_JSON_NUMBER, s, (size_t)(p - s));
    return p;
}

/* true, false or null (word, n bytes) at p; completes slot v. */
static const char *parse_literal(json_parser *P, rcp_json *v, const char *p,
                                 const char *word, size_t n, rcp_json_type t)
{
    size_t i;
    if ((size_t)(P->end - p) < n || memcmp(p, word, n) != 0)
        for (i = 0; i < n; i++) {
            if (p + i == P->end)
                return fail(P, M_LIT_END, P->end);
            if (p[i] != word[i])
                return fail(P, M_LITERAL, p + i);
        }
    put_scalar(P, v, t, p, n);
    return p + n;
}

static int starts(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* The clearest message for a byte that cannot start a value. */
static int bad_value(json_parser *P, const char *p)
{
    unsigned char c = (unsigned char)*p;
    switch (c) {
    case '+': return M_NUM_PLUS;
    case '.': return M_NUM_DOT;
    case '\'': return M_QUOTE1;
    case 0: return M_NUL;
    case ']': case '}': case ',': case ':': return M_VALUE;
    }
    if (starts(p, P->end, "NaN") || starts(p, P->end, "Infinity"))
        return M_NUM_NAN;
    /* RFC 8259 §8.1 lets a parser ignore a BOM; we reject it (strict) */
    if (p == P->base && starts(p, P->end, "\xEF\xBB\xBF"))
        return M_BOM;
    return c >= 0x80 ? M_NONASCII : M_BYTE;
}

/* A scalar value at p (p < end) into slot v. */
static const char *parse_scalar(json_parser *P, rcp_json *v, const char *p)
{
    const char *s;
    size_t n;
    switch (*p) {
    case '"':
        p = parse_string(P, p + 1, &s, &n);
        if (p)
            put_scalar(P, v, RCP_JSON_STRING, s, n);
        return p;
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        return parse_number(P, v, p);
    case 't': return parse_literal(P, v, p, "true", 4, RCP_JSON_TRUE);
    case 'f': return parse_literal(P, v, p, "false", 5, RCP_JSON_FALSE);
    case 'n': return parse_literal(P, v, p, "null", 4, RCP_JSON_NULL);
    }
    return fail(P, bad_value(P, p), p);
}

/* MARK: - JSON: containers and the main loop ---------------------------- */

static int in_object(const json_parser *P)
{
    return P->obj;
}

/* After '{' or ',' in an object: a member name into slot v, and its ':'. */
static const char *member_name(json_parser *P, rcp_json *v, const char *p)
{
    const char *end = P->end;
    if (p == end || *p != '"')
        p = skip_ws(p, end);
    if (p == end)
        return fail(P, M_UNTERM_OBJ, end);
    if (*p != '"')
        return fail(P, *p == '\'' ? M_QUOTE1 : M_NAME, p);
    p = parse_string(P, p + 1, &v->key, &v->keylen);
    if (!p)
        return NULL;
    if (p < end && *p == ':')
        return p + 1;
    p = skip_ws(p, end);
    if (p == end)
        return fail(P, M_UNTERM_OBJ, end);
    return *p == ':' ? p + 1 : fail(P, M_COLON, p);
}

/* '{' or '[' at p in slot v: the slot stays on the stack, its children
** follow it (design note 1). */
static int open_container(json_parser *P, rcp_json *v, const char *p)
{
    if (P->depth >= P->maxdepth) {
        fail(P, M_DEPTH, p);
        return -1;
    }
    v->type = *p == '{' ? RCP_JSON_OBJECT : RCP_JSON_ARRAY;
    v->s = NULL;
    v->kids = NULL;
    v->n = P->open;
    P->open = P->top++;
    P->obj = v->type == RCP_JSON_OBJECT;
    P->depth++;
    return 0;
}

/* The closing byte at p: the innermost container's children move from
** the stack into the arena (design note 1) and its slot is complete. */
static int close_container(json_parser *P, const char *p)
{
    rcp_json *c = &P->st[P->open];
    size_t n = P->top - P->open - 1;
    if (n) {
        c->kids = arena_take(P->a, n * sizeof *c->kids, ARENA_ALIGN);
        if (!c->kids) {
            fail(P, M_NOMEM, p);
            return -1;
        }
        memcpy(c->kids, c + 1, n * sizeof *c->kids);
    }
    P->top = P->open + 1;
    P->open = c->n;
    P->obj = P->open != JP_NONE &&
             P->st[P->open].type == RCP_JSON_OBJECT;
    P->depth--;
    c->n = n;
    return 0;
}

/* After '{', '[' or ',': the slot for the next value, its member name
** read when in an object; NULL with the error recorded. */
static const char *next_member(json_parser *P, const char *p, rcp_json **v)
{
    *v = slot(P, p);
    if (!*v)
        return NULL;
    if (in_object(P))
        return member_name(P, *v, p);
    (*v)->key = NULL;
    (*v)->keylen = 0;
    return p;
}

/* A value at p into slot v.  *more = 1 when it opened a container with
** children to come, 0 when the value is complete (an empty container
** closes at once). */
static const char *parse_value(json_parser *P, const char *p, rcp_json *v,
                               int *more)
{
    const char *end = P->end;
    char close;
    *more = 0;
    if (p == end || *p != '"')
        p = skip_ws(p, end);
    if (p == end)
        return fail(P, P->open == JP_NONE ? M_EMPTY : in_object(P)
                           ? M_UNTERM_OBJ : M_UNTERM_ARR, p);
    if (*p != '{' && *p != '[')
        return parse_scalar(P, v, p);
    close = *p == '{' ? '}' : ']';
    if (open_container(P, v, p))
        return NULL;
    p = skip_ws(p + 1, end);
    if (p < end && *p == close)
        return close_container(P, p) ? NULL : p + 1;
    *more = 1;
    return p;
}

/* After a value: the bytes that close containers, up to a ',' (returns
** what follows it) or the end of the root (P->open == JP_NONE). */
static const char *after_value(json_parser *P, const char *p)
{
    const char *end = P->end;
    while (P->open != JP_NONE) {
        int obj = in_object(P);
        if (p < end && *p == ',')
            return p + 1;
        p = skip_ws(p, end);
        if (p == end)
            return fail(P, obj ? M_UNTERM_OBJ : M_UNTERM_ARR, p);
        if (*p == ',')
            return p + 1;
        if (*p != (obj ? '}' : ']'))
            return fail(P, obj ? M_OBJ_SEP : M_ARR_SEP, p);
        if (close_container(P, p++))
            return NULL;
    }
    return p;
}

/* The main loop: a value at p into slot v, the bytes after it, and the
** slot (and member name) of the next one, until the root is complete.
** Iterative: depth is a counter, never the C stack. */
static const char *parse_values(json_parser *P, const char *p, rcp_json *v)
{
    int more;
    for (;;) {
        p = parse_value(P, p, v, &more);
        if (p && !more) {
            p = after_value(P, p);
            if (p && P->open == JP_NONE)
                return p;
        }
        if (p)
            p = next_member(P, p, &v);
        if (!p)
            return NULL;
    }
}

static const rcp_json *parse_text(json_parser *P)
{
    const char *p;
    rcp_json *root, *v = slot(P, P->base);
    if (!v)
        return NULL;
    v->key = NULL;
    v->keylen = 0;
    p = parse_values(P, P->base, v);
    if (!p)
        return NULL;
    /* RFC 8259 §2: JSON-text = ws value ws, nothing else */
    p = skip_ws(p, P->end);
    if (p != P->end) {
        fail(P, M_TRAILING, p);
        return NULL;
    }
    root = arena_take(P->a, sizeof *root, ARENA_ALIGN);
    if (!root) {
        fail(P, M_NOMEM, p);
        return NULL;
    }
    *root = P->st[0];
    return root;
}

const rcp_json *rcp_json_parse(rcp_arena *a, const char *text, size_t len,
                               size_t max_depth, rcp_json_err *err)
{
    json_parser P;
    rcp_json_err dummy;
    const rcp_json *root;
    P.a = a;
    P.base = text ? text : "";
    P.end = P.base + (text ? len : 0);
    P.st = P.st_local;
    P.top = 0;
    P.cap = JP_LOCAL_VALS;
    P.open = JP_NONE;
    P.obj = 0;
    P.depth = 0;
    P.maxdepth = max_depth ? max_depth : RCP_JSON_MAX_DEPTH;
    P.err = err ? err : &dummy;
    P.err->code = RCP_JSON_OK;
    P.err->offset = 0;
    P.err->msg = "ok";
    root = parse_text(&P);
    if (P.st != P.st_local)
        rcp_free(P.st);
    return root;
}

/* MARK: - JSON: accessors ----------------------------------------------- */

/* 1 when the member name of m is the C string s.  Byte by byte, no
** strlen: most names differ at once; a name may hold NUL (\u0000), and
** then s, which ends there, is shorter. */
static int name_is(const rcp_json *m, const char *s)
{
    size_t j;
    for (j = 0; j < m->keylen; j++)
        if (s[j] != m->key[j] || s[j] == '\0')
            return 0;
    return s[j] == '\0';
}

const rcp_json *rcp_json_get(const rcp_json *obj, const char *key)
{
    size_t i;
    if (!obj || obj->type != RCP_JSON_OBJECT || !key)
        return NULL;
    /* duplicates are kept; the last one wins (README Decisions) */
    for (i = obj->n; i-- > 0;)
        if (name_is(&obj->kids[i], key))
            return &obj->kids[i];
    return NULL;
}

int rcp_json_streq(const rcp_json *v, const char *s)
{
    return v && v->type == RCP_JSON_STRING && s && strlen(s) == v->n &&
           memcmp(v->s, s, v->n) == 0;
}

/* MARK: - JSON: number values ------------------------------------------- */

/* A number's text split into significant digits and a decimal exponent:
** value = sign * 0.D1D2..Dn * 10^exp10 (D1 != 0), with at most
** NUM_KEEP digits kept and *sticky set when a dropped digit was nonzero.
** Works on the validated grammar; the exponent saturates. */
#define NUM_KEEP 800   /* > 767, the most a binary64 halfway point needs */
#define NUM_ESAT 100000000L

typedef struct json_num {
    int neg, sticky;
    char d[NUM_KEEP];
    size_t nd;          /* digits kept */
    size_t nsig;        /* significant digits seen (kept or not) */
    long exp10;
    long lastnz;        /* 1-based position of the last nonzero digit */
} json_num;

static void num_digit(json_num *x, char c, int frac)
{
    if (x->nsig == 0 && c == '0') {
        x->exp10 -= frac && x->exp10 > -NUM_ESAT;
        return;
    }
    if (!frac && x->exp10 < NUM_ESAT)
        x->exp10++;
    if (x->nd < NUM_KEEP)
        x->d[x->nd++] = c;
    else if (c != '0')
        x->sticky = 1;
    if (x->nsig < (size_t)NUM_ESAT)
        x->nsig++;
    if (c != '0')
        x->lastnz = (long)x->nsig;
}

static void num_split(json_num *x, const char *s, size_t n)
{
    const char *end = s + n;
    long e = 0;
    int eneg = 0;
    x->neg = s < end && *s == '-';
    s += x->neg;
    x->sticky = 0;
    x->nd = x->nsig = 0;
    x->exp10 = 0;
    x->lastnz = 0;
    for (; s < end && *s >= '0' && *s <= '9'; s++)
        num_digit(x, *s, 0);
    if (s < end && *s == '.')
        for (s++; s < end && *s >= '0' && *s <= '9'; s++)
            num_digit(x, *s, 1);
    if (s < end && (*s == 'e' || *s == 'E')) {
        s++;
        eneg = s < end && *s == '-';
        s += s < end && (*s == '-' || *s == '+');
        for (; s < end && *s >= '0' && *s <= '9'; s++)
            e = e < NUM_ESAT ? e * 10 + (*s - '0') : NUM_ESAT;
    }
    x->exp10 += eneg ? -e : e;
}

/* Clinger's fast path: when the digits fit in 2^53 and the power of ten
** is at most 10^22, both are exact doubles and one IEEE multiply or divide
** rounds once, so the result is correctly rounded.  That needs doubles
** evaluated without excess precision (FLT_EVAL_METHOD 0); 0 = not taken. */
static int num_fast(const char *s, size_t n, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    static const double p10[] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
    };
    const char *end = s + n;
    uint64_t m = 0;
    int e = 0, ex = 0, neg = *s == '-', eneg = 0, nd = 0;
    for (s += neg; s < end && (unsigned char)(*s - '0') < 10; s++, nd++)
        m = m * 10 + (uint64_t)(*s - '0');
    if (s < end && *s == '.')
        for (s++; s < end && (unsigned char)(*s - '0') < 10; s++, nd++, e--)
            m = m * 10 + (uint64_t)(*s - '0');
    if (s < end) {                      /* the exponent: e or E */
        eneg = *++s == '-';
        s += *s == '-' || *s == '+';
        for (; s < end && ex < 1000; s++)
            ex = ex * 10 + (*s - '0');
    }
    e += eneg ? -ex : ex;
    if (nd > 19 || m > ((uint64_t)1 << 53) || e < -22 || e > 22)
        return m == 0 && nd <= 19 ? (*out = neg ? -0.0 : 0.0, 1) : 0;
    *out = e < 0 ? (double)m / p10[-e] : (double)m * p10[e];
    *out = neg ? -*out : *out;
    return 1;
#else
    (void)s, (void)n, (void)out;
    return 0;
#endif
}

/* Long texts go through num_split so strtod gets a bounded copy with the
** same correctly rounded value; short ones are copied as they are. */
double rcp_json_num(const rcp_json *v)
{
    char buf[NUM_KEEP + 40];
    json_num x;
    size_t o = 0;
    double d;
    if (!v || v->type != RCP_JSON_NUMBER || v->n == 0)
        return 0.0;
    if (num_fast(v->s, v->n, &d))
        return d;
    if (v->n < 64) {
        memcpy(buf, v->s, v->n);
        buf[v->n] = '\0';
        return strtod(buf, NULL);
    }
    num_split(&x, v->s, v->n);
    if (x.nsig == 0)
        return x.neg ? -0.0 : 0.0;
    if (x.exp10 > 400 || x.exp10 < -400)
        x.exp10 = x.exp10 > 0 ? 400 : -400;   /* still overflows / 0 */
    if (x.neg)
        buf[o++] = '-';
    buf[o++] = '0';
    buf[o++] = '.';
    memcpy(buf + o, x.d, x.nd);
    o += x.nd;
    if (x.sticky)
        buf[o++] = '1';
    sprintf(buf + o, "e%ld", x.exp10);
    return strtod(buf, NULL);
}

/* Exact: no floating point.  §4.6 integers fit the signed 53-bit range. */
int rcp_json_int(const rcp_json *v, int64_t *out)
{
    json_num x;
    uint64_t m = 0;
    long i, scale;
    if (!v || v->type != RCP_JSON_NUMBER)
        return 0;
    num_split(&x, v->s, v->n);
    if (x.lastnz == 0) {
        *out = 0;                   /* 0, -0, 0.0e5 */
        return 1;
    }
    /* value = D1..D(lastnz) * 10^(exp10 - lastnz), D(lastnz) != 0 */
    scale = x.exp10 - x.lastnz;
    if (scale < 0 || x.exp10 > 16)
        return 0;                   /* fractional, or >= 10^16 > 2^53 */
    for (i = 0; i < x.lastnz; i++)
        m = m * 10 + (uint64_t)(x.d[i] - '0');
    for (i = 0; i < scale; i++)
        m *= 10;
    if (m > (uint64_t)9007199254740991u)
        return 0;
    *out = x.neg ? -(int64_t)m : (int64_t)m;
    return 1;
}

/* MARK: - JSON: shortest number formatting (design note 4) -------------- */

/* g(k) = floor(10^k / 2^r) + 1 with r chosen so g has exactly 64 (float)
** or 128 (double) bits; generated exactly with big integers. */
#define FMT_F_KMIN (-31)
#define FMT_D_KMIN (-292)

/* g(k) for binary32, k = -31..45 (FMT_F_KMIN..FMT_F_KMAX) */
static const uint64_t fmt_pow10_f[] = {
    0x81CEB32C4B43FCF5u, 0xA2425FF75E14FC32u, 0xCAD2F7F5359A3B3Fu,
    0xFD87B5F28300CA0Eu, 0x9E74D1B791E07E49u, 0xC612062576589DDBu,
    0xF79687AED3EEC552u, 0x9ABE14CD44753B53u, 0xC16D9A0095928A28u,
    0xF1C90080BAF72CB2u, 0x971DA05074DA7BEFu, 0xBCE5086492111AEBu,
    0xEC1E4A7DB69561A6u, 0x9392EE8E921D5D08u, 0xB877AA3236A4B44Au,
    0xE69594BEC44DE15Cu, 0x901D7CF73AB0ACDAu, 0xB424DC35095CD810u,
    0xE12E13424BB40E14u, 0x8CBCCC096F5088CCu, 0xAFEBFF0BCB24AAFFu,
    0xDBE6FECEBDEDD5BFu, 0x89705F4136B4A598u, 0xABCC77118461CEFDu,
    0xD6BF94D5E57A42BDu, 0x8637BD05AF6C69B6u, 0xA7C5AC471B478424u,
    0xD1B71758E219652Cu, 0x83126E978D4FDF3Cu, 0xA3D70A3D70A3D70Bu,
    0xCCCCCCCCCCCCCCCDu, 0x8000000000000001u, 0xA000000000000001u,
    0xC800000000000001u, 0xFA00000000000001u, 0x9C40000000000001u,
    0xC350000000000001u, 0xF424000000000001u, 0x9896800000000001u,
    0xBEBC200000000001u, 0xEE6B280000000001u, 0x9502F90000000001u,
    0xBA43B74000000001u, 0xE8D4A51000000001u, 0x9184E72A00000001u,
    0xB5E620F480000001u, 0xE35FA931A0000001u, 0x8E1BC9BF04000001u,
    0xB1A2BC2EC5000001u, 0xDE0B6B3A76400001u, 0x8AC7230489E80001u,
    0xAD78EBC5AC620001u, 0xD8D726B7177A8001u, 0x878678326EAC9001u,
    0xA968163F0A57B401u, 0xD3C21BCECCEDA101u, 0x84595161401484A1u,
    0xA56FA5B99019A5C9u, 0xCECB8F27F4200F3Bu, 0x813F3978F8940985u,
    0xA18F07D736B90BE6u, 0xC9F2C9CD04674EDFu, 0xFC6F7C4045812297u,
    0x9DC5ADA82B70B59Eu, 0xC5371912364CE306u, 0xF684DF56C3E01BC7u,
    0x9A130B963A6C115Du, 0xC097CE7BC90715B4u, 0xF0BDC21ABB48DB21u,
    0x96769950B50D88F5u, 0xBC143FA4E250EB32u, 0xEB194F8E1AE525FEu,
    0x92EFD1B8D0CF37BFu, 0xB7ABC627050305AEu, 0xE596B7B0C643C71Au,
    0x8F7E32CE7BEA5C70u, 0xB35DBF821AE4F38Cu,
};

/* g(k) for binary64 as {hi, lo}, k = -292..326 (FMT_D_KMIN..FMT_D_KMAX) */
static const uint64_t fmt_pow10_d[] = {
    0xFF77B1FCBEBCDC4Fu, 0x25E8E89C13BB0F7Bu, 0x9FAACF3DF73609B1u,
    0x77B191618C54E9ADu, 0xC795830D75038C1Du, 0xD59DF5B9EF6A2418u,
    0xF97AE3D0D2446F25u, 0x4B0573286B44AD1Eu, 0x9BECCE62836AC577u,
    0x4EE367F9430AEC33u, 0xC2E801FB244576D5u, 0x229C41F793CDA740u,
    0xF3A20279ED56D48Au, 0x6B43527578C11110u, 0x9845418C345644D6u,
    0x830A13896B78AAAAu, 0xBE5691EF416BD60Cu, 0x23CC986BC656D554u,
    0xEDEC366B11C6CB8Fu, 0x2CBFBE86B7EC8AA9u, 0x94B3A202EB1C3F39u,
    0x7BF7D71432F3D6AAu, 0xB9E08A83A5E34F07u, 0xDAF5CCD93FB0CC54u,
    0xE858AD248F5C22C9u, 0xD1B3400F8F9CFF69u, 0x91376C36D99995BEu,
    0x23100809B9C21FA2u, 0xB58547448FFFFB2Du, 0xABD40A0C2832A78Bu,
    0xE2E69915B3FFF9F9u, 0x16C90C8F323F516Du, 0x8DD01FAD907FFC3Bu,
    0xAE3DA7D97F6792E4u, 0xB1442798F49FFB4Au, 0x99CD11CFDF41779Du,
    0xDD95317F31C7FA1Du, 0x40405643D711D584u, 0x8A7D3EEF7F1CFC52u,
    0x482835EA666B2573u, 0xAD1C8EAB5EE43B66u, 0xDA3243650005EED0u,
    0xD863B256369D4A40u, 0x90BED43E40076A83u, 0x873E4F75E2224E68u,
    0x5A7744A6E804A292u, 0xA90DE3535AAAE202u, 0x711515D0A205CB37u,
    0xD3515C2831559A83u, 0x0D5A5B44CA873E04u, 0x8412D9991ED58091u,
    0xE858790AFE9486C3u, 0xA5178FFF668AE0B6u, 0x626E974DBE39A873u,
    0xCE5D73FF402D98E3u, 0xFB0A3D212DC81290u, 0x80FA687F881C7F8Eu,
    0x7CE66634BC9D0B9Au, 0xA139029F6A239F72u, 0x1C1FFFC1EBC44E81u,
    0xC987434744AC874Eu, 0xA327FFB266B56221u, 0xFBE9141915D7A922u,
    0x4BF1FF9F0062BAA9u, 0x9D71AC8FADA6C9B5u, 0x6F773FC3603DB4AAu,
    0xC4CE17B399107C22u, 0xCB550FB4384D21D4u, 0xF6019DA07F549B2Bu,
    0x7E2A53A146606A49u, 0x99C102844F94E0FBu, 0x2EDA7444CBFC426Eu,
    0xC0314325637A1939u, 0xFA911155FEFB5309u, 0xF03D93EEBC589F88u,
    0x793555AB7EBA27CBu, 0x96267C7535B763B5u, 0x4BC1558B2F3458DFu,
    0xBBB01B9283253CA2u, 0x9EB1AAEDFB016F17u, 0xEA9C227723EE8BCBu,
    0x465E15A979C1CADDu, 0x92A1958A7675175Fu, 0x0BFACD89EC191ECAu,
    0xB749FAED14125D36u, 0xCEF980EC671F667Cu, 0xE51C79A85916F484u,
    0x82B7E12780E7401Bu, 0x8F31CC0937AE58D2u, 0xD1B2ECB8B0908811u,
    0xB2FE3F0B8599EF07u, 0x861FA7E6DCB4AA16u, 0xDFBDCECE67006AC9u,
    0x67A791E093E1D49Bu, 0x8BD6A141006042BDu, 0xE0C8BB2C5C6D24E1u,
    0xAECC49914078536Du, 0x58FAE9F773886E19u, 0xDA7F5BF590966848u,
    0xAF39A475506A899Fu, 0x888F99797A5E012Du, 0x6D8406C952429604u,
    0xAAB37FD7D8F58178u, 0xC8E5087BA6D33B84u, 0xD5605FCDCF32E1D6u,
    0xFB1E4A9A90880A65u, 0x855C3BE0A17FCD26u, 0x5CF2EEA09A550680u,
    0xA6B34AD8C9DFC06Fu, 0xF42FAA48C0EA481Fu, 0xD0601D8EFC57B08Bu,
    0xF13B94DAF124DA27u, 0x823C12795DB6CE57u, 0x76C53D08D6B70859u,
    0xA2CB1717B52481EDu, 0x54768C4B0C64CA6Fu, 0xCB7DDCDDA26DA268u,
    0xA9942F5DCF7DFD0Au, 0xFE5D54150B090B02u, 0xD3F93B35435D7C4Du,
    0x9EFA548D26E5A6E1u, 0xC47BC5014A1A6DB0u, 0xC6B8E9B0709F109Au,
    0x359AB6419CA1091Cu, 0xF867241C8CC6D4C0u, 0xC30163D203C94B63u,
    0x9B407691D7FC44F8u, 0x79E0DE63425DCF1Eu, 0xC21094364DFB5636u,
    0x985915FC12F542E5u, 0xF294B943E17A2BC4u, 0x3E6F5B7B17B2939Eu,
    0x979CF3CA6CEC5B5Au, 0xA705992CEECF9C43u, 0xBD8430BD08277231u,
    0x50C6FF782A838354u, 0xECE53CEC4A314EBDu, 0xA4F8BF5635246429u,
    0x940F4613AE5ED136u, 0x871B7795E136BE9Au, 0xB913179899F68584u,
    0x28E2557B59846E40u, 0xE757DD7EC07426E5u, 0x331AEADA2FE589D0u,
    0x9096EA6F3848984Fu, 0x3FF0D2C85DEF7622u, 0xB4BCA50B065ABE63u,
    0x0FED077A756B53AAu, 0xE1EBCE4DC7F16DFBu, 0xD3E8495912C62895u,
    0x8D3360F09CF6E4BDu, 0x64712DD7ABBBD95Du, 0xB080392CC4349DECu,
    0xBD8D794D96AACFB4u, 0xDCA04777F541C567u, 0xECF0D7A0FC5583A1u,
    0x89E42CAAF9491B60u, 0xF41686C49DB57245u, 0xAC5D37D5B79B6239u,
    0x311C2875C522CED6u, 0xD77485CB25823AC7u, 0x7D633293366B828Cu,
    0x86A8D39EF77164BCu, 0xAE5DFF9C02033198u, 0xA8530886B54DBDEBu,
    0xD9F57F830283FDFDu, 0xD267CAA862A12D66u, 0xD072DF63C324FD7Cu,
    0x8380DEA93DA4BC60u, 0x4247CB9E59F71E6Eu, 0xA46116538D0DEB78u,
    0x52D9BE85F074E609u, 0xCD795BE870516656u, 0x67902E276C921F8Cu,
    0x806BD9714632DFF6u, 0x00BA1CD8A3DB53B7u, 0xA086CFCD97BF97F3u,
    0x80E8A40ECCD228A5u, 0xC8A883C0FDAF7DF0u, 0x6122CD128006B2CEu,
    0xFAD2A4B13D1B5D6Cu, 0x796B805720085F82u, 0x9CC3A6EEC6311A63u,
    0xCBE3303674053BB1u, 0xC3F490AA77BD60FCu, 0xBEDBFC4411068A9Du,
    0xF4F1B4D515ACB93Bu, 0xEE92FB5515482D45u, 0x991711052D8BF3C5u,
    0x751BDD152D4D1C4Bu, 0xBF5CD54678EEF0B6u, 0xD262D45A78A0635Eu,
    0xEF340A98172AACE4u, 0x86FB897116C87C35u, 0x9580869F0E7AAC0Eu,
    0xD45D35E6AE3D4DA1u, 0xBAE0A846D2195712u, 0x8974836059CCA10Au,
    0xE998D258869FACD7u, 0x2BD1A438703FC94Cu, 0x91FF83775423CC06u,
    0x7B6306A34627DDD0u, 0xB67F6455292CBF08u, 0x1A3BC84C17B1D543u,
    0xE41F3D6A7377EECAu, 0x20CABA5F1D9E4A94u, 0x8E938662882AF53Eu,
    0x547EB47B7282EE9Du, 0xB23867FB2A35B28Du, 0xE99E619A4F23AA44u,
    0xDEC681F9F4C31F31u, 0x6405FA00E2EC94D5u, 0x8B3C113C38F9F37Eu,
    0xDE83BC408DD3DD05u, 0xAE0B158B4738705Eu, 0x9624AB50B148D446u,
    0xD98DDAEE19068C76u, 0x3BADD624DD9B0958u, 0x87F8A8D4CFA417C9u,
    0xE54CA5D70A80E5D7u, 0xA9F6D30A038D1DBCu, 0x5E9FCF4CCD211F4Du,
    0xD47487CC8470652Bu, 0x7647C32000696720u, 0x84C8D4DFD2C63F3Bu,
    0x29ECD9F40041E074u, 0xA5FB0A17C777CF09u, 0xF468107100525891u,
    0xCF79CC9DB955C2CCu, 0x7182148D4066EEB5u, 0x81AC1FE293D599BFu,
    0xC6F14CD848405531u, 0xA21727DB38CB002Fu, 0xB8ADA00E5A506A7Du,
    0xCA9CF1D206FDC03Bu, 0xA6D90811F0E4851Du, 0xFD442E4688BD304Au,
    0x908F4A166D1DA664u, 0x9E4A9CEC15763E2Eu, 0x9A598E4E043287FFu,
    0xC5DD44271AD3CDBAu, 0x40EFF1E1853F29FEu, 0xF7549530E188C128u,
    0xD12BEE59E68EF47Du, 0x9A94DD3E8CF578B9u, 0x82BB74F8301958CFu,
    0xC13A148E3032D6E7u, 0xE36A52363C1FAF02u, 0xF18899B1BC3F8CA1u,
    0xDC44E6C3CB279AC2u, 0x96F5600F15A7B7E5u, 0x29AB103A5EF8C0BAu,
    0xBCB2B812DB11A5DEu, 0x7415D448F6B6F0E8u, 0xEBDF661791D60F56u,
    0x111B495B3464AD22u, 0x936B9FCEBB25C995u, 0xCAB10DD900BEEC35u,
    0xB84687C269EF3BFBu, 0x3D5D514F40EEA743u, 0xE65829B3046B0AFAu,
    0x0CB4A5A3112A5113u, 0x8FF71A0FE2C2E6DCu, 0x47F0E785EABA72ACu,
    0xB3F4E093DB73A093u, 0x59ED216765690F57u, 0xE0F218B8D25088B8u,
    0x306869C13EC3532Du, 0x8C974F7383725573u, 0x1E414218C73A13FCu,
    0xAFBD2350644EEACFu, 0xE5D1929EF90898FBu, 0xDBAC6C247D62A583u,
    0xDF45F746B74ABF3Au, 0x894BC396CE5DA772u, 0x6B8BBA8C328EB784u,
    0xAB9EB47C81F5114Fu, 0x066EA92F3F326565u, 0xD686619BA27255A2u,
    0xC80A537B0EFEFEBEu, 0x8613FD0145877585u, 0xBD06742CE95F5F37u,
    0xA798FC4196E952E7u, 0x2C48113823B73705u, 0xD17F3B51FCA3A7A0u,
    0xF75A15862CA504C6u, 0x82EF85133DE648C4u, 0x9A984D73DBE722FCu,
    0xA3AB66580D5FDAF5u, 0xC13E60D0D2E0EBBBu, 0xCC963FEE10B7D1B3u,
    0x318DF905079926A9u, 0xFFBBCFE994E5C61Fu, 0xFDF17746497F7053u,
    0x9FD561F1FD0F9BD3u, 0xFEB6EA8BEDEFA634u, 0xC7CABA6E7C5382C8u,
    0xFE64A52EE96B8FC1u, 0xF9BD690A1B68637Bu, 0x3DFDCE7AA3C673B1u,
    0x9C1661A651213E2Du, 0x06BEA10CA65C084Fu, 0xC31BFA0FE5698DB8u,
    0x486E494FCFF30A63u, 0xF3E2F893DEC3F126u, 0x5A89DBA3C3EFCCFBu,
    0x986DDB5C6B3A76B7u, 0xF89629465A75E01Du, 0xBE89523386091465u,
    0xF6BBB397F1135824u, 0xEE2BA6C0678B597Fu, 0x746AA07DED582E2Du,
    0x94DB483840B717EFu, 0xA8C2A44EB4571CDDu, 0xBA121A4650E4DDEBu,
    0x92F34D62616CE414u, 0xE896A0D7E51E1566u, 0x77B020BAF9C81D18u,
    0x915E2486EF32CD60u, 0x0ACE1474DC1D122Fu, 0xB5B5ADA8AAFF80B8u,
    0x0D819992132456BBu, 0xE3231912D5BF60E6u, 0x10E1FFF697ED6C6Au,
    0x8DF5EFABC5979C8Fu, 0xCA8D3FFA1EF463C2u, 0xB1736B96B6FD83B3u,
    0xBD308FF8A6B17CB3u, 0xDDD0467C64BCE4A0u, 0xAC7CB3F6D05DDBDFu,
    0x8AA22C0DBEF60EE4u, 0x6BCDF07A423AA96Cu, 0xAD4AB7112EB3929Du,
    0x86C16C98D2C953C7u, 0xD89D64D57A607744u, 0xE871C7BF077BA8B8u,
    0x87625F056C7C4A8Bu, 0x11471CD764AD4973u, 0xA93AF6C6C79B5D2Du,
    0xD598E40D3DD89BD0u, 0xD389B47879823479u, 0x4AFF1D108D4EC2C4u,
    0x843610CB4BF160CBu, 0xCEDF722A585139BBu, 0xA54394FE1EEDB8FEu,
    0xC2974EB4EE658829u, 0xCE947A3DA6A9273Eu, 0x733D226229FEEA33u,
    0x811CCC668829B887u, 0x0806357D5A3F5260u, 0xA163FF802A3426A8u,
    0xCA07C2DCB0CF26F8u, 0xC9BCFF6034C13052u, 0xFC89B393DD02F0B6u,
    0xFC2C3F3841F17C67u, 0xBBAC2078D443ACE3u, 0x9D9BA7832936EDC0u,
    0xD54B944B84AA4C0Eu, 0xC5029163F384A931u, 0x0A9E795E65D4DF12u,
    0xF64335BCF065D37Du, 0x4D4617B5FF4A16D6u, 0x99EA0196163FA42Eu,
    0x504BCED1BF8E4E46u, 0xC06481FB9BCF8D39u, 0xE45EC2862F71E1D7u,
    0xF07DA27A82C37088u, 0x5D767327BB4E5A4Du, 0x964E858C91BA2655u,
    0x3A6A07F8D510F870u, 0xBBE226EFB628AFEAu, 0x890489F70A55368Cu,
    0xEADAB0ABA3B2DBE5u, 0x2B45AC74CCEA842Fu, 0x92C8AE6B464FC96Fu,
    0x3B0B8BC90012929Eu, 0xB77ADA0617E3BBCBu, 0x09CE6EBB40173745u,
    0xE55990879DDCAABDu, 0xCC420A6A101D0516u, 0x8F57FA54C2A9EAB6u,
    0x9FA946824A12232Eu, 0xB32DF8E9F3546564u, 0x47939822DC96ABFAu,
    0xDFF9772470297EBDu, 0x59787E2B93BC56F8u, 0x8BFBEA76C619EF36u,
    0x57EB4EDB3C55B65Bu, 0xAEFAE51477A06B03u, 0xEDE622920B6B23F2u,
    0xDAB99E59958885C4u, 0xE95FAB368E45ECEEu, 0x88B402F7FD75539Bu,
    0x11DBCB0218EBB415u, 0xAAE103B5FCD2A881u, 0xD652BDC29F26A11Au,
    0xD59944A37C0752A2u, 0x4BE76D3346F04960u, 0x857FCAE62D8493A5u,
    0x6F70A4400C562DDCu, 0xA6DFBD9FB8E5B88Eu, 0xCB4CCD500F6BB953u,
    0xD097AD07A71F26B2u, 0x7E2000A41346A7A8u, 0x825ECC24C873782Fu,
    0x8ED400668C0C28C9u, 0xA2F67F2DFA90563Bu, 0x728900802F0F32FBu,
    0xCBB41EF979346BCAu, 0x4F2B40A03AD2FFBAu, 0xFEA126B7D78186BCu,
    0xE2F610C84987BFA9u, 0x9F24B832E6B0F436u, 0x0DD9CA7D2DF4D7CAu,
    0xC6EDE63FA05D3143u, 0x91503D1C79720DBCu, 0xF8A95FCF88747D94u,
    0x75A44C6397CE912Bu, 0x9B69DBE1B548CE7Cu, 0xC986AFBE3EE11ABBu,
    0xC24452DA229B021Bu, 0xFBE85BADCE996169u, 0xF2D56790AB41C2A2u,
    0xFAE27299423FB9C4u, 0x97C560BA6B0919A5u, 0xDCCD879FC967D41Bu,
    0xBDB6B8E905CB600Fu, 0x5400E987BBC1C921u, 0xED246723473E3813u,
    0x290123E9AAB23B69u, 0x9436C0760C86E30Bu, 0xF9A0B6720AAF6522u,
    0xB94470938FA89BCEu, 0xF808E40E8D5B3E6Au, 0xE7958CB87392C2C2u,
    0xB60B1D1230B20E05u, 0x90BD77F3483BB9B9u, 0xB1C6F22B5E6F48C3u,
    0xB4ECD5F01A4AA828u, 0x1E38AEB6360B1AF4u, 0xE2280B6C20DD5232u,
    0x25C6DA63C38DE1B1u, 0x8D590723948A535Fu, 0x579C487E5A38AD0Fu,
    0xB0AF48EC79ACE837u, 0x2D835A9DF0C6D852u, 0xDCDB1B2798182244u,
    0xF8E431456CF88E66u, 0x8A08F0F8BF0F156Bu, 0x1B8E9ECB641B5900u,
    0xAC8B2D36EED2DAC5u, 0xE272467E3D222F40u, 0xD7ADF884AA879177u,
    0x5B0ED81DCC6ABB10u, 0x86CCBB52EA94BAEAu, 0x98E947129FC2B4EAu,
    0xA87FEA27A539E9A5u, 0x3F2398D747B36225u, 0xD29FE4B18E88640Eu,
    0x8EEC7F0D19A03AAEu, 0x83A3EEEEF9153E89u, 0x1953CF68300424ADu,
    0xA48CEAAAB75A8E2Bu, 0x5FA8C3423C052DD8u, 0xCDB02555653131B6u,
    0x3792F412CB06794Eu, 0x808E17555F3EBF11u, 0xE2BBD88BBEE40BD1u,
    0xA0B19D2AB70E6ED6u, 0x5B6ACEAEAE9D0EC5u, 0xC8DE047564D20A8Bu,
    0xF245825A5A445276u, 0xFB158592BE068D2Eu, 0xEED6E2F0F0D56713u,
    0x9CED737BB6C4183Du, 0x55464DD69685606Cu, 0xC428D05AA4751E4Cu,
    0xAA97E14C3C26B887u, 0xF53304714D9265DFu, 0xD53DD99F4B3066A9u,
    0x993FE2C6D07B7FABu, 0xE546A8038EFE402Au, 0xBF8FDB78849A5F96u,
    0xDE98520472BDD034u, 0xEF73D256A5C0F77Cu, 0x963E66858F6D4441u,
    0x95A8637627989AADu, 0xDDE7001379A44AA9u, 0xBB127C53B17EC159u,
    0x5560C018580D5D53u, 0xE9D71B689DDE71AFu, 0xAAB8F01E6E10B4A7u,
    0x9226712162AB070Du, 0xCAB3961304CA70E9u, 0xB6B00D69BB55C8D1u,
    0x3D607B97C5FD0D23u, 0xE45C10C42A2B3B05u, 0x8CB89A7DB77C506Bu,
    0x8EB98A7A9A5B04E3u, 0x77F3608E92ADB243u, 0xB267ED1940F1C61Cu,
    0x55F038B237591ED4u, 0xDF01E85F912E37A3u, 0x6B6C46DEC52F6689u,
    0x8B61313BBABCE2C6u, 0x2323AC4B3B3DA016u, 0xAE397D8AA96C1B77u,
    0xABEC975E0A0D081Bu, 0xD9C7DCED53C72255u, 0x96E7BD358C904A22u,
    0x881CEA14545C7575u, 0x7E50D64177DA2E55u, 0xAA242499697392D2u,
    0xDDE50BD1D5D0B9EAu, 0xD4AD2DBFC3D07787u, 0x955E4EC64B44E865u,
    0x84EC3C97DA624AB4u, 0xBD5AF13BEF0B113Fu, 0xA6274BBDD0FADD61u,
    0xECB1AD8AEACDD58Fu, 0xCFB11EAD453994BAu, 0x67DE18EDA5814AF3u,
    0x81CEB32C4B43FCF4u, 0x80EACF948770CED8u, 0xA2425FF75E14FC31u,
    0xA1258379A94D028Eu, 0xCAD2F7F5359A3B3Eu, 0x096EE45813A04331u,
    0xFD87B5F28300CA0Du, 0x8BCA9D6E188853FDu, 0x9E74D1B791E07E48u,
    0x775EA264CF55347Eu, 0xC612062576589DDAu, 0x95364AFE032A819Eu,
    0xF79687AED3EEC551u, 0x3A83DDBD83F52205u, 0x9ABE14CD44753B52u,
    0xC4926A9672793543u, 0xC16D9A0095928A27u, 0x75B7053C0F178294u,
    0xF1C90080BAF72CB1u, 0x5324C68B12DD6339u, 0x971DA05074DA7BEEu,
    0xD3F6FC16EBCA5E04u, 0xBCE5086492111AEAu, 0x88F4BB1CA6BCF585u,
    0xEC1E4A7DB69561A5u, 0x2B31E9E3D06C32E6u, 0x9392EE8E921D5D07u,
    0x3AFF322E62439FD0u, 0xB877AA3236A4B449u, 0x09BEFEB9FAD487C3u,
    0xE69594BEC44DE15Bu, 0x4C2EBE687989A9B4u, 0x901D7CF73AB0ACD9u,
    0x0F9D37014BF60A11u, 0xB424DC35095CD80Fu, 0x538484C19EF38C95u,
    0xE12E13424BB40E13u, 0x2865A5F206B06FBAu, 0x8CBCCC096F5088CBu,
    0xF93F87B7442E45D4u, 0xAFEBFF0BCB24AAFEu, 0xF78F69A51539D749u,
    0xDBE6FECEBDEDD5BEu, 0xB573440E5A884D1Cu, 0x89705F4136B4A597u,
    0x31680A88F8953031u, 0xABCC77118461CEFCu, 0xFDC20D2B36BA7C3Eu,
    0xD6BF94D5E57A42BCu, 0x3D32907604691B4Du, 0x8637BD05AF6C69B5u,
    0xA63F9A49C2C1B110u, 0xA7C5AC471B478423u, 0x0FCF80DC33721D54u,
    0xD1B71758E219652Bu, 0xD3C36113404EA4A9u, 0x83126E978D4FDF3Bu,
    0x645A1CAC083126EAu, 0xA3D70A3D70A3D70Au, 0x3D70A3D70A3D70A4u,
    0xCCCCCCCCCCCCCCCCu, 0xCCCCCCCCCCCCCCCDu, 0x8000000000000000u,
    0x0000000000000001u, 0xA000000000000000u, 0x0000000000000001u,
    0xC800000000000000u, 0x0000000000000001u, 0xFA00000000000000u,
    0x0000000000000001u, 0x9C40000000000000u, 0x0000000000000001u,
    0xC350000000000000u, 0x0000000000000001u, 0xF424000000000000u,
    0x0000000000000001u, 0x9896800000000000u, 0x0000000000000001u,
    0xBEBC200000000000u, 0x0000000000000001u, 0xEE6B280000000000u,
    0x0000000000000001u, 0x9502F90000000000u, 0x0000000000000001u,
    0xBA43B74000000000u, 0x0000000000000001u, 0xE8D4A51000000000u,
    0x0000000000000001u, 0x9184E72A00000000u, 0x0000000000000001u,
    0xB5E620F480000000u, 0x0000000000000001u, 0xE35FA931A0000000u,
    0x0000000000000001u, 0x8E1BC9BF04000000u, 0x0000000000000001u,
    0xB1A2BC2EC5000000u, 0x0000000000000001u, 0xDE0B6B3A76400000u,
    0x0000000000000001u, 0x8AC7230489E80000u, 0x0000000000000001u,
    0xAD78EBC5AC620000u, 0x0000000000000001u, 0xD8D726B7177A8000u,
    0x0000000000000001u, 0x878678326EAC9000u, 0x0000000000000001u,
    0xA968163F0A57B400u, 0x0000000000000001u, 0xD3C21BCECCEDA100u,
    0x0000000000000001u, 0x84595161401484A0u, 0x0000000000000001u,
    0xA56FA5B99019A5C8u, 0x0000000000000001u, 0xCECB8F27F4200F3Au,
    0x0000000000000001u, 0x813F3978F8940984u, 0x4000000000000001u,
    0xA18F07D736B90BE5u, 0x5000000000000001u, 0xC9F2C9CD04674EDEu,
    0xA400000000000001u, 0xFC6F7C4045812296u, 0x4D00000000000001u,
    0x9DC5ADA82B70B59Du, 0xF020000000000001u, 0xC5371912364CE305u,
    0x6C28000000000001u, 0xF684DF56C3E01BC6u, 0xC732000000000001u,
    0x9A130B963A6C115Cu, 0x3C7F400000000001u, 0xC097CE7BC90715B3u,
    0x4B9F100000000001u, 0xF0BDC21ABB48DB20u, 0x1E86D40000000001u,
    0x96769950B50D88F4u, 0x1314448000000001u, 0xBC143FA4E250EB31u,
    0x17D955A000000001u, 0xEB194F8E1AE525FDu, 0x5DCFAB0800000001u,
    0x92EFD1B8D0CF37BEu, 0x5AA1CAE500000001u, 0xB7ABC627050305ADu,
    0xF14A3D9E40000001u, 0xE596B7B0C643C719u, 0x6D9CCD05D0000001u,
    0x8F7E32CE7BEA5C6Fu, 0xE4820023A2000001u, 0xB35DBF821AE4F38Bu,
    0xDDA2802C8A800001u, 0xE0352F62A19E306Eu, 0xD50B2037AD200001u,
    0x8C213D9DA502DE45u, 0x4526F422CC340001u, 0xAF298D050E4395D6u,
    0x9670B12B7F410001u, 0xDAF3F04651D47B4Cu, 0x3C0CDD765F114001u,
    0x88D8762BF324CD0Fu, 0xA5880A69FB6AC801u, 0xAB0E93B6EFEE0053u,
    0x8EEA0D047A457A01u, 0xD5D238A4ABE98068u, 0x72A4904598D6D881u,
    0x85A36366EB71F041u, 0x47A6DA2B7F864751u, 0xA70C3C40A64E6C51u,
    0x999090B65F67D925u, 0xD0CF4B50CFE20765u, 0xFFF4B4E3F741CF6Eu,
    0x82818F1281ED449Fu, 0xBFF8F10E7A8921A5u, 0xA321F2D7226895C7u,
    0xAFF72D52192B6A0Eu, 0xCBEA6F8CEB02BB39u, 0x9BF4F8A69F764491u,
    0xFEE50B7025C36A08u, 0x02F236D04753D5B5u, 0x9F4F2726179A2245u,
    0x01D762422C946591u, 0xC722F0EF9D80AAD6u, 0x424D3AD2B7B97EF6u,
    0xF8EBAD2B84E0D58Bu, 0xD2E0898765A7DEB3u, 0x9B934C3B330C8577u,
    0x63CC55F49F88EB30u, 0xC2781F49FFCFA6D5u, 0x3CBF6B71C76B25FCu,
    0xF316271C7FC3908Au, 0x8BEF464E3945EF7Bu, 0x97EDD871CFDA3A56u,
    0x97758BF0E3CBB5ADu, 0xBDE94E8E43D0C8ECu, 0x3D52EEED1CBEA318u,
    0xED63A231D4C4FB27u, 0x4CA7AAA863EE4BDEu, 0x945E455F24FB1CF8u,
    0x8FE8CAA93E74EF6Bu, 0xB975D6B6EE39E436u, 0xB3E2FD538E122B45u,
    0xE7D34C64A9C85D44u, 0x60DBBCA87196B617u, 0x90E40FBEEA1D3A4Au,
    0xBC8955E946FE31CEu, 0xB51D13AEA4A488DDu, 0x6BABAB6398BDBE42u,
    0xE264589A4DCDAB14u, 0xC696963C7EED2DD2u, 0x8D7EB76070A08AECu,
    0xFC1E1DE5CF543CA3u, 0xB0DE65388CC8ADA8u, 0x3B25A55F43294BCCu,
    0xDD15FE86AFFAD912u, 0x49EF0EB713F39EBFu, 0x8A2DBF142DFCC7ABu,
    0x6E3569326C784338u, 0xACB92ED9397BF996u, 0x49C2C37F07965405u,
    0xD7E77A8F87DAF7FBu, 0xDC33745EC97BE907u, 0x86F0AC99B4E8DAFDu,
    0x69A028BB3DED71A4u, 0xA8ACD7C0222311BCu, 0xC40832EA0D68CE0Du,
    0xD2D80DB02AABD62Bu, 0xF50A3FA490C30191u, 0x83C7088E1AAB65DBu,
    0x792667C6DA79E0FBu, 0xA4B8CAB1A1563F52u, 0x577001B891185939u,
    0xCDE6FD5E09ABCF26u, 0xED4C0226B55E6F87u, 0x80B05E5AC60B6178u,
    0x544F8158315B05B5u, 0xA0DC75F1778E39D6u, 0x696361AE3DB1C722u,
    0xC913936DD571C84Cu, 0x03BC3A19CD1E38EAu, 0xFB5878494ACE3A5Fu,
    0x04AB48A04065C724u, 0x9D174B2DCEC0E47Bu, 0x62EB0D64283F9C77u,
    0xC45D1DF942711D9Au, 0x3BA5D0BD324F8395u, 0xF5746577930D6500u,
    0xCA8F44EC7EE3647Au, 0x9968BF6ABBE85F20u, 0x7E998B13CF4E1ECCu,
    0xBFC2EF456AE276E8u, 0x9E3FEDD8C321A67Fu, 0xEFB3AB16C59B14A2u,
    0xC5CFE94EF3EA101Fu, 0x95D04AEE3B80ECE5u, 0xBBA1F1D158724A13u,
    0xBB445DA9CA61281Fu, 0x2A8A6E45AE8EDC98u, 0xEA1575143CF97226u,
    0xF52D09D71A3293BEu, 0x924D692CA61BE758u, 0x593C2626705F9C57u,
    0xB6E0C377CFA2E12Eu, 0x6F8B2FB00C77836Du, 0xE498F455C38B997Au,
    0x0B6DFB9C0F956448u, 0x8EDF98B59A373FECu, 0x4724BD4189BD5EADu,
    0xB2977EE300C50FE7u, 0x58EDEC91EC2CB658u, 0xDF3D5E9BC0F653E1u,
    0x2F2967B66737E3EEu, 0x8B865B215899F46Cu, 0xBD79E0D20082EE75u,
    0xAE67F1E9AEC07187u, 0xECD8590680A3AA12u, 0xDA01EE641A708DE9u,
    0xE80E6F4820CC9496u, 0x884134FE908658B2u, 0x3109058D147FDCDEu,
    0xAA51823E34A7EEDEu, 0xBD4B46F0599FD416u, 0xD4E5E2CDC1D1EA96u,
    0x6C9E18AC7007C91Bu, 0x850FADC09923329Eu, 0x03E2CF6BC604DDB1u,
    0xA6539930BF6BFF45u, 0x84DB8346B786151Du, 0xCFE87F7CEF46FF16u,
    0xE612641865679A64u, 0x81F14FAE158C5F6Eu, 0x4FCB7E8F3F60C07Fu,
    0xA26DA3999AEF7749u, 0xE3BE5E330F38F09Eu, 0xCB090C8001AB551Cu,
    0x5CADF5BFD3072CC6u, 0xFDCB4FA002162A63u, 0x73D9732FC7C8F7F7u,
    0x9E9F11C4014DDA7Eu, 0x2867E7FDDCDD9AFBu, 0xC646D63501A1511Du,
    0xB281E1FD541501B9u, 0xF7D88BC24209A565u, 0x1F225A7CA91A4227u,
    0x9AE757596946075Fu, 0x3375788DE9B06959u, 0xC1A12D2FC3978937u,
    0x0052D6B1641C83AFu, 0xF209787BB47D6B84u, 0xC0678C5DBD23A49Bu,
    0x9745EB4D50CE6332u, 0xF840B7BA963646E1u, 0xBD176620A501FBFFu,
    0xB650E5A93BC3D899u, 0xEC5D3FA8CE427AFFu, 0xA3E51F138AB4CEBFu,
    0x93BA47C980E98CDFu, 0xC66F336C36B10138u, 0xB8A8D9BBE123F017u,
    0xB80B0047445D4185u, 0xE6D3102AD96CEC1Du, 0xA60DC059157491E6u,
    0x9043EA1AC7E41392u, 0x87C89837AD68DB30u, 0xB454E4A179DD1877u,
    0x29BABE4598C311FCu, 0xE16A1DC9D8545E94u, 0xF4296DD6FEF3D67Bu,
    0x8CE2529E2734BB1Du, 0x1899E4A65F58660Du, 0xB01AE745B101E9E4u,
    0x5EC05DCFF72E7F90u, 0xDC21A1171D42645Du, 0x76707543F4FA1F74u,
    0x899504AE72497EBAu, 0x6A06494A791C53A9u, 0xABFA45DA0EDBDE69u,
    0x0487DB9D17636893u, 0xD6F8D7509292D603u, 0x45A9D2845D3C42B7u,
    0x865B86925B9BC5C2u, 0x0B8A2392BA45A9B3u, 0xA7F26836F282B732u,
    0x8E6CAC7768D7141Fu, 0xD1EF0244AF2364FFu, 0x3207D795430CD927u,
    0x8335616AED761F1Fu, 0x7F44E6BD49E807B9u, 0xA402B9C5A8D3A6E7u,
    0x5F16206C9C6209A7u, 0xCD036837130890A1u, 0x36DBA887C37A8C10u,
    0x802221226BE55A64u, 0xC2494954DA2C978Au, 0xA02AA96B06DEB0FDu,
    0xF2DB9BAA10B7BD6Du, 0xC83553C5C8965D3Du, 0x6F92829494E5ACC8u,
    0xFA42A8B73ABBF48Cu, 0xCB772339BA1F17FAu, 0x9C69A97284B578D7u,
    0xFF2A760414536EFCu, 0xC38413CF25E2D70Du, 0xFEF5138519684ABBu,
    0xF46518C2EF5B8CD1u, 0x7EB258665FC25D6Au, 0x98BF2F79D5993802u,
    0xEF2F773FFBD97A62u, 0xBEEEFB584AFF8603u, 0xAAFB550FFACFD8FBu,
    0xEEAABA2E5DBF6784u, 0x95BA2A53F983CF39u, 0x952AB45CFA97A0B2u,
    0xDD945A747BF26184u, 0xBA756174393D88DFu, 0x94F971119AEEF9E5u,
    0xE912B9D1478CEB17u, 0x7A37CD5601AAB85Eu, 0x91ABB422CCB812EEu,
    0xAC62E055C10AB33Bu, 0xB616A12B7FE617AAu, 0x577B986B314D600Au,
    0xE39C49765FDF9D94u, 0xED5A7E85FDA0B80Cu, 0x8E41ADE9FBEBC27Du,
    0x14588F13BE847308u, 0xB1D219647AE6B31Cu, 0x596EB2D8AE258FC9u,
    0xDE469FBD99A05FE3u, 0x6FCA5F8ED9AEF3BCu, 0x8AEC23D680043BEEu,
    0x25DE7BB9480D5855u, 0xADA72CCC20054AE9u, 0xAF561AA79A10AE6Bu,
    0xD910F7FF28069DA4u, 0x1B2BA1518094DA05u, 0x87AA9AFF79042286u,
    0x90FB44D2F05D0843u, 0xA99541BF57452B28u, 0x353A1607AC744A54u,
    0xD3FA922F2D1675F2u, 0x42889B8997915CE9u, 0x847C9B5D7C2E09B7u,
    0x69956135FEBADA12u, 0xA59BC234DB398C25u, 0x43FAB9837E699096u,
    0xCF02B2C21207EF2Eu, 0x94F967E45E03F4BCu, 0x8161AFB94B44F57Du,
    0x1D1BE0EEBAC278F6u, 0xA1BA1BA79E1632DCu, 0x6462D92A69731733u,
    0xCA28A291859BBF93u, 0x7D7B8F7503CFDCFFu, 0xFCB2CB35E702AF78u,
    0x5CDA735244C3D43Fu, 0x9DEFBF01B061ADABu, 0x3A0888136AFA64A8u,
    0xC56BAEC21C7A1916u, 0x088AAA1845B8FDD1u, 0xF6C69A72A3989F5Bu,
    0x8AAD549E57273D46u, 0x9A3C2087A63F6399u, 0x36AC54E2F678864Cu,
    0xC0CB28A98FCF3C7Fu, 0x84576A1BB416A7DEu, 0xF0FDF2D3F3C30B9Fu,
    0x656D44A2A11C51D6u, 0x969EB7C47859E743u, 0x9F644AE5A4B1B326u,
    0xBC4665B596706114u, 0x873D5D9F0DDE1FEFu, 0xEB57FF22FC0C7959u,
    0xA90CB506D155A7EBu, 0x9316FF75DD87CBD8u, 0x09A7F12442D588F3u,
    0xB7DCBF5354E9BECEu, 0x0C11ED6D538AEB30u, 0xE5D3EF282A242E81u,
    0x8F1668C8A86DA5FBu, 0x8FA475791A569D10u, 0xF96E017D694487BDu,
    0xB38D92D760EC4455u, 0x37C981DCC395A9ADu, 0xE070F78D3927556Au,
    0x85BBE253F47B1418u, 0x8C469AB843B89562u, 0x93956D7478CCEC8Fu,
    0xAF58416654A6BABBu, 0x387AC8D1970027B3u, 0xDB2E51BFE9D0696Au,
    0x06997B05FCC0319Fu, 0x88FCF317F22241E2u, 0x441FECE3BDF81F04u,
    0xAB3C2FDDEEAAD25Au, 0xD527E81CAD7626C4u, 0xD60B3BD56A5586F1u,
    0x8A71E223D8D3B075u, 0x85C7056562757456u, 0xF6872D5667844E4Au,
    0xA738C6BEBB12D16Cu, 0xB428F8AC016561DCu, 0xD106F86E69D785C7u,
    0xE13336D701BEBA53u, 0x82A45B450226B39Cu, 0xECC0024661173474u,
    0xA34D721642B06084u, 0x27F002D7F95D0191u, 0xCC20CE9BD35C78A5u,
    0x31EC038DF7B441F5u, 0xFF290242C83396CEu, 0x7E67047175A15272u,
    0x9F79A169BD203E41u, 0x0F0062C6E984D387u, 0xC75809C42C684DD1u,
    0x52C07B78A3E60869u, 0xF92E0C3537826145u, 0xA7709A56CCDF8A83u,
    0x9BBCC7A142B17CCBu, 0x88A66076400BB692u, 0xC2ABF989935DDBFEu,
    0x6ACFF893D00EA436u, 0xF356F7EBF83552FEu, 0x0583F6B8C4124D44u,
    0x98165AF37B2153DEu, 0xC3727A337A8B704Bu, 0xBE1BF1B059E9A8D6u,
    0x744F18C0592E4C5Du, 0xEDA2EE1C7064130Cu, 0x1162DEF06F79DF74u,
    0x9485D4D1C63E8BE7u, 0x8ADDCB5645AC2BA9u, 0xB9A74A0637CE2EE1u,
    0x6D953E2BD7173693u, 0xE8111C87C5C1BA99u, 0xC8FA8DB6CCDD0438u,
    0x910AB1D4DB9914A0u, 0x1D9C9892400A22A3u, 0xB54D5E4A127F59C8u,
    0x2503BEB6D00CAB4Cu, 0xE2A0B5DC971F303Au, 0x2E44AE64840FD61Eu,
    0x8DA471A9DE737E24u, 0x5CEAECFED289E5D3u, 0xB10D8E1456105DADu,
    0x7425A83E872C5F48u, 0xDD50F1996B947518u, 0xD12F124E28F7771Au,
    0x8A5296FFE33CC92Fu, 0x82BD6B70D99AAA70u, 0xACE73CBFDC0BFB7Bu,
    0x636CC64D1001550Cu, 0xD8210BEFD30EFA5Au, 0x3C47F7E05401AA4Fu,
    0x8714A775E3E95C78u, 0x65ACFAEC34810A72u, 0xA8D9D1535CE3B396u,
    0x7F1839A741A14D0Eu, 0xD31045A8341CA07Cu, 0x1EDE48111209A051u,
    0x83EA2B892091E44Du, 0x934AED0AAB460433u, 0xA4E4B66B68B65D60u,
    0xF81DA84D56178540u, 0xCE1DE40642E3F4B9u, 0x36251260AB9D668Fu,
    0x80D2AE83E9CE78F3u, 0xC1D72B7C6B42601Au, 0xA1075A24E4421730u,
    0xB24CF65B8612F820u, 0xC94930AE1D529CFCu, 0xDEE033F26797B628u,
    0xFB9B7CD9A4A7443Cu, 0x169840EF017DA3B2u, 0x9D412E0806E88AA5u,
    0x8E1F289560EE864Fu, 0xC491798A08A2AD4Eu, 0xF1A6F2BAB92A27E3u,
    0xF5B5D7EC8ACB58A2u, 0xAE10AF696774B1DCu, 0x9991A6F3D6BF1765u,
    0xACCA6DA1E0A8EF2Au, 0xBFF610B0CC6EDD3Fu, 0x17FD090A58D32AF4u,
    0xEFF394DCFF8A948Eu, 0xDDFC4B4CEF07F5B1u, 0x95F83D0A1FB69CD9u,
    0x4ABDAF101564F98Fu, 0xBB764C4CA7A4440Fu, 0x9D6D1AD41ABE37F2u,
    0xEA53DF5FD18D5513u, 0x84C86189216DC5EEu, 0x92746B9BE2F8552Cu,
    0x32FD3CF5B4E49BB5u, 0xB7118682DBB66A77u, 0x3FBC8C33221DC2A2u,
    0xE4D5E82392A40515u, 0x0FABAF3FEAA5334Bu, 0x8F05B1163BA6832Du,
    0x29CB4D87F2A7400Fu, 0xB2C71D5BCA9023F8u, 0x743E20E9EF511013u,
    0xDF78E4B2BD342CF6u, 0x914DA9246B255417u, 0x8BAB8EEFB6409C1Au,
    0x1AD089B6C2F7548Fu, 0xAE9672ABA3D0C320u, 0xA184AC2473B529B2u,
    0xDA3C0F568CC4F3E8u, 0xC9E5D72D90A2741Fu, 0x8865899617FB1871u,
    0x7E2FA67C7A658893u, 0xAA7EEBFB9DF9DE8Du, 0xDDBB901B98FEEAB8u,
    0xD51EA6FA85785631u, 0x552A74227F3EA566u, 0x8533285C936B35DEu,
    0xD53A88958F872760u, 0xA67FF273B8460356u, 0x8A892ABAF368F138u,
    0xD01FEF10A657842Cu, 0x2D2B7569B0432D86u, 0x8213F56A67F6B29Bu,
    0x9C3B29620E29FC74u, 0xA298F2C501F45F42u, 0x8349F3BA91B47B90u,
    0xCB3F2F7642717713u, 0x241C70A936219A74u, 0xFE0EFB53D30DD4D7u,
    0xED238CD383AA0111u, 0x9EC95D1463E8A506u, 0xF4363804324A40ABu,
    0xC67BB4597CE2CE48u, 0xB143C6053EDCD0D6u, 0xF81AA16FDC1B81DAu,
    0xDD94B7868E94050Bu, 0x9B10A4E5E9913128u, 0xCA7CF2B4191C8327u,
    0xC1D4CE1F63F57D72u, 0xFD1C2F611F63A3F1u, 0xF24A01A73CF2DCCFu,
    0xBC633B39673C8CEDu, 0x976E41088617CA01u, 0xD5BE0503E085D814u,
    0xBD49D14AA79DBC82u, 0x4B2D8644D8A74E19u, 0xEC9C459D51852BA2u,
    0xDDF8E7D60ED1219Fu, 0x93E1AB8252F33B45u, 0xCABB90E5C942B504u,
    0xB8DA1662E7B00A17u, 0x3D6A751F3B936244u, 0xE7109BFBA19C0C9Du,
    0x0CC512670A783AD5u, 0x906A617D450187E2u, 0x27FB2B80668B24C6u,
    0xB484F9DC9641E9DAu, 0xB1F9F660802DEDF7u, 0xE1A63853BBD26451u,
    0x5E7873F8A0396974u, 0x8D07E33455637EB2u, 0xDB0B487B6423E1E9u,
    0xB049DC016ABC5E5Fu, 0x91CE1A9A3D2CDA63u, 0xDC5C5301C56B75F7u,
    0x7641A140CC7810FCu, 0x89B9B3E11B6329BAu, 0xA9E904C87FCB0A9Eu,
    0xAC2820D9623BF429u, 0x546345FA9FBDCD45u, 0xD732290FBACAF133u,
    0xA97C177947AD4096u, 0x867F59A9D4BED6C0u, 0x49ED8EABCCCC485Eu,
    0xA81F301449EE8C70u, 0x5C68F256BFFF5A75u, 0xD226FC195C6A2F8Cu,
    0x73832EEC6FFF3112u, 0x83585D8FD9C25DB7u, 0xC831FD53C5FF7EACu,
    0xA42E74F3D032F525u, 0xBA3E7CA8B77F5E56u, 0xCD3A1230C43FB26Fu,
    0x28CE1BD2E55F35ECu, 0x80444B5E7AA7CF85u, 0x7980D163CF5B81B4u,
    0xA0555E361951C366u, 0xD7E105BCC3326220u, 0xC86AB5C39FA63440u,
    0x8DD9472BF3FEFAA8u, 0xFA856334878FC150u, 0xB14F98F6F0FEB952u,
    0x9C935E00D4B9D8D2u, 0x6ED1BF9A569F33D4u, 0xC3B8358109E84F07u,
    0x0A862F80EC4700C9u, 0xF4A642E14C6262C8u, 0xCD27BB612758C0FBu,
    0x98E7E9CCCFBD7DBDu, 0x8038D51CB897789Du, 0xBF21E44003ACDD2Cu,
    0xE0470A63E6BD56C4u, 0xEEEA5D5004981478u, 0x1858CCFCE06CAC75u,
    0x95527A5202DF0CCBu, 0x0F37801E0C43EBC9u, 0xBAA718E68396CFFDu,
    0xD30560258F54E6BBu, 0xE950DF20247C83FDu, 0x47C6B82EF32A206Au,
    0x91D28B7416CDD27Eu, 0x4CDC331D57FA5442u, 0xB6472E511C81471Du,
    0xE0133FE4ADF8E953u, 0xE3D8F9E563A198E5u, 0x58180FDDD97723A7u,
    0x8E679C2F5E44FF8Fu, 0x570F09EAA7EA7649u, 0xB201833B35D63F73u,
    0x2CD2CC6551E513DBu, 0xDE81E40A034BCF4Fu, 0xF8077F7EA65E58D2u,
    0x8B112E86420F6191u, 0xFB04AFAF27FAF783u, 0xADD57A27D29339F6u,
    0x79C5DB9AF1F9B564u, 0xD94AD8B1C7380874u, 0x18375281AE7822BDu,
    0x87CEC76F1C830548u, 0x8F2293910D0B15B6u, 0xA9C2794AE3A3C69Au,
    0xB2EB3875504DDB23u, 0xD433179D9C8CB841u, 0x5FA60692A46151ECu,
    0x849FEEC281D7F328u, 0xDBC7C41BA6BCD334u, 0xA5C7EA73224DEFF3u,
    0x12B9B522906C0801u, 0xCF39E50FEAE16BEFu, 0xD768226B34870A01u,
    0x81842F29F2CCE375u, 0xE6A1158300D46641u, 0xA1E53AF46F801C53u,
    0x60495AE3C1097FD1u, 0xCA5E89B18B602368u, 0x385BB19CB14BDFC5u,
    0xFCF62C1DEE382C42u, 0x46729E03DD9ED7B6u, 0x9E19DB92B4E31BA9u,
    0x6C07A2C26A8346D2u, 0xC5A05277621BE293u, 0xC7098B7305241886u,
    0xF70867153AA2DB38u, 0xB8CBEE4FC66D1EA8u,
};

typedef struct fmt_u128 {
    uint64_t hi, lo;
} fmt_u128;

static fmt_u128 fmt_mul64(uint64_t a, uint64_t b)
{
    uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32;
    uint64_t b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    fmt_u128 r;
    r.lo = mid << 32 | (p00 & 0xFFFFFFFFu);
    r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return r;
}

/* floor(x / 2^s) without right-shifting a negative number */
static int fmt_floor_shift(int64_t x, int s)
{
    return (int)(x >= 0 ? x >> s : -((-x - 1) >> s) - 1);
}

static int fmt_log2_pow10(int e)      /* floor(e log2 10), |e| <= 1233 */
{
    return fmt_floor_shift((int64_t)e * 1741647, 19);
}

static int fmt_log10_pow2(int e)      /* floor(e log10 2), |e| <= 2620 */
{
    return fmt_floor_shift((int64_t)e * 1262611, 22);
}

static int fmt_log10_3q_pow2(int e)   /* floor(log10(3/4 2^e)) */
{
    return fmt_floor_shift((int64_t)e * 1262611 - 524031, 22);
}

/* Round to odd of cp * g / 2^128 (Schubfach's key step), from the exact
** 192-bit product cp * g = y * 2^64 + x (y = g[0] * cp, x = g[1] * cp):
** its top 64 bits, or'ed with 1 when the 64 below them exceed 1. */
static uint64_t fmt_rop(fmt_u128 y, fmt_u128 x)
{
    y.lo += x.hi;
    y.hi += y.lo < x.hi;
    return y.hi | (y.lo > 1);
}

static uint64_t fmt_round_odd_d(const uint64_t *g, uint64_t cp)
{
    return fmt_rop(fmt_mul64(g[0], cp), fmt_mul64(g[1], cp));
}

/* a * 2^j as 128 bits, 0 <= j < 64 */
static fmt_u128 fmt_shl(uint64_t a, int j)
{
    fmt_u128 r;
    r.hi = a >> (63 - j) >> 1;  /* two steps: j == 0 is defined */
    r.lo = a << j;
    return r;
}

static fmt_u128 fmt_add(fmt_u128 a, fmt_u128 b)
{
    a.lo += b.lo;
    a.hi += b.hi + (a.lo < b.lo);
    return a;
}

static fmt_u128 fmt_sub(fmt_u128 a, fmt_u128 b)
{
    a.hi -= b.hi + (a.lo < b.lo);
    a.lo -= b.lo;
    return a;
}

static uint64_t fmt_round_odd_f(uint64_t g, uint64_t cp)
{
    uint64_t b01 = (g & 0xFFFFFFFFu) * cp, b11 = (g >> 32) * cp;
    uint64_t hi = b11 + (b01 >> 32);
    return (hi >> 32) | ((hi & 0xFFFFFFFFu) > 1);
}

/* The choice among the candidates at 10^(k+1) and 10^k, from the three
** scaled interval points (vbl, vb, vbr = 4 * value / 10^k, rounded to
** odd); even: the interval's ends belong to it (round half to even). */
static uint64_t fmt_pick(uint64_t vbl, uint64_t vb, uint64_t vbr, int even,
                         int *k)
{
    uint64_t lower = vbl + !even, upper = vbr - !even, s = vb / 4;
    int u_in, w_in;
    if (s >= 10) {
        uint64_t sp = s / 10;
        u_in = lower <= 40 * sp;
        w_in = 40 * sp + 40 <= upper;
        if (u_in != w_in) {
            *k += 1;
            return sp + (uint64_t)w_in;
        }
    }
    u_in = lower <= 4 * s;
    w_in = 4 * s + 4 <= upper;
    if (u_in != w_in)
        return s + (uint64_t)w_in;
    return s + (vb > 4 * s + 2 || (vb == 4 * s + 2 && (s & 1)));
}

/* fmt_pick without a branch on the data: both candidates are judged and
** the answer selected, bitwise (the choice is a coin toss for random
** values, so a branch would be mispredicted half the time). */
static uint64_t fmt_pick_fast(uint64_t vbl, uint64_t vb, uint64_t vbr,
                              int even, int *k)
{
    uint64_t lower = vbl + !even, upper = vbr - !even, s = vb / 4;
    uint64_t sp = s / 10, r0;
    int u1 = lower <= 40 * sp, w1 = 40 * sp + 40 <= upper;
    int u0 = lower <= 4 * s, w0 = 4 * s + 4 <= upper;
    int first = (s >= 10) & (u1 ^ w1);
    int up = (vb > 4 * s + 2) | ((vb == 4 * s + 2) & (int)(s & 1));
    r0 = s + (uint64_t)((u0 ^ w0) ? w0 : up);
    *k += first;
    return first ? sp + (uint64_t)w1 : r0;
}

/* The three round-to-odd products of Schubfach for binary64 from two
** multiplications: the interval ends' cp differ from the value's, cb, by
** a power of two (2^jl below, 2^jr above), so their exact products are
** the value's plus or minus g shifted.  Bit for bit what three calls of
** fmt_round_odd_d give (tests/test_json.c compares them). */
static void fmt_rop3_d(const uint64_t *g, uint64_t cb, int jl, int jr,
                       uint64_t v[3])
{
    fmt_u128 y = fmt_mul64(g[0], cb), x = fmt_mul64(g[1], cb);
    v[0] = fmt_rop(fmt_sub(y, fmt_shl(g[0], jl)),
                   fmt_sub(x, fmt_shl(g[1], jl)));
    v[1] = fmt_rop(y, x);
    v[2] = fmt_rop(fmt_add(y, fmt_shl(g[0], jr)),
                   fmt_add(x, fmt_shl(g[1], jr)));
}

/* |v| = c * 2^q as the shortest s * 10^k (v finite, nonzero).  fast
** takes fmt_rop3_d's two multiplications instead of three calls of
** fmt_round_odd_d, the plain form of the step. */
static uint64_t fmt_shortest_d(uint64_t bits, int *k, int fast)
{
    uint64_t r[3];
    uint64_t frac = bits & (((uint64_t)1 << 52) - 1), c;
    int be = (int)(bits >> 52 & 0x7FF), q, closer, h;
    const uint64_t *g;
    c = be ? frac | (uint64_t)1 << 52 : frac;
    q = be ? be - 1075 : -1074;
    *k = 0;
    if (be && q <= 0 && q > -53 && (c & (((uint64_t)1 << -q) - 1)) == 0)
        return c >> -q;                     /* an integer below 2^53 */
    closer = frac == 0 && be > 1;
    *k = closer ? fmt_log10_3q_pow2(q) : fmt_log10_pow2(q);
    h = q + fmt_log2_pow10(-*k) + 1;
    g = &fmt_pow10_d[2 * (-*k - FMT_D_KMIN)];
    if (fast) {         /* Schubfach: 1 <= h <= 4, so the shifts are < 64 */
        fmt_rop3_d(g, 4 * c << h, closer ? h : h + 1, h + 1, r);
    } else {
        r[0] = fmt_round_odd_d(g, (4 * c - 2 + (uint64_t)closer) << h);
        r[1] = fmt_round_odd_d(g, 4 * c << h);
        r[2] = fmt_round_odd_d(g, (4 * c + 2) << h);
    }
    return fast ? fmt_pick_fast(r[0], r[1], r[2], !(c & 1), k)
                : fmt_pick(r[0], r[1], r[2], !(c & 1), k);
}

static uint64_t fmt_shortest_f(uint32_t bits, int *k)
{
    uint32_t frac = bits & ((1u << 23) - 1), c;
    int be = (int)(bits >> 23 & 0xFF), q, closer, h;
    uint64_t g;
    c = be ? frac | 1u << 23 : frac;
    q = be ? be - 150 : -149;
    *k = 0;
    if (be && q <= 0 && q > -24 && (c & ((1u << -q) - 1)) == 0)
        return c >> -q;
    closer = frac == 0 && be > 1;
    *k = closer ? fmt_log10_3q_pow2(q) : fmt_log10_pow2(q);
    h = q + fmt_log2_pow10(-*k) + 1;
    g = fmt_pow10_f[-*k - FMT_F_KMIN];
    return fmt_pick_fast(fmt_round_odd_f(g, ((uint64_t)4 * c - 2 + closer)
                                            << h),
                    fmt_round_odd_f(g, (uint64_t)4 * c << h),
                    fmt_round_odd_f(g, ((uint64_t)4 * c + 2) << h),
                    !(c & 1), k);
}

static const char fmt_pairs[] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The number of decimal digits of s, by halving the range. */
static int fmt_ndigits(uint64_t s)
{
    int n = 1;
    if (s >= (uint64_t)10000000000000000u) {
        s /= (uint64_t)10000000000000000u;
        n += 16;
    }
    if (s >= 100000000u) {
        s /= 100000000u;
        n += 8;
    }
    if (s >= 10000u) {
        s /= 10000u;
        n += 4;
    }
    if (s >= 100u) {
        s /= 100u;
        n += 2;
    }
    return n + (s >= 10u);
}

/* s (nonzero) without its trailing zeros, k counting them: eight, four,
** two and one at a time (a double's shortest s has at most 17 digits,
** an integer below 2^53 up to 15 zeros). */
static uint64_t fmt_trim(uint64_t s, int *k)
{
    while (s % 100000000u == 0) {
        s /= 100000000u;
        *k += 8;
    }
    if (s % 10000u == 0) {
        s /= 10000u;
        *k += 4;
    }
    if (s % 100u == 0) {
        s /= 100u;
        *k += 2;
    }
    if (s % 10u == 0) {
        s /= 10u;
        *k += 1;
    }
    return s;
}

/* The nd <= 9 digits of s into o[0..nd), two at a time from the right,
** in 32-bit arithmetic (cheaper divisions). */
static void fmt_digits32(char *o, uint32_t s, int nd)
{
    o += nd;
    for (; nd >= 2; nd -= 2) {
        uint32_t r = s % 100;
        s /= 100;
        o -= 2;
        o[0] = fmt_pairs[2 * r];
        o[1] = fmt_pairs[2 * r + 1];
    }
    if (nd)
        o[-1] = (char)('0' + s);
}

/* The nd digits of s into o[0..nd): a float's at once, a double's in a
** high part and eight low digits. */
static void fmt_digits(char *o, uint64_t s, int nd)
{
    if (nd > 9) {
        fmt_digits32(o + nd - 8, (uint32_t)(s % 100000000u), 8);
        s /= 100000000u;
        nd -= 8;
    }
    fmt_digits32(o, (uint32_t)s, nd);
}

static size_t fmt_exponent(char *o, int e)
{
    char *start = o;
    *o++ = 'e';
    *o++ = e < 0 ? '-' : '+';
    e = e < 0 ? -e : e;
    if (e >= 100)
        *o++ = (char)('0' + e / 100);
    if (e >= 10)
        *o++ = (char)('0' + e / 10 % 10);
    *o++ = (char)('0' + e % 10);
    return (size_t)(o - start);
}

/* s * 10^k laid out as ECMAScript's Number::toString does: plain digits
** while the decimal point is within 21 digits (and not more than 6 zeros
** after it), otherwise d.ddde+XX / d.ddde-XX.  The plain version; the
** fast one follows. */
static size_t fmt_layout_plain(char *out, int neg, uint64_t s, int k)
{
    char *o = out + neg;
    int nd, n, i;
    s = fmt_trim(s, &k);
    nd = fmt_ndigits(s);
    n = k + nd;                 /* value = 0.d1d2.. * 10^n */
    out[0] = '-';
    if (nd <= n && n <= 21) {   /* 1500, 1e20 */
        fmt_digits(o, s, nd);
        for (i = nd; i < n; i++)
            o[i] = '0';
        return (size_t)(o + n - out);
    }
    if (0 < n && n <= 21) {     /* 12.5 */
        fmt_digits(o + 1, s, nd);
        for (i = 0; i < n; i++)
            o[i] = o[i + 1];
        o[n] = '.';
        return (size_t)(o + nd + 1 - out);
    }
    if (-6 < n && n <= 0) {     /* 0.000125 */
        o[0] = '0';
        o[1] = '.';
        for (i = 0; i < -n; i++)
            o[2 + i] = '0';
        fmt_digits(o + 2 - n, s, nd);
        return (size_t)(o + 2 - n + nd - out);
    }
    fmt_digits(o + 1, s, nd);   /* 1.25e-7, 1e+21 */
    o[0] = o[1];
    o[1] = '.';
    o += nd == 1 ? 1 : nd + 1;
    return (size_t)(o + fmt_exponent(o, n - 1) - out);
}

/* Exactly eight digits of v < 10^8, leading zeros included: two halves
** of four, each two pairs, without a loop. */
static void fmt_8digits(char *o, uint32_t v)
{
    uint32_t hi = v / 10000, lo = v % 10000;
    memcpy(o, fmt_pairs + 2 * (hi / 100), 2);
    memcpy(o + 2, fmt_pairs + 2 * (hi % 100), 2);
    memcpy(o + 4, fmt_pairs + 2 * (lo / 100), 2);
    memcpy(o + 6, fmt_pairs + 2 * (lo % 100), 2);
}

/* The digits of s ending at e, in blocks of eight: up to seven bytes
** before the first digit are overwritten (with zeros). */
static void fmt_digits_to(char *e, uint64_t s)
{
    while (s >= 100000000u) {
        fmt_8digits(e - 8, (uint32_t)(s % 100000000u));
        s /= 100000000u;
        e -= 8;
    }
    fmt_8digits(e - 8, (uint32_t)s);
}

/* fmt_layout_plain's output, built in a scratch with room before it so
** digits go in whole blocks and prefixes in fixed-size stores, then copied
** out in one fixed-size move: out gets RCP_JSON_FMT_SIZE bytes written. */
static size_t fmt_layout(char *out, int neg, uint64_t s, int k)
{
    char t[8 + RCP_JSON_FMT_SIZE + 24], *base = t + 8, *o = base + neg;
    int nd, n, i;
    size_t len;
    s = fmt_trim(s, &k);
    nd = fmt_ndigits(s);
    n = k + nd;                 /* value = 0.d1d2.. * 10^n */
    if (nd <= n && n <= 21) {   /* 1500, 1e20 */
        fmt_digits_to(o + nd, s);
        memset(o + nd, '0', 21);
        len = (size_t)(neg + n);
    } else if (0 < n && n <= 21) {      /* 12.5 */
        fmt_digits_to(o + 1 + nd, s);
        for (i = 0; i < n; i++)
            o[i] = o[i + 1];
        o[n] = '.';
        len = (size_t)(neg + nd + 1);
    } else if (-6 < n && n <= 0) {      /* 0.000125 */
        char *f = o + 2 - n;
        fmt_digits_to(f + nd, s);
        memcpy(f - 8, "00000000", 8);   /* f - 8 <= o: covers "0." */
        o[1] = '.';
        len = (size_t)(f + nd - base);
    } else {                    /* 1.25e-7, 1e+21 */
        fmt_digits_to(o + 1 + nd, s);
        o[0] = o[1];
        o[1] = '.';
        o += nd == 1 ? 1 : nd + 1;
        len = (size_t)(o + fmt_exponent(o, n - 1) - base);
    }
    base[0] ^= (char)((base[0] ^ '-') & (0 - neg));   /* no branch */
    memcpy(out, base, RCP_JSON_FMT_SIZE);
    return len;
}

static size_t fmt_zero(char *out, int neg)
{
    out[0] = '-';
    out[neg] = '0';
    return (size_t)neg + 1;
}

/* §4.6: NaN and Infinity MUST NOT be emitted; a finite sentinel is */
size_t json_fmt_double(char *out, double v, int fast)
{
    uint64_t bits, s;
    int k;
    if (v != v)
        v = 0.0;
    else if (v > DBL_MAX || v < -DBL_MAX)
        v = v > 0 ? DBL_MAX : -DBL_MAX;
    memcpy(&bits, &v, sizeof bits);
    if ((bits & ~((uint64_t)1 << 63)) == 0)
        return fmt_zero(out, bits != 0);
    s = fmt_shortest_d(bits & ~((uint64_t)1 << 63), &k, fast);
    return fast ? fmt_layout(out, (int)(bits >> 63), s, k)
                : fmt_layout_plain(out, (int)(bits >> 63), s, k);
}

size_t rcp_json_fmt_double(char *out, double v)
{
    return json_fmt_double(out, v, 1);
}

size_t rcp_json_fmt_float(char *out, float v)
{
    uint32_t bits;
    uint64_t s;
    int k;
    if (v != v)
        v = 0.0f;
    else if (v > FLT_MAX || v < -FLT_MAX)
        v = v > 0 ? FLT_MAX : -FLT_MAX;
    memcpy(&bits, &v, sizeof bits);
    if ((bits & 0x7FFFFFFFu) == 0)
        return fmt_zero(out, bits != 0);
    s = fmt_shortest_f(bits & 0x7FFFFFFFu, &k);
    return fmt_layout(out, (int)(bits >> 31), s, k);
}

/* MARK: - JSON: fingerprint -------------------------------------------- */

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    size_t i;
    for (i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211u;
    return h;
}

/* A node as type, length, bytes: a length before every text keeps
** ["ab","c"] apart from ["a","bc"] without escaping anything. */
static uint64_t hash_node(uint64_t h, const rcp_json *v)
{
    unsigned char t[9];
    size_t i, n = v->n;
    t[0] = (unsigned char)v->type;
    for (i = 1; i < 9; i++, n >>= 8)
        t[i] = (unsigned char)(n & 0xFF);
    h = fnv_bytes(h, t, 9);
    if (v->type == RCP_JSON_STRING || v->type == RCP_JSON_NUMBER)
        h = fnv_bytes(h, v->s, v->n);
    return h;
}

/* Iterative, like rcp_jw_value; levels past the stack count only their
** shape (parsed trees never get there: RCP_JSON_MAX_DEPTH). */
uint64_t rcp_json_hash(uint64_t h, const rcp_json *v)
{
    struct { const rcp_json *v; size_t i; } st[RCP_JSON_MAX_DEPTH + 16];
    size_t sp = 0;
    if (!v)
        return h;
    h = hash_node(h, v);
    if (v->type != RCP_JSON_ARRAY && v->type != RCP_JSON_OBJECT)
        return h;
    st[sp].v = v;
    st[sp++].i = 0;
    while (sp > 0) {
        const rcp_json *c = st[sp - 1].v, *kid;
        if (st[sp - 1].i == c->n) {
            sp--;
            continue;
        }
        kid = &c->kids[st[sp - 1].i++];
        if (c->type == RCP_JSON_OBJECT) {
            rcp_json key;
            key.type = RCP_JSON_STRING;
            key.s = kid->key;
            key.n = kid->keylen;
            h = hash_node(h, &key);
        }
        h = hash_node(h, kid);
        if ((kid->type == RCP_JSON_ARRAY || kid->type == RCP_JSON_OBJECT)
            && sp < sizeof st / sizeof *st) {
            st[sp].v = kid;
            st[sp++].i = 0;
        }
    }
    return h;
}

/* MARK: - JSON: writer -------------------------------------------------- */

#define JW_SLOTS sizeof(((rcp_jw *)0)->first)

/* The comma flag of the current level; levels past the array share the
** last slot (the buffer is already marked failed by then). */
static unsigned char *jw_first(rcp_jw *w)
{
    return &w->first[w->depth < JW_SLOTS ? w->depth : JW_SLOTS - 1];
}

static char *jw_item(rcp_jw *w, size_t n);

static void jw_open(rcp_jw *w, char c)
{
    char *o = jw_item(w, 1);
    if (o) {
        *o = c;
        w->b->len++;
    }
    if (++w->depth >= JW_SLOTS)
        w->b->oom = 1;          /* too deep to track: fail, never overrun */
    *jw_first(w) = 1;
}

static void jw_close(rcp_jw *w, char c)
{
    if (w->depth)
        w->depth--;
    rcp_buf_putc(w->b, c);
}

void rcp_jw_init(rcp_jw *w, rcp_buf *b)
{
    w->b = b;
    w->depth = 0;
    w->first[0] = 1;
}

void rcp_jw_obj(rcp_jw *w)     { jw_open(w, '{'); }
void rcp_jw_obj_end(rcp_jw *w) { jw_close(w, '}'); }
void rcp_jw_arr(rcp_jw *w)     { jw_open(w, '['); }
void rcp_jw_arr_end(rcp_jw *w) { jw_close(w, ']'); }

/* A byte JSON will not take raw: the two-letter escapes, else \u00XX,
** into e (6 bytes); returns how many. */
static size_t jw_escape_code(char *e, unsigned char c)
{
    static const char hexd[] = "0123456789abcdef";
    e[0] = '\\';
    switch (c) {
    case '"':  e[1] = '"';  return 2;
    case '\\': e[1] = '\\'; return 2;
    case '\b': e[1] = 'b';  return 2;
    case '\f': e[1] = 'f';  return 2;
    case '\n': e[1] = 'n';  return 2;
    case '\r': e[1] = 'r';  return 2;
    case '\t': e[1] = 't';  return 2;
    }
    e[1] = 'u';
    e[2] = e[3] = '0';
    e[4] = hexd[c >> 4];
    e[5] = hexd[c & 15];
    return 6;
}

/* The bytes of a string that text_run stops at, one item at a time into
** o (room for 6): an escape, a well-formed sequence copied, or U+FFFD for
** one maximal subpart that is not UTF-8 (Unicode §3.9).  Returns the
** input consumed; *on gets the bytes written. */
static size_t jw_special(char *o, const unsigned char *p,
                         const unsigned char *end, size_t *on)
{
    size_t len;
    if (*p < 0x80) {
        *on = jw_escape_code(o, *p);
        return 1;
    }
    if (utf8_seq(p, end, &len) == 0) {
        memcpy(o, p, len);
        *on = len;
        return len;
    }
    memcpy(o, "\xEF\xBF\xBD", 3);
    *on = 3;
    return len + !len;
}

/* Quoted and escaped, then tail (':' after a member name) unless it is 0.
** Never a raw control byte, so a frame stays one line (§5.1); U+2028 and
** U+2029 stay raw (valid JSON, RFC 8259 §7).  Bytes that are not UTF-8
** become U+FFFD, so the output is always valid JSON (§4.6: strings are
** UTF-8).  The plain version appends piece by piece: */
static void jw_string_plain(rcp_buf *b, const char *str, size_t n, char tail)
{
    const unsigned char *p = (const unsigned char *)str, *end = p + n;
    char e[6];
    size_t k, en;
    rcp_buf_putc(b, '"');
    while (p < end) {
        k = text_run_plain(p, (size_t)(end - p));
        rcp_buf_put(b, p, k);
        p += k;
        if (p < end) {
            p += jw_special(e, p, end, &en);
            rcp_buf_put(b, e, en);
        }
    }
    rcp_buf_putc(b, '"');
    if (tail)
        rcp_buf_putc(b, tail);
}

/* Room for n more bytes in b; where they go, NULL when b cannot grow
** (then it is marked failed, as every append marks it). */
static char *jw_room(rcp_buf *b, size_t n)
{
    if ((b->oom || b->cap - b->len < n) && rcp_buf_reserve(b, n))
        return NULL;
    return b->data + b->len;
}

#define JW_SLACK 8      /* whole words are stored before they are judged */

/* plain_run of the last 4..7 bytes of a string, u[0..n), read as two
** 4-byte words that overlap, never past the end: when the first has no
** special byte, the bytes the second shares with it borrow nothing, so
** its lowest flag is exact too. */
static uint32_t sw_load4(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint32_t sw_special4(uint32_t w)
{
    return (((w ^ 0x02020202u) - 0x21212121u) |
            ((w ^ 0x5C5C5C5Cu) - 0x01010101u) | w) & 0x80808080u;
}

static size_t sw_first4(uint32_t m)
{
    return (size_t)((((m & (0 - m)) >> 7) * 0x00010203u) >> 24);
}

static size_t sw_tail_run(const unsigned char *u, size_t n)
{
    uint32_t m = sw_special4(sw_load4(u));
    if (m)
        return sw_first4(m);
    m = sw_special4(sw_load4(u + n - 4));
    return m ? n - 4 + sw_first4(m) : n;
}

/* The run text_run would pass, copied from p to *o while it is scanned:
** each word is stored whole (o has JW_SLACK bytes of room past the
** copy) and judged after, and easy UTF-8 sequences go through as they
** are.  Returns the first byte that needs jw_special (end when none). */
static const unsigned char *jw_copy_run(char **o, const unsigned char *p,
                                        const unsigned char *end)
{
    char *q = *o;
    size_t k;
    for (;;) {
        if (end - p >= 8) {
            uint64_t m = sw_special(sw_load(p));
            memcpy(q, p, 8);
            k = m ? sw_first(m) : 8;
            p += k;
            q += k;
            if (k == 8)
                continue;
        } else if (end - p >= 4) {
            k = sw_tail_run(p, (size_t)(end - p));
            memcpy(q, p, 4);
            memcpy(q + (end - p) - 4, end - 4, 4);
            p += k;
            q += k;
        } else {
            while (p < end && (json_cls[*p] & C_PLAIN))
                *q++ = (char)*p++;
        }
        if (p == end || *p < 0x80 || (k = utf8_easy(p, (size_t)(end - p))) == 0)
            break;
        memcpy(q, p, 3);            /* utf8_easy saw 3 readable bytes */
        p += k;
        q += k;
    }
    *o = q;
    return p;
}

/* jw_string_plain's output after lead (',' or 0), written straight into
** room reserved for the common case (no escapes: n + 4 bytes), grown
** only at an escape. */
static void jw_string(rcp_buf *b, const char *str, size_t n, char lead,
                      char tail)
{
    const unsigned char *p = (const unsigned char *)str, *end = p + n;
    char *o = jw_room(b, n + 4 + JW_SLACK);
    size_t en;
    if (!o)
        return;
    *o = lead;
    o += lead != 0;
    *o++ = '"';
    while ((p = jw_copy_run(&o, p, end)) != end) {
        /* one item at most 6 bytes for at least 1 in, then the rest */
        b->len = (size_t)(o - b->data);
        o = jw_room(b, 6 + (size_t)(end - p) + 2 + JW_SLACK);
        if (!o)
            return;
        p += jw_special(o, p, end, &en);
        o += en;
    }
    *o++ = '"';
    *o = tail;
    b->len = (size_t)(o + (tail != 0) - b->data);
}

void json_write_string(rcp_buf *b, const char *s, size_t n, int fast)
{
    if (fast)
        jw_string(b, s, n, 0, 0);
    else
        jw_string_plain(b, s, n, 0);
}

/* The comma due before a value (or member name) of the current level,
** into the room for n more bytes; where those go, NULL when b failed. */
static char *jw_item(rcp_jw *w, size_t n)
{
    unsigned char *f = jw_first(w);
    char *o = jw_room(w->b, n + 1);
    if (o && !*f) {
        *o++ = ',';
        w->b->len++;
    }
    *f = 0;
    return o;
}

void rcp_jw_keyn(rcp_jw *w, const char *k, size_t n)
{
    if (!jw_item(w, 0))
        return;
    jw_string(w->b, k ? k : "", k ? n : 0, 0, ':');
    *jw_first(w) = 1;           /* the value that follows takes no comma */
}

void rcp_jw_key(rcp_jw *w, const char *k)
{
    rcp_jw_keyn(w, k, strlen(k));
}

void rcp_jw_str(rcp_jw *w, const char *s, size_t n)
{
    if (jw_item(w, 0))
        jw_string(w->b, s ? s : "", s ? n : 0, 0, 0);
}

void rcp_jw_cstr(rcp_jw *w, const char *s)
{
    rcp_jw_str(w, s, strlen(s));
}

void rcp_jw_int(rcp_jw *w, int64_t v)
{
    char d[24];
    int i = 24;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    char *o;
    do
        d[--i] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        d[--i] = '-';
    o = jw_item(w, 24);
    if (o) {
        memcpy(o, d + i, (size_t)(24 - i));
        w->b->len += (size_t)(24 - i);
    }
}

void rcp_jw_double(rcp_jw *w, double v)
{
    char *o = jw_item(w, RCP_JSON_FMT_SIZE);
    if (o)
        w->b->len += rcp_json_fmt_double(o, v);
}

void rcp_jw_float(rcp_jw *w, float v)
{
    char *o = jw_item(w, RCP_JSON_FMT_SIZE);
    if (o)
        w->b->len += rcp_json_fmt_float(o, v);
}

/* A value's bytes as they are (literals, numbers kept as text, raw). */
static void jw_bytes(rcp_jw *w, const char *s, size_t n)
{
    char *o = jw_item(w, n);
    if (o && n) {
        memcpy(o, s, n);
        w->b->len += n;
    }
}

void rcp_jw_bool(rcp_jw *w, int v)
{
    if (v)
        jw_bytes(w, "true", 4);
    else
        jw_bytes(w, "false", 5);
}

void rcp_jw_null(rcp_jw *w)
{
    jw_bytes(w, "null", 4);
}

void rcp_jw_raw(rcp_jw *w, const char *json, size_t n)
{
    jw_bytes(w, json, n);
}

/* A scalar, or the opening of a container; 1 when children follow. */
static int jw_node(rcp_jw *w, const rcp_json *v)
{
    switch (v->type) {
    case RCP_JSON_NULL:   rcp_jw_null(w); return 0;
    case RCP_JSON_FALSE:  rcp_jw_bool(w, 0); return 0;
    case RCP_JSON_TRUE:   rcp_jw_bool(w, 1); return 0;
    case RCP_JSON_NUMBER: rcp_jw_raw(w, v->s, v->n); return 0;
    case RCP_JSON_STRING: rcp_jw_str(w, v->s, v->n); return 0;
    case RCP_JSON_ARRAY:  rcp_jw_arr(w); break;
    case RCP_JSON_OBJECT: rcp_jw_obj(w); break;
    }
    if (v->n)
        return 1;
    jw_close(w, v->type == RCP_JSON_ARRAY ? ']' : '}');
    return 0;
}

/* Iterative: a stack as deep as the writer can track (deeper trees mark
** the buffer failed).  Numbers keep their text (design note 3).  The
** plain version goes through the public calls: */
static void jw_value_plain(rcp_jw *w, const rcp_json *v)
{
    struct { const rcp_json *v; size_t i; } st[JW_SLOTS];
    size_t sp = 0;
    if (!v || !jw_node(w, v))
        return;
    st[sp].v = v;
    st[sp++].i = 0;
    while (sp > 0 && !w->b->oom) {
        const rcp_json *c = st[sp - 1].v, *kid;
        if (st[sp - 1].i == c->n) {
            jw_close(w, c->type == RCP_JSON_ARRAY ? ']' : '}');
            sp--;
            continue;
        }
        kid = &c->kids[st[sp - 1].i++];
        if (c->type == RCP_JSON_OBJECT)
            rcp_jw_keyn(w, kid->key, kid->keylen);
        if (jw_node(w, kid) && !w->b->oom) {
            st[sp].v = kid;
            st[sp++].i = 0;
        }
    }
}

/* A node of rcp_jw_value after lead (',' or 0): a scalar, or the opening
** of a container; 1 for a container (even an empty one: its depth counts
** as jw_open counts it). */
static int jw_node_fast(rcp_buf *b, const rcp_json *v, char lead)
{
    const char *s = NULL;
    size_t n = 0;
    char *o;
    switch (v->type) {
    case RCP_JSON_STRING:
        jw_string(b, v->s ? v->s : "", v->s ? v->n : 0, lead, 0);
        return 0;
    case RCP_JSON_ARRAY:
    case RCP_JSON_OBJECT:
        o = jw_room(b, 3);
        if (!o)
            return 0;
        *o = lead;
        o += lead != 0;
        *o++ = v->type == RCP_JSON_ARRAY ? '[' : '{';
        b->len = (size_t)(o - b->data);
        return 1;
    case RCP_JSON_NUMBER: s = v->s, n = v->s ? v->n : 0; break;
    case RCP_JSON_NULL:   s = "null", n = 4; break;
    case RCP_JSON_TRUE:   s = "true", n = 4; break;
    case RCP_JSON_FALSE:  s = "false", n = 5; break;
    }
    o = jw_room(b, n + 1);
    if (o) {
        *o = lead;
        o += lead != 0;
        if (n)
            memcpy(o, s, n);
        b->len = (size_t)(o + n - b->data);
    }
    return 0;
}

/* jw_value_plain's output.  Only the value itself owes the writer's
** comma; below it each node knows whether it is a first child, so commas,
** member names and values go straight into reserved room and the
** writer's own state (depth, comma flags) is left as a scalar leaves it. */
static void jw_value_fast(rcp_jw *w, const rcp_json *v)
{
    struct { const rcp_json *v; size_t i; } st[JW_SLOTS];
    size_t sp = 0;
    rcp_buf *b = w->b;
    if (!v || !jw_item(w, 0) || !jw_node_fast(b, v, 0))
        return;
    for (;;) {
        const rcp_json *c, *kid;
        char lead;
        if (w->depth + sp + 1 >= JW_SLOTS) {
            b->oom = 1;         /* too deep to track: fail, as jw_open */
            return;
        }
        st[sp].v = v;
        st[sp++].i = 0;
        for (;;) {              /* the next child, closing what ends */
            c = st[sp - 1].v;
            if (st[sp - 1].i == c->n) {
                rcp_buf_putc(b, c->type == RCP_JSON_ARRAY ? ']' : '}');
                if (--sp == 0)
                    return;
                continue;
            }
            kid = &c->kids[st[sp - 1].i++];
            lead = st[sp - 1].i > 1 ? ',' : 0;
            if (c->type == RCP_JSON_OBJECT) {
                jw_string(b, kid->key ? kid->key : "",
                          kid->key ? kid->keylen : 0, lead, ':');
                lead = 0;
            }
            if (b->oom)
                return;
            if (jw_node_fast(b, kid, lead))
                break;
        }
        if (b->oom)
            return;
        v = kid;                /* a container: go down */
    }
}

void rcp_jw_value(rcp_jw *w, const rcp_json *v)
{
    jw_value_fast(w, v);
}

void json_write_value(rcp_jw *w, const rcp_json *v, int fast)
{
    if (fast)
        jw_value_fast(w, v);
    else
        jw_value_plain(w, v);
}
