#!/usr/bin/env python3
"""Writes aidreams_tokenize.txt: token ids for varied strings under aidreams_tok512.bin.

An independent oracle for mote's SentencePiece-style encoder, re-implemented from the
behaviour of llama2.c's run.c `encode` (not from mote's code):
  1. BOS (id 1), then, for non-empty text, the token of the dummy prefix " ".
  2. Each code point looked up as a piece; if absent, each of its bytes as "<0xXX>".
     mote's documented policy for invalid UTF-8 (run.c does not define one): a byte that
     does not start a valid, complete, shortest-form UTF-8 sequence is taken alone.
  3. Repeatedly merge the adjacent pair whose concatenated string is in the vocabulary with
     the highest score (first pair on ties, score must exceed -1e10) until none is left.

Plain Python 3, no dependencies. Run from anywhere:
    python3 tests/golden/gen_tokenizer_goldens.py [path/to/aidreams_tok512.bin]
Output: one case per line, hex of the UTF-8 text, a tab, the space-separated ids (BOS added).
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_VOCAB = os.path.join(HERE, "..", "..", "..", "shared", "models", "aidreams_tok512.bin")
OUTPUT = os.path.join(HERE, "aidreams_tokenize.txt")
BOS = 1

CASES = [
    "",
    "a",
    " ",
    "hello world",
    "Whispers unfold through the patterns, trembling with gentle weights.",
    "The thresholds of echo shift within the dim shapes of the night.",
    "I like the features; conversation and resonance!",
    "Numbers: 0123456789, 3.14159 and 42%.",
    "Punctuation... (parens) [brackets] {braces} \"quotes\" 'single' - dash ; colon: ?!",
    "multiple   spaces    and\ttabs\t\there",
    "line one\nline two\n\nline four\r\n",
    "   leading and trailing   ",
    "\n",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber sch\u00f6n K\u00f6ln",
    "\u03c3\u03b5\u03bb\u03bc \u03bc\u03b5 \u03bb\u03c3",
    "temperature 20\u00b0C \u2013 warm",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587",
    "emoji \U0001F600\U0001F680 and \u2764\ufe0f",
    "mixed \U0001F30D world \u00e9t\u00e9 \u4e16\u754c!",
    "<s> and </s> and <0x41> are just text",
    "ALL CAPS SHOUTING AND lowercase whispering",
    "unfolding unfolding unfolding whisper whispers",
    "x" * 40,
    "ab" * 25,
]

# Raw byte strings, many of them not valid UTF-8.
BYTE_CASES = [
    b"\x80",                      # lone continuation byte
    b"abc\xffdef",                # byte never valid in UTF-8
    b"\xc0\xaf",                  # overlong "/"
    b"\xe0\x80\xaf",              # overlong, three bytes
    b"\xed\xa0\x80",              # UTF-16 surrogate U+D800
    b"\xf4\x90\x80\x80",          # above U+10FFFF
    b"\xf5\x80\x80\x80",          # lead byte out of range
    b"\xe2\x82",                  # truncated sequence at the end
    b"\xe2\x82 the",              # truncated sequence before text
    b"\xc3\xb6\xb6",              # valid "o-umlaut" then a stray continuation byte
    b"zero\x00byte",              # NUL inside the text
    b"\xf0\x9f\x98",              # truncated emoji
]


def load_vocab(path):
    data = open(path, "rb").read()
    offset = 4  # int32 max_token_length
    pieces, scores = [], []
    while offset < len(data):
        score, length = struct.unpack_from("<fi", data, offset)
        offset += 8
        pieces.append(data[offset:offset + length])
        scores.append(score)
        offset += length
    return pieces, scores


def split_code_points(text):
    """Valid code points whole; any other byte alone (mote's invalid-UTF-8 policy)."""
    i = 0
    while i < len(text):
        for length in (1, 2, 3, 4):
            chunk = text[i:i + length]
            try:
                if len(chunk) == length and len(chunk.decode("utf-8", "strict")) == 1:
                    break
            except UnicodeDecodeError:
                pass
        else:
            length = 1
        yield text[i:i + length]
        i += length


def encode(text, pieces, scores, lookup):
    tokens = [BOS]
    if text:
        tokens.append(lookup[b" "])
    for chunk in split_code_points(text):
        if chunk in lookup:
            tokens.append(lookup[chunk])
        else:
            tokens.extend(lookup[b"<0x%02X>" % b] for b in chunk)
    while True:
        best_score, best_id, best_index = -1e10, -1, -1
        for i in range(len(tokens) - 1):
            merged = lookup.get(pieces[tokens[i]] + pieces[tokens[i + 1]], -1)
            if merged != -1 and scores[merged] > best_score:
                best_score, best_id, best_index = scores[merged], merged, i
        if best_index == -1:
            return tokens
        tokens[best_index:best_index + 2] = [best_id]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_VOCAB
    pieces, scores = load_vocab(path)
    lookup = {}
    for token_id, piece in enumerate(pieces):
        lookup.setdefault(piece, token_id)
    # run.c merges plain strings; mote merges only into text tokens. They agree here because
    # no text piece contains '<', so no merge can spell a byte or control token.
    assert all(b"<" not in p for i, p in enumerate(pieces) if i > 258)
    cases = [c.encode("utf-8") for c in CASES] + BYTE_CASES
    with open(OUTPUT, "w") as out:
        for text in cases:
            ids = encode(text, pieces, scores, lookup)
            out.write("%s\t%s\n" % (text.hex(), " ".join(map(str, ids))))
    print("wrote %d cases to %s" % (len(cases), OUTPUT))


if __name__ == "__main__":
    main()
