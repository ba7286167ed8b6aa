# rule: view-of-unmoved-base
# code: steps = steps.to(frames.device)
# absent: steps.to(device)
# A helper of the model's file makes the time steps of a batch of frames it is handed, on the cpu, and returns a
# view of them broadcast over the batch; the model's forward embeds them next to the frames. The helper has the
# frames in hand: the steps follow their device there (steps.to(frames.device)), on any device and for every
# caller, not the script's device name (which model code in a file of its own would not have).
import torch
import torch.nn as nn


def time_steps(frames, start=0):
    steps = torch.arange(start, start + frames.size(1))  # devtrace: fix
    return steps.unsqueeze(0).expand(frames.size(0), -1)


class FrameModel(nn.Module):
    def __init__(self, width, length):
        super().__init__()
        self.inp = nn.Linear(width, width)
        self.time = nn.Embedding(length, width)
        self.out = nn.Linear(width, 2)

    def forward(self, frames):
        steps = time_steps(frames)
        h = torch.tanh(self.inp(frames) + self.time(steps))
        return self.out(h.mean(1))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = FrameModel(6, 16).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    frames = torch.randn(4, 5, 6).to(device)
    target = torch.randint(0, 2, (4,)).to(device)
    loss = nn.functional.cross_entropy(model(frames), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
