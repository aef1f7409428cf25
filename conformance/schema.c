/*
** schema.c -- a JSON Schema (draft 2020-12) validator for the keywords the
** normative RCP/1 schema (conformance/rcp-1.0.json) uses, so the oracle
** can judge every result against the schema itself (issue 10: "validate
** in C; no dependency").  The keyword list is in conform.h.
**
** DESIGN NOTES
**
**  1. The schema is interpreted in place.  rcp_schema_load parses it into
**     the schema's own arena and checks every subschema once: every
**     keyword is one this file implements, every argument is well formed,
**     every pattern compiles, every $ref names a schema.  A validator that
**     skipped what it did not know would accept what it should not, so
**     anything unknown is a load error; validation then never meets a
**     keyword it cannot judge.  One table (keywords[]) holds, per keyword,
**     the argument's shape (for the load check and for $ref walks) and
**     the function that judges an instance.
**  2. Two passes.  The quiet pass only answers valid / invalid, and
**     records how deep into the instance the deciding failure was.  Only
**     an invalid value is judged again with explain on, which writes the
**     first failure's message; where a combinator failed as a whole
**     (anyOf, oneOf matching none), the branch explained is the one whose
**     failure was deepest in the instance (ties: the first), so a broken
**     response names /result/hits/0/score, not "no branch matched".
**     Explain re-runs only along the failing path: its cost is at most
**     the nesting depth times the quiet pass.
**  3. Nothing is allocated while validating.  Pointers (instance and
**     schema location) are chains of segments on the C stack, rendered
**     only into the caller's err.  Nesting is bounded by
**     RCP_SCHEMA_MAX_DEPTH, so a recursive schema ({"$ref": "#"}) or a
**     deep instance ends with -1, never a stack overflow.
**  4. Numbers are judged on their exact decimal text, never on a double:
**     "integer" is any number without a fractional part (1e2 and 10.0
**     are, 1.5 is not; JSON Schema has no range limit, unlike §4.6), and
**     minimum / maximum / enum / const compare exact values.
**  5. pattern is ECMA-262 (2020-12 §6.4) for the subset in conform.h,
**     matched on code points (the "u" flag, as the draft recommends) by a
**     Thompson-style state set: linear in the string, no backtracking.
*/
#include "rcp.h"
#include "conform.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PAT_MAX_ATOMS  64    /* a compiled pattern's size bound */
#define PAT_MAX_RANGES 64
#define REF_SEG_MAX    256   /* bytes of one decoded $ref segment */

struct rcp_schema {
    rcp_arena       arena;   /* the text's copy and its parse tree */
    const rcp_json *root;
};

/* MARK: - JSON pointers and messages ------------------------------------- */

/* One step of a JSON pointer, kept on the C stack: a member name, an array
** index (s == NULL, n the index), or (raw) a "#/..." reference that roots
** a schema location. */
typedef struct seg {
    const struct seg *up;
    const char       *s;
    size_t            n;
    int               raw;
} seg;

static seg seg_key(const seg *up, const char *s, size_t n)
{
    seg g;
    g.up = up;
    g.s = s;
    g.n = n;
    g.raw = 0;
    return g;
}

static seg seg_index(const seg *up, size_t i)
{
    return seg_key(up, NULL, i);
}

/* A bounded text being built into the caller's buffer; what does not
** fit is dropped, the text stays NUL-terminated. */
typedef struct out {
    char  *p;
    size_t cap, len;
} out;

static void out_init(out *o, char *p, size_t cap)
{
    o->p = p;
    o->cap = p ? cap : 0;
    o->len = 0;
    if (o->cap)
        p[0] = '\0';
}

static void out_putc(out *o, char c)
{
    if (o->len + 1 < o->cap) {
        o->p[o->len++] = c;
        o->p[o->len] = '\0';
    }
}

static void out_putn(out *o, const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        out_putc(o, s[i]);
}

static void out_puts(out *o, const char *s)
{
    out_putn(o, s, strlen(s));
}

static void out_printf(out *o, const char *fmt, ...)
{
    char tmp[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    out_puts(o, tmp);
}

/* A byte of a name or string, readable on one line. */
static void out_byte(out *o, unsigned char c, int quoted)
{
    if (c < 0x20 || c == 0x7f) {
        out_printf(o, "\\u%04x", c);
        return;
    }
    if (quoted && (c == '"' || c == '\\'))
        out_putc(o, '\\');
    out_putc(o, (char)c);
}

/* RFC 6901: '~' is "~0", '/' is "~1". */
static void put_ptr(out *o, const seg *g)
{
    size_t i;
    if (!g)
        return;
    put_ptr(o, g->up);
    if (g->raw) {
        out_putn(o, g->s, g->n);
        return;
    }
    out_putc(o, '/');
    if (!g->s) {
        out_printf(o, "%lu", (unsigned long)g->n);
        return;
    }
    for (i = 0; i < g->n; i++)
        if (g->s[i] == '~')
            out_puts(o, "~0");
        else if (g->s[i] == '/')
            out_puts(o, "~1");
        else
            out_byte(o, (unsigned char)g->s[i], 0);
}

static void put_string(out *o, const char *s, size_t n, size_t limit)
{
    size_t i;
    out_putc(o, '"');
    for (i = 0; i < n && i < limit; i++)
        out_byte(o, (unsigned char)s[i], 1);
    out_puts(o, i < n ? "...\"" : "\"");
}

/* v as compact JSON, cut short ("...") past about limit bytes. */
static void put_value(out *o, const rcp_json *v, size_t limit)
{
    size_t start = o->len, i;
    switch (v->type) {
    case RCP_JSON_STRING:
        put_string(o, v->s, v->n, limit);
        return;
    case RCP_JSON_ARRAY:
    case RCP_JSON_OBJECT:
        out_putc(o, v->type == RCP_JSON_ARRAY ? '[' : '{');
        for (i = 0; i < v->n; i++) {
            size_t used = o->len - start;
            if (used >= limit) {
                out_puts(o, "...");
                break;
            }
            if (i)
                out_putc(o, ',');
            if (v->type == RCP_JSON_OBJECT) {
                put_string(o, v->kids[i].key, v->kids[i].keylen, limit);
                out_putc(o, ':');
            }
            put_value(o, &v->kids[i], limit - used);
        }
        out_putc(o, v->type == RCP_JSON_ARRAY ? ']' : '}');
        return;
    default:                    /* numbers and literals keep their text */
        out_putn(o, v->s, v->n < limit ? v->n : limit);
        return;
    }
}

static const char *type_name(const rcp_json *v)
{
    static const char *const names[] = { "null", "boolean", "boolean",
                                         "number", "string", "array",
                                         "object" };
    return names[v->type];
}

/* MARK: - Numbers: exact decimal values ---------------------------------- */

/* A JSON number's text as a decimal: value = +-0.D x 10^exp, D the
** significant digits from the first nonzero one to the last (the text
** between may hold the '.').  nsig == 0: the value is zero.  Works on
** the validated grammar; the exponent saturates far beyond any length a
** text can have, so comparisons stay exact. */
typedef struct dec {
    int         neg;
    const char *d;
    size_t      nsig;
    long        exp;
} dec;

#define DEC_ESAT 1000000000L

static long dec_exponent(const char *p, const char *end)
{
    long e = 0;
    int neg = 0;
    if (p < end && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        e = e < DEC_ESAT ? e * 10 + (*p - '0') : DEC_ESAT;
    return neg ? -e : e;
}

static void dec_read(dec *x, const char *s, size_t n)
{
    const char *p, *end = s + n;
    long idx = 0, point = -1, first = -1, last = -1;
    x->neg = n > 0 && s[0] == '-';
    x->d = NULL;
    for (p = s + x->neg; p < end && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            point = idx;
            continue;
        }
        if (*p != '0') {
            if (first < 0) {
                first = idx;
                x->d = p;
            }
            last = idx;
        }
        idx++;
    }
    x->nsig = first < 0 ? 0 : (size_t)(last - first + 1);
    x->exp = first < 0 ? 0 : (point < 0 ? idx : point) - first +
             (p < end ? dec_exponent(p + 1, end) : 0);
}

static int dec_is_integer(const dec *x)
{
    return x->nsig == 0 || (x->exp > 0 && (size_t)x->exp >= x->nsig);
}

static int dec_cmp_magnitude(const dec *a, const dec *b)
{
    const char *p = a->d, *q = b->d;
    size_t i;
    if (a->exp != b->exp)
        return a->exp < b->exp ? -1 : 1;
    for (i = 0; i < a->nsig && i < b->nsig; i++, p++, q++) {
        p += *p == '.';
        q += *q == '.';
        if (*p != *q)
            return *p < *q ? -1 : 1;
    }
    /* the longer one's remaining digits end in a nonzero one */
    return a->nsig == b->nsig ? 0 : a->nsig < b->nsig ? -1 : 1;
}

/* <0, 0, >0 as a < b, a == b, a > b, for two JSON numbers (-0 == 0). */
static int num_cmp(const rcp_json *a, const rcp_json *b)
{
    dec x, y;
    int sx, sy;
    dec_read(&x, a->s, a->n);
    dec_read(&y, b->s, b->n);
    sx = x.nsig ? (x.neg ? -1 : 1) : 0;
    sy = y.nsig ? (y.neg ? -1 : 1) : 0;
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return sx * dec_cmp_magnitude(&x, &y);
}

static int num_is_integer(const rcp_json *v)
{
    dec x;
    dec_read(&x, v->s, v->n);
    return dec_is_integer(&x);
}

/* MARK: - Objects and equality ------------------------------------------- */

static int key_eq(const rcp_json *m, const char *k, size_t n)
{
    return m->keylen == n && memcmp(m->key, k, n) == 0;
}

/* The member named k[0..n) of obj, the last when names repeat (as every
** lookup in rcp: README, Decisions, JSON); NULL when none. */
static const rcp_json *member(const rcp_json *obj, const char *k, size_t n)
{
    size_t i;
    if (!obj || obj->type != RCP_JSON_OBJECT)
        return NULL;
    for (i = obj->n; i-- > 0;)
        if (key_eq(&obj->kids[i], k, n))
            return &obj->kids[i];
    return NULL;
}

static const rcp_json *member_c(const rcp_json *obj, const char *k)
{
    return member(obj, k, strlen(k));
}

/* 1 when obj's member i is overridden by a later one of the same name. */
static int shadowed(const rcp_json *obj, size_t i)
{
    return member(obj, obj->kids[i].key, obj->kids[i].keylen) !=
           &obj->kids[i];
}


/* Objects are equal when they have the same names (the last of repeated
** ones counting) with equal values, in any order. */
static int object_equal(const rcp_json *a, const rcp_json *b)
{
    size_t i, na = 0, nb = 0;
    for (i = 0; i < a->n; i++) {
        const rcp_json *m;
        if (shadowed(a, i))
            continue;
        na++;
        m = member(b, a->kids[i].key, a->kids[i].keylen);
        if (!m || !rcp_schema_equal(&a->kids[i], m))
            return 0;
    }
    for (i = 0; i < b->n; i++)
        nb += !shadowed(b, i);
    return na == nb;
}

int rcp_schema_equal(const rcp_json *a, const rcp_json *b)
{
    size_t i;
    if (!a || !b || a->type != b->type)
        return 0;
    switch (a->type) {
    case RCP_JSON_NUMBER:
        return num_cmp(a, b) == 0;
    case RCP_JSON_STRING:
        return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
    case RCP_JSON_ARRAY:
        if (a->n != b->n)
            return 0;
        for (i = 0; i < a->n; i++)
            if (!rcp_schema_equal(&a->kids[i], &b->kids[i]))
                return 0;
        return 1;
    case RCP_JSON_OBJECT:
        return object_equal(a, b);
    default:
        return 1;
    }
}

/* MARK: - pattern: an ECMA-262 subset ------------------------------------ */

enum { PA_CHAR, PA_ANY, PA_CLASS };
enum { Q_ONE, Q_STAR, Q_OPT };

typedef struct patom {
    unsigned char kind, quant, neg;
    uint32_t      c;           /* PA_CHAR */
    size_t        r0, nr;      /* PA_CLASS: ranges r0 .. r0+nr-1 */
} patom;

typedef struct pattern {
    int      bol, eol;         /* ^ and $ */
    size_t   na, nr;
    patom    a[PAT_MAX_ATOMS];
    uint32_t lo[PAT_MAX_RANGES], hi[PAT_MAX_RANGES];
} pattern;

/* One code point of s[0..n) (n > 0); a byte that does not start valid
** UTF-8 stands for itself, so matching never stalls. */
static size_t utf8_next(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = u[0] < 0x80 ? 1 : u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3
               : u[0] >= 0xc0 ? 2 : 0, i;
    if (len == 0 || len > n) {
        *cp = u[0];
        return 1;
    }
    *cp = len == 1 ? u[0] : u[0] & (0x7f >> len);
    for (i = 1; i < len; i++) {
        if ((u[i] & 0xc0) != 0x80) {
            *cp = u[0];
            return 1;
        }
        *cp = *cp << 6 | (u[i] & 0x3f);
    }
    return len;
}

typedef struct pcomp {         /* the compiler's state */
    pattern    *p;
    const char *s;
    size_t      n, i;
    const char *why;           /* the first error */
} pcomp;

static int pc_range(pcomp *c, uint32_t lo, uint32_t hi)
{
    if (c->p->nr == PAT_MAX_RANGES) {
        c->why = "too many character ranges for this validator";
        return -1;
    }
    c->p->lo[c->p->nr] = lo;
    c->p->hi[c->p->nr++] = hi;
    return 0;
}

/* \d and \w as ranges (ECMA-262: ASCII only, even with the u flag). */
static int pc_class_escape(pcomp *c, char e)
{
    if (e == 'd' || e == 'D')
        return pc_range(c, '0', '9');
    return pc_range(c, 'a', 'z') || pc_range(c, 'A', 'Z') ||
           pc_range(c, '0', '9') || pc_range(c, '_', '_');
}

static int is_syntax_char(char e)
{
    return e && strchr("^$\\.*+?()[]{}|/-", e) != NULL;
}

/* One character of a class (a literal or an escaped punctuation mark) at
** c->i; \d \w are added as ranges and give *cp = 0x110000 (no literal). */
static int pc_class_char(pcomp *c, uint32_t *cp)
{
    if (c->s[c->i] != '\\') {
        c->i += utf8_next(c->s + c->i, c->n - c->i, cp);
        return 0;
    }
    if (c->i + 1 >= c->n) {
        c->why = "a pattern cannot end with '\\'";
        return -1;
    }
    c->i += 2;
    if (c->s[c->i - 1] == 'd' || c->s[c->i - 1] == 'w') {
        *cp = 0x110000;
        return pc_class_escape(c, c->s[c->i - 1]);
    }
    if (!is_syntax_char(c->s[c->i - 1])) {
        c->why = "this escape is not supported by this validator";
        return -1;
    }
    *cp = (unsigned char)c->s[c->i - 1];
    return 0;
}

/* [...] or [^...]: ranges a-z, single characters; ']' first closes it
** (ECMA-262: [] matches nothing). */
static int pc_class(pcomp *c, patom *a)
{
    a->kind = PA_CLASS;
    a->neg = c->i < c->n && c->s[c->i] == '^';
    c->i += a->neg;
    a->r0 = c->p->nr;
    while (c->i < c->n && c->s[c->i] != ']') {
        uint32_t lo, hi;
        if (pc_class_char(c, &lo))
            return -1;
        if (lo == 0x110000)
            continue;
        hi = lo;
        if (c->i + 1 < c->n && c->s[c->i] == '-' && c->s[c->i + 1] != ']') {
            c->i++;
            if (pc_class_char(c, &hi))
                return -1;
            if (hi == 0x110000 || hi < lo) {
                c->why = "invalid range in a character class";
                return -1;
            }
        }
        if (pc_range(c, lo, hi))
            return -1;
    }
    if (c->i >= c->n) {
        c->why = "unterminated character class";
        return -1;
    }
    c->i++;
    a->nr = c->p->nr - a->r0;
    return 0;
}

/* One atom at c->i (not a quantifier). */
static int pc_atom(pcomp *c, patom *a)
{
    char ch = c->s[c->i];
    memset(a, 0, sizeof *a);
    if (ch == '.') {
        a->kind = PA_ANY;
        c->i++;
        return 0;
    }
    if (ch == '[') {
        c->i++;
        return pc_class(c, a);
    }
    if (ch == '\\' && c->i + 1 < c->n && c->s[c->i + 1] &&
        strchr("dDwW", c->s[c->i + 1])) {
        a->kind = PA_CLASS;
        a->neg = c->s[c->i + 1] == 'D' || c->s[c->i + 1] == 'W';
        a->r0 = c->p->nr;
        c->i += 2;
        if (pc_class_escape(c, c->s[c->i - 1]))
            return -1;
        a->nr = c->p->nr - a->r0;
        return 0;
    }
    if (ch && strchr("()|{}]^$", ch)) {
        c->why = ch == '^' || ch == '$'
                 ? "^ and $ are supported only at the pattern's ends"
                 : "groups, alternation, {n,m} and ']' are not supported by "
                   "this validator";
        return -1;
    }
    if (ch == '*' || ch == '+' || ch == '?') {
        c->why = "a quantifier with nothing to repeat";
        return -1;
    }
    a->kind = PA_CHAR;
    return pc_class_char(c, &a->c);
}

static int pc_push(pcomp *c, const patom *a)
{
    if (c->p->na == PAT_MAX_ATOMS) {
        c->why = "pattern too long for this validator";
        return -1;
    }
    c->p->a[c->p->na++] = *a;
    return 0;
}

/* An atom and its quantifier; x+ becomes x x*. */
static int pc_piece(pcomp *c)
{
    patom a;
    char q;
    if (pc_atom(c, &a))
        return -1;
    q = c->i < c->n ? c->s[c->i] : '\0';
    if (q != '*' && q != '+' && q != '?')
        return pc_push(c, &a);
    c->i++;
    if (c->i < c->n && c->s[c->i] && strchr("*+?{", c->s[c->i])) {
        c->why = "lazy or stacked quantifiers are not supported by this "
                 "validator";
        return -1;
    }
    if (q == '+' && pc_push(c, &a))
        return -1;
    a.quant = q == '?' ? Q_OPT : Q_STAR;
    return pc_push(c, &a);
}

/* Compile s[0..n); NULL, or why it cannot be (at byte *at). */
static const char *pat_compile(pattern *p, const char *s, size_t n,
                               size_t *at)
{
    pcomp c;
    memset(p, 0, sizeof *p);
    c.p = p;
    c.s = s;
    c.n = n;
    c.why = NULL;
    p->bol = n > 0 && s[0] == '^';
    if (n > (size_t)p->bol && s[n - 1] == '$') {
        size_t k = n - 1;                   /* "\\$" is a literal '$' */
        while (k > (size_t)p->bol && s[k - 1] == '\\')
            k--;
        p->eol = (n - 1 - k) % 2 == 0;
    }
    c.n -= (size_t)p->eol;
    for (c.i = (size_t)p->bol; c.i < c.n && !c.why;)
        if (pc_piece(&c))
            break;
    *at = c.i;
    return c.why;
}

static int pat_atom_ok(const pattern *p, const patom *a, uint32_t c)
{
    size_t i;
    int in = 0;
    switch (a->kind) {
    case PA_CHAR:
        return c == a->c;
    case PA_ANY:          /* ECMA-262 '.': all but line terminators */
        return c != '\n' && c != '\r' && c != 0x2028 && c != 0x2029;
    default:
        for (i = a->r0; i < a->r0 + a->nr && !in; i++)
            in = c >= p->lo[i] && c <= p->hi[i];
        return in != a->neg;
    }
}

/* Add state i and what it reaches without consuming (past * and ?). */
static void pat_add(const pattern *p, unsigned char *set, size_t i)
{
    while (!set[i]) {
        set[i] = 1;
        if (i == p->na || p->a[i].quant == Q_ONE)
            break;
        i++;
    }
}

/* ECMA-262 RegExp.prototype.test: a match anywhere unless anchored. */
static int pat_match(const pattern *p, const char *s, size_t n)
{
    unsigned char cur[PAT_MAX_ATOMS + 1], nxt[PAT_MAX_ATOMS + 1];
    size_t i = 0, k;
    memset(cur, 0, sizeof cur);
    pat_add(p, cur, 0);
    for (;;) {
        uint32_t c;
        int any = 0;
        if (cur[p->na] && (!p->eol || i == n))
            return 1;
        if (i == n)
            return 0;
        i += utf8_next(s + i, n - i, &c);
        memset(nxt, 0, sizeof nxt);
        for (k = 0; k < p->na; k++)
            if (cur[k] && pat_atom_ok(p, &p->a[k], c))
                pat_add(p, nxt, p->a[k].quant == Q_STAR ? k : k + 1);
        if (!p->bol)
            pat_add(p, nxt, 0);
        for (k = 0; k <= p->na; k++)
            any |= nxt[k];
        if (!any)
            return 0;
        memcpy(cur, nxt, sizeof cur);
    }
}

/* MARK: - format "uri": RFC 3986 §3 -------------------------------------- */

static int is_alpha(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_unreserved(int c)
{
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' ||
           c == '~';
}

static int is_sub_delim(int c)
{
    return c && strchr("!$&'()*+,;=", c) != NULL;
}

/* The length of one unreserved / sub-delims / extra character or one
** pct-encoded triple at s[i] (i < n), 0 when there is none. */
static size_t uri_char(const char *s, size_t i, size_t n, const char *extra)
{
    int c = (unsigned char)s[i];
    if (c == '%')
        return i + 2 < n && is_hex(s[i + 1]) && is_hex(s[i + 2]) ? 3 : 0;
    return is_unreserved(c) || is_sub_delim(c) ||
           (c && strchr(extra, c) != NULL);
}

/* Past the longest run of such characters from i. */
static size_t uri_span(const char *s, size_t i, size_t n, const char *extra)
{
    size_t k;
    while (i < n && (k = uri_char(s, i, n, extra)) != 0)
        i += k;
    return i;
}

/* dec-octet "." dec-octet "." dec-octet "." dec-octet */
static int ipv4_ok(const char *s, size_t n)
{
    size_t i = 0, part;
    for (part = 0; part < 4; part++) {
        size_t j = i;
        unsigned v = 0;
        while (j < n && is_digit(s[j]) && j - i < 3)
            v = v * 10 + (unsigned)(s[j++] - '0');
        if (j == i || v > 255 || (s[i] == '0' && j - i > 1))
            return 0;
        i = j;
        if (part < 3 && (i >= n || s[i++] != '.'))
            return 0;
    }
    return i == n;
}

/* IPv6address: 8 h16 groups (an IPv4 tail counts two), or fewer with one
** "::" standing for the rest. */
static int ipv6_ok(const char *s, size_t n)
{
    size_t i = 0, groups = 0, j;
    int dbl = n >= 2 && s[0] == ':' && s[1] == ':';
    i = dbl ? 2 : 0;
    while (i < n) {
        for (j = i; j < n && s[j] != ':'; j++)
            ;
        if (memchr(s + i, '.', j - i)) {
            if (j != n || !ipv4_ok(s + i, j - i))
                return 0;
            groups += 2;
            break;
        }
        if (j == i || j - i > 4)
            return 0;
        while (i < j)
            if (!is_hex(s[i++]))
                return 0;
        groups++;
        if (i == n)
            break;
        if (i + 1 < n && s[i + 1] == ':') {
            if (dbl)
                return 0;
            dbl = 1;
            i += 2;
        } else if (++i == n) {
            return 0;                          /* a trailing single ':' */
        }
    }
    return dbl ? groups <= 7 : groups == 8;
}

/* IP-literal: "[" ( IPv6address / IPvFuture ) "]", without the brackets;
** IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ). */
static int ip_literal_ok(const char *s, size_t n)
{
    size_t i = 1;
    if (n == 0 || (s[0] != 'v' && s[0] != 'V'))
        return ipv6_ok(s, n);
    while (i < n && is_hex(s[i]))
        i++;
    if (i == 1 || i >= n || s[i] != '.' || i + 1 == n)
        return 0;
    for (i++; i < n; i++)
        if (!is_unreserved(s[i]) && !is_sub_delim(s[i]) && s[i] != ':')
            return 0;
    return 1;
}

/* authority = [ userinfo "@" ] host [ ":" port ] in s[i..end). */
static const char *uri_authority(const char *s, size_t i, size_t end,
                                 size_t *at)
{
    const char *sign = memchr(s + i, '@', end - i);
    if (sign) {
        size_t u = (size_t)(sign - s);
        if ((*at = uri_span(s, i, u, ":")) != u)
            return "invalid userinfo";
        i = u + 1;
    }
    if (i < end && s[i] == '[') {
        const char *close = memchr(s + i, ']', end - i);
        *at = i;
        if (!close || !ip_literal_ok(s + i + 1, (size_t)(close - s) - i - 1))
            return "invalid IP literal";
        i = (size_t)(close - s) + 1;
    } else {
        i = uri_span(s, i, end, "");           /* reg-name, IPv4 too */
    }
    if (i < end && s[i] == ':')
        for (i++; i < end && is_digit(s[i]); i++)
            ;
    *at = i;
    return i == end ? NULL : "invalid host or port";
}

/* URI = scheme ":" hier-part [ "?" query ] [ "#" fragment ]: NULL when
** s[0..n) is one, else why (at byte *at).  ASCII only: an IRI is not a
** URI (RFC 3987 §1.1). */
static const char *uri_check(const char *s, size_t n, size_t *at)
{
    size_t i = 0;
    *at = 0;
    if (n == 0 || !is_alpha(s[0]))
        return "a URI begins with a scheme, which begins with a letter";
    while (i < n && (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '+' ||
                     s[i] == '-' || s[i] == '.'))
        i++;
    *at = i;
    if (i == n || s[i] != ':')
        return "the scheme must be followed by ':'";
    i++;
    if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
        size_t end = i + 2;
        const char *why;
        while (end < n && s[end] != '/' && s[end] != '?' && s[end] != '#')
            end++;
        if ((why = uri_authority(s, i + 2, end, at)) != NULL)
            return why;
        i = end;
    }
    i = uri_span(s, i, n, ":@/");                          /* path */
    if (i < n && s[i] == '?')
        i = uri_span(s, i + 1, n, ":@/?");                 /* query */
    if (i < n && s[i] == '#')
        i = uri_span(s, i + 1, n, ":@/?");                 /* fragment */
    *at = i;
    if (i == n)
        return NULL;
    return s[i] == '%' ? "invalid percent-encoding"
                       : "character not allowed in a URI";
}

/* MARK: - contentEncoding "base64": RFC 4648 §4 -------------------------- */

static int is_b64(int c)
{
    return is_alpha(c) || is_digit(c) || c == '+' || c == '/';
}

/* NULL when s[0..n) is padded base64 in the standard alphabet, else why
** (at byte *at).  Nonzero pad bits are accepted (RFC 4648 §3.5 lets a
** decoder accept them, and the text still decodes to the same bytes). */
static const char *b64_check(const char *s, size_t n, size_t *at)
{
    size_t i;
    for (i = 0; i < n; i++) {
        *at = i;
        if (s[i] == '=') {
            if (i + 2 < n || (i + 1 < n && s[i + 1] != '='))
                return "'=' is padding, only at the end";
            if (n % 4 == 0)
                return NULL;
            break;
        }
        if (!is_b64((unsigned char)s[i]))
            return "character not in the base64 alphabet";
    }
    *at = n;
    return n % 4 ? "length is not a multiple of 4 (padding missing)" : NULL;
}

/* MARK: - Validation ----------------------------------------------------- */

typedef struct vctx {
    const rcp_json *root;
    int             explain;   /* write the first failure's reason */
    out             err;
    unsigned        depth;
    int             overflow;  /* RCP_SCHEMA_MAX_DEPTH passed: undecided */
    unsigned        faildepth; /* quiet: instance depth of the failure */
    unsigned long   passes;    /* keywords that held so far */
} vctx;

/* Where a schema is being applied: the instance, its pointer and depth,
** and the schema's own location. */
typedef struct where {
    const rcp_json *v;
    const seg      *ip;
    unsigned        idepth;
    const seg      *sp;
} where;

typedef int (*eval_fn)(vctx *C, const rcp_json *arg, const rcp_json *s,
                       const where *w);

static int eval(vctx *C, const rcp_json *s, const where *w);

/* A failure at w.  Quiet: record its depth and return NULL.  Explain:
** start the message with the instance's pointer and return the text the
** reason goes into; fail_end closes it with the keyword's location. */
static out *fail_begin(vctx *C, const where *w)
{
    if (!C->explain) {
        C->faildepth = w->idepth;
        return NULL;
    }
    out_init(&C->err, C->err.p, C->err.cap);
    if (w->ip)
        put_ptr(&C->err, w->ip);
    else
        out_puts(&C->err, "(root)");
    out_puts(&C->err, ": ");
    return &C->err;
}

static int fail_end(vctx *C, const where *w, const rcp_json *arg)
{
    seg kw;
    if (!C->explain)
        return 1;
    kw = seg_key(w->sp, arg->key, arg->keylen);
    out_puts(&C->err, " (at ");
    put_ptr(&C->err, &kw);
    out_putc(&C->err, ')');
    return 1;
}

/* fail_begin, then "keyword: ". */
static out *fail_kw(vctx *C, const where *w, const rcp_json *arg)
{
    out *o = fail_begin(C, w);
    if (o) {
        out_putn(o, arg->key, arg->keylen);
        out_puts(o, ": ");
    }
    return o;
}

/* Apply schema sub, found at schema location sp, to instance v at ip
** (ip == w->ip: the same instance). */
static int apply(vctx *C, const where *w, const rcp_json *v, const seg *ip,
                 const rcp_json *sub, const seg *sp)
{
    where c;
    c.v = v;
    c.ip = ip;
    c.idepth = w->idepth + (ip != w->ip);
    c.sp = sp;
    return eval(C, sub, &c);
}

/* Apply sub to w's instance with explain off: a verdict, no message. */
static int quietly(vctx *C, const where *w, const rcp_json *sub,
                   const seg *sp)
{
    int saved = C->explain, bad;
    C->explain = 0;
    bad = apply(C, w, w->v, w->ip, sub, sp);
    C->explain = saved;
    return bad;
}

/* --- Any instance --- */

static int type_matches(const rcp_json *v, const rcp_json *t)
{
    if (rcp_json_streq(t, "integer"))
        return v->type == RCP_JSON_NUMBER && num_is_integer(v);
    if (rcp_json_streq(t, "boolean"))
        return v->type == RCP_JSON_TRUE || v->type == RCP_JSON_FALSE;
    return rcp_json_streq(t, type_name(v));
}

static int kw_type(vctx *C, const rcp_json *arg, const rcp_json *s,
                   const where *w)
{
    size_t i, n = arg->type == RCP_JSON_ARRAY ? arg->n : 1;
    const rcp_json *t = arg->type == RCP_JSON_ARRAY ? arg->kids : arg;
    out *o;
    (void)s;
    for (i = 0; i < n; i++)
        if (type_matches(w->v, &t[i]))
            return 0;
    if ((o = fail_kw(C, w, arg)) != NULL) {
        out_puts(o, "expected ");
        for (i = 0; i < n; i++) {
            out_puts(o, i == 0 ? "" : i + 1 < n ? ", " : " or ");
            out_putn(o, t[i].s, t[i].n);
        }
        out_printf(o, ", got %s ", type_name(w->v));
        put_value(o, w->v, 40);
    }
    return fail_end(C, w, arg);
}

static int kw_enum(vctx *C, const rcp_json *arg, const rcp_json *s,
                   const where *w)
{
    size_t i;
    out *o;
    (void)s;
    for (i = 0; i < arg->n; i++)
        if (rcp_schema_equal(w->v, &arg->kids[i]))
            return 0;
    if ((o = fail_kw(C, w, arg)) != NULL) {
        put_value(o, w->v, 40);
        out_puts(o, " is not one of ");
        put_value(o, arg, 120);
    }
    return fail_end(C, w, arg);
}

static int kw_const(vctx *C, const rcp_json *arg, const rcp_json *s,
                    const where *w)
{
    out *o;
    (void)s;
    if (rcp_schema_equal(w->v, arg))
        return 0;
    if ((o = fail_kw(C, w, arg)) != NULL) {
        out_puts(o, "expected ");
        put_value(o, arg, 60);
        out_puts(o, ", got ");
        put_value(o, w->v, 40);
    }
    return fail_end(C, w, arg);
}

static int kw_ref(vctx *C, const rcp_json *arg, const rcp_json *s,
                  const where *w);

/* --- Combinators --- */

static int kw_allof(vctx *C, const rcp_json *arg, const rcp_json *s,
                    const where *w)
{
    size_t i;
    seg k = seg_key(w->sp, arg->key, arg->keylen), b;
    (void)s;
    for (i = 0; i < arg->n; i++) {
        b = seg_index(&k, i);
        if (apply(C, w, w->v, w->ip, &arg->kids[i], &b))
            return 1;
    }
    return 0;
}

/* anyOf and oneOf: the branches that hold (up to two are noted), and the
** failing branch that came closest: deepest into the instance, then the
** most keywords that held before it failed, then the first. */
typedef struct branches {
    size_t        nok, ok[2], best;
    unsigned      bestdepth;
    unsigned long bestpasses;
} branches;

static void try_branches(vctx *C, const rcp_json *arg, const where *w,
                         const seg *k, int stop_at_first, branches *r)
{
    size_t i;
    int saved = C->explain;
    seg b;
    r->nok = r->best = 0;
    r->bestdepth = 0;
    r->bestpasses = 0;
    C->explain = 0;
    for (i = 0; i < arg->n && !C->overflow; i++) {
        unsigned long before = C->passes;
        b = seg_index(k, i);
        if (!apply(C, w, w->v, w->ip, &arg->kids[i], &b)) {
            if (r->nok < 2)
                r->ok[r->nok] = i;
            if (++r->nok == 1 && stop_at_first)
                break;
        } else if (i == 0 || C->faildepth > r->bestdepth ||
                   (C->faildepth == r->bestdepth &&
                    C->passes - before > r->bestpasses)) {
            r->best = i;
            r->bestdepth = C->faildepth;
            r->bestpasses = C->passes - before;
        }
    }
    C->explain = saved;
}

/* None held: explain the closest branch (quiet: pass its depth up). */
static int explain_closest(vctx *C, const rcp_json *arg, const where *w,
                           const seg *k, const branches *r)
{
    seg b = seg_index(k, r->best);
    if (C->overflow)
        return 1;
    if (!C->explain) {
        C->faildepth = r->bestdepth;
        return 1;
    }
    return apply(C, w, w->v, w->ip, &arg->kids[r->best], &b);
}

static int kw_anyof(vctx *C, const rcp_json *arg, const rcp_json *s,
                    const where *w)
{
    seg k = seg_key(w->sp, arg->key, arg->keylen);
    branches r;
    (void)s;
    try_branches(C, arg, w, &k, 1, &r);
    return r.nok ? C->overflow : explain_closest(C, arg, w, &k, &r);
}

static int kw_oneof(vctx *C, const rcp_json *arg, const rcp_json *s,
                    const where *w)
{
    seg k = seg_key(w->sp, arg->key, arg->keylen);
    branches r;
    out *o;
    (void)s;
    try_branches(C, arg, w, &k, 0, &r);
    if (r.nok == 1 || C->overflow)
        return C->overflow;
    if (r.nok == 0)
        return explain_closest(C, arg, w, &k, &r);
    if ((o = fail_kw(C, w, arg)) != NULL)
        out_printf(o, "matches %lu branches (%lu and %lu), exactly one is "
                   "allowed", (unsigned long)r.nok, (unsigned long)r.ok[0],
                   (unsigned long)r.ok[1]);
    return fail_end(C, w, arg);
}

static int kw_not(vctx *C, const rcp_json *arg, const rcp_json *s,
                  const where *w)
{
    seg k = seg_key(w->sp, arg->key, arg->keylen);
    out *o;
    (void)s;
    if (quietly(C, w, arg, &k) || C->overflow)
        return C->overflow;
    if ((o = fail_kw(C, w, arg)) != NULL) {
        out_puts(o, "matches the forbidden schema ");
        put_value(o, arg, 80);
    }
    return fail_end(C, w, arg);
}

/* if decides between its siblings then and else (2020-12 §10.2.2.1). */
static int kw_if(vctx *C, const rcp_json *arg, const rcp_json *s,
                 const where *w)
{
    seg k = seg_key(w->sp, arg->key, arg->keylen), b;
    const rcp_json *next;
    int bad = quietly(C, w, arg, &k);
    if (C->overflow)
        return 1;
    next = member_c(s, bad ? "else" : "then");
    if (!next)
        return 0;
    b = seg_key(w->sp, next->key, next->keylen);
    return apply(C, w, w->v, w->ip, next, &b);
}

/* --- Objects --- */

static int kw_properties(vctx *C, const rcp_json *arg, const rcp_json *s,
                         const where *w)
{
    size_t i;
    seg k = seg_key(w->sp, arg->key, arg->keylen), ps, is;
    (void)s;
    if (w->v->type != RCP_JSON_OBJECT)
        return 0;
    for (i = 0; i < arg->n; i++) {
        const rcp_json *p = &arg->kids[i];
        const rcp_json *m = member(w->v, p->key, p->keylen);
        if (!m)
            continue;
        ps = seg_key(&k, p->key, p->keylen);
        is = seg_key(w->ip, m->key, m->keylen);
        if (apply(C, w, m, &is, p, &ps))
            return 1;
    }
    return 0;
}

static int kw_additional(vctx *C, const rcp_json *arg, const rcp_json *s,
                         const where *w)
{
    const rcp_json *props = member_c(s, "properties");
    seg k = seg_key(w->sp, arg->key, arg->keylen), is;
    size_t i;
    if (w->v->type != RCP_JSON_OBJECT)
        return 0;
    for (i = 0; i < w->v->n; i++) {
        const rcp_json *m = &w->v->kids[i];
        if (shadowed(w->v, i) || member(props, m->key, m->keylen))
            continue;
        is = seg_key(w->ip, m->key, m->keylen);
        if (apply(C, w, m, &is, arg, &k))
            return 1;
    }
    return 0;
}

static int kw_required(vctx *C, const rcp_json *arg, const rcp_json *s,
                       const where *w)
{
    size_t i;
    out *o;
    (void)s;
    if (w->v->type != RCP_JSON_OBJECT)
        return 0;
    for (i = 0; i < arg->n; i++) {
        if (member(w->v, arg->kids[i].s, arg->kids[i].n))
            continue;
        if ((o = fail_kw(C, w, arg)) != NULL) {
            out_puts(o, "missing member ");
            put_value(o, &arg->kids[i], 60);
        }
        return fail_end(C, w, arg);
    }
    return 0;
}

/* --- Arrays --- */

static int kw_items(vctx *C, const rcp_json *arg, const rcp_json *s,
                    const where *w)
{
    size_t i;
    seg k = seg_key(w->sp, arg->key, arg->keylen), is;
    (void)s;
    if (w->v->type != RCP_JSON_ARRAY)
        return 0;
    for (i = 0; i < w->v->n; i++) {
        is = seg_index(w->ip, i);
        if (apply(C, w, &w->v->kids[i], &is, arg, &k))
            return 1;
    }
    return 0;
}

static int kw_minitems(vctx *C, const rcp_json *arg, const rcp_json *s,
                       const where *w)
{
    int64_t min = 0;
    out *o;
    (void)s;
    if (w->v->type != RCP_JSON_ARRAY ||
        (rcp_json_int(arg, &min) && (uint64_t)w->v->n >= (uint64_t)min))
        return 0;
    if ((o = fail_kw(C, w, arg)) != NULL)
        out_printf(o, "%lu items, at least %.*s required",
                   (unsigned long)w->v->n, (int)arg->n, arg->s);
    return fail_end(C, w, arg);
}

/* --- Numbers --- */

static int bound(vctx *C, const rcp_json *arg, const where *w, int sign,
                 const char *rel)
{
    out *o;
    if (w->v->type != RCP_JSON_NUMBER || num_cmp(w->v, arg) * sign >= 0)
        return 0;
    if ((o = fail_kw(C, w, arg)) != NULL)
        out_printf(o, "%.*s is %s %.*s", (int)(w->v->n < 40 ? w->v->n : 40),
                   w->v->s, rel, (int)arg->n, arg->s);
    return fail_end(C, w, arg);
}

static int kw_minimum(vctx *C, const rcp_json *arg, const rcp_json *s,
                      const where *w)
{
    (void)s;
    return bound(C, arg, w, 1, "less than");
}

static int kw_maximum(vctx *C, const rcp_json *arg, const rcp_json *s,
                      const where *w)
{
    (void)s;
    return bound(C, arg, w, -1, "greater than");
}

/* --- Strings --- */

static int kw_pattern(vctx *C, const rcp_json *arg, const rcp_json *s,
                      const where *w)
{
    pattern p;
    size_t at;
    out *o;
    (void)s;
    if (w->v->type != RCP_JSON_STRING)
        return 0;
    pat_compile(&p, arg->s, arg->n, &at);    /* compiled at load time */
    if (pat_match(&p, w->v->s, w->v->n))
        return 0;
    if ((o = fail_kw(C, w, arg)) != NULL) {
        put_value(o, w->v, 60);
        out_puts(o, " does not match ");
        put_value(o, arg, 80);
    }
    return fail_end(C, w, arg);
}

/* A string check: NULL when valid, else why and the byte offset. */
typedef const char *(*string_check_fn)(const char *s, size_t n, size_t *at);

static int string_kw(vctx *C, const rcp_json *arg, const where *w,
                     string_check_fn check, const char *what)
{
    size_t at;
    const char *why;
    out *o;
    if (w->v->type != RCP_JSON_STRING ||
        (why = check(w->v->s, w->v->n, &at)) == NULL)
        return 0;
    if ((o = fail_kw(C, w, arg)) != NULL) {
        put_value(o, w->v, 60);
        out_printf(o, " is not %s: %s (byte %lu)", what, why,
                   (unsigned long)at);
    }
    return fail_end(C, w, arg);
}

static int kw_format(vctx *C, const rcp_json *arg, const rcp_json *s,
                     const where *w)
{
    (void)s;
    return string_kw(C, arg, w, uri_check, "a URI (RFC 3986)");
}

static int kw_encoding(vctx *C, const rcp_json *arg, const rcp_json *s,
                       const where *w)
{
    (void)s;
    return string_kw(C, arg, w, b64_check, "base64 (RFC 4648 §4)");
}

/* MARK: - The keyword table ---------------------------------------------- */

/* What a keyword's argument is: a schema, a map of names to schemas, a
** non-empty array of schemas, or a value its check function judges. */
enum argkind { A_SCHEMA, A_MAP, A_LIST, A_VALUE };

typedef struct load {
    const rcp_json *root;
    out             err;
} load;

typedef int (*check_fn)(load *L, const rcp_json *arg, const seg *at);

typedef struct keyword {
    const char  *name;
    enum argkind arg;
    int          root_only;
    check_fn     check;        /* A_VALUE: is the argument well formed */
    eval_fn      eval;         /* NULL: annotation, or read by a sibling */
} keyword;

static int ck_string(load *L, const rcp_json *arg, const seg *at);
static int ck_type(load *L, const rcp_json *arg, const seg *at);
static int ck_array(load *L, const rcp_json *arg, const seg *at);
static int ck_any(load *L, const rcp_json *arg, const seg *at);
static int ck_required(load *L, const rcp_json *arg, const seg *at);
static int ck_count(load *L, const rcp_json *arg, const seg *at);
static int ck_number(load *L, const rcp_json *arg, const seg *at);
static int ck_pattern(load *L, const rcp_json *arg, const seg *at);
static int ck_format(load *L, const rcp_json *arg, const seg *at);
static int ck_encoding(load *L, const rcp_json *arg, const seg *at);
static int ck_ref(load *L, const rcp_json *arg, const seg *at);
static int ck_dialect(load *L, const rcp_json *arg, const seg *at);

/* Ordered by how often rcp-1.0.json uses them: the lookup is linear, and
** "type" alone is a third of the schema's keywords. */
static const keyword keywords[] = {
    { "type",                 A_VALUE,  0, ck_type,     kw_type },
    { "properties",           A_MAP,    0, NULL,        kw_properties },
    { "required",             A_VALUE,  0, ck_required, kw_required },
    { "$ref",                 A_VALUE,  0, ck_ref,      kw_ref },
    { "items",                A_SCHEMA, 0, NULL,        kw_items },
    { "const",                A_VALUE,  0, ck_any,      kw_const },
    { "minimum",              A_VALUE,  0, ck_number,   kw_minimum },
    { "enum",                 A_VALUE,  0, ck_array,    kw_enum },
    { "if",                   A_SCHEMA, 0, NULL,        kw_if },
    { "then",                 A_SCHEMA, 0, NULL,        NULL },
    { "else",                 A_SCHEMA, 0, NULL,        NULL },
    { "oneOf",                A_LIST,   0, NULL,        kw_oneof },
    { "anyOf",                A_LIST,   0, NULL,        kw_anyof },
    { "allOf",                A_LIST,   0, NULL,        kw_allof },
    { "not",                  A_SCHEMA, 0, NULL,        kw_not },
    { "additionalProperties", A_SCHEMA, 0, NULL,        kw_additional },
    { "maximum",              A_VALUE,  0, ck_number,   kw_maximum },
    { "minItems",             A_VALUE,  0, ck_count,    kw_minitems },
    { "pattern",              A_VALUE,  0, ck_pattern,  kw_pattern },
    { "format",               A_VALUE,  0, ck_format,   kw_format },
    { "contentEncoding",      A_VALUE,  0, ck_encoding, kw_encoding },
    { "description",          A_VALUE,  0, ck_string,   NULL },
    { "title",                A_VALUE,  0, ck_string,   NULL },
    { "$comment",             A_VALUE,  0, ck_string,   NULL },
    { "$defs",                A_MAP,    0, NULL,        NULL },
    { "$schema",              A_VALUE,  1, ck_dialect,  NULL },
    { "$id",                  A_VALUE,  1, ck_string,   NULL }
};

static const keyword *keyword_find(const char *k, size_t n)
{
    size_t i;
    for (i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i].name) == n && memcmp(keywords[i].name, k, n)
            == 0)
            return &keywords[i];
    return NULL;
}

static int eval(vctx *C, const rcp_json *s, const where *w)
{
    size_t i;
    int bad = 0;
    if (s->type == RCP_JSON_TRUE)
        return 0;
    if (s->type == RCP_JSON_FALSE) {
        out *o = fail_begin(C, w);
        if (o) {
            out_puts(o, "false: the schema false allows no value (at ");
            put_ptr(o, w->sp);
            out_putc(o, ')');
        }
        return 1;
    }
    if (C->depth == RCP_SCHEMA_MAX_DEPTH) {
        C->overflow = 1;
        return 1;
    }
    C->depth++;
    for (i = 0; i < s->n && !bad && !C->overflow; i++) {
        const keyword *k = keyword_find(s->kids[i].key, s->kids[i].keylen);
        assert(k != NULL);                  /* rcp_schema_load checked */
        if (k->eval) {
            bad = k->eval(C, &s->kids[i], s, w);
            C->passes += !bad;
        }
    }
    C->depth--;
    return bad || C->overflow;
}

/* MARK: - $ref: same-document JSON pointers ------------------------------ */

static int hexval(int c)
{
    return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* One segment of a "#/..." reference, decoded: percent-escapes (it is a
** URI fragment, RFC 3986 §2.1), then ~1 and ~0 (RFC 6901 §4).  Returns
** its decoded length, or -1 when malformed or longer than REF_SEG_MAX. */
static long ref_segment(const char *s, size_t n, char *buf)
{
    size_t i, len = 0;
    for (i = 0; i < n; i++, len++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n || !is_hex(s[i + 1]) || !is_hex(s[i + 2]))
                return -1;
            c = hexval(s[i + 1]) << 4 | hexval(s[i + 2]);
            i += 2;
        }
        if (len == REF_SEG_MAX)
            return -1;
        buf[len] = (char)c;
    }
    for (i = 0, n = len, len = 0; i < n; i++, len++) {
        if (buf[i] == '~') {
            if (i + 1 == n || (buf[i + 1] != '0' && buf[i + 1] != '1'))
                return -1;
            buf[len] = buf[++i] == '0' ? '~' : '/';
        } else {
            buf[len] = buf[i];
        }
    }
    return (long)len;
}

/* The array element named by a canonical index ("0", "12", not "01"). */
static const rcp_json *ref_index(const rcp_json *a, const char *k, size_t n)
{
    size_t i, v = 0;
    if (n == 0 || n > 9 || (n > 1 && k[0] == '0'))
        return NULL;
    for (i = 0; i < n; i++) {
        if (!is_digit(k[i]))
            return NULL;
        v = v * 10 + (size_t)(k[i] - '0');
    }
    return v < a->n ? &a->kids[v] : NULL;
}

/* The schema a same-document reference names, or NULL.  The walk knows
** where schemas are (keywords[].arg), so a pointer into a non-schema
** value (an enum, a required list) names nothing. */
static const rcp_json *resolve(const rcp_json *root, const char *ref,
                               size_t n)
{
    const rcp_json *cur = root;
    enum argkind at = A_SCHEMA;
    char buf[REF_SEG_MAX];
    size_t i = 1;
    if (n == 0 || ref[0] != '#')
        return NULL;
    while (i < n) {
        size_t j = i + 1;
        long len;
        const keyword *k;
        if (ref[i] != '/')
            return NULL;
        while (j < n && ref[j] != '/')
            j++;
        if ((len = ref_segment(ref + i + 1, j - i - 1, buf)) < 0)
            return NULL;
        i = j;
        if (at == A_LIST) {
            cur = ref_index(cur, buf, (size_t)len);
            at = A_SCHEMA;
        } else if (at == A_MAP) {
            cur = member(cur, buf, (size_t)len);
            at = A_SCHEMA;
        } else {
            k = keyword_find(buf, (size_t)len);
            if (!k || k->arg == A_VALUE)
                return NULL;
            cur = member(cur, buf, (size_t)len);
            at = k->arg;
        }
        if (!cur)
            return NULL;
    }
    return at == A_SCHEMA ? cur : NULL;
}

static int kw_ref(vctx *C, const rcp_json *arg, const rcp_json *s,
                  const where *w)
{
    seg r = seg_key(NULL, arg->s, arg->n);
    const rcp_json *target = resolve(C->root, arg->s, arg->n);
    (void)s;
    assert(target != NULL);                 /* rcp_schema_load checked */
    r.raw = 1;
    return apply(C, w, w->v, w->ip, target, &r);
}

/* MARK: - Load-time checks ----------------------------------------------- */

static int load_error(load *L, const seg *at, const char *fmt, ...)
{
    char tmp[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put_ptr(&L->err, at);
    out_puts(&L->err, ": ");
    out_puts(&L->err, tmp);
    return -1;
}

static int ck_string(load *L, const rcp_json *arg, const seg *at)
{
    return arg->type == RCP_JSON_STRING ? 0
           : load_error(L, at, "must be a string");
}

static int ck_any(load *L, const rcp_json *arg, const seg *at)
{
    (void)L, (void)arg, (void)at;
    return 0;
}

static int ck_array(load *L, const rcp_json *arg, const seg *at)
{
    return arg->type == RCP_JSON_ARRAY ? 0
           : load_error(L, at, "must be an array");
}

static int ck_number(load *L, const rcp_json *arg, const seg *at)
{
    return arg->type == RCP_JSON_NUMBER ? 0
           : load_error(L, at, "must be a number");
}

static int ck_count(load *L, const rcp_json *arg, const seg *at)
{
    int64_t v;
    return rcp_json_int(arg, &v) && v >= 0 ? 0
           : load_error(L, at, "must be a non-negative integer");
}

/* An array of unique strings, each accepted by ok (NULL: any). */
static int unique_strings(load *L, const rcp_json *arg, const seg *at,
                          int (*ok)(const rcp_json *), const char *what)
{
    size_t i, j;
    if (arg->type != RCP_JSON_ARRAY)
        return load_error(L, at, "must be an array of %s", what);
    for (i = 0; i < arg->n; i++) {
        if (arg->kids[i].type != RCP_JSON_STRING ||
            (ok && !ok(&arg->kids[i])))
            return load_error(L, at, "item %lu is not %s", (unsigned long)i,
                              what);
        for (j = 0; j < i; j++)
            if (rcp_schema_equal(&arg->kids[i], &arg->kids[j]))
                return load_error(L, at, "item %lu repeats item %lu",
                                  (unsigned long)i, (unsigned long)j);
    }
    return 0;
}

static int is_type_name(const rcp_json *t)
{
    static const char *const names[] = { "null", "boolean", "object",
                                         "array", "number", "string",
                                         "integer" };
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (rcp_json_streq(t, names[i]))
            return 1;
    return 0;
}

static int ck_type(load *L, const rcp_json *arg, const seg *at)
{
    if (arg->type == RCP_JSON_STRING)
        return is_type_name(arg) ? 0
               : load_error(L, at, "unknown type \"%.*s\"", (int)arg->n,
                            arg->s);
    if (arg->type == RCP_JSON_ARRAY && arg->n == 0)
        return load_error(L, at, "must name at least one type");
    return unique_strings(L, arg, at, is_type_name, "a type name");
}

static int ck_required(load *L, const rcp_json *arg, const seg *at)
{
    return unique_strings(L, arg, at, NULL, "a string");
}

static int ck_pattern(load *L, const rcp_json *arg, const seg *at)
{
    pattern p;
    size_t off;
    const char *why;
    if (arg->type != RCP_JSON_STRING)
        return load_error(L, at, "must be a string");
    why = pat_compile(&p, arg->s, arg->n, &off);
    return why ? load_error(L, at, "\"%.*s\": %s (byte %lu)", (int)arg->n,
                            arg->s, why, (unsigned long)off)
               : 0;
}

static int ck_format(load *L, const rcp_json *arg, const seg *at)
{
    return rcp_json_streq(arg, "uri") ? 0
           : load_error(L, at, "only the format \"uri\" is supported by "
                        "this validator");
}

static int ck_encoding(load *L, const rcp_json *arg, const seg *at)
{
    return rcp_json_streq(arg, "base64") ? 0
           : load_error(L, at, "only the encoding \"base64\" is supported "
                        "by this validator");
}

static int ck_ref(load *L, const rcp_json *arg, const seg *at)
{
    if (arg->type != RCP_JSON_STRING)
        return load_error(L, at, "must be a string");
    if (arg->n == 0 || arg->s[0] != '#')
        return load_error(L, at, "\"%.*s\": only same-document references "
                          "(\"#/...\") are supported", (int)arg->n, arg->s);
    return resolve(L->root, arg->s, arg->n) ? 0
           : load_error(L, at, "\"%.*s\" names no schema in this document",
                        (int)arg->n, arg->s);
}

/* The one dialect implemented: another draft reads the same keywords
** differently (items as an array in draft 7). */
static int ck_dialect(load *L, const rcp_json *arg, const seg *at)
{
    return rcp_json_streq(arg,
                          "https://json-schema.org/draft/2020-12/schema")
           ? 0 : load_error(L, at, "only draft 2020-12 is supported");
}

static int check_schema(load *L, const rcp_json *s, const seg *at,
                        int is_root);

static int check_arg(load *L, const keyword *k, const rcp_json *m,
                     const seg *at)
{
    size_t i;
    seg sub;
    switch (k->arg) {
    case A_SCHEMA:
        return check_schema(L, m, at, 0);
    case A_MAP:
        if (m->type != RCP_JSON_OBJECT)
            return load_error(L, at, "must be an object of schemas");
        for (i = 0; i < m->n; i++) {
            if (shadowed(m, i))
                return load_error(L, at, "a name appears twice");
            sub = seg_key(at, m->kids[i].key, m->kids[i].keylen);
            if (check_schema(L, &m->kids[i], &sub, 0))
                return -1;
        }
        return 0;
    case A_LIST:
        if (m->type != RCP_JSON_ARRAY || m->n == 0)
            return load_error(L, at, "must be a non-empty array of schemas");
        for (i = 0; i < m->n; i++) {
            sub = seg_index(at, i);
            if (check_schema(L, &m->kids[i], &sub, 0))
                return -1;
        }
        return 0;
    default:
        return k->check(L, m, at);
    }
}

static int check_schema(load *L, const rcp_json *s, const seg *at,
                        int is_root)
{
    size_t i;
    if (s->type == RCP_JSON_TRUE || s->type == RCP_JSON_FALSE)
        return 0;
    if (s->type != RCP_JSON_OBJECT)
        return load_error(L, at, "a schema is an object or a boolean");
    for (i = 0; i < s->n; i++) {
        const rcp_json *m = &s->kids[i];
        const keyword *k = keyword_find(m->key, m->keylen);
        seg km = seg_key(at, m->key, m->keylen);
        if (!k)
            return load_error(L, &km, "unknown keyword: this validator "
                              "implements only the keywords rcp-1.0.json "
                              "uses");
        if (shadowed(s, i))
            return load_error(L, &km, "keyword appears twice");
        if (k->root_only && !is_root)
            return load_error(L, &km, "supported only at the root");
        if (check_arg(L, k, m, &km))
            return -1;
    }
    return 0;
}

/* MARK: - Public API ----------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *msg)
{
    out o;
    out_init(&o, err, errlen);
    out_puts(&o, msg);
}

rcp_schema *rcp_schema_load(const char *text, size_t len, char *err,
                            size_t errlen)
{
    rcp_schema *s = rcp_malloc(sizeof *s);
    char *copy;
    rcp_json_err je;
    load L;
    seg top;
    if (!s) {
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    rcp_arena_init(&s->arena, 0);
    copy = rcp_arena_alloc(&s->arena, len);
    if (copy && len)
        memcpy(copy, text, len);
    s->root = copy ? rcp_json_parse(&s->arena, copy, len, 0, &je) : NULL;
    if (!s->root) {
        char msg[160];
        if (!copy || je.code == RCP_JSON_E_NOMEM)
            sprintf(msg, "out of memory");
        else
            sprintf(msg, "not JSON: %s (byte %lu)", je.msg,
                    (unsigned long)je.offset);
        set_err(err, errlen, msg);
        rcp_schema_free(s);
        return NULL;
    }
    L.root = s->root;
    out_init(&L.err, err, errlen);
    top = seg_key(NULL, "#", 1);
    top.raw = 1;
    if (check_schema(&L, s->root, &top, 1)) {
        rcp_schema_free(s);
        return NULL;
    }
    return s;
}

void rcp_schema_free(rcp_schema *s)
{
    if (!s)
        return;
    rcp_arena_free(&s->arena);
    rcp_free(s);
}

const rcp_schema *rcp_schema_rcp1(void)
{
    static rcp_schema *rcp1;
    const rcp_bundled_file *f;
    if (!rcp1 && (f = rcp_bundled_find("rcp-1.0.json")) != NULL)
        rcp1 = rcp_schema_load(f->data, f->len, NULL, 0);
    return rcp1;
}

int rcp_schema_validate(const rcp_schema *s, const char *ref,
                        const rcp_json *v, char *err, size_t errlen)
{
    vctx C;
    where w;
    seg top;
    const rcp_json *target;
    if (!ref)
        ref = "#";
    memset(&C, 0, sizeof C);
    out_init(&C.err, err, errlen);
    target = s && v ? resolve(s->root, ref, strlen(ref)) : NULL;
    if (!target) {
        out_puts(&C.err, s && v ? "no schema at " : "no schema or value");
        if (s && v)
            out_puts(&C.err, ref);
        return -1;
    }
    C.root = s->root;
    top = seg_key(NULL, ref, strlen(ref));
    top.raw = 1;
    w.v = v;
    w.ip = NULL;
    w.idepth = 0;
    w.sp = &top;
    if (!eval(&C, target, &w))
        return 0;
    if (!C.overflow && C.err.cap) {
        C.explain = 1;              /* the same verdict, with its reason */
        eval(&C, target, &w);
    }
    if (C.overflow) {
        out_init(&C.err, err, errlen);
        out_printf(&C.err, "nesting deeper than %u schemas: cannot decide",
                   RCP_SCHEMA_MAX_DEPTH);
        return -1;
    }
    return 1;
}

int rcp_schema_validate_result(const rcp_schema *s, const char *method,
                               const rcp_json *result, char *err,
                               size_t errlen)
{
    rcp_json pair, kids[2];
    if (!method || !result)
        return rcp_schema_validate(s, "#/$defs/ResultFor", NULL, err,
                                   errlen);
    memset(kids, 0, sizeof kids);
    kids[0].type = RCP_JSON_STRING;
    kids[0].s = method;
    kids[0].n = strlen(method);
    kids[0].key = "method";
    kids[0].keylen = 6;
    kids[1] = *result;
    kids[1].key = "result";
    kids[1].keylen = 6;
    memset(&pair, 0, sizeof pair);
    pair.type = RCP_JSON_OBJECT;
    pair.kids = kids;
    pair.n = 2;
    return rcp_schema_validate(s, "#/$defs/ResultFor", &pair, err, errlen);
}
