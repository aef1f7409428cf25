/*
** test_main.c -- the rcp command line (main.c), driven as a user drives
** it: the real binary ($RCP_BIN, default ./rcp) with pipes, or with a
** pseudo-terminal where its behaviour depends on one.
**
** rcp call needs servers that misbehave on purpose or show what they
** were sent; this program is that server too, started as
** `test_main fake-server MODE` (see fake_server).  Waits have hang
** guards, never timing assertions.
*/
#define _XOPEN_SOURCE 700           /* posix_openpt, grantpt, ptsname */

#include "../rcp.h"
#include "testutil.h"
#include "httppeer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char *SELF = "build/rel/tests/test_main";
static const char *CORPUS = "tests/sample-corpus.jsonl";

static const char *bin(void)
{
    const char *b = getenv("RCP_BIN");
    return b ? b : "./rcp";
}

/* MARK: - running the binary --------------------------------------------- */

enum { ON_PIPES = 0, TTY_OUT = 1, TTY_ERR = 2 };

typedef struct proc {
    pid_t  pid;
    int    in, out, err;        /* our ends; -1 once closed or at EOF */
    rcp_buf o, e;               /* what came on stdout, stderr */
    int    status;              /* exit status, 128 + signal */
} proc;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A pseudo-terminal: the master in *master, the slave's name in name.
** Output processing is off, so \n stays \n. */
static void open_pty(int *master, char *name, size_t cap)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(m, 0);
    ck_assert_int_eq(grantpt(m), 0);
    ck_assert_int_eq(unlockpt(m), 0);
    ck_assert_ptr_nonnull(ptsname(m));
    snprintf(name, cap, "%s", ptsname(m));
    *master = m;
}

static int open_slave(const char *name)
{
    struct termios t;
    int fd = open(name, O_RDWR | O_NOCTTY);
    if (fd >= 0 && tcgetattr(fd, &t) == 0) {
        t.c_oflag &= ~(tcflag_t)OPOST;
        tcsetattr(fd, TCSANOW, &t);
    }
    return fd;
}

/* In the child: env entries "NAME=value" set, "NAME" unsets. */
static void apply_env(const char *const *env)
{
    char buf[256];
    for (; env && *env; env++) {
        const char *eq = strchr(*env, '=');
        if (!eq) {
            unsetenv(*env);
            continue;
        }
        snprintf(buf, sizeof buf, "%.*s", (int)(eq - *env), *env);
        setenv(buf, eq + 1, 1);
    }
}

/* Start argv; an argv[0] of "rcp" is the binary under test. */
static void proc_start(proc *p, const char *const *argv, int tty,
                       const char *const *env)
{
    int in[2], out[2], err[2], mo = -1, me = -1;
    char so[128], se[128];
    memset(p, 0, sizeof *p);
    rcp_buf_init(&p->o);
    rcp_buf_init(&p->e);
    ck_assert_int_eq(pipe(in), 0);
    if (tty & TTY_OUT)
        open_pty(&mo, so, sizeof so);
    else
        ck_assert_int_eq(pipe(out), 0);
    if (tty & TTY_ERR)
        open_pty(&me, se, sizeof se);
    else
        ck_assert_int_eq(pipe(err), 0);
    signal(SIGPIPE, SIG_IGN);
    p->pid = fork();
    ck_assert_int_ge(p->pid, 0);
    if (p->pid == 0) {
        int fo = tty & TTY_OUT ? open_slave(so) : out[1];
        int fe = tty & TTY_ERR ? open_slave(se) : err[1];
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        long fd, max = sysconf(_SC_OPEN_MAX);
        dup2(in[0], 0);
        dup2(fo, 1);
        dup2(fe, 2);
        for (fd = 3; fd < (max > 0 && max < 4096 ? max : 4096); fd++)
            close((int)fd);   /* our ends too: stdin must see its EOF */
        apply_env(env);
        execvp(strcmp(argv[0], "rcp") ? argv[0] : bin(),
               (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    p->in = in[1];
    if (tty & TTY_OUT) {
        p->out = mo;
    } else {
        close(out[1]);
        p->out = out[0];
    }
    if (tty & TTY_ERR) {
        p->err = me;
    } else {
        close(err[1]);
        p->err = err[0];
    }
}

static void proc_write(proc *p, const char *s)
{
    ck_assert_int_eq((long)write(p->in, s, strlen(s)), (long)strlen(s));
}

static void proc_close_in(proc *p)
{
    if (p->in >= 0)
        close(p->in);
    p->in = -1;
}

/* Read what is ready within ms; 0 once both outputs are at EOF (a pty's
** master reads EIO when the last slave closes: the same thing). */
static int proc_pump(proc *p, int ms)
{
    struct pollfd pf[2];
    int n = 0, i;
    char buf[4096];
    if (p->out >= 0)
        pf[n].fd = p->out, pf[n++].events = POLLIN;
    if (p->err >= 0)
        pf[n].fd = p->err, pf[n++].events = POLLIN;
    if (n == 0)
        return 0;
    if (poll(pf, (nfds_t)n, ms) <= 0)
        return 1;
    for (i = 0; i < n; i++) {
        ssize_t k;
        int *fd = pf[i].fd == p->out ? &p->out : &p->err;
        rcp_buf *b = fd == &p->out ? &p->o : &p->e;
        if (!pf[i].revents)
            continue;
        k = read(*fd, buf, sizeof buf);
        if (k > 0) {
            rcp_buf_put(b, buf, (size_t)k);
        } else if (k == 0 || errno != EINTR) {
            close(*fd);
            *fd = -1;
        }
    }
    return 1;
}

/* Pump until needle shows on stderr (1) or the hang guard passes (0). */
static int proc_wait_err(proc *p, const char *needle)
{
    double end = now_ms() + 30000;
    while (now_ms() < end) {
        rcp_buf_putc(&p->e, '\0');
        p->e.len--;
        if (strstr(p->e.data ? p->e.data : "", needle))
            return 1;
        if (!proc_pump(p, 50))
            return 0;
    }
    return 0;
}

static void proc_finish(proc *p)
{
    double end = now_ms() + 60000;
    int st;
    proc_close_in(p);
    while (proc_pump(p, 100) && now_ms() < end)
        ;
    if (now_ms() >= end)
        kill(p->pid, SIGKILL);
    ck_assert_int_eq(waitpid(p->pid, &st, 0), p->pid);
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    rcp_buf_putc(&p->o, '\0');
    rcp_buf_putc(&p->e, '\0');
    ck_assert(!p->o.oom && !p->e.oom);
}

static void proc_free(proc *p)
{
    rcp_buf_free(&p->o);
    rcp_buf_free(&p->e);
}

/* Run argv to its end with input on stdin; the exit status. */
static int run(proc *p, const char *const *argv, const char *input, int tty,
               const char *const *env)
{
    proc_start(p, argv, tty, env);
    if (input)
        proc_write(p, input);
    proc_finish(p);
    return p->status;
}

#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const char *OUT(const proc *p) { return p->o.data; }
static const char *ERR(const proc *p) { return p->e.data; }

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* MARK: - the fake server (this program, `fake-server MODE`) ------------- */

/* Answers every request with {"protocolVersion":1, "inits": initialize
** requests seen so far, "init": the first initialize's params, "request":
** the request as received}.  A batch is answered in reverse order (a
** client that pairs by position gets it wrong).  MODE "null-id" answers
** everything after initialize with -32600 and id null; MODE "escape"
** sends a log and an error whose texts hold terminal escape sequences. */
enum { FAKE_ECHO, FAKE_NULL_ID, FAKE_ESCAPE };

static void fake_answer(rcp_buf *out, const rcp_json *req, int inits,
                        const char *init, int mode)
{
    static const char esc[] = "{\"code\":-32602,\"message\":\"bad\\u001b]0;"
        "owned\\u0007\\u001b[2J\",\"data\":{\"field\":\"\\u001b[31m\"}}";
    rcp_jw w;
    rcp_jw_init(&w, out);
    if (mode == FAKE_ESCAPE) {
        rcp_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                     "log\",\"params\":{\"level\":\"info\\u001b[1m\","
                     "\"message\":\"x\\u001b[2Jy\"}}\n");
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "jsonrpc");
        rcp_jw_cstr(&w, "2.0");
        rcp_jw_key(&w, "id");
        rcp_jw_value(&w, rcp_json_get(req, "id"));
        rcp_jw_key(&w, "error");
        rcp_jw_raw(&w, esc, sizeof esc - 1);
        rcp_jw_obj_end(&w);
        return;
    }
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    if (mode == FAKE_NULL_ID) {
        rcp_jw_null(&w);
        rcp_jw_key(&w, "error");
        rcp_jw_raw(&w, "{\"code\":-32600,\"message\":\"Invalid Request\"}",
                   43);
    } else {
        rcp_jw_value(&w, rcp_json_get(req, "id"));
        rcp_jw_key(&w, "result");
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "protocolVersion");
        rcp_jw_int(&w, 1);
        rcp_jw_key(&w, "inits");
        rcp_jw_int(&w, inits);
        rcp_jw_key(&w, "init");
        rcp_jw_raw(&w, init, strlen(init));
        rcp_jw_key(&w, "request");
        rcp_jw_value(&w, req);
        rcp_jw_obj_end(&w);
    }
    rcp_jw_obj_end(&w);
}

static int fake_server(const char *mode)
{
    static char line[1 << 20];
    char init[4096] = "null";
    int inits = 0, m = !strcmp(mode, "null-id") ? FAKE_NULL_ID
                     : !strcmp(mode, "escape") ? FAKE_ESCAPE : FAKE_ECHO;
    rcp_arena a;
    rcp_buf out, one;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    rcp_buf_init(&one);
    while (fgets(line, sizeof line, stdin)) {
        const rcp_json *v = rcp_json_parse(&a, line, strcspn(line, "\n"), 0,
                                           NULL);
        size_t i;
        out.len = 0;
        if (v && v->type == RCP_JSON_OBJECT && rcp_json_get(v, "id")) {
            if (rcp_json_streq(rcp_json_get(v, "method"), "initialize")) {
                if (inits++ == 0) {
                    rcp_jw w;
                    one.len = 0;
                    rcp_jw_init(&w, &one);
                    rcp_jw_value(&w, rcp_json_get(v, "params"));
                    snprintf(init, sizeof init, "%.*s", (int)one.len,
                             one.data);
                }
                fake_answer(&out, v, inits, init, FAKE_ECHO);
            } else {
                fake_answer(&out, v, inits, init, m);
            }
        } else if (v && v->type == RCP_JSON_ARRAY) {
            rcp_buf_putc(&out, '[');
            for (i = v->n; i-- > 0;) {
                if (!rcp_json_get(&v->kids[i], "id"))
                    continue;         /* a notification: no entry (§11) */
                if (out.len > 1)
                    rcp_buf_putc(&out, ',');
                fake_answer(&out, &v->kids[i], inits, init, m);
            }
            rcp_buf_putc(&out, ']');
        }
        if (out.len) {
            rcp_buf_putc(&out, '\n');
            fwrite(out.data, 1, out.len, stdout);
            fflush(stdout);
        }
        rcp_arena_reset(&a);
    }
    rcp_buf_free(&out);
    rcp_buf_free(&one);
    rcp_arena_free(&a);
    return 0;
}

/* MARK: - rcp call -------------------------------------------------------- */

/* rcp call --url: the same answers over HTTP (§5.2), the status of a
** refused request said, the options that make no sense refused. */
START_TEST(call_url_talks_http)
{
    proc p;
    hpeer hp;
    ck_assert_int_eq(hpeer_start(&hp, HP_LEGAL, "tok"), 0);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--url", hp.url,
                                  "--header", "Authorization: Bearer tok",
                                  "ping", "nonce=5"), NULL, ON_PIPES, NULL),
                     0);
    ck_assert_str_eq(OUT(&p), "{\"nonce\":5}\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--url", hp.url,
                                  "--header", "Authorization: Bearer tok",
                                  "retrieve", "query=x", "k=0"), NULL,
                         ON_PIPES, NULL), 1);
    ck_assert_msg(strncmp(ERR(&p), "-32602 ", 7) == 0, "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--url", hp.url, "ping"),
                         NULL, ON_PIPES, NULL), 3);
    ck_assert_msg(strstr(ERR(&p), "HTTP 401") != NULL, "%s", ERR(&p));
    proc_free(&p);
    hpeer_stop(&hp);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--url", hp.url, "ping"),
                         NULL, ON_PIPES, NULL), 3);
    ck_assert_msg(strstr(ERR(&p), "cannot reach the server") != NULL, "%s",
                  ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--url", hp.url, "ping",
                                  "--", bin(), "serve"), NULL, ON_PIPES,
                         NULL), 2);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--header", "A: b", "ping",
                                  "--", bin(), "serve"), NULL, ON_PIPES,
                         NULL), 2);
    proc_free(&p);
}
END_TEST

START_TEST(call_prints_the_result_on_stdout_and_exits_0)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "ping", "nonce=5", "--",
                                  bin(), "serve"), NULL, ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), "{\"nonce\":5}\n");
    proc_free(&p);
}
END_TEST

START_TEST(call_error_is_code_message_and_data_on_stderr_exit_1)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve", "query=x", "k=0",
                                  "--", bin(), "serve"), NULL, ON_PIPES,
                         NULL), 1);
    ck_assert_str_eq(OUT(&p), "");
    ck_assert_msg(strncmp(ERR(&p), "-32602 ", 7) == 0, "%s", ERR(&p));
    ck_assert_msg(strstr(ERR(&p), "\ndata: {\"field\":\"k\"") != NULL, "%s",
                  ERR(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_initializes_once_then_sends_the_request)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "ping", "--", SELF,
                                  "fake-server", "echo"), NULL, ON_PIPES,
                         NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"inits\":1,\"init\":{\"protocolVersion\""
                         ":1,\"client\":{\"name\":\"rcp-call\"") != NULL,
                  "%s", OUT(&p));
    ck_assert_msg(strstr(OUT(&p), "\"method\":\"ping\",\"params\":{}")
                  != NULL, "%s", OUT(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_key_value_params_are_typed_as_json)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve", "k=5",
                                  "mode=hybrid", "exact=true", "none=null",
                                  "s=\"5\"", "text=what is bm25", "empty=",
                                  "filter={\"field\":\"year\",\"op\":\"gte\","
                                  "\"value\":2020}", "rerank.method=colbert",
                                  "rerank.topN=3", "--", SELF, "fake-server",
                                  "echo"), NULL, ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"params\":{\"k\":5,\"mode\":\"hybrid\","
                         "\"exact\":true,\"none\":null,\"s\":\"5\",\"text\":"
                         "\"what is bm25\",\"empty\":\"\",\"filter\":{\""
                         "field\":\"year\",\"op\":\"gte\",\"value\":2020},"
                         "\"rerank\":{\"method\":\"colbert\",\"topN\":3}}")
                  != NULL, "%s", OUT(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_key_values_apply_over_params_json)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve",
                                  "{\"k\":1,\"mode\":\"dense\",\"rerank\":"
                                  "{\"method\":\"colbert\"}}", "k=3",
                                  "rerank.topN=9", "--", SELF, "fake-server",
                                  "echo"), NULL, ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"params\":{\"k\":3,\"mode\":\"dense\","
                         "\"rerank\":{\"method\":\"colbert\",\"topN\":9}}")
                  != NULL, "%s", OUT(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_bad_params_are_usage_errors_before_any_server_starts)
{
    static const char *const bad[][3] = {
        { "k=1", "k=2", "k is given twice" },
        { "mode=x", "mode.y=1", "mode is not an object" },
        { "{\"k\":", "k=1", "PARAMS_JSON is not JSON" },
        { "[1]", "k=1", "'[1]' is neither a JSON object nor KEY=VALUE" },
        { "a..b=1", "k=1", "'a..b' has an empty part" },
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        proc p;
        ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve", bad[i][0],
                                      bad[i][1], "--", "/nonexistent/x"),
                             NULL, ON_PIPES, NULL), 2);
        ck_assert_msg(strstr(ERR(&p), bad[i][2]) != NULL, "%s", ERR(&p));
        ck_assert_int_eq(count_lines(ERR(&p)), 2);  /* not "cannot start" */
        proc_free(&p);
    }
}
END_TEST

START_TEST(call_initialize_is_the_one_request_over_the_defaults)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "initialize",
                                  "client.name=me", "--", SELF,
                                  "fake-server", "echo"), NULL, ON_PIPES,
                         NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"inits\":1,") != NULL, "%s", OUT(&p));
    ck_assert_msg(strstr(OUT(&p), "\"params\":{\"protocolVersion\":1,"
                         "\"client\":{\"name\":\"me\",\"version\":\""
                         RCP_VERSION "\"}}") != NULL, "%s", OUT(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_no_init_sends_only_the_request)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--no-init", "ping", "--",
                                  SELF, "fake-server", "echo"), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"inits\":0,") != NULL, "%s", OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--no-init", "retrieve",
                                  "query=x", "--", bin(), "serve"), NULL,
                         ON_PIPES, NULL), 1);
    ck_assert_msg(strncmp(ERR(&p), "-32001 ", 7) == 0, "%s", ERR(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_pretty_compact_and_raw)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--pretty", "ping",
                                  "nonce=7", "--", bin(), "serve"), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), "{\n  \"nonce\": 7\n}\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--compact", "ping",
                                  "nonce=7", "--", bin(), "serve"), NULL,
                         TTY_OUT, NULL), 0);
    ck_assert_str_eq(OUT(&p), "{\"nonce\":7}\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--raw", "ping",
                                  "nonce=7", "--", bin(), "serve"), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":"
                     "{\"nonce\":7}}\n");
    proc_free(&p);
}
END_TEST

START_TEST(call_progress_shows_notifications_on_stderr)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--progress", "retrieve",
                                  "query=what is a batch", "k=2",
                                  "mode=hybrid", "rerank.method=cross-encoder",
                                  "--", bin(), "serve", "--corpus", CORPUS),
                         NULL, ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(ERR(&p), "\nprogress 0% recall\n") != NULL, "%s",
                  ERR(&p));
    ck_assert_msg(strstr(ERR(&p), "rerank\n") != NULL, "%s", ERR(&p));
    ck_assert_msg(strstr(ERR(&p), "(partial: 2 hits)") != NULL, "%s",
                  ERR(&p));
    ck_assert_msg(strncmp(OUT(&p), "{\"hits\":[", 9) == 0, "%s", OUT(&p));
    proc_free(&p);
    /* without --progress no token is sent, so no frames come */
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve", "query=batch",
                                  "k=1", "--", bin(), "serve", "--corpus",
                                  CORPUS),
                         NULL, ON_PIPES, NULL), 0);
    ck_assert_ptr_null(strstr(ERR(&p), "progress"));
    proc_free(&p);
    /* the token, and the streaming hint in initialize */
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--progress", "ping", "--",
                                  SELF, "fake-server", "echo"), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"capabilities\":{\"streaming\":{}}")
                  != NULL, "%s", OUT(&p));
    ck_assert_msg(strstr(OUT(&p), "\"params\":{\"_meta\":{\"progressToken\":"
                         "\"rcp-0\"}}") != NULL, "%s", OUT(&p));
    proc_free(&p);
}
END_TEST

/* §9 and the demo: progress is written as a person reads it, the
** shortest text of the value rounded to 4 places (0.82, never
** 0.8200000000000001). */
START_TEST(progress_values_are_written_in_their_shortest_rounded_form)
{
    proc p;
    const char *q;
    int frames = 0;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--raw", "--progress",
                                  "retrieve", "query=what happens to a batch "
                                  "that holds only notifications", "k=2",
                                  "mode=hybrid", "rerank.method=cross-encoder",
                                  "rerank.topN=20", "--", bin(), "serve",
                                  "--corpus", CORPUS), NULL, ON_PIPES, NULL),
                     0);
    for (q = ERR(&p); (q = strstr(q, "\"progress\":")) != NULL; frames++) {
        const char *dot;
        size_t digits;
        q += 11;
        dot = q + strspn(q, "0123456789");
        digits = *dot == '.' ? strspn(dot + 1, "0123456789") : 0;
        ck_assert_msg(digits <= 4, "progress written as %.24s", q);
    }
    ck_assert_int_ge(frames, 4);
    proc_free(&p);
}
END_TEST

START_TEST(call_hits_are_a_table_on_a_terminal_unless_json)
{
    static const char *const env[] = { "COLUMNS=72", "LC_ALL=C.UTF-8", NULL };
    proc p;
    const char *line;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve",
                                  "query=what is a batch", "k=2", "--", bin(),
                                  "serve", "--corpus", CORPUS), NULL, TTY_OUT,
                         env), 0);
    ck_assert_msg(strncmp(OUT(&p), "rank   score  id", 16) == 0, "%s",
                  OUT(&p));
    ck_assert_msg(strstr(OUT(&p), "\n   1  3.") && strstr(OUT(&p), "\n   2  2.")
                  && strstr(OUT(&p), "\nindexVersion: \"v"), "%s", OUT(&p));
    for (line = OUT(&p); *line; line = strchr(line, '\n') + 1) {
        size_t cols = 0;
        const char *c;
        for (c = line; *c && *c != '\n'; c++)
            cols += ((unsigned char)*c & 0xC0) != 0x80;
        ck_assert_msg(cols <= 72, "a row of %lu columns", (unsigned long)cols);
    }
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--json", "retrieve",
                                  "query=batch", "k=1", "--", bin(), "serve",
                                  "--corpus", CORPUS), NULL, TTY_OUT, env), 0);
    ck_assert_msg(strncmp(OUT(&p), "{\n  \"hits\": [\n", 14) == 0, "%s",
                  OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve", "query=batch",
                                  "k=1", "--", bin(), "serve", "--corpus",
                                  CORPUS), NULL, ON_PIPES, env), 0);
    ck_assert_msg(strncmp(OUT(&p), "{\"hits\":[{", 10) == 0
                  && count_lines(OUT(&p)) == 1, "%s", OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--table", "retrieve",
                                  "query=batch", "k=1", "--", bin(), "serve",
                                  "--corpus", CORPUS), NULL, ON_PIPES, env),
                     0);
    ck_assert_msg(strncmp(OUT(&p), "rank ", 5) == 0, "%s", OUT(&p));
    proc_free(&p);
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static char TMP[64];

static const char *tmp_path(const char *name)
{
    static char path[2][128];
    static int k;
    if (!TMP[0]) {
        snprintf(TMP, sizeof TMP, "/tmp/rcp-test-main-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(TMP));
    }
    k ^= 1;
    snprintf(path[k], sizeof path[k], "%s/%s", TMP, name);
    return path[k];
}

static void rm_tmp(void)
{
    char cmd[128];
    if (TMP[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", TMP);
        ck_assert_int_eq(system(cmd), 0);
    }
}

START_TEST(call_batch_answers_in_file_order_correlated_by_id)
{
    const char *f = tmp_path("b.jsonl");
    proc p;
    char *l2, *l3;
    write_file(f, "{\"method\":\"ping\",\"params\":{\"nonce\":1}}\n"
                  "\n"
                  "{\"id\":\"q\",\"method\":\"info\"}\n"
                  "{\"method\":\"notifications/cancel\",\"params\":{\"id\":9}}\n"
                  "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\",\"params\":"
                  "[1]}\n");
    /* the fake server answers the batch in reverse order */
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--batch", f, "--", SELF,
                                  "fake-server", "echo"), NULL, ON_PIPES,
                         NULL), 0);
    ck_assert_int_eq(count_lines(OUT(&p)), 3);
    ck_assert_msg(strncmp(OUT(&p), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":",
                          33) == 0, "%s", OUT(&p));
    ck_assert_ptr_nonnull(strstr(OUT(&p), "\"method\":\"ping\",\"params\":"
                                 "{\"nonce\":1}"));
    l2 = strchr(OUT(&p), '\n') + 1;
    l3 = strchr(l2, '\n') + 1;
    ck_assert_msg(strncmp(l2, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",", 26) == 0,
                  "%s", l2);
    ck_assert_msg(strncmp(l3, "{\"jsonrpc\":\"2.0\",\"id\":7,", 24) == 0
                  && strstr(l3, "\"params\":[1]"), "%s", l3);
    proc_free(&p);
    /* the real server: one error among them is exit 1 */
    write_file(f, "{\"method\":\"ping\"}\n{\"method\":\"retrieve\",\"params\":"
                  "{\"k\":0}}\n");
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--batch", f, "--", bin(),
                                  "serve"), NULL, ON_PIPES, NULL), 1);
    ck_assert_msg(strstr(OUT(&p), "\"id\":2,\"error\":{\"code\":-32602")
                  != NULL, "%s", OUT(&p));
    ck_assert_msg(strstr(ERR(&p), "1 of 2 requests got an error") != NULL,
                  "%s", ERR(&p));
    proc_free(&p);
    rm_tmp();
}
END_TEST

START_TEST(call_batch_bad_line_is_a_usage_error_and_nothing_is_sent)
{
    static const char *const bad[][2] = {
        { "{\"method\":\"ping\"}\n[1]\n", ":2: not a JSON object" },
        { "{\"method\":\"ping\"}\n{\"id\":1,\"method\":\"info\"}\n",
          ":2: id 1 is line 1's too" },
        { "{\"method\":\"ping\",\"extra\":1}\n", ":1: a request has only" },
        { "{\"method\":\"ping\",\"id\":null}\n", ":1: \"id\" must be" },
        { "{\"method\":\"ping\"\n", ":1: invalid JSON at column 17" },
        { "\n\n", ": no requests in it" },
    };
    const char *f = tmp_path("bad.jsonl");
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        proc p;
        write_file(f, bad[i][0]);
        ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--batch", f, "--",
                                      "/nonexistent/x"), NULL, ON_PIPES,
                             NULL), 2);
        ck_assert_msg(strstr(ERR(&p), bad[i][1]) != NULL, "%s", ERR(&p));
        proc_free(&p);
    }
    rm_tmp();
}
END_TEST

START_TEST(call_answer_with_null_id_ends_the_wait_with_exit_1)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "ping", "--", SELF,
                                  "fake-server", "null-id"), NULL, ON_PIPES,
                         NULL), 1);
    ck_assert_msg(strstr(ERR(&p), "an answer to no request in flight") != NULL,
                  "%s", ERR(&p));
    proc_free(&p);
}
END_TEST

/* What a server sends is shown to a person: an escape sequence in it
** must not reach the terminal as one. */
START_TEST(call_server_text_never_drives_the_terminal)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "ping", "--", SELF,
                                  "fake-server", "escape"), NULL, TTY_ERR,
                         NULL), 1);
    ck_assert_msg(strchr(ERR(&p), '\x1b') == NULL
                  && strchr(ERR(&p), '\a') == NULL, "%s", ERR(&p));
    ck_assert_msg(strstr(ERR(&p), "log info [1m: x [2Jy\n")
                  && strstr(ERR(&p), "-32602 bad ]0;owned [2J\n")
                  && strstr(ERR(&p), "data: {\"field\":\"\\u001b[31m\"}"),
                  "%s", ERR(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_no_answer_is_exit_3_and_says_why)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "ping", "--",
                                  "/nonexistent/server"), NULL, ON_PIPES,
                         NULL), 3);
    ck_assert_msg(strstr(ERR(&p), "cannot start the server: /nonexistent/"
                         "server: No such file") != NULL, "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "-q", "ping", "--", "sh",
                                  "-c", "echo broken >&2; exit 4"), NULL,
                         ON_PIPES, NULL), 3);
    ck_assert_msg(strstr(ERR(&p), "exited (status 4)")
                  && strstr(ERR(&p), "stderr:\nbroken\n"), "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--timeout=200",
                                  "x-rcp/sleep", "ms=20000", "--", bin(),
                                  "serve", "--debug"), NULL, ON_PIPES, NULL),
                     3);
    ck_assert_msg(strstr(ERR(&p), "no answer within 200 ms") != NULL, "%s",
                  ERR(&p));
    proc_free(&p);
}
END_TEST

/* §7.14: Ctrl-C cancels the request in flight; the server (which the
** terminal's SIGINT does not reach) answers -32006. */
START_TEST(call_ctrl_c_sends_notifications_cancel)
{
    proc p;
    proc_start(&p, ARGV("rcp", "call", "--progress", "x-rcp/sleep",
                        "ms=60000", "--", bin(), "serve", "--debug"),
               ON_PIPES, NULL);
    ck_assert_msg(proc_wait_err(&p, "progress"), "%s", p.e.data);
    kill(p.pid, SIGINT);
    proc_finish(&p);
    ck_assert_int_eq(p.status, 1);
    ck_assert_msg(strstr(ERR(&p), "\n-32006 ") != NULL, "%s", ERR(&p));
    proc_free(&p);
}
END_TEST

START_TEST(call_usage_errors_are_one_line_and_the_hint)
{
    const char *const *const cases[] = {
        ARGV("rcp", "call", "ping"),
        ARGV("rcp", "call", "--bogus", "ping", "--", "x"),
        ARGV("rcp", "call", "--timeout", "soon", "ping", "--", "x"),
        ARGV("rcp", "call", "--pretty=yes", "ping", "--", "x"),
        ARGV("rcp", "call", "ping", "--timeout"),
        ARGV("rcp", "call", "--batch", "f", "ping", "--", "x"),
        ARGV("rcp", "shell", "ping", "--", "x"),
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        proc p;
        ck_assert_int_eq(run(&p, cases[i], NULL, ON_PIPES, NULL), 2);
        ck_assert_int_eq(count_lines(ERR(&p)), 2);
        ck_assert_msg(strstr(ERR(&p), "\nTry 'rcp call --help'.\n")
                      || strstr(ERR(&p), "\nTry 'rcp shell --help'.\n"), "%s",
                      ERR(&p));
        ck_assert_str_eq(OUT(&p), "");
        proc_free(&p);
    }
}
END_TEST

/* MARK: - rcp shell ------------------------------------------------------- */

START_TEST(shell_initializes_once_and_reads_method_lines)
{
    proc p;
    const char *l;
    ck_assert_int_eq(run(&p, ARGV("rcp", "shell", "--", SELF, "fake-server",
                                  "echo"),
                         "ping\n"
                         "  retrieve {\"k\": 1}\n"
                         "# a comment\n"
                         "\n"
                         "retrieve k=2 q='a b' r=\"c \\\"d\\\"\" e=f\\ g\n"
                         "quit\n"
                         "ping\n", ON_PIPES, NULL), 0);
    ck_assert_int_eq(count_lines(OUT(&p)), 3);
    for (l = OUT(&p); *l; l = strchr(l, '\n') + 1)
        ck_assert_msg(strstr(l, "\"inits\":1,") != NULL, "%s", l);
    ck_assert_ptr_nonnull(strstr(OUT(&p), "\"method\":\"ping\",\"params\":{}"));
    ck_assert_ptr_nonnull(strstr(OUT(&p), "\"params\":{\"k\":1}"));
    ck_assert_msg(strstr(OUT(&p), "\"params\":{\"k\":2,\"q\":\"a b\",\"r\":"
                         "\"c \\\"d\\\"\",\"e\":\"f g\"}") != NULL, "%s",
                  OUT(&p));
    proc_free(&p);
}
END_TEST

START_TEST(shell_goes_on_after_errors_and_exits_1)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "shell", "--", bin(), "serve"),
                         "retrieve query=x k=0\n"
                         "ping nonce='unclosed\n"
                         "initialize\n"
                         "ping nonce=1\n", ON_PIPES, NULL), 1);
    ck_assert_str_eq(OUT(&p), "{\"nonce\":1}\n");
    ck_assert_msg(strstr(ERR(&p), "line 1: -32602 ")
                  && strstr(ERR(&p), "line 2: a ' is not closed")
                  && strstr(ERR(&p), "line 3: -32600 "), "%s", ERR(&p));
    proc_free(&p);
    /* rcp call without a METHOD is the shell */
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "--", bin(), "serve"),
                         "ping nonce=3\n", ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), "{\"nonce\":3}\n");
    proc_free(&p);
}
END_TEST

/* MARK: - rcp serve ------------------------------------------------------- */

/* --embedder: hash (the default) never learns; lsa trains once the
** corpus has 1000 documents, after the load (the identity then names the
** corpus); anything else is a usage error. */
START_TEST(serve_embedder_learns_from_the_corpus_or_hashes_when_asked)
{
    const char *f = tmp_path("big.jsonl");
    static const char *const w[] = { "wing", "flow", "heat", "shock" };
    size_t cap = 1000 * 64, n = 0, i;
    char *text = malloc(cap);
    proc p;
    ck_assert_ptr_nonnull(text);
    for (i = 0; i < 1000; i++)
        n += (size_t)snprintf(text + n, cap - n, "{\"text\":\"%s %s\"}\n",
                              w[i % 4], w[(i / 4) % 4]);
    write_file(f, text);
    free(text);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "info", "--", bin(),
                                  "serve", "--corpus", f, "--embedder",
                                  "lsa"), NULL, ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"identity\":\"rcp-lsa-v1-384-"), "%s",
                  OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "info", "--", bin(),
                                  "serve", "--corpus", f), NULL, ON_PIPES,
                         NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"identity\":\"rcp-hash-ngram-v4-384\""),
                  "%s", OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--embedder", "bert"), "",
                         ON_PIPES, NULL), 2);
    ck_assert_msg(strstr(ERR(&p), "--embedder needs lsa or hash"), "%s",
                  ERR(&p));
    proc_free(&p);
    rm_tmp();
}
END_TEST

START_TEST(serve_corpus_says_documents_seconds_and_rate_at_the_end)
{
    const char *f = tmp_path("c.jsonl");
    proc p;
    write_file(f, "{\"text\":\"one\"}\n{\"text\":\"two\"}\n{\"text\":\"three\"}"
                  "\n");
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--corpus", f), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_msg(strncmp(ERR(&p), "\rloaded c.jsonl: 3 documents (3 new or "
                          "changed) in ", 47) == 0, "%s", ERR(&p));
    ck_assert_msg(strstr(ERR(&p), " s, ") && strstr(ERR(&p), " docs/s\n"),
                  "%s", ERR(&p));
    ck_assert_ptr_null(strstr(ERR(&p), "loading"));
    proc_free(&p);
    /* on a terminal, progress first */
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--corpus", f), NULL,
                         TTY_ERR, NULL), 0);
    ck_assert_msg(strstr(ERR(&p), "\rloading c.jsonl: 1/3 documents (33%)")
                  && strstr(ERR(&p), " docs/s\n"), "%s", ERR(&p));
    proc_free(&p);
    rm_tmp();
}
END_TEST

/* issue 12: --data records the --field declarations and the embedder: a
** restart without --field serves the recorded fields (the same filter,
** so the same conformance level), a conflicting one and another embedder
** are refused with a message; rcp stats says what the store holds. */
START_TEST(serve_data_keeps_its_fields_and_refuses_another_embedder)
{
    const char *d = tmp_path("store");
    proc p;
    char before[4096];
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "info", "--", bin(), "serve",
                                  "--data", d, "--field", "kind:keyword"),
                         NULL, ON_PIPES, NULL), 0);
    ck_assert_ptr_nonnull(strstr(OUT(&p), "\"kind\":\"keyword\""));
    snprintf(before, sizeof before, "%s", OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "info", "--", bin(), "serve",
                                  "--data", d), NULL, ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), before);      /* fields and level as before */
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--data", d, "--field",
                                  "kind:int"), "", ON_PIPES, NULL), 1);
    ck_assert_msg(strstr(ERR(&p), "kind:keyword")
                  && strstr(ERR(&p), "conflicts"), "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--data", d, "--dim",
                                  "64"), "", ON_PIPES, NULL), 1);
    ck_assert_msg(strstr(ERR(&p), "embedder") && strstr(ERR(&p), "-384")
                  && strstr(ERR(&p), "-64"), "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "index/add",
                                  "{\"documents\":[{\"text\":\"x\"},"
                                  "{\"text\":\"y\"}],\"chunk\":true}", "--",
                                  bin(), "serve", "--data", d), NULL,
                         ON_PIPES, NULL), 0);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "stats", "--data", d), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "documents: 2 (0 whole, 2 chunked)\n")
                  && strstr(OUT(&p), "chunks: 2\n")
                  && strstr(OUT(&p), "index version: v2\n")
                  && strstr(OUT(&p), "log: format 3, ")
                  && strstr(OUT(&p), "fields: kind:keyword\n")
                  && strstr(OUT(&p), "embedder: rcp-hash-ngram-v4-384\n"),
                  "%s", OUT(&p));
    proc_free(&p);
    /* §8: the recorded fields are the engine's too, so what the log
    ** replays is filtered on after a restart without --field */
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "index/add",
                                  "{\"documents\":[{\"id\":\"n\",\"text\":"
                                  "\"zebra\",\"meta\":{\"kind\":\"note\"}}]}",
                                  "--", bin(), "serve", "--data", d), NULL,
                         ON_PIPES, NULL), 0);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve",
                                  "{\"query\":\"zebra\",\"k\":5,\"mode\":"
                                  "\"sparse\",\"filter\":{\"field\":"
                                  "\"kind\",\"op\":\"eq\",\"value\":"
                                  "\"note\"}}",
                                  "--", bin(),
                                  "serve", "--data", d), NULL, ON_PIPES,
                         NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "\"id\":\"n\""), "%s", OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "retrieve",
                                  "{\"query\":\"zebra\",\"k\":5,\"mode\":"
                                  "\"sparse\",\"filter\":{\"field\":"
                                  "\"kind\",\"op\":\"ne\",\"value\":"
                                  "\"note\"}}",
                                  "--", bin(),
                                  "serve", "--data", d), NULL, ON_PIPES,
                         NULL), 0);
    ck_assert_msg(!strstr(OUT(&p), "\"id\":\"n\""), "%s", OUT(&p));
    proc_free(&p);
    rm_tmp();
}
END_TEST

/* issue 13: --read-only takes no writes (-32003) and says so in its
** capability; --trust and --source label a --corpus source only. */
/* issue 12: --chunk loads a corpus as server-side chunks (§7.10, as
** index/add chunk:true does), and says so in its last line. */
START_TEST(serve_corpus_chunk_loads_chunks)
{
    const char *f = tmp_path("c.jsonl"), *d = tmp_path("chunked");
    char line[8192];
    size_t n, i;
    proc p;
    n = (size_t)snprintf(line, sizeof line, "{\"id\":\"long\",\"text\":\"");
    for (i = 0; i < 300; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "word%lu ",
                              (unsigned long)i);
    snprintf(line + n, sizeof line - n, "\"}\n{\"id\":\"short\",\"text\":"
             "\"one two\"}\n");
    write_file(f, line);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--data", d, "--corpus", f,
                                  "--chunk"), "", ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(ERR(&p), "2 documents, as 4 chunks"), "%s",
                  ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "stats", "--data", d), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "documents: 2 (0 whole, 2 chunked)\n")
                  && strstr(OUT(&p), "chunks: 4\n"), "%s", OUT(&p));
    proc_free(&p);
    /* loaded again without --chunk: whole documents, the chunks gone */
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--data", d, "--corpus",
                                  f), "", ON_PIPES, NULL), 0);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "stats", "--data", d), NULL,
                         ON_PIPES, NULL), 0);
    ck_assert_msg(strstr(OUT(&p), "documents: 2 (2 whole, 0 chunked)\n")
                  && strstr(OUT(&p), "chunks: 0\n"), "%s", OUT(&p));
    proc_free(&p);
    rm_tmp();
}
END_TEST

START_TEST(serve_read_only_and_the_trust_options)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "info", "--", bin(), "serve",
                                  "--read-only"), NULL, ON_PIPES, NULL), 0);
    ck_assert_ptr_nonnull(strstr(OUT(&p), "\"index\":{\"writable\":false}"));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "call", "index/delete",
                                  "{\"ids\":[\"a\"]}", "--", bin(), "serve",
                                  "--read-only"), NULL, ON_PIPES, NULL), 1);
    ck_assert_msg(strstr(ERR(&p), "-32003") && strstr(ERR(&p), "read-only"),
                  "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--trust", "trusted"), "",
                         ON_PIPES, NULL), 2);
    ck_assert_msg(strstr(ERR(&p), "--corpus"), "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--write-trust", "high"),
                         "", ON_PIPES, NULL), 2);
    proc_free(&p);
}
END_TEST

START_TEST(options_take_equals_values_and_say_what_is_wrong)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--max-line=100",
                                  "--field=year:int", "--dim=8"), NULL,
                         ON_PIPES, NULL), 0);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--field", "year:int",
                                  "--field", "year:date"), NULL, ON_PIPES,
                         NULL), 1);
    ck_assert_str_eq(ERR(&p), "rcp serve: field 'year' is declared twice\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--debug=1"), NULL,
                         ON_PIPES, NULL), 2);
    ck_assert_str_eq(ERR(&p), "rcp serve: --debug takes no value\n"
                     "Try 'rcp serve --help'.\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--data"), NULL, ON_PIPES,
                         NULL), 2);
    ck_assert_str_eq(ERR(&p), "rcp serve: --data needs a value\n"
                     "Try 'rcp serve --help'.\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--max-line=x"), NULL,
                         ON_PIPES, NULL), 2);
    ck_assert_int_eq(count_lines(ERR(&p)), 2);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "json", "--pretty=no"), NULL,
                         ON_PIPES, NULL), 2);
    ck_assert_int_eq(count_lines(ERR(&p)), 2);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp"), NULL, ON_PIPES, NULL), 2);
    ck_assert_str_eq(ERR(&p), "rcp: a command is needed: serve, call, shell, "
                     "json or conform\nTry 'rcp --help'.\n");
    proc_free(&p);
    /* rcp conform: --opt=VALUE mapped onto its own parser */
    ck_assert_int_eq(run(&p, ARGV("rcp", "conform", "--dir=conformance",
                                  "--coverage"), NULL, ON_PIPES, NULL), 0);
    proc_free(&p);
}
END_TEST

START_TEST(every_command_has_h_and_help)
{
    static const char *const cmds[] = { "serve", "call", "shell", "json",
                                        "conform" };
    char want[64];
    size_t i;
    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        proc p;
        snprintf(want, sizeof want, "usage: rcp %s ", cmds[i]);
        ck_assert_int_eq(run(&p, ARGV("rcp", cmds[i], "-h"), NULL, ON_PIPES,
                             NULL), 0);
        ck_assert_msg(strncmp(OUT(&p), want, strlen(want)) == 0, "%s: %s",
                      cmds[i], OUT(&p));
        proc_free(&p);
        ck_assert_int_eq(run(&p, ARGV("rcp", cmds[i], "--help"), NULL,
                             ON_PIPES, NULL), 0);
        ck_assert_msg(strncmp(OUT(&p), want, strlen(want)) == 0, "%s", OUT(&p));
        proc_free(&p);
    }
}
END_TEST

START_TEST(version_names_the_vector_path_and_the_build)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "--version"), NULL, ON_PIPES, NULL),
                     0);
    ck_assert_msg(strncmp(OUT(&p), "rcp " RCP_VERSION " (RCP/1)\nvectors: ",
                          strlen("rcp " RCP_VERSION " (RCP/1)\nvectors: "))
                  == 0, "%s", OUT(&p));
    ck_assert_msg(strstr(OUT(&p), "\n  cflags:   -std=c99")
                  && strstr(OUT(&p), "\n  simd:     -DRCP_")
                  && strstr(OUT(&p), "\n  shared:   "), "%s", OUT(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "--version"), NULL, ON_PIPES,
                         ARGV("RCP_SIMD=scalar")), 0);
    ck_assert_msg(strstr(OUT(&p), "\nvectors: scalar (") != NULL, "%s",
                  OUT(&p));
    proc_free(&p);
}
END_TEST

/* MARK: - rcp json -------------------------------------------------------- */

/* The top level (moved from test_rcp.c): --help and --version exit 0; an
** unknown option or command, or a bad option value, exits 2 naming it. */
START_TEST(cli_help_version_and_usage_errors)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "--help"), "", ON_PIPES, NULL), 0);
    ck_assert_ptr_nonnull(strstr(OUT(&p), "serve"));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--help"), "", ON_PIPES,
                         NULL), 0);
    ck_assert_ptr_nonnull(strstr(OUT(&p), "--max-line"));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "--version"), "", ON_PIPES, NULL),
                     0);
    ck_assert_ptr_nonnull(strstr(OUT(&p), RCP_VERSION));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "--bogus"), "", ON_PIPES, NULL), 2);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--bogus"), "", ON_PIPES,
                         NULL), 2);
    ck_assert_ptr_nonnull(strstr(ERR(&p), "--bogus"));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "serve", "--max-line", "x"), "",
                         ON_PIPES, NULL), 2);
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "frobnicate"), "", ON_PIPES, NULL),
                     2);
    proc_free(&p);
}
END_TEST

/* rcp json (moved from test_rcp.c): compact output, or the byte of the
** error. */
START_TEST(cli_json_prints_compact_or_error_at_byte)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "json"), " { \"a\" : [ 1 , 2e0 ,"
                         "\"\\u00e9\"] } ", ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), "{\"a\":[1,2e0,\"\xc3\xa9\"]}\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "json"), "[1,]", ON_PIPES, NULL), 1);
    ck_assert_ptr_nonnull(strstr(ERR(&p), "error at byte 3: "));
    proc_free(&p);
}
END_TEST

START_TEST(json_reads_files_and_stdin)
{
    const char *a = tmp_path("a.json");
    proc p;
    write_file(a, " [1 , 2e0]\n");
    ck_assert_int_eq(run(&p, ARGV("rcp", "json", a, "-"), "{ \"b\" : null }",
                         ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), "[1,2e0]\n{\"b\":null}\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "json", "--", a), NULL, ON_PIPES,
                         NULL), 0);
    ck_assert_str_eq(OUT(&p), "[1,2e0]\n");
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "json", "/nonexistent.json"), NULL,
                         ON_PIPES, NULL), 3);
    ck_assert_str_eq(ERR(&p), "rcp json: /nonexistent.json: No such file or "
                     "directory\n");
    proc_free(&p);
    rm_tmp();
}
END_TEST

START_TEST(json_pretty_indents_by_two_spaces)
{
    proc p;
    ck_assert_int_eq(run(&p, ARGV("rcp", "json", "--pretty"),
                         "{\"a\":[1,{},[]],\"b\":{\"c\":\"\\u00e9\\n\"},\"d\""
                         ":-0}", ON_PIPES, NULL), 0);
    ck_assert_str_eq(OUT(&p), "{\n  \"a\": [\n    1,\n    {},\n    []\n  ],\n"
                     "  \"b\": {\n    \"c\": \"\xc3\xa9\\n\"\n  },\n  \"d\": "
                     "-0\n}\n");
    proc_free(&p);
}
END_TEST

START_TEST(json_error_names_file_line_column_and_byte)
{
    const char *f = tmp_path("bad.json");
    proc p;
    write_file(f, "{\n  \"\xc3\xa9\": x}");
    ck_assert_int_eq(run(&p, ARGV("rcp", "json", f), NULL, ON_PIPES, NULL), 1);
    ck_assert_msg(strncmp(ERR(&p), f, strlen(f)) == 0
                  && strncmp(ERR(&p) + strlen(f), ":2:8: error at byte 10: ",
                             24) == 0, "%s", ERR(&p));
    proc_free(&p);
    ck_assert_int_eq(run(&p, ARGV("rcp", "json"), "[1,\n2,]", ON_PIPES, NULL),
                     1);
    ck_assert_msg(strncmp(ERR(&p), "<stdin>:2:3: error at byte 6: ", 30) == 0,
                  "%s", ERR(&p));
    proc_free(&p);
    rm_tmp();
}
END_TEST

/* MARK: - suite ----------------------------------------------------------- */

static Suite *make_suite(void)
{
    Suite *s = suite_create("main");
    TCase *call = tcase_create("call");
    TCase *shell = tcase_create("shell");
    TCase *cli = tcase_create("cli");
    tcase_set_timeout(call, 120);
    tcase_set_timeout(shell, 60);
    tcase_set_timeout(cli, 60);
    tcase_add_test(call, call_prints_the_result_on_stdout_and_exits_0);
    tcase_add_test(call, call_url_talks_http);
    tcase_add_test(call, call_error_is_code_message_and_data_on_stderr_exit_1);
    tcase_add_test(call, call_initializes_once_then_sends_the_request);
    tcase_add_test(call, call_key_value_params_are_typed_as_json);
    tcase_add_test(call, call_key_values_apply_over_params_json);
    tcase_add_test(call, call_bad_params_are_usage_errors_before_any_server_starts);
    tcase_add_test(call, call_initialize_is_the_one_request_over_the_defaults);
    tcase_add_test(call, call_no_init_sends_only_the_request);
    tcase_add_test(call, call_pretty_compact_and_raw);
    tcase_add_test(call, call_progress_shows_notifications_on_stderr);
    tcase_add_test(call, progress_values_are_written_in_their_shortest_rounded_form);
    tcase_add_test(call, call_hits_are_a_table_on_a_terminal_unless_json);
    tcase_add_test(call, call_batch_answers_in_file_order_correlated_by_id);
    tcase_add_test(call, call_batch_bad_line_is_a_usage_error_and_nothing_is_sent);
    tcase_add_test(call, call_answer_with_null_id_ends_the_wait_with_exit_1);
    tcase_add_test(call, call_server_text_never_drives_the_terminal);
    tcase_add_test(call, call_no_answer_is_exit_3_and_says_why);
    tcase_add_test(call, call_ctrl_c_sends_notifications_cancel);
    tcase_add_test(call, call_usage_errors_are_one_line_and_the_hint);
    tcase_add_test(shell, shell_initializes_once_and_reads_method_lines);
    tcase_add_test(shell, shell_goes_on_after_errors_and_exits_1);
    tcase_add_test(cli, serve_corpus_says_documents_seconds_and_rate_at_the_end);
    tcase_add_test(cli,
        serve_embedder_learns_from_the_corpus_or_hashes_when_asked);
    tcase_add_test(cli,
        serve_data_keeps_its_fields_and_refuses_another_embedder);
    tcase_add_test(cli, serve_read_only_and_the_trust_options);
    tcase_add_test(cli, serve_corpus_chunk_loads_chunks);
    tcase_add_test(cli, options_take_equals_values_and_say_what_is_wrong);
    tcase_add_test(cli, every_command_has_h_and_help);
    tcase_add_test(cli, version_names_the_vector_path_and_the_build);
    tcase_add_test(cli, cli_help_version_and_usage_errors);
    tcase_add_test(cli, cli_json_prints_compact_or_error_at_byte);
    tcase_add_test(cli, json_reads_files_and_stdin);
    tcase_add_test(cli, json_pretty_indents_by_two_spaces);
    tcase_add_test(cli, json_error_names_file_line_column_and_byte);
    suite_add_tcase(s, call);
    suite_add_tcase(s, shell);
    suite_add_tcase(s, cli);
    return s;
}

/* TEST_MAIN, plus the fake server this program also is. */
int main(int argc, char **argv)
{
    SRunner *sr;
    int failed;
    if (argc > 2 && strcmp(argv[1], "fake-server") == 0)
        return fake_server(argv[2]);
    /* under emulation (make cross-check) the emulated rcp cannot exec this
    ** program's foreign binary; RCP_TEST_SELF names a wrapper that can */
    SELF = getenv("RCP_TEST_SELF") ? getenv("RCP_TEST_SELF") : argv[0];
    sr = srunner_create(make_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
