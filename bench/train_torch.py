# The PyTorch twin of bench/train-models.ts (run by bench/train.ts --torch): the same workloads,
# eager, on the same GPU. Prints one JSON line: [{workload, msPerStep, peakBytes, lastLoss}].
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--workload", default="cnn,decoder")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--shape", required=True)
p.add_argument("--small", action="store_true")
a = p.parse_args()
dev = torch.device("cuda")
shape = json.loads(a.shape)


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

    def step():
        loss = F.cross_entropy(model(x), y)
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

    def step():
        x = embed(inp)
        for b in blocks:
            x = b(x, cos, sin)
        loss = F.cross_entropy(head(norm(x)).view(-1, s["vocab"]), tgt)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


rows = []
for name in a.workload.split(","):
    step = cnn(64 if a.small else 256) if name == "cnn" else decoder(shape)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / a.steps
    rows.append({"workload": name, "msPerStep": ms, "peakBytes": torch.cuda.max_memory_allocated(),
                 "lastLoss": float(loss)})
    del step
    torch.cuda.empty_cache()
print(json.dumps(rows))
