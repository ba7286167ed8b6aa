// rule: derived-from-unmoved
// A GAN's training step in the shape of pytorch/examples' cpp/dcgan: generator and discriminator on the
// device, real batches moved there, but the instance noise added to the real images made with
// torch::randn without the device's options, so the addition sees two devices. `device` is torch::kMeta,
// standing in for torch::kCUDA. --clean makes the noise on the device.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>

static const int64_t kNoiseSize = 8;

// A two-layer perceptron with its parameters made on the device: libtorch 1.13's Module::to cannot take
// a cpu parameter to the meta device (set_data refuses a tensor of another backend), as it would to a GPU.
struct MlpImpl : torch::nn::Module {
    MlpImpl(int64_t in, int64_t hidden, int64_t out, torch::Device device) {
        auto options = torch::TensorOptions().device(device);
        w1 = register_parameter("w1", torch::randn({in, hidden}, options));
        w2 = register_parameter("w2", torch::randn({hidden, out}, options));
    }
    torch::Tensor forward(torch::Tensor x) { return torch::tanh(x.mm(w1)).mm(w2); }
    torch::Tensor w1, w2;
};
TORCH_MODULE(Mlp);

int main(int argc, char **argv) {
    bool clean = argc > 1 && !std::strcmp(argv[1], "--clean");
    torch::manual_seed(1);
    torch::Device device(torch::kMeta); // stands in for torch::kCUDA
    Mlp generator(kNoiseSize, 32, 16, device), discriminator(16, 32, 1, device);
    torch::optim::Adam g_opt(generator->parameters(), torch::optim::AdamOptions(2e-4));
    torch::optim::Adam d_opt(discriminator->parameters(), torch::optim::AdamOptions(2e-4));
    const int64_t batch_size = 16;
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
        torch::Tensor real_images = torch::rand({batch_size, 16}).to(device);
        torch::Tensor noise = torch::randn({batch_size, 16});
        if (clean) noise = noise.to(device);
        torch::Tensor noisy_images = real_images + 0.1 * noise; /* devtrace: fails here */
        torch::Tensor real_labels = torch::ones(batch_size, device);
        discriminator->zero_grad();
        torch::Tensor real_output = torch::sigmoid(discriminator->forward(noisy_images)).reshape({batch_size});
        torch::Tensor d_loss_real = (real_output - real_labels).pow(2).sum();
        d_loss_real.backward();

        torch::Tensor z = torch::randn({batch_size, kNoiseSize}, device);
        torch::Tensor fake_images = torch::tanh(generator->forward(z));
        torch::Tensor fake_labels = torch::zeros(batch_size, device);
        torch::Tensor fake_output = torch::sigmoid(discriminator->forward(fake_images.detach())).reshape({batch_size});
        torch::Tensor d_loss_fake = (fake_output - fake_labels).pow(2).sum();
        d_loss_fake.backward();
        d_opt.step();

        generator->zero_grad();
        fake_output = torch::sigmoid(discriminator->forward(fake_images)).reshape({batch_size});
        torch::Tensor g_loss = (fake_output - real_labels).pow(2).sum();
        g_loss.backward();
        g_opt.step();
    }
    std::printf("trained on %s\n", device.str().c_str());
    return 0;
}
