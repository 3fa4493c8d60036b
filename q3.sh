#!/bin/bash
# throwaway (untracked): slot size and channel count of GPU buffers across two acted-out hosts
export NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=lo
R=$OUT/q3; mkdir -p $R
( OUT=$R/b source tests/gpu/device_build.sh >/dev/null 2>&1; echo $BUILD > $R/b.dir )
B=$(cat $R/b.dir); P=$B/bin/chorus-perf
for knob in CHORUS_GPU_BUFFSIZE=8388608 CHORUS_GPU_BUFFSIZE=16777216 CHORUS_GPU_NET_CHANNELS=4 CHORUS_GPU_NET_CHANNELS=8 "CHORUS_GPU_NET_CHANNELS=4 CHORUS_GPU_BUFFSIZE=8388608"; do
  for c in allreduce broadcast; do
    f=$R/$c-$(echo $knob | tr ' =' '_-').txt
    timeout 100 env $knob $P -np 2 --hosts 2 -M cuda $c -b 512K -e 256M -f 4 -n 10 -w 3 -c 1 > $f 2>&1
    echo "$knob $c rc=$?"; grep -E "^ +[0-9]+ " $f | awk '{print $1, $8, $12}' | tr '\n' ' '; echo
  done
done
cd $OUT && tar czf q3.tgz q3 && rm -rf q3
