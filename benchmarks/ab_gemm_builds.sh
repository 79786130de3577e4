#!/bin/bash
# Lesson 8 (issue 17): the first bf16 tables' build against today's, alternating processes in one session.
#   git archive --format=tar.gz -o devsnapA.tgz c91776e     # the tree that ran l08/gemm_bench (kernel = efb78df's)
#   OUT=<folder> bash benchmarks/ab_gemm_builds.sh           # on the GPU machine, in today's tree (build B)
#   python3 benchmarks/merge_gemm_builds.py <folder>/res     # -> data/l08/gemm_bench_builds.json
# Each side runs both tables (l08/gemm_bench's 7 variants, l08/gemm_bench_tmastore's 3) with its own
# benchmarks/bench_gemm.py (the old tree launches its own kernel and arguments), in the order A B B A A B.
set -u
R=$OUT/res; mkdir -p $R
if [ -d .whl ]; then python3 -m pip install --no-deps --target /tmp/site -q .whl/*.whl > $R/pip.txt 2>&1; echo "pip rc $?" >> $R/log.txt; fi
mkdir -p /tmp/A && tar -xzf devsnapA.tgz -C /tmp/A && ln -sfn "$PWD" /tmp/B; echo "untar rc $?" >> $R/log.txt
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE > $R/smi_before.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > $R/smi_trace.csv 2>&1 &
SMI=$!
V7=cooperative,cooperative_inflight,cooperative_n128,cooperative_n128_inflight,pingpong,pingpong_inflight,pingpong_n128_inflight
V3=cooperative_inflight,cooperative_inflight_tmastore,cooperative_n128_inflight_tmastore
run() {  # side, i
  local s=$1 i=$2
  for t in bench tmastore; do
    if [ $t = bench ]; then args="--name l08/gemm_bench --variants $V7"; else args="--name l08/gemm_bench_tmastore --variants $V3"; fi
    echo "$(date +%T) start $s$i $t" >> $R/log.txt
    (cd /tmp/$s && PYTHONPATH=.:/tmp/site timeout 240 python3 benchmarks/bench_gemm.py --out $R/$s$i $args > $R/$s${i}_$t.txt 2>&1)
    echo "$(date +%T) $s$i $t rc $?" >> $R/log.txt
  done
}
run A 0; run B 0; run B 1; run A 1; run A 2; run B 2
kill $SMI
nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE > $R/smi_after.txt 2>&1
