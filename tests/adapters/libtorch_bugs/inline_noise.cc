// rule: derived-from-unmoved
// A denoising autoencoder's training loop: batches moved to the device, then corrupted with noise made
// by torch::randn inside the expression that adds it, without the device's options, so the addition sees
// two devices and no name holds the noise. `device` is torch::kMeta, standing in for torch::kCUDA.
// --clean trains without the noise.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>

// Encoder and decoder weights made on the device: libtorch 1.13's Module::to cannot take a cpu parameter
// to the meta device (set_data refuses a tensor of another backend), as it would to a GPU.
struct AutoencoderImpl : torch::nn::Module {
    AutoencoderImpl(int64_t n, int64_t code, torch::Device device) {
        auto options = torch::TensorOptions().device(device);
        enc = register_parameter("enc", torch::randn({n, code}, options));
        dec = register_parameter("dec", torch::randn({code, n}, options));
    }
    torch::Tensor forward(const torch::Tensor &x) { return torch::tanh(x.mm(enc)).mm(dec); }
    torch::Tensor enc, dec;
};
TORCH_MODULE(Autoencoder);

int main(int argc, char **argv) {
    bool clean = argc > 1 && !std::strcmp(argv[1], "--clean");
    torch::manual_seed(1);
    torch::Device device(torch::kMeta); // stands in for torch::kCUDA
    Autoencoder model(16, 4, device);
    torch::optim::SGD optimizer(model->parameters(), 0.01);
    for (int step = 0; step < 3; ++step) {
        torch::Tensor images = torch::rand({8, 16}).to(device);
        torch::Tensor noisy = clean ? images : images + 0.2 * torch::randn({8, 16}); /* devtrace: fails here */
        optimizer.zero_grad();
        torch::Tensor loss = (model->forward(noisy) - images).pow(2).sum();
        loss.backward();
        optimizer.step();
    }
    std::printf("trained on %s\n", device.str().c_str());
    return 0;
}
