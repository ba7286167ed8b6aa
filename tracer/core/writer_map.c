/* The writer's hash map (writer_impl.h's struct tr_map2): growth and
 * release; lookups are in line in writer_impl.h. It knows nothing of SQLite
 * or of what the keys mean. */
#include "writer_impl.h"

#include <stdlib.h>
#include <string.h>

int tr_map2_grow(struct tr_map2 *m) {
    size_t cap = m->cap ? 2 * m->cap : 4096;
    uint64_t *k1 = calloc(cap, 8), *k2 = calloc(cap, 8);
    int64_t *v = calloc(cap, 8);
    if (!k1 || !k2 || !v) {
        free(k1), free(k2), free(v);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->v[i]) continue;
        size_t j = tr_mix(m->k1[i], m->k2[i]) & (cap - 1);
        while (v[j]) j = (j + 1) & (cap - 1);
        k1[j] = m->k1[i], k2[j] = m->k2[i], v[j] = m->v[i];
    }
    free(m->k1), free(m->k2), free(m->v);
    m->k1 = k1, m->k2 = k2, m->v = v, m->cap = cap;
    return 0;
}

void tr_map2_free(struct tr_map2 *m) {
    free(m->k1), free(m->k2), free(m->v);
    memset(m, 0, sizeof *m);
}
