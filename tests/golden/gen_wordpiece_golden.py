#!/usr/bin/env python3
"""Writes wordpiece_hf_golden.txt: Hugging Face tokenizers' WordPiece ids for a few thousand varied
lines, for tests/test_wordpiece.cpp.

The oracle is tokenizers 0.19.1 (pip install tokenizers==0.19.1): a Tokenizer with a WordPiece
model (unk "[UNK]", prefix "##", 100 chars per word), BertNormalizer and BertPreTokenizer, no
post-processor (so no [CLS]/[SEP]) and no added tokens. Its vocabulary is the uncased BERT one in
llama.cpp's ggml-vocab-bert-bge.gguf (~/.cache/mote/tokenizer-vectors, fetched by
models/fetch_tokenizer_vectors.sh), read with the gguf package and turned back from llama.cpp's
phantom-space spelling into "##" pieces, as mote's GGUF importer does; nothing else is downloaded.

Each line: "<flags>\\t<text>\\t<ids>[\\t<decoded>]", flags the .mote tokenizer flag bits (hex) of the normalizer
options (0x10 lowercase, 0x20 strip accents, 0x40 CJK chars, 0x80 clean text), text escaped
(\\\\ \\t \\n \\r and \\xHH for other bytes below 0x20 and 0x7F), ids space-separated. Most lines
use BERT's uncased options (0xF0); a few hundred use other combinations. Every 8th uncased line
also holds the text its ids decode to (decode(ids, skip_special_tokens=False), WordPiece's
decoder with cleanup). Regenerate with
    python3 tests/golden/gen_wordpiece_golden.py > tests/golden/wordpiece_hf_golden.txt
"""
import os
import random
import sys

import tokenizers
from gguf import GGUFReader
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

assert tokenizers.__version__ == "0.19.1", "the golden file pins tokenizers 0.19.1, not " + tokenizers.__version__

CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mote")
GGUF = os.path.join(CACHE, "tokenizer-vectors", "ggml-vocab-bert-bge.gguf")
LOWER, STRIP, CJK, CLEAN = 0x10, 0x20, 0x40, 0x80


def vocabulary():
    reader = GGUFReader(GGUF)
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    out = []
    for t in tokens:  # llama.cpp's phantom space -> Hugging Face's "##"
        if len(t) >= 2 and t[0] == "[" and t[-1] == "]":
            out.append(t)
        elif t.startswith("\u2581"):
            out.append(t[1:])
        else:
            out.append("##" + t)
    return out


def tokenizer(vocab, flags):
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=bool(flags & CLEAN),
                                                handle_chinese_chars=bool(flags & CJK),
                                                strip_accents=bool(flags & STRIP), lowercase=bool(flags & LOWER))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    return tok


def chars(rng, ranges, n):
    out = []
    for _ in range(n):
        first, last = rng.choice(ranges)
        out.append(chr(rng.randint(first, last)))
    return "".join(out)


PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»—–…‽‘’“”„†‡•′″‹›⁂、。「」『』【】〜・！？（）：；，．｛｝"
SPACES = [" ", "\t", "\n", "\r\n", "\u00a0", "\u2002", "\u2003", "\u2009", "\u200a", "\u3000", "\u2028", "\u2029",
          "\u202f", "\u205f", "\u1680", "\x0b", "\x0c", "\x85"]
CONTROLS = ["\x00", "\x01", "\x07", "\x1b", "\x1f", "\x7f", "\x80", "\x9f", "\u00ad", "\u200b", "\u200d", "\u200e",
            "\u2060", "\ufeff", "\ufffd", "\ue000", "\U000f0000", "\U000e0001", "\u0378", "\u0890", "\U0002b820"]
ACCENTED = "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝßāăąćčďđēęěğīıłńňőœřśşšţťūůűźżžǅǈǋǆİ"
SCRIPTS = [(0x391, 0x3A9), (0x3B1, 0x3C9), (0x410, 0x44F), (0x400, 0x40F), (0x5D0, 0x5EA), (0x627, 0x64A),
           (0x905, 0x939), (0xE01, 0xE2E), (0x10A0, 0x10C5), (0x1E00, 0x1EFF), (0x1F00, 0x1FFF), (0x531, 0x556),
           (0x13A0, 0x13F5), (0x10400, 0x1044F), (0x1E900, 0x1E943), (0x2C00, 0x2C5F), (0xA640, 0xA66D)]
CJK_RANGES = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B820, 0x2B91F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F), (0x3040, 0x30FF)]
EMOJI = [(0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF), (0x2600, 0x27BF),
         (0x1FA70, 0x1FAFF)]
COMBINING = [(0x300, 0x36F), (0x1AB0, 0x1ACE), (0x1DC0, 0x1DFF), (0x20D0, 0x20F0), (0xFE20, 0xFE2F)]


def word(rng, vocab):
    w = rng.choice(vocab)
    while w.startswith("[") or w.startswith("##"):
        w = rng.choice(vocab)
    r = rng.random()
    if r < 0.2:
        w = w.capitalize()
    elif r < 0.3:
        w = w.upper()
    if rng.random() < 0.3:
        w += rng.choice(vocab).removeprefix("##")
    return w


def sentence(rng, vocab, extra):
    parts = []
    for _ in range(rng.randint(1, 6)):
        parts.append(word(rng, vocab) if rng.random() < 0.6 else extra(rng))
        parts.append(rng.choice([" ", " ", " ", "", rng.choice(SPACES)]))
    return "".join(parts).strip(" ") if rng.random() < 0.8 else "".join(parts)


def line(rng, vocab, kind):
    if kind == "ascii":
        return sentence(rng, vocab, lambda r: r.choice(PUNCT[:32]))
    if kind == "accents":
        return sentence(rng, vocab, lambda r: "".join(r.choice(ACCENTED) for _ in range(r.randint(1, 6))) +
                        (chars(r, COMBINING, 1) if r.random() < 0.4 else ""))
    if kind == "cjk":
        return sentence(rng, vocab, lambda r: chars(r, CJK_RANGES, r.randint(1, 5)))
    if kind == "emoji":
        return sentence(rng, vocab, lambda r: chars(r, EMOJI, r.randint(1, 3)) +
                        r.choice(["", "\ufe0f", "\u200d", "\U0001f3fd", ""]))
    if kind == "punct":
        return "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 12))) + rng.choice(["", " x", "a"])
    if kind == "controls":
        return sentence(rng, vocab, lambda r: r.choice(CONTROLS) + r.choice(["", "a", " "]))
    if kind == "spaces":
        return sentence(rng, vocab, lambda r: "".join(r.choice(SPACES) for _ in range(r.randint(1, 4))))
    if kind == "long":
        n = rng.choice([98, 99, 100, 101, 102, rng.randint(20, 130)])
        alphabet = rng.choice(["abcdefghij", "etaoinshrdlu", "é", "ab1", "ü", "ab"])
        return "".join(rng.choice(alphabet) for _ in range(n)) + rng.choice(["", " end", "!"])
    if kind == "numbers":
        return sentence(rng, vocab, lambda r: r.choice([str(r.randint(0, 10 ** r.randint(1, 12))), "3.14159",
                                                        "1,000,000", "٣٤٥", "１２３", "½", "²", "2026-12-04", "0x1F"]))
    if kind == "scripts":
        return sentence(rng, vocab, lambda r: chars(r, SCRIPTS, r.randint(1, 8)))
    if kind == "hangul":
        return sentence(rng, vocab, lambda r: chars(r, [(0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3131, 0x318E)],
                                                    r.randint(1, 6)))
    if kind == "random":  # any code point but surrogates: the tables at large
        ranges = [(0x80, 0x2FFF), (0x3000, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x1FFFF), (0x20000, 0x3FFFF),
                  (0xE0000, 0x10FFFF), (0x20, 0x7E)]
        return chars(rng, ranges, rng.randint(1, 12))
    raise ValueError(kind)


KINDS = [("ascii", 400), ("accents", 300), ("cjk", 200), ("emoji", 150), ("punct", 150), ("controls", 200),
         ("spaces", 150), ("long", 100), ("numbers", 150), ("scripts", 300), ("hangul", 100), ("random", 800)]
OTHER_FLAGS = [0, LOWER, LOWER | CLEAN, STRIP | CJK | CLEAN, LOWER | STRIP, CJK, CLEAN]


def escape(text):
    named = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
    return "".join(named.get(c) or ("\\x%02X" % ord(c) if ord(c) < 0x20 or ord(c) == 0x7F else c) for c in text)


def main():
    sys.stdout.reconfigure(encoding="utf-8")
    rng = random.Random(20261204)
    vocab = vocabulary()
    tokenizers_by_flags = {}
    cases = [
        "", " ", "Hello, world!", "Äpfel", "ΣΑΣ Σ", "İstanbul", "naïve café", "[CLS] hello [SEP]", "a\x00b\ufffdc",
        "ﬁ ǅ Ⅻ ẞ", "한국어 텍스트", "中文字符和English混合", "𫠠𫤟", "a" * 100, "a" * 101, "é" * 101, "a\u0300" * 60,
    ]
    lines = [(LOWER | STRIP | CJK | CLEAN, t) for t in cases]
    for kind, count in KINDS:
        lines += [(LOWER | STRIP | CJK | CLEAN, line(rng, vocab, kind)) for _ in range(count)]
    for flags in OTHER_FLAGS:
        lines += [(flags, line(rng, vocab, kind)) for kind, _ in KINDS for _ in range(8)]
    print("# Generated by tests/golden/gen_wordpiece_golden.py (tokenizers %s, bert-bge's vocabulary). Do not edit."
          % tokenizers.__version__)
    for n, (flags, text) in enumerate(lines):
        if flags not in tokenizers_by_flags:
            tokenizers_by_flags[flags] = tokenizer(vocab, flags)
        tok = tokenizers_by_flags[flags]
        ids = tok.encode(text, add_special_tokens=False).ids
        decoded = ""
        if flags == LOWER | STRIP | CJK | CLEAN and n % 8 == 0:  # every 8th uncased line: the decoded text too
            decoded = "\t" + escape(tok.decode(ids, skip_special_tokens=False))
        sys.stdout.write("%02X\t%s\t%s%s\n" % (flags, escape(text), " ".join(map(str, ids)), decoded))


if __name__ == "__main__":
    main()
