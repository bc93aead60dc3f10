"""TensorFlow-side measurement of the input pipeline on private copies: the pipeline alone,
its structure, each stage's rate, what-if fixes. The user's dataset is never iterated here.
May import: `report`, `analysis`, `config`, `clock`, `errors`; TensorFlow only inside functions."""
