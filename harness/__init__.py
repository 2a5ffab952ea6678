"""Validation harness for NVIDIA tensor-core instructions: wgmma (sm_90a), its sparse form (wgmma_sp), sequences of
wgmma in one kernel (wgmma_seq, sm_90a) and tcgen05 (sm_100a/sm_103a).

Subpackages, in the direction data flows:
  spec/        the PTX ISA's models (pure numpy): element types, descriptors, canonical layouts, fragments
  families/    one subpackage per instruction family, the same modules in each: forms, cases, reference, kernel
               (CUDA source from kernels/, packing a launch), readback (the diff)
  plan, sweep  which kernels and cases run; compile -> engine -> records, family-agnostic
  run/         NVRTC and the SASS check, the engine (host pools, one GPU worker per GPU), launches, core counts
  records/     results files, compare, merge, JUnit, the results README's tables
  diagnosis/, experiments/, timing/   what a failure read instead; probes; instruction timing
  cli/         python -m harness ...: one module per command group; the top layer, which nothing here imports
"""
__version__ = "0.1.0"
