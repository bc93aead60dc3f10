"""A train step for test scripts whose loop only reads its data: pipediag times a custom loop
only once a train step runs between its pulls (docs/design.md, "Finding the training").

`TRAIN_STEP` is script source that defines `train_step(*batch)`: the first call takes a
gradient of one variable (so pipediag watches it), and every call changes that variable,
for tens of microseconds. The variable is made at the first call, so a script's header leaves
TensorFlow's runtime unstarted (logical devices can still be set).
"""

TRAIN_STEP = """
import tensorflow as _tf

_weights = []

def train_step(*_batch):
    if not _weights:
        _weights.append(_tf.Variable(0.0))
        with _tf.GradientTape() as tape:
            loss = _weights[0] * 2.0
        tape.gradient(loss, _weights[0])
    _weights[0].assign_add(1.0)
"""
