"""Background samplers: host CPU/memory (psutil) and GPU activity (NVML). Imports neither
TensorFlow nor pynvml (pynvml only inside `start()`), so the core runs, and is tested, without
either. May import: `report`, `clock`, `config`, `errors`."""

from __future__ import annotations

from pipediag.clock import Clock, Quiet
from pipediag.config import RunConfig
from pipediag.report.reasons import Reason
from pipediag.report.samples import GpuSection, HostSection
from pipediag.samplers.gpu import GpuSampler
from pipediag.samplers.host import HostSampler

__all__ = ["GpuSampler", "HostSampler", "make_samplers", "stop_samplers"]


def make_samplers(
    config: RunConfig, clock: Clock, quiet: Quiet | None = None
) -> list[HostSampler | GpuSampler]:
    """The samplers the configuration asks for, not yet started; none reads while `quiet` holds."""
    samplers: list[HostSampler | GpuSampler] = []
    if config.sample_host:
        samplers.append(HostSampler(interval_s=config.host_interval_s, clock=clock))
    if config.sample_gpu:
        samplers.append(GpuSampler(interval_s=config.gpu_interval_s, clock=clock))
    for sampler in samplers:
        sampler.quiet = quiet
    return samplers


def stop_samplers(
    samplers: list[HostSampler | GpuSampler], origin: float
) -> tuple[HostSection, GpuSection]:
    """Stop each sampler and give its section (times from `origin`), its trouble in its notes."""
    host = HostSection(available=False, reason=Reason("host-sampling-off"))
    gpu = GpuSection(available=False, reason=Reason("gpu-sampling-off"))
    for sampler in samplers:
        sampler.stop()
        if isinstance(section := sampler.section(origin), HostSection):
            host = section
        else:
            gpu = section
    return host, gpu
