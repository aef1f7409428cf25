/*
** libclient.c -- a program built against an installed librcp, the way a
** user builds one:  cc libclient.c $(pkg-config --cflags --libs rcp)
** (tests/test_make.sh builds it static and shared and runs it).
**
**   libclient [SERVER ARGS...]
**
** It uses each part of the library: JSON and the vector kernels, the
** engine and the server in-process (initialize, retrieve), and, given a
** server command, the client over stdio (initialize, ping).  Prints one
** line per part; exit status 0 when all worked.
*/
#include <rcp.h>

#include <stdio.h>
#include <string.h>

static const char INIT[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
    "\"initialize\",\"params\":{\"protocolVersion\":1}}";
static const char RETRIEVE[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
    "\"retrieve\",\"params\":{\"query\":\"quick fox\",\"k\":1}}";

static int json_and_vectors(void)
{
    static const float a[3] = { 1, 2, 3 }, b[3] = { 4, 5, 6 };
    rcp_arena ar;
    const rcp_json *v;
    int64_t n = 0;
    rcp_arena_init(&ar, 0);
    v = rcp_json_parse(&ar, "{\"n\":42}", 8, 0, NULL);
    if (v)
        rcp_json_int(rcp_json_get(v, "n"), &n);
    printf("json: n=%ld; vectors: dot=%g on %s\n", (long)n,
           rcp_vec_dot(a, b, 3), rcp_vec_path());
    rcp_arena_free(&ar);
    return n == 42 ? 0 : 1;
}

static int in_process(void)
{
    rcp_model_opts mo;
    rcp_server_opts so;
    rcp_model *m;
    rcp_server *s;
    rcp_buf out;
    char err[256];
    int ok;
    rcp_model_opts_init(&mo);
    if (!(m = rcp_model_new(&mo, err, sizeof err)))
        return printf("engine: %s\n", err), 1;
    rcp_model_add(m, "d1", 2, "the quick brown fox", 19, NULL, 0);
    memset(&so, 0, sizeof so);
    so.model = m;
    so.deadline_ms = -1;
    s = rcp_server_new(&so);
    rcp_buf_init(&out);
    rcp_server_handle(s, INIT, sizeof INIT - 1, &out);
    out.len = 0;
    rcp_server_handle(s, RETRIEVE, sizeof RETRIEVE - 1, &out);
    ok = out.len && strstr(out.data, "\"id\":\"d1\"") != NULL;
    printf("server: %s\n", ok ? "retrieve found d1" : "retrieve failed");
    rcp_buf_free(&out);
    rcp_server_free(s);
    rcp_model_free(m);
    return ok ? 0 : 1;
}

static int over_stdio(char **argv)
{
    char err[256];
    rcp_client *c = rcp_client_spawn(argv, NULL, err, sizeof err);
    rcp_request *r;
    rcp_buf b;
    rcp_jw w;
    int ok;
    if (!c)
        return printf("client: %s\n", err), 1;
    r = rcp_client_request(c, "initialize", "{\"protocolVersion\":1}", 10000);
    ok = r && rcp_client_wait(c, r, 10000) == RCP_REQ_DONE
         && rcp_request_result(r);
    rcp_request_free(c, r);
    r = ok ? rcp_client_request(c, "ping", "{\"nonce\":7}", 10000) : NULL;
    ok = r && rcp_client_wait(c, r, 10000) == RCP_REQ_DONE
         && rcp_request_result(r);
    rcp_buf_init(&b);
    rcp_jw_init(&w, &b);
    if (ok)
        rcp_jw_value(&w, rcp_request_result(r));
    rcp_buf_putc(&b, '\0');
    printf("client: ping %s\n", ok && !b.oom ? b.data : "failed");
    rcp_buf_free(&b);
    rcp_request_free(c, r);
    rcp_client_close(c, 5000);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    int rc = json_and_vectors() | in_process();
    if (argc > 1)
        rc |= over_stdio(argv + 1);
    return rc;
}
