#!/usr/bin/env python3
"""mote embed against llama.cpp's llama-embedding on the same embedder, side by side.

Texts per second for files of 1, 16 and 256 lines (sentences of 8-128 tokens from
tests/golden/embedders/sentences.txt, cycled), at 1 and 2 threads, mote and llama.cpp interleaved
run by run. Each figure is the median of --repeats whole-process wall times (what a user waits,
model loading included) and the process's peak RSS; "marginal" is the texts/s between the
16- and 256-line files, which leaves the fixed start-up cost out.

Usage:
  bench/embed_compare.py --mote build/default/mote --mote-model nomic.mote \\
      --llama-embedding "$(bench/peers/build_llama_cpp.sh)/llama-embedding" \\
      --gguf ~/.cache/mote/nomic-embed-text-v1.5.f16.gguf [--threads 1 2] [--repeats 3]

The .mote is `mote convert` of the same GGUF (as stored), so both read the same weights.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "golden", "embedders")


def sentences(lo=8, hi=128):
    """The golden sentences whose BERT token counts (minilm_ids.txt, the same uncased
    vocabulary as nomic's) lie in [lo, hi]."""
    with open(os.path.join(GOLDEN, "sentences.txt"), encoding="utf-8") as f:
        texts = f.read().split("\n")
    with open(os.path.join(GOLDEN, "minilm_ids.txt"), encoding="utf-8") as f:
        counts = [len(line.split()) for line in f.read().split("\n")]
    return [t for t, n in zip(texts, counts) if lo <= n <= hi and t.strip()]


def run(command, env=None):
    """Wall seconds and peak RSS (MiB) of one process; fails loudly on a non-zero exit."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    err = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"embed_compare: {' '.join(command)} failed:\n{err[-2000:]}")
    return seconds, usage.ru_maxrss / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mote", required=True)
    parser.add_argument("--mote-model", required=True)
    parser.add_argument("--llama-embedding", required=True)
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 256])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    pool = sentences()
    llama_env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(os.path.abspath(args.llama_embedding)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for threads in args.threads:
            for size in args.sizes:
                path = os.path.join(tmp, f"lines{size}.txt")
                lines = [pool[i % len(pool)] for i in range(size)]
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
                mote = [args.mote, "embed", "-m", args.mote_model, "-f", path, "-o", "f32", "-t", str(threads)]
                # One batch holds the whole file (llama-embedding's default context is the model's).
                llama = [args.llama_embedding, "-m", args.gguf, "-f", path, "-t", str(threads),
                         "--embd-output-format", "array", "-c", "8192", "-b", "8192", "-ub", "8192"]
                times = {"mote": [], "llama.cpp": []}
                rss = {"mote": 0.0, "llama.cpp": 0.0}
                for _ in range(args.repeats):  # interleaved, so drift hits both alike
                    for name, command, env in (("mote", mote, None), ("llama.cpp", llama, llama_env)):
                        seconds, peak = run(command, env)
                        times[name].append(seconds)
                        rss[name] = max(rss[name], peak)
                rows.append((threads, size, statistics.median(times["mote"]), statistics.median(times["llama.cpp"]),
                             rss["mote"], rss["llama.cpp"]))
                print(f"threads {threads} lines {size}: mote {rows[-1][2]:.3f} s, llama.cpp {rows[-1][3]:.3f} s",
                      file=sys.stderr)

    print("| threads | lines | mote s | llama.cpp s | speed-up | mote texts/s | llama.cpp texts/s | mote RSS MiB | llama.cpp RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for threads, size, m, l, rm, rl in rows:
        print(f"| {threads} | {size} | {m:.3f} | {l:.3f} | {l / m:.2f}x | {size / m:.1f} | {size / l:.1f} | {rm:.0f} | {rl:.0f} |")
    for threads in args.threads:
        by_size = {r[1]: r for r in rows if r[0] == threads}
        if 16 in by_size and 256 in by_size:
            m = (256 - 16) / (by_size[256][2] - by_size[16][2])
            l = (256 - 16) / (by_size[256][3] - by_size[16][3])
            print(f"\nthreads {threads}, marginal (16 -> 256 lines): mote {m:.1f} texts/s, llama.cpp {l:.1f} texts/s, "
                  f"{m / l:.2f}x")


if __name__ == "__main__":
    main()
