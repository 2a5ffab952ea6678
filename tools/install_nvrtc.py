"""Install each NVRTC of harness.environments.NVRTC_VERSIONS that is missing where `--nvrtc VERSION` looks
(harness.run.toolchain.library_roots()[0]: $TC_HARNESS_NVRTC_DIR's first folder, else ~/.cache/tc-harness/nvrtc),
one pip wheel per version in its own folder (`pip install --target ROOT/12.8 'nvidia-cuda-nvrtc-cu12==12.8.*'`).

    python tools/install_nvrtc.py [--check]

A version already there (a libnvrtc.so of that version under ROOT/VERSION) costs nothing; a new one is installed
into a temporary folder and renamed into place, so an interrupted install leaves nothing that looks installed.
--check installs nothing and exits 1 naming each one missing. Run it with the Python whose pip should fetch them.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.environments import NVRTC_VERSIONS
from harness.run import toolchain


def wheel(version: str) -> str:
    """The pip requirement of NVRTC `version`: CUDA 12's wheels carry the major version in their name, 13's not."""
    major = int(version.split(".")[0])
    return f"nvidia-cuda-nvrtc{'-cu12' if major == 12 else ''}=={version}.*"


def holds(folder: Path, version: str) -> bool:
    """Whether `folder` holds a libnvrtc.so whose release string says `version` (read from the file, not loaded)."""
    return any((toolchain.release_of(p) or ("",))[0] == version for p in toolchain.libraries_under(folder))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="install nothing; exit 1 if any is missing")
    args = ap.parse_args(argv)
    root = toolchain.library_roots()[0]
    missing = [v for v in NVRTC_VERSIONS if not holds(root / v, v)]
    if args.check or not missing:
        for v in missing:
            print(f"install_nvrtc: NVRTC {v} is missing under {root} (pip install --target {root / v} '{wheel(v)}')",
                  file=sys.stderr)
        return 1 if missing else 0
    root.mkdir(parents=True, exist_ok=True)
    for v in missing:
        temp = Path(tempfile.mkdtemp(prefix=f".{v}-", dir=root))
        try:
            done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                   "--no-deps", "--target", str(temp), wheel(v)], capture_output=True, text=True)
            if done.returncode != 0 or not holds(temp, v):
                print(f"install_nvrtc: pip did not install NVRTC {v} ({wheel(v)}): {done.stderr.strip()[-1500:]}",
                      file=sys.stderr)
                return 1
            shutil.rmtree(root / v, ignore_errors=True)  # a folder of that name holding no NVRTC of that version
            temp.rename(root / v)
        finally:
            shutil.rmtree(temp, ignore_errors=True)
        print(f"install_nvrtc: NVRTC {v} installed into {root / v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
