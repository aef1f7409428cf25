/*
** test_golden.c -- what must not depend on the machine (issue 16): the
** results of a fixed session, and the bytes of a store.  Run on every
** target of `make cross-check`, so each of them is compared with what
** x86-64 wrote.
**
** THE GOLDEN SESSION.  tests/golden/requests.jsonl (retrieve in every
** mode, fusion, rerankers, MMR, filters, units, embed in both encodings,
** embed/sparse, embed/multi, rerank, writes, retrieve after them) is
** played against the sample corpus; tests/golden/responses.jsonl is what
** x86-64 answered (`make golden` rewrites it).  tests/golden/reopen.jsonl
** is played on the store that session left (reopen-responses.jsonl).
** What must be equal:
**   - everything but usage.latencyMs: structure, member order, strings
**     (ids, texts, f32-base64 blobs), integers, the order of hits;
**   - every other number, bit for bit (the shortest round-trip text the
**     writer prints is equal), on every target where C evaluates double
**     arithmetic in double (FLT_EVAL_METHOD 0 or 1: x86-64, aarch64,
**     armhf, s390x, mips, riscv64 with gcc, clang or tcc);
**   - where it evaluates it in x87 extended precision (FLT_EVAL_METHOD 2:
**     i686), a double-valued number (BM25, fusion, cross-encoder,
**     confidence) may differ in its last bits, at most X87_REL relative:
**     the extended intermediates round once where SSE rounds each step,
**     and the i386 libm returns extended results.  Everything float (the
**     vectors, dense and colbert scores) is still bit for bit.
** The server runs with RCP_SIMD=scalar: a SIMD path differs from the
** scalar reference only by rounding, within the bound test_vec checks.
** A server without a dense index (make tiny) is held to tiny-*.jsonl,
** the same sessions as the tiny build answers them on x86-64: which one
** applies is read from what the server advertises at initialize.
**
** THE STORES.  store-x86_64.log and store-s390x.log are the rcp.log a
** server wrote on each machine (--data DIR --corpus, then the golden
** session's writes).  Each one, copied into a fresh directory, must open
** here, serve the reopen session exactly as golden, and keep its bytes:
** what it held is an unchanged prefix of the log afterwards (open rewrote
** nothing).  The log this target writes itself must equal them in every
** byte but the random salt and the CRCs that cover it: the format is
** defined byte by byte, never by the host's struct layout.  The frames
** are walked and their CRC-32C checked here from the format described in
** store.c, independently of store.c's code.
*/
#include "rcp.h"
#define RCP_TEST_CRC32C         /* testutil.h: crc32c() */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define GOLDEN "tests/golden/"
/* store.c's log format (its notes); a new one needs new golden stores:
** make golden STORES=1 */
#define LOG_FORMAT 3
#define CORPUS "tests/sample-corpus.jsonl"

/* x87 only: the relative difference a double-valued number may show */
#define X87_REL 1e-14

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 2
static const double REL = X87_REL;
#else
static const double REL = 0;
#endif

/* MARK: - helpers -------------------------------------------------------- */

static const char *bin(void)
{
    const char *b = getenv("RCP_BIN");
    return b ? b : "./rcp";
}

/* A whole file into a NUL-terminated malloc'd buffer; *len its size. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    size_t n = 0, cap = 0, got;
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    do {
        if (cap - n < 65536) {
            cap = cap ? 2 * cap : 65536;
            p = realloc(p, cap + 1);
            ck_assert_ptr_nonnull(p);
        }
        got = fread(p + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    ck_assert(!ferror(f));
    fclose(f);
    p[n] = '\0';
    *len = n;
    return p;
}

static void spill(const char *path, const char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* `$RCP_BIN serve ARGS` (RCP_SIMD=scalar) with stdin from the file in;
** returns its stdout; the server must exit 0. */
static char *serve(const char *in, const char *const *args, size_t *len)
{
    char *argv[16], *out = NULL;
    size_t n = 0, cap = 0, i;
    int fd[2], status;
    ssize_t got;
    pid_t pid;
    argv[0] = (char *)bin();
    argv[1] = "serve";
    for (i = 0; args[i]; i++)
        argv[i + 2] = (char *)args[i];
    argv[i + 2] = NULL;
    ck_assert_int_eq(pipe(fd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY), src = open(in, O_RDONLY);
        if (src < 0 || nul < 0 || setenv("RCP_SIMD", "scalar", 1) != 0)
            _exit(126);
        dup2(src, 0);
        dup2(fd[1], 1);
        dup2(nul, 2);
        close(fd[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    for (;;) {
        if (cap - n < 65536) {
            cap = cap ? 2 * cap : 65536;
            out = realloc(out, cap + 1);
            ck_assert_ptr_nonnull(out);
        }
        got = read(fd[0], out + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        ck_assert_int_ge(got, 0);
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "%s serve exited with status %d", argv[0], status);
    out[n] = '\0';
    *len = n;
    return out;
}

/* MARK: - comparing responses -------------------------------------------- */

/* Equal numbers: integers exactly; other numbers bit for bit, or within
** REL where the target is allowed to differ (x87). */
static int same_number(const rcp_json *a, const rcp_json *b)
{
    int64_t ia, ib;
    double x, y;
    if (rcp_json_int(a, &ia) && rcp_json_int(b, &ib))
        return ia == ib;
    x = rcp_json_num(a);
    y = rcp_json_num(b);
    if (x == y)
        return 1;
    return fabs(x - y) <= REL * (fabs(x) > fabs(y) ? fabs(x) : fabs(y));
}

/* Appends .key or [i] to the path while walking. */
static void path_push(char *path, size_t cap, const rcp_json *v, size_t i,
                      int in_object)
{
    size_t n = strlen(path);
    if (in_object)
        snprintf(path + n, cap - n, ".%.*s", (int)v->keylen, v->key);
    else
        snprintf(path + n, cap - n, "[%lu]", (unsigned long)i);
}

/* 1 when got equals want under the rules above; else 0 with the path of
** the first difference in path. */
static int same_json(const rcp_json *want, const rcp_json *got, char *path,
                     size_t cap)
{
    size_t i, n = strlen(path);
    if (want->type != got->type)
        return 0;
    switch (want->type) {
    case RCP_JSON_NUMBER:
        return same_number(want, got);
    case RCP_JSON_STRING:
        return want->n == got->n && !memcmp(want->s, got->s, want->n);
    case RCP_JSON_ARRAY:
    case RCP_JSON_OBJECT:
        if (want->n != got->n)
            return 0;
        for (i = 0; i < want->n; i++) {
            const rcp_json *w = &want->kids[i], *g = &got->kids[i];
            int obj = want->type == RCP_JSON_OBJECT;
            path_push(path, cap, w, i, obj);
            if (obj && (w->keylen != g->keylen
                        || memcmp(w->key, g->key, w->keylen)))
                return 0;
            /* the one value that measures the machine, not the result */
            if (!(obj && w->keylen == 9 && !memcmp(w->key, "latencyMs", 9))
                && !same_json(w, g, path, cap))
                return 0;
            path[n] = '\0';
        }
        return 1;
    default:
        return 1;
    }
}

/* 1 when the first response (initialize) advertises the dense mode. */
static int advertises_dense(rcp_arena *a, const char *got, size_t len)
{
    const char *e = memchr(got, '\n', len);
    const rcp_json *r = rcp_json_parse(a, got, e ? (size_t)(e - got) : len,
                                       0, NULL), *modes;
    size_t i;
    modes = rcp_json_get(rcp_json_get(rcp_json_get(rcp_json_get(r,
                "result"), "capabilities"), "retrieve"), "modes");
    for (i = 0; modes && modes->type == RCP_JSON_ARRAY && i < modes->n; i++)
        if (rcp_json_streq(&modes->kids[i], "dense"))
            return 1;
    return 0;
}

/* Line by line: every response of got equals the golden one,
** tests/golden/NAME -- or tiny-NAME for a server without a dense index
** (make tiny), whose answers differ where dense retrieval is asked for. */
static void assert_session(const char *name, const char *got, size_t len)
{
    size_t wlen, line = 0;
    char golden[256], *want;
    const char *w, *g = got, *wend, *gend = got + len;
    rcp_arena a;
    rcp_arena_init(&a, 0);
    snprintf(golden, sizeof golden, GOLDEN "%s%s",
             advertises_dense(&a, got, len) ? "" : "tiny-", name);
    rcp_arena_reset(&a);
    want = slurp(golden, &wlen);
    w = want;
    wend = want + wlen;
    while (w < wend || g < gend) {
        const char *we = memchr(w, '\n', (size_t)(wend - w));
        const char *ge = memchr(g, '\n', (size_t)(gend - g));
        const rcp_json *jw, *jg;
        char path[512] = "";
        line++;
        ck_assert_msg(we != NULL && ge != NULL, "%s: %s at response %lu",
                      golden, we ? "fewer responses" : "more responses",
                      (unsigned long)line);
        jw = rcp_json_parse(&a, w, (size_t)(we - w), 0, NULL);
        jg = rcp_json_parse(&a, g, (size_t)(ge - g), 0, NULL);
        ck_assert_msg(jw && jg, "%s: response %lu is not JSON", golden,
                      (unsigned long)line);
        ck_assert_msg(same_json(jw, jg, path, sizeof path),
                      "%s: response %lu differs at %s:\n  want %.*s\n  got  "
                      "%.*s", golden, (unsigned long)line, path,
                      (int)(we - w > 300 ? 300 : we - w), w,
                      (int)(ge - g > 300 ? 300 : ge - g), g);
        rcp_arena_reset(&a);
        w = we + 1;
        g = ge + 1;
    }
    rcp_arena_free(&a);
    free(want);
}

/* MARK: - the store's bytes ---------------------------------------------- */

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
         | (uint32_t)p[3] << 24;
}

/* The log without what the salt decides (header bytes 24..36: salt and
** header CRC; each frame's CRC), after checking every documented field:
** magic, version LOG_FORMAT, flags 0, the header CRC, and for each frame its
** marker, a length inside the file and its CRC over salt || length ||
** payload.  *out gets a malloc'd copy, *nframes the frame count. */
static size_t log_unsalted(const unsigned char *p, size_t n,
                           unsigned char **out, size_t *nframes)
{
    static const unsigned char magic[8] = { 0x89, 'R', 'C', 'P', 'L', 'O',
                                            'G', 0x0A };
    static const unsigned char mark[4] = { 0xFF, 'R', 'C', 'F' };
    size_t off = 36, len = 24;
    unsigned char *u = malloc(n + 1);
    ck_assert_ptr_nonnull(u);
    ck_assert_uint_ge(n, 36);
    ck_assert(memcmp(p, magic, 8) == 0);
    ck_assert_uint_eq(le32(p + 8), LOG_FORMAT);
    ck_assert_uint_eq(le32(p + 12), 0);               /* flags */
    ck_assert_uint_eq(le32(p + 32), crc32c(0, p, 32));
    memcpy(u, p, 24);
    *nframes = 0;
    while (off < n) {
        uint32_t plen, crc;
        ck_assert_uint_ge(n - off, 12);
        ck_assert(memcmp(p + off, mark, 4) == 0);
        plen = le32(p + off + 4);
        ck_assert_uint_ge(plen, 1);
        ck_assert_uint_le(plen, n - off - 12);
        crc = crc32c(crc32c(crc32c(0, p + 24, 8), p + off + 4, 4),
                     p + off + 12, plen);
        ck_assert_uint_eq(le32(p + off + 8), crc);
        memcpy(u + len, p + off, 8);
        memcpy(u + len + 8, p + off + 12, plen);
        len += 8 + plen;
        off += 12 + plen;
        ++*nframes;
    }
    *out = u;
    return len;
}

/* A fresh empty directory under $TMPDIR (or /tmp). */
static void make_dir(char *dir, size_t cap, const char *what)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, cap, "%s/rcp-golden-%s-XXXXXX", t && *t ? t : "/tmp",
             what);
    ck_assert_msg(mkdtemp(dir) != NULL, "%s: %s", dir, strerror(errno));
}

static void remove_dir(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "%s/rcp.log", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/lock", dir);
    unlink(p);
    rmdir(dir);
}

static const char *const FIELDS[] = { "--field", "file:keyword", "--field",
    "section:text", "--field", "kind:keyword" };
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])

/* serve [--data dir] [--corpus CORPUS] with the sample's fields */
static char *serve_on(const char *in, const char *dir, int corpus,
                      size_t *len)
{
    const char *args[12];
    size_t n = 0, i;
    if (dir) {
        args[n++] = "--data";
        args[n++] = dir;
    }
    if (corpus) {
        args[n++] = "--corpus";
        args[n++] = CORPUS;
    }
    for (i = 0; i < NFIELDS; i++)
        args[n++] = FIELDS[i];
    args[n] = NULL;
    return serve(in, args, len);
}

static char *read_log(const char *dir, size_t *len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/rcp.log", dir);
    return slurp(p, len);
}

/* MARK: - tests ---------------------------------------------------------- */

START_TEST(golden_session_gives_the_golden_responses)
{
    size_t len;
    char *out = serve_on(GOLDEN "requests.jsonl", NULL, 1, &len);
    assert_session("responses.jsonl", out, len);
    free(out);
}
END_TEST

/* A durable server answers exactly as an in-memory one, and after a
** restart it serves the reopen session as golden. */
START_TEST(golden_session_on_a_store_and_after_a_restart)
{
    char dir[256], *out, *before, *after;
    size_t len, blen, alen;
    make_dir(dir, sizeof dir, "store");
    out = serve_on(GOLDEN "requests.jsonl", dir, 1, &len);
    assert_session("responses.jsonl", out, len);
    free(out);
    before = read_log(dir, &blen);
    out = serve_on(GOLDEN "reopen.jsonl", dir, 0, &len);
    assert_session("reopen-responses.jsonl", out, len);
    after = read_log(dir, &alen);
    ck_assert_uint_gt(alen, blen);
    ck_assert_msg(memcmp(before, after, blen) == 0,
                  "reopening rewrote the log");
    free(out);
    free(before);
    free(after);
    remove_dir(dir);
}
END_TEST

/* One checked-in store: it opens here, serves the reopen session as
** golden, keeps its bytes, and holds what this target writes itself in
** every byte the salt does not decide (before and after the writes). */
static void check_foreign_store(const char *log, const char *what)
{
    char dir[256], mine[256], path[512], *theirs, *out, *after, *own;
    unsigned char *u1, *u2;
    size_t tlen, len, alen, olen, l1, l2, f1, f2;
    make_dir(mine, sizeof mine, "mine");
    free(serve_on(GOLDEN "requests.jsonl", mine, 1, &len));
    own = read_log(mine, &olen);
    theirs = slurp(log, &tlen);
    l1 = log_unsalted((unsigned char *)theirs, tlen, &u1, &f1);
    l2 = log_unsalted((unsigned char *)own, olen, &u2, &f2);
    ck_assert_uint_eq(f1, f2);
    ck_assert_msg(l1 == l2 && memcmp(u1, u2, l1) == 0,
                  "%s: the log written here differs from the %s one",
                  log, what);
    free(u1);
    free(u2);

    make_dir(dir, sizeof dir, what);
    snprintf(path, sizeof path, "%s/rcp.log", dir);
    spill(path, theirs, tlen);
    out = serve_on(GOLDEN "reopen.jsonl", dir, 0, &len);
    assert_session("reopen-responses.jsonl", out, len);
    after = read_log(dir, &alen);
    ck_assert_uint_gt(alen, tlen);
    ck_assert_msg(memcmp(theirs, after, tlen) == 0,
                  "%s: opening it here rewrote its bytes", log);
    free(out);

    /* the same writes appended here and there: the same bytes again */
    free(serve_on(GOLDEN "reopen.jsonl", mine, 0, &len));
    free(own);
    own = read_log(mine, &olen);
    l1 = log_unsalted((unsigned char *)after, alen, &u1, &f1);
    l2 = log_unsalted((unsigned char *)own, olen, &u2, &f2);
    ck_assert_msg(l1 == l2 && memcmp(u1, u2, l1) == 0,
                  "%s: writes appended here differ from the same writes "
                  "appended by this target to its own log", log);
    free(u1);
    free(u2);
    free(own);
    free(after);
    free(theirs);
    remove_dir(dir);
    remove_dir(mine);
}

START_TEST(store_written_on_x86_64_opens_and_serves_the_same)
{
    check_foreign_store(GOLDEN "store-x86_64.log", "x86_64");
}
END_TEST

START_TEST(store_written_on_s390x_opens_and_serves_the_same)
{
    check_foreign_store(GOLDEN "store-s390x.log", "s390x");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("golden");
    TCase *tc = tcase_create("golden");
    tcase_add_test(tc, golden_session_gives_the_golden_responses);
    tcase_add_test(tc, golden_session_on_a_store_and_after_a_restart);
    tcase_add_test(tc, store_written_on_x86_64_opens_and_serves_the_same);
    tcase_add_test(tc, store_written_on_s390x_opens_and_serves_the_same);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
