/*
** minicheck/check.h -- the subset of the Check API that tests/test_vec.c
** uses, in plain C99, for targets where Check is not installed: the
** aarch64 cross build runs test_vec under qemu with
** `-Itests/minicheck` (make vec-cross-check).  Tests run in one process,
** in order; a failed assertion prints file:line and longjmps to the next
** test.  Not a general replacement: no fork, no timeouts, no fixtures.
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

#define MC_MAX_TESTS 128

typedef void (*mc_fn)(void);
typedef struct TCase {
    mc_fn       fn[MC_MAX_TESTS];
    const char *name[MC_MAX_TESTS];
    int         n;
} TCase;
typedef struct Suite {
    TCase *tc;
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
#define MC_CMP(T, a, op, b) \
    ck_assert_msg((T)(a) op (T)(b), "'%s %s %s' failed", #a, #op, #b)
#define ck_assert_int_eq(a, b)  MC_CMP(intmax_t, a, ==, b)
#define ck_assert_uint_eq(a, b) MC_CMP(uintmax_t, a, ==, b)
#define ck_assert_uint_ge(a, b) MC_CMP(uintmax_t, a, >=, b)
#define ck_assert_uint_gt(a, b) MC_CMP(uintmax_t, a, >, b)
#define ck_assert_float_eq(a, b) MC_CMP(long double, a, ==, b)
#define ck_assert_float_le(a, b) MC_CMP(long double, a, <=, b)
#define ck_assert_float_eq_tol(a, b, t) \
    ck_assert_msg(fabsl((long double)(a) - (long double)(b)) <= (t), \
                  "'%s == %s' within %s failed", #a, #b, #t)
#define ck_assert_ptr_nonnull(p) ck_assert_msg((p) != NULL, "%s is NULL", #p)
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
    static TCase tc;
    (void)name;
    return &tc;
}

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
    s->tc = tc;
}

static SRunner *srunner_create(Suite *s)
{
    static SRunner sr;
    sr.s = s;
    return &sr;
}

static void srunner_run_all(SRunner *sr, int mode)
{
    TCase *tc = sr->s->tc;
    int i;
    (void)mode;
    for (i = 0; i < tc->n; i++) {
        if (setjmp(mc_jump) == 0)
            tc->fn[i]();
        else
            sr->failed++;
    }
    printf("%s: %d tests, %d failed\n", sr->s->name, tc->n, sr->failed);
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
