/*
** test_store.c -- durable storage (store.c): the log round-trips, torn
** tails are cut, damage in the middle is reported, compaction keeps
** everything, a kill -9 at a random moment loses nothing acknowledged, the
** directory lock, and the JSON Lines bulk load.
**
** Every test works in its own mkdtemp directory under /tmp and removes it.
** The file layout the tests forge frames with is the one documented at
** the top of store.c.
*/
#ifdef __linux__
#define _GNU_SOURCE             /* unshare, mount: the real full disk test */
#include <sched.h>
#include <sys/mount.h>
#endif
#include "rcp.h"
#define RCP_TEST_CRC32C         /* testutil.h: crc32c() */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* MARK: - helpers -------------------------------------------------------- */

static char TMP[96];     /* the test's mkdtemp directory */
static char DB[128];     /* TMP/db: the store directory */
static char LOG[160];    /* DB/rcp.log */

static void rm_rf(const char *path)
{
    struct stat sb;
    DIR *d;
    struct dirent *e;
    char sub[512];
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode) && (d = opendir(path)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Each test case gets a base directory, made and removed by Check's
** parent process (unchecked fixtures), so even a test that fails half-way
** leaves nothing behind; each test works in a fresh directory inside. */
static char BASE[64];

static void base_setup(void)
{
    strcpy(BASE, "/tmp/rcp-store-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(BASE));
}

static void base_teardown(void)
{
    rm_rf(BASE);
}

static void setup(void)
{
    snprintf(TMP, sizeof TMP, "%s/t-XXXXXX", BASE);
    ck_assert_ptr_nonnull(mkdtemp(TMP));
    snprintf(DB, sizeof DB, "%s/db", TMP);
    snprintf(LOG, sizeof LOG, "%s/rcp.log", DB);
}

static void teardown(void)
{
    rm_rf(TMP);
}

/* A small model: the tests are about storage, not embeddings. */
static rcp_model *new_model(void)
{
    rcp_model_opts o;
    char err[256];
    rcp_model *m;
    rcp_model_opts_init(&o);
    o.dim = 32;
    o.multi_dim = 16;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

/* The engine's invariants hold (rcp_model_check, texts included): after
** a replay, a rollback, a recovery -- wherever a test compares models. */
static void check_model(const rcp_model *m)
{
    char err[256];
    ck_assert_msg(rcp_model_check(m, RCP_MODEL_CHECK_TEXTS, err, sizeof err)
                  == 0, "%s", err);
}

static rcp_store *open_ok(const char *dir, rcp_model **m)
{
    char err[512];
    rcp_store *st;
    *m = new_model();
    st = rcp_store_open(dir, *m, err, sizeof err);
    ck_assert_msg(st != NULL, "open %s: %s", dir, err);
    check_model(*m);
    return st;
}

/* Open must fail; the message is returned (static). */
static const char *open_fails(const char *dir)
{
    static char err[512];
    rcp_model *m = new_model();
    rcp_store *st = rcp_store_open(dir, m, err, sizeof err);
    ck_assert_msg(st == NULL, "open %s succeeded", dir);
    rcp_model_free(m);
    return err;
}

static void add(rcp_store *st, const char *id, const char *text,
                const char *meta)
{
    ck_assert_msg(rcp_store_add(st, id, strlen(id), text, strlen(text), meta,
                                meta ? strlen(meta) : 0) == 0,
                  "%s", rcp_store_error(st));
}

static int del(rcp_store *st, const char *id)
{
    int removed = -1;
    ck_assert_msg(rcp_store_delete(st, id, strlen(id), &removed) == 0,
                  "%s", rcp_store_error(st));
    return removed;
}

static void commit(rcp_store *st)
{
    ck_assert_msg(rcp_store_commit(st) == 0, "%s", rcp_store_error(st));
}

static uint64_t log_bytes(const rcp_store *st)
{
    rcp_store_info in;
    rcp_store_stat(st, &in);
    return in.log_bytes;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    long sz = file_size(path);
    char *p;
    ck_assert_ptr_nonnull(f);
    ck_assert(sz >= 0);
    p = malloc((size_t)sz + 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(fread(p, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return p;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static void append_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "ab");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* 1 when a and b hold the same live documents (id, text, meta, chunk
** link) in the same relative order. */
static int same_docs(const rcp_model *a, const rcp_model *b)
{
    size_t left = rcp_model_count(a), left2 = rcp_model_count(b);
    uint32_t i = 0, j = 0;
    rcp_model_docview x, y;
    check_model(a);
    check_model(b);
    if (left != left2)
        return 0;
    while (left) {
        while (rcp_model_doc(a, i, &x))
            i++;
        while (rcp_model_doc(b, j, &y))
            j++;
        i++, j++, left--;
        if (x.idlen != y.idlen || memcmp(x.id, y.id, x.idlen)
            || x.textlen != y.textlen || memcmp(x.text, y.text, x.textlen)
            || (x.meta == NULL) != (y.meta == NULL) || x.metalen != y.metalen
            || (x.metalen && memcmp(x.meta, y.meta, x.metalen))
            || (x.chunk.of == NULL) != (y.chunk.of == NULL)
            || (x.chunk.of && (x.chunk.oflen != y.chunk.oflen
                               || memcmp(x.chunk.of, y.chunk.of,
                                         x.chunk.oflen)
                               || x.chunk.index != y.chunk.index
                               || x.chunk.start != y.chunk.start
                               || x.chunk.end != y.chunk.end)))
            return 0;
    }
    return 1;
}

static void le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* A frame around payload, sealed with salt (from a log header). */
static size_t forge_frame(unsigned char *out, const unsigned char *salt,
                          const unsigned char *payload, size_t n)
{
    uint32_t crc;
    memcpy(out, "\xFF" "RCF", 4);
    le32(out + 4, (uint32_t)n);
    memcpy(out + 12, payload, n);
    crc = crc32c(0, salt, 8);
    crc = crc32c(crc, out + 4, 4);
    le32(out + 8, crc32c(crc, out + 12, n));
    return 12 + n;
}

/* An ADD record for id/text, no meta. */
static size_t forge_add(unsigned char *out, uint64_t version, const char *id,
                        const char *text)
{
    size_t n = 0, k;
    out[n++] = 1;
    for (k = 0; k < 8; k++)
        out[n++] = (unsigned char)(version >> (8 * k));
    le32(out + n, (uint32_t)strlen(id));
    memcpy(out + n + 4, id, strlen(id));
    n += 4 + strlen(id);
    le32(out + n, (uint32_t)strlen(text));
    memcpy(out + n + 4, text, strlen(text));
    n += 4 + strlen(text);
    out[n++] = 0;
    le32(out + n, 0);
    return n + 4;
}

/* The deterministic workload of the round-trip and crash tests: write i
** upserts one of 40 ids with a new text of 1-5 KB (so the log outgrows
** the live data and compaction runs), with meta on every third, and every
** seventh also deletes an id. */
static void op_text(char *buf, size_t cap, unsigned long i)
{
    static const char *const w[] = { "storage", "durable", "crash", "log",
        "frame", "checksum", "replay", "version", "compaction", "lock" };
    size_t n = 0, want = 1000 + (i * 7919) % 4000;
    uint64_t x = (uint64_t)i * 2654435761u + 1;     /* 64-bit everywhere */
    n += (size_t)snprintf(buf, cap, "write %lu:", i);
    while (n + 16 < cap && n < want) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        n += (size_t)snprintf(buf + n, cap - n, " %s", w[(x >> 33) % 10]);
    }
}

/* Apply write i to a store (st non-NULL) or a plain model. */
static int do_op(rcp_store *st, rcp_model *m, unsigned long i)
{
    char id[32], id2[32], meta[48], text[5200];
    const char *mp = NULL;
    int removed = 0;
    snprintf(id, sizeof id, "d%lu", i % 40);
    snprintf(id2, sizeof id2, "d%lu", (i * 13) % 40);
    op_text(text, sizeof text, i);
    if (i % 3 == 0) {
        snprintf(meta, sizeof meta, "{\"i\":%lu}", i);
        mp = meta;
    }
    if (st) {
        if (rcp_store_add(st, id, strlen(id), text, strlen(text), mp,
                          mp ? strlen(mp) : 0))
            return -1;
        if (i % 7 == 3 && rcp_store_delete(st, id2, strlen(id2), &removed))
            return -1;
        return 0;
    }
    if (rcp_model_add(m, id, strlen(id), text, strlen(text), mp,
                      mp ? strlen(mp) : 0))
        return -1;
    if (i % 7 == 3)
        (void)rcp_model_delete(m, id2, strlen(id2));
    return 0;
}

/* MARK: - round trip and versions (§7.7.1, §7.10, §7.11) ----------------- */

START_TEST(round_trip_add_delete_reopen_gives_same_documents_and_version)
{
    rcp_model *m, *m2, *ref = new_model();
    rcp_store *st = open_ok(DB, &m);   /* DB does not exist yet */
    unsigned long i;
    uint64_t v;
    for (i = 0; i < 60; i++) {
        ck_assert_int_eq(do_op(st, NULL, i), 0);
        ck_assert_int_eq(do_op(NULL, ref, i), 0);
        if (i % 5 == 4)
            commit(st);
    }
    commit(st);
    v = rcp_store_version(st);
    /* invariant 4: the store's version counts exactly the model changes */
    ck_assert_uint_eq(v, rcp_model_version(ref));
    ck_assert(same_docs(m, ref));
    rcp_store_close(st);
    rcp_model_free(m);
    st = open_ok(DB, &m2);
    ck_assert_uint_eq(rcp_store_version(st), v);
    ck_assert(same_docs(m2, ref));
    /* and it goes on from there */
    add(st, "new", "a new document after the restart", "{\"k\":1}");
    ck_assert_uint_eq(rcp_store_version(st), v + 1);
    ck_assert_int_eq(del(st, "new"), 1);
    ck_assert_int_eq(del(st, "new"), 0);
    ck_assert_uint_eq(rcp_store_version(st), v + 2);
    rcp_store_close(st);   /* close commits what is pending */
    rcp_model_free(m2);
    st = open_ok(DB, &m2);
    ck_assert_uint_eq(rcp_store_version(st), v + 2);
    ck_assert(same_docs(m2, ref));
    rcp_store_close(st);
    rcp_model_free(m2);
    rcp_model_free(ref);
}
END_TEST

START_TEST(identical_readd_neither_grows_the_log_nor_bumps_the_version)
{
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    uint64_t size, v;
    add(st, "a", "alpha text", "{\"x\":1}");
    add(st, "b", "beta text", NULL);
    commit(st);
    size = log_bytes(st);
    v = rcp_store_version(st);
    ck_assert_uint_eq(v, 2);
    /* §7.10: identical {id, text, meta} is observationally one add */
    add(st, "a", "alpha text", "{\"x\":1}");
    add(st, "b", "beta text", NULL);
    ck_assert_int_eq(del(st, "absent"), 0);   /* §7.11: no-op delete */
    commit(st);
    ck_assert_uint_eq(log_bytes(st), size);
    ck_assert_int_eq(file_size(LOG), (long)size);
    ck_assert_uint_eq(rcp_store_version(st), v);
    /* a changed meta is a change */
    add(st, "b", "beta text", "{}");
    commit(st);
    ck_assert_uint_eq(rcp_store_version(st), v + 1);
    ck_assert_uint_gt(log_bytes(st), size);
    rcp_store_close(st);
    rcp_model_free(m);
}
END_TEST

/* Hit ids and scores of one query (the mode's default: hybrid). */
static void search(const rcp_model *m, const char *text, int mode,
                   rcp_model_hit *hits, size_t *n)
{
    rcp_model_query q;
    rcp_model_query_init(&q);
    q.text = text;
    q.len = strlen(q.text);
    q.k = 10;
    if (mode >= 0)
        q.mode = mode;
    ck_assert_int_eq(rcp_model_search(m, &q, hits, n), 0);
}

static void same_hits_of(const rcp_model *a, const rcp_model *b,
                         const char *text, int mode)
{
    rcp_model_hit h1[10], h2[10];
    rcp_model_docview x, y;
    size_t n1, n2, i;
    search(a, text, mode, h1, &n1);
    search(b, text, mode, h2, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_uint_gt(n1, 0);
    for (i = 0; i < n1; i++) {
        ck_assert_int_eq(rcp_model_doc(a, h1[i].doc, &x), 0);
        ck_assert_int_eq(rcp_model_doc(b, h2[i].doc, &y), 0);
        ck_assert(x.idlen == y.idlen && !memcmp(x.id, y.id, x.idlen));
        ck_assert(h1[i].score == h2[i].score);
    }
}

static void same_hits(const rcp_model *a, const rcp_model *b)
{
    same_hits_of(a, b, "durable crash replay", -1);
}

START_TEST(restart_serves_same_results_before_and_after_compaction)
{
    rcp_model *m, *m2, *m3;
    rcp_store *st = open_ok(DB, &m);
    unsigned long i;
    for (i = 0; i < 120; i++)
        ck_assert_int_eq(do_op(st, NULL, i), 0);
    commit(st);
    rcp_store_close(st);
    st = open_ok(DB, &m2);
    same_hits(m, m2);
    ck_assert_int_eq(rcp_store_compact(st), 0);
    rcp_store_close(st);
    st = open_ok(DB, &m3);
    same_hits(m, m3);
    ck_assert(same_docs(m, m3));
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(m2);
    rcp_model_free(m3);
}
END_TEST

/* issue 12: stopword postings come back with the replay (they are
** derived from the texts the log holds): a query of stopwords only finds
** the same documents with the same scores after a reopen and after
** compaction, upserts and deletes of stopword-only documents included. */
START_TEST(stopword_only_queries_serve_the_same_after_replay)
{
    static const char *const qs[] = { "to be or not to be", "it is", "the" };
    rcp_model *m, *m2, *m3;
    rcp_store *st = open_ok(DB, &m);
    size_t i;
    add(st, "s", "to be or not to be", NULL);
    add(st, "t", "it is what it is", NULL);
    add(st, "u", "the durable log of the store", NULL);
    add(st, "v", "not now", NULL);
    commit(st);
    add(st, "t", "is it not so", NULL);         /* upsert */
    ck_assert_int_eq(del(st, "v"), 1);
    commit(st);
    rcp_store_close(st);
    st = open_ok(DB, &m2);
    for (i = 0; i < 3; i++) {
        same_hits_of(m, m2, qs[i], RCP_MODE_SPARSE);
        same_hits_of(m, m2, qs[i], RCP_MODE_HYBRID);
    }
    ck_assert_int_eq(rcp_store_compact(st), 0);
    rcp_store_close(st);
    st = open_ok(DB, &m3);
    for (i = 0; i < 3; i++)
        same_hits_of(m, m3, qs[i], RCP_MODE_SPARSE);
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(m2);
    rcp_model_free(m3);
}
END_TEST

/* The corpus-learned embedder (model.c, LSA) is not stored: a restart
** replays the documents and trains once at the end (as rcp serve does),
** so the same corpus comes back as the same model -- identity and every
** vector bit for bit.  Documents folded in after the last training are
** part of the corpus a restart trains on: the model after it is the one
** a training on that corpus gives (a new identity, §15.7), checked here
** too. */
static rcp_model *lsa_reopen(rcp_store **st)
{
    rcp_model_opts o;
    char err[512];
    rcp_model *m;
    rcp_model_opts_init(&o);
    o.dim = 8;
    o.lsa = 1;
    o.lsa_min_docs = 30;
    m = rcp_model_new(&o, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    *st = rcp_store_open(DB, m, err, sizeof err);
    ck_assert_msg(*st != NULL, "open %s: %s", DB, err);
    ck_assert_int_ge(rcp_model_train(m, 0), 0);
    check_model(m);
    return m;
}

static void lsa_docs(rcp_store *st, size_t from, size_t to)
{
    static const char *const w[] = { "wing", "flow", "heat", "shock",
                                     "plate", "layer", "mach", "boundary" };
    char id[32], text[128];
    size_t i;
    for (i = from; i < to; i++) {
        snprintf(id, sizeof id, "d%u", (unsigned)i);
        snprintf(text, sizeof text, "%s %s %s", w[i % 8], w[(i / 8) % 8],
                 w[(i * 3 + 1) % 8]);
        add(st, id, text, NULL);
    }
    commit(st);
}

START_TEST(the_learned_embedder_comes_back_the_same_after_a_restart)
{
    rcp_store *st;
    rcp_model *m = lsa_reopen(&st), *r;
    char id[96];
    float a[8], b[8];
    const char *q = "shock layer on a flat plate";
    lsa_docs(st, 0, 40);
    ck_assert_int_eq(rcp_model_train(m, 0), 1);     /* on all 40 */
    snprintf(id, sizeof id, "%s", rcp_model_identity(m, RCP_EMBED_DENSE));
    ck_assert_int_eq(rcp_model_embed(m, q, strlen(q), RCP_KIND_QUERY, a), 0);
    rcp_store_close(st);
    r = lsa_reopen(&st);
    ck_assert_str_eq(rcp_model_identity(r, RCP_EMBED_DENSE), id);
    ck_assert_int_eq(rcp_model_embed(r, q, strlen(q), RCP_KIND_QUERY, b), 0);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert(same_docs(m, r));
    lsa_docs(st, 40, 45);               /* folded in: the same model */
    ck_assert_str_eq(rcp_model_identity(r, RCP_EMBED_DENSE), id);
    ck_assert_int_eq(rcp_model_train(r, 1), 1);
    snprintf(id, sizeof id, "%s", rcp_model_identity(r, RCP_EMBED_DENSE));
    rcp_store_close(st);
    rcp_model_free(r);
    r = lsa_reopen(&st);                /* the restart trains on all 45 */
    ck_assert_str_eq(rcp_model_identity(r, RCP_EMBED_DENSE), id);
    rcp_store_close(st);
    rcp_model_free(r);
    rcp_model_free(m);
}
END_TEST

START_TEST(model_changed_behind_the_store_is_refused)
{
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    add(st, "a", "one", NULL);
    ck_assert_int_eq(rcp_model_add(m, "b", 1, "two", 3, NULL, 0), 0);
    /* invariant 4: persisting on would lose "b" at the next restart */
    ck_assert_int_eq(rcp_store_add(st, "c", 1, "three", 5, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(rcp_store_error(st), "outside the store"));
    ck_assert_int_eq(rcp_store_commit(st), -1);
    rcp_store_close(st);
    rcp_model_free(m);
}
END_TEST

START_TEST(open_rejects_a_non_empty_model_and_a_file_for_a_directory)
{
    char err[512], file[128];
    rcp_model *m = new_model();
    ck_assert_int_eq(rcp_model_add(m, "x", 1, "y", 1, NULL, 0), 0);
    ck_assert_ptr_null(rcp_store_open(DB, m, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "must be empty"));
    rcp_model_free(m);
    snprintf(file, sizeof file, "%s/plain", TMP);
    write_file(file, "x", 1);
    ck_assert_ptr_nonnull(strstr(open_fails(file), "not a directory"));
}
END_TEST

/* MARK: - torn tails and damage (store.c cases A, B, C) ------------------ */

/* A store whose last commit is one small document; *prev is the log size
** before it, ref the model state before it, *v its version. */
static void build_two_states(rcp_model *ref, uint64_t *prev, uint64_t *v)
{
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    unsigned long i;
    for (i = 0; i < 8; i++) {
        ck_assert_int_eq(do_op(st, NULL, i), 0);
        ck_assert_int_eq(do_op(NULL, ref, i), 0);
        commit(st);
    }
    *prev = log_bytes(st);
    *v = rcp_store_version(st);
    add(st, "last", "the last commit, which a crash may tear", "{\"z\":1}");
    ck_assert_int_eq(del(st, "d1"), 1);
    commit(st);
    rcp_store_close(st);
    rcp_model_free(m);
}

START_TEST(torn_tail_at_every_byte_of_the_last_commit_reopens_previous_state)
{
    rcp_model *ref = new_model(), *m;
    rcp_store *st;
    rcp_store_info in;
    uint64_t prev, v;
    size_t n, t;
    char *full;
    build_two_states(ref, &prev, &v);
    full = read_file(LOG, &n);
    ck_assert_uint_gt(n, prev);
    for (t = (size_t)prev; t < n; t++) {
        write_file(LOG, full, t);
        st = open_ok(DB, &m);
        /* case A: the torn commit is cut off, everything before stays */
        ck_assert_uint_eq(rcp_store_version(st), v);
        ck_assert(same_docs(m, ref));
        ck_assert_int_eq(file_size(LOG), (long)prev);
        rcp_store_stat(st, &in);
        ck_assert(t == prev || strstr(in.warning, "torn tail") != NULL);
        rcp_store_close(st);
        rcp_model_free(m);
    }
    write_file(LOG, full, n);
    st = open_ok(DB, &m);
    ck_assert_uint_eq(rcp_store_version(st), v + 2);
    ck_assert(rcp_model_find(m, "last", 4) >= 0);
    ck_assert(rcp_model_find(m, "d1", 2) < 0);
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(ref);
    free(full);
}
END_TEST

START_TEST(garbage_after_the_last_commit_is_dropped)
{
    static const unsigned char mark[] = { 0xFF, 'R', 'C', 'F', 200, 0, 0, 0 };
    unsigned char junk[3000];
    rcp_model *ref = new_model(), *m;
    rcp_store *st;
    uint64_t prev, v, end;
    size_t n, k, round;
    char *full;
    build_two_states(ref, &prev, &v);
    full = read_file(LOG, &n);
    end = (uint64_t)n;
    srand(4242);
    for (round = 0; round < 4; round++) {
        for (k = 0; k < sizeof junk; k++)   /* random, zeros, markers */
            junk[k] = round == 0 ? (unsigned char)rand()
                    : round == 1 ? 0 : mark[k % sizeof mark];
        write_file(LOG, full, n);
        append_file(LOG, junk, round == 3 ? 5 : sizeof junk);
        st = open_ok(DB, &m);
        ck_assert_uint_eq(rcp_store_version(st), v + 2);
        ck_assert_int_eq(file_size(LOG), (long)end);
        add(st, "after", "written after the garbage was cut", NULL);
        commit(st);
        rcp_store_close(st);
        rcp_model_free(m);
        st = open_ok(DB, &m);
        ck_assert(rcp_model_find(m, "after", 5) >= 0);
        rcp_store_close(st);
        rcp_model_free(m);
    }
    rcp_model_free(ref);
    free(full);
}
END_TEST

START_TEST(mid_file_corruption_is_reported_and_the_file_left_alone)
{
    rcp_model *ref = new_model();
    uint64_t prev, v;
    size_t n;
    char *full, *bad;
    const char *e;
    build_two_states(ref, &prev, &v);
    full = read_file(LOG, &n);
    bad = malloc(n);
    ck_assert_ptr_nonnull(bad);
    /* case B: a flipped byte in the first frame's payload */
    memcpy(bad, full, n);
    bad[36 + 12 + 20] ^= 0x10;
    write_file(LOG, bad, n);
    e = open_fails(DB);
    ck_assert_msg(strstr(e, "corrupt") && strstr(e, "byte 36"), "%s", e);
    ck_assert_int_eq(file_size(LOG), (long)n);
    /* a damaged length field: the scan still finds the frames after it */
    memcpy(bad, full, n);
    bad[36 + 5] ^= 0x40;
    write_file(LOG, bad, n);
    e = open_fails(DB);
    ck_assert_msg(strstr(e, "valid frame follows"), "%s", e);
    ck_assert_int_eq(file_size(LOG), (long)n);
    /* a damaged header, and a file too short to be a log */
    memcpy(bad, full, n);
    bad[20] ^= 1;
    write_file(LOG, bad, n);
    ck_assert_ptr_nonnull(strstr(open_fails(DB), "corrupt header"));
    write_file(LOG, full, 10);
    ck_assert_ptr_nonnull(strstr(open_fails(DB), "not an rcp store"));
    free(bad);
    free(full);
    rcp_model_free(ref);
}
END_TEST

/* Log header fields the forging tests need. */
static void header_of(const char *log, unsigned char *salt, uint64_t *base)
{
    size_t n, k;
    char *p = read_file(log, &n);
    ck_assert_uint_ge(n, 36);
    memcpy(salt, p + 24, 8);
    for (*base = 0, k = 0; k < 8; k++)
        *base |= (uint64_t)(unsigned char)p[16 + k] << (8 * k);
    free(p);
}

START_TEST(valid_frames_with_bad_contents_or_format_are_reported)
{
    unsigned char salt[8], rec[256], fr[300], h[36];
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    uint64_t base;
    size_t n, len;
    char *full;
    add(st, "a", "first", NULL);
    commit(st);
    rcp_store_close(st);
    rcp_model_free(m);
    header_of(LOG, salt, &base);
    full = read_file(LOG, &len);
    /* a well-sealed frame whose version skips one: invariant 3 */
    n = forge_add(rec, 3, "b", "skips version 2");
    append_file(LOG, fr, forge_frame(fr, salt, rec, n));
    ck_assert_ptr_nonnull(strstr(open_fails(DB), "version 3 after version "
                                 "1"));
    /* a well-sealed frame holding a truncated record */
    write_file(LOG, full, len);
    n = forge_add(rec, 2, "b", "cut short");
    append_file(LOG, fr, forge_frame(fr, salt, rec, n - 3));
    ck_assert_ptr_nonnull(strstr(open_fails(DB), "malformed record"));
    /* the same frame, correct this time, is accepted: the forging is
    ** faithful to the format */
    write_file(LOG, full, len);
    append_file(LOG, fr, forge_frame(fr, salt, rec, n));
    st = open_ok(DB, &m);
    ck_assert_uint_eq(rcp_store_version(st), 2);
    rcp_store_close(st);
    rcp_model_free(m);
    /* a newer format version, with a valid header checksum */
    memcpy(h, full, 36);
    h[8] = 4;
    le32(h + 32, crc32c(0, h, 32));
    memcpy(full, h, 36);
    write_file(LOG, full, len);
    ck_assert_ptr_nonnull(strstr(open_fails(DB), "log format 4"));
    free(full);
}
END_TEST

/* A chunk's link, as rcp.c's chunking makes it. */
static void add_part(rcp_store *st, const char *id, const char *text,
                     const char *of, uint32_t index, uint64_t start)
{
    rcp_model_chunkref ck = test_chunkref(of, index, start, strlen(text));
    ck_assert_msg(rcp_store_add_chunk(st, id, strlen(id), text, strlen(text),
                                      "{\"k\":1}", 7, &ck) == 0, "%s",
                  rcp_store_error(st));
}

static int is_part(const rcp_model *m, const char *id, const char *of,
                   uint32_t index, uint64_t start)
{
    rcp_model_docview v;
    long no = rcp_model_find(m, id, strlen(id));
    return no >= 0 && rcp_model_doc(m, (uint32_t)no, &v) == 0
        && v.chunk.of && v.chunk.oflen == strlen(of)
        && !memcmp(v.chunk.of, of, v.chunk.oflen) && v.chunk.index == index
        && v.chunk.start == start && v.chunk.end == start + v.textlen;
}

START_TEST(chunk_links_are_stored_replayed_and_compacted)
{
    /* §7.10: the link of a chunk to its document is the store's record,
    ** never meta's, across replay and compaction */
    rcp_model *m, *m2;
    rcp_store *st = open_ok(DB, &m);
    uint64_t v;
    add_part(st, "a#0", "shock wave ", "a", 0, 0);
    add_part(st, "a#1", "wave layer", "a", 1, 6);
    add(st, "plain", "x", "{\"x-rcp-chunk\":{\"doc\":\"a\",\"index\":2}}");
    add_part(st, "a#1", "wave layer", "a", 1, 6);    /* identical: no-op */
    commit(st);
    v = rcp_store_version(st);
    ck_assert_uint_eq(v, 3);
    rcp_store_close(st);
    st = open_ok(DB, &m2);
    ck_assert_uint_eq(rcp_store_version(st), v);
    ck_assert(same_docs(m, m2));
    ck_assert(is_part(m2, "a#1", "a", 1, 6));
    ck_assert_int_eq(rcp_store_compact(st), 0);
    rcp_store_close(st);
    rcp_model_free(m2);
    st = open_ok(DB, &m2);
    ck_assert(same_docs(m, m2));
    ck_assert(is_part(m2, "a#0", "a", 0, 0));
    ck_assert(!is_part(m2, "plain", "a", 2, 0));
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(m2);
}
END_TEST

START_TEST(a_format_1_log_opens_with_meta_as_data_and_is_upgraded)
{
    /* format 1 kept chunk links in meta ("x-rcp-chunk"), where a client
    ** could forge them (issue 8): reading it, meta is plain data */
    static const char meta[] = "{\"x-rcp-chunk\":{\"doc\":\"evil\",\"index\""
        ":0,\"start\":0,\"end\":3,\"count\":9007199254740991}}";
    unsigned char h[36], rec[512], fr[600];
    rcp_model *m;
    rcp_store *st;
    rcp_store_info in;
    rcp_model_docview v;
    size_t n, k;
    char *p;
    memcpy(h, "\x89RCPLOG\n", 8);
    le32(h + 8, 1);
    memset(h + 12, 0, 20);
    memcpy(h + 24, "saltsalt", 8);
    le32(h + 32, crc32c(0, h, 32));
    n = forge_add(rec, 1, "evil#0", "fox");
    n -= 5;                                 /* hasmeta 1, then the meta */
    rec[n++] = 1;
    le32(rec + n, (uint32_t)strlen(meta));
    memcpy(rec + n + 4, meta, strlen(meta));
    n += 4 + strlen(meta);
    ck_assert_int_eq(mkdir(DB, 0755), 0);
    write_file(LOG, h, 36);
    append_file(LOG, fr, forge_frame(fr, h + 24, rec, n));
    st = open_ok(DB, &m);
    ck_assert_uint_eq(rcp_store_version(st), 1);
    ck_assert_int_eq(rcp_model_doc(m, (uint32_t)rcp_model_find(m, "evil#0",
                                                               6), &v), 0);
    ck_assert_ptr_null(v.chunk.of);
    ck_assert_uint_eq(v.metalen, strlen(meta));
    ck_assert(!memcmp(v.meta, meta, v.metalen));
    rcp_store_stat(st, &in);
    ck_assert_ptr_nonnull(strstr(in.warning, "format-1"));
    add(st, "next", "after the upgrade", NULL);
    commit(st);
    rcp_store_close(st);
    rcp_model_free(m);
    p = read_file(LOG, &k);
    ck_assert_int_eq(p[8], 3);              /* rewritten as format 3 */
    free(p);
    st = open_ok(DB, &m);
    ck_assert_uint_eq(rcp_store_version(st), 2);
    ck_assert_uint_eq(rcp_model_count(m), 2);
    rcp_store_close(st);
    rcp_model_free(m);
}
END_TEST

/* MARK: - issue 12/13: what the log records about its server ----------- */

static const rcp_field F_KIND = { "kind", 4, RCP_FIELD_KEYWORD };
static const rcp_field F_YEAR = { "year", 4, RCP_FIELD_INT };

/* Open DB with want (embedder: the model's when NULL); NULL and the
** message in err when refused. */
static rcp_store *open_with(rcp_model **m, const rcp_field *f, size_t n,
                            const char *emb, char *err, size_t errlen)
{
    rcp_store_config want;
    rcp_store *st;
    *m = new_model();
    want.has_schema = 1;
    want.fields = f;
    want.nfields = n;
    want.embedder = emb ? emb : rcp_model_identity(*m, RCP_EMBED_DENSE);
    st = rcp_store_open_config(DB, *m, 0, &want, err, errlen);
    if (!st) {
        rcp_model_free(*m);
        *m = NULL;
    }
    return st;
}

/* The field schema and the embedder identity are recorded in the first
** commit, where rcp_store_peek reads them without opening the store;
** fields may be added, never dropped or retyped; another embedder is
** refused with a message naming both. */
START_TEST(log_records_the_field_schema_and_the_embedder)
{
    rcp_field both[2];
    rcp_store_config *c;
    rcp_model *m;
    rcp_store *st;
    char err[512];
    c = rcp_store_peek(DB, err, sizeof err);        /* no store yet */
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert_int_eq(c->has_schema, 0);
    ck_assert_ptr_null(c->embedder);
    rcp_free(c);
    st = open_with(&m, &F_KIND, 1, NULL, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    add(st, "a", "alpha", "{\"kind\":\"x\"}");
    commit(st);
    rcp_store_close(st);
    rcp_model_free(m);
    c = rcp_store_peek(DB, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert_int_eq(c->has_schema, 1);
    ck_assert_uint_eq(c->nfields, 1);
    ck_assert_str_eq(c->fields[0].name, "kind");
    ck_assert_int_eq(c->fields[0].type, RCP_FIELD_KEYWORD);
    ck_assert_str_eq(c->embedder, "rcp-hash-ngram-v4-32");
    rcp_free(c);
    /* another embedder: refused, naming both */
    ck_assert_ptr_null(open_with(&m, &F_KIND, 1, "other-model-7", err,
                                 sizeof err));
    ck_assert_msg(strstr(err, "rcp-hash-ngram-v4-32")
                  && strstr(err, "other-model-7"), "%s", err);
    /* a recorded field left out, or declared with another type */
    ck_assert_ptr_null(open_with(&m, &F_YEAR, 1, NULL, err, sizeof err));
    ck_assert_msg(strstr(err, "kind:keyword"), "%s", err);
    both[0] = F_KIND;
    both[0].type = RCP_FIELD_TEXT;
    ck_assert_ptr_null(open_with(&m, both, 1, NULL, err, sizeof err));
    ck_assert_msg(strstr(err, "kind:keyword") && strstr(err, "kind:text"),
                  "%s", err);
    /* a field added is recorded; the documents survive the rewrite */
    both[0] = F_YEAR;
    both[1] = F_KIND;
    st = open_with(&m, both, 2, NULL, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    ck_assert_uint_eq(rcp_model_count(m), 1);
    ck_assert_uint_eq(rcp_store_get_config(st)->nfields, 2);
    rcp_store_close(st);
    rcp_model_free(m);
    c = rcp_store_peek(DB, err, sizeof err);
    ck_assert_uint_eq(c->nfields, 2);
    rcp_free(c);
    /* compaction keeps the config first */
    st = open_ok(DB, &m);
    add(st, "b", "beta", NULL);
    ck_assert_int_eq(rcp_store_compact(st), 0);
    rcp_store_close(st);
    rcp_model_free(m);
    c = rcp_store_peek(DB, err, sizeof err);
    ck_assert_uint_eq(c->nfields, 2);
    ck_assert_str_eq(c->embedder, "rcp-hash-ngram-v4-32");
    rcp_free(c);
}
END_TEST

/* §15.2: each document's origin (trust level, source) is in its record,
** replayed and compacted; the same document from another origin is a
** change. */
START_TEST(document_origins_are_stored_replayed_and_compacted)
{
    rcp_model_origin vet = { RCP_TRUST_TRUSTED, "vetted", 6 };
    rcp_model_origin web = { RCP_TRUST_COMMUNITY, "web", 3 };
    rcp_model_docview v;
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    int round;
    ck_assert_int_eq(rcp_store_add_from(st, "a", 1, "alpha", 5, NULL, 0,
                                        NULL, &vet), 0);
    ck_assert_int_eq(rcp_store_add_from(st, "b", 1, "beta", 4, NULL, 0,
                                        NULL, &web), 0);
    add(st, "c", "gamma", NULL);
    commit(st);
    ck_assert_uint_eq(rcp_store_version(st), 3);
    ck_assert_int_eq(rcp_store_add_from(st, "b", 1, "beta", 4, NULL, 0,
                                        NULL, &web), 0);
    ck_assert_uint_eq(rcp_store_version(st), 3);    /* identical: no-op */
    ck_assert_int_eq(rcp_store_add_from(st, "b", 1, "beta", 4, NULL, 0,
                                        NULL, &vet), 0);
    ck_assert_uint_eq(rcp_store_version(st), 4);    /* another origin */
    commit(st);
    for (round = 0; round < 2; round++) {
        rcp_store_close(st);
        rcp_model_free(m);
        st = open_ok(DB, &m);
        ck_assert_int_eq(rcp_model_doc(m, (uint32_t)rcp_model_find(m, "a", 1),
                                       &v), 0);
        ck_assert_int_eq(v.origin.trust, RCP_TRUST_TRUSTED);
        ck_assert_uint_eq(v.origin.sourcelen, 6);
        ck_assert(!memcmp(v.origin.source, "vetted", 6));
        ck_assert_int_eq(rcp_model_doc(m, (uint32_t)rcp_model_find(m, "b", 1),
                                       &v), 0);
        ck_assert_int_eq(v.origin.trust, RCP_TRUST_TRUSTED);
        ck_assert_int_eq(rcp_model_doc(m, (uint32_t)rcp_model_find(m, "c", 1),
                                       &v), 0);
        ck_assert_int_eq(v.origin.trust, RCP_TRUST_UNTRUSTED);
        ck_assert_uint_eq(v.origin.sourcelen, 0);
        ck_assert_uint_eq(rcp_store_version(st), 4);
        ck_assert_int_eq(rcp_store_compact(st), 0);
    }
    rcp_store_close(st);
    rcp_model_free(m);
}
END_TEST

/* Backward compatibility: the format-2 log checked in before format 3
** (tests/golden/store-v2-x86_64.log) opens, is upgraded, says so, and
** its documents have no origin (untrusted). */
START_TEST(a_format_2_log_opens_and_is_upgraded_to_format_3)
{
    rcp_model *m;
    rcp_store *st;
    rcp_store_info in;
    rcp_model_docview v;
    size_t n;
    char *p = read_file("tests/golden/store-v2-x86_64.log", &n);
    ck_assert_int_eq(p[8], 2);
    ck_assert_int_eq(mkdir(DB, 0755), 0);
    write_file(LOG, p, n);
    free(p);
    st = open_ok(DB, &m);
    rcp_store_stat(st, &in);
    ck_assert_ptr_nonnull(strstr(in.warning, "format-2"));
    ck_assert_uint_eq(in.format, 3);
    ck_assert_uint_gt(rcp_model_count(m), 10);
    ck_assert_int_eq(rcp_model_doc(m, 0, &v), 0);
    ck_assert_int_eq(v.origin.trust, RCP_TRUST_UNTRUSTED);
    rcp_store_close(st);
    rcp_model_free(m);
    p = read_file(LOG, &n);
    ck_assert_int_eq(p[8], 3);
    free(p);
}
END_TEST

START_TEST(frame_bytes_inside_a_torn_text_are_not_taken_for_data)
{
    unsigned char salt[8], rec[128], fake[160], other[8] = "notsalt";
    char text[400];
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    uint64_t prev, base;
    size_t n, k, len;
    char *full;
    add(st, "a", "first", NULL);
    commit(st);
    prev = log_bytes(st);
    header_of(LOG, salt, &base);
    /* case C: a text carrying a frame sealed with a salt it guessed */
    n = forge_add(rec, 3, "evil", "injected");
    k = forge_frame(fake, other, rec, n);
    memset(text, 'x', sizeof text);
    memcpy(text + 100, fake, k);
    ck_assert_int_eq(rcp_store_add(st, "t", 1, text, sizeof text, NULL, 0),
                     0);
    commit(st);
    rcp_store_close(st);
    rcp_model_free(m);
    /* tear the commit just after the embedded frame */
    full = read_file(LOG, &len);
    write_file(LOG, full, (size_t)prev + 12 + 30 + 100 + k + 5);
    st = open_ok(DB, &m);
    ck_assert_uint_eq(rcp_store_version(st), 1);
    ck_assert(rcp_model_find(m, "evil", 4) < 0);
    ck_assert_int_eq(file_size(LOG), (long)prev);
    rcp_store_close(st);
    rcp_model_free(m);
    free(full);
}
END_TEST

/* Issue 8 item 7.  A bad last frame is a torn write (never acknowledged)
** or damage to an acknowledged commit, and the store cannot tell which;
** so it is never silent: the warning names the offset, the bytes and the
** documents the frame touched, and the bytes are kept in rcp.log.torn
** (rcp.log.torn.1, ... next time: nothing is overwritten). */
START_TEST(damaged_last_commit_is_reported_with_its_documents_and_kept)
{
    rcp_model *ref = new_model(), *m;
    rcp_store *st;
    rcp_store_info in;
    uint64_t prev, v;
    size_t n, k, round;
    char *full, *torn, side[200], want[64];
    build_two_states(ref, &prev, &v);
    full = read_file(LOG, &n);
    full[prev + 12 + 30] ^= 0x01;       /* a byte of the acknowledged text */
    for (round = 0; round < 2; round++) {
        write_file(LOG, full, n);
        st = open_ok(DB, &m);
        ck_assert_uint_eq(rcp_store_version(st), v);
        ck_assert(same_docs(m, ref));
        ck_assert_int_eq(file_size(LOG), (long)prev);
        rcp_store_stat(st, &in);
        snprintf(want, sizeof want, "byte %llu", (unsigned long long)prev);
        ck_assert_msg(strstr(in.warning, want), "%s", in.warning);
        snprintf(want, sizeof want, "%lu bytes", (unsigned long)(n - prev));
        ck_assert_msg(strstr(in.warning, want), "%s", in.warning);
        ck_assert_msg(strstr(in.warning, "\"last\"")
                      && strstr(in.warning, "\"d1\""), "%s", in.warning);
        snprintf(side, sizeof side, "%s/rcp.log.torn%s", DB,
                 round ? ".1" : "");
        ck_assert_msg(strstr(in.warning, side), "%s", in.warning);
        torn = read_file(side, &k);
        ck_assert_uint_eq(k, n - prev);
        ck_assert(memcmp(torn, full + prev, k) == 0);
        free(torn);
        rcp_store_close(st);
        rcp_model_free(m);
    }
    rcp_model_free(ref);
    free(full);
}
END_TEST

/* Offset of frame k (0-based) of a log. */
static size_t frame_at(const char *log, size_t n, int k)
{
    size_t off = 36;
    while (k-- > 0) {
        ck_assert_uint_lt(off + 12, n);
        off += 12 + ((size_t)(unsigned char)log[off + 4]
                     | (size_t)(unsigned char)log[off + 5] << 8
                     | (size_t)(unsigned char)log[off + 6] << 16
                     | (size_t)(unsigned char)log[off + 7] << 24);
    }
    return off;
}

/* Damage with valid frames after it is refused; with RCP_STORE_SALVAGE the
** good prefix is kept, the rest set aside and described. */
START_TEST(damage_before_valid_commits_is_refused_unless_salvaged)
{
    rcp_model *ref = new_model(), *four = new_model(), *m;
    rcp_store *st;
    rcp_store_info in;
    uint64_t prev, v;
    size_t n, k, off;
    char *full, *torn, side[200], err[512], want[64];
    unsigned long i;
    const char *e;
    build_two_states(ref, &prev, &v);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(do_op(NULL, four, i), 0);
    full = read_file(LOG, &n);
    off = frame_at(full, n, 4);
    full[off + 12 + 20] ^= 0x01;
    write_file(LOG, full, n);
    e = open_fails(DB);
    ck_assert_msg(strstr(e, "valid frame follows") && strstr(e, "salvage"),
                  "%s", e);
    ck_assert_int_eq(file_size(LOG), (long)n);
    m = new_model();
    st = rcp_store_open_flags(DB, m, RCP_STORE_SALVAGE, err, sizeof err);
    ck_assert_msg(st != NULL, "%s", err);
    ck_assert_uint_eq(rcp_store_version(st), rcp_model_version(four));
    ck_assert(same_docs(m, four));
    ck_assert_int_eq(file_size(LOG), (long)off);
    rcp_store_stat(st, &in);
    snprintf(want, sizeof want, "%lu bytes", (unsigned long)(n - off));
    ck_assert_msg(strstr(in.warning, want) && strstr(in.warning, "salvage")
                  && strstr(in.warning, "4 valid"), "%s",
                  in.warning);
    snprintf(side, sizeof side, "%s/rcp.log.torn", DB);
    torn = read_file(side, &k);
    ck_assert(k == n - off && memcmp(torn, full + off, k) == 0);
    free(torn);
    add(st, "after", "written after the salvage", NULL);
    commit(st);
    rcp_store_close(st);
    rcp_model_free(m);
    st = open_ok(DB, &m);               /* a plain open from now on */
    ck_assert_uint_eq(rcp_store_version(st), rcp_model_version(four) + 1);
    ck_assert(rcp_model_find(m, "after", 5) >= 0);
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(ref);
    rcp_model_free(four);
    free(full);
}
END_TEST

/* MARK: - compaction (store.c case E) ------------------------------------ */

START_TEST(compaction_keeps_every_document_and_the_version)
{
    rcp_model *m, *m2, *ref = new_model();
    rcp_store *st = open_ok(DB, &m);
    rcp_store_info in;
    unsigned long i;
    uint64_t v;
    for (i = 0; i < 900; i++) {
        ck_assert_int_eq(do_op(st, NULL, i), 0);
        ck_assert_int_eq(do_op(NULL, ref, i), 0);
        if (i % 4 == 3)
            commit(st);
    }
    rcp_store_stat(st, &in);
    /* 900 writes of ~3 KB over 40 ids: over 1 MiB and over 2x live */
    ck_assert_uint_ge(in.compactions, 1);
    ck_assert_str_eq(in.warning, "");
    ck_assert_uint_lt(in.log_bytes, 2 * 1024 * 1024);
    v = rcp_store_version(st);
    ck_assert_uint_eq(v, rcp_model_version(ref));
    ck_assert_int_eq(rcp_store_compact(st), 0);
    ck_assert_uint_eq(rcp_store_version(st), v);
    ck_assert_uint_lt(log_bytes(st), 40 * 5200 + 4096);
    rcp_store_close(st);
    rcp_model_free(m);
    st = open_ok(DB, &m2);
    ck_assert_uint_eq(rcp_store_version(st), v);
    ck_assert(same_docs(m2, ref));
    add(st, "z", "after compaction", NULL);
    commit(st);
    ck_assert_uint_eq(rcp_store_version(st), v + 1);
    rcp_store_close(st);
    rcp_model_free(m2);
    rcp_model_free(ref);
}
END_TEST

START_TEST(crash_between_compaction_write_and_rename_leaves_a_store_that_opens)
{
    char newp[160];
    rcp_model *m, *ref = new_model();
    rcp_store *st = open_ok(DB, &m);
    unsigned long i;
    uint64_t v;
    size_t n_old, n_new;
    char *old_log, *new_log;
    for (i = 0; i < 100; i++) {
        ck_assert_int_eq(do_op(st, NULL, i), 0);
        ck_assert_int_eq(do_op(NULL, ref, i), 0);
    }
    commit(st);
    v = rcp_store_version(st);
    rcp_store_close(st);
    rcp_model_free(m);
    old_log = read_file(LOG, &n_old);
    st = open_ok(DB, &m);
    ck_assert_int_eq(rcp_store_compact(st), 0);
    rcp_store_close(st);
    rcp_model_free(m);
    new_log = read_file(LOG, &n_new);
    ck_assert_uint_lt(n_new, n_old);
    snprintf(newp, sizeof newp, "%s/rcp.log.new", DB);
    /* killed before the rename: the old log and a whole or partial new
    ** file next to it; the old log is authoritative */
    for (i = 0; i < 3; i++) {
        write_file(LOG, old_log, n_old);
        write_file(newp, new_log, i == 0 ? n_new : i == 1 ? n_new / 2 : 0);
        st = open_ok(DB, &m);
        ck_assert_uint_eq(rcp_store_version(st), v);
        ck_assert(same_docs(m, ref));
        ck_assert_int_eq(file_size(newp), -1);    /* removed by open */
        rcp_store_close(st);
        rcp_model_free(m);
    }
    /* killed after the rename: only the new file */
    write_file(LOG, new_log, n_new);
    st = open_ok(DB, &m);
    ck_assert_uint_eq(rcp_store_version(st), v);
    ck_assert(same_docs(m, ref));
    rcp_store_close(st);
    rcp_model_free(m);
    free(old_log);
    free(new_log);
    rcp_model_free(ref);
}
END_TEST

/* MARK: - kill -9 at a random moment (§13.1, issue 4) -------------------- */

/* The child: open, then writes start, start+1, ... each committed, and
** "acknowledged i" (8 bytes) on the pipe after each commit returns. */
static void crash_child(int wfd, unsigned long start)
{
    char err[512];
    unsigned char ack[8];
    rcp_model *m = new_model();
    rcp_store *st = rcp_store_open(DB, m, err, sizeof err);
    unsigned long i;
    int k;
    if (!st)
        _exit(2);
    for (i = start;; i++) {
        if (do_op(st, NULL, i) || rcp_store_commit(st))
            _exit(3);
        for (k = 0; k < 8; k++)
            ack[k] = (unsigned char)(i >> (8 * k));
        if (write(wfd, ack, 8) != 8)
            _exit(4);
    }
}

/* 1 and *i for the next acknowledgement, 0 at end of pipe. */
static int read_ack(int fd, unsigned long *i)
{
    unsigned char b[8];
    size_t got = 0;
    ssize_t r;
    int k;
    while (got < 8) {
        r = read(fd, b + got, 8 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
    for (*i = 0, k = 0; k < 8; k++)
        *i |= (unsigned long)b[k] << (8 * k);
    return 1;
}

/* Run a child from write `start`, kill -9 it after `after` acks, and
** return the last acknowledged write (start - 1 when none). */
static long crash_round(unsigned long start, int after)
{
    int p[2], status, n = 0;
    unsigned long i, last = start - 1;
    pid_t pid;
    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        crash_child(p[1], start);
    }
    close(p[1]);
    while (n < after && read_ack(p[0], &i)) {
        last = i;
        n++;
    }
    kill(pid, SIGKILL);
    while (read_ack(p[0], &i))      /* acks written before it died count */
        last = i;
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status), "the child ended by itself: %d",
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return (long)last;
}

START_TEST(kill_9_at_a_random_moment_loses_no_acknowledged_write)
{
    rcp_model *sim = new_model(), *m;
    rcp_store *st;
    rcp_store_info in;
    unsigned long next = 0, compactions = 0;
    uint64_t size = 0;
    long last;
    int round;
    srand(20240611u);
    for (round = 0; round < 10; round++) {
        last = crash_round(next, 1 + rand() % 250);
        st = open_ok(DB, &m);
        /* sim holds writes [0, next); bring it to the last ack */
        for (; (long)next <= last; next++)
            ck_assert_int_eq(do_op(NULL, sim, next), 0);
        /* every acknowledged write is there; the one in flight may be */
        if (!same_docs(m, sim)
            || rcp_store_version(st) != rcp_model_version(sim)) {
            ck_assert_int_eq(do_op(NULL, sim, next++), 0);
            ck_assert_msg(same_docs(m, sim), "round %d: state after write "
                          "%ld is neither acknowledged nor in flight",
                          round, last);
        }
        ck_assert_uint_eq(rcp_store_version(st), rcp_model_version(sim));
        rcp_store_stat(st, &in);
        compactions += in.log_bytes < size;   /* it shrank: compacted */
        size = in.log_bytes;
        rcp_store_close(st);
        rcp_model_free(m);
    }
    ck_assert_uint_ge(compactions, 1);   /* some kills hit a compacted log */
    rcp_model_free(sim);
}
END_TEST

/* MARK: - write failure (store.c case F) --------------------------------- */

/* In a child: a commit fails for real once the file may not grow
** (RLIMIT_FSIZE: the kernel writes what fits, then EFBIG).  No room, so
** the store cuts the file back, undoes the change, and a small write
** that fits goes through.  Exit 0 when it behaved. */
static void failing_child(void)
{
    rcp_model *m;
    char err[512], big[20000];
    rcp_store *st;
    rcp_store_info in;
    struct rlimit rl;
    long size;
    m = new_model();
    if (!(st = rcp_store_open(DB, m, err, sizeof err)))
        _exit(10);
    if (rcp_store_add(st, "ok", 2, "acknowledged", 12, NULL, 0)
        || rcp_store_commit(st))
        _exit(11);
    signal(SIGXFSZ, SIG_IGN);
    size = file_size(LOG);
    rl.rlim_cur = rl.rlim_max = (rlim_t)(size + 5000);
    if (setrlimit(RLIMIT_FSIZE, &rl))
        _exit(12);
    memset(big, 'b', sizeof big);
    if (rcp_store_add(st, "big", 3, big, sizeof big, NULL, 0))
        _exit(13);
    if (rcp_store_commit(st) != -1 || !strstr(rcp_store_error(st), "large"))
        _exit(14);
    rcp_store_stat(st, &in);
    if (in.failed || rcp_model_find(m, "big", 3) >= 0
        || rcp_store_version(st) != 1 || file_size(LOG) != size)
        _exit(15);
    if (rcp_store_add(st, "x", 1, "fits", 4, NULL, 0) || rcp_store_commit(st))
        _exit(16);
    rcp_store_close(st);
    _exit(0);
}

START_TEST(failed_commit_is_undone_and_disk_keeps_acknowledged_ones)
{
    rcp_model *m;
    rcp_store *st;
    pid_t pid;
    int status;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        failing_child();
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status %d", status);
    st = open_ok(DB, &m);
    ck_assert(rcp_model_find(m, "ok", 2) >= 0);
    ck_assert(rcp_model_find(m, "big", 3) < 0);   /* never acknowledged */
    ck_assert(rcp_model_find(m, "x", 1) >= 0);
    ck_assert_uint_eq(rcp_store_version(st), 2);
    rcp_store_close(st);
    rcp_model_free(m);
}
END_TEST

/* The store's I/O hook: fail the next FAULT_OP with FAULT_ERRNO. */
static const char *FAULT_OP;
static int FAULT_ERRNO, FAULTS;

static int fault(void *ud, const char *op)
{
    (void)ud;
    if (!FAULT_OP || strcmp(op, FAULT_OP) != 0)
        return 0;
    FAULT_OP = NULL;
    FAULTS++;
    return FAULT_ERRNO;
}

static void madd(rcp_model *m, const char *id, const char *text,
                 const char *meta)
{
    ck_assert_int_eq(rcp_model_add(m, id, strlen(id), text, strlen(text),
                                   meta, meta ? strlen(meta) : 0), 0);
}

/* A store with a, b committed; then a failed commit of an upsert of a, a
** delete of b and a new c.  The model must be back where the disk is. */
static rcp_store *fail_a_commit(rcp_model **m, rcp_model *ref,
                                const char *op, int e)
{
    rcp_store *st = open_ok(DB, m);
    uint64_t v, size;
    add(st, "a", "the first text", NULL);
    add(st, "b", "the second text", "{\"k\":1}");
    commit(st);
    madd(ref, "a", "the first text", NULL);
    madd(ref, "b", "the second text", "{\"k\":1}");
    v = rcp_store_version(st);
    size = log_bytes(st);
    add(st, "a", "a replacement", NULL);
    ck_assert_int_eq(del(st, "b"), 1);
    add(st, "c", "a new one", NULL);
    FAULT_OP = op;
    FAULT_ERRNO = e;
    FAULTS = 0;
    rcp_store_set_fault(fault, NULL);
    ck_assert_int_eq(rcp_store_commit(st), -1);
    rcp_store_set_fault(NULL, NULL);
    ck_assert_int_eq(FAULTS, 1);
    /* §13.1: never acknowledged, so never visible */
    ck_assert_uint_eq(rcp_store_version(st), v);
    ck_assert_uint_eq(rcp_model_version(*m), rcp_model_version(ref));
    ck_assert(same_docs(*m, ref));
    ck_assert_int_eq(file_size(LOG), (long)size);
    return st;
}

/* Close st (and m, ref), reopen: the disk holds ref's documents at
** version v. */
static void close_and_reopen_holds(rcp_store *st, rcp_model *m,
                                   rcp_model *ref, uint64_t v)
{
    rcp_store_close(st);
    rcp_model_free(m);
    st = open_ok(DB, &m);
    ck_assert(same_docs(m, ref));
    ck_assert_uint_eq(rcp_store_version(st), v);
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(ref);
}

/* Issue 8 item 9: a write() that found no room put nothing in place of
** acknowledged data; the store cuts the file back to its last commit,
** undoes the change in memory and takes later writes. */
START_TEST(failed_write_without_room_is_undone_and_later_writes_succeed)
{
    rcp_model *m, *ref = new_model();
    rcp_store *st = fail_a_commit(&m, ref, "write", ENOSPC);
    rcp_store_info in;
    rcp_store_stat(st, &in);
    ck_assert_int_eq(in.failed, 0);
    ck_assert_msg(strstr(rcp_store_error(st), "No space left"), "%s",
                  rcp_store_error(st));
    add(st, "d", "written once there is room", NULL);
    commit(st);
    madd(ref, "d", "written once there is room", NULL);
    ck_assert_uint_eq(rcp_store_version(st), 3);
    close_and_reopen_holds(st, m, ref, 3);
}
END_TEST

/* After a failed fsync the kernel may have dropped the pages and marked
** them clean, so a later fsync proves nothing ("fsyncgate"): the change
** is undone in memory and the store refuses writes until it is reopened;
** other write errors (EIO: the device, not the room) too. */
START_TEST(failed_fsync_is_undone_and_the_store_refuses_until_reopened)
{
    static const char *const ops[] = { "fsync", "write" };
    static const int errs[] = { EIO, EIO };
    int k;
    for (k = 0; k < 2; k++) {
        rcp_model *m, *ref = new_model();
        rcp_store *st = fail_a_commit(&m, ref, ops[k], errs[k]);
        rcp_store_info in;
        rcp_store_stat(st, &in);
        ck_assert_int_eq(in.failed, 1);
        ck_assert_msg(strstr(rcp_store_error(st), "no more writes"), "%s",
                      rcp_store_error(st));
        ck_assert_int_eq(rcp_store_add(st, "x", 1, "y", 1, NULL, 0), -1);
        ck_assert_int_eq(rcp_store_delete(st, "a", 1, NULL), -1);
        ck_assert(same_docs(m, ref));
        close_and_reopen_holds(st, m, ref, 2);
        teardown();
        setup();
    }
}
END_TEST

/* A real full disk, where the system lets us mount one: a 256 KiB tmpfs
** in a mount namespace of our own (so nothing outside sees it).  Commits
** fail with ENOSPC, are undone, and succeed again once a file is removed.
** In a child; exit 0 when it behaved, 99 when no tmpfs could be mounted. */
static void full_disk_child(void)
{
#ifdef __linux__
    rcp_model *m, *ref = new_model();
    char err[512], big[60000], text[16], filler[200];
    rcp_store *st;
    rcp_store_info in;
    int i, fd, failed = 0;
    if (unshare(CLONE_NEWNS) != 0
        && unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        _exit(99);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0
        || mount("tmpfs", TMP, "tmpfs", 0, "size=256k") != 0)
        _exit(99);
    /* someone else's file takes 100 KiB of the disk */
    snprintf(filler, sizeof filler, "%s/filler", TMP);
    memset(big, 'f', sizeof big);
    if ((fd = open(filler, O_WRONLY | O_CREAT, 0644)) < 0
        || write(fd, big, sizeof big) != (ssize_t)sizeof big
        || write(fd, big, 40000) != 40000 || close(fd) != 0)
        _exit(13);
    m = new_model();
    if (!(st = rcp_store_open(DB, m, err, sizeof err)))
        _exit(10);
    memset(big, 'x', sizeof big);
    for (i = 0; i < 8 && !failed; i++) {
        snprintf(text, sizeof text, "doc%d ", i);
        memcpy(big, text, strlen(text));
        if (rcp_store_add(st, text, strlen(text), big, sizeof big, NULL, 0))
            _exit(11);
        if (rcp_store_commit(st) == 0)
            (void)rcp_model_add(ref, text, strlen(text), big, sizeof big,
                                NULL, 0);
        else
            failed = 1;
    }
    rcp_store_stat(st, &in);
    if (!failed || in.failed || !strstr(rcp_store_error(st), "No space")
        || !same_docs(m, ref) || (long)in.log_bytes != file_size(LOG))
        _exit(12);
    /* room again: the other file goes; the same store writes on */
    if (unlink(filler) != 0)
        _exit(14);
    if (rcp_store_add(st, text, strlen(text), big, sizeof big, NULL, 0)
        || rcp_store_commit(st))
        _exit(15);
    (void)rcp_model_add(ref, text, strlen(text), big, sizeof big, NULL, 0);
    rcp_store_close(st);
    rcp_model_free(m);
    m = new_model();
    if (!(st = rcp_store_open(DB, m, err, sizeof err)) || !same_docs(m, ref))
        _exit(16);
    rcp_store_close(st);
    _exit(0);
#else
    _exit(99);
#endif
}

START_TEST(real_full_disk_fails_cleanly_and_writes_resume_with_room)
{
    pid_t pid = fork();
    int status;
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        full_disk_child();
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    if (WEXITSTATUS(status) == 99) {
        fprintf(stderr, "note: no tmpfs could be mounted here; the real "
                "full disk test did not run (the injected ones did)\n");
        return;
    }
    ck_assert_msg(WEXITSTATUS(status) == 0, "child status %d",
                  WEXITSTATUS(status));
}
END_TEST

/* The Nth allocation fails (Lua's failnext). */
static long FAIL_AT, CALLS;
static void *failing_alloc(void *ud, void *p, size_t n)
{
    (void)ud;
    if (n == 0) {
        free(p);
        return NULL;
    }
    return ++CALLS == FAIL_AT ? NULL : realloc(p, n);
}

START_TEST(out_of_memory_in_a_write_changes_nothing)
{
    rcp_model *m, *m2;
    rcp_store *st = open_ok(DB, &m);
    rcp_store_info in, in2;
    char text[64];
    int rc;
    add(st, "a", "the original text", NULL);
    commit(st);
    for (FAIL_AT = 1;; FAIL_AT++) {
        snprintf(text, sizeof text, "replacement text %ld", FAIL_AT);
        rcp_store_stat(st, &in);
        CALLS = 0;
        rcp_set_allocator(failing_alloc, NULL);
        rc = rcp_store_add(st, "a", 1, text, strlen(text), "{}", 2);
        rcp_set_allocator(NULL, NULL);
        if (rc == 0 && CALLS < FAIL_AT)
            break;
        if (rc == 0)
            continue;   /* the failing call was not on the write's path */
        rcp_store_stat(st, &in2);
        ck_assert_uint_eq(in2.version, in.version);
        ck_assert_uint_eq(in2.pending_bytes, in.pending_bytes);
        ck_assert_int_eq(in2.failed, 0);
    }
    ck_assert_uint_gt(FAIL_AT, 1);
    commit(st);
    rcp_store_close(st);
    st = open_ok(DB, &m2);
    ck_assert(same_docs(m, m2));
    ck_assert_uint_eq(rcp_store_version(st), rcp_model_version(m2));
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(m2);
}
END_TEST

/* MARK: - the directory lock (store.c case G) ---------------------------- */

START_TEST(second_open_of_the_same_dir_fails_with_a_clear_message)
{
    char want[64], b;
    rcp_model *m, *m2;
    rcp_store *st = open_ok(DB, &m);
    const char *e;
    int p[2], status;
    pid_t pid;
    /* this process */
    e = open_fails(DB);
    ck_assert_msg(strstr(e, "in use by process") && strstr(e, "already "
                  "open"), "%s", e);
    /* the failed attempt must not have dropped our lock: another process
    ** still cannot get in */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char err[512];
        rcp_model *mm = new_model();
        /* the registry of open stores is inherited by fork; the lock is
        ** not, so this must fail on the lock itself */
        _exit(rcp_store_open(DB, mm, err, sizeof err) == NULL
              && strstr(err, "belongs to one server") ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    rcp_store_close(st);
    rcp_model_free(m);
    /* another process holds it; kill -9 leaves no stale lock */
    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char err[512];
        rcp_model *mm = new_model();
        if (!rcp_store_open(DB, mm, err, sizeof err))
            _exit(1);
        if (write(p[1], "k", 1) != 1)
            _exit(2);
        for (;;)
            pause();
    }
    ck_assert_int_eq(read(p[0], &b, 1), 1);
    snprintf(want, sizeof want, "in use by process %ld", (long)pid);
    e = open_fails(DB);
    ck_assert_msg(strstr(e, want) != NULL, "%s", e);
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    close(p[0]);
    close(p[1]);
    st = open_ok(DB, &m2);
    rcp_store_close(st);
    rcp_model_free(m2);
}
END_TEST

/* MARK: - JSON Lines bulk load (issue 4, --corpus) ----------------------- */

static const char GOOD[] =
    "\xEF\xBB\xBF{\"id\":\"a\",\"text\":\"alpha document\","
    "\"meta\":{\"lang\":\"en\", \"n\": 1.50}}\n"
    "\n"
    "   \t\n"
    "{\"text\":\"no id here\",\"meta\":null}\r\n"
    "{\"id\":null,\"text\":\"minted too\",\"extra\":[1,2]}\n"
    "{\"id\":\"c\",\"text\":\"gamma\",\"meta\":{}}\n"
    "{\"id\":\"b\",\"text\":\"beta\"}";   /* no final newline */

START_TEST(jsonl_good_file_loads_durably_and_reloads_as_a_no_op)
{
    char path[128], outp[128], err[512], *out;
    rcp_model *m, *m2;
    rcp_store *st = open_ok(DB, &m);
    rcp_model_docview v;
    rcp_store_info in;
    long n, at;
    int fd;
    size_t len;
    uint64_t ver;
    snprintf(path, sizeof path, "%s/corpus.jsonl", TMP);
    snprintf(outp, sizeof outp, "%s/progress", TMP);
    write_file(path, GOOD, sizeof GOOD - 1);
    fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    n = rcp_store_load_jsonl(st, NULL, path, fd, err, sizeof err);
    close(fd);
    ck_assert_msg(n == 5, "%ld: %s", n, err);
    ck_assert_uint_eq(rcp_model_count(m), 5);
    rcp_store_stat(st, &in);
    ck_assert_uint_eq(in.pending_bytes, 0);
    at = rcp_model_find(m, "corpus.jsonl:4", 14);   /* minted from line */
    ck_assert_int_ge(at, 0);
    ck_assert_int_ge(rcp_model_find(m, "corpus.jsonl:5", 14), 0);
    at = rcp_model_find(m, "a", 1);
    ck_assert_int_eq(rcp_model_doc(m, (uint32_t)at, &v), 0);
    ck_assert(v.textlen == 14 && !memcmp(v.text, "alpha document", 14));
    /* serialised as rcp.c serialises index/add meta: compact, number
    ** text kept, so the same document from either path is identical */
    ck_assert(v.metalen == 22
              && !memcmp(v.meta, "{\"lang\":\"en\",\"n\":1.50}", 22));
    at = rcp_model_find(m, "corpus.jsonl:4", 14);
    ck_assert_int_eq(rcp_model_doc(m, (uint32_t)at, &v), 0);
    ck_assert_ptr_null(v.meta);   /* "meta": null is absent */
    out = read_file(outp, &len);
    ck_assert_msg(len > 0 && out[0] == '\r' && out[len - 1] == '\n'
                  && strstr(out, "loaded corpus.jsonl: 5 documents"),
                  "%.*s", (int)len, out);
    free(out);
    ver = rcp_store_version(st);
    ck_assert_uint_eq(rcp_store_load_jsonl(st, m, path, -1, err, sizeof err),
                      5);
    ck_assert_uint_eq(rcp_store_version(st), ver);   /* identical re-load */
    rcp_store_close(st);
    st = open_ok(DB, &m2);
    ck_assert(same_docs(m, m2));
    ck_assert_uint_eq(rcp_store_version(st), ver);
    rcp_store_close(st);
    rcp_model_free(m);
    rcp_model_free(m2);
}
END_TEST

START_TEST(jsonl_without_a_store_loads_into_the_model_only)
{
    char path[128], err[512];
    rcp_model *m = new_model();
    rcp_model_docview v;
    long at;
    snprintf(path, sizeof path, "%s/c.jsonl", TMP);
    write_file(path, GOOD, sizeof GOOD - 1);
    ck_assert_int_eq(rcp_store_load_jsonl(NULL, m, path, -1, err,
                                          sizeof err), 5);
    ck_assert_uint_eq(rcp_model_count(m), 5);
    at = rcp_model_find(m, "b", 1);
    ck_assert_int_eq(rcp_model_doc(m, (uint32_t)at, &v), 0);
    ck_assert(v.textlen == 4 && !memcmp(v.text, "beta", 4));
    ck_assert_int_eq(file_size(DB), -1);
    rcp_model_free(m);
}
END_TEST

/* The loader reads a block at a time (store.c read_line): lines longer
** than a block, lines across a block's end, CRLF, a blank line and a
** last line without its newline all read as they are. */
/* Lines that straddle the loader's 64 KiB read blocks (and a CRLF, a
** blank line, no final newline): doc i is lens[i] letters. */
enum { NBLOCKDOC = 7 };
static const size_t block_lens[NBLOCKDOC] = { 70000, 1, 65500, 131072, 30,
                                              65536, 99 };

static char block_letter(size_t i, size_t j)
{
    return (char)('a' + (i + j / 7) % 26);
}

static void write_blocks_file(const char *path)
{
    char *buf = malloc(400000);
    size_t i, j, n = 0;
    ck_assert_ptr_nonnull(buf);
    for (i = 0; i < NBLOCKDOC; i++) {
        n += (size_t)sprintf(buf + n, "{\"id\":\"x%u\",\"text\":\"",
                             (unsigned)i);
        for (j = 0; j < block_lens[i]; j++)
            buf[n++] = block_letter(i, j);
        n += (size_t)sprintf(buf + n, "\"}%s", i == 2 ? "\r\n\n"
                             : i + 1 < NBLOCKDOC ? "\n" : "");
    }
    write_file(path, buf, n);
    free(buf);
}

static void check_blocks_loaded(const rcp_model *m)
{
    rcp_model_docview v;
    char id[16];
    const char *p;
    size_t i, j;
    long at;
    for (i = 0; i < NBLOCKDOC; i++) {
        snprintf(id, sizeof id, "x%u", (unsigned)i);
        at = rcp_model_find(m, id, strlen(id));
        ck_assert_int_ge(at, 0);
        ck_assert_int_eq(rcp_model_doc(m, (uint32_t)at, &v), 0);
        ck_assert_uint_eq(v.textlen, block_lens[i]);
        for (j = 0, p = v.text; j < block_lens[i]; j++)
            ck_assert_int_eq(p[j], block_letter(i, j));
    }
}

START_TEST(jsonl_lines_across_read_blocks_load_exactly)
{
    char path[128], err[512];
    rcp_model *m = new_model();
    snprintf(path, sizeof path, "%s/blocks.jsonl", TMP);
    write_blocks_file(path);
    ck_assert_int_eq(rcp_store_load_jsonl(NULL, m, path, -1, err,
                                          sizeof err), NBLOCKDOC);
    check_blocks_loaded(m);
    rcp_model_free(m);
}
END_TEST

/* issue 18: the look-ahead sees each run of ahead_n documents' texts, in
** file order, before they are added -- across read blocks, a CRLF and a
** blank line -- and the load is exactly the same as without it. */
static size_t ahead_calls, ahead_seen;
static void record_ahead(void *ud, const char *const *texts,
                         const size_t *lens, size_t n)
{
    const rcp_model *m = ud;
    size_t i, j;
    ck_assert_uint_eq(n, ahead_seen + 3 <= NBLOCKDOC ? 3
                      : NBLOCKDOC - ahead_seen);
    ck_assert_uint_eq(rcp_model_count(m), ahead_seen);  /* not added yet */
    for (i = 0; i < n; i++, ahead_seen++) {
        ck_assert_uint_eq(lens[i], block_lens[ahead_seen]);
        for (j = 0; j < lens[i]; j++)
            ck_assert_int_eq(texts[i][j], block_letter(ahead_seen, j));
    }
    ahead_calls++;
}

START_TEST(jsonl_look_ahead_sees_each_run_in_order_and_loads_exactly)
{
    rcp_store_load_opts o;
    char path[128], err[512];
    rcp_model *m = new_model();
    snprintf(path, sizeof path, "%s/blocks.jsonl", TMP);
    write_blocks_file(path);
    memset(&o, 0, sizeof o);
    o.progress_fd = -1;
    o.ahead = record_ahead;
    o.ahead_ud = m;
    o.ahead_n = 3;
    ahead_calls = ahead_seen = 0;
    ck_assert_int_eq(rcp_store_load(NULL, m, path, &o, err, sizeof err),
                     NBLOCKDOC);
    ck_assert_uint_eq(ahead_calls, 3);
    ck_assert_uint_eq(ahead_seen, NBLOCKDOC);
    check_blocks_loaded(m);
    rcp_model_free(m);
}
END_TEST

START_TEST(jsonl_document_over_a_cap_is_reported_and_loads_nothing)
{
    /* index/add's caps hold for a corpus, so every loaded document can be
    ** re-added and deleted by a client (issue 8 item 8) */
    char path[128], err[512], want[256], line[1024];
    rcp_model *m = new_model();
    FILE *f;
    snprintf(path, sizeof path, "%s/long.jsonl", TMP);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    memset(line, 'i', RCP_MAX_ID_BYTES + 1);
    line[RCP_MAX_ID_BYTES + 1] = 0;
    fprintf(f, "{\"text\":\"fine\"}\n{\"id\":\"%s\",\"text\":\"t\"}\n", line);
    fclose(f);
    ck_assert_int_eq(rcp_store_load_jsonl(NULL, m, path, -1, err,
                                          sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: \"id\" is %u bytes; the limit is %u",
             path, RCP_MAX_ID_BYTES + 1, RCP_MAX_ID_BYTES);
    ck_assert_str_eq(err, want);
    ck_assert_uint_eq(rcp_model_count(m), 0);
    rcp_model_free(m);
}
END_TEST

/* issue 12: --corpus checks meta against the declared fields, as
** index/add does: FILE:LINE names the line and the field, nothing loads. */
START_TEST(jsonl_meta_that_does_not_fit_a_declared_field_is_reported)
{
    static const rcp_field year = { "year", 4, RCP_FIELD_INT };
    rcp_store_load_opts o;
    char path[128], err[512];
    rcp_model *m = new_model();
    snprintf(path, sizeof path, "%s/f.jsonl", TMP);
    write_file(path, "{\"text\":\"a\",\"meta\":{\"year\":1}}\n"
               "{\"text\":\"b\",\"meta\":{\"year\":\"1999\"}}\n", 67);
    memset(&o, 0, sizeof o);
    o.fields = &year;
    o.nfields = 1;
    o.progress_fd = -1;
    ck_assert_int_eq(rcp_store_load(NULL, m, path, &o, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "f.jsonl:2: meta.year must be a number"),
                  "%s", err);
    ck_assert_uint_eq(rcp_model_count(m), 0);
    o.nfields = 0;                              /* undeclared: data */
    ck_assert_int_eq(rcp_store_load(NULL, m, path, &o, err, sizeof err), 2);
    rcp_model_free(m);
}
END_TEST

START_TEST(jsonl_bad_line_is_reported_with_its_number_and_loads_nothing)
{
    static const char *const bad[][2] = {
        { "{\"text\":\"ok\",}", "invalid JSON at column 14" },
        { "{\"id\":\"x\"}", "\"text\" is missing" },
        { "{\"text\":42}", "\"text\" must be a string" },
        { "{\"text\":\"t\",\"id\":7}", "\"id\" must be a string" },
        { "{\"text\":\"t\",\"meta\":[1]}", "\"meta\" must be an object" },
        { "[\"text\"]", "not a JSON object" },
        { "{\"text\":\"a\0b\"}", "invalid JSON" },
    };
    char path[128], err[512], want[256], file[512];
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    size_t i, n;
    uint64_t size;
    add(st, "keep", "already here", NULL);
    commit(st);
    size = log_bytes(st);
    snprintf(path, sizeof path, "%s/bad.jsonl", TMP);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = (size_t)snprintf(file, sizeof file, "{\"id\":\"1\",\"text\":\"one"
                             "\"}\n{\"text\":\"two\"}\n\n{\"id\":\"3\",\"text"
                             "\":\"three\"}\n");
        memcpy(file + n, bad[i][0], strlen(bad[i][0]) + (i == 6 ? 4 : 0));
        n += strlen(bad[i][0]) + (i == 6 ? 4 : 0);
        n += (size_t)snprintf(file + n, sizeof file - n, "\n{\"text\":\"six"
                              "\"}\n");
        write_file(path, file, n);
        ck_assert_int_eq(rcp_store_load_jsonl(st, NULL, path, -1, err,
                                              sizeof err), -1);
        snprintf(want, sizeof want, "%s:5: %s", path, bad[i][1]);
        ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
        ck_assert_uint_eq(rcp_model_count(m), 1);
        ck_assert_uint_eq(rcp_store_version(st), 1);
        ck_assert_uint_eq(log_bytes(st), size);
    }
    snprintf(path, sizeof path, "%s/missing.jsonl", TMP);
    ck_assert_int_eq(rcp_store_load_jsonl(st, NULL, path, -1, err,
                                          sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "missing.jsonl: No such file"));
    rcp_store_close(st);
    rcp_model_free(m);
}
END_TEST

/* MARK: - suite ---------------------------------------------------------- */

/* MARK: - side files (the §7.17 memories) ------------------------------- */

/* A side file is replaced whole: the new bytes, or (after a failed write
** or fsync) the old ones, never a mix; it survives a reopen; names that
** could touch the log or the lock are refused; the log is untouched. */
START_TEST(side_file_is_replaced_whole_or_not_at_all_and_survives_reopen)
{
    rcp_model *m;
    rcp_store *st = open_ok(DB, &m);
    char *data, path[256];
    size_t n;
    uint64_t log0;
    add(st, "a", "a document", NULL);
    commit(st);
    log0 = log_bytes(st);
    ck_assert_int_eq(rcp_store_get_file(st, "memories.json", &data, &n), 1);
    ck_assert_ptr_null(data);
    ck_assert_int_eq(rcp_store_put_file(st, "memories.json", "{\"v\":1}", 7),
                     0);
    ck_assert_int_eq(rcp_store_get_file(st, "memories.json", &data, &n), 0);
    ck_assert_uint_eq(n, 7);
    ck_assert_str_eq(data, "{\"v\":1}");
    rcp_free(data);
    /* a failed write, then a failed fsync: the old bytes stay */
    FAULT_OP = "write";
    FAULT_ERRNO = ENOSPC;
    rcp_store_set_fault(fault, NULL);
    ck_assert_int_eq(rcp_store_put_file(st, "memories.json", "{\"v\":22}", 8),
                     -1);
    FAULT_OP = "fsync";
    FAULT_ERRNO = EIO;
    ck_assert_int_eq(rcp_store_put_file(st, "memories.json", "{\"v\":33}", 8),
                     -1);
    rcp_store_set_fault(NULL, NULL);
    ck_assert_msg(strstr(rcp_store_error(st), "memories.json") != NULL, "%s",
                  rcp_store_error(st));
    ck_assert_int_eq(rcp_store_get_file(st, "memories.json", &data, &n), 0);
    ck_assert_str_eq(data, "{\"v\":1}");
    rcp_free(data);
    snprintf(path, sizeof path, "%s/memories.json.new", DB);
    ck_assert_int_ne(access(path, F_OK), 0);        /* no leftover */
    /* names that are not side files */
    ck_assert_int_eq(rcp_store_put_file(st, "rcp.log", "x", 1), -1);
    ck_assert_int_eq(rcp_store_put_file(st, "lock", "x", 1), -1);
    ck_assert_int_eq(rcp_store_put_file(st, "../x", "x", 1), -1);
    ck_assert_int_eq(rcp_store_put_file(st, "a.new", "x", 1), -1);
    ck_assert_int_eq(rcp_store_put_file(st, "", "x", 1), -1);
    ck_assert_int_eq(rcp_store_get_file(st, "a/b", &data, &n), -1);
    ck_assert_uint_eq(log_bytes(st), log0);         /* the log untouched */
    ck_assert_int_eq(rcp_store_put_file(st, "memories.json", "{\"v\":4}", 7),
                     0);
    rcp_store_close(st);
    rcp_model_free(m);
    st = open_ok(DB, &m);
    ck_assert_uint_eq(rcp_model_count(m), 1);
    ck_assert_int_eq(rcp_store_get_file(st, "memories.json", &data, &n), 0);
    ck_assert_str_eq(data, "{\"v\":4}");
    rcp_free(data);
    rcp_store_close(st);
    rcp_model_free(m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("store");
    TCase *rt = tcase_create("round-trip");
    TCase *dmg = tcase_create("damage");
    TCase *cmp = tcase_create("compaction");
    TCase *crash = tcase_create("crash");
    TCase *lock = tcase_create("lock");
    TCase *jl = tcase_create("jsonl");
    TCase *all[] = { rt, dmg, cmp, crash, lock, jl };
    size_t i;
    for (i = 0; i < sizeof all / sizeof all[0]; i++) {
        tcase_add_unchecked_fixture(all[i], base_setup, base_teardown);
        tcase_add_checked_fixture(all[i], setup, teardown);
        tcase_set_timeout(all[i], 300);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(rt,
        round_trip_add_delete_reopen_gives_same_documents_and_version);
    tcase_add_test(rt,
        identical_readd_neither_grows_the_log_nor_bumps_the_version);
    tcase_add_test(rt,
        restart_serves_same_results_before_and_after_compaction);
    tcase_add_test(rt, stopword_only_queries_serve_the_same_after_replay);
    tcase_add_test(rt, model_changed_behind_the_store_is_refused);
    tcase_add_test(rt,
        the_learned_embedder_comes_back_the_same_after_a_restart);
    tcase_add_test(rt,
        side_file_is_replaced_whole_or_not_at_all_and_survives_reopen);
    tcase_add_test(rt,
        open_rejects_a_non_empty_model_and_a_file_for_a_directory);
    tcase_add_test(dmg,
        torn_tail_at_every_byte_of_the_last_commit_reopens_previous_state);
    tcase_add_test(dmg, garbage_after_the_last_commit_is_dropped);
    tcase_add_test(dmg,
        mid_file_corruption_is_reported_and_the_file_left_alone);
    tcase_add_test(dmg, valid_frames_with_bad_contents_or_format_are_reported);
    tcase_add_test(dmg, frame_bytes_inside_a_torn_text_are_not_taken_for_data);
    tcase_add_test(dmg,
        damaged_last_commit_is_reported_with_its_documents_and_kept);
    tcase_add_test(dmg, damage_before_valid_commits_is_refused_unless_salvaged);
    tcase_add_test(cmp, compaction_keeps_every_document_and_the_version);
    tcase_add_test(cmp, chunk_links_are_stored_replayed_and_compacted);
    tcase_add_test(cmp,
                   a_format_1_log_opens_with_meta_as_data_and_is_upgraded);
    tcase_add_test(cmp, a_format_2_log_opens_and_is_upgraded_to_format_3);
    tcase_add_test(cmp, log_records_the_field_schema_and_the_embedder);
    tcase_add_test(cmp, document_origins_are_stored_replayed_and_compacted);
    tcase_add_test(cmp,
        crash_between_compaction_write_and_rename_leaves_a_store_that_opens);
    tcase_add_test(crash,
        kill_9_at_a_random_moment_loses_no_acknowledged_write);
    tcase_add_test(crash,
        failed_commit_is_undone_and_disk_keeps_acknowledged_ones);
    tcase_add_test(crash,
        failed_write_without_room_is_undone_and_later_writes_succeed);
    tcase_add_test(crash,
        failed_fsync_is_undone_and_the_store_refuses_until_reopened);
    tcase_add_test(crash,
        real_full_disk_fails_cleanly_and_writes_resume_with_room);
    tcase_add_test(crash, out_of_memory_in_a_write_changes_nothing);
    tcase_add_test(lock,
        second_open_of_the_same_dir_fails_with_a_clear_message);
    tcase_add_test(jl, jsonl_good_file_loads_durably_and_reloads_as_a_no_op);
    tcase_add_test(jl, jsonl_without_a_store_loads_into_the_model_only);
    tcase_add_test(jl, jsonl_lines_across_read_blocks_load_exactly);
    tcase_add_test(jl,
        jsonl_look_ahead_sees_each_run_in_order_and_loads_exactly);
    tcase_add_test(jl, jsonl_document_over_a_cap_is_reported_and_loads_nothing);
    tcase_add_test(jl,
        jsonl_bad_line_is_reported_with_its_number_and_loads_nothing);
    tcase_add_test(jl,
        jsonl_meta_that_does_not_fit_a_declared_field_is_reported);
    return s;
}

TEST_MAIN(make_suite)
