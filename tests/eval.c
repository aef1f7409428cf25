/*
** eval.c -- retrieval quality of the built-in engine (spec Appendix F),
** measured so that a design can be chosen on one set of queries and
** judged on others.  `make eval` runs it on both collections:
**
**   eval [CRANFIELD_DIR] [--cranfield DIR] [--kjv DIR --kjv-text FILE]
**        [--dim N] [--vectors FILE] [--prf N] [--runs DIR]
**        [--pool N [--pool-file FILE]]
**
** Collections (each is optional; at least one is needed):
**
** - Cranfield 1400 (DIR holds cran.all.1400, cran.qry, cranqrel): .T + .W
**   indexed under the document's .I number; the 225 queries numbered
**   1..225 by their order in cran.qry, as cranqrel numbers them; graded
**   gain 5 - code for codes 1..4 (-1 is not relevant).  The queries are
**   split once and for all into a development half and a test half (see
**   split_cranfield): designs are chosen on "dev" only; "test" says
**   whether the choice holds.
** - KJV passages, held out whole (tests/kjv/README.md): the King James
**   text as Debian's bible-kjv prints it (`bible -f Gen1:1-Rev22:21`, one
**   verse a line), cut into passages of at most five verses inside a
**   chapter (see kjv_passages); 60 topics (topics.tsv) judged by pooling
**   (qrels: TREC format, grades 0/1/2, gain = grade).  Nothing may be
**   tuned on it: it is there to tell whether what Cranfield's dev half
**   chose holds on text of another kind.
**
** Every pipeline runs every query at depth 1000 with the engine's
** defaults unless its label says otherwise, and is scored per query:
** nDCG@10 (graded), MAP (AP over the top 1000, relevant = gain > 0),
** R@100, and for pooled collections judged@10 (the share of the top 10
** that has a judgement: below 1, the figures of that row lean on
** unjudged documents and the pool needs extending, --pool).  One table:
** rows = pipelines, columns = collection x half, each cell its metrics;
** the rows that say "default" are what a retrieve naming no mode runs
** on this engine (rcp_model_default_mode: sparse, BM25 then RM3), the
** others what a request can ask for.  A figure
** below its input stage (a feedback leg below its plain list, a hybrid
** below the better of its two legs, a rerank below the list it reranks)
** is marked "<" ("<!" when a paired randomization test on the per-query
** differences gives p < 0.05), and every such drop is listed with its
** figures and p, so that noise and a stage that hurts can be told apart.
** Topics without a relevant document count in no mean.
**
** The last row is a reference system that is not the engine: query
** likelihood with Dirichlet smoothing (Zhai & Lafferty 2001, mu 2000) on
** its own tokenizer (ASCII case folding, Lucene's 33 English stopwords,
** Harman's S stemmer), so that a figure of the engine can be read
** against an independent one, and so that the pool is not the engine's
** view alone.
**
** --runs DIR writes every pipeline's ranking as a TREC run file
** (DIR/<collection>.<tag>.run, trec_eval's input).  --pool N prints, for
** the pooled collections, every document in the top N of some pipeline
** that has no judgement yet (TSV: topic, document, text): what a judge
** must read to extend the qrels after an engine change.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcp.h"

#define DEPTH   1000
#define NPERM   10000           /* randomization test permutations */
#define KJV_MAX 5               /* verses per passage, at most */

/* ---- small utilities -------------------------------------------------- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* Grow *p (of *cap elements of size sz) to hold at least need. */
static void grow(void **p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return;
    *cap = *cap ? *cap * 2 : 64;
    if (*cap < need)
        *cap = need;
    *p = xrealloc(*p, *cap * sz);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    size_t got;
    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0
        || fseek(f, 0, SEEK_SET)) {
        fprintf(stderr, "eval: cannot read %s\n", path);
        exit(2);
    }
    buf = xmalloc((size_t)n + 1);
    got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

static char *slurp_in(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return slurp(path);
}

/* Next line of *s (NUL-terminated in place, CR stripped); NULL at end. */
static char *next_line(char **s)
{
    char *line = *s, *nl;
    size_t n;
    if (!*line)
        return NULL;
    nl = strchr(line, '\n');
    if (nl) {
        *nl = 0;
        *s = nl + 1;
    } else {
        *s = line + strlen(line);
    }
    n = strlen(line);
    if (n && line[n - 1] == '\r')
        line[n - 1] = 0;
    return line;
}

/* FNV-1a, 32 bits: the split's tie-break and the QL vocabulary's hash. */
static unsigned long fnv1a(const char *s, size_t n)
{
    unsigned long h = 2166136261UL;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h = (h * 16777619UL) & 0xffffffffUL;
    }
    return h;
}

/* FNV-1a, 64 bits: the checksum of the KJV text the judges read. */
static unsigned long long fnv1a64(const char *s, size_t n)
{
    unsigned long long h = 14695981039346656037ULL;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

typedef struct buf {
    char  *s;
    size_t n, cap;
} buf;

static void buf_add(buf *b, const char *s, size_t n)
{
    grow((void **)&b->s, &b->cap, b->n + n + 2, 1);
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

/* ---- collections ------------------------------------------------------ */

typedef struct judged {
    const char *doc;
    int gain;                    /* 0: judged not relevant */
} judged;

typedef struct topic {
    char   *num;
    char   *text;
    size_t  len;
    int     half;                /* index into coll.half */
    judged *j;                   /* sorted by doc id */
    size_t  nj, capj, nrel;
    double  idcg;
} topic;

typedef struct doc {
    char  *id;
    char  *text;
    size_t len;
} doc;

typedef struct coll {
    const char *name;
    const char *half[2];
    int     nhalves;
    int     pooled;              /* judgements by pooling: show judged@10 */
    doc    *d;
    size_t  nd, capd;
    topic  *t;
    size_t  nt, capt;
} coll;

static void add_doc(coll *c, char *id, const char *text, size_t len)
{
    grow((void **)&c->d, &c->capd, c->nd + 1, sizeof *c->d);
    c->d[c->nd].id = id;
    c->d[c->nd].text = xstrndup(text, len);
    c->d[c->nd].len = len;
    c->nd++;
}

static topic *add_topic(coll *c, const char *num, const char *text,
                        size_t len)
{
    topic *t;
    grow((void **)&c->t, &c->capt, c->nt + 1, sizeof *c->t);
    t = &c->t[c->nt++];
    memset(t, 0, sizeof *t);
    t->num = xstrndup(num, strlen(num));
    t->text = xstrndup(text, len);
    t->len = len;
    return t;
}

static topic *find_topic(coll *c, const char *num)
{
    size_t i;
    for (i = 0; i < c->nt; i++)
        if (!strcmp(c->t[i].num, num))
            return &c->t[i];
    return NULL;
}

static int cmp_judged(const void *a, const void *b)
{
    return strcmp(((const judged *)a)->doc, ((const judged *)b)->doc);
}

static int cmp_doc(const void *a, const void *b)
{
    return strcmp(((const doc *)a)->id, ((const doc *)b)->id);
}

/* The judgement of doc id for t, or NULL when it has none. */
static const judged *judgement(const topic *t, const char *id)
{
    judged key;
    key.doc = id;
    key.gain = 0;
    return t->nj ? bsearch(&key, t->j, t->nj, sizeof *t->j, cmp_judged)
                 : NULL;
}

static void add_judged(topic *t, const char *docid, int gain)
{
    size_t i;
    for (i = 0; i < t->nj; i++)       /* the first judgement stands */
        if (!strcmp(t->j[i].doc, docid))
            return;
    grow((void **)&t->j, &t->capj, t->nj + 1, sizeof *t->j);
    t->j[t->nj].doc = xstrndup(docid, strlen(docid));
    t->j[t->nj].gain = gain;
    t->nj++;
}

static int cmp_int_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* Sort the judgements, count the relevant and compute the ideal DCG@10;
** a judged document the collection lacks is an error (the qrels were made
** on other text). */
static void finish_topics(coll *c)
{
    size_t i, k;
    qsort(c->d, c->nd, sizeof *c->d, cmp_doc);
    for (i = 0; i < c->nd; i++)
        if (i && !strcmp(c->d[i].id, c->d[i - 1].id)) {
            fprintf(stderr, "eval: %s: document %s twice\n", c->name,
                    c->d[i].id);
            exit(2);
        }
    for (i = 0; i < c->nt; i++) {
        topic *t = &c->t[i];
        int *g = xmalloc((t->nj + 1) * sizeof *g);
        size_t n = 0;
        if (t->nj)
            qsort(t->j, t->nj, sizeof *t->j, cmp_judged);
        for (k = 0; k < t->nj; k++) {
            doc key;
            key.id = (char *)t->j[k].doc;
            if (!bsearch(&key, c->d, c->nd, sizeof *c->d, cmp_doc)) {
                fprintf(stderr, "eval: %s: topic %s judges document %s, "
                        "which the collection does not have (other text "
                        "than the judges read?)\n", c->name, t->num,
                        t->j[k].doc);
                exit(2);
            }
            if (t->j[k].gain > 0)
                g[n++] = t->j[k].gain;
        }
        t->nrel = n;
        qsort(g, n, sizeof *g, cmp_int_desc);
        for (k = 0; k < n && k < 10; k++)
            t->idcg += g[k] / (log(k + 2.0) / log(2.0));
        free(g);
    }
}

static void coll_free(coll *c)
{
    size_t i, k;
    for (i = 0; i < c->nd; i++) {
        free(c->d[i].id);
        free(c->d[i].text);
    }
    for (i = 0; i < c->nt; i++) {
        for (k = 0; k < c->t[i].nj; k++)
            free((char *)c->t[i].j[k].doc);
        free(c->t[i].j);
        free(c->t[i].num);
        free(c->t[i].text);
    }
    free(c->d);
    free(c->t);
}

/* ---- Cranfield -------------------------------------------------------- */

/* SMART format: records start ".I n"; fields ".X" on their own line.
** Calls back with the record's number and the lines of the fields in
** keep, each followed by a newline. */
static void parse_smart(char *s, const char *keep,
                        void (*rec)(void *, const char *, buf *), void *ud)
{
    buf b = {NULL, 0, 0};
    char num[32] = "", *line;
    int on = 0, have = 0;
    while ((line = next_line(&s)) != NULL) {
        if (line[0] == '.' && line[1] && (line[2] == 0 || line[2] == ' ')) {
            if (line[1] == 'I') {
                if (have)
                    rec(ud, num, &b);
                snprintf(num, sizeof num, "%d", atoi(line + 3));
                b.n = 0;
                buf_add(&b, "", 0);
                have = 1;
                on = 0;
            } else {
                on = strchr(keep, line[1]) != NULL;
            }
            continue;
        }
        if (on && have) {
            buf_add(&b, line, strlen(line));
            buf_add(&b, "\n", 1);
        }
    }
    if (have)
        rec(ud, num, &b);
    free(b.s);
}

static void cran_doc(void *ud, const char *num, buf *b)
{
    add_doc(ud, xstrndup(num, strlen(num)), b->s, b->n);
}

static void cran_query(void *ud, const char *num, buf *b)
{
    coll *c = ud;
    char n[32];
    (void)num;                  /* cranqrel numbers queries by order */
    snprintf(n, sizeof n, "%lu", (unsigned long)c->nt + 1);
    add_topic(c, n, b->s, b->n);
}

typedef struct splitkey {
    size_t nrel;
    unsigned long hash;
    topic *t;
} splitkey;

static int cmp_split(const void *a, const void *b)
{
    const splitkey *x = a, *y = b;
    if (x->nrel != y->nrel)
        return x->nrel < y->nrel ? 1 : -1;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return strcmp(x->t->num, y->t->num);
}

/* The fixed dev/test split of Cranfield's queries, balanced in number
** and in relevant documents: the queries ranked by their number of
** relevant documents (most first; ties by the FNV-1a hash of the query
** number, as decimal text), then taken two at a time; of each pair the
** one whose hash is smaller goes to dev, the other to test; an odd last
** query goes to test.  It depends only on cranqrel and the numbers, so
** it never moves with the engine. */
static void split_cranfield(coll *c)
{
    splitkey *k = xmalloc((c->nt + 1) * sizeof *k);
    size_t i;
    for (i = 0; i < c->nt; i++) {
        k[i].nrel = c->t[i].nrel;
        k[i].hash = fnv1a(c->t[i].num, strlen(c->t[i].num));
        k[i].t = &c->t[i];
    }
    qsort(k, c->nt, sizeof *k, cmp_split);
    for (i = 0; i < c->nt; i++) {
        if (i + 1 == c->nt && i % 2 == 0) {
            k[i].t->half = 1;
        } else {
            size_t mate = i % 2 ? i - 1 : i + 1;
            k[i].t->half = k[i].hash < k[mate].hash
                           || (k[i].hash == k[mate].hash && i < mate) ? 0 : 1;
        }
    }
    free(k);
}

static void load_cranfield(coll *c, const char *dir)
{
    char *s, *p, *line;
    memset(c, 0, sizeof *c);
    c->name = "cranfield";
    c->half[0] = "dev";
    c->half[1] = "test";
    c->nhalves = 2;
    s = slurp_in(dir, "cran.all.1400");
    parse_smart(s, "TW", cran_doc, c);
    free(s);
    s = slurp_in(dir, "cran.qry");
    parse_smart(s, "W", cran_query, c);
    free(s);
    s = p = slurp_in(dir, "cranqrel");
    while ((line = next_line(&p)) != NULL) {
        int q, code;
        char d[32], n[32];
        topic *t;
        if (sscanf(line, "%d %31s %d", &q, d, &code) != 3)
            continue;
        snprintf(n, sizeof n, "%d", q);
        if ((t = find_topic(c, n)) != NULL && code >= 1 && code <= 4)
            add_judged(t, d, 5 - code);
    }
    free(s);
    finish_topics(c);
    split_cranfield(c);
}

/* ---- KJV passages ----------------------------------------------------- */

typedef struct verse {
    char   *book;               /* "Ge", "1Sm", ... (bible's abbreviations) */
    int     chapter, verse;
    char   *text;
} verse;

/* "Ge1:1 In the beginning..." -> book "Ge", 1, 1, text; 0 if not so. */
static int parse_verse(char *line, verse *v)
{
    char *sp = strchr(line, ' '), *colon, *ch;
    if (!sp || sp == line)
        return 0;
    for (colon = sp; colon > line && colon[-1] != ':'; colon--)
        ;
    if (colon == line || colon == sp)
        return 0;
    colon--;                    /* at ':' */
    for (ch = colon; ch > line + 1 && ch[-1] >= '0' && ch[-1] <= '9'; ch--)
        ;
    if (ch == colon || ch == line)
        return 0;
    v->book = line;
    v->chapter = atoi(ch);
    v->verse = atoi(colon + 1);
    *ch = 0;
    v->text = sp + 1;
    return v->chapter > 0 && v->verse > 0;
}

/* One chapter's verses v[0..n) cut into ceil(n / KJV_MAX) passages whose
** sizes differ by at most one (the longer ones first), so that no passage
** is a lone leftover verse; each is named "Book C:first-last" as bible
** writes references ("Ge1:1-5", or "Obad1:21" for a single verse). */
static void kjv_passages(coll *c, const verse *v, size_t n)
{
    size_t parts = (n + KJV_MAX - 1) / KJV_MAX, base = n / parts,
           extra = n % parts, p, at = 0;
    for (p = 0; p < parts; p++) {
        size_t len = base + (p < extra), i;
        char id[96];
        buf b = {NULL, 0, 0};
        if (len == 1)
            snprintf(id, sizeof id, "%s%d:%d", v[at].book, v[at].chapter,
                     v[at].verse);
        else
            snprintf(id, sizeof id, "%s%d:%d-%d", v[at].book, v[at].chapter,
                     v[at].verse, v[at + len - 1].verse);
        for (i = at; i < at + len; i++) {
            if (i > at)
                buf_add(&b, " ", 1);
            buf_add(&b, v[i].text, strlen(v[i].text));
        }
        add_doc(c, xstrndup(id, strlen(id)), b.s, b.n);
        free(b.s);
        at += len;
    }
}

/* The judgements hold for the text the judges read: when DIR has the
** checksum of that text (text-fnv1a64), another text is refused rather
** than scored against judgements made on different words. */
static void check_text(const char *dir, const char *textfile,
                       unsigned long long have)
{
    char path[4096], want[32];
    FILE *f;
    snprintf(path, sizeof path, "%s/text-fnv1a64", dir);
    if (!(f = fopen(path, "r")))
        return;
    if (!fgets(want, sizeof want, f))
        want[0] = 0;
    fclose(f);
    if (strtoull(want, NULL, 16) != have) {
        fprintf(stderr, "eval: %s is not the text the KJV judgements were "
                "made on (FNV-1a 64 %016llx, %s says %.16s): extract it "
                "with `bible -f Gen1:1-Rev22:21` from Debian's "
                "bible-kjv-text 4.38\n", textfile, have, path, want);
        exit(2);
    }
}

static void load_kjv(coll *c, const char *dir, const char *textfile)
{
    char *s, *p, *line, path[4096];
    verse *v = NULL;
    size_t nv = 0, capv = 0, lineno = 0, start = 0, i;
    memset(c, 0, sizeof *c);
    c->name = "kjv";
    c->half[0] = "all";
    c->nhalves = 1;
    c->pooled = 1;
    s = p = slurp(textfile);
    check_text(dir, textfile, fnv1a64(s, strlen(s)));
    while ((line = next_line(&p)) != NULL) {
        lineno++;
        if (!*line)
            continue;
        grow((void **)&v, &capv, nv + 1, sizeof *v);
        if (!parse_verse(line, &v[nv])) {
            fprintf(stderr, "eval: %s:%lu: not a verse line \"Book C:V "
                    "text\" (bible -f prints them)\n", textfile,
                    (unsigned long)lineno);
            exit(2);
        }
        nv++;
    }
    for (i = 1; i <= nv; i++)
        if (i == nv || strcmp(v[i].book, v[start].book)
            || v[i].chapter != v[start].chapter) {
            kjv_passages(c, v + start, i - start);
            start = i;
        }
    free(v);
    free(s);
    snprintf(path, sizeof path, "%s/topics.tsv", dir);
    s = p = slurp(path);
    while ((line = next_line(&p)) != NULL) {
        char *tab = strchr(line, '\t'), *end;
        if (line[0] == '#' || !tab)
            continue;
        *tab = 0;
        end = strchr(tab + 1, '\t');
        add_topic(c, line, tab + 1,
                  end ? (size_t)(end - tab - 1) : strlen(tab + 1));
    }
    free(s);
    snprintf(path, sizeof path, "%s/qrels", dir);
    s = p = slurp(path);
    while ((line = next_line(&p)) != NULL) {
        char q[32], it[32], d[96];
        int g;
        topic *t;
        if (sscanf(line, "%31s %31s %95s %d", q, it, d, &g) != 4)
            continue;
        if (!(t = find_topic(c, q))) {
            fprintf(stderr, "eval: %s: judgement for unknown topic %s\n",
                    path, q);
            exit(2);
        }
        add_judged(t, d, g < 0 ? 0 : g);
    }
    free(s);
    finish_topics(c);
}

/* ---- the reference system: query likelihood --------------------------- */

/* Independent of the engine on purpose: its own tokenizer, index and
** ranking function, so that its top documents widen the pool and its
** figures anchor the engine's.  Nothing in it is fitted to a collection:
** mu 2000 is Zhai & Lafferty's (2001) default, the stopwords are
** Lucene's English set, the stemmer Harman's (1991) S stemmer. */
typedef struct posting {
    unsigned doc, tf;
} posting;

typedef struct term {
    char    *s;
    posting *p;
    size_t   np, capp;
    double   cf;
} term;

typedef struct ql {
    term     *t;
    size_t    nt, capt;
    long     *slot;             /* open addressing: index into t, or -1 */
    size_t    nslot;
    double   *dlen, total;
    size_t    nd;
} ql;

static const char *const ql_stop[] = {
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if",
    "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that",
    "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with"
};

static int ql_stopword(const char *w)
{
    size_t i;
    for (i = 0; i < sizeof ql_stop / sizeof ql_stop[0]; i++)
        if (!strcmp(w, ql_stop[i]))
            return 1;
    return 0;
}

/* Harman's S stemmer: the first rule that applies. */
static void s_stem(char *w)
{
    size_t n = strlen(w);
    if (n > 3 && !strcmp(w + n - 3, "ies") && w[n - 4] != 'e'
        && w[n - 4] != 'a') {
        strcpy(w + n - 3, "y");
    } else if (n > 2 && !strcmp(w + n - 2, "es") && w[n - 3] != 'a'
               && w[n - 3] != 'e' && w[n - 3] != 'o') {
        w[n - 1] = 0;
    } else if (n > 1 && w[n - 1] == 's' && w[n - 2] != 'u'
               && w[n - 2] != 's') {
        w[n - 1] = 0;
    }
}

/* The next word of s[*at..len): lower-cased, stemmed, not a stopword. */
static int ql_word(const char *s, size_t len, size_t *at, char *w,
                   size_t cap)
{
    while (*at < len) {
        size_t n = 0;
        while (*at < len && !((s[*at] >= 'a' && s[*at] <= 'z')
               || (s[*at] >= 'A' && s[*at] <= 'Z')
               || (s[*at] >= '0' && s[*at] <= '9')
               || (unsigned char)s[*at] >= 0x80))
            (*at)++;
        while (*at < len && ((s[*at] >= 'a' && s[*at] <= 'z')
               || (s[*at] >= 'A' && s[*at] <= 'Z')
               || (s[*at] >= '0' && s[*at] <= '9')
               || (unsigned char)s[*at] >= 0x80)) {
            char ch = s[*at];
            if (ch >= 'A' && ch <= 'Z')
                ch = (char)(ch - 'A' + 'a');
            if (n + 1 < cap)
                w[n++] = ch;
            (*at)++;
        }
        w[n] = 0;
        if (n && !ql_stopword(w)) {
            s_stem(w);
            return 1;
        }
    }
    return 0;
}

static long ql_find(const ql *x, const char *w, size_t *slot)
{
    size_t i = fnv1a(w, strlen(w)) & (x->nslot - 1);
    while (x->slot[i] >= 0 && strcmp(x->t[x->slot[i]].s, w))
        i = (i + 1) & (x->nslot - 1);
    *slot = i;
    return x->slot[i];
}

static long ql_intern(ql *x, const char *w)
{
    size_t slot, i;
    long id = ql_find(x, w, &slot);
    if (id >= 0)
        return id;
    if (2 * (x->nt + 1) > x->nslot) {       /* rehash at half full */
        free(x->slot);
        x->nslot *= 2;
        x->slot = xmalloc(x->nslot * sizeof *x->slot);
        for (i = 0; i < x->nslot; i++)
            x->slot[i] = -1;
        for (i = 0; i < x->nt; i++) {
            ql_find(x, x->t[i].s, &slot);
            x->slot[slot] = (long)i;
        }
        ql_find(x, w, &slot);
    }
    grow((void **)&x->t, &x->capt, x->nt + 1, sizeof *x->t);
    memset(&x->t[x->nt], 0, sizeof x->t[x->nt]);
    x->t[x->nt].s = xstrndup(w, strlen(w));
    x->slot[slot] = (long)x->nt;
    return (long)x->nt++;
}

static void ql_build(ql *x, const coll *c)
{
    size_t i, at;
    char w[64];
    memset(x, 0, sizeof *x);
    x->nslot = 1024;
    x->slot = xmalloc(x->nslot * sizeof *x->slot);
    for (i = 0; i < x->nslot; i++)
        x->slot[i] = -1;
    x->nd = c->nd;
    x->dlen = xmalloc((c->nd + 1) * sizeof *x->dlen);
    for (i = 0; i < c->nd; i++) {
        at = 0;
        x->dlen[i] = 0;
        while (ql_word(c->d[i].text, c->d[i].len, &at, w, sizeof w)) {
            long id = ql_intern(x, w);   /* may move x->t */
            term *t = &x->t[id];
            if (t->np && t->p[t->np - 1].doc == i) {
                t->p[t->np - 1].tf++;
            } else {
                grow((void **)&t->p, &t->capp, t->np + 1, sizeof *t->p);
                t->p[t->np].doc = (unsigned)i;
                t->p[t->np++].tf = 1;
            }
            t->cf++;
            x->dlen[i]++;
            x->total++;
        }
    }
}

static void ql_free(ql *x)
{
    size_t i;
    for (i = 0; i < x->nt; i++) {
        free(x->t[i].s);
        free(x->t[i].p);
    }
    free(x->t);
    free(x->slot);
    free(x->dlen);
}

typedef struct ranked {
    size_t doc;                 /* index into coll.d */
    double score;
} ranked;

static const coll *rank_coll;   /* for cmp_ranked's tie-break by id */

static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return strcmp(rank_coll->d[x->doc].id, rank_coll->d[y->doc].id);
}

/* Rank the documents that hold a query term by
** sum over query terms t of log((tf(t,d) + mu P(t|C)) / (|d| + mu)). */
static size_t ql_search(const ql *x, const coll *c, const topic *tp,
                        ranked *out, size_t k)
{
    const double mu = 2000;
    double *score = xmalloc((x->nd + 1) * sizeof *score), qn = 0;
    unsigned char *hit = calloc(x->nd + 1, 1);
    ranked *all = xmalloc((x->nd + 1) * sizeof *all);
    size_t at = 0, i, n = 0, slot;
    char w[64];
    if (!hit) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    for (i = 0; i < x->nd; i++)
        score[i] = 0;
    while (ql_word(tp->text, tp->len, &at, w, sizeof w)) {
        long id = ql_find(x, w, &slot);
        const term *t;
        double pc;
        if (id < 0)
            continue;           /* a word no document has scores alike */
        t = &x->t[id];
        pc = t->cf / x->total;
        qn++;
        for (i = 0; i < x->nd; i++)
            score[i] += log(mu * pc);
        for (i = 0; i < t->np; i++) {
            score[t->p[i].doc] += log(t->p[i].tf + mu * pc) - log(mu * pc);
            hit[t->p[i].doc] = 1;
        }
    }
    for (i = 0; i < x->nd; i++)
        if (hit[i]) {
            all[n].doc = i;
            all[n++].score = score[i] - qn * log(x->dlen[i] + mu);
        }
    rank_coll = c;
    qsort(all, n, sizeof *all, cmp_ranked);
    if (n > k)
        n = k;
    memcpy(out, all, n * sizeof *out);
    free(all);
    free(hit);
    free(score);
    return n;
}

/* ---- pipelines -------------------------------------------------------- */

enum { P_BM25, P_DENSE, P_LEXLEG, P_DENSELEG, P_RRF, P_RRF_EQ, P_CONVEX,
       P_WEIGHTED,
       P_BM25_CE, P_RRF_CE, P_CONVEX_CE, P_RRF_COLBERT, P_RRF_NOFB,
       P_CONVEX_NOFB, P_DENSE_LSA, P_RRF_LSA, P_RRF_CLUE, P_RRF_MEMORY,
       P_SERVER, P_RW_REWRITE,
       P_RW_HYDE, P_RW_MULTI, P_RW_DECOMPOSE, P_RW_STEPBACK, P_FED_BM25,
       P_FED_BM25_CONVEX, P_FED_RRF, P_FED_RRF_CONVEX, P_FED_CONVEX,
       P_FED_CONVEX_CONVEX, P_FED_BM25_RR, P_FED_RRF_RR, P_FED_CONVEX_RR,
       P_QL, NPIPE };

typedef struct pipeline {
    const char *label, *tag;    /* tag: the run file's name and column */
    int mode, fusion, rerank;
    size_t rerank_top;
    int leg;                    /* 1: the dense leg alone (w_sparse 0) */
    int nofb;                   /* 1: no feedback (q.no_feedback: plain
                                ** BM25, plain dense recall); 2: the model
                                ** with the learned embedder (lsa 1) */
    int named;                  /* 1: a fusion the request names, weights
                                ** equal (as retrieve gives it); 0: the
                                ** engine's default weights */
    int input[2];               /* the stages it is built on; -1: none */
    int server;                 /* 1: through the protocol (methods.c) */
    const char *rewrite;        /* §7.7 retrieve.rewrite sent, or NULL */
} pipeline;

/* In order: the plain lists, the feedback legs, their fusions, the
** reranked cascades, the ablations, the reference.  The inputs are what
** a stage must not fall below: a leg its plain list, a hybrid the better
** of its two legs (with feedback: the legs the fusion really reads), a
** rerank the list it reranks. */
static const pipeline pipes[NPIPE] = {
    {"sparse, no feedback (BM25)", "bm25", RCP_MODE_SPARSE, RCP_FUSE_RRF,
     RCP_RERANK_NONE, 0, 0, 1, 0, {-1, -1}, 0, NULL},
    {"dense", "dense", RCP_MODE_DENSE, RCP_FUSE_RRF, RCP_RERANK_NONE, 0,
     0, 0, 0, {-1, -1}, 0, NULL},
    {"sparse default (BM25+RM3)", "lexleg", RCP_MODE_SPARSE,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_BM25, -1}, 0, NULL},
    {"dense leg alone (+Rocchio)", "denseleg", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 1, 0, 0, {P_DENSE, -1}, 0, NULL},
    {"hybrid: rrf, dense .15", "rrf", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_LEXLEG, P_DENSELEG}, 0, NULL},
    {"hybrid rrf, equal weights", "rrf-eq", RCP_MODE_HYBRID, RCP_FUSE_RRF,
     RCP_RERANK_NONE, 0, 0, 0, 1, {P_LEXLEG, P_DENSELEG}, 0, NULL},
    {"hybrid convex", "convex", RCP_MODE_HYBRID, RCP_FUSE_CONVEX,
     RCP_RERANK_NONE, 0, 0, 0, 1, {P_LEXLEG, P_DENSELEG}, 0, NULL},
    {"hybrid weighted", "weighted", RCP_MODE_HYBRID, RCP_FUSE_WEIGHTED,
     RCP_RERANK_NONE, 0, 0, 0, 1, {P_LEXLEG, P_DENSELEG}, 0, NULL},
    {"sparse default + cross-enc@100", "sparse-ce", RCP_MODE_SPARSE,
     RCP_FUSE_RRF, RCP_RERANK_CROSS, 100, 0, 0, 0, {P_LEXLEG, -1}, 0, NULL},
    {"hybrid rrf + cross-enc@100", "rrf-ce", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_CROSS, 100, 0, 0, 0, {P_RRF, -1}, 0, NULL},
    {"hybrid convex + cross-enc@100", "convex-ce", RCP_MODE_HYBRID,
     RCP_FUSE_CONVEX, RCP_RERANK_CROSS, 100, 0, 0, 1, {P_CONVEX, -1}, 0, NULL},
    {"hybrid rrf + colbert@100", "rrf-colbert", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_COLBERT, 100, 0, 0, 0, {P_RRF, -1}, 0, NULL},
    {"hybrid rrf, no feedback", "rrf-nofb", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 1, 0, {P_BM25, P_DENSE}, 0, NULL},
    {"hybrid convex, no feedback", "convex-nofb", RCP_MODE_HYBRID,
     RCP_FUSE_CONVEX, RCP_RERANK_NONE, 0, 0, 1, 1, {P_BM25, P_DENSE}, 0, NULL},
    /* the embedder learnt from each collection (--embedder lsa), beside
    ** the default: its dense list, and the default hybrid over it (rrf,
    ** dense .7, its own default weight) */
    {"dense, learned (--embedder lsa)", "dense-lsa", RCP_MODE_DENSE,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 2, 0, {-1, -1}, 0, NULL},
    {"hybrid rrf, learned", "rrf-lsa", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 2, 0, {P_LEXLEG, -1}, 0, NULL},
    {"hybrid rrf + top mem. clue", "rrf-clue", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_RRF, -1}, 0, NULL},
    {"hybrid rrf + memory clues", "rrf-memory", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_RRF, -1}, 0, NULL},
    /* retrieve through the protocol, candidateK 1000, the server's
    ** defaults otherwise (sparse: BM25, then RM3): without rewrite, then
    ** with each
    ** §7.8 transform applied server-side (retrieve.rewrite), each judged
    ** against the plain request */
    {"retrieve (protocol, no rewrite)", "server", 0, 0, 0, 0, 0, 0, 0,
     {P_LEXLEG, -1}, 1, NULL},
    {"retrieve rewrite=rewrite", "rw-rewrite", 0, 0, 0, 0, 0, 0, 0,
     {P_SERVER, -1}, 1, "rewrite"},
    {"retrieve rewrite=hyde", "rw-hyde", 0, 0, 0, 0, 0, 0, 0,
     {P_SERVER, -1}, 1, "hyde"},
    {"retrieve rewrite=multi-query", "rw-multi", 0, 0, 0, 0, 0, 0, 0,
     {P_SERVER, -1}, 1, "multi-query"},
    {"retrieve rewrite=decompose", "rw-decompose", 0, 0, 0, 0, 0, 0, 0,
     {P_SERVER, -1}, 1, "decompose"},
    {"retrieve rewrite=step-back", "rw-stepback", 0, 0, 0, 0, 0, 0, 0,
     {P_SERVER, -1}, 1, "step-back"},
    /* §16 federation: the collection split round robin over FED_SHARDS
    ** engines, each running its input's pipeline, the lists fused as
    ** federation.c fuses them (fed_search), judged against the unsplit
    ** engine */
    {"sparse default, 4 shards: rrf", "fed-bm25", RCP_MODE_SPARSE,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_LEXLEG, -1}, 0, NULL},
    {"sparse default, 4 shards: convex", "fed-bm25-cx", RCP_MODE_SPARSE,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_LEXLEG, -1}, 0, NULL},
    {"hybrid rrf, 4 shards: rrf", "fed-rrf", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_RRF, -1}, 0, NULL},
    {"hybrid rrf, 4 shards: convex", "fed-rrf-cx", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_RRF, -1}, 0, NULL},
    {"hybrid convex, 4 shards: rrf", "fed-convex", RCP_MODE_HYBRID,
     RCP_FUSE_CONVEX, RCP_RERANK_NONE, 0, 0, 0, 1, {P_CONVEX, -1}, 0, NULL},
    {"hybrid convex, 4 shards: convex", "fed-convex-cx", RCP_MODE_HYBRID,
     RCP_FUSE_CONVEX, RCP_RERANK_NONE, 0, 0, 0, 1, {P_CONVEX, -1}, 0, NULL},
    /* the same rrf federations, then the federation's second stage
    ** (fed_rerank), judged against the fused list it reranks */
    {"sparse default, 4 shards: rrf+rr", "fed-bm25-rr", RCP_MODE_SPARSE,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_FED_BM25, -1}, 0, NULL},
    {"hybrid rrf, 4 shards: rrf+rr", "fed-rrf-rr", RCP_MODE_HYBRID,
     RCP_FUSE_RRF, RCP_RERANK_NONE, 0, 0, 0, 0, {P_FED_RRF, -1}, 0, NULL},
    {"hybrid convex, 4 shards: rrf+rr", "fed-convex-rr", RCP_MODE_HYBRID,
     RCP_FUSE_CONVEX, RCP_RERANK_NONE, 0, 0, 0, 1, {P_FED_CONVEX, -1}, 0,
     NULL},
    {"reference: query likelihood", "ql", 0, 0, 0, 0, 0, 0, 0, {-1, -1}, 0,
     NULL},
};

/* How a federation row fuses its shards' lists (federation.c's methods). */
static int fed_fusion(int p)
{
    return p < P_FED_BM25_RR && (p - P_FED_BM25) % 2 ? RCP_FUSE_CONVEX
                                                     : RCP_FUSE_RRF;
}

static int is_fed(int p)
{
    return p >= P_FED_BM25 && p <= P_FED_CONVEX_RR;
}

enum { M_NDCG, M_MAP, M_R100, M_JUDGED, NMETRIC };
static const char *const metric_name[NMETRIC] = {
    "nDCG@10", "MAP", "R@100", "judged@10"
};

/* --rows: the pipelines run and shown (their inputs are added); all by
** default. */
static unsigned char want[NPIPE];

/* --rerank-weight: the cascade's weight of the reranker in every rerank
** row (rcp_model_query.rerank_weight; default -1, each method's own). */
static double rerank_weight = -1;

/* want[] from "TAG,TAG,...": each named pipeline and, transitively, the
** stages it is built on; 0 when a tag names none. */
static int select_rows(const char *list)
{
    const char *s = list;
    int p, grew = 1;
    memset(want, 0, sizeof want);
    while (*s) {
        size_t n = strcspn(s, ",");
        for (p = 0; p < NPIPE; p++)
            if (strlen(pipes[p].tag) == n && !strncmp(pipes[p].tag, s, n))
                break;
        if (p == NPIPE) {
            fprintf(stderr, "eval: --rows: no pipeline is tagged %.*s\n",
                    (int)n, s);
            return 0;
        }
        want[p] = 1;
        s += n + (s[n] == ',');
    }
    while (grew)
        for (grew = 0, p = 0; p < NPIPE; p++) {
            int i;
            for (i = 0; want[p] && i < 2; i++)
                if (pipes[p].input[i] >= 0 && !want[pipes[p].input[i]])
                    want[pipes[p].input[i]] = grew = 1;
        }
    return 1;
}

typedef struct run_opts {
    const char *runs_dir;       /* --runs: TREC run files, or NULL */
    size_t pool;                /* --pool N, 0: none */
    const char *pool_file;      /* --pool-file: where (NULL: stdout) */
} run_opts;

/* per query, per pipeline, per metric; and the top `pool` of each */
typedef struct results {
    double *v;                  /* [pipe][topic][metric] */
    size_t *top;                /* [pipe][topic][pool]: doc index + 1 */
} results;

static double *res_at(const results *r, const coll *c, int p, size_t t)
{
    return r->v + ((size_t)p * c->nt + t) * NMETRIC;
}

/* Score one ranking (document indexes, best first) for topic t. */
static void score_ranking(const coll *c, const topic *t, const size_t *d,
                          size_t n, double *m)
{
    size_t i, hits = 0, h100 = 0, seen10 = 0;
    double ap = 0, dcg = 0;
    for (i = 0; i < n; i++) {
        const judged *j = judgement(t, c->d[d[i]].id);
        if (j && i < 10)
            seen10++;
        if (!j || j->gain <= 0)
            continue;
        hits++;
        ap += (double)hits / (double)(i + 1);
        if (i < 10)
            dcg += j->gain / (log(i + 2.0) / log(2.0));
        if (i < 100)
            h100++;
    }
    m[M_NDCG] = t->idcg > 0 ? dcg / t->idcg : 0;
    m[M_MAP] = t->nrel ? ap / (double)t->nrel : 0;
    m[M_R100] = t->nrel ? (double)h100 / (double)t->nrel : 0;
    m[M_JUDGED] = n ? (double)seen10 / (double)(n < 10 ? n : 10) : 0;
}

/* The engine holding every document of c; docs[docno] is the index in c
** of the document the engine numbers docno (nothing is deleted, so the
** numbers stay put). */
static rcp_model *build_model(const coll *c, rcp_model_opts o,
                              size_t **docs)
{
    char err[256];
    rcp_model *m = rcp_model_new(&o, err, sizeof err);
    size_t i;
    if (!m) {
        fprintf(stderr, "eval: %s\n", err);
        exit(1);
    }
    *docs = xmalloc((c->nd + 1) * sizeof **docs);
    for (i = 0; i < c->nd; i++) {
        if (rcp_model_add(m, c->d[i].id, strlen(c->d[i].id), c->d[i].text,
                          c->d[i].len, NULL, 0)) {
            fprintf(stderr, "eval: out of memory\n");
            exit(1);
        }
    }
    if (rcp_model_train(m, 0) < 0) {   /* as rcp serve does after a load */
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    for (i = 0; i < c->nd; i++) {
        long dn = rcp_model_find(m, c->d[i].id, strlen(c->d[i].id));
        if (dn < 0 || (size_t)dn >= c->nd) {
            fprintf(stderr, "eval: %s: the engine lost document %s\n",
                    c->name, c->d[i].id);
            exit(1);
        }
        (*docs)[dn] = i;
    }
    return m;
}

/* The engine's ranking for topic t under pipeline p. */
static size_t engine_search(const rcp_model *m, const size_t *docs,
                            const pipeline *p, const topic *t, ranked *out)
{
    static rcp_model_hit hits[DEPTH];
    rcp_model_query q;
    size_t n, i;
    rcp_model_query_init(&q);
    q.text = t->text;
    q.len = t->len;
    q.k = q.candidate_k = DEPTH;
    q.mode = p->mode;
    q.fusion = p->fusion;
    q.rerank = p->rerank;
    q.rerank_top = p->rerank_top;
    q.rerank_weight = rerank_weight;
    q.no_confidence = 1;
    q.no_feedback = p->nofb == 1;
    if (p->named)
        q.w_dense = q.w_sparse = 1;
    if (p->leg)
        q.w_sparse = 0;
    if (rcp_model_search(m, &q, hits, &n)) {
        fprintf(stderr, "eval: search failed\n");
        exit(1);
    }
    for (i = 0; i < n; i++) {
        out[i].doc = docs[hits[i].doc];
        out[i].score = hits[i].score;
    }
    if (p->rerank != RCP_RERANK_NONE && n == p->rerank_top) {
        /* past topN: the input's ranks, which the reranker never saw (the
        ** top topN of the input are the set it reranked); scored 1, 2,
        ** ... below the last reranked hit, so that a run file (whose
        ** reader orders by score) keeps this order */
        size_t head = n;
        q.rerank = RCP_RERANK_NONE;
        if (rcp_model_search(m, &q, hits, &n)) {
            fprintf(stderr, "eval: search failed\n");
            exit(1);
        }
        for (i = head; i < n; i++) {
            out[i].doc = docs[hits[i].doc];
            out[i].score = out[head - 1].score - (double)(i - head + 1);
        }
        if (n < head)
            n = head;
    }
    return n;
}

/* ---- §7.17 memory clues, fed back into retrieval ---------------------- */

/* A server in-process over the collection's model: memory/build once over
** the live index, then memory/recall per query; the clues' queries are run
** as retrieves (the hybrid rrf pipeline) and either the top clue replaces
** the query (rrf-clue) or every list is fused by RRF, the query's with
** weight 1 and each clue's with MEMORY_FUSE x its weight (rrf-memory) --
** what a client does with clues (§7.17: "a client fans them out over
** retrieve"). */
#define MEMORY_CLUES 3
#define MEMORY_FUSE  0.5

typedef struct memsrv {
    rcp_server *s;
    rcp_buf     out;
    rcp_arena   a;
    char        id[64];
} memsrv;

static const rcp_json *mem_ask(memsrv *x, const char *frame, size_t n)
{
    const rcp_json *v;
    x->out.len = 0;
    rcp_arena_reset(&x->a);
    rcp_server_handle(x->s, frame, n, &x->out);
    v = rcp_json_parse(&x->a, x->out.data, x->out.len ? x->out.len - 1 : 0,
                       0, NULL);
    if (!v || !rcp_json_get(v, "result")) {
        fprintf(stderr, "eval: memory: %.*s\n", (int)x->out.len,
                x->out.data ? x->out.data : "");
        exit(1);
    }
    return rcp_json_get(v, "result");
}

static void memsrv_open(memsrv *x, rcp_model *m)
{
    static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":1}}";
    static const char build[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
        "\"memory/build\",\"params\":{}}";
    rcp_server_opts o;
    const rcp_json *id;
    memset(&o, 0, sizeof o);
    o.model = m;
    o.deadline_ms = 0;
    memset(x, 0, sizeof *x);
    rcp_buf_init(&x->out);
    rcp_arena_init(&x->a, 0);
    if (!(x->s = rcp_server_new(&o))) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    (void)mem_ask(x, init, sizeof init - 1);
    id = rcp_json_get(mem_ask(x, build, sizeof build - 1), "memoryId");
    if (!id || id->type != RCP_JSON_STRING || id->n >= sizeof x->id) {
        fprintf(stderr, "eval: memory/build gave no memoryId\n");
        exit(1);
    }
    memcpy(x->id, id->s, id->n);
}

static void memsrv_close(memsrv *x)
{
    rcp_server_free(x->s);
    rcp_buf_free(&x->out);
    rcp_arena_free(&x->a);
}

static size_t memory_search(memsrv *x, const rcp_model *m, const size_t *docs,
                            const coll *c, const topic *t, int top_only,
                            ranked *out)
{
    static ranked lists[MEMORY_CLUES + 1][DEPTH];
    static rcp_fuse_item items[MEMORY_CLUES + 1][DEPTH];
    rcp_fuse_list fl[MEMORY_CLUES + 1];
    rcp_buf f;
    rcp_jw w;
    const rcp_json *clues;
    rcp_fused *fused;
    size_t nl = 0, i, j, n;
    long nf;
    rcp_buf_init(&f);
    rcp_jw_init(&w, &f);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    rcp_jw_int(&w, 2);
    rcp_jw_key(&w, "method");
    rcp_jw_cstr(&w, "memory/recall");
    rcp_jw_key(&w, "params");
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "query");
    rcp_jw_str(&w, t->text, t->len);
    rcp_jw_key(&w, "memoryId");
    rcp_jw_cstr(&w, x->id);
    rcp_jw_key(&w, "n");
    rcp_jw_int(&w, MEMORY_CLUES);
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
    clues = rcp_json_get(mem_ask(x, f.data, f.len), "clues");
    rcp_buf_free(&f);
    if (!top_only) {
        n = engine_search(m, docs, &pipes[P_RRF], t, lists[nl]);
        fl[nl].weight = 1;
        fl[nl++].n = n;
    }
    for (i = 0; clues && i < clues->n && nl <= MEMORY_CLUES; i++) {
        const rcp_json *q = rcp_json_get(&clues->kids[i], "query");
        topic ct = *t;
        ct.text = (char *)q->s;
        ct.len = q->n;
        n = engine_search(m, docs, &pipes[P_RRF], &ct, lists[nl]);
        fl[nl].weight = MEMORY_FUSE
                        * rcp_json_num(rcp_json_get(&clues->kids[i], "weight"));
        fl[nl++].n = n;
        if (top_only)
            break;
    }
    if (nl == 0)                /* no clue: the query as it is */
        return engine_search(m, docs, &pipes[P_RRF], t, out);
    if (top_only) {
        memcpy(out, lists[0], fl[0].n * sizeof *out);
        return fl[0].n;
    }
    for (i = 0; i < nl; i++) {
        for (j = 0; j < fl[i].n; j++) {
            items[i][j].id = c->d[lists[i][j].doc].id;
            items[i][j].idlen = strlen(items[i][j].id);
            items[i][j].score = lists[i][j].score;
        }
        fl[i].items = items[i];
        fl[i].floor = 0;
    }
    if ((nf = rcp_fuse(RCP_FUSE_RRF, fl, nl, 60, &fused)) < 0) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    for (i = 0, n = 0; i < (size_t)nf && n < DEPTH; i++) {
        long dn = rcp_model_find(m, fused[i].id, fused[i].idlen);
        if (dn < 0)
            continue;
        out[n].doc = docs[dn];
        out[n++].score = fused[i].score;
    }
    rcp_free(fused);
    return n;
}

/* The ranking for topic t from a retrieve request through the protocol
** (rcp_server_handle, in process), rewrite p->rewrite when set. */
static size_t server_search(rcp_server *s, const rcp_model *m,
                            const size_t *docs, const pipeline *p,
                            const topic *t, ranked *out)
{
    rcp_buf req, resp;
    rcp_arena a;
    rcp_jw w;
    rcp_json_err err;
    const rcp_json *v, *hits;
    size_t i, n = 0;
    rcp_buf_init(&req);
    rcp_buf_init(&resp);
    rcp_arena_init(&a, 0);
    rcp_jw_init(&w, &req);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "jsonrpc");
    rcp_jw_cstr(&w, "2.0");
    rcp_jw_key(&w, "id");
    rcp_jw_int(&w, 1);
    rcp_jw_key(&w, "method");
    rcp_jw_cstr(&w, "retrieve");
    rcp_jw_key(&w, "params");
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "query");
    rcp_jw_str(&w, t->text, t->len);
    rcp_jw_key(&w, "k");
    rcp_jw_int(&w, DEPTH);
    rcp_jw_key(&w, "candidateK");
    rcp_jw_int(&w, DEPTH);
    rcp_jw_key(&w, "includeText");
    rcp_jw_bool(&w, 0);
    if (p->rewrite) {
        rcp_jw_key(&w, "rewrite");
        rcp_jw_cstr(&w, p->rewrite);
    }
    rcp_jw_obj_end(&w);
    rcp_jw_obj_end(&w);
    rcp_server_handle(s, req.data, req.len, &resp);
    v = resp.oom ? NULL : rcp_json_parse(&a, resp.data, resp.len, 0, &err);
    hits = v && rcp_json_get(v, "result")
           ? rcp_json_get(rcp_json_get(v, "result"), "hits") : NULL;
    if (!hits) {
        fprintf(stderr, "eval: retrieve failed: %.*s\n",
                (int)(resp.len < 400 ? resp.len : 400), resp.data);
        exit(1);
    }
    for (i = 0; i < hits->n && n < DEPTH; i++) {
        const rcp_json *id = rcp_json_get(&hits->kids[i], "id");
        long dn = id ? rcp_model_find(m, id->s, id->n) : -1;
        if (dn < 0)
            continue;
        out[n].doc = docs[dn];
        out[n++].score = rcp_json_num(rcp_json_get(&hits->kids[i],
                                                   "score"));
    }
    rcp_arena_free(&a);
    rcp_buf_free(&req);
    rcp_buf_free(&resp);
    return n;
}

/* A server over m, initialized, for the pipelines through the protocol. */
static rcp_server *eval_server(rcp_model *m)
{
    static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
        "\"initialize\",\"params\":{\"protocolVersion\":1}}";
    rcp_server_opts so;
    rcp_server *s;
    rcp_buf out;
    memset(&so, 0, sizeof so);
    so.model = m;
    so.debug = 1;       /* retrieve offers every rewrite, to measure */
    if (!(s = rcp_server_new(&so))) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    rcp_buf_init(&out);
    rcp_server_handle(s, init, sizeof init - 1, &out);
    rcp_buf_free(&out);
    return s;
}

/* ---- federation (§16): the collection over shards -------------------- */

#define FED_SHARDS 4

/* Shard s of n: every document whose index in c is s modulo n (round
** robin, as bench_federation splits); docs maps the shard's numbers to
** indexes in c. */
static rcp_model *build_shard(const coll *c, rcp_model_opts o, size_t s,
                              size_t n, size_t **docs)
{
    char err[256];
    rcp_model *m = rcp_model_new(&o, err, sizeof err);
    size_t i, k = 0;
    if (!m) {
        fprintf(stderr, "eval: %s\n", err);
        exit(1);
    }
    *docs = xmalloc((c->nd / n + 2) * sizeof **docs);
    for (i = s; i < c->nd; i += n) {
        if (rcp_model_add(m, c->d[i].id, strlen(c->d[i].id), c->d[i].text,
                          c->d[i].len, NULL, 0)) {
            fprintf(stderr, "eval: out of memory\n");
            exit(1);
        }
        (*docs)[k++] = i;
    }
    if (rcp_model_train(m, 0) < 0) {   /* as an rcp serve shard would */
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    return m;
}

/* What federation.c answers with k = DEPTH: each shard asked for
** min(2k, maxK) = DEPTH (maxK 1000), the lists fused by rcp_fuse in shard
** order with weight 1 (convex: each shard's advertised scoreFloor, -1). */
static size_t fed_search(rcp_model *const *m, size_t *const *docs,
                         const pipeline *p, const topic *t, int method,
                         const coll *c, ranked *out)
{
    static ranked rk[FED_SHARDS][DEPTH];
    static rcp_fuse_item it[FED_SHARDS][DEPTH];
    rcp_fuse_list l[FED_SHARDS];
    rcp_fused *fz;
    long nf, i;
    size_t s, n, j;
    for (s = 0; s < FED_SHARDS; s++) {
        n = engine_search(m[s], docs[s], p, t, rk[s]);
        for (j = 0; j < n; j++) {
            it[s][j].id = c->d[rk[s][j].doc].id;
            it[s][j].idlen = strlen(it[s][j].id);
            it[s][j].score = rk[s][j].score;
        }
        l[s].items = it[s];
        l[s].n = n;
        l[s].weight = 1;
        l[s].floor = -1;
    }
    if ((nf = rcp_fuse(method, l, FED_SHARDS, 60, &fz)) < 0) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    for (i = 0; i < nf && i < DEPTH; i++)
        for (s = 0; s < FED_SHARDS; s++)
            if (fz[i].pos[s] >= 0) {
                out[i].doc = rk[s][fz[i].pos[s]].doc;
                out[i].score = fz[i].score;
                break;
            }
    rcp_free(fz);
    return (size_t)(nf < DEPTH ? nf : DEPTH);
}

/* federation.c's second stage (README "Federation (§16)"): the top
** FED_RR_TOP of the fused list d[0..n) reranked by the first shard's
** cross-encoder, the order the cascade's RRF (rrfK 60) of fused rank
** and rerank rank, ties by rerank rank then fused position; the rest
** stays in fused order. */
#define FED_RR_TOP 100
static void fed_rerank(const rcp_model *m0, const coll *c, const topic *t,
                       ranked *d, size_t n)
{
    static const char *tx[FED_RR_TOP];
    static size_t len[FED_RR_TOP], out[FED_RR_TOP];
    static ranked was[FED_RR_TOP];
    static double sc[FED_RR_TOP], cas[FED_RR_TOP];
    static long rank[FED_RR_TOP];
    size_t top = n < FED_RR_TOP ? n : FED_RR_TOP, i, j;
    for (i = 0; i < top; i++) {
        tx[i] = c->d[d[i].doc].text;
        len[i] = c->d[d[i].doc].len;
    }
    if (rcp_model_rerank(m0, RCP_RERANK_CROSS, t->text, t->len, tx, len, top,
                         sc)) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    for (i = 0; i < top; i++) {
        double term;
        rank[i] = 0;
        for (j = 0; j < top; j++)
            rank[i] += sc[j] > sc[i] || (sc[j] == sc[i] && j < i);
        cas[i] = 1.0 / (60.0 + (double)(i + 1));
        term = 1.0 / (60.0 + (double)(rank[i] + 1));
        cas[i] += term;
    }
    for (i = 0; i < top; i++) {         /* insertion: the cascade's order */
        size_t x = i;
        for (j = i; j > 0; j--) {
            size_t y = out[j - 1];
            if (cas[x] < cas[y] || (cas[x] == cas[y] && rank[x] > rank[y]))
                break;
            out[j] = y;
        }
        out[j] = x;
    }
    memcpy(was, d, top * sizeof *d);
    for (i = 0; i < top; i++) {
        d[i] = was[out[i]];
        d[i].score = cas[out[i]];
    }
    for (i = top; i < n; i++)   /* below the cascade's, as engine_search */
        d[i].score = d[top - 1].score - (double)(i - top + 1);
}

static void run_coll(const coll *c, const rcp_model_opts *o,
                     const run_opts *ro, results *r)
{
    static ranked rk[DEPTH];
    static size_t d[DEPTH];
    rcp_model_opts learned = *o;
    size_t *docs, *docsh;
    rcp_model *m = build_model(c, *o, &docs), *mh;
    rcp_server *srv = eval_server(m);
    rcp_model *shard[FED_SHARDS];
    size_t *sdocs[FED_SHARDS], s;
    ql x;
    int p, fed = 0;
    memsrv ms;
    for (p = P_FED_BM25; p <= P_FED_CONVEX_RR; p++)
        fed |= want[p];
    for (s = 0; s < FED_SHARDS; s++)
        shard[s] = fed ? build_shard(c, *o, s, FED_SHARDS, &sdocs[s])
                       : (sdocs[s] = NULL, NULL);
    printf("%s: dense embedder %s\n\n", c->name,
           rcp_model_identity(m, RCP_EMBED_DENSE));
    learned.lsa = 1;
    mh = want[P_DENSE_LSA] || want[P_RRF_LSA]
         ? build_model(c, learned, &docsh) : (docsh = NULL, NULL);
    if (want[P_RRF_CLUE] || want[P_RRF_MEMORY])
        memsrv_open(&ms, m);
    ql_build(&x, c);
    r->v = xmalloc((size_t)NPIPE * (c->nt + 1) * NMETRIC * sizeof *r->v);
    r->top = calloc((size_t)NPIPE * (c->nt + 1) * (ro->pool + 1),
                    sizeof *r->top);
    if (!r->top) {
        fprintf(stderr, "eval: out of memory\n");
        exit(1);
    }
    for (p = 0; p < NPIPE; p++) {
        FILE *f = NULL;
        size_t t, i, n;
        if (!want[p])
            continue;
        if (ro->runs_dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.%s.run", ro->runs_dir,
                     c->name, pipes[p].tag);
            if (!(f = fopen(path, "w"))) {
                fprintf(stderr, "eval: cannot write %s\n", path);
                exit(2);
            }
        }
        for (t = 0; t < c->nt; t++) {
            n = p == P_QL ? ql_search(&x, c, &c->t[t], rk, DEPTH)
                : is_fed(p) ? fed_search(shard, sdocs, &pipes[p], &c->t[t],
                                         fed_fusion(p), c, rk)
                : p == P_RRF_CLUE || p == P_RRF_MEMORY
                          ? memory_search(&ms, m, docs, c, &c->t[t],
                                          p == P_RRF_CLUE, rk)
                          : pipes[p].server
                          ? server_search(srv, m, docs, &pipes[p], &c->t[t],
                                          rk)
                          : pipes[p].nofb == 2
                          ? engine_search(mh, docsh, &pipes[p], &c->t[t], rk)
                          : engine_search(m, docs, &pipes[p], &c->t[t], rk);
            if (p >= P_FED_BM25_RR && p <= P_FED_CONVEX_RR)
                fed_rerank(shard[0], c, &c->t[t], rk, n);
            for (i = 0; i < n; i++)
                d[i] = rk[i].doc;
            score_ranking(c, &c->t[t], d, n, res_at(r, c, p, t));
            for (i = 0; i < n && i < ro->pool; i++)
                r->top[((size_t)p * c->nt + t) * ro->pool + i] = d[i] + 1;
            for (i = 0; f && i < n; i++)
                fprintf(f, "%s Q0 %s %lu %.6f %s\n", c->t[t].num,
                        c->d[d[i]].id, (unsigned long)i + 1, rk[i].score,
                        pipes[p].tag);
        }
        if (f)
            fclose(f);
    }
    for (s = 0; s < FED_SHARDS; s++) {
        rcp_model_free(shard[s]);
        free(sdocs[s]);
    }
    ql_free(&x);
    rcp_server_free(srv);
    if (want[P_RRF_CLUE] || want[P_RRF_MEMORY])
        memsrv_close(&ms);
    rcp_model_free(mh);
    rcp_model_free(m);
    free(docsh);
    free(docs);
}

/* ---- reporting -------------------------------------------------------- */

typedef struct column {
    const coll    *c;
    const results *r;
    int            half;
} column;

/* Mean of metric k of pipeline p over the column's judged topics. */
static double col_mean(const column *col, int p, int k)
{
    size_t t, n = 0;
    double s = 0;
    for (t = 0; t < col->c->nt; t++)
        if (col->c->t[t].half == col->half && col->c->t[t].nrel) {
            s += res_at(col->r, col->c, p, t)[k];
            n++;
        }
    return n ? s / (double)n : 0;
}

static double round4(double x)
{
    return floor(x * 10000 + 0.5) / 10000;
}

/* The input of p whose mean is higher in this column (-1: none). */
static int best_input(const column *col, int p, int k)
{
    int a = pipes[p].input[0], b = pipes[p].input[1];
    if (a < 0 || b < 0)
        return a;
    return col_mean(col, b, k) > col_mean(col, a, k) ? b : a;
}

/* Below its input as the table shows it (to 4 places). */
static int below_input(const column *col, int p, int k)
{
    int in = best_input(col, p, k);
    return in >= 0 && round4(col_mean(col, p, k)) < round4(col_mean(col, in,
                                                                    k));
}

/* xorshift64*: the randomization test's generator, seeded the same for
** every test, so the p-values are reproducible. */
static unsigned long long rng_state;

static unsigned long long rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

/* Two-sided paired randomization test (Fisher; Smucker, Allan and
** Carterette 2007) of the mean per-query difference of metric k between
** p and in, by random sign flips; counts the queries that got worse and
** better. */
static double paired_p(const column *col, int p, int in, int k, int *worse,
                       int *better)
{
    size_t t, n = 0, i, j;
    double *dv = xmalloc((col->c->nt + 1) * sizeof *dv), obs = 0;
    long ge = 0;
    *worse = *better = 0;
    for (t = 0; t < col->c->nt; t++)
        if (col->c->t[t].half == col->half && col->c->t[t].nrel) {
            double x = res_at(col->r, col->c, p, t)[k]
                       - res_at(col->r, col->c, in, t)[k];
            dv[n++] = x;
            obs += x;
            *worse += x < -1e-12;
            *better += x > 1e-12;
        }
    rng_state = 0x9e3779b97f4a7c15ULL;
    for (i = 0; i < NPERM; i++) {
        double s = 0;
        for (j = 0; j < n; j++)
            s += (rng() >> 63) ? dv[j] : -dv[j];
        ge += fabs(s) >= fabs(obs) - 1e-12;
    }
    free(dv);
    return (double)(ge + 1) / (double)(NPERM + 1);
}

/* The table's mark for p in col: "<" below its input, "<!" below with
** p < 0.05 (a drop noise explains badly), "" at or above. */
static const char *mark(const column *col, int p, int k)
{
    int w, b;
    if (k == M_JUDGED || !below_input(col, p, k))
        return "";
    return paired_p(col, p, best_input(col, p, k), k, &w, &b) < 0.05 ? "<!"
                                                                     : "<";
}

/* The metrics of column i: nDCG@10, MAP, R@100, and judged@10 where the
** collection is pooled. */
static int col_metrics(const column *col)
{
    return col->c->pooled ? NMETRIC : M_JUDGED;
}

/* The stages p is built on, by tag ("a / b": the better of the two). */
static void input_name(int p, char *out, size_t cap)
{
    int a = pipes[p].input[0], b = pipes[p].input[1];
    snprintf(out, cap, "%s%s%s", a < 0 ? "-" : pipes[a].tag,
             b < 0 ? "" : " / ", b < 0 ? "" : pipes[b].tag);
}

/* The one table: a row per pipeline (its label, its tag, the stages it
** is built on), a column per collection x half holding nDCG@10, MAP and
** R@100 (and judged@10 where the collection is pooled), each figure
** marked "<" / "<!" when below its input (mark). */
static void print_table(const column *cols, size_t ncol)
{
    char h[96];
    size_t i, lw = strlen("pipeline"), cw[4];
    int p, k;
    for (p = 0; p < NPIPE; p++)
        if (want[p] && strlen(pipes[p].label) > lw)
            lw = strlen(pipes[p].label);
    printf("\n| %-*s | %-13s | %-20s |", (int)lw, "pipeline", "tag",
           "input");
    for (i = 0; i < ncol; i++) {
        int n = snprintf(h, sizeof h, "%s %s:", cols[i].c->name,
                         cols[i].c->half[cols[i].half]);
        for (k = 0; k < col_metrics(&cols[i]); k++)
            n += snprintf(h + n, sizeof h - (size_t)n, " %s",
                          metric_name[k]);
        cw[i] = (size_t)n > (size_t)col_metrics(&cols[i]) * 9 - 1
                ? (size_t)n : (size_t)col_metrics(&cols[i]) * 9 - 1;
        printf(" %-*s |", (int)cw[i], h);
    }
    printf("\n|%.*s|---------------|----------------------|", (int)lw + 2,
           "------------------------------------------------------------");
    for (i = 0; i < ncol; i++)
        printf("%.*s|", (int)cw[i] + 2, "----------------------------------"
               "------------------------");
    printf("\n");
    for (p = 0; p < NPIPE; p++) {
        if (!want[p])
            continue;
        input_name(p, h, sizeof h);
        printf("| %-*s | %-13s | %-20s |", (int)lw, pipes[p].label,
               pipes[p].tag, h);
        for (i = 0; i < ncol; i++) {
            int n = 0;
            for (k = 0; k < col_metrics(&cols[i]); k++)
                n += snprintf(h + n, sizeof h - (size_t)n, "%s%6.4f%-2s",
                              k ? " " : "", col_mean(&cols[i], p, k),
                              mark(&cols[i], p, k));
            printf(" %-*s |", (int)cw[i], h);
        }
        printf("\n");
    }
}

/* One line per stage and column that falls below its input somewhere:
** for each metric, the figures, the mean difference, the queries that got
** worse / better and the paired randomization p. */
static void print_drops(const column *cols, size_t ncol)
{
    size_t i;
    int p, k, any = 0;
    printf("\nBelow the input stage (\"<\" above; \"<!\": p < 0.05): "
           "figure vs input (difference; queries worse / better; two-sided "
           "paired randomization p, %d permutations)\n\n", NPERM);
    for (p = 0; p < NPIPE; p++)
        for (i = 0; i < ncol && want[p]; i++) {
            int first = -1;
            for (k = 0; k < M_JUDGED; k++) {
                int in, w, b;
                double pv, x, y;
                if (!below_input(&cols[i], p, k))
                    continue;
                in = best_input(&cols[i], p, k);
                pv = paired_p(&cols[i], p, in, k, &w, &b);
                x = col_mean(&cols[i], p, k);
                y = col_mean(&cols[i], in, k);
                if (first < 0)
                    printf("- %s, %s %s, below %s:", pipes[p].label,
                           cols[i].c->name, cols[i].c->half[cols[i].half],
                           pipes[in].label);
                printf("%s %s %.4f vs %.4f (%+.4f; %d / %d; p %.3f)%s",
                       first < 0 ? "" : ";", metric_name[k], x, y, x - y, w,
                       b, pv, in != first && first >= 0 ? " vs the other leg"
                                                        : "");
                if (first < 0)
                    first = in;
                any = 1;
            }
            if (first >= 0)
                printf("\n");
        }
    if (!any)
        printf("- none: every stage is at or above its input everywhere\n");
}

/* --pool N: the unjudged documents of every pipeline's top N. */
static void print_pool(FILE *f, const coll *c, const results *r,
                       size_t depth)
{
    size_t t, i, pooled = 0;
    unsigned char *seen = xmalloc(c->nd + 1);
    int p;
    for (t = 0; t < c->nt; t++) {
        memset(seen, 0, c->nd + 1);
        for (i = 0; i < depth; i++)          /* best ranks first */
            for (p = 0; p < NPIPE; p++) {
                size_t d = r->top[((size_t)p * c->nt + t) * depth + i];
                if (!d || !want[p] || seen[d - 1] || judgement(&c->t[t], c->d[d - 1].id))
                    continue;
                seen[d - 1] = 1;
                fprintf(f, "%s\t%s\t%s\n", c->t[t].num, c->d[d - 1].id,
                        c->d[d - 1].text);
                pooled++;
            }
    }
    fprintf(stderr, "eval: %s: %lu unjudged documents in the top %lu of "
            "the %d pipelines\n", c->name, (unsigned long)pooled,
            (unsigned long)depth, NPIPE);
    free(seen);
}

static void describe(const coll *c)
{
    size_t t, nq[2] = {0, 0}, nr[2] = {0, 0}, nj = 0, n2 = 0, k;
    int h;
    for (t = 0; t < c->nt; t++) {
        if (!c->t[t].nrel)
            continue;
        nq[c->t[t].half]++;
        nr[c->t[t].half] += c->t[t].nrel;
        nj += c->t[t].nj;
        for (k = 0; k < c->t[t].nj; k++)
            n2 += c->t[t].j[k].gain >= 2;
    }
    printf("%s: %lu documents, %lu topics;", c->name, (unsigned long)c->nd,
           (unsigned long)c->nt);
    for (h = 0; h < c->nhalves; h++)
        printf(" %s %lu judged (%lu relevant)", c->half[h],
               (unsigned long)nq[h], (unsigned long)nr[h]);
    if (c->pooled)
        printf("; %lu judgements, %lu of the relevant of grade 2",
               (unsigned long)nj, (unsigned long)n2);
    printf("\n");
}

/* ---- §15.2 the injection screen (advisory), measured ------------------ */

#define VARIANTS_NAME "injection-variants.jsonl"
#define VARIANTS "tests/" VARIANTS_NAME

/* Attack variants caught / total (tests/injection-variants.jsonl, one
** {"kind", "text"} per line) and benign passages flagged / total (each
** collection's documents), printed as a table; the misses are listed. */
static void screen_eval(const coll *cs, size_t nc)
{
    char *data = slurp(VARIANTS), *s, *line, **miss;
    size_t caught = 0, total = 0, nmiss = 0, i, k, flagged;
    rcp_arena a;
    rcp_json_err err;
    miss = xmalloc((strlen(data) / 2 + 1) * sizeof *miss);
    rcp_arena_init(&a, 0);
    for (s = data; (line = next_line(&s)) != NULL;) {
        const rcp_json *v, *t;
        if (!*line)
            continue;
        rcp_arena_reset(&a);
        v = rcp_json_parse(&a, line, strlen(line), 0, &err);
        t = v ? rcp_json_get(v, "text") : NULL;
        if (!t || t->type != RCP_JSON_STRING) {
            fprintf(stderr, "eval: %s: a line is not {kind, text}\n",
                    VARIANTS);
            exit(2);
        }
        total++;
        if (rcp_text_injection(t->s, t->n) == 1)
            caught++;
        else
            miss[nmiss++] = line;
    }
    printf("\nInjection screen (rcp_text_injection; advisory, §15.2)\n\n"
           "| set                                        | flagged / total |\n"
           "|--------------------------------------------|-----------------|"
           "\n");
    printf("| attack variants (%-24s) | %5lu / %-7lu |\n", VARIANTS_NAME,
           (unsigned long)caught, (unsigned long)total);
    for (i = 0; i < nc; i++) {
        for (k = 0, flagged = 0; k < cs[i].nd; k++)
            flagged += rcp_text_injection(cs[i].d[k].text,
                                          cs[i].d[k].len) == 1;
        printf("| benign: %-34s | %5lu / %-7lu |\n", cs[i].name,
               (unsigned long)flagged, (unsigned long)cs[i].nd);
    }
    printf("\nVariants missed:\n");
    for (i = 0; i < nmiss; i++)
        printf("- %s\n", miss[i]);
    rcp_arena_free(&a);
    free(miss);
    free(data);
}

int main(int argc, char **argv)
{
    const char *cran = NULL, *kjv = NULL, *kjv_text = NULL;
    rcp_model_opts o;
    run_opts ro = {NULL, 0, NULL};
    FILE *pf = stdout;
    coll cs[2];
    results rs[2];
    column cols[4];
    size_t nc = 0, ncol = 0, i;
    rcp_model *probe;
    char err[256];
    int a, h, rows = 0;
    rcp_model_opts_init(&o);
    memset(want, 1, sizeof want);
    for (a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (argv[a][0] != '-' && !cran) {
            cran = argv[a];
            continue;
        }
        if (!v)
            goto usage;
        if (!strcmp(argv[a], "--cranfield"))
            cran = v;
        else if (!strcmp(argv[a], "--kjv"))
            kjv = v;
        else if (!strcmp(argv[a], "--kjv-text"))
            kjv_text = v;
        else if (!strcmp(argv[a], "--dim"))
            o.dim = (unsigned)atoi(v);
        else if (!strcmp(argv[a], "--vectors"))
            o.vectors_path = v;
        else if (!strcmp(argv[a], "--prf"))
            o.prf_docs = (unsigned)atoi(v);
        else if (!strcmp(argv[a], "--runs"))
            ro.runs_dir = v;
        else if (!strcmp(argv[a], "--pool"))
            ro.pool = (size_t)atoi(v);
        else if (!strcmp(argv[a], "--pool-file"))
            ro.pool_file = v;
        else if (!strcmp(argv[a], "--rerank-weight"))
            rerank_weight = atof(v);
        else if (!strcmp(argv[a], "--rows")) {
            if (!select_rows(v))
                return 2;
            rows = 1;
        }
        else
            goto usage;
        a++;
    }
    if ((!cran && !kjv) || (kjv && !kjv_text))
        goto usage;
    if (!(probe = rcp_model_new(&o, err, sizeof err))) {
        fprintf(stderr, "eval: %s\n", err);
        return 1;
    }
    printf("Retrieval quality, depth %d, embedder %s\n\n", DEPTH,
           o.lsa && !o.vectors_path ? "rcp-lsa-v1, learned from each "
           "collection (below)" : rcp_model_identity(probe, RCP_EMBED_DENSE));
    rcp_model_free(probe);
    if (cran)
        load_cranfield(&cs[nc++], cran);
    if (kjv)
        load_kjv(&cs[nc++], kjv, kjv_text);
    for (i = 0; i < nc; i++) {
        describe(&cs[i]);
        run_coll(&cs[i], &o, &ro, &rs[i]);
        for (h = 0; h < cs[i].nhalves; h++) {
            cols[ncol].c = &cs[i];
            cols[ncol].r = &rs[i];
            cols[ncol++].half = h;
        }
    }
    print_table(cols, ncol);
    print_drops(cols, ncol);
    if (!rows)
        screen_eval(cs, nc);
    if (ro.pool && ro.pool_file && !(pf = fopen(ro.pool_file, "w"))) {
        fprintf(stderr, "eval: cannot write %s\n", ro.pool_file);
        return 2;
    }
    for (i = 0; ro.pool && i < nc; i++)
        if (cs[i].pooled)
            print_pool(pf, &cs[i], &rs[i], ro.pool);
    if (pf != stdout && fclose(pf)) {
        fprintf(stderr, "eval: cannot write %s\n", ro.pool_file);
        return 2;
    }
    for (i = 0; i < nc; i++) {
        free(rs[i].v);
        free(rs[i].top);
        coll_free(&cs[i]);
    }
    return 0;
usage:
    fprintf(stderr, "usage: eval [CRANFIELD_DIR] [--cranfield DIR] "
            "[--kjv DIR --kjv-text FILE] [--dim N] [--vectors FILE] "
            "[--prf N] [--runs DIR] [--pool N [--pool-file FILE]] "
            "[--rows TAG,...] [--rerank-weight W]\n");
    return 2;
}
