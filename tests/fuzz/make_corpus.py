#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora from small valid files (the committed goldens).

Usage: tests/fuzz/make_corpus.py MOTE_CLI OUT_DIR
Creates OUT_DIR/<target>/ for each target in tests/fuzz/CMakeLists.txt. Multi-file targets take
their parts as fuzz_support.hpp's split_parts reads them: each part but the last prefixed by its
u32 little-endian length. Needs only Python's standard library and the built mote CLI (which
converts the .mote seeds).
"""
import os
import random
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden")


def read(name):
    with open(os.path.join(GOLDEN, name), "rb") as f:
        return f.read()


def pack(*parts):
    out = b""
    for part in parts[:-1]:
        out += struct.pack("<I", len(part)) + part
    return out + parts[-1]


def write(out_dir, target, name, data):
    folder = os.path.join(out_dir, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main():
    cli, out_dir = sys.argv[1], sys.argv[2]
    scratch = os.path.join(out_dir, "scratch")
    os.makedirs(scratch, exist_ok=True)

    # .mote files: llama2.c models in several dtypes, and the GGUF model (byte-level BPE, ChatML).
    conversions = [
        ("tiny_mha_f32", ["tiny_mha.bin", "--tokenizer", "tiny_tok64.bin"]),
        ("tiny_mha_q8", ["tiny_mha.bin", "--tokenizer", "tiny_tok64.bin", "--dtype", "q8_0"]),
        ("tiny_gqa_f32", ["tiny_gqa.bin", "--tokenizer", "tiny_tok70.bin"]),
        ("tiny_odd_f16", ["tiny_odd.bin", "--tokenizer", "tiny_tok67.bin", "--dtype", "f16", "--rope", "split"]),
        ("tiny_llama_gguf", ["tiny_llama.gguf"]),
        ("tiny_llama_q4_1", ["tiny_llama.gguf", "--dtype", "q4_1", "--layout", "gguf"]),
    ]
    for name, args in conversions:
        out = os.path.join(scratch, name + ".mote")
        args = [a if a.startswith("-") or a in ("q8_0", "f16", "split", "q4_1", "gguf") else os.path.join(GOLDEN, a)
                for a in args]
        subprocess.run([cli, "convert", *args, "-o", out], check=True, stderr=subprocess.DEVNULL)
        with open(out, "rb") as f:
            write(out_dir, "model_open", name, f.read())

    write(out_dir, "gguf", "tiny_llama", read("tiny_llama.gguf"))
    write(out_dir, "hf", "tiny_hf", pack(read("tiny_hf/config.json"), read("tiny_hf/tokenizer.json"),
                                         read("tiny_hf/model.safetensors")))
    write(out_dir, "llama2c", "tiny_mha", pack(read("tiny_mha.bin"), read("tiny_tok64.bin")))
    write(out_dir, "llama2c", "tiny_gqa", pack(read("tiny_gqa.bin"), read("tiny_tok70.bin")))

    texts = [b"", b"Hello, world!", b"The quick brown fox jumps over the lazy dog. It's 2026, isn't it?",
             b"<|im_start|>user\nhi<|im_end|>\n", "caf\u00e9 \u65e5\u672c\u8a9e \U0001F600 \u0661\u0662".encode(),
             b"  \t\n\n   x   ", b"\xff\xfe\xc0\x80 invalid", b"a" * 300, b"x'll y've z's 123 4567"]
    for line in open(os.path.join(GOLDEN, "smollm2_tokenize.txt"), encoding="utf-8"):
        for field in line.split():
            if field.startswith("text="):
                texts.append(bytes.fromhex(field[5:]))
    for i, text in enumerate(texts):
        write(out_dir, "tokenizers", "text%02d" % i, bytes([i % 4]) + text)

    for i, text in enumerate(texts[:8]):
        messages = [bytes([0]) + b"You are helpful.", bytes([1]) + text, bytes([2]) + b"Sure.", bytes([1]) + text[:5]]
        count = 1 + i % 4
        write(out_dir, "chat", "chat%02d" % i, bytes([((count << 1) | (i & 1)) & 0xFF]) + pack(*messages[:count], b""))

    rng = random.Random(20261201)
    for i in range(16):
        options = struct.pack("<fifff", [0.0, 0.7, 1.0, 1.5][i % 4], [0, 1, 5, 40][i // 4 % 4], [1.0, 0.9, 0.5][i % 3],
                              [0.0, 0.05, 0.3][i % 3], [1.0, 1.1, 1.3][i % 3])
        options += struct.pack("<Q", i) + bytes([64, 3, 1, 0])
        n = [1, 2, 33, 1000][i % 4]
        logits = struct.pack("<%df" % n, *[rng.gauss(0, 3) for _ in range(n)])
        write(out_dir, "sampler", "logits%02d" % i, options + logits)
    for name in os.listdir(scratch):
        os.remove(os.path.join(scratch, name))
    os.rmdir(scratch)


if __name__ == "__main__":
    main()
