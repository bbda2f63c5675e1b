"""Writes a Hugging Face model folder with random bf16 weights in the shapes of a real model
(config.json + sharded safetensors via save_pretrained), for rocm-tensor's LLM benchmark.
Usage: python3 make_random_model.py {llama-3.2-1b|llama-3.1-8b} OUT_DIR
"""
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

SHAPES = {
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=64, tie_word_embeddings=True,
                         rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=128, tie_word_embeddings=False,
                         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
}


def main() -> None:
    name, out = sys.argv[1], sys.argv[2]
    t0 = time.time()
    cfg = LlamaConfig(vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                      bos_token_id=128000, eos_token_id=128001, **SHAPES[name])
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, max_shard_size="5GB")
    print(f"{name}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters written to {out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
