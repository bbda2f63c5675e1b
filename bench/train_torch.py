# The PyTorch twin of bench/train-models.ts (run by bench/train.ts --torch): the same workloads,
# eager, on the same GPU; with --compile each workload's forward and loss go through torch.compile
# (backward and the optimizer as torch.compile leaves them; the warm-up steps include the
# compilation). Prints one JSON line: [{workload, msPerStep, peakBytes, lastLoss, compiled}], with
# --profile also each workload's GPU time a step by kernel (torch.profiler) under "profile".
# ResNet-18 is torchvision's resnet18(num_classes=10); where torchvision is not installed, the same
# network written out here (same layers, names and initialisation) stands in, and the row says so.
import argparse
import gc
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--workload", default="cnn,decoder,resnet")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--warmup-ms", type=float, default=2000)
p.add_argument("--shape", required=True)
p.add_argument("--small", action="store_true")
p.add_argument("--compile", action="store_true")
p.add_argument("--profile", action="store_true")
a = p.parse_args()

PROFILE_STEPS = 3


def profile_steps(step):
    """GPU time a step by kernel name over PROFILE_STEPS steps (torch.profiler), most first"""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(PROFILE_STEPS):
            step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = getattr(e, "self_cuda_time_total", 0)
        if us > 0:
            rows.append({"name": e.key, "calls": e.count / PROFILE_STEPS, "ms": us / 1e3 / PROFILE_STEPS})
    rows.sort(key=lambda r: -r["ms"])
    return rows[:60]
dev = torch.device("cuda")
shape = json.loads(a.shape)


def compiled(f):
    return torch.compile(f) if a.compile else f


def cnn(batch):
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10),
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    loss_fn = compiled(lambda: F.cross_entropy(model(x), y))

    def step():
        loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


class Block(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s
        self.attn_norm = nn.RMSNorm(s["dim"], eps=1e-5)
        self.qkv = nn.Linear(s["dim"], 3 * s["dim"], bias=False)
        self.proj = nn.Linear(s["dim"], s["dim"], bias=False)
        self.mlp_norm = nn.RMSNorm(s["dim"], eps=1e-5)
        self.gate_up = nn.Linear(s["dim"], 2 * s["ff"], bias=False)
        self.down = nn.Linear(s["ff"], s["dim"], bias=False)

    def forward(self, x, cos, sin):
        b, t, h, dim = self.s["batch"], self.s["seq"], self.s["heads"], self.s["dim"]
        d = dim // h
        qkv = self.qkv(self.attn_norm(x)).view(b, t, 3, h, d)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))

        def rope(z):
            z1, z2 = z[..., : d // 2], z[..., d // 2:]
            return torch.cat([z1 * cos - z2 * sin, z2 * cos + z1 * sin], -1)
        o = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
        x1 = x + self.proj(o.transpose(1, 2).reshape(b, t, dim))
        g, u = self.gate_up(self.mlp_norm(x1)).chunk(2, -1)
        return x1 + self.down(F.silu(g) * u)


def decoder(s):
    torch.manual_seed(1)
    embed = nn.Embedding(s["vocab"], s["dim"])
    blocks = nn.ModuleList(Block(s) for _ in range(s["layers"]))
    norm = nn.RMSNorm(s["dim"], eps=1e-5)
    head = nn.Linear(s["dim"], s["vocab"], bias=False)
    model = nn.ModuleList([embed, blocks, norm, head]).to(dev, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    ids = torch.randint(0, s["vocab"], (s["batch"], s["seq"] + 1), device=dev)
    inp, tgt = ids[:, :-1].contiguous(), ids[:, 1:].reshape(-1)
    d = s["dim"] // s["heads"]
    inv = 1.0 / (10000 ** (torch.arange(0, d // 2, device=dev, dtype=torch.float32) * 2 / d))
    ang = torch.arange(s["seq"], device=dev, dtype=torch.float32)[:, None] * inv[None]
    cos, sin = ang.cos().bfloat16(), ang.sin().bfloat16()

    def forward_loss():
        x = embed(inp)
        for b in blocks:
            x = b(x, cos, sin)
        return F.cross_entropy(head(norm(x)).view(-1, s["vocab"]), tgt)
    loss_fn = compiled(forward_loss)

    def step():
        loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 layer for layer, for machines without torchvision"""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        cin = 64
        for i, cout in enumerate([64, 128, 256, 512]):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        for i in range(4):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


resnet_source = None


def resnet(batch):
    global resnet_source
    torch.manual_seed(1)
    try:
        from torchvision.models import resnet18
        model, resnet_source = resnet18(num_classes=10), "torchvision"
    except Exception as e:  # not installed, or built for another torch
        model, resnet_source = ResNet18(10), f"written out (torchvision unavailable: {type(e).__name__})"
    model = model.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def forward_loss():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return F.cross_entropy(model(x), y)
    loss_fn = compiled(forward_loss)

    def step():
        loss = loss_fn()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


rows = []
for name in a.workload.split(","):
    if name == "cnn":
        step = cnn(64 if a.small else 256)
    elif name == "resnet":
        step = resnet(4 if a.small else 256)
    else:
        step = decoder(shape)
    # warm-up as bench/train.ts's: at least 3 steps, for --warmup-ms
    w0, i = time.perf_counter(), 0
    while i < 3 or ((time.perf_counter() - w0) * 1e3 < a.warmup_ms and i < 1000):
        step()
        i += 1
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / a.steps
    row = {"workload": name, "msPerStep": ms, "peakBytes": torch.cuda.max_memory_allocated(), "lastLoss": float(loss),
           "compiled": a.compile}
    if name == "resnet":
        row["model"] = resnet_source
    if a.profile:
        row["profile"] = profile_steps(step)
    rows.append(row)
    # the last loss's graph keeps the parameters alive (its AccumulateGrad nodes): drop it too,
    # or the next workload's peak counts this one's parameters
    del step, loss
    gc.collect()
    torch.cuda.empty_cache()
print(json.dumps(rows))
