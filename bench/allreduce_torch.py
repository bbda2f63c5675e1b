#!/usr/bin/env python3
"""PyTorch's side of the all-reduce sweep (bench/allreduce.ts --torch).

    python3 bench/allreduce_torch.py --plan PLAN.json --ranks N --out RESULT.json

One process per GPU (torch.multiprocessing), backend NCCL, torch.distributed.all_reduce of a
float32 tensor in place (sum) for each size of the plan, timed like our side: warm-up calls, then
`iters` calls queued back to back, torch.cuda.synchronize(), host clock; time = elapsed / iters.
Rank 0 writes {"version", "device", "error", "rows": [{"bytes", "seconds"}]}.
"""
import argparse
import json
import os
import socket
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, ranks, port, plan, out):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks,
                            device_id=torch.device("cuda", rank))
    rows = []
    for p in plan:
        n = max(1, p["bytes"] // 4)
        x = torch.ones(n, dtype=torch.float32, device="cuda")
        for _ in range(p["warmup"]):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(p["iters"]):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        rows.append({"bytes": p["bytes"], "seconds": (time.perf_counter() - t0) / p["iters"]})
        del x
        if rank == 0:
            print(f"torch all_reduce {p['bytes']} B: {rows[-1]['seconds'] * 1e6:.1f} us", file=sys.stderr, flush=True)
    if rank == 0:
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        with open(out, "w") as f:
            json.dump({"version": f"torch {torch.__version__}, NCCL {nccl}", "device": torch.cuda.get_device_name(0),
                       "error": None, "rows": rows}, f)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        import torch
        import torch.multiprocessing as mp
    except Exception as e:  # noqa: BLE001 - any import failure means no comparison
        json.dump({"version": None, "device": None, "error": f"cannot import torch: {e}", "rows": []}, open(a.out, "w"))
        return
    if torch.cuda.device_count() < a.ranks:
        json.dump({"version": torch.__version__, "device": None, "error": f"torch sees {torch.cuda.device_count()} GPUs, needs {a.ranks}", "rows": []}, open(a.out, "w"))
        return
    plan = json.load(open(a.plan))
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    mp.spawn(worker, args=(a.ranks, free_port(), plan, a.out), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
