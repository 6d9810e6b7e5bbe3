#!/usr/bin/python3
"""Reference embeddings of all-MiniLM-L6-v2 from Hugging Face transformers (the oracle for the
BERT block, the WordPiece tokenizer and `mote embed`).

The model is the Hugging Face folder that models/fetch_embedders.sh fetches (model.safetensors
F32). The pipeline is sentence-transformers' for this model (its modules.json: Transformer ->
Pooling(mean) -> Normalize; sentence_bert_config.json: max_seq_length 256), written out here so
that sentence-transformers itself is not needed:
  tokens  = the folder's tokenizer.json (AutoTokenizer, lowercase, accents stripped),
            [CLS] ... [SEP], truncated to 256 tokens
  hidden  = BertModel(input_ids, attention_mask, token_type_ids = 0).last_hidden_state
  pooled  = sum over the attention-masked tokens of hidden / number of tokens
  output  = pooled / max(||pooled||_2, 1e-12)
BertModel runs in float64 (the weights are F32, widened), one sentence at a time (no padding), so
the reference carries no rounding of its own worth the name; the script also runs it in float32
in padded batches, as sentence-transformers does, and prints the largest difference.

Reads tests/golden/embedders/sentences.txt (one sentence per line, UTF-8) and writes next to it:
  minilm_ids.txt                  per sentence, one line: its token ids, space-separated
  minilm_embeddings.f16           per sentence, 384 little-endian float16: the normalized vector
  minilm_unnormalized_first4.f32  the first 4 sentences' mean-pooled vectors before normalizing,
                                  384 little-endian float32 each
  minilm_reference.json           model sha256, package versions, pooling, max length, count

Run with Debian's python (python3-torch 1.13) and the pinned packages of
toolchains/requirements-goldens.txt:
  models/fetch_embedders.sh minilm
  /usr/bin/python3 tests/oracles/minilm_reference.py [MODEL_FOLDER]
"""
import hashlib
import json
import os
import sys

import numpy as np
import tokenizers
import torch
import transformers
from transformers import AutoTokenizer, BertModel

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden", "embedders")
DEFAULT_MODEL = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "mote",
                             "all-MiniLM-L6-v2")
MAX_LENGTH = 256
DIM = 384
UNNORMALIZED = 4


def read_sentences(path):
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mean_pool(hidden, mask):
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


def normalize(x):
    return torch.nn.functional.normalize(x, p=2, dim=-1)


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    if not os.path.isfile(os.path.join(model_dir, "model.safetensors")):
        sys.exit(f"minilm_reference: no model in {model_dir}; run models/fetch_embedders.sh minilm")
    sentences = read_sentences(os.path.join(GOLDEN, "sentences.txt"))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    assert tokenizer.is_fast
    torch.set_grad_enabled(False)
    model = BertModel.from_pretrained(model_dir, add_pooling_layer=False).eval()

    # float64, one sentence at a time: the reference.
    model64 = model.double()
    ids_lines, pooled64 = [], []
    for sentence in sentences:
        enc = tokenizer(sentence, truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
        ids_lines.append(" ".join(str(int(t)) for t in enc["input_ids"][0]))
        hidden = model64(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                         token_type_ids=torch.zeros_like(enc["input_ids"])).last_hidden_state
        pooled64.append(mean_pool(hidden, enc["attention_mask"])[0])
    pooled64 = torch.stack(pooled64)
    embeddings = normalize(pooled64).numpy()

    # float32, padded batches of 32: sentence-transformers' own arithmetic, as a cross-check.
    model32 = model.float()
    batches = []
    for start in range(0, len(sentences), 32):
        enc = tokenizer(sentences[start:start + 32], truncation=True, max_length=MAX_LENGTH,
                        padding=True, return_tensors="pt")
        hidden = model32(**enc).last_hidden_state
        batches.append(normalize(mean_pool(hidden, enc["attention_mask"])))
    embeddings32 = torch.cat(batches).double().numpy()
    diff32 = float(np.abs(embeddings32 - embeddings).max())

    half = embeddings.astype("<f2")
    diff16 = float(np.abs(half.astype(np.float64) - embeddings).max())
    with open(os.path.join(GOLDEN, "minilm_ids.txt"), "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(ids_lines) + "\n")
    half.tofile(os.path.join(GOLDEN, "minilm_embeddings.f16"))
    pooled64[:UNNORMALIZED].numpy().astype("<f4").tofile(
        os.path.join(GOLDEN, "minilm_unnormalized_first4.f32"))

    lengths = [len(line.split()) for line in ids_lines]
    sims = embeddings @ embeddings.T
    meta = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "license": "Apache-2.0",
        "fetch": "models/fetch_embedders.sh minilm",
        "model_safetensors_sha256": sha256(os.path.join(model_dir, "model.safetensors")),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
        "compute_dtype": "float64 (F32 weights widened), one sentence at a time",
        "tokenizer": "tokenizer.json (fast), lowercase, strip accents, [CLS] ... [SEP]",
        "token_type_ids": 0,
        "pooling": "mean over attention-masked tokens, then L2 normalize",
        "max_length": MAX_LENGTH,
        "dim": DIM,
        "count": len(sentences),
        "unnormalized_count": UNNORMALIZED,
        "files": {
            "minilm_ids.txt": "per sentence one line of space-separated token ids",
            "minilm_embeddings.f16": f"count x {DIM} little-endian float16, normalized",
            "minilm_unnormalized_first4.f32": f"{UNNORMALIZED} x {DIM} little-endian float32, "
                                              "mean-pooled, before normalizing",
        },
        "max_abs_diff_float32_batched_vs_reference": diff32,
        "max_abs_diff_float16_rounding": diff16,
        "tokens_min_max": [min(lengths), max(lengths)],
        "truncated_sentences": sum(1 for n in lengths if n == MAX_LENGTH),
    }
    with open(os.path.join(GOLDEN, "minilm_reference.json"), "w", encoding="ascii", newline="\n") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"minilm_reference: {len(sentences)} sentences, tokens {min(lengths)}..{max(lengths)}, "
          f"float32 batched vs float64 max |diff| {diff32:.3g}, float16 rounding {diff16:.3g}")
    print(f"  cos(0,1) cat/mat paraphrase {sims[0, 1]:.4f}, cos(0,2) unrelated {sims[0, 2]:.4f}; "
          f"cos(4,5) {sims[4, 5]:.4f} cos(4,6) {sims[4, 6]:.4f}")


if __name__ == "__main__":
    main()
