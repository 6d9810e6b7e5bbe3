#!/usr/bin/python3
"""Writes tests/golden/tiny_gpt2/: tiny random GPT-2 checkpoints and their logits, for
tests/test_gpt2.cpp (which converts each with mote's safetensors importer and compares).

Each variant is a folder <name>/ with a config.json and a model.safetensors in Hugging Face's
GPT-2 layout (Conv1D weights stored (in, out), c_attn the fused q|k|v). All variants share the
byte-level BPE tokenizer of tests/golden/tiny_hf (300 tokens; the model's 304 rows pad it).
Matrices are stored F16 (their values exactly representable, so f32 and f16 conversions have the
same weights), vectors F32. LayerNorm parameters and biases are perturbed away from 1 and 0 so a
missing or swapped one is caught.

  prenorm_gelu_tanh   GPT2LMHeadModel: activation gelu_new (tanh approximation), tied
  prenorm_gelu_erf    GPT2LMHeadModel: activation gelu (erf), untied lm_head
  prenorm_relu        GPT2LMHeadModel: activation relu, tied
  postnorm_sinusoidal not expressible in transformers: post-norm blocks (x = LN(x + f(x)), no final
                      LayerNorm) and sinusoidal positions; config.json carries mote's two
                      extension keys "mote_norm_placement": "post" and
                      "mote_position_embedding": "sinusoidal", and there is no wpe tensor.

The oracle is an independent PyTorch model built from torch.nn.LayerNorm,
torch.nn.MultiheadAttention (causal mask) and torch.nn.functional.gelu / relu with the weights
copied in; for the first three it is checked against transformers' GPT2LMHeadModel (max abs
logit difference below 1e-5) before anything is written. Per variant:
  <name>/logits.bin   float32 little-endian logits (len(TOKENS), 304) at every position
  <name>/greedy.txt   the reference's greedy continuation of PROMPT (ids), one line
  <name>/hf_logits.bin  GPT2LMHeadModel's own logits, likewise (the three variants it can express)
For prenorm_gelu_tanh also:
  <name>/encoder_logits.bin  in encoder mode (no causal mask): logits at every position
  <name>/encoder_mean.bin    in encoder mode: the final LayerNorm's outputs mean-pooled (dim floats)
  <name>/embed.txt           EMBED_TEXT's token ids (tokenizers), one line
  <name>/embed_mean.bin      EMBED_TEXT's final LayerNorm outputs (causal) mean-pooled
  <name>.gguf               the same weights as llama.cpp's convert_hf_to_gguf writes a GPT-2
                            (architecture gpt2, Linear-shaped F16 matrices, F32 vectors, the
                            tokenizer as tokenizer.ggml.* with pre "gpt2"), written by gguf 0.10
And tiny_gpt2/mha.bin: torch.nn.MultiheadAttention alone (dim 32, 4 heads, 7 tokens, causal mask),
without then with biases: per case in_proj_weight (96, 32), in_proj_bias (96), out_proj.weight
(32, 32), out_proj.bias (32) (zeros without biases), the input (7, 32) and the output (7, 32),
float32 little-endian back to back.
And tiny_gpt2/digits.txt: DIGIT_TEXT's ids by tokenizers (a plain ByteLevel pre-tokenizer: no
digit split), one line.

Run with /usr/bin/python3 (torch 1.13, transformers 4.40.2, safetensors) from any directory.
"""
import json
import math
import os
import shutil

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tokenizers import Tokenizer
from transformers import GPT2Config, GPT2LMHeadModel

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tiny_gpt2")
DIM, LAYERS, HEADS, VOCAB, CONTEXT, EPS = 32, 2, 4, 304, 64, 1e-5
TOKENS = [5, 17, 250, 3, 99, 42, 42, 7, 280, 120, 64, 11]
PROMPT, GREEDY_STEPS = TOKENS[:6], 8
EMBED_TEXT = "the quick brown fox jumps over the lazy dog"
DIGIT_TEXT = "in 2026 there were  1234567 tokens,  42x and 3.14"  # GPT-2 keeps number runs whole

VARIANTS = [
    # name, activation, tied, post_norm, sinusoidal
    ("prenorm_gelu_tanh", "gelu_new", True, False, False),
    ("prenorm_gelu_erf", "gelu", False, False, False),
    ("prenorm_relu", "relu", True, False, False),
    ("postnorm_sinusoidal", "gelu_new", True, True, True),
]


def sinusoids(n_pos, dim):
    """PE(pos, 2i) = sin(pos / 10000^(2i/dim)), PE(pos, 2i+1) = cos(pos / 10000^(2i/dim))."""
    table = np.zeros((n_pos, dim), dtype=np.float64)
    for pos in range(n_pos):
        for i in range(dim // 2):
            angle = pos / 10000.0 ** (2 * i / dim)
            table[pos, 2 * i], table[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return torch.tensor(table, dtype=torch.float32)


class Reference(torch.nn.Module):
    """GPT-2 blocks from torch.nn building blocks, weights copied from a GPT-2 state dict."""

    def __init__(self, state, activation, post_norm, sinusoidal):
        super().__init__()
        self.activation, self.post_norm = activation, post_norm
        self.wte = state["transformer.wte.weight"]
        self.wpe = sinusoids(CONTEXT, DIM) if sinusoidal else state["transformer.wpe.weight"]
        self.lm_head = state.get("lm_head.weight", self.wte)
        self.blocks = []
        for l in range(LAYERS):
            p = lambda name: state[f"transformer.h.{l}.{name}"]
            ln1, ln2 = torch.nn.LayerNorm(DIM, eps=EPS), torch.nn.LayerNorm(DIM, eps=EPS)
            attn = torch.nn.MultiheadAttention(DIM, HEADS, bias=True, batch_first=True)
            with torch.no_grad():
                ln1.weight.copy_(p("ln_1.weight")), ln1.bias.copy_(p("ln_1.bias"))
                ln2.weight.copy_(p("ln_2.weight")), ln2.bias.copy_(p("ln_2.bias"))
                attn.in_proj_weight.copy_(p("attn.c_attn.weight").T)  # Conv1D is (in, out)
                attn.in_proj_bias.copy_(p("attn.c_attn.bias"))
                attn.out_proj.weight.copy_(p("attn.c_proj.weight").T)
                attn.out_proj.bias.copy_(p("attn.c_proj.bias"))
            fc = (p("mlp.c_fc.weight").T, p("mlp.c_fc.bias"), p("mlp.c_proj.weight").T, p("mlp.c_proj.bias"))
            self.blocks.append((ln1, attn, ln2, fc))
        self.ln_f = None
        if not post_norm:
            self.ln_f = torch.nn.LayerNorm(DIM, eps=EPS)
            with torch.no_grad():
                self.ln_f.weight.copy_(state["transformer.ln_f.weight"])
                self.ln_f.bias.copy_(state["transformer.ln_f.bias"])

    def act(self, h):
        if self.activation == "relu":
            return F.relu(h)
        return F.gelu(h, approximate="tanh" if self.activation == "gelu_new" else "none")

    def hidden(self, tokens, causal=True):
        n = len(tokens)
        x = (self.wte[tokens] + self.wpe[:n]).unsqueeze(0)
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if causal else None
        for ln1, attn, ln2, (w_fc, b_fc, w_proj, b_proj) in self.blocks:
            mlp = lambda h: F.linear(self.act(F.linear(h, w_fc, b_fc)), w_proj, b_proj)
            if self.post_norm:
                x = ln1(x + attn(x, x, x, attn_mask=mask, need_weights=False)[0])
                x = ln2(x + mlp(x))
            else:
                h = ln1(x)
                x = x + attn(h, h, h, attn_mask=mask, need_weights=False)[0]
                x = x + mlp(ln2(x))
        return (self.ln_f(x) if self.ln_f is not None else x)[0]

    def logits(self, tokens, causal=True):
        return self.hidden(tokens, causal) @ self.lm_head.T


def random_state(activation, tied, seed):
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=VOCAB, n_positions=CONTEXT, n_embd=DIM, n_layer=LAYERS, n_head=HEADS,
                        activation_function=activation, layer_norm_epsilon=EPS, tie_word_embeddings=tied,
                        bos_token_id=0, eos_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # LayerNorm gains and betas, biases: away from 1 and 0
                p.add_(0.1 * torch.randn_like(p))
            else:  # larger weights than the 0.02 init, so the blocks matter to the logits
                p.normal_(0.0, 0.2)
            if p.dim() == 2:  # matrices exactly representable in f16
                p.copy_(p.half().float())
    return config, model


GGUF_NAMES = {  # GPT-2 state dict name (after "transformer.h.N.") -> GGUF stem
    "ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
    "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down",
}


def write_gguf(path, state):
    import gguf  # only for this file
    from gpt2_bytes import gguf_vocabulary  # tests/golden/gpt2_bytes.py
    tokens, types, merges = gguf_vocabulary(os.path.join(OUT, "tokenizer.json"), VOCAB)
    w = gguf.GGUFWriter(path, "gpt2")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(DIM)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(4 * DIM)
    w.add_head_count(HEADS)
    w.add_layer_norm_eps(EPS)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)

    def add(name, t):
        a = t.detach().numpy()
        w.add_tensor(name, a.astype(np.float16) if a.ndim == 2 else a.astype(np.float32))

    add("token_embd.weight", state["transformer.wte.weight"])
    add("position_embd.weight", state["transformer.wpe.weight"])
    for l in range(LAYERS):
        for hf, stem in GGUF_NAMES.items():
            weight = state[f"transformer.h.{l}.{hf}.weight"]
            add(f"blk.{l}.{stem}.weight", weight if stem.endswith("norm") else weight.T.contiguous())
            add(f"blk.{l}.{stem}.bias", state[f"transformer.h.{l}.{hf}.bias"])
    add("output_norm.weight", state["transformer.ln_f.weight"])
    add("output_norm.bias", state["transformer.ln_f.bias"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_mha(path):
    torch.manual_seed(7)
    parts = []
    for bias in (False, True):
        attn = torch.nn.MultiheadAttention(DIM, HEADS, bias=bias, batch_first=True).eval()
        if bias:  # initialized to zeros: make them count
            with torch.no_grad():
                attn.in_proj_bias.normal_(0.0, 0.3)
                attn.out_proj.bias.normal_(0.0, 0.3)
        x = torch.randn(1, 7, DIM)
        mask = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)
        with torch.no_grad():
            y = attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        zeros = lambda n: torch.zeros(n)
        parts += [attn.in_proj_weight, attn.in_proj_bias if bias else zeros(3 * DIM), attn.out_proj.weight,
                  attn.out_proj.bias if bias else zeros(DIM), x[0], y[0]]
    np.concatenate([p.detach().numpy().reshape(-1) for p in parts]).astype("<f4").tofile(path)


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    for extra in ["tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(os.path.join(HERE, "tiny_hf", extra), os.path.join(OUT, extra))
    write_mha(os.path.join(OUT, "mha.bin"))
    digit_ids = Tokenizer.from_file(os.path.join(OUT, "tokenizer.json")).encode(DIGIT_TEXT).ids
    with open(os.path.join(OUT, "digits.txt"), "w") as f:
        f.write(" ".join(str(i) for i in digit_ids) + "\n")
    for seed, (name, activation, tied, post_norm, sinusoidal) in enumerate(VARIANTS):
        folder = os.path.join(OUT, name)
        os.makedirs(folder)
        config, model = random_state(activation, tied, 20261201 + seed)
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if tied:
            state.pop("lm_head.weight", None)
        if sinusoidal:
            state.pop("transformer.wpe.weight")
        if post_norm:  # no final LayerNorm
            state.pop("transformer.ln_f.weight")
            state.pop("transformer.ln_f.bias")
        ref = Reference(state, activation, post_norm, sinusoidal).eval()
        with torch.no_grad():
            logits = ref.logits(TOKENS)
            if not (post_norm or sinusoidal):
                hf = model(torch.tensor([TOKENS])).logits[0]
                diff = (hf - logits).abs().max().item()
                assert diff < 1e-5, f"{name}: reference and GPT2LMHeadModel differ by {diff}"
                print(f"{name}: reference vs transformers max |diff| {diff:.2e}")
                hf.numpy().astype("<f4").tofile(os.path.join(folder, "hf_logits.bin"))
            ids = list(PROMPT)
            for _ in range(GREEDY_STEPS):
                ids.append(int(ref.logits(ids)[-1].argmax()))
        config_json = config.to_diff_dict()
        for key in ["transformers_version", "_name_or_path"]:
            config_json.pop(key, None)
        if post_norm:
            config_json["mote_norm_placement"] = "post"
        if sinusoidal:
            config_json["mote_position_embedding"] = "sinusoidal"
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config_json, f, indent=2, sort_keys=True)
        stored = {k: (v.half() if v.dim() == 2 else v.float()).contiguous() for k, v in state.items()}
        save_file(stored, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
        logits.numpy().astype("<f4").tofile(os.path.join(folder, "logits.bin"))
        with open(os.path.join(folder, "greedy.txt"), "w") as f:
            f.write(" ".join(str(i) for i in ids[len(PROMPT):]) + "\n")
        if name == "prenorm_gelu_tanh":
            write_gguf(os.path.join(OUT, name + ".gguf"), state)
            with torch.no_grad():
                ref.logits(TOKENS, causal=False).numpy().astype("<f4").tofile(
                    os.path.join(folder, "encoder_logits.bin"))
                ref.hidden(TOKENS, causal=False).mean(0).numpy().astype("<f4").tofile(
                    os.path.join(folder, "encoder_mean.bin"))
                text_ids = Tokenizer.from_file(os.path.join(OUT, "tokenizer.json")).encode(EMBED_TEXT).ids
                ref.hidden(text_ids).mean(0).numpy().astype("<f4").tofile(os.path.join(folder, "embed_mean.bin"))
            with open(os.path.join(folder, "embed.txt"), "w") as f:
                f.write(" ".join(str(i) for i in text_ids) + "\n")
        print(f"wrote {folder}: greedy {ids[len(PROMPT):]}")


if __name__ == "__main__":
    main()
