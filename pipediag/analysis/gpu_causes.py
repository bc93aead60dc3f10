"""Why a GPU sat idle: each cause's name and the code of the advisor's fix, read by the GPU
analysis and the advisor's GPU rule (docs/design.md, "GPU idle causes")."""

from __future__ import annotations

from typing import Final

from pipediag.report.vocabulary import GpuIdleCause

CAUSE_INPUT: Final = "input-wait"
CAUSE_HOST: Final = "host-overhead"
CAUSE_TRANSFER: Final = "transfer"
# In the order idle time is attributed to them.
CAUSES: tuple[GpuIdleCause, ...] = (CAUSE_INPUT, CAUSE_TRANSFER, CAUSE_HOST)
# The code of the advisor's fix for a cause other than input; `{steps}`: the steps per call.
CAUSE_FIX_CODE: dict[GpuIdleCause, str] = {
    CAUSE_HOST: (
        "model.compile(..., steps_per_execution={steps}, jit_compile=True)  # Keras\n"
        "# or raise the batch size so each step launches more work per Python call"
    ),
    CAUSE_TRANSFER: (
        "ds = ds.apply(tf.data.experimental.prefetch_to_device('/gpu:0'))\n"
        "# or copy fewer bytes: cast to uint8/bfloat16 on the host, decode on the device"
    ),
}
