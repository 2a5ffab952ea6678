"""Every tcgen05 form the sweep builds, compiled and SASS-checked by this machine's toolchain (no GPU needed).

The qualifier forms (scale-input-d, disable-output-lane, the A collector, .ashift, tcgen05.shift), sm_103a's K = 96
forms (.block16 / .block32) and the TMEM-checked form were written against NVRTC 13.5; a node with another NVRTC (the H100 image's 13.0) compiles them
in every sweep that plans tcgen05 (compile-only kernels), so a refusal there would be a compile-error record and
exit 1 on that fleet. This script says, for the default toolchain: its version, whether its ptxas takes
-g-tmem-access-check (else the TMEM-checked form is built with TC_NO_TMEM_CHECK and records 'not made'), and for
each form and arch whether it compiled and its SASS passed the form's check (the refusals with NVRTC's words).

    OUT=/tmp/out python3 benchmarks/tcgen05_forms_toolchain.py     # writes $OUT/tcgen05-forms-toolchain.json, .txt

Exit 0 when every form compiles and passes its SASS check on both archs, but kind::i8 on sm_103a, which NVRTC must
refuse; 1 otherwise; 2 when $OUT is not given or not writable (before anything is compiled).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    out = os.environ.get("OUT", "")
    if not out:
        print("tcgen05_forms_toolchain: set OUT to the folder the results go to", file=sys.stderr)
        return 2
    out_dir = Path(out)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / ".probe").write_text("")
        (out_dir / ".probe").unlink()
    except OSError as e:
        print(f"tcgen05_forms_toolchain: OUT={out}: cannot write there: {e}", file=sys.stderr)
        return 2
    from harness import registry
    from harness.contract import Kernel
    from harness.families.tcgen05 import cases as T, forms as F, kernel as K
    from harness.run import compile as C, cores, sass, toolchain as toolchains

    t0 = time.time()
    tc = toolchains.default()
    fam = registry.get("tcgen05")
    keys = [(f, arch) for arch in F.ARCHS for f in F.all_forms() + [F.Form("f16", tmem_check=True)] + F.variant_forms()]
    keys += [(f, "sm_103a") for f in F.k96_forms()]  # K = 96 is sm_103a's alone (cases.forms_for)
    jobs = [C.compile_job(Kernel(fam.name, arch, f.name, f), K.sass_check(f, arch)) for f, arch in keys]
    built = C.compile_many(jobs, workers=cores.default_workers(), raise_on_error=False, toolchain=tc)
    verdicts = sass.verify_many([(b.cubin_path, j.sass_check) for j, b in zip(jobs, built) if b.error is None])
    it = iter(verdicts)
    rows, bad = [], []
    for (f, arch), job, b in zip(keys, jobs, built):
        expect_refusal = arch == "sm_103a" and f.kind == "i8"
        if b.error is not None:
            row = {"form": f.name, "arch": arch, "compiled": False, "error": str(b.error)[-600:]}
            ok = expect_refusal
        else:
            v = next(it)
            row = {"form": f.name, "arch": arch, "compiled": True, "sass_ok": v.ok, "sass_broken": list(v.broken)}
            ok = v.ok and not expect_refusal
        row.update({"options": list(job.options), "ok": ok, "expected_refusal": expect_refusal})
        rows.append(row)
        if not ok:
            bad.append(row)
    info = {"toolchain": tc.describe(), "tmem_access_check": tc.accepts(K.TMEM_CHECK.option, K.TMEM_CHECK.arch),
            "tmem_check_options": list(C.own_options((K.TMEM_CHECK,), tc)), "forms": len(rows), "failed": len(bad),
            "seconds": round(time.time() - t0, 1), "rows": rows}
    (out_dir / "tcgen05-forms-toolchain.json").write_text(json.dumps(info, indent=1))
    lines = [f"toolchain: {info['toolchain']}", f"ptxas -g-tmem-access-check: {info['tmem_access_check']}",
             f"forms x archs: {len(rows)}, failed: {len(bad)}, {info['seconds']} s"]
    lines += [f"FAILED {r['form']} {r['arch']}: {r.get('error') or r.get('sass_broken')}" for r in bad]
    text = "\n".join(lines) + "\n"
    (out_dir / "tcgen05-forms-toolchain.txt").write_text(text)
    print(text, end="")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
