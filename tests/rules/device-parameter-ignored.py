# rule: device-parameter-ignored
# code: torch.from_numpy(...).to(device)
# A feature helper is told which device to make its filter bank on (its parameter `device`) and returns the
# bank made from numpy without it; its caller, library code, passes the device of the audio it has.
import numpy as np
import torch
import torch.nn as nn


def filter_bank(device, n_bins):
    bank = np.linspace(0.0, 1.0, 16 * 8, dtype=np.float32).reshape(16, 8)
    return torch.from_numpy(bank[:n_bins])  # devtrace: fix


def features(audio, n_bins=16):
    spec = audio.abs() ** 2
    bank = filter_bank(audio.device, n_bins)
    return bank @ spec


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 4)

    def forward(self, audio):
        return self.proj(features(audio).transpose(0, 1))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    enc = Encoder().to(device)
    audio = torch.randn(8, 4, device=device)
    print("out", round(enc(audio).sum().item(), 4))


main()
