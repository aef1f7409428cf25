/*
** fuzz_store.c -- the store's log reader (store.c, rcp_store_open):
** arbitrary bytes as DIR/rcp.log in a temporary directory.
**
** Input: one mode byte, then the log's bytes.
**   mode & 1  fix up the checksums first: the header's CRC, and each
**             frame's length (clamped to what is there) and CRC, as a
**             writer would have made them -- random bytes almost never
**             carry a valid CRC-32C, so without this the fuzzer would
**             only ever exercise the damage path, never the records
**   mode & 2  open with RCP_STORE_SALVAGE (`rcp serve --salvage`)
**   mode & 4  force a valid magic, format 2 and flags 0 into the header
** Oracles, whatever the bytes:
**   - open either succeeds or fails with a message; it never crashes;
**   - it leaves no lock and no descriptor behind: the same directory,
**     emptied, opens again at once, and the next descriptor is the one
**     we had before;
**   - a log that opened compacts, and the compacted log reopens (without
**     salvage) to the same documents -- ids, texts, metas, chunk links --
**     and the same version (invariant 3 of store.c).
** The directory lives under /dev/shm when there is one (fsync is cheap on
** tmpfs), else $TMPDIR or /tmp; it is made once per process and removed
** at its exit.
*/
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char DIR_[256], LOG[300];

/* CRC-32C (Castagnoli, reflected), bit by bit: our own, so the fix-up
** does not trust the code under test. */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
    int k;
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
         | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* store.c's layout: a 36-byte header (magic, version, flags, base, salt,
** CRC of bytes 0..31), then frames (marker, n, CRC of salt || n ||
** payload, payload). */
static void fix_up(uint8_t *b, size_t n, int force_header)
{
    static const uint8_t magic[8] = { 0x89, 'R', 'C', 'P', 'L', 'O', 'G',
                                      0x0A };
    size_t pos = 36;
    if (n < 36)
        return;
    if (force_header) {
        memcpy(b, magic, 8);
        put32(b + 8, 2);
        put32(b + 12, 0);
    }
    put32(b + 32, crc32c(0, b, 32));
    while (pos + 12 <= n) {
        uint8_t *f = b + pos;
        size_t len = le32(f + 4);
        uint32_t c;
        if (len > n - pos - 12)
            len = n - pos - 12;
        put32(f + 4, (uint32_t)len);
        c = crc32c(0, b + 24, 8);
        c = crc32c(c, f + 4, 4);
        put32(f + 8, crc32c(c, f + 12, len));
        pos += 12 + len;
    }
}

/* Everything in the directory but the lock file goes. */
static void empty_dir(void)
{
    DIR *d = opendir(DIR_);
    struct dirent *e;
    char path[600];
    FZ_ASSERT(d != NULL, "opendir %s", DIR_);
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")
            || !strcmp(e->d_name, "lock"))
            continue;
        snprintf(path, sizeof path, "%s/%s", DIR_, e->d_name);
        unlink(path);
    }
    closedir(d);
}

static void write_log(const uint8_t *b, size_t n)
{
    int fd = open(LOG, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FZ_ASSERT(fd >= 0, "open %s", LOG);
    FZ_ASSERT(n == 0 || write(fd, b, n) == (ssize_t)n, "write");
    close(fd);
}

/* An order-free digest of the live documents: what replay must rebuild. */
static uint64_t docs_digest(const rcp_model *m)
{
    rcp_model_stats ms;
    rcp_model_docview d;
    uint64_t sum = 0;
    uint32_t i;
    rcp_model_stat(m, &ms);
    for (i = 0; i < ms.slots; i++) {
        uint64_t h = 14695981039346656037u;
        const char *parts[4];
        size_t lens[4], k, j;
        if (rcp_model_doc(m, i, &d) != 0)
            continue;
        parts[0] = d.id, lens[0] = d.idlen;
        parts[1] = d.text, lens[1] = d.textlen;
        parts[2] = d.meta ? d.meta : "", lens[2] = d.meta ? d.metalen : 0;
        parts[3] = d.chunk.of ? d.chunk.of : "", lens[3] = d.chunk.oflen;
        for (k = 0; k < 4; k++) {
            for (j = 0; j < lens[k]; j++)
                h = (h ^ (unsigned char)parts[k][j]) * 1099511628211u;
            h = (h ^ 0x100u) * 1099511628211u;     /* a separator */
        }
        if (d.chunk.of)
            h ^= (uint64_t)d.chunk.index * 31 + d.chunk.start * 7
               + d.chunk.end;
        sum += h;
    }
    return sum;
}

static rcp_store *open_store(rcp_model **m, unsigned flags, char *err,
                             size_t cap)
{
    rcp_store *st;
    *m = rcp_model_new(NULL, err, cap);
    FZ_ASSERT(*m != NULL, "%s", err);
    err[0] = '\0';
    st = rcp_store_open_flags(DIR_, *m, flags, err, cap);
    if (!st) {
        FZ_ASSERT(err[0] != '\0', "open failed without saying why");
        rcp_model_free(*m);
        *m = NULL;
    }
    return st;
}

/* At exit: the directory goes, lock file and all. */
static void remove_dir(void)
{
    char path[600];
    empty_dir();
    snprintf(path, sizeof path, "%s/lock", DIR_);
    unlink(path);
    rmdir(DIR_);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    rcp_model *m, *m2;
    rcp_store *st;
    uint8_t *log;
    int probe, fd;
    if (size < 1)
        return 0;
    if (!DIR_[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                         : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(DIR_, sizeof DIR_, "%s/rcp-fuzz-store-XXXXXX", base);
        FZ_ASSERT(mkdtemp(DIR_) != NULL, "mkdtemp %s", DIR_);
        snprintf(LOG, sizeof LOG, "%s/rcp.log", DIR_);
        atexit(remove_dir);
    }
    probe = dup(0);
    close(probe);
    log = malloc(size);
    FZ_ASSERT(log != NULL, "malloc");
    memcpy(log, data + 1, size - 1);
    if (data[0] & 1)
        fix_up(log, size - 1, data[0] & 4);
    empty_dir();
    write_log(log, size - 1);
    free(log);

    st = open_store(&m, data[0] & 2 ? RCP_STORE_SALVAGE : 0, err, sizeof err);
    if (st) {
        uint64_t v = rcp_store_version(st), digest = docs_digest(m);
        size_t count = rcp_model_count(m);
        FZ_ASSERT(rcp_store_compact(st) == 0, "compact: %s",
                  rcp_store_error(st));
        rcp_store_close(st);
        rcp_model_free(m);
        st = open_store(&m2, 0, err, sizeof err);
        FZ_ASSERT(st != NULL, "the compacted log does not open: %s", err);
        FZ_ASSERT(rcp_store_version(st) == v, "version %llu became %llu",
                  (unsigned long long)v,
                  (unsigned long long)rcp_store_version(st));
        FZ_ASSERT(rcp_model_count(m2) == count && docs_digest(m2) == digest,
                  "compaction changed the documents");
        rcp_store_close(st);
        rcp_model_free(m2);
    }
    /* no lock left behind: the emptied directory opens at once */
    empty_dir();
    st = open_store(&m, 0, err, sizeof err);
    FZ_ASSERT(st != NULL, "the directory stays locked: %s", err);
    rcp_store_close(st);
    rcp_model_free(m);
    fd = dup(0);
    close(fd);
    FZ_ASSERT(fd == probe, "a descriptor leaked (%d, was %d)", fd, probe);
    return 0;
}
