"""`pipediag merge`: the reports of a multi-worker job's workers, side by side.

Reads report JSON only (no TensorFlow): rows and straggler (`analysis.py`), a trace on one
clock (`trace.py`), a one-page PNG (`png.py`). May import: `report`, `renderers`, `errors`."""
