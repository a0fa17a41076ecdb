"""Text: tokens, model sizes, secret redaction (no ctxd imports below it)."""
