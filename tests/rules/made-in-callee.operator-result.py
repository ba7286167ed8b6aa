# rule: made-in-callee
# code: self.bucket(...).to(scores.device)
# Relative-position buckets computed by a static helper that is given two lengths only: it has no device
# to follow and returns an operator's result (not a factory's call). The move goes on its call in the
# forward, where the scores are bound, not a device literal into the helper.
import torch
import torch.nn as nn


class RelativeBias(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.table = nn.Embedding(32, heads)

    @staticmethod
    def bucket(q_len, k_len):
        ctx = torch.arange(q_len)[:, None]
        mem = torch.arange(k_len)[None, :]
        rel = (mem - ctx).clamp(-15, 16) + 15
        return rel

    def forward(self, scores):
        rel = self.bucket(scores.shape[-2], scores.shape[-1])  # devtrace: fix
        return scores + self.table(rel).permute(2, 0, 1)[None]


def main(device):
    torch.manual_seed(0)
    layer = RelativeBias(2).to(device)
    print(layer(torch.randn(1, 2, 5, 5, device=device)).sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
