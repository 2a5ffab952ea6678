"""A simulated tcgen05 device for the address probe's CPU tests (same `use_device` and `run` as harness.run.launch).

It executes a tcgen05 launch from its raw buffers, CTA by CTA, as the model says the tensor core does: it decodes
each CTA's instruction descriptor (M, N, types, transposes) and shared-memory descriptors
(harness.spec.desc_tcgen05.decode_tcgen05_smem_desc), reads A and B from the CTA's image through the layouts the
descriptors encode (harness.spec.layouts) -- or A from the Tensor Memory image the kernel stores (tmem_in, the
rows on datapaths.a_lane's lanes, K packed along 32-bit columns from a_tmem_col) --, computes D = A B^T (+ C when
enable_input_d) and writes it into the Tensor Memory read-back through datapaths.d_position, poison elsewhere.

A planted misreading makes it read differently from the model; it travels in the cubin path (which a simulated
device does not load), after '#', comma-separated:
    swizzle=<mode>@A|B      read that operand's descriptor as if it named swizzle <mode>
    swap-lbo-sbo@A|B        LBO and SBO swapped
    start+<bytes>@A|B       start address <bytes> further on
    tmem-a-col+<c>          A in Tensor Memory read from <c> columns further right
    tmem-a-lanes=<M>        A's rows read from the lanes of M=<M>'s data path (64: layout F, 128: identity)
Only cta_group::1 forms without .ws and without block scaling are simulated (what the probe covers).
"""
from __future__ import annotations

import numpy as np

from harness.families.tcgen05 import datapaths
from harness.families.tcgen05.cases import storage_dtype
from harness.families.tcgen05.forms import Form
from harness.families.tcgen05.reference import POISON
from harness.run.launch import LaunchInput
from harness.spec import desc_tcgen05, dtypes, idesc, layouts
from harness.spec.layouts import SmemLayout

TMEM_COLS = 512


def use_device(index: int) -> None:
    pass


def form_of(kernel_name: str) -> Form:
    parts = kernel_name.split("_")  # tcgen05_<kind>_cg<1|2>[_ws]_<SS|TS>
    return Form(parts[1], int(parts[2][2:]), "ws" in parts[3:], parts[-1])


def misreads_of(cubin_path: str) -> list[str]:
    """The planted misreadings named in the cubin path after '#'."""
    tail = str(cubin_path).split("#", 1)[1] if "#" in str(cubin_path) else ""
    return [item for item in tail.split(",") if item]


def _planted(lay: SmemLayout, role: str, plants: list[str]) -> SmemLayout:
    for item in plants:
        what, _, who = item.partition("@")
        if who != role:
            continue
        if what.startswith("swizzle="):
            lay = lay.moved(swizzle=what.split("=")[1], base_offset=0)
        elif what == "swap-lbo-sbo":
            lay = lay.moved(lbo=lay.sbo, sbo=lay.lbo)
        elif what.startswith("start+"):
            lay = lay.moved(start=lay.start + int(what[len("start+"):]))
        else:
            raise ValueError(f"unknown planted misreading {item!r}")
    return lay


def _read_smem(img: np.ndarray, desc: int, major: str, t: str, storage: str, rows: int, k: int, role: str,
               plants) -> np.ndarray:
    dec = desc_tcgen05.decode_tcgen05_smem_desc(int(desc))
    if dec["problems"]:
        raise RuntimeError(f"simulated device: descriptor {role} {dec['value']}: {dec['problems']}")
    f = dec["fields"]
    lay = SmemLayout(major, f["swizzle"], storage, rows, k, f["leading_byte_offset"], f["stride_byte_offset"],
                     f["start_address"], f["base_offset"])
    lay = _planted(lay, role, plants)
    need = int(layouts.element_bit_addresses(lay).max()) // 8 + 8
    if need > img.size:  # past the image: the window's other bytes, zeros here
        img = np.concatenate([img, np.zeros(need - img.size, np.uint8)])
    return dtypes.get(t).from_bits(layouts.read_image(lay, img))


def _read_tmem_a(tm: np.ndarray, col0: int, m: int, k: int, t: str, storage: str, plants) -> np.ndarray:
    w = dtypes.get(storage).bits
    per = 32 // w
    lane_m, dcol = m, 0
    for item in plants:
        if item.startswith("tmem-a-col+"):
            dcol = int(item[len("tmem-a-col+"):])
        elif item.startswith("tmem-a-lanes="):
            lane_m = int(item.split("=")[1])
    r, kk = np.meshgrid(np.arange(m), np.arange(k), indexing="ij")
    lane = datapaths.a_lane(lane_m, r)
    cells = tm[lane, col0 + dcol + kk // per].astype(np.uint64)
    bits = (cells >> ((kk % per) * w).astype(np.uint64)) & np.uint64((1 << w) - 1)
    return dtypes.get(t).from_bits(bits)


def _acc_bits(dtype: str, v) -> np.ndarray:
    if dtype == "s32":
        return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint64)
    return dtypes.get(dtype).to_bits(v).astype(np.uint64)


def run(cubin_path, kernel_name, launch):
    inp = LaunchInput.load(launch)
    form = form_of(kernel_name)
    if form.cta_group != 1 or form.ws or form.block_scaled:
        raise NotImplementedError(f"simulated device: {kernel_name} is not simulated")
    plants = misreads_of(cubin_path)
    read_cols = inp.outputs["tmem_out"].shape[1]
    out = np.full((inp.ctas, 128, read_cols), POISON, np.uint32)
    for j in range(inp.ctas):
        p = inp.params[j]
        img = inp.images[int(p["image_offset"]):int(p["image_offset"]) + int(p["image_bytes"])]
        fi = idesc.decode_idesc(int(p["idesc"]), form.kind)["fields"]
        m, n, K = fi["m"], fi["n"], idesc.KIND_K[form.kind]
        at, bt, dt = fi["atype"], fi["btype"], fi["dtype"]
        tm = np.zeros((128, TMEM_COLS), np.uint32)
        if p["enable_input_d"] or p["a_tmem_cols"]:  # the kernel stores read_cols columns of every lane
            tm[:, :read_cols] = inp.inputs["tmem_in"][j]
        if form.a_src == "TS":
            a = _read_tmem_a(tm, int(p["a_tmem_col"]), m, K, at, storage_dtype(form, at), plants)
        else:
            a = _read_smem(img, p["desc_a"], "MN" if fi["transpose_a"] else "K", at, storage_dtype(form, at), m, K,
                           "A", plants)
        b = _read_smem(img, p["desc_b"], "MN" if fi["transpose_b"] else "K", bt, storage_dtype(form, bt), n, K,
                       "B", plants)
        d = a @ b.T
        _, lane, col, _ = datapaths.d_position(m, n, 1, False, dt)
        if p["enable_input_d"]:
            from harness.families.tcgen05.readback import decode
            from types import SimpleNamespace
            c = SimpleNamespace(m=m, n=n, form=form, dtype=dt)
            d = d + decode(c, tm[None, :, :read_cols])
        tm[lane, col] = _acc_bits(dt, d).astype(np.uint32)
        out[j] = POISON
        out[j][lane, col] = tm[lane, col]
    return {"tmem_out": out, "status": np.zeros(inp.ctas, np.uint32)}
