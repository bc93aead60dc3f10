"""`pipediag merge`: the reports of a multi-worker job's workers, side by side.

One report per worker (`pipediag run` under `TF_CONFIG`) becomes one fleet report: a row
per worker, the straggler and its cause (`analysis.py`), a trace with one process per
worker on a common clock (`trace.py`) and a one-page PNG (`png.py`). Everything here only
reads report JSON: no TensorFlow.

May import: `report`, `renderers` (a worker's trace, the PNG's colours), `errors`.
"""
