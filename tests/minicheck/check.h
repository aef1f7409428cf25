/*
** minicheck/check.h -- the subset of the Check API that tests/test_vec.c
** and tests/test_json.c use, in plain C99, for targets where Check is not
** installed: the cross builds run them under qemu with
** `-Itests/minicheck` (make vec-cross-check, make json-cross-check).
** Tests run in one process, in order, each between its test case's
** checked fixtures; a failed assertion prints file:line and longjmps to
** the next test.  Not a general replacement: no fork, no timeouts.
*/
#ifndef RCP_MINICHECK_H
#define RCP_MINICHECK_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MC_MAX_TESTS  128
#define MC_MAX_TCASES 16

typedef void (*mc_fn)(void);
typedef struct TCase {
    mc_fn       fn[MC_MAX_TESTS];
    const char *name[MC_MAX_TESTS];
    int         n;
    mc_fn       setup, teardown;
} TCase;
typedef struct Suite {
    TCase *tc[MC_MAX_TCASES];
    int    ntc;
    const char *name;
} Suite;
typedef struct SRunner {
    Suite *s;
    int    failed;
} SRunner;
enum { CK_NORMAL };

static jmp_buf mc_jump;

static void mc_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    longjmp(mc_jump, 1);
}

#define START_TEST(name) static void name(void)
#define END_TEST

#define ck_assert_msg(c, ...) \
    do { if (!(c)) mc_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define ck_assert(c) ck_assert_msg(c, "assertion '%s' failed", #c)
#define ck_abort_msg(...) mc_fail(__FILE__, __LINE__, __VA_ARGS__)
#define MC_CMP(T, a, op, b) \
    ck_assert_msg((T)(a) op (T)(b), "'%s %s %s' failed", #a, #op, #b)
#define ck_assert_int_eq(a, b)  MC_CMP(intmax_t, a, ==, b)
#define ck_assert_uint_eq(a, b) MC_CMP(uintmax_t, a, ==, b)
#define ck_assert_uint_ge(a, b) MC_CMP(uintmax_t, a, >=, b)
#define ck_assert_uint_gt(a, b) MC_CMP(uintmax_t, a, >, b)
#define ck_assert_uint_le(a, b) MC_CMP(uintmax_t, a, <=, b)
#define ck_assert_uint_lt(a, b) MC_CMP(uintmax_t, a, <, b)
#define ck_assert_int_ge(a, b)  MC_CMP(intmax_t, a, >=, b)
#define ck_assert_int_gt(a, b)  MC_CMP(intmax_t, a, >, b)
#define ck_assert_float_eq(a, b) MC_CMP(long double, a, ==, b)
#define ck_assert_float_le(a, b) MC_CMP(long double, a, <=, b)
#define ck_assert_float_eq_tol(a, b, t) \
    ck_assert_msg(fabsl((long double)(a) - (long double)(b)) <= (t), \
                  "'%s == %s' within %s failed", #a, #b, #t)
#define ck_assert_ptr_nonnull(p) ck_assert_msg((p) != NULL, "%s is NULL", #p)
#define ck_assert_ptr_null(p) ck_assert_msg((p) == NULL, "%s is not NULL", #p)
#define ck_assert_ptr_eq(a, b) \
    ck_assert_msg((const void *)(a) == (const void *)(b), "'%s == %s' failed", \
                  #a, #b)
#define ck_assert_str_eq(a, b) \
    ck_assert_msg(strcmp((a), (b)) == 0, "'%s' != '%s'", (a), (b))
#define ck_assert_str_ne(a, b) \
    ck_assert_msg(strcmp((a), (b)) != 0, "'%s' == '%s'", (a), (b))

static Suite *suite_create(const char *name)
{
    static Suite s;
    s.name = name;
    return &s;
}

static TCase *tcase_create(const char *name)
{
    static TCase pool[MC_MAX_TCASES];
    static int used;
    (void)name;
    return used < MC_MAX_TCASES ? &pool[used++] : &pool[MC_MAX_TCASES - 1];
}

#define tcase_add_checked_fixture(tc, s, t) \
    ((tc)->setup = (s), (tc)->teardown = (t))

static void tcase_set_timeout(TCase *tc, double t)
{
    (void)tc;
    (void)t;
}

static void mc_add(TCase *tc, mc_fn fn, const char *name)
{
    if (tc->n < MC_MAX_TESTS) {
        tc->fn[tc->n] = fn;
        tc->name[tc->n++] = name;
    }
}
#define tcase_add_test(tc, t) mc_add((tc), (t), #t)

static void suite_add_tcase(Suite *s, TCase *tc)
{
    if (s->ntc < MC_MAX_TCASES)
        s->tc[s->ntc++] = tc;
}

static SRunner *srunner_create(Suite *s)
{
    static SRunner sr;
    sr.s = s;
    return &sr;
}

/* 1 when fn failed; nothing of the caller's lives across the longjmp. */
static int mc_run1(mc_fn fn)
{
    if (setjmp(mc_jump) != 0)
        return 1;
    fn();
    return 0;
}

static void srunner_run_all(SRunner *sr, int mode)
{
    int c, i, total = 0;
    (void)mode;
    for (c = 0; c < sr->s->ntc; c++) {
        TCase *tc = sr->s->tc[c];
        for (i = 0; i < tc->n; i++, total++) {
            if (tc->setup)
                tc->setup();
            sr->failed += mc_run1(tc->fn[i]);
            if (tc->teardown)
                tc->teardown();
        }
    }
    printf("%s: %d tests, %d failed\n", sr->s->name, total, sr->failed);
}

static int srunner_ntests_failed(SRunner *sr)
{
    return sr->failed;
}

static void srunner_free(SRunner *sr)
{
    (void)sr;
}

#endif
