# rule: derived-from-unmoved
# code: torch.zeros(..., device=device)
# A score summed over layers from a start made with torch.zeros and no device, inside a list: the sum is
# computed from it and stays on the CPU; device= where it is made puts the start, and so the sum, on the GPU.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
layers = [nn.Linear(12, 12).to(device) for _ in range(2)]
x = torch.randn(16, 12).to(device)
scores = []
for label in range(3):
    h = x + label
    goodness = [torch.zeros(x.shape[0])]  # devtrace: fix
    for layer in layers:
        h = layer(h)
        goodness = goodness + [h.pow(2).mean(1)]
    scores += [sum(goodness).unsqueeze(1)]
print("best", torch.cat(scores, 1).argmax(1).tolist()[:4])
