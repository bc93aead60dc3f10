"""Run a Keras script as `python SCRIPT ARGS` would, and write the rate of its `fit` steps.

    python benchmarks/_fit_rate.py OUT.json SCRIPT [ARGS...]

A callback is added to every `fit` call; for each epoch after the first it records the steps
per second from its second step's start to its last step's end (`steps_per_s`: steps only,
as pipediag measures them) and from the epoch's start (`with_start_steps_per_s`: iterator
creation and buffer fills included). No pipediag is loaded: these are whole runs without it.
"""

from __future__ import annotations

import json
import runpy
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    out, script, *args = sys.argv[1:]
    import keras

    epochs: list[dict[str, Any]] = []

    class EpochRate(keras.callbacks.Callback):  # type: ignore[misc]
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.began = time.perf_counter()
            self.first: float | None = None
            self.last = self.began
            self.steps = 0

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if batch == 1:
                self.first = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.last = time.perf_counter()
            if self.first is not None:
                self.steps += 1

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            if epoch == 0 or self.first is None or self.steps == 0:
                return
            epochs.append(
                {
                    "epoch": epoch,
                    "steps": self.steps + 1,
                    "steps_per_s": self.steps / (self.last - self.first),
                    "with_start_steps_per_s": (self.steps + 1) / (self.last - self.began),
                }
            )

    original = keras.Model.fit

    def fit(model: Any, *fit_args: Any, **kwargs: Any) -> Any:
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), EpochRate()]
        return original(model, *fit_args, **kwargs)

    keras.Model.fit = fit
    sys.argv = [script, *args]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")
    Path(out).write_text(json.dumps(epochs))


if __name__ == "__main__":
    main()
