# rule: copied-off-device
# code: F.softmax(logits, dim=-1).cpu() -> F.softmax(logits, dim=-1)
# Sampling the next token: the probabilities are copied to the CPU (left from printing them), multinomial
# samples on the copy's device, and the sampled index meets the sequence on the GPU. multinomial is an op on
# its input (it takes no device=): the index came from the copy, and the copy is what goes.
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    @torch.no_grad()
    def generate(self, idx, steps):
        for _ in range(steps):
            logits = self.head(self.embed(idx))[:, -1, :]
            probs = F.softmax(logits, dim=-1).cpu()  # devtrace: fix
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    lm = TinyLM(10, 8).to(device)
    start = torch.zeros((1, 1), dtype=torch.long, device=device)
    print("tokens", lm.generate(start, 3).tolist())


main()
