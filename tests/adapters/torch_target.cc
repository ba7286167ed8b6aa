// A libtorch program with a device-placement bug, as a user writes one: a
// bias made on the cpu in one helper, the input and the weights moved to
// the meta device (standing in for a GPU) in another, and `out + b` dies
// with libtorch's uncaught c10::Error. With --clean the bias is moved too,
// the result is viewed in another shape, and the program ends well. With
// --batch a template's batch leaves its targets on the cpu (--worker: a batch
// collated on other threads; --list: the bias made by torch::tensor;
// --wrap: libtorch's error caught and thrown again in a runtime_error, as
// the TorchScript interpreter does). Built
// -O1 -g: libtorch's inline operators are inlined into the helpers.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <future>
#include <stdexcept>
#include <string>

static torch::Tensor make_bias(int64_t n) { return torch::zeros({n}); /* devtrace: origin */ }

// --list: the bias written out, as class weights are: torch::tensor fills an
// empty() and returns a copy of its TensorImpl, made outside any op.
static torch::Tensor make_listed_bias() { return torch::tensor({0.f, 0.f, 0.f, 0.f}); /* devtrace: listed */ }

static torch::Tensor forward(const torch::Tensor &x, const torch::Tensor &w, const torch::Tensor &b) {
    torch::Tensor xm = x.to(torch::kMeta); /* devtrace: input moved */
    torch::Tensor wm = w.to(torch::kMeta);
    torch::Tensor out = torch::matmul(xm, wm);
    return out + b; /* devtrace: fails here */
}

// --batch: a training step as a template on its data, as C++ training loops
// are written: the batch's data is moved, its targets are not. --worker:
// the batch is collated on another thread by library code alone, as a
// DataLoader's workers do (no frame of this file on that thread's stack).
template <typename Batches>
static torch::Tensor train_step(const Batches &batches, const torch::Tensor &w, torch::Device device, bool worker) {
    auto batch = std::make_pair(torch::stack({batches[0].first, batches[1].first}), /* devtrace: batch made */
                                torch::stack({batches[0].second, batches[1].second}));
    if (worker) {
        at::Tensor (*collate)(at::TensorList, int64_t) = torch::stack;
        auto data = std::async(std::launch::async, collate, std::vector<torch::Tensor>{batches[0].first}, 0);
        auto targets = std::async(std::launch::async, collate, std::vector<torch::Tensor>{batches[0].second}, 0);
        batch = std::make_pair(data.get(), targets.get());
    }
    auto data = batch.first.to(device), targets = batch.second; /* devtrace: batch moved */
    return w * data - targets;                                  /* devtrace: batch fails */
}

// --wrap: libtorch's error caught and thrown again, with context
static torch::Tensor add_wrapped(const torch::Tensor &a, const torch::Tensor &b) {
    try {
        return a + b; /* devtrace: wrapped fails */
    } catch (const c10::Error &e) {
        throw std::runtime_error(std::string("add failed: ") + e.what_without_backtrace());
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && !std::strcmp(argv[1], "--wrap")) add_wrapped(torch::ones({3}).to(torch::kMeta), torch::zeros({3}));
    if (argc > 1 && (!std::strcmp(argv[1], "--batch") || !std::strcmp(argv[1], "--worker"))) {
        std::vector<std::pair<torch::Tensor, torch::Tensor>> batches(2, {torch::ones({3}), torch::ones({3})});
        torch::Tensor w = torch::full({2, 3}, 0.5).to(torch::kMeta);
        torch::Tensor d = train_step(batches, w, torch::Device(torch::kMeta), !std::strcmp(argv[1], "--worker"));
        std::printf("out: %s\n", d.device().str().c_str());
        return 0;
    }
    bool clean = argc > 1 && !std::strcmp(argv[1], "--clean");
    torch::Tensor x = torch::ones({2, 3});
    torch::Tensor w = torch::randn({3, 4});
    torch::Tensor b = argc > 1 && !std::strcmp(argv[1], "--list") ? make_listed_bias() : make_bias(4); /* devtrace: fix */
    if (clean) b = b.to(torch::kMeta);
    torch::Tensor y = forward(x, w, b); /* devtrace: calls forward */
    if (clean) y = y.view({4, 2});      /* a view of the result */
    std::printf("out: %s %s\n", y.device().str().c_str(),
                y.sizes().vec() == std::vector<int64_t>{4, 2} ? "[4, 2]" : "[2, 4]");
    return 0;
}
