/*
** bench_serve.c -- the real stdio loop through pipes.
**
** Prints, as medians of several runs:
**   - pipelined ping requests/s through `rcp serve`, next to the same
**     bytes pushed through `cat` (the pipe-and-process limit of this
**     machine, measured in the same run) and their ratio;
**   - the round-trip latency of a lone ping (write one, wait for its
**     answer): proves a lone request is written at once, not when a
**     buffer fills;
**   - end to end through the protocol: index/add of a synthetic corpus
**     (documents/s) and pipelined retrieve requests/s per mode, next to
**     ping requests/s (the protocol's own ceiling) from the same run;
**   - one 64 MiB line (a ping with a long ignored member) through a pipe,
**     next to `cat` moving the same bytes: reading a line is linear in
**     its length (it was quadratic: issue 8 item 9);
**   - upsert churn (issue 8): 10 ids upserted 40 000 times, the server's
**     resident memory at the start and the end next to the limit (within
**     2x of the start), and dense retrieve latency before and after;
**   - §8 filters (issue 9): 100 000 documents with a meta of three
**     declared fields, index/add documents/s, then dense and sparse
**     retrieve latency unfiltered (the anchor, same server, same run)
**     and under a selective, a broad and a compound filter.
**
**   bench_serve [churn | filters]   one section alone
*/
#include "rcp.h"
#include "benchutil.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 5

/* The load generator: one thread writes the stream, the calling thread
** reads the answers and counts their lines (so the pipe's ping-pong is in
** the figure, as a client that pipelines sees it). */
struct feed {
    int         fd;
    const char *p;
    size_t      n;
};

static void *feed_writer(void *arg)
{
    struct feed *f = arg;
    size_t off = 0;
    while (off < f->n) {
        ssize_t k = write(f->fd, f->p + off, f->n - off);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    close(f->fd);
    return NULL;
}

/* Write `stream` to a server of argv and count `lines` newlines coming
** back.  Returns the seconds taken. */
static double pump(char *const argv[], const char *stream, size_t len,
                   long lines)
{
    int to, from, status;
    pid_t srv = bench_spawn(argv, &to, &from, NULL);
    static char buf[1 << 16];
    long seen = 0;
    double t0 = now_s(), t;
    struct feed f;
    pthread_t wr;
    f.fd = to;
    f.p = stream;
    f.n = len;
    if (pthread_create(&wr, NULL, feed_writer, &f) != 0)
        exit(1);
    while (seen < lines) {
        ssize_t n = read(from, buf, sizeof buf), i;
        if (n <= 0)
            break;
        for (i = 0; i < n; i++)
            seen += buf[i] == '\n';
    }
    t = now_s() - t0;
    close(from);
    pthread_join(wr, NULL);
    waitpid(srv, &status, 0);
    if (seen < lines) {
        fprintf(stderr, "bench: only %ld of %ld lines came back\n", seen,
                lines);
        exit(1);
    }
    return t;
}

/* The floor server: it reads lines and writes one fixed reply per line
** -- no parsing -- a buffer at a time (read, memchr, one write of all
** the replies), under rcp's write policy (transport.c invariant 4: the
** replies go out when the input runs dry, or at 64 KiB).  The pipe's own
** limit for a server that answers every line.  The reply is a ping's
** answer with a six-digit id, the length of the bench's average. */
static const char floor_reply[] = "{\"jsonrpc\":\"2.0\",\"id\":500000,"
                                  "\"result\":{}}\n";

static int input_waiting(void)
{
    struct pollfd p;
    p.fd = 0;
    p.events = POLLIN;
    p.revents = 0;
    return poll(&p, 1, 0) > 0;
}

static int floor_server(void)
{
    static char in[1 << 16], out[(1 << 16) + 64];
    size_t nout = 0;
    for (;;) {
        ssize_t n = read(0, in, sizeof in), i;
        if (n <= 0)
            break;
        for (i = 0; i < n; i++) {
            const char *nl = memchr(in + i, '\n', (size_t)(n - i));
            if (!nl)
                break;
            i = nl - in;
            memcpy(out + nout, floor_reply, sizeof floor_reply - 1);
            if ((nout += sizeof floor_reply - 1) >= 1 << 16) {
                if (write(1, out, nout) < 0)
                    return 1;
                nout = 0;
            }
        }
        if (nout && !input_waiting()) {
            if (write(1, out, nout) < 0)
                return 1;
            nout = 0;
        }
    }
    if (nout && write(1, out, nout) < 0)
        return 1;
    return 0;
}

static double lone_ping_us(const char *bin)
{
    char *argv[3];
    int to, from, status, i;
    pid_t srv;
    double lat[201];
    char buf[256];
    argv[0] = (char *)bin;
    argv[1] = "serve";
    argv[2] = NULL;
    srv = bench_spawn(argv, &to, &from, NULL);
    for (i = 0; i < 201; i++) {
        static const char ping[] =
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        double t0 = now_s();
        ssize_t n = 0;
        if (write(to, ping, sizeof ping - 1) < 0)
            exit(1);
        while (n == 0 || buf[n - 1] != '\n') {
            ssize_t k = read(from, buf + n, sizeof buf - (size_t)n);
            if (k <= 0)
                exit(1);
            n += k;
        }
        lat[i] = (now_s() - t0) * 1e6;
    }
    close(to);
    close(from);
    waitpid(srv, &status, 0);
    return median(lat, 201);
}

/* A deterministic synthetic corpus: Zipf-like words from a fixed
** vocabulary (xorshift), ~100 words a document. */
static uint64_t rng = 88172645463325252u;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void word(char *out, size_t *len)
{
    static const char cons[] = "bcdfghklmnprstvz", vow[] = "aeiou";
    uint64_t r = next_rand();
    unsigned rank = (unsigned)(1.0 / ((double)(r % 100000) / 100000.0
                                      + 1e-5));   /* ~Zipf */
    int syl = 2 + rank % 3, i;
    for (i = 0; i < syl; i++) {
        out[(*len)++] = cons[(rank >> (i * 4)) & 15];
        out[(*len)++] = vow[(rank / 16 + i) % 5];
    }
}

/* Before document d of index/add calls of per_call documents: the
** previous call's end and the next one's head, or a comma; buf's new
** length. */
static size_t next_doc(char *buf, size_t n, long d, long per_call)
{
    if (d % per_call == 0)
        return n + (size_t)sprintf(buf + n, "%s{\"jsonrpc\":\"2.0\",\"id\":"
                                   "%ld,\"method\":\"index/add\",\"params\":"
                                   "{\"documents\":[", d ? "]}}\n" : "", d);
    buf[n++] = ',';
    return n;
}

static char *make_adds(long ndocs, long per_call, size_t *len)
{
    size_t cap = (size_t)ndocs * 1100 + 4096, n = 0;
    char *buf = malloc(cap);
    long d, w;
    if (!buf)
        exit(1);
    for (d = 0; d < ndocs; d++) {
        n = next_doc(buf, n, d, per_call);
        n += (size_t)sprintf(buf + n, "{\"id\":\"d%ld\",\"text\":\"", d);
        for (w = 0; w < 100; w++) {
            if (w)
                buf[n++] = ' ';
            word(buf, &n);
        }
        buf[n++] = '"';
        buf[n++] = '}';
    }
    n += (size_t)sprintf(buf + n, "]}}\n");
    *len = n;
    return buf;
}

/* n retrieve requests in mode with filter (a JSON object or "") */
static char *make_filtered(long n, const char *mode, const char *filter,
                           size_t *len)
{
    size_t cap = (size_t)n * (260 + strlen(filter)), k = 0;
    char *buf = malloc(cap);
    long i, w;
    if (!buf)
        exit(1);
    for (i = 0; i < n; i++) {
        k += (size_t)sprintf(buf + k, "{\"jsonrpc\":\"2.0\",\"id\":%ld,"
                             "\"method\":\"retrieve\",\"params\":{"
                             "\"query\":\"", i);
        for (w = 0; w < 2 + i % 4; w++) {
            if (w)
                buf[k++] = ' ';
            word(buf, &k);
        }
        k += (size_t)sprintf(buf + k, "\",\"k\":10,\"mode\":\"%s\","
                             "\"includeText\":false%s%s}}\n", mode,
                             *filter ? ",\"filter\":" : "", filter);
    }
    *len = k;
    return buf;
}

/* n unfiltered retrieve requests in mode */
static char *make_queries(long n, const char *mode, size_t *len)
{
    return make_filtered(n, mode, "", len);
}

/* Write buf from a child (so the pipes never deadlock) and count `lines`
** answers; returns the seconds it took. */
static double exchange(int to, int from, const char *buf, size_t len,
                       long lines)
{
    static char in[1 << 16];
    long seen = 0;
    double t0 = now_s();
    int status;
    pid_t wr = fork();
    if (wr == 0) {
        size_t off;
        close(from);
        for (off = 0; off < len;) {
            ssize_t n = write(to, buf + off, len - off);
            if (n <= 0)
                _exit(1);
            off += (size_t)n;
        }
        _exit(0);
    }
    while (seen < lines) {
        ssize_t n = read(from, in, sizeof in), i;
        if (n <= 0)
            break;
        for (i = 0; i < n; i++)
            seen += in[i] == '\n';
    }
    waitpid(wr, &status, 0);
    if (seen < lines) {
        fprintf(stderr, "bench: only %ld of %ld lines came back\n", seen,
                lines);
        exit(1);
    }
    return now_s() - t0;
}

/* index/add calls of per_call documents, each with a meta of the three
** declared fields of bench_filters: year (70 values), lang (4), tags (2
** of 20). */
static char *make_meta_adds(long ndocs, long per_call, size_t *len)
{
    static const char *const langs[] = { "en", "de", "fr", "ja" };
    size_t cap = (size_t)ndocs * 1200 + 4096, n = 0;
    char *buf = malloc(cap);
    long d, w;
    if (!buf)
        exit(1);
    for (d = 0; d < ndocs; d++) {
        n = next_doc(buf, n, d, per_call);
        n += (size_t)sprintf(buf + n, "{\"id\":\"d%ld\",\"meta\":{\"year\":%ld,"
                             "\"lang\":\"%s\",\"tags\":[\"t%u\",\"t%u\"]},"
                             "\"text\":\"", d, 1950 + d % 70, langs[d % 4],
                             (unsigned)(next_rand() % 20),
                             (unsigned)(next_rand() % 20));
        for (w = 0; w < 100; w++) {
            if (w)
                buf[n++] = ' ';
            word(buf, &n);
        }
        buf[n++] = '"';
        buf[n++] = '}';
    }
    n += (size_t)sprintf(buf + n, "]}}\n");
    *len = n;
    return buf;
}


static void bench_filters(const char *bin)
{
    static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":\"i\",\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":1}}\n";
    static const char *const modes[] = { "dense", "sparse" };
    static const char *const names[] = { "unfiltered", "year eq (1/70)",
        "lang ne (3/4)", "and(in, gte)" };
    static const char *const filters[] = { "",
        "{\"field\":\"year\",\"op\":\"eq\",\"value\":1999}",
        "{\"field\":\"lang\",\"op\":\"ne\",\"value\":\"de\"}",
        ("{\"and\":[{\"field\":\"tags\",\"op\":\"in\",\"value\":[\"t1\",\"t2\"]},"
         "{\"field\":\"year\",\"op\":\"gte\",\"value\":2000}]}") };
    const long ndocs = 100000, per_call = 1000, nq = 40;
    char *argv[9], *adds, *q;
    size_t alen, qlen;
    double add_s, t[3];
    int to, from, status, m, f, r;
    pid_t srv;
    argv[0] = (char *)bin;
    argv[1] = "serve";
    argv[2] = "--field";
    argv[3] = "year:int";
    argv[4] = "--field";
    argv[5] = "lang:keyword";
    argv[6] = "--field";
    argv[7] = "tags:keyword";
    argv[8] = NULL;
    srv = bench_spawn(argv, &to, &from, NULL);
    adds = make_meta_adds(ndocs, per_call, &alen);
    exchange(to, from, init, sizeof init - 1, 1);
    add_s = exchange(to, from, adds, alen, ndocs / per_call);
    printf("§8 filters over stdio, %ld documents of 100 words with a meta "
           "of 3 declared fields (median of 3 runs of %ld requests):\n",
           ndocs, nq);
    printf("  index/add      %9.0f documents/s\n", ndocs / add_s);
    for (m = 0; m < 2; m++)
        for (f = 0; f < 4; f++) {
            q = make_filtered(nq, modes[m], filters[f], &qlen);
            for (r = 0; r < 3; r++)
                t[r] = exchange(to, from, q, qlen, nq);
            printf("  %-6s %-16s %8.2f ms each\n", modes[m], names[f],
                   median(t, 3) / nq * 1e3);
            free(q);
        }
    close(to);
    close(from);
    waitpid(srv, &status, 0);
    free(adds);
}

/* A server of `bin` holding the bench's corpus: *to, *from its pipes. */
static pid_t loaded_server(const char *bin, const char *adds, size_t alen,
                           long calls, int *to, int *from, double *add_s)
{
    static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":\"i\",\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":1}}\n";
    char *argv[3];
    pid_t srv;
    argv[0] = (char *)bin;
    argv[1] = "serve";
    argv[2] = NULL;
    srv = bench_spawn(argv, to, from, NULL);
    exchange(*to, *from, init, sizeof init - 1, 1);
    *add_s = exchange(*to, *from, adds, alen, calls);
    return srv;
}

/* End to end over stdio.  With RCP_BEFORE naming a second binary (an
** older build, say), both serve the same corpus and every run of every
** mode alternates between them, so the ratio is paired. */
static void bench_retrieve(const char *bin)
{
    static const char *const modes[] = { "sparse", "dense", "hybrid" };
    const long ndocs = 100000, per_call = 1000, nq = 300;
    const char *bins[2];
    char *adds, *q;
    size_t alen, qlen, plen = 0;
    double add_s[2], t[2][3], med[2];
    int to[2], from[2], status, m, r, b, nb = 1;
    long i;
    pid_t srv[2];
    char *pings = malloc((size_t)nq * 64);
    if (!pings)
        exit(1);
    bins[0] = bin;
    if (getenv("RCP_BEFORE") && *getenv("RCP_BEFORE"))
        bins[nb++] = getenv("RCP_BEFORE");
    for (i = 0; i < nq; i++)
        plen += (size_t)sprintf(pings + plen, "{\"jsonrpc\":\"2.0\",\"id\":"
                                "%ld,\"method\":\"ping\"}\n", i);
    adds = make_adds(ndocs, per_call, &alen);
    for (b = 0; b < nb; b++)
        srv[b] = loaded_server(bins[b], adds, alen, ndocs / per_call,
                               &to[b], &from[b], &add_s[b]);
    printf("end to end over stdio, %ld documents of 100 words "
           "(median of 3 runs of %ld requests%s):\n", ndocs, nq,
           nb > 1 ? "; each run alternates this build and RCP_BEFORE" : "");
    for (b = 0; b < nb; b++)
        printf("  index/add      %9.0f documents/s (%.1f MB/s of JSON, calls "
               "of %ld)%s\n", ndocs / add_s[b], alen / add_s[b] / 1e6,
               per_call, b ? "  RCP_BEFORE" : "");
    for (m = 0; m < 3; m++) {
        q = make_queries(nq, modes[m], &qlen);
        for (r = 0; r < 3; r++)
            for (b = 0; b < nb; b++)
                t[b][r] = exchange(to[b], from[b], q, qlen, nq);
        for (b = 0; b < nb; b++)
            med[b] = median(t[b], 3);
        printf("  retrieve %-6s %9.0f requests/s  %8.1f us each", modes[m],
               nq / med[0], med[0] / nq * 1e6);
        if (nb > 1)
            printf("   RCP_BEFORE %6.0f requests/s  ratio %.2f", nq / med[1],
                   med[1] / med[0]);
        printf("\n");
        free(q);
    }
    for (r = 0; r < 3; r++)
        t[0][r] = exchange(to[0], from[0], pings, plen, nq);
    printf("  ping (limit)   %9.0f requests/s  (same server, same run)\n",
           nq / median(t[0], 3));
    for (b = 0; b < nb; b++) {
        close(to[b]);
        close(from[b]);
        waitpid(srv[b], &status, 0);
    }
    free(adds);
    free(pings);
}

static void bench_long_line(const char *bin)
{
    const size_t pad = (size_t)64 << 20;
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                               "\"ping\",\"pad\":\"";
    char *line = malloc(pad + 64), *srv_argv[5], *cat_argv[2];
    double t[3], c[3];
    size_t n = sizeof head - 1;
    int r;
    if (!line)
        exit(1);
    memcpy(line, head, n);
    memset(line + n, 'x', pad);
    n += pad;
    memcpy(line + n, "\"}\n", 3);
    n += 3;
    srv_argv[0] = (char *)bin;
    srv_argv[1] = "serve";
    srv_argv[2] = "--max-line";
    srv_argv[3] = "134217728";
    srv_argv[4] = NULL;
    cat_argv[0] = "cat";
    cat_argv[1] = NULL;
    for (r = 0; r < 3; r++) {
        t[r] = pump(srv_argv, line, n, 1);
        c[r] = pump(cat_argv, line, n, 1);
    }
    printf("one 64 MiB line through a pipe (median of 3):\n");
    printf("  rcp serve   %8.1f ms  %7.1f MB/s\n", median(t, 3) * 1e3,
           n / median(t, 3) / 1e6);
    printf("  cat (limit) %8.1f ms  %7.1f MB/s   ratio %.2f\n",
           median(c, 3) * 1e3, n / median(c, 3) / 1e6,
           median(c, 3) / median(t, 3));
    free(line);
}

/* n upserts of the ids c0..c9 from write `from` on, ten to a call.  Each
** text is new: 30 words of a fixed vocabulary of 64 and a revision number
** no other write uses (so a term is born and dies with every write); the
** vocabulary is bounded so that what grows is what writes leave behind,
** not the words a larger corpus would bring. */
static char *make_churn(long from, long n, size_t *len)
{
    static const char *const vocab[] = { "shock", "wave", "layer", "flow",
        "plate", "wing", "heat", "cone", "jet", "nozzle", "drag", "lift",
        "boundary", "laminar", "turbulent", "pressure", "gradient", "mach",
        "number", "subsonic", "supersonic", "hypersonic", "body", "nose",
        "blunt", "slender", "delta", "swept", "aspect", "ratio", "panel",
        "flutter", "vortex", "wake", "separation", "transition", "skin",
        "friction", "stagnation", "point", "temperature", "recovery",
        "factor", "injection", "suction", "porous", "wall", "cylinder",
        "sphere", "inlet", "diffuser", "channel", "tube", "expansion",
        "compression", "corner", "ramp", "model", "tunnel", "test",
        "theory", "experiment", "solution", "equation" };
    size_t cap = (size_t)n * 400 + 4096, k = 0;
    char *buf = malloc(cap);
    long i, w;
    if (!buf)
        exit(1);
    for (i = from; i < from + n; i++) {
        k += (size_t)sprintf(buf + k, "%s{\"id\":\"c%ld\",\"text\":\"rev%ld",
                             (i - from) % 10 ? "," : (i > from ? "]}}\n{"
                             "\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                             "\"index/add\",\"params\":{\"documents\":["
                             : "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                             "\"index/add\",\"params\":{\"documents\":["),
                             i % 10, i);
        for (w = 0; w < 30; w++)
            k += (size_t)sprintf(buf + k, " %s", vocab[next_rand() % 64]);
        k += (size_t)sprintf(buf + k, "\"}");
    }
    k += (size_t)sprintf(buf + k, "]}}\n");
    *len = k;
    return buf;
}

/* Dense retrieve: seconds per request, median of 3 runs of nq. */
static double dense_latency(int to, int from, long nq)
{
    size_t qlen;
    char *q = make_queries(nq, "dense", &qlen);
    double t[3];
    int r;
    for (r = 0; r < 3; r++)
        t[r] = exchange(to, from, q, qlen, nq);
    free(q);
    return median(t, 3) / nq;
}

/* Upserts i..end in rounds of 1000, each round answered before the next
** is sent: a client that waits for its acknowledgements, so the server's
** read-ahead (up to --max-line) stays small and the figures are the
** engine's.  Returns the seconds it took. */
static double churn_rounds(int to, int from, long i, long end)
{
    char *buf;
    size_t len;
    double t = 0;
    for (; i < end; i += 1000) {
        buf = make_churn(i, 1000, &len);
        t += exchange(to, from, buf, len, 100);
        free(buf);
    }
    return t;
}

/* The start is taken once the snapshot window (the last 1024 versions,
** §7.7.1) is full: what it keeps is a fixed amount, there by design;
** what must not grow is everything after. */
static void bench_churn(const char *bin)
{
    static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":\"i\",\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":1}}\n";
    const long upserts = 40000, window = 2000, nq = 200;
    char *argv[3], *buf;
    size_t len;
    double rss10, rss0, rss1, lat10, lat0, lat1, t;
    int to, from, status;
    pid_t srv;
    argv[0] = (char *)bin;
    argv[1] = "serve";
    argv[2] = NULL;
    srv = bench_spawn(argv, &to, &from, NULL);
    exchange(to, from, init, sizeof init - 1, 1);
    buf = make_churn(0, 10, &len);
    exchange(to, from, buf, len, 1);
    free(buf);
    lat10 = dense_latency(to, from, nq);
    rss10 = rss_mib(srv);
    t = churn_rounds(to, from, 10, 10 + window);
    lat0 = dense_latency(to, from, nq);
    rss0 = rss_mib(srv);
    t += churn_rounds(to, from, 10 + window, 10 + upserts);
    rss1 = rss_mib(srv);
    lat1 = dense_latency(to, from, nq);
    printf("upsert churn over stdio, 10 ids upserted %ld times (calls of "
           "10, %.0f upserts/s); start = after %ld upserts, when the "
           "1024-version snapshot window is full:\n", upserts, upserts / t,
           window);
    printf("  resident memory  10 documents %5.1f MB  start %5.1f MB  end "
           "%5.1f MB  end/start %.2f  (limit: within 2x of the start, "
           "%.1f MB)\n", rss10, rss0, rss1, rss1 / rss0, 2 * rss0);
    printf("  dense retrieve   10 documents %5.0f us  start %5.0f us  end "
           "%5.0f us  end/start %.2f  (same server, same run)\n",
           lat10 * 1e6, lat0 * 1e6, lat1 * 1e6, lat1 / lat0);
    close(to);
    close(from);
    waitpid(srv, &status, 0);
}

/* MARK: bulk load (issue 17): `rcp serve --corpus` as a user runs it */

/* The bench's corpus (make_adds' documents, the same words) as JSON
** Lines in a temporary file; *texts gets the texts alone, NUL-separated,
** for the in-process loaders. */
static char *write_corpus(long ndocs, char **texts, size_t *tlen)
{
    static char path[] = "/tmp/rcp-bench-corpus-XXXXXX";
    size_t cap = (size_t)ndocs * 1100 + 64, n = 0, k;
    char *buf = malloc(cap), *t = malloc(cap);
    long d, w;
    int fd = mkstemp(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!buf || !t || !f)
        exit(1);
    rng = 88172645463325252u;       /* make_adds' words */
    for (d = 0; d < ndocs; d++) {
        k = 0;
        for (w = 0; w < 100; w++) {
            if (w)
                buf[k++] = ' ';
            word(buf, &k);
        }
        fprintf(f, "{\"id\":\"d%ld\",\"text\":\"%.*s\"}\n", d, (int)k, buf);
        memcpy(t + n, buf, k);
        n += k;
        t[n++] = '\0';
    }
    if (fclose(f) != 0)
        exit(1);
    free(buf);
    *texts = t;
    *tlen = n;
    return path;
}

/* Seconds for `bin serve --corpus path` to load and exit (stdin is at
** EOF at once: §7.12, EOF is a shutdown). */
static double corpus_serve(const char *bin, const char *path)
{
    int devnull = open("/dev/null", O_RDWR), status;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(bin, bin, "serve", "--corpus", path, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    close(devnull);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench: %s serve --corpus failed\n", bin);
        exit(1);
    }
    return now_s() - t0;
}

/* The engine alone: rcp_model_add of the same texts, in process. */
static double corpus_engine(const char *texts, long ndocs)
{
    char err[128], id[32];
    rcp_model *m = rcp_model_new(NULL, err, sizeof err);
    const char *t = texts;
    double t0 = now_s(), secs;
    long d;
    if (!m)
        exit(1);
    for (d = 0; d < ndocs; d++) {
        size_t len = strlen(t);
        int n = sprintf(id, "d%ld", d);
        if (rcp_model_add(m, id, (size_t)n, t, len, NULL, 0) != 0)
            exit(1);
        t += len + 1;
    }
    secs = now_s() - t0;
    rcp_model_free(m);
    return secs;
}

#ifdef RCP_ANCHOR_SQLITE
#include <sqlite3.h>
/* SQLite FTS5 loading the same texts into an in-memory table in one
** transaction (an inverted index only: no vectors, no JSON). */
static double corpus_fts5(const char *texts, long ndocs)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    const char *t = texts;
    char id[32];
    double t0 = now_s();
    long d;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK
        || sqlite3_exec(db, "CREATE VIRTUAL TABLE docs USING fts5(id "
                        "UNINDEXED, text); BEGIN", NULL, NULL, NULL)
        || sqlite3_prepare_v2(db, "INSERT INTO docs VALUES (?, ?)", -1, &st,
                              NULL)) {
        fprintf(stderr, "bench: sqlite: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    for (d = 0; d < ndocs; d++) {
        size_t len = strlen(t);
        int n = sprintf(id, "d%ld", d);
        sqlite3_bind_text(st, 1, id, n, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, t, (int)len, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            exit(1);
        sqlite3_reset(st);
        t += len + 1;
    }
    sqlite3_finalize(st);
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        exit(1);
    sqlite3_close(db);
    return now_s() - t0;
}
#endif

static void bench_corpus(const char *bin)
{
    const long ndocs = 100000;
    const char *before = getenv("RCP_BEFORE");
    size_t tlen;
    char *texts, *path = write_corpus(ndocs, &texts, &tlen);
    double t[4][RUNS], med[4];
    int r, w, nb = before && *before ? 1 : 0;
    memset(t, 0, sizeof t);                 /* the rows not measured */
    for (r = 0; r < RUNS; r++) {
        t[0][r] = corpus_serve(bin, path);
        t[1][r] = corpus_engine(texts, ndocs);
#ifdef RCP_ANCHOR_SQLITE
        t[2][r] = corpus_fts5(texts, ndocs);
#endif
        if (nb)
            t[3][r] = corpus_serve(before, path);
    }
    for (w = 0; w < 4; w++)
        med[w] = median(t[w], RUNS);
    printf("bulk load, the %ld documents above as JSON Lines (%.1f MB; "
           "medians of %d interleaved runs):\n", ndocs,
           (double)(tlen + (size_t)ndocs * 24) / 1e6, RUNS);
    printf("  rcp serve --corpus  %6.2f s wall  %7.0f docs/s   (aim: 2x "
           "FTS5)\n", med[0], ndocs / med[0]);
    printf("  engine alone        %6.2f s       %7.0f docs/s   "
           "(rcp_model_add in process, no JSON)\n", med[1], ndocs / med[1]);
#ifdef RCP_ANCHOR_SQLITE
    printf("  SQLite FTS5         %6.2f s       %7.0f docs/s   (in memory, "
           "one transaction, no JSON; --corpus is %.2fx it)\n", med[2],
           ndocs / med[2], med[2] / med[0]);
#else
    printf("  SQLite FTS5: not measured (bench-only anchor: install "
           "libsqlite3-dev)\n");
#endif
    if (nb)
        printf("  RCP_BEFORE --corpus %6.2f s wall  %7.0f docs/s   (this "
               "build / it: %.2f)\n", med[3], ndocs / med[3],
               med[3] / med[0]);
    unlink(path);
    free(texts);
}

/* Pipelined ping over stdio: rcp serve, the floor server (this program
** as `bench_serve floor`), cat and, with RCP_BEFORE, an older build, each
** run in turn RUNS times, so the medians and ratios are of one stretch
** of this machine's time. */
static void bench_ping(const char *bin, const char *self)
{
    const long n = 1000000;
    size_t cap = (size_t)n * 64, len = 0;
    char *stream = malloc(cap), *argv[4][3];
    const char *before = getenv("RCP_BEFORE");
    double t[4][RUNS], med[4];
    long i;
    int r, w, nw = before && *before ? 4 : 3;
    if (!stream)
        exit(1);
    for (i = 0; i < n; i++)
        len += (size_t)sprintf(stream + len, "{\"jsonrpc\":\"2.0\",\"id\":%ld,"
                               "\"method\":\"ping\"}\n", i);
    argv[0][0] = (char *)bin;
    argv[0][1] = "serve";
    argv[1][0] = (char *)self;
    argv[1][1] = "floor";
    argv[2][0] = "cat";
    argv[2][1] = NULL;
    argv[3][0] = (char *)before;
    argv[3][1] = "serve";
    for (w = 0; w < 4; w++)
        argv[w][2] = NULL;
    for (r = 0; r < RUNS; r++)
        for (w = 0; w < nw; w++)
            t[w][r] = pump(argv[w], stream, len, n);
    for (w = 0; w < nw; w++)
        med[w] = median(t[w], RUNS);
    printf("stdio ping, pipelined (%ld requests; a writer thread and a "
           "reader counting answers; medians of %d interleaved runs):\n",
           n, RUNS);
    printf("  rcp serve    %10.0f requests/s  %7.1f MB/s in   %.2f of the "
           "floor  (aim: 1.5 M/s and 0.40 of the floor)\n", n / med[0],
           len / med[0] / 1e6, med[1] / med[0]);
    if (nw > 3)
        printf("  RCP_BEFORE   %10.0f requests/s  %7.1f MB/s in   %.2f of the "
               "floor  (this build / it: %.2f)\n", n / med[3],
               len / med[3] / 1e6, med[1] / med[3], med[3] / med[0]);
    printf("  floor server %10.0f requests/s  (reads lines, writes a fixed "
           "reply: no parsing)\n", n / med[1]);
    printf("  cat          %10.0f lines/s     %7.1f MB/s   (bytes back "
           "unchanged, no reply per line)\n", n / med[2], len / med[2] / 1e6);
    free(stream);
}

/* bench_serve [ping | retrieve | filters | corpus | churn]: everything, or those figures
** alone; `bench_serve floor` is the floor server bench_ping runs. */
int main(int argc, char **argv)
{
    const char *bin = getenv("RCP_BIN") ? getenv("RCP_BIN") : "./rcp";
    const char *only = argc > 1 ? argv[1] : "";
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(only, "floor") == 0)
        return floor_server();
    if (!*only || strcmp(only, "ping") == 0) {
        bench_ping(bin, argv[0]);
        printf("stdio ping, lone request round trip: %.1f us median of "
               "201\n", lone_ping_us(bin));
    }
    if (!*only)
        bench_long_line(bin);
    if (!*only || strcmp(only, "retrieve") == 0)
        bench_retrieve(bin);
    if (!*only || strcmp(only, "filters") == 0)
        bench_filters(bin);
    if (!*only || strcmp(only, "corpus") == 0)
        bench_corpus(bin);
    if (!*only || strcmp(only, "churn") == 0)
        bench_churn(bin);
    return 0;
}
