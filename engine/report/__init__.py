"""What a run is shown as: the offline HTML report (`html`, `data`, `charts`, `assets/`)
and the CI outputs (`ci`: a run as outcomes and gates; `junit`, `summary_md`).

May import: `engine.analysis`, `engine.run` and what they may import.
"""
