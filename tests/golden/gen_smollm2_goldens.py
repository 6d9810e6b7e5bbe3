#!/usr/bin/python3
"""Reference outputs of SmolLM2-135M-Instruct from Hugging Face transformers (the oracle for
tests/test_smollm2.cpp).

The weights are those of the Q4_1 GGUF that models/fetch_smollm2.sh fetches, dequantized by the
`gguf` package (not by mote), with llama.cpp's Q/K row permutation undone so that transformers'
LlamaForCausalLM (split-half RoPE) computes the published model. The tokenizer is Hugging Face
`tokenizers` built from the GGUF's vocabulary and merges with SmolLM2's pre-tokenizer.

Writes, next to this script:
  smollm2_reference.txt        per prompt: its token ids, the 32 greedy tokens after it
  smollm2_<name>.logits        the last position's logits (vocab f32, little-endian)
  smollm2_chat.txt             token ids of a two-turn ChatML conversation (apply_chat_template)

Run with Debian's python (torch 1.13) and the pinned packages of
toolchains/requirements-goldens.txt:
  /usr/bin/python3 tests/golden/gen_smollm2_goldens.py [PATH.gguf]
"""
import os
import sys

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_GGUF = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "mote",
                            "SmolLM2-135M-Instruct.Q4_1.gguf")

# Prompts: plain text continuation, code, and a ChatML turn (special tokens from the template).
PROMPTS = [
    ("capital", "The capital of France is"),
    ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("chat", "<|im_start|>user\nWhat is the tallest mountain on Earth?<|im_end|>\n<|im_start|>assistant\n"),
]
GREEDY_TOKENS = 32

CHAT = [
    {"role": "system", "content": "You are a concise assistant."},
    {"role": "user", "content": "Name three colors."},
    {"role": "assistant", "content": "Red, green and blue."},
    {"role": "user", "content": "And  two\n\nfruits? 12345 ok"},
]


def field_value(reader, key):
    f = reader.fields[key]
    if len(f.data) == 1 and f.types[0] != 9:  # a scalar
        v = f.parts[f.data[0]]
        return bytes(v).decode() if f.types[0] == 8 else v[0]
    return [bytes(f.parts[i]).decode() for i in f.data]


def build_tokenizer(reader):
    tokens = field_value(reader, "tokenizer.ggml.tokens")
    merges = field_value(reader, "tokenizer.ggml.merges")
    types = [int(reader.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in
             reader.fields["tokenizer.ggml.token_type"].data]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges]))
    # SmolLM2's tokenizer.json: digits split one by one, then GPT-2's byte-level pattern.
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([t for t, ty in zip(tokens, types) if ty == 3])
    return tok


def unpermute(w, n_head):
    # llama.cpp's converter interleaves each head's rows for GGUF's pairwise RoPE; undo it.
    rows, cols = w.shape
    return w.reshape(n_head, rows // n_head // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def build_model(reader):
    n = lambda k: int(field_value(reader, k))
    n_head, n_kv = n("llama.attention.head_count"), n("llama.attention.head_count_kv")
    config = LlamaConfig(
        vocab_size=len(field_value(reader, "tokenizer.ggml.tokens")),
        hidden_size=n("llama.embedding_length"), intermediate_size=n("llama.feed_forward_length"),
        num_hidden_layers=n("llama.block_count"), num_attention_heads=n_head, num_key_value_heads=n_kv,
        rms_norm_eps=float(field_value(reader, "llama.attention.layer_norm_rms_epsilon")),
        rope_theta=float(field_value(reader, "llama.rope.freq_base")),
        max_position_embeddings=n("llama.context_length"), tie_word_embeddings=True, hidden_act="silu",
        torch_dtype=torch.float32)
    names = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "attn_norm": "input_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    state = {}
    for t in reader.tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        w = w.reshape([int(d) for d in reversed(t.shape)])  # GGUF lists dims innermost first
        parts = t.name.split(".")
        if parts[0] == "blk":
            layer, role = parts[1], parts[2]
            if role == "attn_q":
                w = unpermute(w, n_head)
            elif role == "attn_k":
                w = unpermute(w, n_kv)
            key = f"model.layers.{layer}.{names[role]}.weight"
        else:
            key = names[parts[0]] + ".weight"
        state[key] = torch.from_numpy(np.ascontiguousarray(w))
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model = LlamaForCausalLM(config)
    model.load_state_dict(state, strict=True)
    return model.eval()


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GGUF
    reader = GGUFReader(path)
    tok = build_tokenizer(reader)
    model = build_model(reader)
    lines = [f"# SmolLM2-135M-Instruct references from transformers {__import__('transformers').__version__}, "
             f"torch {torch.__version__} (tests/golden/gen_smollm2_goldens.py)"]
    with torch.no_grad():
        for name, text in PROMPTS:
            ids = tok.encode(text, add_special_tokens=False).ids  # the template text's specials match
            logits = model(torch.tensor([ids])).logits[0, -1].float().numpy()
            logits.astype("<f4").tofile(os.path.join(HERE, f"smollm2_{name}.logits"))
            # Greedy with the KV cache, never stopping early (not even at <|im_end|>).
            seq = list(ids)
            out = model(torch.tensor([ids]), use_cache=True)
            for _ in range(GREEDY_TOKENS):
                seq.append(int(out.logits[0, -1].argmax()))
                out = model(torch.tensor([[seq[-1]]]), past_key_values=out.past_key_values, use_cache=True)
            lines.append(f"prompt {name}")
            lines.append("ids " + " ".join(map(str, ids)))
            lines.append("greedy " + " ".join(map(str, seq[len(ids):])))
            print(name, repr(tok.decode(seq[len(ids):])))
    with open(os.path.join(HERE, "smollm2_reference.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    fast = PreTrainedTokenizerFast(tokenizer_object=tok)
    fast.chat_template = field_value(reader, "tokenizer.chat_template")
    chat_ids = fast.apply_chat_template(CHAT, tokenize=True, add_generation_prompt=True)
    with open(os.path.join(HERE, "smollm2_chat.txt"), "w") as f:
        f.write("# apply_chat_template(system, user, assistant, user; add_generation_prompt) with the GGUF's template\n")
        f.write("ids " + " ".join(map(str, chat_ids)) + "\n")


if __name__ == "__main__":
    main()
