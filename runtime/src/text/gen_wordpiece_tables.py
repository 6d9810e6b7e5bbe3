#!/usr/bin/env python3
"""Generates wordpiece_tables.inc: the Unicode data of BERT's normalizer and pre-tokenizer.

Hugging Face tokenizers' BertNormalizer and BertPreTokenizer (0.19) decide per code point:
  control        clean_text drops it: categories Cc Cf Co Cs (Rust's unicode_categories is_other;
                 unassigned Cn stays), and U+FFFD; never \\t \\n \\r
  control_space  a control that is also White_Space (U+000B, U+000C, U+0085): dropped by
                 clean_text, a word break without it
  space          White_Space (Rust's char::is_whitespace): clean_text makes it U+0020
  punct          ASCII punctuation (Rust's is_ascii_punctuation, so $ + < = > ^ ` | ~ too) or a
                 category P* code point: a word of its own
  cjk            BERT's CJK ideograph ranges: handle_chinese_chars makes it a word of its own
  mark           category Mn: strip_accents drops it (after NFD)
  other          everything else
strip_accents is NFD with every Mn dropped: kStripPairs maps each code point whose result is not
itself (Hangul syllables excepted: they decompose algorithmically into their jamo), to one code
point or to a sequence of kStripSequences. lowercase is Unicode's full lowercase mapping (Rust's
char::to_lowercase, per code point: no final-sigma context): kLowerRuns hold the one-code-point
mappings as runs (first, count, stride 1 or 2, delta), kLowerSequences the longer ones (U+0130).

Unicode version: /usr/bin/python3's unicodedata (Debian 12: Python 3.11, Unicode 14.0.0), written
into the .inc. Regenerate from the repository root with
    /usr/bin/python3 runtime/src/text/gen_wordpiece_tables.py > runtime/src/text/wordpiece_tables.inc
With --check-hf it instead runs Hugging Face's BertNormalizer and BertPreTokenizer on every code
point and prints those whose result differs from these tables (needs `tokenizers` 0.19.1).
"""
import sys
import unicodedata

OTHER, CONTROL, CONTROL_SPACE, SPACE, PUNCT, CJK, MARK = range(7)
NAMES = ["other", "control", "control_space", "space", "punct", "cjk", "mark"]

# Rust's char::is_whitespace: the White_Space property (PropList.txt; stable since Unicode 6.3).
WHITE_SPACE = set(range(0x09, 0x0E)) | {0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000} | set(
    range(0x2000, 0x200B))
# BERT's _is_chinese_char ranges (CJK Unified Ideographs and their extensions, compatibility ones)
# as Hugging Face spells them: its Rust port has 0x2B920 where BERT's Python has 0x2B820, so
# U+2B820..U+2B91F are ordinary letters there (--check-hf confirms it).
CJK_RANGES = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]
# Hugging Face's category tables (the unicode_categories crate) and NFD tables are Unicode 8-era:
# code points assigned since are unknown there (OTHER: kept, no category, no decomposition), and
# a few changed category since (U+166D and U+111C9 were Po, U+1734 Mn, U+1885..U+1886 Lo).
# --check-hf found exactly these; listed so that the tables match Hugging Face.
HF_OVERRIDES = [
    (0x61D, 0x61D, OTHER), (0x7FD, 0x7FD, OTHER), (0x890, 0x891, OTHER), (0x898, 0x89F, OTHER),
    (0x8CA, 0x8E2, OTHER), (0x9FD, 0x9FE, OTHER), (0xA76, 0xA76, OTHER), (0xAFA, 0xAFF, OTHER),
    (0xB55, 0xB55, OTHER), (0xC04, 0xC04, OTHER), (0xC3C, 0xC3C, OTHER), (0xC77, 0xC77, OTHER),
    (0xC84, 0xC84, OTHER), (0xD00, 0xD00, OTHER), (0xD3B, 0xD3C, OTHER), (0xD81, 0xD81, OTHER),
    (0xEBA, 0xEBA, OTHER), (0x166D, 0x166D, PUNCT), (0x1734, 0x1734, MARK), (0x180F, 0x180F, OTHER),
    (0x1885, 0x1886, OTHER), (0x1ABF, 0x1ACE, OTHER), (0x1B7D, 0x1B7E, OTHER), (0x1DF6, 0x1DFB, OTHER),
    (0x2E43, 0x2E4F, OTHER), (0x2E52, 0x2E5D, OTHER), (0xA82C, 0xA82C, OTHER), (0xA8C5, 0xA8C5, OTHER),
    (0xA8FF, 0xA8FF, OTHER), (0xA9BD, 0xA9BD, OTHER), (0x10D24, 0x10D27, OTHER), (0x10EAB, 0x10EAD, OTHER),
    (0x10F46, 0x10F50, OTHER), (0x10F55, 0x10F59, OTHER), (0x10F82, 0x10F89, OTHER),
    (0x11070, 0x11070, OTHER), (0x11073, 0x11074, OTHER), (0x110C2, 0x110C2, OTHER),
    (0x110CD, 0x110CD, OTHER), (0x111C9, 0x111C9, PUNCT), (0x111CF, 0x111CF, OTHER),
    (0x1123E, 0x1123E, OTHER), (0x1133B, 0x1133B, OTHER), (0x11438, 0x1143F, OTHER),
    (0x11442, 0x11444, OTHER), (0x11446, 0x11446, OTHER), (0x1144B, 0x1144F, OTHER),
    (0x1145A, 0x1145B, OTHER), (0x1145D, 0x1145E, OTHER), (0x11660, 0x1166C, OTHER),
    (0x116B9, 0x116B9, OTHER), (0x1182F, 0x11837, OTHER), (0x11839, 0x1183B, OTHER),
    (0x11938, 0x11938, OTHER), (0x1193B, 0x1193C, OTHER), (0x1193E, 0x1193E, OTHER),
    (0x11943, 0x11946, OTHER), (0x119D4, 0x119D7, OTHER), (0x119DA, 0x119DB, OTHER),
    (0x119E0, 0x119E0, OTHER), (0x119E2, 0x119E2, OTHER), (0x11A01, 0x11A0A, OTHER),
    (0x11A33, 0x11A38, OTHER), (0x11A3B, 0x11A47, OTHER), (0x11A51, 0x11A56, OTHER),
    (0x11A59, 0x11A5B, OTHER), (0x11A8A, 0x11A96, OTHER), (0x11A98, 0x11A9C, OTHER),
    (0x11A9E, 0x11AA2, OTHER), (0x11C30, 0x11C36, OTHER), (0x11C38, 0x11C3D, OTHER),
    (0x11C3F, 0x11C3F, OTHER), (0x11C41, 0x11C45, OTHER), (0x11C70, 0x11C71, OTHER),
    (0x11C92, 0x11CA7, OTHER), (0x11CAA, 0x11CB0, OTHER), (0x11CB2, 0x11CB3, OTHER),
    (0x11CB5, 0x11CB6, OTHER), (0x11D31, 0x11D36, OTHER), (0x11D3A, 0x11D3A, OTHER),
    (0x11D3C, 0x11D3D, OTHER), (0x11D3F, 0x11D45, OTHER), (0x11D47, 0x11D47, OTHER),
    (0x11D90, 0x11D91, OTHER), (0x11D95, 0x11D95, OTHER), (0x11D97, 0x11D97, OTHER),
    (0x11EF3, 0x11EF4, OTHER), (0x11EF7, 0x11EF8, OTHER), (0x11FFF, 0x11FFF, OTHER),
    (0x12FF1, 0x12FF2, OTHER), (0x13430, 0x13438, OTHER), (0x16E97, 0x16E9A, OTHER),
    (0x16F4F, 0x16F4F, OTHER), (0x16FE2, 0x16FE2, OTHER), (0x16FE4, 0x16FE4, OTHER),
    (0x1CF00, 0x1CF2D, OTHER), (0x1CF30, 0x1CF46, OTHER), (0x1E000, 0x1E006, OTHER),
    (0x1E008, 0x1E018, OTHER), (0x1E01B, 0x1E021, OTHER), (0x1E023, 0x1E024, OTHER),
    (0x1E026, 0x1E02A, OTHER), (0x1E130, 0x1E136, OTHER), (0x1E2AE, 0x1E2AE, OTHER),
    (0x1E2EC, 0x1E2EF, OTHER), (0x1E944, 0x1E94A, OTHER), (0x1E95E, 0x1E95F, OTHER),

]
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
ASCII_PUNCT = set(b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def override(cp):
    for first, last, c in HF_OVERRIDES:
        if first <= cp <= last:
            return c
    return None


def bert_class(cp):
    if override(cp) is not None:
        return override(cp)
    category = unicodedata.category(chr(cp))
    if cp in (0x09, 0x0A, 0x0D):
        return SPACE
    if category in ("Cc", "Cf", "Co", "Cs") or cp == 0xFFFD:
        return CONTROL_SPACE if cp in WHITE_SPACE else CONTROL
    if cp in WHITE_SPACE:
        return SPACE
    if cp in ASCII_PUNCT or category[0] == "P":
        return PUNCT
    if any(first <= cp <= last for first, last in CJK_RANGES):
        return CJK
    if category == "Mn":
        return MARK
    return OTHER


def strip(cp):
    """NFD of the code point without its Mn marks, as code points."""
    if override(cp) is not None:
        return [] if override(cp) == MARK else [cp]
    return [ord(c) for c in unicodedata.normalize("NFD", chr(cp)) if unicodedata.category(c) != "Mn"]


def lower(cp):
    return [ord(c) for c in chr(cp).lower()]


def code_points():
    return (cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def class_runs():
    out, previous = [], None
    for cp in range(0x110000):
        c = OTHER if 0xD800 <= cp <= 0xDFFF else bert_class(cp)
        if c != previous:
            out.append((cp, c))
            previous = c
    return out


def strip_table():
    pairs, sequences = [], []
    for cp in code_points():
        if HANGUL_FIRST <= cp <= HANGUL_LAST or bert_class(cp) == MARK:
            continue
        s = strip(cp)
        if s == [cp]:
            continue
        assert len(s) <= len(chr(cp).encode()), "U+%04X strips to more code points than its bytes" % cp
        if len(s) == 1:
            pairs.append((cp, s[0]))
        else:
            pairs.append((cp, 0x110000 + len(sequences)))
            sequences += [len(s)] + s
    return pairs, sequences


def lower_table():
    singles, sequences = [], []
    for cp in code_points():
        s = lower(cp)
        if s == [cp]:
            continue
        assert len(s) <= len(chr(cp).encode()), "U+%04X lowercases to more code points than its bytes" % cp
        if len(s) == 1:
            singles.append((cp, s[0] - cp))
        else:
            sequences += [cp, len(s)] + s
    runs = []  # [first, count, stride, delta]
    for cp, delta in singles:
        if runs:
            first, count, stride, d = runs[-1]
            last = first + (count - 1) * stride
            if d == delta and count < 1024 and ((count == 1 and cp - last in (1, 2)) or cp - last == stride):
                runs[-1] = [first, count + 1, cp - last, d]
                continue
        runs.append([cp, 1, 1, delta])
    return runs, sequences


def print_array(name, items, comment):
    print("// " + comment)
    print("constexpr uint32_t %s[] = {" % name)
    line = "   "
    for item in items:
        text = " 0x%X," % item
        if len(line) + len(text) > 100:
            print(line)
            line = "   "
        line += text
    print(line)
    print("};")


def check_bound():
    """The encoder's buffer bound: no code point normalizes to more code points than its UTF-8 bytes."""
    for cp in code_points():
        s = [0, 0, 0] if HANGUL_FIRST <= cp <= HANGUL_LAST else strip(cp)  # L V T jamo at most
        n = max(len(s), len(lower(cp)), sum(len(lower(x)) for x in s))
        assert n <= len(chr(cp).encode()), "U+%04X normalizes to %d code points" % (cp, n)


def write_inc():
    check_bound()
    print("// Generated by runtime/src/text/gen_wordpiece_tables.py from Python %s's unicodedata "
          "(Unicode %s). Do not edit." % (sys.version.split()[0], unicodedata.unidata_version))
    print("#define MOTE_WORDPIECE_UNICODE_VERSION \"%s\"" % unicodedata.unidata_version)
    print_array("kBertClassRuns", [(cp << 3) | c for cp, c in class_runs()],
                "Runs over U+0000..U+10FFFF: (first code point << 3) | BertClass, until the next run.")
    pairs, sequences = strip_table()
    print_array("kStripPairs", [x for pair in pairs for x in pair],
                "(code point, its NFD without Mn): one code point, or 0x110000 + index of kStripSequences.")
    print_array("kStripSequences", sequences or [0], "(count, code points...) per entry.")
    runs, lower_sequences = lower_table()
    print_array("kLowerRuns", [x for first, count, stride, delta in runs
                               for x in ((first << 11) | ((count - 1) << 1) | (stride - 1), delta & 0xFFFFFFFF)],
                "(first << 11 | (count - 1) << 1 | (stride - 1), delta as u32): cp -> cp + delta.")
    print_array("kLowerSequences", lower_sequences, "(code point, count, code points...) per entry.")


def expected(cp, clean, chinese, strip_accents, lowercase):
    """The normalized code points of one code point, as BertNormalizer makes them."""
    c = bert_class(cp)
    if clean and c in (CONTROL, CONTROL_SPACE):
        return []
    if clean and c == SPACE:
        return [0x20]
    out = [cp]
    if strip_accents:
        out = strip(cp)
    if lowercase:
        out = [x for o in out for x in lower(o)]
    if chinese and c == CJK:
        out = [0x20] + out + [0x20]
    return out


def check_hf():
    from tokenizers import normalizers, pre_tokenizers
    bert = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True)
    raw = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                                     lowercase=False)
    pre = pre_tokenizers.BertPreTokenizer()
    mismatches = 0
    for cp in code_points():
        ours = "".join(map(chr, expected(cp, True, True, True, True)))
        hf = bert.normalize_str(chr(cp))
        words = [w for w, _ in pre.pre_tokenize_str("a" + chr(cp) + "a")]
        c = bert_class(cp)
        hf_class = "space" if words == ["a", "a"] else "punct" if len(words) == 3 else "word"
        our_class = ("space" if c in (SPACE, CONTROL_SPACE) else "punct" if c == PUNCT else "word")
        if raw.normalize_str(chr(cp)) != chr(cp):
            print("U+%04X: the raw normalizer changes it" % cp)
        if hf != ours or hf_class != our_class:
            mismatches += 1
            print("U+%04X %s: HF %r %s, tables %r %s" % (cp, unicodedata.name(chr(cp), "?"), hf, hf_class, ours,
                                                     our_class))
    print("%d mismatches" % mismatches)
    return mismatches


if __name__ == "__main__":
    if "--check-hf" in sys.argv:
        sys.exit(1 if check_hf() else 0)
    write_inc()
