"""External scorers an ablation can drive (`AblationSpec(scorer="lib.judging.scorers.ragas_metrics:faithfulness")`)."""
