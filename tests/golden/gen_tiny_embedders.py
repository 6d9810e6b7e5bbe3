#!/usr/bin/env python3
"""Writes tests/golden/tiny_embedders/{bert,nomic_bert}/: tiny random-weight embedders with the goldens
of a float64 numpy oracle written here from the published model definitions (transformers' BertModel;
nomic-bert as tests/oracles/nomic_bert_reference.py reads it, which checks this oracle on the written
GGUF), dim 32, 2 layers, 4 heads, FFN 48, context 64, a 108-piece WordPiece vocabulary (README.md
there says why and what each file holds). Also the fuzz seeds tests/fuzz/regressions/gguf/tiny_{bert,nomic_bert} and
tests/fuzz/regressions/hf/tiny_bert (a smaller model: dim 8, one layer). Per model:

  bert/model.gguf     GGUF architecture bert: llama.cpp's keys and tensor names, matrices F16, vectors
                      and token_types F32 (values f16-exact, so the GGUF and the HF folder agree exactly)
  bert/hf/            a sentence-transformers BertModel folder: config.json, model.safetensors (F32,
                      BertModel's names incl. embeddings.position_ids I64 and pooler.dense.*),
                      vocab.txt, tokenizer.json (WordPiece), tokenizer_config.json, modules.json,
                      1_Pooling/config.json (mean)
  nomic_bert/model.gguf   GGUF architecture nomic-bert (fused QKV, SwiGLU, NeoX RoPE base 1000)
  texts.txt, text_ids.txt   two texts and their ids by Hugging Face tokenizers' BertWordPiece (the
                      vocabulary of every model here): each conversion must tokenize them so
  */ids.txt           the token-id sequences every test embeds (lengths 1, 5, 17, 40), one a line
  */mean.f32, cls.f32 float32 little-endian (4, 32): the oracle's mean-pooled and [CLS] (first token)
                      final hidden states, unnormalized, one row per line of ids.txt

Before writing the goldens the generator checks that each feature matters: the oracle with the
feature switched off moves some pooled vector by far more (> MIN_MARGIN) than the tests' tolerance
(TOLERANCE of the vector's max |x|); the margins are printed. The oracle on the weights read back
from each written file (the GGUF with gguf's reader, the safetensors parsed by hand) gives the same
vectors. And the oracle equals
tests/oracles/nomic_bert_reference.py's Model on the written nomic GGUF.

Run with python3 (numpy, gguf 0.10, tokenizers) from any directory.
"""
import json
import math
import os
import shutil
import struct
import sys

import gguf
import numpy as np
from tokenizers.implementations import BertWordPieceTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tiny_embedders")
FUZZ = os.path.join(HERE, "..", "fuzz", "regressions")
sys.path.insert(0, os.path.join(HERE, "..", "oracles"))

CONTEXT, EPS = 64, 1e-12
LENGTHS = [1, 5, 17, 40]
TOLERANCE = 1e-4  # the C++ tests' bound, relative to each vector's max |x|
MIN_MARGIN = 20 * TOLERANCE
# Texts every conversion must tokenize as Hugging Face's tokenizer does (lowercase, accents stripped,
# punctuation split, "##" pieces, a character outside the vocabulary -> [UNK]).
TEXTS = ["The cat sat on the mats, reading!", "Paris: capital of FRANCE (moon-light) xyzzyq cr\u00e8me \u6771"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CLS, SEP = 2, 3

# ---------------------------------------------------------------------------------------------
# The vocabulary: specials, punctuation, letters, "##" letters and suffixes, a few words.

def vocabulary():
    words = ("the cat dog sat on mat is was and of to in it for with as by at from this that be are have "
             "not but or an document paris france capital moon light").split()
    pieces = list(SPECIALS) + list(".,!?;:'\"()-") + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += ["##" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += ["##ing", "##ed", "##er", "##ly", "##tion", "##est"]
    pieces += words
    assert len(set(pieces)) == len(pieces)
    return pieces


VOCAB = vocabulary()


def sequences(rng, vocab_size):
    """[CLS] alone, then [CLS] random ids [SEP]: the fixed inputs of every test."""
    out = []
    for n in LENGTHS:
        if n == 1:
            out.append([CLS])
        else:
            out.append([CLS] + [int(t) for t in rng.randint(5, vocab_size, size=n - 2)] + [SEP])
    return out


# ---------------------------------------------------------------------------------------------
# Random weights (f16-exact float64).

def random_weights(kind, h, rng):
    f16 = lambda a: np.asarray(a, dtype=np.float64).astype(np.float16).astype(np.float64)
    mat = lambda rows, cols, gain=1.0: f16(rng.standard_normal((rows, cols)) * gain / math.sqrt(cols))
    vec = lambda n, scale: f16(scale * rng.standard_normal(n))
    gain = lambda n: f16(1.0 + 0.2 * rng.standard_normal(n))
    d, ff, v = h["dim"], h["ff"], len(VOCAB)
    w = dict(tok=f16(0.8 * rng.standard_normal((v, d))), types=f16(0.8 * rng.standard_normal((2, d))),
             embd_norm=(gain(d), vec(d, 0.2)), layers=[])
    if kind == "bert":
        w["pos"] = f16(0.8 * rng.standard_normal((CONTEXT, d)))
    for _ in range(h["layers"]):
        l = dict(norm1=(gain(d), vec(d, 0.2)), norm2=(gain(d), vec(d, 0.2)), wo=mat(d, d))
        if kind == "bert":
            l.update(wq=mat(d, d, 2.0), bq=vec(d, 0.3), wk=mat(d, d, 2.0), bk=vec(d, 0.3), wv=mat(d, d),
                     bv=vec(d, 0.3), bo=vec(d, 0.3), up=mat(ff, d, 0.6), bup=f16(-2.5 + 0.4 * rng.standard_normal(ff)),
                     down=mat(d, ff, 40.0),
                     bdown=vec(d, 0.3))
        else:
            l.update(qkv=np.concatenate([mat(d, d, 2.0), mat(d, d, 2.0), mat(d, d)]), up=mat(ff, d),
                     gate=mat(ff, d, 1.5), down=mat(d, ff, 1.5))
        w["layers"].append(l)
    return w


# ---------------------------------------------------------------------------------------------
# The oracle (float64). feature switches: None, or one of the names in FEATURES.

FEATURES = {"bert": ["token_types", "embd_norm", "post_norm", "gelu_erf", "positions"],
            "nomic_bert": ["token_types", "embd_norm", "post_norm", "rope_half_split"]}


def layer_norm(x, params, eps):
    g, b = params
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def gelu(x, erf=True):
    if erf:  # BertModel's "gelu": x * Phi(x)
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rope(x, base, half_split=True):
    """x: (heads, n, hd). NeoX / rotate_half: element i pairs with i + hd/2; else adjacent pairs."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    if half_split:
        a, b = x[..., :hd // 2], x[..., hd // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * cos - b * sin, b * cos + a * sin
    return out


def forward(kind, h, w, ids, off=None):
    """The final hidden states (n, dim) of one text (every token sees every other)."""
    n, d, heads = len(ids), h["dim"], h["heads"]
    hd = d // heads
    x = w["tok"][ids].copy()
    if off != "token_types":
        x += w["types"][0]
    if kind == "bert" and off != "positions":
        x += w["pos"][:n]
    if off != "embd_norm":
        x = layer_norm(x, w["embd_norm"], EPS)
    post = off != "post_norm"
    for l in w["layers"]:
        y = x if post else layer_norm(x, l["norm1"], EPS)  # off: pre-norm (norm before each sub-block)
        if kind == "bert":
            q, k, v = y @ l["wq"].T + l["bq"], y @ l["wk"].T + l["bk"], y @ l["wv"].T + l["bv"]
        else:
            qkv = y @ l["qkv"].T
            q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        q, k, v = (t.reshape(n, heads, hd).transpose(1, 0, 2) for t in (q, k, v))
        if kind == "nomic_bert":
            q, k = rope(q, h["rope_base"], off != "rope_half_split"), rope(k, h["rope_base"], off != "rope_half_split")
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        a = (p @ v).transpose(1, 0, 2).reshape(n, d) @ l["wo"].T + (l["bo"] if kind == "bert" else 0.0)
        x = layer_norm(x + a, l["norm1"], EPS) if post else x + a
        y = x if post else layer_norm(x, l["norm2"], EPS)
        if kind == "bert":
            f = gelu(y @ l["up"].T + l["bup"], off != "gelu_erf") @ l["down"].T + l["bdown"]
        else:
            g = y @ l["gate"].T
            f = (g / (1.0 + np.exp(-g)) * (y @ l["up"].T)) @ l["down"].T
        x = layer_norm(x + f, l["norm2"], EPS) if post else x + f
    return x


def pooled(kind, h, w, seqs, off=None):
    states = [forward(kind, h, w, np.asarray(s), off) for s in seqs]
    return np.stack([s.mean(axis=0) for s in states]), np.stack([s[0] for s in states])


def relative(a, b):
    """Per row: max |a - b| / max |b|."""
    return np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)


def feature_margins(kind, h, w, seqs, mean, cls):
    margins = {}
    for feature in FEATURES[kind]:
        m, c = pooled(kind, h, w, seqs, feature)
        rm, rc = relative(m, mean), relative(c, cls)
        margins[feature] = (rm.max(), rc.max())
        print(f"  {kind}: without {feature:16s} mean pooling moves {rm.max():.3f}, cls {rc.max():.3f} "
              f"of max|x| ({rm.max() / TOLERANCE:.0f}x / {rc.max() / TOLERANCE:.0f}x the tolerance)")
        assert rm.max() > MIN_MARGIN and rc.max() > MIN_MARGIN, (kind, feature, rm.max(), rc.max())
    return margins


# ---------------------------------------------------------------------------------------------
# GGUF files.

def gguf_vocabulary():
    """llama.cpp's BERT convention: "##piece" -> "piece", a word start "w" -> "\u2581w", [..] kept."""
    tokens, types = [], []
    for p in VOCAB:
        if p.startswith("[") and p.endswith("]"):
            tokens.append(p)
            types.append(2 if p == "[UNK]" else 3)  # unknown, control
        else:
            tokens.append(p[2:] if p.startswith("##") else "\u2581" + p)
            types.append(1)
    return tokens, types


def write_gguf(path, kind, h, w):
    arch = "bert" if kind == "bert" else "nomic-bert"
    g = gguf.GGUFWriter(path, arch)
    g.add_name("tiny " + arch)
    g.add_context_length(CONTEXT)
    g.add_embedding_length(h["dim"])
    g.add_block_count(h["layers"])
    g.add_feed_forward_length(h["ff"])
    g.add_head_count(h["heads"])
    g.add_layer_norm_eps(EPS)
    g.add_causal_attention(False)
    g.add_pooling_type(gguf.PoolingType.MEAN)
    if kind == "nomic_bert":
        g.add_rope_freq_base(h["rope_base"])
    tokens, types = gguf_vocabulary()
    g.add_tokenizer_model("bert")
    g.add_token_list(tokens)
    g.add_token_types(types)
    g.add_token_type_count(2)
    g.add_bos_token_id(CLS)
    g.add_eos_token_id(SEP)
    g.add_unk_token_id(1)
    g.add_sep_token_id(SEP)
    g.add_pad_token_id(0)
    g.add_cls_token_id(CLS)
    g.add_mask_token_id(4)

    def add(name, a, f32=False):
        g.add_tensor(name, a.astype(np.float32) if f32 or a.ndim == 1 else a.astype(np.float16))

    add("token_embd.weight", w["tok"])
    if kind == "bert":
        add("position_embd.weight", w["pos"])
    add("token_types.weight", w["types"], f32=True)  # llama.cpp writes it F32: [dim, 2]
    add("token_embd_norm.weight", w["embd_norm"][0])
    add("token_embd_norm.bias", w["embd_norm"][1])
    for i, l in enumerate(w["layers"]):
        b = f"blk.{i}."
        if kind == "bert":
            for stem, wk, bk in (("attn_q", "wq", "bq"), ("attn_k", "wk", "bk"), ("attn_v", "wv", "bv"),
                                 ("attn_output", "wo", "bo")):
                add(b + stem + ".weight", l[wk])
                add(b + stem + ".bias", l[bk])
        else:
            add(b + "attn_qkv.weight", l["qkv"])
            add(b + "attn_output.weight", l["wo"])
        add(b + "attn_output_norm.weight", l["norm1"][0])
        add(b + "attn_output_norm.bias", l["norm1"][1])
        add(b + "ffn_up.weight", l["up"])
        if kind == "bert":
            add(b + "ffn_up.bias", l["bup"])
        else:
            add(b + "ffn_gate.weight", l["gate"])
        add(b + "ffn_down.weight", l["down"])
        if kind == "bert":
            add(b + "ffn_down.bias", l["bdown"])
        add(b + "layer_output_norm.weight", l["norm2"][0])
        add(b + "layer_output_norm.bias", l["norm2"][1])
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()


# ---------------------------------------------------------------------------------------------
# The Hugging Face folder (sentence-transformers layout).

def safetensors_bytes(tensors):
    """u64 header length, JSON header, raw little-endian data (F32, or I64 for integer arrays)."""
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        a = tensors[name]
        integer = a.dtype.kind == "i"
        raw = np.ascontiguousarray(a, dtype="<i8" if integer else "<f4").tobytes()
        header[name] = dict(dtype="I64" if integer else "F32", shape=list(a.shape), data_offsets=[at, at + len(raw)])
        blobs.append(raw)
        at += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def hf_tensors(h, w, rng):
    t = {"embeddings.word_embeddings.weight": w["tok"], "embeddings.position_embeddings.weight": w["pos"],
         "embeddings.token_type_embeddings.weight": w["types"], "embeddings.LayerNorm.weight": w["embd_norm"][0],
         "embeddings.LayerNorm.bias": w["embd_norm"][1],
         "embeddings.position_ids": np.arange(CONTEXT, dtype=np.int64)[None, :],
         # BertPooler (tanh(dense(x[CLS]))): not part of the embedding; mote must ignore it.
         "pooler.dense.weight": rng.standard_normal((h["dim"], h["dim"])).astype(np.float32),
         "pooler.dense.bias": rng.standard_normal(h["dim"]).astype(np.float32)}
    names = dict(wq="attention.self.query.weight", bq="attention.self.query.bias", wk="attention.self.key.weight",
                 bk="attention.self.key.bias", wv="attention.self.value.weight", bv="attention.self.value.bias",
                 wo="attention.output.dense.weight", bo="attention.output.dense.bias",
                 up="intermediate.dense.weight", bup="intermediate.dense.bias", down="output.dense.weight",
                 bdown="output.dense.bias")
    for i, l in enumerate(w["layers"]):
        p = f"encoder.layer.{i}."
        for key, name in names.items():
            t[p + name] = l[key]
        t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"] = l["norm1"]
        t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"] = l["norm2"]
    return t


def hf_config(h):
    return dict(architectures=["BertModel"], model_type="bert", hidden_size=h["dim"],
                num_hidden_layers=h["layers"], num_attention_heads=h["heads"], intermediate_size=h["ff"],
                hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                max_position_embeddings=CONTEXT, type_vocab_size=2, vocab_size=len(VOCAB), layer_norm_eps=EPS,
                initializer_range=0.02, pad_token_id=0, position_embedding_type="absolute", use_cache=True,
                classifier_dropout=None, torch_dtype="float32", transformers_version="4.44.2")


def tokenizer_json():
    tok = BertWordPieceTokenizer({p: i for i, p in enumerate(VOCAB)}, unk_token="[UNK]", sep_token="[SEP]",
                                 cls_token="[CLS]", pad_token="[PAD]", mask_token="[MASK]", lowercase=True)
    return tok.to_str()


def write_hf(folder, h, w, rng):
    os.makedirs(os.path.join(folder, "1_Pooling"))
    def text(name, s):
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n") as f:
            f.write(s)
    text("config.json", json.dumps(hf_config(h), indent=2) + "\n")
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(hf_tensors(h, w, rng)))
    text("vocab.txt", "".join(p + "\n" for p in VOCAB))
    text("tokenizer.json", tokenizer_json())
    text("tokenizer_config.json", json.dumps(dict(do_lower_case=True, tokenize_chinese_chars=True, strip_accents=None,
                                                  unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                                                  cls_token="[CLS]", mask_token="[MASK]", model_max_length=CONTEXT,
                                                  tokenizer_class="BertTokenizer"), indent=2) + "\n")
    text("modules.json", json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
        indent=2) + "\n")
    text("1_Pooling/config.json", json.dumps(dict(word_embedding_dimension=h["dim"], pooling_mode_cls_token=False,
                                                  pooling_mode_mean_tokens=True, pooling_mode_max_tokens=False,
                                                  pooling_mode_mean_sqrt_len_tokens=False,
                                                  pooling_mode_weightedmean_tokens=False,
                                                  pooling_mode_lasttoken=False), indent=2) + "\n")


# ---------------------------------------------------------------------------------------------

MODELS = [("bert", dict(dim=32, layers=2, heads=4, ff=48)),
          ("nomic_bert", dict(dim=32, layers=2, heads=4, ff=48, rope_base=1000.0))]
SEED_SHAPE = dict(dim=8, layers=1, heads=2, ff=16, rope_base=1000.0)  # the fuzz seeds


def check_nomic_reference(path, h, seqs, mean):
    """tests/oracles/nomic_bert_reference.py's Model (reads the GGUF with gguf's reader) vs this oracle."""
    import nomic_bert_reference as ref
    model = ref.Model(gguf.GGUFReader(path))
    worst = 0.0
    for s, m in zip(seqs, mean):
        v = m / np.linalg.norm(m)
        worst = max(worst, np.abs(model.forward(np.asarray(s)) - v).max())
    print(f"  nomic_bert: nomic_bert_reference.Model on the GGUF vs this oracle (normalized): {worst:.1e}")
    assert worst < 1e-6


BERT_GGUF = dict(wq="attn_q.weight", bq="attn_q.bias", wk="attn_k.weight", bk="attn_k.bias", wv="attn_v.weight",
                 bv="attn_v.bias", wo="attn_output.weight", bo="attn_output.bias", up="ffn_up.weight",
                 bup="ffn_up.bias", down="ffn_down.weight", bdown="ffn_down.bias")
NOMIC_GGUF = dict(qkv="attn_qkv.weight", wo="attn_output.weight", up="ffn_up.weight", gate="ffn_gate.weight",
                  down="ffn_down.weight")


def read_gguf(path, kind, h):
    """The weights back from the written GGUF (gguf's reader), for the oracle."""
    t = {x.name: np.asarray(x.data, dtype=np.float64) for x in gguf.GGUFReader(path).tensors}
    w = dict(tok=t["token_embd.weight"], types=t["token_types.weight"],
             embd_norm=(t["token_embd_norm.weight"], t["token_embd_norm.bias"]), layers=[])
    if kind == "bert":
        w["pos"] = t["position_embd.weight"]
    for i in range(h["layers"]):
        b = f"blk.{i}."
        l = {k: t[b + v] for k, v in (BERT_GGUF if kind == "bert" else NOMIC_GGUF).items()}
        l["norm1"] = (t[b + "attn_output_norm.weight"], t[b + "attn_output_norm.bias"])
        l["norm2"] = (t[b + "layer_output_norm.weight"], t[b + "layer_output_norm.bias"])
        w["layers"].append(l)
    return w


def read_hf(folder, h):
    """The weights back from the written model.safetensors (parsed here by hand), for the oracle."""
    raw = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    t = {}
    for name, v in header.items():
        if name != "__metadata__":
            a, b = v["data_offsets"]
            t[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<i8" if v["dtype"] == "I64" else "<f4")
            t[name] = t[name].reshape(v["shape"]).astype(np.float64)
    assert np.array_equal(t["embeddings.position_ids"], np.arange(CONTEXT)[None, :])
    names = {"attention.self.query.weight": "wq", "attention.self.query.bias": "bq", "attention.self.key.weight": "wk",
             "attention.self.key.bias": "bk", "attention.self.value.weight": "wv",
             "attention.self.value.bias": "bv", "attention.output.dense.weight": "wo",
             "attention.output.dense.bias": "bo", "intermediate.dense.weight": "up",
             "intermediate.dense.bias": "bup", "output.dense.weight": "down", "output.dense.bias": "bdown"}
    w = dict(tok=t["embeddings.word_embeddings.weight"], pos=t["embeddings.position_embeddings.weight"],
             types=t["embeddings.token_type_embeddings.weight"],
             embd_norm=(t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"]), layers=[])
    for i in range(h["layers"]):
        p = f"encoder.layer.{i}."
        l = {k: t[p + name] for name, k in names.items()}
        l["norm1"] = (t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"])
        l["norm2"] = (t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"])
        w["layers"].append(l)
    return w


def check_read_back(name, kind, h, w, seqs, mean, cls):
    """The oracle on the weights read back from a written file gives the same vectors (f16-exact values)."""
    m, c = pooled(kind, h, w, seqs)
    err = max(np.abs(m - mean).max(), np.abs(c - cls).max())
    print(f"  {kind}: the oracle on {name} read back differs by {err:.1e}")
    assert err < 1e-12, (name, err)


def main():
    for sub in ("bert", "nomic_bert"):
        shutil.rmtree(os.path.join(OUT, sub), ignore_errors=True)
    for seed, (kind, h) in enumerate(MODELS):
        folder = os.path.join(OUT, kind)
        os.makedirs(folder)
        rng = np.random.RandomState(2311 + seed)
        w = random_weights(kind, h, rng)
        seqs = sequences(np.random.RandomState(23), len(VOCAB))
        mean, cls = pooled(kind, h, w, seqs)
        print(f"{kind}: max|mean| {np.abs(mean).max():.2f}, max|cls| {np.abs(cls).max():.2f}")
        feature_margins(kind, h, w, seqs, mean, cls)
        write_gguf(os.path.join(folder, "model.gguf"), kind, h, w)
        check_read_back("model.gguf", kind, h, read_gguf(os.path.join(folder, "model.gguf"), kind, h), seqs, mean, cls)
        if kind == "bert":
            write_hf(os.path.join(folder, "hf"), h, w, rng)
            check_read_back("hf/model.safetensors", kind, h, read_hf(os.path.join(folder, "hf"), h), seqs, mean, cls)
        else:
            check_nomic_reference(os.path.join(folder, "model.gguf"), h, seqs, mean)
        mean.astype("<f4").tofile(os.path.join(folder, "mean.f32"))
        cls.astype("<f4").tofile(os.path.join(folder, "cls.f32"))
        with open(os.path.join(folder, "ids.txt"), "w", newline="\n") as f:
            f.write("".join(" ".join(map(str, s)) + "\n" for s in seqs))

    # Fuzz seeds: the same layouts, dim 8 and one layer (a libFuzzer run costs time per byte).
    for kind in ("bert", "nomic_bert"):
        w = random_weights(kind, SEED_SHAPE, np.random.RandomState(7))
        path = os.path.join(FUZZ, "gguf", "tiny_" + kind)
        write_gguf(path, kind, SEED_SHAPE, w)
        if kind == "bert":
            parts = [json.dumps(hf_config(SEED_SHAPE)).encode(), tokenizer_json().encode(),
                     safetensors_bytes(hf_tensors(SEED_SHAPE, w, np.random.RandomState(8)))]
            out = b""
            for part in parts[:-1]:  # fuzz_support.hpp's split_parts: each part but the last after its u32 length
                out += struct.pack("<I", len(part)) + part
            with open(os.path.join(FUZZ, "hf", "tiny_bert"), "wb") as f:
                f.write(out + parts[-1])
    from tokenizers import Tokenizer
    tok = Tokenizer.from_str(tokenizer_json())
    with open(os.path.join(OUT, "texts.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(t + "\n" for t in TEXTS))
    with open(os.path.join(OUT, "text_ids.txt"), "w", newline="\n") as f:
        f.write("".join(" ".join(map(str, tok.encode(t).ids)) + "\n" for t in TEXTS))
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print(f"tiny_embedders: {total} bytes")


if __name__ == "__main__":
    main()
