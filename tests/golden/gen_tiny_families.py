#!/usr/bin/env python3
"""Writes tests/golden/tiny_families/<family>/: tiny random-weight models of issue 21's families
(llama3, qwen2, qwen3, gemma3, phi3), each as a GGUF (llama.cpp's keys, tensor names and value
conventions) and as a Hugging Face folder (config.json as transformers writes it, model.safetensors
in F32, the byte-level tokenizer of tests/golden/tiny_hf), with the goldens of the float64 oracle
tests/golden/family_ref.py. Per family:

  model.gguf        architecture <arch>; matrices F16, vectors F32 (the values are f16-exact, so
                    the GGUF and the HF folder hold the same weights)
  hf/               config.json, model.safetensors, tokenizer.json, tokenizer_config.json
  logits.bin        float32 little-endian (48, 304): the oracle's logits after each of TOKENS
  greedy.txt        16 ids: the oracle's greedy continuation of TOKENS[:8], one line
  tokens.txt        TOKENS, one line

Before writing, the generator checks: the oracle reads both files to the same logits (1e-6 of the
range); each family's features matter (the oracle with the feature switched off moves some
position's logits by far more than the tests' tolerance, 1e-3 of the range; the margins are
printed); and family_ref agrees with gen_goldens.py's llama reference on its llama2.c models.

Run with python3 (numpy, gguf 0.10) from any directory.
"""
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import family_ref as fr  # noqa: E402
from gpt2_bytes import gguf_vocabulary  # noqa: E402

OUT = os.path.join(HERE, "tiny_families")
TOKENIZER = os.path.join(HERE, "tiny_hf")
VOCAB, CONTEXT = 304, 128
TOKENS = [int(t) for t in np.random.RandomState(21).randint(3, 299, size=48)]
PROMPT, GREEDY_STEPS = 8, 16
TOLERANCE = 1e-3  # the C++ test's bound, relative to each position's logit range
MIN_MARGIN = 50 * TOLERANCE

# family dir, GGUF arch, hyperparameters, tied, features that must matter
MODELS = [
    ("llama3", "llama", dict(dim=32, layers=2, heads=4, kv_heads=2, head_dim=8, ff=64, eps=1e-5,
                             rope_base=10000.0, llama3=dict(factor=8.0, low_freq_factor=1.0,
                                                            high_freq_factor=4.0, original_context=64)),
     False, ["rope_factors", "rope_style"]),
    ("qwen2", "qwen2", dict(dim=32, layers=2, heads=4, kv_heads=2, head_dim=8, ff=64, eps=1e-6,
                            rope_base=10000.0), False, ["qkv_bias", "rope_style"]),
    ("qwen3", "qwen3", dict(dim=32, layers=2, heads=4, kv_heads=2, head_dim=12, ff=64, eps=1e-6,
                            rope_base=10000.0), False, ["qk_norm", "rope_style"]),
    ("gemma3", "gemma3", dict(dim=32, layers=6, heads=2, kv_heads=1, head_dim=24, ff=48, eps=1e-6,
                              rope_base=1000000.0, window=8),
     True, ["window", "local_rope_base", "post_norms", "embed_scale", "qk_norm", "rope_style", "attn_scale", "act",
      "norm_plus_one"]),
    ("phi3", "phi3", dict(dim=32, layers=2, heads=4, kv_heads=4, head_dim=8, ff=64, eps=1e-5,
                          rope_base=10000.0, window=12), False, ["window", "rope_style", "gate_up_order"]),
]

# ---------------------------------------------------------------------------------------------
# Random canonical weights (family_ref's layout; llama's Q/K in Hugging Face's order).

def random_weights(arch, h, tied, rng):
    f16 = lambda a: a.astype(np.float16).astype(np.float64)
    mat = lambda rows, cols, gain=1.0: f16(rng.standard_normal((rows, cols)) * gain / math.sqrt(cols))
    gain = lambda n: f16(1.0 + 0.15 * rng.standard_normal(n))
    dim, hd, nq, nkv = h["dim"], h["head_dim"], h["heads"] * h["head_dim"], h["kv_heads"] * h["head_dim"]
    feats = fr.FAMILIES[arch]
    layers = []
    for _ in range(h["layers"]):
        l = dict(attn_norm=gain(dim), wq=mat(nq, dim, 1.5), wk=mat(nkv, dim, 1.5), wv=mat(nkv, dim),
                 wo=mat(dim, nq, 0.8), ffn_norm=gain(dim), gate=mat(h["ff"], dim), up=mat(h["ff"], dim),
                 down=mat(dim, h["ff"], 0.8))
        if feats["qkv_bias"]:
            l.update(bq=f16(0.5 * rng.standard_normal(nq)), bk=f16(0.5 * rng.standard_normal(nkv)),
                     bv=f16(0.3 * rng.standard_normal(nkv)))
        if feats["qk_norm"]:
            l.update(q_norm=gain(hd) * 1.5, k_norm=gain(hd) * 1.5)
        if feats["post_norms"]:
            l.update(post_attn_norm=gain(dim), post_ffn_norm=gain(dim))
        layers.append(l)
    w = dict(tok_embd=f16(0.5 * rng.standard_normal((VOCAB, dim))), output_norm=gain(dim), layers=layers)
    w["output"] = w["tok_embd"] if tied else mat(VOCAB, dim, 2.0)
    return w


def spec_of(arch, h):
    extra = {k: h[k] for k in ("window",) if k in h}
    factors = None
    if "llama3" in h:
        s = h["llama3"]
        factors = fr.llama3_rope_factors(h["head_dim"], h["rope_base"], s["factor"], s["low_freq_factor"],
                                         s["high_freq_factor"], s["original_context"])
    return fr.make_spec(arch, dim=h["dim"], layers=h["layers"], heads=h["heads"], kv_heads=h["kv_heads"],
                        head_dim=h["head_dim"], ff=h["ff"], vocab=VOCAB, eps=h["eps"], rope_base=h["rope_base"],
                        rope_style=fr.FAMILIES[arch]["hf_rope"], rope_factors=factors, **extra)


def llama_permute(w, heads):
    """convert_hf_to_gguf's llama Q/K row order: each head's halves interleaved (adjacent RoPE)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, w.shape[1]).swapaxes(1, 2).reshape(w.shape)


# ---------------------------------------------------------------------------------------------
# The GGUF.

GGUF_STEMS = {v: k for k, v in fr.GGUF_LAYER_NAMES.items() if v not in ("wqkv",)}


def gguf_tokenizer(w):
    tokens, types, merges = gguf_vocabulary(os.path.join(TOKENIZER, "tokenizer.json"), VOCAB)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def write_gguf(path, arch, h, spec, weights):
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(h["dim"])
    w.add_block_count(h["layers"])
    w.add_feed_forward_length(h["ff"])
    w.add_head_count(h["heads"])
    w.add_head_count_kv(h["kv_heads"])
    w.add_layer_norm_rms_eps(h["eps"])
    w.add_rope_freq_base(h["rope_base"])
    if arch in ("qwen3", "gemma3"):  # head size independent of width
        w.add_key_length(h["head_dim"])
        w.add_value_length(h["head_dim"])
    if arch in ("llama", "phi3"):
        w.add_rope_dimension_count(h["head_dim"])
    if arch == "llama":
        w.add_vocab_size(VOCAB)
    if spec["window"]:
        w.add_sliding_window(spec["window"])
    gguf_tokenizer(w)

    def add(name, a):
        w.add_tensor(name, a.astype(np.float16) if a.ndim == 2 else a.astype(np.float32))

    add("token_embd.weight", weights["tok_embd"])
    if spec["rope_factors"] is not None:
        add("rope_freqs.weight", spec["rope_factors"])
    for l, layer in enumerate(weights["layers"]):
        layer = dict(layer)
        if arch == "llama":
            layer["wq"], layer["wk"] = llama_permute(layer["wq"], h["heads"]), llama_permute(layer["wk"], h["kv_heads"])
        if arch == "phi3":  # fused: attn_qkv rows q, k, v; ffn_up rows gate, up
            add(f"blk.{l}.attn_qkv.weight", np.concatenate([layer.pop("wq"), layer.pop("wk"), layer.pop("wv")]))
            layer["up"] = np.concatenate([layer.pop("gate"), layer["up"]])
        for name, a in layer.items():
            add(f"blk.{l}.{GGUF_STEMS[name]}", a)
    add("output_norm.weight", weights["output_norm"])
    if weights["output"] is not weights["tok_embd"]:
        add("output.weight", weights["output"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------------------------------------
# The Hugging Face folder.

HF_NAMES = {v: k for k, v in fr.HF_LAYER_NAMES.items() if v not in ("wqkv", "gate_up")}
HF_ARCHITECTURES = {"llama": ("llama", "LlamaForCausalLM"), "qwen2": ("qwen2", "Qwen2ForCausalLM"),
                    "qwen3": ("qwen3", "Qwen3ForCausalLM"), "gemma3": ("gemma3_text", "Gemma3ForCausalLM"),
                    "phi3": ("phi3", "Phi3ForCausalLM")}


def hf_config(arch, h, tied):
    model_type, architecture = HF_ARCHITECTURES[arch]
    c = dict(architectures=[architecture], model_type=model_type, hidden_size=h["dim"],
             intermediate_size=h["ff"], num_hidden_layers=h["layers"], num_attention_heads=h["heads"],
             num_key_value_heads=h["kv_heads"], head_dim=h["head_dim"], rms_norm_eps=h["eps"],
             rope_theta=h["rope_base"], rope_scaling=None, max_position_embeddings=CONTEXT, vocab_size=VOCAB,
             tie_word_embeddings=tied, bos_token_id=1, eos_token_id=2, torch_dtype="float32",
             attention_dropout=0.0, transformers_version="4.53.0", use_cache=True)
    if arch == "llama":
        s = h["llama3"]
        c.update(hidden_act="silu", attention_bias=False, mlp_bias=False,
                 rope_scaling=dict(factor=s["factor"], low_freq_factor=s["low_freq_factor"],
                                   high_freq_factor=s["high_freq_factor"],
                                   original_max_position_embeddings=s["original_context"], rope_type="llama3"))
    elif arch in ("qwen2", "qwen3"):  # a sliding_window that use_sliding_window switches off
        c.update(hidden_act="silu", use_sliding_window=False, sliding_window=CONTEXT, max_window_layers=h["layers"])
        if arch == "qwen3":
            c.update(attention_bias=False)
    elif arch == "gemma3":
        types = ["full_attention" if fr.gemma3_layer_is_global(l) else "sliding_attention" for l in range(h["layers"])]
        c.update(hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=h["head_dim"],
                 sliding_window=h["window"], layer_types=types, sliding_window_pattern=fr.GEMMA3_PATTERN,
                 rope_local_base_freq=fr.GEMMA3_LOCAL_BASE, final_logit_softcapping=None,
                 attn_logit_softcapping=None, attention_bias=False, pad_token_id=0)
    elif arch == "phi3":
        c.update(hidden_act="silu", sliding_window=h["window"], original_max_position_embeddings=CONTEXT,
                 resid_pdrop=0.0, embd_pdrop=0.0, partial_rotary_factor=1.0, pad_token_id=0)
    return c


def write_safetensors(path, tensors):
    """safetensors by hand: u64 header length, JSON header, raw little-endian F32 data."""
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = dict(dtype="F32", shape=list(tensors[name].shape), data_offsets=[at, at + len(raw)])
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_hf(folder, arch, h, tied, weights):
    os.makedirs(folder)
    json.dump(hf_config(arch, h, tied), open(os.path.join(folder, "config.json"), "w"), indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER, name), os.path.join(folder, name))
    shift = 1.0 if arch == "gemma3" else 0.0  # Gemma3RMSNorm stores w and computes (1 + w)
    t = {"model.embed_tokens.weight": weights["tok_embd"], "model.norm.weight": weights["output_norm"] - shift}
    if not tied:
        t["lm_head.weight"] = weights["output"]
    names = dict(HF_NAMES, ffn_norm="post_attention_layernorm.weight")
    if arch == "gemma3":
        names.update(post_attn_norm="post_attention_layernorm.weight", ffn_norm="pre_feedforward_layernorm.weight")
    for l, layer in enumerate(weights["layers"]):
        layer = dict(layer)
        if arch == "phi3":
            layer["qkv"] = np.concatenate([layer.pop("wq"), layer.pop("wk"), layer.pop("wv")])
            layer["gate_up"] = np.concatenate([layer.pop("gate"), layer.pop("up")])
        fused = {"qkv": "self_attn.qkv_proj.weight", "gate_up": "mlp.gate_up_proj.weight"}
        for name, a in layer.items():
            is_norm = a.ndim == 1 and not name.startswith("b")
            t[f"model.layers.{l}.{fused.get(name) or names[name]}"] = a - shift if is_norm else a
    write_safetensors(os.path.join(folder, "model.safetensors"), t)


# ---------------------------------------------------------------------------------------------
# Checks and goldens.

def relative_error(a, b):
    """Per position: max |a - b| over the vocabulary / b's logit range."""
    return np.abs(a - b).max(axis=1) / (b.max(axis=1) - b.min(axis=1))


def feature_margins(name, spec, weights, logits, features):
    for feature in features:
        off = fr.logits_of(*fr.without(spec, weights, feature), TOKENS)
        rel = relative_error(off, logits)
        over = int((rel > TOLERANCE).sum())
        print(f"  {name}: without {feature:16s} max {rel.max():.3f} of range, {over}/{len(TOKENS)} positions over tol")
        assert rel.max() > MIN_MARGIN, (name, feature, rel.max())


def check_llama2c_reference():
    """family_ref against gen_goldens.py's (torch) llama on its llama2.c models (adjacent RoPE)."""
    for case in ["tiny_mha", "tiny_gqa", "tiny_odd"]:
        line = next(l for l in open(os.path.join(HERE, "tiny_models.txt"))
                    if f"case={case} rope=interleaved dtype=f32" in l)
        tokens = [int(t) for t in line.split("tokens=")[1].split(",")]
        expected = np.fromfile(os.path.join(HERE, f"{case}.interleaved.f32.logits"), "<f4").reshape(len(tokens), -1)
        got = fr.logits_of(*fr.load_llama2c(os.path.join(HERE, f"{case}.bin")), tokens)
        err = np.abs(got - expected).max()
        print(f"  llama2.c {case}: max |family_ref - gen_goldens| {err:.1e}")
        assert err < 1e-5


def main():
    print("family_ref vs gen_goldens.py's llama reference:")
    check_llama2c_reference()
    if os.path.isdir(OUT):
        for entry in os.listdir(OUT):
            if os.path.isdir(os.path.join(OUT, entry)):
                shutil.rmtree(os.path.join(OUT, entry))
    for seed, (name, arch, h, tied, features) in enumerate(MODELS):
        folder = os.path.join(OUT, name)
        os.makedirs(folder)
        spec = spec_of(arch, h)
        weights = random_weights(arch, h, tied, np.random.RandomState(2112 + seed))
        write_gguf(os.path.join(folder, "model.gguf"), arch, h, spec, weights)
        write_hf(os.path.join(folder, "hf"), arch, h, tied, weights)
        gguf_spec, gguf_weights = fr.load(os.path.join(folder, "model.gguf"))
        hf_spec, hf_weights = fr.load(os.path.join(folder, "hf"))
        logits = fr.logits_of(gguf_spec, gguf_weights, TOKENS)
        agree = relative_error(fr.logits_of(hf_spec, hf_weights, TOKENS), logits).max()
        print(f"{name}: GGUF vs HF oracle {agree:.1e} of range; range {np.ptp(logits, axis=1).min():.2f}..")
        assert agree < 1e-6  # rope_freqs is stored F32
        feature_margins(name, gguf_spec, gguf_weights, logits, features)
        ids = fr.greedy(gguf_spec, gguf_weights, TOKENS[:PROMPT], GREEDY_STEPS)
        assert ids == fr.greedy(hf_spec, hf_weights, TOKENS[:PROMPT], GREEDY_STEPS)
        logits.astype("<f4").tofile(os.path.join(folder, "logits.bin"))
        open(os.path.join(folder, "greedy.txt"), "w").write(" ".join(map(str, ids)) + "\n")
        open(os.path.join(folder, "tokens.txt"), "w").write(" ".join(map(str, TOKENS)) + "\n")
        print(f"  greedy {ids}")


if __name__ == "__main__":
    main()
