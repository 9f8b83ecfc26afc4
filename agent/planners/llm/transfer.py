"""One HTTP exchange with the model's server, bounded in wall-clock time — body reading included.

The HTTP client's timeouts bound each socket read, not the answer: a server that sends one byte
every second never trips a read timeout, and such an answer once held a decision for 303 s
against its 20 s deadline. So the exchange runs in a worker thread and the decision waits for
it at most `seconds`; then it raises `TooSlow` (with how much had arrived) and moves on. The
abandoned worker stops at its next chunk (it closes the response, dropping the connection) or
at its own read timeout, whichever comes first. A body larger than MAX_BODY_BYTES is refused:
no answer of a planner is that long, and an endless one must not fill the memory.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from agent.planners.errors import PlannerFailed

MAX_BODY_BYTES = 4 * 1024 * 1024


class StreamedResponse(Protocol):
    """What the openai client's `with_streaming_response` hands out, as far as we read it."""

    def iter_bytes(self) -> object: ...


class TooSlow(Exception):
    """The answer did not arrive whole within its time; a transient failure."""

    def __init__(self, seconds: float, received: int) -> None:
        super().__init__(f"no whole answer within {seconds:.1f} s ({received} byte(s) arrived)")
        self.seconds = seconds
        self.received = received


def fetch(
    open_response: Callable[[], AbstractContextManager[StreamedResponse]], seconds: float
) -> bytes:
    """The whole body of the response `open_response()` opens, within `seconds` of wall clock.

    Errors the exchange raises (the openai client's APIStatusError, APITimeoutError …) are
    raised here, in the caller's thread.
    """
    box: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=1)
    abandoned = threading.Event()
    received = [0]

    def work() -> None:
        try:
            with open_response() as response:
                chunks: list[bytes] = []
                for chunk in response.iter_bytes():  # type: ignore[attr-defined]
                    if abandoned.is_set():
                        return  # leaving the block closes the response and its connection
                    received[0] += len(chunk)
                    if received[0] > MAX_BODY_BYTES:
                        raise PlannerFailed(
                            f"the answer is larger than {MAX_BODY_BYTES} bytes; refused"
                        )
                    chunks.append(chunk)
            box.put(b"".join(chunks))
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box.put(exc)

    worker = threading.Thread(target=work, name="llm-exchange", daemon=True)
    worker.start()
    try:
        outcome = box.get(timeout=max(0.0, seconds))
    except queue.Empty:
        abandoned.set()
        raise TooSlow(seconds, received[0]) from None
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
