/*
** minicheck/check.c -- the runner behind minicheck/check.h (see there for
** what it covers and why it exists).
**
** One test = one fork.  The child puts itself in its own process group,
** runs the checked setup, the test and the checked teardown, and tells
** the runner how it went through a pipe: "F<message>" when an assertion
** failed.  The runner reads the verdict from the exit status, as Check
** does: exit 0 passes, an "F" message is a failure, anything else (a
** signal, a timeout, exit(N), a sanitizer's leak report) is an error.
** A timeout is an alarm in the runner that kills the child's whole
** process group, servers it started included.
*/
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MC_MSG 4096            /* at most one pipe buffer: never blocks */

typedef struct mc_test {
    TFun        fn;
    const char *name;
    const char *file;
    int         signal;         /* the signal it must end by; 0: none */
} mc_test;

struct TCase {
    const char *name;
    mc_test    *test;
    int         n, cap;
    SFun        setup, teardown;       /* checked: in the test's process */
    SFun        usetup, uteardown;     /* unchecked: once, in the runner */
    double      timeout;
    TCase      *next;
};

struct Suite {
    const char *name;
    TCase      *first, *last;
};

struct SRunner {
    Suite *s;
    int    run, failures, errors;
};

/* MARK: - building a suite ------------------------------------------------- */

static void *mc_alloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fputs("minicheck: out of memory\n", stderr);
        exit(EXIT_FAILURE);
    }
    return p;
}

Suite *suite_create(const char *name)
{
    Suite *s = mc_alloc(sizeof *s);
    s->name = name;
    return s;
}

void suite_add_tcase(Suite *s, TCase *tc)
{
    if (s->last)
        s->last->next = tc;
    else
        s->first = tc;
    s->last = tc;
}

/* Check's default: CK_DEFAULT_TIMEOUT or 4 s, times CK_TIMEOUT_MULTIPLIER */
static double mc_env_number(const char *name, double dflt)
{
    const char *v = getenv(name);
    char *end;
    double d;
    if (!v || !*v)
        return dflt;
    d = strtod(v, &end);
    return *end == '\0' && d >= 0 ? d : dflt;
}

TCase *tcase_create(const char *name)
{
    TCase *tc = mc_alloc(sizeof *tc);
    tc->name = name;
    tc->timeout = mc_env_number("CK_DEFAULT_TIMEOUT", 4);
    return tc;
}

void tcase_set_timeout(TCase *tc, double seconds)
{
    if (seconds >= 0)
        tc->timeout = seconds;
}

void mc_add_test(TCase *tc, TFun fn, const char *name, const char *file)
{
    mc_add_test_signal(tc, fn, name, file, 0);
}

void mc_add_test_signal(TCase *tc, TFun fn, const char *name,
                        const char *file, int signal)
{
    if (tc->n == tc->cap) {
        int cap = tc->cap ? 2 * tc->cap : 32;
        mc_test *t = realloc(tc->test, (size_t)cap * sizeof *t);
        if (!t) {
            fputs("minicheck: out of memory\n", stderr);
            exit(EXIT_FAILURE);
        }
        tc->test = t;
        tc->cap = cap;
    }
    tc->test[tc->n].fn = fn;
    tc->test[tc->n].name = name;
    tc->test[tc->n].file = file;
    tc->test[tc->n].signal = signal;
    tc->n++;
}

void tcase_add_checked_fixture(TCase *tc, SFun setup, SFun teardown)
{
    tc->setup = setup;
    tc->teardown = teardown;
}

void tcase_add_unchecked_fixture(TCase *tc, SFun setup, SFun teardown)
{
    tc->usetup = setup;
    tc->uteardown = teardown;
}

SRunner *srunner_create(Suite *s)
{
    SRunner *sr = mc_alloc(sizeof *sr);
    sr->s = s;
    return sr;
}

void srunner_free(SRunner *sr)
{
    TCase *tc, *next;
    if (!sr)
        return;
    for (tc = sr->s->first; tc; tc = next) {
        next = tc->next;
        free(tc->test);
        free(tc);
    }
    free(sr->s);
    free(sr);
}

int srunner_ntests_failed(SRunner *sr)
{
    return sr->failures + sr->errors;
}

/* MARK: - assertions ------------------------------------------------------- */

static int     mc_forked;         /* running inside a test's own process */
static int     mc_pipe = -1;      /* the child's end of the verdict pipe */
static jmp_buf mc_nofork_jump;    /* CK_FORK=no: back to the runner */
static char    mc_nofork_msg[MC_MSG];

void mc_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[MC_MSG];
    va_list ap;
    int n = snprintf(msg, sizeof msg, "F%s:%d:", file, line);
    if (n < 0 || (size_t)n >= sizeof msg)
        n = 1;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (mc_forked) {
        size_t len = strlen(msg), off = 0;
        while (off < len) {
            ssize_t w = write(mc_pipe, msg + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        exit(1);
    }
    memcpy(mc_nofork_msg, msg, sizeof msg);
    longjmp(mc_nofork_jump, 1);
}

static int mc_holds(int op, int lt, int eq)
{
    switch (op) {
    case MC_EQ: return eq;
    case MC_NE: return !eq;
    case MC_LT: return lt;
    case MC_LE: return lt || eq;
    case MC_GT: return !lt && !eq;
    default:    return !lt;
    }
}

void mc_int(const char *file, int line, intmax_t x, intmax_t y, int op,
            const char *ex, const char *eop, const char *ey)
{
    if (!mc_holds(op, x < y, x == y))
        mc_fail(file, line, "Assertion '%s %s %s' failed: %s == %jd, "
                "%s == %jd", ex, eop, ey, ex, x, ey, y);
}

void mc_uint(const char *file, int line, uintmax_t x, uintmax_t y, int op,
             const char *ex, const char *eop, const char *ey)
{
    if (!mc_holds(op, x < y, x == y))
        mc_fail(file, line, "Assertion '%s %s %s' failed: %s == %ju, "
                "%s == %ju", ex, eop, ey, ex, x, ey, y);
}

/* a NaN makes every ordered comparison false and != true, as in C; a
   float widens to double exactly, so one comparison serves both */
static int mc_cmp_real(double x, double y, int op)
{
    return op == MC_EQ ? x == y : op == MC_NE ? x != y
         : op == MC_LT ? x < y  : op == MC_LE ? x <= y
         : op == MC_GT ? x > y  : x >= y;
}

void mc_float(const char *file, int line, float x, float y, int op,
              const char *ex, const char *eop, const char *ey)
{
    if (!mc_cmp_real(x, y, op))
        mc_fail(file, line, "Assertion '%s %s %s' failed: %s == %.9g, "
                "%s == %.9g", ex, eop, ey, ex, (double)x, ey, (double)y);
}

void mc_double(const char *file, int line, double x, double y, int op,
               const char *ex, const char *eop, const char *ey)
{
    if (!mc_cmp_real(x, y, op))
        mc_fail(file, line, "Assertion '%s %s %s' failed: %s == %.17g, "
                "%s == %.17g", ex, eop, ey, ex, x, ey, y);
}

void mc_float_tol(const char *file, int line, float x, float y, float t,
                  const char *ex, const char *ey, const char *et)
{
    float d = y - x;                           /* Check: fabsl(y - x) < t */
    if (!(fabs(d) < t))
        mc_fail(file, line, "Assertion 'fabsl(%s - %s) < %s' failed: "
                "%s == %.9g, %s == %.9g, %s == %.9g", ey, ex, et, ex,
                (double)x, ey, (double)y, et, (double)t);
}

void mc_double_tol(const char *file, int line, double x, double y,
                   double t, const char *ex, const char *ey, const char *et)
{
    double d = y - x;                          /* Check: fabsl(y - x) < t */
    if (!(fabs(d) < t))
        mc_fail(file, line, "Assertion 'fabsl(%s - %s) < %s' failed: "
                "%s == %.17g, %s == %.17g, %s == %.17g", ey, ex, et, ex, x,
                ey, y, et, t);
}

void mc_str(const char *file, int line, const char *x, const char *y,
            int want_equal, const char *ex, const char *ey)
{
    /* as Check: a NULL string makes either assertion fail */
    if (x && y && (strcmp(x, y) == 0) == want_equal)
        return;
    mc_fail(file, line, "Assertion '%s %s %s' failed: %s == %s%s%s, "
            "%s == %s%s%s", ex, want_equal ? "==" : "!=", ey,
            ex, x ? "\"" : "", x ? x : "(null)", x ? "\"" : "",
            ey, y ? "\"" : "", y ? y : "(null)", y ? "\"" : "");
}

void mc_ptr(const char *file, int line, uintptr_t x, uintptr_t y,
            int op, const char *ex, const char *eop, const char *ey)
{
    if ((x == y) != (op == MC_EQ))
        mc_fail(file, line, "Assertion '%s %s %s' failed: %s == %p, "
                "%s == %p", ex, eop, ey, ex, (void *)x, ey, (void *)y);
}

/* MARK: - running ---------------------------------------------------------- */

static volatile sig_atomic_t mc_timed_out;
static volatile pid_t        mc_child;

static void mc_on_alarm(int sig)
{
    (void)sig;
    mc_timed_out = 1;
    if (mc_child > 0) {
        kill(-mc_child, SIGKILL);
        kill(mc_child, SIGKILL);
    }
}

static void mc_child_run(const TCase *tc, const mc_test *t, int fd)
{
    setpgid(0, 0);
    mc_forked = 1;
    mc_pipe = fd;
    if (tc->setup)
        tc->setup();
    t->fn();
    if (tc->teardown)
        tc->teardown();
    exit(EXIT_SUCCESS);
}

/* Runs one test in its own process; returns 'P', 'F' or 'E', with the
   message for the latter two in msg. */
static int mc_run_forked(const TCase *tc, const mc_test *t, char *msg,
                         double mult)
{
    int fd[2], status = 0;
    pid_t pid;
    ssize_t got;
    size_t len = 0;
    struct sigaction sa, old;
    unsigned secs = 0;

    msg[0] = '\0';
    if (pipe(fd) != 0) {
        snprintf(msg, MC_MSG, "pipe failed: %s", strerror(errno));
        return 'E';
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        snprintf(msg, MC_MSG, "fork failed: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return 'E';
    }
    if (pid == 0) {
        close(fd[0]);
        mc_child_run(tc, t, fd[1]);
    }
    close(fd[1]);
    setpgid(pid, pid);                 /* either side may win the race */
    mc_child = pid;
    mc_timed_out = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = mc_on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    if (tc->timeout * mult > 0)
        secs = (unsigned)ceil(tc->timeout * mult);
    alarm(secs);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    alarm(0);
    sigaction(SIGALRM, &old, NULL);
    mc_child = 0;
    kill(-pid, SIGKILL);               /* whatever the test left running */

    /* the child wrote before it exited, so whatever it said is there now;
       descendants that still hold the pipe open must not block us */
    fcntl(fd[0], F_SETFL, O_NONBLOCK);
    while (len < MC_MSG - 1
           && (got = read(fd[0], msg + len, MC_MSG - 1 - len)) > 0)
        len += (size_t)got;
    msg[len] = '\0';
    close(fd[0]);

    if (mc_timed_out) {
        snprintf(msg, MC_MSG, "Test timeout expired");
        return 'E';
    }
    if (msg[0] == 'F') {
        memmove(msg, msg + 1, len);
        return 'F';
    }
    if (t->signal) {                   /* Check's wording for both */
        if (WIFSIGNALED(status) && WTERMSIG(status) == t->signal)
            return 'P';
        if (WIFSIGNALED(status))
            snprintf(msg, MC_MSG, "Received signal %d (%s), expected %d "
                     "(%s)", WTERMSIG(status), strsignal(WTERMSIG(status)),
                     t->signal, strsignal(t->signal));
        else
            snprintf(msg, MC_MSG, "Test completed but was expected to "
                     "fail with signal %d (%s)", t->signal,
                     strsignal(t->signal));
        return 'F';
    }
    if (WIFSIGNALED(status)) {
        snprintf(msg, MC_MSG, "Received signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
        return 'E';
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        snprintf(msg, MC_MSG, "Early exit with return value %d",
                 WEXITSTATUS(status));
        return 'E';
    }
    return 'P';
}

/* CK_FORK=no: the same, in this process (a crash ends the whole run). */
static int mc_run_here(const TCase *tc, const mc_test *t, char *msg)
{
    msg[0] = '\0';
    if (setjmp(mc_nofork_jump) != 0) {
        memcpy(msg, mc_nofork_msg + 1, MC_MSG - 1);
        return 'F';
    }
    if (tc->setup)
        tc->setup();
    t->fn();
    if (tc->teardown)
        tc->teardown();
    return 'P';
}

/* One line per test that did not pass, in Check's shape:
   file:line:F|E:case:test:0: message (the line is unknown for an error). */
static void mc_report(const TCase *tc, const mc_test *t,
                      int r, const char *msg, int verbose)
{
    const char *colon = strchr(msg, ':');
    const char *text = colon ? strchr(colon + 1, ':') : NULL;
    if (r == 'F' && text)        /* msg is "file:line:message" */
        printf("%.*s:F:%s:%s:0: %s\n", (int)(text - msg), msg, tc->name,
               t->name, text + 1);
    else if (r != 'P')
        printf("%s:0:%c:%s:%s:0: %s\n", t->file, r, tc->name, t->name, msg);
    else if (verbose)
        printf("%s:0:P:%s:%s:0: Passed\n", t->file, tc->name, t->name);
}

static int mc_selected(const char *env, const char *name)
{
    const char *v = getenv(env);
    return !v || !*v || strcmp(v, name) == 0;
}

void srunner_run_all(SRunner *sr, enum print_output mode)
{
    const char *fork_env = getenv("CK_FORK");
    const char *verb = getenv("CK_VERBOSITY");
    int forking = !(fork_env && strcmp(fork_env, "no") == 0);
    int verbose = mode == CK_VERBOSE
                  || (verb && strcmp(verb, "verbose") == 0);
    double mult = mc_env_number("CK_TIMEOUT_MULTIPLIER", 1);
    static char msg[MC_MSG];
    TCase *tc;
    int i;

    if (!mc_selected("CK_RUN_SUITE", sr->s->name))
        return;
    if (mode != CK_SILENT)
        printf("Running suite(s): %s\n", sr->s->name);
    for (tc = sr->s->first; tc; tc = tc->next) {
        if (!mc_selected("CK_RUN_CASE", tc->name))
            continue;
        if (tc->usetup)
            tc->usetup();
        for (i = 0; i < tc->n; i++) {
            const mc_test *t = &tc->test[i];
            int r = forking ? mc_run_forked(tc, t, msg, mult)
                            : mc_run_here(tc, t, msg);
            sr->run++;
            sr->failures += r == 'F';
            sr->errors += r == 'E';
            mc_report(tc, t, r, msg, verbose);
            fflush(stdout);
        }
        if (tc->uteardown)
            tc->uteardown();
    }
    if (mode != CK_SILENT)
        printf("%d%%: Checks: %d, Failures: %d, Errors: %d\n",
               sr->run ? 100 * (sr->run - sr->failures - sr->errors)
                             / sr->run : 0,
               sr->run, sr->failures, sr->errors);
}
