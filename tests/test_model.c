/*
** test_model.c -- the built-in engine (model.c): embedders, BM25 index,
** snapshots, fusion, rerankers.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcp.h"
#include "testutil.h"

/* MARK: - dense embedder */

static rcp_model *new_model(unsigned dim)
{
    rcp_model_opts o;
    char err[128];
    rcp_model *m;
    rcp_model_opts_init(&o);
    if (dim)
        o.dim = dim;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

static void embed(const rcp_model *m, const char *s, float *v)
{
    ck_assert_int_eq(rcp_model_embed(m, s, strlen(s), RCP_KIND_QUERY, v), 0);
}

static double cosine(const float *a, const float *b, size_t n)
{
    double d = 0;
    size_t i;
    for (i = 0; i < n; i++)
        d += (double)a[i] * b[i];
    return d;
}

/* Every invariant holds (rcp_model_check): after every change a test
** makes, through the helpers below, each stored text checked against the
** plain path too.  A check reads the whole model, so where a loop makes
** thousands of changes (the _quick helpers) the structure is checked
** after every seventh and everything at the loop's end: a broken
** invariant stays broken until it is seen. */
static void check_flags(const rcp_model *m, unsigned flags)
{
    char err[256];
    ck_assert_msg(rcp_model_check(m, flags, err, sizeof err) == 0, "%s",
                  err);
}

static void check(const rcp_model *m)
{
    check_flags(m, RCP_MODEL_CHECK_TEXTS);
}

static void add(rcp_model *m, const char *id, const char *text)
{
    ck_assert_int_eq(rcp_model_add(m, id, strlen(id), text, strlen(text),
                                   NULL, 0), 0);
    check(m);
}

static int del(rcp_model *m, const char *id)
{
    int rc = rcp_model_delete(m, id, strlen(id));
    check(m);
    return rc;
}

static unsigned long QUICK;

static void add_quick(rcp_model *m, const char *id, const char *text)
{
    ck_assert_int_eq(rcp_model_add(m, id, strlen(id), text, strlen(text),
                                   NULL, 0), 0);
    if (++QUICK % 7 == 0)
        check_flags(m, 0);
}

static int del_quick(rcp_model *m, const char *id)
{
    int rc = rcp_model_delete(m, id, strlen(id));
    if (++QUICK % 7 == 0)
        check_flags(m, 0);
    return rc;
}

static int roll(rcp_model *m, uint64_t v)
{
    int rc = rcp_model_rollback(m, v);
    check(m);
    return rc;
}

/* issue 12: no second stoplist in the embedders: "help" and "hello" are
** words (v3's SMART filler list made them the zero vector). */
START_TEST(embed_counts_every_word_beyond_the_stopwords)
{
    rcp_model *m = new_model(0);
    float v[384];
    embed(m, "hello help", v);
    ck_assert(cosine(v, v, 384) > 0.99);
    embed(m, "the of and", v);          /* stopwords only: no words */
    ck_assert(cosine(v, v, 384) == 0);
    rcp_model_free(m);
}
END_TEST

START_TEST(embed_is_deterministic_unit_length_and_names_its_identity)
{
    rcp_model *m = new_model(0), *m2 = new_model(64);
    float a[384], b[384];
    ck_assert_uint_eq(rcp_model_dim(m), 384);
    ck_assert_str_eq(rcp_model_identity(m, RCP_EMBED_DENSE),
                     "rcp-hash-ngram-v4-384");
    ck_assert_str_eq(rcp_model_identity(m2, RCP_EMBED_DENSE),
                     "rcp-hash-ngram-v4-64");
    embed(m, "Pressure distribution on a swept wing", a);
    embed(m, "Pressure distribution on a swept wing", b);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert(fabs(cosine(a, a, 384) - 1.0) < 1e-5);
    rcp_model_free(m);
    rcp_model_free(m2);
}
END_TEST

START_TEST(embed_is_independent_of_the_corpus)
{
    /* §7.3/§15.7: same text, same vector, before and after index changes,
    ** and in a fresh model that never saw the corpus */
    rcp_model *m = new_model(0), *fresh = new_model(0);
    float before[384], after[384], other[384];
    const char *q = "heat transfer in hypersonic flow";
    embed(m, q, before);
    add(m, "1", "hypersonic flow heat transfer measurements");
    add(m, "2", "boundary layer transition at high speed");
    ck_assert_int_eq(del(m, "2"), 1);
    embed(m, q, after);
    embed(fresh, q, other);
    ck_assert_int_eq(memcmp(before, after, sizeof before), 0);
    ck_assert_int_eq(memcmp(before, other, sizeof before), 0);
    rcp_model_free(m);
    rcp_model_free(fresh);
}
END_TEST

/* Indexing remembers each word's features in a lexicon; a document's
** stored vector must still be exactly rcp_model_embed of its text,
** whether its words were remembered, computed afresh, or the lexicon was
** emptied before every document (lexicon_bytes 0). */
static const char *const lex_texts[] = {
    "Flow flows FLOWING flow; the flow of flows",
    "heat transfer 1958 1958 42 at Mach 3.5, heat",
    "\xE6\x9D\xB1\xE4\xBA\xAC\xE5\xA4\xA7\xE5\xAD\xA6 and "
    "\xE6\x9D\xB1\xE4\xBA\xAC flows",                   /* 東京大学 東京 */
    "\xC3\x84rger \xC3\x89" "COLE \xC3\xA9" "cole stra\xC3\x9F" "e STRASSE",
    "also the of and given various",
    "",
    "pneumonoultramicroscopicsilicovolcanoconiosis"
    "pneumonoultramicroscopicsilicovolcanoconiosis"
    "pneumonoultramicroscopicsilicovolcanoconiosis flow",
    "flow flow flow flow flow flow flow heat flows",
    "a study of studies: study, studying",
};

START_TEST(indexed_vectors_are_exactly_the_embedding_of_their_text)
{
    size_t bytes[2] = { 0, 0 }, nt = sizeof lex_texts / sizeof *lex_texts;
    size_t b, i, r;
    rcp_model_opts o;
    rcp_model_opts_init(&o);
    bytes[0] = o.lexicon_bytes;
    ck_assert_uint_gt(bytes[0], 0);
    for (b = 0; b < 2; b++) {
        char err[128], id[32];
        rcp_model *m;
        o.lexicon_bytes = bytes[b];
        m = rcp_model_new(&o, err, sizeof err);
        ck_assert_ptr_nonnull(m);
        for (r = 0; r < 2; r++)         /* words new, then remembered */
            for (i = 0; i < nt; i++) {
                rcp_model_docview v;
                float e[384];
                snprintf(id, sizeof id, "%u-%u", (unsigned)r, (unsigned)i);
                add(m, id, lex_texts[i]);
                ck_assert_int_eq(rcp_model_doc(m, (uint32_t)rcp_model_find(
                                     m, id, strlen(id)), &v), 0);
                embed(m, lex_texts[i], e);
                ck_assert_msg(!memcmp(v.vector, e, sizeof e),
                              "text %u, round %u, lexicon %u bytes",
                              (unsigned)i, (unsigned)r, (unsigned)bytes[b]);
            }
        rcp_model_free(m);
    }
}
END_TEST

/* MARK: - corpus-learned dense embedder (LSA) */

/* Three topics; in the first, "car" and "automobile" are never in one
** document, only in the same company (engine, wheel, road, ...), so
** only a model of the corpus can relate them. */
static const char *const lsa_topic[3][7] = {
    { "car", "automobile", "engine", "wheel", "road", "driver", "fuel" },
    { "bread", "flour", "oven", "bake", "dough", "yeast", "crust" },
    { "river", "fish", "boat", "water", "sail", "net", "harbour" },
};

/* Document i of the synthetic corpus: four words of topic i % 3, of
** car / automobile at most one (alternating), and salt's variation. */
static void lsa_doc(size_t i, unsigned salt, char *out, size_t cap)
{
    const char *const *w = lsa_topic[i % 3];
    size_t j, n = 0, pick = 2 + (i * 7 + salt) % 5;
    n += (size_t)snprintf(out + n, cap - n, "%s", i % 3 ? w[0]
                          : w[(i / 3) % 2]);
    for (j = 0; j < 3; j++, pick = 2 + (pick + 2 * j + 1) % 5)
        n += (size_t)snprintf(out + n, cap - n, " %s", w[pick]);
}

static rcp_model *lsa_model(unsigned dim, size_t min_docs, int lsa)
{
    rcp_model_opts o;
    char err[128];
    rcp_model *m;
    rcp_model_opts_init(&o);
    o.dim = dim;
    o.lsa = lsa;
    o.lsa_min_docs = min_docs;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

static void lsa_fill(rcp_model *m, size_t from, size_t to, unsigned salt)
{
    char id[32], text[256];
    size_t i;
    for (i = from; i < to; i++) {
        snprintf(id, sizeof id, "d%u", (unsigned)i);
        lsa_doc(i, salt, text, sizeof text);
        add_quick(m, id, text);
    }
    check(m);
}

/* Every stored vector is the embedding of its text under the model now
** in use (rcp_model_check compares them too; here bit for bit). */
static void lsa_rows_are_embeddings(const rcp_model *m)
{
    size_t i, seen = 0, n = rcp_model_count(m), dim = rcp_model_dim(m);
    float *e = malloc(dim * sizeof *e);
    ck_assert_ptr_nonnull(e);
    for (i = 0; seen < n; i++) {        /* docnos of the dead fail */
        rcp_model_docview v;
        ck_assert_uint_lt(i, n + 64);
        if (rcp_model_doc(m, (uint32_t)i, &v))
            continue;
        seen++;
        ck_assert_int_eq(rcp_model_embed(m, v.text, v.textlen,
                                         RCP_KIND_DOCUMENT, e), 0);
        ck_assert_msg(!memcmp(v.vector, e, dim * sizeof *e), "row %u",
                      (unsigned)i);
    }
    free(e);
}

START_TEST(lsa_relates_words_only_their_company_relates)
{
    /* the semantic signal hashing cannot have: "automobile" and "car"
    ** share no character n-gram, only their neighbours in the corpus */
    rcp_model *m = lsa_model(3, 40, 1), *h = lsa_model(3, 40, 0);
    float a[3], c[3], b[3];
    rcp_model_query q;
    rcp_model_hit hits[70];
    size_t n, i;
    long car, bread;
    double scar = -2, sbread = -2;
    lsa_fill(m, 0, 60, 0);
    lsa_fill(h, 0, 60, 0);
    ck_assert_uint_eq(rcp_model_generation(m), 0);     /* adds never learn */
    ck_assert_int_eq(rcp_model_train(m, 0), 1);
    ck_assert_int_eq(rcp_model_train(h, 0), 0);
    embed(m, "automobile", a);
    embed(m, "car", c);
    embed(m, "bread", b);
    ck_assert_double_gt(cosine(a, c, 3), 0.9);
    ck_assert_double_lt(cosine(a, b, 3), 0.3);
    /* a document that says "car" only is found by "automobile" */
    add(m, "only-car", "car car");
    rcp_model_query_init(&q);
    q.text = "automobile";
    q.len = strlen(q.text);
    q.mode = RCP_MODE_DENSE;
    q.k = 70;
    ck_assert_int_eq(rcp_model_search(m, &q, hits, &n), 0);
    ck_assert_uint_eq(n, 61);
    car = rcp_model_find(m, "only-car", 8);
    bread = rcp_model_find(m, "d1", 2);         /* topic 1: bread, ... */
    for (i = 0; i < n; i++) {
        if ((long)hits[i].doc == car)
            scar = hits[i].dense;
        if ((long)hits[i].doc == bread)
            sbread = hits[i].dense;
    }
    ck_assert_double_gt(scar, 0.9);
    ck_assert_double_lt(sbread, 0.3);
    /* the hashed embedder relates them no more than any two words */
    ck_assert_uint_eq(rcp_model_generation(h), 0);
    embed(h, "automobile", a);
    embed(h, "car", c);
    ck_assert_double_lt(fabs(cosine(a, c, 3)), 0.9);
    rcp_model_free(m);
    rcp_model_free(h);
}
END_TEST

START_TEST(lsa_training_is_deterministic_and_its_identity_names_the_corpus)
{
    /* §15.7: the same corpus gives the same model -- identity and every
    ** vector bit for bit; another corpus another identity */
    rcp_model *a = lsa_model(8, 40, 1), *b = lsa_model(8, 40, 1),
              *c = lsa_model(8, 40, 1);
    float va[8], vb[8];
    const char *q = "automobile engine on the road";
    lsa_fill(a, 0, 40, 0);
    lsa_fill(b, 0, 40, 0);
    ck_assert_uint_eq(rcp_model_generation(b), 0);
    ck_assert_str_eq(rcp_model_identity(b, RCP_EMBED_DENSE),
                     "rcp-hash-ngram-v4-8");
    lsa_fill(c, 0, 40, 1);
    ck_assert_int_eq(rcp_model_train(a, 0), 1);
    ck_assert_int_eq(rcp_model_train(b, 0), 1);
    ck_assert_int_eq(rcp_model_train(c, 0), 1);
    ck_assert_uint_eq(rcp_model_generation(a), 1);
    ck_assert_uint_eq(rcp_model_generation(b), 1);
    ck_assert_str_eq(rcp_model_identity(a, RCP_EMBED_DENSE),
                     rcp_model_identity(b, RCP_EMBED_DENSE));
    ck_assert(!strncmp(rcp_model_identity(a, RCP_EMBED_DENSE),
                       "rcp-lsa-v1-8-", 13));
    ck_assert_str_ne(rcp_model_identity(a, RCP_EMBED_DENSE),
                     rcp_model_identity(c, RCP_EMBED_DENSE));
    embed(a, q, va);
    embed(b, q, vb);
    ck_assert_int_eq(memcmp(va, vb, sizeof va), 0);
    lsa_rows_are_embeddings(a);
    lsa_rows_are_embeddings(b);
    rcp_model_free(a);
    rcp_model_free(b);
    rcp_model_free(c);
}
END_TEST

START_TEST(lsa_folds_new_documents_in_and_retrains_when_the_corpus_doubles)
{
    /* the schedule rcp_model_train keeps: nothing below lsa_min_docs,
    ** trained there, new documents folded in with that model (its
    ** identity and the stored vectors unchanged), retrained at twice the
    ** documents: a new identity, every stored text embedded again, and
    ** the versions before it no longer pinnable (§7.7.1: they saw other
    ** vectors) */
    rcp_model *m = lsa_model(4, 30, 1);
    char id1[64];
    float before[4], after[4];
    uint64_t v;
    lsa_fill(m, 0, 29, 0);
    ck_assert_int_eq(rcp_model_train(m, 0), 0);
    ck_assert_uint_eq(rcp_model_generation(m), 0);
    lsa_fill(m, 29, 30, 0);
    ck_assert_int_eq(rcp_model_train(m, 0), 1);
    ck_assert_uint_eq(rcp_model_generation(m), 1);
    snprintf(id1, sizeof id1, "%s", rcp_model_identity(m, RCP_EMBED_DENSE));
    embed(m, "automobile", before);
    v = rcp_model_version(m);
    lsa_fill(m, 30, 59, 0);
    ck_assert_int_eq(rcp_model_train(m, 0), 0);
    ck_assert_uint_eq(rcp_model_generation(m), 1);
    ck_assert_str_eq(rcp_model_identity(m, RCP_EMBED_DENSE), id1);
    embed(m, "automobile", after);
    ck_assert_int_eq(memcmp(before, after, sizeof before), 0);
    ck_assert_int_eq(rcp_model_has_version(m, v), 1);
    lsa_rows_are_embeddings(m);
    lsa_fill(m, 59, 60, 0);
    ck_assert_int_eq(rcp_model_train(m, 0), 1);
    ck_assert_uint_eq(rcp_model_generation(m), 2);
    ck_assert_str_ne(rcp_model_identity(m, RCP_EMBED_DENSE), id1);
    ck_assert_int_eq(rcp_model_has_version(m, v), 0);
    ck_assert_int_eq(rcp_model_has_version(m, rcp_model_version(m)), 1);
    lsa_rows_are_embeddings(m);
    /* deletes shrink the corpus; nothing retrains until it doubles */
    ck_assert_int_eq(del(m, "d0"), 1);
    ck_assert_uint_eq(rcp_model_generation(m), 2);
    ck_assert_int_eq(rcp_model_train(m, 0), 0);
    ck_assert_int_eq(rcp_model_train(m, 1), 1);
    ck_assert_uint_eq(rcp_model_generation(m), 3);
    lsa_rows_are_embeddings(m);
    rcp_model_free(m);
}
END_TEST

START_TEST(a_rollback_across_a_training_keeps_the_model_whole)
{
    /* store.c rolls back a write that never reached the disk; if that
    ** write trained the embedder, the version before it is served again
    ** (its documents, searchable) with the model the training made -- a
    ** function of a corpus that held one more document, as its identity
    ** says -- and every stored vector is still the embedding of its text */
    rcp_model *m = lsa_model(4, 30, 1);
    uint64_t v;
    lsa_fill(m, 0, 29, 0);
    v = rcp_model_version(m);
    lsa_fill(m, 29, 30, 0);
    ck_assert_int_eq(rcp_model_train(m, 0), 1);
    ck_assert_int_eq(roll(m, v), 0);
    ck_assert_uint_eq(rcp_model_count(m), 29);
    ck_assert_uint_eq(rcp_model_version(m), v);
    ck_assert_int_eq(rcp_model_has_version(m, v), 1);
    lsa_rows_are_embeddings(m);
    rcp_model_free(m);
}
END_TEST

START_TEST(lsa_learns_from_an_even_sample_of_a_large_corpus)
{
    /* past 16 384 live documents a training reads every s-th (here
    ** every second): a word only in documents 1 and 3 is not in the
    ** model, one only in 0 and 2 is -- and every document, read or not,
    ** is embedded by the model all the same */
    rcp_model *m = lsa_model(4, 0, 1);
    char id[32], text[256];
    float v[4];
    size_t i;
    for (i = 0; i < 16385; i++) {
        snprintf(id, sizeof id, "d%u", (unsigned)i);
        lsa_doc(i, 0, text, sizeof text);
        if (i < 4)
            strcat(text, i % 2 ? " zyzzyva" : " quokka");
        ck_assert_int_eq(rcp_model_add(m, id, strlen(id), text,
                                       strlen(text), NULL, 0), 0);
    }
    ck_assert_int_eq(rcp_model_train(m, 0), 1);
    embed(m, "zyzzyva", v);
    ck_assert(v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0);
    embed(m, "quokka", v);
    ck_assert_double_gt(cosine(v, v, 4), 0.99);
    check_flags(m, 0);
    rcp_model_free(m);
}
END_TEST

START_TEST(lsa_with_nothing_to_learn_keeps_hashing_and_is_no_error)
{
    /* no word in two documents: nothing relates them, so the hashed
    ** embedder stays -- not an error, and not tried again at every add */
    rcp_model *m = lsa_model(4, 30, 1);
    char id[32], text[64];
    size_t i;
    for (i = 0; i < 40; i++) {
        snprintf(id, sizeof id, "u%u", (unsigned)i);
        snprintf(text, sizeof text, "w%uq", (unsigned)i);
        add(m, id, text);
    }
    ck_assert_int_eq(rcp_model_train(m, 0), 0);
    ck_assert_uint_eq(rcp_model_generation(m), 0);
    ck_assert_str_eq(rcp_model_identity(m, RCP_EMBED_DENSE),
                     "rcp-hash-ngram-v4-4");
    ck_assert_int_eq(rcp_model_train(m, 0), 0);
    lsa_fill(m, 0, 40, 0);
    ck_assert_int_eq(rcp_model_train(m, 0), 1);    /* twice: it learns */
    rcp_model_free(m);
}
END_TEST

START_TEST(the_hashed_embedder_never_learns)
{
    rcp_model *m = lsa_model(4, 30, 0);
    lsa_fill(m, 0, 70, 0);
    ck_assert_int_eq(rcp_model_train(m, 0), 0);
    ck_assert_uint_eq(rcp_model_generation(m), 0);
    ck_assert_int_eq(rcp_model_train(m, 1), 0);
    ck_assert_str_eq(rcp_model_identity(m, RCP_EMBED_DENSE),
                     "rcp-hash-ngram-v4-4");
    rcp_model_free(m);
}
END_TEST

START_TEST(embed_is_robust_to_typos_and_morphology)
{
    /* character n-grams keep most of a misspelt word; stems fold
    ** inflections (heating/heated, wings/wing) */
    rcp_model *m = new_model(0);
    float a[384], typo1[384], typo2[384], morph[384], other[384];
    double c1, c2, cm, co;
    embed(m, "aerodynamic heating of slender wings", a);
    embed(m, "aerodynamc heating of slender wings", typo1);
    embed(m, "aerodynamic heatng of slendr wings", typo2);
    embed(m, "wing heated aerodynamically, slenderness", morph);
    embed(m, "buckling of thin cylindrical shells under torsion", other);
    c1 = cosine(a, typo1, 384);
    c2 = cosine(a, typo2, 384);
    cm = cosine(a, morph, 384);
    co = cosine(a, other, 384);
    ck_assert_msg(c1 > 0.7 && c2 > 0.55 && cm > 0.6 && co < 0.25,
                  "typo1 %f typo2 %f morph %f other %f", c1, c2, cm, co);
    rcp_model_free(m);
}
END_TEST

START_TEST(embed_of_text_without_words_is_the_zero_vector)
{
    rcp_model *m = new_model(16);
    float v[16];
    size_t i;
    embed(m, " ,.;!? the of and ", v);
    for (i = 0; i < 16; i++)
        ck_assert(v[i] == 0.0f);
    rcp_model_free(m);
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(static_word_vectors_load_and_identity_follows_content)
{
    const char *p1 = "test_model_vec1.txt", *p2 = "test_model_vec2.txt";
    const char *text = "3 4\nwing 1 0 0 0\nflow 0 1 0 0\nshock 0 0 1 0.0\n";
    rcp_model_opts o;
    rcp_model *a, *b, *c;
    char err[128];
    float v[4];
    write_file(p1, text);
    write_file(p2, text);
    rcp_model_opts_init(&o);
    o.vectors_path = p1;
    a = rcp_model_new(&o, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    o.vectors_path = p2;
    b = rcp_model_new(&o, err, sizeof err);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(rcp_model_dim(a), 4);
    ck_assert(!strncmp(rcp_model_identity(a, RCP_EMBED_DENSE),
                       "rcp-static-", 11));
    /* the operator's vectors: a retrieve naming no mode is hybrid */
    ck_assert_int_eq(rcp_model_default_mode(a), RCP_MODE_HYBRID);
    /* same content at another path: same identity */
    ck_assert_str_eq(rcp_model_identity(a, RCP_EMBED_DENSE),
                     rcp_model_identity(b, RCP_EMBED_DENSE));
    embed(a, "Wing and FLOW", v);           /* mean of two, normalised */
    ck_assert(fabs(v[0] - 0.70710678) < 1e-5);
    ck_assert(fabs(v[1] - 0.70710678) < 1e-5);
    ck_assert(v[2] == 0.0f && v[3] == 0.0f);
    /* GloVe style (no header), different content: another identity */
    write_file(p2, "wing 1 0 0 0\nflow 0 1 0 0\nshock 0 0 1 1\n");
    c = rcp_model_new(&o, err, sizeof err);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_ne(rcp_model_identity(a, RCP_EMBED_DENSE),
                     rcp_model_identity(c, RCP_EMBED_DENSE));
    rcp_model_free(a);
    rcp_model_free(b);
    rcp_model_free(c);
    remove(p1);
    remove(p2);
}
END_TEST

START_TEST(static_word_vectors_reject_a_malformed_file_with_its_line)
{
    const char *p = "test_model_vec3.txt";
    rcp_model_opts o;
    char err[128];
    write_file(p, "wing 1 0 0\nflow 0 1\n");
    rcp_model_opts_init(&o);
    o.vectors_path = p;
    ck_assert_ptr_null(rcp_model_new(&o, err, sizeof err));
    ck_assert_msg(strstr(err, "line 2") != NULL, "%s", err);
    write_file(p, "wing 1 zero 0\n");
    ck_assert_ptr_null(rcp_model_new(&o, err, sizeof err));
    ck_assert_msg(strstr(err, "line 1") != NULL, "%s", err);
    o.vectors_path = "/nonexistent/vectors.txt";
    ck_assert_ptr_null(rcp_model_new(&o, err, sizeof err));
    remove(p);
}
END_TEST

/* MARK: - BM25 index */

/* search()'s mode for plain BM25: sparse without its RM3 second pass. */
#define MODE_BM25 (RCP_MODE_HYBRID + 1)

/* Every scorer search() can ask for. */
static const int all_modes[4] = { RCP_MODE_DENSE, RCP_MODE_SPARSE,
                                  RCP_MODE_HYBRID, MODE_BM25 };

static size_t search(const rcp_model *m, const char *q, int mode,
                     rcp_model_hit *hits, size_t k)
{
    rcp_model_query qq;
    size_t n;
    rcp_model_query_init(&qq);
    qq.text = q;
    qq.len = strlen(q);
    qq.k = k;
    qq.mode = mode == MODE_BM25 ? RCP_MODE_SPARSE : mode;
    qq.no_feedback = mode == MODE_BM25;
    ck_assert_int_eq(rcp_model_search(m, &qq, hits, &n), 0);
    return n;
}

static const char *hit_id(const rcp_model *m, const rcp_model_hit *h)
{
    static char b[64];
    rcp_model_docview v;
    ck_assert_int_eq(rcp_model_doc(m, h->doc, &v), 0);
    memcpy(b, v.id, v.idlen);
    b[v.idlen] = 0;
    return b;
}

/* The index keys each word by the term rcp_tokenize gives it (the
** lexicon remembers terms; "study" keeps its own term, see the
** tokenizer), so every word of a document, searched alone, finds it --
** a stopword too (issue 12: a query of stopwords only is BM25 over
** them). */
START_TEST(every_word_of_a_document_finds_it_by_sparse_search)
{
    size_t nt = sizeof lex_texts / sizeof *lex_texts, b, i, j, k, n;
    rcp_model_opts o;
    for (b = 0; b < 2; b++) {
        char err[128], id[16], q[256];
        rcp_model *m;
        rcp_model_opts_init(&o);
        if (b)
            o.lexicon_bytes = 0;
        m = rcp_model_new(&o, err, sizeof err);
        ck_assert_ptr_nonnull(m);
        for (i = 0; i < nt; i++) {
            snprintf(id, sizeof id, "%u", (unsigned)i);
            add(m, id, lex_texts[i]);
        }
        for (i = 0; i < nt; i++) {
            rcp_tokens t;
            rcp_tokens_init(&t);
            ck_assert_int_eq(rcp_tokenize(&t, lex_texts[i],
                                          strlen(lex_texts[i]),
                                          RCP_TOK_FOLD | RCP_TOK_STEM), 0);
            snprintf(id, sizeof id, "%u", (unsigned)i);
            for (j = 0; j < t.n; j++) {
                rcp_model_hit h[16];
                size_t len = t.v[j].end - t.v[j].start;
                memcpy(q, lex_texts[i] + t.v[j].start, len);
                q[len] = 0;
                n = search(m, q, RCP_MODE_SPARSE, h, 16);
                for (k = 0; k < n && strcmp(hit_id(m, &h[k]), id); k++)
                    ;
                ck_assert_msg(k < n, "%s misses document %s", q, id);
            }
            rcp_tokens_free(&t);
        }
        rcp_model_free(m);
    }
}
END_TEST

/* no_dense_index (make tiny): no vector is stored, sparse search ranks
** and scores exactly as with the dense index (both tokenizer paths, the
** lexicon's and the plain one), the modes that need vectors are refused,
** and embed is unchanged. */
START_TEST(without_a_dense_index_sparse_search_is_unchanged)
{
    static const unsigned toks[] = { RCP_TOK_DEFAULT, RCP_TOK_FOLD };
    size_t nt = sizeof lex_texts / sizeof *lex_texts, i, t, n[2];
    for (t = 0; t < 2; t++) {
        rcp_model *m[2];
        rcp_model_hit h[2][8];
        rcp_model_query q;
        rcp_model_docview v;
        float e[2][384];
        char err[128], id[32];
        size_t b;
        for (b = 0; b < 2; b++) {
            rcp_model_opts o;
            rcp_model_opts_init(&o);
            o.tok_flags = toks[t];
            o.no_dense_index = (int)b;
            m[b] = rcp_model_new(&o, err, sizeof err);
            ck_assert_msg(m[b] != NULL, "%s", err);
            ck_assert_int_eq(rcp_model_has_dense_index(m[b]), !b);
            /* the built-in embedder, or none: sparse by default */
            ck_assert_int_eq(rcp_model_default_mode(m[b]), RCP_MODE_SPARSE);
            for (i = 0; i < nt; i++) {
                snprintf(id, sizeof id, "t%u", (unsigned)i);
                add(m[b], id, lex_texts[i]);
            }
            n[b] = search(m[b], "flow heat study", RCP_MODE_SPARSE, h[b], 8);
            embed(m[b], lex_texts[0], e[b]);
        }
        ck_assert_uint_eq(n[0], n[1]);
        ck_assert_uint_gt(n[0], 2);
        for (i = 0; i < n[0]; i++) {
            ck_assert_uint_eq(h[0][i].doc, h[1][i].doc);
            ck_assert(h[0][i].score == h[1][i].score);
        }
        ck_assert(!memcmp(e[0], e[1], sizeof e[0]));
        ck_assert_int_eq(rcp_model_doc(m[1], 0, &v), 0);
        ck_assert_ptr_null(v.vector);
        rcp_model_query_init(&q);
        q.text = "flow";
        q.len = 4;
        q.k = 3;
        for (i = 0; i < 3; i++) {       /* dense, hybrid, sparse + MMR */
            q.mode = i == 0 ? RCP_MODE_DENSE : i == 1 ? RCP_MODE_HYBRID
                                             : RCP_MODE_SPARSE;
            q.mmr_lambda = i == 2 ? 0.5 : -1;
            ck_assert_int_eq(rcp_model_search(m[1], &q, h[1], &n[1]), -1);
            ck_assert_int_eq(rcp_model_search(m[0], &q, h[0], &n[0]), 0);
        }
        rcp_model_free(m[0]);
        rcp_model_free(m[1]);
    }
    {   /* documents given back their docnos move without a vector row */
        rcp_model_opts o;
        rcp_model *nd;
        rcp_model_hit h[3];
        char err[128], id[16];
        rcp_model_opts_init(&o);
        o.no_dense_index = 1;
        o.snapshot_keep = 2;
        ck_assert_ptr_nonnull(nd = rcp_model_new(&o, err, sizeof err));
        for (i = 0; i < 3000; i++) {
            snprintf(id, sizeof id, "%u", (unsigned)i);
            add_quick(nd, id, "common words here and a flow");
        }
        check(nd);
        for (i = 0; i < 2999; i++) {
            snprintf(id, sizeof id, "%u", (unsigned)i);
            ck_assert_int_eq(del_quick(nd, id), 1);
        }
        check(nd);
        ck_assert_uint_eq(search(nd, "flow", RCP_MODE_SPARSE, h, 3), 1);
        ck_assert_str_eq(hit_id(nd, &h[0]), "2999");
        rcp_model_free(nd);
    }
}
END_TEST

START_TEST(bm25_matches_hand_computed_scores)
{
    /* N = 3, avgdl = 7/3; "apple": df 2, idf = ln(1 + 1.5/2.5) = ln 1.6
    ** d2 (tf 2, dl 3): ln1.6 * 2*2.2 / (2 + 1.2*(0.25 + 0.75*3/(7/3)))
    ** d1 (tf 1, dl 2): ln1.6 * 2.2 / (1 + 1.2*(0.25 + 0.75*2/(7/3))) */
    rcp_model *m = new_model(16);
    rcp_model_hit h[5];
    double idf = log(1.6);
    double s2 = idf * 4.4 / (2 + 1.2 * (0.25 + 0.75 * 3 / (7.0 / 3)));
    double s1 = idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / (7.0 / 3)));
    add(m, "d1", "apple banana");
    add(m, "d2", "apple apple cherry");
    add(m, "d3", "cherry date");
    ck_assert_uint_eq(search(m, "apple", MODE_BM25, h, 5), 2);
    ck_assert_str_eq(hit_id(m, &h[0]), "d2");
    ck_assert_str_eq(hit_id(m, &h[1]), "d1");
    ck_assert(fabs(h[0].score - s2) < 1e-9);
    ck_assert(fabs(h[1].score - s1) < 1e-9);
    ck_assert(h[0].has & RCP_HIT_SPARSE);
    rcp_model_free(m);
}
END_TEST

START_TEST(bm25_after_delete_and_upsert_equals_a_fresh_index)
{
    /* invariant 5: statistics count live documents only */
    rcp_model *m = new_model(16), *f = new_model(16);
    rcp_model_hit a[5], b[5];
    size_t na, nb, i;
    add(m, "x", "apple pie");
    add(m, "y", "apple apple tart");
    add(m, "z", "banana split");
    add(m, "y", "cherry tart");              /* upsert */
    ck_assert_int_eq(del(m, "z"), 1);
    add(f, "x", "apple pie");
    add(f, "y", "cherry tart");
    na = search(m, "apple tart", RCP_MODE_SPARSE, a, 5);
    nb = search(f, "apple tart", RCP_MODE_SPARSE, b, 5);
    ck_assert_uint_eq(na, nb);
    for (i = 0; i < na; i++) {
        char ida[64];
        ck_assert(fabs(a[i].score - b[i].score) < 1e-12);
        strcpy(ida, hit_id(m, &a[i]));
        ck_assert_str_eq(ida, hit_id(f, &b[i]));
    }
    ck_assert_uint_eq(rcp_model_count(m), 2);
    rcp_model_free(m);
    rcp_model_free(f);
}
END_TEST

/* issue 12: a query made only of stopwords retrieves by its words: BM25
** over the stopwords' own postings, ranked by it (the phrase's document,
** holding each word most often, first); documents with none of them are
** not hits.  Every tokenizer path agrees (the lexicon's, the lexicon
** emptied before every document, the plain one, and the lexicon's
** without a dense index: make tiny), score for score. */
static const char *const stop_texts[][2] = {
    { "hamlet", "To be, or not to be, that is the question." },
    { "band", "The Who played a concert in London." },
    { "rain", "It was raining and it was cold." },
    { "ml", "Machine learning models rank documents." },
    { "song", "Let it be, let it be, whisper words of wisdom." },
};

static rcp_model *stop_model(unsigned tok, size_t lexicon_bytes,
                             int no_dense)
{
    rcp_model_opts o;
    rcp_model *m;
    char err[128];
    size_t i;
    rcp_model_opts_init(&o);
    o.dim = 16;
    o.tok_flags = tok;
    o.lexicon_bytes = lexicon_bytes;
    o.no_dense_index = no_dense;
    ck_assert_ptr_nonnull(m = rcp_model_new(&o, err, sizeof err));
    for (i = 0; i < sizeof stop_texts / sizeof *stop_texts; i++)
        add(m, stop_texts[i][0], stop_texts[i][1]);
    return m;
}

START_TEST(a_query_of_stopwords_only_retrieves_by_its_words)
{
    static const unsigned toks[] = { RCP_TOK_DEFAULT, RCP_TOK_DEFAULT,
                                     RCP_TOK_FOLD | RCP_TOK_STOP,
                                     RCP_TOK_DEFAULT };
    rcp_model *m[4];
    rcp_model_hit h[4][8];
    size_t n[4], i, j;
    for (i = 0; i < 4; i++)
        m[i] = stop_model(toks[i], i == 1 ? 0 : 64u << 20, i == 3);
    ck_assert_uint_eq(n[0] = search(m[0], "to be or not to be",
                                    RCP_MODE_SPARSE, h[0], 8), 2);
    ck_assert_str_eq(hit_id(m[0], &h[0][0]), "hamlet");
    ck_assert_str_eq(hit_id(m[0], &h[0][1]), "song");
    ck_assert(h[0][0].score > 2 * h[0][1].score);
    ck_assert_uint_eq(search(m[0], "The Who", RCP_MODE_SPARSE, h[0], 8), 2);
    ck_assert_str_eq(hit_id(m[0], &h[0][0]), "band");   /* both words */
    ck_assert_str_eq(hit_id(m[0], &h[0][1]), "hamlet"); /* "the" alone */
    ck_assert_uint_eq(search(m[0], "it", RCP_MODE_SPARSE, h[0], 8), 2);
    ck_assert_str_eq(hit_id(m[0], &h[0][0]), "rain");   /* tf 2, shorter */
    ck_assert_str_eq(hit_id(m[0], &h[0][1]), "song");
    ck_assert_uint_eq(search(m[0], "it", RCP_MODE_HYBRID, h[0], 8), 5);
    ck_assert_str_eq(hit_id(m[0], &h[0][0]), "rain");
    ck_assert_uint_eq(search(m[0], "of an", RCP_MODE_SPARSE, h[0], 8), 1);
    ck_assert_str_eq(hit_id(m[0], &h[0][0]), "song");
    for (i = 0; i < 4; i++) {
        n[i] = search(m[i], "to be or not to be", RCP_MODE_SPARSE, h[i], 8);
        ck_assert_uint_eq(n[i], 2);
        for (j = 0; j < n[i]; j++) {
            ck_assert_uint_eq(h[i][j].doc, h[0][j].doc);
            ck_assert(h[i][j].score == h[0][j].score);
        }
    }
    for (i = 0; i < 4; i++)
        rcp_model_free(m[i]);
}
END_TEST

/* issue 12: the stopwords' postings change no other query's BM25: a
** document's length and the collection's statistics count content words
** only, and a query with a content word leaves its stopwords out -- so
** every score equals the one over the same texts with the stopwords cut
** out, bit for bit. */
START_TEST(stopword_postings_leave_every_other_score_unchanged)
{
    static const char *const with[] = {
        "the boundary layer of a flat plate is thin",
        "a shock wave and the boundary layer",
        "it was the heat of the flow that did it",
    };
    static const char *const without[] = {
        "boundary layer flat plate thin",
        "shock wave boundary layer",
        "heat flow",
    };
    static const char *const qs[] = {
        "boundary layer", "the boundary of the layer", "heat", "to the flow",
    };
    rcp_model *a = new_model(16), *b = new_model(16);
    rcp_model_hit ha[4], hb[4];
    size_t i, j, na, nb;
    char id[8];
    for (i = 0; i < 3; i++) {
        snprintf(id, sizeof id, "d%u", (unsigned)i);
        add(a, id, with[i]);
        add(b, id, without[i]);
    }
    for (i = 0; i < sizeof qs / sizeof *qs; i++) {
        na = search(a, qs[i], RCP_MODE_SPARSE, ha, 4);
        nb = search(b, qs[i], RCP_MODE_SPARSE, hb, 4);
        ck_assert_uint_gt(na, 0);
        ck_assert_uint_eq(na, nb);
        for (j = 0; j < na; j++) {
            ck_assert_uint_eq(ha[j].doc, hb[j].doc);
            ck_assert_msg(ha[j].score == hb[j].score, "%s: %.17g vs %.17g",
                          qs[i], ha[j].score, hb[j].score);
        }
    }
    rcp_model_free(a);
    rcp_model_free(b);
}
END_TEST

static size_t search_at(const rcp_model *m, const char *q, int mode,
                        uint64_t v, rcp_model_hit *hits, size_t k, int *rc);

/* issue 12, with §7.10/§7.11 and §7.7.1: a document of stopwords only is
** found by them, upserted to other stopwords, deleted -- each version
** answering with what it held, a pinned one included. */
START_TEST(a_stopword_only_document_upserts_and_deletes)
{
    rcp_model_opts o;
    rcp_model *m;
    rcp_model_hit h[4];
    rcp_model_docview d;
    char err[128];
    uint64_t v1, v2;
    int rc;
    rcp_model_opts_init(&o);
    o.dim = 16;
    o.snapshot_keep = 4;
    ck_assert_ptr_nonnull(m = rcp_model_new(&o, err, sizeof err));
    add(m, "w", "wing flutter");
    add(m, "s", "to be or not to be");
    v1 = rcp_model_version(m);
    ck_assert_uint_eq(search(m, "not to be", RCP_MODE_SPARSE, h, 4), 1);
    ck_assert_str_eq(hit_id(m, &h[0]), "s");
    add(m, "s", "what it is");                  /* upsert */
    v2 = rcp_model_version(m);
    ck_assert_uint_eq(search(m, "not to be", RCP_MODE_SPARSE, h, 4), 0);
    ck_assert_uint_eq(search(m, "it is", RCP_MODE_SPARSE, h, 4), 1);
    ck_assert_str_eq(hit_id(m, &h[0]), "s");
    ck_assert_int_eq(del(m, "s"), 1);
    ck_assert_uint_eq(search(m, "it is", RCP_MODE_SPARSE, h, 4), 0);
    ck_assert_uint_eq(search(m, "wing", RCP_MODE_SPARSE, h, 4), 1);
    ck_assert_uint_eq(search_at(m, "not to be", RCP_MODE_SPARSE, v1, h, 4,
                                &rc), 1);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rcp_model_doc_at(m, h[0].doc, v1, &d), 0);
    ck_assert(d.idlen == 1 && d.id[0] == 's' && d.textlen == 18);
    ck_assert_uint_eq(search_at(m, "it is", RCP_MODE_SPARSE, v2, h, 4, &rc),
                      1);
    ck_assert_uint_eq(search_at(m, "it is", RCP_MODE_SPARSE, v1, h, 4, &rc),
                      0);
    ck_assert_int_eq(roll(m, v1), 0);           /* the store's rollback */
    ck_assert_uint_eq(search(m, "not to be", RCP_MODE_SPARSE, h, 4), 1);
    ck_assert_str_eq(hit_id(m, &h[0]), "s");
    rcp_model_free(m);
}
END_TEST

START_TEST(add_with_an_existing_id_replaces_never_duplicates)
{
    /* §7.10: re-adding an id MUST replace, never duplicate */
    rcp_model *m = new_model(16);
    rcp_model_hit h[5];
    rcp_model_docview v;
    uint64_t ver;
    add(m, "a", "old text about wings");
    add(m, "a", "new text about shocks");
    ck_assert_uint_eq(rcp_model_count(m), 1);
    ck_assert_uint_eq(search(m, "wings", RCP_MODE_SPARSE, h, 5), 0);
    ck_assert_uint_eq(search(m, "shocks", RCP_MODE_SPARSE, h, 5), 1);
    ck_assert_int_eq(rcp_model_doc(m, h[0].doc, &v), 0);
    ck_assert_uint_eq(v.textlen, strlen("new text about shocks"));
    /* an identical repeat is observably one add: not even the version */
    ver = rcp_model_version(m);
    add(m, "a", "new text about shocks");
    ck_assert(rcp_model_version(m) == ver);
    ck_assert_int_ge(rcp_model_find(m, "a", 1), 0);
    rcp_model_free(m);
}
END_TEST

START_TEST(delete_is_idempotent_and_counts_only_removals)
{
    /* §7.11: an absent id is not an error; a repeat deletes 0 */
    rcp_model *m = new_model(16);
    rcp_model_hit h[5];
    add(m, "a", "wing");
    ck_assert_int_eq(del(m, "a"), 1);
    ck_assert_int_eq(del(m, "a"), 0);
    ck_assert_int_eq(del(m, "never"), 0);
    ck_assert_uint_eq(rcp_model_count(m), 0);
    ck_assert_uint_eq(search(m, "wing", RCP_MODE_SPARSE, h, 5), 0);
    ck_assert_uint_eq(search(m, "wing", RCP_MODE_DENSE, h, 5), 0);
    ck_assert_int_eq(rcp_model_find(m, "a", 1), -1);
    rcp_model_free(m);
}
END_TEST

START_TEST(many_deletes_sweep_postings_and_keep_results)
{
    rcp_model *m = new_model(8);
    rcp_model_hit h[3];
    char id[16];
    int i;
    for (i = 0; i < 3000; i++) {
        snprintf(id, sizeof id, "%d", i);
        add_quick(m, id, "common words here and a flow");
    }
    check(m);
    for (i = 0; i < 2999; i++) {
        snprintf(id, sizeof id, "%d", i);
        ck_assert_int_eq(del_quick(m, id), 1);
    }
    check(m);
    ck_assert_uint_eq(search(m, "flow", RCP_MODE_SPARSE, h, 3), 1);
    ck_assert_str_eq(hit_id(m, &h[0]), "2999");
    rcp_model_free(m);
}
END_TEST

START_TEST(equal_scores_rank_by_smaller_id)
{
    /* invariant 6 / §16.3: ties never depend on insertion order */
    rcp_model *m = new_model(16);
    rcp_model_hit h[3];
    add(m, "b", "same text");
    add(m, "a", "same text");
    add(m, "c", "same text");
    ck_assert_uint_eq(search(m, "text", RCP_MODE_SPARSE, h, 3), 3);
    ck_assert_str_eq(hit_id(m, &h[0]), "a");
    ck_assert_str_eq(hit_id(m, &h[1]), "b");
    ck_assert_str_eq(hit_id(m, &h[2]), "c");
    ck_assert_uint_eq(search(m, "text", RCP_MODE_DENSE, h, 3), 3);
    ck_assert_str_eq(hit_id(m, &h[0]), "a");
    rcp_model_free(m);
}
END_TEST

START_TEST(dense_ties_wider_than_the_scan_keep_the_id_order)
{
    /* 200 identical texts: every cosine ties, so the SIMD scan's row
    ** order must not decide; the smallest ids win */
    rcp_model *m = new_model(16);
    rcp_model_hit h[5];
    char id[16];
    int i;
    for (i = 199; i >= 0; i--) {
        snprintf(id, sizeof id, "d%03d", i);
        add(m, id, "identical text about flutter");
    }
    ck_assert_uint_eq(search(m, "flutter", RCP_MODE_DENSE, h, 5), 5);
    for (i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "d%03d", i);
        ck_assert_str_eq(hit_id(m, &h[i]), id);
    }
    rcp_model_free(m);
}
END_TEST

/* A deterministic synthetic collection for the 8-bit scan's tests:
** words of two or three syllables over a skewed vocabulary (xorshift). */
static uint64_t synth_state;

static void synth_text(char *out, size_t cap, int nwords)
{
    static const char cons[] = "bdfgklmnprstvz", vow[] = "aeiou";
    size_t n = 0;
    int w, s;
    for (w = 0; w < nwords && n + 8 < cap; w++) {
        uint64_t r;
        synth_state ^= synth_state << 13;
        synth_state ^= synth_state >> 7;
        synth_state ^= synth_state << 17;
        r = synth_state % 2000;
        r = r * r / 2000;                       /* skewed towards 0 */
        if (w)
            out[n++] = ' ';
        for (s = 0; s < 2 + (int)(r % 2); s++) {
            out[n++] = cons[(r >> (s * 3)) % 14];
            out[n++] = vow[(r / 7 + (uint64_t)s) % 5];
        }
    }
    out[n] = 0;
}

/* Upsert document <prefix><i> with a new synthetic text of nwords. */
/* The synthetic corpora's one declared field: the parity of a
** document's number (meta {"odd":0} or {"odd":1}), so a §8 filter can
** keep half the rows. */
static const rcp_field synth_fields[] = { { "odd", 3, RCP_FIELD_INT } };

static void synth_add(rcp_model *m, const char *prefix, int i, int nwords)
{
    char id[16], text[512], meta[16];
    snprintf(id, sizeof id, "%s%d", prefix, i);
    snprintf(meta, sizeof meta, "{\"odd\":%d}", i % 2);
    synth_text(text, sizeof text, nwords);
    /* not add(): its invariant check after every add is O(corpus), and
    ** these corpora are large -- the callers check once at the end */
    ck_assert_int_eq(rcp_model_add(m, id, strlen(id), text, strlen(text),
                                   meta, strlen(meta)), 0);
}

static rcp_model *synth_model(int ndocs)
{
    rcp_model_opts o;
    char err[128];
    rcp_model *m;
    int i;
    rcp_model_opts_init(&o);
    o.fields = synth_fields;
    o.nfields = 1;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    synth_state = 88172645463325252u;
    for (i = 0; i < ndocs; i++)
        synth_add(m, "d", i, 20 + i % 20);
    check(m);
    return m;
}

/* 1 when the synthetic document docno's number is even. */
static int id_is_even(const rcp_model *m, uint32_t docno)
{
    rcp_model_docview v;
    ck_assert_int_eq(rcp_model_doc(m, docno, &v), 0);
    return (v.id[v.idlen - 1] - '0') % 2 == 0;
}

/* Dense top 10 of nq synthetic queries by the 8-bit scan and by the
** reference (q.exact): the share of the reference's hits the scan found.
** Every hit both found has the same (exact) score, every hit of the scan
** passes the filter, and the scan's list is in the engine's order. */
static double q8_recall(const rcp_model *m, int nq, size_t depth,
                        const rcp_model_filter *even)
{
    rcp_model_query q;
    rcp_model_hit fast[10], ref[10];
    size_t nf, nr, i, j, found = 0, total = 0;
    char text[128];
    int x;
    for (x = 0; x < nq; x++) {
        synth_text(text, sizeof text, 2 + x % 4);
        rcp_model_query_init(&q);
        q.text = text;
        q.len = strlen(text);
        q.k = 10;
        q.candidate_k = depth;
        q.mode = RCP_MODE_DENSE;
        q.filter = even;
        ck_assert_int_eq(rcp_model_search(m, &q, fast, &nf), 0);
        q.exact = 1;
        ck_assert_int_eq(rcp_model_search(m, &q, ref, &nr), 0);
        ck_assert_uint_eq(nf, nr);
        for (i = 0; i < nf; i++) {
            ck_assert(!even || id_is_even(m, fast[i].doc));
            ck_assert(i == 0 || fast[i].score <= fast[i - 1].score);
            for (j = 0; j < nr; j++)
                if (ref[j].doc == fast[i].doc) {
                    ck_assert(ref[j].score == fast[i].score);
                    found++;
                }
        }
        total += nr;
    }
    return total ? (double)found / (double)total : 1.0;
}

static void assert_q8_recall(const rcp_model *m, size_t depth,
                             const rcp_model_filter *even, const char *what)
{
    double r = q8_recall(m, 40, depth, even);
    ck_assert_msg(r >= 0.99, "recall@10 %.3f (%s)", r, what);
}

/* issue 17: dense recall scans the 8-bit copy and re-scores the best
** candidates exactly; against the float reference it finds >= 99% of the
** top 10, at the default depth and at depth k (the fewest candidates),
** with and without a §8 filter (odd eq 0: half the rows, through the
** bitmap the scan reads). */
START_TEST(dense_recall_by_the_8bit_scan_finds_99_percent_of_the_exact)
{
    rcp_model *m = synth_model(20000);
    rcp_model_value zero;
    rcp_model_filter even;
    memset(&zero, 0, sizeof zero);
    memset(&even, 0, sizeof even);
    even.kind = RCP_FILTER_LEAF;
    even.field = 0;
    even.op = RCP_OP_EQ;
    even.values = &zero;
    even.nvalues = 1;
    assert_q8_recall(m, 0, NULL, "default depth");
    assert_q8_recall(m, 10, NULL, "depth 10");
    assert_q8_recall(m, 10, &even, "depth 10, filtered");
    rcp_model_free(m);
}
END_TEST

/* The 8-bit copy follows the float rows through upserts, deletes, the
** compaction they trigger (docnos renumbered) and a rollback: a stale
** row would lose its document from the scan's candidates. */
START_TEST(the_8bit_copy_follows_upserts_deletes_compaction_and_rollback)
{
    rcp_model *m = synth_model(3000);
    rcp_model_stats st;
    char id[16];
    uint64_t v;
    int i;
    for (i = 0; i < 3000; i += 2) {             /* half gone: compaction */
        snprintf(id, sizeof id, "d%d", i);
        ck_assert_int_eq(rcp_model_delete(m, id, strlen(id)), 1);
    }
    for (i = 1; i < 3000; i += 6)               /* upserts: new rows */
        synth_add(m, "d", i, 25);
    check(m);
    rcp_model_stat(m, &st);
    ck_assert_uint_lt(st.slots, 3000 + 500);    /* it did compact */
    assert_q8_recall(m, 10, NULL, "after compaction");
    v = rcp_model_version(m);
    for (i = 0; i < 200; i++)
        synth_add(m, "n", i, 25);
    ck_assert_int_eq(rcp_model_rollback(m, v), 0);
    check(m);
    assert_q8_recall(m, 10, NULL, "after rollback");
    rcp_model_free(m);
}
END_TEST

/* More identical rows than the 8-bit scan keeps candidates (depth 5:
** RCP_VEC_Q8_CAND(5) = 104): the scan's row order must not decide among
** them; the smallest ids win, as in the reference. */
START_TEST(dense_ties_wider_than_the_8bit_candidates_keep_the_id_order)
{
    rcp_model *m = new_model(16);
    rcp_model_query q;
    rcp_model_hit h[5];
    char id[16];
    size_t n;
    int i;
    for (i = 299; i >= 0; i--) {
        snprintf(id, sizeof id, "d%03d", i);
        add(m, id, "identical text about flutter");
    }
    rcp_model_query_init(&q);
    q.text = "flutter";
    q.len = 7;
    q.k = q.candidate_k = 5;
    q.mode = RCP_MODE_DENSE;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_uint_eq(n, 5);
    for (i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "d%03d", i);
        ck_assert_str_eq(hit_id(m, &h[i]), id);
    }
    rcp_model_free(m);
}
END_TEST

START_TEST(every_mode_answers_an_empty_index_and_a_query_without_matches)
{
    rcp_model *m = new_model(16);
    rcp_model_query q;
    rcp_model_hit h[4];
    size_t n;
    int mode, rr;
    for (rr = RCP_RERANK_NONE; rr <= RCP_RERANK_COLBERT; rr++)
        for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_HYBRID; mode++) {
            rcp_model_query_init(&q);
            q.text = "zzz qqq";
            q.len = 7;
            q.k = 4;
            q.mode = mode;
            q.rerank = rr;
            q.mmr_lambda = 0.5;
            ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
            ck_assert_uint_eq(n, 0);
        }
    add(m, "a", "wing flow");
    for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_HYBRID; mode++) {
        ck_assert_int_eq(search(m, "zzz", mode, h, 4) <= 1, 1);
        ck_assert_int_eq(search(m, "", mode, h, 4) <= 1, 1);
    }
    rcp_model_free(m);
}
END_TEST

START_TEST(dense_recall_finds_misspelt_queries_that_bm25_misses)
{
    rcp_model *m = new_model(0);
    rcp_model_hit h[3];
    add(m, "1", "aerodynamic heating of slender wings");
    add(m, "2", "buckling of cylindrical shells under torsion");
    add(m, "3", "noise from jet engines at take-off");
    ck_assert_uint_eq(search(m, "aerodynamc heatng", RCP_MODE_SPARSE, h, 3),
                      0);
    ck_assert_uint_ge(search(m, "aerodynamc heatng", RCP_MODE_DENSE, h, 3),
                      1);
    ck_assert_str_eq(hit_id(m, &h[0]), "1");
    ck_assert_uint_ge(search(m, "aerodynamc heatng", RCP_MODE_HYBRID, h, 3),
                      1);
    ck_assert_str_eq(hit_id(m, &h[0]), "1");
    rcp_model_free(m);
}
END_TEST

static int sparse_has(const rcp_model *m, const rcp_model_hit *h, size_t n,
                      const char *id)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!strcmp(hit_id(m, &h[i]), id))
            return (h[i].has & RCP_HIT_SPARSE) != 0;
    return 0;
}

/* Hybrid's default fusion is RRF with the weaker dense leg weighted
** RCP_MODEL_DEFAULT_W_DENSE (an equal-weight fusion falls below its
** lexical leg, make eval): a document first in both lists scores
** (w + 1) / (60 + 1), and equal weights, asked for, give 2 / 61. */
START_TEST(hybrid_default_fusion_weights_the_dense_leg_down)
{
    rcp_model *m = new_model(0);
    rcp_model_query q;
    rcp_model_hit h[2];
    size_t n;
    add(m, "1", "shock wave reflection");
    rcp_model_query_init(&q);
    q.text = "shock";
    q.len = 5;
    q.k = 2;
    ck_assert(q.mode == RCP_MODE_HYBRID && q.fusion == RCP_FUSE_RRF);
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_double_eq_tol(h[0].score,
                            (RCP_MODEL_DEFAULT_W_DENSE + 1) / 61.0, 1e-12);
    q.w_dense = 1;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_double_eq_tol(h[0].score, 2 / 61.0, 1e-12);
    ck_assert(RCP_MODEL_DEFAULT_W_DENSE > 0 && RCP_MODEL_DEFAULT_W_DENSE < 1);
    rcp_model_free(m);
}
END_TEST

START_TEST(hybrid_feedback_expands_the_lexical_query_from_the_top_hits)
{
    /* RM3: "tube" co-occurs with "shock" in the top document, so the
    ** expanded lexical pass finds document 2, which lacks "shock" */
    rcp_model_opts o;
    rcp_model *fb, *plain;
    rcp_model_hit h[8];
    size_t n;
    char err[64];
    static const char *const docs[][2] = {
        {"1", "shock tube experiments measure shock speed in a tube"},
        {"2", "tube flow diagnostics with schlieren photography"},
        {"3", "cantilever plate vibration"},
        {"4", "ice accretion on rotor blades"},
        {"5", "wind tunnel wall interference"}
    };
    int i;
    rcp_model_opts_init(&o);
    fb = rcp_model_new(&o, err, sizeof err);
    o.prf_docs = 0;
    plain = rcp_model_new(&o, err, sizeof err);
    for (i = 0; i < 5; i++) {
        add(fb, docs[i][0], docs[i][1]);
        add(plain, docs[i][0], docs[i][1]);
    }
    n = search(fb, "shock", RCP_MODE_HYBRID, h, 8);
    ck_assert(sparse_has(fb, h, n, "2"));
    ck_assert_str_eq(hit_id(fb, &h[0]), "1");
    n = search(plain, "shock", RCP_MODE_HYBRID, h, 8);
    ck_assert(!sparse_has(plain, h, n, "2"));
    /* mode "sparse" is the same lexical leg alone (BM25, then RM3), and
    ** plain BM25 without its second pass */
    n = search(fb, "shock", RCP_MODE_SPARSE, h, 8);
    ck_assert(sparse_has(fb, h, n, "2"));
    ck_assert_str_eq(hit_id(fb, &h[0]), "1");
    n = search(fb, "shock", MODE_BM25, h, 8);
    ck_assert_uint_eq(n, 1);
    n = search(plain, "shock", RCP_MODE_SPARSE, h, 8);
    ck_assert_uint_eq(n, 1);
    rcp_model_free(fb);
    rcp_model_free(plain);
}
END_TEST

/* The lexicon's fast path (documents re-read for feedback) gives a
** word's stem also when it is as long as the word ("study" -> "studi"),
** so feedback finds that term in the index and expands with it. */
START_TEST(feedback_expands_with_a_stem_as_long_as_its_word)
{
    rcp_model *m = new_model(0);
    rcp_model_hit h[8];
    size_t n;
    add(m, "1", "shock study of a shock study");
    add(m, "2", "study with schlieren photography");
    add(m, "3", "cantilever plate vibration");
    add(m, "4", "ice accretion on rotor blades");
    add(m, "5", "wind tunnel wall interference");
    n = search(m, "shock", RCP_MODE_HYBRID, h, 8);
    ck_assert_str_eq(hit_id(m, &h[0]), "1");
    ck_assert(sparse_has(m, h, n, "2"));
    rcp_model_free(m);
}
END_TEST

typedef struct ck_log {
    double last;
    int    calls, partial_seen, stop_at_rerank;
    char   stages[256];
} ck_log;

static int checkpoint_cb(void *ud, double progress, const char *stage,
                         const rcp_model_hit *partial, size_t n)
{
    ck_log *l = ud;
    ck_assert(progress >= l->last && progress < 1.0);
    l->last = progress;
    l->calls++;
    if (partial && n)
        l->partial_seen = 1;
    if (strlen(l->stages) + strlen(stage) + 2 < sizeof l->stages) {
        strcat(l->stages, stage);
        strcat(l->stages, " ");
    }
    return l->stop_at_rerank && !strcmp(stage, "rerank") ? -32006 : 0;
}

START_TEST(search_checkpoint_reports_rising_progress_and_can_stop_it)
{
    rcp_model *m = new_model(16);
    rcp_model_query q;
    rcp_model_hit h[3];
    ck_log l;
    size_t n = 99;
    add(m, "a", "wing flow");
    add(m, "b", "flow over a wing");
    memset(&l, 0, sizeof l);
    rcp_model_query_init(&q);
    q.text = "wing";
    q.len = 4;
    q.k = 2;
    q.rerank = RCP_RERANK_CROSS;
    q.mmr_lambda = 0.5;
    q.checkpoint = checkpoint_cb;
    q.ud = &l;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(l.partial_seen);
    ck_assert_msg(strstr(l.stages, "recall") && strstr(l.stages, "rerank")
                  && strstr(l.stages, "diversify"), "%s", l.stages);
    memset(&l, 0, sizeof l);
    l.stop_at_rerank = 1;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), -32006);
    ck_assert_uint_eq(n, 0);
    rcp_model_free(m);
}
END_TEST

/* MARK: - snapshots (§7.7.1) */

static size_t search_at_rr(const rcp_model *m, const char *q, int mode,
                           uint64_t v, int rr, rcp_model_hit *hits, size_t k,
                           int *rc)
{
    rcp_model_query qq;
    size_t n = 0;
    rcp_model_query_init(&qq);
    qq.text = q;
    qq.len = strlen(q);
    qq.k = k;
    qq.mode = mode;
    qq.rerank = rr;
    qq.pinned = 1;
    qq.version = v;
    *rc = rcp_model_search(m, &qq, hits, &n);
    return n;
}

static size_t search_at(const rcp_model *m, const char *q, int mode,
                        uint64_t v, rcp_model_hit *hits, size_t k, int *rc)
{
    return search_at_rr(m, q, mode, v, RCP_RERANK_CROSS, hits, k, rc);
}

START_TEST(a_pinned_version_serves_the_results_it_served_then)
{
    rcp_model *m = new_model(32);
    rcp_model_hit then[8], now[8];
    size_t n1, n2, i;
    uint64_t v;
    int rc, mode;
    add(m, "a", "shock wave boundary layer interaction");
    add(m, "b", "boundary layer transition on a flat plate");
    add(m, "c", "wing flutter in transonic flow");
    v = rcp_model_version(m);
    for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_HYBRID; mode++) {
        n1 = search_at(m, "boundary layer", mode, v, then, 8, &rc);
        ck_assert_int_eq(rc, 0);
        /* the index changes: an upsert, a delete, new documents */
        if (mode == RCP_MODE_DENSE) {
            add(m, "b", "heat transfer to a cone");
            ck_assert_int_eq(del(m, "a"), 1);
            add(m, "d", "boundary layer suction boundary layer");
        }
        n2 = search_at(m, "boundary layer", mode, v, now, 8, &rc);
        ck_assert_int_eq(rc, 0);
        ck_assert_uint_eq(n1, n2);
        for (i = 0; i < n1; i++) {
            rcp_model_docview x;
            ck_assert_uint_eq(then[i].doc, now[i].doc);
            ck_assert(then[i].score == now[i].score);
            ck_assert(then[i].confidence == now[i].confidence);
            ck_assert_int_eq(rcp_model_doc_at(m, now[i].doc, v, &x), 0);
            ck_assert(x.idlen == 1 && x.id[0] != 'd');
        }
    }
    /* the live index has moved on */
    ck_assert_uint_eq(search(m, "boundary layer", RCP_MODE_SPARSE, now, 8),
                      1);
    ck_assert_str_eq(hit_id(m, &now[0]), "d");
    rcp_model_free(m);
}
END_TEST

/* Hits of a and b are the same documents (by id) with the same scores. */
static void same_hits(const rcp_model *a, const rcp_model *b, const char *q,
                      int mode)
{
    rcp_model_hit x[8], y[8];
    size_t nx = search(a, q, mode, x, 8), ny = search(b, q, mode, y, 8), i;
    char id[64];
    ck_assert_uint_eq(nx, ny);
    for (i = 0; i < nx; i++) {
        strcpy(id, hit_id(a, &x[i]));
        ck_assert_str_eq(id, hit_id(b, &y[i]));
        ck_assert_msg(x[i].score == y[i].score, "%s: %.17g != %.17g", q,
                      x[i].score, y[i].score);
        ck_assert(x[i].confidence == y[i].confidence);
    }
}

static void same_model(const rcp_model *a, const rcp_model *b)
{
    static const char *const ids[] = { "a", "b", "c", "d", "e", "f" };
    static const char *const qs[] = { "boundary layer", "heat transfer cone",
                                      "wing flutter", "suction" };
    rcp_model_docview x, y;
    size_t i;
    int mode;
    ck_assert_uint_eq(rcp_model_version(a), rcp_model_version(b));
    ck_assert_uint_eq(rcp_model_count(a), rcp_model_count(b));
    for (i = 0; i < 6; i++) {
        long da = rcp_model_find(a, ids[i], 1), db = rcp_model_find(b, ids[i], 1);
        ck_assert_msg((da < 0) == (db < 0), "%s", ids[i]);
        if (da < 0)
            continue;
        ck_assert_int_eq(rcp_model_doc(a, (uint32_t)da, &x), 0);
        ck_assert_int_eq(rcp_model_doc(b, (uint32_t)db, &y), 0);
        ck_assert(x.textlen == y.textlen && !memcmp(x.text, y.text, x.textlen));
    }
    for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_HYBRID; mode++)
        for (i = 0; i < 4; i++)
            same_hits(a, b, qs[i], mode);
}

/* store.c, issue 8 item 9: a write that did not reach the disk is undone
** in memory.  After roll(m, v), m serves what a model that
** never saw the undone changes serves, pinned versions before v too, and
** goes on from v as that model does. */
START_TEST(rollback_serves_exactly_what_the_model_served_at_that_version)
{
    rcp_model *m = new_model(32), *f = new_model(32), *g;
    rcp_model_hit h[8];
    rcp_model_docview x;
    rcp_model_opts o;
    char err[128];
    uint64_t v;
    int i, rc;
    for (i = 0; i < 2; i++) {
        rcp_model *x = i ? f : m;
        add(x, "a", "shock wave boundary layer interaction");
        add(x, "b", "boundary layer transition on a flat plate");
        add(x, "c", "wing flutter in transonic flow");
        ck_assert_int_eq(del(x, "c"), 1);
        add(x, "d", "heat transfer in a boundary layer");
    }
    v = rcp_model_version(m);
    add(m, "b", "heat transfer to a cone");         /* replaced */
    ck_assert_int_eq(del(m, "a"), 1);   /* deleted */
    add(m, "e", "boundary layer suction");          /* new */
    add(m, "c", "wing flutter again");              /* deleted before */
    add(m, "e", "suction on a cone");               /* new, replaced */
    ck_assert_int_eq(del(m, "d"), 1);
    ck_assert_int_eq(roll(m, v + 7), -1);     /* the future */
    ck_assert_int_eq(roll(m, v), 0);
    same_model(m, f);
    ck_assert(rcp_model_has_version(m, v) && rcp_model_has_version(m, v - 1));
    ck_assert(!rcp_model_has_version(m, v + 1));
    ck_assert_uint_eq(search_at(m, "wing flutter", RCP_MODE_SPARSE, v - 2,
                                h, 8, &rc), 1);     /* c, before its delete */
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rcp_model_doc_at(m, h[0].doc, v - 2, &x), 0);
    ck_assert(x.idlen == 1 && x.id[0] == 'c');
    /* and it goes on from v as if the undone changes never were */
    add(m, "e", "suction near the wing");
    add(f, "e", "suction near the wing");
    add(m, "a", "a shock wave again");
    add(f, "a", "a shock wave again");
    ck_assert_int_eq(del(m, "b"), 1);
    ck_assert_int_eq(del(f, "b"), 1);
    same_model(m, f);
    rcp_model_free(m);
    rcp_model_free(f);
    /* more changes back than snapshots kept: refused, nothing changes */
    rcp_model_opts_init(&o);
    o.dim = 16;
    o.snapshot_keep = 2;
    g = rcp_model_new(&o, err, sizeof err);
    ck_assert_ptr_nonnull(g);
    add(g, "a", "one");
    v = rcp_model_version(g);
    add(g, "b", "two");
    add(g, "c", "three");
    add(g, "a", "four");
    ck_assert_int_eq(roll(g, v), -1);
    ck_assert_uint_eq(rcp_model_version(g), v + 3);
    ck_assert_uint_eq(rcp_model_count(g), 3);
    ck_assert_int_eq(roll(g, v + 1), 0);
    ck_assert_uint_eq(rcp_model_count(g), 2);
    ck_assert(rcp_model_find(g, "c", 1) < 0);
    rcp_model_free(g);
}
END_TEST

/* A sweep since v may drop what old snapshots saw; a rollback then gives
** those snapshots up (-32010 "no longer kept") instead of serving them
** thinned out, and an out-of-memory rollback changes nothing. */
START_TEST(rollback_after_a_sweep_gives_up_thinned_snapshots)
{
    rcp_model_opts o;
    rcp_model *m, *f;
    char err[128], text[2000];
    size_t n = 0, w;
    uint64_t v, old;
    int i, rc;
    rcp_model_hit h[8];
    for (w = 0; w < 150; w++)
        n += (size_t)snprintf(text + n, sizeof text - n, "w%lu ",
                              (unsigned long)w);
    rcp_model_opts_init(&o);
    o.dim = 16;
    o.snapshot_keep = 8;
    m = rcp_model_new(&o, err, sizeof err);
    f = rcp_model_new(&o, err, sizeof err);
    ck_assert(m && f);
    for (i = 0; i < 28; i++) {          /* dead postings pile up: 4050 */
        text[0] = (char)('a' + i % 26);
        add(m, "big", text);
        add(f, "big", text);
    }
    old = rcp_model_version(m) - 8;     /* kept, by the count of changes */
    v = rcp_model_version(m);
    for (i = 0; i < 6; i++) {           /* past 4096: a sweep drops what
                                        ** old saw (vdel + keep <= now) */
        text[1] = (char)('a' + i);
        add(m, "big", text);
    }
    ck_assert_int_eq(roll(m, v), 0);
    ck_assert(rcp_model_has_version(m, v));
    ck_assert(!rcp_model_has_version(m, old));
    search_at(m, "w1", RCP_MODE_SPARSE, old, h, 8, &rc);
    ck_assert_int_eq(rc, RCP_MODEL_GONE);
    ck_assert_uint_eq(search(m, "w1", RCP_MODE_SPARSE, h, 8), 1);
    ck_assert_uint_eq(rcp_model_count(m), 1);
    ck_assert_uint_eq(rcp_model_version(m), rcp_model_version(f));
    same_hits(m, f, "w7 w8", RCP_MODE_SPARSE);
    same_hits(m, f, "w7 w8", RCP_MODE_DENSE);
    rcp_model_free(m);
    rcp_model_free(f);
}
END_TEST

START_TEST(an_upserted_document_reads_as_it_was_at_the_pinned_version)
{
    rcp_model *m = new_model(16);
    rcp_model_docview x;
    uint64_t v;
    long old;
    add(m, "a", "old text");
    v = rcp_model_version(m);
    old = rcp_model_find(m, "a", 1);
    add(m, "a", "new text");
    ck_assert_int_eq(rcp_model_doc(m, (uint32_t)old, &x), -1);
    ck_assert_int_eq(rcp_model_doc_at(m, (uint32_t)old, v, &x), 0);
    ck_assert_uint_eq(x.textlen, 8);
    ck_assert(!memcmp(x.text, "old text", 8));
    ck_assert_int_eq(rcp_model_doc_at(m, (uint32_t)old, v + 1, &x), -1);
    ck_assert_int_eq(rcp_model_doc_at(m, (uint32_t)rcp_model_find(m, "a", 1),
                                      v, &x), -1);
    rcp_model_free(m);
}
END_TEST

START_TEST(an_expired_or_future_version_is_gone)
{
    rcp_model_opts o;
    rcp_model *m;
    rcp_model_hit h[2];
    char err[64];
    int rc, i;
    rcp_model_opts_init(&o);
    o.snapshot_keep = 3;
    m = rcp_model_new(&o, err, sizeof err);
    for (i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof id, "d%d", i);
        add(m, id, "some text");
    }
    ck_assert(rcp_model_version(m) == 6);
    ck_assert(rcp_model_has_version(m, 3));
    ck_assert(!rcp_model_has_version(m, 2));
    ck_assert(!rcp_model_has_version(m, 7));
    search_at(m, "text", RCP_MODE_HYBRID, 2, h, 2, &rc);
    ck_assert_int_eq(rc, RCP_MODEL_GONE);
    search_at(m, "text", RCP_MODE_HYBRID, 7, h, 2, &rc);
    ck_assert_int_eq(rc, RCP_MODEL_GONE);
    ck_assert_uint_eq(search_at(m, "text", RCP_MODE_SPARSE, 3, h, 2, &rc), 2);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(hit_id(m, &h[0]), "d0");
    rcp_model_free(m);
}
END_TEST

START_TEST(sweeping_keeps_what_a_retained_snapshot_sees)
{
    /* heavy churn triggers sweeps; a version inside the window still
    ** answers exactly as a fresh index of its documents would */
    rcp_model_opts o;
    rcp_model *m, *fresh;
    rcp_model_hit a[4], b[4];
    char err[64], id[16];
    size_t na, nb, i;
    uint64_t v;
    int k, rc;
    rcp_model_opts_init(&o);
    o.dim = 8;
    o.snapshot_keep = 500;
    m = rcp_model_new(&o, err, sizeof err);
    fresh = rcp_model_new(&o, err, sizeof err);
    for (k = 0; k < 3000; k++) {
        snprintf(id, sizeof id, "%d", k);
        add_quick(m, id, k % 3 ? "common words flow" : "rare shock flow");
    }
    check(m);
    for (k = 0; k < 2600; k++) {
        snprintf(id, sizeof id, "%d", k);
        ck_assert_int_eq(del_quick(m, id), 1);
    }
    check(m);
    v = rcp_model_version(m) - 300;           /* 2300 deleted then */
    for (k = 2300; k < 3000; k++) {
        snprintf(id, sizeof id, "%d", k);
        add_quick(fresh, id, k % 3 ? "common words flow" : "rare shock flow");
    }
    check(fresh);
    add(m, "late", "rare shock shock flow");
    na = search_at_rr(m, "rare shock", RCP_MODE_SPARSE, v, RCP_RERANK_NONE,
                      a, 4, &rc);
    ck_assert_int_eq(rc, 0);
    nb = search(fresh, "rare shock", RCP_MODE_SPARSE, b, 4);
    ck_assert_uint_eq(na, nb);
    for (i = 0; i < na; i++) {
        rcp_model_docview x;
        ck_assert_int_eq(rcp_model_doc_at(m, a[i].doc, v, &x), 0);
        ck_assert_uint_eq(x.idlen, strlen(hit_id(fresh, &b[i])));
        ck_assert(!memcmp(x.id, hit_id(fresh, &b[i]), x.idlen));
        ck_assert(fabs(a[i].score - b[i].score) < 1e-9);
    }
    rcp_model_free(m);
    rcp_model_free(fresh);
}
END_TEST

/* MARK: - memory under churn (issue 8 items 3 and 8) */

/* A counting allocator: what the library holds right now. */
static size_t HELD;
static void *counting_alloc(void *ud, void *p, size_t n)
{
    size_t *h = p ? (size_t *)p - 2 : NULL, old = h ? h[0] : 0;
    (void)ud;
    if (n == 0) {
        free(h);
        HELD -= old;
        return NULL;
    }
    if (!(h = realloc(h, n + 2 * sizeof *h)))
        return NULL;
    HELD = HELD - old + n;
    h[0] = n;
    return h + 2;
}

/* Write i of the churn: one of ten ids, a text that changes every time
** (a revision number no other write uses, so new terms come and go). */
static void churn(rcp_model *m, unsigned long i)
{
    static const char *const w[] = { "shock", "wave", "layer", "flow",
        "plate", "wing", "heat", "cone", "jet", "nozzle", "drag", "lift" };
    char id[8], text[160];
    snprintf(id, sizeof id, "d%lu", i % 10);
    snprintf(text, sizeof text, "%s %s %s revision r%lu of document %lu",
             w[i % 12], w[(i / 10) % 12], w[(i * 7) % 12], i, i % 10);
    add_quick(m, id, text);
    if (i % 1000 == 999)
        check(m);
}

static rcp_model *churn_model(unsigned keep)
{
    rcp_model_opts o;
    char err[64];
    rcp_model *m;
    rcp_model_opts_init(&o);
    o.snapshot_keep = keep;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_ptr_nonnull(m);
    return m;
}

START_TEST(upsert_churn_keeps_the_memory_held_flat)
{
    /* issue 8 item 3: every upsert kept ~2 KB (its slot, its dense row)
    ** for good; 10 ids upserted 20 000 times must hold what 1 000 did */
    rcp_model *m;
    size_t warm;
    unsigned long i;
    HELD = 0;
    rcp_set_allocator(counting_alloc, NULL);
    m = churn_model(64);
    for (i = 0; i < 1000; i++)
        churn(m, i);
    warm = HELD;
    for (; i < 20000; i++)
        churn(m, i);
    ck_assert_msg(HELD <= 2 * warm, "held %lu bytes after 20000 upserts, "
                  "%lu after 1000", (unsigned long)HELD,
                  (unsigned long)warm);
    ck_assert_uint_eq(rcp_model_count(m), 10);
    rcp_model_free(m);
    rcp_set_allocator(NULL, NULL);
    ck_assert_uint_eq(HELD, 0);
}
END_TEST

START_TEST(upsert_churn_keeps_slots_rows_and_terms_bounded)
{
    /* the engine's own view of the same: docnos, dense rows and terms
    ** stay proportional to what is live or retained (design note 4) */
    rcp_model *m = churn_model(64);
    rcp_model_stats st, mid;
    unsigned long i;
    for (i = 0; i < 5000; i++)
        churn(m, i);
    rcp_model_stat(m, &mid);
    for (; i < 20000; i++)
        churn(m, i);
    rcp_model_stat(m, &st);
    ck_assert_uint_eq(st.live, 10);
    ck_assert_uint_le(st.retained, 64);
    ck_assert_uint_le(st.slots, 4 * (10 + 64) + 64);
    ck_assert_uint_le(st.rows, 2 * (4 * (10 + 64) + 64));
    ck_assert_uint_eq(st.rows, mid.rows);           /* no growth at all */
    ck_assert_uint_le(st.terms, 4096);
    ck_assert_uint_eq(st.oldest, rcp_model_version(m) - 64);
    rcp_model_free(m);
}
END_TEST

START_TEST(reclaimed_documents_leave_the_results_of_a_fresh_index)
{
    /* after many renumberings the index answers exactly as one built from
    ** the live documents alone, and a kept version still as it did */
    rcp_model *m = churn_model(64), *fresh = churn_model(64);
    rcp_model_hit a[10], b[10], then[10];
    size_t na, nb, nt, i;
    uint64_t v;
    unsigned long k;
    int mode, rc, pm;
    for (k = 0; k < 9990; k++)
        churn(m, k);
    v = rcp_model_version(m);
    nt = search_at_rr(m, "shock layer revision", RCP_MODE_HYBRID, v,
                      RCP_RERANK_NONE, then, 10, &rc);
    for (; k < 10000; k++) {
        churn(m, k);
        churn(fresh, k);
    }
    /* every mode, feedback too: nothing follows the term numbers, which
    ** are arrival order, so a fresh index built in another order ranks
    ** and scores the same (wterm, model.c) */
    for (pm = 0; pm < 4; pm++) {
        mode = all_modes[pm];
        na = search(m, "shock layer revision", mode, a, 10);
        nb = search(fresh, "shock layer revision", mode, b, 10);
        ck_assert_uint_eq(na, nb);
        for (i = 0; i < na; i++) {
            char id[64];
            snprintf(id, sizeof id, "%s", hit_id(m, &a[i]));
            ck_assert_str_eq(id, hit_id(fresh, &b[i]));
            ck_assert_msg(a[i].score == b[i].score, "mode %d hit %lu: %.17g "
                          "%.17g", mode, (unsigned long)i, a[i].score,
                          b[i].score);
        }
    }
    na = search_at_rr(m, "shock layer revision", RCP_MODE_HYBRID, v,
                      RCP_RERANK_NONE, a, 10, &rc);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(na, nt);
    for (i = 0; i < na; i++)
        ck_assert(a[i].score == then[i].score);
    rcp_model_free(m);
    rcp_model_free(fresh);
}
END_TEST

START_TEST(retained_versions_fit_in_snapshot_bytes_oldest_dropped_first)
{
    /* issue 8 item 8: 300 upserts of one 4 MiB document held 1.4 GB for
    ** the snapshot ring; past the byte budget the oldest versions go, and
    ** pinning one is RCP_MODEL_GONE (§7.7.1: -32010), never a different
    ** result */
    rcp_model_opts o;
    rcp_model *m;
    rcp_model_stats st;
    rcp_model_hit h[2];
    char err[64], *text = malloc(256 << 10);
    size_t i;
    int k, rc;
    rcp_model_opts_init(&o);
    o.snapshot_bytes = 1 << 20;
    m = rcp_model_new(&o, err, sizeof err);
    for (i = 0; i < (256 << 10) - 1; i++)
        text[i] = "abcdefgh "[i % 9];
    text[i] = 0;
    for (k = 0; k < 20; k++) {
        memcpy(text, k % 2 ? "shock" : "wavey", 5);
        text[5] = text[7] = ' ';
        text[6] = (char)('a' + k);
        add(m, "big", text);
        rcp_model_stat(m, &st);
        ck_assert_uint_le(st.retained_bytes, o.snapshot_bytes);
    }
    ck_assert_uint_ge(st.retained, 1);
    ck_assert_uint_lt(st.retained, 19);
    ck_assert(rcp_model_has_version(m, rcp_model_version(m) - 1));
    ck_assert(!rcp_model_has_version(m, 1));
    search_at(m, "wavey", RCP_MODE_SPARSE, 1, h, 2, &rc);
    ck_assert_int_eq(rc, RCP_MODEL_GONE);
    ck_assert_uint_eq(search_at(m, "wavey", RCP_MODE_SPARSE,
                                rcp_model_version(m) - 1, h, 2, &rc), 1);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(search(m, "wavey", RCP_MODE_SPARSE, h, 2), 0);
    rcp_model_free(m);
    free(text);
}
END_TEST

/* MARK: - chunk links (§7.10) */

typedef struct seen_chunks {
    unsigned mask;
    size_t n;
} seen_chunks;

static int note_chunk(void *ud, uint32_t docno, const rcp_model_docview *d)
{
    seen_chunks *s = ud;
    (void)docno;
    ck_assert_ptr_nonnull(d->chunk.of);
    ck_assert_uint_eq(d->chunk.end - d->chunk.start, d->textlen);
    s->mask |= 1u << d->chunk.index;
    s->n++;
    return 0;
}

static void add_part(rcp_model *m, const char *id, const char *text,
                     const char *of, uint32_t index, uint64_t start)
{
    rcp_model_chunkref ck = test_chunkref(of, index, start, strlen(text));
    ck_assert_int_eq(rcp_model_add_chunk(m, id, strlen(id), text,
                                         strlen(text), NULL, 0, &ck), 0);
    check(m);
}

static seen_chunks chunks_of(const rcp_model *m, const char *of, uint64_t v)
{
    seen_chunks s = { 0, 0 };
    ck_assert_int_eq(rcp_model_chunks(m, of, strlen(of), v, note_chunk, &s),
                     0);
    return s;
}

START_TEST(chunk_links_are_the_engines_and_list_what_exists)
{
    /* §15.2: a chunk's link is an attribute of the document, not meta */
    rcp_model *m = new_model(16);
    rcp_model_docview d;
    rcp_model_chunkref bad;
    uint64_t v;
    seen_chunks s;
    add_part(m, "a#0", "shock wave ", "a", 0, 0);
    add_part(m, "a#1", "wave layer", "a", 1, 6);
    ck_assert_int_eq(rcp_model_add(m, "x", 1, "plain", 5,
                     "{\"x-rcp-chunk\":{\"doc\":\"a\",\"index\":7}}", 37), 0);
    check(m);
    v = rcp_model_version(m);
    s = chunks_of(m, "a", v);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_uint_eq(s.mask, 3);
    ck_assert_uint_eq(chunks_of(m, "x", v).n, 0);
    ck_assert_uint_eq(chunks_of(m, "nothing", v).n, 0);
    ck_assert_int_eq(rcp_model_doc(m, (uint32_t)rcp_model_find(m, "a#1", 3),
                                   &d), 0);
    ck_assert_uint_eq(d.chunk.oflen, 1);
    ck_assert_int_eq(d.chunk.of[0], 'a');
    ck_assert_uint_eq(d.chunk.start, 6);
    ck_assert_int_eq(rcp_model_doc(m, (uint32_t)rcp_model_find(m, "x", 1),
                                   &d), 0);
    ck_assert_ptr_null(d.chunk.of);
    /* a re-add is a no-op only with the same link; a plain one drops it */
    add_part(m, "a#1", "wave layer", "a", 1, 6);
    ck_assert(rcp_model_version(m) == v);
    add(m, "a#1", "wave layer");
    ck_assert_uint_eq(chunks_of(m, "a", rcp_model_version(m)).mask, 1);
    /* the pinned version still lists both */
    ck_assert_uint_eq(chunks_of(m, "a", v).mask, 3);
    /* a span that is not the text's length is refused */
    bad = test_chunkref("a", 2, 100000000, 3);
    ck_assert_int_eq(rcp_model_add_chunk(m, "a#2", 3, "fox", 2, NULL, 0,
                                         &bad), -1);
    check(m);
    ck_assert_int_eq(rcp_model_chunks(m, "a", 1, rcp_model_version(m) + 1,
                                      note_chunk, &s), RCP_MODEL_GONE);
    rcp_model_free(m);
}
END_TEST

START_TEST(chunk_links_survive_the_reclaiming_of_documents)
{
    /* compaction renumbers documents; chunk chains follow */
    rcp_model *m = churn_model(8);
    unsigned long k;
    add_part(m, "p#0", "first part ", "p", 0, 0);
    add_part(m, "p#1", "second part", "p", 1, 11);
    for (k = 0; k < 3000; k++)
        churn(m, k);
    add_part(m, "p#1", "second, new", "p", 1, 11);
    for (; k < 6000; k++)
        churn(m, k);
    ck_assert_uint_eq(chunks_of(m, "p", rcp_model_version(m)).mask, 3);
    ck_assert_uint_eq(chunks_of(m, "p", rcp_model_version(m)).n, 2);
    ck_assert_int_eq(del(m, "p#0"), 1);
    for (; k < 9000; k++)
        churn(m, k);
    ck_assert_uint_eq(chunks_of(m, "p", rcp_model_version(m)).mask, 2);
    rcp_model_free(m);
}
END_TEST

START_TEST(rollback_across_a_reclaim_serves_the_version_it_goes_back_to)
{
    /* store.c's rollback after compactions renumbered the documents and
    ** a chunk link came and went: the index is the one of version v */
    rcp_model *m = churn_model(64), *f = churn_model(64);
    rcp_model_hit a[10], b[10];
    rcp_model_stats st;
    size_t na, nb, i, slots = 0, shrank = 0;
    unsigned long k;
    uint64_t v;
    int mode, pm;
    for (k = 0; k < 3000; k++)
        churn(m, k);
    for (k = 2990; k < 3000; k++)
        churn(f, k);
    add_part(m, "p#0", "first part ", "p", 0, 0);
    add_part(f, "p#0", "first part ", "p", 0, 0);
    v = rcp_model_version(m);
    for (k = 3000; k < 3063; k++) {
        churn(m, k);
        rcp_model_stat(m, &st);
        shrank += st.slots < slots;
        slots = st.slots;
    }
    add_part(m, "p#1", "second part", "p", 1, 11);
    ck_assert_uint_ge(shrank, 1);                   /* a compaction ran */
    ck_assert_int_eq(roll(m, v), 0);
    ck_assert_uint_eq(rcp_model_count(m), 11);
    ck_assert_uint_eq(chunks_of(m, "p", v).mask, 1);
    for (pm = 0; pm < 4; pm++) {        /* every mode, as above */
        mode = all_modes[pm];
        na = search(m, "shock layer revision part", mode, a, 10);
        nb = search(f, "shock layer revision part", mode, b, 10);
        ck_assert_uint_eq(na, nb);
        for (i = 0; i < na; i++) {
            char id[64];
            snprintf(id, sizeof id, "%s", hit_id(m, &a[i]));
            ck_assert_str_eq(id, hit_id(f, &b[i]));
            ck_assert(a[i].score == b[i].score);
        }
    }
    churn(m, 5000);                     /* and it goes on from there */
    ck_assert_uint_eq(rcp_model_version(m), v + 1);
    rcp_model_free(m);
    rcp_model_free(f);
}
END_TEST

/* MARK: - fusion (§16.3) */

static rcp_fuse_list list(const rcp_fuse_item *it, size_t n, double w,
                          double floor)
{
    rcp_fuse_list l;
    l.items = it;
    l.n = n;
    l.weight = w;
    l.floor = floor;
    return l;
}

START_TEST(rrf_sums_weight_over_rank_and_breaks_ties_by_weight_then_id)
{
    rcp_fuse_item a[] = {{"x", 1, 9}, {"y", 1, 8}};
    rcp_fuse_item b[] = {{"y", 1, 5}, {"x", 1, 4}, {"z", 1, 3}};
    rcp_fuse_item c[] = {{"q", 1, 1}};
    rcp_fuse_list L[3];
    rcp_fused *f;
    long n;
    L[0] = list(a, 2, 1, 0);
    L[1] = list(b, 3, 1, 0);
    L[2] = list(c, 1, 1, 0);
    n = rcp_fuse(RCP_FUSE_RRF, L, 3, 60, &f);
    ck_assert_int_eq(n, 4);
    /* x and y tie (1/61 + 1/62): by id, x first */
    ck_assert(fabs(f[0].score - (1.0 / 61 + 1.0 / 62)) < 1e-15);
    ck_assert(f[0].score == f[1].score);
    ck_assert_str_eq(f[0].id, "x");
    ck_assert_str_eq(f[1].id, "y");
    ck_assert_int_eq(f[0].pos[0], 0);
    ck_assert_int_eq(f[0].pos[1], 1);
    ck_assert_int_eq(f[0].pos[2], -1);
    /* q (1/61, weight 1) beats z (1/63) */
    ck_assert_str_eq(f[2].id, "q");
    ck_assert_str_eq(f[3].id, "z");
    rcp_free(f);
}
END_TEST

START_TEST(fusion_tie_break_prefers_higher_summed_weight)
{
    /* equal fused score, weights 2 vs 1+1... use weights so that score
    ** ties while the summed weight differs */
    rcp_fuse_item a[] = {{"b", 1, 1}};
    rcp_fuse_item b[] = {{"a", 1, 1}};
    rcp_fuse_list L[2];
    rcp_fused *f;
    L[0] = list(a, 1, 2.0, 0);      /* b: 2/61 with weight 2 */
    L[1] = list(b, 1, 2.0, 0);      /* a: 2/61 with weight 2 */
    ck_assert_int_eq(rcp_fuse(RCP_FUSE_RRF, L, 2, 60, &f), 2);
    ck_assert_str_eq(f[0].id, "a");   /* same weight: smaller id */
    rcp_free(f);
    /* weighted: a in both lists at their minimum (norm 0, weight 2) vs
    ** c at 0 in one list (weight 1): tie on score 0, a by weight */
    {
        rcp_fuse_item x[] = {{"m", 1, 5}, {"c", 1, 1}, {"a", 1, 1}};
        rcp_fuse_item y[] = {{"m", 1, 5}, {"a", 1, 1}};
        L[0] = list(x, 3, 1, 0);
        L[1] = list(y, 2, 1, 0);
        ck_assert_int_eq(rcp_fuse(RCP_FUSE_WEIGHTED, L, 2, 60, &f), 3);
        ck_assert_str_eq(f[0].id, "m");
        ck_assert_str_eq(f[1].id, "a");
        ck_assert_str_eq(f[2].id, "c");
        ck_assert(f[1].score == 0 && f[2].score == 0);
        ck_assert(f[1].weight == 2 && f[2].weight == 1);
        rcp_free(f);
    }
}
END_TEST

START_TEST(weighted_fusion_normalises_min_max_per_list)
{
    rcp_fuse_item a[] = {{"x", 1, 10}, {"y", 1, 6}, {"z", 1, 2}};
    rcp_fuse_item b[] = {{"z", 1, 0.9}, {"y", 1, 0.5}};
    rcp_fuse_list L[2];
    rcp_fused *f;
    L[0] = list(a, 3, 0.5, 0);
    L[1] = list(b, 2, 0.5, 0);
    ck_assert_int_eq(rcp_fuse(RCP_FUSE_WEIGHTED, L, 2, 60, &f), 3);
    /* x: .5*1 = .5; y: .5*.5 + .5*0 = .25; z: .5*0 + .5*1 = .5 */
    ck_assert_str_eq(f[0].id, "z");   /* ties x on .5, weight 1 > .5 */
    ck_assert_str_eq(f[1].id, "x");
    ck_assert(fabs(f[0].score - 0.5) < 1e-12);
    ck_assert(fabs(f[2].score - 0.25) < 1e-12);
    rcp_free(f);
}
END_TEST

START_TEST(convex_fusion_anchors_the_floor_not_the_minimum)
{
    /* dense floor -1, lexical floor 0; alpha .5 */
    rcp_fuse_item d[] = {{"x", 1, 0.5}, {"y", 1, 0.2}};
    rcp_fuse_item s[] = {{"y", 1, 8}, {"x", 1, 4}};
    rcp_fuse_list L[2];
    rcp_fused *f;
    double x = 0.5 * 1.0 + 0.5 * 0.5;
    double y = 0.5 * (1.2 / 1.5) + 0.5 * 1.0;
    L[0] = list(d, 2, 0.5, -1.0);
    L[1] = list(s, 2, 0.5, 0.0);
    ck_assert_int_eq(rcp_fuse(RCP_FUSE_CONVEX, L, 2, 60, &f), 2);
    ck_assert_str_eq(f[0].id, "y");
    ck_assert(fabs(f[0].score - y) < 1e-12);
    ck_assert(fabs(f[1].score - x) < 1e-12);
    /* min-max would have put y's dense score (the list minimum) at 0 */
    ck_assert(f[0].score > 0.5);
    rcp_free(f);
}
END_TEST

START_TEST(fusion_counts_an_id_repeated_in_one_list_once)
{
    rcp_fuse_item a[] = {{"x", 1, 3}, {"x", 1, 2}, {"y", 1, 1}};
    rcp_fuse_list L[1];
    rcp_fused *f;
    L[0] = list(a, 3, 1, 0);
    ck_assert_int_eq(rcp_fuse(RCP_FUSE_RRF, L, 1, 60, &f), 2);
    ck_assert(fabs(f[0].score - 1.0 / 61) < 1e-15);
    ck_assert(fabs(f[1].score - 1.0 / 63) < 1e-15);
    rcp_free(f);
}
END_TEST

START_TEST(hybrid_search_fuses_both_legs_and_reports_stage_scores)
{
    rcp_model *m = new_model(0);
    rcp_model_hit h[5];
    size_t n;
    add(m, "1", "supersonic flow over a flat plate");
    add(m, "2", "heat transfer to a cone");
    add(m, "3", "flow separation on wings");
    n = search(m, "supersonic flow", RCP_MODE_HYBRID, h, 5);
    ck_assert_uint_ge(n, 2);
    ck_assert_str_eq(hit_id(m, &h[0]), "1");
    ck_assert(h[0].has & RCP_HIT_FUSED);
    ck_assert(h[0].has & RCP_HIT_DENSE);
    ck_assert(h[0].has & RCP_HIT_SPARSE);
    ck_assert(h[0].score == h[0].fused);
    rcp_model_free(m);
}
END_TEST

/* MARK: - allocation failure (invariant 7) */

static long fail_after = -1;

static void *failing_alloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (n == 0) {
        free(p);
        return NULL;
    }
    if (fail_after == 0)
        return NULL;
    if (fail_after > 0)
        fail_after--;
    return realloc(p, n);
}

/* A rollback that cannot get the memory to bring documents back changes
** nothing; the same rollback later succeeds. */
START_TEST(rollback_out_of_memory_changes_nothing)
{
    rcp_model *m = new_model(32), *f = new_model(32);
    rcp_model_hit h[4];
    uint64_t v;
    add(m, "a", "first document about wings");
    add(m, "b", "second document about flow");
    v = rcp_model_version(m);
    add(m, "a", "replaced text on shocks");
    ck_assert_int_eq(del(m, "b"), 1);
    add(f, "a", "replaced text on shocks");
    rcp_set_allocator(failing_alloc, NULL);
    fail_after = 0;
    ck_assert_int_eq(rcp_model_rollback(m, v), -1);
    fail_after = -1;
    rcp_set_allocator(NULL, NULL);
    check(m);
    ck_assert_uint_eq(rcp_model_version(m), v + 2);
    ck_assert_uint_eq(rcp_model_count(m), 1);
    ck_assert_uint_eq(search(m, "wings flow", RCP_MODE_SPARSE, h, 4), 0);
    ck_assert_uint_eq(search(m, "shocks", RCP_MODE_SPARSE, h, 4), 1);
    ck_assert(search(m, "shocks", RCP_MODE_SPARSE, h, 4) == 1
              && search(f, "shocks", RCP_MODE_SPARSE, h + 1, 3) == 1
              && h[0].score == h[1].score);
    ck_assert_int_eq(roll(m, v), 0);
    ck_assert_uint_eq(rcp_model_count(m), 2);
    ck_assert_uint_eq(search(m, "wings flow", RCP_MODE_SPARSE, h, 4), 2);
    rcp_model_free(m);
    rcp_model_free(f);
}
END_TEST

START_TEST(add_and_search_fail_cleanly_when_memory_runs_out)
{
    long k;
    int ok = 0;
    for (k = 0; k < 400 && !ok; k++) {
        rcp_model *m = new_model(32);
        rcp_model_query q;
        rcp_model_hit h[4];
        size_t n = 0, before;
        add(m, "a", "first document about wings");
        before = rcp_model_count(m);
        rcp_set_allocator(failing_alloc, NULL);
        fail_after = k;
        ok = rcp_model_add(m, "b", 1, "second text on flow", 19, "{}", 2)
             == 0;
        rcp_model_query_init(&q);
        q.text = "wings flow";
        q.len = 10;
        q.k = 4;
        q.rerank = RCP_RERANK_CROSS;
        ok = (rcp_model_search(m, &q, h, &n) == 0) && ok;
        fail_after = -1;
        rcp_set_allocator(NULL, NULL);
        check(m);
        if (rcp_model_find(m, "b", 1) < 0)
            ck_assert_uint_eq(rcp_model_count(m), before);
        ck_assert_uint_ge(search(m, "wings", RCP_MODE_HYBRID, h, 4), 1);
        rcp_model_free(m);
    }
    ck_assert_msg(ok, "never succeeded: the bound is too small");
}
END_TEST

/* MARK: - sparse and multi-vector embedders, rerankers, MMR */

START_TEST(sparse_embedding_has_ascending_ids_inside_the_vocabulary)
{
    rcp_model *m = new_model(16);
    uint32_t *ix, *ix2;
    float *v, *v2;
    size_t n, n2, i;
    const char *t = "shock wave shock boundary layer interaction";
    ck_assert_int_eq(rcp_model_embed_sparse(m, t, strlen(t),
                     RCP_KIND_DOCUMENT, &ix, &v, &n), 0);
    ck_assert_uint_eq(n, 5);       /* shock wave boundari layer interact */
    for (i = 0; i < n; i++) {
        ck_assert_uint_lt(ix[i], rcp_model_vocab(m));
        ck_assert(v[i] > 0);
        if (i)
            ck_assert_uint_gt(ix[i], ix[i - 1]);
    }
    ck_assert_int_eq(rcp_model_embed_sparse(m, t, strlen(t),
                     RCP_KIND_QUERY, &ix2, &v2, &n2), 0);
    ck_assert_uint_eq(n, n2);
    ck_assert_int_eq(memcmp(ix, ix2, n * sizeof *ix), 0);
    ck_assert_int_eq(memcmp(v, v2, n * sizeof *v), 0);
    ck_assert_str_eq(rcp_model_identity(m, RCP_EMBED_SPARSE),
                     "rcp-hash-sparse-v3-262144");
    rcp_free(ix);
    rcp_free(v);
    rcp_free(ix2);
    rcp_free(v2);
    ck_assert_int_eq(rcp_model_embed_sparse(m, "", 0, RCP_KIND_QUERY,
                     &ix, &v, &n), 0);
    ck_assert_uint_eq(n, 0);
    rcp_free(ix);
    rcp_free(v);
    rcp_model_free(m);
}
END_TEST

START_TEST(multi_vector_gives_one_unit_row_per_content_token_in_context)
{
    rcp_model *m = new_model(16);
    float *a, *b;
    size_t na, nb, i, d = rcp_model_multi_dim(m);
    double c = 0, self = 0;
    const char *t1 = "the boundary layer of a wing";
    const char *t2 = "a layer of paint";
    ck_assert_int_eq(rcp_model_embed_multi(m, t1, strlen(t1),
                     RCP_KIND_DOCUMENT, &a, &na), 0);
    ck_assert_int_eq(rcp_model_embed_multi(m, t2, strlen(t2),
                     RCP_KIND_DOCUMENT, &b, &nb), 0);
    ck_assert_uint_eq(na, 3);            /* boundary layer wing */
    ck_assert_uint_eq(nb, 2);            /* layer paint */
    ck_assert_uint_eq(d, 128);
    ck_assert_str_eq(rcp_model_identity(m, RCP_EMBED_MULTI),
                     "rcp-hash-multi-v3-128");
    for (i = 0; i < d; i++) {
        c += (double)a[d + i] * b[i];    /* "layer" in both contexts */
        self += (double)a[d + i] * a[d + i];
    }
    ck_assert(fabs(self - 1.0) < 1e-5);
    /* the same word, recognisably, but not identical: context mixes in */
    ck_assert_msg(c > 0.5 && c < 0.99, "cos %f", c);
    rcp_free(a);
    rcp_free(b);
    rcp_model_free(m);
}
END_TEST

START_TEST(cross_encoder_rewards_proximity_near_matches_and_coverage)
{
    rcp_model *m = new_model(16);
    const char *q = "boundary layer transition";
    const char *p[] = {
        "boundary layer transition on a cone",                  /* 0 */
        "transition of the flow far from any layer or boundary", /* 1 */
        "bondary layer transtion on a cone",                     /* 2 */
        "the cone was painted red",                              /* 3 */
        "boundary layer on a cone"                               /* 4 */
    };
    size_t lens[5], i;
    double s[5];
    for (i = 0; i < 5; i++)
        lens[i] = strlen(p[i]);
    ck_assert_int_eq(rcp_model_rerank(m, RCP_RERANK_CROSS, q, strlen(q), p,
                                      lens, 5, s), 0);
    ck_assert(s[0] > s[1]);          /* adjacent beats scattered */
    ck_assert(s[2] > s[4]);          /* typos still count (near matches) */
    ck_assert(s[0] > s[2]);          /* exact beats near */
    ck_assert(s[4] > s[3]);          /* two of three terms beat none */
    ck_assert(s[3] == 0.0);
    ck_assert_int_eq(rcp_model_rerank(m, 99, q, strlen(q), p, lens, 5, s),
                     -1);
    rcp_model_free(m);
}
END_TEST

START_TEST(colbert_rerank_is_maxsim_over_multi_vectors)
{
    rcp_model *m = new_model(16);
    const char *q = "boundary layer transition";
    const char *p[] = {"boundary layer transition on a cone",
                       "the cone was painted red"};
    size_t lens[2] = {35, 24};
    double s[2];
    float *qm, *dm;
    size_t nq, nd;
    ck_assert_int_eq(rcp_model_rerank(m, RCP_RERANK_COLBERT, q, strlen(q), p,
                                      lens, 2, s), 0);
    ck_assert(s[0] > s[1]);
    ck_assert(s[0] <= 3.0 + 1e-5);
    rcp_model_embed_multi(m, q, strlen(q), RCP_KIND_QUERY, &qm, &nq);
    rcp_model_embed_multi(m, p[0], lens[0], RCP_KIND_DOCUMENT, &dm, &nd);
    ck_assert(fabs(s[0] - rcp_vec_maxsim(qm, nq, dm, nd, 128,
                                         RCP_VEC_COSINE)) < 1e-6);
    rcp_free(qm);
    rcp_free(dm);
    rcp_model_free(m);
}
END_TEST

START_TEST(confidence_is_in_unit_range_and_independent_of_the_corpus)
{
    rcp_model *m = new_model(16);
    const char *q = "boundary layer transition";
    double full, none, part, again;
    ck_assert_int_eq(rcp_model_confidence(m, q, strlen(q),
                     "boundary layer transition", 25, &full), 0);
    ck_assert_int_eq(rcp_model_confidence(m, q, strlen(q),
                     "red paint", 9, &none), 0);
    ck_assert_int_eq(rcp_model_confidence(m, q, strlen(q),
                     "transition of a layer", 21, &part), 0);
    ck_assert(fabs(full - 1.0) < 1e-12);
    ck_assert(none == 0.0);
    ck_assert(part > 0.3 && part < 0.9);
    add(m, "1", "boundary layer transition boundary layer");
    add(m, "2", "transition transition");
    ck_assert_int_eq(rcp_model_confidence(m, q, strlen(q),
                     "transition of a layer", 21, &again), 0);
    ck_assert(again == part);
    rcp_model_free(m);
}
END_TEST

/* A model that has indexed text reads passages' words through its
** lexicon (stopword status and stems remembered); that must not change
** what it reads: confidence equals a fresh model's for every pair. */
START_TEST(confidence_reads_passages_the_same_after_indexing)
{
    rcp_model *m = new_model(16), *fresh = new_model(16);
    size_t nt = sizeof lex_texts / sizeof *lex_texts, i, j;
    char id[16];
    for (i = 0; i < nt; i++) {
        snprintf(id, sizeof id, "%u", (unsigned)i);
        add(m, id, lex_texts[i]);
    }
    for (i = 0; i < nt; i++)
        for (j = 0; j < nt; j++) {
            double a, b;
            ck_assert_int_eq(rcp_model_confidence(m, lex_texts[i],
                             strlen(lex_texts[i]), lex_texts[j],
                             strlen(lex_texts[j]), &a), 0);
            ck_assert_int_eq(rcp_model_confidence(fresh, lex_texts[i],
                             strlen(lex_texts[i]), lex_texts[j],
                             strlen(lex_texts[j]), &b), 0);
            ck_assert_msg(a == b, "query %u passage %u: %g vs %g",
                          (unsigned)i, (unsigned)j, a, b);
        }
    rcp_model_free(m);
    rcp_model_free(fresh);
}
END_TEST

START_TEST(search_hits_carry_confidence_and_rerank_scores)
{
    rcp_model *m = new_model(0);
    rcp_model_query q;
    rcp_model_hit h[3];
    size_t n, i;
    add(m, "1", "boundary layer transition on a cone");
    add(m, "2", "transition of the flow far from a layer");
    add(m, "3", "heat transfer in a boundary layer");
    rcp_model_query_init(&q);
    q.text = "boundary layer transition";
    q.len = strlen(q.text);
    q.k = 3;
    q.rerank = RCP_RERANK_CROSS;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(hit_id(m, &h[0]), "1");
    for (i = 0; i < n; i++) {
        ck_assert(h[i].has & RCP_HIT_RERANK);
        ck_assert(h[i].confidence >= 0 && h[i].confidence <= 1);
        if (i)
            ck_assert(h[i - 1].score >= h[i].score);
    }
    ck_assert(fabs(h[0].confidence - 1.0) < 1e-12);
    rcp_model_free(m);
}
END_TEST

/* The expected cascade score of each hit of a reranked search: (1 - w) x
** the min-max recall score + w x the min-max rerank score over the
** reranked hits, the rerank score being rcp_model_rerank's own. */
static void expect_interpolated(const rcp_model *m, rcp_model_query q,
                                double w)
{
    rcp_model_hit rec[8], got[8];
    const char *texts[8];
    size_t lens[8], n, ng, i, j;
    double rs[8], lo, hi, rlo, rhi;
    int method = q.rerank;
    q.rerank = RCP_RERANK_NONE;
    ck_assert_int_eq(rcp_model_search(m, &q, rec, &n), 0);
    q.rerank = method;
    ck_assert_int_eq(rcp_model_search(m, &q, got, &ng), 0);
    ck_assert_uint_eq(ng, n);
    ck_assert_uint_ge(n, 3);
    for (i = 0; i < n; i++) {
        rcp_model_docview v;
        ck_assert_int_eq(rcp_model_doc(m, rec[i].doc, &v), 0);
        texts[i] = v.text;
        lens[i] = v.textlen;
    }
    ck_assert_int_eq(rcp_model_rerank(m, method, q.text, q.len, texts, lens,
                                      n, rs), 0);
    lo = hi = rec[0].score;
    rlo = rhi = rs[0];
    for (i = 0; i < n; i++) {
        lo = fmin(lo, rec[i].score), hi = fmax(hi, rec[i].score);
        rlo = fmin(rlo, rs[i]), rhi = fmax(rhi, rs[i]);
    }
    ck_assert(hi > lo && rhi > rlo);
    for (j = 0; j < n; j++) {
        for (i = 0; i < n && rec[i].doc != got[j].doc; i++)
            ;
        ck_assert_uint_lt(i, n);
        ck_assert(got[j].has & RCP_HIT_RERANK);
        /* scores.rerank: the reranker's own score; score: the cascade's */
        ck_assert_double_eq_tol(got[j].rerank, rs[i], 1e-12);
        ck_assert_double_eq_tol(got[j].score,
                                (1 - w) * (rec[i].score - lo) / (hi - lo)
                                + w * (rs[i] - rlo) / (rhi - rlo), 1e-12);
        ck_assert(got[j].score >= 0 && got[j].score <= 1);
        if (j)
            ck_assert(got[j - 1].score >= got[j].score);
    }
}

/* issue 18: the rerank stage interpolates with the recall score instead
** of replacing it (or fusing the two ranks by RRF): replaced, the
** lexical reranker threw away what recall found and fell below its
** input on unseen queries.  Each method has its own weight, chosen on the
** Cranfield development half (rcp.h); rerank_weight overrides it. */
START_TEST(rerank_cascade_interpolates_with_the_recall_score)
{
    rcp_model *m = new_model(0);
    rcp_model_query q;
    rcp_model_hit h[8], r[8];
    size_t n, nr, i;
    add(m, "1", "boundary layer transition on a cone in supersonic flow");
    add(m, "2", "transition of the flow far from a layer, boundary effects "
                "of a boundary layer on the transition of a boundary");
    add(m, "3", "heat transfer in a boundary layer");
    add(m, "4", "the layer transition boundary was measured at the nose");
    add(m, "5", "a cone and a wedge in a wind tunnel");
    rcp_model_query_init(&q);
    q.text = "boundary layer transition";
    q.len = strlen(q.text);
    q.k = 5;
    q.mode = RCP_MODE_SPARSE;
    q.rerank = RCP_RERANK_CROSS;
    ck_assert(q.rerank_weight < 0);     /* the method's own weight */
    expect_interpolated(m, q, RCP_MODEL_RERANK_WEIGHT);
    q.rerank = RCP_RERANK_COLBERT;
    expect_interpolated(m, q, RCP_MODEL_COLBERT_WEIGHT);
    q.mode = RCP_MODE_HYBRID;
    expect_interpolated(m, q, RCP_MODEL_COLBERT_WEIGHT);
    q.rerank = RCP_RERANK_CROSS;
    q.rerank_weight = 0.6;
    expect_interpolated(m, q, 0.6);
    /* weight 1: the reranker's order alone */
    q.rerank_weight = 1;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    for (i = 1; i < n; i++)
        ck_assert(h[i - 1].rerank >= h[i].rerank);
    /* weight 0: the recall order, the reranker's scores still reported */
    q.rerank_weight = 0;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    q.rerank = RCP_RERANK_NONE;
    ck_assert_int_eq(rcp_model_search(m, &q, r, &nr), 0);
    ck_assert_uint_eq(n, nr);
    for (i = 0; i < n; i++) {
        ck_assert_uint_eq(h[i].doc, r[i].doc);
        ck_assert(h[i].has & RCP_HIT_RERANK);
    }
    /* out of range */
    q.rerank = RCP_RERANK_CROSS;
    q.rerank_weight = 1.5;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), RCP_MODEL_INVALID);
    q.rerank_weight = nan("");
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), RCP_MODEL_INVALID);
    rcp_model_free(m);
}
END_TEST

START_TEST(mmr_trades_relevance_for_novelty)
{
    rcp_model *m = new_model(0);
    rcp_model_query q;
    rcp_model_hit h[2];
    size_t n;
    add(m, "a", "supersonic flow over a wedge, shock angle");
    add(m, "b", "supersonic flow over a wedge, shock angle!");
    add(m, "c", "supersonic wind tunnel calibration");
    rcp_model_query_init(&q);
    q.text = "supersonic flow wedge";
    q.len = strlen(q.text);
    q.k = 2;
    q.mode = RCP_MODE_DENSE;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_str_eq(hit_id(m, &h[1]), "b");       /* pure relevance */
    q.mmr_lambda = 0.3;        /* the duplicate's similarity outweighs */
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(hit_id(m, &h[0]), "a");
    ck_assert_str_eq(hit_id(m, &h[1]), "c");       /* the duplicate waits */
    q.mmr_lambda = 1.0;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_str_eq(hit_id(m, &h[1]), "b");
    rcp_model_free(m);
}
END_TEST

/* MARK: - §8 filters over typed field values */

static const rcp_field ffields[] = {
    { "lang", 4, RCP_FIELD_KEYWORD }, { "tags", 4, RCP_FIELD_KEYWORD },
    { "title", 5, RCP_FIELD_TEXT }, { "year", 4, RCP_FIELD_INT },
    { "score", 5, RCP_FIELD_FLOAT }, { "ok", 2, RCP_FIELD_BOOL },
    { "published", 9, RCP_FIELD_DATE }
};
enum { F_LANG, F_TAGS, F_TITLE, F_YEAR, F_SCORE, F_OK, F_PUB, NFIELDS };
#define JUNE12 1497225600000LL      /* 2017-06-12T00:00:00Z, epoch ms */

static rcp_model *field_model(unsigned keep)
{
    rcp_model_opts o;
    char err[128];
    rcp_model *m;
    rcp_model_opts_init(&o);
    o.dim = 16;
    o.snapshot_keep = keep;
    o.fields = ffields;
    o.nfields = NFIELDS;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

static void add_meta(rcp_model *m, const char *id, const char *text,
                     const char *meta)
{
    ck_assert_int_eq(rcp_model_add(m, id, strlen(id), text, strlen(text),
                                   meta, meta ? strlen(meta) : 0), 0);
    check(m);
}

/* Every shape a meta can give a field: scalars, arrays, null, another
** type, a repeated key (the last wins), no meta, meta not an object. */
static const char *const fdocs[][2] = {
    { "d0", "{\"lang\":\"en\",\"tags\":[\"a\",\"b\"],\"title\":\"Shock Waves\","
            "\"year\":1999,\"score\":0.5,\"ok\":true,"
            "\"published\":\"2017-06-12T00:00:00Z\"}" },
    { "d1", "{\"lang\":\"de\",\"tags\":\"a\",\"title\":\"shock layer\","
            "\"year\":2005.0,\"score\":-1e3,\"ok\":false,"
            "\"published\":\"2017-06-12\"}" },
    { "d2", "{\"lang\":\"EN\",\"tags\":[],\"title\":[\"Shock\",\"x\"],"
            "\"year\":\"1999\",\"published\":1497225600000}" },
    { "d3", "{\"lang\":null,\"tags\":[\"b\",null,3,[\"a\"]],"
            "\"year\":[1990,2010],"
            "\"published\":\"2017-06-12T02:00:00+02:00\"}" },
    { "d4", "{\"lang\":\"en\",\"lang\":\"fr\",\"year\":2005,\"ok\":\"yes\","
            "\"published\":\"not a date\"}" },
    { "d5", NULL },
    { "d6", "[1,2]" },
    { "d7", "{\"lang\":\"en\",\"lang\":null}" },
    { "d8", "{not json" },
};
#define NFDOCS (sizeof fdocs / sizeof fdocs[0])

static rcp_model_value vs(const char *s)
{
    rcp_model_value v;
    memset(&v, 0, sizeof v);
    v.s = s;
    v.len = strlen(s);
    return v;
}

static rcp_model_value vn(double x)
{
    rcp_model_value v;
    memset(&v, 0, sizeof v);
    v.num = x;
    return v;
}

static rcp_model_value vi(int64_t ms)
{
    rcp_model_value v;
    memset(&v, 0, sizeof v);
    v.ms = ms;
    return v;
}

static rcp_model_filter fleaf(size_t field, int op,
                              const rcp_model_value *v, size_t n)
{
    rcp_model_filter f;
    memset(&f, 0, sizeof f);
    f.kind = RCP_FILTER_LEAF;
    f.field = field;
    f.op = op;
    f.values = v;
    f.nvalues = n;
    return f;
}

static rcp_model_filter fnode(int kind, const rcp_model_filter *kids,
                              size_t n)
{
    rcp_model_filter f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.kids = kids;
    f.nkids = n;
    return f;
}

/* The ids a filtered search returns, sorted, space-separated: every
** document that passes (each text holds "doc"), in mode; pinned to v
** when v != 0. */
static const char *passing(const rcp_model *m, const rcp_model_filter *f,
                           int mode, uint64_t v)
{
    static char out[4096];
    static char ids[256][16];
    rcp_model_hit h[256];
    rcp_model_query q;
    size_t n, i, j;
    rcp_model_query_init(&q);
    q.text = "doc";
    q.len = 3;
    q.k = 256;
    q.mode = mode;
    q.filter = f;
    q.pinned = v != 0;
    q.version = v;
    q.no_confidence = 1;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    for (i = 0; i < n; i++) {
        rcp_model_docview d;
        ck_assert_int_eq(v ? rcp_model_doc_at(m, h[i].doc, v, &d)
                           : rcp_model_doc(m, h[i].doc, &d), 0);
        ck_assert_uint_lt(d.idlen, 16);
        memcpy(ids[i], d.id, d.idlen);
        ids[i][d.idlen] = 0;
    }
    for (i = 1; i < n; i++)                 /* insertion sort by id */
        for (j = i; j > 0 && strcmp(ids[j - 1], ids[j]) > 0; j--) {
            char t[16];
            memcpy(t, ids[j], 16);
            memcpy(ids[j], ids[j - 1], 16);
            memcpy(ids[j - 1], t, 16);
        }
    out[0] = 0;
    for (i = 0; i < n; i++) {
        if (i)
            strcat(out, " ");
        strcat(out, ids[i]);
    }
    return out;
}

static rcp_model *fdocs_model(void)
{
    rcp_model *m = field_model(64);
    size_t i;
    for (i = 0; i < NFDOCS; i++)
        add_meta(m, fdocs[i][0], "a doc", fdocs[i][1]);
    return m;
}

/* The filter passes exactly want in every recall mode. */
static void expect(const rcp_model *m, rcp_model_filter f, const char *want)
{
    int mode;
    for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_HYBRID; mode++)
        ck_assert_str_eq(passing(m, &f, mode, 0), want);
}

START_TEST(filters_match_as_the_decisions_say)
{
    /* README Decisions, "Filters (§8)", case by case */
    rcp_model *m = fdocs_model();
    rcp_model_value en = vs("en"), a = vs("a"), bz[2], b = vs("b");
    rcp_model_value hock = vs("hock"), shock = vs("Shock"), empty = vs("");
    rcp_model_value e = vs("e"), y1999 = vn(1999), y2000 = vn(2000);
    rcp_model_value y1995 = vn(1995), years[2], t = vi(1), f = vi(0);
    rcp_model_value lo = vn(-1000), june = vi(JUNE12), fr = vs("fr");
    rcp_model_value de = vs("de");
    rcp_model_filter k[3], or2[2];
    bz[0] = b;
    bz[1] = vs("z");
    years[0] = vn(2005);
    years[1] = vn(1990);
    expect(m, fleaf(F_LANG, RCP_OP_EQ, &en, 1), "d0");       /* case */
    expect(m, fleaf(F_LANG, RCP_OP_EQ, &fr, 1), "d4");       /* last key */
    expect(m, fleaf(F_LANG, RCP_OP_NE, &en, 1),
           "d1 d2 d3 d4 d5 d6 d7 d8");                      /* absent: ne */
    expect(m, fleaf(F_TAGS, RCP_OP_EQ, &a, 1), "d0 d1");     /* any element */
    expect(m, fleaf(F_TAGS, RCP_OP_NE, &a, 1),
           "d2 d3 d4 d5 d6 d7 d8");
    expect(m, fleaf(F_TAGS, RCP_OP_IN, bz, 2), "d0 d3");
    expect(m, fleaf(F_TAGS, RCP_OP_IN, bz, 0), "");
    expect(m, fleaf(F_TAGS, RCP_OP_NIN, &b, 1),
           "d1 d2 d4 d5 d6 d7 d8");
    expect(m, fleaf(F_TAGS, RCP_OP_NIN, bz, 0),
           "d0 d1 d2 d3 d4 d5 d6 d7 d8");
    expect(m, fleaf(F_TAGS, RCP_OP_EXISTS, &t, 1), "d0 d1 d2 d3");
    expect(m, fleaf(F_TAGS, RCP_OP_EXISTS, &f, 1), "d4 d5 d6 d7 d8");
    expect(m, fleaf(F_LANG, RCP_OP_EXISTS, &t, 1), "d0 d1 d2 d4");
    expect(m, fleaf(F_TITLE, RCP_OP_CONTAINS, &hock, 1), "d0 d1");
    expect(m, fleaf(F_TITLE, RCP_OP_CONTAINS, &shock, 1), "d0 d2");
    expect(m, fleaf(F_TITLE, RCP_OP_CONTAINS, &empty, 1), "d0 d1");
    expect(m, fleaf(F_LANG, RCP_OP_CONTAINS, &e, 1), "");    /* keyword */
    expect(m, fleaf(F_YEAR, RCP_OP_EQ, &y1999, 1), "d0");    /* "1999" */
    expect(m, fleaf(F_YEAR, RCP_OP_GTE, &y2000, 1), "d1 d3 d4");
    expect(m, fleaf(F_YEAR, RCP_OP_LT, &y1995, 1), "d3");
    expect(m, fleaf(F_YEAR, RCP_OP_NE, &y1999, 1),
           "d1 d2 d3 d4 d5 d6 d7 d8");
    expect(m, fleaf(F_YEAR, RCP_OP_IN, years, 2), "d1 d3 d4");
    expect(m, fleaf(F_SCORE, RCP_OP_GT, &lo, 1), "d0");
    expect(m, fleaf(F_SCORE, RCP_OP_LTE, &lo, 1), "d1");
    expect(m, fleaf(F_OK, RCP_OP_EQ, &t, 1), "d0");
    expect(m, fleaf(F_OK, RCP_OP_EQ, &f, 1), "d1");
    expect(m, fleaf(F_OK, RCP_OP_NE, &t, 1),
           "d1 d2 d3 d4 d5 d6 d7 d8");                      /* "yes" */
    expect(m, fleaf(F_PUB, RCP_OP_EQ, &june, 1), "d0 d1 d2 d3"); /* instants */
    expect(m, fleaf(F_PUB, RCP_OP_GT, &june, 1), "");
    expect(m, fleaf(F_PUB, RCP_OP_NE, &june, 1), "d4 d5 d6 d7 d8");
    k[0] = fleaf(F_LANG, RCP_OP_EQ, &en, 1);
    k[1] = fleaf(F_YEAR, RCP_OP_EQ, &y1999, 1);
    expect(m, fnode(RCP_FILTER_AND, k, 2), "d0");
    or2[0] = fleaf(F_LANG, RCP_OP_EQ, &de, 1);
    or2[1] = fleaf(F_YEAR, RCP_OP_LT, &y1995, 1);
    expect(m, fnode(RCP_FILTER_OR, or2, 2), "d1 d3");
    k[2] = fleaf(F_TAGS, RCP_OP_EXISTS, &t, 1);
    expect(m, fnode(RCP_FILTER_NOT, &k[2], 1), "d4 d5 d6 d7 d8");
    k[0] = fnode(RCP_FILTER_OR, or2, 2);
    expect(m, fnode(RCP_FILTER_NOT, k, 1), "d0 d2 d4 d5 d6 d7 d8");
    rcp_model_free(m);
}
END_TEST

/* MARK: - §7.8 the vocabulary, for query/transform ----------------------- */

START_TEST(vocabulary_df_knows_a_word_whose_stem_is_as_long_as_it)
{
    /* "density" stems to "densiti", seven bytes too: the lexicon's fast
    ** path once took the word for its term when the lengths agreed, so
    ** the index "had no" density (RM3 and the reranker missed it) */
    rcp_model *m = new_model(0);
    add(m, "a", "low density flow");
    add(m, "b", "density of the gas and the flow");
    ck_assert_int_eq(rcp_model_df(m, "density", 7), 2);
    ck_assert_int_eq(rcp_model_df(m, "DENSITY", 7), 2);
    ck_assert_int_eq(rcp_model_df(m, "flows", 5), 2);   /* its stem, flow */
    ck_assert_int_eq(rcp_model_df(m, "gas", 3), 1);
    ck_assert_int_eq(rcp_model_df(m, "plasma", 6), 0);
    ck_assert_int_eq(rcp_model_df(m, "the", 3), -1);    /* a stopword */
    rcp_model_free(m);
}
END_TEST

/* The reference the columns are checked against: read the meta afresh
** for every document and evaluate the tree on it (what rcp.c did before
** the engine kept typed values), with a linear in-list and a naive
** substring search. */
static const rcp_json *ref_value(const rcp_json *meta, const rcp_field *fd)
{
    const rcp_json *v = NULL;
    size_t i;
    for (i = 0; meta && meta->type == RCP_JSON_OBJECT && i < meta->n; i++)
        if (meta->kids[i].keylen == fd->namelen
            && !memcmp(meta->kids[i].key, fd->name, fd->namelen))
            v = meta->kids[i].type == RCP_JSON_NULL ? NULL : &meta->kids[i];
    return v;
}

static int ref_cmp(rcp_field_type t, const rcp_model_value *a,
                   const rcp_model_value *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c;
    if (t == RCP_FIELD_KEYWORD || t == RCP_FIELD_TEXT) {
        c = n ? memcmp(a->s, b->s, n) : 0;
        return c ? c : (a->len > b->len) - (a->len < b->len);
    }
    if (t == RCP_FIELD_INT || t == RCP_FIELD_FLOAT)
        return (a->num > b->num) - (a->num < b->num);
    return (a->ms > b->ms) - (a->ms < b->ms);
}

static int ref_scalar(rcp_field_type t, int op, const rcp_json *dv,
                      const rcp_model_filter *f)
{
    rcp_model_value x;
    size_t i, j;
    int c;
    if (rcp_model_value_of(t, dv, &x))
        return 0;
    if (op == RCP_OP_IN) {
        for (i = 0; i < f->nvalues; i++)
            if (ref_cmp(t, &x, &f->values[i]) == 0)
                return 1;
        return 0;
    }
    if (op == RCP_OP_CONTAINS) {
        const rcp_model_value *nd = &f->values[0];
        if (t != RCP_FIELD_TEXT)
            return 0;
        for (i = 0; i + nd->len <= x.len; i++) {
            for (j = 0; j < nd->len && x.s[i + j] == nd->s[j]; j++)
                ;
            if (j == nd->len)
                return 1;
        }
        return 0;
    }
    c = ref_cmp(t, &x, &f->values[0]);
    return op == RCP_OP_EQ ? c == 0 : op == RCP_OP_GT ? c > 0
         : op == RCP_OP_GTE ? c >= 0 : op == RCP_OP_LT ? c < 0 : c <= 0;
}

static int ref_match(const rcp_json *meta, const rcp_model_filter *f)
{
    const rcp_json *dv;
    rcp_field_type t;
    size_t i;
    int op, neg, hit = 0;
    if (f->kind != RCP_FILTER_LEAF) {
        for (i = 0; i < f->nkids; i++) {
            int r = ref_match(meta, &f->kids[i]);
            if (f->kind == RCP_FILTER_NOT)
                return !r;
            if (f->kind == RCP_FILTER_AND ? !r : r)
                return r;
        }
        return f->kind == RCP_FILTER_AND;
    }
    dv = ref_value(meta, &ffields[f->field]);
    t = ffields[f->field].type;
    if (f->op == RCP_OP_EXISTS)
        return (dv != NULL) == (f->values[0].ms == 1);
    neg = f->op == RCP_OP_NE || f->op == RCP_OP_NIN;
    if (!dv)
        return neg;
    op = f->op == RCP_OP_NE ? RCP_OP_EQ : f->op == RCP_OP_NIN ? RCP_OP_IN
                                                               : f->op;
    if (dv->type == RCP_JSON_ARRAY)
        for (i = 0; i < dv->n && !hit; i++)
            hit = ref_scalar(t, op == RCP_OP_CONTAINS ? RCP_OP_EQ : op,
                             &dv->kids[i], f);
    else
        hit = ref_scalar(t, op, dv, f);
    return neg ? !hit : hit;
}

/* Random metas and trees drawn from small pools, so that they meet. */
static uint64_t frng = 0x243F6A8885A308D3ULL;
static unsigned frand(unsigned n)
{
    frng ^= frng << 13;
    frng ^= frng >> 7;
    frng ^= frng << 17;
    return (unsigned)(frng % n);
}

static const char *const fstrs[] = { "a", "b", "en", "de", "Shock", "hock",
                                     "", "Shock Waves", "ab" };
static const double fnums[] = { 1990, 1999, 2005, 2010, 0.5, -1000, 0 };
static const char *const fdates[] = { "\"2017-06-12T00:00:00Z\"",
    "\"2017-06-12\"", "1497225600000", "\"2017-06-13T01:00:00+01:00\"",
    "\"2017-06-11T23:59:59.999Z\"", "\"bad\"" };
static const int64_t fdate_ms[] = { JUNE12, JUNE12 + 86400000LL,
                                    JUNE12 - 1 };

/* One JSON value for field f: a scalar of its type, another type, null,
** or an array of those. */
static void rand_value(size_t f, char *out, size_t cap, int depth)
{
    unsigned r = frand(10);
    size_t i, n;
    rcp_field_type t = ffields[f].type;
    if (r == 0) {
        snprintf(out, cap, "null");
    } else if (r == 1) {
        snprintf(out, cap, t == RCP_FIELD_KEYWORD || t == RCP_FIELD_TEXT
                               ? "7" : "\"x\"");
    } else if (r <= 3 && depth == 0) {
        n = frand(4);
        snprintf(out, cap, "[");
        for (i = 0; i < n; i++) {
            char el[128];
            rand_value(f, el, sizeof el, 1);
            strncat(out, i ? "," : "", cap - strlen(out) - 1);
            strncat(out, el, cap - strlen(out) - 1);
        }
        strncat(out, "]", cap - strlen(out) - 1);
    } else if (t == RCP_FIELD_KEYWORD || t == RCP_FIELD_TEXT) {
        snprintf(out, cap, "\"%s\"", fstrs[frand(9)]);
    } else if (t == RCP_FIELD_INT || t == RCP_FIELD_FLOAT) {
        snprintf(out, cap, "%.17g", fnums[frand(7)]);
    } else if (t == RCP_FIELD_BOOL) {
        snprintf(out, cap, frand(2) ? "true" : "false");
    } else {
        snprintf(out, cap, "%s", fdates[frand(6)]);
    }
}

static void rand_meta(char *out, size_t cap)
{
    size_t f, rep;
    if (frand(12) == 0) {
        snprintf(out, cap, frand(2) ? "[1]" : "{\"lang\":");
        return;
    }
    snprintf(out, cap, "{\"other\":1");
    for (f = 0; f < NFIELDS; f++)
        for (rep = frand(5) == 0 ? 2 : 1; rep > 0 && frand(4); rep--) {
            char v[512];
            rand_value(f, v, sizeof v, 0);
            snprintf(out + strlen(out), cap - strlen(out), ",\"%s\":%s",
                     ffields[f].name, v);
        }
    strncat(out, "}", cap - strlen(out) - 1);
}

/* A random tree of at most depth levels in nodes[*used..]. */
static rcp_model_filter rand_tree(rcp_model_filter *nodes, size_t *used,
                                  rcp_model_value *vals, size_t *nv,
                                  int depth)
{
    static const int ordered[] = { F_YEAR, F_SCORE, F_PUB };
    unsigned r = frand(depth ? 6 : 1);
    size_t i, n, f;
    int op;
    if (r == 1 || r == 2) {
        rcp_model_filter *k = nodes + *used;
        n = 1 + frand(3);
        *used += n;
        for (i = 0; i < n; i++)
            k[i] = rand_tree(nodes, used, vals, nv, depth - 1);
        return fnode(r == 1 ? RCP_FILTER_AND : RCP_FILTER_OR, k, n);
    }
    if (r == 3) {
        rcp_model_filter *k = nodes + (*used)++;
        *k = rand_tree(nodes, used, vals, nv, depth - 1);
        return fnode(RCP_FILTER_NOT, k, 1);
    }
    op = (int)frand(10);
    f = op >= RCP_OP_GT && op <= RCP_OP_LTE ? (size_t)ordered[frand(3)]
                                            : frand(NFIELDS);
    n = op == RCP_OP_IN || op == RCP_OP_NIN ? frand(4) : 1;
    for (i = 0; i < n; i++) {
        rcp_field_type t = ffields[f].type;
        rcp_model_value *v = &vals[*nv + i];
        if (op == RCP_OP_EXISTS || t == RCP_FIELD_BOOL)
            *v = vi(frand(2));
        else if (t == RCP_FIELD_KEYWORD || t == RCP_FIELD_TEXT)
            *v = vs(fstrs[frand(9)]);
        else if (t == RCP_FIELD_DATE)
            *v = vi(fdate_ms[frand(3)]);
        else
            *v = vn(fnums[frand(7)]);
    }
    *nv += n;
    return fleaf(f, op, &vals[*nv - n], n);
}

/* The ids the reference passes among the documents visible at v. */
static const char *ref_passing(const rcp_model *m, char (*ids)[16],
                               char (*metas)[2048], size_t nd,
                               const rcp_model_filter *f)
{
    static char out[4096];
    rcp_arena a;
    size_t i;
    out[0] = 0;
    rcp_arena_init(&a, 0);
    for (i = 0; i < nd; i++) {       /* ids are sorted */
        rcp_json_err e;
        const rcp_json *meta = rcp_json_parse(&a, metas[i],
                                              strlen(metas[i]), 0, &e);
        (void)m;
        if (ref_match(meta, f)) {
            if (*out)
                strcat(out, " ");
            strcat(out, ids[i]);
        }
        rcp_arena_reset(&a);
    }
    rcp_arena_free(&a);
    return out;
}

START_TEST(typed_filters_agree_with_reading_each_meta_afresh)
{
    /* 400 random trees against 60 random metas, in every recall mode:
    ** the compiled bitmap passes exactly what evaluating the tree on each
    ** document's meta, parsed anew, passes -- also after upserts
    ** renumbered the documents, and for a pinned version */
    static char ids[60][16], metas[60][2048], old[60][2048];
    rcp_model *m = field_model(1024);
    rcp_model_filter nodes[128], f;
    rcp_model_value vals[256];
    size_t i, used, nv;
    uint64_t v = 0;
    int round, t, mode;
    for (round = 0; round < 2; round++) {
        for (i = 0; i < 60; i++) {
            snprintf(ids[i], sizeof ids[i], "r%02u", (unsigned)i);
            memcpy(old[i], metas[i], sizeof metas[i]);
            rand_meta(metas[i], sizeof metas[i]);
            add_meta(m, ids[i], "doc text", metas[i]);
        }
        if (round == 0)
            v = rcp_model_version(m);
        for (t = 0; t < 200; t++) {
            used = nv = 0;
            f = rand_tree(nodes, &used, vals, &nv, 3);
            for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_HYBRID; mode++)
                ck_assert_str_eq(passing(m, &f, mode, 0),
                                 ref_passing(m, ids, metas, 60, &f));
            if (round == 1)         /* the first round's documents */
                ck_assert_str_eq(passing(m, &f, RCP_MODE_SPARSE, v),
                                 ref_passing(m, ids, old, 60, &f));
        }
    }
    rcp_model_free(m);
}
END_TEST

START_TEST(vocabulary_correct_finds_the_nearest_live_spelling)
{
    char out[64];
    rcp_model *m = new_model(0);
    add(m, "a", "supersonic shock waves");
    add(m, "b", "subsonic flow");
    ck_assert_int_eq(rcp_model_correct(m, "supersonc", 9, out, sizeof out),
                     10);
    ck_assert_str_eq(out, "supersonic");
    /* known, too short, or nothing near: no correction */
    ck_assert_int_eq(rcp_model_correct(m, "shock", 5, out, sizeof out), 0);
    ck_assert_int_eq(rcp_model_correct(m, "wav", 3, out, sizeof out), 0);
    ck_assert_int_eq(rcp_model_correct(m, "zyxwvut", 7, out, sizeof out), 0);
    /* a deleted document's words are no longer the vocabulary's */
    ck_assert_int_eq(rcp_model_delete(m, "a", 1), 1);
    ck_assert_int_eq(rcp_model_correct(m, "supersonc", 9, out, sizeof out),
                     0);
    rcp_model_free(m);
}
END_TEST

START_TEST(a_pinned_version_filters_its_documents_as_they_were)
{
    /* §7.7.1 with §8: values are per docno, so the version before an
    ** upsert filters the old meta, the live index the new one */
    rcp_model *m = field_model(64);
    rcp_model_value en = vs("en"), de = vs("de");
    rcp_model_filter isen = fleaf(F_LANG, RCP_OP_EQ, &en, 1);
    rcp_model_filter isde = fleaf(F_LANG, RCP_OP_EQ, &de, 1);
    uint64_t v;
    add_meta(m, "a", "a doc", "{\"lang\":\"en\",\"tags\":[\"alpha\"],"
             "\"title\":\"a title longer than a cell\"}");
    add_meta(m, "b", "b doc", "{\"lang\":\"de\",\"tags\":[\"b\",\"c\"]}");
    v = rcp_model_version(m);
    add_meta(m, "a", "a doc", "{\"lang\":\"de\",\"tags\":[\"delta\",\"e\"],"
             "\"title\":\"another title, in the pool\"}");
    ck_assert_int_eq(del(m, "b"), 1);
    ck_assert_str_eq(passing(m, &isen, RCP_MODE_SPARSE, v), "a");
    ck_assert_str_eq(passing(m, &isde, RCP_MODE_DENSE, v), "b");
    ck_assert_str_eq(passing(m, &isen, RCP_MODE_HYBRID, 0), "");
    ck_assert_str_eq(passing(m, &isde, RCP_MODE_SPARSE, 0), "a");
    ck_assert_int_eq(roll(m, v), 0);                /* and back */
    ck_assert_str_eq(passing(m, &isen, RCP_MODE_SPARSE, 0), "a");
    ck_assert_str_eq(passing(m, &isde, RCP_MODE_DENSE, 0), "b");
    rcp_model_free(m);
}
END_TEST

START_TEST(filtered_values_survive_the_reclaiming_of_documents)
{
    /* compaction renumbers documents: their cells move with them, the
    ** pools of elements and longer strings are packed behind them, and a
    ** dropped document's values go with its text -- so memory stays flat
    ** under upsert churn with values too (issue 8's promise) */
    rcp_model *m;
    rcp_model_value y = vn(7), tag = vs("tag number 3"), title = vs("conic");
    rcp_model_filter f[3];
    rcp_model_stats st;
    size_t shrank = 0, slots = 0, warm = 0;
    unsigned long k;
    char id[16], meta[160];
    HELD = 0;
    rcp_set_allocator(counting_alloc, NULL);
    m = field_model(8);
    f[0] = fleaf(F_YEAR, RCP_OP_EQ, &y, 1);
    f[1] = fleaf(F_TAGS, RCP_OP_EQ, &tag, 1);
    f[2] = fleaf(F_TITLE, RCP_OP_CONTAINS, &title, 1);
    add_meta(m, "keep", "doc kept", "{\"year\":7,\"tags\":[\"x\",\"y\"],"
             "\"title\":\"a title longer than a cell\"}");
    for (k = 0; k < 4000; k++) {
        snprintf(id, sizeof id, "c%lu", k % 10);
        snprintf(meta, sizeof meta, "{\"year\":%lu,\"tags\":[\"tag number "
                 "%lu\",\"t\"],\"title\":\"the conical revision %lu\"}",
                 k % 7, k % 10, k);
        ck_assert_int_eq(rcp_model_add(m, id, strlen(id), "doc churn", 9,
                                       meta, strlen(meta)), 0);
        if (k % 7 == 0)
            check_flags(m, 0);
        rcp_model_stat(m, &st);
        shrank += st.slots < slots;
        slots = st.slots;
        if (k == 1999)
            warm = HELD;
    }
    check(m);
    ck_assert_uint_ge(shrank, 1);
    ck_assert_msg(HELD <= 2 * warm, "held %lu bytes after 4000 upserts, %lu "
                  "after 2000", (unsigned long)HELD, (unsigned long)warm);
    ck_assert_str_eq(passing(m, &f[0], RCP_MODE_SPARSE, 0), "keep");
    ck_assert_str_eq(passing(m, &f[1], RCP_MODE_DENSE, 0), "c3");
    ck_assert_str_eq(passing(m, &f[2], RCP_MODE_HYBRID, 0),
                     "c0 c1 c2 c3 c4 c5 c6 c7 c8 c9");
    rcp_model_free(m);
    rcp_set_allocator(NULL, NULL);
    ck_assert_uint_eq(HELD, 0);
}
END_TEST

START_TEST(filtered_dense_recall_is_the_exact_top_k_of_what_passes)
{
    /* the filter keeps the SIMD scan: its hits are the best k by cosine,
    ** then id, among the documents that pass, as a brute force finds */
    rcp_model *m = field_model(0);
    rcp_model_value y = vn(1);
    rcp_model_filter f = fleaf(F_YEAR, RCP_OP_EQ, &y, 1);
    rcp_model_query q;
    rcp_model_hit h[10];
    float qv[16];
    double best[300], t;
    size_t n, i, j, nb = 0;
    char id[16], meta[32], text[64];
    for (i = 0; i < 300; i++) {
        snprintf(id, sizeof id, "%03u", (unsigned)i);
        snprintf(meta, sizeof meta, "{\"year\":%u}", (unsigned)(i % 3));
        snprintf(text, sizeof text, "doc %s flow w%u", i % 5 ? "shock" : "",
                 (unsigned)(i % 17));
        ck_assert_int_eq(rcp_model_add(m, id, 3, text, strlen(text), meta,
                                       strlen(meta)), 0);
    }
    check(m);
    rcp_model_query_init(&q);
    q.text = "shock flow w3";
    q.len = strlen(q.text);
    q.k = 10;
    q.mode = RCP_MODE_DENSE;
    q.filter = &f;
    q.no_confidence = 1;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_uint_eq(n, 10);
    embed(m, q.text, qv);
    for (i = 0; i < 300; i++) {             /* every passing cosine */
        rcp_model_docview d;
        ck_assert_int_eq(rcp_model_doc(m, (uint32_t)i, &d), 0);
        if (atoi(d.id) % 3 != 1)
            continue;
        for (t = 0, j = 0; j < 16; j++)
            t += (double)qv[j] * d.vector[j];
        for (j = nb++; j > 0 && best[j - 1] < t; j--)
            best[j] = best[j - 1];
        best[j] = t;
    }
    for (i = 0; i < n; i++) {
        rcp_model_docview d;
        ck_assert_int_eq(rcp_model_doc(m, h[i].doc, &d), 0);
        ck_assert_int_eq(atoi(d.id) % 3, 1);
        ck_assert_msg(fabs(h[i].score - best[i]) < 1e-5, "hit %u: %g, "
                      "brute force %g", (unsigned)i, h[i].score, best[i]);
        if (i && h[i].score == h[i - 1].score)
            ck_assert_int_lt(strcmp(hit_id(m, &h[i - 1]), d.id), 0);
    }
    rcp_model_free(m);
}
END_TEST

START_TEST(a_filter_outside_its_rules_is_invalid)
{
    rcp_model *m = fdocs_model();
    rcp_model_value en = vs("en"), two = vi(2), y = vn(1);
    rcp_model_filter bad[9], kids[2], *deep;
    rcp_model_query q;
    rcp_model_hit h[4];
    size_t n, i;
    bad[0] = fleaf(NFIELDS, RCP_OP_EQ, &en, 1);          /* no such field */
    bad[1] = fleaf(F_LANG, 10, &en, 1);                  /* no such op */
    bad[2] = fleaf(F_LANG, RCP_OP_GT, &en, 1);           /* not ordered */
    bad[3] = fleaf(F_LANG, RCP_OP_EQ, &en, 2);           /* two values */
    bad[4] = fleaf(F_LANG, RCP_OP_EXISTS, &two, 1);      /* not a bool */
    bad[5] = fleaf(F_LANG, RCP_OP_IN, NULL, 3);          /* no list */
    kids[0] = kids[1] = fleaf(F_YEAR, RCP_OP_EQ, &y, 1);
    bad[6] = fnode(RCP_FILTER_NOT, kids, 2);
    bad[7] = fnode(RCP_FILTER_AND, kids, 0);
    bad[8] = fnode(7, kids, 1);
    rcp_model_query_init(&q);
    q.text = "doc";
    q.len = 3;
    q.k = 4;
    for (i = 0; i < 9; i++) {
        q.filter = &bad[i];
        ck_assert_msg(rcp_model_search(m, &q, h, &n) == RCP_MODEL_INVALID,
                      "bad filter %u passed", (unsigned)i);
    }
    /* nesting: RCP_MODEL_FILTER_DEPTH levels pass, one more is refused */
    deep = malloc((RCP_MODEL_FILTER_DEPTH + 1) * sizeof *deep);
    ck_assert_ptr_nonnull(deep);
    deep[RCP_MODEL_FILTER_DEPTH] = kids[0];
    for (i = RCP_MODEL_FILTER_DEPTH; i-- > 0;)
        deep[i] = fnode(RCP_FILTER_NOT, &deep[i + 1], 1);
    q.filter = &deep[1];
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    q.filter = &deep[0];
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), RCP_MODEL_INVALID);
    free(deep);
    check(m);
    rcp_model_free(m);
}
END_TEST

START_TEST(declared_fields_are_copied_and_must_be_distinct)
{
    rcp_model_opts o;
    rcp_field fs[2];
    char name[8], err[128];
    const rcp_field *got;
    rcp_model *m;
    size_t n;
    rcp_model_opts_init(&o);
    strcpy(name, "year");
    fs[0].name = name;
    fs[0].namelen = 4;
    fs[0].type = RCP_FIELD_INT;
    fs[1] = fs[0];
    o.fields = fs;
    o.nfields = 2;
    ck_assert_ptr_null(rcp_model_new(&o, err, sizeof err));
    ck_assert_str_eq(err, "field 'year' is declared twice");
    fs[1].type = (rcp_field_type)9;
    fs[1].name = "x";
    fs[1].namelen = 1;
    ck_assert_ptr_null(rcp_model_new(&o, err, sizeof err));
    fs[1].type = RCP_FIELD_DATE;
    o.nfields = RCP_MODEL_MAX_FIELDS + 1;
    ck_assert_ptr_null(rcp_model_new(&o, err, sizeof err));
    o.nfields = 2;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_ptr_nonnull(m);
    strcpy(name, "gone");                   /* the model kept its copy */
    got = rcp_model_fields(m, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(got[0].name, "year");
    ck_assert_int_eq(got[1].type, RCP_FIELD_DATE);
    add_meta(m, "a", "doc", "{\"year\":3,\"x\":\"2020-02-29\"}");
    rcp_model_free(m);
}
END_TEST

START_TEST(value_of_reads_the_section_8_table)
{
    static const struct { int type; const char *json; int ok;
                          double num; int64_t ms; } t[] = {
        { RCP_FIELD_INT, "2.5", 1, 2.5, 0 },
        { RCP_FIELD_FLOAT, "-1e3", 1, -1000, 0 },
        { RCP_FIELD_INT, "\"3\"", 0, 0, 0 },
        { RCP_FIELD_BOOL, "true", 1, 0, 1 },
        { RCP_FIELD_BOOL, "0", 0, 0, 0 },
        { RCP_FIELD_KEYWORD, "3", 0, 0, 0 },
        { RCP_FIELD_DATE, "\"1970-01-01\"", 1, 0, 0 },
        { RCP_FIELD_DATE, "\"2017-06-12T00:00:00Z\"", 1, 0, JUNE12 },
        { RCP_FIELD_DATE, "\"2017-06-12t02:00:00.5+02:00\"", 1, 0,
          JUNE12 + 500 },
        { RCP_FIELD_DATE, "\"2017-06-11T19:00:00-05:00\"", 1, 0, JUNE12 },
        { RCP_FIELD_DATE, "1497225600000", 1, 0, JUNE12 },
        { RCP_FIELD_DATE, "1.5", 0, 0, 0 },
        { RCP_FIELD_DATE, "\"2000-02-29\"", 1, 0, 951782400000LL },
        { RCP_FIELD_DATE, "\"1900-02-29\"", 0, 0, 0 },
        { RCP_FIELD_DATE, "\"2017-06-12T00:00:00\"", 0, 0, 0 },
        { RCP_FIELD_DATE, "\"2017-13-01\"", 0, 0, 0 },
        { RCP_FIELD_DATE, "\"1969-12-31T23:59:59Z\"", 1, 0, -1000 },
    };
    rcp_arena a;
    size_t i;
    rcp_arena_init(&a, 0);
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        rcp_model_value v;
        const rcp_json *j = rcp_json_parse(&a, t[i].json, strlen(t[i].json),
                                           0, NULL);
        ck_assert_ptr_nonnull(j);
        ck_assert_msg((rcp_model_value_of((rcp_field_type)t[i].type, j, &v)
                       == 0) == t[i].ok, "%s", t[i].json);
        if (t[i].ok)
            ck_assert_msg(v.num == t[i].num && v.ms == t[i].ms, "%s: %g %lld",
                          t[i].json, v.num, (long long)v.ms);
    }
    {
        rcp_model_value v;
        ck_assert_int_eq(rcp_model_value_of(RCP_FIELD_TEXT, NULL, &v), -1);
    }
    rcp_arena_free(&a);
}
END_TEST

START_TEST(filtered_adds_and_searches_fail_cleanly_out_of_memory)
{
    /* every allocation of an add with values and of a filtered search
    ** can fail: -1, the model as it was, nothing leaked (ASan) */
    rcp_model_value en = vs("en"), tags[2];
    rcp_model_filter kids[2], f;
    long k;
    int ok = 0;
    tags[0] = vs("b");
    tags[1] = vs("a");
    kids[0] = fleaf(F_LANG, RCP_OP_NE, &en, 1);
    kids[1] = fleaf(F_TAGS, RCP_OP_IN, tags, 2);
    f = fnode(RCP_FILTER_AND, kids, 2);
    for (k = 0; k < 600 && !ok; k++) {
        rcp_model *m = fdocs_model();
        rcp_model_query q;
        rcp_model_hit h[9];
        size_t n = 0, before = rcp_model_count(m);
        const char *meta = "{\"tags\":[\"a\",\"q\"],\"title\":\"zz\"}";
        rcp_set_allocator(failing_alloc, NULL);
        fail_after = k;
        ok = rcp_model_add(m, "z", 1, "doc z", 5, meta, strlen(meta)) == 0;
        rcp_model_query_init(&q);
        q.text = "doc";
        q.len = 3;
        q.k = 9;
        q.filter = &f;
        q.mode = (int)(k % 3);      /* the bitmap's path and the lazy one */
        ok = (rcp_model_search(m, &q, h, &n) == 0) && ok;
        fail_after = -1;
        rcp_set_allocator(NULL, NULL);
        check(m);
        if (rcp_model_find(m, "z", 1) < 0)
            ck_assert_uint_eq(rcp_model_count(m), before);
        ck_assert_str_eq(passing(m, &f, RCP_MODE_SPARSE, 0),
                         rcp_model_find(m, "z", 1) < 0 ? "d1 d3"
                                                       : "d1 d3 z");
        rcp_model_free(m);
    }
    ck_assert_msg(ok, "never succeeded: the bound is too small");
}
END_TEST

/* MARK: - the invariant checker */

/* A model with something of every kind: live, upserted, deleted and
** retained documents, a chunk chain, a lexicon, several versions, §8
** values. */
static rcp_model *varied_model(void)
{
    rcp_model *m = field_model(1024);
    add_meta(m, "a", "shock waves in a boundary layer",
             "{\"lang\":\"en\",\"tags\":[\"x\",\"y\"]}");
    add_meta(m, "b", "heat transfer at the leading edge",
             "{\"year\":1999}");
    add(m, "a", "shock waves, revised");
    add_part(m, "p#0", "first part ", "p", 0, 0);
    add_part(m, "p#1", "second part", "p", 1, 11);
    ck_assert_int_eq(del(m, "b"), 1);
    return m;
}

START_TEST(the_checker_sees_every_kind_of_damage)
{
    /* GUIDE rule 6: rcp_model_check passes on a sound model (every test
    ** here calls it after every change) and fails on each invariant
    ** broken on purpose, naming it */
    int what;
    for (what = 0; what < MODEL_BREAK_KINDS; what++) {
        rcp_model *m = varied_model();
        char err[256];
        ck_assert_int_eq(rcp_model_check(m, RCP_MODEL_CHECK_TEXTS, err,
                                         sizeof err), 0);
        ck_assert_str_eq(err, "");
        ck_assert_int_eq(model_break(m, what), 0);
        ck_assert_msg(rcp_model_check(m, RCP_MODEL_CHECK_TEXTS, err,
                                      sizeof err) == -1,
                      "damage %d went unseen", what);
        ck_assert_msg(err[0] != 0, "damage %d: no message", what);
        if (what != MODEL_BREAK_ROW)    /* only the texts show a row */
            ck_assert_int_eq(rcp_model_check(m, 0, err, sizeof err), -1);
        rcp_model_free(m);
    }
    {
        rcp_model *m = new_model(8);
        ck_assert_int_eq(model_break(m, MODEL_BREAK_KINDS), -1);
        rcp_model_free(m);
    }
}
END_TEST

START_TEST(entry_points_refuse_bad_input_and_change_nothing)
{
    /* GUIDE rule 6: input is validated and answered with an error, the
    ** model as it was (the asserts are for the model's own state) */
    rcp_model *m = varied_model();
    rcp_model_query q;
    rcp_model_hit h[4];
    uint64_t v = rcp_model_version(m);
    float vec[16];
    size_t n = 9;
    ck_assert_int_eq(rcp_model_add(m, NULL, 3, "text", 4, NULL, 0), -1);
    ck_assert_int_eq(rcp_model_add(m, "x", 1, NULL, 4, NULL, 0), -1);
    ck_assert_int_eq(rcp_model_add(m, "x", 1, "text", 4, NULL, 2), -1);
    ck_assert_int_eq(rcp_model_delete(m, NULL, 1), -1);
    ck_assert_int_eq(rcp_model_embed(m, NULL, 3, RCP_KIND_QUERY, vec), -1);
    ck_assert_int_eq(rcp_model_doc(m, 0, NULL), -1);
    ck_assert_int_eq(rcp_model_find(m, NULL, 1), -1);
    rcp_model_query_init(&q);
    q.text = "shock";
    q.len = 5;
    q.k = 4;
    ck_assert_int_eq(rcp_model_search(m, &q, NULL, &n), -1);
    q.mode = 7;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), RCP_MODEL_INVALID);
    ck_assert_uint_eq(n, 0);
    q.mode = RCP_MODE_HYBRID;
    q.mmr_lambda = 1.5;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), RCP_MODEL_INVALID);
    q.mmr_lambda = nan("");
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), RCP_MODEL_INVALID);
    q.mmr_lambda = -1;
    q.text = NULL;
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), RCP_MODEL_INVALID);
    q.text = "shock";
    ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
    ck_assert_uint_ge(n, 1);
    ck_assert(rcp_model_version(m) == v);
    check(m);
    rcp_model_free(m);
}
END_TEST

START_TEST(vocabulary_expand_gives_the_feedback_documents_words)
{
    rcp_model_term t[8];
    size_t n, i;
    rcp_model *m = new_model(0);
    add(m, "a", "shock waves in supersonic flow");
    add(m, "b", "shock tube experiments");
    add(m, "c", "wing flutter");
    ck_assert_int_eq(rcp_model_expand(m, "shock", 5, t, 8, &n), 0);
    ck_assert_uint_ge(n, 3);
    for (i = 0; i < n; i++) {
        ck_assert_str_ne(t[i].word, "shock");       /* not the query's */
        ck_assert_str_ne(t[i].word, "wing");        /* not fed back */
        ck_assert_str_ne(t[i].word, "flutter");
        ck_assert(t[i].weight > 0 && t[i].df >= 1);
        ck_assert(i == 0 || t[i].weight <= t[i - 1].weight);
    }
    ck_assert_int_eq(rcp_model_expand(m, "shock", 5, t, 0, &n), 0);
    ck_assert_uint_eq(n, 0);
    rcp_model_free(m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("embed");
    tcase_add_test(tc,
        embed_is_deterministic_unit_length_and_names_its_identity);
    tcase_add_test(tc, embed_counts_every_word_beyond_the_stopwords);
    tcase_add_test(tc, vocabulary_df_knows_a_word_whose_stem_is_as_long_as_it);
    tcase_add_test(tc, vocabulary_correct_finds_the_nearest_live_spelling);
    tcase_add_test(tc, vocabulary_expand_gives_the_feedback_documents_words);
    tcase_add_test(tc, embed_is_independent_of_the_corpus);
    tcase_add_test(tc,
                   indexed_vectors_are_exactly_the_embedding_of_their_text);
    tcase_add_test(tc, without_a_dense_index_sparse_search_is_unchanged);
    tcase_add_test(tc, embed_is_robust_to_typos_and_morphology);
    tcase_add_test(tc, embed_of_text_without_words_is_the_zero_vector);
    tcase_add_test(tc, static_word_vectors_load_and_identity_follows_content);
    tcase_add_test(tc,
        static_word_vectors_reject_a_malformed_file_with_its_line);
    suite_add_tcase(s, tc);
    tc = tcase_create("lsa");
    tcase_add_test(tc, lsa_relates_words_only_their_company_relates);
    tcase_add_test(tc,
        lsa_training_is_deterministic_and_its_identity_names_the_corpus);
    tcase_add_test(tc,
        lsa_folds_new_documents_in_and_retrains_when_the_corpus_doubles);
    tcase_add_test(tc, a_rollback_across_a_training_keeps_the_model_whole);
    tcase_add_test(tc, lsa_learns_from_an_even_sample_of_a_large_corpus);
    tcase_add_test(tc,
        lsa_with_nothing_to_learn_keeps_hashing_and_is_no_error);
    tcase_add_test(tc, the_hashed_embedder_never_learns);
    suite_add_tcase(s, tc);
    tc = tcase_create("index");
    tcase_add_test(tc, bm25_matches_hand_computed_scores);
    tcase_add_test(tc, every_word_of_a_document_finds_it_by_sparse_search);
    tcase_add_test(tc, bm25_after_delete_and_upsert_equals_a_fresh_index);
    tcase_add_test(tc, a_query_of_stopwords_only_retrieves_by_its_words);
    tcase_add_test(tc, stopword_postings_leave_every_other_score_unchanged);
    tcase_add_test(tc, a_stopword_only_document_upserts_and_deletes);
    tcase_add_test(tc, add_with_an_existing_id_replaces_never_duplicates);
    tcase_add_test(tc, delete_is_idempotent_and_counts_only_removals);
    tcase_add_test(tc, many_deletes_sweep_postings_and_keep_results);
    tcase_add_test(tc, equal_scores_rank_by_smaller_id);
    tcase_add_test(tc,
        every_mode_answers_an_empty_index_and_a_query_without_matches);
    tcase_add_test(tc, dense_ties_wider_than_the_scan_keep_the_id_order);
    tcase_add_test(tc,
        dense_recall_by_the_8bit_scan_finds_99_percent_of_the_exact);
    tcase_add_test(tc,
        the_8bit_copy_follows_upserts_deletes_compaction_and_rollback);
    tcase_add_test(tc,
        dense_ties_wider_than_the_8bit_candidates_keep_the_id_order);
    tcase_add_test(tc, dense_recall_finds_misspelt_queries_that_bm25_misses);
    tcase_add_test(tc, hybrid_search_fuses_both_legs_and_reports_stage_scores);
    tcase_add_test(tc,
        hybrid_feedback_expands_the_lexical_query_from_the_top_hits);
    tcase_add_test(tc, feedback_expands_with_a_stem_as_long_as_its_word);
    tcase_add_test(tc, hybrid_default_fusion_weights_the_dense_leg_down);
    tcase_add_test(tc, add_and_search_fail_cleanly_when_memory_runs_out);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("stages");
    tcase_add_test(tc,
        sparse_embedding_has_ascending_ids_inside_the_vocabulary);
    tcase_add_test(tc,
        multi_vector_gives_one_unit_row_per_content_token_in_context);
    tcase_add_test(tc,
        cross_encoder_rewards_proximity_near_matches_and_coverage);
    tcase_add_test(tc, colbert_rerank_is_maxsim_over_multi_vectors);
    tcase_add_test(tc,
        confidence_is_in_unit_range_and_independent_of_the_corpus);
    tcase_add_test(tc, confidence_reads_passages_the_same_after_indexing);
    tcase_add_test(tc, search_hits_carry_confidence_and_rerank_scores);
    tcase_add_test(tc, rerank_cascade_interpolates_with_the_recall_score);
    tcase_add_test(tc, mmr_trades_relevance_for_novelty);
    tcase_add_test(tc,
        search_checkpoint_reports_rising_progress_and_can_stop_it);
    suite_add_tcase(s, tc);
    tc = tcase_create("snapshots");
    tcase_add_test(tc, a_pinned_version_serves_the_results_it_served_then);
    tcase_add_test(tc,
                   rollback_serves_exactly_what_the_model_served_at_that_version);
    tcase_add_test(tc, rollback_after_a_sweep_gives_up_thinned_snapshots);
    tcase_add_test(tc, rollback_out_of_memory_changes_nothing);
    tcase_add_test(tc,
        an_upserted_document_reads_as_it_was_at_the_pinned_version);
    tcase_add_test(tc, an_expired_or_future_version_is_gone);
    tcase_add_test(tc, sweeping_keeps_what_a_retained_snapshot_sees);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("reclaim");
    tcase_add_test(tc, upsert_churn_keeps_the_memory_held_flat);
    tcase_add_test(tc, upsert_churn_keeps_slots_rows_and_terms_bounded);
    tcase_add_test(tc,
        reclaimed_documents_leave_the_results_of_a_fresh_index);
    tcase_add_test(tc,
        retained_versions_fit_in_snapshot_bytes_oldest_dropped_first);
    tcase_add_test(tc, chunk_links_are_the_engines_and_list_what_exists);
    tcase_add_test(tc, chunk_links_survive_the_reclaiming_of_documents);
    tcase_add_test(tc,
        rollback_across_a_reclaim_serves_the_version_it_goes_back_to);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tc = tcase_create("fusion");
    tcase_add_test(tc,
        rrf_sums_weight_over_rank_and_breaks_ties_by_weight_then_id);
    tcase_add_test(tc, fusion_tie_break_prefers_higher_summed_weight);
    tcase_add_test(tc, weighted_fusion_normalises_min_max_per_list);
    tcase_add_test(tc, convex_fusion_anchors_the_floor_not_the_minimum);
    tcase_add_test(tc, fusion_counts_an_id_repeated_in_one_list_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("filters");
    tcase_add_test(tc, filters_match_as_the_decisions_say);
    tcase_add_test(tc, typed_filters_agree_with_reading_each_meta_afresh);
    tcase_add_test(tc, a_pinned_version_filters_its_documents_as_they_were);
    tcase_add_test(tc, filtered_values_survive_the_reclaiming_of_documents);
    tcase_add_test(tc,
        filtered_dense_recall_is_the_exact_top_k_of_what_passes);
    tcase_add_test(tc, a_filter_outside_its_rules_is_invalid);
    tcase_add_test(tc, declared_fields_are_copied_and_must_be_distinct);
    tcase_add_test(tc, value_of_reads_the_section_8_table);
    tcase_add_test(tc,
        filtered_adds_and_searches_fail_cleanly_out_of_memory);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tc = tcase_create("check");
    tcase_add_test(tc, the_checker_sees_every_kind_of_damage);
    tcase_add_test(tc, entry_points_refuse_bad_input_and_change_nothing);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
