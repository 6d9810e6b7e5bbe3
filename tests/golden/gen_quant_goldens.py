#!/usr/bin/python3
"""Writes tests/golden/quant_rows.bin and quant_rows.txt for tests/test_quantize.cpp.

Rows of float32 values (random, plus the edge cases a block quantizer gets wrong) and, per row,
what the gguf Python package (0.10.0, toolchains/requirements-goldens.txt) makes of them:
`gguf.quants.quantize` bytes for Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 (the last two checked by
test_quantize_recipes.cpp), and `gguf.quants.dequantize` of those
bytes. mote's quantizers must produce the same bytes bit for bit and its dequantizer the same
floats. quant_rows.bin is those arrays back to back (float32 little-endian, uint8), described
by one line per row in quant_rows.txt:

  row name=N count=C values=V q8_0=A q8_0_values=B q4_0=... q4_1=... q4_1_values=... q5_1_values=...

where each number after `=` is the byte offset of that array in quant_rows.bin and C the number
of floats (a multiple of 32). Run with /usr/bin/python3 (where gguf and numpy are installed).
"""
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

from golden_arrays import GoldenArrays

TYPES = [("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("q4_1", T.Q4_1), ("q5_0", T.Q5_0), ("q5_1", T.Q5_1)]


def rows():
    rng = np.random.default_rng(20261201)
    out = []
    block = lambda *v: np.array(v, dtype=np.float32)
    out.append(("zeros", np.zeros(32)))
    out.append(("constant_positive", np.full(32, 0.75)))
    out.append(("constant_negative", np.full(64, -3.0)))
    outlier = 0.01 * rng.standard_normal(64)
    outlier[37] = 1000.0
    out.append(("single_outlier", outlier))
    negative_max = rng.uniform(-1, 1, 64)
    negative_max[5], negative_max[40] = -4.0, -2.5  # the largest magnitude is negative
    out.append(("negative_max", negative_max))
    tie = rng.uniform(-1, 1, 32)
    tie[3], tie[9] = 2.0, -2.0  # equal magnitudes: Q4_0 takes the first
    out.append(("magnitude_tie", tie))
    # amax 127 makes Q8_0's d exactly 1: these land on .5 (rounded away from zero).
    halves = np.arange(-15.5, 16.5, 1.0)
    halves[0] = 127.0
    out.append(("q8_0_halves", halves))
    # amax 8 / range 15 give Q4 steps of exactly 1, with values on the truncation edges.
    out.append(("q4_steps", np.concatenate([np.linspace(-8, 7, 32), np.linspace(0, 15, 32) + 0.5])))
    # Found by search: an element whose Q4_0 code differs when x * id + 8.5 is computed in float
    # rather than in double as gguf does (the "FMA-dependent" rounding gguf pins down).
    out.append(("q4_0_double_rounding", [
        8.402262687683105, -6.548367500305176, 0.401790976524353, -8.492491722106934, 14.08349609375,
        -0.45905178785324097, 4.393049240112305, 20.21072769165039, -10.864723205566406, 3.1171278953552246,
        3.6381616592407227, 8.827119827270508, 0.7139780521392822, 2.856412649154663, 9.883644104003906,
        -3.3388617038726807, -10.892229080200195, 6.698232173919678, -0.23346485197544098, 13.633703231811523,
        12.881519317626953, -4.685215473175049, 9.281756401062012, -20.48508644104004, -7.111588954925537,
        -5.805449485778809, -12.313692092895508, -12.558699607849121, 6.580600738525391, -1.1963741779327393,
        0.7007877826690674, -16.060766220092773]))
    out.append(("tiny", 1e-6 * rng.standard_normal(64)))
    out.append(("fp16_subnormal_scale", 1e-9 * rng.standard_normal(32)))
    out.append(("large", 6e4 * rng.uniform(-1, 1, 32)))  # q4_1 keeps min in fp16 range
    out.append(("offset_row", 1000.0 + 0.001 * rng.standard_normal(32)))
    # Scales spread over many binades, so the fp16 rounding of d is exercised everywhere.
    for i, scale in enumerate([3e-4, 0.017, 0.5, 2.0, 77.0, 1234.5]):
        out.append((f"scale_{i}", scale * rng.standard_normal(128)))
    out.append(("uniform", rng.uniform(-0.2, 0.3, 256)))
    out.append(("normal", 0.05 * rng.standard_normal(512)))
    return [(name, np.asarray(v, dtype=np.float32)) for name, v in out]


def main():
    out = GoldenArrays("gen_quant_goldens.py")
    for name, values in rows():
        assert values.size % 32 == 0, name
        fields = [f"row name={name} count={values.size} values={out.append(values.astype('<f4'))}"]
        for label, qtype in TYPES:
            q = quantize(values.reshape(1, -1), qtype).reshape(-1)
            fields.append(f"{label}={out.append(q)}")
            fields.append(f"{label}_values={out.append(dequantize(q, qtype).astype('<f4').reshape(-1))}")
        out.lines.append(" ".join(fields))
    out.write("quant_rows", "rows")


if __name__ == "__main__":
    main()
