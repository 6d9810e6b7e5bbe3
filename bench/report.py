#!/usr/bin/python3
"""Plots `mote bench -o json` results (and llama.cpp's `llama-bench -o json`, when given) into
docs/bench/*.png, with the markdown table the plots come from.

usage: bench/report.py MOTE_JSON... [--llama LLAMA_JSON...] [--bandwidth GBPS | --bandwidth-json FILE]
                       [--out docs/bench]

- tokens_per_s.png: prompt (pp) and decode (tg) tokens/s side by side, grouped by weight type
  (the model file's name, e.g. smollm2-q4_0.mote -> q4_0) with one bar per thread count;
  llama.cpp's bars hatched next to mote's.
- roofline.png: decode GB/s of weights read (weight bytes x decode tok/s) per thread count, against
  the machine's measured read bandwidth (--bandwidth GB/s for every thread count, or
  bench/bench_bandwidth's --benchmark_format=json output: read_bandwidth/THREADS/...).
- table.md: the numbers of both plots.

Needs Debian's python3-matplotlib (toolchains/install-deps.sh without --no-python).
"""
import argparse
import json
import re
import sys
from pathlib import Path


def weight_type(model_path):
    """smollm2-q4_0.mote -> q4_0; a name without a known type is its stem."""
    stem = Path(model_path).stem
    m = re.search(r"(f32|f16|bf16|q8_0|q4_0|q4_1|q4_k|q6_k)", stem, re.IGNORECASE)
    return m.group(1).lower() if m else stem


def load_mote(paths):
    rows = []
    for path in paths:
        for r in json.loads(Path(path).read_text()):
            rows.append({"engine": "mote", "type": weight_type(r["model"]), "threads": r["threads"],
                         "pp": r["prompt_tokens"], "tg": r["gen_tokens"],
                         "pp_ts": r["prompt_tokens_per_s"], "pp_sd": r.get("prompt_tokens_per_s_stddev", 0.0),
                         "tg_ts": r["decode_tokens_per_s"], "tg_sd": r.get("decode_tokens_per_s_stddev", 0.0),
                         "weight_bytes": r["weight_bytes"]})
    return rows


def load_llama(paths):
    """llama-bench -o json: one object per test (n_prompt > 0: pp, n_gen > 0: tg)."""
    merged = {}
    for path in paths:
        for r in json.loads(Path(path).read_text()):
            key = (weight_type(r.get("model_type", r.get("model_filename", "?")).replace(" ", "_")), r["n_threads"])
            row = merged.setdefault(key, {"engine": "llama.cpp", "type": key[0], "threads": key[1], "pp": 0, "tg": 0,
                                          "pp_ts": 0.0, "pp_sd": 0.0, "tg_ts": 0.0, "tg_sd": 0.0,
                                          "weight_bytes": r.get("model_size", 0)})
            test = "pp" if r["n_gen"] == 0 else "tg"
            row[test] = r["n_prompt"] if test == "pp" else r["n_gen"]
            row[test + "_ts"], row[test + "_sd"] = r["avg_ts"], r.get("stddev_ts", 0.0)
    return list(merged.values())


def load_bandwidth(args, threads):
    if args.bandwidth:
        return {t: args.bandwidth for t in threads}
    if args.bandwidth_json:
        result = {}
        for b in json.loads(Path(args.bandwidth_json).read_text())["benchmarks"]:
            m = re.match(r"read_bandwidth/(\d+)/", b["name"])
            if m:
                result[int(m.group(1))] = b["bytes_per_second"] / 1e9
        return result
    return {}


def plot_tokens_per_s(rows, out, plt):
    types = sorted({r["type"] for r in rows})
    series = sorted({(r["engine"], r["threads"]) for r in rows}, key=lambda s: (s[0] != "mote", s[1]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.8 / max(1, len(series))
    for ax, test, title in ((axes[0], "pp", "prompt (prefill)"), (axes[1], "tg", "decode")):
        for i, (engine, threads) in enumerate(series):
            xs, ys, errs = [], [], []
            for j, t in enumerate(types):
                match = [r for r in rows if r["type"] == t and r["engine"] == engine and r["threads"] == threads]
                if match and match[0][test + "_ts"] > 0:
                    xs.append(j + (i - (len(series) - 1) / 2) * width)
                    ys.append(match[0][test + "_ts"])
                    errs.append(match[0][test + "_sd"])
            ax.bar(xs, ys, width, yerr=errs, capsize=2, label=f"{engine}, {threads} thread{'s' * (threads > 1)}",
                   hatch="//" if engine != "mote" else None, edgecolor="black", linewidth=0.4)
        ax.set_xticks(range(len(types)))
        ax.set_xticklabels(types)
        ax.set_title(title)
        ax.set_ylabel("tokens/s")
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "tokens_per_s.png", dpi=90)


def plot_roofline(rows, bandwidth, out, plt):
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for t in sorted({r["type"] for r in rows if r["engine"] == "mote"}):
        points = sorted((r["threads"], r["tg_ts"] * r["weight_bytes"] / 1e9)
                        for r in rows if r["engine"] == "mote" and r["type"] == t)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"mote decode, {t}")
    if bandwidth:
        points = sorted(bandwidth.items())
        ax.plot([p[0] for p in points], [p[1] for p in points], "k--", marker="s", label="measured read bandwidth")
    ax.set_xlabel("threads")
    ax.set_ylabel("GB/s of weights read per second")
    ax.set_title("decode against the memory roofline")
    ax.set_xticks(sorted({r["threads"] for r in rows}))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "roofline.png", dpi=90)


def table(rows, bandwidth):
    lines = ["| engine | weights | threads | pp tok/s | tg tok/s | decode GB/s | read bandwidth GB/s |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: (r["engine"] != "mote", r["type"], r["threads"])):
        gbps = r["tg_ts"] * r["weight_bytes"] / 1e9
        bw = f"{bandwidth[r['threads']]:.1f}" if r["threads"] in bandwidth else ""
        lines.append(f"| {r['engine']} | {r['type']} | {r['threads']} | pp{r['pp']}: {r['pp_ts']:.1f} ± {r['pp_sd']:.1f} "
                     f"| tg{r['tg']}: {r['tg_ts']:.1f} ± {r['tg_sd']:.1f} | {gbps:.2f} | {bw} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mote_json", nargs="+", help="files written by mote bench -o json")
    parser.add_argument("--llama", nargs="*", default=[], help="files written by llama-bench -o json")
    parser.add_argument("--bandwidth", type=float, help="measured read bandwidth in GB/s (every thread count)")
    parser.add_argument("--bandwidth-json", help="bench/bench_bandwidth --benchmark_format=json output")
    parser.add_argument("--out", default="docs/bench", help="output folder (default docs/bench)")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("bench/report.py needs matplotlib: apt-get install python3-matplotlib")
    rows = load_mote(args.mote_json) + load_llama(args.llama)
    bandwidth = load_bandwidth(args, sorted({r["threads"] for r in rows}))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot_tokens_per_s(rows, out, plt)
    plot_roofline(rows, bandwidth, out, plt)
    (out / "table.md").write_text(table(rows, bandwidth))
    print(f"wrote {out / 'tokens_per_s.png'}, {out / 'roofline.png'} and {out / 'table.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
