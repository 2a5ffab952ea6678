"""The mutation run: plant, one at a time, a plausible bug in a model (or in the harness's verdicts), run the
CPU tests CI runs (a fast subset: the model, layout, descriptor, reference, diff, tcgen05 and verdict tests,
`-x -q`), and report which test caught it. Every plant is undone in `finally`; the tree is left as it was.

    python tests/mutations/run.py                 # every mutation; writes tests/mutations/RESULTS.md
    python tests/mutations/run.py NAME [NAME ...] # some of them, printed only
    python tests/mutations/run.py --tcgen05       # tcgen05's, on its test modules; writes RESULTS-tcgen05.md
    python tests/mutations/run.py --list

Each run first runs its tests with nothing planted (they must pass) and names the commit it tested.

A mutation whose bug no test catches makes the run exit 1 (and says NOTHING caught it): add or fix a test.
tests/oracles/plant_layout_bugs.py is the older, tcgen05-data-layout-only run; its plants are repeated here.
"""
from __future__ import annotations

import glob
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import planting  # noqa: E402  (this folder's: a plant that leaves no bytecode behind)

# (name, what the bug is, old text, new text): the old text must occur exactly once in exactly one file of harness/
MUTATIONS = [
    # ---- wgmma register fragments (harness/spec/fragments.py)
    ("wgmma_d_register_pairs_swapped", "D fragment: the two register pairs of a thread (rows r and r+8) swapped",
     "row = 16 * w + l // 4 + 8 * ((i // 2) % 2)", "row = 16 * w + l // 4 + 8 * (1 - (i // 2) % 2)"),
    ("wgmma_d_f16_halves_swapped", "f16 D: the two 16-bit halves of a register swapped",
     "reg, shift, bits, nregs = i // 2 + 0 * row, 16 * (i % 2) + 0 * row, 16, n // 4",
     "reg, shift, bits, nregs = i // 2 + 0 * row, 16 * (1 - i % 2) + 0 * row, 16, n // 4"),
    ("wgmma_a_k_halves_swapped", "A fragment (16-bit): the two K halves (cols 0-7 / 8-15) swapped",
     "col = 2 * (l % 4) + (j % 2) + 8 * (j // 4)", "col = 2 * (l % 4) + (j % 2) + 8 * (1 - j // 4)"),
    ("wgmma_a_tf32_rows_by_k", "A fragment (tf32): row half chosen by the K half",
     "row = 16 * w + l // 4 + 8 * (j % 2)", "row = 16 * w + l // 4 + 8 * (j // 2)"),
    ("wgmma_a_8bit_k_halves_swapped", "A fragment (8-bit): the two K halves swapped",
     "col = 4 * (l % 4) + (j % 4) + 16 * (j // 8)", "col = 4 * (l % 4) + (j % 4) + 16 * (1 - j // 8)"),
    ("tmem_ld_16x256b_rows", "tcgen05.ld 16x256b: row half taken from the wrong register bit",
     "lane, col = l // 4 + 8 * ((r // 2) % 2), r % 2 + 2 * (l % 4) + 8 * (r // 4)",
     "lane, col = l // 4 + 8 * (r % 2), r % 2 + 2 * (l % 4) + 8 * (r // 4)"),
    # ---- shared-memory layouts and swizzles (harness/spec/layouts.py)
    ("swizzle_xor_off_by_one_bit", "swizzle: the row phase XORed one bit too high",
     "    return a ^ (phase << m)\n", "    return a ^ (phase << (m + 1))\n"),
    ("swizzle_base_offset_sign", "swizzle: the base offset added to the row phase instead of subtracted",
     "phase = ((a >> (m + s)) - base_offset) & mask", "phase = ((a >> (m + s)) + base_offset) & mask"),
    ("swizzled_k_major_uses_lbo", "K-major swizzled layout: chunks strided by LBO (the spec ignores it)",
     "byte = group * L.sbo + row * W + chunk * 16", "byte = group * L.sbo + row * W + chunk * max(L.lbo, 16)"),
    ("mn_major_lbo_sbo_swapped", "MN-major swizzled layout: LBO and SBO roles swapped",
     "byte = (chunk % per_row) * 16 + (chunk // per_row) * L.lbo + krow * W + kgroup * L.sbo",
     "byte = (chunk % per_row) * 16 + (chunk // per_row) * L.sbo + krow * W + kgroup * L.lbo"),
    ("interleave_k_major_rows_32b", "no-swizzle K-major: core-matrix rows 32 bytes apart instead of 16",
     "byte = group * L.sbo + chunk * L.lbo + row * 16", "byte = group * L.sbo + chunk * L.lbo + row * 32"),
    # ---- descriptors (harness/spec/descriptors.py)
    ("wgmma_desc_lbo_sbo_swapped", "wgmma descriptor encoder: LBO and SBO fields swapped",
     "            | matrix_descriptor_encode(d.lbo) << 16\n            | matrix_descriptor_encode(d.sbo) << 32\n"
     "            | d.base_offset << 49\n            | WGMMA_SWIZZLE_CODE",
     "            | matrix_descriptor_encode(d.sbo) << 16\n            | matrix_descriptor_encode(d.lbo) << 32\n"
     "            | d.base_offset << 49\n            | WGMMA_SWIZZLE_CODE"),
    ("base_offset_formula", "the spec's base offset from address bits 8-10 instead of 7-9",
     "    return (pattern_start >> 7) & 7", "    return (pattern_start >> 8) & 7"),
    ("descriptor_encode_14_bits", "matrix-descriptor-encode keeps 16 address bits instead of 18",
     "return (x & 0x3FFFF) >> 4", "return (x & 0xFFFF) >> 4"),
    ("tcgen05_desc_base_offset_bit", "tcgen05 smem descriptor: base offset one bit too high",
     "            | d.base_offset << 49\n            | (1 if d.lbo_mode", "            | d.base_offset << 50\n            | (1 if d.lbo_mode"),
    ("idesc_n_field_shift", "instruction descriptor: N>>3 one bit too high",
     "((d.n >> 3) & 0x3F) << 17", "((d.n >> 3) & 0x3F) << 18"),
    ("idesc_m_field_shift", "instruction descriptor: M>>4 one bit too low",
     "v |= ((d.m >> 4) & 0x1F) << 24", "v |= ((d.m >> 4) & 0x1F) << 23"),
    # ---- element types and the reference (harness/spec/dtypes.py, families/wgmma/reference.py)
    ("tf32_low_bits_kept", "tf32: the low 13 mantissa bits not ignored when the tensor core reads",
     "            b = b & np.uint64(~((1 << self.ignored_low_bits) - 1) & 0xFFFFFFFF)\n", "            b = b\n"),
    ("imm_scale_ignored", "wgmma imm-scale-a/b (-1) ignored by the reference",
     "prod = (v.scale_a * a_vals) @ (v.scale_b * b_vals_nk).T", "prod = a_vals @ b_vals_nk.T"),
    ("s32_saturates_instead_of_wrapping", "s32 accumulation without .satfinite saturates instead of wrapping",
     "            return np.clip(d, -(1 << 31), (1 << 31) - 1)\n        return ((d + (1 << 31)) % (1 << 32)) - (1 << 31)",
     "            return np.clip(d, -(1 << 31), (1 << 31) - 1)\n        return np.clip(d, -(1 << 31), (1 << 31) - 1)"),
    ("satfinite_ignored", ".satfinite ignored: s32 wraps",
     "        if v.satfinite:\n            return np.clip", "        if False:\n            return np.clip"),
    ("scale_d_ignored", "scale-d ignored: C always accumulated",
     "return prod + (c_vals if case.scale_d else 0.0)", "return prod + c_vals"),
    # ---- tcgen05 data paths (harness/families/tcgen05/datapaths.py)
    ("tcgen05_m64_rows_not_split", "tcgen05 M=64 (layout F): rows on lanes 0-63 instead of 16 per lane quarter",
     "        lane, col = 32 * (r // 16) + r % 16, c\n", "        lane, col = r, c\n"),
    ("tcgen05_cg2_no_fold", "tcgen05 cta_group::2 M=128: column halves not folded onto lanes 64-127",
     "cta, lane, col = r // 64, r % 64 + 64 * (c // (n // 2)), c % (n // 2)", "cta, lane, col = r // 64, r % 64, c"),
    ("tcgen05_a_lane_m64_identity", "tcgen05 A in TMEM (M=64): lane = row",
     "    return 32 * (row // 16) + row % 16 if m == 64 else row", "    return row"),
    ("ue8m0_bias_128", "ue8m0 scale factors decoded as 2^(code-128)",
     '    return dtypes.get("ue8m0").from_bits(codes)', '    return np.exp2(codes.astype(np.float64) - 128)'),
    ("sf_smem_offset_rows", "scale-factor tile: 32-row groups 8 bytes apart instead of 4",
     "* (mn // 128)) + 16 * (mn % 32) + 4 * ((mn // 32) % 4)",
     "* (mn // 128)) + 16 * (mn % 32) + 8 * ((mn // 32) % 4)"),
    # ---- the harness's verdicts (no false green)
    ("wgmma_control_passes_when_it_merely_differs", "a wgmma negative control passes when the result merely differs",
     'rec["status"] = "pass" if differs and nbad[i] == 0 else "fail"', 'rec["status"] = "pass" if differs else "fail"'),
    ("tcgen05_control_passes_uncaught", "a tcgen05 negative control passes even when the device ignored it",
     'rec["status"] = "pass" if caught and (n == 0 or not exact) else "fail"',
     'rec["status"] = "pass" if (n == 0 or not exact) else "fail"'),
    ("merge_not_run_outranks_pass", "merge: not-run outranks an outcome that ran",
     '_RANK = {"not-run": -2,', '_RANK = {"not-run": 9,'),
    ("compare_ignores_no_longer_run", "compare: passing before and not run now is no regression",
     'lost = bool(report["missing_in_new"] or report["no_longer_run"])', 'lost = bool(report["missing_in_new"])'),
    ("unusable_gpu_looks_like_no_gpu", "start-up: a CUDA error other than no-device is taken for 'no GPU'",
     "        if not _is_no_device(e):\n", "        if False:\n"),
    ("nothing_ran_exits_0", "a sweep where nothing ran exits 0",
     "    if not summary.get(\"ran\") and summary.get(\"not-run\"):\n        return ExitCode.NOTHING_RAN",
     "    if False:\n        return ExitCode.NOTHING_RAN"),
    ("tcgen05_ws_m32_no_quarters", "tcgen05 .ws M=32 (layout G): column quarters not spread over the lane quarters",
     "        lane, col = r + 32 * (c // (n // 4)), c % (n // 4)\n", "        lane, col = r, c\n"),
    ("tmem_ld_32x32b_lane_per_register", "tcgen05.ld 32x32b: register r reads lane r instead of column r",
     "        lane, col = l + 0 * r, r + 0 * l\n", "        lane, col = r + 0 * l, l + 0 * r\n"),
    ("idesc_transpose_b_bit", "instruction descriptor: transpose-B written to transpose-A's bit",
     "int(d.transpose_b) << 16", "int(d.transpose_b) << 15"),
    ("error_counts_as_ran", "Status.ran: a case recorded error (unusable GPU) counts as run",
     "        return self not in (Status.NOT_RUN, Status.ERROR, Status.COMPILE_ERROR)",
     "        return self not in (Status.NOT_RUN, Status.COMPILE_ERROR)"),
    ("unusable_gpu_recorded_not_run", "sweep: an unusable GPU's cases recorded not-run (as if no GPU were there)",
     'emit([case_record(c.id, k, Status.ERROR, error=f"GPU unusable: {problem}"',
     'emit([case_record(c.id, k, Status.NOT_RUN, reason=f"GPU unusable: {problem}"'),
    ("controls_counted_as_ordinary", "sweep summary: negative controls counted with the ordinary cases",
     "self._count(f.status, f.id in controls)", "self._count(f.status, False)"),
    ("compare_ignores_unchecked_failures", "compare: a failure of a case never checked before is no regression",
     '                               or report["failing_unchecked_before"] or (lost',
     '                               or (lost'),
    ("wgmma_positive_passes_with_mismatches", "wgmma readback: an ordinary case passes with mismatches",
     '            rec["status"] = "pass" if nbad[i] == 0 else "fail"', '            rec["status"] = "pass"'),
    ("unisolated_cases_recorded_pass", "engine: cases of a faulting launch left unisolated are recorded pass",
     "        return [case_record(expectations[j].case.id, kernel, e.status, isolated=False,",
     "        return [case_record(expectations[j].case.id, kernel, \"pass\", isolated=False,"),
    ("isolation_budget_ignored", "the sweep's isolation budget is never spent",
     "        return self.spent >= self.total", "        return False"),
    # ---- tcgen05 models settled against NVIDIA's code (issue 54)
    ("tcgen05_block_scale_blocks_interleaved", "block-scale product: A's factors tiled over K instead of one per block",
     "a_s = a * np.repeat(scale_codes_to_values(f.scale_type, sfa), bk, axis=1)",
     "a_s = a * np.tile(scale_codes_to_values(f.scale_type, sfa), (1, bk))"),
    ("tcgen05_block_scale_b_unscaled", "block-scale product: B's factors ignored",
     "b_s = b_eff * np.repeat(scale_codes_to_values(f.scale_type, sfb), bk, axis=1)", "b_s = b_eff"),
    ("tcgen05_zero_mask_polarity", ".ws zero-column mask: the columns kept are zeroed and the masked ones kept",
     "        b_eff[zero, :] = 0", "        b_eff[~zero, :] = 0"),
    ("tcgen05_e2m1_low_bits", "an e2m1 A in Tensor Memory in the low bits of its byte (not bits 5-2)",
     'CONTAINER_SHIFT = {"e2m1": 2}', "CONTAINER_SHIFT = {}"),
    ("tcgen05_tf32_mn_major_any_swizzle", "an MN-major tf32 operand allowed any swizzle (the ISA: 128B_base32b only)",
     'MN_MAJOR_ONLY_SWIZZLE = {"tf32": "128B_base32b"}', "MN_MAJOR_ONLY_SWIZZLE = {}"),
    ("base32b_eight_k_rows", "128B_base32b: SBO over 8 K-rows (CUTLASS's atom is 4)",
     'MN_KROWS_PER_ATOM = {"128B_base32b": 4}', "MN_KROWS_PER_ATOM = {}"),
    ("tcgen05_f8f6f4_pair_mn_b_steps_16", "f8f6f4 pair with an MN-major B: N in steps of 16 (CUTLASS: 32)",
     'step = 32 if kind == "i8" or (kind == "f8f6f4" and transpose_b) else 16', 'step = 32 if kind == "i8" else 16'),
    ("tcgen05_tmem_not_poisoned", "Tensor Memory not poisoned before an MMA that does not accumulate",
     "        tmem_in[:, :, :dcols] = TMEM_POISON\n", "        tmem_in[:, :, :0] = TMEM_POISON\n"),
    ("tcgen05_observation_counted_as_pass", "an undefined probe (observation) recorded as a pass",
     'rec.update({"status": "observed", "prediction": "observation"})',
     'rec.update({"status": "pass", "prediction": "observation"})'),
    ("tcgen05_scale_input_d_ignored", "scale-input-d ignored: the input D not scaled by 2^-s",
     'sid = SCALE_INPUT_D if f.variant in ("sid", "dol_sid") else 0', "sid = 0"),
    ("tcgen05_lane_mask_bit_order", "disable-output-lane: lane l masked by bit 31 - l % 32 of its word",
     ">> (lane % 32).astype(np.uint64)) & 1) == 1", ">> (31 - lane % 32).astype(np.uint64)) & 1) == 1"),
    ("tcgen05_collector_one_mma", "collector sequences: only the first MMA counted",
     "expected = f.mmas * prod + (cm", "expected = prod + (cm"),
    # ---- the last three gaps of issue 54: the shifts' models, sm_103a's K = 96, the A collector with A in TMEM
    ("tcgen05_ashift_unshifted", ".ashift modelled as the plain product (A's rows not shifted)",
     "        prod = np.vstack([np.zeros((1, K)), a[:-1]]) @ b_eff.T", "        prod = a @ b_eff.T"),
    ("tcgen05_shift_down_unmoved", "tcgen05.shift modelled as no move of D's lanes",
     "        prep.expected = prep.expected.ravel()[source].reshape(c.m, c.n)", "        source = source"),
    ("tcgen05_shift_down_16_columns", "tcgen05.shift modelled over 16 columns (the ISA: 32-byte elements, .31x256b)",
     "SHIFT_LANES, SHIFT_COLUMNS = 32, 8", "SHIFT_LANES, SHIFT_COLUMNS = 32, 16"),
    ("tcgen05_undefined_row_compared", "a shift's undefined row compared like the others (not excluded)",
     "bad = np.where(keep, ~stale, ~(got == prep.expected) | stale) & ~skip",
     "bad = np.where(keep, ~stale, ~(got == prep.expected) | stale)"),
    ("tcgen05_k96_factors_4_5_in_first_columns", "K = 96 .block16: factors 4-5 in the first 4 columns' bytes 0-1",
     "mn // 32 + SF_PER_ATOM * (block // SF_PER_ATOM), block % SF_PER_ATOM", "mn // 32, block % SF_PER_ATOM"),
    ("tcgen05_k96_one_copy", "K = 96 .block16: one tcgen05.cp an operand (factors 4-5 never copied)",
     "return -(-sf_blocks(f) // SF_PER_ATOM) if f.block_scaled else 0", "return 1 if f.block_scaled else 0"),
    ("tcgen05_k96_scale_vec_spelling", "K = 96 issued as .scale_vec::NX (the ISA aliases it only at K = 64 / 128)",
     'vec = f"block{f.k96_block}" if f.k96_block else SCALE_VEC[f.kind]', "vec = SCALE_VEC[f.kind]"),
    ("tcgen05_k96_on_sm_100a", "K = 96 swept on sm_100a too (PTX ISA: sm_103a only)",
     '(k96_forms() if arch == "sm_103a" else [])', "k96_forms()"),
    ("tcgen05_ashift_fill_allowed", "collector::a::fill / use allowed with .ashift (the ISA: illegal)",
     "    if ashift and op in COLLECTOR_NOT_WITH_ASHIFT:", "    if False:"),
]

SUBSET = ["tests/test_fragments.py", "tests/test_layouts.py", "tests/test_descriptors.py", "tests/test_dtypes.py",
          "tests/test_reference.py", "tests/test_diff.py", "tests/test_spec_examples.py", "tests/test_addresses.py",
          "tests/test_tcgen05.py", "tests/test_tcgen05_layouts_vs_cutlass.py", "tests/test_zero_column_mask.py",
          "tests/test_no_false_green.py", "tests/test_merge.py", "tests/test_compare.py", "tests/test_mass_faults.py",
          "tests/test_tcgen05_rules.py", "tests/test_tcgen05_vs_cutlass.py",
          "tests/test_cute_oracle.py"]  # in this order (the slowest last): the first failure is reported
# the tcgen05 run (`--tcgen05`): the mutations planted in tcgen05's models, against the tcgen05 test modules only
# (a 2-core machine: the whole subset for each of them takes far longer and adds no catch)
TCGEN05_FILES = ("harness/families/tcgen05/", "harness/spec/idesc.py", "harness/spec/desc_tcgen05.py",
                 "harness/spec/zero_mask.py")
TCGEN05_NAMES = ("base32b_eight_k_rows",)  # planted in a shared file (layouts.py), caught by tcgen05's tests
TCGEN05_SUBSET = ["tests/test_zero_column_mask.py", "tests/test_descriptors.py", "tests/test_tcgen05_rules.py",
                  "tests/test_tcgen05_layouts_vs_cutlass.py", "tests/test_tcgen05_vs_cutlass.py",
                  "tests/test_tcgen05.py"]
# the compile/SASS tests are slow and no model mutation reaches them
DESELECT = "not sass and not compiles and not fits_shared"


def locate(old: str) -> Path:
    hits = [Path(f) for f in sorted(glob.glob(str(ROOT / "harness" / "**" / "*.py"), recursive=True))
            if old in Path(f).read_text()]
    if len(hits) != 1 or hits[0].read_text().count(old) != 1:
        raise SystemExit(f"mutation text must occur once in one file, found in {[str(h) for h in hits]}: {old!r}")
    return hits[0]


def _pytest(subset: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "--tb=no", "-p", "no:cacheprovider",
                           "-m", "not slow", "-k", DESELECT, *subset], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200, env=planting.ENV)


def run_one(name: str, old: str, new: str, subset: list[str] = SUBSET) -> tuple[str, str, float]:
    f = locate(old)
    t = time.time()
    with planting.planted(f, old, new):
        r = _pytest(subset)
    failed = [ln.split(" ", 1)[1].split(" - ")[0] for ln in r.stdout.splitlines() if ln.startswith("FAILED ")]
    errors = [ln.split(" ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("ERROR ")]
    return str(f.relative_to(ROOT)), (failed or errors or ["NOTHING"])[0], time.time() - t


def commit() -> str:
    """The tree the run tested: HEAD's hash, and '+ uncommitted changes' when the tree differs from it."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return (head or "(not a git checkout)") + (" + uncommitted changes" if dirty else "")


def unplanted(subset: list[str]) -> float:
    """The subset with nothing planted must pass first (else a 'catch' may be a failure already there)."""
    t = time.time()
    r = _pytest(subset)
    if r.returncode != 0:
        tail = "\n".join(r.stdout.splitlines()[-15:])
        raise SystemExit(f"the tests fail with nothing planted; fix them before a mutation run:\n{tail}")
    return time.time() - t


def main(argv) -> int:
    if argv[:1] == ["--list"]:
        for name, what, _, _ in MUTATIONS:
            print(f"{name}: {what}")
        return 0
    tc = argv[:1] == ["--tcgen05"]
    names = argv[1:] if tc else argv
    subset = TCGEN05_SUBSET if tc else SUBSET
    chosen = [m for m in MUTATIONS if (not names or m[0] in names)
              and (not tc or m[0] in TCGEN05_NAMES or str(locate(m[2]).relative_to(ROOT)).startswith(TCGEN05_FILES))]
    tested = commit()
    secs = unplanted(subset)
    print(f"unplanted: {len(subset)} test modules pass at {tested} ({secs:.0f}s)", flush=True)
    rows, missed = [], []
    for name, what, old, new in chosen:
        where, caught, secs = run_one(name, old, new, subset)
        print(f"{name}: {'caught by ' + caught if caught != 'NOTHING' else 'NOTHING caught it'} ({secs:.0f}s)",
              flush=True)
        rows.append((name, what, where, caught))
        if caught == "NOTHING":
            missed.append(name)
    if not names:
        lines = ["# Mutation run" + (" (tcgen05)" if tc else ""), "",
                 (f"`python tests/mutations/run.py --tcgen05` plants each bug below (the mutations of tcgen05's "
                  f"models), one at a time, runs the tcgen05 test modules ({', '.join(subset)}; `pytest -x -q -m "
                  f"'not slow'`) and records the first test that failed." if tc else
                  "`python tests/mutations/run.py` plants each bug below, one at a time, in the model or harness "
                  "code, runs the CPU tests (`pytest -x -q -m 'not slow'` on the model, layout, descriptor, "
                  "reference, diff, tcgen05 and verdict tests), and records the first test that failed.") +
                 " Every planted bug must be caught.", "",
                 f"Tested tree: {tested}; with nothing planted the same tests pass.", "",
                 f"{len(rows) - len(missed)} of {len(rows)} caught.", "",
                 "| mutation | the planted bug | file | first test that caught it |", "| --- | --- | --- | --- |"]
        lines += [f"| `{n}` | {w} | `{f}` | {'**NOTHING**' if c == 'NOTHING' else '`' + c + '`'} |"
                  for n, w, f, c in rows]
        (Path(__file__).parent / ("RESULTS-tcgen05.md" if tc else "RESULTS.md")).write_text("\n".join(lines) + "\n")
    print(f"{len(rows) - len(missed)} of {len(rows)} caught" + (f"; NOT caught: {', '.join(missed)}" if missed else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
