"""A stand-in GPU backend for the bench's orchestration tests (same `use_device` and `run` as
harness.timing.backend): it answers a timing job with made-up but well-formed clocks, latency ~ 100 + N/2
clocks and throughput ~ 3900 FLOP/clk/SM at 1755 MHz, with a little deterministic jitter. No model of a GPU."""
import numpy as np


def use_device(index: int) -> None:
    pass


def run(cubin_path, name, job):
    rng = np.random.default_rng(len(name))
    words = np.zeros((job.launches, job.out_words), np.uint64)
    if name.endswith("_lat"):
        reps = int(job.params["reps"][0])
        n = int(name.split("n")[-1].split("k")[0]) if "m64n" in name else 128
        words[:, :reps] = 100 + n // 2 + rng.integers(0, 3, (job.launches, reps))
        words[:, reps:] = 2
    else:
        fpc = job.meta["flop_per_cta"]
        for i in range(job.launches):
            cycles = fpc / (3900 * (1 + 0.001 * rng.standard_normal()))
            w = words[i].reshape(job.grid, 5)
            w[:, 0] = np.arange(job.grid) // job.meta["ctas_per_group"] * job.meta["ctas_per_group"] + \
                np.arange(job.grid) % job.meta["ctas_per_group"]
            w[:, 1] = 1000
            w[:, 2] = 1000 + int(cycles)
            w[:, 3] = 5000
            w[:, 4] = 5000 + int(cycles / 1.755)
    return {"words": words, "ms": np.full(job.launches, 1.0)}
