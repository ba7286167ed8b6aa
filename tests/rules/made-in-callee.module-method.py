# rule: made-in-callee
# code: torch.zeros(..., device=next(self.parameters()).device)
# absent: memory = memory.to(
# A model's method makes the initial memory the training loop hands back to the model's forward; it is made
# on the cpu. The method is model code (it runs wherever the model was moved) and other callers (evaluation,
# sampling) would call it too: it makes the memory on the module's device, not the loop that moves it.
import torch
import torch.nn as nn


class MemoryCell(nn.Module):
    def __init__(self, width, slots):
        super().__init__()
        self.width, self.slots = width, slots
        self.write = nn.Linear(width, width)
        self.read = nn.Linear(width, 3)

    def initial_memory(self, batch):
        return torch.zeros(batch, self.slots, self.width)  # devtrace: fix

    def forward(self, x, memory):
        memory = memory + self.write(x).unsqueeze(1)
        return self.read(memory.mean(1)), memory


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cell = MemoryCell(8, 4).to(device)
    opt = torch.optim.Adam(cell.parameters(), lr=1e-2)
    for step in range(3):
        x = torch.randn(5, 8, device=device)
        y = torch.randint(0, 3, (5,), device=device)
        memory = cell.initial_memory(x.size(0))
        logits, memory = cell(x, memory)
        loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss", round(loss.item(), 4))


main()
