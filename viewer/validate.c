/* The shapes of source facts and of the code a fix writes (validate.h). A trace is untrusted input: a producer
 * (the PyTorch adapter's source.py, the tracer's cfacts.c) writes each fact in one shape, documented in
 * docs/source-facts.md; any other value was not written by a producer, and the viewer refuses it rather than
 * copy it into a patch. Pure text checks: no trace, no model. */
#include "validate.h"

#include "trace_schema.h"

#include <string.h>

/* The code point at p and its length in *len; -1 for a malformed or overlong sequence. */
static long utf8_at(const unsigned char *p, int *len) {
    *len = 1;
    if (p[0] < 0x80) return p[0];
    int k = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    if (!k) return -1;
    long c = p[0] & (0x7f >> k);
    for (int i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80) return -1;
        c = c << 6 | (p[i] & 0x3f);
    }
    if ((k == 3 && c < 0x800) || (k == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff)) return -1;
    *len = k;
    return c;
}

/* The length of the identifier character at p (0: none): ASCII letters, digits (when digit), _, or a code
 * point past U+00A0 that is no space, format or bidi control (U+2000-U+206F, U+FEFF, U+FFF0 on). */
static int ident_char(const char *p, int digit) {
    unsigned char c = (unsigned char)*p;
    if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
    if (c >= '0' && c <= '9') return digit;
    if (c < 0x80) return 0;
    int len;
    long cp = utf8_at((const unsigned char *)p, &len);
    if (cp < 0xa1 || (cp >= 0x2000 && cp <= 0x206f) || cp == 0xfeff || cp >= 0xfff0 || cp == 0x3000) return 0;
    return len;
}

/* The end of the identifier at s, or NULL when none starts there. */
static const char *ident_end(const char *s) {
    int k = ident_char(s, 0);
    if (!k) return NULL;
    s += k;
    while ((k = ident_char(s, 1)) > 0) s += k;
    return s;
}

int vw_shape_ident(const char *s) {
    const char *e = s ? ident_end(s) : NULL;
    return e && !*e;
}

int vw_shape_member(const char *s, int arrows) {
    if (!s) return 0;
    for (;;) {
        const char *e = ident_end(s);
        if (!e) return 0;
        if (!*e) return 1;
        if (*e == '.')
            s = e + 1;
        else if (arrows && e[0] == '-' && e[1] == '>')
            s = e + 2;
        else
            return 0;
    }
}

int vw_shape_callee(const char *s) {
    if (!s) return 0;
    for (;;) {
        const char *e = ident_end(s);
        if (!e) return 0;
        if (!*e) return 1;
        if (*e == '.')
            s = e + 1;
        else if ((e[0] == '-' && e[1] == '>') || (e[0] == ':' && e[1] == ':'))
            s = e + 2;
        else
            return 0;
    }
}

int vw_shape_indent(const char *s) {
    size_t n = strspn(s, " \t\f");
    return !s[n] && n <= 255;
}

int vw_shape_device_literal(const char *s) {
    size_t n = strlen(s);
    if (n < 3 || n > 40 || s[0] != s[n - 1] || (s[0] != '"' && s[0] != '\'')) return 0;
    size_t k = 1;
    while (k < n - 1 && s[k] >= 'a' && s[k] <= 'z') k++;
    if (k == 1) return 0;
    if (k < n - 1 && s[k] == ':') {
        size_t d = ++k;
        while (k < n - 1 && s[k] >= '0' && s[k] <= '9') k++;
        if (k == d || k - d > 5) return 0;
    }
    return k == n - 1;
}

/* A member whose names may each be indexed by a number or a name: gpus[0], args.devices[rank]. */
static int indexed_member(const char *s) {
    for (;;) {
        const char *e = ident_end(s);
        if (!e) return 0;
        while (*e == '[') {
            const char *i = e + 1, *ie = ident_end(i);
            if (!ie) ie = i + strspn(i, "0123456789");
            if (ie == i || *ie != ']') return 0;
            e = ie + 1;
        }
        if (!*e) return 1;
        if (*e == '.')
            s = e + 1;
        else if (e[0] == '-' && e[1] == '>')
            s = e + 2;
        else
            return 0;
    }
}

/* The device of a module's parameters, as the viewer writes it: next(MODULE.parameters()).device. */
static int module_device(const char *s) {
    static const char head[] = "next(", tail[] = ".parameters()).device";
    size_t n = strlen(s), h = sizeof head - 1, t = sizeof tail - 1;
    char mod[256];
    if (n <= h + t || n - h - t >= sizeof mod || strncmp(s, head, h) || strcmp(s + n - t, tail)) return 0;
    memcpy(mod, s + h, n - h - t);
    mod[n - h - t] = 0;
    return vw_shape_member(mod, 0);
}

/* A native peer's device, as the viewer writes it: NAME.device() (C++), dt_device_of(NAME) (C on libdtrt). */
static int native_peer_device(const char *s) {
    static const char cxx[] = ".device()", c_head[] = "dt_device_of(";
    size_t n = strlen(s), t = sizeof cxx - 1, h = sizeof c_head - 1;
    char name[256];
    if (n > t && n - t < sizeof name && !strcmp(s + n - t, cxx)) {
        memcpy(name, s, n - t);
        name[n - t] = 0;
        return vw_shape_member(name, 1);
    }
    if (n > h + 1 && n - h - 1 < sizeof name && !strncmp(s, c_head, h) && s[n - 1] == ')') {
        memcpy(name, s + h, n - h - 1);
        name[n - h - 1] = 0;
        return vw_shape_member(name, 1);
    }
    return 0;
}

int vw_shape_device_code(const char *s) {
    size_t n = strspn(s, "0123456789");
    return indexed_member(s) || vw_shape_device_literal(s) || module_device(s) || native_peer_device(s) ||
           (n && n <= 5 && !s[n]); /* .cuda(0)'s 0 */
}

/* One line of source text as a producer copies it: no control character (tab only where tabs=1), no
 * newline, at most max bytes; empty only where empty=1. */
static int text_line(const char *s, size_t max, int empty, int tabs) {
    size_t n = 0;
    for (; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if ((c < 0x20 && !(tabs && c == '\t')) || c == 0x7f) return 0;
    }
    return n <= max && (n || empty);
}

/* One line of an expression's source text (text_line's rules): an expression holds no statement, so no `;`
 * outside its string and character literals (a producer's text may be cut short: an open literal runs to the
 * end). */
static int expr_line(const char *s, size_t max, int empty, int tabs) {
    if (!text_line(s, max, empty, tabs)) return 0;
    char quote = 0;
    for (; *s; s++) {
        if (quote) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == quote)
                quote = 0;
        } else if (*s == '"' || *s == '\'') {
            quote = *s;
        } else if (*s == ';') {
            return 0;
        }
    }
    return 1;
}

/* A decimal number, 0 to 999999999. */
static int number(const char *s, size_t len) {
    if (!len || len > 9) return 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* n numbers separated by one space, and (rest) a last field of whitespace after one more space (or none). */
static int numbers(const char *s, int n, int rest) {
    for (int i = 0; i < n; i++) {
        size_t k = strcspn(s, " ");
        if (!number(s, k)) return 0;
        s += k;
        if (i + 1 < n) {
            if (*s != ' ') return 0;
            s++;
        }
    }
    return !*s || (rest && *s == ' ' && vw_shape_indent(s + 1));
}

/* A comma-separated list whose every item passes item (member: arrows allowed; module: NAME or NAME->). */
enum { LIST_IDENT, LIST_MEMBER, LIST_MODULE };
static int list(const char *s, int kind) {
    char item[512];
    if (!*s || strlen(s) >= 4096) return 0;
    for (const char *p = s;;) {
        size_t k = strcspn(p, ",");
        if (!k || k >= sizeof item) return 0;
        memcpy(item, p, k);
        item[k] = 0;
        if (kind == LIST_MODULE && k > 2 && !strcmp(item + k - 2, "->")) item[k - 2] = 0;
        if (kind == LIST_MEMBER ? !vw_shape_member(item, 1) : !vw_shape_ident(item)) return 0;
        if (!p[k]) return 1;
        p += k + 1;
    }
}

/* A `call` fact: FUNC \t DEVICE \t TEMP \t END_LINE \t END_COL \t HAS_ARGS [\t TRAILING_COMMA]. */
static int call_fact(const char *v, const char **why) {
    const char *f[8];
    size_t len[8];
    int nf = 0;
    for (const char *p = v; nf < 8; p += len[nf++] + 1) {
        f[nf] = p;
        len[nf] = strcspn(p, "\t");
        if (!p[len[nf]]) {
            nf++;
            break;
        }
    }
    if (nf < 6 || nf > 7) return *why = "not 6 or 7 tab-separated fields", 0;
    char func[4200];
    if (!len[0] || len[0] >= sizeof func) return *why = "no callee", 0;
    memcpy(func, f[0], len[0]);
    func[len[0]] = 0;
    if (!expr_line(func, 4096, 0, 0)) return *why = "a callee that is not one line of an expression's text", 0;
    char dev[4200];
    if (len[1] >= sizeof dev) return *why = "a device= text longer than any producer writes", 0;
    memcpy(dev, f[1], len[1]);
    dev[len[1]] = 0;
    if (!expr_line(dev, sizeof dev, 1, 0)) return *why = "a device= text that is not one line of an expression", 0;
    if (len[2] != 1 || (f[2][0] != '0' && f[2][0] != '1')) return *why = "TEMP is not 0 or 1", 0;
    if (!number(f[3], len[3]) || !number(f[4], len[4])) return *why = "END_LINE or END_COL is not a number", 0;
    if (len[5] != 1 || (f[5][0] != '0' && f[5][0] != '1')) return *why = "HAS_ARGS is not 0 or 1", 0;
    if (nf == 7 && (len[6] != 1 || (f[6][0] != '0' && f[6][0] != '1'))) return *why = "TRAILING_COMMA is not 0 or 1", 0;
    return 1;
}

/* A `device_arg` fact: FUNC \t PARAM, FUNC one line of an expression, PARAM an identifier or #N. */
static int device_arg_fact(const char *v, const char **why) {
    const char *tab = strchr(v, '\t');
    if (!tab || strchr(tab + 1, '\t')) return *why = "not FUNC and PARAM, tab-separated", 0;
    char func[4200];
    size_t n = (size_t)(tab - v);
    if (!n || n >= sizeof func) return *why = "no callee", 0;
    memcpy(func, v, n);
    func[n] = 0;
    if (!expr_line(func, 4096, 0, 0)) return *why = "a callee that is not one line of an expression's text", 0;
    const char *p = tab + 1;
    if (p[0] == '#' ? !number(p + 1, strlen(p + 1)) || strlen(p + 1) > 3 : !vw_shape_ident(p))
        return *why = "PARAM is not an identifier or #N", 0;
    return 1;
}

/* A `defaults` fact: NAME=DEFAULT, tab-separated. */
static int defaults_fact(const char *v) {
    char item[1024];
    for (const char *p = v;;) {
        size_t k = strcspn(p, "\t"), eq = strcspn(p, "=");
        if (!k || k >= sizeof item || eq >= k) return 0;
        memcpy(item, p, eq);
        item[eq] = 0;
        if (!vw_shape_ident(item)) return 0;
        memcpy(item, p + eq + 1, k - eq - 1);
        item[k - eq - 1] = 0;
        if (!expr_line(item, 1000, 0, 0)) return 0;
        if (!p[k]) return 1;
        p += k + 1;
    }
}

int vw_fact_shape(const char *key, const char *v, const char **why) {
    static const char *unused;
    if (!why) why = &unused;
    *why = "";
    if (!key || !v) return *why = "no value", 0;
    if (strlen(v) > 8192) return *why = "longer than any producer writes", 0;
#define IS(k) (!strcmp(key, DT_FACT_##k))
    if (IS(SHA256)) {
        if (strlen(v) != 64 || strspn(v, "0123456789abcdef") != 64) return *why = "not 64 hex digits", 0;
    } else if (IS(LINES) || IS(FUNCTION_LINE) || IS(OPENS) || IS(RETURNS) || IS(MODULE_CLASS)) {
        if (!number(v, strlen(v))) return *why = "not a number", 0;
    } else if (IS(STMT) || IS(BLOCK)) {
        if (!numbers(v, 2, 0)) return *why = "not FIRST LAST", 0;
    } else if (IS(LOOP)) {
        if (!numbers(v, 2, 1)) return *why = "not FIRST LAST BODY_INDENT (whitespace)", 0;
    } else if (IS(INDENT) || IS(BODY_INDENT)) {
        if (!vw_shape_indent(v)) return *why = "not whitespace", 0;
    } else if (IS(LANG)) {
        if (strcmp(v, DT_FACT_LANG_C) && strcmp(v, DT_FACT_LANG_CXX)) return *why = "not c or c++", 0;
    } else if (IS(BINDS_KIND)) {
        if (dt_binds_kind_of(v) == DT_BINDS_NONE) return *why = "not unpack, tuple, call or other", 0;
    } else if (IS(BINDS) || IS(PARAMS)) {
        if (!list(v, LIST_IDENT)) return *why = "not identifiers, comma-separated", 0;
    } else if (IS(BINDS_ATTR) || IS(ATTR_AGAIN)) {
        if (!list(v, LIST_MEMBER)) return *why = "not attributes (self.NAME, P->F), comma-separated", 0;
    } else if (IS(ATTR_FROM) || IS(DEVICE_OF)) {
        if (!vw_shape_ident(v)) return *why = "not an identifier", 0;
    } else if (IS(DEVICE_VAR)) {
        if (!vw_shape_member(v, 1)) return *why = "not a name or an attribute", 0;
    } else if (IS(MODULE_VAR) || IS(OPTIMIZER_VAR)) {
        if (!list(v, LIST_MODULE)) return *why = "not identifiers (NAME or NAME->), comma-separated", 0;
    } else if (IS(MOVE_WRAP)) {
        if (strcmp(v, "-") && !vw_shape_ident(v)) return *why = "not an identifier or -", 0;
    } else if (IS(FUNCTION)) {
        if (!expr_line(v, 4096, 0, 0)) return *why = "not a function's name", 0;
    } else if (IS(CLASS_BASES) || IS(RETURN_VALUE) || IS(DEVICE_EXPR) || IS(GUARD)) {
        if (!expr_line(v, 4096, 0, IS(DEVICE_EXPR))) return *why = "not one line of an expression's text", 0;
    } else if (IS(DEFAULTS)) {
        if (!defaults_fact(v)) return *why = "not NAME=DEFAULT, tab-separated", 0;
    } else if (IS(CALL)) {
        return call_fact(v, why);
    } else if (IS(DEVICE_ARG)) {
        return device_arg_fact(v, why);
    } else if (IS(SETATTR)) { /* OBJ \t NAME \t VALUE [\t RECEIVER: 0 or 1, since schema 13] */
        const char *t1 = strchr(v, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        const char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
        if (!t1 || !t2 || (t3 && strcmp(t3, "\t0") && strcmp(t3, "\t1")) || t1 == v || t2 == t1 + 1 || !t2[1] ||
            t3 == t2 + 1 || !expr_line(v, 4096, 0, 1))
            return *why = "not OBJ, NAME, VALUE and whether OBJ is the method's receiver, tab-separated", 0;
    } else if (IS(CALL_ARGS)) {
        if (!text_line(v, 4096, 0, 1) || v[0] == '\t') return *why = "not FUNC and arguments, tab-separated", 0;
    }
#undef IS
    return 1;
}

/* Whether the n bytes at s are the word w. */
static int is_word(const char *s, size_t n, const char *w) { return strlen(w) == n && !strncmp(s, w, n); }

int vw_shape_guard(const char *s) {
    static const char *const words[] = {"not", "and", "or", "is", "None", "True", "False"};
    static const char *const calls[] = {"torch.cuda.is_available()", "torch.cuda.device_count()"};
    int depth = 0, operand = 0; /* operand: the last token ended an operand (a member, a literal, a `)`) */
    if (!s || !*s || strlen(s) > 200) return 0;
    while (*s) {
        const char *e;
        if (*s == ' ') {
            s++;
            continue;
        }
        size_t c = 0;
        for (size_t i = 0; i < sizeof calls / sizeof *calls && !c; i++)
            if (!strncmp(s, calls[i], strlen(calls[i]))) c = strlen(calls[i]);
        if (c) {
            if (operand) return 0;
            s += c, operand = 1;
            continue;
        }
        if ((e = ident_end(s)) != NULL) {
            int word = 0;
            for (size_t i = 0; i < sizeof words / sizeof *words; i++) word |= is_word(s, (size_t)(e - s), words[i]);
            int value = word && (is_word(s, (size_t)(e - s), "None") || is_word(s, (size_t)(e - s), "True") ||
                                 is_word(s, (size_t)(e - s), "False"));
            if (!word || value) { /* a member (no call: `(` after it is refused below) */
                if (operand) return 0;
                while (*e == '.' && (e = ident_end(e + 1)) != NULL) {
                }
                if (!e) return 0;
                operand = 1;
            } else if (is_word(s, (size_t)(e - s), "not")) {
                if (operand) return 0; /* a prefix (not x, x is not None, x and not y) */
            } else {
                if (!operand) return 0; /* and, or, is: between operands */
                operand = 0;
            }
            s = e;
            continue;
        }
        if (*s >= '0' && *s <= '9') {
            if (operand) return 0;
            while (*s >= '0' && *s <= '9') s++;
            operand = 1;
        } else if (*s == '"' || *s == '\'') {
            char q = *s++;
            size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.");
            if (operand || s[n] != q || n > 40) return 0;
            s += n + 1;
            operand = 1;
        } else if (*s == '(') {
            if (operand) return 0; /* a call */
            depth++, s++;
        } else if (*s == ')') {
            if (!operand || --depth < 0) return 0;
            s++;
        } else if ((s[0] == '=' || s[0] == '!' || s[0] == '<' || s[0] == '>') && s[1] == '=') {
            if (!operand) return 0;
            s += 2, operand = 0;
        } else if (*s == '<' || *s == '>') {
            if (!operand) return 0;
            s++, operand = 0;
        } else {
            return 0;
        }
    }
    return depth == 0 && operand;
}

int vw_code_line_shape(const char *s, int dots) {
    int depth = 0, index = 0, word = 0; /* word: the last token was a name (after `del`: 0) */
    const char *colon = !strncmp(s, "if ", 3) ? strstr(s, ": ") : NULL;
    if (colon) { /* Python's if GUARD: STATEMENT, on one line (C's `if (x) f(x);` is tokens below) */
        char guard[256];
        if ((size_t)(colon - s - 3) >= sizeof guard) return 0;
        memcpy(guard, s + 3, (size_t)(colon - s - 3));
        guard[colon - s - 3] = 0;
        if (!vw_shape_guard(guard)) return 0;
        s = colon + 2;
        if (!strncmp(s, "if ", 3)) return 0;
    }
    while (*s) {
        const char *e;
        if (*s == ' ') {
            s++;
            continue;
        }
        if ((e = ident_end(s)) != NULL) {
            /* two names in a row are a statement no rule writes (import os, exec x), but `del x` */
            if (word) return 0;
            word = !((e - s == 3 && !strncmp(s, "del", 3)) || (e - s == 6 && !strncmp(s, "return", 6)));
            s = e;
            continue;
        }
        word = 0;
        if (*s >= '0' && *s <= '9') {
            while (*s >= '0' && *s <= '9') s++;
        } else if (*s == '"' || *s == '\'') { /* a device or a buffer's name: a few plain characters */
            char q = *s++;
            size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.");
            if (s[n] != q || n > 128) return 0;
            s += n + 1;
        } else if (dots && !strncmp(s, "...", 3)) {
            s += 3;
        } else if (!strncmp(s, "->", 2) || !strncmp(s, "::", 2)) {
            s += 2;
        } else if (*s == '[') { /* an index in a device expression: gpus[0] */
            index++, s++;
        } else if (*s == ']') {
            if (--index < 0) return 0;
            s++;
        } else if (*s == '(') {
            depth++, s++;
        } else if (*s == ')') {
            if (--depth < 0) return 0;
            s++;
        } else if (strchr(".=,;*", *s)) {
            s++;
        } else {
            return 0;
        }
    }
    return depth == 0 && index == 0;
}

int vw_fix_code_shape(const char *code, int replace, int python, const char *const *edit_texts,
                      const int *edit_dels, int nedits, const char **why) {
    char line[700];
    if (python && strchr(code, ';')) return *why = "Python code with a `;`", 0;
    for (int i = 0; python && i < nedits; i++)
        if (strchr(edit_texts[i], ';')) return *why = "Python code with a `;`", 0;
    if (!replace) {
        for (const char *p = code;;) {
            size_t k = strcspn(p, "\n");
            if (!k || k >= sizeof line) return *why = "an empty or overlong line of code", 0;
            memcpy(line, p, k);
            line[k] = 0;
            if (!vw_code_line_shape(line, 0)) return *why = "a line of code no rule writes", 0;
            if (!p[k]) return 1;
            p += k + 1;
        }
    }
    if (nedits < 1) return *why = "no edit", 0;
    for (int i = 0; i < nedits; i++)
        if (edit_dels[i] < 0 || edit_dels[i] > 6 || strchr(edit_texts[i], '\n') ||
            !vw_code_line_shape(edit_texts[i], 0))
            return *why = "an edit no rule writes", 0;
    /* the shown form: CALLEE(...) and what the edit adds, or CALLEE() -> RECEIVER for a removed .cpu(), where
     * CALLEE is a call fact's callee (any one line of an expression: self.embed(tokens).cpu) and RECEIVER
     * the part of it before its last `.` */
    const char *arrow = strstr(code, "() -> ");
    if (arrow && !strchr(code, '\n')) {
        size_t fl = (size_t)(arrow - code), rl = strlen(arrow + 6);
        if (fl < sizeof line && rl && rl < fl && !strncmp(code, arrow + 6, rl) && code[rl] == '.') {
            memcpy(line, code, fl);
            line[fl] = 0;
            if (expr_line(line, sizeof line, 0, 0) && vw_shape_callee(line + rl + 1)) return 1;
        }
    }
    const char *open = strstr(code, "(...");
    if (!open) open = strstr(code, "()");
    size_t k = open ? (size_t)(open - code) : 0;
    if (!open || k >= sizeof line || strchr(code, '\n')) return *why = "a shown call no rule writes", 0;
    memcpy(line, code, k);
    line[k] = 0;
    if (!vw_shape_callee(line) || !vw_code_line_shape(code + k, 1)) return *why = "a shown call no rule writes", 0;
    return 1;
}
