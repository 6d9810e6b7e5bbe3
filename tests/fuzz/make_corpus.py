#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora from small valid files (the committed goldens).

Usage: tests/fuzz/make_corpus.py MOTE_CLI OUT_DIR
Creates OUT_DIR/<target>/ for each target in tests/fuzz/CMakeLists.txt. Multi-file targets take
their parts as fuzz_support.hpp's split_parts reads them: each part but the last prefixed by its
u32 little-endian length. Needs only Python's standard library and the built mote CLI (which
converts the .mote seeds).
"""
import json
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


# Small seeds. A libFuzzer run costs time per input byte (sanitizer-instrumented parsing,
# checksums, conversion), so besides the goldens each loader target gets seeds of a few KB: the
# same formats with tiny dimensions (dim 8 or 32, one or two layers), which open and generate at
# many times the goldens' rate. Weights are seeded random values, deterministic run to run.
def llama2c_checkpoint(dim, hidden, layers, heads, kv_heads, vocab, seq_len, shared, seed):
    rng = random.Random(seed)
    head = dim // heads
    n = (vocab * dim + layers * (dim + dim * dim + 2 * dim * kv_heads * head + dim * dim + dim + 3 * dim * hidden) + dim +
         seq_len * head + (0 if shared else vocab * dim))
    return (struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab if shared else -vocab, seq_len) +
            struct.pack("<%df" % n, *[rng.gauss(0, 0.3) for _ in range(n)]))


def gguf_read(data):
    """The key-value pairs of a GGUF v3 file as (key, type, raw value bytes), in order."""
    at = 24
    n_kv = struct.unpack_from("<Q", data, 16)[0]
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(kind, at):
        if kind in sizes:
            return at + sizes[kind]
        if kind == 8:
            return at + 8 + struct.unpack_from("<Q", data, at)[0]
        element, count = struct.unpack_from("<IQ", data, at)
        at += 12
        for _ in range(count):
            at = skip(element, at)
        return at

    pairs = []
    for _ in range(n_kv):
        length = struct.unpack_from("<Q", data, at)[0]
        key = data[at + 8:at + 8 + length].decode()
        kind = struct.unpack_from("<I", data, at + 8 + length)[0]
        start = at + 12 + length
        at = skip(kind, start)
        pairs.append((key, kind, data[start:at]))
    return pairs


def gguf_small(golden, seed, nan_in=None):
    """tiny_llama.gguf's tokenizer and metadata with one small layer: dim 32, FFN 32, context 16,
    tensors in f32, f16, bf16, q4_0, q4_1 and q8_0 (random blocks with small finite scales).
    nan_in names an F32 tensor whose element 5 becomes a NaN (the importer must refuse it)."""
    rng = random.Random(seed)
    changed = {"llama.block_count": 1, "llama.feed_forward_length": 32, "llama.context_length": 16}
    pairs = [(k, t, struct.pack("<I", changed[k]) if k in changed else v) for k, t, v in gguf_read(golden)]
    vocab = 268
    # name, ggml shape (columns first), ggml type
    tensors = [("token_embd.weight", [32, vocab], 2), ("blk.0.attn_q.weight", [32, 32], 1),
               ("blk.0.attn_k.weight", [32, 16], 30), ("blk.0.attn_v.weight", [32, 16], 8),
               ("blk.0.attn_output.weight", [32, 32], 3), ("blk.0.ffn_gate.weight", [32, 32], 8),
               ("blk.0.ffn_up.weight", [32, 32], 0), ("blk.0.ffn_down.weight", [32, 32], 2),
               ("blk.0.attn_norm.weight", [32], 0), ("blk.0.ffn_norm.weight", [32], 0),
               ("output_norm.weight", [32], 0), ("output.weight", [32, vocab], 3)]

    def payload(shape, kind):
        n = 1
        for d in shape:
            n *= d
        if kind == 0:
            return struct.pack("<%df" % n, *[rng.gauss(0, 0.3) for _ in range(n)])
        if kind in (1, 30):  # f16 / bf16 of values in about [-0.5, 0.5]
            hi = (0x34, 0xB4) if kind == 1 else (0x3E, 0xBE)
            return b"".join(bytes([rng.randrange(256), rng.choice(hi)]) for _ in range(n))
        scale = struct.pack("<e", 0.01)
        if kind == 2:
            return b"".join(scale + bytes(rng.randrange(256) for _ in range(16)) for _ in range(n // 32))
        if kind == 3:
            return b"".join(scale + struct.pack("<e", -0.05) + bytes(rng.randrange(256) for _ in range(16))
                            for _ in range(n // 32))
        return b"".join(scale + bytes(rng.randrange(256) for _ in range(32)) for _ in range(n // 32))

    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(pairs))
    for key, kind, value in pairs:
        head += struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", kind) + value
    data = b""
    for name, shape, kind in tensors:
        head += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(shape))
        head += struct.pack("<%dQ" % len(shape), *shape) + struct.pack("<IQ", kind, len(data))
        values = payload(shape, kind)
        if name == nan_in:
            values = values[:20] + struct.pack("<f", float("nan")) + values[24:]
        data += values
        data += bytes(-len(data) % 32)
    return head + bytes(-len(head) % 32) + data


def gguf_with_u32(data, key, value):
    """data with key's u32 metadata value replaced (the same size: nothing else moves)."""
    needle = struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", 4)
    at = data.index(needle) + len(needle)
    return data[:at] + struct.pack("<I", value) + data[at + 4:]


def safetensors(tensors, seed):
    """A safetensors file of (name, dtype, shape) tensors with seeded random values."""
    rng = random.Random(seed)
    header, data = {}, b""
    for name, dtype, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        values = [rng.gauss(0, 0.3) for _ in range(n)]
        if dtype == "F32":
            raw = struct.pack("<%df" % n, *values)
        elif dtype == "F16":
            raw = struct.pack("<%de" % n, *values)
        else:  # BF16: the high half of the f32
            raw = b"".join(struct.pack("<f", v)[2:] for v in values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def hf_small(seed):
    """tiny_hf's tokenizer with a small Llama: hidden 8, one layer, 2 heads, 1 KV head, tied embeddings."""
    config = json.loads(read("tiny_hf/config.json"))
    config.update(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=1, max_position_embeddings=16, tie_word_embeddings=True)
    vocab = config["vocab_size"]
    tensors = [("model.embed_tokens.weight", "BF16", [vocab, 8]), ("model.norm.weight", "F32", [8]),
               ("model.layers.0.input_layernorm.weight", "F32", [8]),
               ("model.layers.0.post_attention_layernorm.weight", "F16", [8]),
               ("model.layers.0.self_attn.q_proj.weight", "F32", [8, 8]),
               ("model.layers.0.self_attn.k_proj.weight", "F16", [4, 8]),
               ("model.layers.0.self_attn.v_proj.weight", "BF16", [4, 8]),
               ("model.layers.0.self_attn.o_proj.weight", "F32", [8, 8]),
               ("model.layers.0.mlp.gate_proj.weight", "F32", [16, 8]),
               ("model.layers.0.mlp.up_proj.weight", "F16", [16, 8]),
               ("model.layers.0.mlp.down_proj.weight", "BF16", [8, 16])]
    return json.dumps(config, indent=1).encode(), safetensors(tensors, seed)


def state_seeds():
    """fuzz_state's inputs: an even first byte loads the rest as it is; an odd one XORs the rest
    into the target's own valid state (tiny_mha, context 16, 5 tokens) from offset 8 * (byte >> 1)
    and fixes its checksum. Offsets of the header fields: models/FORMAT.md, "Session state"."""
    def mutate(offset, xor):
        return bytes([(offset // 8) << 1 | 1]) + bytes(offset % 8) + xor
    return [
        ("valid", b"\x01"),
        ("position", mutate(56, bytes(4) + struct.pack("<I", 8))),   # position 5 -> 13: the size disagrees
        ("context", mutate(48, struct.pack("<I", 0x10))),            # context 16 -> 0
        ("kv_dtype", mutate(48, bytes(4) + struct.pack("<I", 2))),   # f32 -> q8_0
        ("token", mutate(88, struct.pack("<I", 0x40))),              # token 1 -> 65, past the vocabulary
        ("flags", mutate(64, bytes(4) + struct.pack("<I", 4))),      # an unknown flag
        ("attention", mutate(64, bytes(4) + struct.pack("<I", 2))),  # a bidirectional session's state
        ("total_size", mutate(32, struct.pack("<Q", 8))),            # the header's size field
        ("header_only", b"\x00MOTS" + struct.pack("<III", 2, 88, 0) + bytes(72)),
        ("version_1", b"\x00MOTS" + struct.pack("<III", 1, 88, 0) + bytes(72)),
        ("empty", b"\x00"),
    ]


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
        # llama-quantize's mixes: K super-blocks on the 256-value rows, q5_0/q5_1/iq4_nl/q4_0 and
        # their x8 layouts where rows are 32 values.
        ("tiny_llama_q4_k_m", ["tiny_llama.gguf", "--dtype", "q4_k_m"]),
        ("tiny_llama_q5_k_m_gguf", ["tiny_llama.gguf", "--dtype", "q5_k_m", "--layout", "gguf"]),
        ("tiny_llama_q2_k", ["tiny_llama.gguf", "--dtype", "q2_k"]),  # ffn_down in q3_kx8
        ("tiny_llama_iq4_nl", ["tiny_llama.gguf", "--dtype", "iq4_nl"]),
        ("tiny_llama_iq4_nl_gguf", ["tiny_llama.gguf", "--dtype", "iq4_nl", "--layout", "gguf"]),
        ("tiny_llama_q6_k", ["tiny_llama.gguf", "--dtype", "q6_k"]),
    ]
    # Every family's block (q/k/v biases, q/k norms, sandwich norms, windows, RoPE factors, fused
    # gate/up), so model_open mutates their config flags, fields and roles too.
    families = ["qwen2", "qwen3", "gemma3", "phi3", "llama3"]
    conversions += [("tiny_" + f, ["tiny_families/%s/model.gguf" % f]) for f in families]
    conversions += [("tiny_bert", ["tiny_embedders/bert/model.gguf"]),  # encoders: mote_embed, not generate
                    ("tiny_nomic_bert", ["tiny_embedders/nomic_bert/model.gguf"])]
    for name, args in conversions:
        out = os.path.join(scratch, name + ".mote")
        args = [a if a.startswith("-") or a in ("q8_0", "f16", "split", "q4_1", "gguf", "q4_k_m", "q5_k_m", "q2_k",
                                                 "iq4_nl", "q6_k") else os.path.join(GOLDEN, a)
                for a in args]
        subprocess.run([cli, "convert", *args, "-o", out], check=True, stderr=subprocess.DEVNULL)
        with open(out, "rb") as f:
            write(out_dir, "model_open", name, f.read())

    small = {"small_mha.bin": llama2c_checkpoint(8, 16, 1, 2, 2, 64, 8, True, 1),
             "small_gqa.bin": llama2c_checkpoint(8, 16, 2, 4, 2, 70, 8, False, 2),
             "small_q8.bin": llama2c_checkpoint(32, 32, 1, 4, 4, 64, 8, True, 3),
             "small_llama.gguf": gguf_small(read("tiny_llama.gguf"), 4)}
    for name, data in small.items():
        with open(os.path.join(scratch, name), "wb") as f:
            f.write(data)
    small_conversions = [
        ("small_mha_f32", ["small_mha.bin", "--tokenizer", "tiny_tok64.bin"]),
        ("small_gqa_f16", ["small_gqa.bin", "--tokenizer", "tiny_tok70.bin", "--dtype", "f16", "--rope", "split"]),
        ("small_q8", ["small_q8.bin", "--tokenizer", "tiny_tok64.bin", "--dtype", "q8_0"]),
        ("small_llama_gguf", ["small_llama.gguf"]),
        ("small_llama_q4_1", ["small_llama.gguf", "--dtype", "q4_1", "--layout", "gguf"]),
    ]
    for name, args in small_conversions:
        out = os.path.join(scratch, name + ".mote")
        args = [a if a.startswith("-") or a in ("q8_0", "f16", "split", "q4_1", "gguf") else
                os.path.join(scratch if a.startswith("small_") else GOLDEN, a) for a in args]
        subprocess.run([cli, "convert", *args, "-o", out], check=True, stderr=subprocess.DEVNULL)
        with open(out, "rb") as f:
            write(out_dir, "model_open", name, f.read())
    write(out_dir, "gguf", "small_llama", small["small_llama.gguf"])
    # Refusals with messages of their own: a NaN in an F32 tensor ("holds nan at index 5"), and a
    # GPT-2 whose 3 heads do not divide its width of 32 (that check alone, not the epsilon's).
    write(out_dir, "gguf", "small_llama_nan_f32", gguf_small(read("tiny_llama.gguf"), 4, "blk.0.ffn_up.weight"))
    gpt2_gguf = read("tiny_gpt2/prenorm_gelu_tanh.gguf")
    write(out_dir, "gguf", "tiny_gpt2", gpt2_gguf)
    write(out_dir, "gguf", "tiny_gpt2_3_heads", gguf_with_u32(gpt2_gguf, "gpt2.attention.head_count", 3))
    gpt2_config = read("tiny_gpt2/postnorm_sinusoidal/config.json")
    gpt2_parts = (read("tiny_gpt2/tokenizer.json"), read("tiny_gpt2/postnorm_sinusoidal/model.safetensors"))
    write(out_dir, "hf", "tiny_gpt2", pack(gpt2_config, *gpt2_parts))
    write(out_dir, "hf", "tiny_gpt2_3_heads", pack(gpt2_config.replace(b'"n_head": 4', b'"n_head": 3'), *gpt2_parts))
    config, weights = hf_small(5)
    write(out_dir, "hf", "small_hf", pack(config, read("tiny_hf/tokenizer.json"), weights))
    # Embedders (tests/golden/gen_tiny_embedders.py's dim-8 seeds, committed as regressions): a bert
    # and a nomic-bert GGUF (WordPiece in llama.cpp's phantom-space form, token types, embedding norm,
    # post-norms) and a BertModel folder (WordPiece tokenizer.json, position_ids I64, pooler).
    for target, name in (("gguf", "tiny_bert"), ("gguf", "tiny_nomic_bert"), ("hf", "tiny_bert")):
        with open(os.path.join(HERE, "regressions", target, name), "rb") as f:
            write(out_dir, target, name, f.read())
    write(out_dir, "llama2c", "small_mha", pack(small["small_mha.bin"], read("tiny_tok64.bin")))
    write(out_dir, "llama2c", "small_gqa", pack(small["small_gqa.bin"], read("tiny_tok70.bin")))

    write(out_dir, "gguf", "tiny_llama", read("tiny_llama.gguf"))
    for family in families:
        write(out_dir, "gguf", "tiny_" + family, read("tiny_families/%s/model.gguf" % family))
        hf = "tiny_families/%s/hf/" % family
        write(out_dir, "hf", "tiny_" + family,
              pack(read(hf + "config.json"), read(hf + "tokenizer.json"), read(hf + "model.safetensors")))
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
    # The new pre-tokenizers and added tokens (model variants 1-6, bits 2-4 of the first byte) on
    # text that tells them apart: contractions in any case, digit runs, newline runs, template tokens.
    new_kinds = [b"I'M here, you'RE there: 1234567 12 3\n\n\n  \r\n  x!!\n", b"<start_of_turn>user\n\nhi<end_of_turn>",
                 b"<|start_header_id|>user<|end_header_id|>\n\n 42<|eot_id|>", b"<|user|>\nhi<|end|>\n\t\tdone"]
    for i, text in enumerate(new_kinds):
        for variant in (1, 2, 3, 5):
            write(out_dir, "tokenizers", "kinds%d_%d" % (i, variant), bytes([(variant << 2) | (i & 2)]) + text)
    for i, text in enumerate(new_kinds):  # a system message, two turns; odd ones continue a conversation
        messages = [bytes([0]) + b"  Be terse.\n", bytes([1]) + text, bytes([2]) + b"Sure.", bytes([1]) + text[:7]]
        write(out_dir, "chat", "kinds%d" % i, bytes([(4 << 1) | 1]) + pack(*messages, bytes([i & 1])))

    rng = random.Random(20261201)
    for i in range(16):
        options = struct.pack("<fifff", [0.0, 0.7, 1.0, 1.5][i % 4], [0, 1, 5, 40][i // 4 % 4], [1.0, 0.9, 0.5][i % 3],
                              [0.0, 0.05, 0.3][i % 3], [1.0, 1.1, 1.3][i % 3])
        options += struct.pack("<Q", i) + bytes([64, 3, 1, 0])
        n = [1, 2, 33, 1000][i % 4]
        logits = struct.pack("<%df" % n, *[rng.gauss(0, 3) for _ in range(n)])
        write(out_dir, "sampler", "logits%02d" % i, options + logits)
    for name, data in state_seeds():
        write(out_dir, "state", name, data)
    for name in os.listdir(scratch):
        os.remove(os.path.join(scratch, name))
    os.rmdir(scratch)


if __name__ == "__main__":
    main()
