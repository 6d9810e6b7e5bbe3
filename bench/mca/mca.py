#!/usr/bin/env python3
"""Static throughput estimates of the decode (one token) kernels with llvm-mca, next to ggml's.

For every kernel table (avx2, avx2_vnni, avx512, avx512_vnni, neon) and weight layout, this
compiles the table's translation unit to assembly with the build's own compile command (from
build/default: compile_commands.json, else `ninja -t commands`), finds the decode loop of the
layout's kernel (the K = 1 tile, out of line or inlined into matmul_<layout>), cuts out its hot
loop and runs llvm-mca on it for the cores that table would run on. ggml's vec_dot loops from
the peer llama.cpp tree (bench/peers/build_llama_cpp.sh unpacks it into ~/.cache/mote/peers)
get the same treatment with the same ISA flags. The figure compared is bytes of weights per
cycle: a loop iteration's weight bytes (derived from the loop, see weight_bytes()) over
llvm-mca's cycles per iteration. Nothing of ggml is copied: its files are only compiled here.

Usage: bench/mca/mca.py [--tables avx2,neon] [--layouts q4_kx8,f16] [--all] [--mix]
                        [--json out.json] [--keep DIR] [-v]
Needs llvm-mca 16 (Debian: apt-get install llvm-16; znver4 needs it), g++ and
g++-aarch64-linux-gnu. Standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO, "build", "default")
ARCH_DIR = os.path.join(REPO, "runtime", "src", "kernels", "arch")
PEER_TREE = os.path.expanduser(
    os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "mote/peers/llama-cpp-python-0.3.36/vendor/llama.cpp"))

X86_AVX2_FLAGS = ["-mavx2", "-mfma", "-mf16c"]
X86_AVX512_FLAGS = ["-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl"] + X86_AVX2_FLAGS

# Each table: its TU, the -m flags CMakeLists.txt gives it (ggml is compiled with the same), the
# cores llvm-mca models for it (only cores that can run it), and the TU whose f16 kernel the table
# uses (the _vnni tables replace only the 8-bit products: simd_table.hpp, with_quant_products).
TABLES = {
    "avx2": dict(isa="x86", tu="kernels_avx2.cpp", flags=X86_AVX2_FLAGS,
                 cpus=["znver2", "znver3", "znver4", "skylake", "icelake-server", "alderlake"], f16_from="avx2"),
    "avx2_vnni": dict(isa="x86", tu="kernels_avx2_vnni.cpp", flags=X86_AVX2_FLAGS + ["-mavxvnni"],
                      cpus=["alderlake"], f16_from="avx2"),
    "avx512": dict(isa="x86", tu="kernels_avx512.cpp", flags=X86_AVX512_FLAGS,
                   cpus=["skylake-avx512", "icelake-server", "znver4"], f16_from="avx512"),
    "avx512_vnni": dict(isa="x86", tu="kernels_avx512_vnni.cpp", flags=X86_AVX512_FLAGS + ["-mavx512vnni"],
                        cpus=["icelake-server", "znver4"], f16_from="avx512"),
    # aarch64, dot-product extension on both cores; each core's build is scheduled for it (the
    # A55 is in order, so instruction order matters to it).
    "neon": dict(isa="arm", tu="kernels_neon.cpp", flags=None, cpus=["cortex-a76", "cortex-a55"], f16_from="neon"),
}

# The table mote's dispatch (kernels/dispatch.cpp) picks on each core: the widest it can run.
PICKED = {"znver2": "avx2", "znver3": "avx2", "skylake": "avx2", "alderlake": "avx2_vnni",
          "skylake-avx512": "avx512", "icelake-server": "avx512_vnni", "znver4": "avx512_vnni",
          "cortex-a76": "neon", "cortex-a55": "neon"}

# Core clock (GHz, all cores busy) and the chip's memory bandwidth (GB/s) over its cores: the
# bandwidth share one core has when every core decodes. "peak" = channels x 8 B x MT/s from the
# memory spec (sustained is lower, typically 60-80%); all parts and clocks are assumed examples.
CORES = {
    "znver2": dict(part="Ryzen 9 3950X (assumed)", ghz=3.9, cores=16, gbs=51.2, src="peak, 2ch DDR4-3200"),
    "znver3": dict(part="Ryzen 9 5950X (assumed)", ghz=4.0, cores=16, gbs=51.2, src="peak, 2ch DDR4-3200"),
    "znver4": dict(part="Ryzen 9 7950X (assumed)", ghz=4.5, cores=16, gbs=83.2, src="peak, 2ch DDR5-5200"),
    "skylake": dict(part="Core i7-6700K (assumed)", ghz=4.0, cores=4, gbs=34.1, src="peak, 2ch DDR4-2133"),
    "skylake-avx512": dict(part="Xeon Gold 6148 (assumed)", ghz=2.4, cores=20, gbs=128.0, src="peak, 6ch DDR4-2666"),
    "icelake-server": dict(part="Xeon Platinum 8380 (assumed)", ghz=2.9, cores=40, gbs=204.8,
                           src="peak, 8ch DDR4-3200"),
    "alderlake": dict(part="Core i9-12900K P-cores (assumed)", ghz=4.9, cores=8, gbs=76.8,
                      src="peak, 2ch DDR5-4800"),
    "cortex-a76": dict(part="Raspberry Pi 5 (BCM2712)", ghz=2.4, cores=4, gbs=10.0,
                       src="~10 GB/s measured for the chip (issue 36)"),
    "cortex-a55": dict(part="RK3566-class board (assumed)", ghz=1.8, cores=4, gbs=5.0,
                       src="assumed ~5 GB/s sustained (32-bit LPDDR4)"),
}

# Layout -> (bytes of one block or group block, weights in it, ggml's vec_dot, ggml's block bytes,
# weights in it). mote's x8 blocks are 8 GGUF blocks of 8 rows (quant.hpp, quant_k.hpp).
LAYOUTS = {
    "q8_0x8": (8 * 34, 8 * 32, "ggml_vec_dot_q8_0_q8_0", 34, 32),
    "q4_0x8": (8 * 18, 8 * 32, "ggml_vec_dot_q4_0_q8_0", 18, 32),
    "q4_1x8": (8 * 20, 8 * 32, "ggml_vec_dot_q4_1_q8_1", 20, 32),
    "q5_0x8": (8 * 22, 8 * 32, "ggml_vec_dot_q5_0_q8_0", 22, 32),
    "q5_1x8": (8 * 24, 8 * 32, "ggml_vec_dot_q5_1_q8_1", 24, 32),
    "iq4_nlx8": (8 * 18, 8 * 32, "ggml_vec_dot_iq4_nl_q8_0", 18, 32),
    "q4_kx8": (8 * 144, 8 * 256, "ggml_vec_dot_q4_K_q8_K", 144, 256),
    "q5_kx8": (8 * 176, 8 * 256, "ggml_vec_dot_q5_K_q8_K", 176, 256),
    "q6_kx8": (8 * 210, 8 * 256, "ggml_vec_dot_q6_K_q8_K", 210, 256),
    "q3_kx8": (8 * 110, 8 * 256, "ggml_vec_dot_q3_K_q8_K", 110, 256),
    "q2_kx8": (8 * 84, 8 * 256, "ggml_vec_dot_q2_K_q8_K", 84, 256),
    "f16": (2, 1, "ggml_vec_dot_f16", 2, 1),
}

MCA_ITERATIONS = 100


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- compile commands

def build_commands():
    """The build's compile command of each kernel table TU, as an argument list."""
    path = os.path.join(BUILD, "compile_commands.json")
    entries = []
    if os.path.exists(path):
        with open(path) as f:
            entries = [(e["file"], e.get("command") or " ".join(map(shlex.quote, e["arguments"]))) for e in json.load(f)]
    else:
        out = subprocess.run(["ninja", "-C", BUILD, "-t", "commands"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            m = re.search(r"-c (\S+kernels_\w+\.cpp)$", line)
            if m:
                entries.append((m.group(1), line))
    commands = {}
    for file, cmd in entries:
        base = os.path.basename(file)
        if base.startswith("kernels_"):
            commands[base] = shlex.split(cmd)
    return commands


def to_asm_command(args, out):
    """args (one compile command) with -S into out: no ccache, no object or dependency outputs."""
    args = [a for a in args if a != "ccache"]
    result, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD", "-Werror"):
            continue
        result.append(a)
    return result[:1] + ["-S", "-o", out] + result[1:]


def neon_command(x86_args, mcpu, out, incdir):
    """The neon TU as the aarch64 preset builds it (toolchains/aarch64-linux-gnu.cmake:
    aarch64-linux-gnu-g++, xsimd from the host's /usr/include), derived from an x86 TU's command:
    the x86 table macros and -m flags dropped, MOTE_HAVE_NEON and -mcpu added."""
    args = [a for a in x86_args if a != "ccache"]
    keep = []
    for a in args[1:]:
        if a.startswith("-DMOTE_HAVE_AVX") or (a.startswith("-m") and not a.startswith("-MF")):
            continue
        keep.append(a)
    cmd = ["aarch64-linux-gnu-g++", "-DMOTE_HAVE_NEON=1", "-isystem", incdir, "-mcpu=" + mcpu] + keep
    cmd = [a if not a.endswith("kernels_avx2.cpp") else os.path.join(ARCH_DIR, "kernels_neon.cpp") for a in cmd]
    return to_asm_command(cmd, out)


def ggml_commands(isa, flags, mcpu, out_c, out_cpp):
    """ggml's x86 or arm quants.c and its vec.cpp (ggml_vec_dot_f16), with the peer build's
    defines and include paths and the table's ISA flags in place of -march=native."""
    src = os.path.join(PEER_TREE, "ggml", "src")
    common = ["-DGGML_BACKEND_BUILD", "-D_GNU_SOURCE", "-D_XOPEN_SOURCE=600", "-DGGML_USE_OPENMP",
              "-I" + os.path.join(src, ".."), "-I" + src, "-I" + os.path.join(src, "ggml-cpu"),
              "-I" + os.path.join(src, "..", "include"), "-O3", "-DNDEBUG", "-fPIC", "-fopenmp", "-w"]
    if isa == "x86":
        cc, cxx, march = "cc", "c++", flags
        quants = os.path.join(src, "ggml-cpu", "arch", "x86", "quants.c")
    else:
        cc, cxx, march = "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", ["-mcpu=" + mcpu]
        quants = os.path.join(src, "ggml-cpu", "arch", "arm", "quants.c")
    vec = os.path.join(src, "ggml-cpu", "vec.cpp")
    return ([cc, "-S", "-o", out_c, "-std=gnu11"] + common + march + [quants],
            [cxx, "-S", "-o", out_cpp, "-std=gnu++17"] + common + march + [vec])


def run_compile(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("compile failed: %s\n%s" % (" ".join(cmd), r.stderr[-3000:]))
    return cmd


# ----------------------------------------------------------------------------- assembly

class Func:
    def __init__(self, name, lines):
        self.name, self.lines, self.demangled = name, lines, name


def parse_functions(path):
    """Every function of a GCC .s file: its label through its .size directive."""
    with open(path) as f:
        lines = f.read().split("\n")
    funcs, cur, start = {}, None, 0
    for i, line in enumerate(lines):
        m = re.match(r"^([A-Za-z_$][\w.$]*):", line)
        if m and cur is None:
            cur, start = m.group(1), i
        elif cur and line.startswith("\t.size\t" + cur + ","):
            funcs[cur] = Func(cur, lines[start:i])
            cur = None
    names = list(funcs)
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    for n, d in zip(names, out):
        funcs[n].demangled = d
    return funcs


BRANCH_X86 = re.compile(r"^\t(j[a-z]+)\t(\.L\w+)$")
BRANCH_ARM = re.compile(r"^\t(b(?:\.?(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le))?|cbn?z|tbn?z)\t(?:.*,\s*)?(\.L\w+)$")
CALL = re.compile(r"^\t(?:call|jmp|bl|b)\t([A-Za-z_][\w.$]*)(?:@PLT)?$")


def is_insn(line):
    return line.startswith("\t") and not line.startswith("\t.") and line.strip() != ""


def find_loops(func, isa):
    """(label line, backward branch line) of every loop: a branch to a label above it (the last
    such branch per label)."""
    branch = BRANCH_X86 if isa == "x86" else BRANCH_ARM
    labels, loops = {}, {}
    for j, line in enumerate(func.lines):
        m = re.match(r"^(\.L\w+):", line)
        if m:
            labels[m.group(1)] = j
            continue
        m = branch.match(line)
        if m and m.group(2) in labels:
            loops[labels[m.group(2)]] = j
    return sorted(loops.items())


def callees(func):
    return {m.group(1) for m in (CALL.match(l) for l in func.lines) if m}


# Integer products (each weight byte enters one lane of one of these in a one-token pass) and
# float multiply-adds (the f16 kernels: one lane per weight).
PRODUCT_X86 = re.compile(r"^\t(?:\{vex\}\s*)?(vpdpbusds?|vpmaddubsw)\t")
PRODUCT_ARM = re.compile(r"^\t(sdot|udot|smull2?|umull2?|smlal2?)\t")
FMA_X86 = re.compile(r"^\t(vfn?madd\d+ps)\t")
FMA_ARM = re.compile(r"^\t(fmla)\t(v\d+\.(4s|8h))")


def lanes(line, isa, f16):
    """Weights one instruction consumes (0 for others)."""
    if isa == "x86":
        m = (FMA_X86 if f16 else PRODUCT_X86).match(line)
        if not m:
            return 0
        width = 64 if "%zmm" in line else 32 if "%ymm" in line else 16
        return width // 4 if f16 else width
    if f16:
        m = FMA_ARM.match(line)
        return 0 if not m else (4 if m.group(3) == "4s" else 8)
    m = PRODUCT_ARM.match(line)
    if not m:
        return 0
    op = m.group(1)
    if op in ("sdot", "udot"):
        return 16 if ".16b" in line else 8
    return 8  # smull/smull2/smlal: 8 byte lanes each


INC_X86 = [re.compile(r"^\t(?:add|addq)\t\$(\d+), %(\w+)$"), re.compile(r"^\tleaq\t(\d+)\(%(\w+)\), %(\w+)$"),
           re.compile(r"^\t(?:sub|subq)\t\$-(\d+), %(\w+)$")]
INC_ARM = [re.compile(r"^\tadd\t(x\d+), (x\d+), #?(\d+)$"), re.compile(r"^\tld\w+\t.*\[(x\d+)\], #?(\d+)$")]


def increments(body, isa):
    """(register, bytes) of each pointer step by a constant in the loop body."""
    incs = []
    for line in body:
        if isa == "x86":
            m = INC_X86[0].match(line) or INC_X86[2].match(line)
            if m:
                incs.append((m.group(2), int(m.group(1))))
                continue
            m = INC_X86[1].match(line)
            if m and m.group(2) == m.group(3):
                incs.append((m.group(2), int(m.group(1))))
        else:
            m = INC_ARM[0].match(line)
            if m and m.group(1) == m.group(2):
                incs.append((m.group(1), int(m.group(3))))
                continue
            m = INC_ARM[1].match(line)
            if m:
                incs.append((m.group(1), int(m.group(2))))
    return incs


class Loop:
    pass


def loop_candidates(funcs, roots, isa, f16):
    """Every loop with weight products inside the root functions and what they call (the
    decode tile may be inlined or out of line), innermost among such loops. A nested loop without
    products (prefetch_ahead's) stays inside its parent."""
    seen, todo, result = set(), list(roots), []
    while todo:
        name = todo.pop()
        if name in seen or name not in funcs:
            continue
        seen.add(name)
        func = funcs[name]
        todo.extend(callees(func))
        # A tile for K > 1 tokens, or two groups side by side for one token (two_groups_per_tile
        # is n > 1: never on the decode path), is not the decode kernel.
        m = re.search(r"_tile<.*, (\d+)ul>\(", func.demangled)
        if m and (m.group(1) != "1" or "Rows16" in func.demangled):
            continue
        loops = find_loops(func, isa)
        with_products = []
        for a, b in loops:
            n = sum(lanes(l, isa, f16) for l in func.lines[a:b + 1])
            if n:
                with_products.append((a, b, n))
        for a, b, n in with_products:
            if any(a <= a2 and b2 <= b and (a2, b2) != (a, b) for a2, b2, _ in with_products):
                continue
            lp = Loop()
            lp.func, lp.start, lp.end, lp.lanes = func, a, b, n
            lp.label = func.lines[a].rstrip(":")
            lp.nested = [(a2, b2) for a2, b2 in loops if a < a2 and b2 < b]
            result.append(lp)
    return result


def weight_bytes(lp, isa, block_bytes, block_weights, f16):
    """Weight bytes one iteration consumes, and how that was worked out. Quantized layouts: the
    weight pointer's step, the smallest positive multiple of the block size among the loop's
    constant pointer steps (activation streams step by other sizes); when there is none, the
    product lanes (one per weight in a one-token pass) times the bytes per weight. f16: the FMA
    lanes x 2 bytes (several rows share one index register there)."""
    body = [l for l in lp.func.lines[lp.start:lp.end + 1] if is_insn(l)]
    if not f16:
        steps = sorted({inc for _, inc in increments(body, isa) if inc % block_bytes == 0 and inc > 0})
        if steps:
            blocks = steps[0] // block_bytes
            return steps[0], "pointer step %d B = %d x %d B block" % (steps[0], blocks, block_bytes)
    nbytes = lp.lanes * block_bytes / block_weights
    return nbytes, "%d %s lanes x %.4g B/weight" % (lp.lanes, "FMA" if f16 else "product", block_bytes / block_weights)


def loop_text(lp, nbytes):
    """The loop body for llvm-mca, directives dropped. A nested loop without products is the
    prefetch loop (prefetch_ahead: one prefetch per 64 B of the bytes one iteration reads); it is
    repeated nbytes / 64 times when it steps by 64, else kept once (noted)."""
    lines, notes, i = lp.func.lines, [], lp.start
    out = []
    nested = {a: b for a, b in lp.nested}
    while i <= lp.end:
        if i in nested:
            b = nested[i]
            part = [l for l in lines[i:b + 1] if is_insn(l)]
            has_prefetch = any(re.match(r"^\t(prefetch\w*|prfm)\t", l) for l in part)
            step64 = any(inc == 64 for _, inc in increments(part, "x86")) or any(
                inc == 64 for _, inc in increments(part, "arm"))
            times = max(1, int(round(nbytes / 64))) if has_prefetch and step64 else 1
            notes.append("nested loop of %d insns x %d%s" % (len(part), times, " (prefetch)" if times > 1 else ""))
            out.extend(part * times)
            i = b + 1
            continue
        if is_insn(lines[i]):
            out.append(lines[i])
        i += 1
    return out, notes


# ----------------------------------------------------------------------------- llvm-mca

def find_mca():
    for name in ("llvm-mca-16", "llvm-mca-17", "llvm-mca-18", "llvm-mca"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("mca.py: no llvm-mca (apt-get install llvm-16)")


def run_mca(mca, insns, isa, cpu, workdir, tag):
    path = os.path.join(workdir, tag + "." + cpu + ".s")
    with open(path, "w") as f:
        f.write("\n".join(insns) + "\n")
    triple = "x86_64-unknown-linux-gnu" if isa == "x86" else "aarch64-unknown-linux-gnu"
    r = subprocess.run([mca, "-mtriple=" + triple, "-mcpu=" + cpu, "-iterations=%d" % MCA_ITERATIONS, path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("llvm-mca failed on %s for %s: %s" % (path, cpu, r.stderr[-2000:]))
    return parse_mca(r.stdout)


def parse_mca(text):
    res = {}
    m = re.search(r"Total Cycles:\s+(\d+)", text)
    res["cycles"] = int(m.group(1)) / MCA_ITERATIONS
    m = re.search(r"Block RThroughput:\s+([\d.]+)", text)
    res["rthroughput"] = float(m.group(1))
    m = re.search(r"Instructions:\s+(\d+)", text)
    res["insns"] = int(m.group(1)) // MCA_ITERATIONS
    names = dict(re.findall(r"^\[([\d.]+)\]\s+-\s+(\S+)", text, re.M))
    m = re.search(r"Resource pressure per iteration:\n(.*)\n(.*)\n", text)
    pressure = {}
    if m:
        heads = re.findall(r"\[([\d.]+)\]", m.group(1))
        vals = m.group(2).split()
        for h, v in zip(heads, vals):
            if v != "-":
                pressure[names.get(h, h)] = float(v)
    res["pressure"] = pressure
    # A latency of 100 is LLVM's placeholder for an instruction its model does not cover (Zen 2's
    # vcvtph2ps with a memory operand in LLVM 16): a loop whose chain runs through one is wrong.
    res["placeholder"] = sorted({m.group(2) for m in re.finditer(
        r"^\s*\d+\s+(\d{3,})\s+[\d.]+\s.*?([a-z]\w+)\s", text, re.M) if int(m.group(1)) >= 100})
    return res


# ----------------------------------------------------------------------------- instruction mix

MIX_X86 = [
    ("product", r"^(\{vex\}\s*)?(vpdpbusds?|vpmaddubsw)$"),
    ("shift", r"^vps(rl|ll|ra)v?[wdq]$"),
    ("shuffle", r"^(vpshufb|vperm\w+|vpunpck\w+|vinsert\w+|vextract\w+|vpbroadcast\w+|vbroadcast\w+|vshuf\w+|"
                r"vpalignr|vpack\w+|vpmov[sz]x\w+|vpshufd|vpshuf[hl]w|vmovsh\w*|vpermt2\w+)$"),
    ("logic", r"^(vpand\w*|vpor\w*|vpxor\w*|vpternlog\w+|vpandn\w*)$"),
    ("int", r"^(vpadd\w+|vpsub\w+|vpmaddwd|vpmull\w+|vpsign\w+|vpabs\w+|vpcmp\w+|vpmin\w+|vpmax\w+)$"),
    ("float", r"^(vfn?m(add|sub)\w+|vmul[sp]s|vadd[sp]s|vsub[sp]s|vcvt\w+)$"),
]
MIX_ARM = [
    ("product", r"^(sdot|udot|smull2?|umull2?|smlal2?)$"),
    ("shift", r"^(ushr|sshr|shl|ushl|sshl|[su]shll2?|shrn2?|ursra|usra|sli|sri)$"),
    ("shuffle", r"^(tbl|tbx|zip[12]|uzp[12]|trn[12]|ext|dup|ins|umov|smov|xtn2?|bfi|fmov)$"),
    ("logic", r"^(and|orr|bic|eor|orn|movi|mvni)$"),
    ("int", r"^(add|sub|addp|mul|mla|neg|saddlp|sadalp|addv|cmeq|cmgt)$"),
    ("float", r"^(fmla|fmls|fmul|fadd|fsub|scvtf|ucvtf|fcvtl2?|fneg)$"),
]


def instruction_mix(insns, isa):
    table = MIX_X86 if isa == "x86" else MIX_ARM
    counts = {k: 0 for k, _ in table}
    counts["load"] = 0
    counts["other"] = 0
    vector_arm = re.compile(r"\bv\d+\.|\bq\d+\b")
    for line in insns:
        parts = line.strip().split(None, 1)
        op = parts[0] if parts[0] != "{vex}" else "{vex} " + parts[1].split(None, 1)[0]
        ops = parts[1] if len(parts) > 1 else ""
        if isa == "x86":
            # A store's memory operand is the last one; a load reads memory in an earlier one.
            is_load = "(" in ops and not op.startswith(("prefetch", "lea")) and not ops.rstrip().endswith(")")
        else:
            is_load = op.startswith(("ldr", "ld1", "ldp", "ldur"))
        if is_load:
            counts["load"] += 1
        for k, rx in table:
            if re.match(rx, op) and (isa == "x86" or k not in ("logic", "int") or vector_arm.search(ops)):
                counts[k] += 1
                break
        else:
            if not is_load:
                counts["other"] += 1
    return counts


# ----------------------------------------------------------------------------- main

def analyse(funcs, roots, isa, f16, block_bytes, block_weights, prefer_min_ratio):
    """The decode loop among the roots' loops: fewest product lanes per weight byte (a K-token
    tile makes K per weight, decode one), then the most bytes per iteration (the main loop, not
    a remainder)."""
    cands = loop_candidates(funcs, roots, isa, f16)
    if not cands:
        return None, []
    scored = []
    for lp in cands:
        nbytes, how = weight_bytes(lp, isa, block_bytes, block_weights, f16)
        lp.nbytes, lp.how = nbytes, how
        scored.append(lp)
    if prefer_min_ratio:
        best_ratio = min(lp.lanes / lp.nbytes for lp in scored)
        scored = [lp for lp in scored if lp.lanes / lp.nbytes <= best_ratio * 1.01]
    scored.sort(key=lambda lp: -lp.nbytes)
    return scored[0], cands


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--all", action="store_true", help="every core a table runs on, not only the table mote picks")
    ap.add_argument("--mix", action="store_true", help="also print the instruction mix per 256 weights")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--keep", help="assembly and llvm-mca inputs go here (reused when present) instead of a temp dir")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the chosen loops and their derivation")
    args = ap.parse_args()
    tables = args.tables.split(",")
    layouts = args.layouts.split(",")
    mca = find_mca()
    ver = subprocess.run([mca, "--version"], capture_output=True, text=True).stdout
    log("mca.py: %s" % re.search(r"LLVM version [\d.]+", ver).group(0))
    workdir = args.keep or tempfile.mkdtemp(prefix="mote-mca-")
    os.makedirs(workdir, exist_ok=True)
    incdir = os.path.join(workdir, "inc")
    os.makedirs(incdir, exist_ok=True)
    if not os.path.exists(os.path.join(incdir, "xsimd")):
        os.symlink("/usr/include/xsimd", os.path.join(incdir, "xsimd"))
    have_ggml = os.path.exists(os.path.join(PEER_TREE, "ggml", "src", "ggml-cpu", "vec.cpp"))
    if not have_ggml:
        log("mca.py: no peer tree at %s (bench/peers/build_llama_cpp.sh): ggml columns empty" % PEER_TREE)

    # Builds: (kind, table, mcpu) -> assembly files.
    commands = build_commands()
    jobs = {}
    x86_tus = {t for t in tables if TABLES[t]["isa"] == "x86"}
    x86_tus |= {TABLES[t]["f16_from"] for t in x86_tus}
    for t in sorted(x86_tus):
        cfg = TABLES[t]
        out = os.path.join(workdir, "mote.%s.s" % t)
        jobs[("mote", t, None)] = (out, [to_asm_command(commands[cfg["tu"]], out)])
        if have_ggml:
            qc, vc = os.path.join(workdir, "ggml.%s.quants.s" % t), os.path.join(workdir, "ggml.%s.vec.s" % t)
            jobs[("ggml", t, None)] = ((qc, vc), list(ggml_commands("x86", cfg["flags"], None, qc, vc)))
    if "neon" in tables:
        for cpu in TABLES["neon"]["cpus"]:
            out = os.path.join(workdir, "mote.neon.%s.s" % cpu)
            jobs[("mote", "neon", cpu)] = (out, [neon_command(commands["kernels_avx2.cpp"], cpu, out, incdir)])
            if have_ggml:
                qc, vc = (os.path.join(workdir, "ggml.neon.%s.quants.s" % cpu),
                          os.path.join(workdir, "ggml.neon.%s.vec.s" % cpu))
                jobs[("ggml", "neon", cpu)] = ((qc, vc), list(ggml_commands("arm", None, cpu, qc, vc)))
    todo = []
    for key, (outs, cmds) in jobs.items():
        outs_list = outs if isinstance(outs, tuple) else (outs,)
        for o, c in zip(outs_list, cmds):
            if not (args.keep and os.path.exists(o)):
                todo.append(c)
    log("mca.py: compiling %d files to assembly in %s (2 at a time)" % (len(todo), workdir))
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for cmd in pool.map(run_compile, todo):
            if args.verbose:
                log("  " + " ".join(cmd))
    parsed = {}

    def functions(path):
        if path not in parsed:
            parsed[path] = parse_functions(path)
        return parsed[path]

    results = []
    for table in tables:
        cfg = TABLES[table]
        isa = cfg["isa"]
        cpus = cfg["cpus"] if (args.all or isa == "arm") else [c for c in cfg["cpus"] if PICKED[c] == table]
        if not cpus:
            continue
        for layout in layouts:
            block_bytes, block_weights, ggml_name, gblock_bytes, gblock_weights = LAYOUTS[layout]
            f16 = layout == "f16"
            builds = [(None, cpus)] if isa == "x86" else [(c, [c]) for c in cpus]
            for mcpu, mca_cpus in builds:
                src_table = cfg["f16_from"] if f16 else table
                fns = functions(jobs[("mote", src_table, mcpu)][0])
                export = "matvec_f16<" if f16 else "matmul_%s<" % layout
                roots = [n for n, f in fns.items() if re.match(
                    r"^void mote::kernels::simd::" + re.escape(export) + r"[^(]*>\(",
                    f.demangled.replace("(anonymous namespace)", "anon"))]
                lp, cands = analyse(fns, roots, isa, f16, block_bytes, block_weights, True)
                glp = None
                if have_ggml:
                    gq, gv = jobs[("ggml", src_table if isa == "x86" else "neon", mcpu)][0]
                    gfns = functions(gv if f16 else gq)
                    groots = [n for n, f in gfns.items() if f.demangled.split("(")[0] == ggml_name]
                    glp, _ = analyse(gfns, groots, isa, f16, gblock_bytes, gblock_weights, False)
                if lp is None:
                    log("mca.py: no decode loop found for %s %s" % (table, layout))
                    continue
                insns, notes = loop_text(lp, lp.nbytes)
                if lp.nbytes < block_bytes:
                    # The product loop is inside the block loop (not unrolled): what the block
                    # loop does around it is not counted, so this rate is an upper bound.
                    notes.append("inner loop, %g per block: block overhead not counted" % (block_bytes / lp.nbytes))
                ginsns, gnotes = loop_text(glp, glp.nbytes) if glp else (None, [])
                if args.verbose:
                    log("%s %s%s: %s loop %s (%d insns, %d candidates) -> %s; %s" % (
                        table, layout, " " + mcpu if mcpu else "", lp.func.demangled[:140], lp.label, len(insns),
                        len(cands), lp.how, "; ".join(notes)))
                    if glp:
                        log("    ggml %s loop %s (%d insns) -> %s; %s" % (ggml_name, glp.label, len(ginsns), glp.how,
                                                                         "; ".join(gnotes)))
                for cpu in mca_cpus:
                    tag = "%s.%s" % (table, layout)
                    r = run_mca(mca, insns, isa, cpu, workdir, "mote." + tag)
                    g = run_mca(mca, ginsns, isa, cpu, workdir, "ggml." + tag) if ginsns else None
                    weights = lp.nbytes * block_weights / block_bytes
                    row = dict(layout=layout, table=table, cpu=cpu, picked=PICKED[cpu] == table,
                               mote=dict(function=lp.func.demangled, loop=lp.label, bytes=lp.nbytes, how=lp.how,
                                         notes=notes, weights=weights, **r,
                                         mix=instruction_mix(insns, isa)),
                               ggml=None)
                    if g:
                        gweights = glp.nbytes * gblock_weights / gblock_bytes
                        row["ggml"] = dict(function=ggml_name, loop=glp.label, bytes=glp.nbytes, how=glp.how,
                                           notes=gnotes, weights=gweights, **g, mix=instruction_mix(ginsns, isa))
                    results.append(row)
    print_tables(results, args.mix)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


def top_ports(pressure, weights, n=3):
    """The n busiest resources, cycles per 256 weights."""
    top = sorted(pressure.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join("%s %.1f" % (k, v * 256 / weights) for k, v in top)


def print_tables(results, mix):
    """The table: per row the loop's cycles and bytes, mote's predicted rate on that core at its
    clock, and how many cores running it would draw the chip's whole bandwidth (CORES): more than
    the chip has means even all cores together stay compute-bound."""
    print("| layout | table | cpu | mote B/iter | mote cyc/iter (RThr) | mote B/cycle | ggml B/iter | ggml cyc/iter (RThr) "
          "| ggml B/cycle | mote/ggml | mote GB/s per core | cores to fill BW | mote top resources "
          "(cycles per 256 weights) |")
    print("|" + "---|" * 13)
    for r in results:
        m, g, core = r["mote"], r["ggml"], CORES[r["cpu"]]
        bpc = m["bytes"] / m["cycles"]
        gbpc = g["bytes"] / g["cycles"] if g else None
        rate = bpc * core["ghz"]
        need = core["gbs"] / rate
        flag = " (!)" if m["placeholder"] or (g and g["placeholder"]) else ""
        flag += " (inner)" if any("inner loop" in n for n in m["notes"]) else ""
        print("| %s | %s%s | %s%s | %g | %.1f (%.1f) | %.2f | %s | %s | %s | %s | %.1f | %.1f of %d%s | %s |" % (
            r["layout"], r["table"], "" if r["picked"] else " (not picked)", r["cpu"], flag, m["bytes"], m["cycles"],
            m["rthroughput"], bpc, "%g" % g["bytes"] if g else "-",
            "%.1f (%.1f)" % (g["cycles"], g["rthroughput"]) if g else "-", "%.2f" % gbpc if g else "-",
            "%.2f" % (bpc / gbpc) if g else "-", rate, need, core["cores"],
            " (compute-bound)" if need > core["cores"] else "", top_ports(m["pressure"], m["weights"])))
    if mix:
        print()
        print("Instruction mix per 256 weights (mote / ggml):")
        print()
        keys = ["product", "shift", "shuffle", "logic", "int", "float", "load", "other"]
        print("| layout | table | cpu | " + " | ".join(keys) + " | total |")
        print("|" + "---|" * (len(keys) + 4))
        done = set()
        for r in results:
            key = (r["layout"], r["table"], r["cpu"] if r["table"] == "neon" else None)
            if key in done:
                continue
            done.add(key)
            cells = []
            for k in keys + ["total"]:
                def per(d):
                    v = d["insns"] if k == "total" else d["mix"][k]
                    return v * 256 / d["weights"]
                cells.append("%.1f / %s" % (per(r["mote"]), "%.1f" % per(r["ggml"]) if r["ggml"] else "-"))
            print("| %s | %s | %s | %s |" % (r["layout"], r["table"], key[2] or "x86", " | ".join(cells)))


if __name__ == "__main__":
    main()
