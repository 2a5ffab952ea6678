"""CuTe DSL oracle for tcgen05 objects. The DSL fixes its target arch per process (CUTE_DSL_ARCH), and the
tcgen05 atoms exist only for sm_100a, so this runs as its own process: `tmem_ld_layouts` starts it and reads
JSON back."""
import json
import os
import subprocess
import sys

import numpy as np

import cute_eval  # this folder is on the path: the script's own, or the tests'

SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")


def tmem_ld_layouts(requests):
    """For each (shape, num): (lanes, columns, [thread][value] -> lane * columns + column) of the tcgen05.ld
    copy atom's destination thread-value layout, in CuTe's (lane, column) tile of 32-bit cells."""
    return _in_sm100_process("ld", requests)


def tmem_mma_layouts(requests):
    """For each (operand 'C' or 'A', M, N (C) or K (A), cta_group, accumulator or A type), CuTe's Tensor
    Memory layout of that MMA fragment, per CTA: [row][col] -> (lane, 32-bit column, bit offset in it)."""
    return _in_sm100_process("mma", requests)


def _in_sm100_process(what: str, requests):
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a")
    out = subprocess.run([sys.executable, __file__, what, json.dumps(requests)], capture_output=True, text=True,
                         env=env, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _trace_each(collect, requests) -> None:
    """Call collect(*request) for every request inside one cute.jit trace, and stop before compiling (the
    DSL on a machine without the GPU would otherwise go on to build a kernel)."""
    import cutlass.cute as cute

    class Collected(Exception):
        pass

    @cute.jit
    def trace():
        for r in requests:
            collect(*r)
        raise Collected()

    try:
        trace()
    except Collected:
        pass


def _mma_main(requests):
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import OperandMajorMode as MM, tcgen05

    types = {"f32": cutlass.Float32, "f16": cutlass.Float16}
    result = []

    def collect(operand, m, nk, cg, t):  # plain Python: the DSL rewrites control flow inside cute.jit only
        group = tcgen05.CtaGroup.ONE if cg == 1 else tcgen05.CtaGroup.TWO
        src = tcgen05.OperandSource.TMEM if operand == "A" else tcgen05.OperandSource.SMEM
        acc = types[t] if operand == "C" else cutlass.Float32
        op = tcgen05.MmaF16BF16Op(cutlass.Float16, acc, (m, nk if operand == "C" else 64, 16), group, src,
                                  MM.K, MM.K)
        tm = cute.make_tiled_mma(op)
        if operand == "C":
            frag, bits = tm.make_fragment_C(tm.partition_shape_C((m, nk))), (32 if t == "f32" else 16)
        else:
            frag, bits = tm.make_fragment_A(tm.partition_shape_A((m, nk))), 16
        lay = cute.get(frag.layout, mode=[0])
        off = cute_eval.offsets(lay, cute.size(lay, mode=[0]), cute.size(lay, mode=[1])) * bits
        # in bits: lane << 21 | column << 5 | bit
        result.append(np.stack([off >> 21, (off >> 5) & 0xFFFF, off & 31], axis=-1).tolist())

    _trace_each(collect, requests)
    print(json.dumps(result))


def _main(requests):
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import tcgen05

    ops = {"32x32b": tcgen05.Ld32x32bOp, "16x64b": tcgen05.Ld16x64bOp, "16x128b": tcgen05.Ld16x128bOp,
           "16x256b": tcgen05.Ld16x256bOp, "16x32bx2": tcgen05.Ld16x32bx2Op}
    reps = {1: tcgen05.Repetition.x1, 2: tcgen05.Repetition.x2, 4: tcgen05.Repetition.x4,
            8: tcgen05.Repetition.x8}
    result = []

    def collect(shape, num):
        atom = cute.make_copy_atom(ops[shape](reps[num]), cutlass.Float32)
        dst = atom.layout_dst_tv
        nthr, nval = cute.size(dst, mode=[0]), cute.size(dst, mode=[1])
        result.append(cute_eval.offsets(dst, nthr, nval).tolist())

    _trace_each(collect, requests)
    print(json.dumps(result))


if __name__ == "__main__":
    {"mma": _mma_main, "ld": _main}[sys.argv[1]]([tuple(r) for r in json.loads(sys.argv[2])])
