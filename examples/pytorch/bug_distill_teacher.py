# Knowledge distillation: the student is moved to the GPU; the teacher,
# loaded from a checkpoint, is not.
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
path = os.path.join(tempfile.mkdtemp(), "teacher.pt")
torch.save(nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 5)).state_dict(), path)

teacher = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 5))  # devtrace: origin  devtrace: fix
teacher.load_state_dict(torch.load(path))
teacher.eval()
student = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 5)).to(device)
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
T = 4.0
for step in range(3):
    x = torch.randn(32, 16).to(device)
    y = torch.randint(0, 5, (32,)).to(device)
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    kd = F.kl_div(F.log_softmax(s_logits / T, 1), F.softmax(t_logits / T, 1), reduction="batchmean") * T * T
    loss = kd + F.cross_entropy(s_logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 3))
