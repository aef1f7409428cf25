/*
** minicheck/check.h -- the part of the Check API (libcheck 0.15) that
** rcp's tests use, in plain C99 + POSIX, for hosts where Check is not
** installed: every cross target of `make cross-check`, and `make check`
** on a machine with nothing but a C compiler and make.
**
** It behaves as Check does where the tests can tell: each test runs in
** its own forked process (so a crash, a leak report or a stray global
** never reaches the next test), in its own process group, which a
** timeout kills whole; checked fixtures run in that process around the
** test, unchecked ones once per test case in the runner; the default
** timeout is 4 s per test.  The environment variables CK_FORK=no,
** CK_DEFAULT_TIMEOUT, CK_TIMEOUT_MULTIPLIER, CK_RUN_SUITE, CK_RUN_CASE
** and CK_VERBOSITY=verbose mean what they mean to Check, and the output
** has Check's shape ("Running suite(s):", "N%: Checks: ...", one
** file:line:F:case:test:0: line per failure).  The assertion macros
** evaluate each argument once and compare in the types Check uses.
**
** What it does not have: tags, loop tests, tests expected to exit or
** raise a signal, XML/TAP logs.  A test that needs them needs real Check.
*/
#ifndef RCP_MINICHECK_H
#define RCP_MINICHECK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*TFun)(void);
typedef void (*SFun)(void);
typedef struct TCase TCase;
typedef struct Suite Suite;
typedef struct SRunner SRunner;
enum print_output { CK_SILENT, CK_MINIMAL, CK_NORMAL, CK_VERBOSE, CK_ENV };

Suite   *suite_create(const char *name);
void     suite_add_tcase(Suite *s, TCase *tc);
TCase   *tcase_create(const char *name);
void     tcase_set_timeout(TCase *tc, double seconds);
void     mc_add_test(TCase *tc, TFun fn, const char *name,
                     const char *file);
void     mc_add_test_signal(TCase *tc, TFun fn, const char *name,
                            const char *file, int signal);
void     tcase_add_checked_fixture(TCase *tc, SFun setup, SFun teardown);
void     tcase_add_unchecked_fixture(TCase *tc, SFun setup, SFun teardown);
SRunner *srunner_create(Suite *s);
void     srunner_run_all(SRunner *sr, enum print_output mode);
int      srunner_ntests_failed(SRunner *sr);
void     srunner_free(SRunner *sr);

#define START_TEST(name) static void name(void)
#define END_TEST
#define tcase_add_test(tc, t) mc_add_test((tc), (t), #t, __FILE__)
/* A test that passes only by ending with signal sig (an assert's abort). */
#define tcase_add_test_raise_signal(tc, t, sig) \
    mc_add_test_signal((tc), (t), #t, __FILE__, (sig))

/* A failed assertion ends the test: in its forked process by exiting, in
   CK_FORK=no mode by a longjmp back to the runner. */
void mc_fail(const char *file, int line, const char *fmt, ...);
void mc_int(const char *file, int line, intmax_t x, intmax_t y, int op,
            const char *ex, const char *eop, const char *ey);
void mc_uint(const char *file, int line, uintmax_t x, uintmax_t y, int op,
             const char *ex, const char *eop, const char *ey);
void mc_float(const char *file, int line, float x, float y, int op,
              const char *ex, const char *eop, const char *ey);
void mc_double(const char *file, int line, double x, double y, int op,
               const char *ex, const char *eop, const char *ey);
void mc_float_tol(const char *file, int line, float x, float y, float t,
                  const char *ex, const char *ey, const char *et);
void mc_double_tol(const char *file, int line, double x, double y,
                   double t, const char *ex, const char *ey, const char *et);
void mc_str(const char *file, int line, const char *x, const char *y,
            int want_equal, const char *ex, const char *ey);
void mc_ptr(const char *file, int line, uintptr_t x, uintptr_t y,
            int op, const char *ex, const char *eop, const char *ey);

/* comparison codes for the helpers above */
enum { MC_EQ, MC_NE, MC_LT, MC_LE, MC_GT, MC_GE };

#define ck_assert_msg(expr, ...) \
    do { if (!(expr)) mc_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define ck_assert(expr) \
    ck_assert_msg(expr, "Assertion '%s' failed", #expr)
#define ck_abort_msg(...) mc_fail(__FILE__, __LINE__, __VA_ARGS__)
#define ck_abort() ck_abort_msg("Failed")

#define MC_INT(X, OP, C, Y) \
    mc_int(__FILE__, __LINE__, (X), (Y), C, #X, #OP, #Y)
#define ck_assert_int_eq(X, Y) MC_INT(X, ==, MC_EQ, Y)
#define ck_assert_int_ne(X, Y) MC_INT(X, !=, MC_NE, Y)
#define ck_assert_int_lt(X, Y) MC_INT(X, <, MC_LT, Y)
#define ck_assert_int_le(X, Y) MC_INT(X, <=, MC_LE, Y)
#define ck_assert_int_gt(X, Y) MC_INT(X, >, MC_GT, Y)
#define ck_assert_int_ge(X, Y) MC_INT(X, >=, MC_GE, Y)

#define MC_UINT(X, OP, C, Y) \
    mc_uint(__FILE__, __LINE__, (X), (Y), C, #X, #OP, #Y)
#define ck_assert_uint_eq(X, Y) MC_UINT(X, ==, MC_EQ, Y)
#define ck_assert_uint_ne(X, Y) MC_UINT(X, !=, MC_NE, Y)
#define ck_assert_uint_lt(X, Y) MC_UINT(X, <, MC_LT, Y)
#define ck_assert_uint_le(X, Y) MC_UINT(X, <=, MC_LE, Y)
#define ck_assert_uint_gt(X, Y) MC_UINT(X, >, MC_GT, Y)
#define ck_assert_uint_ge(X, Y) MC_UINT(X, >=, MC_GE, Y)

/* Check compares these as float, whatever the arguments' type */
#define MC_FLOAT(X, OP, C, Y) \
    mc_float(__FILE__, __LINE__, (X), (Y), C, #X, #OP, #Y)
#define ck_assert_float_eq(X, Y) MC_FLOAT(X, ==, MC_EQ, Y)
#define ck_assert_float_ne(X, Y) MC_FLOAT(X, !=, MC_NE, Y)
#define ck_assert_float_lt(X, Y) MC_FLOAT(X, <, MC_LT, Y)
#define ck_assert_float_le(X, Y) MC_FLOAT(X, <=, MC_LE, Y)
#define ck_assert_float_gt(X, Y) MC_FLOAT(X, >, MC_GT, Y)
#define ck_assert_float_ge(X, Y) MC_FLOAT(X, >=, MC_GE, Y)
/* ... and these as double: a constant is rounded to double first, which
   matters where C evaluates it wider (FLT_EVAL_METHOD 2, x87) */
#define MC_DOUBLE(X, OP, C, Y) \
    mc_double(__FILE__, __LINE__, (X), (Y), C, #X, #OP, #Y)
#define ck_assert_double_eq(X, Y) MC_DOUBLE(X, ==, MC_EQ, Y)
#define ck_assert_double_ne(X, Y) MC_DOUBLE(X, !=, MC_NE, Y)
#define ck_assert_double_lt(X, Y) MC_DOUBLE(X, <, MC_LT, Y)
#define ck_assert_double_le(X, Y) MC_DOUBLE(X, <=, MC_LE, Y)
#define ck_assert_double_gt(X, Y) MC_DOUBLE(X, >, MC_GT, Y)
#define ck_assert_double_ge(X, Y) MC_DOUBLE(X, >=, MC_GE, Y)
#define ck_assert_float_eq_tol(X, Y, T) \
    mc_float_tol(__FILE__, __LINE__, (X), (Y), (T), #X, #Y, #T)
#define ck_assert_double_eq_tol(X, Y, T) \
    mc_double_tol(__FILE__, __LINE__, (X), (Y), (T), #X, #Y, #T)

#define ck_assert_str_eq(X, Y) mc_str(__FILE__, __LINE__, (X), (Y), 1, #X, #Y)
#define ck_assert_str_ne(X, Y) mc_str(__FILE__, __LINE__, (X), (Y), 0, #X, #Y)

/* as integers: a pointer to memory not yet written is not read */
#define MC_PTR(X, OP, C, Y) \
    mc_ptr(__FILE__, __LINE__, (uintptr_t)(const void *)(X), \
           (uintptr_t)(const void *)(Y), C, #X, #OP, #Y)
#define ck_assert_ptr_eq(X, Y)     MC_PTR(X, ==, MC_EQ, Y)
#define ck_assert_ptr_ne(X, Y)     MC_PTR(X, !=, MC_NE, Y)
#define ck_assert_ptr_null(X)      MC_PTR(X, ==, MC_EQ, NULL)
#define ck_assert_ptr_nonnull(X)   MC_PTR(X, !=, MC_NE, NULL)

#endif
