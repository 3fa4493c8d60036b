#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_plot_perf.sh <source dir>: tools/plot/plot_perf.py draws a tiny CSV as well-formed SVG with one
# line per series and one point per (series, size), the same bytes twice; and the figures of docs/perf
# are what the script makes from the committed data (docs/perf/figures.txt), every SVG in
# docs/perf/plots is listed there, and every listed one is shown by a page of docs/perf.
# Exit 77 (skipped) without python3.
set -u
src=$1
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
plot="python3 $src/tools/plot/plot_perf.py"
failed=0
fail() { echo "FAIL: $*"; failed=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/t.csv" <<'CSV'
# two series of three sizes; an empty cell, a size of 0 and a repeated point (median) on the second
collective,library,size_bytes,busbw_gbs
allreduce,Chorus,8,0.5
allreduce,Chorus,1024,2
allreduce,Chorus,1048576,40
allreduce,NVIDIA's NCCL,0,1
allreduce,NVIDIA's NCCL,8,0.4
allreduce,NVIDIA's NCCL,1024,
allreduce,NVIDIA's NCCL,1048576,30
allreduce,NVIDIA's NCCL,1048576,50
allgather,Chorus,8,9
CSV
for n in 1 2; do
  $plot "$tmp/t.csv" -o "$tmp/t$n.svg" where=collective=allreduce series=library dash=NVIDIA \
    title="a <tiny> test" ylabel="busbw (GB/s)" || fail "plot_perf.py exited $? on the tiny CSV"
done
cmp -s "$tmp/t1.svg" "$tmp/t2.svg" || fail "two runs on the same CSV wrote different bytes"
python3 - "$tmp/t1.svg" <<'PY' || fail "the tiny figure is not as expected (above)"
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
series = [g for g in root.iter(ns + "g") if g.get("class") == "series"]
names = [g.find(ns + "title").text for g in series]
assert names == ["Chorus", "NVIDIA's NCCL"], names
lines = [len(g.findall(ns + "polyline")) for g in series]
pts = [len([c for c in g.iter(ns + "circle") if c.get("class") == "pt"]) for g in series]
assert lines == [1, 1] and pts == [3, 2], (lines, pts)
# the repeated point is drawn at its median, 40, level with Chorus's 40
ys = [[c.get("cy") for c in g.iter(ns + "circle")] for g in series]
assert ys[0][2] == ys[1][1], ys
texts = [t.text for t in root.iter(ns + "text")]
assert "a <tiny> test" in texts and "busbw (GB/s)" in texts and "message size (bytes)" in texts, texts
PY
$plot "$tmp/t.csv" -o "$tmp/bad.svg" where=collective=reduce 2>/dev/null && fail "no matching rows was not an error"

# The committed figures.
spec=$src/docs/perf/figures.txt
$plot --check "$spec" || fail "docs/perf/plots differ from what docs/perf/figures.txt makes (above)"
listed=$($plot --list "$spec") || fail "cannot list $spec"
for f in "$src"/docs/perf/plots/*.svg; do
  [ -e "$f" ] || continue
  name=plots/$(basename "$f")
  printf '%s\n' "$listed" | grep -qx "$name" || fail "$name is not drawn by docs/perf/figures.txt"
done
for name in $listed; do
  grep -qF "($name)" "$src"/docs/perf/*.md || fail "no page of docs/perf shows $name"
done
[ $failed = 0 ] && echo "plot_perf: all checks passed"
exit $failed
