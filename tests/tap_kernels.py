"""The tap's proof kernels (tests/test_tap.py on the CPU, tests/test_tap_gpu.py and benchmarks/tap_proof.py on an
H100): kernels that build their descriptors in device code, as a DSL's lowering does, and record them through
harness/kernels/tc_tap.cuh.

wgmma (sm_90a): one warpgroup issues wgmma m64n24k16 f32 += f16 * f16 with A (64 x 16) and B (24 x 16) K-major with
128-byte swizzle, each in its own 1024-byte-aligned tile. B's stride between 8-row groups (SBO) is computed from
the tile's N the way tilelang#2593 / #2603 did wrong: with N = 8 mod 16 it comes out as half a group (512 bytes, not
8 rows x 128 bytes = 1024), unless `fixed`. The tap records A's and B's descriptors (tags 1 and 2) once per
warpgroup, and D goes out, so the misread is a real one.

tcgen05 (sm_100a): the kernel builds a tcgen05 shared-memory descriptor and the instruction descriptor of
.kind::f16 M = 128, N = 24, f16 x f16 -> f32, and records them (tag 3). `bug` 1 leaves out the fixed version bits
46-48 (triton#8032), 2 writes N >> 4 into the N field (the N = 8 mod 16 class again: N >> 3 is the encoding);
compiled on the CPU, and its descriptor arithmetic built for the host with g++ (tcgen05_values), so the values
decoded there are the kernel's own.
"""
from __future__ import annotations

from harness import api, tap

N = 24
TAG_A, TAG_B, TAG_TC = 1, 2, 3
WGMMA_NAME = "tap_wgmma_sbo"
TCGEN05_NAME = "tap_tcgen05_desc"

COMMON = r"""
#include "tc_tap.cuh"

__device__ __forceinline__ unsigned long long desc_field(unsigned int bytes) {
    return (unsigned long long)((bytes & 0x3FFFFu) >> 4);
}
"""

WGMMA_SOURCE = COMMON + r"""
// SBO of a K-major 128B-swizzled operand of n_rows rows, as a lowering that thinks in 16-row blocks computed it
// (tilelang#2593 class): rows per block = 16, except for a last block of 8 rows when n_rows = 8 mod 16, whose
// stride it takes for the whole operand.
__device__ __forceinline__ unsigned int b_sbo(int n_rows, int fixed) {
    if (fixed) return 8u * 128u;
    const unsigned int block_rows = (n_rows % 16 == 8) ? 8u : 16u;
    return block_rows / 2u * 128u;
}

extern "C" __global__ void __launch_bounds__(128, 1)
tap_wgmma_sbo(tc_tap_buffer* tap, const unsigned short* a_in, const unsigned short* b_in, float* d_out, int n_rows,
              int fixed)
{
    __shared__ __align__(1024) unsigned char smem[2 * 8192];
    const unsigned int tid = threadIdx.x;
    // A: 64 rows of 128 bytes (K = 16 f16 used: chunks 0-1 of each swizzled row), B: 24 rows; both as the host
    // laid them out (harness.api.address_map), copied 16 bytes at a time
    const uint4* a_src = reinterpret_cast<const uint4*>(a_in);
    const uint4* b_src = reinterpret_cast<const uint4*>(b_in);
    uint4* a_dst = reinterpret_cast<uint4*>(smem);
    uint4* b_dst = reinterpret_cast<uint4*>(smem + 8192);
    for (unsigned int i = tid; i < 8192u / 16u; i += 128u) { a_dst[i] = a_src[i]; b_dst[i] = b_src[i]; }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();

    const unsigned int a_addr = (unsigned int)__cvta_generic_to_shared(smem);
    const unsigned int b_addr = a_addr + 8192u;
    const unsigned long long swizzle_128b = 1ull << 62;
    const unsigned long long desc_a = desc_field(a_addr) | desc_field(16u) << 16 | desc_field(1024u) << 32
                                      | swizzle_128b;
    const unsigned long long desc_b = desc_field(b_addr) | desc_field(16u) << 16
                                      | desc_field(b_sbo(n_rows, fixed)) << 32 | swizzle_128b;
    tc_tap_warpgroup(tap, 1u, desc_a);
    tc_tap_warpgroup(tap, 2u, desc_b);

    float d[12];
    for (int i = 0; i < 12; ++i) d[i] = 0.0f;
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %14, 0;\n"  // scale-d 0: D = A * B
                 "wgmma.fence.sync.aligned;\n"
                 "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, %12, %13, p, 1, 1, 0, 0;\n"
                 "wgmma.commit_group.sync.aligned;\n"
                 "wgmma.wait_group.sync.aligned 0;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
                 : "l"(desc_a), "l"(desc_b), "r"(0u) : "memory");
    for (int i = 0; i < 12; ++i) d_out[tid * 12u + i] = d[i];
}
"""

# the descriptor arithmetic of tap_tcgen05_desc, compiled into the kernel and (tests/test_tap.py) into a host program
# with g++, so the values decoded on the CPU are the kernel's own
TCGEN05_DESCRIPTORS = r"""
#ifndef TC_HD
#define TC_HD __host__ __device__
#endif
TC_HD inline unsigned long long tc_desc_field(unsigned int bytes) {
    return (unsigned long long)((bytes & 0x3FFFFu) >> 4);
}
// B (K-major, 128B swizzle, LBO 16, SBO 1024) at shared address addr
TC_HD inline unsigned long long tc_b_desc(unsigned int addr, int bug) {
    const unsigned long long version = bug == 1 ? 0ull : 1ull << 46;  // triton#8032 left bit 46 out
    return tc_desc_field(addr) | tc_desc_field(16u) << 16 | tc_desc_field(1024u) << 32 | version
           | 2ull << 61;  // 128B swizzle is code 2 on tcgen05
}
// .kind::f16: dtype f32 (1) in bits 4-5, A and B f16 (0), N >> 3 in bits 17-22, M >> 4 in bits 24-28
TC_HD inline unsigned int tc_idesc(int n, int bug) {
    const unsigned int n_field = bug == 2 ? (unsigned int)n >> 4 : (unsigned int)n >> 3;
    return 1u << 4 | n_field << 17 | (128u >> 4) << 24;
}
"""

TCGEN05_SOURCE = COMMON + TCGEN05_DESCRIPTORS + r"""
extern "C" __global__ void tap_tcgen05_desc(tc_tap_buffer* tap, int n, int bug)
{
    __shared__ __align__(1024) unsigned char smem[8192];
    smem[threadIdx.x] = 0;
    const unsigned int addr = (unsigned int)__cvta_generic_to_shared(smem);
    tc_tap_warpgroup(tap, 3u, tc_b_desc(addr, bug), tc_idesc(n, bug));
    if (smem[threadIdx.x] == 1) tap->count = 0;  // keeps smem alive
}
"""


def options() -> tuple[str, ...]:
    return (f"-I{tap.include_dir()}", "-std=c++17")


def wgmma_declarations() -> list[tap.Declaration]:
    """What the kernel's author intends: A 64 x 16 and B 24 x 16, f16, K-major, 128B swizzle, packed (SBO 1024).
    The tiles' addresses are the kernel's own (check_start False)."""
    a = api.canonical_layout("f16", "K", "128B", rows=64, cols=16)
    b = api.canonical_layout("f16", "K", "128B", rows=N, cols=16)
    return [tap.Declaration(TAG_A, "A", "sm_90a", a, check_start=False),
            tap.Declaration(TAG_B, "B", "sm_90a", b, check_start=False)]


def tcgen05_declaration(arch: str = "sm_100a") -> tap.Declaration:
    b = api.canonical_layout("f16", "K", "128B", rows=N, cols=16)
    instr = api.InstrDescriptor("f16", "f16", "f16", "f32", 128, N)
    return tap.Declaration(TAG_TC, "B", arch, b, instr=instr, check_start=False)


def tcgen05_values(addr: int, n: int, bug: int, workdir) -> tuple[int, int]:
    """(desc, idesc) tap_tcgen05_desc records at shared address `addr`: its descriptor arithmetic
    (TCGEN05_DESCRIPTORS) built for the host with g++ and run (the kernel itself needs a Blackwell GPU)."""
    import subprocess
    from pathlib import Path
    src = Path(workdir) / "tcgen05_values.cpp"
    src.write_text("#define TC_HD\n#include <cstdio>\n" + TCGEN05_DESCRIPTORS + "int main(int, char** v) {\n"
                   "  unsigned a = (unsigned)std::atoi(v[1]); int n = std::atoi(v[2]), bug = std::atoi(v[3]);\n"
                   "  std::printf(\"%llu %u\\n\", tc_b_desc(a, bug), tc_idesc(n, bug));\n}\n")
    exe = Path(workdir) / "tcgen05_values"
    subprocess.run(["g++", "-std=c++17", "-include", "cstdlib", "-o", str(exe), str(src)], check=True,
                   capture_output=True, timeout=120)
    out = subprocess.run([str(exe), str(addr), str(n), str(bug)], check=True, capture_output=True, text=True)
    desc, idesc = out.stdout.split()
    return int(desc), int(idesc)


def images(seed: int = 57):
    """(A 64 x 16, B 24 x 16 as small integers in f16, exact in the f32 accumulator; A's and B's 8192-byte tile
    images, laid out by the PTX ISA's model for a 1024-aligned tile)."""
    import numpy as np
    from harness.spec import layouts
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, size=(64, 16)).astype(np.float16)
    b = rng.integers(-3, 4, size=(N, 16)).astype(np.float16)
    out = []
    for m, decl in zip((a, b), wgmma_declarations()):
        img = np.zeros(8192, np.uint8)
        layouts.write_image(decl.layout, m.view(np.uint16), img)
        out.append(img)
    return a, b, out[0], out[1]


def run_wgmma(fixed: bool, capacity: int = 16):
    """Launch tap_wgmma_sbo on this process's GPU (one warpgroup): (the tap's records, D as the kernel wrote it
    (64 x N), A, B, B's image). Needs CuPy and an sm_90a GPU."""
    import tempfile

    import cupy as cp
    import numpy as np
    from harness.run import compile as C
    from harness.spec import fragments

    cubin, log = C.nvrtc_compile(WGMMA_SOURCE, WGMMA_NAME, "sm_90a", options())
    if cubin is None:
        raise RuntimeError(f"NVRTC rejected {WGMMA_NAME}: {log}")
    a, b, img_a, img_b = images()
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        fn = cp.RawModule(path=f.name).get_function(WGMMA_NAME)
        buf = cp.asarray(np.frombuffer(bytes(tap.new_buffer(capacity)), np.uint8))
        d_out = cp.full(128 * 12, np.nan, np.float32)  # poisoned: a register the kernel does not write shows
        fn((1,), (128,), (buf, cp.asarray(img_a), cp.asarray(img_b), d_out, np.int32(N), np.int32(int(fixed))))
        cp.cuda.Device().synchronize()
        raw, regs = buf.get().tobytes(), d_out.get().reshape(128, 12)
    frag = fragments.wgmma_d_fragment(N, "f32")
    d = np.full((64, N), np.nan, np.float32)
    d[frag.row, frag.col] = regs
    return tap.read(raw), d, a, b, img_b


def misread_b(img_b, sbo: int):
    """B as the tensor core reads it from its tile with SBO `sbo` (the layout model: what a finding predicts)."""
    import numpy as np
    from harness.spec import layouts
    lay = wgmma_declarations()[1].layout.moved(sbo=sbo)
    return layouts.read_image(lay, img_b).astype(np.uint16).view(np.float16)
