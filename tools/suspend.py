"""`Suspendable`: a piece of work that can stop in the middle and go on later, on the caller's say.

A decision that starts a long action — a drain of ten minutes, a rotation waiting for a model to
load — must not hold the loop. The daemon runs each decision as a `Suspendable`: a thread that
strictly alternates with the loop, never running at the same time (so nothing it touches needs a
lock). When the work calls `suspend_until(t)` (through `LoopClock.wait`) control goes back to the
loop; `resume()` on a later tick, once its clock reached `t`, lets it carry on from that line.

Only one side runs at any moment: `start()`/`resume()` block the caller until the work suspends
again or ends; the work blocks while the caller runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_current = threading.local()


class Suspendable(Generic[T]):
    """Run `work` on its own thread, in turns with the caller (see the module docstring)."""

    def __init__(self, work: Callable[[], T], name: str = "suspendable") -> None:
        self._work = work
        self._to_work = threading.Semaphore(0)
        self._to_caller = threading.Semaphore(0)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.wake_at: float | None = None
        """When suspended: the clock time (a POSIX timestamp) it waits for."""
        self.done = False
        self._result: T | None = None
        self._error: BaseException | None = None

    def start(self) -> bool:
        """Run until the work suspends or ends; True when it ended."""
        self._thread.start()
        self._to_caller.acquire()
        return self.done

    def resume(self) -> bool:
        """Let suspended work go on until it suspends again or ends; True when it ended."""
        if self.done:
            return True
        self.wake_at = None
        self._to_work.release()
        self._to_caller.acquire()
        return self.done

    def due(self, now: float) -> bool:
        """Whether suspended work's wake-up time has come."""
        return self.done or self.wake_at is None or now >= self.wake_at

    def result(self) -> T:
        """What the work returned; re-raises what it raised."""
        if not self.done:
            raise RuntimeError("the work has not ended yet")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    # -- the work's side --------------------------------------------------------------------------

    def _run(self) -> None:
        _current.task = self
        try:
            self._result = self._work()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc
        finally:
            self.done = True
            self._to_caller.release()

    def _suspend(self, until: float) -> None:
        self.wake_at = until
        self._to_caller.release()
        self._to_work.acquire()


def suspend_until(until: float) -> bool:
    """Suspend the running `Suspendable` until `until`; False (nothing done) outside of one."""
    task: Suspendable[object] | None = getattr(_current, "task", None)
    if task is None:
        return False
    task._suspend(until)
    return True


def suspended_here() -> bool:
    """Whether the calling code runs inside a `Suspendable` (so waiting will not block)."""
    return getattr(_current, "task", None) is not None
