#!/bin/bash
# throwaway (untracked): build, the new cross-host GPU tests, then every GPU test
export NCCL_NVLS_ENABLE=0
R=$OUT/q1; mkdir -p $R
( OUT=$R/b source tests/gpu/device_build.sh >/dev/null 2>&1; echo $BUILD > $R/b.dir )
B=$(cat $R/b.dir); echo "build: $B"; tail -3 $R/b/summary.txt
cd $B
timeout 330 ctest -R 'gpu\.procs\.hosts' -V --timeout 120 > $R/hosts.log 2>&1; echo "hosts rc=$?"
grep -E "tests passed|\*\*\*Failed|\*\*\*Timeout|gpu.procs |FAIL|WARN" $R/hosts.log | head -40
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout 60 ctest -R 'gpu\.procs\.hosts2\.colls' -V --timeout 50 > $R/hosts2-info.log 2>&1
grep -E "another host|other hosts|proxy" $R/hosts2-info.log | head -8
timeout 200 ctest -R '^gpu\.(nccl\.(threads|initall)|procs\.colls|colls)' --timeout 150 -j1 > $R/all.log 2>&1; echo "all rc=$?"
grep -E "tests passed|\*\*\*Failed|\*\*\*Timeout" $R/all.log | head -20
cd $OUT && tar czf q1.tgz q1 && rm -rf q1
