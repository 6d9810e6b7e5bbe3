#!/usr/bin/env python3
"""Accuracy side by side: mote against llama.cpp on the same GGUF files, type by type.

For each weight type, llama.cpp's llama-quantize makes SmolLM2-135M-Instruct's GGUF from the
fetched Q4_1 one (as bench/compare.py does); mote converts it as stored, so both runtimes read
the same blocks. On the same text and windows (`-c 512 --chunks 2` by default: ~1,000 tokens of
Debian's GPL-3) it reports, per type:
- perplexity by `llama-perplexity` and by `mote perplexity`, and their ratio (the bar: within
  2.5%);
- the KL divergence of each runtime's logits from llama.cpp's f16 logits (the distance to f16,
  reported, not bounded), through llama.cpp's own --kl-divergence-base file, which both read;
- the KL divergence of mote's logits from llama.cpp's on the same file, and how often their top
  tokens agree (what activation rounding alone changes).

Python 3 standard library only. Never run by CI (it needs the peer: bench/peers/build_llama_cpp.sh).
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402  (the same tools, models and cache as the speed comparison)

DEFAULT_TYPES = ["f16", "q8_0", "q6_k", "q5_k_m", "q5_0", "q4_k_m", "q4_0", "q3_k_m", "q2_k", "iq4_nl"]
TEXT = Path("/usr/share/common-licenses/GPL-3")


def log(message):
    print(f"quality: {message}", file=sys.stderr, flush=True)


def number(pattern, text, what):
    found = re.search(pattern, text)
    if not found:
        raise compare.Failure(f"no {what} in the output")
    return float(found.group(1))


def run_both_streams(argv):
    """stdout + stderr of argv (llama-perplexity prints its results on stderr)."""
    import subprocess

    done = subprocess.run(argv, capture_output=True, text=True, timeout=compare.RUN_TIMEOUT_S)
    if done.returncode != 0:
        raise compare.Failure(f"{Path(argv[0]).name} exited {done.returncode}: "
                              f"{compare.one_line(done.stderr or done.stdout)}")
    return done.stdout + done.stderr


class Runner:
    def __init__(self, args, tools, work):
        self.args, self.tools, self.work = args, tools, work
        self.window = ["-c", str(args.ctx), "--chunks", str(args.chunks), "-t", str(args.threads)]

    def llama_perplexity(self, gguf, base, compare_to_base):
        argv = [str(self.tools.llama("llama-perplexity")), "-m", str(gguf), "-f", str(self.args.text),
                *self.window, "--kl-divergence-base", str(base)]
        if compare_to_base:
            argv.append("--kl-divergence")
        return run_both_streams(argv)

    def mote_perplexity(self, model, base, compare_to_base):
        argv = [str(self.tools.mote), "perplexity", "-m", str(model), "-f", str(self.args.text),
                "--ctx", str(self.args.ctx), "--chunks", str(self.args.chunks), "-t", str(self.args.threads),
                "--kl-divergence-base", str(base)]
        if compare_to_base:
            argv.append("--kl-divergence")
        return run_both_streams(argv)


def measure_type(runner, dtype, f16_base):
    """One row: both perplexities, both distances to f16, and mote's distance to llama.cpp."""
    gguf = compare.gguf_for_type(runner.tools, dtype)
    model = compare.mote_model_for(runner.tools, gguf, None)
    same_file_base = runner.work / f"llama-{dtype}.kld"
    row = {"type": dtype, "gguf_mb": gguf.stat().st_size / 1e6, "mote_mb": model.stat().st_size / 1e6}
    log(f"{dtype}: llama-perplexity (saving its logits)")
    out = runner.llama_perplexity(gguf, same_file_base, False)
    row["llama_ppl"] = number(r"Final estimate: PPL = ([0-9.]+)", out, "llama.cpp perplexity")
    log(f"{dtype}: mote perplexity against llama.cpp's logits of the same file")
    out = runner.mote_perplexity(model, same_file_base, True)
    row["mote_ppl"] = number(r"\nperplexity: ([0-9.]+)", "\n" + out, "mote perplexity")
    row["mote_vs_llama_kld"] = number(r"KL divergence: ([0-9.e-]+)", out, "mote KLD")
    row["mote_vs_llama_top1"] = number(r"same top token: ([0-9.]+)", out, "mote top-1")
    same_file_base.unlink(missing_ok=True)
    if dtype != "f16":
        log(f"{dtype}: both against llama.cpp's f16 logits")
        out = runner.llama_perplexity(gguf, f16_base, True)
        row["llama_kld_f16"] = number(r"Mean\s+KLD:\s+([0-9.e-]+)", out, "llama.cpp KLD")
        out = runner.mote_perplexity(model, f16_base, True)
        row["mote_kld_f16"] = number(r"KL divergence: ([0-9.e-]+)", out, "mote KLD")
    return row


def table(rows):
    header = ["type", "GGUF MB", "llama.cpp PPL", "mote PPL", "mote / llama.cpp", "KLD to f16: llama.cpp",
              "KLD to f16: mote", "KLD mote vs llama.cpp", "same top token"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['type']} | failed: {r['error']} |")
            continue
        lines.append("| " + " | ".join([
            r["type"], f"{r['gguf_mb']:.1f}", f"{r['llama_ppl']:.4f}", f"{r['mote_ppl']:.4f}",
            f"{r['mote_ppl'] / r['llama_ppl']:.4f}", f"{r.get('llama_kld_f16', 0):.5f}",
            f"{r.get('mote_kld_f16', 0):.5f}", f"{r['mote_vs_llama_kld']:.5f}",
            f"{r['mote_vs_llama_top1']:.2f} %"]) + " |")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--types", default=",".join(DEFAULT_TYPES), help="default: %(default)s")
    parser.add_argument("--text", type=Path, default=TEXT)
    parser.add_argument("--ctx", type=int, default=512)
    parser.add_argument("--chunks", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--build", default=str(compare.REPO / "build" / "default"))
    parser.add_argument("--llama-bin", help="folder with llama-perplexity and llama-quantize")
    args = parser.parse_args(argv)
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    unknown = [t for t in types if t not in compare.LLAMA_QUANT_NAMES]
    if unknown:
        parser.error(f"unknown type(s) {unknown}: choose from {','.join(compare.LLAMA_QUANT_NAMES)}")
    tools = compare.Tools(args)
    with tempfile.TemporaryDirectory(prefix="mote-quality-") as tmp:
        runner = Runner(args, tools, Path(tmp))
        f16_base = runner.work / "llama-f16-base.kld"
        log("f16: llama-perplexity saves the f16 logits every type is measured against")
        runner.llama_perplexity(compare.gguf_for_type(tools, "f16"), f16_base, False)
        rows = []
        for dtype in types:
            try:
                rows.append(measure_type(runner, dtype, f16_base))
            except compare.Failure as e:
                rows.append({"type": dtype, "error": str(e)})
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    print(f"\nSmolLM2-135M-Instruct, `{args.text}`, -c {args.ctx} --chunks {args.chunks} -t {args.threads}\n")
    print(table(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
