/*
** fuzz.h -- what the fuzz targets in tests/fuzz/ share: a fresh in-process
** server per input (the model, the §8 fields, initialize done), and the
** oracles every answer must pass whatever the input was.
**
** Each target is one file, fuzz_<area>.c, defining LLVMFuzzerTestOneInput.
** They are built two ways (Makefile): with clang -fsanitize=fuzzer for
** `make fuzz` and `make fuzz-smoke`, and with any compiler plus replay.c
** (a main that feeds the files named on the command line) so that `make
** check` replays the seed corpora and every input that once failed
** (tests/fuzz/regress/) on every build, libFuzzer or not.
**
** Determinism: no clock, no randomness of our own, and everything a
** target touches is made anew for each input (a fresh model and server),
** so an input that failed once fails again when replayed.
*/
#ifndef RCP_FUZZ_H
#define RCP_FUZZ_H

#include "rcp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: print what and where, then abort so that libFuzzer
** (or the replay driver, under ASan) reports the input. */
#define FZ_ASSERT(cond, ...)                                              \
    do {                                                                  \
        if (!(cond)) {                                                    \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                 \
            fputc('\n', stderr);                                          \
            abort();                                                      \
        }                                                                 \
    } while (0)

/* MARK: - a server in-process -------------------------------------------- */

/* For the targets that drive a server (they define FZ_SERVER first):
** static functions a target does not call would be warnings (errors
** under make check's -Werror). */
#ifdef FZ_SERVER

/* The §8 fields every server target declares: one of each type the
** filter compiler knows, the conformance suite's names. */
static const rcp_field FZ_FIELDS[] = {
    { "year", 4, RCP_FIELD_INT },        { "lang", 4, RCP_FIELD_KEYWORD },
    { "tags", 4, RCP_FIELD_KEYWORD },    { "title", 5, RCP_FIELD_TEXT },
    { "score", 5, RCP_FIELD_FLOAT },     { "draft", 5, RCP_FIELD_BOOL },
    { "published", 9, RCP_FIELD_DATE }
};

typedef struct fz_server {
    rcp_model  *m;
    rcp_server *s;
    rcp_buf     out;        /* the answers to the last frame */
    rcp_arena   a;          /* for parsing them */
    int         done;       /* shutdown was answered */
} fz_server;

/* No answer to a fuzz input is longer than this.  The input is at most
** 64 frames of a few KB, so a page of hits (k <= 1000) with their texts
** and vectors, or an embed batch, stays far below; more is amplification
** (issue 8 item 2: a 3-byte document answered with 100 MB). */
#define FZ_MAX_ANSWER ((size_t)32 << 20)

/* Every line of f->out is one JSON value (the writer's promise, §4.6:
** whatever the input, what goes out parses) and is an object or an array
** of objects (§4, §11), and none is longer than FZ_MAX_ANSWER.  Returns
** the number of lines. */
static size_t fz_check_lines(fz_server *f)
{
    const char *p = f->out.data, *end = p + f->out.len;
    size_t lines = 0;
    FZ_ASSERT(!f->out.oom, "the answer ran out of memory");
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const rcp_json *v;
        rcp_json_err e;
        size_t i;
        FZ_ASSERT(nl != NULL, "an answer without its newline");
        FZ_ASSERT((size_t)(nl - p) <= FZ_MAX_ANSWER, "a %lu-byte answer",
                  (unsigned long)(nl - p));
        rcp_arena_reset(&f->a);
        v = rcp_json_parse(&f->a, p, (size_t)(nl - p), 0, &e);
        FZ_ASSERT(v != NULL, "an answer that is not JSON (%s at %zu): %.*s",
                  e.msg, e.offset, (int)(nl - p), p);
        FZ_ASSERT(v->type == RCP_JSON_OBJECT || (v->type == RCP_JSON_ARRAY
                  && v->n > 0), "not an object or a batch: %.*s",
                  (int)(nl - p), p);
        for (i = 0; v->type == RCP_JSON_ARRAY && i < v->n; i++)
            FZ_ASSERT(v->kids[i].type == RCP_JSON_OBJECT,
                      "a batch member that is not an object");
        lines++;
        p = nl + 1;
    }
    return lines;
}

/* Hand one frame to the server; its answers are in f->out and have
** passed fz_check_lines.  Frames after shutdown are not sent. */
static void fz_frame(fz_server *f, const char *frame, size_t len)
{
    rcp_buf_clear(&f->out);
    if (f->done)
        return;
    f->done = rcp_server_handle(f->s, frame, len, &f->out);
    (void)fz_check_lines(f);
}

static void fz_frame_str(fz_server *f, const char *frame)
{
    fz_frame(f, frame, strlen(frame));
}

/* A new model and server with FZ_FIELDS, initialised, holding docs[0..n)
** (index/add frames, each answered with a result). */
static void fz_open(fz_server *f, const char *trust,
                    const char *const *docs, size_t n)
{
    rcp_server_opts o;
    rcp_model_opts mo;
    char err[256];
    size_t i;
    memset(f, 0, sizeof *f);
    rcp_buf_init(&f->out);
    rcp_arena_init(&f->a, 0);
    rcp_model_opts_init(&mo);
    mo.fields = FZ_FIELDS;      /* §8: the engine reads their values */
    mo.nfields = sizeof FZ_FIELDS / sizeof *FZ_FIELDS;
    f->m = rcp_model_new(&mo, err, sizeof err);
    FZ_ASSERT(f->m != NULL, "%s", err);
    memset(&o, 0, sizeof o);
    o.model = f->m;
    o.fields = FZ_FIELDS;
    o.nfields = sizeof FZ_FIELDS / sizeof *FZ_FIELDS;
    o.deadline_ms = 0;                   /* no clock in a fuzz target */
    o.write_trust = trust;   /* what index/add writes is labelled so */
    /* max_request_memory stays the default (256 MiB, under libFuzzer's
    ** -rss_limit_mb=2048): a smaller cap would turn an amplified answer
    ** into an error and hide it */
    f->s = rcp_server_new(&o);
    FZ_ASSERT(f->s != NULL, "rcp_server_new");
    fz_frame_str(f, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
                    "\"params\":{\"protocolVersion\":1}}");
    FZ_ASSERT(strstr(f->out.data, "\"result\"") != NULL, "initialize: %s",
              f->out.data);
    for (i = 0; i < n; i++) {
        fz_frame_str(f, docs[i]);
        FZ_ASSERT(f->out.len && strstr(f->out.data, "\"result\"") != NULL,
                  "preload %zu: %.*s", i, (int)f->out.len, f->out.data);
    }
}

static void fz_close(fz_server *f)
{
    rcp_server_free(f->s);
    rcp_model_free(f->m);
    rcp_buf_free(&f->out);
    rcp_arena_free(&f->a);
}

/* The documents the server targets start with: every field type set,
** some absent, an array-valued keyword, and a chunked document (§7.10
** chunk: true), so that filters, unit "document" and citations have
** something to work on.  Every text holds the word "doc". */
/* 40 words: seven of them make a document of two chunks (128 tokens
** each, methods.c's CHUNK_TOKENS). */
#define FZ_W10 "doc one two three four five six seven eight nine. "
#define FZ_W40 FZ_W10 FZ_W10 FZ_W10 FZ_W10
#define FZ_ADD(docs) "{\"jsonrpc\":\"2.0\",\"id\":\"pre\",\"method\":" \
    "\"index/add\",\"params\":{\"documents\":[" docs "]}}"
static const char *const FZ_DOCS[] = {
    FZ_ADD("{\"id\":\"a\",\"text\":\"doc alpha: the quick brown fox\","
           "\"meta\":{\"year\":2020,\"lang\":\"en\",\"tags\":[\"x\",\"y\"],"
           "\"title\":\"Quick Fox\",\"score\":0.5,\"draft\":false,"
           "\"published\":\"2020-01-02T03:04:05Z\"}}"),
    FZ_ADD("{\"id\":\"b\",\"text\":\"doc beta: lazy dogs sleep\","
           "\"meta\":{\"year\":1999,\"lang\":\"de\",\"tags\":\"y\","
           "\"score\":-2,\"draft\":true,\"published\":1700000000000}}"),
    FZ_ADD("{\"id\":\"c\",\"text\":\"doc gamma\",\"meta\":{\"note\":1}}"),
    FZ_ADD("{\"id\":\"d\",\"text\":\"doc delta\"}"),
    "{\"jsonrpc\":\"2.0\",\"id\":\"pre\",\"method\":\"index/add\",\"params\":"
    "{\"chunk\":true,\"documents\":[{\"id\":\"long\",\"text\":\""
    FZ_W40 FZ_W40 FZ_W40 FZ_W40 FZ_W40 FZ_W40 FZ_W40 "the end.\","
    "\"meta\":{\"year\":2024,\"lang\":\"en\",\"tags\":[\"z\"]}}]}}"
};
#define FZ_NDOCS (sizeof FZ_DOCS / sizeof *FZ_DOCS)

#endif /* FZ_SERVER */
#endif
