"""Scale-out: can the training pipeline move to tf.data service, and what would it buy.

`analysis.py` (pure) finds what keeps a stage on this host and where `distribute` goes, and
predicts from the finished report; `check.py` runs the check after the deep analysis, with
`local_files.py` (files other machines could not read) and, when asked, reads through a real
service (`service.py`, its servers in processes of their own: `server.py`); `train.py` times
the train step fed by it. The section's model is `report/scale_out.py`, its words
`renderers/scale_out.py`. Method: (docs/design.md, "tf.data service").

May import: `bench`, `training`, `analysis`, `report`, `clock`, `config`, `errors`.
"""
