"""Offline tools for maintainers: evaluation, training, the classifier gate's
generator. The runtime never imports this package (import-linter checks)."""
