/* Every string that comes from a trace reaches the user through here: on a
 * terminal with control bytes (C0, DEL, C1, bytes that are not UTF-8)
 * shown as \xNN, as git and less do; in JSON quoted, escaped, and decoded
 * as UTF-8 with U+FFFD for what is not (the HTML export carries the
 * trace's text only as such JSON, placed with textContent). A trace is
 * untrusted input (it may be mailed to you): nothing in it may move the
 * cursor, end a JSON string or a <script> element. It does not decide what
 * is printed, only how. Also JSON documents made whole before they are
 * printed, and the viewer's own error lines and colors. */
#include "vw.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- UTF-8 */

/* The code point at p (at most n bytes) and its length in *len; -1 and
 * *len = 1 when p does not start a well-formed sequence (overlong forms,
 * surrogates and values past U+10FFFF included). */
static long utf8_next(const unsigned char *p, size_t n, int *len) {
    *len = 1;
    if (p[0] < 0x80) return p[0];
    int k = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    if (!k || (size_t)k > n) return -1;
    long c = p[0] & (0x7f >> k);
    for (int i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80) return -1;
        c = c << 6 | (p[i] & 0x3f);
    }
    if ((k == 3 && c < 0x800) || (k == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff)) return -1;
    *len = k;
    return c;
}

/* ---------------------------------------------------------------- terminal */

void vw_put_escaped(FILE *f, const char *s) { vw_put_escaped_pad(f, s, 0); }

/* keep_tab: a tab passes as it is (a source line in a patch, whose indentation must stay applicable). */
static void put_escaped(FILE *f, const char *s, int width, int keep_tab) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    int cols = 0;
    for (size_t i = 0; i < n;) {
        int len;
        long c = utf8_next(p + i, n - i, &len);
        if (keep_tab && c == '\t') {
            fputc('\t', f);
            cols++;
        } else if (c < 0 || c < 0x20 || c == 0x7f) { /* C0, DEL, a lone byte such as the one-byte CSI 0x9b */
            cols += fprintf(f, "\\x%02x", p[i]);
        } else if (c >= 0x80 && c <= 0x9f) { /* C1 as UTF-8: a terminal may act on it too */
            for (int k = 0; k < len; k++) cols += fprintf(f, "\\x%02x", p[i + k]);
        } else {
            fwrite(p + i, 1, (size_t)len, f);
            cols++;
        }
        i += (size_t)len;
    }
    for (; cols < width; cols++) fputc(' ', f);
}

void vw_put_escaped_pad(FILE *f, const char *s, int width) { put_escaped(f, s, width, 0); }

void vw_put_escaped_line(FILE *f, const char *s) { put_escaped(f, s, 0, 1); }

const char *vw_escape_ctl(const char *s, char *buf, size_t size) {
    size_t n = 0;
    for (; s && *s && n + 5 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
        else
            buf[n++] = (char)c;
    }
    buf[n] = 0;
    return buf;
}

/* ---------------------------------------------------------------- JSON */

/* JSON text, valid UTF-8 whatever s holds; <, >, &, U+2028 and U+2029 as
 * \u escapes too, so that it can sit in an HTML <script> element (and in a
 * JavaScript string) as it is. */
void vw_put_json_string(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        int len;
        long c = utf8_next(p + i, n - i, &len);
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case -1: fputs("\\ufffd", f); break;
        default:
            if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&' || (c >= 0x80 && c <= 0x9f) || c == 0x2028 ||
                c == 0x2029)
                fprintf(f, "\\u%04lx", (unsigned long)c);
            else
                fwrite(p + i, 1, (size_t)len, f);
        }
        i += (size_t)len;
    }
    fputc('"', f);
}

/* A meta value (text in the trace, whatever wrote it) as a JSON value: the
 * number when it is a plain decimal integer, null when empty, else a string. */
void vw_put_json_meta(FILE *f, const char *v) {
    const char *p = v && (*v == '-') ? v + 1 : v;
    size_t digits = p ? strspn(p, "0123456789") : 0;
    if (!v || !*v)
        fputs("null", f);
    else if (digits && !p[digits] && digits <= 18 && (p[0] != '0' || digits == 1))
        fputs(v, f);
    else
        vw_put_json_string(f, v);
}

/* ---------------------------------------------------------------- whole documents */

/* Output that must not be left half-written (a JSON document): collected
 * in memory, then written in one go by doc_end when the command
 * succeeded, dropped when it did not. */
static FILE *doc_begin(struct vw_doc *d) {
    d->buf = NULL, d->size = 0;
    d->f = open_memstream(&d->buf, &d->size);
    if (!d->f) vw_error("out of memory");
    return d->f;
}

static int doc_end(struct vw_doc *d, FILE *out, int keep) {
    int rc = 0;
    if (d->f && fclose(d->f) != 0) rc = -1;
    d->f = NULL;
    if (keep && rc == 0 && d->buf) {
        if (fwrite(d->buf, 1, d->size, out) != d->size || fflush(out) != 0) rc = -1;
    }
    free(d->buf);
    d->buf = NULL;
    return rc;
}

/* The same for a command that prints to stdout: stdout itself is the
 * document's stream until vw_doc_release (glibc lets a program assign
 * stdout), and the real one receives it all or nothing. */
int vw_doc_capture(struct vw_doc *d) {
    if (!doc_begin(d)) return -1;
    d->saved = stdout;
    stdout = d->f;
    return 0;
}

int vw_doc_release(struct vw_doc *d, int keep) {
    stdout = d->saved;
    return doc_end(d, stdout, keep);
}

/* ---------------------------------------------------------------- the viewer's own text */

const char *vw_color(enum vw_color c) {
    static int on = -1;
    if (on < 0) {
        const char *nc = getenv("NO_COLOR");
        on = isatty(STDOUT_FILENO) && !(nc && *nc);
    }
    static const char *seq[] = {"\033[0m", "\033[1m", "\033[1;31m", "\033[1;32m", "\033[33m", "\033[2m"};
    return on ? seq[c] : "";
}

/* One line, whatever the arguments hold: a name from a trace in the message (a file, an op, a rule's
 * text) is escaped here, so no caller can forget to (a newline in it cannot start a second line). */
void vw_error(const char *fmt, ...) {
    char small[1024], *text = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (text = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    fputs("devtrace: ", stderr);
    vw_put_escaped(stderr, text ? text : small);
    fputc('\n', stderr);
    if (text != small) free(text);
}
