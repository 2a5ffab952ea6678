"""A helper (a pool's process, a GPU worker) is deaf to Ctrl-C: the terminal sends SIGINT to the whole process group,
and a helper that took it printed its own KeyboardInterrupt traceback (44 lines with the sweep's) while the sweep
waited for it. Its SIGINT is blocked from its first instruction (it starts from a thread that blocks it: processes.
deaf_to_interrupts) and ignored once it runs (processes.ignore_interrupts); the command line's process kills it
(processes.on_signals). The spawned helpers of the command line (processes.one_shot_process) are covered through the
command line itself: tests/test_interrupts.py."""
import os
import signal
import time
from pathlib import Path

from harness.run import processes

SIGINT_BIT = 1 << (signal.SIGINT - 1)


def masks(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("SigBlk", "SigIgn", "SigCgt"):
            out[key] = int(value.strip(), 16)
    return out


def python_work(seconds: float) -> str:  # run in a helper: bytecodes all along, where a KeyboardInterrupt would land
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return f"done in {os.getpid()}"


def test_a_helper_runs_its_work_to_the_end_through_a_sigint():
    with processes.pool(1) as helpers:
        helpers.submit(int).result(timeout=60)  # started
        [pid] = [p.pid for p in helpers._processes.values()]
        m = masks(pid)
        assert m["SigIgn"] & SIGINT_BIT and not m["SigCgt"] & SIGINT_BIT, m  # ignored, no handler to raise from
        work = helpers.submit(python_work, 1.0)
        time.sleep(0.3)
        os.kill(pid, signal.SIGINT)
        assert work.result(timeout=60) == f"done in {pid}"


def test_a_process_started_deaf_has_sigint_blocked_from_its_start():
    """Before the helper's own first step could ignore it: blocked in the mask it was started with (multiprocessing's
    resource tracker, started first, does not unblock it afterwards)."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")  # the command line's (processes.one_shot_process)
    with processes.deaf_to_interrupts():
        p = ctx.Process(target=time.sleep, args=(2.0,))
        p.start()
    try:
        time.sleep(0.5)  # its interpreter up: Python installs its own SIGINT handler where it can
        m = masks(p.pid)
        assert m["SigBlk"] & SIGINT_BIT, m
        assert not signal.pthread_sigmask(signal.SIG_BLOCK, set()) & {signal.SIGINT}  # this thread's, restored
    finally:
        p.kill()
        p.join()


def test_interrupted_exits_128_plus_the_signal():
    assert processes.Interrupted(signal.SIGINT).exit_code == 130 and str(processes.Interrupted(signal.SIGINT)) == \
        "SIGINT"
    assert processes.Interrupted(signal.SIGTERM).exit_code == 143 and isinstance(processes.Interrupted(15),
                                                                                KeyboardInterrupt)


def test_a_signal_while_a_record_is_written_waits_for_it():
    """processes.whole: the handler's Interrupted waits for the step to end (a batch of records, the summary)."""
    done = []
    try:
        with processes.whole():
            processes._signals["pending"] = signal.SIGTERM  # as _on_signal leaves it inside a step
            done.append("written")
    except processes.Interrupted as e:
        assert e.signum == signal.SIGTERM and done == ["written"]
    else:
        raise AssertionError("the pending signal was not raised after the step")
    assert processes._signals["pending"] is None
