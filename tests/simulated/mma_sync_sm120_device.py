"""A simulated sm_120a GPU for the mma_sync family's sm_120a kernels (kernel_sm120.py, mma_sync_sm120.cu): it runs a
launch from the launch alone (parameters, inputs, shared-memory images; never the expectations), doing what the
kernel does to each CTA's warp: D poisoned; the variant the parameters name; for an mma, A and B read out of their
registers through the fragment maps and containers, a sparse A expanded by the metadata in e_in, the scale factors
read from sf_in's bytes through the selectors' scale map, C from c_in, D = (A scale_A)(B scale_B) + C written
through D's map; for the sub-byte ldmatrix, the registers `SubByteLoad.load` gives from the image at the row
offsets in ld_rows (registers past .x{num} left poisoned). Its readings are the models (block_scaled.py), so it
checks the launch packing, the variants and the readback, not the models, and nothing about the hardware.

Faults a test plants:
  * `misread`: (kernel name, outputs) -> outputs, applied after the simulation (two lanes' D registers swapped);
  * `scale_misread`: (form, operand, registers uint32 [32]) -> registers, applied to scale-a-data / scale-b-data
    before the device reads its bytes (the two bytes a .scale_vec::2X selector picks, swapped)."""
from __future__ import annotations

import numpy as np

from harness.contract import LaunchInput
from harness.families.mma_sync import block_scaled as BS, fragments as FR, kernel_sm120 as KS
from harness.families.mma_sync.reference import POISON, expand, from_bits, to_bits

KEYS = {k.name: k for k in KS.all_keys()}
misread = None  # set by a test: (kernel name, outputs) -> outputs
scale_misread = None  # set by a test: (form, operand, registers) -> registers


def _mma(form: BS.BlockScaledForm, a_in, b_in, c_in, e_in, sf_in) -> np.ndarray:
    a = BS.decode_containers(form, "A", BS.unpack_registers(BS.a_map(form), a_in))
    if form.sparse:
        meta = BS.metadata_form(form)
        a = expand(meta, a, FR.decode_metadata(meta, e_in))
    b = BS.decode_containers(form, "B", BS.unpack_registers(BS.b_map(form), b_in))
    acc = BS.acc_map(form)
    c = from_bits(form.ctype, BS.unpack_registers(acc, c_in))
    scales = []
    if form.block_scaled:
        for j, op in enumerate("AB"):
            regs = np.asarray(sf_in[:, j], np.uint32)
            if scale_misread is not None:
                regs = scale_misread(form, op, regs.copy())
            scales.append(BS.decode_scales(form, op, regs))
    with np.errstate(invalid="ignore", over="ignore"):
        d = BS.reference_d(form, a, b, c, *scales)
        return BS.pack_registers(acc, to_bits(form.dtype, d))  # rounded into D's type, as a tensor core would


def run(cubin_path, kernel_name, launch) -> dict[str, np.ndarray]:
    inp = LaunchInput.load(launch)
    key = KEYS[kernel_name]
    vs = KS.variants(key)
    n = inp.ctas
    out = {"d_out": np.full((n, 32, KS.words(key)["D"]), POISON, np.uint32)}
    for i in range(n):
        p = inp.params[i]
        variant = int(p["variant"])
        if variant >= len(vs):  # the kernel issues nothing: D stays poisoned
            continue
        v = vs[variant]
        if key.group == "ldmatrix":
            image = inp.images[int(p["image_offset"]):int(p["image_offset"]) + int(p["image_bytes"])]
            out["d_out"][i, :, :v.num] = v.load(inp.inputs["ld_rows"][i].astype(np.int64), image)
            continue
        out["d_out"][i] = _mma(v, *(inp.inputs[x][i] for x in ("a_in", "b_in", "c_in", "e_in", "sf_in")))
    return misread(kernel_name, out) if misread else out
