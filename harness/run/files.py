"""Files the caches share between processes: each written whole or not at all."""
from __future__ import annotations

import os
import threading
from pathlib import Path


def write_atomically(path: Path, data: bytes | str) -> None:
    """Write `data` (bytes, or text as UTF-8) to `path` in one step: into a file beside it named for this process and
    thread, then renamed over `path`, so that a process reading it concurrently finds the whole of it or none (the
    compile cache's plans, verdicts, listings, lists of checked kernels and a kernel folder's manifest). OSError as the
    writing raises it, the temporary file removed."""
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
