# rule: module-never-moved
# code: Layer(...).to(device)
# Layers of the program's own class kept in a plain list, each constructed inside an expression and never
# moved: .to(device) goes on the constructor call, the one place the program holds each layer.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


class Layer(nn.Linear):
    def __init__(self, n_in, n_out):
        super().__init__(n_in, n_out)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(torch.mm(x, self.weight.T) + self.bias.unsqueeze(0))


class Net(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1])]  # devtrace: fix

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


net = Net([12, 8, 3])
x = torch.randn(16, 12).to(device)
print("out", round(net(x).sum().item(), 4))
