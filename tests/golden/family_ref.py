#!/usr/bin/env python3
"""An independent float64 numpy forward pass for the decoder families of issue 21: llama (with
Llama 3 RoPE frequency factors), qwen2, qwen3, gemma3 and phi3.

Written from the published model definitions (Hugging Face transformers' modeling_<family>.py
semantics) and llama.cpp's GGUF conventions; it shares no code with mote. A model is data: a spec
dict (the hyperparameters and the features each family switches on) plus the weights, held in
one canonical layout whatever the file:

  tok_embd (vocab, dim), output (vocab, dim) (tok_embd when tied), output_norm (dim);
  per layer: attn_norm, wq (heads*hd, dim), wk, wv (kv_heads*hd, dim), optional bq bk bv,
  wo (dim, heads*hd), optional q_norm k_norm (hd), optional post_attn_norm, ffn_norm,
  gate up (ff, dim), down (dim, ff), optional post_ffn_norm.

Norm gains are held as multiplied (Gemma's HF (1 + w) is folded in on load, as llama.cpp's
converter folds it into the GGUF). Fused tensors (phi3's qkv and gate|up) are split on load.
Llama's Q/K rows stay as stored: GGUF permutes them for adjacent-pair RoPE, Hugging Face keeps
them for split-half RoPE, so the spec's rope_style follows the source.

Readers: load_gguf(path) (any tensor type, dequantized by gguf.quants) and load_hf(dir)
(config.json + model.safetensors, read by hand). Runner(spec, weights).step(token) decodes one
token with a KV cache and returns that position's logits.
"""
import json
import math
import os
import struct

import numpy as np

# ---------------------------------------------------------------------------------------------
# The family table: what each family switches on, and its RoPE style per source.
# rope_style: "adjacent" pairs (2i, 2i+1) (llama.cpp's normal RoPE, llama's permuted GGUF Q/K);
#             "half" pairs (i, i + n/2) (transformers' rotate_half; llama.cpp's NeoX).
FAMILIES = {
    "llama": dict(gguf_rope="adjacent", hf_rope="half", qkv_bias=False, qk_norm=False, post_norms=False,
                  embed_scale=False, act="silu"),
    "qwen2": dict(gguf_rope="half", hf_rope="half", qkv_bias=True, qk_norm=False, post_norms=False,
                  embed_scale=False, act="silu"),
    "qwen3": dict(gguf_rope="half", hf_rope="half", qkv_bias=False, qk_norm=True, post_norms=False,
                  embed_scale=False, act="silu"),
    "gemma3": dict(gguf_rope="half", hf_rope="half", qkv_bias=False, qk_norm=True, post_norms=True,
                   embed_scale=True, act="gelu_tanh"),
    "phi3": dict(gguf_rope="half", hf_rope="half", qkv_bias=False, qk_norm=False, post_norms=False,
                 embed_scale=False, act="silu"),
}
HF_MODEL_TYPES = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gemma3_text": "gemma3",
                  "gemma3": "gemma3", "phi3": "phi3"}
GEMMA3_PATTERN, GEMMA3_LOCAL_BASE = 6, 10000.0  # llama.cpp's defaults when the GGUF has no key


def gemma3_layer_is_global(layer, pattern=GEMMA3_PATTERN):
    return (layer + 1) % pattern == 0


def llama3_rope_factors(head_dim, base, factor, low_freq_factor, high_freq_factor, original_context):
    """Per-frequency divisors of Llama 3 RoPE scaling (what llama.cpp stores as rope_freqs)."""
    low_wavelen, high_wavelen = original_context / low_freq_factor, original_context / high_freq_factor
    factors = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * base ** (i / head_dim)
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(factor)
        else:
            smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            factors.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float64)


def make_spec(family, **hyper):
    """A spec: the family's feature switches plus hyperparameters; per-layer window and RoPE base.

    hyper: dim, layers, heads, kv_heads, head_dim, ff, vocab, eps, rope_base, rope_style,
    window (0: none), rope_factors (None or array), attn_scale (None: 1/sqrt(head_dim)),
    local_rope_base (gemma3), swa_pattern (gemma3)."""
    spec = dict(FAMILIES[family])
    spec.update(family=family, window=0, rope_factors=None, attn_scale=None)
    spec.update(hyper)
    if spec["attn_scale"] is None:
        spec["attn_scale"] = 1.0 / math.sqrt(spec["head_dim"])
    layers = spec["layers"]
    if family == "gemma3" and spec["window"]:
        pattern = spec.get("swa_pattern", GEMMA3_PATTERN)
        local = spec.get("local_rope_base", GEMMA3_LOCAL_BASE)
        is_global = [gemma3_layer_is_global(l, pattern) for l in range(layers)]
        spec["layer_window"] = [0 if g else spec["window"] for g in is_global]
        spec["layer_rope_base"] = [spec["rope_base"] if g else local for g in is_global]
    else:
        spec["layer_window"] = [spec["window"]] * layers
        spec["layer_rope_base"] = [spec["rope_base"]] * layers
    return spec


# ---------------------------------------------------------------------------------------------
# The steps. Each is one function; the families differ only in which the spec switches on.

def rms_norm(x, gain, eps):
    """x / sqrt(mean(x^2) + eps) * gain, over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


ACTIVATIONS = {"silu": silu, "gelu_tanh": gelu_tanh}


def rope_inv_freq(head_dim, base, factors):
    inv = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    return inv if factors is None else inv / factors


def rope(x, pos, inv_freq, style):
    """Rotates each head of x (heads, hd) by pos * inv_freq, pairing per style."""
    angle = pos * inv_freq
    cos, sin = np.cos(angle), np.sin(angle)
    out = x.copy()
    if style == "adjacent":
        a, b = x[:, 0::2], x[:, 1::2]
        out[:, 0::2], out[:, 1::2] = a * cos - b * sin, a * sin + b * cos
    else:
        half = x.shape[1] // 2
        a, b = x[:, :half], x[:, half:]
        out[:, :half], out[:, half:] = a * cos - b * sin, a * sin + b * cos
    return out


def attend(q, keys, values, pos, window, scale):
    """q (heads, hd) against cached keys/values (kv_heads, n, hd); a window keeps pos - j < window."""
    heads, kv_heads = q.shape[0], keys.shape[0]
    first = max(0, pos - window + 1) if window else 0
    k, v = keys[:, first:pos + 1], values[:, first:pos + 1]
    group = heads // kv_heads
    out = np.empty((heads, values.shape[2]))
    for h in range(heads):
        scores = k[h // group] @ q[h] * scale
        p = np.exp(scores - scores.max())
        out[h] = (p / p.sum()) @ v[h // group]
    return out


def attention_block(spec, w, layer, x, pos, cache):
    hd = spec["head_dim"]
    q, k, v = w["wq"] @ x, w["wk"] @ x, w["wv"] @ x
    if "bq" in w:
        q, k, v = q + w["bq"], k + w["bk"], v + w["bv"]
    q, k, v = q.reshape(-1, hd), k.reshape(-1, hd), v.reshape(-1, hd)
    if "q_norm" in w:
        q, k = rms_norm(q, w["q_norm"], spec["eps"]), rms_norm(k, w["k_norm"], spec["eps"])
    inv_freq = rope_inv_freq(hd, spec["layer_rope_base"][layer], spec["rope_factors"])
    q, k = rope(q, pos, inv_freq, spec["rope_style"]), rope(k, pos, inv_freq, spec["rope_style"])
    keys, values = cache[layer]
    keys[:, pos], values[:, pos] = k, v
    out = attend(q, keys, values, pos, spec["layer_window"][layer], spec["attn_scale"])
    return w["wo"] @ out.reshape(-1)


def ffn_block(spec, w, x):
    return w["down"] @ (ACTIVATIONS[spec["act"]](w["gate"] @ x) * (w["up"] @ x))


def residual(spec, w, x, block, norm_name, post_name):
    """x + [post_norm](block(norm(x))): the pre-norm residual, Gemma's sandwich when post_name is held."""
    y = block(rms_norm(x, w[norm_name], spec["eps"]))
    if post_name in w:
        y = rms_norm(y, w[post_name], spec["eps"])
    return x + y


class Runner:
    """Decodes one token at a time with a KV cache; step() returns that position's logits."""

    def __init__(self, spec, weights, capacity=512):
        self.spec, self.w, self.pos = spec, weights, 0
        shape = (spec["kv_heads"], capacity, spec["head_dim"])
        self.cache = [(np.zeros(shape), np.zeros(shape)) for _ in range(spec["layers"])]

    def step(self, token):
        spec, w = self.spec, self.w
        x = w["tok_embd"][token].astype(np.float64)
        if spec["embed_scale"]:
            x = x * math.sqrt(spec["dim"])
        for l, lw in enumerate(w["layers"]):
            x = residual(spec, lw, x, lambda h: attention_block(spec, lw, l, h, self.pos, self.cache),
                         "attn_norm", "post_attn_norm")
            x = residual(spec, lw, x, lambda h: ffn_block(spec, lw, h), "ffn_norm", "post_ffn_norm")
        self.pos += 1
        return w["output"] @ rms_norm(x, w["output_norm"], spec["eps"])


def logits_of(spec, weights, tokens):
    runner = Runner(spec, weights, capacity=len(tokens))
    return np.stack([runner.step(t) for t in tokens])


def greedy(spec, weights, prompt, steps):
    runner = Runner(spec, weights, capacity=len(prompt) + steps)
    for t in prompt:
        logits = runner.step(t)
    out = []
    for _ in range(steps):
        out.append(int(np.argmax(logits)))
        logits = runner.step(out[-1])
    return out


def without(spec, weights, feature):
    """A copy of the model with one feature switched off, to show each feature matters."""
    spec = dict(spec)
    layers = [dict(l) for l in weights["layers"]]
    drop = {"qk_norm": ("q_norm", "k_norm"), "post_norms": ("post_attn_norm", "post_ffn_norm"),
            "qkv_bias": ("bq", "bk", "bv")}
    if feature in drop:
        for l in layers:
            for name in drop[feature]:
                l.pop(name, None)
    elif feature == "rope_style":
        spec["rope_style"] = "half" if spec["rope_style"] == "adjacent" else "adjacent"
    elif feature == "window":
        spec["layer_window"] = [0] * spec["layers"]
    elif feature == "local_rope_base":
        spec["layer_rope_base"] = [spec["rope_base"]] * spec["layers"]
    elif feature == "rope_factors":
        spec["rope_factors"] = None
    elif feature == "embed_scale":
        spec["embed_scale"] = False
    elif feature == "attn_scale":  # llama.cpp's Gemma 3 27B choice: 1/sqrt(dim/heads), not 1/sqrt(head_dim)
        spec["attn_scale"] = 1.0 / math.sqrt(spec["dim"] / spec["heads"])
    elif feature == "act":
        spec["act"] = "silu" if spec["act"] == "gelu_tanh" else "gelu_tanh"
    elif feature == "norm_plus_one":  # Gemma's +1 applied twice (a GGUF norm already holds it)
        for l in layers:
            for name in [n for n in l if n.endswith("norm")]:
                l[name] = l[name] + 1.0
    elif feature == "gate_up_order":  # phi3's fused ffn_up read as [up; gate]
        for l in layers:
            l["gate"], l["up"] = l["up"], l["gate"]
    else:
        raise ValueError(feature)
    return spec, dict(weights, layers=layers)


# ---------------------------------------------------------------------------------------------
# Readers. Both end in the canonical layout above.

def split_fused(spec, layer):
    """phi3's fused attn_qkv (rows q, k, v) and ffn_up (rows gate, up), split by the spec's sizes."""
    if "wqkv" in layer:
        nq, nkv = spec["heads"] * spec["head_dim"], spec["kv_heads"] * spec["head_dim"]
        qkv = layer.pop("wqkv")
        layer["wq"], layer["wk"], layer["wv"] = qkv[:nq], qkv[nq:nq + nkv], qkv[nq + nkv:]
    if "gate" not in layer and "up" in layer and layer["up"].shape[0] == 2 * spec["ff"]:  # GGUF's fused ffn_up
        layer["gate_up"] = layer.pop("up")
    if "gate_up" in layer:
        gate_up = layer.pop("gate_up")
        layer["gate"], layer["up"] = gate_up[:spec["ff"]], gate_up[spec["ff"]:]


GGUF_LAYER_NAMES = {  # GGUF stem -> canonical name
    "attn_norm.weight": "attn_norm", "attn_q.weight": "wq", "attn_k.weight": "wk", "attn_v.weight": "wv",
    "attn_q.bias": "bq", "attn_k.bias": "bk", "attn_v.bias": "bv", "attn_output.weight": "wo",
    "attn_q_norm.weight": "q_norm", "attn_k_norm.weight": "k_norm", "attn_qkv.weight": "wqkv",
    "post_attention_norm.weight": "post_attn_norm", "ffn_norm.weight": "ffn_norm", "ffn_gate.weight": "gate",
    "ffn_up.weight": "up", "ffn_down.weight": "down", "post_ffw_norm.weight": "post_ffn_norm",
}
HF_LAYER_NAMES = {  # transformers' name after "model.layers.N." -> canonical name
    "input_layernorm.weight": "attn_norm", "self_attn.q_proj.weight": "wq", "self_attn.k_proj.weight": "wk",
    "self_attn.v_proj.weight": "wv", "self_attn.q_proj.bias": "bq", "self_attn.k_proj.bias": "bk",
    "self_attn.v_proj.bias": "bv", "self_attn.o_proj.weight": "wo", "self_attn.q_norm.weight": "q_norm",
    "self_attn.k_norm.weight": "k_norm", "self_attn.qkv_proj.weight": "wqkv", "mlp.gate_proj.weight": "gate",
    "mlp.up_proj.weight": "up", "mlp.down_proj.weight": "down", "mlp.gate_up_proj.weight": "gate_up",
    "pre_feedforward_layernorm.weight": "ffn_norm", "post_feedforward_layernorm.weight": "post_ffn_norm",
}


def assemble(spec, globals_, per_layer):
    """Canonical weights from global tensors and per-layer dicts; ties output to tok_embd if absent."""
    layers = []
    for l in range(spec["layers"]):
        layer = per_layer.get(l, {})
        split_fused(spec, layer)
        layers.append(layer)
    w = dict(globals_, layers=layers)
    w.setdefault("output", w["tok_embd"])
    return w


def gguf_field(reader, key, default=None):
    field = reader.fields.get(key)
    if field is None:
        return default
    value = field.parts[field.data[0]]
    if field.types[0].name == "STRING":
        return bytes(value).decode()
    return value.tolist()[0] if len(value) == 1 else value.tolist()


def gguf_tensor(t):
    from gguf.quants import dequantize
    return np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64).reshape(
        [int(d) for d in reversed(t.shape)])


def load_gguf(path):
    """(spec, weights) from a GGUF of a family in FAMILIES, any tensor type."""
    from gguf import GGUFReader
    reader = GGUFReader(path)
    arch = gguf_field(reader, "general.architecture")
    key = lambda name, default=None: gguf_field(reader, f"{arch}.{name}", default)
    heads = key("attention.head_count")
    dim = key("embedding_length")
    head_dim = key("attention.key_length", dim // heads)
    # llama.cpp reads attention.sliding_window for Gemma 3 and Phi-3 only (and so does mote).
    window = key("attention.sliding_window", 0) if arch in ("gemma3", "phi3") else 0
    globals_, per_layer, rope_factors = {}, {}, None
    for t in reader.tensors:
        if t.name.startswith("blk."):
            _, l, stem = t.name.split(".", 2)
            per_layer.setdefault(int(l), {})[GGUF_LAYER_NAMES[stem]] = gguf_tensor(t)
        elif t.name == "rope_freqs.weight":
            rope_factors = gguf_tensor(t)
        else:
            globals_[t.name.split(".")[0].replace("token_embd", "tok_embd")] = gguf_tensor(t)
    spec = make_spec(arch, dim=dim, layers=key("block_count"), heads=heads,
                     kv_heads=key("attention.head_count_kv", heads), head_dim=head_dim,
                     ff=key("feed_forward_length"), vocab=globals_["tok_embd"].shape[0],
                     eps=key("attention.layer_norm_rms_epsilon"), rope_base=key("rope.freq_base", 10000.0),
                     rope_style=FAMILIES[arch]["gguf_rope"], window=window,
                     rope_factors=rope_factors, local_rope_base=key("rope.freq_base_swa", GEMMA3_LOCAL_BASE),
                     swa_pattern=key("attention.sliding_window_pattern", GEMMA3_PATTERN))
    return spec, assemble(spec, globals_, per_layer)


SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=SAFETENSORS_DTYPES[info["dtype"]]).reshape(
            info["shape"]).astype(np.float64)
    return out


def hf_spec(config):
    family = HF_MODEL_TYPES[config["model_type"]]
    heads = config["num_attention_heads"]
    dim = config["hidden_size"]
    head_dim = config.get("head_dim") or dim // heads
    rope_factors = None
    scaling = config.get("rope_scaling") or {}
    if scaling.get("rope_type", scaling.get("type")) == "llama3":
        rope_factors = llama3_rope_factors(head_dim, config["rope_theta"], scaling["factor"],
                                           scaling["low_freq_factor"], scaling["high_freq_factor"],
                                           scaling["original_max_position_embeddings"])
    window = config.get("sliding_window") or 0
    if family == "qwen2" and not config.get("use_sliding_window", False):
        window = 0
    attn_scale = config["query_pre_attn_scalar"] ** -0.5 if family == "gemma3" else None
    spec = make_spec(family, dim=dim, layers=config["num_hidden_layers"], heads=heads,
                     kv_heads=config.get("num_key_value_heads", heads), head_dim=head_dim,
                     ff=config["intermediate_size"], vocab=config["vocab_size"], eps=config["rms_norm_eps"],
                     rope_base=config.get("rope_theta", 10000.0), rope_style=FAMILIES[family]["hf_rope"],
                     window=window, rope_factors=rope_factors, attn_scale=attn_scale,
                     local_rope_base=config.get("rope_local_base_freq", GEMMA3_LOCAL_BASE),
                     swa_pattern=config.get("sliding_window_pattern", GEMMA3_PATTERN))
    if family == "gemma3" and "layer_types" in config and window:
        is_global = [t == "full_attention" for t in config["layer_types"]]
        spec["layer_window"] = [0 if g else window for g in is_global]
        spec["layer_rope_base"] = [spec["rope_base"] if g else spec["local_rope_base"] for g in is_global]
    return spec


def load_hf(folder):
    """(spec, weights) from a Hugging Face folder: config.json and model.safetensors."""
    config = json.load(open(os.path.join(folder, "config.json")))
    spec = hf_spec(config)
    tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    gemma = spec["family"] == "gemma3"
    names = dict(HF_LAYER_NAMES)
    # transformers' post_attention_layernorm is the FFN's pre-norm, except in Gemma's sandwich.
    names["post_attention_layernorm.weight"] = "post_attn_norm" if gemma else "ffn_norm"
    globals_, per_layer = {}, {}
    for name, t in tensors.items():
        if gemma and name.endswith("norm.weight"):
            t = t + 1.0  # Gemma3RMSNorm computes x * (1 + w)
        if name.startswith("model.layers."):
            _, _, l, stem = name.split(".", 3)
            per_layer.setdefault(int(l), {})[names[stem]] = t
        else:
            globals_[{"model.embed_tokens.weight": "tok_embd", "model.norm.weight": "output_norm",
                      "lm_head.weight": "output"}[name]] = t
    return spec, assemble(spec, globals_, per_layer)


def load_llama2c(path):
    """(spec, weights) of a llama2.c float checkpoint (gen_goldens.py's tiny models), adjacent RoPE."""
    raw = open(path, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab_field, seq_len = struct.unpack_from("<7i", raw)
    vocab, hd = abs(vocab_field), dim // heads
    data, at = np.frombuffer(raw, dtype="<f4", offset=28).astype(np.float64), 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        at += n
        return data[at - n:at].reshape(shape)

    emb, attn_norm = take(vocab, dim), take(layers, dim)
    wq, wk, wv, wo = take(layers, dim, dim), take(layers, kv_heads * hd, dim), take(layers, kv_heads * hd, dim), take(layers, dim, dim)
    ffn_norm, gate, down, up = take(layers, dim), take(layers, hidden, dim), take(layers, dim, hidden), take(layers, hidden, dim)
    output_norm = take(dim)
    take(seq_len, hd // 2), take(seq_len, hd // 2)
    output = emb if vocab_field > 0 else take(vocab, dim)
    spec = make_spec("llama", dim=dim, layers=layers, heads=heads, kv_heads=kv_heads, head_dim=hd, ff=hidden,
                        vocab=vocab, eps=1e-5, rope_base=10000.0, rope_style="adjacent")
    names = ("attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "gate", "down", "up")
    arrays = (attn_norm, wq, wk, wv, wo, ffn_norm, gate, down, up)
    layer_list = [{n: a[l] for n, a in zip(names, arrays)} for l in range(layers)]
    return spec, dict(tok_embd=emb, output=output, output_norm=output_norm, layers=layer_list)


def load(path):
    return load_hf(path) if os.path.isdir(path) else load_gguf(path)
