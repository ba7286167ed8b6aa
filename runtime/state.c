/* State dicts and checkpoints of libdtrt: an ordered key -> tensor / number
 * map, a module's state dict and its loading, and the checkpoint file format
 * (docs/checkpoint-format.md): magic, version, entries, and a checksum over
 * everything, so that a wrong, truncated, corrupt or newer file is refused
 * before anything is created. */
#include "nn_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- state dicts */

struct sd_entry {
    char *key;
    dt_tensor *t; /* retained, or NULL for a number */
    double num;
};

struct dt_state_dict {
    struct sd_entry *e;
    int n, cap;
};

dt_state_dict *dt_state_dict_new(void) {
    dt_state_dict *sd = calloc(1, sizeof *sd);
    if (!sd) dt__raise(DT_ERR_MEMORY, "state_dict", "out of host memory for a state dict");
    return sd;
}

void dt_state_dict_free(dt_state_dict *sd) {
    if (!sd) return;
    for (int i = 0; i < sd->n; i++) {
        free(sd->e[i].key);
        dt_free(sd->e[i].t);
    }
    free(sd->e);
    free(sd);
}

static struct sd_entry *find(const dt_state_dict *sd, const char *key) {
    for (int i = 0; i < sd->n; i++)
        if (!strcmp(sd->e[i].key, key)) return &sd->e[i];
    return NULL;
}

static int put(dt_state_dict *sd, const char *key, dt_tensor *t, double num) {
    if (!key || !*key) {
        dt__raise(DT_ERR_ARG, "state_dict", "state dict keys must be non-empty");
        return -1;
    }
    struct sd_entry *e = find(sd, key);
    if (e) {
        dt_free(e->t);
        e->t = dt_retain(t);
        e->num = num;
        return 0;
    }
    if (sd->n == sd->cap) {
        int cap = sd->cap ? sd->cap * 2 : 16;
        struct sd_entry *ne = realloc(sd->e, sizeof *ne * (size_t)cap);
        if (!ne) goto oom;
        sd->e = ne;
        sd->cap = cap;
    }
    char *k = strdup(key);
    if (!k) goto oom;
    sd->e[sd->n++] = (struct sd_entry){k, dt_retain(t), num};
    return 0;
oom:
    dt__raise(DT_ERR_MEMORY, "state_dict", "out of host memory for a state dict entry");
    return -1;
}

int dt_state_dict_set_tensor(dt_state_dict *sd, const char *key, dt_tensor *t) {
    if (!t) {
        dt__raise(DT_ERR_ARG, "state_dict", "state dict entry \"%s\": tensor is NULL", key ? key : "");
        return -1;
    }
    return put(sd, key, t, 0);
}
int dt_state_dict_set_number(dt_state_dict *sd, const char *key, double value) { return put(sd, key, NULL, value); }
int dt_state_dict_size(const dt_state_dict *sd) { return sd->n; }
const char *dt_state_dict_key(const dt_state_dict *sd, int i) { return i >= 0 && i < sd->n ? sd->e[i].key : NULL; }

dt_tensor *dt_state_dict_tensor(const dt_state_dict *sd, const char *key) {
    struct sd_entry *e = find(sd, key);
    return e ? e->t : NULL;
}

int dt_state_dict_number(const dt_state_dict *sd, const char *key, double *out) {
    struct sd_entry *e = find(sd, key);
    if (!e || e->t) return -1;
    *out = e->num;
    return 0;
}

int dt_state_dict_merge(dt_state_dict *dst, const char *prefix, const dt_state_dict *src) {
    for (int i = 0; i < src->n; i++) {
        size_t len = strlen(prefix) + strlen(src->e[i].key) + 1;
        char *k = malloc(len);
        if (!k) {
            dt__raise(DT_ERR_MEMORY, "state_dict", "out of host memory");
            return -1;
        }
        snprintf(k, len, "%s%s", prefix, src->e[i].key);
        int rc = put(dst, k, src->e[i].t, src->e[i].num);
        free(k);
        if (rc < 0) return -1;
    }
    return 0;
}

dt_state_dict *dt_state_dict_sub(const dt_state_dict *sd, const char *prefix) {
    dt_state_dict *out = dt_state_dict_new();
    size_t pl = strlen(prefix);
    for (int i = 0; out && i < sd->n; i++)
        if (!strncmp(sd->e[i].key, prefix, pl) && sd->e[i].key[pl] &&
            put(out, sd->e[i].key + pl, sd->e[i].t, sd->e[i].num) < 0) {
            dt_state_dict_free(out);
            return NULL;
        }
    return out;
}

/* ---------------------------------------------------------------- module state */

static int collect(void *ctx, const char *path, dt_tensor *t, int buffer) {
    (void)buffer;
    return dt_state_dict_set_tensor(ctx, path, t) < 0 ? -1 : 0;
}

dt_state_dict *dt_module_state_dict(const dt_module *m) {
    dt_state_dict *sd = dt_state_dict_new();
    if (sd && dt__module_walk(m, "", collect, sd) != 0) {
        dt_state_dict_free(sd);
        return NULL;
    }
    return sd;
}

/* Checking a state dict against a module before changing anything. */
struct load_check {
    const dt_state_dict *sd;
    char *used; /* per sd entry: matched a module key */
    char missing[1024];
    char sizes[2048];
};

/* Appends text to buf, truncating when full. */
static void append(char *buf, size_t size, const char *text) {
    size_t n = strlen(buf);
    if (n < size) snprintf(buf + n, size - n, "%s", text);
}

/* Appends "key" to a comma-separated list. */
static void append_key(char *buf, size_t size, const char *key) {
    if (buf[0]) append(buf, size, ", ");
    append(buf, size, "\"");
    append(buf, size, key);
    append(buf, size, "\"");
}

static int check_one(void *ctx, const char *path, dt_tensor *t, int buffer) {
    (void)buffer;
    struct load_check *lc = ctx;
    struct sd_entry *e = find(lc->sd, path);
    if (!e || !e->t) {
        append_key(lc->missing, sizeof lc->missing, path);
        return 0;
    }
    lc->used[e - lc->sd->e] = 1;
    if (e->t->ndim != t->ndim || memcmp(e->t->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim)) {
        char a[160], b[160];
        dt__shape_str(e->t->ndim, e->t->shape, a, sizeof a);
        dt__shape_str(t->ndim, t->shape, b, sizeof b);
        char line[512];
        snprintf(line, sizeof line,
                 "\n\tsize mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model "
                 "is %s.",
                 path, a, b);
        append(lc->sizes, sizeof lc->sizes, line);
    }
    return 0;
}

static int copy_one(void *ctx, const char *path, dt_tensor *t, int buffer) {
    (void)buffer;
    struct sd_entry *e = find(ctx, path);
    if (!e || !e->t) return 0; /* missing, and not strict */
    return dt_copy_(t, e->t) < 0 ? -1 : 0;
}

int dt_module_load_state_dict(dt_module *m, const dt_state_dict *sd, int strict) {
    dt__runtime_init();
    struct load_check lc = {.sd = sd, .used = calloc((size_t)(sd->n ? sd->n : 1), 1)};
    if (!lc.used) {
        dt__raise(DT_ERR_MEMORY, "load_state_dict", "out of host memory");
        return -1;
    }
    if (dt__module_walk(m, "", check_one, &lc) != 0) {
        free(lc.used);
        return -1;
    }
    char unexpected[1024] = "";
    for (int i = 0; i < sd->n; i++)
        if (!lc.used[i]) append_key(unexpected, sizeof unexpected, sd->e[i].key);
    free(lc.used);
    if (lc.sizes[0] || (strict && (lc.missing[0] || unexpected[0]))) {
        dt__raise(DT_ERR_ARG, "load_state_dict", "Error(s) in loading state_dict for %s:%s%s%s%s%s%s", m->type,
                  strict && lc.missing[0] ? "\n\tMissing key(s) in state_dict: " : "", strict ? lc.missing : "",
                  strict && lc.missing[0] ? ". " : "",
                  strict && unexpected[0] ? "\n\tUnexpected key(s) in state_dict: " : "",
                  strict && unexpected[0] ? unexpected : "", lc.sizes);
        return -1;
    }
    /* as PyTorch: param.copy_(value) without recording, wherever param lives */
    int prev = dt_set_grad_enabled(0);
    int rc = dt__module_walk(m, "", copy_one, (void *)sd);
    dt_set_grad_enabled(prev);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- checkpoints */

static const char k_magic[8] = {'D', 'T', 'C', 'K', 'P', 'T', '\0', '\n'};
#define CKPT_VERSION 1u

/* FNV-1a, 64 bits: catches truncation and corruption, not tampering. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

struct writer {
    FILE *f;
    uint64_t h;
    int err;
};

static void w(struct writer *wr, const void *p, size_t n) {
    if (wr->err) return;
    wr->h = fnv(wr->h, p, n);
    if (n && fwrite(p, 1, n, wr->f) != n) wr->err = errno ? errno : EIO;
}

int dt_save(const dt_state_dict *sd, const char *path) {
    dt__runtime_init();
    char tmp[4096];
    if (!path || snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        dt__raise(DT_ERR_ARG, "save", "save: bad checkpoint path");
        return -1;
    }
    /* read every device tensor back first: a failure then leaves no file */
    void **host = calloc((size_t)(sd->n ? sd->n : 1), sizeof *host);
    if (!host) {
        dt__raise(DT_ERR_MEMORY, "save", "out of host memory saving a checkpoint");
        return -1;
    }
    int rc = -1;
    for (int i = 0; i < sd->n; i++) {
        dt_tensor *t = sd->e[i].t;
        if (!t) continue;
        size_t bytes = (size_t)dt_numel(t) * dt_dtype_size(t->dtype);
        host[i] = malloc(bytes ? bytes : 1);
        if (!host[i]) {
            dt__raise(DT_ERR_MEMORY, "save", "out of host memory saving \"%s\" (%zu bytes)", sd->e[i].key, bytes);
            goto out;
        }
        if (dt_to_host(t, host[i], bytes) < 0) goto out;
    }
    struct writer wr = {fopen(tmp, "wb"), FNV_INIT, 0};
    if (!wr.f) {
        dt__raise(DT_ERR_IO, "save", "save: cannot create '%s': %s", tmp, strerror(errno));
        goto out;
    }
    uint32_t version = CKPT_VERSION, count = (uint32_t)sd->n;
    w(&wr, k_magic, sizeof k_magic);
    w(&wr, &version, 4);
    w(&wr, &count, 4);
    for (int i = 0; i < sd->n; i++) {
        const struct sd_entry *e = &sd->e[i];
        uint32_t klen = (uint32_t)strlen(e->key);
        uint8_t kind = e->t ? 1 : 0;
        w(&wr, &klen, 4);
        w(&wr, e->key, klen);
        w(&wr, &kind, 1);
        if (!e->t) {
            w(&wr, &e->num, 8);
            continue;
        }
        const dt_tensor *t = e->t;
        uint8_t head[4] = {(uint8_t)t->dtype, (uint8_t)t->storage->device.type, 0, 0};
        int32_t index = t->storage->device.index;
        uint32_t ndim = (uint32_t)t->ndim;
        uint64_t bytes = (uint64_t)dt_numel(t) * dt_dtype_size(t->dtype);
        w(&wr, head, 4);
        w(&wr, &index, 4);
        w(&wr, &ndim, 4);
        w(&wr, t->shape, 8 * (size_t)ndim);
        w(&wr, &bytes, 8);
        w(&wr, host[i], (size_t)bytes);
    }
    uint64_t sum = wr.h;
    w(&wr, &sum, 8);
    if (!wr.err && (fflush(wr.f) != 0 || fsync(fileno(wr.f)) != 0)) wr.err = errno;
    if (fclose(wr.f) != 0 && !wr.err) wr.err = errno;
    if (!wr.err && rename(tmp, path) != 0) wr.err = errno;
    if (wr.err) {
        unlink(tmp);
        dt__raise(DT_ERR_IO, "save", "save: writing checkpoint '%s' failed: %s (nothing was written)", path,
                  strerror(wr.err));
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < sd->n; i++) free(host[i]);
    free(host);
    return rc;
}

/* A bounds-checked reader over the whole file in memory. */
struct reader {
    const unsigned char *p, *end;
    int short_read;
};

static const void *take(struct reader *r, size_t n) {
    if ((size_t)(r->end - r->p) < n) {
        r->short_read = 1;
        return NULL;
    }
    const void *q = r->p;
    r->p += n;
    return q;
}

#define READ_AS(r, type, dst)                                                                                          \
    do {                                                                                                               \
        const void *q_ = take((r), sizeof(type));                                                                      \
        if (!q_) goto truncated;                                                                                       \
        memcpy(&(dst), q_, sizeof(type));                                                                              \
    } while (0)

struct pending {
    char *key;
    int is_tensor;
    double num;
    dt_dtype dtype;
    dt_device dev;
    int ndim;
    int64_t shape[DT_MAX_DIMS];
    const void *data;
    uint64_t bytes;
};

dt_state_dict *dt_load(const char *path, const dt_device *map_location) {
    dt__runtime_init();
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        dt__raise(DT_ERR_IO, "load", "load: cannot open checkpoint '%s': %s", path ? path : "(null)",
                  path ? strerror(errno) : "no path");
        return NULL;
    }
    struct stat st;
    unsigned char *buf = NULL;
    struct pending *pend = NULL;
    uint32_t count = 0, got = 0;
    dt_state_dict *sd = NULL;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        dt__raise(DT_ERR_IO, "load", "load: '%s' is not a regular file", path);
        return NULL;
    }
    buf = malloc((size_t)st.st_size ? (size_t)st.st_size : 1);
    if (!buf) {
        fclose(f);
        dt__raise(DT_ERR_MEMORY, "load", "load: out of host memory reading '%s' (%lld bytes)", path,
                  (long long)st.st_size);
        return NULL;
    }
    size_t size = fread(buf, 1, (size_t)st.st_size, f);
    int read_err = ferror(f);
    fclose(f);
    if (read_err || size != (size_t)st.st_size) {
        dt__raise(DT_ERR_IO, "load", "load: reading '%s' failed", path);
        goto fail;
    }
    if (size < sizeof k_magic || memcmp(buf, k_magic, sizeof k_magic)) {
        dt__raise(DT_ERR_IO, "load", "load: '%s' is not a devtrace checkpoint (bad magic number)", path);
        goto fail;
    }
    struct reader r = {buf + sizeof k_magic, buf + size, 0};
    uint32_t version;
    READ_AS(&r, uint32_t, version);
    if (version > CKPT_VERSION || version == 0) {
        dt__raise(DT_ERR_IO, "load",
                  "load: '%s' is checkpoint format version %u; this libdtrt (%s) reads versions 1 to %u", path, version,
                  DT_VERSION, CKPT_VERSION);
        goto fail;
    }
    if (size < sizeof k_magic + 16) goto truncated;
    uint64_t want;
    memcpy(&want, buf + size - 8, 8);
    if (fnv(FNV_INIT, buf, size - 8) != want) {
        dt__raise(DT_ERR_IO, "load", "load: checkpoint '%s' is truncated or corrupt (checksum mismatch)", path);
        goto fail;
    }
    r.end = buf + size - 8;
    READ_AS(&r, uint32_t, count);
    if (count > (size_t)(r.end - r.p) / 13) goto truncated; /* each entry takes at least 13 bytes */
    pend = calloc(count ? count : 1, sizeof *pend);
    if (!pend) {
        dt__raise(DT_ERR_MEMORY, "load", "load: out of host memory");
        goto fail;
    }
    /* parse and validate everything before creating any tensor */
    for (; got < count; got++) {
        struct pending *e = &pend[got];
        uint32_t klen;
        uint8_t kind;
        READ_AS(&r, uint32_t, klen);
        const char *k = take(&r, klen);
        if (!k) goto truncated;
        e->key = strndup(k, klen);
        if (!e->key) {
            dt__raise(DT_ERR_MEMORY, "load", "load: out of host memory");
            goto fail;
        }
        READ_AS(&r, uint8_t, kind);
        if (kind == 0) {
            READ_AS(&r, double, e->num);
            continue;
        }
        uint8_t head[4];
        int32_t index;
        uint32_t ndim;
        READ_AS(&r, uint8_t[4], head);
        READ_AS(&r, int32_t, index);
        READ_AS(&r, uint32_t, ndim);
        if (kind != 1 || head[0] > DT_BOOL || head[1] > DT_DEVICE_CUDA || ndim > DT_MAX_DIMS || index < 0 ||
            (head[1] == DT_DEVICE_CPU && index != 0)) {
            dt__raise(DT_ERR_IO, "load", "load: checkpoint '%s' entry \"%s\" is malformed", path, e->key);
            goto fail;
        }
        e->is_tensor = 1;
        e->dtype = (dt_dtype)head[0];
        e->dev = (dt_device){head[1], index};
        e->ndim = (int)ndim;
        int64_t numel = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            READ_AS(&r, int64_t, e->shape[d]);
            if (e->shape[d] < 0 || (e->shape[d] && numel > INT64_MAX / e->shape[d])) {
                dt__raise(DT_ERR_IO, "load", "load: checkpoint '%s' entry \"%s\" has a bad shape", path, e->key);
                goto fail;
            }
            numel *= e->shape[d];
        }
        READ_AS(&r, uint64_t, e->bytes);
        if (e->bytes != (uint64_t)numel * dt_dtype_size(e->dtype)) {
            dt__raise(DT_ERR_IO, "load", "load: checkpoint '%s' entry \"%s\" has %llu bytes for %lld elements", path,
                      e->key, (unsigned long long)e->bytes, (long long)numel);
            goto fail;
        }
        if (!(e->data = take(&r, e->bytes))) goto truncated;
        if (map_location) e->dev = *map_location;
        if (e->dev.type == DT_DEVICE_CUDA && e->dev.index >= dt_cuda_device_count()) {
            char d[32];
            dt__raise(DT_ERR_IO, "load",
                      "Attempting to deserialize object on CUDA device %d but dt_cuda_device_count() is %d (entry "
                      "\"%s\" of '%s'). Please use dt_load with a map_location to map your storages to an existing "
                      "device (%s).",
                      e->dev.index, dt_cuda_device_count(), e->key, path, dt_device_str(dt_cpu_device(), d, sizeof d));
            goto fail;
        }
    }
    if (r.p != r.end) {
        dt__raise(DT_ERR_IO, "load", "load: checkpoint '%s' has %lld stray bytes after its entries", path,
                  (long long)(r.end - r.p));
        goto fail;
    }
    sd = dt_state_dict_new();
    if (!sd) goto fail;
    for (uint32_t i = 0; i < count; i++) {
        struct pending *e = &pend[i];
        if (!e->is_tensor) {
            if (dt_state_dict_set_number(sd, e->key, e->num) < 0) goto fail;
            continue;
        }
        dt_tensor *t = dt__tensor_alloc(e->ndim, e->shape, e->dtype, e->dev, "load");
        if (!t) goto fail;
        if (dt__mem_copy(e->dev, t->storage->data, 0, dt_cpu_device(), e->data, 0, (size_t)e->bytes, "load") < 0) {
            dt_free(t);
            goto fail;
        }
        dt__tensor_announce_detail(t, DTP_ORIGIN_CHECKPOINT, e->key, 0, 0, path);
        int rc = dt_state_dict_set_tensor(sd, e->key, t);
        dt_free(t);
        if (rc < 0) goto fail;
    }
    for (uint32_t i = 0; i < got; i++) free(pend[i].key);
    free(pend);
    free(buf);
    return sd;
truncated:
    dt__raise(DT_ERR_IO, "load", "load: checkpoint '%s' is truncated", path);
fail:
    for (uint32_t i = 0; pend && i <= got && i < count; i++) free(pend[i].key);
    free(pend);
    free(buf);
    dt_state_dict_free(sd);
    return NULL;
}
