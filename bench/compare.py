#!/usr/bin/env python3
"""Side-by-side benchmark: mote against llama.cpp on SmolLM2-135M-Instruct, or on any GGUF.

Both runtimes read the same weights in the same storage type: the fetched Q4_1 GGUF is turned
into F32, F16, Q8_0, Q4_0 and Q4_1 GGUFs (--types adds Q5_0, Q5_1, IQ4_NL, Q6_K and the K mixes
Q5_K_M ... Q2_K) with llama.cpp's llama-quantize; --model FILE.gguf adds a GGUF as it is
(labelled by its stem; alone it replaces the default types). Each GGUF is
converted for mote as stored (`mote convert X.gguf`: the GGUF's own blocks, quantized ones
interleaved 8 rows at a time, so both runtimes read the very same numbers, Q8_0 embeddings
included). `mote bench` and `llama-bench` then run
interleaved (mote, llama.cpp, mote, llama.cpp, ...) at each thread count and prompt length, so
slow drifts of a shared machine hit both alike. Before every run the machine's load is sampled
and recorded next to the figure.

Reported: medians of prompt (pp) and decode (tg) tokens per second, the mote/llama.cpp ratio
per cell (above 1: mote is faster), and for each decode figure the fraction of the memory
read-bandwidth roofline it reaches (weight bytes a decode step reads x tok/s / the bandwidth
bench/bench_bandwidth measures at that thread count: the median of one sample before each
repetition, since a shared machine's bandwidth drifts), twice: against a 1 GiB buffer and against
a buffer of the model's own decode bytes (on a host whose last-level cache holds part of a small
model, decoding beats the 1 GiB figure, and so does a pure read loop over the model's size).

Depth and KV cache (llama-bench's -d/--n-depth and -ctk/-ctv): --depth 0,1024,4096 runs every pp and
tg test of both runtimes with the KV cache already holding that many tokens (filled untimed: `mote
bench -d`, `llama-bench -d`), one table row per depth; --kv f32,f16,q8_0 picks the cache type of both
(`mote bench --kv`, `llama-bench -ctk T -ctv T`, plus `-fa on` for q8_0: llama.cpp quantizes the V
cache only with flash attention), one row per type. Defaults: depth 0, KV f16 (llama-bench's
default and mote's), passed explicitly to both so a changed default in either cannot skew a
comparison. At depth d, llama-bench's tg test decodes from d tokens and mote's from d + the
prompt (it decodes after its timed prompt); the roofline counts weight bytes only, so at depth,
where every decode step also reads the cache, it understates the bytes read.

Modes (combinable): the default comparison; --contention (thread scaling next to one busy
process); --tiny (mote on the 260K-parameter llama2.c models); --rss (peak resident memory).
--quick: one repetition, one thread, short prompts.

Python 3 standard library only. Never run by CI: it needs llama.cpp
(bench/peers/build_llama_cpp.sh builds it into ~/.cache/mote/peers) and the SmolLM2 GGUF
(models/fetch_smollm2.sh).
"""

import argparse
import functools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mote"
PEERS = CACHE / "peers"
SOURCE_GGUF = CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"
SHARED_MODELS = REPO.parent / "shared" / "models"
# llama-quantize's type names; the mixes (q4_k_m, ...) are whole-file recipes whose GGUFs mote
# converts as stored, tensor by tensor.
LLAMA_QUANT_NAMES = {"f32": "F32", "f16": "F16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0",
                     "q5_1": "Q5_1", "iq4_nl": "IQ4_NL", "q6_k": "Q6_K", "q5_k_m": "Q5_K_M", "q5_k_s": "Q5_K_S",
                     "q4_k_m": "Q4_K_M", "q4_k_s": "Q4_K_S", "q3_k_m": "Q3_K_M", "q3_k_s": "Q3_K_S", "q2_k": "Q2_K"}
ALL_TYPES = list(LLAMA_QUANT_NAMES)
DEFAULT_TYPES = ["f32", "f16", "q8_0", "q4_0", "q4_1"]
RUNTIMES = ["mote", "llama.cpp"]
KV_TYPES = ["f32", "f16", "q8_0"]  # the cache types both runtimes share
BUSY_CORES_WARN = 0.5  # other processes' CPU use (in cores) above which a figure is suspect
LOAD_SAMPLE_S = 0.5
RUN_TIMEOUT_S = 900


class Failure(Exception):
    """A step that failed for one model or run; reported in the table, never fatal."""


def log(message):
    print(f"compare: {message}", file=sys.stderr, flush=True)


def one_line(text, limit=160):
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    line = lines[-1] if lines else "no output"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def run_command(argv, timeout=RUN_TIMEOUT_S):
    """Runs argv; returns stdout, or raises Failure with a one-line reason."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"{Path(argv[0]).name} ran past {timeout} s") from None
    except OSError as e:
        raise Failure(f"cannot run {argv[0]}: {e.strerror}") from None
    if done.returncode != 0:
        raise Failure(f"{Path(argv[0]).name} exited {done.returncode}: {one_line(done.stderr or done.stdout)}")
    return done.stdout


# ---------------------------------------------------------------------------------------------
# Machine load


def cpu_times():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]), idle  # user..steal; guest time is already counted in user


def machine_load():
    """/proc/loadavg and the CPU other processes used over a short sample, in cores.

    Called while no benchmark of ours runs, so all the busy time sampled is someone else's."""
    with open("/proc/loadavg") as f:
        loadavg = [float(x) for x in f.read().split()[:3]]
    total0, idle0 = cpu_times()
    time.sleep(LOAD_SAMPLE_S)
    total1, idle1 = cpu_times()
    span = max(total1 - total0, 1)
    busy = (span - (idle1 - idle0)) / span * (os.cpu_count() or 1)
    return {"loadavg": loadavg, "busy_cores": round(busy, 2)}


def check_load(args, what):
    """Samples the load before a run; warns when it is high and, with --wait-quiet, waits."""
    load = machine_load()
    deadline = time.monotonic() + args.wait_max
    while args.wait_quiet and load["busy_cores"] > BUSY_CORES_WARN and time.monotonic() < deadline:
        time.sleep(5)
        load = machine_load()
    if load["busy_cores"] > BUSY_CORES_WARN:
        log(f"warning: {load['busy_cores']} cores busy with other work before {what} (loadavg {load['loadavg'][0]})")
    return load


# ---------------------------------------------------------------------------------------------
# Tools and models


class Tools:
    def __init__(self, args):
        build = Path(args.build).resolve()
        self.mote = build / "mote"
        self.bandwidth = build / "bench" / "bench_bandwidth"
        if not self.mote.exists():
            sys.exit(f"compare: {self.mote} does not exist: build mote first (cmake --build --preset release)")
        self._llama_bin = Path(args.llama_bin) if args.llama_bin else None

    def llama(self, name):
        if self._llama_bin is None:
            log("locating llama.cpp (bench/peers/build_llama_cpp.sh; builds it once, minutes)")
            out = subprocess.run([str(REPO / "bench" / "peers" / "build_llama_cpp.sh")], stdout=subprocess.PIPE,
                                 text=True, check=True).stdout
            self._llama_bin = Path(out.strip().splitlines()[-1])
        return self._llama_bin / name


def gguf_for_type(tools, dtype):
    """The SmolLM2 GGUF in llama.cpp type `dtype`, made once by llama-quantize from the fetched Q4_1."""
    if not SOURCE_GGUF.exists():
        sys.exit(f"compare: {SOURCE_GGUF} is missing: run models/fetch_smollm2.sh first")
    out = PEERS / "models" / f"SmolLM2-135M-Instruct.{LLAMA_QUANT_NAMES[dtype]}.gguf"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_suffix(".gguf.part")
        log(f"llama-quantize {SOURCE_GGUF.name} -> {out.name}")
        run_command([str(tools.llama("llama-quantize")), "--allow-requantize", str(SOURCE_GGUF), str(part),
                     LLAMA_QUANT_NAMES[dtype]])
        part.rename(out)
    return out


def mote_model_for(tools, source, dtype, extra=()):
    """`source` converted for mote with --dtype `dtype`, or as stored when dtype is None (cached
    in PEERS/models under the source's stem, size and mtime, so a replaced source is converted
    again; redone when this build cannot open the cached file)."""
    stat = Path(source).stat()
    out = PEERS / "models" / f"{Path(source).stem}.{stat.st_size}-{stat.st_mtime_ns}.{dtype or 'stored'}.mote"
    if out.exists():
        try:
            run_command([str(tools.mote), "inspect", str(out)])
            return out
        except Failure:
            out.unlink()
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_suffix(".mote.part")
    dtype_args = ["--dtype", dtype] if dtype else []
    log(f"mote convert {Path(source).name} {' '.join(dtype_args)}")
    try:
        run_command([str(tools.mote), "convert", str(source), "-o", str(part), *dtype_args, *extra])
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    part.rename(out)
    return out


def inspect_model(tools, model, context=None):
    """Tensor sizes and arena bytes from `mote inspect`."""
    argv = [str(tools.mote), "inspect", str(model)] + (["--ctx", str(context)] if context else [])
    text = run_command(argv)
    tensors = {}
    for m in re.finditer(r"^(\S+)\s+([a-z][a-z0-9_]*)\s+\(([\d, ]+)\)\s+(\d+)$", text, re.M):
        tensors[m.group(1)] = {"dtype": m.group(2), "shape": [int(x) for x in m.group(3).split(",")],
                               "bytes": int(m.group(4))}
    arena = re.search(r"^arena bytes\s+(\d+) \(context (\d+), f32 KV", text, re.M)
    return {"tensors": tensors, "tied": bool(re.search(r"^embeddings\s+tied", text, re.M)),
            "arena_bytes": int(arena.group(1)), "arena_context": int(arena.group(2))}


# Tables a decode step reads one row of (the token's, the position's), not the whole matrix.
LOOKUP_TABLES = ("token_embd", "pos_embd")


def decode_bytes_per_token(tools, mote_model, gguf):
    """Weight bytes one decode step reads: every tensor once (the classifier: `output`, or the
    embedding matrix when it is tied and doubles as the classifier) plus one row of each lookup
    table (token and learned position embeddings).

    Exact from `mote inspect` when the mote model exists; else the GGUF file size (which adds
    the tokenizer and metadata, ~3%: an approximation)."""
    if mote_model is not None:
        info = inspect_model(tools, mote_model)
        total = 0
        for name, tensor in info["tensors"].items():
            read_whole = name not in LOOKUP_TABLES or (name == "token_embd" and info["tied"])
            row = tensor["bytes"] // tensor["shape"][0] if name in LOOKUP_TABLES else 0
            total += (tensor["bytes"] if read_whole else 0) + row
        return total, "mote inspect"
    return Path(gguf).stat().st_size, "GGUF file size (approx.)"


# ---------------------------------------------------------------------------------------------
# One benchmark run per runtime


def bench_mote(tools, model, threads, prompt, gen, depth, kv):
    out = run_command([str(tools.mote), "bench", "-m", str(model), "-t", str(threads), "-p", str(prompt),
                       "-n", str(gen), "-d", str(depth), "--kv", kv, "-r", "1", "--json"])
    raw = json.loads(out)[0]  # one array of results, one per combination: here just one
    return {"pp": raw["prompt_tokens_per_s"], "tg": raw["decode_tokens_per_s"], "raw": raw}


def llama_kv_args(kv):
    """llama-bench's cache type options; a quantized V cache needs flash attention in llama.cpp."""
    return ["-ctk", kv, "-ctv", kv] + (["-fa", "on"] if kv not in ("f32", "f16") else [])


def bench_llama(tools, model, threads, prompt, gen, depth, kv):
    out = run_command([str(tools.llama("llama-bench")), "-m", str(model), "-t", str(threads), "-p", str(prompt),
                       "-n", str(gen), "-d", str(depth), *llama_kv_args(kv), "-r", "1", "-o", "json"])
    raw = json.loads(out)
    result = {"pp": None, "tg": None, "raw": raw}
    for test in raw:
        result["pp" if test["n_gen"] == 0 else "tg"] = test["avg_ts"]
    return result


BENCH = {"mote": bench_mote, "llama.cpp": bench_llama}


def measure(args, tools, record, runtime, model, threads, prompt, gen, depth=0, kv=None):
    """One run of one runtime, with the load before it; failures become the record's error."""
    kv = kv or args.kv[0]
    entry = dict(record, runtime=runtime, threads=threads, prompt=prompt, gen=gen, depth=depth, kv=kv)
    entry["load"] = check_load(args, f"{runtime} {record.get('type', '')} -t {threads} -p {prompt} -d {depth} kv {kv}")
    try:
        if isinstance(model, Failure):
            raise model
        result = BENCH[runtime](tools, model, threads, prompt, gen, depth, kv)
        entry.update(pp=result["pp"], tg=result["tg"], raw=result["raw"])
    except Failure as e:
        entry["error"] = str(e)
    status = entry.get("error") or f"pp {entry.get('pp') or 0:.1f} tg {entry.get('tg') or 0:.1f} tok/s"
    log(f"{runtime:9} {record.get('type', ''):5} -t {threads} -p {prompt:4} -n {gen} -d {depth} kv {kv}: {status}"
        f"  [load {entry['load']['loadavg'][0]}, {entry['load']['busy_cores']} cores busy]")
    return entry


# ---------------------------------------------------------------------------------------------
# Bandwidth roofline


def mib_of(nbytes):
    return -(-nbytes // (1 << 20))


def measure_bandwidth(args, tools, threads, sizes_mib=()):
    """GB/s read by bench/bench_bandwidth per thread count: {t: GB/s} for its 1 GiB buffer, and {(MiB, t): GB/s}
    for a buffer of each size in sizes_mib (a model the last-level cache partly holds decodes faster than the 1 GiB
    figure allows); ({}, {}) if it is absent."""
    if not tools.bandwidth.exists():
        log(f"{tools.bandwidth} is missing (configure with -DMOTE_BUILD_BENCH=ON): no roofline figures")
        return {}, {}, None
    load = check_load(args, "bench_bandwidth")
    sizes = sorted(set(sizes_mib))
    pattern = "|".join(str(t) for t in threads)
    command = [str(tools.bandwidth), "--benchmark_format=json",
               f"--benchmark_filter=read_bandwidth/({pattern})/"]
    if sizes:
        command[-1] += "|read_bandwidth_by_size/(" + "|".join(str(m) for m in sizes) + f")/({pattern})/"
        command.append("--sizes-mib=" + ",".join(str(m) for m in sizes))
    try:
        out = run_command(command)
    except Failure as e:
        log(f"bench_bandwidth failed: {e}")
        return {}, {}, load
    whole, at_size = {}, {}
    for b in json.loads(out)["benchmarks"]:
        m = re.match(r"read_bandwidth/(\d+)/", b["name"])
        if m:
            whole[int(m.group(1))] = b["bytes_per_second"] / 1e9
        m = re.match(r"read_bandwidth_by_size/(\d+)/(\d+)/", b["name"])
        if m and int(m.group(1)) in sizes:
            at_size[(int(m.group(1)), int(m.group(2)))] = b["bytes_per_second"] / 1e9
    return whole, at_size, load


# ---------------------------------------------------------------------------------------------
# Summaries


def median_of(entries, key):
    values = [e[key] for e in entries if e.get(key)]
    return statistics.median(values) if values else None


def cell(entries, key):
    """Median as text, or the failure of the first failed run."""
    value = median_of(entries, key)
    if value is not None:
        return f"{value:.1f}"
    errors = [e["error"] for e in entries if e.get("error")]
    return f"failed: {errors[0]}" if errors else "-"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def load_summary(entries):
    loads = [e["load"] for e in entries if "load" in e]
    if not loads:
        return "no load samples"
    busy = [l["busy_cores"] for l in loads]
    l1 = [l["loadavg"][0] for l in loads]
    return (f"load before runs: loadavg(1 min) {min(l1):.2f}-{max(l1):.2f} (median {statistics.median(l1):.2f}); "
            f"other processes' CPU {min(busy):.2f}-{max(busy):.2f} cores (median {statistics.median(busy):.2f}) "
            f"of {os.cpu_count()}")


def comparison_table(runs, labels, threads, kvs, depths, prompts, gen, bandwidth, bandwidth_at_size, decode_bytes):
    """Rows weights (type or model) x threads x KV type x depth; per prompt length and for decode: mote, llama.cpp,
    ratio; then the roofline fractions of both decode figures: against the 1 GiB read bandwidth / against a buffer
    of the model's decode bytes."""
    header = ["weights", "threads", "KV", "depth"]
    for p in prompts:
        header += [f"pp{p} mote", f"pp{p} llama.cpp", f"pp{p} ratio"]
    header += [f"tg{gen} mote", f"tg{gen} llama.cpp", f"tg{gen} ratio", "tg roofline mote (1 GiB / model size)",
               "tg roofline llama.cpp (1 GiB / model size)"]
    rows = []
    for dtype, t, kv, d in ((x, t, kv, d) for x in labels for t in threads for kv in kvs for d in depths):
        def pick(runtime, prompt):
            return [r for r in runs if r["type"] == dtype and r["threads"] == t and r["runtime"] == runtime
                    and r["prompt"] == prompt and r["kv"] == kv and r["depth"] == d]
        row = [dtype, t, kv, d]
        for p in prompts:
            m, l = pick("mote", p), pick("llama.cpp", p)
            row += [cell(m, "pp"), cell(l, "pp"), ratio(median_of(m, "pp"), median_of(l, "pp"))]
        # Decode is read from the shortest-prompt runs: mote decodes after that prompt,
        # llama-bench's tg test from the depth alone.
        m, l = pick("mote", prompts[0]), pick("llama.cpp", prompts[0])
        row += [cell(m, "tg"), cell(l, "tg"), ratio(median_of(m, "tg"), median_of(l, "tg"))]
        for runtime_runs, runtime in ((m, "mote"), (l, "llama.cpp")):
            tg, (nbytes, _) = median_of(runtime_runs, "tg"), decode_bytes.get((dtype, runtime), (None, None))
            fractions = [f"{tg * nbytes / (bw * 1e9):.0%}" if tg and nbytes and bw else "-"
                         for bw in (bandwidth.get(t), bandwidth_at_size.get((mib_of(nbytes), t)) if nbytes else None)]
            row.append(" / ".join(fractions))
        rows.append(row)
    return markdown_table(header, rows)


# ---------------------------------------------------------------------------------------------
# Modes


def label_of(subject):
    """A benchmarked subject is a type name (SmolLM2 requantized) or a GGUF path (--model)."""
    return subject.stem if isinstance(subject, Path) else subject


@functools.lru_cache(maxsize=None)
def prepare_models(tools, subject):
    """(gguf, mote model) for one subject; either may be a Failure to report in place of figures."""
    try:
        gguf = subject if isinstance(subject, Path) else gguf_for_type(tools, subject)
    except Failure as e:
        return e, e
    try:
        return gguf, mote_model_for(tools, gguf, None)
    except Failure as e:
        return gguf, e


def run_comparison(args, tools, report):
    prompts, gen = args.prompts, args.gen
    models = {label_of(subject): prepare_models(tools, subject) for subject in args.subjects}
    decode_bytes = {}
    for dtype, (gguf, mote_model) in models.items():
        if isinstance(gguf, Failure):
            continue
        mote_ok = None if isinstance(mote_model, Failure) else mote_model
        decode_bytes[(dtype, "mote")] = decode_bytes_per_token(tools, mote_ok, gguf) if mote_ok else (None, None)
        decode_bytes[(dtype, "llama.cpp")] = decode_bytes_per_token(tools, mote_ok, gguf)
    runs = []
    # The read bandwidth is sampled before every repetition (this VM's moved by a third within
    # an hour), and the roofline divides by the median of the samples.
    bw_samples, bw_size_samples, bw_loads = {}, {}, []
    sizes_mib = [mib_of(b) for b, _ in decode_bytes.values() if b]
    for rep in range(args.reps):
        sample, at_size, load = measure_bandwidth(args, tools, args.threads, sizes_mib)
        for t, gb_s in sample.items():
            bw_samples.setdefault(t, []).append(gb_s)
        for key, gb_s in at_size.items():
            bw_size_samples.setdefault(key, []).append(gb_s)
        bw_loads.append(load)
        for dtype, (gguf, mote_model) in models.items():
            for t in args.threads:
                for kv in args.kv:
                    for depth in args.depth:
                        for p in prompts:
                            for runtime in RUNTIMES:  # interleaved: mote, llama.cpp, mote, llama.cpp, ...
                                model = mote_model if runtime == "mote" else gguf
                                runs.append(measure(args, tools, {"mode": "compare", "type": dtype, "rep": rep},
                                                    runtime, model, t, p, gen, depth, kv))
    bandwidth = {t: statistics.median(v) for t, v in bw_samples.items()}
    bandwidth_at_size = {k: statistics.median(v) for k, v in bw_size_samples.items()}
    bw_text = ", ".join(f"{t} thread(s) {bandwidth[t]:.1f} GB/s (samples {min(v):.1f}-{max(v):.1f})"
                        for t, v in sorted(bw_samples.items()))
    if bandwidth_at_size:
        bw_text += "; a buffer of the model's size: " + ", ".join(
            f"{mib} MiB at {t} thread(s) {gb_s:.1f} GB/s" for (mib, t), gb_s in sorted(bandwidth_at_size.items()))
    report.section("Comparison: tokens per second, medians of %d run(s)" % args.reps, [
        comparison_table(runs, list(models), args.threads, args.kv, args.depth, prompts, gen, bandwidth,
                         bandwidth_at_size, decode_bytes),
        "ratio = mote / llama.cpp (above 1: mote is faster). KV: the cache type of both runtimes (mote --kv; "
        "llama-bench -ctk/-ctv, with -fa on for q8_0); depth: tokens in the KV cache before each timed test "
        "(mote bench -d, llama-bench -d). Decode (tg) comes from the "
        f"-p {prompts[0]} runs; mote decodes after depth + that prompt, llama-bench's tg test after the depth alone.",
        "Roofline = weight bytes read per decode token x tok/s / measured read bandwidth at that "
        "thread count, of a 1 GiB buffer / of a buffer of the model's decode bytes (what a last-level cache "
        "that holds part of the model gives a pure read loop too). Read bandwidth, the median of one sample before each repetition: " + (bw_text or "not measured")
        + ". Bytes per token: " + "; ".join(
            f"{d} {b / 1e6:.1f} MB ({src})" for (d, rt), (b, src) in decode_bytes.items() if rt == "llama.cpp" and b)
        + " (both runtimes read the same tensors in the same types; weights only: at depth each decode step "
        "also reads the KV cache, which the roofline leaves out).",
        load_summary(runs),
    ])
    report.data["compare"] = {"runs": runs, "depths": args.depth, "kv": args.kv, "bandwidth_gb_s": bandwidth, "bandwidth_samples_gb_s": bw_samples,
                              "bandwidth_at_size_gb_s": {f"{m}MiB/{t}": v for (m, t), v in bandwidth_at_size.items()},
                              "bandwidth_load": bw_loads,
                              "decode_bytes": {f"{d}/{rt}": v for (d, rt), v in decode_bytes.items()}}


class CompetingProcess:
    """One CPU-bound `yes > /dev/null`, always killed on exit (errors and Ctrl-C included)."""

    def __enter__(self):
        self.process = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
        log(f"started a competing `yes > /dev/null` (pid {self.process.pid})")
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()
        log(f"stopped the competing process (pid {self.process.pid})")
        return False


def run_contention(args, tools, report):
    dtype = label_of(args.subjects[0])
    gguf, mote_model = prepare_models(tools, args.subjects[0])
    prompt, gen = args.prompts[0], args.gen
    runs = []
    with CompetingProcess():
        for rep in range(args.reps):
            for runtime in RUNTIMES:
                for t in (1, 2):
                    # The load sample now includes the competitor: ~1 core busy is expected.
                    runs.append(measure(args, tools, {"mode": "contention", "type": dtype, "rep": rep}, runtime,
                                        mote_model if runtime == "mote" else gguf, t, prompt, gen))
    rows = []
    for runtime in RUNTIMES:
        by_t = {t: [r for r in runs if r["runtime"] == runtime and r["threads"] == t] for t in (1, 2)}
        rows.append([runtime, cell(by_t[1], "tg"), cell(by_t[2], "tg"),
                     ratio(median_of(by_t[2], "tg"), median_of(by_t[1], "tg"))])
    report.section(f"Contention: decode tg{gen} ({dtype}) next to one busy `yes` process, medians of {args.reps}", [
        markdown_table(["runtime", "-t 1 tok/s", "-t 2 tok/s", "-t 2 / -t 1"], rows),
        "Below 1 means the second thread, fighting the competitor for a core, costs more than it gives.",
        load_summary(runs) + " (the competitor itself counts as ~1 core here)",
    ])
    report.data["contention"] = {"runs": runs}


def tiny_models(tools):
    tokenizer = SHARED_MODELS / "aidreams_tok512.bin"
    models = {}
    for name in ("aidreams260K", "stories260K"):
        checkpoint = SHARED_MODELS / f"{name}.bin"
        # stories260K's own tokenizer is not available; like tests/test_golden.cpp it borrows
        # aidreams' 512-token vocabulary (same size), so only token ids are meaningful.
        try:
            models[name] = mote_model_for(tools, checkpoint, "f32", ("--tokenizer", str(tokenizer)))
        except Failure as e:
            models[name] = e
    return models


def run_tiny(args, tools, report):
    prompt, gen = 32, 64  # aidreams260K's context is 128 tokens
    models = tiny_models(tools)
    runs = []
    for rep in range(args.reps):
        for name, model in models.items():
            for t in (1, 2):
                runs.append(measure(args, tools, {"mode": "tiny", "type": name, "rep": rep}, "mote", model, t,
                                    prompt, gen))
    rows = []
    for name in models:
        for t in (1, 2):
            sel = [r for r in runs if r["type"] == name and r["threads"] == t]
            rows.append([name, t, cell(sel, "pp"), cell(sel, "tg")])
    report.section(f"Tiny llama2.c models (f32), mote only, medians of {args.reps}", [
        markdown_table(["model", "threads", f"pp{prompt} tok/s", f"tg{gen} tok/s"], rows),
        load_summary(runs),
    ])
    report.data["tiny"] = {"runs": runs}


def peak_rss_of(argv):
    """Peak resident set size (bytes) of a child process, from wait4's rusage."""
    try:
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as e:
        raise Failure(f"cannot run {argv[0]}: {e.strerror}") from None
    try:
        _, status, usage = os.wait4(child.pid, 0)
    except BaseException:
        child.kill()
        child.wait()
        raise
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode != 0:
        raise Failure(f"{Path(argv[0]).name} exited {child.returncode}: {one_line(stderr)}")
    return usage.ru_maxrss * 1024  # Linux reports KiB


def run_rss(args, tools, report):
    gen, context = 128, 256
    rows, records = [], []
    for subject in args.subjects:
        dtype = label_of(subject)
        gguf, mote_model = prepare_models(tools, subject)
        cases = [
            ("mote run", mote_model, f"--ctx {context}",
             lambda m: [str(tools.mote), "run", "-m", str(m), "-p", "Once upon a time", "-n", str(gen), "-t", "1",
                        "--temp", "0", "--ctx", str(context)]),
            ("mote run", mote_model, "model's full context",
             lambda m: [str(tools.mote), "run", "-m", str(m), "-p", "Once upon a time", "-n", str(gen), "-t", "1",
                        "--temp", "0"]),
            ("llama-bench", gguf, f"-p 0 -n {gen} -r 1",
             lambda m: [str(tools.llama("llama-bench")), "-m", str(m), "-p", "0", "-n", str(gen), "-r", "1",
                        "-t", "1"]),
        ]
        for tool, model, setting, argv_for in cases:
            record = {"type": dtype, "tool": tool, "setting": setting, "load": check_load(args, f"{tool} rss")}
            arena = "-"
            try:
                if isinstance(model, Failure):
                    raise model
                record["file_bytes"] = Path(model).stat().st_size
                if tool == "mote run":
                    info = inspect_model(tools, model, context if "--ctx" in setting else None)
                    record["arena_bytes"] = info["arena_bytes"]
                    arena = f"{info['arena_bytes'] / 2**20:.1f} (ctx {info['arena_context']})"
                record["peak_rss_bytes"] = peak_rss_of(argv_for(model))
                rss = f"{record['peak_rss_bytes'] / 2**20:.1f}"
                size = f"{record['file_bytes'] / 2**20:.1f}"
            except Failure as e:
                record["error"] = str(e)
                rss, size = f"failed: {e}", "-"
            log(f"rss {dtype} {tool} ({setting}): " + (rss if "error" in record else f"{rss} MiB"))
            records.append(record)
            rows.append([dtype, tool, setting, size, arena, rss])
    report.section(f"Peak resident memory of a {gen}-token generation, one thread", [
        markdown_table(["weights", "program", "setting", "file MiB", "mote arena MiB", "peak RSS MiB"], rows),
        "mote: `mote run` (greedy; may stop early at end-of-text); llama.cpp: `llama-bench -p 0 -n 128 -r 1` "
        "(llama-cli is not built), which includes llama-bench's own warm-up run and a 128-token context. "
        "Peak RSS is the child's ru_maxrss (wait4); mapped weight pages count once touched.",
        load_summary(records),
    ])
    report.data["rss"] = {"runs": records}


# ---------------------------------------------------------------------------------------------
# Output


class Report:
    def __init__(self, args):
        self.parts = []
        self.data = {"argv": sys.argv[1:], "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                     "cpu_count": os.cpu_count(), "uname": " ".join(os.uname())}
        self.out = Path(args.out) if args.out else None

    def section(self, title, paragraphs):
        text = f"## {title}\n\n" + "\n\n".join(paragraphs) + "\n"
        print(text, flush=True)
        self.parts.append(text)

    def write(self):
        if not self.out:
            return
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "compare.md").write_text(self.header() + "\n" + "\n".join(self.parts))
        (self.out / "compare.json").write_text(json.dumps(self.data, indent=1) + "\n")
        log(f"wrote {self.out / 'compare.md'} and {self.out / 'compare.json'}")

    def header(self):
        return (f"# mote vs llama.cpp\n\n`bench/compare.py {' '.join(self.data['argv'])}` on {self.data['started']}, "
                f"{self.data['cpu_count']} CPUs ({self.data['uname']}).\n")


def gguf_argument(parser, name):
    """--model's file as an absolute path, or a one-line usage error when it is not a GGUF."""
    path = Path(name).expanduser().resolve()
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        parser.error(f"--model {name}: {e.strerror}")
    if magic != b"GGUF":
        parser.error(f"--model {name}: not a GGUF file (it does not start with 'GGUF')")
    return path


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--types", help="comma-separated storage types of SmolLM2 to compare (default: "
                                         f"{','.join(DEFAULT_TYPES)}, or none when --model is given)")
    parser.add_argument("--model", action="append", default=[], metavar="FILE.gguf",
                        help="a GGUF to compare as stored, labelled by its stem (repeatable or comma-separated)")
    parser.add_argument("--depth", default="0", metavar="N[,N...]",
                        help="tokens already in the KV cache before every pp/tg test, a row per depth "
                             "(mote bench -d, llama-bench -d; default 0)")
    parser.add_argument("--kv", default="f16", metavar="TYPE[,TYPE...]",
                        help=f"KV cache type(s) of both runtimes, a row per type: {','.join(KV_TYPES)} (mote --kv, "
                             "llama-bench -ctk/-ctv, plus -fa on for q8_0; default f16)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of every run (default 3)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 rep, 1 thread, a 64-token prompt, "
                                                             "32 decoded tokens")
    parser.add_argument("--contention", action="store_true",
                        help="decode at -t 1 and -t 2 next to one busy process (first of --types, else of --model)")
    parser.add_argument("--tiny", action="store_true", help="mote on aidreams260K and stories260K")
    parser.add_argument("--rss", action="store_true", help="peak resident memory of a 128-token generation")
    parser.add_argument("--no-compare", dest="compare", action="store_false",
                        help="skip the main comparison (run only the modes given)")
    parser.add_argument("--wait-quiet", action="store_true",
                        help=f"before each run wait (up to --wait-max s) until other processes use under "
                             f"{BUSY_CORES_WARN} cores")
    parser.add_argument("--wait-max", type=float, default=300, help="longest wait for quiet, seconds (default 300)")
    parser.add_argument("--build", default=str(REPO / "build" / "release"),
                        help="mote build folder (default build/release; bench_bandwidth needs MOTE_BUILD_BENCH=ON)")
    parser.add_argument("--llama-bin", help="folder with llama-bench and llama-quantize "
                                            "(default: what bench/peers/build_llama_cpp.sh prints)")
    parser.add_argument("--out", help="folder for compare.json (all raw runs) and compare.md")
    args = parser.parse_args(argv)
    models = [gguf_argument(parser, name.strip()) for arg in args.model for name in arg.split(",") if name.strip()]
    if args.types is None:
        args.types = "" if models else ",".join(DEFAULT_TYPES)
    args.types = [t.strip() for t in args.types.split(",") if t.strip()]
    unknown = [t for t in args.types if t not in ALL_TYPES]
    if unknown or not (args.types or models):
        parser.error(f"unknown type(s) {unknown}: choose from {','.join(ALL_TYPES)}")
    args.subjects = args.types + models
    labels = [label_of(subject) for subject in args.subjects]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        parser.error(f"two subjects share the label {repeated[0]} (a --model's stem names its rows)")
    if args.quick:
        args.reps, args.threads, args.prompts, args.gen = 1, [1], [64], 32
    else:
        args.threads, args.prompts, args.gen = [1, 2], [128, 512], 128
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    try:
        args.depth = [int(d) for d in args.depth.split(",") if d.strip()]
    except ValueError:
        parser.error(f"--depth {args.depth}: not a comma-separated list of token counts")
    if not args.depth or min(args.depth) < 0:
        parser.error("--depth needs token counts of 0 or more")
    args.kv = [k.strip() for k in args.kv.split(",") if k.strip()]
    if not args.kv or any(k not in KV_TYPES for k in args.kv):
        parser.error(f"--kv: choose from {','.join(KV_TYPES)}")
    return args


def main(argv):
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the competing process and running children are killed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tools = Tools(args)
    report = Report(args)
    print(report.header(), flush=True)
    try:
        if args.compare:
            run_comparison(args, tools, report)
        if args.contention:
            run_contention(args, tools, report)
        if args.tiny:
            run_tiny(args, tools, report)
        if args.rss:
            run_rss(args, tools, report)
    finally:
        report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
