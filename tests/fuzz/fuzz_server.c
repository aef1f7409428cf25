/*
** fuzz_server.c -- the whole server in-process (rcp_server_handle), after
** initialize, on a model holding FZ_DOCS (fuzz.h).
**
** Input: frames, one per line (at most 64 are handled).  Before a line is
** sent, "@C" in it becomes the nextCursor of the last answer that had one
** and "@V" its indexVersion, so the fuzzer pages with real cursors (§10)
** and pins real snapshots (§7.7.1) -- forged ones it writes itself.
**
** Oracles, whatever the input:
**   - every line the server writes is JSON, an object or a non-empty
**     array of objects (fz_check_lines);
**   - a request object with a valid id (§4.7: a string or a number) gets
**     exactly one response carrying that id, with result or error but not
**     both, and an error has an integer code and a string message (§4,
**     §12) -- progress notifications may come before it (§9);
**   - a batch (§11) is answered by at most one line;
**   - nothing is answered after shutdown (§13);
** and ASan/UBSan find what the code does wrong on the way.  libFuzzer's
** -timeout catches a request that never ends (issue 8 item 1).
*/
#define FZ_SERVER
#include "fuzz.h"

#define MAX_FRAMES 64

typedef struct ctx {
    char cursor[128], version[32];
} ctx;

/* Copy the string value after "key":" in s into out (no escapes occur in
** the values we look for; longer ones are ignored). */
static void remember(const char *s, size_t n, const char *key, char *out,
                     size_t cap)
{
    char pat[32];
    const char *p, *end = s + n;
    size_t k;
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    k = strlen(pat);
    for (p = s; (size_t)(end - p) > k; p++) {
        const char *q;
        if (memcmp(p, pat, k) != 0)
            continue;
        for (q = p + k; q < end && *q != '"' && *q != '\\'; q++)
            ;
        if (q < end && *q == '"' && (size_t)(q - p - k) < cap) {
            memcpy(out, p + k, (size_t)(q - p - k));
            out[q - p - k] = '\0';
        }
        return;
    }
}

/* line with @C and @V replaced, into b. */
static void substitute(rcp_buf *b, const ctx *x, const char *p, size_t n)
{
    size_t i;
    rcp_buf_clear(b);
    for (i = 0; i < n; i++) {
        if (p[i] == '@' && i + 1 < n && (p[i + 1] == 'C' || p[i + 1] == 'V')) {
            rcp_buf_puts(b, p[i + 1] == 'C' ? x->cursor : x->version);
            i++;
        } else {
            rcp_buf_putc(b, p[i]);
        }
    }
}

/* The valid id of a request object, or NULL (§4.7). */
static const rcp_json *request_id(const rcp_json *v)
{
    const rcp_json *id;
    if (!v || v->type != RCP_JSON_OBJECT)
        return NULL;
    id = rcp_json_get(v, "id");
    if (!id || (id->type != RCP_JSON_STRING && id->type != RCP_JSON_NUMBER))
        return NULL;
    return id;
}

/* The response in out that carries id: exactly one, well formed. */
static void check_answered_once(fz_server *f, const rcp_json *id)
{
    const char *p = f->out.data, *end = p + f->out.len;
    rcp_arena a;
    int found = 0;
    rcp_arena_init(&a, 0);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const rcp_json *v = rcp_json_parse(&a, p, (size_t)(nl - p), 0, NULL);
        const rcp_json *rid = rcp_json_get(v, "id");
        const rcp_json *res = rcp_json_get(v, "result");
        const rcp_json *err = rcp_json_get(v, "error");
        if (rid && rcp_id_equal(rid, id)) {
            int64_t code;
            found++;
            FZ_ASSERT((res != NULL) != (err != NULL), "result xor error: "
                      "%.*s", (int)(nl - p), p);
            FZ_ASSERT(!err || (rcp_json_int(rcp_json_get(err, "code"), &code)
                      && rcp_json_get(err, "message")
                      && rcp_json_get(err, "message")->type
                      == RCP_JSON_STRING), "a malformed error: %.*s",
                      (int)(nl - p), p);
        }
        p = nl + 1;
    }
    rcp_arena_free(&a);
    FZ_ASSERT(found == 1, "the request was answered %d times: %.*s", found,
              (int)f->out.len, f->out.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    fz_server f;
    rcp_buf line;
    rcp_arena a;
    ctx x;
    int frames = 0;
    memset(&x, 0, sizeof x);
    rcp_buf_init(&line);
    rcp_arena_init(&a, 0);
    fz_open(&f, "community", FZ_DOCS, FZ_NDOCS);
    while (p < end && frames++ < MAX_FRAMES) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const rcp_json *req;
        int was_done = f.done;
        if (!nl)
            nl = end;
        substitute(&line, &x, p, (size_t)(nl - p));
        p = nl + 1;
        fz_frame(&f, line.data ? line.data : "", line.len);
        if (was_done) {
            FZ_ASSERT(f.out.len == 0, "answered after shutdown");
            continue;
        }
        rcp_arena_reset(&a);
        req = rcp_json_parse(&a, line.data ? line.data : "", line.len, 0,
                             NULL);
        if (request_id(req))
            check_answered_once(&f, request_id(req));
        else if (req && req->type == RCP_JSON_ARRAY)
            FZ_ASSERT(fz_check_lines(&f) <= 1, "a batch answered in pieces");
        remember(f.out.data, f.out.len, "nextCursor", x.cursor,
                 sizeof x.cursor);
        remember(f.out.data, f.out.len, "indexVersion", x.version,
                 sizeof x.version);
    }
    fz_close(&f);
    rcp_buf_free(&line);
    rcp_arena_free(&a);
    return 0;
}
