"""Ctrl-C and SIGTERM while the script runs: each one unwinds it, so a partial report is written.

A KeyboardInterrupt raised inside a finalizer (`__del__`, a weakref callback, often
TensorFlow's executor or iterator clean-up) is printed as "Exception ignored" and lost, and a
job scheduler sends it only once: so one a finalizer dropped is raised again, outside it."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM


class TerminationRequested(KeyboardInterrupt):
    """SIGTERM, turned into an interrupt so the script unwinds and a report is written."""


class _Redeliverer:
    """Signal handlers that note the signal, and an unraisable hook that re-raises it."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self.previous_hook = sys.unraisablehook
        self.messenger: threading.Thread | None = None

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.pending = signum
        raise TerminationRequested if signum == signal.SIGTERM else KeyboardInterrupt

    def on_unraisable(self, unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and self.pending is not None:
            signum, self.pending = self.pending, None
            self.messenger = threading.Thread(
                target=self._raise_again, args=(signum,), name="pipediag-interrupt", daemon=True
            )
            self.messenger.start()
            return
        self.previous_hook(unraisable)

    def _raise_again(self, signum: int) -> None:
        """Signal the main thread once it has left this hook (a signal handled inside the
        hook would be dropped too); if it lands in another finalizer, the hook runs again."""
        main = threading.main_thread().ident
        assert main is not None
        hook_code = self.on_unraisable.__code__
        for _ in range(1000):
            frame = sys._current_frames().get(main)
            while frame is not None and frame.f_code is not hook_code:
                frame = frame.f_back
            if frame is None:
                break
            time.sleep(0.001)
        signal.pthread_kill(main, signum)

    def settle(self) -> None:
        """Let an interrupt still on its way be raised here, before the handlers go."""
        if self.messenger is not None:
            self.messenger.join(timeout=5)
            time.sleep(0)  # a call: the handler runs before it returns


@contextlib.contextmanager
def interrupts_unwind_the_script() -> Iterator[None]:
    """SIGTERM acts like a first Ctrl-C, and neither is lost in a finalizer (one re-raised as
    the script ends comes out of this block)."""
    redeliverer = _Redeliverer()
    try:
        previous_int = signal.getsignal(signal.SIGINT)
        previous_term = signal.signal(signal.SIGTERM, redeliverer.on_signal)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    # A script started with SIGINT ignored (e.g. `nohup ... &`) keeps it ignored.
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, redeliverer.on_signal)
    sys.unraisablehook = redeliverer.on_unraisable
    try:
        try:
            yield
        finally:
            redeliverer.settle()
    finally:
        sys.unraisablehook = redeliverer.previous_hook
        signal.signal(signal.SIGTERM, previous_term)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)


@contextlib.contextmanager
def second_interrupt_aborts(armed: bool) -> Iterator[None]:
    """After one interrupt, a second Ctrl-C while the report is written ends the process."""
    previous = None
    if armed:
        with contextlib.suppress(ValueError):
            previous = signal.signal(
                signal.SIGINT, lambda signum, frame: os._exit(EXIT_INTERRUPTED)
            )
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
