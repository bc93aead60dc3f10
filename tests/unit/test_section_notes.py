"""The report sections' notes are reasons (codes with parameters), worded in one glossary:
each code's words are the sentence pipediag wrote before it was typed, and an older report's
sentences load as written and render as before."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, cast

import pytest
from multiworker_jobs import worker
from synthetic_reports import synthetic_cost_report

from pipediag.fleet.analysis import build_fleet
from pipediag.fleet.collect import WorkerReport
from pipediag.fleet.io import fleet_from_dict, fleet_to_dict
from pipediag.fleet.text import render_fleet_text
from pipediag.renderers.hardware_words import sampler_note_lines
from pipediag.renderers.reason_words import WORDS, reason_words
from pipediag.renderers.text import render_text
from pipediag.report.io import from_dict, to_dict
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuAnalysis, GpuSection, HostSection
from pipediag.report.scale_out import ScaleOut, ServiceMeasurement
from pipediag.report.trials import FixTrial, TrialFacts
from pipediag.samplers import GpuSampler, HostSampler, stop_samplers

_STUCK = Reason("gpu-util-unavailable", value=0, detail="NVMLError_GpuIsLost")

# Each new code with sample parameters, and the sentence pipediag wrote for them before
# (`git show e296404:<file>`: samplers/, analysis/gpu.py, bench/isolate.py, scale_out/check.py,
# fleet/analysis.py), written out.
OLD_SENTENCES = [
    # samplers/base.py
    (
        Reason("repeated-failure", value=3, because=Reason("reading-failed", detail="OSError: x")),
        "reading failed: OSError: x (3 times)",
    ),
    (Reason("sampler-stuck", limit=2.0), "sampler thread did not stop within 2 s"),
    (Reason("cleanup-failed", detail="RuntimeError: gone"), "cleanup failed: RuntimeError: gone"),
    (Reason("reading-failed", detail="AccessDenied"), "reading failed: AccessDenied"),
    (Reason("sampler-thread-died", detail="SystemExit"), "sampler thread died: SystemExit"),
    # samplers/nvml_devices.py
    (
        Reason("gpm-free-failed", detail="NVMLError_Unknown"),
        "GPM sample free failed: NVMLError_Unknown",
    ),
    (
        Reason("nvml-shutdown-failed", detail="NVMLError_Uninitialized"),
        "nvmlShutdown failed: NVMLError_Uninitialized",
    ),
    (
        Reason("driver-version-unavailable", detail="NVMLError_Unknown"),
        "driver version unavailable: NVMLError_Unknown",
    ),
    (
        Reason("gpu-skipped", value=2, detail="NVMLError_GpuIsLost"),
        "GPU 2 skipped: NVMLError_GpuIsLost",
    ),
    (
        Reason("cuda-entry-unmatched", detail="bogus"),
        "CUDA_VISIBLE_DEVICES entry 'bogus' matches no single GPU; CUDA ignores it and every "
        "entry after it",
    ),
    (
        Reason("cuda-order-unsure"),
        "CUDA_VISIBLE_DEVICES indices were read in NVML (PCI bus) order; CUDA's default order "
        "can differ on mixed GPUs: set CUDA_DEVICE_ORDER=PCI_BUS_ID to be sure",
    ),
    (
        Reason("gpu-name-unavailable", value=0, detail="NVMLError_Unknown"),
        "GPU 0 name unavailable: NVMLError_Unknown",
    ),
    (
        Reason("gpu-memory-size-unavailable", value=1, detail="NVMLError_Unknown"),
        "GPU 1 memory size unavailable: NVMLError_Unknown",
    ),
    (
        Reason("gpu-mig-enabled", value=2),
        "GPU 2 has MIG enabled: NVML gives no per-MIG utilization, so readings are the whole "
        "GPU's (every MIG instance together)",
    ),
    (
        Reason("gpu-driver-samples-setup-failed", value=0, detail="NVMLError_NotSupported"),
        "GPU 0: driver utilization samples unavailable (NVMLError_NotSupported); using "
        "nvmlDeviceGetUtilizationRates",
    ),
    (
        Reason("gpu-gpm-setup-failed", value=0, detail="NVMLError_NotSupported"),
        "GPU 0: SM activity/occupancy (GPM) unavailable: NVMLError_NotSupported",
    ),
    (
        Reason("gpu-not-gpm-device", value=0),
        "GPU 0: SM activity/occupancy (GPM) unavailable: not a GPM device (needs Hopper or newer)",
    ),
    # samplers/gpu.py
    (
        Reason("gpu-memory-unavailable", value=0, detail="NVMLError_Unknown"),
        "memory readings unavailable on GPU 0: NVMLError_Unknown",
    ),
    (
        Reason("gpu-power-unavailable", value=0, detail="NVMLError_NotSupported"),
        "power readings unavailable on GPU 0: NVMLError_NotSupported",
    ),
    (
        Reason("gpu-clock-unavailable", value=1, detail="NVMLError_Unknown"),
        "SM clock readings unavailable on GPU 1: NVMLError_Unknown",
    ),
    (
        Reason("gpu-pcie-rx-unavailable", value=0, detail="NVMLError_Unknown"),
        "PCIe RX readings unavailable on GPU 0: NVMLError_Unknown",
    ),
    (
        Reason("gpu-pcie-tx-unavailable", value=0, detail="NVMLError_Unknown"),
        "PCIe TX readings unavailable on GPU 0: NVMLError_Unknown",
    ),
    (
        Reason("gpu-util-samples-unavailable", value=0, detail="NVMLError_Unknown"),
        "driver utilization samples unavailable on GPU 0: NVMLError_Unknown",
    ),
    (_STUCK, "GPU utilization unavailable on GPU 0: NVMLError_GpuIsLost"),
    (
        Reason("gpu-gpm-unavailable", value=0, detail="NVMLError_Unknown"),
        "SM activity/occupancy (GPM) readings unavailable on GPU 0: NVMLError_Unknown",
    ),
    # samplers/gpu.py
    (Reason("no-util-reading-on-gpu", value=0), "no GPU utilization reading succeeded on GPU 0"),
    # analysis/gpu.py
    (
        Reason("busiest-gpu-analysed", value=1, limit=4),
        "GPU 1 analysed, the busiest of the 4 GPUs sampled; data-parallel GPUs idle together "
        "when input-bound",
    ),
    (
        Reason("untimed-readings", limit=1.0),
        "no driver timestamps: utilization readings were placed at the sampler's ticks and "
        "merged into windows of at least 1 s",
    ),
    (
        Reason("untimed-readings", limit=0.5),
        "no driver timestamps: utilization readings were placed at the sampler's ticks and "
        "merged into windows of at least 0.5 s",
    ),
    (
        Reason("low-window-coverage", value=0.234),
        "GPU windows cover only 23% of the measured step time (readings missing or failing "
        "during the run)",
    ),
    (
        Reason("steady-run"),
        "GPU idle or input wait did not vary across windows: their correlation is undefined "
        "(a steady run); the idle attribution still holds",
    ),
    (
        Reason("few-correlation-windows", value=3, limit=5),
        "3 windows are too few for a correlation (need 5)",
    ),
    (
        Reason("no-gpu-reading", because=Reason("repeated-failure", value=4, because=_STUCK)),
        "no GPU utilization reading succeeded "
        "(GPU utilization unavailable on GPU 0: NVMLError_GpuIsLost (4 times))",
    ),
    # bench/isolate.py
    (
        Reason("file-cache-bypassed", detail="/tmp/train.cache"),
        "the file cache '/tmp/train.cache' is not complete yet: pipediag read the pipeline "
        "without it, so it never writes your cache files",
    ),
    # scale_out/check.py
    (
        Reason(
            "too-little-moves",
            detail="map(decode) (train.py:12)",
            value=0.12,
            because=Reason("port-to-tf", detail="map(parse) (train.py:9)"),
        ),
        "only the stages up to map(decode) (train.py:12) could move, 12% of the pipeline's "
        "work: not worth the transfer; port map(parse) (train.py:9) to TF ops, then the whole "
        "pipeline can move",
    ),
    (
        Reason("nothing-sent"),
        "nothing was sent through the service: no part worth moving can run on a worker",
    ),
    (
        Reason("distribute-before-batch"),
        "the distribute point is before the batch: elements would cross to this host one by "
        "one; batch before distribute if the stages after it allow",
    ),
    (
        Reason("one-host", value=2, limit=8),
        "one host: the 2 workers shared its 8 cores; this shows the pipeline runs on workers "
        "and what transfer costs, not a cluster's speed",
    ),
    (  # os.cpu_count() can be None
        Reason("one-host", value=4),
        "one host: the 4 workers shared its None cores; this shows the pipeline runs on "
        "workers and what transfer costs, not a cluster's speed",
    ),
    # fleet/analysis.py
    (
        Reason("different-scripts", detail="a.py, b.py"),
        "the workers ran different scripts: a.py, b.py",
    ),
    (
        Reason("cluster-partly-merged", value=4, limit=2),
        "the cluster has 4 tasks; 2 reports were merged",
    ),
    (
        Reason("incomplete-runs", detail="worker-1"),
        "incomplete runs (the script ended early or failed): worker-1",
    ),
]


@pytest.mark.parametrize(("reason", "sentence"), OLD_SENTENCES)
def test_each_code_words_its_note_as_before(reason: Reason, sentence: str) -> None:
    assert reason_words(reason) == sentence
    # ...and so does the reason read back from JSON (figures come back as floats or ints)
    stored = json.loads(json.dumps(dataclasses.asdict(reason)))
    assert reason_words(_reason(stored)) == sentence


def _reason(stored: dict[str, Any]) -> Reason:
    because = stored["because"]
    return Reason(**{**stored, "because": _reason(because) if because else None})


def test_every_note_code_has_its_words() -> None:
    codes = {reason.code for reason, _ in OLD_SENTENCES} | {"port-to-tf"}
    assert codes <= set(WORDS)


# -- older reports ------------------------------------------------------------------------------


def _typed_report() -> Any:
    """A report whose every section's notes are typed."""
    report = synthetic_cost_report()
    measurement = ServiceMeasurement(
        where="local", workers=2, notes=[Reason("one-host", value=2, limit=8)]
    )
    scale_out = ScaleOut(
        checked=True,
        compatible=True,
        shown=True,
        requested=True,
        measurements=[measurement],
        notes=[Reason("nothing-sent")],
    )
    pipeline = dataclasses.replace(
        report.pipeline, notes=[Reason("file-cache-bypassed", detail="/tmp/c")]
    )
    return dataclasses.replace(
        report,
        pipeline=pipeline,
        host=HostSection(available=True, notes=[Reason("sampler-stuck", limit=2.0)]),
        gpu=GpuSection(available=True, notes=[Reason("gpu-not-gpm-device", value=0)]),
        gpu_analysis=GpuAnalysis(available=False, notes=[Reason("steady-run")]),
        scale_out=scale_out,
    )


def _worded(notes: list[Reason]) -> list[str]:
    return [reason_words(note) for note in notes]


def _as_written(notes: list[Reason]) -> list[Reason]:
    return [Reason("as-written", detail=reason_words(note)) for note in notes]


def test_a_schema_8_reports_section_notes_load_as_written_and_render_as_before() -> None:
    # GIVEN a report as schema 8 wrote it: each section's notes in words
    typed = _typed_report()
    data = to_dict(typed)
    data["schema_version"] = 8
    for section in ("host", "gpu", "gpu_analysis", "pipeline", "scale_out"):
        data[section]["notes"] = _worded(getattr(typed, section).notes)
    data["scale_out"]["measurements"][0]["notes"] = _worded(typed.scale_out.measurements[0].notes)
    # WHEN it is read
    read = from_dict(json.loads(json.dumps(data)))
    # THEN each note is its words kept as written, and the text and the samplers' lines
    # read as before
    for section in ("host", "gpu", "gpu_analysis", "pipeline", "scale_out"):
        assert getattr(read, section).notes == _as_written(getattr(typed, section).notes)
    assert read.scale_out.measurements[0].notes == _as_written(
        typed.scale_out.measurements[0].notes
    )
    assert render_text(read) == render_text(typed)
    assert sampler_note_lines(read.host, read.gpu) == sampler_note_lines(typed.host, typed.gpu)
    assert "note: nothing was sent through the service" in render_text(read)
    # ...and the typed report round-trips its codes
    assert from_dict(json.loads(json.dumps(to_dict(typed)))) == typed


def test_a_schema_8_trials_isolation_words_load_as_one_reason() -> None:
    report = synthetic_cost_report()
    trial = FixTrial(fix="cache", stage_index=0, facts=TrialFacts())
    data = to_dict(
        dataclasses.replace(report, pipeline=dataclasses.replace(report.pipeline, trials=[trial]))
    )
    data["schema_version"] = 8
    words = "the file cache '/tmp/c' is not complete yet: pipediag read the pipeline without it"
    data["pipeline"]["trials"][0]["facts"]["isolation"] = words
    read = from_dict(data)
    assert read.pipeline.trials[0].facts.isolation == [Reason("as-written", detail=words)]


def test_an_older_fleets_notes_load_as_written_and_render_as_before() -> None:
    workers = [WorkerReport(f"worker-{i}", Path(f"w{i}.json"), worker(i)) for i in range(2)]
    fleet = dataclasses.replace(
        build_fleet(workers),
        notes=[
            Reason("different-scripts", detail="a.py, b.py"),
            Reason("cluster-partly-merged", value=4, limit=2),
        ],
    )
    assert fleet_from_dict(json.loads(json.dumps(fleet_to_dict(fleet)))) == fleet
    old = {**fleet_to_dict(fleet), "schema_version": 2, "notes": _worded(fleet.notes)}
    read = fleet_from_dict(old)
    assert read.notes == _as_written(fleet.notes)
    assert render_fleet_text(read) == render_fleet_text(fleet)
    assert "Note: the cluster has 4 tasks; 2 reports were merged" in render_fleet_text(read)


# -- the sampler's notes said as they are stopped ----------------------------------------------


class _Stopped:
    def __init__(self, section: HostSection | GpuSection) -> None:
        self._section = section

    def stop(self) -> None:
        pass

    def section(self, origin: float) -> HostSection | GpuSection:
        return self._section


def test_stopping_the_samplers_says_their_notes_in_words() -> None:
    host = HostSection(available=True, notes=[Reason("reading-failed", detail="AccessDenied")])
    gpu = GpuSection(available=True, notes=[Reason("no-util-reading-on-gpu", value=0)])
    samplers = cast("list[HostSampler | GpuSampler]", [_Stopped(host), _Stopped(gpu)])
    assert stop_samplers(samplers, 0.0) == (host, gpu)
    assert sampler_note_lines(host, gpu) == [
        "host sampler: reading failed: AccessDenied",
        "GPU sampler: no GPU utilization reading succeeded on GPU 0",
    ]
