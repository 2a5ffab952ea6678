#!/bin/bash
# fresh venv each time, no pip cache: what CI's `pip install -e '.[test]'` downloads and installs
for round in 1 2; do for s in old new; do
  rm -rf /tmp/depab/venv-$s; python -m venv /tmp/depab/venv-$s
  t=$(date +%s.%N); /tmp/depab/venv-$s/bin/pip install --no-cache-dir -q -e "/tmp/depab/$s[test]" > /tmp/depab/pip-$s-$round.log 2>&1; rc=$?
  echo "round $round $s: exit $rc, $(python3 -c "print(round($(date +%s.%N)-$t,1))") s, venv $(du -sm /tmp/depab/venv-$s | cut -f1) MB, $(/tmp/depab/venv-$s/bin/pip list 2>/dev/null | grep -ciE '^nvidia-|^cuda-') nvidia/cuda packages"
done; done
