/*
** test_http.c -- http.c, the §5.2 HTTP transport, driven as a client
** drives it: the real binary (`rcp serve --http 0`, RCP_BIN) on a free
** port, and this file speaking HTTP/1.1 to it over real sockets, byte by
** byte where the framing is the point.  No timing is asserted: a limit
** below is a hang guard, and where a test tells a cancelled request from
** one that ran, the one that ran would take far longer than the guard.
*/
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define GUARD_MS 20000      /* a hang guard, never a timing assertion */

/* MARK: - The server: the real binary on a free port ------------------- */

typedef struct srv {
    pid_t pid;
    int   err;              /* its stderr, read end */
    char  log[1 << 16];     /* what it wrote there so far */
    size_t loglen;
    char  host[64];
    int   port, v6;
    char  base[64];
} srv;

static const char *bin(void)
{
    const char *b = getenv("RCP_BIN");
    return b ? b : "./rcp";
}

/* Read what the server wrote on stderr for up to ms (or until a line
** holding want, when want is not NULL). */
static int srv_read_log(srv *s, const char *want, int ms)
{
    for (;;) {
        struct pollfd pf;
        ssize_t n;
        s->log[s->loglen] = '\0';
        if (want && strstr(s->log, want))
            return 1;
        pf.fd = s->err;
        pf.events = POLLIN;
        if (poll(&pf, 1, ms) <= 0)
            return 0;
        n = read(s->err, s->log + s->loglen, sizeof s->log - 1 - s->loglen);
        if (n <= 0)
            return 0;
        s->loglen += (size_t)n;
    }
}

/* rcp serve --http 0 ARGS...: started, its URL read from the line rcp.1
** documents ("rcp: listening on http://HOST:PORT/BASE"). */
static void srv_start_v(srv *s, const char *listen, const char *const *args)
{
    const char *argv[40];
    int p[2], i = 0, k;
    char *at, *colon, *slash;
    memset(s, 0, sizeof *s);
    argv[i++] = bin();
    argv[i++] = "serve";
    argv[i++] = "--http";
    argv[i++] = listen;
    for (k = 0; args && args[k] && i < 38; k++)
        argv[i++] = args[k];
    argv[i] = NULL;
    ck_assert_int_eq(pipe(p), 0);
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(p[1], 2);
        close(p[0]);
        execv(bin(), (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    s->err = p[0];
    signal(SIGPIPE, SIG_IGN);
    ck_assert_msg(srv_read_log(s, "\n", GUARD_MS), "no listening line");
    at = strstr(s->log, "rcp: listening on http://");
    ck_assert_msg(at != NULL, "stderr: %s", s->log);
    at += strlen("rcp: listening on http://");
    if (*at == '[') {
        char *close_b = strchr(at, ']');
        s->v6 = 1;
        memcpy(s->host, at + 1, (size_t)(close_b - at - 1));
        colon = close_b + 1;
    } else {
        colon = strchr(at, ':');
        memcpy(s->host, at, (size_t)(colon - at));
    }
    s->port = atoi(colon + 1);
    slash = strchr(colon, '/');
    sscanf(slash, "%63[^\n]", s->base);
    ck_assert_int_gt(s->port, 0);
}

static void srv_start(srv *s, const char *const *args)
{
    srv_start_v(s, "0", args);
}

/* SIGTERM stops it (rcp.1); its exit status. */
static int srv_stop(srv *s)
{
    int status = 0;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, &status, 0);
    srv_read_log(s, NULL, 0);
    close(s->err);
    return status;
}

/* MARK: - The client: HTTP/1.1 by hand ---------------------------------- */

typedef struct cli {
    int    fd;
    char   buf[1 << 18];
    size_t len;
} cli;

typedef struct resp {
    int    status;
    char   head[8192];
    char   body[1 << 17];
    size_t n;
    int    closed;          /* the server closed after it */
} resp;

static void cli_open(cli *c, const srv *s)
{
    int fd;
    memset(c, 0, sizeof *c);
    if (s->v6) {
        struct sockaddr_in6 a;
        memset(&a, 0, sizeof a);
        a.sin6_family = AF_INET6;
        a.sin6_port = htons((unsigned short)s->port);
        inet_pton(AF_INET6, s->host, &a.sin6_addr);
        fd = socket(AF_INET6, SOCK_STREAM, 0);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    } else {
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((unsigned short)s->port);
        inet_pton(AF_INET, s->host, &a.sin_addr);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    }
    c->fd = fd;
}

static void cli_close(cli *c)
{
    close(c->fd);
}

static void cli_send(cli *c, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        ck_assert_int_gt((long)k, 0);
        p += k;
        n -= (size_t)k;
    }
}

static void cli_sends(cli *c, const char *p)
{
    cli_send(c, p, strlen(p));
}

/* More bytes into c->buf: 1, 0 on EOF, -1 after limit_ms of nothing. */
static int cli_fill(cli *c, int limit_ms)
{
    struct pollfd pf;
    ssize_t n;
    pf.fd = c->fd;
    pf.events = POLLIN;
    if (poll(&pf, 1, limit_ms) <= 0)
        return -1;
    n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
    if (n <= 0)
        return 0;
    c->len += (size_t)n;
    return 1;
}

/* 1 when the server closes the connection within limit_ms. */
static int cli_sees_close(cli *c, int limit_ms)
{
    int r;
    while ((r = cli_fill(c, limit_ms)) > 0)
        ;
    return r == 0;
}

static void take(cli *c, size_t k)
{
    memmove(c->buf, c->buf + k, c->len - k);
    c->len -= k;
}

/* The value of header name (lower case) in r->head, or NULL. */
static const char *hdr(const resp *r, const char *name)
{
    static char v[1024];
    const char *p = r->head;
    size_t k = strlen(name);
    while ((p = strchr(p, '\n')) != NULL) {
        p++;
        if (strncasecmp(p, name, k) == 0 && p[k] == ':') {
            const char *e = strpbrk(p, "\r\n");
            p += k + 1;
            while (*p == ' ')
                p++;
            snprintf(v, sizeof v, "%.*s", (int)(e - p), p);
            return v;
        }
    }
    return NULL;
}

/* One response: the head, then the body by Content-Length, chunks, or
** up to the close.  0, or -1 when none came within the guard. */
static int cli_read(cli *c, resp *r)
{
    char *end;
    const char *v;
    memset(r, 0, sizeof *r);
    for (;;) {
        c->buf[c->len] = '\0';
        if (c->len && (end = strstr(c->buf, "\r\n\r\n")) != NULL)
            break;
        if (cli_fill(c, GUARD_MS) <= 0)
            return -1;
    }
    snprintf(r->head, sizeof r->head, "%.*s", (int)(end - c->buf + 4),
             c->buf);
    r->status = atoi(c->buf + 9);
    take(c, (size_t)(end - c->buf) + 4);
    if (r->status == 100 || r->status == 204
        || ((v = hdr(r, "content-length")) && atoi(v) == 0))
        return 0;
    if ((v = hdr(r, "content-length")) != NULL) {
        size_t n = (size_t)atol(v);
        while (c->len < n)
            if (cli_fill(c, GUARD_MS) <= 0)
                return -1;
        memcpy(r->body, c->buf, n);
        r->body[n] = '\0';
        r->n = n;
        take(c, n);
        return 0;
    }
    if ((v = hdr(r, "transfer-encoding")) && strcmp(v, "chunked") == 0) {
        for (;;) {
            char *nl;
            size_t sz;
            c->buf[c->len] = '\0';
            while (!(nl = strstr(c->buf, "\r\n"))) {
                if (cli_fill(c, GUARD_MS) <= 0)
                    return -1;
                c->buf[c->len] = '\0';
            }
            sz = (size_t)strtoul(c->buf, NULL, 16);
            while (c->len < (size_t)(nl - c->buf) + 2 + sz + 2)
                if (cli_fill(c, GUARD_MS) <= 0)
                    return -1;
            memcpy(r->body + r->n, nl + 2, sz);
            r->n += sz;
            r->body[r->n] = '\0';
            take(c, (size_t)(nl - c->buf) + 2 + sz + 2);
            if (sz == 0)
                return 0;
        }
    }
    while (cli_fill(c, GUARD_MS) > 0)       /* up to the close */
        ;
    memcpy(r->body, c->buf, c->len);
    r->n = c->len;
    r->body[r->n] = '\0';
    r->closed = 1;
    c->len = 0;
    return 0;
}

/* POST path with body, Content-Type ctype (NULL: none) and extra header
** lines (each ending "\r\n"). */
static void cli_post_ct(cli *c, const char *path, const char *body,
                        const char *ctype, const char *extra)
{
    char head[4096];
    snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: test\r\n"
             "%s%s%sContent-Length: %lu\r\n%s\r\n", path,
             ctype ? "Content-Type: " : "", ctype ? ctype : "",
             ctype ? "\r\n" : "", (unsigned long)strlen(body),
             extra ? extra : "");
    cli_sends(c, head);
    cli_sends(c, body);
}

static void cli_post(cli *c, const char *path, const char *body,
                     const char *extra)
{
    cli_post_ct(c, path, body, "application/json", extra);
}

/* One request on a new connection and its response. */
static void call(const srv *s, const char *path, const char *body,
                 const char *extra, resp *r)
{
    static cli c;
    cli_open(&c, s);
    cli_post(&c, path, body, extra);
    ck_assert_int_eq(cli_read(&c, r), 0);
    cli_close(&c);
}

#define RPC(id, m, params) "{\"jsonrpc\":\"2.0\",\"id\":" #id \
    ",\"method\":\"" m "\",\"params\":" params "}"

static int code_in(const char *body)
{
    const char *p = strstr(body, "\"code\":");
    return p ? atoi(p + 7) : 0;
}

/* A table of requests and the answers they must get: body POSTed to path
** on a new connection is answered HTTP status, with JSON-RPC error code
** (0: no code asserted) and, when has is not NULL, a body containing it. */
typedef struct post_case {
    const char *path, *body;
    int         status, code;
    const char *has;
} post_case;

static void expect_posts(const srv *s, const post_case *t, size_t n)
{
    size_t i;
    resp r;
    for (i = 0; i < n; i++) {
        call(s, t[i].path, t[i].body, NULL, &r);
        ck_assert_msg(r.status == t[i].status, "POST %s %s: HTTP %d, not %d",
                      t[i].path, t[i].body, r.status, t[i].status);
        ck_assert_msg(!t[i].code || code_in(r.body) == t[i].code,
                      "POST %s %s: %s, not code %d", t[i].path, t[i].body,
                      r.body, t[i].code);
        ck_assert_msg(!t[i].has || strstr(r.body, t[i].has),
                      "POST %s %s: %s, without %s", t[i].path, t[i].body,
                      r.body, t[i].has);
    }
}

/* Each raw request of t, alone on a new connection, is answered HTTP
** status[i]. */
static void expect_raw(const srv *s, const char *const *t, const int *status,
                       size_t n)
{
    size_t i;
    resp r;
    cli c;
    for (i = 0; i < n; i++) {
        cli_open(&c, s);
        cli_sends(&c, t[i]);
        ck_assert_int_eq(cli_read(&c, &r), 0);
        ck_assert_msg(r.status == status[i], "%s: HTTP %d, not %d", t[i],
                      r.status, status[i]);
        cli_close(&c);
    }
}

#define NCASES(t) (sizeof (t) / sizeof *(t))

/* MARK: - Listening ------------------------------------------------------ */

START_TEST(port_0_prints_the_url_line_and_serves_on_loopback)
{
    srv s;
    resp r;
    srv_start(&s, NULL);
    ck_assert_str_eq(s.host, "127.0.0.1");
    ck_assert_str_eq(s.base, "/rcp");
    call(&s, "/rcp/ping", RPC(1, "ping", "{\"nonce\":\"n1\"}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(hdr(&r, "content-type"), "application/json");
    ck_assert_ptr_nonnull(strstr(r.body,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"nonce\":\"n1\"}}"));
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(ipv6_loopback_in_brackets)
{
    srv s;
    resp r;
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return;                 /* no IPv6 on this machine */
    }
    close(fd);
    srv_start_v(&s, "[::1]:0", NULL);
    ck_assert_int_eq(s.v6, 1);
    ck_assert_str_eq(s.host, "::1");
    call(&s, "/rcp/ping", RPC(1, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(non_loopback_without_auth_is_refused_unless_allow_remote)
{
    srv s;
    int status = 0;
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 2);
        execl(bin(), bin(), "serve", "--http", "0.0.0.0:0", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    {
        const char *args[] = { "--allow-remote", NULL };
        srv_start_v(&s, "0.0.0.0:0", args);
        ck_assert_str_eq(s.host, "0.0.0.0");
        strcpy(s.host, "127.0.0.1");
        {
            resp r;
            call(&s, "/rcp/ping", RPC(1, "ping", "{}"), NULL, &r);
            ck_assert_int_eq(r.status, 200);
        }
        ck_assert_int_eq(srv_stop(&s), 0);
    }
}
END_TEST

START_TEST(base_option_moves_the_endpoint)
{
    const char *args[] = { "--base", "/api/v1/", NULL };
    srv s;
    resp r;
    srv_start(&s, args);
    ck_assert_str_eq(s.base, "/api/v1");
    call(&s, "/api/v1/ping", RPC(1, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    call(&s, "/rcp/ping", RPC(1, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 404);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

/* MARK: - §5.2 Paths, methods and the status mapping ------------------- */

START_TEST(url_method_must_match_the_body_else_32600_with_200)
{
    static const post_case t[] = {
        { "/rcp/ping", RPC(5, "info", "{}"), 200, -32600, "\"id\":5" },
        { "/rcp", RPC(6, "ping", "{}"), 200, 0,          /* names none */
          "\"id\":6,\"result\":{}" },
    };
    srv s;
    srv_start(&s, NULL);
    expect_posts(&s, t, NCASES(t));
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(json_rpc_errors_are_200_unreadable_bodies_400)
{
    static const post_case t[] = {
        { "/rcp/no/such", RPC(1, "no/such", "{}"), 200, -32004, NULL },
        { "/rcp/catalog/list", RPC(2, "catalog/list", "{}"),
          200, -32003, NULL },                  /* stateless: -32003 */
        { "/rcp/ping", "{\"jsonrpc\":", 400, -32700, NULL },
        { "/rcp/ping", "{\"jsonrpc\":\"2.0\",\"method\":\"ping\","
          "\"id\":null}", 400, -32600, NULL },
        { "/rcp", "[]", 400, -32600, NULL },
        { "/rcp/ping", "  ", 400, 0, NULL },
        { "/rcp/", RPC(7, "", "{}"), 200, -32004, NULL }, /* method "" */
    };
    srv s;
    srv_start(&s, NULL);
    expect_posts(&s, t, NCASES(t));
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(batch_over_max_batch_is_read_so_200_with_32602)
{
    const char *args[] = { "--max-batch", "2", NULL };
    srv s;
    resp r;
    srv_start(&s, args);
    call(&s, "/rcp", "[" RPC(1, "ping", "{}") "," RPC(2, "ping", "{}") ","
         RPC(3, "ping", "{}") "]", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(code_in(r.body), -32602);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(unknown_path_404_other_verbs_405_with_allow)
{
    static const post_case t[] = {
        { "/other/ping", RPC(1, "ping", "{}"), 404, 0, NULL },
        { "/rcpx", RPC(1, "ping", "{}"), 404, 0, NULL },
    };
    srv s;
    resp r;
    cli c;
    srv_start(&s, NULL);
    expect_posts(&s, t, NCASES(t));
    cli_open(&c, &s);
    cli_sends(&c, "GET /rcp/ping HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(hdr(&r, "allow"), "POST, OPTIONS");
    cli_sends(&c, "DELETE /rcp HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 405);
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(body_over_the_limit_is_413_with_32013)
{
    const char *args[] = { "--max-line", "200", NULL };
    srv s;
    resp r;
    char big[400];
    cli c;
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 40);
    srv_start(&s, args);
    call(&s, "/rcp/ping", big, NULL, &r);
    ck_assert_int_eq(r.status, 413);
    ck_assert_int_eq(code_in(r.body), -32013);
    /* chunked: the limit is on the decoded body too */
    cli_open(&c, &s);
    cli_sends(&c, "POST /rcp/ping HTTP/1.1\r\nHost: t\r\n"
              "Transfer-Encoding: chunked\r\n\r\n12c\r\n");
    cli_send(&c, big, 300);
    cli_sends(&c, "\r\n0\r\n\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 413);
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(notification_and_all_notification_batch_get_202_no_body)
{
    srv s;
    resp r;
    srv_start(&s, NULL);
    call(&s, "/rcp/notifications/cancel", "{\"jsonrpc\":\"2.0\",\"method\":"
         "\"notifications/cancel\",\"params\":{\"id\":9}}", NULL, &r);
    ck_assert_int_eq(r.status, 202);
    ck_assert_int_eq((int)r.n, 0);
    call(&s, "/rcp", "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"},"
         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancel\","
         "\"params\":{\"id\":1}}]", NULL, &r);
    ck_assert_int_eq(r.status, 202);
    ck_assert_int_eq((int)r.n, 0);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(batch_goes_to_the_base_path_only)
{
    srv s;
    resp r;
    srv_start(&s, NULL);
    call(&s, "/rcp", "[" RPC(1, "ping", "{}") "," RPC(2, "info", "{}")
         ",{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}]", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(r.body[0], '[');
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":1"));
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":2"));
    call(&s, "/rcp/ping", "[" RPC(1, "ping", "{}") "]", NULL, &r);
    ck_assert_int_eq(r.status, 400);
    ck_assert_int_eq(code_in(r.body), -32600);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(wrong_content_type_is_415_missing_is_read_as_json)
{
    srv s;
    resp r;
    cli c;
    srv_start(&s, NULL);
    cli_open(&c, &s);
    cli_post_ct(&c, "/rcp/ping", RPC(1, "ping", "{}"),
                "application/x-www-form-urlencoded", NULL);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 415);
    ck_assert_int_eq(code_in(r.body), -32600);
    cli_post_ct(&c, "/rcp/ping", RPC(2, "ping", "{}"), NULL, NULL);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 200);
    cli_post_ct(&c, "/rcp/ping", RPC(3, "ping", "{}"),
                "Application/JSON; charset=utf-8", NULL);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 200);
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

/* MARK: - HTTP/1.1: keep-alive, pipelining, bodies, limits ------------- */

START_TEST(keep_alive_and_pipelined_requests_answer_in_order)
{
    srv s;
    resp r;
    cli c;
    int i;
    char all[4096] = "";
    srv_start(&s, NULL);
    cli_open(&c, &s);
    for (i = 1; i <= 20; i++) {
        char body[128], one[512];
        snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%d,"
                 "\"method\":\"ping\"}", i);
        snprintf(one, sizeof one, "POST /rcp/ping HTTP/1.1\r\nHost: t\r\n"
                 "Content-Length: %lu\r\n\r\n%s", (unsigned long)strlen(body),
                 body);
        if (strlen(all) + strlen(one) < sizeof all)
            strcat(all, one);
        else {
            cli_sends(&c, all);
            strcpy(all, one);
        }
    }
    cli_sends(&c, all);
    for (i = 1; i <= 20; i++) {
        char want[64];
        ck_assert_int_eq(cli_read(&c, &r), 0);
        ck_assert_int_eq(r.status, 200);
        snprintf(want, sizeof want, "\"id\":%d,", i);
        ck_assert_msg(strstr(r.body, want) != NULL, "%d: %s", i, r.body);
    }
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(chunked_body_split_across_writes)
{
    srv s;
    resp r;
    cli c;
    const char *parts[] = { "POST /rcp/ping HTTP/1.1\r\nHo", "st: t\r\nTrans",
        "fer-Encoding: chunked\r\n\r\n5;ext=1\r\n{\"jso\r\n", "2f\r\nnrpc\":"
        "\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{}}\r\n0\r\n",
        "X-Trailer: 1\r\n\r\n", NULL };
    int i;
    srv_start(&s, NULL);
    cli_open(&c, &s);
    for (i = 0; parts[i]; i++) {
        cli_sends(&c, parts[i]);
        (void)poll(NULL, 0, 20);
    }
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":2,\"result\":{}"));
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(expect_100_continue_then_the_answer)
{
    srv s;
    resp r;
    cli c;
    srv_start(&s, NULL);
    cli_open(&c, &s);
    cli_sends(&c, "POST /rcp/ping HTTP/1.1\r\nHost: t\r\nExpect: 100-continue"
              "\r\nContent-Length: 40\r\n\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 100);
    cli_sends(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 200);
    /* a request that will be refused gets its answer instead of 100 */
    cli_sends(&c, "POST /nowhere HTTP/1.1\r\nHost: t\r\nExpect: 100-continue"
              "\r\nContent-Length: 40\r\n\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 404);
    ck_assert(cli_sees_close(&c, GUARD_MS));
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(head_over_the_limit_is_431_and_malformed_heads_400)
{
    static const char *const bad[] = {
        "POST /rcp/ping HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
        "POST /rcp/ping HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
        "Transfer-Encoding: chunked\r\n\r\n",
        "POST /rcp/ping HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "
        "chunked\r\n\r\n5x\r\n{\"a\":\r\n0\r\n\r\n",
        "POST /rcp/ping HTTP/2.0\r\nHost: t\r\n\r\n",
    };
    static const int status[] = {
        400,                                /* no Host */
        400,                                /* smuggling shape */
        400,                                /* a chunk size is exact */
        505,
    };
    srv s;
    resp r;
    cli c;
    char big[20000];
    srv_start(&s, NULL);
    cli_open(&c, &s);
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cli_sends(&c, "POST /rcp/ping HTTP/1.1\r\nX-Big: ");
    cli_sends(&c, big);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 431);
    ck_assert(cli_sees_close(&c, GUARD_MS));
    cli_close(&c);
    expect_raw(&s, bad, status, NCASES(bad));
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(slowloris_head_times_out_408_while_others_are_served)
{
    const char *args[] = { "--header-timeout-ms", "300", NULL };
    srv s;
    resp r;
    cli slow;
    srv_start(&s, args);
    cli_open(&slow, &s);
    cli_sends(&slow, "POST /rcp/ping HTTP/1.1\r\nHost: t\r\n");
    call(&s, "/rcp/ping", RPC(1, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    cli_sends(&slow, "X-A: 1\r\n");         /* trickling does not help */
    ck_assert_int_eq(cli_read(&slow, &r), 0);
    ck_assert_int_eq(r.status, 408);
    ck_assert(cli_sees_close(&slow, GUARD_MS));
    cli_close(&slow);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(idle_keep_alive_connection_is_closed)
{
    const char *args[] = { "--idle-timeout-ms", "200", NULL };
    srv s;
    resp r;
    cli c;
    srv_start(&s, args);
    cli_open(&c, &s);
    cli_post(&c, "/rcp/ping", RPC(1, "ping", "{}"), NULL);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert(cli_sees_close(&c, GUARD_MS));
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(past_the_connection_cap_a_new_connection_gets_503)
{
    const char *args[] = { "--max-conns", "2", NULL };
    srv s;
    resp r;
    cli a, b, c;
    srv_start(&s, args);
    cli_open(&a, &s);
    cli_open(&b, &s);
    cli_post(&a, "/rcp/ping", RPC(1, "ping", "{}"), NULL);
    ck_assert_int_eq(cli_read(&a, &r), 0);
    cli_post(&b, "/rcp/ping", RPC(1, "ping", "{}"), NULL);
    ck_assert_int_eq(cli_read(&b, &r), 0);
    cli_open(&c, &s);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 503);
    ck_assert_ptr_nonnull(hdr(&r, "retry-after"));
    cli_close(&c);
    cli_close(&a);
    cli_close(&b);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(http_1_0_closes_after_the_answer_and_half_close_is_answered)
{
    srv s;
    resp r;
    cli c;
    srv_start(&s, NULL);
    cli_open(&c, &s);
    cli_sends(&c, "POST /rcp/ping HTTP/1.0\r\nContent-Length: 40\r\n\r\n"
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(hdr(&r, "connection"), "close");
    ck_assert(cli_sees_close(&c, GUARD_MS));
    cli_close(&c);
    cli_open(&c, &s);                       /* send, then shut our side */
    cli_post(&c, "/rcp/ping", RPC(2, "ping", "{}"), NULL);
    shutdown(c.fd, SHUT_WR);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"id\":2"));
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

/* MARK: - While a request runs ----------------------------------------- */

START_TEST(a_running_request_does_not_stall_the_others_io)
{
    const char *args[] = { "--debug", NULL };
    const char *cancel = "{\"jsonrpc\":\"2.0\",\"method\":"
        "\"notifications/cancel\",\"params\":{\"id\":1}}";
    char head[256];
    srv s;
    resp r;
    cli slow, other;
    srv_start(&s, args);
    cli_open(&slow, &s);
    cli_post(&slow, "/rcp/x-rcp/sleep", RPC(1, "x-rcp/sleep",
             "{\"ms\":600000}"), NULL);
    (void)poll(NULL, 0, 100);
    /* accepted, read and answered 100 Continue while the sleep runs */
    cli_open(&other, &s);
    snprintf(head, sizeof head, "POST /rcp/notifications/cancel HTTP/1.1\r\n"
             "Host: t\r\nExpect: 100-continue\r\nContent-Length: %lu\r\n"
             "\r\n", (unsigned long)strlen(cancel));
    cli_sends(&other, head);
    ck_assert_int_eq(cli_read(&other, &r), 0);
    ck_assert_int_eq(r.status, 100);
    /* ... and its cancel acts at once (§7.14, stateless without auth:
    ** the same peer address) */
    cli_sends(&other, cancel);
    ck_assert_int_eq(cli_read(&slow, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(code_in(r.body), -32006);
    ck_assert_int_eq(cli_read(&other, &r), 0);
    ck_assert_int_eq(r.status, 202);
    cli_close(&slow);
    cli_close(&other);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(pipelined_cancel_on_the_same_connection_acts_at_once)
{
    const char *args[] = { "--debug", NULL };
    srv s;
    resp r;
    cli c;
    srv_start(&s, args);
    cli_open(&c, &s);
    cli_post(&c, "/rcp/x-rcp/sleep", RPC(4, "x-rcp/sleep",
             "{\"ms\":600000}"), NULL);
    cli_post(&c, "/rcp/notifications/cancel", "{\"jsonrpc\":\"2.0\","
             "\"method\":\"notifications/cancel\",\"params\":{\"id\":4}}",
             NULL);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(code_in(r.body), -32006);
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 202);
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(client_disconnect_mid_request_cancels_it)
{
    const char *args[] = { "--debug", "--log-requests", NULL };
    srv s;
    resp r;
    cli c;
    srv_start(&s, args);
    cli_open(&c, &s);
    cli_post(&c, "/rcp/x-rcp/sleep", RPC(1, "x-rcp/sleep",
             "{\"ms\":600000}"), NULL);
    (void)poll(NULL, 0, 100);
    cli_close(&c);                          /* §13.1 transport death */
    call(&s, "/rcp/ping", RPC(2, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert(srv_read_log(&s, "/rcp/x-rcp/sleep 499", GUARD_MS));
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

/* MARK: - §5.2 Sessions ------------------------------------------------- */

#define INIT(id) RPC(id, "initialize", "{\"protocolVersion\":1}")
#define RETRIEVE(id) RPC(id, "retrieve", "{\"query\":\"x\",\"k\":1}")

START_TEST(stateless_requests_are_implicitly_initialized_and_idempotent)
{
    srv s;
    resp r;
    srv_start(&s, NULL);
    call(&s, "/rcp/retrieve", RETRIEVE(1), NULL,
         &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"result\":{\"hits\":"));
    call(&s, "/rcp/initialize", INIT(2), NULL, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "\"protocolVersion\":1"));
    call(&s, "/rcp/initialize", INIT(3), NULL, &r);     /* idempotent */
    ck_assert_ptr_nonnull(strstr(r.body, "\"protocolVersion\":1"));
    ck_assert_ptr_null(strstr(r.body, "\"session\":\""));    /* no token */
    call(&s, "/rcp/initialize",             /* its checks still apply */
         RPC(4, "initialize", "{\"protocolVersion\":0}"), NULL, &r);
    ck_assert_int_eq(code_in(r.body), -32002);
    call(&s, "/rcp/shutdown", RPC(5, "shutdown", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);        /* a request-scoped session */
    call(&s, "/rcp/ping", RPC(6, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

/* The session token in an initialize answer, into tok. */
static void session_of(const resp *r, char *tok)
{
    const char *p = strstr(r->body, "\"session\":\"");
    ck_assert_ptr_nonnull(p);
    sscanf(p + 11, "%64[^\"]", tok);
    ck_assert_str_eq(hdr(r, "rcp-session"), tok);
}

START_TEST(sessions_issue_a_token_and_require_it)
{
    const char *args[] = { "--sessions", "--session-idle-ms", "400", NULL };
    srv s;
    resp r;
    char tok[80], h[160];
    srv_start(&s, args);
    call(&s, "/rcp/retrieve", RETRIEVE(1), NULL,
         &r);
    ck_assert_int_eq(code_in(r.body), -32001);
    call(&s, "/rcp/ping", RPC(2, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    call(&s, "/rcp/initialize", INIT(3), NULL, &r);
    session_of(&r, tok);
    ck_assert_int_eq((int)strlen(tok), 32);
    snprintf(h, sizeof h, "RCP-Session: %s\r\n", tok);
    call(&s, "/rcp/retrieve", RETRIEVE(4), h, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "\"result\":{\"hits\":"));
    call(&s, "/rcp/initialize", INIT(5), h, &r);    /* §13: once */
    ck_assert_int_eq(code_in(r.body), -32600);
    call(&s, "/rcp/retrieve", RETRIEVE(6),
         "RCP-Session: 0123456789abcdef0123456789abcdef\r\n", &r);
    ck_assert_int_eq(r.status, 200);        /* unknown: not initialized */
    ck_assert_int_eq(code_in(r.body), -32001);
    (void)poll(NULL, 0, 700);               /* idle past its expiry */
    call(&s, "/rcp/retrieve", RETRIEVE(7), h, &r);
    ck_assert_int_eq(code_in(r.body), -32001);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(shutdown_ends_only_its_session)
{
    const char *args[] = { "--sessions", NULL };
    srv s;
    resp r;
    char a[80], b[80], ha[160], hb[160];
    srv_start(&s, args);
    call(&s, "/rcp/initialize", INIT(1), NULL, &r);
    session_of(&r, a);
    call(&s, "/rcp/initialize", INIT(1), NULL, &r);
    session_of(&r, b);
    ck_assert_str_ne(a, b);
    snprintf(ha, sizeof ha, "RCP-Session: %s\r\n", a);
    snprintf(hb, sizeof hb, "RCP-Session: %s\r\n", b);
    call(&s, "/rcp/shutdown", RPC(2, "shutdown", "{}"), ha, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "\"result\":{}"));
    call(&s, "/rcp/retrieve", RETRIEVE(3), ha, &r);
    ck_assert_int_eq(code_in(r.body), -32001);
    call(&s, "/rcp/retrieve", RETRIEVE(4), hb, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "\"result\":{\"hits\":"));
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

/* MARK: - §5.2 SSE ---------------------------------------------------- */

START_TEST(sse_progress_frames_then_exactly_one_final_frame)
{
    const char *args[] = { "--debug", NULL };
    srv s;
    resp r;
    const char *p;
    int frames = 0, finals = 0;
    srv_start(&s, args);
    call(&s, "/rcp/x-rcp/sleep", RPC(1, "x-rcp/sleep",
         "{\"ms\":300,\"_meta\":{\"progressToken\":\"t\"}}"),
         "Accept: text/event-stream\r\n", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(hdr(&r, "content-type"), "text/event-stream");
    for (p = r.body; *p; ) {            /* each: one data: line, blank */
        const char *nl = strstr(p, "\n\n");
        ck_assert_ptr_nonnull(nl);
        ck_assert_int_eq(strncmp(p, "data: {", 7), 0);
        ck_assert_ptr_eq(strchr(p, '\n'), nl);
        frames++;
        if (strstr(p, "\"id\":1,") && strstr(p, "\"id\":1,") < nl)
            finals++;
        else
            ck_assert_int_eq(finals, 0);    /* progress comes first */
        p = nl + 2;
    }
    ck_assert_int_eq(finals, 1);
    ck_assert_int_gt(frames, 1);
    ck_assert_ptr_nonnull(strstr(r.body, "notifications/progress"));
    /* without the Accept header: one buffered JSON response (MUST) */
    call(&s, "/rcp/x-rcp/sleep", RPC(2, "x-rcp/sleep",
         "{\"ms\":100,\"_meta\":{\"progressToken\":\"t\"}}"), NULL, &r);
    ck_assert_str_eq(hdr(&r, "content-type"), "application/json");
    ck_assert_ptr_null(strstr(r.body, "progress"));
    ck_assert_str_eq(r.body, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":"
                     "{\"slept\":100}}\n");
    /* a stream of a request with no progress is one final frame */
    call(&s, "/rcp/ping", RPC(3, "ping", "{}"),
         "Accept: application/json, text/event-stream\r\n", &r);
    ck_assert_str_eq(r.body, "data: {\"jsonrpc\":\"2.0\",\"id\":3,"
                     "\"result\":{}}\n\n");
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

/* MARK: - §5.2, §15.6 Auth ------------------------------------------- */

static const char *token_file(void)
{
    static char path[64];
    FILE *f;
    snprintf(path, sizeof path, "/tmp/rcp-test-tokens-%ld", (long)getpid());
    f = fopen(path, "w");
    fputs("# tokens\nreader-token read\n\nwriter-token write\nadmin-token\n",
          f);
    fclose(f);
    return path;
}

START_TEST(auth_missing_or_wrong_token_is_401_before_initialize)
{
    const char *args[] = { "--auth-token-file", token_file(), NULL };
    srv s;
    resp r;
    srv_start(&s, args);
    call(&s, "/rcp/initialize", INIT(1), NULL, &r);
    ck_assert_int_eq(r.status, 401);
    ck_assert_int_eq(strncmp(hdr(&r, "www-authenticate"), "Bearer", 6), 0);
    ck_assert_int_eq(code_in(r.body), -32012);
    call(&s, "/rcp/info", RPC(1, "info", "{}"),
         "Authorization: Bearer reader-tokeN\r\n", &r);
    ck_assert_int_eq(r.status, 401);
    ck_assert_int_eq(code_in(r.body), -32012);
    call(&s, "/rcp/graph", RPC(1, "graph", "{}"),
         "Authorization: Bearer nope\r\n", &r);
    ck_assert_int_eq(r.status, 401);        /* before gating (§15.6) */
    call(&s, "/rcp/initialize", INIT(1),
         "Authorization: Bearer reader-token\r\n", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(srv_stop(&s), 0);
    unlink(args[1]);
}
END_TEST

START_TEST(read_token_cannot_write_403_32012)
{
    const char *args[] = { "--auth-token-file", token_file(), NULL };
    const char *add = RPC(1, "index/add", "{\"documents\":[{\"id\":\"d1\","
                          "\"text\":\"hello\"}]}");
    srv s;
    resp r;
    srv_start(&s, args);
    call(&s, "/rcp/index/add", add, "Authorization: Bearer reader-token\r\n",
         &r);
    ck_assert_int_eq(r.status, 403);
    ck_assert_int_eq(code_in(r.body), -32012);
    call(&s, "/rcp", "[" RPC(2, "index/delete", "{\"ids\":[\"d1\"]}") "]",
         "Authorization: Bearer reader-token\r\n", &r);
    ck_assert_int_eq(r.status, 403);
    call(&s, "/rcp", add, "Authorization: Bearer reader-token\r\n", &r);
    ck_assert_int_eq(r.status, 403);        /* at the base as well */
    call(&s, "/rcp/retrieve", RETRIEVE(3),
         "Authorization: Bearer reader-token\r\n", &r);
    ck_assert_int_eq(r.status, 200);
    call(&s, "/rcp/index/add", add, "Authorization: Bearer writer-token\r\n",
         &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(strstr(r.body, "\"error\""));
    call(&s, "/rcp/index/add", add, "Authorization: bearer admin-token\r\n",
         &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(srv_stop(&s), 0);
    unlink(args[1]);
}
END_TEST

START_TEST(cancel_acts_only_within_the_same_credential)
{
    const char *args[] = { "--debug", "--auth-token-file", token_file(),
                           NULL };
    srv s;
    resp r;
    cli run, other;
    srv_start(&s, args);
    cli_open(&run, &s);
    cli_post(&run, "/rcp/x-rcp/sleep", RPC(7, "x-rcp/sleep", "{\"ms\":1500}"),
             "Authorization: Bearer writer-token\r\n");
    (void)poll(NULL, 0, 100);
    cli_open(&other, &s);                   /* another credential */
    cli_post(&other, "/rcp/notifications/cancel", "{\"jsonrpc\":\"2.0\","
             "\"method\":\"notifications/cancel\",\"params\":{\"id\":7}}",
             "Authorization: Bearer reader-token\r\n");
    ck_assert_int_eq(cli_read(&run, &r), 0);
    ck_assert_ptr_nonnull(strstr(r.body, "\"slept\":1500"));
    ck_assert_int_eq(cli_read(&other, &r), 0);
    ck_assert_int_eq(r.status, 202);
    cli_close(&other);
    /* the same credential's cancel does act */
    cli_post(&run, "/rcp/x-rcp/sleep", RPC(8, "x-rcp/sleep",
             "{\"ms\":600000}"), "Authorization: Bearer writer-token\r\n");
    (void)poll(NULL, 0, 100);
    cli_open(&other, &s);
    cli_post(&other, "/rcp/notifications/cancel", "{\"jsonrpc\":\"2.0\","
             "\"method\":\"notifications/cancel\",\"params\":{\"id\":8}}",
             "Authorization: Bearer writer-token\r\n");
    ck_assert_int_eq(cli_read(&run, &r), 0);
    ck_assert_int_eq(code_in(r.body), -32006);
    cli_close(&other);
    cli_close(&run);
    ck_assert_int_eq(srv_stop(&s), 0);
    unlink(args[2]);
}
END_TEST

/* MARK: - CORS, rate, log ----------------------------------------------- */

START_TEST(cors_preflight_and_headers_only_for_allowed_origins)
{
    const char *args[] = { "--cors", "https://app.example", NULL };
    srv s, plain;
    resp r;
    cli c;
    srv_start(&s, args);
    cli_open(&c, &s);
    cli_sends(&c, "OPTIONS /rcp/retrieve HTTP/1.1\r\nHost: t\r\nOrigin: "
              "https://app.example\r\nAccess-Control-Request-Method: POST\r\n"
              "Access-Control-Request-Headers: content-type\r\n\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_int_eq(r.status, 204);
    ck_assert_ptr_null(hdr(&r, "content-length"));
    ck_assert_str_eq(hdr(&r, "access-control-allow-origin"),
                     "https://app.example");
    ck_assert_ptr_nonnull(strstr(hdr(&r, "access-control-allow-methods"),
                                 "POST"));
    ck_assert_ptr_nonnull(strstr(hdr(&r, "access-control-allow-headers"),
                                 "Content-Type"));
    cli_post(&c, "/rcp/ping", RPC(1, "ping", "{}"),
             "Origin: https://app.example\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_str_eq(hdr(&r, "access-control-allow-origin"),
                     "https://app.example");
    cli_post(&c, "/rcp/ping", RPC(1, "ping", "{}"),
             "Origin: https://evil.example\r\n");
    ck_assert_int_eq(cli_read(&c, &r), 0);
    ck_assert_ptr_null(hdr(&r, "access-control-allow-origin"));
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
    srv_start(&plain, NULL);                /* no --cors: no CORS headers */
    call(&plain, "/rcp/ping", RPC(1, "ping", "{}"),
         "Origin: https://app.example\r\n", &r);
    ck_assert_ptr_null(hdr(&r, "access-control-allow-origin"));
    ck_assert_int_eq(srv_stop(&plain), 0);
}
END_TEST

START_TEST(rate_limit_is_429_retry_after_and_32011_with_retry_after_ms)
{
    const char *args[] = { "--rate", "2/s", NULL };
    srv s;
    resp r;
    cli c;
    int i, limited = 0;
    srv_start(&s, args);
    cli_open(&c, &s);
    for (i = 0; i < 6 && !limited; i++) {
        cli_post(&c, "/rcp/ping", RPC(1, "ping", "{}"), NULL);
        ck_assert_int_eq(cli_read(&c, &r), 0);
        limited = r.status == 429;
    }
    ck_assert(limited);
    ck_assert_int_ge(atoi(hdr(&r, "retry-after")), 1);
    ck_assert_int_eq(code_in(r.body), -32011);
    ck_assert_ptr_nonnull(strstr(r.body, "\"retryAfterMs\":"));
    cli_close(&c);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(access_log_has_method_status_bytes_ms_never_bodies)
{
    const char *args[] = { "--log-requests", NULL };
    srv s;
    resp r;
    srv_start(&s, args);
    call(&s, "/rcp/ping", RPC(1, "ping", "{\"nonce\":\"secret-words\"}"),
         NULL, &r);
    ck_assert(srv_read_log(&s, " ms\n", GUARD_MS));
    ck_assert_ptr_nonnull(strstr(s.log, "127.0.0.1 POST /rcp/ping 200 "));
    ck_assert_ptr_null(strstr(s.log, "secret-words"));
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

START_TEST(http_options_need_http_and_bad_values_are_usage_errors)
{
    const char *bad[][3] = {
        { "--cors", "x", NULL }, { "--http", "::1:80", NULL },
        { "--http", "1.2.3.4:99999", NULL },
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        int status = 0;
        pid_t pid = fork();
        if (pid == 0) {
            int null = open("/dev/null", O_RDWR);
            dup2(null, 2);
            execl(bin(), bin(), "serve", bad[i][0], bad[i][1], (char *)NULL);
            _exit(127);
        }
        waitpid(pid, &status, 0);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
                      "%s %s", bad[i][0], bad[i][1]);
    }
}
END_TEST

/* MARK: - Hostile bytes ------------------------------------------------ */

/* Mutated and truncated requests (a fixed seed, so a failure repeats), each
** on its own connection: whatever each gets, the server must go on
** serving -- and under ASan (make check) touch no byte it should not. */
START_TEST(mutated_requests_never_stop_the_server)
{
    static const char *seeds[] = {
        "POST /rcp/ping HTTP/1.1\r\nHost: t\r\nContent-Length: 40\r\n\r\n"
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        "POST /rcp HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
        "Expect: 100-continue\r\n\r\n9\r\n[{\"a\":1}]\r\n0\r\n\r\n",
        "OPTIONS /rcp/retrieve HTTP/1.1\r\nHost: t\r\nOrigin: o\r\n\r\n",
        "POST /rcp/x-rcp/sleep HTTP/1.1\r\nHost: t\r\nAccept: text/event-"
        "stream\r\nContent-Length: 60\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,"
        "\"method\":\"x-rcp/sleep\",\"params\":{\"ms\":1}}",
    };
    const char *args[] = { "--debug", "--max-line", "4096",
                           "--header-timeout-ms", "200", NULL };
    static const char junk[] = "\r\n:; \t0fF-\"{}[]/\x80\xff";
    uint64_t rng = 42;
    srv s;
    resp r;
    int i;
    srv_start(&s, args);
    for (i = 0; i < 300; i++) {
        char buf[1024];
        const char *seed = seeds[i % 4];
        size_t n = strlen(seed), k, edits;
        cli c;
        memcpy(buf, seed, n);
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        edits = (size_t)(rng >> 60);
        for (k = 0; k < edits; k++) {
            size_t at;
            rng = rng * 6364136223846793005u + 1442695040888963407u;
            at = (size_t)(rng >> 33) % n;
            buf[at] = junk[(rng >> 20) % (sizeof junk - 1)];
        }
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        if ((rng >> 62) == 0)
            n = (size_t)(rng >> 33) % n;            /* truncated */
        cli_open(&c, &s);
        cli_send(&c, buf, n);
        shutdown(c.fd, SHUT_WR);
        while (cli_fill(&c, GUARD_MS) > 0 && c.len < sizeof c.buf / 2)
            ;
        cli_close(&c);
    }
    call(&s, "/rcp/ping", RPC(1, "ping", "{}"), NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(srv_stop(&s), 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("http");
    TCase *l = tcase_create("listen"), *m = tcase_create("mapping"),
          *h = tcase_create("http11"), *run = tcase_create("running"),
          *ss = tcase_create("sessions"), *sse = tcase_create("sse"),
          *a = tcase_create("auth"), *d = tcase_create("deploy"),
          *x = tcase_create("hostile");
    TCase *all[] = { l, m, h, run, ss, sse, a, d, x };
    size_t i;
    for (i = 0; i < sizeof all / sizeof *all; i++) {
        tcase_set_timeout(all[i], 60);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(l, port_0_prints_the_url_line_and_serves_on_loopback);
    tcase_add_test(l, ipv6_loopback_in_brackets);
    tcase_add_test(l,
        non_loopback_without_auth_is_refused_unless_allow_remote);
    tcase_add_test(l, base_option_moves_the_endpoint);
    tcase_add_test(l, http_options_need_http_and_bad_values_are_usage_errors);
    tcase_add_test(m, url_method_must_match_the_body_else_32600_with_200);
    tcase_add_test(m, json_rpc_errors_are_200_unreadable_bodies_400);
    tcase_add_test(m, batch_over_max_batch_is_read_so_200_with_32602);
    tcase_add_test(m, unknown_path_404_other_verbs_405_with_allow);
    tcase_add_test(m, body_over_the_limit_is_413_with_32013);
    tcase_add_test(m, notification_and_all_notification_batch_get_202_no_body);
    tcase_add_test(m, batch_goes_to_the_base_path_only);
    tcase_add_test(m, wrong_content_type_is_415_missing_is_read_as_json);
    tcase_add_test(h, keep_alive_and_pipelined_requests_answer_in_order);
    tcase_add_test(h, chunked_body_split_across_writes);
    tcase_add_test(h, expect_100_continue_then_the_answer);
    tcase_add_test(h, head_over_the_limit_is_431_and_malformed_heads_400);
    tcase_add_test(h, slowloris_head_times_out_408_while_others_are_served);
    tcase_add_test(h, idle_keep_alive_connection_is_closed);
    tcase_add_test(h, past_the_connection_cap_a_new_connection_gets_503);
    tcase_add_test(h,
        http_1_0_closes_after_the_answer_and_half_close_is_answered);
    tcase_add_test(run, a_running_request_does_not_stall_the_others_io);
    tcase_add_test(run, pipelined_cancel_on_the_same_connection_acts_at_once);
    tcase_add_test(run, client_disconnect_mid_request_cancels_it);
    tcase_add_test(ss,
        stateless_requests_are_implicitly_initialized_and_idempotent);
    tcase_add_test(ss, sessions_issue_a_token_and_require_it);
    tcase_add_test(ss, shutdown_ends_only_its_session);
    tcase_add_test(sse, sse_progress_frames_then_exactly_one_final_frame);
    tcase_add_test(a, auth_missing_or_wrong_token_is_401_before_initialize);
    tcase_add_test(a, read_token_cannot_write_403_32012);
    tcase_add_test(a, cancel_acts_only_within_the_same_credential);
    tcase_add_test(d, cors_preflight_and_headers_only_for_allowed_origins);
    tcase_add_test(d,
        rate_limit_is_429_retry_after_and_32011_with_retry_after_ms);
    tcase_add_test(d, access_log_has_method_status_bytes_ms_never_bodies);
    tcase_add_test(x, mutated_requests_never_stop_the_server);
    return s;
}

TEST_MAIN(make_suite)
