/* Proves each dtp_* probe fires at its event with the right arguments, by
 * supplying other definitions of the probes (probe_recorder.c, loaded with
 * LD_PRELOAD as the tracer will be) and reading what they recorded; never by
 * reading runtime internals. ctest runs this suite with the recorder
 * preloaded; without it, the suite fails and says how to run it. */
#include "probe_recorder.h"
#include "testutil.h"

#include <devtrace/dt_nn.h>
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

static rec_count_fn rcount;
static rec_get_fn rget;
static rec_reset_fn rreset;

static void setup(void) {
    rcount = (rec_count_fn)dlsym(RTLD_DEFAULT, "rec_count");
    rget = (rec_get_fn)dlsym(RTLD_DEFAULT, "rec_get");
    rreset = (rec_reset_fn)dlsym(RTLD_DEFAULT, "rec_reset");
    ck_assert_msg(rcount && rget && rreset,
                  "the probe recorder is not loaded: run with LD_PRELOAD=.../libprobe_recorder.so (ctest does)");
    tu_catch_errors();
    ck_assert_int_eq(dt_sim_cuda_enable(2), 0);
}

/* Index of the next event of kind k at or after *pos (advanced past it). */
static const struct rec_event *next(enum rec_kind k, int *pos) {
    for (int i = *pos; i < rcount(); i++)
        if (rget(i)->kind == k) {
            *pos = i + 1;
            return rget(i);
        }
    ck_abort_msg("no event of kind %d after position %d (of %d)", k, *pos, rcount());
    return NULL;
}

static int count(enum rec_kind k) {
    int n = 0;
    for (int i = 0; i < rcount(); i++) n += rget(i)->kind == k;
    return n;
}

START_TEST(test_init_and_backends) {
    dt_tensor *c = dt_zeros(DT_SHAPE(1), DT_F32, CPU), *g = dt_zeros(DT_SHAPE(1), DT_F32, CUDA(1));
    dt_tensor *g2 = dt_zeros(DT_SHAPE(1), DT_F32, CUDA(1));
    ck_assert_int_eq(rget(0)->kind, REC_INIT); /* first of all */
    ck_assert_int_eq(rget(0)->i1, DTP_ABI_VERSION);
    ck_assert_str_eq(rget(0)->s1, "libdtrt");
    ck_assert_int_eq(count(REC_INIT), 1);
    ck_assert_int_eq(count(REC_BACKEND), 2); /* once per device */
    int p = 0;
    const struct rec_event *b = next(REC_BACKEND, &p);
    ck_assert_int_eq(b->d1.type, DTP_DEVICE_CPU);
    ck_assert_str_eq(b->s1, "cpu");
    b = next(REC_BACKEND, &p);
    ck_assert_int_eq(b->d1.type, DTP_DEVICE_CUDA);
    ck_assert_int_eq(b->d1.index, 1);
    ck_assert_str_eq(b->s1, "cuda-sim");
    dt_free(c);
    dt_free(g);
    dt_free(g2);
}
END_TEST

START_TEST(test_created_by_factory) {
    rreset();
    dt_tensor *t = dt_zeros(DT_SHAPE(4, 3), DT_I64, CUDA(0));
    int p = 0;
    const struct rec_event *e = next(REC_CREATED, &p);
    ck_assert_uint_eq(e->id, dt_id(t));
    ck_assert_int_eq(e->i1, DTP_ORIGIN_FACTORY);
    ck_assert_str_eq(e->s1, "zeros");
    ck_assert_int_eq(e->dtype, DTP_DTYPE_I64);
    ck_assert_int_eq(e->ndim, 2);
    ck_assert(e->shape[0] == 4 && e->shape[1] == 3 && e->strides[0] == 3 && e->strides[1] == 1);
    ck_assert_int_eq(e->d1.type, DTP_DEVICE_CUDA);
    ck_assert_int_eq(e->d1.index, 0);
    ck_assert_int_eq(e->i3, 4 * 3 * 8);
    ck_assert_uint_ne(e->u1, 0);
    dt_free(t);
}
END_TEST

START_TEST(test_op_begin_output_end) {
    dt_tensor *a = dt_ones(DT_SHAPE(2, 2), DT_F32, CUDA(0)), *b = dt_ones(DT_SHAPE(2), DT_F32, CUDA(0));
    rreset();
    dt_tensor *c = dt_add(a, b);
    int p = 0;
    const struct rec_event *beg = next(REC_OP_BEGIN, &p), *cr = next(REC_CREATED, &p), *end = next(REC_OP_END, &p);
    ck_assert_str_eq(beg->s1, "add");
    ck_assert_int_eq(beg->nargs, 2);
    ck_assert_str_eq(beg->args[0].name, "self");
    ck_assert_uint_eq(beg->args[0].id, dt_id(a));
    ck_assert_str_eq(beg->args[1].name, "other");
    ck_assert_uint_eq(beg->args[1].id, dt_id(b));
    ck_assert_int_eq(beg->args[1].device.type, DTP_DEVICE_CUDA);
    ck_assert_int_eq(cr->i1, DTP_ORIGIN_OP_OUTPUT);
    ck_assert_str_eq(cr->s1, "add");
    ck_assert_uint_eq(cr->seq, beg->seq);
    ck_assert_uint_eq(cr->id, dt_id(c));
    ck_assert_uint_eq(end->seq, beg->seq);
    ck_assert_int_eq(end->i1, 0);
    ck_assert_int_eq(end->nargs, 1);
    ck_assert_uint_eq(end->outputs[0], dt_id(c));
    /* sequence numbers increase; in-place ops list self as written */
    uint64_t first_seq = beg->seq;
    rreset();
    ck_assert_int_eq(dt_add_(c, a), 0);
    p = 0;
    const struct rec_event *b2 = next(REC_OP_BEGIN, &p), *e2 = next(REC_OP_END, &p);
    ck_assert_uint_gt(b2->seq, first_seq);
    ck_assert_str_eq(b2->s1, "add_");
    ck_assert_uint_eq(e2->outputs[0], dt_id(c));
    ck_assert_int_eq(count(REC_CREATED), 0);
    /* max over a dim makes two outputs */
    rreset();
    dt_tensor *ix, *mx = dt_max_dim(a, 1, 0, &ix);
    p = 0;
    const struct rec_event *e3 = next(REC_OP_END, &p);
    ck_assert_int_eq(e3->nargs, 2);
    ck_assert_uint_eq(e3->outputs[0], dt_id(mx));
    ck_assert_uint_eq(e3->outputs[1], dt_id(ix));
    dt_free(mx);
    dt_free(ix);
    dt_free(a);
    dt_free(b);
    dt_free(c);
}
END_TEST

START_TEST(test_view_origin) {
    dt_tensor *a = dt_ones(DT_SHAPE(4, 6), DT_F32, CPU);
    rreset();
    dt_tensor *s = dt_slice(a, 1, 2, 6, 2);
    int p = 0;
    const struct rec_event *e = next(REC_CREATED, &p);
    ck_assert_int_eq(e->i1, DTP_ORIGIN_VIEW);
    ck_assert_str_eq(e->s1, "slice");
    ck_assert_uint_eq(e->id2, dt_id(a));
    ck_assert_int_eq(e->offset, 2);
    ck_assert_int_eq(e->strides[1], 2);
    ck_assert_int_eq(count(REC_OP_BEGIN), 0); /* a view dispatches nothing */
    rreset();
    dt_tensor *pa = dt_transpose(a, 0, 1);
    p = 0;
    const struct rec_event *v = next(REC_CREATED, &p);
    dt_tensor *cp = dt_reshape(pa, DT_SHAPE(-1)); /* not viewable: a copy, an op */
    const struct rec_event *cb = next(REC_OP_BEGIN, &p), *cc = next(REC_CREATED, &p);
    ck_assert_uint_ne(cc->u1, v->u1); /* the copy has its own storage */
    ck_assert_str_eq(cb->s1, "reshape");
    ck_assert_int_eq(cc->i1, DTP_ORIGIN_OP_OUTPUT);
    dt_free(s);
    dt_free(pa);
    dt_free(cp);
    dt_free(a);
}
END_TEST

START_TEST(test_transfer_probes) {
    dt_tensor *c = dt_ones(DT_SHAPE(8), DT_F32, CPU);
    rreset();
    dt_tensor *g = dt_to(c, CUDA(1));
    int p = 0;
    const struct rec_event *cr = next(REC_CREATED, &p), *x = next(REC_TRANSFER, &p);
    ck_assert_int_eq(cr->i1, DTP_ORIGIN_TRANSFER);
    ck_assert_str_eq(cr->s1, "to");
    ck_assert_uint_eq(cr->id2, dt_id(c));
    ck_assert_uint_eq(cr->id, dt_id(g));
    ck_assert_uint_eq(x->id, dt_id(c));
    ck_assert_uint_eq(x->id2, dt_id(g));
    ck_assert_int_eq(x->d1.type, DTP_DEVICE_CPU);
    ck_assert_int_eq(x->d2.type, DTP_DEVICE_CUDA);
    ck_assert_int_eq(x->d2.index, 1);
    ck_assert_uint_eq(x->u1, 32);
    ck_assert_int_eq(x->i1, DTP_TRANSFER_TO);
    ck_assert_str_eq(x->s1, "to");
    /* no transfer when already there */
    rreset();
    dt_tensor *same = dt_to(g, CUDA(1));
    ck_assert_int_eq(rcount(), 0);
    dt_free(same);
    /* dt_cpu names itself; copy_ across devices; reads back to host */
    rreset();
    dt_tensor *back = dt_cpu(g);
    ck_assert_int_eq(dt_copy_(c, g), 0);
    float buf[8];
    ck_assert_int_eq(dt_to_host(g, buf, sizeof buf), 0);
    ck_assert_int_eq(dt_to_host(c, buf, sizeof buf), 0); /* cpu: not a transfer */
    p = 0;
    const struct rec_event *x1 = next(REC_TRANSFER, &p);
    ck_assert_str_eq(x1->s1, "cpu");
    ck_assert_uint_eq(x1->id2, dt_id(back));
    const struct rec_event *ob = next(REC_OP_BEGIN, &p), *x2 = next(REC_TRANSFER, &p), *oe = next(REC_OP_END, &p);
    ck_assert_str_eq(ob->s1, "copy_");
    ck_assert_str_eq(ob->args[1].name, "src");
    ck_assert_int_eq(x2->i1, DTP_TRANSFER_COPY);
    ck_assert_uint_eq(x2->id, dt_id(g));
    ck_assert_uint_eq(x2->id2, dt_id(c));
    ck_assert_uint_eq(oe->outputs[0], dt_id(c));
    const struct rec_event *x3 = next(REC_TRANSFER, &p);
    ck_assert_int_eq(x3->i1, DTP_TRANSFER_READ);
    ck_assert_uint_eq(x3->id, dt_id(g));
    ck_assert_uint_eq(x3->id2, 0);
    ck_assert_int_eq(count(REC_TRANSFER), 3);
    dt_free(back);
    dt_free(g);
    dt_free(c);
}
END_TEST

START_TEST(test_named_and_freed) {
    dt_tensor *t = dt_ones(DT_SHAPE(1), DT_F32, CPU);
    rreset();
    dt_set_name(t, "labels");
    int p = 0;
    const struct rec_event *n = next(REC_NAMED, &p);
    ck_assert_uint_eq(n->id, dt_id(t));
    ck_assert_str_eq(n->s1, "labels");
    uint64_t id = dt_id(t);
    dt_retain(t);
    dt_free(t);
    ck_assert_int_eq(count(REC_FREED), 0); /* a reference remains */
    dt_free(t);
    p = 0;
    ck_assert_uint_eq(next(REC_FREED, &p)->id, id);
}
END_TEST

static int events_at_handler = -1;
static void note_handler(const dt_error_info *err, void *ctx) {
    (void)err;
    (void)ctx;
    events_at_handler = rcount();
}

START_TEST(test_mismatch_before_handler) {
    dt_tensor *x = dt_ones(DT_SHAPE(2, 3), DT_F32, CUDA(0)), *w = dt_ones(DT_SHAPE(3, 4), DT_F32, CPU);
    dt_set_error_handler(note_handler, NULL, NULL);
    rreset();
    ck_assert_ptr_null(dt_matmul(x, w));
    int p = 0;
    const struct rec_event *b = next(REC_OP_BEGIN, &p), *m = next(REC_MISMATCH, &p), *e = next(REC_OP_END, &p),
                           *er = next(REC_ERROR, &p);
    ck_assert_str_eq(m->s1, "matmul");
    ck_assert_uint_eq(m->seq, b->seq);
    ck_assert_int_eq(m->nargs, 2);
    ck_assert_int_eq(m->i1, 0); /* self fixed the device */
    ck_assert_int_eq(m->i2, 1); /* mat2 is elsewhere */
    ck_assert_str_eq(m->args[1].name, "mat2");
    ck_assert_uint_eq(m->args[1].id, dt_id(w));
    ck_assert_int_eq(m->args[1].device.type, DTP_DEVICE_CPU);
    ck_assert_int_eq(m->args[0].device.type, DTP_DEVICE_CUDA);
    ck_assert_str_eq(m->s2, dt_last_error());
    ck_assert_int_eq(e->i1, DTP_ERROR_DEVICE);
    ck_assert_int_eq(er->i1, DTP_ERROR_DEVICE);
    ck_assert_str_eq(er->s1, "matmul");
    ck_assert_int_eq(events_at_handler, rcount()); /* every probe fired before the handler ran */
    ck_assert_int_eq(count(REC_CREATED), 0);
    dt_set_error_handler(dt_error_handler_return, NULL, NULL);
    dt_free(x);
    dt_free(w);
}
END_TEST

START_TEST(test_error_probe_for_other_errors) {
    dt_tensor *a = dt_ones(DT_SHAPE(2, 3), DT_F32, CPU);
    rreset();
    ck_assert_ptr_null(dt_matmul(a, a));
    int p = 0;
    const struct rec_event *end = next(REC_OP_END, &p), *er = next(REC_ERROR, &p);
    ck_assert_int_eq(end->i1, DTP_ERROR_SHAPE);
    ck_assert_int_eq(er->i1, DTP_ERROR_SHAPE);
    ck_assert(strstr(er->s2, "cannot be multiplied") != NULL);
    ck_assert_int_eq(count(REC_MISMATCH), 0);
    dt_free(a);
}
END_TEST

START_TEST(test_training_layer_probes) {
    /* registration names the parameter with its dotted path */
    dt_module *seq = dt_nn_sequential(1, (dt_module *[]){dt_nn_linear(2, 3, 1)});
    dt_tensor *w = dt_module_get(seq, "0.weight");
    /* module.to moves the same tensor: one MOVE transfer with src == dst */
    rreset();
    ck_assert_int_eq(dt_module_to(seq, CUDA(0)), 0);
    int p = 0;
    const struct rec_event *mv = next(REC_TRANSFER, &p);
    ck_assert_int_eq(mv->i1, DTP_TRANSFER_MOVE);
    ck_assert_uint_eq(mv->id, dt_id(w));
    ck_assert_uint_eq(mv->id2, dt_id(w));
    ck_assert_str_eq(mv->s1, "module.to");
    ck_assert_int_eq(mv->d2.type, DTP_DEVICE_CUDA);
    ck_assert_int_eq(count(REC_CREATED), 0); /* no new tensor */
    /* a checkpoint load creates tensors whose origin is their key and file */
    char path[64];
    snprintf(path, sizeof path, "/tmp/dt_probe_%d.ckpt", (int)getpid());
    dt_state_dict *sd = dt_module_state_dict(seq);
    ck_assert_int_eq(dt_save(sd, path), 0);
    dt_state_dict_free(sd);
    rreset();
    dt_device cpu = CPU;
    sd = dt_load(path, &cpu);
    unlink(path);
    ck_assert_ptr_nonnull(sd);
    p = 0;
    const struct rec_event *cr = next(REC_CREATED, &p);
    ck_assert_int_eq(cr->i1, DTP_ORIGIN_CHECKPOINT);
    ck_assert_str_eq(cr->s1, "0.weight");
    ck_assert_str_eq(cr->detail, path);
    ck_assert_uint_eq(cr->id, dt_id(dt_state_dict_tensor(sd, "0.weight")));
    dt_state_dict_free(sd);
    /* a data loader's batches are made by "dataloader" on the calling thread */
    dt_tensor *x = dt_ones(DT_SHAPE(4, 2), DT_F32, CPU);
    dt_dataset *ds = dt_tensor_dataset(1, &x);
    dt_dataloader *dl = dt_dataloader_new(ds, 2, 0, 0, 0, 1);
    dt_tensor *b;
    rreset();
    ck_assert_int_eq(dt_dataloader_next(dl, &b), 1);
    p = 0;
    const struct rec_event *bc = next(REC_CREATED, &p);
    ck_assert_int_eq(bc->i1, DTP_ORIGIN_FACTORY);
    ck_assert_str_eq(bc->s1, "dataloader");
    ck_assert_uint_eq(bc->id, dt_id(b));
    dt_free(b);
    dt_dataloader_free(dl);
    dt_dataset_free(ds);
    dt_free(x);
    dt_module_free(seq);
}
END_TEST

/* The events of one call, recorded since the last reset, are one op named
 * `name` with no tensor argument around everything the call did, ended with
 * `status`. */
static void check_wrapped(const char *name, int status) {
    ck_assert_int_ge(rcount(), 3);
    const struct rec_event *b = rget(0), *e = rget(rcount() - 1);
    ck_assert_int_eq(b->kind, REC_OP_BEGIN);
    ck_assert_str_eq(b->s1, name);
    ck_assert_int_eq(b->nargs, 0);
    ck_assert_int_eq(e->kind, REC_OP_END);
    ck_assert_uint_eq(e->seq, b->seq);
    ck_assert_int_eq(e->i1, status);
    ck_assert_int_eq(e->nargs, 0);
}

START_TEST(test_training_steps_are_ops) {
    /* zero_grad, backward and the optimizer's step are each one op around
     * the ops, tensors and frees they make (a tracer gives those the
     * step's call site), as PyTorch's profiler shows them as ranges */
    dt_module *lin = dt_nn_linear(2, 1, 1);
    dt_optimizer *o = dt_adam(lin, 0.1, 0.9, 0.999, 1e-8, 0);
    dt_tensor *x = dt_ones(DT_SHAPE(4, 2), DT_F32, CPU);
    for (int pass = 0; pass < 2; pass++) {
        /* the second pass runs on cuda:0, with Adam's state left on the
         * cpu by the first: the step fails inside, and its op ends with the
         * error's status after the mismatch */
        if (pass) ck_assert_int_eq(dt_module_to(lin, CUDA(0)), 0);
        dt_tensor *xs = pass ? dt_to(x, CUDA(0)) : dt_retain(x);
        dt_tensor *y = dt_module_forward(lin, xs), *l = dt_sum(y);
        rreset();
        ck_assert_int_eq(dt_backward(l), 0);
        check_wrapped("backward", 0);
        rreset();
        ck_assert_int_eq(dt_optimizer_step(o), pass ? -1 : 0);
        check_wrapped("optimizer.step", pass ? DT_ERR_DEVICE : 0);
        if (!pass) { /* Adam's state, made by the first step: each tensor's role (of its parameter) before its name */
            const char *pname;
            uint64_t w = dt_id(dt_module_parameter(lin, 0, &pname)), b = dt_id(dt_module_parameter(lin, 1, &pname));
            ck_assert_int_eq(count(REC_ROLE), 6);
            for (int i = 0, p = 0; i < 6; i++) {
                const struct rec_event *r = next(REC_ROLE, &p), *n = next(REC_NAMED, &p);
                ck_assert_int_eq(r->i1, DTP_ROLE_OPTIMIZER_STATE);
                ck_assert_msg(r->id2 == w || r->id2 == b, "state of %llu", (unsigned long long)r->id2);
                ck_assert_msg(!strcmp(r->s1, "step") || !strcmp(r->s1, "exp_avg") || !strcmp(r->s1, "exp_avg_sq"), "%s",
                              r->s1);
                ck_assert_uint_eq(n->id, r->id);
                ck_assert_msg(strstr(n->s1, r->s1), "%s named %s", r->s1, n->s1);
            }
        }
        ck_assert_int_eq(count(REC_MISMATCH), pass);
        rreset();
        dt_optimizer_zero_grad(o);
        check_wrapped("optimizer.zero_grad", 0);
        dt_free(l), dt_free(y), dt_free(xs);
    }
    dt_free(x);
    dt_optimizer_free(o);
    dt_module_free(lin);
}
END_TEST

Suite *make_probes_suite(void) {
    Suite *s = suite_create("probes");
    TCase *tc = tcase_create("recorded");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_init_and_backends);
    tcase_add_test(tc, test_created_by_factory);
    tcase_add_test(tc, test_op_begin_output_end);
    tcase_add_test(tc, test_training_steps_are_ops);
    tcase_add_test(tc, test_view_origin);
    tcase_add_test(tc, test_transfer_probes);
    tcase_add_test(tc, test_named_and_freed);
    tcase_add_test(tc, test_mismatch_before_handler);
    tcase_add_test(tc, test_error_probe_for_other_errors);
    tcase_add_test(tc, test_training_layer_probes);
    suite_add_tcase(s, tc);
    return s;
}
