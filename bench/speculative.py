#!/usr/bin/env python3
"""Speculative decoding side by side (issue 37): mote against llama.cpp on the tasks of
bench/speculative/ (edit code, answer from a document, JSON extraction with a schema, free chat).

For each model, thread count and task, interleaved:
  mote        `mote bench -f TASK --draft none,auto,lookup[,model] [-md DRAFT]` (greedy chat reply,
              tokens/s and tokens per forward pass; the text is the same for every drafter);
  llama.cpp   plain: llama-bench tg (decode alone; it does not depend on the text), prompt lookup:
              llama-lookup, draft model: llama-speculative-simple -md DRAFT (greedy, the same
              chat-formatted prompt, the same token budget).
Prints one markdown table per model and thread count and writes an SVG bar chart (--svg).
The llama.cpp tools come from bench/peers/build_llama_cpp.sh (cached outside the repo).

  bench/speculative.py --mote build/default/mote \
      --model ~/.cache/mote/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
      --draft-model ~/.cache/mote/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --threads 1,2 --svg plot.svg
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = [  # (name, prompt file, JSON schema or None)
    ("edit code", "edit_code.txt", None),
    ("document QA", "rag_document.txt", None),
    ("JSON extraction", "json_extract.txt", "json_schema.json"),
    ("free chat", "free_chat.txt", None),
]
QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def run(cmd, env=None):
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return done


def chatml(text):
    # The prompt mote's chat template gives Qwen2.5 (ChatML with Qwen's default system message),
    # as text with the control tokens spelled out: the llama.cpp tools parse them.
    return (f"<|im_start|>system\n{QWEN_SYSTEM}<|im_end|>\n<|im_start|>user\n{text}<|im_end|>\n"
            "<|im_start|>assistant\n")


def mote_rates(args, task, schema, threads, drafters):
    cmd = [args.mote, "bench", "-m", args.model, "-f", task, "-n", str(args.tokens), "-t", str(threads),
           "-r", str(args.reps), "--draft", ",".join(drafters), "-o", "json"]
    if args.draft_model:
        cmd += ["-md", args.draft_model]
    if schema:
        cmd += ["--json-schema", schema]
    rows = json.loads(run(cmd).stdout)
    return {r["draft"]: (r["decode_tokens_per_s"], r["tokens_per_pass"]) for r in rows}


def llama_env(args):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.llama_bin + ":" + env.get("LD_LIBRARY_PATH", "")
    return env


def llama_plain(args, threads):
    out = run([os.path.join(args.llama_bin, "llama-bench"), "-m", args.model, "-t", str(threads), "-p", "0", "-n",
               str(args.tokens), "-r", str(args.reps), "-o", "json"], llama_env(args)).stdout
    return json.loads(out)[0]["avg_ts"]


def llama_spec(args, tool, prompt_file, schema, threads, extra):
    # A context just large enough, as mote's bench opens it: these tools' step time grows with the
    # context they allocate (a 0.5B model: 56 tok/s at -c 512, 6 at -c 4096, 4 at the default).
    with open(prompt_file) as fh:
        context = (len(fh.read()) // 3 + args.tokens + 64) // 256 * 256 + 256
    cmd = [os.path.join(args.llama_bin, tool), "-m", args.model, "-f", prompt_file, "-n", str(args.tokens), "-t",
           str(threads), "--temp", "0", "-c", str(context)] + extra
    if schema:
        cmd += ["--json-schema-file", schema]
    rates, accepts = [], []
    for _ in range(args.reps):
        done = run(cmd, llama_env(args))
        out = done.stdout + done.stderr
        speed = re.findall(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", out)
        if not speed:
            sys.exit(f"no speed line from {tool}:\n{out[-2000:]}")
        rates.append(float(speed[-1][2]))
        accept = re.findall(r"accept\s+=\s+([\d.]+)%", out)
        accepts.append(float(accept[-1]) if accept else float("nan"))
    return sum(rates) / len(rates), sum(accepts) / len(accepts)


def svg_chart(groups, path):
    """groups: [(label, [(series, value)])] -> a grouped horizontal bar chart, standard library only."""
    series = []
    for _, bars in groups:
        for name, _ in bars:
            if name not in series:
                series.append(name)
    colors = ["#9e9e9e", "#1f77b4", "#6baed6", "#08519c", "#ff7f0e", "#fdae6b", "#d94801"]
    bar_h, gap, left, width = 12, 14, 230, 760
    top = 40
    height = top + sum(len(b) * bar_h + gap for _, b in groups) + 20 + 18 * len(series)
    vmax = max(v for _, b in groups for _, v in b) * 1.1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="10" y="20" font-size="14">Greedy reply, tokens/s (same text for every mote drafter)</text>']
    y = top
    for label, bars in groups:
        out.append(f'<text x="10" y="{y + len(bars) * bar_h / 2 + 4}">{label}</text>')
        for name, value in bars:
            w = width * value / vmax
            c = colors[series.index(name) % len(colors)]
            out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{c}"/>')
            out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 3}">{value:.1f}</text>')
            y += bar_h
        y += gap
    for i, name in enumerate(series):
        c = colors[i % len(colors)]
        out.append(f'<rect x="{left}" y="{y + 18 * i}" width="10" height="10" fill="{c}"/>')
        out.append(f'<text x="{left + 16}" y="{y + 18 * i + 9}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


def mote_only(args, wanted):
    """Plain and auto per task and thread count, each binary in turn for --rounds rounds (load on a
    shared host moves between runs, so every cell is the median of its rounds)."""
    binaries = [("mote", args.mote)] + ([("baseline", args.baseline)] if args.baseline else [])
    print(f"model {os.path.basename(args.model)}, draft {os.path.basename(args.draft_model or '-')}, "
          f"{args.tokens} tokens greedy, {args.rounds} rounds")
    for threads in [int(t) for t in args.threads.split(",")]:
        rows = []
        for name, file, schema in TASKS:
            if file not in wanted:
                continue
            task = os.path.join(HERE, "speculative", file)
            schema_path = os.path.join(HERE, "speculative", schema) if schema else None
            runs = {b: [] for b, _ in binaries}
            loads = []
            for _ in range(args.rounds):
                for label, binary in binaries:
                    loads.append(os.getloadavg()[0])
                    runs[label].append(mote_rates(argparse.Namespace(**{**vars(args), "mote": binary, "reps": 1}),
                                                  task, schema_path, threads, ["none", "auto"]))
            rows.append((name, runs, min(loads), max(loads)))
        header = ["task", "load (1 min)"]
        for label, _ in binaries:
            header += [f"{label} plain tok/s", f"{label} auto tok/s", f"{label} auto / plain", f"{label} tokens/pass"]
        print(f"\n{threads} thread(s)\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for name, runs, low, high in rows:
            cells = [name, f"{low:.1f}-{high:.1f}"]
            for label, _ in binaries:
                ratios = [r["auto"][0] / r["none"][0] for r in runs[label]]
                cells += [f"{statistics.median(r['none'][0] for r in runs[label]):.1f}",
                          f"{statistics.median(r['auto'][0] for r in runs[label]):.1f}",
                          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
                          f"{runs[label][0]['auto'][1]:.2f}"]
            print("| " + " | ".join(cells) + " |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mote", default="build/default/mote")
    p.add_argument("--model", required=True, help="the GGUF both runtimes read")
    p.add_argument("--draft-model", help="a draft model GGUF with the same vocabulary")
    p.add_argument("--llama-bin", default=os.path.expanduser("~/.cache/mote/peers/llama.cpp-build-0.3.36/bin"))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--tokens", type=int, default=192)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--tasks", default=",".join(t[1] for t in TASKS), help="prompt files of bench/speculative to run")
    p.add_argument("--svg", help="write the bar chart here")
    p.add_argument("--mote-only", action="store_true",
                   help="mote plain and auto alone, --rounds times in turn (and --baseline's in between), the "
                        "median of each: the table of issue 37's goals on a shared, noisy host")
    p.add_argument("--rounds", type=int, default=3, help="with --mote-only: measurements of each cell")
    p.add_argument("--baseline", help="with --mote-only: another mote binary measured in turn with --mote")
    args = p.parse_args()
    wanted = args.tasks.split(",")
    if args.mote_only:
        mote_only(args, wanted)
        return
    drafters = ["none", "auto", "lookup"] + (["model"] if args.draft_model else [])
    groups = []
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mote-speculative-prompt.txt")
    print(f"model {os.path.basename(args.model)}, draft {os.path.basename(args.draft_model or '-')}, "
          f"{args.tokens} tokens greedy, {args.reps} reps, loadavg {os.getloadavg()[0]:.2f}")
    for threads in [int(t) for t in args.threads.split(",")]:
        plain = llama_plain(args, threads)
        header = ["task", "mote plain"] + [f"mote {d}" for d in drafters[1:]] + ["llama.cpp plain", "llama-lookup"]
        header += ["llama-speculative-simple"] if args.draft_model else []
        header += ["mote best / llama.cpp best", "mote auto / mote plain"]
        print(f"\n{threads} thread(s)\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for name, file, schema in TASKS:
            if file not in wanted:
                continue
            task = os.path.join(HERE, "speculative", file)
            schema_path = os.path.join(HERE, "speculative", schema) if schema else None
            with open(task) as fh, open(tmp, "w") as out:
                out.write(chatml(fh.read()))
            mote = mote_rates(args, task, schema_path, threads, drafters)
            lookup = llama_spec(args, "llama-lookup", tmp, schema_path, threads, ["--spec-draft-n-max", "8"])
            llama = {"llama.cpp plain": plain, "llama-lookup": lookup[0]}
            cells = [name, f"{mote['none'][0]:.1f}"]
            cells += [f"{mote[d][0]:.1f} ({mote[d][1]:.2f}/pass)" for d in drafters[1:]]
            cells += [f"{plain:.1f}", f"{lookup[0]:.1f} ({lookup[1]:.0f}% kept)"]
            if args.draft_model:
                spec = llama_spec(args, "llama-speculative-simple", tmp, schema_path, threads,
                                  ["-md", args.draft_model, "--spec-type", "draft-simple", "--spec-draft-n-max", "8"])
                llama["llama-speculative-simple"] = spec[0]
                cells.append(f"{spec[0]:.1f} ({spec[1]:.0f}% kept)")
            best_mote = max(v[0] for v in mote.values())
            cells += [f"{best_mote / max(llama.values()):.2f}", f"{mote['auto'][0] / mote['none'][0]:.2f}"]
            print("| " + " | ".join(cells) + " |", flush=True)
            bars = [(f"mote {d}", mote[d][0]) for d in drafters] + list(llama.items())
            groups.append((f"{name}, {threads}t", bars))
    if args.svg:
        svg_chart(groups, args.svg)
        print(f"\nchart: {args.svg}")


if __name__ == "__main__":
    main()
