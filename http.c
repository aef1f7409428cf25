/*
** http.c -- §5.2: RCP/1 over HTTP/1.1.  POST <base>/<method> with the
** JSON-RPC object as the body, a batch POSTed to <base>; the status
** mapping; SSE for §9 progress; stateless by default, stateful sessions
** on request; bearer auth (§15.6), CORS, a per-client rate limit
** (§15.5) and an access log.  Plain POSIX sockets, one thread.
**
** NOTES ON THE DESIGN
**
** The transport knows HTTP, not RCP.  It reads a request, checks what is
** the transport's to check (the path, the verb, the credential, the rate,
** the media type, the URL's method against the body's), and hands the
** body to the protocol (rcp_server_handle) as one frame with a queue as
** its out, lending the protocol the session the request belongs to
** (proto_use_session) and its own proto_io -- the same seam the stdio
** loop lends (transport.c).  What the protocol queued is the answer: no
** line, a notification (202); the last line, the response; lines before
** it, §9 progress, which the hook's flush sends as SSE events when the
** client asked for a stream and drops otherwise (§5.2: "MUST return a
** single buffered JSON response").
**
** One poll(2) loop serves every connection (epoll(7) does the waiting on
** Linux: poll costs O(sockets) a call, which idle connections would
** charge to every request).  Requests are served one at a time, in
** arrival order per connection (pipelining keeps its order), each
** connection's turn being what it had sent when the turn began (a client
** pipelining anew on each answer cannot keep the server).  While one runs
** (a gated method calls its checkpoint), the hook's intake and wait keep
** every connection's I/O going: new connections are accepted, input is
** read and buffered, queued answers are written, 100 Continue is sent,
** slow clients time out, and each request that arrived whole is looked
** at for a notifications/cancel of the same scope (session, credential,
** or peer), which acts at once (§7.14); the running request's client
** closing its connection cancels it (§13.1).  What the other requests
** ask waits until the running one is done: a method body is not
** re-entrant, and a second thread would buy concurrency at the price of
** every invariant of rcp.c.
**
** Invariants:
**   1. Every request that arrived whole gets exactly one HTTP response, in
**      order on its connection; a connection whose framing is lost (a
**      malformed head, a body over the limit) is answered and closed.
**   2. Memory per connection is bounded: a head over max_header is 431, a
**      body over max_body 413, and nothing more is read from a connection
**      holding a whole head and body's worth (or max_out unsent bytes)
**      until it has been served.
**   3. No slot is held for free: a head must arrive within header_ms of
**      its first byte, a body within body_ms of its head, an idle
**      keep-alive connection (or one not reading its answers) goes after
**      idle_ms, and past max_conns a new connection gets 503.
**   4. A body handed to the protocol is our own copy (decoded when it was
**      chunked), so reading more input while it runs moves nothing the
**      request points into.
**   5. Auth runs before anything reads the body (§5.2 "before
**      initialize", §15.6 "before capability gating"); bodies are never
**      logged (§15.6).
**   6. A connection closed after an error is shut for writing and
**      drained for a while first (a lingering close), so its client reads
**      the answer rather than a reset.
*/
#include "rcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK      65536u
#define DEF_MAX_HEADER  16384u
#define DEF_MAX_CONNS   4096u
#define DEF_IDLE_MS     60000L
#define DEF_HEADER_MS   10000L
#define DEF_BODY_MS     30000L
#define DEF_SESSION_MS  (30L * 60 * 1000)
#define MAX_SESSIONS    1024
#define MAX_TOKENS      4096
#define MAX_TOKEN_LEN   4096
#define RATE_SLOTS      4096u
#define RATE_PROBE      8u
#define MAX_OUT         ((size_t)4 << 20)   /* unsent bytes: stop serving */
#define ACCEPT_BURST    64
#define STOP_FLUSH_MS   2000.0
#define SCOPE_LEN       96
#define TIMER_MS        10.0    /* the timers' resolution */

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0          /* (macOS) SIGPIPE is ignored anyway */
#endif

/* epoll(7) on Linux, poll(2) elsewhere -- and under tcc: on x86-64 the
** kernel's struct epoll_event is packed (12 bytes, data at offset 4),
** which glibc spells __attribute__((packed)) and tcc 0.9.27 ignores, so
** a tcc build would read every event's data pointer from the wrong
** offset (it crashed on the first connection).  The typedef below makes
** any other compiler that drops the packing fail to build instead. */
#if defined(__linux__) && !defined(RCP_HTTP_POLL) && !defined(__TINYC__)
#define RCP_HTTP_EPOLL 1
#include <sys/epoll.h>
#if defined(__x86_64__)
typedef char rcp_epoll_event_is_packed[sizeof(struct epoll_event) == 12
                                       ? 1 : -1];
#endif
#else
#define RCP_HTTP_EPOLL 0
#endif

/* MARK: - State ------------------------------------------------------- */

enum { V_POST, V_OPTIONS, V_OTHER };
enum { CT_NONE, CT_JSON, CT_OTHER };
enum { P_NEED, P_OK, P_ERR };
enum { R_NONE, R_BASE, R_METHOD };
enum { W_IN = 1, W_OUT = 2 };

typedef struct span { size_t off, len; } span;   /* bytes of a request */

/* One request read from a connection: offsets relative to its start. */
typedef struct hreq {
    int    verb;
    span   verb_s, target;
    int    minor;           /* HTTP/1.minor */
    int    keep_alive;
    int    chunked, has_clen;
    size_t clen;
    int    expect;          /* Expect: 100-continue */
    int    sse;             /* Accept names text/event-stream */
    int    ctype;
    int    has_host;
    span   auth, session, origin;
    size_t head;            /* bytes of the head once complete, else 0 */
    size_t total;           /* head and body as sent */
    int    status;          /* P_ERR: the HTTP status to answer */
    const char *why;
} hreq;

typedef struct conn {
    int     fd;
    char   *in;             /* received, the front request at in[0] */
    size_t  len, cap;
    size_t  head_seen;      /* in[0, head_seen) holds no end of head */
    size_t  ahead;          /* look-ahead: requests before it were shown */
    rcp_buf out;            /* queued for the peer */
    size_t  sent;           /* of out */
    uint64_t bytes_out;     /* ever queued (the access log's bytes) */
    double  t_active, t_request, t_head;
    int     continued;      /* 100 Continue sent for the front request */
    int     front_seen;     /* its whole head was looked at (look-ahead) */
    size_t  clean;          /* in[ahead, clean) holds no cancel to show */
    int     eof, closing, dead;
    int     fresh;          /* bytes came since the last look-ahead */
    int     ready;          /* bytes came since it was last served */
    int     held;           /* requests wait for its answers to be read */
    int     watched;        /* what the epoll set has of it (-1: gone) */
    int     lingering;      /* answered and shut for writing: what the
                               peer still sends is read and dropped */
    char    peer[INET6_ADDRSTRLEN];
} conn;

typedef struct token {
    char  *s;
    size_t n;
    int    write;           /* §15.3: may call index/add, index/delete */
} token;

typedef struct hsession {
    char   token[33];       /* 128 random bits in hex; "" = free slot */
    int    cred;            /* the credential that opened it (-1: none) */
    double last;
    proto_session ps;
} hsession;

typedef struct bucket {
    char   key[SCOPE_LEN];
    double tokens, last;
} bucket;

/* The request being served: the hook's ud (proto_io). */
typedef struct running {
    conn   *c;              /* NULL between requests */
    hreq    rq;
    int     sse;            /* answer as an event stream (§5.2) */
    int     streaming;      /* the head is out: the body is being sent */
    int     chunked;        /* ... as chunks (HTTP/1.1), else to close */
    int     line_start;     /* SSE: the next byte begins a data: line */
    int     gone;           /* the client went away: cancelled once */
    int     eof_before;     /* it had half-closed before the request ran */
    int     scanned;        /* every connection was looked ahead once */
    const rcp_json *root;   /* our parse of the body, or NULL */
    char    scope[SCOPE_LEN];
    const char *extra;      /* response header lines (RCP-Session) */
} running;

typedef struct http {
    rcp_server   *s;
    rcp_http_opts o;
    char          base[256];
    size_t        baselen;
    int           lfd, rnd_fd;
    int           streaming;    /* the server advertises streaming (§9) */
    int           stopping;
    int           ep;       /* the epoll set, or -1 */
    int           pending;  /* a connection is ready to be served */
    int           sweep_due;
    double        timers_at, serviced_at;
    conn        **conns;
    size_t        nconns;
    struct pollfd *pfd;
    rcp_buf       q;        /* the protocol's out for the running request */
    rcp_buf       body;     /* the running request's body (invariant 4) */
    rcp_buf       peekbody; /* a looked-ahead chunked body, decoded */
    rcp_buf       resp;     /* an answer the transport writes itself */
    rcp_arena     arena;    /* our parse of the running body */
    proto_io      io;
    proto_session stateless;
    running       run;
    token        *tokens;
    size_t        ntokens;
    hsession     *sessions;
    bucket       *buckets;
    char          date[40];
    time_t        date_at;
} http;

/* MARK: - Small helpers ----------------------------------------------- */

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 1 when p[0..n) equals the lower-case C string s, ignoring case. */
static int ieq(const char *p, size_t n, const char *s)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!s[i] || lower((unsigned char)p[i]) != s[i])
            return 0;
    return s[n] == '\0';
}

/* 1 when the lower-case C string s occurs in p[0..n), ignoring case. */
static int icontains(const char *p, size_t n, const char *s)
{
    size_t k = strlen(s), i;
    for (i = 0; i + k <= n; i++)
        if (ieq(p + i, k, s))
            return 1;
    return 0;
}

/* p[0..n) without leading and trailing spaces and tabs. */
static span trim(const char *base, size_t off, size_t n)
{
    span sp;
    while (n && (base[off] == ' ' || base[off] == '\t'))
        off++, n--;
    while (n && (base[off + n - 1] == ' ' || base[off + n - 1] == '\t'))
        n--;
    sp.off = off;
    sp.len = n;
    return sp;
}

static void put_num(rcp_buf *b, unsigned long v)
{
    char t[24];
    int i = 24;
    do
        t[--i] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    rcp_buf_put(b, t + i, (size_t)(24 - i));
}


/* §15.6: credentials compared in constant time -- every byte of the
** longer of the two, whatever differs first. */
static int ct_equal(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i, n = an > bn ? an : bn;
    unsigned d = an != bn;
    for (i = 0; i < n; i++)
        d |= (unsigned)((unsigned char)(i < an ? a[i] : 0)
                        ^ (unsigned char)(i < bn ? b[i] : 0));
    return d == 0;
}

static const char *reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default:  return "Error";
    }
}

/* RFC 9110 §6.6.1: an origin server with a clock sends Date; it changes
** once a second, so it is formatted once a second. */
static const char *date_now(http *h)
{
    time_t t = time(NULL);
    struct tm tm;
    if (t != h->date_at && gmtime_r(&t, &tm)) {
        strftime(h->date, sizeof h->date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        h->date_at = t;
    }
    return h->date;
}

/* MARK: - Reading a request (RFC 9112) --------------------------------- */

/* A chunked body at p[0..n): 1 complete (*used raw bytes, *size decoded,
** the data appended to out when out is not NULL), 0 incomplete, -1
** malformed, -2 over max.  Chunk extensions and trailers are read past. */
static int chunked(const char *p, size_t n, size_t max, rcp_buf *out,
                   size_t *used, size_t *size)
{
    size_t i = 0, total = 0;
    for (;;) {
        size_t sz = 0, digits = 0;
        const char *nl;
        while (i < n) {
            int c = lower((unsigned char)p[i]), v;
            if (c >= '0' && c <= '9')
                v = c - '0';
            else if (c >= 'a' && c <= 'f')
                v = c - 'a' + 10;
            else
                break;
            if (sz > (max | 0xffu) || ++digits > 16)
                return -2;
            sz = sz * 16 + (size_t)v;
            i++;
        }
        if (i == n)
            return 0;
        if (digits == 0)
            return -1;
        while (i < n && (p[i] == ' ' || p[i] == '\t'))
            i++;                /* RFC 9112 §7.1.1: BWS before ';' */
        if (i == n)
            return 0;
        if (p[i] != ';' && p[i] != '\r' && p[i] != '\n')
            return -1;          /* strict: no guessing at a size */
        if (!(nl = memchr(p + i, '\n', n - i)))
            return n - i > 1024 ? -1 : 0;      /* extension: bounded */
        if (p[i] == '\r' && nl != p + i + 1)
            return -1;
        i = (size_t)(nl - p) + 1;
        if (sz == 0)
            break;
        if (sz > max || total + sz > max)
            return -2;
        if (n - i < sz + 1)
            return 0;
        if (out)
            rcp_buf_put(out, p + i, sz);
        total += sz;
        i += sz;
        if (p[i] == '\r')
            i++;
        if (i >= n)
            return 0;
        if (p[i] != '\n')
            return -1;
        i++;
    }
    for (;;) {                  /* trailers, then an empty line */
        const char *nl = memchr(p + i, '\n', n - i);
        size_t k;
        if (!nl)
            return n - i > 8192 ? -1 : 0;
        k = (size_t)(nl - p) - i;
        i = (size_t)(nl - p) + 1;
        if (k == 0 || (k == 1 && p[i - 2] == '\r'))
            break;
    }
    *used = i;
    *size = total;
    return 1;
}

static int bad(hreq *r, int status, const char *why)
{
    r->status = status;
    r->why = why;
    return P_ERR;
}

/* One header line p[0..n) (no line end) of the request at base. */
static int header(http *h, hreq *r, const char *base, size_t off, size_t n)
{
    const char *p = base + off, *colon = memchr(p, ':', n);
    size_t k;
    span v;
    if (n && (p[0] == ' ' || p[0] == '\t'))
        return bad(r, 400, "obsolete header line folding");
    if (!colon || colon == p)
        return bad(r, 400, "a header line without a name");
    k = (size_t)(colon - p);
    if (memchr(p, ' ', k) || memchr(p, '\t', k))
        return bad(r, 400, "whitespace in a header name");
    v = trim(base, off + k + 1, n - k - 1);
    p = base + v.off;
    if (ieq(base + off, k, "content-length")) {
        size_t i, val = 0;
        if (v.len == 0)
            return bad(r, 400, "an empty Content-Length");
        for (i = 0; i < v.len; i++) {
            if (p[i] < '0' || p[i] > '9')
                return bad(r, 400, "Content-Length is not a number");
            if (val > ((size_t)-1 - 9) / 10)
                return bad(r, 413, "the body is over the size limit");
            val = val * 10 + (size_t)(p[i] - '0');
        }
        if (r->has_clen && val != r->clen)
            return bad(r, 400, "two different Content-Lengths");
        r->has_clen = 1;
        r->clen = val;
    } else if (ieq(base + off, k, "transfer-encoding")) {
        if (!ieq(p, v.len, "chunked"))
            return bad(r, 501, "a Transfer-Encoding other than chunked");
        r->chunked = 1;
    } else if (ieq(base + off, k, "connection")) {
        if (icontains(p, v.len, "close"))
            r->keep_alive = 0;
        else if (icontains(p, v.len, "keep-alive"))
            r->keep_alive = 1;
    } else if (ieq(base + off, k, "expect")) {
        if (!ieq(p, v.len, "100-continue"))
            return bad(r, 417, "an expectation other than 100-continue");
        r->expect = 1;
    } else if (ieq(base + off, k, "accept")) {
        r->sse |= icontains(p, v.len, "text/event-stream");
    } else if (ieq(base + off, k, "content-type")) {
        const char *semi = memchr(p, ';', v.len);
        span mt = trim(base, v.off, semi ? (size_t)(semi - p) : v.len);
        r->ctype = ieq(base + mt.off, mt.len, "application/json")
            ? CT_JSON : CT_OTHER;
    } else if (ieq(base + off, k, "authorization")) {
        r->auth = v;
    } else if (ieq(base + off, k, "rcp-session")) {
        r->session = v;
    } else if (ieq(base + off, k, "origin")) {
        r->origin = v;
    } else if (ieq(base + off, k, "host")) {
        r->has_host = 1;
    }
    (void)h;
    return P_OK;
}

/* The request line: METHOD SP target SP HTTP/1.x. */
static int request_line(hreq *r, const char *p, size_t n)
{
    const char *sp1 = memchr(p, ' ', n), *sp2;
    size_t i;
    if (!sp1 || sp1 == p)
        return bad(r, 400, "a malformed request line");
    sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - p));
    if (!sp2 || sp2 == sp1 + 1)
        return bad(r, 400, "a malformed request line");
    r->verb_s.off = 0;
    r->verb_s.len = (size_t)(sp1 - p);
    r->target.off = (size_t)(sp1 + 1 - p);
    r->target.len = (size_t)(sp2 - sp1 - 1);
    for (i = 0; i < r->target.len; i++)
        if ((unsigned char)p[r->target.off + i] <= ' ')
            return bad(r, 400, "a control byte in the request target");
    i = (size_t)(sp2 + 1 - p);
    if (n - i != 8 || memcmp(p + i, "HTTP/", 5) != 0 || p[i + 6] != '.'
        || p[i + 5] < '0' || p[i + 5] > '9' || p[i + 7] < '0'
        || p[i + 7] > '9')
        return bad(r, 400, "a malformed HTTP version");
    if (p[i + 5] != '1')
        return bad(r, 505, "only HTTP/1.x is served");
    r->minor = p[i + 7] - '0';
    r->keep_alive = r->minor >= 1;
    r->verb = r->verb_s.len == 4 && memcmp(p, "POST", 4) == 0 ? V_POST
        : r->verb_s.len == 7 && memcmp(p, "OPTIONS", 7) == 0 ? V_OPTIONS
        : V_OTHER;
    return P_OK;
}

/* The end of the head in p[0..n) searched from *memo: the offset after
** the empty line, or 0 (then *memo says where to resume). */
static size_t head_end(const char *p, size_t n, size_t *memo)
{
    size_t i = *memo;
    const char *nl;
    while (i < n && (nl = memchr(p + i, '\n', n - i)) != NULL) {
        size_t k = (size_t)(nl - p);
        if (k + 1 < n && p[k + 1] == '\n')
            return k + 2;
        if (k + 2 < n && p[k + 1] == '\r' && p[k + 2] == '\n')
            return k + 3;
        if (k + 2 >= n) {           /* cannot tell yet */
            *memo = k;
            return 0;
        }
        i = k + 1;
    }
    *memo = n;
    return 0;
}

/* The request at p[0..n): P_OK (whole: r->total bytes), P_NEED (r->head
** is set once the head is whole), or P_ERR (r->status). */
static int parse(http *h, const char *p, size_t n, size_t *memo, hreq *r)
{
    size_t end, i, nl_at;
    int rc;
    memset(r, 0, sizeof *r);
    if (!(end = head_end(p, n, memo)))
        return n > h->o.max_header
            ? bad(r, 431, "the request head is over the size limit")
            : P_NEED;
    if (end > h->o.max_header)
        return bad(r, 431, "the request head is over the size limit");
    nl_at = (size_t)((const char *)memchr(p, '\n', end) - p);
    if ((rc = request_line(r, p, nl_at && p[nl_at - 1] == '\r'
                           ? nl_at - 1 : nl_at)) != P_OK)
        return rc;
    for (i = nl_at + 1; i < end;) {
        const char *nl = memchr(p + i, '\n', end - i);
        size_t k = (size_t)(nl - p) - i;
        if (k && p[i + k - 1] == '\r')
            k--;
        if (k && (rc = header(h, r, p, i, k)) != P_OK)
            return rc;
        i = (size_t)(nl - p) + 1;
    }
    if (r->minor >= 1 && !r->has_host)
        return bad(r, 400, "an HTTP/1.1 request without Host");
    if (r->chunked && r->has_clen)
        return bad(r, 400, "both Content-Length and Transfer-Encoding");
    if (r->has_clen && r->clen > h->o.max_body)
        return bad(r, 413, "the body is over the size limit");
    r->head = end;
    if (r->chunked) {
        size_t used, size;
        int c = chunked(p + end, n - end, h->o.max_body, NULL, &used, &size);
        if (c == -1)
            return bad(r, 400, "a malformed chunked body");
        if (c == -2 || (c == 0 && n - end > 2 * h->o.max_body + READ_CHUNK))
            return bad(r, 413, "the body is over the size limit");
        if (c == 0)
            return P_NEED;
        r->total = end + used;
        return P_OK;
    }
    r->total = end + (r->has_clen ? r->clen : 0);
    return n >= r->total ? P_OK : P_NEED;
}

/* MARK: - Connections ------------------------------------------------- */

static size_t unsent(const conn *c)
{
    return c->out.len - c->sent;
}

static void conn_free(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    rcp_free(c->in);
    rcp_buf_free(&c->out);
    rcp_free(c);
}

/* Queued bytes out, without blocking; a peer gone is dead. */
static void watch(http *h, conn *c);

static void conn_write(http *h, conn *c)
{
    while (!c->dead && unsent(c)) {
        ssize_t k = send(c->fd, c->out.data + c->sent, unsent(c),
                         MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (k <= 0) {
            c->dead = 1;
            return;
        }
        c->sent += (size_t)k;
        c->t_active = proto_now_ms();
    }
    if (!c->dead) {
        rcp_buf_clear(&c->out);
        c->sent = 0;
        if (c->held)                /* requests held back by MAX_OUT */
            c->ready = h->pending = 1;
        c->held = 0;
        if (c->closing && !c->lingering) {
            /* a lingering close (RFC 9112 §9.6): closing with its input
            ** unread would reset the connection, and the peer could lose
            ** the answer it is still sending a body to */
            c->lingering = 1;
            c->t_active = proto_now_ms();
            if (c->eof || shutdown(c->fd, SHUT_WR) != 0)
                c->dead = 1;
        }
    }
    watch(h, c);
}

/* Everything queued out now, waiting up to body_ms for the peer (the
** last resort of the hook's raw, when memory to queue more is lacking). */
static void conn_drain(http *h, conn *c)
{
    double end = proto_now_ms() + (double)h->o.body_ms;
    while (!c->dead && unsent(c)) {
        struct pollfd p;
        conn_write(h, c);
        if (!unsent(c) || c->dead)
            break;
        if (proto_now_ms() >= end) {
            c->dead = 1;
            break;
        }
        p.fd = c->fd;
        p.events = POLLOUT;
        p.revents = 0;
        (void)poll(&p, 1, 50);
    }
}

/* Bytes to the peer, queued; when the queue cannot grow, what is queued
** and then p go out now (so nothing is lost or reordered). */
static void conn_put(http *h, conn *c, const char *p, size_t n)
{
    if (c->dead || n == 0)
        return;
    c->bytes_out += n;
    if (rcp_buf_reserve(&c->out, n) == 0) {
        rcp_buf_put(&c->out, p, n);
        return;
    }
    conn_drain(h, c);
    while (n && !c->dead) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && (errno == EINTR || errno == EAGAIN
                      || errno == EWOULDBLOCK)) {
            struct pollfd pf;
            pf.fd = c->fd;
            pf.events = POLLOUT;
            pf.revents = 0;
            if (poll(&pf, 1, (int)h->o.body_ms) <= 0)
                c->dead = 1;
            continue;
        }
        if (k <= 0) {
            c->dead = 1;
            break;
        }
        p += k;
        n -= (size_t)k;
    }
}

/* p[0..n) as one chunk of a chunked body (RFC 9112 §7.1), or as is on
** a body that ends with the connection. */
static void put_chunk(http *h, conn *c, int chunked, const char *p, size_t n)
{
    char hx[24];
    int i = 22;
    size_t v = n;
    if (!chunked) {
        conn_put(h, c, p, n);
        return;
    }
    hx[22] = '\r';
    hx[23] = '\n';
    do
        hx[--i] = "0123456789abcdef"[v & 15];
    while ((v >>= 4) != 0);
    conn_put(h, c, hx + i, (size_t)(24 - i));
    conn_put(h, c, p, n);
    conn_put(h, c, "\r\n", 2);
}

/* What arrived, up to the bound of invariant 2; EOF and errors noted. */
static void conn_read_some(http *h, conn *c)
{
    size_t limit = h->o.max_header + 2 * h->o.max_body + READ_CHUNK;
    int reads = 0;
    if (c->lingering) {
        char drop[4096];
        ssize_t k = recv(c->fd, drop, sizeof drop, 0);
        if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN
                       && errno != EWOULDBLOCK))
            c->dead = 1;
        return;
    }
    while (!c->dead && !c->eof && c->len < limit && reads++ < 4) {
        ssize_t k;
        if (c->cap - c->len < READ_CHUNK / 4) {
            size_t cap = c->cap ? c->cap * 2 : READ_CHUNK;
            char *p = rcp_realloc(c->in, cap);
            if (!p) {
                if (!c->cap)
                    c->dead = 1;
                return;         /* no memory now: read again later */
            }
            c->in = p;
            c->cap = cap;
        }
        k = recv(c->fd, c->in + c->len, c->cap - c->len, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (k < 0) {
            c->dead = 1;
            return;
        }
        if (k == 0) {
            c->eof = c->ready = h->pending = 1;
            break;
        }
        if (c->len == 0 && c->t_request == 0)
            c->t_request = proto_now_ms();
        c->len += (size_t)k;
        c->fresh = c->ready = h->pending = 1;
        c->t_active = proto_now_ms();
    }
}

static void conn_read(http *h, conn *c)
{
    conn_read_some(h, c);
    watch(h, c);
}

/* The front request is done: its bytes go (invariant 2). */
static void consume(conn *c, size_t k)
{
    memmove(c->in, c->in + k, c->len - k);
    c->len -= k;
    c->head_seen = 0;
    c->ahead = c->ahead > k ? c->ahead - k : 0;
    c->clean = c->clean > k ? c->clean - k : 0;
    c->continued = c->front_seen = 0;
    c->t_head = 0;
    c->t_request = c->len ? proto_now_ms() : 0;
}

/* RFC 9112 §2.2: empty lines before a request line are ignored. */
static void skip_empty_lines(conn *c)
{
    size_t k = 0;
    while (k < c->len && (c->in[k] == '\r' || c->in[k] == '\n'))
        k++;
    if (k)
        consume(c, k);
}

/* MARK: - Responses --------------------------------------------------- */

/* The Origin, when --cors allows it, else NULL (length in *n). */
static const char *cors_origin(const http *h, const char *rb,
                               const hreq *r, size_t *n)
{
    const char *o = rb + r->origin.off;
    size_t i;
    if (!h->o.ncors || !r->origin.len)
        return NULL;
    for (i = 0; i < h->o.ncors; i++)
        if (strcmp(h->o.cors[i], "*") == 0
            || (strlen(h->o.cors[i]) == r->origin.len
                && memcmp(h->o.cors[i], o, r->origin.len) == 0)) {
            *n = r->origin.len;
            return o;
        }
    return NULL;
}

/* The status line and the headers every response carries; clen < 0: a
** body of unknown length follows (chunked on HTTP/1.1, else up to the
** close).  A response after which the connection cannot go on (the
** client asked, HTTP/1.0 without keep-alive, a lost framing) closes. */
static void put_head(http *h, conn *c, const hreq *r, int status,
                     const char *ctype, long clen, const char *extra)
{
    rcp_buf *b = &c->out;
    size_t on, len0 = b->len;
    const char *origin = r ? cors_origin(h, c->in, r, &on) : NULL;
    if (!r || !r->keep_alive || h->stopping)
        c->closing = 1;
    if (clen < 0 && (!r || r->minor == 0))
        c->closing = 1;
    if (rcp_buf_reserve(b, 512) != 0) {
        c->dead = 1;
        return;
    }
    rcp_buf_puts(b, "HTTP/1.1 ");
    put_num(b, (unsigned long)status);
    rcp_buf_putc(b, ' ');
    rcp_buf_puts(b, reason(status));
    rcp_buf_puts(b, "\r\nDate: ");
    rcp_buf_puts(b, date_now(h));
    if (ctype) {
        rcp_buf_puts(b, "\r\nContent-Type: ");
        rcp_buf_puts(b, ctype);
    }
    if (clen >= 0 && status != 204) {   /* RFC 9110 §8.6: none on 204 */
        rcp_buf_puts(b, "\r\nContent-Length: ");
        put_num(b, (unsigned long)clen);
    } else if (!c->closing) {
        rcp_buf_puts(b, "\r\nTransfer-Encoding: chunked");
    }
    if (origin) {
        rcp_buf_puts(b, "\r\nAccess-Control-Allow-Origin: ");
        rcp_buf_put(b, origin, on);
        rcp_buf_puts(b, "\r\nVary: Origin\r\nAccess-Control-Expose-Headers:"
                     " RCP-Session, Retry-After, WWW-Authenticate");
    }
    if (c->closing)
        rcp_buf_puts(b, "\r\nConnection: close");
    rcp_buf_puts(b, "\r\n");
    if (extra)
        rcp_buf_puts(b, extra);
    rcp_buf_puts(b, "\r\n");
    c->bytes_out += b->len - len0;
    if (b->oom)
        c->dead = 1;
}

static void respond(http *h, conn *c, const hreq *r, int status,
                    const char *ctype, const char *body, size_t n,
                    const char *extra)
{
    put_head(h, c, r, status, ctype, (long)n, extra);
    conn_put(h, c, body, n);
}

/* A JSON-RPC error the transport answers itself (§12: the code's message,
** data.detail, data.retryAfterMs for -32011), for id (NULL: null). */
static void respond_rpc(http *h, conn *c, const hreq *r, int status,
                        const rcp_json *id, int code, const char *detail,
                        long retry_ms, const char *extra)
{
    rcp_jw w;
    rcp_buf_clear(&h->resp);
    rcp_jw_init(&w, &h->resp);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    if (id)
        rcp_jw_value(&w, id);
    else
        rcp_jw_null(&w);
    rcp_jw_key(&w, "error");
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "code");
    rcp_jw_int(&w, code);
    rcp_jw_key(&w, "message");
    rcp_jw_cstr(&w, rcp_code_message(code));
    rcp_jw_key(&w, "data");
    rcp_jw_obj(&w);
    if (retry_ms >= 0) {
        rcp_jw_key(&w, "retryable");
        rcp_jw_bool(&w, 1);
        rcp_jw_key(&w, "retryAfterMs");
        rcp_jw_int(&w, retry_ms);
    }
    rcp_jw_key(&w, "detail");
    rcp_jw_cstr(&w, detail);
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
    rcp_buf_putc(&h->resp, '\n');
    if (h->resp.oom) {
        static const char oom[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
            "{\"code\":-32603,\"message\":\"Internal error\"}}\n";
        respond(h, c, r, 500, "application/json", oom, sizeof oom - 1, NULL);
        return;
    }
    respond(h, c, r, status, "application/json", h->resp.data, h->resp.len,
            extra);
}

/* A request whose framing could not be read: answered, then the
** connection closes (invariant 1) -- what follows cannot be trusted. */
static void respond_broken(http *h, conn *c, hreq *r)
{
    int code = r->status == 413 ? RCP_PAYLOAD_TOO_LARGE : RCP_INVALID_REQUEST;
    char detail[160];
    snprintf(detail, sizeof detail, "%s (§5.2)", r->why);
    r->keep_alive = 0;
    respond_rpc(h, c, r->head ? r : NULL, r->status, NULL, code, detail, -1,
                NULL);
    c->closing = 1;
}

/* MARK: - §5.2 Routing, auth, rate ------------------------------------- */

/* Where the target points: R_BASE (a batch), R_METHOD (*m, *mn: the
** method named by the path, taken verbatim -- "<base>/" names the empty
** method, which the protocol answers -32004), or R_NONE (404).  A query
** string is not part of the path. */
static int route(const http *h, const char *t, size_t n, const char **m,
                 size_t *mn)
{
    const char *q = memchr(t, '?', n);
    if (q)
        n = (size_t)(q - t);
    if ((n == h->baselen && memcmp(t, h->base, n) == 0)
        || (h->baselen == 0 && n == 1))
        return R_BASE;          /* (a base of "/" is the root) */
    if (n > h->baselen && memcmp(t, h->base, h->baselen) == 0
        && t[h->baselen] == '/') {
        *m = t + h->baselen + 1;
        *mn = n - h->baselen - 1;
        return R_METHOD;
    }
    return R_NONE;
}

/* The credential presented: its index in the token file, -1 when none
** or wrong (every token is compared, in constant time). */
static int credential(const http *h, const char *rb, const hreq *r)
{
    const char *a = rb + r->auth.off;
    size_t n = r->auth.len, i;
    int found = -1;
    if (n < 7 || !ieq(a, 7, "bearer "))
        return -1;
    a += 7;
    n -= 7;
    while (n && *a == ' ')
        a++, n--;
    for (i = 0; i < h->ntokens; i++)
        if (ct_equal(a, n, h->tokens[i].s, h->tokens[i].n))
            found = (int)i;
    return found;
}

/* §15.5 per-client rate limit: a token bucket of rate per second holding
** up to one second's worth.  0 when the request may go on, else the
** milliseconds until it could. */
static long rate_wait(http *h, const char *key)
{
    uint64_t hash = 1469598103934665603u;
    size_t i, slot, oldest = 0;
    double now = proto_now_ms(), burst = h->o.rate < 1 ? 1 : h->o.rate;
    bucket *b = NULL;
    for (i = 0; key[i]; i++)
        hash = (hash ^ (unsigned char)key[i]) * 1099511628211u;
    for (i = 0; i < RATE_PROBE; i++) {
        slot = (size_t)((hash + i) % RATE_SLOTS);
        if (strcmp(h->buckets[slot].key, key) == 0) {
            b = &h->buckets[slot];
            break;
        }
        if (h->buckets[slot].last < h->buckets[oldest].last || i == 0)
            oldest = slot;
    }
    if (!b) {               /* a new client takes the stalest slot */
        b = &h->buckets[oldest];
        snprintf(b->key, sizeof b->key, "%s", key);
        b->tokens = burst;
        b->last = now;
    }
    b->tokens += (now - b->last) * h->o.rate / 1000.0;
    if (b->tokens > burst)
        b->tokens = burst;
    b->last = now;
    if (b->tokens >= 1) {
        b->tokens -= 1;
        return 0;
    }
    return (long)((1 - b->tokens) * 1000.0 / h->o.rate) + 1;
}

/* MARK: - §5.2 Sessions ------------------------------------------------ */

static hsession *session_find(http *h, const char *t, size_t n, int cred)
{
    hsession *found = NULL;
    size_t i;
    if (n != 32)
        return NULL;
    for (i = 0; i < MAX_SESSIONS; i++)
        if (h->sessions[i].token[0]
            && ct_equal(t, n, h->sessions[i].token, 32))
            found = &h->sessions[i];
    return found && found->cred == cred ? found : NULL;
}

/* Sessions unused for session_idle_ms expire. */
static void sessions_expire(http *h)
{
    double now = proto_now_ms();
    size_t i;
    if (!h->o.sessions)
        return;
    for (i = 0; i < MAX_SESSIONS; i++)
        if (h->sessions[i].token[0]
            && now - h->sessions[i].last > (double)h->o.session_idle_ms)
            h->sessions[i].token[0] = '\0';
}

/* 128 random bits as 32 hex digits; 0, or -1 when none could be read. */
static int new_token(http *h, char *out)
{
    unsigned char r[16];
    size_t i, got = 0;
    while (got < sizeof r) {
        ssize_t k = read(h->rnd_fd, r + got, sizeof r - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    for (i = 0; i < sizeof r; i++) {
        out[2 * i] = "0123456789abcdef"[r[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[r[i] & 15];
    }
    out[32] = '\0';
    return 0;
}

static hsession *session_slot(http *h)
{
    size_t i;
    sessions_expire(h);
    for (i = 0; i < MAX_SESSIONS; i++)
        if (!h->sessions[i].token[0])
            return &h->sessions[i];
    return NULL;
}

/* MARK: - The hook lent while a request runs (proto_io) -------------- */

/* §9 over SSE: each queued line p[0..n) (whole lines, or the pieces of
** one written raw) as "data: LINE" and a blank line, in one chunk. */
static void sse_put(http *h, conn *c, const char *p, size_t n)
{
    running *r = &h->run;
    size_t i = 0;
    int at = r->line_start;
    rcp_buf *b = &h->resp;
    rcp_buf_clear(b);
    while (i < n) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t j = nl ? (size_t)(nl - p) : n;
        if (at)
            rcp_buf_put(b, "data: ", 6);
        rcp_buf_put(b, p + i, j - i);
        if (nl)
            rcp_buf_put(b, "\n\n", 2);
        at = nl != NULL;
        i = nl ? j + 1 : j;
    }
    r->line_start = at;
    if (b->oom) {           /* §9 progress is advisory: dropped */
        rcp_buf_clear(b);
        return;
    }
    put_chunk(h, c, r->chunked, b->data, b->len);
    rcp_buf_clear(b);
}

/* The head of a streamed answer, once: an event stream (§5.2) or, when
** the answer had to go out raw (no memory to queue it), JSON in chunks. */
static void stream_start(http *h)
{
    running *r = &h->run;
    if (r->streaming)
        return;
    r->streaming = 1;
    r->line_start = 1;
    put_head(h, r->c, &r->rq, 200, r->sse ? "text/event-stream"
             : "application/json", -1, r->sse
             ? "Cache-Control: no-cache\r\n" : NULL);
    r->chunked = !r->c->closing;
}

/* Raw body bytes of a streamed answer: SSE data lines, or JSON chunks. */
static void stream_put(http *h, const char *p, size_t n)
{
    running *r = &h->run;
    if (!n)
        return;
    stream_start(h);
    if (r->sse)
        sse_put(h, r->c, p, n);
    else
        put_chunk(h, r->c, r->chunked, p, n);
}

/* The hook's flush (before a gated method runs, after a progress frame):
** what is queued then is progress only (rcp.c: a single answer is queued
** when its frame is done, a batch's members collect in its array).  With
** a stream, it goes out as events; without, it is dropped (§5.2 MUST: a
** single buffered JSON response). */
static void hook_flush(void *ud)
{
    http *h = ud;
    running *r = &h->run;
    if (r->c && r->sse && !r->gone && !r->c->dead && h->q.len) {
        stream_put(h, h->q.data, h->q.len);
        conn_write(h, r->c);
    }
    rcp_buf_clear(&h->q);
}

/* The hook's raw: bytes straight out after the queue (rcp.c's last
** resort when the queue cannot grow). */
static void hook_raw(void *ud, const char *p, size_t n)
{
    http *h = ud;
    running *r = &h->run;
    hook_flush(ud);
    if (r->c && !r->gone && !r->c->dead)
        stream_put(h, p, n);
}

static void service(http *h, int timeout_ms);

/* The hook's intake: a look at every socket, at most once a millisecond
** (a checkpoint may come far more often; a cancel still acts at once). */
static void hook_intake(void *ud)
{
    http *h = ud;
    if (proto_now_ms() - h->serviced_at >= 1.0)
        service(h, 0);
}

static void hook_wait(void *ud, int ms)
{
    service(ud, ms);
}

/* §13.1 transport death: the running request's client went away, so
** each of its requests is cancelled, as the notifications/cancel the
** client can no longer send would. */
static void cancel_running(http *h)
{
    running *r = &h->run;
    const rcp_json *root = r->root;
    size_t i;
    if (r->gone)
        return;
    r->gone = 1;
    if (root && root->type == RCP_JSON_ARRAY)
        for (i = 0; i < root->n; i++)
            proto_cancel(h->s, rcp_json_get(&root->kids[i], "id"));
    else if (root)
        proto_cancel(h->s, rcp_json_get(root, "id"));
}

/* MARK: - Serving one request ----------------------------------------- */

/* The scope a notifications/cancel must share with the request it
** cancels: the session (--sessions), else the credential (auth), else
** the peer's address.  "" when the request has none (a wrong token). */
static void scope_of(const http *h, const char *rb, const char *peer,
                     const hreq *r, int cred, char *out)
{
    if (h->o.sessions)
        snprintf(out, SCOPE_LEN, "s:%.*s", (int)(r->session.len < 64
                 ? r->session.len : 64), rb + r->session.off);
    else if (h->ntokens && cred >= 0)
        snprintf(out, SCOPE_LEN, "t:%d", cred);
    else if (h->ntokens)
        out[0] = '\0';
    else
        snprintf(out, SCOPE_LEN, "p:%s", peer);
}

static int is_write(const rcp_json *m)
{
    const rcp_json *name = m && m->type == RCP_JSON_OBJECT
        ? rcp_json_get(m, "method") : NULL;
    return rcp_json_streq(name, "index/add")
        || rcp_json_streq(name, "index/delete");
}

/* 1 when the body is, or a batch holding, an initialize (--sessions: it
** may need a session slot). */
static int calls_initialize(const rcp_json *root)
{
    size_t i;
    if (root && root->type == RCP_JSON_ARRAY) {
        for (i = 0; i < root->n; i++)
            if (calls_initialize(&root->kids[i]))
                return 1;
        return 0;
    }
    return root && root->type == RCP_JSON_OBJECT
        && rcp_json_streq(rcp_json_get(root, "method"), "initialize");
}

static const rcp_json *valid_id(const rcp_json *m)
{
    const rcp_json *id = m && m->type == RCP_JSON_OBJECT
        ? rcp_json_get(m, "id") : NULL;
    return id && (id->type == RCP_JSON_STRING || id->type == RCP_JSON_NUMBER)
        ? id : NULL;
}

/* §5.2 the status of an answer line: 200 for any JSON-RPC response,
** error or not, that answers a request; a lone error with id null whose
** code says no request could be read from the body is 400 (-32700 the
** JSON, -32600 the request object), 413 (-32013, over the memory cap) or
** 500 (-32603, the server's failure); any other (-32602, a batch over
** the limit) answers what was read: 200.
** rcp.c writes every error as {"jsonrpc":"2.0","id":null,"error":{"code":
** in that order (write_error), so the prefix tells. */
static int answer_status(const char *p, size_t n)
{
    static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
        "{\"code\":";
    size_t k = sizeof pre - 1, i;
    long code = 0;
    if (n < k + 6 || memcmp(p, pre, k) != 0 || p[k] != '-')
        return 200;
    for (i = k + 1; i < n && p[i] >= '0' && p[i] <= '9' && code < 100000; i++)
        code = code * 10 + (p[i] - '0');
    switch (-code) {
    case RCP_PARSE_ERROR:       return 400;
    case RCP_INVALID_REQUEST:   return 400;
    case RCP_PAYLOAD_TOO_LARGE: return 413;
    case RCP_INTERNAL_ERROR:    return 500;
    case RCP_BACKEND_UNAVAILABLE: return 503;
    case RCP_RATE_LIMITED:      return 429;
    default:                    return 200;   /* e.g. -32602, a batch over
                                              ** the limit: it was read */
    }
}

/* The transport's own look at the body (§5.2: the URL's method against
** the body's, §15.3: a write under a read-only credential): 0 to hand it
** to the protocol, else the answer was written. */
static int check_body(http *h, conn *c, const hreq *r, int route_kind,
                      const char *m, size_t mn, int cred, int *status)
{
    running *run = &h->run;
    const rcp_json *root = run->root, *id, *name;
    char detail[640];
    int read_only = cred >= 0 && !h->tokens[cred].write;
    size_t i;
    if (!root)
        return 0;               /* the protocol answers -32700 */
    if (root->type == RCP_JSON_ARRAY) {
        if (route_kind == R_METHOD) {
            snprintf(detail, sizeof detail, "a batch is POSTed to %s "
                     "itself, not to a method's path (§5.2)",
                     h->baselen ? h->base : "/");
            respond_rpc(h, c, r, *status = 400, NULL, RCP_INVALID_REQUEST,
                        detail, -1, NULL);
            return 1;
        }
        for (i = 0; read_only && i < root->n; i++)
            if (is_write(&root->kids[i])) {
                respond_rpc(h, c, r, *status = 403, NULL, RCP_UNAUTHORIZED,
                            "this credential may read, not write: the batch "
                            "calls index/add or index/delete (§15.3)", -1,
                            NULL);
                return 1;
            }
        return 0;
    }
    if (root->type != RCP_JSON_OBJECT)
        return 0;               /* the protocol answers -32600 */
    id = valid_id(root);
    name = rcp_json_get(root, "method");
    /* the base takes any JSON-RPC body; a method's path, that method */
    if (route_kind == R_METHOD && name && name->type == RCP_JSON_STRING
        && (name->n != mn || memcmp(name->s, m, mn) != 0)) {
        snprintf(detail, sizeof detail, "the URL names method '%.*s' but "
                 "the body '%.*s'; they must match (§5.2)",
                 (int)(mn > 64 ? 64 : mn), m,
                 (int)(name->n > 64 ? 64 : name->n), name->s);
        respond_rpc(h, c, r, *status = id ? 200 : 400, id,
                    RCP_INVALID_REQUEST, detail, -1, NULL);
        return 1;
    }
    if (read_only && is_write(root)) {
        respond_rpc(h, c, r, *status = 403, id, RCP_UNAUTHORIZED, "this "
                    "credential may read, not write (§15.3)", -1, NULL);
        return 1;
    }
    return 0;
}

/* §5.2 CORS preflight (and a plain OPTIONS): what may be sent here. */
static void respond_options(http *h, conn *c, const hreq *r)
{
    size_t on;
    char extra[256];
    if (cors_origin(h, c->in, r, &on))
        snprintf(extra, sizeof extra, "Allow: POST, OPTIONS\r\n"
                 "Access-Control-Allow-Methods: POST, OPTIONS\r\n"
                 "Access-Control-Allow-Headers: Authorization, Content-Type,"
                 " Accept, RCP-Session\r\nAccess-Control-Max-Age: 600\r\n");
    else
        snprintf(extra, sizeof extra, "Allow: POST, OPTIONS\r\n");
    respond(h, c, r, 204, NULL, NULL, 0, extra);
}

/* The answer the protocol queued in h->q, as the HTTP response. */
static int respond_answer(http *h, conn *c, const hreq *r)
{
    running *run = &h->run;
    int status;
    if (run->streaming) {               /* the rest of the stream */
        if (h->q.len)
            stream_put(h, h->q.data, h->q.len);
        if (run->chunked)
            conn_put(h, c, "0\r\n\r\n", 5);
        else
            c->closing = 1;
        return 200;
    }
    if (h->q.len == 0) {                /* §4.5, §11: nothing to answer */
        respond(h, c, r, 202, NULL, NULL, 0, run->extra);
        return 202;
    }
    status = answer_status(h->q.data, h->q.len);
    if (status == 200 && run->sse) {    /* §5.2: one final frame */
        stream_start(h);
        sse_put(h, c, h->q.data, h->q.len);
        if (run->chunked)
            conn_put(h, c, "0\r\n\r\n", 5);
        return 200;
    }
    respond(h, c, r, status, "application/json", h->q.data, h->q.len,
            run->extra);
    return status;
}

/* The session a request belongs to (§5.2), lent to the protocol; *fresh
** the one to keep if its initialize succeeds (--sessions). */
static proto_session *pick_session(http *h, conn *c, const hreq *r,
                                   int cred, hsession **kept,
                                   proto_session *fresh, char *tok)
{
    *kept = NULL;
    memset(fresh, 0, sizeof *fresh);
    if (!h->o.sessions) {
        memset(&h->stateless, 0, sizeof h->stateless);
        h->stateless.implicit = 1;
        return &h->stateless;
    }
    if (r->session.len
        && (*kept = session_find(h, c->in + r->session.off, r->session.len,
                                 cred)) != NULL) {
        (*kept)->last = proto_now_ms();
        return &(*kept)->ps;
    }
    /* no session, or an unknown or expired one: a new uninitialised one
    ** (§13: -32001 until initialize), kept if initialize succeeds */
    if (new_token(h, tok) == 0)
        fresh->token = tok;
    return fresh;
}

static void log_request(const http *h, const conn *c, const hreq *r,
                        int status, uint64_t bytes, double t0)
{
    if (!h->o.log_requests)
        return;
    fprintf(stderr, "rcp: %s %.*s %.*s %d %lu %.3f ms\n", c->peer,
            (int)(r->verb_s.len > 16 ? 16 : r->verb_s.len), c->in,
            (int)(r->target.len > 200 ? 200 : r->target.len),
            c->in + r->target.off, status, (unsigned long)bytes,
            proto_now_ms() - t0);
}

/* §5.2 what the transport checks before it reads the body, in order:
** the path, the verb, the credential (invariant 5), the rate, the media
** type.  The status it answered with, or 0 to go on (*cred: the
** credential's index, -1 without auth). */
static int gate(http *h, conn *c, hreq *r, int kind, int *cred)
{
    int status = 0;
    long wait;
    if (kind == R_NONE) {
        static const char msg[] = "not an RCP endpoint (§5.2)\n";
        respond(h, c, r, status = 404, "text/plain", msg, sizeof msg - 1,
                NULL);
        return status;
    }
    if (r->verb == V_OPTIONS) {         /* preflight: before auth */
        respond_options(h, c, r);
        status = 204;
        return status;
    }
    if (r->verb != V_POST) {
        static const char msg[] = "RCP requests are POSTed (§5.2)\n";
        respond(h, c, r, status = 405, "text/plain", msg, sizeof msg - 1,
                "Allow: POST, OPTIONS\r\n");
        return status;
    }
    if (h->ntokens && (*cred = credential(h, c->in, r)) < 0) {   /* inv. 5 */
        respond_rpc(h, c, r, status = 401, NULL, RCP_UNAUTHORIZED,
                    r->auth.len ? "the bearer token is not valid (§15.6)"
                    : "a bearer token is required (§15.6)", -1,
                    r->auth.len ? "WWW-Authenticate: Bearer realm=\"rcp\", "
                    "error=\"invalid_token\"\r\n"
                    : "WWW-Authenticate: Bearer realm=\"rcp\"\r\n");
        return status;
    }
    if (h->o.rate > 0) {
        char key[SCOPE_LEN];
        if (*cred >= 0)
            snprintf(key, sizeof key, "t:%d", *cred);
        else
            snprintf(key, sizeof key, "p:%s", c->peer);
        if ((wait = rate_wait(h, key)) > 0) {
            char ra[48];
            snprintf(ra, sizeof ra, "Retry-After: %ld\r\n",
                     (wait + 999) / 1000);
            respond_rpc(h, c, r, status = 429, NULL, RCP_RATE_LIMITED,
                        "over this server's request rate; retry later "
                        "(§15.5)", wait, ra);
            return status;
        }
    }
    if (r->ctype == CT_OTHER) {
        respond_rpc(h, c, r, status = 415, NULL, RCP_INVALID_REQUEST,
                    "the body must be Content-Type: application/json "
                    "(§5.2)", -1, "Accept-Post: application/json\r\n");
        return status;
    }
    return 0;
}

/* One whole request at the front of c: the transport's checks in §5.2's
** order of concern, then the protocol. */
static void serve_request(http *h, conn *c, hreq *r)
{
    running *run = &h->run;
    double t0 = proto_now_ms();
    uint64_t before = c->bytes_out;
    size_t mn = 0;
    const char *m = NULL;
    int kind = route(h, c->in + r->target.off, r->target.len, &m, &mn);
    int cred = -1, status = 0;
    char scope[SCOPE_LEN], tok[33], extra[64];
    hsession *kept;
    proto_session fresh, *ps;
    rcp_json_err err;
    if ((status = gate(h, c, r, kind, &cred)) != 0)
        goto done;
    /* the body, our own copy (invariant 4) */
    rcp_buf_clear(&h->body);
    if (r->chunked) {
        size_t used, size;
        (void)chunked(c->in + r->head, r->total - r->head, h->o.max_body,
                      &h->body, &used, &size);
    } else {
        rcp_buf_put(&h->body, c->in + r->head, r->total - r->head);
    }
    if (h->body.oom) {
        respond_rpc(h, c, r, status = 500, NULL, RCP_INTERNAL_ERROR,
                    "out of memory reading the body; it was not run", -1,
                    NULL);
        goto done;
    }
    if (transport_blank(h->body.data, h->body.len)) {
        respond_rpc(h, c, r, status = 400, NULL, RCP_PARSE_ERROR, "the body "
                    "is empty; it must be a JSON-RPC request (§5.2)", -1,
                    NULL);
        goto done;
    }
    memset(run, 0, sizeof *run);
    run->rq = *r;
    run->root = rcp_json_parse(&h->arena, h->body.data, h->body.len, 0,
                               &err);
    if (check_body(h, c, r, kind, m, mn, cred, &status))
        goto done;

    /* the protocol, in the request's session (§5.2) */
    ps = pick_session(h, c, r, cred, &kept, &fresh, tok);
    if (h->o.sessions && !kept && calls_initialize(run->root)
        && !session_slot(h)) {
        respond_rpc(h, c, r, status = 503, valid_id(run->root),
                    RCP_BACKEND_UNAVAILABLE, "every session slot is taken; "
                    "retry once one expires (§5.2)", 1000,
                    "Retry-After: 1\r\n");
        goto done;
    }
    scope_of(h, c->in, c->peer, r, cred, scope);
    if (h->o.sessions && !kept)
        snprintf(scope, sizeof scope, "s:%s", tok);
    run->c = c;
    run->eof_before = c->eof;
    run->sse = r->sse && h->streaming;
    memcpy(run->scope, scope, sizeof scope);
    rcp_buf_clear(&h->q);
    proto_use_session(h->s, ps);
    (void)rcp_server_handle(h->s, h->body.data, h->body.len, &h->q);
    proto_use_session(h->s, NULL);
    if (kept && kept->ps.ended) {
        kept->token[0] = '\0';          /* §7.12: that session is over */
    } else if (!kept && fresh.initialized && fresh.token) {
        hsession *slot = session_slot(h);
        if (slot) {
            memcpy(slot->token, tok, sizeof slot->token);
            slot->cred = cred;
            slot->last = proto_now_ms();
            slot->ps = fresh;
            slot->ps.token = NULL;      /* initialize is answered once */
            snprintf(extra, sizeof extra, "RCP-Session: %s\r\n", tok);
            run->extra = extra;
        }
    }
    if (run->gone || c->dead) {
        c->dead = 1;                    /* no one to answer (§13.1) */
        status = 499;
    } else {
        status = respond_answer(h, c, r);
    }
    rcp_buf_clear(&h->q);
    memset(run, 0, sizeof *run);
done:
    rcp_arena_reset(&h->arena);
    log_request(h, c, r, status, c->bytes_out - before, t0);
}

/* MARK: - The loop ---------------------------------------------------- */

/* 1 when "notifications/cancel" occurs in p[0..n). */
static int mentions_cancel(const char *p, size_t n)
{
    const char *q = p, *end = p + n;
    while (end - q >= 20 && (q = memchr(q, 'n', (size_t)(end - q) - 19)))
        if (memcmp(q++, "notifications/cancel", 20) == 0)
            return 1;
    return 0;
}

/* 1 when the request r may go on to be read: a path of ours, POST, and
** a valid credential when one is needed (what 100 Continue promises). */
static int may_continue(const http *h, const char *rb, const hreq *r)
{
    const char *m;
    size_t mn;
    return r->verb == V_POST
        && route(h, rb + r->target.off, r->target.len, &m, &mn) != R_NONE
        && (!h->ntokens || credential(h, rb, r) >= 0);
}

/* Expect: 100-continue (RFC 9110 §10.1.1): the interim answer once the
** head is whole, unless the final one is already known -- then that,
** and the connection closes rather than read a body no one wants. */
static void maybe_continue(http *h, conn *c, hreq *r)
{
    if (!r->head || !r->expect || c->continued)
        return;
    c->continued = 1;
    if (!may_continue(h, c->in, r)) {
        hreq copy = *r;
        copy.total = copy.head;     /* the body is never read */
        copy.keep_alive = 0;
        serve_request(h, c, &copy);
        c->closing = 1;
        return;
    }
    conn_put(h, c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

/* Serve the complete requests at the front of c, in order (invariant 1),
** while its answers are being read (invariant 2). */
static void conn_serve(http *h, conn *c)
{
    size_t turn = c->len, done = 0;   /* what had come when it began */
    c->ready = 0;
    while (!c->dead && !c->closing && unsent(c) < MAX_OUT) {
        hreq r;
        int st;
        skip_empty_lines(c);
        if (!c->len)
            break;
        st = parse(h, c->in, c->len, &c->head_seen, &r);
        if (st == P_ERR) {
            respond_broken(h, c, &r);
            break;
        }
        if (st == P_NEED) {
            if (r.head && !c->t_head)
                c->t_head = proto_now_ms();
            maybe_continue(h, c, &r);
            break;
        }
        /* a turn serves what had come when it began: its answers go out
        ** while it runs, and a client pipelining anew on each answer
        ** would otherwise keep the server to itself */
        if (done >= turn) {
            c->ready = h->pending = 1;
            break;
        }
        done += r.total;
        serve_request(h, c, &r);
        consume(c, r.total);
    }
    c->held = unsent(c) >= MAX_OUT && c->len;
    if (c->eof && !c->closing) {    /* no more requests can come */
        hreq r;
        size_t memo = 0;
        if (!c->len || parse(h, c->in, c->len, &memo, &r) != P_OK)
            c->closing = 1;
    }
    conn_write(h, c);
}

/* While a request runs: each whole request that arrived on c after what
** was shown already, looked at once for a cancel of the running
** request's scope (§7.14), which then acts at once; served in its turn
** later (the second look is a no-op).  The front request of another
** connection gets its 100 Continue meanwhile. */
static void look_ahead(http *h, conn *c)
{
    running *run = &h->run;
    size_t off = c->ahead;
    if (c == run->c && off < run->rq.total)
        off = run->rq.total;
    if (c != run->c && off == 0 && c->len && !c->front_seen) {
        hreq r;
        size_t memo = 0;
        int st;
        skip_empty_lines(c);
        st = parse(h, c->in, c->len, &memo, &r);
        if (st != P_NEED || r.head)
            c->front_seen = 1;
        if (st == P_NEED && r.head && r.expect && !c->continued
            && may_continue(h, c->in, &r)) {
            c->continued = 1;
            conn_put(h, c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            conn_write(h, c);
        }
    }
    /* bytes searched once for a cancel are not searched again, however
    ** many requests run meanwhile */
    if (c->clean < off)
        c->clean = off;
    if (!mentions_cancel(c->in + c->clean, c->len - c->clean)) {
        c->clean = c->len > 20 ? c->len - 20 : 0;
        if (c->clean < off)
            c->clean = off;
        return;
    }
    while (off < c->len && mentions_cancel(c->in + off, c->len - off)) {
        hreq r;
        size_t memo = 0, used, size, n;
        const char *rb, *body;
        char scope[SCOPE_LEN];
        int cred = -1;
        while (off < c->len && (c->in[off] == '\r' || c->in[off] == '\n'))
            off++;
        rb = c->in + off;
        if (parse(h, rb, c->len - off, &memo, &r) != P_OK)
            break;
        off += r.total;
        if (!may_continue(h, rb, &r))
            continue;
        if (h->ntokens)
            cred = credential(h, rb, &r);
        scope_of(h, rb, c->peer, &r, cred, scope);
        body = rb + r.head;
        n = r.total - r.head;
        if (r.chunked) {
            rcp_buf_clear(&h->peekbody);
            (void)chunked(body, n, h->o.max_body, &h->peekbody, &used, &size);
            body = h->peekbody.data;
            n = h->peekbody.oom ? 0 : h->peekbody.len;
        }
        if (n && n <= proto_max_line(h->s) && run->scope[0]
            && strcmp(scope, run->scope) == 0)
            proto_peek(h->s, body, n);
    }
    c->ahead = off;
}

/* A slot held past its time goes (invariant 3): a head or a body too
** slow is answered 408, an idle connection simply closed. */
static void conn_timers(http *h, conn *c, double now)
{
    if (c->dead || c == h->run.c)
        return;
    if (c->lingering) {
        if (now - c->t_active > 1000)
            c->dead = 1;
        return;
    }
    if (unsent(c)) {
        if (now - c->t_active > (double)h->o.idle_ms)
            c->dead = 1;            /* it does not read its answers */
        return;
    }
    if (c->len && ((!c->t_head && c->t_request
                    && now - c->t_request > (double)h->o.header_ms)
                   || (c->t_head && now - c->t_head > (double)h->o.body_ms))) {
        hreq r;
        size_t memo = 0;
        int st = parse(h, c->in, c->len, &memo, &r);
        if (st == P_OK) {           /* whole: it waits for us, not the
                                    ** client -- no timer runs on it */
            c->t_request = now;
            c->t_head = 0;
        } else if (st == P_NEED && r.head && !c->t_head) {
            c->t_head = now;        /* the head came: the body's timer */
        } else if (st != P_ERR) {
            memset(&r, 0, sizeof r);
            r.status = 408;
            r.why = c->t_head ? "the request body did not arrive in time"
                : "the request head did not arrive in time";
            respond_broken(h, c, &r);
            conn_write(h, c);
        }
    } else if (!c->len && now - c->t_active > (double)h->o.idle_ms) {
        c->dead = 1;
    }
}

static void accept_all(http *h)
{
    int i;
    for (i = 0; i < ACCEPT_BURST; i++) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept(h->lfd, (struct sockaddr *)&sa, &sl), one = 1;
        conn *c;
        if (fd < 0)
            return;
        (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (h->nconns >= h->o.max_conns || !(c = rcp_malloc(sizeof *c))) {
            /* invariant 3: past the cap, a clear answer, not a hang */
            static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":null,"
                "\"error\":{\"code\":-32010,\"message\":\"Backend "
                "unavailable\",\"data\":{\"retryable\":true,"
                "\"retryAfterMs\":1000,\"detail\":\"this server holds all "
                "the connections it may (§15.5)\"}}}\n";
            char busy[512];
            int k = snprintf(busy, sizeof busy, "HTTP/1.1 503 Service "
                             "Unavailable\r\nRetry-After: 1\r\nContent-Type: "
                             "application/json\r\nContent-Length: %lu\r\n"
                             "Connection: close\r\n\r\n%s",
                             (unsigned long)(sizeof body - 1), body);
            (void)send(fd, busy, (size_t)k, MSG_NOSIGNAL);
            close(fd);
            continue;
        }
        memset(c, 0, sizeof *c);
        c->fd = fd;
        rcp_buf_init(&c->out);
        c->t_active = proto_now_ms();
        if (sa.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr,
                      c->peer, sizeof c->peer);
        else if (sa.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr,
                      c->peer, sizeof c->peer);
        else
            strcpy(c->peer, "?");
#if RCP_HTTP_EPOLL
        {
            struct epoll_event ev;
            memset(&ev, 0, sizeof ev);
            ev.events = EPOLLIN;
            ev.data.ptr = c;
            if (epoll_ctl(h->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
                conn_free(c);
                continue;
            }
            c->watched = W_IN;
        }
#endif
        h->conns[h->nconns++] = c;
    }
}

/* What c waits for of the kernel: W_IN (reading: not closing, under the
** bound of invariant 2), W_OUT (answers unsent); 0 once dead. */
static int wants(const http *h, const conn *c)
{
    size_t limit = h->o.max_header + 2 * h->o.max_body + READ_CHUNK;
    int w = 0;
    if (c->dead)
        return 0;
    if (c->lingering || (!c->eof && !c->closing && c->len < limit))
        w |= W_IN;
    if (unsent(c))
        w |= W_OUT;
    return w;
}

/* The kernel's interest in c made what it wants: with epoll, one
** epoll_ctl when that changed (a dead one leaves the set); with poll,
** nothing -- the set is rebuilt each round. */
static void watch(http *h, conn *c)
{
#if RCP_HTTP_EPOLL
    int w = wants(h, c);
    struct epoll_event ev;
    if (w == c->watched || c->watched < 0)
        return;
    if (c->dead) {
        (void)epoll_ctl(h->ep, EPOLL_CTL_DEL, c->fd, NULL);
        c->watched = -1;
        return;
    }
    memset(&ev, 0, sizeof ev);
    ev.events = (w & W_IN ? EPOLLIN : 0u) | (w & W_OUT ? EPOLLOUT : 0u);
    ev.data.ptr = c;
    (void)epoll_ctl(h->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->watched = w;
#else
    (void)h;
    (void)c;
#endif
}

/* The stop descriptor is readable: no more connections or requests; it
** and the listener leave the set. */
static void on_stop(http *h)
{
    char b;
    if (h->stopping)
        return;
    h->stopping = 1;
    (void)read(h->o.stop_fd, &b, 1);
#if RCP_HTTP_EPOLL
    (void)epoll_ctl(h->ep, EPOLL_CTL_DEL, h->o.stop_fd, NULL);
    (void)epoll_ctl(h->ep, EPOLL_CTL_DEL, h->lfd, NULL);
#endif
}

static void on_event(http *h, conn *c, int in, int out)
{
    if (c->dead) {
        watch(h, c);
        return;
    }
    if (in)
        conn_read(h, c);
    if (out)
        conn_write(h, c);
}

/* Wait up to timeout_ms for any socket, then do what is ready: accept,
** read, write.  epoll(7) where there is one: poll(2) costs O(sockets) a
** call, which 1,000 idle connections would charge to every request
** (bench_http); the poll(2) path is the portable one (and is built with
** -DRCP_HTTP_POLL). */
static void wait_ready(http *h, int timeout_ms)
{
#if RCP_HTTP_EPOLL
    struct epoll_event ev[256];
    int n = epoll_wait(h->ep, ev, 256, timeout_ms), i;
    for (i = 0; i < n; i++) {
        void *p = ev[i].data.ptr;
        if (p == &h->lfd)
            accept_all(h);
        else if (p == &h->o.stop_fd)
            on_stop(h);
        else
            on_event(h, p, (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                     != 0, (ev[i].events & EPOLLOUT) != 0);
    }
#else
    size_t i, n = h->nconns, base = 2;
    h->pfd[0].fd = h->stopping ? -1 : h->lfd;
    h->pfd[0].events = POLLIN;
    h->pfd[1].fd = h->stopping ? -1 : h->o.stop_fd;
    h->pfd[1].events = POLLIN;
    h->pfd[0].revents = h->pfd[1].revents = 0;
    for (i = 0; i < n; i++) {
        int w = wants(h, h->conns[i]);
        struct pollfd *p = &h->pfd[base + i];
        p->fd = w ? h->conns[i]->fd : -1;
        p->events = (short)((w & W_IN ? POLLIN : 0) | (w & W_OUT ? POLLOUT
                                                         : 0));
        p->revents = 0;
    }
    if (poll(h->pfd, (nfds_t)(base + n), timeout_ms) <= 0)
        return;
    if (h->pfd[1].revents)
        on_stop(h);
    for (i = 0; i < n; i++) {
        short ev = h->pfd[base + i].revents;
        if (ev)
            on_event(h, h->conns[i], (ev & (POLLIN | POLLHUP | POLLERR)) != 0,
                     (ev & POLLOUT) != 0);
    }
    if (h->pfd[0].revents & POLLIN)
        accept_all(h);
#endif
}

/* One round: what is ready (and, while a request runs, a look ahead for
** its cancels and its client's death), and every TIMER_MS the timers. */
static void service(http *h, int timeout_ms)
{
    double now;
    size_t i;
    wait_ready(h, timeout_ms);
    if (h->run.c) {
        /* §13.1: the running request's client is gone -- reset, or its
        ** end closed now (one that sent its request and half-closed
        ** before it ran still waits for the answer) */
        conn *rc = h->run.c;
        if (rc->dead || (rc->eof && !h->run.eof_before))
            cancel_running(h);
        for (i = 0; i < h->nconns; i++) {
            conn *c = h->conns[i];
            if (!h->run.scanned)
                c->ahead = 0;
            if (!h->run.scanned || c->fresh)
                look_ahead(h, c);
            c->fresh = 0;
        }
        h->run.scanned = 1;
    }
    h->serviced_at = now = proto_now_ms();
    if (now - h->timers_at >= TIMER_MS) {
        h->timers_at = now;
        for (i = 0; i < h->nconns; i++)
            conn_timers(h, h->conns[i], now);
        h->sweep_due = 1;
    }
}

/* Dead connections go, between requests only (the running one's conn
** and the loop's index stay valid while it runs). */
static void sweep(http *h)
{
    size_t i, k = 0;
    for (i = 0; i < h->nconns; i++) {
        if (h->conns[i]->dead)
            conn_free(h->conns[i]);
        else
            h->conns[k++] = h->conns[i];
    }
    h->nconns = k;
    h->sweep_due = 0;
}

/* The wait: none when input read while a request ran waits to be served,
** else until the timers are next due. */
static int next_timeout(const http *h)
{
    double left = h->timers_at + TIMER_MS - proto_now_ms();
    if (h->pending)
        return 0;
    return left <= 0 ? 0 : (int)left + 1;
}

/* MARK: - Starting ---------------------------------------------------- */

/* §15.6 the token file: TOKEN [read|write] per line; blank lines and
** lines starting with '#' are skipped. */
static int load_tokens(http *h, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[MAX_TOKEN_LEN + 64];
    int lineno = 0;
    if (!f) {
        fprintf(stderr, "rcp: --auth-token-file %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    h->tokens = rcp_malloc(MAX_TOKENS * sizeof *h->tokens);
    if (!h->tokens) {
        fclose(f);
        fputs("rcp: out of memory for the tokens\n", stderr);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *tok, *scope, *more, *save = NULL;
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            fprintf(stderr, "rcp: --auth-token-file %s:%d: line too long\n",
                    path, lineno);
            fclose(f);
            return -1;
        }
        tok = strtok_r(line, " \t\r\n", &save);
        if (!tok || tok[0] == '#')
            continue;
        scope = strtok_r(NULL, " \t\r\n", &save);
        more = strtok_r(NULL, " \t\r\n", &save);
        if ((scope && strcmp(scope, "read") && strcmp(scope, "write")) || more
            || h->ntokens == MAX_TOKENS) {
            fprintf(stderr, "rcp: --auth-token-file %s:%d: want TOKEN "
                    "[read|write]%s\n", path, lineno, h->ntokens == MAX_TOKENS
                    ? " (at most 4096 tokens)" : "");
            fclose(f);
            return -1;
        }
        h->tokens[h->ntokens].n = strlen(tok);
        if (!(h->tokens[h->ntokens].s = rcp_malloc(strlen(tok) + 1))) {
            fclose(f);
            fputs("rcp: out of memory for the tokens\n", stderr);
            return -1;
        }
        memcpy(h->tokens[h->ntokens].s, tok, strlen(tok) + 1);
        h->tokens[h->ntokens].write = !scope || strcmp(scope, "write") == 0;
        h->ntokens++;
    }
    fclose(f);
    if (!h->ntokens) {
        fprintf(stderr, "rcp: --auth-token-file %s holds no token\n", path);
        return -1;
    }
    return 0;
}

/* "[ADDR:]PORT" into host and port; ADDR an IPv6 address in brackets. */
static int split_listen(const char *spec, char *host, size_t hn, char *port,
                        size_t pn)
{
    const char *colon, *p;
    size_t k;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':')
            return -1;
        k = (size_t)(close - spec - 1);
        if (k == 0 || k >= hn)
            return -1;
        memcpy(host, spec + 1, k);
        host[k] = '\0';
        p = close + 2;
    } else if ((colon = strrchr(spec, ':')) != NULL) {
        if (memchr(spec, ':', (size_t)(colon - spec)))
            return -1;              /* IPv6 without brackets */
        k = (size_t)(colon - spec);
        if (k == 0 || k >= hn)
            return -1;
        memcpy(host, spec, k);
        host[k] = '\0';
        p = colon + 1;
    } else {
        snprintf(host, hn, "127.0.0.1");
        p = spec;
    }
    if (!*p || strlen(p) >= pn || strspn(p, "0123456789") != strlen(p)
        || strtol(p, NULL, 10) > 65535)
        return -1;
    snprintf(port, pn, "%s", p);
    return 0;
}

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
                >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const unsigned char *a =
            ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char one[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
                                               0, 0, 0, 0, 0, 0, 0, 1 };
        static const unsigned char v4[12] = { 0,0,0,0,0,0,0,0,0,0,0xff,0xff };
        return memcmp(a, one, 16) == 0
            || (memcmp(a, v4, 12) == 0 && a[12] == 127);
    }
    return 0;
}

/* Bind and listen; print the URL (rcp.1: the line tests and clients
** read). */
static int open_listener(http *h)
{
    char host[256], port[16], shown[INET6_ADDRSTRLEN];
    struct addrinfo hints, *res = NULL, *ai;
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    int rc, one = 1;
    if (split_listen(h->o.listen, host, sizeof host, port, sizeof port)) {
        fprintf(stderr, "rcp: --http %s: want [ADDR:]PORT, an IPv6 ADDR in "
                "brackets, PORT 0..65535\n", h->o.listen);
        return -1;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
        fprintf(stderr, "rcp: --http %s: %s\n", h->o.listen,
                gai_strerror(rc));
        return -1;
    }
    h->lfd = -1;
    for (ai = res; ai && h->lfd < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0)
            continue;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0
            && listen(fd, 1024) == 0)
            h->lfd = fd;
        else
            close(fd);
    }
    rc = errno;
    freeaddrinfo(res);
    if (h->lfd < 0) {
        fprintf(stderr, "rcp: --http %s: %s\n", h->o.listen, strerror(rc));
        return -1;
    }
    (void)fcntl(h->lfd, F_SETFL, fcntl(h->lfd, F_GETFL) | O_NONBLOCK);
    if (getsockname(h->lfd, (struct sockaddr *)&sa, &sl) != 0)
        return -1;
    if (!is_loopback((struct sockaddr *)&sa) && !h->ntokens
        && !h->o.allow_remote) {
        fprintf(stderr, "rcp: --http %s is not a loopback address: give "
                "--auth-token-file FILE, or --allow-remote to serve it "
                "without auth (§15.6)\n", h->o.listen);
        return -1;
    }
    if (sa.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, shown,
                  sizeof shown);
        fprintf(stderr, "rcp: listening on http://[%s]:%u%s\n", shown,
                ntohs(((struct sockaddr_in6 *)&sa)->sin6_port),
                h->baselen ? h->base : "/");
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, shown,
                  sizeof shown);
        fprintf(stderr, "rcp: listening on http://%s:%u%s\n", shown,
                ntohs(((struct sockaddr_in *)&sa)->sin_port),
                h->baselen ? h->base : "/");
    }
    fflush(stderr);
    return 0;
}

/* §9: streaming is what info advertises (asked once; §13.2 fixed). */
static int advertises_streaming(http *h)
{
    static const char info[] = "{\"jsonrpc\":\"2.0\",\"id\":0,"
        "\"method\":\"info\"}";
    rcp_json_err err;
    const rcp_json *v;
    int on = 0;
    rcp_buf_clear(&h->q);
    memset(&h->stateless, 0, sizeof h->stateless);
    h->stateless.implicit = 1;
    proto_use_session(h->s, &h->stateless);
    (void)rcp_server_handle(h->s, info, sizeof info - 1, &h->q);
    proto_use_session(h->s, NULL);
    v = rcp_json_parse(&h->arena, h->q.data, h->q.len, 0, &err);
    v = v ? rcp_json_get(rcp_json_get(v, "result"), "capabilities") : NULL;
    on = v && rcp_json_get(v, "streaming") != NULL;
    rcp_arena_reset(&h->arena);
    rcp_buf_clear(&h->q);
    return on;
}

void rcp_http_opts_init(rcp_http_opts *o)
{
    memset(o, 0, sizeof *o);
    o->stop_fd = -1;
}

static int http_init(http *h, rcp_server *s, const rcp_http_opts *o)
{
    const char *base;
    size_t n;
    memset(h, 0, sizeof *h);
    h->s = s;
    h->o = *o;
    h->lfd = h->rnd_fd = h->ep = -1;
    if (!h->o.listen)
        h->o.listen = "0";
    base = h->o.base ? h->o.base : "/rcp";
    n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    if (base[0] != '/' || n >= sizeof h->base || strpbrk(base, " ?#\t")) {
        fprintf(stderr, "rcp: --base %s: want a path starting with '/'\n",
                base);
        return -1;
    }
    memcpy(h->base, base, n);
    h->base[n] = '\0';
    h->baselen = n;
    if (!h->o.max_body || h->o.max_body > proto_max_line(s))
        h->o.max_body = proto_max_line(s);   /* a body is one frame */
    if (!h->o.max_header)
        h->o.max_header = DEF_MAX_HEADER;
    if (!h->o.max_conns)
        h->o.max_conns = DEF_MAX_CONNS;
    if (h->o.idle_ms <= 0)
        h->o.idle_ms = DEF_IDLE_MS;
    if (h->o.header_ms <= 0)
        h->o.header_ms = DEF_HEADER_MS;
    if (h->o.body_ms <= 0)
        h->o.body_ms = DEF_BODY_MS;
    if (h->o.session_idle_ms <= 0)
        h->o.session_idle_ms = DEF_SESSION_MS;
    rcp_buf_init(&h->q);
    rcp_buf_init(&h->body);
    rcp_buf_init(&h->peekbody);
    rcp_buf_init(&h->resp);
    rcp_arena_init(&h->arena, (size_t)256 << 20);
    h->conns = rcp_malloc(h->o.max_conns * sizeof *h->conns);
    h->pfd = rcp_malloc((h->o.max_conns + 2) * sizeof *h->pfd);
    h->buckets = rcp_malloc(RATE_SLOTS * sizeof *h->buckets);
    h->sessions = h->o.sessions
        ? rcp_malloc(MAX_SESSIONS * sizeof *h->sessions) : NULL;
    if (!h->conns || !h->pfd || !h->buckets
        || (h->o.sessions && !h->sessions)) {
        fputs("rcp: out of memory starting the HTTP server\n", stderr);
        return -1;
    }
    memset(h->buckets, 0, RATE_SLOTS * sizeof *h->buckets);
    if (h->sessions)
        memset(h->sessions, 0, MAX_SESSIONS * sizeof *h->sessions);
    if (h->o.sessions && (h->rnd_fd = open("/dev/urandom", O_RDONLY)) < 0) {
        fprintf(stderr, "rcp: --sessions needs /dev/urandom: %s\n",
                strerror(errno));
        return -1;
    }
    if (h->o.auth_token_file && load_tokens(h, h->o.auth_token_file) != 0)
        return -1;
    h->io.ud = h;
    h->io.intake = hook_intake;
    h->io.wait = hook_wait;
    h->io.flush = hook_flush;
    h->io.raw = hook_raw;
    h->streaming = advertises_streaming(h);
    if (open_listener(h) != 0)
        return -1;
#if RCP_HTTP_EPOLL
    {
        struct epoll_event ev;
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN;
        ev.data.ptr = &h->lfd;
        if ((h->ep = epoll_create1(EPOLL_CLOEXEC)) < 0
            || epoll_ctl(h->ep, EPOLL_CTL_ADD, h->lfd, &ev) != 0) {
            fprintf(stderr, "rcp: epoll: %s\n", strerror(errno));
            return -1;
        }
        ev.data.ptr = &h->o.stop_fd;
        if (h->o.stop_fd >= 0
            && epoll_ctl(h->ep, EPOLL_CTL_ADD, h->o.stop_fd, &ev) != 0) {
            fprintf(stderr, "rcp: epoll: %s\n", strerror(errno));
            return -1;
        }
    }
#endif
    return 0;
}

static void http_free(http *h)
{
    size_t i;
    for (i = 0; i < h->nconns; i++)
        conn_free(h->conns[i]);
    for (i = 0; i < h->ntokens; i++) {
        memset(h->tokens[i].s, 0, h->tokens[i].n);
        rcp_free(h->tokens[i].s);
    }
    rcp_free(h->tokens);
    rcp_free(h->conns);
    rcp_free(h->pfd);
    rcp_free(h->buckets);
    rcp_free(h->sessions);
    rcp_buf_free(&h->q);
    rcp_buf_free(&h->body);
    rcp_buf_free(&h->peekbody);
    rcp_buf_free(&h->resp);
    rcp_arena_free(&h->arena);
    if (h->lfd >= 0)
        close(h->lfd);
    if (h->rnd_fd >= 0)
        close(h->rnd_fd);
    if (h->ep >= 0)
        close(h->ep);
}

/* §5.2 the loop: poll, serve every whole request (in order per
** connection), sweep; on stop, answer what is already queued (for at
** most STOP_FLUSH_MS) and close. */
int rcp_server_run_http(rcp_server *s, const rcp_http_opts *o)
{
    http h;
    size_t i;
    double end;
    signal(SIGPIPE, SIG_IGN);
    if (http_init(&h, s, o) != 0) {
        http_free(&h);
        return -1;
    }
    proto_lend_io(s, &h.io);
    while (!h.stopping) {
        service(&h, next_timeout(&h));
        h.pending = 0;
        for (i = 0; i < h.nconns && !h.stopping; i++)
            if (h.conns[i]->ready && !h.conns[i]->dead)
                conn_serve(&h, h.conns[i]);
        if (h.sweep_due) {
            sweep(&h);
            sessions_expire(&h);
        }
    }
    end = proto_now_ms() + STOP_FLUSH_MS;
    for (i = 0; i < h.nconns; i++)
        h.conns[i]->closing = 1;
    while (proto_now_ms() < end) {
        int busy = 0;
        for (i = 0; i < h.nconns; i++)
            busy |= !h.conns[i]->dead && unsent(h.conns[i]) > 0;
        if (!busy)
            break;
        service(&h, 50);
    }
    proto_lend_io(s, NULL);
    proto_end(s);
    http_free(&h);
    return 0;
}
