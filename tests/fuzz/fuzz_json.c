/*
** fuzz_json.c -- the JSON parser and writer (json.c, §4.6, RFC 8259).
**
** Oracles, whatever the bytes:
**   - parse -> write -> parse gives the same tree (same types, keys,
**     string bytes, number texts, order), and writing that tree again
**     gives the same bytes: the writer's output always parses and is a
**     fixed point;
**   - the fast writer (rcp_jw_value) writes exactly what the plain one
**     (through the public rcp_jw_ calls) writes;
**   - a text that fails to parse has an error and its offset inside the
**     text (or at its end for a truncated one); under a small arena
**     limit a text either parses to the same tree or fails with
**     RCP_JSON_E_LIMIT, never another error (-32013 vs -32700, §15.5);
**   - the first 8 bytes as a double (when finite) format in their
**     shortest form, which reads back to the same bits (fast and plain
**     formatting agree); their first 4 as a float likewise.
*/
#include "fuzz.h"

#include <math.h>

/* 1 when a and b are the same tree. */
static int same_tree(const rcp_json *a, const rcp_json *b)
{
    size_t i;
    if (a->type != b->type || a->n != b->n)
        return 0;
    switch (a->type) {
    case RCP_JSON_STRING:
    case RCP_JSON_NUMBER:
        return a->n == 0 || memcmp(a->s, b->s, a->n) == 0;
    case RCP_JSON_ARRAY:
    case RCP_JSON_OBJECT:
        for (i = 0; i < a->n; i++) {
            const rcp_json *x = &a->kids[i], *y = &b->kids[i];
            if (a->type == RCP_JSON_OBJECT
                && (x->keylen != y->keylen
                    || memcmp(x->key, y->key, x->keylen) != 0))
                return 0;
            if (!same_tree(x, y))
                return 0;
        }
        return 1;
    default:
        return 1;
    }
}

/* The same tree written by the fast and the plain writer: the same
** bytes. */
static void write_both(const rcp_json *v, rcp_buf *fast, rcp_buf *plain)
{
    rcp_jw w;
    rcp_buf_clear(fast);
    rcp_buf_clear(plain);
    rcp_jw_init(&w, fast);
    json_write_value(&w, v, 1);
    rcp_jw_init(&w, plain);
    json_write_value(&w, v, 0);
    FZ_ASSERT(!fast->oom && !plain->oom, "out of memory writing");
    FZ_ASSERT(fast->len == plain->len
              && memcmp(fast->data, plain->data, fast->len) == 0,
              "fast and plain writers differ:\n%.*s\n%.*s", (int)fast->len,
              fast->data, (int)plain->len, plain->data);
}

static void check_numbers(const uint8_t *data, size_t size)
{
    char fa[RCP_JSON_FMT_SIZE + 1], pl[RCP_JSON_FMT_SIZE + 1];
    size_t n, m;
    double d;
    float g;
    if (size >= 8) {
        memcpy(&d, data, 8);
        if (isfinite(d)) {
            n = json_fmt_double(fa, d, 1);
            m = json_fmt_double(pl, d, 0);
            fa[n] = pl[m] = '\0';
            FZ_ASSERT(n == m && memcmp(fa, pl, n) == 0, "%s vs %s", fa, pl);
            FZ_ASSERT(strtod(fa, NULL) == d
                      && signbit(strtod(fa, NULL)) == signbit(d),
                      "%s does not read back as %.17g", fa, d);
        }
    }
    if (size >= 4) {
        memcpy(&g, data, 4);
        if (isfinite(g)) {
            n = rcp_json_fmt_float(fa, g);
            fa[n] = '\0';
            FZ_ASSERT(strtof(fa, NULL) == g, "%s does not read back as %.9g",
                      fa, (double)g);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    rcp_arena a1, a2, a3;
    rcp_buf fast, plain, again;
    rcp_json_err e, e3;
    const rcp_json *t1, *t2, *t3;
    rcp_jw w;

    check_numbers(data, size);
    rcp_arena_init(&a1, 0);
    rcp_arena_init(&a2, 0);
    rcp_arena_init(&a3, 4096);
    rcp_buf_init(&fast);
    rcp_buf_init(&plain);
    rcp_buf_init(&again);

    t1 = rcp_json_parse(&a1, size ? text : NULL, size, 0, &e);
    t3 = rcp_json_parse(&a3, size ? text : NULL, size, 0, &e3);
    if (!t1) {
        FZ_ASSERT(e.code != RCP_JSON_OK && e.msg != NULL, "no error given");
        FZ_ASSERT(e.offset <= size, "offset %zu past %zu", e.offset, size);
        FZ_ASSERT(!t3, "parses only under a limit");
    } else {
        FZ_ASSERT(t3 ? same_tree(t1, t3) : e3.code == RCP_JSON_E_LIMIT,
                  "under a limit: %s", t3 ? "another tree" : e3.msg);
        write_both(t1, &fast, &plain);
        t2 = rcp_json_parse(&a2, fast.data, fast.len, 0, &e);
        FZ_ASSERT(t2 != NULL, "the writer's output does not parse (%s at "
                  "%zu): %.*s", e.msg, e.offset, (int)fast.len, fast.data);
        /* U+FFFD replaces bytes that are not UTF-8 -- the parser refuses
        ** those, so a parsed tree holds none and must come back intact */
        FZ_ASSERT(same_tree(t1, t2), "parse -> write -> parse changed the "
                  "tree: %.*s", (int)fast.len, fast.data);
        rcp_jw_init(&w, &again);
        rcp_jw_value(&w, t2);
        FZ_ASSERT(again.len == fast.len
                  && memcmp(again.data, fast.data, fast.len) == 0,
                  "writing is not a fixed point");
        FZ_ASSERT(rcp_json_hash(14695981039346656037u, t1)
                  == rcp_json_hash(14695981039346656037u, t2),
                  "equal trees hash differently");
    }
    rcp_arena_free(&a1);
    rcp_arena_free(&a2);
    rcp_arena_free(&a3);
    rcp_buf_free(&fast);
    rcp_buf_free(&plain);
    rcp_buf_free(&again);
    return 0;
}
