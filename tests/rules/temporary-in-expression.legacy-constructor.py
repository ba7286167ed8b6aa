# rule: temporary-in-expression
# code: torch.Tensor(...).to(device)
# An observation turned into a tensor by the legacy constructor inside the network's call: torch.Tensor refuses a
# device argument (it makes a CPU tensor of the default type), so it goes to the device by .to() on that call.
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(2, 3).to(device)
obs = [[1.0, 2.0], [3.0, 4.0]]
q = net(torch.Tensor(obs))  # devtrace: fix
print(q.argmax(dim=1).tolist())
