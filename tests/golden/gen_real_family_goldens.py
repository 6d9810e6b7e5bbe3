#!/usr/bin/env python3
"""Writes tests/golden/real_families.txt: the float64 oracle (tests/golden/family_ref.py) on the real
Gemma-3-270M and Qwen2.5-Coder-0.5B-Instruct Q4_K_M files (models/fetch_families.sh), weights
dequantized to float64 by the gguf package, for tests/test_families_real.cpp.

Prompt ids come from the llama.cpp peer's tokenizer (tests/golden/peer_second_opinion.c, built
against the peer's libllama: see PEER below); the peer's greedy continuation and per-position
argmax of the same ids are recorded as a second opinion, not as the oracle: once on the file as
stored (its quantized kernels round activations to 8 bits, so near-ties may go another way) and
once on an F32 copy (llama-quantize --allow-requantize ... F32: the same dequantized weights as
the oracle's, so it should agree everywhere). Format, one record a line, ids comma-separated:

  model name=N file=F sha256=S vocab=V
  prompt model=N name=P ids=...          the prompt's ids (Gemma: BOS 2 first; Qwen: ChatML where named chat)
  greedy model=N name=P ids=...          the oracle's 16 greedy ids after the prompt
  peer model=N name=P ids=... agree=0|1  the peer's 16 greedy ids, and whether they equal the oracle's
  peer_f32 model=N name=P ids=... agree=0|1   the same on the F32 copy
  text model=N ids=...                   the 64-token text
  top model=N pos=I range=R lse=L ids=... logits=...
                                         after text ids[0..I]: the oracle's 16 largest logits
                                         (descending), the logit range max-min and log-sum-exp
                                         (so log-probabilities are logit - L) at that position
  peer_argmax model=N ids=... agree=K    the peer's argmax after each text position; K positions agree
  peer_f32_argmax model=N ids=... agree=K     the same on the F32 copy

Run with python3 (numpy, gguf 0.10) after fetching the models; one model at a time in memory
(~4 GB of float64 for the 0.5B). Takes a few minutes.
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import family_ref as fr  # noqa: E402

CACHE = os.path.expanduser("~/.cache/mote")
PEER_BIN = os.path.expanduser("~/.cache/mote/peers/llama.cpp-build-0.3.36/bin")
PEER_SRC = os.path.expanduser("~/.cache/mote/peers/llama-cpp-python-0.3.36/vendor/llama.cpp")
PEER = os.environ.get("PEER_SECOND_OPINION", "/tmp/peer/peer_second_opinion")
BUILD_PEER = (f"gcc -O1 -o {PEER} {HERE}/peer_second_opinion.c -I{PEER_SRC}/include -I{PEER_SRC}/ggml/include "
              f"-L{PEER_BIN} -lllama -lggml -lggml-base -Wl,-rpath,{PEER_BIN}")
GREEDY_STEPS, TEXT_TOKENS, TOP = 16, 64, 16

QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def chatml(user):
    return (f"<|im_start|>system\n{QWEN_SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


TEXT = ("The history of computing is longer than the history of computing hardware and modern computing "
        "technology and includes the history of methods intended for pen and paper or for chalk and slate, "
        "with or without the aid of tables. Digital computing is intimately tied to the representation of "
        "numbers. But long before abstractions like the number arose, there were mathematical concepts to "
        "serve the purposes of civilization.")

MODELS = [
    ("gemma3-270m", "gemma-3-270m-q4_k_m.gguf",
     "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
     [("capital", "The capital of France is"), ("code", "def fibonacci(n):\n"),
      ("story", "Once upon a time, there was a little")]),
    ("qwen2.5-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
     "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
     [("chat", chatml("Write a Python function that reverses a string.")), ("code", "def quicksort(arr):\n"),
      ("capital", "The capital of France is")]),
]


def peer(*args, stdin=None):
    out = subprocess.run([PEER, *map(str, args)], input=stdin, capture_output=True, text=True, check=True)
    return [int(t) for t in out.stdout.split()]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ids_text(ids):
    return ",".join(map(str, ids))


def f32_copy(path, folder):
    """The GGUF with every tensor dequantized to F32 by the peer's llama-quantize."""
    out = os.path.join(folder, "f32.gguf")
    subprocess.run([os.path.join(PEER_BIN, "llama-quantize"), "--allow-requantize", path, out, "F32"],
                   env=dict(os.environ, LD_LIBRARY_PATH=PEER_BIN), capture_output=True, check=True)
    return out


def peer_opinions(out, name, prompt_name, files, ids, ours):
    """The peer's greedy ids (prompt_name set) or text argmax (None) on the file as stored and on
    the F32 copy, recorded; returns what it said of each."""
    said = []
    for label, path in zip(("peer", "peer_f32"), files):
        if prompt_name:
            theirs = peer("greedy", path, GREEDY_STEPS, *ids)
            out.write(f"{label} model={name} name={prompt_name} ids={ids_text(theirs)} agree={int(theirs == ours)}\n")
            said.append("agrees" if theirs == ours else str(theirs))
        else:
            theirs = peer("argmax", path, *ids)
            agree = sum(a == b for a, b in zip(theirs, ours))
            out.write(f"{label}_argmax model={name} ids={ids_text(theirs)} agree={agree}\n")
            said.append(f"{agree}/{len(ids)}")
    return f"peer {said[0]}, peer on F32 {said[1]}"


def one_model(out, name, file, digest, prompts, scratch):
    path = os.path.join(CACHE, file)
    if sha256(path) != digest:
        sys.exit(f"{path}: sha256 differs from {digest}")
    files = (path, f32_copy(path, scratch))
    start = time.time()
    spec, weights = fr.load_gguf(path)
    shown = {k: v for k, v in spec.items() if k not in ("layer_window", "layer_rope_base", "rope_factors")}
    print(f"{name}: loaded in {time.time() - start:.0f} s; spec {shown}", flush=True)
    out.write(f"model name={name} file={file} sha256={digest} vocab={spec['vocab']}\n")
    for prompt_name, text in prompts:
        ids = peer("tokenize", path, stdin=text)
        start = time.time()
        greedy = fr.greedy(spec, weights, ids, GREEDY_STEPS)
        out.write(f"prompt model={name} name={prompt_name} ids={ids_text(ids)}\n")
        out.write(f"greedy model={name} name={prompt_name} ids={ids_text(greedy)}\n")
        said = peer_opinions(out, name, prompt_name, files, ids, greedy)
        print(f"  {prompt_name}: {len(ids)} ids, oracle {greedy} ({time.time() - start:.0f} s); {said}", flush=True)
    ids = peer("tokenize", path, stdin=TEXT)[:TEXT_TOKENS]
    out.write(f"text model={name} ids={ids_text(ids)}\n")
    runner, tops = fr.Runner(spec, weights, capacity=len(ids)), []
    for pos, token in enumerate(ids):
        logits = runner.step(token)
        top = np.argsort(-logits, kind="stable")[:TOP]
        tops.append(int(top[0]))
        lse = logits.max() + np.log(np.exp(logits - logits.max()).sum())
        out.write(f"top model={name} pos={pos} range={np.ptp(logits):.9g} lse={lse:.9g} ids={ids_text(top)} "
                  f"logits={','.join(f'{logits[i]:.9g}' for i in top)}\n")
    print(f"  text: {len(ids)} positions, argmax: {peer_opinions(out, name, None, files, ids, tops)}",
          flush=True)


def main():
    if not os.path.exists(PEER):
        subprocess.run(BUILD_PEER, shell=True, check=True)
    with open(os.path.join(HERE, "real_families.txt"), "w") as out:
        out.write("# generated by gen_real_family_goldens.py; see its docstring\n")
        for name, file, digest, prompts in MODELS:
            with tempfile.TemporaryDirectory() as scratch:
                one_model(out, name, file, digest, prompts, scratch)
            out.flush()


if __name__ == "__main__":
    main()
