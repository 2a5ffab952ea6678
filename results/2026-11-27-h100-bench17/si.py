"""python3 abtree/si.py INTERVAL ARGS...: `python -m harness ARGS` with the GIL's switch interval set to INTERVAL s."""
import os
import runpy
import sys
sys.path.insert(0, os.getcwd())
sys.setswitchinterval(float(sys.argv[1]))
sys.argv = ["harness"] + sys.argv[2:]
runpy.run_module("harness", run_name="__main__", alter_sys=True)
