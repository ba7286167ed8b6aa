/* Interning in the writer: strings (strings table), native and Python
 * stacks as tries (frames, py_frames), Python code objects (py_code),
 * shapes and strides, and the repeating attributes of tensors
 * (tensor_attrs): each written once, on first sight, and named by its id
 * after. No record decoding here (writer_records.c). */
#include "writer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct strkey {
    const char *s;
    size_t len;
};
static int str_equal(int64_t id, const void *ctx) {
    const struct strkey *k = ctx;
    const char *t = tr_w.texts[id - 1];
    return strlen(t) == k->len && memcmp(t, k->s, k->len) == 0;
}

/* Out of memory where going on would write an id of a row never written:
 * tracing stops (the viewer refuses a trace whose references dangle). */
static int64_t out_of_memory(void) {
    tr_sql_fail("out of memory");
    return 0;
}

/* The id of a string (inserted on first sight); 0 on failure (then
 * nothing more is committed). */
int64_t tr_intern(const char *s, size_t len) {
    if (tr_w.failed) return 0;
    if (tr_w.strings.n * 2 >= tr_w.strings.cap && tr_map2_grow(&tr_w.strings) < 0) return out_of_memory();
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    struct strkey key = {s, len};
    size_t j = tr_map2_slot(&tr_w.strings, h, len, str_equal, &key);
    if (tr_w.strings.v[j]) return tr_w.strings.v[j];
    if (tr_w.ntexts == tr_w.captexts) {
        int64_t cap = tr_w.captexts ? 2 * tr_w.captexts : 1024;
        char **t = realloc(tr_w.texts, sizeof *t * (size_t)cap);
        if (!t) return out_of_memory();
        tr_w.texts = t, tr_w.captexts = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return out_of_memory();
    memcpy(copy, s, len);
    copy[len] = '\0';
    int64_t id = ++tr_w.ntexts;
    tr_w.texts[id - 1] = copy;
    tr_w.strings.k1[j] = h, tr_w.strings.k2[j] = len, tr_w.strings.v[j] = id;
    tr_w.strings.n++;
    sqlite3_bind_int64(tr_w.ins_string, 1 + TS_strings_id, id);
    sqlite3_bind_text(tr_w.ins_string, 1 + TS_strings_text, copy, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(tr_w.ins_string);
    sqlite3_reset(tr_w.ins_string);
    if (rc != SQLITE_DONE) {
        tr_sql_fail("insert string");
        return 0;
    }
    return id;
}

/* A node of a trie (frames or py_frames): the id of (parent, key). */
static int64_t trie_node(struct tr_map2 *m, struct tr_batch *b, int64_t *count, int64_t parent, uint64_t key,
                         int64_t line, int py) {
    if (m->n * 2 >= m->cap && tr_map2_grow(m) < 0) return 0;
    uint64_t k2 = py ? key << 24 ^ (uint64_t)line : key;
    size_t j = tr_map2_slot(m, (uint64_t)parent, k2, NULL, NULL);
    if (m->v[j]) return m->v[j];
    int64_t id = ++*count;
    m->k1[j] = (uint64_t)parent, m->k2[j] = k2, m->v[j] = id;
    m->n++;
    int64_t row[TS_py_frames_NCOLS] = {[TS_py_frames_id] = id,
                                       [TS_py_frames_parent] = parent ? parent : TR_NULLV,
                                       [TS_py_frames_code] = (int64_t)key,
                                       [TS_py_frames_line] = line}; /* frames takes the first 3 */
    if (tr_batch_add(b, row) < 0) return 0;
    return id;
}

/* A native stack (innermost first) as the id of its innermost trie node. */
int64_t tr_intern_stack(const uint64_t *ips, int n) {
    if (n == 0) return TR_NULLV;
    uint64_t h1, h2;
    size_t slot;
    tr_hash128(ips, n, &h1, &h2);
    int64_t id = tr_cache_get(&tr_w.stack_cache, h1, h2, &slot);
    if (id) return id;
    int64_t parent = 0;
    for (int i = n - 1; i >= 0; i--)
        parent = trie_node(&tr_w.stacks, &tr_w.frames, &tr_w.nframes, parent, ips[i], 0, 0);
    tr_cache_put(&tr_w.stack_cache, slot, h1, h2, parent);
    return parent ? parent : TR_NULLV;
}

/* The py_code id of a code object address (unknown ones get a "?" row). */
int64_t tr_intern_pycode(uint64_t code, int64_t first_line, const char *file, size_t flen, const char *name,
                         size_t nlen, int define) {
    if (tr_w.pycode.n * 2 >= tr_w.pycode.cap && tr_map2_grow(&tr_w.pycode) < 0) return out_of_memory();
    size_t j = tr_map2_slot(&tr_w.pycode, code, 0, NULL, NULL);
    if (tr_w.pycode.v[j] && !define) return tr_w.pycode.v[j];
    int64_t id = tr_w.pycode.v[j] ? tr_w.pycode.v[j] : ++tr_w.npycode;
    if (!tr_w.pycode.v[j]) {
        tr_w.pycode.k1[j] = code, tr_w.pycode.k2[j] = 0, tr_w.pycode.v[j] = id;
        tr_w.pycode.n++;
    }
    sqlite3_bind_int64(tr_w.ins_pycode, 1 + TS_py_code_id, id);
    sqlite3_bind_int64(tr_w.ins_pycode, 1 + TS_py_code_file, tr_intern(file, flen));
    sqlite3_bind_int64(tr_w.ins_pycode, 1 + TS_py_code_name, tr_intern(name, nlen));
    sqlite3_bind_int64(tr_w.ins_pycode, 1 + TS_py_code_first_line, first_line);
    int rc = sqlite3_step(tr_w.ins_pycode);
    sqlite3_reset(tr_w.ins_pycode);
    if (rc != SQLITE_DONE) tr_sql_fail("insert py_code");
    return id;
}

int64_t tr_intern_pystack(const uint64_t *pairs, int n) {
    int64_t parent = 0;
    for (int i = n - 1; i >= 0; i--) {
        int64_t code = tr_intern_pycode(pairs[2 * i], 0, "?", 1, "?", 1, 0);
        parent = trie_node(&tr_w.pystacks, &tr_w.pyframes, &tr_w.npyframes, parent, (uint64_t)code,
                           (int64_t)pairs[2 * i + 1], 1);
    }
    return parent ? parent : TR_NULLV;
}

/* "[64,10]" for a shape of n dims (cached: most shapes repeat). */
int64_t tr_intern_dims(const uint64_t *d, int n) {
    uint64_t h1, h2;
    size_t slot;
    tr_hash128(d, n, &h1, &h2);
    int64_t id = tr_cache_get(&tr_w.dims_cache, h1, h2, &slot);
    if (id) return id;
    char buf[256];
    int k = snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < n && k < (int)sizeof buf - 24; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%lld", i ? "," : "", (long long)(int64_t)d[i]);
    k += snprintf(buf + k, sizeof buf - (size_t)k, "]");
    id = tr_intern(buf, (size_t)k);
    tr_cache_put(&tr_w.dims_cache, slot, h1, h2, id);
    return id;
}

/* Strides, or NULL when they are the contiguous strides of the shape. */
int64_t tr_intern_strides(const uint64_t *shape, const uint64_t *strides, int n) {
    int64_t expect = 1;
    for (int i = n - 1; i >= 0; i--) {
        if ((int64_t)strides[i] != expect) return tr_intern_dims(strides, n);
        expect *= (int64_t)shape[i];
    }
    return TR_NULLV;
}

/* A held row into tensor_rows: the columns that repeat from tensor to
 * tensor (its attributes: dtype to name, all but the event, the storage,
 * the source, the op and the free) are one tensor_attrs row, written on
 * first sight. A training loop makes the same few kinds of tensor over and
 * over: 14 columns a row instead of 25 (SQLite's cost grows with each).
 * The source of a view, copy or transfer (a sixth of mlp_train's tensors)
 * is a row of the narrow table `derived`: its index on src, built at the
 * end, scans that table instead of every tensor's row (0.3 ms against 1.2
 * at mlp_train's exit). */
int tr_tensor_add(const int64_t *held) {
    const int64_t *a = held + TR_HELD_ATTRS; /* its id column unused: the rest is the key */
    uint64_t h1, h2;
    size_t slot;
    tr_hash128((const uint64_t *)a + 1, TS_tensor_attrs_NCOLS - 1, &h1, &h2);
    int64_t id = tr_cache_get(&tr_w.attrs_cache, h1, h2, &slot);
    if (!id) {
        int64_t arow[TS_tensor_attrs_NCOLS];
        memcpy(arow, a, sizeof arow);
        arow[TS_tensor_attrs_id] = id = ++tr_w.nattrs;
        if (tr_batch_add(&tr_w.attrs, arow) < 0) return -1;
        tr_cache_put(&tr_w.attrs_cache, slot, h1, h2, id);
    }
    int64_t row[TS_tensor_rows_NCOLS];
    memcpy(row, held, sizeof row);
    row[TS_tensor_rows_attrs] = id;
    if (held[TR_HELD_SRC] != TR_NULLV &&
        tr_batch_add(&tr_w.derived,
                     (const int64_t[TS_derived_NCOLS]){
                         [TS_derived_tensor] = held[TS_tensor_rows_id], [TS_derived_src] = held[TR_HELD_SRC]}) < 0)
        return -1;
    return tr_batch_add(&tr_w.tensors, row);
}
