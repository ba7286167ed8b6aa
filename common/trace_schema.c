/* The description of common/trace_schema.h as data, and the CREATE TABLE
 * statements made from it. Built into the tracer (which runs them) and the
 * viewer (which checks a trace against the same description). */
#include "trace_schema.h"

#include <stdio.h>

#define TS_C_DATA_(t, c, d, chk) {.name = #c, .decl = d, chk},
#define TS_T_COLDATA_(t, noun, constraint, options, key, counted)                                                      \
    static const struct ts_column ts_cols_##t[TS_##t##_NCOLS] = {TS_COLUMNS_##t(TS_C_DATA_)};
TS_TABLES(TS_T_COLDATA_)

#define TS_T_DATA_(t, n, c, o, k, cnt)                                                                                 \
    [TS_T_##t] = {.name = #t,                                                                                          \
                  .noun = n,                                                                                           \
                  .constraint = c,                                                                                     \
                  .options = o,                                                                                        \
                  .key = k,                                                                                            \
                  .counted = cnt,                                                                                      \
                  .cols = ts_cols_##t,                                                                                 \
                  .ncols = TS_##t##_NCOLS},
const struct ts_table ts_tables[TS_NTABLES] = {TS_TABLES(TS_T_DATA_)};

int ts_table_since(enum ts_table_id table) {
    return table == TS_T_roles ? 11 : table == TS_T_source_facts ? 10 : TS_SCHEMA_MIN_VERSION;
}

int ts_create_sql(char *buf, int size) {
    int n = 0;
#define PUT(...)                                                                                                       \
    do {                                                                                                               \
        int k_ = snprintf(buf + (n < size ? n : size), (size_t)(n < size ? size - n : 0), __VA_ARGS__);                \
        if (k_ > 0) n += k_;                                                                                           \
    } while (0)
    if (size > 0) buf[0] = '\0';
    for (int i = 0; i < TS_NTABLES; i++) {
        const struct ts_table *t = &ts_tables[i];
        PUT("CREATE TABLE %s(", t->name);
        for (int c = 0; c < t->ncols; c++)
            PUT("%s%s%s%s", c ? ", " : "", t->cols[c].name, t->cols[c].decl[0] ? " " : "", t->cols[c].decl);
        PUT("%s%s)%s%s;\n", t->constraint[0] ? ", " : "", t->constraint, t->options[0] ? " " : "", t->options);
    }
#undef PUT
    return n;
}
