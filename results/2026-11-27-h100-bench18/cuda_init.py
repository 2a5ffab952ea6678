"""How long CUDA's start-up takes in N processes at once (each: import cupy, ask the device count and the first
device's compute capability, as gpu.skip_reason does), and in one alone."""
import subprocess, sys, time, json
CODE = ("import time; t=time.time(); import cupy; t1=time.time(); n=cupy.cuda.runtime.getDeviceCount(); "
        "p=cupy.cuda.runtime.getDeviceProperties(0); t2=time.time(); print(round(t1-t,2), round(t2-t1,2))")
def batch(n):
    t = time.time()
    ps = [subprocess.Popen([sys.executable, "-c", CODE], stdout=subprocess.PIPE, text=True) for _ in range(n)]
    outs = [p.communicate()[0].split() for p in ps]
    return round(time.time() - t, 2), outs
for n in (1, 16, 1):
    wall, outs = batch(n)
    print(f"{n} at once: {wall} s; import, CUDA start per process:", " ".join("/".join(o) for o in outs))
t = time.time(); subprocess.run(["nvidia-smi", "-L"], capture_output=True); print("nvidia-smi -L", round(time.time() - t, 2), "s")
t = time.time(); ps = [subprocess.Popen(["nvidia-smi", "-L"], stdout=subprocess.DEVNULL) for _ in range(16)]; [p.wait() for p in ps]; print("16 nvidia-smi -L at once", round(time.time() - t, 2), "s")
print(subprocess.run(["nvidia-smi", "--query-gpu=persistence_mode", "--format=csv"], capture_output=True, text=True).stdout)
