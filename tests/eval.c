/*
** eval.c -- retrieval quality of the built-in engine on Cranfield 1400
** (spec Appendix F).  `make eval` runs it on ../shared/data/cranfield:
**
**   build/rel/tests/eval DIR [--dim N] [--vectors FILE] [--prf N]
**
** Indexes .T + .W of cran.all.1400 under the document's .I number, runs
** all 225 queries of cran.qry (numbered 1..225 by their order in the file,
** as cranqrel numbers them) at depth 1000 and prints MAP, nDCG@10 (graded
** gain 5 - code for codes 1..4; -1 is not relevant), P@10, R@100 and MRR
** for each pipeline configuration.  Nothing here is tuned per query: every
** configuration uses the engine's defaults unless its label says so
** ("no feedback": opts.prf_docs = 0, the ablation of hybrid feedback;
** "lexical leg alone": the hybrid's BM25+RM3 list with dense weight 0).
** --prf N sets the feedback depth of the main rows.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcp.h"

#define DEPTH 1000
#define MAXQ  256
#define MAXD  1401

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    FILE *f;
    char *buf;
    long n;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET) || !(buf = malloc((size_t)n + 1))) {
        fprintf(stderr, "eval: cannot read %s\n", path);
        exit(2);
    }
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

/* SMART format: records start ".I n"; fields ".X" on their own line. */
typedef struct rec {
    int  num;
    char text[16384];
    size_t len;
} rec;

static void rec_append(rec *r, const char *s, size_t n)
{
    if (r->len + n + 1 < sizeof r->text) {
        memcpy(r->text + r->len, s, n);
        r->len += n;
        r->text[r->len++] = '\n';
        r->text[r->len] = 0;
    }
}

/* Parse records, keeping the lines of the fields listed in keep. */
static size_t parse_smart(char *s, const char *keep, rec *out, size_t max)
{
    size_t n = 0;
    int on = 0;
    char *line = strtok(s, "\n");
    for (; line; line = strtok(NULL, "\n")) {
        if (line[0] == '.' && line[1] && (line[2] == 0 || line[2] == ' ')) {
            if (line[1] == 'I' && n < max) {
                memset(&out[n], 0, sizeof out[n]);
                out[n++].num = atoi(line + 3);
                on = 0;
            } else {
                on = strchr(keep, line[1]) != NULL;
            }
            continue;
        }
        if (on && n)
            rec_append(&out[n - 1], line, strlen(line));
    }
    return n;
}

static int gain[MAXQ][MAXD];     /* 0 = not relevant */
static int nrel[MAXQ];

static void parse_qrels(char *s)
{
    char *line = strtok(s, "\n");
    for (; line; line = strtok(NULL, "\n")) {
        int q, d, code;
        if (sscanf(line, "%d %d %d", &q, &d, &code) != 3)
            continue;
        if (q < 1 || q >= MAXQ || d < 1 || d >= MAXD)
            continue;
        if (code >= 1 && code <= 4 && !gain[q][d]) {
            gain[q][d] = 5 - code;
            nrel[q]++;
        }
    }
}

typedef struct metrics {
    double map, ndcg, p10, r100, mrr;
} metrics;

static int cmp_desc(const void *a, const void *b)
{
    return *(const int *)b - *(const int *)a;
}

static double ideal_dcg(int q)
{
    int g[MAXD], n = 0, d, i;
    double s = 0;
    for (d = 1; d < MAXD; d++)
        if (gain[q][d])
            g[n++] = gain[q][d];
    qsort(g, (size_t)n, sizeof g[0], cmp_desc);
    for (i = 0; i < n && i < 10; i++)
        s += g[i] / (log(i + 2.0) / log(2.0));
    return s;
}

/* Score one ranking (document numbers, best first) for query q. */
static void score_run(int q, const int *docs, size_t n, metrics *m)
{
    size_t i;
    int hits = 0, h100 = 0;
    double ap = 0, dcg = 0, idcg = ideal_dcg(q), rr = 0;
    for (i = 0; i < n; i++) {
        int g = docs[i] > 0 && docs[i] < MAXD ? gain[q][docs[i]] : 0;
        if (!g)
            continue;
        hits++;
        ap += (double)hits / (double)(i + 1);
        if (i < 10)
            dcg += g / (log(i + 2.0) / log(2.0));
        if (i < 10)
            m->p10 += 0.1;
        if (i < 100)
            h100++;
        if (rr == 0)
            rr = 1.0 / (double)(i + 1);
    }
    m->map += nrel[q] ? ap / nrel[q] : 0;
    m->ndcg += idcg > 0 ? dcg / idcg : 0;
    m->r100 += nrel[q] ? (double)h100 / nrel[q] : 0;
    m->mrr += rr;
}

typedef struct config {
    const char *label;
    int mode, fusion, rerank;
    size_t rerank_top;
    int no_dense;           /* hybrid with dense weight 0: BM25 + RM3 */
} config;

static void run(rcp_model *model, const config *c, rec *qs, size_t nq)
{
    static rcp_model_hit hits[DEPTH];
    static int docs[DEPTH];
    rcp_model_query q;
    metrics m;
    size_t i, j, n, judged = 0;
    memset(&m, 0, sizeof m);
    for (i = 0; i < nq; i++) {
        int qn = (int)i + 1;        /* cranqrel numbers queries by order */
        rcp_model_query_init(&q);
        q.text = qs[i].text;
        q.len = qs[i].len;
        q.k = q.candidate_k = DEPTH;
        q.mode = c->mode;
        q.fusion = c->fusion;
        q.rerank = c->rerank;
        q.rerank_top = c->rerank_top;
        q.no_confidence = 1;
        if (c->no_dense)
            q.w_dense = 0;
        if (rcp_model_search(model, &q, hits, &n)) {
            fprintf(stderr, "eval: search failed\n");
            exit(1);
        }
        for (j = 0; j < n; j++) {
            rcp_model_docview v;
            rcp_model_doc(model, hits[j].doc, &v);
            docs[j] = atoi(v.id);
        }
        if (!nrel[qn])
            continue;
        judged++;
        score_run(qn, docs, n, &m);
    }
    printf("| %-30s | %6.4f | %7.4f | %6.4f | %6.4f | %6.4f |\n", c->label,
           m.map / judged, m.ndcg / judged, m.p10 / judged,
           m.r100 / judged, m.mrr / judged);
    fflush(stdout);
}

static rec docs_[MAXD + 8], qrys_[MAXQ];

int main(int argc, char **argv)
{
    static const config cfgs[] = {
        {"sparse (BM25)", RCP_MODE_SPARSE, RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0},
        {"dense", RCP_MODE_DENSE, RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0},
        {"hybrid rrf", RCP_MODE_HYBRID, RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0},
        {"hybrid convex", RCP_MODE_HYBRID, RCP_FUSE_CONVEX,
         RCP_RERANK_NONE, 0, 0},
        {"hybrid weighted", RCP_MODE_HYBRID, RCP_FUSE_WEIGHTED,
         RCP_RERANK_NONE, 0, 0},
        {"sparse + cross-encoder@100", RCP_MODE_SPARSE, RCP_FUSE_RRF,
         RCP_RERANK_CROSS, 100, 0},
        {"hybrid rrf + cross-enc@100", RCP_MODE_HYBRID, RCP_FUSE_RRF,
         RCP_RERANK_CROSS, 100, 0},
        {"hybrid convex + cross-enc@100", RCP_MODE_HYBRID, RCP_FUSE_CONVEX,
         RCP_RERANK_CROSS, 100, 0},
        {"hybrid rrf + colbert@100", RCP_MODE_HYBRID, RCP_FUSE_RRF,
         RCP_RERANK_COLBERT, 100, 0},
        {"lexical leg alone (BM25+RM3)", RCP_MODE_HYBRID, RCP_FUSE_RRF,
         RCP_RERANK_NONE, 0, 1},
    };
    static const config nofb[] = {
        {"hybrid rrf, no feedback", RCP_MODE_HYBRID, RCP_FUSE_RRF,
         RCP_RERANK_NONE, 0, 0},
        {"hybrid convex, no feedback", RCP_MODE_HYBRID, RCP_FUSE_CONVEX,
         RCP_RERANK_NONE, 0, 0},
    };
    rcp_model_opts o;
    rcp_model *model;
    char err[256], id[32], *s;
    size_t len, nd, nq, i;
    int a;
    if (argc < 2) {
        fprintf(stderr, "usage: eval CRANFIELD_DIR [--dim N] "
                "[--vectors FILE] [--prf N]\n");
        return 2;
    }
    rcp_model_opts_init(&o);
    for (a = 2; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--dim"))
            o.dim = (unsigned)atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--vectors"))
            o.vectors_path = argv[a + 1];
        else if (!strcmp(argv[a], "--prf"))
            o.prf_docs = (unsigned)atoi(argv[a + 1]);
    }
    if (!(model = rcp_model_new(&o, err, sizeof err))) {
        fprintf(stderr, "eval: %s\n", err);
        return 1;
    }
    s = slurp(argv[1], "cran.all.1400", &len);
    nd = parse_smart(s, "TW", docs_, MAXD + 8);
    free(s);
    s = slurp(argv[1], "cran.qry", &len);
    nq = parse_smart(s, "W", qrys_, MAXQ);
    free(s);
    s = slurp(argv[1], "cranqrel", &len);
    parse_qrels(s);
    free(s);
    for (i = 0; i < nd; i++) {
        snprintf(id, sizeof id, "%d", docs_[i].num);
        if (rcp_model_add(model, id, strlen(id), docs_[i].text,
                          docs_[i].len, NULL, 0)) {
            fprintf(stderr, "eval: out of memory\n");
            return 1;
        }
    }
    printf("Cranfield: %lu documents, %lu queries, depth %d, embedder %s\n\n",
           (unsigned long)nd, (unsigned long)nq, DEPTH,
           rcp_model_identity(model, RCP_EMBED_DENSE));
    printf("| %-30s | %-6s | %-7s | %-6s | %-6s | %-6s |\n", "pipeline",
           "MAP", "nDCG@10", "P@10", "R@100", "MRR");
    printf("|--------------------------------|--------|---------|--------|"
           "--------|--------|\n");
    for (i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        run(model, &cfgs[i], qrys_, nq);
    rcp_model_free(model);
    /* ablation: the same hybrids without pseudo-relevance feedback */
    o.prf_docs = 0;
    if (!(model = rcp_model_new(&o, err, sizeof err)))
        return 1;
    for (i = 0; i < nd; i++) {
        snprintf(id, sizeof id, "%d", docs_[i].num);
        if (rcp_model_add(model, id, strlen(id), docs_[i].text,
                          docs_[i].len, NULL, 0))
            return 1;
    }
    for (i = 0; i < sizeof nofb / sizeof nofb[0]; i++)
        run(model, &nofb[i], qrys_, nq);
    rcp_model_free(model);
    return 0;
}
