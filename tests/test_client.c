/*
** test_client.c -- the id-correlating client (client.c) against scripted
** peers that misbehave in every way seed 002 lists, and the conformance
** suite (conformance/conform.c) against deliberately broken servers: the
** suite must catch each break, and pass the same checks on the unbroken
** server (the control), so no check is vacuous.
**
** A scripted peer is a function run in a forked child (rcp_client_fork)
** that reads request lines and writes canned frames.  A broken server is
** the real protocol core (rcp_server_handle) with one mutation applied to
** what it writes.  The check data is read from $RCP_CONFORMANCE, else
** ./conformance (make runs tests from the repository root).
*/
#include "../rcp.h"
#include "../conformance/conform.h"
#include "testutil.h"
#include "httppeer.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 5000

/* MARK: - Scripted peers ------------------------------------------------- */

/* A script: read `read` request lines, then write `write` (may be NULL),
** then pause `pause_ms`; a step with read < 0 ends it. */
typedef struct step {
    int         read;
    const char *write;
    int         pause_ms;
} step;

static int read_line(void)
{
    char ch;
    ssize_t n;
    while ((n = read(0, &ch, 1)) == 1)
        if (ch == '\n')
            return 1;
    return 0;
}

static void write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(1, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static int play_script(void *ud)
{
    const step *s;
    for (s = ud; s->read >= 0; s++) {
        int i;
        for (i = 0; i < s->read; i++)
            if (!read_line())
                return 0;
        if (s->write)
            write_all(s->write, strlen(s->write));
        if (s->pause_ms)
            poll(NULL, 0, s->pause_ms);
    }
    while (read_line())                  /* then wait for EOF */
        ;
    return 0;
}

static rcp_client *peer(const step *script)
{
    char err[128];
    rcp_client *c = rcp_client_fork(play_script, (void *)script, NULL, err,
                                    sizeof err);
    ck_assert_msg(c != NULL, "fork: %s", err);
    return c;
}

static long result_v(const rcp_request *r)
{
    int64_t v = -1;
    ck_assert_int_eq(rcp_request_state_get(r), RCP_REQ_DONE);
    ck_assert(rcp_json_int(rcp_json_get(rcp_request_result(r), "v"), &v));
    return (long)v;
}

/* MARK: - Pairing by id (seed 002) --------------------------------------- */

START_TEST(pairs_out_of_order_responses_by_id)
{
    static const step s[] = {
        { 3, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"v\":3}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"v\":2}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *r1 = rcp_client_request(c, "ping", NULL, 0);
    rcp_request *r2 = rcp_client_request(c, "ping", "{}", 0);
    rcp_request *r3 = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_uint_eq(rcp_client_wait_all(c, WAIT_MS), 0);
    ck_assert_int_eq(result_v(r1), 1);
    ck_assert_int_eq(result_v(r2), 2);
    ck_assert_int_eq(result_v(r3), 3);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->pairs, 3);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->batch_unknown_id_response,
                      0);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(batch_reply_in_any_order_pairs_by_id)
{
    static const step s[] = {
        { 1, "[{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"v\":2}},"
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"v\":3}},"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}]\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *r[3];
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    int i;
    ck_assert_int_eq(rcp_client_batch_begin(c), 0);
    for (i = 0; i < 3; i++)
        r[i] = rcp_client_request(c, "ping", NULL, WAIT_MS);
    ck_assert_int_eq(rcp_client_batch_end(c), 0);
    ck_assert_uint_eq(rcp_client_wait_all(c, WAIT_MS), 0);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(result_v(r[i]), i + 1);
    ck_assert_uint_eq(m->batches, 1);
    ck_assert_uint_eq(m->batch_size_sum, 3);
    ck_assert_uint_eq(m->batch_response_count_mismatch, 0);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(batch_notifications_shorten_the_reply_without_mismatch)
{
    static const step s[] = {
        { 1, "[{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"v\":2}},"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}]\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *a, *b;
    rcp_client_batch_begin(c);
    a = rcp_client_request(c, "ping", NULL, WAIT_MS);
    ck_assert_int_eq(rcp_client_notify(c, "notifications/x", "{}"), 0);
    b = rcp_client_request(c, "ping", NULL, WAIT_MS);
    rcp_client_batch_end(c);
    ck_assert_uint_eq(rcp_client_wait_all(c, WAIT_MS), 0);
    ck_assert_int_eq(result_v(a), 1);
    ck_assert_int_eq(result_v(b), 2);
    ck_assert_uint_eq(m->batch_size_sum, 3);
    ck_assert_uint_eq(m->batch_response_count_mismatch, 0);
    ck_assert_uint_eq(m->batch_missing_response, 0);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(batch_short_reply_counts_mismatch_and_missing)
{
    static const step s[] = {
        { 1, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}},"
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"v\":3}}]\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r[3];
    int i;
    rcp_client_batch_begin(c);
    for (i = 0; i < 3; i++)
        r[i] = rcp_client_request(c, "ping", NULL, 300);
    rcp_client_batch_end(c);
    ck_assert_int_eq(rcp_client_wait(c, r[1], WAIT_MS), RCP_REQ_TIMEOUT);
    ck_assert_int_eq(result_v(r[0]), 1);
    ck_assert_int_eq(result_v(r[2]), 3);
    ck_assert_uint_eq(m->batch_missing_response, 1);
    ck_assert_uint_eq(m->batch_response_count_mismatch, 1);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(notifications_interleaved_are_delivered_not_paired)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
             "\"params\":{\"progressToken\":\"t\",\"progress\":0.5}}\n"
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/log\","
             "\"params\":{\"level\":\"info\",\"message\":\"m\"}}\n"
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x-future\"}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r = rcp_client_request(c, "retrieve", "{}", 0);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_DONE);
    ck_assert_int_eq(result_v(r), 1);
    ck_assert_uint_eq(m->notifications, 3);
    ck_assert_uint_eq(m->progress, 1);
    ck_assert_uint_eq(m->logs, 1);
    ck_assert_uint_eq(m->unknown_notifications, 1);
    ck_assert_uint_eq(m->batch_unknown_id_response, 0);
    rcp_client_close(c, 1000);
}
END_TEST

static int seen_notes;
static void count_note(void *ud, const rcp_json *msg)
{
    (void)ud;
    (void)msg;
    seen_notes++;
}

START_TEST(notification_callback_sees_each_unpaired_frame)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/log\"}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client_opts o;
    rcp_client *c;
    rcp_request *r;
    memset(&o, 0, sizeof o);
    o.on_notify = count_note;
    seen_notes = 0;
    c = rcp_client_fork(play_script, (void *)s, &o, NULL, 0);
    ck_assert(c != NULL);
    r = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_DONE);
    ck_assert_int_eq(seen_notes, 2);     /* the log, the unknown id 77 */
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(null_id_error_is_counted_never_paired)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
             "\"message\":\"Parse error\"}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_DONE);
    ck_assert_int_eq(result_v(r), 1);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->batch_null_id_response, 1);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->batch_unknown_id_response,
                      0);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(unknown_fields_and_meta_are_tolerated)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"x-vendor\":[1],\"id\":1,\"result\":"
             "{\"v\":1,\"_meta\":{\"traceId\":\"t\"},\"future\":{}}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_DONE);
    ck_assert_int_eq(result_v(r), 1);
    ck_assert_uint_eq(rcp_request_flags(r), 0);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(unknown_error_code_is_a_generic_failure_of_its_sign)
{
    static const step s[] = {
        { 2, "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":4711,"
             "\"message\":\"new\"}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32099,"
             "\"message\":\"future\",\"data\":{\"x\":1}}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *a = rcp_client_request(c, "ping", NULL, 0);
    rcp_request *b = rcp_client_request(c, "ping", NULL, 0);
    int code = 0;
    ck_assert_uint_eq(rcp_client_wait_all(c, WAIT_MS), 0);
    ck_assert(rcp_request_error(a, &code));
    ck_assert_int_eq(code, -32099);
    ck_assert(!rcp_code_known(code));
    ck_assert(rcp_request_flags(a) & RCP_RESP_UNKNOWN_CODE);
    ck_assert(rcp_request_result(a) == NULL);
    ck_assert(rcp_request_error(b, &code));
    ck_assert_int_eq(code, 4711);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->unknown_error_code, 2);
    ck_assert(rcp_code_known(RCP_CONFLICT));
    rcp_client_close(c, 1000);
}
END_TEST

/* MARK: - What a broken peer does ---------------------------------------- */

START_TEST(duplicate_response_is_detected)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":9}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_DONE);
    while (m->responses < 2 && rcp_client_pump(c, WAIT_MS) > 0)
        ;
    ck_assert_int_eq(result_v(r), 1);    /* the first one stands */
    ck_assert_uint_eq(m->duplicate_response, 1);
    ck_assert_uint_eq(m->batch_unknown_id_response, 1);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(unknown_id_is_detected_and_the_request_goes_missing)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{\"v\":99}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 300);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_TIMEOUT);
    ck_assert_uint_eq(m->batch_unknown_id_response, 1);
    ck_assert_uint_eq(m->batch_missing_response, 1);
    ck_assert_uint_eq(m->duplicate_response, 0);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(numeric_id_echoed_as_string_pairs_with_nothing)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"v\":1}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 300);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_TIMEOUT);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->batch_unknown_id_response,
                      1);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(late_response_is_paired_and_discarded)
{
    static const step s[] = {
        { 1, NULL, 400 },
        { 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"v\":2}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 100), *r2;
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_TIMEOUT);
    r2 = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r2, WAIT_MS), RCP_REQ_DONE);
    ck_assert_int_eq(result_v(r2), 2);
    ck_assert_int_eq(rcp_request_state_get(r), RCP_REQ_TIMEOUT);
    ck_assert(rcp_request_response(r) == NULL);
    ck_assert_uint_eq(m->late_response, 1);
    ck_assert_uint_eq(m->batch_unknown_id_response, 0);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(malformed_responses_are_flagged)
{
    static const step s[] = {
        { 4, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":"
             "{\"code\":-32600,\"message\":\"m\"}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":2}\n"
             "{\"jsonrpc\":\"1.0\",\"id\":3,\"result\":{}}\n"
             "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":\"x\"}}\n",
          0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r[4];
    int i;
    for (i = 0; i < 4; i++)
        r[i] = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_uint_eq(rcp_client_wait_all(c, WAIT_MS), 0);
    ck_assert(rcp_request_flags(r[0]) & RCP_RESP_BOTH);
    ck_assert(rcp_request_flags(r[1]) & RCP_RESP_NEITHER);
    ck_assert(rcp_request_flags(r[2]) & RCP_RESP_BAD_JSONRPC);
    ck_assert(rcp_request_flags(r[3]) & RCP_RESP_BAD_ERROR);
    ck_assert_uint_eq(m->both_result_error, 1);
    ck_assert_uint_eq(m->neither_result_error, 1);
    ck_assert_uint_eq(m->bad_jsonrpc, 1);
    ck_assert_uint_eq(m->bad_error_object, 1);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(garbage_blank_lines_and_bom_are_counted)
{
    static const step s[] = {
        { 1, "\n  \nnot json\n\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":7}\n"
             "[]\n42\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"v\":1}}\n",
          0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_DONE);
    ck_assert_uint_eq(m->blank_lines, 2);
    ck_assert_uint_eq(m->bom, 1);
    ck_assert_uint_eq(m->unparseable, 2);    /* "not json", the BOM line */
    ck_assert_uint_eq(m->not_a_message, 2);  /* [] and 42 */
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(frame_split_across_writes_is_one_frame)
{
    static const step s[] = {
        { 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"res", 50 },
        { 0, "ult\":{\"v\":1}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_DONE);
    ck_assert_int_eq(result_v(r), 1);
    rcp_client_close(c, 1000);
}
END_TEST

/* A peer that answers the first request with one 4 MiB line written 4 KiB
** at a time, the way a slow server's output arrives. */
static int long_line_peer(void *ud)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\""
                               ":{\"v\":1,\"pad\":\"";
    static char chunk[4096];
    size_t left = (size_t)4 << 20;
    (void)ud;
    memset(chunk, 'x', sizeof chunk);
    if (!read_line())
        return 0;
    write_all(head, sizeof head - 1);
    for (; left; left -= sizeof chunk)
        write_all(chunk, sizeof chunk);
    write_all("\"}}\n", 4);
    while (read_line())
        ;
    return 0;
}

/* §5.1 framing is linear in the client too (it shares the server's
** framer): each byte of a line split across many reads is searched for
** its end once, where a search from the line's start after every read
** would be quadratic (~32x the bytes here). */
START_TEST(long_line_split_across_reads_is_searched_once)
{
    char err[128];
    rcp_client *c = rcp_client_fork(long_line_peer, NULL, NULL, err,
                                    sizeof err);
    const rcp_client_metrics *m;
    rcp_request *r;
    ck_assert_msg(c != NULL, "fork: %s", err);
    r = rcp_client_request(c, "ping", NULL, 0);
    ck_assert_int_eq(rcp_client_wait(c, r, 4 * WAIT_MS), RCP_REQ_DONE);
    ck_assert_int_eq(result_v(r), 1);
    m = rcp_client_metrics_get(c);
    ck_assert_uint_ge(m->bytes_read, (uint64_t)4 << 20);
    ck_assert_msg(m->bytes_searched <= m->bytes_read + 1, "%llu bytes "
                  "searched for %llu read", (unsigned long long)
                  m->bytes_searched, (unsigned long long)m->bytes_read);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(transport_death_abandons_requests_in_flight)
{
    static const step s[] = { { 1, NULL, 0 }, { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 0);
    rcp_client_eof(c);                   /* the peer sees EOF and exits */
    ck_assert_int_eq(rcp_client_wait(c, r, WAIT_MS), RCP_REQ_ABANDONED);
    ck_assert(!rcp_client_alive(c));
    ck_assert_uint_eq(rcp_client_metrics_get(c)->batch_missing_response, 1);
    ck_assert_int_eq(rcp_client_close(c, 1000), 0);
}
END_TEST

static int exit_at_once(void *ud)
{
    (void)ud;
    return 3;
}

START_TEST(writing_to_a_dead_server_is_an_error_not_sigpipe)
{
    char big[65536];
    rcp_client *c = rcp_client_fork(exit_at_once, NULL, NULL, NULL, 0);
    int status = 0, i, failed = 0;
    ck_assert(c != NULL);
    ck_assert(rcp_client_wait_exit(c, WAIT_MS, &status));
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    memset(big, ' ', sizeof big);
    for (i = 0; i < 64 && !failed; i++)
        failed = rcp_client_send_raw(c, big, sizeof big) != 0;
    ck_assert(failed);                   /* and we are still alive */
    ck_assert(rcp_client_request(c, "ping", NULL, 0) == NULL);
    rcp_client_close(c, 100);
}
END_TEST

START_TEST(spawn_reports_a_missing_program)
{
    char *argv[] = { "/nonexistent/rcp-server", NULL };
    char err[256];
    rcp_client *c = rcp_client_spawn(argv, NULL, err, sizeof err);
    ck_assert(c == NULL);
    ck_assert_msg(strstr(err, "/nonexistent/rcp-server") != NULL, "%s", err);
}
END_TEST

/* MARK: - Ids ------------------------------------------------------------ */

START_TEST(ids_are_unique_among_requests_in_flight)
{
    static const step s[] = { { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_request *e = rcp_client_expect(c, "2", 1, 0);
    rcp_request *a = rcp_client_request(c, "ping", NULL, 0);
    rcp_request *b = rcp_client_request(c, "ping", NULL, 0);
    const char *id;
    size_t n;
    ck_assert(e != NULL);
    id = rcp_request_id(a, &n);
    ck_assert(n == 1 && id[0] == '1');
    id = rcp_request_id(b, &n);
    ck_assert(n == 1 && id[0] == '3');
    ck_assert(rcp_client_expect(c, "3", 1, 0) == NULL);  /* in flight */
    ck_assert(rcp_client_expect(c, "\"3\"", 3, 0) != NULL);
    ck_assert(rcp_client_expect(c, "3.0", 3, 0) == NULL); /* same value */
    ck_assert(rcp_client_expect(c, "null", 4, 0) == NULL);
    ck_assert_uint_eq(rcp_client_pending(c), 4);
    rcp_client_close(c, 1000);
}
END_TEST

START_TEST(freed_pending_request_keeps_its_id_and_drops_the_reply)
{
    static const step s[] = {
        { 1, NULL, 100 },
        { 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", 0 },
        { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    const rcp_client_metrics *m = rcp_client_metrics_get(c);
    rcp_request *r = rcp_client_request(c, "ping", NULL, 0);
    rcp_request_free(c, r);
    ck_assert(rcp_client_expect(c, "1", 1, 0) == NULL);  /* reserved */
    while (m->responses < 1 && rcp_client_pump(c, WAIT_MS) > 0)
        ;
    ck_assert_uint_eq(m->responses, 1);
    ck_assert_uint_eq(m->batch_unknown_id_response, 0);
    ck_assert_uint_eq(rcp_client_pending(c), 0);
    rcp_client_close(c, 1000);
}
END_TEST

static int id_eq(const char *a, const char *b)
{
    rcp_arena ar;
    rcp_json_err err;
    const rcp_json *x, *y;
    int eq;
    rcp_arena_init(&ar, 0);
    x = rcp_json_parse(&ar, a, strlen(a), 0, &err);
    y = rcp_json_parse(&ar, b, strlen(b), 0, &err);
    ck_assert(x && y);
    eq = rcp_id_equal(x, y);
    rcp_arena_free(&ar);
    return eq;
}

START_TEST(ids_compare_by_json_type_and_exact_value)
{
    ck_assert(id_eq("100", "1e2"));
    ck_assert(id_eq("100", "100.000"));
    ck_assert(id_eq("0.1", "1e-1"));
    ck_assert(id_eq("-0", "0"));
    ck_assert(id_eq("-12.50", "-1.25E1"));
    ck_assert(id_eq("\"a\\u0000b\"", "\"a\\u0000b\""));
    ck_assert(!id_eq("1", "\"1\""));
    ck_assert(!id_eq("9007199254740993", "9007199254740992"));
    ck_assert(!id_eq("-1", "1"));
    ck_assert(!id_eq("\"a\"", "\"a \""));
    ck_assert(id_eq("null", "null"));
    ck_assert(!id_eq("true", "true"));   /* never an id */
}
END_TEST

START_TEST(metrics_json_uses_the_seed_names)
{
    static const step s[] = { { -1, NULL, 0 } };
    rcp_client *c = peer(s);
    rcp_buf b;
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *j;
    static const char *const names[] = { "batch.size",
        "batch.response_count_mismatch", "batch.unknown_id_response",
        "batch.missing_response", "batch.pair_latency",
        "batch.null_id_response" };
    size_t i;
    rcp_buf_init(&b);
    rcp_arena_init(&a, 0);
    rcp_client_metrics_json(c, &b);
    j = rcp_json_parse(&a, b.data, b.len, 0, &err);
    ck_assert(j != NULL);
    for (i = 0; i < sizeof names / sizeof *names; i++)
        ck_assert_msg(rcp_json_get(j, names[i]) != NULL, "%s", names[i]);
    rcp_arena_free(&a);
    rcp_buf_free(&b);
    rcp_client_close(c, 1000);
}
END_TEST

/* MARK: - Against the real server ---------------------------------------- */

START_TEST(real_server_pipelined_and_batched)
{
    const char *bin = getenv("RCP_BIN");
    char *argv[4];
    rcp_client *c;
    rcp_request *r[6];
    int i;
    if (!bin)
        return;                          /* only under make */
    argv[0] = (char *)bin;
    argv[1] = "serve";
    argv[2] = "--debug";
    argv[3] = NULL;
    c = rcp_client_spawn(argv, NULL, NULL, 0);
    ck_assert(c != NULL);
    r[0] = rcp_client_request(c, "initialize", "{\"protocolVersion\":1}",
                              WAIT_MS);
    ck_assert_int_eq(rcp_client_wait(c, r[0], WAIT_MS), RCP_REQ_DONE);
    r[1] = rcp_client_request(c, "x-rcp/sleep", "{\"ms\":50}", WAIT_MS);
    r[2] = rcp_client_request(c, "ping", "{\"nonce\":2}", WAIT_MS);
    rcp_client_batch_begin(c);
    r[3] = rcp_client_request(c, "ping", "{\"nonce\":3}", WAIT_MS);
    rcp_client_notify(c, "notifications/x", NULL);
    r[4] = rcp_client_request(c, "no/such", NULL, WAIT_MS);
    rcp_client_batch_end(c);
    r[5] = rcp_client_request(c, "ping", "{\"nonce\":5}", WAIT_MS);
    ck_assert_uint_eq(rcp_client_wait_all(c, WAIT_MS), 0);
    for (i = 0; i < 6; i++) {
        int code = 0;
        if (i == 4) {
            ck_assert(rcp_request_error(r[i], &code));
            ck_assert_int_eq(code, RCP_UNKNOWN_METHOD);
        } else {
            ck_assert_msg(rcp_request_result(r[i]) != NULL, "request %d", i);
        }
    }
    ck_assert_uint_eq(rcp_client_metrics_get(c)->
                      batch_response_count_mismatch, 0);
    ck_assert_int_eq(rcp_client_close(c, WAIT_MS), 0);
}
END_TEST

/* MARK: - The suite proves itself: broken servers ------------------------ */

/* A fake server is the real core (rcp_server_handle) over the built-in
** engine with five filter fields, with one change applied to what it
** reads (in_rewrite), to what it writes (out_rewrite, mutate) or to how
** it ends.  B_ modes are broken servers a check must catch; L_ modes make
** a change the spec allows, and the suite must pass them (legal
** controls: no false failure can come back). */
enum { B_NONE, B_ANSWER_NOTIFICATIONS, B_BATCH_ENTRY_FOR_NOTIFICATION,
       B_SWAP_IDS, B_DROP_ID_2, B_STRING_IDS, B_EMPTY_ARRAY, B_DUPLICATE,
       B_RESULT_AND_ERROR, B_OVERCLAIM, B_WEDGE, B_STDOUT_NOISE,
       /* broken: what the false-failure fixes must still catch */
       B_SILENT_NO_JSONRPC, B_ANY_JSONRPC, B_SILENT_PARSE_ERRORS,
       B_SHUTDOWN_NO_ANSWER, B_SERVE_AFTER_SHUTDOWN, B_STREAMING_TRUE,
       B_INFO_NARROWS, B_POSITIONAL_OK, B_BATCH_POISON, B_PROGRESS_WITH_ID,
       B_BIG_FRAME_SILENT, B_CAP_IN_ARRAY, B_STRING_IDS_AFTER_INIT,
       /* legal */
       L_COMPACT, L_LENIENT_PARSER, L_NO_EXIT, L_EXIT_NONZERO, L_CAPS,
       L_CITATIONS_TRUE, L_INFO_X_KEY,
       /* broken: what the result-correctness checks catch (JSON rewrites
       ** of requests and responses, first to last) */
       B_MODE_IGNORED, B_MINSCORE_IGNORED, B_SNAPSHOT_IGNORED,
       B_FILTER_IGNORED, B_NO_FIELDS_FILTER_IGNORED, B_PAGE_REPEATS,
       B_DELETE_NOOP, B_UPSERT_APPENDS, B_NO_USAGE, B_NO_CITATION,
       B_NO_ERROR_FIELD, B_EMBED_NO_IDENTITY, B_NO_MAXK, B_NO_SIMILARITY,
       B_FIELDS_LIST, B_TOKEN_AS_NUMBER, B_PROGRESS_OUT_OF_RANGE,
       B_HITS_UNSORTED, B_NONDETERMINISTIC, B_RERANK_SORTED,
       B_NOT_DETERMINISTIC_SILENT, B_MMR_HIDDEN, B_FUSION_HIDDEN,
       B_RERANK_HIDDEN, B_USAGE_DEPTH, B_RETRY_INVERTED, B_NO_HYPOTHETICAL,
       B_TRANSFORM_PADDED, B_NO_REWRITTEN, B_SESSION_IGNORED,
       B_FEEDBACK_MISCOUNT, B_LOG_LEVEL_IGNORED, B_LOG_LEVEL_TRACE,
       B_LOG_UNASKED,
       /* legal counterparts of the last four (they refuse what they hide) */
       L_NOT_DETERMINISTIC_NOTED, L_NO_MMR, L_NO_CONVEX,
       L_NO_INLINE_RERANK, L_FUNNEL_NORMALISES, L_NO_FIELDS,
       /* broken, outside the rewrites */
       B_CANCEL_DOUBLE, B_DEADLINE_DOUBLE, B_SERVER_NAME_NUMBER,
       /* §7.9, §7.17 (rewrites too): an advertised op refused, an unknown
       ** op answered, a
       ** result without its member, NotFound as InvalidParams; legal: an
       ** unknown op refused as -32602 (outside GraphParams' enum) */
       B_GRAPH_OP_REFUSED, B_GRAPH_ANY_OP, B_NO_FOLLOWUPS,
       B_MEMORY_NOTFOUND_INVALID, B_NO_MEMORY_ID, L_GRAPH_OP_INVALID };

static int is_notification(const rcp_json *m)
{
    return m->type == RCP_JSON_OBJECT && !rcp_json_get(m, "id")
        && rcp_json_get(m, "method");
}

static const char null_result[] =
    "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}";
static const char both[] = "\"error\":{\"code\":-32603,\"message\":\"x\"}";

static const rcp_json *jptr_get(const rcp_json *m, const char *a,
                                const char *b)
{
    const rcp_json *v = m && m->type == RCP_JSON_OBJECT
        ? rcp_json_get(m, a) : NULL;
    return v && v->type == RCP_JSON_OBJECT ? rcp_json_get(v, b) : NULL;
}

/* An object member by name, raw: is the frame an object with it? */
static const rcp_json *member(const rcp_json *m, const char *name)
{
    return m && m->type == RCP_JSON_OBJECT ? rcp_json_get(m, name) : NULL;
}

/* Re-serialise a response object with one change. */
static void write_mutated(rcp_jw *w, const rcp_json *m, int mode,
                          const rcp_json *other_id)
{
    size_t i;
    rcp_jw_obj(w);
    for (i = 0; i < m->n; i++) {
        const rcp_json *k = &m->kids[i];
        rcp_jw_keyn(w, k->key, k->keylen);
        if (k->keylen == 2 && memcmp(k->key, "id", 2) == 0) {
            if ((mode == B_STRING_IDS || mode == B_STRING_IDS_AFTER_INIT)
                && k->type == RCP_JSON_NUMBER)
                rcp_jw_str(w, k->s, k->n);
            else if (mode == B_SWAP_IDS && other_id)
                rcp_jw_value(w, other_id);
            else
                rcp_jw_value(w, k);
        } else {
            rcp_jw_value(w, k);
        }
    }
    if (mode == B_RESULT_AND_ERROR && rcp_json_get(m, "result"))
        rcp_jw_raw(w, both, strlen(both));
    rcp_jw_obj_end(w);
}

static int dropped(const rcp_json *m, int mode)
{
    const rcp_json *id = rcp_json_get(m, "id");
    return mode == B_DROP_ID_2 && id && id->type == RCP_JSON_NUMBER
        && id->n == 1 && id->s[0] == '2';
}

/* The server's output line, mutated. */
static void mutate_line(rcp_buf *o, const rcp_json *in, const char *p,
                        size_t n, int mode)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *r;
    rcp_jw w;
    size_t i, k, extra = 0, start = o->len;
    rcp_arena_init(&a, 0);
    r = rcp_json_parse(&a, p, n, 0, &err);
    rcp_jw_init(&w, o);
    if (r && r->type == RCP_JSON_ARRAY) {
        rcp_jw_arr(&w);
        for (i = 0; i < r->n; i++)
            if (!dropped(&r->kids[i], mode))
                write_mutated(&w, &r->kids[i], mode, r->n > 1 ?
                              rcp_json_get(&r->kids[(i + 1) % r->n], "id")
                              : NULL);
        for (k = 0; mode == B_BATCH_ENTRY_FOR_NOTIFICATION && in
             && in->type == RCP_JSON_ARRAY && k < in->n; k++)
            extra += is_notification(&in->kids[k]);
        for (k = 0; k < extra; k++)
            rcp_jw_raw(&w, null_result, strlen(null_result));
        rcp_jw_arr_end(&w);
    } else if (r && !dropped(r, mode)) {
        write_mutated(&w, r, mode, NULL);
    }
    if (o->len > start)
        rcp_buf_putc(o, '\n');
    rcp_arena_free(&a);
}

/* What the broken server writes for one input frame, given what the real
** core wrote (out). */
static void mutate(int mode, const char *line, size_t len, rcp_buf *out,
                   rcp_buf *dst)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *in;
    size_t pos = 0;
    rcp_arena_init(&a, 0);
    in = rcp_json_parse(&a, line, len, 0, &err);
    /* The initialize answer is left alone by the response mutations: a
    ** server that never answers initialize under its id fails the whole
    ** run at once (suite_fails_fast_...); these test the checks. */
    if (in && mode != B_STRING_IDS
        && rcp_json_streq(member(in, "method"), "initialize"))
        mode = B_NONE;
    if (mode == B_EMPTY_ARRAY && in && in->type == RCP_JSON_ARRAY
        && in->n == 0) {
        rcp_buf_puts(dst, "[]\n");
        out->len = 0;
    } else if (out->len == 0) {
        if (in && mode == B_ANSWER_NOTIFICATIONS && is_notification(in))
            rcp_buf_puts(dst, "{\"jsonrpc\":\"2.0\",\"id\":null,"
                         "\"result\":{}}\n");
        if (in && mode == B_BATCH_ENTRY_FOR_NOTIFICATION
            && in->type == RCP_JSON_ARRAY && in->n > 0)
            rcp_buf_puts(dst, "[{\"jsonrpc\":\"2.0\",\"id\":null,"
                         "\"result\":{}}]\n");
    }
    while (pos < out->len) {
        char *nl = memchr(out->data + pos, '\n', out->len - pos);
        size_t n = (size_t)(nl - (out->data + pos)), start = dst->len;
        if (mode == B_OVERCLAIM) {
            rcp_buf_put(dst, out->data + pos, n);
            rcp_buf_putc(dst, '\n');
        } else {
            mutate_line(dst, in, out->data + pos, n, mode);
        }
        if (mode == B_DUPLICATE && dst->len > start) {
            rcp_buf twice;               /* dst may move as it grows */
            rcp_buf_init(&twice);
            rcp_buf_put(&twice, dst->data + start, dst->len - start);
            rcp_buf_put(dst, twice.data, twice.len);
            rcp_buf_free(&twice);
        }
        pos += n + 1;
    }
    if (mode == B_STDOUT_NOISE)
        rcp_buf_puts(dst, "debug: handled a frame\n");
    rcp_arena_free(&a);
}

static void replace_all(rcp_buf *b, const char *from, const char *to);

/* B_OVERCLAIM: the core with one capability faked -- graph ops ["local"]
** (added, or the core's five narrowed to it while drift is still served)
** -- and L2 declared. */
static void overclaim(rcp_buf *b)
{
    static const char graph_ops[] = "\"graph\":{\"ops\":[\"local\",\"global\","
        "\"drift\",\"communities\",\"neighbors\"]}";
    const char *caps = "\"capabilities\":{";
    char *p;
    rcp_buf t;
    size_t at;
    rcp_buf_putc(b, '\0');               /* for strstr */
    b->len--;
    if (b->oom || !b->len || !(p = strstr(b->data, caps)))
        return;
    rcp_buf_init(&t);
    at = (size_t)(p - b->data) + strlen(caps);
    rcp_buf_put(&t, b->data, at);
    if (!strstr(b->data, graph_ops))     /* the core serves no graph */
        rcp_buf_puts(&t, "\"graph\":{\"ops\":[\"local\"]},");
    rcp_buf_put(&t, b->data + at, b->len - at);
    replace_all(&t, graph_ops, "\"graph\":{\"ops\":[\"local\"]}");
    rcp_buf_putc(&t, '\0');
    t.len--;
    if ((p = strstr(t.data, "\"_meta\":{\"conformance\":\"")) != NULL)
        p[25] = '2';
    else if ((p = strstr(t.data, "\"capabilities\":")) != NULL) {
        /* no declaration at all: add one before capabilities */
        rcp_buf u;
        rcp_buf_init(&u);
        rcp_buf_put(&u, t.data, (size_t)(p - t.data));
        rcp_buf_puts(&u, "\"_meta\":{\"conformance\":\"L2\"},");
        rcp_buf_put(&u, p, t.len - (size_t)(p - t.data));
        rcp_buf_free(&t);
        t = u;
    }
    b->len = 0;
    rcp_buf_put(b, t.data, t.len);
    rcp_buf_putc(b, '\0');              /* kept a C string */
    b->len--;
    rcp_buf_free(&t);
}

/* MARK: - Fake servers: what they read, write, and how they end -------- */

#define FAKE_CAP_BATCH 50          /* L_CAPS: rcp serve --max-batch 50 */
#define FAKE_CAP_LINE  600000      /* ... --max-line 600000 */

static const char *const fake_fields[] = { "year:int", "lang:keyword",
    "tags:keyword", "title:text", "published:date" };

/* The object m with member `name` set to the JSON text `value` (added
** first when absent), serialised into o. */
static void put_with(rcp_buf *o, const rcp_json *m, const char *name,
                     const char *value)
{
    rcp_jw w;
    size_t i;
    int set = 0;
    rcp_jw_init(&w, o);
    rcp_jw_obj(&w);
    if (!rcp_json_get(m, name)) {
        rcp_jw_key(&w, name);
        rcp_jw_raw(&w, value, strlen(value));
        set = 1;
    }
    for (i = 0; i < m->n; i++) {
        const rcp_json *k = &m->kids[i];
        rcp_jw_keyn(&w, k->key, k->keylen);
        if (!set && k->keylen == strlen(name)
            && memcmp(k->key, name, k->keylen) == 0)
            rcp_jw_raw(&w, value, strlen(value));
        else
            rcp_jw_value(&w, k);
    }
    rcp_jw_obj_end(&w);
}

typedef struct fake_state {
    int mode, initialized, shut;
    long counter;
    rcp_buf seen;                /* B_UPSERT_APPENDS: ids added, NUL-ended */
    int drop_sizes;              /* L_FUNNEL_NORMALISES: this request's */
} fake_state;

/* MARK: - Fake servers: JSON rewrites ------------------------------------ */

enum { KEEP, DROP, SWAP };

typedef struct rw {
    fake_state     *f;
    int             input;       /* a request (else a response) */
    int             is_error;    /* an error response */
    const rcp_json *method;      /* the request's */
} rw;

static void put_rw(rw *x, rcp_jw *w, const rcp_json *v);

static int key_is(const char *k, size_t n, const char *name)
{
    return n == strlen(name) && memcmp(k, name, n) == 0;
}

static int digits_only(const rcp_json *v)
{
    size_t i;
    for (i = 0; v->type == RCP_JSON_STRING && i < v->n; i++)
        if (v->s[i] < '0' || v->s[i] > '9')
            return 0;
    return v->type == RCP_JSON_STRING && v->n > 0;
}

static int seen_before(fake_state *f, const rcp_json *id)
{
    size_t i = 0;
    while (i < f->seen.len) {
        size_t n = strlen(f->seen.data + i);
        if (n == id->n && memcmp(f->seen.data + i, id->s, n) == 0)
            return 1;
        i += n + 1;
    }
    rcp_buf_put(&f->seen, id->s, id->n);
    rcp_buf_putc(&f->seen, '\0');
    return 0;
}

/* An array written with the mode's change: reversed, two swapped, sorted
** descending, or without "convex". */
static void put_array(rw *x, rcp_jw *w, const rcp_json *v, int how)
{
    size_t i, j, n = v->n, idx[64];
    for (i = 0; i < n && i < 64; i++)
        idx[i] = how == 'r' ? n - 1 - i : i;
    if (how == 's' && n >= 2) {
        idx[0] = 1;
        idx[1] = 0;
    }
    for (i = 0; how == 'd' && i < n && i < 64; i++)   /* selection sort */
        for (j = i + 1; j < n && j < 64; j++)
            if (rcp_json_num(&v->kids[idx[j]]) > rcp_json_num(&v->kids[idx[i]])) {
                size_t t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
    rcp_jw_arr(w);
    for (i = 0; i < n && i < 64; i++)
        if (!(how == 'c' && rcp_json_streq(&v->kids[idx[i]], "convex")))
            put_rw(x, w, &v->kids[idx[i]]);
    for (i = 0; how == 'p' && i < 3; i++)       /* padded: 3 more */
        put_rw(x, w, &v->kids[0]);
    rcp_jw_arr_end(w);
}

/* What the mode does to the member key: v of an object. */
static int change(rw *x, const char *k, size_t n, const rcp_json *v,
                  rcp_jw *w)
{
    static const char notes[] = "[\"seed not honoured: results may vary\"]";
    int m = x->f->mode;
    size_t i;
    if (x->input) {
        if ((m == B_MODE_IGNORED && key_is(k, n, "mode"))
            || (m == B_MINSCORE_IGNORED && key_is(k, n, "minScore"))
            || (m == B_SNAPSHOT_IGNORED && key_is(k, n, "indexVersion"))
            || ((m == B_FILTER_IGNORED || m == B_NO_FIELDS_FILTER_IGNORED)
                && key_is(k, n, "filter"))
            || (m == B_PAGE_REPEATS && key_is(k, n, "cursor"))
            || (m == B_SESSION_IGNORED && key_is(k, n, "sessionId"))
            || (m == B_LOG_LEVEL_IGNORED && key_is(k, n, "logLevel"))
            || (x->f->drop_sizes && (key_is(k, n, "candidateK")
                                     || key_is(k, n, "topN"))))
            return DROP;
        if (m == B_GRAPH_ANY_OP && key_is(k, n, "op")
            && rcp_json_streq(x->method, "graph")
            && rcp_json_streq(v, "x-conform-none")) {
            rcp_jw_keyn(w, k, n);
            rcp_jw_cstr(w, "communities");
            return SWAP;
        }
        if (m == B_DELETE_NOOP && key_is(k, n, "ids")
            && rcp_json_streq(x->method, "index/delete")) {
            rcp_jw_keyn(w, k, n);
            rcp_jw_raw(w, "[]", 2);
            return SWAP;
        }
        if (m == B_UPSERT_APPENDS && key_is(k, n, "id")
            && rcp_json_streq(x->method, "index/add")
            && v->type == RCP_JSON_STRING && v->n > 8
            && memcmp(v->s, "conform-", 8) == 0 && seen_before(x->f, v)) {
            rcp_buf t;
            rcp_buf_init(&t);
            rcp_buf_put(&t, v->s, v->n);
            rcp_buf_puts(&t, "~2");
            rcp_jw_keyn(w, k, n);
            rcp_jw_str(w, t.data, t.len);
            rcp_buf_free(&t);
            return SWAP;
        }
        return KEEP;
    }
    if ((m == B_NO_USAGE && key_is(k, n, "usage"))
        || (m == B_NO_CITATION && (key_is(k, n, "citation")
                                   || key_is(k, n, "trust")))
        || (m == B_NO_ERROR_FIELD && x->is_error && key_is(k, n, "field"))
        || (m == B_EMBED_NO_IDENTITY && key_is(k, n, "identity"))
        || (m == B_NO_MAXK && key_is(k, n, "maxK"))
        || (m == B_NO_SIMILARITY && key_is(k, n, "similarity"))
        || (m == B_NO_FOLLOWUPS && key_is(k, n, "followups"))
        || (m == B_NO_MEMORY_ID && key_is(k, n, "memoryId"))
        || (m == B_NO_HYPOTHETICAL && key_is(k, n, "hypothetical"))
        || (m == B_NO_REWRITTEN && key_is(k, n, "rewrittenQuery")))
        return DROP;
    rcp_jw_keyn(w, k, n);
    if (m == B_MEMORY_NOTFOUND_INVALID && x->is_error && key_is(k, n, "code")
        && rcp_json_num(v) == RCP_NOT_FOUND) {
        rcp_jw_int(w, RCP_INVALID_PARAMS);
        return SWAP;
    }
    if (m == B_FIELDS_LIST && key_is(k, n, "fields")
        && v->type == RCP_JSON_OBJECT) {
        rcp_jw_arr(w);
        for (i = 0; i < v->n; i++)
            rcp_jw_str(w, v->kids[i].key, v->kids[i].keylen);
        rcp_jw_arr_end(w);
    } else if (m == B_TOKEN_AS_NUMBER && key_is(k, n, "progressToken")
               && digits_only(v)) {
        for (i = 0; i + 1 < v->n && v->s[i] == '0'; i++)
            ;
        rcp_jw_raw(w, v->s + i, v->n - i);
    } else if (m == B_PROGRESS_OUT_OF_RANGE && key_is(k, n, "progress")) {
        rcp_jw_raw(w, "1.5", 3);
    } else if (m == B_USAGE_DEPTH && key_is(k, n, "candidates")
               && v->type == RCP_JSON_NUMBER) {
        rcp_jw_raw(w, "1001", 4);       /* the depth asked, past maxK */
    } else if (key_is(k, n, "hits") && v->type == RCP_JSON_ARRAY
               && v->n >= 2 && (m == B_HITS_UNSORTED
                                || (m == B_NONDETERMINISTIC
                                    && ++x->f->counter % 2 == 0))) {
        put_array(x, w, v, m == B_HITS_UNSORTED ? 'r' : 's');
    } else if (m == B_TRANSFORM_PADDED && key_is(k, n, "queries")
               && v->type == RCP_JSON_ARRAY && v->n) {
        put_array(x, w, v, 'p');
    } else if (m == B_RERANK_SORTED && key_is(k, n, "scores")
               && v->type == RCP_JSON_ARRAY) {
        put_array(x, w, v, 'd');
    } else if ((m == B_FUSION_HIDDEN || m == L_NO_CONVEX)
               && key_is(k, n, "fusion") && v->type == RCP_JSON_ARRAY) {
        put_array(x, w, v, 'c');
    } else if (v->type == RCP_JSON_TRUE
               && (((m == B_NOT_DETERMINISTIC_SILENT
                     || m == L_NOT_DETERMINISTIC_NOTED)
                    && key_is(k, n, "deterministic"))
                   || ((m == B_MMR_HIDDEN || m == L_NO_MMR)
                       && key_is(k, n, "mmr"))
                   || ((m == B_RERANK_HIDDEN || m == L_NO_INLINE_RERANK)
                       && key_is(k, n, "rerankBuiltin")))) {
        rcp_jw_raw(w, "false", 5);
    } else if (m == L_NOT_DETERMINISTIC_NOTED && key_is(k, n, "usage")
               && v->type == RCP_JSON_OBJECT && !rcp_json_get(v, "notes")) {
        rcp_jw_obj(w);
        for (i = 0; i < v->n; i++) {
            rcp_jw_keyn(w, v->kids[i].key, v->kids[i].keylen);
            put_rw(x, w, &v->kids[i]);
        }
        rcp_jw_key(w, "notes");
        rcp_jw_raw(w, notes, strlen(notes));
        rcp_jw_obj_end(w);
    } else {
        put_rw(x, w, v);
    }
    return SWAP;
}

static void put_rw(rw *x, rcp_jw *w, const rcp_json *v)
{
    size_t i;
    if (v->type == RCP_JSON_ARRAY) {
        rcp_jw_arr(w);
        for (i = 0; i < v->n; i++)
            put_rw(x, w, &v->kids[i]);
        rcp_jw_arr_end(w);
    } else if (v->type == RCP_JSON_OBJECT) {
        rcp_jw_obj(w);
        for (i = 0; i < v->n; i++)
            if (change(x, v->kids[i].key, v->kids[i].keylen, &v->kids[i],
                       w) == KEEP) {
                rcp_jw_keyn(w, v->kids[i].key, v->kids[i].keylen);
                put_rw(x, w, &v->kids[i]);
            }
        rcp_jw_obj_end(w);
    } else {
        rcp_jw_value(w, v);
    }
}

/* Rewrite each line of b (requests when input) with the mode's change. */
static void rewrite_lines(fake_state *f, int input, rcp_buf *b,
                          const rcp_json *method)
{
    rcp_buf t;
    size_t pos = 0;
    if (((f->mode < B_MODE_IGNORED || f->mode > L_NO_FIELDS)
         && f->mode < B_GRAPH_OP_REFUSED) || !b->len)
        return;
    rcp_buf_init(&t);
    while (pos < b->len) {
        const char *nl = memchr(b->data + pos, '\n', b->len - pos);
        size_t n = nl ? (size_t)(nl - (b->data + pos)) : b->len - pos;
        rcp_arena a;
        rcp_json_err err;
        const rcp_json *m;
        rcp_arena_init(&a, 0);
        m = rcp_json_parse(&a, b->data + pos, n, 0, &err);
        if (m) {
            rw x;
            rcp_jw w;
            x.f = f;
            x.input = input;
            x.is_error = member(m, "error") != NULL;
            x.method = input ? member(m, "method") : method;
            rcp_jw_init(&w, &t);
            put_rw(&x, &w, m);
        } else {
            rcp_buf_put(&t, b->data + pos, n);
        }
        if (!input || nl)
            rcp_buf_putc(&t, '\n');
        rcp_arena_free(&a);
        pos += n + 1;
    }
    b->len = 0;
    rcp_buf_put(b, t.data, t.len);
    rcp_buf_putc(b, '\0');
    b->len--;
    rcp_buf_free(&t);
}

/* L_FUNNEL_NORMALISES: does the request break candidateK >= topN >= k?
** Such a server serves it with its own sizes instead of refusing it. */
static int breaks_funnel(const rcp_json *m)
{
    const rcp_json *p = member(m, "params");
    const rcp_json *ck = member(p, "candidateK");
    const rcp_json *top = member(member(p, "rerank"), "topN");
    double k = member(p, "k") ? rcp_json_num(member(p, "k")) : 10;
    return (ck && rcp_json_num(ck) < k) || (top && rcp_json_num(top) < k)
        || (ck && top && rcp_json_num(ck) < rcp_json_num(top));
}

/* L_NO_MMR, L_NO_CONVEX, L_NO_INLINE_RERANK: the option a server does
** not offer is refused (-32005), as §7.7 says. */
static int refuses(int mode, const rcp_json *m)
{
    const rcp_json *p = member(m, "params");
    if (p && rcp_json_streq(member(m, "method"), "graph"))
        return (mode == B_GRAPH_OP_REFUSED
                && rcp_json_streq(member(p, "op"), "drift"))
               ? RCP_OPTION_UNSUPPORTED
               : mode == L_GRAPH_OP_INVALID
                 && rcp_json_streq(member(p, "op"), "x-conform-none")
               ? RCP_INVALID_PARAMS : 0;
    if (!rcp_json_streq(member(m, "method"), "retrieve") || !p)
        return 0;
    return (mode == L_NO_MMR && member(p, "mmr"))
        || (mode == L_NO_CONVEX && member(p, "fusion")
            && rcp_json_streq(member(member(p, "fusion"), "method"),
                              "convex"))
        || (mode == L_NO_INLINE_RERANK && member(p, "rerank")
            && member(p, "rerank")->type == RCP_JSON_OBJECT)
        ? RCP_OPTION_UNSUPPORTED : 0;
}

/* An error response for the request m (or for id), appended to dst. */
static void error_for(const rcp_json *id, int code, rcp_buf *dst)
{
    rcp_jw w;
    char tail[96];
    rcp_buf_puts(dst, "{\"jsonrpc\":\"2.0\",\"id\":");
    rcp_jw_init(&w, dst);
    rcp_jw_value(&w, id);
    sprintf(tail, ",\"error\":{\"code\":%d,\"message\":\"fake\"}}\n", code);
    rcp_buf_puts(dst, tail);
}

/* L_LENIENT_PARSER: the extensions a lenient parser reads as values,
** turned into the JSON it would have read (05, NaN, raw control bytes,
** single quotes, unknown escapes). */
static void lenient(rcp_buf *o, const char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == ':' && i + 2 < n && p[i + 1] == '0' && p[i + 2] >= '0'
            && p[i + 2] <= '9') {
            rcp_buf_putc(o, ':');
            i++;                         /* drop the leading zero */
        } else if (ch == ':' && i + 3 < n && memcmp(p + i + 1, "NaN", 3)
                   == 0) {
            rcp_buf_puts(o, ":0");
            i += 3;
        } else if (ch < 0x20) {
            char esc[8];
            sprintf(esc, "\\u%04x", ch);
            rcp_buf_puts(o, esc);
        } else if (ch == '\'') {
            rcp_buf_putc(o, '"');
        } else if (ch == '\\' && i + 1 < n && p[i + 1] == 'q') {
            rcp_buf_putc(o, 'q');
            i++;
        } else {
            rcp_buf_putc(o, (char)ch);
        }
    }
}

/* What the core reads for one input line: 0 and the line in o, or -1 to
** drop the line unread. */
static int in_rewrite(int mode, const char *p, size_t n, rcp_buf *o)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *m;
    const rcp_json *rpc;
    int rc = 0;
    if (mode == L_LENIENT_PARSER) {
        lenient(o, p, n);
        return 0;
    }
    if (mode == B_BIG_FRAME_SILENT && n > FAKE_CAP_LINE)
        return -1;
    rcp_arena_init(&a, 0);
    m = rcp_json_parse(&a, p, n, 0, &err);
    rpc = member(m, "jsonrpc");
    if (mode == B_SILENT_NO_JSONRPC && member(m, "method") && !rpc)
        rc = -1;
    else if (mode == L_COMPACT && member(m, "method") && !rpc)
        put_with(o, m, "jsonrpc", "\"2.0\"");
    else if (mode == B_ANY_JSONRPC && rpc && !rcp_json_streq(rpc, "2.0"))
        put_with(o, m, "jsonrpc", "\"2.0\"");
    else if (mode == B_POSITIONAL_OK && member(m, "params")
             && member(m, "params")->type == RCP_JSON_ARRAY)
        put_with(o, m, "params", "{}");
    else
        rcp_buf_put(o, p, n);
    rcp_arena_free(&a);
    return rc;
}

/* Replace every `from` by `to` in b. */
static void replace_all(rcp_buf *b, const char *from, const char *to)
{
    rcp_buf t;
    size_t i, k = strlen(from);
    rcp_buf_init(&t);
    for (i = 0; i < b->len; i++)
        if (i + k <= b->len && memcmp(b->data + i, from, k) == 0) {
            rcp_buf_puts(&t, to);
            i += k - 1;
        } else {
            rcp_buf_putc(&t, b->data[i]);
        }
    b->len = 0;
    rcp_buf_put(b, t.data, t.len);
    rcp_buf_putc(b, '\0');              /* kept a C string */
    b->len--;
    rcp_buf_free(&t);
}

/* A batch reply with every member after the first error dropped. */
static void poison(rcp_buf *out)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *r;
    rcp_buf t;
    rcp_jw w;
    size_t i;
    int seen = 0;
    rcp_arena_init(&a, 0);
    r = rcp_json_parse(&a, out->data, out->len ? out->len - 1 : 0, 0, &err);
    if (r && r->type == RCP_JSON_ARRAY) {
        rcp_buf_init(&t);
        rcp_jw_init(&w, &t);
        rcp_jw_arr(&w);
        for (i = 0; i < r->n && !seen; i++) {
            rcp_jw_value(&w, &r->kids[i]);
            seen = rcp_json_get(&r->kids[i], "error") != NULL;
        }
        rcp_jw_arr_end(&w);
        rcp_buf_putc(&t, '\n');
        out->len = 0;
        rcp_buf_put(out, t.data, t.len);
        rcp_buf_putc(out, '\0');
        out->len--;
        rcp_buf_free(&t);
    }
    rcp_arena_free(&a);
}

/* Drop the single-object -32700 answers (id null) from out. */
static void drop_parse_errors(rcp_buf *out)
{
    if (out->len && strstr(out->data, "\"id\":null")
        && strstr(out->data, "-32700") && out->data[0] == '{')
        out->len = 0;
}

/* B_PROGRESS_WITH_ID: progress for a request that asked for none, under
** the request's own id (a token that appears in what was sent, as text). */
static void progress_with_id(const char *p, size_t n, rcp_buf *dst)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *m;
    rcp_arena_init(&a, 0);
    m = rcp_json_parse(&a, p, n, 0, &err);
    if (member(m, "method") && member(m, "id") && !strstr(p, "progressToken")) {
        rcp_jw w;
        rcp_buf_puts(dst, "{\"jsonrpc\":\"2.0\",\"method\":"
                     "\"notifications/progress\",\"params\":"
                     "{\"progressToken\":");
        rcp_jw_init(&w, dst);
        rcp_jw_value(&w, member(m, "id"));
        rcp_buf_puts(dst, ",\"progress\":0.5}}\n");
    }
    rcp_arena_free(&a);
}


/* What the core wrote for one input line, changed by the output modes;
** the mutations of the original broken servers come last (mutate). */
static void out_rewrite(fake_state *f, const char *line, size_t len,
                        rcp_buf *out, rcp_buf *dst)
{
    int is_info = strstr(line, "\"info\"") != NULL;
    rcp_buf_putc(out, '\0');            /* for strstr */
    out->len--;
    if (f->mode == L_CITATIONS_TRUE)
        replace_all(out, "\"citations\":{}", "\"citations\":true");
    if (f->mode == B_STREAMING_TRUE)
        replace_all(out, "\"streaming\":{}", "\"streaming\":true");
    if (f->mode == B_LOG_LEVEL_TRACE)
        replace_all(out, "\"level\":\"debug\"", "\"level\":\"trace\"");
    if (f->mode == B_FEEDBACK_MISCOUNT)
        replace_all(out, "\"accepted\":3", "\"accepted\":2");
    if (f->mode == B_RETRY_INVERTED)
        replace_all(out, "\"retryable\":true", "\"retryable\":false");
    if (f->mode == B_SERVER_NAME_NUMBER)
        replace_all(out, "\"server\":{\"name\":\"rcp\"",
                    "\"server\":{\"name\":7");
    if (f->mode == L_INFO_X_KEY) {
        char key[64];
        sprintf(key, "\"retrieve\":{\"x-conform-load\":%ld,", ++f->counter);
        replace_all(out, "\"retrieve\":{", key);
    }
    if (f->mode == B_INFO_NARROWS && is_info && f->initialized)
        replace_all(out, "\"maxK\":1000", "\"maxK\":999");
    if (f->mode == B_BATCH_POISON)
        poison(out);
    if (f->mode == B_SILENT_PARSE_ERRORS)
        drop_parse_errors(out);
    if (f->mode == B_CAP_IN_ARRAY && out->len && out->data[0] == '{'
        && strstr(out->data, "-32602") && strstr(out->data, "\"id\":null")
        && len && line[0] == '[') {
        rcp_buf_putc(dst, '[');
        rcp_buf_put(dst, out->data, out->len - 1);
        rcp_buf_puts(dst, "]\n");
        out->len = 0;
    }
    if (f->mode == B_PROGRESS_WITH_ID)
        progress_with_id(line, len, dst);
    if (f->mode == B_LOG_UNASKED && out->len)   /* to everyone, asked or not */
        rcp_buf_puts(dst, "{\"jsonrpc\":\"2.0\",\"method\":"
                     "\"notifications/log\",\"params\":{\"level\":\"info\","
                     "\"message\":\"answered\"}}\n");
    /* an initialize result (log's levels hold the word "error") */
    if (out->len && strstr(out->data, "\"result\":{\"protocolVersion\""))
        f->initialized = 1;
    mutate(f->mode, line, len, out, dst);
}

/* B_SERVE_AFTER_SHUTDOWN: a request after shutdown is "processed". */
static void answer_anyway(const char *p, size_t n, rcp_buf *dst)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *m;
    rcp_jw w;
    rcp_arena_init(&a, 0);
    m = rcp_json_parse(&a, p, n, 0, &err);
    if (member(m, "id")) {
        rcp_buf_puts(dst, "{\"jsonrpc\":\"2.0\",\"id\":");
        rcp_jw_init(&w, dst);
        rcp_jw_value(&w, member(m, "id"));
        rcp_buf_puts(dst, ",\"result\":{}}\n");
    }
    rcp_arena_free(&a);
}

/* The core a fake server runs: the built-in engine, the fields. */
static rcp_server *fake_core(int mode, rcp_model **model,
                             rcp_field *fields)
{
    rcp_server_opts o;
    rcp_model_opts mo;
    size_t i;
    memset(&o, 0, sizeof o);
    o.debug = 1;
    for (i = 0; i < sizeof fake_fields / sizeof *fake_fields; i++)
        rcp_field_parse(fake_fields[i], &fields[i]);
    rcp_model_opts_init(&mo);
    mo.fields = fields;
    mo.nfields = i;
    *model = rcp_model_new(&mo, NULL, 0);
    o.model = *model;
    o.fields = fields;
    o.nfields = mode == L_NO_FIELDS || mode == B_NO_FIELDS_FILTER_IGNORED
        ? 0 : i;
    if (mode == B_CAP_IN_ARRAY)
        o.max_batch = FAKE_CAP_BATCH;
    if (mode == L_CAPS) {
        o.max_batch = FAKE_CAP_BATCH;
        o.max_line = FAKE_CAP_LINE;
    }
    return *model ? rcp_server_new(&o) : NULL;
}

/* After the core answered shutdown: 1 to stop (and the status), 0 to go
** on reading. */
static int after_shutdown(fake_state *f, int *status)
{
    f->shut = 1;
    *status = f->mode == L_EXIT_NONZERO ? 1 : 0;
    return f->mode != L_NO_EXIT && f->mode != B_SERVE_AFTER_SHUTDOWN;
}

/* One input line: 1 when the server must stop. */
static int fake_line(fake_state *f, rcp_server *s, const char *p, size_t n,
                     rcp_buf *in2, rcp_buf *out, rcp_buf *dst, int *status)
{
    rcp_arena a;
    rcp_json_err err;
    const rcp_json *m;
    int done, code;
    out->len = dst->len = in2->len = 0;
    if (f->mode == B_WEDGE && ++f->counter > 3)
        for (;;)
            pause();
    if (f->shut) {                       /* L_NO_EXIT: read, ignore */
        if (f->mode == B_SERVE_AFTER_SHUTDOWN)
            answer_anyway(p, n, dst);
        write_all(dst->data, dst->len);
        return 0;
    }
    if (f->mode == B_SHUTDOWN_NO_ANSWER && strstr(p, "\"shutdown\"")
        && !strstr(p, "\"result\""))
        return 1;
    if (in_rewrite(f->mode, p, n, in2) != 0)
        return 0;
    rcp_arena_init(&a, 0);
    m = rcp_json_parse(&a, p, n, 0, &err);
    if ((code = refuses(f->mode, m)) != 0) {
        error_for(member(m, "id"), code, dst);
        write_all(dst->data, dst->len);
        rcp_arena_free(&a);
        return 0;
    }
    f->drop_sizes = f->mode == L_FUNNEL_NORMALISES && breaks_funnel(m);
    rewrite_lines(f, 1, in2, NULL);
    done = rcp_server_handle(s, in2->data ? in2->data : "", in2->len, out);
    if (f->mode == B_OVERCLAIM)
        overclaim(out);
    rewrite_lines(f, 0, out, member(m, "method"));
    out_rewrite(f, p, n, out, dst);
    if (f->mode == B_CANCEL_DOUBLE
        && rcp_json_streq(member(m, "method"), "notifications/cancel")
        && member(member(m, "params"), "id"))
        error_for(member(member(m, "params"), "id"), RCP_CANCELLED, dst);
    if (f->mode == B_DEADLINE_DOUBLE && member(m, "id")
        && member(member(member(m, "params"), "_meta"), "deadlineMs"))
        error_for(member(m, "id"), RCP_TIMEOUT, dst);
    write_all(dst->data, dst->len);
    rcp_arena_free(&a);
    return done && after_shutdown(f, status);
}

static int fake_server(void *ud)
{
    fake_state f;
    rcp_model *model = NULL;
    rcp_field fields[8];
    rcp_server *s;
    rcp_buf in, in2, out, dst;
    char chunk[65536];
    ssize_t n;
    int status = 0, stop = 0;
    memset(&f, 0, sizeof f);
    f.mode = *(const int *)ud;
    s = fake_core(f.mode, &model, fields);
    if (s && f.mode == L_CAPS) {             /* the real transport */
        status = rcp_server_run(s, 0, 1) == 0 ? 0 : 1;
        rcp_server_free(s);
        rcp_model_free(model);
        return status;
    }
    rcp_buf_init(&in);
    rcp_buf_init(&in2);
    rcp_buf_init(&out);
    rcp_buf_init(&dst);
    while (s && !stop && (n = read(0, chunk, sizeof chunk)) > 0) {
        size_t pos = 0;
        rcp_buf_put(&in, chunk, (size_t)n);
        while (!stop) {
            char *nl = memchr(in.data + pos, '\n', in.len - pos);
            size_t len;
            if (!nl)
                break;
            len = (size_t)(nl - (in.data + pos));
            *nl = '\0';                 /* the line is a C string too */
            stop = fake_line(&f, s, in.data + pos, len, &in2, &out, &dst,
                             &status);
            pos += len + 1;
        }
        memmove(in.data, in.data + pos, in.len - pos);
        in.len -= pos;
    }
    rcp_buf_free(&in);
    rcp_buf_free(&in2);
    rcp_buf_free(&out);
    rcp_buf_free(&dst);
    rcp_buf_free(&f.seen);
    rcp_server_free(s);
    rcp_model_free(model);
    return f.mode == L_EXIT_NONZERO ? 1 : status;
}

static rcp_client *spawn_fake(void *ud, const rcp_client_opts *o,
                              char *err, size_t errlen)
{
    return rcp_client_fork(fake_server, ud, o, err, errlen);
}

/* Run the suite (--json) on a broken server; the report, parsed. */
static const rcp_json *suite(rcp_arena *a, rcp_buf *out, int *mode,
                             const char *only, int *rc)
{
    char *argv[8];
    rcp_conform_io io;
    rcp_json_err err;
    const rcp_json *j;
    int argc = 0;
    argv[argc++] = "conform";
    argv[argc++] = "--json";
    argv[argc++] = "--timeout";          /* the peer is in-process: fast */
    argv[argc++] = "500";
    if (only) {
        argv[argc++] = "--only";
        argv[argc++] = (char *)only;
    }
    argv[argc] = NULL;
    io.spawn = spawn_fake;
    io.ud = mode;
    io.out = out;
    *rc = rcp_conform_run(argc, argv, &io);
    j = rcp_json_parse(a, out->data, out->len, 0, &err);
    ck_assert_msg(j != NULL, "report is not JSON: %.*s", (int)out->len,
                  out->data);
    return j;
}

static const char *status_of(const rcp_json *report, const char *id)
{
    const rcp_json *cs = rcp_json_get(report, "checks");
    static char st[16];
    size_t i;
    for (i = 0; cs && i < cs->n; i++)
        if (rcp_json_streq(rcp_json_get(&cs->kids[i], "id"), id)) {
            const rcp_json *s = rcp_json_get(&cs->kids[i], "status");
            snprintf(st, sizeof st, "%.*s", (int)s->n, s->s);
            return st;
        }
    return "absent";
}

/* The check has status `want` ("fail"; "warn" for a SHOULD) on the
** broken server and passes on the control (one that differs from the
** broken one only in what the check judges). */
static void caught_on(int mode, int control, const char *only,
                      const char *check_id, const char *want)
{
    rcp_arena a;
    rcp_buf out;
    const rcp_json *j;
    int rc;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    j = suite(&a, &out, &mode, only, &rc);
    ck_assert_msg(strcmp(status_of(j, check_id), want) == 0,
                  "%s was not caught: %s (%.*s)", check_id,
                  status_of(j, check_id), (int)(out.len > 1500 ? 1500
                                                : out.len), out.data);
    if (strcmp(want, "fail") == 0)
        ck_assert_int_eq(rc, 1);
    out.len = 0;
    rcp_arena_reset(&a);
    j = suite(&a, &out, &control, only, &rc);
    ck_assert_msg(strcmp(status_of(j, check_id), "pass") == 0,
                  "control: %s is %s (%.*s)", check_id, status_of(j, check_id),
                  (int)(out.len > 3000 ? 3000 : out.len), out.data);
    rcp_buf_free(&out);
    rcp_arena_free(&a);
}

static void caught(int mode, const char *only, const char *check_id)
{
    caught_on(mode, B_NONE, only, check_id, "fail");
}

/* A SHOULD check: the broken server gets a WARN. */
static void warned(int mode, const char *only, const char *check_id)
{
    caught_on(mode, B_NONE, only, check_id, "warn");
}

/* The ids of the checks that failed in a report, for a message. */
static const char *failed_ids(const rcp_json *report)
{
    static char ids[512];
    const rcp_json *f = rcp_json_get(report, "failed");
    size_t i, n = 0;
    ids[0] = '\0';
    for (i = 0; f && i < f->n && n + f->kids[i].n + 2 < sizeof ids; i++) {
        memcpy(ids + n, f->kids[i].s, f->kids[i].n);
        n += f->kids[i].n;
        ids[n++] = ' ';
        ids[n] = '\0';
    }
    return ids;
}

/* A legal control: on a server that makes a change the spec allows, the
** check has status want ("pass", or "warn" where the change is a SHOULD
** not met) and nothing the run judged fails. */
static void legal(int mode, const char *only, const char *check_id,
                  const char *want)
{
    rcp_arena a;
    rcp_buf out;
    const rcp_json *j;
    int rc;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    j = suite(&a, &out, &mode, only, &rc);
    ck_assert_msg(strcmp(status_of(j, check_id), want) == 0,
                  "legal control: %s is %s, not %s", check_id,
                  status_of(j, check_id), want);
    ck_assert_msg(rc == 0, "legal control (%s): failed: %s", check_id,
                  failed_ids(j));
    rcp_buf_free(&out);
    rcp_arena_free(&a);
}

/* MARK: - Legal controls: no false failures ------------------------------ */

START_TEST(legal_compact_envelope_is_served)
{
    legal(L_COMPACT, "4", "s04-jsonrpc-missing", "pass");
}
END_TEST

START_TEST(legal_parser_extensions_are_a_warning)
{
    legal(L_LENIENT_PARSER, "12", "s12-parse-extensions", "warn");
}
END_TEST

START_TEST(legal_no_exit_after_shutdown_is_a_warning)
{
    legal(L_NO_EXIT, "s07-shutdown-result", "s07-shutdown-result", "warn");
    legal(L_NO_EXIT, "s07-after-shutdown-nothing",
          "s07-after-shutdown-nothing", "pass");
}
END_TEST

START_TEST(legal_nonzero_exit_after_shutdown_passes)
{
    legal(L_EXIT_NONZERO, "s07-shutdown-result", "s07-shutdown-result",
          "pass");
    legal(L_EXIT_NONZERO, "s07-after-shutdown-nothing",
          "s07-after-shutdown-nothing", "pass");
    legal(L_EXIT_NONZERO, "s05-eof-exits", "s05-eof-exits", "pass");
}
END_TEST

START_TEST(legal_smaller_batch_and_frame_caps_pass)
{
    legal(L_CAPS, "11", "s11-large-batch", "pass");
    legal(L_CAPS, "5.1", "s05-large-frame", "pass");
}
END_TEST

START_TEST(legal_citations_true_is_a_capability_value)
{
    legal(L_CITATIONS_TRUE, "6", "s06-capability-values-objects", "pass");
    legal(L_CITATIONS_TRUE, "s14-l1-profile", "s14-l1-profile", "pass");
}
END_TEST

START_TEST(legal_x_key_may_change_between_initialize_and_info)
{
    legal(L_INFO_X_KEY, "s13-capabilities-stable", "s13-capabilities-stable",
          "pass");
    legal(L_INFO_X_KEY, "s07-info-after-initialize",
          "s07-info-after-initialize", "pass");
}
END_TEST

START_TEST(legal_a_server_may_normalise_the_funnel)
{
    legal(L_FUNNEL_NORMALISES, "s07-retrieve-funnel", "s07-retrieve-funnel",
          "pass");
    legal(L_FUNNEL_NORMALISES, "s07-retrieve-funnel-topn",
          "s07-retrieve-funnel-topn", "pass");
}
END_TEST

START_TEST(one_defect_is_reported_once)
{
    /* positional params answered: §4.1's check fails, §11's does not */
    caught(B_POSITIONAL_OK, "s04-params-not-object", "s04-params-not-object");
    legal(B_POSITIONAL_OK, "s11-errors-isolated", "s11-errors-isolated",
          "pass");
}
END_TEST

/* MARK: - ... and the checks they loosened still catch a broken server */

START_TEST(suite_catches_silence_on_a_frame_without_jsonrpc)
{
    caught(B_SILENT_NO_JSONRPC, "s04-jsonrpc-missing", "s04-jsonrpc-missing");
}
END_TEST

START_TEST(suite_catches_any_jsonrpc_value_accepted)
{
    caught(B_ANY_JSONRPC, "s04-jsonrpc-wrong-version",
           "s04-jsonrpc-wrong-version");
    caught(B_ANY_JSONRPC, "s04-jsonrpc-number", "s04-jsonrpc-number");
}
END_TEST

START_TEST(suite_catches_unanswered_parse_errors)
{
    caught(B_SILENT_PARSE_ERRORS, "s12-parse-extensions",
           "s12-parse-extensions");
    caught(B_SILENT_PARSE_ERRORS, "s12-parse-errors", "s12-parse-errors");
}
END_TEST

START_TEST(suite_catches_an_unanswered_shutdown)
{
    caught(B_SHUTDOWN_NO_ANSWER, "s07-shutdown-result",
           "s07-shutdown-result");
}
END_TEST

START_TEST(suite_catches_a_request_served_after_shutdown)
{
    caught(B_SERVE_AFTER_SHUTDOWN, "s07-after-shutdown-nothing",
           "s07-after-shutdown-nothing");
}
END_TEST

START_TEST(suite_catches_a_capped_batch_refused_inside_an_array)
{
    caught(B_DROP_ID_2, "s11-large-batch", "s11-large-batch");
    caught(B_CAP_IN_ARRAY, "s11-large-batch", "s11-large-batch");
}
END_TEST

START_TEST(suite_catches_a_big_frame_dropped_silently)
{
    caught(B_BIG_FRAME_SILENT, "s05-large-frame", "s05-large-frame");
}
END_TEST

START_TEST(suite_catches_a_capability_value_the_schema_forbids)
{
    caught(B_STREAMING_TRUE, "s06-capability-values-objects",
           "s06-capability-values-objects");
}
END_TEST

START_TEST(suite_catches_info_narrowing_a_capability)
{
    caught(B_INFO_NARROWS, "s13-capabilities-stable",
           "s13-capabilities-stable");
}
END_TEST

START_TEST(suite_catches_a_batch_member_failing_the_rest)
{
    caught(B_BATCH_POISON, "s11-errors-isolated", "s11-errors-isolated");
}
END_TEST

START_TEST(suite_catches_progress_under_the_request_id)
{
    caught(B_PROGRESS_WITH_ID, "s09-no-progress-without-token",
           "s09-no-progress-without-token");
}
END_TEST

START_TEST(suite_catches_an_answered_notification)
{
    caught(B_ANSWER_NOTIFICATIONS, "s04-notification-unanswered",
           "s04-notification-unanswered");
}
END_TEST

START_TEST(suite_catches_a_batch_entry_for_a_notification)
{
    caught(B_BATCH_ENTRY_FOR_NOTIFICATION, "s11-notifications-no-entry",
           "s11-notifications-no-entry");
    caught(B_BATCH_ENTRY_FOR_NOTIFICATION, "s11-only-notifications",
           "s11-only-notifications");
}
END_TEST

START_TEST(suite_catches_swapped_ids)
{
    caught(B_SWAP_IDS, "s11-ids-kept", "s11-ids-kept");
}
END_TEST

START_TEST(suite_catches_a_dropped_response)
{
    caught(B_DROP_ID_2, "s11-one-array", "s11-one-array");
    caught(B_DROP_ID_2, "s04-pipelined-all-answered",
           "s04-pipelined-all-answered");
}
END_TEST

START_TEST(suite_catches_a_numeric_id_echoed_as_a_string)
{
    caught(B_STRING_IDS_AFTER_INIT, "s04-id-number-echoed",
           "s04-id-number-echoed");
    caught(B_STRING_IDS_AFTER_INIT, "s04-id-type-kept", "s04-id-type-kept");
}
END_TEST

/* A server whose initialize is never answered under its id cannot be
** tested: the run ends at once (no check waits out its timeout), fails,
** and says why. */
START_TEST(suite_fails_fast_when_initialize_is_answered_under_another_id)
{
    rcp_arena a;
    rcp_buf out;
    const rcp_json *j;
    int rc, mode = B_STRING_IDS;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    j = suite(&a, &out, &mode, NULL, &rc);
    ck_assert_int_eq(rc, 1);
    ck_assert(jptr_get(j, "fatal", "reason") != NULL);
    ck_assert(strstr(jptr_get(j, "fatal", "reason")->s, "another id"));
    ck_assert(rcp_json_get(j, "certifiedLevel")->type == RCP_JSON_NULL);
    ck_assert_uint_eq(rcp_json_get(j, "checks")->n, 0);
    rcp_buf_free(&out);
    rcp_arena_free(&a);
}
END_TEST

static int exit_with_a_message(void *ud)
{
    (void)ud;
    fputs("fake: cannot open the store\n", stderr);
    return 3;
}

static rcp_client *spawn_dying(void *ud, const rcp_client_opts *o,
                               char *err, size_t errlen)
{
    return rcp_client_fork(exit_with_a_message, ud, o, err, errlen);
}

START_TEST(suite_fails_fast_with_the_stderr_of_a_server_that_does_not_start)
{
    char *argv[] = { "conform", "--json", NULL };
    rcp_conform_io io;
    rcp_arena a;
    rcp_buf out;
    rcp_json_err err;
    const rcp_json *j, *srv;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    memset(&io, 0, sizeof io);
    io.spawn = spawn_dying;
    io.out = &out;
    ck_assert_int_eq(rcp_conform_run(2, argv, &io), 1);
    j = rcp_json_parse(&a, out.data, out.len, 0, &err);
    ck_assert(j != NULL);
    srv = jptr_get(j, "fatal", "server");
    ck_assert(srv != NULL);
    ck_assert(rcp_json_streq(rcp_json_get(srv, "state"), "exited"));
    ck_assert(strstr(rcp_json_get(srv, "stderr")->s, "cannot open the store"));
    rcp_buf_free(&out);
    rcp_arena_free(&a);
}
END_TEST

START_TEST(usage_errors_exit_2)
{
    char *only[] = { "conform", "--only", "s99-no-such", "--", "x", NULL };
    char *level[] = { "conform", "--level", "L3", "--", "x", NULL };
    char *nodash[] = { "conform", "./server", NULL };
    ck_assert_int_eq(rcp_conform_run(5, only, NULL), 2);
    ck_assert_int_eq(rcp_conform_run(5, level, NULL), 2);
    ck_assert_int_eq(rcp_conform_run(2, nodash, NULL), 2);
}
END_TEST

START_TEST(suite_catches_an_empty_array_reply)
{
    caught(B_EMPTY_ARRAY, "s11-empty-array", "s11-empty-array");
}
END_TEST

START_TEST(suite_catches_a_duplicate_response)
{
    caught(B_DUPLICATE, "s04-id-string-echoed", "s04-id-string-echoed");
}
END_TEST

START_TEST(suite_catches_result_with_error_on_the_wire)
{
    caught(B_RESULT_AND_ERROR, "s12-result-xor-error",
           "s12-result-xor-error");
}
END_TEST

START_TEST(suite_catches_non_protocol_output_on_stdout)
{
    caught(B_STDOUT_NOISE, "5.1", "s05-stdout-protocol-only");
}
END_TEST

START_TEST(suite_reports_an_overclaim_and_fails)
{
    rcp_arena a;
    rcp_buf out;
    const rcp_json *j;
    int rc, mode = B_OVERCLAIM;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    j = suite(&a, &out, &mode, NULL, &rc);
    ck_assert_int_eq(rc, 1);
    ck_assert(rcp_json_streq(rcp_json_get(j, "declaredLevel"), "L2"));
    ck_assert(rcp_json_get(j, "declarationHonest")->type == RCP_JSON_FALSE);
    ck_assert_str_eq(status_of(j, "s14-declaration-honest"), "fail");
    ck_assert_str_eq(status_of(j, "s07-graph-op-unadvertised"), "fail");
    rcp_buf_free(&out);
    rcp_arena_free(&a);
}
END_TEST

START_TEST(suite_survives_a_wedged_server)
{
    rcp_arena a;
    rcp_buf out;
    const rcp_json *j;
    int rc, mode = B_WEDGE;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    j = suite(&a, &out, &mode, "s04-id-string-echoed", &rc);
    ck_assert_int_eq(rc, 1);
    ck_assert_str_eq(status_of(j, "s04-id-string-echoed"), "fail");
    rcp_buf_free(&out);
    rcp_arena_free(&a);
}
END_TEST


/* MARK: - What results mean: each new check catches a broken server ---- */

START_TEST(suite_catches_hits_out_of_score_order)
{
    caught(B_HITS_UNSORTED, "s07-retrieve-hits-invariants",
           "s07-retrieve-hits-invariants");
}
END_TEST

START_TEST(suite_catches_a_mode_that_is_ignored)
{
    caught(B_MODE_IGNORED, "s07-retrieve-modes-recall",
           "s07-retrieve-modes-recall");
}
END_TEST

START_TEST(suite_warns_of_min_score_ignored)
{
    warned(B_MINSCORE_IGNORED, "s07-retrieve-min-score",
           "s07-retrieve-min-score");
}
END_TEST

START_TEST(suite_catches_unadvertised_options_accepted)
{
    caught_on(B_MMR_HIDDEN, L_NO_MMR, "s07-retrieve-unadvertised-mmr",
              "s07-retrieve-unadvertised-mmr", "fail");
    caught_on(B_FUSION_HIDDEN, L_NO_CONVEX, "s07-retrieve-unadvertised-fusion",
              "s07-retrieve-unadvertised-fusion", "fail");
    caught_on(B_RERANK_HIDDEN, L_NO_INLINE_RERANK,
              "s07-retrieve-unadvertised-rerank",
              "s07-retrieve-unadvertised-rerank", "fail");
    caught_on(B_NO_FIELDS_FILTER_IGNORED, L_NO_FIELDS, "s08-filter-unadvertised",
              "s08-filter-unadvertised", "fail");
}
END_TEST

START_TEST(suite_warns_of_usage_that_reports_the_depth_asked)
{
    warned(B_USAGE_DEPTH, "s07-retrieve-usage-effective",
           "s07-retrieve-usage-effective");
}
END_TEST

START_TEST(suite_warns_of_retryable_against_the_table)
{
    warned(B_RETRY_INVERTED, "s12-retryable-per-table",
           "s12-retryable-per-table");
}
END_TEST

START_TEST(suite_catches_transform_results_that_break_their_contract)
{
    caught(B_NO_HYPOTHETICAL, "s07-transform-hyde-hypothetical",
           "s07-transform-hyde-hypothetical");
    warned(B_TRANSFORM_PADDED, "s07-transform-multi-query-n",
           "s07-transform-multi-query-n");
    warned(B_NO_REWRITTEN, "s07-retrieve-rewrite-reported",
           "s07-retrieve-rewrite-reported");
}
END_TEST

START_TEST(suite_catches_a_session_that_does_not_dedup)
{
    caught(B_SESSION_IGNORED, "s07-retrieve-session-dedup",
           "s07-retrieve-session-dedup");
}
END_TEST

START_TEST(suite_catches_feedback_that_miscounts)
{
    caught(B_FEEDBACK_MISCOUNT, "s07-feedback-accepted-exact",
           "s07-feedback-accepted-exact");
}
END_TEST

START_TEST(suite_catches_logs_that_ignore_the_level_or_break_the_shape)
{
    warned(B_LOG_LEVEL_IGNORED, "s17-log-honours-log-level",
           "s17-log-honours-log-level");
    caught(B_LOG_LEVEL_TRACE, "s17-log-shape", "s17-log-shape");
}
END_TEST

START_TEST(suite_catches_a_log_the_client_never_asked_for)
{
    /* the control passes though the s17 checks ask for logs: the oracle
    ** knows which servers were asked (initialize's log, _meta.logLevel) */
    caught(B_LOG_UNASKED, "s07-no-unsolicited-notifications",
           "s07-no-unsolicited-notifications");
}
END_TEST

START_TEST(suite_catches_seeded_results_that_differ)
{
    caught(B_NONDETERMINISTIC, "s07-retrieve-deterministic-corpus",
           "s07-retrieve-deterministic-corpus");
    caught(B_NONDETERMINISTIC, "s07-retrieve-deterministic-mmr",
           "s07-retrieve-deterministic-mmr");
}
END_TEST

START_TEST(suite_catches_a_pinned_snapshot_not_served)
{
    caught(B_SNAPSHOT_IGNORED, "s07-retrieve-snapshot-pinned",
           "s07-retrieve-snapshot-pinned");
}
END_TEST

START_TEST(suite_warns_of_missing_usage_citations_and_similarity)
{
    warned(B_NO_USAGE, "s07-retrieve-usage", "s07-retrieve-usage");
    warned(B_NO_USAGE, "s07-retrieve-token-budget-usage",
           "s07-retrieve-token-budget-usage");
    warned(B_NO_CITATION, "s07-retrieve-citations", "s07-retrieve-citations");
    warned(B_NO_SIMILARITY, "s07-multivector-similarity",
           "s07-multivector-similarity");
    warned(B_NO_MAXK, "s06-bounds-advertised", "s06-bounds-advertised");
    warned(B_FIELDS_LIST, "s08-fields-typed", "s08-fields-typed");
    caught_on(B_NOT_DETERMINISTIC_SILENT, L_NOT_DETERMINISTIC_NOTED,
              "s07-retrieve-seed-nondeterminism-noted",
              "s07-retrieve-seed-nondeterminism-noted", "warn");
}
END_TEST

START_TEST(suite_catches_rerank_scores_not_per_passage)
{
    caught(B_RERANK_SORTED, "s07-rerank-scores-follow-passages",
           "s07-rerank-scores-follow-passages");
}
END_TEST

/* §7.9: an op graph.ops advertises is served in its shape; one in no
** graph.ops is refused (-32005, or -32602 outside the enum). */
START_TEST(suite_catches_graph_ops_advertised_but_not_served)
{
    caught(B_GRAPH_OP_REFUSED, "s07-graph-drift-served",
           "s07-graph-drift-served");
    caught(B_NO_FOLLOWUPS, "s07-graph-drift-served", "s07-graph-drift-served");
    caught_on(B_GRAPH_ANY_OP, L_GRAPH_OP_INVALID, "s07-graph-op-not-in-ops",
              "s07-graph-op-not-in-ops", "fail");
}
END_TEST

/* §7.17: build answers a memoryId, recall of one never built -32015. */
START_TEST(suite_catches_memory_results_and_codes_that_are_wrong)
{
    caught(B_NO_MEMORY_ID, "s07-memory-build-recall",
           "s07-memory-build-recall");
    caught(B_MEMORY_NOTFOUND_INVALID, "s07-memory-unknown-id",
           "s07-memory-unknown-id");
}
END_TEST

START_TEST(suite_catches_a_delete_that_removes_nothing)
{
    caught(B_DELETE_NOOP, "s07-index-delete-removes",
           "s07-index-delete-removes");
}
END_TEST

START_TEST(suite_catches_an_upsert_that_keeps_the_old_document)
{
    caught(B_UPSERT_APPENDS, "s07-index-upsert-replaces",
           "s07-index-upsert-replaces");
}
END_TEST

START_TEST(suite_catches_a_cancelled_request_answered_twice)
{
    caught(B_CANCEL_DOUBLE, "s07-cancel-real-rerank", "s07-cancel-real-rerank");
    caught(B_CANCEL_DOUBLE, "s07-cancel-real-index", "s07-cancel-real-index");
    caught(B_CANCEL_DOUBLE, "s07-cancel-real-retrieve",
           "s07-cancel-real-retrieve");
    caught(B_CANCEL_DOUBLE, "s13-answered-exactly-once-real-work",
           "s13-answered-exactly-once-real-work");
    caught(B_DEADLINE_DOUBLE, "s13-deadline-real-work",
           "s13-deadline-real-work");
}
END_TEST

START_TEST(suite_catches_a_filter_that_is_ignored)
{
    caught(B_FILTER_IGNORED, "s08-filter-applied", "s08-filter-applied");
}
END_TEST

START_TEST(suite_catches_an_invalid_params_error_without_its_field)
{
    caught(B_NO_ERROR_FIELD, "s08-unadvertised-field", "s08-unadvertised-field");
    caught(B_NO_ERROR_FIELD, "s08-value-type-mismatch",
           "s08-value-type-mismatch");
    caught(B_NO_ERROR_FIELD, "s08-operator-not-for-type",
           "s08-operator-not-for-type");
    caught(B_NO_ERROR_FIELD, "s07-retrieve-funnel", "s07-retrieve-funnel");
    caught(B_NO_ERROR_FIELD, "s07-retrieve-funnel-topn",
           "s07-retrieve-funnel-topn");
}
END_TEST

START_TEST(suite_catches_progress_tokens_not_echoed_exactly)
{
    caught(B_TOKEN_AS_NUMBER, "s09-progress-digit-string-token",
           "s09-progress-digit-string-token");
    caught(B_PROGRESS_OUT_OF_RANGE, "s09-progress-frames-shape",
           "s09-progress-frames-shape");
}
END_TEST

START_TEST(suite_catches_pages_that_repeat)
{
    caught(B_PAGE_REPEATS, "s10-pagination-pages", "s10-pagination-pages");
    caught(B_PAGE_REPEATS, "s10-bad-cursor", "s10-bad-cursor");
}
END_TEST

START_TEST(suite_catches_capability_metadata_missing)
{
    caught(B_EMBED_NO_IDENTITY, "s06-capability-metadata",
           "s06-capability-metadata");
}
END_TEST

START_TEST(suite_judges_results_by_the_normative_schema)
{
    caught(B_SERVER_NAME_NUMBER, "s14-results-schema", "s14-results-schema");
    caught(B_SERVER_NAME_NUMBER, "s06-capabilities-schema",
           "s06-capabilities-schema");
    caught(B_STREAMING_TRUE, "s06-capabilities-schema",
           "s06-capabilities-schema");
    caught(B_PROGRESS_OUT_OF_RANGE, "9", "s09-notifications-schema");
}
END_TEST


/* MARK: - Reports ----------------------------------------------------------- */

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    rcp_buf b;
    char tmp[4096];
    size_t k;
    ck_assert_msg(f != NULL, "cannot read %s", path);
    rcp_buf_init(&b);
    while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
        rcp_buf_put(&b, tmp, k);
    fclose(f);
    rcp_buf_putc(&b, '\0');
    *n = b.len - 1;
    return b.data;
}

/* A failed check carries its evidence as data, not as indented text. */
START_TEST(json_report_has_structured_sent_expected_got)
{
    rcp_arena a;
    rcp_buf out;
    const rcp_json *j, *cs, *c = NULL;
    size_t i;
    int rc, mode = B_ANSWER_NOTIFICATIONS;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    j = suite(&a, &out, &mode, "s04-notification-unanswered", &rc);
    cs = rcp_json_get(j, "checks");
    for (i = 0; cs && i < cs->n; i++)
        if (rcp_json_streq(rcp_json_get(&cs->kids[i], "id"),
                           "s04-notification-unanswered"))
            c = &cs->kids[i];
    ck_assert(c != NULL);
    ck_assert(rcp_json_streq(rcp_json_get(c, "keyword"), "MUST NOT"));
    ck_assert(rcp_json_get(c, "sentence")->type == RCP_JSON_STRING);
    ck_assert(rcp_json_get(c, "sent")->type == RCP_JSON_ARRAY);
    ck_assert(rcp_json_get(&rcp_json_get(c, "sent")->kids[0], "jsonrpc"));
    ck_assert(jptr_get(c, "expected", "text") != NULL);
    ck_assert(jptr_get(c, "expected", "expect") != NULL);
    ck_assert(rcp_json_get(c, "got")->type == RCP_JSON_ARRAY);
    ck_assert(rcp_json_get(j, "levels")->type == RCP_JSON_ARRAY);
    ck_assert(jptr_get(j, "suite", "version") != NULL);
    ck_assert(rcp_json_get(j, "failed")->n == 1);
    rcp_buf_free(&out);
    rcp_arena_free(&a);
}
END_TEST

/* --junit and --html write files: XML with a failure element for the
** failed check, and one self-contained page (no external asset). */
START_TEST(junit_and_html_files_name_the_failure)
{
    char dir[] = "/tmp/rcp-report-XXXXXX", junit[64], html[64];
    char *argv[12];
    rcp_conform_io io;
    rcp_buf out;
    char *x, *h;
    size_t n;
    int mode = B_ANSWER_NOTIFICATIONS, argc = 0;
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(junit, sizeof junit, "%s/j.xml", dir);
    snprintf(html, sizeof html, "%s/r.html", dir);
    argv[argc++] = "conform";
    argv[argc++] = "--only";
    argv[argc++] = "4.5";
    argv[argc++] = "--junit";
    argv[argc++] = junit;
    argv[argc++] = "--html";
    argv[argc++] = html;
    argv[argc] = NULL;
    memset(&io, 0, sizeof io);
    rcp_buf_init(&out);
    io.spawn = spawn_fake;
    io.ud = &mode;
    io.out = &out;
    ck_assert_int_eq(rcp_conform_run(argc, argv, &io), 1);
    x = slurp(junit, &n);
    ck_assert(strncmp(x, "<?xml", 5) == 0);
    ck_assert(strstr(x, "<testsuites") && strstr(x, "</testsuites>"));
    ck_assert(strstr(x, "s04-notification-unanswered [L0 MUST NOT]"));
    ck_assert(strstr(x, "<failure type=\"MUST NOT\""));
    h = slurp(html, &n);
    ck_assert(strstr(h, "<!DOCTYPE html>") && strstr(h, "</html>"));
    ck_assert(strstr(h, "s04-notification-unanswered"));
    ck_assert(strstr(h, "By section"));
    ck_assert(!strstr(h, "src=") && !strstr(h, "href=")
              && !strstr(h, "<script") && !strstr(h, "@import"));
    remove(junit);
    remove(html);
    rmdir(dir);
    rcp_free(x);
    rcp_free(h);
    rcp_buf_free(&out);
}
END_TEST

/* Several saved reports: a section x server matrix, as text and HTML. */
START_TEST(matrix_from_saved_reports)
{
    char dir[] = "/tmp/rcp-matrix-XXXXXX", a[64], b[64], html[64];
    char *argv[10];
    rcp_arena ar;
    rcp_buf out;
    int mode[2] = { B_NONE, B_ANSWER_NOTIFICATIONS }, rc, i;
    char *h;
    size_t n;
    FILE *f;
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/a.json", dir);
    snprintf(b, sizeof b, "%s/b.json", dir);
    snprintf(html, sizeof html, "%s/m.html", dir);
    rcp_arena_init(&ar, 0);
    for (i = 0; i < 2; i++) {
        rcp_buf_init(&out);
        (void)suite(&ar, &out, &mode[i], "4.5", &rc);
        f = fopen(i ? b : a, "wb");
        fwrite(out.data, 1, out.len, f);
        fclose(f);
        rcp_buf_free(&out);
    }
    argv[0] = "conform";
    argv[1] = "--report";
    argv[2] = a;
    argv[3] = "--report";
    argv[4] = b;
    argv[5] = "--html";
    argv[6] = html;
    argv[7] = NULL;
    {
        rcp_conform_io io;
        memset(&io, 0, sizeof io);
        rcp_buf_init(&out);
        io.out = &out;
        ck_assert_int_eq(rcp_conform_run(7, argv, &io), 1);
        rcp_buf_putc(&out, '\0');
        ck_assert_msg(strstr(out.data, "section x server"), "%s", out.data);
        ck_assert_msg(strstr(out.data, "FAIL "), "%s", out.data);
        rcp_buf_free(&out);
    }
    h = slurp(html, &n);
    ck_assert(strstr(h, "Compatibility matrix"));
    ck_assert(strstr(h, "class=\"c fail\"") && strstr(h, "class=\"c pass\""));
    remove(a);
    remove(b);
    remove(html);
    rmdir(dir);
    rcp_free(h);
    rcp_arena_free(&ar);
}
END_TEST

/* MARK: - Suite ---------------------------------------------------------- */

/* A peer that says why on stderr and exits at once, as a server that
** refuses its options does. */
static int say_and_exit(void *ud)
{
    static const char why[] = "rcp serve: --registry x.json: /: must be "
                              "an object\n";
    (void)ud;
    if (write(2, why, sizeof why - 1) < 0)
        return 3;
    return 1;
}

START_TEST(stderr_is_whole_once_the_exit_is_seen)
{
    rcp_client_opts o;
    rcp_client *c;
    const char *t;
    size_t n;
    int st, i;
    for (i = 0; i < 20; i++) {      /* the race it closes is not every time */
        memset(&o, 0, sizeof o);
        o.err = RCP_STDERR_CAPTURE;
        c = rcp_client_fork(say_and_exit, NULL, &o, NULL, 0);
        ck_assert_ptr_nonnull(c);
        ck_assert(rcp_client_wait_exit(c, 10000, &st));
        t = rcp_client_stderr_text(c, &n);
        ck_assert_msg(n > 0 && t && strstr(t, "must be an object"),
                      "run %d: stderr '%.*s'", i, (int)n, t ? t : "");
        rcp_client_close(c, 0);
    }
}
END_TEST

/* MARK: - HTTP (§5.2): the client and the oracle against test peers ----- */

static hpeer HP;

static double now_ms_test(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* error.code of a response, or 0. */
static int err_code(const rcp_json *m)
{
    int64_t v = 0;
    const rcp_json *e = m ? rcp_json_get(m, "error") : NULL;
    return e && rcp_json_int(rcp_json_get(e, "code"), &v) ? (int)v : 0;
}

static void peer_up(int mode, const char *token)
{
    ck_assert_int_eq(hpeer_start(&HP, mode, token), 0);
}

static rcp_client *http_client(const char *url, const char *const *headers,
                               int sse)
{
    rcp_client_opts o;
    char err[256];
    rcp_client *c;
    memset(&o, 0, sizeof o);
    o.headers = headers;
    o.sse = sse;
    o.keep_frames = 1;
    c = rcp_client_connect(url, &o, err, sizeof err);
    ck_assert_msg(c != NULL, "connect %s: %s", url, err);
    return c;
}

START_TEST(http_requests_pair_by_id_over_keepalive)
{
    rcp_client *c;
    rcp_request *r[20];
    int i;
    peer_up(HP_LEGAL, NULL);
    c = http_client(HP.url, NULL, 0);
    for (i = 0; i < 20; i++) {
        char p[64];
        sprintf(p, "{\"nonce\":%d}", i);
        r[i] = rcp_client_request(c, "ping", p, 5000);
        ck_assert_ptr_nonnull(r[i]);
    }
    ck_assert_uint_eq(rcp_client_wait_all(c, 5000), 0);
    for (i = 0; i < 20; i++) {
        int64_t v = -1;
        ck_assert_int_eq(rcp_request_state_get(r[i]), RCP_REQ_DONE);
        ck_assert(rcp_json_int(rcp_json_get(rcp_request_result(r[i]),
                                            "nonce"), &v) && v == i);
        ck_assert_int_eq(rcp_request_http_status(r[i]), 200);
    }
    ck_assert_uint_eq(rcp_client_metrics_get(c)->http_exchanges, 20);
    {
        rcp_buf mj;
        rcp_buf_init(&mj);
        rcp_client_metrics_json(c, &mj);
        rcp_buf_putc(&mj, '\0');
        ck_assert_ptr_nonnull(strstr(mj.data, "\"http.exchanges\":20"));
        ck_assert_ptr_nonnull(strstr(mj.data, "\"batch.pair_latency\""));
        rcp_buf_free(&mj);
    }
    ck_assert_uint_eq(rcp_client_exchanges(c), 0);
    ck_assert_str_eq(rcp_client_base(c), "/rcp");
    ck_assert_int_eq(rcp_client_pid(c), -1);
    ck_assert_int_eq(rcp_client_close(c, 0), 0);
    hpeer_stop(&HP);
}
END_TEST

/* §5.2: a stateful server's session token, from initialize, goes on
** every later request as RCP-Session. */
START_TEST(http_session_token_is_carried)
{
    rcp_client *c;
    rcp_request *r;
    peer_up(HP_SESSIONS, NULL);
    c = http_client(HP.url, NULL, 0);
    r = rcp_client_request(c, "embed", "{\"inputs\":[\"a\"]}", 5000);
    ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_ABANDONED);
    rcp_request_free(c, r);
    r = rcp_client_request(c, "initialize", "{\"protocolVersion\":1,"
                           "\"client\":{\"name\":\"t\"}}", 5000);
    ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_DONE);
    rcp_request_free(c, r);
    r = rcp_client_request(c, "embed", "{\"inputs\":[\"a\"]}", 5000);
    ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_DONE);
    ck_assert_ptr_nonnull(rcp_request_result(r));
    rcp_client_close(c, 0);
    hpeer_stop(&HP);
}
END_TEST

/* rcp_client_pump_many wakes for HTTP clients' exchanges too (it polls
** their sockets), so a fan-out over HTTP engines is not slowed to its
** timeout. */
START_TEST(http_pump_many_wakes_for_http_answers)
{
    rcp_client *cs[2];
    rcp_request *r[2];
    double t0;
    int i;
    peer_up(HP_LEGAL, NULL);
    for (i = 0; i < 2; i++) {
        cs[i] = http_client(HP.url, NULL, 0);
        r[i] = rcp_client_request(cs[i], "ping", NULL, 0);
        ck_assert_ptr_nonnull(r[i]);
    }
    t0 = now_ms_test();
    while (rcp_request_state_get(r[0]) == RCP_REQ_PENDING
           || rcp_request_state_get(r[1]) == RCP_REQ_PENDING)
        (void)rcp_client_pump_many(cs, 2, 60000);
    /* one timeout's worth would be 60 s: waking on the answer is far less
    ** (a bound, not a timing: any wake-up on input passes) */
    ck_assert_msg(now_ms_test() - t0 < 30000, "pump_many slept its timeout");
    for (i = 0; i < 2; i++)
        rcp_client_close(cs[i], 0);
    hpeer_stop(&HP);
}
END_TEST

/* A batch is one POST to the base; the seed's batch metrics count it. */
START_TEST(http_batch_posts_to_the_base_and_counts_the_seed_metrics)
{
    rcp_client *c;
    rcp_request *a, *b;
    const rcp_client_metrics *m;
    peer_up(HP_LEGAL, NULL);
    c = http_client(HP.url, NULL, 0);
    ck_assert_int_eq(rcp_client_batch_begin(c), 0);
    a = rcp_client_request(c, "ping", "{\"nonce\":\"a\"}", 5000);
    ck_assert_int_eq(rcp_client_notify(c, "notifications/cancel",
                                       "{\"id\":\"zz\"}"), 0);
    b = rcp_client_request(c, "info", NULL, 5000);
    ck_assert_int_eq(rcp_client_batch_end(c), 0);
    ck_assert_uint_eq(rcp_client_wait_all(c, 5000), 0);
    ck_assert(rcp_request_result(a) && rcp_request_result(b));
    m = rcp_client_metrics_get(c);
    ck_assert_uint_eq(m->batches, 1);
    ck_assert_uint_eq(m->batch_size_sum, 3);
    ck_assert_uint_eq(m->batch_response_count_mismatch, 0);
    ck_assert_uint_eq(m->http_exchanges, 1);
    /* a notification alone: an exchange with no body, nothing to pair */
    ck_assert_int_eq(rcp_client_notify(c, "notifications/cancel",
                                       "{\"id\":\"zz\"}"), 0);
    while (rcp_client_exchanges(c) > 0)
        ck_assert_int_ge(rcp_client_pump(c, 2000), 0);
    ck_assert_uint_eq(m->batch_unknown_id_response, 0);
    rcp_client_close(c, 0);
    hpeer_stop(&HP);
}
END_TEST

/* Chunked bodies, and a server that closes every connection after its
** answer (the pool must notice and open a new one). */
START_TEST(http_chunked_bodies_and_closed_connections)
{
    int modes[2] = { HP_CHUNKED, HP_CLOSE }, i, k;
    for (k = 0; k < 2; k++) {
        rcp_client *c;
        peer_up(modes[k], NULL);
        c = http_client(HP.url, NULL, 0);
        for (i = 0; i < 5; i++) {
            rcp_request *r = rcp_client_request(c, "info", NULL, 5000);
            ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_DONE);
            ck_assert_ptr_nonnull(rcp_json_get(rcp_request_result(r),
                                               "capabilities"));
            rcp_request_free(c, r);
        }
        ck_assert_uint_eq(rcp_client_metrics_get(c)->http_failed, 0);
        rcp_client_close(c, 0);
        hpeer_stop(&HP);
    }
}
END_TEST

static int progress_seen;
static void on_progress(void *ud, const rcp_json *m)
{
    (void)ud;
    if (rcp_json_streq(rcp_json_get(m, "method"), "notifications/progress"))
        progress_seen++;
}

/* SSE: data: events are frames; comments and CRLF are SSE's own. */
START_TEST(http_sse_events_are_frames)
{
    rcp_client_opts o;
    rcp_client *c;
    rcp_request *r;
    const rcp_client_metrics *m;
    char err[200];
    peer_up(HP_SSE_COMMENTS, NULL);
    memset(&o, 0, sizeof o);
    o.sse = 1;
    o.on_notify = on_progress;
    progress_seen = 0;
    c = rcp_client_connect(HP.url, &o, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    r = rcp_client_request(c, "x-rcp/sleep", "{\"ms\":60,\"_meta\":"
                           "{\"progressToken\":\"t\"}}", 5000);
    ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_DONE);
    m = rcp_client_metrics_get(c);
    ck_assert_int_gt(progress_seen, 0);
    ck_assert_uint_gt(m->sse_events, 1);
    ck_assert_uint_eq(m->sse_comments, 1);
    ck_assert_uint_eq(m->sse_multiline + m->sse_after_final
                      + m->sse_no_final + m->sse_unterminated, 0);
    rcp_client_close(c, 0);
    hpeer_stop(&HP);
}
END_TEST

/* What a broken stream looks like to the client's counters. */
START_TEST(http_sse_faults_are_counted)
{
    int modes[2] = { HB_SSE_TWO_FINALS, HB_SSE_NO_BLANK }, k;
    for (k = 0; k < 2; k++) {
        rcp_client *c;
        rcp_request *r;
        const rcp_client_metrics *m;
        peer_up(modes[k], NULL);
        c = http_client(HP.url, NULL, 1);
        r = rcp_client_request(c, "x-rcp/sleep", "{\"ms\":30,\"_meta\":"
                               "{\"progressToken\":\"t\"}}", 5000);
        (void)rcp_client_wait(c, r, 5000);
        while (rcp_client_exchanges(c) > 0)
            ck_assert_int_ge(rcp_client_pump(c, 2000), 0);
        m = rcp_client_metrics_get(c);
        if (k == 0) {
            ck_assert_uint_eq(m->sse_after_final, 1);
            ck_assert_uint_eq(m->duplicate_response, 1);
        } else {
            ck_assert_uint_eq(m->sse_multiline, 1);
        }
        rcp_client_close(c, 0);
        hpeer_stop(&HP);
    }
}
END_TEST

/* §5.2's table: a 400 without a JSON-RPC body is the -32700 it mirrors
** (made by the client, and marked so); a 404 fails its request. */
START_TEST(http_statuses_without_a_body)
{
    rcp_client *c;
    rcp_request *r;
    const rcp_frame *f;
    char url[96];
    peer_up(HP_PARSE_400, NULL);
    c = http_client(HP.url, NULL, 0);
    ck_assert_int_eq(rcp_client_send_raw(c, "not json\n", 9), 0);
    while (rcp_client_exchanges(c) > 0)
        ck_assert_int_ge(rcp_client_pump(c, 2000), 0);
    ck_assert_uint_eq(rcp_client_frames(c, &f), 1);
    ck_assert_int_eq(f[0].http_status, 400);
    ck_assert(f[0].http_flags & RCP_FRAME_STANDIN);
    ck_assert_int_eq(err_code(f[0].root), RCP_PARSE_ERROR);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->batch_null_id_response, 1);
    rcp_client_close(c, 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/elsewhere", HP.port);
    c = http_client(url, NULL, 0);
    r = rcp_client_request(c, "ping", NULL, 5000);
    ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_ABANDONED);
    ck_assert_int_eq(rcp_request_http_status(r), 404);
    rcp_client_close(c, 0);
    hpeer_stop(&HP);
}
END_TEST

START_TEST(http_connect_refuses_what_it_cannot_use)
{
    static const char *const crlf[] = { "X-A: b\r\nX-Evil: 1", NULL };
    static const char *const bare[] = { "NoColon", NULL };
    static const char *const sp[] = { "Bad Name: v", NULL };
    rcp_client_opts o;
    char err[256], url[96];
    memset(&o, 0, sizeof o);
    ck_assert_ptr_null(rcp_client_connect("https://127.0.0.1/rcp", NULL,
                                          err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "TLS"));
    ck_assert_ptr_null(rcp_client_connect("ftp://x/", NULL, err,
                                          sizeof err));
    ck_assert_ptr_null(rcp_client_connect("http://[::1/rcp", NULL, err,
                                          sizeof err));
    ck_assert_ptr_null(rcp_client_connect("http://h:99999/rcp", NULL, err,
                                          sizeof err));
    ck_assert_ptr_null(rcp_client_connect("http://h/rcp?x=1", NULL, err,
                                          sizeof err));
    ck_assert_ptr_null(rcp_client_connect(NULL, NULL, err, sizeof err));
    peer_up(HP_LEGAL, NULL);
    o.headers = crlf;
    ck_assert_ptr_null(rcp_client_connect(HP.url, &o, err, sizeof err));
    o.headers = bare;
    ck_assert_ptr_null(rcp_client_connect(HP.url, &o, err, sizeof err));
    o.headers = sp;
    ck_assert_ptr_null(rcp_client_connect(HP.url, &o, err, sizeof err));
    hpeer_stop(&HP);
    /* nothing listens there any more */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/rcp", HP.port);
    ck_assert_ptr_null(rcp_client_connect(url, NULL, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "cannot connect"));
}
END_TEST

/* The raw exchange the oracle judges with; the client's headers go on
** every request, the default base is /rcp. */
START_TEST(http_raw_exchange_and_headers)
{
    static const char *const h[] = { "Authorization: Bearer s3cret", NULL };
    rcp_client *c;
    rcp_http_reply rep;
    rcp_request *r;
    char url[96];
    size_t n;
    const char *v;
    peer_up(HP_LEGAL, "s3cret");
    snprintf(url, sizeof url, "http://127.0.0.1:%d", HP.port);
    c = http_client(url, h, 0);
    ck_assert_str_eq(rcp_client_base(c), "/rcp");
    r = rcp_client_request(c, "ping", NULL, 5000);
    ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_DONE);
    ck_assert_int_eq(rcp_client_http(c, "GET", "/rcp/ping", NULL, NULL, 0,
                                     5000, &rep), 0);
    ck_assert_int_eq(rep.status, 405);
    v = rcp_http_header(&rep, "allow", &n);
    ck_assert(v && n == 4 && memcmp(v, "POST", 4) == 0);
    rcp_http_reply_free(&rep);
    rcp_client_close(c, 0);
    c = http_client(HP.url, NULL, 0);      /* no token */
    ck_assert_int_eq(rcp_client_http(c, "POST", "/rcp/ping",
                                     "Content-Type: application/json\r\n",
                                     "{}", 2, 5000, &rep), 0);
    ck_assert_int_eq(rep.status, 401);
    ck_assert_ptr_nonnull(rcp_http_header(&rep, "WWW-Authenticate", NULL));
    rcp_http_reply_free(&rep);
    /* the peer's -32012 carries id null: it pairs with nothing, and the
    ** request its exchange did not answer fails, with the status */
    r = rcp_client_request(c, "ping", NULL, 5000);
    ck_assert_int_eq(rcp_client_wait(c, r, 5000), RCP_REQ_ABANDONED);
    ck_assert_int_eq(rcp_request_http_status(r), 401);
    ck_assert_uint_eq(rcp_client_metrics_get(c)->batch_null_id_response, 1);
    rcp_client_close(c, 0);
    hpeer_stop(&HP);
}
END_TEST

/* The suite over HTTP against a peer; the report, parsed. */
static const rcp_json *http_suite(rcp_arena *a, rcp_buf *out, int mode,
                                  const char *token, const char *only,
                                  int *rc)
{
    char *argv[12], hdr[96];
    rcp_conform_io io;
    rcp_json_err err;
    const rcp_json *j;
    int argc = 0;
    peer_up(mode, token);
    argv[argc++] = "conform";
    argv[argc++] = "--json";
    argv[argc++] = "--timeout";
    argv[argc++] = "1500";
    argv[argc++] = "--http";
    argv[argc++] = HP.url;
    if (token) {
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", token);
        argv[argc++] = "--header";
        argv[argc++] = hdr;
    }
    if (only) {
        argv[argc++] = "--only";
        argv[argc++] = (char *)only;
    }
    argv[argc] = NULL;
    memset(&io, 0, sizeof io);
    io.out = out;
    *rc = rcp_conform_run(argc, argv, &io);
    hpeer_stop(&HP);
    j = rcp_json_parse(a, out->data, out->len, 0, &err);
    ck_assert_msg(j != NULL, "report is not JSON: %.*s", (int)out->len,
                  out->data);
    return j;
}

/* One run over HTTP: check's status (and the failed ids, when failed is
** not NULL), both in static buffers. */
static const char *http_status(int mode, const char *token, const char *only,
                               const char *check, int *rc,
                               const char **failed)
{
    rcp_arena a;
    rcp_buf out;
    const rcp_json *j;
    const char *st;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    j = http_suite(&a, &out, mode, token, only, rc);
    st = status_of(j, check);
    if (failed)
        *failed = failed_ids(j);
    rcp_buf_free(&out);
    rcp_arena_free(&a);
    return st;
}

/* Every legal reading passes the whole suite over HTTP: notifications
** answered 204, 202 or an empty 200; a 400 for a body that is not JSON;
** chunked bodies; no keep-alive; no SSE (it MAY); SSE comments and CRLF;
** 403 for a missing token. */
START_TEST(suite_over_http_passes_the_legal_peers)
{
    static const int legal[] = { HP_LEGAL, HP_NOTE_202, HP_NOTE_200,
        HP_PARSE_400, HP_CHUNKED, HP_CLOSE, HP_NO_SSE, HP_SSE_COMMENTS,
        HP_AUTH_403, HP_SESSIONS };
    size_t i;
    for (i = 0; i < sizeof legal / sizeof *legal; i++) {
        rcp_arena a;
        rcp_buf out;
        const rcp_json *j;
        int rc;
        rcp_arena_init(&a, 0);
        rcp_buf_init(&out);
        j = http_suite(&a, &out, legal[i], legal[i] == HP_AUTH_403
                       || legal[i] == HP_LEGAL ? "tok" : NULL,
                       legal[i] == HP_LEGAL || legal[i] == HP_SESSIONS
                       ? NULL : "5.2", &rc);
        ck_assert_msg(rc == 0, "legal mode %d failed: %s", legal[i],
                      failed_ids(j));
        ck_assert_str_eq(status_of(j, "s05-http-method-mismatch"), "pass");
        if (legal[i] == HP_LEGAL) {
            ck_assert_str_eq(status_of(j, "s05-http-sse-framing"), "pass");
            ck_assert_str_eq(status_of(j, "s05-http-auth-before-initialize"),
                             "pass");
            ck_assert_str_eq(status_of(j, "s05-blank-lines-ignored"),
                             "skip");
        }
        rcp_buf_free(&out);
        rcp_arena_free(&a);
    }
}
END_TEST

/* The legal readings the other sections must accept over HTTP. */
START_TEST(suite_over_http_accepts_statuses_for_notifications_and_400)
{
    static const struct { int mode; const char *only; } cases[] = {
        { HP_NOTE_202, "4" }, { HP_NOTE_200, "11" }, { HP_PARSE_400, "12" }
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *failed;
        int rc;
        (void)http_status(cases[i].mode, NULL, cases[i].only, "", &rc,
                          &failed);
        ck_assert_msg(rc == 0, "legal mode %d, --only %s: %s",
                      cases[i].mode, cases[i].only, failed);
    }
}
END_TEST

/* Each breach of §5.2 is caught by the check that names it. */
START_TEST(suite_over_http_catches_each_breach)
{
    static const struct {
        int mode;
        const char *token, *check, *want;
    } cases[] = {
        { HB_ERROR_NOT_200, NULL, "s05-http-error-200", "fail" },
        { HB_NO_MISMATCH, NULL, "s05-http-method-mismatch", "fail" },
        { HB_ANY_BASE, NULL, "s05-http-unknown-base", "warn" },
        { HB_GET_200, NULL, "s05-http-other-verbs", "warn" },
        { HB_SSE_TWO_FINALS, NULL, "s05-http-sse-framing", "fail" },
        { HB_SSE_NO_BLANK, NULL, "s05-http-sse-framing", "fail" },
        { HB_SSE_ALWAYS, NULL, "s05-http-buffered", "fail" },
        { HB_AUTH_AFTER_INIT, "tok", "s05-http-auth-before-initialize",
          "fail" },
        { HB_401_BARE, "tok", "s05-http-auth-before-initialize", "fail" },
        { HB_AUTH_NO_BODY, "tok", "s05-http-auth-before-initialize",
          "fail" },
        { HB_INIT_ONCE, NULL, "s05-http-initialize-per-connection", "fail" },
        { HB_ONE_AT_A_TIME, NULL, "s05-http-two-clients", "warn" },
        { HB_NOTE_BODY, NULL, "s05-http-notification-no-body", "fail" }
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc;
        const char *st = http_status(cases[i].mode, cases[i].token,
                                     cases[i].check, cases[i].check, &rc,
                                     NULL);
        ck_assert_msg(strcmp(st, cases[i].want) == 0, "mode %d: %s is %s, "
                      "not %s", cases[i].mode, cases[i].check, st,
                      cases[i].want);
    }
}
END_TEST

/* The wire rules see every frame of the run: a JSON-RPC error with 400,
** and SSE streams broken on the shared session. */
START_TEST(suite_over_http_judges_every_frame)
{
    static const struct { int mode; const char *check; } cases[] = {
        { HB_ERROR_NOT_200, "s05-http-status-200" },
        { HB_SSE_TWO_FINALS, "s05-http-sse-wire" },
        { HB_SSE_NO_BLANK, "s05-http-sse-wire" }
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc;
        const char *st = http_status(cases[i].mode, NULL, NULL,
                                     cases[i].check, &rc, NULL);
        ck_assert_msg(strcmp(st, "fail") == 0, "mode %d: %s is %s",
                      cases[i].mode, cases[i].check, st);
        ck_assert_int_eq(rc, 1);
    }
}
END_TEST

START_TEST(suite_http_usage_errors)
{
    char *a1[] = { "conform", "--http", "http://x/", "--", "cmd", NULL };
    char *a2[] = { "conform", "--header", "A: b", "--", "cmd", NULL };
    char *a3[] = { "conform", "--http", "http://x/", "--header", "nocolon",
                   NULL };
    rcp_buf out;
    rcp_conform_io io;
    rcp_buf_init(&out);
    memset(&io, 0, sizeof io);
    io.out = &out;
    ck_assert_int_eq(rcp_conform_run(5, a1, &io), 2);
    ck_assert_int_eq(rcp_conform_run(5, a2, &io), 2);
    ck_assert_int_eq(rcp_conform_run(5, a3, &io), 2);
    rcp_buf_free(&out);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("client");
    TCase *t = tcase_create("pairing");
    TCase *b = tcase_create("broken-peers");
    TCase *x = tcase_create("suite-proves-itself");
    TCase *l = tcase_create("legal-controls");
    TCase *r = tcase_create("results");
    TCase *h = tcase_create("http");
    tcase_set_timeout(t, 60);
    tcase_set_timeout(b, 60);
    tcase_set_timeout(x, 120);
    tcase_set_timeout(l, 120);
    tcase_set_timeout(r, 180);
    tcase_set_timeout(h, 180);
    tcase_add_test(h, http_requests_pair_by_id_over_keepalive);
    tcase_add_test(h, http_batch_posts_to_the_base_and_counts_the_seed_metrics);
    tcase_add_test(h, http_chunked_bodies_and_closed_connections);
    tcase_add_test(h, http_session_token_is_carried);
    tcase_add_test(h, http_pump_many_wakes_for_http_answers);
    tcase_add_test(h, http_sse_events_are_frames);
    tcase_add_test(h, http_sse_faults_are_counted);
    tcase_add_test(h, http_statuses_without_a_body);
    tcase_add_test(h, http_connect_refuses_what_it_cannot_use);
    tcase_add_test(h, http_raw_exchange_and_headers);
    tcase_add_test(h, suite_http_usage_errors);
    tcase_add_test(h, suite_over_http_passes_the_legal_peers);
    tcase_add_test(h, suite_over_http_accepts_statuses_for_notifications_and_400);
    tcase_add_test(h, suite_over_http_catches_each_breach);
    tcase_add_test(h, suite_over_http_judges_every_frame);
    tcase_add_test(t, pairs_out_of_order_responses_by_id);
    tcase_add_test(t, batch_reply_in_any_order_pairs_by_id);
    tcase_add_test(t, batch_notifications_shorten_the_reply_without_mismatch);
    tcase_add_test(t, batch_short_reply_counts_mismatch_and_missing);
    tcase_add_test(t, notifications_interleaved_are_delivered_not_paired);
    tcase_add_test(t, notification_callback_sees_each_unpaired_frame);
    tcase_add_test(t, null_id_error_is_counted_never_paired);
    tcase_add_test(t, unknown_fields_and_meta_are_tolerated);
    tcase_add_test(t, unknown_error_code_is_a_generic_failure_of_its_sign);
    tcase_add_test(t, ids_are_unique_among_requests_in_flight);
    tcase_add_test(t, freed_pending_request_keeps_its_id_and_drops_the_reply);
    tcase_add_test(t, ids_compare_by_json_type_and_exact_value);
    tcase_add_test(t, metrics_json_uses_the_seed_names);
    tcase_add_test(t, real_server_pipelined_and_batched);
    tcase_add_test(b, duplicate_response_is_detected);
    tcase_add_test(b, unknown_id_is_detected_and_the_request_goes_missing);
    tcase_add_test(b, numeric_id_echoed_as_string_pairs_with_nothing);
    tcase_add_test(b, late_response_is_paired_and_discarded);
    tcase_add_test(b, malformed_responses_are_flagged);
    tcase_add_test(b, garbage_blank_lines_and_bom_are_counted);
    tcase_add_test(b, frame_split_across_writes_is_one_frame);
    tcase_add_test(b, long_line_split_across_reads_is_searched_once);
    tcase_add_test(b, transport_death_abandons_requests_in_flight);
    tcase_add_test(b, writing_to_a_dead_server_is_an_error_not_sigpipe);
    tcase_add_test(b, spawn_reports_a_missing_program);
    tcase_add_test(x, suite_catches_an_answered_notification);
    tcase_add_test(x, suite_catches_a_batch_entry_for_a_notification);
    tcase_add_test(x, suite_catches_swapped_ids);
    tcase_add_test(x, suite_catches_a_dropped_response);
    tcase_add_test(x, suite_catches_a_numeric_id_echoed_as_a_string);
    tcase_add_test(x,
        suite_fails_fast_when_initialize_is_answered_under_another_id);
    tcase_add_test(x,
        suite_fails_fast_with_the_stderr_of_a_server_that_does_not_start);
    tcase_add_test(x, usage_errors_exit_2);
    tcase_add_test(x, suite_catches_an_empty_array_reply);
    tcase_add_test(x, suite_catches_a_duplicate_response);
    tcase_add_test(x, suite_catches_result_with_error_on_the_wire);
    tcase_add_test(x, suite_catches_non_protocol_output_on_stdout);
    tcase_add_test(x, suite_reports_an_overclaim_and_fails);
    tcase_add_test(x, suite_survives_a_wedged_server);
    tcase_add_test(l, legal_compact_envelope_is_served);
    tcase_add_test(l, legal_parser_extensions_are_a_warning);
    tcase_add_test(l, legal_no_exit_after_shutdown_is_a_warning);
    tcase_add_test(l, legal_nonzero_exit_after_shutdown_passes);
    tcase_add_test(l, legal_smaller_batch_and_frame_caps_pass);
    tcase_add_test(l, legal_citations_true_is_a_capability_value);
    tcase_add_test(l, legal_x_key_may_change_between_initialize_and_info);
    tcase_add_test(l, one_defect_is_reported_once);
    tcase_add_test(l, legal_a_server_may_normalise_the_funnel);
    tcase_add_test(r, suite_catches_hits_out_of_score_order);
    tcase_add_test(r, suite_catches_a_mode_that_is_ignored);
    tcase_add_test(r, suite_warns_of_min_score_ignored);
    tcase_add_test(r, suite_catches_unadvertised_options_accepted);
    tcase_add_test(r, suite_warns_of_usage_that_reports_the_depth_asked);
    tcase_add_test(r, suite_warns_of_retryable_against_the_table);
    tcase_add_test(r, suite_catches_transform_results_that_break_their_contract);
    tcase_add_test(r, suite_catches_a_session_that_does_not_dedup);
    tcase_add_test(r, suite_catches_feedback_that_miscounts);
    tcase_add_test(r,
        suite_catches_logs_that_ignore_the_level_or_break_the_shape);
    tcase_add_test(r, suite_catches_a_log_the_client_never_asked_for);
    tcase_add_test(r, suite_catches_seeded_results_that_differ);
    tcase_add_test(r, suite_catches_a_pinned_snapshot_not_served);
    tcase_add_test(r, suite_warns_of_missing_usage_citations_and_similarity);
    tcase_add_test(r, suite_catches_rerank_scores_not_per_passage);
    tcase_add_test(r, suite_catches_a_delete_that_removes_nothing);
    tcase_add_test(r, suite_catches_graph_ops_advertised_but_not_served);
    tcase_add_test(r, suite_catches_memory_results_and_codes_that_are_wrong);
    tcase_add_test(r, suite_catches_an_upsert_that_keeps_the_old_document);
    tcase_add_test(r, suite_catches_a_cancelled_request_answered_twice);
    tcase_add_test(r, suite_catches_a_filter_that_is_ignored);
    tcase_add_test(r, suite_catches_an_invalid_params_error_without_its_field);
    tcase_add_test(r, suite_catches_progress_tokens_not_echoed_exactly);
    tcase_add_test(r, suite_catches_pages_that_repeat);
    tcase_add_test(r, suite_catches_capability_metadata_missing);
    tcase_add_test(r, suite_judges_results_by_the_normative_schema);
    tcase_add_test(x, json_report_has_structured_sent_expected_got);
    tcase_add_test(x, junit_and_html_files_name_the_failure);
    tcase_add_test(x, matrix_from_saved_reports);
    tcase_add_test(x, suite_catches_silence_on_a_frame_without_jsonrpc);
    tcase_add_test(x, suite_catches_any_jsonrpc_value_accepted);
    tcase_add_test(x, suite_catches_unanswered_parse_errors);
    tcase_add_test(x, suite_catches_an_unanswered_shutdown);
    tcase_add_test(x, suite_catches_a_request_served_after_shutdown);
    tcase_add_test(x, suite_catches_a_capped_batch_refused_inside_an_array);
    tcase_add_test(x, suite_catches_a_big_frame_dropped_silently);
    tcase_add_test(x, suite_catches_a_capability_value_the_schema_forbids);
    tcase_add_test(x, suite_catches_info_narrowing_a_capability);
    tcase_add_test(x, suite_catches_a_batch_member_failing_the_rest);
    tcase_add_test(x, suite_catches_progress_under_the_request_id);
    tcase_add_test(t, stderr_is_whole_once_the_exit_is_seen);
    suite_add_tcase(s, t);
    suite_add_tcase(s, b);
    suite_add_tcase(s, x);
    suite_add_tcase(s, l);
    suite_add_tcase(s, r);
    suite_add_tcase(s, h);
    return s;
}

TEST_MAIN(make_suite)
