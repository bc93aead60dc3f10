"""Progress lines: plain lines in logs, one redrawn line on a terminal, nothing when quiet."""

from __future__ import annotations

import io
import time

from pipediag.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_in_a_log_say_each_phase_and_its_budget() -> None:
    # GIVEN a stream that is not a terminal (a CI log)
    log = io.StringIO()
    progress = Progress(log)
    # WHEN phases and a message are said
    progress.phase("benchmarking the input pipeline alone", 3.0)
    progress.phase("measuring train steps")
    progress.message("verdict: INPUT-BOUND")
    progress.close()
    # THEN each is one plain line, nothing is redrawn
    assert log.getvalue().splitlines() == [
        "pipediag: benchmarking the input pipeline alone (up to 3 s)...",
        "pipediag: measuring train steps...",
        "pipediag: verdict: INPUT-BOUND",
    ]
    assert "\r" not in log.getvalue()


def test_a_terminal_gets_one_line_redrawn_with_the_budget_left() -> None:
    # GIVEN a terminal
    screen = Terminal()
    progress = Progress(screen)
    assert progress.live
    # WHEN a bounded phase runs for a while
    progress.phase("timing each pipeline stage", 30.0)
    deadline = time.monotonic() + 5.0
    while screen.getvalue().count("\r") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    progress.message("verdict: COMPUTE-BOUND")
    progress.close()
    text = screen.getvalue()
    # THEN the phase line was redrawn in place with the time left, and the message that
    # followed starts on a line of its own
    assert text.count("\r\x1b[2Kpipediag: timing each pipeline stage... ") >= 2
    assert " s left" in text
    assert text.endswith("s left\npipediag: verdict: COMPUTE-BOUND\n")


def test_phases_where_the_script_prints_are_not_redrawn_on_a_terminal() -> None:
    screen = Terminal()
    progress = Progress(screen)
    progress.phase("measuring train steps", redraw=False)
    progress.close()
    assert screen.getvalue() == "pipediag: measuring train steps...\n"


def test_quiet_says_nothing_and_starts_no_thread() -> None:
    progress = Progress(None)
    progress.phase("benchmarking", 3.0)
    progress.message("verdict")
    assert progress._thread is None
    progress.close()


def test_a_closed_stream_never_stops_the_diagnosis() -> None:
    log = io.StringIO()
    progress = Progress(log)
    log.close()
    progress.message("still fine")
    progress.phase("next", 1.0)
    progress.close()
