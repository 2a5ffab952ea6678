"""No object the interpreter may share is handed to C code to write.

NVRTC once wrote its log's NUL into `b" " * 1`, which is CPython's shared one-byte object: for the rest of the
process `b" "` was `b"\\x00"`, and Python 3.12 compiled every later module's f-strings without their one-space
parts, so the main job's kernel sources lost their spaces and nothing compiled (while pytest, whose process had
compiled the kernel module first, stayed green). Three checks:
  * in a fresh interpreter, compiles whose logs are empty (every output kind, both NVRTC paths) leave `b" "` whole
    and f-strings compiling right, and then the harness's own kernel source still has its spaces;
  * at run time, every NVRTC call that writes into a buffer is handed a writable one (a wrapper refuses `bytes`);
  * statically, no module of the package, the tests or the benchmarks builds an immutable buffer to be written
    (`b"..." * n`, `bytes(n)`) or hands a bytes literal to a C function that writes.
"""
import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.run import toolchain as T

ROOT = Path(__file__).resolve().parent.parent
TRIVIAL = 'extern "C" __global__ void k(int *o) { if (o) *o = 1; }\n'

# functions of C libraries (NVRTC, nvJitLink, the driver) whose last arguments are buffers they write into
C_WRITERS = ("nvrtcGetProgramLog", "nvrtcGetPTX", "nvrtcGetCUBIN", "nvrtcGetLTOIR", "nvrtcGetOptiXIR",
             "nvrtcGetNVVM", "get_linked_cubin", "get_linked_ptx", "get_error_log", "get_info_log",
             "cuMemcpyDtoH", "cuMemcpyDtoHAsync", "memmove", "memcpyAsync", "readinto")


def test_an_empty_log_leaves_the_interpreter_whole(tmp_path):
    """A fresh process: compile with empty logs (cubin and PTX, cuda.bindings and ctypes), then the shared `b" "`
    is still a space, an f-string compiled afterwards keeps its spaces, and a wgmma kernel's source made afterwards
    (its module imported only now) has the spaces its PTX needs."""
    script = textwrap.dedent(f"""
        from harness.run import toolchain as T
        src = {TRIVIAL!r}
        for out in (T.CUBIN, T.PTX):
            data, log = T.bindings_compile(src, "k", "sm_90a", (), out)
            assert data and log == "", (out, log)
            data, log = T.ctypes_compile(T.bound_library_path(), src, "k", "sm_90a", (), out)
            assert data and log == "", (out, log)
        assert bytearray(bytes([32]))[0] == 32, bytes([32])  # the shared one-byte object (b" " itself is folded)
        a, b = "x", "y"
        assert eval(compile('f"{{a}} {{b}}"', "<late>", "eval")) == "x y"
        from harness.families.wgmma import forms, kernel
        key = next(k for k in forms.all_kernel_keys() if k.a_src == "SS")
        text = kernel.source(key)
        assert ".reg .b32 " in text and ".b32tc_d" not in text, text[:2000]
        print("whole")
    """)
    # every module compiled afresh in that process (a pycache of its own): the f-strings must be compiled after the
    # NVRTC calls, not read from bytecode an earlier process wrote
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "whole", proc.stderr[-3000:]


def _refusing_bytes(fn, name):
    def wrapper(*args):
        immutable = [type(a).__name__ for a in args[1:] if isinstance(a, bytes)]
        assert not immutable, f"{name} handed an immutable bytes to write into"
        return fn(*args)
    return wrapper


@pytest.mark.parametrize("output", [T.CUBIN, T.PTX])
def test_every_buffer_nvrtc_writes_is_writable(output, monkeypatch):
    """cuda.bindings' writers wrapped to refuse `bytes`: the harness's compile goes through them (a log is always
    asked for) and must hand each a writable buffer; the ctypes path's writers likewise."""
    from cuda.bindings import nvrtc
    seen = []
    for name in ("nvrtcGetProgramLog", "nvrtcGetPTX", "nvrtcGetCUBIN"):
        fn = getattr(nvrtc, name)
        monkeypatch.setattr(nvrtc, name, _refusing_bytes(lambda *a, _f=fn, _n=name: (seen.append(_n), _f(*a))[1],
                                                         name))
    data, _ = T.bindings_compile(TRIVIAL, "k", "sm_90a", (), output)
    assert data and "nvrtcGetProgramLog" in seen and ("nvrtcGetPTX" if output == T.PTX else "nvrtcGetCUBIN") in seen

    lib = T._load(T.bound_library_path())
    for name in ("nvrtcGetProgramLog", "nvrtcGetPTX", "nvrtcGetCUBIN"):
        monkeypatch.setattr(lib, name, _refusing_bytes(getattr(lib, name), name), raising=False)
    data, _ = T.ctypes_compile(T.bound_library_path(), TRIVIAL, "k", "sm_90a", (), output)
    assert data


def test_the_runtime_check_catches_an_immutable_buffer(monkeypatch):
    """The negative control of the check above: the old code's `b" " * size` is refused by the wrapper."""
    from cuda.bindings import nvrtc
    monkeypatch.setattr(nvrtc, "nvrtcGetProgramLog", _refusing_bytes(nvrtc.nvrtcGetProgramLog, "log"))
    monkeypatch.setattr(T, "out_buffer", lambda n: b"\x01" * max(n, 1))  # immutable (and not a shared object)
    with pytest.raises(AssertionError, match="immutable bytes"):
        T.bindings_compile(TRIVIAL, "k", "sm_90a", ())


def _immutable(node) -> bool:
    """An expression whose value is an immutable `bytes`: a literal, `b"..." * n` or `bytes(...)`."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bytes)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _immutable(node.left) or _immutable(node.right)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "bytes"


def immutable_buffers(text: str, path: str = "<src>") -> list[str]:
    """Where a C writer (C_WRITERS) is handed an immutable buffer: an immutable expression itself, or a name the
    same function (or module) last bound to one before the call."""
    out = []
    tree = ast.parse(text, path)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    for scope in [tree, *scopes]:
        bound: dict[str, list[tuple[int, bool]]] = {}
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        bound.setdefault(t.id, []).append((node.lineno, _immutable(node.value)))
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name not in C_WRITERS:
                continue
            for arg in node.args[1:]:
                if _immutable(arg):
                    out.append(f"{path}:{node.lineno}: {name} is handed {ast.unparse(arg)}")
                elif isinstance(arg, ast.Name):
                    before = [imm for line, imm in sorted(bound.get(arg.id, [])) if line <= node.lineno]
                    if before and before[-1]:
                        out.append(f"{path}:{node.lineno}: {name} writes into {arg.id}, an immutable bytes")
    return sorted(set(out))


def test_no_module_builds_an_immutable_buffer_to_be_written():
    files = [p for d in ("harness", "tests", "benchmarks", "tools") for p in sorted((ROOT / d).rglob("*.py"))]
    files.append(ROOT / "conftest.py")
    found = [hit for f in files if f.exists() for hit in immutable_buffers(f.read_text(), str(f.relative_to(ROOT)))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("planted", ['log = b" " * size', "log = size * b'\\0'", "log = bytes(size)", "log = b' '"])
def test_the_static_check_catches_each_planted_buffer(planted):
    """Each immutable buffer handed to NVRTC is caught, at module level and inside a function; a bytearray is not."""
    call = "nvrtc.nvrtcGetProgramLog(prog, log)"
    assert immutable_buffers(f"{planted}\n{call}\n"), planted
    assert immutable_buffers(f"def f(size):\n    {planted}\n    {call}\n"), planted
    assert immutable_buffers(f"nvrtc.nvrtcGetProgramLog(prog, {planted.split(' = ')[1]})\n"), planted
    assert not immutable_buffers(f"{planted}\nlog = bytearray(size)\n{call}\n"), planted
