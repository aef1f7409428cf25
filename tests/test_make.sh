#!/bin/sh
# test_make.sh -- the build and the install as a user drives them: the
# user's flags, the remembered flags, -Werror only for the project,
# make eval without the collection, make install / uninstall, pkg-config
# (static and shared), the man pages, the demo.  make check runs it (a
# shell script because it drives make, pkg-config and cc, not a C API).
#
# Environment: MAKE, CC, BUILD (the build make check made; make install
# installs it).  Run from the top of the checkout.  Every section prints
# "ok  WHAT" or stops at the first failure with what it saw.

set -u
MAKE=${MAKE:-make}
CC=${CC:-cc}
BUILD=${BUILD:-build/rel}
ROOT=$(pwd)
unset MAKEFLAGS MFLAGS MAKELEVEL DEVELOPER
T=$(mktemp -d "${TMPDIR:-/tmp}/rcp-test-make.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

fail() { echo "test_make.sh: FAIL: $*" >&2; exit 1; }
ok()   { echo "ok  $*"; }
# make quietly into $T/make.log; a failure shows the log
mk()   { $MAKE --no-print-directory "$@" >"$T/make.log" 2>&1 ||
         { cat "$T/make.log" >&2; fail "make $*"; }; }
has()  { case $1 in *"$2"*) return 0;; esac; return 1; }
need() { has "$1" "$2" || { printf '%s\n' "$1" >&2; fail "$3"; }; }

VERSION=$(sed -n 's/^#define RCP_VERSION *"\([^"]*\)".*/\1/p' rcp.h)
MACHINE=$($CC -dumpmachine 2>/dev/null)

# --- CC, CFLAGS, CPPFLAGS, LDFLAGS, LDLIBS are the user's; make -j ---------
cat >"$T/cc" <<EOF
#!/bin/sh
echo "\$*" >>"$T/cc.log"
exec $CC "\$@"
EOF
chmod +x "$T/cc"
B=$T/b
mk -j3 BUILD="$B" CC="$T/cc" OPT=-O0 CFLAGS=-g0 CPPFLAGS=-DRCP_TEST_CPP \
   LDFLAGS=-Wl,-O1 LDLIBS=-lc "$B/rcp"
[ "$(grep -c ' -c ' "$T/cc.log")" -ge 8 ] || fail "CC did not compile"
grep ' -c ' "$T/cc.log" | grep -v -e '-g0' -e '-DRCP_TEST_CPP' >/dev/null &&
    fail "a compile without the user's CFLAGS or CPPFLAGS"
grep -- "-o $B/rcp " "$T/cc.log" | grep -e '-Wl,-O1' | grep -e '-lc -lm' \
    >/dev/null || fail "the link without LDFLAGS or LDLIBS: $(cat "$T/cc.log")"
v=$("$B/rcp" --version)
need "$v" "cc:       $T/cc" "--version names CC"
need "$v" "cflags:   -std=c99 -pedantic -Wall -Wextra -O0 -g0" "cflags"
need "$v" "cppflags: -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64 -I. -DRCP_TEST_CPP" \
    "cppflags"
need "$v" "ldflags:  -Wl,-O1" "ldflags"
need "$v" "ldlibs:   -lc -lm" "ldlibs"
ok "CC, CFLAGS, CPPFLAGS, LDFLAGS, LDLIBS are the user's, added to ours (-j3)"

# --- the build remembers its flags -----------------------------------------
mk -j3 BUILD="$B" OPT=-O0 NO_SIMD=1 "$B/rcp"
v=$("$B/rcp" --version)
need "$v" "vectors: scalar (usable here: scalar;" "NO_SIMD=1 rebuilt scalar"
need "$v" "simd:     -DRCP_NO_SIMD" "NO_SIMD=1 in --version"
mk -j3 BUILD="$B" OPT=-O0 "$B/rcp"
v=$("$B/rcp" --version)
case $MACHINE in
x86_64*|amd64*|aarch64*|arm64*)
    need "$v" "simd:     -DRCP_HAVE_" "a plain make after NO_SIMD=1 rebuilds";;
esac
has "$v" "-g0" && fail "the plain make kept the old CFLAGS"
mk BUILD="$B" OPT=-O0 "$B/rcp"
grep -e ' -c ' -e ' -o ' "$T/make.log" && fail "nothing changed, yet it rebuilt"
ok "NO_SIMD=1 then make rebuilds; make again rebuilds nothing"

# --- -Werror is the project's, not the user's -------------------------------
# (a compiler newer than ours may warn about something new: here a
# macro redefined on the command line stands in for that warning)
W="-DRCP_TEST_W=1 -DRCP_TEST_W=2"
mk BUILD="$T/w" OPT=-O0 CPPFLAGS="$W" "$T/w/json.o"
grep -q 'warning' "$T/make.log" || fail "the warning did not show"
$MAKE --no-print-directory BUILD="$T/w" OPT=-O0 CPPFLAGS="$W" DEVELOPER=1 \
    "$T/w/json.o" >"$T/make.log" 2>&1 && fail "DEVELOPER=1 did not add -Werror"
ok "a warning does not stop a plain make; DEVELOPER=1 (make check) makes it an error"

# --- make eval: each collection missing, then two small ones --------------
mkdir "$T/empty"
$MAKE --no-print-directory -f "$ROOT/Makefile" -C "$T/empty" eval \
    >"$T/eval.log" 2>&1
rc=$?
e=$(cat "$T/eval.log")
[ $rc = 2 ] || fail "make eval without ../shared exited $rc: $e"
need "$e" "the Cranfield collection is not in ../shared/data/cranfield" \
     "make eval says what is missing"
need "$e" "http://ir.dcs.gla.ac.uk/resources/test_collections/cran/" \
     "make eval says where to get it"
need "$e" "make eval CRANFIELD=DIR" "make eval says how to point elsewhere"
$MAKE --no-print-directory -f "$ROOT/Makefile" -C "$T/empty" eval \
    CRANFIELD= BIBLE="$T/no-such-bible" >"$T/eval.log" 2>&1
rc=$?
e=$(cat "$T/eval.log")
[ $rc = 2 ] || fail "make eval without bible(1) exited $rc: $e"
need "$e" "apt-get install bible-kjv" "make eval says how to get the KJV text"
need "$e" "make eval KJV=" "make eval says how to leave the KJV out"
C=$T/cran
mkdir "$C"
printf '.I 1\n.T\nwing flutter\n.W\nflutter of a swept wing .\n.I 2\n.T\nheat\n.W\nheat transfer in a boundary layer .\n' >"$C/cran.all.1400"
printf '.I 001\n.W\nwing flutter .\n.I 002\n.W\nheat transfer .\n.I 004\n.W\nswept wing .\n' >"$C/cran.qry"
printf '1 1 1\n1 2 -1\n2 2 2\n3 1 3\n' >"$C/cranqrel"
K=$T/kjv
mkdir "$K"
printf 'Ge1:1 In the beginning God created the heaven and the earth.\nGe1:2 And the earth was without form, and void.\nExo1:1 Now these are the names of the children of Israel.\n' >"$K/verses.txt"
printf '# a comment\nK01\tthe names of the children of Israel\twhat a judge reads\n' >"$K/topics.tsv"
printf 'K01 0 Exo1:1 2\nK01 0 Ge1:1-2 0\n' >"$K/qrels"
mk BUILD="$BUILD" eval CRANFIELD="$C" KJV="$K" KJV_TEXT="$K/verses.txt"
e=$(cat "$T/make.log")
need "$e" "| cranfield dev: nDCG@10 MAP R@100 | cranfield test: nDCG@10 MAP R@100 | kjv all: nDCG@10 MAP R@100 judged@10 |" \
     "make eval: one table, a column per collection and half"
need "$e" "dev 1 judged (1 relevant) test 2 judged (2 relevant)" \
     "the Cranfield split: pairs by relevant count, the odd one to test"
need "$e" "kjv: 2 documents, 1 topics" "KJV verses become passages in a chapter"
ql=$(printf '%s\n' "$e" | grep '^| reference: query likelihood ' | tr -s ' ')
[ "$ql" = "| reference: query likelihood | ql | - | 1.0000 1.0000 1.0000 | 1.0000 1.0000 1.0000 | 1.0000 1.0000 1.0000 1.0000 |" ] \
    || fail "the reference system ranks the only matching document first: $ql"
for m in "nDCG@10" "MAP" "R@100" "judged@10" "Below the input stage"; do
    need "$e" "$m" "make eval prints $m"
done
echo 0123456789abcdef >"$K/text-fnv1a64"
$MAKE --no-print-directory BUILD="$BUILD" eval CRANFIELD= KJV="$K" \
    KJV_TEXT="$K/verses.txt" >"$T/eval.log" 2>&1
rc=$?
e=$(cat "$T/eval.log")
[ $rc = 2 ] || fail "make eval on other text than the judged one exited $rc"
need "$e" "is not the text the KJV judgements were made on" \
     "judgements are refused on other text"
ok "make eval without a collection says how to get it (exit 2); both halves, both collections, the reference, the text checksum"

# --- make install / uninstall ----------------------------------------------
case $MACHINE in
*linux*|*bsd*|*gnu*) SO="lib/librcp.so lib/librcp.so.${VERSION%.*} lib/librcp.so.$VERSION";;
*darwin*) SO="lib/librcp.dylib lib/librcp.${VERSION%.*}.dylib lib/librcp.$VERSION.dylib";;
*) SO=;;
esac
files() { (cd "$1" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort | tr '\n' ' '); }
want() { printf '%s\n' "$@" | tr ' ' '\n' | grep . | sort | tr '\n' ' '; }
P=$T/p
mk BUILD="$BUILD" PREFIX="$P" install
got=$(files "$P")
exp=$(want bin/rcp include/rcp.h lib/librcp.a lib/pkgconfig/rcp.pc \
           share/man/man1/rcp.1 share/man/man3/rcp.3 $SO)
[ "$got" = "$exp" ] || fail "make install wrote: $got; want: $exp"
grep -q 'rcp_conform' "$P/include/rcp.h" && fail "rcp.h declares the runner"
if command -v nm >/dev/null; then
    nm "$P/lib/librcp.a" | grep -E ' T (main|rcp_conform_)' &&
        fail "librcp.a holds the command line or the conformance runner"
    if [ -n "$SO" ] && [ "${SO#lib/librcp.so}" != "$SO" ]; then
        nm -D --defined-only "$P/lib/librcp.so" | awk '{print $3}' |
            grep -v '^rcp_' | grep . && fail "librcp.so exports non-rcp_ names"
        readelf -d "$P/lib/librcp.so" | grep -q "SONAME.*librcp.so.${VERSION%.*}]" ||
            fail "librcp.so has no soname librcp.so.${VERSION%.*}"
    fi
fi
[ "$(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --modversion rcp)" = "$VERSION" ] ||
    fail "pkg-config --modversion rcp"
ok "make install PREFIX: exactly bin, lib (static, shared with soname), include, pkgconfig, man1, man3"

# a program built against the installed library, as a user builds it
flags=$(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags --libs rcp)
$CC -o "$T/client" tests/libclient.c $flags || fail "cc tests/libclient.c $flags"
out=$(LD_LIBRARY_PATH="$P/lib" DYLD_LIBRARY_PATH="$P/lib" \
      "$T/client" "$P/bin/rcp" serve) || fail "the shared client failed: $out"
need "$out" "json: n=42" "the client's JSON"
need "$out" "server: retrieve found d1" "the client's in-process server"
need "$out" 'client: ping {"nonce":7}' "the client over stdio"
if [ -n "$SO" ] && command -v readelf >/dev/null && [ "${SO#lib/librcp.so}" != "$SO" ]; then
    readelf -d "$T/client" | grep -q "NEEDED.*librcp.so.${VERSION%.*}]" ||
        fail "the client is not linked with librcp.so"
fi
S=$T/s
mk BUILD="$BUILD" PREFIX="$S" NO_SHARED=1 install
got=$(files "$S")
exp=$(want bin/rcp include/rcp.h lib/librcp.a lib/pkgconfig/rcp.pc \
           share/man/man1/rcp.1 share/man/man3/rcp.3)
[ "$got" = "$exp" ] || fail "make install NO_SHARED=1 wrote: $got"
flags=$(PKG_CONFIG_PATH="$S/lib/pkgconfig" pkg-config --static --cflags --libs rcp)
$CC -o "$T/sclient" tests/libclient.c $flags || fail "cc tests/libclient.c $flags"
out=$("$T/sclient" "$S/bin/rcp" serve) || fail "the static client failed: $out"
need "$out" 'client: ping {"nonce":7}' "the static client"
if command -v readelf >/dev/null; then
    readelf -d "$T/sclient" 2>/dev/null | grep -q 'NEEDED.*librcp' &&
        fail "the static client needs librcp.so"
fi
ok "cc \$(pkg-config --cflags --libs rcp): a client program, shared and static, runs"

mk BUILD="$BUILD" PREFIX=/opt/rcp DESTDIR="$T/d" install
[ -x "$T/d/opt/rcp/bin/rcp" ] || fail "DESTDIR: no $T/d/opt/rcp/bin/rcp"
grep -q '^prefix=/opt/rcp$' "$T/d/opt/rcp/lib/pkgconfig/rcp.pc" ||
    fail "DESTDIR leaked into rcp.pc: $(cat "$T/d/opt/rcp/lib/pkgconfig/rcp.pc")"
mk BUILD="$BUILD" PREFIX=/opt/rcp DESTDIR="$T/d" uninstall
[ -z "$(files "$T/d")" ] || fail "uninstall left $(files "$T/d")"
: >"$P/lib/other.a"
mk BUILD="$BUILD" PREFIX="$P" uninstall
[ "$(files "$P")" = "lib/other.a " ] || fail "uninstall removed or left: $(files "$P")"
ok "DESTDIR stages without leaking into rcp.pc; uninstall removes exactly what install wrote"

# --- the man pages cover every subcommand, option and function -------------
unroff() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\e/\\/g' "$1"; }
unroff rcp.1 >"$T/rcp.1.txt"
unroff rcp.3 >"$T/rcp.3.txt"
for cmd in serve call shell json stats conform; do
    grep -q "^\.SS rcp $cmd" "$T/rcp.1.txt" || fail "rcp.1 has no section for rcp $cmd"
    for opt in $("$BUILD/rcp" $cmd --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
        grep -qF -- "$opt" "$T/rcp.1.txt" || fail "rcp.1 does not describe rcp $cmd $opt"
    done
done
for opt in --help --version; do
    grep -qF -- "$opt" "$T/rcp.1.txt" || fail "rcp.1 does not describe rcp $opt"
done
for fn in $(grep -oE '\brcp_[a-z0-9_]+\(' rcp.h | tr -d '(' | sort -u); do
    grep -qE "\b$fn\b" "$T/rcp.3.txt" || fail "rcp.3 does not describe $fn"
done
if command -v groff >/dev/null; then
    for page in rcp.1 rcp.3; do
        w=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
        [ -z "$w" ] || fail "groff warns about $page: $w"
    done
fi
ok "rcp.1 covers every subcommand and option; rcp.3 every function of rcp.h"

# --- the demo explains each step before its frames -------------------------
if command -v bash >/dev/null; then
    mk BUILD="$BUILD" DEMO_RCP="$BUILD/rcp" demo
    awk '
        /^[0-9]\. / { steps++; explained = 1; next }
        /^-> /      { if (!explained) { print "unexplained: " $0; bad = 1 }
                      explained = 0; sent++ }
        /"progress":[0-9]\.[0-9][0-9][0-9][0-9][0-9]/ { print; bad = 1 }
        END { if (steps != 5 || sent != 5) { print steps, sent; bad = 1 }
              exit bad }' "$T/make.log" || fail "make demo: $(cat "$T/make.log")"
    grep -q '^<- {"jsonrpc":"2.0","id":5,"result":{}}' "$T/make.log" ||
        fail "make demo did not reach shutdown"
    ok "make demo says in one line what each step shows, numbers as people read them"
fi
