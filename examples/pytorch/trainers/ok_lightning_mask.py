# bug_lightning_mask.py with its bug fixed: the LightningModule makes the mask on the input's device
# (device=x.device), so it works on the cpu and on any GPU Lightning puts the module on.
import sys

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Tagger(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(6, 16)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        h = torch.relu(self.embed(x))  # [batch, seq, 16]
        mask = torch.ones(x.shape[0], x.shape[1], 1, device=x.device)
        return self.head((h * mask).mean(dim=1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    if not torch.cuda.is_available():  # the bug needs a GPU (DEVTRACE_SIM_CUDA=1 simulates one)
        print("this example needs a GPU; none found")
        sys.exit(0)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 5, 6), torch.randint(0, 3, (32,)))
    trainer = L.Trainer(accelerator="gpu", devices=1, max_steps=3, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Tagger(), DataLoader(data, batch_size=8))
    print("done")
