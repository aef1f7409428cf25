/*
** store.c -- durable storage for the built-in engine (issue 4, "Storage:
** embedded, durable, crash-safe"): an append-only, checksummed log in a
** directory the server owns, replayed into the model at start-up.
**
** Why a file of its own: file formats, fsync, crash recovery and
** compaction are a different concern from ranking, and POSIX calls belong
** only at the storage and transport edges (GUIDE.md); model.c stays pure
** C99 and knows nothing of files.
**
** NOTES ON THE DESIGN
**
** Files in DIR
**
**   DIR/lock         empty; carries a POSIX record lock (fcntl F_SETLK)
**                    while a store is open; the kernel drops it when the
**                    process dies, even by kill -9, so it never goes stale
**   DIR/rcp.log      the log: a header, then frames
**   DIR/rcp.log.new  exists only while the log is created or compacted;
**                    rcp_store_open deletes a leftover one
**   DIR/rcp.log.torn bytes open cut off the log (cases A, B), kept for
**                    the operator; .torn.1, .torn.2, ... for later ones
**
** The log, format version 3.  Every integer is little-endian and is
** written and read byte by byte with shifts, so the file means the same
** on every machine whatever its endianness or alignment rules.
**
**   header, 36 bytes
**      0  8  magic 89 'R' 'C' 'P' 'L' 'O' 'G' 0A (the 0x89 and the
**            newline catch text-mode and 7-bit transfers, as in PNG)
**      8  4  format version: 3 (1 and 2 are read and upgraded, see
**            below; any other is refused)
**     12  4  flags: 0 (a reader refuses any other value)
**     16  8  base version: the store's version before the first record
**     24  8  salt: random bytes, new for every file written
**     32  4  CRC-32C of bytes 0..31
**
**   frame = one commit, 12 + n bytes
**      0  4  marker FF 'R' 'C' 'F' (0xFF never occurs in UTF-8, so ids,
**            texts and metas can never hold a marker)
**      4  4  n: payload bytes, 1 .. MAX_FRAME
**      8  4  CRC-32C of salt[0..8) || bytes 4..7 || payload
**     12  n  payload: records back to back, nothing else
**
**   records (u8, u32, u64 little-endian; "bytes" = u32 length + bytes)
**     ADD  01  version u64, id bytes, text bytes, flags u8, meta bytes
**              [chunk]
**     DEL  02  version u64, id bytes
**     DOC  03  id bytes, text bytes, flags u8, meta bytes [chunk] [origin]
**     SCHEMA 04  count u32, then per field: name bytes, type u8 (§8)
**     EMBEDDER 05  identity bytes (§6 embed.identity, §15.7)
**     IDEM 06  key bytes, fingerprint u64, result bytes (§7.10)
**     chunk =  of bytes, index u32, start u64, end u64
**     origin = trust u8 (RCP_TRUST_*), source bytes (§15.2)
**   ADD (§7.10 upsert) and DEL (§7.11) carry the version they produce;
**   DOC is a live document written by compaction, version unchanged.
**   flags bit 0: the meta bytes are a serialised JSON object, kept byte
**   for byte (clear: no meta, and the meta bytes are empty); bit 1: a
**   chunk follows -- the document is chunk `index` of document `of`,
**   bytes [start, end) of its text (§7.10, rcp_model_chunkref); bit 2:
**   an origin follows (absent: untrusted, no source); other bits are
**   refused.  SCHEMA and EMBEDDER (the last of each wins) are only ever
**   at the start of the first commit -- a change to them is recorded by
**   a compaction -- so rcp_store_peek finds them without a replay; an
**   IDEM record is in the commit of the write it answers, or after them
**   once compacted.
**
**   Format 2 is format 3 without the origin bit and records 04-06: its
**   documents have no recorded origin (they are served untrusted) and
**   it records no config; it is read and rewritten as format 3 at once.
**
**   Format 1 is format 2 without bit 1.  Its chunks carried their link in
**   meta, under "x-rcp-chunk", where any client could forge it (issue 8);
**   a format-1 log is read with meta as plain data -- so such chunks come
**   back as the plain documents they are stored as, their meta verbatim
**   -- and rewritten at once as format 3 (a compaction: the old file
**   stays whole until the new one replaces it).  Chunked documents added
**   through an old server are chunked again by re-adding them.
**
** Invariants
**
**  1. Bytes [0, size) of rcp.log are a valid header followed by whole,
**     valid frames, and every commit that returned 0 lies inside them and
**     was fsynced before it returned (§13.1: an acknowledged write is on
**     disk before its response exists).
**  2. Bytes past size can only come from the one commit in flight when
**     the process died: a commit starts writing only after the previous
**     one's fsync returned, and a failed commit is cut off again (F).
**  3. ADD and DEL versions are consecutive: base + 1, base + 2, ...
**     Replaying the log into an empty model rebuilds the same live
**     documents (ids, texts, metas, chunk links, relative order) and the
**     same version.
**  4. The store's version bumps exactly when the model's does: st->mver
**     remembers the model's version after the store's own last change,
**     so a change made behind the store's back is caught, not lost.
**  5. rcp.log is never rewritten in place; compaction builds rcp.log.new
**     and renames it over rcp.log.
**
** Crash cases, and why each is safe
**
**  A. Death during a commit (write or fsync not yet returned).  The bytes
**     past size hold some subset of one frame.  It fails its length or
**     CRC check and, because nothing was written after it, no valid frame
**     follows; open truncates the file there.  That commit had not
**     returned, so it was never acknowledged: nothing acknowledged is lost.
**     But a damaged LAST frame (a media error in an acknowledged commit)
**     looks exactly the same, and no log can tell them apart; so open is
**     never silent about it: the bytes go to DIR/rcp.log.torn first
**     (fsynced), and the warning names the offset, the size and the
**     documents the frame touched (cut_tail, set_aside).
**  B. Damage in the middle (a media error, a stray write): a frame fails
**     and a valid frame follows it.  Case A cannot produce that, so open
**     reports both byte offsets and leaves the file as it is -- unless the
**     operator asks to salvage (RCP_STORE_SALVAGE, `rcp serve --salvage`):
**     then everything from the damage on is set aside and described as in
**     case A (the later commits cannot be replayed without the damaged
**     one: invariant 3) and the good prefix opens.
**  C. Forged frames: texts are stored verbatim, so a client can send bytes
**     laid out like a frame.  The CRC covers the file's random salt,
**     which never leaves the file, so such bytes never pass for a frame
**     when open scans a damaged tail for valid frames (case B).
**  D. Death while creating the log: the header goes to rcp.log.new, is
**     fsynced and renamed to rcp.log, and the directory is fsynced.  So
**     rcp.log is either absent (a new store) or starts with a whole header.
**  E. Death during compaction: before the rename, rcp.log is the old,
**     complete log (the .new file is deleted by the next open); after it,
**     rcp.log is the new file, complete and fsynced.  The directory is
**     fsynced before anything is appended to the new file, so a commit is
**     never acknowledged in a file the directory could still forget.
**  F. A write or fsync fails: the change is undone in the model
**     (rcp_model_rollback to the last commit), so no read ever sees what
**     was not acknowledged, and the file is cut back to size.  A write()
**     that found no room (ENOSPC, EDQUOT, EFBIG) leaves the store working:
**     nothing acknowledged was touched, and later writes may succeed once
**     there is room.  Anything else -- a failed fsync above all: Linux may
**     drop the dirty pages and report the next fsync as a success, so
**     retrying proves nothing -- makes the store refuse every later write
**     until it is reopened.  On disk: every acknowledged commit, plus
**     after a failed fsync possibly the failed one, whole or not at all.
**  G. Two servers on one DIR: the lock refuses the second.  Record locks
**     belong to a process, and closing ANY descriptor of the lock file
**     drops them, so open also keeps a list of the stores this process has
**     open (by the lock file's device and inode) and never opens the lock
**     file of a store it already holds.
**
** Lifecycle: rcp_store_open (mkdir, lock, create or read the header,
** replay, cut a torn tail) -> rcp_store_add / rcp_store_delete (apply to
** the model, append to the pending frame) -> rcp_store_commit (write the
** frame, fsync; maybe compact) -> ... -> rcp_store_close.  A failed commit
** goes back to the last one (commit_failed); one that did not fail for
** lack of room also moves the store to "failed" (case F), which only
** close leaves.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "rcp.h"

/* MARK: - Constants ------------------------------------------------------ */

#define LOG_FORMAT   3u
#define LOG_FORMAT_1 1u              /* read, then upgraded (see above) */
#define LOG_FORMAT_2 2u              /* read, then upgraded (see above) */
#define HDR_SIZE     36u
#define FRAME_HDR    12u
#define SALT_SIZE    8u
#define MAX_RECORD   (1ul << 30)     /* one document's id + text + meta */
#define BATCH_BYTES  (32ul << 20)    /* a pending commit is flushed here */
#define MAX_FRAME    (MAX_RECORD + BATCH_BYTES + 64u)
#define COMPACT_MIN  (1ul << 20)     /* never compact a log under 1 MiB */
#define KEEP_BUF     (1ul << 20)     /* pending buffer kept between commits */
#define MAX_LINE     MAX_RECORD      /* a JSON Lines line */

enum { REC_ADD = 1, REC_DEL = 2, REC_DOC = 3, REC_SCHEMA = 4,
       REC_EMBEDDER = 5, REC_IDEM = 6 };
enum { FLAG_META = 1, FLAG_CHUNK = 2, FLAG_ORIGIN = 4 };
/* Fixed bytes of each record besides its id, text, meta and chunk. */
#define DOC_FIXED (1u + 4u + 4u + 1u + 4u)
#define ADD_FIXED (DOC_FIXED + 8u)
#define DEL_FIXED (1u + 8u + 4u)
#define CHUNK_FIXED (4u + 4u + 8u + 8u)

static const unsigned char log_magic[8] = {
    0x89, 'R', 'C', 'P', 'L', 'O', 'G', 0x0A
};
static const unsigned char frame_mark[4] = { 0xFF, 'R', 'C', 'F' };

/* MARK: - Portable integers and CRC-32C ---------------------------------- */

static void enc32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static void enc64(unsigned char *p, uint64_t v)
{
    enc32(p, (uint32_t)v);
    enc32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t dec32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
         | (uint32_t)p[3] << 24;
}

static uint64_t dec64(const unsigned char *p)
{
    return (uint64_t)dec32(p) | (uint64_t)dec32(p + 4) << 32;
}

/* CRC-32C (Castagnoli, reflected 0x82F63B78): the checksum of iSCSI,
** ext4 and LevelDB, stronger than CRC-32 on the short bursts storage
** errors produce.  The table is built on first use (single-threaded). */
static uint32_t crc_table[256];

static void crc_init(void)
{
    uint32_t i, k, c;
    for (i = 0; i < 256; i++) {
        for (c = i, k = 0; k < 8; k++)
            c = c & 1 ? c >> 1 ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

/* Chainable: crc32c(crc32c(0, a), b) == crc32c(0, a || b). */
static uint32_t crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (!crc_table[1])
        crc_init();
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xFF] ^ crc >> 8;
    return ~crc;
}

/* MARK: - A byte buffer and a record cursor ------------------------------ */

/* The pending frame.  Not rcp_buf: a failed append there is sticky, and a
** pending commit must survive an out-of-memory error intact. */
typedef struct pbuf {
    unsigned char *p;
    size_t len, cap;
} pbuf;

static int pbuf_reserve(pbuf *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 4096;
    unsigned char *q;
    if (b->cap - b->len >= extra)
        return 0;
    if (extra > ((size_t)-1 >> 2) - b->len)
        return -1;
    while (cap - b->len < extra)
        cap *= 2;
    if (!(q = rcp_realloc(b->p, cap)))
        return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

static void pbuf_free(pbuf *b)
{
    rcp_free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Appends into reserved room. */
static void put_u8(pbuf *b, unsigned v)
{
    b->p[b->len++] = (unsigned char)v;
}

static void put_u32(pbuf *b, uint32_t v)
{
    enc32(b->p + b->len, v);
    b->len += 4;
}

static void put_u64(pbuf *b, uint64_t v)
{
    enc64(b->p + b->len, v);
    b->len += 8;
}

static void put_bytes(pbuf *b, const void *p, size_t n)
{
    put_u32(b, (uint32_t)n);
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Bytes a chunk link adds to a record (0 for a whole document). */
static uint64_t chunk_bytes(const rcp_model_chunkref *ck)
{
    return ck && ck->of ? CHUNK_FIXED + (uint64_t)ck->oflen : 0;
}

/* An origin other than {untrusted, no source} is recorded. */
static int has_origin(const rcp_model_origin *o)
{
    return o && (o->trust != RCP_TRUST_UNTRUSTED || o->sourcelen);
}

static uint64_t origin_bytes(const rcp_model_origin *o)
{
    return has_origin(o) ? 1u + 4u + (uint64_t)o->sourcelen : 0;
}

/* id, text, flags, meta, chunk, origin: the tail shared by ADD and DOC. */
static void put_doc(pbuf *b, const char *id, size_t idlen, const char *text,
                    size_t len, const char *meta, size_t metalen,
                    const rcp_model_chunkref *ck, const rcp_model_origin *o)
{
    int chunk = ck && ck->of, org = has_origin(o);
    put_bytes(b, id, idlen);
    put_bytes(b, text, len);
    put_u8(b, (meta ? FLAG_META : 0u) | (chunk ? FLAG_CHUNK : 0u)
              | (org ? FLAG_ORIGIN : 0u));
    put_bytes(b, meta, meta ? metalen : 0);
    if (chunk) {
        put_bytes(b, ck->of, ck->oflen);
        put_u32(b, ck->index);
        put_u64(b, ck->start);
        put_u64(b, ck->end);
    }
    if (org) {
        put_u8(b, (unsigned)o->trust);
        put_bytes(b, o->source, o->sourcelen);
    }
}

/* A decoded record; the pointers borrow the frame's payload. */
typedef struct rec {
    unsigned type;
    uint64_t version;
    const char *id, *text, *meta;
    size_t idlen, len, metalen;
    rcp_model_chunkref ck;      /* ck.of NULL: a whole document */
    rcp_model_origin org;       /* §15.2 provenance */
    /* REC_SCHEMA: nfields and the raw field list (name bytes, type u8);
    ** REC_EMBEDDER: the identity in text; REC_IDEM: key in id, result
    ** in text, fingerprint in version */
    uint32_t nfields;
    const unsigned char *fields;
    size_t fieldslen;
} rec;

typedef struct cur {
    const unsigned char *p;
    size_t n, pos;
} cur;

static int get_u8(cur *c, unsigned *v)
{
    if (c->n - c->pos < 1)
        return -1;
    *v = c->p[c->pos++];
    return 0;
}

static int get_u64(cur *c, uint64_t *v)
{
    if (c->n - c->pos < 8)
        return -1;
    *v = dec64(c->p + c->pos);
    c->pos += 8;
    return 0;
}

static int get_bytes(cur *c, const char **s, size_t *n)
{
    uint32_t k;
    if (c->n - c->pos < 4)
        return -1;
    k = dec32(c->p + c->pos);
    c->pos += 4;
    if (c->n - c->pos < k)
        return -1;
    *s = (const char *)c->p + c->pos;
    *n = k;
    c->pos += k;
    return 0;
}

static int get_u32(cur *c, uint32_t *v)
{
    if (c->n - c->pos < 4)
        return -1;
    *v = dec32(c->p + c->pos);
    c->pos += 4;
    return 0;
}

static int get_chunk(cur *c, rcp_model_chunkref *ck)
{
    if (get_bytes(c, &ck->of, &ck->oflen) || get_u32(c, &ck->index)
        || get_u64(c, &ck->start) || get_u64(c, &ck->end))
        return -1;
    return 0;
}

/* The trust level and source of a document (format 3). */
static int get_origin(cur *c, rcp_model_origin *o)
{
    unsigned t;
    if (get_u8(c, &t) || t > RCP_TRUST_TRUSTED
        || get_bytes(c, &o->source, &o->sourcelen)
        || o->sourcelen > RCP_MAX_SOURCE_BYTES)
        return -1;
    o->trust = (int)t;
    return 0;
}

/* The tail of ADD and DOC; format 1 knows no chunk flag, format 2 no
** origin. */
static int get_doc(cur *c, rec *r, uint32_t format)
{
    unsigned flags, known = format == LOG_FORMAT_1 ? FLAG_META
                          : format == LOG_FORMAT_2 ? FLAG_META | FLAG_CHUNK
                          : FLAG_META | FLAG_CHUNK | FLAG_ORIGIN;
    if (get_bytes(c, &r->id, &r->idlen) || get_bytes(c, &r->text, &r->len)
        || get_u8(c, &flags) || (flags & ~known)
        || get_bytes(c, &r->meta, &r->metalen)
        || (!(flags & FLAG_META) && r->metalen)
        || ((flags & FLAG_CHUNK) && get_chunk(c, &r->ck))
        || ((flags & FLAG_ORIGIN) && get_origin(c, &r->org)))
        return -1;
    if (!(flags & FLAG_META))
        r->meta = NULL;
    return 0;
}

/* SCHEMA: count u32, then per field name bytes and type u8 (rcp_field). */
static int get_schema(cur *c, rec *r)
{
    uint32_t i;
    size_t at;
    const char *name;
    size_t n;
    unsigned t;
    if (get_u32(c, &r->nfields) || r->nfields > RCP_STORE_MAX_FIELDS)
        return -1;
    at = c->pos;
    for (i = 0; i < r->nfields; i++)
        if (get_bytes(c, &name, &n) || !n || n > RCP_STORE_MAX_FIELD_NAME
            || get_u8(c, &t) || t > RCP_FIELD_DATE)
            return -1;
    r->fields = c->p + at;
    r->fieldslen = c->pos - at;
    return 0;
}

static int rec_parse(cur *c, rec *r, uint32_t format)
{
    if (get_u8(c, &r->type))
        return -1;
    r->version = 0;
    memset(&r->ck, 0, sizeof r->ck);
    memset(&r->org, 0, sizeof r->org);
    if (r->type >= REC_SCHEMA && format < LOG_FORMAT)
        return -1;
    switch (r->type) {
    case REC_SCHEMA:
        return get_schema(c, r);
    case REC_EMBEDDER:
        return get_bytes(c, &r->text, &r->len)
            || r->len > RCP_STORE_MAX_IDENTITY ? -1 : 0;
    case REC_IDEM:
        return get_bytes(c, &r->id, &r->idlen) || get_u64(c, &r->version)
            || get_bytes(c, &r->text, &r->len) ? -1 : 0;
    case REC_ADD:
        return get_u64(c, &r->version) || get_doc(c, r, format) ? -1 : 0;
    case REC_DEL:
        r->text = r->meta = NULL;
        r->len = r->metalen = 0;
        return get_u64(c, &r->version) || get_bytes(c, &r->id, &r->idlen)
            ? -1 : 0;
    case REC_DOC:
        return get_doc(c, r, format);
    default:
        return -1;
    }
}

/* MARK: - The store ------------------------------------------------------ */

struct rcp_store {
    rcp_model *m;                 /* borrowed */
    char      *dir, *logpath, *newpath, *lockpath;
    int        fd, dfd, lockfd;   /* log, directory, lock file */
    dev_t      ldev;              /* the lock file's identity (case G) */
    ino_t      lino;
    pid_t      owner;             /* the process that opened it */
    rcp_store *next;              /* stores open in this process */
    unsigned char salt[SALT_SIZE];
    uint32_t   format;            /* of the log as read (1 or 2) */
    uint64_t   version;           /* §7.7.1 indexVersion */
    uint64_t   mver;              /* model version after our last change */
    uint64_t   size;              /* committed bytes of rcp.log */
    uint64_t   live;              /* bytes a compacted log would take */
    uint64_t   compact_at;        /* no compaction below (after a failure) */
    uint64_t   compactions;
    pbuf       pending;           /* frame header + records, or empty */
    uint64_t   cversion, cmver;   /* version, model version and live */
    uint64_t   clive;             /* bytes at the last commit (case F) */
    unsigned   flags;             /* RCP_STORE_SALVAGE */
    int        failed;            /* case F: refuses writes */
    rcp_store_config *cfg;        /* recorded schema and embedder (one
                                  ** allocation; NULL: none recorded) */
    store_idem idem;              /* §7.10 keys, durable */
    char       err[512];
    char       warn[1024];
};

static rcp_store *open_stores;

static int st_fail(rcp_store *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->err, sizeof st->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* "PATH: what: strerror(errno)". */
static int st_sys(rcp_store *st, const char *what, const char *path)
{
    return st_fail(st, "%s: %s: %s", path, what, strerror(errno));
}

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = rcp_malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* MARK: - POSIX I/O: whole reads and writes, fsync ----------------------- */

static rcp_store_fault_fn fault_fn;
static void *fault_ud;

void rcp_store_set_fault(rcp_store_fault_fn fn, void *ud)
{
    fault_fn = fn;
    fault_ud = fn ? ud : NULL;
}

/* The test hook's verdict on the next call: 0 go on, else it failed. */
static int faulted(const char *op)
{
    int e = fault_fn ? fault_fn(fault_ud, op) : 0;
    if (e)
        errno = e;
    return e != 0;
}

static int write_at(int fd, const void *data, size_t n, uint64_t off)
{
    const char *p = data;
    ssize_t w;
    while (n) {
        if (faulted("write"))
            return -1;
        w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* Up to n bytes at off; *got < n only at end of file. */
static int read_at(int fd, void *data, size_t n, uint64_t off, size_t *got)
{
    char *p = data;
    ssize_t r;
    *got = 0;
    while (*got < n) {
        r = pread(fd, p + *got, n - *got, (off_t)(off + *got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    return 0;
}

static int sync_fd(int fd)
{
    if (faulted("fsync"))
        return -1;
    while (fsync(fd) != 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

static int truncate_fd(int fd, uint64_t size)
{
    if (faulted("truncate"))
        return -1;
    while (ftruncate(fd, (off_t)size) != 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

/* fsync of a directory makes its entries (a created or renamed file)
** durable.  Some systems cannot sync a directory and say EINVAL; there is
** nothing stronger to do there. */
static int sync_dirfd(int dfd)
{
    if (sync_fd(dfd) == 0 || errno == EINVAL)
        return 0;
    return -1;
}

static int sync_dir(rcp_store *st)
{
    return sync_dirfd(st->dfd) ? st_sys(st, "fsync", st->dir) : 0;
}

/* Random salt for a new file (case C).  /dev/urandom when it can be read;
** else a mix of the time, the clock, the pid and a counter -- not
** cryptographic, only unknown to clients. */
static void new_salt(unsigned char *salt)
{
    static uint64_t counter;
    uint64_t x;
    size_t got = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read_at(fd, salt, SALT_SIZE, 0, &got) || got != SALT_SIZE)
            got = 0;
        close(fd);
    }
    if (got == SALT_SIZE)
        return;
    x = (uint64_t)time(NULL) ^ (uint64_t)clock() << 20
      ^ (uint64_t)getpid() << 40 ^ ++counter * 0x9E3779B97F4A7C15u;
    x ^= x >> 31;                          /* splitmix64 finaliser */
    x *= 0xBF58476D1CE4E5B9u;
    x ^= x >> 27;
    enc64(salt, x * 0x94D049BB133111EBu);
}

/* MARK: - Header and frames ---------------------------------------------- */

static void header_encode(unsigned char *h, uint64_t base,
                          const unsigned char *salt)
{
    memcpy(h, log_magic, 8);
    enc32(h + 8, LOG_FORMAT);
    enc32(h + 12, 0);
    enc64(h + 16, base);
    memcpy(h + 24, salt, SALT_SIZE);
    enc32(h + 32, crc32c(0, h, 32));
}

static int read_header(rcp_store *st)
{
    unsigned char h[HDR_SIZE];
    size_t got;
    if (read_at(st->fd, h, HDR_SIZE, 0, &got))
        return st_sys(st, "read", st->logpath);
    if (got < HDR_SIZE || memcmp(h, log_magic, 8))
        return st_fail(st, "%s: not an rcp store log (bad header)",
                       st->logpath);
    if (crc32c(0, h, 32) != dec32(h + 32))
        return st_fail(st, "%s: corrupt header (checksum mismatch)",
                       st->logpath);
    st->format = dec32(h + 8);
    if (st->format < LOG_FORMAT_1 || st->format > LOG_FORMAT
        || dec32(h + 12) != 0)
        return st_fail(st, "%s: log format %lu (flags %lu); this build "
                       "reads formats %u to %u only", st->logpath,
                       (unsigned long)dec32(h + 8),
                       (unsigned long)dec32(h + 12), LOG_FORMAT_1,
                       LOG_FORMAT);
    st->version = dec64(h + 16);
    memcpy(st->salt, h + 24, SALT_SIZE);
    return 0;
}

static uint32_t frame_crc(const unsigned char *salt, const unsigned char *f,
                          size_t n)
{
    uint32_t crc = crc32c(0, salt, SALT_SIZE);
    crc = crc32c(crc, f + 4, 4);
    return crc32c(crc, f + FRAME_HDR, n);
}

/* Fill in the frame header of b (which starts with FRAME_HDR bytes). */
static void frame_seal(pbuf *b, const unsigned char *salt)
{
    memcpy(b->p, frame_mark, 4);
    enc32(b->p + 4, (uint32_t)(b->len - FRAME_HDR));
    enc32(b->p + 8, frame_crc(salt, b->p, b->len - FRAME_HDR));
}

/* Is there a valid frame at off (of a file of end bytes)?  1 yes, with
** the frame in buf->p[0..FRAME_HDR + *n); 0 no (short, wrong marker,
** impossible length, bad CRC); -1 read error or out of memory. */
static int read_frame(rcp_store *st, uint64_t off, uint64_t end, pbuf *buf,
                      size_t *n)
{
    unsigned char h[FRAME_HDR];
    size_t got;
    uint32_t len;
    if (end - off < FRAME_HDR + 1)
        return 0;
    if (read_at(st->fd, h, FRAME_HDR, off, &got))
        return st_sys(st, "read", st->logpath);
    len = dec32(h + 4);
    if (got < FRAME_HDR || memcmp(h, frame_mark, 4) || len == 0
        || len > MAX_FRAME || len > end - off - FRAME_HDR)
        return 0;
    buf->len = 0;
    if (pbuf_reserve(buf, FRAME_HDR + (size_t)len))
        return st_fail(st, "%s: out of memory reading a %lu-byte frame",
                       st->logpath, (unsigned long)len);
    memcpy(buf->p, h, FRAME_HDR);
    if (read_at(st->fd, buf->p + FRAME_HDR, len, off + FRAME_HDR, &got))
        return st_sys(st, "read", st->logpath);
    if (got < len || frame_crc(st->salt, buf->p, len) != dec32(h + 8))
        return 0;
    *n = len;
    return 1;
}

/* Case B: the offset of the first valid frame after the bad one at off.
** 1 found (*at), 0 none, -1 error.  Reads in chunks that overlap by
** three bytes so a marker split across two reads is still seen. */
static int find_frame(rcp_store *st, uint64_t off, uint64_t end, pbuf *tmp,
                      uint64_t *at)
{
    unsigned char chunk[16384];
    uint64_t pos = off + 1;
    size_t want, got, i, n;
    int r;
    while (pos + FRAME_HDR < end) {
        want = end - pos < sizeof chunk ? (size_t)(end - pos) : sizeof chunk;
        if (read_at(st->fd, chunk, want, pos, &got))
            return st_sys(st, "read", st->logpath);
        for (i = 0; i + 4 <= got; i++) {
            if (chunk[i] != 0xFF || memcmp(chunk + i, frame_mark, 4))
                continue;
            if ((r = read_frame(st, pos + i, end, tmp, &n)) != 0) {
                *at = pos + i;
                return r;
            }
        }
        if (got < 4)
            break;
        pos += got - 3;
    }
    return 0;
}

/* MARK: - Replay (rcp_store_open) ---------------------------------------- */

/* Bytes id's live document would take as a DOC record; 0 when absent. */
static uint64_t doc_bytes(const rcp_store *st, const char *id, size_t idlen)
{
    long d = rcp_model_find(st->m, id, idlen);
    rcp_model_docview v;
    if (d < 0 || rcp_model_doc(st->m, (uint32_t)d, &v))
        return 0;
    return DOC_FIXED + (uint64_t)v.idlen + v.textlen + v.metalen
           + chunk_bytes(&v.chunk) + origin_bytes(&v.origin);
}

/* A SCHEMA record's fields (names borrow the payload) into f[]. */
static void schema_fields(const rec *r, rcp_field *f)
{
    cur c;
    uint32_t i;
    unsigned t = 0;
    c.p = r->fields;
    c.n = r->fieldslen;
    c.pos = 0;
    for (i = 0; i < r->nfields; i++) {   /* checked by get_schema */
        (void)get_bytes(&c, &f[i].name, &f[i].namelen);
        (void)get_u8(&c, &t);
        f[i].type = (rcp_field_type)t;
    }
}

/* A config in one allocation: the struct, its fields, their names and
** the embedder, each copied.  NULL out of memory. */
static rcp_store_config *config_new(int has_schema, const rcp_field *f,
                                    size_t n, const char *emb, size_t elen)
{
    size_t bytes = sizeof(rcp_store_config) + n * sizeof *f + elen + 1, i;
    rcp_store_config *c;
    rcp_field *cf;
    char *p;
    for (i = 0; i < n; i++)
        bytes += f[i].namelen + 1;
    if (!(c = rcp_malloc(bytes)))
        return NULL;
    cf = (rcp_field *)(void *)(c + 1);
    p = (char *)(cf + n);
    for (i = 0; i < n; i++) {
        memcpy(p, f[i].name, f[i].namelen);
        p[f[i].namelen] = 0;
        cf[i].name = p;
        cf[i].namelen = f[i].namelen;
        cf[i].type = f[i].type;
        p += f[i].namelen + 1;
    }
    c->has_schema = has_schema;
    c->fields = n ? cf : NULL;
    c->nfields = n;
    c->embedder = NULL;
    if (emb) {
        memcpy(p, emb, elen);
        p[elen] = 0;
        c->embedder = p;
    }
    return c;
}

/* The config with r (SCHEMA or EMBEDDER) applied to what *cfg holds. */
static int config_apply(rcp_store_config **cfg, const rec *r)
{
    const rcp_store_config *o = *cfg;
    rcp_field *f = NULL;
    rcp_store_config *c;
    if (r->type == REC_SCHEMA && r->nfields
        && !(f = rcp_malloc(r->nfields * sizeof *f)))
        return -1;
    if (f)
        schema_fields(r, f);
    c = r->type == REC_SCHEMA
        ? config_new(1, f, r->nfields, o ? o->embedder : NULL,
                     o && o->embedder ? strlen(o->embedder) : 0)
        : config_new(o && o->has_schema, o ? o->fields : NULL,
                     o ? o->nfields : 0, r->text, r->len);
    rcp_free(f);
    if (!c)
        return -1;
    rcp_free(*cfg);
    *cfg = c;
    return 0;
}

static int apply_rec(rcp_store *st, const rec *r, uint64_t at)
{
    uint64_t old;
    if (r->type == REC_SCHEMA || r->type == REC_EMBEDDER
        || r->type == REC_IDEM) {
        if (r->type == REC_IDEM ? store_idem_put(&st->idem, r->id, r->idlen,
                                                 r->version, r->text, r->len)
                                : config_apply(&st->cfg, r))
            return st_fail(st, "%s: out of memory replaying the log",
                           st->logpath);
        return 0;
    }
    /* invariant 3: a gap or repeat means a damaged or foreign log */
    if (r->type != REC_DOC && r->version != st->version + 1)
        return st_fail(st, "%s: corrupt log: the frame at byte %llu holds "
                       "version %llu after version %llu", st->logpath,
                       (unsigned long long)at,
                       (unsigned long long)r->version,
                       (unsigned long long)st->version);
    old = doc_bytes(st, r->id, r->idlen);
    if (r->type == REC_DEL ? rcp_model_delete(st->m, r->id, r->idlen) < 0
        : rcp_model_add_from(st->m, r->id, r->idlen, r->text, r->len,
                             r->meta, r->metalen, r->ck.of ? &r->ck : NULL,
                             &r->org) != 0)
        return st_fail(st, "%s: the model refused a write while replaying "
                       "the log (out of memory?)", st->logpath);
    st->live = st->live - old + doc_bytes(st, r->id, r->idlen);
    if (r->type != REC_DOC)
        st->version = r->version;
    return 0;
}

static int apply_frame(rcp_store *st, const unsigned char *payload,
                       size_t n, uint64_t at)
{
    cur c;
    rec r;
    c.p = payload;
    c.n = n;
    c.pos = 0;
    while (c.pos < c.n) {
        /* the CRC held, so a bad record is a bad writer, not a crash */
        if (rec_parse(&c, &r, st->format))
            return st_fail(st, "%s: corrupt log: malformed record in the "
                           "frame at byte %llu", st->logpath,
                           (unsigned long long)at);
        if (apply_rec(st, &r, at))
            return -1;
    }
    return 0;
}

/* What a dropped stretch of the log held, for the operator: the commits
** and the documents they touched, as far as they can be read. */
typedef struct tally {
    unsigned long valid, damaged;
    char   ids[200];            /* the first few, quoted */
    size_t idlen;
    unsigned long more;         /* ids not listed */
} tally;

static void tally_id(tally *t, unsigned type, const char *id, size_t n)
{
    char q[64];
    int k;
    k = snprintf(q, sizeof q, "%s%s \"%.*s%s\"", t->idlen ? ", " : "",
                 type == REC_DEL ? "delete" : "add", (int)(n > 24 ? 24 : n),
                 id, n > 24 ? "..." : "");
    if (t->more || t->idlen + (size_t)k >= sizeof t->ids - 16) {
        t->more++;
        return;
    }
    memcpy(t->ids + t->idlen, q, (size_t)k + 1);
    t->idlen += (size_t)k;
}

/* The records of payload[0..n), up to the first that does not parse (a
** damaged frame is read as far as it goes; no CRC vouches for it). */
static void tally_records(tally *t, const unsigned char *p, size_t n,
                          uint32_t format)
{
    cur c;
    rec r;
    c.p = p;
    c.n = n;
    c.pos = 0;
    while (c.pos < c.n && rec_parse(&c, &r, format) == 0)
        if (r.type <= REC_DOC)          /* a document's record */
            tally_id(t, r.type, r.id, r.idlen);
}

/* A damaged frame at off: its header when it has one, then whatever of
** its payload is there.  Returns where the next valid frame starts (or
** end). */
static int tally_damaged(rcp_store *st, uint64_t off, uint64_t end,
                         pbuf *tmp, tally *t, uint64_t *next)
{
    unsigned char h[FRAME_HDR];
    size_t got, n = 0;
    int r;
    t->damaged++;
    if (read_at(st->fd, h, FRAME_HDR, off, &got))
        return st_sys(st, "read", st->logpath);
    if (got == FRAME_HDR && memcmp(h, frame_mark, 4) == 0) {
        uint64_t len = dec32(h + 4), have = end - off - FRAME_HDR;
        n = (size_t)(len < have ? len : have);
        tmp->len = 0;
        if (pbuf_reserve(tmp, n + 1) == 0
            && read_at(st->fd, tmp->p, n, off + FRAME_HDR, &got) == 0)
            tally_records(t, tmp->p, got, st->format);
    }
    if ((r = find_frame(st, off, end, tmp, next)) < 0)
        return -1;
    if (r == 0)
        *next = end;
    return 0;
}

static int tally_region(rcp_store *st, uint64_t off, uint64_t end,
                        pbuf *tmp, tally *t)
{
    size_t n;
    int r;
    memset(t, 0, sizeof *t);
    while (off < end) {
        if ((r = read_frame(st, off, end, tmp, &n)) < 0)
            return -1;
        if (r == 1) {
            t->valid++;
            tally_records(t, tmp->p + FRAME_HDR, n, st->format);
            off += FRAME_HDR + n;
        } else if (tally_damaged(st, off, end, tmp, t, &off)) {
            return -1;
        }
    }
    return 0;
}

/* Copy bytes [off, end) of the log to a new DIR/rcp.log.torn (or .1, .2,
** ...: an earlier one is never overwritten), durably, before the log
** loses them.  The name goes to path[0..cap). */
static int set_aside(rcp_store *st, uint64_t off, uint64_t end, char *path,
                     size_t cap)
{
    unsigned char buf[65536];
    uint64_t pos;
    size_t n, got;
    unsigned k;
    int fd = -1, rc = 0;
    for (k = 0; fd < 0 && k < 10000; k++) {
        if (k)
            snprintf(path, cap, "%s.torn.%u", st->logpath, k);
        else
            snprintf(path, cap, "%s.torn", st->logpath);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0)
        return st_sys(st, "cannot set the damaged tail aside", path);
    for (pos = off; pos < end && !rc; pos += got) {
        n = end - pos < sizeof buf ? (size_t)(end - pos) : sizeof buf;
        if (read_at(st->fd, buf, n, pos, &got) || got == 0
            || write_at(fd, buf, got, pos - off))
            rc = -1;
    }
    if (rc || sync_fd(fd))
        rc = st_sys(st, "cannot set the damaged tail aside", path);
    close(fd);
    if (!rc && sync_dir(st))
        rc = -1;
    if (rc)
        (void)unlink(path);
    return rc;
}

/* The log is valid up to off but not to end.  Case A and a damaged last
** commit look alike, so the store says what it drops and keeps the bytes
** aside; case B (valid frames follow the damage) is refused unless the
** operator asked to salvage (RCP_STORE_SALVAGE): then the same, for
** everything from the damage on. */
static int cut_tail(rcp_store *st, uint64_t off, uint64_t end, pbuf *tmp)
{
    uint64_t at = 0;
    tally t;
    char side[600], more[32] = "";
    int r = find_frame(st, off, end, tmp, &at);
    if (r < 0)
        return -1;
    if (r > 0 && !(st->flags & RCP_STORE_SALVAGE))
        return st_fail(st, "%s: corrupt log: the frame at byte %llu is "
                       "damaged but a valid frame follows at byte %llu; "
                       "not opening it (restore a backup, or open it with "
                       "--salvage to keep the %llu bytes before the damage "
                       "and set the rest aside)", st->logpath,
                       (unsigned long long)off, (unsigned long long)at,
                       (unsigned long long)off);
    if (tally_region(st, off, end, tmp, &t)
        || set_aside(st, off, end, side, sizeof side))
        return -1;
    if (truncate_fd(st->fd, off) || sync_fd(st->fd))
        return st_sys(st, "truncate", st->logpath);
    if (t.more)
        snprintf(more, sizeof more, " and %lu more", t.more);
    snprintf(st->warn, sizeof st->warn, "%s: %s at byte %llu: dropped %llu "
             "bytes (commits: %lu damaged, %lu valid; documents they touched, "
             "as far as readable: %s%s); they are kept in %.300s",
             st->logpath,
             r > 0 ? "salvage: kept what precedes the damage"
                   : "the last commit is a torn tail or damaged (a crash "
                     "mid-write, never acknowledged, or damage to an "
                     "acknowledged commit: the two look alike)",
             (unsigned long long)off, (unsigned long long)(end - off),
             t.damaged, t.valid, t.idlen ? t.ids : "none", more, side);
    return 0;
}

/* What the disk holds now: a failed commit comes back to it (case F). */
static void mark_committed(rcp_store *st)
{
    st->cversion = st->version;
    st->cmver = rcp_model_version(st->m);
    st->clive = st->live;
}

static int replay(rcp_store *st)
{
    struct stat sb;
    uint64_t off = HDR_SIZE, end;
    size_t n = 0;
    pbuf buf = { NULL, 0, 0 };
    int r = 1;
    if (fstat(st->fd, &sb))
        return st_sys(st, "stat", st->logpath);
    end = (uint64_t)sb.st_size;
    st->live = HDR_SIZE + FRAME_HDR;
    while (off < end && (r = read_frame(st, off, end, &buf, &n)) == 1) {
        if (apply_frame(st, buf.p + FRAME_HDR, n, off)) {
            r = -1;
            break;
        }
        off += FRAME_HDR + n;
    }
    if (r >= 0 && off < end)
        r = cut_tail(st, off, end, &buf);
    pbuf_free(&buf);
    if (r < 0)
        return -1;
    st->size = off;
    st->mver = rcp_model_version(st->m);
    mark_committed(st);
    return 0;
}

/* MARK: - Directory, lock, log file (rcp_store_open) --------------------- */

/* fsync the parent of a directory we just created, so the new directory
** itself survives a crash. */
static int sync_parent(rcp_store *st)
{
    size_t n = strlen(st->dir);
    char *parent;
    int fd, rc = 0;
    while (n > 1 && st->dir[n - 1] == '/')
        n--;
    while (n > 0 && st->dir[n - 1] != '/')
        n--;
    while (n > 1 && st->dir[n - 1] == '/')
        n--;
    if (!(parent = n ? rcp_malloc(n + 1) : join(".", "")))
        return st_fail(st, "%s: out of memory", st->dir);
    if (n) {
        memcpy(parent, st->dir, n);
        parent[n] = 0;
    }
    fd = open(parent, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || sync_dirfd(fd))
        rc = st_sys(st, "fsync", parent);
    if (fd >= 0)
        close(fd);
    rcp_free(parent);
    return rc;
}

static int make_dir(rcp_store *st)
{
    struct stat sb;
    int created = mkdir(st->dir, 0777) == 0;
    if (!created && errno != EEXIST)
        return st_sys(st, "cannot create the store directory", st->dir);
    if (stat(st->dir, &sb) || !S_ISDIR(sb.st_mode))
        return st_fail(st, "%s: not a directory", st->dir);
    st->dfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->dfd < 0)
        return st_sys(st, "open", st->dir);
    return created ? sync_parent(st) : 0;
}

static int registered(dev_t dev, ino_t ino)
{
    const rcp_store *s;
    /* a forked child inherits this list but not the locks */
    for (s = open_stores; s; s = s->next)
        if (s->ldev == dev && s->lino == ino && s->owner == getpid())
            return 1;
    return 0;
}

static int lock_busy(rcp_store *st)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(st->lockfd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK)
        return st_fail(st, "%s: in use by process %ld (a store directory "
                       "belongs to one server at a time)", st->dir,
                       (long)fl.l_pid);
    return st_fail(st, "%s: in use by another process", st->dir);
}

/* Case G: one process owns DIR. */
static int lock_dir(rcp_store *st)
{
    struct stat sb;
    struct flock fl;
    if (stat(st->lockpath, &sb) == 0 && registered(sb.st_dev, sb.st_ino))
        return st_fail(st, "%s: in use by process %ld (this one: the "
                       "store is already open)", st->dir, (long)getpid());
    st->lockfd = open(st->lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (st->lockfd < 0 || fstat(st->lockfd, &sb))
        return st_sys(st, "open", st->lockpath);
    st->ldev = sb.st_dev;
    st->lino = sb.st_ino;
    st->owner = getpid();
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    while (fcntl(st->lockfd, F_SETLK, &fl) != 0) {
        if (errno == EACCES || errno == EAGAIN)
            return lock_busy(st);
        if (errno != EINTR)
            return st_sys(st, "lock", st->lockpath);
    }
    return 0;
}

/* Case D: a log appears whole or not at all. */
static int create_log(rcp_store *st)
{
    unsigned char h[HDR_SIZE], salt[SALT_SIZE];
    int fd, e;
    new_salt(salt);
    header_encode(h, 0, salt);
    fd = open(st->newpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return st_sys(st, "create", st->newpath);
    if (write_at(fd, h, HDR_SIZE, 0) || sync_fd(fd)) {
        e = errno;
        close(fd);
        (void)unlink(st->newpath);
        errno = e;
        return st_sys(st, "write", st->newpath);
    }
    close(fd);
    if (rename(st->newpath, st->logpath))
        return st_sys(st, "rename", st->newpath);
    return sync_dir(st);
}

static int open_log(rcp_store *st)
{
    /* case D/E: a leftover .new never holds anything rcp.log lacks */
    if (unlink(st->newpath) && errno != ENOENT)
        return st_sys(st, "remove", st->newpath);
    st->fd = open(st->logpath, O_RDWR | O_CLOEXEC);
    if (st->fd < 0 && errno == ENOENT) {
        if (create_log(st))
            return -1;
        st->fd = open(st->logpath, O_RDWR | O_CLOEXEC);
    }
    if (st->fd < 0)
        return st_sys(st, "open", st->logpath);
    return read_header(st);
}

static void store_free(rcp_store *st)
{
    rcp_store **pp;
    for (pp = &open_stores; *pp; pp = &(*pp)->next)
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    if (st->fd >= 0)
        close(st->fd);
    if (st->dfd >= 0)
        close(st->dfd);
    if (st->lockfd >= 0)
        close(st->lockfd);   /* last: releases the lock */
    pbuf_free(&st->pending);
    rcp_free(st->cfg);
    store_idem_free(&st->idem);
    rcp_free(st->dir);
    rcp_free(st->logpath);
    rcp_free(st->newpath);
    rcp_free(st->lockpath);
    rcp_free(st);
}

static rcp_store *store_new(const char *dir, rcp_model *m)
{
    rcp_store *st = rcp_malloc(sizeof *st);
    size_t n = strlen(dir);
    if (!st)
        return NULL;
    memset(st, 0, sizeof *st);
    st->m = m;
    st->fd = st->dfd = st->lockfd = -1;
    if ((st->dir = rcp_malloc(n + 1)) != NULL)
        memcpy(st->dir, dir, n + 1);
    st->logpath = join(dir, "rcp.log");
    st->newpath = join(dir, "rcp.log.new");
    st->lockpath = join(dir, "lock");
    if (!st->dir || !st->logpath || !st->newpath || !st->lockpath) {
        store_free(st);
        return NULL;
    }
    return st;
}

/* MARK: - Compaction ----------------------------------------------------- */

/* Write b as a frame at *off of fd; empty b writes nothing. */
static int flush_frame(rcp_store *st, pbuf *b, int fd,
                       const unsigned char *salt, uint64_t *off)
{
    if (b->len <= FRAME_HDR)
        return 0;
    frame_seal(b, salt);
    if (write_at(fd, b->p, b->len, *off))
        return st_sys(st, "write", st->newpath);
    *off += b->len;
    b->len = 0;
    return 0;
}

static int snap_doc(rcp_store *st, pbuf *b, const rcp_model_docview *v,
                    int fd, const unsigned char *salt, uint64_t *off)
{
    size_t need = DOC_FIXED + v->idlen + v->textlen + v->metalen
                  + (size_t)chunk_bytes(&v->chunk)
                  + (size_t)origin_bytes(&v->origin);
    if (b->len && b->len + need > BATCH_BYTES
        && flush_frame(st, b, fd, salt, off))
        return -1;
    if (pbuf_reserve(b, need + FRAME_HDR))
        return st_fail(st, "%s: out of memory", st->newpath);
    if (!b->len)
        b->len = FRAME_HDR;
    put_u8(b, REC_DOC);
    put_doc(b, v->id, v->idlen, v->text, v->textlen, v->meta, v->metalen,
            &v->chunk, &v->origin);
    return 0;
}

/* The bytes of the config records and the idempotency keys. */
static size_t config_bytes(const rcp_store *st)
{
    const rcp_store_config *c = st->cfg;
    size_t n = 0, i;
    if (c && c->has_schema) {
        n += 1 + 4;
        for (i = 0; i < c->nfields; i++)
            n += 4 + c->fields[i].namelen + 1;
    }
    if (c && c->embedder)
        n += 1 + 4 + strlen(c->embedder);
    for (i = 0; i < STORE_IDEM_SLOTS; i++)
        if (st->idem.e[i].key)
            n += 1 + 4 + st->idem.e[i].keylen + 8 + 4 + st->idem.e[i].len;
    return n;
}

static void put_idem(pbuf *b, const char *key, size_t n, uint64_t fp,
                     const char *result, size_t len)
{
    put_u8(b, REC_IDEM);
    put_bytes(b, key, n);
    put_u64(b, fp);
    put_bytes(b, result, len);
}

/* The first records of a snapshot, in its first frame (rcp_store_peek
** reads them there): the schema, the embedder, then the idempotency keys
** oldest first (so the table forgets in the same order after a
** restart). */
static int snap_config(rcp_store *st, pbuf *b)
{
    const rcp_store_config *c = st->cfg;
    const struct store_idem_entry *e;
    size_t i;
    if (pbuf_reserve(b, FRAME_HDR + config_bytes(st)))
        return st_fail(st, "%s: out of memory", st->newpath);
    b->len = FRAME_HDR;
    if (c && c->has_schema) {
        put_u8(b, REC_SCHEMA);
        put_u32(b, (uint32_t)c->nfields);
        for (i = 0; i < c->nfields; i++) {
            put_bytes(b, c->fields[i].name, c->fields[i].namelen);
            put_u8(b, (unsigned)c->fields[i].type);
        }
    }
    if (c && c->embedder) {
        put_u8(b, REC_EMBEDDER);
        put_bytes(b, c->embedder, strlen(c->embedder));
    }
    for (i = 0; i < STORE_IDEM_SLOTS; i++) {
        e = &st->idem.e[(st->idem.next + i) % STORE_IDEM_SLOTS];
        if (e->key)
            put_idem(b, e->key, e->keylen, e->fp, e->result, e->len);
    }
    if (b->len == FRAME_HDR)
        b->len = 0;
    return 0;
}

/* The live documents, in docno (arrival) order, under base version
** st->version; the scan ends once every live document was seen. */
static int write_snapshot(rcp_store *st, int fd, const unsigned char *salt,
                          uint64_t *size)
{
    unsigned char h[HDR_SIZE];
    pbuf b = { NULL, 0, 0 };
    size_t left = rcp_model_count(st->m);
    uint64_t docno;
    rcp_model_docview v;
    int rc = 0;
    *size = HDR_SIZE;
    header_encode(h, st->version, salt);
    if (write_at(fd, h, HDR_SIZE, 0))
        return st_sys(st, "write", st->newpath);
    rc = snap_config(st, &b);
    for (docno = 0; left && docno <= 0xFFFFFFFFu && !rc; docno++)
        if (rcp_model_doc(st->m, (uint32_t)docno, &v) == 0) {
            left--;
            rc = snap_doc(st, &b, &v, fd, salt, size);
        }
    if (!rc)
        rc = flush_frame(st, &b, fd, salt, size);
    pbuf_free(&b);
    return rc;
}

/* Give up a compaction before the rename: the old log stays. */
static int abandon(rcp_store *st, int fd)
{
    close(fd);
    (void)unlink(st->newpath);
    return -1;
}

/* Case E.  Precondition: nothing pending. */
static int compact(rcp_store *st)
{
    unsigned char salt[SALT_SIZE];
    uint64_t size;
    int fd;
    new_salt(salt);
    fd = open(st->newpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return st_sys(st, "create", st->newpath);
    if (write_snapshot(st, fd, salt, &size))
        return abandon(st, fd);
    if (sync_fd(fd)) {
        st_sys(st, "fsync", st->newpath);
        return abandon(st, fd);
    }
    if (rename(st->newpath, st->logpath)) {
        st_sys(st, "rename", st->newpath);
        return abandon(st, fd);
    }
    close(st->fd);
    st->fd = fd;
    memcpy(st->salt, salt, SALT_SIZE);
    st->size = st->live = size;
    st->compactions++;
    if (sync_dir(st)) {
        /* the rename may not be durable: appending now could put an
        ** acknowledged commit in a file a crash forgets (case E) */
        st->failed = 1;
        return -1;
    }
    return 0;
}

static void maybe_compact(rcp_store *st)
{
    if (st->size < COMPACT_MIN || st->size / 2 <= st->live
        || st->size < st->compact_at)
        return;
    if (compact(st) == 0) {
        st->compact_at = 0;
        return;
    }
    snprintf(st->warn, sizeof st->warn, "compaction failed: %.480s",
             st->err);
    if (!st->failed)
        st->err[0] = 0;   /* the commit itself succeeded */
    st->compact_at = st->size + COMPACT_MIN;   /* retry after 1 MiB more */
}

/* An older log, now replayed, is rewritten in the current format before
** anything is appended to it: appending format-3 records under an older
** header would make a file neither reads.  Format 1: meta was read as
** plain data.  Formats 1 and 2: no document has a recorded origin, so
** each is served "untrusted" (§15.2: provenance unknown is never
** trusted) until the operator loads its source again with --trust. */
static int upgrade(rcp_store *st, int record)
{
    char why[sizeof st->err];
    size_t n = strlen(st->warn);
    uint32_t from = st->format;
    if (from == LOG_FORMAT) {
        if (record && compact(st))  /* the config goes first (peek) */
            return -1;
        return 0;
    }
    if (compact(st)) {
        memcpy(why, st->err, sizeof why);
        return st_fail(st, "%s: upgrading the format-%u log to format %u "
                       "failed: %.400s", st->logpath, (unsigned)from,
                       LOG_FORMAT, why);
    }
    st->format = LOG_FORMAT;
    snprintf(st->warn + n, sizeof st->warn - n, "%s%s: upgraded a format-%u "
             "log to format %u; %sits documents have no recorded origin and "
             "are served as untrusted (load a vetted source again with "
             "--corpus FILE --trust LEVEL to label it)", n ? "; " : "",
             st->logpath, (unsigned)from, LOG_FORMAT,
             from == LOG_FORMAT_1 ? "its documents' meta (any "
             "\"x-rcp-chunk\" key included) is plain data now: re-add "
             "chunked documents to chunk them again; " : "");
    return 0;
}

/* MARK: - Public: open, close, commit ------------------------------------ */

/* The field named like f in c, or NULL. */
static const rcp_field *config_field(const rcp_store_config *c,
                                     const rcp_field *f)
{
    size_t i;
    for (i = 0; c && i < c->nfields; i++)
        if (c->fields[i].namelen == f->namelen
            && !memcmp(c->fields[i].name, f->name, f->namelen))
            return &c->fields[i];
    return NULL;
}

static const char *const type_names[] = { "keyword", "text", "int",
                                          "float", "bool", "date" };

/* §8, §15.7: want against what the log records (rcp_store_open_config).
** 0 and *record 1 when want adds something to record (st->cfg is then
** what will be), -1 on a conflict. */
static int config_check(rcp_store *st, const rcp_store_config *want,
                        int *record)
{
    const rcp_store_config *have = st->cfg;
    const char *emb = have && have->embedder ? have->embedder : NULL;
    rcp_store_config *c;
    const rcp_field *f, *g;
    size_t i;
    *record = 0;
    if (!want)
        return 0;
    if (emb && want->embedder && strcmp(emb, want->embedder))
        return st_fail(st, "%s was written with the embedder %.200s; this "
                       "server embeds with %.200s (--dim, --vectors); start "
                       "it with the store's embedder, or load the corpus "
                       "into a new --data directory", st->dir, emb,
                       want->embedder);
    for (i = 0; have && have->has_schema && i < have->nfields; i++) {
        f = &have->fields[i];
        if (!(g = config_field(want, f)))
            return st_fail(st, "%s records the field %.*s:%s, which this "
                           "server does not declare; declare every recorded "
                           "field (or no --field at all, to serve the "
                           "recorded ones)", st->dir, (int)f->namelen,
                           f->name, type_names[f->type]);
        if (g->type != f->type)
            return st_fail(st, "%s records the field %.*s:%s; the "
                           "declared %.*s:%s conflicts with it", st->dir,
                           (int)f->namelen, f->name, type_names[f->type],
                           (int)g->namelen, g->name, type_names[g->type]);
    }
    *record = !emb != !want->embedder
              || (want->has_schema && (!have || !have->has_schema
                                       || have->nfields != want->nfields));
    if (!*record)
        return 0;
    if (!(c = config_new(want->has_schema || (have && have->has_schema),
                         want->has_schema ? want->fields : have->fields,
                         want->has_schema ? want->nfields : have->nfields,
                         want->embedder ? want->embedder : emb,
                         want->embedder ? strlen(want->embedder)
                         : emb ? strlen(emb) : 0)))
        return st_fail(st, "%s: out of memory", st->dir);
    rcp_free(st->cfg);
    st->cfg = c;
    return 0;
}

rcp_store *rcp_store_open_flags(const char *dir, rcp_model *m,
                                unsigned flags, char *err, size_t errlen)
{
    return rcp_store_open_config(dir, m, flags, NULL, err, errlen);
}

const rcp_store_config *rcp_store_get_config(const rcp_store *st)
{
    static const rcp_store_config none = { 0, NULL, 0, NULL };
    return st->cfg ? st->cfg : &none;
}

/* The config records at the start of the first commit of st's log
** (format 3; older logs record none) into st->cfg.  0 or -1. */
static int peek_config(rcp_store *st)
{
    pbuf buf = { NULL, 0, 0 };
    struct stat sb;
    size_t n = 0;
    cur c;
    rec r;
    int got, rc = 0;
    if (read_header(st))
        return -1;
    if (fstat(st->fd, &sb))
        return st_sys(st, "stat", st->logpath);
    if (st->format != LOG_FORMAT)
        return 0;
    /* a damaged first commit records nothing here: open reports it */
    if ((got = read_frame(st, HDR_SIZE, (uint64_t)sb.st_size, &buf, &n)) < 0)
        return -1;
    c.p = got == 1 ? buf.p + FRAME_HDR : NULL;
    c.n = got == 1 ? n : 0;
    c.pos = 0;
    while (rc == 0 && c.pos < c.n && rec_parse(&c, &r, st->format) == 0
           && (r.type == REC_SCHEMA || r.type == REC_EMBEDDER
               || r.type == REC_IDEM))
        if (r.type != REC_IDEM && config_apply(&st->cfg, &r))
            rc = st_fail(st, "%s: out of memory", st->dir);
    pbuf_free(&buf);
    return rc;
}

rcp_store_config *rcp_store_peek(const char *dir, char *err, size_t errlen)
{
    rcp_store *st;
    rcp_store_config *out = NULL;
    int rc = 0;
    if (!dir || !(st = store_new(dir, NULL))) {
        say(err, errlen, "%s: out of memory", dir ? dir : "rcp_store_peek");
        return NULL;
    }
    st->fd = open(st->logpath, O_RDONLY | O_CLOEXEC);
    if (st->fd < 0 && errno != ENOENT)
        rc = st_sys(st, "open", st->logpath);
    else if (st->fd >= 0)
        rc = peek_config(st);
    if (rc == 0) {
        out = st->cfg ? st->cfg : config_new(0, NULL, 0, NULL, 0);
        st->cfg = NULL;
        if (!out)
            st_fail(st, "%s: out of memory", dir);
    }
    if (!out)
        say(err, errlen, "%s", st->err);
    store_free(st);
    return out;
}

rcp_store *rcp_store_open_config(const char *dir, rcp_model *m,
                                 unsigned flags, const rcp_store_config *want,
                                 char *err, size_t errlen)
{
    rcp_store *st;
    int record = 0;
    if (!dir || !*dir || !m) {
        say(err, errlen, "rcp_store_open: no directory or no model");
        return NULL;
    }
    if (rcp_model_count(m)) {
        say(err, errlen, "%s: the model must be empty (the store replays "
            "its log into it)", dir);
        return NULL;
    }
    if (!(st = store_new(dir, m))) {
        say(err, errlen, "%s: out of memory", dir);
        return NULL;
    }
    st->flags = flags;
    if (make_dir(st) || lock_dir(st) || open_log(st) || replay(st)
        || config_check(st, want, &record) || upgrade(st, record)) {
        say(err, errlen, "%s", st->err);
        store_free(st);
        return NULL;
    }
    st->next = open_stores;
    open_stores = st;
    maybe_compact(st);
    mark_committed(st);
    return st;
}

rcp_store *rcp_store_open(const char *dir, rcp_model *m, char *err,
                          size_t errlen)
{
    return rcp_store_open_flags(dir, m, 0, err, errlen);
}

/* Case F.  Which failed commits the store survives.  A write() that found
** no room (ENOSPC, EDQUOT, EFBIG) left acknowledged data as it was: what
** part of the frame it wrote lies past st->size and is cut off again, so
** once the file is back at st->size later writes may succeed.  A failed
** fsync is not survivable: Linux may have dropped the dirty pages and
** marked them clean, so the next fsync would report success for data
** that never reached the disk (PostgreSQL's "fsyncgate", 2018); nor is
** any other write error (EIO, EROFS: the device, not the room).  Either
** way the change goes out of memory too, so the model never shows what
** the disk does not hold (§13.1: never acknowledged, never visible). */
static int no_room(int e)
{
#ifdef EDQUOT
    if (e == EDQUOT)
        return 1;
#endif
    return e == ENOSPC || e == EFBIG;
}

static int commit_failed(rcp_store *st, const char *what, int wrote)
{
    int e = errno, back, cut;
    st->pending.len = 0;
    if (st->pending.cap > KEEP_BUF)
        pbuf_free(&st->pending);
    back = rcp_model_rollback(st->m, st->cmver) == 0;
    if (back) {
        st->version = st->cversion;
        st->mver = st->cmver;
        st->live = st->clive;
    }
    cut = truncate_fd(st->fd, st->size) == 0;   /* best effort after fsync */
    if (wrote && no_room(e) && back && cut)
        return st_fail(st, "%s: commit failed %s: %s; nothing of it was kept "
                       "(the log is back at its last commit and the change "
                       "is undone); later writes can succeed once there is "
                       "room", st->logpath, what, strerror(e));
    st->failed = 1;
    return st_fail(st, "%s: commit failed %s: %s; %s; the store takes no "
                   "more writes until it is reopened", st->logpath, what,
                   strerror(e), back ? "the change is undone in memory"
                   : "the change could not be undone in memory (out of "
                     "memory): reads show it until a restart");
}

int rcp_store_commit(rcp_store *st)
{
    if (st->failed)
        return -1;
    if (!st->pending.len)
        return 0;
    frame_seal(&st->pending, st->salt);
    if (write_at(st->fd, st->pending.p, st->pending.len, st->size))
        return commit_failed(st, "writing", 1);
    if (sync_fd(st->fd))
        return commit_failed(st, "in fsync", 0);
    st->size += st->pending.len;
    st->pending.len = 0;
    if (st->pending.cap > KEEP_BUF)
        pbuf_free(&st->pending);
    maybe_compact(st);
    mark_committed(st);
    return 0;
}

void rcp_store_close(rcp_store *st)
{
    if (!st)
        return;
    (void)rcp_store_commit(st);
    store_free(st);
}

int rcp_store_compact(rcp_store *st)
{
    if (rcp_store_commit(st))
        return -1;
    if (compact(st))
        return -1;
    st->compact_at = 0;
    return 0;
}

uint64_t rcp_store_version(const rcp_store *st)
{
    return st->version;
}

const char *rcp_store_error(const rcp_store *st)
{
    return st->err;
}

void rcp_store_stat(const rcp_store *st, rcp_store_info *out)
{
    size_t i;
    out->version = st->version;
    out->format = st->format;
    out->idem_keys = 0;
    for (i = 0; i < STORE_IDEM_SLOTS; i++)
        out->idem_keys += st->idem.e[i].key != NULL;
    out->log_bytes = st->size;
    out->live_bytes = st->live;
    out->pending_bytes = st->pending.len;
    out->compactions = st->compactions;
    out->failed = st->failed;
    out->warning = st->warn;
}

/* MARK: - Public: writes (§7.10, §7.11) ---------------------------------- */

/* Writes are refused after a failure (case F) and when the model changed
** behind the store's back (invariant 4: persisting on from here would
** lose that change at the next restart). */
static int writable(rcp_store *st)
{
    if (st->failed)
        return -1;
    if (rcp_model_version(st->m) != st->mver) {
        st->failed = 1;
        return st_fail(st, "%s: the model was changed outside the store "
                       "(every write must go through rcp_store_add or "
                       "rcp_store_delete); the store takes no more writes",
                       st->dir);
    }
    return 0;
}

/* Room for a record of n bytes in the pending frame, reserved before the
** model changes so that encoding it cannot fail afterwards. */
static int pending_room(rcp_store *st, uint64_t n)
{
    size_t need;
    if (n > MAX_RECORD)
        return st_fail(st, "a document of %llu bytes is over the store's "
                       "limit of %lu", (unsigned long long)n, MAX_RECORD);
    need = (size_t)n + (st->pending.len ? 0 : FRAME_HDR);
    if (pbuf_reserve(&st->pending, need))
        return st_fail(st, "out of memory");
    return 0;
}

/* The first record of a commit starts its frame. */
static void pending_begin(rcp_store *st, unsigned type)
{
    if (!st->pending.len)
        st->pending.len = FRAME_HDR;
    put_u8(&st->pending, type);
}

/* After a record was appended: bounded memory for bulk loads. */
static int pending_check(rcp_store *st)
{
    st->mver = rcp_model_version(st->m);
    return st->pending.len >= BATCH_BYTES ? rcp_store_commit(st) : 0;
}

int rcp_store_add_from(rcp_store *st, const char *id, size_t idlen,
                       const char *text, size_t len, const char *meta,
                       size_t metalen, const rcp_model_chunkref *ck,
                       const rcp_model_origin *org)
{
    uint64_t old;
    if (!meta)
        metalen = 0;
    if (ck && !ck->of)
        ck = NULL;
    if (ck && (ck->end < ck->start || ck->end - ck->start != len))
        return st_fail(st, "a chunk's span (%llu..%llu) does not match its "
                       "%lu bytes", (unsigned long long)ck->start,
                       (unsigned long long)ck->end, (unsigned long)len);
    if (writable(st) || pending_room(st, (uint64_t)ADD_FIXED + idlen + len
                                     + metalen + chunk_bytes(ck)
                                     + origin_bytes(org)))
        return -1;
    old = doc_bytes(st, id, idlen);
    if (rcp_model_add_from(st->m, id, idlen, text, len, meta, metalen, ck,
                           org))
        return st_fail(st, "out of memory adding a document (or a bad "
                       "origin)");
    if (rcp_model_version(st->m) == st->mver)
        return 0;   /* §7.10: an identical re-add is one add: no record */
    st->version++;
    pending_begin(st, REC_ADD);
    put_u64(&st->pending, st->version);
    put_doc(&st->pending, id, idlen, text, len, meta, metalen, ck, org);
    st->live = st->live - old + doc_bytes(st, id, idlen);
    return pending_check(st);
}

int rcp_store_add_chunk(rcp_store *st, const char *id, size_t idlen,
                        const char *text, size_t len, const char *meta,
                        size_t metalen, const rcp_model_chunkref *ck)
{
    return rcp_store_add_from(st, id, idlen, text, len, meta, metalen, ck,
                              NULL);
}

/* MARK: - §7.10 server-side chunks -------------------------------------- */

/* Through the store when there is one, else straight into the model. */
static int put_any(rcp_store *st, rcp_model *m, const char *id, size_t idlen,
                   const char *text, size_t len, const char *meta,
                   size_t metalen, const rcp_model_chunkref *ck,
                   const rcp_model_origin *org)
{
    return st ? rcp_store_add_from(st, id, idlen, text, len, meta, metalen,
                                   ck, org)
              : rcp_model_add_from(m, id, idlen, text, len, meta, metalen,
                                   ck, org);
}

static int del_any(rcp_store *st, rcp_model *m, const char *id, size_t idlen,
                   int *removed)
{
    int r;
    if (st)
        return rcp_store_delete(st, id, idlen, removed);
    r = rcp_model_delete(m, id, idlen);
    *removed = r == 1;
    return r < 0 ? -1 : 0;
}

/* The ids of a document's chunks numbered `from` on, copied: the deletes
** come after the walk (a delete may renumber documents). */
typedef struct chunk_ids {
    uint32_t from;
    pbuf     ids;               /* each: u32 length, bytes */
    size_t   n;
} chunk_ids;

static int collect_chunk(void *ud, uint32_t docno, const rcp_model_docview *d)
{
    chunk_ids *k = ud;
    (void)docno;
    if (d->chunk.index < k->from)
        return 0;
    if (pbuf_reserve(&k->ids, 4 + d->idlen))
        return -1;
    put_bytes(&k->ids, d->id, d->idlen);
    k->n++;
    return 0;
}

int rcp_store_drop_chunks(rcp_store *st, rcp_model *m, const char *id,
                          size_t idlen, uint32_t from, int *any)
{
    chunk_ids k;
    cur c;
    const char *cid = NULL;
    size_t n = 0, i;
    int rc = 0, removed;
    if (st)
        m = st->m;
    memset(&k, 0, sizeof k);
    k.from = from;
    if (rcp_model_chunks(m, id, idlen, rcp_model_version(m), collect_chunk,
                         &k) != 0) {
        pbuf_free(&k.ids);
        return st ? st_fail(st, "out of memory") : -1;
    }
    c.p = k.ids.p;
    c.n = k.ids.len;
    c.pos = 0;
    for (i = 0; i < k.n && rc == 0 && get_bytes(&c, &cid, &n) == 0; i++)
        if ((rc = del_any(st, m, cid, n, &removed)) == 0)
            *any |= removed;
    pbuf_free(&k.ids);
    return rc;
}

int rcp_store_add_chunked(rcp_store *st, rcp_model *m, const char *id,
                          size_t idlen, const char *text, size_t len,
                          const char *meta, size_t metalen,
                          const rcp_model_origin *org, size_t *count)
{
    rcp_span *sp = NULL;
    rcp_model_chunkref ck;
    size_t n = 0, i, cn;
    char cid[RCP_MAX_ID_BYTES + 24];
    int rc = 0, removed = 0;
    if (st)
        m = st->m;
    if (idlen > RCP_MAX_ID_BYTES)
        return st ? st_fail(st, "an id over %u bytes", RCP_MAX_ID_BYTES) : -1;
    if (rcp_text_chunk(text, len, RCP_CHUNK_TOKENS, RCP_CHUNK_OVERLAP, &sp,
                       &n) != 0)
        return st ? st_fail(st, "out of memory chunking") : -1;
    ck.of = id;
    ck.oflen = idlen;
    for (i = 0; i < n && rc == 0; i++) {
        ck.index = (uint32_t)i;
        ck.start = sp[i].start;
        ck.end = sp[i].end;
        cn = (size_t)snprintf(cid, sizeof cid, "%.*s#%lu", (int)idlen, id,
                              (unsigned long)i);
        rc = put_any(st, m, cid, cn, text + sp[i].start,
                     sp[i].end - sp[i].start, meta, metalen, &ck, org);
    }
    rcp_free(sp);
    *count += n;
    if (rc == 0 && (rc = rcp_store_drop_chunks(st, m, id, idlen, (uint32_t)n,
                                               &removed)) == 0
        && rcp_model_find(m, id, idlen) >= 0)
        rc = del_any(st, m, id, idlen, &removed);
    return rc;
}

/* MARK: - §7.10 idempotency keys ---------------------------------------- */

const struct store_idem_entry *store_idem_find(const store_idem *t,
                                               const char *key, size_t n)
{
    size_t i;
    for (i = 0; i < STORE_IDEM_SLOTS; i++)
        if (t->e[i].key && t->e[i].keylen == n
            && memcmp(t->e[i].key, key, n) == 0)
            return &t->e[i];
    return NULL;
}

static void idem_forget(store_idem *t, struct store_idem_entry *e)
{
    if (e->key)
        t->bytes -= e->keylen + e->len;
    rcp_free(e->key);
    rcp_free(e->result);
    memset(e, 0, sizeof *e);
}

int store_idem_put(store_idem *t, const char *key, size_t n, uint64_t fp,
                   const char *result, size_t len)
{
    size_t need = n + len, i;
    struct store_idem_entry *e;
    const struct store_idem_entry *old = store_idem_find(t, key, n);
    if (old)                    /* a key names one write */
        idem_forget(t, &t->e[old - t->e]);
    if (need > RCP_IDEM_BYTES)
        return 0;               /* never remembered: too big */
    for (i = 0; i < STORE_IDEM_SLOTS && t->bytes + need > RCP_IDEM_BYTES;
         i++)
        idem_forget(t, &t->e[(t->next + i) % STORE_IDEM_SLOTS]);
    e = &t->e[t->next];
    idem_forget(t, e);
    e->key = rcp_malloc(n + 1);
    e->result = rcp_malloc(len + 1);
    if (!e->key || !e->result) {
        idem_forget(t, e);
        return -1;
    }
    if (n)
        memcpy(e->key, key, n);
    if (len)
        memcpy(e->result, result, len);
    e->keylen = n;
    e->len = len;
    e->fp = fp;
    t->bytes += need;
    t->next = (t->next + 1) % STORE_IDEM_SLOTS;
    return 0;
}

void store_idem_free(store_idem *t)
{
    size_t i;
    for (i = 0; i < STORE_IDEM_SLOTS; i++)
        idem_forget(t, &t->e[i]);
    t->next = 0;
}

store_idem *store_idem_table(rcp_store *st)
{
    return &st->idem;
}

int store_log_idem(rcp_store *st, const char *key, size_t n, uint64_t fp,
                   const char *result, size_t len)
{
    if (n + len > RCP_IDEM_BYTES)
        return 0;               /* the table would not keep it either */
    if (st->failed || pending_room(st, 1u + 4u + n + 8u + 4u + len))
        return -1;
    if (!st->pending.len)
        st->pending.len = FRAME_HDR;
    put_idem(&st->pending, key, n, fp, result, len);
    return 0;
}

int rcp_store_add(rcp_store *st, const char *id, size_t idlen,
                  const char *text, size_t len, const char *meta,
                  size_t metalen)
{
    return rcp_store_add_chunk(st, id, idlen, text, len, meta, metalen,
                               NULL);
}

int rcp_store_delete(rcp_store *st, const char *id, size_t idlen,
                     int *removed)
{
    uint64_t old;
    int r;
    if (removed)
        *removed = 0;
    if (writable(st) || pending_room(st, (uint64_t)DEL_FIXED + idlen))
        return -1;
    old = doc_bytes(st, id, idlen);
    if ((r = rcp_model_delete(st->m, id, idlen)) < 0)
        return st_fail(st, "the model refused the deletion");
    if (r == 0)
        return 0;   /* §7.11: absent is not an error, and changes nothing */
    if (removed)
        *removed = 1;
    st->version++;
    pending_begin(st, REC_DEL);
    put_u64(&st->pending, st->version);
    put_bytes(&st->pending, id, idlen);
    st->live -= old;
    return pending_check(st);
}

/* MARK: - JSON Lines bulk load ------------------------------------------- */

typedef struct jdoc {
    const char *id, *text, *meta;
    size_t idlen, len, metalen;
} jdoc;

typedef struct loader {
    const char *path, *name;   /* name: the file name without directories */
    FILE       *f;
    unsigned char *blk;        /* LOAD_BLOCK read ahead: blk[bpos..blen) */
    size_t      bpos, blen;
    pbuf        line;
    unsigned long lineno;
    rcp_arena   arena;
    rcp_buf     meta, id;
    char       *err;
    size_t      errlen;
    int         pfd;           /* progress */
    size_t      shown;         /* length of the progress line on screen */
    const rcp_model_origin *origin;    /* §15.2 of every document */
    const rcp_field *fields;           /* §8 declared: meta is checked */
    size_t      nfields;
    int         chunk;                 /* §7.10 server-side chunks */
    size_t      chunks;                /* made so far */
    const rcp_store_load_opts *o;      /* its look-ahead (o->ahead) */
    struct timespec t0;        /* when loading began (the final line) */
} loader;

static int lfail(loader *ld, const char *fmt, ...)
{
    va_list ap;
    if (!ld->err || !ld->errlen)
        return -1;
    va_start(ap, fmt);
    vsnprintf(ld->err, ld->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The next line of f into ld->line (without its '\n' or a final '\r'):
** 1, 0 at the end, -1 on an error (said).  A block at a time, each '\n'
** found with memchr (a byte at a time through getc, the two passes'
** reading was a fifth of a bulk load); a NUL is copied like any other
** byte, for the parser to judge (fgets would hide what follows it); a
** line is refused once it passes MAX_LINE, before it is buffered whole. */
#define LOAD_BLOCK 65536u

static int read_line(loader *ld)
{
    int any = 0;
    ld->line.len = 0;
    for (;;) {
        const unsigned char *p, *nl;
        size_t n;
        if (ld->bpos == ld->blen) {
            ld->bpos = 0;
            ld->blen = fread(ld->blk, 1, LOAD_BLOCK, ld->f);
            if (ld->blen == 0)
                break;
        }
        p = ld->blk + ld->bpos;
        nl = memchr(p, '\n', ld->blen - ld->bpos);
        n = nl ? (size_t)(nl - p) : ld->blen - ld->bpos;
        any = 1;
        if (n > MAX_LINE - ld->line.len)
            return lfail(ld, "%s:%lu: line longer than %lu bytes", ld->path,
                         ld->lineno + 1, MAX_LINE);
        if (pbuf_reserve(&ld->line, n))
            return lfail(ld, "%s:%lu: out of memory", ld->path,
                         ld->lineno + 1);
        memcpy(ld->line.p + ld->line.len, p, n);
        ld->line.len += n;
        ld->bpos += n + (nl != NULL);
        if (nl)
            break;
    }
    if (ferror(ld->f))
        return lfail(ld, "%s: read error: %s", ld->path, strerror(errno));
    if (!any)
        return 0;
    ld->lineno++;
    if (ld->line.len && ld->line.p[ld->line.len - 1] == '\r')
        ld->line.len--;
    return 1;
}

/* Where the JSON starts: after a UTF-8 BOM on line 1 (RFC 8259 §8.1
** lets a parser ignore one); -1 for a blank line. */
static long line_start(const loader *ld)
{
    size_t i = 0;
    if (ld->lineno == 1 && ld->line.len >= 3
        && !memcmp(ld->line.p, "\xEF\xBB\xBF", 3))
        i = 3;
    while (i < ld->line.len && (ld->line.p[i] == ' '
                                || ld->line.p[i] == '\t'))
        i++;
    return i == ld->line.len ? -1 : (long)i;
}

/* A member, with JSON null meaning absent (§4.6, as proto_get reads params). */
static const rcp_json *member(const rcp_json *obj, const char *key)
{
    const rcp_json *v = rcp_json_get(obj, key);
    return v && v->type == RCP_JSON_NULL ? NULL : v;
}

/* §8 issue 12: a declared field's value fits its type, as index/add
** checks it. */
static int check_fields(loader *ld, const rcp_json *meta)
{
    static const char *const want[] = { "a string (keyword)",
        "a string (text)", "a number (int)", "a number (float)",
        "true or false (bool)", ("an RFC 3339 date-time or epoch "
        "milliseconds (date)") };
    size_t i, k;
    for (k = 0; k < ld->nfields; k++)
        for (i = 0; i < meta->n; i++)
            if (meta->kids[i].keylen == ld->fields[k].namelen
                && !memcmp(meta->kids[i].key, ld->fields[k].name,
                           ld->fields[k].namelen)
                && !rcp_field_accepts(&ld->fields[k], &meta->kids[i]))
                return lfail(ld, "%s:%lu: meta.%.*s must be %s, or an array "
                             "of them: the field is declared so (--field)",
                             ld->path, ld->lineno,
                             (int)ld->fields[k].namelen, ld->fields[k].name,
                             want[ld->fields[k].type]);
    return 0;
}

static int check_doc(loader *ld, const rcp_json *v)
{
    const rcp_json *id = member(v, "id"), *text = member(v, "text");
    const rcp_json *meta = member(v, "meta");
    const char *why = NULL;
    if (v->type != RCP_JSON_OBJECT)
        why = "not a JSON object (want {\"id\", \"text\", \"meta\"})";
    else if (!text)
        why = "\"text\" is missing";
    else if (text->type != RCP_JSON_STRING)
        why = "\"text\" must be a string";
    else if (id && id->type != RCP_JSON_STRING)
        why = "\"id\" must be a string";
    else if (meta && meta->type != RCP_JSON_OBJECT)
        why = "\"meta\" must be an object";
    if (why)
        return lfail(ld, "%s:%lu: %s", ld->path, ld->lineno, why);
    return meta ? check_fields(ld, meta) : 0;
}

/* The caps index/add enforces (rcp.h, RCP_MAX_*) hold for a corpus too,
** so every loaded document can be re-added and deleted by a client. */
static int check_caps(loader *ld, const jdoc *d)
{
    static const char *const name[] = { "\"id\"", "\"text\"",
                                        "\"meta\"" };
    static const size_t cap[] = { RCP_MAX_ID_BYTES, RCP_MAX_TEXT_BYTES,
                                  RCP_MAX_META_BYTES };
    const size_t n[] = { d->idlen, d->len, d->metalen };
    size_t i;
    for (i = 0; i < 3; i++)
        if (n[i] > cap[i])
            return lfail(ld, "%s:%lu: %s is %lu bytes; the limit is %lu",
                         ld->path, ld->lineno, name[i], (unsigned long)n[i],
                         (unsigned long)cap[i]);
    return 0;
}

/* A line without an id gets "<file name>:<line>" (see rcp.h). */
static int fill_doc(loader *ld, const rcp_json *v, jdoc *d)
{
    const rcp_json *id = member(v, "id"), *meta = member(v, "meta");
    const rcp_json *text = member(v, "text");
    char num[32];
    rcp_jw w;
    ld->meta.len = ld->id.len = 0;
    if (meta) {
        rcp_jw_init(&w, &ld->meta);
        rcp_jw_value(&w, meta);   /* as methods.c serialises index/add meta */
    }
    if (!id) {
        snprintf(num, sizeof num, ":%lu", ld->lineno);
        rcp_buf_puts(&ld->id, ld->name);
        rcp_buf_puts(&ld->id, num);
    }
    if (ld->meta.oom || ld->id.oom)
        return lfail(ld, "%s:%lu: out of memory", ld->path, ld->lineno);
    d->id = id ? id->s : ld->id.data;
    d->idlen = id ? id->n : ld->id.len;
    d->text = text->s;
    d->len = text->n;
    d->meta = meta ? ld->meta.data : NULL;
    d->metalen = meta ? ld->meta.len : 0;
    return check_caps(ld, d);
}

/* Parse and check the line at column start; 0 and *d, or -1. */
static int parse_line(loader *ld, size_t start, jdoc *d)
{
    const rcp_json *v;
    rcp_json_err je;
    rcp_arena_reset(&ld->arena);
    v = rcp_json_parse(&ld->arena, (const char *)ld->line.p + start,
                       ld->line.len - start, 0, &je);
    if (!v && je.code == RCP_JSON_E_NOMEM)
        return lfail(ld, "%s:%lu: out of memory", ld->path, ld->lineno);
    if (!v)
        return lfail(ld, "%s:%lu: invalid JSON at column %lu: %s", ld->path,
                     ld->lineno, (unsigned long)(start + je.offset + 1),
                     je.msg);
    return check_doc(ld, v) || fill_doc(ld, v, d) ? -1 : 0;
}

/* Pass 1: every line checked, nothing loaded.  The document count. */
static long validate_pass(loader *ld)
{
    long n = 0, start;
    jdoc d;
    int r;
    while ((r = read_line(ld)) == 1) {
        if ((start = line_start(ld)) < 0)
            continue;
        if (parse_line(ld, (size_t)start, &d))
            return -1;
        n++;
    }
    return r < 0 ? -1 : n;
}

static void show(loader *ld, const char *text, size_t n)
{
    ssize_t w;
    while (n) {
        w = write(ld->pfd, text, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;          /* progress is best effort */
        text += w;
        n -= (size_t)w;
    }
}

/* The progress line, rewritten in place; final adds a newline. */
static void progress(loader *ld, unsigned long done, unsigned long total,
                     unsigned long changed, int final)
{
    char line[512], chunks[48] = "";
    int n;
    size_t len;
    struct timespec t;
    double secs;
    if (ld->pfd < 0 || (!final && !isatty(ld->pfd)))
        return;     /* a log file gets the final line only */
    clock_gettime(CLOCK_MONOTONIC, &t);
    secs = (double)(t.tv_sec - ld->t0.tv_sec)
         + (double)(t.tv_nsec - ld->t0.tv_nsec) / 1e9;
    if (ld->chunk)
        snprintf(chunks, sizeof chunks, ", as %lu chunks",
                 (unsigned long)ld->chunks);
    if (final)
        n = snprintf(line, sizeof line, "\rloaded %s: %lu documents%s (%lu "
                     "new or changed) in %.3g s, %.0f docs/s", ld->name,
                     done, chunks, changed, secs,
                     done / (secs > 1e-6 ? secs : 1e-6));
    else
        n = snprintf(line, sizeof line, "\rloading %s: %lu/%lu documents "
                     "(%lu%%)", ld->name, done, total,
                     total ? done * 100 / total : 100);
    len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    while (len < ld->shown && len < sizeof line - 2)
        line[len++] = ' ';    /* blank out a longer previous line */
    ld->shown = len;
    if (final)
        line[len++] = '\n';
    show(ld, line, len);
}

static int put_one(loader *ld, rcp_store *st, rcp_model *m, const jdoc *d,
                   unsigned long *changed)
{
    uint64_t before = st ? rcp_store_version(st) : rcp_model_version(m);
    int any = 0;
    if (ld->chunk ? rcp_store_add_chunked(st, m, d->id, d->idlen, d->text,
                                          d->len, d->meta, d->metalen,
                                          ld->origin, &ld->chunks)
        : put_any(st, m, d->id, d->idlen, d->text, d->len, d->meta,
                  d->metalen, NULL, ld->origin)
          || rcp_store_drop_chunks(st, m, d->id, d->idlen, 0, &any))
        return lfail(ld, "%s:%lu: %s", ld->path, ld->lineno,
                     st ? rcp_store_error(st) : "out of memory");
    *changed += (st ? rcp_store_version(st) : rcp_model_version(m))
              != before;
    return 0;
}

/* rcp_store_load_opts.ahead: the texts of the next up to ahead_n
** documents, read, handed over and unread -- the file is positioned back
** where it was, so pass 2 reads (and judges) them as ever; what stops
** the look-ahead early (a bad line, no memory) is pass 2's to meet.  0,
** or -1 when the file cannot be positioned back. */
static int look_ahead(loader *ld)
{
    off_t at = ftello(ld->f) - (off_t)(ld->blen - ld->bpos);
    unsigned long lineno = ld->lineno;
    size_t n = 0, cap = ld->o->ahead_n, i, *off, *lens;
    const char **texts;
    rcp_buf b;
    long start;
    jdoc d;
    off = rcp_malloc((cap + 1) * sizeof *off);
    lens = rcp_malloc((cap + 1) * sizeof *lens);
    texts = rcp_malloc((cap + 1) * sizeof *texts);
    rcp_buf_init(&b);
    while (off && lens && texts && n < cap && read_line(ld) == 1) {
        if ((start = line_start(ld)) < 0)
            continue;
        if (parse_line(ld, (size_t)start, &d))
            break;
        off[n] = b.len;
        lens[n++] = d.len;
        rcp_buf_put(&b, d.text, d.len);
    }
    for (i = 0; !b.oom && off && lens && texts && i < n; i++)
        texts[i] = b.data + off[i];
    if (n && !b.oom && off && lens && texts)
        ld->o->ahead(ld->o->ahead_ud, texts, lens, n);
    rcp_buf_free(&b);
    rcp_free(off);
    rcp_free(lens);
    rcp_free((void *)texts);
    ld->bpos = ld->blen = 0;
    ld->lineno = lineno;
    clearerr(ld->f);
    if (at < 0 || fseeko(ld->f, at, SEEK_SET) != 0)
        return lfail(ld, "%s: cannot read it again: %s", ld->path,
                     strerror(errno));
    return 0;
}

/* Pass 2: the same lines again (re-checked: the file may have changed),
** each upserted; one commit at the end. */
static long load_pass(loader *ld, rcp_store *st, rcp_model *m,
                      unsigned long total)
{
    unsigned long done = 0, changed = 0, step = total / 100 + 1;
    long start;
    jdoc d;
    int r, look = ld->o && ld->o->ahead && ld->o->ahead_n && !ld->chunk;
    size_t left = 0;            /* documents the look-ahead saw, not added */
    for (;;) {
        if (look && !left) {
            if (look_ahead(ld))
                return -1;
            left = ld->o->ahead_n;
        }
        if ((r = read_line(ld)) != 1)
            break;
        if ((start = line_start(ld)) < 0)
            continue;
        left--;
        if (parse_line(ld, (size_t)start, &d)
            || put_one(ld, st, m, &d, &changed))
            return -1;
        if (++done % step == 0)
            progress(ld, done, total, changed, 0);
    }
    if (r < 0)
        return -1;
    if (st && rcp_store_commit(st))
        return lfail(ld, "%s: %s", ld->path, rcp_store_error(st));
    progress(ld, done, total, changed, 1);
    return (long)done;
}

static void loader_close(loader *ld)
{
    if (ld->f)
        fclose(ld->f);
    pbuf_free(&ld->line);
    rcp_free(ld->blk);
    rcp_arena_free(&ld->arena);
    rcp_buf_free(&ld->meta);
    rcp_buf_free(&ld->id);
}

static int loader_open(loader *ld, const char *path, int pfd, char *err,
                       size_t errlen)
{
    const char *slash = strrchr(path, '/');
    memset(ld, 0, sizeof *ld);
    ld->path = path;
    ld->name = slash ? slash + 1 : path;
    ld->err = err;
    ld->errlen = errlen;
    ld->pfd = pfd;
    clock_gettime(CLOCK_MONOTONIC, &ld->t0);
    rcp_arena_init(&ld->arena, 0);
    rcp_buf_init(&ld->meta);
    rcp_buf_init(&ld->id);
    if (!(ld->f = fopen(path, "rb")))
        return lfail(ld, "%s: %s", path, strerror(errno));
    if (!(ld->blk = rcp_malloc(LOAD_BLOCK)))
        return lfail(ld, "%s: out of memory", path);
    return 0;
}

/* After an error in pass 2 the loaded prefix is committed, so memory and
** disk agree, and the message says how much went in. */
static void load_failed(loader *ld, rcp_store *st, rcp_model *m,
                        uint64_t count0)
{
    size_t n = ld->err ? strlen(ld->err) : 0;
    uint64_t now;
    if (st)
        (void)rcp_store_commit(st);
    now = rcp_model_count(m);
    if (ld->err && n < ld->errlen)
        snprintf(ld->err + n, ld->errlen - n, " (loading stopped there; "
                 "the model went from %llu to %llu documents)",
                 (unsigned long long)count0, (unsigned long long)now);
    if (ld->pfd >= 0 && ld->shown)
        show(ld, "\n", 1);
}

long rcp_store_load_jsonl(rcp_store *st, rcp_model *m, const char *path,
                          int progress_fd, char *err, size_t errlen)
{
    rcp_store_load_opts o;
    memset(&o, 0, sizeof o);
    o.progress_fd = progress_fd;
    return rcp_store_load(st, m, path, &o, err, errlen);
}

long rcp_store_load(rcp_store *st, rcp_model *m, const char *path,
                    const rcp_store_load_opts *o, char *err, size_t errlen)
{
    loader ld;
    long total, n = -1;
    uint64_t count0;
    if (!path || (!st && !m) || (st && m && m != st->m)) {
        say(err, errlen, "rcp_store_load_jsonl: no file, or a model that "
            "is not the store's");
        return -1;
    }
    if (st)
        m = st->m;
    if (loader_open(&ld, path, o->progress_fd, err, errlen) == 0
        && (ld.origin = o->origin, ld.fields = o->fields,
            ld.nfields = o->nfields, ld.chunk = o->chunk, ld.o = o,
            total = validate_pass(&ld)) >= 0) {
        rewind(ld.f);
        ld.bpos = ld.blen = 0;
        ld.lineno = 0;
        count0 = rcp_model_count(m);
        if ((n = load_pass(&ld, st, m, (unsigned long)total)) < 0)
            load_failed(&ld, st, m, count0);
    }
    loader_close(&ld);
    return n;
}

/* MARK: - Side files (§7.17 memories) ------------------------------------ */

/* A side file is state that is not documents -- today the §7.17 memories
** (methods.c) -- kept whole in DIR/NAME beside the log, never in it: the
** log's format and its readers stay as they are (an older server ignores
** the file), and a side file is small and rewritten whole.  Written as
** the log is created (case D): NAME.new, fsync, rename, fsync DIR, so
** DIR/NAME is the old bytes or the new, never a mix.  Names are a
** letter then letters, digits, '-' and '.', not ending ".new" -- never
** the log's or the lock's. */
#define SIDE_MAX ((size_t)64 << 20)

static int side_name_ok(const char *name)
{
    size_t i, n = strlen(name);
    if (n == 0 || n > 64 || !((name[0] >= 'a' && name[0] <= 'z')))
        return 0;
    for (i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
              || c == '.'))
            return 0;
    }
    if (n >= 4 && strcmp(name + n - 4, ".new") == 0)
        return 0;
    return strcmp(name, "lock") != 0 && strncmp(name, "rcp.log", 7) != 0;
}

int rcp_store_put_file(rcp_store *st, const char *name, const char *data,
                       size_t n)
{
    char *path, *tmp = NULL;
    int fd = -1, e, rc = -1;
    size_t len;
    if (!side_name_ok(name))
        return st_fail(st, "%s: not a side file name", name);
    if (st->failed)
        return st_fail(st, "the store has failed; reopen it");
    if (n > SIDE_MAX)
        return st_fail(st, "%s: %lu bytes, over the side file limit", name,
                       (unsigned long)n);
    if (!(path = join(st->dir, name)))
        return st_fail(st, "out of memory");
    len = strlen(path);
    if (!(tmp = rcp_malloc(len + 5))) {
        rcp_free(path);
        return st_fail(st, "out of memory");
    }
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".new", 5);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st_sys(st, "create", tmp);
        goto out;
    }
    if ((n && write_at(fd, data, n, 0)) || sync_fd(fd)) {
        e = errno;
        close(fd);
        (void)unlink(tmp);
        errno = e;
        st_sys(st, "write", tmp);
        goto out;
    }
    close(fd);
    if (rename(tmp, path)) {
        e = errno;
        (void)unlink(tmp);
        errno = e;
        st_sys(st, "rename", tmp);
        goto out;
    }
    rc = sync_dir(st);
out:
    rcp_free(path);
    rcp_free(tmp);
    return rc;
}

int rcp_store_get_file(rcp_store *st, const char *name, char **data,
                       size_t *n)
{
    struct stat sb;
    char *path, *buf;
    size_t got;
    int fd;
    *data = NULL;
    *n = 0;
    if (!side_name_ok(name))
        return st_fail(st, "%s: not a side file name", name);
    if (!(path = join(st->dir, name)))
        return st_fail(st, "out of memory");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int absent = errno == ENOENT;
        if (!absent)
            st_sys(st, "open", path);
        rcp_free(path);
        return absent ? 1 : -1;
    }
    if (fstat(fd, &sb) || sb.st_size < 0
        || (uint64_t)sb.st_size > (uint64_t)SIDE_MAX) {
        if (sb.st_size >= 0)
            st_fail(st, "%s: too large for a side file", path);
        else
            st_sys(st, "stat", path);
        close(fd);
        rcp_free(path);
        return -1;
    }
    if (!(buf = rcp_malloc((size_t)sb.st_size + 1))) {
        close(fd);
        rcp_free(path);
        return st_fail(st, "out of memory");
    }
    if (read_at(fd, buf, (size_t)sb.st_size, 0, &got)
        || got != (size_t)sb.st_size) {
        st_sys(st, "read", path);
        close(fd);
        rcp_free(path);
        rcp_free(buf);
        return -1;
    }
    close(fd);
    rcp_free(path);
    buf[got] = 0;
    *data = buf;
    *n = got;
    return 0;
}

/* MARK: - §7.16 feedback: DIR/feedback.log -------------------------------- */

/* Feedback is kept beside the log, not in it: compaction rewrites rcp.log
** from the live documents and its versions count corpus changes (§7.7.1),
** and feedback is neither -- it changes no document and no version.  So
** it is a file of its own, DIR/feedback.log: one line per accepted call,
** the caller's bytes (methods.c writes compact JSON, which holds no raw
** newline) and "\n", appended and fsynced before the call is answered
** (§13.1).  A crash mid-append leaves a last line without its newline,
** never acknowledged: reading cuts it off (case A's rule), so the next
** append starts a whole line.  The file is new in this format's life;
** a store without one has had no feedback, and a server that predates it
** never looks at it. */

static char *feedback_path(rcp_store *st)
{
    char *p = join(st->dir, "feedback.log");
    if (!p)
        st_fail(st, "out of memory");
    return p;
}

int rcp_store_feedback(rcp_store *st, const char *line, size_t n)
{
    char *path;
    struct stat sb;
    int fd, made, rc = 0;
    if (st->failed)         /* st->err still says why (case F) */
        return st->err[0] ? -1 : st_fail(st, "the store takes no more "
                                         "writes until it is reopened");
    if (!(path = feedback_path(st)))
        return -1;
    made = stat(path, &sb) != 0;
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || fstat(fd, &sb) != 0
        || write_at(fd, line, n, (uint64_t)sb.st_size)
        || write_at(fd, "\n", 1, (uint64_t)sb.st_size + n) || sync_fd(fd)
        || (made && sync_dirfd(st->dfd))) {
        rc = st_sys(st, "appending feedback", path);
        if (fd >= 0)        /* best effort: nothing half-written stays */
            (void)truncate_fd(fd, (uint64_t)sb.st_size);
    }
    if (fd >= 0)
        close(fd);
    rcp_free(path);
    return rc;
}

int rcp_store_feedback_each(rcp_store *st, rcp_store_feedback_fn fn,
                            void *ud)
{
    char *path, *buf = NULL;
    struct stat sb;
    size_t got = 0, i, from = 0;
    int fd, rc = 0;
    if (!(path = feedback_path(st)))
        return -1;
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        rc = errno == ENOENT ? 0 : st_sys(st, "open", path);
        rcp_free(path);
        return rc;
    }
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size > (uint64_t)SIZE_MAX - 1
        || !(buf = rcp_malloc((size_t)sb.st_size + 1))
        || read_at(fd, buf, (size_t)sb.st_size, 0, &got))
        rc = buf ? st_sys(st, "read", path) : st_fail(st, "out of memory");
    for (i = 0; !rc && i < got; i++)
        if (buf[i] == '\n') {
            rc = fn(ud, buf + from, i - from);
            from = i + 1;
        }
    if (!rc && from < got && truncate_fd(fd, from))    /* a torn last line */
        rc = st_sys(st, "truncate", path);
    close(fd);
    rcp_free(buf);
    rcp_free(path);
    return rc;
}
