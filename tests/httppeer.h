/*
** httppeer.h -- a small HTTP/1.1 server (§5.2) over the real protocol
** core, in a forked child, for test_client.c (the client and the
** oracle's --http mode) and test_main.c (rcp call --url).  It is the
** oracle's test peer, not the server: one mode is legal the way the text
** allows, the others each break one §5.2 rule, so the tests prove the
** oracle passes every reading the text allows and fails each breach.
** Plain poll(2) over non-blocking sockets, many connections, keep-alive;
** requests with Content-Length bodies only.  Static inline, like
** serverutil.h.
*/
#ifndef RCP_HTTPPEER_H
#define RCP_HTTPPEER_H

#include "../rcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum {
    /* legal: what §5.2 allows, each a reading a naive oracle might fail */
    HP_LEGAL,          /* 204 for notifications, keep-alive, SSE on ask */
    HP_NOTE_202,       /* notifications: 202 Accepted */
    HP_NOTE_200,       /* notifications: 200 with an empty body */
    HP_PARSE_400,      /* a body that is not JSON: 400, no JSON-RPC body */
    HP_CHUNKED,        /* every body chunked, in small chunks */
    HP_CLOSE,          /* Connection: close after every response */
    HP_NO_SSE,         /* never streams (it MAY not) */
    HP_SSE_COMMENTS,   /* ": ping" comments and CRLF line ends in SSE */
    HP_AUTH_403,       /* a missing token is 403 rather than 401 */
    HP_SESSIONS,       /* stateful: initialize issues _meta.session, gated
                          requests without RCP-Session are -32001 */
    /* broken: one §5.2 rule each */
    HB_ERROR_NOT_200,  /* a JSON-RPC error response comes with 400 */
    HB_NO_MISMATCH,    /* the path's method is not compared to the body's */
    HB_ANY_BASE,       /* any path is the endpoint (no 404) */
    HB_GET_200,        /* a GET is answered 200 */
    HB_SSE_TWO_FINALS, /* the final SSE frame is sent twice */
    HB_SSE_NO_BLANK,   /* SSE frames without the blank line between */
    HB_SSE_ALWAYS,     /* SSE although the client did not ask */
    HB_AUTH_AFTER_INIT,/* initialize is answered without the token */
    HB_INIT_ONCE,      /* a second initialize (any connection) is -32600 */
    HB_ONE_AT_A_TIME,  /* serves one connection until it closes */
    HB_NOTE_BODY,      /* a notification gets a JSON body */
    HB_401_BARE,       /* 401 without WWW-Authenticate */
    HB_AUTH_NO_BODY,   /* 401 without the -32012 body (§15.6) */
    HP_MODES
};

typedef struct hpeer {
    pid_t pid;
    int   port;
    char  url[64];
} hpeer;

typedef struct hp_conn {
    int     fd;
    rcp_buf in;
} hp_conn;

typedef struct hp_state {
    int          mode;
    const char  *token;          /* "Bearer TOKEN" is required, or NULL */
    rcp_server  *core;           /* initialized once, at start */
    rcp_server_opts opts;
    int          inits;
    rcp_buf      out, resp;
} hp_state;

static inline void hp_write(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
            struct pollfd pf;
            pf.fd = fd;
            pf.events = POLLOUT;
            (void)poll(&pf, 1, 1000);
            continue;
        }
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* One response: status, extra header lines, body. */
static inline void hp_respond(hp_state *h, int fd, int status,
                              const char *extra, const char *body,
                              size_t n)
{
    char head[512];
    rcp_buf *r = &h->resp;
    const char *reason = status == 200 ? "OK" : status == 202 ? "Accepted"
        : status == 204 ? "No Content" : status == 400 ? "Bad Request"
        : status == 401 ? "Unauthorized" : status == 403 ? "Forbidden"
        : status == 404 ? "Not Found" : "Method Not Allowed";
    r->len = 0;
    snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\n%s%s", status, reason,
             extra ? extra : "", h->mode == HP_CLOSE
             ? "Connection: close\r\n" : "");
    rcp_buf_puts(r, head);
    if (h->mode == HP_CHUNKED && status != 204) {
        size_t at = 0;
        rcp_buf_puts(r, "Transfer-Encoding: chunked\r\n\r\n");
        while (at < n) {
            size_t k = n - at < 7 ? n - at : 7;
            snprintf(head, sizeof head, "%lx\r\n", (unsigned long)k);
            rcp_buf_puts(r, head);
            rcp_buf_put(r, body + at, k);
            rcp_buf_puts(r, "\r\n");
            at += k;
        }
        rcp_buf_puts(r, "0\r\n\r\n");
    } else {
        if (status != 204) {
            snprintf(head, sizeof head, "Content-Length: %lu\r\n",
                     (unsigned long)n);
            rcp_buf_puts(r, head);
        }
        rcp_buf_puts(r, "\r\n");
        rcp_buf_put(r, body, n);
    }
    hp_write(fd, r->data, r->len);
}

static inline const char *hp_header(const char *head, const char *name)
{
    const char *p = head;
    size_t k = strlen(name);
    while ((p = strchr(p, '\n')) != NULL) {
        p++;
        if (strncasecmp(p, name, k) == 0 && p[k] == ':') {
            p += k + 1;
            while (*p == ' ')
                p++;
            return p;
        }
    }
    return NULL;
}

/* The core's lines for one body: the response lines (progress too when
** stream).  An initialize is answered by a core of its own, so that it is
** idempotent (§5.2: stateless), unless HB_INIT_ONCE. */
static inline void hp_dispatch(hp_state *h, const char *body, size_t n,
                               const char *method, rcp_buf *out)
{
    out->len = 0;
    if (method && strcmp(method, "initialize") == 0
        && !(h->mode == HB_INIT_ONCE && h->inits++ > 0)) {
        rcp_server *one = rcp_server_new(&h->opts);
        if (one)
            rcp_server_handle(one, body, n, out);
        rcp_server_free(one);
        rcp_buf_putc(out, '\0');        /* a C string for strstr */
        out->len--;
        if (h->mode == HP_SESSIONS && strstr(out->data ? out->data : "",
                                             "\"result\":{")) {
            /* the token goes first in result._meta (made if absent) */
            rcp_buf t;
            char *at = strstr(out->data, "\"_meta\":{");
            size_t cut = at ? (size_t)(at - out->data) + 9
                : (size_t)(strstr(out->data, "\"result\":{") - out->data)
                  + 10;
            rcp_buf_init(&t);
            rcp_buf_put(&t, out->data, cut);
            rcp_buf_puts(&t, at ? "\"session\":\"sess-42\","
                         : "\"_meta\":{\"session\":\"sess-42\"},");
            rcp_buf_put(&t, out->data + cut, out->len - cut);
            out->len = 0;
            rcp_buf_put(out, t.data, t.len);
            rcp_buf_free(&t);
        }
        return;
    }
    if (method && strcmp(method, "initialize") == 0) {
        rcp_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{"
                     "\"code\":-32600,\"message\":\"already initialized\"}}\n");
        return;
    }
    rcp_server_handle(h->core, body, n, out);
}

/* Handle one whole request; 0 to keep the connection, -1 to close it. */
static inline int hp_request(hp_state *h, int fd, const char *head,
                             const char *body, size_t n)
{
    static const char json[] = "Content-Type: application/json\r\n";
    static const char mismatch[] = "{\"code\":-32600,\"message\":"
        "\"path and body methods differ\"}";
    static const char progress[] = "{\"jsonrpc\":\"2.0\",\"method\":"
        "\"notifications/progress\"";
    char verb[16], path[256], method[256], mm[256];
    const char *auth = hp_header(head, "Authorization");
    const char *accept = hp_header(head, "Accept");
    int sse, is_init;
    size_t base = 4;                     /* "/rcp" */
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *j;
    char *nl, *p, *q;
    method[0] = mm[0] = '\0';
    if (sscanf(head, "%15s %255s", verb, path) != 2)
        return -1;
    if (strncmp(path, "/rcp", base) != 0 || (path[base] && path[base] != '/'))
        if (h->mode != HB_ANY_BASE) {
            hp_respond(h, fd, 404, NULL, "", 0);
            return 0;
        }
    if (strcmp(verb, "POST") != 0) {
        if (h->mode == HB_GET_200)
            hp_respond(h, fd, 200, json, "{}", 2);
        else
            hp_respond(h, fd, 405, "Allow: POST\r\n", "", 0);
        return 0;
    }
    if (path[base] == '/')
        snprintf(method, sizeof method, "%s", path + base + 1);
    is_init = strcmp(method, "initialize") == 0;
    if (h->token && !(h->mode == HB_AUTH_AFTER_INIT && is_init)
        && (!auth || strncmp(auth, h->token, strlen(h->token)) != 0
            || (auth[strlen(h->token)] != '\r'))) {
        static const char e[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
            "{\"code\":-32012,\"message\":\"unauthorized\"}}";
        hp_respond(h, fd, h->mode == HP_AUTH_403 ? 403 : 401,
                   h->mode == HB_401_BARE ? json
                   : "WWW-Authenticate: Bearer\r\n"
                     "Content-Type: application/json\r\n", e,
                   h->mode == HB_AUTH_NO_BODY ? 0 : strlen(e));
        return 0;
    }
    rcp_arena_init(&a, 0);
    j = rcp_json_parse(&a, body, n, 0, &err);
    if (!j && h->mode == HP_PARSE_400) {
        rcp_arena_free(&a);
        hp_respond(h, fd, 400, "Content-Type: text/plain\r\n", "bad", 3);
        return 0;
    }
    if (j && j->type == RCP_JSON_OBJECT && method[0]
        && rcp_json_get(j, "method")
        && rcp_json_get(j, "method")->type == RCP_JSON_STRING) {
        const rcp_json *m = rcp_json_get(j, "method");
        snprintf(mm, sizeof mm, "%.*s", (int)m->n, m->s);
    }
    if (method[0] && mm[0] && strcmp(mm, method) != 0
        && h->mode != HB_NO_MISMATCH) {
        rcp_buf b;
        rcp_jw w;
        rcp_buf_init(&b);
        rcp_jw_init(&w, &b);
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "jsonrpc");
        rcp_jw_cstr(&w, "2.0");
        rcp_jw_key(&w, "id");
        if (rcp_json_get(j, "id"))
            rcp_jw_value(&w, rcp_json_get(j, "id"));
        else
            rcp_jw_null(&w);
        rcp_jw_key(&w, "error");
        rcp_jw_raw(&w, mismatch, strlen(mismatch));
        rcp_jw_obj_end(&w);
        hp_respond(h, fd, 200, json, b.data, b.len);
        rcp_buf_free(&b);
        rcp_arena_free(&a);
        return 0;
    }
    if (h->mode == HP_SESSIONS && strcmp(mm, "initialize") != 0
        && strcmp(mm, "info") != 0 && strcmp(mm, "ping") != 0
        && strncmp(mm, "notifications/", 14) != 0) {
        const char *sess = hp_header(head, "RCP-Session");
        if (!sess || strncmp(sess, "sess-42\r", 8) != 0) {
            static const char e[] = "{\"jsonrpc\":\"2.0\",\"id\":null,"
                "\"error\":{\"code\":-32001,\"message\":\"no session\"}}";
            rcp_arena_free(&a);
            hp_respond(h, fd, 200, json, e, strlen(e));
            return 0;
        }
    }
    rcp_arena_free(&a);
    hp_dispatch(h, body, n, mm[0] ? mm : NULL, &h->out);
    rcp_buf_putc(&h->out, '\0');
    h->out.len--;
    if (h->out.len == 0) {               /* a notification: no body */
        if (h->mode == HB_NOTE_BODY)
            hp_respond(h, fd, 200, json, "{\"jsonrpc\":\"2.0\",\"id\":null,"
                       "\"result\":{}}", 36);
        else
            hp_respond(h, fd, h->mode == HP_NOTE_202 ? 202
                       : h->mode == HP_NOTE_200 ? 200 : 204, NULL, "", 0);
        return 0;
    }
    sse = ((accept && strstr(accept, "text/event-stream"))
           || h->mode == HB_SSE_ALWAYS) && h->mode != HP_NO_SSE
        && h->mode != HB_ERROR_NOT_200;  /* its errors must be seen */
    if (sse) {
        rcp_buf s;
        const char *eol = h->mode == HP_SSE_COMMENTS ? "\r\n" : "\n";
        const char *last = NULL;
        size_t lastlen = 0;
        rcp_buf_init(&s);
        if (h->mode == HP_SSE_COMMENTS)
            rcp_buf_puts(&s, ": ping\r\n\r\n");
        for (p = h->out.data; p < h->out.data + h->out.len; p = nl + 1) {
            nl = memchr(p, '\n', (size_t)(h->out.data + h->out.len - p));
            rcp_buf_puts(&s, "data: ");
            rcp_buf_put(&s, p, (size_t)(nl - p));
            rcp_buf_puts(&s, eol);
            if (h->mode != HB_SSE_NO_BLANK)
                rcp_buf_puts(&s, eol);
            last = p;
            lastlen = (size_t)(nl - p);
        }
        if (h->mode == HB_SSE_TWO_FINALS && last) {
            rcp_buf_puts(&s, "data: ");
            rcp_buf_put(&s, last, lastlen);
            rcp_buf_puts(&s, "\n\n");
        }
        if (h->mode == HB_SSE_NO_BLANK)
            rcp_buf_puts(&s, "\n");
        hp_respond(h, fd, 200, "Content-Type: text/event-stream\r\n",
                   s.data, s.len);
        rcp_buf_free(&s);
        return 0;
    }
    /* buffered: the response line(s) only, no progress (§5.2) */
    for (p = h->out.data, q = NULL; p < h->out.data + h->out.len;
         p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(h->out.data + h->out.len - p));
        if (strncmp(p, progress, strlen(progress)) != 0)
            q = p;
    }
    if (!q)
        q = h->out.data;
    nl = memchr(q, '\n', (size_t)(h->out.data + h->out.len - q));
    {
        int status = 200;
        if (h->mode == HB_ERROR_NOT_200 && strstr(q, "\"error\"") && q[0] == '{')
            status = 400;
        hp_respond(h, fd, status, json, q, (size_t)(nl - q));
    }
    return 0;
}

/* Whole requests in c->in: handle them.  -1 to close. */
static inline int hp_drain(hp_state *h, hp_conn *c)
{
    for (;;) {
        char *end, *cl;
        size_t hl, bl = 0, have;
        int keep;
        rcp_buf_putc(&c->in, '\0');
        c->in.len--;
        if (!c->in.data || !(end = strstr(c->in.data, "\r\n\r\n")))
            return 0;
        hl = (size_t)(end - c->in.data) + 4;
        end[2] = '\0';                   /* the head is a C string */
        if ((cl = (char *)hp_header(c->in.data, "Content-Length")) != NULL)
            bl = (size_t)strtoul(cl, NULL, 10);
        have = c->in.len - hl;
        if (have < bl) {
            end[2] = '\r';
            return 0;
        }
        keep = hp_request(h, c->fd, c->in.data, c->in.data + hl, bl);
        if (h->mode == HP_CLOSE || strstr(c->in.data, "Connection: close"))
            keep = -1;
        memmove(c->in.data, c->in.data + hl + bl, c->in.len - hl - bl);
        c->in.len -= hl + bl;
        if (keep < 0)
            return -1;
    }
}

static inline int hp_serve(int lfd, int mode, const char *token)
{
    hp_state h;
    hp_conn conns[64];
    struct pollfd p[65];
    rcp_model_opts mo;
    rcp_model *model;
    size_t n = 0, i;
    char tok[128];
    memset(&h, 0, sizeof h);
    h.mode = mode;
    if (token) {
        snprintf(tok, sizeof tok, "Bearer %s", token);
        h.token = tok;
    }
    rcp_model_opts_init(&mo);
    model = rcp_model_new(&mo, NULL, 0);
    h.opts.debug = 1;
    h.opts.model = model;
    h.core = rcp_server_new(&h.opts);
    rcp_buf_init(&h.out);
    rcp_buf_init(&h.resp);
    if (!h.core)
        return 1;
    {
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
            "\"initialize\",\"params\":{\"protocolVersion\":1,\"client\":"
            "{\"name\":\"peer\"},\"capabilities\":{}}}";
        rcp_server_handle(h.core, init, strlen(init), &h.out);
    }
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        int np = 0, rc;
        if (!(mode == HB_ONE_AT_A_TIME && n > 0) && n < 64) {
            p[np].fd = lfd;
            p[np++].events = POLLIN;
        }
        for (i = 0; i < n; i++) {
            p[np].fd = conns[i].fd;
            p[np++].events = POLLIN;
        }
        rc = poll(p, (nfds_t)np, -1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return 1;
        for (i = 0; i < n; i++) {
            struct pollfd *q = &p[np - (int)n + (int)i];
            char buf[65536];
            ssize_t r;
            if (!q->revents)
                continue;
            r = read(conns[i].fd, buf, sizeof buf);
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (r <= 0 || (rcp_buf_put(&conns[i].in, buf, (size_t)r),
                           hp_drain(&h, &conns[i])) < 0) {
                close(conns[i].fd);
                rcp_buf_free(&conns[i].in);
                conns[i].fd = -1;
            }
        }
        for (i = 0; i < n;)              /* compact */
            if (conns[i].fd < 0)
                conns[i] = conns[--n];
            else
                i++;
        if (np > (int)0 && p[0].fd == lfd && (p[0].revents & POLLIN)) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0 && n < 64) {
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
                conns[n].fd = fd;
                rcp_buf_init(&conns[n].in);
                n++;
            } else if (fd >= 0) {
                close(fd);
            }
        }
    }
}

/* Start the peer on 127.0.0.1, a free port; 0, or -1. */
static inline int hpeer_start(hpeer *hp, int mode, const char *token)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    memset(hp, 0, sizeof *hp);
    if (lfd < 0)
        return -1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0
        || listen(lfd, 64) != 0
        || getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
        close(lfd);
        return -1;
    }
    hp->port = ntohs(sa.sin_port);
    snprintf(hp->url, sizeof hp->url, "http://127.0.0.1:%d/rcp", hp->port);
    hp->pid = fork();
    if (hp->pid == 0)
        _exit(hp_serve(lfd, mode, token));
    close(lfd);
    return hp->pid > 0 ? 0 : -1;
}

static inline void hpeer_stop(hpeer *hp)
{
    if (hp->pid > 0) {
        kill(hp->pid, SIGKILL);
        while (waitpid(hp->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    hp->pid = 0;
}

#endif
