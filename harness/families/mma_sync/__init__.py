"""Warp-level `mma.sync` / `mma.sp` and `ldmatrix` / `stmatrix` (PTX ISA 9.7.14), as CPU-side models.

This package holds the knowledge the family will run on (issue 58, first part), no engine part yet:

- `forms`: every instruction form an H100 (sm_90a, which runs every sm_80 / sm_89 form) executes, as validated
  frozen dataclasses, and the list of all of them;
- `fragments`: each form's A, B, C/D fragment maps (lane, register, sub-element) <-> (row, col) of the matrix, the
  sparse A operand's compressed storage and its metadata's thread and bit assignment;
- `ldmatrix`: which lane supplies which row address and which lane / register receives which element for
  ldmatrix / stmatrix .m8n8 .x1/.x2/.x4 [.trans] .b16, CuTe-style Swizzle<B,M,S>, and the per-lane row addresses
  that make ldmatrix load an mma operand fragment straight out of a (swizzled) shared-memory tile.

There is no `FAMILY` object and no registry line yet: the kernels, cases, reference and readback come later.
"""
