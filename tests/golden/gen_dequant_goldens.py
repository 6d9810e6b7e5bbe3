#!/usr/bin/python3
"""Writes tests/golden/dequant_blocks.bin and dequant_blocks.txt for tests/test_dequant.cpp.

For every ggml block type mote's GGUF importer dequantizes, a few blocks of pseudo-random bytes
whose fp16 scale fields (d, and dmin or m where the type has one) are overwritten with finite
values (1, negative, subnormal, zero, then random magnitudes up to 4, so every value fits f16),
and what the gguf Python package (0.10.0, toolchains/requirements-goldens.txt) makes of them:
`gguf.quants.dequantize`, ggml's reference dequantization written in numpy. mote's must give
the same floats bit for bit. dequant_blocks.bin is the arrays back to back (uint8, float32
little-endian), described by one line per type in dequant_blocks.txt:

  type name=Q5_0 id=6 elements=256 bytes=A n_bytes=B values=C

where A and C are byte offsets into dequant_blocks.bin, B the byte count and `elements` the
number of floats at C. Run with /usr/bin/python3 (where gguf and numpy are installed).
"""
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

from golden_arrays import GoldenArrays


# (type, byte offsets of the fp16 scale fields in a block, blocks to write)
TYPES = [
    (T.Q8_0, [0], 8),
    (T.Q4_0, [0], 8),
    (T.Q4_1, [0, 2], 8),
    (T.Q5_0, [0], 8),
    (T.Q5_1, [0, 2], 8),
    (T.IQ4_NL, [0], 8),
    (T.Q2_K, [80, 82], 5),
    (T.Q3_K, [108], 5),
    (T.Q4_K, [0, 2], 5),
    (T.Q5_K, [0, 2], 5),
    (T.Q6_K, [208], 5),
    (T.IQ4_XS, [0], 5),
]
SPECIAL_SCALES = [1.0, -0.75, 2.0 ** -24 * 37, 0.0]  # then random ones


def scales(rng, count):
    out = list(SPECIAL_SCALES[:count])
    while len(out) < count:
        out.append(float(rng.choice([-1, 1]) * 2.0 ** rng.uniform(-14, 2)))
    return np.array(out, dtype=np.float16)


def blocks(rng, qtype, scale_offsets, count):
    block_bytes = GGML_QUANT_SIZES[qtype][1]
    raw = rng.integers(0, 256, size=(count, block_bytes), dtype=np.uint8)
    for k, at in enumerate(scale_offsets):
        d = scales(rng, count)
        if k == 1:
            d = d[::-1].copy()  # the second field (dmin, m) meets the special values in other blocks
        raw[:, at:at + 2] = d.view(np.uint8).reshape(count, 2)
    return raw.reshape(-1)


def main():
    rng = np.random.default_rng(20261203)
    out = GoldenArrays("gen_dequant_goldens.py", align=4)
    for qtype, scale_offsets, count in TYPES:
        raw = blocks(rng, qtype, scale_offsets, count)
        values = dequantize(raw, qtype).astype("<f4").reshape(-1)
        assert values.size == count * GGML_QUANT_SIZES[qtype][0]
        assert np.all(np.isfinite(values)) and np.all(np.abs(values) <= 65504), qtype.name
        out.lines.append(f"type name={qtype.name} id={int(qtype)} elements={values.size} bytes={out.append(raw)} "
                         f"n_bytes={raw.size} values={out.append(values)}")
    out.write("dequant_blocks", "types")


if __name__ == "__main__":
    main()
