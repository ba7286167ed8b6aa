/* Devices of libdtrt: parsing and printing names, choosing the backend that
 * serves cuda:N (simulated when asked for, else real CUDA when a GPU is
 * present), per-device memory accounting, and runtime initialisation.
 * Kernels and memory movement live elsewhere. */
#include "dt_impl.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>

/* THREAD SAFETY NOTES: g_cfg is written under g_lock only. What every op
 * reads (the simulated and real counts, whether the environment was bad) is
 * also published in g_published, an atomic snapshot, so the hot path takes no
 * lock. Announced-device flags and memory counters are atomics. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int loaded;         /* environment read */
    int sim_count;      /* simulated GPUs asked for (0: none) */
    int real_count;     /* GPUs the real backend reported */
    int frozen;         /* a cuda storage exists: the config may not change */
    int env_error;      /* DEVTRACE_SIM_CUDA was malformed */
    char env_value[64]; /* its text, for the error message */
} g_cfg;

/* (sim << 16) | (real << 8) | env_error, plus 1 << 24 once loaded. */
static atomic_int g_published;
static atomic_int g_announced[1 + DT_MAX_CUDA]; /* dtp_device_backend fired */
static _Atomic int64_t g_mem[1 + DT_MAX_CUDA];  /* live bytes per device */
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

static void runtime_init_once(void) { dtp_runtime_init(DTP_ABI_VERSION, "libdtrt", DT_VERSION); }

void dt__runtime_init(void) { pthread_once(&g_init_once, runtime_init_once); }

const char *dt_version(void) { return DT_VERSION; }

/* ---------------------------------------------------------------- names */

dt_device dt_cpu_device(void) { return (dt_device){DT_DEVICE_CPU, 0}; }
dt_device dt_cuda_device(int index) { return (dt_device){DT_DEVICE_CUDA, index}; }
int dt_device_equal(dt_device a, dt_device b) {
    return a.type == b.type && (a.type == DT_DEVICE_CPU || a.index == b.index);
}
struct dtp_device dt__pdev(dt_device d) {
    return (struct dtp_device){d.type, d.index};
}

const char *dt_device_str(dt_device d, char *buf, size_t size) {
    if (d.type == DT_DEVICE_CPU)
        snprintf(buf, size, "cpu");
    else if (d.type == DT_DEVICE_CUDA)
        snprintf(buf, size, "cuda:%d", d.index);
    else
        snprintf(buf, size, "device(type=%d)", d.type);
    return buf;
}

int dt_device_parse(const char *text, dt_device *out) {
    dt__runtime_init();
    if (!text) {
        dt__raise(DT_ERR_ARG, "device", "Expected a device string, got NULL");
        return -1;
    }
    if (strcmp(text, "cpu") == 0) {
        *out = dt_cpu_device();
        return 0;
    }
    if (strcmp(text, "cuda") == 0) {
        *out = dt_cuda_device(0);
        return 0;
    }
    if (strncmp(text, "cuda:", 5) == 0 && isdigit((unsigned char)text[5])) {
        char *end;
        long n = strtol(text + 5, &end, 10);
        if (*end == '\0' && n >= 0 && n < DT_MAX_CUDA) {
            *out = dt_cuda_device((int)n);
            return 0;
        }
    }
    dt__raise(DT_ERR_ARG, "device",
              "Expected one of cpu, cuda, cuda:N (0 <= N < %d) device type at start of device "
              "string: %s",
              DT_MAX_CUDA, text);
    return -1;
}

/* ---------------------------------------------------------------- configuration */

static void cfg_load_locked(void) {
    if (g_cfg.loaded) return;
    g_cfg.loaded = 1;
    const char *env = getenv("DEVTRACE_SIM_CUDA");
    if (env && *env) {
        char *end;
        long n = strtol(env, &end, 10);
        if (*end != '\0' || n < 0 || n > DT_MAX_CUDA) {
            g_cfg.env_error = 1;
            snprintf(g_cfg.env_value, sizeof g_cfg.env_value, "%s", env);
        } else {
            g_cfg.sim_count = (int)n;
        }
    }
    if (g_cfg.sim_count == 0 && dt__backend_cuda_ptr) g_cfg.real_count = dt__backend_cuda_ptr->device_count();
    if (g_cfg.real_count < 0) g_cfg.real_count = 0;
    if (g_cfg.real_count > DT_MAX_CUDA) g_cfg.real_count = DT_MAX_CUDA;
}

static void cfg_publish_locked(void) {
    atomic_store(&g_published, 1 << 24 | g_cfg.sim_count << 16 | g_cfg.real_count << 8 | g_cfg.env_error);
}

/* The config, loaded. Raises (once per call) when the environment was bad. */
static int cfg_get(int *sim, int *real) {
    int p = atomic_load(&g_published);
    if (!p) {
        dt__runtime_init();
        pthread_mutex_lock(&g_lock);
        cfg_load_locked();
        cfg_publish_locked();
        pthread_mutex_unlock(&g_lock);
        p = atomic_load(&g_published);
    }
    *sim = (p >> 16) & 0xff;
    *real = (p >> 8) & 0xff;
    if (p & 1) {
        dt__raise(DT_ERR_ARG, "DEVTRACE_SIM_CUDA",
                  "DEVTRACE_SIM_CUDA='%s' is not a number of simulated GPUs: set it to 1..%d, or "
                  "unset it to use real GPUs",
                  g_cfg.env_value, DT_MAX_CUDA);
        return -1;
    }
    return 0;
}

int dt_sim_cuda_enable(int n) {
    dt__runtime_init();
    if (n < 1 || n > DT_MAX_CUDA) {
        dt__raise(DT_ERR_ARG, "sim_cuda_enable", "number of simulated GPUs must be 1..%d, got %d", DT_MAX_CUDA, n);
        return -1;
    }
    pthread_mutex_lock(&g_lock);
    cfg_load_locked();
    int frozen = g_cfg.frozen, cur = g_cfg.sim_count ? g_cfg.sim_count : -g_cfg.real_count;
    if (!frozen || cur == n) {
        g_cfg.sim_count = n;
        g_cfg.env_error = 0;
        cfg_publish_locked();
    }
    pthread_mutex_unlock(&g_lock);
    if (frozen && cur != n) {
        dt__raise(DT_ERR_STATE, "sim_cuda_enable",
                  "cannot switch to %d simulated GPUs: cuda tensors already exist on the %s "
                  "backend; call dt_sim_cuda_enable() before the first cuda tensor is made",
                  n, cur > 0 ? "simulated" : "real CUDA");
        return -1;
    }
    return 0;
}

void dt__note_cuda_tensor(void) {
    pthread_mutex_lock(&g_lock);
    g_cfg.frozen = 1;
    pthread_mutex_unlock(&g_lock);
}

int dt_cuda_device_count(void) {
    int sim, real;
    if (cfg_get(&sim, &real) < 0) return 0;
    return sim ? sim : real;
}

int dt_cuda_is_available(void) { return dt_cuda_device_count() > 0; }

dt_device dt_default_device(void) { return dt_cuda_is_available() ? dt_cuda_device(0) : dt_cpu_device(); }

/* ---------------------------------------------------------------- backends */

static int dev_slot(dt_device d) { return d.type == DT_DEVICE_CPU ? 0 : 1 + d.index; }

/* The backend for d without raising; *why explains a NULL. */
static const struct dt_backend *backend_lookup(dt_device d, const char **why) {
    if (d.type == DT_DEVICE_CPU) return &dt__backend_cpu;
    if (d.type != DT_DEVICE_CUDA || d.index < 0 || d.index >= DT_MAX_CUDA) {
        *why = "unknown device";
        return NULL;
    }
    int sim, real;
    if (cfg_get(&sim, &real) < 0) {
        *why = NULL; /* already raised */
        return NULL;
    }
    if (sim) {
        if (d.index < sim) return &dt__backend_sim;
        *why = "sim";
        return NULL;
    }
    if (d.index < real) return dt__backend_cuda_ptr;
    *why = real ? "real" : "none";
    return NULL;
}

const struct dt_backend *dt__backend_for(dt_device d, const char *op) {
    const char *why = "unknown device";
    const struct dt_backend *b = backend_lookup(d, &why);
    if (!b) {
        if (!why) return NULL;
        char name[32];
        dt_device_str(d, name, sizeof name);
        int sim = 0, real = 0;
        cfg_get(&sim, &real);
        if (strcmp(why, "none") == 0)
            dt__raise(DT_ERR_DEVICE, op,
                      "cannot use %s: no CUDA GPU was found and DEVTRACE_SIM_CUDA is not set. HINT: "
                      "set DEVTRACE_SIM_CUDA=N to simulate N GPUs",
                      name);
        else if (strcmp(why, "unknown device") == 0)
            dt__raise(DT_ERR_DEVICE, op, "invalid device %s", name);
        else
            dt__raise(DT_ERR_DEVICE, op, "CUDA error: invalid device ordinal: %s does not exist (%d %s GPU%s)", name,
                      sim ? sim : real, sim ? "simulated" : "real", (sim ? sim : real) == 1 ? "" : "s");
        return NULL;
    }
    int slot = dev_slot(d);
    if (!atomic_load_explicit(&g_announced[slot], memory_order_relaxed) && !atomic_exchange(&g_announced[slot], 1))
        dtp_device_backend(dt__pdev(d), b->name);
    return b;
}

const char *dt_device_backend_name(dt_device d) {
    const char *why;
    const struct dt_backend *b = backend_lookup(d, &why);
    return b ? b->name : NULL;
}

void dt__memory_account(dt_device d, int64_t delta) { atomic_fetch_add(&g_mem[dev_slot(d)], delta); }

uint64_t dt_memory_allocated(dt_device d) {
    if (d.type != DT_DEVICE_CPU && (d.type != DT_DEVICE_CUDA || d.index < 0 || d.index >= DT_MAX_CUDA)) return 0;
    return (uint64_t)atomic_load(&g_mem[dev_slot(d)]);
}

int dt_synchronize(dt_device d) {
    const struct dt_backend *b = dt__backend_for(d, "synchronize");
    if (!b) return -1;
    int st = b->synchronize ? b->synchronize(d.index) : 0;
    if (st) {
        dt__raise((dt_error_kind)st, "synchronize", "%s", dt__backend_last_msg());
        return -1;
    }
    return 0;
}
