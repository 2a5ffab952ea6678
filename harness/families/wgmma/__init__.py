"""wgmma.mma_async (sm_90a): forms, cases, reference, kernel, readback; `FAMILY` is what the engine runs."""
from __future__ import annotations

import importlib

from harness.contract import Device, Kernel, LaunchInput, astray_in_a_storm, case_record, not_probed_in_a_storm
from harness.enums import Arch, FamilyName, OperandSource, Status


class WgmmaFamily:
    """The dense family; a family built on it (wgmma_sp) names its own subpackage, whose modules have the same
    names and functions (forms.all_kernel_keys, cases.cases_for_key, reference.prepared_in_parts (prepare_all a part
    at a time), kernel.source / pack / sass_check, readback.diff_launch)."""
    name = FamilyName.WGMMA
    package = "harness.families.wgmma"
    archs = (Arch.SM_90A,)
    facets = frozenset({"kind", "n", "dtype", "a_src", "data"})
    fast_compile = True  # one wgmma a variant, waited on at once: no schedule is under test

    def module(self, name: str):
        return importlib.import_module(f"{self.package}.{name}")

    def kernels(self, arch) -> list[tuple[Kernel, list]]:
        return [(k, self.kernel_cases(k)) for k in self.kernel_list(arch)]

    def kernel_cases(self, kernel: Kernel) -> list:
        """The cases of one kernel (its key's, both data modes, with the controls)."""
        return self.module("cases").cases_for_key(kernel.form, ("exact", "normal"), True)

    def kernel_list(self, arch) -> list[Kernel]:
        if arch not in self.archs:
            return []
        return [self.kernel_of(key) for key in self.module("forms").all_kernel_keys()]

    def kernel_of(self, key) -> Kernel:
        """The kernel of a wgmma kernel key (probes build keys of their own)."""
        return Kernel(self.name, Arch.SM_90A, key.name, key)

    @staticmethod
    def key_facets(key) -> dict:
        """The facets a kernel key fixes (a dense or sparse one: they have the same fields)."""
        return {"kind": key.kind, "n": key.n, "dtype": key.dtype, "a_src": key.a_src}

    def facet_values(self) -> dict:
        """The values its cases' facets take, offered as the selection flags' choices (harness.plan.facet_choices);
        N is any number. tests/test_plan.py holds every family to its cases' values."""
        forms = self.module("forms")
        return {"kind": forms.KINDS,
                "dtype": tuple(dict.fromkeys(d for k in forms.KINDS for d in forms.KIND_DTYPES[k])),
                "a_src": (str(OperandSource.SS), str(OperandSource.RS)), "data": ("exact", "normal")}

    def kernel_facets_of(self, kernel: Kernel) -> dict:
        """The facets every case of the kernel has: its key's (a case's key is its kernel's form)."""
        return self.key_facets(kernel.form)

    def facets_of(self, case) -> dict:
        return {**self.key_facets(case.key), "data": case.data, "control": bool(case.control)}

    def source(self, kernel: Kernel) -> str:
        return self.module("kernel").source(kernel.form)

    def sass_check(self, kernel: Kernel):
        return self.module("kernel").sass_check(kernel.form)

    def prepare(self, kernel: Kernel, cases: list):
        """The launch packed a part at a time (reference.PREPARE_PART cases), each part's cases slimmed to their
        expectations before the next part is drawn."""
        pack = self.module("kernel").pack
        parts, expectations = [], []
        for preps in self.module("reference").prepared_in_parts(cases):
            parts.append(pack(preps))
            expectations += [p.slim() for p in preps]
        return LaunchInput.concatenate(parts), expectations

    def readback(self, kernel: Kernel, expectations: list, outputs: dict) -> list[dict]:
        return [case_record(r["id"], kernel, r["status"], **{k: v for k, v in r.items()
                                                              if k not in ("id", "status", "kernel")})
                for r in self.module("readback").diff_launch(expectations, outputs["d_out"])]

    @staticmethod
    def case_fields(case) -> dict:
        return {}

    @staticmethod
    def settle_control(case, record: dict) -> dict:
        return record  # every wgmma control predicts an exact misread: a fault is not a catch

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, device: Device, timeout: float,
                 png_dir) -> list[dict]:
        from harness.families.wgmma import fragments_probe, probe
        # outside a fault storm, the register fragments first (accumulator; A registers of RS forms): the address
        # probe then decodes D, and packs an RS form's one-hot A, through the fragments the hardware was seen to use,
        # so a wrong fragment model is named as such and never read as another operand's wrong addresses
        found: dict = {}
        tables: dict = {}  # key -> the fragment tables the hardware was seen to use, where that probe ran first
        cubin_of = self._sibling_cubins(kernel, cubin_path, device)
        probed = [c for c in cases if not c.control]
        if getattr(device, "fault_storm", None):
            # a fault storm: register fragments decide no address, so they cannot make a launch fault, and a probe
            # that faults costs about a second. The address probes go first, through the model's fragments; the
            # fragment probe runs only for a case whose addresses all read as the model says, the failure unexplained
            recs = probe.diagnose(cases, cubin_of, device, timeout, png_dir, tables=tables)
            # a control gets no fragment probe, in a storm or not: nor its caveat
            explained = astray_in_a_storm(device, recs, [c.id for c in probed])
            frag = fragments_probe.diagnose([c for c in probed if c.id not in explained], cubin_of, device, timeout,
                                            png_dir)
            frag += [_fragments_not_probed(c.id, device, explained[c.id]) for c in probed if c.id in explained]
            for r in recs:
                if r["id"] in explained and r["status"] != "pass":  # a map read as the model's needs no caveat
                    r["caveat"] = ("decoded through the model's register fragments: the fragment probe was not run "
                                   "(a fault storm)")
        else:
            frag = fragments_probe.diagnose(probed, cubin_of, device, timeout, png_dir, found=found)
            tables.update((k, fragments_probe.tables(f)) for k, f in found.items())
            recs = probe.diagnose(cases, cubin_of, device, timeout, png_dir, tables=tables)
        bad = {}
        for r in frag:
            if r["status"] == "fail":
                bad.setdefault(r["id"], []).append(r["operand"])
        for r in recs:
            key = next((c.key for c in cases if c.id == r["id"]), None)
            if r["id"] in bad and tables.get(key) is None:  # decoded through the model's fragments after all
                r["caveat"] = (f"the fragment probe found the model's {' and '.join(bad[r['id']])} fragment wrong: "
                               "this address map went through it")
        return recs + frag

    def _sibling_cubins(self, kernel: Kernel, cubin_path, device: Device):
        """cubin_of(key) for the probes: this kernel's cubin, or a sibling's -- an RS form's SS sibling for the
        fragment probe, an SS form's RS sibling for the address probe's operands probed apart -- compiled, or
        taken from the cache, on demand (the device's `compile`; a simulated device's path names the kernel, so the
        sibling's is derived)."""
        def cubin_of(key):
            if key == kernel.form:
                return cubin_path
            if kernel.name in str(cubin_path) and "/nonexistent/" in str(cubin_path):
                return str(cubin_path).replace(kernel.name, key.name)
            return device.compile(self.kernel_of(key))
        return cubin_of


def _fragments_not_probed(case_id: str, device: Device, address: dict) -> dict:
    """The fragment probe's record of a case of a fault storm whose address probe found its operand read astray."""
    return {"type": "diagnosis", "id": case_id, "operand": "D", "probe": "accumulator", "status": "not-probed",
            "summary": not_probed_in_a_storm(device, address, "accumulator",
                                             "Register fragments decide no address, so they cannot explain a fault, "
                                             "and the probe would most likely fault too, at the cost of a fresh CUDA "
                                             "context")}


FAMILY = WgmmaFamily()
__all__ = ["FAMILY", "Status"]
