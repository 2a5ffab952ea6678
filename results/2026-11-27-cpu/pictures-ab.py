"""CPU seconds of the two labelled pictures (run from a tree's root: PYTHONPATH=<tree> python pictures-ab.py)."""
import sys, time, tempfile
from pathlib import Path
from harness.diagnosis import pictures
from harness.spec import layouts
pictures.pyplot()  # matplotlib's import, not timed
out = Path(tempfile.mkdtemp())
lay = layouts.SmemLayout("K", "128B", "f16", 64, 16, 16, 1024)
t = time.process_time()
pictures.comparison_png(layouts.element_bit_addresses(lay), layouts.element_bit_addresses(lay.moved(swizzle="64B")),
                        out / "c.png", "wrong swizzle")
t2 = time.process_time()
pictures.layout_png(layouts.SmemLayout("K", "128B", "bf16", 64, 64, 16, 1024), out / "l.png")
t3 = time.process_time()
print(f"comparison_png 2 x (64 x 16) {t2 - t:.2f} s, layout_png 64 x 64 {t3 - t2:.2f} s")
