"""The user's own model, run by pipediag: compute alone (the train step on a cached batch),
fixes tried on training (the train step fed by the original and a fixed pipeline in turn),
and what a custom loop is served at its step budget (`budget.py`). Every variable a step
writes is put back as it was.

May import: `bench` (the pipeline copies fed to the train step), `analysis` (statistics),
`report`, `timeline`, `config`, `clock`, `errors`. Used by `hooks` (a custom loop's step
budget) and by the session's phases; never imports them. TensorFlow only inside functions.
"""
