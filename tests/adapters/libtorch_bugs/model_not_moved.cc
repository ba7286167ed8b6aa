// rule: module-never-moved
// A regression in the shape of pytorch/examples' cpp/regression: a polynomial's coefficients fitted to
// batches the loop moves to the device, by a model that is never moved there (`model->to(device)` is
// missing), so its forward sees two devices. `device` is torch::kMeta, standing in for torch::kCUDA.
// --clean moves the model, which libtorch 1.13 refuses for the meta device (Module::to's set_data takes
// no tensor of another backend): the fix can be checked to compile here, to run only on a GPU.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>

static const int64_t kDegree = 4;

// A batch of x^1..x^4 features and the target polynomial's values.
static std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor &w, const torch::Tensor &b,
                                                         int64_t batch_size) {
    auto x = torch::randn({batch_size}).unsqueeze(1);
    auto features = torch::cat({x, x.pow(2), x.pow(3), x.pow(4)}, 1);
    auto y = (features * w).sum(1) + b;
    return {features, y};
}

// y = sum_i w_i x^i + b, one coefficient per feature.
struct PolynomialImpl : torch::nn::Module {
    PolynomialImpl() {
        weight = register_parameter("weight", torch::zeros({kDegree}));
        bias = register_parameter("bias", torch::zeros({1}));
    }
    torch::Tensor forward(const torch::Tensor &features) { return (features * weight).sum(1) + bias; }
    torch::Tensor weight, bias;
};
TORCH_MODULE(Polynomial);

int main(int argc, char **argv) {
    bool clean = argc > 1 && !std::strcmp(argv[1], "--clean");
    torch::manual_seed(1);
    torch::Device device(torch::kMeta); // stands in for torch::kCUDA
    auto w_target = torch::randn({kDegree}) * 5;
    auto b_target = torch::randn({1}) * 5;
    Polynomial model;
    if (clean) model->to(device);
    torch::optim::SGD optim(model->parameters(), 0.1);
    for (int64_t batch_idx = 0; batch_idx < 4; ++batch_idx) {
        torch::Tensor batch_x, batch_y;
        std::tie(batch_x, batch_y) = get_batch(w_target, b_target, 32);
        batch_x = batch_x.to(device);
        batch_y = batch_y.to(device);
        optim.zero_grad();
        auto output = model->forward(batch_x); /* devtrace: fails here */
        auto loss = (output - batch_y).pow(2).sum();
        loss.backward();
        optim.step();
    }
    std::printf("trained on %s\n", device.str().c_str());
    return 0;
}
