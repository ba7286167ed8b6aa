# rule: derived-from-unmoved
# code: weights = weights.to(device)
# absent: from_numpy(..., device=
# Per-class weights loaded from a NumPy array with torch.from_numpy, which takes no device= (the fix moves what it
# made, never adds device= to it), then scaled inside a helper that computes on whatever device it is given.
import numpy as np
import torch
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


def normalized(w):
    return w / w.sum() * w.numel()


weights = torch.from_numpy(np.array([1.0, 3.0, 6.0], dtype=np.float32))  # devtrace: fix
logits = torch.randn(8, 3, device=device)
labels = torch.randint(0, 3, (8,), device=device)
loss = F.cross_entropy(logits, labels, weight=normalized(weights))
print("loss", round(loss.item(), 4))
