/*
** anchor.h -- the C face of the bench-only anchors bench_json.c measures
** beside json.c (issue 17).  simdjson is C++, so it sits behind this small
** interface in anchor_simdjson.cpp; cJSON is C and used directly.
*/
#ifndef RCP_ANCHOR_H
#define RCP_ANCHOR_H

#include <stddef.h>

typedef struct anchor_sj anchor_sj;
size_t      anchor_sj_padding(void);    /* readable bytes after a text */
const char *anchor_sj_kernel(void);     /* "haswell", "icelake", ... */
anchor_sj  *anchor_sj_new(void);        /* NULL when out of memory */
void        anchor_sj_free(anchor_sj *p);
int         anchor_sj_parse(anchor_sj *p, const char *text, size_t n);

#endif
