/* The empty default definitions of the dtp_* probes (include/devtrace/probe.h).
 * They are exported with default visibility and called through the PLT, so a
 * library loaded with LD_PRELOAD (the tracer) replaces them. Nothing else
 * belongs in this file: keeping them alone in their translation unit means no
 * compiler can inline them into their callers. */
#define DT_BUILDING_RUNTIME 1
#include <devtrace/probe.h>

#define DTP_EXPORT __attribute__((visibility("default"), noinline, used))

DTP_EXPORT void dtp_runtime_init(uint32_t abi_version, const char *runtime, const char *version) {
    (void)abi_version;
    (void)runtime;
    (void)version;
}
DTP_EXPORT void dtp_device_backend(struct dtp_device device, const char *backend) {
    (void)device;
    (void)backend;
}
DTP_EXPORT void dtp_tensor_created(const struct dtp_tensor *tensor, const struct dtp_origin *origin) {
    (void)tensor;
    (void)origin;
}
DTP_EXPORT void dtp_tensor_transferred(const struct dtp_transfer *transfer) { (void)transfer; }
DTP_EXPORT void dtp_tensor_named(uint64_t id, const char *name) {
    (void)id;
    (void)name;
}
DTP_EXPORT void dtp_tensor_freed(uint64_t id) { (void)id; }
DTP_EXPORT void dtp_op_begin(const struct dtp_op *op) { (void)op; }
DTP_EXPORT void dtp_op_end(uint64_t seq, const char *name, int32_t status, int32_t noutputs, const uint64_t *outputs) {
    (void)seq;
    (void)name;
    (void)status;
    (void)noutputs;
    (void)outputs;
}
DTP_EXPORT void dtp_device_mismatch(const struct dtp_op *op, int32_t first, int32_t other, const char *message) {
    (void)op;
    (void)first;
    (void)other;
    (void)message;
}
DTP_EXPORT void dtp_error(const char *op, int32_t kind, const char *message) {
    (void)op;
    (void)kind;
    (void)message;
}
DTP_EXPORT int32_t dtp_stack_policy(int32_t policy) {
    (void)policy;
    return DTP_STACKS_ALL;
}
DTP_EXPORT void dtp_producer_failed(const char *why) { (void)why; }
DTP_EXPORT void dtp_source_fact(const char *file, int32_t line, const char *key, const char *value) {
    (void)file;
    (void)line;
    (void)key;
    (void)value;
}
DTP_EXPORT void dtp_tensor_role(uint64_t id, int32_t role, uint64_t of, const char *key) {
    (void)id;
    (void)role;
    (void)of;
    (void)key;
}
