# bug_lightning_ddp_weight.py with its bug fixed: the class weights are a buffer, which Lightning moves
# with the module to each rank's GPU.
import sys

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
        self.register_buffer("class_weight", torch.tensor([1.0, 2.0, 4.0]))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y, weight=self.class_weight)
        self.log("loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    if torch.cuda.device_count() < 2:  # the bug needs two GPUs (DEVTRACE_SIM_CUDA=2 simulates them)
        print("this example needs 2 GPUs; %d found" % torch.cuda.device_count())
        sys.exit(0)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    trainer = L.Trainer(accelerator="gpu", devices=2, max_steps=3, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Classifier(), DataLoader(data, batch_size=8))
    print("done")
