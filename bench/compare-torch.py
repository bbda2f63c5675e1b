#!/usr/bin/env python3
"""The benchmark cases of bench/cases.ts, run in PyTorch on the same GPU.

bench/run.ts --torch writes the cases and timing rules to a JSON file and runs
    python3 bench/compare-torch.py --cases FILE
This script times each case the way run.ts does (warm-up, a 3-run calibration that picks the
iteration count, one CUDA event pair around each run, the median; inputs rotated through the
same number of sets) and prints one JSON object on stdout. Progress goes to stderr.
"""
import argparse
import json
import math
import statistics
import sys
import time


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fail(msg):
    print(json.dumps({"version": None, "device": None, "error": msg, "rows": {}}))
    sys.exit(0)


try:
    import torch
    import torch.nn.functional as F
    from torch_ops import prepare_op
except Exception as e:  # noqa: BLE001 - any import failure means no comparison
    fail(f"cannot import torch: {e}")

# where inputs are made: the GPU; a CPU check of the argument conventions may set "cpu"
DEVICE = "cuda"

DTYPES = {
    "f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
    "u8": torch.uint8,
}


def rand(shape, dtype, lo=-2.0, hi=2.0):
    t = DTYPES[dtype]
    if dtype == "u8":
        return torch.randint(0, 2, tuple(shape), device=DEVICE, dtype=torch.uint8)
    return (torch.rand(tuple(shape), device=DEVICE, dtype=torch.float32) * (hi - lo) + lo).to(t)


def event_times(iters, first, run):
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for i, (a, b) in enumerate(pairs):
        a.record()
        run(first + i)
        b.record()
    pairs[-1][1].synchronize()
    return [a.elapsed_time(b) for a, b in pairs]


def time_gpu(rules, run):
    i = 0
    t0 = time.perf_counter()
    while i < rules["warmup"] or (time.perf_counter() - t0) * 1e3 < rules["warmupMs"]:
        run(i)
        i += 1
    torch.cuda.synchronize()
    probe = statistics.median(event_times(3, i, run))
    i += 3
    iters = max(rules["minIters"], min(rules["maxIters"], math.ceil(rules["targetMs"] / max(probe, 1e-3))))
    ts = event_times(iters, i, run)
    return {"status": "ok", "medianMs": statistics.median(ts), "minMs": min(ts), "maxMs": max(ts), "iters": iters}


def time_host(rules, run):
    for _ in range(min(1000, rules["tinyOps"])):
        run()
    torch.cuda.synchronize()
    host, total = [], []
    n = rules["tinyOps"]
    for _ in range(rules["tinyReps"]):
        t0 = time.perf_counter()
        for _ in range(n):
            run()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) * 1e6 / n)
        total.append((t2 - t0) * 1e6 / n)
    h = statistics.median(host)
    return {"status": "ok", "medianMs": h / 1e3, "hostUs": h, "withSyncUs": statistics.median(total), "iters": n * rules["tinyReps"]}


def call_peak_bytes(run):
    """device bytes one call holds at its peak beyond what was allocated before it (its output and
    workspaces), as bench/timing.ts callPeakBytes measures ours"""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = run(0)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del out
    return peak


def prepare(c):
    """returns run(i) for one case; inputs rotate through c['sets'] sets like run.ts does"""
    op, shape, dt, sets = c["op"], c["shape"], c["dtype"], c["sets"]
    family = prepare_op(c, rand, DEVICE)
    if family is not None:
        return family
    if op == "copy":
        a = torch.empty(shape[0], dtype=torch.uint8, device="cuda").random_(0, 256)
        b = torch.empty_like(a)
        return lambda i: b.copy_(a)
    if op == "fill":
        a = torch.empty(shape[0], dtype=torch.uint8, device="cuda")
        return lambda i: a.fill_(0x5A)
    if op == "gemm":
        m, n, k = shape
        a, b = rand([m, k], dt, -1, 1), rand([k, n], dt, -1, 1)
        out = torch.empty(m, n, dtype=DTYPES[dt], device="cuda")
        return lambda i: torch.mm(a, b, out=out)
    if op in ("add", "mul"):
        ins = [(rand(shape, dt), rand(c.get("shapeB") or shape, dt)) for _ in range(sets)]
        f = torch.add if op == "add" else torch.mul
        return lambda i: f(*ins[i % sets])
    if op in ("exp", "gelu"):
        ins = [rand(shape, dt) for _ in range(sets)]
        if op == "exp":
            return lambda i: torch.exp(ins[i % sets])
        # ours is the tanh approximation
        return lambda i: F.gelu(ins[i % sets], approximate="tanh")
    if op in ("rand", "randn"):
        f = torch.rand if op == "rand" else torch.randn
        return lambda i: f(shape, dtype=DTYPES[dt], device="cuda")
    if op == "cast":
        ins = [rand(shape, dt) for _ in range(sets)]
        to = DTYPES[c["to"]]
        return lambda i: ins[i % sets].to(to)
    if op == "where":
        ins = [(rand(shape, "u8").bool(), rand(shape, dt), rand(shape, dt)) for _ in range(sets)]
        return lambda i: torch.where(*ins[i % sets])
    if op in ("sum", "mean", "max", "softmax", "logSoftmax"):
        ins = [rand(shape, dt) for _ in range(sets)]
        dim = (c.get("params") or {}).get("dim", -1)
        if op == "sum":
            return lambda i: ins[i % sets].sum(dim)
        if op == "mean":
            return lambda i: ins[i % sets].mean(dim)
        if op == "max":
            return lambda i: ins[i % sets].amax(dim)
        if op == "logSoftmax":
            return lambda i: torch.log_softmax(ins[i % sets], dim)
        return lambda i: torch.softmax(ins[i % sets], dim)
    if op in ("layerNorm", "rmsNorm"):
        h = shape[-1]
        w, b = rand([h], dt, 0.5, 1.5), rand([h], dt)
        ins = [rand(shape, dt) for _ in range(sets)]
        if op == "layerNorm":
            return lambda i: F.layer_norm(ins[i % sets], (h,), w, b, 1e-5)
        return lambda i: F.rms_norm(ins[i % sets], (h,), w, 1e-6)
    if op == "matmul":
        # a transposed operand is stored the other way round and passed as a view (.mT), as ours
        p = c.get("params") or {}
        ta, tb = p.get("transA", False), p.get("transB", False)
        a_shape, b_shape = (shape[::-1] if ta else shape), (c["shapeB"][::-1] if tb else c["shapeB"])
        ins = [(rand(a_shape, dt, -1, 1), rand(b_shape, dt, -1, 1)) for _ in range(sets)]
        return lambda i: torch.matmul(ins[i % sets][0].mT if ta else ins[i % sets][0], ins[i % sets][1].mT if tb else ins[i % sets][1])
    if op == "linear":
        ins = [(rand(shape, dt, -1, 1), rand(c["shapeB"], dt, -1, 1)) for _ in range(sets)]
        return lambda i: F.linear(*ins[i % sets])
    if op == "tinyAdd":
        a = torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda")
        b = torch.tensor([5.0, 6.0, 7.0, 8.0], device="cuda")
        return lambda i: a + b
    raise ValueError(f"unknown op {op}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True, help="JSON written by bench/run.ts --torch")
    args = ap.parse_args()
    with open(args.cases) as f:
        spec = json.load(f)
    if not torch.cuda.is_available():
        fail(f"torch {torch.__version__}: no GPU (torch.cuda.is_available() is False)")
    # full-precision f32 matmul and convolutions, as ours (cuBLAS/rocBLAS f32 compute)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rules = spec["rules"]
    rows = {}
    for c in spec["cases"]:
        try:
            run = prepare(c)
            rows[c["id"]] = time_host(rules, lambda: run(0)) if c["kind"] == "host" else time_gpu(rules, run)
            r = rows[c["id"]]
            if c["kind"] != "host":
                r["peakBytes"] = call_peak_bytes(run)
            log(f"  torch {c['id']}: {r['medianMs'] * 1e3:.1f} us ({r['iters']} runs)")
        except Exception as e:  # noqa: BLE001 - one failing case must not end the comparison
            rows[c["id"]] = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
            log(f"  torch {c['id']}: failed: {e}")
        finally:
            run = None
            torch.cuda.empty_cache()
    print(json.dumps({
        "version": torch.__version__,
        "device": f"{torch.cuda.get_device_name()} (CUDA {torch.version.cuda}, HIP {torch.version.hip})",
        "error": None,
        "rows": rows,
    }))


if __name__ == "__main__":
    main()
