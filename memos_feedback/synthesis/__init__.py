"""Writing a repair's two lines from its evidence: the template path, the
LLM path (``llm``, ``prompts``) and the evidence they read. No SQL here: the
evidence is handed in by the repair pipeline."""
