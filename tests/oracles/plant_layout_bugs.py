"""Plant one bug at a time in a tcgen05 data-layout model, run the CPU tests, report which test caught it, restore the file.

python tests/oracles/plant_layout_bugs.py [name ...]   (run from the repository root; each plant is undone in `finally`)
"""
import subprocess, sys, re
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mutations"))
import planting  # noqa: E402  (a plant that leaves no bytecode behind)
P = {
 "ws64_rows_folded": ("harness/families/tcgen05/datapaths.py", "    elif ws and m == 64:  # E\n        lane, col = r + 64 * (c // (n // 2)), c % (n // 2)",
                      "    elif ws and m == 64:  # E\n        lane, col = 32 * (r // 16) + r % 16, c"),
 "ue8m0_bias_128": ("harness/families/tcgen05/cases.py", '    return dtypes.get("ue8m0").from_bits(codes)', '    return np.exp2(codes.astype(np.float64) - 128)'),
 "sf_model_lane_is_mn": ("harness/families/tcgen05/cases.py", "        lanes = (mn % 32)[..., None] + 32 * np.arange(4)\n        return lanes, mn // 32 +",
                         "        lanes = mn[..., None] + 0 * np.arange(4)\n        return lanes, 0 * mn +"),
 "sf_image_row_per_lane": ("harness/families/tcgen05/cases.py", "                img[start + sf_smem_offset(mn, blk)] = sf.astype(np.uint8)",
                           "                img[start + 16 * mn + blk] = sf.astype(np.uint8)"),
 "sfb_half_n_per_cta": ("harness/families/tcgen05/cases.py", '                                     ("b", sfb, sf_start + 1024)):',
                        '                                     ("b", sfb[r * cols_b:(r + 1) * cols_b], sf_start + 1024)):'),
 "subbyte_one_per_byte": ("harness/families/tcgen05/cases.py", "    return (byte & ~15) * 8 + (byte & 15) * bits", "    return byte * 8"),
 "copy_128x128b": ("harness/families/tcgen05/forms.py", '.32x128b.warpx4"', '.128x128b"'),
 "f16_high_half": ("harness/families/tcgen05/cases.py", "    return cta, lane, col, np.zeros_like(col)", "    return cta, lane, col, np.ones_like(col) if dtype == 'f16' else np.zeros_like(col)"),
 "base32b_packed_strides": ("harness/families/tcgen05/cases.py", '    if swizzle == "128B_base32b":\n        lbo, sbo = base32b_strides(st, rows, k)', '    if False:\n        lbo, sbo = base32b_strides(st, rows, k)'),
 "a_lane_m64_identity": ("harness/families/tcgen05/cases.py", "    return 32 * (row // 16) + row % 16 if m == 64 else row", "    return row"),
 "base32b_cutlass_8row": ("harness/families/tcgen05/cases.py", "(k % 4) * 128 + (k // 4) * sbo", "(k % 8) * 128 + (k // 8) * sbo"),
 "sfb_2x2_model_fold_at_64": ("harness/families/tcgen05/cases.py", "    half, j = mn // (mn_extent // 2), mn % (mn_extent // 2)", "    half, j = mn // 64, mn % 64"),
 "cg2_m128_no_fold": ("harness/families/tcgen05/cases.py", "        cta, lane, col = r // 64, r % 64 + 64 * (c // (n // 2)), c % (n // 2)", "        cta, lane, col = r // 64, r % 64, c"),
}
names = sys.argv[1:] or list(P)
for name in names:
    _, a, b = P[name]
    import glob  # the code may have moved between the family's modules: plant it where it is now
    (f,) = [g for g in sorted(glob.glob("harness/families/tcgen05/*.py")) if a in open(g).read()] or [None]
    with planting.planted(f, a, b):
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--tb=no", "-p", "no:cacheprovider", "tests/test_tcgen05.py",
                            "tests/test_tcgen05_layouts_vs_cutlass.py"], capture_output=True, text=True, timeout=900,
                           env=planting.ENV)
    failed = sorted({re.sub(r"\[.*", "", l.split("::", 1)[1].split(" ")[0]) for l in r.stdout.splitlines() if l.startswith("FAILED")})
    tail = r.stdout.strip().splitlines()[-1]
    print(f"{name}: {tail}\n    caught by: {', '.join(failed) or 'NOTHING'}", flush=True)
