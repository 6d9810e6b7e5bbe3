#!/usr/bin/python3
"""Writes a random-weight llama2.c checkpoint (legacy float .bin) and a matching tokenizer.bin,
for benchmarks of a given shape. Default shape: stories15M (dim 288, hidden 768, 6 layers,
6 heads, vocabulary 32000, context 256). Needs numpy (Debian's python3-numpy).

  bench/make_random_llama2c.py OUT_DIR [--dim 288 --hidden 768 --layers 6 --heads 6
                                        --kv-heads 6 --vocab 32000 --seq-len 256]
"""
import argparse
import os
import struct

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--dim", type=int, default=288)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--kv-heads", type=int, default=6)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--seq-len", type=int, default=256)
    a = p.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    head = a.dim // a.heads
    kv_dim = a.kv_heads * head
    L = a.layers

    def weights(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype("<f4")

    tensors = [
        weights(a.vocab, a.dim),               # token embedding (shared classifier)
        np.ones((L, a.dim), "<f4"),           # rms_att
        weights(L, a.dim, a.dim),             # wq
        weights(L, kv_dim, a.dim),            # wk
        weights(L, kv_dim, a.dim),            # wv
        weights(L, a.dim, a.dim),             # wo
        np.ones((L, a.dim), "<f4"),           # rms_ffn
        weights(L, a.hidden, a.dim),          # w1
        weights(L, a.dim, a.hidden),          # w2
        weights(L, a.hidden, a.dim),          # w3
        np.ones(a.dim, "<f4"),                # rms_final
        np.zeros((a.seq_len, head), "<f4"),   # freq_cis real + imag (unused by mote)
    ]
    name = f"random_d{a.dim}_l{a.layers}_v{a.vocab}"
    with open(os.path.join(a.out_dir, name + ".bin"), "wb") as f:
        f.write(struct.pack("<7i", a.dim, a.hidden, a.layers, a.heads, a.kv_heads, a.vocab, a.seq_len))
        for t in tensors:
            f.write(t.tobytes())
    # <unk>, <s>, </s>, the 256 byte pieces, then distinct filler pieces.
    pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)]
    pieces += [b"t%d" % i for i in range(a.vocab - len(pieces))]
    with open(os.path.join(a.out_dir, name + ".tok.bin"), "wb") as f:
        f.write(struct.pack("<i", max(len(x) for x in pieces)))
        for i, piece in enumerate(pieces[: a.vocab]):
            f.write(struct.pack("<fi", -float(i), len(piece)) + piece)
    print(os.path.join(a.out_dir, name + ".bin"))


if __name__ == "__main__":
    main()
