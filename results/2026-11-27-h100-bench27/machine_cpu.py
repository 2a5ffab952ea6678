"""One sweep from the command line with the machine's CPU around it: wall, the sweep's processes' CPU (rusage of
children, as bench_sweep.py counts it) and the whole machine's (/proc/stat: user, nice, system, softirq, iowait;
kernel threads such as the page cache's writeback count there, not in rusage), the cache folder's size after, and
the CPU of the sweep's processes by kind (sampled from /proc every 0.05 s: a process's last sample, so a short-lived
one's last moments are missed; nvdisasm's are counted and their number given).
    python3 machine_cpu.py LABEL CACHE_DIR OUT_JSONL [sweep args...]"""
import json, os, resource, subprocess, sys, time

def stat():
    with open("/proc/stat") as fh:
        f = fh.readline().split()[1:]
    hz = os.sysconf("SC_CLK_TCK")
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    return {n: int(v) / hz for n, v in zip(names, f)}

def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total

def kind(pid):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    if "nvdisasm" in cmd:
        return "nvdisasm"
    if "multiprocessing" in cmd or "spawn_main" in cmd or "forkserver" in cmd:
        return "helper"
    if "harness.run.worker" in cmd or "worker" in cmd:
        return "python-other:" + cmd[:80]
    if "-m harness sweep" in cmd:
        return "main"
    return "other:" + cmd[:60]

def cpu_of(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"), int(f[1])
    except (OSError, IndexError, ValueError):
        return None, None

import threading
seen, kinds, stop = {}, {}, threading.Event()
def sample(root):
    while not stop.is_set():
        tree = {root}
        pids = [int(x) for x in os.listdir("/proc") if x.isdigit()]
        parents = {}
        for pid in pids:
            c, pp = cpu_of(pid)
            if c is not None:
                parents[pid] = (pp, c)
        changed = True
        while changed:
            changed = False
            for pid, (pp, c) in parents.items():
                if pid not in tree and pp in tree:
                    tree.add(pid); changed = True
        for pid in tree:
            if pid in parents:
                seen[pid] = max(seen.get(pid, 0), parents[pid][1])
                if pid not in kinds:
                    kinds[pid] = kind(pid)
        stop.wait(0.05)

label, cache, out = sys.argv[1:4]
env = dict(os.environ, PYTHONUNBUFFERED="1", TC_HARNESS_CACHE=cache, CUDA_CACHE_PATH=os.path.join(cache, "nv"))
s0, r0, t0 = stat(), resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
p = subprocess.Popen([sys.executable, "-m", "harness", "sweep", *sys.argv[4:]], env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
th = threading.Thread(target=sample, args=(p.pid,), daemon=True); th.start()
stdout, stderr = p.communicate()
stop.set(); th.join()
t1, r1, s1 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN), stat()
d = {k: round(s1[k] - s0[k], 2) for k in s0}
rec = {"label": label, "exit": p.returncode, "wall_s": round(t1 - t0, 2),
       "children_user_s": round(r1.ru_utime - r0.ru_utime, 2), "children_sys_s": round(r1.ru_stime - r0.ru_stime, 2),
       "machine": d, "machine_busy_s": round(sum(v for k, v in d.items() if k not in ("idle", "iowait")), 2),
       "cache_bytes": du(cache), "last": stdout.strip().splitlines()[-1:] if stdout else stderr[-300:]}
by = {}
for pid, c in seen.items():
    k = kinds.get(pid) or "?"
    by.setdefault(k, [0.0, 0]); by[k][0] += c; by[k][1] += 1
rec["sampled_cpu_by_kind"] = {k: [round(v[0], 2), v[1]] for k, v in sorted(by.items(), key=lambda kv: -kv[1][0])}
with open(out, "a") as fh:
    fh.write(json.dumps(rec) + "\n")
print(json.dumps(rec))
