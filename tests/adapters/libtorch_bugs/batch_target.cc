// rule: peer-moved-from-same-source
// A libtorch training loop in the shape of pytorch/examples' cpp/mnist: a dataset of the program's own,
// a data loader over its stacked batches, and a loop that moves each batch's data to the device but
// leaves its targets on the cpu, so counting the correct predictions sees two devices. `device` is torch::kMeta,
// standing in for torch::kCUDA (ops mixing meta and cpu tensors fail as cuda and cpu ones do). --clean moves the
// targets.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>

// Random images of 16 values and their class, made once.
class RandomDigits : public torch::data::datasets::Dataset<RandomDigits> {
  public:
    explicit RandomDigits(int64_t n) : images_(torch::randn({n, 16})), labels_(torch::randint(0, 4, {n})) {}
    torch::data::Example<> get(size_t index) override { return {images_[index], labels_[index]}; }
    torch::optional<size_t> size() const override { return images_.size(0); }

  private:
    torch::Tensor images_, labels_;
};

// Its parameters made on the device: libtorch 1.13's Module::to cannot take a cpu parameter to the meta
// device (set_data refuses a tensor of another backend), where it would take it to a GPU.
struct Net : torch::nn::Module {
    explicit Net(torch::Device device) {
        auto options = torch::TensorOptions().device(device);
        w1 = register_parameter("w1", torch::randn({16, 32}, options));
        w2 = register_parameter("w2", torch::randn({32, 4}, options));
    }
    torch::Tensor forward(torch::Tensor x) { return torch::log_softmax(torch::tanh(x.mm(w1)).mm(w2), 1); }
    torch::Tensor w1, w2;
};

template <typename DataLoader>
static void train(Net &model, torch::Device device, DataLoader &data_loader, torch::optim::Optimizer &optimizer,
                  bool clean) {
    model.train();
    size_t batch_idx = 0;
    torch::Tensor correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
    for (auto &batch : data_loader) {
        auto data = batch.data.to(device), targets = batch.target;
        if (clean) targets = targets.to(device);
        optimizer.zero_grad();
        auto output = model.forward(data);
        auto loss = torch::nll_loss(output, targets);
        loss.backward();
        optimizer.step();
        correct += output.argmax(1)
                       .eq(targets)
                       .sum(); /* devtrace: fails here (libtorch 1.13 checks no device in nll_loss on meta) */
        batch_idx++;
    }
    std::printf("trained %zu batches on %s\n", batch_idx, device.str().c_str());
}

int main(int argc, char **argv) {
    bool clean = argc > 1 && !std::strcmp(argv[1], "--clean");
    torch::manual_seed(1);
    torch::Device device(torch::kMeta); // stands in for torch::kCUDA
    Net model(device);
    auto dataset = RandomDigits(64).map(torch::data::transforms::Stack<>());
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(dataset), 16);
    torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
    train(model, device, *loader, optimizer, clean);
    return 0;
}
