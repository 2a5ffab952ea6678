"""Validation harness for NVIDIA tensor-core instructions: wgmma (sm_90a), its sparse form (wgmma_sp), sequences of
wgmma in one kernel (wgmma_seq, sm_90a) and tcgen05 (sm_100a/sm_103a).

Its layers, bottom first (docs/architecture.md, "The layers"; tests/test_layers.py holds every import to them):
  enums, cache, kernels      the vocabulary, the cache folder and its primitives, the CUDA headers every kernel shares
  contract, registry         what a family gives the engine and gets back; every family by name
  spec/                      the PTX ISA's models (pure numpy): element types, descriptors, canonical layouts, fragments
  diagnosis/                 the shared diagnosis kit: affine maps, address fits, bitmaps, words, pictures
  families/                  one subpackage per instruction family, each whole: forms, cases, reference, kernel and its
                             .cu template, readback, its probes
  api, tap                   the library over the models and the families
  run/                       the engine, which knows no family: NVRTC and the SASS check, GPU workers, launches
  plan, levels               which kernels and cases a sweep runs
  records/                   results files, compare, merge, JUnit, the results README's tables
  sweep, timing/, experiments/, doctor   a sweep (compile -> engine -> records -> diagnosis); timing; probes
  cli/                       python -m harness ...: one module per command group; the top layer, which nothing imports
"""
__version__ = "0.1.0"
