"""LLM backends, one module each; chosen by model string in ``assay.llm.registry``."""
