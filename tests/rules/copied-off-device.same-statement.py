# rule: copied-off-device
# code: torch.abs(rel).cpu() -> torch.abs(rel)
# A relative-position bucket function copies a tensor off the device and then uses the copy twice, both times
# on its way into the failing statement (a comparison with a number inside torch.where, and the product that
# fails): no use of its own on the cpu, so the copy is what goes, not a move back of one operand before that
# statement (which would leave the comparison's cpu result to fail in torch.where).
import torch
import torch.nn as nn


def bucket(rel, mid):
    sign = torch.sign(rel)
    abs_pos = torch.abs(rel).cpu()  # devtrace: fix
    log_pos = torch.log(abs_pos.float() + 1.0)
    return torch.where(abs_pos <= mid, rel.float(), log_pos * sign)


class RelBias(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(n, n))

    def forward(self, q):
        ids = torch.arange(q.shape[0], device=q.device)
        rel = ids[None, :] - ids[:, None]
        return self.scale * bucket(rel, 2)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = RelBias(5).to(device)
    out = model(torch.randn(5, 3, device=device))
    print("bias", tuple(out.shape))


main()
