/*
** transport.c -- §5: bytes <-> frames.  The one line framer, shared by
** the server and the client (client.c), and the stdio serve loop; the
** HTTP transport (§5.2) comes here next.  The only server file that
** reads, writes or polls.
**
** NOTES ON THE DESIGN
**
** The transport knows frames, not messages.  It hands each line to the
** protocol (rcp_server_handle) with its output queue as the frame's out,
** and lends the protocol an I/O hook (proto_io, rcp.h) for what a request
** may need of the connection while it runs: poll (take in what arrived
** and show each newly complete frame to proto_peek, so a cancel acts at
** once), flush (write the queue now), wait (sleep, waking for input) and
** write (bytes straight out after the queue).  An HTTP/SSE transport is
** one more such hook: its flush sends the queued progress as events.
**
** Invariants:
**   1. Framing is linear: every byte is searched for '\n' at most once to
**      hand lines out (f->seen remembers where a search stopped) and at
**      most once by the look-ahead (f->scan_seen), however the input is
**      split across reads (bytes_searched <= 2 x bytes_read).
**   2. Memory is bounded: a line over max_line is reported once
**      (TRANSPORT_OVERSIZED) and its bytes are dropped as they arrive, and
**      so is one that cannot be buffered for lack of memory; while a
**      request runs, the look-ahead reads at most max_line + one chunk;
**      and the lines handed out are dropped once they outweigh what is
**      still to come, so however long a pipelined stream runs the buffer
**      holds about twice what is not yet handled.
**   3. A line handed out is copied by its consumer before the buffer can
**      move (rcp.c invariant 3, client.c invariant 4).
**   4. Answers wait in the queue until the input runs dry, the queue
**      passes FLUSH_AT, or the protocol flushes (before a gated method
**      runs, after a progress frame): pipelined pings go out in few
**      writes, and a finished answer never waits behind a long handler.
**   5. stdout carries whole lines only: the queue holds whole lines; when
**      it cannot grow, the protocol writes a line straight out after it;
**      a closed stdout ends the server (SIGPIPE is ignored).
*/
#include "rcp.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define IN_CHUNK  65536u    /* bytes asked of one read() */
#define FLUSH_AT  65536u    /* queued answers written at this size */

/* MARK: - §5.1 The line framer ------------------------------------------ */

void transport_framer_init(transport_framer *f, size_t max_line)
{
    memset(f, 0, sizeof *f);
    f->max_line = max_line;
}

void transport_framer_free(transport_framer *f)
{
    rcp_free(f->buf);
    f->buf = NULL;
    f->len = f->cap = f->pos = f->seen = f->scan = f->scan_seen = 0;
}

int transport_framer_reserve(transport_framer *f, size_t n)
{
    size_t cap = f->cap ? f->cap : IN_CHUNK, need = f->len + n;
    char *p;
    while (cap < need)
        cap *= 2;
    if (cap == f->cap)
        return 0;
    if (!(p = rcp_realloc(f->buf, cap)))
        return -1;
    f->buf = p;
    f->cap = cap;
    return 0;
}

int transport_framer_read(transport_framer *f, int fd)
{
    ssize_t n;
    if (transport_framer_reserve(f, IN_CHUNK) != 0)
        return -2;
    do
        n = read(fd, f->buf + f->len, f->cap - f->len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -1;
    if (n == 0) {
        f->eof = 1;
        return 0;
    }
    f->len += (size_t)n;
    f->bytes_read += (uint64_t)n;
    return 1;
}

/* The next '\n' at or after *memo (and from), or NULL; *memo becomes
** where the search stopped, so no byte is searched twice (invariant 1). */
static char *find_newline(transport_framer *f, size_t from, size_t *memo)
{
    char *nl;
    if (*memo > from)
        from = *memo;
    nl = from < f->len ? memchr(f->buf + from, '\n', f->len - from) : NULL;
    *memo = nl ? (size_t)(nl - f->buf) : f->len;
    f->bytes_searched += *memo - from + (nl != NULL);
    return nl;
}

/* Drop what was handed out, so the buffer holds only what is to come. */
static void compact(transport_framer *f)
{
    size_t k = f->pos;
    if (k == 0)
        return;
    memmove(f->buf, f->buf + k, f->len - k);
    f->len -= k;
    f->pos = 0;
    f->seen = f->seen > k ? f->seen - k : 0;
    f->scan = f->scan > k ? f->scan - k : 0;
    f->scan_seen = f->scan_seen > k ? f->scan_seen - k : 0;
}

int transport_framer_next(transport_framer *f, const char **line, size_t *n)
{
    assert(f->pos <= f->len && f->seen <= f->len);
    /* invariant 2: what was handed out goes once it outweighs what is to
    ** come -- between lines too, for a client that keeps the pipe full
    ** never lets the input run dry.  A compaction moves no more bytes
    ** than were handed out since the last one: linear. */
    if (f->pos >= IN_CHUNK && f->pos >= f->len - f->pos)
        compact(f);
    for (;;) {

        size_t start = f->pos;
        char *nl = find_newline(f, start, &f->seen);
        size_t k = (nl ? (size_t)(nl - f->buf) : f->len) - start;
        if (!nl && (f->discarding || k > f->max_line)) {
            int over = !f->discarding;
            f->discarding = 1;                  /* invariant 2 */
            f->pos = f->seen = f->len;
            if (!over) {                        /* its bytes are dropped */
                compact(f);
                return TRANSPORT_NONE;
            }
            *line = f->buf + start;
            *n = k;
            return TRANSPORT_OVERSIZED;
        }
        if (!nl && !(f->eof && k > 0)) {
            compact(f);
            return TRANSPORT_NONE;
        }
        f->pos = nl ? (size_t)(nl - f->buf) + 1 : f->len;   /* or the tail */
        if (f->scan < f->pos)
            f->scan = f->pos;       /* the look-ahead starts after it */
        if (f->discarding) {        /* the end of an oversized line */
            f->discarding = 0;
            continue;
        }
        *line = f->buf + start;
        *n = k;
        return k > f->max_line ? TRANSPORT_OVERSIZED : TRANSPORT_LINE;
    }
}

int transport_framer_peek(transport_framer *f, const char **line, size_t *n)
{
    for (;;) {
        size_t start;
        char *nl;
        if (f->discarding)
            return 0;
        if (f->scan < f->pos)
            f->scan = f->pos;
        start = f->scan;
        if (!(nl = find_newline(f, start, &f->scan_seen)))
            return 0;           /* the rest is searched once more comes */
        f->scan = (size_t)(nl - f->buf) + 1;
        *line = f->buf + start;
        *n = (size_t)(nl - f->buf) - start;
        if (*n <= f->max_line)
            return 1;           /* an oversized frame is never acted on */
    }
}

size_t transport_framer_drop(transport_framer *f)
{
    size_t n = f->len - f->pos;
    f->len = f->seen = f->scan = f->scan_seen = f->pos;
    f->discarding = 1;
    return n;
}

size_t transport_framer_pending(const transport_framer *f)
{
    return f->len - f->pos;
}

int transport_blank(const char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return 0;
    return 1;
}

void transport_sleep(int ms)
{
    (void)poll(NULL, 0, ms);
}

/* MARK: - §5.1 The stdio loop ------------------------------------------- */

typedef struct stdio {
    rcp_server      *s;
    transport_framer in;
    rcp_buf          out;       /* queued answers: whole lines (inv. 5) */
    int              in_fd, out_fd;
    int              out_dead;  /* stdout closed: the server ends */
    proto_io         io;        /* lent to the protocol */
} stdio;

/* All of p[0..n) to out_fd; a closed stdout ends the server (SIGPIPE is
** ignored). */
static void write_fd(stdio *t, const char *p, size_t n)
{
    while (n && !t->out_dead) {
        ssize_t k = write(t->out_fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            t->out_dead = 1;
            break;
        }
        p += k;
        n -= (size_t)k;
    }
}

static int input_ready(const stdio *t, int timeout_ms)
{
    struct pollfd p;
    p.fd = t->in_fd;
    p.events = POLLIN;
    p.revents = 0;
    return poll(&p, 1, timeout_ms) > 0;
}

/* The hook's flush: the queue holds whole lines only, so writing it out
** leaves the peer with whole lines, and the emptied queue is healthy
** again (its oom cleared). */
static void stdio_flush(void *ud)
{
    stdio *t = ud;
    write_fd(t, t->out.data, t->out.len);
    rcp_buf_clear(&t->out);
}

/* The hook's raw: bytes straight to the peer, after what is queued (so
** order holds); nothing is allocated. */
static void stdio_raw(void *ud, const char *p, size_t n)
{
    stdio_flush(ud);
    write_fd(ud, p, n);
}

/* The hook's intake: read what is waiting without blocking -- bounded,
** so a flood cannot grow the buffer without limit while a request runs
** -- and show the protocol each frame that is now complete (§7.14). */
static void stdio_intake(void *ud)
{
    stdio *t = ud;
    const char *p;
    size_t n;
    while (!t->in.eof
           && transport_framer_pending(&t->in) < t->in.max_line + IN_CHUNK
           && input_ready(t, 0))
        if (transport_framer_read(&t->in, t->in_fd) <= 0)
            break;
    while (transport_framer_peek(&t->in, &p, &n))
        proto_peek(t->s, p, n);
}

/* The hook's wait: up to ms for input (so a cancel is seen at once), or
** just sleep once no more can come. */
static void stdio_wait(void *ud, int ms)
{
    stdio *t = ud;
    if (!t->in.eof)
        (void)input_ready(t, ms);
    else
        transport_sleep(ms);
}

/* Every complete line to the protocol (§5.1: never one message per
** read()); an oversized one is answered once with -32013 while its bytes
** are dropped.  1 once shutdown is answered. */
static int drain(stdio *t)
{
    const char *p;
    size_t n;
    while (transport_framer_next(&t->in, &p, &n) != TRANSPORT_NONE) {
        int done = rcp_server_handle(t->s, p, n, &t->out);
        /* the protocol's side of the seam: whole lines only (inv. 5) */
        assert(t->out.len == 0 || t->out.data[t->out.len - 1] == '\n');
        if (done)
            return 1;
        if (t->out.len >= FLUSH_AT)
            stdio_flush(t);
    }
    return 0;
}

/* §5.1 loop: answer every complete line; write when the input runs dry
** (so a lone request is answered at once), when the queue is large, or
** when the protocol asks (invariant 4); on EOF finish what was received,
** flush and stop (§7.12: EOF = shutdown). */
int rcp_server_run(rcp_server *s, int in_fd, int out_fd)
{
    stdio t;
    rcp_server_stats *st = proto_stats(s);
    int rc = 0, r;
    signal(SIGPIPE, SIG_IGN);
    memset(&t, 0, sizeof t);
    t.s = s;
    t.in_fd = in_fd;
    t.out_fd = out_fd;
    transport_framer_init(&t.in, proto_max_line(s));
    rcp_buf_init(&t.out);
    t.io.ud = &t;
    t.io.intake = stdio_intake;
    t.io.wait = stdio_wait;
    t.io.flush = stdio_flush;
    t.io.raw = stdio_raw;
    if (transport_framer_reserve(&t.in, IN_CHUNK) != 0) {
        fputs("rcp: out of memory for the input buffer\n", stderr);
        return -1;
    }
    proto_lend_io(s, &t.io);
    while (!drain(&t) && !t.out_dead && !t.in.eof) {
        if (t.out.len && !input_ready(&t, 0))
            stdio_flush(&t);
        if ((r = transport_framer_read(&t.in, in_fd)) == -2) {
            proto_unbuffered(s, transport_framer_drop(&t.in), &t.out);
        } else if (r < 0) {
            fprintf(stderr, "rcp: reading stdin: %s\n", strerror(errno));
            rc = -1;
            break;
        }
    }
    stdio_flush(&t);
    proto_lend_io(s, NULL);
    proto_end(s);
    st->bytes_read += t.in.bytes_read;
    st->bytes_searched += t.in.bytes_searched;
    transport_framer_free(&t.in);
    rcp_buf_free(&t.out);
    return rc;
}
