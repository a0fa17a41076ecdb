"""Adapters for AI CLIs: hook handlers, transcript importers, settings installers."""
