/*
** model.c -- the built-in retrieval engine of rcp: embedders (dense,
** learned-sparse, multi-vector), an inverted index with BM25, a dense
** store, fusion (§16.3), rerankers and MMR (§7.6, §7.7), over text.c's
** tokenizer.
**
** NOTES ON THE DESIGN
**
**  1. The engine knows nothing of JSON-RPC.  Every text is (ptr, len) bytes
**     of valid UTF-8 (the JSON layer validated it, §4.6); a stray invalid
**     byte is still handled (it separates words), never trusted.
**  2. One tokenizer feeds everything (index, embedders, rerankers), so a
**     term means the same thing in every stage: text.c's (folding, CJK
**     bigrams, stopwords, Porter; its notes say what each covers).  This
**     file never splits text into words or folds it: it calls
**     rcp_tokenize, or runs text.c's scanner with a sink of its own (note
**     12), and sizes word buffers by the scanner's TEXT_MAX_WORD_BYTES.
**  3. Every embedder is a fixed function of its input text and of what
**     its identity names (§7.3, §15.7): the options the model was opened
**     with (algorithm version, dimension, a hash of the word-vector file)
**     and, for the one learned from the corpus (LSA, the default once the
**     corpus has 1000 documents), the corpus it was trained on.  The same
**     text gets bit-identical vectors under the same identity, before and
**     after any index change; a document added after a training is folded
**     into that model, and only a retraining -- on a schedule, never a
**     side effect of one add -- changes the identity, and then every
**     stored vector with it.
**  4. Documents are numbered by arrival (docno, dense).  An upsert
**     (§7.10) tombstones the old docno and appends a new one, so posting
**     lists stay sorted by docno without re-sorting; tombstones are
**     skipped at query time.  Memory follows what is live or retained,
**     never the number of writes: once gone documents are a quarter of
**     the docnos, or their postings outnumber the live ones,
**     compact_docs gives their docnos, rows and postings back and
**     renumbers the rest in order (and drops terms nothing names), as the
**     store's compaction does on disk.  So docnos are valid only until
**     the next add or delete, and nothing holds one across them.
**  5. Collection statistics (N, df, total length) count live documents
**     only, so BM25 after delete/upsert equals BM25 of a fresh index built
**     from the surviving documents.
**  6. Every ranking is a total order: ties are broken by score, then (for
**     fusion, §16.3) summed weight, then the byte-wise smaller id, so
**     results never depend on insertion or hash order.
**  7. Allocation goes only through rcp_malloc/rcp_realloc/rcp_free; every
**     failure becomes -1 and leaves the model as it was before the call
**     (an add builds everything first, then commits with steps that
**     cannot fail).  Files are store.c's business: this file does no I/O
**     but reading a word-vector file at start-up.
**  8. Scores are never compared across stages, only ranks or normalised
**     scores (§16.3): the dense leg's floor is -1 (cosine), the lexical
**     leg's 0 (BM25 with a non-negative idf).  Feedback (Rocchio, RM3)
**     belongs to hybrid recall only; "dense" and "sparse" are the plain
**     scorers whose scale §6.1 advertises.
**  9. confidence is a fixed function of (query, passage) -- no corpus
**     statistic, no normalisation over the result set -- so a threshold
**     means the same in every call (§7.7.2).
** 10. Every change makes a new version (rcp_model_version).  A document is
**     visible at versions [vadd, vdel); the statistics (N, tokens) of the
**     last snapshot_keep versions are kept in a ring, and df at a pinned
**     version is counted from the postings, so a search pinned to a
**     retained version returns exactly what it returned then (§7.7.1).
** 11. A dead document keeps its text and postings while a retained
**     version can see it (vdel + keep > version) and the retained fit in
**     snapshot_bytes; expire drops the oldest death first, and a version
**     that saw a dropped document is no longer kept (the floor), so a
**     pinned search is served exactly or not at all (§7.7.1).
** 12. Speed without a second meaning: with the default tokenizer an add
**     goes through the lexicon, a bounded cache of what depends on a word
**     alone (stopword, term id, dense features with ids).  Everything it
**     produces -- postings, lengths, the vector -- is bit for bit what the
**     plain path (rcp_tokenize, embed_tokens) gives; tests check both.
**     The dense embedder's summation order is part of its definition
**     ("rcp-hash-ngram-v4"), so the two paths can agree exactly.
** 13. A client's meta is data, never control (§15.2, §15.4): a chunk's
**     link to its document (§7.10) is the document's own attribute
**     (rcp_model_chunkref), chained per document through the parents
**     table, so "the chunks of X" is a walk over chunks that exist.
** 14. Every fast path has its plain reference, and the reference comes
**     first in this file: index_slow (rcp_tokenize, rcp_model_embed,
**     post_doc) before the lexicon path (note 12), embed_tokens before
**     embed_lex, dense_exact before the SIMD scan, bm25_part before its
**     table.  Tests prove they agree: rcp_model_check with
**     RCP_MODEL_CHECK_TEXTS, run after the changes of tests/test_model.c,
**     compares every stored text's postings, length and row with the
**     plain path's (and indexed_vectors_are_exactly_the_embedding_of_
**     their_text with the lexicon emptied before every document);
**     filtered_dense_recall_is_the_exact_top_k_of_what_passes and
**     dense_ties_wider_than_the_scan_keep_the_id_order the scan.
**     model_tokenize (the lexicon's tokens for RM3 and the cross-encoder)
**     is the exception: where a stem is as long as its word ("study",
**     "studi") it keeps the word -- a known defect, left for a change of
**     its own, since mending it moves the retrieval figures.
** 15. A filter (§8) is compiled once per search, against values typed
**     once per document: when a document is added, its values of the
**     declared fields are read from its meta into one column per field
**     (a cell per docno: absent, of another type, a typed value, or an
**     array of them; elements and longer strings in the field's pools,
**     in docno order, so a filter reads front to back).  No meta is
**     parsed at query time.  A dense or hybrid search turns the filter
**     into one bitmap, which the SIMD scan honours (vec.c's allow) and
**     BM25 too; a sparse one tries each document BM25 offers in turn,
**     since BM25 scores only documents holding a query term.  Values
**     are per docno like postings: a pinned version filters its
**     documents as they were; a dropped one (note 11) loses its values
**     with its text; compaction packs the pools.  Statistics (N, df)
**     stay those of everything visible: a filter chooses candidates, it
**     does not change scores.
** 16. Stopwords have postings but no weight in anything else (issue 12):
**     each of text.c's stopwords in a document is posted, with its count,
**     under a term of its own (the word behind STOP_MARK, which no token
**     holds), and counts in no document length -- so N, df, lengths and
**     avgdl, and with them every score of a query with a content word,
**     are what they were without those postings.  A query of stopwords
**     only (nothing left once they are dropped) is BM25 over them instead
**     (query_lexical).  The reference path reads a document once with
**     the stopwords kept (index_flags) and tells them apart (stop_token);
**     the lexicon marks a stopword's entry (LEX_STOP) with its term.  No
**     embedder, no relevance model (RM3) and no vocabulary look-up (§7.8)
**     reads them.  Like every posting, theirs hold counts, not positions.
**
** THE LIFE OF A DOCUMENT (state: the function that moves it)
**
**   absent  --rcp_model_add-->     live     (post, embed)
**   live    --rcp_model_add-->     dead + a new live docno  (upsert)
**   live    --rcp_model_delete-->  dead     (df/N/length drop; retained)
**   dead    --expire-->            gone: text and meta dropped, once no
**                                  kept version sees it (or over budget)
**   gone    --compact_docs-->      absent: docno, row and postings given
**                                  back, later docnos renumbered
**
** THE PIPELINE (rcp_model_search): the view (live or pinned) and the
** filter's bitmap -> candidates (recall: dense | sparse |
** hybrid = BM25 pass -> feedback -> dense + BM25/RM3 -> fuse) -> rerank
** (cross-encoder or colbert over the top N, interpolated with the recall
** score) -> MMR -> confidence for the hits returned.
*/
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcp.h"

/* MARK: - Small utilities ------------------------------------------------- */

/* Grow *p (element size sz) so it holds at least need elements. */
static int grow(void **p, size_t *cap, size_t need, size_t sz)
{
    size_t n = *cap ? *cap : 8;
    void *q;
    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    if (n > (size_t)-1 / sz)
        return -1;
    q = rcp_realloc(*p, n * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* FNV-1a over bytes, then a splitmix64 finaliser so every bit mixes:
** the embedders take the sign and the slot from different bits. */
static uint64_t mix64(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

static uint64_t hash_bytes(uint64_t seed, const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ULL;
    }
    return mix64(h);
}

/* MARK: - Feature bags (the hashed embedders' working set) ---------------- */

/* A bag of hashed features: key -> (summed weight, count).  Open
** addressing, power-of-two capacity, key 0 reserved for "empty". */
typedef struct fbag {
    uint64_t *key;
    double   *sum;
    uint32_t *cnt;
    size_t    cap, n;
} fbag;

static void fbag_free(fbag *b)
{
    rcp_free(b->key);
    rcp_free(b->sum);
    rcp_free(b->cnt);
    memset(b, 0, sizeof *b);
}

static int fbag_init(fbag *b, size_t expect)
{
    size_t cap = 64;
    while (cap < expect + expect / 3)   /* load <= 3/4 */
        cap *= 2;
    memset(b, 0, sizeof *b);
    b->key = rcp_malloc(cap * sizeof *b->key);
    b->sum = rcp_malloc(cap * sizeof *b->sum);
    b->cnt = rcp_malloc(cap * sizeof *b->cnt);
    if (!b->key || !b->sum || !b->cnt) {
        fbag_free(b);
        return -1;
    }
    memset(b->key, 0, cap * sizeof *b->key);
    b->cap = cap;
    return 0;
}

/* The caller sized the bag for every feature it will add (expect), so
** the table never fills past three quarters. */
static void fbag_add(fbag *b, uint64_t h, double w)
{
    size_t i;
    h |= 1;                     /* never the empty key */
    i = (size_t)(h >> 7) & (b->cap - 1);
    while (b->key[i] && b->key[i] != h)
        i = (i + 1) & (b->cap - 1);
    if (!b->key[i]) {
        b->key[i] = h;
        b->sum[i] = 0;
        b->cnt[i] = 0;
        b->n++;
    }
    b->sum[i] += w;
    b->cnt[i]++;
}

/* Sublinear tf: a feature seen c times with mean weight w counts
** w (1 + ln c), so repetition helps but never dominates. */
static double fbag_value(const fbag *b, size_t i)
{
    double c = b->cnt[i];
    return c == 1 ? b->sum[i] : b->sum[i] / c * (1.0 + log(c));
}

/* MARK: - Hashed n-gram embedder (dense, "rcp-hash-ngram-v4") ------------- */

/* The fixed model.  Every text is tokenized with RCP_TOK_DEFAULT (the
** embedder's own setting, whatever the index uses).  Each token gives
**   - its stem, weight 1: morphology folds to one feature (flow/flows);
**   - the character 3-, 4- and 5-grams of "<word>" (the folded word with
**     boundary marks), sharing weight NGRAM_MASS between them: a typo
**     or an unseen inflection still shares most of its n-grams;
** all scaled by the token's informativeness, a fixed function of the
** token alone (Zipf's law of abbreviation: frequent words are short, so
** length stands in for idf without looking at any corpus).  Features are
** signed-hashed into the dimensions (Weinberger et al. 2009), the sign
** from a different bit than the slot so collisions cancel in expectation,
** and the vector is L2-normalised.  A feature seen c times in the text
** with weights summing to s counts s (1 + ln c)/c (sublinear tf).
**
** v2 is v1's function computed in a fixed order: the text's distinct
** words in order of first appearance, each with its count t, add t x
** (their features' single-precision weights); the features are then
** projected in order of first appearance.  The order makes the vector
** the same whether a word's features come from the index's lexicon or
** are computed afresh (rcp_model_embed), so indexing can remember them;
** vectors differ from v1's in rounding only (Cranfield's figures are
** unchanged to four places), but they differ, hence the new identity.
**
** v4 (and sparse v3, multi v3) drops v3's second stoplist, the SMART
** system's 571 general-English words, which took words such as "help",
** "hello", "value" and "new" for fillers (issue 12): every word but the
** tokenizer's short stopword list (text.c) now counts. */
#define HASH_SEED_STEM  0x5354454dULL
#define HASH_SEED_GRAM  0x4752414dULL
#define NGRAM_MIN 3
#define NGRAM_MAX 5
#define NGRAM_MASS 1.0

/* The token weight of a word of kind RCP_TOKEN_* (folded, w[0..n)). */
static double word_weight(unsigned kind, const char *w, size_t n)
{
    double L = (double)n;
    (void)w;   /* every word counts: no list beyond the tokenizer's
               ** stopwords (issue 12: "help", "hello" are words) */
    if (kind == RCP_TOKEN_NUM)
        return 0.5;
    if (kind == RCP_TOKEN_CJK)
        return 1.0;
    if (L > 12)
        L = 12;
    return log(1.0 + L) / log(13.0);
}

static double token_weight(const rcp_token *tk, const char *buf)
{
    return word_weight(tk->kind, buf + tk->word, tk->wlen);
}

/* Code point boundaries of s[0..n): off[0..count] (count <= cap). */
static size_t cp_offsets(const char *s, size_t n, uint32_t *off, size_t cap)
{
    size_t i = 0, k = 0;
    while (i < n && k < cap) {
        off[k++] = (uint32_t)i;
        text_utf8_next((const unsigned char *)s, n, &i);
    }
    off[k] = (uint32_t)i;
    return k;
}

/* The n-grams of "<word>" over code points, each weight w / sqrt(count):
** the word's n-grams together have the L2 mass of its stem feature, so a
** typo keeps about half of a word's similarity, whatever its length. */
static void add_ngrams(fbag *b, const char *word, size_t wlen, double w)
{
    char m[TEXT_MAX_WORD_BYTES + 2];
    uint32_t off[TEXT_MAX_WORD_BYTES + 3];
    size_t ncp, n, i, total = 0;
    m[0] = '<';
    memcpy(m + 1, word, wlen);
    m[wlen + 1] = '>';
    ncp = cp_offsets(m, wlen + 2, off, TEXT_MAX_WORD_BYTES + 2);
    for (n = NGRAM_MIN; n <= NGRAM_MAX; n++)
        total += ncp >= n ? ncp - n + 1 : 0;
    for (n = NGRAM_MIN; n <= NGRAM_MAX; n++)
        for (i = 0; i + n <= ncp; i++)
            fbag_add(b, hash_bytes(HASH_SEED_GRAM + n, m + off[i],
                                   off[i + n] - off[i]),
                     w * NGRAM_MASS / sqrt((double)total));
}

/* How many features a token list can produce (bag sizing). */
static size_t feature_bound(const rcp_tokens *t)
{
    size_t i, n = 0;
    for (i = 0; i < t->n; i++)
        n += 1 + 3 * (t->v[i].wlen + 2);
    return n;
}

static int hash_features(fbag *b, const rcp_tokens *t)
{
    size_t i;
    if (fbag_init(b, feature_bound(t)))
        return -1;
    for (i = 0; i < t->n; i++) {
        const rcp_token *tk = &t->v[i];
        double w = token_weight(tk, t->buf);
        fbag_add(b, hash_bytes(HASH_SEED_STEM, t->buf + tk->term, tk->tlen),
                 w);
        if (tk->kind == RCP_TOKEN_WORD)
            add_ngrams(b, t->buf + tk->word, tk->wlen, w);
    }
    return 0;
}

/* Signed feature hashing of a bag into out[0..dim). */
static void project_bag(const fbag *b, float *out, size_t dim)
{
    size_t i;
    for (i = 0; i < b->cap; i++) {
        uint64_t h = b->key[i];
        if (!h)
            continue;
        out[(size_t)(h >> 32) % dim] +=
            (float)((h & 2) ? -fbag_value(b, i) : fbag_value(b, i));
    }
}

static void normalize(float *v, size_t n)
{
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s += (double)v[i] * v[i];
    if (s <= 0)
        return;
    s = 1.0 / sqrt(s);
    for (i = 0; i < n; i++)
        v[i] = (float)(v[i] * s);
}

/* One feature of a word as the dense embedder places it. */
typedef struct wfeat {
    uint64_t key;               /* the feature's hash | 1 (never 0) */
    float    w;                 /* its weight */
    uint32_t slot;              /* its dimension; | WF_NEG: subtracted */
} wfeat;
#define WF_NEG 0x80000000u      /* dimensions are < 2^31 */

/* How many features a word of kind with wlen bytes can have. */
static size_t wfeat_bound(unsigned kind, size_t wlen)
{
    return kind == RCP_TOKEN_WORD ? 1 + 3 * (wlen + 2) : 1;
}

static void wfeat_set(wfeat *f, uint64_t h, double w, size_t dim)
{
    f->key = h | 1;
    f->w = (float)w;
    f->slot = (uint32_t)((h >> 32) % dim) | ((h & 2) ? WF_NEG : 0);
}

/* The features of one word: its term (the stem), then for a word the
** n-grams of "<word>" (3-grams, 4-grams, 5-grams, each left to right),
** w the token weight.  Returns the count (<= wfeat_bound). */
static size_t word_feats(unsigned kind, const char *word, size_t wlen,
                         const char *term, size_t tlen, double w,
                         size_t dim, wfeat *out)
{
    char m[TEXT_MAX_WORD_BYTES + 2];
    uint32_t off[TEXT_MAX_WORD_BYTES + 3];
    size_t ncp, n, i, total = 0, k = 1;
    double g;
    wfeat_set(&out[0], hash_bytes(HASH_SEED_STEM, term, tlen), w, dim);
    if (kind != RCP_TOKEN_WORD)
        return 1;
    m[0] = '<';
    memcpy(m + 1, word, wlen);
    m[wlen + 1] = '>';
    ncp = cp_offsets(m, wlen + 2, off, TEXT_MAX_WORD_BYTES + 2);
    for (n = NGRAM_MIN; n <= NGRAM_MAX; n++)
        total += ncp >= n ? ncp - n + 1 : 0;
    g = w * NGRAM_MASS / sqrt((double)total);
    for (n = NGRAM_MIN; n <= NGRAM_MAX; n++)
        for (i = 0; i + n <= ncp; i++)
            wfeat_set(&out[k++], hash_bytes(HASH_SEED_GRAM + n, m + off[i],
                                            off[i + n] - off[i]), g, dim);
    return k;
}

/* Where a feature's value goes: out[slot] += x, or -= x under WF_NEG
** (as += -1 x, the same bits, without a branch the sign makes random). */
static void put_feature(float *out, uint32_t slot, float x)
{
    static const float sign[2] = { 1.0f, -1.0f };
    out[slot & ~WF_NEG] += sign[slot >> 31] * x;
}

/* (1 + ln c) / c for c < TFLOG_N (c >= 1), computed once per model
** (rcp_model_new): s x this is the sublinear value, without a division
** per feature. */
#define TFLOG_N 256

static double tf_damp(const double *tflog, uint32_t c)
{
    return c < TFLOG_N ? tflog[c] : (1.0 + log((double)c)) / c;
}

/* The value of a feature that occurs once in the text, in a word seen tf
** times (damp = tf_damp(tf)): what a bag holding only it would give. */
static float lone_value(float w, uint32_t tf, double damp)
{
    return (float)((double)w * tf * damp);
}

/* The dense embedder's working set: feature key (nonzero) -> (summed
** weight, count, slot), remembering the order keys first came in.  Open
** addressing at load <= 2/3, the keys apart from the values so probing
** stays in a few cache lines; emptied by projecting, so one bag serves
** many texts. */
typedef struct dval {
    double   sum;
    uint32_t cnt, slot;
} dval;

typedef struct dbag {
    uint64_t *key;              /* 0: empty */
    dval     *v;
    uint32_t *order;            /* occupied slots, first come first */
    size_t    cap, n;
    unsigned  bits;             /* cap = 2^bits */
} dbag;

static void dbag_free(dbag *b)
{
    rcp_free(b->key);
    rcp_free(b->v);
    rcp_free(b->order);
    memset(b, 0, sizeof *b);
}

/* Room for bound more keys in an empty bag. */
static int dbag_reserve(dbag *b, size_t bound)
{
    size_t cap = 64;
    unsigned bits = 6;
    while (cap < bound + bound / 2) {
        cap *= 2;
        bits++;
    }
    if (cap <= b->cap)
        return 0;
    dbag_free(b);
    if (cap > UINT32_MAX)
        return -1;
    b->key = rcp_malloc(cap * sizeof *b->key);
    b->v = rcp_malloc(cap * sizeof *b->v);
    b->order = rcp_malloc(cap * sizeof *b->order);
    if (!b->key || !b->v || !b->order) {
        dbag_free(b);
        return -1;
    }
    memset(b->key, 0, cap * sizeof *b->key);
    b->cap = cap;
    b->bits = bits;
    return 0;
}

/* The slot of key, or the empty slot it would take. */
static size_t dbag_probe(const dbag *b, uint64_t key)
{
    size_t mask = b->cap - 1;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> (64 - b->bits));
    while (b->key[i] != key && b->key[i])
        i = (i + 1) & mask;
    return i;
}

/* Feature key (weight w, slot) of a word seen tf times. */
static void dbag_add(dbag *b, uint64_t key, float w, uint32_t slot,
                     uint32_t tf)
{
    size_t i = dbag_probe(b, key);
    dval *v = &b->v[i];
    if (!b->key[i]) {
        b->key[i] = key;
        v->sum = 0;
        v->cnt = 0;
        v->slot = slot;
        b->order[b->n++] = (uint32_t)i;
    }
    v->sum += (double)w * tf;
    v->cnt += tf;
}

/* Add every feature's sublinear value into out (in first-come order) and
** empty the bag. */
static void dbag_project(dbag *b, const double *tflog, float *out)
{
    size_t k;
    for (k = 0; k < b->n; k++) {
        uint32_t i = b->order[k];
        const dval *v = &b->v[i];
        put_feature(out, v->slot,
                    (float)(v->sum * tf_damp(tflog, v->cnt)));
        b->key[i] = 0;
    }
    b->n = 0;
}

/* The distinct words of t (by folded word) in order of first appearance:
** first[i] the token index, count[i] its count; *nd how many. */
static int distinct_words(const rcp_tokens *t, uint32_t *first,
                          uint32_t *count, size_t *nd)
{
    size_t cap = 16, i, j;
    uint32_t *slot;
    while (cap < 2 * t->n)
        cap *= 2;
    if (!(slot = rcp_malloc(cap * sizeof *slot)))
        return -1;
    memset(slot, 0, cap * sizeof *slot);
    *nd = 0;
    for (i = 0; i < t->n; i++) {
        const rcp_token *tk = &t->v[i];
        j = (size_t)hash_bytes(0, t->buf + tk->word, tk->wlen) & (cap - 1);
        for (; slot[j]; j = (j + 1) & (cap - 1)) {
            const rcp_token *o = &t->v[first[slot[j] - 1]];
            if (o->wlen == tk->wlen
                && !memcmp(t->buf + o->word, t->buf + tk->word, tk->wlen))
                break;
        }
        if (!slot[j]) {
            first[*nd] = (uint32_t)i;
            count[*nd] = 0;
            slot[j] = (uint32_t)++*nd;
        }
        count[slot[j] - 1]++;
    }
    rcp_free(slot);
    return 0;
}

/* The dense embedding of tokens made with RCP_TOK_DEFAULT, computed
** afresh; the index's fast path (embed_lex) computes the same with the
** lexicon's feature ids.  The order of the sums is part of v2: over the
** distinct words' features (distinct words by first appearance, each
** word's features as word_feats lists them), a feature listed once is
** added where it comes; the others are summed in a bag and added after,
** in order of first appearance.  Most features are listed once, so
** most skip the bag. */
static int embed_feats(const wfeat *f, const uint32_t *nf,
                       const uint32_t *tf, size_t nd, const double *tflog,
                       float *out, size_t bound)
{
    dbag cnt, sum;
    size_t i, j, k;
    int rc;
    memset(&cnt, 0, sizeof cnt);
    memset(&sum, 0, sizeof sum);
    rc = dbag_reserve(&cnt, bound) || dbag_reserve(&sum, bound);
    for (i = k = 0; rc == 0 && i < nd; k += nf[i++])
        for (j = 0; j < nf[i]; j++)
            dbag_add(&cnt, f[k + j].key, 0, 0, 1);
    for (i = k = 0; rc == 0 && i < nd; k += nf[i++]) {
        double damp = tf_damp(tflog, tf[i]);
        for (j = 0; j < nf[i]; j++) {
            const wfeat *x = &f[k + j];
            if (cnt.v[dbag_probe(&cnt, x->key)].cnt > 1)
                dbag_add(&sum, x->key, x->w, x->slot, tf[i]);
            else
                put_feature(out, x->slot, lone_value(x->w, tf[i], damp));
        }
    }
    if (rc == 0)
        dbag_project(&sum, tflog, out);
    dbag_free(&cnt);
    dbag_free(&sum);
    return rc ? -1 : 0;
}

/* The dense embedder's L2 normalisation: four partial sums (a shorter
** dependency chain than normalize's one), the same in both paths. */
static void normalize4(float *v, size_t n)
{
    double s[4] = { 0, 0, 0, 0 }, t;
    size_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        s[0] += (double)v[i] * v[i];
        s[1] += (double)v[i + 1] * v[i + 1];
        s[2] += (double)v[i + 2] * v[i + 2];
        s[3] += (double)v[i + 3] * v[i + 3];
    }
    for (; i < n; i++)
        s[0] += (double)v[i] * v[i];
    t = (s[0] + s[1]) + (s[2] + s[3]);
    if (t <= 0)
        return;
    t = 1.0 / sqrt(t);
    for (i = 0; i < n; i++)
        v[i] = (float)(v[i] * t);
}

static int embed_tokens(const rcp_tokens *t, const double *tflog,
                        float *out, size_t dim)
{
    uint32_t *first = rcp_malloc((t->n + 1) * sizeof *first);
    uint32_t *count = rcp_malloc((t->n + 1) * sizeof *count);
    uint32_t *nf = rcp_malloc((t->n + 1) * sizeof *nf);
    wfeat *f = NULL;
    size_t nd = 0, i, k = 0, bound = 0;
    int rc = -1;
    memset(out, 0, dim * sizeof *out);
    if (first && count && nf && !distinct_words(t, first, count, &nd)) {
        for (i = 0; i < nd; i++)
            bound += wfeat_bound(t->v[first[i]].kind, t->v[first[i]].wlen);
        f = rcp_malloc((bound + 1) * sizeof *f);
    }
    for (i = 0; f && i < nd; i++) {
        const rcp_token *tk = &t->v[first[i]];
        nf[i] = (uint32_t)word_feats(tk->kind, t->buf + tk->word, tk->wlen,
                                     t->buf + tk->term, tk->tlen,
                                     token_weight(tk, t->buf), dim, f + k);
        k += nf[i];
    }
    if (f && embed_feats(f, nf, count, nd, tflog, out, k) == 0) {
        normalize4(out, dim);
        rc = 0;
    }
    rcp_free(f);
    rcp_free(first);
    rcp_free(count);
    rcp_free(nf);
    return rc;
}

static int embed_hash(const char *text, size_t len, const double *tflog,
                      float *out, size_t dim)
{
    rcp_tokens t;
    int rc;
    rcp_tokens_init(&t);
    rc = rcp_tokenize(&t, text, len, RCP_TOK_DEFAULT)
         || embed_tokens(&t, tflog, out, dim);
    rcp_tokens_free(&t);
    return rc ? -1 : 0;
}

/* MARK: - String-keyed open-addressing tables ----------------------------- */

/* Slots hold entry index + 1 (0 = empty); entries keep their own key and
** hash, so the table is just an index.  Entries are never removed (a
** deleted document keeps its id entry, marked dead), so no tombstones. */
typedef struct sidx {
    uint32_t *slot;
    size_t    cap, n;
} sidx;

typedef int (*sidx_eq)(const void *ctx, uint32_t e, const char *k,
                       size_t n, uint64_t h);
typedef uint64_t (*sidx_hash)(const void *ctx, uint32_t e);

static size_t sidx_find(const sidx *t, const void *ctx, sidx_eq eq,
                        const char *k, size_t n, uint64_t h)
{
    size_t i = (size_t)h & (t->cap - 1);
    while (t->slot[i] && !eq(ctx, t->slot[i] - 1, k, n, h))
        i = (i + 1) & (t->cap - 1);
    return i;
}

/* Make room for one more entry (rehashing at 1/2 load). */
static int sidx_reserve(sidx *t, const void *ctx, sidx_hash hf)
{
    size_t cap = t->cap ? t->cap * 2 : 64, i, j;
    uint32_t *s;
    if ((t->n + 1) * 2 <= t->cap)
        return 0;
    s = rcp_malloc(cap * sizeof *s);
    if (!s)
        return -1;
    memset(s, 0, cap * sizeof *s);
    for (i = 0; i < t->cap; i++) {
        if (!t->slot[i])
            continue;
        j = (size_t)hf(ctx, t->slot[i] - 1) & (cap - 1);
        while (s[j])
            j = (j + 1) & (cap - 1);
        s[j] = t->slot[i];
    }
    rcp_free(t->slot);
    t->slot = s;
    t->cap = cap;
    return 0;
}

/* MARK: - The model ------------------------------------------------------- */

typedef struct posting {
    uint32_t doc, tf;
} posting;

typedef struct term {
    char    *s;
    uint32_t len;
    uint32_t df;                /* live documents containing the term */
    uint64_t h;
    posting *p;                 /* ascending doc; may hold dead docs */
    size_t   n, cap;
    uint32_t stamp, acc;        /* the add in progress: seen, tf */
} term;

/* A chunk's link to the document it was cut from (§7.10), the engine's
** own: sib chains the chunks of one document (newest first) through the
** docs array, starting at the parents table's entry. */
typedef struct part {
    uint64_t h;                 /* hash of of */
    uint64_t start, end;        /* span in the document's text */
    uint32_t index;
    uint32_t sib;               /* the next older chunk doc, or NO_DOC */
    size_t   oflen;
    char     of[];              /* the document's id, oflen bytes + NUL */
} part;

#define NO_DOC 0xFFFFFFFFu

typedef struct doc {
    char     *id, *text, *meta;
    size_t    idlen, textlen, metalen;
    uint64_t  h;                /* hash of id */
    uint32_t *terms;            /* distinct term ids (for delete); freed
                                ** when the document dies */
    uint32_t  nterms;           /* its postings, live or dead */
    uint32_t  len;              /* tokens counted by BM25 */
    int       live;
    uint32_t  no;               /* scratch of compact_docs */
    uint64_t  vadd, vdel;       /* visible at versions [vadd, vdel) */
    part     *ck;               /* §7.10 chunk link, or NULL */
    uint32_t  origin;           /* §15.2 index in the model's origins */
    size_t    fbytes;           /* what its §8 values take in the pools */
} doc;

/* §15.2 a (trust, source) pair documents share; origins[0] is
** {untrusted, no source}.  Interned, never freed before the model. */
typedef struct origin {
    int      trust;
    size_t   len;
    char    *source;            /* len bytes + NUL */
} origin;

/* §8: a document's value of a declared field, typed when it was added
** (note 15).  A cell is FV_ABSENT (no such key, or null), FV_BAD (there,
** but not of the field's type: it matches only ne, nin and exists),
** FV_VAL, or FV_ARRAY (n elements at u.off in the field's el, each FV_BAD
** or FV_VAL).  A string of up to FV_INLINE bytes (most keywords: "en",
** "draft") lives in the cell, a longer one at u.off in the field's
** bytes.  The pools hold their documents' data in docno order, so a
** filter reads a column and its pools front to back. */
enum { FV_ABSENT, FV_BAD, FV_VAL, FV_ARRAY };
#define FV_INLINE 8
typedef struct fval {
    union {
        double   x;             /* int, float */
        int64_t  i;             /* date (epoch ms), bool (0, 1) */
        char     b[FV_INLINE];  /* keyword, text: a short string */
        uint64_t off;           /* a longer string, or an array */
    } u;
    uint32_t n;                 /* a string's bytes; an array's elements */
    uint8_t  kind;              /* FV_* */
} fval;

/* One declared field's column: a cell per docno, and the pools. */
typedef struct fcol {
    fval  *cell;
    fval  *el;                  /* array elements */
    char  *bytes;               /* longer strings */
    size_t nel, elcap, nbytes, bytecap;
    size_t nel0, nbytes0;       /* the ends before the add in progress */
} fcol;

/* Static word vectors (word2vec / GloVe text format). */
typedef struct wvec {
    char     *words;            /* NUL-separated */
    size_t   *off;
    uint64_t *h;
    float    *v;                /* n * dim */
    size_t    n, dim;
    sidx      ix;
} wvec;

/* The lexicon: what indexing needs to know of a word that depends on the
** word alone -- stopword or not, its term id, its dense features --
** remembered per distinct folded word, so a word seen before costs one
** hash lookup: stemming and n-gram hashing happen once per word, not once
** per occurrence.  A cache of fixed functions of the word (the vectors
** are checked against rcp_model_embed in tests/test_model.c), bounded:
** past opts.lexicon_bytes it is emptied before the next document.  Only
** the fast path uses it: an index tokenizing as the embedder does
** (RCP_TOK_DEFAULT, the default). */
#define LEX_STOP  0x80000000u   /* term bit: a stopword (note 16), whose
                                ** stop term is the rest */
#define LEX_DEFAULT_BYTES ((size_t)64 << 20)
#define LEX_INLINE 16           /* words this short live in the entry */

/* An entry is followed in the arena by its nf dense features: nf feature
** ids (uint32_t: one number per distinct feature key, so a document's
** features index small tables) and nf slots (uint16_t: dimension, top
** bit the sign), the whole padded to 8 bytes -- one word's everything in
** two or three adjacent cache lines. */
typedef struct lexent {
    uint32_t term;              /* index term id, LEX_STOP set for a
                                ** stopword */
    uint32_t nf;                /* dense features */
    uint32_t stamp, tf;         /* the add in progress: seen, count */
    uint32_t wlen, woff;        /* the word: w, or words + woff if long */
    float    ws, wg;            /* weights: stem feature, each n-gram */
    char     w[LEX_INLINE];
} lexent;
#define LEX_NEG 0x8000u         /* a slot's sign bit (dim <= 4096) */

/* slot: (high 32 bits of the word's hash) << 32 | (entry offset / 8 +
** 1); 0 empty.  The tag keeps probes off entries not sought. */
typedef struct lexicon {
    unsigned char *arena;       /* entries, each 8-aligned */
    size_t    alen, acap, n;
    uint64_t *slot;
    size_t    scap;
    char     *words;            /* words longer than LEX_INLINE */
    size_t    wlen, wcap;
    uint64_t *fkey;             /* feature id -> key */
    size_t    nfid, fkcap;
    unsigned char *fmark;       /* feature id -> listed by the add in
                                ** progress: 0 no, 1 once, 2 again, 3 again
                                ** and in the bag at fpos */
    size_t    fmcap;
    uint32_t *fpos;             /* feature id -> its place in the bag */
    size_t    fpcap;
    uint32_t *fix;              /* key -> feature id + 1 */
    size_t    fixcap;
} lexicon;

struct rcp_model {
    rcp_model_opts o;
    char     identity[80], sparse_identity[80], multi_identity[80];
    wvec     wv;
    origin  *origins;           /* §15.2, norigins of them, [0] none */
    size_t   norigins;
    doc     *docs;
    size_t   ndocs, doccap;
    sidx     ids;
    sidx     parents;           /* a chunked document's id -> the docno of
                                ** its newest chunk (part.sib chains) */
    term    *terms;
    size_t   nterms, termcap;
    sidx     tix;
    float   *vecs;              /* ndocs * o.dim, row = docno */
    size_t   veccap;
    rcp_vec_q8 q8;              /* vecs in 8 bits, what dense recall scans
                                ** (n == ndocs, row = docno; dense_q8) */
    unsigned char *livebits;    /* bit docno set while live */
    size_t   livecap;
    uint32_t *dlen;             /* docs[docno].len, packed for BM25 */
    size_t   dlencap;
    uint64_t *idpre;            /* docno -> id_prefix(id), for ties */
    size_t   idprecap;
    size_t   live;
    uint64_t total_len;         /* tokens in live documents */
    size_t   live_postings;
    size_t   gone_postings;     /* in posting lists, of gone documents */
    size_t   gone;              /* gone documents still holding a docno */
    uint64_t version;
    /* §7.7.1 snapshots: (N, tokens) after each of the last keep + 1
    ** versions, a ring indexed by version % (keep + 1) */
    struct vstat { uint64_t n, total; } *hist;
    size_t   keep;
    /* The retained: dead documents a kept version still sees, oldest
    ** death first, in a ring of keep + 1 docnos (one change kills at most
    ** one document, so at most keep are retained between changes). */
    uint32_t *grave;
    size_t   ghead, gcount;
    size_t   held_bytes;        /* what the retained take */
    uint64_t floor;             /* versions below it lost a document */
    double   tflog[TFLOG_N];    /* the embedder's tf damping, tf_damp */
    lexicon  lex;               /* the fast path's word cache */
    uint32_t stamp;             /* of the add in progress, never 0 */
    struct lbag {               /* scratch of the add in progress: the */
        uint32_t *fid, *cnt, *slot;     /* features listed again, in */
        double   *sum;                  /* order of arrival */
        size_t    n, cap;
    } bag;
    uint32_t *tids, *dw;        /* its term ids, its distinct words */
    size_t   tidcap, dwcap;     /* (dw: entry offsets / 8) */
    struct wtok *wt;            /* its words, gathered (index_words) */
    size_t   wtcap;
    char    *wbuf;              /* their bytes, each zero-padded */
    size_t   wbcap;
    /* §8 the declared fields (o.fields points here; names in fnames),
    ** their indices sorted by (length, name) for the meta reader, and one
    ** column of cells per field, row = docno; meta is parsed in farena */
    rcp_field *fields;
    char     *fnames;
    uint32_t *fsorted;
    fcol     *col;
    size_t    colcap;           /* cells per column */
    rcp_arena farena;
    const rcp_json **fseen;     /* scratch: each field's value in a meta */
    struct lsa {                /* the corpus-learned embedder (opts.lsa) */
        wvec      w;            /* its terms and their vectors; w.n 0:
                                ** untrained, the hashed embedder serves */
        float    *g;            /* each term's entropy weight */
        size_t    trained_on;   /* live documents at its training */
        unsigned  gen;          /* trainings so far */
    } lsa;
};

void rcp_model_opts_init(rcp_model_opts *o)
{
    memset(o, 0, sizeof *o);
    o->dim = RCP_MODEL_DEFAULT_DIM;
    o->multi_dim = RCP_MODEL_DEFAULT_MULTI_DIM;
    o->sparse_vocab = RCP_MODEL_DEFAULT_VOCAB;
    o->tok_flags = RCP_TOK_DEFAULT;
    o->k1 = 1.2;
    o->b = 0.75;
    o->prf_docs = 10;
    o->prf_beta = 0.75;
    o->snapshot_keep = 1024;
    o->snapshot_bytes = RCP_MODEL_SNAPSHOT_BYTES;
    o->lexicon_bytes = LEX_DEFAULT_BYTES;
    o->lsa = 0;     /* opt-in (--embedder lsa): README "the learned embedder" */
}

static int term_eq(const void *ctx, uint32_t e, const char *k, size_t n,
                   uint64_t h)
{
    const term *t = &((const rcp_model *)ctx)->terms[e];
    return t->h == h && t->len == n && !memcmp(t->s, k, n);
}

static uint64_t term_h(const void *ctx, uint32_t e)
{
    return ((const rcp_model *)ctx)->terms[e].h;
}

static int doc_eq(const void *ctx, uint32_t e, const char *k, size_t n,
                  uint64_t h)
{
    const doc *d = &((const rcp_model *)ctx)->docs[e];
    return d->h == h && d->idlen == n && !memcmp(d->id, k, n);
}

static uint64_t doc_h(const void *ctx, uint32_t e)
{
    return ((const rcp_model *)ctx)->docs[e].h;
}

/* The parents table's entries are chunk docnos keyed by their document. */
static int part_eq(const void *ctx, uint32_t e, const char *k, size_t n,
                   uint64_t h)
{
    const part *p = ((const rcp_model *)ctx)->docs[e].ck;
    return p->h == h && p->oflen == n && !memcmp(p->of, k, n);
}

static uint64_t part_h(const void *ctx, uint32_t e)
{
    return ((const rcp_model *)ctx)->docs[e].ck->h;
}

static void lex_free(lexicon *x)
{
    rcp_free(x->arena);
    rcp_free(x->slot);
    rcp_free(x->words);
    rcp_free(x->fkey);
    rcp_free(x->fmark);
    rcp_free(x->fpos);
    rcp_free(x->fix);
    memset(x, 0, sizeof *x);
}

static size_t lex_bytes(const lexicon *x)
{
    return x->acap + x->scap * sizeof *x->slot + x->wcap
           + x->fkcap * sizeof *x->fkey + x->fmcap * sizeof *x->fmark
           + x->fpcap * sizeof *x->fpos
           + x->fixcap * sizeof *x->fix;
}

static int wv_eq(const void *ctx, uint32_t e, const char *k, size_t n,
                 uint64_t h)
{
    const wvec *w = ctx;
    return w->h[e] == h && w->off[e + 1] - w->off[e] - 1 == n
        && !memcmp(w->words + w->off[e], k, n);
}

static uint64_t wv_h(const void *ctx, uint32_t e)
{
    return ((const wvec *)ctx)->h[e];
}

/* MARK: - Static word vectors (word2vec / GloVe text) --------------------- */

static void wv_free(wvec *w)
{
    rcp_free(w->words);
    rcp_free(w->off);
    rcp_free(w->h);
    rcp_free(w->v);
    rcp_free(w->ix.slot);
    memset(w, 0, sizeof *w);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    if (!f)
        return NULL;
    do {
        if (grow((void **)&buf, &cap, n + 65536 + 1, 1)) {
            rcp_free(buf);
            fclose(f);
            return NULL;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    if (ferror(f)) {
        rcp_free(buf);
        buf = NULL;
    } else {
        buf[n] = 0;
        *len = n;
    }
    fclose(f);
    return buf;
}

/* Split line[0..n) at blanks into at most max fields; returns count. */
static size_t split_fields(char *line, size_t n, char **f, size_t max)
{
    size_t i = 0, k = 0;
    while (i < n && k < max) {
        while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            line[i++] = 0;
        if (i >= n)
            break;
        f[k++] = line + i;
        while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            i++;
    }
    while (i < n)
        line[i++] = 0;
    return k;
}

static int is_uint_text(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

#define WV_MAX_DIM 4096

/* Parse one "word v1 .. vD" line into entry w->n.  0 ok, else a message. */
static const char *wv_line(wvec *w, char **f, size_t nf, size_t *wpos)
{
    size_t i, wl = strlen(f[0]);
    uint64_t h;
    char *end;
    if (w->dim == 0)
        w->dim = nf - 1;
    if (nf - 1 != w->dim)
        return "wrong number of components";
    memcpy(w->words + *wpos, f[0], wl + 1);
    w->off[w->n] = *wpos;
    *wpos += wl + 1;
    w->off[w->n + 1] = *wpos;
    for (i = 1; i < nf; i++) {
        double x = strtod(f[i], &end);
        if (*end || !isfinite(x))
            return "not a number";
        w->v[w->n * w->dim + i - 1] = (float)x;
    }
    h = hash_bytes(0, f[0], wl);
    w->h[w->n] = h;
    if (sidx_reserve(&w->ix, w, wv_h))
        return "out of memory";
    i = sidx_find(&w->ix, w, wv_eq, f[0], wl, h);
    if (!w->ix.slot[i]) {                   /* first occurrence wins */
        w->ix.slot[i] = (uint32_t)w->n + 1;
        w->ix.n++;
    }
    w->n++;
    return NULL;
}

/* Room for `lines` entries of dimension up to dim. */
static int wv_alloc(wvec *w, size_t lines, size_t bytes, size_t dim)
{
    w->words = rcp_malloc(bytes + 1);
    w->off = rcp_malloc((lines + 2) * sizeof *w->off);
    w->h = rcp_malloc((lines + 1) * sizeof *w->h);
    w->v = rcp_malloc((lines + 1) * dim * sizeof *w->v);
    return w->words && w->off && w->h && w->v ? 0 : -1;
}

static size_t count_lines(const char *s, size_t n, size_t *maxf)
{
    size_t i, lines = 1, f = 0, inword = 0;
    *maxf = 0;
    for (i = 0; i < n; i++) {
        if (s[i] == '\n') {
            lines++;
            *maxf = f > *maxf ? f : *maxf;
            f = inword = 0;
        } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
            inword = 0;
        } else if (!inword) {
            inword = 1;
            f++;
        }
    }
    *maxf = f > *maxf ? f : *maxf;
    return lines;
}

static int wv_parse(wvec *w, char *s, size_t n, char *err, size_t errlen)
{
    size_t maxf, lines = count_lines(s, n, &maxf), ln = 0, pos = 0, wpos = 0;
    char **f;
    if (maxf < 2 || maxf - 1 > WV_MAX_DIM) {
        snprintf(err, errlen, "word vectors: no vectors, or over %d "
                 "components", WV_MAX_DIM);
        return -1;
    }
    f = rcp_malloc(maxf * sizeof *f);
    if (!f || wv_alloc(w, lines, n, maxf - 1)) {
        rcp_free(f);
        snprintf(err, errlen, "word vectors: out of memory");
        return -1;
    }
    while (pos < n) {
        size_t e = pos, nf;
        const char *why = NULL;
        while (e < n && s[e] != '\n')
            e++;
        s[e] = 0;               /* s has a NUL at n; this ends each line */
        nf = split_fields(s + pos, e - pos, f, maxf);
        ln++;
        if (!(ln == 1 && nf == 2 && is_uint_text(f[0]) && is_uint_text(f[1]))
            && nf > 0)
            why = nf < 2 ? "no components" : wv_line(w, f, nf, &wpos);
        if (why) {
            snprintf(err, errlen, "word vectors: line %lu: %s",
                     (unsigned long)ln, why);
            rcp_free(f);
            return -1;
        }
        pos = e + 1;
    }
    rcp_free(f);
    if (w->n == 0) {
        snprintf(err, errlen, "word vectors: the file has no vectors");
        return -1;
    }
    return 0;
}

/* §15.7: the identity names the file's content (not its path), so the
** same vectors give the same identity anywhere and any edit changes it. */
static int wv_load(rcp_model *m, const char *path, char *err, size_t errlen)
{
    size_t n = 0;
    char *s = read_file(path, &n);
    uint64_t h;
    if (!s) {
        snprintf(err, errlen, "word vectors: cannot read %s", path);
        return -1;
    }
    h = hash_bytes(0x57564543ULL, s, n);
    if (wv_parse(&m->wv, s, n, err, errlen)) {
        rcp_free(s);
        wv_free(&m->wv);
        return -1;
    }
    rcp_free(s);
    m->o.dim = (unsigned)m->wv.dim;
    snprintf(m->identity, sizeof m->identity, "rcp-static-%016llx-%u",
             (unsigned long long)h, m->o.dim);
    return 0;
}

static const float *wv_get(const wvec *w, const char *k, size_t n)
{
    uint64_t h = hash_bytes(0, k, n);
    size_t i = sidx_find(&w->ix, w, wv_eq, k, n, h);
    return w->ix.slot[i] ? w->v + (w->ix.slot[i] - 1) * w->dim : NULL;
}

/* Mean of the known words' vectors, weighted like the hashed embedder;
** a text with no known word gets the zero vector. */
static int embed_static(const wvec *w, const char *text, size_t len,
                        float *out)
{
    rcp_tokens t;
    size_t i, j;
    memset(out, 0, w->dim * sizeof *out);
    rcp_tokens_init(&t);
    if (rcp_tokenize(&t, text, len, RCP_TOK_FOLD | RCP_TOK_STOP)) {
        rcp_tokens_free(&t);
        return -1;
    }
    for (i = 0; i < t.n; i++) {
        const float *v = wv_get(w, t.buf + t.v[i].word, t.v[i].wlen);
        double g = token_weight(&t.v[i], t.buf);
        if (v)
            for (j = 0; j < w->dim; j++)
                out[j] += (float)(g * v[j]);
    }
    rcp_tokens_free(&t);
    normalize(out, w->dim);
    return 0;
}

/* MARK: - Corpus-learned dense embedder: fold-in ("rcp-lsa-v1") --------- */

/* A text (query or document alike, §7.3) is folded into the trained
** space as LSI does it (Deerwester et al. 1990): its index terms (the
** index's own tokenizer, so a term means what BM25 means by it) that
** the model knows, each weighted log(1 + tf) x the term's entropy
** weight, summed over the terms' vectors in the model's term order
** (so the sum has one order, whatever the text's), normalised.  Terms
** the model does not know add nothing; a text with none is zero. */
static long lsa_term(const wvec *w, const char *k, size_t n)
{
    uint64_t h = hash_bytes(0, k, n);
    size_t i = sidx_find(&w->ix, w, wv_eq, k, n, h);
    return w->ix.slot[i] ? (long)w->ix.slot[i] - 1 : -1;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void lsa_fold(const struct lsa *l, uint32_t *rows, size_t n,
                     double *acc, float *out)
{
    size_t i, j, k, dim = l->w.dim;
    double s = 0;
    qsort(rows, n, sizeof *rows, u32_cmp);
    memset(acc, 0, dim * sizeof *acc);
    for (i = 0; i < n; i = j) {
        const float *v = l->w.v + (size_t)rows[i] * dim;
        double wt;
        for (j = i; j < n && rows[j] == rows[i]; j++)
            ;
        wt = log(1.0 + (double)(j - i)) * l->g[rows[i]];
        for (k = 0; k < dim; k++)
            acc[k] += wt * v[k];
    }
    for (k = 0; k < dim; k++)
        s += acc[k] * acc[k];
    s = s > 0 ? 1.0 / sqrt(s) : 0;
    for (k = 0; k < dim; k++)
        out[k] = (float)(acc[k] * s);
}

static int embed_lsa(const rcp_model *m, const char *text, size_t len,
                     float *out)
{
    const struct lsa *l = &m->lsa;
    rcp_tokens t;
    uint32_t *rows = NULL;
    double *acc = NULL;
    size_t i, n = 0;
    int rc = -1;
    rcp_tokens_init(&t);
    if (rcp_tokenize(&t, text, len, m->o.tok_flags))
        goto out;
    rows = rcp_malloc((t.n + 1) * sizeof *rows);
    acc = rcp_malloc(l->w.dim * sizeof *acc);
    if (!rows || !acc)
        goto out;
    for (i = 0; i < t.n; i++) {
        long r = lsa_term(&l->w, t.buf + t.v[i].term, t.v[i].tlen);
        if (r >= 0)
            rows[n++] = (uint32_t)r;
    }
    lsa_fold(l, rows, n, acc, out);
    rc = 0;
out:
    rcp_tokens_free(&t);
    rcp_free(rows);
    rcp_free(acc);
    return rc;
}

/* MARK: - Learned-sparse embedder (§7.4, "rcp-hash-sparse-v3") ------------ */

/* SPLADE's shape without its training: each stem (the same tokens the
** dense embedder reads) maps to vocabulary id hash(stem) mod vocabulary,
** valued token weight x (1 + ln tf).  Ids that collide add.  Indices come
** out strictly ascending, the order §7.4's dot product wants. */
typedef struct sp_entry {
    uint32_t id;
    float    v;
} sp_entry;

static int sp_cmp(const void *a, const void *b)
{
    uint32_t x = ((const sp_entry *)a)->id, y = ((const sp_entry *)b)->id;
    return x < y ? -1 : x > y;
}

/* Sort by id and merge duplicates; returns the new count. */
static size_t sp_merge(sp_entry *e, size_t n)
{
    size_t i, k = 0;
    if (n == 0)
        return 0;
    qsort(e, n, sizeof *e, sp_cmp);
    for (i = 0; i < n; i++) {
        if (k && e[k - 1].id == e[i].id)
            e[k - 1].v += e[i].v;
        else
            e[k++] = e[i];
    }
    return k;
}

static size_t sparse_entries(const rcp_model *m, const fbag *b,
                             sp_entry *e)
{
    size_t i, n = 0;
    for (i = 0; i < b->cap; i++) {
        if (!b->key[i])
            continue;
        e[n].id = (uint32_t)((b->key[i] >> 32) % m->o.sparse_vocab);
        e[n++].v = (float)fbag_value(b, i);
    }
    return sp_merge(e, n);
}

int rcp_model_embed_sparse(const rcp_model *m, const char *text, size_t len,
                           int kind, uint32_t **idx, float **val, size_t *n)
{
    rcp_tokens t;
    fbag b;
    sp_entry *e = NULL;
    size_t i, k = 0;
    int rc = -1;
    (void)kind;
    if (!m || !idx || !val || !n || (!text && len))
        return -1;
    *idx = NULL;
    *val = NULL;
    *n = 0;
    rcp_tokens_init(&t);
    if (rcp_tokenize(&t, text, len, RCP_TOK_DEFAULT) || fbag_init(&b, t.n)) {
        rcp_tokens_free(&t);
        return -1;
    }
    for (i = 0; i < t.n; i++) {
        double w = token_weight(&t.v[i], t.buf);
        if (w > 0)
            fbag_add(&b, hash_bytes(HASH_SEED_STEM, t.buf + t.v[i].term,
                                    t.v[i].tlen), w);
    }
    e = rcp_malloc((b.n + 1) * sizeof *e);
    *idx = rcp_malloc((b.n + 1) * sizeof **idx);
    *val = rcp_malloc((b.n + 1) * sizeof **val);
    if (e && *idx && *val) {
        k = sparse_entries(m, &b, e);
        for (i = 0; i < k; i++) {
            (*idx)[i] = e[i].id;
            (*val)[i] = e[i].v;
        }
        *n = k;
        rc = 0;
    } else {
        rcp_free(*idx);
        rcp_free(*val);
        *idx = NULL;
        *val = NULL;
    }
    rcp_free(e);
    fbag_free(&b);
    rcp_tokens_free(&t);
    return rc;
}

uint32_t rcp_model_vocab(const rcp_model *m)
{
    return m->o.sparse_vocab;
}

/* MARK: - Multi-vector embedder (§7.5, "rcp-hash-multi-v3") --------------- */

/* One row per token (stopwords and general-English fillers skipped): the
** token's own hashed features (stem + n-grams, as the dense embedder)
** plus half of each neighbour's, L2-normalised, so a row says which word
** it is and, more faintly, what stands next to it ("boundary layer" vs
** "layer of paint").  Compare rows by cosine (advertise "cosine"). */
#define MULTI_CONTEXT 0.5

/* The unnormalised features of token i alone, added into row with w. */
static int token_row(const rcp_tokens *t, size_t i, double w, float *row,
                     size_t dim)
{
    rcp_tokens one;
    fbag b;
    size_t k;
    one = *t;
    one.v = (rcp_token *)&t->v[i];
    one.n = 1;
    if (hash_features(&b, &one))
        return -1;
    for (k = 0; k < b.cap; k++)
        b.sum[k] *= w;
    project_bag(&b, row, dim);
    fbag_free(&b);
    return 0;
}

/* Keep the tokens with a positive weight (compacting t->v). */
static void content_tokens(rcp_tokens *t)
{
    size_t i, k = 0;
    for (i = 0; i < t->n; i++)
        if (token_weight(&t->v[i], t->buf) > 0)
            t->v[k++] = t->v[i];
    t->n = k;
}

static int multi_rows(const rcp_tokens *t, float *rows, size_t dim)
{
    size_t i;
    for (i = 0; i < t->n; i++) {
        float *r = rows + i * dim;
        if (token_row(t, i, 1.0, r, dim)
            || (i > 0 && token_row(t, i - 1, MULTI_CONTEXT, r, dim))
            || (i + 1 < t->n && token_row(t, i + 1, MULTI_CONTEXT, r, dim)))
            return -1;
        normalize(r, dim);
    }
    return 0;
}

int rcp_model_embed_multi(const rcp_model *m, const char *text, size_t len,
                          int kind, float **rows, size_t *nrows)
{
    rcp_tokens t;
    size_t dim = m->o.multi_dim;
    int rc = -1;
    (void)kind;
    if (!m || !rows || !nrows || (!text && len))
        return -1;
    *rows = NULL;
    *nrows = 0;
    rcp_tokens_init(&t);
    if (rcp_tokenize(&t, text, len, RCP_TOK_DEFAULT) == 0) {
        content_tokens(&t);
        *rows = rcp_malloc((t.n * dim + 1) * sizeof **rows);
        if (*rows) {
            memset(*rows, 0, (t.n * dim + 1) * sizeof **rows);
            rc = multi_rows(&t, *rows, dim);
        }
    }
    if (rc) {
        rcp_free(*rows);
        *rows = NULL;
    } else {
        *nrows = t.n;
    }
    rcp_tokens_free(&t);
    return rc;
}

size_t rcp_model_multi_dim(const rcp_model *m)
{
    return m->o.multi_dim;
}

/* MARK: - §8 Field values: typed once, when a document is added ----------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    int64_t era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Read exactly n digits at *p. */
static int digits(const char **p, const char *end, int n, int *out)
{
    int v = 0;
    while (n--) {
        if (*p >= end || **p < '0' || **p > '9')
            return -1;
        v = v * 10 + (*(*p)++ - '0');
    }
    *out = v;
    return 0;
}

/* The time and offset of a date-time after its date: T hh:mm:ss, an
** optional fraction, then Z or +hh:mm / -hh:mm; *s the seconds into the
** day (UTC), *ms the fraction's milliseconds. */
static int rfc3339_time(const char *p, const char *e, int64_t *s, int64_t *ms)
{
    int h, mi, sec, oh = 0, om = 0, sign = 0;
    double frac = 0, scale = 0.1;
    if ((*p != 'T' && *p != 't' && *p != ' ') || (++p, digits(&p, e, 2, &h))
        || p >= e || *p++ != ':' || digits(&p, e, 2, &mi) || p >= e
        || *p++ != ':' || digits(&p, e, 2, &sec) || h > 23 || mi > 59
        || sec > 60)
        return -1;
    if (p < e && *p == '.') {
        if (++p >= e || *p < '0' || *p > '9')
            return -1;
        for (; p < e && *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    if (p < e && (*p == 'Z' || *p == 'z')) {
        p++;
    } else if (p < e && (*p == '+' || *p == '-')) {
        sign = *p++ == '-' ? -1 : 1;
        if (digits(&p, e, 2, &oh) || p >= e || *p++ != ':'
            || digits(&p, e, 2, &om) || oh > 23 || om > 59)
            return -1;
    } else {
        return -1;
    }
    if (p != e)
        return -1;
    *s = h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60);
    *ms = (int64_t)(frac * 1000);
    return 0;
}

/* §4.6 RFC 3339 date-time ("2017-06-12T00:00:00Z", offsets, fractions)
** or a full-date ("2017-06-12", midnight UTC) into epoch milliseconds. */
static int parse_rfc3339(const char *p, size_t n, int64_t *ms)
{
    static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30,
                                 31 };
    const char *e = p + n;
    int y, mo, d;
    int64_t secs = 0, frac = 0;
    if (digits(&p, e, 4, &y) || p >= e || *p++ != '-' || digits(&p, e, 2, &mo)
        || p >= e || *p++ != '-' || digits(&p, e, 2, &d) || mo < 1
        || mo > 12 || d < 1 || d > mdays[mo - 1]
        || (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))))
        return -1;
    if (p < e && rfc3339_time(p, e, &secs, &frac))
        return -1;
    *ms = (days_from_civil(y, mo, d) * 86400 + secs) * 1000 + frac;
    return 0;
}

int rcp_model_value_of(rcp_field_type t, const rcp_json *v,
                       rcp_model_value *out)
{
    memset(out, 0, sizeof *out);
    if (!v)
        return -1;
    switch (t) {
    case RCP_FIELD_KEYWORD:
    case RCP_FIELD_TEXT:
        if (v->type != RCP_JSON_STRING)
            return -1;
        out->s = v->s;
        out->len = v->n;
        return 0;
    case RCP_FIELD_INT:
    case RCP_FIELD_FLOAT:
        if (v->type != RCP_JSON_NUMBER)
            return -1;
        out->num = rcp_json_num(v);
        return 0;
    case RCP_FIELD_BOOL:
        if (v->type != RCP_JSON_TRUE && v->type != RCP_JSON_FALSE)
            return -1;
        out->ms = v->type == RCP_JSON_TRUE;
        return 0;
    case RCP_FIELD_DATE:
        if (v->type == RCP_JSON_STRING)
            return parse_rfc3339(v->s, v->n, &out->ms);
        return rcp_json_int(v, &out->ms) ? 0 : -1;
    }
    return -1;
}

static int is_string_type(rcp_field_type t)
{
    return t == RCP_FIELD_KEYWORD || t == RCP_FIELD_TEXT;
}

/* The bytes of a string cell of column c, v->n of them. */
static const char *fv_str(const fcol *c, const fval *v)
{
    return v->n <= FV_INLINE ? v->u.b : c->bytes + v->u.off;
}

/* Order of field names for the meta reader: length, then bytes. */
static int name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn)
        return an < bn ? -1 : 1;
    return an ? memcmp(a, b, an) : 0;
}

/* The declared field meta key k[0..n) names, or -1. */
static long field_of(const rcp_model *m, const char *k, size_t n)
{
    size_t lo = 0, hi = m->o.nfields;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const rcp_field *f = &m->fields[m->fsorted[mid]];
        int c = name_cmp(k, n, f->name, f->namelen);
        if (c == 0)
            return (long)m->fsorted[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

/* opts.fields copied (names and all), checked and sorted for field_of;
** 0, or -1 with the reason in err. */
static int fields_init(rcp_model *m, const rcp_model_opts *o, char *err,
                       size_t errlen)
{
    size_t i, j, bytes = 0, n = o->nfields;
    char *p;
    m->o.fields = NULL;
    m->o.nfields = 0;
    if (!n)
        return 0;
    if (n > RCP_MODEL_MAX_FIELDS || !o->fields) {
        snprintf(err, errlen, "at most %u fields", RCP_MODEL_MAX_FIELDS);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const rcp_field *f = &o->fields[i];
        if ((!f->name && f->namelen) || f->type < RCP_FIELD_KEYWORD
            || f->type > RCP_FIELD_DATE || f->namelen > ((size_t)1 << 20)) {
            snprintf(err, errlen, "field %lu: no name or an unknown type",
                     (unsigned long)i);
            return -1;
        }
        bytes += f->namelen + 1;
    }
    m->fields = rcp_malloc(n * sizeof *m->fields);
    m->fnames = rcp_malloc(bytes);
    m->fsorted = rcp_malloc(n * sizeof *m->fsorted);
    m->col = rcp_malloc(n * sizeof *m->col);
    m->fseen = rcp_malloc(n * sizeof *m->fseen);
    if (!m->fields || !m->fnames || !m->fsorted || !m->col || !m->fseen) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(m->col, 0, n * sizeof *m->col);
    for (i = 0, p = m->fnames; i < n; i++) {
        m->fields[i] = o->fields[i];
        if (o->fields[i].namelen)
            memcpy(p, o->fields[i].name, o->fields[i].namelen);
        p[o->fields[i].namelen] = 0;
        m->fields[i].name = p;
        p += o->fields[i].namelen + 1;
    }
    for (i = 0; i < n; i++) {           /* insertion sort: few fields */
        uint32_t x = (uint32_t)i;
        const rcp_field *f = &m->fields[x];
        for (j = i; j > 0; j--) {
            const rcp_field *g = &m->fields[m->fsorted[j - 1]];
            int c = name_cmp(f->name, f->namelen, g->name, g->namelen);
            if (c == 0) {
                snprintf(err, errlen, "field '%.*s' is declared twice",
                         (int)(f->namelen > 64 ? 64 : f->namelen), f->name);
                return -1;
            }
            if (c > 0)
                break;
            m->fsorted[j] = m->fsorted[j - 1];
        }
        m->fsorted[j] = x;
    }
    m->o.fields = m->fields;
    m->o.nfields = n;
    rcp_arena_init(&m->farena, 0);
    return 0;
}

/* Each declared field's value in meta, the last of a repeated key (a
** null one counts as absent) into m->fseen; a meta that is not a JSON
** object holds none.  0, or -1 out of memory. */
static int meta_fields(rcp_model *m, const char *meta, size_t len)
{
    const rcp_json *v;
    rcp_json_err e;
    size_t i;
    long f;
    memset(m->fseen, 0, m->o.nfields * sizeof *m->fseen);
    if (!meta)
        return 0;
    v = rcp_json_parse(&m->farena, meta, len, 0, &e);
    if (!v)
        return e.code == RCP_JSON_E_NOMEM ? -1 : 0;
    for (i = 0; v->type == RCP_JSON_OBJECT && i < v->n; i++)
        if ((f = field_of(m, v->kids[i].key, v->kids[i].keylen)) >= 0)
            m->fseen[f] = v->kids[i].type == RCP_JSON_NULL ? NULL
                                                            : &v->kids[i];
    return 0;
}

/* What v (a field's value in a meta, NULL: none) takes in the field's
** pools: *el elements, *bytes bytes (strings longer than FV_INLINE); -1
** when a count passes what a cell holds. */
static int value_size(rcp_field_type t, const rcp_json *v, size_t *el,
                      size_t *bytes)
{
    size_t i;
    int str = is_string_type(t);
    *el = *bytes = 0;
    if (!v)
        return 0;
    if (v->type == RCP_JSON_ARRAY) {
        *el = v->n;
        for (i = 0; str && i < v->n; i++)
            if (v->kids[i].type == RCP_JSON_STRING
                && v->kids[i].n > FV_INLINE)
                *bytes += v->kids[i].n;
    } else if (str && v->type == RCP_JSON_STRING && v->n > FV_INLINE) {
        *bytes = v->n;
    }
    return *el >= UINT32_MAX || *bytes >= UINT32_MAX
        || (v->type == RCP_JSON_STRING && v->n >= UINT32_MAX) ? -1 : 0;
}

/* v as a scalar cell of type t; a longer string's bytes appended to the
** field's pool (reserved). */
static void put_scalar(rcp_field_type t, const rcp_json *v, fval *out,
                       fcol *c)
{
    rcp_model_value x;
    memset(out, 0, sizeof *out);
    if (rcp_model_value_of(t, v, &x)) {
        out->kind = FV_BAD;
        return;
    }
    out->kind = FV_VAL;
    if (is_string_type(t)) {
        out->n = (uint32_t)x.len;
        if (x.len <= FV_INLINE) {
            if (x.len)
                memcpy(out->u.b, x.s, x.len);
            return;
        }
        memcpy(c->bytes + c->nbytes, x.s, x.len);
        out->u.off = c->nbytes;
        c->nbytes += x.len;
    } else if (t == RCP_FIELD_INT || t == RCP_FIELD_FLOAT) {
        out->u.x = x.num;
    } else {
        out->u.i = x.ms;
    }
}

/* Field f's cell of docno from v, its elements and longer strings
** appended to the field's pools (reserved). */
static void put_value(rcp_model *m, size_t f, uint32_t docno,
                      const rcp_json *v)
{
    fcol *c = &m->col[f];
    fval *cell = &c->cell[docno];
    rcp_field_type t = m->fields[f].type;
    size_t i;
    c->nel0 = c->nel;
    c->nbytes0 = c->nbytes;
    memset(cell, 0, sizeof *cell);
    if (!v)
        return;
    if (v->type != RCP_JSON_ARRAY) {
        put_scalar(t, v, cell, c);
        return;
    }
    cell->kind = FV_ARRAY;
    cell->n = (uint32_t)v->n;
    cell->u.off = c->nel;
    c->nel += v->n;
    for (i = 0; i < v->n; i++)
        put_scalar(t, &v->kids[i], &c->el[cell->u.off + i], c);
}

/* The cells of docno (columns reserved) from meta, their elements and
** longer strings at the ends of the fields' pools, so each pool holds
** its documents' data in docno order (compact_fields relies on it).
** 0, or -1 out of memory, nothing changed; after 0, fields_undo takes
** it back. */
static int read_fields(rcp_model *m, doc *d, uint32_t docno,
                       const char *meta, size_t len)
{
    size_t f, el, bytes, cap;
    int rc = 0;
    if (!m->o.nfields)
        return 0;
    rc = meta_fields(m, meta, len);
    for (f = 0; rc == 0 && f < m->o.nfields; f++) {
        fcol *c = &m->col[f];
        rc = value_size(m->fields[f].type, m->fseen[f], &el, &bytes);
        if (rc == 0 && el) {
            cap = c->elcap;
            rc = grow((void **)&c->el, &cap, c->nel + el, sizeof *c->el);
            c->elcap = cap;
        }
        if (rc == 0 && bytes) {
            cap = c->bytecap;
            rc = grow((void **)&c->bytes, &cap, c->nbytes + bytes, 1);
            c->bytecap = cap;
        }
        d->fbytes += el * sizeof(fval) + bytes;
    }
    for (f = 0; rc == 0 && f < m->o.nfields; f++)
        put_value(m, f, docno, m->fseen[f]);
    rcp_arena_reset(&m->farena);
    if (rc)
        d->fbytes = 0;
    return rc ? -1 : 0;
}

/* Take back what read_fields appended for the add that failed. */
static void fields_undo(rcp_model *m)
{
    size_t f;
    for (f = 0; f < m->o.nfields; f++) {
        m->col[f].nel = m->col[f].nel0;
        m->col[f].nbytes = m->col[f].nbytes0;
    }
}

/* A document whose text is dropped (note 11) holds no values either;
** what they took in the pools (still its fbytes) is given back by the
** compaction that gives back its docno. */
static void drop_fields(rcp_model *m, uint32_t docno)
{
    size_t f;
    for (f = 0; f < m->o.nfields; f++)
        memset(&m->col[f].cell[docno], 0, sizeof(fval));
}

/* What the pools take: the sum of every docno's fbytes. */
static size_t pool_bytes(const rcp_model *m)
{
    size_t f, n = 0;
    for (f = 0; f < m->o.nfields; f++)
        n += m->col[f].nel * sizeof(fval) + m->col[f].nbytes;
    return n;
}

/* Compaction (note 4) moved the cells of docnos 0..n-1; the pools
** follow, each document's data moved down in docno order over what the
** gone ones held. */
static void compact_fields(rcp_model *m)
{
    size_t f, i, j;
    for (f = 0; f < m->o.nfields; f++) {
        fcol *c = &m->col[f];
        int str = is_string_type(m->fields[f].type);
        size_t we = 0, wb = 0;
        for (i = 0; i < m->ndocs; i++) {
            fval *v = &c->cell[i];
            fval *e = v;
            size_t ne = 1;
            if (v->kind == FV_ARRAY) {
                if (v->n)
                    memmove(c->el + we, c->el + v->u.off,
                            v->n * sizeof *c->el);
                v->u.off = we;
                e = c->el + we;
                ne = v->n;
                we += v->n;
            }
            for (j = 0; str && j < ne; j++)
                if (e[j].kind == FV_VAL && e[j].n > FV_INLINE) {
                    memmove(c->bytes + wb, c->bytes + e[j].u.off, e[j].n);
                    e[j].u.off = wb;
                    wb += e[j].n;
                }
        }
        c->nel = we;
        c->nbytes = wb;
    }
}

/* Rollback dropped docnos n0..: the pools end where the first dropped
** document's data began. */
static void drop_tail_fields(rcp_model *m, size_t n0)
{
    size_t f, i, j;
    for (f = 0; f < m->o.nfields; f++) {
        fcol *c = &m->col[f];
        int el = 0, by = !is_string_type(m->fields[f].type);
        for (i = n0; i < m->ndocs && !(el && by); i++) {
            const fval *v = &c->cell[i];
            const fval *e = v;
            size_t ne = 1;
            if (v->kind == FV_ARRAY) {
                if (!el)
                    c->nel = v->u.off;
                el = 1;
                e = c->el + v->u.off;
                ne = v->n;
            }
            for (j = 0; !by && j < ne; j++)
                if (e[j].kind == FV_VAL && e[j].n > FV_INLINE) {
                    c->nbytes = e[j].u.off;
                    by = 1;
                }
        }
    }
}

/* Room in every column for docno ndocs. */
static int reserve_fields(rcp_model *m)
{
    size_t f, cap = m->colcap;
    if (!m->o.nfields || m->ndocs < m->colcap)
        return 0;
    for (f = 0; f < m->o.nfields; f++) {
        cap = m->colcap;
        if (grow((void **)&m->col[f].cell, &cap, m->ndocs + 1,
                 sizeof *m->col[f].cell))
            return -1;
    }
    m->colcap = cap;
    return 0;
}

static void free_fields(rcp_model *m)
{
    size_t f;
    for (f = 0; m->col && f < m->o.nfields; f++) {
        rcp_free(m->col[f].cell);
        rcp_free(m->col[f].el);
        rcp_free(m->col[f].bytes);
    }
    rcp_free(m->col);
    rcp_free(m->fields);
    rcp_free(m->fnames);
    rcp_free(m->fsorted);
    rcp_free(m->fseen);
    if (m->o.nfields)
        rcp_arena_free(&m->farena);
}

const rcp_field *rcp_model_fields(const rcp_model *m, size_t *n)
{
    *n = m ? m->o.nfields : 0;
    return m ? m->fields : NULL;
}

/* MARK: - Lifecycle ------------------------------------------------------- */

/* What every public entry point asserts on the way in (and a change on
** the way out): the O(1) part of the invariants -- each docno live,
** retained or gone (note 4, the life of a document), the ring within
** its bounds, the tables sized to what they index.  rcp_model_check
** recomputes them all.  Input is validated apart, with an error. */
static int sane(const rcp_model *m)
{
    return m->ndocs <= m->doccap
        && m->live + m->gcount + m->gone == m->ndocs
        && m->gcount <= m->keep && m->ghead <= m->keep
        && m->floor <= m->version
        && m->nterms == m->tix.n && m->nterms <= m->termcap
        && m->ids.n <= m->ndocs && m->parents.n <= m->ndocs
        && (!m->o.nfields || m->colcap >= m->ndocs)
        && (m->stamp != 0 || m->lex.n == 0);
}

static void set_identities(rcp_model *m)
{
    if (!m->wv.n)
        snprintf(m->identity, sizeof m->identity, "rcp-hash-ngram-v4-%u",
                 m->o.dim);
    snprintf(m->sparse_identity, sizeof m->sparse_identity,
             "rcp-hash-sparse-v3-%lu", (unsigned long)m->o.sparse_vocab);
    snprintf(m->multi_identity, sizeof m->multi_identity,
             "rcp-hash-multi-v3-%u", m->o.multi_dim);
}

static const char *check_opts(const rcp_model_opts *o)
{
    if (o->dim < 1 || o->dim > RCP_MODEL_MAX_DIM)
        return "dimension out of range";
    if (o->multi_dim < 1 || o->multi_dim > RCP_MODEL_MAX_DIM)
        return "multi-vector dimension out of range";
    if (o->sparse_vocab < 1)
        return "sparse vocabulary must be positive";
    if (o->ext_embed && (o->vectors_path || !o->ext_identity))
        return "a delegated embedder takes no vectors file and needs an "
               "identity";
    if (!(o->k1 >= 0 && o->k1 <= 100) || !(o->b >= 0 && o->b <= 1))
        return "BM25 parameters out of range (k1 in [0,100], b in [0,1])";
    if (!(o->prf_beta >= 0 && o->prf_beta <= 100))
        return "feedback weight out of range";
    if (o->snapshot_keep > (1u << 24))
        return "snapshot_keep out of range (at most 2^24 versions)";
    return NULL;
}

rcp_model *rcp_model_new(const rcp_model_opts *opts, char *err,
                         size_t errlen)
{
    rcp_model_opts def;
    rcp_model *m;
    const char *why;
    size_t i;
    if (!opts) {
        rcp_model_opts_init(&def);
        opts = &def;
    }
    if ((why = check_opts(opts)) != NULL) {
        snprintf(err, errlen, "%s", why);
        return NULL;
    }
    m = rcp_malloc(sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memset(m, 0, sizeof *m);
    m->o = *opts;
    for (i = 1; i < TFLOG_N; i++)
        m->tflog[i] = (1.0 + log((double)i)) / (double)i;
    m->o.vectors_path = NULL;           /* not kept: the caller owns it */
    m->keep = opts->snapshot_keep;
    m->hist = rcp_malloc((m->keep + 1) * sizeof *m->hist);
    m->grave = rcp_malloc((m->keep + 1) * sizeof *m->grave);
    if (!m->hist || !m->grave) {
        snprintf(err, errlen, "out of memory");
        rcp_model_free(m);
        return NULL;
    }
    memset(m->hist, 0, (m->keep + 1) * sizeof *m->hist);
    if (fields_init(m, opts, err, errlen)
        || (opts->vectors_path
            && wv_load(m, opts->vectors_path, err, errlen))) {
        rcp_model_free(m);
        return NULL;
    }
    rcp_vec_q8_init(&m->q8, m->o.dim);  /* wv_load may have set the dim */
    set_identities(m);
    return m;
}

static void doc_release(doc *d)
{
    rcp_free(d->text);
    rcp_free(d->meta);
    rcp_free(d->terms);
    d->text = d->meta = NULL;
    d->fbytes = 0;
    d->terms = NULL;
    d->textlen = d->metalen = 0;
    d->nterms = 0;
}

void rcp_model_free(rcp_model *m)
{
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->ndocs; i++) {
        doc_release(&m->docs[i]);
        rcp_free(m->docs[i].id);
        rcp_free(m->docs[i].ck);
    }
    for (i = 0; i < m->nterms; i++) {
        rcp_free(m->terms[i].s);
        rcp_free(m->terms[i].p);
    }
    for (i = 0; i < m->norigins; i++)
        rcp_free(m->origins[i].source);
    rcp_free(m->origins);
    rcp_free(m->docs);
    rcp_free(m->terms);
    rcp_free(m->ids.slot);
    rcp_free(m->parents.slot);
    rcp_free(m->tix.slot);
    rcp_free(m->vecs);
    rcp_vec_q8_free(&m->q8);
    rcp_free(m->livebits);
    rcp_free(m->dlen);
    rcp_free(m->idpre);
    rcp_free(m->hist);
    rcp_free(m->grave);
    wv_free(&m->wv);
    wv_free(&m->lsa.w);
    rcp_free(m->lsa.g);
    lex_free(&m->lex);
    rcp_free(m->bag.sum);
    rcp_free(m->tids);
    rcp_free(m->dw);
    rcp_free(m->wt);
    rcp_free(m->wbuf);
    free_fields(m);
    rcp_free(m);
}

const char *rcp_model_identity(const rcp_model *m, int which)
{
    if (which == RCP_EMBED_SPARSE)
        return m->sparse_identity;
    if (which == RCP_EMBED_MULTI)
        return m->multi_identity;
    return m->o.ext_embed ? m->o.ext_identity : m->identity;
}

size_t rcp_model_dim(const rcp_model *m)
{
    return m->o.dim;
}

int rcp_model_has_dense_index(const rcp_model *m)
{
    return !m->o.no_dense_index;
}

int rcp_model_default_mode(const rcp_model *m)
{
    return !m->o.no_dense_index && (m->o.ext_embed || m->wv.n)
           ? RCP_MODE_HYBRID : RCP_MODE_SPARSE;
}

/* Where docno's dense vector lives; NULL without a dense index. */
static float *doc_vector(const rcp_model *m, size_t docno)
{
    return m->o.no_dense_index ? NULL : m->vecs + docno * m->o.dim;
}

size_t rcp_model_count(const rcp_model *m)
{
    return m->live;
}

uint64_t rcp_model_version(const rcp_model *m)
{
    return m->version;
}

/* §7.3: kind (query/document) is accepted for asymmetric encoders; ours
** is symmetric, so both kinds give the same vector. */
int rcp_model_embed(const rcp_model *m, const char *text, size_t len,
                    int kind, float *out)
{
    if (!m || !out || (!text && len))
        return -1;
    if (m->o.ext_embed)             /* issue 18: delegated (delegate.c) */
        return m->o.ext_embed(m->o.ext_ud, text, len, kind, out) ? -1 : 0;
    if (m->wv.n)
        return embed_static(&m->wv, text, len, out);
    if (m->lsa.w.n)
        return embed_lsa(m, text, len, out);
    return embed_hash(text, len, m->tflog, out, m->o.dim);
}

/* MARK: - Corpus-learned dense embedder: training (LSA) ------------------ */

/* The model is a truncated SVD of the live corpus's term-document matrix
** A (terms x documents), log-entropy weighted (Dumais 1991: a_td =
** log(1 + tf) x g_t, g_t = 1 + sum_d p_td ln p_td / ln N, p_td = tf /
** the term's total tf): a term's vector is its row of U_k, the top k =
** dim left singular vectors, found by subspace iteration (Halko,
** Martinsson & Tropp 2011): Y = A G for a fixed pseudo-random G, then
** LSA_POWER times Q = orth(Y), Y = A A^T Q; the last orth is U_k's span.
** Folding a text in (lsa_fold) projects its weighted term vector onto
** that span, U_k^T a -- LSI's document coordinates scaled by Sigma, so
** cosines are those of the rank-k approximation of A.  Without the
** rotation into singular vectors the projections differ from U_k^T a
** only by an orthogonal k x k matrix, which no cosine sees, so no
** eigensolver is needed.
**
** The documents are the live ones in docno order (arrival order, which
** a store's replay keeps), past LSA_MAX_DOCS an even sample of them;
** the vocabulary is the terms in at least two of those (a term in one
** document cannot relate two), the LSA_MAX_TERMS most frequent when
** there are more, ordered by their bytes.  So a training's time and
** memory are bounded whatever the corpus's size (re-embedding the
** stored texts aside).  Everything runs in one thread in a fixed
** order, so the same corpus gives the same model, bit for bit, from one
** build on one machine; the identity names the corpus it was trained
** on (a fingerprint of the matrix's terms and counts, never of
** floating-point results), so it is the same on every machine, whose
** vectors then agree to rounding (x87, FMA contraction, libm's log). */
#define LSA_MAX_TERMS (1u << 14)
#define LSA_MAX_DOCS  (1u << 14)
#define LSA_POWER     3

typedef struct lsa_pick {
    const char *s;
    uint32_t len, df, id;
} lsa_pick;

static int pick_bytes(const lsa_pick *a, const lsa_pick *b)
{
    int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int pick_by_bytes(const void *pa, const void *pb)
{
    return pick_bytes(pa, pb);
}

static int pick_by_df(const void *pa, const void *pb)
{
    const lsa_pick *a = pa, *b = pb;
    if (a->df != b->df)
        return a->df > b->df ? -1 : 1;
    return pick_bytes(a, b);
}

/* The weighted matrix by document (CSC): column c holds rows row[col[c]
** .. col[c+1]) ascending, with values val; fp fingerprints it. */
typedef struct lsa_csc {
    uint32_t *col, *row;
    double   *val;
    float    *g;
    lsa_pick *pick;
    size_t    nd, nt, nnz;
    uint64_t  fp;
} lsa_csc;

static void csc_free(lsa_csc *a)
{
    rcp_free(a->col);
    rcp_free(a->row);
    rcp_free(a->val);
    rcp_free(a->g);
    rcp_free(a->pick);
    memset(a, 0, sizeof *a);
}

/* An integer into a fingerprint, by value (the same on every machine). */
static uint64_t fp_mix(uint64_t h, uint64_t x)
{
    return mix64(h * 0x100000001b3ULL ^ x);
}

static int is_live(const rcp_model *m, uint32_t docno)
{
    return (m->livebits[docno >> 3] >> (docno & 7)) & 1;
}

/* The documents it learns from: the live ones, or past LSA_MAX_DOCS an
** even sample of them (every s-th in docno order), so that a training
** costs the same at any corpus size; colof[docno] is the document's
** column, or NO_DOC. */
static size_t lsa_sample(const rcp_model *m, uint32_t *colof)
{
    size_t i, seen = 0, nd = 0;
    size_t s = (m->live + LSA_MAX_DOCS - 1) / LSA_MAX_DOCS;
    for (i = 0; i < m->ndocs; i++) {
        colof[i] = NO_DOC;
        if (is_live(m, (uint32_t)i) && seen++ % s == 0)
            colof[i] = (uint32_t)nd++;
    }
    return nd;
}

/* How many of the sampled documents hold term t. */
static uint32_t sample_df(const term *t, const uint32_t *colof)
{
    uint32_t n = 0;
    size_t i;
    for (i = 0; i < t->n; i++)
        n += colof[t->p[i].doc] != NO_DOC;
    return n;
}

static int lsa_vocab(const rcp_model *m, lsa_csc *a, const uint32_t *colof)
{
    size_t i, n = 0;
    a->pick = rcp_malloc((m->nterms + 1) * sizeof *a->pick);
    if (!a->pick)
        return -1;
    for (i = 0; i < m->nterms; i++) {
        const term *t = &m->terms[i];
        uint32_t df = t->df < 2 ? 0 : sample_df(t, colof);
        if (df < 2)
            continue;
        a->pick[n].s = t->s;
        a->pick[n].len = t->len;
        a->pick[n].df = df;
        a->pick[n++].id = (uint32_t)i;
    }
    if (n > LSA_MAX_TERMS) {
        qsort(a->pick, n, sizeof *a->pick, pick_by_df);
        n = LSA_MAX_TERMS;
    }
    qsort(a->pick, n, sizeof *a->pick, pick_by_bytes);
    a->nt = n;
    return 0;
}

/* One term's row: its entropy weight, its entries placed into their
** columns (fill: the next free place of each column). */
static void lsa_row(const rcp_model *m, lsa_csc *a, size_t r,
                    const uint32_t *colof, uint32_t *fill)
{
    const term *t = &m->terms[a->pick[r].id];
    double gf = 0, h = 0, g;
    size_t i;
    for (i = 0; i < t->n; i++)
        if (colof[t->p[i].doc] != NO_DOC)
            gf += t->p[i].tf;
    for (i = 0; i < t->n; i++)
        if (colof[t->p[i].doc] != NO_DOC) {
            double p = t->p[i].tf / gf;
            h += p * log(p);
        }
    g = 1.0 + h / log((double)a->nd);
    a->g[r] = (float)g;
    a->fp = fp_mix(hash_bytes(a->fp, t->s, t->len), t->len);
    for (i = 0; i < t->n; i++) {
        uint32_t c = colof[t->p[i].doc];
        if (c == NO_DOC)
            continue;
        a->row[fill[c]] = (uint32_t)r;
        a->val[fill[c]++] = log(1.0 + t->p[i].tf) * (double)a->g[r];
        a->fp = fp_mix(fp_mix(a->fp, c), t->p[i].tf);
    }
}

static int lsa_matrix(const rcp_model *m, lsa_csc *a)
{
    uint32_t *colof = rcp_malloc((m->ndocs + 1) * sizeof *colof);
    uint32_t *fill = NULL;
    size_t i, j, nd;
    int rc = -1;
    if (!colof)
        goto out;
    nd = a->nd = lsa_sample(m, colof);
    if (lsa_vocab(m, a, colof))
        goto out;
    a->col = rcp_malloc((nd + 2) * sizeof *a->col);
    fill = rcp_malloc((nd + 1) * sizeof *fill);
    a->g = rcp_malloc((a->nt + 1) * sizeof *a->g);
    if (!a->col || !fill || !a->g)
        goto out;
    memset(a->col, 0, (nd + 2) * sizeof *a->col);
    for (i = 0; i < a->nt; i++) {
        const term *t = &m->terms[a->pick[i].id];
        for (j = 0; j < t->n; j++)
            if (colof[t->p[j].doc] != NO_DOC)
                a->col[colof[t->p[j].doc] + 1]++;
    }
    for (i = 0; i < nd; i++)
        a->col[i + 1] += a->col[i];
    a->nnz = a->col[nd];
    a->row = rcp_malloc((a->nnz + 1) * sizeof *a->row);
    a->val = rcp_malloc((a->nnz + 1) * sizeof *a->val);
    if (!a->row || !a->val)
        goto out;
    memcpy(fill, a->col, nd * sizeof *fill);
    a->fp = fp_mix(fp_mix(0x4c534131ULL, m->o.dim), nd);
    for (i = 0; i < a->nt; i++)
        lsa_row(m, a, i, colof, fill);
    rc = 0;
out:
    rcp_free(colof);
    rcp_free(fill);
    return rc;
}

/* Orthonormalise the k columns of y (nt x k, row-major) in place by
** modified Gram-Schmidt, on their transpose t (k x nt): a column that
** is (numerically) in the span of those before it becomes zero. */
static void lsa_orth(double *y, double *t, size_t nt, size_t k)
{
    size_t i, j, r;
    for (r = 0; r < nt; r++)
        for (j = 0; j < k; j++)
            t[j * nt + r] = y[r * k + j];
    for (j = 0; j < k; j++) {
        double *c = t + j * nt, n0 = 0, n1 = 0;
        for (r = 0; r < nt; r++)
            n0 += c[r] * c[r];
        for (i = 0; i < j; i++) {
            const double *b = t + i * nt;
            double d = 0;
            for (r = 0; r < nt; r++)
                d += b[r] * c[r];
            for (r = 0; r < nt; r++)
                c[r] -= d * b[r];
        }
        for (r = 0; r < nt; r++)
            n1 += c[r] * c[r];
        n1 = n1 > n0 * 1e-20 && n1 > 0 ? 1.0 / sqrt(n1) : 0;
        for (r = 0; r < nt; r++)
            c[r] *= n1;
    }
    for (r = 0; r < nt; r++)
        for (j = 0; j < k; j++)
            y[r * k + j] = t[j * nt + r];
}

/* y = A A^T q (both nt x k, row-major); z: k doubles of scratch. */
static void lsa_aat(const lsa_csc *a, const double *q, double *y, double *z,
                    size_t k)
{
    size_t c, e, j;
    memset(y, 0, a->nt * k * sizeof *y);
    for (c = 0; c < a->nd; c++) {
        memset(z, 0, k * sizeof *z);
        for (e = a->col[c]; e < a->col[c + 1]; e++) {
            const double *qr = q + (size_t)a->row[e] * k;
            for (j = 0; j < k; j++)
                z[j] += a->val[e] * qr[j];
        }
        for (e = a->col[c]; e < a->col[c + 1]; e++) {
            double *yr = y + (size_t)a->row[e] * k;
            for (j = 0; j < k; j++)
                yr[j] += a->val[e] * z[j];
        }
    }
}

/* y = A G, G (documents x k) uniform in [-1, 1) from a fixed seed. */
static void lsa_start(const lsa_csc *a, double *y, double *z, size_t k)
{
    size_t c, e, j;
    memset(y, 0, a->nt * k * sizeof *y);
    for (c = 0; c < a->nd; c++) {
        for (j = 0; j < k; j++)
            z[j] = (double)(mix64((uint64_t)c * k + j + 1) >> 11)
                   * (2.0 / 9007199254740992.0) - 1.0;
        for (e = a->col[c]; e < a->col[c + 1]; e++) {
            double *yr = y + (size_t)a->row[e] * k;
            for (j = 0; j < k; j++)
                yr[j] += a->val[e] * z[j];
        }
    }
}

/* The trained embedder into l (empty on entry): a's terms, their
** weights and vectors. */
static int lsa_fit(const rcp_model *m, lsa_csc *a, struct lsa *l)
{
    size_t k = m->o.dim, it, i, bytes = 0, wpos = 0;
    double *y, *q, *z;
    int rc = -1;
    y = rcp_malloc((a->nt * k + 1) * sizeof *y);
    q = rcp_malloc((a->nt * k + 1) * sizeof *q);
    z = rcp_malloc(k * sizeof *z);
    for (i = 0; i < a->nt; i++)
        bytes += a->pick[i].len + 1;
    if (!y || !q || !z || wv_alloc(&l->w, a->nt, bytes, k))
        goto out;
    lsa_start(a, y, z, k);
    for (it = 0; it < LSA_POWER; it++) {
        double *s;
        lsa_orth(y, q, a->nt, k);
        lsa_aat(a, y, q, z, k);
        s = y, y = q, q = s;
    }
    lsa_orth(y, q, a->nt, k);
    l->w.dim = k;
    for (i = 0; i < a->nt; i++) {
        const lsa_pick *p = &a->pick[i];
        size_t j, slot;
        memcpy(l->w.words + wpos, p->s, p->len);
        l->w.words[wpos + p->len] = 0;
        l->w.off[i] = wpos;
        wpos += p->len + 1;
        l->w.off[i + 1] = wpos;
        l->w.h[i] = hash_bytes(0, p->s, p->len);
        for (j = 0; j < k; j++)
            l->w.v[i * k + j] = (float)y[i * k + j];
        l->w.n = i + 1;
        if (sidx_reserve(&l->w.ix, &l->w, wv_h))
            goto out;
        slot = sidx_find(&l->w.ix, &l->w, wv_eq, p->s, p->len, l->w.h[i]);
        l->w.ix.slot[slot] = (uint32_t)i + 1;
        l->w.ix.n++;
    }
    l->g = a->g;
    a->g = NULL;
    rc = 0;
out:
    rcp_free(y);
    rcp_free(q);
    rcp_free(z);
    return rc;
}

static size_t lsa_min_docs(const rcp_model *m)
{
    size_t n = m->o.lsa_min_docs ? m->o.lsa_min_docs
                                 : RCP_MODEL_LSA_MIN_DOCS;
    return n < 2 ? 2 : n;
}

static int lsa_on(const rcp_model *m)     /* not with outside vectors */
{
    return m->o.lsa && !m->wv.n && !m->o.ext_embed && !m->o.no_dense_index;
}

/* The schedule: trained once the corpus has lsa_min_docs live
** documents, again once it has RCP_MODEL_LSA_GROWTH times those of the
** last training (or of the last try that found nothing to learn). */
static int lsa_due(const rcp_model *m)
{
    return lsa_on(m) && m->live >= lsa_min_docs(m)
        && (!m->lsa.trained_on
            || m->live >= m->lsa.trained_on * RCP_MODEL_LSA_GROWTH);
}

/* Every stored text embedded again with the new model, into rows (then
** the model's), so that nothing changes until all of it is done. */
static int lsa_reembed(rcp_model *m, float *rows)
{
    size_t i, dim = m->o.dim;
    for (i = 0; i < m->ndocs; i++) {
        const doc *d = &m->docs[i];
        if (!d->text) {
            memset(rows + i * dim, 0, dim * sizeof *rows);
            continue;
        }
        if (embed_lsa(m, d->text, d->textlen, rows + i * dim))
            return -1;
    }
    return 0;
}

int rcp_model_train(rcp_model *m, int force)
{
    lsa_csc a;
    struct lsa l, old;
    float *rows = NULL;
    uint64_t fp;
    size_t i;
    int rc = -1;
    if (!m)
        return -1;
    if (!(force ? lsa_on(m) && m->live >= 2 : lsa_due(m)))
        return 0;
    memset(&a, 0, sizeof a);
    memset(&l, 0, sizeof l);
    if (lsa_matrix(m, &a))
        goto out;
    if (a.nt == 0) {            /* no word in two documents: nothing to
                                ** learn yet; the hashed embedder stays */
        m->lsa.trained_on = m->live;
        rc = 0;
        goto out;
    }
    if (lsa_fit(m, &a, &l))
        goto out;
    fp = a.fp;
    csc_free(&a);                       /* before the rows' copy */
    if (!m->o.no_dense_index
        && !(rows = rcp_malloc((m->veccap ? m->veccap : 1)
                               * sizeof *rows)))
        goto out;
    old = m->lsa;
    m->lsa.w = l.w;
    m->lsa.g = l.g;
    if (rows && lsa_reembed(m, rows)) {
        m->lsa = old;
        goto out;
    }
    /* committed: nothing below can fail */
    wv_free(&old.w);
    rcp_free(old.g);
    memset(&l, 0, sizeof l);
    m->lsa.trained_on = m->live;
    m->lsa.gen = old.gen + 1;
    snprintf(m->identity, sizeof m->identity, "rcp-lsa-v1-%u-%016llx",
             m->o.dim, (unsigned long long)fp);
    if (rows) {
        rcp_free(m->vecs);
        m->vecs = rows;
        rows = NULL;
        for (i = 0; i < m->ndocs; i++)
            rcp_vec_q8_set(&m->q8, i, doc_vector(m, i));
    }
    /* §7.7.1: a pinned version saw other vectors; it is served exactly
    ** or not at all, so none before this one is kept */
    m->floor = m->version;
    rc = 1;
out:
    if (rc < 0) {
        wv_free(&l.w);
        rcp_free(l.g);
    }
    rcp_free(rows);
    csc_free(&a);
    return rc;
}

unsigned rcp_model_generation(const rcp_model *m)
{
    return m->lsa.w.n ? m->lsa.gen : 0;
}

/* MARK: - Index: add, delete (§7.10, §7.11) ------------------------------- */

#define GONE_MIN     64u    /* reclaim no fewer gone documents at once */
#define POSTINGS_MIN 4096u  /* ... nor fewer of their postings */
#define TERMS_MIN    1024u  /* ... nor fewer unused terms */

static char *dup_bytes(const char *s, size_t n)
{
    char *d = rcp_malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* The first 8 bytes of an id as a big-endian number, zeros after a
** shorter id: unequal prefixes order as id_cmp orders the ids (a zero
** pad can only differ from a real, nonzero byte, and the shorter id
** sorts first), equal ones need id_cmp. */
static uint64_t id_prefix(const char *id, size_t n)
{
    uint64_t p = 0;
    size_t i;
    for (i = 0; i < 8; i++)
        p = p << 8 | (i < n ? (unsigned char)id[i] : 0u);
    return p;
}

static long find_doc(const rcp_model *m, const char *id, size_t n)
{
    size_t i;
    if (!m->ids.cap)
        return -1;
    i = sidx_find(&m->ids, m, doc_eq, id, n, hash_bytes(2, id, n));
    return m->ids.slot[i] ? (long)m->ids.slot[i] - 1 : -1;
}

/* The term id of s[0..n), created (with no postings) when new. */
static long intern_term(rcp_model *m, const char *s, size_t n)
{
    uint64_t h = hash_bytes(1, s, n);
    size_t i;
    term *t;
    if (sidx_reserve(&m->tix, m, term_h)
        || grow((void **)&m->terms, &m->termcap, m->nterms + 1,
                sizeof *m->terms))
        return -1;
    i = sidx_find(&m->tix, m, term_eq, s, n, h);
    if (m->tix.slot[i])
        return (long)m->tix.slot[i] - 1;
    t = &m->terms[m->nterms];
    memset(t, 0, sizeof *t);
    if (!(t->s = dup_bytes(s, n)))
        return -1;
    t->len = (uint32_t)n;
    t->h = h;
    m->tix.slot[i] = (uint32_t)++m->nterms;
    m->tix.n++;
    return (long)m->nterms - 1;
}

/* Note 16: a stopword's postings live under its own term, the word
** behind STOP_MARK -- a byte no token holds (text.c: control characters
** only separate words), so "\001the" never meets the stem "the" of
** "thes" and no content-word lookup (RM3, the reranker, query/transform)
** ever finds one.  Stopwords count in no document length. */
#define STOP_MARK '\001'
#define STOP_KEY  (TEXT_MAX_WORD_BYTES + 1)

static int is_stop_term(const term *t)
{
    return t->len && t->s[0] == STOP_MARK;
}

/* The tokenizer flags the index reads a document with: its own, less
** the dropping of stopwords, which stop_token then tells apart (the
** tokens are otherwise rcp_tokenize's with the index's flags: text.c
** drops a stopword before it stems, and counts its position either way). */
static unsigned index_flags(const rcp_model *m)
{
    return m->o.tok_flags & ~RCP_TOK_STOP;
}

/* 1 when token i is a stopword the index's own flags would drop. */
static int stop_token(const rcp_model *m, const rcp_tokens *tk, size_t i)
{
    return (m->o.tok_flags & RCP_TOK_STOP)
           && tk->v[i].kind == RCP_TOKEN_WORD
           && rcp_stopword(tk->buf + tk->v[i].word, tk->v[i].wlen);
}

/* The index key of word w[0..n): STOP_MARK then the word, in key. */
static size_t stop_key(const char *w, size_t n, char *key)
{
    key[0] = STOP_MARK;
    memcpy(key + 1, w, n);
    return n + 1;
}

/* The index key of token i of tk (read with index_flags): its term, or
** a stopword's stop_key in key (STOP_KEY bytes). */
static const char *token_key(const rcp_model *m, const rcp_tokens *tk,
                             size_t i, char *key, size_t *n)
{
    if (stop_token(m, tk, i) && tk->v[i].wlen < STOP_KEY) {
        *n = stop_key(tk->buf + tk->v[i].word, tk->v[i].wlen, key);
        return key;
    }
    *n = tk->v[i].tlen;
    return tk->buf + tk->v[i].term;
}

/* Undo the postings a failed add appended for docno. */
static void unpost(rcp_model *m, const uint32_t *tids, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        m->terms[tids[i]].n--;
        m->terms[tids[i]].df--;
    }
}

/* Append docno's postings (tk read with index_flags: stopwords under
** their stop keys); *tids gets its distinct term ids. */
static int post_doc(rcp_model *m, uint32_t docno, const rcp_tokens *tk,
                    uint32_t **tids, uint32_t *ntids)
{
    size_t i, cap = 0;
    *tids = NULL;
    *ntids = 0;
    for (i = 0; i < tk->n; i++) {
        char key[STOP_KEY + 1];
        size_t kn;
        const char *k = token_key(m, tk, i, key, &kn);
        long id = intern_term(m, k, kn);
        term *t;
        if (id < 0)
            goto fail;
        t = &m->terms[id];
        if (t->n && t->p[t->n - 1].doc == docno) {
            t->p[t->n - 1].tf++;
            continue;
        }
        if (grow((void **)&t->p, &t->cap, t->n + 1, sizeof *t->p)
            || grow((void **)tids, &cap, *ntids + 1, sizeof **tids))
            goto fail;
        t->p[t->n].doc = docno;
        t->p[t->n++].tf = 1;
        t->df++;
        (*tids)[(*ntids)++] = (uint32_t)id;
    }
    return 0;
fail:
    unpost(m, *tids, *ntids);
    rcp_free(*tids);
    *tids = NULL;
    return -1;
}

/* Any other tokenizer setting: tokenize, post, embed the text apart. */
static int index_slow(rcp_model *m, doc *d, const char *text, size_t len)
{
    rcp_tokens tk;
    size_t i;
    int rc;
    float *vec = doc_vector(m, m->ndocs);
    rcp_tokens_init(&tk);
    rc = rcp_tokenize(&tk, text, len, index_flags(m))
         || (vec && rcp_model_embed(m, text, len, RCP_KIND_DOCUMENT, vec))
         || post_doc(m, (uint32_t)m->ndocs, &tk, &d->terms, &d->nterms);
    for (d->len = 0, i = 0; i < tk.n; i++)
        d->len += !stop_token(m, &tk, i);
    rcp_tokens_free(&tk);
    return rc ? -1 : 0;
}

/* The lexicon's hash of a word, eight bytes at a time, the last eight
** zero-padded (its own: nothing outside the lexicon sees it).  With
** padded set, w[n..n+8) may be read and holds zeros, which saves copying
** the tail (text_scan pads the words it hands on). */
static uint64_t word_hash(const char *w, size_t n, int padded)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, c;
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        memcpy(&c, w + i, 8);
        h = (h ^ c) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    if (padded) {
        memcpy(&c, w + i, 8);
    } else {
        c = 0;
        memcpy(&c, w + i, n - i);
    }
    return mix64((h ^ c) * 0xff51afd7ed558ccdULL);
}

static lexent *lex_at(const lexicon *x, uint32_t off8)
{
    return (lexent *)(void *)(x->arena + (size_t)off8 * 8);
}

static uint32_t *lex_fids(const lexent *e)
{
    return (uint32_t *)(void *)(e + 1);
}

static uint16_t *lex_slots(const lexent *e)
{
    return (uint16_t *)(void *)(lex_fids(e) + e->nf);
}

static size_t lex_size(size_t nf)
{
    return (sizeof(lexent) + nf * 6 + 7) / 8 * 8;
}

static const char *lex_text(const lexicon *x, const lexent *e)
{
    return e->wlen <= LEX_INLINE ? e->w : x->words + e->woff;
}

/* The slot holding w[0..n) (hash h), or the empty slot it would take. */
static size_t lex_find(const lexicon *x, const char *w, size_t n,
                       uint64_t h)
{
    size_t mask = x->scap - 1, i = (size_t)h & mask;
    uint64_t tag = h >> 32 << 32;
    for (;; i = (i + 1) & mask) {
        uint64_t s = x->slot[i];
        const lexent *e;
        if (!s)
            return i;
        if ((s >> 32 << 32) != tag)
            continue;
        e = lex_at(x, (uint32_t)s - 1);
        if (e->wlen == n && !memcmp(lex_text(x, e), w, n))
            return i;
    }
}

/* Room for one more entry (rehashing at 1/2 load). */
static int lex_reserve(lexicon *x)
{
    size_t cap = x->scap ? x->scap * 2 : 1024, i, j, off;
    uint64_t *s;
    if ((x->n + 1) * 2 <= x->scap)
        return 0;
    if (!(s = rcp_malloc(cap * sizeof *s)))
        return -1;
    memset(s, 0, cap * sizeof *s);
    for (i = off = 0; i < x->n; i++) {
        const lexent *e = lex_at(x, (uint32_t)(off / 8));
        uint64_t h = word_hash(lex_text(x, e), e->wlen, 0);
        for (j = (size_t)h & (cap - 1); s[j]; j = (j + 1) & (cap - 1))
            ;
        s[j] = (h >> 32 << 32) | (uint64_t)(off / 8 + 1);
        off += lex_size(e->nf);
    }
    rcp_free(x->slot);
    x->slot = s;
    x->scap = cap;
    return 0;
}

/* Room for one more feature id (rehashing the key index at 1/2 load). */
static int fid_reserve(lexicon *x)
{
    size_t cap = x->fixcap ? x->fixcap * 2 : 1024, i, j;
    uint32_t *s;
    size_t mcap = x->fmcap;
    if (grow((void **)&x->fkey, &x->fkcap, x->nfid + 1, sizeof *x->fkey)
        || grow((void **)&x->fmark, &x->fmcap, x->nfid + 1, sizeof *x->fmark)
        || grow((void **)&x->fpos, &x->fpcap, x->nfid + 1, sizeof *x->fpos))
        return -1;
    if (x->fmcap > mcap)
        memset(x->fmark + mcap, 0, (x->fmcap - mcap) * sizeof *x->fmark);
    if ((x->nfid + 1) * 2 <= x->fixcap)
        return 0;
    if (!(s = rcp_malloc(cap * sizeof *s)))
        return -1;
    memset(s, 0, cap * sizeof *s);
    for (i = 0; i < x->nfid; i++) {
        for (j = (size_t)(x->fkey[i] >> 1) & (cap - 1); s[j];
             j = (j + 1) & (cap - 1))
            ;
        s[j] = (uint32_t)(i + 1);
    }
    rcp_free(x->fix);
    x->fix = s;
    x->fixcap = cap;
    return 0;
}

/* The id of feature key, a new one when unseen; -1 out of memory. */
static long fid_intern(lexicon *x, uint64_t key)
{
    size_t j;
    if (x->nfid + 2 >= (size_t)1 << 31 || fid_reserve(x))
        return -1;
    for (j = (size_t)(key >> 1) & (x->fixcap - 1); x->fix[j];
         j = (j + 1) & (x->fixcap - 1))
        if (x->fkey[x->fix[j] - 1] == key)
            return (long)x->fix[j] - 1;
    x->fkey[x->nfid] = key;
    x->fix[j] = (uint32_t)++x->nfid;
    return (long)x->nfid - 1;
}

/* A word the lexicon does not hold yet (hash h): classify, stem, intern
** its term, compute its dense features (none with static word vectors,
** whose embedder reads the text itself).  Its offset / 8, or -1 out of
** memory. */
static long lex_new(rcp_model *m, int cc, const char *w, size_t n,
                    uint64_t h)
{
    lexicon *x = &m->lex;
    unsigned kind = cc == TEXT_CC_CJK ? RCP_TOKEN_CJK
                  : text_is_digits(w, n) ? RCP_TOKEN_NUM : RCP_TOKEN_WORD;
    int alpha = cc == TEXT_CC_WORD && text_is_ascii_alpha(w, n);
    char st[TEXT_MAX_WORD_BYTES + 8];
    wfeat f[1 + 3 * (TEXT_MAX_WORD_BYTES + 2)];
    size_t sn = n, nf = 0, i, size = lex_size(wfeat_bound(kind, n));
    long term = -1, fid;
    uint32_t stop = 0;
    lexent *e;
    if (x->wlen + n >= UINT32_MAX || (x->alen + size) / 8 >= (size_t)1 << 31
        || lex_reserve(x)
        || grow((void **)&x->arena, &x->acap, x->alen + size, 1)
        || (n > LEX_INLINE
            && grow((void **)&x->words, &x->wcap, x->wlen + n, 1)))
        return -1;
    memcpy(st, w, n);
    if (alpha && rcp_stopword(w, n)) {
        /* no dense features, a posting under its stop key (note 16) */
        size_t kn = stop_key(w, n, st);
        if ((term = intern_term(m, st, kn)) < 0)
            return -1;
        stop = LEX_STOP;
    } else {
        /* the term rcp_tokenize gives: the Porter stem */
        if (alpha)
            sn = rcp_stem_porter(st, n);
        if ((term = intern_term(m, st, sn)) < 0)
            return -1;
        if (!m->wv.n && !m->o.no_dense_index)
            nf = word_feats(kind, w, n, st, sn, word_weight(kind, w, n),
                            m->o.dim, f);
    }
    /* unsigned: (long)LEX_STOP is negative where long has 32 bits, and
    ** every add on i686/armhf/mips failed as out of memory */
    if ((unsigned long)term >= LEX_STOP)
        return -1;              /* 2^31 terms: no bit left to mark */
    e = (lexent *)(void *)(x->arena + x->alen);
    memset(e, 0, sizeof *e);
    e->nf = (uint32_t)nf;
    for (i = 0; i < nf; i++) {
        if ((fid = fid_intern(x, f[i].key)) < 0)
            return -1;
        lex_fids(e)[i] = (uint32_t)fid;
        lex_slots(e)[i] = (uint16_t)((f[i].slot & ~WF_NEG)
                                     | (f[i].slot & WF_NEG ? LEX_NEG : 0));
    }
    e->term = (uint32_t)term | stop;
    e->ws = nf ? f[0].w : 0;
    e->wg = nf > 1 ? f[1].w : 0;
    e->wlen = (uint32_t)n;
    if (n > LEX_INLINE) {
        e->woff = (uint32_t)x->wlen;
        memcpy(x->words + x->wlen, w, n);
        x->wlen += n;
    } else {
        memcpy(e->w, w, n);
    }
    x->slot[lex_find(x, w, n, h)] = (h >> 32 << 32)
                                    | (uint64_t)(x->alen / 8 + 1);
    x->alen += lex_size(nf);
    x->n++;
    return (long)(x->alen - lex_size(nf)) / 8;
}

static long lex_word(rcp_model *m, int cc, const char *w, size_t n,
                     uint64_t h)
{
    lexicon *x = &m->lex;
    if (x->scap) {
        uint64_t s = x->slot[lex_find(x, w, n, h)];
        if (s)
            return (long)(uint32_t)s - 1;
    }
    return lex_new(m, cc, w, n, h);
}

/* rcp_tokenize's sink, asking the lexicon first: a word it holds has its
** stopword status and term there (the same as text_emit_token would
** derive, without the stopword search and the stemmer). */
typedef struct lex_tok_ctx {
    text_tok_ctx     t;
    const rcp_model *m;
} lex_tok_ctx;

static int emit_token_lex(void *ctx, int cc, const char *w, size_t n,
                          uint32_t start, uint32_t end)
{
    lex_tok_ctx *c = ctx;
    const lexicon *x = &c->m->lex;
    const lexent *e;
    const term *t;
    uint64_t sl = 0;
    if (x->scap)
        sl = x->slot[lex_find(x, w, n,
                              word_hash(w, n, cc == TEXT_CC_WORD))];
    if (!sl)
        return text_emit_token(&c->t, cc, w, n, start, end);
    e = lex_at(x, (uint32_t)sl - 1);
    if (e->term & LEX_STOP) {
        c->t.pos++;
        return 0;
    }
    t = &c->m->terms[e->term];
    return text_push_token(c->t.t, cc, w, n, t->s, t->len, c->t.pos++,
                           start, end);
}

/* rcp_tokenize(out, text, len, the index's flags), faster for words the
** lexicon holds (the default flags only: the lexicon's setting). */
static int model_tokenize(const rcp_model *m, rcp_tokens *out,
                          const char *text, size_t len)
{
    lex_tok_ctx c;
    if (m->o.tok_flags != RCP_TOK_DEFAULT || !m->lex.n)
        return rcp_tokenize(out, text, len, m->o.tok_flags);
    out->n = 0;
    out->len = 0;
    c.t.t = out;
    c.t.flags = RCP_TOK_DEFAULT;
    c.t.pos = 0;
    c.m = m;
    return text_scan(text, len, RCP_TOK_DEFAULT, emit_token_lex, &c);
}

/* The add in progress on the fast path. */
typedef struct add_ctx {
    rcp_model *m;
    uint32_t   docno;
    uint32_t   ntok;            /* tokens BM25 counts */
    size_t     ntids, ndw;      /* in m->tids, m->dw */
    size_t     nent;            /* dense feature entries of m->dw */
    size_t     nw, wblen;       /* gathered words: m->wt, m->wbuf */
} add_ctx;

/* A word of the add in progress, gathered before any lookup so that the
** lookups run in passes whose cache misses overlap (a pass touching one
** thing per word keeps many misses in flight; one word at a time, each
** waits on the last). */
typedef struct wtok {
    uint64_t h;                 /* word_hash */
    uint64_t slot;              /* the first slot probed, its content */
    uint32_t woff, n, cc;       /* the word: wbuf + woff, n bytes */
    uint32_t ent;               /* its entry offset / 8 + 1; 0 unknown */
} wtok;

/* Bytes a gathered word takes: n, then zeros to at least 16 and to the
** next 8 past the word (word_hash reads padded words). */
static size_t wpad(size_t n)
{
    size_t p = (n + 15) / 8 * 8;
    return p < 16 ? 16 : p;
}

/* The fast path's sink: gather the word. */
static int gather_token(void *ctx, int cc, const char *w, size_t n,
                        uint32_t start, uint32_t end)
{
    add_ctx *c = ctx;
    rcp_model *m = c->m;
    size_t pad = wpad(n), k;
    char *dst;
    wtok *t;
    (void)start;
    (void)end;
    if ((c->wblen + pad > m->wbcap || c->nw >= m->wtcap)
        && (c->wblen + pad >= UINT32_MAX
            || grow((void **)&m->wbuf, &m->wbcap, c->wblen + pad, 1)
            || grow((void **)&m->wt, &m->wtcap, c->nw + 1, sizeof *m->wt)))
        return -1;
    dst = m->wbuf + c->wblen;
    if (cc == TEXT_CC_WORD) {   /* padded with zeros past pad: copy 8s */
        for (k = 0; k < pad; k += 8)
            memcpy(dst + k, w + k, 8);
    } else {
        memcpy(dst, w, n);
        memset(dst + n, 0, pad - n);
    }
    t = &m->wt[c->nw++];
    t->h = word_hash(m->wbuf + c->wblen, n, 1);
    t->woff = (uint32_t)c->wblen;
    t->n = (uint32_t)n;
    t->cc = (uint32_t)cc;
    c->wblen += pad;
    return 0;
}

/* Two zero-padded 16-byte words equal? */
static int same16(const char *a, const char *b)
{
    uint64_t x[2], y[2];
    memcpy(x, a, 16);
    memcpy(y, b, 16);
    return x[0] == y[0] && x[1] == y[1];
}

/* Passes 1 and 2 over the gathered words: the first slot each probes,
** then the entry it names when the tag and a short word match (the
** rest -- collisions, long words, new words -- go the usual way). */
static void probe_words(rcp_model *m, const add_ctx *c)
{
    const lexicon *x = &m->lex;
    size_t i, mask = x->scap - 1;
    for (i = 0; i < c->nw; i++)
        m->wt[i].slot = x->scap ? x->slot[m->wt[i].h & mask] : 0;
    for (i = 0; i < c->nw; i++) {
        wtok *t = &m->wt[i];
        const lexent *e;
        t->ent = 0;
        if (!t->slot || (t->slot ^ t->h) >> 32 || t->n > LEX_INLINE)
            continue;
        e = lex_at(x, (uint32_t)t->slot - 1);
        if (e->wlen == t->n && same16(e->w, m->wbuf + t->woff))
            t->ent = (uint32_t)t->slot;
    }
}

/* Pass 3: every word's entry (made when new); count it in the add. */
static int index_words(rcp_model *m, add_ctx *c)
{
    size_t i;
    probe_words(m, c);
    for (i = 0; i < c->nw; i++) {
        const wtok *t = &m->wt[i];
        long x = t->ent ? (long)t->ent - 1
                        : lex_word(m, (int)t->cc, m->wbuf + t->woff, t->n,
                                   t->h);
        lexent *e;
        if (x < 0)
            return -1;
        e = lex_at(&m->lex, (uint32_t)x);
        c->ntok += !(e->term & LEX_STOP);   /* a stopword: no length */
        if (e->stamp != m->stamp) {
            if (c->ndw == m->dwcap
                && grow((void **)&m->dw, &m->dwcap, c->ndw + 1,
                        sizeof *m->dw))
                return -1;
            e->stamp = m->stamp;
            e->tf = 0;
            m->dw[c->ndw++] = (uint32_t)x;
            c->nent += e->nf;
        }
        e->tf++;
    }
    return 0;
}

/* One posting per distinct term of the add in progress (summing the
** counts of its words), in order of first appearance; on failure the
** postings are taken back. */
static int post_lex(rcp_model *m, add_ctx *c)
{
    size_t i;
    if (grow((void **)&m->tids, &m->tidcap, c->ndw, sizeof *m->tids))
        return -1;
    for (i = 0; i < c->ndw; i++) {
        const lexent *e = lex_at(&m->lex, m->dw[i]);
        uint32_t tid = e->term & ~LEX_STOP;
        term *t = &m->terms[tid];
        if (t->stamp != m->stamp) {
            t->stamp = m->stamp;
            t->acc = 0;
            m->tids[c->ntids++] = tid;
        }
        t->acc += e->tf;
    }
    for (i = 0; i < c->ntids; i++) {
        term *t = &m->terms[m->tids[i]];
        if (t->n == t->cap
            && grow((void **)&t->p, &t->cap, t->n + 1, sizeof *t->p)) {
            unpost(m, m->tids, i);
            return -1;
        }
        t->p[t->n].doc = c->docno;
        t->p[t->n++].tf = t->acc;
        t->df++;
    }
    return 0;
}

/* Pass 1: mark each feature id listed by the add in progress, once or
** again (the marks are 0 between adds: pass 2 clears them).  Returns how
** many listings were repeats (a bound on the features listed again). */
static size_t mark_feats(const lexicon *x, const uint32_t *dw, size_t ndw)
{
    unsigned char *mark = x->fmark;     /* locals: a char store may */
    size_t i, j, again = 0;             /* alias anything else */
    for (i = 0; i < ndw; i++) {
        const lexent *e = lex_at(x, dw[i]);
        const uint32_t *id = lex_fids(e);
        size_t nf = e->nf;
        for (j = 0; j < nf; j++) {
            unsigned seen = mark[id[j]] != 0;
            again += seen;
            mark[id[j]] = (unsigned char)(1 + seen);
        }
    }
    return again;
}

/* Room for n features in the fast path's bag (one allocation, at sum). */
static int lbag_reserve(struct lbag *b, size_t n)
{
    unsigned char *p;
    if (n <= b->cap)
        return 0;
    rcp_free(b->sum);           /* the allocation */
    b->sum = NULL;
    b->cap = 0;
    if (!(p = rcp_malloc(n * (3 * sizeof(uint32_t) + sizeof(double)))))
        return -1;
    b->sum = (double *)(void *)p;
    b->fid = (uint32_t *)(void *)(b->sum + n);
    b->cnt = b->fid + n;
    b->slot = b->cnt + n;
    b->cap = n;
    return 0;
}

/* Pass 2 for one word: its lone features straight into out, clearing
** their marks; the repeated ones into the bag (a feature's place there
** by its id, so no hashing). */
static void embed_word(rcp_model *m, const lexent *e, float *out)
{
    const uint32_t *id = lex_fids(e);
    const uint16_t *sl = lex_slots(e);
    unsigned char *mark = m->lex.fmark;
    uint32_t *fpos = m->lex.fpos;
    struct lbag *b = &m->bag;
    size_t j, nf = e->nf;
    uint32_t tf = e->tf;
    double damp = tf_damp(m->tflog, tf);
    float ws = e->ws, wg = e->wg, lone[4];
    /* lone values: stem, -stem, n-gram, -n-gram (the n-grams share one
    ** weight; adding -x is subtracting x, bit for bit) */
    lone[0] = lone_value(ws, tf, damp);
    lone[1] = -lone[0];
    lone[2] = lone_value(wg, tf, damp);
    lone[3] = -lone[2];
    for (j = 0; j < nf; j++) {
        unsigned s = sl[j];
        uint32_t f = id[j], p;
        if (mark[f] == 1) {
            out[s & ~LEX_NEG] += lone[(j != 0) * 2 + (s >> 15)];
            mark[f] = 0;
            continue;
        }
        if (mark[f] == 2) {
            p = (uint32_t)b->n++;
            fpos[f] = p;
            mark[f] = 3;
            b->fid[p] = f;
            b->sum[p] = 0;
            b->cnt[p] = 0;
            b->slot[p] = (s & ~LEX_NEG) | (s & LEX_NEG ? WF_NEG : 0);
        } else {
            p = fpos[f];
        }
        b->sum[p] += (double)(j ? wg : ws) * tf;
        b->cnt[p] += tf;
    }
}

/* The bag into out, as dbag_project would (first come first), and the
** bag's marks cleared. */
static void lbag_project(rcp_model *m, float *out)
{
    struct lbag *b = &m->bag;
    size_t p;
    for (p = 0; p < b->n; p++) {
        put_feature(out, b->slot[p],
                    (float)(b->sum[p] * tf_damp(m->tflog, b->cnt[p])));
        m->lex.fmark[b->fid[p]] = 0;
    }
    b->n = 0;
}

/* Clear the marks of a failed add. */
static void unmark(rcp_model *m, const add_ctx *c)
{
    size_t i, j;
    for (i = 0; i < c->ndw; i++) {
        const lexent *e = lex_at(&m->lex, m->dw[i]);
        for (j = 0; j < e->nf; j++)
            m->lex.fmark[lex_fids(e)[j]] = 0;
    }
}

/* The dense vector of the add in progress from its distinct words'
** remembered features: embed_feats' sums in embed_feats' order, feature
** ids standing in for keys (one id per key, so the same features are
** listed once, the same go through the bag). */
static int embed_lex(rcp_model *m, const add_ctx *c, float *out)
{
    const lexicon *x = &m->lex;
    size_t i;
    if (lbag_reserve(&m->bag, mark_feats(x, m->dw, c->ndw))) {
        unmark(m, c);
        return -1;
    }
    memset(out, 0, m->o.dim * sizeof *out);
    for (i = 0; i < c->ndw; i++)
        embed_word(m, lex_at(x, m->dw[i]), out);
    lbag_project(m, out);
    normalize4(out, m->o.dim);
    return 0;
}

/* A new stamp for the add about to start (the lexicon emptied first when
** over its budget). */
static void lex_begin(rcp_model *m)
{
    size_t i, off;
    if (m->lex.n && lex_bytes(&m->lex) > m->o.lexicon_bytes)
        lex_free(&m->lex);
    if (++m->stamp == 0) {          /* wrapped: nothing may look seen */
        for (i = off = 0; i < m->lex.n; i++) {
            lexent *e = lex_at(&m->lex, (uint32_t)(off / 8));
            e->stamp = 0;
            off += lex_size(e->nf);
        }
        for (i = 0; i < m->nterms; i++)
            m->terms[i].stamp = 0;
        m->stamp = 1;
    }
}

/* Postings and vector of docno = m->ndocs through the lexicon; on
** failure nothing of it stays. */
static int index_fast(rcp_model *m, doc *d, const char *text, size_t len)
{
    add_ctx c;
    float *vec = doc_vector(m, m->ndocs);
    c.m = m;
    c.docno = (uint32_t)m->ndocs;
    c.ntok = 0;
    c.ntids = c.ndw = c.nent = c.nw = c.wblen = 0;
    lex_begin(m);
    if (text_scan(text, len, RCP_TOK_DEFAULT, gather_token, &c)
        || index_words(m, &c)
        || (vec && (m->wv.n || m->o.ext_embed || m->lsa.w.n
                    ? rcp_model_embed(m, text, len, RCP_KIND_DOCUMENT, vec)
                    : embed_lex(m, &c, vec)))
        || !(d->terms = rcp_malloc((c.ndw + 1) * sizeof *d->terms))
        || post_lex(m, &c)) {
        rcp_free(d->terms);
        d->terms = NULL;
        return -1;
    }
    if (c.ntids)
        memcpy(d->terms, m->tids, c.ntids * sizeof *d->terms);
    d->nterms = (uint32_t)c.ntids;
    d->len = c.ntok;
    return 0;
}

/* What a dead document costs while it is retained for snapshots: its
** slot, copies, postings and dense row (counted against snapshot_bytes). */
static size_t kept_bytes(const rcp_model *m, const doc *d)
{
    return sizeof *d + d->idlen + d->textlen + d->metalen
           + (size_t)d->nterms * sizeof(posting)
           + (size_t)m->o.dim * (sizeof(float) + 1) + 2 * sizeof(float)
           + (d->ck ? sizeof *d->ck + d->ck->oflen : 0)
           + m->o.nfields * sizeof(fval) + d->fbytes;
}

/* Gone: dead and no version can see it any more (its text is dropped);
** it holds a docno and postings until compact_docs reclaims them. */
static int is_gone(const doc *d)
{
    return !d->live && !d->text;
}

/* Drop the oldest retained document's text and meta.  The versions that
** saw it become unavailable (§7.7.1: a pinned version that is gone is
** -32010, never a different result), so the floor rises to its death. */
static void release_oldest(rcp_model *m)
{
    doc *d = &m->docs[m->grave[m->ghead]];
    m->held_bytes -= kept_bytes(m, d);
    if (d->vdel > m->floor)
        m->floor = d->vdel;
    rcp_free(d->text);
    rcp_free(d->meta);
    d->text = d->meta = NULL;
    drop_fields(m, m->grave[m->ghead]);
    m->gone++;
    m->gone_postings += d->nterms;
    m->ghead = (m->ghead + 1) % (m->keep + 1);
    m->gcount--;
}

/* Invariant 11: a dead document is retained while a kept version sees it
** and the retained fit in snapshot_bytes; the oldest death goes first. */
static void expire(rcp_model *m)
{
    while (m->gcount) {
        const doc *d = &m->docs[m->grave[m->ghead]];
        if (d->vdel + m->keep > m->version
            && m->held_bytes <= m->o.snapshot_bytes)
            return;
        release_oldest(m);
    }
}

/* Link chunk docno into its document's chain (newest first). */
static void link_part(rcp_model *m, uint32_t docno)
{
    part *p = m->docs[docno].ck;
    size_t sl = sidx_find(&m->parents, m, part_eq, p->of, p->oflen, p->h);
    p->sib = m->parents.slot[sl] ? m->parents.slot[sl] - 1 : NO_DOC;
    m->parents.n += !m->parents.slot[sl];
    m->parents.slot[sl] = docno + 1;
}

/* The id and parents tables rebuilt over docnos 0..ndocs-1, the newest
** docno of an id winning as in rcp_model_add.  Their capacity suffices:
** entries only got fewer. */
static void reindex(rcp_model *m)
{
    size_t i, sl;
    if (m->ids.cap)
        memset(m->ids.slot, 0, m->ids.cap * sizeof *m->ids.slot);
    if (m->parents.cap)
        memset(m->parents.slot, 0, m->parents.cap * sizeof *m->parents.slot);
    m->ids.n = m->parents.n = 0;
    for (i = 0; i < m->ndocs; i++) {
        const doc *d = &m->docs[i];
        sl = sidx_find(&m->ids, m, doc_eq, d->id, d->idlen, d->h);
        m->ids.n += !m->ids.slot[sl];
        m->ids.slot[sl] = (uint32_t)i + 1;
        if (d->ck)
            link_part(m, (uint32_t)i);
    }
}

/* Terms no posting names any more are dropped and the rest renumbered
** (in order), in the documents' term lists and the term table; the
** lexicon, which remembers term ids, is emptied (it is a cache). */
static void compact_terms(rcp_model *m)
{
    size_t i, j, k = 0, sl;
    for (i = 0; i < m->nterms; i++) {
        term *t = &m->terms[i];
        t->acc = t->n ? (uint32_t)k++ : NO_DOC;     /* acc: scratch here */
        if (!t->n) {
            rcp_free(t->s);
            rcp_free(t->p);
        }
    }
    for (i = 0; i < m->ndocs; i++)
        for (j = 0; j < m->docs[i].nterms && m->docs[i].terms; j++)
            m->docs[i].terms[j] = m->terms[m->docs[i].terms[j]].acc;
    for (i = 0; i < m->nterms; i++)
        if (m->terms[i].acc != NO_DOC)
            m->terms[m->terms[i].acc] = m->terms[i];
    m->nterms = k;
    memset(m->tix.slot, 0, m->tix.cap * sizeof *m->tix.slot);
    for (i = 0; i < k; i++) {
        sl = sidx_find(&m->tix, m, term_eq, m->terms[i].s, m->terms[i].len,
                       m->terms[i].h);
        m->tix.slot[sl] = (uint32_t)i + 1;
    }
    m->tix.n = k;
    lex_free(&m->lex);
}

/* Move document i to docno d->no (< i or == i) with its row and columns. */
static void move_doc(rcp_model *m, size_t i)
{
    size_t to = m->docs[i].no, dim = m->o.dim, f;
    if (to != i) {
        m->docs[to] = m->docs[i];
        if (!m->o.no_dense_index) {
            memcpy(m->vecs + to * dim, m->vecs + i * dim,
                   dim * sizeof *m->vecs);
            memcpy(m->q8.codes + to * dim, m->q8.codes + i * dim, dim);
            m->q8.scale[to] = m->q8.scale[i];
            m->q8.offset[to] = m->q8.offset[i];
        }
        m->dlen[to] = m->dlen[i];
        m->idpre[to] = m->idpre[i];
        for (f = 0; f < m->o.nfields; f++)
            m->col[f].cell[to] = m->col[f].cell[i];
    }
    if (m->docs[to].live)
        m->livebits[to >> 3] |= (unsigned char)(1u << (to & 7));
}

/* Invariant 4: gone documents give back their docnos.  The rest keep
** their order (so posting lists stay sorted) and move down; postings,
** the retained ring and the id and parents tables follow them.  Nothing
** is allocated, so it cannot fail.  Docnos are never held across an
** add or delete (rcp.h), so nothing outside sees the renumbering. */
static void compact_docs(rcp_model *m)
{
    size_t i, j, k, n = 0, empty = 0;
    for (i = 0; i < m->ndocs; i++)
        m->docs[i].no = is_gone(&m->docs[i]) ? NO_DOC : (uint32_t)n++;
    for (i = 0; i < m->nterms; i++) {
        term *t = &m->terms[i];
        for (j = k = 0; j < t->n; j++)
            if (m->docs[t->p[j].doc].no != NO_DOC) {
                t->p[k].tf = t->p[j].tf;
                t->p[k++].doc = m->docs[t->p[j].doc].no;
            }
        t->n = k;
        empty += !k;
    }
    for (i = 0; i < m->gcount; i++) {
        uint32_t *g = &m->grave[(m->ghead + i) % (m->keep + 1)];
        *g = m->docs[*g].no;
    }
    memset(m->livebits, 0, m->livecap);
    for (i = 0; i < m->ndocs; i++) {
        if (m->docs[i].no != NO_DOC) {
            move_doc(m, i);
            continue;
        }
        rcp_free(m->docs[i].id);
        rcp_free(m->docs[i].ck);
    }
    m->ndocs = n;
    m->q8.n = m->o.no_dense_index ? 0 : n;
    m->gone = m->gone_postings = 0;
    compact_fields(m);
    reindex(m);
    if (empty >= TERMS_MIN && empty * 2 >= m->nterms)
        compact_terms(m);
}

/* After every change: expire what no kept version needs, and reclaim
** once gone documents are a quarter of the docnos or their postings
** outnumber the live ones.  A compaction costs O(docnos + postings) and
** comes after at least a third of that many writes' worth of gone data,
** so the cost per write is amortised O(1) and memory stays proportional
** to what is live or retained (invariant 4). */
static void after_change(rcp_model *m)
{
    expire(m);
    if ((m->gone >= GONE_MIN && m->gone * 4 >= m->ndocs)
        || (m->gone_postings >= POSTINGS_MIN
            && m->gone_postings >= m->live_postings))
        compact_docs(m);
}

/* Tombstone a live document; never allocates, so it cannot fail.  It is
** retained (text and postings stay) while a kept version sees it. */
static void kill_doc(rcp_model *m, uint32_t docno)
{
    doc *d = &m->docs[docno];
    uint32_t i;
    for (i = 0; i < d->nterms; i++)
        m->terms[d->terms[i]].df--;
    m->live_postings -= d->nterms;
    m->total_len -= d->len;
    m->live--;
    m->livebits[docno >> 3] &= (unsigned char)~(1u << (docno & 7));
    d->live = 0;
    d->vdel = m->version + 1;   /* the version this change will make */
    rcp_free(d->terms);         /* nterms stays: its postings */
    d->terms = NULL;
    m->grave[(m->ghead + m->gcount++) % (m->keep + 1)] = docno;
    m->held_bytes += kept_bytes(m, d);
}

/* Count a change and remember the statistics it left (for snapshots). */
static void new_version(rcp_model *m)
{
    struct vstat *h;
    m->version++;
    h = &m->hist[m->version % (m->keep + 1)];
    h->n = m->live;
    h->total = m->total_len;
}

/* Capacity for one more document everywhere, before anything changes. */
static int reserve_doc(rcp_model *m, int chunk)
{
    size_t rows = m->veccap, bits = m->livecap;
    if (m->ndocs >= UINT32_MAX - 1
        || grow((void **)&m->docs, &m->doccap, m->ndocs + 1, sizeof *m->docs)
        || sidx_reserve(&m->ids, m, doc_h)
        || (chunk && sidx_reserve(&m->parents, m, part_h)))
        return -1;
    if (!m->o.no_dense_index
        && grow((void **)&m->vecs, &rows, (m->ndocs + 1) * m->o.dim,
                sizeof *m->vecs))
        return -1;
    m->veccap = rows;
    if (!m->o.no_dense_index && rcp_vec_q8_reserve(&m->q8, m->ndocs + 1))
        return -1;
    if (grow((void **)&m->livebits, &bits, m->ndocs / 8 + 1, 1)
        || grow((void **)&m->dlen, &m->dlencap, m->ndocs + 1,
                sizeof *m->dlen)
        || grow((void **)&m->idpre, &m->idprecap, m->ndocs + 1,
                sizeof *m->idpre)
        || reserve_fields(m))
        return -1;
    if (bits > m->livecap)
        memset(m->livebits + m->livecap, 0, bits - m->livecap);
    m->livecap = bits;
    return 0;
}

/* An owned copy of a chunk link (NULL for none: *out stays NULL). */
static int new_part(const rcp_model_chunkref *ck, part **out)
{
    part *p;
    *out = NULL;
    if (!ck)
        return 0;
    if (ck->oflen > ((size_t)-1 >> 1) - sizeof *p
        || !(p = rcp_malloc(sizeof *p + ck->oflen + 1)))
        return -1;
    if (ck->oflen)
        memcpy(p->of, ck->of, ck->oflen);
    p->of[ck->oflen] = 0;
    p->oflen = ck->oflen;
    p->h = hash_bytes(3, ck->of, ck->oflen);
    p->index = ck->index;
    p->start = ck->start;
    p->end = ck->end;
    p->sib = NO_DOC;
    *out = p;
    return 0;
}

/* Fill d (owned copies, postings, vector) for docno; nothing visible
** changes on failure. */
static int build_doc(rcp_model *m, doc *d, const char *id, size_t idlen,
                     const char *text, size_t len, const char *meta,
                     size_t metalen, const rcp_model_chunkref *ck)
{
    int rc;
    memset(d, 0, sizeof *d);
    d->id = dup_bytes(id, idlen);
    d->text = dup_bytes(text, len);
    d->meta = meta ? dup_bytes(meta, metalen) : NULL;
    rc = !d->id || !d->text || (meta && !d->meta) || new_part(ck, &d->ck)
         || read_fields(m, d, (uint32_t)m->ndocs, meta, metalen);
    if (!rc && (m->o.tok_flags == RCP_TOK_DEFAULT
                    ? index_fast(m, d, text, len)
                    : index_slow(m, d, text, len))) {
        fields_undo(m);
        rc = 1;
    }
    if (rc) {
        rcp_free(d->id);
        rcp_free(d->ck);
        doc_release(d);
        return -1;
    }
    d->idlen = idlen;
    d->textlen = len;
    d->metalen = meta ? metalen : 0;
    d->h = hash_bytes(2, id, idlen);
    d->live = 1;
    d->vadd = m->version + 1;
    d->vdel = UINT64_MAX;
    return 0;
}

/* Is the chunk link p the same as ck (both none, or equal)? */
static int same_part(const part *p, const rcp_model_chunkref *ck)
{
    if (!p || !ck)
        return !p && !ck;
    return p->oflen == ck->oflen && !memcmp(p->of, ck->of, ck->oflen)
        && p->index == ck->index && p->start == ck->start
        && p->end == ck->end;
}

/* The index of origin o among m's origins, added when new (0 for NULL
** or the empty one); -1 out of memory, out of range or too many. */
static long intern_origin(rcp_model *m, const rcp_model_origin *o)
{
    size_t i;
    origin *v;
    char *s;
    if (!o || (o->trust == RCP_TRUST_UNTRUSTED && !o->sourcelen))
        return 0;
    if (o->trust < RCP_TRUST_UNTRUSTED || o->trust > RCP_TRUST_TRUSTED
        || o->sourcelen > RCP_MAX_SOURCE_BYTES || (!o->source && o->sourcelen))
        return -1;
    for (i = 1; i < m->norigins; i++)
        if (m->origins[i].trust == o->trust
            && m->origins[i].len == o->sourcelen
            && !memcmp(m->origins[i].source, o->source, o->sourcelen))
            return (long)i;
    if (!m->norigins) {        /* origins[0] exists once any other does */
        if (!(m->origins = rcp_malloc(sizeof *m->origins)))
            return -1;
        memset(m->origins, 0, sizeof *m->origins);
        if (!(m->origins[0].source = dup_bytes("", 0))) {
            rcp_free(m->origins);
            m->origins = NULL;
            return -1;
        }
        m->norigins = 1;
    }
    if (m->norigins >= RCP_MODEL_MAX_ORIGINS
        || !(v = rcp_realloc(m->origins, (m->norigins + 1) * sizeof *v)))
        return -1;
    m->origins = v;
    if (!(s = dup_bytes(o->source, o->sourcelen)))
        return -1;
    v[m->norigins].trust = o->trust;
    v[m->norigins].len = o->sourcelen;
    v[m->norigins].source = s;
    return (long)m->norigins++;
}

/* Is document o (find_doc's answer) live with this text, meta, link and
** origin? */
static int same_doc(const rcp_model *m, long o, const char *text,
                    size_t len, const char *meta, size_t metalen,
                    const rcp_model_chunkref *ck, uint32_t org)
{
    const doc *d;
    if (o < 0 || !m->docs[o].live)
        return 0;
    d = &m->docs[o];
    if (!meta)
        metalen = 0;
    return d->textlen == len && (!len || !memcmp(d->text, text, len))
        && (d->meta != NULL) == (meta != NULL) && d->metalen == metalen
        && (!metalen || !memcmp(d->meta, meta, metalen))
        && same_part(d->ck, ck) && d->origin == org;
}

int rcp_model_add_from(rcp_model *m, const char *id, size_t idlen,
                       const char *text, size_t len, const char *meta,
                       size_t metalen, const rcp_model_chunkref *ck,
                       const rcp_model_origin *origin)
{
    doc d;
    long old, org;
    size_t slot;
    uint32_t docno;
    if (!m || (!id && idlen) || (!text && len) || (!meta && metalen)
        || (ck && (!ck->of || ck->end < ck->start
                   || ck->end - ck->start != len)))
        return -1;
    assert(sane(m));
    if ((org = intern_origin(m, origin)) < 0)
        return -1;
    old = find_doc(m, id, idlen);
    docno = (uint32_t)m->ndocs;
    if (same_doc(m, old, text, len, meta, metalen, ck, (uint32_t)org))
        return 0;               /* §7.10: a repeat is observably one add */
    if (len >= UINT32_MAX || reserve_doc(m, ck != NULL)
        || build_doc(m, &d, id, idlen, text, len, meta, metalen, ck))
        return -1;
    d.origin = (uint32_t)org;
    /* §7.10: re-adding an id MUST replace, never duplicate */
    if (old >= 0 && m->docs[old].live)
        kill_doc(m, (uint32_t)old);
    m->docs[docno] = d;
    m->ndocs++;
    if (!m->o.no_dense_index) {         /* room reserved: cannot fail */
        m->q8.n = m->ndocs;
        rcp_vec_q8_set(&m->q8, docno, doc_vector(m, docno));
    }
    slot = sidx_find(&m->ids, m, doc_eq, id, idlen, d.h);
    if (!m->ids.slot[slot])
        m->ids.n++;
    m->ids.slot[slot] = docno + 1;
    if (d.ck)
        link_part(m, docno);
    m->livebits[docno >> 3] |= (unsigned char)(1u << (docno & 7));
    m->dlen[docno] = d.len;
    m->idpre[docno] = id_prefix(id, idlen);
    m->live++;
    m->total_len += d.len;
    m->live_postings += d.nterms;
    new_version(m);
    after_change(m);
    assert(sane(m));
    return 0;
}

int rcp_model_add_chunk(rcp_model *m, const char *id, size_t idlen,
                        const char *text, size_t len, const char *meta,
                        size_t metalen, const rcp_model_chunkref *ck)
{
    return rcp_model_add_from(m, id, idlen, text, len, meta, metalen, ck,
                              NULL);
}

int rcp_model_add(rcp_model *m, const char *id, size_t idlen,
                  const char *text, size_t len, const char *meta,
                  size_t metalen)
{
    return rcp_model_add_chunk(m, id, idlen, text, len, meta, metalen, NULL);
}

int rcp_model_delete(rcp_model *m, const char *id, size_t idlen)
{
    long d;
    if (!m || (!id && idlen))
        return -1;
    assert(sane(m));
    d = find_doc(m, id, idlen);
    /* §7.11: deleting an absent id is not an error; it counts 0 */
    if (d < 0 || !m->docs[d].live)
        return 0;
    kill_doc(m, (uint32_t)d);
    new_version(m);
    after_change(m);
    assert(sane(m));
    return 1;
}

static void view_of(const rcp_model *m, uint32_t docno,
                    rcp_model_docview *out)
{
    const doc *d = &m->docs[docno];
    out->id = d->id;
    out->idlen = d->idlen;
    out->text = d->text;
    out->textlen = d->textlen;
    out->meta = d->meta;
    out->metalen = d->metalen;
    out->vector = doc_vector(m, docno);
    memset(&out->chunk, 0, sizeof out->chunk);
    memset(&out->origin, 0, sizeof out->origin);
    if (d->origin) {
        out->origin.trust = m->origins[d->origin].trust;
        out->origin.source = m->origins[d->origin].source;
        out->origin.sourcelen = m->origins[d->origin].len;
    }
    if (d->ck) {
        out->chunk.of = d->ck->of;
        out->chunk.oflen = d->ck->oflen;
        out->chunk.index = d->ck->index;
        out->chunk.start = d->ck->start;
        out->chunk.end = d->ck->end;
    }
}

int rcp_model_doc(const rcp_model *m, uint32_t docno, rcp_model_docview *out)
{
    if (!m || !out || docno >= m->ndocs || !m->docs[docno].live)
        return -1;
    view_of(m, docno, out);
    return 0;
}

long rcp_model_find(const rcp_model *m, const char *id, size_t idlen)
{
    long d;
    if (!m || (!id && idlen))
        return -1;
    d = find_doc(m, id, idlen);
    return d >= 0 && m->docs[d].live ? d : -1;
}

/* MARK: - Rollback (store.c: a write that never reached the disk) -------- */

/* Documents killed after v, which the rollback brings back. */
static int revives(const doc *d, uint64_t v)
{
    return !d->live && d->vdel > v && d->vdel != UINT64_MAX;
}

/* kill_doc freed their term lists (nterms stays: their postings); rebuild
** them from the postings, which a dead document keeps while a kept
** version sees it (note 11) -- allocated before anything changes, so a
** failure changes nothing.  One dropped for snapshot_bytes cannot come
** back: then the rollback fails. */
static int revive_terms(rcp_model *m, uint64_t v, size_t n0)
{
    size_t i, j, k;
    for (i = 0; i < n0; i++)
        if (revives(&m->docs[i], v) && !m->docs[i].text)
            return -1;
    for (i = 0; i < n0; i++) {
        doc *d = &m->docs[i];
        d->no = 0;                      /* scratch: terms filled so far */
        if (!revives(d, v) || !d->nterms)
            continue;
        if (!(d->terms = rcp_malloc(d->nterms * sizeof *d->terms))) {
            for (k = 0; k < i; k++)
                if (revives(&m->docs[k], v)) {
                    rcp_free(m->docs[k].terms);
                    m->docs[k].terms = NULL;
                }
            return -1;
        }
    }
    for (i = 0; i < m->nterms; i++)
        for (j = 0; j < m->terms[i].n && m->terms[i].p[j].doc < n0; j++) {
            doc *d = &m->docs[m->terms[i].p[j].doc];
            if (revives(d, v))
                d->terms[d->no++] = (uint32_t)i;
        }
    return 0;
}

/* The retained killed after v are the newest deaths, the end of the
** ring: they leave it (revived, or dropped with the tail). */
static void unbury(rcp_model *m, uint64_t v)
{
    while (m->gcount) {
        size_t at = (m->ghead + m->gcount - 1) % (m->keep + 1);
        const doc *d = &m->docs[m->grave[at]];
        if (d->vdel <= v)
            return;
        m->held_bytes -= kept_bytes(m, d);
        m->gcount--;
    }
}

/* Postings of documents n0.. are the tail of every list (note 4). */
static void drop_tail(rcp_model *m, size_t n0)
{
    size_t i;
    for (i = 0; i < m->nterms; i++) {
        term *t = &m->terms[i];
        while (t->n && t->p[t->n - 1].doc >= n0) {
            const doc *d = &m->docs[t->p[--t->n].doc];
            if (d->live) {
                t->df--;
                m->live_postings--;
            } else if (is_gone(d)) {
                m->gone_postings--;
            }
        }
    }
    for (i = n0; i < m->ndocs; i++) {
        doc *d = &m->docs[i];
        if (d->live) {
            m->live--;
            m->total_len -= d->len;
            m->livebits[i >> 3] &= (unsigned char)~(1u << (i & 7));
        } else if (is_gone(d)) {
            m->gone--;
        }
        doc_release(d);
        rcp_free(d->id);
        rcp_free(d->ck);
    }
    drop_tail_fields(m, n0);
    m->ndocs = n0;
    m->q8.n = m->o.no_dense_index ? 0 : n0;
}

static void revive(rcp_model *m, uint32_t docno)
{
    doc *d = &m->docs[docno];
    uint32_t i;
    for (i = 0; i < d->nterms; i++)
        m->terms[d->terms[i]].df++;
    m->live_postings += d->nterms;
    m->total_len += d->len;
    m->live++;
    m->livebits[docno >> 3] |= (unsigned char)(1u << (docno & 7));
    d->live = 1;
    d->vdel = UINT64_MAX;
}

int rcp_model_rollback(rcp_model *m, uint64_t v)
{
    uint64_t now;
    size_t n0, i;
    if (!m)
        return -1;
    assert(sane(m));
    now = m->version;
    n0 = m->ndocs;
    if (v == now)
        return 0;
    if (v > now || now - v > m->keep)
        return -1;
    while (n0 > 0 && m->docs[n0 - 1].vadd > v)   /* vadd rises with docno */
        n0--;
    if (revive_terms(m, v, n0))
        return -1;
    unbury(m, v);
    for (i = 0; i < n0; i++)
        if (revives(&m->docs[i], v))
            revive(m, (uint32_t)i);
    if (n0 < m->ndocs) {
        drop_tail(m, n0);
        reindex(m);
    }
    /* versions before now - keep may have lost what they saw; those from
    ** there to v are whole (note 11: nothing they see was dropped, or the
    ** revival above failed), and hist too */
    if (now > m->keep && now - m->keep > m->floor)
        m->floor = now - m->keep;
    if (m->floor > v)           /* a retrain since v: v alone is whole */
        m->floor = v;
    m->version = v;
    assert(sane(m));
    return 0;
}

void rcp_model_stat(const rcp_model *m, rcp_model_stats *out)
{
    out->live = m->live;
    out->retained = m->gcount;
    out->slots = m->ndocs;
    out->rows = m->veccap / m->o.dim;
    out->retained_bytes = m->held_bytes;
    out->terms = m->nterms;
    out->oldest = m->version > m->keep ? m->version - m->keep : 0;
    if (out->oldest < m->floor)
        out->oldest = m->floor;
}

/* MARK: - Ranking: candidates and top-k ----------------------------------- */

typedef struct cand {
    uint32_t doc;
    double   score;
} cand;

/* Bytewise comparison of two ids (§16.3 tie-break (3): the smaller
** stringified id first). */
static int id_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : an < bn ? -1 : an > bn ? 1 : 0;
}

/* 1 when a ranks before b: higher score, then smaller id (invariant 6).
** Ties are common (equal tf and length give equal BM25), so ids are told
** apart by their prefixes first, without touching the documents. */
static int cand_before(const rcp_model *m, const cand *a, const cand *b)
{
    const doc *x, *y;
    uint64_t pa, pb;
    if (a->score != b->score)
        return a->score > b->score;
    pa = m->idpre[a->doc];
    pb = m->idpre[b->doc];
    if (pa != pb)
        return pa < pb;
    x = &m->docs[a->doc];
    y = &m->docs[b->doc];
    return id_cmp(x->id, x->idlen, y->id, y->idlen) < 0;
}

/* The best k of offered candidates: a heap whose root is the worst kept. */
typedef struct topk {
    cand  *h;
    size_t k, n;
} topk;

static void sift_down(const rcp_model *m, cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        cand t;
        if (l < n && cand_before(m, &h[w], &h[l]))
            w = l;
        if (r < n && cand_before(m, &h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void topk_push(const rcp_model *m, topk *t, uint32_t docno, double s)
{
    cand c;
    size_t i;
    c.doc = docno;
    c.score = s;
    if (t->n < t->k) {
        i = t->n++;
        t->h[i] = c;
        while (i > 0 && cand_before(m, &t->h[(i - 1) / 2], &t->h[i])) {
            cand x = t->h[i];
            t->h[i] = t->h[(i - 1) / 2];
            t->h[(i - 1) / 2] = x;
            i = (i - 1) / 2;
        }
    } else if (t->k && cand_before(m, &c, &t->h[0])) {
        t->h[0] = c;
        sift_down(m, t->h, t->n, 0);
    }
}

/* Heap-sort in place, best first; returns the count. */
static size_t topk_sort(const rcp_model *m, topk *t)
{
    size_t n = t->n;
    while (n > 1) {
        cand x = t->h[0];
        t->h[0] = t->h[n - 1];
        t->h[n - 1] = x;
        sift_down(m, t->h, --n, 0);
    }
    return t->n;
}

/* What a search sees: the live index, or a retained snapshot (§7.7.1). */
typedef struct view {
    const unsigned char *vis;   /* bit docno: visible (the statistics') */
    const unsigned char *allow; /* bit docno: visible, and passes the
                                ** filter (the candidates') */
    double N, total;            /* visible documents, their tokens */
    int    pinned;              /* an older version: df is counted */
} view;

static void live_view(const rcp_model *m, view *v)
{
    v->vis = v->allow = m->livebits;
    v->N = (double)m->live;
    v->total = (double)m->total_len;
    v->pinned = 0;
}

/* A search in progress: the caller's query, the view it searches and the
** checkpoint's verdict.  Every query the pipeline functions see is the q
** of a run (made by rcp_model_search), so they reach the run from it. */
typedef struct run {
    rcp_model_query q;          /* first member: &run == &run.q */
    view            v;
    unsigned char  *visbuf;     /* a pinned version's visibility bits */
    unsigned char  *allowbuf;   /* the filter's bitmap (§8), or NULL */
    struct cfilter *cf;         /* the filter compiled, or NULL */
    int             lazy;       /* no bitmap: candidates pass cf one by
                                ** one (a sparse search) */
    int             stop;       /* nonzero: what the checkpoint returned */
} run;

static const view *qview(const rcp_model_query *q)
{
    return &((const run *)(const void *)q)->v;
}

/* Call the checkpoint; nonzero (sticky) means stop. */
static int ckpt(const rcp_model_query *q, double progress, const char *stage,
                const rcp_model_hit *partial, size_t n)
{
    run *r = (run *)(void *)q;
    if (!r->stop && q->checkpoint)
        r->stop = q->checkpoint(q->ud, progress, stage, partial, n);
    return r->stop;
}

static int visible(const view *v, uint32_t docno)
{
    return (v->vis[docno >> 3] >> (docno & 7)) & 1;
}

static int allowed(const view *v, uint32_t docno)
{
    return (v->allow[docno >> 3] >> (docno & 7)) & 1;
}

static int doc_passes_run(const rcp_model *m, const run *r, uint32_t d);

static int accepted(const rcp_model *m, const rcp_model_query *q,
                    uint32_t docno)
{
    const run *r = (const run *)(const void *)q;
    return allowed(&r->v, docno)
        && (!r->lazy || doc_passes_run(m, r, docno));
}

/* MARK: - Sparse recall: BM25 --------------------------------------------- */

/* Robertson-Sparck Jones idf with the +1 inside the log (Lucene's form):
** never negative, so a BM25 score is >= 0 and the floor §6.1 advertises
** for "bm25" is 0 exactly. */
static double bm25_idf_df(const view *v, double df)
{
    return log(1.0 + (v->N - df + 0.5) / (df + 0.5));
}

/* df in the view: the maintained count for the live index, counted from
** the postings for a pinned version. */
static double term_df(const view *v, const term *t)
{
    size_t i, n = 0;
    if (!v->pinned)
        return t->df;
    for (i = 0; i < t->n; i++)
        n += visible(v, t->p[i].doc);
    return (double)n;
}

static double bm25_idf(const view *v, const term *t)
{
    return bm25_idf_df(v, term_df(v, t));
}

/* The query's distinct term ids (known to the index) with their counts. */
static size_t query_terms(const rcp_model *m, const rcp_tokens *tk,
                          uint32_t *tid, uint32_t *qtf)
{
    size_t i, j, n = 0;
    for (i = 0; i < tk->n; i++) {
        char key[STOP_KEY + 1];
        size_t len, sl;
        const char *s = token_key(m, tk, i, key, &len);
        if (!m->tix.cap)
            break;
        sl = sidx_find(&m->tix, m, term_eq, s, len, hash_bytes(1, s, len));
        if (!m->tix.slot[sl])
            continue;
        for (j = 0; j < n && tid[j] != m->tix.slot[sl] - 1; j++)
            ;
        if (j == n) {
            tid[n] = m->tix.slot[sl] - 1;
            qtf[n++] = 0;
        }
        qtf[j]++;
    }
    return n;
}

/* One posting's part of a BM25 score (w = query weight x idf). */
static double bm25_part(double w, double tf, double dl, double k1, double b,
                        double avgdl)
{
    return w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl));
}

/* A long posting list takes its parts for tf < BM25_TF and document
** length < BM25_DL from a table filled as they come up (the table holds
** bm25_part's own values, so scores are the same): one division per
** distinct (tf, length) instead of one per posting. */
#define BM25_TF 16
#define BM25_DL 512
#define BM25_CACHED(t) ((t)->n > 4 * BM25_TF * BM25_DL)

static void bm25_accumulate(const rcp_model *m, const view *v,
                            const term *t, double w, double *acc,
                            double *tab)
{
    double k1 = m->o.k1, b = m->o.b;
    double avgdl = v->N > 0 ? v->total / v->N : 1.0;
    size_t i;
    if (avgdl <= 0)
        avgdl = 1.0;
    if (tab)
        for (i = 0; i < BM25_TF * BM25_DL; i++)
            tab[i] = -1.0;              /* parts are >= 0 */
    for (i = 0; i < t->n; i++) {
        const posting *p = &t->p[i];
        uint32_t dl = m->dlen[p->doc], tf = p->tf;
        double *c;
        if (!allowed(v, p->doc))        /* not a candidate: not scored */
            continue;
        if (!tab || tf >= BM25_TF || dl >= BM25_DL) {
            acc[p->doc] += bm25_part(w, tf, dl, k1, b, avgdl);
            continue;
        }
        c = &tab[tf * BM25_DL + dl];
        if (*c < 0)
            *c = bm25_part(w, tf, dl, k1, b, avgdl);
        acc[p->doc] += *c;
    }
}

/* A weighted query term: BM25 sums w x idf x the tf part.  Term ids are
** given in the order words first reach the index, so nothing a result
** depends on may follow them -- or the same documents, added in another
** order (or replayed after a compaction), would rank otherwise: equal
** tids add up in arrival order, ties and scoring go by the term's
** bytes. */
typedef struct wterm {
    uint32_t    tid;
    uint32_t    at;             /* arrival, for wterm_merge */
    double      w;
    const term *t;              /* &m->terms[tid], which wterm_by_bytes
                                ** needs: qsort passes it no model */
} wterm;

static void wterm_set(wterm *x, const rcp_model *m, uint32_t tid,
                      size_t at, double w)
{
    x->tid = tid;
    x->at = (uint32_t)at;
    x->w = w;
    x->t = &m->terms[tid];
}

/* BM25 top out->k over accepted documents, term at a time. */
static int bm25_weighted(const rcp_model *m, const rcp_model_query *q,
                         const wterm *qt, size_t n, topk *out)
{
    double *acc = rcp_malloc((m->ndocs + 1) * sizeof *acc), thr = 0;
    double *tab = NULL;
    size_t i;
    for (i = 0; i < n; i++)
        if (BM25_CACHED(&m->terms[qt[i].tid]) && !tab
            && !(tab = rcp_malloc(BM25_TF * BM25_DL * sizeof *tab))) {
            rcp_free(acc);
            return -1;
        }
    if (!acc) {
        rcp_free(tab);
        return -1;
    }
    memset(acc, 0, (m->ndocs + 1) * sizeof *acc);
    for (i = 0; i < n; i++) {
        const term *t = &m->terms[qt[i].tid];
        bm25_accumulate(m, qview(q), t, qt[i].w * bm25_idf(qview(q), t),
                        acc, BM25_CACHED(t) ? tab : NULL);
    }
    rcp_free(tab);
    for (i = 0; i < m->ndocs; i++) {
        double s = acc[i];
        /* below the worst kept: cannot enter (ties still go through) */
        if (s <= 0 || s < thr || !accepted(m, q, (uint32_t)i))
            continue;
        topk_push(m, out, (uint32_t)i, s);
        if (out->n == out->k && out->k)
            thr = out->h[0].score;
    }
    rcp_free(acc);
    return 0;
}

/* The query's known terms weighted by their count; *out (rcp_free). */
static int query_wterms(const rcp_model *m, const rcp_tokens *tk,
                        wterm **out, size_t *n)
{
    uint32_t *tid = rcp_malloc((tk->n + 1) * sizeof *tid);
    uint32_t *qtf = rcp_malloc((tk->n + 1) * sizeof *qtf);
    size_t i;
    *out = rcp_malloc((tk->n + 1) * sizeof **out);
    *n = 0;
    if (tid && qtf && *out) {
        *n = query_terms(m, tk, tid, qtf);
        for (i = 0; i < *n; i++)
            wterm_set(&(*out)[i], m, tid[i], i, qtf[i]);
    }
    rcp_free(tid);
    rcp_free(qtf);
    if (!tid || !qtf || !*out) {
        rcp_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* The query's BM25 terms (note 16): its words as the index reads them
** (tk, read with the index's flags); when nothing is left once the
** stopwords are dropped, its stopwords, read again into tk, under their
** stop keys -- so any query with a content word scores exactly as if
** stopwords had no postings, and one made of stopwords alone is BM25
** over them (the same lengths, N and avgdl as every other query). */
static int query_lexical(const rcp_model *m, const rcp_model_query *q,
                         rcp_tokens *tk, wterm **qt, size_t *n)
{
    if (rcp_tokenize(tk, q->text, q->len, m->o.tok_flags))
        return -1;
    if (!tk->n && (m->o.tok_flags & RCP_TOK_STOP)
        && rcp_tokenize(tk, q->text, q->len, index_flags(m)))
        return -1;
    return query_wterms(m, tk, qt, n);
}

static int bm25_search(const rcp_model *m, const rcp_model_query *q,
                       topk *out)
{
    rcp_tokens tk;
    wterm *qt = NULL;
    size_t n = 0;
    int rc;
    rcp_tokens_init(&tk);
    rc = query_lexical(m, q, &tk, &qt, &n) || bm25_weighted(m, q, qt, n, out);
    rcp_free(qt);
    rcp_tokens_free(&tk);
    return rc ? -1 : 0;
}

/* MARK: - Lexical feedback: RM3 ------------------------------------------- */

/* RM3 (Lavrenko & Croft 2001; Abdul-Jaleel et al. 2004) with Anserini's
** defaults: the relevance model P(t|R) = sum over the top feedback
** documents (opts.prf_docs, 10) of score(d) tf(t,d)/|d|, its RM3_TERMS
** best terms, mixed half and half with the query's own distribution. */
#define RM3_TERMS 10
#define RM3_ORIG  0.5

static int wterm_by_tid(const void *a, const void *b)
{
    const wterm *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Distinct terms have distinct bytes: a total order that is the text's. */
static int wterm_by_bytes(const void *a, const void *b)
{
    const term *x = ((const wterm *)a)->t, *y = ((const wterm *)b)->t;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int wterm_by_weight(const void *a, const void *b)
{
    const wterm *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return wterm_by_bytes(a, b);
}

/* Sort by tid, add up equal tids in arrival order; returns the new
** count. */
static size_t wterm_merge(wterm *v, size_t n)
{
    size_t i, k = 0;
    if (n == 0)
        return 0;               /* v may be NULL: qsort must not see it */
    qsort(v, n, sizeof *v, wterm_by_tid);
    for (i = 0; i < n; i++) {
        if (k && v[k - 1].tid == v[i].tid)
            v[k - 1].w += v[i].w;
        else
            v[k++] = v[i];
    }
    return k;
}

/* Append wd tf(t,d)/|d| for every word token of document docno. */
static int rm3_doc(const rcp_model *m, uint32_t docno, double wd,
                   wterm **v, size_t *n, size_t *cap)
{
    const doc *d = &m->docs[docno];
    rcp_tokens tk;
    size_t i;
    rcp_tokens_init(&tk);
    if (model_tokenize(m, &tk, d->text, d->textlen)) {
        rcp_tokens_free(&tk);
        return -1;
    }
    for (i = 0; i < tk.n; i++) {
        const char *s = tk.buf + tk.v[i].term;
        size_t len = tk.v[i].tlen, sl;
        if (tk.v[i].kind == RCP_TOKEN_NUM)
            continue;
        sl = sidx_find(&m->tix, m, term_eq, s, len, hash_bytes(1, s, len));
        if (!m->tix.slot[sl])
            continue;
        if (grow((void **)v, cap, *n + 1, sizeof **v)) {
            rcp_tokens_free(&tk);
            return -1;
        }
        wterm_set(&(*v)[*n], m, m->tix.slot[sl] - 1, *n, wd / (double)tk.n);
        (*n)++;
    }
    rcp_tokens_free(&tk);
    return 0;
}

/* L1-normalise v[0..n). */
static void wterm_norm(wterm *v, size_t n)
{
    double s = 0;
    size_t i;
    for (i = 0; i < n; i++)
        s += v[i].w;
    for (i = 0; s > 0 && i < n; i++)
        v[i].w /= s;
}

/* The relevance model of the top documents, unnormalised: every term's
** sum of score(d) tf(t,d)/|d|, best first, in *v (rcp_free; *cap its
** room); returns the count, or -1 out of memory. */
static long rm3_relevance(const rcp_model *m, const rcp_model_hit *top,
                          size_t ntop, wterm **v, size_t *cap)
{
    size_t n = 0, i;
    double ssum = 0;
    for (i = 0; i < ntop; i++)
        ssum += top[i].score;
    for (i = 0; i < ntop && ssum > 0; i++)
        if (rm3_doc(m, top[i].doc, top[i].score / ssum, v, &n, cap))
            return -1;
    n = wterm_merge(*v, n);
    if (n)
        qsort(*v, n, sizeof **v, wterm_by_weight);
    return (long)n;
}

/* The expanded query: *out = RM3_ORIG P(t|Q) + (1 - RM3_ORIG) P(t|R). */
static int rm3_expand(const rcp_model *m, const wterm *qt, size_t nq,
                      const rcp_model_hit *top, size_t ntop, wterm **out,
                      size_t *nout)
{
    wterm *v = NULL;
    size_t cap = 0, i, nr;
    long got;
    if (ntop > m->o.prf_docs)
        ntop = m->o.prf_docs;
    if ((got = rm3_relevance(m, top, ntop, &v, &cap)) < 0)
        goto fail;
    nr = (size_t)got < RM3_TERMS ? (size_t)got : RM3_TERMS;
    wterm_norm(v, nr);
    for (i = 0; i < nr; i++)
        v[i].w *= 1 - RM3_ORIG;
    if (grow((void **)&v, &cap, nr + nq + 1, sizeof *v))
        goto fail;
    memcpy(v + nr, qt, nq * sizeof *qt);
    wterm_norm(v + nr, nq);
    for (i = nr; i < nr + nq; i++)
        v[i].w *= RM3_ORIG;
    *nout = wterm_merge(v, nr + nq);
    if (*nout)                  /* BM25 adds them up in this order */
        qsort(v, *nout, sizeof *v, wterm_by_bytes);
    *out = v;
    return 0;
fail:
    rcp_free(v);
    return -1;
}

/* qt[0..n) without the terms no document of the view holds (returns the
** count left): a word indexed once and since deleted, or rolled back, is
** still in the lexicon; it scores nothing in BM25, and must weigh nothing
** in RM3's P(t|Q) either, or a query would score otherwise on a model
** that never saw the word. */
static size_t drop_absent(const rcp_model *m, const rcp_model_query *q,
                          wterm *qt, size_t n)
{
    size_t i, k = 0;
    for (i = 0; i < n; i++)
        if (term_df(qview(q), &m->terms[qt[i].tid]) > 0)
            qt[k++] = qt[i];
    return k;
}

/* BM25 with the query expanded from the first lexical list sl[0..sn). */
static int bm25_feedback(const rcp_model *m, const rcp_model_query *q,
                         const rcp_model_hit *sl, size_t sn, topk *out)
{
    rcp_tokens tk;
    wterm *qt = NULL, *ex = NULL;
    size_t nq = 0, nx = 0;
    int rc;
    rcp_tokens_init(&tk);
    rc = query_lexical(m, q, &tk, &qt, &nq);
    if (!rc)
        nq = drop_absent(m, q, qt, nq);
    rc = rc || rm3_expand(m, qt, nq, sl, sn, &ex, &nx)
         || bm25_weighted(m, q, ex, nx, out);
    rcp_free(qt);
    rcp_free(ex);
    rcp_tokens_free(&tk);
    return rc ? -1 : 0;
}

/* MARK: - Dense recall ---------------------------------------------------- */

/* The one place the engine computes a dot product, so it moves to vec.c's
** kernels in one edit. */
static double dotf(const float *a, const float *b, size_t n)
{
    return rcp_vec_dot(a, b, n);
}

#define SCAN_CHUNK 65536        /* rows between checkpoints */

/* The plain dense recall, the reference the scans below must agree with
** (tests/test_model.c): every accepted row's dot product, offered to the
** top-k in docno order.  -1 when the checkpoint stopped it. */
static int dense_exact(const rcp_model *m, const rcp_model_query *q,
                       const float *qv, topk *out)
{
    size_t i, d = m->o.dim;
    for (i = 0; i < m->ndocs; i++) {
        double sc;
        if (i && i % SCAN_CHUNK == 0
            && ckpt(q, 0.25 + 0.2 * (double)i / (double)m->ndocs, "recall",
                    NULL, 0))
            return -1;
        if (!accepted(m, q, (uint32_t)i))
            continue;
        sc = dotf(qv, m->vecs + i * d, d);
        /* below the worst kept: cannot enter (ties still go through) */
        if (out->n == out->k && out->k && sc < out->h[0].score)
            continue;
        topk_push(m, out, (uint32_t)i, sc);
    }
    return 0;
}

/* The SIMD scan of vec.c keeps the best k + slack by (score, row); the
** engine's order is (score, id).  Every document scoring above the k-th
** best is in the scan's list, and so is every one tied with it unless
** the list's worst score equals that k-th score -- then (a tie wider than
** the slack, e.g. many duplicate texts) the exact loop runs instead.
** Returns 1 when it produced the answer. */
#define SCAN_SLACK 32

static int dense_scan(const rcp_model *m, const rcp_model_query *q,
                      const float *qv, topk *out)
{
    rcp_vec_hit *h;
    rcp_vec_topk t;
    size_t i, n, k2 = out->k + SCAN_SLACK;
    int ok;
    if (!out->k || !(h = rcp_malloc(k2 * sizeof *h)))
        return 0;
    rcp_vec_topk_init(&t, h, k2);
    for (i = 0; i < m->ndocs; i += SCAN_CHUNK) {
        size_t end = m->ndocs - i > SCAN_CHUNK ? i + SCAN_CHUNK : m->ndocs;
        if (i && ckpt(q, 0.25 + 0.2 * (double)i / (double)m->ndocs,
                      "recall", NULL, 0))
            break;
        rcp_vec_scan(&t, qv, m->vecs, m->o.dim, i, end, qview(q)->allow);
    }
    n = rcp_vec_topk_sort(&t);
    ok = n < k2 || n <= out->k || h[n - 1].score < h[out->k - 1].score;
    for (i = 0; ok && i < n; i++)
        topk_push(m, out, (uint32_t)h[i].row, h[i].score);
    rcp_free(h);
    return ok || ((const run *)(const void *)q)->stop;
}

/* The fast recall (issue 17): the 8-bit copy's scan (a quarter of the
** bytes to read) for the best RCP_VEC_Q8_CAND(k) rows by approximate
** score, each re-scored with its float vector, the best out->k of those
** in the engine's order.  Every score it returns is exact; what it can
** miss is a document whose 8-bit score falls below all the candidates'
** (recall@10 >= 0.99 of dense_exact's, tests/test_model.c; make bench
** prints it).  When the candidates are cut inside a tie (equal rows have
** equal codes) and one of the tied is returned, the scan's order (row)
** chose among them, not the engine's (id): then it declines, and the
** float scan answers.  1 when it produced the answer (out untouched
** otherwise). */
static int dense_q8(const rcp_model *m, const rcp_model_query *q,
                    const float *qv, const unsigned char *allow, topk *out)
{
    rcp_vec_hit *h;
    rcp_vec_topk t;
    size_t i, j, e, n, d = m->o.dim, nc = RCP_VEC_Q8_CAND(out->k);
    int ok = 1;
    if (!out->k || !(h = rcp_malloc(nc * sizeof *h)))
        return 0;
    rcp_vec_topk_init(&t, h, nc);
    for (i = 0; ok && i < m->ndocs; i += SCAN_CHUNK) {
        size_t end = m->ndocs - i > SCAN_CHUNK ? i + SCAN_CHUNK : m->ndocs;
        if (i && ckpt(q, 0.25 + 0.2 * (double)i / (double)m->ndocs,
                      "recall", NULL, 0))
            break;
        ok = rcp_vec_q8_scan(&t, &m->q8, qv, i, end, allow) == 0;
    }
    n = rcp_vec_topk_sort(&t);
    for (i = 0; ok && i < n; i++)
        topk_push(m, out, (uint32_t)h[i].row,
                  dotf(qv, m->vecs + h[i].row * d, d));
    for (e = n; ok && n == nc && e > 0 && h[e - 1].score == h[n - 1].score;
         e--)
        for (j = 0; ok && j < out->n; j++)
            ok = out->h[j].doc != h[e - 1].row;
    rcp_free(h);
    if (!ok)
        out->n = 0;
    return ok || ((const run *)(const void *)q)->stop;
}

/* Dense top out->k: the 8-bit scan unless q asks for the reference; the
** float scan where that declines; the exact loop where neither can
** decide (or a filter is given and its bitmap cannot be had).  -1 when
** the checkpoint stopped it. */
static int dense_search(const rcp_model *m, const rcp_model_query *q,
                        const float *qv, topk *out)
{
    int done = 0, lazy = ((const run *)(const void *)q)->lazy;
    size_t i, d = m->o.dim;
    /* the zero vector (a query of stopwords only, or of no word the
    ** embedder knows) is near nothing: every cosine with it is 0, and a
    ** list of every document at 0 in docno order is no ranking (§7.7) */
    for (i = 0; i < d && qv[i] == 0.0f; i++)
        ;
    if (i == d) {
        out->n = 0;
        return 0;
    }
    if (!q->exact && !lazy && m->q8.n == m->ndocs)
        done = dense_q8(m, q, qv, qview(q)->allow, out);
    if (!done && !lazy)
        done = dense_scan(m, q, qv, out);
    if (done)
        return ckpt(q, 0.45, "recall", NULL, 0) ? -1 : 0;
    return dense_exact(m, q, qv, out);
}

/* MARK: - Fusion (§16.3) -------------------------------------------------- */

typedef struct fctx {
    rcp_fused *f;
    uint64_t  *h;
} fctx;

static int fused_eq(const void *ctx, uint32_t e, const char *k, size_t n,
                    uint64_t h)
{
    const fctx *c = ctx;
    return c->h[e] == h && c->f[e].idlen == n && !memcmp(c->f[e].id, k, n);
}

static uint64_t fused_h(const void *ctx, uint32_t e)
{
    return ((const fctx *)ctx)->h[e];
}

/* §16.3 tie-break: (1) higher fused score, (2) higher summed weight,
** (3) lexicographically smaller stringified id. */
static int fused_cmp(const void *pa, const void *pb)
{
    const rcp_fused *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    return id_cmp(a->id, a->idlen, b->id, b->idlen);
}

/* The per-list normaliser: RRF's rank term, min-max (weighted) or the
** floor-anchored min-max of convex fusion. */
static double fuse_norm(int method, const rcp_fuse_list *l, size_t rank,
                        double lo, double hi, double rrf_k)
{
    double s = l->items[rank].score;
    if (method == RCP_FUSE_RRF)
        return 1.0 / (rrf_k + (double)(rank + 1));
    if (method == RCP_FUSE_CONVEX)
        lo = l->floor;
    if (hi > lo)
        return s <= lo ? 0.0 : (s - lo) / (hi - lo);
    /* a degenerate interval: for weighted every hit is the list's best
    ** (1); for convex every hit sits on the floor, i.e. no evidence (0) */
    return method == RCP_FUSE_CONVEX ? 0.0 : 1.0;
}

static void list_range(const rcp_fuse_list *l, double *lo, double *hi)
{
    size_t i;
    *lo = *hi = l->n ? l->items[0].score : 0;
    for (i = 1; i < l->n; i++) {
        if (l->items[i].score < *lo)
            *lo = l->items[i].score;
        if (l->items[i].score > *hi)
            *hi = l->items[i].score;
    }
}

/* Merge list l into the fused set; an id repeated within one list counts
** once, at its best (first) position. */
static int fuse_one(fctx *c, sidx *ix, size_t *n, int method,
                    const rcp_fuse_list *l, size_t li, double rrf_k)
{
    double lo, hi, t;
    size_t i, j, s;
    list_range(l, &lo, &hi);
    for (i = 0; i < l->n; i++) {
        const rcp_fuse_item *it = &l->items[i];
        uint64_t h = hash_bytes(3, it->id, it->idlen);
        if (sidx_reserve(ix, c, fused_h))
            return -1;
        s = sidx_find(ix, c, fused_eq, it->id, it->idlen, h);
        if (!ix->slot[s]) {
            j = (*n)++;
            memset(&c->f[j], 0, sizeof c->f[j]);
            c->f[j].id = it->id;
            c->f[j].idlen = it->idlen;
            for (s = 0; s < RCP_FUSE_MAX_LISTS; s++)
                c->f[j].pos[s] = -1;
            c->h[j] = h;
            s = sidx_find(ix, c, fused_eq, it->id, it->idlen, h);
            ix->slot[s] = (uint32_t)j + 1;
            ix->n++;
        }
        j = ix->slot[s] - 1;
        if (c->f[j].pos[li] >= 0)
            continue;
        c->f[j].pos[li] = (int32_t)i;
        /* the term rounded to double before it is added (as in
        ** rerank_hits): equal evidence sums equally under x87 too */
        t = l->weight * fuse_norm(method, l, i, lo, hi, rrf_k);
        c->f[j].score += t;
        c->f[j].weight += l->weight;
    }
    return 0;
}

long rcp_fuse(int method, const rcp_fuse_list *lists, size_t nlists,
              double rrf_k, rcp_fused **out)
{
    size_t i, total = 0, n = 0;
    fctx c;
    sidx ix;
    *out = NULL;
    if (nlists > RCP_FUSE_MAX_LISTS)
        return -1;
    for (i = 0; i < nlists; i++)
        total += lists[i].n;
    memset(&ix, 0, sizeof ix);
    c.f = rcp_malloc((total + 1) * sizeof *c.f);
    c.h = rcp_malloc((total + 1) * sizeof *c.h);
    for (i = 0; c.f && c.h && i < nlists; i++)
        if (fuse_one(&c, &ix, &n, method, &lists[i], i, rrf_k))
            break;
    rcp_free(ix.slot);
    rcp_free(c.h);
    if (!c.f || i < nlists) {
        rcp_free(c.f);
        return -1;
    }
    if (n)
        qsort(c.f, n, sizeof *c.f, fused_cmp);
    *out = c.f;
    return (long)n;
}

/* MARK: - Cross-encoder reranker (§7.6) ----------------------------------- */

/* "cross-encoder" here is a joint scorer over (query, passage), not a
** neural network: it reads both token streams together and scores
**   - exact matches (same stem) and near matches (a passage word whose
**     boundary-marked character trigrams overlap the query word's by a
**     Dice coefficient >= NEAR_NUM/NEAR_DEN = 3/5: typos and unstemmed
**     inflections), with BM25 saturation and length normalisation;
**   - proximity: pairs of distinct query terms close together in the
**     passage (BM25TP, Rasolofo & Savoy 2003: sum of 1/d^2 over occurrence
**     pairs within PROX_WINDOW tokens, saturated like a term);
** term importance is the index's idf when the index knows the term, else
** the fixed token weight.  Its confidence (rcp_model_confidence) is a
** corpus-free coverage/adjacency measure in [0,1]. */
#define NEAR_NUM     3
#define NEAR_DEN     5
#define PROX_WINDOW  5
#define CE_K1        1.2
#define CE_B         0.75

typedef struct qterm {
    const char *term, *word;
    size_t      tlen, wlen;
    double      w;              /* importance (idf or fixed) */
    double      fw;             /* fixed importance (for confidence) */
    uint32_t    kind;
    size_t      ntri;           /* trigrams of "<word>" (near matches) */
    uint32_t    tri[TEXT_MAX_WORD_BYTES + 2];
} qterm;

typedef struct occ {
    uint32_t pos;
    double   s;                 /* match strength: 1 exact, < 1 near */
} occ;

/* Byte trigrams of "<word>" as hashes; returns the count (<= cap). */
static size_t trigrams(const char *w, size_t n, uint32_t *out, size_t cap)
{
    char b[TEXT_MAX_WORD_BYTES + 2];
    size_t i, k = 0;
    if (n > TEXT_MAX_WORD_BYTES)
        n = TEXT_MAX_WORD_BYTES;
    b[0] = '<';
    memcpy(b + 1, w, n);
    b[n + 1] = '>';
    for (i = 0; i + 3 <= n + 2 && k < cap; i++)
        out[k++] = (uint32_t)hash_bytes(4, b + i, 3);
    return k;
}

/* Dice coefficient of two trigram multisets when it reaches 3/5, else 0.
** The threshold is decided in integers, 2c/(na+nb) >= 3/5 exactly when
** 10c >= 3(na+nb): a double 0.6 would be the long double 0.6 where C
** evaluates constants in excess precision (x87, FLT_EVAL_METHOD 2), and
** a Dice of exactly 0.6 would fall short of it there. */
static double near_dice(const uint32_t *ta, size_t na, const uint32_t *tb,
                        size_t nb)
{
    unsigned char used[TEXT_MAX_WORD_BYTES + 2];
    size_t i, j, common = 0;
    if (!na || !nb || 7 * (na < nb ? na : nb) < 3 * (na > nb ? na : nb))
        return 0.0;             /* lengths too far apart to reach 3/5 */
    memset(used, 0, nb);
    for (i = 0; i < na; i++)
        for (j = 0; j < nb; j++)
            if (!used[j] && ta[i] == tb[j]) {
                used[j] = 1;
                common++;
                break;
            }
    if (2 * NEAR_DEN * common < NEAR_NUM * (na + nb))
        return 0.0;
    return 2.0 * (double)common / (double)(na + nb);
}

static int near_candidate(const qterm *q, const rcp_token *pt)
{
    return q->kind == RCP_TOKEN_WORD && pt->kind == RCP_TOKEN_WORD
        && q->wlen >= 4 && pt->wlen >= 4;
}

static int same_term(const qterm *q, const rcp_tokens *p, const rcp_token *pt)
{
    return pt->tlen == q->tlen && !memcmp(p->buf + pt->term, q->term, q->tlen);
}

static double term_importance(const rcp_model *m, const view *v,
                              const char *s, size_t n, double fixed)
{
    size_t i;
    if (v->N <= 0 || !m->tix.cap)
        return fixed;
    i = sidx_find(&m->tix, m, term_eq, s, n, hash_bytes(1, s, n));
    if (!m->tix.slot[i])
        return bm25_idf_df(v, 0);
    return bm25_idf(v, &m->terms[m->tix.slot[i] - 1]);
}

/* The distinct query terms (first occurrence order). */
static size_t distinct_qterms(const rcp_model *m, const view *v,
                              const rcp_tokens *t, qterm *out)
{
    size_t i, j, n = 0;
    for (i = 0; i < t->n; i++) {
        const rcp_token *tk = &t->v[i];
        for (j = 0; j < n; j++)
            if (out[j].tlen == tk->tlen
                && !memcmp(out[j].term, t->buf + tk->term, tk->tlen))
                break;
        if (j < n)
            continue;
        out[n].term = t->buf + tk->term;
        out[n].tlen = tk->tlen;
        out[n].word = t->buf + tk->word;
        out[n].wlen = tk->wlen;
        out[n].kind = tk->kind;
        out[n].fw = token_weight(tk, t->buf);
        out[n].w = term_importance(m, v, out[n].term, out[n].tlen,
                                   out[n].fw);
        out[n].ntri = trigrams(out[n].word, out[n].wlen, out[n].tri,
                               TEXT_MAX_WORD_BYTES);
        n++;
    }
    return n;
}

#define MAX_OCC 256             /* occurrences per term kept for proximity */

/* Occurrences of each query term in the passage: o[start[i] ..
** start[i] + cnt[i]), start[i] = i MAX_OCC.  A passage token matches a
** term exactly (same term, strength 1) or nearly (trigram Dice of the
** words >= 3/5, strength = Dice); its trigrams are computed at most
** once. */
static void find_occ(const qterm *qt, size_t nq, const rcp_tokens *p,
                     occ *o, size_t *start, size_t *cnt)
{
    uint32_t tb[TEXT_MAX_WORD_BYTES + 2];
    size_t i, j, nb = 0;
    for (i = 0; i < nq; i++) {
        start[i] = i * MAX_OCC;
        cnt[i] = 0;
    }
    for (j = 0; j < p->n; j++) {
        const rcp_token *pt = &p->v[j];
        int have = 0;
        for (i = 0; i < nq; i++) {
            double sc = 0;
            if (cnt[i] >= MAX_OCC)
                continue;
            if (same_term(&qt[i], p, pt))
                sc = 1.0;
            else if (near_candidate(&qt[i], pt)) {
                if (!have++)
                    nb = trigrams(p->buf + pt->word, pt->wlen, tb,
                                  TEXT_MAX_WORD_BYTES);
                sc = near_dice(qt[i].tri, qt[i].ntri, tb, nb);
            }
            if (sc > 0) {
                o[start[i] + cnt[i]].pos = pt->pos;
                o[start[i] + cnt[i]++].s = sc;
            }
        }
    }
}

/* BM25TP's pair term: sum of s_a s_b / d^2 over occurrence pairs of two
** query terms at most PROX_WINDOW apart. */
static double pair_closeness(const occ *a, size_t na, const occ *b,
                             size_t nb, int ordered_adjacent)
{
    size_t i, j;
    double acc = 0;
    for (i = 0; i < na; i++)
        for (j = 0; j < nb; j++) {
            long d = (long)b[j].pos - (long)a[i].pos;
            if (ordered_adjacent) {
                if (d >= 1 && d <= 2)
                    return 1.0;
                continue;
            }
            if (d < 0)
                d = -d;
            if (d >= 1 && d <= PROX_WINDOW)
                acc += a[i].s * b[j].s / (double)(d * d);
        }
    return acc;
}

static double saturate(double tf, double lnorm)
{
    return tf * (CE_K1 + 1) / (tf + CE_K1 * lnorm);
}

typedef struct ce_out {
    double score, conf;
} ce_out;

static void ce_combine(const view *v, const qterm *qt, size_t nq,
                       const occ *o, const size_t *st, const size_t *cnt,
                       size_t plen, ce_out *r)
{
    double avgdl = v->N > 0 ? v->total / v->N : 0;
    double lnorm = avgdl > 0 ? 1 - CE_B + CE_B * (double)plen / avgdl : 1;
    double cov = 0, covw = 0, adj = 0, adjw = 0;
    size_t i, j, k;
    r->score = 0;
    for (i = 0; i < nq; i++) {
        double tf = 0, best = 0;
        for (k = 0; k < cnt[i]; k++) {
            tf += o[st[i] + k].s;
            best = o[st[i] + k].s > best ? o[st[i] + k].s : best;
        }
        r->score += qt[i].w * saturate(tf, lnorm);
        cov += qt[i].fw * best;
        covw += qt[i].fw;
        for (j = i + 1; j < nq; j++) {
            double w = qt[i].w < qt[j].w ? qt[i].w : qt[j].w;
            double acc = pair_closeness(o + st[i], cnt[i], o + st[j], cnt[j],
                                        0);
            r->score += w * saturate(acc, 1.0);
        }
        if (i + 1 < nq) {
            double w = qt[i].fw < qt[i + 1].fw ? qt[i].fw : qt[i + 1].fw;
            adj += w * pair_closeness(o + st[i], cnt[i], o + st[i + 1],
                                      cnt[i + 1], 1);
            adjw += w;
        }
    }
    cov = covw > 0 ? cov / covw : 0;
    adj = adjw > 0 ? adj / adjw : cov;
    r->conf = 0.7 * cov + 0.3 * adj;
}

/* Score one passage against prepared query terms. */
static int ce_score(const rcp_model *m, const view *v, const qterm *qt,
                    size_t nq,
                    const char *text, size_t len, ce_out *r)
{
    rcp_tokens p;
    occ *o;
    size_t *st, *cnt;
    int rc = -1;
    rcp_tokens_init(&p);
    r->score = r->conf = 0;
    if (model_tokenize(m, &p, text, len)) {
        rcp_tokens_free(&p);
        return -1;
    }
    o = rcp_malloc((nq * MAX_OCC + 1) * sizeof *o);
    st = rcp_malloc((nq + 1) * sizeof *st);
    cnt = rcp_malloc((nq + 1) * sizeof *cnt);
    if (o && st && cnt) {
        find_occ(qt, nq, &p, o, st, cnt);
        ce_combine(v, qt, nq, o, st, cnt, p.n, r);
        rc = 0;
    }
    rcp_free(o);
    rcp_free(st);
    rcp_free(cnt);
    rcp_tokens_free(&p);
    return rc;
}

/* Prepared query: its tokens (which the qterms point into) and terms. */
typedef struct ce_query {
    rcp_tokens t;
    qterm     *qt;
    size_t     nq;
    view       v;               /* the statistics its weights came from */
} ce_query;

static void ce_query_free(ce_query *c)
{
    rcp_tokens_free(&c->t);
    rcp_free(c->qt);
}

static int ce_query_init(const rcp_model *m, const view *v, ce_query *c,
                         const char *q, size_t qlen)
{
    rcp_tokens_init(&c->t);
    c->qt = NULL;
    c->nq = 0;
    c->v = *v;
    if (rcp_tokenize(&c->t, q, qlen, m->o.tok_flags)
        || !(c->qt = rcp_malloc((c->t.n + 1) * sizeof *c->qt))) {
        ce_query_free(c);
        return -1;
    }
    c->nq = distinct_qterms(m, v, &c->t, c->qt);
    return 0;
}

/* MARK: - Rerank methods and confidence (§7.6, §7.7.2) -------------------- */

/* colbert: §7.5 MaxSim of the query's rows over the passage's, cosine. */
static int colbert_score(const rcp_model *m, const float *qm, size_t nq,
                         const char *text, size_t len, double *out)
{
    float *dm;
    size_t nd;
    if (rcp_model_embed_multi(m, text, len, RCP_KIND_DOCUMENT, &dm, &nd))
        return -1;
    *out = nq && nd ? rcp_vec_maxsim(qm, nq, dm, nd, m->o.multi_dim,
                                     RCP_VEC_COSINE) : 0.0;
    rcp_free(dm);
    return 0;
}

/* A prepared query for either reranker. */
typedef struct rr_query {
    int       method;
    ce_query  ce;
    float    *qm;
    size_t    nq;
} rr_query;

static void rr_free(rr_query *r)
{
    ce_query_free(&r->ce);
    rcp_free(r->qm);
}

static int rr_init(const rcp_model *m, const view *v, rr_query *r,
                   int method,
                   const char *q, size_t qlen)
{
    memset(r, 0, sizeof *r);
    r->method = method;
    if (ce_query_init(m, v, &r->ce, q, qlen))
        return -1;
    if (method == RCP_RERANK_COLBERT
        && rcp_model_embed_multi(m, q, qlen, RCP_KIND_QUERY, &r->qm, &r->nq)) {
        rr_free(r);
        return -1;
    }
    return 0;
}

/* Score and confidence of one passage. */
static int rr_score(const rcp_model *m, const rr_query *r, const char *text,
                    size_t len, double *score, double *conf)
{
    ce_out o;
    if (ce_score(m, &r->ce.v, r->ce.qt, r->ce.nq, text, len, &o))
        return -1;
    *score = o.score;
    if (conf)
        *conf = o.conf;
    if (r->method == RCP_RERANK_COLBERT)
        return colbert_score(m, r->qm, r->nq, text, len, score);
    return 0;
}

int rcp_model_rerank(const rcp_model *m, int method, const char *query,
                     size_t qlen, const char *const *texts,
                     const size_t *lens, size_t n, double *scores)
{
    rr_query r;
    view lv;
    size_t i;
    if (method != RCP_RERANK_CROSS && method != RCP_RERANK_COLBERT)
        return -1;
    if (m->o.ext_rerank)            /* issue 18: delegated (delegate.c) */
        return m->o.ext_rerank(m->o.ext_ud, method, query, qlen, texts, lens,
                               n, scores) ? -1 : 0;
    live_view(m, &lv);
    if (rr_init(m, &lv, &r, method, query, qlen))
        return -1;
    for (i = 0; i < n; i++)
        if (rr_score(m, &r, texts[i], lens[i], &scores[i], NULL)) {
            rr_free(&r);
            return -1;
        }
    rr_free(&r);
    return 0;
}

int rcp_model_confidence(const rcp_model *m, const char *query, size_t qlen,
                         const char *text, size_t len, double *out)
{
    ce_query cq;
    ce_out o;
    view lv;
    int rc;
    live_view(m, &lv);
    if (ce_query_init(m, &lv, &cq, query, qlen))
        return -1;
    rc = ce_score(m, &lv, cq.qt, cq.nq, text, len, &o);
    ce_query_free(&cq);
    *out = rc ? 0 : o.conf;
    return rc;
}

/* MARK: - Retrieval pipeline (§3, §7.7) ----------------------------------- */

void rcp_model_query_init(rcp_model_query *q)
{
    memset(q, 0, sizeof *q);
    q->k = 10;
    q->mode = RCP_MODE_HYBRID;
    q->fusion = RCP_FUSE_RRF;
    q->w_dense = -1;            /* the default of the embedder in use */
    q->w_sparse = 1.0;
    q->rrf_k = 60.0;
    q->alpha = 0.5;
    q->rerank = RCP_RERANK_NONE;
    q->rerank_weight = -1.0;
    q->mmr_lambda = -1.0;
}

/* Rocchio feedback (Rocchio 1971, the SMART defaults alpha 1, beta 0.75):
** move the query vector towards the centroid of the top documents of the
** lexical list.  The embedder stays a fixed function of the text; this is
** a retrieval step over the collection, like any query expansion. */
static void rocchio(const rcp_model *m, float *qv, const rcp_model_hit *seed,
                    size_t nseed)
{
    size_t i, j, d = m->o.dim, ns = m->o.prf_docs;
    if (ns > nseed)
        ns = nseed;
    for (i = 0; i < ns; i++) {
        const float *v = m->vecs + (size_t)seed[i].doc * d;
        for (j = 0; j < d; j++)
            qv[j] += (float)(m->o.prf_beta / (double)ns * v[j]);
    }
    if (ns)
        normalize(qv, d);
}

/* A sorted top-k turned into hits of one recall stage. */
static void topk_hits(const topk *t, int dense, rcp_model_hit *out)
{
    size_t i;
    for (i = 0; i < t->n; i++) {
        rcp_model_hit *h = &out[i];
        memset(h, 0, sizeof *h);
        h->doc = t->h[i].doc;
        h->score = t->h[i].score;
        h->has = dense ? RCP_HIT_DENSE : RCP_HIT_SPARSE;
        if (dense)
            h->dense = h->score;
        else
            h->sparse = h->score;
    }
}

/* One recall list: the top c of dense (with feedback from seed when
** given) or sparse, as hits in *out (rcp_free it). */
static int recall(const rcp_model *m, const rcp_model_query *q, int dense,
                  const rcp_model_hit *seed, size_t nseed, size_t c,
                  rcp_model_hit **out, size_t *n)
{
    topk t;
    float *qv = NULL;
    int rc;
    t.k = c;
    t.n = 0;
    t.h = rcp_malloc((c + 1) * sizeof *t.h);
    *out = rcp_malloc((c + 1) * sizeof **out);
    rc = !t.h || !*out;
    if (!rc && dense) {
        qv = rcp_malloc(m->o.dim * sizeof *qv);
        rc = !qv || rcp_model_embed(m, q->text, q->len, RCP_KIND_QUERY, qv);
        if (!rc && seed)
            rocchio(m, qv, seed, nseed);
        rc = rc || dense_search(m, q, qv, &t);
    } else if (!rc && seed) {
        rc = bm25_feedback(m, q, seed, nseed, &t);
    } else if (!rc) {
        rc = bm25_search(m, q, &t);
    }
    *n = rc ? 0 : topk_sort(m, &t);
    if (!rc)
        topk_hits(&t, dense, *out);
    rcp_free(qv);
    rcp_free(t.h);
    if (rc) {
        rcp_free(*out);
        *out = NULL;
    }
    return rc ? -1 : 0;
}

static int to_items(const rcp_model *m, const rcp_model_hit *h, size_t n,
                    rcp_fuse_item **out)
{
    size_t i;
    *out = rcp_malloc((n + 1) * sizeof **out);
    if (!*out)
        return -1;
    for (i = 0; i < n; i++) {
        (*out)[i].id = m->docs[h[i].doc].id;
        (*out)[i].idlen = m->docs[h[i].doc].idlen;
        (*out)[i].score = h[i].score;
    }
    return 0;
}

/* Dense and sparse lists fused into *out (at most c hits). */
static int fuse_lists(const rcp_model *m, const rcp_model_query *q,
                      const rcp_model_hit *dl, size_t dn,
                      const rcp_model_hit *sl, size_t sn, size_t c,
                      rcp_model_hit *out, size_t *n)
{
    rcp_fuse_item *di = NULL, *si = NULL;
    rcp_fuse_list L[2];
    rcp_fused *f = NULL;
    long nf = -1, i;
    if (!to_items(m, dl, dn, &di) && !to_items(m, sl, sn, &si)) {
        L[0].items = di;
        L[0].n = dn;
        L[0].floor = RCP_MODEL_DENSE_FLOOR;
        L[1].items = si;
        L[1].n = sn;
        L[1].floor = RCP_MODEL_SPARSE_FLOOR;
        L[0].weight = q->fusion == RCP_FUSE_CONVEX ? q->alpha
                      : q->w_dense >= 0 ? q->w_dense
                      : m->lsa.w.n ? RCP_MODEL_LSA_W_DENSE
                      : RCP_MODEL_DEFAULT_W_DENSE;
        L[1].weight = q->fusion == RCP_FUSE_CONVEX ? 1 - q->alpha
                                                   : q->w_sparse;
        nf = rcp_fuse(q->fusion, L, 2, q->rrf_k, &f);
    }
    for (i = 0; i < nf && (size_t)i < c; i++) {
        const rcp_fused *x = &f[i];
        rcp_model_hit *h = &out[i];
        memset(h, 0, sizeof *h);
        h->doc = x->pos[0] >= 0 ? dl[x->pos[0]].doc : sl[x->pos[1]].doc;
        h->score = h->fused = x->score;
        h->has = RCP_HIT_FUSED;
        if (x->pos[0] >= 0) {
            h->dense = dl[x->pos[0]].dense;
            h->has |= RCP_HIT_DENSE;
        }
        if (x->pos[1] >= 0) {
            h->sparse = sl[x->pos[1]].sparse;
            h->has |= RCP_HIT_SPARSE;
        }
    }
    *n = nf < 0 ? 0 : (size_t)i;
    rcp_free(di);
    rcp_free(si);
    rcp_free(f);
    return nf < 0 ? -1 : 0;
}

/* Replace the lexical list *sl by its RM3-expanded second pass. */
static int relexical(const rcp_model *m, const rcp_model_query *q, size_t c,
                     rcp_model_hit **sl, size_t *sn)
{
    rcp_model_hit *s2;
    size_t n2;
    if (recall(m, q, 0, *sl, *sn, c, &s2, &n2))
        return -1;
    rcp_free(*sl);
    *sl = s2;
    *sn = n2;
    return 0;
}

/* Recall (and fuse): the candidate list, best first, at most c long. */
static int candidates(const rcp_model *m, const rcp_model_query *q,
                      size_t c, rcp_model_hit **out, size_t *n)
{
    rcp_model_hit *dl = NULL, *sl = NULL;
    size_t dn = 0, sn = 0;
    int rc, fb = m->o.prf_docs && !q->no_feedback;
    if (q->mode == RCP_MODE_DENSE)
        return recall(m, q, 1, NULL, 0, c, out, n);
    /* the lexical leg (all of sparse): a first BM25 pass, then its RM3
    ** second pass; in hybrid the first pass's top documents also give
    ** the dense query its feedback (Rocchio), so each leg finds what the
    ** query's own words missed */
    rc = recall(m, q, 0, NULL, 0, c, &sl, &sn)
         || ckpt(q, 0.2, "recall", NULL, 0)
         || (q->mode == RCP_MODE_HYBRID
             && recall(m, q, 1, sl, fb ? sn : 0, c, &dl, &dn));
    if (!rc && fb)
        rc = relexical(m, q, c, &sl, &sn);
    if (q->mode == RCP_MODE_SPARSE) {
        if (rc)
            rcp_free(sl);
        *out = rc ? NULL : sl;
        *n = rc ? 0 : sn;
        return rc ? -1 : 0;
    }
    *out = rc ? NULL : rcp_malloc((dn + sn + 1) * sizeof **out);
    rc = rc || !*out
         || fuse_lists(m, q, dl, dn, sl, sn, c, *out, n);
    rcp_free(dl);
    rcp_free(sl);
    if (rc) {
        rcp_free(*out);
        *out = NULL;
    }
    return rc ? -1 : 0;
}

static int hit_before(const rcp_model *m, const rcp_model_hit *a,
                      const rcp_model_hit *b)
{
    cand x, y;
    x.doc = a->doc;
    x.score = a->score;
    y.doc = b->doc;
    y.score = b->score;
    return cand_before(m, &x, &y);
}

/* Stable insertion sort of a few hits by score, then id. */
static void sort_hits(const rcp_model *m, rcp_model_hit *h, size_t n)
{
    size_t i, j;
    for (i = 1; i < n; i++) {
        rcp_model_hit x = h[i];
        for (j = i; j > 0 && hit_before(m, &x, &h[j - 1]); j--)
            h[j] = h[j - 1];
        h[j] = x;
    }
}

/* Issue 18: the delegated reranker scores the stage's candidates in one
** call; confidence is ours (§7.7.2: one definition in every call). */
static int score_rerank_ext(const rcp_model *m, const rcp_model_query *q,
                            rcp_model_hit *c, size_t top)
{
    const char **texts = rcp_malloc((top + 1) * sizeof *texts);
    size_t *lens = rcp_malloc((top + 1) * sizeof *lens), i;
    double *sc = rcp_malloc((top + 1) * sizeof *sc);
    int rc = !texts || !lens || !sc
             || ckpt(q, 0.5, "rerank", NULL, 0);
    for (i = 0; !rc && i < top; i++) {
        texts[i] = m->docs[c[i].doc].text;
        lens[i] = m->docs[c[i].doc].textlen;
    }
    rc = rc || m->o.ext_rerank(m->o.ext_ud, q->rerank, q->text, q->len,
                               texts, lens, top, sc);
    for (i = 0; !rc && i < top; i++) {
        c[i].rerank = sc[i];
        c[i].has |= RCP_HIT_RERANK;
        if (!q->no_confidence)
            rc = rcp_model_confidence(m, q->text, q->len, texts[i], lens[i],
                                      &c[i].confidence);
    }
    rcp_free(texts);
    rcp_free(lens);
    rcp_free(sc);
    return rc ? -1 : 0;
}

/* The rerank score of every hit in c[0..top). */
static int score_rerank(const rcp_model *m, const rcp_model_query *q,
                        rcp_model_hit *c, size_t top)
{
    rr_query r;
    size_t i;
    if (m->o.ext_rerank)
        return score_rerank_ext(m, q, c, top);
    if (rr_init(m, qview(q), &r, q->rerank, q->text, q->len))
        return -1;
    for (i = 0; i < top; i++) {
        const doc *d = &m->docs[c[i].doc];
        if ((i % 16 == 0 && ckpt(q, 0.5 + 0.4 * (double)i / (double)top,
                                 "rerank", NULL, 0))
            || rr_score(m, &r, d->text, d->textlen, &c[i].rerank,
                        &c[i].confidence)) {
            rr_free(&r);
            return -1;
        }
        c[i].has |= RCP_HIT_RERANK;
    }
    rr_free(&r);
    return 0;
}

/* §3.3 rerank stage over the best rerank_top candidates.  The cascade
** interpolates instead of replacing: hit.score = (1 - w) x the recall
** score + w x the rerank score, w = q->rerank_weight or the method's
** (RCP_MODEL_RERANK_WEIGHT, RCP_MODEL_COLBERT_WEIGHT), each min-max
** normalised over the reranked candidates (the observed maximum is the
** upper end, §6.1's note; min-max because the two scales have nothing in
** common: BM25, cosine or a fused score against the reranker's own).  A
** lexical reranker alone throws away what recall found (the dense leg,
** the feedback terms): replacing the recall score, or fusing the two
** ranks by equal-weight RRF, put the cascade below its input (make eval;
** README, Decisions).  The result is in [0, 1], so the advertised
** scoreFloor holds.  hit.rerank keeps the reranker's own score; hit.score
** is the cascade's. */
static double minmax(double x, double lo, double hi)
{
    return hi > lo ? (x - lo) / (hi - lo) : 1.0;
}

static int rerank_hits(const rcp_model *m, const rcp_model_query *q,
                       rcp_model_hit *c, size_t n)
{
    size_t i, top = q->rerank_top && q->rerank_top < n ? q->rerank_top : n;
    double lo, hi, rlo, rhi, w = q->rerank_weight;
    if (w < 0)
        w = q->rerank == RCP_RERANK_COLBERT ? RCP_MODEL_COLBERT_WEIGHT
                                            : RCP_MODEL_RERANK_WEIGHT;
    if (!top)
        return 0;
    if (score_rerank(m, q, c, top))
        return -1;
    lo = hi = c[0].score;
    rlo = rhi = c[0].rerank;
    for (i = 1; i < top; i++) {
        lo = c[i].score < lo ? c[i].score : lo;
        hi = c[i].score > hi ? c[i].score : hi;
        rlo = c[i].rerank < rlo ? c[i].rerank : rlo;
        rhi = c[i].rerank > rhi ? c[i].rerank : rhi;
    }
    /* each term is rounded to double before the sum, so equal pairs give
    ** equal sums (a tie, broken by id) also where C keeps excess
    ** precision in expressions (x87: i686) */
    for (i = 0; i < top; i++) {
        double a = (1 - w) * minmax(c[i].score, lo, hi);
        double b = w * minmax(c[i].rerank, rlo, rhi);
        c[i].score = a + b;
    }
    sort_hits(m, c, top);
    return 0;
}

/* MARK: - Diversification: MMR (§3.1) ------------------------------------- */

/* Maximal Marginal Relevance (Carbonell & Goldstein 1998): pick, one at a
** time, the pool hit maximising lambda rel - (1 - lambda) max cos(hit,
** picked), rel being the stage score min-max normalised over the pool and
** cos the dense vectors' cosine.  Ties: the earlier pool position (which
** is already the id order for equal scores).  Moves the k picked hits to
** the front of c in pick order. */
static void mmr(const rcp_model *m, double lambda, rcp_model_hit *c,
                size_t n, size_t k, double *best)
{
    size_t i, j, d = m->o.dim;
    double lo = n ? c[0].score : 0, hi = lo;
    for (i = 0; i < n; i++) {
        lo = c[i].score < lo ? c[i].score : lo;
        hi = c[i].score > hi ? c[i].score : hi;
        best[i] = -1.0;         /* max similarity to the picked so far */
    }
    for (j = 0; j < k && j < n; j++) {
        size_t pick = j;
        double top = -HUGE_VAL;
        rcp_model_hit t;
        for (i = j; i < n; i++) {
            double rel = hi > lo ? (c[i].score - lo) / (hi - lo) : 1.0;
            double v = lambda * rel - (1 - lambda) * (j ? best[i] : 0);
            if (v > top) {
                top = v;
                pick = i;
            }
        }
        t = c[j], c[j] = c[pick], c[pick] = t;
        top = best[j], best[j] = best[pick], best[pick] = top;
        for (i = j + 1; i < n; i++) {
            double sim = dotf(m->vecs + (size_t)c[i].doc * d,
                              m->vecs + (size_t)c[j].doc * d, d);
            best[i] = sim > best[i] ? sim : best[i];
        }
    }
}

/* §7.7.2 confidence of each returned hit (the reranker already set it
** for the hits it scored). */
static int fill_confidence(const rcp_model *m, const rcp_model_query *q,
                           rcp_model_hit *h, size_t n)
{
    ce_query cq;
    size_t i;
    if (ce_query_init(m, qview(q), &cq, q->text, q->len))
        return -1;
    for (i = 0; i < n; i++) {
        const doc *d = &m->docs[h[i].doc];
        ce_out o;
        if (h[i].has & RCP_HIT_RERANK)
            continue;
        if (ce_score(m, &cq.v, cq.qt, cq.nq, d->text, d->textlen, &o)) {
            ce_query_free(&cq);
            return -1;
        }
        h[i].confidence = o.conf;
    }
    ce_query_free(&cq);
    return 0;
}

/* The stages after recall, on the candidate list c[0..*n). */
static int post_recall(const rcp_model *m, const rcp_model_query *q,
                       rcp_model_hit *c, size_t *n)
{
    size_t pool = *n;
    if (q->rerank != RCP_RERANK_NONE) {
        if (rerank_hits(m, q, c, *n))
            return -1;
        if (q->rerank_top && q->rerank_top < pool)
            pool = q->rerank_top;   /* §3.3: only reranked hits go on */
    }
    if (q->mmr_lambda >= 0 && pool > 0) {
        double *best;
        if (ckpt(q, 0.9, "diversify", NULL, 0)
            || !(best = rcp_malloc(pool * sizeof *best)))
            return -1;
        mmr(m, q->mmr_lambda, c, pool, q->k, best);
        rcp_free(best);
    }
    *n = pool < q->k ? pool : q->k;
    return q->no_confidence ? 0 : fill_confidence(m, q, c, *n);
}

int rcp_model_has_version(const rcp_model *m, uint64_t v)
{
    return v == m->version
        || (v < m->version && m->version - v <= m->keep && v >= m->floor);
}

static int visible_at(const doc *d, uint64_t v)
{
    return d->vadd <= v && v < d->vdel && d->text != NULL;
}

int rcp_model_doc_at(const rcp_model *m, uint32_t docno, uint64_t v,
                     rcp_model_docview *out)
{
    if (!m || !out || docno >= m->ndocs || !rcp_model_has_version(m, v)
        || !visible_at(&m->docs[docno], v))
        return -1;
    view_of(m, docno, out);
    return 0;
}

/* The chain from the parents table holds every chunk doc of the document
** not yet reclaimed, live, retained or gone; visibility picks. */
int rcp_model_chunks(const rcp_model *m, const char *of, size_t oflen,
                     uint64_t v, rcp_model_chunk_fn fn, void *ud)
{
    rcp_model_docview view;
    uint32_t no = NO_DOC;
    size_t sl;
    int rc;
    if (!rcp_model_has_version(m, v))
        return RCP_MODEL_GONE;
    if (m->parents.cap) {
        sl = sidx_find(&m->parents, m, part_eq, of, oflen,
                       hash_bytes(3, of, oflen));
        no = m->parents.slot[sl] ? m->parents.slot[sl] - 1 : NO_DOC;
    }
    for (; no != NO_DOC; no = m->docs[no].ck->sib) {
        if (!visible_at(&m->docs[no], v))
            continue;
        view_of(m, no, &view);
        if ((rc = fn(ud, no, &view)) != 0)
            return rc;
    }
    return 0;
}

/* MARK: - §8 Filters: one bitmap per request ------------------------------ */

/* A filter (rcp.h) follows its rules, nests at most depth levels more,
** and names fields and operators the model has. */
static int filter_ok(const rcp_model *m, const rcp_model_filter *f,
                     unsigned depth)
{
    size_t i;
    rcp_field_type t;
    if (!depth)
        return 0;
    if (f->kind == RCP_FILTER_AND || f->kind == RCP_FILTER_OR
        || f->kind == RCP_FILTER_NOT) {
        if (!f->kids || !f->nkids
            || (f->kind == RCP_FILTER_NOT && f->nkids != 1))
            return 0;
        for (i = 0; i < f->nkids; i++)
            if (!filter_ok(m, &f->kids[i], depth - 1))
                return 0;
        return 1;
    }
    if (f->kind != RCP_FILTER_LEAF || f->field >= m->o.nfields
        || f->op < RCP_OP_EQ || f->op > RCP_OP_EXISTS
        || (f->nvalues && !f->values))
        return 0;
    t = m->fields[f->field].type;
    if (f->op >= RCP_OP_GT && f->op <= RCP_OP_LTE && t != RCP_FIELD_INT
        && t != RCP_FIELD_FLOAT && t != RCP_FIELD_DATE)
        return 0;
    if (f->op != RCP_OP_IN && f->op != RCP_OP_NIN && f->nvalues != 1)
        return 0;
    for (i = 0; is_string_type(t) && i < f->nvalues; i++)
        if ((!f->values[i].s && f->values[i].len)
            || f->values[i].len >= UINT32_MAX)
            return 0;
    return f->op != RCP_OP_EXISTS || f->values[0].ms == 0
        || f->values[0].ms == 1;
}

/* A filter's value, typed as cells are; a string's bytes are the
** caller's (s). */
typedef struct fkey {
    fval        v;
    const char *s;
} fkey;

/* A leaf made ready for its column: its values typed as cells are, in/nin
** as a sorted set (a binary search per value), contains on text with the
** needle's border table (Knuth-Morris-Pratt), so a document costs what
** its own value costs whatever the size of the caller's list or needle
** (README, "Filters"). */
typedef struct fleaf {
    const fcol *col;
    rcp_field_type type;
    int      op;                /* positive: ne -> eq, nin -> in */
    int      neg;               /* ne, nin: the negation of op */
    int      present;           /* exists: the value asked for */
    fkey     v;
    fkey    *set;
    size_t   nset;
    uint32_t *kmp;
} fleaf;

/* A value a (its string's bytes as) against a key of type t: <0, 0, >0
** (strings byte-wise, then the shorter first; numbers as doubles; dates
** and bools as integers). */
static int key_cmp(rcp_field_type t, const fval *a, const char *as,
                   const fkey *b)
{
    if (is_string_type(t)) {
        size_t n = a->n < b->v.n ? a->n : b->v.n;
        int c = n ? memcmp(as, b->s, n) : 0;
        return c ? (c < 0 ? -1 : 1) : (a->n > b->v.n) - (a->n < b->v.n);
    }
    if (t == RCP_FIELD_INT || t == RCP_FIELD_FLOAT)
        return (a->u.x > b->v.u.x) - (a->u.x < b->v.u.x);
    return (a->u.i > b->v.u.i) - (a->u.i < b->v.u.i);
}

static void key_from(rcp_field_type t, const rcp_model_value *v, fkey *out)
{
    memset(out, 0, sizeof *out);
    out->v.kind = FV_VAL;
    if (is_string_type(t)) {
        out->v.n = (uint32_t)v->len;
        out->s = v->len ? v->s : "";
    } else if (t == RCP_FIELD_INT || t == RCP_FIELD_FLOAT) {
        out->v.u.x = v->num;
    } else {
        out->v.u.i = v->ms;
    }
}

/* The set's sort, one comparison per kind of value (qsort passes no
** context). */
static int set_cmp_str(const void *a, const void *b)
{
    const fkey *x = a;
    return key_cmp(RCP_FIELD_KEYWORD, &x->v, x->s, b);
}

static int set_cmp_num(const void *a, const void *b)
{
    return key_cmp(RCP_FIELD_FLOAT, &((const fkey *)a)->v, NULL, b);
}

static int set_cmp_int(const void *a, const void *b)
{
    return key_cmp(RCP_FIELD_DATE, &((const fkey *)a)->v, NULL, b);
}

static void fleaf_free(fleaf *l)
{
    rcp_free(l->set);
    rcp_free(l->kmp);
}

/* The needle's border table: kmp[i] is the length of the longest proper
** prefix of needle[0..i] that is also its suffix. */
static void kmp_borders(const char *p, size_t n, uint32_t *k)
{
    size_t i;
    uint32_t q = 0;
    k[0] = 0;
    for (i = 1; i < n; i++) {
        while (q && p[i] != p[q])
            q = k[q - 1];
        q += p[i] == p[q];
        k[i] = q;
    }
}

static int fleaf_init(const rcp_model *m, const rcp_model_filter *f,
                      fleaf *l)
{
    size_t i;
    memset(l, 0, sizeof *l);
    l->col = &m->col[f->field];
    l->type = m->fields[f->field].type;
    l->neg = f->op == RCP_OP_NE || f->op == RCP_OP_NIN;
    l->op = f->op == RCP_OP_NE ? RCP_OP_EQ
          : f->op == RCP_OP_NIN ? RCP_OP_IN : f->op;
    if (f->op == RCP_OP_EXISTS) {
        l->present = f->values[0].ms == 1;
        return 0;
    }
    if (l->op == RCP_OP_IN) {
        if (!(l->nset = f->nvalues))
            return 0;
        if (!(l->set = rcp_malloc(l->nset * sizeof *l->set)))
            return -1;
        for (i = 0; i < l->nset; i++)
            key_from(l->type, &f->values[i], &l->set[i]);
        qsort(l->set, l->nset, sizeof *l->set,
              is_string_type(l->type) ? set_cmp_str
              : l->type == RCP_FIELD_INT || l->type == RCP_FIELD_FLOAT
                  ? set_cmp_num : set_cmp_int);
        return 0;
    }
    key_from(l->type, &f->values[0], &l->v);
    if (l->op != RCP_OP_CONTAINS || l->type != RCP_FIELD_TEXT || !l->v.v.n)
        return 0;
    if (!(l->kmp = rcp_malloc(l->v.v.n * sizeof *l->kmp)))
        return -1;
    kmp_borders(l->v.s, l->v.v.n, l->kmp);
    return 0;
}

/* Is the leaf's needle in hay[0..len)?  O(len + needle). */
static int kmp_find(const fleaf *l, const char *hay, size_t len)
{
    const char *p = l->v.s;
    size_t i, n = l->v.v.n;
    uint32_t q = 0;
    if (!n)
        return 1;
    for (i = 0; i < len; i++) {
        while (q && hay[i] != p[q])
            q = l->kmp[q - 1];
        q += hay[i] == p[q];
        if (q == n)
            return 1;
    }
    return 0;
}

static int in_set(const fleaf *l, const fval *v, const char *vs)
{
    size_t lo = 0, hi = l->nset;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(l->type, v, vs, &l->set[mid]);
        if (c == 0)
            return 1;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 0;
}

/* One value of the field's type against the leaf's positive op. */
static int leaf_scalar(const fleaf *l, int op, const fval *v)
{
    const char *vs;
    int c;
    if (v->kind != FV_VAL)
        return 0;
    vs = is_string_type(l->type) ? fv_str(l->col, v) : NULL;
    if (op == RCP_OP_IN)
        return in_set(l, v, vs);
    if (op == RCP_OP_CONTAINS)      /* text: substring; others: none */
        return l->type == RCP_FIELD_TEXT && kmp_find(l, vs, v->n);
    c = key_cmp(l->type, v, vs, &l->v);
    switch (op) {
    case RCP_OP_EQ:  return c == 0;
    case RCP_OP_GT:  return c > 0;
    case RCP_OP_GTE: return c >= 0;
    case RCP_OP_LT:  return c < 0;
    case RCP_OP_LTE: return c <= 0;
    }
    return 0;
}

/* A leaf against one document's cell: an array matches when any element
** does (contains then compares elements), ne and nin negate eq and in. */
static int leaf_cell(const fleaf *l, const fval *c)
{
    size_t i;
    int hit = 0;
    if (l->op == RCP_OP_EXISTS)
        return (c->kind != FV_ABSENT) == l->present;
    if (c->kind == FV_ABSENT)
        return l->neg;
    if (c->kind == FV_ARRAY) {
        const fval *el = l->col->el + c->u.off;
        int op = l->op == RCP_OP_CONTAINS ? RCP_OP_EQ : l->op;
        for (i = 0; i < c->n && !hit; i++)
            hit = leaf_scalar(l, op, &el[i]);
    } else {
        hit = leaf_scalar(l, l->op, c);
    }
    return l->neg ? !hit : hit;
}

/* A filter compiled for one search: the tree's nodes (a node's kids side
** by side), its leaves made ready, so a document costs its own cells. */
typedef struct cnode {
    int           kind;
    size_t        field, nkids;
    struct cnode *kids;
    fleaf         leaf;
} cnode;

typedef struct cfilter {
    cnode  *node;               /* node[0] is the root */
    size_t  n;
} cfilter;

static size_t count_nodes(const rcp_model_filter *f)
{
    size_t i, n = 1;
    for (i = 0; f->kind != RCP_FILTER_LEAF && i < f->nkids; i++)
        n += count_nodes(&f->kids[i]);
    return n;
}

/* f into n, its kids into the next free nodes (*next on). */
static int compile_node(const rcp_model *m, const rcp_model_filter *f,
                        cfilter *c, cnode *n, size_t *next)
{
    size_t i;
    n->kind = f->kind;
    n->field = f->field;
    if (f->kind == RCP_FILTER_LEAF)
        return fleaf_init(m, f, &n->leaf);
    n->nkids = f->nkids;
    n->kids = &c->node[*next];
    *next += f->nkids;
    for (i = 0; i < f->nkids; i++)
        if (compile_node(m, &f->kids[i], c, &n->kids[i], next))
            return -1;
    return 0;
}

static void cfilter_free(cfilter *c)
{
    size_t i;
    for (i = 0; c->node && i < c->n; i++)
        if (c->node[i].kind == RCP_FILTER_LEAF)
            fleaf_free(&c->node[i].leaf);
    rcp_free(c->node);
    memset(c, 0, sizeof *c);
}

/* A valid tree (filter_ok) compiled; 0, or -1 out of memory. */
static int cfilter_init(const rcp_model *m, const rcp_model_filter *f,
                        cfilter *c)
{
    size_t next = 1;
    c->n = count_nodes(f);
    if (!(c->node = rcp_malloc(c->n * sizeof *c->node)))
        return -1;
    memset(c->node, 0, c->n * sizeof *c->node);
    if (compile_node(m, f, c, &c->node[0], &next)) {
        cfilter_free(c);
        return -1;
    }
    return 0;
}

/* Does document docno pass?  Evaluated as a tree, short-circuit: for a
** search whose candidates are few (BM25 scores only what holds a query
** term), cheaper than a bitmap over every document. */
static int doc_passes(const rcp_model *m, const cnode *n, uint32_t docno)
{
    size_t i;
    switch (n->kind) {
    case RCP_FILTER_AND:
        for (i = 0; i < n->nkids; i++)
            if (!doc_passes(m, &n->kids[i], docno))
                return 0;
        return 1;
    case RCP_FILTER_OR:
        for (i = 0; i < n->nkids; i++)
            if (doc_passes(m, &n->kids[i], docno))
                return 1;
        return 0;
    case RCP_FILTER_NOT:
        return !doc_passes(m, n->kids, docno);
    }
    return leaf_cell(&n->leaf, &m->col[n->field].cell[docno]);
}

/* The bitmap of a leaf over docnos 0..ndocs, down its column. */
static void eval_leaf(const rcp_model *m, const cnode *n, unsigned char *out)
{
    const fval *cell = m->col[n->field].cell;
    size_t i;
    memset(out, 0, m->ndocs / 8 + 1);
    for (i = 0; i < m->ndocs; i++)
        if (leaf_cell(&n->leaf, &cell[i]))
            out[i >> 3] |= (unsigned char)(1u << (i & 7));
}

/* Bitmaps of the nodes under evaluation: one per and/or level, made when
** a level is first reached. */
typedef struct fscratch {
    unsigned char *lv[RCP_MODEL_FILTER_DEPTH];
    size_t bytes;
} fscratch;

static int eval_bits(const rcp_model *m, const cnode *n, fscratch *s,
                     unsigned depth, unsigned char *out)
{
    size_t i, j;
    if (n->kind == RCP_FILTER_LEAF) {
        eval_leaf(m, n, out);
        return 0;
    }
    if (eval_bits(m, &n->kids[0], s, depth + 1, out))
        return -1;
    if (n->kind == RCP_FILTER_NOT) {
        for (j = 0; j < s->bytes; j++)
            out[j] = (unsigned char)~out[j];
        return 0;
    }
    if (n->nkids > 1 && !s->lv[depth]
        && !(s->lv[depth] = rcp_malloc(s->bytes)))
        return -1;
    for (i = 1; i < n->nkids; i++) {
        unsigned char *t = s->lv[depth];
        if (eval_bits(m, &n->kids[i], s, depth + 1, t))
            return -1;
        for (j = 0; j < s->bytes; j++)
            out[j] = n->kind == RCP_FILTER_AND ? out[j] & t[j]
                                               : out[j] | t[j];
    }
    return 0;
}

/* The documents the search may return: those the view sees that pass
** the filter, one bitmap (*allow, rcp_free it) for every stage -- for
** the dense scan, whose candidates are every document. */
static int filter_bitmap(const rcp_model *m, const cfilter *c,
                         const unsigned char *vis, unsigned char **allow)
{
    fscratch s;
    size_t j, used = (m->ndocs + 7) / 8;    /* vis may hold no more */
    int rc;
    memset(&s, 0, sizeof s);
    s.bytes = m->ndocs / 8 + 1;
    if (!(*allow = rcp_malloc(s.bytes)))
        return -1;
    rc = eval_bits(m, &c->node[0], &s, 0, *allow);
    for (j = 0; j < RCP_MODEL_FILTER_DEPTH; j++)
        rcp_free(s.lv[j]);
    for (j = 0; rc == 0 && j < s.bytes; j++)
        (*allow)[j] = j < used ? (*allow)[j] & vis[j] : 0;
    if (rc) {
        rcp_free(*allow);
        *allow = NULL;
    }
    return rc;
}

/* §7.7.1 the retained version v as r's view. */
static int pin_view(const rcp_model *m, run *r, uint64_t v)
{
    const struct vstat *h;
    size_t i;
    if (!rcp_model_has_version(m, v))
        return RCP_MODEL_GONE;
    if (!(r->visbuf = rcp_malloc(m->ndocs / 8 + 1)))
        return -1;
    memset(r->visbuf, 0, m->ndocs / 8 + 1);
    for (i = 0; i < m->ndocs; i++)
        if (visible_at(&m->docs[i], v))
            r->visbuf[i >> 3] |= (unsigned char)(1u << (i & 7));
    h = &m->hist[v % (m->keep + 1)];
    r->v.vis = r->v.allow = r->visbuf;
    r->v.N = (double)h->n;
    r->v.total = (double)h->total;
    r->v.pinned = 1;
    return 0;
}

static int doc_passes_run(const rcp_model *m, const run *r, uint32_t d)
{
    return doc_passes(m, &r->cf->node[0], d);
}

/* The view of r->q: live, or the retained version it pins; its
** candidates those of the filter, when there is one -- a bitmap when a
** dense leg scans every document, else (sparse) each candidate BM25
** scores is tried in turn.  A pinned version's documents keep the values
** they were added with (values are per docno), so they filter as they
** were then. */
static int open_view(const rcp_model *m, run *r, cfilter *cf)
{
    int rc;
    r->visbuf = r->allowbuf = NULL;
    r->cf = NULL;
    r->lazy = 0;
    live_view(m, &r->v);
    if (r->q.pinned && r->q.version != m->version
        && (rc = pin_view(m, r, r->q.version)) != 0)
        return rc;
    if (!r->q.filter)
        return 0;
    if (cfilter_init(m, r->q.filter, cf))
        return -1;
    r->cf = cf;
    if (r->q.mode == RCP_MODE_SPARSE) {
        r->lazy = 1;
        return 0;
    }
    if (filter_bitmap(m, cf, r->v.vis, &r->allowbuf))
        return -1;
    r->v.allow = r->allowbuf;
    return 0;
}

/* The query's own bounds (rcp.h); NaN is out of every range. */
static int query_ok(const rcp_model_query *q)
{
    return (q->text || !q->len)
        && q->mode >= RCP_MODE_DENSE && q->mode <= RCP_MODE_HYBRID
        && q->fusion >= RCP_FUSE_RRF && q->fusion <= RCP_FUSE_CONVEX
        && q->rerank >= RCP_RERANK_NONE && q->rerank <= RCP_RERANK_COLBERT
        && q->rerank_weight == q->rerank_weight && q->rerank_weight <= 1
        && q->mmr_lambda == q->mmr_lambda && q->mmr_lambda <= 1;
}

int rcp_model_search(const rcp_model *m, const rcp_model_query *q,
                     rcp_model_hit *hits, size_t *nhits)
{
    run r;
    cfilter cf;
    rcp_model_hit *c = NULL;
    size_t n = 0, cand;
    int rc;
    if (!m || !q || !nhits || (!hits && q->k))
        return -1;
    assert(sane(m));
    *nhits = 0;
    if (!query_ok(q)
        || (q->filter && !filter_ok(m, q->filter, RCP_MODEL_FILTER_DEPTH)))
        return RCP_MODEL_INVALID;
    if (m->o.no_dense_index
        && (q->mode != RCP_MODE_SPARSE || q->mmr_lambda >= 0))
        return -1;              /* nothing to search them with */
    cand = q->candidate_k;
    r.q = *q;
    r.stop = 0;
    memset(&cf, 0, sizeof cf);
    if ((rc = open_view(m, &r, &cf)) != 0) {
        rcp_free(r.visbuf);
        rcp_free(r.allowbuf);
        cfilter_free(&cf);
        return rc;
    }
    if (cand == 0)
        cand = q->k > 100 ? q->k : 100;     /* §7.7's example default */
    if (cand < q->k)
        cand = q->k;
    rc = ckpt(&r.q, 0.0, "recall", NULL, 0)
         || candidates(m, &r.q, cand, &c, &n)
         || ckpt(&r.q, 0.5, "recall", c, n)
         || post_recall(m, &r.q, c, &n);
    rcp_free(r.visbuf);
    rcp_free(r.allowbuf);
    cfilter_free(&cf);
    if (rc) {
        rcp_free(c);
        return r.stop ? r.stop : -1;
    }
    memcpy(hits, c, n * sizeof *hits);
    *nhits = n;
    rcp_free(c);
    return 0;
}

/* MARK: - Invariant checker (rcp_model_check) ------------------------------ */

/* Every invariant of the design notes, recomputed from scratch and
** compared with what the model maintains.  For tests: it reads all the
** model holds, tokenizes and embeds every text again, and allocates its
** scratch (which it frees). */
typedef struct chk {
    const rcp_model *m;
    char   *err;
    size_t  errlen;
    uint32_t *cnt;              /* docno -> postings naming it */
    uint64_t *tf;               /* docno -> their tf summed */
    uint32_t *seen;             /* term id / docno -> scratch marks */
} chk;

static int bad(chk *c, const char *fmt, ...)
{
    va_list ap;
    if (c->errlen) {
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Note 4: a docno is live, retained (dead, text kept, in the ring) or
** gone (dead, text dropped); what each holds, and the tallies. */
static int check_doc(chk *c, size_t i, size_t *tally)
{
    const rcp_model *m = c->m;
    const doc *d = &m->docs[i];
    int bit = (m->livebits[i >> 3] >> (i & 7)) & 1;
    if (!d->id || d->h != hash_bytes(2, d->id, d->idlen)
        || m->idpre[i] != id_prefix(d->id, d->idlen))
        return bad(c, "doc %zu: id, its hash or its prefix is wrong", i);
    if (bit != (d->live != 0) || m->dlen[i] != d->len)
        return bad(c, "doc %zu: live bit or packed length disagrees", i);
    if (d->vadd < 1 || d->vadd > m->version
        || (i && d->vadd < m->docs[i - 1].vadd))
        return bad(c, "doc %zu: vadd %llu out of order", i,
                   (unsigned long long)d->vadd);
    if (d->live ? d->vdel != UINT64_MAX || !d->text
                  || (!d->terms && d->nterms)
                : d->vdel <= d->vadd || d->vdel > m->version || d->terms
                  || (!d->text && d->meta))
        return bad(c, "doc %zu: its state (live %d) and its fields disagree",
                   i, d->live);
    if (d->ck && (d->ck->h != hash_bytes(3, d->ck->of, d->ck->oflen)
                  || d->ck->end < d->ck->start
                  || (d->text && d->ck->end - d->ck->start != d->textlen)))
        return bad(c, "doc %zu: its chunk link is inconsistent", i);
    if (d->live) {
        tally[0]++;
        tally[1] += d->len;
        tally[2] += d->nterms;
    } else if (is_gone(d)) {
        tally[3]++;
        tally[4] += d->nterms;
    }
    return 0;
}

static int check_docs(chk *c)
{
    const rcp_model *m = c->m;
    size_t i, tally[5] = { 0, 0, 0, 0, 0 };
    if (m->ndocs > m->doccap
        || (!m->o.no_dense_index && m->ndocs * m->o.dim > m->veccap)
        || m->ndocs > m->dlencap || m->ndocs > m->idprecap
        || (m->ndocs + 7) / 8 > m->livecap)
        return bad(c, "%zu docnos but room for fewer", m->ndocs);
    for (i = 0; i < m->ndocs; i++)
        if (check_doc(c, i, tally))
            return -1;
    for (i = m->ndocs; i < m->livecap * 8; i++)
        if ((m->livebits[i >> 3] >> (i & 7)) & 1)
            return bad(c, "live bit %zu set past the last docno", i);
    if (tally[0] != m->live || tally[1] != m->total_len
        || tally[2] != m->live_postings)
        return bad(c, "live documents %zu, tokens %zu, postings %zu; the "
                   "model counts %zu, %llu, %zu", tally[0], tally[1],
                   tally[2], m->live, (unsigned long long)m->total_len,
                   m->live_postings);
    if (tally[3] != m->gone || tally[4] != m->gone_postings)
        return bad(c, "gone documents %zu with %zu postings; the model "
                   "counts %zu, %zu", tally[3], tally[4], m->gone,
                   m->gone_postings);
    return 0;
}

/* One posting list: ascending docnos that exist, tf >= 1, df counting the
** live ones; each posting tallied for its document. */
static int check_term(chk *c, size_t i)
{
    const rcp_model *m = c->m;
    const term *t = &m->terms[i];
    size_t j, sl, df = 0;
    if (!t->s || t->h != hash_bytes(1, t->s, t->len) || t->n > t->cap)
        return bad(c, "term %zu: its text, hash or size is wrong", i);
    sl = sidx_find(&m->tix, m, term_eq, t->s, t->len, t->h);
    if (m->tix.slot[sl] != i + 1)
        return bad(c, "term %zu (%.*s) is not where the term table points",
                   i, (int)t->len, t->s);
    for (j = 0; j < t->n; j++) {
        const posting *p = &t->p[j];
        if (p->doc >= m->ndocs || p->tf < 1
            || (j && p->doc <= t->p[j - 1].doc))
            return bad(c, "term %zu (%.*s): posting %zu (doc %u) out of "
                       "order or range", i, (int)t->len, t->s, j, p->doc);
        df += m->docs[p->doc].live != 0;
        c->cnt[p->doc]++;
        if (!is_stop_term(t))           /* note 16: no length */
            c->tf[p->doc] += p->tf;
    }
    if (df != t->df)
        return bad(c, "term %zu (%.*s): df %u, but %zu live documents",
                   i, (int)t->len, t->s, t->df, df);
    return 0;
}

/* 1 when term t has a posting for docno; its tf in *tf. */
static int posting_of(const term *t, uint32_t docno, uint32_t *tf)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->p[mid].doc == docno) {
            *tf = t->p[mid].tf;
            return 1;
        }
        if (t->p[mid].doc < docno)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* A live document's term list names each of its postings once. */
static int check_term_list(chk *c, size_t i)
{
    const rcp_model *m = c->m;
    const doc *d = &m->docs[i];
    uint32_t j, tf;
    for (j = 0; j < d->nterms; j++) {
        uint32_t t = d->terms[j];
        if (t >= m->nterms || !posting_of(&m->terms[t], (uint32_t)i, &tf)
            || c->seen[t] == i + 1)
            return bad(c, "doc %zu: term list entry %u (term %u) has no "
                       "posting or repeats", i, j, t);
        c->seen[t] = (uint32_t)i + 1;
    }
    return 0;
}

static int check_postings(chk *c)
{
    const rcp_model *m = c->m;
    size_t i;
    if (m->nterms > m->termcap || m->tix.n != m->nterms)
        return bad(c, "%zu terms, the term table holds %zu", m->nterms,
                   m->tix.n);
    for (i = 0; i < m->nterms; i++)
        if (check_term(c, i))
            return -1;
    for (i = 0; i < m->ndocs; i++) {
        const doc *d = &m->docs[i];
        if (c->cnt[i] != d->nterms || c->tf[i] != d->len)
            return bad(c, "doc %zu: %u postings summing tf %llu, but nterms "
                       "%u and length %u", i, c->cnt[i],
                       (unsigned long long)c->tf[i], d->nterms, d->len);
    }
    memset(c->seen, 0, (m->nterms + m->ndocs + 1) * sizeof *c->seen);
    for (i = 0; i < m->ndocs; i++)
        if (m->docs[i].live && check_term_list(c, i))
            return -1;
    return 0;
}

/* Note 12: what the fast path stored is what the plain path gives -- the
** postings of rcp_tokenize's terms with their counts, the length, and
** rcp_model_embed's vector, bit for bit -- for every document with text. */
static int check_text(chk *c, size_t i, rcp_tokens *tk, float *vec)
{
    const rcp_model *m = c->m;
    const doc *d = &m->docs[i];
    size_t j, sl, distinct = 0, len = 0;
    uint32_t tf;
    char key[STOP_KEY + 1];
    if (rcp_tokenize(tk, d->text, d->textlen, index_flags(m))
        || rcp_model_embed(m, d->text, d->textlen, RCP_KIND_DOCUMENT, vec))
        return bad(c, "out of memory");
    for (j = 0; j < tk->n; j++)
        len += !stop_token(m, tk, j);
    if (len != d->len)
        return bad(c, "doc %zu: %zu tokens, but length %u", i, len, d->len);
    for (j = 0; j < tk->n; j++) {
        size_t n;
        const char *s = token_key(m, tk, j, key, &n);
        sl = sidx_find(&m->tix, m, term_eq, s, n, hash_bytes(1, s, n));
        if (!m->tix.slot[sl])
            return bad(c, "doc %zu: term '%.*s' is not indexed", i, (int)n,
                       s);
        c->seen[m->tix.slot[sl] - 1]++;
    }
    for (j = 0; j < tk->n; j++) {
        size_t n;
        const char *s = token_key(m, tk, j, key, &n);
        uint32_t t;
        sl = sidx_find(&m->tix, m, term_eq, s, n, hash_bytes(1, s, n));
        t = m->tix.slot[sl] - 1;
        if (!c->seen[t])
            continue;
        distinct++;
        if (!posting_of(&m->terms[t], (uint32_t)i, &tf) || tf != c->seen[t])
            return bad(c, "doc %zu: term '%.*s' occurs %u times, its "
                       "posting disagrees", i, (int)n, s, c->seen[t]);
        c->seen[t] = 0;
    }
    if (distinct != d->nterms)
        return bad(c, "doc %zu: %zu distinct terms, but %u postings", i,
                   distinct, d->nterms);
    if (doc_vector(m, i)
        && memcmp(vec, doc_vector(m, i), m->o.dim * sizeof *vec))
        return bad(c, "doc %zu: its dense row is not the embedding of its "
                   "text", i);
    return 0;
}

static int check_texts(chk *c)
{
    const rcp_model *m = c->m;
    float *vec = rcp_malloc(m->o.dim * sizeof *vec);
    rcp_tokens tk;
    size_t i;
    int rc = 0;
    if (!vec)
        return bad(c, "out of memory");
    rcp_tokens_init(&tk);
    memset(c->seen, 0, (m->nterms + m->ndocs + 1) * sizeof *c->seen);
    for (i = 0; rc == 0 && i < m->ndocs; i++)
        if (m->docs[i].text)
            rc = check_text(c, i, &tk, vec);
    rcp_tokens_free(&tk);
    rcp_free(vec);
    return rc;
}

/* The id table: each id names its newest docno, which is the live one
** when one is; one entry per distinct id. */
static int check_ids(chk *c)
{
    const rcp_model *m = c->m;
    size_t i, named = 0, slots = 0;
    for (i = 0; i < m->ids.cap; i++)
        if (m->ids.slot[i] && m->ids.slot[i] > m->ndocs)
            return bad(c, "the id table names docno %u of %zu",
                       m->ids.slot[i] - 1, m->ndocs);
        else
            slots += m->ids.slot[i] != 0;
    for (i = 0; i < m->ndocs; i++) {
        const doc *d = &m->docs[i];
        long f = find_doc(m, d->id, d->idlen);
        if (f < (long)i || (d->live && f != (long)i))
            return bad(c, "doc %zu (%.*s): the id table gives %ld", i,
                       (int)d->idlen, d->id, f);
        named += f == (long)i;
    }
    if (named != m->ids.n || slots != m->ids.n)
        return bad(c, "%zu distinct ids, %zu slots, the table counts %zu",
                   named, slots, m->ids.n);
    return 0;
}

/* Note 13: each chunked document's chain, from the parents table, holds
** its chunk docnos newest first, each chunk in exactly one chain. */
static int check_chains(chk *c)
{
    const rcp_model *m = c->m;
    size_t i, chunks = 0, walked = 0, heads = 0;
    for (i = 0; i < m->ndocs; i++)
        chunks += m->docs[i].ck != NULL;
    for (i = 0; i < m->parents.cap; i++) {
        uint32_t no = m->parents.slot[i], prev = NO_DOC, steps = 0;
        const part *h;
        if (!no)
            continue;
        heads++;
        if (--no >= m->ndocs || !(h = m->docs[no].ck))
            return bad(c, "the parents table names docno %u, not a chunk",
                       no);
        for (; no != NO_DOC; prev = no, no = m->docs[no].ck->sib) {
            const part *p;
            if (no >= m->ndocs || no >= prev || ++steps > m->ndocs
                || !(p = m->docs[no].ck) || p->oflen != h->oflen
                || memcmp(p->of, h->of, h->oflen))
                return bad(c, "the chunk chain of '%.*s' is broken at "
                           "docno %u", (int)h->oflen, h->of, no);
            walked++;
        }
    }
    if (walked != chunks || heads != m->parents.n)
        return bad(c, "%zu chunks, %zu in chains, %zu chains (table: %zu)",
                   chunks, walked, heads, m->parents.n);
    return 0;
}

/* Note 11: the retained, oldest death first, each once; what they take;
** and expire's promise (within the budget, seen by a kept version). */
static int check_ring(chk *c)
{
    const rcp_model *m = c->m;
    size_t i, held = 0, retained = 0;
    uint64_t last = 0;
    if (m->gcount > m->keep || m->ghead > m->keep || m->floor > m->version)
        return bad(c, "the retained ring (head %zu, %zu of %zu) or the "
                   "floor is out of range", m->ghead, m->gcount, m->keep);
    memset(c->seen, 0, (m->nterms + m->ndocs + 1) * sizeof *c->seen);
    for (i = 0; i < m->gcount; i++) {
        uint32_t no = m->grave[(m->ghead + i) % (m->keep + 1)];
        const doc *d;
        if (no >= m->ndocs || (d = &m->docs[no])->live || !d->text
            || c->seen[no] || d->vdel < last)
            return bad(c, "retained entry %zu (docno %u) is not a dead "
                       "document with text, once, in order of death", i, no);
        c->seen[no] = 1;
        last = d->vdel;
        held += kept_bytes(m, d);
    }
    for (i = 0; i < m->ndocs; i++)
        retained += !m->docs[i].live && m->docs[i].text;
    if (retained != m->gcount || held != m->held_bytes)
        return bad(c, "%zu retained taking %zu bytes; the ring holds %zu, "
                   "counted %zu bytes", retained, held, m->gcount,
                   m->held_bytes);
    if (m->gcount && (m->held_bytes > m->o.snapshot_bytes
                      || m->docs[m->grave[m->ghead]].vdel + m->keep
                         <= m->version))
        return bad(c, "a retained document is over the budget or seen by "
                   "no kept version");
    return 0;
}

/* Note 10: the statistics remembered for each searchable version are
** those of the documents visible at it, none of which was dropped.
** Difference arrays over the versions, so O(docnos + versions). */
static int check_versions(chk *c)
{
    const rcp_model *m = c->m;
    uint64_t lo = m->version > m->keep ? m->version - m->keep : 0, v;
    size_t span, i;
    int64_t *dn, *dt, n = 0, t = 0;
    if (lo < m->floor)
        lo = m->floor;
    span = (size_t)(m->version - lo) + 2;
    dn = rcp_malloc(span * sizeof *dn);
    dt = rcp_malloc(span * sizeof *dt);
    if (!dn || !dt) {
        rcp_free(dn);
        rcp_free(dt);
        return bad(c, "out of memory");
    }
    memset(dn, 0, span * sizeof *dn);
    memset(dt, 0, span * sizeof *dt);
    for (i = 0; i < m->ndocs; i++) {
        const doc *d = &m->docs[i];
        uint64_t a = d->vadd > lo ? d->vadd : lo;
        uint64_t b = d->vdel < m->version + 1 ? d->vdel : m->version + 1;
        if (a >= b)
            continue;
        if (!d->text) {
            rcp_free(dn);
            rcp_free(dt);
            return bad(c, "doc %zu was dropped but version %llu is kept", i,
                       (unsigned long long)a);
        }
        dn[a - lo]++, dt[a - lo] += d->len;
        dn[b - lo]--, dt[b - lo] -= d->len;
    }
    for (v = lo; v <= m->version; v++) {
        const struct vstat *h = &m->hist[v % (m->keep + 1)];
        n += dn[v - lo];
        t += dt[v - lo];
        if (rcp_model_has_version(m, v)
            && ((int64_t)h->n != n || (int64_t)h->total != t))
            break;
    }
    rcp_free(dn);
    rcp_free(dt);
    if (v <= m->version)
        return bad(c, "version %llu: %lld documents of %lld tokens were "
                   "visible, its snapshot says %llu and %llu",
                   (unsigned long long)v, (long long)n, (long long)t,
                   (unsigned long long)m->hist[v % (m->keep + 1)].n,
                   (unsigned long long)m->hist[v % (m->keep + 1)].total);
    return 0;
}

/* Note 12: the lexicon names terms that exist, and no feature is left
** marked between adds. */
static int check_lexicon(chk *c)
{
    const lexicon *x = &c->m->lex;
    size_t i, off;
    for (i = off = 0; i < x->n; i++) {
        const lexent *e = lex_at(x, (uint32_t)(off / 8));
        if (off + lex_size(e->nf) > x->alen
            || (e->term & ~LEX_STOP) >= c->m->nterms
            || !(e->term & LEX_STOP)
               != !is_stop_term(&c->m->terms[e->term & ~LEX_STOP])
            || e->stamp > c->m->stamp)
            return bad(c, "lexicon entry %zu is out of range", i);
        off += lex_size(e->nf);
    }
    for (i = 0; i < x->nfid; i++)
        if (x->fmark[i])
            return bad(c, "lexicon feature %zu is still marked", i);
    return 0;
}

/* How far check_fields has read a field's pools (it walks docnos in
** order, as the pools hold them), and what the document took. */
typedef struct fpos {
    size_t el, by, took;
} fpos;

/* Is c what the scalar (or array element) v reads as for type t, a
** longer string's bytes in the pool after what came before? */
static int scalar_is(const fcol *col, rcp_field_type t, const rcp_json *v,
                     const fval *c, fpos *p)
{
    rcp_model_value x;
    if (rcp_model_value_of(t, v, &x))
        return c->kind == FV_BAD;
    if (c->kind != FV_VAL)
        return 0;
    if (t == RCP_FIELD_INT || t == RCP_FIELD_FLOAT)
        return c->u.x == x.num;
    if (!is_string_type(t))
        return c->u.i == x.ms;
    if (c->n != x.len)
        return 0;
    if (x.len > FV_INLINE) {
        if (c->u.off < p->by || c->u.off + x.len > col->nbytes)
            return 0;
        p->by = c->u.off + x.len;
        p->took += x.len;
    }
    return !x.len || !memcmp(fv_str(col, c), x.s, x.len);
}

/* Is cell c what v (NULL: absent) reads as? */
static int cell_is(const fcol *col, rcp_field_type t, const rcp_json *v,
                   const fval *c, fpos *p)
{
    size_t i;
    if (!v)
        return c->kind == FV_ABSENT;
    if (v->type != RCP_JSON_ARRAY)
        return scalar_is(col, t, v, c, p);
    if (c->kind != FV_ARRAY || c->n != v->n || c->u.off < p->el
        || c->u.off + v->n > col->nel)
        return 0;
    p->el = c->u.off + v->n;
    p->took += v->n * sizeof(fval);
    for (i = 0; i < v->n; i++)
        if (!scalar_is(col, t, &v->kids[i], &col->el[c->u.off + i], p))
            return 0;
    return 1;
}

/* Note 15: each document's cells are what its meta reads as (parsed
** again here), a dropped one's all absent; what they take is counted. */
static int check_doc_fields(chk *c, size_t i, rcp_arena *a,
                            const rcp_json **seen, fpos *pos)
{
    const rcp_model *m = c->m;
    const doc *d = &m->docs[i];
    const rcp_json *v = NULL;
    rcp_json_err e;
    size_t f, k, took = 0;
    long x;
    memset(seen, 0, m->o.nfields * sizeof *seen);
    if (d->meta && !(v = rcp_json_parse(a, d->meta, d->metalen, 0, &e))
        && e.code == RCP_JSON_E_NOMEM)
        return bad(c, "out of memory");
    for (k = 0; v && v->type == RCP_JSON_OBJECT && k < v->n; k++)
        if ((x = field_of(m, v->kids[k].key, v->kids[k].keylen)) >= 0)
            seen[x] = v->kids[k].type == RCP_JSON_NULL ? NULL : &v->kids[k];
    for (f = 0; f < m->o.nfields; f++) {
        pos[f].took = 0;
        if (!cell_is(&m->col[f], m->fields[f].type, seen[f],
                     &m->col[f].cell[i], &pos[f]))
            return bad(c, "doc %zu: its value of field '%s' is not what "
                       "its meta says, or out of its pool's order", i,
                       m->fields[f].name);
        took += pos[f].took;
    }
    rcp_arena_reset(a);
    if (d->text && took != d->fbytes)       /* a dropped one: as it was */
        return bad(c, "doc %zu: its values take %zu bytes, it counts %zu",
                   i, took, d->fbytes);
    return 0;
}

static int check_fields(chk *c)
{
    const rcp_model *m = c->m;
    const rcp_json **seen;
    fpos *pos;
    rcp_arena a;
    size_t i, took = 0;
    int rc = 0;
    if (!m->o.nfields)
        return 0;
    if (m->colcap < m->ndocs)
        return bad(c, "the field columns hold fewer than %zu rows",
                   m->ndocs);
    seen = rcp_malloc(m->o.nfields * sizeof *seen);
    pos = rcp_malloc(m->o.nfields * sizeof *pos);
    if (!seen || !pos) {
        rcp_free(seen);
        rcp_free(pos);
        return bad(c, "out of memory");
    }
    memset(pos, 0, m->o.nfields * sizeof *pos);
    rcp_arena_init(&a, 0);
    for (i = 0; rc == 0 && i < m->ndocs; i++) {
        rc = check_doc_fields(c, i, &a, seen, pos);
        took += m->docs[i].fbytes;
    }
    rcp_arena_free(&a);
    rcp_free(seen);
    rcp_free(pos);
    if (rc == 0 && took != pool_bytes(m))
        return bad(c, "the field pools take %zu bytes, their documents "
                   "%zu", pool_bytes(m), took);
    return rc;
}

int rcp_model_check(const rcp_model *m, unsigned flags, char *err,
                    size_t errlen)
{
    chk c;
    size_t n;
    int rc;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.err = err;
    c.errlen = errlen;
    if (errlen)
        err[0] = 0;
    if (!m)
        return bad(&c, "no model");
    n = m->ndocs + m->nterms + 1;
    c.cnt = rcp_malloc(n * sizeof *c.cnt);
    c.tf = rcp_malloc(n * sizeof *c.tf);
    c.seen = rcp_malloc(n * sizeof *c.seen);
    if (!c.cnt || !c.tf || !c.seen)
        rc = bad(&c, "out of memory");
    else {
        memset(c.cnt, 0, n * sizeof *c.cnt);
        memset(c.tf, 0, n * sizeof *c.tf);
        rc = check_docs(&c) || check_postings(&c) || check_ids(&c)
             || check_chains(&c) || check_ring(&c) || check_versions(&c)
             || check_lexicon(&c) || check_fields(&c)
             || ((flags & RCP_MODEL_CHECK_TEXTS) && check_texts(&c)) ? -1 : 0;
    }
    rcp_free(c.cnt);
    rcp_free(c.tf);
    rcp_free(c.seen);
    return rc;
}

/* Test hook (rcp.h, INTERNAL): break one invariant on purpose. */
static int break_order(rcp_model *m)
{
    size_t i;
    for (i = 0; i < m->nterms; i++)
        if (m->terms[i].n >= 2) {
            posting p = m->terms[i].p[0];
            m->terms[i].p[0] = m->terms[i].p[1];
            m->terms[i].p[1] = p;
            return 0;
        }
    return -1;
}

static int break_chain(rcp_model *m)
{
    size_t i;
    for (i = 0; i < m->ndocs; i++)
        if (m->docs[i].ck && m->docs[i].ck->sib != NO_DOC) {
            m->docs[i].ck->sib = NO_DOC;
            return 0;
        }
    return -1;
}

static int break_id(rcp_model *m)
{
    size_t sl;
    if (!m->ndocs)
        return -1;
    sl = sidx_find(&m->ids, m, doc_eq, m->docs[0].id, m->docs[0].idlen,
                   m->docs[0].h);
    m->ids.slot[sl] = 0;
    return 0;
}

static int break_field(rcp_model *m)
{
    size_t i;
    for (i = 0; m->o.nfields && i < m->ndocs; i++)
        if (m->col[0].cell[i].kind == FV_VAL) {
            m->col[0].cell[i].kind = FV_BAD;
            return 0;
        }
    return -1;
}

int model_break(rcp_model *m, int what)
{
    switch (what) {
    case MODEL_BREAK_POSTING_ORDER:
        return break_order(m);
    case MODEL_BREAK_DF:
        return m->nterms ? (m->terms[0].df++, 0) : -1;
    case MODEL_BREAK_TF:
        return m->nterms && m->terms[0].n ? (m->terms[0].p[0].tf++, 0) : -1;
    case MODEL_BREAK_LIVE_COUNT:
        return m->live++, 0;
    case MODEL_BREAK_TOTAL_LEN:
        return m->total_len++, 0;
    case MODEL_BREAK_LIVE_BIT:
        return m->ndocs ? (m->livebits[0] ^= 1, 0) : -1;
    case MODEL_BREAK_ID_TABLE:
        return break_id(m);
    case MODEL_BREAK_CHUNK_CHAIN:
        return break_chain(m);
    case MODEL_BREAK_RETAINED_BYTES:
        return m->held_bytes++, 0;
    case MODEL_BREAK_VERSION_STATS:
        return m->hist[m->version % (m->keep + 1)].n++, 0;
    case MODEL_BREAK_ROW:
        return m->ndocs && doc_vector(m, 0) ? (m->vecs[0] += 0.5f, 0) : -1;
    case MODEL_BREAK_LEXICON:
        return m->lex.nfid ? (m->lex.fmark[0] = 1, 0) : -1;
    case MODEL_BREAK_FIELD_VALUE:
        return break_field(m);
    }
    return -1;
}

/* MARK: - §7.8 The vocabulary, for query/transform ------------------------ */

/* What methods.c's query/transform asks of the index (README, "query/
** transform"): a word's document frequency, its nearest spelling in the
** vocabulary, and the RM3 terms of its pseudo-relevant documents.  Each
** answers in surface words (a token's folded word), never in stems, so
** what it returns reads as a query and analyses back to the same term. */

static int live_doc(const rcp_model *m, uint32_t d)
{
    return d < m->ndocs && ((m->livebits[d >> 3] >> (d & 7)) & 1);
}

/* The index term of the first token of word, or -1 (none: a stopword,
** punctuation, a word the index never saw); -2 out of memory. */
static long word_tid(const rcp_model *m, const char *word, size_t len,
                     rcp_tokens *tk)
{
    size_t sl;
    const char *s;
    if (model_tokenize(m, tk, word, len))
        return -2;
    if (tk->n == 0 || !m->tix.cap)
        return -1;
    s = tk->buf + tk->v[0].term;
    sl = sidx_find(&m->tix, m, term_eq, s, tk->v[0].tlen,
                   hash_bytes(1, s, tk->v[0].tlen));
    return m->tix.slot[sl] ? (long)m->tix.slot[sl] - 1 : -1;
}

long rcp_model_df(const rcp_model *m, const char *word, size_t len)
{
    rcp_tokens tk;
    long tid;
    rcp_tokens_init(&tk);
    tid = word_tid(m, word, len, &tk);
    if (tid == -1 && tk.n == 0)
        tid = -3;               /* no term at all: a stopword */
    rcp_tokens_free(&tk);
    return tid >= 0 ? (long)m->terms[tid].df : tid == -1 ? 0
         : tid == -3 ? -1 : -2;
}

/* Byte-wise order of two terms, a shorter prefix first. */
static int term_cmp(const term *a, const term *b)
{
    int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The surface word of term tid in doc d: the folded word of its first
** token there.  Its length in out (cap > 0), 0 when none, -1 oom. */
static long surface_in(const rcp_model *m, uint32_t d, uint32_t tid,
                       char *out, size_t cap)
{
    const term *t = &m->terms[tid];
    rcp_tokens tk;
    size_t i;
    long n = 0;
    rcp_tokens_init(&tk);
    if (model_tokenize(m, &tk, m->docs[d].text, m->docs[d].textlen)) {
        rcp_tokens_free(&tk);
        return -1;
    }
    for (i = 0; i < tk.n && !n; i++)
        if (tk.v[i].tlen == t->len && tk.v[i].wlen < cap
            && memcmp(tk.buf + tk.v[i].term, t->s, t->len) == 0) {
            memcpy(out, tk.buf + tk.v[i].word, tk.v[i].wlen);
            out[tk.v[i].wlen] = '\0';
            n = (long)tk.v[i].wlen;
        }
    rcp_tokens_free(&tk);
    return n;
}

/* The surface word of tid in the first live document holding it. */
static long surface_of(const rcp_model *m, uint32_t tid, char *out,
                       size_t cap)
{
    const term *t = &m->terms[tid];
    size_t i;
    for (i = 0; i < t->n; i++)
        if (live_doc(m, t->p[i].doc))
            return surface_in(m, t->p[i].doc, tid, out, cap);
    return 0;
}

/* Spelling correction against the vocabulary: the live term whose
** boundary-marked trigrams are nearest the word's term by Dice (at least
** 3/5, the near match of rcp_model_confidence), ties to the higher df,
** then the byte-wise smaller term -- deterministic and corpus-bound (a
** misspelling the corpus has no near neighbour for stays). */
long rcp_model_correct(const rcp_model *m, const char *word, size_t len,
                       char *out, size_t cap)
{
    uint32_t qa[TEXT_MAX_WORD_BYTES + 2], tb[TEXT_MAX_WORD_BYTES + 2];
    rcp_tokens tk;
    size_t na, i, best = (size_t)-1;
    double bd = 0;
    long tid;
    rcp_tokens_init(&tk);
    tid = word_tid(m, word, len, &tk);
    if (tid != -1 || tk.n == 0 || tk.v[0].kind != RCP_TOKEN_WORD
        || tk.v[0].wlen < 4) {
        rcp_tokens_free(&tk);
        return tid == -2 ? -1 : 0;  /* known, no word, or too short */
    }
    na = trigrams(tk.buf + tk.v[0].term, tk.v[0].tlen, qa,
                  TEXT_MAX_WORD_BYTES + 2);
    rcp_tokens_free(&tk);
    for (i = 0; i < m->nterms; i++) {
        const term *t = &m->terms[i];
        double d;
        if (!t->df || is_stop_term(t))  /* a stopword is no correction */
            continue;
        d = near_dice(qa, na, tb, trigrams(t->s, t->len, tb,
                                           TEXT_MAX_WORD_BYTES + 2));
        if (d > bd || (d == bd && d > 0 && best != (size_t)-1
                       && (t->df > m->terms[best].df
                           || (t->df == m->terms[best].df
                               && term_cmp(t, &m->terms[best]) < 0)))) {
            bd = d;
            best = i;
        }
    }
    return best == (size_t)-1 ? 0 : surface_of(m, (uint32_t)best, out, cap);
}

/* RM3's relevance model over the query's top opts.prf_docs BM25
** documents (the lexical feedback the hybrid leg uses, here exposed as
** words): up to cap terms, best first, the query's own terms and numbers
** left out, each with its P(t|R) and the surface word it had in the
** first feedback document holding it. */
int rcp_model_expand(const rcp_model *m, const char *query, size_t qlen,
                     rcp_model_term *out, size_t cap, size_t *n)
{
    rcp_model_query q;
    rcp_model_hit *top;
    rcp_tokens tk;
    wterm *v = NULL, *qt = NULL;
    size_t nt = 0, vn, vcap = 0, nq = 0, i, j;
    long got;
    int rc = -1;
    *n = 0;
    if (!m->o.prf_docs || !cap)
        return 0;
    rcp_model_query_init(&q);
    q.text = query;
    q.len = qlen;
    q.k = q.candidate_k = m->o.prf_docs;
    q.mode = RCP_MODE_SPARSE;
    q.no_confidence = 1;
    q.no_feedback = 1;
    rcp_tokens_init(&tk);
    if (!(top = rcp_malloc((m->o.prf_docs + 1) * sizeof *top))
        || rcp_model_search(m, &q, top, &nt)
        || model_tokenize(m, &tk, query, qlen)
        || query_wterms(m, &tk, &qt, &nq)
        || (got = rm3_relevance(m, top, nt, &v, &vcap)) < 0)
        goto done;
    vn = (size_t)got;
    for (i = 0; i < vn && *n < cap; i++) {
        long sl = 0;
        for (j = 0; j < nq && qt[j].tid != v[i].tid; j++)
            ;
        if (j < nq)
            continue;           /* the query's own */
        for (j = 0; j < nt && sl == 0; j++)
            sl = surface_in(m, top[j].doc, v[i].tid, out[*n].word,
                            sizeof out[*n].word);
        if (sl < 0)
            goto done;
        if (sl == 0)
            continue;
        out[*n].weight = v[i].w;
        out[*n].df = m->terms[v[i].tid].df;
        (*n)++;
    }
    rc = 0;
done:
    rcp_tokens_free(&tk);
    rcp_free(top);
    rcp_free(v);
    rcp_free(qt);
    return rc;
}
