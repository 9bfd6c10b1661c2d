"""Profile every Python process started with LB_PROFILE_DIR set (parent and workers), dumping on exit."""

import atexit
import cProfile
import os
import time

_dir = os.environ.get("LB_PROFILE_DIR")
if _dir:
    _start = time.perf_counter()
    _prof = cProfile.Profile()
    _prof.enable()

    def _dump() -> None:
        _prof.disable()
        _prof.dump_stats(os.path.join(_dir, f"prof-{os.getpid()}-{time.perf_counter() - _start:.2f}.out"))

    atexit.register(_dump)
