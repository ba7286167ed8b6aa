"""The PyTorch adapter's benchmark workloads, trained on the CPU, or on the
GPU when one is there (real or simulated): a small MLP (tiny ops, the worst
case for a per-op recorder), a small CNN, a small GPT-style decoder (causal
self-attention, tied embedding, AdamW) and a small ResNet-style CNN
(residual blocks with BatchNorm, SGD with momentum). Prints, for the
steps after WARMUP untimed ones, the training loop's wall time and the
process's CPU time (all its threads: the tracer's writer too) in seconds,
and the last loss: the harness (bench/pytorch.sh) compares runs of it
traced and untraced in one invocation. Sizes are small enough that a CPU
run takes seconds.

usage: pytorch_train.py mlp|cnn|gpt|resnet STEPS
"""
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

WORKLOADS = ("mlp", "cnn", "gpt", "resnet")
WARMUP = 2  # untimed steps first: one-time costs (first calls, lazy state) out of the loop's time


def usage(msg):
    print("pytorch_train.py: %s\nusage: pytorch_train.py %s STEPS" % (msg, "|".join(WORKLOADS)), file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- GPT

class Block(nn.Module):
    """A pre-norm decoder block: causal multi-head self-attention, then an MLP."""

    def __init__(self, width, heads, context):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)
        self.register_buffer("mask", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)  # (B, H, T, C/H)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)  # (B, H, T, T)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Token and position embeddings, LAYERS blocks, a final norm and a head tied to the token embedding."""

    def __init__(self, vocab, width, layers, heads, context):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, context) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.wte.weight
        for emb in (self.wte, self.wpe):  # GPT-2's: with N(0, 1), the tied head's first logits are huge
            nn.init.normal_(emb.weight, std=0.02)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


# ---------------------------------------------------------------- ResNet

class Residual(nn.Module):
    """A basic residual block: two 3x3 convolutions with BatchNorm, a 1x1 projection when the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


def resnet(classes):
    """A stem and three stages of two blocks (16, 32, 64 channels), global average pooling, a linear head."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         Residual(16, 16, 1), Residual(16, 16, 1), Residual(16, 32, 2), Residual(32, 32, 1),
                         Residual(32, 64, 2), Residual(64, 64, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, classes))


# ---------------------------------------------------------------- the loop

def main():
    if len(sys.argv) != 3:
        usage("expected a workload and a number of steps")
    kind = sys.argv[1]
    if kind not in WORKLOADS:
        usage("unknown workload %r" % kind)
    try:
        steps = int(sys.argv[2])
    except ValueError:
        steps = -1
    if steps < 1:
        usage("STEPS must be a positive integer, not %r" % sys.argv[2])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
        batches = [(torch.randn(64, 64), torch.randint(0, 10, (64,))) for _ in range(8)]
    elif kind == "cnn":
        model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(32 * 8 * 8, 10))
        batches = [(torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))) for _ in range(4)]
    elif kind == "gpt":
        vocab, context = 256, 64
        model = GPT(vocab, width=128, layers=4, heads=4, context=context)
        tokens = [torch.randint(0, vocab, (1, context + 1)) for _ in range(4)]
        batches = [(t[:, :-1], t[:, 1:]) for t in tokens]  # next-token targets
    else:
        model = resnet(10)
        batches = [(torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))) for _ in range(4)]
    model.to(device)
    if kind == "gpt":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    elif kind == "resnet":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    start = cpu = None
    for step in range(WARMUP + steps):
        if step == WARMUP:
            if device.type == "cuda":
                torch.cuda.synchronize()
            start, cpu = time.perf_counter(), time.process_time()
        x, y = batches[step % len(batches)]
        x, y = x.to(device), y.to(device)
        if kind == "gpt":
            loss = F.cross_entropy(model(x).view(-1, vocab), y.reshape(-1))
        else:
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    loss = loss.item()  # waits for the device
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if not math.isfinite(loss):
        print("pytorch_train.py: %s diverged (loss %r)" % (kind, loss), file=sys.stderr)
        sys.exit(1)
    print("%.6f %.6f %.6f" % (elapsed, cpu, loss))


if __name__ == "__main__":
    main()
