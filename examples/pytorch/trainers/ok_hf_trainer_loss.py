# bug_hf_trainer_loss.py with its bug fixed: compute_loss makes the class weights on the logits'
# device, so the Trainer runs on the cpu and on any GPU.
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Pairs(torch.utils.data.Dataset):
    def __init__(self, n=32, seq=8):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(1, 60, (n, seq), generator=g)
        self.labels = (self.ids[:, 0] % 2).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        weight = torch.tensor([1.0, 3.0], device=outputs.logits.device)
        loss = F.cross_entropy(outputs.logits, labels, weight=weight)
        return (loss, outputs) if return_outputs else loss


if __name__ == "__main__":
    if not torch.cuda.is_available():  # the bug needs a GPU (DEVTRACE_SIM_CUDA=1 simulates one)
        print("this example needs a GPU; none found")
        sys.exit(0)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=2)
    model = BertForSequenceClassification(config)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=os.path.join(out, "run"), max_steps=3, per_device_train_batch_size=8,
                                 report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True,
                                 dataloader_num_workers=0)
        WeightedTrainer(model=model, args=args, train_dataset=Pairs()).train()
    print("done")
