#!/usr/bin/env bash
# Install the shells that are not Debian packages, at pinned versions, into
# caches outside the repository (where tests/shellkit.py looks for them):
#   xonsh   (PyPI)  -> ~/.cache/ctxd-ci/xonsh/bin/xonsh          (a venv)
#   nushell (npm)   -> ~/.cache/ctxd-ci/nushell/node_modules/.bin/nu
# Idempotent: does nothing when the pinned versions are there. tcsh and elvish
# come from Debian (.ci/run installs them with apt-get).
set -euo pipefail

XONSH_VERSION=0.25.0
NUSHELL_VERSION=0.115.1

cache="${XDG_CACHE_HOME:-$HOME/.cache}/ctxd-ci"
mkdir -p "$cache"

xonsh_dir="$cache/xonsh"
if [[ $("$xonsh_dir/bin/python" -c 'import importlib.metadata as m; print(m.version("xonsh"))' 2>/dev/null) != "$XONSH_VERSION" ]]; then
  echo "shells: installing xonsh $XONSH_VERSION into $xonsh_dir" >&2
  if ! python3 -m venv --clear "$xonsh_dir" >/dev/null 2>&1; then
    # Debian's python3 has no ensurepip without python3-venv (CI runs as root there)
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv --clear "$xonsh_dir"
  fi
  "$xonsh_dir/bin/python" -m pip install -q --disable-pip-version-check "xonsh==$XONSH_VERSION" >&2
fi

nu_dir="$cache/nushell"
pj="$nu_dir/node_modules/nushell/package.json"
have=""
[[ -f $pj ]] && have=$(node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$pj" 2>/dev/null || true)
if [[ $have != "$NUSHELL_VERSION" ]]; then
  command -v npm >/dev/null 2>&1 || { echo "shells: npm is missing" >&2; exit 1; }
  echo "shells: installing nushell $NUSHELL_VERSION into $nu_dir" >&2
  mkdir -p "$nu_dir"
  npm install --prefix "$nu_dir" --no-fund --no-audit --loglevel=error "nushell@$NUSHELL_VERSION" >&2
fi

"$xonsh_dir/bin/xonsh" --version >/dev/null || { echo "shells: xonsh does not run" >&2; exit 1; }
"$nu_dir/node_modules/.bin/nu" --version >/dev/null || { echo "shells: nu does not run" >&2; exit 1; }
