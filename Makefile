# rcp -- the C99 reference implementation of RCP/1.
#
#   make              ./rcp, and $(BUILD)/librcp.a and librcp.so
#   make check        unit tests, the conformance suite and the build and
#                     install tests, warnings as errors; then the unit tests
#                     and the suite again under ASan + UBSan
#   make install      bin/rcp, lib/librcp.{a,so}, include/rcp.h,
#                     lib/pkgconfig/rcp.pc, man pages; PREFIX (/usr/local)
#                     and DESTDIR as usual; NO_SHARED=1: no librcp.so
#   make uninstall    removes exactly what make install writes
#   make bench        benchmarks: figures printed next to limits measured
#                     in the same run
#   make fuzz         the libFuzzer targets of tests/fuzz/ (clang; build/fuzz)
#   make fuzz-smoke   each target for FUZZ_SECONDS (default 20); part of
#                     make check when clang has libFuzzer, else skipped
#   make check-pending  the tests of defects found whose fixes have not
#                     landed (RCP_PENDING=1); they fail until then
#   make eval         retrieval quality on Cranfield (dev and test halves;
#                     CRANFIELD=DIR, default ../shared/data/cranfield) and
#                     on the held-out KJV passages (apt-get install
#                     bible-kjv); one table: a row per pipeline, its
#                     input stage named, nDCG@10 / MAP / R@100 per column
#   make demo         the README's worked session, explained step by step
#   make NO_SIMD=1    build without any intrinsics (portable targets)
#   make DEVELOPER=1  warnings are errors (make check always builds so)
#   make CC=X HOST_CC=cc  cross builds: conformance/bundle.c, the tool that
#                     compiles the conformance data in, runs on the host
#
# CC, CFLAGS, CPPFLAGS, LDFLAGS, LDLIBS, AR and ARFLAGS are the user's: the
# project's own flags are added to them, never replaced by them.  OPT
# (default -O2) comes before CFLAGS, so CFLAGS=-O0 wins.  The build
# remembers its flags in $(BUILD)/flags and rebuilds when they change.
# Objects go to $(BUILD) (build/rel by default; make check uses build/dev
# and build/asan), so builds never mix.

CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= -g
BUILD   ?= build/rel
ifeq ($(origin ARFLAGS),default)
ARFLAGS  = rcs
endif

# -Werror only where the project checks itself: a user's compiler may be
# newer than ours and warn about something new; that must not stop a build.
WARN          = -pedantic -Wall -Wextra $(if $(filter 1,$(DEVELOPER)),-Werror)
ALL_CFLAGS    = -std=c99 $(WARN) $(OPT) $(CFLAGS) $(SANFLAGS)
# _FILE_OFFSET_BITS: 64-bit off_t and ino_t on 32-bit targets, or stat and
# readdir fail (EOVERFLOW) on a filesystem with 64-bit inodes and a log
# could not pass 2 GiB; no effect on 64-bit ones
ALL_CPPFLAGS  = -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64 -I. \
                $(CPPFLAGS)
ALL_LDLIBS    = $(LDLIBS) -lm

SAN_CFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=all

VERSION := $(shell sed -n 's/^\#define RCP_VERSION *"\([^"]*\)".*/\1/p' rcp.h)

# --- what goes where -------------------------------------------------------
# librcp holds the protocol, the engine, the storage, the client and JSON
# (and the vector kernels under them).  The command line (main.c) and the
# conformance machinery (the runner, the schema validator, the bundled
# data; conformance/conform.h) are linked into the rcp binary only: they
# are not library API (README, "Install").
LIB_SRCS     = json.c rcp.c transport.c http.c methods.c graph.c \
               federation.c delegate.c client.c text.c model.c store.c
CONFORM_SRCS = conformance/conform.c conformance/report.c conformance/schema.c
LIB_OBJS     = $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS)) $(VEC_OBJS)
CONFORM_OBJS = $(patsubst %.c,$(BUILD)/%.o,$(CONFORM_SRCS)) \
               $(BUILD)/gen/bundle.o
PIC_OBJS     = $(patsubst $(BUILD)/%,$(BUILD)/pic/%,$(LIB_OBJS))
# what the tests, benchmarks and eval link
OBJS         = $(LIB_OBJS) $(CONFORM_OBJS)

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
# (MACHINE, not ARCH: `make cross-check ARCH=s390x` names a cross target)
MACHINE := $(shell $(CC) -dumpmachine 2>/dev/null)
ifeq ($(NO_SIMD),1)
VEC_VARIANTS =
VEC_DEFS     = -DRCP_NO_SIMD
else ifneq (,$(filter x86_64% amd64%,$(MACHINE)))
VEC_VARIANTS = sse2 avx2 avx512
VEC_DEFS     = -DRCP_HAVE_X86
else ifneq (,$(filter aarch64% arm64%,$(MACHINE)))
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
VEC_OBJS = $(BUILD)/vec.o $(patsubst %,$(BUILD)/vec_%.o,$(VEC_VARIANTS))

# --- the shared library, where the platform has one ------------------------
# ELF (Linux, the BSDs, GNU): librcp.so.VERSION with the soname
# librcp.so.SOVERSION, and the librcp.so link the compiler looks for; only
# rcp_* symbols are exported (the vec_* kernels stay inside).  Mach-O
# (macOS): the same as .dylib.  Elsewhere: librcp.a only.  While the major
# version is 0 every minor version may change the ABI, so the soname
# carries major.minor (0.1); from 1.0 on, the major alone.
VER_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
VER_MINOR := $(word 2,$(subst ., ,$(VERSION)))
SOVERSION := $(if $(filter 0,$(VER_MAJOR)),$(VER_MAJOR).$(VER_MINOR),$(VER_MAJOR))
ifneq (,$(findstring linux,$(MACHINE))$(findstring bsd,$(MACHINE))$(findstring gnu,$(MACHINE)))
SO_KIND    = elf
SO_FILE    = librcp.so.$(VERSION)
SO_NAME    = librcp.so.$(SOVERSION)
SO_DEV     = librcp.so
SO_LDFLAGS = -shared -Wl,-soname,$(SO_NAME) \
             -Wl,--version-script,$(BUILD)/librcp.map
else ifneq (,$(findstring darwin,$(MACHINE)))
SO_KIND    = macho
SO_FILE    = librcp.$(VERSION).dylib
SO_NAME    = librcp.$(SOVERSION).dylib
SO_DEV     = librcp.dylib
SO_LDFLAGS = -dynamiclib -install_name $(LIBDIR)/$(SO_NAME) \
             -compatibility_version $(SOVERSION) -current_version $(VERSION) \
             -Wl,-exported_symbol,'_rcp_*'
endif
SHARED = $(if $(filter 1,$(NO_SHARED)),,$(SO_KIND))

# --- the build remembers its flags -----------------------------------------
# $(BUILD)/flags lists every setting that goes into an object or a link.
# It is rewritten only when one changed, and everything depends on it, so
# `make NO_SIMD=1` then a plain `make` rebuilds (git's GIT-CFLAGS idea).
# `rcp --version` prints it.
shq         = '$(subst ','\'',$(1))'
CC_VERSION := $(shell $(CC) --version 2>/dev/null | sed -n 1p)
FLAGS_LINES = $(call shq,cc:       $(strip $(CC))) \
              $(call shq,compiler: $(CC_VERSION)) \
              $(call shq,cflags:   $(strip $(ALL_CFLAGS))) \
              $(call shq,cppflags: $(strip $(ALL_CPPFLAGS))) \
              $(call shq,simd:     $(strip $(VEC_DEFS) $(VEC_VARIANTS))) \
              $(call shq,ldflags:  $(strip $(LDFLAGS))) \
              $(call shq,ldlibs:   $(strip $(ALL_LDLIBS))) \
              $(call shq,shared:   $(if $(SHARED),$(SO_NAME),none))

.PHONY: all lib check test-run make-test bench eval demo clean need-check \
        install uninstall fuzz fuzz-build fuzz-smoke check-pending FORCE

all: rcp lib

lib: $(BUILD)/librcp.a $(if $(SHARED),$(BUILD)/$(SO_FILE))

$(BUILD)/flags: FORCE
	@mkdir -p $(BUILD)
	@printf '%s\n' $(FLAGS_LINES) >$@+; \
	 if cmp -s $@+ $@; then rm -f $@+; else mv -f $@+ $@; fi

# The flags as a C string for rcp --version (main.c only).
$(BUILD)/buildinfo.h: $(BUILD)/flags
	@{ echo '/* generated by make from $(BUILD)/flags */'; \
	   echo '#define RCP_BUILD_INFO \'; \
	   sed -e 's/[\\"]/\\&/g' -e 's/.*/    "  &\\n" \\/' $<; \
	   echo '    ""'; } >$@

# --- compiling and linking -------------------------------------------------
rcp: $(BUILD)/rcp
	cp $< $@

$(BUILD)/rcp: $(BUILD)/main.o $(LIB_OBJS) $(CONFORM_OBJS) $(BUILD)/flags
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(ALL_LDLIBS)

$(BUILD)/%.o: %.c rcp.h $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -c $< -o $@

$(BUILD)/main.o: main.c rcp.h conformance/conform.h $(BUILD)/buildinfo.h \
                 $(BUILD)/flags
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -I$(BUILD) -c main.c -o $@

$(CONFORM_OBJS): conformance/conform.h

$(BUILD)/bundle: conformance/bundle.c
	@mkdir -p $(dir $@)
	$(HOST_CC) -std=c99 $(WARN) -O2 -o $@ $<

# The list of files is a prerequisite too, so removing or renaming a file
# regenerates the table (the file is rewritten only when the list changes).
$(BUILD)/gen/bundle.list: FORCE
	@mkdir -p $(dir $@)
	@echo '$(BUNDLE_DATA)' | cmp -s - $@ || echo '$(BUNDLE_DATA)' > $@

$(BUILD)/gen/bundle.c: $(BUILD)/bundle $(BUNDLE_DATA) $(BUILD)/gen/bundle.list
	$(BUILD)/bundle $@ $(BUNDLE_DATA)

$(BUILD)/gen/bundle.o: $(BUILD)/gen/bundle.c rcp.h $(BUILD)/flags
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -c $< -o $@

$(BUILD)/vec.o: vec.c rcp.h $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) $(VEC_DEFS) -c $< -o $@

$(BUILD)/vec_%.o: vec.c rcp.h $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) $(VEC_DEFS) -DRCP_VEC_UNIT_$* \
	    $(VEC_FLAGS_$*) -c $< -o $@

# The same objects position-independent, for the shared library only (the
# rcp binary and librcp.a keep the compiler's default code).
$(BUILD)/pic/%.o: %.c rcp.h $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC $(ALL_CPPFLAGS) -c $< -o $@

$(BUILD)/pic/vec.o: vec.c rcp.h $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC $(ALL_CPPFLAGS) $(VEC_DEFS) -c $< -o $@

$(BUILD)/pic/vec_%.o: vec.c rcp.h $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC $(ALL_CPPFLAGS) $(VEC_DEFS) \
	    -DRCP_VEC_UNIT_$* $(VEC_FLAGS_$*) -c $< -o $@

$(BUILD)/librcp.a: $(LIB_OBJS)
	rm -f $@
	$(AR) $(ARFLAGS) $@ $^

$(BUILD)/librcp.map: $(BUILD)/flags
	@printf '{\n  global: rcp_*;\n  local: *;\n};\n' >$@

$(BUILD)/$(SO_FILE): $(PIC_OBJS) $(BUILD)/librcp.map
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(SO_LDFLAGS) -o $@ $(PIC_OBJS) \
	    $(ALL_LDLIBS)

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
	$(MAKE) CC="$(VEC_CROSS_CC)" BUILD=$(VEC_CROSS) MINICHECK=1 vec-objs \
	    $(VEC_CROSS)/tests/minicheck.o
	$(VEC_CROSS_CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -Itests/minicheck \
	    -o $(VEC_CROSS)/tests/test_vec tests/test_vec.c $(VEC_CROSS)/json.o \
	    $(VEC_CROSS)/vec*.o $(VEC_CROSS)/tests/minicheck.o -lm
	$(VEC_CROSS_RUN) $(VEC_CROSS)/tests/test_vec
vec-be-check:
	$(MAKE) vec-cross-check VEC_CROSS_CC=s390x-linux-gnu-gcc \
	    VEC_CROSS_RUN="qemu-s390x -L /usr/s390x-linux-gnu" VEC_CROSS=build/s390x

# json.c on other targets under qemu-user: test_json with the same Check
# stand-in.  Its SWAR scans assemble words byte by byte, so they must give
# the same answers big-endian and with 32-bit words.
#   make json-cross-check   s390x: big-endian, 64-bit
#   make json-32-check      i686: 32-bit, little-endian (SSE2 doubles;
#                           static: qemu-i386 7.2 hangs a forked child of
#                           a dynamic glibc program, and minicheck forks)
# Needs: apt-get install qemu-user gcc-s390x-linux-gnu gcc-i686-linux-gnu
JSON_CROSS_CC  ?= s390x-linux-gnu-gcc
JSON_CROSS_RUN ?= qemu-s390x -L /usr/s390x-linux-gnu
JSON_CROSS     ?= build/s390x
.PHONY: json-cross-check json-32-check
json-cross-check:
	@mkdir -p $(JSON_CROSS)/tests
	$(JSON_CROSS_CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -Itests/minicheck \
	    $(JSON_CROSS_FLAGS) -o $(JSON_CROSS)/tests/test_json \
	    tests/test_json.c json.c tests/minicheck/check.c -lm
	$(JSON_CROSS_RUN) $(JSON_CROSS)/tests/test_json
json-32-check:
	$(MAKE) json-cross-check JSON_CROSS_CC=i686-linux-gnu-gcc \
	    JSON_CROSS_RUN="qemu-i386 -L /usr/i686-linux-gnu" JSON_CROSS=build/i686 \
	    JSON_CROSS_FLAGS="-msse2 -mfpmath=sse -static"

# --- tests and benchmarks --------------------------------------------------
TESTS   = $(patsubst tests/%.c,%,$(wildcard tests/test_*.c))
BENCHES = $(patsubst tests/%.c,%,$(wildcard tests/bench_*.c))
FUZZ_TARGETS = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
# Check when it is installed; otherwise (or with MINICHECK=1, as every
# cross target has it) the bundled stand-in tests/minicheck, which forks
# per test as Check does, so the same tests run with only a C compiler.
ifeq ($(MINICHECK),)
MINICHECK := $(if $(shell pkg-config --exists check 2>/dev/null && echo y),,1)
endif
ifeq ($(MINICHECK),1)
CHECK_CFLAGS = -Itests/minicheck
CHECK_OBJS   = $(BUILD)/tests/minicheck.o
CHECK_LIBS   =
else
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_OBJS   =
CHECK_LIBS   = $(shell pkg-config --libs check 2>/dev/null)
endif

$(BUILD)/tests/test_%: tests/test_%.c $(OBJS) tests/testutil.h \
                       tests/serverutil.h tests/httppeer.h conformance/conform.h \
                       $(CHECK_OBJS) $(BUILD)/tests/framework
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) $(CHECK_CFLAGS) $(LDFLAGS) -o $@ \
	    $< $(OBJS) $(CHECK_OBJS) $(CHECK_LIBS) $(ALL_LDLIBS)

# which framework the tests were linked with: switching relinks them
$(BUILD)/tests/framework: FORCE
	@mkdir -p $(dir $@)
	@echo '$(if $(filter 1,$(MINICHECK)),minicheck,check)' | cmp -s - $@ \
	    || echo '$(if $(filter 1,$(MINICHECK)),minicheck,check)' > $@

$(BUILD)/tests/minicheck.o: tests/minicheck/check.c tests/minicheck/check.h \
                            $(BUILD)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -Itests/minicheck -c $< -o $@

$(BUILD)/tests/bench_%: tests/bench_%.c $(OBJS) tests/benchutil.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) $(LDFLAGS) -o $@ $< $(OBJS) \
	    $(ALL_LDLIBS)
# bench_serve's load generator writes from a thread of its own; its bulk
# load is measured next to SQLite FTS5 when libsqlite3-dev is installed
# (a bench-only anchor, like those below: skipped with a note when absent)
ANCHOR_SQLITE := $(shell pkg-config --exists sqlite3 2>/dev/null && echo 1)
$(BUILD)/tests/bench_serve: tests/bench_serve.c $(OBJS) tests/benchutil.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) \
	    $(if $(ANCHOR_SQLITE),-DRCP_ANCHOR_SQLITE \
	    $(shell pkg-config --cflags sqlite3)) $(LDFLAGS) -o $@ $< $(OBJS) \
	    $(ALL_LDLIBS) -pthread \
	    $(if $(ANCHOR_SQLITE),$(shell pkg-config --libs sqlite3))

# Bench-only anchors (issue 17): bench_json measures cJSON (C) and simdjson
# (C++, behind tests/anchor_simdjson.cpp) beside json.c when they are
# installed (Debian: libcjson-dev, libsimdjson-dev); never needed to build
# or test, and their columns are skipped with a note when absent.
ANCHOR_CJSON := $(shell pkg-config --exists libcjson 2>/dev/null && echo 1)
ANCHOR_SJ    := $(shell pkg-config --exists simdjson 2>/dev/null && \
                  command -v $(CXX) >/dev/null 2>&1 && echo 1)
ANCHOR_DEFS  = $(if $(ANCHOR_CJSON),-DRCP_ANCHOR_CJSON \
               $(shell pkg-config --cflags libcjson)) \
               $(if $(ANCHOR_SJ),-DRCP_ANCHOR_SIMDJSON)
ANCHOR_LIBS  = $(if $(ANCHOR_CJSON),$(shell pkg-config --libs libcjson)) \
               $(if $(ANCHOR_SJ),$(shell pkg-config --libs simdjson))
ANCHOR_OBJS  = $(if $(ANCHOR_SJ),$(BUILD)/tests/anchor_simdjson.o)
ANCHOR_LINK  = $(if $(ANCHOR_SJ),$(CXX),$(CC))

$(BUILD)/tests/anchor_simdjson.o: tests/anchor_simdjson.cpp tests/anchor.h
	@mkdir -p $(dir $@)
	$(CXX) -O2 -g $(shell pkg-config --cflags simdjson) -Itests -c $< -o $@

$(BUILD)/tests/bench_json: tests/bench_json.c $(OBJS) $(ANCHOR_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) $(ANCHOR_DEFS) -c $< -o $@.o
	$(ANCHOR_LINK) $(OPT) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $@.o \
	    $(OBJS) $(ANCHOR_OBJS) $(ANCHOR_LIBS) $(ALL_LDLIBS)

need-check:
ifeq ($(MINICHECK),1)
	@echo "make check: $(if $(filter command line,$(origin MINICHECK)),MINICHECK=1,Check is not installed (apt-get install check)); running the tests on the bundled tests/minicheck stand-in"
endif

CONFORM_FIELDS = --field year:int --field lang:keyword --field tags:keyword \
                 --field title:text --field published:date
# One engine of the federation the suite certifies (issue 14): an rcp
# shard with the suite's fields over the sample corpus.
fed_engine = {"id":"$(1)","transport":"stdio","command":["$(BUILD)/rcp",\
  "serve","--field","year:int","--field","lang:keyword","--field",\
  "tags:keyword","--field","title:text","--field","published:date",\
  "--corpus","tests/sample-corpus.jsonl"]}
# The durable store the suite runs against, kept between runs on purpose:
# every run must pass on the store the previous one left (make clean
# removes it).
CONFORM_STORE  = $(BUILD)/conform-store

# Unit tests, the conformance suite and the build/install tests with
# warnings as errors; the unit tests and the suite once more under ASan +
# UBSan.
check: need-check
	$(MAKE) test-run BUILD=build/dev DEVELOPER=1
	$(MAKE) test-run BUILD=build/asan DEVELOPER=1 SANFLAGS="$(SAN_CFLAGS)" \
	    OPT=-O1
	$(MAKE) make-test BUILD=build/dev DEVELOPER=1
	$(MAKE) fuzz-smoke
	@echo "make check: all passed (plain and sanitized)"

test-run: $(patsubst %,$(BUILD)/tests/%,$(TESTS)) $(BUILD)/rcp \
          $(patsubst %,$(BUILD)/fuzz/replay_%,$(FUZZ_TARGETS))
	@set -e; for t in $(TESTS); do \
	  echo "== $$t ($(BUILD))"; \
	  RCP_BIN=$(BUILD)/rcp $(BUILD)/tests/$$t; \
	done
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz corpus replay: $$t ($(BUILD))"; \
	  $(BUILD)/fuzz/replay_$$t tests/fuzz/seeds/$$t tests/fuzz/regress/$$t; \
	done
	@echo "== HTTP end to end with curl ($(BUILD))"
	@tests/test_http_curl.sh $(BUILD)/rcp
	@echo "== conformance, bare server ($(BUILD))"
	@$(BUILD)/rcp conform --quiet -- $(BUILD)/rcp serve --debug
	@echo "== conformance, with filter fields ($(BUILD))"
	@$(BUILD)/rcp conform -- $(BUILD)/rcp serve --debug $(CONFORM_FIELDS)
	@echo "== conformance, an aggregator over three shards (§16, $(BUILD))"
	@printf '%s\n' '{"id":"conform-federation","engines":[$(call \
	    fed_engine,a),$(call fed_engine,b),$(call fed_engine,c)]}' \
	    > $(BUILD)/conform-registry.json
	@$(BUILD)/rcp conform --quiet -- $(BUILD)/rcp serve \
	    --registry $(BUILD)/conform-registry.json
	@echo "== conformance, embed and rerank by another rcp (issue 18, $(BUILD))"
	@$(BUILD)/rcp conform --quiet -- $(BUILD)/rcp serve --debug \
	    $(CONFORM_FIELDS) --embed-engine '$(BUILD)/rcp serve' \
	    --rerank-engine '$(BUILD)/rcp serve'
	@echo "== conformance, a store reused across runs ($(CONFORM_STORE))"
	@$(BUILD)/rcp conform --quiet -- $(BUILD)/rcp serve --data $(CONFORM_STORE)
	@$(BUILD)/rcp conform --quiet -- $(BUILD)/rcp serve --data $(CONFORM_STORE) \
	    $(CONFORM_FIELDS)
	@$(MAKE) --no-print-directory conform-http BUILD=$(BUILD)

# The suite over HTTP (§5.2): `rcp conform --http URL` against `rcp serve
# --http 0` -- bare, with filter fields, and behind a bearer token.  The
# server prints its URL on stderr ("rcp: listening on http://HOST:PORT/BASE",
# rcp.1); SIGTERM stops it.  test-run runs it; so does make conform-http
# on its own.
CONFORM_HTTP_RUN = \
	d=$$(mktemp -d); $(BUILD)/rcp serve --http 0 $(1) 2>$$d/err & pid=$$!; \
	i=0; until grep -q '^rcp: listening on ' $$d/err; do \
	  i=$$((i+1)); [ $$i -lt 200 ] || { cat $$d/err; kill $$pid; exit 1; }; \
	  sleep 0.05; done; \
	url=$$(sed -n 's/^rcp: listening on //p' $$d/err); \
	$(BUILD)/rcp conform --quiet --http $$url $(2); rc=$$?; \
	kill -TERM $$pid; wait $$pid; rm -rf $$d; exit $$rc
.PHONY: conform-http
conform-http: $(BUILD)/rcp
	@echo "== conformance over HTTP, bare server ($(BUILD))"
	@$(call CONFORM_HTTP_RUN,--debug,)
	@echo "== conformance over HTTP, with filter fields ($(BUILD))"
	@$(call CONFORM_HTTP_RUN,--debug $(CONFORM_FIELDS),)
	@echo "== conformance over HTTP, behind a bearer token ($(BUILD))"
	@printf 'conform-token write\n' > $(BUILD)/conform-tokens
	@$(call CONFORM_HTTP_RUN,--debug --auth-token-file $(BUILD)/conform-tokens,--header 'Authorization: Bearer conform-token')
	@echo "== conformance over HTTP, stateful sessions ($(BUILD))"
	@$(call CONFORM_HTTP_RUN,--debug --sessions,)

# --- fuzzing ---------------------------------------------------------------
# One libFuzzer target per file, tests/fuzz/fuzz_<name>.c (tests/fuzz/fuzz.h
# says what they share), with its seeds in tests/fuzz/seeds/<name>/ and the
# inputs that once failed in tests/fuzz/regress/<name>/, one dictionary,
# tests/fuzz/rcp.dict.  Two builds of each:
#   $(BUILD)/fuzz/replay_<name>  any compiler, tests/fuzz/replay.c's main:
#                                test-run replays seeds and regressions
#   build/fuzz/fuzz/fuzz_<name>  clang -fsanitize=fuzzer,address,undefined
#                                (make fuzz), run by make fuzz-smoke
# fuzz-smoke runs each for FUZZ_SECONDS on a corpus kept in
# build/fuzz/corpus/<name> (it grows from run to run; the seeds are read,
# never written), and fails on the first crash, leak, timeout or broken
# oracle, leaving the input in build/fuzz/crash-<name>-*.  A long run is
# the same with more time: make fuzz-smoke FUZZ_SECONDS=600.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
FUZZ_BUILD    = build/fuzz
FUZZ_SAN      = -fsanitize=fuzzer-no-link,address,undefined \
                -fno-omit-frame-pointer -fno-sanitize-recover=all
# libFuzzer's options for every run, then per target (-max_len: the
# longest input it makes; the server and the store need room for a few
# frames, the others stay small and fast)
FUZZ_OPTS     = -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -dict=tests/fuzz/rcp.dict
FUZZ_OPTS_server = -max_len=8192
FUZZ_OPTS_filter = -max_len=2048
FUZZ_OPTS_store  = -max_len=16384
FUZZ_OPTS_json   = -max_len=4096
FUZZ_OPTS_b64    = -max_len=1100
FUZZ_OPTS_client = -max_len=4096
FUZZ_PROBE = printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)\
  { (void)d; (void)n; return 0; }\n' | $(FUZZ_CC) -fsanitize=fuzzer \
  -x c -o /dev/null - >/dev/null 2>&1

$(BUILD)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c \
                        tests/fuzz/fuzz.h $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -Itests/fuzz $(LDFLAGS) -o $@ $< \
	    tests/fuzz/replay.c $(LIB_OBJS) $(ALL_LDLIBS)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) -Itests/fuzz -fsanitize=fuzzer \
	    $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(ALL_LDLIBS)

fuzz:
	@$(FUZZ_PROBE) || { echo "make fuzz: $(FUZZ_CC) cannot link" \
	  "-fsanitize=fuzzer (Debian: apt-get install clang libclang-rt-dev)"; \
	  exit 1; }
	@$(MAKE) --no-print-directory fuzz-build BUILD=$(FUZZ_BUILD) \
	    CC=$(FUZZ_CC) DEVELOPER=1 OPT=-O1 SANFLAGS="$(FUZZ_SAN)"

fuzz-build: $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))

fuzz-smoke:
	@if ! $(FUZZ_PROBE); then echo "fuzz-smoke: skipped: $(FUZZ_CC) has" \
	  "no libFuzzer (apt-get install clang libclang-rt-dev)"; exit 0; fi; \
	$(MAKE) --no-print-directory fuzz || exit 1; \
	$(foreach t,$(FUZZ_TARGETS),opts_$(t)='$(FUZZ_OPTS_$(t))';) \
	for t in $(FUZZ_TARGETS); do \
	  eval "opts=\$$opts_$$t"; \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  log=$(FUZZ_BUILD)/fuzz-$$t.log; \
	  echo "== fuzz_$$t, $(FUZZ_SECONDS) s"; \
	  if ! $(FUZZ_BUILD)/fuzz/fuzz_$$t $(FUZZ_OPTS) $$opts \
	      -max_total_time=$(FUZZ_SECONDS) \
	      -artifact_prefix=$(FUZZ_BUILD)/crash-$$t- \
	      $(FUZZ_BUILD)/corpus/$$t tests/fuzz/seeds/$$t >$$log 2>&1; then \
	    tail -n 60 $$log; echo "fuzz_$$t FAILED: the input is in" \
	      "$(FUZZ_BUILD)/crash-$$t-*, the log in $$log"; exit 1; fi; \
	  grep -E '^#[0-9]+.*(DONE|pulse)' $$log | tail -n 1; \
	  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' $$log \
	    | tr '\n' ' '; echo; \
	done

# Tests of defects that were found (by the fuzzers, the bounds tests)
# and reported, whose fixes belong to code another branch is changing:
# each fails until its fix lands, then moves into make check (README,
# "Reliability").
check-pending: $(BUILD)/tests/test_bounds $(BUILD)/rcp
	CK_RUN_CASE=pending RCP_PENDING=1 RCP_BIN=$(BUILD)/rcp \
	    $(BUILD)/tests/test_bounds

# The build as a user drives it (flags, NO_SIMD, -Werror, eval's
# collection) and the install: tests/test_make.sh, a shell script because
# it drives make, pkg-config and cc.
make-test: lib $(BUILD)/rcp
	@echo "== test_make.sh ($(BUILD))"
	@MAKE="$(MAKE)" CC="$(CC)" BUILD="$(BUILD)" sh tests/test_make.sh

# The suite's published reports, for our server in three configurations:
# a compatibility matrix (HTML, one self-contained page) and JUnit XML in
# $(REPORT_DIR), then the page rendered by headless Chromium (Debian's
# chromium package) to a PNG, to show it renders in a real browser.
REPORT_DIR = $(BUILD)/report
CHROMIUM  ?= chromium
CHROMIUM_FLAGS = --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync
.PHONY: conform-report
conform-report: $(BUILD)/rcp
	@mkdir -p $(REPORT_DIR)
	@rm -rf $(REPORT_DIR)/store
	@$(BUILD)/rcp conform --quiet --matrix --html $(REPORT_DIR)/conform.html \
	    --junit $(REPORT_DIR)/conform.xml -- $(BUILD)/rcp serve ::: \
	    $(BUILD)/rcp serve --debug $(CONFORM_FIELDS) ::: \
	    $(BUILD)/rcp serve --data $(REPORT_DIR)/store --max-batch 50
	@echo "wrote $(REPORT_DIR)/conform.html and $(REPORT_DIR)/conform.xml"
	@if ! command -v $(CHROMIUM) >/dev/null 2>&1; then \
	  echo "$(CHROMIUM) not found: the render check is skipped" \
	       "(apt-get install chromium)"; exit 0; fi; \
	prof=$$(mktemp -d); \
	$(CHROMIUM) $(CHROMIUM_FLAGS) --user-data-dir=$$prof --dump-dom \
	    file://$(CURDIR)/$(REPORT_DIR)/conform.html 2>/dev/null \
	    | grep -q 'Compatibility matrix' || { echo "the page did not render"; \
	    rm -rf $$prof; exit 1; }; \
	$(CHROMIUM) $(CHROMIUM_FLAGS) --user-data-dir=$$prof \
	    --window-size=1280,2400 \
	    --screenshot=$(CURDIR)/$(REPORT_DIR)/conform.png \
	    file://$(CURDIR)/$(REPORT_DIR)/conform.html >/dev/null 2>&1; \
	rm -rf $$prof; \
	test -s $(REPORT_DIR)/conform.png || { echo "no screenshot"; exit 1; }; \
	echo "rendered by $(CHROMIUM): $(REPORT_DIR)/conform.png"

bench: $(patsubst %,$(BUILD)/tests/%,$(BENCHES)) $(BUILD)/rcp
	@set -e; for b in $(BENCHES); do \
	  echo "== $$b"; RCP_BIN=$(BUILD)/rcp CRANFIELD=$(CRANFIELD) \
	    $(BUILD)/tests/$$b; done

# Retrieval quality of the built-in engine (tests/eval.c): Cranfield, split
# into a development and a test half, and the KJV passages, a collection
# held out whole (tests/kjv/README.md); one table.  Each
# collection is said plainly when it is not there (exit 2); CRANFIELD= or
# KJV= (empty) leaves that one out.  The KJV text is not in git: it is
# extracted from Debian's bible-kjv-text with its reader, bible(1), into
# $(KJV_TEXT) (public domain text; the package is about 2.5 MB).
CRANFIELD ?= ../shared/data/cranfield
KJV       ?= tests/kjv
KJV_TEXT  ?= $(BUILD)/kjv-verses.txt
BIBLE     ?= bible
eval:
	@if [ -n "$(CRANFIELD)" ]; then for f in cran.all.1400 cran.qry cranqrel; do \
	  [ -r "$(CRANFIELD)/$$f" ] && continue; \
	  echo "make eval: the Cranfield collection is not in $(CRANFIELD)" \
	       "($$f is missing)." >&2; \
	  echo "Get cran.tar.gz from" \
	       "http://ir.dcs.gla.ac.uk/resources/test_collections/cran/," >&2; \
	  echo "unpack it (cran.all.1400, cran.qry, cranqrel) and run:" \
	       "make eval CRANFIELD=DIR (or CRANFIELD= to leave it out)" >&2; \
	  exit 2; done; fi
	@if [ -n "$(KJV)" ] && [ ! -r "$(KJV_TEXT)" ]; then \
	  if ! command -v "$(BIBLE)" >/dev/null 2>&1; then \
	    echo "make eval: the KJV collection needs the King James text" \
	         "from Debian's bible-kjv-text and its reader bible(1)." >&2; \
	    echo "Install them with:  apt-get install bible-kjv" \
	         "  (or run make eval KJV= to leave the collection out)" >&2; \
	    exit 2; fi; \
	  mkdir -p "$(dir $(KJV_TEXT))"; \
	  "$(BIBLE)" -f Gen1:1-Rev22:21 >"$(KJV_TEXT)+" && \
	    mv -f "$(KJV_TEXT)+" "$(KJV_TEXT)" || { rm -f "$(KJV_TEXT)+"; exit 2; }; fi
	@$(MAKE) --no-print-directory $(BUILD)/tests/eval
	$(BUILD)/tests/eval $(if $(CRANFIELD),--cranfield $(CRANFIELD)) \
	    $(if $(KJV),--kjv $(KJV) --kjv-text $(KJV_TEXT))

$(BUILD)/tests/eval: tests/eval.c $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_CPPFLAGS) $(LDFLAGS) -o $@ $< $(OBJS) \
	    $(ALL_LDLIBS)

# --- install ---------------------------------------------------------------
# What a C library installs, and nothing else; uninstall removes exactly
# these names (the shared library's three names whether or not this
# build made one).
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL      ?= install
pcdir         = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

$(BUILD)/rcp.pc: FORCE
	@mkdir -p $(BUILD)
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(call pcdir,$(LIBDIR))' \
	  'includedir=$(call pcdir,$(INCLUDEDIR))' '' 'Name: rcp' \
	  'Description: RCP/1 reference implementation: protocol, retrieval engine, client, JSON' \
	  'Version: $(VERSION)' 'Cflags: -I$${includedir}' \
	  'Libs: -L$${libdir} -lrcp' 'Libs.private: -lm' >$@

install: all $(BUILD)/rcp.pc
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
	    $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	$(INSTALL) -m 755 $(BUILD)/rcp $(DESTDIR)$(BINDIR)/rcp
	$(INSTALL) -m 644 $(BUILD)/librcp.a $(DESTDIR)$(LIBDIR)/librcp.a
	$(INSTALL) -m 644 rcp.h $(DESTDIR)$(INCLUDEDIR)/rcp.h
	$(INSTALL) -m 644 $(BUILD)/rcp.pc $(DESTDIR)$(PKGCONFIGDIR)/rcp.pc
	$(INSTALL) -m 644 rcp.1 $(DESTDIR)$(MANDIR)/man1/rcp.1
	$(INSTALL) -m 644 rcp.3 $(DESTDIR)$(MANDIR)/man3/rcp.3
ifneq ($(SHARED),)
	$(INSTALL) -m 755 $(BUILD)/$(SO_FILE) $(DESTDIR)$(LIBDIR)/$(SO_FILE)
	ln -sf $(SO_FILE) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/$(SO_DEV)
endif

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/rcp $(DESTDIR)$(LIBDIR)/librcp.a \
	    $(DESTDIR)$(INCLUDEDIR)/rcp.h $(DESTDIR)$(PKGCONFIGDIR)/rcp.pc \
	    $(DESTDIR)$(MANDIR)/man1/rcp.1 $(DESTDIR)$(MANDIR)/man3/rcp.3 \
	    $(if $(SO_KIND),$(addprefix $(DESTDIR)$(LIBDIR)/,$(SO_FILE) \
	        $(SO_NAME) $(SO_DEV)))

# --- the demo --------------------------------------------------------------
# The worked session of the README's quick start (after the spec's
# Appendix D): the server starts on the sample corpus (the project's own
# writing); each step says in one line what it shows, then its request
# (->) and what came back (<-), up to the response with the request's id.
DEMO_RCP  ?= ./rcp
DEMO_SERVE = $(DEMO_RCP) serve --corpus tests/sample-corpus.jsonl \
             --field file:keyword --field section:text --field kind:keyword
DEMO_STEPS = \
  '1. initialize: the client says which protocol version it speaks; the server answers with the version both will use and every capability it offers.' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"client":{"name":"demo","version":"1"}}}' \
  '2. retrieve, hybrid + cross-encoder rerank, filtered to README.md: progress frames (with partial hits after recall) come first, then the hits with their scores per stage, citation and trust.' \
  '{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"what happens to a batch that holds only notifications","k":2,"mode":"hybrid","rerank":{"method":"cross-encoder","topN":20},"filter":{"field":"file","op":"eq","value":"README.md"},"_meta":{"progressToken":"t2"}}}' \
  '3. index/add: a new document; once the write is acknowledged it is searchable.' \
  '{"jsonrpc":"2.0","id":3,"method":"index/add","params":{"documents":[{"id":"note-1","text":"The demo wrote this note: an acknowledged index/add is searchable at once.","meta":{"file":"NOTES.md","kind":"note"}}]}}' \
  '4. retrieve, filtered to kind = note: the document added a moment ago is the hit.' \
  '{"jsonrpc":"2.0","id":4,"method":"retrieve","params":{"query":"which note did the demo write","k":1,"filter":{"field":"kind","op":"eq","value":"note"}}}' \
  '5. shutdown: the server answers {} and exits.' \
  '{"jsonrpc":"2.0","id":5,"method":"shutdown","params":{}}'
demo: SHELL := /bin/bash
demo: $(DEMO_RCP)
	@coproc SRV { $(DEMO_SERVE) 2>/dev/null; }; id=0; \
	for f in $(DEMO_STEPS); do \
	  case $$f in [0-9]*) printf '\n%s\n' "$$f"; continue;; esac; \
	  id=$$((id + 1)); \
	  printf -- '-> %s\n' "$$f"; printf '%s\n' "$$f" >&$${SRV[1]}; \
	  while read -r line <&$${SRV[0]}; do printf '<- %s\n' "$$line"; \
	    case $$line in *'"id":'$$id,*) break;; esac; done; \
	done; wait

clean:
	rm -rf build rcp

# ============================================================================
# Portability matrix (issue 16): the whole system on other targets
#
#   make cross-check            every target below, then the summary table
#   make cross-check ARCH=A     one of them (also: make cross-check-A);
#                               ARCH="A B" several
#   make -j2 --output-sync=target cross-check   two at a time (.ci/run)
#   make cross-tools            apt-get install what the matrix needs
#
# Cross targets (Debian 12's cross gcc, run under qemu-user; Check is not
# cross-installed, so tests/minicheck stands in):
#   aarch64 armhf i686 s390x mips riscv64
# Native targets (this machine): clang, tcc, nosimd (cc with NO_SIMD=1).
#
# Per target: rcp and every unit test are built and run (a test and every
# server it starts run emulated: RCP_BIN is a qemu wrapper), including
# test_golden (the golden session and the stores written on x86-64 and
# s390x, tests/golden); then the conformance suite, run by the native
# oracle against the target's server, must give every check the same
# verdict as against the native server.  Wall time per target goes to
# build/cross/summary; the table is printed at the end.
# ============================================================================
CROSS_ARCHES  = aarch64 armhf i686 s390x mips riscv64
NATIVE_CHECKS = clang tcc nosimd
CROSS_MATRIX  = $(CROSS_ARCHES) $(NATIVE_CHECKS)
CROSS_DIR     = build/cross

CROSS_TRIPLE_aarch64 = aarch64-linux-gnu
CROSS_TRIPLE_armhf   = arm-linux-gnueabihf
CROSS_TRIPLE_i686    = i686-linux-gnu
CROSS_TRIPLE_s390x   = s390x-linux-gnu
CROSS_TRIPLE_mips    = mips-linux-gnu
CROSS_TRIPLE_riscv64 = riscv64-linux-gnu
CROSS_QEMU_aarch64   = qemu-aarch64
CROSS_QEMU_armhf     = qemu-arm
CROSS_QEMU_i686      = qemu-i386
CROSS_QEMU_s390x     = qemu-s390x
CROSS_QEMU_mips      = qemu-mips
CROSS_QEMU_riscv64   = qemu-riscv64
# qemu-i386 7.2 (Debian 12) hangs the forked child of a dynamically linked
# glibc program, and the tests fork: the i686 build links statically.
CROSS_LDLIBS_i686    = -static

# How each target builds (make variables) and what it runs under.
cross_cc    = $(if $(CROSS_TRIPLE_$(1)),$(CROSS_TRIPLE_$(1))-gcc,$(if \
              $(filter nosimd,$(1)),$(CC),$(1)))
cross_vars  = CC="$(call cross_cc,$(1))" BUILD=$(CROSS_DIR)/$(1) DEVELOPER=1 \
              $(if $(CROSS_TRIPLE_$(1)),MINICHECK=1) \
              $(if $(filter nosimd,$(1)),NO_SIMD=1) \
              $(if $(CROSS_LDLIBS_$(1)),LDLIBS="$(CROSS_LDLIBS_$(1))")
cross_qemu  = $(if $(CROSS_QEMU_$(1)),QEMU_LD_PREFIX=/usr/$(CROSS_TRIPLE_$(1)) \
              $(CROSS_QEMU_$(1)))
# emulation is ~10-30x slower: Check's per-test timeouts stretch with it
cross_tmult = $(if $(CROSS_QEMU_$(1)),20,1)
# ... and the deadlines a test sets between a healthy process and a slow
# one (tests/testutil.h test_time_scale) stretch 5x, so their order holds
cross_tscale = $(if $(CROSS_QEMU_$(1)),5,1)

# Debian's names for the cross libc (a Recommends of the cross gcc)
CROSS_DEBARCH_aarch64 = arm64
CROSS_DEBARCH_armhf   = armhf
CROSS_DEBARCH_i686    = i386
CROSS_DEBARCH_s390x   = s390x
CROSS_DEBARCH_mips    = mips
CROSS_DEBARCH_riscv64 = riscv64
CROSS_PKGS = qemu-user tcc clang time $(foreach a,$(CROSS_ARCHES),\
             gcc-$(CROSS_TRIPLE_$(a)) libc6-dev-$(CROSS_DEBARCH_$(a))-cross)

.PHONY: cross-check cross-tools cross-pkgs cross-build cross-summary \
        $(addprefix cross-check-,$(CROSS_MATRIX))

cross-check:
	@rm -f $(CROSS_DIR)/summary
	@$(MAKE) --no-print-directory \
	    $(addprefix cross-check-,$(or $(ARCH),$(CROSS_MATRIX)))
	@$(MAKE) --no-print-directory cross-summary

cross-tools:
	apt-get install -y --no-install-recommends $(CROSS_PKGS)

# the Debian packages of the matrix, one per line (.ci/run reads them)
cross-pkgs:
	@printf '%s\n' $(CROSS_PKGS)

# what one target builds: rcp, every unit test and the fuzz corpus replays
cross-build: $(patsubst %,$(BUILD)/tests/%,$(TESTS)) $(BUILD)/rcp \
             $(patsubst %,$(BUILD)/fuzz/replay_%,$(FUZZ_TARGETS))

# Under qemu-user a process's peak RSS is the emulator's (its code cache
# alone is ~14 MiB), so test_bounds' memory bounds would measure qemu:
# emulated targets run only its durability case (TEST:CASE, CK_RUN_CASE);
# natively it runs whole.
CROSS_QEMU_CASES = test_bounds:durability

# The native verdict of every check, once per build of the oracle.
$(CROSS_DIR)/conform-native.txt: $(BUILD)/rcp $(wildcard conformance/*.json)
	@mkdir -p $(dir $@)
	@{ $(BUILD)/rcp conform -- $(BUILD)/rcp serve --debug; \
	   $(BUILD)/rcp conform -- $(BUILD)/rcp serve --debug $(CONFORM_FIELDS); \
	 } | awk '/^(PASS|FAIL|SKIP|WARN) /{print $$1, $$3}' > $@

$(addprefix cross-check-,$(CROSS_MATRIX)): cross-check-%: $(BUILD)/rcp \
    $(CROSS_DIR)/conform-native.txt
	@t0=$$(date +%s); a=$*; x=$(CROSS_DIR)/$*; \
	echo "== cross-check $$a: build ($(call cross_cc,$*))"; \
	rm -rf $$x; mkdir -p $$x; \
	$(MAKE) --no-print-directory $(call cross_vars,$*) cross-build \
	    > $$x.build.log 2>&1 || { tail -20 $$x.build.log; exit 1; }; \
	printf '#!/bin/sh\nexec env %s %s "$$@"\n' "$(call cross_qemu,$*)" \
	    "$(abspath $(CROSS_DIR)/$*)/rcp" > $$x/rcp-run; \
	chmod +x $$x/rcp-run; \
	set -e; for t in $(TESTS); do \
	  echo "== cross-check $$a: $$t ($$(( $$(date +%s) - t0 ))s in)"; \
	  printf '#!/bin/sh\nexec env %s %s "$$@"\n' "$(call cross_qemu,$*)" \
	      "$(abspath $(CROSS_DIR)/$*)/tests/$$t" > $$x/tests/$$t-run; \
	  chmod +x $$x/tests/$$t-run; \
	  case=; for tc in $(if $(CROSS_QEMU_$*),$(CROSS_QEMU_CASES)); do \
	    [ "$${tc%%:*}" != $$t ] || case=$${tc#*:}; done; \
	  env $${case:+CK_RUN_CASE=$$case} RCP_BIN=$$x/rcp-run \
	      RCP_TEST_SELF=$$x/tests/$$t-run \
	      CK_TIMEOUT_MULTIPLIER=$(call cross_tmult,$*) \
	      RCP_TEST_TIME_SCALE=$(call cross_tscale,$*) \
	      $(call cross_qemu,$*) $$x/tests/$$t; \
	done; \
	for t in $(FUZZ_TARGETS); do \
	  echo "== cross-check $$a: fuzz corpus replay $$t"; \
	  $(call cross_qemu,$*) $$x/fuzz/replay_$$t tests/fuzz/seeds/$$t \
	      tests/fuzz/regress/$$t; \
	done; \
	echo "== cross-check $$a: conformance (native oracle, $$a server;" \
	     "$$(( $$(date +%s) - t0 ))s in)"; \
	{ $(BUILD)/rcp conform -- $$x/rcp-run serve --debug || true; \
	  $(BUILD)/rcp conform -- $$x/rcp-run serve --debug $(CONFORM_FIELDS) \
	      || true; } > $$x.conform.txt; \
	awk '/^(PASS|FAIL|SKIP|WARN) /{print $$1, $$3}' $$x.conform.txt \
	    | diff $(CROSS_DIR)/conform-native.txt - \
	    || { echo "cross-check $$a: conformance verdicts differ from native"; \
	         exit 1; }; \
	n=$$(grep -c '^PASS' $$x.conform.txt); \
	s=$$(( $$(date +%s) - t0 )); \
	echo "== cross-check $$a: passed ($$n conformance checks passed, $${s}s)"; \
	cc="$(call cross_cc,$*)"; v=$$($$cc -dumpversion 2>/dev/null); \
	printf '%s|%s %s%s|%s|%s\n' "$$a" "$$cc" "$$v" \
	    "$(if $(filter nosimd,$*), NO_SIMD=1)" "$$n" "$$s" \
	    >> $(CROSS_DIR)/summary

cross-summary:
	@echo "cross-check summary (every unit test passed; conformance verdicts = native):"
	@printf '  %-9s %-34s %-12s %s\n' target compiler conformance 'wall s'
	@for a in $(CROSS_MATRIX); do grep "^$$a|" $(CROSS_DIR)/summary; done \
	    | awk -F'|' '{printf "  %-9s %-34s %-12s %s\n", $$1, $$2, $$3" passed", $$4}'

# Rewrites tests/golden/ (see tests/test_golden.c): the responses of the
# golden and the reopen session as x86-64 answers them (the tiny build's
# too: tiny-*).  The stores the reopen session opens (written on x86-64
# and, cross-built under qemu, on s390x) are written only when missing or
# with STORES=1: their salt is random, so rewriting them for nothing would
# change every byte of the CRCs.  Only for a change meant to change
# results or the store format: review the diff.  usage.latencyMs is
# written as 0 (the test ignores it).
GOLDEN_SERVE = serve --field file:keyword --field section:text \
               --field kind:keyword
CORPUS_FILE  = tests/sample-corpus.jsonl
GOLDEN_SED   = sed -E 's/"latencyMs":[0-9.eE+-]+/"latencyMs":0/g'
GOLDEN_TMP   = $(CROSS_DIR)/golden
.PHONY: golden golden-stores
golden: $(BUILD)/rcp
	@case "$(MACHINE)" in x86_64*) ;; *) \
	  echo "make golden: the golden files are x86-64's; this is $(MACHINE)"; \
	  exit 1;; esac
	$(MAKE) --no-print-directory NO_SIMD=1 OPT=-Os BUILD=$(TINY_DIR) \
	    CFLAGS="$(TINY_CFLAGS)" tiny-build
	@if [ "$(STORES)" = 1 ] || [ ! -f tests/golden/store-x86_64.log ] \
	     || [ ! -f tests/golden/store-s390x.log ]; then \
	  $(MAKE) --no-print-directory golden-stores; \
	else echo "make golden: keeping the stores (STORES=1 rewrites them)"; fi
	rm -rf $(GOLDEN_TMP) && mkdir -p $(GOLDEN_TMP)/full $(GOLDEN_TMP)/tiny
	for b in $(BUILD)/rcp:responses $(TINY_DIR)/rcp-tiny:tiny-responses; do \
	  RCP_SIMD=scalar $${b%%:*} $(GOLDEN_SERVE) --corpus $(CORPUS_FILE) \
	      < tests/golden/requests.jsonl | $(GOLDEN_SED) \
	      > tests/golden/$${b#*:}.jsonl || exit 1; done
	cp tests/golden/store-x86_64.log $(GOLDEN_TMP)/full/rcp.log
	cp tests/golden/store-x86_64.log $(GOLDEN_TMP)/tiny/rcp.log
	for b in $(BUILD)/rcp:full:reopen-responses \
	         $(TINY_DIR)/rcp-tiny:tiny:tiny-reopen-responses; do \
	  d=$${b#*:}; RCP_SIMD=scalar $${b%%:*} $(GOLDEN_SERVE) \
	      --data $(GOLDEN_TMP)/$${d%%:*} < tests/golden/reopen.jsonl \
	      | $(GOLDEN_SED) > tests/golden/$${b##*:}.jsonl || exit 1; done
	@echo "make golden: tests/golden rewritten; review 'git diff tests/golden'"

golden-stores: $(BUILD)/rcp
	$(MAKE) --no-print-directory $(call cross_vars,s390x) \
	    $(CROSS_DIR)/s390x/rcp
	rm -rf $(GOLDEN_TMP)/stores && mkdir -p $(GOLDEN_TMP)/stores
	RCP_SIMD=scalar $(BUILD)/rcp $(GOLDEN_SERVE) --corpus $(CORPUS_FILE) \
	    --data $(GOLDEN_TMP)/stores/x86_64 < tests/golden/requests.jsonl \
	    > /dev/null
	RCP_SIMD=scalar $(call cross_qemu,s390x) $(CROSS_DIR)/s390x/rcp \
	    $(GOLDEN_SERVE) --corpus $(CORPUS_FILE) \
	    --data $(GOLDEN_TMP)/stores/s390x < tests/golden/requests.jsonl \
	    > /dev/null
	cp $(GOLDEN_TMP)/stores/x86_64/rcp.log tests/golden/store-x86_64.log
	cp $(GOLDEN_TMP)/stores/s390x/rcp.log tests/golden/store-s390x.log

# ============================================================================
# make tiny: rcp for microcontroller-class Linux (README "Portability")
#
# -DRCP_TINY: a model without a dense index (no stored vectors and no
# dense features in the lexicon, so no dense or hybrid retrieval and no
# MMR -- none of it advertised) and no conformance runner (conform.c,
# schema.c and the bundled data are not linked); NO_SIMD=1, -Os, unused
# code dropped at link time.
# Prints the binary's size and the peak resident memory of a server on
# the sample corpus, each next to the full build's, then checks the tiny
# server: the conformance suite (the native oracle: no failure, an honest
# level) and test_golden (its own goldens, tests/golden/tiny-*).
# ============================================================================
TINY_DIR    = build/tiny
TINY_OBJS   = main.o $(LIB_SRCS:.c=.o) vec.o      # the library, no conformance
TINY_CFLAGS = -DRCP_TINY -ffunction-sections -fdata-sections
TINY_SERVE  = serve --corpus $(CORPUS_FILE) --field file:keyword \
              --field section:text --field kind:keyword
.PHONY: tiny tiny-build
tiny: $(BUILD)/rcp $(BUILD)/tests/test_golden
	@$(MAKE) --no-print-directory NO_SIMD=1 OPT=-Os BUILD=$(TINY_DIR) \
	    CFLAGS="$(TINY_CFLAGS)" tiny-build
	@echo "== tiny: size (text data bss, bytes)"
	@size $(TINY_DIR)/rcp-tiny $(BUILD)/rcp | awk 'NR > 1 { printf \
	    "  %-20s %8d %6d %6d\n", $$6, $$1, $$2, $$3 }'
	@echo "== tiny: peak resident memory, sample corpus + the golden session"
	@for b in $(TINY_DIR)/rcp-tiny $(BUILD)/rcp; do \
	  if [ -x /usr/bin/time ]; then \
	    /usr/bin/time -f %M -o $(TINY_DIR)/rss $$b $(TINY_SERVE) \
	        < tests/golden/requests.jsonl >/dev/null 2>&1; \
	    printf '  %-20s %8s KB\n' $$b "$$(cat $(TINY_DIR)/rss)"; \
	  else echo "  (GNU time is not installed: apt-get install time)"; fi; \
	done
	@echo "== tiny: conformance (native oracle, tiny server)"
	@out=$$($(BUILD)/rcp conform -- $(TINY_DIR)/rcp-tiny serve --debug \
	    $(CONFORM_FIELDS)); rc=$$?; \
	  printf '%s\n' "$$out" | grep -v '^PASS'; exit $$rc
	@echo "== tiny: golden session"
	@RCP_BIN=$(TINY_DIR)/rcp-tiny $(BUILD)/tests/test_golden

tiny-build: $(TINY_DIR)/rcp-tiny

$(TINY_DIR)/rcp-tiny: $(addprefix $(TINY_DIR)/,$(TINY_OBJS)) $(TINY_DIR)/flags
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wl,--gc-sections -o $@ \
	    $(filter %.o,$^) $(ALL_LDLIBS)
