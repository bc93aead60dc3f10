"""Where a batch lives: the host, or the accelerator the train step runs on. A seam: tests
drive the copy's trial with a fake device (docs/design.md, "The host-to-device copy")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

# The device the fixes and the copy's trial name: the first GPU, as TensorFlow calls it.
GPU_DEVICE = "/gpu:0"


class DevicePlacement(Protocol):
    """Puts a batch on the host or on the device; `name` is the device's, as code writes it."""

    @property
    def name(self) -> str: ...

    def on_host(self, batch: Any) -> Any:
        """The batch as host tensors: a step fed with them copies them to the device."""

    def on_device(self, batch: Any) -> Any:
        """The batch copied to the device once: a step fed with it copies nothing."""


@dataclass(frozen=True)
class TensorFlowPlacement:
    """Placement with `tf.device`: an identity of each tensor made on the host or the device."""

    name: str = GPU_DEVICE

    def on_host(self, batch: Any) -> Any:
        return _placed(batch, "/cpu:0")

    def on_device(self, batch: Any) -> Any:
        return _placed(batch, self.name)


def gpu_placement() -> TensorFlowPlacement | None:
    import tensorflow as tf

    return TensorFlowPlacement(GPU_DEVICE) if tf.config.list_physical_devices("GPU") else None


def prefetch_device() -> str | None:
    """The device a pipeline's batches may be prefetched to: the first GPU, or None."""
    return None if gpu_placement() is None else GPU_DEVICE


def _placed(batch: Any, device: str) -> Any:
    import numpy as np
    import tensorflow as tf

    def place(value: Any) -> Any:
        return tf.identity(value) if tf.is_tensor(value) or isinstance(value, np.ndarray) else value

    with tf.device(device):
        return tf.nest.map_structure(place, batch)
