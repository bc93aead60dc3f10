"""Device check: pipediag's GPU view of a PyTorch loop against CUDA-event timing of the same steps.

Run on a CUDA machine (PyTorch + nvidia-ml-py; TensorFlow not needed)::

    PYTHONPATH=. python benchmarks/device_check.py            # all scenarios
    PYTHONPATH=. python benchmarks/device_check.py --steps 60 --scenarios slow-loader,fast-loader

Each scenario is a small PyTorch loop diagnosed through the framework-neutral API
(`pipediag.monitor`, `mon.iterate(loader)`), with a known cause of GPU idle time:

- slow-loader: the loader sleeps per batch, so the GPU idles while the host waits for input;
- fast-loader: the loader is instant, so the GPU should be nearly always busy;
- host-overhead: thousands of tiny kernels per step, so the host's launches leave it idle;
- transfer: a large pageable host-to-device copy per step, so PCIe is busy while the SMs idle.

Every step synchronises at its end (as a `loss.item()` would), and CUDA events around the
step's kernels time the GPU's busy time. pipediag's busy fraction (GPM SM activity on
Hopper, else NVML utilization, over NVML windows) is compared with the events' busy fraction
over the same measured steps and over the same windows. A table is printed; with $OUT set,
`device_check.json` (through the benchmarks' shared writer, `benchmarks/_common.py`) and each
scenario's pipediag report are written under it.

Exit status: 0 when every scenario agrees within tolerance, 1 when one does not, 2 when the
check cannot run here (no PyTorch or no CUDA device).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common
from pipediag.analysis.gpu import analyze_gpu
from pipediag.config import RunConfig
from pipediag.renderers.reason_words import reason_words
from pipediag.report.model import Report
from pipediag.report.samples import GpuAnalysis, GpuWindow

NAME = "device_check"
EXIT_OK = 0
EXIT_DISAGREE = 1
EXIT_CANNOT_RUN = 2

SCENARIOS = ("slow-loader", "fast-loader", "host-overhead", "transfer")
EXPECTED_CAUSE: dict[str, str | None] = {
    "slow-loader": "input-wait",
    "fast-loader": None,  # busy GPU: no idle cause named
    "host-overhead": "host-overhead",
    "transfer": "transfer",
}
"""The idle cause each scenario is built to produce."""

BUSY_TOLERANCE = 0.15
"""Largest acceptable |pipediag busy - CUDA-event busy| over the run. NVML utilization counts
any resident kernel as busy and GPM counts SM activity; both are window averages, and the
per-step sync adds a few tens of microseconds of idle that events do not see. 15 points is
what a diagnosis needs ("busy 35%" vs "busy 45%" leads to the same advice)."""

SLOW_LOADER_S = 0.03
"""Long enough against a ~15 ms step to make the slow-loader run clearly input-bound."""


@dataclass
class StepTiming:
    """One step's GPU time from CUDA events, placed on the session clock by the host's sync."""

    kernel_s: float
    copy_s: float
    synced_at_s: float  # session time right after the step's end event completed

    @property
    def busy_interval(self) -> tuple[float, float]:
        """Where the kernels ran: they ended by the sync, and the sync waits for nothing else."""
        return self.synced_at_s - self.kernel_s, self.synced_at_s


@dataclass
class ScenarioResult:
    """pipediag's figures and the CUDA events' figures for one scenario."""

    scenario: str
    steps: int
    step_ms_median: float | None
    input_wait_fraction: float | None
    verdict: str
    busy_source: str
    pipediag_busy: float | None
    pipediag_busy_utilization: float | None
    event_busy: float | None
    event_busy_in_windows: float | None
    window_mean_abs_error: float | None
    windows: int
    correlation: float | None
    dominant_idle_cause: str | None
    expected_cause: str | None
    gpu_reason: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        if self.pipediag_busy is None or self.event_busy is None:
            return False
        close = abs(self.pipediag_busy - self.event_busy) <= BUSY_TOLERANCE
        return close and self.dominant_idle_cause == self.expected_cause


# -- the parts that need no GPU ---------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="device_check",
        description="Compare pipediag's GPU busy fraction with CUDA-event timing (needs CUDA).",
    )
    parser.add_argument("--steps", type=int, default=150, help="measured steps per scenario")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up steps per scenario")
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"comma-separated, from {', '.join(SCENARIOS)}",
    )
    parser.add_argument("--dim", type=int, default=4096, help="matrix size of the model")
    parser.add_argument("--layers", type=int, default=8, help="matmuls per step")
    parser.add_argument(
        "--slow-ms", type=float, default=SLOW_LOADER_S * 1e3, help="slow loader's ms per batch"
    )
    parser.add_argument("--tiny-kernels", type=int, default=2000, help="host-overhead kernels")
    parser.add_argument("--copy-mb", type=int, default=256, help="transfer scenario's MB per step")
    parser.add_argument(
        "--out", default=os.environ.get("OUT"), help="where to write results (default: $OUT)"
    )
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be at least 1 and --warmup at least 0")
    args.scenarios = chosen
    return args


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def event_busy_fraction(report: Report, timings: Sequence[StepTiming]) -> float | None:
    """Kernel time over wall time of the measured steps, from CUDA events.

    `timings` are per step in the report's step order (warm-up included).
    """
    steps = report.train.steps
    measured = [
        i for i, s in enumerate(steps) if s.label != "warmup" and s.input_wait_s is not None
    ]
    if not measured or len(timings) < len(steps):
        return None
    first, last = steps[measured[0]], steps[measured[-1]]
    span = last.start_s + last.duration_s - first.start_s
    if span <= 0:
        return None
    return min(1.0, sum(timings[i].kernel_s for i in measured) / span)


def window_event_busy(window: GpuWindow, timings: Sequence[StepTiming]) -> float:
    """The CUDA events' busy share of one of pipediag's windows."""
    length = window.end_s - window.start_s
    busy = sum(_overlap(window.start_s, window.end_s, *t.busy_interval) for t in timings)
    return min(1.0, busy / length) if length > 0 else 0.0


def compare(
    scenario: str, report: Report, timings: Sequence[StepTiming], util: GpuAnalysis | None = None
) -> ScenarioResult:
    """pipediag's view of one scenario next to the CUDA events' view of the same steps."""
    analysis = report.gpu_analysis
    windows = analysis.windows if analysis is not None else []
    per_window = [(w.gpu_busy_fraction, window_event_busy(w, timings)) for w in windows]
    in_windows = None
    error = None
    if per_window:
        total = sum(w.end_s - w.start_s for w in windows)
        in_windows = (
            sum(window_event_busy(w, timings) * (w.end_s - w.start_s) for w in windows) / total
        )
        error = sum(abs(p - e) for p, e in per_window) / len(per_window)
    step_time = report.train.step_time
    attribution = analysis.attribution if analysis is not None else None
    return ScenarioResult(
        scenario=scenario,
        steps=report.train.measured_steps,
        step_ms_median=step_time.median_s * 1e3 if step_time is not None else None,
        input_wait_fraction=report.verdict.input_wait_fraction,
        verdict=report.verdict.label,
        busy_source=analysis.busy_source if analysis is not None else "",
        pipediag_busy=analysis.gpu_busy_fraction if analysis is not None else None,
        pipediag_busy_utilization=util.gpu_busy_fraction if util is not None else None,
        event_busy=event_busy_fraction(report, timings),
        event_busy_in_windows=in_windows,
        window_mean_abs_error=error,
        windows=len(windows),
        correlation=analysis.idle_input_wait_correlation if analysis is not None else None,
        dominant_idle_cause=attribution.dominant if attribution is not None else None,
        expected_cause=EXPECTED_CAUSE.get(scenario),
        gpu_reason=_reason_text(analysis),
        notes=[reason_words(n) for n in analysis.notes] if analysis is not None else [],
    )


def _reason_text(analysis: GpuAnalysis | None) -> str | None:
    """Why pipediag's GPU analysis is unavailable, in the report's words; None where it is."""
    if analysis is None or analysis.available or analysis.reason is None:
        return None
    return reason_words(analysis.reason)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


COLUMNS = (
    ("scenario", 14),
    ("steps", 5),
    ("step ms", 7),
    ("wait", 5),
    ("verdict", 13),
    ("source", 11),
    ("pd busy", 7),
    ("pd util", 7),
    ("events", 6),
    ("ev@win", 6),
    ("win err", 7),
    ("wins", 4),
    ("r", 5),
    ("idle cause", 13),
    ("expected", 13),
    ("ok", 3),
)


def format_table(results: Sequence[ScenarioResult]) -> str:
    """A fixed-width table, one row per scenario."""
    header = " ".join(f"{name:<{width}}" for name, width in COLUMNS)
    lines = [header, "-" * len(header)]
    for r in results:
        cells = [
            r.scenario,
            str(r.steps),
            _num(r.step_ms_median, ".1f"),
            _pct(r.input_wait_fraction),
            r.verdict,
            r.busy_source or "-",
            _pct(r.pipediag_busy),
            _pct(r.pipediag_busy_utilization),
            _pct(r.event_busy),
            _pct(r.event_busy_in_windows),
            _num(r.window_mean_abs_error),
            str(r.windows),
            _num(r.correlation),
            r.dominant_idle_cause or "none",
            r.expected_cause or "none",
            "yes" if r.agrees else "NO",
        ]
        lines.append(
            " ".join(f"{c:<{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=True)).rstrip()
        )
        if r.gpu_reason:
            lines.append(f"    GPU analysis unavailable: {r.gpu_reason}")
    return "\n".join(lines)


def write_results(out: Path, payload: dict[str, Any]) -> Path:
    path = out / "device_check.json"
    _common.write_results(path, NAME, quick=False, **payload)
    return path


def results_payload(
    args: argparse.Namespace, device: str, results: list[ScenarioResult]
) -> dict[str, Any]:
    """The shared writer's settings, summary and cases (one per scenario)."""
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    return {
        "settings": settings | {"torch": _common.package_version("torch")},
        "summary": {
            "device": device,
            "busy_tolerance": BUSY_TOLERANCE,
            "scenarios": len(results),
            "agree": sum(r.agrees for r in results),
        },
        "cases": [asdict(r) | {"agrees": r.agrees} for r in results],
    }


# -- the parts that need PyTorch and CUDA -----------------------------------------------------


def _load_torch() -> tuple[Any, str | None]:
    """(torch, None), or (None, why the check cannot run here)."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed: this check needs torch with CUDA"
    if not torch.cuda.is_available():
        return None, "CUDA is not available (no NVIDIA GPU or driver): this check needs one"
    return torch, None


def _loader(torch: Any, n: int, delay_s: float, make: Callable[[], Any]) -> Iterator[Any]:
    batch = make()
    for _ in range(n):
        if delay_s > 0:
            time.sleep(delay_s)
        yield batch


def _tiny_kernels_busy_s(torch: Any, compute: Callable[[Any], Any], big: Any) -> float:
    """Device time of the host-overhead step's kernels when nothing starves them.

    Events around launch-bound kernels measure the gaps between them too, not busy time. So
    the kernels are queued behind a long matmul: by the time the GPU reaches them they are all
    enqueued and run back to back, and the events then time their busy time alone.
    """
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    head = big
    for _ in range(20):  # ~tens of ms of GPU work: longer than launching the tiny kernels
        head = head @ big
    start.record()
    compute(None)
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1e3


def run_scenario(torch: Any, scenario: str, args: argparse.Namespace) -> ScenarioResult:
    """One diagnosed PyTorch loop; the step's kernels are timed with CUDA events."""
    from pipediag.monitor import Monitor

    device = torch.device("cuda")
    dim, layers = args.dim, args.layers
    weights = [torch.randn(dim, dim, device=device) / dim**0.5 for _ in range(layers)]
    x = torch.randn(dim, dim, device=device)
    small = torch.randn(256, 256, device=device)
    n = args.warmup + args.steps  # the budget closes on the last step: no extra batch needed
    if scenario == "transfer":
        elements = args.copy_mb * 2**20 // 4
        make = lambda: torch.randn(elements)  # noqa: E731 - pageable on purpose: slow copies
    else:
        make = lambda: torch.randn(256, 1024).pin_memory()  # noqa: E731
    delay = args.slow_ms / 1e3 if scenario == "slow-loader" else 0.0

    def compute(batch_on_gpu: Any) -> Any:
        if scenario == "host-overhead":
            y = small
            for _ in range(args.tiny_kernels):
                y = y * 1.0001
            return y
        if scenario == "transfer":
            return batch_on_gpu[:1024].sum()
        y = x
        for w in weights:
            y = torch.relu(y @ w)
        return y

    tiny_busy_s = _tiny_kernels_busy_s(torch, compute, x) if scenario == "host-overhead" else None
    out_dir = Path(args.out) / scenario if args.out else None
    config = RunConfig(warmup_steps=args.warmup, measured_steps=args.steps, bench=False)
    timings: list[StepTiming] = []
    # Warm CUDA, cuBLAS and the caching allocator up before the clock starts.
    compute(make().to(device))
    torch.cuda.synchronize()
    with Monitor(out=out_dir, config=config, name=f"device_check:{scenario}", log=None) as mon:
        origin = mon.session.origin
        for batch in mon.iterate(_loader(torch, n, delay, make)):
            copy_start = torch.cuda.Event(enable_timing=True)
            copy_end = torch.cuda.Event(enable_timing=True)
            kernels_end = torch.cuda.Event(enable_timing=True)
            copy_start.record()
            on_gpu = batch.to(device, non_blocking=True)
            copy_end.record()
            compute(on_gpu)
            kernels_end.record()
            kernels_end.synchronize()  # as loss.item() would
            synced = mon.clock.now() - origin
            kernel_s = copy_end.elapsed_time(kernels_end) / 1e3
            timings.append(
                StepTiming(
                    kernel_s=kernel_s if tiny_busy_s is None else min(kernel_s, tiny_busy_s),
                    copy_s=copy_start.elapsed_time(copy_end) / 1e3,
                    synced_at_s=synced,
                )
            )
    report = mon.report
    util = analyze_gpu(report.gpu, report.train, busy_metric="utilization")
    return compare(scenario, report, timings[: len(report.train.steps)], util)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    torch, why = _load_torch()
    if torch is None:
        print(f"device_check: cannot run here: {why}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    device = torch.cuda.get_device_name(0)
    print(f"device_check on {device}, torch {torch.__version__}", flush=True)
    results = []
    for scenario in args.scenarios:
        print(f"  running {scenario}...", flush=True)
        results.append(run_scenario(torch, scenario, args))
    print(format_table(results))
    for r in results:
        for note in r.notes:
            print(f"  note ({r.scenario}): {note}")
    if args.out:
        write_results(Path(args.out), results_payload(args, device, results))
    return EXIT_OK if all(r.agrees for r in results) else EXIT_DISAGREE


if __name__ == "__main__":
    sys.exit(main())
