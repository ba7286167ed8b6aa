// rule: never-moved
// A custom dataset's pipeline in the shape of pytorch/examples' cpp/custom-dataset: images moved to the
// device in the loop, then normalized by a helper whose mean and std constants are made on the cpu, so
// the subtraction sees two devices. `device` is torch::kMeta, standing in for torch::kCUDA. --clean
// makes the constants on the image's device.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>

static bool clean = false;

static torch::Tensor normalize(const torch::Tensor &image) {
    torch::Tensor mean = torch::tensor({0.485, 0.456, 0.406}, torch::kFloat).view({3, 1, 1});
    torch::Tensor std = torch::tensor({0.229, 0.224, 0.225}, torch::kFloat).view({3, 1, 1});
    if (clean) mean = mean.to(image.device()), std = std.to(image.device());
    return (image - mean) / std; /* devtrace: fails here */
}

// A linear classifier with its parameters made on the device: libtorch 1.13's Module::to cannot take a cpu
// parameter to the meta device (set_data refuses a tensor of another backend), as it would to a GPU.
struct ClassifierImpl : torch::nn::Module {
    ClassifierImpl(int64_t in, int64_t out, torch::Device device) {
        weight = register_parameter("weight", torch::randn({in, out}, torch::TensorOptions().device(device)));
    }
    torch::Tensor forward(torch::Tensor x) { return x.mm(weight); }
    torch::Tensor weight;
};
TORCH_MODULE(Classifier);

int main(int argc, char **argv) {
    clean = argc > 1 && !std::strcmp(argv[1], "--clean");
    torch::manual_seed(1);
    torch::Device device(torch::kMeta); // stands in for torch::kCUDA
    Classifier net(3 * 8 * 8, 2, device);
    torch::optim::SGD optimizer(net->parameters(), 0.01);
    for (int step = 0; step < 3; ++step) {
        auto images = torch::rand({4, 3, 8, 8}).to(device);
        auto labels = torch::randint(0, 2, {4}).to(device);
        optimizer.zero_grad();
        auto output = net->forward(normalize(images).flatten(1));
        auto loss = torch::cross_entropy_loss(output, labels);
        loss.backward();
        optimizer.step();
    }
    std::printf("trained on %s\n", device.str().c_str());
    return 0;
}
