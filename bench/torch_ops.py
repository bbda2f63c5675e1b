"""The op-family cases of bench/cases-ops.ts in PyTorch: bench/ours-ops.ts, argument for argument.

prepare_op(c, rand, device) returns run(i) for one case (inputs rotated through c["sets"] sets),
or None when the op is not one of these families. compare-torch.py imports it.
"""
import torch
import torch.nn.functional as F


def _ids(shape, below, device):
    # int64: torch's indexing ops take no other id dtype (ours reads the same i64 ids)
    return torch.randint(0, below, tuple(shape), device=device, dtype=torch.int64)


def _rope(x, cos, sin):
    # the library's rope, halves layout (src/backends/cpu/nn.ts): with x = [x1 | x2] split at d/2
    # and cos, sin [t, d/2]: [x1 cos - x2 sin | x2 cos + x1 sin]
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def prepare_op(c, rand, device="cuda"):
    op, shape, dt, sets = c["op"], c["shape"], c["dtype"], c["sets"]
    p = c.get("params") or {}
    ids = lambda: _ids(p["ids"], p["idsBelow"], device)  # noqa: E731

    def rot(make):
        ins = [make() for _ in range(sets)]
        return lambda i: ins[i % sets]

    if op in ("conv2d", "convTranspose2d"):
        get = rot(lambda: (rand(shape, dt, -1, 1), rand(c["shapeB"], dt, -1, 1)))
        stride, padding = p.get("stride", 1), p.get("padding", 0)
        f = F.conv2d if op == "conv2d" else F.conv_transpose2d
        return lambda i: f(*get(i), stride=stride, padding=padding)
    if op in ("maxPool2d", "avgPool2d"):
        get = rot(lambda: rand(shape, dt))
        k = p["kernel"]
        stride, padding = p.get("stride", k), p.get("padding", 0)
        if op == "maxPool2d":
            return lambda i: F.max_pool2d(get(i), k, stride, padding)
        # count_include_pad=True: ours' default, the same as torch's
        return lambda i: F.avg_pool2d(get(i), k, stride, padding, count_include_pad=True)
    if op in ("upsampleNearest2d", "upsampleBilinear2d"):
        get = rot(lambda: rand(shape, dt))
        size = tuple(p["size"])
        if op == "upsampleNearest2d":
            return lambda i: F.interpolate(get(i), size=size, mode="nearest")
        return lambda i: F.interpolate(get(i), size=size, mode="bilinear", align_corners=False)
    if op == "indexSelect":
        get = rot(lambda: (rand(shape, dt), ids()))
        return lambda i: torch.index_select(get(i)[0], p["dim"], get(i)[1])
    if op == "gather":
        get = rot(lambda: (rand(shape, dt), ids()))
        return lambda i: torch.gather(get(i)[0], p["dim"], get(i)[1])
    if op == "scatterAdd":
        get = rot(lambda: (rand(shape, dt), ids(), rand(p["ids"], dt)))
        return lambda i: torch.scatter_add(get(i)[0], p["dim"], get(i)[1], get(i)[2])
    if op == "indexAdd":
        src = [p["ids"][0] if d == p["dim"] else s for d, s in enumerate(shape)]
        get = rot(lambda: (rand(shape, dt), ids(), rand(src, dt)))
        return lambda i: torch.index_add(get(i)[0], p["dim"], get(i)[1], get(i)[2])
    if op == "embedding":
        get = rot(lambda: (rand(shape, dt), ids()))
        return lambda i: F.embedding(get(i)[1], get(i)[0])
    if op in ("argsort", "sort"):
        # ours is stable: ask torch for the same
        get = rot(lambda: rand(shape, dt))
        if op == "argsort":
            return lambda i: torch.argsort(get(i), dim=p["dim"], stable=True)
        return lambda i: torch.sort(get(i), dim=p["dim"], stable=True)
    if op == "topk":
        get = rot(lambda: rand(shape, dt))
        return lambda i: torch.topk(get(i), p["k"], dim=p["dim"], largest=True, sorted=True)
    if op == "cat":
        get = rot(lambda: (rand(shape, dt), rand(c["shapeB"], dt)))
        return lambda i: torch.cat(get(i), dim=p["dim"])
    if op == "contiguousT":
        get = rot(lambda: rand(shape, dt))
        return lambda i: get(i).t().contiguous()
    if op == "cumsum":
        get = rot(lambda: rand(shape, dt))
        return lambda i: torch.cumsum(get(i), dim=p["dim"])
    if op == "batchNorm":
        ch = shape[1]
        mean, var = rand([ch], dt), rand([ch], dt, 0.5, 2.0)
        weight, bias = rand([ch], dt, 0.5, 1.5), rand([ch], dt)
        get = rot(lambda: rand(shape, dt))
        return lambda i: F.batch_norm(get(i), mean, var, weight, bias, training=False, eps=1e-5)
    if op == "rope":
        t, d = shape[2], shape[3]
        cos, sin = rand([t, d // 2], dt, -1, 1), rand([t, d // 2], dt, -1, 1)
        get = rot(lambda: rand(shape, dt))
        return lambda i: _rope(get(i), cos, sin)
    if op == "attention":
        get = rot(lambda: (rand(shape, dt, -1, 1), rand(c["shapeB"], dt, -1, 1), rand(c["shapeB"], dt, -1, 1)))
        causal = bool(p.get("causal", False))
        # grouped-query heads only where the heads differ: with equal heads it means nothing,
        # and leaving it off keeps every fused backend eligible
        gqa = shape[1] != c["shapeB"][1]
        return lambda i: F.scaled_dot_product_attention(*get(i), is_causal=causal, enable_gqa=gqa)
    return None
