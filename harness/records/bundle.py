"""Repro bundles (`sweep --bundle DIR`, `python -m harness bundle RESULTS --out DIR`): for every case a results file
records as failed, faulted or timed out, what a bug report for NVIDIA or a compiler project needs, in a folder per
kernel:

    DIR/manifest.json             what is where, with sha256 of each file (MANIFEST_SCHEMA), and the versions
    DIR/<kernel>/kernel.cu        the kernel's CUDA source, as the sweep compiled it
    DIR/<kernel>/kernel.ptx       NVRTC's PTX of it for the arch (compute_XXa)
    DIR/<kernel>/kernel.cubin     the module the sweep loaded (the compile cache's, same source, options, NVRTC)
    DIR/<kernel>/kernel.sass      nvdisasm's listing of that cubin
    DIR/<kernel>/repro.cu         the kernel with a host main that launches one case folder's launch, standalone
    DIR/<kernel>/run.sh           the nvcc command that builds repro.cu, and the launch of every case
    DIR/<kernel>/check.py         with the harness installed: diff a case's outputs (written by repro) against the
                                  harness's reference, as the sweep did
    DIR/<kernel>/cases/<n>/       one failing case: launch.txt (grid, block, shared memory, the kernel's arguments
                                  in order), its buffers (*.bin), record.json (the sweep's record), expect.pkl
    DIR/versions.json             harness, NVRTC (version, build, library), ptxas, nvcc, driver, CUDA driver API and
                                  runtime, GPU and compute capability: the run's, from its results file

A kernel whose source no longer compiles, or a case that is not in today's plan, is named in the manifest's
`problems`, never left out silently.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import pickle
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from harness.enums import Status

BAD = (Status.FAIL, Status.FAULT, Status.TIMEOUT)
BUNDLE_VERSION = "tc-harness-bundle/1"

_FILE = {"type": "object", "additionalProperties": False, "required": ["path", "sha256", "bytes"],
         "properties": {"path": {"type": "string"}, "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "bytes": {"type": "integer", "minimum": 0}}}
MANIFEST_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tensor-core-harness repro bundle manifest",
    "type": "object", "additionalProperties": False,
    "required": ["schema_version", "created", "results_file", "versions", "kernels", "problems"],
    "properties": {
        "schema_version": {"const": BUNDLE_VERSION},
        "created": {"type": "string"}, "results_file": {"type": "string"},
        "versions": {"type": "object", "additionalProperties": {"type": ["string", "integer", "null"]}},
        "problems": {"type": "array", "items": {"type": "string"}},
        "kernels": {"type": "array", "items": {"$ref": "#/$defs/kernel"}},
    },
    "$defs": {
        "file": _FILE,
        "kernel": {"type": "object", "additionalProperties": False,
                   "required": ["kernel", "family", "arch", "dir", "nvrtc_options", "files", "nvcc", "run", "cases"],
                   "properties": {
                       "kernel": {"type": "string"}, "family": {"type": "string"}, "arch": {"type": "string"},
                       "dir": {"type": "string"}, "nvrtc_options": {"type": "array", "items": {"type": "string"}},
                       "files": {"type": "object", "additionalProperties": {"$ref": "#/$defs/file"}},
                       "nvcc": {"type": "string"}, "run": {"type": "string"},
                       "cases": {"type": "array", "items": {"$ref": "#/$defs/case"}}}},
        "case": {"type": "object", "additionalProperties": False,
                 "required": ["id", "status", "dir", "files"],
                 "properties": {"id": {"type": "string"}, "status": {"enum": [s.value for s in BAD]},
                                "dir": {"type": "string"},
                                "files": {"type": "object", "additionalProperties": {"$ref": "#/$defs/file"}}}},
    },
}

_HOST_MAIN = r"""
// ---------------------------------------------------------------------------------------------------------------
// Standalone launcher (tensor-core-harness repro bundle): ./repro CASE_DIR launches the kernel above once, as the
// harness did, from CASE_DIR/launch.txt and the buffers it names, then writes each output to CASE_DIR/out_<name>.bin.
// Exit status 1 when the launch faults (the message names the CUDA error), 2 for bad input.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>
#include <cuda_runtime.h>

#define TC_CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

static bool tc_read(const std::string& path, std::vector<unsigned char>& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return true;
}

int main(int argc, char** argv) {
    if (argc != 2) { std::fprintf(stderr, "usage: %s CASE_DIR\n", argv[0]); return 2; }
    const std::string dir = argv[1];
    std::ifstream m(dir + "/launch.txt");
    if (!m) { std::fprintf(stderr, "%s/launch.txt: cannot read\n", dir.c_str()); return 2; }
    unsigned int ctas = 0, threads = 0, smem = 0;
    std::vector<void*> ptrs;
    std::vector<std::pair<std::string, size_t>> outs;
    std::vector<size_t> out_index;
    std::string kw;
    while (m >> kw) {
        if (kw == "ctas") m >> ctas;
        else if (kw == "threads") m >> threads;
        else if (kw == "smem") m >> smem;
        else if (kw == "buffer") {
            std::string name, file;
            m >> name >> file;
            std::vector<unsigned char> data;
            if (!tc_read(dir + "/" + file, data)) { std::fprintf(stderr, "%s: cannot read\n", file.c_str()); return 2; }
            void* d = nullptr;
            TC_CHECK(cudaMalloc(&d, data.size() ? data.size() : 16));
            if (data.size()) TC_CHECK(cudaMemcpy(d, data.data(), data.size(), cudaMemcpyHostToDevice));
            ptrs.push_back(d);
        } else if (kw == "output") {
            std::string name, fill;
            size_t elem = 0, count = 0;
            m >> name >> elem >> count >> fill;  // fill: one element's bytes in hex, little-endian (the poison)
            std::vector<unsigned char> host(elem * count);
            for (size_t i = 0; i < host.size(); ++i)
                host[i] = (unsigned char)std::stoul(fill.substr(2 * (i % elem), 2), nullptr, 16);
            void* d = nullptr;
            TC_CHECK(cudaMalloc(&d, host.size() ? host.size() : 16));
            if (host.size()) TC_CHECK(cudaMemcpy(d, host.data(), host.size(), cudaMemcpyHostToDevice));
            out_index.push_back(ptrs.size());
            ptrs.push_back(d);
            outs.emplace_back(name, host.size());
        } else { std::fprintf(stderr, "launch.txt: unknown line %s\n", kw.c_str()); return 2; }
    }
    std::vector<void*> args;
    for (auto& p : ptrs) args.push_back(&p);
    if (smem > 48u * 1024u)
        TC_CHECK(cudaFuncSetAttribute((const void*)TC_REPRO_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)smem));
    TC_CHECK(cudaLaunchKernel((const void*)TC_REPRO_KERNEL, dim3(ctas), dim3(threads), args.data(), smem, 0));
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        std::fprintf(stderr, "the launch failed: %s (%s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
        return 1;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
        std::vector<unsigned char> host(outs[i].second);
        if (host.size()) TC_CHECK(cudaMemcpy(host.data(), ptrs[out_index[i]], host.size(), cudaMemcpyDeviceToHost));
        std::ofstream f(dir + "/out_" + outs[i].first + ".bin", std::ios::binary);
        f.write((const char*)host.data(), (std::streamsize)host.size());
    }
    std::printf("%s: launched; outputs written (python check.py %s)\n", dir.c_str(), dir.c_str());
    return 0;
}
"""

_CHECK_PY = '''"""Diff a case's outputs (written by ./repro CASE_DIR) against the harness's reference, as the sweep did; needs
the harness (pip install tensor-core-harness, the version in ../versions.json). Prints the case's record; exit 1
when it does not pass."""
import json
import pickle
import sys
from pathlib import Path

import numpy as np

from harness import registry
from harness.contract import case_keys

case = Path(sys.argv[1])
kernel, expectations, outputs = pickle.loads((case / "expect.pkl").read_bytes())
got = {name: np.fromfile(case / f"out_{name}.bin", dtype=dtype).reshape(shape)
       for name, (dtype, shape) in outputs.items()}
family = registry.get(kernel.family)
(rec,) = family.readback(kernel, expectations, got)
case_of = getattr(expectations[0], "case", None)  # a family's expectation that names no case: as the sweep, none
if case_of is not None:
    rec.update(case_keys(family, case_of))  # what every record of the case carries (its facets, unsettled)
print(json.dumps(rec, indent=1, default=str))
sys.exit(0 if rec.get("status") == "pass" else 1)
'''


def failing(cases: dict) -> dict[str, list[dict]]:
    """kernel name -> the records of its cases that failed, faulted or timed out, in the file's order."""
    out: dict[str, list[dict]] = {}
    for rec in cases.values():
        if rec.get("status") in BAD:
            out.setdefault(str(rec.get("kernel")), []).append(rec)
    return out


def _file(root: Path, path: Path) -> dict:
    data = path.read_bytes()
    return {"path": str(path.relative_to(root)), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _kernel_and_cases(family, arch: str, name: str, ids: set[str]):
    """(Kernel, {case id: case}) of today's plan for the kernel `name`, planned from that kernel alone where the
    family can (kernel_list / kernel_cases); (None, {}) when the plan has no such kernel."""
    if hasattr(family, "kernel_list") and hasattr(family, "kernel_cases"):
        kernel = next((k for k in family.kernel_list(arch) if k.name == name), None)
        return kernel, ({c.id: c for c in family.kernel_cases(kernel) if c.id in ids} if kernel else {})
    for kernel, cases in family.kernels(arch):
        if kernel.name == name:
            return kernel, {c.id: c for c in cases if c.id in ids}
    return None, {}


def _versions(env: dict, tc) -> dict:
    from harness import __version__
    out = {"harness": __version__, "results_harness": env.get("harness")}
    for k in ("nvrtc", "nvrtc_build", "nvrtc_library", "ptx_isa", "toolchain", "ptxas", "driver", "cuda_driver_api",
              "cuda_runtime", "gpu", "gpu_uuid", "compute_capability", "python", "numpy", "cupy", "cuda_bindings"):
        out[k] = env.get(k)
    try:  # what compiled the bundle's modules (the sweep's toolchain: the cache holds the same modules)
        rec = tc.record()
        out.update({f"bundle_{k}": v for k, v in rec.items() if isinstance(v, (str, int)) or v is None})
    except Exception as e:  # no NVRTC here: the kernels could not be compiled for the bundle, and it says so
        out["bundle_nvrtc"] = f"unavailable ({type(e).__name__})"
    nvcc = shutil.which("nvcc")
    out["nvcc"] = None
    if nvcc:
        try:
            text = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
            out["nvcc"] = next((ln.strip() for ln in text.splitlines() if "release" in ln), text.strip()[-200:])
        except (OSError, subprocess.SubprocessError):
            pass
    return out


def _gencode(arch: str) -> str:
    num = arch.removeprefix("sm_")
    return f"-gencode arch=compute_{num},code=sm_{num}"


def _write_case(root: Path, kdir: Path, n: int, kernel, case, rec: dict, family) -> dict:
    inp, expectations = family.prepare(kernel, [case])
    cdir = kdir / "cases" / str(n)
    cdir.mkdir(parents=True, exist_ok=True)
    lines = [f"ctas {inp.ctas}", f"threads {inp.threads}", f"smem {inp.smem}"]
    buffers = [("images", inp.images), ("params", inp.params.view(np.uint8))] + list(inp.inputs.items())
    for name, arr in buffers:
        fname = f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}.bin"
        (cdir / fname).write_bytes(np.ascontiguousarray(arr).tobytes())
        lines.append(f"buffer {name} {fname}")
    outputs = {}
    for name, spec in inp.outputs.items():
        dt = np.dtype(spec.dtype)
        count = inp.ctas * int(np.prod(spec.shape))
        lines.append(f"output {name} {dt.itemsize} {count} {np.full(1, spec.fill, dt).tobytes().hex()}")
        outputs[name] = (dt.str, (inp.ctas, *spec.shape))
    (cdir / "launch.txt").write_text("\n".join(lines) + "\n")
    (cdir / "record.json").write_text(json.dumps(rec, indent=1, default=str) + "\n")
    (cdir / "expect.pkl").write_bytes(pickle.dumps((kernel, expectations, outputs)))
    return {"id": case.id, "status": rec["status"], "dir": str(cdir.relative_to(root)),
            "files": {p.name: _file(root, p) for p in sorted(cdir.iterdir())}}


def write(results_path: Path, out_dir: Path, toolchain=None) -> dict:
    """Write the bundle of every failing case of a results file into `out_dir` (created); returns the manifest
    (also written as manifest.json). No failing case: a manifest with no kernels. ResultsFileError for a file that
    is not a results file."""
    from harness import registry
    from harness.records import results
    from harness.run import compile as C, sass, toolchain as T
    env, cases, _summary = results.load(Path(results_path))
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    tc = toolchain
    if tc is None:
        try:
            tc = T.default()
        except Exception:
            tc = None
    manifest = {"schema_version": BUNDLE_VERSION,
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "results_file": str(results_path), "versions": _versions(env, tc), "kernels": [], "problems": []}
    for name, recs in failing(cases).items():
        fam_name, arch = recs[0].get("family"), recs[0].get("arch")
        try:
            family = registry.get(fam_name)
        except Exception:
            manifest["problems"].append(f"{name}: family {fam_name!r} is not one this harness has")
            continue
        kernel, by_id = _kernel_and_cases(family, str(arch), name, {r["id"] for r in recs})
        if kernel is None:
            manifest["problems"].append(f"{name}: not a kernel of today's {fam_name} plan for {arch}")
            continue
        kdir = root / name
        kdir.mkdir(parents=True, exist_ok=True)
        source = family.source(kernel)
        (kdir / "kernel.cu").write_text(source)
        job = C.compile_job(kernel)
        options = list(job.options_for(tc)) if tc is not None else list(job.options)
        if tc is not None:
            compiled = C.compile_one(job, tc)
            if compiled.error is not None or compiled.cubin_path is None:
                manifest["problems"].append(f"{name}: does not compile now: {compiled.error}")
            elif compiled.cubin_path.suffix == ".cubin":
                shutil.copyfile(compiled.cubin_path, kdir / "kernel.cubin")
                try:
                    (kdir / "kernel.sass").write_text(sass.sass(kdir / "kernel.cubin"))
                except (OSError, RuntimeError, FileNotFoundError) as e:
                    manifest["problems"].append(f"{name}: no SASS listing: {e}")
            ptx, log = T.bindings_compile(source, name, "compute_" + str(arch).removeprefix("sm_"), tuple(options),
                                          T.PTX)
            if ptx is None:
                manifest["problems"].append(f"{name}: NVRTC wrote no PTX: {log.strip()[:300]}")
            else:
                (kdir / "kernel.ptx").write_bytes(ptx)
        (kdir / "repro.cu").write_text(f"{source}\n#define TC_REPRO_KERNEL {name}\n{_HOST_MAIN}")
        (kdir / "check.py").write_text(_CHECK_PY)
        nvcc = f"nvcc {_gencode(str(arch))} -std=c++17 -lineinfo -o repro repro.cu"
        run = "for c in cases/*/; do timeout 60 ./repro \"$c\"; python check.py \"$c\"; done"
        (kdir / "run.sh").write_text(f"#!/bin/sh\n# {name} ({fam_name}, {arch}): build the standalone launcher, then "
                                     f"launch each failing case\ncd \"$(dirname \"$0\")\" || exit 2\n{nvcc} || exit 2\n"
                                     f"{run}\n")
        entry = {"kernel": name, "family": str(fam_name), "arch": str(arch), "dir": name, "nvrtc_options": options,
                 "files": {}, "nvcc": nvcc, "run": run, "cases": []}
        for n, rec in enumerate(recs):
            case = by_id.get(rec["id"])
            if case is None:
                manifest["problems"].append(f"{rec['id']}: not a case of today's plan of {name}")
                continue
            entry["cases"].append(_write_case(root, kdir, n, kernel, case, rec, family))
        entry["files"] = {p.name: _file(root, p) for p in sorted(kdir.iterdir()) if p.is_file()}
        manifest["kernels"].append(entry)
    (root / "versions.json").write_text(json.dumps(manifest["versions"], indent=1) + "\n")
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
