"""The sweep command run in this process with its main thread profiled (cProfile), as `python -m harness sweep`
runs it (cli.main, own_process=True), the profile dumped when it returns (the command's own exit skips that).
    python3 profile_main.py OUT.prof [sweep args...]"""
import cProfile
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from harness import cli  # noqa: E402

if __name__ == "__main__":  # the helpers, spawned, run this file again as __mp_main__
    prof = cProfile.Profile()
    prof.enable()
    code = cli.main(["sweep", *sys.argv[2:]], own_process=True)
    prof.disable()
    prof.dump_stats(sys.argv[1])
    sys.exit(int(code))
