#!/usr/bin/python3
"""Reference embeddings of nomic-embed-text-v1.5 (nomic-bert), in numpy float64, written from the
published model definition (contrastors' / the Hugging Face repository's modeling_hf_nomic_bert.py)
and reading the weights of the F16 GGUF that models/fetch_embedders.sh fetches with the `gguf`
package (not with mote). Independent of mote and of llama.cpp's graph code.

The model, with the GGUF's tensor names (llama.cpp's gguf-py tensor_mapping.py maps the checkpoint's
names to them; the checkpoint name follows each):
  x = token_embd[id] + token_types[0]                  embeddings.word_embeddings / token_type_embeddings
  x = LayerNorm(x) * token_embd_norm.weight + .bias     emb_ln
  per layer (12), post-norm:
    q|k|v = x @ attn_qkv^T, no bias                     encoder.layers.N.attn.Wqkv: the 2304 outputs are
                                                        q, k, v (768 each), each 12 heads x 64
    q, k: rotary over the whole head, base 1000 (nomic-bert.rope.freq_base), NeoX layout: element i
          pairs with i + 32, angle pos * 1000^(-2i/64) for i < 32 (rotate_half, not interleaved)
    a = softmax(q k^T / sqrt(64)) v, bidirectional, no mask (one unpadded sentence)
    x = LayerNorm(x + a @ attn_output^T)                encoder.layers.N.attn.out_proj (no bias), norm1
    x = LayerNorm(x + ffn_down(silu(ffn_gate(x)) * ffn_up(x)))
                                                        fc11 -> ffn_up, fc12 -> ffn_gate, fc2 -> ffn_down,
                                                        norm2 -> layer_output_norm; NomicBertGatedMLP:
                                                        y = fc11(x); gate = fc12(x); fc2(y * silu(gate))
  LayerNorm eps = nomic-bert.attention.layer_norm_epsilon (1e-12), every LayerNorm has a bias
  embedding = mean over the tokens of x, then L2 normalized (pooling_type 1 = mean)
The tokenizer is Hugging Face `tokenizers`' BertWordPiece built from the GGUF's vocabulary (llama.cpp
stores word pieces as "\u2581word" for a word start and "piece" for "##piece"; this undoes that),
lowercase, accents stripped, Chinese characters split, [CLS] ... [SEP].

Inputs: entries of tests/golden/embedders/sentences.txt with nomic's task prefixes, written to
nomic_inputs.txt: "search_query: " before questions, "search_document: " before passages (nomic's
model card: queries and documents of retrieval get these prefixes; the text after the prefix is
the sentence unchanged).

Writes next to sentences.txt:
  nomic_inputs.txt        per entry one line: the prefixed text that was embedded
  nomic_ids.txt           per entry one line: its token ids, space-separated
  nomic_embeddings.f32    per entry 768 little-endian float32: the normalized embedding
  nomic_reference.json    GGUF sha256, versions, the entries (sentence line, prefix), sanity figures

  models/fetch_embedders.sh nomic
  /usr/bin/python3 tests/oracles/nomic_bert_reference.py [PATH.gguf]
"""
import hashlib
import importlib.metadata
import json
import os
import sys

import numpy as np
import tokenizers
from gguf import GGUFReader
from tokenizers.implementations import BertWordPieceTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden", "embedders")
DEFAULT_GGUF = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "mote",
                            "nomic-embed-text-v1.5.f16.gguf")
ARCH = "nomic-bert"
QUERY, DOCUMENT = "search_query: ", "search_document: "

# (sentence, prefix): sentence is matched against a line of sentences.txt (its line number is
# recorded). Pairs of a query and its answer, plus distractors, code, accents and Chinese.
ENTRIES = [
    ("What is the capital of France?", QUERY),
    ("Paris is the capital and most populous city of France.", DOCUMENT),
    ("Berlin is the capital of Germany.", DOCUMENT),
    ("Who wrote Pride and Prejudice?", QUERY),
    ("Jane Austen wrote Pride and Prejudice, published in 1813.", DOCUMENT),
    ("How far is the Moon from the Earth?", QUERY),
    ("The Moon is about 384,400 kilometres from the Earth.", DOCUMENT),
    ("The cat sits on the mat.", DOCUMENT),
    ("A cat is sitting on a rug.", DOCUMENT),
    ("The stock market fell sharply on Monday.", DOCUMENT),
    ("How do I reset my password?", QUERY),
    (None, DOCUMENT),  # the long "To reset your password, ..." line, found by its start
    ("A café in the Rue de Rivoli serves crème brûlée.", DOCUMENT),
    ("def add(a, b): return a + b", DOCUMENT),
    ("我喜欢学习新的语言。", DOCUMENT),
    ("What is the speed of light?", QUERY),
]
LONG_START = "To reset your password, open the settings page"


def read_sentences(path):
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def field(reader, key):
    f = reader.fields[key]
    value = f.parts[f.data[0]]
    return bytes(value).decode("utf-8") if f.types and f.types[0].name == "STRING" else value[0].item()


def vocabulary(reader):
    f = reader.fields["tokenizer.ggml.tokens"]
    vocab = {}
    for index, part in enumerate(f.data):
        token = bytes(f.parts[part]).decode("utf-8")
        if token.startswith("\u2581"):
            token = token[1:]
        elif not (token.startswith("[") and token.endswith("]")):
            token = "##" + token
        if token in vocab:
            sys.exit(f"nomic_bert_reference: word piece {token!r} appears twice in the GGUF")
        vocab[token] = index
    return vocab


class Model:
    def __init__(self, reader):
        tensors = {t.name: t for t in reader.tensors}

        def w(name):
            return np.asarray(tensors[name].data, dtype=np.float64)

        self.eps = float(field(reader, f"{ARCH}.attention.layer_norm_epsilon"))
        self.base = float(field(reader, f"{ARCH}.rope.freq_base"))
        self.heads = int(field(reader, f"{ARCH}.attention.head_count"))
        self.dim = int(field(reader, f"{ARCH}.embedding_length"))
        self.layers = int(field(reader, f"{ARCH}.block_count"))
        self.ffn = int(field(reader, f"{ARCH}.feed_forward_length"))
        assert not field(reader, f"{ARCH}.attention.causal")
        assert int(field(reader, f"{ARCH}.pooling_type")) == 1  # mean
        self.embd = w("token_embd.weight")                   # (vocab, dim)
        self.types = w("token_types.weight")                 # (2, dim)
        self.embd_norm = (w("token_embd_norm.weight"), w("token_embd_norm.bias"))
        self.blocks = []
        for n in range(self.layers):
            b = f"blk.{n}."
            block = {
                "qkv": w(b + "attn_qkv.weight"),             # (3 dim, dim), rows q | k | v
                "out": w(b + "attn_output.weight"),          # (dim, dim)
                "norm1": (w(b + "attn_output_norm.weight"), w(b + "attn_output_norm.bias")),
                "up": w(b + "ffn_up.weight"),                # (ffn, dim)   fc11
                "gate": w(b + "ffn_gate.weight"),            # (ffn, dim)   fc12
                "down": w(b + "ffn_down.weight"),            # (dim, ffn)   fc2
                "norm2": (w(b + "layer_output_norm.weight"), w(b + "layer_output_norm.bias")),
            }
            assert block["qkv"].shape == (3 * self.dim, self.dim)
            assert block["up"].shape == (self.ffn, self.dim) and block["down"].shape == (self.dim, self.ffn)
            for name in tensors:
                if name.startswith(b) and name.endswith(".bias") and "norm" not in name:
                    sys.exit(f"nomic_bert_reference: unexpected bias {name}")
            self.blocks.append(block)

    def layer_norm(self, x, params):
        weight, bias = params
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * weight + bias

    def rope(self, x):  # x: (heads, n, head_dim); NeoX: element i pairs with i + head_dim / 2
        head_dim = x.shape[-1]
        half = head_dim // 2
        inv_freq = self.base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
        angles = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv_freq[None, :]  # (n, half)
        cos, sin = np.cos(angles), np.sin(angles)
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def forward(self, ids):
        n, d, h = len(ids), self.dim, self.heads
        hd = d // h
        x = self.embd[ids] + self.types[0]
        x = self.layer_norm(x, self.embd_norm)
        for block in self.blocks:
            qkv = x @ block["qkv"].T                                   # (n, 3d)
            q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(n, h, hd).transpose(1, 0, 2) for i in range(3))
            q, k = self.rope(q), self.rope(k)
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(hd)            # (h, n, n)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            attn = (probs @ v).transpose(1, 0, 2).reshape(n, d)
            x = self.layer_norm(x + attn @ block["out"].T, block["norm1"])
            up = x @ block["up"].T
            gate = x @ block["gate"].T
            act = gate / (1.0 + np.exp(-gate)) * up
            x = self.layer_norm(x + act @ block["down"].T, block["norm2"])
        pooled = x.mean(axis=0)
        return pooled / max(np.linalg.norm(pooled), 1e-12)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GGUF
    if not os.path.isfile(path):
        sys.exit(f"nomic_bert_reference: no {path}; run models/fetch_embedders.sh nomic")
    sentences = read_sentences(os.path.join(GOLDEN, "sentences.txt"))
    entries = []
    for sentence, prefix in ENTRIES:
        if sentence is None:
            line = next(i for i, s in enumerate(sentences) if s.startswith(LONG_START))
        else:
            line = sentences.index(sentence)
        entries.append((line, prefix, prefix + sentences[line]))

    reader = GGUFReader(path)
    assert field(reader, "general.architecture") == ARCH
    vocab = vocabulary(reader)
    tokenizer = BertWordPieceTokenizer(vocab, unk_token="[UNK]", sep_token="[SEP]", cls_token="[CLS]",
                                       pad_token="[PAD]", mask_token="[MASK]", clean_text=True,
                                       handle_chinese_chars=True, strip_accents=True, lowercase=True)
    assert vocab["[CLS]"] == field(reader, "tokenizer.ggml.bos_token_id")
    assert vocab["[SEP]"] == field(reader, "tokenizer.ggml.seperator_token_id")
    model = Model(reader)

    ids, vectors = [], []
    for line, prefix, text in entries:
        tokens = tokenizer.encode(text).ids
        ids.append(tokens)
        vectors.append(model.forward(np.asarray(tokens)))
        print(f"  line {line + 1:3d} {len(tokens):3d} tokens: {text[:60]}", flush=True)
    vectors = np.stack(vectors)

    with open(os.path.join(GOLDEN, "nomic_inputs.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(text + "\n" for _, _, text in entries))
    with open(os.path.join(GOLDEN, "nomic_ids.txt"), "w", encoding="ascii", newline="\n") as f:
        f.write("".join(" ".join(map(str, t)) + "\n" for t in ids))
    vectors.astype("<f4").tofile(os.path.join(GOLDEN, "nomic_embeddings.f32"))

    sims = vectors @ vectors.T
    checks = {   # (query, right answer, wrong answer) by entry index
        "capital of France": (0, 1, 2),
        "Pride and Prejudice": (3, 4, 1),
        "Moon distance": (5, 6, 9),
        "reset password": (10, 11, 9),
        "cat paraphrase": (7, 8, 9),
    }
    sanity = {}
    for name, (q, good, bad) in checks.items():
        sanity[name] = {"entries": [q, good, bad], "cos_right": round(float(sims[q, good]), 6),
                        "cos_wrong": round(float(sims[q, bad]), 6)}
        print(f"  {name}: cos right {sims[q, good]:.4f} > wrong {sims[q, bad]:.4f}"
              f"{'' if sims[q, good] > sims[q, bad] else '   <-- WRONG ORDER'}")
    meta = {
        "model": "nomic-ai/nomic-embed-text-v1.5 (F16 GGUF)",
        "license": "Apache-2.0",
        "fetch": "models/fetch_embedders.sh nomic",
        "gguf_sha256": sha256(path),
        "numpy": np.__version__,
        "gguf": importlib.metadata.version("gguf"),
        "tokenizers": tokenizers.__version__,
        "compute_dtype": "float64 (F16/F32 weights widened), one unpadded sentence at a time",
        "tokenizer": "BertWordPiece from the GGUF vocabulary: lowercase, strip accents, "
                     "split Chinese characters, [CLS] ... [SEP]",
        "layer_norm_epsilon": model.eps,
        "rope_freq_base": model.base,
        "rope_layout": "NeoX (rotate_half): element i pairs with i + 32, whole 64-wide head",
        "ffn": "ffn_down(silu(ffn_gate(x)) * ffn_up(x)); ffn_up = fc11, ffn_gate = fc12",
        "pooling": "mean over all tokens (including [CLS] and [SEP]), then L2 normalize",
        "prefixes": {"query": QUERY, "document": DOCUMENT},
        "dim": model.dim,
        "count": len(entries),
        "entries": [{"sentence_line": line + 1, "prefix": prefix} for line, prefix, _ in entries],
        "files": {
            "nomic_inputs.txt": "per entry one line: the prefixed text embedded",
            "nomic_ids.txt": "per entry one line of space-separated token ids",
            "nomic_embeddings.f32": f"count x {model.dim} little-endian float32, normalized",
        },
        "sanity_cosines": sanity,
    }
    with open(os.path.join(GOLDEN, "nomic_reference.json"), "w", encoding="ascii", newline="\n") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
