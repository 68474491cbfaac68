"""Questions another thread asks the daemon's loop: the loop answers them between two batches.

The episode scheduler and its policy are read and changed by the daemon's loop alone, without a lock
(the hot path takes none). A reader on another thread -- the ``/explain?key=`` endpoint of the metrics
server -- therefore does not read them itself: it hands a function to :meth:`LoopCalls.ask`, which
waits; the loop calls :meth:`LoopCalls.answer` once a turn (at least every poll timeout, also when no
record arrives), which runs the waiting functions on the loop's thread and hands back each result or
exception. A loop that no longer turns (stopping, or stalled) leaves the asker a :class:`TimeoutError`
after ``timeout`` seconds, never a half-updated state.

>>> import threading
>>> calls = LoopCalls()
>>> state = {"samples": 0}
>>> def loop():                      # the daemon's loop: change the state, answer between batches
...     while not calls.waiting:
...         state["samples"] += 1
...     calls.answer()
>>> t = threading.Thread(target=loop); t.start()
>>> calls.ask(lambda: state["samples"] > 0, timeout=10.0)
True
>>> t.join()
>>> calls.ask(lambda: 1, timeout=0.01)   # nobody answers
Traceback (most recent call last):
...
TimeoutError: the daemon's loop did not answer within 0.01 s (stopping, or not turning)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["LoopCalls"]

T = TypeVar("T")


class _Call:
    __slots__ = ("fn", "done", "result", "error")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class LoopCalls:
    """Functions waiting for the loop's thread (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[_Call] = []

    @property
    def waiting(self) -> bool:
        """Whether a call waits (the loop's cheap check before :meth:`answer`)."""
        return bool(self._pending)

    def ask(self, fn: Callable[[], T], timeout: float) -> T:
        """``fn()`` run on the loop's thread; its exception is raised here. :class:`TimeoutError` when the
        loop has not answered within ``timeout`` seconds (the call is then withdrawn)."""
        call = _Call(fn)
        with self._lock:
            self._pending.append(call)
        if not call.done.wait(timeout):
            with self._lock:
                if call in self._pending:
                    self._pending.remove(call)
                    raise TimeoutError(f"the daemon's loop did not answer within {timeout:g} s "
                                       "(stopping, or not turning)")
            call.done.wait()  # taken by the loop just now: its answer is moments away
        if call.error is not None:
            raise call.error
        return call.result

    def answer(self) -> None:
        """Run every waiting call (on the calling thread: the loop's) and wake its asker."""
        with self._lock:
            calls, self._pending = self._pending, []
        for call in calls:
            try:
                call.result = call.fn()
            except Exception as e:  # handed to the asker, never to the loop
                call.error = e
            call.done.set()
