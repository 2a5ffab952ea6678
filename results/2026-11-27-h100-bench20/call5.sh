#!/usr/bin/env bash
# bench20 call5, from the repo root: where a warm default sweep's own process spends its time (cProfile, the main
# thread), after a cold sweep on the same caches
set -u
R=$OUT; W=$R/call5; mkdir -p $W
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
python3 -m compileall -q harness benchmarks > /dev/null
export TC_HARNESS_CACHE=/tmp/c5 CUDA_CACHE_PATH=/tmp/nv5
t=$(date +%s%N); python3 -m harness sweep --out /tmp/cold.jsonl > $W/cold.log 2>&1; echo "cold exit $? $(ms $t) ms" >> $W/steps.txt
t=$(date +%s%N); python3 -m harness sweep --out /tmp/warm1.jsonl > $W/warm1.log 2>&1; echo "warm1 exit $? $(ms $t) ms" >> $W/steps.txt
# in-process (cli.main, as the command line's own process): `python -m cProfile -m harness` ends in os._exit, before
# the profile is written
t=$(date +%s%N); python3 -c "import cProfile; from harness import cli; cProfile.run('cli.main([\"sweep\", \"--out\", \"/tmp/warm2.jsonl\"], own_process=True)', '/tmp/warm.prof')" > $W/warm2.log 2>&1
echo "warm2 (cProfile) exit $? $(ms $t) ms" >> $W/steps.txt
python3 -c "import pstats; s = pstats.Stats('/tmp/warm.prof'); s.sort_stats('tottime').print_stats(45); s.sort_stats('cumulative').print_stats(70)" > $W/warm-profile.txt 2>&1
cp /tmp/warm.prof $W/
gzip -f $W/*.log $W/warm.prof
tar czf $R/call5.tgz -C $R call5 && rm -rf $W
