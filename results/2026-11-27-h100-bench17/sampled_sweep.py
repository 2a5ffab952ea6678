"""python3 abtree/sampled_sweep.py ARGS: `python -m harness sweep ARGS` whose GPU worker runs abtree/sampled_backend.py."""
import dataclasses, os, sys
sys.path.insert(0, os.getcwd()); sys.path.insert(0, os.path.join(os.getcwd(), "abtree"))
from harness import cli, sweep
real_ahead, real_run = sweep.worker_ahead, sweep.run
sweep.worker_ahead = lambda cfg, *a, **k: real_ahead(dataclasses.replace(cfg, backend="sampled_backend"), *a, **k)
sweep.run = lambda sel, cfg, *a, **k: real_run(sel, dataclasses.replace(cfg, backend="sampled_backend"), *a, **k)
if __name__ == "__main__":
    sys.exit(cli.main(["sweep", *sys.argv[1:]]))
