"""The conversation side: store, redaction, token estimates, context rendering."""
