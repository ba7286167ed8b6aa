# rule: copied-off-device
# code: torch.where((positions_relative_to_the_query < window_size) & (positions_relative_to_the_query > -window_size),torch.ones_like(positions_relative_to_the_query),torch.zeros_like(positions_relative_to_the_query),).cpu() -> torch.where((positions_relative_to_the_query < window_size) & (positions_relative_to_the_query > -window_size),torch.ones_like(positions_relative_to_the_query),torch.zeros_like(positions_relative_to_the_query),)
# A local-attention mask is made by a call that spans several lines and is longer than a line, and copied off the
# device by a .cpu() on its closing line that nothing uses: the copy is taken out where it is written, however
# long the call it ends.
import torch
import torch.nn as nn


def local_mask(positions_relative_to_the_query, window_size):
    mask = torch.where(
        (positions_relative_to_the_query < window_size) & (positions_relative_to_the_query > -window_size),
        torch.ones_like(positions_relative_to_the_query),
        torch.zeros_like(positions_relative_to_the_query),
    ).cpu()  # devtrace: fix
    return mask


class LocalAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        ids = torch.arange(x.shape[0], device=x.device)
        scores = self.proj(x) @ x.T
        return scores * local_mask(ids[None, :] - ids[:, None], 2)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = LocalAttention(4).to(device)
    out = model(torch.randn(6, 4, device=device))
    print("scores", tuple(out.shape))


main()
