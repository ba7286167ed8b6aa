# rule: peer-moved-from-same-source
# code: masks = masks.to(device)
# Segmentation: each batch's images are moved to the GPU, its masks are not.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
data = TensorDataset(torch.rand(32, 3, 8, 8), torch.randint(0, 2, (32, 8, 8)))
loader = DataLoader(data, batch_size=8, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for images, masks in loader:
    images = images.to(device)  # devtrace: fix
    loss = F.cross_entropy(model(images), masks)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("loss", round(loss.item(), 4))
