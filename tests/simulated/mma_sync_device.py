"""A simulated sm_90a GPU for the mma_sync family: it runs a launch from the launch alone (the parameters, the
inputs and the shared-memory images, never the expectations), doing what the kernel does to each CTA's warp: A and B
from a_in / b_in or by ldmatrix [.trans] from the image at the row addresses each lane was handed (the ldmatrix
model), the variant the parameters name (its metadata read through that variant's selector), D = A B + C through the
fragment maps; it writes D, A and B as the kernel does. Its readings are the family's models, so it checks the launch
packing, the paths, the variants and the readback, not the models (tests/test_mma_sync_vs_cutlass.py checks those
against CUTLASS; the H100 checks them against the hardware).

`misread` makes a faulty device: a function (kernel name, outputs) -> outputs, applied after the simulation
(tests/test_mma_sync_family.py swaps two lanes' D registers with it). The probe tests (tests/test_mma_sync_probe.py)
plant misreadings inside the simulation instead, through maps of elements or addresses:
  * `element_misread[op]` for op 'A' or 'B': (row, col) -> (row, col); after the load (either path) the register slot
    the model gives element e holds element f(e) of the operand as handed (a load that misplaces elements);
  * `element_misread['D']`: the slot the model gives element e of C and D holds element f(e) (C read in, D written
    out through the hardware's map, as one accumulator fragment);
  * `address_misread[op]`: byte addresses -> byte addresses, applied to every address ldmatrix reads for op.
Probe launches hand the kernel arbitrary bits (codes, not numbers): where D is not exact in its type the simulation
rounds it, as a GPU would, instead of refusing (prepare() has checked every case's inputs are exact already)."""
from __future__ import annotations

import numpy as np

from harness.contract import LaunchInput
from harness.families.mma_sync import forms, fragments, store
from harness.families.mma_sync.cases import LD_PATH, form_maps, operand_maps, words
from harness.families.mma_sync.ldmatrix import MatrixMoveForm, ldmatrix, stmatrix
from harness.families.mma_sync.reference import POISON, ST_BYTES, d_bits, expand, from_bits, pack, product, to_bits, unpack

KEYS = {k.name: k for k in forms.all_kernel_keys()}
misread = None  # set by a test: (kernel name, outputs) -> outputs
element_misread: dict = {}  # operand -> (row, col) -> (row, col), set by a test
address_misread: dict = {}  # operand -> addresses -> addresses, set by a test


def _permuted(fm, element_bits: np.ndarray, f) -> np.ndarray:
    """Element bits [inst, rows, cols] rearranged so that position e holds element f(e)."""
    inst, row, col = np.indices(element_bits.shape)
    r, c = f(row, col)
    return element_bits[inst, r, c]


def _ldmatrix(move, addresses, image, f) -> np.ndarray:
    """ldmatrix as the model has it, every address read through f (bytes past the image read as 0)."""
    matrix, row, col = move.elements
    addr = f(np.asarray(addresses, np.int64)[8 * matrix + row] + 2 * col)
    img = np.concatenate([np.asarray(image, np.uint8), np.zeros(max(0, int(addr.max()) + 2 - image.size), np.uint8)])
    half = img[addr].astype(np.uint32) | (img[addr + 1].astype(np.uint32) << 8)
    return half[..., 0] | (half[..., 1] << 16)


def _d_bits(form, d, what) -> np.ndarray:
    try:
        return d_bits(form, d, what)
    except AssertionError:  # a probe's codes: D rounded into its type, as the tensor core would
        if form.dtype == "s32":
            raise
        with np.errstate(invalid="ignore", over="ignore"):
            return to_bits(form.dtype, d)


def run(cubin_path, kernel_name, launch) -> dict[str, np.ndarray]:
    inp = LaunchInput.load(launch)
    key = KEYS[kernel_name]
    n = inp.ctas
    out = {"d_out": np.full((n, 32, words(key, "D")), POISON, np.uint32),
           **({"st_out": np.full((n, ST_BYTES // 4), POISON, np.uint32)} if "st_in" in inp.inputs else {}),
           "a_out": np.full((n, 32, words(key, "A")), POISON, np.uint32),
           "b_out": np.full((n, 32, words(key, "B")), POISON, np.uint32)}
    for i in range(n):
        p = inp.params[i]
        image = inp.images[int(p["image_offset"]):int(p["image_offset"]) + int(p["image_bytes"])]
        variant = int(p["variant"])
        vs = forms.variants(key)
        # the elements are those of the form the launch names (m8n8k4 .f16's layouts differ), never the key's first
        maps = form_maps(vs[variant]) if variant < len(vs) else operand_maps(key)
        regs = {}
        for j, op in enumerate(("A", "B")):
            path = int(p[f"{op.lower()}_path"])
            if path in (LD_PATH["ldmatrix"], LD_PATH["ldmatrix.trans"]):
                move = MatrixMoveForm(maps[op].registers, trans=path == LD_PATH["ldmatrix.trans"])
                if op in address_misread:
                    regs[op] = _ldmatrix(move, inp.inputs["ld_rows"][i][:, j], image, address_misread[op])
                else:
                    regs[op] = ldmatrix(move, inp.inputs["ld_rows"][i][:, j], image)
            else:
                regs[op] = inp.inputs[f"{op.lower()}_in"][i]
            if op in element_misread:
                regs[op] = pack(maps[op], _permuted(maps[op], unpack(maps[op], regs[op]), element_misread[op]))
        if variant >= len(vs):  # the kernel issues nothing: D stays poisoned (and is stored so)
            out["a_out"][i], out["b_out"][i] = regs["A"], regs["B"]
            if "st_in" in inp.inputs:
                _store(inp.inputs["st_in"][i], out["d_out"][i], inp.inputs["c_in"][i], image, out["st_out"][i])
            continue
        form = vs[variant]
        a = from_bits(form.atype, unpack(maps["A"], regs["A"]))
        if form.sparse:
            a = expand(form, a[0], fragments.decode_metadata(form, inp.inputs["e_in"][i]))[None]
        b = from_bits(form.btype, unpack(maps["B"], regs["B"]))
        c_bits = unpack(maps["C"], inp.inputs["c_in"][i])
        f = element_misread.get("D")
        if f is not None:  # C read in through the hardware's map: element f(e) from the model's slot of e
            moved = np.zeros_like(c_bits)
            inst, row, col = np.indices(c_bits.shape)
            r, cc = f(row, col)
            moved[inst, r, cc] = c_bits
            c_bits = moved
        with np.errstate(invalid="ignore", over="ignore"):
            c = from_bits(key.ctype, c_bits).astype(np.int64) if key.ctype == "s32" else from_bits(key.ctype, c_bits)
            d = product(form, a, b, c)
        bits = _d_bits(form, d, kernel_name)
        out["d_out"][i] = pack(maps["D"], bits if f is None else _permuted(maps["D"], bits, f))
        out["a_out"][i], out["b_out"][i] = regs["A"], regs["B"]
        if "st_in" in inp.inputs:
            _store(inp.inputs["st_in"][i], out["d_out"][i], inp.inputs["c_in"][i], image, out["st_out"][i])
    return misread(kernel_name, out) if misread else out


def _store(st_in, d_words, c_words, image, st_out) -> None:
    """The kernel's stmatrix store of D (.x4: D and C) into its window, the tile copied out (store.py)."""
    which = int(st_in[32])
    if not which:
        return
    move = store.STORE_MOVES[which - 1]
    window = np.array(image, np.uint8)
    stmatrix(move, st_in[:32].astype(np.int64), store.registers(move.num, d_words, c_words), window)
    base, size = int(st_in[33]), int(st_in[34])
    st_out[:size // 4] = window[base:base + size].view(np.uint32)
