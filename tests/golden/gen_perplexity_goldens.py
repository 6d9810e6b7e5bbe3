#!/usr/bin/python3
"""Independent PyTorch oracle for `mote perplexity`: writes perplexity.txt.

Run with Debian's interpreter (torch 1.13, numpy):

    /usr/bin/python3 tests/golden/gen_perplexity_goldens.py

For the real checkpoint ../shared/models/aidreams260K.bin with its tokenizer aidreams_tok512.bin,
it computes the perplexity of perplexity_text.txt (committed beside this script) windowed as
llama.cpp's llama-perplexity does, without any of mote's code:

* tokens: the whole file through gen_tokenizer_goldens.encode (run.c's encoder: BOS, the dummy
  prefix " ", code points or byte pieces, best-score merges);
* windows: consecutive, non-overlapping, N tokens each (N defaults to the model's context
  capped at 512), the tail that does not fill a window dropped, at most `chunks` of them;
  each window's first token replaced by BOS (id 1);
* logits: gen_goldens.forward_full (float64 Llama reference) over each window from position 0;
* scores: first = N // 2; the log-softmax at positions first .. N-2 scores tokens first+1 .. N-1
  (N-1-first per window, llama.cpp's count); nll = -log p;
* result: m = sum(nll)/n, var = sum(nll^2)/n - m^2, ppl = exp(m), se = ppl * sqrt(var/(n-1)),
  plus the running ppl after each window.

Each line of perplexity.txt: model= tokenizer= text= ctx= (0: the default) chunks= (0: all)
window= tokens= windows= scored= ppl= se= running= (comma-separated, one per window).
"""

import math
import os
import sys

import torch

import gen_goldens
import gen_tokenizer_goldens

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "aidreams260K.bin"
TOKENIZER = "aidreams_tok512.bin"
TEXT = "perplexity_text.txt"
OUTPUT = os.path.join(HERE, "perplexity.txt")
BOS = 1
DEFAULT_MAX_WINDOW = 512
# (--ctx, --chunks) as the test passes them; 0 = not given.
CASES = [(0, 0), (51, 3)]


def tokenize(text):
    pieces, scores = gen_tokenizer_goldens.load_vocab(os.path.join(gen_goldens.SHARED_MODELS, TOKENIZER))
    lookup = {}
    for token_id, piece in enumerate(pieces):
        lookup.setdefault(piece, token_id)
    return gen_tokenizer_goldens.encode(text, pieces, scores, lookup)


def perplexity(m, tokens, window, chunks):
    n_windows = len(tokens) // window
    if chunks:
        n_windows = min(n_windows, chunks)
    first = window // 2
    nll = nll2 = 0.0
    count = 0
    running = []
    for w in range(n_windows):
        batch = list(tokens[w * window:(w + 1) * window])
        batch[0] = BOS
        logits = gen_goldens.forward_full(m, batch, "interleaved")        # (window, vocab) float64
        logp = torch.log_softmax(logits, dim=-1)
        for j in range(first, window - 1):
            v = -float(logp[j, batch[j + 1]])
            nll += v
            nll2 += v * v
            count += 1
        running.append(math.exp(nll / count))
    mean = nll / count
    var = nll2 / count - mean * mean
    ppl = math.exp(mean)
    return n_windows, count, ppl, ppl * math.sqrt(var / (count - 1)), running


def main():
    path = os.path.join(gen_goldens.SHARED_MODELS, MODEL)
    if not os.path.exists(path):
        print("skipping: %s not found" % path)
        return 0
    m, _ = gen_goldens.read_llama2c(path)
    text = open(os.path.join(HERE, TEXT), "rb").read()
    tokens = tokenize(text)
    print("%s: %d bytes, %d tokens (BOS included)" % (TEXT, len(text), len(tokens)))
    lines = []
    for ctx, chunks in CASES:
        window = ctx if ctx else min(m.seq_len, DEFAULT_MAX_WINDOW)
        n_windows, scored, ppl, se, running = perplexity(m, tokens, window, chunks)
        print("  ctx %d chunks %d: %d windows of %d, %d scored, ppl %.6f +/- %.6f"
              % (ctx, chunks, n_windows, window, scored, ppl, se))
        lines.append("model=%s tokenizer=%s text=%s ctx=%d chunks=%d window=%d tokens=%d windows=%d scored=%d "
                     "ppl=%.6f se=%.6f running=%s"
                     % (MODEL, TOKENIZER, TEXT, ctx, chunks, window, len(tokens), n_windows, scored, ppl, se,
                        ",".join("%.6f" % r for r in running)))
    with open(OUTPUT, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("wrote %s" % OUTPUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
