"""Print every kernel of the default sweep with the sha256 of its CUDA source, one `name sha256` a line, sorted.

The default sweep as a machine without a GPU plans it (`python -m harness sweep` there: each family's first arch
planned, its other archs compiled): `harness.plan.make(Selection(), {}, None)`, its kernels to run and its kernels
to compile only, each through its family's `source(kernel)`. tests/test_environments.py runs this with every
interpreter CI has and compares the outputs: a kernel's source must not depend on the Python that generated it.

    python tools/kernel_sources.py [--json]

Exits 1 where two kernels share a name with different sources (the name would not say which one was compiled).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys


def digests() -> dict[str, str]:
    from harness import plan, registry
    made = plan.make(plan.Selection(), {}, None)
    out: dict[str, str] = {}
    for kernel in [k for k, _ in made.work] + list(made.compile_only):
        digest = hashlib.sha256(registry.get(kernel.family).source(kernel).encode()).hexdigest()
        if out.setdefault(kernel.name, digest) != digest:
            raise SystemExit(f"kernel_sources: two kernels named {kernel.name} have different sources")
    return dict(sorted(out.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object, name -> sha256")
    args = ap.parse_args(argv)
    found = digests()
    if not found:
        print("kernel_sources: the default sweep planned no kernel", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(found, indent=0, sort_keys=True))
    else:
        sys.stdout.write("".join(f"{name} {digest}\n" for name, digest in found.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
