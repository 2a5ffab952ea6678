# The machine's CPU time, every 0.1 s, until killed: "epoch_seconds user nice system idle iowait irq softirq steal" (jiffies)
import sys, time
out = open(sys.argv[1], "w", buffering=1)
while True:
    with open("/proc/stat") as fh:
        f = fh.readline().split()
    out.write(f"{time.time():.3f} {' '.join(f[1:9])}\n")
    time.sleep(0.1)
