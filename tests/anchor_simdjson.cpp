// anchor_simdjson.cpp -- simdjson's DOM parser behind a C interface, so
// bench_json.c times it with the same harness and on the same bytes as
// json.c (issue 17).  A bench-only anchor: the Makefile compiles it only
// when simdjson (Debian's libsimdjson-dev) and a C++ compiler are there;
// nothing of rcp needs it to build or test.
#include <simdjson.h>

extern "C" {
#include "anchor.h"
}

struct anchor_sj {
    simdjson::dom::parser parser;
};

extern "C" size_t anchor_sj_padding(void)
{
    return simdjson::SIMDJSON_PADDING;
}

extern "C" const char *anchor_sj_kernel(void)
{
    return simdjson::get_active_implementation()->name().c_str();
}

extern "C" anchor_sj *anchor_sj_new(void)
{
    return new (std::nothrow) anchor_sj;
}

extern "C" void anchor_sj_free(anchor_sj *p)
{
    delete p;
}

// One full DOM parse (validation, the tape, the string copies) of
// text[0..n); the caller guarantees anchor_sj_padding() readable bytes
// after it, so the parser reuses its buffers and copies nothing.
extern "C" int anchor_sj_parse(anchor_sj *p, const char *text, size_t n)
{
    simdjson::dom::element e;
    return p->parser.parse(reinterpret_cast<const uint8_t *>(text), n, false)
               .get(e) == simdjson::SUCCESS;
}
