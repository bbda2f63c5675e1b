"""NumPy's side of bench/cpu.ts: the same cases and timing rules, one JSON line on stdout.

    python3 bench/cpu_numpy.py --cases '["matmul 512^3 f32", ...]'
    python3 bench/cpu_numpy.py --rss-child     (the peak-RSS child; run by this script)

Timing: two warm-up calls, then calls until 1 s has passed (at least 5, at most 200), each
output freed before the next call; median and minimum in milliseconds.
"""

import json
import resource
import subprocess
import sys
import time

import numpy as np

RSS_N = 2**26


def rss_child():
    """the rise of the peak RSS over ones(2^26) + 1, in bytes (ru_maxrss is KiB on Linux)"""
    (np.ones(1024, dtype=np.float32) + 1).sum()
    # the RSS now (pages in /proc/self/statm) against the high-water mark after, as bench/cpu.ts
    with open("/proc/self/statm") as f:
        before = int(f.read().split()[1]) * resource.getpagesize()
    x = np.ones(RSS_N, dtype=np.float32)
    y = x + np.float32(1)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert y.shape == (RSS_N,)
    print(json.dumps({"baseline": before, "peak": after, "rise": after - before}))


def rand(shape, seed):
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def setup(case_id):
    if case_id.startswith("matmul "):
        n = int(case_id.split()[1].split("^")[0])
        a, b = rand((n, n), 1), rand((n, n), 2)
        return lambda: a @ b
    if case_id.startswith("gemv "):
        x, w = rand((1, 896), 3), rand((4864, 896), 4)
        wt = w.T
        return lambda: x @ wt
    if case_id.startswith("add ") or case_id.startswith("mul "):
        x, y = rand((2**24,), 5), rand((2**24,), 6)
        return (lambda: x + y) if case_id.startswith("add") else (lambda: x * y)
    if case_id.startswith("exp "):
        x = rand((2**24,), 7)
        return lambda: np.exp(x)
    raise ValueError(f"unknown case {case_id!r}")


def timing(run):
    for _ in range(2):
        run()
    ts = []
    start = time.perf_counter()
    while len(ts) < 5 or (len(ts) < 200 and time.perf_counter() - start < 1.0):
        t0 = time.perf_counter()
        y = run()
        ts.append((time.perf_counter() - t0) * 1e3)
        del y
    ts.sort()
    return {"medianMs": ts[len(ts) // 2], "minMs": ts[0], "iters": len(ts)}


def blas_info():
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'blas')} {blas.get('version', '')}".strip()
    except Exception as e:  # noqa: BLE001 (the report says what failed)
        return f"unknown BLAS ({e})"


def threads():
    try:
        from threadpoolctl import threadpool_info

        return max((p.get("num_threads") or 0) for p in threadpool_info()) or None
    except Exception:  # noqa: BLE001 (optional package)
        return None


def main():
    if "--rss-child" in sys.argv:
        return rss_child()
    cases = json.loads(sys.argv[sys.argv.index("--cases") + 1])
    rows = {}
    for case_id in cases:
        try:
            rows[case_id] = timing(setup(case_id))
        except Exception as e:  # noqa: BLE001 (reported per row)
            rows[case_id] = {"error": str(e)}
    r = subprocess.run([sys.executable, __file__, "--rss-child"], capture_output=True, text=True)
    try:
        rss = json.loads(r.stdout.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001
        rss = {"error": (r.stderr or r.stdout)[:500]}
    print(json.dumps({"numpy": np.__version__, "blas": blas_info(), "threads": threads(), "rows": rows, "rss": rss}))


if __name__ == "__main__":
    main()
