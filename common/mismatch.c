/* Recognises a device-mismatch error message and pulls its two devices (and
 * the argument it names, when it names one) out of it. The texts are the
 * ones PyTorch has raised over the years, and this runtime's own (which
 * copies PyTorch's current form):
 *   "Expected all tensors to be on the same device, but found at least two
 *    devices, cuda:0 and cpu! (when checking argument for argument mat1 in
 *    method wrapper_addmm)"       (1.6 to 2.0; mat1 is the one on cpu; some
 *                                  versions spell it "arugment for argument")
 *   "Expected all tensors to be on the same device, but got mat1 is on cpu,
 *    different from other tensors on cuda:0 (when checking argument in
 *    method wrapper_CUDA_addmm)"                                        (2.1+)
 *   "Expected object of device type cuda but got device type cpu for
 *    argument #1 'self' in call to _th_addmm"                      (1.0 to 1.4)
 *   "Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU
 *    (while checking arguments for addmm)"                         (1.5 to 1.9)
 *   "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor)
 *    should be the same"                         (convolutions, every version)
 *   "Expected all tensors to be on the same device. Found: cuda:0, cpu"
 *   "expected device cuda:0 but got device cpu"
 *   "Input and hidden tensors are not at the same device, found input tensor
 *    at cuda:0 and hidden tensor at cpu"                (RNNs; and "parameter")
 *   "expected self and mask to be on the same device, but got mask on cpu and
 *    self on cuda:0"                         (masked_fill and kin, 2.x kernels)
 *   "Expected tensor to have cuda:0 Device, but got tensor with cpu Device
 *    (while checking arguments for torch.take_along_dim():)" (checkDevice and
 *    checkDeviceType of ATen/TensorUtils.cpp, "DeviceType" there)
 *   "Expected tensor for argument #1 'input' to have the same device as tensor
 *    for argument #2 'weight'; but device 1 does not equal 0 (while checking
 *    arguments for cudnn_convolution)"   (checkSameGPU/checkSameDevice: a bare
 *                                          number is a GPU; "device type" too)
 *   "Expected a 'cuda' device type for generator but found 'cpu'"
 * tests/adapters/data/torch2.11-device-errors.txt holds every text PyTorch 2.11 gave
 * for a one-op mismatch on a GPU; the unit test feeds each row through here.
 * The message is untrusted (it comes from the traced program): every read
 * is bounded by len, and the outputs are always terminated. Used by the
 * writer thread, never on a producer path. */
#include "mismatch.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Finds needle in [s, s+len), case-insensitively; NULL when absent. */
static const char *find(const char *s, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (strncasecmp(s + i, needle, n) == 0) return s + i;
    return NULL;
}

/* Copies a device token at p ("cuda:0", "cpu", "meta", "xla:1", "CPU",
 * "GPU") into out, lower-cased, GPU spelt cuda; returns its length, 0 when
 * there is none. */
static size_t device_at(const char *p, const char *end, char *out, size_t size) {
    size_t n = 0;
    if (p < end && (isdigit((unsigned char)*p) || (*p == '-' && p + 1 < end && p[1] == '1'))) {
        /* checkSameGPU's "device 1 does not equal 0" (1.x): an ordinal is a GPU's, -1 the cpu */
        if (*p == '-') {
            snprintf(out, size, "cpu");
            return 2;
        }
        while (p + n < end && isdigit((unsigned char)p[n])) n++;
        snprintf(out, size, "cuda:%.*s", (int)(n < 8 ? n : 8), p);
        return n;
    }
    while (p + n < end && (isalpha((unsigned char)p[n]) || p[n] == '_')) n++;
    if (n == 0) return 0;
    size_t m = n;
    if (p + m < end && p[m] == ':' && p + m + 1 < end && isdigit((unsigned char)p[m + 1])) {
        m++;
        while (p + m < end && isdigit((unsigned char)p[m])) m++;
    }
    if (n == 3 && strncasecmp(p, "gpu", 3) == 0) {
        snprintf(out, size, "cuda");
    } else {
        size_t k = m < size - 1 ? m : size - 1;
        for (size_t i = 0; i < k; i++) out[i] = (char)tolower((unsigned char)p[i]);
        out[k] = 0;
    }
    return m;
}

/* The device a legacy type name stands for: "torch.cuda.FloatTensor" and
 * "CUDAFloatType" are cuda, "torch.FloatTensor" and "CPUFloatType" cpu. */
static void legacy_type_device(const char *p, const char *end, char *out, size_t size) {
    size_t n = 0;
    while (p + n < end && p[n] != ')') n++;
    if (find(p, n, "cuda"))
        snprintf(out, size, "cuda");
    else if (find(p, n, "mps"))
        snprintf(out, size, "mps");
    else if (find(p, n, "xla"))
        snprintf(out, size, "xla");
    else
        snprintf(out, size, "cpu");
}

/* Copies the first 'quoted' word after `after` into out ("" when none). */
static void quoted_after(const char *s, const char *end, const char *after, char *out, size_t size) {
    const char *p = find(s, (size_t)(end - s), after), *open, *close;
    out[0] = 0;
    if (!p || !(open = memchr(p, '\'', (size_t)(end - p))) ||
        !(close = memchr(open + 1, '\'', (size_t)(end - open - 1))))
        return;
    size_t n = (size_t)(close - open - 1) < size - 1 ? (size_t)(close - open - 1) : size - 1;
    memcpy(out, open + 1, n);
    out[n] = 0;
}

/* Copies the word after `after`, up to a space or ')', into out. */
static void word_after(const char *s, const char *end, const char *after, char *out, size_t size) {
    const char *p = find(s, (size_t)(end - s), after);
    out[0] = 0;
    if (!p) return;
    p += strlen(after);
    size_t n = 0;
    while (p + n < end && p[n] != ' ' && p[n] != ')') n++;
    if (n >= size) n = size - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

int dt_parse_mismatch(const char *msg, size_t len, struct dt_mismatch *m) {
    const char *end = msg + len, *p, *q0 = NULL;
    memset(m, 0, sizeof *m);
    const size_t D = sizeof m->a;
    if ((p = find(msg, len, "but found at least two devices, "))) {
        /* "..., COMMON and OTHER! (when checking argument for argument ARG in method ...)": the device of the
         * operands checked so far, then the first one found elsewhere, which ARG names (1.6 to 2.0 print
         * "arugment for argument" too) */
        p += strlen("but found at least two devices, ");
        size_t n = device_at(p, end, m->b, D);
        if (!n || !(p = find(p + n, (size_t)(end - p - n), " and "))) return 0;
        if (!device_at(p + 5, end, m->a, D)) return 0;
        const char *when = find(p, (size_t)(end - p), "(when checking ");
        if (when) word_after(when, end, " for argument ", m->arg, sizeof m->arg);
        return 1;
    }
    if ((p = find(msg, len, "on the same device, but got ")) && find(msg, len, " is on ")) {
        /* "... but got ARG is on DEV, different from other tensors on DEV2" */
        const char *arg = p + strlen("on the same device, but got ");
        const char *is = find(arg, (size_t)(end - arg), " is on ");
        const char *other = find(arg, (size_t)(end - arg), "different from other tensors on ");
        if (!is || !other) return 0;
        size_t an = (size_t)(is - arg) < sizeof m->arg - 1 ? (size_t)(is - arg) : sizeof m->arg - 1;
        memcpy(m->arg, arg, an);
        m->arg[an] = 0;
        if (!device_at(is + 7, end, m->a, D)) return 0;
        return device_at(other + strlen("different from other tensors on "), end, m->b, D) ? 1 : 0;
    }
    if ((p = find(msg, len, "on the same device. Found: "))) {
        p += strlen("on the same device. Found: ");
        size_t n = device_at(p, end, m->a, D);
        if (!n || p + n + 2 > end || p[n] != ',') return 0;
        return device_at(p + n + 2, end, m->b, D) ? 1 : 0;
    }
    if ((p = find(msg, len, "Expected object of device type "))) {
        /* "... of device type cuda but got device type cpu for argument #1 'self' in call to ..." */
        p += strlen("Expected object of device type ");
        size_t n = device_at(p, end, m->b, D); /* expected: the peers' device */
        const char *q = n ? find(p + n, (size_t)(end - p - n), "but got device type ") : NULL;
        if (!q || !device_at(q + strlen("but got device type "), end, m->a, D)) return 0;
        quoted_after(msg, end, "for argument #", m->arg, sizeof m->arg);
        return 1;
    }
    if ((p = find(msg, len, "' is on ")) && find(msg, len, "Tensor for ")) {
        /* "Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU (...)" */
        const char *q = device_at(p + 8, end, m->a, D) ? find(p, (size_t)(end - p), "expected it to be on ") : NULL;
        if (q)
            q += strlen("expected it to be on ");
        else if ((q = find(p, (size_t)(end - p), "expected them to be on ")))
            q += strlen("expected them to be on ");
        if (!q || !device_at(q, end, m->b, D)) return 0;
        quoted_after(msg, end, "Tensor for ", m->arg, sizeof m->arg);
        return 1;
    }
    if ((p = find(msg, len, "Input type (")) && find(msg, len, "should be the same")) {
        const char *w = find(p, (size_t)(end - p), " type (");
        w = w ? find(w + 7, (size_t)(end - w - 7), " type (") : NULL; /* the second one: weight or bias */
        if (!w) return 0;
        legacy_type_device(p + strlen("Input type ("), end, m->a, D);
        legacy_type_device(w + 7, end, m->b, D);
        if (strcmp(m->a, m->b) == 0) return 0; /* a dtype mismatch, not a device one */
        snprintf(m->arg, sizeof m->arg, "input");
        return 1;
    }
    if ((p = find(msg, len, "Input and hidden tensors are not at the same device, found input tensor at ")) ||
        (q0 = find(msg, len, "Input and parameter tensors are not at the same device, found input tensor at "))) {
        /* RNNs: "... found input tensor at cuda:0 and hidden tensor at cpu" (the state, hx, is the usual
         * culprit: a torch.zeros in forward); "... and parameter tensor at cuda:0" (the input is) */
        int hidden = p != NULL;
        p = hidden ? p : q0;
        p = find(p, (size_t)(end - p), " found input tensor at ") + strlen(" found input tensor at ");
        char in[32];
        size_t n = device_at(p, end, in, sizeof in);
        const char *q =
            n ? find(p + n, (size_t)(end - p - n), hidden ? " hidden tensor at " : " parameter tensor at ") : NULL;
        char other[32];
        if (!q ||
            !device_at(q + strlen(hidden ? " hidden tensor at " : " parameter tensor at "), end, other, sizeof other))
            return 0;
        snprintf(m->a, D, "%s", hidden ? other : in);
        snprintf(m->b, D, "%s", hidden ? in : other);
        snprintf(m->arg, sizeof m->arg, "%s", hidden ? "hx" : "input");
        return 1;
    }
    if ((p = find(msg, len, "to be on the same device, but got ")) && find(msg, len, "expected ")) {
        /* "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0": the
         * one named first after "but got" is the odd one */
        const char *arg = p + strlen("to be on the same device, but got ");
        const char *on = find(arg, (size_t)(end - arg), " on ");
        const char *and = on ? find(on + 4, (size_t)(end - on - 4), " and ") : NULL;
        const char *on2 = and? find(and+5, (size_t)(end - and-5), " on ") : NULL;
        if (!on2 || !device_at(on + 4, end, m->a, D) || !device_at(on2 + 4, end, m->b, D)) return 0;
        size_t an = (size_t)(on - arg) < sizeof m->arg - 1 ? (size_t)(on - arg) : sizeof m->arg - 1;
        memcpy(m->arg, arg, an);
        m->arg[an] = 0;
        return 1;
    }
    if ((p = find(msg, len, "Expected tensor to have "))) {
        /* "Expected tensor to have cuda:0 Device, but got tensor with cpu Device (...)" (and "DeviceType") */
        p += strlen("Expected tensor to have ");
        size_t n = device_at(p, end, m->b, D);
        const char *q = n ? find(p + n, (size_t)(end - p - n), "but got tensor with ") : NULL;
        if (!q || !device_at(q + strlen("but got tensor with "), end, m->a, D)) return 0;
        return 1;
    }
    if ((p = find(msg, len, "' to have the same device")) && find(msg, len, "Expected tensor for ")) {
        /* "Expected tensor for argument #1 'input' to have the same device as tensor for argument #2
         * 'weight'; but device 1 does not equal 0 (...)": the first named is the odd one ("device type"
         * in checkSameDeviceType, "'out'" without a number in some) */
        const char *q = find(p, (size_t)(end - p), "; but device ");
        if (!q) return 0;
        q += strlen("; but device ");
        if ((size_t)(end - q) > 5 && strncmp(q, "type ", 5) == 0) q += 5;
        size_t n = device_at(q, end, m->a, D);
        const char *r = n ? find(q + n, (size_t)(end - q - n), " does not equal ") : NULL;
        if (!r || !device_at(r + strlen(" does not equal "), end, m->b, D)) return 0;
        quoted_after(msg, end, "Expected tensor for ", m->arg, sizeof m->arg);
        return 1;
    }
    if ((p = find(msg, len, "Expected a '")) && find(msg, len, "' device type for generator but found '")) {
        /* "Expected a 'cuda' device type for generator but found 'cpu'" */
        const char *q = find(msg, len, "' device type for generator but found '");
        if (!device_at(p + strlen("Expected a '"), end, m->b, D) ||
            !device_at(q + strlen("' device type for generator but found '"), end, m->a, D))
            return 0;
        snprintf(m->arg, sizeof m->arg, "generator");
        return 1;
    }
    if ((p = find(msg, len, "expected device "))) {
        p += strlen("expected device ");
        size_t n = device_at(p, end, m->b, D);
        const char *q = n ? find(p + n, (size_t)(end - p - n), "but got device ") : NULL;
        if (!q || !device_at(q + strlen("but got device "), end, m->a, D)) return 0;
        return 1;
    }
    return 0;
}
