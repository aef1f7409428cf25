/*
** bench_http.c -- the HTTP transport (§5.2, http.c) under load, next to
** the stdio loop measured in the same run with the same requests.
**
** Prints, as medians of RUNS runs:
**   - ping and retrieve over 64 keep-alive connections, each keeping 16
**     requests pipelined: requests/s and the p50 / p99 latency of a
**     request (sent to answered, so the pipeline's queueing is in it),
**     and the server's CPU a request (getrusage of the reaped server: its
**     own work, which a loaded machine does not inflate as it does the
**     wall clock); then the same over stdio with the same 1,024 in flight;
**     the aim for HTTP ping is 200,000 requests/s;
**   - a lone ping's round trip on one keep-alive connection, alone and
**     then while 1,000 idle connections are held open: the ratio must
**     stay under 2 (a poll loop pays for every descriptor it watches).
*/
#include "rcp.h"
#include "benchutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS    3
#define CONNS   64
#define DEPTH   16
#define IDLE    1000

/* MARK: - The servers ---------------------------------------------------- */

typedef struct server {
    pid_t pid;
    int   to, from;         /* stdio: its stdin, stdout */
    int   port;             /* http */
} server;

static void start(server *s, const char *bin, int http)
{
    char *argv[] = { (char *)bin, "serve", "--corpus",
                     "tests/sample-corpus.jsonl", "--http", "0", NULL };
    int e;
    memset(s, 0, sizeof *s);
    if (!http)
        argv[4] = NULL;
    s->pid = bench_spawn(argv, &s->to, &s->from, &e);
    if (http) {
        char log[4096] = "";
        size_t n = 0;
        char *at = NULL;
        while (n < sizeof log - 1 && !(at = strstr(log, "/rcp\n"))) {
            ssize_t k = read(e, log + n, sizeof log - 1 - n);
            if (k <= 0) {
                fprintf(stderr, "bench_http: the server did not start\n");
                exit(1);
            }
            n += (size_t)k;
            log[n] = '\0';
        }
        at = strstr(log, "http://127.0.0.1:");
        s->port = atoi(at + strlen("http://127.0.0.1:"));
    }
    close(e);
}

/* CPU seconds (user + system) of the children reaped so far. */
static double children_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6
        + (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Stop s; returns the CPU seconds it used (its own work, whatever the
** machine's load did to the wall clock). */
static double stop(server *s)
{
    int status;
    double before = children_cpu_s();
    if (s->port)
        kill(s->pid, SIGTERM);
    close(s->to);
    close(s->from);
    waitpid(s->pid, &status, 0);
    return children_cpu_s() - before;
}

static int dial(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("bench_http: connect");
        exit(1);
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* MARK: - The load: channels each keeping a window of requests ----------- */

typedef struct chan {
    int     wfd, rfd, http;
    char   *in;
    size_t  len, cap;
    char   *out;
    size_t  olen, ocap, opos;
    double *sent;           /* a ring of send times, window long */
    long    issued, answered;
} chan;

typedef struct load {
    const char *method, *params;
    int    window;
    long   total, issued, answered;
    double *lat;
} load;

static void put_request(chan *c, load *l)
{
    char body[512], head[256];
    int bn = snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%ld,"
                      "\"method\":\"%s\",\"params\":%s}", c->issued,
                      l->method, l->params), hn = 0;
    if (c->http)
        hn = snprintf(head, sizeof head, "POST /rcp/%s HTTP/1.1\r\nHost: b\r\n"
                      "Content-Type: application/json\r\nContent-Length: %d"
                      "\r\n\r\n", l->method, bn);
    if (c->olen + (size_t)hn + (size_t)bn + 1 > c->ocap) {
        c->ocap = (c->ocap + (size_t)hn + (size_t)bn + 1) * 2;
        c->out = realloc(c->out, c->ocap);
    }
    memcpy(c->out + c->olen, head, (size_t)hn);
    memcpy(c->out + c->olen + hn, body, (size_t)bn);
    c->olen += (size_t)hn + (size_t)bn;
    if (!c->http)
        c->out[c->olen++] = '\n';
    c->sent[c->issued % l->window] = now_s();
    c->issued++;
    l->issued++;
}

/* The length of the first whole answer in c->in, or 0. */
static size_t answer_len(const chan *c)
{
    const char *end, *cl;
    if (!c->http) {
        end = memchr(c->in, '\n', c->len);
        return end ? (size_t)(end - c->in) + 1 : 0;
    }
    end = NULL;
    if (c->len >= 4) {
        size_t i;
        for (i = 0; i + 3 < c->len; i++)
            if (c->in[i] == '\r' && memcmp(c->in + i, "\r\n\r\n", 4) == 0) {
                end = c->in + i + 4;
                break;
            }
    }
    if (!end)
        return 0;
    cl = strstr(c->in, "Content-Length: ");
    if (!cl || cl > end) {
        fprintf(stderr, "bench_http: an answer without Content-Length\n");
        exit(1);
    }
    {
        size_t n = (size_t)(end - c->in) + (size_t)atol(cl + 16);
        return n <= c->len ? n : 0;
    }
}

static void chan_read(chan *c, load *l)
{
    ssize_t k;
    size_t n;
    if (c->cap - c->len < 65536) {
        c->cap = c->cap * 2 + 65536;
        c->in = realloc(c->in, c->cap + 1);
    }
    k = read(c->rfd, c->in + c->len, c->cap - c->len);
    if (k <= 0) {
        fprintf(stderr, "bench_http: the server closed (%s)\n",
                k < 0 ? strerror(errno) : "EOF");
        exit(1);
    }
    c->len += (size_t)k;
    c->in[c->len] = '\0';
    while ((n = answer_len(c)) != 0) {
        const char *err = strstr(c->in, "\"error\"");
        if (memcmp(c->in, c->http ? "HTTP/1.1 200" : "{", c->http ? 12 : 1)
            || (err && err < c->in + n)) {
            fprintf(stderr, "bench_http: unexpected answer %.60s\n", c->in);
            exit(1);
        }
        l->lat[l->answered++] = now_s() - c->sent[c->answered % l->window];
        c->answered++;
        memmove(c->in, c->in + n, c->len - n);
        c->len -= n;
        c->in[c->len] = '\0';
        if (l->issued < l->total)
            put_request(c, l);
    }
}

static void chan_write(chan *c)
{
    while (c->opos < c->olen) {
        ssize_t k = write(c->wfd, c->out + c->opos, c->olen - c->opos);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (k <= 0) {
            perror("bench_http: write");
            exit(1);
        }
        c->opos += (size_t)k;
    }
    c->olen = c->opos = 0;
}

/* total requests over n channels, window each; seconds, latencies in
** l->lat. */
static double run(chan *ch, int n, load *l)
{
    struct pollfd pf[CONNS * 2];
    double t0 = now_s();
    int i, j;
    l->issued = l->answered = 0;
    for (i = 0; i < n; i++) {
        ch[i].issued = ch[i].answered = 0;
        ch[i].len = ch[i].olen = ch[i].opos = 0;
        for (j = 0; j < l->window && l->issued < l->total; j++)
            put_request(&ch[i], l);
        fcntl(ch[i].wfd, F_SETFL, fcntl(ch[i].wfd, F_GETFL) | O_NONBLOCK);
        chan_write(&ch[i]);
    }
    while (l->answered < l->total) {
        int np = 0;
        for (i = 0; i < n; i++) {
            pf[np].fd = ch[i].rfd;
            pf[np].events = POLLIN;
            np++;
            if (ch[i].wfd != ch[i].rfd || ch[i].olen) {
                pf[np].fd = ch[i].wfd;
                pf[np].events = ch[i].olen ? POLLOUT : 0;
                np++;
            }
        }
        if (poll(pf, (nfds_t)np, 10000) <= 0) {
            fprintf(stderr, "bench_http: stalled at %ld of %ld\n",
                    l->answered, l->total);
            exit(1);
        }
        for (i = 0, np = 0; i < n; i++) {
            short rev = pf[np++].revents, wev = 0;
            if (ch[i].wfd != ch[i].rfd || ch[i].olen)
                wev = pf[np++].revents;
            if (ch[i].wfd == ch[i].rfd)
                wev |= rev;
            if (rev & (POLLIN | POLLHUP | POLLERR))
                chan_read(&ch[i], l);
            if ((wev & POLLOUT) || ch[i].olen)
                chan_write(&ch[i]);
        }
    }
    return now_s() - t0;
}

static void chan_init(chan *c, int rfd, int wfd, int http, int window)
{
    memset(c, 0, sizeof *c);
    c->rfd = rfd;
    c->wfd = wfd;
    c->http = http;
    c->sent = malloc((size_t)window * sizeof *c->sent);
}

static void chan_free(chan *c)
{
    free(c->in);
    free(c->out);
    free(c->sent);
}

/* §13: over stdio the session is initialised first (HTTP is stateless:
** every request is implicitly initialised, §5.2). */
static void initialize(server *s)
{
    static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":1}}\n";
    char c;
    if (write(s->to, init, sizeof init - 1) != (ssize_t)(sizeof init - 1))
        exit(1);
    while (read(s->from, &c, 1) == 1 && c != '\n')
        ;
}

/* One method over HTTP (64 x 16) and over stdio (1 x 1024), side by
** side. */
static void compare(const char *bin, const char *method, const char *params,
                    long total, double aim)
{
    double http_s[RUNS], http_p50[RUNS], http_p99[RUNS];
    double io_s[RUNS], io_p50[RUNS], io_p99[RUNS];
    double http_cpu[RUNS], io_cpu[RUNS];    /* server CPU us a request */
    double *lat = malloc((size_t)total * sizeof *lat);
    load l;
    int r, i;
    l.method = method;
    l.params = params;
    l.total = total;
    l.lat = lat;
    for (r = 0; r < RUNS; r++) {
        server s;
        chan ch[CONNS];
        start(&s, bin, 1);
        for (i = 0; i < CONNS; i++) {
            int fd = dial(s.port);
            chan_init(&ch[i], fd, fd, 1, DEPTH);
        }
        l.window = DEPTH;
        http_s[r] = (double)total / run(ch, CONNS, &l);
        qsort(lat, (size_t)total, sizeof *lat, cmp_double);
        http_p50[r] = lat[total / 2] * 1e6;
        http_p99[r] = lat[total * 99 / 100] * 1e6;
        for (i = 0; i < CONNS; i++) {
            close(ch[i].rfd);
            chan_free(&ch[i]);
        }
        http_cpu[r] = stop(&s) / (double)total * 1e6;

        start(&s, bin, 0);
        initialize(&s);
        chan_init(&ch[0], s.from, s.to, 0, CONNS * DEPTH);
        l.window = CONNS * DEPTH;
        io_s[r] = (double)total / run(ch, 1, &l);
        qsort(lat, (size_t)total, sizeof *lat, cmp_double);
        io_p50[r] = lat[total / 2] * 1e6;
        io_p99[r] = lat[total * 99 / 100] * 1e6;
        chan_free(&ch[0]);
        io_cpu[r] = stop(&s) / (double)total * 1e6;
    }
    printf("%s, %ld requests, %d in flight (median of %d):\n", method, total,
           CONNS * DEPTH, RUNS);
    printf("  http  %d conns x %d pipelined  %9.0f requests/s  p50 %7.0f us"
           "  p99 %7.0f us  server CPU %5.1f us a request\n", CONNS, DEPTH,
           median(http_s, RUNS), median(http_p50, RUNS),
           median(http_p99, RUNS), median(http_cpu, RUNS));
    printf("  stdio 1 pipe x %d             %9.0f requests/s  p50 %7.0f us"
           "  p99 %7.0f us  server CPU %5.1f us a request\n", CONNS * DEPTH,
           median(io_s, RUNS), median(io_p50, RUNS), median(io_p99, RUNS),
           median(io_cpu, RUNS));
    printf("  http / stdio %.2f (server CPU a request: stdio / http %.2f)",
           median(http_s, RUNS) / median(io_s, RUNS),
           median(io_cpu, RUNS) / median(http_cpu, RUNS));
    if (aim > 0)
        printf("; aim for http %.0f requests/s", aim);
    printf("\n");
    free(lat);
}

/* A lone ping's round trip (us, median of n) on one connection. */
static double lone_rtt_us(int fd, int n)
{
    static const char req[] = "POST /rcp/ping HTTP/1.1\r\nHost: b\r\n"
        "Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
        "\"ping\"}";
    double *t = malloc((size_t)n * sizeof *t), m;
    char buf[4096];
    int i;
    for (i = 0; i < n; i++) {
        double t0 = now_s();
        size_t got = 0;
        if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1))
            exit(1);
        while (got < 4 || !strstr(buf, "}\n")) {
            ssize_t k = read(fd, buf + got, sizeof buf - 1 - got);
            if (k <= 0)
                exit(1);
            got += (size_t)k;
            buf[got] = '\0';
        }
        t[i] = (now_s() - t0) * 1e6;
    }
    m = median(t, n);
    free(t);
    return m;
}

static void idle_connections(const char *bin)
{
    double alone[RUNS], held[RUNS];
    int r, i;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < IDLE + 64) {
        rl.rlim_cur = rl.rlim_max < IDLE + 64 ? rl.rlim_max : IDLE + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    for (r = 0; r < RUNS; r++) {
        server s;
        static int idle[IDLE];
        int fd;
        start(&s, bin, 1);
        fd = dial(s.port);
        alone[r] = lone_rtt_us(fd, 2001);
        for (i = 0; i < IDLE; i++)
            idle[i] = dial(s.port);
        (void)lone_rtt_us(fd, 101);          /* every one accepted */
        held[r] = lone_rtt_us(fd, 2001);
        for (i = 0; i < IDLE; i++)
            close(idle[i]);
        close(fd);
        stop(&s);
    }
    printf("lone ping round trip, one keep-alive connection (median of %d):"
           "\n  alone %7.1f us   with %d idle connections held %7.1f us"
           "   ratio %.2f (limit 2)\n", RUNS, median(alone, RUNS), IDLE,
           median(held, RUNS), median(held, RUNS) / median(alone, RUNS));
}

/* bench_http [ping|retrieve|idle]: one part, or all. */
int main(int argc, char **argv)
{
    const char *bin = getenv("RCP_BIN") ? getenv("RCP_BIN") : "./rcp";
    const char *only = argc > 1 ? argv[1] : "";
    signal(SIGPIPE, SIG_IGN);
    if (!*only || !strcmp(only, "ping"))
        compare(bin, "ping", "{}", 400000, 200000);
    if (!*only || !strcmp(only, "retrieve"))
        compare(bin, "retrieve", "{\"query\":\"framing of lines\",\"k\":5}",
                20000, 0);
    if (!*only || !strcmp(only, "idle"))
        idle_connections(bin);
    return 0;
}
