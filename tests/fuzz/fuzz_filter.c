/*
** fuzz_filter.c -- the §8 filter builder (methods.c) and the engine's
** evaluator (model.c), through retrieve requests, on one server holding
** FZ_DOCS (fuzz.h), whose documents set every field type, leave some
** out and hold an array-valued keyword.
**
** Input: a filter, as JSON text (inputs that are not one JSON value, or
** nest deeper than the server's parser allows once wrapped, or are null
** -- no filter at all -- are skipped:
** they would test the parser, which fuzz_json.c does, and a fragment
** could close the request and add members of its own).  The server is
** asked retrieve {query "doc", k 100, mode sparse, filter F}, then the
** same with {"not": F}.
** Oracles:
**   - both are answered, and alike: both results, or both errors with
**     the same code (not changes no verdict on the clause inside);
**   - a valid filter and its negation split the unfiltered hits: no hit
**     in both, none in neither (§8: not is the complement);
**   - the answers pass fz_check_lines.
** The server is made once: retrieve changes nothing, so every input
** meets the same state.
*/
#define FZ_SERVER
#include "fuzz.h"

static fz_server F;
static rcp_buf ALL;     /* the unfiltered hits' ids, "\n"-separated */

#define ASK_HEAD "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"retrieve\"," \
    "\"params\":{\"query\":\"doc\",\"k\":100,\"mode\":\"sparse\""

/* The hit ids of the answer in F.out, each followed by '\n', into ids;
** the error code in *code (0 for a result). */
static void answer(rcp_buf *ids, int64_t *code)
{
    rcp_arena a;
    const rcp_json *v, *hits, *err;
    size_t i;
    rcp_arena_init(&a, 0);
    rcp_buf_clear(ids);
    v = rcp_json_parse(&a, F.out.data, F.out.len ? F.out.len - 1 : 0, 0,
                       NULL);
    FZ_ASSERT(v != NULL, "one answer, one line: %.*s", (int)F.out.len,
              F.out.data);
    err = rcp_json_get(v, "error");
    *code = 0;
    if (err) {
        FZ_ASSERT(rcp_json_int(rcp_json_get(err, "code"), code),
                  "an error without a code");
    } else {
        hits = rcp_json_get(rcp_json_get(v, "result"), "hits");
        FZ_ASSERT(hits && hits->type == RCP_JSON_ARRAY, "no hits array");
        for (i = 0; i < hits->n; i++) {
            const rcp_json *id = rcp_json_get(&hits->kids[i], "id");
            FZ_ASSERT(id && id->type == RCP_JSON_STRING, "a hit without id");
            rcp_buf_put(ids, id->s, id->n);
            rcp_buf_putc(ids, '\n');
        }
    }
    rcp_arena_free(&a);
}

static void ask(const char *filter, size_t n, int negate, rcp_buf *ids,
                int64_t *code)
{
    rcp_buf frame;
    rcp_buf_init(&frame);
    rcp_buf_puts(&frame, ASK_HEAD);
    if (filter) {
        rcp_buf_puts(&frame, negate ? ",\"filter\":{\"not\":" : ",\"filter\":");
        rcp_buf_put(&frame, filter, n);
        if (negate)
            rcp_buf_putc(&frame, '}');
    }
    rcp_buf_puts(&frame, "}}");
    FZ_ASSERT(!frame.oom, "oom");
    fz_frame(&F, frame.data, frame.len);
    rcp_buf_free(&frame);
    answer(ids, code);
}

/* Is the line id (with its '\n') one of the lines of set? */
static int has_line(const rcp_buf *set, const char *id, size_t n)
{
    const char *p = set->data, *end = p ? p + set->len : p;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if ((size_t)(nl - p) == n && memcmp(p, id, n) == 0)
            return 1;
        p = nl + 1;
    }
    return 0;
}

static size_t count_lines(const rcp_buf *b)
{
    size_t i, n = 0;
    for (i = 0; i < b->len; i++)
        n += b->data[i] == '\n';
    return n;
}

static void close_server(void)
{
    fz_close(&F);
    rcp_buf_free(&ALL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    rcp_buf yes, no;
    rcp_arena a;
    const rcp_json *v;
    int64_t c1, c2;
    const char *p, *end;
    if (!F.s) {
        int64_t code;
        fz_open(&F, NULL, FZ_DOCS, FZ_NDOCS);
        rcp_buf_init(&ALL);
        atexit(close_server);
        ask(NULL, 0, 0, &ALL, &code);
        FZ_ASSERT(code == 0 && count_lines(&ALL) >= FZ_NDOCS, "no baseline");
    }
    rcp_arena_init(&a, 0);
    /* the request adds 4 levels around the filter (and not 1 more); a
    ** null filter is no filter (§4: null = absent), {"not": null} is not */
    v = rcp_json_parse(&a, size ? text : NULL, size, RCP_JSON_MAX_DEPTH - 5,
                       NULL);
    if (!v || v->type == RCP_JSON_NULL) {
        rcp_arena_free(&a);
        return 0;
    }
    rcp_arena_free(&a);
    rcp_buf_init(&yes);
    rcp_buf_init(&no);
    ask(text, size, 0, &yes, &c1);
    ask(text, size, 1, &no, &c2);
    FZ_ASSERT(c1 == c2, "F answered %lld, not F %lld", (long long)c1,
              (long long)c2);
    if (c1 == 0) {
        FZ_ASSERT(count_lines(&yes) + count_lines(&no) == count_lines(&ALL),
                  "F and not F do not split the hits: %zu + %zu != %zu",
                  count_lines(&yes), count_lines(&no), count_lines(&ALL));
        for (p = ALL.data, end = p + ALL.len; p < end;) {   /* ALL holds some */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t n = (size_t)(nl - p);
            FZ_ASSERT(has_line(&yes, p, n) != has_line(&no, p, n),
                      "%.*s is in both or in neither", (int)n, p);
            p = nl + 1;
        }
    }
    rcp_buf_free(&yes);
    rcp_buf_free(&no);
    return 0;
}
