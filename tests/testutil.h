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

/* §7.10 a chunk's link as rcp.c's chunking makes one: chunk `index` of
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

#endif
