"""PyTorch + transformers side of rocm-tensor's LLM benchmark: batch 1, a prompt of P random
ids, N greedy new tokens over a static KV cache with SDPA attention; eager, and with the decode
step captured once in a CUDA graph and replayed. Prints one JSON object.
Usage: python3 torch_bench.py MODEL_DIR --ids 1,2,3 [--new 256]
"""
import argparse
import json
import time

import torch
from transformers import AutoModelForCausalLM, StaticCache


def static_cache(model, length):
    try:
        return StaticCache(config=model.config, max_cache_len=length)
    except TypeError:
        return StaticCache(config=model.config, max_batch_size=1, max_cache_len=length, device="cuda", dtype=model.dtype)


def sync_time() -> float:
    torch.cuda.synchronize()
    return time.perf_counter()


def run(model, ids, new, graph):
    p = ids.shape[1]
    cache = static_cache(model, p + new)
    t0 = sync_time()
    pos = torch.arange(p, device="cuda")
    out = model(input_ids=ids, past_key_values=cache, cache_position=pos, position_ids=pos.unsqueeze(0), use_cache=True)
    tok = out.logits[:, -1:].argmax(-1)
    first = int(tok)
    t1 = sync_time()
    step_pos = torch.tensor([p], device="cuda")

    def step(inp, at):
        o = model(input_ids=inp, past_key_values=cache, cache_position=at, position_ids=at.unsqueeze(0), use_cache=True)
        return o.logits[:, -1:].argmax(-1)

    toks = [first]
    if graph:
        static_in, static_pos = tok.clone(), step_pos.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            # warm-up writes position p of the cache, which the first replay writes again
            step(static_in, static_pos)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = step(static_in, static_pos)
        t1 = sync_time()
        for _ in range(new - 1):
            g.replay()
            toks.append(int(static_out))
            static_in.copy_(static_out)
            static_pos.add_(1)
    else:
        for _ in range(new - 1):
            tok = step(tok, step_pos)
            toks.append(int(tok))
            step_pos += 1
    t2 = sync_time()
    return {"prefillTokensPerS": p / (t1 - t0), "decodeTokensPerS": (new - 1) / (t2 - t1), "ids": toks}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ids", required=True, help="the prompt's ids, comma-separated (the same prompt as ours)")
    ap.add_argument("--new", type=int, default=256)
    a = ap.parse_args()
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16, attn_implementation="sdpa").cuda().eval()
    load = sync_time() - t0
    ids = torch.tensor([[int(x) for x in a.ids.split(",")]], device="cuda")
    res = {"loadSeconds": load, "torch": torch.__version__, "transformers": __import__("transformers").__version__}
    with torch.no_grad():
        run(model, ids, 8, False)  # warm-up (cuBLAS handles, SDPA kernels)
        res["eager"] = run(model, ids, a.new, False)
        try:
            res["graph"] = run(model, ids, a.new, True)
        except Exception as e:  # report, never hide: the table says why the row is missing
            res["graphError"] = f"{type(e).__name__}: {e}"
    for k in ("eager", "graph"):
        if k in res:
            res[k]["ids"] = res[k]["ids"][:16]
    print(json.dumps(res))


if __name__ == "__main__":
    main()
