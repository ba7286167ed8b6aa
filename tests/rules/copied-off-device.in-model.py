# rule: copied-off-device
# code: self.embed(tokens).cpu() -> self.embed(tokens)
# Model code that must run on any device: the embeddings are copied to the CPU (left from a debugging
# session) and handed to the head, whose weights are on the GPU. The program names no device of its
# own (it calls .cuda() when it has one), so no move back can be written in its terms: the copy goes.
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab, dim, tags):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, tags)

    def forward(self, tokens):
        h = self.embed(tokens).cpu()  # devtrace: fix
        return self.head(h)


torch.manual_seed(0)
use_cuda = torch.cuda.is_available()
model = Tagger(50, 8, 3)
if use_cuda:
    model.cuda()
tokens = torch.randint(0, 50, (4, 6))
if use_cuda:
    tokens = tokens.cuda()
print("scores", tuple(model(tokens).shape))
