#!/usr/bin/env python3
"""PyTorch's side of bench/attention-grad.ts (--torch).

    python3 bench/attention_grad_torch.py --shapes JSON [--quick]

For each shape ({b, hq, hkv, t, d, causal, dtype}): q [b, hq, t, d], k and v [b, hkv, t, d] on
the GPU, o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal, enable_gqa)
once, then torch.autograd.grad(o, (q, k, v), g, retain_graph=True) timed alone: warm-up calls,
then CUDA events around each call, the median. Prints one line per shape, then a JSON list
[{"index", "ms", "version"}] as the last line.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    warm, iters = (3, 10) if a.quick else (10, 50)
    out = []
    for i, s in enumerate(json.loads(a.shapes)):
        dt = DTYPES[s["dtype"]]
        q = torch.rand(s["b"], s["hq"], s["t"], s["d"], dtype=dt, device="cuda", requires_grad=True)
        k = torch.rand(s["b"], s["hkv"], s["t"], s["d"], dtype=dt, device="cuda", requires_grad=True)
        v = torch.rand(s["b"], s["hkv"], s["t"], s["d"], dtype=dt, device="cuda", requires_grad=True)
        g = torch.rand(s["b"], s["hq"], s["t"], s["d"], dtype=dt, device="cuda")
        o = F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"], enable_gqa=s["hq"] != s["hkv"])

        def step():
            return torch.autograd.grad(o, (q, k, v), g, retain_graph=True)

        for _ in range(warm):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            step()
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1))
        ms = statistics.median(times)
        print(f"torch {s}: {ms:.3f} ms", flush=True)
        out.append({"index": i, "ms": ms, "version": torch.__version__})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
