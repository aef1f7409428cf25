/*
** bench_federation.c -- the §16 aggregator (federation.c) on this
** machine: Cranfield's 1,400 abstracts split round-robin over 1, 2 and 4
** rcp shards behind `rcp serve --registry`, its 225 queries asked in turn.
**
** Prints, per shard count:
**   - the aggregator's query latency, p50 and p99 (k 10, hybrid);
**   - its overhead over the slowest shard: per query, the latency this
**     program sees minus the slowest shard's as the aggregator saw it
**     (usage.engines, send to answer), p50 and p99, the slowest shard's
**     p50 beside it, and the p50 of the shards' summed latencies (what
**     asking them in turn would cost: the fan-out is concurrent when the
**     aggregator is below it; with fewer cores than shards the shards
**     share them, which every shard's latency includes);
**   - recall@10 of the federated answer against one unsplit index over
**     the whole collection (the share of the unsplit top 10 the federated
**     top 10 holds), fused by rrf and by convex.
** The shards and the unsplit index are real `rcp serve` processes (RCP_BIN)
** on pipes; CRANFIELD names the collection's directory (default
** ../shared/data/cranfield).  Exits 0 with a note when it is missing.
*/
#include "rcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXQ 400

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    size_t i;
    qsort(v, n, sizeof *v, cmp_double);
    i = (size_t)(p * (double)(n - 1) + 0.5);
    return n ? v[i] : 0;
}

static const char *bin(void)
{
    const char *b = getenv("RCP_BIN");
    return b ? b : "./rcp";
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(s);
        return NULL;
    }
    s[n] = '\0';
    fclose(f);
    return s;
}

/* SMART records: ".I n" then fields ".X"; the text of the fields in keep
** joined by spaces, one callback per record. */
static void smart(char *s, const char *keep,
                  void (*rec)(void *, const char *, const char *), void *ud)
{
    char num[32] = "", *line, *text = malloc(strlen(s) + 1);
    size_t n = 0;
    int on = 0, have = 0;
    for (line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '.' && line[1] == 'I' && line[2] == ' ') {
            if (have) {
                text[n] = '\0';
                rec(ud, num, text);
            }
            snprintf(num, sizeof num, "%d", atoi(line + 3));
            n = 0;
            have = 1;
            on = 0;
        } else if (line[0] == '.' && line[1] && !line[2]) {
            on = strchr(keep, line[1]) != NULL;
        } else if (on) {
            size_t l = strlen(line);
            memcpy(text + n, line, l);
            n += l;
            text[n++] = ' ';
        }
    }
    if (have) {
        text[n] = '\0';
        rec(ud, num, text);
    }
    free(text);
}

typedef struct docs {
    FILE *all, *shard[4][4];    /* [nshards index][shard] */
    size_t n;
} docs;

static void put_doc(FILE *f, const char *id, const char *text)
{
    rcp_buf b;
    rcp_jw w;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "id");
    rcp_jw_cstr(&w, id);
    rcp_jw_key(&w, "text");
    rcp_jw_cstr(&w, text);
    rcp_jw_obj_end(&w);
    fwrite(b.data, 1, b.len, f);
    fputc('\n', f);
    rcp_buf_free(&b);
}

static void on_doc(void *ud, const char *num, const char *text)
{
    docs *d = ud;
    static const int ns[] = { 1, 2, 4 };
    int i;
    put_doc(d->all, num, text);
    for (i = 0; i < 3; i++)
        put_doc(d->shard[i][d->n % (size_t)ns[i]], num, text);
    d->n++;
}

typedef struct queries {
    char  *q[MAXQ];
    size_t n;
} queries;

static void on_query(void *ud, const char *num, const char *text)
{
    queries *q = ud;
    (void)num;
    if (q->n < MAXQ)
        q->q[q->n++] = strdup(text);
}

static rcp_client *serve(const char *a1, const char *a2)
{
    char err[256];
    char *argv[] = { (char *)bin(), "serve", (char *)a1, (char *)a2, NULL };
    rcp_client_opts o;
    rcp_client *c;
    rcp_request *r;
    memset(&o, 0, sizeof o);
    o.err = RCP_STDERR_DISCARD;
    if (!(c = rcp_client_spawn(argv, &o, err, sizeof err))) {
        fprintf(stderr, "bench_federation: %s\n", err);
        exit(1);
    }
    r = rcp_client_request(c, "initialize", "{\"protocolVersion\":1}", 0);
    if (!r || rcp_client_wait(c, r, 120000) != RCP_REQ_DONE
        || !rcp_request_result(r)) {
        fprintf(stderr, "bench_federation: %s serve %s %s did not start\n",
                bin(), a1, a2);
        exit(1);
    }
    rcp_request_free(c, r);
    return c;
}

/* The top ids of a retrieve (fusion: its _meta, rerank: its rerank, raw
** JSON or NULL), as one "\n"-joined string; its latency; the slowest
** and the summed engine latencies of usage.engines. */
static double ask(rcp_client *c, const char *query, int k,
                  const char *fusion, const char *rerank, char *ids,
                  size_t cap, double *slow, double *sum)
{
    rcp_buf b;
    rcp_jw w;
    rcp_request *r;
    const rcp_json *h;
    double t0, ms;
    size_t i, n = 0;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "query");
    rcp_jw_cstr(&w, query);
    rcp_jw_key(&w, "k");
    rcp_jw_int(&w, k);
    if (fusion) {
        rcp_jw_key(&w, "_meta");
        rcp_jw_raw(&w, fusion, strlen(fusion));
    }
    if (rerank) {
        rcp_jw_key(&w, "rerank");
        rcp_jw_raw(&w, rerank, strlen(rerank));
    }
    rcp_jw_obj_end(&w);
    rcp_buf_putc(&b, '\0');
    t0 = now_ms();
    r = rcp_client_request(c, "retrieve", b.data, 0);
    if (!r || rcp_client_wait(c, r, 60000) != RCP_REQ_DONE
        || !rcp_request_result(r)) {
        fprintf(stderr, "bench_federation: a retrieve failed\n");
        exit(1);
    }
    ms = now_ms() - t0;
    h = rcp_json_get(rcp_json_get(rcp_request_result(r), "usage"),
                     "engines");
    if (slow)
        *slow = *sum = 0;
    for (i = 0; slow && h && i < h->n; i++) {
        double e = rcp_json_num(rcp_json_get(&h->kids[i], "latencyMs"));
        *slow = e > *slow ? e : *slow;
        *sum += e;
    }
    h = rcp_json_get(rcp_request_result(r), "hits");
    if (ids)
        ids[0] = '\0';
    for (i = 0; ids && h && i < h->n; i++) {
        const rcp_json *id = rcp_json_get(&h->kids[i], "id");
        if (n + id->n + 2 < cap) {
            memcpy(ids + n, id->s, id->n);
            n += id->n;
            ids[n++] = '\n';
            ids[n] = '\0';
        }
    }
    rcp_request_free(c, r);
    rcp_buf_free(&b);
    return ms;
}

/* |top10(a) ∩ top10(b)| / |top10(b)| over "\n"-joined id lists. */
static double overlap(const char *a, const char *b)
{
    char x[64], padded[4100];
    const char *p = b, *e;
    int hit = 0, n = 0;
    snprintf(padded, sizeof padded, "\n%s", a);
    while ((e = strchr(p, '\n')) != NULL) {
        snprintf(x, sizeof x, "\n%.*s\n", (int)(e - p), p);
        n++;
        hit += strstr(padded, x) != NULL;
        p = e + 1;
    }
    return n ? (double)hit / n : 1;
}

int main(void)
{
    static const int ns[] = { 1, 2, 4 };
    const char *cran = getenv("CRANFIELD");
    char dir[] = "/tmp/rcp-bench-fed-XXXXXX", path[256], reg[256];
    char *s;
    docs d;
    queries q;
    size_t i, j;
    int ni;
    if (!cran)
        cran = "../shared/data/cranfield";
    snprintf(path, sizeof path, "%s/cran.all.1400", cran);
    if (!(s = slurp(path))) {
        printf("bench_federation: the Cranfield collection is not in %s "
               "(CRANFIELD=DIR); skipped\n", cran);
        return 0;
    }
    if (!mkdtemp(dir))
        return 1;
    memset(&d, 0, sizeof d);
    snprintf(path, sizeof path, "%s/all.jsonl", dir);
    d.all = fopen(path, "w");
    for (ni = 0; ni < 3; ni++)
        for (j = 0; j < (size_t)ns[ni]; j++) {
            snprintf(path, sizeof path, "%s/n%d-%lu.jsonl", dir, ns[ni],
                     (unsigned long)j);
            d.shard[ni][j] = fopen(path, "w");
        }
    smart(s, "TW", on_doc, &d);
    free(s);
    fclose(d.all);
    for (ni = 0; ni < 3; ni++)
        for (j = 0; j < (size_t)ns[ni]; j++)
            fclose(d.shard[ni][j]);
    snprintf(path, sizeof path, "%s/cran.qry", cran);
    memset(&q, 0, sizeof q);
    if (!(s = slurp(path)))
        return 1;
    smart(s, "W", on_query, &q);
    free(s);
    printf("Cranfield: %lu documents split round-robin, %lu queries, k 10 "
           "(each shard asked for 20), hybrid\n", (unsigned long)d.n,
           (unsigned long)q.n);
    printf("%-7s %8s %8s %12s %10s %13s %13s %11s %13s %11s %11s\n",
           "shards", "p50 ms", "p99 ms", "slowest p50", "sum p50",
           "overhead p50", "overhead p99", "recall rrf", "recall convex",
           "+rerank p50", "+rerank p99");
    {
        rcp_client *unsplit;
        char (*top)[4096] = malloc(q.n * sizeof *top);
        snprintf(path, sizeof path, "%s/all.jsonl", dir);
        unsplit = serve("--corpus", path);
        for (i = 0; i < q.n; i++)
            (void)ask(unsplit, q.q[i], 10, NULL, NULL, top[i],
                      sizeof top[i], NULL, NULL);
        rcp_client_close(unsplit, 5000);
        for (ni = 0; ni < 3; ni++) {
            rcp_client *agg;
            FILE *f;
            double *lat = malloc(q.n * sizeof *lat),
                   *slow = malloc(q.n * sizeof *slow),
                   *over = malloc(q.n * sizeof *over),
                   *sum = malloc(q.n * sizeof *sum),
                   *rer = malloc(q.n * sizeof *rer);
            double rr = 0, rc = 0;
            snprintf(reg, sizeof reg, "%s/n%d.json", dir, ns[ni]);
            f = fopen(reg, "w");
            fputs("{\"engines\":[", f);
            for (j = 0; j < (size_t)ns[ni]; j++) {
                snprintf(path, sizeof path, "%s/n%d-%lu.jsonl", dir, ns[ni],
                         (unsigned long)j);
                fprintf(f, "%s{\"id\":\"s%lu\",\"command\":[\"%s\",\"serve\","
                        "\"--corpus\",\"%s\"]}", j ? "," : "",
                        (unsigned long)j, bin(), path);
            }
            fputs("]}\n", f);
            fclose(f);
            agg = serve("--registry", reg);
            for (i = 0; i < q.n; i++) {
                char ids[4096];
                lat[i] = ask(agg, q.q[i], 10, NULL, NULL, ids, sizeof ids,
                             &slow[i], &sum[i]);
                over[i] = lat[i] - slow[i];
                rr += overlap(ids, top[i]);
                (void)ask(agg, q.q[i], 10, "{\"federation\":{\"fusion\":"
                          "{\"method\":\"convex\"}}}", NULL, ids,
                          sizeof ids, NULL, NULL);
                rc += overlap(ids, top[i]);
                /* the second stage over the fused top 20: the engines are
                ** asked what they are asked without it (2k) */
                rer[i] = ask(agg, q.q[i], 10, NULL, "{\"topN\":20}", NULL, 0,
                             NULL, NULL);
            }
            {
                double p50 = pct(lat, q.n, 0.5), p99 = pct(lat, q.n, 0.99),
                       o50 = pct(over, q.n, 0.5), o99 = pct(over, q.n, 0.99);
                printf("%-7d %8.3f %8.3f %12.3f %10.3f %13.3f %13.3f %11.3f "
                       "%13.3f %11.3f %11.3f\n", ns[ni], p50, p99,
                       pct(slow, q.n, 0.5), pct(sum, q.n, 0.5), o50, o99,
                       rr / (double)q.n, rc / (double)q.n,
                       pct(rer, q.n, 0.5), pct(rer, q.n, 0.99));
            }
            rcp_client_close(agg, 5000);
            free(lat);
            free(slow);
            free(over);
            free(sum);
            free(rer);
        }
        free(top);
    }
    for (i = 0; i < q.n; i++)
        free(q.q[i]);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    if (system(path) != 0)
        return 1;
    return 0;
}
