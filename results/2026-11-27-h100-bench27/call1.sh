#!/usr/bin/env bash
# bench27 call1 (a fresh machine), from the repo root at 92ae751: where a cold sweep's CPU goes on the whole machine.
# Two rounds of: a cold sweep keeping its launches (the default) then its warm sweep; a cold sweep keeping none
# (--no-keep-launches). Each run: wall, the sweep's CPU (rusage) and the machine's (/proc/stat), the cache's size
# (machine_cpu.py); vmstat 1 throughout.
set -u
R=$OUT; W=$R/call1; mkdir -p $W; B=results/2026-11-27-h100-bench27
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name"; uptime; python3 --version; df -h /tmp /dev/shm; } > $W/env.txt 2>&1
python3 -m compileall -q harness benchmarks > /dev/null
vmstat -t 1 > $W/vmstat.txt 2>&1 & VM=$!
for r in 1 2; do
  C=$(mktemp -d); python3 $B/machine_cpu.py keep-cold$r $C $W/runs.jsonl --out /tmp/s.jsonl > /dev/null 2>&1
  python3 $B/machine_cpu.py keep-warm$r $C $W/runs.jsonl --out /tmp/s.jsonl > /dev/null 2>&1; rm -rf $C
  C=$(mktemp -d); python3 $B/machine_cpu.py nokeep-cold$r $C $W/runs.jsonl --no-keep-launches --out /tmp/s.jsonl > /dev/null 2>&1; rm -rf $C
done
kill $VM; gzip -f $W/vmstat.txt
tar czf $R/call1.tgz -C $R call1 && rm -rf $W
