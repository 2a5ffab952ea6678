"""The environments the harness is tested in: what CI covers on every submission, declared once.

CI (`.ci/run`) runs the whole suite on one interpreter and, on every other interpreter of `INTERPRETERS` the CI
machine has, installs the package in a venv as the README does, generates every kernel source of the default sweep
(byte-identical to the primary interpreter's) and compiles a sample of every family. It compiles and SASS-checks a
sample of every family with each NVRTC of `NVRTC_VERSIONS`, and with the lowest cuda-bindings and CuPy that
pyproject.toml allows (`LOWEST`). tests/test_environments.py holds CI to this declaration; `python -m harness doctor`
reads it to say whether the environment it runs in is one CI or a committed results file covers.

An interpreter of INTERPRETERS the CI machine lacks is a skip that names it; an NVRTC of NVRTC_VERSIONS missing
under CI fails (.ci/run installs them: tools/install_nvrtc.py).
"""
from __future__ import annotations

# the Python versions pyproject.toml's requires-python admits, each tried by CI where the CI machine has it
INTERPRETERS = ("3.10", "3.11", "3.12", "3.13")
# NVRTC releases CI compiles and SASS-checks a sample of every family with (besides the one cuda.bindings binds)
NVRTC_VERSIONS = ("12.8", "12.9", "13.0")
# the lowest versions pyproject.toml admits of the packages that talk to C, installed together in one venv of the
# lowest interpreter by CI (with what else pip picks for them). cuda-bindings: 12.9.0 and older cannot load the 13
# wheel's libnvrtc.so.13; 12.9.1 to 12.9.x compile with it, but their PTX ISA table ends at 8.8 (pyproject.toml says
# why that rules them out). cupy-cuda13x: its first release. On the CPU only: a GPU run with them is untested.
LOWEST = {"cuda-bindings": "13.0.0", "cupy-cuda13x": "13.6.0"}
