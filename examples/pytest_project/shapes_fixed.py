# shapes.py with its bug fixed: the labels are moved with the features.
import torch
import torch.nn.functional as F


def make_batch(samples, device):
    x = torch.stack([s[0] for s in samples])
    y = torch.tensor([s[1] for s in samples])
    return x.to(device), y.to(device)


def train_step(model, opt, samples):
    device = next(model.parameters()).device
    x, y = make_batch(samples, device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()
