/*
** bench_load.c -- a 1,000,000-message mixed, pipelined load through
** `rcp serve` (issue 13): every method the server offers, batches,
** notifications and invalid frames of every kind, written by a child
** process as fast as the pipe takes them while this one reads.
**
** Prints and checks:
**   - every request answered exactly once, by its id (§4.7, §11): none
**     missing, none twice, none with an id we never sent; a line that
**     cannot be parsed is answered once with id null (§5.1, -32700) and
**     a notification never (§4.5);
**   - the outcome each message must have: a result for the valid ones,
**     an error for the invalid ones (per kind, the count that differed);
**   - requests/s over the whole run;
**   - the server's resident memory after each tenth of the answers and
**     at its peak (getrusage of the reaped child), beside the limit: 2x
**     the first tenth's figure -- the load upserts and deletes a
**     fixed set of 500 ids over a bounded vocabulary (numbers mod 997),
**     so nothing that stays should grow.
** Exit status 1 when an answer is missing, doubled, unknown or of the
** wrong outcome, so `make bench` stops on it; memory over its limit is
** printed as OVER (a finding to fix, not a broken benchmark).
*/
#include "rcp.h"
#include "benchutil.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MESSAGES 1000000L

/* The kinds of message, in the order of the cycle the writer repeats:
** the valid ones first, then the invalid ones (each with the error it
** must get), batches and notifications. */
enum { K_PING, K_INFO, K_EMBED, K_SPARSE, K_MULTI, K_RERANK, K_SPARSE_Q,
       K_DENSE_Q, K_HYBRID_Q, K_ADD, K_DELETE, K_BATCH, K_CANCEL,
       K_PARSE, K_UNKNOWN, K_PARAMS, K_UNADVERTISED, K_ENVELOPE, NKINDS };
static const char *const kind_name[NKINDS] = {
    "ping", "info", "embed", "embed/sparse", "embed/multi", "rerank",
    "retrieve sparse+filter", "retrieve dense", "retrieve hybrid",
    "index/add", "index/delete", "batch of 3", "notification",
    "unparseable", "unknown method", "invalid params", "unadvertised",
    "bad envelope"
};
/* The cycle: cheap methods more often than the engine's heavy ones. */
static const int cycle[] = {
    K_PING, K_INFO, K_PING, K_EMBED, K_PING, K_SPARSE, K_PING, K_ADD,
    K_SPARSE_Q, K_PING, K_MULTI, K_BATCH, K_DELETE, K_PING, K_RERANK,
    K_CANCEL, K_PING, K_DENSE_Q, K_PARSE, K_PING, K_UNKNOWN, K_ADD,
    K_PARAMS, K_PING, K_HYBRID_Q, K_UNADVERTISED, K_PING, K_ENVELOPE,
    K_INFO, K_SPARSE_Q
};
#define NCYCLE ((long)(sizeof cycle / sizeof *cycle))

/* Per id: the kind of message that carried it (its expected outcome),
** and how many answers came. */
static unsigned char *KIND, *SEEN;
static long NIDS;

static int must_fail(int k)
{
    return k >= K_UNKNOWN;
}

/* Message i (ids from *next on) as one line into out; the ids it uses
** are recorded.  Returns the line's length. */
static int message(long i, long *next, char *out, size_t cap)
{
    int k = cycle[i % NCYCLE], n;
    long id = *next;
#define HEAD "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":"
    switch (k) {
    case K_PING: n = snprintf(out, cap, HEAD "\"ping\"}\n", id); break;
    case K_INFO: n = snprintf(out, cap, HEAD "\"info\"}\n", id); break;
    case K_EMBED:
        n = snprintf(out, cap, HEAD "\"embed\",\"params\":{\"inputs\":["
                     "\"load text %ld\"],\"encoding\":\"f32-base64\"}}\n",
                     id, id % 997);
        break;
    case K_SPARSE:
        n = snprintf(out, cap, HEAD "\"embed/sparse\",\"params\":{\"inputs\""
                     ":[\"sparse load %ld\"]}}\n", id, id % 997);
        break;
    case K_MULTI:
        n = snprintf(out, cap, HEAD "\"embed/multi\",\"params\":{\"inputs\":"
                     "[\"multi load\"],\"encoding\":\"f32-base64\"}}\n", id);
        break;
    case K_RERANK:
        n = snprintf(out, cap, HEAD "\"rerank\",\"params\":{\"query\":"
                     "\"load\",\"passages\":[\"a load\",\"no\",\"load "
                     "load\"]}}\n", id);
        break;
    case K_SPARSE_Q:
        n = snprintf(out, cap, HEAD "\"retrieve\",\"params\":{\"query\":"
                     "\"load document\",\"k\":5,\"mode\":\"sparse\","
                     "\"filter\":{\"field\":\"year\",\"op\":\"gte\","
                     "\"value\":%ld}}}\n", id, 1990 + id % 40);
        break;
    case K_DENSE_Q:
    case K_HYBRID_Q:
        n = snprintf(out, cap, HEAD "\"retrieve\",\"params\":{\"query\":"
                     "\"load words %ld\",\"k\":3,\"mode\":\"%s\"}}\n", id,
                     id % 97, k == K_DENSE_Q ? "dense" : "hybrid");
        break;
    case K_ADD:
        n = snprintf(out, cap, HEAD "\"index/add\",\"params\":{\"documents\""
                     ":[{\"id\":\"d%ld\",\"text\":\"load document %ld words "
                     "of revision %ld\",\"meta\":{\"year\":%ld}}]}}\n", id,
                     id % 500, id % 97, id % 997, 1990 + id % 40);
        break;
    case K_DELETE:
        n = snprintf(out, cap, HEAD "\"index/delete\",\"params\":{\"ids\":"
                     "[\"d%ld\"]}}\n", id, (id + 250) % 500);
        break;
    case K_BATCH:
        n = snprintf(out, cap, "[" HEAD "\"ping\"}," HEAD "\"retrieve\","
                     "\"params\":{\"query\":\"load\",\"k\":2}},{\"jsonrpc\":"
                     "\"2.0\",\"method\":\"notifications/cancel\",\"params\":"
                     "{\"id\":%ld}}," HEAD "\"no/such\"}]\n", id, id + 1,
                     id - 1, id + 2);
        KIND[id] = K_PING;
        KIND[id + 1] = K_SPARSE_Q;
        KIND[id + 2] = K_UNKNOWN;
        *next += 3;
        return n;
    case K_CANCEL:
        n = snprintf(out, cap, "{\"jsonrpc\":\"2.0\",\"method\":"
                     "\"notifications/cancel\",\"params\":{\"id\":%ld}}\n",
                     id - 1);
        return n;                      /* no id: never answered */
    case K_PARSE:
        n = snprintf(out, cap, HEAD "\"ping\",\"params\":{\"x\":}\n", id);
        return n;                      /* answered once, id null */
    case K_UNKNOWN:
        n = snprintf(out, cap, HEAD "\"no/such\"}\n", id);
        break;
    case K_PARAMS:
        n = snprintf(out, cap, HEAD "\"retrieve\",\"params\":{\"query\":"
                     "\"x\",\"k\":\"ten\"}}\n", id);
        break;
    case K_UNADVERTISED:
        n = snprintf(out, cap, HEAD "\"query/transform\",\"params\":{"
                     "\"query\":\"x\"}}\n", id);
        break;
    default:
        n = snprintf(out, cap, "{\"jsonrpc\":\"1.0\",\"id\":%ld,\"method\":"
                     "\"ping\"}\n", id);
        break;
    }
#undef HEAD
    KIND[id] = (unsigned char)k;
    (*next)++;
    return n;
}

/* The writer (a child: the pipes never deadlock): initialize, then every
** message, in large writes. */
static void writer(int fd)
{
    static char buf[1 << 16];
    size_t len = 0;
    long i, next = 1;
    len = (size_t)sprintf(buf, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
                          "\"initialize\",\"params\":{\"protocolVersion\":"
                          "1}}\n");
    for (i = 0; i < MESSAGES; i++) {
        if (sizeof buf - len < 1024) {
            if (write(fd, buf, len) != (ssize_t)len)
                _exit(1);
            len = 0;
        }
        len += (size_t)message(i, &next, buf + len, sizeof buf - len);
    }
    if (write(fd, buf, len) != (ssize_t)len)
        _exit(1);
    close(fd);
    _exit(0);
}

typedef struct tally {
    long answers, nulls, unknown, twice, wrong[NKINDS], notifications;
} tally;

/* One response object: its id is ours, answered once, as its kind must
** be (a result or an error). */
static void response(tally *t, const rcp_json *v)
{
    const rcp_json *id = rcp_json_get(v, "id");
    int64_t n;
    if (!id || rcp_json_get(v, "method")) {
        t->notifications++;
        return;
    }
    if (id->type == RCP_JSON_NULL) {
        t->nulls++;
        return;
    }
    if (!rcp_json_int(id, &n) || n < 1 || n >= NIDS) {
        t->unknown++;
        return;
    }
    t->answers++;
    if (SEEN[n]++) {
        t->twice++;
        return;
    }
    if ((rcp_json_get(v, "error") != NULL) != must_fail(KIND[n]))
        t->wrong[KIND[n]]++;
}

int main(void)
{
    const char *bin = getenv("RCP_BIN") ? getenv("RCP_BIN") : "./rcp";
    char *argv[] = { (char *)bin, "serve", "--field", "year:int", NULL };
    int to[2], from[2], st, k, bad = 0;
    pid_t srv, wr;
    rcp_buf in;
    rcp_arena a;
    tally t;
    long sent_ids, expected_nulls = 0, notes = 0, i, lines = 0;
    double t0, secs, rss[10], peak, limit;
    int tenth = 0;
    struct rusage ru;
    char scratch[1024];

    signal(SIGPIPE, SIG_IGN);
    /* the ids the writer will use, counted the way it counts them */
    NIDS = 1;
    KIND = calloc((size_t)MESSAGES * 3 + 8, 1);
    SEEN = calloc((size_t)MESSAGES * 3 + 8, 1);
    if (!KIND || !SEEN)
        return 1;
    for (i = 0, sent_ids = 1; i < MESSAGES; i++) {
        int kk = cycle[i % NCYCLE];
        expected_nulls += kk == K_PARSE;
        notes += kk == K_CANCEL || kk == K_BATCH;
        (void)message(i, &sent_ids, scratch, sizeof scratch);
    }
    NIDS = sent_ids;
    if (pipe(to) || pipe(from))
        return 1;
    srv = fork();
    if (srv == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    t0 = now_s();
    wr = fork();
    if (wr == 0) {
        close(from[0]);
        writer(to[1]);
    }
    close(to[1]);
    memset(&t, 0, sizeof t);
    rcp_buf_init(&in);
    rcp_arena_init(&a, 0);
    for (;;) {
        size_t pos = 0;
        ssize_t n;
        if (rcp_buf_reserve(&in, 1 << 16) != 0)
            return 1;
        n = read(from[0], in.data + in.len, in.cap - in.len);
        if (n <= 0)
            break;
        in.len += (size_t)n;
        for (;;) {
            char *nl = memchr(in.data + pos, '\n', in.len - pos);
            const rcp_json *v;
            size_t j;
            if (!nl)
                break;
            rcp_arena_reset(&a);
            v = rcp_json_parse(&a, in.data + pos, (size_t)(nl - in.data) - pos,
                               0, NULL);
            if (lines++ == 0) {
                /* the answer to initialize */
            } else if (v && v->type == RCP_JSON_ARRAY) {
                for (j = 0; j < v->n; j++)
                    response(&t, &v->kids[j]);
            } else if (v) {
                response(&t, v);
            } else {
                t.unknown++;
            }
            pos = (size_t)(nl - in.data) + 1;
            if (tenth < 10 && t.answers >= (NIDS - 1) / 10 * (tenth + 1))
                rss[tenth++] = rss_mib(srv);
        }
        memmove(in.data, in.data + pos, in.len - pos);
        in.len -= pos;
    }
    secs = now_s() - t0;
    while (tenth < 10)
        rss[tenth++] = -1;
    waitpid(wr, &st, 0);
    waitpid(srv, &st, 0);
    getrusage(RUSAGE_CHILDREN, &ru);
    peak = ru.ru_maxrss / 1024.0;
    limit = 2 * rss[0];

    printf("mixed pipelined load: %ld messages (%ld requests with an id, "
           "%ld unparseable, %ld notifications; %d kinds, every method)\n",
           MESSAGES, NIDS - 1, expected_nulls, notes, NKINDS);
    printf("  %10.0f messages/s, %.1f s\n", MESSAGES / secs, secs);
    printf("  answered once by id %ld of %ld; missing %ld, twice %ld, "
           "unknown id %ld; id null %ld of %ld\n", t.answers - t.twice,
           NIDS - 1, NIDS - 1 - (t.answers - t.twice), t.twice, t.unknown,
           t.nulls, expected_nulls);
    for (k = 0; k < NKINDS; k++)
        if (t.wrong[k]) {
            printf("  WRONG OUTCOME: %ld %s answered with%s an error\n",
                   t.wrong[k], kind_name[k], must_fail(k) ? "out" : "");
            bad = 1;
        }
    printf("  server RSS (MiB) after each tenth of the answers:");
    for (k = 0; k < 10; k++)
        printf(" %.1f", rss[k]);
    printf("\n  server peak RSS %.1f MiB; limit %.1f MiB (2x the first "
           "tenth's): %s\n", peak, limit, peak <= limit ? "ok"
           : "OVER (the input buffer keeps what it has handled while "
             "checkpoints read ahead: README, Reliability)");
    if (t.answers - t.twice != NIDS - 1 || t.twice || t.unknown
        || t.nulls != expected_nulls || !WIFEXITED(st)
        || WEXITSTATUS(st) != 0)
        bad = 1;
    rcp_buf_free(&in);
    rcp_arena_free(&a);
    free(KIND);
    free(SEEN);
    return bad;
}
