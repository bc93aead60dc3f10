"""The user's own model, run by pipediag: compute alone, fixes tried on training, and what a
custom loop is served at its step budget; every variable a step writes is put back.

May import `bench`, `analysis`, `report`, `timeline`, `config`, `clock`, `errors`; used by
`hooks` and the session's phases, never importing them. TensorFlow only inside functions."""
