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
