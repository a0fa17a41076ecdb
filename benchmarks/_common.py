"""What the benchmark scripts share: the ctxd they measure, an isolated user, hyperfine's JSON."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def use_ctxd_source(argv=None):
    """Import ctxd from this checkout, or from `--ctxd-src DIR` (call before ctxd is first imported)."""
    argv = sys.argv if argv is None else argv
    sys.path.insert(0, REPO)
    if "--ctxd-src" in argv[:-1]:
        sys.path.insert(0, os.path.abspath(argv[argv.index("--ctxd-src") + 1]))


def isolated_env(home, pwd):
    """A minimal environment with every user path under *home* and $PWD set."""
    env = {
        "HOME": home,
        "USER": os.environ.get("USER", "bench"),
        "LANG": "C.UTF-8",
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_DATA_HOME": os.path.join(home, ".local/share"),
        "XDG_STATE_HOME": os.path.join(home, ".local/state"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "PWD": pwd,
    }
    if os.environ.get("PYENV_ROOT"):  # lets a pyenv shim on PATH work
        env["PYENV_ROOT"] = os.environ["PYENV_ROOT"]
    return env


def read_hyperfine(path, times, cpu):
    """Add one hyperfine --export-json file's wall times and mean CPU to *times* / *cpu* by command name."""
    with open(path) as f:
        for r in json.load(f)["results"]:
            times[r["command"]].extend(r["times"])
            cpu[r["command"]].append(r["user"] + r["system"])
