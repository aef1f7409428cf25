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
