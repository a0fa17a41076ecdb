"""The old import path of the transcript importers, kept only for callers not yet moved:
``ctxd/integrations/hooks.py`` imports ``claude_prompt_dedup`` from here. New code imports
the parsers from ``ctxd.agents`` and the driver from ``ctxd.memory.importing``; delete this
module when nothing names it."""

from ctxd.agents.claude import claude_prompt_dedup
from ctxd.memory.importing import FORMATS, ImportFailed, ImportResult, detect_format, import_file, import_transcript

__all__ = ["FORMATS", "ImportFailed", "ImportResult", "claude_prompt_dedup", "detect_format", "import_file",
           "import_transcript"]
