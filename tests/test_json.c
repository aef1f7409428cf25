/*
** test_json.c -- json.c: the core (allocator hook, arena, buffer, §12
** messages), the RFC 8259 parser, the accessors and the writer.
**
** Vectors are named by outcome like JSONTestSuite: y_ must be accepted,
** n_ must be rejected (with the code and the byte offset given).
*/
#include "rcp.h"
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* MARK: - helpers ------------------------------------------------------- */

static rcp_arena arena;
static rcp_json_err jerr;

static void setup(void)
{
    rcp_arena_init(&arena, 0);
}

static void teardown(void)
{
    rcp_arena_free(&arena);
    rcp_set_allocator(NULL, NULL);
}

static const rcp_json *parse_n(const char *text, size_t len)
{
    return rcp_json_parse(&arena, text, len, 0, &jerr);
}

static const rcp_json *parse(const char *text)
{
    return parse_n(text, strlen(text));
}

/* The parsed text written back compactly, NUL-terminated (static). */
static const char *rewrite(const rcp_json *v)
{
    static char out[1 << 16];
    rcp_buf b;
    rcp_jw w;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_value(&w, v);
    ck_assert(!b.oom && b.len < sizeof out);
    memcpy(out, b.data, b.len);
    out[b.len] = '\0';
    rcp_buf_free(&b);
    return out;
}

static const char *fmt_d(double v)
{
    static char out[40];
    size_t n = rcp_json_fmt_double(out, v);
    ck_assert_uint_lt(n, 32);
    out[n] = '\0';
    return out;
}

static const char *fmt_f(float v)
{
    static char out[40];
    size_t n = rcp_json_fmt_float(out, v);
    ck_assert_uint_lt(n, 32);
    out[n] = '\0';
    return out;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef struct reject {
    const char *text;
    size_t len;                 /* 0: strlen(text) */
    rcp_json_errcode code;
    size_t offset;
} reject;

static void check_rejects(const reject *r, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        size_t len = r[i].len ? r[i].len : strlen(r[i].text);
        const rcp_json *v = parse_n(r[i].text, len);
        ck_assert_msg(v == NULL, "accepted n_ vector #%u", (unsigned)i);
        ck_assert_msg(jerr.code == r[i].code && jerr.offset == r[i].offset,
                      "n_ vector #%u: code %d at %u (%s), want %d at %u",
                      (unsigned)i, jerr.code, (unsigned)jerr.offset,
                      jerr.msg, r[i].code, (unsigned)r[i].offset);
        ck_assert(jerr.msg && *jerr.msg);
    }
}

static void check_accepts(const char *const *t, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        ck_assert_msg(parse(t[i]) != NULL, "y_ vector %s rejected: %s at %u",
                      t[i], jerr.msg, (unsigned)jerr.offset);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* MARK: - core ---------------------------------------------------------- */

START_TEST(code_message_covers_section_12_table)
{
    ck_assert_str_eq(rcp_code_message(-32700), "Parse error");
    ck_assert_str_eq(rcp_code_message(-32600), "Invalid Request");
    ck_assert_str_eq(rcp_code_message(-32601), "Method not found");
    ck_assert_str_eq(rcp_code_message(-32602), "Invalid params");
    ck_assert_str_eq(rcp_code_message(-32603), "Internal error");
    ck_assert_str_eq(rcp_code_message(-32001), "Not initialized");
    ck_assert_str_eq(rcp_code_message(-32002), "Version mismatch");
    ck_assert_str_eq(rcp_code_message(-32003), "Capability missing");
    ck_assert_str_eq(rcp_code_message(-32004), "Unknown method");
    ck_assert_str_eq(rcp_code_message(-32005), "Option unsupported");
    ck_assert_str_eq(rcp_code_message(-32006), "Cancelled");
    ck_assert_str_eq(rcp_code_message(-32010), "Backend unavailable");
    ck_assert_str_eq(rcp_code_message(-32011), "Rate limited");
    ck_assert_str_eq(rcp_code_message(-32012), "Unauthorized");
    ck_assert_str_eq(rcp_code_message(-32013), "Payload too large");
    ck_assert_str_eq(rcp_code_message(-32014), "Timeout");
    ck_assert_str_eq(rcp_code_message(-32015), "Not found");
    ck_assert_str_eq(rcp_code_message(-32016), "Conflict");
}
END_TEST

START_TEST(code_message_unknown_codes_are_generic)
{
    ck_assert_str_eq(rcp_code_message(-32099), "Server error");
    ck_assert_str_eq(rcp_code_message(-32000), "Server error");
    ck_assert_str_eq(rcp_code_message(-32007), "Server error");
    ck_assert_str_eq(rcp_code_message(-31999), "Error");
    ck_assert_str_eq(rcp_code_message(0), "Error");
    ck_assert_str_eq(rcp_code_message(42), "Error");
}
END_TEST

/* The strictest alignment C99 can name, without alignof. */
struct align_ld { char c; long double x; };
struct align_ll { char c; long long x; };
struct align_p  { char c; void *x; };

START_TEST(arena_allocations_are_aligned_and_distinct)
{
    char *prev = NULL;
    int i;
    for (i = 1; i < 3000; i++) {
        char *p = rcp_arena_alloc(&arena, (size_t)(i % 37) + 1);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq((uintptr_t)p % offsetof(struct align_ld, x), 0);
        ck_assert_uint_eq((uintptr_t)p % offsetof(struct align_ll, x), 0);
        ck_assert_uint_eq((uintptr_t)p % offsetof(struct align_p, x), 0);
        memset(p, 0xAB, (size_t)(i % 37) + 1);
        ck_assert(p != prev);
        prev = p;
    }
    /* bigger than any block so far: still one piece */
    prev = rcp_arena_alloc(&arena, 5u << 20);
    ck_assert_ptr_nonnull(prev);
    memset(prev, 0, 5u << 20);
}
END_TEST

START_TEST(arena_limit_refuses_past_the_cap)
{
    rcp_arena small;
    rcp_arena_init(&small, 1000);
    ck_assert_ptr_nonnull(rcp_arena_alloc(&small, 600));
    ck_assert_ptr_null(rcp_arena_alloc(&small, 600));
    ck_assert_ptr_nonnull(rcp_arena_alloc(&small, 100));
    ck_assert_uint_le(small.used, 1000);
    rcp_arena_reset(&small);
    ck_assert_uint_eq(small.used, 0);
    ck_assert_ptr_nonnull(rcp_arena_alloc(&small, 900));
    rcp_arena_free(&small);
}
END_TEST

/* A counting allocator that can fail the Nth call (Lua's ltests.c). */
static long alloc_calls, alloc_live, alloc_fail_at;

static void *count_alloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (n == 0) {
        if (p)
            alloc_live--;
        free(p);
        return NULL;
    }
    if (++alloc_calls == alloc_fail_at)
        return NULL;
    if (!p)
        alloc_live++;
    return realloc(p, n);
}

static void count_reset(long fail_at)
{
    alloc_calls = alloc_live = 0;
    alloc_fail_at = fail_at;
    rcp_set_allocator(count_alloc, NULL);
}

START_TEST(arena_reset_keeps_one_block_so_reuse_needs_no_malloc)
{
    int round, i;
    count_reset(0);
    for (round = 0; round < 3; round++) {
        long before = alloc_calls;
        for (i = 0; i < 2000; i++)
            ck_assert_ptr_nonnull(rcp_arena_alloc(&arena, 100));
        if (round > 0)
            ck_assert_int_eq(alloc_calls, before);
        rcp_arena_reset(&arena);
        ck_assert_int_eq(alloc_live, 1);
    }
    rcp_arena_free(&arena);
    ck_assert_int_eq(alloc_live, 0);
}
END_TEST

START_TEST(buf_oom_is_sticky_and_ignores_appends)
{
    rcp_buf b;
    rcp_buf_init(&b);
    rcp_buf_puts(&b, "abc");
    ck_assert_uint_eq(b.len, 3);
    count_reset(1);                    /* the next call fails */
    rcp_buf_put(&b, "x", 1);           /* fits the first chunk: no call */
    rcp_buf_reserve(&b, 1000);
    ck_assert_int_eq(b.oom, 1);
    rcp_set_allocator(NULL, NULL);
    rcp_buf_puts(&b, "more");
    rcp_buf_putc(&b, 'z');
    ck_assert_int_eq(b.oom, 1);
    ck_assert_uint_eq(b.len, 4);
    ck_assert_int_eq(rcp_buf_reserve(&b, 1), -1);
    rcp_buf_free(&b);
    ck_assert_int_eq(b.oom, 0);
    ck_assert_ptr_null(b.data);
}
END_TEST

/* Whoever sees a failed text clears it and writes the next one in the
** same memory: rcp_buf_clear keeps the bytes (cap stays true), so the next
** text needs no allocation at all while it fits. */
START_TEST(buf_clear_after_oom_reuses_the_memory_without_allocating)
{
    rcp_buf b;
    char *data;
    size_t cap;
    rcp_buf_init(&b);
    rcp_buf_puts(&b, "abc");
    data = b.data;
    cap = b.cap;
    count_reset(1);
    ck_assert_int_eq(rcp_buf_reserve(&b, 1000), -1);
    ck_assert_int_eq(b.oom, 1);
    rcp_buf_clear(&b);
    ck_assert_int_eq(b.oom, 0);
    ck_assert_uint_eq(b.len, 0);
    count_reset(1);                     /* any allocation would fail */
    rcp_buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{}}");
    ck_assert_int_eq(alloc_calls, 0);
    ck_assert_int_eq(b.oom, 0);
    ck_assert_ptr_eq(b.data, data);
    ck_assert_uint_eq(b.cap, cap);
    ck_assert(b.len == 35 && memcmp(b.data, "{\"jsonrpc\"", 10) == 0);
    rcp_set_allocator(NULL, NULL);
    rcp_buf_free(&b);
}
END_TEST

START_TEST(allocator_hook_is_used_and_null_restores_default)
{
    void *p;
    count_reset(0);
    p = rcp_malloc(10);
    ck_assert_int_eq(alloc_live, 1);
    p = rcp_realloc(p, 100);
    rcp_free(p);
    rcp_free(NULL);
    ck_assert_int_eq(alloc_live, 0);
    ck_assert_int_eq(alloc_calls, 2);
    ck_assert_ptr_null(rcp_malloc(0));
    rcp_set_allocator(NULL, NULL);
    p = rcp_malloc(10);
    ck_assert_int_eq(alloc_calls, 2);
    rcp_free(p);
}
END_TEST

/* MARK: - parser: structure and whitespace (RFC 8259 §2) ---------------- */

START_TEST(y_any_value_is_a_json_text)
{
    static const char *const y[] = {
        "null", "true", "false", "0", "\"\"", "[]", "{}", " [ ] ",
        "{\"a\":{\"b\":[1,{},[]]}}", "[null,true,false,\"x\",-1.5e-3]",
        " \t\r\n{ \"k\" \t:\r\n [ 1 , 2 ] }\n"
    };
    check_accepts(y, N_OF(y));
}
END_TEST

START_TEST(n_empty_input_has_no_value)
{
    static const reject n[] = {
        {"", 0, RCP_JSON_E_EMPTY, 0},
        {" \t\r\n", 0, RCP_JSON_E_EMPTY, 4},
    };
    check_rejects(n, N_OF(n));
    ck_assert_ptr_null(rcp_json_parse(&arena, NULL, 0, 0, &jerr));
    ck_assert_int_eq(jerr.code, RCP_JSON_E_EMPTY);
}
END_TEST

START_TEST(n_only_four_whitespace_bytes)
{
    static const reject n[] = {
        {"\v1", 0, RCP_JSON_E_TOKEN, 0},
        {"\f1", 0, RCP_JSON_E_TOKEN, 0},
        {"[1,\f2]", 0, RCP_JSON_E_TOKEN, 3},
        {"\xC2\xA0" "1", 0, RCP_JSON_E_TOKEN, 0},       /* U+00A0 */
        {"\xEF\xBB\xBF" "1", 0, RCP_JSON_E_TOKEN, 0},   /* BOM */
        {"1\v", 0, RCP_JSON_E_TRAILING, 1},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

START_TEST(n_trailing_data_after_the_value)
{
    static const reject n[] = {
        {"1 2", 0, RCP_JSON_E_TRAILING, 2},
        {"{}x", 0, RCP_JSON_E_TRAILING, 2},
        {"[]]", 0, RCP_JSON_E_TRAILING, 2},
        {"\"a\"\"b\"", 0, RCP_JSON_E_TRAILING, 3},
        {"null,", 0, RCP_JSON_E_TRAILING, 4},
        {"truex", 0, RCP_JSON_E_TRAILING, 4},
    };
    check_rejects(n, N_OF(n));
    ck_assert_ptr_nonnull(parse("1 \n"));
}
END_TEST

START_TEST(n_structure_errors_name_the_byte)
{
    static const reject n[] = {
        {"[1,]", 0, RCP_JSON_E_TOKEN, 3},
        {"[,1]", 0, RCP_JSON_E_TOKEN, 1},
        {"[1 2]", 0, RCP_JSON_E_TOKEN, 3},
        {"{\"a\":1,}", 0, RCP_JSON_E_TOKEN, 7},
        {"{\"a\" 1}", 0, RCP_JSON_E_TOKEN, 5},
        {"{a:1}", 0, RCP_JSON_E_TOKEN, 1},
        {"{'a':1}", 0, RCP_JSON_E_TOKEN, 1},
        {"{\"a\":1 \"b\":2}", 0, RCP_JSON_E_TOKEN, 7},
        {"{1:1}", 0, RCP_JSON_E_TOKEN, 1},
        {"[}", 0, RCP_JSON_E_TOKEN, 1},
        {"{]", 0, RCP_JSON_E_TOKEN, 1},
        {"[1}", 0, RCP_JSON_E_TOKEN, 2},
        {"nul", 0, RCP_JSON_E_TOKEN, 3},
        {"tRue", 0, RCP_JSON_E_TOKEN, 1},
        {"[nulL]", 0, RCP_JSON_E_TOKEN, 4},
        {"'a'", 0, RCP_JSON_E_TOKEN, 0},
        {"]", 0, RCP_JSON_E_TOKEN, 0},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

START_TEST(n_truncated_input_reports_its_length)
{
    static const reject n[] = {
        {"[", 0, RCP_JSON_E_UNTERMINATED, 1},
        {"[1", 0, RCP_JSON_E_UNTERMINATED, 2},
        {"[1,", 0, RCP_JSON_E_UNTERMINATED, 3},
        {"{", 0, RCP_JSON_E_UNTERMINATED, 1},
        {"{\"a\"", 0, RCP_JSON_E_UNTERMINATED, 4},
        {"{\"a\":", 0, RCP_JSON_E_UNTERMINATED, 5},
        {"{\"a\":1", 0, RCP_JSON_E_UNTERMINATED, 6},
        {"\"abc", 0, RCP_JSON_E_UNTERMINATED, 4},
        {"\"ab\\", 0, RCP_JSON_E_UNTERMINATED, 4},
        {"\"\\u12", 0, RCP_JSON_E_UNTERMINATED, 5},
        {"\"\\uD83D", 0, RCP_JSON_E_UNTERMINATED, 7},
        {"\"\\uD83D\\", 0, RCP_JSON_E_UNTERMINATED, 8},
        {"\"\\uD83D\\uDE", 0, RCP_JSON_E_UNTERMINATED, 11},
        {"[[[", 0, RCP_JSON_E_UNTERMINATED, 3},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

/* MARK: - parser: numbers (RFC 8259 §6) --------------------------------- */

START_TEST(y_numbers_in_the_grammar)
{
    static const char *const y[] = {
        "0", "-0", "0.0", "-0.0", "1", "-1", "10", "123456789", "0.5",
        "1e5", "1E5", "1e+5", "1e-5", "1.5E-05", "-0e0", "0e+0",
        "123456789012345678901234567890", "1e999999", "[0,-0,1,-1]",
        "{\"a\":0}"
    };
    check_accepts(y, N_OF(y));
}
END_TEST

START_TEST(n_number_grammar_each_rule)
{
    static const reject n[] = {
        {"01", 0, RCP_JSON_E_NUMBER, 1},        /* leading zero */
        {"-01", 0, RCP_JSON_E_NUMBER, 2},
        {"00", 0, RCP_JSON_E_NUMBER, 1},
        {"+1", 0, RCP_JSON_E_NUMBER, 0},        /* no plus */
        {"[+1]", 0, RCP_JSON_E_NUMBER, 1},
        {".5", 0, RCP_JSON_E_NUMBER, 0},        /* digit before '.' */
        {"-.5", 0, RCP_JSON_E_NUMBER, 1},
        {"1.", 0, RCP_JSON_E_NUMBER, 2},        /* digit after '.' */
        {"1.e5", 0, RCP_JSON_E_NUMBER, 2},
        {"[1.]", 0, RCP_JSON_E_NUMBER, 3},
        {"1e", 0, RCP_JSON_E_NUMBER, 2},        /* digit in exponent */
        {"1e+", 0, RCP_JSON_E_NUMBER, 3},
        {"1E-x", 0, RCP_JSON_E_NUMBER, 3},
        {"-", 0, RCP_JSON_E_NUMBER, 1},         /* digit after '-' */
        {"- 1", 0, RCP_JSON_E_NUMBER, 1},
        {"NaN", 0, RCP_JSON_E_NUMBER, 0},       /* no NaN/Infinity */
        {"Infinity", 0, RCP_JSON_E_NUMBER, 0},
        {"-Infinity", 0, RCP_JSON_E_NUMBER, 1},
        {"[NaN]", 0, RCP_JSON_E_NUMBER, 1},
        {"0x1F", 0, RCP_JSON_E_NUMBER, 1},      /* no hex */
        {"1.5.3", 0, RCP_JSON_E_NUMBER, 3},
        {"1e5e5", 0, RCP_JSON_E_NUMBER, 3},
        {"12a", 0, RCP_JSON_E_NUMBER, 2},
        {"1_000", 0, RCP_JSON_E_NUMBER, 1},
        {"--1", 0, RCP_JSON_E_NUMBER, 1},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

/* Messages come from one table and name the actual problem. */
START_TEST(error_messages_are_specific)
{
    static const struct { const char *text, *words; } t[] = {
        {"01", "leading zero"},
        {"+1", "'+'"},
        {"NaN", "NaN"},
        {"1.", "decimal point"},
        {"1e", "exponent"},
        {"\xEF\xBB\xBF{}", "byte order mark"},
        {"\"\\uD800\"", "lone surrogate"},
        {"\"\xC0\x80\"", "overlong"},
        {"\"\xED\xA0\x80\"", "surrogate"},
        {"\"\xF4\x90\x80\x80\"", "U+10FFFF"},
        {"\"\xE2\x82\"", "truncated"},
        {"\"\x80\"", "continuation"},
        {"\"a\nb\"", "control character"},
        {"\"\\x\"", "escape"},
        {"[1,2", "unterminated array"},
        {"{\"a\" 1}", "':'"},
        {"1 2", "after the JSON value"},
        {"", "empty"},
    };
    size_t i;
    for (i = 0; i < N_OF(t); i++) {
        ck_assert_ptr_null(parse(t[i].text));
        ck_assert_msg(strstr(jerr.msg, t[i].words) != NULL,
                      "%s: message \"%s\" lacks \"%s\"", t[i].text,
                      jerr.msg, t[i].words);
    }
}
END_TEST

START_TEST(number_text_is_kept_byte_for_byte)
{
    static const char *const t[] = {
        "9007199254740993", "1e2", "-0", "1.0E+2", "0.10", "-0.0e-0",
        "123456789012345678901234567890.5e-10"
    };
    char doc[128];
    size_t i;
    for (i = 0; i < N_OF(t); i++) {
        const rcp_json *v = parse(t[i]);
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(v->type, RCP_JSON_NUMBER);
        ck_assert_uint_eq(v->n, strlen(t[i]));
        ck_assert(memcmp(v->s, t[i], v->n) == 0);
        sprintf(doc, "{\"id\":%s}", t[i]);
        ck_assert_str_eq(rewrite(parse(doc)), doc);
    }
}
END_TEST

/* MARK: - parser: strings (RFC 8259 §7, §8.1) --------------------------- */

static void expect_string(const char *json, const char *bytes, size_t n)
{
    const rcp_json *v = parse(json);
    ck_assert_msg(v != NULL, "%s rejected: %s", json, jerr.msg);
    ck_assert_int_eq(v->type, RCP_JSON_STRING);
    ck_assert_uint_eq(v->n, n);
    ck_assert(memcmp(v->s, bytes, n) == 0);
}

START_TEST(y_each_escape_decodes)
{
    expect_string("\"\\\"\"", "\"", 1);
    expect_string("\"\\\\\"", "\\", 1);
    expect_string("\"\\/\"", "/", 1);
    expect_string("\"\\b\"", "\b", 1);
    expect_string("\"\\f\"", "\f", 1);
    expect_string("\"\\n\"", "\n", 1);
    expect_string("\"\\r\"", "\r", 1);
    expect_string("\"\\t\"", "\t", 1);
    expect_string("\"\\u0041\"", "A", 1);
    expect_string("\"\\u00e9\\u00E9\"", "\xC3\xA9\xC3\xA9", 4);
    expect_string("\"\\u20AC\"", "\xE2\x82\xAC", 3);
    expect_string("\"\\uFFFF\"", "\xEF\xBF\xBF", 3);
    expect_string("\"\\u0000\"", "\0", 1);          /* NUL is data */
    expect_string("\"a\\u0000b\"", "a\0b", 3);
    expect_string("\"x\\ty\\nz\"", "x\ty\nz", 5);
    expect_string("\"plain\"", "plain", 5);
    expect_string("\"\"", "", 0);
}
END_TEST

START_TEST(strings_without_escapes_point_into_the_input)
{
    const char *doc = "[\"zero copy\"]";
    const rcp_json *v = parse(doc);
    ck_assert_ptr_eq(v->kids[0].s, doc + 2);
}
END_TEST

START_TEST(n_only_the_defined_escapes)
{
    static const reject n[] = {
        {"\"\\a\"", 0, RCP_JSON_E_ESCAPE, 2},
        {"\"\\x41\"", 0, RCP_JSON_E_ESCAPE, 2},
        {"\"\\'\"", 0, RCP_JSON_E_ESCAPE, 2},
        {"\"\\U0041\"", 0, RCP_JSON_E_ESCAPE, 2},
        {"\"\\0\"", 0, RCP_JSON_E_ESCAPE, 2},
        {"\"\\ \"", 0, RCP_JSON_E_ESCAPE, 2},
        {"\"\\u12G4\"", 0, RCP_JSON_E_ESCAPE, 5},
        {"\"\\u-123\"", 0, RCP_JSON_E_ESCAPE, 3},
        {"\"\\u12\"", 0, RCP_JSON_E_ESCAPE, 5},
        {"{\"\\q\":1}", 0, RCP_JSON_E_ESCAPE, 3},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

START_TEST(y_surrogate_pairs_combine_into_utf8)
{
    expect_string("\"\\uD83D\\uDE00\"", "\xF0\x9F\x98\x80", 4);
    expect_string("\"\\ud800\\udc00\"", "\xF0\x90\x80\x80", 4);
    expect_string("\"\\uDBFF\\uDFFF\"", "\xF4\x8F\xBF\xBF", 4);
    expect_string("\"a\\uD834\\uDD1Eb\"", "a\xF0\x9D\x84\x9E" "b", 6);
}
END_TEST

START_TEST(n_lone_surrogate_escapes)
{
    static const reject n[] = {
        {"\"\\uD800\"", 0, RCP_JSON_E_SURROGATE, 1},
        {"\"\\uDBFF x\"", 0, RCP_JSON_E_SURROGATE, 1},
        {"\"\\uDC00\"", 0, RCP_JSON_E_SURROGATE, 1},
        {"\"ab\\uDFFF\"", 0, RCP_JSON_E_SURROGATE, 3},
        {"\"\\uD800\\u0041\"", 0, RCP_JSON_E_SURROGATE, 1},
        {"\"\\uD800\\uD800\"", 0, RCP_JSON_E_SURROGATE, 1},
        {"\"\\uD800\\n\"", 0, RCP_JSON_E_SURROGATE, 1},
        {"\"\\uDE00\\uD83D\"", 0, RCP_JSON_E_SURROGATE, 1},
        {"\"\\uD800\\uZZZZ\"", 0, RCP_JSON_E_ESCAPE, 9},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

START_TEST(n_raw_control_characters_in_strings)
{
    static const reject n[] = {
        {"\"a\nb\"", 0, RCP_JSON_E_STRING_CTRL, 2},
        {"\"\t\"", 0, RCP_JSON_E_STRING_CTRL, 1},
        {"\"\x1F\"", 0, RCP_JSON_E_STRING_CTRL, 1},
        {"\"\x01\"", 0, RCP_JSON_E_STRING_CTRL, 1},
        {"\"abcdefghijklmn\ropq\"", 0, RCP_JSON_E_STRING_CTRL, 15},
        {"\"\\\n\"", 0, RCP_JSON_E_ESCAPE, 2},
    };
    check_rejects(n, N_OF(n));
    expect_string("\"\x7F\"", "\x7F", 1);       /* DEL is not a control */
}
END_TEST

START_TEST(nul_bytes_are_data_never_an_end)
{
    static const reject n[] = {
        {"\"a\0b\"", 5, RCP_JSON_E_STRING_CTRL, 2},     /* raw in string */
        {"\"abcdefghijklm\0\"", 16, RCP_JSON_E_STRING_CTRL, 14},
        {"\0", 1, RCP_JSON_E_TOKEN, 0},                 /* as a value */
        {"1\0", 2, RCP_JSON_E_TRAILING, 1},             /* after it */
        {"[1,\0]", 5, RCP_JSON_E_TOKEN, 3},
        {"[1\0]", 4, RCP_JSON_E_TOKEN, 2},
        {"{\"a\"\0:1}", 8, RCP_JSON_E_TOKEN, 4},
        {"\0\0\0", 3, RCP_JSON_E_TOKEN, 0},
        {"[1] \0", 5, RCP_JSON_E_TRAILING, 4},
    };
    check_rejects(n, N_OF(n));
    /* a NUL past len is never looked at */
    ck_assert_ptr_nonnull(parse_n("[1]\0garbage", 3));
}
END_TEST

/* MARK: - parser: UTF-8 (§4.6) ------------------------------------------ */

START_TEST(y_utf8_boundaries_are_accepted)
{
    static const char *const y[] = {
        "\"\xC2\x80\"", "\"\xDF\xBF\"",                 /* 2 bytes */
        "\"\xE0\xA0\x80\"", "\"\xED\x9F\xBF\"",         /* around ED */
        "\"\xEE\x80\x80\"", "\"\xEF\xBF\xBF\"",         /* U+FFFF ok */
        "\"\xF0\x90\x80\x80\"", "\"\xF4\x8F\xBF\xBF\"", /* U+10FFFF */
        "\"\xE2\x80\xA8\xE2\x80\xA9\"",                 /* U+2028/9 */
        "\"abcdefgh\xC3\xA9" "abcdefgh\xF0\x9F\x98\x80" "abcdefghij\"",
        "{\"\xC3\xA9t\xC3\xA9\":\"\xE6\x97\xA5\xE6\x9C\xAC\"}"
    };
    check_accepts(y, N_OF(y));
}
END_TEST

START_TEST(n_utf8_malformations_each_class)
{
    static const reject n[] = {
        /* overlong */
        {"\"\xC0\x80\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xC1\xBF\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xE0\x80\x80\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xE0\x9F\xBF\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xF0\x80\x80\x80\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xF0\x8F\xBF\xBF\"", 0, RCP_JSON_E_UTF8, 2},
        /* UTF-16 surrogates encoded as UTF-8 */
        {"\"\xED\xA0\x80\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xED\xBF\xBF\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xED\xA0\xBD\xED\xB8\x80\"", 0, RCP_JSON_E_UTF8, 2},
        /* above U+10FFFF */
        {"\"\xF4\x90\x80\x80\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xF5\x80\x80\x80\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xF7\xBF\xBF\xBF\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xF8\x88\x80\x80\x80\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xFF\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xFE\"", 0, RCP_JSON_E_UTF8, 1},
        /* truncated sequences */
        {"\"\xC3\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xE2\x82\"", 0, RCP_JSON_E_UTF8, 3},
        {"\"\xF0\x9F\x98\"", 0, RCP_JSON_E_UTF8, 4},
        {"\"\xC3" "A\"", 0, RCP_JSON_E_UTF8, 2},
        {"\"\xE2\x82", 0, RCP_JSON_E_UTF8, 3},          /* at the end */
        /* stray continuation bytes */
        {"\"\x80\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xBF\"", 0, RCP_JSON_E_UTF8, 1},
        {"\"\xC3\xA9\xA9\"", 0, RCP_JSON_E_UTF8, 3},
        {"\"abcdefghijklmnop\x80\"", 0, RCP_JSON_E_UTF8, 17},
        /* in a member name too */
        {"{\"\xC0\xAF\":1}", 0, RCP_JSON_E_UTF8, 2},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

START_TEST(n_non_ascii_outside_strings_is_an_unexpected_byte)
{
    static const reject n[] = {
        {"\xC3\xA9", 0, RCP_JSON_E_TOKEN, 0},
        {"[\xE2\x80\x83" "1]", 0, RCP_JSON_E_TOKEN, 1},   /* em space */
        {"[1\xFF]", 0, RCP_JSON_E_TOKEN, 2},
        {"\x80", 0, RCP_JSON_E_TOKEN, 0},
        {"1\xC0\x80", 0, RCP_JSON_E_TRAILING, 1},
    };
    check_rejects(n, N_OF(n));
}
END_TEST

/* i_: where RFC 8259 lets a parser choose, the choice we made (README
** Decisions). */
START_TEST(i_implementation_defined_choices_are_fixed)
{
    static const reject n[] = {
        /* §8.1 MAY ignore a BOM: we reject it, strict and simple */
        {"\xEF\xBB\xBF[]", 0, RCP_JSON_E_TOKEN, 0},
        /* §8.2 unpaired surrogates: §4.6 strings are UTF-8, so rejected */
        {"[\"\\uDEAD\"]", 0, RCP_JSON_E_SURROGATE, 2},
    };
    static const char *const y[] = {
        /* §9 limits: range and precision are kept as text, never refused */
        "1e999999", "-1e-999999",
        "123456789012345678901234567890123456789012345678901234567890",
        /* noncharacters are valid scalar values */
        "\"\xEF\xBF\xBF\xEF\xB7\x90\\uFFFE\"",
        /* §4 names SHOULD be unique: duplicates are kept */
        "{\"a\":1,\"a\":2}",
    };
    check_rejects(n, N_OF(n));
    check_accepts(y, N_OF(y));
    ck_assert(rcp_json_num(parse("1e999999")) == HUGE_VAL);
    ck_assert(rcp_json_num(parse("-1e-999999")) == 0.0);
}
END_TEST

/* MARK: - parser: depth and memory -------------------------------------- */

static char *nested(size_t depth, const char *open, const char *close)
{
    char *s = malloc(depth * 2 + 2);
    size_t i;
    for (i = 0; i < depth; i++) {
        s[i] = open[i % strlen(open)];
        s[depth * 2 - 1 - i] = close[i % strlen(close)];
    }
    s[depth * 2] = '\0';
    return s;
}

START_TEST(depth_limit_is_enforced_without_recursion)
{
    char *ok = nested(RCP_JSON_MAX_DEPTH, "[", "]");
    char *deep = nested(RCP_JSON_MAX_DEPTH + 1, "[", "]");
    char *huge = nested(200000, "[", "]");
    ck_assert_ptr_nonnull(parse(ok));
    ck_assert_ptr_null(parse(deep));
    ck_assert_int_eq(jerr.code, RCP_JSON_E_DEPTH);
    ck_assert_uint_eq(jerr.offset, RCP_JSON_MAX_DEPTH);
    ck_assert_ptr_null(parse(huge));
    ck_assert_int_eq(jerr.code, RCP_JSON_E_DEPTH);
    /* a caller may allow more: still no C recursion */
    ck_assert_ptr_nonnull(rcp_json_parse(&arena, huge, strlen(huge), 200000,
                                         &jerr));
    ck_assert_ptr_null(rcp_json_parse(&arena, ok, strlen(ok), 10, &jerr));
    ck_assert_uint_eq(jerr.offset, 10);
    free(ok);
    free(deep);
    free(huge);
}
END_TEST

START_TEST(depth_counts_objects_and_arrays_alike)
{
    const char *d3 = "{\"a\":[{\"b\":1}]}";
    ck_assert_ptr_nonnull(rcp_json_parse(&arena, d3, strlen(d3), 3, &jerr));
    ck_assert_ptr_null(rcp_json_parse(&arena, d3, strlen(d3), 2, &jerr));
    ck_assert_int_eq(jerr.code, RCP_JSON_E_DEPTH);
    ck_assert_uint_eq(jerr.offset, 6);
}
END_TEST

START_TEST(arena_limit_bounds_a_parse)
{
    rcp_arena small;
    char doc[4096];
    size_t i, o = 0;
    doc[o++] = '[';
    for (i = 0; i < 1000; i++)
        o += (size_t)sprintf(doc + o, "%s%u", i ? "," : "", (unsigned)i);
    doc[o++] = ']';
    rcp_arena_init(&small, 4096);
    ck_assert_ptr_null(rcp_json_parse(&small, doc, o, 0, &jerr));
    ck_assert_int_eq(jerr.code, RCP_JSON_E_LIMIT);
    rcp_arena_free(&small);
    rcp_arena_init(&small, 1 << 20);
    ck_assert_ptr_nonnull(rcp_json_parse(&small, doc, o, 0, &jerr));
    rcp_arena_free(&small);
}
END_TEST


/* Big enough to spill both scratch stacks and need several arena blocks,
** with escaped strings (decoded into the arena). */
static size_t alloc_doc(char *doc)
{
    size_t o = 0, i;
    for (i = 0; i < 40; i++)
        o += (size_t)sprintf(doc + o, "{\"k\\n%u\":[", (unsigned)i);
    for (i = 0; i < 3000; i++)
        o += (size_t)sprintf(doc + o, "%s\"s\\u00e9%u\",%u.5",
                             i ? "," : "", (unsigned)i, (unsigned)i);
    for (i = 0; i < 40; i++)
        o += (size_t)sprintf(doc + o, "]}");
    return o;
}

START_TEST(each_failed_allocation_is_an_error_not_a_crash_or_leak)
{
    static char doc[1 << 17];
    size_t len = alloc_doc(doc);
    long total, n, failures = 0;
    count_reset(0);
    ck_assert_ptr_nonnull(parse_n(doc, len));
    rcp_arena_free(&arena);
    total = alloc_calls;
    ck_assert_int_gt(total, 5);
    for (n = 1; n <= total + 1; n++) {
        const rcp_json *v;
        count_reset(n);
        v = parse_n(doc, len);
        if (!v) {
            ck_assert_int_eq(jerr.code, RCP_JSON_E_NOMEM);
            failures++;
        } else {
            alloc_fail_at = 0;
            ck_assert_uint_gt(strlen(rewrite(v)), len / 2);
        }
        rcp_arena_free(&arena);
        ck_assert_int_eq(alloc_live, 0);
    }
    ck_assert_int_ge(failures, total);
}
END_TEST

/* A text over the arena's limit (a request too large, -32013) and an
** allocation that failed (the server's trouble, -32603) are different
** errors, told apart where they happen: in the arena and the scratch
** stacks, whatever the limit is. */
START_TEST(over_the_limit_and_out_of_memory_are_different_errors)
{
    static char doc[1 << 17];
    size_t len = alloc_doc(doc), i, o = 0;
    char deep[2100];
    rcp_arena a;
    long n, failures = 0;
    for (i = 0; i < 1000; i++)
        deep[o++] = '[';
    for (i = 0; i < 1000; i++)
        deep[o++] = ']';
    rcp_arena_init(&a, 4096);           /* the frame stack outgrows it */
    ck_assert_ptr_null(rcp_json_parse(&a, deep, o, 2000, &jerr));
    ck_assert_int_eq(jerr.code, RCP_JSON_E_LIMIT);
    rcp_arena_free(&a);
    for (n = 1; n <= 8; n++) {          /* a limit far above the need */
        rcp_arena_init(&a, (size_t)1 << 30);
        count_reset(n);
        if (!rcp_json_parse(&a, doc, len, 0, &jerr)) {
            ck_assert_int_eq(jerr.code, RCP_JSON_E_NOMEM);
            failures++;
        }
        rcp_set_allocator(NULL, NULL);
        rcp_arena_free(&a);
    }
    ck_assert_int_ge(failures, 4);
}
END_TEST

START_TEST(writer_allocation_failure_sets_oom)
{
    const rcp_json *v = parse("{\"a\":[1,2,3],\"b\":\"xyz\"}");
    long n;
    for (n = 1; n <= 3; n++) {
        rcp_buf b;
        rcp_jw w;
        count_reset(n);
        rcp_buf_init(&b);
        rcp_jw_init(&w, &b);
        rcp_jw_value(&w, v);
        if (alloc_calls >= n)
            ck_assert_int_eq(b.oom, 1);
        rcp_buf_free(&b);
        ck_assert_int_eq(alloc_live, 0);
    }
}
END_TEST

/* MARK: - accessors ----------------------------------------------------- */

START_TEST(duplicate_names_are_kept_and_the_last_wins)
{
    const rcp_json *v = parse("{\"a\":1,\"b\":2,\"a\":3}");
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(v->n, 3);
    ck_assert_str_eq(rewrite(v), "{\"a\":1,\"b\":2,\"a\":3}");
    ck_assert_ptr_eq(rcp_json_get(v, "a"), &v->kids[2]);
    ck_assert(memcmp(rcp_json_get(v, "a")->s, "3", 1) == 0);
    ck_assert_ptr_null(rcp_json_get(v, "c"));
    ck_assert_ptr_null(rcp_json_get(v, "ab"));
    ck_assert_ptr_null(rcp_json_get(&v->kids[0], "a"));
    ck_assert_ptr_null(rcp_json_get(NULL, "a"));
}
END_TEST

START_TEST(get_compares_decoded_names)
{
    const rcp_json *v = parse("{\"\\u0061b\":1,\"\":2,\"a\\u0000b\":3}");
    ck_assert_ptr_nonnull(rcp_json_get(v, "ab"));
    ck_assert_ptr_eq(rcp_json_get(v, ""), &v->kids[1]);
    ck_assert_uint_eq(v->kids[2].keylen, 3);
    ck_assert_ptr_null(rcp_json_get(v, "a"));
}
END_TEST

START_TEST(get_matches_whole_names_only)
{
    const rcp_json *v = parse("{\"abc\":1,\"a\":2,\"method\":3,\"params\":4}");
    ck_assert_ptr_null(rcp_json_get(v, "ab"));
    ck_assert_ptr_null(rcp_json_get(v, "abcd"));
    ck_assert_ptr_eq(rcp_json_get(v, "a"), &v->kids[1]);
    ck_assert_ptr_eq(rcp_json_get(v, "abc"), &v->kids[0]);
    ck_assert_ptr_eq(rcp_json_get(v, "method"), &v->kids[2]);
    ck_assert_ptr_null(rcp_json_get(v, "metho"));
    ck_assert_ptr_null(rcp_json_get(v, ""));
}
END_TEST

START_TEST(streq_matches_whole_strings_only)
{
    const rcp_json *v = parse("[\"2.0\",2.0,\"2.0\\u0000\",\"\"]");
    ck_assert(rcp_json_streq(&v->kids[0], "2.0"));
    ck_assert(!rcp_json_streq(&v->kids[0], "2"));
    ck_assert(!rcp_json_streq(&v->kids[1], "2.0"));
    ck_assert(!rcp_json_streq(&v->kids[2], "2.0"));
    ck_assert(rcp_json_streq(&v->kids[3], ""));
    ck_assert(!rcp_json_streq(NULL, ""));
}
END_TEST

static double num_of(const char *text)
{
    const rcp_json *v = parse(text);
    ck_assert_ptr_nonnull(v);
    return rcp_json_num(v);
}

START_TEST(num_converts_correctly_rounded)
{
    static char big[2100];
    /* double_eq rounds each side to double: under FLT_EVAL_METHOD 2 (x87)
    ** the constant 0.1 in `x == 0.1` would be the long double 0.1 */
    ck_assert_double_eq(num_of("0.1"), 0.1);
    ck_assert(num_of("1e2") == 100.0);
    ck_assert(num_of("-0") == 0.0 && signbit(num_of("-0")));
    ck_assert(num_of("1e400") == HUGE_VAL);
    ck_assert(num_of("-1e400") == -HUGE_VAL);
    ck_assert(num_of("1e-400") == 0.0);
    ck_assert(num_of("9007199254740993") == 9007199254740992.0);
    ck_assert_double_eq(num_of("2.2250738585072011e-308"),
                        2.2250738585072011e-308);
    /* long texts: a halfway case decided by a digit 800 places in */
    memset(big, '0', sizeof big);
    memcpy(big, "9007199254740993", 16);
    big[900] = '1';
    strcpy(big + 901, "e-885");
    ck_assert(num_of(big) == 9007199254740994.0);
    big[900] = '0';
    ck_assert(num_of(big) == 9007199254740992.0);
    memcpy(big, "0.", 2);
    memset(big + 2, '0', 1000);
    strcpy(big + 1002, "15e1001");
    ck_assert(num_of(big) == 1.5);
    ck_assert(rcp_json_num(parse("\"1\"")) == 0.0);
}
END_TEST

/* The fast path and the long-text path must agree with strtod exactly. */
START_TEST(num_matches_strtod_on_random_texts)
{
    int i, bad = 0;
    for (i = 0; i < 50000; i++) {
        char t[96];
        int n = 0, k, nd = 1 + (int)(rng() % 24), dot = (int)(rng() % 26);
        const rcp_json *v;
        double want, got;
        if (rng() & 1)
            t[n++] = '-';
        t[n++] = (char)('1' + rng() % 9);
        for (k = 1; k < nd; k++) {
            if (k == dot)
                t[n++] = '.';
            t[n++] = (char)('0' + rng() % 10);
        }
        if (rng() % 3 == 0)
            n += sprintf(t + n, "e%d", (int)(rng() % 80) - 40);
        t[n] = '\0';
        want = strtod(t, NULL);
        v = parse_n(t, (size_t)n);
        if (!v || memcmp(&want, (got = rcp_json_num(v), &got), sizeof got))
            bad++;
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

static int int_of(const char *text, int64_t *out)
{
    const rcp_json *v = parse(text);
    ck_assert_ptr_nonnull(v);
    return rcp_json_int(v, out);
}

START_TEST(int_accepts_exact_integers_in_53_bits)
{
    static const struct { const char *t; int64_t v; } y[] = {
        {"0", 0}, {"-0", 0}, {"1e2", 100}, {"10.0", 10}, {"1.5e1", 15},
        {"100e-2", 1}, {"0e-5", 0}, {"-42", -42}, {"0.0", 0},
        {"9007199254740991", 9007199254740991}, {"4.2E+1", 42},
        {"-9007199254740991", -9007199254740991}, {"12300000e-5", 123},
        {"9007199254740991.000000000000000000000000", 9007199254740991},
    };
    static const char *const n[] = {
        "0.5", "1e300", "9007199254740992", "-9007199254740992",
        "1.05e1", "1e-400", "1e16", "123e-1", "0.0000001",
        "1000000000000000000000", "\"1\"", "true",
        "9007199254740991.0000000000000000000000001",
    };
    size_t i;
    int64_t out;
    for (i = 0; i < N_OF(y); i++) {
        ck_assert_msg(int_of(y[i].t, &out), "%s not an integer", y[i].t);
        ck_assert_msg(out == y[i].v, "%s gave %lld", y[i].t, (long long)out);
    }
    for (i = 0; i < N_OF(n); i++)
        ck_assert_msg(!int_of(n[i], &out), "%s taken as integer", n[i]);
    ck_assert(!rcp_json_int(NULL, &out));
}
END_TEST

/* MARK: - writer -------------------------------------------------------- */

START_TEST(writer_places_commas_and_stays_compact)
{
    rcp_buf b;
    rcp_jw w;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "a");
    rcp_jw_arr(&w);
    rcp_jw_int(&w, 1);
    rcp_jw_int(&w, -9223372036854775807 - 1);
    rcp_jw_arr(&w);
    rcp_jw_arr_end(&w);
    rcp_jw_obj(&w);
    rcp_jw_obj_end(&w);
    rcp_jw_null(&w);
    rcp_jw_bool(&w, 1);
    rcp_jw_bool(&w, 0);
    rcp_jw_arr_end(&w);
    rcp_jw_keyn(&w, "b\"c", 3);
    rcp_jw_cstr(&w, "x");
    rcp_jw_key(&w, "d");
    rcp_jw_raw(&w, "{\"r\":1}", 7);
    rcp_jw_key(&w, "e");
    rcp_jw_double(&w, 0.1);
    rcp_jw_key(&w, "f");
    rcp_jw_float(&w, 0.1f);
    rcp_jw_obj_end(&w);
    rcp_buf_putc(&b, '\0');
    ck_assert_int_eq(b.oom, 0);
    ck_assert_str_eq(b.data, "{\"a\":[1,-9223372036854775808,[],{},null,true,"
                             "false],\"b\\\"c\":\"x\",\"d\":{\"r\":1},"
                             "\"e\":0.1,\"f\":0.1}");
    rcp_buf_free(&b);
}
END_TEST

START_TEST(writer_reserialises_compact)
{
    const rcp_json *v = parse(" { \"a\" : [ 1 , 2.50 , \"x\\u0041\" ] ,\n"
                              "\"b\" : { } , \"c\" : [ ] , \"d\" : true } ");
    ck_assert_str_eq(rewrite(v),
                     "{\"a\":[1,2.50,\"xA\"],\"b\":{},\"c\":[],\"d\":true}");
    ck_assert_str_eq(rewrite(parse("\"\\u2028\"")), "\"\xE2\x80\xA8\"");
    ck_assert_str_eq(rewrite(parse("-0")), "-0");
}
END_TEST

START_TEST(writer_escapes_so_a_frame_stays_one_line)
{
    char in[32], *out;
    rcp_buf b;
    rcp_jw w;
    int c;
    for (c = 0; c < 32; c++)
        in[c] = (char)c;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_str(&w, in, 32);
    rcp_jw_str(&w, "\"\\/\x7F", 4);
    rcp_buf_putc(&b, '\0');
    out = b.data;
    ck_assert_str_eq(out,
        "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007"
        "\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012"
        "\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a"
        "\\u001b\\u001c\\u001d\\u001e\\u001f\","
        "\"\\\"\\\\/\x7F\"");
    for (c = 0; out[c]; c++)
        ck_assert((unsigned char)out[c] >= 0x20);
    rcp_buf_free(&b);
}
END_TEST

START_TEST(writer_replaces_invalid_utf8_with_fffd)
{
    static const struct { const char *in; const char *out; } t[] = {
        {"a\xC3", "\"a\xEF\xBF\xBD\""},
        {"\xC0\xAF", "\"\xEF\xBF\xBD\xEF\xBF\xBD\""},
        {"\xE2\x82" "x", "\"\xEF\xBF\xBDx\""},
        {"\xED\xA0\x80", "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""},
        {"\xF0\x9F\x98\x80", "\"\xF0\x9F\x98\x80\""},
        {"\xFF" "abcdefghij", "\"\xEF\xBF\xBD" "abcdefghij\""},
    };
    size_t i;
    for (i = 0; i < N_OF(t); i++) {
        rcp_buf b;
        rcp_jw w;
        rcp_buf_init(&b);
        rcp_jw_init(&w, &b);
        rcp_jw_str(&w, t[i].in, strlen(t[i].in));
        rcp_buf_putc(&b, '\0');
        ck_assert_str_eq(b.data, t[i].out);
        ck_assert_ptr_nonnull(parse_n(b.data, b.len - 1));
        rcp_buf_free(&b);
    }
}
END_TEST

START_TEST(writer_string_round_trips_through_the_parser)
{
    static const char *const pieces[] = {
        "a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\x01", "\x1F", "\x7F",
        "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xE2\x80\xA8",
        "\0", "abcdefghijklmnop"
    };
    int round, i;
    for (round = 0; round < 2000; round++) {
        char s[256];
        size_t n = 0, k = rng() % 20;
        rcp_buf b;
        rcp_jw w;
        const rcp_json *v;
        for (i = 0; i < (int)k; i++) {
            const char *p = pieces[rng() % N_OF(pieces)];
            size_t l = *p ? strlen(p) : 1;
            memcpy(s + n, p, l);
            n += l;
        }
        rcp_buf_init(&b);
        rcp_jw_init(&w, &b);
        rcp_jw_str(&w, s, n);
        ck_assert(memchr(b.data, '\n', b.len) == NULL);
        v = parse_n(b.data, b.len);
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(v->n, n);
        ck_assert(n == 0 || memcmp(v->s, s, n) == 0);
        rcp_buf_free(&b);
    }
}
END_TEST

START_TEST(writer_bounds_its_nesting)
{
    char *deep = malloc(9000);
    const rcp_json *v;
    rcp_buf b;
    rcp_jw w;
    size_t i;
    size_t o = 0;
    for (i = 0; i < 1000; i++)
        o += (size_t)sprintf(deep + o, "[{\"k\":");
    o += (size_t)sprintf(deep + o, "1");
    for (i = 0; i < 1000; i++)
        o += (size_t)sprintf(deep + o, "}]");
    v = rcp_json_parse(&arena, deep, o, 5000, &jerr);
    ck_assert_ptr_nonnull(v);
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_value(&w, v);
    ck_assert_int_eq(b.oom, 1);
    rcp_buf_free(&b);
    free(deep);
}
END_TEST

/* MARK: - shortest number formatting ------------------------------------ */

START_TEST(fmt_known_values)
{
    ck_assert_str_eq(fmt_d(0.1), "0.1");
    ck_assert_str_eq(fmt_d(0.3), "0.3");
    ck_assert_str_eq(fmt_d(3.0), "3");
    ck_assert_str_eq(fmt_d(-0.0), "-0");
    ck_assert_str_eq(fmt_d(0.0), "0");
    ck_assert_str_eq(fmt_d(1e21), "1e+21");
    ck_assert_str_eq(fmt_d(1e20), "100000000000000000000");
    ck_assert_str_eq(fmt_d(1e-6), "0.000001");
    ck_assert_str_eq(fmt_d(1e-7), "1e-7");
    ck_assert_str_eq(fmt_d(123.456), "123.456");
    ck_assert_str_eq(fmt_d(-1.5e-300), "-1.5e-300");
    ck_assert_str_eq(fmt_d(5e-324), "5e-324");
    ck_assert_str_eq(fmt_d(DBL_MAX), "1.7976931348623157e+308");
    ck_assert_str_eq(fmt_d(DBL_MIN), "2.2250738585072014e-308");
    ck_assert_str_eq(fmt_d(9007199254740993.0), "9007199254740992");
    ck_assert_str_eq(fmt_d(1.0 / 3), "0.3333333333333333");
    ck_assert_str_eq(fmt_f(0.1f), "0.1");
    ck_assert_str_eq(fmt_f(1.0f / 3), "0.33333334");
    ck_assert_str_eq(fmt_f(16777216.0f), "16777216");
    ck_assert_str_eq(fmt_f(1e21f), "1e+21");
    ck_assert_str_eq(fmt_f(-0.0f), "-0");
    ck_assert_str_eq(fmt_f(FLT_MAX), "3.4028235e+38");
    ck_assert_str_eq(fmt_f(1e-45f), "1e-45");
    ck_assert_str_eq(fmt_f(FLT_MIN), "1.1754944e-38");
}
END_TEST

START_TEST(fmt_non_finite_becomes_a_finite_sentinel)
{
    ck_assert_str_eq(fmt_d(NAN), "0");
    ck_assert_str_eq(fmt_d(-NAN), "0");
    ck_assert_str_eq(fmt_d(HUGE_VAL), "1.7976931348623157e+308");
    ck_assert_str_eq(fmt_d(-HUGE_VAL), "-1.7976931348623157e+308");
    ck_assert_str_eq(fmt_f(NAN), "0");
    ck_assert_str_eq(fmt_f(HUGE_VALF), "3.4028235e+38");
    ck_assert_str_eq(fmt_f(-HUGE_VALF), "-3.4028235e+38");
}
END_TEST

/* Significant digits of a %e or of our text, without leading zeros. */
static size_t sig_digits(const char *s, char *d)
{
    size_t n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && (n || *s != '0'))
            d[n++] = *s;
    while (n > 1 && d[n - 1] == '0')
        n--;
    d[n] = '\0';
    return n;
}

static int reads_back(const char *t, double v, int is_float)
{
    return is_float ? strtof(t, NULL) == (float)v : strtod(t, NULL) == v;
}

/* Brute force: ours reads back exactly; the nearest decimal with one
** digit fewer does not; and when the nearest with as many digits reads
** back, it is ours (ours is the closest of the shortest).  Plain ifs, not
** ck_assert: each passing Check assertion costs a write to a pipe. */
static void check_shortest(double v, int is_float)
{
    char ours[40], t[48], d1[40], d2[40];
    size_t L;
    if (is_float)
        ours[rcp_json_fmt_float(ours, (float)v)] = '\0';
    else
        ours[rcp_json_fmt_double(ours, v)] = '\0';
    if (!reads_back(ours, v, is_float))
        ck_abort_msg("%s does not read back as %.17g", ours, v);
    L = sig_digits(ours, d1);
    if (L > 1) {
        sprintf(t, "%.*e", (int)L - 2, v);
        if (reads_back(t, v, is_float))
            ck_abort_msg("%s is shorter than %s", t, ours);
    }
    sprintf(t, "%.*e", (int)L - 1, v);
    if (reads_back(t, v, is_float)) {
        sig_digits(t, d2);
        if (strcmp(d1, d2) != 0)
            ck_abort_msg("%s is not the nearest, %s is", ours, t);
    }
}

START_TEST(fmt_double_is_shortest_vs_brute_force)
{
    int i;
    for (i = 0; i < 200000; i++) {
        uint64_t bits = rng();
        double v;
        if (i % 4 == 1)
            bits &= 0x800FFFFFFFFFFFFFu;               /* subnormals */
        if (i % 4 == 2)
            bits &= 0xFFF0000000000000u | (rng() & 3); /* near 2^e */
        memcpy(&v, &bits, sizeof v);
        if (i % 4 == 3) {                              /* short decimals */
            char t[40];
            sprintf(t, "%de%d", (int)(rng() % 1000000),
                    (int)(rng() % 60) - 30);
            v = strtod(t, NULL);
        }
        if (isfinite(v) && v != 0)
            check_shortest(v, 0);
    }
}
END_TEST

START_TEST(fmt_float_is_shortest_vs_brute_force)
{
    int i;
    for (i = 0; i < 200000; i++) {
        uint32_t bits = (uint32_t)rng();
        float f;
        if (i % 4 == 1)
            bits &= 0x807FFFFFu;
        if (i % 4 == 2)
            bits &= 0xFF800000u | (uint32_t)(rng() & 3);
        memcpy(&f, &bits, sizeof f);
        if (isfinite(f) && f != 0)
            check_shortest(f, 1);
    }
}
END_TEST

START_TEST(fmt_output_is_valid_json)
{
    int i;
    for (i = 0; i < 5000; i++) {
        uint64_t bits = rng();
        double v;
        char out[40];
        size_t n;
        memcpy(&v, &bits, sizeof v);
        n = rcp_json_fmt_double(out, v);
        ck_assert_ptr_nonnull(parse_n(out, n));
        ck_assert_int_eq(parse_n(out, n)->type, RCP_JSON_NUMBER);
    }
}
END_TEST

/* MARK: - fast paths agree with the plain versions ----------------------- */

/* Bytes where a scan's answer changes: the string specials and their
** neighbours, every UTF-8 boundary of Unicode Table 3-7, digits and what
** borders them, bytes whose SWAR arithmetic borrows or carries. */
static const unsigned char edge_bytes[] = {
    0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x2F, 0x30, 0x39, 0x3A, 0x41,
    0x5B, 0x5C, 0x5D, 0x61, 0x7E, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xA2,
    0xB0, 0xB9, 0xBA, 0xBF, 0xC0, 0xC1, 0xC2, 0xC3, 0xDF, 0xE0, 0xE1, 0xE3,
    0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFE, 0xFF
};
#define N_EDGE (sizeof edge_bytes / sizeof *edge_bytes)

/* Random text: mostly plain ASCII or digits, with edge bytes and whole
** well-formed sequences mixed in at a rate that changes per call. */
static void random_text(unsigned char *u, size_t n, int digits)
{
    static const char *const seqs[] = {
        "\xC3\xA9", "\xDF\xBF", "\xE2\x80\x94", "\xE6\x97\xA5", "\xED\x9F\xBF",
        "\xE0\xA0\x80", "\xEF\xBF\xBD", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"
    };
    unsigned rate = 1 + (unsigned)(rng() % 24);
    size_t i = 0;
    while (i < n) {
        uint64_t r = rng();
        if (r % rate == 0) {
            u[i++] = edge_bytes[(r >> 8) % N_EDGE];
        } else if (r % rate == 1) {
            const char *q = seqs[(r >> 8) % 9];
            while (*q && i < n)
                u[i++] = (unsigned char)*q++;
        } else {
            u[i++] = (unsigned char)(digits ? '0' + (r >> 8) % 10
                                            : 0x20 + (r >> 8) % 0x5F);
        }
    }
}

static void check_runs_agree(const unsigned char *u, size_t n)
{
    ck_assert_uint_eq(json_text_run(u, n, 1), json_text_run(u, n, 0));
    ck_assert_uint_eq(json_digit_run(u, n, 1), json_digit_run(u, n, 0));
}

/* Each of the 256 byte values at each position of a plain (or digit)
** run, for every run length: the word-at-a-time scans must stop exactly
** where the byte loops stop. */
START_TEST(scans_agree_with_byte_loops_on_every_byte_at_every_position)
{
    unsigned char u[40];
    size_t n, pos;
    int c, base;
    for (base = 0; base < 2; base++)
        for (n = 0; n <= 24; n++)
            for (pos = 0; pos < n; pos++)
                for (c = 0; c < 256; c++) {
                    memset(u, base ? '7' : 'a', sizeof u);
                    u[pos] = (unsigned char)c;
                    check_runs_agree(u, n);
                    if (pos + 1 < n) {      /* a second special after it */
                        u[pos + 1] = '"';
                        check_runs_agree(u, n);
                    }
                }
}
END_TEST

START_TEST(scans_agree_with_byte_loops_on_random_text)
{
    unsigned char u[300];
    int i;
    size_t off;
    for (i = 0; i < 20000; i++) {
        size_t n = (size_t)(rng() % sizeof u);
        random_text(u, n, i & 1);
        for (off = 0; off < 9 && off <= n; off++)
            check_runs_agree(u + off, n - off);
    }
}
END_TEST

static void check_strings_agree(const unsigned char *u, size_t n,
                                size_t prefill)
{
    rcp_buf f, p;
    size_t i;
    rcp_buf_init(&f);
    rcp_buf_init(&p);
    for (i = 0; i < prefill; i++) {     /* a buffer already part full */
        rcp_buf_putc(&f, 'x');
        rcp_buf_putc(&p, 'x');
    }
    json_write_string(&f, (const char *)u, n, 1);
    json_write_string(&p, (const char *)u, n, 0);
    ck_assert(!f.oom && !p.oom);
    ck_assert_uint_eq(f.len, p.len);
    ck_assert(memcmp(f.data, p.data, f.len) == 0);
    ck_assert_ptr_nonnull(parse_n(f.data + prefill, f.len - prefill));
    rcp_buf_free(&f);
    rcp_buf_free(&p);
}

/* The writer's copy-while-scanning escaper against the piece-by-piece
** one: same bytes for escapes, U+FFFD replacements and runs, whatever
** room the buffer starts with (so every growth point is crossed). */
START_TEST(string_writer_agrees_with_plain_writer)
{
    unsigned char u[600];
    int i, c;
    for (c = 0; c < 256; c++) {
        memset(u, 'a', 20);
        u[c % 20] = (unsigned char)c;
        check_strings_agree(u, 20, (size_t)c % 70);
    }
    for (i = 0; i < 20000; i++) {
        size_t n = (size_t)(rng() % (i % 10 ? 60 : sizeof u));
        random_text(u, n, 0);
        check_strings_agree(u, n, (size_t)(rng() % 130));
    }
}
END_TEST

/* Random JSON text of every kind of value, nested up to depth levels. */
static void random_json(rcp_buf *b, int depth)
{
    static const char *const scalars[] = {
        "null", "true", "false", "0", "-0", "1e2", "-12.5e-3",
        "9007199254740993", "\"\"", "\"plain\"", "\"caf\xC3\xA9 \xE6\x97\xA5\"",
        "\"\\n\\t\\\"\\\\\\/\\u0000\\u001f\\u00e9\\ud83d\\ude00\"",
        "\"\xF0\x9F\x98\x80 emoji and \\u2028\""
    };
    unsigned r = (unsigned)(rng() % 16);
    size_t i, n;
    if (depth == 0 || r < 9) {
        rcp_buf_puts(b, scalars[rng() % (sizeof scalars / sizeof *scalars)]);
        return;
    }
    n = (size_t)(rng() % 5);
    rcp_buf_putc(b, r < 12 ? '[' : '{');
    for (i = 0; i < n; i++) {
        if (i)
            rcp_buf_putc(b, ',');
        if (r >= 12)
            rcp_buf_puts(b, rng() % 3 ? "\"k\":" : "\"k\\u00e9\\n\":");
        random_json(b, depth - 1);
    }
    rcp_buf_putc(b, r < 12 ? ']' : '}');
}

/* v written both ways after what came before at the writer's level:
** nothing (first), a value (a comma is owed) or a member name. */
static void check_values_agree(const rcp_json *v)
{
    int before;
    for (before = 0; before < 3; before++) {
        rcp_buf f, p;
        rcp_jw wf, wp;
        rcp_buf_init(&f);
        rcp_buf_init(&p);
        rcp_jw_init(&wf, &f);
        rcp_jw_init(&wp, &p);
        if (before) {
            rcp_jw_arr(&wf), rcp_jw_arr(&wp);
            rcp_jw_obj(&wf), rcp_jw_obj(&wp);
            rcp_jw_key(&wf, "a"), rcp_jw_key(&wp, "a");
            if (before == 2) {
                rcp_jw_obj_end(&wf), rcp_jw_obj_end(&wp);
            }
        }
        json_write_value(&wf, v, 1);
        json_write_value(&wp, v, 0);
        rcp_jw_null(&wf), rcp_jw_null(&wp);     /* the state after it */
        ck_assert_int_eq(f.oom, p.oom);
        if (!f.oom) {           /* a failed buffer's bytes mean nothing */
            ck_assert_uint_eq(wf.depth, wp.depth);
            ck_assert_uint_eq(f.len, p.len);
            ck_assert(memcmp(f.data, p.data, f.len) == 0);
        }
        rcp_buf_free(&f);
        rcp_buf_free(&p);
    }
}

/* The tree writer that puts commas, names and values straight into
** reserved room against the one that goes through the public calls. */
START_TEST(tree_writer_agrees_with_plain_writer)
{
    rcp_json kids[6], obj;
    int i;
    for (i = 0; i < 3000; i++) {
        rcp_buf t;
        rcp_buf_init(&t);
        random_json(&t, 1 + i % 6);
        rcp_arena_reset(&arena);
        check_values_agree(parse_n(t.data, t.len));
        rcp_buf_free(&t);
    }
    /* a tree built by hand: NULL texts, bytes that are not UTF-8 */
    memset(kids, 0, sizeof kids);
    kids[0].type = RCP_JSON_STRING;
    kids[0].s = "bad \xFF\xC3 utf-8 \x01";
    kids[0].n = strlen(kids[0].s);
    kids[0].key = "\xE0\x80 key\"";
    kids[0].keylen = strlen(kids[0].key);
    kids[1].type = RCP_JSON_STRING;         /* s NULL, key NULL */
    kids[2].type = RCP_JSON_NUMBER;         /* s NULL */
    kids[3].type = RCP_JSON_ARRAY;          /* empty */
    kids[4].type = RCP_JSON_OBJECT;         /* empty */
    kids[5].type = RCP_JSON_TRUE;
    memset(&obj, 0, sizeof obj);
    obj.type = RCP_JSON_OBJECT;
    obj.kids = kids;
    obj.n = 6;
    check_values_agree(&obj);
    obj.type = RCP_JSON_ARRAY;
    check_values_agree(&obj);
    check_values_agree(&kids[0]);
    for (i = 260; i <= 275; i++) {     /* around the writer's depth bound */
        char *deep = nested((size_t)i, "[", "]");
        const rcp_json *v;
        rcp_arena_reset(&arena);
        v = rcp_json_parse(&arena, deep, strlen(deep), 1000, &jerr);
        ck_assert_ptr_nonnull(v);
        check_values_agree(v);
        free(deep);
    }
}
END_TEST

static void check_fmt_agree(double v)
{
    char f[RCP_JSON_FMT_SIZE], p[RCP_JSON_FMT_SIZE];
    size_t nf = json_fmt_double(f, v, 1), np = json_fmt_double(p, v, 0);
    ck_assert_msg(nf == np && memcmp(f, p, nf) == 0, "%.17g: %.*s vs %.*s",
                  v, (int)nf, f, (int)np, p);
}

/* Two multiplications for Schubfach's three products and the block
** layout give exactly what three multiplications and the plain layout
** give, in every layout (plain, 12.5, 0.000125, exponent) and class
** (subnormal, integer, near a power of two, short decimal). */
START_TEST(fmt_double_fast_agrees_with_plain)
{
    int i, e;
    for (i = 0; i < 300000; i++) {
        uint64_t bits = rng();
        double v;
        switch (i % 5) {
        case 1: bits &= 0x800FFFFFFFFFFFFFu; break;               /* sub */
        case 2: bits &= 0xFFF0000000000000u | (rng() & 3); break;
        case 3: bits = (bits & 0x800FFFFFFFFFFFFFu) |             /* 1e-9..1e23 */
                       (uint64_t)(993 + rng() % 84) << 52; break;
        }
        memcpy(&v, &bits, sizeof v);
        if (i % 5 == 4) {
            char t[40];
            sprintf(t, "%de%d", (int)(rng() % 100000000), (int)(rng() % 50) - 25);
            v = strtod(t, NULL);
        }
        check_fmt_agree(v);
    }
    for (e = -330; e <= 310; e++) {     /* every power of ten and beside */
        char t[40];
        sprintf(t, "1e%d", e);
        check_fmt_agree(strtod(t, NULL));
        check_fmt_agree(nextafter(strtod(t, NULL), 0));
        check_fmt_agree(-nextafter(strtod(t, NULL), HUGE_VAL));
    }
    for (i = 0; i < 64; i++) {          /* integers, powers of two */
        check_fmt_agree(ldexp(1.0, i));
        check_fmt_agree((double)((uint64_t)1 << i) - 1.0);
    }
}
END_TEST

/* The formatters may use all of RCP_JSON_FMT_SIZE bytes, never more. */
START_TEST(fmt_writes_no_byte_past_its_room)
{
    char out[RCP_JSON_FMT_SIZE + 8];
    int i;
    for (i = 0; i < 20000; i++) {
        uint64_t bits = rng();
        double v;
        size_t n;
        memcpy(&v, &bits, sizeof v);
        memset(out, '#', sizeof out);
        n = i & 1 ? rcp_json_fmt_float(out, (float)v)
                  : rcp_json_fmt_double(out, v);
        ck_assert_uint_le(n, RCP_JSON_FMT_SIZE);
        ck_assert(memcmp(out + RCP_JSON_FMT_SIZE, "########", 8) == 0);
    }
}
END_TEST

/* MARK: - suite --------------------------------------------------------- */

static Suite *make_suite(void)
{
    Suite *s = suite_create("json");
    TCase *core = tcase_create("core");
    TCase *p = tcase_create("parser");
    TCase *acc = tcase_create("accessors");
    TCase *wr = tcase_create("writer");
    TCase *fmt = tcase_create("format");
    TCase *fast = tcase_create("fast paths");
    TCase *all[6];
    size_t i;
    all[0] = core, all[1] = p, all[2] = acc, all[3] = wr, all[4] = fmt;
    all[5] = fast;
    for (i = 0; i < 6; i++) {
        tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_set_timeout(all[i], 60);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(core, code_message_covers_section_12_table);
    tcase_add_test(core, code_message_unknown_codes_are_generic);
    tcase_add_test(core, arena_allocations_are_aligned_and_distinct);
    tcase_add_test(core, arena_limit_refuses_past_the_cap);
    tcase_add_test(core, arena_reset_keeps_one_block_so_reuse_needs_no_malloc);
    tcase_add_test(core, buf_oom_is_sticky_and_ignores_appends);
    tcase_add_test(core, buf_clear_after_oom_reuses_the_memory_without_allocating);
    tcase_add_test(core, allocator_hook_is_used_and_null_restores_default);
    tcase_add_test(p, y_any_value_is_a_json_text);
    tcase_add_test(p, n_empty_input_has_no_value);
    tcase_add_test(p, n_only_four_whitespace_bytes);
    tcase_add_test(p, n_trailing_data_after_the_value);
    tcase_add_test(p, n_structure_errors_name_the_byte);
    tcase_add_test(p, n_truncated_input_reports_its_length);
    tcase_add_test(p, y_numbers_in_the_grammar);
    tcase_add_test(p, n_number_grammar_each_rule);
    tcase_add_test(p, number_text_is_kept_byte_for_byte);
    tcase_add_test(p, error_messages_are_specific);
    tcase_add_test(p, y_each_escape_decodes);
    tcase_add_test(p, strings_without_escapes_point_into_the_input);
    tcase_add_test(p, n_only_the_defined_escapes);
    tcase_add_test(p, y_surrogate_pairs_combine_into_utf8);
    tcase_add_test(p, n_lone_surrogate_escapes);
    tcase_add_test(p, n_raw_control_characters_in_strings);
    tcase_add_test(p, nul_bytes_are_data_never_an_end);
    tcase_add_test(p, y_utf8_boundaries_are_accepted);
    tcase_add_test(p, n_utf8_malformations_each_class);
    tcase_add_test(p, n_non_ascii_outside_strings_is_an_unexpected_byte);
    tcase_add_test(p, i_implementation_defined_choices_are_fixed);
    tcase_add_test(p, depth_limit_is_enforced_without_recursion);
    tcase_add_test(p, depth_counts_objects_and_arrays_alike);
    tcase_add_test(p, arena_limit_bounds_a_parse);
    tcase_add_test(p, over_the_limit_and_out_of_memory_are_different_errors);
    tcase_add_test(p, each_failed_allocation_is_an_error_not_a_crash_or_leak);
    tcase_add_test(p, writer_allocation_failure_sets_oom);
    tcase_add_test(acc, duplicate_names_are_kept_and_the_last_wins);
    tcase_add_test(acc, get_compares_decoded_names);
    tcase_add_test(acc, get_matches_whole_names_only);
    tcase_add_test(acc, streq_matches_whole_strings_only);
    tcase_add_test(acc, num_converts_correctly_rounded);
    tcase_add_test(acc, num_matches_strtod_on_random_texts);
    tcase_add_test(acc, int_accepts_exact_integers_in_53_bits);
    tcase_add_test(wr, writer_places_commas_and_stays_compact);
    tcase_add_test(wr, writer_reserialises_compact);
    tcase_add_test(wr, writer_escapes_so_a_frame_stays_one_line);
    tcase_add_test(wr, writer_replaces_invalid_utf8_with_fffd);
    tcase_add_test(wr, writer_string_round_trips_through_the_parser);
    tcase_add_test(wr, writer_bounds_its_nesting);
    tcase_add_test(fmt, fmt_known_values);
    tcase_add_test(fmt, fmt_non_finite_becomes_a_finite_sentinel);
    tcase_add_test(fmt, fmt_double_is_shortest_vs_brute_force);
    tcase_add_test(fmt, fmt_float_is_shortest_vs_brute_force);
    tcase_add_test(fmt, fmt_output_is_valid_json);
    tcase_add_test(fast,
                   scans_agree_with_byte_loops_on_every_byte_at_every_position);
    tcase_add_test(fast, scans_agree_with_byte_loops_on_random_text);
    tcase_add_test(fast, string_writer_agrees_with_plain_writer);
    tcase_add_test(fast, tree_writer_agrees_with_plain_writer);
    tcase_add_test(fast, fmt_double_fast_agrees_with_plain);
    tcase_add_test(fast, fmt_writes_no_byte_past_its_room);
    return s;
}

TEST_MAIN(make_suite)
