"""Instruction timing as a regression baseline (`python -m harness bench`).

  forms.py    the timed forms (wgmma and mma.sync on sm_90a, tcgen05 on sm_100a/sm_103a), the default set, filters, the
              datasheet peaks and the published reference figures
  source.py   the CUDA source of a form's timing module (wgmma_timing.cu, mma_sync_timing.cu, tcgen05_timing.cu)
              and the launch jobs (shared-memory image, descriptors, grid)
  backend.py  the launch backend a GpuWorker imports (`harness.timing.backend`): warm-up and timed launches
  stats.py    samples -> summaries, timing records, compare with noise
  bench.py    compile (harness.run.compile) -> GpuWorker -> JSON Lines -> table; compare OLD NEW
"""
