#!/usr/bin/python3
"""Writes tests/golden/tiny_llama.gguf and its oracle values for tests/test_convert_gguf_golden.cpp.

The GGUF is written with the `gguf` Python package (0.10.0) and read back with its GGUFReader;
every tensor's `gguf.quants.dequantize` values are the golden (gguf_tiny_llama.bin, float32
little-endian, tensors in file order), described by gguf_tiny_llama.txt:

  config key=value ...             the hyperparameters the converter must produce
  tensor name=N type=T count=C at=A  tensor N (ggml type T) has C goldens starting at float A
  piece id=I hex=H                 token I's raw bytes after undoing GPT-2's byte-to-unicode map
  merge left=L right=R result=X    merges in rank order (duplicates dropped)

The model is a llama with dim 32, 3 layers, 4 heads / 2 KV heads, FFN 256 (so ffn_down rows
hold 256-element K-quant super-blocks), a separate classifier and a GPT-2 style vocabulary of
3 control tokens, the 256 bytes and a few merges. Tensors cycle through F32, F16, BF16, Q8_0,
Q4_0, Q4_1 (quantized with gguf.quants.quantize) and Q4_K/Q5_K/Q6_K (random bytes with sane fp16
scales: gguf 0.10 cannot quantize to K-quants, only dequantize them).

Run with /usr/bin/python3 (where gguf and numpy are installed) from any directory.
"""
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize, quantize
from gpt2_bytes import bytes_to_unicode  # tests/golden/gpt2_bytes.py

HERE = os.path.dirname(os.path.abspath(__file__))
DIM, LAYERS, HEADS, KV_HEADS, FFN, CTX = 32, 3, 4, 2, 256, 96
HEAD_DIM = DIM // HEADS


def vocabulary():
    b2u = bytes_to_unicode()
    u2b = {c: b for b, c in b2u.items()}
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [3, 3, 3]
    tokens += [b2u[b] for b in range(256)]
    types += [1] * 256
    # Merges in rank order; "h e" appears twice (the second must be dropped).
    merge_pairs = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "in"), ("h", "e"), ("Ã", "©"),
                   ("Ċ", "Ċ"), ("Ġthe", "Ġ")]
    for a, b in merge_pairs:
        if a + b not in tokens:
            tokens.append(a + b)
            types.append(1)
    tokens.append("<tool>")  # a user-defined token keeps its literal text
    types.append(4)
    raw = [t.encode() if ty != 1 else bytes(u2b[c] for c in t) for t, ty in zip(tokens, types)]
    return tokens, types, merge_pairs, raw


def k_quant_blocks(rng, qtype, rows, cols):
    """Random K-quant super-blocks with small finite fp16 scales."""
    block_bytes = gguf.GGML_QUANT_SIZES[qtype][1]
    blocks = rng.integers(0, 256, size=(rows * cols // 256, block_bytes), dtype=np.uint8)
    d = rng.uniform(0.001, 0.01, size=blocks.shape[0]).astype(np.float16).view(np.uint8).reshape(-1, 2)
    if qtype == T.Q6_K:
        blocks[:, 208:210] = d
    else:
        dmin = rng.uniform(0.0, 0.01, size=blocks.shape[0]).astype(np.float16).view(np.uint8).reshape(-1, 2)
        blocks[:, 0:2] = d
        blocks[:, 2:4] = dmin
    return blocks.reshape(rows, cols // 256 * block_bytes)


def main():
    rng = np.random.default_rng(20261130)
    tokens, types, merge_pairs, raw = vocabulary()
    vocab = len(tokens)
    path = os.path.join(HERE, "tiny_llama.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny llama for mote's converter tests")
    w.add_context_length(CTX)
    w.add_embedding_length(DIM)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(50000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_vocab_size(vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([a + " " + b for a, b in merge_pairs])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}")
    # Keys of every other value type, which the parser must read past.
    w.add_key_value("mote.test.u8", 200, gguf.GGUFValueType.UINT8)
    w.add_key_value("mote.test.i8", -100, gguf.GGUFValueType.INT8)
    w.add_key_value("mote.test.u16", 60000, gguf.GGUFValueType.UINT16)
    w.add_key_value("mote.test.i16", -30000, gguf.GGUFValueType.INT16)
    w.add_key_value("mote.test.i32", -2000000000, gguf.GGUFValueType.INT32)
    w.add_key_value("mote.test.u64", 1 << 40, gguf.GGUFValueType.UINT64)
    w.add_key_value("mote.test.i64", -(1 << 40), gguf.GGUFValueType.INT64)
    w.add_key_value("mote.test.f64", 3.25, gguf.GGUFValueType.FLOAT64)
    w.add_key_value("mote.test.bool", True, gguf.GGUFValueType.BOOL)
    w.add_array("mote.test.nested", [[1, 2, 3], [4, 5]])
    w.add_array("mote.test.strings", ["a", "", "ü"])

    # (name, rows, cols, type); rows x cols as numpy (outermost first).
    cycle = [T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.F32]
    k_types = [T.Q4_K, T.Q5_K, T.Q6_K]
    plan = [("token_embd.weight", vocab, DIM, T.Q8_0)]
    i = 0
    for l in range(LAYERS):
        for name, rows, cols in [("attn_q", HEADS * HEAD_DIM, DIM), ("attn_k", KV_HEADS * HEAD_DIM, DIM),
                                 ("attn_v", KV_HEADS * HEAD_DIM, DIM), ("attn_output", DIM, HEADS * HEAD_DIM),
                                 ("ffn_gate", FFN, DIM), ("ffn_up", FFN, DIM)]:
            plan.append((f"blk.{l}.{name}.weight", rows, cols, cycle[i % len(cycle)]))
            i += 1
        plan.append((f"blk.{l}.ffn_down.weight", DIM, FFN, k_types[l]))
        plan.append((f"blk.{l}.attn_norm.weight", DIM, 0, T.F32))
        plan.append((f"blk.{l}.ffn_norm.weight", DIM, 0, T.F32))
    plan.append(("output_norm.weight", DIM, 0, T.F32))
    plan.append(("output.weight", vocab, DIM, T.Q4_1))
    for name, rows, cols, qtype in plan:
        if cols == 0:
            w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(rows)).astype(np.float32))
        elif qtype in k_types:
            w.add_tensor(name, k_quant_blocks(rng, qtype, rows, cols), raw_dtype=qtype)
        else:
            x = (0.1 * rng.standard_normal((rows, cols))).astype(np.float32)
            if qtype == T.F32:
                w.add_tensor(name, x)
            elif qtype == T.F16:
                w.add_tensor(name, x.astype(np.float16))
            else:
                w.add_tensor(name, quantize(x, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # The oracle: read the file back and dequantize every tensor with the gguf package.
    r = gguf.GGUFReader(path)
    lines = ["# generated by gen_gguf_goldens.py; see its docstring",
             f"config dim={DIM} layers={LAYERS} heads={HEADS} kv_heads={KV_HEADS} head_dim={HEAD_DIM} ffn={FFN} "
             f"vocab={vocab} ctx={CTX} theta=50000 eps=1e-06 bos=1 eos=2 unk=-1 tied=0 chat=1 "
             f"merges={len(merge_pairs) - 1} tensors={len(r.tensors)}"]
    goldens = []
    at = 0
    for t in r.tensors:
        values = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)
        assert values.size == int(np.prod(t.shape)), t.name
        lines.append(f"tensor name={t.name} type={t.tensor_type.name} count={values.size} at={at}")
        goldens.append(values)
        at += values.size
    np.concatenate(goldens).astype("<f4").tofile(os.path.join(HERE, "gguf_tiny_llama.bin"))
    for i, piece in enumerate(raw):
        lines.append(f"piece id={i} hex={piece.hex()}")
    seen = set()
    for a, b in merge_pairs:
        ids = (tokens.index(a), tokens.index(b))
        if ids in seen:
            continue
        seen.add(ids)
        lines.append(f"merge left={ids[0]} right={ids[1]} result={tokens.index(a + b)}")
    with open(os.path.join(HERE, "gguf_tiny_llama.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes), {len(r.tensors)} tensors, {at} golden values")


if __name__ == "__main__":
    main()
