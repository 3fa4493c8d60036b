#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_topo_info.sh <chorus-info> <tests/data/topologies>: chorus-info --topo's lines (format in
# core/topo/topo_report.h) for real machines' files: NIC per channel, path type, bandwidth and the
# GPUDirect decision, how NCCL_NET_GDR_LEVEL / NCCL_NET_GDR_READ change them, --dump read back gives
# the same report, bad files and options fail with the file:line or the option named, and --topo
# without a file reports this machine.
set -u
bin=$1
data=$2
dir=$(mktemp -d /tmp/chorus-topo-test.XXXXXX) || exit 2
trap 'rm -rf "$dir"' EXIT
fail=0
run() { # args...: runs chorus-info in an empty environment, output in $dir/out, status in $rc
  env -i HOME="$dir" PATH=/usr/bin:/bin ${ENVS:-} "$bin" "$@" >"$dir/out" 2>"$dir/err"
  rc=$?
}
has() { # exact line
  grep -qxF "$1" "$dir/out" || { echo "missing line: $1"; echo "--- got:"; head -20 "$dir/out"; cat "$dir/err"; fail=1; }
}

ENVS= run --topo "$data/aws-p4d.24xlarge-topo.xml" --sm 80
[ $rc = 0 ] || { echo "p4d: exit $rc"; cat "$dir/err"; fail=1; }
has "topology $data/aws-p4d.24xlarge-topo.xml cpus 2 switches 4 gpus 8 nics 4 nets 4 nvswitches 0"
has "gpu 0 rank - busid 0000:10:1c.0 sm 80 gdr 1 numa 0"
has "gpu 0 channels 0 0 0 0"
has "gpu 7 channels 3 3 3 3"
has "gpu 0 net 0 name 0000:10:1b.0 busid 0000:10:1b.0 path PIX bw 12.00 gdr_read 1 gdr_write 1"
has "gpu 0 net 1 name 0000:20:1b.0 busid 0000:20:1b.0 path PHB bw 12.00 gdr_read 0 gdr_write 0"
has "gpu 0 net 2 name 0000:90:1b.0 busid 0000:90:1b.0 path SYS bw 10.00 gdr_read 0 gdr_write 0"
has "gpu 0 gpu 1 path PIX bw 12.00"

# NCCL_NET_GDR_LEVEL=PHB lets the same-socket NIC use GPUDirect; NCCL_NET_GDR_READ=0 stops reads.
ENVS="NCCL_NET_GDR_LEVEL=PHB NCCL_NET_GDR_READ=0" run --topo "$data/aws-p4d.24xlarge-topo.xml" --sm 80
has "gpu 0 net 1 name 0000:20:1b.0 busid 0000:20:1b.0 path PHB bw 12.00 gdr_read 0 gdr_write 1"
has "gpu 0 net 0 name 0000:10:1b.0 busid 0000:10:1b.0 path PIX bw 12.00 gdr_read 0 gdr_write 1"
ENVS="NCCL_NET_GDR_LEVEL=1" run --topo "$data/aws-p4d.24xlarge-topo.xml" --sm 80
has "gpu 0 net 1 name 0000:20:1b.0 busid 0000:20:1b.0 path PHB bw 12.00 gdr_read 0 gdr_write 0"
ENVS="NCCL_NET_GDR_LEVEL=NEAR" run --topo "$data/aws-p4d.24xlarge-topo.xml"
[ $rc = 1 ] && grep -q 'NCCL_NET_GDR_LEVEL' "$dir/err" || { echo "NCCL_NET_GDR_LEVEL=NEAR: exit $rc"; cat "$dir/err"; fail=1; }

# NDv2: the one NIC is PHB from NUMA 0's GPUs and SYS from NUMA 1's; GPUDirect off.
ENVS= run --topo "$data/azure-ndv2-topo.xml" --sm 70 --net-speed 100000
has "gpu 0 net 0 name 0101:00:00.0 busid 0101:00:00.0 path PHB bw 12.50 gdr_read 0 gdr_write 0"
has "gpu 7 net 0 name 0101:00:00.0 busid 0101:00:00.0 path SYS bw 10.00 gdr_read 0 gdr_write 0"

# p5: GPUs placed beside each switch's 4 EFA; channels cycle over them.
ENVS= run --topo "$data/aws-p5.48xlarge-topo.xml" --leaf-class 0x020000 --gpu-per-switch --channels 6
has "gpu 0 channels 0 1 2 3 0 1"
has "gpu 7 channels 28 29 30 31 28 29"
ENVS="NCCL_NETDEVS_POLICY=MAX:1" run --topo "$data/aws-p5.48xlarge-topo.xml" --leaf-class 0x020000 --gpu-per-switch
has "gpu 2 channels 8 8 8 8"

# NCv4: the socket NIC on CPU 0, gdr="0" in the file; ranks from the file.
ENVS= run --topo "$data/azure-ncv4-topo.xml"
has "gpu 1 rank 1 busid 0002:00:00.0 sm 80 gdr 1 numa 1"
has "gpu 0 net 0 name eth0 busid - path PHB bw 12.00 gdr_read 0 gdr_write 0"

# g5 names bus ids only: offline it has no GPU.
ENVS= run --topo "$data/aws-g5.48xlarge-topo.xml"
[ $rc = 0 ] || { echo "g5: exit $rc"; fail=1; }
grep -q '^note no GPUs' "$dir/out" || { echo "g5: no note"; fail=1; }

# --dump, read back without completion, gives the same report.
ENVS= run --topo "$data/azure-ndv5-topo.xml" --dump "$dir/dump.xml"
tail -n +2 "$dir/out" >"$dir/first"
ENVS= run --topo "$dir/dump.xml" --no-fill
tail -n +2 "$dir/out" >"$dir/second"
cmp -s "$dir/first" "$dir/second" || { echo "--dump read back differs"; diff "$dir/first" "$dir/second" | head; fail=1; }
grep -q '^<system version="1">$' "$dir/dump.xml" || { echo "dump: no <system> line"; fail=1; }

# Broken input: exit 1, file:line on stderr; bad options: exit 2.
printf '<system version="1">\n<cpu numaid="0">\n<gpu dev="0"/>\n</cpu></system>\n' >"$dir/bad.xml"
ENVS= run --topo "$dir/bad.xml"
[ $rc = 1 ] && grep -qF "$dir/bad.xml:3: <gpu> inside <cpu>" "$dir/err" || { echo "bad.xml: exit $rc"; cat "$dir/err"; fail=1; }
[ -s "$dir/out" ] && { echo "bad.xml: printed a report"; fail=1; }
ENVS= run --topo "$dir"
[ $rc = 1 ] && grep -q 'not a regular file' "$dir/err" || { echo "directory: exit $rc"; cat "$dir/err"; fail=1; }
ENVS= run --dump "$dir/x.xml"
[ $rc = 2 ] || { echo "--dump without --topo: exit $rc"; fail=1; }
ENVS= run --topo "$data/aws-p4d.24xlarge-topo.xml" --channels 0
[ $rc = 2 ] || { echo "--channels 0: exit $rc"; fail=1; }

# Without a file: this machine (no GPU here is fine), and a sysfs root that does not exist.
ENVS="NCCL_NET_PLUGIN=none" run --topo
[ $rc = 0 ] && grep -q '^topology discovered cpus [1-9]' "$dir/out" || { echo "--topo alone: exit $rc"; cat "$dir/out" "$dir/err"; fail=1; }
ENVS="NCCL_NET_PLUGIN=none CHORUS_SYSFS_ROOT=$dir/none" run --topo --dump "$dir/local.xml" --channels 2
# GPUs come from the CUDA driver, not sysfs: a GPU machine lists its own here.
grep -Eq '^topology discovered cpus 1 switches 0 gpus [0-9]+ nics 0 nets 0 nvswitches 0$' "$dir/out" ||
  { echo "--topo with no sysfs: unexpected summary"; cat "$dir/out"; fail=1; }
grep -q '<cpu numaid="-1"' "$dir/local.xml" || { echo "--topo --dump: no cpu in the dump"; fail=1; }
exit $fail
