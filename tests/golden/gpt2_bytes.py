"""GPT-2's reversible byte -> printable character mapping, shared by the golden generators.

Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for themselves; the other 68 bytes map to
U+0100 upwards in increasing order (the table GGUF and Hugging Face byte-level vocabularies use).
"""


def bytes_to_unicode():
    bs = list(range(0x21, 0x7E + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def gguf_vocabulary(tokenizer_json, vocab_size):
    """A Hugging Face byte-level tokenizer.json as GGUF's tokenizer.ggml.* arrays, padded to
    vocab_size with "[PADn]" tokens: (tokens, token types (1 normal, 3 control, 5 unused), merges)."""
    import json
    tok = json.load(open(tokenizer_json))
    vocab = dict(tok["model"]["vocab"])
    for a in tok["added_tokens"]:
        vocab[a["content"]] = a["id"]
    by_id = {i: t for t, i in vocab.items()}
    special = {a["id"] for a in tok["added_tokens"] if a["special"]}
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(vocab_size)]
    types = [3 if i in special else (1 if i in by_id else 5) for i in range(vocab_size)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    return tokens, types, merges
