# rule: view-of-unmoved-base
# code: luma = luma.to(device)
# Grayscale conversion with the ITU-R 601 luma weights made once on the CPU; every step reshapes them to
# broadcast against the batch of images on the GPU.
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
luma = torch.tensor([0.299, 0.587, 0.114])  # devtrace: fix
for step in range(3):
    images = torch.rand(4, 3, 8, 8).to(device)
    gray = (images * luma.view(1, 3, 1, 1)).sum(dim=1)
    print("step", step, round(gray.mean().item(), 4))
