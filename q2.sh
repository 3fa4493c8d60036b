#!/bin/bash
# throwaway (untracked): GPU buffers across two acted-out hosts on one GPU, Chorus beside NVIDIA's NCCL
export NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=lo
R=$OUT/q2; mkdir -p $R
( OUT=$R/b source tests/gpu/device_build.sh >/dev/null 2>&1; echo $BUILD > $R/b.dir )
B=$(cat $R/b.dir); P=$B/bin/chorus-perf
NVDIR=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])")/lib
ldd $P | grep nccl > $R/ldd.txt; LD_LIBRARY_PATH=$NVDIR ldd $P | grep nccl >> $R/ldd.txt; cat $R/ldd.txt
for c in allreduce sendrecv broadcast; do
  for lib in chorus nvidia; do
    if [ $lib = nvidia ]; then L="env LD_LIBRARY_PATH=$NVDIR NCCL_NET_PLUGIN=none NCCL_NET=Socket"; else L=env; fi
    NCCL_DEBUG=VERSION timeout 120 $L $P -np 2 --hosts 2 -M cuda $c -b 8 -e 256M -f 4 -n 10 -w 3 -c 1 > $R/$c-$lib.txt 2>&1
    echo "$c $lib rc=$?"; grep -E "version|Out of bounds|Avg bus" $R/$c-$lib.txt | head -4
  done
done
cd $OUT && tar czf q2.tgz q2 && rm -rf q2
