# The fixed twin of bug_broadcast_view.py.
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
gain = torch.tensor([1.0, 0.5, 2.0, 1.5]).to(device)
for step in range(3):
    batch = torch.rand(8, 4).to(device)
    g = gain.unsqueeze(0).expand(8, 4)
    print("step", step, round((batch * g).mean().item(), 3))
