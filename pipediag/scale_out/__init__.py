"""Scale-out: can the training pipeline move to tf.data service, and what would it buy.

`analysis.py` is pure; `check.py` measures. Model: `report/scale_out.py`; words:
`renderers/scale_out.py`. Method: (docs/design.md, "tf.data service").

May import: `bench`, `training`, `analysis`, `report`, `clock`, `config`, `errors`."""
