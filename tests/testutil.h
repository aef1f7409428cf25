/*
** testutil.h -- what every Check test program shares: a main() that runs
** one suite and exits non-zero on any failure, and helpers to parse JSON
** in tests.
*/
#ifndef RCP_TESTUTIL_H
#define RCP_TESTUTIL_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rcp.h"

/* §7.10 a chunk's link as methods.c's chunking makes one: chunk `index` of
** document `of`, covering bytes [start, start + len) of its text. */
static inline rcp_model_chunkref test_chunkref(const char *of,
                                               uint32_t index,
                                               uint64_t start, size_t len)
{
    rcp_model_chunkref ck;
    ck.of = of;
    ck.oflen = strlen(of);
    ck.index = index;
    ck.start = start;
    ck.end = start + len;
    return ck;
}

/* How much slower than native the tests run: RCP_TEST_TIME_SCALE (an
** integer, default 1; make cross-check sets it under qemu-user, where
** every process is emulated ~10-30x slower).  A test whose outcome needs
** one process to be faster than a deadline and another slower (a slow
** engine dropped, the healthy ones answering) multiplies both by it, so
** emulation and a loaded machine keep the order of events the test is
** about. */
static inline int test_time_scale(void)
{
    const char *v = getenv("RCP_TEST_TIME_SCALE");
    int s = v ? atoi(v) : 1;
    return s < 1 ? 1 : s > 20 ? 20 : s;
}

#ifdef RCP_TEST_HTTP_SERVE      /* define it before including this file */
#include <sys/types.h>
#include <unistd.h>

/* `BIN serve A1 A2 --http 127.0.0.1:0` (A1, A2 may be NULL) as a child
** process: its pid, and in url[0..n) the URL it prints on stderr
** (rcp.1: "rcp: listening on URL"), so tests never collide on a port.
** Stop it with kill(pid, SIGTERM) and waitpid. */
static inline pid_t test_http_serve(const char *bin, const char *a1,
                                    const char *a2, char *url, size_t n)
{
    char buf[512];
    size_t got = 0;
    int fd[2];
    pid_t pid;
    ck_assert_int_eq(pipe(fd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const char *argv[8];
        int i = 0;
        argv[i++] = bin;
        argv[i++] = "serve";
        if (a1)
            argv[i++] = a1;
        if (a2)
            argv[i++] = a2;
        argv[i++] = "--http";
        argv[i++] = "127.0.0.1:0";
        argv[i] = NULL;
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    for (;;) {
        char *at, *end;
        ssize_t r = read(fd[0], buf + got, sizeof buf - 1 - got);
        ck_assert_msg(r > 0, "the http server printed no listening line");
        got += (size_t)r;
        buf[got] = '\0';
        if ((at = strstr(buf, "rcp: listening on ")) != NULL
            && (end = strchr(at, '\n')) != NULL) {
            at += strlen("rcp: listening on ");
            ck_assert_uint_lt((size_t)(end - at), n);
            memcpy(url, at, (size_t)(end - at));
            url[end - at] = '\0';
            break;
        }
        ck_assert_uint_lt(got, sizeof buf - 1);
    }
    close(fd[0]);
    return pid;
}
#endif

/* Define the suite builder, then TEST_MAIN(make_suite). */
#define TEST_MAIN(make_suite)                                             \
    int main(void)                                                        \
    {                                                                     \
        SRunner *sr = srunner_create(make_suite());                       \
        int failed;                                                       \
        srunner_run_all(sr, CK_NORMAL);                                   \
        failed = srunner_ntests_failed(sr);                               \
        srunner_free(sr);                                                 \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                 \
    }

/* For the tests that read or forge store.c's log: CRC-32C computed bit by
** bit from its definition (reflected 0x82F63B78), independent of the
** table store.c uses.  Define RCP_TEST_CRC32C before including. */
#ifdef RCP_TEST_CRC32C
#include <stddef.h>
#include <stdint.h>
static uint32_t crc32c(uint32_t crc, const unsigned char *p, size_t n)
{
    int k;
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++)
            crc = crc & 1 ? crc >> 1 ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}
#endif

#endif
