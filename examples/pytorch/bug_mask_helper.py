# A helper builds the attention mask on the CPU and forward keeps it
# (modelled on pytorch/examples word_language_model/model.py, whose
# TransformerModel moves the helper's mask with .to(device)).
import torch
import torch.nn as nn


class TinyTransformer(nn.Module):
    def __init__(self, ntoken, d_model):
        super().__init__()
        self.src_mask = None
        self.embed = nn.Embedding(ntoken, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)
        self.decoder = nn.Linear(d_model, ntoken)

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))  # devtrace: origin  devtrace: fix (device= where it is made)

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            mask = self._generate_square_subsequent_mask(len(src))
            self.src_mask = mask
        return self.decoder(self.encoder(self.embed(src), mask=self.src_mask))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = TinyTransformer(20, 16).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randint(0, 20, (13, 4)).to(device)
for step in range(3):
    out = model(data[:-1])
    loss = nn.functional.cross_entropy(out.view(-1, 20), data[1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
