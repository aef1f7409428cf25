/*
** report.c -- the conformance suite's reports for people and for CI:
** JUnit XML, one self-contained HTML page, and a section x server
** compatibility matrix, all rendered from `rcp conform --json` reports.
**
** Kept apart from conform.c, which runs checks: the JSON report is the
** seam (it is also what other tools read), so a matrix can be drawn as
** well from reports saved earlier (rcp conform --report A.json ...) as
** from servers run now (rcp conform --matrix -- A ::: B).  Nothing here
** talks to a server.
**
** The HTML page has no external assets (no script, no font, no image):
** it can be published as one file and renders the same offline.
*/
#include "conform.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_FILES 64               /* check files (sections) in a report */

enum { C_PASS, C_FAIL, C_SKIP, C_WARN, C_N };

/* MARK: - Small helpers -------------------------------------------------- */

static void put_printf(rcp_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        rcp_buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n
                    : sizeof tmp - 1);
}

/* Text escaped for XML and HTML alike (&, <, >, quotes); bytes below 0x20
** other than tab and newline (XML 1.0 forbids them) become U+FFFD. */
static void put_esc(rcp_buf *b, const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '&':  rcp_buf_puts(b, "&amp;");  break;
        case '<':  rcp_buf_puts(b, "&lt;");   break;
        case '>':  rcp_buf_puts(b, "&gt;");   break;
        case '"':  rcp_buf_puts(b, "&quot;"); break;
        case '\'': rcp_buf_puts(b, "&#39;");  break;
        default:
            if (ch < 0x20 && ch != '\t' && ch != '\n')
                rcp_buf_puts(b, "\xEF\xBF\xBD");
            else
                rcp_buf_putc(b, (char)ch);
        }
    }
}

/* Markup (XML, HTML) is escaped; the text matrix is not. */
static void put_s(rcp_buf *b, const char *s, size_t n, int markup)
{
    if (markup)
        put_esc(b, s, n);
    else
        rcp_buf_put(b, s, n);
}

/* A string member; dflt when it is absent or not a string. */
static void put_m(rcp_buf *b, const rcp_json *o, const char *key,
                  const char *dflt, int markup)
{
    const rcp_json *v = o && o->type == RCP_JSON_OBJECT
        ? rcp_json_get(o, key) : NULL;
    if (v && v->type == RCP_JSON_STRING)
        put_s(b, v->s, v->n, markup);
    else
        put_s(b, dflt, strlen(dflt), markup);
}

static void put_member(rcp_buf *b, const rcp_json *o, const char *key,
                       const char *dflt)
{
    put_m(b, o, key, dflt, 1);
}

/* A JSON value as compact text, escaped. */
static void put_json(rcp_buf *b, const rcp_json *v)
{
    rcp_buf t;
    rcp_jw w;
    rcp_buf_init(&t);
    rcp_jw_init(&w, &t);
    rcp_jw_value(&w, v);
    put_esc(b, t.data ? t.data : "", t.len);
    rcp_buf_free(&t);
}

static const rcp_json *get(const rcp_json *o, const char *key)
{
    return o && o->type == RCP_JSON_OBJECT ? rcp_json_get(o, key) : NULL;
}

static int status_of(const rcp_json *check)
{
    const rcp_json *s = get(check, "status");
    return rcp_json_streq(s, "pass") ? C_PASS : rcp_json_streq(s, "fail")
        ? C_FAIL : rcp_json_streq(s, "warn") ? C_WARN : C_SKIP;
}

static int same_str(const rcp_json *a, const rcp_json *b)
{
    return a && b && a->type == RCP_JSON_STRING && b->type == RCP_JSON_STRING
        && a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
}

static long num(const rcp_json *v)
{
    int64_t x;
    return v && rcp_json_int(v, &x) ? (long)x : 0;
}

/* MARK: - Sections: the rows of every table ------------------------------ */

/* The check files of all reports, in order of first appearance (each
** report lists its files in section order), with their titles. */
typedef struct rows {
    const rcp_json *file[MAX_FILES];   /* {"file", "section", "title"} */
    size_t          n;
} rows;

static void collect_rows(const rcp_json *const *reports, size_t nr, rows *r)
{
    size_t i, j, k;
    r->n = 0;
    for (i = 0; i < nr; i++) {
        const rcp_json *fs = get(reports[i], "files");
        for (j = 0; fs && fs->type == RCP_JSON_ARRAY && j < fs->n; j++) {
            const rcp_json *f = &fs->kids[j];
            for (k = 0; k < r->n; k++)
                if (same_str(get(r->file[k], "file"), get(f, "file")))
                    break;
            if (k == r->n && r->n < MAX_FILES)
                r->file[r->n++] = f;
        }
    }
}

/* Did any report run a check of row j?  (--only leaves sections out.) */
static int row_ran(const rcp_json *const *reports, size_t nr,
                   const rcp_json *file);

/* How report's checks of file ended: counts per status. */
static void count_file(const rcp_json *report, const rcp_json *file,
                       long *c)
{
    const rcp_json *cs = get(report, "checks");
    size_t i;
    memset(c, 0, C_N * sizeof *c);
    for (i = 0; cs && cs->type == RCP_JSON_ARRAY && i < cs->n; i++)
        if (same_str(get(&cs->kids[i], "file"), get(file, "file")))
            c[status_of(&cs->kids[i])]++;
}

static int row_ran(const rcp_json *const *reports, size_t nr,
                   const rcp_json *file)
{
    long c[C_N];
    size_t i;
    for (i = 0; i < nr; i++) {
        count_file(reports[i], file, c);
        if (c[C_PASS] + c[C_FAIL] + c[C_SKIP] + c[C_WARN])
            return 1;
    }
    return 0;
}

/* The name a report's server goes by: server.info name and version, or
** its command's first word. */
static void server_name_m(rcp_buf *b, const rcp_json *report, int markup)
{
    const rcp_json *info = get(get(report, "server"), "info");
    const rcp_json *cmd = get(get(report, "server"), "command");
    if (get(info, "name")) {
        put_m(b, info, "name", "?", markup);
        rcp_buf_putc(b, ' ');
        put_m(b, info, "version", "", markup);
    } else if (cmd && cmd->type == RCP_JSON_ARRAY && cmd->n
               && cmd->kids[0].type == RCP_JSON_STRING) {
        put_s(b, cmd->kids[0].s, cmd->kids[0].n, markup);
    } else {
        rcp_buf_puts(b, "(server)");
    }
}

static void server_name(rcp_buf *b, const rcp_json *report)
{
    server_name_m(b, report, 1);
}

static void command_line_m(rcp_buf *b, const rcp_json *report, int markup)
{
    const rcp_json *cmd = get(get(report, "server"), "command");
    size_t i;
    for (i = 0; cmd && cmd->type == RCP_JSON_ARRAY && i < cmd->n; i++) {
        if (i)
            rcp_buf_putc(b, ' ');
        if (cmd->kids[i].type == RCP_JSON_STRING)
            put_s(b, cmd->kids[i].s, cmd->kids[i].n, markup);
    }
}

static void command_line(rcp_buf *b, const rcp_json *report)
{
    command_line_m(b, report, 1);
}

static const char *level_of(const rcp_json *report)
{
    const rcp_json *l = get(report, "certifiedLevel");
    return rcp_json_streq(l, "L2") ? "L2" : rcp_json_streq(l, "L1") ? "L1"
        : rcp_json_streq(l, "L0") ? "L0" : "none";
}

/* MARK: - JUnit XML ------------------------------------------------------ */

static void junit_case(rcp_buf *o, const rcp_json *c)
{
    int st = status_of(c);
    rcp_buf_puts(o, "    <testcase classname=\"rcp-conform.");
    put_member(o, c, "file", "?");
    rcp_buf_puts(o, "\" name=\"");
    put_member(o, c, "id", "?");
    rcp_buf_puts(o, " [");
    put_member(o, c, "level", "");
    rcp_buf_putc(o, ' ');
    put_member(o, c, "keyword", "");
    rcp_buf_puts(o, "] ");
    put_member(o, c, "title", "");
    put_printf(o, "\" time=\"%.3f\"", num(get(c, "ms")) / 1000.0);
    if (st == C_PASS) {
        rcp_buf_puts(o, "/>\n");
        return;
    }
    rcp_buf_puts(o, ">\n");
    if (st == C_SKIP) {
        rcp_buf_puts(o, "      <skipped message=\"");
        put_member(o, c, "reason", "skipped");
        rcp_buf_puts(o, "\"/>\n");
    } else {
        rcp_buf_puts(o, st == C_FAIL ? "      <failure type=\""
                     : "      <system-out>WARN (advisory, ");
        put_member(o, c, "keyword", "");
        rcp_buf_puts(o, st == C_FAIL ? "\" message=\"" : "): ");
        put_member(o, c, "reason", st == C_FAIL ? "failed" : "");
        rcp_buf_puts(o, st == C_FAIL ? "\">" : "\n");
        put_member(o, c, "section", "");
        rcp_buf_puts(o, ": ");
        put_member(o, c, "sentence", "");
        rcp_buf_puts(o, "\nsent: ");
        put_json(o, get(c, "sent"));
        rcp_buf_puts(o, "\nexpected: ");
        put_member(o, get(c, "expected"), "text", "");
        rcp_buf_puts(o, "\ngot: ");
        put_json(o, get(c, "got"));
        rcp_buf_puts(o, st == C_FAIL ? "</failure>\n" : "</system-out>\n");
    }
    rcp_buf_puts(o, "    </testcase>\n");
}

int rcp_conform_junit(const rcp_json *const *reports, size_t nr,
                      rcp_buf *out)
{
    rows r;
    size_t i, j, k;
    long tot[C_N] = { 0, 0, 0, 0 }, c[C_N];
    collect_rows(reports, nr, &r);
    for (i = 0; i < nr; i++)
        for (j = 0; j < r.n; j++) {
            count_file(reports[i], r.file[j], c);
            for (k = 0; k < C_N; k++)
                tot[k] += c[k];
        }
    rcp_buf_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    put_printf(out, "<testsuites name=\"rcp conform\" tests=\"%ld\" "
               "failures=\"%ld\" skipped=\"%ld\">\n", tot[0] + tot[1]
               + tot[2] + tot[3], tot[C_FAIL], tot[C_SKIP]);
    for (i = 0; i < nr; i++) {
        const rcp_json *cs = get(reports[i], "checks");
        if (get(reports[i], "fatal")) {
            rcp_buf_puts(out, "  <testsuite name=\"");
            server_name(out, reports[i]);
            rcp_buf_puts(out, "\" tests=\"1\" failures=\"1\">\n    <testcase "
                         "classname=\"rcp-conform\" name=\"the server can be "
                         "tested\">\n      <failure message=\"");
            put_member(out, get(reports[i], "fatal"), "reason", "fatal");
            rcp_buf_puts(out, "\"/>\n    </testcase>\n  </testsuite>\n");
        }
        for (j = 0; j < r.n; j++) {
            count_file(reports[i], r.file[j], c);
            if (!(c[0] + c[1] + c[2] + c[3]))
                continue;
            rcp_buf_puts(out, "  <testsuite name=\"");
            if (nr > 1) {
                server_name(out, reports[i]);
                rcp_buf_puts(out, ": ");
            }
            put_member(out, r.file[j], "section", "");
            rcp_buf_putc(out, ' ');
            put_member(out, r.file[j], "title", "");
            put_printf(out, "\" tests=\"%ld\" failures=\"%ld\" skipped=\"%ld"
                       "\">\n", c[0] + c[1] + c[2] + c[3], c[C_FAIL],
                       c[C_SKIP]);
            for (k = 0; cs && cs->type == RCP_JSON_ARRAY && k < cs->n; k++)
                if (same_str(get(&cs->kids[k], "file"),
                             get(r.file[j], "file")))
                    junit_case(out, &cs->kids[k]);
            rcp_buf_puts(out, "  </testsuite>\n");
        }
    }
    rcp_buf_puts(out, "</testsuites>\n");
    return out->oom ? -1 : 0;
}

/* MARK: - Text matrix ---------------------------------------------------- */

/* One cell: "ok 12", "FAIL 2/14", "warn 1/9", "-" (all skipped). */
static void cell_text(char *buf, size_t n, const long *c)
{
    long judged = c[C_PASS] + c[C_FAIL] + c[C_WARN];
    if (!judged)
        snprintf(buf, n, "-");
    else if (c[C_FAIL])
        snprintf(buf, n, "FAIL %ld/%ld", c[C_FAIL], judged);
    else if (c[C_WARN])
        snprintf(buf, n, "warn %ld/%ld", c[C_WARN], judged);
    else
        snprintf(buf, n, "ok %ld", judged);
}

int rcp_conform_matrix_text(const rcp_json *const *reports, size_t nr,
                            rcp_buf *out)
{
    rows r;
    size_t i, j;
    long c[C_N];
    char cell[32];
    collect_rows(reports, nr, &r);
    rcp_buf_puts(out, "\nsection x server (failed/judged; - = all skipped)\n");
    for (i = 0; i < nr; i++) {
        put_printf(out, "  [%lu] ", (unsigned long)(i + 1));
        server_name_m(out, reports[i], 0);
        rcp_buf_puts(out, "  (");
        command_line_m(out, reports[i], 0);
        put_printf(out, ")  certified %s\n", level_of(reports[i]));
    }
    put_printf(out, "  %-40s", "section");
    for (i = 0; i < nr; i++) {
        snprintf(cell, sizeof cell, "[%lu]", (unsigned long)(i + 1));
        put_printf(out, "  %-12s", cell);
    }
    rcp_buf_putc(out, '\n');
    for (j = 0; j < r.n; j++) {
        rcp_buf t;
        if (!row_ran(reports, nr, r.file[j]))
            continue;
        rcp_buf_init(&t);
        put_m(&t, r.file[j], "section", "", 0);
        rcp_buf_putc(&t, ' ');
        put_m(&t, r.file[j], "title", "", 0);
        rcp_buf_putc(&t, '\0');
        put_printf(out, "  %-40.40s", t.data ? t.data : "");
        rcp_buf_free(&t);
        for (i = 0; i < nr; i++) {
            count_file(reports[i], r.file[j], c);
            cell_text(cell, sizeof cell, c);
            put_printf(out, "  %-12s", cell);
        }
        rcp_buf_putc(out, '\n');
    }
    return out->oom ? -1 : 0;
}

/* MARK: - HTML ----------------------------------------------------------- */

static const char css[] =
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,"
    "sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1d2329;"
    "background:#fff}"
    "h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin:1.6em 0 .5em;"
    "border-bottom:1px solid #d8dee4;padding-bottom:.2em}"
    "h3{font-size:1.05em;margin:1.2em 0 .3em}"
    ".meta{color:#57606a;font-size:.9em}"
    ".servers{display:flex;flex-wrap:wrap;gap:1em;margin:1em 0}"
    ".card{border:1px solid #d8dee4;border-radius:8px;padding:.8em 1.1em;"
    "min-width:16em}"
    ".badge{display:inline-block;font-weight:700;font-size:1.5em;"
    "padding:.1em .6em;border-radius:6px;color:#fff;background:#57606a}"
    ".L0{background:#0969da}.L1{background:#1a7f37}.L2{background:#8250df}"
    ".none{background:#cf222e}"
    "table{border-collapse:collapse;margin:.5em 0;font-size:.92em}"
    "th,td{border:1px solid #d8dee4;padding:.3em .6em;text-align:left;"
    "vertical-align:top}th{background:#f6f8fa}"
    "td.c{text-align:center;white-space:nowrap;font-weight:600}"
    ".pass{background:#dafbe1;color:#116329}.fail{background:#ffebe9;"
    "color:#a40e26}.warn{background:#fff8c5;color:#7d4e00}"
    ".skip{background:#f6f8fa;color:#8c959f}"
    ".check{border-left:4px solid #cf222e;padding:.2em .8em;margin:.8em 0;"
    "background:#fffafa}.check.w{border-color:#bf8700;background:#fffdf0}"
    ".id{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;"
    "font-weight:600}"
    "pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;"
    "padding:.4em .6em;margin:.2em 0;font-size:.85em;border-radius:4px;"
    "max-height:16em;overflow:auto}"
    "q{color:#57606a;font-style:italic}"
    ".k{color:#57606a;font-size:.85em;text-transform:uppercase;"
    "letter-spacing:.04em}";

static void html_cell(rcp_buf *o, const long *c)
{
    char cell[32];
    const char *cls = c[C_FAIL] ? "fail" : c[C_WARN] ? "warn"
        : c[C_PASS] ? "pass" : "skip";
    cell_text(cell, sizeof cell, c);
    put_printf(o, "<td class=\"c %s\" title=\"%ld passed, %ld failed, %ld "
               "warned, %ld skipped\">%s</td>", cls, c[C_PASS], c[C_FAIL],
               c[C_WARN], c[C_SKIP], cell);
}

/* The server cards: certified level, declaration, counts, blockers. */
static void html_cards(rcp_buf *o, const rcp_json *const *reports, size_t nr)
{
    size_t i, j;
    rcp_buf_puts(o, "<div class=\"servers\">\n");
    for (i = 0; i < nr; i++) {
        const rcp_json *rp = reports[i], *sum = get(rp, "summary");
        const rcp_json *lv = get(rp, "levels");
        const char *l = level_of(rp);
        rcp_buf_puts(o, "<div class=\"card\">");
        if (nr > 1)
            put_printf(o, "<div class=\"k\">server %lu</div>",
                       (unsigned long)(i + 1));
        rcp_buf_puts(o, "<div><b>");
        server_name(o, rp);
        rcp_buf_puts(o, "</b></div><div class=\"meta\"><code>");
        command_line(o, rp);
        put_printf(o, "</code></div><p><span class=\"badge %s\">%s</span> "
                   "certified</p>", l, l);
        rcp_buf_puts(o, "<div>declared <code>_meta.conformance</code>: ");
        put_member(o, rp, "declaredLevel", "none");
        rcp_buf_puts(o, rcp_json_get(rp, "declarationHonest")
                     && rcp_json_get(rp, "declarationHonest")->type
                     == RCP_JSON_TRUE ? " &mdash; consistent"
                     : " &mdash; <b>not honest</b> (§14.5)");
        rcp_buf_puts(o, "</div>");
        if (get(rp, "fatal")) {
            rcp_buf_puts(o, "<p class=\"fail\">could not be tested: ");
            put_member(o, get(rp, "fatal"), "reason", "");
            rcp_buf_puts(o, "</p>");
        }
        put_printf(o, "<div class=\"meta\">%ld passed, %ld failed, %ld warned, "
                   "%ld skipped</div>", num(get(sum, "passed")),
                   num(get(sum, "failed")), num(get(sum, "warned")),
                   num(get(sum, "skipped")));
        for (j = 0; lv && lv->type == RCP_JSON_ARRAY && j < lv->n; j++) {
            const rcp_json *b = get(&lv->kids[j], "blockedBy");
            size_t k;
            if (!b || b->type != RCP_JSON_ARRAY || !b->n)
                continue;
            rcp_buf_puts(o, "<div class=\"meta\">");
            put_member(o, &lv->kids[j], "level", "?");
            rcp_buf_puts(o, " blocked by:");
            for (k = 0; k < b->n; k++) {
                rcp_buf_puts(o, " <span class=\"id\">");
                if (b->kids[k].type == RCP_JSON_STRING)
                    put_esc(o, b->kids[k].s, b->kids[k].n);
                rcp_buf_puts(o, "</span>");
            }
            rcp_buf_puts(o, "</div>");
            break;                       /* the next level's blockers */
        }
        rcp_buf_puts(o, "</div>\n");
    }
    rcp_buf_puts(o, "</div>\n");
}

static void html_matrix(rcp_buf *o, const rcp_json *const *reports,
                        size_t nr, const rows *r)
{
    size_t i, j;
    long c[C_N];
    rcp_buf_puts(o, nr > 1 ? "<h2>Compatibility matrix</h2>\n"
                 : "<h2>By section</h2>\n");
    rcp_buf_puts(o, "<table><tr><th>section</th>");
    for (i = 0; i < nr; i++) {
        rcp_buf_puts(o, "<th>");
        if (nr > 1)
            put_printf(o, "%lu: ", (unsigned long)(i + 1));
        server_name(o, reports[i]);
        put_printf(o, "<br><span class=\"badge %s\" style=\"font-size:.8em\">"
                   "%s</span></th>", level_of(reports[i]),
                   level_of(reports[i]));
    }
    rcp_buf_puts(o, "</tr>\n");
    for (j = 0; j < r->n; j++) {
        if (!row_ran(reports, nr, r->file[j]))
            continue;
        rcp_buf_puts(o, "<tr><td>");
        put_member(o, r->file[j], "section", "");
        rcp_buf_puts(o, " ");
        put_member(o, r->file[j], "title", "");
        rcp_buf_puts(o, "</td>");
        for (i = 0; i < nr; i++) {
            count_file(reports[i], r->file[j], c);
            html_cell(o, c);
        }
        rcp_buf_puts(o, "</tr>\n");
    }
    rcp_buf_puts(o, "</table>\n<p class=\"meta\">A cell counts the checks "
                 "judged (passed, failed or warned); - means every check of "
                 "the section was skipped: the server does not advertise "
                 "what it needs.</p>\n");
}

static void html_pre(rcp_buf *o, const char *label, const rcp_json *v)
{
    size_t i;
    if (!v)
        return;
    put_printf(o, "<div class=\"k\">%s</div><pre>", label);
    if (v->type == RCP_JSON_ARRAY && v->n)
        for (i = 0; i < v->n; i++) {
            if (i)
                rcp_buf_putc(o, '\n');
            put_json(o, &v->kids[i]);
        }
    else if (v->type == RCP_JSON_ARRAY)
        rcp_buf_puts(o, "(nothing)");
    else
        put_json(o, v);
    rcp_buf_puts(o, "</pre>");
}

static void html_check(rcp_buf *o, const rcp_json *c, int st)
{
    put_printf(o, "<div class=\"check%s\"><div><span class=\"id\">",
               st == C_WARN ? " w" : "");
    put_member(o, c, "id", "?");
    rcp_buf_puts(o, "</span> <span class=\"k\">");
    rcp_buf_puts(o, st == C_FAIL ? "fail" : "warn");
    rcp_buf_puts(o, " &middot; ");
    put_member(o, c, "level", "");
    rcp_buf_puts(o, " &middot; ");
    put_member(o, c, "section", "");
    rcp_buf_puts(o, " ");
    put_member(o, c, "keyword", "");
    rcp_buf_puts(o, "</span></div><div>");
    put_member(o, c, "title", "");
    rcp_buf_puts(o, "</div><div><q>");
    put_member(o, c, "sentence", "");
    rcp_buf_puts(o, "</q></div>");
    if (get(c, "reason")) {
        rcp_buf_puts(o, "<div class=\"k\">why</div><pre>");
        put_member(o, c, "reason", "");
        rcp_buf_puts(o, "</pre>");
    }
    html_pre(o, "sent", get(c, "sent"));
    if (get(get(c, "expected"), "text")) {
        rcp_buf_puts(o, "<div class=\"k\">expected</div><pre>");
        put_member(o, get(c, "expected"), "text", "");
        rcp_buf_puts(o, "</pre>");
    }
    html_pre(o, "got", get(c, "got"));
    html_pre(o, "server", get(c, "server"));
    rcp_buf_puts(o, "</div>\n");
}

/* Every failure (then every warning) of one report, with its evidence. */
static void html_findings(rcp_buf *o, const rcp_json *rp, size_t i,
                          size_t nr)
{
    const rcp_json *cs = get(rp, "checks");
    size_t k;
    int st, any = 0;
    for (st = C_FAIL; st <= C_WARN; st += C_WARN - C_FAIL) {
        for (k = 0; cs && cs->type == RCP_JSON_ARRAY && k < cs->n; k++)
            if (status_of(&cs->kids[k]) == st) {
                if (!any++) {
                    rcp_buf_puts(o, "<h3>");
                    if (nr > 1)
                        put_printf(o, "%lu: ", (unsigned long)(i + 1));
                    server_name(o, rp);
                    rcp_buf_puts(o, "</h3>\n");
                }
                html_check(o, &cs->kids[k], st);
            }
    }
    if (!any) {
        rcp_buf_puts(o, "<h3>");
        if (nr > 1)
            put_printf(o, "%lu: ", (unsigned long)(i + 1));
        server_name(o, rp);
        rcp_buf_puts(o, "</h3><p>No check failed or warned.</p>\n");
    }
}

int rcp_conform_html(const rcp_json *const *reports, size_t nr,
                     rcp_buf *out)
{
    rows r;
    size_t i;
    const rcp_json *suite = nr ? get(reports[0], "suite") : NULL;
    collect_rows(reports, nr, &r);
    rcp_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
                 "charset=\"utf-8\"><meta name=\"viewport\" content=\""
                 "width=device-width,initial-scale=1\"><title>");
    rcp_buf_puts(out, nr > 1 ? "RCP/1 compatibility matrix"
                 : "RCP/1 conformance report");
    rcp_buf_puts(out, "</title><style>");
    rcp_buf_puts(out, css);
    rcp_buf_puts(out, "</style></head><body>\n<h1>");
    if (nr > 1) {
        rcp_buf_puts(out, "RCP/1 compatibility matrix");
    } else {
        rcp_buf_puts(out, "RCP/1 conformance: ");
        if (nr)
            server_name(out, reports[0]);
    }
    rcp_buf_puts(out, "</h1>\n<div class=\"meta\">");
    put_member(out, suite, "name", "rcp conform");
    rcp_buf_puts(out, " ");
    put_member(out, suite, "version", "");
    put_printf(out, " &middot; %ld checks of ", num(get(suite, "checks")));
    put_member(out, suite, "spec", "RCP/1");
    rcp_buf_puts(out, " (§14.5: a level is certified when every MUST at it "
                 "and below passes and its profile holds; SHOULDs warn)"
                 "</div>\n");
    html_cards(out, reports, nr);
    html_matrix(out, reports, nr, &r);
    rcp_buf_puts(out, "<h2>Failures and warnings</h2>\n");
    for (i = 0; i < nr; i++)
        html_findings(out, reports[i], i, nr);
    rcp_buf_puts(out, "</body></html>\n");
    return out->oom ? -1 : 0;
}
