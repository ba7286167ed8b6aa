/* bug_padding_mask: "The attention mask from our utils breaks on the GPU."
 * A helper shared across the project builds a padding mask from each
 * sequence's length: positions (arange, made without a device) compared
 * with the lengths the data loader returned, both on the CPU. The scores it
 * masks were computed on the GPU. The helper has no device of its own to
 * follow (its inputs are on the CPU), so a device written into it would pin
 * one: fix: move the mask where the caller receives it, with the program's
 * own device (or pass the helper a device and build it there). */
#include "example.h"

#define BATCH 8
#define SEQ   6
#define DIM   4

/* true where a position is past its sequence's length: padding */
static dt_tensor *padding_mask(const dt_tensor *lengths, int64_t seq) {
    dt_tensor *pos = must(dt_arange(0, (double)seq, 1, DT_I64, dt_cpu_device())); /* devtrace: origin */
    dt_tensor *row = must(dt_unsqueeze(pos, 0));
    dt_tensor *col = must(dt_unsqueeze(lengths, 1));
    dt_tensor *mask = must(dt_ge(row, col));
    dt_free(col), dt_free(row), dt_free(pos);
    return mask;
}

int main(void) {
    dt_device dev = example_device();
    dt_module *proj = must(dt_nn_linear(DIM, 1, 0));
    dt_module_to(proj, dev);
    for (int step = 1; step <= 3; step++) {
        dt_tensor *tokens = must(dt_randn(DT_SHAPE(BATCH, SEQ, DIM), dt_cpu_device()));
        dt_tensor *lengths = must(dt_randint(1, SEQ + 1, DT_SHAPE(BATCH), dt_cpu_device()));
        dt_tensor *x = must(dt_to(tokens, dev));
        dt_tensor *s3 = must(dt_module_forward(proj, x)); /* (B, T, 1) */
        dt_tensor *scores = must(dt_squeeze(s3, 2));
        dt_tensor *mask = padding_mask(lengths, SEQ); /* devtrace: fix */
        dt_tensor *masked = must(dt_masked_fill(scores, mask, -1e9));
        dt_tensor *attn = must(dt_softmax(masked, 1));
        dt_tensor *m = must(dt_max(attn));
        printf("step %d: largest weight %.4f\n", step, dt_item(m));
        dt_free(m), dt_free(attn), dt_free(masked), dt_free(mask), dt_free(scores), dt_free(s3);
        dt_free(x), dt_free(lengths), dt_free(tokens);
    }
    dt_module_free(proj);
    return 0;
}
