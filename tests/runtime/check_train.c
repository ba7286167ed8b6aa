/* The training layer: modules (dotted names, in-place moves that leave plain
 * struct fields behind), layers and losses (shapes, device checks naming
 * their weight arguments), optimizers (values against hand computation,
 * lazily made state on the parameter's device), state dicts, checkpoints
 * (bit-identical round trip, identical resumed losses, every bad file
 * refused), the data loader, and data parallel over 2 simulated GPUs. */
#include "testutil.h"

#include <devtrace/dt_nn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static char tmpdir[64];
static void setup(void) {
    tu_catch_errors();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dt_train.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}
static void teardown(void) {
    tu_teardown();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static dt_module *mlp(void) {
    dt_module *layers[] = {dt_nn_linear(4, 8, 1), dt_nn_relu(), dt_nn_linear(8, 3, 1)};
    return dt_nn_sequential(3, layers);
}

static int same_values(const dt_tensor *a, const dt_tensor *b) {
    int64_t na, nb;
    double *va = tu_values(a, &na), *vb = tu_values(b, &nb);
    int same = na == nb && memcmp(va, vb, sizeof(double) * (size_t)na) == 0;
    free(va);
    free(vb);
    return same;
}

/* ---------------------------------------------------------------- modules */

struct net {
    dt_tensor *offset; /* a plain field: not registered, so never moved */
};
static dt_tensor *net_forward(dt_module *m, const dt_tensor *x) {
    struct net *n = dt_module_self(m);
    dt_tensor *h = dt_module_forward(dt_module_child(m, "fc1"), x);
    dt_tensor *s = h ? dt_mul(h, dt_module_get(m, "scale")) : NULL;
    dt_tensor *y = s ? dt_add(s, n->offset) : NULL;
    dt_free(h);
    dt_free(s);
    return y;
}
static void net_free(void *p) {
    struct net *n = p;
    dt_free(n->offset);
    free(n);
}

static dt_module *make_net(void) {
    struct net *self = calloc(1, sizeof *self);
    self->offset = dt_zeros(DT_SHAPE(2), DT_F32, CPU);
    dt_module *m = dt_module_new("Net", net_forward, self, net_free);
    ck_assert_int_eq(dt_module_add_child(m, "fc1", dt_nn_linear(3, 2, 1)), 0);
    ck_assert_int_eq(dt_module_register_buffer(m, "scale", K(dt_ones(DT_SHAPE(2), DT_F32, CPU))), 0);
    return m;
}

START_TEST(test_module_names_move_and_plain_field) {
    dt_module *m = make_net();
    dt_tensor *w = dt_module_get(m, "fc1.weight");
    ck_assert_str_eq(dt_name(w), "fc1.weight");
    ck_assert(dt_requires_grad(w));
    ck_assert(!dt_requires_grad(dt_module_get(m, "scale")));
    ck_assert_int_eq(dt_module_num_parameters(m), 2);
    const char *name;
    ck_assert_ptr_eq(dt_module_parameter(m, 1, &name), dt_module_get(m, "fc1.bias"));
    ck_assert_str_eq(name, "fc1.bias");
    /* nesting renames the whole subtree from the outermost module */
    dt_module *outer = dt_nn_sequential(1, &m);
    ck_assert_str_eq(dt_name(w), "0.fc1.weight");
    ck_assert_str_eq(dt_name(dt_module_get(outer, "0.scale")), "0.scale");

    uint64_t id = dt_id(w);
    ck_assert_int_eq(dt_module_to(outer, CUDA(0)), 0);
    ck_assert(dt_id(w) == id && dt_device_equal(dt_device_of(w), CUDA(0)));
    ck_assert(dt_device_equal(dt_device_of(dt_module_get(m, "scale")), CUDA(0)));
    struct net *self = dt_module_self(m);
    ck_assert_int_eq(dt_device_of(self->offset).type, DT_DEVICE_CPU); /* the bug class stays reproducible */

    dt_tensor *x = K(dt_ones(DT_SHAPE(4, 3), DT_F32, CUDA(0)));
    ck_assert_ptr_null(dt_module_forward(outer, x));
    EXPECT_ERROR(DT_ERR_DEVICE, "found at least two devices, cuda:0 and cpu", "argument other in method add");
    /* a cpu input to a moved model: the classic */
    ck_assert_ptr_null(dt_module_forward(outer, K(dt_ones(DT_SHAPE(4, 3), DT_F32, CPU))));
    EXPECT_ERROR(DT_ERR_DEVICE, "cpu and cuda:0", "method linear");
    dt_module_free(outer);
}
END_TEST

START_TEST(test_module_registration_errors) {
    dt_module *m = dt_module_new("M", NULL, NULL, NULL);
    dt_tensor *t = K(dt_zeros(DT_SHAPE(2), DT_F32, CPU));
    ck_assert_int_eq(dt_module_register_parameter(m, "w", t), 0);
    ck_assert_int_eq(dt_module_register_parameter(m, "w", t), -1);
    EXPECT_ERROR(DT_ERR_ARG, "attribute 'w' already exists");
    ck_assert_int_eq(dt_module_register_buffer(m, "a.b", t), -1);
    EXPECT_ERROR(DT_ERR_ARG, "must be non-empty and contain no \".\"");
    dt_tensor *computed = K(dt_mul_scalar(t, 2));
    ck_assert_int_eq(dt_module_register_parameter(m, "c", computed), -1);
    EXPECT_ERROR(DT_ERR_ARG, "computed tensor");
    ck_assert_ptr_null(dt_module_forward(m, t));
    EXPECT_ERROR(DT_ERR_STATE, "missing the required \"forward\" function");
    ck_assert_ptr_null(dt_nn_linear(0, 3, 1));
    EXPECT_ERROR(DT_ERR_ARG, "features must be positive");
    dt_module_free(m);
}
END_TEST

START_TEST(test_layers) {
    dt_manual_seed(1);
    dt_tensor *img = K(dt_randn(DT_SHAPE(2, 3, 8, 8), CPU));
    dt_module *conv = dt_nn_conv2d(3, 4, 3, 1, 1, 1), *pool = dt_nn_max_pool2d(2, 0), *flat = dt_nn_flatten();
    dt_tensor *c = K(dt_module_forward(conv, img));
    EXPECT_SHAPE(c, 2, 4, 8, 8);
    dt_tensor *p = K(dt_module_forward(pool, c));
    EXPECT_SHAPE(p, 2, 4, 4, 4);
    EXPECT_SHAPE(K(dt_module_forward(flat, p)), 2, 64);
    /* conv2d against a direct sum for one output element */
    dt_tensor *w = dt_module_get(conv, "weight"), *b = dt_module_get(conv, "bias");
    int64_t n;
    double *iv = tu_values(img, &n), *wv = tu_values(w, &n), *bv = tu_values(b, &n), *cv = tu_values(c, &n);
    double want = bv[1]; /* out[1][1][0][0], padding 1: rows -1..1, cols -1..1 */
    for (int ch = 0; ch < 3; ch++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                int y = i - 1, x = j - 1;
                if (y < 0 || x < 0) continue;
                want += iv[((1 * 3 + ch) * 8 + y) * 8 + x] * wv[((1 * 3 + ch) * 3 + i) * 3 + j];
            }
    ck_assert_double_eq_tol(cv[((1 * 4 + 1) * 8 + 0) * 8 + 0], want, 1e-4);
    free(iv), free(wv), free(bv), free(cv);
    /* layer norm: zero mean, unit variance per row */
    dt_module *ln = dt_nn_layer_norm(5);
    dt_tensor *y = K(dt_module_forward(ln, K(dt_randn(DT_SHAPE(3, 5), CPU))));
    EXPECT_VALUES(K(dt_mean_dim(y, 1, 0)), 0, 0, 0);
    /* dropout: identity in eval, zeroes and rescales in train */
    dt_module *drop = dt_nn_dropout(0.5);
    dt_tensor *ones = K(dt_ones(DT_SHAPE(1000), DT_F32, CPU));
    dt_module_train(drop, 0);
    ck_assert_ptr_eq(K(dt_module_forward(drop, ones)), ones);
    dt_module_train(drop, 1);
    dt_tensor *d = K(dt_module_forward(drop, ones));
    double *dv = tu_values(d, &n);
    int zeros = 0;
    for (int64_t i = 0; i < n; i++) {
        ck_assert(dv[i] == 0 || dv[i] == 2);
        zeros += dv[i] == 0;
    }
    free(dv);
    ck_assert(zeros > 400 && zeros < 600);
    ck_assert_ptr_null(dt_conv2d(img, K(dt_zeros(DT_SHAPE(4, 2, 3, 3), DT_F32, CPU)), NULL, 1, 0));
    EXPECT_ERROR(DT_ERR_SHAPE, "expected input[2, 3, 8, 8] to have 2 channels, but got 3 channels instead");
    dt_module *mods[] = {conv, pool, flat, ln, drop};
    for (int i = 0; i < 5; i++) dt_module_free(mods[i]);
}
END_TEST

/* ---------------------------------------------------------------- losses */

START_TEST(test_loss_values_and_device_arguments) {
    dt_tensor *logits = TF(CPU, DT_SHAPE(2, 3), 1, 2, 3, 1, 1, 1), *target = TI(CPU, DT_SHAPE(2), 2, 0);
    /* -(log_softmax[0][2] + log_softmax[1][0]) / 2 */
    double l0 = 3 - log(exp(1) + exp(2) + exp(3)), l1 = 1 - log(3 * exp(1));
    EXPECT_VALUES(K(dt_cross_entropy(logits, target, NULL, -100)), -(l0 + l1) / 2);
    dt_tensor *w = TF(CPU, DT_SHAPE(3), 1, 1, 3);
    EXPECT_VALUES(K(dt_cross_entropy(logits, target, w, -100)), -(3 * l0 + l1) / 4);
    EXPECT_VALUES(K(dt_cross_entropy(logits, TI(CPU, DT_SHAPE(2), 2, -100), NULL, -100)), -l0);
    ck_assert_ptr_null(dt_cross_entropy(logits, TI(CPU, DT_SHAPE(2), 2, 5), NULL, -100));
    EXPECT_ERROR(DT_ERR_INDEX, "Target 5 is out of bounds.");
    EXPECT_VALUES(K(dt_mse_loss(TF(CPU, DT_SHAPE(2), 1, 2), TF(CPU, DT_SHAPE(2), 3, 2))), 2);
    /* bce: x = 0 gives log 2 whatever the target; pos_weight scales the positive term */
    dt_tensor *x0 = TF(CPU, DT_SHAPE(1, 2), 0, 0), *y = TF(CPU, DT_SHAPE(1, 2), 1, 0);
    EXPECT_VALUES(K(dt_bce_with_logits(x0, y, NULL)), log(2));
    EXPECT_VALUES(K(dt_bce_with_logits(x0, y, TF(CPU, DT_SHAPE(2), 3, 3))), (3 * log(2) + log(2)) / 2);

    /* weights on the wrong device are reported as the loss's arguments */
    dt_tensor *lg = K(dt_to(logits, CUDA(0))), *tg = K(dt_to(target, CUDA(0)));
    ck_assert_ptr_null(dt_cross_entropy(lg, tg, w, -100));
    EXPECT_ERROR(DT_ERR_DEVICE, "cuda:0 and cpu", "argument weight in method cross_entropy");
    ck_assert_ptr_null(dt_cross_entropy(lg, target, NULL, -100));
    EXPECT_ERROR(DT_ERR_DEVICE, "cuda:0 and cpu", "argument target in method cross_entropy");
    ck_assert_ptr_null(dt_bce_with_logits(K(dt_to(x0, CUDA(0))), K(dt_to(y, CUDA(0))), TF(CPU, DT_SHAPE(2), 3, 3)));
    EXPECT_ERROR(DT_ERR_DEVICE, "argument pos_weight in method binary_cross_entropy_with_logits");
    ck_assert_ptr_null(dt_cross_entropy(logits, TF(CPU, DT_SHAPE(2), 2, 0), NULL, -100));
    EXPECT_ERROR(DT_ERR_DTYPE, "expected scalar type Long but found Float");
}
END_TEST

/* ---------------------------------------------------------------- optimizers */

static dt_module *one_param(const float *v, int n, dt_device dev) {
    dt_module *m = dt_module_new("P", NULL, NULL, NULL);
    dt_tensor *t = dt_from_data(v, DT_F32, 1, (int64_t[]){n}, dev);
    ck_assert_int_eq(dt_module_register_parameter(m, "w", t), 0);
    dt_free(t);
    return m;
}

/* loss = sum(w * w): grad 2w */
static void square_step(dt_module *m, dt_optimizer *o) {
    dt_tensor *w = dt_module_get(m, "w");
    dt_optimizer_zero_grad(o);
    dt_tensor *l = dt_sum(K(dt_mul(w, w)));
    ck_assert_int_eq(dt_backward(l), 0);
    dt_free(l);
    ck_assert_msg(dt_optimizer_step(o) == 0, "%s", dt_last_error());
}

START_TEST(test_sgd_values) {
    dt_module *m = one_param((float[]){1, 2}, 2, CPU);
    dt_optimizer *o = dt_sgd(m, 0.1, 0.9, 0);
    square_step(m, o);
    EXPECT_VALUES(dt_module_get(m, "w"), 0.8, 1.6);
    square_step(m, o);
    EXPECT_VALUES(dt_module_get(m, "w"), 0.46, 0.92); /* buf = 0.9 [2,4] + [1.6,3.2] */
    dt_optimizer_free(o);
    dt_module_free(m);
    m = one_param((float[]){1, 2}, 2, CPU);
    o = dt_sgd(m, 0.1, 0, 0.5); /* d = 2w + 0.5w */
    square_step(m, o);
    EXPECT_VALUES(dt_module_get(m, "w"), 0.75, 1.5);
    dt_optimizer_free(o);
    dt_module_free(m);
}
END_TEST

START_TEST(test_adam_values_and_lazy_state) {
    dt_module *m = one_param((float[]){1}, 1, CUDA(0));
    dt_optimizer *o = dt_adam(m, 0.1, 0.9, 0.999, 1e-8, 0);
    dt_state_dict *sd = dt_optimizer_state_dict(o);
    ck_assert_ptr_null(dt_state_dict_tensor(sd, "state.0.exp_avg")); /* lazily made */
    dt_state_dict_free(sd);
    square_step(m, o);
    EXPECT_VALUES(dt_module_get(m, "w"), 0.9); /* the first Adam step moves by lr */
    sd = dt_optimizer_state_dict(o);
    dt_tensor *ea = dt_state_dict_tensor(sd, "state.0.exp_avg");
    ck_assert_str_eq(dt_name(ea), "optimizer.state.w.exp_avg");
    ck_assert(dt_device_equal(dt_device_of(ea), CUDA(0)));
    ck_assert_int_eq(dt_device_of(dt_state_dict_tensor(sd, "state.0.step")).type, DT_DEVICE_CPU);
    EXPECT_VALUES(ea, 0.2);
    EXPECT_VALUES(dt_state_dict_tensor(sd, "state.0.exp_avg_sq"), 0.004);
    dt_state_dict_free(sd);
    dt_optimizer_free(o);
    dt_module_free(m);
    m = one_param((float[]){1}, 1, CPU);
    o = dt_adamw(m, 0.1, 0.9, 0.999, 1e-8, 0.1);
    square_step(m, o);
    EXPECT_VALUES(dt_module_get(m, "w"), 0.89); /* decoupled decay first: 0.99, then -0.1 */
    dt_optimizer_free(o);
    dt_module_free(m);
}
END_TEST

START_TEST(test_state_left_behind_when_model_moves) {
    dt_module *m = one_param((float[]){1, 2}, 2, CPU);
    dt_optimizer *o = dt_adam(m, 0.1, 0.9, 0.999, 1e-8, 0);
    square_step(m, o); /* warm-up step on the cpu: state made there */
    ck_assert_int_eq(dt_module_to(m, CUDA(0)), 0);
    dt_tensor *w = dt_module_get(m, "w");
    dt_optimizer_zero_grad(o);
    dt_tensor *l = K(dt_sum(K(dt_mul(w, w))));
    ck_assert_int_eq(dt_backward(l), 0);
    ck_assert(dt_device_equal(dt_device_of(dt_grad(w)), CUDA(0)));
    ck_assert_int_eq(dt_optimizer_step(o), -1);
    EXPECT_ERROR(DT_ERR_DEVICE, "found at least two devices, cpu and cuda:0", "method add_");
    dt_optimizer_free(o);
    dt_module_free(m);
}
END_TEST

/* ---------------------------------------------------------------- checkpoints */

/* Batch k of a fixed synthetic task. */
static void batch(int k, dt_device dev, dt_tensor **x, dt_tensor **y) {
    float xv[8 * 4];
    int64_t yv[8];
    for (int i = 0; i < 8; i++) {
        float s = 0;
        for (int j = 0; j < 4; j++) s += xv[i * 4 + j] = (float)sin(k * 7.1 + i * 1.3 + j * 0.7);
        yv[i] = s > 0.5 ? 2 : s > -0.5 ? 1 : 0;
    }
    *x = K(dt_from_data(xv, DT_F32, 2, (int64_t[]){8, 4}, dev));
    *y = K(dt_from_data(yv, DT_I64, 1, (int64_t[]){8}, dev));
}

static double train_step(dt_module *m, dt_optimizer *o, int k, dt_device dev) {
    dt_tensor *x, *y;
    batch(k, dev, &x, &y);
    dt_optimizer_zero_grad(o);
    dt_tensor *out = K(dt_module_forward(m, x)), *loss = K(dt_cross_entropy(out, y, NULL, -100));
    ck_assert_msg(loss != NULL, "%s", dt_last_error());
    ck_assert_int_eq(dt_backward(loss), 0);
    ck_assert_int_eq(dt_optimizer_step(o), 0);
    return dt_item(loss);
}

static dt_state_dict *checkpoint(dt_module *m, dt_optimizer *o, double epoch) {
    dt_state_dict *ck = dt_state_dict_new(), *ms = dt_module_state_dict(m), *os = dt_optimizer_state_dict(o);
    ck_assert_int_eq(dt_state_dict_merge(ck, "model.", ms), 0);
    ck_assert_int_eq(dt_state_dict_merge(ck, "optimizer.", os), 0);
    ck_assert_int_eq(dt_state_dict_set_number(ck, "epoch", epoch), 0);
    dt_state_dict_free(ms);
    dt_state_dict_free(os);
    return ck;
}

/* Every tensor of a is in b with the same bits, and b has no other tensor. */
static void expect_same_dict(const dt_state_dict *a, const dt_state_dict *b) {
    for (int i = 0; i < dt_state_dict_size(b); i++) {
        const char *k = dt_state_dict_key(b, i);
        ck_assert_msg(!dt_state_dict_tensor(b, k) || dt_state_dict_tensor(a, k), "unexpected tensor %s", k);
    }
    for (int i = 0; i < dt_state_dict_size(a); i++) {
        const char *k = dt_state_dict_key(a, i);
        dt_tensor *ta = dt_state_dict_tensor(a, k), *tb = dt_state_dict_tensor(b, k);
        if (!ta) continue;
        ck_assert_msg(tb != NULL, "%s missing", k);
        ck_assert_msg(same_values(ta, tb), "%s differs", k);
    }
}

START_TEST(test_checkpoint_roundtrip_and_resume) {
    dt_device dev = CUDA(0);
    dt_manual_seed(3);
    dt_module *m = mlp();
    dt_module_to(m, dev);
    dt_optimizer *o = dt_adam(m, 0.01, 0.9, 0.999, 1e-8, 0);
    for (int k = 0; k < 3; k++) train_step(m, o, k, dev);
    char path[128];
    snprintf(path, sizeof path, "%s/run.ckpt", tmpdir);
    dt_state_dict *ck = checkpoint(m, o, 3);
    ck_assert_int_eq(dt_save(ck, path), 0);
    /* a snapshot of the saved values: clones, since training goes on in place */
    dt_state_dict *snap = dt_state_dict_new();
    for (int i = 0; i < dt_state_dict_size(ck); i++) {
        const char *k = dt_state_dict_key(ck, i);
        if (dt_state_dict_tensor(ck, k)) dt_state_dict_set_tensor(snap, k, K(dt_clone(dt_state_dict_tensor(ck, k))));
    }
    dt_state_dict_free(ck);
    double cont[3];
    for (int k = 0; k < 3; k++) cont[k] = train_step(m, o, 3 + k, dev);

    /* a new process would do this: fresh model and optimizer, then load */
    dt_manual_seed(99);
    dt_module *m2 = mlp();
    dt_module_to(m2, dev);
    dt_optimizer *o2 = dt_adam(m2, 0.5, 0.5, 0.5, 1, 0);
    dt_state_dict *loaded = dt_load(path, NULL);
    ck_assert_msg(loaded != NULL, "%s", dt_last_error());
    expect_same_dict(snap, loaded);
    ck_assert(dt_device_equal(dt_device_of(dt_state_dict_tensor(loaded, "model.0.weight")), dev));
    double epoch;
    ck_assert_int_eq(dt_state_dict_number(loaded, "epoch", &epoch), 0);
    ck_assert(epoch == 3);
    dt_state_dict *ms = dt_state_dict_sub(loaded, "model."), *os = dt_state_dict_sub(loaded, "optimizer.");
    ck_assert_int_eq(dt_module_load_state_dict(m2, ms, 1), 0);
    ck_assert_int_eq(dt_optimizer_load_state_dict(o2, os), 0);
    ck_assert(dt_optimizer_lr(o2) == 0.01);
    dt_state_dict *after = checkpoint(m2, o2, 3);
    expect_same_dict(snap, after); /* bit-identical parameters and optimizer state */
    for (int k = 0; k < 3; k++) {
        double l = train_step(m2, o2, 3 + k, dev);
        ck_assert_msg(l == cont[k], "resumed loss %d is %.9g, uninterrupted %.9g", k, l, cont[k]);
    }
    /* map_location puts everything on the cpu */
    dt_device cpu = CPU;
    dt_state_dict *oncpu = dt_load(path, &cpu);
    ck_assert_int_eq(dt_device_of(dt_state_dict_tensor(oncpu, "model.2.bias")).type, DT_DEVICE_CPU);
    ck_assert_int_eq(dt_device_of(dt_state_dict_tensor(oncpu, "optimizer.state.0.exp_avg")).type, DT_DEVICE_CPU);
    /* PyTorch's rule: optimizer state follows its parameter's device at load time */
    dt_state_dict *os_cpu = dt_state_dict_sub(oncpu, "optimizer.");
    ck_assert_int_eq(dt_optimizer_load_state_dict(o2, os_cpu), 0);
    dt_state_dict *st = dt_optimizer_state_dict(o2);
    ck_assert(dt_device_equal(dt_device_of(dt_state_dict_tensor(st, "state.0.exp_avg")), dev));
    ck_assert_str_eq(dt_name(dt_state_dict_tensor(st, "state.0.exp_avg")), "optimizer.state.0.weight.exp_avg");
    dt_state_dict *list[] = {snap, loaded, ms, os, after, oncpu, os_cpu, st};
    for (int i = 0; i < 8; i++) dt_state_dict_free(list[i]);
    dt_optimizer_free(o);
    dt_optimizer_free(o2);
    dt_module_free(m);
    dt_module_free(m2);
}
END_TEST

START_TEST(test_load_state_dict_errors_change_nothing) {
    dt_module *m = mlp(), *other = dt_nn_linear(4, 8, 1);
    dt_tensor *w = dt_module_get(m, "0.weight");
    dt_tensor *before = K(dt_clone(w));
    dt_state_dict *sd = dt_module_state_dict(other); /* keys weight, bias: none match */
    ck_assert_int_eq(dt_module_load_state_dict(m, sd, 1), -1);
    EXPECT_ERROR(DT_ERR_ARG, "Error(s) in loading state_dict for Sequential",
                 "Missing key(s) in state_dict: \"0.weight\"", "Unexpected key(s) in state_dict: \"weight\"");
    dt_state_dict *bad = dt_state_dict_new();
    dt_state_dict_set_tensor(bad, "0.weight", K(dt_zeros(DT_SHAPE(3, 3), DT_F32, CPU)));
    ck_assert_int_eq(dt_module_load_state_dict(m, bad, 0), -1);
    EXPECT_ERROR(DT_ERR_ARG, "size mismatch for 0.weight: copying a param with shape [3, 3] from checkpoint, the shape "
                             "in current model is [8, 4].");
    ck_assert(same_values(before, w));
    dt_state_dict_free(sd);
    dt_state_dict_free(bad);
    dt_module_free(m);
    dt_module_free(other);
}
END_TEST

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

START_TEST(test_checkpoint_bad_files) {
    char good[128], bad[128];
    snprintf(good, sizeof good, "%s/good.ckpt", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.ckpt", tmpdir);
    dt_state_dict *sd = dt_state_dict_new();
    dt_state_dict_set_tensor(sd, "w", K(dt_ones(DT_SHAPE(4), DT_F32, CUDA(1))));
    dt_state_dict_set_number(sd, "epoch", 1);
    ck_assert_int_eq(dt_save(sd, good), 0);
    FILE *f = fopen(good, "rb");
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);

    ck_assert_ptr_null(dt_load(bad, NULL));
    EXPECT_ERROR(DT_ERR_IO, "cannot open checkpoint", "No such file");
    write_file(bad, "hello, world\n", 13);
    ck_assert_ptr_null(dt_load(bad, NULL));
    EXPECT_ERROR(DT_ERR_IO, "is not a devtrace checkpoint (bad magic number)");
    write_file(bad, buf, n - 9);
    ck_assert_ptr_null(dt_load(bad, NULL));
    EXPECT_ERROR(DT_ERR_IO, "truncated or corrupt");
    write_file(bad, buf, 14);
    ck_assert_ptr_null(dt_load(bad, NULL));
    EXPECT_ERROR(DT_ERR_IO, "truncated");
    buf[n / 2] ^= 0x40;
    write_file(bad, buf, n);
    ck_assert_ptr_null(dt_load(bad, NULL));
    EXPECT_ERROR(DT_ERR_IO, "checksum mismatch");
    buf[n / 2] ^= 0x40;
    buf[8] = 2; /* format version 2 */
    write_file(bad, buf, n);
    ck_assert_ptr_null(dt_load(bad, NULL));
    EXPECT_ERROR(DT_ERR_IO, "checkpoint format version 2", "reads versions 1 to 1");
    buf[8] = 1;
    /* a tensor saved on cuda:1, read where cuda:7 would be needed: patch and re-sum */
    size_t idx = 8 + 4 + 4 + 4 + 1 + 1 + 4; /* magic, version, count, klen, "w", kind, head */
    ck_assert_int_eq(buf[idx], 1);
    buf[idx] = 7;
    uint64_t h = fnv(buf, n - 8);
    memcpy(buf + n - 8, &h, 8);
    write_file(bad, buf, n);
    ck_assert_ptr_null(dt_load(bad, NULL));
    EXPECT_ERROR(DT_ERR_IO, "Attempting to deserialize object on CUDA device 7 but dt_cuda_device_count() is 2");
    dt_device cpu = CPU;
    dt_state_dict *ok = dt_load(bad, &cpu); /* a map_location fixes it */
    ck_assert_ptr_nonnull(ok);
    dt_state_dict_free(ok);
    /* an unwritable path: an error, and nothing left behind */
    ck_assert_int_eq(dt_save(sd, "/nonexistent-dir/x.ckpt"), -1);
    EXPECT_ERROR(DT_ERR_IO, "cannot create");
    dt_state_dict_free(sd);
}
END_TEST

/* ---------------------------------------------------------------- data */

static void collect_epoch(dt_dataloader *dl, int64_t *order, int64_t *nbatches) {
    dt_tensor *b[2];
    int64_t k = 0;
    *nbatches = 0;
    int rc;
    while ((rc = dt_dataloader_next(dl, b)) == 1) {
        ck_assert_int_eq(dt_device_of(b[0]).type, DT_DEVICE_CPU);
        float *xs = dt_data(b[0]);
        int64_t *ys = dt_data(b[1]);
        for (int64_t i = 0; i < dt_size(b[1], 0); i++) {
            ck_assert(xs[i * 2] == (float)ys[i] && xs[i * 2 + 1] == (float)ys[i] * 10); /* rows stay paired */
            order[k++] = ys[i];
        }
        (*nbatches)++;
        dt_free(b[0]);
        dt_free(b[1]);
    }
    ck_assert_int_eq(rc, 0);
}

START_TEST(test_dataloader) {
    float xv[20];
    int64_t yv[10];
    for (int i = 0; i < 10; i++) xv[2 * i] = (float)i, xv[2 * i + 1] = (float)i * 10, yv[i] = i;
    dt_tensor *t[] = {K(dt_from_data(xv, DT_F32, 2, (int64_t[]){10, 2}, CPU)),
                      K(dt_from_data(yv, DT_I64, 1, (int64_t[]){10}, CPU))};
    dt_dataset *ds = dt_tensor_dataset(2, t);
    int64_t order[10], nb;
    dt_dataloader *dl = dt_dataloader_new(ds, 3, 0, 0, 0, 0);
    collect_epoch(dl, order, &nb);
    ck_assert_int_eq(nb, 4);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(order[i], i);
    dt_dataloader_free(dl);
    dl = dt_dataloader_new(ds, 3, 0, 0, 1, 0);
    collect_epoch(dl, order, &nb);
    ck_assert_int_eq(nb, 3);
    dt_dataloader_free(dl);
    /* shuffled: a permutation per epoch, the same for the same seed, with or without workers */
    dt_dataloader *a = dt_dataloader_new(ds, 4, 1, 42, 0, 0), *b = dt_dataloader_new(ds, 4, 1, 42, 0, 3);
    int64_t oa[2][10], ob[2][10];
    for (int e = 0; e < 2; e++) {
        collect_epoch(a, oa[e], &nb);
        collect_epoch(b, ob[e], &nb);
        ck_assert_int_eq(memcmp(oa[e], ob[e], sizeof oa[e]), 0);
        int seen[10] = {0};
        for (int i = 0; i < 10; i++) seen[oa[e][i]]++;
        for (int i = 0; i < 10; i++) ck_assert_int_eq(seen[i], 1);
    }
    ck_assert(memcmp(oa[0], oa[1], sizeof oa[0]) != 0);
    int identity = 1;
    for (int i = 0; i < 10; i++) identity &= oa[0][i] == i;
    ck_assert(!identity);
    dt_dataloader_free(a);
    dt_dataloader_free(b);
    dt_dataset_free(ds);
    ck_assert_ptr_null(dt_tensor_dataset(1, (dt_tensor *[]){K(dt_ones(DT_SHAPE(3), DT_F32, CUDA(0)))}));
    EXPECT_ERROR(DT_ERR_DEVICE, "holds cpu tensors");
    ck_assert_ptr_null(dt_tensor_dataset(2, (dt_tensor *[]){t[0], K(dt_ones(DT_SHAPE(3), DT_F32, CPU))}));
    EXPECT_ERROR(DT_ERR_SHAPE, "Size mismatch between tensors");
}
END_TEST

/* ---------------------------------------------------------------- data parallel */

START_TEST(test_data_parallel_matches_one_device) {
    dt_manual_seed(5);
    dt_module *a = mlp(), *b = mlp();
    dt_state_dict *sd = dt_module_state_dict(a);
    ck_assert_int_eq(dt_module_load_state_dict(b, sd, 1), 0);
    dt_state_dict_free(sd);
    dt_module_to(a, CUDA(0));
    dt_module_to(b, CUDA(0));
    dt_tensor *x = K(dt_randn(DT_SHAPE(7, 4), CPU)), *y = TI(CPU, DT_SHAPE(7), 0, 1, 2, 0, 1, 2, 1);
    dt_tensor *y0 = K(dt_to(y, CUDA(0)));
    /* one device */
    dt_tensor *out1 = K(dt_module_forward(b, K(dt_to(x, CUDA(0)))));
    ck_assert_int_eq(dt_backward(K(dt_cross_entropy(out1, y0, NULL, -100))), 0);
    /* two simulated GPUs, gathered on cuda:0 */
    dt_data_parallel *dp = dt_data_parallel_new(a, 2, (dt_device[]){CUDA(0), CUDA(1)}, CUDA(0));
    dt_tensor *out2 = K(dt_data_parallel_forward(dp, x));
    ck_assert_msg(out2 != NULL, "%s", dt_last_error());
    ck_assert(dt_device_equal(dt_device_of(out2), CUDA(0)));
    int64_t n;
    double *v1 = tu_values(out1, &n);
    tu_expect_values(out2, v1, n, 1e-5, __FILE__, __LINE__);
    free(v1);
    ck_assert_int_eq(dt_backward(K(dt_cross_entropy(out2, y0, NULL, -100))), 0);
    for (int i = 0; i < dt_module_num_parameters(a); i++) {
        dt_tensor *ga = dt_grad(dt_module_parameter(a, i, NULL)), *gb = dt_grad(dt_module_parameter(b, i, NULL));
        ck_assert(ga && gb && dt_device_equal(dt_device_of(ga), CUDA(0)));
        double *vb = tu_values(gb, &n);
        tu_expect_values(ga, vb, n, 1e-5, __FILE__, __LINE__);
        free(vb);
    }
    /* labels on the other GPU: a cuda:0 vs cuda:1 mismatch at the loss */
    dt_tensor *out3 = K(dt_data_parallel_forward(dp, x));
    ck_assert_ptr_null(dt_cross_entropy(out3, K(dt_to(y, CUDA(1))), NULL, -100));
    EXPECT_ERROR(DT_ERR_DEVICE, "cuda:0 and cuda:1", "argument target in method cross_entropy");
    /* the module must live on device_ids[0] */
    dt_module_to(a, CPU);
    ck_assert_ptr_null(dt_data_parallel_forward(dp, x));
    EXPECT_ERROR(DT_ERR_DEVICE, "module must have its parameters and buffers on device cuda:0 (device_ids[0]) but "
                                "found one of them on device: cpu");
    dt_data_parallel_free(dp);
    dt_module_free(a);
    dt_module_free(b);
}
END_TEST

START_TEST(test_view_at_offset_crosses_devices) {
    /* a row view of a device tensor copied to another GPU and back */
    dt_tensor *t = K(dt_arange(0, 12, 1, DT_F32, CUDA(0)));
    dt_tensor *m = K(dt_reshape(t, DT_SHAPE(3, 4))), *row = K(dt_select(m, 0, 2));
    EXPECT_VALUES(K(dt_to(row, CUDA(1))), 8, 9, 10, 11);
    dt_tensor *dst = K(dt_zeros(DT_SHAPE(3, 4), DT_F32, CUDA(1)));
    ck_assert_int_eq(dt_copy_(K(dt_select(dst, 0, 1)), row), 0);
    EXPECT_VALUES(dst, 0, 0, 0, 0, 8, 9, 10, 11, 0, 0, 0, 0);
}
END_TEST

Suite *make_train_suite(void) {
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_module_names_move_and_plain_field);
    tcase_add_test(tc, test_module_registration_errors);
    tcase_add_test(tc, test_layers);
    tcase_add_test(tc, test_loss_values_and_device_arguments);
    tcase_add_test(tc, test_sgd_values);
    tcase_add_test(tc, test_adam_values_and_lazy_state);
    tcase_add_test(tc, test_state_left_behind_when_model_moves);
    tcase_add_test(tc, test_checkpoint_roundtrip_and_resume);
    tcase_add_test(tc, test_load_state_dict_errors_change_nothing);
    tcase_add_test(tc, test_checkpoint_bad_files);
    tcase_add_test(tc, test_dataloader);
    tcase_add_test(tc, test_data_parallel_matches_one_device);
    tcase_add_test(tc, test_view_at_offset_crosses_devices);
    suite_add_tcase(s, tc);
    return s;
}
