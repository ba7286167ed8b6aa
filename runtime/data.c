/* Data loading of libdtrt: an in-memory dataset of cpu tensors and a loader
 * that yields cpu batches, as real loaders do (the program must move them).
 * With worker threads, the workers gather samples into host buffers ahead of
 * the consumer; the batch tensors themselves are always made on the calling
 * thread, so their creation is attributed to the program's loop. */
#include "nn_impl.h"

#include <pthread.h>
#include <string.h>

#define DS_MAX 8 /* most tensors per sample */

struct dt_dataset {
    int n;                /* tensors per sample */
    dt_tensor *t[DS_MAX]; /* contiguous cpu tensors, retained */
    int64_t len;          /* samples (first dimension) */
    size_t row[DS_MAX];   /* bytes per sample of each tensor */
};

dt_dataset *dt_tensor_dataset(int n, dt_tensor *const *tensors) {
    dt__runtime_init();
    if (n < 1 || n > DS_MAX || !tensors) {
        dt__raise(DT_ERR_ARG, "TensorDataset", "TensorDataset: expected 1 to %d tensors, got %d", DS_MAX, n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        char d[32];
        if (!tensors[i] || tensors[i]->ndim == 0 || tensors[i]->shape[0] != tensors[0]->shape[0]) {
            dt__raise(DT_ERR_SHAPE, "TensorDataset", "Size mismatch between tensors (tensor %d: %s)", i,
                      !tensors[i]             ? "NULL"
                      : tensors[i]->ndim == 0 ? "0-dim"
                                              : "first dimension differs");
            return NULL;
        }
        if (tensors[i]->storage->device.type != DT_DEVICE_CPU) {
            dt__raise(DT_ERR_DEVICE, "TensorDataset",
                      "TensorDataset: tensor %d is on %s; an in-memory dataset holds cpu tensors and the program "
                      "moves each batch",
                      i, dt_device_str(tensors[i]->storage->device, d, sizeof d));
            return NULL;
        }
    }
    dt_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        dt__raise(DT_ERR_MEMORY, "TensorDataset", "out of host memory");
        return NULL;
    }
    ds->n = n;
    ds->len = tensors[0]->shape[0];
    int prev = dt_set_grad_enabled(0);
    for (int i = 0; i < n; i++) {
        ds->t[i] = dt_contiguous(tensors[i]);
        if (!ds->t[i]) {
            dt_set_grad_enabled(prev);
            dt_dataset_free(ds);
            return NULL;
        }
        ds->row[i] = (size_t)(dt_numel(tensors[i]) / (ds->len ? ds->len : 1)) * dt_dtype_size(tensors[i]->dtype);
    }
    dt_set_grad_enabled(prev);
    return ds;
}

int64_t dt_dataset_len(const dt_dataset *ds) { return ds->len; }

void dt_dataset_free(dt_dataset *ds) {
    if (!ds) return;
    for (int i = 0; i < ds->n; i++) dt_free(ds->t[i]);
    free(ds);
}

/* ---------------------------------------------------------------- loader */

struct slot {
    int64_t batch;     /* which batch it holds */
    int ready;         /* filled and not yet consumed */
    void *buf[DS_MAX]; /* gathered rows, one buffer per tensor */
};

struct dt_dataloader {
    dt_dataset *ds;
    int64_t bs, nb; /* batch size, batches per epoch */
    int shuffle, drop_last;
    uint64_t seed, epoch;
    int64_t *order; /* sample order of this epoch */
    int64_t next;   /* next batch the consumer takes */
    /* workers */
    int nw;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct slot *slots; /* nslots batches in flight */
    int nslots;
    int64_t claim; /* next batch a worker takes */
    int stop;
};

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The sample order of the current epoch: its own generator (seed, epoch),
 * so that shuffling does not disturb the global one. */
static void make_order(dt_dataloader *dl) {
    for (int64_t i = 0; i < dl->ds->len; i++) dl->order[i] = i;
    if (!dl->shuffle) return;
    uint64_t s = dl->seed * 0x2545f4914f6cdd1dull + dl->epoch;
    for (int64_t i = dl->ds->len - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix(&s) % (uint64_t)(i + 1));
        int64_t t = dl->order[i];
        dl->order[i] = dl->order[j];
        dl->order[j] = t;
    }
}

static int64_t batch_len(const dt_dataloader *dl, int64_t b) {
    int64_t start = b * dl->bs, left = dl->ds->len - start;
    return left < dl->bs ? left : dl->bs;
}

/* Copies batch b's rows of tensor i into dst. */
static void gather(const dt_dataloader *dl, int64_t b, int i, void *dst) {
    const char *src = dt_data(dl->ds->t[i]);
    size_t row = dl->ds->row[i];
    int64_t n = batch_len(dl, b);
    for (int64_t k = 0; k < n; k++)
        memcpy((char *)dst + (size_t)k * row, src + (size_t)dl->order[b * dl->bs + k] * row, row);
}

static void *worker(void *arg) {
    dt_dataloader *dl = arg;
    pthread_mutex_lock(&dl->mu);
    while (!dl->stop) {
        if (dl->claim >= dl->nb || dl->claim >= dl->next + dl->nslots) {
            pthread_cond_wait(&dl->cv, &dl->mu);
            continue;
        }
        int64_t b = dl->claim++;
        struct slot *s = &dl->slots[b % dl->nslots];
        pthread_mutex_unlock(&dl->mu);
        for (int i = 0; i < dl->ds->n; i++) gather(dl, b, i, s->buf[i]);
        pthread_mutex_lock(&dl->mu);
        s->batch = b;
        s->ready = 1;
        pthread_cond_broadcast(&dl->cv);
    }
    pthread_mutex_unlock(&dl->mu);
    return NULL;
}

dt_dataloader *dt_dataloader_new(dt_dataset *ds, int64_t batch_size, int shuffle, uint64_t seed, int drop_last,
                                 int num_workers) {
    dt__runtime_init();
    if (!ds || batch_size <= 0 || num_workers < 0 || num_workers > 64) {
        dt__raise(DT_ERR_ARG, "DataLoader", "DataLoader: %s",
                  !ds               ? "dataset is NULL"
                  : batch_size <= 0 ? "batch_size should be a positive integer value"
                                    : "num_workers must be 0 to 64");
        return NULL;
    }
    dt_dataloader *dl = calloc(1, sizeof *dl);
    if (!dl) goto oom;
    pthread_mutex_init(&dl->mu, NULL); /* first, so that dt_dataloader_free() undoes any state */
    pthread_cond_init(&dl->cv, NULL);
    dl->ds = ds;
    dl->bs = batch_size;
    dl->shuffle = shuffle;
    dl->drop_last = drop_last;
    dl->seed = seed;
    dl->nb = drop_last ? ds->len / batch_size : (ds->len + batch_size - 1) / batch_size;
    dl->order = malloc(sizeof *dl->order * (size_t)(ds->len ? ds->len : 1));
    if (!dl->order) goto oom;
    make_order(dl);
    if (num_workers > 0) {
        dl->nslots = 2 * num_workers; /* PyTorch's default prefetch_factor */
        dl->slots = calloc((size_t)dl->nslots, sizeof *dl->slots);
        dl->threads = calloc((size_t)num_workers, sizeof *dl->threads);
        if (!dl->slots || !dl->threads) goto oom;
        for (int s = 0; s < dl->nslots; s++)
            for (int i = 0; i < ds->n; i++)
                if (!(dl->slots[s].buf[i] = malloc(ds->row[i] * (size_t)batch_size))) goto oom;
        for (; dl->nw < num_workers; dl->nw++)
            if (pthread_create(&dl->threads[dl->nw], NULL, worker, dl) != 0) {
                int started = dl->nw;
                dt_dataloader_free(dl);
                dt__raise(DT_ERR_STATE, "DataLoader", "DataLoader: cannot start worker thread %d", started);
                return NULL;
            }
    }
    return dl;
oom:
    dt_dataloader_free(dl);
    dt__raise(DT_ERR_MEMORY, "DataLoader", "out of host memory for a DataLoader");
    return NULL;
}

int64_t dt_dataloader_num_batches(const dt_dataloader *dl) { return dl->nb; }

/* A new cpu tensor shaped like dataset tensor i with n rows (unannounced:
 * the caller fills it, then announces it). */
static dt_tensor *batch_tensor(const dt_dataloader *dl, int i, int64_t n) {
    const dt_tensor *src = dl->ds->t[i];
    int64_t shape[DT_MAX_DIMS];
    memcpy(shape, src->shape, sizeof shape);
    shape[0] = n;
    return dt__tensor_alloc(src->ndim, shape, src->dtype, dt_cpu_device(), "dataloader");
}

int dt_dataloader_next(dt_dataloader *dl, dt_tensor **out) {
    if (dl->next >= dl->nb) { /* end of epoch: the next call starts the next one */
        pthread_mutex_lock(&dl->mu);
        dl->epoch++;
        make_order(dl);
        dl->next = 0;
        dl->claim = 0;
        pthread_cond_broadcast(&dl->cv);
        pthread_mutex_unlock(&dl->mu);
        return 0;
    }
    int64_t b = dl->next, n = batch_len(dl, b);
    for (int i = 0; i < dl->ds->n; i++) out[i] = NULL;
    struct slot *s = dl->nw ? &dl->slots[b % dl->nslots] : NULL;
    if (s) { /* a worker gathers it */
        pthread_mutex_lock(&dl->mu);
        while (!(s->ready && s->batch == b)) pthread_cond_wait(&dl->cv, &dl->mu);
        pthread_mutex_unlock(&dl->mu);
    }
    for (int i = 0; i < dl->ds->n; i++) {
        if (!(out[i] = batch_tensor(dl, i, n))) goto fail; /* the slot stays filled: a retry takes it */
        if (s)
            memcpy(out[i]->storage->data, s->buf[i], (size_t)n * dl->ds->row[i]);
        else
            gather(dl, b, i, out[i]->storage->data);
        dt__tensor_announce(out[i], DTP_ORIGIN_FACTORY, "dataloader", 0, 0);
    }
    pthread_mutex_lock(&dl->mu);
    if (s) s->ready = 0;
    dl->next++;
    pthread_cond_broadcast(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    return 1;
fail:
    for (int i = 0; i < dl->ds->n; i++) {
        dt_free(out[i]);
        out[i] = NULL;
    }
    return -1;
}

void dt_dataloader_free(dt_dataloader *dl) {
    if (!dl) return;
    pthread_mutex_lock(&dl->mu);
    dl->stop = 1;
    pthread_cond_broadcast(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    for (int i = 0; i < dl->nw; i++) pthread_join(dl->threads[i], NULL);
    for (int s = 0; dl->slots && s < dl->nslots; s++)
        for (int i = 0; i < DS_MAX; i++) free(dl->slots[s].buf[i]);
    free(dl->slots);
    free(dl->threads);
    pthread_mutex_destroy(&dl->mu);
    pthread_cond_destroy(&dl->cv);
    free(dl->order);
    free(dl);
}
