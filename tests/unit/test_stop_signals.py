"""The worker's SIGINT/SIGTERM handler (wrighty/worker/signals.py): it records the signal and
takes no lock, so a signal that lands while the main thread holds the stop event's lock cannot
hang the worker; a thread of its own asks the worker to stop."""

from __future__ import annotations

import signal
import threading

import pytest

from wrighty.worker.signals import FORCE_AFTER_SECONDS, StopOnSignals

# Only a failing test waits this long: a handler stuck on a lock never returns.
WITHIN_SECONDS = 10.0


class Clock:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Stoppable:
    """Stands for the worker: its stop sets an event, as `Worker.request_stop` does."""

    def __init__(self) -> None:
        self.stop_requested = threading.Event()
        self.said = 0

    def stop(self) -> None:
        self.stop_requested.set()

    def say(self) -> None:
        self.said += 1


def test_the_handler_returns_while_its_thread_holds_the_stop_events_lock() -> None:
    worker = Stoppable()
    returned = threading.Event()
    with StopOnSignals(worker.stop, say=worker.say) as signals:

        def signal_lands_inside_wait() -> None:
            # What Event.wait and Event.clear hold, held by the thread the handler runs in.
            with worker.stop_requested._cond:  # type: ignore[attr-defined]
                signals.handle(signal.SIGTERM, None)
                returned.set()

        threading.Thread(target=signal_lands_inside_wait, daemon=True).start()
        assert returned.wait(WITHIN_SECONDS), "the handler waited for a lock its thread holds"
        assert worker.stop_requested.wait(WITHIN_SECONDS), "no stop was asked for"
    assert signals.received == [signal.SIGTERM]
    assert worker.said == 1


@pytest.mark.parametrize("first", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_real_signal_asks_for_a_stop_once_and_a_second_forces(first: signal.Signals) -> None:
    worker = Stoppable()
    clock = Clock()
    earlier = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with StopOnSignals(worker.stop, say=worker.say, clock=clock) as signals:
        signal.raise_signal(first)
        assert worker.stop_requested.wait(WITHIN_SECONDS)
        clock.now += FORCE_AFTER_SECONDS
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
    assert signals.received == [first, signal.SIGTERM]
    assert worker.said == 1  # the second signal forces; it asks nothing of the worker
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == earlier


def test_the_same_signal_told_twice_at_once_is_one_request_not_a_force() -> None:
    """`timeout` (and a service manager) signals the worker and then its whole process group:
    the worker hears SIGTERM twice at once. That is one request to stop cleanly."""
    worker = Stoppable()
    clock = Clock()
    with StopOnSignals(worker.stop, say=worker.say, clock=clock) as signals:
        signal.raise_signal(signal.SIGTERM)
        clock.now += FORCE_AFTER_SECONDS / 2
        signal.raise_signal(signal.SIGTERM)  # no KeyboardInterrupt
        assert worker.stop_requested.wait(WITHIN_SECONDS)
    assert signals.received == [signal.SIGTERM, signal.SIGTERM]
    assert worker.said == 1
