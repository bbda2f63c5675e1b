"""PyTorch side of bench/decode-loop.ts: the same 8-layer batch-1 loop (rmsNorm, gate and up
GEMMs, silu * mul, down GEMM, add; H 4096, FF 14336, bf16), eager and captured in a CUDA graph.
Prints one JSON line: ms per step (eager, graph) and the host ms to queue an eager step."""
import argparse
import json
import time

import torch
import torch.nn.functional as F

H, FF, LAYERS = 4096, 14336, 8


def weight(rows, cols, seed):
    r = torch.arange(rows, device="cuda", dtype=torch.float32).unsqueeze(1) * (0.37 + seed)
    c = torch.arange(cols, device="cuda", dtype=torch.float32) * 0.11
    return ((r + c).sin() * 0.02).to(torch.bfloat16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--warmup-ms", type=float, default=200)
    args = ap.parse_args()
    steps = args.steps
    layers = [(torch.ones(H, device="cuda", dtype=torch.bfloat16), weight(FF, H, 3 * l), weight(FF, H, 3 * l + 1),
               weight(H, FF, 3 * l + 2)) for l in range(LAYERS)]
    x = torch.full((1, H), 0.5, device="cuda", dtype=torch.bfloat16)

    def step(h):
        for norm, gate, up, down in layers:
            n = F.rms_norm(h, (H,), norm, 1e-5)
            h = h + F.linear(F.silu(F.linear(n, gate)) * F.linear(n, up), down)
        return h

    def timed(run):
        # the same warm-up as bench/decode-loop-run.ts: at least this many steps and this long
        t0, i = time.perf_counter(), 0
        while i < args.warmup or (time.perf_counter() - t0) * 1e3 < args.warmup_ms:
            run()
            i += 1
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        t0 = time.perf_counter()
        for _ in range(steps):
            run()
        host = (time.perf_counter() - t0) * 1e3 / steps
        b.record()
        b.synchronize()
        return a.elapsed_time(b) / steps, host

    with torch.no_grad():
        eager, eager_host = timed(lambda: step(x))
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            step(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(x)
        graph, _ = timed(g.replay)
    print(json.dumps({"eager": eager, "graph": graph, "eagerHost": eager_host}))


if __name__ == "__main__":
    main()
