#!/usr/bin/env bash
# Install the real AI CLIs the realcli tests drive, at pinned versions, into a
# cache outside the repository. Idempotent: does nothing when the pinned
# versions are already there. Prints the bin directory on its last line.
#
#   bash tests/realcli/install.sh          # installs (or skips) and prints the bin dir
#   CTXD_REALCLI_PREFIX=/some/dir bash tests/realcli/install.sh
set -euo pipefail

# Pinned versions (verified against the stub model in tests/realcli/stub_model.py).
CLAUDE_VERSION=2.1.332
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0

prefix="${CTXD_REALCLI_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxd-ci/npm}"
pkgs=(
  "@anthropic-ai/claude-code@$CLAUDE_VERSION"
  "@openai/codex@$CODEX_VERSION"
  "@google/gemini-cli@$GEMINI_VERSION"
)

installed_version() {  # $1 = package name -> its installed version, or nothing
  local pj="$prefix/node_modules/$1/package.json"
  [[ -f $pj ]] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$pj" 2>/dev/null || true
}

missing=()
for spec in "${pkgs[@]}"; do
  name="${spec%@*}"
  want="${spec##*@}"
  [[ $(installed_version "$name") == "$want" ]] || missing+=("$spec")
done

if ((${#missing[@]})); then
  command -v npm >/dev/null 2>&1 || { echo "realcli: npm is missing" >&2; exit 1; }
  mkdir -p "$prefix"
  echo "realcli: installing ${missing[*]} into $prefix" >&2
  # All three at once, so npm resolves one tree; --no-fund/--no-audit keep it quiet.
  npm install --prefix "$prefix" --no-fund --no-audit --loglevel=error "${pkgs[@]}" >&2
fi

for bin in claude codex gemini; do
  [[ -x "$prefix/node_modules/.bin/$bin" ]] || { echo "realcli: $bin missing after install" >&2; exit 1; }
done
echo "$prefix/node_modules/.bin"
