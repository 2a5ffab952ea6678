#!/usr/bin/env bash
# Every 0.5 s until killed: each process started with multiprocessing's spawn (a sweep's helpers and its GPU worker)
# or running a sweep, as "time pid ppid threads elapsed args": a helper that loaded numpy with a BLAS thread per core
# has some 16 threads more than one that loaded it with one
while true; do
  ts=$(date +%s.%N)
  ps -eo pid,ppid,nlwp,etimes,args --no-headers | awk -v ts="$ts" '/spawn_main|harness sweep/ && !/awk/ {print ts, $1, $2, $3, $4, substr($0, index($0, $5), 80)}'
  sleep 0.5
done
