"""Shape legality by CUTLASS's own static_asserts: which (MMA atom, M, N, majors) the SM100/SM103 UMMA atoms accept.

CUTLASS encodes the tcgen05.mma shape rules as static_asserts in the MMA atoms (cute/arch/mma_sm100_umma.hpp) and,
for the non-template f8f6f4 atoms, in their MMA_Traits (cute/atom/mma_traits_sm100.hpp). One translation unit
instantiates every candidate in its own function; one `g++ -fsyntax-only -fmax-errors=0` run compiles it, and the
"required from here" line of each failed instantiation names the candidate's line. The result (candidate -> list of
(header:line, message)) is cached by the generated source text, like cutlass_cpp.build.

CUTLASS has no .ws MMA atom (only the .ws Tensor Memory data path in MMA_Traits), so .ws shapes are not here.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from . import cutlass_cpp

MS = (32, 64, 128, 256)
NS = tuple(range(8, 257, 8)) + (0, 4, 12, 264, 512)
MAJORS = ("K", "MN")


@dataclass(frozen=True)
class Candidate:
    kind: str
    cta_group: int
    a_src: str  # 'SS' or 'TS'
    m: int
    n: int
    major_a: str
    major_b: str
    k96: bool = False  # the SM103 "ULTRA" (K = 96) atoms
    scale: str = ""  # block-scaled kinds: ue8m0 / ue4m3

    @property
    def atom(self) -> str:
        return ATOMS[(self.kind, self.cta_group, self.a_src, self.k96)][0]


E4M3, E2M1, UE8, UE4 = "cutlass::float_e4m3_t", "cutlass::float_e2m1_t", "cutlass::float_ue8m0_t", "cutlass::float_ue4m3_t"
# (kind, cta_group, a_src, k96) -> (atom name, how to spell the checked type with M, N, majors, scale)
ATOMS = {
    ("tf32", 1, "SS", False): ("SM100_MMA_TF32_SS", "plain"),
    ("tf32", 1, "TS", False): ("SM100_MMA_TF32_TS", "plain"),
    ("tf32", 2, "SS", False): ("SM100_MMA_TF32_2x1SM_SS", "plain"),
    ("tf32", 2, "TS", False): ("SM100_MMA_TF32_2x1SM_TS", "plain"),
    ("f16", 1, "SS", False): ("SM100_MMA_F16BF16_SS", "plain"),
    ("f16", 1, "TS", False): ("SM100_MMA_F16BF16_TS", "plain"),
    ("f16", 2, "SS", False): ("SM100_MMA_F16BF16_2x1SM_SS", "plain"),
    ("f16", 2, "TS", False): ("SM100_MMA_F16BF16_2x1SM_TS", "plain"),
    ("i8", 1, "SS", False): ("SM100_MMA_S8_SS", "plain"),
    ("i8", 1, "TS", False): ("SM100_MMA_S8_TS", "plain"),
    ("i8", 2, "SS", False): ("SM100_MMA_S8_2x1SM_SS", "plain"),
    ("i8", 2, "TS", False): ("SM100_MMA_S8_2x1SM_TS", "plain"),
    ("f8f6f4", 1, "SS", False): ("SM100_MMA_F8F6F4_SS", "traits"),
    ("f8f6f4", 1, "TS", False): ("SM100_MMA_F8F6F4_TS", "plain"),
    ("f8f6f4", 2, "SS", False): ("SM100_MMA_F8F6F4_2x1SM_SS", "traits"),
    ("f8f6f4", 2, "TS", False): ("SM100_MMA_F8F6F4_2x1SM_TS", "plain"),
    ("mxf8f6f4", 1, "SS", False): ("SM100_MMA_MXF8F6F4_SS", "sf"),
    ("mxf8f6f4", 2, "SS", False): ("SM100_MMA_MXF8F6F4_2x1SM_SS", "sf"),
    ("mxf4", 1, "SS", False): ("SM100_MMA_MXF4_SS", "vs"),
    ("mxf4", 2, "SS", False): ("SM100_MMA_MXF4_2x1SM_SS", "vs"),
    ("mxf4nvf4", 1, "SS", False): ("SM100_MMA_MXF4_SS", "vs"),
    ("mxf4nvf4", 2, "SS", False): ("SM100_MMA_MXF4_2x1SM_SS", "vs"),
    # the SM103 K = 96 atoms: their MMA_Traits refuse transposes, so both the atom and its traits are instantiated
    ("mxf4nvf4", 1, "SS", True): ("SM103::SM103_MXF4_ULTRA_SS_VS", "vs+traits"),
    ("mxf4nvf4", 2, "SS", True): ("SM103::SM103_MXF4_ULTRA_2x1SM_SS_VS", "vs+traits"),
}
TYPES = {"tf32": ("tfloat32_t", "tfloat32_t", "float"), "f16": ("half_t", "half_t", "float"),
         "i8": ("int8_t", "int8_t", "int32_t"), "f8f6f4": (E4M3, E4M3, "float"), "mxf8f6f4": (E4M3, E4M3, "float"),
         "mxf4": (E2M1, E2M1, "float"), "mxf4nvf4": (E2M1, E2M1, "float")}


def candidates() -> list[Candidate]:
    out = []
    for (kind, cg, src, k96), (_, style) in ATOMS.items():
        scales = ("ue8m0", "ue4m3") if kind == "mxf4nvf4" else ("ue8m0",) if style != "plain" and style != "traits" else ("",)
        for scale in scales:
            for m in MS:
                for n in NS:
                    for ma in MAJORS:
                        for mb in MAJORS:
                            out.append(Candidate(kind, cg, src, m, n, ma, mb, k96, scale))
    return out


def _type_expr(c: Candidate) -> str:
    name, style = ATOMS[(c.kind, c.cta_group, c.a_src, c.k96)]
    a, b, acc = TYPES[c.kind]
    am, bm = (f"UMMA::Major::{x}" for x in (c.major_a, c.major_b))
    if style == "plain":
        return f"{name}<{a}, {b}, {acc}, {c.m}, {c.n}, {am}, {bm}>"
    if style == "traits":
        ic = "cute::integral_constant"
        return (f"MMA_Traits<{name}, {a}, {b}, {acc}, cute::C<{c.m}>, cute::C<{c.n}>, {ic}<UMMA::Major, {am}>, "
                f"{ic}<UMMA::Major, {bm}>, {ic}<UMMA::ScaleIn, UMMA::ScaleIn::One>, "
                f"{ic}<UMMA::ScaleIn, UMMA::ScaleIn::One>>")
    sf = UE4 if c.scale == "ue4m3" else UE8
    if style == "sf":
        return f"{name}<{a}, {b}, {acc}, {sf}, {c.m}, {c.n}, {am}, {bm}>"
    vs = 16 if c.scale == "ue4m3" else 32  # ue4m3 scales: block16 (4X); ue8m0: block32 (2X for the 4-bit kinds)
    atom = f"{name}<{a}, {b}, {acc}, {sf}, {c.m}, {c.n}, {vs}, {am}, {bm}>"
    return f"{atom}) + sizeof(MMA_Traits<{atom}>" if style == "vs+traits" else atom


def source(cands: list[Candidate]) -> tuple[str, dict[int, list[Candidate]]]:
    """The TU, and {line: candidates}: candidates spelling the same type (mxf4 and mxf4nvf4 with ue8m0 use the
    same atom) share one line, since the compiler reports a failed instantiation only once."""
    head = ["#include <cute/tensor.hpp>", "#include <cute/atom/mma_traits_sm100.hpp>", "using namespace cute;",
            "using cutlass::tfloat32_t; using cutlass::half_t;"]
    lines, by_line, line_of = list(head), {}, {}
    for c in cands:
        expr = _type_expr(c)
        if expr not in line_of:
            lines.append(f"void cand_{len(line_of)}() {{ (void)(sizeof({expr})); }}")
            line_of[expr] = len(lines)
        by_line.setdefault(line_of[expr], []).append(c)
    return "\n".join(lines) + "\n", by_line


_REQ = re.compile(r"^(?P<file>[^:]*legality_tu\.cpp):(?P<line>\d+):\d+:\s+required from here")
_ERR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):\d+: error: (?P<msg>.*)$")


@lru_cache(maxsize=1)
def rejections() -> dict[Candidate, list[tuple[str, str]]]:
    """{candidate: [(header:line, message), ...]} for every candidate CUTLASS refuses; absent = accepted."""
    cands = candidates()
    src, by_line = source(cands)
    incs = cutlass_cpp.include_dirs()
    key = hashlib.sha256((src + "\0" + "\0".join(incs)).encode()).hexdigest()[:16]
    cache = cutlass_cpp.cache_dir() / f"legality-{key}.json"
    if not cache.exists():
        tu = cutlass_cpp.cache_dir() / f"tu-{os.getpid()}" / "legality_tu.cpp"  # pytest -n: one per process
        tu.parent.mkdir(exist_ok=True)
        tu.write_text(src)
        cmd = ["g++", "-std=c++17", "-fsyntax-only", "-fmax-errors=0", "-w", *[f"-I{d}" for d in incs], str(tu)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        raw: dict[int, list[tuple[str, str]]] = {}
        current = None
        for line in r.stderr.splitlines():
            m = _REQ.match(line)
            if m:
                current = int(m["line"])
                continue
            e = _ERR.match(line)
            if e:
                where = int(e["line"]) if e["file"].endswith("legality_tu.cpp") else current
                if where is None:
                    raise RuntimeError(f"unattributed compiler error: {line}")
                hdr = e["file"].split("/include/")[-1]
                raw.setdefault(where, []).append((f"{hdr}:{e['line']}", e["msg"]))
            elif "In instantiation of" in line or line.startswith("In file included"):
                current = None
        if r.returncode != 0 and not raw:
            raise RuntimeError(f"the legality TU failed without attributable errors:\n{r.stderr[-3000:]}")
        tmp = cache.with_name(f"{cache.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps({str(k): v for k, v in raw.items()}))
        tmp.replace(cache)
    raw = {int(k): [tuple(x) for x in v] for k, v in json.loads(cache.read_text()).items()}
    return {c: v for ln, v in raw.items() for c in by_line[ln]}


def accepted(c: Candidate) -> bool:
    return c not in rejections()


# Which tcgen05 MMA kinds CUTLASS compiles for an arch: cute/arch/config.hpp defines CUTE_ARCH_TCGEN05_<X>_MMA_ENABLED
# per CUTLASS_ARCH_MMA_<SM>_ENABLED, and every UMMA atom's instruction sits under its kind's macro. The C preprocessor
# evaluates the header for each arch (g++ -E -dM), so the answer is CUTLASS's own.
KIND_MACRO = {"tf32": "TF32_MMA", "f16": "F16F32_MMA", "f8f6f4": "MXF8F6F4_MMA", "i8": "S8_MMA",
              "mxf8f6f4": "MXF8F6F4_MMA", "mxf4": "MXF4_MMA", "mxf4nvf4": "MXF4NVF4_MMA"}
K96_MACRO = "MXF4NVF4_MMA_ULTRA"  # the SM103 K = 96 atoms (SM103_MXF4_ULTRA_*)
ARCH_DEFINES = {"sm_100a": ("CUTLASS_ARCH_MMA_SM100A_ENABLED", "CUTLASS_ARCH_MMA_SM100_ENABLED"),
                "sm_103a": ("CUTLASS_ARCH_MMA_SM103A_ENABLED", "CUTLASS_ARCH_MMA_SM103_ENABLED")}


@lru_cache(maxsize=None)
def enabled_mma(arch: str) -> frozenset[str]:
    """The X of every CUTE_ARCH_TCGEN05_X_ENABLED cute/arch/config.hpp defines when compiling for `arch`."""
    cmd = ["g++", "-std=c++17", "-E", "-dM", "-x", "c++", *[f"-D{d}" for d in ARCH_DEFINES[arch]],
           *[f"-I{d}" for d in cutlass_cpp.include_dirs()], "-"]
    r = subprocess.run(cmd, input="#include <cute/arch/config.hpp>\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"preprocessing cute/arch/config.hpp for {arch} failed:\n{r.stderr[-2000:]}")
    return frozenset(re.findall(r"#define CUTE_ARCH_TCGEN05_(\w+)_ENABLED", r.stdout))


def arch_builds(c: Candidate, arch: str) -> bool:
    return (K96_MACRO if c.k96 else KIND_MACRO[c.kind]) in enabled_mma(arch)
