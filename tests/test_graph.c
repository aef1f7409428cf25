/*
** test_graph.c -- the term graph (graph.c) behind graph (§7.9) and memory
** (§7.17): nodes, edges, communities and summaries, the walk, upkeep
** after changes, checkpoints, memories written and read back, and out of
** memory.  Test names say the requirement.
*/
#include <stdio.h>
#include <string.h>

#include "rcp.h"
#include "testutil.h"

/* MARK: - helpers */

/* Passages as a source: id i is IDS[i] (NULL: no passage at i). */
typedef struct psrc {
    const char *const *ids, *const *texts;
    size_t n;
    int stop_at, calls;         /* check returns 7 on call stop_at */
} psrc;

static int pget(void *ud, size_t i, const char **id, size_t *idlen,
                const char **text, size_t *len)
{
    const psrc *p = ud;
    if (!p->ids[i])
        return 1;
    *id = p->ids[i];
    *idlen = strlen(p->ids[i]);
    *text = p->texts[i];
    *len = strlen(p->texts[i]);
    return 0;
}

static int pcheck(void *ud)
{
    psrc *p = ud;
    return ++p->calls == p->stop_at ? 7 : 0;
}

static int sync_of(graph *g, psrc *p)
{
    graph_src s;
    s.n = p->n;
    s.get = pget;
    s.check = pcheck;
    s.ud = p;
    return graph_sync(g, &s);
}

/* Two topics, three passages each, and one passage that bridges them. */
static const char *const IDS[] = { "a1", "a2", "a3", "b1", "b2", "b3",
                                   "x" };
static const char *const TEXTS[] = {
    "The boundary layer separates near the wing. Skin friction grows.",
    "Laminar boundary layer flow over a flat wing and its skin friction.",
    "Turbulent boundary layers: skin friction on the wing surface.",
    "Panel flutter of clamped plates at supersonic speed.",
    "Supersonic panel flutter: clamped plates and piston theory.",
    "Piston theory predicts the flutter of clamped plates.",
    "A note on cooking pasta.",
};

static psrc corpus(void)
{
    psrc p;
    memset(&p, 0, sizeof p);
    p.ids = IDS;
    p.texts = TEXTS;
    p.n = 7;
    return p;
}

/* Everything the graph says, as one string: nodes with their edges, and
** each level's communities with their nodes, representatives, summary. */
static char *dump(const graph *g)
{
    static char out[1 << 16];
    size_t n = 0, i, j, l, len;
    out[0] = 0;
#define PUT(...) (n += (size_t)snprintf(out + n, sizeof out - n, __VA_ARGS__))
    for (i = 0; i < graph_nnodes(g); i++) {
        const uint32_t *nb;
        const double *w;
        const char *s = graph_label(g, (uint32_t)i, &len);
        size_t k = graph_adj(g, (uint32_t)i, &nb, &w);
        PUT("[%.*s]", (int)len, s);
        for (j = 0; j < k; j++) {
            s = graph_label(g, nb[j], &len);
            PUT(" %.*s:%g", (int)len, s, w[j]);
        }
        PUT("\n");
    }
    for (l = 0; l < graph_levels(g); l++)
        for (i = 0; i < graph_ncomms(g, l); i++) {
            const graph_comm *c = graph_comm_at(g, l, i);
            PUT("L%lu.%lu:", (unsigned long)l, (unsigned long)i);
            for (j = 0; j < c->nnodes; j++) {
                const char *s = graph_label(g, c->nodes[j], &len);
                PUT(" %.*s", (int)len, s);
            }
            for (j = 0; j < c->nreps; j++) {
                const char *s = graph_passage_id(g, c->reps[j], &len);
                PUT(" #%.*s", (int)len, s);
            }
            PUT(" | %.*s\n", (int)c->sumlen, c->summary);
        }
#undef PUT
    ck_assert_uint_lt(n, sizeof out - 1);
    return out;
}

static long node(const graph *g, const char *s)
{
    return graph_node(g, s, strlen(s));
}

static double weight(const graph *g, const char *a, const char *b)
{
    const uint32_t *nb;
    const double *w;
    long x = node(g, a), y = node(g, b);
    size_t k, j;
    ck_assert_int_ge(x, 0);
    ck_assert_int_ge(y, 0);
    k = graph_adj(g, (uint32_t)x, &nb, &w);
    for (j = 0; j < k; j++)
        if (nb[j] == (uint32_t)y)
            return w[j];
    return 0;
}

/* g written as a memory keeping `per` edges a node, read back into h. */
static void write_read(const graph *g, size_t per, graph *h, size_t *tokens)
{
    rcp_buf b;
    rcp_jw w;
    rcp_arena a;
    const rcp_json *v;
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    ck_assert_int_eq(graph_write(g, &w, per, tokens), 0);
    rcp_arena_init(&a, 0);
    ck_assert_ptr_nonnull(v = rcp_json_parse(&a, b.data, b.len, 0, NULL));
    ck_assert_int_eq(graph_read(h, v), 0);
    rcp_arena_free(&a);             /* h holds copies of its strings */
    rcp_buf_free(&b);
}

/* MARK: - nodes and edges */

START_TEST(nodes_are_terms_and_phrases_salient_in_two_passages_or_more)
{
    graph *g = graph_new();
    psrc p = corpus();
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_uint_eq(graph_npassages(g), 7);
    /* phrases: two adjacent terms with no stopword between them */
    ck_assert_int_ge(node(g, "boundary layer"), 0);
    ck_assert_int_ge(node(g, "panel flutter"), 0);
    ck_assert_int_ge(node(g, "skin friction"), 0);
    /* in one passage only, no node: pasta, cooking, laminar */
    ck_assert_int_lt(node(g, "pasta"), 0);
    ck_assert_int_lt(node(g, "laminar"), 0);
    /* a label is the smallest surface form: layer (not layers); any form
    ** of the word finds the node */
    ck_assert_int_eq(node(g, "layers"), node(g, "layer"));
    {
        size_t len;
        const char *l = graph_label(g, (uint32_t)node(g, "layers"), &len);
        ck_assert_int_eq((int)len, 5);
        ck_assert_int_eq(memcmp(l, "layer", 5), 0);
    }
    graph_free(g);
}
END_TEST

START_TEST(edge_weight_counts_the_passages_where_both_are_salient)
{
    graph *g = graph_new();
    psrc p = corpus();
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert(weight(g, "skin friction", "wing") == 3);
    ck_assert(weight(g, "clamped", "clamped plates") == 3);
    ck_assert(weight(g, "clamped", "plates") == 2);   /* 8 salient a passage */
    ck_assert(weight(g, "piston", "supersonic") == 1);
    ck_assert(weight(g, "wing", "plates") == 0);    /* never together */
    ck_assert(weight(g, "wing", "skin friction")
              == weight(g, "skin friction", "wing"));  /* undirected */
    graph_free(g);
}
END_TEST

START_TEST(no_passages_or_one_give_a_graph_without_nodes)
{
    graph *g = graph_new(), *h = graph_new();
    psrc p = corpus();
    uint32_t seeds[4];
    double pr[4];
    size_t tokens;
    p.n = 0;
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_uint_eq(graph_npassages(g), 0);
    ck_assert_uint_eq(graph_nnodes(g), 0);
    ck_assert_uint_eq(graph_levels(g), 0);
    ck_assert_int_eq(graph_entities(g, "wing", 4, seeds, 4), 0);
    ck_assert_int_lt(node(g, "wing"), 0);
    ck_assert_int_eq(graph_ppr(g, seeds, 0, pr, NULL, NULL), 0);
    write_read(g, 8, h, &tokens);
    ck_assert_uint_eq(graph_nnodes(h), 0);
    p.n = 1;                    /* one passage: no term is in two */
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_uint_eq(graph_npassages(g), 1);
    ck_assert_uint_eq(graph_nnodes(g), 0);
    ck_assert_uint_eq(graph_nedges(g), 0);
    graph_free(g);
    graph_free(h);
}
END_TEST

/* MARK: - communities and summaries */

START_TEST(communities_split_the_topics_with_extractive_summaries)
{
    graph *g = graph_new();
    psrc p = corpus();
    size_t i, j;
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_uint_ge(graph_levels(g), 1);
    ck_assert_uint_eq(graph_ncomms(g, 0), 2);
    ck_assert_int_ne(graph_comm_of(g, 0, (uint32_t)node(g, "wing")),
                     graph_comm_of(g, 0, (uint32_t)node(g, "flutter")));
    ck_assert_int_eq(graph_comm_of(g, 0, (uint32_t)node(g, "wing")),
                     graph_comm_of(g, 0, (uint32_t)node(g, "boundary layer")));
    for (i = 0; i < 2; i++) {
        const graph_comm *c = graph_comm_at(g, 0, i);
        int found = 0;
        ck_assert_uint_ge(c->nnodes, 2);
        ck_assert_uint_ge(c->nreps, 1);
        ck_assert_uint_gt(c->sumlen, 0);
        /* extractive: the summary is a sentence of some passage */
        for (j = 0; j < 7; j++) {
            const char *t = TEXTS[j];
            size_t k, n = strlen(t);
            for (k = 0; k + c->sumlen <= n; k++)
                found |= memcmp(t + k, c->summary, c->sumlen) == 0;
        }
        ck_assert_msg(found, "summary %.*s is in no passage",
                      (int)c->sumlen, c->summary);
    }
    graph_free(g);
}
END_TEST

/* MARK: - determinism and upkeep */

START_TEST(graph_depends_on_the_passages_not_their_order)
{
    static const char *const rids[] = { "x", "b3", "b2", "b1", "a3", "a2",
                                        "a1" };
    const char *rtexts[7];
    graph *g = graph_new(), *h = graph_new();
    psrc p = corpus(), q = corpus();
    char *a;
    size_t i;
    for (i = 0; i < 7; i++)
        rtexts[i] = TEXTS[6 - i];
    q.ids = rids;
    q.texts = rtexts;
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_int_eq(sync_of(h, &q), 0);
    a = strdup(dump(g));
    ck_assert_str_eq(a, dump(h));
    free(a);
    graph_free(g);
    graph_free(h);
}
END_TEST

START_TEST(sync_after_adds_deletes_and_changes_equals_a_fresh_build)
{
    static const char *const ids2[] = { "a1", NULL, "a3", "b1", "b2", "b3",
                                        "x", "a4" };
    const char *texts2[8];
    graph *g = graph_new(), *fresh = graph_new();
    psrc p = corpus(), q = corpus();
    char *a;
    memcpy(texts2, TEXTS, 7 * sizeof *texts2);
    texts2[3] = "Panel flutter of thin plates.";                /* changed */
    texts2[7] = "Boundary layer transition on a swept wing.";    /* added */
    q.ids = ids2;
    q.texts = texts2;
    q.n = 8;                    /* a2 deleted (no passage at 1) */
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_int_eq(sync_of(g, &q), 0);
    ck_assert_int_eq(sync_of(fresh, &q), 0);
    ck_assert_uint_eq(graph_npassages(g), 7);
    a = strdup(dump(g));
    ck_assert_str_eq(a, dump(fresh));
    free(a);
    /* and back: the first corpus again gives the first graph */
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_int_eq(sync_of(fresh, &p), 0);
    a = strdup(dump(g));
    ck_assert_str_eq(a, dump(fresh));
    free(a);
    graph_free(g);
    graph_free(fresh);
}
END_TEST

START_TEST(a_check_that_stops_the_sync_leaves_the_graph_empty)
{
    static const char *ids[600], *texts[600];
    static char buf[600][64];
    graph *g = graph_new();
    psrc p;
    size_t i;
    for (i = 0; i < 600; i++) {
        sprintf(buf[i], "p%03lu", (unsigned long)i);
        ids[i] = buf[i];
        texts[i] = i % 2 ? "wing boundary layer skin friction"
                         : "panel flutter clamped plates";
    }
    memset(&p, 0, sizeof p);
    p.ids = ids;
    p.texts = texts;
    p.n = 600;
    p.stop_at = 2;              /* the second check: mid-way */
    ck_assert_int_eq(sync_of(g, &p), 7);
    ck_assert_uint_eq(graph_nnodes(g), 0);
    ck_assert_uint_eq(graph_npassages(g), 0);
    p.stop_at = 0;
    p.calls = 0;
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_uint_gt(graph_nnodes(g), 0);
    graph_free(g);
}
END_TEST

/* MARK: - the walk */

START_TEST(pagerank_is_a_distribution_that_stays_near_its_seeds)
{
    graph *g = graph_new();
    psrc p = corpus();
    uint32_t seeds[8];
    double pr[256], sum = 0;
    long n;
    size_t i;
    ck_assert_int_eq(sync_of(g, &p), 0);
    ck_assert_uint_lt(graph_nnodes(g), 256);
    n = graph_entities(g, "flutter of a clamped panel", 26, seeds, 8);
    ck_assert_int_ge(n, 2);
    ck_assert_int_eq(graph_ppr(g, seeds, (size_t)n, pr, NULL, NULL), 0);
    for (i = 0; i < graph_nnodes(g); i++) {
        ck_assert(pr[i] >= 0);
        sum += pr[i];
    }
    ck_assert(sum > 0.999 && sum < 1.001);
    ck_assert(pr[node(g, "plates")] > pr[node(g, "wing")]);
    ck_assert(pr[node(g, "wing")] == 0);        /* another component */
    graph_free(g);
}
END_TEST

/* MARK: - memories */

START_TEST(a_graph_written_and_read_back_walks_the_same)
{
    static const char bad[] = "{\"passages\":3,\"nodes\":[[\"a\",\"a\",1]],"
                              "\"edges\":[0,5,1]}";
    graph *g = graph_new(), *h = graph_new();
    psrc p = corpus();
    rcp_arena a;
    const rcp_json *v;
    uint32_t s1[8], s2[8];
    double p1[256], p2[256];
    size_t tokens, i;
    long n1, n2;
    ck_assert_int_eq(sync_of(g, &p), 0);
    write_read(g, 1000, h, &tokens);
    ck_assert_uint_ge(tokens, graph_nnodes(g));
    ck_assert_uint_eq(graph_nnodes(h), graph_nnodes(g));
    ck_assert_uint_eq(graph_nedges(h), graph_nedges(g));
    n1 = graph_entities(g, "supersonic panel flutter", 24, s1, 8);
    n2 = graph_entities(h, "supersonic panel flutter", 24, s2, 8);
    ck_assert_int_eq(n1, n2);
    ck_assert_int_eq(graph_ppr(g, s1, (size_t)n1, p1, NULL, NULL), 0);
    ck_assert_int_eq(graph_ppr(h, s2, (size_t)n2, p2, NULL, NULL), 0);
    for (i = 0; i < graph_nnodes(g); i++)
        ck_assert(p1[i] == p2[i]);
    /* a damaged memory is refused, never half read */
    rcp_arena_init(&a, 0);
    ck_assert_ptr_nonnull(v = rcp_json_parse(&a, bad, sizeof bad - 1, 0,
                                             NULL));
    ck_assert_int_eq(graph_read(h, v), -1);
    ck_assert_uint_eq(graph_nnodes(h), 0);
    rcp_arena_free(&a);
    graph_free(g);
    graph_free(h);
}
END_TEST

START_TEST(a_memory_keeps_each_nodes_strongest_edges)
{
    graph *g = graph_new(), *h = graph_new();
    psrc p = corpus();
    size_t tokens;
    ck_assert_int_eq(sync_of(g, &p), 0);
    write_read(g, 1, h, &tokens);
    ck_assert_uint_lt(graph_nedges(h), graph_nedges(g));
    ck_assert(weight(h, "clamped", "clamped plates") == 3);  /* strongest */
    graph_free(g);
    graph_free(h);
}
END_TEST

/* MARK: - out of memory */

static long FAIL_AT, CALLS;

static void *failing(void *ud, void *ptr, size_t n)
{
    (void)ud;
    if (n == 0) {
        free(ptr);
        return NULL;
    }
    return ++CALLS == FAIL_AT ? NULL : realloc(ptr, n);
}

START_TEST(every_allocation_failure_in_a_sync_is_an_error_never_a_crash)
{
    psrc p = corpus();
    char *want;
    graph *g = graph_new();
    ck_assert_int_eq(sync_of(g, &p), 0);
    want = strdup(dump(g));
    graph_free(g);
    for (FAIL_AT = 1;; FAIL_AT++) {
        int rc;
        CALLS = 0;
        rcp_set_allocator(failing, NULL);
        g = graph_new();
        rc = g ? sync_of(g, &p) : -1;
        if (g && rc == 0)       /* a retry after the failure succeeds */
            ;
        else if (g)
            ck_assert_uint_eq(graph_nnodes(g), 0);
        rcp_set_allocator(NULL, NULL);
        if (g && rc == 0 && CALLS < FAIL_AT) {
            ck_assert_str_eq(dump(g), want);
            graph_free(g);
            break;
        }
        if (g) {
            ck_assert_int_eq(rc, -1);
            ck_assert_int_eq(sync_of(g, &p), 0);  /* and it recovers */
            ck_assert_str_eq(dump(g), want);
        }
        graph_free(g);
    }
    free(want);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("graph");
    tcase_add_test(tc,
        nodes_are_terms_and_phrases_salient_in_two_passages_or_more);
    tcase_add_test(tc, edge_weight_counts_the_passages_where_both_are_salient);
    tcase_add_test(tc, no_passages_or_one_give_a_graph_without_nodes);
    tcase_add_test(tc, communities_split_the_topics_with_extractive_summaries);
    tcase_add_test(tc, graph_depends_on_the_passages_not_their_order);
    tcase_add_test(tc,
        sync_after_adds_deletes_and_changes_equals_a_fresh_build);
    tcase_add_test(tc, a_check_that_stops_the_sync_leaves_the_graph_empty);
    tcase_add_test(tc, pagerank_is_a_distribution_that_stays_near_its_seeds);
    tcase_add_test(tc, a_graph_written_and_read_back_walks_the_same);
    tcase_add_test(tc, a_memory_keeps_each_nodes_strongest_edges);
    tcase_add_test(tc,
        every_allocation_failure_in_a_sync_is_an_error_never_a_crash);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
