#!/bin/bash
# 2-rank all-reduce, 8 B-128 KiB: Chorus ring (CHORUS_PAIR_MAX_BYTES=0), Chorus one exchange (the default), Open MPI;
# over shm (one host; MPI vader) and over TCP (two acted-out hosts; MPI ob1+tcp), 3 reps, alternating
export NCCL_SOCKET_IFNAME=lo
P=${BUILD:-build/cmake}/bin/chorus-perf
MPI=${MPI_COLLS:?build it: mpicc -O2 -o mpi_colls tools/bench/mpi_colls.c, then MPI_COLLS=./mpi_colls}
for rep in 1 2 3; do
  for t in shm net; do
    h=1; [ $t = net ] && h=2
    for d in 0 65536; do
      CHORUS_PAIR_MAX_BYTES=$d timeout 120 $P -np 2 --hosts $h allreduce -b 8 -e 128K -f 4 -c 0 -n 500 -w 50 2>/dev/null \
        | awk -v t=$t -v d=$d -v r=$rep '/^ +[0-9]/{print t, (d==0?"ring":"pair"), r, $1, $6}'
    done
    if [ $t = shm ]; then M="--mca btl self,vader"; else M="--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo"; fi
    mpirun --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo $M -np 2 $MPI -c allreduce -b 8 -e 128K -f 4 -T 0.3 2>/dev/null \
      | awk -v t=$t -v r=$rep '!/^#/ && NF>5 {print t, "mpi", r, $2, $4}'
  done
done
