"""ctxd: project environments on cd, and AI conversation context per project.

This module must stay import-light: the shell hook's hot path imports it.
"""

__version__ = "0.1.0"
