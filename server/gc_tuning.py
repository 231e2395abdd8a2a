"""Keep the garbage collector out of the way in a long-running server process.

Two measured costs, both under load on PostgreSQL at 100 sockets:

- Full (generation 2) passes walk every tracked object. A daphne process holds Django, DRF,
  the schema generator, the engine and their caches: each full pass stopped the event loop for
  90-120 ms, a dozen times in a 12 s run, and every socket waited through it (the bare echo
  socket's p99 was 89 ms, its p50 21 ms). `gc.freeze()` moves everything alive at startup
  into a generation the collector never walks; with it, six such runs had an echo p99 of
  34-50 ms (89 and 122 ms in two runs without it).
- Young passes ran 110-120 times a second: CPython collects generation 0 each time 700 more
  container objects are alive than at the last pass, and the frames, futures and dicts of
  a hundred moves in flight reach that within milliseconds. Together with the generation 1
  passes they took 8 % of the process's time. A threshold of `GC_GEN0_THRESHOLD` (10,000)
  is above what a busy process has in flight, so a pass runs when garbage cycles have piled
  up, not on every burst of traffic.

Freeze after the modules that requests import lazily (the URLconf and its views, the channel
layer) are loaded, so they are frozen too. GC_FREEZE=0 turns the freeze off;
GC_GEN0_THRESHOLD=700 restores CPython's default.
"""

from __future__ import annotations

import gc

from server.env import env_bool, env_count

GEN0_THRESHOLD = 10_000


def gen0_threshold() -> int:
    return env_count("GC_GEN0_THRESHOLD", GEN0_THRESHOLD)


def freeze_wanted() -> bool:
    return env_bool("GC_FREEZE", True)


def tune_collector() -> bool:
    """Set the young-generation threshold, then freeze the heap. Returns whether it froze."""
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gen0_threshold(), gen1, gen2)
    return freeze_startup_heap()


def freeze_startup_heap() -> bool:
    """Load what the first request would, then freeze the heap. Returns whether it froze."""
    if not freeze_wanted():
        return False
    from channels.layers import get_channel_layer
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every view module now, not mid-request
    get_channel_layer()  # and the layer's modules (redis' are large), made on first socket
    gc.collect()  # free startup garbage first: nothing frozen is ever freed
    gc.freeze()
    return True
