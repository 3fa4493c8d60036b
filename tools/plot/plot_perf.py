#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""plot_perf.py: line charts of performance data as SVG: a value (bus bandwidth, time) against the
message size on a log2 axis, one line per series, with axis labels, a legend and a title. Python 3's
standard library only (CI needs nothing more), and the output depends on the input alone: the same
CSV and spec give the same bytes, so the SVGs under docs/perf/plots are checked against their data.

  plot_perf.py SPEC                     write every figure SPEC lists
  plot_perf.py --check SPEC             draw every figure in memory; exit 1 naming each whose file
                                        differs or is missing (tests/unit/test_plot_perf.sh)
  plot_perf.py --list SPEC              print the output path of every figure, one a line
  plot_perf.py CSV -o OUT.svg [KEY=VALUE ...]
                                        one figure; the keys are a spec line's (below)

Data: CSV with a header line and one row per point; a line starting with '#' is a comment (say there
where the numbers come from and how they were measured). One column must be size_bytes (an integer;
rows with a size of 0 are left out, a log axis has no place for them); the others are free. A figure
keeps the rows whose columns match `where`, names its lines by the `series` columns and plots the
numeric column `y`; an empty y cell is no point. Rows of one series with the same size are combined
by `agg` (median by default), so a file may hold every repetition of a run.

Spec: one figure per line, KEY=VALUE words (quoted as in a shell), '#' starts a comment line. Paths are
relative to the spec's folder.
  out=PATH        the SVG to write (required)
  data=PATH       the CSV to read (required)
  where=C=V,...   keep rows whose column C is V (V1|V2: one of them); every condition must hold
  series=C[,C2]   a line per distinct value (values of several columns joined by ', '); default series
  y=C             the column plotted; default busbw_gbs
  ylog=1          a log10 y axis (times over many decades); default linear from 0
  xmin=S xmax=S   sizes kept, as 8, 64K, 2M, 1G (powers of 1024)
  agg=F           median, mean, min or max
  dash=A|B        series whose name contains A or B are drawn dashed (the library compared against)
  title=T ylabel=T xlabel=T   the texts; xlabel defaults to "message size (bytes)"
Lines are drawn and listed in the order their series first appear in the CSV.
"""
import csv
import io
import math
import os
import shlex
import statistics
import sys
from xml.sax.saxutils import escape

# Okabe-Ito colours (told apart with most colour-vision deficiencies), then grey.
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999"]
WIDTH = 720
LEFT, RIGHT, TOP = 72, 24, 46
PLOT_H = 300
CHAR_W = 6.6  # mean advance of a 12 px sans-serif character, for laying out the legend
KEYS = {"out", "data", "where", "series", "y", "ylog", "xmin", "xmax", "agg", "dash", "title", "ylabel",
        "xlabel"}


class PlotError(Exception):
    pass


def parse_size(text):
    t = text.strip().upper().rstrip("B").rstrip("I")
    mult = 1
    if t and t[-1] in "KMG":
        mult = 1024 ** ("KMG".index(t[-1]) + 1)
        t = t[:-1]
    try:
        return int(float(t) * mult)
    except ValueError:
        raise PlotError("not a size: %r" % text) from None


def size_label(exp):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    return "%d %s" % (2 ** (exp % 10), units[exp // 10])


def num(v):
    """A coordinate or value as short, fixed text: the same float always prints the same."""
    s = "%.1f" % v
    return "0.0" if s == "-0.0" else s


def tick_text(v):
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-3:
        return "%.0e" % v
    s = ("%.3f" % v).rstrip("0").rstrip(".")
    return s


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        lines = [ln for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    rows = list(csv.DictReader(io.StringIO("".join(lines))))
    if not rows:
        raise PlotError("%s: no data rows" % path)
    if "size_bytes" not in rows[0]:
        raise PlotError("%s: no column size_bytes" % path)
    return rows


def parse_where(text):
    conds = []
    for part in filter(None, (text or "").split(",")):
        if "=" not in part:
            raise PlotError("where: %r is not COLUMN=VALUE" % part)
        col, vals = part.split("=", 1)
        conds.append((col.strip(), set(vals.split("|"))))
    return conds


def select(rows, fig, path):
    conds = parse_where(fig.get("where"))
    series_cols = [c.strip() for c in fig.get("series", "series").split(",")]
    ycol = fig.get("y", "busbw_gbs")
    for col in [c for c, _ in conds] + series_cols + [ycol]:
        if col not in rows[0]:
            raise PlotError("%s: no column %s" % (path, col))
    xmin = parse_size(fig["xmin"]) if "xmin" in fig else None
    xmax = parse_size(fig["xmax"]) if "xmax" in fig else None
    ylog = fig.get("ylog", "0") not in ("0", "")
    series = {}  # name -> {size: [values]}; dicts keep the order of first appearance
    for r in rows:
        if any(r[c] not in vals for c, vals in conds):
            continue
        yv = (r[ycol] or "").strip()
        if not yv:
            continue
        try:
            size = int(r["size_bytes"])
            y = float(yv)
        except ValueError:
            raise PlotError("%s: bad number in row %r" % (path, r)) from None
        if size <= 0 or (xmin is not None and size < xmin) or (xmax is not None and size > xmax):
            continue
        if ylog and y <= 0:
            continue
        name = ", ".join(r[c] for c in series_cols)
        series.setdefault(name, {}).setdefault(size, []).append(y)
    agg = {"median": statistics.median, "mean": statistics.fmean, "min": min, "max": max}.get(
        fig.get("agg", "median"))
    if agg is None:
        raise PlotError("agg must be median, mean, min or max")
    out = [(name, sorted((s, agg(v)) for s, v in pts.items())) for name, pts in series.items()]
    if not out:
        raise PlotError("%s: no rows match %s" % (path, fig.get("where", "(all)")))
    return out


def nice_step(span, most):
    raw = span / most
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def legend_rows(names, width):
    rows, row, used = [], [], 0.0
    for i, name in enumerate(names):
        w = 34 + CHAR_W * len(name) + 18
        if row and used + w > width:
            rows.append(row)
            row, used = [], 0.0
        row.append((i, name, used))
        used += w
    if row:
        rows.append(row)
    return rows


def render(fig, series, source):
    ylog = fig.get("ylog", "0") not in ("0", "")
    plot_w = WIDTH - LEFT - RIGHT
    names = [n for n, _ in series]
    leg = legend_rows(names, plot_w)
    height = TOP + PLOT_H + 52 + 20 * len(leg) + 8
    sizes = [s for _, pts in series for s, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    emin = math.floor(math.log2(min(sizes)))
    emax = math.ceil(math.log2(max(sizes)))
    if emax == emin:
        emin, emax = emin - 1, emax + 1
    xstep = 1
    while (emax - emin) / xstep > 11:
        xstep += 1

    def fx(size):
        return LEFT + (math.log2(size) - emin) / (emax - emin) * plot_w

    if ylog:
        dmin = math.floor(math.log10(min(ys)))
        dmax = math.ceil(math.log10(max(ys)))
        if dmax == dmin:
            dmax += 1
        yticks = [10.0 ** d for d in range(dmin, dmax + 1)]
        yminor = [m * 10.0 ** d for d in range(dmin, dmax) for m in (2, 5)]
        if dmax - dmin <= 2:
            yticks = sorted(yticks + yminor)
            yminor = []

        def fy(v):
            return TOP + PLOT_H - (math.log10(v) - dmin) / (dmax - dmin) * PLOT_H
    else:
        top = max(ys) if max(ys) > 0 else 1.0
        step = nice_step(top, 6)
        ymax = math.ceil(top / step - 1e-9) * step
        yticks = [i * step for i in range(int(round(ymax / step)) + 1)]
        yminor = []

        def fy(v):
            return TOP + PLOT_H - v / ymax * PLOT_H

    o = []
    o.append('<?xml version="1.0" encoding="UTF-8"?>')
    o.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
             'font-family="sans-serif" font-size="12">' % (WIDTH, height, WIDTH, height))
    o.append("<desc>%s</desc>" % escape("Drawn by tools/plot/plot_perf.py from %s (%s)" % (
        source, " ".join("%s=%s" % (k, fig[k]) for k in sorted(fig) if k not in ("out", "data", "title")))))
    o.append('<rect width="%d" height="%d" fill="#ffffff"/>' % (WIDTH, height))
    o.append('<text x="%s" y="24" text-anchor="middle" font-size="15" font-weight="bold">%s</text>' % (
        num(LEFT + plot_w / 2), escape(fig.get("title", ""))))
    # Grid and ticks.
    o.append('<g stroke="#dddddd" stroke-width="1">')
    for e in range(emin, emax + 1):
        if (e - emin) % xstep == 0:
            o.append('<line x1="%s" y1="%d" x2="%s" y2="%d"/>' % (num(fx(2 ** e)), TOP, num(fx(2 ** e)),
                                                                 TOP + PLOT_H))
    for v in yticks:
        o.append('<line x1="%d" y1="%s" x2="%d" y2="%s"/>' % (LEFT, num(fy(v)), LEFT + plot_w, num(fy(v))))
    for v in yminor:
        o.append('<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#f0f0f0"/>' % (LEFT, num(fy(v)), LEFT + plot_w,
                                                                         num(fy(v))))
    o.append("</g>")
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333333"/>' % (
        LEFT, TOP, plot_w, PLOT_H))
    o.append('<g text-anchor="middle">')
    for e in range(emin, emax + 1):
        if (e - emin) % xstep == 0:
            o.append('<text x="%s" y="%d">%s</text>' % (num(fx(2 ** e)), TOP + PLOT_H + 16, size_label(e)))
    o.append('<text x="%s" y="%d">%s</text>' % (num(LEFT + plot_w / 2), TOP + PLOT_H + 36,
                                                escape(fig.get("xlabel", "message size (bytes)"))))
    o.append("</g>")
    o.append('<g text-anchor="end">')
    for v in yticks:
        o.append('<text x="%d" y="%s">%s</text>' % (LEFT - 6, num(fy(v) + 4), tick_text(v)))
    o.append("</g>")
    o.append('<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>' % (
        num(TOP + PLOT_H / 2), num(TOP + PLOT_H / 2), escape(fig.get("ylabel", fig.get("y", "busbw_gbs")))))
    # The lines, then their points.
    dashed = [d for d in fig.get("dash", "").split("|") if d]
    for i, (name, pts) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="7 4"' if any(d in name for d in dashed) else ""
        o.append('<g class="series" stroke="%s" fill="%s">' % (colour, colour))
        o.append("<title>%s</title>" % escape(name))
        o.append('<polyline class="line" fill="none" stroke-width="2"%s points="%s"/>' % (
            dash, " ".join("%s,%s" % (num(fx(s)), num(fy(y))) for s, y in pts)))
        for s, y in pts:
            o.append('<circle class="pt" cx="%s" cy="%s" r="2.5"/>' % (num(fx(s)), num(fy(y))))
        o.append("</g>")
    # The legend, under the axis label.
    y0 = TOP + PLOT_H + 58
    for r, row in enumerate(leg):
        for i, name, x in row:
            colour = COLOURS[i % len(COLOURS)]
            dash = ' stroke-dasharray="7 4"' if any(d in name for d in dashed) else ""
            ly = y0 + 20 * r
            lx = LEFT + x
            o.append('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="2"%s/>' % (
                num(lx), ly - 4, num(lx + 26), ly - 4, colour, dash))
            o.append('<text x="%s" y="%d">%s</text>' % (num(lx + 32), ly, escape(name)))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def draw(fig, base):
    for k in fig:
        if k not in KEYS:
            raise PlotError("unknown key %s (known: %s)" % (k, ", ".join(sorted(KEYS))))
    for k in ("out", "data"):
        if k not in fig:
            raise PlotError("a figure needs %s=" % k)
    path = os.path.join(base, fig["data"])
    return render(fig, select(read_csv(path), fig, fig["data"]), fig["data"])


def read_spec(path):
    figs = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fig = {}
            for word in shlex.split(line):
                if "=" not in word:
                    raise PlotError("%s:%d: %r is not KEY=VALUE" % (path, n, word))
                k, v = word.split("=", 1)
                fig[k] = v
            figs.append((n, fig))
    return figs


def main(argv):
    args = argv[1:]
    try:
        if args and args[0] in ("--check", "--list") and len(args) == 2:
            mode, spec = args[0][2:], args[1]
        elif len(args) == 1 and not args[0].startswith("-"):
            mode, spec = "write", args[0]
        elif len(args) >= 3 and args[1] == "-o":
            fig = dict(a.split("=", 1) for a in args[3:] if "=" in a)
            if len(fig) != len(args) - 3:
                raise PlotError("arguments after -o OUT must be KEY=VALUE")
            fig["data"], fig["out"] = args[0], args[2]
            svg = draw(fig, "")
            with open(args[2], "w", encoding="utf-8", newline="\n") as f:
                f.write(svg)
            return 0
        else:
            sys.stderr.write(__doc__)
            return 2
        base = os.path.dirname(os.path.abspath(spec))
        bad = 0
        for n, fig in read_spec(spec):
            if mode == "list":
                print(fig.get("out", ""))
                continue
            try:
                svg = draw(fig, base)
            except PlotError as e:
                raise PlotError("%s:%d: %s" % (spec, n, e)) from None
            out = os.path.join(base, fig["out"])
            if mode == "write":
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(out, "w", encoding="utf-8", newline="\n") as f:
                    f.write(svg)
            else:
                try:
                    with open(out, encoding="utf-8", newline="") as f:
                        same = f.read() == svg
                except FileNotFoundError:
                    same = False
                if not same:
                    print("%s: differs from what %s makes (run: tools/plot/plot_perf.py %s)" % (
                        fig["out"], fig["data"], spec))
                    bad += 1
        return 1 if bad else 0
    except (PlotError, OSError) as e:
        sys.stderr.write("plot_perf.py: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
