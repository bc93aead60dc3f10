"""Why a GPU sat idle, in one table: each cause's name, how the summary phrases it, what to do
about it, and the fix the advisor suggests with its code (HTA's idle-time categories,
docs/design.md, "Methods it builds on"). The GPU analysis and the advisor's GPU rule both read it.
"""

from __future__ import annotations

from typing import Final

from pipediag.report.model import GpuIdleCause

CAUSE_INPUT: Final = "input-wait"
CAUSE_HOST: Final = "host-overhead"
CAUSE_TRANSFER: Final = "transfer"
CAUSES: tuple[GpuIdleCause, ...] = (CAUSE_INPUT, CAUSE_TRANSFER, CAUSE_HOST)
"""In the order idle time is attributed to them (see the module docstring)."""

ADVICE = {
    CAUSE_INPUT: (
        "Speed up the input pipeline: it leaves the GPU idle while the host waits for the next "
        "batch (parallel map, prefetch, cache; see the pipeline stages)."
    ),
    CAUSE_HOST: (
        "Cut host-side overhead per step: a larger batch, Keras `steps_per_execution`, XLA "
        "(`jit_compile=True`); in PyTorch, CUDA graphs or `torch.compile`, and avoid a "
        "synchronising `.item()` every step."
    ),
    CAUSE_TRANSFER: (
        "Overlap host-to-device copies with compute: prefetch to the device "
        "(`tf.data.experimental.prefetch_to_device`; pinned memory and `non_blocking=True` in "
        "PyTorch) and use larger batches."
    ),
}
"""What to do about each idle cause (HTA's categories: docs/design.md, "Methods it builds on")."""

CAUSE_PHRASE = {
    CAUSE_INPUT: "waiting for input",
    CAUSE_HOST: "host-side overhead (Python, kernel launches, synchronisation)",
    CAUSE_TRANSFER: "host-device transfer (PCIe busy while the SMs idled)",
}

# The advisor's suggestion for a cause other than input (input has the pipeline's own rules):
# (title, code).
CAUSE_FIXES: dict[GpuIdleCause, tuple[str, str]] = {
    CAUSE_HOST: (
        "the GPU idles on host-side overhead: fewer, larger steps",
        "model.compile(..., steps_per_execution=32, jit_compile=True)  # Keras\n"
        "# or raise the batch size so each step launches more work per Python call",
    ),
    CAUSE_TRANSFER: (
        "the GPU idles on host-to-device copies: overlap them with compute",
        "ds = ds.apply(tf.data.experimental.prefetch_to_device('/gpu:0'))\n"
        "# or copy fewer bytes: cast to uint8/bfloat16 on the host, decode on the device",
    ),
}
