"""Ranked recall over the store: keyword, semantic and Chinese-English."""
