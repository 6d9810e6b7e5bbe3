#!/usr/bin/env python3
"""Turns llama.cpp's tests/test-grammar-integration.cpp into the case file tests/test_grammar_reference.cpp
reads: each test_grammar(...) / test_schema(...) call's description, grammar (or JSON schema),
passing and failing strings, as fields "@tag length\n" + bytes + "\n" (@grammar or @schema, then
@text, @pass..., @fail...). C++ string literals (raw, escaped, concatenated with + or by adjacency)
are decoded; cases with a string that is not a literal (llama.cpp's token(N) markers, which mote's
GBNF does not have) are left out and counted.
Usage: models/grammar_integration_cases.py test-grammar-integration.cpp OUT"""
import re, sys

def tokens(src, i):
    """Yields (kind, value, end) tokens of C++ source from index i: str, token, ident, punct."""
    n = len(src)
    while i < n:
        c = src[i]
        if c.isspace(): i += 1; continue
        if src.startswith('//', i): i = src.index('\n', i); continue
        if src.startswith('/*', i): i = src.index('*/', i) + 2; continue
        m = re.match(r'(u8)?R"([^(]*)\(', src[i:])
        if m:
            start = i + m.end(); end = src.index(')' + m.group(2) + '"', start)
            yield ('str', src[start:end].encode(), end + len(m.group(2)) + 2); i = end + len(m.group(2)) + 2; continue
        m = re.match(r'(u8)?"', src[i:])
        if m:
            j = i + m.end(); out = bytearray()
            while src[j] != '"':
                if src[j] == '\\':
                    e = src[j + 1]
                    if e == 'x':
                        h = re.match(r'[0-9a-fA-F]+', src[j + 2:]).group(0); out.append(int(h, 16)); j += 2 + len(h); continue
                    if e in 'uU':
                        k = 4 if e == 'u' else 8; out += chr(int(src[j + 2:j + 2 + k], 16)).encode(); j += 2 + k; continue
                    if e in '01234567':
                        h = re.match(r'[0-7]{1,3}', src[j + 1:]).group(0); out.append(int(h, 8)); j += 1 + len(h); continue
                    out += {'n': b'\n', 't': b'\t', 'r': b'\r', '\\': b'\\', '"': b'"', "'": b"'", '?': b'?', 'a': b'\a', 'b': b'\b', 'f': b'\f', 'v': b'\v'}[e]
                    j += 2; continue
                out += src[j].encode(); j += 1
            yield ('str', bytes(out), j + 1); i = j + 1; continue
        m = re.match(r'[A-Za-z_][A-Za-z_0-9]*', src[i:])
        if m: yield ('ident', m.group(0), i + m.end()); i += m.end(); continue
        m = re.match(r'[0-9]+', src[i:])
        if m: yield ('num', m.group(0), i + m.end()); i += m.end(); continue
        yield ('punct', c, i + 1); i += 1

def parse_call(src, i):
    """Parses the arguments of one call (i just after its '('): a list of values, each a bytes
    expression, a list of them, or None where it is not a plain string (token(N), a variable)."""
    toks = tokens(src, i)
    def value(tok):
        parts, ok = [], True
        while True:
            kind, v, _ = tok
            if kind == 'str': parts.append(v)
            elif kind == 'ident':
                ok = False
                nxt = next(toks)
                if nxt[1] == '(':  # a call such as token(10): skip to its ')'
                    depth = 1
                    while depth:
                        t = next(toks); depth += {'(': 1, ')': -1}.get(t[1], 0) if t[0] == 'punct' else 0
                    nxt = next(toks)
                tok = nxt
                if tok[1] == '+': tok = next(toks); continue
                return (b''.join(parts) if ok else None), tok
            tok = next(toks)
            if tok[0] == 'str': continue
            if tok[1] == '+': tok = next(toks); continue
            return (b''.join(parts) if ok else None), tok
    args, tok = [], next(toks)
    while tok[1] != ')':
        if tok[1] == '{':
            items, tok = [], next(toks)
            while tok[1] != '}':
                v, tok = value(tok); items.append(v)
                if tok[1] == ',': tok = next(toks)
            args.append(items); tok = next(toks)
        else:
            v, tok = value(tok); args.append(v)
        if tok[1] == ',': tok = next(toks)
    return args

def main(source, out_path):
    src = open(source, encoding='utf-8').read()
    cases = skipped = 0
    with open(out_path, 'wb') as out:
        for m in re.finditer(r'(?<!void )\btest_(grammar|schema)\s*\(', src):
            args = parse_call(src, m.end())
            if len(args) != 4 or not isinstance(args[2], list) or not isinstance(args[3], list): continue
            desc, text, passing, failing = args
            if text is None or None in passing or None in failing: skipped += 1; continue
            def field(tag, payload): out.write(b'@%s %d\n' % (tag, len(payload)) + payload + b'\n')
            field(m.group(1).encode(), desc or b'')
            field(b'text', text)
            for s in passing: field(b'pass', s)
            for s in failing: field(b'fail', s)
            cases += 1
    print(f'grammar_integration_cases: {cases} cases written, {skipped} with token markers left out', file=sys.stderr)

main(sys.argv[1], sys.argv[2])
