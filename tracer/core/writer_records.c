/* Record decoding: one ring record (tr_rec) into the rows of the trace's
 * tables, by kind: tensors, transfers, names, frees, ops, errors, signals,
 * CUDA calls and activity, C++ throws, Python code objects and source
 * facts. Open ops and held rows are writer_ops.c's; interning is
 * writer_intern.c's. */
#include "mismatch.h"
#include "writer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A record's strings, pointing into the ring. */
struct strs {
    const char *p[TR_MAX_STRS];
    size_t len[TR_MAX_STRS];
};

static int64_t S(const struct strs *s, int i, int n) { return i < n ? tr_intern(s->p[i], s->len[i]) : TR_NULLV; }

int64_t tr_thread_of(struct tr_ring *r) {
    if (r->writer_id) return r->writer_id;
    r->writer_id = ++tr_w.nthreads;
    sqlite3_bind_int64(tr_w.ins_thread, 1 + TS_threads_id, r->writer_id);
    sqlite3_bind_int64(tr_w.ins_thread, 1 + TS_threads_tid, r->tid);
    sqlite3_bind_text(tr_w.ins_thread, 1 + TS_threads_name, r->name, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(tr_w.ins_thread);
    sqlite3_reset(tr_w.ins_thread);
    if (rc != SQLITE_DONE) tr_sql_fail("insert thread");
    return r->writer_id;
}

/* One errors row: TR_NULLV and NULL are SQL NULLs. */
struct err_row {
    int64_t seq, kind, op, signal, first, other, object;
    const char *msg; /* msglen bytes */
    int msglen;
    const char *exc, *a, *b, *arg; /* NUL-terminated */
};

static void error_row(const struct err_row *e) {
    sqlite3_stmt *st = tr_w.ins_error;
    static const int icol[] = {TS_errors_seq,       TS_errors_kind,      TS_errors_op,    TS_errors_signal,
                               TS_errors_first_arg, TS_errors_other_arg, TS_errors_object};
    const int64_t ints[] = {e->seq, e->kind, e->op, e->signal, e->first, e->other, e->object};
    for (int c = 0; c < 7; c++) tr_bind_int(st, 1 + icol[c], ints[c]);
    static const int tcol[] = {TS_errors_exception, TS_errors_device_a, TS_errors_device_b, TS_errors_arg};
    const char *texts[] = {e->exc, e->a, e->b, e->arg};
    for (int c = 0; c < 4; c++)
        if (texts[c])
            sqlite3_bind_text(st, 1 + tcol[c], texts[c], -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, 1 + tcol[c]);
    if (e->msg)
        sqlite3_bind_text(st, 1 + TS_errors_message, e->msg, e->msglen, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 1 + TS_errors_message);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) tr_sql_fail("insert error");
}

/* A C++ throw: an errors row with the demangled type and the message, parsed
 * for a device mismatch, and a misc_events row for its stacks. */
static int throw_row(const struct tr_rec *h, int64_t seq, int64_t thread, int64_t stack, int64_t pystack,
                     const struct strs *s, int ns) {
    const uint64_t *I = (const uint64_t *)(h + 1);
    char type[512];
    size_t tl = ns > 0 ? s->len[0] : 0;
    if (tl >= sizeof type) tl = sizeof type - 1;
    memcpy(type, ns > 0 ? s->p[0] : "", tl);
    type[tl] = 0;
    static _Atomic(void *) demangle_slot;
    char *(*demangle)(const char *, char *, size_t *, int *);
    *(void **)&demangle = tr_sym_once(&demangle_slot, tr_cxx_libs, "__cxa_demangle", 0);
    int status = -1;
    char *pretty = demangle && tl ? demangle(type, NULL, NULL, &status) : NULL;
    struct dt_mismatch m;
    int is_mm = ns > 1 && dt_parse_mismatch(s->p[1], s->len[1], &m);
    struct err_row e = {.seq = seq,
                        .kind = TR_NULLV,
                        .op = TR_NULLV,
                        .signal = TR_NULLV,
                        .first = TR_NULLV,
                        .other = TR_NULLV,
                        .object = h->nint > 2 && I[2] ? (int64_t)I[2] : TR_NULLV,
                        .msg = ns > 1 && s->len[1] ? s->p[1] : NULL,
                        .msglen = ns > 1 ? (int)s->len[1] : 0,
                        .exc = pretty && status == 0 ? pretty : type,
                        .a = is_mm ? m.a : NULL,
                        .b = is_mm ? m.b : NULL,
                        .arg = is_mm && m.arg[0] ? m.arg : NULL};
    error_row(&e);
    free(pretty);
    return tr_misc_row(h, thread, TR_NULLV, TR_NULLV, stack, pystack, h->nint > 0 ? (int64_t)I[0] : 0);
}

int tr_record_handle(struct tr_ring *r, const struct tr_rec *h) {
    const uint64_t *I = (const uint64_t *)(h + 1), *ips = I + h->nint, *py = ips + h->nips;
    const unsigned char *sp = (const unsigned char *)(py + 2 * h->npy), *end = (const unsigned char *)h + h->size;
    struct strs s;
    int ns = 0;
    for (; ns < h->nstr && ns < TR_MAX_STRS && sp + 2 <= end; ns++) {
        uint16_t len;
        memcpy(&len, sp, 2);
        if (sp + 2 + len > end) break;
        s.p[ns] = (const char *)sp + 2;
        s.len[ns] = len;
        sp += 2 + len;
    }
    int ni = h->nint;
#define INT(i) ((i) < ni ? (int64_t)I[i] : TR_NULLV)
    if (h->kind == TR_EV_PYCODE) { /* bookkeeping only, no event row */
        tr_intern_pycode(I[0], INT(1), ns > 0 ? s.p[0] : "?", ns > 0 ? s.len[0] : 1, ns > 1 ? s.p[1] : "?",
                         ns > 1 ? s.len[1] : 1, 1);
        return tr_w.failed ? -1 : 0;
    }
    if (h->kind == TR_EV_SOURCE_FACT) { /* no event row either; the table's key keeps each fact once */
        if (ns < 3 || ni < 1) return 0;
        int64_t x[TS_source_facts_NCOLS] = {[TS_source_facts_file] = S(&s, 0, ns),
                                            [TS_source_facts_line] = INT(0),
                                            [TS_source_facts_key] = S(&s, 1, ns),
                                            [TS_source_facts_value] = S(&s, 2, ns)};
        return tr_batch_add(&tr_w.facts, x) < 0 || tr_w.failed ? -1 : 0;
    }
    if (h->kind == TR_EV_ROLE) { /* a fact about a tensor, no event row; a role this writer does not know: skipped */
        if (ni < 3 || !dt_role_text(INT(1))) return 0;
        int64_t x[TS_roles_NCOLS] = {[TS_roles_seq] = (int64_t)h->seq,
                                     [TS_roles_tensor] = INT(0),
                                     [TS_roles_role] = INT(1),
                                     [TS_roles_of_tensor] = INT(2) ? INT(2) : TR_NULLV,
                                     [TS_roles_key] = ns > 0 ? S(&s, 0, ns) : TR_NULLV};
        return tr_batch_add(&tr_w.roles, x) < 0 || tr_w.failed ? -1 : 0;
    }
    if (h->kind < TR_EV_INIT || (h->kind > TR_EV_THROW && h->kind != TR_EV_CUPTI))
        return 0; /* from a newer producer: skipped */
    int64_t seq = (int64_t)h->seq, t = tr_w.rec_t = tr_clock_ns(&tr_w.clock, h->stamp), thread = tr_thread_of(r);
    if (seq > tr_w.max_seq) tr_w.max_seq = seq;
    int64_t stack = tr_intern_stack(ips, h->nips), pystack = tr_intern_pystack(py, h->npy);
    int rc = 0;
    tr_w.events_written++;
    tr_prune_note(seq);
    switch (h->kind) {
    case TR_EV_INIT:
        tr_meta_int("runtime_abi", INT(0));
        if (ns > 0) tr_meta_textn("runtime", s.p[0], s.len[0]);
        if (ns > 1) tr_meta_textn("runtime_version", s.p[1], s.len[1]);
        rc = tr_misc_row(h, thread, TR_NULLV, TR_NULLV, stack, pystack, TR_NULLV);
        break;
    case TR_EV_BACKEND: {
        char name[32];
        int64_t d = INT(0);
        if ((d >> 16) == DTP_DEVICE_CUDA)
            snprintf(name, sizeof name, "cuda:%lld", (long long)(d & 0xffff));
        else if ((d >> 16) == DTP_DEVICE_META)
            snprintf(name, sizeof name, "meta");
        else if ((d >> 16) == DTP_DEVICE_OTHER)
            snprintf(name, sizeof name, "other:%lld", (long long)(d & 0xffff));
        else
            snprintf(name, sizeof name, d == 0 ? "cpu" : "device%lld", (long long)d);
        sqlite3_bind_int64(tr_w.ins_device, 1 + TS_devices_device, d);
        sqlite3_bind_text(tr_w.ins_device, 1 + TS_devices_name, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(tr_w.ins_device, 1 + TS_devices_backend, ns > 0 ? s.p[0] : "?", ns > 0 ? (int)s.len[0] : 1,
                          SQLITE_TRANSIENT);
        int src = sqlite3_step(tr_w.ins_device);
        sqlite3_reset(tr_w.ins_device);
        if (src != SQLITE_DONE) tr_sql_fail("insert device");
        rc = tr_misc_row(h, thread, TR_NULLV, TR_NULLV, stack, pystack, TR_NULLV);
        break;
    }
    case TR_EV_CREATED: {
        int nd = (int)INT(3);
        if (nd < 0 || 10 + 2 * nd > ni) nd = 0;
        int64_t op = INT(9) ? INT(9) : TR_NULLV, dtype = INT(2), origin = INT(7);
        /* a producer's value outside the ABI's enums is written as `other`:
         * the viewer reads these columns as the ABI defines them */
        if (dtype < DTP_DTYPE_F32 || dtype > DTP_DTYPE_OTHER) dtype = DTP_DTYPE_OTHER;
        if (origin < DTP_ORIGIN_FACTORY || origin > DTP_ORIGIN_OTHER) origin = DTP_ORIGIN_OTHER;
        int64_t row[TR_HELD_NCOLS];
        for (int c = 0; c < TR_HELD_NCOLS; c++) row[c] = TR_NULLV;
        row[TS_tensor_rows_id] = INT(0);
        if (g_tr.cfg.max_mb) {
            tr_alive_add(INT(0));
            if (INT(0) > tr_w.prune.max_tensor) tr_w.prune.max_tensor = INT(0);
        }
        row[TS_tensor_rows_seq] = seq;
        row[TS_tensor_rows_t] = t;
        row[TS_tensor_rows_thread] = thread;
        row[TS_tensor_rows_stack] = stack;
        row[TS_tensor_rows_pystack] = pystack;
        row[TS_tensor_rows_storage] = INT(1);
        row[TS_tensor_rows_op] = op;
        row[TR_HELD_ATTR(dtype)] = dtype;
        row[TR_HELD_ATTR(shape)] = tr_intern_dims(I + 10, nd);
        row[TR_HELD_ATTR(strides)] = tr_intern_strides(I + 10, I + 10 + nd, nd);
        row[TR_HELD_ATTR(storage_offset)] = INT(6);
        row[TR_HELD_ATTR(device)] = INT(4);
        row[TR_HELD_ATTR(nbytes)] = INT(5);
        row[TR_HELD_ATTR(origin)] = origin;
        row[TR_HELD_ATTR(what)] = S(&s, 0, ns);
        row[TR_HELD_ATTR(detail)] = ns > 2 && s.len[2] ? S(&s, 2, ns) : TR_NULLV;
        row[TR_HELD_ATTR(name)] = ns > 1 && s.len[1] ? S(&s, 1, ns) : TR_NULLV;
        row[TR_HELD_SRC] = INT(8) ? INT(8) : TR_NULLV;
        struct tr_pend *p = op != TR_NULLV ? tr_pend_find(tr_rctx_of(thread), op, NULL) : NULL;
        if (p && p->nrows < TR_PEND_ROWS)
            memcpy(p->trows[p->nrows++], row, sizeof row);
        else
            rc = tr_tensor_add(row);
        break;
    }
    case TR_EV_TRANSFER: {
        int64_t x[TS_transfers_NCOLS] = {[TS_transfers_seq] = seq,
                                         [TS_transfers_src] = INT(0),
                                         [TS_transfers_dst] = INT(1) ? INT(1) : TR_NULLV,
                                         [TS_transfers_src_device] = INT(2),
                                         [TS_transfers_dst_device] = INT(3),
                                         [TS_transfers_bytes] = INT(4),
                                         [TS_transfers_kind] = INT(5),
                                         [TS_transfers_via] = S(&s, 0, ns)};
        rc = tr_batch_add(&tr_w.transfers, x) < 0 ? -1
                                                  : tr_misc_row(h, thread, INT(0), TR_NULLV, stack, pystack, TR_NULLV);
        break;
    }
    case TR_EV_NAMED: {
        int64_t x[TS_names_NCOLS] = {[TS_names_seq] = seq, [TS_names_tensor] = INT(0), [TS_names_name] = S(&s, 0, ns)};
        rc = tr_batch_add(&tr_w.names, x) < 0 ? -1 : tr_misc_row(h, thread, INT(0), TR_NULLV, stack, pystack, TR_NULLV);
        break;
    }
    case TR_EV_FREED: {
        int64_t x[TS_frees_late_NCOLS] = {
            [TS_frees_late_tensor] = INT(0), [TS_frees_late_seq] = seq,     [TS_frees_late_t] = t,
            [TS_frees_late_thread] = thread, [TS_frees_late_stack] = stack, [TS_frees_late_pystack] = pystack};
        tr_alive_del(x[TS_frees_late_tensor]);
        int64_t *fr = tr_held_free(thread, x[TS_frees_late_tensor]);
        if (fr) /* still held: its free goes into its row (one row, not two) */
            memcpy(fr, x + TS_frees_late_seq, TR_HELD_NFREE * sizeof *x);
        else
            rc = tr_batch_add(&tr_w.frees_late, x);
        break;
    }
    case TR_EV_OP_BEGIN: {
        int64_t o[TS_ops_NCOLS];
        for (int c = 0; c < TS_ops_NCOLS; c++) o[c] = TR_NULLV;
        o[TS_ops_op] = INT(0), o[TS_ops_name] = S(&s, 0, ns), o[TS_ops_seq] = seq, o[TS_ops_thread] = thread;
        if (INT(0) > tr_w.prune.max_op) tr_w.prune.max_op = INT(0);
        o[TS_ops_t] = t, o[TS_ops_stack] = stack, o[TS_ops_pystack] = pystack;
        int nargs = (int)INT(1), a = 0;
        for (; a < nargs && 2 + 2 * a + 1 < ni && rc == 0; a++) {
            int64_t row[TS_op_args_more_NCOLS] = {[TS_op_args_more_op] = INT(0),
                                                  [TS_op_args_more_pos] = a,
                                                  [TS_op_args_more_name] = S(&s, 1 + a, ns),
                                                  [TS_op_args_more_tensor] = INT(2 + 2 * a),
                                                  [TS_op_args_more_device] = INT(3 + 2 * a)};
            if (a < TR_OARGS) { /* in the op's own row: 40 k rows fewer on mlp_train */
                o[TS_ops_arg0_name + TR_OARG_COLS * a] = row[TS_op_args_more_name];
                o[TS_ops_arg0_tensor + TR_OARG_COLS * a] = row[TS_op_args_more_tensor];
                o[TS_ops_arg0_device + TR_OARG_COLS * a] = row[TS_op_args_more_device];
            } else {
                rc = tr_batch_add(&tr_w.args, row);
            }
        }
        if (rc < 0) break;
        o[TS_ops_nargs] = a;
        struct tr_rctx *c = tr_rctx_of(thread);
        if (!c || c->depth == TR_PEND_OPS) {
            rc = tr_batch_add(&tr_w.ops, o);
        } else {
            struct tr_pend *p = &c->st[c->depth++];
            memcpy(p->row, o, sizeof o);
            p->flushed = 0, p->nrows = 0;
        }
        break;
    }
    case TR_EV_OP_END: rc = tr_op_end(h, thread, I, ni); break;
    case TR_EV_MISMATCH:
    case TR_EV_ERROR:
    case TR_EV_SIGNAL: {
        int mm = h->kind == TR_EV_MISMATCH, sig = h->kind == TR_EV_SIGNAL;
        struct err_row e = {.seq = seq,
                            .kind = sig  ? TR_NULLV
                                    : mm ? DTP_ERROR_DEVICE
                                         : INT(0),
                            .op = sig ? TR_NULLV : S(&s, 0, ns),
                            .signal = sig ? INT(0) : TR_NULLV,
                            .first = mm ? INT(1) : TR_NULLV,
                            .other = mm ? INT(2) : TR_NULLV,
                            .object = TR_NULLV,
                            .msg = !sig && ns > 1 ? s.p[1] : NULL,
                            .msglen = ns > 1 ? (int)s.len[1] : 0};
        error_row(&e);
        rc = tr_misc_row(h, thread, TR_NULLV, mm ? INT(0) : TR_NULLV, stack, pystack,
                         sig  ? INT(0)
                         : mm ? DTP_ERROR_DEVICE
                              : INT(0));
        break;
    }
    case TR_EV_CUDA: {
        int64_t x[TS_cuda_calls_NCOLS] = {[TS_cuda_calls_seq] = seq,
                                          [TS_cuda_calls_t] = t,
                                          [TS_cuda_calls_thread] = thread,
                                          [TS_cuda_calls_stack] = stack,
                                          [TS_cuda_calls_pystack] = pystack,
                                          [TS_cuda_calls_api] = S(&s, 0, ns),
                                          [TS_cuda_calls_kind] = INT(0),
                                          [TS_cuda_calls_dir] = INT(1) < 0 ? TR_NULLV : INT(1),
                                          [TS_cuda_calls_bytes] = INT(2),
                                          [TS_cuda_calls_dst] = INT(3),
                                          [TS_cuda_calls_src] = INT(4),
                                          [TS_cuda_calls_host] = INT(5) < 0 ? TR_NULLV : INT(5),
                                          [TS_cuda_calls_device] = INT(6) < 0 ? TR_NULLV : INT(6),
                                          [TS_cuda_calls_peer] = INT(7) < 0 ? TR_NULLV : INT(7),
                                          [TS_cuda_calls_stream] = INT(8),
                                          [TS_cuda_calls_func] = INT(9),
                                          [TS_cuda_calls_rc] = INT(10),
                                          [TS_cuda_calls_dur] = INT(11),
                                          [TS_cuda_calls_corr] = ni > 12 && INT(12) ? INT(12) : TR_NULLV};
        int64_t kind = x[TS_cuda_calls_kind];
        if (kind == 2 || kind == 3 || kind == 4)
            x[TS_cuda_calls_src] = TR_NULLV; /* malloc, free, memset: one pointer */
        if (kind != 1 && kind != 2 && kind != 4)
            x[TS_cuda_calls_bytes] = TR_NULLV;           /* bytes only where they mean something */
        if (kind != 5) x[TS_cuda_calls_func] = TR_NULLV; /* a kernel only for launches */
        rc = tr_batch_add(&tr_w.cuda, x);
        break;
    }
    case TR_EV_CUPTI: { /* no stacks: made on CUPTI's thread, long after the call */
        int64_t x[TS_cuda_activity_NCOLS] = {[TS_cuda_activity_seq] = seq,
                                             [TS_cuda_activity_t] = t,
                                             [TS_cuda_activity_thread] = thread,
                                             [TS_cuda_activity_what] = S(&s, 0, ns),
                                             [TS_cuda_activity_kind] = INT(0),
                                             [TS_cuda_activity_dir] = INT(1) < 0 ? TR_NULLV : INT(1),
                                             [TS_cuda_activity_bytes] = INT(2),
                                             [TS_cuda_activity_host] = INT(3) < 0 ? TR_NULLV : INT(3),
                                             [TS_cuda_activity_device] = INT(4) < 0 ? TR_NULLV : INT(4),
                                             [TS_cuda_activity_stream] = INT(5),
                                             [TS_cuda_activity_corr] = INT(6),
                                             [TS_cuda_activity_start] = INT(7),
                                             [TS_cuda_activity_dur] = INT(8),
                                             [TS_cuda_activity_name] = ns > 1 && s.len[1] ? S(&s, 1, ns) : TR_NULLV};
        rc = tr_batch_add(&tr_w.cuda_act, x);
        break;
    }
    case TR_EV_THROW: rc = throw_row(h, seq, thread, stack, pystack, &s, ns); break;
    default: break;
    }
#undef INT
    return tr_w.failed ? -1 : rc;
}
