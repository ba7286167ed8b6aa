"""Driver (ours) for pytorch/examples' fast_neural_style TransformerNet (neural_style/transformer_net.py): a few
steps of the style network on random 32x32 images toward a random target."""

import torch

from neural_style.transformer_net import TransformerNet

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = TransformerNet().to(device)
opt = torch.optim.Adam(model.parameters(), 1e-3)
for step in range(2):
    x = torch.rand(1, 3, 32, 32).to(device)
    y = model(x)
    loss = torch.nn.functional.mse_loss(y, x * 255)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("ok", tuple(y.shape))
