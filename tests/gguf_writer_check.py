#!/usr/bin/env python3
"""Reads a GGUF written by `mote convert -o X.gguf` with the `gguf` package (an independent reader)
and checks it against what test_gguf_writer.cpp expects.

usage: gguf_writer_check.py FILE.gguf EXPECT_DIR
EXPECT_DIR holds keys.txt (lines "key<TAB>kind<TAB>value", kind int/float/str/bool/count: count is
an array's length), tensors.txt (lines "name<TAB>ggml type<TAB>dim0,dim1") with NAME.bin per tensor
(mote's plain blocks), and, for a split-half RoPE source, rope.txt ("head_count head_count_kv"):
then attn_q / attn_k rows are permuted here as llama.cpp's converter does before comparing.
Exit 0 when everything matches, 1 (with one line per mismatch) otherwise, 77 without `gguf`.
"""
import os
import sys

try:
    import numpy as np
    from gguf import GGUFReader
except ImportError as e:  # the caller reports the skip
    print(f"gguf or numpy missing: {e}")
    sys.exit(77)


def field_value(field):
    """A scalar field's value, a string's text, or an array's length."""
    from gguf import GGUFValueType
    kind = field.types[0]
    if kind == GGUFValueType.ARRAY:
        return len(field.data)
    part = field.parts[field.data[0]]
    if kind == GGUFValueType.STRING:
        return bytes(part).decode("utf-8")
    return part[0].item()


def permute_rope_rows(rows, n_head):
    """Hugging Face's split-half rows in GGUF's interleaved-pair order (whole rows move)."""
    shape = rows.shape
    return rows.reshape(n_head, 2, shape[0] // n_head // 2, *shape[1:]).swapaxes(1, 2).reshape(shape)


def main():
    path, expect = sys.argv[1], sys.argv[2]
    reader = GGUFReader(path)
    failures = []
    alignment = field_value(reader.fields["general.alignment"])
    if alignment != 32:
        failures.append(f"general.alignment is {alignment}, expected 32")
    with open(os.path.join(expect, "keys.txt"), encoding="utf-8") as f:
        for line in f:
            key, kind, want = line.rstrip("\n").split("\t")
            if key not in reader.fields:
                failures.append(f"key {key} is missing")
                continue
            got = field_value(reader.fields[key])
            ok = {
                "int": lambda: got == int(want),
                "count": lambda: got == int(want),
                "float": lambda: np.float32(got) == np.float32(float(want)),
                "bool": lambda: bool(got) == (want == "true"),
                "str": lambda: got == want,
            }[kind]()
            if not ok:
                failures.append(f"key {key} is {got!r}, expected {want!r}")
    rope = None
    if os.path.exists(os.path.join(expect, "rope.txt")):
        with open(os.path.join(expect, "rope.txt")) as f:
            rope = [int(x) for x in f.read().split()]
    tensors = {t.name: t for t in reader.tensors}
    expected_names = set()
    with open(os.path.join(expect, "tensors.txt"), encoding="utf-8") as f:
        for line in f:
            name, ggml_type, dims = line.rstrip("\n").split("\t")
            expected_names.add(name)
            t = tensors.get(name)
            if t is None:
                failures.append(f"tensor {name} is missing")
                continue
            if int(t.tensor_type) != int(ggml_type):
                failures.append(f"tensor {name} has type {t.tensor_type!r}, expected {ggml_type}")
            shape = [int(d) for d in t.shape]
            if shape != [int(d) for d in dims.split(",")]:
                failures.append(f"tensor {name} has shape {shape}, expected {dims}")
            want = np.fromfile(os.path.join(expect, name + ".bin"), dtype=np.uint8)
            if rope and (".attn_q." in name or ".attn_k." in name):
                rows = int(dims.split(",")[1])
                heads = rope[0] if ".attn_q." in name else rope[1]
                want = permute_rope_rows(want.reshape(rows, -1), heads).reshape(-1)
            got = np.asarray(t.data).view(np.uint8).reshape(-1)
            if got.size != want.size or not np.array_equal(got, want):
                failures.append(f"tensor {name}: bytes differ from mote's blocks")
    extra = set(tensors) - expected_names
    if extra:
        failures.append(f"unexpected tensors: {sorted(extra)}")
    for failure in failures:
        print(failure)
    print(f"{path}: {len(reader.tensors)} tensors, {len(reader.fields)} keys, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
