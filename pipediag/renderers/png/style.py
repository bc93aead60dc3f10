"""The geometry, colours and fonts every panel of the PNG report shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# Page geometry: a fixed pixel size, so the report looks the same everywhere.
FIGURE_SIZE_IN = (14.0, 10.0)
DPI = 100
FIGURE_SIZE_PX = (int(FIGURE_SIZE_IN[0] * DPI), int(FIGURE_SIZE_IN[1] * DPI))

# Panel rectangles in figure fractions: (left, bottom, width, height).
LEFT_X, LEFT_W = 0.065, 0.55
RIGHT_X, RIGHT_W = 0.76, 0.215
TIMELINE_RECT = (LEFT_X, 0.545, LEFT_W, 0.18)
GPU_RECT = (LEFT_X, 0.40, LEFT_W, 0.10)  # shares the steps' time axis, labels it below
# Without a GPU the steps panel takes most of the GPU panel's room, and one line says why.
TIMELINE_NO_GPU_RECT = (LEFT_X, 0.44, LEFT_W, 0.285)
NO_GPU_LINE_Y = 0.362
CPU_RECT = (LEFT_X, 0.215, LEFT_W, 0.10)  # the whole run
PIPELINE_RECT = (RIGHT_X, 0.485, RIGHT_W, 0.24)
COST_RECT = (RIGHT_X, 0.33, RIGHT_W, 0.04)
LEFT_MARGIN = 0.02  # where the header's and the suggestions' text starts (figure fraction)
RIGHT_EDGE = 0.98  # no text runs past this (figure fraction)
TIME_AXIS_LABEL = "time since the diagnosis started (s)"

# Colours: orange means "input", blue means "compute", everywhere on the page.
INPUT_COLOUR = "#d9480f"
COMPUTE_COLOUR = "#1864ab"
BALANCED_COLOUR = "#e67700"
UNKNOWN_COLOUR = "#868e96"
WARMUP_COLOUR = "#ced4da"
WARMUP_EDGE_COLOUR = "#868e96"
NO_SPLIT_COLOUR = "#a5b4c4"  # a step whose input wait was not measured
MUTED_TEXT_COLOUR = "#495057"
NOTE_TEXT_COLOUR = "#868e96"
WARNING_COLOUR = "#c92a2a"
STAGE_COLOUR = "#adb5bd"
SYSTEM_CPU_COLOUR = "#868e96"
PROCESS_CPU_COLOUR = "#2b8a3e"
PHASE_SHADE_COLOR = "#dfe8d8"  # the pipeline-alone benchmark, behind the time panels
COMPUTE_ALONE_SHADE_COLOR = "#d0ebff"  # the train step run alone on a cached batch
# The parts of input cost: shades of the input colour, darkest for the plain wait.
COST_COLOURS = {
    "wait": INPUT_COLOUR,
    "contention": "#ff922b",
    "fetch": "#ffc078",
    "epoch-start": "#ffe8cc",
}
# The step's time by group: op types in compute colour, layers lighter, host time apart (violet).
SCOPE_COLOUR = "#74c0fc"
HOST_GAP_COLOUR = "#9c36b5"
TRAINING_RATE_COLOUR = "#495057"  # A, the training rate, as a line over other rates
GPU_COLOURS = ("#1864ab", "#5f3dc4", "#0b7285", "#a61e4d", "#5c940d", "#862e9c")
VERDICT_COLOURS = {
    "input-bound": INPUT_COLOUR,
    "compute-bound": COMPUTE_COLOUR,
    "balanced": BALANCED_COLOUR,
    "uncertain": UNKNOWN_COLOUR,
    "unknown": UNKNOWN_COLOUR,
}
LABEL_COLOURS = {**VERDICT_COLOURS, "warmup": WARMUP_COLOUR}

# Font sizes (points).
HEADLINE_FONT = 24
HEADLINE_MIN_FONT = 17  # a long headline shrinks to this before it is clipped
SUBHEAD_FONT = 13
FIGURE_VALUE_FONT = 17
FIGURE_LABEL_FONT = 10
PANEL_TITLE_FONT = 12
BODY_FONT = 10.5
NOTE_FONT = 11
# A panel's legend: small and frameless, so it reads as a caption to what it names.
LEGEND: Final[Mapping[str, object]] = {"fontsize": 9, "frameon": False}
