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
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancel\","
        "\"params\":{\"id\":99}}",
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

/* MARK: - suite ---------------------------------------------------------- */

static Suite *make_suite(void)
{
    Suite *s = suite_create("rcp");
    TCase *t = tcase_create("protocol");
    TCase *d = tcase_create("debug");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_checked_fixture(d, setup_debug, teardown);
    tcase_add_test(t, envelope_id_is_echoed_byte_for_byte);
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
    return s;
}

TEST_MAIN(make_suite)
