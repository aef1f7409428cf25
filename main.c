/*
** main.c -- the rcp command: option parsing and the subcommands.
**
** Kept apart from rcp.c so the library (rcp.h) stays linkable into other
** programs without a main().  Usage errors exit 2, as is customary.
*/
#include "rcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_top[] =
    "usage: rcp [--help] [--version] COMMAND [ARGS]\n"
    "\n"
    "rcp is the C99 reference implementation of RCP/1, the Retrieval\n"
    "Context Protocol (JSON-RPC 2.0 over stdio).\n"
    "\n"
    "commands:\n"
    "  serve    speak RCP/1 on stdin/stdout (see rcp serve --help)\n"
    "  json     read one JSON text on stdin; print it compact, or\n"
    "           'error at byte N: reason' on stderr and exit 1\n"
    "  conform  run the conformance suite against any stdio server\n"
    "           (see rcp conform --help)\n"
    "\n"
    "options:\n"
    "  --help     show this help and exit\n"
    "  --version  print the version and exit\n";

static const char usage_serve[] =
    "usage: rcp serve [OPTIONS]\n"
    "\n"
    "Serve RCP/1 over stdio: one JSON-RPC message per line on stdin,\n"
    "responses on stdout, diagnostics on stderr.  EOF on stdin or a\n"
    "shutdown request ends the server (exit 0).\n"
    "\n"
    "options:\n"
    "  --data DIR          keep the corpus durably in DIR (created and\n"
    "                      locked; every acknowledged write is fsynced)\n"
    "  --salvage           open a --data log damaged before its end: keep\n"
    "                      the commits before the damage, set the rest\n"
    "                      aside in DIR/rcp.log.torn and say what it held\n"
    "  --corpus FILE       bulk-load a JSON Lines corpus, one\n"
    "                      {\"id\",\"text\",\"meta\"} per line, before\n"
    "                      serving; a bad line is reported and nothing\n"
    "                      is loaded\n"
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
    "  --field NAME:TYPE   declare a filterable meta field (§8); TYPE is\n"
    "                      keyword, text, int, float, bool or date\n"
    "                      (RFC 3339 or epoch ms); repeatable\n"
    "  --trust LEVEL       trust.level of every hit: trusted, community\n"
    "                      or untrusted (default; §15.2: never label\n"
    "                      unvetted content trusted)\n"
    "  --debug             add the vendor test method x-rcp/sleep {ms}\n"
    "                      and advertise its x-rcp capability\n"
    "  --help              show this help and exit\n"
    "\n"
    "environment:\n"
    "  RCP_SIMD=scalar|sse2|avx2|avx512|neon  force a vector path\n";

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "rcp%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'rcp%s%s --help'.\n", cmd ? " " : "",
            cmd ? cmd : "");
    return 2;
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

/* The engine, its durable store (--data) and the bulk load (--corpus),
** in that order, before the first frame is read. */
static int open_engine(rcp_server_opts *o, rcp_model_opts *mo,
                       const char *data, const char *corpus, int salvage)
{
    char err[1024];
    rcp_store_info in;
    o->model = rcp_model_new(mo, err, sizeof err);
    if (!o->model) {
        fprintf(stderr, "rcp serve: %s\n", err);
        return -1;
    }
    if (data && !(o->store = rcp_store_open_flags(data, o->model,
                                    salvage ? RCP_STORE_SALVAGE : 0u, err,
                                    sizeof err))) {
        fprintf(stderr, "rcp serve: --data %s\n", err);
        return -1;
    }
    if (o->store) {             /* what open dropped is never silent */
        rcp_store_stat(o->store, &in);
        if (*in.warning)
            fprintf(stderr, "rcp serve: --data: warning: %s\n", in.warning);
    }
    if (corpus && rcp_store_load_jsonl(o->store, o->model, corpus,
                                       STDERR_FILENO, err, sizeof err) < 0) {
        fprintf(stderr, "rcp serve: --corpus %s\n", err);
        return -1;
    }
    return 0;
}

static int serve(rcp_server_opts *o, rcp_model_opts *mo, const char *data,
                 const char *corpus, int salvage)
{
    const char *verr;
    rcp_server *s = NULL;
    int rc = 1;
    if (rcp_vec_init(NULL, &verr) != 0) {
        fprintf(stderr, "rcp serve: RCP_SIMD: %s\n", verr);
        return 2;
    }
    if (open_engine(o, mo, data, corpus, salvage) == 0) {
        if ((s = rcp_server_new(o)) == NULL)
            fputs("rcp serve: out of memory\n", stderr);
        else
            rc = rcp_server_run(s, STDIN_FILENO, STDOUT_FILENO) == 0 ? 0 : 1;
    }
    rcp_server_free(s);
    rcp_store_close(o->store);
    rcp_model_free(o->model);
    return rc;
}

#define MAX_FIELDS 64

static int cmd_serve(int argc, char **argv)
{
    static rcp_field fields[MAX_FIELDS];
    rcp_server_opts o;
    rcp_model_opts mo;
    const char *data = NULL, *corpus = NULL;
    int i, salvage = 0;
    memset(&o, 0, sizeof o);
    o.deadline_ms = -1;
    rcp_model_opts_init(&mo);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (strcmp(a, "--help") == 0) {
            fputs(usage_serve, stdout);
            return 0;
        } else if (strcmp(a, "--debug") == 0) {
            o.debug = 1;
        } else if (strcmp(a, "--salvage") == 0) {
            salvage = 1;
        } else if (strcmp(a, "--max-line") == 0) {
            if ((n = parse_count(v, 2, 1L << 30)) < 0)
                return usage_error("serve", "--max-line needs a byte count "
                                   "from 2 to 1073741824, not '%s'",
                                   v ? v : "");
            o.max_line = (size_t)n;
            i++;
        } else if (strcmp(a, "--max-batch") == 0) {
            if ((n = parse_count(v, 1, 1L << 24)) < 0)
                return usage_error("serve", "--max-batch needs a count from "
                                   "1 to 16777216, not '%s'", v ? v : "");
            o.max_batch = (size_t)n;
            i++;
        } else if (strcmp(a, "--dim") == 0) {
            if ((n = parse_count(v, 1, RCP_MODEL_MAX_DIM)) < 0)
                return usage_error("serve", "--dim needs a dimension from 1 "
                                   "to 4096, not '%s'", v ? v : "");
            mo.dim = (unsigned)n;
            i++;
        } else if (strcmp(a, "--field") == 0) {
            if (!v || o.nfields == MAX_FIELDS
                || rcp_field_parse(v, &fields[o.nfields]) != 0)
                return usage_error("serve", "--field needs NAME:TYPE with "
                                   "TYPE keyword, text, int, float, bool or "
                                   "date, not '%s'", v ? v : "");
            o.fields = fields;
            o.nfields++;
            i++;
        } else if (strcmp(a, "--data") == 0 || strcmp(a, "--corpus") == 0) {
            if (!v)
                return usage_error("serve", "%s needs a path", a);
            if (strcmp(a, "--data") == 0)
                data = v;
            else
                corpus = v;
            i++;
        } else if (strcmp(a, "--trust") == 0) {
            if (!v || (strcmp(v, "trusted") && strcmp(v, "community")
                       && strcmp(v, "untrusted")))
                return usage_error("serve", "--trust needs trusted, "
                                   "community or untrusted, not '%s'",
                                   v ? v : "");
            o.trust = v;
            i++;
        } else if (strcmp(a, "--vectors") == 0) {
            if (!v)
                return usage_error("serve", "--vectors needs a file%s", "");
            mo.vectors_path = v;
            i++;
        } else if (strcmp(a, "--deadline-ms") == 0) {
            if ((n = parse_count(v, 0, 86400000L)) < 0)
                return usage_error("serve", "--deadline-ms needs "
                                   "milliseconds from 0 to 86400000, not "
                                   "'%s'", v ? v : "");
            o.deadline_ms = n;
            i++;
        } else {
            return usage_error("serve", "unknown option '%s'", a);
        }
    }
    if (salvage && !data)
        return usage_error("serve", "--salvage needs --data DIR%s", "");
    return serve(&o, &mo, data, corpus, salvage);
}

/* Read all of stdin as bytes (NULs included). */
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
    *len = n;
    return buf;
}

static int cmd_json(int argc, char **argv)
{
    rcp_arena a;
    rcp_buf out;
    rcp_jw w;
    rcp_json_err err;
    const rcp_json *v;
    size_t len;
    char *text;
    int rc = 0;
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        fputs("usage: rcp json < FILE\n\nValidate one JSON text (RFC 8259,"
              " strict UTF-8) and print it compact.\nOn error print 'error"
              " at byte N: reason' on stderr and exit 1.\n", stdout);
        return 0;
    }
    if (argc > 1)
        return usage_error("json", "unexpected argument '%s'", argv[1]);
    text = slurp(stdin, &len);
    if (!text) {
        fputs("rcp json: out of memory\n", stderr);
        return 1;
    }
    rcp_arena_init(&a, 0);
    rcp_buf_init(&out);
    v = rcp_json_parse(&a, text, len, 0, &err);
    if (!v) {
        fprintf(stderr, "error at byte %lu: %s\n", (unsigned long)err.offset,
                err.msg);
        rc = 1;
    } else {
        rcp_jw_init(&w, &out);
        rcp_jw_value(&w, v);
        rcp_buf_putc(&out, '\n');
        if (out.oom) {
            fputs("rcp json: out of memory\n", stderr);
            rc = 1;
        } else {
            fwrite(out.data, 1, out.len, stdout);
        }
    }
    rcp_buf_free(&out);
    rcp_arena_free(&a);
    rcp_free(text);
    return rc;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (!cmd) {
        fputs(usage_top, stderr);
        return 2;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_top, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("rcp %s (RCP/%d)\n", RCP_VERSION, RCP_PROTOCOL_VERSION);
        return 0;
    }
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "json") == 0)
        return cmd_json(argc - 1, argv + 1);
    if (strcmp(cmd, "conform") == 0)
        return rcp_conform_main(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return usage_error(NULL, "unknown option '%s'", cmd);
    return usage_error(NULL, "unknown command '%s'", cmd);
}
