/* bug_token_ids: "The embedding layer says its indices are on the wrong
 * device." A toy tokenizer turns each sentence into token ids; it builds the
 * id tensor from a plain array, on the CPU, as tokenizers do. The model,
 * embedding included, was moved to the GPU, and the ids go straight in.
 * Fix: move the ids to the device right after tokenizing. */
#include "example.h"

#include <string.h>

#define VOCAB 32
#define DIM   8
#define LEN   6

/* Token ids of the first LEN words (hash of each word), padded with 0. */
static dt_tensor *tokenize(const char *sentence) {
    int64_t ids[LEN] = {0};
    int n = 0;
    for (const char *p = sentence; *p && n < LEN;) {
        size_t w = strcspn(p, " ");
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < w; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
        if (w) ids[n++] = 1 + (int64_t)(h % (VOCAB - 1));
        p += w + (p[w] == ' ');
    }
    return must(dt_from_data(ids, DT_I64, DT_SHAPE(LEN), dt_cpu_device())); /* devtrace: origin */
}

int main(void) {
    dt_device dev = example_device();
    dt_module *embed = must(dt_nn_embedding(VOCAB, DIM));
    dt_module_to(embed, dev);
    const char *sentences[] = {"the model is on the gpu", "the ids are not", "so the lookup fails"};
    for (int i = 0; i < 3; i++) {
        dt_tensor *ids = tokenize(sentences[i]); /* devtrace: fix */
        dt_set_name(ids, "token_ids");
        dt_tensor *vectors = must(dt_module_forward(embed, ids));
        dt_tensor *pooled = must(dt_mean(vectors));
        printf("sentence %d: mean embedding %.4f\n", i, dt_item(pooled));
        dt_free(pooled), dt_free(vectors), dt_free(ids);
    }
    dt_module_free(embed);
    return 0;
}
