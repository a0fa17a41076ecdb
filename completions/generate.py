"""Regenerate the completion scripts in this folder from the click app.

    python completions/generate.py

Each file is exactly what `ctxd completion SHELL` prints; tests/test_completions.py
fails when a committed file differs from it (a new click release can change them).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # this checkout's ctxd, even when not installed

from ctxd.cli import cli  # noqa: E402
from ctxd.commands.completion import FILES, source  # noqa: E402


def main():
    for shell, name in FILES.items():
        path = os.path.join(HERE, name)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(source(shell, cli))
        print(f"wrote {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
