#!/usr/bin/env python3
"""mote's one-token matrix products next to ggml's, kernel by kernel (issue 36, item 2).

For every weight type and shape, runs ggml's product (bench/peers/ggml_matvec.cpp, built by
bench/peers/build_llama_cpp.sh against llama.cpp's ggml: the weights in ggml's plain layout and,
where ggml has an interleaved kernel for the type on this CPU, in the CPU_REPACK layout
llama.cpp loads them into) and mote's bench_matvec on each kernel table this CPU has
(MOTE_ISA's tables: avx2, avx2_vnni, avx512, avx512_vnni, avx512_vnni_ymm), interleaved: one repetition of
every side, then the next. Medians over --reps. Prints a markdown table: weight GB/s (weight
bytes / time) per side, mote / ggml per table and for the best table. ggml's reference is its
faster layout. Both sides quantize the input vector inside each product and reread the same
weights (so the smaller shapes run from cache, for both).

bench_matvec's products run on one thread, so the comparison is at one thread (ggml too).
Also prints bench_bandwidth's one-thread read bandwidth (read_bandwidth/1, a 1 GiB buffer).
With --avx2, a second ggml built for AVX2 alone (build_llama_cpp.sh --avx2) runs in the same
interleave, and a second table puts mote's avx2 and avx2_vnni tables next to it (the native
ggml uses AVX-512 on a CPU that has it).
Standard library only; never run by CI.

  bench/kernel_compare.py                         # every type and shape, --reps 3 (~15-20 min)
  bench/kernel_compare.py --types q4_K --shapes 1536x1536 --reps 1   # smoke run
  bench/kernel_compare.py --avx2 --out /tmp/kernels.json            # with the AVX2 ggml too
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# ggml's type name -> mote's decode layout of the same blocks (8 rows interleaved; f16 plain).
MOTE_LAYOUT = {
    "q4_K": "q4_kx8", "q5_K": "q5_kx8", "q6_K": "q6_kx8", "q3_K": "q3_kx8", "q2_K": "q2_kx8",
    "q5_0": "q5_0x8", "q5_1": "q5_1x8", "q4_0": "q4_0x8", "q4_1": "q4_1x8", "q8_0": "q8_0x8",
    "iq4_nl": "iq4_nlx8", "f16": "f16",
}
# Qwen2.5-1.5B: attention (q and o), FFN up/gate, FFN down, classifier; rows x cols.
SHAPES = ["1536x1536", "8960x1536", "1536x8960", "151936x1536"]
# mote's x86 tables in the order to print them (others bench_matvec lists follow).
TABLES = ["avx2", "avx2_vnni", "avx512", "avx512_vnni", "avx512_vnni_ymm"]


def log(msg):
    print(f"kernel_compare: {msg}", file=sys.stderr, flush=True)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return float("nan")


def gbench(binary, filt, min_time):
    """Runs a Google Benchmark binary on a filter; returns its benchmarks (JSON)."""
    out = subprocess.run([str(binary), f"--benchmark_filter={filt}", "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{binary.name} failed: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)["benchmarks"]


def to_seconds(b):
    return b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]


def ggml_run(binary, gtype, rows, cols, threads, repack, min_time):
    cmd = [str(binary), "--type", gtype, "--rows", str(rows), "--cols", str(cols),
           "--threads", str(threads), "--min-time", str(min_time)]
    if repack:
        cmd.append("--repack")
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"mote-ggml-matvec failed: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def locate_peer(given, *flags):
    if given:
        return Path(given) / "mote-ggml-matvec"
    log(f"locating the peer (bench/peers/build_llama_cpp.sh {' '.join(flags)}; builds it once, a while)")
    out = subprocess.run([str(REPO / "bench" / "peers" / "build_llama_cpp.sh"), *flags], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return Path(out.strip().splitlines()[-1]) / "mote-ggml-matvec"


def ggml_side(peer, gtype, rows, cols, min_time, figures, state):
    """One repetition of ggml: plain, then CPU_REPACK while ggml has that layout for the type."""
    r = ggml_run(peer, gtype, rows, cols, 1, False, min_time)
    figures["plain"].append(r["GBps"])
    if state["repack"]:
        r = ggml_run(peer, gtype, rows, cols, 1, True, min_time)
        if r["layout"] == "repack":
            figures["repack"].append(r["GBps"])
        else:
            state["repack"] = False  # no interleaved kernel for this type on this CPU or build
    return r["weight_bytes"]


def best_ggml(figures):
    med = [statistics.median(v) for v in (figures["plain"], figures["repack"]) if v]
    return max(med)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--types", default=",".join(MOTE_LAYOUT), help="ggml type names, comma-separated")
    p.add_argument("--shapes", default=",".join(SHAPES), help="ROWSxCOLS, comma-separated")
    p.add_argument("--tables", default="", help="mote kernel tables, comma-separated (default: every vector table "
                                                 "bench_matvec has on this CPU)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--min-time", type=float, default=0.3, help="seconds each side times one product per repetition")
    p.add_argument("--build", default=str(REPO / "build" / "default"), help="mote build tree (MOTE_BUILD_BENCH=ON)")
    p.add_argument("--peer-bin", help="folder with mote-ggml-matvec (default: what build_llama_cpp.sh prints)")
    p.add_argument("--no-repack", action="store_true", help="ggml's plain layout only")
    p.add_argument("--avx2", action="store_true", help="also ggml built for AVX2 (build_llama_cpp.sh --avx2)")
    p.add_argument("--peer-bin-avx2", help="folder with that build's mote-ggml-matvec")
    p.add_argument("--out", help="write every raw figure here as JSON")
    args = p.parse_args()

    types = [t for t in args.types.split(",") if t]
    for t in types:
        if t not in MOTE_LAYOUT:
            sys.exit(f"kernel_compare: unknown type {t} (known: {', '.join(MOTE_LAYOUT)})")
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s]
    matvec = Path(args.build) / "bench" / "bench_matvec"
    bandwidth = Path(args.build) / "bench" / "bench_bandwidth"
    if not matvec.exists():
        sys.exit(f"kernel_compare: no {matvec} (build the bench_matvec target; MOTE_BUILD_BENCH=ON)")
    peer = locate_peer(args.peer_bin)
    peer_avx2 = locate_peer(args.peer_bin_avx2, "--avx2") if args.avx2 or args.peer_bin_avx2 else None
    for binary in (peer, peer_avx2):
        if binary is not None and not binary.exists():
            sys.exit(f"kernel_compare: no {binary} (run bench/peers/build_llama_cpp.sh)")

    # The tables this build and CPU have: bench_matvec registers only those.
    listed = subprocess.run([str(matvec), "--benchmark_list_tests"], stdout=subprocess.PIPE, text=True,
                            check=True).stdout.split()
    have = {name.split("/")[1] for name in listed if name.startswith("matvec_")}
    # scalar is every build's portable twin, not a table a CPU with vectors decodes on.
    order = [t for t in TABLES if t in have] + sorted(have - set(TABLES) - {"scalar"})
    tables = [t for t in args.tables.split(",") if t in have] if args.tables else order
    log(f"{cpu_name()}; mote tables {', '.join(tables)}; one thread; {args.reps} reps")

    raw = {"cpu": cpu_name(), "tables": tables, "reps": args.reps, "cells": [], "bandwidth_GBps": None}
    table_re = "(" + "|".join(tables) + ")"
    for rows, cols in shapes:
        for gtype in types:
            mote_type = MOTE_LAYOUT[gtype]
            cell = {"type": gtype, "rows": rows, "cols": cols, "ggml": {"plain": [], "repack": []},
                    "mote": {t: [] for t in tables}, "weight_bytes": None, "load": []}
            if peer_avx2 is not None:
                cell["ggml_avx2"] = {"plain": [], "repack": []}
            state = {"repack": not args.no_repack}
            state_avx2 = {"repack": not args.no_repack}
            for rep in range(args.reps):
                cell["load"].append(loadavg())
                cell["weight_bytes"] = ggml_side(peer, gtype, rows, cols, args.min_time, cell["ggml"], state)
                if peer_avx2 is not None:
                    ggml_side(peer_avx2, gtype, rows, cols, args.min_time, cell["ggml_avx2"], state_avx2)
                filt = f"^matvec_{mote_type}/{table_re}/{rows}x{cols}$"
                for b in gbench(matvec, filt, args.min_time):
                    table = b["name"].split("/")[1]
                    cell["mote"][table].append(b["weights_MB"] * 1e6 / to_seconds(b) / 1e9)
            raw["cells"].append(cell)
            g = best_ggml(cell["ggml"])
            best = max((statistics.median(v) for v in cell["mote"].values() if v), default=float("nan"))
            log(f"{gtype:6s} {rows}x{cols}: ggml {g:.1f} GB/s, best mote {best:.1f} GB/s ({best / g:.2f}x)")

    if bandwidth.exists():
        figs = []
        for _ in range(max(1, min(args.reps, 3))):
            for b in gbench(bandwidth, "^read_bandwidth/1/real_time$", 0.5):
                figs.append(b["bytes_per_second"] / 1e9)
        raw["bandwidth_GBps"] = statistics.median(figs)

    print_table(raw, tables)
    if peer_avx2 is not None:
        print_avx2_table(raw, [t for t in tables if t.startswith("avx2")])
    if args.out:
        Path(args.out).write_text(json.dumps(raw, indent=1))
        log(f"raw figures in {args.out}")


def print_table(raw, tables):
    med = lambda v: statistics.median(v) if v else None
    print(f"CPU: {raw['cpu']}; 1 thread; medians of {raw['reps']} interleaved runs; weight GB/s = weight bytes / "
          "time per product (input quantization included); mote/ggml in parentheses; ggml = its faster layout "
          "(repack where it has one)")
    if raw["bandwidth_GBps"] is not None:
        print(f"bench_bandwidth read_bandwidth/1 (one thread, 1 GiB buffer): {raw['bandwidth_GBps']:.1f} GB/s")
    print()
    head = ["type", "shape", "MB", "ggml plain", "ggml repack", "ggml µs"] + [f"mote {t}" for t in tables] + \
           ["mote µs (best)", "best / ggml"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    slower = []
    for c in raw["cells"]:
        plain, repack = med(c["ggml"]["plain"]), med(c["ggml"]["repack"])
        g = max(x for x in (plain, repack) if x is not None)
        mb = c["weight_bytes"] / 1e6
        row = [c["type"], f"{c['rows']}x{c['cols']}", f"{mb:.1f}", f"{plain:.1f}",
               f"{repack:.1f}" if repack is not None else "-", f"{mb * 1e3 / g:.1f}"]
        best = None
        for t in tables:
            m = med(c["mote"][t])
            if m is None:
                row.append("-")
                continue
            ratio = m / g
            if ratio < 1.0:
                slower.append(f"{c['type']} {c['rows']}x{c['cols']} {t}")
            row.append(f"{m:.1f} ({'**' if ratio < 1 else ''}{ratio:.2f}{'**' if ratio < 1 else ''})")
            best = m if best is None else max(best, m)
        row += [f"{mb * 1e3 / best:.1f}" if best else "-", f"{best / g:.2f}" if best else "-"]
        print("| " + " | ".join(row) + " |")
    print()
    loads = [l for c in raw["cells"] for l in c["load"]]
    if loads:
        print(f"loadavg before runs: median {statistics.median(loads):.2f}, max {max(loads):.2f}")
    print("mote slower than ggml (bold): " + (", ".join(slower) if slower else "none"))


def print_avx2_table(raw, tables):
    print()
    print("mote's AVX2 tables next to ggml built for AVX2+FMA+F16C+BMI2 (no AVX-VNNI, no AVX-512); "
          "weight GB/s, mote/ggml in parentheses")
    print()
    head = ["type", "shape", "ggml-avx2 plain", "ggml-avx2 repack"] + [f"mote {t}" for t in tables]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    slower = []
    for c in raw["cells"]:
        figs = c["ggml_avx2"]
        g = best_ggml(figs)
        row = [c["type"], f"{c['rows']}x{c['cols']}", f"{statistics.median(figs['plain']):.1f}",
               f"{statistics.median(figs['repack']):.1f}" if figs["repack"] else "-"]
        for t in tables:
            if not c["mote"][t]:
                row.append("-")
                continue
            m = statistics.median(c["mote"][t])
            ratio = m / g
            if ratio < 1.0:
                slower.append(f"{c['type']} {c['rows']}x{c['cols']} {t}")
            row.append(f"{m:.1f} ({'**' if ratio < 1 else ''}{ratio:.2f}{'**' if ratio < 1 else ''})")
        print("| " + " | ".join(row) + " |")
    print()
    print("mote slower than ggml-avx2 (bold): " + (", ".join(slower) if slower else "none"))


if __name__ == "__main__":
    main()
