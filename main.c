/*
** main.c -- the rcp command line: one option parser, and the subcommands
** serve, call, shell, json and conform.
**
** Kept apart from the library so librcp links into other programs without
** a main().  `rcp call` and `rcp shell` use only the public client API of
** rcp.h, as any program linked with librcp would.
**
** Exit status, the same for every subcommand: 0 success; 1 the answer was
** an error (an error response, a text that is not JSON); 2 a usage error
** (one line and the hint `rcp CMD --help`); 3 no answer came (the server
** did not start, died or timed out; `rcp json`: a file could not be read).
*/
#include "rcp.h"
#ifndef RCP_TINY
#include "conformance/conform.h"
#endif
#include "buildinfo.h"       /* RCP_BUILD_INFO: $(BUILD)/flags, from make */

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

enum { RC_OK = 0, RC_ERROR = 1, RC_USAGE = 2, RC_NOANSWER = 3 };

/* make tiny (-DRCP_TINY, README "Portability"): a server for small
** machines -- its model has no dense index (no stored vectors, so no
** dense or hybrid retrieval and no MMR, none of it advertised) and there
** is no conformance runner (conform.c, schema.c and the bundled data are
** not linked). */
#ifdef RCP_TINY
#define TINY 1
#else
#define TINY 0
#endif

static const char usage_top[] =
    "usage: rcp [-h | --help] [--version] COMMAND [ARGS]\n"
    "\n"
    "rcp is the C99 reference implementation of RCP/1, the Retrieval\n"
    "Context Protocol (JSON-RPC 2.0 over stdio).\n"
    "\n"
    "commands:\n"
    "  serve    speak RCP/1 on stdin/stdout\n"
    "  call     start a server, initialize it, send one request (or a\n"
    "           batch) and print the answer\n"
    "  shell    start a server, initialize it, then send requests typed\n"
    "           as METHOD PARAMS lines\n"
    "  json     check JSON texts (files or stdin) and print them compact\n"
    "           or indented, or say where they are wrong\n"
    "  stats    what a --data store holds: documents, chunks, version,\n"
    "           bytes on disk, field schema, embedder\n"
#if !TINY
    "  conform  run the conformance suite against any stdio server\n"
#endif
    "\n"
    "'rcp COMMAND --help' describes each; man pages rcp(1) and rcp(3).\n"
    "\n"
    "options:\n"
    "  -h, --help  show this help and exit\n"
    "  --version   print the version, the vector path in use and the\n"
    "              build options, and exit\n";

/* MARK: - Options -------------------------------------------------------- */

/* One parser for every subcommand: --name VALUE and --name=VALUE, -h and
** --help, operands anywhere before "--" (GNU style), "--" ending the
** options.  A usage error is one line and the hint (GNU's convention). */

typedef struct optspec {
    const char *name;          /* "--data", "-q" */
    int         takes_value;
} optspec;

enum { OPT_END = -1, OPT_BAD = -2, OPT_OPERAND = -3, OPT_HELP = -4 };

typedef struct optiter {
    int            argc, i;
    char         **argv;
    const char    *cmd;        /* messages say "rcp CMD: ..." */
    const optspec *spec;       /* ends with a NULL name */
    const char    *val;        /* the option's value, or the operand */
    int            dashdash;   /* "--" was seen; what follows is argv[i..] */
} optiter;

static int usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "rcp%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'rcp%s%s --help'.\n", cmd ? " " : "",
            cmd ? cmd : "");
    return RC_USAGE;
}

static void opt_init(optiter *it, int argc, char **argv, const char *cmd,
                     const optspec *spec)
{
    memset(it, 0, sizeof *it);
    it->argc = argc;
    it->argv = argv;
    it->i = 1;
    it->cmd = cmd;
    it->spec = spec;
}

static int opt_find(const optiter *it, const char *a, size_t n)
{
    int k;
    for (k = 0; it->spec[k].name; k++)
        if (strlen(it->spec[k].name) == n
            && strncmp(it->spec[k].name, a, n) == 0)
            return k;
    return -1;
}

/* The next option: its index in spec (it->val holds a value it takes),
** OPT_OPERAND (it->val), OPT_HELP, OPT_END at the end or after "--", or
** OPT_BAD once the usage error is printed. */
static int opt_next(optiter *it)
{
    const char *a, *eq;
    size_t n;
    int k;
    if (it->dashdash || it->i >= it->argc)
        return OPT_END;
    a = it->argv[it->i++];
    if (strcmp(a, "--") == 0) {
        it->dashdash = 1;
        return OPT_END;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
        return OPT_HELP;
    if (a[0] != '-' || a[1] == '\0') {
        it->val = a;
        return OPT_OPERAND;
    }
    eq = a[1] == '-' ? strchr(a, '=') : NULL;
    n = eq ? (size_t)(eq - a) : strlen(a);
    if ((k = opt_find(it, a, n)) < 0) {
        usage_error(it->cmd, "unknown option '%.*s'", (int)n, a);
        return OPT_BAD;
    }
    if (!it->spec[k].takes_value && eq) {
        usage_error(it->cmd, "%s takes no value", it->spec[k].name);
        return OPT_BAD;
    }
    if (it->spec[k].takes_value) {
        if (eq) {
            it->val = eq + 1;
        } else if (it->i < it->argc) {
            it->val = it->argv[it->i++];
        } else {
            usage_error(it->cmd, "%s needs a value", it->spec[k].name);
            return OPT_BAD;
        }
    }
    return k;
}

/* A whole decimal number in [min, max], or -1. */
static long parse_count(const char *s, long min, long max)
{
    char *end;
    long v;
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    v = strtol(s, &end, 10);
    if (*end || v < min || v > max)
        return -1;
    return v;
}

/* Read all of f as bytes (NULs included), with room for one more byte
** after them; NULL when out of memory or on a read error (errno then
** says which). */
static char *slurp(FILE *f, size_t *len)
{
    size_t cap = 65536, n = 0, got;
    char *buf = rcp_malloc(cap), *p;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            p = rcp_realloc(buf, cap * 2);
            if (!p) {
                rcp_free(buf);
                return NULL;
            }
            buf = p;
            cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        rcp_free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* MARK: - rcp serve ------------------------------------------------------ */

static const char usage_serve[] =
    "usage: rcp serve [OPTIONS]\n"
    "\n"
    "Serve RCP/1 over stdio: one JSON-RPC message per line on stdin,\n"
    "responses on stdout, diagnostics on stderr.  EOF on stdin or a\n"
    "shutdown request ends the server (exit 0).\n"
    "\n"
    "options (--opt VALUE or --opt=VALUE):\n"
    "  --data DIR          keep the corpus durably in DIR (created and\n"
    "                      locked; every acknowledged write is fsynced)\n"
    "  --salvage           open a --data log damaged before its end: keep\n"
    "                      the commits before the damage, set the rest\n"
    "                      aside in DIR/rcp.log.torn and say what it held\n"
    "  --corpus FILE       bulk-load a JSON Lines corpus, one\n"
    "                      {\"id\",\"text\",\"meta\"} per line, before\n"
    "                      serving; a bad line is reported and nothing\n"
    "                      is loaded; progress on a terminal, then one\n"
    "                      line: documents, seconds, documents per second\n"
    "  --trust LEVEL       trust.level of the --corpus documents: trusted,\n"
    "                      community or untrusted (default); recorded with\n"
    "                      each document (§15.2: provenance, per document)\n"
    "  --source NAME       the --corpus source's name, recorded with each\n"
    "                      document (default corpus:FILE, its base name)\n"
    "  --chunk             load the --corpus documents as server-side\n"
    "                      chunks <id>#0.. (as index/add chunk:true)\n"
    "  --write-trust LEVEL trust.level of what clients write with index/add\n"
    "                      (default untrusted; vouch only for writers you\n"
    "                      control: §15.2 never labels user content trusted)\n"
    "  --read-only         serve without writes: index.writable is false,\n"
    "                      index/add and index/delete are -32003\n"
    "  --max-line BYTES    largest frame accepted; a longer line is\n"
    "                      answered -32013 and discarded (default 16777216)\n"
    "  --max-batch N       most members in one batch; more is -32602\n"
    "                      (default 1024)\n"
    "  --deadline-ms MS    the server's own per-request deadline, after\n"
    "                      which a request is answered -32014; 0 = none\n"
    "                      (default 60000)\n"
    "  --dim N             dimension of the built-in dense embedder\n"
    "                      (1..4096, default 384)\n"
    "  --vectors FILE      embed with pre-trained static word vectors\n"
    "                      (word2vec/GloVe text format) instead\n"
    "  --embedder hash|lsa hash (default) never learns; lsa learns from\n"
    "                      the corpus at start if it has 1000 documents\n"
    "  --field NAME:TYPE   declare a filterable meta field (§8); TYPE is\n"
    "                      keyword, text, int, float, bool or date\n"
    "                      (RFC 3339 or epoch ms); repeatable; recorded\n"
    "                      in --data: a restart without --field serves\n"
    "                      the recorded fields, a conflicting one is an\n"
    "                      error\n"
    "  --debug             add the vendor test method x-rcp/sleep {ms}\n"
    "                      and advertise its x-rcp capability\n"
    "  --registry FILE     serve as a federating aggregator (§16) over the\n"
    "                      engines of the rcp.json FILE: retrieve fans out\n"
    "                      to all and fuses, catalog/list lists them; with\n"
    "                      --data or --corpus the own index is one more\n"
    "                      engine (\"local\")\n"
    "  --expose-endpoints  with --registry: catalog/list gives each\n"
    "                      engine's endpoint (command or url)\n"
    "  --embed-engine CMD  delegate embed, and every dense vector of\n"
    "                      retrieve and index/add, to the RCP server CMD\n"
    "                      starts (one argument: words with shell quoting,\n"
    "                      or a JSON array of strings); its embed.identity\n"
    "                      and dimension are this server's\n"
    "  --rerank-engine CMD delegate rerank, and retrieve's rerank stage,\n"
    "                      to the RCP server CMD starts\n"
    "  --embed-url URL, --rerank-url URL  the same over HTTP (§5.2)\n"
    "  -h, --help          show this help and exit\n";

/* (two strings: C99 promises literals of 4095 bytes, no more) */
static const char usage_serve_http[] =
    "\n"
    "HTTP (§5.2), instead of stdio:\n"
    "  --http [ADDR:]PORT  serve POST BASE/METHOD (a batch: POST BASE) on\n"
    "                      ADDR (default 127.0.0.1; IPv6 in brackets,\n"
    "                      [::1]:8080); PORT 0 picks a free one; prints\n"
    "                      'rcp: listening on http://HOST:PORT/BASE' on\n"
    "                      stderr; SIGTERM or SIGINT stops it\n"
    "  --base PATH         the endpoint's path (default /rcp)\n"
    "  --sessions          stateful: initialize returns _meta.session, sent\n"
    "                      back as the RCP-Session header (default:\n"
    "                      stateless, every request implicitly initialized)\n"
    "  --session-idle-ms MS  a session unused this long expires\n"
    "                      (default 1800000)\n"
    "  --auth-token-file FILE  require Authorization: Bearer TOKEN, one\n"
    "                      'TOKEN [read|write]' per line (default scope:\n"
    "                      both); read tokens cannot index/add or delete\n"
    "  --allow-remote      serve a non-loopback ADDR without auth\n"
    "  --cors ORIGIN       allow browser requests from ORIGIN ('*': any),\n"
    "                      preflight included; repeatable\n"
    "  --rate N[/s]        requests per second per client (token bucket);\n"
    "                      over it: 429, Retry-After and -32011\n"
    "  --log-requests      one access-log line per request on stderr:\n"
    "                      peer, verb, path, status, bytes, ms (no bodies)\n"
    "  --max-conns N       connections held at once; past it 503\n"
    "                      (default 4096)\n"
    "  --idle-timeout-ms MS  close a keep-alive connection idle this long\n"
    "                      (default 60000)\n"
    "  --header-timeout-ms MS  a request's head must arrive within MS of\n"
    "                      its first byte, its body within 3 x MS of the\n"
    "                      head; else 408 (default 10000)\n"
    "\n"
    "environment:\n"
    "  RCP_SIMD=scalar|sse2|avx2|avx512|neon  force a vector path\n";

/* What `rcp serve` was told beyond the server's and the engine's
** options: where the documents live and what to load. */
typedef struct serve_args {
    const char *data, *corpus, *source;
    const char *registry;           /* --registry: serve as §16 aggregator */
    int         salvage, trust;     /* trust: RCP_TRUST_*, or -1 unset */
    int         expose;             /* --expose-endpoints */
    int         chunk;              /* --chunk */
    rcp_store_config *stored;       /* what --data records (rcp_free) */
    rcp_http_opts http;             /* --http (§5.2): listen set, or NULL */
    delegate_opts dl;               /* --embed-engine ... (issue 18) */
    delegate     *d;                /* their engines, or NULL */
    int           dim_set;          /* --dim was given */
} serve_args;

/* §8, §15.7: the fields the server runs with are the declared ones, or
** with none declared the ones --data records; the store checks the rest
** (rcp_store_open_config: another embedder, a conflicting field). */
static int peek_store(rcp_server_opts *o, serve_args *a)
{
    char err[1024];
    if (!a->data)
        return 0;
    if (!(a->stored = rcp_store_peek(a->data, err, sizeof err))) {
        fprintf(stderr, "rcp serve: --data %s\n", err);
        return -1;
    }
    if (!o->nfields && a->stored->has_schema) {
        o->fields = a->stored->fields;
        o->nfields = a->stored->nfields;
    }
    return 0;
}

/* --corpus FILE with its origin: --trust, --source (default
** "corpus:<base name>"). */
static int load_corpus(rcp_server_opts *o, const serve_args *a)
{
    char err[1024], name[RCP_MAX_SOURCE_BYTES + 1];
    const char *slash = strrchr(a->corpus, '/');
    rcp_model_origin org;
    rcp_store_load_opts lo;
    memset(&lo, 0, sizeof lo);
    org.trust = a->trust < 0 ? RCP_TRUST_UNTRUSTED : a->trust;
    if (a->source)
        snprintf(name, sizeof name, "%s", a->source);
    else
        snprintf(name, sizeof name, "corpus:%s",
                 slash ? slash + 1 : a->corpus);
    org.source = name;
    org.sourcelen = strlen(name);
    lo.origin = &org;
    lo.fields = o->fields;
    lo.nfields = o->nfields;
    lo.chunk = a->chunk;
    lo.progress_fd = STDERR_FILENO;
    if (a->d)                   /* a batch per request to the engine */
        delegate_load_opts(a->d, &lo);
    if (rcp_store_load(o->store, o->model, a->corpus, &lo, err,
                       sizeof err) < 0) {
        fprintf(stderr, "rcp serve: --corpus %s\n", err);
        if (delegate_error(a->d))   /* what the out of memory was */
            fprintf(stderr, "rcp serve: %s\n", delegate_error(a->d));
        return -1;
    }
    return 0;
}

/* Issue 18: --embed-engine, --rerank-engine (-url): started and
** initialised before the model, whose dimension and dense identity are
** then the embed engine's. */
static int open_delegate(rcp_model_opts *mo, serve_args *a)
{
    char err[1024];
    if (!a->dl.embed_cmd && !a->dl.embed_url && !a->dl.rerank_cmd
        && !a->dl.rerank_url)
        return 0;
    if (!(a->d = delegate_open(&a->dl, err, sizeof err))) {
        fprintf(stderr, "rcp serve: %s\n", err);
        return -1;
    }
    delegate_model_opts(a->d, mo);
    return 0;
}

/* The built-in backend, around which the delegate puts its own. */
static rcp_server *open_builtin(const rcp_server_opts *o, delegate *d)
{
    const proto_backend *be;
    void *ud;
    if (!d)
        return rcp_server_new(o);
    if (methods_open(o, &be, &ud) != 0)
        return NULL;
    delegate_wrap(d, &be, &ud);
    return proto_server_new(o, be, ud);
}

/* The engine, its durable store (--data) and the bulk load (--corpus),
** in that order, before the first frame is read. */
static int open_engine(rcp_server_opts *o, rcp_model_opts *mo,
                       serve_args *a)
{
    char err[1024];
    rcp_store_info in;
    rcp_store_config want;
    if (peek_store(o, a) || open_delegate(mo, a))
        return -1;
    mo->fields = o->fields;     /* §8 the engine reads their values at add */
    mo->nfields = o->nfields;
    o->model = rcp_model_new(mo, err, sizeof err);
    if (!o->model) {
        fprintf(stderr, "rcp serve: %s\n", err);
        return -1;
    }
    want.has_schema = 1;
    want.fields = o->fields;
    want.nfields = o->nfields;
    want.embedder = rcp_model_identity(o->model, RCP_EMBED_DENSE);
    if (a->data && !(o->store = rcp_store_open_config(a->data, o->model,
                                    a->salvage ? RCP_STORE_SALVAGE : 0u,
                                    &want, err, sizeof err))) {
        fprintf(stderr, "rcp serve: --data %s\n", err);
        return -1;
    }
    if (o->store) {             /* what open dropped is never silent */
        rcp_store_stat(o->store, &in);
        if (*in.warning)
            fprintf(stderr, "rcp serve: --data: warning: %s\n", in.warning);
    }
    if (a->corpus && load_corpus(o, a))
        return -1;
    /* the learned embedder trains once, after the replay and the load,
    ** never while serving: §13.2, the capabilities a session was given
    ** (embed.identity among them) hold for its life */
    if (rcp_model_train(o->model, 0) < 0) {
        fputs("rcp serve: out of memory training the dense embedder\n",
              stderr);
        return -1;
    }
    return 0;
}

/* What --registry serves (§16): the aggregator backend over its engines
** and, when --data or --corpus gave one, the own index. */
static rcp_server *open_federation(const rcp_server_opts *o,
                                   const char *registry, int expose)
{
    const proto_backend *be;
    void *ud;
    char err[1024];
    rcp_server *s;
    if (federation_open(registry, expose, o->model ? o : NULL, &be, &ud,
                        err, sizeof err) != 0) {
        fprintf(stderr, "rcp serve: --registry %s\n", err);
        return NULL;
    }
    if ((s = proto_server_new(o, be, ud)) == NULL)
        fputs("rcp serve: out of memory\n", stderr);
    return s;
}

/* SIGTERM and SIGINT stop the HTTP server: the handler writes to a
** pipe the loop polls (rcp_http_opts.stop_fd). */
static int stop_pipe[2] = { -1, -1 };

static void on_stop(int sig)
{
    char b = 1;
    (void)sig;
    if (write(stop_pipe[1], &b, 1) < 0)
        return;
}

static int serve_http(rcp_server *s, rcp_http_opts *ho)
{
    struct sigaction sa;
    int rc;
    if (pipe(stop_pipe) != 0) {
        perror("rcp serve: pipe");
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ho->stop_fd = stop_pipe[0];
    rc = rcp_server_run_http(s, ho) == 0 ? 0 : 1;
    close(stop_pipe[0]);
    close(stop_pipe[1]);
    return rc;
}

static int serve(rcp_server_opts *o, rcp_model_opts *mo, serve_args *a)
{
    const char *verr;
    rcp_server *s = NULL;
    int rc = 1, own = !a->registry || a->data || a->corpus;
    if (rcp_vec_init(NULL, &verr) != 0) {
        fprintf(stderr, "rcp serve: RCP_SIMD: %s\n", verr);
        return 2;
    }
    if (!own || open_engine(o, mo, a) == 0) {
        if (a->registry)
            s = open_federation(o, a->registry, a->expose);
        else if ((s = open_builtin(o, a->d)) == NULL)
            fputs("rcp serve: out of memory\n", stderr);
        if (s)
            rc = a->http.listen ? serve_http(s, &a->http)
                : rcp_server_run(s, STDIN_FILENO, STDOUT_FILENO) == 0 ? 0 : 1;
    }
    rcp_server_free(s);
    rcp_store_close(o->store);
    rcp_model_free(o->model);
    delegate_free(a->d);        /* after the model: its hooks are ours */
    rcp_free(a->stored);
    return rc;
}

#define MAX_FIELDS 64

static const optspec serve_opts[] = {
    { "--data", 1 }, { "--corpus", 1 }, { "--max-line", 1 },
    { "--max-batch", 1 }, { "--deadline-ms", 1 }, { "--dim", 1 },
    { "--vectors", 1 }, { "--field", 1 }, { "--trust", 1 }, { "--debug", 0 },
    { "--salvage", 0 }, { "--registry", 1 }, { "--expose-endpoints", 0 },
    { "--source", 1 }, { "--write-trust", 1 }, { "--read-only", 0 },
    { "--chunk", 0 }, { "--embedder", 1 }, { "--embed-engine", 1 },
    { "--rerank-engine", 1 },
    { "--embed-url", 1 }, { "--rerank-url", 1 },
    { "--http", 1 }, { "--base", 1 }, { "--sessions", 0 },
    { "--session-idle-ms", 1 }, { "--auth-token-file", 1 },
    { "--allow-remote", 0 }, { "--cors", 1 }, { "--rate", 1 },
    { "--log-requests", 0 }, { "--max-conns", 1 },
    { "--idle-timeout-ms", 1 }, { "--header-timeout-ms", 1 }, { NULL, 0 }
};
enum { S_DATA, S_CORPUS, S_MAX_LINE, S_MAX_BATCH, S_DEADLINE, S_DIM,
       S_VECTORS, S_FIELD, S_TRUST, S_DEBUG, S_SALVAGE, S_REGISTRY,
       S_EXPOSE, S_SOURCE, S_WRITE_TRUST, S_READ_ONLY, S_CHUNK, S_EMBEDDER,
       S_EMBED_ENGINE, S_RERANK_ENGINE, S_EMBED_URL, S_RERANK_URL,
       S_HTTP, S_BASE, S_SESSIONS, S_SESSION_IDLE, S_AUTH, S_REMOTE, S_CORS,
       S_RATE, S_LOG, S_MAX_CONNS, S_IDLE, S_HEADER_TIMEOUT };
#define MAX_CORS 64

static int trust_opt(const char *opt, const char *v, int *out)
{
    if ((*out = rcp_trust_level(v)) < 0)
        return usage_error("serve", "%s needs trusted, community or "
                           "untrusted, not '%s'", opt, v);
    return RC_OK;
}

/* One option's value into o / mo; RC_OK or the usage error. */
static int serve_opt(int k, const char *v, rcp_server_opts *o,
                     rcp_model_opts *mo, rcp_field *fields)
{
    long n;
    int level;
    switch (k) {
    case S_MAX_LINE:
        if ((n = parse_count(v, 2, 1L << 30)) < 0)
            return usage_error("serve", "--max-line needs a byte count from "
                               "2 to 1073741824, not '%s'", v);
        o->max_line = (size_t)n;
        break;
    case S_MAX_BATCH:
        if ((n = parse_count(v, 1, 1L << 24)) < 0)
            return usage_error("serve", "--max-batch needs a count from 1 "
                               "to 16777216, not '%s'", v);
        o->max_batch = (size_t)n;
        break;
    case S_DEADLINE:
        if ((n = parse_count(v, 0, 86400000L)) < 0)
            return usage_error("serve", "--deadline-ms needs milliseconds "
                               "from 0 to 86400000, not '%s'", v);
        o->deadline_ms = n;
        break;
    case S_DIM:
        if ((n = parse_count(v, 1, RCP_MODEL_MAX_DIM)) < 0)
            return usage_error("serve", "--dim needs a dimension from 1 to "
                               "4096, not '%s'", v);
        mo->dim = (unsigned)n;
        break;
    case S_FIELD:
        if (o->nfields == MAX_FIELDS
            || rcp_field_parse(v, &fields[o->nfields]) != 0)
            return usage_error("serve", "--field needs NAME:TYPE with TYPE "
                               "keyword, text, int, float, bool or date, "
                               "not '%s'", v);
        o->fields = fields;
        o->nfields++;
        break;
    case S_WRITE_TRUST:
        if (trust_opt("--write-trust", v, &level) != RC_OK)
            return RC_USAGE;
        o->write_trust = v;
        break;
    case S_READ_ONLY:
        o->read_only = 1;
        break;
    case S_VECTORS:
        mo->vectors_path = v;
        break;
    case S_EMBEDDER:
        if (strcmp(v, "lsa") && strcmp(v, "hash"))
            return usage_error("serve", "--embedder needs lsa or hash, not "
                               "'%s'", v);
        mo->lsa = !strcmp(v, "lsa");
        break;
    case S_DEBUG:
        o->debug = 1;
        break;
    }
    return RC_OK;
}

/* One --http option's value into ho; RC_OK or the usage error. */
static int http_opt(int k, const char *v, rcp_http_opts *ho,
                    const char **cors)
{
    long n;
    char *end;
    double r;
    switch (k) {
    case S_HTTP:     ho->listen = v; break;
    case S_BASE:
        if (v[0] != '/')
            return usage_error("serve", "--base needs a path starting "
                               "with '/', not '%s'", v);
        ho->base = v;
        break;
    case S_SESSIONS: ho->sessions = 1; break;
    case S_AUTH:     ho->auth_token_file = v; break;
    case S_REMOTE:   ho->allow_remote = 1; break;
    case S_LOG:      ho->log_requests = 1; break;
    case S_CORS:
        if (ho->ncors == MAX_CORS || !*v)
            return usage_error("serve", "--cors needs an origin (at most "
                               "64 of them)");
        cors[ho->ncors++] = v;
        ho->cors = cors;
        break;
    case S_RATE:
        r = strtod(v, &end);
        if (end == v || (*end && strcmp(end, "/s") != 0) || !(r > 0)
            || r > 1e9)
            return usage_error("serve", "--rate needs requests per second "
                               "N or N/s, N > 0, not '%s'", v);
        ho->rate = r;
        break;
    case S_MAX_CONNS:
        if ((n = parse_count(v, 1, 1L << 20)) < 0)
            return usage_error("serve", "--max-conns needs a count from 1 "
                               "to 1048576, not '%s'", v);
        ho->max_conns = (size_t)n;
        break;
    case S_SESSION_IDLE: case S_IDLE: case S_HEADER_TIMEOUT:
        if ((n = parse_count(v, 1, 86400000L)) < 0)
            return usage_error("serve", "%s needs milliseconds from 1 to "
                               "86400000, not '%s'", k == S_IDLE
                               ? "--idle-timeout-ms" : k == S_SESSION_IDLE
                               ? "--session-idle-ms" : "--header-timeout-ms",
                               v);
        if (k == S_IDLE)
            ho->idle_ms = n;
        else if (k == S_SESSION_IDLE)
            ho->session_idle_ms = n;
        else
            ho->header_ms = n, ho->body_ms = 3 * n;
        break;
    }
    return RC_OK;
}

/* Issue 18: one engine per role; the dimension and the dense embedder
** are the embed engine's; an aggregator delegates nothing (its engines
** embed). */
static int check_delegate(const serve_args *a, const rcp_model_opts *mo)
{
    const delegate_opts *d = &a->dl;
    if (d->embed_cmd && d->embed_url)
        return usage_error("serve", "--embed-engine and --embed-url name "
                           "two embed engines: give one");
    if (d->rerank_cmd && d->rerank_url)
        return usage_error("serve", "--rerank-engine and --rerank-url name "
                           "two rerank engines: give one");
    if ((d->embed_cmd || d->embed_url)
        && (mo->vectors_path || a->dim_set))
        return usage_error("serve", "--embed-engine/--embed-url take the "
                           "dimension and the embedder from the engine: no "
                           "--dim or --vectors");
    if ((d->embed_cmd || d->embed_url || d->rerank_cmd || d->rerank_url)
        && a->registry)
        return usage_error("serve", "--registry delegates to its engines: "
                           "no --embed-engine/--rerank-engine (-url)");
    return RC_OK;
}

static int cmd_serve(int argc, char **argv)
{
    static rcp_field fields[MAX_FIELDS];
    static const char *cors[MAX_CORS];
    int http_only = 0;
    rcp_server_opts o;
    rcp_model_opts mo;
    serve_args a;
    optiter it;
    int k, rc;
    memset(&a, 0, sizeof a);
    a.trust = -1;
    rcp_http_opts_init(&a.http);
    memset(&o, 0, sizeof o);
    o.deadline_ms = -1;
    rcp_model_opts_init(&mo);
    mo.no_dense_index = TINY;
    opt_init(&it, argc, argv, "serve", serve_opts);
    while ((k = opt_next(&it)) != OPT_END) {
        if (k == OPT_BAD)
            return RC_USAGE;
        if (k == OPT_HELP) {
            fputs(usage_serve, stdout);
            fputs(usage_serve_http, stdout);
            return RC_OK;
        }
        if (k == OPT_OPERAND)
            return usage_error("serve", "unexpected argument '%s'", it.val);
        if (k == S_DATA)
            a.data = it.val;
        else if (k == S_CORPUS)
            a.corpus = it.val;
        else if (k == S_SALVAGE)
            a.salvage = 1;
        else if (k == S_REGISTRY)
            a.registry = it.val;
        else if (k == S_EXPOSE)
            a.expose = 1;
        else if (k == S_SOURCE)
            a.source = it.val;
        else if (k == S_CHUNK)
            a.chunk = 1;
        else if (k == S_EMBED_ENGINE)
            a.dl.embed_cmd = it.val;
        else if (k == S_RERANK_ENGINE)
            a.dl.rerank_cmd = it.val;
        else if (k == S_EMBED_URL)
            a.dl.embed_url = it.val;
        else if (k == S_RERANK_URL)
            a.dl.rerank_url = it.val;
        else if (k == S_TRUST) {
            if ((rc = trust_opt("--trust", it.val, &a.trust)) != RC_OK)
                return rc;
        } else if (k >= S_HTTP) {
            if ((rc = http_opt(k, it.val, &a.http, cors)) != RC_OK)
                return rc;
            http_only |= k != S_HTTP;
        } else if ((rc = serve_opt(k, it.val, &o, &mo, fields)) != RC_OK)
            return rc;
        a.dim_set |= k == S_DIM;
    }
    if (it.i < argc)
        return usage_error("serve", "unexpected argument '%s'", argv[it.i]);
    if (a.salvage && !a.data)
        return usage_error("serve", "--salvage needs --data DIR");
    if (a.expose && !a.registry)
        return usage_error("serve", "--expose-endpoints needs --registry "
                           "FILE");
    if ((a.trust >= 0 || a.source) && !a.corpus)
        return usage_error("serve", "--trust and --source label a --corpus "
                           "source (client writes: --write-trust)");
    if (a.chunk && !a.corpus)
        return usage_error("serve", "--chunk applies to a --corpus load");
    if ((rc = check_delegate(&a, &mo)) != RC_OK)
        return rc;
    if (a.source && strlen(a.source) > RCP_MAX_SOURCE_BYTES)
        return usage_error("serve", "--source is longer than %u bytes",
                           RCP_MAX_SOURCE_BYTES);
    if (o.read_only && o.write_trust)
        return usage_error("serve", "--read-only takes no --write-trust: "
                           "clients write nothing");
    if (http_only && !a.http.listen)
        return usage_error("serve", "the HTTP options (--base, --sessions, "
                           "--auth-token-file, --cors, --rate, ...) need "
                           "--http [ADDR:]PORT");
    return serve(&o, &mo, &a);
}

/* MARK: - rcp stats ------------------------------------------------------ */

static const char usage_stats[] =
    "usage: rcp stats --data DIR\n"
    "\n"
    "Open the store in DIR as rcp serve does (locked: not while a server\n"
    "runs on it; an older log is upgraded, a torn last commit set aside)\n"
    "and print what it holds: documents (whole and chunked), chunks, the\n"
    "index version, the log's format and bytes on disk, the recorded\n"
    "field schema and embedder, and the idempotency keys remembered.\n"
    "\n"
    "options:\n"
    "  --data DIR  the store\n"
    "  -h, --help  show this help and exit\n";

static void print_fields(const rcp_store_config *c)
{
    static const char *const types[] = { "keyword", "text", "int", "float",
                                         "bool", "date" };
    size_t i;
    if (!c->has_schema) {
        puts("fields: none recorded");
        return;
    }
    printf("fields:");
    for (i = 0; i < c->nfields; i++)
        printf("%s %.*s:%s", i ? "," : "", (int)c->fields[i].namelen,
               c->fields[i].name, types[c->fields[i].type]);
    puts(c->nfields ? "" : " none declared");
}

/* Counted over the live documents: whole ones, chunks, and the chunked
** documents (those with a chunk 0). */
static void print_counts(const rcp_model *m)
{
    rcp_model_stats ms;
    rcp_model_docview v;
    unsigned long whole = 0, chunks = 0, chunked = 0;
    size_t no;
    rcp_model_stat(m, &ms);
    for (no = 0; no < ms.slots; no++)
        if (rcp_model_doc(m, (uint32_t)no, &v) == 0) {
            if (!v.chunk.of)
                whole++;
            else if (chunks++, v.chunk.index == 0)
                chunked++;
        }
    printf("documents: %lu (%lu whole, %lu chunked)\n", whole + chunked,
           whole, chunked);
    printf("chunks: %lu\n", chunks);
}

static int cmd_stats(int argc, char **argv)
{
    static const optspec opts[] = { { "--data", 1 }, { NULL, 0 } };
    const char *data = NULL;
    const rcp_store_config *c;
    char err[1024];
    rcp_model_opts mo;
    rcp_model *m;
    rcp_store *st;
    rcp_store_info in;
    optiter it;
    int k;
    opt_init(&it, argc, argv, "stats", opts);
    while ((k = opt_next(&it)) != OPT_END) {
        if (k == OPT_BAD)
            return RC_USAGE;
        if (k == OPT_HELP) {
            fputs(usage_stats, stdout);
            return RC_OK;
        }
        if (k == OPT_OPERAND)
            return usage_error("stats", "unexpected argument '%s'", it.val);
        data = it.val;
    }
    if (!data)
        return usage_error("stats", "--data DIR is needed");
    rcp_model_opts_init(&mo);
    mo.no_dense_index = 1;      /* counting needs no vectors */
    mo.lsa = 0;                 /* nor a trained embedder */
    if (!(m = rcp_model_new(&mo, err, sizeof err))) {
        fprintf(stderr, "rcp stats: %s\n", err);
        return RC_ERROR;
    }
    if (!(st = rcp_store_open(data, m, err, sizeof err))) {
        fprintf(stderr, "rcp stats: --data %s\n", err);
        rcp_model_free(m);
        return RC_ERROR;
    }
    rcp_store_stat(st, &in);
    if (*in.warning)
        fprintf(stderr, "rcp stats: warning: %s\n", in.warning);
    c = rcp_store_get_config(st);
    printf("store: %s\n", data);
    print_counts(m);
    printf("index version: v%llu\n", (unsigned long long)in.version);
    printf("log: format %u, %llu bytes on disk (%llu live)\n",
           (unsigned)in.format, (unsigned long long)in.log_bytes,
           (unsigned long long)in.live_bytes);
    print_fields(c);
    printf("embedder: %s\n", c->embedder ? c->embedder : "none recorded");
    printf("idempotency keys: %lu\n", (unsigned long)in.idem_keys);
    rcp_store_close(st);
    rcp_model_free(m);
    return RC_OK;
}

/* MARK: - JSON for people: the indented writer, rcp json ----------------- */

static void put_compact(rcp_buf *b, const rcp_json *v)
{
    rcp_jw w;
    rcp_jw_init(&w, b);
    rcp_jw_value(&w, v);
}

static void put_indent(rcp_buf *b, size_t depth)
{
    rcp_buf_putc(b, '\n');
    while (depth--)
        rcp_buf_puts(b, "  ");
}

/* v indented by two spaces, one member or element per line; scalars,
** keys, [] and {} exactly as the compact writer writes them.  An explicit
** stack, as in json.c: a deep text never recurses on the C stack. */
static void put_pretty(rcp_buf *b, const rcp_json *v)
{
    struct { const rcp_json *v; size_t i; } st[RCP_JSON_MAX_DEPTH + 2];
    size_t sp = 0;
    rcp_jw w;
    for (;;) {
        if ((v->type == RCP_JSON_ARRAY || v->type == RCP_JSON_OBJECT)
            && v->n > 0 && sp < sizeof st / sizeof st[0]) {
            rcp_buf_putc(b, v->type == RCP_JSON_ARRAY ? '[' : '{');
            st[sp].v = v;
            st[sp++].i = 0;
        } else {
            put_compact(b, v);
        }
        for (;;) {
            if (sp == 0)
                return;
            if (st[sp - 1].i == st[sp - 1].v->n) {
                sp--;
                put_indent(b, sp);
                rcp_buf_putc(b, st[sp].v->type == RCP_JSON_ARRAY ? ']' : '}');
                continue;
            }
            if (st[sp - 1].i > 0)
                rcp_buf_putc(b, ',');
            put_indent(b, sp);
            v = &st[sp - 1].v->kids[st[sp - 1].i++];
            if (st[sp - 1].v->type == RCP_JSON_OBJECT) {
                rcp_jw_init(&w, b);
                rcp_jw_str(&w, v->key, v->keylen);
                rcp_buf_puts(b, ": ");
            }
            break;
        }
    }
}

static void put_json(rcp_buf *b, const rcp_json *v, int pretty)
{
    if (pretty)
        put_pretty(b, v);
    else
        put_compact(b, v);
    rcp_buf_putc(b, '\n');
}

/* Line and column of byte off in t: lines counted from 1 by \n, columns
** from 1 in characters (every byte but a UTF-8 continuation byte). */
static void text_position(const char *t, size_t off, unsigned long *line,
                          unsigned long *col)
{
    size_t i, start = 0;
    *line = 1;
    for (i = 0; i < off; i++)
        if (t[i] == '\n') {
            (*line)++;
            start = i + 1;
        }
    *col = 1;
    for (i = start; i < off; i++)
        if (((unsigned char)t[i] & 0xC0) != 0x80)
            (*col)++;
}

static const char usage_json[] =
    "usage: rcp json [--pretty] [FILE...]\n"
    "\n"
    "Check that each FILE (none, or -, is stdin) holds exactly one JSON\n"
    "text (RFC 8259, strict UTF-8: what rcp accepts in a frame) and print\n"
    "it on stdout, compact on one line with numbers exactly as written,\n"
    "or indented with --pretty.  A text that is not JSON is reported on\n"
    "stderr as FILE:LINE:COLUMN: error at byte N: reason (lines and\n"
    "columns count from 1, columns in characters) and makes the exit\n"
    "status 1; a file that cannot be read makes it 3.\n"
    "\n"
    "options:\n"
    "  --pretty    indent by two spaces, one member or element per line\n"
    "  -h, --help  show this help and exit\n";

/* One file ("-": stdin) checked and printed; the exit status it means. */
static int json_file(const char *path, int pretty)
{
    const char *name = strcmp(path, "-") ? path : "<stdin>";
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    rcp_arena a;
    rcp_buf out;
    rcp_json_err err;
    const rcp_json *v;
    unsigned long line, col;
    size_t len;
    char *text;
    int rc = RC_OK;
    if (!f) {
        fprintf(stderr, "rcp json: %s: %s\n", path, strerror(errno));
        return RC_NOANSWER;
    }
    text = slurp(f, &len);
    if (!text)
        fprintf(stderr, "rcp json: %s: %s\n", name,
                errno ? strerror(errno) : "out of memory");
    if (f != stdin)
        fclose(f);
    if (!text)
        return RC_NOANSWER;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    if ((v = rcp_json_parse(&a, text, len, 0, &err)) == NULL) {
        text_position(text, err.offset, &line, &col);
        fprintf(stderr, "%s:%lu:%lu: error at byte %lu: %s\n", name, line,
                col, (unsigned long)err.offset, err.msg);
        rc = RC_ERROR;
    } else {
        put_json(&out, v, pretty);
        if (out.oom) {
            fprintf(stderr, "rcp json: %s: out of memory\n", name);
            rc = RC_ERROR;
        } else {
            fwrite(out.data, 1, out.len, stdout);
        }
    }
    rcp_buf_free(&out);
    rcp_arena_free(&a);
    rcp_free(text);
    return rc;
}

static const optspec json_opts[] = { { "--pretty", 0 }, { NULL, 0 } };

static int cmd_json(int argc, char **argv)
{
    optiter it;
    int k, pretty = 0, nfiles = 0, rc = RC_OK, r, i;
    opt_init(&it, argc, argv, "json", json_opts);
    while ((k = opt_next(&it)) != OPT_END) {
        if (k == OPT_BAD)
            return RC_USAGE;
        if (k == OPT_HELP) {
            fputs(usage_json, stdout);
            return RC_OK;
        }
        if (k == 0)
            pretty = 1;
        else
            nfiles++;
    }
    nfiles += argc - it.i;
    /* the files in order: operands before "--", then those after it */
    opt_init(&it, argc, argv, "json", json_opts);
    while ((k = opt_next(&it)) != OPT_END)
        if (k == OPT_OPERAND && (r = json_file(it.val, pretty)) > rc)
            rc = r;
    for (i = it.i; i < argc; i++)
        if ((r = json_file(argv[i], pretty)) > rc)
            rc = r;
    if (nfiles == 0)
        rc = json_file("-", pretty);
    return rc;
}

/* MARK: - rcp call and rcp shell: options -------------------------------- */

static const char usage_call[] =
    "usage: rcp call [OPTIONS] METHOD [PARAMS_JSON] [KEY=VALUE...] -- CMD...\n"
    "       rcp call [OPTIONS] --batch FILE -- CMD [ARGS...]\n"
    "       rcp call [OPTIONS] -- CMD [ARGS...]       (no METHOD: rcp shell)\n"
    "       rcp call [OPTIONS] --url URL [--header 'NAME: VALUE']... METHOD ...\n"
    "\n"
    "Start the RCP/1 server CMD ARGS... on pipes, initialize it, send one\n"
    "request and print its result on stdout (exit 0), or its error on\n"
    "stderr as CODE MESSAGE and data: JSON (exit 1).  The server's stderr\n"
    "is ours; EOF ends it.  With --url, talk to a running HTTP server\n"
    "instead (§5.2: each request a POST to BASE/METHOD).\n"
    "\n"
    "params:\n"
    "  PARAMS_JSON       a JSON object: '{\"query\":\"bm25\",\"k\":3}'\n"
    "  KEY=VALUE         one member each: a VALUE that is a whole JSON\n"
    "                    text (5, true, null, \"5\", [...], {...}) is that\n"
    "                    JSON, anything else a string: k=5 mode=hybrid\n"
    "                    query='what is bm25' filter='{\"field\":\"year\",\n"
    "                    \"op\":\"gte\",\"value\":2020}'; a dotted KEY goes\n"
    "                    inside an object: rerank.method=colbert; pairs\n"
    "                    apply over PARAMS_JSON, and a KEY given twice is\n"
    "                    an error\n"
    "\n"
    "options (--opt VALUE or --opt=VALUE):\n"
    "  --url URL         the HTTP endpoint, http://HOST[:PORT][/BASE] (HOST a\n"
    "                    name, IPv4 or [IPv6]; BASE /rcp when absent)\n"
    "  --header 'N: V'   send this header with every HTTP request (repeat\n"
    "                    it for more), e.g. 'Authorization: Bearer TOKEN'\n"
    "  --batch FILE      send FILE's JSON Lines, {\"method\", \"params\"?,\n"
    "                    \"id\"?} each, as one batch (§11) and print the\n"
    "                    responses one per line in the file's order,\n"
    "                    correlated by id; a line without an id gets its\n"
    "                    line number, or is a notification when its method\n"
    "                    is notifications/...\n"
    "  --progress        ask for notifications/progress (§9) and show them\n"
    "                    on stderr (over HTTP: asks for SSE)\n"
    "  --pretty          the result as indented JSON\n"
    "  --compact         the result as JSON on one line\n"
    "  --json            JSON even on a terminal (no table of hits)\n"
    "  --table           a result with hits as a table even when stdout is\n"
    "                    not a terminal\n"
    "  --raw             the response frame exactly as the server sent it\n"
    "  --timeout MS      stop waiting for an answer after MS milliseconds\n"
    "                    (then exit 3); default: wait\n"
    "  --no-init         do not initialize first (to see what a server does\n"
    "                    before initialize)\n"
    "  -q, --quiet       hold back the server's stderr; show it only when\n"
    "                    the server fails\n"
    "  -h, --help        show this help and exit\n"
    "\n"
    "On a terminal a result is indented, and one with hits is a table\n"
    "(rank, score, id, text) with its other members below; elsewhere it\n"
    "is compact JSON on one line.  Ctrl-C sends notifications/cancel for\n"
    "the request (§7.14); a second Ctrl-C stops waiting.  Exit status: 0\n"
    "a result, 1 an error response, 2 a usage error, 3 no answer (the\n"
    "server did not start, died or timed out).\n"
    "\n"
    "example:\n"
    "  rcp call retrieve query='what is a batch' k=3 \\\n"
    "      -- rcp serve --corpus tests/sample-corpus.jsonl\n";

static const char usage_shell[] =
    "usage: rcp shell [OPTIONS] -- CMD [ARGS...]\n"
    "       rcp shell [OPTIONS] --url URL [--header 'NAME: VALUE']...\n"
    "\n"
    "Start the RCP/1 server CMD ARGS..., initialize it once, then read\n"
    "requests from stdin, one a line: METHOD, then PARAMS_JSON or\n"
    "KEY=VALUE words as in rcp call (quote with '...' or \"...\").  Each\n"
    "answer is printed as rcp call prints it; the session goes on after an\n"
    "error.  'help' explains, 'quit', 'exit' or EOF ends the session,\n"
    "lines starting with # are comments.  Ctrl-C cancels the request in\n"
    "flight.  Exit status: 0, or 1 when any request got an error, 2 a\n"
    "usage error, 3 the server did not start or died.\n"
    "\n"
    "options: --url, --header, --progress, --pretty, --compact, --json,\n"
    "--table, --raw, --timeout MS, --no-init, -q/--quiet and -h/--help, as\n"
    "for rcp call.\n"
    "\n"
    "example:\n"
    "  rcp shell -- rcp serve --corpus tests/sample-corpus.jsonl\n"
    "  rcp> retrieve query=\"what is a batch\" k=3\n";

static const char shell_help[] =
    "Type one request a line: METHOD, then nothing, a JSON object, or\n"
    "KEY=VALUE words, for example\n"
    "  info\n"
    "  retrieve query=\"what is a batch\" k=3 mode=hybrid\n"
    "  retrieve {\"query\": \"bm25\", \"filter\": {\"field\": \"kind\","
    " \"op\": \"eq\", \"value\": \"note\"}}\n"
    "  index/add documents='[{\"id\": \"a\", \"text\": \"hello\"}]'\n"
    "A VALUE that is a JSON text is that JSON, anything else a string;\n"
    "rerank.method=colbert sets a member inside rerank.  Ctrl-C cancels\n"
    "the request in flight; quit, exit or Ctrl-D ends the session.\n";

typedef struct callopt {
    int         pretty;       /* 1 --pretty, 0 --compact, -1 neither */
    int         table;        /* 1 --table, 0 --json, -1 neither */
    int         raw, progress, quiet, no_init;
    long        timeout_ms;   /* 0: wait */
    const char *batch;
    const char *url;          /* --url: HTTP (§5.2) instead of a child */
    const char **headers;     /* --header lines, NULL-terminated */
    size_t      nheaders;
} callopt;

static const optspec call_opts[] = {
    { "--batch", 1 }, { "--progress", 0 }, { "--pretty", 0 },
    { "--compact", 0 }, { "--json", 0 }, { "--table", 0 }, { "--raw", 0 },
    { "--timeout", 1 }, { "--no-init", 0 }, { "-q", 0 }, { "--quiet", 0 },
    { "--url", 1 }, { "--header", 1 }, { NULL, 0 }
};
enum { C_BATCH, C_PROGRESS, C_PRETTY, C_COMPACT, C_JSON, C_TABLE, C_RAW,
       C_TIMEOUT, C_NO_INIT, C_Q, C_QUIET, C_URL, C_HEADER };

static int call_opt(const char *cmd, int k, const char *v, callopt *o)
{
    switch (k) {
    case C_BATCH:    o->batch = v;      break;
    case C_PROGRESS: o->progress = 1;   break;
    case C_PRETTY:   o->pretty = 1;     break;
    case C_COMPACT:  o->pretty = 0;     break;
    case C_JSON:     o->table = 0;      break;
    case C_TABLE:    o->table = 1;      break;
    case C_RAW:      o->raw = 1;        break;
    case C_NO_INIT:  o->no_init = 1;    break;
    case C_Q:
    case C_QUIET:    o->quiet = 1;      break;
    case C_URL:      o->url = v;        break;
    case C_HEADER:
        o->headers[o->nheaders++] = v;
        o->headers[o->nheaders] = NULL;
        break;
    case C_TIMEOUT:
        if ((o->timeout_ms = parse_count(v, 1, 86400000L)) < 0)
            return usage_error(cmd, "--timeout needs milliseconds from 1 "
                               "to 86400000, not '%s'", v);
        break;
    }
    return RC_OK;
}

/* MARK: - rcp call and rcp shell: params --------------------------------- */

/* The params object is built as a small tree: members given whole (the
** PARAMS_JSON object, a KEY=VALUE value) stay parsed JSON; an object a
** dotted KEY goes into is opened into members.  Everything lives in one
** arena. */
typedef struct pnode pnode;
struct pnode {
    const char     *key;
    size_t          keylen;
    const rcp_json *val;      /* the value as given; NULL: the members */
    pnode          *kids;
    size_t          n, cap;
    int             set;      /* set by a KEY=VALUE */
    int             touched;  /* a KEY=VALUE went below it */
};

static pnode *pn_child(rcp_arena *a, pnode *p, const char *k, size_t kn)
{
    size_t i;
    pnode *kids;
    for (i = 0; i < p->n; i++)
        if (p->kids[i].keylen == kn && memcmp(p->kids[i].key, k, kn) == 0)
            return &p->kids[i];
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        if (!(kids = rcp_arena_alloc(a, cap * sizeof *kids)))
            return NULL;
        if (p->n)
            memcpy(kids, p->kids, p->n * sizeof *kids);
        p->kids = kids;
        p->cap = cap;
    }
    memset(&p->kids[p->n], 0, sizeof *p->kids);
    p->kids[p->n].key = k;
    p->kids[p->n].keylen = kn;
    return &p->kids[p->n++];
}

/* Give p the members of obj, over the ones it has (the last of a repeated
** name wins, as everywhere in rcp).  0, or -1 when out of memory. */
static int pn_merge(rcp_arena *a, pnode *p, const rcp_json *obj)
{
    size_t i;
    pnode *k;
    for (i = 0; i < obj->n; i++) {
        if (!(k = pn_child(a, p, obj->kids[i].key, obj->kids[i].keylen)))
            return -1;
        k->val = &obj->kids[i];
        k->n = 0;
    }
    return 0;
}

/* p, holding an object given whole, as members a path can go into.  0,
** or -1 when out of memory. */
static int pn_open(rcp_arena *a, pnode *p)
{
    const rcp_json *obj = p->val;
    if (!obj)
        return 0;
    p->val = NULL;
    return pn_merge(a, p, obj);
}

/* Set the dotted path to v.  0, or -1 with a message in err. */
static int pn_set(rcp_arena *a, pnode *root, const char *path, size_t plen,
                  const rcp_json *v, char *err, size_t errlen)
{
    const char *seg = path, *end = path + plen, *dot;
    pnode *p = root;
    for (;;) {
        size_t sn;
        dot = memchr(seg, '.', (size_t)(end - seg));
        sn = (size_t)((dot ? dot : end) - seg);
        if (sn == 0) {
            snprintf(err, errlen, "'%.*s' has an empty part", (int)plen, path);
            return -1;
        }
        if (p->val && p->val->type != RCP_JSON_OBJECT) {
            snprintf(err, errlen, "%.*s is not an object",
                     (int)(seg - path - 1), path);
            return -1;
        }
        if (pn_open(a, p) || !(p = pn_child(a, p, seg, sn))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (!dot)
            break;
        p->touched = 1;
        seg = dot + 1;
    }
    if (p->set || p->touched) {
        snprintf(err, errlen, "%.*s is given twice", (int)plen, path);
        return -1;
    }
    p->set = 1;
    p->val = v;
    p->n = 0;
    return 0;
}

static void pn_write(rcp_jw *w, const pnode *p)
{
    size_t i;
    if (p->val) {
        rcp_jw_value(w, p->val);
        return;
    }
    rcp_jw_obj(w);
    for (i = 0; i < p->n; i++) {
        rcp_jw_keyn(w, p->kids[i].key, p->kids[i].keylen);
        pn_write(w, &p->kids[i]);
    }
    rcp_jw_obj_end(w);
}

static const pnode *pn_find(const pnode *p, const char *key)
{
    size_t i, n = strlen(key);
    for (i = 0; p && !p->val && i < p->n; i++)
        if (p->kids[i].keylen == n && memcmp(p->kids[i].key, key, n) == 0)
            return &p->kids[i];
    return NULL;
}

/* The params' _meta.progressToken (§9), or NULL. */
static const rcp_json *pn_token(const pnode *root)
{
    const pnode *m, *t;
    if (root->val)
        return rcp_json_get(rcp_json_get(root->val, "_meta"),
                            "progressToken");
    if (!(m = pn_find(root, "_meta")))
        return NULL;
    if (m->val)
        return rcp_json_get(m->val, "progressToken");
    return (t = pn_find(m, "progressToken")) ? t->val : NULL;
}

/* A string or number value made here (its text copied into a), as the
** parser would have made it; NULL when out of memory. */
static const rcp_json *json_leaf(rcp_arena *a, rcp_json_type type,
                                 const char *s, size_t n)
{
    rcp_json *v = rcp_arena_alloc(a, sizeof *v);
    char *t = rcp_arena_alloc(a, n);
    if (!v || !t)
        return NULL;
    memcpy(t, s, n);
    memset(v, 0, sizeof *v);
    v->type = type;
    v->s = t;
    v->n = n;
    return v;
}

/* A KEY=VALUE value: the JSON it spells, else the string itself; NULL
** when out of memory. */
static const rcp_json *kv_value(rcp_arena *a, const char *s, size_t n)
{
    rcp_json_err e;
    const rcp_json *v = rcp_json_parse(a, s, n, 0, &e);
    if (v || e.code == RCP_JSON_E_NOMEM)
        return v;
    return json_leaf(a, RCP_JSON_STRING, s, n);
}

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* args[0..n): a PARAMS_JSON object first, then KEY=VALUE pairs, applied
** over root.  0, or -1 with a message in err. */
static int pn_args(rcp_arena *a, pnode *root, char **args, int n, char *err,
                   size_t errlen)
{
    rcp_json_err e;
    const rcp_json *v;
    const char *eq;
    int i;
    for (i = 0; i < n; i++) {
        if (i == 0 && *skip_blanks(args[i]) == '{') {
            if (!(v = rcp_json_parse(a, args[i], strlen(args[i]), 0, &e))) {
                snprintf(err, errlen, "PARAMS_JSON is not JSON: column %lu: "
                         "%s", (unsigned long)e.offset + 1, e.msg);
                return -1;
            }
            if (v->type != RCP_JSON_OBJECT) {
                snprintf(err, errlen, "PARAMS_JSON must be one object");
                return -1;
            }
            if (!root->val && root->n == 0) {
                root->val = v;
            } else if (pn_open(a, root) || pn_merge(a, root, v)) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            continue;
        }
        if (!(eq = strchr(args[i], '=')) || eq == args[i]) {
            snprintf(err, errlen, "'%s' is neither a JSON object nor "
                     "KEY=VALUE", args[i]);
            return -1;
        }
        if (!(v = kv_value(a, eq + 1, strlen(eq + 1)))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (pn_set(a, root, args[i], (size_t)(eq - args[i]), v, err, errlen))
            return -1;
    }
    return 0;
}

/* MARK: - rcp call and rcp shell: the session ---------------------------- */

/* A progress token in flight and what to call its request on stderr. */
typedef struct token {
    const rcp_json *tok;
    unsigned long   label;    /* a --batch line; 0: the one request */
} token;

typedef struct session {
    const callopt *o;
    const char    *who;          /* "call" or "shell" */
    rcp_client    *c;
    rcp_request   *init;         /* the initialize answer, for the banner */
    int            tty_out, tty_err, width, utf8;
    size_t         shown;        /* a progress line of this width is open */
    token         *tokens;
    size_t         ntokens, captokens;
    size_t         null_errors;  /* answers with id null (a request the
                                    server could not read) since a send */
    const char    *where;        /* "line N: " before an error, or "" */
    struct sigaction old_int;
    int            hooked;       /* our SIGINT handler is installed */
} session;

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = interrupted + 1;
}

/* A line that --progress left open on stderr ends before anything else
** is written there or to the terminal. */
static void progress_end(session *s)
{
    if (s->shown) {
        fputc('\n', stderr);
        s->shown = 0;
    }
}

static void say(session *s, const char *fmt, ...)
{
    va_list ap;
    progress_end(s);
    fprintf(stderr, "rcp %s: ", s->who);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void put_out(const rcp_buf *b, FILE *f)
{
    if (b->oom)
        fputs("rcp: out of memory\n", stderr);
    else
        fwrite(b->data, 1, b->len, f);
    fflush(f);
}

static int use_pretty(const session *s)
{
    return s->o->pretty >= 0 ? s->o->pretty : s->tty_out;
}

/* The columns of the terminal on stdout: $COLUMNS when it is set, else
** what the terminal says, else 80. */
static int term_width(void)
{
    const char *c = getenv("COLUMNS");
    long n;
    if (c && (n = parse_count(c, 20, 1000)) > 0)
        return (int)n;
#ifdef TIOCGWINSZ
    {
        struct winsize ws;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
            return ws.ws_col;
    }
#endif
    return 80;
}

/* Whether the locale's characters are UTF-8 (then a cut text ends in
** U+2026, else in "..."). */
static int utf8_locale(void)
{
    const char *v = getenv("LC_ALL");
    if (!v || !*v)
        v = getenv("LC_CTYPE");
    if (!v || !*v)
        v = getenv("LANG");
    return v && (strstr(v, "UTF-8") || strstr(v, "utf-8")
                 || strstr(v, "UTF8") || strstr(v, "utf8"));
}

/* --- progress tokens (§9): ours, or the one the params carried --- */

static int token_add(session *s, const rcp_json *tok, unsigned long label)
{
    if (s->ntokens == s->captokens) {
        size_t cap = s->captokens ? s->captokens * 2 : 8;
        token *t = rcp_realloc(s->tokens, cap * sizeof *t);
        if (!t)
            return -1;
        s->tokens = t;
        s->captokens = cap;
    }
    s->tokens[s->ntokens].tok = tok;
    s->tokens[s->ntokens++].label = label;
    return 0;
}

/* §9: a frame bearing a token we did not send is ignored. */
static const token *token_find(const session *s, const rcp_json *tok)
{
    size_t i;
    for (i = 0; i < s->ntokens; i++)
        if (rcp_id_equal(s->tokens[i].tok, tok))
            return &s->tokens[i];
    return NULL;
}

/* The params for one request: base (NULL or an object), then the
** operands, then -- with --progress, unless the params carry their own --
** _meta.progressToken "rcp-<label>" (§9), which is then watched.  JSON
** text in out; 0, or -1 with a message in err. */
static int make_params(session *s, rcp_arena *a, const rcp_json *base,
                       char **args, int nargs, unsigned long label,
                       rcp_buf *out, char *err, size_t errlen)
{
    pnode root;
    const rcp_json *tok = NULL;   /* watched only with --progress */
    char name[32];
    rcp_jw w;
    memset(&root, 0, sizeof root);
    root.val = base;
    if (pn_args(a, &root, args, nargs, err, errlen))
        return -1;
    if (s->o->progress && !(tok = pn_token(&root))) {
        int n = snprintf(name, sizeof name, "rcp-%lu", label);
        if (!(tok = json_leaf(a, RCP_JSON_STRING, name, (size_t)n))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (pn_set(a, &root, "_meta.progressToken", 19, tok, err, errlen))
            return -1;
    }
    if (tok && token_add(s, tok, label)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rcp_jw_init(&w, out);
    pn_write(&w, &root);
    if (out->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* --- text for a terminal --- */

/* One character of s[0..n) (UTF-8; the parser let only valid text in):
** its length, and the columns it takes -- 2 in the East Asian wide
** blocks, 0 for combining marks, else 1 (a small wcwidth that does not
** depend on the locale). */
static size_t char_at(const unsigned char *s, size_t n, int *cols)
{
    size_t len = s[0] < 0x80 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    unsigned long cp = s[0];
    size_t i;
    if (len > n)
        len = n;
    if (len > 1) {
        cp = s[0] & (0x7F >> len);
        for (i = 1; i < len; i++)
            cp = (cp << 6) | (s[i] & 0x3F);
    }
    *cols = (cp >= 0x300 && cp <= 0x36F) || (cp >= 0x200B && cp <= 0x200F)
          ? 0
          : (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF)
            || (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF)
            || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60)
            || (cp >= 0xFFE0 && cp <= 0xFFE6)
            || (cp >= 0x1F300 && cp <= 0x1FAFF)
            || (cp >= 0x20000 && cp <= 0x3FFFD)
          ? 2 : 1;
    return len;
}

/* s[0..n) on one line in at most cols columns: each run of blanks and
** control bytes becomes one space; a cut ends in an ellipsis.  Pads with
** spaces to cols when pad.  Returns the columns used. */
static int put_cell(rcp_buf *b, const session *s, const char *t, size_t n,
                    int cols, int pad)
{
    const unsigned char *u = (const unsigned char *)t;
    size_t i = 0, len;
    int used = 0, w, space = 0, ell = s->utf8 ? 1 : 3;
    while (i < n && u[i] <= ' ')
        i++;
    while (i < n) {
        if (u[i] <= ' ' || u[i] == 0x7F) {
            space = 1;
            i++;
            continue;
        }
        len = char_at(u + i, n - i, &w);
        if (used + space + w > cols - ell) {
            /* the rest fits only if it is this character alone */
            size_t j = i + len;
            while (j < n && u[j] <= ' ')
                j++;
            if (j < n || used + space + w > cols) {
                rcp_buf_puts(b, s->utf8 ? "\xE2\x80\xA6" : "...");
                used += ell;
                break;
            }
        }
        if (space)
            rcp_buf_putc(b, ' ');
        rcp_buf_put(b, t + i, len);
        used += space + w;
        space = 0;
        i += len;
    }
    while (pad && used < cols) {
        rcp_buf_putc(b, ' ');
        used++;
    }
    return used;
}

/* A string the server sent, as plain text on one line: control bytes
** (an escape sequence would drive the terminal) fold into spaces; at most
** cols columns.  Nothing for a value that is not a string. */
static void put_text(rcp_buf *b, const session *s, const rcp_json *v,
                     int cols)
{
    if (v && v->type == RCP_JSON_STRING)
        put_cell(b, s, v->s, v->n, cols, 0);
}

/* --- what the server sends besides answers --- */

/* 0.82 -> "82%", 0.8125 -> "81.3%" (shortest form of the rounded value). */
static void put_percent(rcp_buf *b, double p)
{
    char num[RCP_JSON_FMT_SIZE];
    rcp_buf_put(b, num, rcp_json_fmt_double(num, round(p * 1000) / 10));
    rcp_buf_putc(b, '%');
}

/* notifications/progress on stderr: one line rewritten in place on a
** terminal, else a line per frame; --raw: the frame as it came. */
static void show_progress(session *s, const rcp_json *msg,
                          const rcp_json *params, const token *t)
{
    const rcp_json *p = rcp_json_get(params, "progress");
    const rcp_json *stage = rcp_json_get(params, "stage");
    const rcp_json *text = rcp_json_get(params, "message");
    const rcp_json *hits = rcp_json_get(rcp_json_get(params, "partial"),
                                        "hits");
    char num[32];
    rcp_buf b;
    rcp_buf_init(&b);
    if (s->o->raw) {
        put_json(&b, msg, 0);
    } else {
        rcp_buf_puts(&b, s->tty_err ? "\r" : "");
        if (t->label) {
            snprintf(num, sizeof num, "line %lu: ", t->label);
            rcp_buf_puts(&b, num);
        }
        rcp_buf_puts(&b, "progress ");
        if (p && p->type == RCP_JSON_NUMBER)
            put_percent(&b, rcp_json_num(p));
        if (stage && stage->type == RCP_JSON_STRING) {
            rcp_buf_putc(&b, ' ');
            put_text(&b, s, stage, 40);
        }
        if (text && text->type == RCP_JSON_STRING) {
            rcp_buf_puts(&b, ": ");
            put_text(&b, s, text, 200);
        }
        if (hits && hits->type == RCP_JSON_ARRAY) {
            snprintf(num, sizeof num, " (partial: %lu hits)",
                     (unsigned long)hits->n);
            rcp_buf_puts(&b, num);
        }
        while (s->tty_err && b.len < s->shown + 1)
            rcp_buf_putc(&b, ' ');        /* blank out a longer line */
        if (s->tty_err)
            s->shown = b.len - 1;
        else
            rcp_buf_putc(&b, '\n');
    }
    put_out(&b, stderr);
    rcp_buf_free(&b);
}

/* §17.1: logs are diagnostics, so they go to stderr as one line. */
static void show_log(session *s, const rcp_json *params)
{
    rcp_buf b;
    progress_end(s);
    rcp_buf_init(&b);
    rcp_buf_puts(&b, "rcp ");
    rcp_buf_puts(&b, s->who);
    rcp_buf_puts(&b, ": log ");
    put_text(&b, s, rcp_json_get(params, "level"), 20);
    rcp_buf_puts(&b, ": ");
    put_text(&b, s, rcp_json_get(params, "message"), 4000);
    rcp_buf_putc(&b, '\n');
    put_out(&b, stderr);
    rcp_buf_free(&b);
}

/* Everything the client could not pair with a request we are waiting
** for: progress and logs are shown, other notifications ignored (§4.5);
** a frame that answers nothing is reported, and an answer with id null
** counted: it stands for a request the server could not read. */
static void on_frame(void *ud, const rcp_json *msg)
{
    session *s = ud;
    const rcp_json *method = rcp_json_get(msg, "method");
    const rcp_json *params = rcp_json_get(msg, "params");
    const rcp_json *id = rcp_json_get(msg, "id");
    const token *t;
    rcp_buf b;
    if (method && !id) {
        if (rcp_json_streq(method, "notifications/progress")) {
            if (s->o->progress
                && (t = token_find(s, rcp_json_get(params, "progressToken"))))
                show_progress(s, msg, params, t);
        } else if (rcp_json_streq(method, "notifications/log")) {
            show_log(s, params);
        }
        return;
    }
    if (!method && id && id->type == RCP_JSON_NULL)
        s->null_errors++;
    rcp_buf_init(&b);
    put_compact(&b, msg);
    say(s, "the server sent %s: %.*s",
        method ? "a request (RCP/1 servers send none)"
               : "an answer to no request in flight",
        b.oom ? 0 : (int)b.len, b.oom ? "" : b.data);
    rcp_buf_free(&b);
}

/* --- starting, waiting, stopping --- */

static void session_init(session *s, const callopt *o, const char *who)
{
    memset(s, 0, sizeof *s);
    s->o = o;
    s->who = who;
    s->tty_out = isatty(STDOUT_FILENO);
    s->tty_err = isatty(STDERR_FILENO);
    s->width = term_width();
    s->utf8 = utf8_locale();
    s->where = "";
}

static int session_start(session *s, char **cmd)
{
    struct sigaction ign, act;
    rcp_client_opts co;
    char err[512];
    memset(&co, 0, sizeof co);
    co.err = s->o->quiet ? RCP_STDERR_CAPTURE : RCP_STDERR_INHERIT;
    co.keep_frames = s->o->raw;
    co.on_notify = on_frame;
    co.ud = s;
    /* Ctrl-C is ours to turn into notifications/cancel: the server starts
    ** with SIGINT ignored (an exec keeps that), so the terminal's SIGINT
    ** to the whole process group does not kill it mid-request. */
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &s->old_int);
    co.headers = s->o->headers;
    co.sse = s->o->progress;             /* §5.2: progress comes by SSE */
    s->c = s->o->url ? rcp_client_connect(s->o->url, &co, err, sizeof err)
        : rcp_client_spawn(cmd, &co, err, sizeof err);
    if (s->old_int.sa_handler != SIG_IGN) {
        act = ign;
        act.sa_handler = on_interrupt;  /* no SA_RESTART: reads stop */
        sigaction(SIGINT, &act, NULL);
        s->hooked = 1;
    } else {
        sigaction(SIGINT, &s->old_int, NULL);
    }
    if (!s->c) {
        say(s, s->o->url ? "cannot reach the server: %s"
            : "cannot start the server: %s", err);
        return RC_NOANSWER;
    }
    return RC_OK;
}

/* The server's stderr, held back by --quiet, when it failed. */
static void show_server_stderr(session *s)
{
    size_t n;
    const char *t = rcp_client_stderr_text(s->c, &n);
    if (t && n) {
        progress_end(s);
        fputs("--- the server's stderr:\n", stderr);
        fwrite(t, 1, n, stderr);
        if (t[n - 1] != '\n')
            fputc('\n', stderr);
    }
}

/* Why no answer will come: the server is gone (its exit status). */
static void server_gone(session *s)
{
    int status;
    if (rcp_client_wait_exit(s->c, 2000, &status)) {
        if (WIFEXITED(status))
            say(s, "the server exited (status %d) without answering",
                WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            say(s, "the server was killed by signal %d without answering",
                WTERMSIG(status));
    } else {
        say(s, "the server closed its output without answering");
    }
    show_server_stderr(s);
}

/* End the session: EOF is shutdown (§5.1, §7.12); a server that does not
** exit within 10 s is killed.  rc is the status so far. */
static int session_close(session *s, int rc)
{
    int status;
    if (s->c) {
        rcp_request_free(s->c, s->init);
        status = rcp_client_close(s->c, 10000);
        if (status == -1) {
            say(s, "the server did not exit within 10 s of EOF: killed");
        } else if (rc == RC_OK && !(WIFEXITED(status)
                                    && WEXITSTATUS(status) == 0)) {
            say(s, "the server ended badly (%s %d)", WIFEXITED(status)
                ? "exit status" : "signal", WIFEXITED(status)
                ? WEXITSTATUS(status) : WTERMSIG(status));
            show_server_stderr(s);
        }
    }
    if (s->hooked)
        sigaction(SIGINT, &s->old_int, NULL);
    rcp_free(s->tokens);
    return rc;
}

/* §7.14: ask the server to abandon r. */
static void cancel(session *s, rcp_request *r)
{
    size_t n;
    const char *id = rcp_request_id(r, &n);
    rcp_buf p;
    rcp_jw w;
    rcp_buf_init(&p);
    rcp_jw_init(&w, &p);
    rcp_jw_obj(&w);
    rcp_jw_key(&w, "id");
    rcp_jw_raw(&w, id, n);
    rcp_jw_key(&w, "reason");
    rcp_jw_cstr(&w, "interrupted (Ctrl-C)");
    rcp_jw_obj_end(&w);
    rcp_buf_putc(&p, '\0');
    if (!p.oom)
        (void)rcp_client_notify(s->c, "notifications/cancel", p.data);
    rcp_buf_free(&p);
}

/* Wait until every request of rs[0..n) is answered.  A first Ctrl-C
** cancels those still pending, a second stops waiting; so does an answer
** with id null for each of them (nothing else will come).  1 when it
** stopped early, else 0. */
static int await(session *s, rcp_request **rs, size_t n)
{
    size_t i, left;
    int cancelled = 0;
    for (;;) {
        for (i = 0, left = 0; i < n; i++)
            if (rs[i] && rcp_request_state_get(rs[i]) == RCP_REQ_PENDING)
                left++;
        if (left == 0)
            return 0;
        if (interrupted && !cancelled) {
            say(s, "cancelling (Ctrl-C again stops waiting)");
            for (i = 0; i < n; i++)
                if (rs[i] && rcp_request_state_get(rs[i]) == RCP_REQ_PENDING)
                    cancel(s, rs[i]);
            cancelled = 1;
        }
        if (interrupted > 1 || s->null_errors >= left)
            return 1;
        (void)rcp_client_pump(s->c, 100);  /* EOF abandons the rest */
    }
}

/* MARK: - rcp call and rcp shell: showing an answer ---------------------- */

/* A cell's text: a string's bytes, another value's JSON. */
static void cell_text(rcp_buf *tmp, const rcp_json *v, const char **t,
                      size_t *n)
{
    if (v && v->type == RCP_JSON_STRING) {
        *t = v->s;
        *n = v->n;
        return;
    }
    tmp->len = 0;
    if (v)
        put_compact(tmp, v);
    *t = tmp->oom ? "" : tmp->data ? tmp->data : "";
    *n = tmp->oom ? 0 : tmp->len;
}

static void score_text(char *out, size_t cap, const rcp_json *v)
{
    double d = rcp_json_num(v);
    if (!v || v->type != RCP_JSON_NUMBER)
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, fabs(d) < 1e6 ? "%.4f" : "%.4g", d);
}

/* A hit's text: its text, else its first text content block (§4.8). */
static const rcp_json *hit_text(const rcp_json *hit)
{
    const rcp_json *t = rcp_json_get(hit, "text"), *c;
    size_t i;
    if (t && t->type == RCP_JSON_STRING)
        return t;
    c = rcp_json_get(hit, "content");
    for (i = 0; c && c->type == RCP_JSON_ARRAY && i < c->n; i++)
        if (rcp_json_streq(rcp_json_get(&c->kids[i], "type"), "text"))
            return rcp_json_get(&c->kids[i], "text");
    return NULL;
}

/* The widths of the id and score columns. */
static void hit_widths(const session *s, const rcp_json *hits, int *idw,
                       int *scw)
{
    rcp_buf tmp, sink;
    char num[64];
    const char *t;
    size_t i, n;
    int w;
    rcp_buf_init(&tmp);
    rcp_buf_init(&sink);
    *idw = 2;
    *scw = 5;
    for (i = 0; i < hits->n; i++) {
        cell_text(&tmp, rcp_json_get(&hits->kids[i], "id"), &t, &n);
        sink.len = 0;
        if ((w = put_cell(&sink, s, t, n, 32, 0)) > *idw)
            *idw = w;
        score_text(num, sizeof num, rcp_json_get(&hits->kids[i], "score"));
        if ((int)strlen(num) > *scw)
            *scw = (int)strlen(num);
    }
    rcp_buf_free(&tmp);
    rcp_buf_free(&sink);
}

/* A result with hits on a terminal: rank, score, id and the start of the
** text, one hit a line, then the result's other members. */
static void show_hits(session *s, const rcp_json *res)
{
    const rcp_json *hits = rcp_json_get(res, "hits");
    rcp_buf b, tmp;
    char num[160];
    const char *t;
    size_t i, n;
    int idw, scw, textw;
    rcp_buf_init(&b);
    rcp_buf_init(&tmp);
    hit_widths(s, hits, &idw, &scw);
    textw = s->width - (4 + 2 + scw + 2 + idw + 2);
    if (textw < 10)
        textw = 10;
    snprintf(num, sizeof num, "rank  %*s  ", scw, "score");
    rcp_buf_puts(&b, num);
    put_cell(&b, s, "id", 2, idw, 1);
    rcp_buf_puts(&b, "  text\n");
    for (i = 0; i < hits->n; i++) {
        const rcp_json *h = &hits->kids[i], *x;
        char sc[64];
        score_text(sc, sizeof sc, rcp_json_get(h, "score"));
        snprintf(num, sizeof num, "%4lu  %*s  ", (unsigned long)i + 1, scw,
                 sc);
        rcp_buf_puts(&b, num);
        cell_text(&tmp, rcp_json_get(h, "id"), &t, &n);
        put_cell(&b, s, t, n, idw, 1);
        rcp_buf_puts(&b, "  ");
        x = hit_text(h);
        put_cell(&b, s, x ? x->s : "", x ? x->n : 0, textw, 0);
        rcp_buf_putc(&b, '\n');
    }
    if (hits->n == 0)
        rcp_buf_puts(&b, "(no hits)\n");
    for (i = 0; i < res->n; i++) {
        const rcp_json *m = &res->kids[i];
        if (m->keylen == 4 && memcmp(m->key, "hits", 4) == 0)
            continue;
        rcp_buf_put(&b, m->key, m->keylen);
        rcp_buf_puts(&b, ": ");
        put_json(&b, m, 0);
    }
    put_out(&b, stdout);
    rcp_buf_free(&b);
    rcp_buf_free(&tmp);
}

/* --table, or a terminal without --json/--pretty/--compact/--raw. */
static int use_table(const session *s, const rcp_json *res)
{
    const rcp_json *hits = rcp_json_get(res, "hits");
    if (!hits || hits->type != RCP_JSON_ARRAY || s->o->raw)
        return 0;
    if (s->o->table >= 0)
        return s->o->table;
    return s->o->pretty < 0 && s->tty_out;
}

/* An error response on stderr: CODE MESSAGE, then data: JSON. */
static void show_error(session *s, const rcp_json *err)
{
    const rcp_json *code = rcp_json_get(err, "code");
    const rcp_json *msg = rcp_json_get(err, "message");
    const rcp_json *data = rcp_json_get(err, "data");
    rcp_buf b;
    progress_end(s);
    rcp_buf_init(&b);
    rcp_buf_puts(&b, s->where);
    if (code && code->type == RCP_JSON_NUMBER)
        rcp_buf_put(&b, code->s, code->n);
    else
        put_compact(&b, code ? code : err);
    rcp_buf_putc(&b, ' ');
    put_text(&b, s, msg, 4000);
    rcp_buf_putc(&b, '\n');
    if (data) {
        rcp_buf_puts(&b, "data: ");
        put_json(&b, data, use_pretty(s));
    }
    put_out(&b, stderr);
    rcp_buf_free(&b);
}

/* --raw: the frames that carried responses since the log was cleared,
** exactly as received (a batch's reply array is one frame). */
static void show_raw(session *s)
{
    const rcp_frame *f;
    size_t n = rcp_client_frames(s->c, &f), i;
    for (i = 0; i < n; i++) {
        const rcp_json *r = f[i].root;
        if (r && (r->type == RCP_JSON_ARRAY
                  || (r->type == RCP_JSON_OBJECT
                      && !rcp_json_get(r, "method")))) {
            fwrite(f[i].line, 1, f[i].len, stdout);
            fputc('\n', stdout);
        }
    }
    fflush(stdout);
    rcp_client_frames_clear(s->c);
}

/* Why r has no answer, said; the status it means: RC_NOANSWER, or
** RC_ERROR when the server answered that it could not read it. */
static int no_answer(session *s, rcp_request *r, const char *what)
{
    switch (r ? rcp_request_state_get(r) : RCP_REQ_ABANDONED) {
    case RCP_REQ_TIMEOUT:
        say(s, "%s: no answer within %ld ms", what, s->o->timeout_ms);
        cancel(s, r);
        break;
    case RCP_REQ_ABANDONED:
        if (s->o->url && rcp_request_http_status(r))
            say(s, "%s: HTTP %d without a JSON-RPC answer (§5.2: a "
                "transport fault)", what, rcp_request_http_status(r));
        else if (s->o->url)
            say(s, "%s: the connection to %s ended without an answer",
                what, s->o->url);
        else
            server_gone(s);
        break;
    default:
        if (s->null_errors) {
            say(s, "%s: the server could not read the request (the answer "
                "with id null above)", what);
            return RC_ERROR;
        }
        say(s, "%s: stopped waiting for the answer", what);
        break;
    }
    return RC_NOANSWER;
}

/* r's answer on stdout (a result) or stderr (an error); the status it
** means. */
static int show_answer(session *s, rcp_request *r, const char *what)
{
    const rcp_json *resp = rcp_request_response(r), *res;
    unsigned flags = rcp_request_flags(r);
    rcp_buf b;
    if (rcp_request_state_get(r) != RCP_REQ_DONE)
        return no_answer(s, r, what);
    progress_end(s);
    if (flags & ~RCP_RESP_UNKNOWN_CODE)
        say(s, "%s: the response is malformed (§4):%s%s%s%s%s", what,
            flags & RCP_RESP_BAD_JSONRPC ? " jsonrpc is not \"2.0\";" : "",
            flags & RCP_RESP_BOTH ? " both result and error;" : "",
            flags & RCP_RESP_NEITHER ? " neither result nor error;" : "",
            flags & RCP_RESP_BAD_ERROR ? " error is not {code, message};"
                                       : "",
            flags & RCP_RESP_BAD_RESULT ? " result is not an object;" : "");
    if (s->o->raw) {
        show_raw(s);
        return rcp_request_error(r, NULL) ? RC_ERROR : RC_OK;
    }
    if (rcp_request_error(r, NULL)) {
        show_error(s, rcp_json_get(resp, "error"));
        return RC_ERROR;
    }
    if (!(res = rcp_request_result(r)))
        res = resp;
    if (use_table(s, res)) {
        show_hits(s, res);
        return RC_OK;
    }
    rcp_buf_init(&b);
    put_json(&b, res, use_pretty(s));
    put_out(&b, stdout);
    rcp_buf_free(&b);
    return RC_OK;
}

/* MARK: - rcp call and rcp shell: requests ------------------------------- */

/* §7.1: the version we speak and who we are; capabilities.streaming
** with --progress (a hint: the token asks for the frames, §9). */
static void init_params(const session *s, rcp_buf *out)
{
    char head[64];
    snprintf(head, sizeof head, "{\"protocolVersion\":%d,",
             RCP_PROTOCOL_VERSION);
    rcp_buf_puts(out, head);
    rcp_buf_puts(out, "\"client\":{\"name\":\"rcp-");
    rcp_buf_puts(out, s->who);
    rcp_buf_puts(out, "\",\"version\":\"" RCP_VERSION "\"}");
    if (s->o->progress)
        rcp_buf_puts(out, ",\"capabilities\":{\"streaming\":{}}");
    rcp_buf_putc(out, '}');
}

/* Send one request and wait for its answer; NULL when it could not be
** sent (the server is gone). */
static rcp_request *send_wait(session *s, const char *method,
                              const char *params)
{
    rcp_request *r;
    s->null_errors = 0;
    interrupted = 0;
    r = rcp_client_request(s->c, method, params, (int)s->o->timeout_ms);
    if (r)
        (void)await(s, &r, 1);
    return r;
}

/* §7.1, §13: initialize first; a version we do not speak ends it. */
static int initialize(session *s)
{
    const rcp_json *v;
    rcp_request *r;
    rcp_buf p;
    int64_t ver;
    int rc = RC_OK;
    rcp_buf_init(&p);
    init_params(s, &p);
    rcp_buf_putc(&p, '\0');
    r = p.oom ? NULL : send_wait(s, "initialize", p.data);
    rcp_buf_free(&p);
    if (!r || rcp_request_state_get(r) != RCP_REQ_DONE) {
        rc = no_answer(s, r, "initialize");
    } else if (rcp_request_error(r, NULL)) {
        say(s, "initialize failed:");
        show_error(s, rcp_json_get(rcp_request_response(r), "error"));
        rc = RC_ERROR;
    } else {
        v = rcp_json_get(rcp_request_result(r), "protocolVersion");
        if (!rcp_json_int(v, &ver) || ver < 1 || ver > RCP_PROTOCOL_VERSION) {
            say(s, "initialize: the server did not negotiate version %d "
                "(§7.1)", RCP_PROTOCOL_VERSION);
            rc = RC_ERROR;
        }
    }
    if (rc != RC_OK) {
        rcp_request_free(s->c, r);
        return rc;
    }
    s->init = r;
    if (s->o->raw)
        rcp_client_frames_clear(s->c);
    return RC_OK;
}

/* rcp call METHOD ...: one request.  `rcp call initialize` sends the
** user's initialize (over our defaults) as that one request. */
static int run_call(const callopt *o, const char *who, const char *method,
                    char **args, int nargs, char **cmd)
{
    int is_init = strcmp(method, "initialize") == 0, rc;
    const rcp_json *base = NULL;
    rcp_request *r;
    rcp_buf p, ip;
    rcp_arena a;
    session s;
    char err[512];
    session_init(&s, o, who);
    rcp_arena_init(&a, 0);
    rcp_buf_init(&p);
    rcp_buf_init(&ip);
    if (is_init) {
        init_params(&s, &ip);
        base = ip.oom ? NULL : rcp_json_parse(&a, ip.data, ip.len, 0, NULL);
    }
    if (make_params(&s, &a, base, args, nargs, 0, &p, err, sizeof err)) {
        rc = usage_error(who, "%s", err);
    } else if ((rc = session_start(&s, cmd)) == RC_OK
               && (is_init || o->no_init || (rc = initialize(&s)) == RC_OK)) {
        rcp_buf_putc(&p, '\0');
        r = send_wait(&s, method, p.data);
        rc = r ? show_answer(&s, r, method) : no_answer(&s, NULL, method);
        rcp_request_free(s.c, r);
    }
    rc = session_close(&s, rc);
    rcp_buf_free(&p);
    rcp_buf_free(&ip);
    rcp_arena_free(&a);
    return rc;
}

/* --- --batch FILE --- */

typedef struct bitem {
    unsigned long   line;
    const rcp_json *method;
    const rcp_json *id;       /* NULL: a notification */
    rcp_buf         params;   /* JSON text */
    rcp_request    *r;
} bitem;

typedef struct batch {
    const char *path;
    bitem      *items;
    size_t      n, cap;
    rcp_arena   a;
    char       *text;
} batch;

static void batch_free(batch *b)
{
    size_t i;
    for (i = 0; i < b->n; i++)
        rcp_buf_free(&b->items[i].params);
    rcp_free(b->items);
    rcp_arena_free(&b->a);
    rcp_free(b->text);
}

/* A line without an id gets its line number (a JSON number). */
static const rcp_json *line_id(rcp_arena *a, unsigned long line)
{
    char num[32];
    int n = snprintf(num, sizeof num, "%lu", line);
    return json_leaf(a, RCP_JSON_NUMBER, num, (size_t)n);
}

/* What is wrong with one request line, or NULL. */
static const char *request_problem(const rcp_json *v)
{
    const rcp_json *m = rcp_json_get(v, "method"), *p, *id, *j;
    size_t i;
    if (v->type != RCP_JSON_OBJECT)
        return "not a JSON object (want {\"method\", \"params\"?, \"id\"?})";
    for (i = 0; i < v->n; i++) {
        const char *k = v->kids[i].key;
        size_t kn = v->kids[i].keylen;
        if (!((kn == 6 && !memcmp(k, "method", 6))
              || (kn == 6 && !memcmp(k, "params", 6))
              || (kn == 2 && !memcmp(k, "id", 2))
              || (kn == 7 && !memcmp(k, "jsonrpc", 7))))
            return "a request has only jsonrpc, id, method and params";
    }
    p = rcp_json_get(v, "params");
    id = rcp_json_get(v, "id");
    j = rcp_json_get(v, "jsonrpc");
    if (!m || m->type != RCP_JSON_STRING || m->n == 0)
        return "\"method\" must be a non-empty string";
    if (p && p->type != RCP_JSON_OBJECT && p->type != RCP_JSON_ARRAY
        && p->type != RCP_JSON_NULL)
        return "\"params\" must be an object";
    if (id && id->type != RCP_JSON_STRING && id->type != RCP_JSON_NUMBER)
        return "\"id\" must be a string or a number (§4.7)";
    if (j && !rcp_json_streq(j, "2.0"))
        return "\"jsonrpc\" must be \"2.0\"";
    return NULL;
}

/* One line into b->items: checked, its id settled, its params built. */
static int batch_item(session *s, batch *b, const char *line, size_t len,
                      unsigned long lineno, char *err, size_t errlen)
{
    rcp_json_err je;
    const rcp_json *v, *p;
    const char *why;
    bitem *it;
    size_t i;
    if (!(v = rcp_json_parse(&b->a, line, len, 0, &je))) {
        snprintf(err, errlen, "%s:%lu: invalid JSON at column %lu: %s",
                 b->path, lineno, (unsigned long)je.offset + 1, je.msg);
        return -1;
    }
    if ((why = request_problem(v)) != NULL) {
        snprintf(err, errlen, "%s:%lu: %s", b->path, lineno, why);
        return -1;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        bitem *items = rcp_realloc(b->items, cap * sizeof *items);
        if (!items)
            goto oom;
        b->items = items;
        b->cap = cap;
    }
    it = &b->items[b->n++];
    memset(it, 0, sizeof *it);
    rcp_buf_init(&it->params);
    it->line = lineno;
    it->method = rcp_json_get(v, "method");
    it->id = rcp_json_get(v, "id");
    if (!it->id && !(it->method->n > 14
                     && !memcmp(it->method->s, "notifications/", 14))
        && !(it->id = line_id(&b->a, lineno)))
        goto oom;
    for (i = 0; it->id && i + 1 < b->n; i++)
        if (rcp_id_equal(b->items[i].id, it->id)) {
            snprintf(err, errlen, "%s:%lu: id %.*s is line %lu's too (ids "
                     "correlate the answers: give each line its own)",
                     b->path, lineno, (int)it->id->n, it->id->s,
                     b->items[i].line);
            return -1;
        }
    p = rcp_json_get(v, "params");
    if (p && p->type == RCP_JSON_ARRAY) {
        put_compact(&it->params, p);
        return it->params.oom ? (snprintf(err, errlen, "out of memory"), -1)
                              : 0;
    }
    if (p && p->type == RCP_JSON_NULL)
        p = NULL;                       /* null means absent (README) */
    if (make_params(s, &b->a, p, NULL, 0, lineno, &it->params, err, errlen))
        return -1;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* The whole file checked before the server starts: a bad line is a
** usage error and nothing is sent. */
static int batch_load(session *s, batch *b, char *err, size_t errlen)
{
    FILE *f = fopen(b->path, "rb");
    size_t len, pos = 0, end;
    unsigned long lineno = 0;
    if (!f || !(b->text = slurp(f, &len))) {
        snprintf(err, errlen, "%s: %s", b->path,
                 errno ? strerror(errno) : "out of memory");
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    b->text[len] = '\0';             /* slurp leaves room for it */
    while (pos < len) {
        const char *nl = memchr(b->text + pos, '\n', len - pos);
        end = nl ? (size_t)(nl - b->text) : len;
        lineno++;
        if (pos + strspn(b->text + pos, " \t\r") < end     /* not blank */
            && batch_item(s, b, b->text + pos, end - pos, lineno, err,
                          errlen))
            return -1;
        pos = end + 1;
    }
    if (b->n == 0) {
        snprintf(err, errlen, "%s: no requests in it", b->path);
        return -1;
    }
    return 0;
}

/* The batch as one §11 array, each request expected under its id. */
static int batch_send(session *s, batch *b)
{
    rcp_buf frame, idt;
    rcp_jw w;
    size_t i;
    int rc = 0;
    rcp_buf_init(&frame);
    rcp_buf_init(&idt);
    rcp_jw_init(&w, &frame);
    rcp_jw_arr(&w);
    for (i = 0; i < b->n && rc == 0; i++) {
        bitem *it = &b->items[i];
        rcp_jw_obj(&w);
        rcp_jw_key(&w, "jsonrpc");
        rcp_jw_cstr(&w, "2.0");
        if (it->id) {
            rcp_jw_key(&w, "id");
            rcp_jw_value(&w, it->id);
            idt.len = 0;
            put_compact(&idt, it->id);
            if (idt.oom || !(it->r = rcp_client_expect(s->c, idt.data,
                             idt.len, (int)s->o->timeout_ms)))
                rc = -1;
        }
        rcp_jw_key(&w, "method");
        rcp_jw_value(&w, it->method);
        rcp_jw_key(&w, "params");
        rcp_jw_raw(&w, it->params.data, it->params.len);
        rcp_jw_obj_end(&w);
    }
    rcp_jw_arr_end(&w);
    rcp_buf_putc(&frame, '\n');
    s->null_errors = 0;
    interrupted = 0;
    if (rc == 0 && (frame.oom
                    || rcp_client_send_raw(s->c, frame.data, frame.len)))
        rc = -1;
    rcp_buf_free(&frame);
    rcp_buf_free(&idt);
    return rc;
}

/* Every answer, in the file's order, one response object a line; the
** status they mean (3 when any is missing, else 1 when any is an error). */
static int batch_show(session *s, batch *b)
{
    size_t i, errors = 0, missing = 0, asked = 0;
    rcp_buf out;
    rcp_buf_init(&out);
    for (i = 0; i < b->n; i++) {
        bitem *it = &b->items[i];
        if (!it->r)
            continue;
        asked++;
        if (rcp_request_state_get(it->r) != RCP_REQ_DONE) {
            if (rcp_request_state_get(it->r) == RCP_REQ_TIMEOUT)
                cancel(s, it->r);
            say(s, "%s:%lu: no answer (%s)", b->path, it->line,
                rcp_request_state_get(it->r) == RCP_REQ_TIMEOUT
                ? "timed out" : rcp_request_state_get(it->r)
                == RCP_REQ_ABANDONED ? "the server is gone"
                : "stopped waiting");
            missing++;
            continue;
        }
        errors += rcp_request_error(it->r, NULL);
        if (!s->o->raw)
            put_json(&out, rcp_request_response(it->r), use_pretty(s));
    }
    if (s->o->raw)
        show_raw(s);
    put_out(&out, stdout);
    rcp_buf_free(&out);
    if (missing && !rcp_client_alive(s->c))
        server_gone(s);
    if (errors)
        say(s, "%lu of %lu requests got an error", (unsigned long)errors,
            (unsigned long)asked);
    return missing ? RC_NOANSWER : errors ? RC_ERROR : RC_OK;
}

static int run_batch(const callopt *o, const char *who, char **cmd)
{
    rcp_request **rs = NULL;
    session s;
    batch b;
    char err[600];
    size_t i;
    int rc;
    session_init(&s, o, who);
    memset(&b, 0, sizeof b);
    b.path = o->batch;
    rcp_arena_init(&b.a, 0);
    if (batch_load(&s, &b, err, sizeof err)) {
        rc = usage_error(who, "--batch %s", err);
    } else if ((rc = session_start(&s, cmd)) == RC_OK
               && (o->no_init || (rc = initialize(&s)) == RC_OK)) {
        if (batch_send(&s, &b) != 0) {
            rc = no_answer(&s, NULL, "--batch");
        } else if (!(rs = rcp_malloc(b.n * sizeof *rs))) {
            say(&s, "out of memory");
            rc = RC_ERROR;
        } else {
            for (i = 0; i < b.n; i++)
                rs[i] = b.items[i].r;
            (void)await(&s, rs, b.n);
            rc = batch_show(&s, &b);
        }
    }
    for (i = 0; s.c && i < b.n; i++)
        rcp_request_free(s.c, b.items[i].r);
    rc = session_close(&s, rc);
    rcp_free(rs);
    batch_free(&b);
    return rc;
}

/* --- rcp shell --- */

/* s split into words in place, as sh does for the simple cases: blanks
** separate; '...' quotes everything, "..." everything but \" and \\; a
** backslash elsewhere takes the next byte.  The count, or -1. */
static int split_words(char *s, char **words, int max, char *err,
                       size_t errlen)
{
    char *r = s, *w = s, q;
    int n = 0;
    for (;;) {
        while (*r == ' ' || *r == '\t')
            r++;
        if (!*r)
            return n;
        if (n == max) {
            snprintf(err, errlen, "more than %d words", max);
            return -1;
        }
        words[n++] = w;
        while (*r && *r != ' ' && *r != '\t') {
            if (*r == '\'' || *r == '"') {
                for (q = *r++; *r && *r != q; *w++ = *r++)
                    if (q == '"' && *r == '\\' && (r[1] == '"' || r[1] == '\\'))
                        r++;
                if (!*r) {
                    snprintf(err, errlen, "a %c is not closed", q);
                    return -1;
                }
                r++;
            } else {
                if (*r == '\\' && r[1])
                    r++;
                *w++ = *r++;
            }
        }
        if (*r)
            r++;
        *w++ = '\0';
    }
}

#define SHELL_WORDS 256

/* One typed request sent and answered; the status it means. */
static int shell_request(session *s, char *line, const char *where)
{
    char *words[SHELL_WORDS], err[512], *rest;
    const char *method = line;
    rcp_request *r;
    rcp_arena a;
    rcp_buf p;
    int nw, rc;
    rest = line + strcspn(line, " \t");
    if (*rest)
        *rest++ = '\0';
    rest = (char *)skip_blanks(rest);
    nw = 1;
    words[0] = rest;
    if (*rest != '{' && (nw = split_words(rest, words, SHELL_WORDS, err,
                                          sizeof err)) < 0) {
        say(s, "%s%s", where, err);
        return RC_ERROR;
    }
    s->ntokens = 0;
    rcp_arena_init(&a, 0);
    rcp_buf_init(&p);
    if (make_params(s, &a, NULL, words, nw, 0, &p, err, sizeof err)) {
        say(s, "%s%s", where, err);
        rc = RC_ERROR;
    } else {
        rcp_buf_putc(&p, '\0');
        s->where = where;
        r = send_wait(s, method, p.data);
        rc = r ? show_answer(s, r, method) : no_answer(s, NULL, method);
        rcp_request_free(s->c, r);
        s->where = "";
    }
    rcp_buf_free(&p);
    rcp_arena_free(&a);
    return rc;
}

/* Who answers, on a terminal: name, version, the capabilities. */
static void shell_banner(session *s)
{
    const rcp_json *res = s->init ? rcp_request_result(s->init) : NULL;
    const rcp_json *srv = rcp_json_get(res, "server");
    const rcp_json *caps = rcp_json_get(res, "capabilities");
    char num[32];
    rcp_buf b;
    size_t i;
    rcp_buf_init(&b);
    put_text(&b, s, rcp_json_get(srv, "name"), 40);
    rcp_buf_putc(&b, ' ');
    put_text(&b, s, rcp_json_get(srv, "version"), 40);
    snprintf(num, sizeof num, ", RCP/%d", RCP_PROTOCOL_VERSION);
    rcp_buf_puts(&b, num);
    for (i = 0; caps && caps->type == RCP_JSON_OBJECT && i < caps->n; i++) {
        rcp_buf_puts(&b, i ? ", " : "; capabilities: ");
        put_cell(&b, s, caps->kids[i].key, caps->kids[i].keylen, 40, 0);
    }
    rcp_buf_puts(&b, "\nType a request as METHOD [PARAMS] ('help' for "
                 "more), Ctrl-D to end.\n");
    put_out(&b, stderr);
    rcp_buf_free(&b);
}

/* The line without its newline and surrounding blanks. */
static char *trim_line(char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'
                 || line[n - 1] == ' ' || line[n - 1] == '\t'))
        line[--n] = '\0';
    return (char *)skip_blanks(line);
}

static int shell_loop(session *s)
{
    int tty_in = isatty(STDIN_FILENO), failed = 0, rc;
    unsigned long lineno = 0;
    char *buf = NULL, *line, where[48];
    size_t cap = 0;
    if (tty_in)
        shell_banner(s);
    for (;;) {
        if (tty_in) {
            fputs("rcp> ", stderr);
            fflush(stderr);
        }
        interrupted = 0;
        errno = 0;
        if (getline(&buf, &cap, stdin) < 0) {
            if (errno == EINTR && !feof(stdin)) {
                clearerr(stdin);
                fputc('\n', stderr);
                continue;             /* Ctrl-C at the prompt: a new one */
            }
            break;
        }
        lineno++;
        line = trim_line(buf);
        if (!*line || *line == '#')
            continue;
        if (!strcmp(line, "quit") || !strcmp(line, "exit"))
            break;
        if (!strcmp(line, "help") || !strcmp(line, "?")) {
            fputs(shell_help, stderr);
            continue;
        }
        where[0] = '\0';
        if (!tty_in)
            snprintf(where, sizeof where, "line %lu: ", lineno);
        rc = shell_request(s, line, where);
        if (rc == RC_NOANSWER && !rcp_client_alive(s->c))
            return rcp_free(buf), RC_NOANSWER;
        failed |= rc != RC_OK;
    }
    if (tty_in && feof(stdin))
        fputc('\n', stderr);
    rcp_free(buf);
    return failed ? RC_ERROR : RC_OK;
}

static int run_shell(const callopt *o, const char *who, char **cmd)
{
    session s;
    int rc;
    session_init(&s, o, who);
    if ((rc = session_start(&s, cmd)) == RC_OK
        && (o->no_init || (rc = initialize(&s)) == RC_OK))
        rc = shell_loop(&s);
    return session_close(&s, rc);
}

/* rcp call and rcp shell share their options; call without a METHOD is
** the shell. */
static int cmd_call(int argc, char **argv, const char *who)
{
    callopt o;
    optiter it;
    char **ops;
    int nops = 0, k, rc = RC_OK;
    memset(&o, 0, sizeof o);
    o.pretty = o.table = -1;
    ops = rcp_malloc((size_t)argc * sizeof *ops);
    o.headers = rcp_malloc(((size_t)argc + 1) * sizeof *o.headers);
    if (o.headers)
        o.headers[0] = NULL;
    if (!ops || !o.headers) {
        rcp_free(ops);
        rcp_free((void *)o.headers);
        fputs("rcp: out of memory\n", stderr);
        return RC_ERROR;
    }
    opt_init(&it, argc, argv, who, call_opts);
    while (rc == RC_OK && (k = opt_next(&it)) != OPT_END) {
        if (k == OPT_BAD)
            rc = RC_USAGE;
        else if (k == OPT_HELP)
            rc = -1;
        else if (k == OPT_OPERAND)
            ops[nops++] = (char *)it.val;
        else
            rc = call_opt(who, k, it.val, &o);
    }
    if (rc == -1) {
        fputs(strcmp(who, "shell") ? usage_call : usage_shell, stdout);
        rc = RC_OK;
    } else if (rc != RC_OK) {
        /* the usage error is said */
    } else if (o.url && it.dashdash) {
        rc = usage_error(who, "--url names a running server; there is no "
                         "server to start after --");
    } else if (o.nheaders && !o.url) {
        rc = usage_error(who, "--header is for HTTP: it needs --url");
    } else if (!o.url && (!it.dashdash || it.i >= argc)) {
        rc = usage_error(who, "the server to start is missing: ... -- CMD "
                         "[ARGS...]");
    } else if (nops && !strcmp(who, "shell")) {
        rc = usage_error(who, "unexpected argument '%s' (the shell reads "
                         "requests from stdin)", ops[0]);
    } else if (nops && o.batch) {
        rc = usage_error(who, "--batch reads the requests from %s; '%s' "
                         "is one too many", o.batch, ops[0]);
    } else if (o.batch) {
        rc = run_batch(&o, who, argv + it.i);
    } else if (nops == 0) {
        rc = run_shell(&o, who, argv + it.i);
    } else {
        rc = run_call(&o, who, ops[0], ops + 1, nops - 1, argv + it.i);
    }
    rcp_free(ops);
    rcp_free((void *)o.headers);
    return rc;
}

/* MARK: - rcp conform, rcp --version, main ------------------------------- */

#if !TINY
/* rcp conform parses its own options (conformance/conform.c); the shared
** conventions, --opt=VALUE and -h, are mapped onto them here. */
static int cmd_conform(int argc, char **argv)
{
    char **v = rcp_malloc(((size_t)argc * 2 + 1) * sizeof *v);
    rcp_arena a;
    int i, n = 0, opts = 1, rc;
    if (!v) {
        fputs("rcp: out of memory\n", stderr);
        return RC_ERROR;
    }
    rcp_arena_init(&a, 0);
    for (i = 0; i < argc; i++) {
        char *arg = argv[i], *eq, *copy;
        if (i > 0 && opts && strcmp(arg, "--") == 0)
            opts = 0;
        if (i > 0 && opts && strcmp(arg, "-h") == 0) {
            arg = "--help";
        } else if (i > 0 && opts && !strncmp(arg, "--", 2)
                   && (eq = strchr(arg, '=')) != NULL
                   && (copy = rcp_arena_alloc(&a, strlen(arg) + 1)) != NULL) {
            strcpy(copy, arg);
            copy[eq - arg] = '\0';
            v[n++] = copy;
            arg = copy + (eq - arg) + 1;
        }
        v[n++] = arg;
    }
    v[n] = NULL;
    rc = rcp_conform_main(n, v);
    rcp_arena_free(&a);
    rcp_free(v);
    return rc;
}
#endif

/* The version, the vector path this machine uses (RCP_SIMD included) and
** the ones it could, and the flags the build remembered. */
static int cmd_version(void)
{
    static const char *paths[] = { "scalar", "sse2", "avx2", "avx512",
                                   "neon" };
    const char *err = NULL;
    size_t i;
    int ok = rcp_vec_init(NULL, &err) == 0;
    printf("rcp %s (RCP/%d)\n", RCP_VERSION, RCP_PROTOCOL_VERSION);
    printf("vectors: %s (usable here:", rcp_vec_path());
    for (i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (rcp_vec_path_available(paths[i]))
            printf(" %s", paths[i]);
    printf("; RCP_SIMD=NAME picks one)\n");
    if (!ok)
        printf("  RCP_SIMD: %s\n", err);
    printf("build:\n%s", RCP_BUILD_INFO);
    return RC_OK;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (!cmd)
        return usage_error(NULL, "a command is needed: serve, call, shell, "
#if TINY
                           "or json");
#else
                           "json or conform");
#endif
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_top, stdout);
        return RC_OK;
    }
    if (strcmp(cmd, "--version") == 0)
        return cmd_version();
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "call") == 0 || strcmp(cmd, "shell") == 0)
        return cmd_call(argc - 1, argv + 1, cmd);
    if (strcmp(cmd, "json") == 0)
        return cmd_json(argc - 1, argv + 1);
    if (strcmp(cmd, "stats") == 0)
        return cmd_stats(argc - 1, argv + 1);
#if !TINY
    if (strcmp(cmd, "conform") == 0)
        return cmd_conform(argc - 1, argv + 1);
#endif
    if (cmd[0] == '-')
        return usage_error(NULL, "unknown option '%s'", cmd);
    return usage_error(NULL, "unknown command '%s'", cmd);
}
