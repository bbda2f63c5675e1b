"""Hugging Face transformers as the reference for rocm-tensor's Llama-family models.

Loads a model folder with AutoModelForCausalLM (eager attention) on the GPU and writes JSON:
  greedy: the ids of `new` greedy tokens after the prompt, in float32
  logits: the prefill logits of the prompt in bfloat16 (as float32 numbers), flattened
Usage: python3 hf_reference.py MODEL_DIR OUT.json --prompt 1,2,3 [--new 64]
"""
import argparse
import json

import torch
from transformers import AutoModelForCausalLM


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--new", type=int, default=64)
    a = ap.parse_args()
    ids = torch.tensor([[int(x) for x in a.prompt.split(",")]], device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    result = {"transformers": __import__("transformers").__version__, "torch": torch.__version__}
    m = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32, attn_implementation="eager").cuda().eval()
    # a plain greedy loop over the model's own cache: generate() would add logits processors
    greedy = []
    with torch.no_grad():
        out = m(ids, use_cache=True)
        for _ in range(a.new):
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            greedy.append(int(nxt))
            out = m(nxt, past_key_values=out.past_key_values, use_cache=True)
    result["greedy"] = greedy
    del m
    m = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16, attn_implementation="eager").cuda().eval()
    with torch.no_grad():
        logits = m(ids).logits.float()
    result["logits"] = logits.flatten().tolist()
    result["logitsShape"] = list(logits.shape)
    with open(a.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
