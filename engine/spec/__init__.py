"""The spec phase: a YAML file becomes a checked, compiled `ScorerPlan`.

Line-aware YAML (`yamlload`) → `Document` with positions (`document`, `extends:` in `inherit`) →
frozen spec models (`models`, `validation`) → compiled plans (`compile`, `scope`, `plans`, `reasons`,
`sampling`, `answer_fields`, `expressions`); where specs come from (`catalog`), the merged view (`resolved`),
starting specs (`scaffold`) and a run's kept spec text (`snapshot`).

May import: `engine.core`, `engine.functions`.
"""
