"""wgmma.mma_async.sp (sm_90a), the structured-sparse A forms: forms, cases, reference, kernel, readback;
`FAMILY` is what the engine runs. Built on the dense family (harness.families.wgmma): its layouts, fragments,
kernel template, launch and diff, with the sparsity model of harness.spec.sparsity; the family object is the
dense one's, reading this subpackage's modules."""
from __future__ import annotations

from harness.contract import Device, Kernel
from harness.enums import FamilyName
from harness.families.wgmma import WgmmaFamily


class WgmmaSparseFamily(WgmmaFamily):
    name = FamilyName.WGMMA_SP
    package = "harness.families.wgmma_sp"

    @staticmethod
    def case_fields(case) -> dict:
        reason = case.unsettled
        return {"unsettled": reason} if reason else {}

    def diagnose(self, kernel: Kernel, cases: list, cubin_path, device: Device, timeout: float,
                 png_dir) -> list[dict]:
        """Its own probe: which thread's metadata nibble each chunk of A took its indices from (the dense family's
        address and fragment probes cover the operand layouts and fragments this family shares with it)."""
        from harness.families.wgmma_sp import metadata_probe
        return metadata_probe.diagnose([c for c in cases if not c.control], cubin_path, device, timeout)


FAMILY = WgmmaSparseFamily()
__all__ = ["FAMILY"]
