/* The training layer of libdtrt: layers and losses, modules with registered
 * parameters and buffers, optimizers, state dicts and checkpoints, a data
 * loader, and single-process data parallelism. PyTorch's semantics wherever a
 * device-placement bug depends on them; where this API chose between
 * possible semantics it says so.
 *
 * Ownership follows dt.h: a returned dt_tensor * is a new reference, except
 * accessors marked BORROWED. Modules, optimizers, state dicts, datasets and
 * loaders are freed with their own *_free function. */
#ifndef DEVTRACE_DT_NN_H
#define DEVTRACE_DT_NN_H

#include <devtrace/dt.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- layers (functional) */

/* input (N, C, H, W), weight (OC, C, KH, KW), bias (OC) or NULL. */
DT_API dt_tensor *dt_conv2d(const dt_tensor *input, const dt_tensor *weight, const dt_tensor *bias, int stride,
                            int padding);
/* Max over k x k windows (stride 0 means k), padding with -inf. */
DT_API dt_tensor *dt_max_pool2d(const dt_tensor *input, int k, int stride, int padding);
/* Normalizes over the last dimension; weight and bias (D) or NULL. */
DT_API dt_tensor *dt_layer_norm(const dt_tensor *input, const dt_tensor *weight, const dt_tensor *bias, double eps);
/* Zeroes elements with probability p and scales the rest by 1/(1-p) when
 * training; the input itself (a new reference) otherwise. */
DT_API dt_tensor *dt_dropout(const dt_tensor *input, double p, int training);

/* ---------------------------------------------------------------- losses (mean reduction) */

#define DT_IGNORE_INDEX_DEFAULT (-100)

DT_API dt_tensor *dt_mse_loss(const dt_tensor *input, const dt_tensor *target);
/* input (N, C) log-probabilities, target (N) class indices, weight (C) or NULL. */
DT_API dt_tensor *dt_nll_loss(const dt_tensor *input, const dt_tensor *target, const dt_tensor *weight,
                              int64_t ignore_index);
/* input (N, C) logits; as log_softmax + nll_loss. */
DT_API dt_tensor *dt_cross_entropy(const dt_tensor *input, const dt_tensor *target, const dt_tensor *weight,
                                   int64_t ignore_index);
/* input and target of one shape; pos_weight broadcasts over the last dim, or NULL. */
DT_API dt_tensor *dt_bce_with_logits(const dt_tensor *input, const dt_tensor *target, const dt_tensor *pos_weight);

/* ---------------------------------------------------------------- modules */

typedef struct dt_module dt_module;
/* A module's forward: input -> new output tensor, or NULL with an error set. */
typedef dt_tensor *(*dt_forward_fn)(dt_module *m, const dt_tensor *input);

/* Built-in layers. Parameters are created on the cpu, as PyTorch's are,
 * initialised from the global generator (dt_manual_seed). */
DT_API dt_module *dt_nn_linear(int64_t in_features, int64_t out_features, int bias);
DT_API dt_module *dt_nn_embedding(int64_t num_embeddings, int64_t dim);
DT_API dt_module *dt_nn_conv2d(int64_t in_channels, int64_t out_channels, int kernel, int stride, int padding,
                               int bias);
DT_API dt_module *dt_nn_max_pool2d(int kernel, int stride);
DT_API dt_module *dt_nn_flatten(void); /* flattens all dims after the first */
DT_API dt_module *dt_nn_relu(void);
DT_API dt_module *dt_nn_dropout(double p);
DT_API dt_module *dt_nn_layer_norm(int64_t dim); /* over the last dim, with weight and bias */
/* Runs its children in order; takes ownership of the n modules given
 * (registered as "0", "1", ...). */
DT_API dt_module *dt_nn_sequential(int n, dt_module *const *modules);

/* A module of the program's own: forward is called with the module, and
 * self is whatever the program wants to keep (BORROWED by the module;
 * free_self, if not NULL, is called on it when the module is freed).
 * Register its pieces with the functions below so that dt_module_to(),
 * state dicts, optimizers and data parallel see them. */
DT_API dt_module *dt_module_new(const char *type, dt_forward_fn forward, void *self, void (*free_self)(void *));
DT_API void *dt_module_self(const dt_module *m);
DT_API const char *dt_module_type(const dt_module *m);
/* Registers t (retained) as a parameter: it requires grad and is named with
 * its dotted path ("fc1.weight") from the outermost module. Returns 0 / -1. */
DT_API int dt_module_register_parameter(dt_module *m, const char *name, dt_tensor *t);
/* Registers t (retained) as a buffer: moved and saved with the module, no grad. */
DT_API int dt_module_register_buffer(dt_module *m, const char *name, dt_tensor *t);
/* Adds child (takes ownership) under name; its tensors are renamed
 * "name.<...>". Returns 0 / -1. */
DT_API int dt_module_add_child(dt_module *m, const char *name, dt_module *child);
/* BORROWED lookups, NULL when absent: a child, or a parameter or buffer by
 * its local name ("weight") or dotted path ("fc1.weight"). A forward that
 * reaches its pieces this way works on data-parallel replicas too. */
DT_API dt_module *dt_module_child(const dt_module *m, const char *name);
DT_API dt_tensor *dt_module_get(const dt_module *m, const char *name);

DT_API dt_tensor *dt_module_forward(dt_module *m, const dt_tensor *input);
/* Moves every registered parameter and buffer (and their grads), recursively,
 * in place: same tensors, new storage, as PyTorch's Module.to. Tensors the
 * program keeps elsewhere (its own struct fields) are not moved. 0 / -1. */
DT_API int dt_module_to(dt_module *m, dt_device dev);
DT_API void dt_module_train(dt_module *m, int training); /* recursively; eval() is train(0) */
DT_API int dt_module_is_training(const dt_module *m);
/* Parameters in registration order, depth first (as named_parameters()):
 * count, then the i-th (BORROWED) and its dotted name. */
DT_API int dt_module_num_parameters(const dt_module *m);
DT_API dt_tensor *dt_module_parameter(const dt_module *m, int i, const char **name);
DT_API void dt_module_zero_grad(dt_module *m);
DT_API void dt_module_free(dt_module *m);

/* ---------------------------------------------------------------- state dicts */

/* An ordered map from keys to tensors (retained) or numbers. */
typedef struct dt_state_dict dt_state_dict;
DT_API dt_state_dict *dt_state_dict_new(void);
DT_API void dt_state_dict_free(dt_state_dict *sd);
/* Set (or replace) an entry. Return 0 / -1. */
DT_API int dt_state_dict_set_tensor(dt_state_dict *sd, const char *key, dt_tensor *t);
DT_API int dt_state_dict_set_number(dt_state_dict *sd, const char *key, double value);
DT_API int dt_state_dict_size(const dt_state_dict *sd);
DT_API const char *dt_state_dict_key(const dt_state_dict *sd, int i);
/* BORROWED; NULL when absent or a number. */
DT_API dt_tensor *dt_state_dict_tensor(const dt_state_dict *sd, const char *key);
/* 0 and *out set, or -1 when absent or a tensor (no error raised). */
DT_API int dt_state_dict_number(const dt_state_dict *sd, const char *key, double *out);
/* Copies every entry of src into dst with prefix prepended ("model."). */
DT_API int dt_state_dict_merge(dt_state_dict *dst, const char *prefix, const dt_state_dict *src);
/* A new dict of the entries of sd under prefix, with the prefix removed. */
DT_API dt_state_dict *dt_state_dict_sub(const dt_state_dict *sd, const char *prefix);

/* The module's parameters and buffers under their dotted names (the tensors
 * themselves, not copies). */
DT_API dt_state_dict *dt_module_state_dict(const dt_module *m);
/* Copies values into the module's tensors wherever those live (copy_, so a
 * cpu state dict loads into a model on cuda). strict: missing or unexpected
 * keys are an error. Shapes must match. Nothing is changed on error. */
DT_API int dt_module_load_state_dict(dt_module *m, const dt_state_dict *sd, int strict);

/* ---------------------------------------------------------------- optimizers */

typedef struct dt_optimizer dt_optimizer;
/* Over the module's parameters at creation time. State tensors are made at
 * the first step, on each parameter's device at that moment, and named
 * "optimizer.state.<param>.<key>". */
DT_API dt_optimizer *dt_sgd(dt_module *m, double lr, double momentum, double weight_decay);
DT_API dt_optimizer *dt_adam(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay);
DT_API dt_optimizer *dt_adamw(dt_module *m, double lr, double beta1, double beta2, double eps, double weight_decay);
/* Updates every parameter that has a grad. 0 / -1 (a device mismatch
 * between a parameter, its grad and its state is reported as PyTorch does). */
DT_API int dt_optimizer_step(dt_optimizer *o);
DT_API void dt_optimizer_zero_grad(dt_optimizer *o); /* grads set to none */
DT_API double dt_optimizer_lr(const dt_optimizer *o);
DT_API void dt_optimizer_set_lr(dt_optimizer *o, double lr);
/* Keys "state.<i>.<key>" (i = parameter index; step, exp_avg, exp_avg_sq,
 * momentum_buffer) and "param_groups.0.<hyperparameter>". Tensors are the
 * state itself, not copies. */
DT_API dt_state_dict *dt_optimizer_state_dict(const dt_optimizer *o);
/* PyTorch's semantics: each loaded state tensor is moved to the device its
 * parameter is on at load time ("step" stays where it was loaded); a model
 * moved afterwards leaves that state behind. Hyperparameters are restored.
 * Nothing is changed on error. */
DT_API int dt_optimizer_load_state_dict(dt_optimizer *o, const dt_state_dict *sd);
DT_API void dt_optimizer_free(dt_optimizer *o);

/* ---------------------------------------------------------------- checkpoints */

/* Writes sd to path (a new file replaced atomically: a crash never leaves a
 * half-written checkpoint). Device tensors are read back to the host. */
DT_API int dt_save(const dt_state_dict *sd, const char *path);
/* Reads a checkpoint. map_location NULL puts each tensor back on the device
 * it was saved from (an error when that device does not exist); otherwise
 * everything goes to *map_location. Tensors carry their key as origin. A
 * wrong, truncated, corrupt or newer file is an error (DT_ERR_IO), and
 * nothing is returned. */
DT_API dt_state_dict *dt_load(const char *path, const dt_device *map_location);

/* ---------------------------------------------------------------- data */

typedef struct dt_dataset dt_dataset;
/* Samples along dim 0 of n cpu tensors of equal first dimension (retained). */
DT_API dt_dataset *dt_tensor_dataset(int n, dt_tensor *const *tensors);
DT_API int64_t dt_dataset_len(const dt_dataset *ds);
DT_API void dt_dataset_free(dt_dataset *ds);

typedef struct dt_dataloader dt_dataloader;
/* Batches of batch_size samples on the cpu, as real loaders yield them.
 * shuffle: a new order each epoch from seed (same seed, same orders).
 * num_workers > 0: batches are gathered by that many threads ahead of the
 * consumer; the tensors are still made on the calling thread. */
DT_API dt_dataloader *dt_dataloader_new(dt_dataset *ds, int64_t batch_size, int shuffle, uint64_t seed, int drop_last,
                                        int num_workers);
/* Fills out[0..n) (n = tensors of the dataset) with the next batch and
 * returns 1; returns 0 at the end of an epoch (the next call starts the
 * next epoch), -1 on error. */
DT_API int dt_dataloader_next(dt_dataloader *dl, dt_tensor **out);
DT_API int64_t dt_dataloader_num_batches(const dt_dataloader *dl);
DT_API void dt_dataloader_free(dt_dataloader *dl);

/* ---------------------------------------------------------------- data parallel */

typedef struct dt_data_parallel dt_data_parallel;
/* Like torch.nn.DataParallel: module must live on devices[0]. Each forward
 * replicates it onto every device, scatters the batch along dim 0, runs the
 * replicas, and gathers the outputs on output_device; backward reduces the
 * gradients into the module's own parameters. Does not own module. */
DT_API dt_data_parallel *dt_data_parallel_new(dt_module *module, int ndevices, const dt_device *devices,
                                              dt_device output_device);
DT_API dt_tensor *dt_data_parallel_forward(dt_data_parallel *dp, const dt_tensor *input);
DT_API void dt_data_parallel_free(dt_data_parallel *dp);

#ifdef __cplusplus
}
#endif

#endif /* DEVTRACE_DT_NN_H */
