/* Open ops in the writer: an op's row and the rows of the tensors it makes
 * are held from its begin to its end (one ops row per op, its outputs in
 * their rows), and a tensor's free goes into its row while that row is
 * still held. Per recording thread, by threads.id. */
#include "writer_impl.h"

#include <stdlib.h>
#include <string.h>

/* A misc_events row: an op's end when its row was written already (here),
 * and the records that have no table of their own (writer_records.c). */
int tr_misc_row(const struct tr_rec *h, int64_t thread, int64_t tensor, int64_t op, int64_t stack, int64_t pystack,
                int64_t value) {
    int64_t ev[TS_misc_events_NCOLS] = {
        [TS_misc_events_seq] = (int64_t)h->seq, [TS_misc_events_t] = tr_w.rec_t,    [TS_misc_events_thread] = thread,
        [TS_misc_events_kind] = h->kind,        [TS_misc_events_tensor] = tensor,   [TS_misc_events_op] = op,
        [TS_misc_events_stack] = stack,         [TS_misc_events_pystack] = pystack, [TS_misc_events_value] = value};
    return tr_batch_add(&tr_w.misc, ev);
}

/* The open-op state of a recording thread (NULL when out of memory: then
 * every row is written at once). */
struct tr_rctx *tr_rctx_of(int64_t thread) {
    if (thread >= tr_w.caprctx) {
        int64_t cap = tr_w.caprctx ? 2 * tr_w.caprctx : 16;
        while (cap <= thread) cap *= 2;
        struct tr_rctx **n = realloc(tr_w.rctx, sizeof *n * (size_t)cap);
        if (!n) return NULL;
        memset(n + tr_w.caprctx, 0, sizeof *n * (size_t)(cap - tr_w.caprctx));
        tr_w.rctx = n, tr_w.caprctx = cap;
    }
    if (!tr_w.rctx[thread]) tr_w.rctx[thread] = calloc(1, sizeof **tr_w.rctx);
    return tr_w.rctx[thread];
}

/* Writes what an open op holds: its row (once) and its tensors rows. */
static int pend_flush(struct tr_pend *p) {
    if (!p->flushed && tr_batch_add(&tr_w.ops, p->row) < 0) return -1;
    p->flushed = 1;
    for (int i = 0; i < p->nrows; i++)
        if (tr_tensor_add(p->trows[i]) < 0) return -1;
    p->nrows = 0;
    return 0;
}

/* The open op `op` on this thread, or NULL. */
struct tr_pend *tr_pend_find(struct tr_rctx *c, int64_t op, int *index) {
    for (int i = c ? c->depth - 1 : -1; i >= 0; i--)
        if (c->st[i].row[TS_ops_op] == op) {
            if (index) *index = i;
            return &c->st[i];
        }
    return NULL;
}

/* Before a commit: every open op is written as far as it is known. */
int tr_pend_flush_all(void) {
    for (int64_t i = 1; i < tr_w.caprctx; i++)
        for (int j = 0; tr_w.rctx[i] && j < tr_w.rctx[i]->depth; j++)
            if (pend_flush(&tr_w.rctx[i]->st[j]) < 0) return -1;
    return 0;
}

int tr_op_end(const struct tr_rec *h, int64_t thread, const uint64_t *I, int ni) {
    struct tr_rctx *c = tr_rctx_of(thread);
    int64_t op = (int64_t)I[0], status = ni > 1 ? (int64_t)I[1] : TR_NULLV;
    int nout = ni > 2 ? (int)I[2] : 0, at = 0;
    struct tr_pend *p = tr_pend_find(c, op, &at);
    if (p) {
        while (c->depth - 1 > at) /* inner ops whose end never came: written as they are */
            if (pend_flush(&c->st[--c->depth]) < 0) return -1;
        if (!p->flushed) {
            p->row[TS_ops_len] = (int64_t)h->seq - p->row[TS_ops_seq];
            p->row[TS_ops_dur] = tr_w.rec_t - p->row[TS_ops_t];
            p->row[TS_ops_status] = status;
        }
    }
    if ((!p || p->flushed) && tr_misc_row(h, thread, TR_NULLV, op, TR_NULLV, TR_NULLV, status) < 0) return -1;
    for (int o = 0; o < nout && 3 + o < ni; o++) {
        int held = 0;
        for (int k = 0; p && k < p->nrows && !held; k++)
            if (p->trows[k][TS_tensor_rows_id] == (int64_t)I[3 + o] && p->trows[k][TR_HELD_ATTR(out_pos)] == TR_NULLV)
                p->trows[k][TR_HELD_ATTR(out_pos)] = o, held = 1;
        int64_t row[TS_op_outputs_more_NCOLS] = {[TS_op_outputs_more_op] = op,
                                                 [TS_op_outputs_more_pos] = o,
                                                 [TS_op_outputs_more_tensor] = (int64_t)I[3 + o]};
        if (!held && o == 0 && p && !p->flushed) /* an in-place op's: in its row */
            p->row[TS_ops_out0] = row[TS_op_outputs_more_tensor];
        else if (!held && tr_batch_add(&tr_w.outs, row) < 0)
            return -1;
    }
    if (p) {
        if (pend_flush(p) < 0) return -1;
        c->depth = at;
    }
    return 0;
}

/* The free columns of tensor id's row while the row is still held (in the
 * unwritten batch, or with an open op of the thread) and has no free in it
 * yet; NULL otherwise. A tensor's free usually follows its creation
 * closely, so the batch is searched newest first. */
int64_t *tr_held_free(int64_t thread, int64_t id) {
    const int f = TS_tensor_rows_free_seq;
    for (int r = tr_w.tensors.n - 1; r >= 0; r--) {
        int64_t *row = tr_w.tensors.vals + r * TS_tensor_rows_NCOLS;
        if (row[TS_tensor_rows_id] == id) return row[f] == TR_NULLV ? row + f : NULL;
    }
    struct tr_rctx *c = thread > 0 && thread < tr_w.caprctx ? tr_w.rctx[thread] : NULL;
    for (int d = 0; c && d < c->depth && d < TR_PEND_OPS; d++)
        for (int k = 0; k < c->st[d].nrows; k++) {
            int64_t *row = c->st[d].trows[k];
            if (row[TS_tensor_rows_id] == id) return row[f] == TR_NULLV ? row + f : NULL;
        }
    return NULL;
}
