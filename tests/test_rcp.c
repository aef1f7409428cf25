/*
** test_rcp.c -- the protocol (rcp.c), knowing no engine: the §4
** envelope, §13 lifecycle, §7 gating and the roster, §9 progress and
** §7.14 cancel, §11 batching, §12 errors.  Most tests run against a bare
** server (no backend: the session methods only) and against a tiny
** backend defined here, which proves the seam: the protocol serves a
** backend it knows only through its table.
**
** Tests drive rcp_server_handle() frame by frame.  Test names say the
** requirement; comments cite the section.
*/
#include "rcp.h"
#include "serverutil.h"
#include "../conformance/conform.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

/* MARK: - fixtures ------------------------------------------------------- */

/* A server with no backend: the session methods are all it serves. */
static void make_server(int debug, size_t max_batch)
{
    rcp_server_opts o;
    memset(&o, 0, sizeof o);
    o.debug = debug;
    o.max_batch = max_batch;
    o.deadline_ms = -1;
    S = rcp_server_new(&o);
    ck_assert_ptr_nonnull(S);
}

static void setup_opts(int debug, size_t max_batch)
{
    make_server(debug, max_batch);
    rcp_buf_init(&OUT);
    rcp_arena_init(&A, 0);
}

static void setup(void) { setup_opts(0, 0); }
static void setup_debug(void) { setup_opts(1, 3); }

static void teardown(void)
{
    rcp_server_free(S);
    S = NULL;
    rcp_buf_free(&OUT);
    rcp_arena_free(&A);
    ck_assert_msg(!leaked(), "the test leaked (LeakSanitizer says where)");
}

/* MARK: - §4 envelope ---------------------------------------------------- */

START_TEST(envelope_id_is_echoed_byte_for_byte)
{
    /* §4.7: same JSON type and value -- numbers keep their text */
    static const char *const ids[] = { "9007199254740993", "1e2", "-0",
                                       "1.50", "\"a\\u00e9\"", "\"\"", "0" };
    static const char *const want[] = { "9007199254740993", "1e2", "-0",
                                        "1.50", "\"a\xc3\xa9\"", "\"\"", "0" };
    char frame[128], expect[128];
    size_t i;
    for (i = 0; i < sizeof ids / sizeof *ids; i++) {
        sprintf(frame, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
                ids[i]);
        sprintf(expect, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n",
                want[i]);
        ck_assert_str_eq(ask(frame), expect);
    }
}
END_TEST

START_TEST(envelope_jsonrpc_must_be_2_0)
{
    const rcp_json *v = reply("{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":"
                              "\"ping\"}");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_REQUEST);
    ck_assert_int_eq(num(v, "id"), 5);       /* the id itself was valid */
    expect_code("{\"jsonrpc\":2.0,\"id\":5,\"method\":\"ping\"}",
                RCP_INVALID_REQUEST);
    expect_code("{\"id\":5,\"method\":\"ping\"}", RCP_INVALID_REQUEST);
}
END_TEST

START_TEST(envelope_invalid_id_gets_null_id)
{
    /* §4.7: id MUST NOT be null; objects, arrays, booleans are no ids */
    static const char *const bad[] = { "null", "{}", "[1]", "true", "false" };
    char frame[96];
    size_t i;
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        const rcp_json *v;
        sprintf(frame, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
                bad[i]);
        v = reply(frame);
        ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_REQUEST);
        ck_assert_int_eq(at(v, "id")->type, RCP_JSON_NULL);
    }
}
END_TEST

START_TEST(envelope_method_must_be_a_string)
{
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":"
                              "7}");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_REQUEST);
    ck_assert(is_str(v, "id", "m"));
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1}", RCP_INVALID_REQUEST);
}
END_TEST

START_TEST(envelope_params_must_be_an_object)
{
    /* §4.1: RCP does not use positional parameters */
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                "\"params\":[1]}", RCP_INVALID_REQUEST);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                "\"params\":\"x\"}", RCP_INVALID_REQUEST);
}
END_TEST

START_TEST(envelope_params_null_or_absent_mean_empty)
{
    /* §4.6: null where the schema does not permit it is absent */
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                         "\"params\":null}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
}
END_TEST

START_TEST(envelope_unknown_members_are_ignored)
{
    /* §4.6: unknown fields MUST be ignored, never rejected */
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                         "\"x-extra\":{\"a\":[1]},\"params\":{\"_meta\":"
                         "{\"unknown\":1},\"other\":2}}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
}
END_TEST

START_TEST(envelope_unparseable_is_parse_error_with_null_id)
{
    static const char *const bad[] = { "{", "{\"jsonrpc\":\"2.0\",}", "nul",
                                       "[1,]", "{\"a\":1}x", "\"\\uD800\"" };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        const rcp_json *v = reply(bad[i]);
        ck_assert_int_eq(num(v, "error.code"), RCP_PARSE_ERROR);
        ck_assert_int_eq(at(v, "id")->type, RCP_JSON_NULL);
    }
}
END_TEST

START_TEST(envelope_non_object_frame_is_invalid_request)
{
    const rcp_json *v = reply("42");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_REQUEST);
    ck_assert_int_eq(at(v, "id")->type, RCP_JSON_NULL);
}
END_TEST

START_TEST(envelope_duplicate_names_last_one_wins)
{
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":"
                         "\"nope\",\"method\":\"ping\"}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n");
    /* the envelope is read in one pass (rcp.c read_envelope): every
    ** member last-wins, params null is absent, near names are not it */
    ck_assert_str_eq(ask("{\"jsonrpc\":\"1.0\",\"i\":7,\"ids\":8,\"id\":3,"
                         "\"params\":5,\"method\":\"ping\",\"methods\":1,"
                         "\"params\":null,\"jsonrpc\":\"2.0\"}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n");
    ck_assert_str_eq(ask("[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\","
                         "\"params\":{},\"id\":5}]"),
                     "[{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}]\n");
    ck_assert(strstr(ask("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\","
                         "\"params\":null,\"params\":[1]}"), "-32600"));
}
END_TEST

/* MARK: - §4.5 notifications ---------------------------------------------- */

START_TEST(notification_is_never_answered)
{
    static const char *const notes[] = {
        "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":[1,2]}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"no/such\"}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"retrieve\",\"params\":5}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}",
        ("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancel\","
         "\"params\":{\"id\":99}}"),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancel\"}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{}}",
    };
    size_t i;
    for (i = 0; i < sizeof notes / sizeof *notes; i++)
        ck_assert_str_eq(ask(notes[i]), "");
    /* ... and a notification does not initialize anything */
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"retrieve\"}",
                RCP_NOT_INITIALIZED);
}
END_TEST

START_TEST(notification_cancel_with_an_id_is_invalid_request)
{
    /* §7.14 (ed.2): a cancel carrying an id is malformed */
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                              "\"notifications/cancel\",\"params\":{\"id\":1}"
                              "}");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_REQUEST);
    ck_assert_int_eq(num(v, "id"), 3);
}
END_TEST

/* MARK: - §13 lifecycle -------------------------------------------------- */

START_TEST(lifecycle_requests_before_initialize_get_32001)
{
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"retrieve\","
                "\"params\":{\"query\":\"q\",\"k\":1}}", RCP_NOT_INITIALIZED);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"embed\"}",
                RCP_NOT_INITIALIZED);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no/such\"}",
                RCP_NOT_INITIALIZED);
}
END_TEST

START_TEST(lifecycle_info_ping_shutdown_callable_before_initialize)
{
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"info\"}");
    ck_assert_int_eq(num(v, "result.protocolVersion"), 1);
    ck_assert(is_str(v, "result.server.name", "rcp"));
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n");
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                         "\"shutdown\",\"params\":{}}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n");
}
END_TEST

START_TEST(lifecycle_failed_negotiation_leaves_session_uninitialized)
{
    /* §13: "Successful" is load-bearing; a retry MUST be accepted */
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                "\"params\":{\"protocolVersion\":0}}", RCP_VERSION_MISMATCH);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"retrieve\"}",
                RCP_NOT_INITIALIZED);
    init_session();
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"retrieve\"}",
                RCP_CAPABILITY_MISSING);
}
END_TEST

START_TEST(lifecycle_invalid_initialize_params_leave_uninitialized)
{
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"initialize\",\"params\":{\"protocolVersion\""
                              ":\"1\"}}");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_PARAMS);
    ck_assert(is_str(v, "error.data.field", "protocolVersion"));
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}",
                RCP_INVALID_PARAMS);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                "\"params\":{\"protocolVersion\":1.5}}", RCP_INVALID_PARAMS);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                "\"params\":{\"protocolVersion\":1,\"client\":7}}",
                RCP_INVALID_PARAMS);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"retrieve\"}",
                RCP_NOT_INITIALIZED);
}
END_TEST

START_TEST(lifecycle_version_negotiates_to_the_minimum)
{
    /* §7.1: min(client, server); a newer client gets 1 */
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"initialize\",\"params\":{\"protocolVersion\""
                              ":7,\"client\":{\"name\":\"t\",\"version\":"
                              "\"1\"},\"capabilities\":{\"x-new\":{}}}}");
    ck_assert_int_eq(num(v, "result.protocolVersion"), 1);
    ck_assert(at(v, "result.capabilities") != NULL);
}
END_TEST

START_TEST(lifecycle_second_initialize_is_invalid_request)
{
    init_session();
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\","
                "\"params\":{\"protocolVersion\":1}}", RCP_INVALID_REQUEST);
}
END_TEST

START_TEST(lifecycle_info_reports_the_session_capabilities)
{
    /* §13.2: info MUST report the same set as initialize */
    char first[4096];
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"initialize\",\"params\":{\"protocolVersion\""
                              ":1}}");
    const char *p = strstr(OUT.data, "\"capabilities\":");
    (void)v;
    ck_assert_ptr_nonnull(p);
    snprintf(first, sizeof first, "%s", p);
    ask("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"info\"}");
    ck_assert_str_eq(strstr(OUT.data, "\"capabilities\":"), first);
}
END_TEST

START_TEST(lifecycle_nothing_is_processed_after_shutdown)
{
    static const char bye[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"shutdown\"}";
    ck_assert_int_eq(rcp_server_handle(S, bye, sizeof bye - 1, &OUT), 1);
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"),
                     "");
}
END_TEST

/* MARK: - §7, §12 gating ------------------------------------------------- */

START_TEST(gating_undefined_method_is_32004)
{
    init_session();
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"search\"}",
                RCP_UNKNOWN_METHOD);
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"Retrieve\"}",
                RCP_UNKNOWN_METHOD);   /* §4.6: case-sensitive */
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x-acme/foo\"}",
                RCP_UNKNOWN_METHOD);
}
END_TEST

START_TEST(gating_defined_but_unadvertised_is_32003)
{
    static const char *const defined[] = {
        "embed", "rerank", "retrieve", "index/add", "index/delete",
        "embed/sparse", "embed/multi", "query/transform", "graph",
        "catalog/list", "feedback", "memory/build", "memory/recall" };
    char frame[128];
    size_t i;
    init_session();
    for (i = 0; i < sizeof defined / sizeof *defined; i++) {
        sprintf(frame, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"}",
                defined[i]);
        expect_code(frame, RCP_CAPABILITY_MISSING);
    }
}
END_TEST

START_TEST(gating_vendor_method_exists_only_with_debug)
{
    init_session();
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x-rcp/sleep\","
                "\"params\":{\"ms\":0}}", RCP_UNKNOWN_METHOD);
    ck_assert_ptr_null(strstr(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                                  "\"info\"}"), "x-rcp"));
}
END_TEST

START_TEST(gating_debug_advertises_and_serves_x_rcp_sleep)
{
    const rcp_json *v;
    init_session();
    ck_assert_ptr_nonnull(strstr(OUT.data, "\"x-rcp\""));
    v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x-rcp/sleep\","
              "\"params\":{\"ms\":1}}");
    ck_assert_int_eq(num(v, "result.slept"), 1);
    v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x-rcp/sleep\","
              "\"params\":{\"ms\":-1}}");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_PARAMS);
    ck_assert(is_str(v, "error.data.field", "ms"));
}
END_TEST

START_TEST(gating_meta_deadline_and_token_are_validated)
{
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"ping\",\"params\":{\"_meta\":{\"deadlineMs\""
                              ":\"soon\"}}}");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_PARAMS);
    ck_assert(is_str(v, "error.data.field", "_meta.deadlineMs"));
    v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
              "{\"_meta\":{\"progressToken\":1.5}}}");
    ck_assert(is_str(v, "error.data.field", "_meta.progressToken"));
    v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
              "{\"_meta\":[]}}");
    ck_assert(is_str(v, "error.data.field", "_meta"));
}
END_TEST

START_TEST(deadline_already_elapsed_is_32014)
{
    /* §13.1, §16.2: deadlineMs is milliseconds remaining */
    init_session();
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x-rcp/sleep\","
                "\"params\":{\"ms\":5000,\"_meta\":{\"deadlineMs\":20}}}",
                RCP_TIMEOUT);
}
END_TEST

START_TEST(progress_token_over_the_cap_is_32602)
{
    /* §9: every progress frame echoes the token, so its size is capped */
    char *f;
    f = frame_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                   "\"params\":{\"_meta\":{\"progressToken\":\"%s\"}}}",
                   RCP_MAX_TOKEN_BYTES + 1, 't');
    expect_field_free(f, "_meta.progressToken");
    f = frame_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                   "\"params\":{\"_meta\":{\"progressToken\":1.%s}}}",
                   RCP_MAX_TOKEN_BYTES, '0');    /* an integer, long text */
    expect_field_free(f, "_meta.progressToken");
    f = frame_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                   "\"params\":{\"_meta\":{\"progressToken\":\"%s\"}}}",
                   RCP_MAX_TOKEN_BYTES, 't');
    ck_assert_ptr_nonnull(at(reply(f), "result"));
    free(f);
}
END_TEST
/* MARK: - §7.15 ping ----------------------------------------------------- */

START_TEST(ping_echoes_any_nonce_exactly)
{
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                         "\"params\":{\"nonce\":123456789012345678901234}}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"nonce\":"
                     "123456789012345678901234}}\n");
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                         "\"params\":{\"nonce\":\"n\\u00f6\\n\"}}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"nonce\":"
                     "\"n\xc3\xb6\\n\"}}\n");
    ck_assert_str_eq(ask("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                         "\"params\":{\"nonce\":-1.25E-7}}"),
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"nonce\":"
                     "-1.25E-7}}\n");
}
END_TEST

START_TEST(ping_rejects_a_nonce_that_is_not_string_or_number)
{
    const rcp_json *v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"ping\",\"params\":{\"nonce\":{\"a\":1}}}");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_PARAMS);
    ck_assert(is_str(v, "error.data.field", "nonce"));
}
END_TEST

/* MARK: - §11 batching --------------------------------------------------- */

START_TEST(batch_one_response_per_request_and_none_for_notifications)
{
    const rcp_json *v = reply(
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
        "{\"nonce\":1}},{\"jsonrpc\":\"2.0\",\"method\":"
        "\"notifications/cancel\",\"params\":{\"id\":9}},{\"jsonrpc\":\"2.0\","
        "\"id\":2,\"method\":\"info\",\"params\":{}}]");
    ck_assert_int_eq(v->type, RCP_JSON_ARRAY);
    ck_assert_uint_eq(v->n, 2);
    ck_assert_int_eq(num(v, "0.id") + num(v, "1.id"), 3);
}
END_TEST

START_TEST(batch_only_notifications_returns_nothing)
{
    ck_assert_str_eq(ask("[{\"jsonrpc\":\"2.0\",\"method\":\"ping\"},"
                         "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]"), "");
}
END_TEST

START_TEST(batch_empty_array_is_one_non_array_invalid_request)
{
    const rcp_json *v = reply("[]");
    ck_assert_int_eq(v->type, RCP_JSON_OBJECT);
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_REQUEST);
    ck_assert_int_eq(at(v, "id")->type, RCP_JSON_NULL);
    v = reply(" [ ] ");
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_REQUEST);
}
END_TEST

START_TEST(batch_malformed_member_gets_null_id_entry_others_run)
{
    const rcp_json *v = reply("[1,{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
                              "\"ping\"},[],{\"foo\":\"bar\"}]");
    size_t i, nulls = 0, pongs = 0;
    ck_assert_uint_eq(v->n, 4);
    for (i = 0; i < v->n; i++) {
        const rcp_json *m = &v->kids[i];
        if (at(m, "id")->type == RCP_JSON_NULL) {
            ck_assert_int_eq(num(m, "error.code"), RCP_INVALID_REQUEST);
            nulls++;
        } else {
            ck_assert_int_eq(num(m, "id"), 7);
            ck_assert_ptr_nonnull(at(m, "result"));
            pongs++;
        }
    }
    ck_assert_uint_eq(nulls, 3);
    ck_assert_uint_eq(pongs, 1);
}
END_TEST

START_TEST(batch_gating_applies_per_member)
{
    /* §11: batching composes with gating exactly as singletons do */
    const rcp_json *v = reply(
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"retrieve\"},"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":"
        "{\"protocolVersion\":1}},{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
        "\"retrieve\"},{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nope\"}]");
    size_t i;
    ck_assert_uint_eq(v->n, 4);
    for (i = 0; i < v->n; i++) {
        const rcp_json *m = &v->kids[i];
        long long id = num(m, "id");
        if (id == 1)
            ck_assert_int_eq(num(m, "error.code"), RCP_NOT_INITIALIZED);
        else if (id == 2)
            ck_assert_ptr_nonnull(at(m, "result"));
        else if (id == 3)
            ck_assert_int_eq(num(m, "error.code"), RCP_CAPABILITY_MISSING);
        else
            ck_assert_int_eq(num(m, "error.code"), RCP_UNKNOWN_METHOD);
    }
}
END_TEST

START_TEST(batch_over_the_cap_is_32602)
{
    /* the debug fixture caps batches at 3 */
    const rcp_json *v = reply("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                              "\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,"
                              "\"method\":\"ping\"},{\"jsonrpc\":\"2.0\","
                              "\"id\":3,\"method\":\"ping\"},{\"jsonrpc\":"
                              "\"2.0\",\"id\":4,\"method\":\"ping\"}]");
    ck_assert_int_eq(v->type, RCP_JSON_OBJECT);
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_PARAMS);
    ck_assert_int_eq(at(v, "id")->type, RCP_JSON_NULL);
}
END_TEST

START_TEST(batch_cancel_member_cancels_a_sibling)
{
    /* §11 + §7.14: every member of a received batch is in flight */
    const rcp_json *v;
    init_session();
    v = reply("[{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"x-rcp/sleep\","
              "\"params\":{\"ms\":60000}},{\"jsonrpc\":\"2.0\",\"method\":"
              "\"notifications/cancel\",\"params\":{\"id\":\"s\"}}]");
    ck_assert_uint_eq(v->n, 1);
    ck_assert_int_eq(num(v, "0.error.code"), RCP_CANCELLED);
    ck_assert(is_str(v, "0.id", "s"));
}
END_TEST

START_TEST(cancel_matches_ids_by_exact_value)
{
    /* §4.7 same type and value: 1.0 names 1; ...992 never names ...993 */
    const rcp_json *v;
    init_session();
    v = reply("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x-rcp/sleep\","
              "\"params\":{\"ms\":60000}},{\"jsonrpc\":\"2.0\",\"method\":"
              "\"notifications/cancel\",\"params\":{\"id\":1.0}}]");
    ck_assert_int_eq(num(v, "0.error.code"), RCP_CANCELLED);
    v = reply("[{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":"
              "\"x-rcp/sleep\",\"params\":{\"ms\":1}},{\"jsonrpc\":\"2.0\","
              "\"method\":\"notifications/cancel\",\"params\":{\"id\":"
              "9007199254740992}},{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":"
              "\"x-rcp/sleep\",\"params\":{\"ms\":1}}]");
    ck_assert_int_eq(num(v, "0.result.slept"), 1);
    ck_assert_int_eq(num(v, "1.result.slept"), 1);   /* "1" is not 1 */
}
END_TEST

START_TEST(batch_member_error_never_fails_the_others)
{
    const rcp_json *v = reply(
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
        "{\"nonce\":[]}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\","
        "\"params\":{\"nonce\":\"ok\"}}]");
    ck_assert_uint_eq(v->n, 2);
    ck_assert(is_str(v, num(v, "0.id") == 2 ? "0.result.nonce"
                                            : "1.result.nonce", "ok"));
}
END_TEST


/* §15.5, §12: a frame over the server's memory limit is too large
** (-32013); a frame that met a failed allocation is the server's trouble
** (-32603), whatever the limit.  Both have id null: the id was not read. */
START_TEST(parse_over_the_limit_is_32013_but_out_of_memory_is_32603)
{
    rcp_server_opts o;
    char *frame = malloc(40100);
    size_t n = 0, i;
    const rcp_json *v;
    ck_assert_ptr_nonnull(frame);
    n += (size_t)sprintf(frame, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                         "\"ping\",\"pad\":[");
    for (i = 0; i < 20000; i++)
        n += (size_t)sprintf(frame + n, "%s0", i ? "," : "");
    n += (size_t)sprintf(frame + n, "]}");
    rcp_server_free(S);
    memset(&o, 0, sizeof o);
    o.max_request_memory = 64 << 10;
    S = rcp_server_new(&o);
    ck_assert_ptr_nonnull(S);
    v = reply(frame);
    ck_assert_int_eq(num(v, "error.code"), RCP_PAYLOAD_TOO_LARGE);
    ck_assert(at(v, "id") && at(v, "id")->type == RCP_JSON_NULL);
    rcp_server_free(S);
    o.max_request_memory = 0;           /* 256 MiB: far above the need */
    S = rcp_server_new(&o);
    ck_assert_ptr_nonnull(S);
    OOM_AT = 1;
    OOM_CALLS = 0;
    rcp_set_allocator(oom_alloc, NULL);
    OUT.len = 0;
    rcp_server_handle(S, frame, n, &OUT);
    rcp_set_allocator(NULL, NULL);
    ck_assert_int_ge(OOM_CALLS, 1);
    v = rcp_json_parse(&A, OUT.data, OUT.len - 1, 0, NULL);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(num(v, "error.code"), RCP_INTERNAL_ERROR);
    ck_assert(at(v, "id") && at(v, "id")->type == RCP_JSON_NULL);
    v = reply(frame);                   /* and the same frame runs now */
    ck_assert(at(v, "result") != NULL);
    free(frame);
}
END_TEST

/* MARK: - the backend seam: a backend of the test's own ------------------ */

/* The smallest real backend: it serves embed with a toy embedder (input
** i's vector is [its length in bytes, its count of spaces]), doing
** options.steps checkpoints first, and offers whatever TB.offers says;
** every other row it is asked to serve answers {}.  It records what the
** protocol did with it.  The protocol knows it only through its table --
** which is the point. */
static struct tb {
    unsigned long offers, partial;
    int calls, closed, described;
    int flushes, intakes, handled_before_flush;
    const char *peek;           /* a frame intake shows the protocol */
} TB;

static unsigned long tb_offers(const void *ud)
{
    return ((const struct tb *)ud)->offers;
}

static unsigned long tb_partial(const void *ud)
{
    return ((const struct tb *)ud)->partial;
}

static void tb_describe(const void *ud, int cap, rcp_jw *w)
{
    (void)ud;
    TB.described++;
    rcp_jw_obj(w);
    rcp_jw_key(w, "row");
    rcp_jw_int(w, cap);
    rcp_jw_obj_end(w);
}

static int tb_embed(void *ud, rcp_call *c)
{
    const rcp_json *in, *opt;
    rcp_jw *w = call_w(c);
    int64_t steps, i, j, spaces;
    int rc;
    ((struct tb *)ud)->calls++;
    if ((rc = call_need(c, call_params(c), "inputs", &in)))
        return rc;
    if (in->type != RCP_JSON_ARRAY)
        return call_fail(c, RCP_INVALID_PARAMS, "inputs", NULL,
                         "inputs must be an array");
    if ((rc = call_obj(c, call_params(c), "options", &opt))
        || (rc = call_int(c, opt, "options.steps", 0, 100, 0, &steps)))
        return rc;
    for (i = 0; i < steps; i++)
        if ((rc = call_checkpoint(c, (double)(i + 1) / (double)(steps + 1),
                                  "toy")))
            return call_fail(c, rc, NULL, NULL, "stopped at step %lld",
                             (long long)i);
    rcp_jw_obj(w);
    rcp_jw_key(w, "vectors");
    rcp_jw_arr(w);
    for (i = 0; i < (int64_t)in->n; i++) {
        const rcp_json *t = &in->kids[i];
        if (t->type != RCP_JSON_STRING)
            return call_fail(c, RCP_INVALID_PARAMS, "inputs", NULL,
                             "inputs[%lld] must be a string", (long long)i);
        for (j = 0, spaces = 0; j < (int64_t)t->n; j++)
            spaces += t->s[j] == ' ';
        rcp_jw_arr(w);
        rcp_jw_int(w, (int64_t)t->n);
        rcp_jw_int(w, spaces);
        rcp_jw_arr_end(w);
    }
    rcp_jw_arr_end(w);
    rcp_jw_obj_end(w);
    return 0;
}

static int tb_row(void *ud, rcp_call *c)
{
    ((struct tb *)ud)->calls++;
    rcp_jw_obj(call_w(c));
    rcp_jw_obj_end(call_w(c));
    return 0;
}

static void tb_close(void *ud)
{
    ((struct tb *)ud)->closed++;
}

static const proto_backend TB_TABLE = {
    tb_offers, tb_partial, tb_describe,
    { tb_embed, tb_row, tb_row, tb_row, tb_row, tb_row, tb_row, tb_row,
      tb_row, tb_row, tb_row, tb_row, tb_row },
    tb_close
};

/* TB_TABLE without index/delete: a backend that offers index but does not
** serve all of it. */
static const proto_backend TB_PARTIAL = {
    tb_offers, tb_partial, tb_describe,
    { tb_embed, tb_row, tb_row, tb_row, tb_row, tb_row, tb_row, tb_row,
      NULL, tb_row, tb_row, tb_row, tb_row },
    tb_close
};

static rcp_server *tb_server_partly(unsigned long offers,
                                    unsigned long partial, int debug)
{
    rcp_server_opts o;
    memset(&o, 0, sizeof o);
    o.debug = debug;
    o.deadline_ms = -1;
    memset(&TB, 0, sizeof TB);
    TB.offers = offers;
    TB.partial = partial;
    return proto_server_new(&o, &TB_TABLE, &TB);
}

static rcp_server *tb_server(unsigned long offers, int debug)
{
    return tb_server_partly(offers, 0, debug);
}

static void setup_backend(void)
{
    S = tb_server(PROTO_CAP(PROTO_CAP_EMBED) | PROTO_CAP(PROTO_CAP_STREAMING),
                  0);
    ck_assert_ptr_nonnull(S);
    rcp_buf_init(&OUT);
    rcp_arena_init(&A, 0);
}

#define TOY(id, params) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":" \
                        "\"embed\",\"params\":" params "}"

/* §7: the rows a backend serves are served; every other row RCP/1 defines
** is -32003 (not advertised), an undefined method -32004, and before
** initialize nothing gated runs (-32001). */
START_TEST(backend_serves_its_rows_and_every_other_row_is_32003)
{
    static const char *const others[] = {
        "rerank", "retrieve", "index/add", "index/delete", "embed/sparse",
        "embed/multi", "query/transform", "graph", "catalog/list",
        "feedback", "memory/build", "memory/recall" };
    char frame[128];
    const rcp_json *v;
    size_t i;
    expect_code(TOY(1, "{\"inputs\":[\"a b\"]}"), RCP_NOT_INITIALIZED);
    ck_assert_int_eq(TB.calls, 0);
    init_session();
    v = reply(TOY(2, "{\"inputs\":[\"a b\",\"\"]}"));
    ck_assert_int_eq(num(v, "result.vectors.0.0"), 3);
    ck_assert_int_eq(num(v, "result.vectors.0.1"), 1);
    ck_assert_int_eq(num(v, "result.vectors.1.0"), 0);
    ck_assert_int_eq(TB.calls, 1);
    for (i = 0; i < sizeof others / sizeof *others; i++) {
        sprintf(frame, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"%s\"}",
                others[i]);
        expect_code(frame, RCP_CAPABILITY_MISSING);
    }
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"embeds\"}",
                RCP_UNKNOWN_METHOD);
    ck_assert_int_eq(TB.calls, 1);
}
END_TEST

/* §6: presence => supported.  The capabilities are exactly what the
** backend offers, each with the value it describes; info and initialize
** agree (§13.2); the level follows from the set (embed is a retrieval
** capability: L0). */
START_TEST(backend_capabilities_are_its_offers_with_its_values)
{
    const rcp_json *v, *caps;
    char first[1024];
    v = reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
              "\"params\":{\"protocolVersion\":1}}");
    caps = at(v, "result.capabilities");
    ck_assert_ptr_nonnull(caps);
    ck_assert_uint_eq(caps->n, 3);     /* and log, the protocol's own */
    ck_assert_int_eq(num(caps, "embed.row"), PROTO_CAP_EMBED);
    ck_assert_int_eq(num(caps, "streaming.row"), PROTO_CAP_STREAMING);
    ck_assert_ptr_nonnull(at(caps, "log.levels"));
    ck_assert(is_str(v, "result._meta.conformance", "L0"));
    snprintf(first, sizeof first, "%s", strstr(OUT.data, "\"capabilities\""));
    ask("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"info\"}");
    ck_assert_str_eq(strstr(OUT.data, "\"capabilities\""), first);
}
END_TEST

/* The level one server declares for a set of capabilities. */
static const char *level_of(unsigned long offers, unsigned long partial)
{
    static char level[8];
    rcp_server *s = tb_server_partly(offers, partial, 0);
    rcp_buf out;
    rcp_arena a;
    const rcp_json *v, *l;
    static const char info[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                               "\"info\"}";
    ck_assert_ptr_nonnull(s);
    rcp_buf_init(&out);
    rcp_arena_init(&a, 0);
    rcp_server_handle(s, info, sizeof info - 1, &out);
    v = rcp_json_parse(&a, out.data, out.len - 1, 0, NULL);
    ck_assert_ptr_nonnull(v);
    l = at(v, "result._meta.conformance");
    snprintf(level, sizeof level, "%.*s", l ? (int)l->n : 4,
             l ? l->s : "none");
    rcp_buf_free(&out);
    rcp_arena_free(&a);
    rcp_server_free(s);
    return level;
}

/* §14: one capability table decides the level for any backend: L0 needs
** a retrieval capability, L1 retrieve + filter + citations served whole,
** L2 two of the §14.3 surfaces besides; none is declared rather than
** overclaimed. */
START_TEST(conformance_level_follows_the_capability_table_for_any_backend)
{
#define C(x) PROTO_CAP(PROTO_CAP_##x)
    unsigned long l1 = C(RETRIEVE) | C(FILTER) | C(CITATIONS);
    ck_assert_str_eq(level_of(0, 0), "none");
    ck_assert_str_eq(level_of(C(INDEX) | C(STREAMING), 0), "none");
    ck_assert_str_eq(level_of(C(EMBED), 0), "L0");
    ck_assert_str_eq(level_of(C(GRAPH), 0), "L0");
    ck_assert_str_eq(level_of(C(RETRIEVE) | C(FILTER), 0), "L0");
    ck_assert_str_eq(level_of(l1, 0), "L1");
    /* every server serves log (§17.1, the protocol's own): one more §14.3
    ** surface is two */
    ck_assert_str_eq(level_of(l1 | C(STREAMING), 0), "L2");
    ck_assert_str_eq(level_of(l1 | C(STREAMING) | C(PAGINATION), 0), "L2");
    ck_assert_str_eq(level_of(l1 | C(RERANK) | C(LOG), 0), "L2");
    ck_assert_str_eq(level_of(l1 | C(LOG), 0), "L1");  /* log is not theirs */
    /* what a backend serves in part proves no level that asks for it
    ** whole (§14.2: retrieve without its three modes, make tiny's) */
    ck_assert_str_eq(level_of(l1 | C(STREAMING) | C(PAGINATION),
                              C(RETRIEVE)), "L0");
    ck_assert_str_eq(level_of(C(EMBED) | C(RETRIEVE), C(RETRIEVE)), "L0");
    /* x-rcp is the protocol's own: a backend cannot make it appear */
    ck_assert_str_eq(level_of(C(X_RCP), 0), "none");
#undef C
}
END_TEST

/* §12.1: the parameter readers name the whole path in error.data.field,
** give the default when a member is absent, and treat null as absent
** (§4.6). */
START_TEST(readers_name_the_field_path_and_default_what_is_absent)
{
    const rcp_json *v;
    init_session();
    v = reply(TOY(1, "{}"));
    ck_assert_int_eq(num(v, "error.code"), RCP_INVALID_PARAMS);
    ck_assert(is_str(v, "error.data.field", "inputs"));
    ck_assert(is_str(v, "error.data.detail", "inputs is required"));
    v = reply(TOY(2, "{\"inputs\":[],\"options\":[]}"));
    ck_assert(is_str(v, "error.data.field", "options"));
    ck_assert(is_str(v, "error.data.detail", "options must be an object"));
    v = reply(TOY(3, "{\"inputs\":[],\"options\":{\"steps\":\"x\"}}"));
    ck_assert(is_str(v, "error.data.field", "options.steps"));
    v = reply(TOY(4, "{\"inputs\":[],\"options\":{\"steps\":101}}"));
    ck_assert(is_str(v, "error.data.field", "options.steps"));
    v = reply(TOY(5, "{\"inputs\":[\"x\"],\"options\":{\"steps\":null}}"));
    ck_assert_int_eq(num(v, "result.vectors.0.0"), 1);
    v = reply(TOY(6, "{\"inputs\":[\"x\"],\"options\":null}"));
    ck_assert_int_eq(num(v, "result.vectors.0.0"), 1);
}
END_TEST

/* §9: a backend's checkpoints become progress frames, rising, before the
** answer -- only for a request with a token, and only while streaming is
** offered. */
START_TEST(backend_checkpoints_are_progress_only_with_a_token_and_streaming)
{
    const rcp_json *v[8];
    size_t n, i;
    init_session();
    n = lines_of(ask(TOY(1, "{\"inputs\":[\"x\"],\"options\":{\"steps\":4},"
                               "\"_meta\":{\"progressToken\":7}}")), v, 8);
    ck_assert_uint_ge(n, 3);
    for (i = 0; i + 1 < n; i++) {
        ck_assert(is_str(v[i], "method", "notifications/progress"));
        ck_assert_int_eq(num(v[i], "params.progressToken"), 7);
        ck_assert(is_str(v[i], "params.stage", "toy"));
    }
    ck_assert_int_eq(num(v[n - 1], "id"), 1);
    n = lines_of(ask(TOY(2, "{\"inputs\":[\"x\"],\"options\":{\"steps\":4}}")),
                 v, 8);
    ck_assert_uint_eq(n, 1);
    rcp_server_free(S);
    S = tb_server(PROTO_CAP(PROTO_CAP_EMBED), 0);
    init_session();
    n = lines_of(ask(TOY(3, "{\"inputs\":[\"x\"],\"options\":{\"steps\":4},"
                               "\"_meta\":{\"progressToken\":7}}")), v, 8);
    ck_assert_uint_eq(n, 1);
}
END_TEST

/* §7.14, §13.1: a request cancelled or out of time before its turn never
** reaches the backend. */
START_TEST(cancelled_or_expired_requests_never_reach_the_backend)
{
    const rcp_json *v;
    init_session();
    v = reply("[" TOY("t", "{\"inputs\":[]}") ",{\"jsonrpc\":\"2.0\","
              "\"method\":\"notifications/cancel\",\"params\":"
              "{\"id\":\"t\"}}]");
    ck_assert_int_eq(num(v, "0.error.code"), RCP_CANCELLED);
    expect_code(TOY(2, "{\"inputs\":[],\"_meta\":{\"deadlineMs\":0}}"),
                RCP_TIMEOUT);
    ck_assert_int_eq(TB.calls, 0);
}
END_TEST

/* The server owns the backend's state: closed once when the server is
** freed, and when the server cannot be made at all. */
START_TEST(backend_is_closed_with_the_server_and_when_it_cannot_be_made)
{
    rcp_server_opts o;
    rcp_server_free(S);
    S = NULL;
    ck_assert_int_eq(TB.closed, 1);
    memset(&o, 0, sizeof o);
    TB.closed = 0;
    OOM_AT = 1;
    OOM_CALLS = 0;
    rcp_set_allocator(oom_alloc, NULL);
    ck_assert_ptr_null(proto_server_new(&o, &TB_TABLE, &TB));
    rcp_set_allocator(NULL, NULL);
    ck_assert_int_eq(TB.closed, 1);
}
END_TEST

#ifndef NDEBUG
/* A capability advertised is one fully served: a backend that offers
** index without a handler for index/delete is a programming error the
** protocol refuses at once (an assert), never a -32003 found in use. */
START_TEST(backend_offering_a_capability_it_does_not_fully_serve_aborts)
{
    rcp_server_opts o;
    memset(&o, 0, sizeof o);
    TB.offers = PROTO_CAP(PROTO_CAP_INDEX);
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
    (void)proto_server_new(&o, &TB_PARTIAL, &TB);
}
END_TEST
#endif

/* MARK: - the transport seam: a hook of the test's own ------------------- */

static void hook_intake(void *ud)
{
    (void)ud;
    TB.intakes++;
    if (TB.peek)
        proto_peek(S, TB.peek, strlen(TB.peek));
}

static void hook_flush(void *ud)
{
    (void)ud;
    TB.flushes++;
    TB.handled_before_flush |= TB.calls > 0;
    rcp_buf_clear(&OUT);
}

static const proto_io HOOK = { NULL, hook_intake, hook_flush, NULL, NULL };

/* What the protocol asks of a transport while a request runs: the queue
** is flushed before a gated method starts (a finished answer never waits
** behind long work) but not for a session method (pings are batched);
** each checkpoint takes in what arrived, and a cancel shown then stops the
** request at its next checkpoint. */
START_TEST(lent_hook_is_flushed_before_gated_work_and_polled_by_checkpoints)
{
    const rcp_json *v;
    init_session();
    proto_lend_io(S, &HOOK);
    reply("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    ck_assert_int_eq(TB.flushes, 0);
    reply(TOY(2, "{\"inputs\":[],\"options\":{\"steps\":3}}"));
    ck_assert_int_eq(TB.flushes, 1);
    ck_assert_int_eq(TB.handled_before_flush, 0);
    ck_assert_int_eq(TB.intakes, 3);
    TB.peek = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancel\","
              "\"params\":{\"id\":3}}";
    v = reply(TOY(3, "{\"inputs\":[],\"options\":{\"steps\":3}}"));
    ck_assert_int_eq(num(v, "error.code"), RCP_CANCELLED);
    ck_assert(is_str(v, "error.data.detail", "stopped at step 0"));
    proto_lend_io(S, NULL);
}
END_TEST

/* A frame the transport could not buffer is answered once, -32603 with id
** null, naming how much was lost; serving goes on. */
START_TEST(unbuffered_frame_is_one_32603_with_a_null_id)
{
    const rcp_json *v;
    OUT.len = 0;
    proto_unbuffered(S, 123456, &OUT);
    v = rcp_json_parse(&A, OUT.data, OUT.len - 1, 0, NULL);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(num(v, "error.code"), RCP_INTERNAL_ERROR);
    ck_assert(at(v, "id") && at(v, "id")->type == RCP_JSON_NULL);
    ck_assert_ptr_nonnull(strstr(OUT.data, "123456 bytes"));
    init_session();
}
END_TEST

/* MARK: - suite ---------------------------------------------------------- */

/* MARK: - §5.2 sessions lent by a transport ----------------------------- */

#define SLEEP0 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x-rcp/sleep\"," \
    "\"params\":{\"ms\":0}}"
#define INIT1 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\"," \
    "\"params\":{\"protocolVersion\":1}}"
#define SHUT "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"shutdown\"}"

START_TEST(lent_implicit_session_needs_no_initialize_and_answers_it_again)
{
    proto_session st;
    memset(&st, 0, sizeof st);
    st.implicit = 1;
    expect_code(SLEEP0, RCP_NOT_INITIALIZED);     /* the server's own */
    proto_use_session(S, &st);
    ck_assert_ptr_nonnull(strstr(ask(SLEEP0), "\"slept\":0"));
    ck_assert_ptr_nonnull(strstr(ask(INIT1), "\"protocolVersion\":1"));
    ck_assert_ptr_nonnull(strstr(ask(INIT1), "\"protocolVersion\":1"));
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\","
                "\"params\":{\"protocolVersion\":0}}", RCP_VERSION_MISMATCH);
    ck_assert_ptr_null(strstr(ask(INIT1), "\"session\":\""));
    proto_use_session(S, NULL);
    expect_code(SLEEP0, RCP_NOT_INITIALIZED);     /* untouched */
}
END_TEST

START_TEST(lent_session_token_is_meta_session_and_shutdown_ends_only_it)
{
    proto_session a;
    const rcp_json *v;
    memset(&a, 0, sizeof a);
    a.token = "tok-123";
    proto_use_session(S, &a);
    v = reply(INIT1);
    ck_assert(is_str(v, "result._meta.session", "tok-123"));
    ck_assert_int_eq(a.initialized, 1);
    expect_code(INIT1, RCP_INVALID_REQUEST);     /* §13: once */
    ck_assert_ptr_null(at(reply("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
                                "\"info\"}"), "result._meta.session"));
    OUT.len = 0;
    ck_assert_int_eq(rcp_server_handle(S, SHUT, strlen(SHUT), &OUT), 1);
    ck_assert_int_eq(a.ended, 1);
    OUT.len = 0;
    ck_assert_int_eq(rcp_server_handle(S, SLEEP0, strlen(SLEEP0), &OUT), 1);
    ck_assert_int_eq((int)OUT.len, 0);            /* that session is over */
    proto_use_session(S, NULL);                   /* the server's is not */
    ck_assert_ptr_nonnull(strstr(ask(INIT1), "\"protocolVersion\":1"));
    ck_assert_ptr_nonnull(strstr(ask(SLEEP0), "\"slept\":0"));
}
END_TEST

/* MARK: - §17.1 notifications/log ---------------------------------------- */

static const char INIT_LOG[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
    "\"initialize\",\"params\":{\"protocolVersion\":1,\"capabilities\":"
    "{\"log\":{}},\"_meta\":{\"logLevel\":\"debug\"}}}";
static const char PING[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
    "\"ping\"}";

START_TEST(log_only_for_a_client_that_opted_in_at_its_level)
{
    /* §7.1 "MUST NOT emit a notification a client did not opt into via
    ** the corresponding capability or per-request handle"; §17.1 honour
    ** _meta.logLevel */
    const rcp_json *v[4];
    char err[256];
    init_session();                     /* no log capability */
    ck_assert_uint_eq(lines_of(ask(PING), v, 4), 1);
    /* a request's own _meta.logLevel opts it in */
    ck_assert_uint_eq(lines_of(ask("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":"
                                   "\"ping\",\"params\":{\"_meta\":{"
                                   "\"logLevel\":\"debug\"}}}"), v, 4), 2);
    ck_assert(is_str(v[0], "method", "notifications/log"));
    ck_assert(is_str(v[0], "params.level", "debug"));
    ck_assert(is_str(v[0], "params.logger", "server"));
    ck_assert_int_eq(num(v[0], "params._meta.requestId"), 6);
    ck_assert_msg(rcp_schema_validate(rcp_schema_rcp1(),
                  "#/$defs/LogNotification", v[0], err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq(num(v[1], "id"), 6);        /* the answer after it */
    expect_code("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":"
                "{\"_meta\":{\"logLevel\":\"loud\"}}}", RCP_INVALID_PARAMS);
    ck_assert(is_str(at(reply("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
                              "\"ping\",\"params\":{\"_meta\":{\"logLevel\":"
                              "7}}}"), "error.data"), "field",
                     "_meta.logLevel"));
}
END_TEST

START_TEST(log_level_from_initialize_filters_and_slow_requests_warn)
{
    const rcp_json *v[4];
    rcp_server_free(S);
    make_server(1, 0);
    /* log advertised without a level: info and above */
    ask("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
        "{\"protocolVersion\":1,\"capabilities\":{\"log\":{}}}}");
    ck_assert_uint_eq(lines_of(ask(PING), v, 4), 1);    /* debug: not sent */
    /* a request slower than a second is a warning */
    ck_assert_uint_eq(lines_of(ask("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":"
                                   "\"x-rcp/sleep\",\"params\":{\"ms\":1050}}"),
                               v, 4), 2);
    ck_assert(is_str(v[0], "params.level", "warning"));
    ck_assert(rcp_json_num(at(v[0], "params.data.latencyMs")) >= 1050);
    rcp_server_free(S);
    make_server(0, 0);
    ask(INIT_LOG);                      /* debug: every answer */
    ck_assert_uint_eq(lines_of(ask(PING), v, 4), 2);
    ck_assert(is_str(v[0], "params.level", "debug"));
    /* errors are logged too, with their code */
    ck_assert_uint_eq(lines_of(ask("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
                                   "\"no/such\"}"), v, 4), 2);
    ck_assert_int_eq(num(v[0], "params.data.code"), RCP_UNKNOWN_METHOD);
}
END_TEST

START_TEST(log_opt_in_is_per_lent_session)
{
    /* over HTTP one server serves many sessions (§5.2): one client's
    ** opt-in (§7.1) is never another's */
    proto_session a, b;
    const rcp_json *v[4];
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    proto_use_session(S, &a);
    ask(INIT_LOG);
    ck_assert_uint_eq(lines_of(ask(PING), v, 4), 2);
    proto_use_session(S, &b);
    ask(INIT1);
    ck_assert_uint_eq(lines_of(ask(PING), v, 4), 1);
    proto_use_session(S, NULL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("rcp");
    TCase *t = tcase_create("protocol");
    TCase *d = tcase_create("debug");
    TCase *b = tcase_create("backend");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_checked_fixture(d, setup_debug, teardown);
    tcase_add_checked_fixture(b, setup_backend, teardown);
    tcase_add_test(d,
        lent_implicit_session_needs_no_initialize_and_answers_it_again);
    tcase_add_test(d,
        lent_session_token_is_meta_session_and_shutdown_ends_only_it);
    tcase_add_test(b, backend_serves_its_rows_and_every_other_row_is_32003);
    tcase_add_test(b, backend_capabilities_are_its_offers_with_its_values);
    tcase_add_test(b,
        conformance_level_follows_the_capability_table_for_any_backend);
    tcase_add_test(b, readers_name_the_field_path_and_default_what_is_absent);
    tcase_add_test(b,
        backend_checkpoints_are_progress_only_with_a_token_and_streaming);
    tcase_add_test(b, cancelled_or_expired_requests_never_reach_the_backend);
    tcase_add_test(b,
        backend_is_closed_with_the_server_and_when_it_cannot_be_made);
#ifndef NDEBUG
    tcase_add_test_raise_signal(b,
        backend_offering_a_capability_it_does_not_fully_serve_aborts,
        SIGABRT);
#endif
    tcase_add_test(b,
        lent_hook_is_flushed_before_gated_work_and_polled_by_checkpoints);
    tcase_add_test(b, unbuffered_frame_is_one_32603_with_a_null_id);
    tcase_add_test(t, envelope_id_is_echoed_byte_for_byte);
    tcase_add_test(t, log_only_for_a_client_that_opted_in_at_its_level);
    tcase_add_test(t, log_opt_in_is_per_lent_session);
    tcase_add_test(t, log_level_from_initialize_filters_and_slow_requests_warn);
    tcase_add_test(t, envelope_jsonrpc_must_be_2_0);
    tcase_add_test(t, envelope_invalid_id_gets_null_id);
    tcase_add_test(t, envelope_method_must_be_a_string);
    tcase_add_test(t, envelope_params_must_be_an_object);
    tcase_add_test(t, envelope_params_null_or_absent_mean_empty);
    tcase_add_test(t, envelope_unknown_members_are_ignored);
    tcase_add_test(t, envelope_unparseable_is_parse_error_with_null_id);
    tcase_add_test(t, envelope_non_object_frame_is_invalid_request);
    tcase_add_test(t, envelope_duplicate_names_last_one_wins);
    tcase_add_test(t, notification_is_never_answered);
    tcase_add_test(t, notification_cancel_with_an_id_is_invalid_request);
    tcase_add_test(t, lifecycle_requests_before_initialize_get_32001);
    tcase_add_test(t, lifecycle_info_ping_shutdown_callable_before_initialize);
    tcase_add_test(t,
                   lifecycle_failed_negotiation_leaves_session_uninitialized);
    tcase_add_test(t, lifecycle_invalid_initialize_params_leave_uninitialized);
    tcase_add_test(t, lifecycle_version_negotiates_to_the_minimum);
    tcase_add_test(t, lifecycle_second_initialize_is_invalid_request);
    tcase_add_test(t, lifecycle_info_reports_the_session_capabilities);
    tcase_add_test(t, lifecycle_nothing_is_processed_after_shutdown);
    tcase_add_test(t, gating_undefined_method_is_32004);
    tcase_add_test(t, gating_defined_but_unadvertised_is_32003);
    tcase_add_test(t, gating_vendor_method_exists_only_with_debug);
    tcase_add_test(t, gating_meta_deadline_and_token_are_validated);
    tcase_add_test(t, progress_token_over_the_cap_is_32602);
    tcase_add_test(t, ping_echoes_any_nonce_exactly);
    tcase_add_test(t, ping_rejects_a_nonce_that_is_not_string_or_number);
    tcase_add_test(t,
                   batch_one_response_per_request_and_none_for_notifications);
    tcase_add_test(t, batch_only_notifications_returns_nothing);
    tcase_add_test(t, batch_empty_array_is_one_non_array_invalid_request);
    tcase_add_test(t, batch_malformed_member_gets_null_id_entry_others_run);
    tcase_add_test(t, batch_gating_applies_per_member);
    tcase_add_test(t, batch_member_error_never_fails_the_others);
    tcase_add_test(t, parse_over_the_limit_is_32013_but_out_of_memory_is_32603);
    tcase_add_test(d, gating_debug_advertises_and_serves_x_rcp_sleep);
    tcase_add_test(d, deadline_already_elapsed_is_32014);
    tcase_add_test(d, batch_over_the_cap_is_32602);
    tcase_add_test(d, batch_cancel_member_cancels_a_sibling);
    tcase_add_test(d, cancel_matches_ids_by_exact_value);

    suite_add_tcase(s, t);
    suite_add_tcase(s, d);
    suite_add_tcase(s, b);
    return s;
}

TEST_MAIN(make_suite)
