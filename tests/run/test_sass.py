"""The SASS check (harness/run/sass.py): rules over a listing, and the sweep recording a kernel whose SASS lacks
what it tests as `compile-error` (with the missing instruction named, exit 1) before anything launches."""
import re

import pytest

from harness import contract, plan, registry, sweep
from harness.enums import ExitCode, Status
from harness.families.wgmma import kernel as wgmma_kernel
from harness.records import results
from harness.run import sass

LISTING = """
	.target	sm_90a

//--------------------- .text.k --------------------------
	.section	.text.k,"ax",@progbits
k:
.text.k:
        /*0080*/                   MOV R1, c[0x0][0x28] ;
        /*0090*/               @P0 HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], R24, UP0, gsb0 ;
        /*00a0*/              @!P1 HGMMA.64x8x16.F32 R24, R20, gdesc[UR4].negB, R24, UP0, gsb0 ;
.L_x_0:
        /*00b0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00c0*/               @P1 BRA `(.L_x_0) ;
        /*00d0*/                   RET.REL.NODEC R2 `(k) ;
.L_x_1:
//--------------------- .text.k2 --------------------------
	.section	.text.k2,"ax",@progbits
k2:
.text.k2:
        /*0000*/               @P0 BRA `(.L_x_9) ;
//--------------------- .nv.reservedSmem --------------------------
	.section	.nv.reservedSmem,"aw",@nobits
        /*0000*/                   NOT_AN_INSTRUCTION_OF_K2 ;
"""


def test_a_listing_is_read_as_opcodes_and_operands_with_predicates_dropped():
    ins = sass.instructions(sass.function_listings(LISTING)["k"])
    assert [i.opcode for i in ins] == ["MOV", "HGMMA.64x8x16.F32.BF16", "HGMMA.64x8x16.F32", "WARPGROUP.DEPBAR.LE",
                                       "BRA", "RET.REL.NODEC"]
    assert ins[2].operands == "R24, R20, gdesc[UR4].negB, R24, UP0, gsb0"


def test_a_target_named_by_a_label_reads_as_the_offset_it_labels():
    """nvdisasm names branch targets by labels numbered across the module; read as offsets in the function (as
    cuobjdump prints them), a kernel's code is the same in any module. A label the listing does not define stays."""
    k, k2 = (sass.instructions(sass.function_listings(LISTING)[f]) for f in ("k", "k2"))
    assert [i.operands for i in k[4:]] == ["0xb0", "R2 0x80"] and k2[0].operands == "`(.L_x_9)"


def test_a_listing_is_split_into_its_functions_and_names_its_arch():
    fns = sass.function_listings(LISTING)
    assert list(fns) == ["k", "k2"] and sass.listing_arch(LISTING) == "sm_90a"
    assert [i.opcode for i in sass.instructions(fns["k2"])] == ["BRA"]  # neither k's nor another section's
    assert sass.function_listings("\t.target\tsm_90a\n") == {} and sass.listing_arch("no target") is None
    # nvdisasm 13's header of an sm_90a cubin of NVRTC 12.8 and 12.9: flags, no .target
    flags = '\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_ACCELERATORS EF_CUDA_SM90 ' \
            'EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"\n'
    assert sass.listing_arch(flags) == "sm_90a"
    assert sass.listing_arch(flags.replace("EF_CUDA_ACCELERATORS ", "")) == "sm_90"


@pytest.mark.parametrize("rule, ok", [
    (contract.SassRule(r"HGMMA\.64x8x16\.F32", "f16 inputs"), True),  # a full match: .BF16 is another opcode
    (contract.SassRule(r"HGMMA\.64x8x16\.F32", "f16 inputs", count=1), True),
    (contract.SassRule(r"HGMMA\.64x8x16\.F32(\.\S+)?", "any", count=1), False),  # there are two
    (contract.SassRule(r"HGMMA\.64x8x16\.F32", "A from smem", operands=r"^R\d+, gdesc\["), False),
    (contract.SassRule(r"HGMMA\.64x8x16\.F32", "A from registers", operands=r"^R\d+, -?R\d+, gdesc\["), True),
    (contract.SassRule(r"HGMMA\.64x16x16\.F32", "N = 16"), False),
    (contract.SassRule(r"UTCCP(\.\S+)?", "no copy", count=0), True),
])
def test_rules_count_full_opcode_matches_and_operands(rule, ok):
    broken = rule.broken(sass.instructions(LISTING))
    assert (broken is None) == ok, broken
    if not ok:
        assert rule.what in broken and "found" in broken


def test_a_rule_with_a_negative_count_is_refused():
    with pytest.raises(ValueError):
        contract.SassRule("X", "x", count=-1)


def test_every_rule_of_every_kernel_of_every_family_compiles():
    """A rule's patterns compile when a listing is first judged (not when the rule is made: a warm sweep judges
    nothing); every family's every kernel's rules are compiled here, so that a bad pattern fails a test, not a
    sweep's compile."""
    checked = 0
    for fam in registry.all_families():
        for arch in fam.archs:
            for kernel in fam.kernel_list(arch):
                for rule in fam.sass_check(kernel).rules:
                    contract.pattern(rule.opcode)
                    if rule.operands is not None:
                        contract.pattern(rule.operands)
                    checked += 1
    assert checked > 1000


def test_a_rule_whose_pattern_does_not_compile_fails_when_it_judges():
    rule = contract.SassRule("HGMMA(", "an unbalanced group")
    with pytest.raises(re.error):
        rule.broken(sass.instructions(LISTING))


def small_plan():
    return plan.make(plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,), data_modes=("exact",)))


def test_a_kernel_whose_sass_lacks_its_instruction_is_a_compile_error_naming_it(tmp_path, monkeypatch):
    """A planted toolchain regression: the check wants N = 16's opcode from an N = 8 kernel."""
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    real = wgmma_kernel.sass_opcode
    monkeypatch.setattr(wgmma_kernel, "sass_opcode", lambda key, v: real(key, v).replace("64x8x", "64x16x"))
    p = small_plan()
    out = tmp_path / "r.jsonl"
    summary = sweep.execute(p, sweep.SweepConfig(out_path=out, workers=1), log=lambda m: None)
    _, recs, _ = results.load(out)
    assert recs and all(r["status"] == Status.COMPILE_ERROR for r in recs.values())
    err = next(iter(recs.values()))["error"]
    assert "BGMMA.64x16x256.AND.POPC" in err and "found 0" in err and "BGMMA.64x8x256.AND.POPC" in err
    assert summary["compile-error"] == p.cases and sweep.exit_code(summary) == ExitCode.FAILED


@pytest.mark.cute  # the simulated GPU reads its layouts from CuTe DSL
def test_the_verdict_is_cached_beside_the_cubin(tmp_path, monkeypatch):
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    p = small_plan()
    first = sweep.execute(p, sweep.SweepConfig(out_path=tmp_path / "a.jsonl", workers=1), log=lambda m: None)
    assert first["not-run"] == p.cases and not first.get("compile-error")
    sass.listing_of.cache_clear()
    sass.functions_of.cache_clear()

    def no_disassembly(data):
        raise AssertionError("a warm sweep disassembled a cubin")
    monkeypatch.setattr(sass, "sass_of_bytes", no_disassembly)
    second = sweep.execute(p, sweep.SweepConfig(out_path=tmp_path / "b.jsonl", workers=1), log=lambda m: None)
    assert second["not-run"] == p.cases and not second.get("compile-error")


def test_a_cubin_replaced_under_the_same_name_is_checked_again(tmp_path, monkeypatch):
    """A kernel folder reuses file names: the verdict of the old cubin must not stand for the new one."""
    from harness.families.wgmma import forms
    from harness.run import compile as C
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    n8, n16 = (forms.KernelKey("b1", n, "s32", "SS") for n in (8, 16))
    built = [C.compile_one(C.CompileJob(k.name, wgmma_kernel.source(k), "sm_90a")) for k in (n8, n16)]  # 2 cubins
    folder_cubin = tmp_path / "kernels" / "k.cubin"
    folder_cubin.parent.mkdir()
    folder_cubin.write_bytes(built[0].cubin_path.read_bytes())
    assert sass.verify(folder_cubin, wgmma_kernel.sass_check(n8)).ok
    folder_cubin.write_bytes(built[1].cubin_path.read_bytes())  # recompiled: now N = 16's code
    assert not sass.verify(folder_cubin, wgmma_kernel.sass_check(n8)).ok


def test_a_cubins_listing_is_disassembled_once_for_every_process(tmp_path, monkeypatch):
    """The listing is kept in the compile cache by the cubin's bytes and the disassembler (xdist workers and CLI
    subprocesses of one test run used to disassemble the same cubin again: 131 of 314 times)."""
    from harness.families.wgmma import forms
    from harness.run import compile as C
    monkeypatch.setenv("TC_HARNESS_CACHE", str(tmp_path / "cache"))
    key = forms.KernelKey("b1", 8, "s32", "SS")
    (built,) = C.compile_many([C.CompileJob(key.name, wgmma_kernel.source(key), "sm_90a")], workers=1)
    calls, real = [], sass.sass_of_bytes
    monkeypatch.setattr(sass, "sass_of_bytes", lambda data: calls.append(data) or real(data))
    data = built.cubin_path.read_bytes()
    text = sass.disassembly(data)
    assert ".text.wgmma_b1_m64n8k256_s32_SS" in text and "GMMA" in text and len(calls) == 1
    assert sass.disassembly(bytes(data)) == text and len(calls) == 1  # the same bytes, read again elsewhere
    monkeypatch.setattr(sass, "disassembler_id", lambda: "another-nvdisasm")
    assert sass.disassembly(data) == text and len(calls) == 2
    other = [j for j in [C.CompileJob("x", wgmma_kernel.source(forms.KernelKey("b1", 16, "s32", "SS")), "sm_90a")]]
    (built16,) = C.compile_many(other, workers=1)
    assert "m64n16k256" in sass.disassembly(built16.cubin_path.read_bytes()) and len(calls) == 3
