"""The instruction families, one subpackage each with the same module names: forms (kernel keys), cases, reference
(expected values), kernel (CUDA source from the subpackage's .cu template, launch packing, SASS rules), readback (the
diff), and the family's own probes; `FAMILY` in each subpackage's __init__ is what the engine runs (harness/contract.py
says what it must answer; harness/registry.py finds it by name)."""
