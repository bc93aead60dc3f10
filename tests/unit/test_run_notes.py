"""The report's notes on the run are reasons: their words are the sentences pipediag said
before they were typed (schema 8), byte for byte."""

from __future__ import annotations

import io

import pytest
from synthetic_reports import FakeClock

from pipediag.config import RunConfig
from pipediag.renderers.reason_words import reason_words
from pipediag.report.reasons import Reason
from pipediag.session import DiagnosticSession

_AT = Reason("defined-at", detail="train.py:12")
_ERROR = "RuntimeError: boom"

# Each note's reason, and the sentence it was before (from `git show e296404:<file>`, schema 8).
OLD_SENTENCES = [
    (
        Reason("multi-worker-job", detail="worker-1", value=2),
        "multi-worker job (worker-1, 2 tasks): every worker must run the same train steps, so "
        "the step budget counts steps only, compute alone runs a fixed number of steps, and no "
        "fix is tried on training",
    ),
    (
        Reason("named-function-uncountable", detail="train_epoch", because=_AT),
        "the script called train_epoch (train.py:12) is named by --train-function, but iterates "
        "a dataset of unknown length: its steps a call cannot be counted: its steps could not "
        "be counted",
    ),
    (
        Reason("function-without-step-counter", detail="Trainer.step"),
        "the script called Trainer.step takes the data it trains on, but steps no optimizer "
        "with a step counter (Keras' `iterations`); if it trains, run with --train-function "
        "Trainer.step to count its steps by its calls: its steps could not be counted",
    ),
    (
        Reason("iterators-still-releasing"),
        "some of pipediag's own iterators were still being released at the end",
    ),
    (
        Reason("late-analysis-failed", detail=_ERROR),
        "the analysis after the measured steps failed (RuntimeError: boom)",
    ),
    (
        Reason("gpu-analysis-failed", detail=_ERROR),
        "the GPU analysis failed (RuntimeError: boom); it is left out",
    ),
    (
        Reason("scale-out-prediction-failed", detail=_ERROR),
        "the scale-out prediction failed (RuntimeError: boom); it is left out",
    ),
    (
        Reason("prescription-figures-failed", detail=_ERROR),
        "the prescription's figures failed (RuntimeError: boom); it is left out",
    ),
    (
        Reason("advisor-failed", detail=_ERROR),
        "the advisor failed (RuntimeError: boom); it is left out",
    ),
    (
        Reason("stage-analysis-failed", detail=_ERROR),
        "the per-stage analysis failed (RuntimeError: boom)",
    ),
    (
        Reason("stage-holds-failed", detail=_ERROR),
        "holding the stages in memory on training failed (RuntimeError: boom)",
    ),
    (
        Reason("fix-trials-failed", detail=_ERROR),
        "trying the fixes on training failed (RuntimeError: boom)",
    ),
    (
        Reason("service-check-failed", detail=_ERROR),
        "the tf.data service check failed (RuntimeError: boom)",
    ),
    (
        Reason("model-side-failed", detail=_ERROR),
        "the model-side trials failed (RuntimeError: boom)",
    ),
    (Reason("nested-step"), "a step() inside another step() was ignored"),
    (
        Reason("iterate-ignored"),
        "steps are marked with explicit marks; iterate() were ignored (mixing them would count "
        "steps twice)",
    ),
    (
        Reason("marks-ignored"),
        "steps are marked with iterate(); explicit marks were ignored (mixing them would count "
        "steps twice)",
    ),
    (
        Reason("step-budget-reached", value=5, limit=100),
        "step budget reached (5 warm-up + 100 measured steps): the rest of the run was not "
        "recorded",
    ),
    (
        Reason("loop-before-fit", value=12),
        "the script trained in a custom loop (12 steps) before calling fit: fit's training is "
        "diagnosed",
    ),
    (
        Reason(
            "two-train-styles",
            detail="keras-fit",
            because=Reason("train-style", detail="custom-loop"),
        ),
        "the script trains both with keras-fit and custom-loop",
    ),
    (
        Reason("steps-merged", value=4000, limit=2048),
        "4000 steps were kept as 2048 records: older steps were merged in pairs to bound memory "
        "(totals are exact)",
    ),
    (
        Reason("cache-epoch-outlasted"),
        "the pipeline caches, but its first epoch outlasted the measuring bound: the verdict "
        "describes epoch 1 only (--steps N measures more)",
    ),
    (
        Reason("stamps-not-attached", detail=_ERROR),
        "the training dataset could not be time-stamped (RuntimeError: boom): input wait under "
        "fit was not measured",
    ),
    (
        Reason("fit-profiler-no-start", detail="UnavailableError: busy"),
        "the TF profiler could not be started (UnavailableError: busy): input wait under fit "
        "was not measured",
    ),
    (
        Reason("stamps-unread", detail=_ERROR),
        "batch stamps could not be read (RuntimeError: boom): some steps under fit have no "
        "input wait",
    ),
    (
        Reason("loop-pulls-inside", detail="train_epoch", value=8, because=_AT),
        "the loop pulls inside the tf.function train_epoch (train.py:12), 8 steps a call: each "
        "call is timed and its time spread over its steps; input waits inside it are not "
        "measured",
    ),
    (
        Reason("loop-pulls-inside-named", detail="train_steps", value=1),
        "the loop pulls inside the tf.function train_steps, 1 steps a call (named by "
        "--train-function: it steps no optimizer with a step counter, so a call counts one "
        "step, or its dataset's length): each call is timed and its time spread over its "
        "steps; input waits inside it are not measured",
    ),
    (
        Reason("watch-thread-busy"),
        "the watch thread was still busy at the end (a slow alert hook?): the last windows may "
        "be missing",
    ),
    (
        Reason(
            "scalars-not-written",
            detail="/logs/run-1",
            because=Reason("exception", detail="PermissionError: denied"),
        ),
        "TensorBoard scalars could not be written to /logs/run-1 (PermissionError: denied): "
        "the windows are in the report only",
    ),
    (
        Reason("watch-failed", detail=_ERROR),
        "watch mode failed (RuntimeError: boom): some windows may be missing",
    ),
    (
        Reason("alert-hook-raised", detail="RuntimeError: pager is down"),
        "the alert hook raised RuntimeError: pager is down (said once; training goes on, and "
        "later alerts still call it)",
    ),
    (
        Reason("alert-command-no-start", detail="FileNotFoundError: no shell"),
        "the alert command could not start: FileNotFoundError: no shell",
    ),
    (
        Reason("alert-command-exit", detail="exit 3", value=3),
        "the alert command exited with code 3: exit 3 (said once)",
    ),
    (
        Reason("alert-command-exit", detail="kill -9 $$", value=-9),
        "the alert command exited with code -9: kill -9 $$ (said once)",
    ),
    (
        Reason("alert-command-running", detail="sleep 60"),
        "the alert command was still running at the end: sleep 60",
    ),
    (
        Reason(
            "data-service-failed",
            because=Reason(
                "service-error", detail="no tf.data dispatcher answered at grpc://x:5050"
            ),
        ),
        "--data-service: no tf.data dispatcher answered at grpc://x:5050",
    ),
]


@pytest.mark.parametrize(("reason", "sentence"), OLD_SENTENCES)
def test_a_note_reads_as_the_sentence_it_was(reason: Reason, sentence: str) -> None:
    assert reason_words(reason) == sentence


def test_braces_in_an_error_are_kept_as_they_are() -> None:
    # GIVEN an exception whose message holds a template's braces
    reason = Reason("watch-failed", detail="KeyError: '{value}'")
    # THEN they are words, not a field to fill
    assert (
        reason_words(reason)
        == "watch mode failed (KeyError: '{value}'): some windows may be missing"
    )


def test_the_session_says_a_note_in_its_words_and_keeps_it_once() -> None:
    # GIVEN a session that prints to a stream
    stream = io.StringIO()
    session = DiagnosticSession("t.py", [], RunConfig(), clock=FakeClock(), log=stream)
    # WHEN the same note is given twice, once only once
    session.note_once(Reason("nested-step"))
    session.note_once(Reason("nested-step"))
    # THEN it is kept once, as its reason, and said in its words
    assert session._notes == [Reason("nested-step")]
    assert stream.getvalue().count("a step() inside another step() was ignored\n") == 1
