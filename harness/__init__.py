"""Validation harness for NVIDIA tensor-core instructions: wgmma (sm_90a), sequences of wgmma in one kernel
(wgmma_seq, sm_90a) and tcgen05 (sm_100a/sm_103a).

Modules, in the direction data flows:
  dtypes, layouts, fragments, descriptors   the spec's models (pure numpy)
  wgmma, cases, reference                   instruction forms, cases, expected results
  kernel_source, compile                    CUDA source from kernels/, NVRTC cubins, SASS
  launch, diff, results, sweep              run on the GPU, compare, record
  cli                                       python -m harness ...
"""
__version__ = "0.1.0"
