// C++ throws for the interposition tests: 20 throws from one site (16 are
// recorded), a rethrow of a PyTorch 1.x-style device-mismatch message, an
// exception whose std::exception base is not at offset 0, and a non-class
// type. Output is the same traced and untraced.
#include <cstdio>
#include <stdexcept>

struct legacy_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct tag {
    virtual ~tag() = default;
    long pad[3] = {1, 2, 3};
};
struct mixed_error : tag, std::runtime_error {
    mixed_error() : std::runtime_error("mixed") {}
};

static void thrower(int i) {
    if (i >= 0)
        throw std::runtime_error("Expected all tensors to be on the same device, but found at least two devices, cpu "
                                 "and cuda:0! (when checking argument for argument mat1 in method wrapper_addmm)");
}

int main() {
    int caught = 0;
    for (int i = 0; i < 20; i++) try {
            thrower(i); // devtrace: throws the mismatch
        } catch (const std::exception &) {
            caught++;
        }
    std::printf("caught %d\n", caught);
    try {
        try {
            throw legacy_error("Expected object of device type cuda but got device type cpu for argument #1 'self' "
                               "in call to _th_addmm");
        } catch (...) {
            throw;
        }
    } catch (const std::exception &e) {
        std::printf("rethrown: %s\n", e.what());
    }
    try {
        throw mixed_error();
    } catch (const std::exception &e) {
        std::printf("base at offset: %s\n", e.what());
    }
    try {
        throw 42;
    } catch (int v) {
        std::printf("int %d\n", v);
    }
    return 0;
}
