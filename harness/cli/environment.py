"""doctor and toolchains: what this environment is (Python, NVRTC, cuda-bindings, CuPy, driver, GPUs), whether CI or a
committed run covers it, and the NVRTC libraries `--nvrtc` can name here."""
from __future__ import annotations

import json
import os
import sys

from harness.cli.common import one_line
from harness.enums import ExitCode


def cmd_toolchains(a) -> int:
    """Every NVRTC library --nvrtc can name here, with what each builds; where the one cuda.bindings binds is missing,
    why, and what to install (on stderr, one line). Exit 2 where there is none at all (nothing could compile)."""
    from harness.enums import Arch, ToolchainKind
    from harness.run import toolchain as toolchains
    missing = toolchains.nvrtc_problem()
    if missing:
        print(one_line(f"toolchains: the default NVRTC: {missing}"), file=sys.stderr)
    rows = []
    for path, release, build in toolchains.installed_libraries():
        row = {"nvrtc": release, "nvrtc_build": build, "nvrtc_library": str(path)}
        try:
            tc = toolchains.resolve(ToolchainKind.NVRTC, str(path))
            cannot = tc.cannot_build(Arch.values())
            row.update(ptx_isa=tc.ptx_isa, builds=[x for x in Arch.values() if x not in cannot], cannot=cannot)
        except toolchains.ToolchainError as e:
            row["error"] = str(e)
        rows.append(row)
    code = ExitCode.OK if rows else ExitCode.USAGE  # no NVRTC at all: an environment problem (docs/environment.md)
    if a.json:
        print(json.dumps({"roots": [str(r) for r in toolchains.library_roots()], "libraries": rows,
                          "default_problem": missing}, indent=2))
        return code
    print(f"NVRTC libraries (the one cuda.bindings binds, and those under "
          f"{os.pathsep.join(map(str, toolchains.library_roots()))}):")
    for r in rows:
        what = (f"PTX ISA {r['ptx_isa']}, builds {', '.join(r['builds']) or 'none of the harness archs'}"
                + (f"; not {', '.join(r['cannot'])}" if r["cannot"] else "")) if "error" not in r else r["error"]
        print(f"  {r['nvrtc']:<5} V{r['nvrtc_build']:<10} {what}\n        {r['nvrtc_library']}")
    if not rows:
        print("  none: " + (missing or "no libnvrtc.so under those folders"))
    return code


def cmd_doctor(a) -> int:
    """This environment, whether CI or a committed run covers it, and each problem with its fix (exit 4 if any)."""
    from harness import doctor
    if a.matrix:
        print(doctor.matrix_markdown())
        return ExitCode.OK
    rep = doctor.examine()
    print(json.dumps(rep.as_json(), indent=2, default=str) if a.json else doctor.render(rep))
    return int(ExitCode.ENVIRONMENT if rep.problems else ExitCode.OK)


def _doctor_parser(sub, family_names) -> None:
    dr = sub.add_parser("doctor", help="this environment (Python, NVRTC, cuda-bindings, CuPy, driver, GPUs), whether "
                                       "CI or a committed run covers it, and each problem with its fix")
    dr.add_argument("--json", action="store_true", help="print the findings as JSON")
    dr.add_argument("--matrix", action="store_true", help="print the tested matrix (the README's table) and exit")
    dr.set_defaults(fn=cmd_doctor)


def _toolchains_parser(sub, family_names) -> None:
    tl = sub.add_parser("toolchains", help="the NVRTC libraries --nvrtc can name here, and what each builds")
    tl.add_argument("--json", action="store_true")
    tl.set_defaults(fn=cmd_toolchains)


# the commands this group adds, by name (harness/cli/__init__.py puts them in --help's order)
PARSERS = {"doctor": _doctor_parser, "toolchains": _toolchains_parser}
