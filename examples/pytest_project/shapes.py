# A small project's training step, as its tests exercise it: the batch is built from a dataset of
# (features, label) pairs, moved to the model's device, and scored. The bug: only the features are
# moved, so on a GPU cross_entropy gets the labels on the cpu. Its fixed twin is shapes_fixed.py.
import torch
import torch.nn.functional as F


def make_batch(samples, device):
    x = torch.stack([s[0] for s in samples])
    y = torch.tensor([s[1] for s in samples])  # devtrace: origin
    return x.to(device), y  # devtrace: fix


def train_step(model, opt, samples):
    device = next(model.parameters()).device
    x, y = make_batch(samples, device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()
