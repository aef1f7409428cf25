/*
** serverutil.h -- driving a server in tests, for test_rcp.c,
** test_methods.c and test_transport.c: in-process, frame by frame (S,
** OUT, A; ask, reply, at, num, is_str, expect_code, init_session), the
** real binary on pipes (proc, start, send_str, next_line, finish), and a
** failing allocator with the means to judge what a session wrote under
** it.  Everything is static inline: what a program does not use costs
** nothing.
*/
#ifndef RCP_SERVERUTIL_H
#define RCP_SERVERUTIL_H

#include "testutil.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* MARK: - a server in-process -------------------------------------------- */

static rcp_server *S;
static rcp_buf OUT;
static rcp_arena A;

/* Send one frame; return everything the server wrote, NUL-terminated. */
static inline const char *ask(const char *frame)
{
    OUT.len = 0;
    rcp_server_handle(S, frame, strlen(frame), &OUT);
    rcp_buf_putc(&OUT, '\0');
    OUT.len--;
    return OUT.data;
}

/* Follow a path like "error.data.field" or "1.id" (array index). */
static inline const rcp_json *at(const rcp_json *v, const char *path)
{
    char key[64];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        memcpy(key, path, n);
        key[n] = '\0';
        if (v->type == RCP_JSON_ARRAY) {
            size_t i = (size_t)atoi(key);
            v = i < v->n ? &v->kids[i] : NULL;
        } else {
            v = rcp_json_get(v, key);
        }
        path += n + (path[n] == '.');
    }
    return v;
}

/* Parse the single line the server wrote. */
static inline const rcp_json *reply(const char *frame)
{
    rcp_json_err err;
    const char *out = ask(frame);
    size_t n = strlen(out);
    const rcp_json *v;
    ck_assert_msg(n > 0 && out[n - 1] == '\n', "no reply line to %s", frame);
    ck_assert_msg(memchr(out, '\n', n - 1) == NULL, "more than one line: %s",
                  out);
    v = rcp_json_parse(&A, out, n - 1, 0, &err);
    ck_assert_msg(v != NULL, "reply is not JSON: %s", out);
    return v;
}

static inline long long num(const rcp_json *v, const char *path)
{
    int64_t x = 0;
    const rcp_json *f = at(v, path);
    ck_assert_msg(f && rcp_json_int(f, &x), "no integer at %s", path);
    return (long long)x;
}

static inline int is_str(const rcp_json *v, const char *path, const char *s)
{
    return rcp_json_streq(at(v, path), s);
}

static inline void expect_code(const char *frame, int code)
{
    const rcp_json *v = reply(frame);
    ck_assert_msg(num(v, "error.code") == code, "%s -> %s (want %d)", frame,
                  OUT.data, code);
}

static inline void init_session(void)
{
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
                              "\"initialize\",\"params\":{\"protocolVersion\""
                              ":1}}");
    ck_assert_msg(at(v, "result") != NULL, "initialize failed: %s",
                  OUT.data);
}

/* A frame with one string of n bytes of c spliced in: "...%s..." is
** replaced by it (malloc'd; free it). */
static inline char *frame_with(const char *fmt, size_t n, char c)
{
    char *fill = malloc(n + 1), *out = malloc(strlen(fmt) + n + 1);
    ck_assert_ptr_nonnull(fill);
    ck_assert_ptr_nonnull(out);
    memset(fill, c, n);
    fill[n] = 0;
    sprintf(out, fmt, fill);
    free(fill);
    return out;
}

static inline void expect_field_free(char *frame, const char *field)
{
    const rcp_json *v = reply(frame);
    ck_assert_msg(num(v, "error.code") == RCP_INVALID_PARAMS
                  && is_str(v, "error.data.field", field), "%.100s... -> "
                  "%.300s", frame, OUT.data);
    free(frame);
}


/* Split OUT into lines; returns how many (at most cap). */
static inline size_t lines_of(const char *out, const rcp_json **v, size_t cap)
{
    size_t n = 0;
    rcp_json_err err;
    while (*out && n < cap) {
        const char *nl = strchr(out, '\n');
        ck_assert_ptr_nonnull(nl);
        v[n] = rcp_json_parse(&A, out, (size_t)(nl - out), 0, &err);
        ck_assert_ptr_nonnull(v[n]);
        n++;
        out = nl + 1;
    }
    return n;
}


/* MARK: - a failing allocator, and judging what a session wrote ------- */

static long OOM_AT, OOM_CALLS;

static inline void *oom_alloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (n == 0) {
        free(p);
        return NULL;
    }
    return ++OOM_CALLS == OOM_AT ? NULL : realloc(p, n);
}

static inline char *slurp_fd(int fd, size_t *n)
{
    size_t cap = 1 << 16;
    char *b = malloc(cap);
    ssize_t k;
    *n = 0;
    ck_assert_ptr_nonnull(b);
    lseek(fd, 0, SEEK_SET);
    while ((k = read(fd, b + *n, cap - *n - 1)) > 0)
        if ((*n += (size_t)k) == cap - 1)
            ck_assert_ptr_nonnull(b = realloc(b, cap *= 2));
    b[*n] = '\0';
    return b;
}

static inline int temp_fd(void)
{
    char path[] = "/tmp/rcp-oom-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    return fd;
}

/* v re-serialised without latencyMs (the one member that may differ). */
static inline void canon(rcp_jw *w, const rcp_json *v)
{
    size_t i;
    if (v->type == RCP_JSON_ARRAY || v->type == RCP_JSON_OBJECT) {
        if (v->type == RCP_JSON_ARRAY)
            rcp_jw_arr(w);
        else
            rcp_jw_obj(w);
        for (i = 0; i < v->n; i++) {
            const rcp_json *k = &v->kids[i];
            if (v->type == RCP_JSON_OBJECT) {
                if (k->keylen == 9 && !memcmp(k->key, "latencyMs", 9))
                    continue;
                rcp_jw_keyn(w, k->key, k->keylen);
            }
            canon(w, k);
        }
        if (v->type == RCP_JSON_ARRAY)
            rcp_jw_arr_end(w);
        else
            rcp_jw_obj_end(w);
    } else {
        rcp_jw_value(w, v);
    }
}

static inline int same_answer(const rcp_json *a, const rcp_json *b)
{
    rcp_buf x, y;
    rcp_jw w;
    int eq;
    rcp_buf_init(&x);
    rcp_buf_init(&y);
    rcp_jw_init(&w, &x);
    canon(&w, a);
    rcp_jw_init(&w, &y);
    canon(&w, b);
    eq = x.len == y.len && !x.oom && !y.oom && !memcmp(x.data, y.data, x.len);
    rcp_buf_free(&x);
    rcp_buf_free(&y);
    return eq;
}

/* The answers (progress frames checked and skipped), one per frame. */
static inline size_t oom_answers(const char *text, const rcp_json **ans,
                                 size_t max)
{
    size_t n = 0;
    while (*text) {
        const char *nl = strchr(text, '\n');
        rcp_json_err err;
        const rcp_json *v;
        ck_assert_msg(nl != NULL, "unterminated output line: %.300s", text);
        v = rcp_json_parse(&A, text, (size_t)(nl - text), 0, &err);
        ck_assert_msg(v != NULL, "malformed output line: %.*s",
                      (int)(nl - text > 300 ? 300 : nl - text), text);
        if (v->type == RCP_JSON_OBJECT
            && rcp_json_streq(rcp_json_get(v, "method"),
                              "notifications/progress")) {
            ck_assert(is_str(v, "jsonrpc", "2.0")
                      && at(v, "params.progress") != NULL);
        } else {
            ck_assert_msg(n < max, "more answers than frames");
            ans[n++] = v;
        }
        text = nl + 1;
    }
    return n;
}

static inline int code_of(const rcp_json *v)
{
    const rcp_json *c = at(v, "error.code");
    int64_t x = 0;
    return c && rcp_json_int(c, &x) ? (int)x : 0;
}

/* Check runs each test in a forked child that ends with _exit, so
** LeakSanitizer's check at exit never sees a test's leaks: a test that
** must leak nothing asks it directly.  1 when memory nothing points to
** any more was found (always 0 in a build without the sanitizer). */
#if defined(__SANITIZE_ADDRESS__)
#define RCP_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RCP_TEST_LSAN 1
#endif
#endif
#ifdef RCP_TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif
static inline int leaked(void)
{
#ifdef RCP_TEST_LSAN
    return __lsan_do_recoverable_leak_check() != 0;
#else
    return 0;
#endif
}

/* MARK: - the real binary on pipes ------------------------------------- */

typedef struct proc {
    pid_t pid;
    int in, out;       /* our ends: write to in, read from out */
    char buf[1 << 16];
    size_t len;
} proc;

static inline const char *bin(void)
{
    const char *b = getenv("RCP_BIN");
    return b ? b : "./rcp";
}

static inline void start4(proc *p, const char *a1, const char *a2,
                          const char *a3, const char *a4)
{
    int to[2], from[2];
    ck_assert_int_eq(pipe(to), 0);
    ck_assert_int_eq(pipe(from), 0);
    p->pid = fork();
    ck_assert_int_ge(p->pid, 0);
    if (p->pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(to[0], 0);
        dup2(from[1], 1);
        dup2(null, 2);
        close(to[1]);
        close(from[0]);
        execl(bin(), bin(), "serve", a1, a2, a3, a4, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p->in = to[1];
    p->out = from[0];
    p->len = 0;
    signal(SIGPIPE, SIG_IGN);
}

static inline void start(proc *p, const char *a1, const char *a2,
                         const char *a3)
{
    start4(p, a1, a2, a3, NULL);
}

static inline void send_raw(proc *p, const char *s, size_t n)
{
    ck_assert_int_eq((long)write(p->in, s, n), (long)n);
}

static inline void send_str(proc *p, const char *s)
{
    send_raw(p, s, strlen(s));
}

/* Next line from the server, or NULL after limit_ms with nothing (a hang
** guard, not a timing assertion). */
static inline const char *next_line(proc *p, int limit_ms)
{
    static char line[1 << 16];
    for (;;) {
        char *nl = memchr(p->buf, '\n', p->len);
        struct pollfd pf;
        ssize_t n;
        if (nl) {
            size_t k = (size_t)(nl - p->buf);
            memcpy(line, p->buf, k);
            line[k] = '\0';
            memmove(p->buf, nl + 1, p->len - k - 1);
            p->len -= k + 1;
            return line;
        }
        pf.fd = p->out;
        pf.events = POLLIN;
        if (poll(&pf, 1, limit_ms) <= 0)
            return NULL;
        n = read(p->out, p->buf + p->len, sizeof p->buf - p->len);
        if (n <= 0)
            return NULL;
        p->len += (size_t)n;
    }
}

static inline int finish(proc *p)
{
    int status = 0;
    close(p->in);
    close(p->out);
    waitpid(p->pid, &status, 0);
    return status;
}

static inline void pause_ms(int ms) { (void)poll(NULL, 0, ms); }

#define PING(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"ping\"}\n"
#define PONG(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"result\":{}}"
#define INIT "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"," \
             "\"params\":{\"protocolVersion\":1}}\n"

#endif
