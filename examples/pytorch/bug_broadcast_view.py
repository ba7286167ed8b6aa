# A per-feature gain is made once, on the CPU; every step broadcasts it
# against the batch on the GPU (unsqueeze, expand: views made anew each step).
# The fix moves the gain once, where it is made, not the view in the loop.
# On a GPU server: "Expected all tensors to be on the same device ... cuda:0 and cpu!" in the multiplication.
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
gain = torch.tensor([1.0, 0.5, 2.0, 1.5])  # devtrace: origin  devtrace: fix
for step in range(3):
    batch = torch.rand(8, 4).to(device)
    g = gain.unsqueeze(0).expand(8, 4)
    print("step", step, round((batch * g).mean().item(), 3))
