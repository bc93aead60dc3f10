"""Background samplers: host CPU/memory (psutil) and GPU activity (NVML).

Importing this package imports neither TensorFlow nor pynvml: the GPU sampler imports pynvml
inside `start()`, so the core runs, and is tested, on machines without either.

May import: `report`, `clock`, `config` (the sampling defaults), `errors`.
"""

from __future__ import annotations

from pipediag.samplers.base import DecimatingBuffer, ThreadedSampler
from pipediag.samplers.gpu import GpuSampler
from pipediag.samplers.host import HostSampler

__all__ = ["DecimatingBuffer", "GpuSampler", "HostSampler", "ThreadedSampler"]
