// A C++ program on libdtrt for tests/tracer/c_facts_check.sh: its facts say c++, find a function in a
// namespace, and its patch moves an operand declared before the peer's move (in scope there) with the C
// API, as the program moves its own tensors. Keep the line numbers when editing.
#include <devtrace/dt.h>
#include <cstdio>

namespace app {
static dt_tensor *make(dt_device where) {
    const int64_t shape[1] = {4};
    float data[4] = {1, 2, 3, 4};
    dt_tensor *t = dt_from_data(data, DT_F32, 1, shape, where);
    return t;
}
} // namespace app

int main() {
    dt_device dev = dt_default_device();
    dt_tensor *a = app::make(dt_cpu_device());
    dt_tensor *b = dt_to(a, dev);
    dt_tensor *c = dt_add(b, a); // a is on the cpu, b on dev: fails on a GPU
    std::printf("%s\n", c ? "ok" : "failed");
    return 0;
}

// The operators and the operands each binds, for the statement reader's operator facts (args "operatorSYM"):
// only names the operator takes by precedence, so p + q * r records q * r and not p + q.
int app_operators(int p, int q, int r) {
    int s = p - q;
    int u = p + q * r;
    int w = p * q / r;
    return (s - u) / w;
}
