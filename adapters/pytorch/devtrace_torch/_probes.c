/* devtrace_torch._probes: the PyTorch adapter's side of the probe ABI
 * (include/devtrace/probe.h). The Python recorder decides what an event is;
 * this module turns it into dtp_* calls into the preloaded libdevtrace.so,
 * reading each tensor's metadata (shape, strides, dtype, device, bytes) with
 * the GIL held, and gives PyTorch tensors their identity: a process-unique
 * id per Python tensor object, kept in a table keyed by the object's address
 * and released by a weak reference's callback (which fires the freed probe).
 * It also holds the recorder's TorchFunctionMode entry (Mode): the calls the
 * recorder passes through, and plain ops and transfers, are finished here
 * without running Python (docs/recorder-cost.md).
 *
 * It keeps no chain, schema or report logic: those are the tracer's and the
 * viewer's. Stacks are the tracer's too: each call here asks it for Python
 * frames only (dtp_stack_policy), the interpreter's native frames being of
 * no use to the user. Built against CPython's limited API (3.10+), so one
 * binary serves every interpreter from 3.10 on. Never raises into the
 * traced program for a metadata read that fails: the event is recorded
 * with what could be read. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <devtrace/probe.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "mismatch.h"
#include "op_families.h"
#include "trace_schema.h"
#include "vocab.h"

#define MAX_DIMS 25 /* the tracer keeps at most this many dimensions */
#define MAX_ARGS 64 /* tensor arguments of one op kept for its record */

/* The probes, found in the preloaded tracer; NULL when there is none. */
static struct {
    void (*runtime_init)(uint32_t, const char *, const char *);
    void (*device_backend)(struct dtp_device, const char *);
    void (*tensor_created)(const struct dtp_tensor *, const struct dtp_origin *);
    void (*tensor_transferred)(const struct dtp_transfer *);
    void (*tensor_named)(uint64_t, const char *);
    void (*tensor_freed)(uint64_t);
    void (*op_begin)(const struct dtp_op *);
    void (*op_end)(uint64_t, const char *, int32_t, int32_t, const uint64_t *);
    void (*device_mismatch)(const struct dtp_op *, int32_t, int32_t, const char *);
    int32_t (*stack_policy)(int32_t);
    void (*producer_failed)(const char *);                                  /* optional */
    void (*source_fact)(const char *, int32_t, const char *, const char *); /* optional (ABI 3) */
    void (*tensor_role)(uint64_t, int32_t, uint64_t, const char *);         /* optional (ABI 4) */
} P;

static PyObject *g_tensor_type; /* torch.Tensor */
static PyObject *g_dtypes;      /* {torch.float32: DTP_DTYPE_F32, ...} */
static uint64_t g_next_id;      /* next tensor id; ids start high, away from libdtrt's */
static uint64_t g_next_seq;     /* next op sequence number, likewise */
static uint32_t g_seen_devices[64];
static int g_nseen_devices;

/* The op being recorded: its tensor arguments, kept for a mismatch. */
static struct {
    uint64_t seq;
    int n;
    struct dtp_arg args[MAX_ARGS];
    char names[MAX_ARGS][48];
} g_op;

#define POLICY_BEGIN() int32_t saved_policy_ = P.stack_policy ? P.stack_policy(DTP_STACKS_INTERPRETER) : 0
#define POLICY_END()                                                                                                   \
    if (P.stack_policy) P.stack_policy(saved_policy_)

/* ---------------------------------------------------------------- devices */

static struct dtp_device device_of_code(uint32_t code) {
    struct dtp_device d = {(int32_t)(code >> 16), (int32_t)(code & 0xffff)};
    return d;
}

/* "cpu", "cuda:1", "meta" -> the trace's device code (common/vocab.h); any other kind ("mps:0") is other:N. */
static uint32_t device_code_of_str(const char *s) {
    size_t n = strcspn(s, ":");
    uint32_t type = DTP_DEVICE_OTHER, index = 0;
#define TYPE_(name, num, text)                                                                                         \
    if (DTP_DEVICE_##name != DTP_DEVICE_OTHER && strlen(text) == n && !strncmp(s, text, n)) type = DTP_DEVICE_##name;
    DT_DEVICE_TYPES(TYPE_)
#undef TYPE_
    if (s[n] == ':') index = (uint32_t)strtoul(s + n + 1, NULL, 10) & 0xffff;
    return DT_DEVICE_CODE(type, index);
}

/* The device of tensor t, as a code; cpu when it cannot be read. A device
 * first seen is announced to the tracer (dtp_device_backend). */
static int g_sim; /* simulated GPUs: a tensor's device may be in its entry */
static struct ident *entry_of(PyObject *t);

static uint32_t sim_code(PyObject *t);

static PyObject *s_device, *s_type, *s_index, *s_shape, *s_stride, *s_storage_offset, *s_dtype, *s_is_view, *s_base;
static PyObject *s_is_cuda, *s_is_cpu, *s_get_device;

/* The device of t from its flags (is_cuda, is_cpu: shared bools, no object
 * made, no device name formatted as t.device.type does); UINT32_MAX for a
 * kind the flags do not tell (meta, mps, ...). */
static uint32_t flag_device_code(PyObject *t) {
    uint32_t code = UINT32_MAX;
    PyObject *cuda = PyObject_GetAttr(t, s_is_cuda);
    if (cuda == Py_True) {
        PyObject *index = PyObject_CallMethodObjArgs(t, s_get_device, NULL);
        long i = index ? PyLong_AsLong(index) : -1;
        if (i >= 0) code = (uint32_t)DTP_DEVICE_CUDA << 16 | ((uint32_t)i & 0xffff);
        Py_XDECREF(index);
    } else if (cuda == Py_False) {
        PyObject *cpu = PyObject_GetAttr(t, s_is_cpu);
        if (cpu == Py_True) code = (uint32_t)DTP_DEVICE_CPU << 16;
        Py_XDECREF(cpu);
    }
    Py_XDECREF(cuda);
    if (PyErr_Occurred()) PyErr_Clear();
    return code;
}

static uint32_t device_code(PyObject *t) {
    uint32_t code = sim_code(t), flags = code ? code : flag_device_code(t);
    if (flags != UINT32_MAX) code = flags;
    PyObject *dev = flags == UINT32_MAX ? PyObject_GetAttr(t, s_device) : NULL;
    if (flags == UINT32_MAX) code = 0;
    if (dev) {
        PyObject *type = PyObject_GetAttr(dev, s_type), *index = PyObject_GetAttr(dev, s_index);
        const char *u = type ? PyUnicode_AsUTF8AndSize(type, NULL) : NULL;
        if (u) code = device_code_of_str(u);
        if (index && index != Py_None) code |= (uint32_t)PyLong_AsLong(index) & 0xffff;
        Py_XDECREF(type);
        Py_XDECREF(index);
        Py_DECREF(dev);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    int seen = 0;
    for (int i = 0; i < g_nseen_devices && !seen; i++) seen = g_seen_devices[i] == code;
    if (!seen && g_nseen_devices < 64) {
        g_seen_devices[g_nseen_devices++] = code;
        if (P.device_backend) {
            uint32_t type = DT_DEVICE_CODE_TYPE(code);
            const char *name = dt_device_type_text(type);
            P.device_backend(device_of_code(code), g_sim && type == DTP_DEVICE_CUDA ? "cuda-sim"
                                                   : name                           ? name
                                                                                    : "other");
        }
    }
    return code;
}

static PyObject *device_str(uint32_t code) {
    uint32_t type = DT_DEVICE_CODE_TYPE(code);
    const char *name = dt_device_type_text(type);
    if (type == DTP_DEVICE_CPU || type == DTP_DEVICE_META) return PyUnicode_FromString(name);
    return PyUnicode_FromFormat("%s:%u", name ? name : "device", DT_DEVICE_CODE_INDEX(code));
}

/* ---------------------------------------------------------------- identity */

/* The tensors given an id, in a table keyed by the tensor object's address
 * (open addressing, linear probing, deletion by backward shift), and their
 * weak references in a second one keyed by the reference's address, so that
 * the one callback shared by all finds its tensor: a new tensor costs its
 * weak reference and nothing else in Python objects, a lookup none. Both
 * are touched only with the GIL held, which serialises them. */
struct ident {
    uintptr_t addr; /* the tensor object's address; 0: an empty slot */
    uint64_t id;    /* its id */
    PyObject *wr;   /* its weak reference (a reference), NULL when it could not have one */
    PyObject *name; /* the name it was given last (a reference), or NULL */
    uint32_t code;  /* its simulated device's code, 0 for its own */
    uint8_t role;   /* the role said for it last (enum dtp_tensor_role), 0 for none */
};
struct weak {
    uintptr_t wr;   /* the weak reference's address; 0: an empty slot */
    uintptr_t addr; /* its tensor's */
};
static struct ident *g_idents; /* [g_cap] */
static struct weak *g_weaks;   /* [g_cap] */
static size_t g_cap, g_nidents, g_nweaks;

static size_t slot_of(uintptr_t key) { return (size_t)((key >> 4) * 0x9E3779B97F4A7C15ull) & (g_cap - 1); }

static struct ident *ident_find(uintptr_t addr) {
    if (!g_cap) return NULL;
    for (size_t h = slot_of(addr);; h = (h + 1) & (g_cap - 1)) {
        if (g_idents[h].addr == addr) return &g_idents[h];
        if (!g_idents[h].addr) return NULL;
    }
}

static struct weak *weak_find(uintptr_t wr) {
    if (!g_cap) return NULL;
    for (size_t h = slot_of(wr);; h = (h + 1) & (g_cap - 1)) {
        if (g_weaks[h].wr == wr) return &g_weaks[h];
        if (!g_weaks[h].wr) return NULL;
    }
}

/* Empties slot i of a table of n-byte slots keyed by their first word, moving
 * later entries of its run back (no tombstones). */
static void slot_delete(void *table, size_t size, size_t i) {
    unsigned char *t = table;
#define KEY(j) (*(uintptr_t *)(void *)(t + (j)*size))
    for (size_t j = (i + 1) & (g_cap - 1); KEY(j); j = (j + 1) & (g_cap - 1)) {
        size_t home = slot_of(KEY(j));
        /* j's entry may fill i when its home is not in (i, j], cyclically */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            memcpy(t + i * size, t + j * size, size);
            i = j;
        }
    }
    memset(t + i * size, 0, size);
#undef KEY
}

/* Room for one more entry in each table: grown (doubled) at half full. */
static int idents_reserve(void) {
    if (g_cap && (g_nidents + 1) * 2 <= g_cap && (g_nweaks + 1) * 2 <= g_cap) return 1;
    size_t cap = g_cap ? g_cap * 2 : 4096;
    struct ident *idents = PyMem_Calloc(cap, sizeof *idents);
    struct weak *weaks = PyMem_Calloc(cap, sizeof *weaks);
    if (!idents || !weaks) {
        PyMem_Free(idents);
        PyMem_Free(weaks);
        return 0;
    }
    struct ident *old_i = g_idents;
    struct weak *old_w = g_weaks;
    size_t old_cap = g_cap;
    g_idents = idents, g_weaks = weaks, g_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old_i[i].addr) {
            size_t h = slot_of(old_i[i].addr);
            while (g_idents[h].addr) h = (h + 1) & (g_cap - 1);
            g_idents[h] = old_i[i];
        }
        if (old_w[i].wr) {
            size_t h = slot_of(old_w[i].wr);
            while (g_weaks[h].wr) h = (h + 1) & (g_cap - 1);
            g_weaks[h] = old_w[i];
        }
    }
    PyMem_Free(old_i);
    PyMem_Free(old_w);
    return 1;
}

/* The entry of t, or NULL when it has no id yet. */
static struct ident *entry_of(PyObject *t) { return ident_find((uintptr_t)t); }

/* The simulated device a tensor carries, as a code; 0 when none. */
static uint32_t sim_code(PyObject *t) {
    if (!g_sim) return 0;
    struct ident *e = entry_of(t);
    return e ? e->code : 0;
}

/* The id of t, or 0 when it has none yet. */
static uint64_t id_of(PyObject *t) {
    struct ident *e = entry_of(t);
    return e ? e->id : 0;
}

/* The weak references' one callback: a tensor object is going away. */
static PyObject *on_freed(PyObject *self, PyObject *wr) {
    (void)self;
    struct weak *w = weak_find((uintptr_t)wr);
    if (!w) Py_RETURN_NONE;
    struct ident *e = ident_find(w->addr);
    slot_delete(g_weaks, sizeof *g_weaks, (size_t)(w - g_weaks));
    g_nweaks--;
    if (!e || e->wr != wr) Py_RETURN_NONE; /* its tensor's entry went (a new one at the address) */
    uint64_t id = e->id;
    PyObject *name = e->name, *ref = e->wr;
    slot_delete(g_idents, sizeof *g_idents, (size_t)(e - g_idents));
    g_nidents--;
    Py_XDECREF(name);
    Py_XDECREF(ref);            /* the weakref machinery holds its own while the callback runs */
    if (id && P.tensor_freed) { /* where a Python object goes says nothing: no stack */
        int32_t saved = P.stack_policy ? P.stack_policy(DTP_STACKS_NONE) : 0;
        P.tensor_freed(id);
        if (P.stack_policy) P.stack_policy(saved);
    }
    Py_RETURN_NONE;
}
static PyMethodDef on_freed_def = {"_on_freed", on_freed, METH_O, NULL};
static PyObject *g_on_freed; /* the callback, made once */

/* Gives t a new id (and its simulated device code), remembered until the object goes. */
static uint64_t id_new(PyObject *t, uint32_t code) {
    uint64_t id = g_next_id++;
    if (!g_on_freed) g_on_freed = PyCFunction_New(&on_freed_def, NULL);
    if (!g_on_freed || !idents_reserve()) { /* no memory: the tensor goes unremembered, its id said once */
        PyErr_Clear();
        return id;
    }
    struct ident *e = entry_of(t);
    if (e) { /* an object at a reused address whose free was not seen: the new one replaces it */
        struct weak *w = e->wr ? weak_find((uintptr_t)e->wr) : NULL;
        if (w) {
            slot_delete(g_weaks, sizeof *g_weaks, (size_t)(w - g_weaks));
            g_nweaks--;
        }
        Py_CLEAR(e->name);
        Py_CLEAR(e->wr);
    } else {
        size_t h = slot_of((uintptr_t)t);
        while (g_idents[h].addr) h = (h + 1) & (g_cap - 1);
        e = &g_idents[h];
        e->addr = (uintptr_t)t;
        g_nidents++;
    }
    e->id = id, e->code = code, e->name = NULL, e->role = 0;
    e->wr = PyWeakref_NewRef(t, g_on_freed);
    if (!e->wr) {
        PyErr_Clear(); /* no weak references: its free is not seen, its id still holds */
    } else {
        size_t h = slot_of((uintptr_t)e->wr);
        while (g_weaks[h].wr) h = (h + 1) & (g_cap - 1);
        g_weaks[h] = (struct weak){(uintptr_t)e->wr, (uintptr_t)t};
        g_nweaks++;
    }
    return id;
}

/* ---------------------------------------------------------------- metadata */

/* Fills ints[0..n) from a tuple-like attribute or method result; n or -1. */
static int ints_of(PyObject *seq, int64_t *out, int max) {
    if (!seq || !PyTuple_Check(seq)) return -1;
    Py_ssize_t n = PyTuple_Size(seq);
    if (n > max) n = max;
    for (Py_ssize_t i = 0; i < n; i++) out[i] = PyLong_AsLongLong(PyTuple_GetItem(seq, i));
    return (int)n;
}

struct meta {
    int64_t shape[MAX_DIMS], strides[MAX_DIMS], offset;
    int ndim, dtype;
    uint32_t device;
    uint64_t nbytes;
};

/* Reads t's metadata; a view's storage offset too (anything else starts its storage). */
static void meta_of(PyObject *t, struct meta *m, int view) {
    static const uint8_t elem[] = {4, 8, 1, 8, 2, 2, 4, 1}; /* bytes, by enum dtp_dtype */
    memset(m, 0, sizeof *m);
    PyObject *shape = PyObject_GetAttr(t, s_shape);
    m->ndim = ints_of(shape, m->shape, MAX_DIMS);
    Py_XDECREF(shape);
    if (m->ndim < 0) m->ndim = 0;
    PyObject *strides = PyObject_CallMethodObjArgs(t, s_stride, NULL);
    if (ints_of(strides, m->strides, MAX_DIMS) != m->ndim) memset(m->strides, 0, sizeof m->strides);
    Py_XDECREF(strides);
    if (view) {
        PyObject *off = PyObject_CallMethodObjArgs(t, s_storage_offset, NULL);
        m->offset = off ? PyLong_AsLongLong(off) : 0;
        Py_XDECREF(off);
    }
    PyObject *dtype = PyObject_GetAttr(t, s_dtype);
    PyObject *code = dtype ? PyDict_GetItem(g_dtypes, dtype) : NULL; /* borrowed */
    m->dtype = code ? (int)PyLong_AsLong(code) : DTP_DTYPE_OTHER;
    Py_XDECREF(dtype);
    uint64_t numel = 1;
    for (int i = 0; i < m->ndim; i++) numel *= (uint64_t)(m->shape[i] > 0 ? m->shape[i] : 0);
    if (m->dtype >= 0 && m->dtype < (int)sizeof elem) {
        m->nbytes = numel * elem[m->dtype];
    } else { /* another element type: its size asked */
        PyObject *es = PyObject_CallMethod(t, "element_size", NULL);
        m->nbytes = es ? numel * (uint64_t)PyLong_AsLongLong(es) : 0;
        Py_XDECREF(es);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    m->device = device_code(t);
}

/* g_tensor_type is torch._C._TensorBase, a C type every tensor's type derives
 * from: a subtype check, not torch.Tensor's metaclass __instancecheck__. */
static int is_tensor(PyObject *o) { return PyObject_TypeCheck(o, (PyTypeObject *)g_tensor_type); }

/* Records t as a new tensor with the given origin; returns its id. */
static uint64_t record_created(PyObject *t, int kind, const char *what, uint64_t src, uint64_t op, const char *name,
                               const char *detail, uint32_t code) {
    uint64_t id = id_new(t, code);
    struct meta m;
    meta_of(t, &m, kind == DTP_ORIGIN_VIEW);
    struct dtp_tensor d = {.id = id,
                           .storage_id = kind == DTP_ORIGIN_VIEW && src ? src : id,
                           .dtype = m.dtype,
                           .ndim = m.ndim,
                           .shape = m.shape,
                           .strides = m.strides,
                           .storage_offset = m.offset,
                           .device = device_of_code(m.device),
                           .nbytes = m.nbytes,
                           .name = name};
    struct dtp_origin o = {.kind = kind, .what = what ? what : "?", .src_id = src, .op_seq = op, .detail = detail};
    if (P.tensor_created) P.tensor_created(&d, &o);
    return id;
}

/* ---------------------------------------------------------------- entry points */

/* init(version, tensor_type, dtypes, id_base) -> True when a tracer receives the probes. */
static PyObject *py_init(PyObject *self, PyObject *args) {
    (void)self;
    const char *version;
    PyObject *ttype, *dtypes;
    unsigned long long base;
    if (!PyArg_ParseTuple(args, "sOOK", &version, &ttype, &dtypes, &base)) return NULL;
    if (!PyType_Check(ttype)) {
        PyErr_SetString(PyExc_TypeError, "init: tensor_type must be a type (torch._C._TensorBase)");
        return NULL;
    }
#define SYM(f, n) (*(void **)&P.f = dlsym(RTLD_DEFAULT, n))
    int ok = SYM(runtime_init, "dtp_runtime_init") && SYM(device_backend, "dtp_device_backend") &&
             SYM(tensor_created, "dtp_tensor_created") && SYM(tensor_transferred, "dtp_tensor_transferred") &&
             SYM(tensor_named, "dtp_tensor_named") && SYM(tensor_freed, "dtp_tensor_freed") &&
             SYM(op_begin, "dtp_op_begin") && SYM(op_end, "dtp_op_end") &&
             SYM(device_mismatch, "dtp_device_mismatch") && SYM(stack_policy, "dtp_stack_policy");
    if (ok) *(void **)&P.producer_failed = dlsym(RTLD_DEFAULT, "dtp_producer_failed");
    if (ok) *(void **)&P.source_fact = dlsym(RTLD_DEFAULT, "dtp_source_fact");
    if (ok) *(void **)&P.tensor_role = dlsym(RTLD_DEFAULT, "dtp_tensor_role");
#undef SYM
#define STR(v, text) (v || (v = PyUnicode_InternFromString(text)))
    ok = ok && STR(s_device, "device") && STR(s_type, "type") && STR(s_index, "index") && STR(s_shape, "shape") &&
         STR(s_stride, "stride") && STR(s_storage_offset, "storage_offset") && STR(s_dtype, "dtype") &&
         STR(s_is_view, "_is_view") && STR(s_base, "_base") && STR(s_is_cuda, "is_cuda") && STR(s_is_cpu, "is_cpu") &&
         STR(s_get_device, "get_device");
#undef STR
    if (!ok) {
        memset(&P, 0, sizeof P);
        Py_RETURN_FALSE;
    }
    Py_INCREF(ttype);
    Py_INCREF(dtypes);
    Py_XDECREF(g_tensor_type);
    Py_XDECREF(g_dtypes);
    g_tensor_type = ttype;
    g_dtypes = dtypes;
    /* ids and op numbers from 1, as libdtrt's; from base when libdtrt is in
     * the process too, whose own count from 1 */
    g_next_id = g_next_seq = dlsym(RTLD_DEFAULT, "dt_zeros") ? base : 1;
    POLICY_BEGIN();
    P.runtime_init(DTP_ABI_VERSION, "pytorch", version);
    POLICY_END();
    Py_RETURN_TRUE;
}

/* simulate(on): tensors may carry a simulated device (see sim.py). */
static PyObject *py_simulate(PyObject *self, PyObject *on) {
    (void)self;
    g_sim = PyObject_IsTrue(on) == 1;
    Py_RETURN_NONE;
}

/* tensor_id(t) -> its id, or 0 when it has none. */
static PyObject *py_tensor_id(PyObject *self, PyObject *t) {
    (void)self;
    return PyLong_FromUnsignedLongLong(id_of(t));
}

/* created(t, kind, what, src_id, op_seq, name=None, detail=None, device=0) -> id: t is new
 * (device: its simulated device's code, 0 for its own). */
static PyObject *py_created(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *t;
    int kind;
    const char *what, *name = NULL, *detail = NULL;
    unsigned long long src, op;
    unsigned int code = 0;
    if (!PyArg_ParseTuple(args, "OisKK|zzI", &t, &kind, &what, &src, &op, &name, &detail, &code)) return NULL;
    POLICY_BEGIN();
    uint64_t id = record_created(t, kind, what, src, op, name, detail, code);
    POLICY_END();
    return PyLong_FromUnsignedLongLong(id);
}

/* An argument's name into a 48-byte slot, cut to fit (snprintf's cost, per
 * argument of every op, without its formatting). */
static void copy_name(char dst[48], const char *src) {
    size_t n = strlen(src);
    if (n > 47) n = 47;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* The id of t, which is recorded first (as seen first in `where`, or as an
 * argument of op `of`) when it has none. */
static uint64_t id_or_seen_in(PyObject *t, const char *where, const char *of) {
    uint64_t id = id_of(t);
    if (id) return id;
    char text[160];
    if (of) snprintf(text, sizeof text, "seen first as an argument of %s", of);
    return record_created(t, DTP_ORIGIN_OTHER, of ? text : where, 0, 0, NULL, NULL, 0);
}
static uint64_t id_or_seen(PyObject *t, const char *where) { return id_or_seen_in(t, where, NULL); }

static void add_arg(const char *name, PyObject *t, const char *where) {
    if (g_op.n >= MAX_ARGS) return;
    int i = g_op.n++;
    copy_name(g_op.names[i], name);
    g_op.args[i].name = g_op.names[i];
    g_op.args[i].id = id_or_seen_in(t, NULL, where);
    g_op.args[i].device = device_of_code(device_code(t));
}

/* Tensors in v (a tensor, or a list or tuple of them) as arguments named name. */
/* A tensor argument, or the tensors of a list or tuple, nested up to 4 deep
 * ("pairs[0][1]"): an op that fails on them is judged by their devices. */
static void add_nested(const char *name, PyObject *v, const char *where, int depth) {
    if (is_tensor(v)) {
        add_arg(name, v, where);
    } else if ((PyList_Check(v) || PyTuple_Check(v)) && depth < 4) {
        Py_ssize_t n = PySequence_Size(v);
        for (Py_ssize_t k = 0; k < n && g_op.n < MAX_ARGS; k++) {
            PyObject *e = PySequence_GetItem(v, k);
            if (e && (is_tensor(e) || PyList_Check(e) || PyTuple_Check(e))) {
                char sub[48];
                snprintf(sub, sizeof sub, "%s[%zd]", name, k);
                add_nested(sub, e, where, depth + 1);
            }
            Py_XDECREF(e);
        }
    }
}

static void add_value(const char *name, PyObject *v, const char *where) {
    add_nested(name, v, where, 0);
    if (PyErr_Occurred()) PyErr_Clear();
}

/* Opens op name, with the tensors among its arguments (names: the
 * positional names, a tuple, or anything else for none); its seq. */
static uint64_t op_begin_c(const char *name, PyObject *names, PyObject *args, PyObject *kwargs) {
    POLICY_BEGIN();
    g_op.seq = g_next_seq++;
    g_op.n = 0;
    const char *where = name; /* the op a tensor not seen before is an argument of */
    Py_ssize_t n = args && PyTuple_Check(args) ? PyTuple_Size(args) : 0;
    Py_ssize_t nn = PyTuple_Check(names) ? PyTuple_Size(names) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GetItem(args, i);
        if (!v || !(is_tensor(v) || PyList_Check(v) || PyTuple_Check(v))) continue; /* no name to make */
        char argname[48];
        const char *pn = i < nn ? PyUnicode_AsUTF8AndSize(PyTuple_GetItem(names, i), NULL) : NULL;
        if (pn)
            copy_name(argname, pn);
        else
            snprintf(argname, sizeof argname, "arg%zd", i);
        add_value(argname, v, where);
    }
    if (kwargs && PyDict_Check(kwargs)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            const char *kn = PyUnicode_Check(k) ? PyUnicode_AsUTF8AndSize(k, NULL) : NULL;
            if (kn) add_value(kn, v, where);
        }
    }
    if (PyErr_Occurred()) PyErr_Clear();
    struct dtp_op op = {.seq = g_op.seq, .name = name, .nargs = g_op.n, .args = g_op.args};
    P.op_begin(&op);
    POLICY_END();
    return g_op.seq;
}

/* op_begin(name, argnames, args, kwargs) -> seq: an op starts, with the
 * tensors among its arguments (argnames: the positional names, or None). */
static PyObject *py_op_begin(PyObject *self, PyObject *a) {
    (void)self;
    const char *name;
    PyObject *names, *args, *kwargs;
    if (!PyArg_ParseTuple(a, "sOOO", &name, &names, &args, &kwargs)) return NULL;
    return PyLong_FromUnsignedLongLong(op_begin_c(name, names, args, kwargs));
}

/* op_args(seq) -> [(name, device), ...] of the op being recorded, or []. */
static PyObject *py_op_args(PyObject *self, PyObject *seqobj) {
    (void)self;
    uint64_t seq = (uint64_t)PyLong_AsUnsignedLongLong(seqobj);
    if (PyErr_Occurred()) return NULL;
    PyObject *l = PyList_New(0);
    for (int i = 0; l && seq == g_op.seq && i < g_op.n; i++) {
        PyObject *d = device_str((uint32_t)g_op.args[i].device.type << 16 | (uint32_t)g_op.args[i].device.index);
        PyObject *e = d ? Py_BuildValue("(sO)", g_op.names[i], d) : NULL;
        if (e) PyList_Append(l, e);
        Py_XDECREF(e);
        Py_XDECREF(d);
    }
    return l;
}

/* output(t, kind, what, src_id, seq, device=0) -> (id, new): t is a result of op seq.
 * A tensor without an id is recorded as made by it (kind and what say how:
 * an op output, a view of src_id, a copy of src_id on another device), on
 * the simulated device whose code is given, else on its own. */
static PyObject *py_output(PyObject *self, PyObject *a) {
    (void)self;
    PyObject *t;
    int kind;
    const char *what;
    unsigned long long src, seq;
    unsigned int code = 0;
    if (!PyArg_ParseTuple(a, "OisKK|I", &t, &kind, &what, &src, &seq, &code)) return NULL;
    uint64_t id = id_of(t);
    if (id) return Py_BuildValue("(KO)", (unsigned long long)id, Py_False);
    POLICY_BEGIN();
    id = record_created(t, kind, what, src, seq, NULL, NULL, code);
    POLICY_END();
    return Py_BuildValue("(KO)", (unsigned long long)id, Py_True);
}

/* op_done(seq, name, out, src, device=0) -> out: op seq returned out (a
 * tensor, or a tuple or list of them); each result without an id is recorded
 * as made by it (a view of src's base when it is a view of another tensor
 * than src, else its output), on the simulated device given, and the op
 * ends. Results that already had an id are the tensors it wrote. */
static void op_done_c(uint64_t seq, const char *name, PyObject *out, PyObject *src, uint32_t code) {
    POLICY_BEGIN();
    uint64_t ids[MAX_ARGS];
    int n = 0;
    int seq_like = PyTuple_Check(out) || PyList_Check(out);
    Py_ssize_t m = seq_like ? PySequence_Size(out) : 1;
    /* every result is recorded (a split into 99 columns: each is on the op's device); the first
     * MAX_ARGS are the op's listed outputs */
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *t = seq_like ? PySequence_GetItem(out, i) : (Py_INCREF(out), out);
        if (t && is_tensor(t)) {
            uint64_t id = id_of(t);
            if (!id) {
                int kind = DTP_ORIGIN_OP_OUTPUT;
                uint64_t from = 0;
                if (src != Py_None && t != src) {
                    PyObject *v = PyObject_CallMethodObjArgs(t, s_is_view, NULL);
                    if (v == Py_True) {
                        PyObject *base = PyObject_GetAttr(t, s_base);
                        PyObject *sbase = base && base != Py_None && base != src ? PyObject_GetAttr(src, s_base) : NULL;
                        kind = DTP_ORIGIN_VIEW;
                        /* a view of the tensor it was taken from (a module's attribute, "self.mask[:T]") when
                         * that is itself a view of the same base; else of its base */
                        if (base && base != Py_None && (base == src || sbase == base)) from = id_of(src);
                        if (!from) from = base && base != Py_None ? id_of(base) : 0;
                        if (!from) from = id_of(src);
                        Py_XDECREF(sbase);
                        Py_XDECREF(base);
                    }
                    Py_XDECREF(v);
                    if (PyErr_Occurred()) PyErr_Clear();
                }
                id = record_created(t, kind, name, from, seq, NULL, NULL, code);
            }
            if (n < MAX_ARGS) ids[n++] = id;
        }
        Py_XDECREF(t);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    P.op_end(seq, name, 0, n, ids);
    POLICY_END();
}

static PyObject *py_op_done(PyObject *self, PyObject *a) {
    (void)self;
    unsigned long long seq;
    const char *name;
    PyObject *out, *src;
    unsigned int code = 0;
    if (!PyArg_ParseTuple(a, "KsOO|I", &seq, &name, &out, &src, &code)) return NULL;
    op_done_c(seq, name, out, src, code);
    Py_INCREF(out);
    return out;
}

/* op_end(seq, name, status, output_ids) */
static PyObject *py_op_end(PyObject *self, PyObject *a) {
    (void)self;
    unsigned long long seq;
    const char *name;
    int status;
    PyObject *outs;
    if (!PyArg_ParseTuple(a, "KsiO", &seq, &name, &status, &outs)) return NULL;
    uint64_t ids[MAX_ARGS];
    int n = 0;
    Py_ssize_t m = PyTuple_Check(outs) ? PyTuple_Size(outs) : 0;
    for (Py_ssize_t i = 0; i < m && n < MAX_ARGS; i++) ids[n++] = PyLong_AsUnsignedLongLong(PyTuple_GetItem(outs, i));
    if (PyErr_Occurred()) PyErr_Clear();
    POLICY_BEGIN();
    P.op_end(seq, name, status, n, ids);
    POLICY_END();
    Py_RETURN_NONE;
}

/* transfer(src_t, dst_t_or_None, kind, via): data of src_t went to dst_t
 * (or, for a move in place, src_t itself now lives on to_device). */
static void transfer_c(PyObject *src, PyObject *dst, int kind, const char *via, const char *from) {
    POLICY_BEGIN();
    struct dtp_transfer x = {.kind = kind, .via = via};
    x.src_id = id_or_seen(src, "seen first when moved");
    uint32_t sdev = device_code(src);
    if (kind == DTP_TRANSFER_MOVE) {
        x.dst_id = x.src_id;
        x.to = device_of_code(sdev);
        x.from = device_of_code(from ? device_code_of_str(from) : sdev);
    } else {
        x.from = device_of_code(sdev);
        x.dst_id = dst != Py_None ? id_or_seen(dst, "seen first when copied into") : 0;
        x.to = dst != Py_None ? device_of_code(device_code(dst)) : device_of_code(0);
    }
    struct meta m;
    meta_of(src, &m, 0);
    x.bytes = m.nbytes;
    P.tensor_transferred(&x);
    POLICY_END();
}

static PyObject *py_transfer(PyObject *self, PyObject *a) {
    (void)self;
    PyObject *src, *dst;
    int kind;
    const char *via, *from = NULL;
    if (!PyArg_ParseTuple(a, "OOis|z", &src, &dst, &kind, &via, &from)) return NULL;
    transfer_c(src, dst, kind, via, from);
    Py_RETURN_NONE;
}

/* Transfer op seq (src.to(...), .cuda(), .cpu(), .type()) returned out, and
 * ends: a result that is not src is made by it, a copy of src on another
 * device (and the transfer recorded) or, on src's own, its output; as
 * recorder.py's record() does for a transfer, without simulated GPUs. */
static void transfer_done_c(uint64_t seq, const char *name, PyObject *out, PyObject *src, PyObject *kwargs) {
    POLICY_BEGIN();
    char via[80];
    PyObject *nb = kwargs ? PyDict_GetItemString(kwargs, "non_blocking") : NULL; /* borrowed */
    snprintf(via, sizeof via, nb && PyObject_IsTrue(nb) == 1 ? "%s(non_blocking)" : "%s", name);
    uint64_t ids[MAX_ARGS];
    int n = 0;
    int seq_like = PyTuple_Check(out) || PyList_Check(out);
    Py_ssize_t m = seq_like ? PySequence_Size(out) : 1;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *t = seq_like ? PySequence_GetItem(out, i) : (Py_INCREF(out), out);
        if (t && is_tensor(t)) {
            uint64_t id = id_of(t);
            if (!id && t != src) {
                int moved = device_code(t) != device_code(src);
                id = record_created(t, moved ? DTP_ORIGIN_TRANSFER : DTP_ORIGIN_OP_OUTPUT, name, id_of(src), seq, NULL,
                                    NULL, 0);
                if (moved) transfer_c(src, t, DTP_TRANSFER_TO, via, NULL);
            } else if (!id) {
                id = record_created(t, DTP_ORIGIN_OP_OUTPUT, name, 0, seq, NULL, NULL, 0);
            }
            if (n < MAX_ARGS) ids[n++] = id;
        }
        Py_XDECREF(t);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    P.op_end(seq, name, 0, n, ids);
    POLICY_END();
}

/* named(t, name): t is known by name now (a name it already has is not said again). */
static PyObject *py_named(PyObject *self, PyObject *a) {
    (void)self;
    PyObject *t, *nameobj;
    if (!PyArg_ParseTuple(a, "OU", &t, &nameobj)) return NULL;
    const char *name = PyUnicode_AsUTF8AndSize(nameobj, NULL);
    if (!name) return NULL;
    POLICY_BEGIN();
    uint64_t id = id_or_seen(t, "seen first when named");
    struct ident *e = entry_of(t);
    PyObject *old = e ? e->name : NULL;
    if (!old || PyUnicode_Compare(old, nameobj) != 0) {
        if (e) {
            Py_INCREF(nameobj);
            e->name = nameobj;
            Py_XDECREF(old);
        }
        P.tensor_named(id, name);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    POLICY_END();
    return PyLong_FromUnsignedLongLong(id);
}

/* name_of(t) -> the name it was given last, or None. */
static PyObject *py_name_of(PyObject *self, PyObject *t) {
    (void)self;
    struct ident *e = entry_of(t);
    PyObject *n = e && e->name ? e->name : Py_None;
    Py_INCREF(n);
    return n;
}

/* sim(t) -> the code of t's simulated device, 0 when it has none. */
static PyObject *py_sim(PyObject *self, PyObject *t) {
    (void)self;
    return PyLong_FromUnsignedLong(sim_code(t));
}

/* set_sim(t, code, what="seen first on a simulated device"): t is on that
 * simulated device now (0: on its own); a tensor without an id gets one. */
static PyObject *py_set_sim(PyObject *self, PyObject *a) {
    (void)self;
    PyObject *t;
    unsigned int code;
    const char *what = "seen first on a simulated device";
    if (!PyArg_ParseTuple(a, "OI|s", &t, &code, &what)) return NULL;
    struct ident *e = entry_of(t);
    if (!e) {
        POLICY_BEGIN();
        record_created(t, DTP_ORIGIN_OTHER, what, 0, 0, NULL, NULL, code);
        POLICY_END();
    } else {
        e->code = code;
    }
    if (PyErr_Occurred()) PyErr_Clear();
    Py_RETURN_NONE;
}

/* mismatch(seq, name, first, other, message): the op being recorded failed
 * its device check; first and other index its tensor arguments. */
static PyObject *py_mismatch(PyObject *self, PyObject *a) {
    (void)self;
    unsigned long long seq;
    const char *name, *message;
    int first, other;
    if (!PyArg_ParseTuple(a, "Ksiis", &seq, &name, &first, &other, &message)) return NULL;
    POLICY_BEGIN();
    struct dtp_op op = {.seq = seq, .name = name, .nargs = seq == g_op.seq ? g_op.n : 0, .args = g_op.args};
    P.device_mismatch(&op, first, other, message);
    POLICY_END();
    Py_RETURN_NONE;
}

/* parse_mismatch(message) -> (odd_device, peers_device, argument) or None:
 * the tracer's own reading of PyTorch's device-mismatch texts. */
/* The recorder's own failure: tracing stops with the tracer's one warning,
 * and the trace says why; False when the tracer has no such probe (the
 * caller warns itself). */
static PyObject *py_producer_failed(PyObject *self, PyObject *why) {
    (void)self;
    const char *text = PyUnicode_Check(why) ? PyUnicode_AsUTF8AndSize(why, NULL) : NULL;
    if (!text) return NULL;
    if (!P.producer_failed) Py_RETURN_FALSE;
    P.producer_failed(text);
    Py_RETURN_TRUE;
}

/* source_fact(file, line, key, value) -> bool: one fact about the program's
 * source (dtp_source_fact); False, and nothing recorded anywhere, under a
 * tracer without that probe (older than ABI 3) or none. */
static PyObject *py_source_fact(PyObject *self, PyObject *a) {
    (void)self;
    const char *file, *key, *value;
    int line;
    if (!PyArg_ParseTuple(a, "siss", &file, &line, &key, &value)) return NULL;
    if (!P.source_fact) Py_RETURN_FALSE;
    P.source_fact(file, line, key, value);
    Py_RETURN_TRUE;
}

/* role(t, role, of, key) -> bool: t has role (ROLE_<NAME>) with respect to tensor of (or None), said once per
 * tensor and role (dtp_tensor_role); False, and nothing recorded, under a tracer without the probe. */
static PyObject *py_role(PyObject *self, PyObject *a) {
    (void)self;
    PyObject *t, *of;
    int role;
    const char *key;
    if (!PyArg_ParseTuple(a, "OiOs", &t, &role, &of, &key)) return NULL;
    if (!P.tensor_role) Py_RETURN_FALSE;
    POLICY_BEGIN();
    uint64_t id = id_or_seen(t, "seen first by its role");
    uint64_t of_id = of == Py_None ? 0 : id_or_seen(of, "seen first as a role's tensor");
    struct ident *e = entry_of(t);
    if (!e || e->role != role) {
        if (e) e->role = (uint8_t)role;
        P.tensor_role(id, role, of_id, key);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    POLICY_END();
    Py_RETURN_TRUE;
}

static PyObject *py_parse_mismatch(PyObject *self, PyObject *msg) {
    (void)self;
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(msg, &len);
    if (!s) return NULL;
    struct dt_mismatch m;
    if (!dt_parse_mismatch(s, (size_t)len, &m)) Py_RETURN_NONE;
    return Py_BuildValue("(sss)", m.a, m.b, m.arg);
}

/* ---------------------------------------------------------------- the mode's entry */

/* The recorder's counters, read by the mode's entry on every call: the
 * Python Recorder derives from this type, so its quiet, light and thread
 * are these fields, and the entry reads them without a lookup. */
typedef struct {
    PyObject_HEAD long long quiet; /* > 0: calls pass through unrecorded (a recorded op, a wrapped call runs) */
    long long light;               /* > 0: factories only (a DataLoader's iteration runs) */
    unsigned long thread;          /* the thread whose calls are recorded, as threading.get_ident() */
} State;

static PyMemberDef state_members[] = {
    {"quiet", T_LONGLONG, offsetof(State, quiet), 0, "> 0: calls pass through unrecorded"},
    {"light", T_LONGLONG, offsetof(State, light), 0, "> 0: only factories are recorded"},
    {"thread", T_ULONG, offsetof(State, thread), 0, "the thread whose calls are recorded"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot state_slots[] = {
    {Py_tp_doc, "The recorder's counters (quiet, light, thread), shared with the mode's C entry."},
    {Py_tp_members, state_members},
    {0, NULL},
};

static PyType_Spec state_spec = {"devtrace_torch._probes.State", sizeof(State), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, state_slots};
static PyTypeObject *g_state_type;
static PyObject *g_empty; /* () */

/* How recorder.py classifies a torch function, defined here and exported as CALL_<NAME> (recorder.py's _PASS,
 * _OP, ...): the entry finishes a pass-through and, without simulated GPUs, an op or a tensor's transfer itself;
 * the other classes go to recorder.py's slow handler. */
#define CALL_CLASSES(X) X(PASS) X(OP) X(FACTORY) X(TRANSFER) X(COPY) X(READ) X(SIMPROP)
enum call_class {
#define CALL_ENUM_(name) KIND_##name,
    CALL_CLASSES(CALL_ENUM_)
#undef CALL_ENUM_
};

/* The TorchFunctionMode's __torch_function__, in C: a pass-through costs a
 * dictionary lookup and the call; an op is recorded (op_begin, the call,
 * op_done) without a Python frame, tuple or string of its own. Everything
 * else (a first call of a function, transfers, factories, reads, simulated
 * GPUs) goes to recorder.py's slow handler. The mode lives as long as the
 * program (self_args holds it). */
typedef struct {
    PyObject_HEAD State *rec;        /* the recorder (a reference) */
    PyObject *slow;                  /* slow(func, types, args, kwargs): what the entry does not finish */
    PyObject *raised;                /* raised(seq, func, exc, args, kwargs): a recorded op raised exc */
    PyObject *set_fn;                /* torch._C._set_torch_function_mode, set directly (1.x); else NULL */
    PyObject *none_args, *self_args; /* (None,) and (self,): set_fn's arguments, made once */
    PyObject *kinds;                 /* {func: (kind, name, argnames)}, filled by classified() */
} Mode;

static int mode_init(PyObject *self, PyObject *args, PyObject *kw) {
    Mode *m = (Mode *)self;
    PyObject *rec, *slow, *raised, *set_fn = Py_None;
    (void)kw;
    if (!PyArg_ParseTuple(args, "O!OO|O", g_state_type, &rec, &slow, &raised, &set_fn)) return -1;
    if (!PyCallable_Check(slow) || !PyCallable_Check(raised) || (set_fn != Py_None && !PyCallable_Check(set_fn))) {
        PyErr_SetString(PyExc_TypeError, "Mode(recorder, slow, raised, set_fn=None): slow, raised and set_fn "
                                         "must be callable");
        return -1;
    }
    Py_INCREF(rec);
    Py_INCREF(slow);
    Py_INCREF(raised);
    Py_CLEAR(m->rec);
    Py_CLEAR(m->slow);
    Py_CLEAR(m->raised);
    Py_CLEAR(m->set_fn);
    m->rec = (State *)rec, m->slow = slow, m->raised = raised;
    if (set_fn != Py_None) {
        Py_INCREF(set_fn);
        m->set_fn = set_fn;
    }
    if (!m->none_args && !(m->none_args = PyTuple_Pack(1, Py_None))) return -1;
    if (!m->self_args && !(m->self_args = PyTuple_Pack(1, self))) return -1;
    if (!m->kinds && !(m->kinds = PyDict_New())) return -1;
    return 0;
}

static void mode_dealloc(PyObject *self) {
    Mode *m = (Mode *)self;
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(m->rec);
    Py_CLEAR(m->slow);
    Py_CLEAR(m->raised);
    Py_CLEAR(m->set_fn);
    Py_CLEAR(m->none_args);
    Py_CLEAR(m->self_args);
    Py_CLEAR(m->kinds);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyObject *mode_slow(Mode *m, PyObject *func, PyObject *types, PyObject *args, PyObject *kwargs) {
    return PyObject_CallFunctionObjArgs(m->slow, func, types, args, kwargs ? kwargs : Py_None, NULL);
}

/* Op seq raised (the error is set): recorder.py records a device mismatch
 * from it; the program gets the error as it was. */
static void mode_raised(Mode *m, uint64_t seq, PyObject *func, PyObject *args, PyObject *kwargs) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    if (ev && tb) PyException_SetTraceback(ev, tb);
    PyObject *res = PyObject_CallFunction(m->raised, "KOOOO", (unsigned long long)seq, func, ev ? ev : Py_None, args,
                                          kwargs ? kwargs : Py_None);
    if (!res) PyErr_Clear();
    Py_XDECREF(res);
    PyErr_Restore(et, ev, tb);
}

static PyObject *mode_handle_c(Mode *m, PyObject *func, PyObject *types, PyObject *args, PyObject *kwargs) {
    if (!m->rec) {
        PyErr_SetString(PyExc_RuntimeError, "devtrace_torch._probes.Mode was not initialised");
        return NULL;
    }
    PyObject *kw = kwargs && PyDict_Check(kwargs) && PyDict_Size(kwargs) > 0 ? kwargs : NULL;
    if (!args || !PyTuple_Check(args)) return mode_slow(m, func, types, args, kwargs);
    PyObject *k = PyDict_GetItemWithError(m->kinds, func); /* borrowed */
    if (!k) {
        if (PyErr_Occurred()) PyErr_Clear(); /* an unhashable func: the slow handler's */
        return mode_slow(m, func, types, args, kwargs);
    }
    long kind = PyLong_AsLong(PyTuple_GetItem(k, 0));
    State *r = m->rec;
    if (kind == KIND_PASS || r->quiet || (r->light && kind != KIND_FACTORY) || PyThread_get_thread_ident() != r->thread)
        return PyObject_Call(func, args, kw);
    PyObject *first = PyTuple_Size(args) > 0 ? PyTuple_GetItem(args, 0) : NULL;
    PyObject *src = first && is_tensor(first) ? first : Py_None;
    if ((kind != KIND_OP && (kind != KIND_TRANSFER || src == Py_None)) || g_sim || !P.op_begin)
        return mode_slow(m, func, types, args, kwargs);
    Py_INCREF(k); /* its name is the op's while it runs */
    const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(k, 1), NULL);
    if (!name) {
        PyErr_Clear();
        Py_DECREF(k);
        return mode_slow(m, func, types, args, kwargs);
    }
    uint64_t seq = op_begin_c(name, PyTuple_GetItem(k, 2), args, kw);
    r->quiet++; /* what the op itself calls is the op's */
    PyObject *out = PyObject_Call(func, args, kw);
    r->quiet--;
    if (!out)
        mode_raised(m, seq, func, args, kwargs);
    else if (kind == KIND_TRANSFER)
        transfer_done_c(seq, name, out, src, kw);
    else
        op_done_c(seq, name, out, src, 0);
    Py_DECREF(k);
    return out;
}

/* (func, types, args=(), kwargs=None) of a __torch_function__ call. */
static int mode_args(PyObject *const *a, Py_ssize_t n, PyObject **func, PyObject **types, PyObject **args,
                     PyObject **kwargs) {
    if (n < 2 || n > 4) {
        PyErr_SetString(PyExc_TypeError, "__torch_function__(func, types, args=(), kwargs=None)");
        return 0;
    }
    *func = a[0], *types = a[1], *args = n > 2 ? a[2] : g_empty, *kwargs = n > 3 && a[3] != Py_None ? a[3] : NULL;
    return 1;
}

/* __torch_function__: set directly as torch 1.x's mode, the mode is off while
 * the call runs (as torch's own stack mode does) and on again after it. */
static PyObject *mode_torch_function(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    Mode *m = (Mode *)self;
    PyObject *func, *types, *args, *kwargs;
    if (!mode_args(a, n, &func, &types, &args, &kwargs)) return NULL;
    if (!m->set_fn) return mode_handle_c(m, func, types, args, kwargs);
    PyObject *r = PyObject_Call(m->set_fn, m->none_args, NULL);
    if (!r) return NULL;
    Py_DECREF(r);
    PyObject *out = mode_handle_c(m, func, types, args, kwargs);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    r = PyObject_Call(m->set_fn, m->self_args, NULL);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
    PyErr_Restore(et, ev, tb);
    return out;
}

/* handle(func, types, args=(), kwargs=None): the entry, the mode left as it is
 * (torch 2.x's stack took it off for the call; torch 1.x's Python helpers did). */
static PyObject *mode_handle(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    PyObject *func, *types, *args, *kwargs;
    if (!mode_args(a, n, &func, &types, &args, &kwargs)) return NULL;
    return mode_handle_c((Mode *)self, func, types, args, kwargs);
}

/* classified(func, kind, name, argnames): how recorder.py classified func. */
static PyObject *mode_classified(PyObject *self, PyObject *a) {
    Mode *m = (Mode *)self;
    PyObject *func, *name, *names;
    int kind;
    if (!PyArg_ParseTuple(a, "OiUO!", &func, &kind, &name, &PyTuple_Type, &names)) return NULL;
    if (!m->kinds) {
        PyErr_SetString(PyExc_RuntimeError, "devtrace_torch._probes.Mode was not initialised");
        return NULL;
    }
    PyObject *v = Py_BuildValue("(iOO)", kind, name, names);
    int rc = v ? PyDict_SetItem(m->kinds, func, v) : -1;
    Py_XDECREF(v);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef mode_methods[] = {
    {"__torch_function__", (PyCFunction)(void (*)(void))mode_torch_function, METH_FASTCALL,
     "__torch_function__(func, types, args=(), kwargs=None): the recorder's entry"},
    {"handle", (PyCFunction)(void (*)(void))mode_handle, METH_FASTCALL,
     "handle(func, types, args=(), kwargs=None): the entry, without setting the mode"},
    {"classified", mode_classified, METH_VARARGS, "classified(func, kind, name, argnames)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot mode_slots[] = {
    {Py_tp_doc, "Mode(recorder, slow, raised, set_fn=None): the recorder's __torch_function__ in C."},
    {Py_tp_init, mode_init},
    {Py_tp_dealloc, mode_dealloc},
    {Py_tp_methods, mode_methods},
    {0, NULL},
};

static PyType_Spec mode_spec = {"devtrace_torch._probes.Mode", sizeof(Mode), 0,
                                Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, mode_slots};

static PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS, "init(version, tensor_type, dtypes, id_base) -> bool"},
    {"tensor_id", py_tensor_id, METH_O, "tensor_id(t) -> id or 0"},
    {"simulate", py_simulate, METH_O, "simulate(on): devices may be simulated"},
    {"sim", py_sim, METH_O, "sim(t) -> simulated device code or 0"},
    {"set_sim", py_set_sim, METH_VARARGS, "set_sim(t, code, what=...)"},
    {"name_of", py_name_of, METH_O, "name_of(t) -> name or None"},
    {"created", py_created, METH_VARARGS, "created(t, kind, what, src_id, op_seq, name=None, detail=None, device=0)"},
    {"op_begin", py_op_begin, METH_VARARGS, "op_begin(name, argnames, args, kwargs) -> seq"},
    {"op_args", py_op_args, METH_O, "op_args(seq) -> [(name, device)]"},
    {"output", py_output, METH_VARARGS, "output(t, kind, what, src_id, seq, device=0) -> (id, new)"},
    {"op_end", py_op_end, METH_VARARGS, "op_end(seq, name, status, output_ids)"},
    {"op_done", py_op_done, METH_VARARGS, "op_done(seq, name, out, src, device=0) -> out"},
    {"transfer", py_transfer, METH_VARARGS, "transfer(src, dst, kind, via, from_device=None)"},
    {"named", py_named, METH_VARARGS, "named(t, name) -> id"},
    {"mismatch", py_mismatch, METH_VARARGS, "mismatch(seq, name, first, other, message)"},
    {"parse_mismatch", py_parse_mismatch, METH_O, "parse_mismatch(message) -> (odd, peers, arg) or None"},
    {"producer_failed", py_producer_failed, METH_O, "producer_failed(why) -> bool: tracing stops, the trace says why"},
    {"source_fact", py_source_fact, METH_VARARGS,
     "source_fact(file, line, key, value) -> bool: False without the probe"},
    {"role", py_role, METH_VARARGS, "role(t, role, of, key) -> bool: False without the probe"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "_probes",
                                    "devtrace's probe ABI for the PyTorch adapter",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

/* The module, with the vocabulary as its constants, so that Python never retypes a number or a name: the keys
 * of the source facts (common/trace_schema.h's DT_FACT_<NAME>) as FACT_<NAME>; common/vocab.h's device types,
 * origins, transfer kinds, error kinds, tensor roles and event kinds as DEVICE_, ORIGIN_, TRANSFER_, ERROR_,
 * ROLE_ and EV_<NAME>; common/op_families.h's families as OPS_<NAME> (tuples of op names); the call classes
 * of the mode's entry as CALL_<NAME>. */
PyMODINIT_FUNC PyInit__probes(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *state = PyType_FromSpec(&state_spec), *mode = state ? PyType_FromSpec(&mode_spec) : NULL;
    if (!mode || PyModule_AddObject(m, "State", state) < 0) {
        Py_XDECREF(state);
        Py_XDECREF(mode);
        Py_DECREF(m);
        return NULL;
    }
    g_state_type = (PyTypeObject *)state;
    if (!g_empty && !(g_empty = PyTuple_New(0))) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(state); /* the module's reference went to the module; the entry keeps its own */
    if (PyModule_AddObject(m, "Mode", mode) < 0) {
        Py_DECREF(mode);
        Py_DECREF(m);
        return NULL;
    }
#define FACT_KEY(n)                                                                                                    \
    if (PyModule_AddStringConstant(m, "FACT_" #n, DT_FACT_##n) < 0) {                                                  \
        Py_DECREF(m);                                                                                                  \
        return NULL;                                                                                                   \
    }
    DT_FACT_KEYS(FACT_KEY)
#undef FACT_KEY
#define INT_CONST(prefix, name, value)                                                                                 \
    if (PyModule_AddIntConstant(m, prefix #name, value) < 0) {                                                         \
        Py_DECREF(m);                                                                                                  \
        return NULL;                                                                                                   \
    }
#define DEVICE_(name, n, text)   INT_CONST("DEVICE_", name, n)
#define ORIGIN_(name, n, text)   INT_CONST("ORIGIN_", name, n)
#define TRANSFER_(name, n, text) INT_CONST("TRANSFER_", name, n)
#define ERROR_(name, n, text)    INT_CONST("ERROR_", name, n)
#define ROLE_(name, n, text)     INT_CONST("ROLE_", name, n)
#define EV_(name, n, text)       INT_CONST("EV_", name, n)
#define CALL_(name)              INT_CONST("CALL_", name, KIND_##name)
    DT_DEVICE_TYPES(DEVICE_)
    DT_ORIGINS(ORIGIN_)
    DT_TRANSFER_KINDS(TRANSFER_)
    DT_ERROR_KINDS(ERROR_)
    DT_TENSOR_ROLES(ROLE_)
    DT_EVENT_KINDS(EV_)
    DT_RECORD_KINDS(EV_)
    CALL_CLASSES(CALL_)
#undef DEVICE_
#undef ORIGIN_
#undef TRANSFER_
#undef ERROR_
#undef ROLE_
#undef EV_
#undef CALL_
#undef INT_CONST
#define OP_NAME_(n) n,
#define OPS_(fam, bit, rows)                                                                                           \
    {                                                                                                                  \
        static const char *const names[] = {rows(OP_NAME_) NULL};                                                      \
        PyObject *tuple = PyTuple_New((Py_ssize_t)(sizeof names / sizeof names[0] - 1));                               \
        for (Py_ssize_t i = 0; tuple && names[i]; i++) {                                                               \
            PyObject *s = PyUnicode_FromString(names[i]);                                                              \
            if (!s)                                                                                                    \
                Py_CLEAR(tuple);                                                                                       \
            else                                                                                                       \
                PyTuple_SetItem(tuple, i, s);                                                                          \
        }                                                                                                              \
        if (!tuple || PyModule_AddObject(m, "OPS_" #fam, tuple) < 0) {                                                 \
            Py_XDECREF(tuple);                                                                                         \
            Py_DECREF(m);                                                                                              \
            return NULL;                                                                                               \
        }                                                                                                              \
    }
    DT_OP_FAMILIES(OPS_)
#undef OPS_
#undef OP_NAME_
    return m;
}
