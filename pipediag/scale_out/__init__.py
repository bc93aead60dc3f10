"""Scale-out: can the training pipeline move to tf.data service, and what would it buy.

`analysis.py` (pure) finds what keeps a stage on this host, where `distribute` goes, and
predicts from the finished report; `check.py` runs the check after the deep analysis
(`local_files.py`; real servers in `service.py` / `server.py`; `train.py` times the train
step fed by them). Model: `report/scale_out.py`; words: `renderers/scale_out.py`.
Method: (docs/design.md, "tf.data service").

May import: `bench`, `training`, `analysis`, `report`, `clock`, `config`, `errors`.
"""
