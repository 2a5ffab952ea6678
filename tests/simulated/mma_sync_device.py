"""A simulated sm_90a GPU for the mma_sync family: it runs a launch from the launch alone (the parameters, the
inputs and the shared-memory images, never the expectations), doing what the kernel does to each CTA's warp: A and B
from a_in / b_in or by ldmatrix [.trans] from the image at the row addresses each lane was handed (the ldmatrix
model), the variant the parameters name (its metadata read through that variant's selector), D = A B + C through the
fragment maps; it writes D, A and B as the kernel does. Its readings are the family's models, so it checks the launch
packing, the paths, the variants and the readback, not the models (tests/test_mma_sync_vs_cutlass.py checks those
against CUTLASS; the H100 checks them against the hardware).

`misread` makes a faulty device: a function (kernel name, outputs) -> outputs, applied after the simulation
(tests/test_mma_sync_family.py swaps two lanes' D registers with it)."""
from __future__ import annotations

import numpy as np

from harness.contract import LaunchInput
from harness.families.mma_sync import forms, fragments
from harness.families.mma_sync.cases import LD_PATH, operand_maps, words
from harness.families.mma_sync.ldmatrix import MatrixMoveForm, ldmatrix
from harness.families.mma_sync.reference import POISON, d_bits, expand, from_bits, pack, product, unpack

KEYS = {k.name: k for k in forms.all_kernel_keys()}
misread = None  # set by a test: (kernel name, outputs) -> outputs


def run(cubin_path, kernel_name, launch) -> dict[str, np.ndarray]:
    inp = LaunchInput.load(launch)
    key = KEYS[kernel_name]
    maps = operand_maps(key)
    n = inp.ctas
    out = {"d_out": np.full((n, 32, words(key, "D")), POISON, np.uint32),
           "a_out": np.full((n, 32, words(key, "A")), POISON, np.uint32),
           "b_out": np.full((n, 32, words(key, "B")), POISON, np.uint32)}
    for i in range(n):
        p = inp.params[i]
        image = inp.images[int(p["image_offset"]):int(p["image_offset"]) + int(p["image_bytes"])]
        regs = {}
        for j, op in enumerate(("A", "B")):
            path = int(p[f"{op.lower()}_path"])
            if path in (LD_PATH["ldmatrix"], LD_PATH["ldmatrix.trans"]):
                move = MatrixMoveForm(maps[op].registers, trans=path == LD_PATH["ldmatrix.trans"])
                regs[op] = ldmatrix(move, inp.inputs["ld_rows"][i][:, j], image)
            else:
                regs[op] = inp.inputs[f"{op.lower()}_in"][i]
        variant = int(p["variant"])
        vs = forms.variants(key)
        if variant >= len(vs):  # the kernel issues nothing: D stays poisoned
            out["a_out"][i], out["b_out"][i] = regs["A"], regs["B"]
            continue
        form = vs[variant]
        a = from_bits(form.atype, unpack(maps["A"], regs["A"]))
        if form.sparse:
            a = expand(form, a[0], fragments.decode_metadata(form, inp.inputs["e_in"][i]))[None]
        b = from_bits(form.btype, unpack(maps["B"], regs["B"]))
        c_bits = unpack(maps["C"], inp.inputs["c_in"][i])
        c = from_bits(key.ctype, c_bits).astype(np.int64) if key.ctype == "s32" else from_bits(key.ctype, c_bits)
        with np.errstate(invalid="ignore", over="ignore"):
            d = product(form, a, b, c)
        out["d_out"][i] = pack(maps["D"], d_bits(form, d, kernel_name))
        out["a_out"][i], out["b_out"][i] = regs["A"], regs["B"]
    return misread(kernel_name, out) if misread else out
