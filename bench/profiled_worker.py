"""`python bench/profiled_worker.py [daphne's arguments]`: server.worker with cProfile on signal.

bench/ws_calls.py starts the worker this way: SIGUSR1 starts a profile of the worker's main
thread (its event loop: the sockets and, on PostgreSQL, the move batches), and SIGUSR2 stops it
and writes it to `PROFILE_OUT.N` (N counts the windows from 1), then creates `PROFILE_OUT.N.done`
so the bench knows the file is complete. Python signal handlers run on the main thread, between
two of its bytecodes, so the window starts and ends on the loop, not in the middle of a callback.
"""

from __future__ import annotations

import cProfile
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server import worker  # noqa: E402


class SignalledProfile:
    def __init__(self, out: str) -> None:
        self.out = out
        self.windows = 0
        self.profile: cProfile.Profile | None = None

    def start(self, *_: object) -> None:
        self.profile = cProfile.Profile()
        self.profile.enable()

    def stop(self, *_: object) -> None:
        if self.profile is None:
            return
        self.profile.disable()
        self.windows += 1
        path = f"{self.out}.{self.windows}"
        self.profile.dump_stats(path)
        Path(f"{path}.done").touch()
        self.profile = None


def main() -> None:
    profile = SignalledProfile(os.environ["PROFILE_OUT"])
    signal.signal(signal.SIGUSR1, profile.start)
    signal.signal(signal.SIGUSR2, profile.stop)
    worker.main(sys.argv[1:])


if __name__ == "__main__":
    main()
