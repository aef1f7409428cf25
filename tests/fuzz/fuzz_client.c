/*
** fuzz_client.c -- the client's frame reader (client.c: framing §5.1,
** correlation by id §4.7, batches §11), through the public API: a
** forked peer (rcp_client_fork) waits for the client's requests to end,
** writes the input to the client as the server's whole output, and exits.
**
** Input: one mode byte -- bit 0 turns opts.keep_frames on, the other
** seven set opts.max_frame to 64 bytes each (0: the default) -- then the
** "server's" bytes.  The client has sent ping id 1, retrieve id 2, a
** batch of ids 3 and 4 with a notification, and expects a raw request
** with id "s", so the bytes can answer, mis-answer, half-answer or
** double-answer each.
** Oracles, whatever the bytes:
**   - at EOF nothing is pending: every request is done or abandoned;
**   - a done request's response carries its id (§4.7 pairing by id
**     alone) and has result xor error, and result is what the response
**     holds;
**   - the frame counters agree with the bytes: frames + blank lines
**     never exceed the lines sent, and only lines longer than max_frame
**     may go uncounted.
*/
#include "fuzz.h"

#include <signal.h>
#include <unistd.h>

typedef struct peer {
    const uint8_t *data;
    size_t size;
} peer;

/* The forked "server": read our stdin to its end, then write the bytes. */
static int peer_main(void *ud)
{
    const peer *p = ud;
    char buf[4096];
    size_t off = 0;
    while (read(0, buf, sizeof buf) > 0)
        ;
    while (off < p->size) {
        ssize_t k = write(1, p->data + off, p->size - off);
        if (k <= 0)
            return 1;
        off += (size_t)k;
    }
    return 0;
}

/* Lines in b[0..n) (a last one without '\n' counts), and how many are
** longer than max (0: none is too long). */
static void count_lines(const uint8_t *b, size_t n, size_t max,
                        size_t *lines, size_t *longer)
{
    size_t i, start = 0;
    *lines = *longer = 0;
    for (i = 0; i <= n; i++) {
        if (i < n && b[i] != '\n')
            continue;
        if (i > start || i < n) {
            ++*lines;
            *longer += max && i - start > max;
        }
        start = i + 1;
    }
}

static void check_request(rcp_request *r)
{
    rcp_arena a;
    const rcp_json *want, *resp;
    size_t n;
    const char *idjson = rcp_request_id(r, &n);
    FZ_ASSERT(rcp_request_state_get(r) != RCP_REQ_PENDING,
              "still pending at EOF");
    if (rcp_request_state_get(r) != RCP_REQ_DONE)
        return;
    rcp_arena_init(&a, 0);
    want = rcp_json_parse(&a, idjson, n, 0, NULL);
    resp = rcp_request_response(r);
    FZ_ASSERT(resp && rcp_id_equal(rcp_json_get(resp, "id"), want),
              "paired with a response for another id");
    FZ_ASSERT(!rcp_request_result(r)
              || rcp_request_result(r) == rcp_json_get(resp, "result"),
              "result is not the response's");
    FZ_ASSERT(!(rcp_request_result(r) && rcp_request_error(r, NULL)),
              "both a result and an error");
    rcp_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rcp_client_opts o;
    rcp_client *c;
    rcp_request *r[5];
    const rcp_client_metrics *mt;
    peer p;
    char err[256];
    size_t lines, longer;
    int i;
    if (size < 1)
        return 0;
    signal(SIGPIPE, SIG_IGN);
    memset(&o, 0, sizeof o);
    o.err = RCP_STDERR_DISCARD;
    o.keep_frames = data[0] & 1;
    o.max_frame = (size_t)(data[0] >> 1) * 64;
    p.data = data + 1;
    p.size = size - 1;
    c = rcp_client_fork(peer_main, &p, &o, err, sizeof err);
    FZ_ASSERT(c != NULL, "fork: %s", err);
    r[0] = rcp_client_request(c, "ping", NULL, 0);
    r[1] = rcp_client_request(c, "retrieve", "{\"query\":\"q\",\"k\":2}", 0);
    FZ_ASSERT(rcp_client_batch_begin(c) == 0, "batch");
    r[2] = rcp_client_request(c, "ping", "{}", 0);
    r[3] = rcp_client_request(c, "info", NULL, 0);
    (void)rcp_client_notify(c, "notifications/cancel", "{\"id\":1}");
    (void)rcp_client_batch_end(c);
    r[4] = rcp_client_expect(c, "\"s\"", 3, 0);
    FZ_ASSERT(r[0] && r[1] && r[2] && r[3] && r[4], "a request failed");
    rcp_client_eof(c);
    while (rcp_client_pump(c, 1000) >= 0)
        ;
    FZ_ASSERT(rcp_client_pending(c) == 0, "pending after EOF");
    for (i = 0; i < 5; i++)
        check_request(r[i]);
    mt = rcp_client_metrics_get(c);
    count_lines(p.data, p.size, o.max_frame ? o.max_frame : 256u << 20,
                &lines, &longer);
    FZ_ASSERT(mt->frames + mt->blank_lines <= lines
              && mt->frames + mt->blank_lines + longer >= lines,
              "%llu frames and %llu blank lines from %zu lines (%zu long)",
              (unsigned long long)mt->frames,
              (unsigned long long)mt->blank_lines, lines, longer);
    (void)rcp_client_close(c, 1000);
    return 0;
}
