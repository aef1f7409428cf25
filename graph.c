/*
** graph.c -- the term graph behind `graph` (§7.9) and `memory` (§7.17):
** salient terms and phrases of the passages as nodes, their co-occurrence
** within passages as weighted edges, Louvain communities with extractive
** summaries, and personalised PageRank over it.
**
** Why a file of its own: building and walking a graph is a concern apart
** from ranking documents (model.c) and from the protocol's method bodies
** (methods.c).  It reads the passages through a source the caller gives
** (methods.c hands it the live documents, or a memory/build's inline
** documents) and text.c's tokenizer, so a term means what it means to the
** index; it knows neither the protocol nor the store.
**
** NOTES ON THE DESIGN
**
**  1. The graph is a function of the set of passages, never of the order
**     they were added in: every sync orders the passages by id and ranks
**     terms by their strings, so an index that reached the same documents
**     by other adds and deletes (or a restart that replayed them) has the
**     same graph, node for node.  A passage is a live document of the
**     engine (a chunk, when index/add chunked).
**  2. Nodes.  A term is a stem of the index's tokenizer (numbers and
**     terms under 3 bytes left out) or a phrase: two terms adjacent in the
**     text with no stopword between them ("boundari layer").  In each
**     passage its terms are weighed by tf-idf, (1 + ln tf) ln(N / df), and
**     the GRAPH_SALIENT heaviest that occur in at least two passages are
**     its salient terms; the nodes are the terms salient somewhere (at
**     most GRAPH_MAX_NODES: those salient in most passages).  A node's id
**     is its label: the byte-wise smallest surface form it has in the
**     passages ("layer" for layer/layers), a phrase's being two words.
**  3. Edges.  Two nodes salient in the same passage are joined; the
**     weight is the number of passages where both are (GRAPH_MAX_EDGES).
**  4. Communities: Louvain (Blondel et al. 2008) made deterministic --
**     nodes visited in index order (label order), a move only for a
**     strictly larger modularity gain, ties to the lower community --
**     each level aggregated into the next until a level merges nothing
**     (at most GRAPH_MAX_LEVELS).  Level 0 is the finest.  A community
**     of one node is no topic and is not listed.  Listed communities are
**     ordered by size, internal weight, then their first node.
**  5. Summaries are extractive: the community's representative passage
**     is the one whose salient terms weigh most in it; its summary is the
**     sentence of that passage holding most of the community's top terms,
**     trimmed to GRAPH_SUMMARY bytes.  Nothing is generated.
**  6. Incremental upkeep: the tokenised bags of the passages are kept by
**     id between syncs, so after an add or a delete only the passages
**     whose text changed are tokenised again; the rest (salience, edges,
**     communities) is recomputed from the bags -- linear in their size,
**     then Louvain, a few sweeps over the edges.
**  7. Every long loop calls the source's check, so a cancel or deadline
**     stops a sync (or a PageRank) between two passages, and the graph
**     is then left empty (it never half-reflects a corpus).
*/
#include "rcp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GRAPH_SALIENT     8        /* salient terms per passage (note 2) */
#define GRAPH_MAX_NODES   20000
#define GRAPH_MAX_EDGES   (1u << 22)
#define GRAPH_MAX_PASSAGES 200000  /* the first ones in id order */
#define GRAPH_MAX_LEVELS  4
#define GRAPH_SWEEPS      32       /* Louvain sweeps per level */
#define GRAPH_SUMMARY     300      /* bytes of a community summary */
#define GRAPH_REPS        3        /* representative passages kept */
#define GRAPH_TOP_TERMS   8        /* community terms a summary looks for */
#define GRAPH_CHECK_EVERY 256      /* passages between two checks */
#define GRAPH_PPR_ITERS   30
#define GRAPH_PPR_DAMPING 0.5      /* HippoRAG's damping: stay near seeds */
#define NONE              UINT32_MAX

/* MARK: - Interned strings ------------------------------------------------ */

typedef struct strtab {
    char     *pool;
    size_t    len, cap;
    size_t   *off;          /* string i is pool[off[i] .. off[i] + slen[i]) */
    uint32_t *slen;
    size_t    n, offcap, slencap;
    uint32_t *slot;         /* open addressing, NONE = free */
    size_t    nslot;
} strtab;

static uint64_t hash_str(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603u;
    size_t i;
    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h ^ (h >> 29);
}

static const char *str_at(const strtab *t, uint32_t i, size_t *n)
{
    *n = t->slen[i];
    return t->pool + t->off[i];
}

static int str_eq(const strtab *t, uint32_t i, const char *p, size_t n)
{
    return t->slen[i] == n && memcmp(t->pool + t->off[i], p, n) == 0;
}

static void strtab_free(strtab *t)
{
    rcp_free(t->pool);
    rcp_free(t->off);
    rcp_free(t->slen);
    rcp_free(t->slot);
    memset(t, 0, sizeof *t);
}

/* The index of p[0..n), NONE when absent. */
static uint32_t str_find(const strtab *t, const char *p, size_t n)
{
    size_t s;
    if (!t->nslot)
        return NONE;
    for (s = hash_str(p, n) & (t->nslot - 1); t->slot[s] != NONE;
         s = (s + 1) & (t->nslot - 1))
        if (str_eq(t, t->slot[s], p, n))
            return t->slot[s];
    return NONE;
}

static int str_rehash(strtab *t, size_t nslot)
{
    uint32_t *slot = rcp_malloc(nslot * sizeof *slot);
    size_t i, s;
    if (!slot)
        return -1;
    for (i = 0; i < nslot; i++)
        slot[i] = NONE;
    for (i = 0; i < t->n; i++) {
        for (s = hash_str(t->pool + t->off[i], t->slen[i]) & (nslot - 1);
             slot[s] != NONE; s = (s + 1) & (nslot - 1))
            ;
        slot[s] = (uint32_t)i;
    }
    rcp_free(t->slot);
    t->slot = slot;
    t->nslot = nslot;
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    size_t c = *cap ? *cap : 64;
    void *q;
    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    if (!(q = rcp_realloc(*p, c * size)))
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Intern p[0..n): its index in *out.  0, -1 out of memory. */
static int str_intern(strtab *t, const char *p, size_t n, uint32_t *out)
{
    uint32_t i = str_find(t, p, n);
    if (i != NONE) {
        *out = i;
        return 0;
    }
    if (t->n >= NONE - 1 || (t->n + 1) * 2 > t->nslot) {
        if (t->n >= NONE - 1 || str_rehash(t, t->nslot ? t->nslot * 2 : 1024))
            return -1;
    }
    if (grow((void **)&t->pool, &t->cap, t->len + n + 1, 1))
        return -1;
    if (grow((void **)&t->off, &t->offcap, t->n + 1, sizeof *t->off)
        || grow((void **)&t->slen, &t->slencap, t->n + 1, sizeof *t->slen))
        return -1;
    memcpy(t->pool + t->len, p, n);
    t->off[t->n] = t->len;
    t->slen[t->n] = (uint32_t)n;
    t->len += n;
    i = (uint32_t)t->n++;
    {
        size_t s;
        for (s = hash_str(p, n) & (t->nslot - 1); t->slot[s] != NONE;
             s = (s + 1) & (t->nslot - 1))
            ;
        t->slot[s] = i;
    }
    *out = i;
    return 0;
}

/* MARK: - Passages: their tokenised bags, kept by id (note 6) ------------- */

typedef struct gent {
    uint32_t term, surf, tf;
} gent;

typedef struct bag {
    char     *id;
    size_t    idlen, textlen;
    uint64_t  texth;
    gent     *e;
    uint32_t  n;
    size_t    src;          /* its index in the source of the last sync */
    int       seen;
} bag;

/* The graph derived at the last sync. */
struct graph {
    strtab    str;          /* terms, surfaces, labels */
    bag     **bags;         /* kept across syncs, any order */
    size_t    nbags, bcap;
    /* derived (note 1): rebuilt by every sync */
    bag     **pass;         /* the passages, in id order */
    size_t    npass;
    int       truncated;    /* more passages, nodes or edges than the caps */
    uint32_t *node_of;      /* per interned string: its node, or NONE */
    uint32_t *label_node;   /* per interned string: the node it labels */
    size_t    nstr_mapped;
    uint32_t *node_term, *node_label, *node_df;
    size_t    nnodes;
    uint32_t *sel;          /* salient nodes of passage p: sel[selx[p] ..
                            ** selx[p + 1]) with weights selw */
    double   *selw;
    size_t   *selx;
    size_t   *adjx;         /* CSR: node i's edges adj[adjx[i] ..
                            ** adjx[i + 1]), sorted by neighbour */
    uint32_t *adj;
    double   *adjw, *deg;
    size_t    nedges;       /* undirected */
    size_t    nlevels;
    uint32_t *comm_of[GRAPH_MAX_LEVELS];   /* listed community or NONE */
    graph_comm *comms[GRAPH_MAX_LEVELS];
    size_t    ncomms[GRAPH_MAX_LEVELS];
    char     *sums;         /* the summaries, back to back */
    uint32_t *members;      /* the communities' nodes and passages */
};

graph *graph_new(void)
{
    graph *g = rcp_malloc(sizeof *g);
    if (g)
        memset(g, 0, sizeof *g);
    return g;
}

static void bag_free(bag *b)
{
    if (b) {
        rcp_free(b->id);
        rcp_free(b->e);
        rcp_free(b);
    }
}

static void derived_free(graph *g)
{
    size_t l;
    rcp_free(g->pass);
    rcp_free(g->node_of);
    rcp_free(g->label_node);
    rcp_free(g->node_term);
    rcp_free(g->node_label);
    rcp_free(g->node_df);
    rcp_free(g->sel);
    rcp_free(g->selw);
    rcp_free(g->selx);
    rcp_free(g->adjx);
    rcp_free(g->adj);
    rcp_free(g->adjw);
    rcp_free(g->deg);
    for (l = 0; l < GRAPH_MAX_LEVELS; l++) {
        rcp_free(g->comm_of[l]);
        rcp_free(g->comms[l]);
    }
    rcp_free(g->sums);
    rcp_free(g->members);
    {
        strtab s = g->str;
        bag **b = g->bags;
        size_t nb = g->nbags, bc = g->bcap;
        memset(g, 0, sizeof *g);
        g->str = s;
        g->bags = b;
        g->nbags = nb;
        g->bcap = bc;
    }
}

void graph_free(graph *g)
{
    size_t i;
    if (!g)
        return;
    derived_free(g);
    for (i = 0; i < g->nbags; i++)
        bag_free(g->bags[i]);
    rcp_free(g->bags);
    strtab_free(&g->str);
    rcp_free(g);
}

/* The key of a phrase: the two terms joined by one space, in buf. */
static size_t pair_key(char *buf, size_t cap, const char *a, size_t an,
                       const char *b, size_t bn)
{
    if (an + bn + 1 > cap)
        return 0;
    memcpy(buf, a, an);
    buf[an] = ' ';
    memcpy(buf + an + 1, b, bn);
    return an + bn + 1;
}

/* A token the graph keeps (note 2): words and CJK pairs of 3+ bytes. */
static int kept(const rcp_token *t)
{
    return t->kind != RCP_TOKEN_NUM && t->tlen >= 3;
}

/* The terms (and phrases) of text as (key, surface) pairs to fn. */
typedef int (*term_fn)(void *ud, const char *key, size_t kn,
                       const char *surf, size_t sn, size_t tok);

static int each_term(const rcp_tokens *t, term_fn fn, void *ud)
{
    char kb[256], sb[256];
    size_t i, kn, sn;
    int rc;
    for (i = 0; i < t->n; i++) {
        const rcp_token *a = &t->v[i], *b = i + 1 < t->n ? &t->v[i + 1] : NULL;
        if (!kept(a))
            continue;
        if ((rc = fn(ud, t->buf + a->term, a->tlen, t->buf + a->word,
                     a->wlen, i)) != 0)
            return rc;
        if (!b || !kept(b) || b->pos != a->pos + 1)
            continue;
        kn = pair_key(kb, sizeof kb, t->buf + a->term, a->tlen,
                      t->buf + b->term, b->tlen);
        sn = pair_key(sb, sizeof sb, t->buf + a->word, a->wlen,
                      t->buf + b->word, b->wlen);
        if (kn && sn && (rc = fn(ud, kb, kn, sb, sn, i)) != 0)
            return rc;
    }
    return 0;
}

typedef struct bagger {
    strtab   *str;
    gent     *e;
    size_t    n, cap;
    uint32_t *mark;         /* per interned string: entry + 1, or 0 */
    size_t    mcap;
} bagger;

/* The smaller of two surfaces, byte-wise (note 2). */
static int surf_less(const strtab *t, uint32_t a, uint32_t b)
{
    size_t an, bn;
    const char *p = str_at(t, a, &an), *q = str_at(t, b, &bn);
    int c = memcmp(p, q, an < bn ? an : bn);
    return c < 0 || (c == 0 && an < bn);
}

static int bag_term(void *ud, const char *key, size_t kn, const char *surf,
                    size_t sn, size_t tok)
{
    bagger *bg = ud;
    uint32_t k, s;
    size_t old = bg->mcap;
    (void)tok;
    if (str_intern(bg->str, key, kn, &k) || str_intern(bg->str, surf, sn, &s))
        return -1;
    if (grow((void **)&bg->mark, &bg->mcap, bg->str->n, sizeof *bg->mark))
        return -1;
    if (bg->mcap > old)
        memset(bg->mark + old, 0, (bg->mcap - old) * sizeof *bg->mark);
    if (bg->mark[k]) {
        gent *e = &bg->e[bg->mark[k] - 1];
        e->tf++;
        if (surf_less(bg->str, s, e->surf))
            e->surf = s;
        return 0;
    }
    if (grow((void **)&bg->e, &bg->cap, bg->n + 1, sizeof *bg->e))
        return -1;
    bg->e[bg->n].term = k;
    bg->e[bg->n].surf = s;
    bg->e[bg->n].tf = 1;
    bg->mark[k] = (uint32_t)++bg->n;
    return 0;
}

/* Tokenise a passage into b's bag. */
static int fill_bag(bagger *bg, rcp_tokens *t, bag *b, const char *text,
                    size_t len)
{
    size_t i;
    int rc;
    if (rcp_tokenize(t, text, len, RCP_TOK_DEFAULT))
        return -1;
    bg->e = NULL;
    bg->n = bg->cap = 0;
    rc = each_term(t, bag_term, bg);
    for (i = 0; i < bg->n; i++)
        bg->mark[bg->e[i].term] = 0;
    if (rc) {
        rcp_free(bg->e);
        return -1;
    }
    b->e = bg->e;
    b->n = (uint32_t)bg->n;
    return 0;
}

static uint64_t hash_text(const char *p, size_t n)
{
    return hash_str(p, n) * 31u + n;
}

/* The bags by id, for one sync: open addressing over g->bags. */
typedef struct bagmap {
    uint32_t *slot;
    size_t    n;
} bagmap;

static uint32_t *bag_slot(const graph *g, const bagmap *m, const char *id,
                          size_t n)
{
    size_t s;
    for (s = hash_str(id, n) & (m->n - 1); m->slot[s] != NONE;
         s = (s + 1) & (m->n - 1)) {
        const bag *b = g->bags[m->slot[s]];
        if (b->idlen == n && memcmp(b->id, id, n) == 0)
            break;
    }
    return &m->slot[s];
}

static int bagmap_build(const graph *g, bagmap *m, size_t extra)
{
    size_t i, want = 64;
    while (want < 2 * (g->nbags + extra) + 2)
        want *= 2;
    if (!(m->slot = rcp_malloc(want * sizeof *m->slot)))
        return -1;
    m->n = want;
    for (i = 0; i < want; i++)
        m->slot[i] = NONE;
    for (i = 0; i < g->nbags; i++)
        *bag_slot(g, m, g->bags[i]->id, g->bags[i]->idlen) = (uint32_t)i;
    return 0;
}

/* One passage of the source into its bag: the kept one when its text is
** unchanged (note 6), else a new one. */
static int take_passage(graph *g, bagmap *m, bagger *bg, rcp_tokens *t,
                        size_t i, const char *id, size_t idlen,
                        const char *text, size_t len)
{
    uint32_t *s = bag_slot(g, m, id, idlen);
    uint64_t h = hash_text(text, len);
    bag *b;
    if (*s != NONE) {
        b = g->bags[*s];
        if (b->seen)
            return 0;               /* an id twice: the first counts */
        if (b->textlen == len && b->texth == h) {
            b->seen = 1;
            b->src = i;
            return 0;
        }
        rcp_free(b->e);
        b->e = NULL;
        b->n = 0;
    } else {
        if (grow((void **)&g->bags, &g->bcap, g->nbags + 1, sizeof *g->bags))
            return -1;
        if (!(b = rcp_malloc(sizeof *b)))
            return -1;
        memset(b, 0, sizeof *b);
        if (!(b->id = rcp_malloc(idlen + 1))) {
            rcp_free(b);
            return -1;
        }
        memcpy(b->id, id, idlen);
        b->idlen = idlen;
        *s = (uint32_t)g->nbags;
        g->bags[g->nbags++] = b;
    }
    b->textlen = len;
    b->texth = h;
    b->seen = 1;
    b->src = i;
    if (fill_bag(bg, t, b, text, len)) {
        b->textlen = 0;
        b->texth = 0;               /* retokenised next time */
        return -1;
    }
    return 0;
}

static int check(const graph_src *src)
{
    return src->check ? src->check(src->ud) : 0;
}

/* Read every passage of src into the bags; drop the bags of passages
** that are gone. */
static int read_passages(graph *g, const graph_src *src)
{
    bagger bg;
    rcp_tokens t;
    bagmap m;
    size_t i, j;
    int rc = 0;
    memset(&bg, 0, sizeof bg);
    bg.str = &g->str;
    rcp_tokens_init(&t);
    for (i = 0; i < g->nbags; i++)
        g->bags[i]->seen = 0;
    if (bagmap_build(g, &m, src->n))
        return -1;
    for (i = 0; i < src->n && rc == 0; i++) {
        const char *id, *text;
        size_t idlen, len;
        if (i % GRAPH_CHECK_EVERY == GRAPH_CHECK_EVERY - 1
            && (rc = check(src)) != 0)
            break;
        if ((rc = src->get(src->ud, i, &id, &idlen, &text, &len)) == 1) {
            rc = 0;
            continue;
        }
        if (rc == 0)
            rc = take_passage(g, &m, &bg, &t, i, id, idlen, text, len);
        if (rc == 0 && g->nbags * 2 > m.n) {    /* the map grows */
            rcp_free(m.slot);
            rc = bagmap_build(g, &m, g->nbags);
        }
    }
    rcp_free(m.slot);
    rcp_free(bg.mark);
    rcp_tokens_free(&t);
    if (rc != 0)
        return rc;      /* stopped: the passages not read yet keep theirs */
    for (i = j = 0; i < g->nbags; i++) {
        if (g->bags[i]->seen)
            g->bags[j++] = g->bags[i];
        else
            bag_free(g->bags[i]);
    }
    g->nbags = j;
    return rc;
}

static int bag_by_id(const void *a, const void *b)
{
    const bag *x = *(bag *const *)a, *y = *(bag *const *)b;
    size_t n = x->idlen < y->idlen ? x->idlen : y->idlen;
    int c = memcmp(x->id, y->id, n);
    return c ? c : (x->idlen > y->idlen) - (x->idlen < y->idlen);
}

/* MARK: - Salience and nodes (note 2) ------------------------------------- */

/* What the sorts compare carries its strings (qsort has no context):
** the pool does not move while they run. */
typedef struct sref {
    const char *p;
    size_t      n;
} sref;

static sref sref_of(const strtab *t, uint32_t i)
{
    sref r;
    r.p = str_at(t, i, &r.n);
    return r;
}

static int sref_cmp(sref a, sref b)
{
    int c = memcmp(a.p, b.p, a.n < b.n ? a.n : b.n);
    return c ? c : (a.n > b.n) - (a.n < b.n);
}

typedef struct wterm {
    uint32_t term;
    double   w;
    sref     s;
} wterm;

static int by_weight(const void *a, const void *b)
{
    const wterm *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return sref_cmp(x->s, y->s);
}

typedef struct cand {
    uint32_t term, count, label;
    sref     s, ls;
} cand;

static int by_count(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return sref_cmp(x->s, y->s);
}

static int by_label(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return sref_cmp(x->ls, y->ls);
}

/* The salient terms of every passage (wt, wx as sel, selx), df >= 2. */
static int salience(graph *g, wterm **wt, size_t **wx)
{
    uint32_t *df = rcp_malloc((g->str.n + 1) * sizeof *df);
    wterm *all = NULL, *buf = NULL;
    size_t p, i, n = 0, cap = 0, bcap = 0, *x;
    double N = (double)g->npass;
    if (!df || !(x = rcp_malloc((g->npass + 1) * sizeof *x))) {
        rcp_free(df);
        return -1;
    }
    memset(df, 0, (g->str.n + 1) * sizeof *df);
    for (p = 0; p < g->npass; p++)
        for (i = 0; i < g->pass[p]->n; i++)
            df[g->pass[p]->e[i].term]++;
    for (p = 0; p < g->npass; p++) {
        const bag *b = g->pass[p];
        size_t m = 0;
        x[p] = n;
        if (grow((void **)&buf, &bcap, b->n + 1, sizeof *buf))
            goto oom;
        for (i = 0; i < b->n; i++) {
            uint32_t d = df[b->e[i].term];
            if (d < 2 || (double)d >= N)
                continue;
            buf[m].term = b->e[i].term;
            buf[m].w = (1.0 + log((double)b->e[i].tf)) * log(N / d);
            buf[m].s = sref_of(&g->str, b->e[i].term);
            m++;
        }
        qsort(buf, m, sizeof *buf, by_weight);
        if (m > GRAPH_SALIENT)
            m = GRAPH_SALIENT;
        if (grow((void **)&all, &cap, n + m + 1, sizeof *all))
            goto oom;
        memcpy(all + n, buf, m * sizeof *buf);
        n += m;
    }
    x[g->npass] = n;
    rcp_free(buf);
    rcp_free(df);
    *wt = all;
    *wx = x;
    return 0;
oom:
    rcp_free(buf);
    rcp_free(all);
    rcp_free(df);
    rcp_free(x);
    return -1;
}

/* The nodes: the terms salient somewhere, the GRAPH_MAX_NODES salient
** in most passages, numbered in label order; then each passage's salient
** nodes. */
static int make_nodes(graph *g, const wterm *wt, const size_t *wx)
{
    size_t ns = g->str.n, p, i, nc = 0, k;
    uint32_t *count = rcp_malloc((ns + 1) * sizeof *count);
    uint32_t *label = rcp_malloc((ns + 1) * sizeof *label);
    cand *c = NULL;
    int rc = -1;
    if (!count || !label)
        goto out;
    memset(count, 0, (ns + 1) * sizeof *count);
    for (i = 0; i < ns; i++)
        label[i] = NONE;
    for (i = 0; i < wx[g->npass]; i++)
        if (count[wt[i].term]++ == 0)
            nc++;
    for (p = 0; p < g->npass; p++)
        for (i = 0; i < g->pass[p]->n; i++) {
            const gent *e = &g->pass[p]->e[i];
            if (count[e->term] && (label[e->term] == NONE
                                   || surf_less(&g->str, e->surf,
                                                label[e->term])))
                label[e->term] = e->surf;
        }
    if (!(c = rcp_malloc((nc + 1) * sizeof *c)))
        goto out;
    for (i = k = 0; i < ns; i++)
        if (count[i]) {
            c[k].term = (uint32_t)i;
            c[k].count = count[i];
            c[k].label = label[i];
            c[k].s = sref_of(&g->str, (uint32_t)i);
            c[k].ls = sref_of(&g->str, label[i]);
            k++;
        }
    qsort(c, nc, sizeof *c, by_count);
    if (nc > GRAPH_MAX_NODES) {
        nc = GRAPH_MAX_NODES;
        g->truncated = 1;
    }
    qsort(c, nc, sizeof *c, by_label);
    g->nnodes = nc;
    g->nstr_mapped = ns;
    if (!(g->node_of = rcp_malloc((ns + 1) * sizeof *g->node_of))
        || !(g->label_node = rcp_malloc((ns + 1) * sizeof *g->label_node))
        || !(g->node_term = rcp_malloc((nc + 1) * sizeof *g->node_term))
        || !(g->node_label = rcp_malloc((nc + 1) * sizeof *g->node_label))
        || !(g->node_df = rcp_malloc((nc + 1) * sizeof *g->node_df)))
        goto out;
    for (i = 0; i < ns; i++)
        g->node_of[i] = g->label_node[i] = NONE;
    for (i = 0; i < nc; i++) {
        g->node_term[i] = c[i].term;
        g->node_label[i] = c[i].label;
        g->node_df[i] = 0;
        g->node_of[c[i].term] = (uint32_t)i;
        g->label_node[c[i].label] = (uint32_t)i;
    }
    for (p = 0; p < g->npass; p++)
        for (i = 0; i < g->pass[p]->n; i++) {
            uint32_t nd = g->node_of[g->pass[p]->e[i].term];
            if (nd != NONE)
                g->node_df[nd]++;
        }
    /* each passage's salient nodes, heaviest first */
    if (!(g->selx = rcp_malloc((g->npass + 1) * sizeof *g->selx))
        || !(g->sel = rcp_malloc((wx[g->npass] + 1) * sizeof *g->sel))
        || !(g->selw = rcp_malloc((wx[g->npass] + 1) * sizeof *g->selw)))
        goto out;
    for (p = k = 0; p < g->npass; p++) {
        g->selx[p] = k;
        for (i = wx[p]; i < wx[p + 1]; i++)
            if (g->node_of[wt[i].term] != NONE) {
                g->sel[k] = g->node_of[wt[i].term];
                g->selw[k++] = wt[i].w;
            }
    }
    g->selx[g->npass] = k;
    rc = 0;
out:
    rcp_free(count);
    rcp_free(label);
    rcp_free(c);
    return rc;
}

/* MARK: - Edges (note 3) -------------------------------------------------- */

typedef struct edge {
    uint32_t a, b;
    double   w;
} edge;

static int by_ends(const void *x, const void *y)
{
    const edge *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

static uint64_t edge_hash(uint32_t a, uint32_t b)
{
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15u;
    return h ^ (h >> 31);
}

static int make_edges(graph *g, const graph_src *src)
{
    size_t cap = 0, n = 0, nslot = 1024, p, i, j, s;
    edge *e = NULL;
    uint32_t *slot = NULL;
    int rc = -1;
    for (p = 0; p < g->npass; p++) {
        const uint32_t *v = g->sel + g->selx[p];
        size_t m = g->selx[p + 1] - g->selx[p];
        if (p % GRAPH_CHECK_EVERY == GRAPH_CHECK_EVERY - 1
            && (rc = check(src)) != 0)
            goto out;
        rc = -1;
        for (i = 0; i < m; i++)
            for (j = i + 1; j < m; j++) {
                uint32_t a = v[i] < v[j] ? v[i] : v[j];
                uint32_t b = v[i] < v[j] ? v[j] : v[i];
                if (!slot || (n + 1) * 2 > nslot) {
                    size_t k, ns2 = slot ? nslot * 2 : nslot;
                    uint32_t *q = rcp_malloc(ns2 * sizeof *q);
                    if (!q)
                        goto out;
                    for (k = 0; k < ns2; k++)
                        q[k] = NONE;
                    for (k = 0; k < n; k++) {
                        for (s = edge_hash(e[k].a, e[k].b) & (ns2 - 1);
                             q[s] != NONE; s = (s + 1) & (ns2 - 1))
                            ;
                        q[s] = (uint32_t)k;
                    }
                    rcp_free(slot);
                    slot = q;
                    nslot = ns2;
                }
                for (s = edge_hash(a, b) & (nslot - 1); slot[s] != NONE;
                     s = (s + 1) & (nslot - 1))
                    if (e[slot[s]].a == a && e[slot[s]].b == b)
                        break;
                if (slot[s] != NONE) {
                    e[slot[s]].w += 1.0;
                    continue;
                }
                if (n >= GRAPH_MAX_EDGES) {
                    g->truncated = 1;
                    continue;
                }
                if (grow((void **)&e, &cap, n + 1, sizeof *e))
                    goto out;
                e[n].a = a;
                e[n].b = b;
                e[n].w = 1.0;
                slot[s] = (uint32_t)n++;
            }
    }
    /* CSR, both directions, sorted by neighbour */
    {
        size_t *fill;
        if (n)                          /* e is NULL without edges */
            qsort(e, n, sizeof *e, by_ends);
        if (!(g->adjx = rcp_malloc((g->nnodes + 1) * sizeof *g->adjx))
            || !(g->adj = rcp_malloc((2 * n + 1) * sizeof *g->adj))
            || !(g->adjw = rcp_malloc((2 * n + 1) * sizeof *g->adjw))
            || !(g->deg = rcp_malloc((g->nnodes + 1) * sizeof *g->deg))
            || !(fill = rcp_malloc((g->nnodes + 1) * sizeof *fill)))
            goto out;
        memset(g->adjx, 0, (g->nnodes + 1) * sizeof *g->adjx);
        memset(g->deg, 0, (g->nnodes + 1) * sizeof *g->deg);
        for (i = 0; i < n; i++) {
            g->adjx[e[i].a + 1]++;
            g->adjx[e[i].b + 1]++;
            g->deg[e[i].a] += e[i].w;
            g->deg[e[i].b] += e[i].w;
        }
        for (i = 0; i < g->nnodes; i++)
            g->adjx[i + 1] += g->adjx[i];
        memcpy(fill, g->adjx, g->nnodes * sizeof *fill);
        /* e is sorted by (a, b): for node x, the entries where x is b come
        ** from smaller a's, in order, before those where x is a */
        for (i = 0; i < n; i++) {
            g->adj[fill[e[i].b]] = e[i].a;
            g->adjw[fill[e[i].b]++] = e[i].w;
        }
        for (i = 0; i < n; i++) {
            g->adj[fill[e[i].a]] = e[i].b;
            g->adjw[fill[e[i].a]++] = e[i].w;
        }
        rcp_free(fill);
        g->nedges = n;
    }
    rc = 0;
out:
    rcp_free(e);
    rcp_free(slot);
    return rc;
}

/* MARK: - Louvain communities (note 4) ------------------------------------ */

/* A level's graph: CSR without self loops, plus each node's self weight
** (the ordered pairs of original nodes inside it, so k = self + sum w). */
typedef struct lgraph {
    size_t    n;
    size_t   *x;
    uint32_t *v;
    double   *w, *self, *k;
} lgraph;

static void lgraph_free(lgraph *l)
{
    rcp_free(l->x);
    rcp_free(l->v);
    rcp_free(l->w);
    rcp_free(l->self);
    rcp_free(l->k);
}

/* One level's local moving: comm[i] for each node, renumbered 0.. in order
** of first appearance; the count in *nc. */
static int louvain_level(const lgraph *l, uint32_t *comm, size_t *nc,
                         const graph_src *src)
{
    double *tot = rcp_malloc((l->n + 1) * sizeof *tot);
    double *nw = rcp_malloc((l->n + 1) * sizeof *nw);
    uint32_t *touched = rcp_malloc((l->n + 1) * sizeof *touched);
    uint32_t *renum = rcp_malloc((l->n + 1) * sizeof *renum);
    double m2 = 0;
    size_t i, j, sweep;
    int rc = -1;
    if (!tot || !nw || !touched || !renum)
        goto out;
    for (i = 0; i < l->n; i++) {
        comm[i] = (uint32_t)i;
        tot[i] = l->k[i];
        nw[i] = 0;
        m2 += l->k[i];
    }
    for (sweep = 0; m2 > 0 && sweep < GRAPH_SWEEPS; sweep++) {
        size_t moved = 0;
        if ((rc = check(src)) != 0)
            goto out;
        rc = -1;
        for (i = 0; i < l->n; i++) {
            uint32_t ci = comm[i], best = ci;
            size_t nt = 0;
            double bestgain;
            for (j = l->x[i]; j < l->x[i + 1]; j++) {
                uint32_t c = comm[l->v[j]];
                if (nw[c] == 0)
                    touched[nt++] = c;
                nw[c] += l->w[j];
            }
            tot[ci] -= l->k[i];
            bestgain = nw[ci] - tot[ci] * l->k[i] / m2;
            for (j = 0; j < nt; j++) {
                uint32_t c = touched[j];
                double gain = nw[c] - tot[c] * l->k[i] / m2;
                if (gain > bestgain + 1e-12
                    || (gain >= bestgain - 1e-12 && best != ci && c < best)) {
                    best = c;
                    bestgain = gain;
                }
            }
            tot[best] += l->k[i];
            if (best != ci) {
                comm[i] = best;
                moved++;
            }
            for (j = 0; j < nt; j++)
                nw[touched[j]] = 0;
        }
        if (!moved)
            break;
    }
    for (i = 0; i < l->n; i++)
        renum[i] = NONE;
    for (i = 0, *nc = 0; i < l->n; i++) {
        if (renum[comm[i]] == NONE)
            renum[comm[i]] = (uint32_t)(*nc)++;
        comm[i] = renum[comm[i]];
    }
    rc = 0;
out:
    rcp_free(tot);
    rcp_free(nw);
    rcp_free(touched);
    rcp_free(renum);
    return rc;
}

static int by_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The next level: one node per community of l. */
static int aggregate(const lgraph *l, const uint32_t *comm, size_t nc,
                     lgraph *out)
{
    size_t i, j, *cx = NULL, *cfill = NULL, nt, n = 0, cap = 0, vcap;
    uint32_t *order = NULL, *touched = NULL;
    double *nw = NULL;
    int rc = -1;
    memset(out, 0, sizeof *out);
    out->n = nc;
    if (!(cx = rcp_malloc((nc + 2) * sizeof *cx))
        || !(cfill = rcp_malloc((nc + 1) * sizeof *cfill))
        || !(order = rcp_malloc((l->n + 1) * sizeof *order))
        || !(touched = rcp_malloc((nc + 1) * sizeof *touched))
        || !(nw = rcp_malloc((nc + 1) * sizeof *nw))
        || !(out->x = rcp_malloc((nc + 1) * sizeof *out->x))
        || !(out->self = rcp_malloc((nc + 1) * sizeof *out->self))
        || !(out->k = rcp_malloc((nc + 1) * sizeof *out->k)))
        goto out;
    memset(cx, 0, (nc + 2) * sizeof *cx);
    for (i = 0; i < l->n; i++)
        cx[comm[i] + 1]++;
    for (i = 0; i < nc; i++)
        cx[i + 1] += cx[i];
    memcpy(cfill, cx, nc * sizeof *cfill);
    for (i = 0; i < l->n; i++)
        order[cfill[comm[i]]++] = (uint32_t)i;
    for (i = 0; i < nc; i++) {
        nw[i] = 0;
        out->self[i] = 0;
        out->k[i] = 0;
    }
    for (i = 0; i < nc; i++) {
        size_t a;
        out->x[i] = n;
        nt = 0;
        for (a = cx[i]; a < cx[i + 1]; a++) {
            uint32_t u = order[a];
            out->self[i] += l->self[u];
            out->k[i] += l->k[u];
            for (j = l->x[u]; j < l->x[u + 1]; j++) {
                uint32_t c = comm[l->v[j]];
                if (c == i) {
                    out->self[i] += l->w[j];
                    continue;
                }
                if (nw[c] == 0)
                    touched[nt++] = c;
                nw[c] += l->w[j];
            }
        }
        /* neighbours in ascending order: a fixed order for the next level */
        qsort(touched, nt, sizeof *touched, by_u32);
        vcap = cap;
        if (grow((void **)&out->v, &vcap, n + nt + 1, sizeof *out->v)
            || grow((void **)&out->w, &cap, n + nt + 1, sizeof *out->w))
            goto out;
        for (j = 0; j < nt; j++) {
            out->v[n] = touched[j];
            out->w[n++] = nw[touched[j]];
            nw[touched[j]] = 0;
        }
    }
    out->x[nc] = n;
    rc = 0;
out:
    rcp_free(cx);
    rcp_free(cfill);
    rcp_free(order);
    rcp_free(touched);
    rcp_free(nw);
    if (rc)
        lgraph_free(out);
    return rc;
}

/* MARK: - Listing communities, representatives, summaries (notes 4, 5) ---- */

typedef struct clist {
    uint32_t comm, size, first;
    double   weight;
} clist;

static int by_size(const void *a, const void *b)
{
    const clist *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

typedef struct central {
    uint32_t node;
    double   w;
} central;

static int by_central(const void *a, const void *b)
{
    const central *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* Room in g->members for n more; the offset of the first. */
typedef struct arr {
    size_t n, cap, sn, scap;
} arr;

/* The level's listed communities (size >= 2) with their nodes by
** centrality, from mem (node -> community of this level's partition). */
static int list_level(graph *g, size_t level, const uint32_t *mem, size_t nc,
                      arr *a, size_t *offs)
{
    clist *cl = rcp_malloc((nc + 1) * sizeof *cl);
    central *ct = rcp_malloc((g->nnodes + 1) * sizeof *ct);
    uint32_t *listed = rcp_malloc((nc + 1) * sizeof *listed);
    size_t i, j, nl = 0, k;
    int rc = -1;
    if (!cl || !ct || !listed)
        goto out;
    for (i = 0; i < nc; i++) {
        cl[i].comm = (uint32_t)i;
        cl[i].size = 0;
        cl[i].first = NONE;
        cl[i].weight = 0;
    }
    for (i = 0; i < g->nnodes; i++) {
        clist *c = &cl[mem[i]];
        c->size++;
        if (c->first == NONE)
            c->first = (uint32_t)i;
        ct[i].node = (uint32_t)i;
        ct[i].w = 0;
        for (j = g->adjx[i]; j < g->adjx[i + 1]; j++)
            if (mem[g->adj[j]] == mem[i]) {
                ct[i].w += g->adjw[j];
                if (g->adj[j] > i)
                    c->weight += g->adjw[j];
            }
    }
    qsort(cl, nc, sizeof *cl, by_size);
    for (i = 0; i < nc; i++)
        listed[i] = NONE;
    while (nl < nc && cl[nl].size >= 2) {
        listed[cl[nl].comm] = (uint32_t)nl;
        nl++;
    }
    if (!(g->comm_of[level] = rcp_malloc((g->nnodes + 1) * sizeof(uint32_t)))
        || !(g->comms[level] = rcp_malloc((nl + 1) * sizeof(graph_comm))))
        goto out;
    for (i = 0; i < g->nnodes; i++)
        g->comm_of[level][i] = listed[mem[i]];
    qsort(ct, g->nnodes, sizeof *ct, by_central);
    if (grow((void **)&g->members, &a->cap, a->n + g->nnodes + 1,
             sizeof *g->members))
        goto out;
    /* the nodes of listed community c, most central first, at offs[c] */
    for (i = 0, k = a->n; i < nl; i++) {
        graph_comm *c = &g->comms[level][i];
        memset(c, 0, sizeof *c);
        c->level = (uint32_t)level;
        c->index = (uint32_t)i;
        c->weight = cl[i].weight;
        offs[i] = k;
        k += cl[i].size;
    }
    for (i = 0; i < g->nnodes; i++) {
        uint32_t li = listed[mem[ct[i].node]];
        if (li != NONE) {
            g->members[offs[li] + g->comms[level][li].nnodes++] = ct[i].node;
        }
    }
    a->n = k;
    g->ncomms[level] = nl;
    rc = 0;
out:
    rcp_free(cl);
    rcp_free(ct);
    rcp_free(listed);
    return rc;
}

/* Each listed community's GRAPH_REPS representative passages: those whose
** salient nodes weigh most in it (ties: the smaller id). */
static int pick_reps(graph *g, size_t level, arr *a, size_t *roffs)
{
    size_t nl = g->ncomms[level], p, i, r;
    double *acc = rcp_malloc((nl + 1) * sizeof *acc);
    double *best = rcp_malloc((nl * GRAPH_REPS + 1) * sizeof *best);
    uint32_t *touched = rcp_malloc((GRAPH_SALIENT + 1) * sizeof *touched);
    int rc = -1;
    if (!acc || !best || !touched)
        goto out;
    if (grow((void **)&g->members, &a->cap, a->n + nl * GRAPH_REPS + 1,
             sizeof *g->members))
        goto out;
    for (i = 0; i < nl; i++) {
        acc[i] = 0;
        roffs[i] = a->n + i * GRAPH_REPS;
    }
    a->n += nl * GRAPH_REPS;
    for (p = 0; p < g->npass; p++) {
        size_t nt = 0;
        for (i = g->selx[p]; i < g->selx[p + 1]; i++) {
            uint32_t c = g->comm_of[level][g->sel[i]];
            if (c == NONE)
                continue;
            if (acc[c] == 0)
                touched[nt++] = c;
            acc[c] += g->selw[i];
        }
        for (i = 0; i < nt; i++) {
            uint32_t c = touched[i];
            graph_comm *gc = &g->comms[level][c];
            uint32_t *rep = g->members + roffs[c];
            double *bw = best + (size_t)c * GRAPH_REPS;
            for (r = gc->nreps; r > 0 && bw[r - 1] < acc[c]; r--)
                ;
            if (r < GRAPH_REPS) {
                size_t q = gc->nreps < GRAPH_REPS ? gc->nreps : GRAPH_REPS - 1;
                for (; q > r; q--) {
                    rep[q] = rep[q - 1];
                    bw[q] = bw[q - 1];
                }
                rep[r] = (uint32_t)p;
                bw[r] = acc[c];
                if (gc->nreps < GRAPH_REPS)
                    gc->nreps++;
            }
            acc[c] = 0;
        }
    }
    rc = 0;
out:
    rcp_free(acc);
    rcp_free(best);
    rcp_free(touched);
    return rc;
}

/* Sentence ends in text: after . ! ? followed by white space or the end,
** and at blank lines. */
static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
        || c == '\v';
}

static size_t sentence_end(const char *t, size_t len, size_t from)
{
    size_t i;
    for (i = from; i < len; i++) {
        if ((t[i] == '.' || t[i] == '!' || t[i] == '?')
            && (i + 1 == len || is_space(t[i + 1])))
            return i + 1;
        if (t[i] == '\n' && i + 1 < len && t[i + 1] == '\n')
            return i + 1;
    }
    return len;
}

typedef struct sumctx {
    const graph    *g;
    const rcp_tokens *t;
    const uint8_t  *top;        /* per node: one of the top terms */
    uint32_t       *seen;       /* per node: sentence + 1 it was counted in */
    const size_t   *ends;       /* sentence ends, ascending */
    size_t          nends;
    size_t         *score;      /* per sentence */
    size_t          cur;        /* the sentence of the last token */
} sumctx;

static int sum_term(void *ud, const char *key, size_t kn, const char *surf,
                    size_t sn, size_t tok)
{
    sumctx *s = ud;
    uint32_t k = str_find(&s->g->str, key, kn), nd;
    uint32_t at = s->t->v[tok].start;
    (void)surf;
    (void)sn;
    while (s->cur + 1 < s->nends && at >= s->ends[s->cur])
        s->cur++;
    if (k == NONE || k >= s->g->nstr_mapped
        || (nd = s->g->node_of[k]) == NONE || !s->top[nd]
        || s->seen[nd] == s->cur + 1)
        return 0;
    s->seen[nd] = (uint32_t)(s->cur + 1);
    s->score[s->cur]++;
    return 0;
}

/* Append text[0..len), white space collapsed, at most GRAPH_SUMMARY
** bytes cut at a word (then "..."), to the summary pool. */
static int put_summary(graph *g, arr *a, const char *text, size_t len)
{
    size_t i, start = a->sn, lastsp = 0;
    int sp = 0;
    if (grow((void **)&g->sums, &a->scap, a->sn + GRAPH_SUMMARY + 4, 1))
        return -1;
    while (len && is_space(text[len - 1]))
        len--;
    for (i = 0; i < len && is_space(text[i]); i++)
        ;
    for (; i < len; i++) {
        if (is_space(text[i])) {
            sp = 1;
            continue;
        }
        if (sp && a->sn > start) {
            if (a->sn - start + 1 > GRAPH_SUMMARY)
                break;
            lastsp = a->sn;
            g->sums[a->sn++] = ' ';
        }
        sp = 0;
        if (a->sn - start + 1 > GRAPH_SUMMARY)
            break;
        g->sums[a->sn++] = text[i];
    }
    if (i < len) {                      /* cut: at the last word's end */
        if (lastsp > start)
            a->sn = lastsp;
        while (a->sn > start && ((unsigned char)g->sums[a->sn - 1] & 0xC0)
                                    == 0x80)
            a->sn--;                    /* never half a character */
        if (a->sn > start && (unsigned char)g->sums[a->sn - 1] >= 0xC0)
            a->sn--;
        memcpy(g->sums + a->sn, "...", 3);
        a->sn += 3;
    }
    return 0;
}

/* The labels of a community's top nodes, as its summary when no sentence
** can be found. */
static int label_summary(graph *g, arr *a, const graph_comm *c,
                         const uint32_t *nodes)
{
    size_t i, n;
    for (i = 0; i < c->nnodes && i < GRAPH_TOP_TERMS; i++) {
        const char *l = str_at(&g->str, g->node_label[nodes[i]], &n);
        if (grow((void **)&g->sums, &a->scap, a->sn + n + 3, 1))
            return -1;
        if (i) {
            g->sums[a->sn++] = ',';
            g->sums[a->sn++] = ' ';
        }
        memcpy(g->sums + a->sn, l, n);
        a->sn += n;
    }
    return 0;
}

static int summarise(graph *g, const graph_src *src, const graph_comm *c,
                     const uint32_t *nodes, const uint32_t *reps, arr *a,
                     uint8_t *top, uint32_t *seen, rcp_tokens *t)
{
    const char *id, *text;
    size_t idlen, len, i, nends = 0, cap = 0, *ends = NULL, *score = NULL;
    size_t at, best = 0;
    sumctx s;
    int rc = -1;
    if (!c->nreps || src->get(src->ud, g->pass[reps[0]]->src, &id, &idlen,
                              &text, &len) != 0)
        return label_summary(g, a, c, nodes);
    for (at = 0; at < len;) {
        size_t e = sentence_end(text, len, at);
        if (grow((void **)&ends, &cap, nends + 1, sizeof *ends))
            goto out;
        ends[nends++] = e;
        at = e;
    }
    if (!nends || rcp_tokenize(t, text, len, RCP_TOK_DEFAULT)
        || !(score = rcp_malloc(nends * sizeof *score)))
        goto out;
    memset(score, 0, nends * sizeof *score);
    for (i = 0; i < c->nnodes && i < GRAPH_TOP_TERMS; i++)
        top[nodes[i]] = 1;
    memset(&s, 0, sizeof s);
    s.g = g;
    s.t = t;
    s.top = top;
    s.seen = seen;
    s.ends = ends;
    s.nends = nends;
    s.score = score;
    (void)each_term(t, sum_term, &s);
    for (i = 0; i < c->nnodes && i < GRAPH_TOP_TERMS; i++) {
        top[nodes[i]] = 0;
        seen[nodes[i]] = 0;
    }
    for (i = 1; i < nends; i++)
        if (score[i] > score[best])
            best = i;
    rc = score[best] == 0 ? label_summary(g, a, c, nodes)
       : put_summary(g, a, text + (best ? ends[best - 1] : 0),
                     ends[best] - (best ? ends[best - 1] : 0));
out:
    if (rc)
        rc = -1;
    rcp_free(ends);
    rcp_free(score);
    return rc;
}

/* Levels, their listed communities and summaries. */
static int communities(graph *g, const graph_src *src)
{
    lgraph l, next;
    uint32_t *comm = NULL, *mem = NULL, *seen = NULL;
    uint8_t *top = NULL;
    size_t *offs[GRAPH_MAX_LEVELS], *roffs[GRAPH_MAX_LEVELS];
    size_t *soffs[GRAPH_MAX_LEVELS], *slens[GRAPH_MAX_LEVELS];
    size_t i, lev, nc = 0;
    rcp_tokens t;
    arr a;
    int rc = -1;
    memset(&a, 0, sizeof a);
    memset(offs, 0, sizeof offs);
    memset(roffs, 0, sizeof roffs);
    memset(soffs, 0, sizeof soffs);
    memset(slens, 0, sizeof slens);
    rcp_tokens_init(&t);
    if (!g->nnodes)
        return 0;
    /* level 0's graph is the term graph itself */
    memset(&l, 0, sizeof l);
    l.n = g->nnodes;
    if (!(l.x = rcp_malloc((l.n + 1) * sizeof *l.x))
        || !(l.v = rcp_malloc((2 * g->nedges + 1) * sizeof *l.v))
        || !(l.w = rcp_malloc((2 * g->nedges + 1) * sizeof *l.w))
        || !(l.self = rcp_malloc((l.n + 1) * sizeof *l.self))
        || !(l.k = rcp_malloc((l.n + 1) * sizeof *l.k))
        || !(comm = rcp_malloc((l.n + 1) * sizeof *comm))
        || !(mem = rcp_malloc((l.n + 1) * sizeof *mem))
        || !(seen = rcp_malloc((l.n + 1) * sizeof *seen))
        || !(top = rcp_malloc(l.n + 1)))
        goto out;
    memcpy(l.x, g->adjx, (l.n + 1) * sizeof *l.x);
    memcpy(l.v, g->adj, 2 * g->nedges * sizeof *l.v);
    memcpy(l.w, g->adjw, 2 * g->nedges * sizeof *l.w);
    for (i = 0; i < l.n; i++) {
        l.self[i] = 0;
        l.k[i] = g->deg[i];
        mem[i] = (uint32_t)i;
        seen[i] = 0;
        top[i] = 0;
    }
    for (lev = 0; lev < GRAPH_MAX_LEVELS; lev++) {
        if ((rc = louvain_level(&l, comm, &nc, src)) != 0)
            goto out;
        rc = -1;
        if (lev > 0 && nc == l.n)
            break;                      /* nothing merged: no new level */
        for (i = 0; i < g->nnodes; i++)
            mem[i] = comm[mem[i]];
        if (!(offs[lev] = rcp_malloc((nc + 1) * sizeof **offs))
            || !(roffs[lev] = rcp_malloc((nc + 1) * sizeof **roffs))
            || !(soffs[lev] = rcp_malloc((nc + 1) * sizeof **soffs))
            || !(slens[lev] = rcp_malloc((nc + 1) * sizeof **slens)))
            goto out;
        if (list_level(g, lev, mem, nc, &a, offs[lev])
            || pick_reps(g, lev, &a, roffs[lev]))
            goto out;
        g->nlevels = lev + 1;
        for (i = 0; i < g->ncomms[lev]; i++) {
            const graph_comm *c = &g->comms[lev][i];
            size_t before = a.sn;
            if (i % 16 == 15 && (rc = check(src)) != 0)
                goto out;
            rc = -1;
            if (summarise(g, src, c, g->members + offs[lev][i],
                          g->members + roffs[lev][i], &a, top, seen, &t))
                goto out;
            soffs[lev][i] = before;
            slens[lev][i] = a.sn - before;
        }
        if (nc == l.n || nc <= 1)
            break;
        if (aggregate(&l, comm, nc, &next))
            goto out;
        lgraph_free(&l);
        l = next;
    }
    /* the pools are final: point into them */
    for (lev = 0; lev < g->nlevels; lev++)
        for (i = 0; i < g->ncomms[lev]; i++) {
            graph_comm *c = &g->comms[lev][i];
            c->nodes = g->members + offs[lev][i];
            c->reps = g->members + roffs[lev][i];
            c->summary = g->sums ? g->sums + soffs[lev][i] : "";
            c->sumlen = slens[lev][i];
        }
    rc = 0;
out:
    lgraph_free(&l);
    rcp_free(comm);
    rcp_free(mem);
    rcp_free(seen);
    rcp_free(top);
    rcp_tokens_free(&t);
    for (lev = 0; lev < GRAPH_MAX_LEVELS; lev++) {
        rcp_free(offs[lev]);
        rcp_free(roffs[lev]);
        rcp_free(soffs[lev]);
        rcp_free(slens[lev]);
    }
    return rc;
}

/* MARK: - Sync ------------------------------------------------------------ */

/* The interned strings of passages long gone pile up under churn: when
** they are most of the table, start afresh (the next sync re-tokenises). */
static void maybe_forget(graph *g)
{
    size_t i, live = 0;
    for (i = 0; i < g->nbags; i++)
        live += 2 * g->bags[i]->n;
    if (g->str.n < 65536 || g->str.n < 4 * live)
        return;
    for (i = 0; i < g->nbags; i++)
        bag_free(g->bags[i]);
    g->nbags = 0;
    strtab_free(&g->str);
}

int graph_sync(graph *g, const graph_src *src)
{
    wterm *wt = NULL;
    size_t *wx = NULL, i;
    int rc;
    derived_free(g);
    maybe_forget(g);
    if ((rc = read_passages(g, src)) != 0)
        goto fail;
    rc = -1;
    if (!(g->pass = rcp_malloc((g->nbags + 1) * sizeof *g->pass)))
        goto fail;
    for (i = 0; i < g->nbags; i++)
        g->pass[i] = g->bags[i];
    qsort(g->pass, g->nbags, sizeof *g->pass, bag_by_id);
    g->npass = g->nbags;
    if (g->npass > GRAPH_MAX_PASSAGES) {
        g->npass = GRAPH_MAX_PASSAGES;
        g->truncated = 1;
    }
    if (salience(g, &wt, &wx) || make_nodes(g, wt, wx))
        goto fail;
    rcp_free(wt);
    rcp_free(wx);
    wt = NULL;
    wx = NULL;
    if ((rc = make_edges(g, src)) != 0 || (rc = communities(g, src)) != 0)
        goto fail;
    return 0;
fail:
    rcp_free(wt);
    rcp_free(wx);
    derived_free(g);
    return rc;
}

/* MARK: - Reading the graph ----------------------------------------------- */

int graph_truncated(const graph *g) { return g->truncated; }
size_t graph_npassages(const graph *g) { return g->npass; }
size_t graph_nnodes(const graph *g) { return g->nnodes; }
size_t graph_nedges(const graph *g) { return g->nedges; }
size_t graph_levels(const graph *g) { return g->nlevels; }

const char *graph_passage_id(const graph *g, size_t p, size_t *len)
{
    *len = g->pass[p]->idlen;
    return g->pass[p]->id;
}

const char *graph_label(const graph *g, uint32_t node, size_t *len)
{
    return str_at(&g->str, g->node_label[node], len);
}

size_t graph_adj(const graph *g, uint32_t node, const uint32_t **nbr,
                 const double **w)
{
    *nbr = g->adj + g->adjx[node];
    *w = g->adjw + g->adjx[node];
    return g->adjx[node + 1] - g->adjx[node];
}

size_t graph_passage_nodes(const graph *g, size_t p, const uint32_t **nodes)
{
    *nodes = g->sel + g->selx[p];
    return g->selx[p + 1] - g->selx[p];
}

double graph_idf(const graph *g, uint32_t node)
{
    return log(1.0 + (double)g->npass
                     / (g->node_df[node] ? g->node_df[node] : 1));
}

size_t graph_ncomms(const graph *g, size_t level)
{
    return level < g->nlevels ? g->ncomms[level] : 0;
}

const graph_comm *graph_comm_at(const graph *g, size_t level, size_t i)
{
    return &g->comms[level][i];
}

long graph_comm_of(const graph *g, size_t level, uint32_t node)
{
    uint32_t c = g->comm_of[level][node];
    return c == NONE ? -1 : (long)c;
}

static uint32_t node_of_str(const graph *g, const char *s, size_t n)
{
    uint32_t k = str_find(&g->str, s, n);
    return k == NONE || k >= g->nstr_mapped ? NONE : g->node_of[k];
}

typedef struct entctx {
    const graph *g;
    uint32_t    *out;
    size_t       n, cap, terms;
} entctx;

static int ent_term(void *ud, const char *key, size_t kn, const char *surf,
                    size_t sn, size_t tok)
{
    entctx *e = ud;
    uint32_t nd = node_of_str(e->g, key, kn);
    size_t i;
    (void)surf;
    (void)sn;
    (void)tok;
    e->terms++;
    if (nd == NONE)
        return 0;
    for (i = 0; i < e->n; i++)
        if (e->out[i] == nd)
            return 0;
    if (e->n < e->cap)
        e->out[e->n++] = nd;
    return 0;
}

long graph_entities(const graph *g, const char *text, size_t len,
                    uint32_t *out, size_t cap)
{
    rcp_tokens t;
    entctx e;
    if (!g->nnodes)
        return 0;
    rcp_tokens_init(&t);
    if (rcp_tokenize(&t, text, len, RCP_TOK_DEFAULT)) {
        rcp_tokens_free(&t);
        return -1;
    }
    memset(&e, 0, sizeof e);
    e.g = g;
    e.out = out;
    e.cap = cap;
    (void)each_term(&t, ent_term, &e);
    rcp_tokens_free(&t);
    return (long)e.n;
}

long graph_node(const graph *g, const char *s, size_t n)
{
    uint32_t k, nd = NONE;
    rcp_tokens t;
    if (!g->nnodes)
        return -1;
    k = str_find(&g->str, s, n);
    if (k != NONE && k < g->nstr_mapped && g->label_node[k] != NONE)
        return (long)g->label_node[k];
    /* else: text that is one term, or one phrase, of the graph */
    rcp_tokens_init(&t);
    if (rcp_tokenize(&t, s, n, RCP_TOK_DEFAULT)) {
        rcp_tokens_free(&t);
        return -1;
    }
    if (t.n == 1 && kept(&t.v[0])) {
        nd = node_of_str(g, t.buf + t.v[0].term, t.v[0].tlen);
    } else if (t.n == 2 && kept(&t.v[0]) && kept(&t.v[1])
               && t.v[1].pos == t.v[0].pos + 1) {
        char kb[256];
        size_t kn = pair_key(kb, sizeof kb, t.buf + t.v[0].term, t.v[0].tlen,
                             t.buf + t.v[1].term, t.v[1].tlen);
        nd = kn ? node_of_str(g, kb, kn) : NONE;
    }
    rcp_tokens_free(&t);
    return nd == NONE ? -1 : (long)nd;
}

int graph_ppr(const graph *g, const uint32_t *seeds, size_t nseeds,
              double *out, int (*ck)(void *), void *ud)
{
    size_t n = g->nnodes, i, j, it;
    double *s, *next, sum = 0;
    int rc;
    if (!n)
        return 0;
    if (!(s = rcp_malloc(n * sizeof *s)) || !(next = rcp_malloc(n * sizeof *next))) {
        rcp_free(s);
        return -1;
    }
    for (i = 0; i < n; i++)
        s[i] = 0;
    for (i = 0; i < nseeds; i++) {
        double idf = graph_idf(g, seeds[i]);
        s[seeds[i]] += idf;
        sum += idf;
    }
    for (i = 0; i < n; i++) {
        s[i] = sum > 0 ? s[i] / sum : 0;
        out[i] = s[i];
    }
    for (it = 0; it < GRAPH_PPR_ITERS; it++) {
        double dangling = 0, delta = 0;
        if (ck && (rc = ck(ud)) != 0) {
            rcp_free(s);
            rcp_free(next);
            return rc;
        }
        for (i = 0; i < n; i++)
            next[i] = (1 - GRAPH_PPR_DAMPING) * s[i];
        for (i = 0; i < n; i++) {
            if (g->deg[i] <= 0) {
                dangling += out[i];
                continue;
            }
            for (j = g->adjx[i]; j < g->adjx[i + 1]; j++)
                next[g->adj[j]] += GRAPH_PPR_DAMPING * out[i] * g->adjw[j]
                                   / g->deg[i];
        }
        for (i = 0; i < n; i++) {
            next[i] += GRAPH_PPR_DAMPING * dangling * s[i];
            delta += fabs(next[i] - out[i]);
            out[i] = next[i];
        }
        if (delta < 1e-10)
            break;
    }
    rcp_free(s);
    rcp_free(next);
    return 0;
}

/* MARK: - A graph as a memory (§7.17) ------------------------------------- */

static int by_weight_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* Each node's `per`-th strongest edge weight (0: fewer edges): an edge is
** kept in a memory when it is among the strongest of either end (ties
** kept), so a memory stays a small multiple of its nodes.  NULL: OOM. */
static double *edge_floor(const graph *g, size_t per)
{
    double *thr = rcp_malloc((g->nnodes + 1) * sizeof *thr), *tmp;
    size_t i, d, maxd = 0;
    if (!thr)
        return NULL;
    for (i = 0; i < g->nnodes; i++)
        if (g->adjx[i + 1] - g->adjx[i] > maxd)
            maxd = g->adjx[i + 1] - g->adjx[i];
    if (!(tmp = rcp_malloc((maxd + 1) * sizeof *tmp))) {
        rcp_free(thr);
        return NULL;
    }
    for (i = 0; i < g->nnodes; i++) {
        d = g->adjx[i + 1] - g->adjx[i];
        memcpy(tmp, g->adjw + g->adjx[i], d * sizeof *tmp);
        qsort(tmp, d, sizeof *tmp, by_weight_desc);
        thr[i] = d >= per && per ? tmp[per - 1] : 0;
    }
    rcp_free(tmp);
    return thr;
}

int graph_write(const graph *g, rcp_jw *w, size_t per, size_t *tokens)
{
    size_t i, j, e, n;
    double *thr = edge_floor(g, per);
    *tokens = 0;
    if (!thr)
        return -1;
    rcp_jw_obj(w);
    rcp_jw_key(w, "passages");
    rcp_jw_int(w, (int64_t)g->npass);
    rcp_jw_key(w, "nodes");             /* [label, term, df] */
    rcp_jw_arr(w);
    for (i = 0; i < g->nnodes; i++) {
        const char *s = str_at(&g->str, g->node_label[i], &n);
        rcp_jw_arr(w);
        rcp_jw_str(w, s, n);
        *tokens += memchr(s, ' ', n) ? 2 : 1;
        s = str_at(&g->str, g->node_term[i], &n);
        rcp_jw_str(w, s, n);
        rcp_jw_int(w, g->node_df[i]);
        rcp_jw_arr_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_key(w, "edges");             /* a, b, weight, ... with a < b */
    rcp_jw_arr(w);
    for (i = 0; i < g->nnodes; i++)
        for (e = g->adjx[i]; e < g->adjx[i + 1]; e++) {
            j = g->adj[e];
            if (j <= i || (g->adjw[e] < thr[i] && g->adjw[e] < thr[j]))
                continue;
            rcp_jw_int(w, (int64_t)i);
            rcp_jw_int(w, (int64_t)j);
            rcp_jw_int(w, (int64_t)g->adjw[e]);
        }
    rcp_jw_arr_end(w);
    rcp_jw_key(w, "clusters");          /* level 0: key terms, passages */
    rcp_jw_arr(w);
    for (i = 0; g->nlevels && i < g->ncomms[0]; i++) {
        const graph_comm *c = &g->comms[0][i];
        rcp_jw_obj(w);
        rcp_jw_key(w, "nodes");
        rcp_jw_arr(w);
        for (j = 0; j < c->nnodes && j < GRAPH_TOP_TERMS; j++)
            rcp_jw_int(w, c->nodes[j]);
        rcp_jw_arr_end(w);
        rcp_jw_key(w, "passages");
        rcp_jw_arr(w);
        for (j = 0; j < c->nreps; j++) {
            const bag *b = g->pass[c->reps[j]];
            rcp_jw_str(w, b->id, b->idlen);
        }
        rcp_jw_arr_end(w);
        rcp_jw_obj_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    rcp_free(thr);
    return 0;
}

static int json_uint(const rcp_json *v, uint64_t lim, uint64_t *out)
{
    int64_t x;
    if (!v || !rcp_json_int(v, &x) || x < 0 || (uint64_t)x >= lim)
        return -1;
    *out = (uint64_t)x;
    return 0;
}

/* The node arrays and the CSR of a graph read back. */
static int read_nodes(graph *g, const rcp_json *nodes)
{
    size_t i;
    g->nnodes = nodes->n;
    if (!(g->node_term = rcp_malloc((g->nnodes + 1) * sizeof *g->node_term))
        || !(g->node_label = rcp_malloc((g->nnodes + 1)
                                        * sizeof *g->node_label))
        || !(g->node_df = rcp_malloc((g->nnodes + 1) * sizeof *g->node_df)))
        return -1;
    for (i = 0; i < nodes->n; i++) {
        const rcp_json *v = &nodes->kids[i];
        uint64_t df;
        if (v->type != RCP_JSON_ARRAY || v->n != 3
            || v->kids[0].type != RCP_JSON_STRING
            || v->kids[1].type != RCP_JSON_STRING
            || json_uint(&v->kids[2], NONE, &df)
            || str_intern(&g->str, v->kids[0].s, v->kids[0].n,
                          &g->node_label[i])
            || str_intern(&g->str, v->kids[1].s, v->kids[1].n,
                          &g->node_term[i]))
            return -1;
        g->node_df[i] = (uint32_t)df;
    }
    g->nstr_mapped = g->str.n;
    if (!(g->node_of = rcp_malloc((g->str.n + 1) * sizeof *g->node_of))
        || !(g->label_node = rcp_malloc((g->str.n + 1)
                                        * sizeof *g->label_node)))
        return -1;
    for (i = 0; i < g->str.n; i++)
        g->node_of[i] = g->label_node[i] = NONE;
    for (i = 0; i < g->nnodes; i++) {
        g->node_of[g->node_term[i]] = (uint32_t)i;
        g->label_node[g->node_label[i]] = (uint32_t)i;
    }
    return 0;
}

static int read_edges(graph *g, const rcp_json *edges)
{
    size_t ne = edges->n / 3, i, *fill;
    uint64_t a = 0, b = 0, wt = 0;
    if (edges->n % 3)
        return -1;
    if (!(g->adjx = rcp_malloc((g->nnodes + 1) * sizeof *g->adjx))
        || !(g->adj = rcp_malloc((2 * ne + 1) * sizeof *g->adj))
        || !(g->adjw = rcp_malloc((2 * ne + 1) * sizeof *g->adjw))
        || !(g->deg = rcp_malloc((g->nnodes + 1) * sizeof *g->deg))
        || !(fill = rcp_malloc((g->nnodes + 1) * sizeof *fill)))
        return -1;
    memset(g->adjx, 0, (g->nnodes + 1) * sizeof *g->adjx);
    memset(g->deg, 0, (g->nnodes + 1) * sizeof *g->deg);
    for (i = 0; i < ne; i++) {
        if (json_uint(&edges->kids[3 * i], g->nnodes, &a)
            || json_uint(&edges->kids[3 * i + 1], g->nnodes, &b)
            || json_uint(&edges->kids[3 * i + 2], UINT32_MAX, &wt) || a >= b) {
            rcp_free(fill);
            return -1;
        }
        g->adjx[a + 1]++;
        g->adjx[b + 1]++;
        g->deg[a] += (double)wt;
        g->deg[b] += (double)wt;
    }
    for (i = 0; i < g->nnodes; i++)
        g->adjx[i + 1] += g->adjx[i];
    memcpy(fill, g->adjx, g->nnodes * sizeof *fill);
    for (i = 0; i < ne; i++) {          /* written in (a, b) order: sorted */
        (void)json_uint(&edges->kids[3 * i], g->nnodes, &a);
        (void)json_uint(&edges->kids[3 * i + 1], g->nnodes, &b);
        (void)json_uint(&edges->kids[3 * i + 2], UINT32_MAX, &wt);
        g->adj[fill[b]] = (uint32_t)a;
        g->adjw[fill[b]++] = (double)wt;
    }
    for (i = 0; i < ne; i++) {
        (void)json_uint(&edges->kids[3 * i], g->nnodes, &a);
        (void)json_uint(&edges->kids[3 * i + 1], g->nnodes, &b);
        (void)json_uint(&edges->kids[3 * i + 2], UINT32_MAX, &wt);
        g->adj[fill[a]] = (uint32_t)b;
        g->adjw[fill[a]++] = (double)wt;
    }
    rcp_free(fill);
    g->nedges = ne;
    return 0;
}

int graph_read(graph *g, const rcp_json *v)
{
    const rcp_json *nodes = rcp_json_get(v, "nodes");
    const rcp_json *edges = rcp_json_get(v, "edges");
    uint64_t np;
    derived_free(g);
    if (json_uint(rcp_json_get(v, "passages"), UINT32_MAX, &np)
        || !nodes || nodes->type != RCP_JSON_ARRAY || nodes->n >= NONE
        || !edges || edges->type != RCP_JSON_ARRAY)
        return -1;
    g->npass = (size_t)np;
    if (read_nodes(g, nodes) || read_edges(g, edges)) {
        derived_free(g);
        return -1;
    }
    return 0;
}
