"""External scorers an ablation can drive (`AblationSpec(scorer="lib.scorers.ragas_metrics:faithfulness")`)."""
