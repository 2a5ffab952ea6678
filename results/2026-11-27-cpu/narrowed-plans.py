"""Time one plan.make in a fresh process: narrowed (as make does now) or the whole way (every case asked)."""
import sys, time
sys.path.insert(0, ".")
from harness import plan
SELS = {
    "wgmma --kind b1 --n 8": plan.Selection(families=("wgmma",), kinds=("b1",), n_values=(8,)),
    "wgmma --kind f16 --n 32 --dtype f32 --no-controls --match B:K/128B": plan.Selection(
        families=("wgmma",), kinds=("f16",), n_values=(32,), dtypes=("f32",), controls=False, match="B:K/128B"),
    "every family --n 64 --n 128": plan.Selection(n_values=(64, 128)),
}
name, narrow = sys.argv[1], sys.argv[2] == "narrowed"
t = time.process_time()
p = plan.with_collector_paused(plan.selected, SELS[name], {"tcgen05": "sm_100a"}, None, False, narrow)
print(f"{name:<70} {sys.argv[2]:<9} {time.process_time() - t:.3f} CPU s  {len(p.work)} kernels {p.cases} cases")
