# rule: moved-with-others
# code: y = y.to(device)
# A nanoGPT-style get_batch that samples windows of a token stream: it moves the inputs to the GPU and
# forgets the targets.
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
block_size, batch_size, vocab = 8, 4, 32
train_data = torch.randint(0, vocab, (1000,))


def get_batch():
    ix = torch.randint(len(train_data) - block_size, (batch_size,))
    x = torch.stack([train_data[i:i + block_size] for i in ix])
    y = torch.stack([train_data[i + 1:i + 1 + block_size] for i in ix])
    x = x.to(device)  # devtrace: fix
    return x, y


model = nn.Sequential(nn.Embedding(vocab, 16), nn.Linear(16, vocab)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    x, y = get_batch()
    loss = F.cross_entropy(model(x).view(-1, vocab), y.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
