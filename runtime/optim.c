/* Optimizers of libdtrt: SGD (momentum, weight decay), Adam and AdamW, with
 * PyTorch's update rules (the single-tensor, non-fused path). State tensors
 * are made lazily at the first step, on the parameter's device at that
 * moment, and are never moved afterwards: a model moved after that step, or
 * after a state dict was loaded, leaves its optimizer state behind, and the
 * next step fails with PyTorch's device-mismatch error in the op that mixes
 * them. */
#include "nn_impl.h"

#include <math.h>
#include <string.h>

enum opt_kind { OPT_SGD, OPT_ADAM, OPT_ADAMW };

#define NSTATE 3
static const char *const state_keys[][NSTATE] = {
    [OPT_SGD] = {"momentum_buffer", NULL, NULL},
    [OPT_ADAM] = {"step", "exp_avg", "exp_avg_sq"},
    [OPT_ADAMW] = {"step", "exp_avg", "exp_avg_sq"},
};

struct param_state {
    dt_tensor *p;         /* the parameter, retained */
    char *name;           /* its name when the optimizer was made */
    dt_tensor *s[NSTATE]; /* state, per state_keys; NULL until made */
};

struct dt_optimizer {
    enum opt_kind kind;
    double lr, momentum, weight_decay, beta1, beta2, eps;
    int n;
    struct param_state *ps;
};

static const char *const kind_names[] = {"SGD", "Adam", "AdamW"};

static dt_optimizer *make(enum opt_kind kind, dt_module *m, double lr) {
    dt__runtime_init();
    const char *what = kind_names[kind];
    if (!(lr >= 0)) {
        dt__raise(DT_ERR_ARG, what, "Invalid learning rate: %g", lr);
        return NULL;
    }
    int n = dt_module_num_parameters(m);
    if (n == 0) {
        dt__raise(DT_ERR_ARG, what, "optimizer got an empty parameter list");
        return NULL;
    }
    dt_optimizer *o = calloc(1, sizeof *o);
    struct param_state *ps = calloc((size_t)n, sizeof *ps);
    if (!o || !ps) {
        free(o);
        free(ps);
        dt__raise(DT_ERR_MEMORY, what, "out of host memory for an optimizer");
        return NULL;
    }
    o->kind = kind;
    o->lr = lr;
    o->n = n;
    o->ps = ps;
    for (int i = 0; i < n; i++) {
        const char *name;
        ps[i].p = dt_retain(dt_module_parameter(m, i, &name));
        char fallback[32];
        snprintf(fallback, sizeof fallback, "param%d", i);
        ps[i].name = strdup(name ? name : fallback);
        if (!ps[i].name) {
            dt_optimizer_free(o);
            dt__raise(DT_ERR_MEMORY, what, "out of host memory for an optimizer");
            return NULL;
        }
    }
    return o;
}

dt_optimizer *dt_sgd(dt_module *m, double lr, double momentum, double weight_decay) {
    if (!(momentum >= 0) || !(weight_decay >= 0)) {
        dt__raise(DT_ERR_ARG, "SGD", "Invalid %s value: %g", momentum >= 0 ? "weight_decay" : "momentum",
                  momentum >= 0 ? weight_decay : momentum);
        return NULL;
    }
    dt_optimizer *o = make(OPT_SGD, m, lr);
    if (o) o->momentum = momentum, o->weight_decay = weight_decay;
    return o;
}

static dt_optimizer *adam(enum opt_kind kind, dt_module *m, double lr, double b1, double b2, double eps, double wd) {
    if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1) || !(eps >= 0) || !(wd >= 0)) {
        dt__raise(DT_ERR_ARG, kind_names[kind],
                  "Invalid %s: betas (%g, %g) must be in [0, 1), eps %g and "
                  "weight_decay %g non-negative",
                  kind_names[kind], b1, b2, eps, wd);
        return NULL;
    }
    dt_optimizer *o = make(kind, m, lr);
    if (o) o->beta1 = b1, o->beta2 = b2, o->eps = eps, o->weight_decay = wd;
    return o;
}

dt_optimizer *dt_adam(dt_module *m, double lr, double b1, double b2, double eps, double wd) {
    return adam(OPT_ADAM, m, lr, b1, b2, eps, wd);
}
dt_optimizer *dt_adamw(dt_module *m, double lr, double b1, double b2, double eps, double wd) {
    return adam(OPT_ADAMW, m, lr, b1, b2, eps, wd);
}

void dt_optimizer_free(dt_optimizer *o) {
    if (!o) return;
    for (int i = 0; i < o->n; i++) {
        dt_free(o->ps[i].p);
        for (int k = 0; k < NSTATE; k++) dt_free(o->ps[i].s[k]);
        free(o->ps[i].name);
    }
    free(o->ps);
    free(o);
}

double dt_optimizer_lr(const dt_optimizer *o) { return o->lr; }
void dt_optimizer_set_lr(dt_optimizer *o, double lr) { o->lr = lr; }

void dt_optimizer_zero_grad(dt_optimizer *o) {
    struct dt_opctx c;
    if (dt__op_begin(&c, "optimizer.zero_grad", 0, NULL, NULL, DT_CHECK_NONE) < 0) return;
    for (int i = 0; i < o->n; i++) dt_zero_grad(o->ps[i].p);
    dt__op_end(&c, 0, 0, NULL);
}

/* State tensor t of s's parameter: its role as a fact (dtp_tensor_role: the optimizer state of that
 * parameter's tensor, under key), which is what a reader decides on, and its name for people,
 * "optimizer.state.<param>.<key>". */
static void name_state(dt_tensor *t, const struct param_state *s, const char *key) {
    dtp_tensor_role(t->id, DTP_ROLE_OPTIMIZER_STATE, s->p->id, key);
    size_t len = strlen(s->name) + strlen(key) + 20;
    char *name = malloc(len);
    if (!name) return;
    snprintf(name, len, "optimizer.state.%s.%s", s->name, key);
    dt_set_name(t, name);
    free(name);
}

/* Keeps t (NULL: its making failed) as state k of s, named; 0 or -1. */
static int lazy(struct param_state *s, int k, const char *key, dt_tensor *t) {
    if (!t) return -1;
    s->s[k] = t;
    name_state(t, s, key);
    return 0;
}

#define T(e) DT_T(ar, e)

static int sgd_step(const dt_optimizer *o, struct param_state *s, struct dt_arena *ar) {
    dt_tensor *p = s->p, *d = p->grad;
    if (o->weight_decay) d = T(dt_add(d, T(dt_mul_scalar(p, o->weight_decay))));
    if (o->momentum) {
        if (!s->s[0]) {
            if (lazy(s, 0, "momentum_buffer", dt_clone(d)) < 0) goto fail;
        } else if (dt_mul_scalar_(s->s[0], o->momentum) < 0 || dt_add_(s->s[0], d) < 0)
            goto fail;
        d = s->s[0];
    }
    return dt_add_scaled_(p, d, -o->lr);
fail:
    return -1;
}

static int adam_step(const dt_optimizer *o, struct param_state *s, struct dt_arena *ar) {
    dt_tensor *p = s->p, *g = p->grad;
    if (!s->s[0]) {
        /* step is a cpu scalar, as PyTorch keeps it (not capturable) */
        if (lazy(s, 0, "step", dt_zeros(DT_SCALAR, DT_F32, dt_cpu_device())) < 0 ||
            lazy(s, 1, "exp_avg", dt_zeros_like(p)) < 0 || lazy(s, 2, "exp_avg_sq", dt_zeros_like(p)) < 0)
            goto fail;
    }
    dt_tensor *m = s->s[1], *v = s->s[2];
    if (dt_add_scalar_(s->s[0], 1) < 0) goto fail;
    double step = dt_item(s->s[0]);
    if (o->kind == OPT_ADAMW) {
        if (o->weight_decay && dt_mul_scalar_(p, 1 - o->lr * o->weight_decay) < 0) goto fail;
    } else if (o->weight_decay)
        g = T(dt_add(g, T(dt_mul_scalar(p, o->weight_decay))));
    if (dt_mul_scalar_(m, o->beta1) < 0 || dt_add_scaled_(m, g, 1 - o->beta1) < 0) goto fail;
    if (dt_mul_scalar_(v, o->beta2) < 0 || dt_add_scaled_(v, T(dt_mul(g, g)), 1 - o->beta2) < 0) goto fail;
    double bc1 = 1 - pow(o->beta1, step), bc2 = 1 - pow(o->beta2, step);
    dt_tensor *denom = T(dt_add_scalar(T(dt_div_scalar(T(dt_sqrt(v)), sqrt(bc2))), o->eps));
    return dt_add_scaled_(p, T(dt_div(m, denom)), -o->lr / bc1);
fail:
    return -1;
}
#undef T

int dt_optimizer_step(dt_optimizer *o) {
    struct dt_opctx c;
    if (dt__op_begin(&c, "optimizer.step", 0, NULL, NULL, DT_CHECK_NONE) < 0) return -1;
    int prev = dt_set_grad_enabled(0), rc = 0;
    for (int i = 0; i < o->n && rc == 0; i++) {
        struct param_state *s = &o->ps[i];
        if (!s->p->grad) continue; /* no gradient reached it */
        struct dt_arena arena = {0};
        rc = o->kind == OPT_SGD ? sgd_step(o, s, &arena) : adam_step(o, s, &arena);
        dt__arena_free(&arena);
    }
    dt_set_grad_enabled(prev);
    dt__op_end(&c, rc ? (int)dt_last_error_kind() : 0, 0, NULL);
    return rc;
}

/* ---------------------------------------------------------------- state dicts */

static const char *const hyper_names[] = {"lr", "momentum", "weight_decay", "beta1", "beta2", "eps"};
static double *hyper(dt_optimizer *o, int i) {
    double *v[] = {&o->lr, &o->momentum, &o->weight_decay, &o->beta1, &o->beta2, &o->eps};
    return v[i];
}

dt_state_dict *dt_optimizer_state_dict(const dt_optimizer *o) {
    dt_state_dict *sd = dt_state_dict_new();
    if (!sd) return NULL;
    char key[96];
    for (int i = 0; i < o->n; i++)
        for (int k = 0; k < NSTATE; k++) {
            if (!o->ps[i].s[k]) continue;
            snprintf(key, sizeof key, "state.%d.%s", i, state_keys[o->kind][k]);
            if (dt_state_dict_set_tensor(sd, key, o->ps[i].s[k]) < 0) goto fail;
        }
    for (int h = 0; h < 6; h++) {
        snprintf(key, sizeof key, "param_groups.0.%s", hyper_names[h]);
        if (dt_state_dict_set_number(sd, key, *hyper((dt_optimizer *)o, h)) < 0) goto fail;
    }
    return sd;
fail:
    dt_state_dict_free(sd);
    return NULL;
}

int dt_optimizer_load_state_dict(dt_optimizer *o, const dt_state_dict *sd) {
    dt__runtime_init();
    const char *what = "load_state_dict";
    /* every key must be known and every tensor fit its parameter */
    for (int j = 0; j < dt_state_dict_size(sd); j++) {
        const char *key = dt_state_dict_key(sd, j);
        if (!strncmp(key, "param_groups.0.", 15)) continue;
        int idx = -1, pos = 0;
        if (sscanf(key, "state.%d.%n", &idx, &pos) < 1 || pos == 0 || idx < 0 || idx >= o->n) {
            dt__raise(DT_ERR_ARG, what,
                      "%s state dict key \"%s\" does not match this optimizer's %d parameters (loaded state dict "
                      "contains a parameter group that doesn't match the size of optimizer's group)",
                      kind_names[o->kind], key, o->n);
            return -1;
        }
        int k = 0;
        while (k < NSTATE && (!state_keys[o->kind][k] || strcmp(state_keys[o->kind][k], key + pos))) k++;
        dt_tensor *t = dt_state_dict_tensor(sd, key), *p = o->ps[idx].p;
        int scalar = !strcmp(key + pos, "step");
        if (k == NSTATE || !t ||
            (!scalar && (t->ndim != p->ndim || memcmp(t->shape, p->shape, sizeof(int64_t) * (size_t)p->ndim)))) {
            char a[160], b[160];
            dt__raise(DT_ERR_ARG, what, "%s state dict entry \"%s\" %s (parameter %s has shape %s)",
                      kind_names[o->kind], key,
                      k == NSTATE ? "is not a state of this optimizer"
                      : !t        ? "is a number, not a tensor"
                                  : (dt__shape_str(t->ndim, t->shape, a, sizeof a), "has the wrong shape"),
                      o->ps[idx].name, dt__shape_str(p->ndim, p->shape, b, sizeof b));
            return -1;
        }
    }
    /* build the new state aside; swap it in only when all of it exists */
    dt_tensor **fresh = calloc((size_t)o->n * NSTATE, sizeof *fresh);
    if (!fresh) {
        dt__raise(DT_ERR_MEMORY, what, "out of host memory");
        return -1;
    }
    char key[96];
    int prev = dt_set_grad_enabled(0), rc = 0;
    for (int i = 0; i < o->n && rc == 0; i++)
        for (int k = 0; k < NSTATE && rc == 0; k++) {
            if (!state_keys[o->kind][k]) continue;
            snprintf(key, sizeof key, "state.%d.%s", i, state_keys[o->kind][k]);
            dt_tensor *t = dt_state_dict_tensor(sd, key);
            if (!t) continue;
            /* PyTorch casts each state to its parameter's device now (step stays
             * put), and copies it: the optimizer never shares the dict's memory */
            dt_device to = k == 0 && o->kind != OPT_SGD ? t->storage->device : o->ps[i].p->storage->device;
            fresh[i * NSTATE + k] = dt_device_equal(to, t->storage->device) ? dt_clone(t) : dt_to(t, to);
            if (!fresh[i * NSTATE + k]) rc = -1;
        }
    dt_set_grad_enabled(prev);
    if (rc == 0)
        for (int i = 0; i < o->n; i++)
            for (int k = 0; k < NSTATE; k++) {
                dt_free(o->ps[i].s[k]);
                o->ps[i].s[k] = fresh[i * NSTATE + k];
                if (o->ps[i].s[k]) name_state(o->ps[i].s[k], &o->ps[i], state_keys[o->kind][k]);
            }
    else
        for (int i = 0; i < o->n * NSTATE; i++) dt_free(fresh[i]);
    free(fresh);
    if (rc == 0)
        for (int h = 0; h < 6; h++) {
            double v;
            snprintf(key, sizeof key, "param_groups.0.%s", hyper_names[h]);
            if (dt_state_dict_number(sd, key, &v) == 0) *hyper(o, h) = v;
        }
    return rc;
}
