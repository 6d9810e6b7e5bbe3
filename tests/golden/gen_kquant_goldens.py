#!/usr/bin/python3
"""Writes tests/golden/kquant_mixes.txt for tests/test_quantize_recipes.cpp: what llama-quantize
makes, without an importance matrix, of two small F32 llama models, per type and mix.

- `gqa4`: 8 layers, width 256, 4 heads over 1 KV head, FFN 320, vocabulary 64, an untied
  classifier. Its 256-value rows take the K types; its 320-value ffn_down rows do not (llama-
  quantize falls back to Q5_0, Q5_1, Q8_0 or Q4_0 there); 8 layers reach every layer rule.
- `tied`: 2 layers, width 256, 4 heads over 2 KV heads, FFN 512, vocabulary 64, the classifier
  tied to the token embedding (which then takes the classifier's type); ffn_down takes K types.

The weights come from weights() below, integer hashing and exact float32 steps that the C++ test
repeats bit for bit, so no weights are committed. Some blocks are all zero, some tiny, some hold
an outlier. For each model and mix (llama-quantize's type name, or --pure TYPE for mote's
one-type-throughout q3_k, q4_k, q5_k) the manifest has one line per matrix:

  MODEL MIX TENSOR GGML_TYPE FNV1A64

the ggml type llama-quantize chose and the 64-bit FNV-1a hash of the tensor's bytes. The peer is
needed only to regenerate it:

  LLAMA_BIN=~/.cache/mote/peers/llama.cpp-build-0.3.36/bin /usr/bin/python3 gen_kquant_goldens.py

(the peer: llama.cpp from the llama-cpp-python 0.3.36 sdist, bench/peers/build_llama_cpp.sh).
"""
import os
import subprocess
import tempfile

import numpy as np
from gguf import GGUFReader, GGUFWriter

HERE = os.path.dirname(os.path.abspath(__file__))
DIM, HEADS, VOCAB = 256, 4, 64
HEAD = DIM // HEADS
# name: layers, KV heads, FFN width, tied classifier
MODELS = {"gqa4": (8, 1, 320, False), "tied": (2, 2, 512, True)}

# mote's --dtype name -> llama-quantize's arguments
MIXES = [
    ("q2_k", ["Q2_K"]), ("q3_k_s", ["Q3_K_S"]), ("q3_k_m", ["Q3_K_M"]), ("q4_k_s", ["Q4_K_S"]),
    ("q4_k_m", ["Q4_K_M"]), ("q5_k_s", ["Q5_K_S"]), ("q5_k_m", ["Q5_K_M"]), ("q6_k", ["Q6_K"]),
    ("q5_0", ["Q5_0"]), ("q5_1", ["Q5_1"]), ("iq4_nl", ["IQ4_NL"]),
    ("q3_k", ["--pure", "Q3_K_M"]), ("q4_k", ["--pure", "Q4_K_M"]), ("q5_k", ["--pure", "Q5_K_M"]),
]


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def mix32(x):
    """murmur3's 32-bit finalizer over uint32 arrays (wrapping)."""
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x85EBCA6B)
    x ^= x >> np.uint32(13)
    x *= np.uint32(0xC2B2AE35)
    x ^= x >> np.uint32(16)
    return x


def uniform(seed, n, stream):
    """n floats in [-1, 1), exact: a 24-bit integer times 2^-23."""
    i = np.arange(n, dtype=np.uint32)
    h = mix32(i * np.uint32(2) + np.uint32(stream) + mix32(np.array([seed], dtype=np.uint32)))
    return ((h >> np.uint32(8)).astype(np.int32) - (1 << 23)).astype(np.float32) * np.float32(2.0**-23)


def weights(name, rows, cols):
    """The tensor's float32 values, row-major; test_quantize_recipes.cpp repeats each step."""
    seed = fnv1a64(name.encode()) & 0xFFFFFFFF
    n = rows * cols
    v = (uniform(seed, n, 0) + uniform(seed, n, 1)) * np.float32(0.03)  # triangular, width 0.06
    idx = np.arange(n)
    v[idx % 1009 == 7] *= np.float32(50.0)  # outliers
    row = idx // cols
    col = idx % cols
    v[(row == 1) & (col < 256)] = 0  # a whole zero super-block (and zero 32-blocks)
    v[(row == 2) & (col < 32)] *= np.float32(1e-7)  # a tiny block
    return v.reshape(rows, cols)


def matrices(layers, kv_heads, ffn, tied):
    yield "token_embd.weight", VOCAB, DIM
    for l in range(layers):
        for role, rows, cols in [("attn_q", HEADS * HEAD, DIM), ("attn_k", kv_heads * HEAD, DIM),
                                 ("attn_v", kv_heads * HEAD, DIM), ("attn_output", DIM, HEADS * HEAD),
                                 ("ffn_gate", ffn, DIM), ("ffn_down", DIM, ffn), ("ffn_up", ffn, DIM)]:
            yield f"blk.{l}.{role}.weight", rows, cols
    if not tied:
        yield "output.weight", VOCAB, DIM


def write_model(path, layers, kv_heads, ffn, tied):
    w = GGUFWriter(path, "llama")
    w.add_block_count(layers)
    w.add_context_length(64)
    w.add_embedding_length(DIM)
    w.add_feed_forward_length(ffn)
    w.add_head_count(HEADS)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)  # ALL_F32
    w.add_tensor("output_norm.weight", np.ones(DIM, dtype=np.float32))
    for name, rows, cols in matrices(layers, kv_heads, ffn, tied):
        if name.startswith("blk.") and name.endswith("attn_q.weight"):
            layer = name.split(".")[1]
            w.add_tensor(f"blk.{layer}.attn_norm.weight", np.ones(DIM, dtype=np.float32))
            w.add_tensor(f"blk.{layer}.ffn_norm.weight", np.ones(DIM, dtype=np.float32))
        w.add_tensor(name, weights(name, rows, cols))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    bin_dir = os.path.expanduser(os.environ.get("LLAMA_BIN", "~/.cache/mote/peers/llama.cpp-build-0.3.36/bin"))
    env = dict(os.environ, LD_LIBRARY_PATH=bin_dir)
    lines = ["# generated by gen_kquant_goldens.py (llama-quantize of llama.cpp 0c1e57098bba); see its docstring"]
    with tempfile.TemporaryDirectory() as tmp:
        for model, shape in MODELS.items():
            source = os.path.join(tmp, model + ".gguf")
            write_model(source, *shape)
            for mix, args in MIXES:
                out = os.path.join(tmp, f"{model}-{mix}.gguf")
                subprocess.run([os.path.join(bin_dir, "llama-quantize"), *args[:-1], source, out, args[-1], "1"],
                               env=env, check=True, capture_output=True)
                for t in GGUFReader(out).tensors:
                    if len(t.shape) < 2 or min(t.shape) == 1:
                        continue
                    data = np.asarray(t.data).tobytes()
                    lines.append(f"{model} {mix} {t.name} {t.tensor_type.name.lower()} {fnv1a64(data):016x}")
                print(model, mix, "done")
    with open(os.path.join(HERE, "kquant_mixes.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote kquant_mixes.txt, {len(lines) - 1} tensors")


if __name__ == "__main__":
    main()
