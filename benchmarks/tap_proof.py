"""The descriptor tap's proof on an sm_90a GPU (issue 57), as one JSON file: tap_wgmma_sbo (tests/tap_kernels.py)
launched with the tilelang#2593 class of SBO bug and fixed; each run's recorded descriptors, the tap's findings
against the declared layouts, and whether D is A x B^T (fixed) or the misread the finding names (buggy).

    python benchmarks/tap_proof.py          # from the repo root; writes $OUT/tap-proof.json
Exit status 0 when the buggy kernel is flagged with exactly B's SBO (512, intended 1024), the fixed one passes, and
D agrees with both; 1 otherwise; 2 without an sm_90a GPU (nothing launched).
"""
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    out = Path(os.environ.get("OUT", "."))
    try:
        import cupy as cp
        major, minor = cp.cuda.Device(0).compute_capability[:1], cp.cuda.Device(0).compute_capability[1:]
        if (major, minor) != ("9", "0"):
            raise RuntimeError(f"compute capability {major}.{minor}, not 9.0")
    except Exception as e:  # no CuPy, no GPU, another arch
        print(f"tap_proof: needs an sm_90a GPU: {e}", file=sys.stderr)
        return 2
    import numpy as np

    from harness import tap
    from tests import tap_kernels as K
    report, ok = {}, True
    for fixed in (False, True):
        recs, d, a, b, img_b = K.run_wgmma(fixed)
        findings = tap.check(recs, K.wgmma_declarations())
        want = a.astype(np.float32) @ b.astype(np.float32).T
        predicted = a.astype(np.float32) @ K.misread_b(img_b, 512).astype(np.float32).T
        run = {"records": [{"tag": r.tag, "desc": f"{r.desc:#018x}", "idesc": f"{r.idesc:#010x}", "count": r.count}
                           for r in recs],
               "findings": [{"tag": f.tag, "name": f.name, "field": f.field, "got": f.got, "want": f.want,
                             "message": f.message} for f in findings],
               "d_is_a_times_b": bool(np.array_equal(d, want)),
               "d_is_the_predicted_misread": bool(np.array_equal(d, predicted)),
               "d_unwritten": int(np.isnan(d).sum())}
        report["fixed" if fixed else "buggy"] = run
        if fixed:
            ok &= not findings and run["d_is_a_times_b"]
        else:
            ok &= ([(f.tag, f.field, f.got, f.want) for f in findings] == [(K.TAG_B, "SBO", 512, 1024)]
                   and run["d_is_the_predicted_misread"] and not run["d_is_a_times_b"])
    report["proved"] = bool(ok)
    (out / "tap-proof.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
