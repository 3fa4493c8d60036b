#!/bin/bash
# ab.sh: the staged path (CHORUS_NET_DIRECT_MIN_BYTES=0) against direct steps (the default, 65536),
# alternating, 2 ranks on 2 acted-out hosts over loopback; one line per cell:
#   collective mode rep size time_us busbw_GBs     (mode: 0 = slots, 65536 = direct)
# From the repository root:  bash docs/perf/raw/net-direct-2026-11-29/ab.sh > ab.txt
#                            python3 docs/perf/raw/net-direct-2026-11-29/table.py ab.txt
# (BUILD: the build folder, default build/cmake; NP: ranks, default 2.)
export NCCL_SOCKET_IFNAME=lo
P=${BUILD:-build/cmake}/bin/chorus-perf
NP=${NP:-2}
for rep in 1 2 3; do
  for coll in sendrecv broadcast allgather allreduce; do
    for d in 0 65536; do
      CHORUS_NET_DIRECT_MIN_BYTES=$d timeout 300 $P -np $NP --hosts $NP $coll -b 256K -e 64M -f 4 -c 0 -n 20 -w 3 2>/dev/null \
        | awk -v c=$coll -v d=$d -v r=$rep '/^ +[0-9]/{print c, d, r, $1, $6, $8}'
    done
  done
done
