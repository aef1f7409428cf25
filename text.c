/*
** text.c -- text analysis for rcp: one tokenizer for every stage (the
** index, the embedders, the rerankers, server-side chunking): UTF-8
** decoding, character classes, case folding, English stopwords, the
** Porter stemmer, the tokenizer and the §7.10 chunker.
**
** NOTES ON THE DESIGN
**
**  1. One tokenizer feeds everything, so a term means the same thing in
**     every stage.  model.c never splits text into words or folds it: it
**     calls rcp_tokenize, or (its indexing fast path) runs this file's
**     scanner, text_scan, with sinks of its own that must derive what
**     rcp_tokenize would (model.c, note 12).  The few pieces it shares
**     are in rcp.h's INTERNAL block.
**  2. Every text is (ptr, len) bytes of valid UTF-8 (the JSON layer
**     validated it, §4.6); a stray invalid byte decodes to U+FFFD and only
**     separates words, never trusted.
**  3. Folding covers ASCII, Latin-1, Latin Extended-A, Latin Extended
**     Additional, Greek, Cyrillic and fullwidth ASCII (simple folding; ß
**     and ẞ give "ss"); letters of every other script are word characters
**     kept as they are.  CJK runs become overlapping character bigrams.
**  4. Stopwords (English) and the Porter stemmer (1980 paper, lower-case
**     ASCII words only) are switchable (RCP_TOK_*); a dropped stopword
**     still takes its position, so proximity measures real distance.
**  5. A chunk counts tokens as rcp_tokenize counts them with no flags, so
**     the §7.10 chunk size does not depend on the index's settings.
**  6. The §15.2 injection screen normalises through the same folding
**     (plus look-alikes, diacritics and separators) before it matches.
**  7. No I/O and no state between calls.  Allocation goes only through
**     rcp_realloc/rcp_free; every failure is -1 and leaves nothing behind
**     that the caller's free would not release.
*/
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

/* MARK: - UTF-8 and character classes ------------------------------------- */

/* Decode one code point at s[*i..n); advance *i.  An invalid sequence
** yields U+FFFD and consumes one byte (§4.6 says input is valid; this is
** the belt to that brace). */
uint32_t text_utf8_next(const unsigned char *s, size_t n, size_t *i)
{
    uint32_t c = s[*i], need, k, min;
    if (c < 0x80) {
        (*i)++;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF) { need = 1; c &= 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; c &= 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; c &= 0x07; min = 0x10000; }
    else { (*i)++; return 0xFFFD; }
    if (*i + need >= n) {
        (*i)++;
        return 0xFFFD;
    }
    for (k = 1; k <= need; k++) {
        if ((s[*i + k] & 0xC0) != 0x80) {
            (*i)++;
            return 0xFFFD;
        }
        c = (c << 6) | (s[*i + k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
        (*i)++;
        return 0xFFFD;
    }
    *i += need + 1;
    return c;
}

static size_t utf8_put(char *out, uint32_t c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Han, kana, Hangul (syllables and jamo), their compatibility and
** half-width forms: scripts written without spaces, indexed as bigrams. */
static int is_cjk(uint32_t c)
{
    return (c >= 0x1100 && c <= 0x11FF) || (c >= 0x3005 && c <= 0x3007)
        || (c >= 0x3041 && c <= 0x30FA) || (c >= 0x30FC && c <= 0x30FF)
        || (c >= 0x3131 && c <= 0x318E) || (c >= 0x31F0 && c <= 0x31FF)
        || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF)
        || (c >= 0xA960 && c <= 0xA97F) || (c >= 0xAC00 && c <= 0xD7FF)
        || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFF66 && c <= 0xFFDC)
        || (c >= 0x20000 && c <= 0x3134F);
}

/* Punctuation, symbols, spaces and controls: the blocks that never hold
** letters or digits.  Everything else above ASCII (any script's letters,
** combining marks) is part of a word, so no script is assumed away. */
static int is_sep_nonascii(uint32_t c)
{
    if (c < 0xC0)
        return c != 0xAA && c != 0xB5 && c != 0xBA;
    return c == 0xD7 || c == 0xF7 || c == 0x037E || c == 0x0387
        || (c >= 0x055A && c <= 0x055F) || c == 0x0589
        || c == 0x05BE || c == 0x05C0 || c == 0x05C3 || c == 0x05F3
        || c == 0x05F4 || (c >= 0x060C && c <= 0x060D) || c == 0x061B
        || c == 0x061F || (c >= 0x066A && c <= 0x066D) || c == 0x06D4
        || c == 0x0964 || c == 0x0965 || c == 0x0E2F || c == 0x0E5A
        || c == 0x0E5B || c == 0x1680 || c == 0x180E
        || (c >= 0x2000 && c <= 0x206F) || (c >= 0x20A0 && c <= 0x20CF)
        || (c >= 0x2190 && c <= 0x2BFF) || (c >= 0x2E00 && c <= 0x2E7F)
        || (c >= 0x3000 && c <= 0x3004) || (c >= 0x3008 && c <= 0x3020)
        || c == 0x3030 || c == 0x303D || c == 0x30FB
        || (c >= 0xD800 && c <= 0xDFFF) || (c >= 0xE000 && c <= 0xF8FF)
        || (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xFE10 && c <= 0xFE1F)
        || (c >= 0xFE30 && c <= 0xFE6F) || c == 0xFEFF
        || (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20)
        || (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65)
        || (c >= 0xFFF0 && c <= 0xFFFF) || (c >= 0x1F000 && c <= 0x1FAFF)
        || (c >= 0xE0000);
}

static int char_class(uint32_t c)
{
    if (c < 0x80) {
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
            || (c >= 'A' && c <= 'Z'))
            return TEXT_CC_WORD;
        return TEXT_CC_SEP;
    }
    if (is_cjk(c))
        return TEXT_CC_CJK;
    return is_sep_nonascii(c) ? TEXT_CC_SEP : TEXT_CC_WORD;
}

/* MARK: - Case folding ---------------------------------------------------- */

/* Latin Extended-A (U+0100-017F): pairs, upper case first, except where
** the block shifts parity (0139-0148, 0179-017E) and a few singletons. */
static uint32_t fold_latin_ext_a(uint32_t c)
{
    if (c == 0x0130)
        return 'i';             /* İ: the simple folding, dot dropped */
    if (c == 0x0178)
        return 0x00FF;          /* Ÿ -> ÿ */
    if (c == 0x017F)
        return 's';             /* long s */
    if ((c >= 0x0139 && c <= 0x0148) || (c >= 0x0179 && c <= 0x017E))
        return (c & 1) ? c + 1 : c;
    if (c == 0x0131 || c == 0x0138 || c == 0x0149)
        return c;               /* no case partner */
    return (c & 1) ? c : c + 1;
}

static uint32_t fold_greek(uint32_t c)
{
    if (c >= 0x0391 && c <= 0x03AB && c != 0x03A2)
        return c + 0x20;
    if (c == 0x0386)
        return 0x03AC;
    if (c >= 0x0388 && c <= 0x038A)
        return c + 0x25;
    if (c == 0x038C)
        return 0x03CC;
    if (c == 0x038E || c == 0x038F)
        return c + 0x3F;
    if (c == 0x03C2)
        return 0x03C3;          /* final sigma folds to sigma */
    if (c >= 0x03D8 && c <= 0x03EF)
        return (c & 1) ? c : c + 1;
    return c;
}

static uint32_t fold_cyrillic(uint32_t c)
{
    if (c >= 0x0410 && c <= 0x042F)
        return c + 0x20;
    if (c >= 0x0400 && c <= 0x040F)
        return c + 0x50;
    if (c == 0x04C0)
        return 0x04CF;
    if (c >= 0x04C1 && c <= 0x04CE)
        return (c & 1) ? c + 1 : c;
    if ((c >= 0x0460 && c <= 0x0481) || (c >= 0x048A && c <= 0x04BF)
        || (c >= 0x04D0 && c <= 0x052F))
        return (c & 1) ? c : c + 1;
    return c;
}

/* Simple case folding of one code point; ß and ẞ fold to "ss" (two code
** points, written to out[0..1]).  Returns the number of code points. */
static int fold_cp(uint32_t c, uint32_t out[2])
{
    out[0] = c;
    if (c < 0x80) {
        if (c >= 'A' && c <= 'Z')
            out[0] = c + 32;
    } else if (c < 0x100) {
        if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
            out[0] = c + 32;
        else if (c == 0xDF)
            return out[0] = out[1] = 's', 2;
    } else if (c < 0x180) {
        out[0] = fold_latin_ext_a(c);
    } else if (c >= 0x0370 && c < 0x0400) {
        out[0] = fold_greek(c);
    } else if (c >= 0x0400 && c < 0x0530) {
        out[0] = fold_cyrillic(c);
    } else if (c >= 0x1E00 && c <= 0x1EFF) {
        if (c == 0x1E9E)
            return out[0] = out[1] = 's', 2;
        if (c < 0x1E96 || c >= 0x1EA0)
            out[0] = (c & 1) ? c : c + 1;
    } else if (c >= 0xFF21 && c <= 0xFF3A) {
        out[0] = c - 0xFF21 + 'a';   /* fullwidth forms fold to ASCII */
    } else if (c >= 0xFF41 && c <= 0xFF5A) {
        out[0] = c - 0xFF41 + 'a';
    } else if (c >= 0xFF10 && c <= 0xFF19) {
        out[0] = c - 0xFF10 + '0';
    }
    return 1;
}

/* MARK: - English stopwords ----------------------------------------------- */

/* English stopwords: NLTK's English list as first published (the 127
** words of nltk_data corpora/stopwords/english before contractions were
** added to it) -- function words only, so no content word ("help",
** "hello") is ever dropped (issue 12).  Sorted, so lookup is a binary
** search. */
static const char *const stopwords[] = {
    "a", "about", "above", "after", "again", "against", "all", "am", "an",
    "and", "any", "are", "as", "at", "be", "because", "been", "before",
    "being", "below", "between", "both", "but", "by", "can", "did", "do",
    "does", "doing", "don", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers",
    "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no",
    "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other",
    "our", "ours", "ourselves", "out", "over", "own", "s", "same", "she",
    "should", "so", "some", "such", "t", "than", "that", "the", "their",
    "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "very", "was",
    "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "you", "your", "yours", "yourself", "yourselves"
};

/* Binary search of a sorted list of C strings for w[0..n). */
int text_in_list(const char *const *list, size_t count, const char *w,
                 size_t n)
{
    size_t lo = 0, hi = count;
    if (n == 0)
        return 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2, sl;
        int c = (unsigned char)w[0] - (unsigned char)list[mid][0];
        if (c == 0) {           /* most probes differ at the first byte */
            sl = strlen(list[mid]);
            c = memcmp(w, list[mid], n < sl ? n : sl);
            if (c == 0)
                c = n < sl ? -1 : n > sl ? 1 : 0;
        }
        if (c == 0)
            return 1;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 0;
}

int rcp_stopword(const char *w, size_t n)
{
    return text_in_list(stopwords, sizeof stopwords / sizeof stopwords[0],
                        w, n);
}

/* MARK: - Porter stemmer -------------------------------------------------- */

/* M.F. Porter, "An algorithm for suffix stripping", Program 14(3) 130-137,
** 1980: the published rules exactly (ABLI -> ABLE in step 2, no LOGI rule;
** the later "Porter2" departures are not taken).  Words of one or two
** letters are left alone, as in Porter's own implementation.  b[0..k] is
** the word, j the end of the stem a suffix test left behind. */
typedef struct stemmer {
    char *b;
    int k, j;
} stemmer;

static int cons(const stemmer *z, int i)
{
    switch (z->b[i]) {
    case 'a': case 'e': case 'i': case 'o': case 'u':
        return 0;
    case 'y':
        return i == 0 ? 1 : !cons(z, i - 1);
    default:
        return 1;
    }
}

/* m, the number of VC sequences in b[0..j]: [C](VC)^m[V]. */
static int measure(const stemmer *z)
{
    int n = 0, i = 0;
    while (i <= z->j && cons(z, i))
        i++;
    for (;;) {
        while (i <= z->j && !cons(z, i))
            i++;
        if (i > z->j)
            return n;
        while (i <= z->j && cons(z, i))
            i++;
        n++;
    }
}

static int vowel_in_stem(const stemmer *z)
{
    int i;
    for (i = 0; i <= z->j; i++)
        if (!cons(z, i))
            return 1;
    return 0;
}

static int double_cons(const stemmer *z, int i)
{
    return i >= 1 && z->b[i] == z->b[i - 1] && cons(z, i);
}

/* *o: the stem ends cvc, the second c not w, x or y. */
static int cvc(const stemmer *z, int i)
{
    char ch;
    if (i < 2 || !cons(z, i) || cons(z, i - 1) || !cons(z, i - 2))
        return 0;
    ch = z->b[i];
    return ch != 'w' && ch != 'x' && ch != 'y';
}

/* Does b[0..k] end with s[0..len)?  Sets j to the stem's end if so.  The
** last letter is tested first: most suffix tests fail right there. */
static int ends_n(stemmer *z, const char *s, int len)
{
    if (len > z->k + 1 || z->b[z->k] != s[len - 1]
        || memcmp(z->b + z->k - len + 1, s, (size_t)len))
        return 0;
    z->j = z->k - len;
    return 1;
}

#define ends(z, lit) ends_n((z), (lit), (int)sizeof(lit) - 1)

static void setto(stemmer *z, const char *s)
{
    int len = (int)strlen(s);
    memcpy(z->b + z->j + 1, s, (size_t)len);
    z->k = z->j + len;
}

static void replace_m0(stemmer *z, const char *s)
{
    if (measure(z) > 0)
        setto(z, s);
}

static void step1ab(stemmer *z)
{
    if (z->b[z->k] == 's') {
        if (ends(z, "sses"))
            z->k -= 2;
        else if (ends(z, "ies"))
            setto(z, "i");
        else if (z->b[z->k - 1] != 's')
            z->k--;
    }
    if (ends(z, "eed")) {
        if (measure(z) > 0)
            z->k--;
    } else if ((ends(z, "ed") || ends(z, "ing")) && vowel_in_stem(z)) {
        z->k = z->j;
        if (ends(z, "at"))
            setto(z, "ate");
        else if (ends(z, "bl"))
            setto(z, "ble");
        else if (ends(z, "iz"))
            setto(z, "ize");
        else if (double_cons(z, z->k)) {
            char ch = z->b[z->k - 1];
            if (ch != 'l' && ch != 's' && ch != 'z')
                z->k--;
        } else if (measure(z) == 1 && cvc(z, z->k))
            setto(z, "e");
    }
}

static void step1c(stemmer *z)
{
    if (ends(z, "y") && vowel_in_stem(z))
        z->b[z->k] = 'i';
}

/* A rule table: suffix -> replacement, grouped by the letter the switch
** in Porter's code keys on; the first suffix that matches is the longest
** and is the only one tried, whether or not its condition holds. */
typedef struct rule {
    const char *suf;
    int         len;
    const char *rep;
} rule;

#define R(suf, rep) {suf, (int)sizeof(suf) - 1, rep}

static const rule step2_rules[] = {
    R("ational", "ate"), R("tional", "tion"), R("enci", "ence"),
    R("anci", "ance"), R("izer", "ize"), R("abli", "able"), R("alli", "al"),
    R("entli", "ent"), R("eli", "e"), R("ousli", "ous"), R("ization", "ize"),
    R("ation", "ate"), R("ator", "ate"), R("alism", "al"), R("iveness", "ive"),
    R("fulness", "ful"), R("ousness", "ous"), R("aliti", "al"),
    R("iviti", "ive"), R("biliti", "ble"), {NULL, 0, NULL}
};

static const rule step3_rules[] = {
    R("icate", "ic"), R("ative", ""), R("alize", "al"), R("iciti", "ic"),
    R("ical", "ic"), R("ful", ""), R("ness", ""), {NULL, 0, NULL}
};

/* Longest first within each shared ending, as Porter's switch orders. */
static const rule step4_rules[] = {
    R("al", ""), R("ance", ""), R("ence", ""), R("er", ""), R("ic", ""),
    R("able", ""), R("ible", ""), R("ant", ""), R("ement", ""),
    R("ment", ""), R("ent", ""), R("ion", ""), R("ou", ""), R("ism", ""),
    R("ate", ""), R("iti", ""), R("ous", ""), R("ive", ""), R("ize", ""),
    {NULL, 0, NULL}
};

/* The longest suffix of the table that b ends with, or -1; j set. */
static int longest_rule(stemmer *z, const rule *r)
{
    int i, best = -1;
    for (i = 0; r[i].suf; i++)
        if ((best < 0 || r[i].len > r[best].len)
            && ends_n(z, r[i].suf, r[i].len))
            best = i;
    if (best >= 0)
        ends_n(z, r[best].suf, r[best].len);
    return best;
}

static void apply_rules(stemmer *z, const rule *r)
{
    int best = longest_rule(z, r);
    if (best >= 0)
        replace_m0(z, r[best].rep);
}

static void step4(stemmer *z)
{
    int best = longest_rule(z, step4_rules);
    if (best < 0)
        return;
    if (!strcmp(step4_rules[best].suf, "ion")
        && (z->j < 0 || (z->b[z->j] != 's' && z->b[z->j] != 't')))
        return;
    if (measure(z) > 1)
        z->k = z->j;
}

static void step5(stemmer *z)
{
    z->j = z->k;
    if (z->b[z->k] == 'e') {
        int a = measure(z);
        if (a > 1 || (a == 1 && !cvc(z, z->k - 1)))
            z->k--;
    }
    if (z->b[z->k] == 'l' && double_cons(z, z->k)) {
        z->j = z->k;
        if (measure(z) > 1)
            z->k--;
    }
}

size_t rcp_stem_porter(char *w, size_t n)
{
    stemmer z;
    size_t i;
    if (n <= 2 || n > 64)
        return n;
    for (i = 0; i < n; i++)
        if (w[i] < 'a' || w[i] > 'z')
            return n;           /* English rules: lower-case ASCII only */
    z.b = w;
    z.k = (int)n - 1;
    z.j = 0;
    step1ab(&z);
    if (z.k > 0) {
        step1c(&z);
        apply_rules(&z, step2_rules);
        apply_rules(&z, step3_rules);
        step4(&z);
        step5(&z);
    }
    return (size_t)z.k + 1;
}

/* MARK: - Tokenizer ------------------------------------------------------- */

void rcp_tokens_init(rcp_tokens *t)
{
    memset(t, 0, sizeof *t);
}

void rcp_tokens_free(rcp_tokens *t)
{
    rcp_free(t->v);
    rcp_free(t->buf);
    memset(t, 0, sizeof *t);
}

/* Append n bytes to the token text buffer; their offset in *off. */
static int tok_bytes(rcp_tokens *t, const char *s, size_t n, uint32_t *off)
{
    if (t->len + n > UINT32_MAX
        || grow((void **)&t->buf, &t->bcap, t->len + n, 1))
        return -1;
    memcpy(t->buf + t->len, s, n);
    *off = (uint32_t)t->len;
    t->len += n;
    return 0;
}

/* The one place a token is made, for every sink: the term is stored
** apart whenever its bytes differ from the word's -- a stem as long as
** its word may still differ (study -> studi), so comparing lengths
** alone would give the word for its stem. */
int text_push_token(rcp_tokens *t, int cc, const char *w, size_t n,
                    const char *term, size_t tn, uint32_t pos,
                    uint32_t start, uint32_t end)
{
    rcp_token tk;
    tk.pos = pos;
    tk.start = start;
    tk.end = end;
    tk.kind = cc == TEXT_CC_CJK ? RCP_TOKEN_CJK
            : text_is_digits(w, n) ? RCP_TOKEN_NUM : RCP_TOKEN_WORD;
    if (tok_bytes(t, w, n, &tk.word))
        return -1;
    tk.wlen = (uint32_t)n;
    tk.term = tk.word;
    tk.tlen = (uint32_t)tn;
    if ((tn != n || memcmp(term, w, n) != 0)
        && tok_bytes(t, term, tn, &tk.term))
        return -1;
    if (grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v))
        return -1;
    t->v[t->n++] = tk;
    return 0;
}

int text_is_ascii_alpha(const char *w, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (w[i] < 'a' || w[i] > 'z')
            return 0;
    return 1;
}

int text_is_digits(const char *w, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (w[i] < '0' || w[i] > '9')
            return 0;
    return 1;
}

/* ASCII letters and digits, letters lower-cased; 0 for the rest. */
static const unsigned char ascii_fold[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 0, 0, 0, 0, 0, 0,
    0, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 0, 0, 0, 0, 0,
    0, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 0, 0, 0, 0, 0
};

/* The same without folding. */
static const unsigned char ascii_keep[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 0, 0, 0, 0, 0, 0,
    0, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
    80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 0, 0, 0, 0, 0,
    0, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 0, 0, 0, 0, 0
};

static int ascii_word(unsigned c)
{
    return ascii_fold[c] != 0;
}

/* Scan one run of word characters starting at *i, folded into w; ASCII
** (most text) takes the short way, with exactly the long way's result. */
static int scan_word(const unsigned char *s, size_t len, size_t *i,
                     unsigned flags, text_sink f, void *ctx)
{
    char w[TEXT_MAX_WORD_BYTES + 16];
    size_t n = 0, start = *i, p = *i;   /* p local: w may alias *i */
    int fold = (flags & RCP_TOK_FOLD) != 0;
    const unsigned char *map = fold ? ascii_fold : ascii_keep;
    while (p < len) {
        size_t at = p;
        uint32_t c = s[p], fc[2];
        int k, nf;
        if (c < 0x80) {
            unsigned a = map[c];
            if (!a)
                break;
            p++;
            w[n] = (char)a;             /* kept while n + 4 <= the max */
            n += n + 4 <= TEXT_MAX_WORD_BYTES;
            continue;
        }
        c = text_utf8_next(s, len, &p);
        if (char_class(c) != TEXT_CC_WORD) {
            p = at;
            break;
        }
        nf = fold ? fold_cp(c, fc) : (fc[0] = c, 1);
        for (k = 0; k < nf; k++)
            if (n + 4 <= TEXT_MAX_WORD_BYTES)
                n += utf8_put(w + n, fc[k]);
    }
    *i = p;
    memset(w + n, 0, 16);
    return f(ctx, TEXT_CC_WORD, w, n, (uint32_t)start, (uint32_t)p);
}

/* A run of CJK characters becomes its overlapping bigrams (a lone
** character stays a unigram): the standard answer for scripts written
** without spaces, recall of a dictionary segmenter without one. */
static int scan_cjk(const unsigned char *s, size_t len, size_t *i,
                    text_sink f, void *ctx)
{
    size_t prev = *i, cur, nxt;
    int count = 0;
    text_utf8_next(s, len, i);
    cur = *i;
    for (;;) {
        size_t at = *i;
        uint32_t c;
        if (at >= len)
            break;
        c = text_utf8_next(s, len, i);
        if (char_class(c) != TEXT_CC_CJK) {
            *i = at;
            break;
        }
        nxt = *i;
        if (f(ctx, TEXT_CC_CJK, (const char *)s + prev, nxt - prev,
              (uint32_t)prev, (uint32_t)nxt))
            return -1;
        count++;
        prev = cur;
        cur = nxt;
    }
    return count ? 0 : f(ctx, TEXT_CC_CJK, (const char *)s + prev,
                         cur - prev, (uint32_t)prev, (uint32_t)cur);
}

/* Every word and CJK pair of text[0..len), in order, to f. */
int text_scan(const char *text, size_t len, unsigned flags,
              text_sink f, void *ctx)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    if (len >= UINT32_MAX)
        return -1;
    while (i < len) {
        size_t at = i;
        int cc;
        if (s[i] < 0x80 && !ascii_word(s[i])) {
            i++;                        /* ASCII space and punctuation */
            continue;
        }
        cc = char_class(text_utf8_next(s, len, &i));
        if (cc == TEXT_CC_SEP)
            continue;
        i = at;
        if (cc == TEXT_CC_WORD ? scan_word(s, len, &i, flags, f, ctx)
                               : scan_cjk(s, len, &i, f, ctx))
            return -1;
    }
    return 0;
}

/* rcp_tokenize's sink.  A stopword is dropped (its position still
** counts, so proximity measures real distance); a word is stored folded
** and, when stemming changed it, with its stem. */
int text_emit_token(void *ctx, int cc, const char *w, size_t n,
                    uint32_t start, uint32_t end)
{
    text_tok_ctx *c = ctx;
    char st[TEXT_MAX_WORD_BYTES + 8];
    size_t sn = n;
    uint32_t pos = c->pos++;
    int alpha = cc == TEXT_CC_WORD && text_is_ascii_alpha(w, n);
    if (alpha && (c->flags & RCP_TOK_STOP) && rcp_stopword(w, n))
        return 0;
    memcpy(st, w, n);
    if (alpha && (c->flags & RCP_TOK_STEM))
        sn = rcp_stem_porter(st, n);
    return text_push_token(c->t, cc, w, n, st, sn, pos, start, end);
}

int rcp_tokenize(rcp_tokens *out, const char *text, size_t len,
                 unsigned flags)
{
    text_tok_ctx c;
    out->n = 0;
    out->len = 0;
    c.t = out;
    c.flags = flags;
    c.pos = 0;
    return text_scan(text, len, flags, text_emit_token, &c);
}

/* MARK: - §15.2 injection screen ------------------------------------------ */

/* A heuristic screen for instructions planted in content (§15.2: "ignore
** previous instructions..."), advisory only: a passage it passes is not
** thereby safe, and one it flags may be benign.  Both the text and the
** cues go through one normalisation before they are compared, so the
** usual disguises meet the cue in the same form:
**   - case folding (fold_cp), Latin diacritics stripped (é -> e);
**   - compatibility look-alikes: fullwidth forms, mathematical
**     alphanumerics (U+1D400-1D7FF), enclosed and squared letters, the
**     Cyrillic and Greek letters that look Latin (а е о р с у х і ...),
**     and the usual digit-for-letter swaps (0 1 3 4 5 7 @ $);
**   - everything that is not a letter or digit -- spaces, zero-width and
**     format characters, combining marks, punctuation -- removed, so
**     "i g n o r e", "ig\u200bnore" and "i.g.n.o.r.e" all read "ignore".
** A cue is a sequence of slots, each a set of alternatives ("?" makes a
** slot optional); the phrasings covered are English, German, French,
** Spanish, Russian and Chinese (README, Reliability, measures it).  The
** cues are normalised like the text, once per screen (text_screen_new),
** so a Cyrillic cue folds its Latin-looking letters exactly as the text
** does.  Screening allocates nothing: the text is normalised into a
** window that keeps its tail, longer than any match, when it moves on. */
#define SCREEN_SLOTS  6
#define SCREEN_WIN    4096u     /* normalised bytes matched at a time */
#define SCREEN_KEEP   512u      /* carried into the next window */
#define SCREEN_POOL   8192u     /* the normalised cues */
static const char *const screen_cues[][SCREEN_SLOTS + 1] = {
    /* en: ignore all previous instructions */
    {
        "ignore|disregard|forget|skip|override|bypass|neglect|discard"
        "|drop",
        "?all|any|every",
        "?of",
        "?the|your|my|these|those|its",
        "previous|prior|above|earlier|preceding|former|foregoing|past"
        "|original|initial|existing|system",
        "instruction|direction|prompt|rule|message|context|guidance"
        "|command|order|guideline|directive|constraint",
        NULL },
    /* en: disregard everything above */
    {
        "ignore|disregard|forget",
        "everything|anything|all",
        "?that|you were|you have been|you've been",
        "above|before|said|told|given",
        NULL },
    /* en: you are now ... */
    {
        "you are now|you're now|from now on you are"
        "|you will now act as",
        NULL },
    /* en: new instructions */
    {
        "new|updated|revised",
        "instructions|system prompt",
        NULL },
    /* en: reveal your system prompt */
    {
        "reveal|print|show|repeat|output|leak|display|tell me"
        "|disclose",
        "?me",
        "?your|the",
        "system|hidden|initial|original|secret",
        "prompt|instruction",
        NULL },
    /* en: do not tell the user */
    {
        "do not|don't|never",
        "tell|inform|alert|mention this to",
        "the user",
        NULL },
    /* en: jailbreak */
    {
        "developer mode|jailbreak|jailbroken|dan mode|do anything now",
        NULL },
    /* de: ignoriere alle vorherigen Anweisungen */
    {
        "ignoriere|ignoriert|ignorieren sie|vergiss|vergesst"
        "|vergessen sie|missachte|missachten sie"
        "|\xC3\xBC" "berspringe",
        "?alle|s\xC3\xA4mtliche|jegliche",
        "?deine|ihre|die|eure",
        "vorherigen|vorigen|bisherigen|obigen|fr\xC3\xBCheren"
        "|vorangegangenen|vorstehenden|urspr\xC3\xBCnglichen",
        "anweisung|instruktion|befehl|regel|vorgabe|anordnung",
        NULL },
    /* de: du bist jetzt ... */
    {
        "du bist jetzt|du bist nun|ab jetzt bist du"
        "|von nun an bist du",
        NULL },
    /* fr: ignorez les instructions précédentes */
    {
        "ignore|ignorez|ignorer|oublie|oubliez|oublier"
        "|ne tiens pas compte des|ne tenez pas compte des"
        "|fais abstraction des",
        "?toutes|tous",
        "?les|des|vos|tes|ces",
        "instruction|consigne|r\xC3\xA8gle|directive|indication|ordre",
        "?s",
        "pr\xC3\xA9" "c\xC3\xA9" "dent|ant\xC3\xA9rieur|ci-dessus"
        "|plus haut|d'origine|initial",
        NULL },
    /* fr: tu es maintenant ... */
    {
        "tu es maintenant|tu es d\xC3\xA9sormais"
        "|vous \xC3\xAAtes maintenant"
        "|vous \xC3\xAAtes d\xC3\xA9sormais"
        "|\xC3\xA0 partir de maintenant tu es",
        NULL },
    /* es: ignora las instrucciones anteriores */
    {
        "ignora|ignore|ignorad|ignoren|ignorar|olvida|olvide|olvidad"
        "|olviden|descarta|omite",
        "?todas|todos",
        "?las|los|tus|sus",
        "instrucci\xC3\xB3n|instruccion|indicaci\xC3\xB3n|indicacion"
        "|orden|regla|directriz|directiva",
        "?es|s",
        "anterior|previa|precedente|de arriba|original|inicial",
        NULL },
    /* es: ahora eres ... */
    {
        "ahora eres|a partir de ahora eres|desde ahora eres",
        NULL },
    /* ru: ignore previous instructions */
    {
        "\xD0\xB8\xD0\xB3\xD0\xBD\xD0\xBE\xD1\x80\xD0\xB8\xD1\x80\xD1\x83"
        "\xD0\xB9"
        "|\xD0\xB8\xD0\xB3\xD0\xBD\xD0\xBE\xD1\x80\xD0\xB8\xD1\x80\xD1\x83"
        "\xD0\xB9\xD1\x82\xD0\xB5"
        "|\xD0\xBF\xD1\x80\xD0\xBE\xD0\xB8\xD0\xB3\xD0\xBD\xD0\xBE\xD1\x80"
        "\xD0\xB8\xD1\x80\xD1\x83\xD0\xB9"
        "|\xD0\xBF\xD1\x80\xD0\xBE\xD0\xB8\xD0\xB3\xD0\xBD\xD0\xBE\xD1\x80"
        "\xD0\xB8\xD1\x80\xD1\x83\xD0\xB9\xD1\x82\xD0\xB5"
        "|\xD0\xB7\xD0\xB0\xD0\xB1\xD1\x83\xD0\xB4\xD1\x8C"
        "|\xD0\xB7\xD0\xB0\xD0\xB1\xD1\x83\xD0\xB4\xD1\x8C\xD1\x82\xD0\xB5"
        "|\xD0\xBE\xD1\x82\xD0\xB1\xD1\x80\xD0\xBE\xD1\x81\xD1\x8C"
        "|\xD0\xBE\xD1\x82\xD0\xB1\xD1\x80\xD0\xBE\xD1\x81\xD1\x8C\xD1\x82"
        "\xD0\xB5"
        "|\xD0\xBD\xD0\xB5 \xD0\xBE\xD0\xB1\xD1\x80\xD0\xB0\xD1\x89\xD0\xB0"
        "\xD0\xB9 \xD0\xB2\xD0\xBD\xD0\xB8\xD0\xBC\xD0\xB0\xD0\xBD\xD0\xB8"
        "\xD1\x8F \xD0\xBD\xD0\xB0"
        "|\xD0\xBD\xD0\xB5 \xD0\xBE\xD0\xB1\xD1\x80\xD0\xB0\xD1\x89\xD0\xB0"
        "\xD0\xB9\xD1\x82\xD0\xB5 \xD0\xB2\xD0\xBD\xD0\xB8\xD0\xBC\xD0\xB0"
        "\xD0\xBD\xD0\xB8\xD1\x8F \xD0\xBD\xD0\xB0",
        "?\xD0\xB2\xD1\x81\xD0\xB5|\xD0\xB2\xD1\x81\xD1\x91"
        "|\xD0\xBB\xD1\x8E\xD0\xB1\xD1\x8B\xD0\xB5",
        "?\xD1\x82\xD0\xB2\xD0\xBE\xD0\xB8"
        "|\xD0\xB2\xD0\xB0\xD1\x88\xD0\xB8"
        "|\xD1\x81\xD0\xB2\xD0\xBE\xD0\xB8",
        "\xD0\xBF\xD1\x80\xD0\xB5\xD0\xB4\xD1\x8B\xD0\xB4\xD1\x83\xD1\x89"
        "\xD0\xB8\xD0\xB5"
        "|\xD0\xBF\xD1\x80\xD0\xB5\xD0\xB6\xD0\xBD\xD0\xB8\xD0\xB5"
        "|\xD0\xBF\xD1\x80\xD0\xB5\xD0\xB4\xD1\x88\xD0\xB5\xD1\x81\xD1\x82"
        "\xD0\xB2\xD1\x83\xD1\x8E\xD1\x89\xD0\xB8\xD0\xB5"
        "|\xD0\xB2\xD1\x8B\xD1\x88\xD0\xB5\xD1\x83\xD0\xBA\xD0\xB0\xD0\xB7"
        "\xD0\xB0\xD0\xBD\xD0\xBD\xD1\x8B\xD0\xB5"
        "|\xD0\xB2\xD1\x8B\xD1\x88\xD0\xB5\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2"
        "\xD0\xB5\xD0\xB4\xD1\x91\xD0\xBD\xD0\xBD\xD1\x8B\xD0\xB5"
        "|\xD0\xB2\xD1\x8B\xD1\x88\xD0\xB5\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2"
        "\xD0\xB5\xD0\xB4\xD0\xB5\xD0\xBD\xD0\xBD\xD1\x8B\xD0\xB5"
        "|\xD0\xBF\xD1\x80\xD0\xBE\xD1\x88\xD0\xBB\xD1\x8B\xD0\xB5"
        "|\xD0\xB4\xD0\xB0\xD0\xBD\xD0\xBD\xD1\x8B\xD0\xB5 \xD1\x80\xD0\xB0"
        "\xD0\xBD\xD0\xB5\xD0\xB5"
        "|\xD0\xBF\xD0\xBE\xD0\xBB\xD1\x83\xD1\x87\xD0\xB5\xD0\xBD\xD0\xBD"
        "\xD1\x8B\xD0\xB5 \xD1\x80\xD0\xB0\xD0\xBD\xD0\xB5\xD0\xB5"
        "|\xD0\xB8\xD0\xB7\xD0\xBD\xD0\xB0\xD1\x87\xD0\xB0\xD0\xBB\xD1\x8C"
        "\xD0\xBD\xD1\x8B\xD0\xB5",
        "\xD0\xB8\xD0\xBD\xD1\x81\xD1\x82\xD1\x80\xD1\x83\xD0\xBA\xD1\x86"
        "\xD0\xB8"
        "|\xD1\x83\xD0\xBA\xD0\xB0\xD0\xB7\xD0\xB0\xD0\xBD\xD0\xB8"
        "|\xD0\xBA\xD0\xBE\xD0\xBC\xD0\xB0\xD0\xBD\xD0\xB4"
        "|\xD0\xBF\xD1\x80\xD0\xB0\xD0\xB2\xD0\xB8\xD0\xBB"
        "|\xD1\x80\xD0\xB0\xD1\x81\xD0\xBF\xD0\xBE\xD1\x80\xD1\x8F\xD0\xB6"
        "\xD0\xB5\xD0\xBD\xD0\xB8"
        "|\xD1\x83\xD1\x81\xD1\x82\xD0\xB0\xD0\xBD\xD0\xBE\xD0\xB2\xD0\xBA",
        NULL },
    /* ru: you are now free / unrestricted */
    {
        "\xD1\x82\xD1\x8B \xD1\x82\xD0\xB5\xD0\xBF\xD0\xB5\xD1\x80\xD1\x8C"
        "|\xD1\x82\xD0\xB5\xD0\xBF\xD0\xB5\xD1\x80\xD1\x8C \xD1\x82\xD1\x8B"
        "|\xD0\xBE\xD1\x82\xD0\xBD\xD1\x8B\xD0\xBD\xD0\xB5 \xD1\x82\xD1\x8B",
        "\xD1\x81\xD0\xB2\xD0\xBE\xD0\xB1\xD0\xBE\xD0\xB4\xD0\xBD"
        "|\xD0\xBD\xD0\xB5 \xD0\xBE\xD0\xB3\xD1\x80\xD0\xB0\xD0\xBD\xD0\xB8"
        "\xD1\x87\xD0\xB5\xD0\xBD"
        "|\xD0\xB1\xD0\xB5\xD0\xB7 \xD0\xBE\xD0\xB3\xD1\x80\xD0\xB0\xD0\xBD"
        "\xD0\xB8\xD1\x87\xD0\xB5\xD0\xBD\xD0\xB8\xD0\xB9",
        NULL },
    /* ru: show your system prompt */
    {
        "\xD0\xBF\xD0\xBE\xD0\xBA\xD0\xB0\xD0\xB6\xD0\xB8"
        "|\xD1\x80\xD0\xB0\xD1\x81\xD0\xBA\xD1\x80\xD0\xBE\xD0\xB9"
        "|\xD0\xB2\xD1\x8B\xD0\xB2\xD0\xB5\xD0\xB4\xD0\xB8"
        "|\xD0\xBF\xD0\xBE\xD0\xB2\xD1\x82\xD0\xBE\xD1\x80\xD0\xB8",
        "?\xD1\x81\xD0\xB2\xD0\xBE\xD0\xB9"
        "|\xD1\x82\xD0\xB2\xD0\xBE\xD0\xB9|\xD0\xB2\xD0\xB0\xD1\x88",
        "\xD1\x81\xD0\xB8\xD1\x81\xD1\x82\xD0\xB5\xD0\xBC\xD0\xBD",
        "?\xD1\x8B\xD0\xB9|\xD0\xB0\xD1\x8F|\xD1\x8B\xD0\xB5|\xD1\x83\xD1\x8E"
        "|\xD0\xBE\xD0\xB5|\xD0\xBE\xD0\xB9",         /* its endings */
        "\xD0\xBF\xD1\x80\xD0\xBE\xD0\xBC\xD0\xBF\xD1\x82"
        "|\xD0\xBF\xD0\xBE\xD0\xB4\xD1\x81\xD0\xBA\xD0\xB0\xD0\xB7\xD0\xBA"
        "|\xD0\xB8\xD0\xBD\xD1\x81\xD1\x82\xD1\x80\xD1\x83\xD0\xBA\xD1\x86"
        "\xD0\xB8",
        NULL },
    /* zh: ignore all the above instructions */
    {
        "\xE5\xBF\xBD\xE7\x95\xA5|\xE6\x97\xA0\xE8\xA7\x86"
        "|\xE5\xBF\x98\xE8\xAE\xB0|\xE5\xBF\xBD\xE8\xA7\x86"
        "|\xE4\xB8\x8D\xE8\xA6\x81\xE7\x90\x86\xE4\xBC\x9A"
        "|\xE4\xB8\x8D\xE8\xA6\x81\xE7\x90\x86\xE7\x9D\xAC",
        "?\xE6\x89\x80\xE6\x9C\x89|\xE5\x85\xA8\xE9\x83\xA8"
        "|\xE4\xB8\x80\xE5\x88\x87",
        "?\xE4\xB9\x8B\xE5\x89\x8D|\xE4\xBB\xA5\xE5\x89\x8D"
        "|\xE5\x85\x88\xE5\x89\x8D|\xE4\xB8\x8A\xE9\x9D\xA2"
        "|\xE4\xB8\x8A\xE8\xBF\xB0|\xE4\xBB\xA5\xE4\xB8\x8A"
        "|\xE5\x89\x8D\xE9\x9D\xA2",
        "?\xE7\x9A\x84|\xE6\x89\x80",
        "?\xE6\x89\x80\xE6\x9C\x89|\xE5\x85\xA8\xE9\x83\xA8"
        "|\xE4\xB8\x80\xE5\x88\x87",
        "\xE6\x8C\x87\xE4\xBB\xA4|\xE6\x8C\x87\xE7\xA4\xBA"
        "|\xE8\xAF\xB4\xE6\x98\x8E|\xE8\xA7\x84\xE5\x88\x99"
        "|\xE6\x8F\x90\xE7\xA4\xBA|\xE8\xA6\x81\xE6\xB1\x82"
        "|\xE5\x91\xBD\xE4\xBB\xA4",
        NULL },
    /* zh: reveal your system prompt */
    {
        "\xE6\x98\xBE\xE7\xA4\xBA|\xE6\xB3\x84\xE9\x9C\xB2"
        "|\xE8\xBE\x93\xE5\x87\xBA|\xE9\x87\x8D\xE5\xA4\x8D"
        "|\xE5\x91\x8A\xE8\xAF\x89\xE6\x88\x91",
        "?\xE4\xBD\xA0\xE7\x9A\x84",
        "\xE7\xB3\xBB\xE7\xBB\x9F\xE6\x8F\x90\xE7\xA4\xBA"
        "|\xE7\xB3\xBB\xE7\xBB\x9F\xE6\x8C\x87\xE4\xBB\xA4"
        "|\xE5\x88\x9D\xE5\xA7\x8B\xE6\x8C\x87\xE4\xBB\xA4",
        NULL },
};
#define SCREEN_NCUES (sizeof screen_cues / sizeof screen_cues[0])

/* Latin-1 Supplement to Latin Extended-B (U+00C0-024F) without their
** diacritics ('.' = no Latin base letter). */
static const char latin_base[] =
    "aaaaaa.ceeeeiiii.nooooo..uuuuy..aaaaaa.ceeeeiiii.nooooo..uuuuy.y"
    "aaaaaaccccccccdd..eeeeeeeeeegggggggghh..iiiiiiiii...jjkk.llllll."
    "...nnnnnn...oooooo..rrrrrrsssssssstttt..uuuuuuuuuuuuwwyyyzzzzzz."
    "................................oo.............uu..............."
    ".............aaiioouuuuuuuuuu.aaaa....ggkkoooo..j...gg..nnaa...."
    "aaaaeeeeiiiioooorrrruuuusstt..hh......aaeeooooooooyy............"
    "................";

/* Cyrillic and Greek letters that pass for Latin ones, lower case (the
** upper-case ones fold to these first; Greek capitals that look unlike
** their small letters come first). */
static const uint32_t look_from[] = {
    0x0397, 0x039C, 0x039D, 0x03A5,
    0x0430, 0x0432, 0x0435, 0x0451, 0x043A, 0x043C, 0x043D, 0x043E, 0x0440,
    0x0441, 0x0442, 0x0443, 0x0445, 0x0456, 0x0458, 0x0455, 0x0501, 0x04BB,
    0x03B1, 0x03B2, 0x03B5, 0x03B7, 0x03B9, 0x03BA, 0x03BD, 0x03BF, 0x03C1,
    0x03C4, 0x03C5, 0x03C7, 0x03B6, 0x03B3, 0x03BC
};
static const char look_to[] =
    "hmny"
    "abeekmhopctyxijsdh"
    "abeniivopptuxzyu";

/* One code point as the screen reads it into out[0..return): 0 when it
** is dropped (not a letter or digit). */
static int screen_fold(uint32_t c, uint32_t out[2])
{
    static const char leet[] = "oi.eas.t";   /* 0 1 3 4 5 7; . keeps */
    int n, i;
    size_t k;
    if (c < 0x80) {
        if (c >= '0' && c <= '7' && leet[c - '0'] != '.')
            c = (uint32_t)leet[c - '0'];
        else if (c == '@' || c == '$')
            c = c == '@' ? 'a' : 's';
        if (char_class(c) != TEXT_CC_WORD)
            return 0;
    } else if ((c >= 0x0300 && c <= 0x036F) || c == 0x00AD || c == 0x034F
               || (c >= 0x200B && c <= 0x200F) || (c >= 0x2060 && c <= 0x2064)
               || c == 0x180E || c == 0xFEFF || (c >= 0xFE00 && c <= 0xFE0F)
               || (c >= 0xE0000 && c <= 0xE007F)) {
        return 0;                       /* marks, zero-width, format */
    } else if (c >= 0x1D400 && c <= 0x1D6A3) {
        c = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
            [(c - 0x1D400) % 52];       /* mathematical letters */
    } else if (c >= 0x1D7CE && c <= 0x1D7FF) {
        c = '0' + (c - 0x1D7CE) % 10;   /* mathematical digits */
    } else if (c >= 0x249C && c <= 0x24E9) {
        c = 'a' + (c - (c >= 0x24D0 ? 0x24D0 : c >= 0x24B6 ? 0x24B6
                                                          : 0x249C));
    } else if (c >= 0x1F130 && c <= 0x1F189) {
        c = 'a' + (c - 0x1F130) % 26;   /* squared, negative circled */
    } else if (char_class(c) == TEXT_CC_SEP) {
        return 0;
    }
    for (k = 0; k < 4; k++)             /* capitals unlike their small */
        if (c == look_from[k])
            return out[0] = (uint32_t)look_to[k], 1;
    n = fold_cp(c, out);
    for (i = 0; i < n; i++) {
        c = out[i];
        if (c >= 'A' && c <= 'Z')
            out[i] = c + 32;
        else if (c >= 0xC0 && c <= 0x24F && latin_base[c - 0xC0] != '.')
            out[i] = (uint32_t)latin_base[c - 0xC0];
        else
            for (k = 4; k < sizeof look_from / sizeof *look_from; k++)
                if (c == look_from[k])
                    out[i] = (uint32_t)look_to[k];
    }
    return n;
}

/* The length of an HTML-like tag at p[0..n) ("<b>", "</span>", "<a
** href=x>": up to 32 bytes of ASCII, no '<' inside), else 0: markup
** between the words of a cue is not text. */
static size_t tag_len(const unsigned char *p, size_t n)
{
    size_t i;
    unsigned c = n > 1 ? (p[1] | 0x20u) : 0;
    if (n < 3 || p[0] != '<' || !((c >= 'a' && c <= 'z') || p[1] == '/'))
        return 0;
    for (i = 1; i < n && i < 32; i++) {
        if (p[i] == '>')
            return i + 1;
        if (p[i] == '<' || p[i] >= 0x80 || p[i] < 0x20)
            return 0;
    }
    return 0;
}

/* s[0..n) normalised onto out at *len (room for 8 more bytes kept). */
static void screen_norm(const char *s, size_t n, unsigned char *out,
                        size_t *len, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t f[2];
    size_t i = 0, t;
    int k, j;
    while (i < n && *len + 8 <= cap) {
        if (p[i] == '<' && (t = tag_len(p + i, n - i)) != 0) {
            i += t;
            continue;
        }
        k = screen_fold(text_utf8_next(p, n, &i), f);
        for (j = 0; j < k; j++)
            *len += utf8_put((char *)out + *len, f[j]);
    }
}

/* The cues normalised: each slot's alternatives joined by '|' (which no
** normalised text holds), slot k of cue q at off[q][k]. */
struct text_screen {
    unsigned char pool[SCREEN_POOL];
    uint16_t off[SCREEN_NCUES][SCREEN_SLOTS + 1];
    unsigned char opt[SCREEN_NCUES][SCREEN_SLOTS];
    unsigned char nslots[SCREEN_NCUES];
    uint32_t first[256];        /* cues whose first slot starts so */
};

static void screen_build(text_screen *t)
{
    size_t q, k, len = 0, a, b;
    memset(t->first, 0, sizeof t->first);
    for (q = 0; q < SCREEN_NCUES; q++) {
        for (k = 0; screen_cues[q][k]; k++) {
            const char *s = screen_cues[q][k];
            t->opt[q][k] = *s == '?';
            s += *s == '?';
            t->off[q][k] = (uint16_t)len;
            for (a = 0; ; a = b + 1) {
                for (b = a; s[b] && s[b] != '|'; b++)
                    ;
                screen_norm(s + a, b - a, t->pool, &len, sizeof t->pool);
                if (!s[b])
                    break;
                t->pool[len++] = '|';
            }
        }
        t->off[q][k] = (uint16_t)len;
        t->nslots[q] = (unsigned char)k;
        for (a = t->off[q][0]; a < t->off[q][1]; a++)   /* slot 0 */
            if (a == t->off[q][0] || t->pool[a - 1] == '|')
                t->first[t->pool[a]] |= 1u << q;
    }
}

/* Does cue q match at p[0..n) from slot k on? */
static int screen_match(const text_screen *t, size_t q, size_t k,
                        const unsigned char *p, size_t n)
{
    const unsigned char *s, *end;
    size_t a;
    if (k == t->nslots[q])
        return 1;
    s = t->pool + t->off[q][k];
    end = t->pool + t->off[q][k + 1];
    while (s < end) {
        for (a = 0; s + a < end && s[a] != '|'; a++)
            ;
        if (a <= n && memcmp(s, p, a) == 0
            && screen_match(t, q, k + 1, p + a, n - a))
            return 1;
        s += a + 1;
    }
    return t->opt[q][k] && screen_match(t, q, k + 1, p, n);
}

static int screen_window(const text_screen *t, const unsigned char *w,
                         size_t n)
{
    size_t i, q;
    uint32_t m;
    for (i = 0; i < n; i++)
        for (m = t->first[w[i]], q = 0; m; m >>= 1, q++)
            if ((m & 1) && screen_match(t, q, 0, w + i, n - i))
                return 1;
    return 0;
}

text_screen *text_screen_new(void)
{
    text_screen *t = rcp_malloc(sizeof *t);
    if (t)
        screen_build(t);
    return t;
}

int text_screen_hit(const text_screen *t, const char *text, size_t len)
{
    unsigned char w[SCREEN_WIN + SCREEN_KEEP + 64];
    size_t n = 0, at = 0, step;
    while (at < len) {
        /* at most SCREEN_WIN / 2 input bytes at a time: a code point
        ** never yields more than twice its bytes (ß: 2 -> "ss") */
        step = len - at < SCREEN_WIN / 2 ? len - at : SCREEN_WIN / 2;
        while (step < len - at && ((unsigned char)text[at + step] & 0xC0)
                                  == 0x80)
            step++;                     /* whole code points only */
        screen_norm(text + at, step, w, &n, sizeof w);
        at += step;
        if (screen_window(t, w, n))
            return 1;
        if (n > SCREEN_KEEP) {
            memmove(w, w + n - SCREEN_KEEP, SCREEN_KEEP);
            n = SCREEN_KEEP;
        }
    }
    return 0;
}

int rcp_text_injection(const char *text, size_t len)
{
    text_screen *t = text_screen_new();
    int r = t ? text_screen_hit(t, text, len) : -1;
    rcp_free(t);
    return r;
}

/* MARK: - Chunking (§7.10 "chunk") ---------------------------------------- */

/* Does a sentence end between byte a and byte b (the gap between two
** tokens)?  . ! ? and their CJK full-width forms, or a blank line. */
static int sentence_gap(const char *s, size_t a, size_t b)
{
    size_t i;
    int nl = 0;
    for (i = a; i < b; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.' || c == '!' || c == '?')
            return 1;
        if (c == '\n' && ++nl == 2)
            return 1;
        if (c == 0xE3 && i + 2 < b && (unsigned char)s[i + 1] == 0x80
            && (unsigned char)s[i + 2] == 0x82)
            return 1;                               /* 。 */
        if (c == 0xEF && i + 2 < b && (unsigned char)s[i + 1] == 0xBC
            && ((unsigned char)s[i + 2] == 0x81
                || (unsigned char)s[i + 2] == 0x9F))
            return 1;                               /* ！ ？ */
    }
    return 0;
}

/* Where the chunk starting at token s ends (exclusive): max tokens on,
** pulled back to the last sentence end in its second half if any. */
static size_t chunk_end(const rcp_tokens *t, const char *text, size_t len,
                        size_t s, size_t max)
{
    size_t e = s + max, i;
    if (e >= t->n)
        return t->n;
    for (i = e; i > s + max / 2; i--) {
        size_t gap_end = i < t->n ? t->v[i].start : len;
        if (sentence_gap(text, t->v[i - 1].end, gap_end))
            return i;
    }
    return e;
}

static int push_span(rcp_span **v, size_t *n, size_t *cap, size_t a,
                     size_t b)
{
    if (grow((void **)v, cap, *n + 1, sizeof **v))
        return -1;
    (*v)[*n].start = a;
    (*v)[(*n)++].end = b;
    return 0;
}

int rcp_text_chunk(const char *text, size_t len, size_t max_tokens,
                   size_t overlap, rcp_span **spans, size_t *n)
{
    rcp_tokens t;
    size_t cap = 0, s = 0, e;
    int rc = 0;
    *spans = NULL;
    *n = 0;
    if (max_tokens == 0)
        return -1;
    if (overlap >= max_tokens)
        overlap = max_tokens - 1;
    rcp_tokens_init(&t);
    if (rcp_tokenize(&t, text, len, 0)) {
        rcp_tokens_free(&t);
        return -1;
    }
    if (t.n == 0)
        rc = push_span(spans, n, &cap, 0, len);
    while (rc == 0 && s < t.n) {
        e = chunk_end(&t, text, len, s, max_tokens);
        /* a chunk runs to the next one's first token (or the text's end),
        ** so its closing punctuation stays with it */
        rc = push_span(spans, n, &cap, s ? t.v[s].start : 0,
                       e < t.n ? t.v[e].start : len);
        if (e >= t.n)
            break;
        /* e - s > overlap, not e - overlap > s: the subtraction wraps
        ** when overlap > e (overlap past half a chunk cut at a
        ** sentence), and the next chunk must start past s */
        s = e - s > overlap ? e - overlap : e;
    }
    rcp_tokens_free(&t);
    if (rc) {
        rcp_free(*spans);
        *spans = NULL;
        *n = 0;
    }
    return rc;
}
