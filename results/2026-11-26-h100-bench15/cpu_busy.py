"""The machine's CPU over each run of a call: cpu.txt (cpu_sampler.py: /proc/stat's first line every 0.1 s) against
steps.txt's "RUN start|end EPOCH" lines; per run its seconds, core-seconds busy (all but idle and iowait: every
process on the machine) and, with a third argument, how many cores were busy in each half second.
    python3 cpu_busy.py call1/cpu.txt.gz call1/steps.txt [bins]"""
import gzip, sys
rows = [list(map(float, l.split())) for l in gzip.open(sys.argv[1], "rt")]
steps = {}
for l in open(sys.argv[2]):
    p = l.split()
    if len(p) == 3 and p[1] in ("start", "end"):
        steps.setdefault(p[0], {})[p[1]] = float(p[2])
HZ = 100.0
def busy(a, b):  # cores busy between rows a and b
    ja = a[1:]; jb = b[1:]
    d = [y - x for x, y in zip(ja, jb)]
    tot = sum(d); idle = d[3] + d[4]
    dt = b[0] - a[0]
    return (tot - idle) / HZ, dt, d
for run, se in steps.items():
    s, e = se["start"], se["end"]
    rs = [r for r in rows if s - 0.15 <= r[0] <= e + 0.15]
    used, dt, d = busy(rs[0], rs[-1])
    line = []
    for i in range(0, len(rs) - 5, 5):
        u, t, _ = busy(rs[i], rs[i + 5])
        line.append(f"{u / t:4.1f}")
    print(f"{run:10s} {dt:5.1f} s  CPU {used:6.1f} core-s (user {d[0]/HZ:.0f} nice {d[1]/HZ:.0f} sys {d[2]/HZ:.0f}) avg {used/dt:4.1f} cores")
    if len(sys.argv) > 3: print("   busy cores per 0.5 s:", " ".join(line))
