# A GAN written against the legacy tensor types (modelled on
# eriklindernoren/PyTorch-GAN implementations/gan/gan.py: Tensor =
# torch.cuda.FloatTensor, Variable(imgs.type(Tensor))): the real images
# are wrapped in a Variable without the conversion, and stay on the CPU.
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable
from torch.utils.data import DataLoader, TensorDataset

cuda = True if torch.cuda.is_available() else False
torch.manual_seed(0)
np.random.seed(0)
generator = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 64), nn.Tanh())
discriminator = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
adversarial_loss = torch.nn.BCELoss()
if cuda:
    generator.cuda()
    discriminator.cuda()
    adversarial_loss.cuda()
dataloader = DataLoader(TensorDataset(torch.rand(64, 64) * 2 - 1), batch_size=16, shuffle=True)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor

for i, (imgs,) in enumerate(dataloader):  # devtrace: origin  devtrace: fix
    valid = Variable(Tensor(imgs.size(0), 1).fill_(1.0), requires_grad=False)
    fake = Variable(Tensor(imgs.size(0), 1).fill_(0.0), requires_grad=False)
    real_imgs = Variable(imgs)
    optimizer_G.zero_grad()
    z = Variable(Tensor(np.random.normal(0, 1, (imgs.shape[0], 8))))
    gen_imgs = generator(z)
    g_loss = adversarial_loss(discriminator(gen_imgs), valid)
    g_loss.backward()
    optimizer_G.step()
    optimizer_D.zero_grad()
    real_loss = adversarial_loss(discriminator(real_imgs), valid)
    fake_loss = adversarial_loss(discriminator(gen_imgs.detach()), fake)
    d_loss = (real_loss + fake_loss) / 2
    d_loss.backward()
    optimizer_D.step()
    print("[Batch %d] [D loss: %f] [G loss: %f]" % (i, d_loss.item(), g_loss.item()))
