# rcp -- the C99 reference implementation of RCP/1.
#
#   make            build ./rcp (-std=c99 -pedantic -Wall -Wextra -Werror)
#   make check      unit tests + conformance suite, then again under
#                   AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      benchmarks: figures printed next to limits measured
#                   in the same run
#   make eval       retrieval quality on ../shared/data/cranfield
#   make NO_SIMD=1  build without any intrinsics (portable targets)
#   make CC=clang   any C99 compiler
#   make CC=X HOST_CC=cc   cross builds: conformance/bundle.c, the tool that
#                   compiles the conformance data in, runs on the host
#
# Objects go to $(BUILD) (build/rel by default, build/asan for the sanitizer
# pass) so the two builds never mix.

CC      ?= cc
OPT     ?= -O2
CSTD     = -std=c99 -pedantic -Wall -Wextra -Werror
CFLAGS  ?= -g
ALL_CFLAGS = $(CSTD) $(OPT) $(CFLAGS) $(SANFLAGS)
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -I.
LDLIBS  += -lm
BUILD   ?= build/rel

SAN_CFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=all

# --- library objects -------------------------------------------------------
LIB_SRCS = $(wildcard json.c rcp.c client.c model.c store.c \
                      conformance/conform.c conformance/schema.c)
LIB_OBJS = $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS)) $(BUILD)/gen/bundle.o

# --- bundled data ----------------------------------------------------------
# Every conformance/*.json (the checks, coverage.json, the normative schema
# rcp-1.0.json) is compiled into the binary, so `rcp conform` and the schema
# validator need no files at run time.  conformance/bundle.c writes the C
# source; it runs on the build host, so it is built with HOST_CC whatever
# CC targets.  The generated source lives under $(BUILD), never in git.
HOST_CC     ?= cc
BUNDLE_DATA  = $(sort $(wildcard conformance/*.json))

# --- vec.c: one source, compiled once per instruction set ------------------
# The scalar build (vec.o) holds the reference kernels and the run-time
# dispatcher; each variant object holds one SIMD path, compiled with the
# flags that path needs.  Which one runs is chosen from what the CPU
# reports, never from what the build machine had.
ARCH := $(shell $(CC) -dumpmachine 2>/dev/null)
ifeq ($(NO_SIMD),1)
VEC_VARIANTS =
VEC_DEFS     = -DRCP_NO_SIMD
else ifneq (,$(filter x86_64% amd64%,$(ARCH)))
VEC_VARIANTS = sse2 avx2 avx512
VEC_DEFS     = -DRCP_HAVE_X86
else ifneq (,$(filter aarch64% arm64%,$(ARCH)))
VEC_VARIANTS = neon
VEC_DEFS     = -DRCP_HAVE_NEON
else
VEC_VARIANTS =
VEC_DEFS     = -DRCP_NO_SIMD
endif
VEC_FLAGS_sse2   = -msse2
VEC_FLAGS_avx2   = -mavx2 -mfma
VEC_FLAGS_avx512 = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma
VEC_FLAGS_neon   =
VEC_OBJS = $(if $(wildcard vec.c),$(BUILD)/vec.o \
           $(patsubst %,$(BUILD)/vec_%.o,$(VEC_VARIANTS)))

OBJS = $(LIB_OBJS) $(VEC_OBJS)

# --- tests and benchmarks --------------------------------------------------
TESTS   = $(patsubst tests/%.c,%,$(wildcard tests/test_*.c))
BENCHES = $(patsubst tests/%.c,%,$(wildcard tests/bench_*.c))
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)

.PHONY: all check test-run bench eval demo clean need-check FORCE

all: rcp

rcp: $(BUILD)/rcp
	cp $< $@

$(BUILD)/rcp: $(BUILD)/main.o $(OBJS)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c rcp.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -c $< -o $@

$(BUILD)/bundle: conformance/bundle.c
	@mkdir -p $(dir $@)
	$(HOST_CC) $(CSTD) -O2 -o $@ $<

# The list of files is a prerequisite too, so removing or renaming a file
# regenerates the table (the file is rewritten only when the list changes).
$(BUILD)/gen/bundle.list: FORCE
	@mkdir -p $(dir $@)
	@echo '$(BUNDLE_DATA)' | cmp -s - $@ || echo '$(BUNDLE_DATA)' > $@

$(BUILD)/gen/bundle.c: $(BUILD)/bundle $(BUNDLE_DATA) $(BUILD)/gen/bundle.list
	$(BUILD)/bundle $@ $(BUNDLE_DATA)

$(BUILD)/gen/bundle.o: $(BUILD)/gen/bundle.c rcp.h
	$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -c $< -o $@

$(BUILD)/vec.o: vec.c rcp.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(VEC_DEFS) -c $< -o $@

$(BUILD)/vec_%.o: vec.c rcp.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(VEC_DEFS) -DRCP_VEC_UNIT_$* \
	    $(VEC_FLAGS_$*) -c $< -o $@

# vec.c on other targets, from an x86 host, under qemu-user: test_vec with
# tests/minicheck/check.h standing in for Check (not built for them).
#   make vec-cross-check   aarch64: the NEON path and the scalar reference
#   make vec-be-check      s390x, big-endian: f32-base64 stays little-endian
# Needs: apt-get install qemu-user gcc-aarch64-linux-gnu gcc-s390x-linux-gnu
VEC_CROSS_CC  ?= aarch64-linux-gnu-gcc
VEC_CROSS_RUN ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
VEC_CROSS     ?= build/aarch64
.PHONY: vec-cross-check vec-be-check vec-objs
vec-objs: $(BUILD)/json.o $(VEC_OBJS)
vec-cross-check:
	$(MAKE) CC="$(VEC_CROSS_CC)" BUILD=$(VEC_CROSS) vec-objs
	@mkdir -p $(VEC_CROSS)/tests
	$(VEC_CROSS_CC) $(CSTD) $(OPT) $(CFLAGS) $(CPPFLAGS) -Itests/minicheck \
	    -o $(VEC_CROSS)/tests/test_vec tests/test_vec.c $(VEC_CROSS)/json.o \
	    $(VEC_CROSS)/vec*.o -lm
	$(VEC_CROSS_RUN) $(VEC_CROSS)/tests/test_vec
vec-be-check:
	$(MAKE) vec-cross-check VEC_CROSS_CC=s390x-linux-gnu-gcc \
	    VEC_CROSS_RUN="qemu-s390x -L /usr/s390x-linux-gnu" VEC_CROSS=build/s390x

$(BUILD)/tests/test_%: tests/test_%.c $(OBJS) tests/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CPPFLAGS) $(CHECK_CFLAGS) -o $@ $< $(OBJS) \
	    $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/tests/bench_%: tests/bench_%.c $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -o $@ $< $(OBJS) $(LDLIBS)

need-check:
	@pkg-config --exists check || { \
	  echo "Check (the C unit-test framework) is missing."; \
	  echo "Install it with:  apt-get install check   (Debian/Ubuntu)"; \
	  echo "                  brew install check      (macOS)"; \
	  exit 1; }

CONFORM_FIELDS = --field year:int --field lang:keyword --field tags:keyword \
                 --field title:text --field published:date

# Unit tests, then the conformance suite against our own server; the whole
# sequence once more under ASan + UBSan.
check: need-check
	$(MAKE) test-run
	$(MAKE) test-run BUILD=build/asan SANFLAGS="$(SAN_CFLAGS)" OPT=-O1
	@echo "make check: all passed (plain and sanitized)"

test-run: $(patsubst %,$(BUILD)/tests/%,$(TESTS)) $(BUILD)/rcp
	@set -e; for t in $(TESTS); do \
	  echo "== $$t ($(BUILD))"; \
	  RCP_BIN=$(BUILD)/rcp $(BUILD)/tests/$$t; \
	done
	@echo "== conformance, bare server ($(BUILD))"
	@out=$$($(BUILD)/rcp conform -- $(BUILD)/rcp serve --debug); rc=$$?; \
	  printf '%s\n' "$$out" | grep -v '^PASS'; exit $$rc
	@echo "== conformance, with filter fields ($(BUILD))"
	@$(BUILD)/rcp conform -- $(BUILD)/rcp serve --debug $(CONFORM_FIELDS)

bench: $(patsubst %,$(BUILD)/tests/%,$(BENCHES)) $(BUILD)/rcp
	@set -e; for b in $(BENCHES); do \
	  echo "== $$b"; RCP_BIN=$(BUILD)/rcp $(BUILD)/tests/$$b; done

# Retrieval quality of the built-in engine (tests/eval.c, model.c's owner).
eval: $(BUILD)/tests/eval
	$(BUILD)/tests/eval ../shared/data/cranfield

$(BUILD)/tests/eval: tests/eval.c $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CPPFLAGS) -o $@ $< $(OBJS) $(LDLIBS)

# The worked session of the README's quick start (after the spec's
# Appendix D): the server starts on the sample corpus (the project's own
# writing), and each request (->) is shown with what came back (<-).
DEMO_SERVE = ./rcp serve --corpus tests/sample-corpus.jsonl \
             --field file:keyword --field section:text --field kind:keyword
DEMO = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"client":{"name":"demo","version":"1"}}}' \
       '{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"what happens to a batch that holds only notifications","k":2,"mode":"hybrid","rerank":{"method":"cross-encoder","topN":20},"filter":{"field":"file","op":"eq","value":"README.md"},"_meta":{"progressToken":"t2"}}}' \
       '{"jsonrpc":"2.0","id":3,"method":"index/add","params":{"documents":[{"id":"note-1","text":"The demo wrote this note: an acknowledged index/add is searchable at once.","meta":{"file":"NOTES.md","kind":"note"}}]}}' \
       '{"jsonrpc":"2.0","id":4,"method":"retrieve","params":{"query":"which note did the demo write","k":1,"filter":{"field":"kind","op":"eq","value":"note"}}}' \
       '{"jsonrpc":"2.0","id":5,"method":"shutdown","params":{}}'
demo: SHELL := /bin/bash
demo: rcp
	@coproc SRV { $(DEMO_SERVE); }; \
	for f in $(DEMO); do \
	  printf -- '-> %s\n' "$$f"; printf '%s\n' "$$f" >&$${SRV[1]}; \
	  while read -t 1 -r line <&$${SRV[0]}; do printf '<- %s\n' "$$line"; done; \
	done; wait

clean:
	rm -rf build rcp
