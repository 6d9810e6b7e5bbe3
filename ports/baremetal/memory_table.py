#!/usr/bin/env python3
"""Memory figures of the Cortex-M builds, measured from the built images.

For each build folder (a cortex-m, cortex-m7 or cortex-m55 preset's): the runtime library alone
(libmote.a, every section of every object: what the linker can draw from) and each firmware
image as linked (garbage-collected): .text (code, vector table, unwind index), .rodata (constants,
without the embedded model and data), .data, .bss (the arena included), the model's bytes in
flash, the arena and the stack's high-water mark, measured by running the image under
qemu-system-arm (startup.c paints the stack at reset; the firmware reports the deepest word
written). Prints a Markdown table.

--check also cross-checks every figure against an independent source and exits 1 on a mismatch:
the flash total against the ELF's program headers (readelf; they add the padding before aligned
sections, under 64 bytes each) and the RAM total exactly, the model bytes against the .mote file's
size, the arena against the header the build generated (mote inspect --arena-bytes).

Usage: ports/baremetal/memory_table.py [--check] BUILD_DIR...   (stdlib only; arm-none-eabi
binutils and qemu-system-arm on PATH)
"""
import argparse
import os
import re
import subprocess
import sys

FIRMWARE_DIR = "ports/baremetal"
CORES = {"mps2-an386": "Cortex-M4F", "mps2-an500": "Cortex-M7", "mps3-an547": "Cortex-M55"}


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def section_sizes(path):
    """Sums `size -A` sections by kind: text, rodata, data, bss (an archive: over all members)."""
    sums = {"text": 0, "rodata": 0, "data": 0, "bss": 0}
    kinds = [("text", (".text", ".isr_vector", ".ARM.exidx", ".ARM.extab", ".init_array", ".fini_array",
                       ".preinit_array")), ("rodata", (".rodata",)), ("data", (".data",)), ("bss", (".bss",))]
    for line in run("arm-none-eabi-size", "-A", path).splitlines():
        fields = line.split()
        if len(fields) != 3 or not fields[1].isdigit():
            continue
        name, size = fields[0], int(fields[1])
        for kind, prefixes in kinds:
            if any(name == p or name.startswith(p + ".") for p in prefixes):
                sums[kind] += size
                break
    return sums


def symbols(elf):
    """name -> (address, size) from nm (demangled)."""
    table = {}
    for line in run("arm-none-eabi-nm", "-S", "-C", elf).splitlines():
        m = re.match(r"([0-9a-f]+) (?:([0-9a-f]+) )?\w (.+)$", line)
        if m:
            table[m.group(3)] = (int(m.group(1), 16), int(m.group(2), 16) if m.group(2) else 0)
    return table


def load_segments(elf):
    """(flash bytes, RAM bytes) from the program headers: file sizes, and memory sizes at RAM."""
    flash = ram = 0
    for line in run("arm-none-eabi-readelf", "-lW", elf).splitlines():
        fields = line.split()
        if fields and fields[0] == "LOAD":
            virt, phys, filesz, memsz = (int(f, 16) for f in fields[2:6])
            flash += filesz
            if virt != phys:  # loaded from flash, runs in RAM (.data; .bss follows it)
                ram += memsz
    return flash, ram


def stack_high_water(qemu, board, elf):
    out = subprocess.run([qemu, "-M", board, "-nographic", "-monitor", "none", "-serial", "none",
                          "-semihosting-config", "enable=on,target=native", "-kernel", elf],
                         capture_output=True, text=True, errors="replace", timeout=300).stdout
    m = re.search(r"stack high-water (\d+) of (\d+) B", out)
    if not m:
        raise RuntimeError(f"{elf} printed no stack high-water mark under {board}")
    return int(m.group(1)), int(m.group(2))


def cache_value(build, name):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return ""


def measure(build, check, errors):
    board = cache_value(build, "MOTE_FIRMWARE_BOARD") or "mps2-an386"
    qemu = cache_value(build, "MOTE_QEMU_SYSTEM_ARM") or "qemu-system-arm"
    core = CORES.get(board, board)
    lib = section_sizes(os.path.join(build, "libmote.a"))
    rows = [(core, "libmote.a (runtime alone)", "", lib, None, None, None)]
    fw_dir = os.path.join(build, FIRMWARE_DIR)
    with open(os.path.join(fw_dir, "firmware_images.txt")) as f:  # this configuration's images
        names = sorted(line.strip() for line in f if line.strip())
    for name in names:
        elf = os.path.join(fw_dir, name + ".elf")
        sizes = section_sizes(elf)
        syms = symbols(elf)
        model = syms["mote_fw_model_end"][0] - syms["mote_fw_model"][0]
        data = syms["mote_fw_data_end"][0] - syms["mote_fw_data"][0]
        arena = syms["(anonymous namespace)::g_arena"][1]
        rodata = sizes["rodata"]
        sizes["rodata"] = rodata - model - data  # the blobs have their own column / are the program's data
        stack = stack_high_water(qemu, board, elf)
        model_file = os.path.basename(re.search(r'\.incbin "([^"]+)"',
                                                open(os.path.join(fw_dir, name + ".gen", "blobs.S")).read()).group(1))
        rows.append((core, name, model_file, sizes, model, arena, stack))
        if check:
            flash, ram = load_segments(elf)
            listed_flash = sizes["text"] + rodata + sizes["data"]
            # The segments also hold the padding before aligned sections: under 64 bytes each.
            if not 0 <= flash - listed_flash < 64 * 8:
                errors.append(f"{elf}: flash {listed_flash} in the table, {flash} in the program headers")
            if ram != sizes["data"] + sizes["bss"]:
                errors.append(f"{elf}: RAM {sizes['data'] + sizes['bss']} in the table, {ram} in the program headers")
            model_path = re.search(r'\.incbin "([^"]+)"', open(os.path.join(fw_dir, name + ".gen", "blobs.S")).read())
            if os.path.getsize(model_path.group(1)) != model:
                errors.append(f"{elf}: model {model} B in flash, the file has {os.path.getsize(model_path.group(1))}")
            header = open(os.path.join(fw_dir, name + ".gen", "firmware_arena.h")).read()
            generated = int(re.search(r"MOTE_FIRMWARE_ARENA_BYTES (\d+)u", header).group(1))
            if generated != arena:
                errors.append(f"{elf}: arena {arena} B in the image, mote inspect --arena-bytes says {generated}")
            if stack[0] <= 0 or stack[0] >= stack[1]:
                errors.append(f"{elf}: stack high-water {stack[0]} of {stack[1]} B is not a measurement")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="cross-check the figures; exit 1 on a mismatch")
    parser.add_argument("builds", nargs="+", help="build folders of the cortex-m presets")
    args = parser.parse_args()
    errors = []
    print("| core | image | model file | .text | .rodata | .data | .bss | model in flash | arena | stack used |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for build in args.builds:
        for core, name, model_file, s, model, arena, stack in measure(build, args.check, errors):
            extra = ["", "", ""] if model is None else [f"{model:,}", f"{arena:,}", f"{stack[0]:,} of {stack[1]:,}"]
            cells = [core, name, model_file, f"{s['text']:,}", f"{s['rodata']:,}", f"{s['data']:,}", f"{s['bss']:,}"]
            print("| " + " | ".join(cells + extra) + " |")
    for e in errors:
        print("memory_table.py: MISMATCH " + e, file=sys.stderr)
    if args.check:
        print(f"memory_table.py: {'FAIL' if errors else 'PASS'}: every figure cross-checked", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
