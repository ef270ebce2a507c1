"""Pausing Python's cyclic garbage collector around bulk encoding and decoding."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0
_restore = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the block runs.

    Decoding a manifest allocates tens of small containers per entry, none of them in reference
    cycles, yet they trigger full collections that rescan every live object.

    The collector is **process-wide**: while any thread is inside a ``gc_paused()`` block, no
    thread of the process runs cyclic collections (reference counting still frees everything
    that is not in a cycle, so memory held by cycles created meanwhile waits until the last
    block exits). Pauses nest and overlap across threads: the first block to enter turns the
    collector off if it was on, and the last one to leave turns it back on; a collector that
    was already off stays off.
    """
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            if _restore:
                gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                gc.enable()


__all__ = ["gc_paused"]
