/* Helpers shared by the Check suites: making tensors from literals, reading
 * them back, comparing within tolerance, and catching runtime errors instead
 * of exiting. Test code only. */
#ifndef DEVTRACE_TESTUTIL_H
#define DEVTRACE_TESTUTIL_H

#include <check.h>
#include <devtrace/dt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

Suite *make_tensor_suite(void);
Suite *make_ops_suite(void);
Suite *make_device_suite(void);
Suite *make_backends_suite(void);
Suite *make_errors_suite(void);
Suite *make_probes_suite(void);
Suite *make_tracer_suite(void);
Suite *make_autograd_suite(void);
Suite *make_train_suite(void);
Suite *make_viewer_suite(void);
Suite *make_run_suite(void);
Suite *make_flight_suite(void);
Suite *make_interpose_suite(void);
Suite *make_bugs_suite(void);
Suite *make_libtorch_suite(void); /* only when built with Torch (DT_HAVE_TORCH) */
Suite *make_cupti_suite(void);    /* only when the CUPTI headers were found (DT_HAVE_CUPTI) */
Suite *make_hardening_suite(void);

/* A file's bytes into buf (NUL-terminated, cut at size - 1): its length; "" when it cannot be read. */
static inline __attribute__((unused)) size_t tu_slurp(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    return n;
}

/* Runs a shell command (in dir when cd is set), its stdout and stderr captured through dir/.out and dir/.err
 * into out and err; its status as a shell gives it (128 + N for a signal N). */
static inline __attribute__((unused, format(printf, 7, 8))) int tu_sh(const char *dir, int cd, char *out, size_t osize,
                                                                      char *err, size_t esize, const char *fmt, ...) {
    char cmd[4096], full[4400], p[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "%s%s%s(%s) >%s/.out 2>%s/.err", cd ? "cd " : "", cd ? dir : "", cd ? " && " : "", cmd,
             dir, dir);
    int st = system(full);
    snprintf(p, sizeof p, "%s/.out", dir);
    tu_slurp(p, out, osize);
    snprintf(p, sizeof p, "%s/.err", dir);
    tu_slurp(p, err, esize);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Why a test that runs a Python host skips in the sanitizer build. */
#define TU_SKIP_PYTHON_UNDER_SANITIZERS                                                                                \
    "SKIP: Python hosts are not run in the sanitizer build (an uninstrumented interpreter cannot load "                \
    "instrumented libraries); the plain build runs this test\n"

/* Line number of the first line of source holding marker. */
/* The report's headline: the line that starts with head (after the lines
 * that say how the program ended), or NULL. */
static inline __attribute__((unused)) const char *report_headline(const char *out, const char *head) {
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, head, strlen(head))) return p;
    return NULL;
}

/* Whether needle occurs on the line that starts at line. */
static inline __attribute__((unused)) int on_line(const char *line, const char *needle) {
    const char *hit = line ? strstr(line, needle) : NULL, *nl = line ? strchr(line, '\n') : NULL;
    return hit && (!nl || hit < nl);
}

static inline __attribute__((unused)) int marker_line(const char *source, const char *marker) {
    FILE *f = fopen(source, "r");
    ck_assert_msg(f != NULL, "cannot read %s", source);
    char line[1024];
    for (int n = 1; fgets(line, sizeof line, f); n++)
        if (strstr(line, marker)) {
            fclose(f);
            return n;
        }
    fclose(f);
    ck_abort_msg("no marker %s in %s", marker, source);
    return 0;
}

#define CPU     dt_cpu_device()
#define CUDA(i) dt_cuda_device(i)

/* Tensors a test made inline, freed by tu_teardown() after the test, so the
 * sanitizer build's leak check sees only the runtime's own leaks. */
static dt_tensor *tu_kept[8192];
static int tu_nkept;
static inline dt_tensor *K(dt_tensor *t) {
    if (t) {
        ck_assert_msg(tu_nkept < 8192, "too many kept tensors in one test");
        tu_kept[tu_nkept++] = t;
    }
    return t;
}
static inline void tu_teardown(void) {
    while (tu_nkept) dt_free(tu_kept[--tu_nkept]);
}

/* Failing calls return NULL / -1 instead of exiting (fixture for most tests). */
static inline void tu_catch_errors(void) {
    dt_set_error_handler(dt_error_handler_return, NULL, NULL);
    dt_clear_error();
}

/* Tensor from float / int64 literals: TF(dev, DT_SHAPE(2, 2), 1, 2, 3, 4). */
#define TF(dev, ...)                      tu_make_f32(dev, __VA_ARGS__)
#define TI(dev, ...)                      tu_make_i64(dev, __VA_ARGS__)
#define TB(dev, ...)                      tu_make_bool(dev, __VA_ARGS__)
#define tu_make_f32(dev, nd, shape, ...)  K(dt_from_data((const float[]){__VA_ARGS__}, DT_F32, nd, shape, dev))
#define tu_make_i64(dev, nd, shape, ...)  K(dt_from_data((const int64_t[]){__VA_ARGS__}, DT_I64, nd, shape, dev))
#define tu_make_bool(dev, nd, shape, ...) K(dt_from_data((const uint8_t[]){__VA_ARGS__}, DT_BOOL, nd, shape, dev))

/* Values of any tensor as doubles (malloc'd, n entries). */
static inline double *tu_values(const dt_tensor *t, int64_t *n) {
    *n = dt_numel(t);
    size_t esz = dt_dtype_size(dt_dtype_of(t));
    void *raw = malloc((size_t)(*n ? *n : 1) * esz);
    double *out = malloc(sizeof(double) * (size_t)(*n ? *n : 1));
    ck_assert_int_eq(dt_to_host(t, raw, (size_t)*n * esz), 0);
    for (int64_t i = 0; i < *n; i++) {
        switch (dt_dtype_of(t)) {
        case DT_F32: out[i] = ((float *)raw)[i]; break;
        case DT_I64: out[i] = (double)((int64_t *)raw)[i]; break;
        default: out[i] = ((uint8_t *)raw)[i]; break;
        }
    }
    free(raw);
    return out;
}

#define EXPECT_SHAPE(t, ...)                                                                                           \
    do {                                                                                                               \
        const int64_t want_[] = {__VA_ARGS__};                                                                         \
        int nd_ = (int)(sizeof want_ / sizeof want_[0]);                                                               \
        ck_assert_msg((t) != NULL, "tensor is NULL: %s", dt_last_error());                                             \
        ck_assert_int_eq(dt_ndim(t), nd_);                                                                             \
        for (int i_ = 0; i_ < nd_; i_++) ck_assert_int_eq(dt_shape(t)[i_], want_[i_]);                                 \
    } while (0)

#define EXPECT_VALUES(t, ...)                                                                                          \
    do {                                                                                                               \
        const double want_[] = {__VA_ARGS__};                                                                          \
        tu_expect_values((t), want_, (int64_t)(sizeof want_ / sizeof want_[0]), 1e-5, __FILE__, __LINE__);             \
    } while (0)

static inline void tu_expect_values(const dt_tensor *t, const double *want, int64_t n, double tol, const char *file,
                                    int line) {
    ck_assert_msg(t != NULL, "%s:%d: tensor is NULL: %s", file, line, dt_last_error());
    int64_t got_n;
    double *got = tu_values(t, &got_n);
    ck_assert_msg(got_n == n, "%s:%d: %lld values, expected %lld", file, line, (long long)got_n, (long long)n);
    for (int64_t i = 0; i < n; i++) {
        int same = (isnan(want[i]) && isnan(got[i])) || fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])) ||
                   (isinf(want[i]) && got[i] == want[i]);
        ck_assert_msg(same, "%s:%d: element %lld is %.9g, expected %.9g", file, line, (long long)i, got[i], want[i]);
    }
    free(got);
}

/* The last error mentions each of the given substrings. */
#define EXPECT_ERROR(kind, ...)                                                                                        \
    do {                                                                                                               \
        const char *parts_[] = {__VA_ARGS__};                                                                          \
        ck_assert_int_eq(dt_last_error_kind(), kind);                                                                  \
        for (size_t p_ = 0; p_ < sizeof parts_ / sizeof parts_[0]; p_++)                                               \
            ck_assert_msg(strstr(dt_last_error(), parts_[p_]) != NULL, "error \"%s\" lacks \"%s\"", dt_last_error(),   \
                          parts_[p_]);                                                                                 \
        dt_clear_error();                                                                                              \
    } while (0)

#endif /* DEVTRACE_TESTUTIL_H */
