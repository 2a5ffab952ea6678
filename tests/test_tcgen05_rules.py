"""tcgen05 rules settled by NVIDIA's code and the PTX ISA (issue 54), each with a test that can fail:
the MN-major tf32 swizzle rule, where an e2m1 A sits in its Tensor Memory byte, Tensor Memory poisoned before an
MMA that does not accumulate, and the controls the ISA leaves undefined recorded as observations."""
import json

import numpy as np
import pytest

from harness.families.tcgen05 import cases as T, reference as R
from harness.families.tcgen05.forms import Form
from harness.spec import desc_tcgen05
from harness.spec.descriptors import DescriptorError
from tests.cli_in_process import run

ALL = {arch: [c for _, cs in T.all_cases(arch) for c in cs] for arch in ("sm_100a", "sm_103a")}


# ---------------------------------------------------------------------------------------------------- MN-major tf32

@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_mn_major_tf32_operands_use_128b_base32b_only(arch):
    """PTX ISA 9.7.16.10.3 / CUTLASS sm100_common.inl:92: an MN-major tf32 operand is 128B_base32b, nothing else;
    the cases still sweep it (A and B, SS and TS, one CTA and a pair; A in Tensor Memory is one CTA only) and f16's MN-major swizzles all four."""
    mn = [(c, op, sw) for c in ALL[arch] for op, major, sw in (("A", c.major_a, c.swizzle_a), ("B", c.major_b, c.swizzle_b))
          if major == "MN" and (op == "B" or c.form.a_src == "SS")]
    tf32 = [(c, op, sw) for c, op, sw in mn if c.form.kind == "tf32"]
    assert tf32 and {sw for _, _, sw in tf32} == {"128B_base32b"}
    assert {(c.form.cta_group, c.form.a_src, op) for c, op, _ in tf32} == \
        {(1, "SS", "A"), (1, "SS", "B"), (1, "TS", "B"), (2, "SS", "A"), (2, "SS", "B")}
    assert {sw for c, _, sw in mn if c.form.kind == "f16"} == {"none", "32B", "64B", "128B"}


@pytest.mark.parametrize("sw", ["none", "32B", "64B", "128B"])
def test_a_case_with_an_mn_major_tf32_operand_of_another_swizzle_cannot_be_built(sw):
    f = Form("tf32")
    with pytest.raises(DescriptorError, match=r"9\.7\.16\.10\.3.*sm100_common\.inl:92"):
        T.TcCase(f, 128, 64, "tf32", "tf32", "f32", "128B", sw, major_b="MN")
    with pytest.raises(DescriptorError, match="operand A needs swizzle 128B_base32b"):
        T.TcCase(f, 128, 64, "tf32", "tf32", "f32", sw, "128B_base32b", major_a="MN", major_b="MN")
    T.TcCase(f, 128, 64, "tf32", "tf32", "f32", sw, sw)  # K-major: any swizzle
    T.TcCase(Form("f16"), 128, 64, "f16", "f16", "f32", sw, sw, major_a="MN", major_b="MN")  # 16-bit: any


IDESC_TF32 = ["idesc", "--kind", "tf32", "--atype", "tf32", "--btype", "tf32", "--m", "128", "--n", "64", "--json"]


def test_idesc_and_desc_flag_an_mn_major_tf32_operand_of_another_swizzle():
    bad = run(*IDESC_TF32, "--transpose-b", "--swizzle-b", "64B")
    assert bad.returncode == 1 and any("operand B needs swizzle 128B_base32b, not 64B" in p
                                       for p in json.loads(bad.stdout)["problems"])
    assert run(*IDESC_TF32, "--transpose-b", "--swizzle-b", "128B_base32b", "--swizzle-a", "64B").returncode == 0
    assert run(*IDESC_TF32, "--swizzle-b", "64B").returncode == 0  # K-major B
    value = json.loads(run(*IDESC_TF32, "--transpose-a").stdout)["value"]
    dec = run("idesc", "--kind", "tf32", "--decode", value, "--swizzle-a", "32B")  # the rule holds when decoding too
    assert dec.returncode == 1 and "operand A needs swizzle 128B_base32b, not 32B" in dec.stdout
    desc = ["desc", "--arch", "sm_100a", "--start", "0", "--lbo", "512", "--sbo", "1024", "--kind", "tf32"]
    assert run(*desc, "--swizzle", "128B", "--major", "MN").returncode == 1
    assert run(*desc, "--swizzle", "128B_base32b", "--major", "MN").returncode == 0
    assert run(*desc, "--swizzle", "128B").returncode == 0  # K-major by default
    v = json.loads(run(*desc, "--swizzle", "64B", "--json").stdout)["value"]
    out = run("desc", "--arch", "sm_103a", "--decode", v, "--kind", "tf32", "--major", "MN")
    assert out.returncode == 1 and "needs swizzle 128B_base32b, not 64B" in out.stdout
    assert run("desc", "--arch", "sm_100a", "--decode", v, "--major", "MN").returncode == 2  # --major needs --kind
    assert desc_tcgen05.operand_swizzle_problem("f16", "MN", "64B") is None


# ---------------------------------------------------------------------------------------------------- e2m1 A in TMEM

@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
def test_a_4_and_6_bit_a_in_tensor_memory_sits_where_the_mma_reads_it(arch):
    """Every TS case of a 4/6-bit A: the byte of element (row, k) in A's Tensor Memory columns holds an e2m1 value
    in bits 5-2 (PTX ISA: 'the central 4 bits of the 8-bit container'; CUTLASS's fp4_shift_A), an e2m3 / e3m2
    value in bits 5-0, and nothing else; no case is `unsettled` for it any more."""
    from harness.families.tcgen05.datapaths import a_lane
    from harness.spec import dtypes
    cases = [c for c in ALL[arch] if c.form.a_src == "TS" and c.form.kind == "f8f6f4" and not c.control
             and dtypes.get(c.atype).bits < 8]
    assert {c.atype for c in cases} == {"e2m1", "e2m3", "e3m2"} and any(c.form.sparse for c in cases)
    for c in cases:
        prep = R.prepare(c, arch)
        a, col0 = prep.operands["a_stored"], prep.params[0]["a_tmem_col"]
        k = a.shape[1]
        words = prep.tmem_in[0][a_lane(c.m, np.arange(c.m))][:, col0:col0 + k // 4]
        got = words.view(np.uint8).reshape(c.m, -1)[:, :k]  # little-endian: byte j of column i is element 4i + j
        shift, width = (2, 4) if c.atype == "e2m1" else (0, 6)
        want = dtypes.get(c.atype).to_bits(a).astype(np.uint8)
        assert np.array_equal((got >> shift) & ((1 << width) - 1), want), c.id
        assert not np.any(got & ~np.uint8(((1 << width) - 1) << shift)), c.id
        assert "container" not in (T.unsettled_reason(c) or ""), c.id


# ---------------------------------------------------------------------------------------------------- shape legality

@pytest.mark.parametrize("argv,rule", [
    (["--kind", "f8f6f4", "--atype", "e4m3", "--btype", "e4m3", "--m", "128", "--n", "48", "--cta-group", "2",
      "--transpose-b"], "N = 48 is not legal for .kind::f8f6f4 cta_group::2 M = 128 (B is MN-major)"),
    (["--kind", "i8", "--atype", "s8", "--btype", "s8", "--m", "64", "--n", "24", "--transpose-b"],
     "N = 24 is not legal for .kind::i8 cta_group::1 M = 64 (B is MN-major)"),
    (["--kind", "i8", "--atype", "s8", "--btype", "s8", "--m", "128", "--n", "64", "--arch", "sm_103a"],
     ".kind::i8 is not supported on sm_103a"),
])
def test_idesc_refuses_the_encodings_cutlass_does_not_build(argv, rule):
    out = run("idesc", *argv, "--json")
    assert out.returncode == 1 and any(rule in p for p in json.loads(out.stdout)["problems"]), out.stdout
    legal = [a for a in argv if a not in ("--transpose-b", "--arch", "sm_103a")]
    assert run("idesc", *legal).returncode == 0  # the same shape with a K-major B (or on sm_100a) is legal
