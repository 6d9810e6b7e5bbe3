#!/usr/bin/python3
"""Draws a side-by-side table of mote vs llama.cpp from a markdown file as one chart.

usage: bench/plot_side_by_side.py MARKDOWN OUT.png [--after HEADING] [--title TEXT]
                                  [--panels tg128,pp512] [--threads 1,2] [--scale auto|log|linear]

The table is the first one whose header names every panel's column (tg128, pp512 by default),
or the first such table after the heading that contains --after's text. Two layouts are read,
the ones bench/compare.py's tables have had (README.md, bench/README.md's measurement log):

  | file | pp128 | pp512 | tg128 | ...              cells: `201 vs 49.4 (4.06x) / 326 vs 122 (2.68x)`,
                                                      mote vs llama.cpp (ratio), one part per --threads
  | type | threads | pp128 | pp512 | tg128 | ...    cells: `58.9 / 37.2 (1.58)`, mote / llama.cpp (ratio)

One panel per column (decode, then prompt), one group of bars per row: mote and llama.cpp
(hatched) at each thread count, tok/s, the table's ratio above each mote bar. A panel whose
values span more than 20x is drawn on a log scale (--scale auto). A `failed: ...` cell draws
no bar. Needs Debian's python3-matplotlib (toolchains/install-deps.sh without --no-python).
"""
import argparse
import re
import sys
import textwrap
from pathlib import Path

NUMBER = r"(\d+(?:\.\d+)?)"
VS_PAIR = re.compile(rf"^{NUMBER} vs {NUMBER} \({NUMBER}x?\)$")  # 201 vs 49.4 (4.06x)
SLASH_PAIR = re.compile(rf"^{NUMBER} / {NUMBER} \({NUMBER}x?\)$")  # 58.9 / 37.2 (1.58)
LOG_SCALE_SPAN = 20  # max / min of a panel's bars above which small bars would be slivers
PANEL_TITLES = {"tg": "decode", "pp": "prompt"}
COLOR_MAPS = {"mote": "Blues", "llama.cpp": "Oranges"}  # lighter for fewer threads
HATCHES = {"mote": None, "llama.cpp": "///"}


def cells_of(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables_in(lines, after):
    """Yields (header, rows) of every markdown table, after the first heading containing `after`."""
    if after is not None:
        start = next((i for i, l in enumerate(lines) if l.startswith("#") and after in l), None)
        if start is None:
            sys.exit(f"plot_side_by_side: no heading contains {after!r}")
        lines = lines[start + 1:]
    i = 0
    while i < len(lines):
        is_table = (lines[i].startswith("|") and i + 1 < len(lines)
                    and re.fullmatch(r"\|?[\s:|-]+\|?", lines[i + 1].strip()))
        if not is_table:
            i += 1
            continue
        header, i = cells_of(lines[i]), i + 2
        rows = []
        while i < len(lines) and lines[i].startswith("|"):
            rows.append(cells_of(lines[i]))
            i += 1
        yield header, rows


def parse_cell(cell, where):
    """A cell -> [(mote, llama.cpp, ratio) or None per thread part]; None where the run failed."""
    if cell.startswith("failed"):
        return [None]
    parts = [p.strip() for p in cell.split(" / ")] if " vs " in cell else [cell]
    pairs = []
    for part in parts:
        m = VS_PAIR.match(part) or SLASH_PAIR.match(part)
        if part.startswith("failed"):
            pairs.append(None)
        elif not m:
            sys.exit(f"plot_side_by_side: {where}: cannot read {part!r} (want `M vs L (Rx)` or `M / L (R)`)")
        else:
            pairs.append(tuple(float(g) for g in m.groups()))
    return pairs


def read_table(path, after, panels, threads):
    """-> (labels, {panel: {label: {threads: (mote, llama, ratio) or None}}}, thread counts)."""
    lines = Path(path).read_text().splitlines()
    for header, rows in tables_in(lines, after):
        if all(p in header for p in panels):
            break
    else:
        sys.exit(f"plot_side_by_side: {path}: no table with columns {', '.join(panels)}"
                 + (f" after a heading containing {after!r}" if after else ""))
    thread_col = header.index("threads") if "threads" in header else None
    labels, data, seen_threads = [], {p: {} for p in panels}, set()
    for row in rows:
        label = row[0]
        if label not in labels:
            labels.append(label)
        for panel in panels:
            pairs = parse_cell(row[header.index(panel)], f"{label}, {panel}")
            if thread_col is not None:
                row_threads = [int(row[thread_col])]
            elif len(pairs) == 1 and pairs[0] is None:  # one failed cell stands for every thread count
                row_threads, pairs = threads, [None] * len(threads)
            elif len(pairs) != len(threads):
                sys.exit(f"plot_side_by_side: {label}, {panel}: {len(pairs)} parts for --threads "
                         f"{','.join(map(str, threads))}")
            else:
                row_threads = threads
            data[panel].setdefault(label, {}).update(zip(row_threads, pairs))
            seen_threads.update(row_threads)
    return labels, data, sorted(seen_threads)


def panel_title(column):
    kind = PANEL_TITLES.get(column[:2], column)
    return f"{kind} ({column}), tokens/s"


def bar_style(plt, engine, thread_counts, t):
    shade = 0.45 + 0.4 * thread_counts.index(t) / max(1, len(thread_counts) - 1)
    return {"facecolor": plt.get_cmap(COLOR_MAPS[engine])(shade), "hatch": HATCHES[engine],
            "edgecolor": "black", "linewidth": 0.4, "label": f"{engine}, {t} thread{'s' * (t > 1)}"}


def draw_panel(plt, ax, column, labels, cells, thread_counts, scale):
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    """Bars per label: [mote, llama.cpp] per thread count, a small gap between thread counts."""
    series = [(engine, t) for t in thread_counts for engine in ("mote", "llama.cpp")]
    bar, gap = 0.76 / len(series), 0.04
    offsets = [k * bar + (k // 2) * gap for k in range(len(series))]
    middle = (offsets[0] + offsets[-1]) / 2
    values = []
    for k, (engine, t) in enumerate(series):
        xs, ys, ratios = [], [], []
        for j, label in enumerate(labels):
            pair = cells.get(label, {}).get(t)
            if pair is None:
                continue
            xs.append(j + offsets[k] - middle)
            ys.append(pair[0] if engine == "mote" else pair[1])
            ratios.append(pair[2])
        values += ys
        ax.bar(xs, ys, bar, **bar_style(plt, engine, thread_counts, t))
        if engine == "mote":
            for x, y, r in zip(xs, ys, ratios):
                ax.annotate(f"{r:.2f}x", (x, y), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7)
    if values and (scale == "log" or (scale == "auto" and max(values) > LOG_SCALE_SPAN * min(values))):
        ax.set_yscale("log")
        ax.set_ylim(min(values) / 1.5, max(values) * 1.4)  # room for the ratios above the bars
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(ScalarFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        column += ", log scale"
    elif values:
        ax.set_ylim(0, max(values) * 1.1)
    ax.set_title(panel_title(column), fontsize=10)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.set_axisbelow(True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("markdown", help="a markdown file holding the table (README.md)")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--after", help="take the first such table after the heading containing this text")
    parser.add_argument("--title", help="the run's date and host, as the text gives them (after `mote vs llama.cpp, tokens/s: `)")
    parser.add_argument("--panels", default="tg128,pp512", help="the columns to draw, one panel each")
    parser.add_argument("--threads", default="1,2", help="the thread count of each ` / ` part of a cell")
    parser.add_argument("--scale", choices=("auto", "log", "linear"), default="auto")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_side_by_side: needs matplotlib: apt-get install python3-matplotlib")
    panels = args.panels.split(",")
    labels, data, thread_counts = read_table(args.markdown, args.after, panels,
                                             [int(t) for t in args.threads.split(",")])
    if not labels:
        sys.exit(f"plot_side_by_side: {args.markdown}: the table has no rows")

    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8.0, 1.15 * len(labels) + 1.5), 3.6 * len(panels)),
                             sharex=True, squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        draw_panel(plt, ax, panel, labels, data[panel], thread_counts, args.scale)
    bottom = axes[-1, 0]
    bottom.set_xticks(range(len(labels)))
    bottom.set_xticklabels([textwrap.fill(label, 14, break_long_words=False)
                            for label in labels], fontsize=8)
    title = "mote vs llama.cpp, tokens/s: " + (args.title or args.markdown)
    fig.suptitle(textwrap.fill(title, int(8.5 * fig.get_figwidth())), fontsize=11)  # ~8.5 characters an inch
    from matplotlib.patches import Patch
    handles = [Patch(**bar_style(plt, engine, thread_counts, t))
               for t in thread_counts for engine in ("mote", "llama.cpp")]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), fontsize=8, frameon=False,
               title="the ratio above each mote bar: mote / llama.cpp tok/s", title_fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))  # the legend under the panels
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}: {len(labels)} rows, panels {', '.join(panels)}", file=sys.stderr)


if __name__ == "__main__":
    main()
