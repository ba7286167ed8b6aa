# Images are moved to the GPU, then normalized with mean and std constants
# made once on the CPU at import time.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)  # devtrace: origin
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)  # devtrace: fix (after both)


def normalize(images):
    return (images - MEAN) / STD


model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(8, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    images = torch.rand(4, 3, 16, 16).to(device)
    labels = torch.randint(0, 10, (4,), device=device)
    loss = nn.functional.cross_entropy(model(normalize(images)), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 3))
