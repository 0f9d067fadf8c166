"""Aligning a scorer with human labels (``scorespec align``): candidate child specs proposed from
a train split, chosen on a dev split, the chosen one and its parent compared once on a held-out
test split, the result written as an ``extends:`` child spec a person reads and edits.

`split` (seeded, stratified train / dev / test), `selection` (the figures a candidate is chosen
by, and the test comparison), `candidates` (candidate child specs as text, one strategy each:
instructions, worked examples from train items, a cut-off), `optimizer` (the engine-owned
meta-spec that proposes instruction text, in ``specs/``), `propose` (the candidates written,
compiled, bound and scored on dev), `runs` (a split scored in one batch run), `settings` and
`result` (the typed settings and result), `files` (the child spec and the JSON record written
out), `loop` (the whole procedure).

May import: `engine.analysis`, `engine.run` and what they may import.
"""
