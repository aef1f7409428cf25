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

static void add(rcp_model *m, const char *id, const char *text)
{
    ck_assert_int_eq(rcp_model_add(m, id, strlen(id), text, strlen(text),
                                   NULL, 0), 0);
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
    ck_assert_int_eq(rcp_model_delete(m, "2", 1), 1);
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

static size_t search(const rcp_model *m, const char *q, int mode,
                     rcp_model_hit *hits, size_t k)
{
    rcp_model_query qq;
    size_t n;
    rcp_model_query_init(&qq);
    qq.text = q;
    qq.len = strlen(q);
    qq.k = k;
    qq.mode = mode;
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
** tokenizer), so every word of a document, searched alone, finds it. */
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
                                          RCP_TOK_DEFAULT), 0);
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
            add(nd, id, "common words here and a flow");
        }
        for (i = 0; i < 2999; i++) {
            snprintf(id, sizeof id, "%u", (unsigned)i);
            ck_assert_int_eq(rcp_model_delete(nd, id, strlen(id)), 1);
        }
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
    ck_assert_uint_eq(search(m, "apple", RCP_MODE_SPARSE, h, 5), 2);
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
    ck_assert_int_eq(rcp_model_delete(m, "z", 1), 1);
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
    ck_assert_int_eq(rcp_model_delete(m, "a", 1), 1);
    ck_assert_int_eq(rcp_model_delete(m, "a", 1), 0);
    ck_assert_int_eq(rcp_model_delete(m, "never", 5), 0);
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
        add(m, id, "common words here and a flow");
    }
    for (i = 0; i < 2999; i++) {
        snprintf(id, sizeof id, "%d", i);
        ck_assert_int_eq(rcp_model_delete(m, id, strlen(id)), 1);
    }
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

static int not_b(void *ud, const rcp_model *m, uint32_t docno)
{
    rcp_model_docview v;
    (void)ud;
    rcp_model_doc(m, docno, &v);
    return !(v.idlen == 1 && v.id[0] == 'b');
}

START_TEST(search_honours_the_accept_filter_in_every_mode)
{
    rcp_model *m = new_model(16);
    rcp_model_query q;
    rcp_model_hit h[3];
    size_t n, i;
    int mode;
    add(m, "a", "wing flow");
    add(m, "b", "wing flow wing");
    for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_HYBRID; mode++) {
        rcp_model_query_init(&q);
        q.text = "wing";
        q.len = 4;
        q.k = 3;
        q.mode = mode;
        q.accept = not_b;
        ck_assert_int_eq(rcp_model_search(m, &q, h, &n), 0);
        ck_assert_uint_eq(n, 1);
        for (i = 0; i < n; i++)
            ck_assert_str_eq(hit_id(m, &h[i]), "a");
    }
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
    /* mode "sparse" is plain BM25, feedback or not */
    n = search(fb, "shock", RCP_MODE_SPARSE, h, 8);
    ck_assert_uint_eq(n, 1);
    rcp_model_free(fb);
    rcp_model_free(plain);
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
            ck_assert_int_eq(rcp_model_delete(m, "a", 1), 1);
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
** in memory.  After rcp_model_rollback(m, v), m serves what a model that
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
        ck_assert_int_eq(rcp_model_delete(x, "c", 1), 1);
        add(x, "d", "heat transfer in a boundary layer");
    }
    v = rcp_model_version(m);
    add(m, "b", "heat transfer to a cone");         /* replaced */
    ck_assert_int_eq(rcp_model_delete(m, "a", 1), 1);   /* deleted */
    add(m, "e", "boundary layer suction");          /* new */
    add(m, "c", "wing flutter again");              /* deleted before */
    add(m, "e", "suction on a cone");               /* new, replaced */
    ck_assert_int_eq(rcp_model_delete(m, "d", 1), 1);
    ck_assert_int_eq(rcp_model_rollback(m, v + 7), -1);     /* the future */
    ck_assert_int_eq(rcp_model_rollback(m, v), 0);
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
    ck_assert_int_eq(rcp_model_delete(m, "b", 1), 1);
    ck_assert_int_eq(rcp_model_delete(f, "b", 1), 1);
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
    ck_assert_int_eq(rcp_model_rollback(g, v), -1);
    ck_assert_uint_eq(rcp_model_version(g), v + 3);
    ck_assert_uint_eq(rcp_model_count(g), 3);
    ck_assert_int_eq(rcp_model_rollback(g, v + 1), 0);
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
    ck_assert_int_eq(rcp_model_rollback(m, v), 0);
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
        add(m, id, k % 3 ? "common words flow" : "rare shock flow");
    }
    for (k = 0; k < 2600; k++) {
        snprintf(id, sizeof id, "%d", k);
        ck_assert_int_eq(rcp_model_delete(m, id, strlen(id)), 1);
    }
    v = rcp_model_version(m) - 300;           /* 2300 deleted then */
    for (k = 2300; k < 3000; k++) {
        snprintf(id, sizeof id, "%d", k);
        add(fresh, id, k % 3 ? "common words flow" : "rare shock flow");
    }
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
    add(m, id, text);
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
    int mode, rc;
    for (k = 0; k < 9990; k++)
        churn(m, k);
    v = rcp_model_version(m);
    nt = search_at_rr(m, "shock layer revision", RCP_MODE_HYBRID, v,
                      RCP_RERANK_NONE, then, 10, &rc);
    for (; k < 10000; k++) {
        churn(m, k);
        churn(fresh, k);
    }
    /* (hybrid feedback breaks ties by term number, which is arrival
    ** order, so only the plain scorers can be compared with a fresh
    ** index built in another order) */
    for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_SPARSE; mode++) {
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
    ck_assert_int_eq(rcp_model_delete(m, "p#0", 3), 1);
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
    int mode;
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
    ck_assert_int_eq(rcp_model_rollback(m, v), 0);
    ck_assert_uint_eq(rcp_model_count(m), 11);
    ck_assert_uint_eq(chunks_of(m, "p", v).mask, 1);
    for (mode = RCP_MODE_DENSE; mode <= RCP_MODE_SPARSE; mode++) {
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
    ck_assert_int_eq(rcp_model_delete(m, "b", 1), 1);
    add(f, "a", "replaced text on shocks");
    rcp_set_allocator(failing_alloc, NULL);
    fail_after = 0;
    ck_assert_int_eq(rcp_model_rollback(m, v), -1);
    fail_after = -1;
    rcp_set_allocator(NULL, NULL);
    ck_assert_uint_eq(rcp_model_version(m), v + 2);
    ck_assert_uint_eq(rcp_model_count(m), 1);
    ck_assert_uint_eq(search(m, "wings flow", RCP_MODE_SPARSE, h, 4), 0);
    ck_assert_uint_eq(search(m, "shocks", RCP_MODE_SPARSE, h, 4), 1);
    ck_assert(search(m, "shocks", RCP_MODE_SPARSE, h, 4) == 1
              && search(f, "shocks", RCP_MODE_SPARSE, h + 1, 3) == 1
              && h[0].score == h[1].score);
    ck_assert_int_eq(rcp_model_rollback(m, v), 0);
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
    tc = tcase_create("index");
    tcase_add_test(tc, bm25_matches_hand_computed_scores);
    tcase_add_test(tc, every_word_of_a_document_finds_it_by_sparse_search);
    tcase_add_test(tc, bm25_after_delete_and_upsert_equals_a_fresh_index);
    tcase_add_test(tc, add_with_an_existing_id_replaces_never_duplicates);
    tcase_add_test(tc, delete_is_idempotent_and_counts_only_removals);
    tcase_add_test(tc, many_deletes_sweep_postings_and_keep_results);
    tcase_add_test(tc, equal_scores_rank_by_smaller_id);
    tcase_add_test(tc,
        every_mode_answers_an_empty_index_and_a_query_without_matches);
    tcase_add_test(tc, dense_ties_wider_than_the_scan_keep_the_id_order);
    tcase_add_test(tc, dense_recall_finds_misspelt_queries_that_bm25_misses);
    tcase_add_test(tc, search_honours_the_accept_filter_in_every_mode);
    tcase_add_test(tc, hybrid_search_fuses_both_legs_and_reports_stage_scores);
    tcase_add_test(tc,
        hybrid_feedback_expands_the_lexical_query_from_the_top_hits);
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
    return s;
}

TEST_MAIN(make_suite)
