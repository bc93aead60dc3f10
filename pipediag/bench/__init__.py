"""TensorFlow-side measurement of the input pipeline on private copies: the pipeline alone,
its structure, each stage's rate, what-if fixes on rewritten graphs. The user's dataset is
never iterated and the user's model never run here.

May import: `report`, `analysis` (statistics), `config`, `clock`, `errors`. TensorFlow only
inside functions.
"""
