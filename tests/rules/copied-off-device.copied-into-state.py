# rule: copied-off-device
# code: (self.state @ self.A + x).cpu() -> (self.state @ self.A + x)
# A recurrent cell (the shape of a state-space model's single-step update) copies its new state off the device,
# writes it into its state buffer with copy_ and then uses it for the output. copy_ takes its source from any
# device, so the copy served nothing: it is taken out, not moved back before the output.
import torch
import torch.nn as nn


class Cell(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.A = nn.Parameter(torch.randn(n, n) * 0.1)
        self.register_buffer("state", torch.zeros(2, n))

    def forward(self, x):
        new_state = (self.state @ self.A + x).cpu()  # devtrace: fix
        self.state.copy_(new_state)
        return torch.tanh(new_state @ self.A)


def main(device):
    cell = Cell(4).to(device)
    with torch.no_grad():
        for _ in range(3):
            y = cell(torch.randn(2, 4, device=device))
    print(y.sum().item())


main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
