#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run_gpus.sh: the runs that need several GPUs of one host (nvidia-h200-x2 for the 2-GPU issue,
# -x4 / -x8 for the scaling run), in as few device calls as will do. Build as run_on_device.sh does
# (device_build.sh), then the steps STEPS names (default all four; each has its own time limit, and
# a call's 10 minutes hold about two of them). RANKS (default: the GPUs present, at least 2): one
# rank per GPU. ALGOS (default "default"): also "RING" and "TREE", NCCL_ALGO forced on both
# libraries in the side-by-side runs (PERF_COLLS_RING / PERF_COLLS_TREE: the collectives for each).
#
#   tests    ctest -R '^gpu\.' (TESTS_REGEX): the one-GPU tests on GPU 0, and gpu.x2.*: the public-API cases with
#            ranks alternating between two GPUs, in one process (peer access) and one process per
#            rank (CUDA IPC), graph capture, abort, a killed peer; with RANKS > 2 the same programs
#            on RANKS GPUs (one process, one thread per rank, one process per rank); then
#            test_gpu_nccl_nvabi (compiled against NVIDIA's nccl.h) run on NVIDIA's own library
#            on the GPUs, which shows the cases are NCCL's semantics and not Chorus's
#   torch    tests/gpu/torch_ops.py and torch_ddp.py, 2 ranks on 2 GPUs (whatever RANKS), both communicator modes,
#            torch_ops.py again with PyTorch's expandable segments (torch_ops.expandable-<lib>.txt),
#            once on Chorus (preloaded) and once on the image's NVIDIA NCCL; ddp-*.json hold the
#            loss trajectories, ddp-side.md puts them side by side; TORCH_LIBS (default "chorus nvidia") and
#            TORCH_SCRIPTS (default "torch_ops torch_ddp torch_ops.expandable") pick fewer
#   side     chorus-perf built once, run on Chorus and on NVIDIA's libnccl.so.2 (LD_LIBRARY_PATH)
#            in the same command: PERF_COLLS (default all seven), float, SIDE_MIN (8) .. PERF_MAX (8G),
#            one process with RANKS GPUs (-t, SIDE_MODES "thr") and RANKS processes (-np, "proc"; default
#            both), for each of ALGOS; side.md via tools/bench/gpu_side.py. Checked up to 64 MB; larger
#            sizes are timed only (SIDE_SWEEPS, default "small large": which of the two ranges run);
#            SIDE_MEM (cuda): chorus-perf -M, "vmm" for buffers laid out as PyTorch's expandable segments
#            (with SIDE_MODES=proc); SIDE_TYPE (float): the datatype, any of chorus-perf -d's (files tagged .<type> unless float);
#            SIDE_OP (sum): the reduction, any of chorus-perf -o's (tagged .<op> unless sum); the large
#            range: SIDE_LARGE_MIN (128M) .. PERF_MAX, SIDE_LARGE_ITERS (5) timed iterations, checked
#            SIDE_LARGE_CHECK (0) times; SIDE_LIBS (default "chorus nvidia"): the libraries run
#   knobs    Chorus alone, each of KNOBS_COLL (all-reduce) in one process (-t RANKS): KNOBS_MID_SIZES (64K 64M)
#            checked for each setting of KNOBS_MID, 32 MB .. KNOBS_BIG_MAX (1G) timed for each of KNOBS_BIG (a
#            setting: "default" or NAME=VALUE,NAME=VALUE for the environment; defaults: the planner parameters
#            CHORUS_GPU_* one at a time around their defaults; KNOBS_MID_<coll> / KNOBS_BIG_<coll> replace
#            them for one collective): knobs.md, time per size and setting
#   graph    as side, with each size's timed iterations captured into one CUDA graph and launched
#            GRAPH_LAUNCHES (10) times (chorus-perf -G): the GPU's time per operation without the
#            per-call launch cost, for GRAPH_COLLS (allreduce) from 8 B to GRAPH_MAX (1M), checked,
#            both process layouts: graph/side-*.json, graph.md
#   onegpu   the one-GPU table's rows on GPU 0 alone (CUDA_VISIBLE_DEVICES=0, 2 ranks on it, as
#            run_on_device.sh's perf step): chorus-gpu-ceiling, then chorus-perf -t 2 for ONEGPU_COLLS
#            (default reducescatter; empty: the ceiling alone) from ONEGPU_MIN (2G) to ONEGPU_MAX (8G), timed only:
#            onegpu-ceiling.txt and perf-<coll>-big.json for tools/bench/gpu_table.py
#   ceprobe  chorus-ce-probe: the copy-engine send design prototyped between two processes on GPUs 0
#            and 1, beside plain copies, both ways (IPC-event and stream-value signals), one way, and
#            as two threads of one process (ce-probe-*.txt; CEPROBE_MIN, CEPROBE_MAX; CEPROBE_RUNS:
#            "oneway signal threads issuer;..." to pick the runs)
#   vmmprobe chorus-vmm-probe: cuMemCreate memory (laid out as PyTorch's expandable segments) shared by
#            file descriptor with a process on GPU 0 and one on GPU 1: the driver's answers and every
#            byte checked (vmm-probe-peer<dev>.txt); then what PyTorch's expandable segments answer the
#            same questions (torch-vmm-handles.txt)
#   plugins  NVIDIA's NCCL with its p2p and shm transports off, so traffic crosses a net plugin:
#            its built-in socket transport and our libnccl-net-socket.so at NSOCKS settings
#            1/1 2/2 4/4 8/2, and our net_ofi on tcp;ofi_rxm (built there, or OFI_PLUGIN: a prebuilt
#            libnccl-net-chorus-ofi.so, path absolute or from the tree's root, e.g. carried); then our tuner
#            forcing NCCL's algorithm and our profiler recording its collectives (plugins.txt);
#            PLUGIN_PARTS (default "socket ofi tuner profiler") picks which of the four run, SOCKET_SETTINGS
#            (default "1x1 2x2 4x4 8x2") the socket runs
#
#   STEPS="tests torch" OUT=$OUT/a tests/gpu/run_gpus.sh     (from anywhere; tar $OUT afterwards:
#   the device tool brings back few files)
#   RANKS=8 ALGOS="default RING TREE" STEPS=side PERF_COLLS="allreduce alltoall" tests/gpu/run_gpus.sh
# NCCL_NVLS_ENABLE=0 everywhere (NVLink multicast can take the shared host's GPUs out of service).
set -uo pipefail
source "$(dirname "$0")/device_build.sh"
export NCCL_NVLS_ENABLE=0
# Several ranks share a GPU here on purpose; without this, init refuses it as NCCL does.
export CHORUS_SHARED_GPU=${CHORUS_SHARED_GPU:-1}

STEPS=${STEPS:-tests torch side plugins}
want() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU" || true)
RANKS=${RANKS:-$([ "$NGPU" -ge 2 ] && echo "$NGPU" || echo 2)}
ALGOS=${ALGOS:-default}
note "GPUs: $NGPU; ranks: $RANKS; algorithms: $ALGOS"
[ "$NGPU" -ge 2 ] || note "WARNING: fewer than 2 GPUs; the gpu.x2.* tests will skip and the rest run on one"
nvidia-smi topo -m >"$OUT/topo.txt" 2>&1 || true

# NVIDIA's library: the Python wheel's folder (the system folder holds the same version).
NVDIR=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$NVDIR" ] && [ -e "$NVDIR/libnccl.so.2" ] || NVDIR=$(dirname "$(ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}')")
note "NVIDIA NCCL: $NVDIR/libnccl.so.2"
PERF=$BUILD/bin/chorus-perf
# Which libnccl.so.2 a program binds, with the environment it will run with.
bound() { env "$@" ldd "$PERF" | awk '/libnccl.so.2/{print $3}'; }
CH_LIB=$(bound)
NV_LIB=$(bound LD_LIBRARY_PATH="$NVDIR")
note "chorus-perf binds $CH_LIB (Chorus) and, with LD_LIBRARY_PATH=$NVDIR, $NV_LIB (NVIDIA)"
case "$CH_LIB" in "$BUILD"/*) ;; *) note "ERROR: chorus-perf does not bind Chorus's library"; exit 1 ;; esac
case "$NV_LIB" in "$NVDIR"/*) ;; *) note "ERROR: LD_LIBRARY_PATH does not make chorus-perf bind NVIDIA's library"; exit 1 ;; esac
RC=0

section "tests (2 GPUs)"
if want tests; then
  (cd "$BUILD" && timeout 420 ctest -R "${TESTS_REGEX:-^gpu\.}" -V --timeout 150) >"$OUT/ctest.log" 2>&1
  rc=$?
  grep -E "tests passed|tests failed|\*\*\*Skipped|\*\*\*Failed|\*\*\*Timeout|gpu.colls n=|gpu.nccl |gpu.procs |after the abort" \
    "$OUT/ctest.log" | head -60 | tee -a "$SUMMARY"
  note "gpu tests: exit $rc"
  [ $rc = 0 ] || RC=1
  if [ "$RANKS" -gt 2 ]; then # one rank per GPU on all of them
    # the last: every all-reduce on the tree (its copies over the point-to-point lanes)
    for t in "test_gpu_nccl initall" "test_gpu_nccl threads" "test_gpu_procs colls" "test_gpu_procs kill" \
      "test_gpu_nccl initall NCCL_ALGO=allreduce:tree"; do
      set -- $t
      f=$OUT/$1-$2-$RANKS${3:+-tree}.txt
      env ${3:-} CHORUS_TEST_GPUS=$RANKS timeout 200 "$BUILD/bin/$1" "$2" "$RANKS" >"$f" 2>&1
      rc=$?
      note "$1 $2 $RANKS on $RANKS GPUs${3:+ ($3)}: exit $rc ($(tail -1 "$f" | cut -c1-150))"
      [ $rc = 0 ] || RC=1
    done
  fi
  NVABI=$BUILD/bin/test_gpu_nccl_nvabi
  if [ -x "$NVABI" ]; then
    for mode in initall threads; do
      LD_LIBRARY_PATH=$NVDIR CHORUS_TEST_GPUS=$RANKS NCCL_DEBUG=VERSION timeout 150 "$NVABI" $mode "$RANKS" \
        >"$OUT/nvabi-nvidia-$mode.txt" 2>&1
      note "cases on NVIDIA's NCCL, $mode, $RANKS GPUs: exit $? ($(grep -E "NCCL version|gpu.nccl" "$OUT/nvabi-nvidia-$mode.txt" | tr '\n' ' '))"
    done
  fi
fi

section "PyTorch: Chorus and NVIDIA's NCCL, 2 GPUs"
if want torch && python3 -c "import torch" 2>/dev/null; then
  for lib in ${TORCH_LIBS:-chorus nvidia}; do
    pre=()
    [ $lib = chorus ] && pre=(LD_PRELOAD="$BUILD/lib/libnccl.so.2")
    # torch_ops a second time with expandable segments (cuMemCreate memory, which CUDA IPC cannot share)
    for script in ${TORCH_SCRIPTS:-torch_ops torch_ddp torch_ops.expandable}; do
      alloc=()
      [ $script = torch_ops.expandable ] && alloc=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
      # torch_ops gives each process 60 s (CHORUS_TEST_TORCH_TIMEOUT) and kills it; a hang then costs
      # minutes, not the call, and no process is left holding PyTorch's port for the next script
      env "${pre[@]}" "${alloc[@]}" CHORUS_TEST_GPUS=2 CHORUS_TEST_TORCH_LABEL=$lib CHORUS_TEST_TORCH_JSON="$OUT/ddp-$lib.json" \
        CHORUS_TEST_TORCH_TIMEOUT=60 NCCL_DEBUG=VERSION timeout 280 python3 "$ROOT/tests/gpu/${script%.expandable}.py" \
        >"$OUT/$script-$lib.txt" 2>&1
      rc=$?
      pkill -9 -f "multiprocessing.spawn" 2>/dev/null
      note "$script on $lib: exit $rc ($(tail -1 "$OUT/$script-$lib.txt")); library: $(grep -m1 -iE "chorus|NCCL version" "$OUT/$script-$lib.txt" | cut -c1-120)"
      [ $rc = 0 ] || RC=1
    done
  done
  python3 - "$OUT" >"$OUT/ddp-side.md" <<'EOF'
import json, sys, os
out = sys.argv[1]
cols = {}
for lib in ("chorus", "nvidia"):
    try:
        cols.update(json.load(open(os.path.join(out, f"ddp-{lib}.json"))))
    except (OSError, ValueError):
        pass
names = ["gloo"] + [n for n in cols if n != "gloo"]
print("| step | " + " | ".join(names) + " |")
print("|---:|" + "---:|" * len(names))
steps = max((len(v) for v in cols.values() if v), default=0)
for s in range(steps):
    print(f"| {s} | " + " | ".join(f"{cols[n][s]:.6f}" if cols.get(n) else "-" for n in names) + " |")
EOF
  note "DDP trajectories side by side: $OUT/ddp-side.md"
elif want torch; then
  note "torch: python3 cannot import torch here"
fi

# One side-by-side run: chorus-perf with GPU buffers on `lib` (chorus, or nvidia through
# LD_LIBRARY_PATH) with `mode`'s ranks (thr: -t RANKS; proc: -np RANKS), the environment settings
# given before "--" and chorus-perf's arguments after it; writes FILE.txt and FILE.json and puts the
# run's check line, labelled, in the summary.
#   sidePerf LABEL FILE LIB MODE [NAME=VALUE ...] -- PERF-ARGS...
sidePerf() {
  local label=$1 f=$2 lib=$3 mode=$4 envs=() ranks=(-t "$RANKS")
  shift 4
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  [ "$mode" = proc ] && ranks=(-np "$RANKS" -T 240)
  [ "$lib" = nvidia ] && envs+=(LD_LIBRARY_PATH="$NVDIR")
  env "${envs[@]}" timeout 250 "$PERF" "${ranks[@]}" -M "${SIDE_MEM:-cuda}" "$@" -q -J "$f.json" >"$f.txt" 2>&1 ||
    note "$label: FAILED ($(tail -1 "$f.txt"))"
  grep -h "Out of bounds" "$f.txt" | sed "s/^/$label: /" >>"$SUMMARY"
}

section "side by side: chorus-perf on Chorus and on NVIDIA's NCCL"
if want side; then
  PERF_MAX=${PERF_MAX:-8G}
  for algo in $ALGOS; do
    algoenv=()
    tag=
    [ "$algo" = default ] || { algoenv=(NCCL_ALGO="$algo"); tag=.$(echo "$algo" | tr 'A-Z' 'a-z'); }
    typeargs=()
    [ "${SIDE_TYPE:-float}" = float ] || { typeargs=(-d "$SIDE_TYPE"); tag=$tag.$SIDE_TYPE; }
    [ "${SIDE_OP:-sum}" = sum ] || { typeargs+=(-o "$SIDE_OP"); tag=$tag.$SIDE_OP; }
    colls=${PERF_COLLS:-allreduce allgather reducescatter broadcast reduce alltoall sendrecv}
    # PERF_COLLS_RING / PERF_COLLS_TREE: the collectives for a forced algorithm (only all-reduce has
    # a tree; both libraries run the others on the ring under NCCL_ALGO=TREE)
    over=PERF_COLLS_$algo
    [ "$algo" = default ] || colls=${!over:-$colls}
    for coll in $colls; do
      for mode in ${SIDE_MODES:-thr proc}; do
        for lib in ${SIDE_LIBS:-chorus nvidia}; do
          for sweep in "small ${SIDE_MIN:-8} 64M 20 3 1" \
            "large ${SIDE_LARGE_MIN:-128M} $PERF_MAX ${SIDE_LARGE_ITERS:-5} 1 ${SIDE_LARGE_CHECK:-0}"; do
            set -- $sweep
            case " ${SIDE_SWEEPS:-small large} " in *" $1 "*) ;; *) continue ;; esac
            sidePerf "$lib $mode$tag $coll $1" "$OUT/side-$lib-$mode$tag-$coll-$1" $lib $mode "${algoenv[@]}" -- \
              "$coll" -b "$2" -e "$3" -f 2 -n "$4" -w "$5" -c "$6" "${typeargs[@]}"
          done
        done
      done
    done
  done
  python3 "$ROOT/tools/bench/gpu_side.py" "$OUT" >"$OUT/side.md" 2>&1
  note "side-by-side tables: $OUT/side.md"
fi

section "side by side under CUDA graphs"
if want graph; then
  mkdir -p "$OUT/graph"
  for coll in ${GRAPH_COLLS:-allreduce}; do
    for mode in thr proc; do
      for lib in chorus nvidia; do
        sidePerf "graph $lib $mode $coll" "$OUT/graph/side-$lib-$mode-$coll-small" $lib $mode -- \
          "$coll" -b 8 -e "${GRAPH_MAX:-1M}" -f 2 -n 20 -w 3 -c 1 -G "${GRAPH_LAUNCHES:-10}"
      done
    done
  done
  python3 "$ROOT/tools/bench/gpu_side.py" "$OUT/graph" >"$OUT/graph.md" 2>&1
  note "side-by-side tables under CUDA graphs: $OUT/graph.md"
fi

section "one-GPU rows (GPU 0)"
if want onegpu; then
  CUDA_VISIBLE_DEVICES=0 timeout 60 "$BUILD/bin/chorus-gpu-ceiling" >"$OUT/onegpu-ceiling.txt" 2>&1 ||
    note "onegpu: chorus-gpu-ceiling FAILED"
  for coll in ${ONEGPU_COLLS-reducescatter}; do
    CUDA_VISIBLE_DEVICES=0 timeout 240 "$PERF" -t 2 -M cuda "$coll" -b "${ONEGPU_MIN:-2G}" -e "${ONEGPU_MAX:-8G}" -f 2 \
      -n 3 -w 1 -c 0 -q -J "$OUT/perf-$coll-big.json" >"$OUT/perf-$coll-big.txt" 2>&1 ||
      note "onegpu $coll: FAILED ($(tail -1 "$OUT/perf-$coll-big.txt"))"
  done
  note "one-GPU rows: $(ls "$OUT"/perf-*-big.json 2>/dev/null | tr '\n' ' ')"
fi

section "copy-engine sends, prototype (GPUs 0 and 1)"
if want ceprobe; then
  # chorus-ce-probe (tools/gpu/ce_probe.cu): the design of docs/perf/gpu-2gpu.md "Next" 0 between two
  # processes, beside the copy engine's plain rate, CEPROBE_MIN (64M) .. CEPROBE_MAX (8G)
  # both directions at once (send/recv's traffic) with each of the two signals, one way (a 2-rank
  # broadcast's), and the two ranks as threads of one process
  # CEPROBE_RUNS: "oneway signal threads issuer [beside [mixed]]" per run (issuer: second, sender,
  # receiver or agent; beside 1: also a copy kernel alone and beside the engine's pushes; mixed P: also
  # the SMs pushing P% into the peer while the engine pushes the rest, against the SMs alone)
  IFS=';' read -ra CE_RUNS <<<"${CEPROBE_RUNS:-0 value 0 agent 1;0 event 0 agent;1 value 0 agent;0 value 1 agent;0 value 0 second;0 value 1 second}"
  for run in "${CE_RUNS[@]}"; do
    set -- $run
    f=$OUT/ce-probe-oneway$1-$2-threads$3-$4${5:+-beside$5}${6:+-mixed$6}.txt
    timeout 120 "$BUILD/bin/chorus-ce-probe" --min "${CEPROBE_MIN:-64M}" --max "${CEPROBE_MAX:-8G}" --iters 5 \
      --oneway $1 --signal $2 --threads $3 --issuer $4 --beside "${5:-0}" --mixed "${6:-0}" >"$f" 2>&1 ||
      note "ceprobe $run: FAILED ($(tail -1 "$f"))"
    grep -h "wrong" "$f" | sed "s/^/ceprobe oneway=$1 signal=$2 threads=$3 issuer=$4: /" >>"$SUMMARY"
  done
fi

section "cuMemCreate memory shared by file descriptor"
if want vmmprobe; then
  for dev in 0 1; do
    [ "$dev" -lt "$NGPU" ] || continue
    f=$OUT/vmm-probe-peer$dev.txt
    timeout 120 "$BUILD/bin/chorus-vmm-probe" --peer-dev $dev >"$f" 2>&1
    note "vmmprobe, importer on GPU $dev: exit $? ($(tail -1 "$f"))"
  done
  if python3 -c "import torch" 2>/dev/null; then # what PyTorch's expandable segments answer
    timeout 120 python3 "$ROOT/tests/gpu/torch_vmm_handles.py" >"$OUT/torch-vmm-handles.txt" 2>&1
    note "torch_vmm_handles.py: exit $?"
  fi
fi

section "planner knobs (Chorus)"
if want knobs; then
  # A setting: "default", or comma-separated NAME=VALUE pairs for the environment. KNOBS_MID run
  # 64 KB .. 64 MB, checked; KNOBS_BIG 32 MB .. 1 GB, timed only. knobs-<n>.json, knobs-<n>.env.
  G=CHORUS_GPU_
  KNOBS_MID=${KNOBS_MID-"default ${G}MAX_CHANNELS=32 ${G}RING_LOOPS=2"}
  KNOBS_BIG=${KNOBS_BIG-"default ${G}MAX_CHANNELS=32 ${G}BUFFSIZE=1048576"}
  i=0
  for coll in ${KNOBS_COLL:-allreduce}; do
    for range in mid big; do
      over=KNOBS_${range^^}_$coll
      if [ $range = mid ]; then set -- ${KNOBS_MID_SIZES:-64K 64M} 20 3 1 ${!over-$KNOBS_MID}
      else set -- 32M "${KNOBS_BIG_MAX:-1G}" 10 2 0 ${!over-$KNOBS_BIG}; fi
      b=$1 e=$2 n=$3 w=$4 c=$5
      shift 5
      for k in "$@"; do
        i=$((i + 1))
        envs=()
        [ "$k" = default ] || IFS=, read -r -a envs <<<"$k"
        echo "$coll $range $k" >"$OUT/knobs-$i.env"
        env "${envs[@]}" timeout 150 "$PERF" -t "$RANKS" -M cuda "$coll" -b $b -e $e -f 2 -n $n -w $w -c $c -q \
          -J "$OUT/knobs-$i.json" >"$OUT/knobs-$i.txt" 2>&1 || note "knobs $coll $range $k: FAILED ($(tail -1 "$OUT/knobs-$i.txt"))"
        grep -h "Out of bounds" "$OUT/knobs-$i.txt" | sed "s/^/knobs $coll $range $k: /" >>"$SUMMARY"
      done
    done
  done
  python3 - "$OUT" >"$OUT/knobs.md" <<'EOF2'
import glob, json, os, re, sys
tables = {}
paths = glob.glob(os.path.join(sys.argv[1], "knobs-*.json"))
for path in sorted(paths, key=lambda p: int(re.findall(r"(\d+)\.json$", p)[0])):
    try:
        d = json.load(open(path))
        coll, rng, name = open(path[:-len(".json")] + ".env").read().split(None, 2)
    except (OSError, ValueError):
        continue
    tables.setdefault((coll, rng), {})[name.strip().replace("CHORUS_GPU_", "")] = {
        r["size"]: r["out_of_place"]["time"] for r in d["results"]}
for (coll, rng), runs in tables.items():
    names = list(runs)
    print(f"{coll} time (µs, out of place), {rng} sizes, per planner setting\n")
    print("| size | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for size in sorted({s for v in runs.values() for s in v}):
        label = f"{size >> 10} K" if size >= 1024 else f"{size} B"
        print(f"| {label} | " + " | ".join(f"{runs[n][size]:.1f}" if size in runs[n] else "-" for n in names) + " |")
    print()
EOF2
  note "planner knobs: $OUT/knobs.md"
fi

section "our plugins inside NVIDIA's NCCL"
if want plugins; then
  P=$OUT/plugins.txt
  : >"$P"
  nv() { # label, then the environment; all-reduce 1 MB .. 256 MB over the net, checked
    local label=$1
    shift
    echo "== $label" >>"$P"
    env LD_LIBRARY_PATH="$NVDIR" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO \
      NCCL_DEBUG_SUBSYS=INIT,NET,TUNING \
      "$@" timeout 120 "$PERF" -np 2 -T 110 -M cuda allreduce -b 1M -e 256M -f 4 -n 10 -w 2 -c 1 >"$OUT/pl.tmp" 2>&1
    echo "exit $?" >>"$P"
    grep -E "NET/|Using network|net plugin|Tuner|TUNER|tuner|Profiler|PROFILER|Out of bounds|^ +[0-9]+ " "$OUT/pl.tmp" |
      grep -vE "NCCL INFO (cudaDriverVersion|Bootstrap)" | head -40 >>"$P"
  }
  part() { case " ${PLUGIN_PARTS:-socket ofi tuner profiler} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
  for nt in ${SOCKET_SETTINGS:-1x1 2x2 4x4 8x2}; do
    part socket || break
    set -- ${nt/x/ }
    nv "NCCL built-in socket, NTHREADS=$1 NSOCKS_PERTHREAD=$2" NCCL_NET=Socket NCCL_SOCKET_NTHREADS=$1 NCCL_NSOCKS_PERTHREAD=$2
    nv "Chorus socket plugin, NTHREADS=$1 NSOCKS_PERTHREAD=$2" NCCL_NET_PLUGIN="$BUILD/lib/libnccl-net-socket.so" \
      NCCL_SOCKET_NTHREADS=$1 NCCL_NSOCKS_PERTHREAD=$2
  done
  # The GPU image has libfabric's library but not its headers: OFI_PLUGIN names one built elsewhere
  # (it needs only libfabric.so.1 and the C library), carried with the tree.
  OFI=${OFI_PLUGIN:-$BUILD/lib/libnccl-net-chorus-ofi.so}
  case "$OFI" in /*) ;; *) OFI=$ROOT/$OFI ;; esac
  if ! part ofi; then
    :
  elif [ -e "$OFI" ]; then
    echo "== Chorus ofi plugin ($OFI): $(ldd "$OFI" | grep -E "libfabric|not found" | tr -s ' \t' ' ')" >>"$P"
    # on lo, as NCCL's socket runs above (c1 of 2026-11-26 let it take eth0); over tcp the plugin
    # runs a progress thread on each of 4 endpoints by default (tcp progresses only inside CQ reads,
    # so without them every byte moves on NCCL's one proxy thread)
    o=(NCCL_NET_PLUGIN="$OFI" FI_PROVIDER="tcp;ofi_rxm" CHORUS_OFI_DOMAIN=lo)
    nv "Chorus ofi plugin, tcp;ofi_rxm on lo (default: progress threads, 4 endpoints)" "${o[@]}"
    nv "Chorus ofi plugin, CHORUS_OFI_PROGRESS_THREADS=0 (one endpoint, no threads)" "${o[@]}" CHORUS_OFI_PROGRESS_THREADS=0
    nv "Chorus ofi plugin, CHORUS_OFI_ENDPOINTS=8" "${o[@]}" CHORUS_OFI_ENDPOINTS=8
    # ofi_rxm sends messages above its SAR limit by rendezvous (a read round trip each); NCCL's are 512 KB
    nv "Chorus ofi plugin, FI_OFI_RXM_SAR_LIMIT=1048576" "${o[@]}" FI_OFI_RXM_SAR_LIMIT=1048576
    # One channel each: one connection per direction, which tells the connection count from the
    # per-connection speed.
    nv "NCCL built-in socket, 1 channel, 1 x 1" NCCL_NET=Socket NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1 \
      NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1
    nv "Chorus ofi plugin, 1 channel" "${o[@]}" NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1
    nv "NCCL built-in socket, default threads and sockets" NCCL_NET=Socket
  else
    echo "== Chorus ofi plugin: not built here (no libfabric headers at configure time; OFI_PLUGIN names a prebuilt one)" >>"$P"
  fi
  # NCCL's built-in socket transport as in the first run above (1 x 1), so that only the plugin differs
  # from it; the tuner says at INFO which rule chose what ("Chorus tuner: TUNER_RULE_1 ... chose").
  part tuner && nv "Chorus tuner: all-reduce forced to TREE" NCCL_NET=Socket NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1 \
    NCCL_TUNER_PLUGIN="$BUILD/lib/libnccl-tuner-chorus.so" TUNER_RULE_1="allreduce * -> tree simple"
  part tuner && nv "Chorus tuner: all-reduce forced to RING" NCCL_NET=Socket NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1 \
    NCCL_TUNER_PLUGIN="$BUILD/lib/libnccl-tuner-chorus.so" TUNER_RULE_1="allreduce * -> ring simple"
  if part profiler; then
    mkdir -p "$OUT/profiler"
    nv "Chorus profiler" NCCL_NET=Socket NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1 \
      NCCL_PROFILER_PLUGIN="$BUILD/lib/libnccl-profiler-chorus.so" CHORUS_PROFILER_DIR="$OUT/profiler"
    ls -la "$OUT/profiler" >>"$P" 2>&1
  fi
  rm -f "$OUT/pl.tmp"
  note "plugins: $P ($(grep -c "^exit 0" "$P") of $(grep -c "^exit" "$P") runs exit 0)"
fi

section "summary"
cat "$SUMMARY"
echo "logs: $OUT"
exit $RC
