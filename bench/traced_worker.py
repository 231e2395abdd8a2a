"""`python bench/traced_worker.py [daphne's arguments]`: server.worker under tracemalloc.

bench/soak.py starts the worker this way with `--trace`: tracemalloc records every allocation
from the start (TRACE_FRAMES frames of each, default 1), and each SIGUSR1 writes a snapshot to
`TRACE_OUT.N` (N counts them from 1), then creates `TRACE_OUT.N.done` so the bench knows the
file is complete. The handler runs on the main thread, between two bytecodes of the loop.
Tracing slows the worker about twofold and doubles its memory: its rates and RSS are not the
server's; what grew between two snapshots is.
"""

from __future__ import annotations

import os
import signal
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class SignalledSnapshots:
    def __init__(self, out: str) -> None:
        self.out = out
        self.taken = 0

    def take(self, *_: object) -> None:
        self.taken += 1
        path = f"{self.out}.{self.taken}"
        tracemalloc.take_snapshot().dump(path)
        Path(f"{path}.done").touch()


def main() -> None:
    tracemalloc.start(int(os.environ.get("TRACE_FRAMES", "1")))
    snapshots = SignalledSnapshots(os.environ["TRACE_OUT"])
    signal.signal(signal.SIGUSR1, snapshots.take)

    from server import worker  # after tracemalloc.start: its imports are traced too

    worker.main(sys.argv[1:])


if __name__ == "__main__":
    main()
