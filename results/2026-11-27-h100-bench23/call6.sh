#!/usr/bin/env bash
# bench23 call6 (a fresh machine), as run: the compile alone (benchmarks/bench_compile.py, new) three times, the first
# two with one fresh CUDA_CACHE_PATH, the third with another; the output is call6/output.txt
A=$(mktemp -d); B=$(mktemp -d); for c in $A $A $B; do CUDA_CACHE_PATH=$c python3 benchmarks/bench_compile.py; du -sh $c; done
ls -la ~/.nv/ComputeCache 2>/dev/null | head -3; du -sh ~/.nv 2>/dev/null; env | grep -i cuda_cache
