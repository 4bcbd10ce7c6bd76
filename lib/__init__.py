"""evaldrift: tell a wiring leak in an LLM-judged RAG metric from a genuine regression."""
