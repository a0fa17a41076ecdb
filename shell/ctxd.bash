# ctxd hook for bash. Install with:  eval "$(ctxd hook bash)"
# Safe to evaluate twice, works under `set -u`, keeps $? and the user's own
# PROMPT_COMMAND (string or array). bash has no chpwd: the prompt hook notices
# a changed $PWD. No process starts unless a project root, its watched files
# or the ctxd state changed.

_ctxd_markers=(@CTXD_MARKERS@)
_ctxd_cmd=(@CTXD_COMMAND@)
export _CTXD_HOOK=bash  # for `ctxd doctor` (a child process cannot see shell functions)

# Nearest directory at or above $PWD holding a marker -> _ctxd_r ("" if none).
_ctxd_find_root() {
  local _ctxd_d=$PWD _ctxd_m
  _ctxd_r=
  while :; do
    for _ctxd_m in "${_ctxd_markers[@]}"; do
      if [[ -e ${_ctxd_d}/${_ctxd_m} ]]; then
        _ctxd_r=${_ctxd_d:-/}
        return 0
      fi
    done
    [[ -z $_ctxd_d || $_ctxd_d == / ]] && return 0
    _ctxd_d=${_ctxd_d%/*}
  done
}

# Status 0 when a watched file changed since the last export.
_ctxd_watch_changed() {
  [[ -n ${CTXD_WATCH-} ]] || return 1
  local _ctxd_rest=$CTXD_WATCH _ctxd_line _ctxd_stamp=
  _ctxd_stamp=${_ctxd_rest%%$'\n'*}
  [[ $_ctxd_rest == *$'\n'* ]] && _ctxd_rest=${_ctxd_rest#*$'\n'} || _ctxd_rest=
  while [[ -n $_ctxd_rest ]]; do
    _ctxd_line=${_ctxd_rest%%$'\n'*}
    [[ $_ctxd_rest == *$'\n'* ]] && _ctxd_rest=${_ctxd_rest#*$'\n'} || _ctxd_rest=
    case $_ctxd_line in
      +*) [[ -e ${_ctxd_line:1} ]] || return 0
          [[ -n $_ctxd_stamp && ${_ctxd_line:1} -nt $_ctxd_stamp ]] && return 0 ;;
      -*) [[ -e ${_ctxd_line:1} ]] && return 0 ;;
    esac
  done
  return 1
}

_ctxd_run() {
  local _ctxd_out _ctxd_rc _ctxd_need=1
  # a new shell inherits CTXD_STATE but not the restore function: ask for it
  declare -F _ctxd_restore >/dev/null && _ctxd_need=0
  _ctxd_out=$(CTXD_NEED_RESTORE=$_ctxd_need "${_ctxd_cmd[@]}" export bash 2>/dev/null)
  _ctxd_rc=$?
  if [[ -n $_ctxd_out ]]; then
    eval "$_ctxd_out"
  fi
  if (( _ctxd_rc != 0 )); then
    # ctxd is gone, crashed or found its state corrupt: undo the last
    # activation without it, so the shell is clean whatever happened.
    if declare -F _ctxd_restore >/dev/null; then _ctxd_restore; fi
    unset -f _ctxd_restore
    unset CTXD_STATE CTXD_WATCH
    if (( _ctxd_rc == 6 )); then
      _ctxd_out=$("${_ctxd_cmd[@]}" export bash 2>/dev/null) && eval "$_ctxd_out"
    elif [[ -z $_ctxd_out ]]; then
      printf 'ctxd: the hook could not run ctxd (exit %s); project environment unloaded. Try: ctxd doctor\n' "$_ctxd_rc" >&2
    fi
  fi
  return 0
}

_ctxd_hook() {
  local _ctxd_status=$? _ctxd_r
  _ctxd_find_root
  if [[ ${_ctxd_init-} == 1 && $_ctxd_r == "${_ctxd_root-}" && ${CTXD_STATE-} == "${_ctxd_seen-}" ]] \
    && ! _ctxd_watch_changed; then
    return $_ctxd_status
  fi
  if [[ -z $_ctxd_r && -n ${CTXD_STATE-} && ${_ctxd_fast_leave-} == 1 \
        && $CTXD_STATE == "${_ctxd_seen-}" && ${PATH-} == "${_ctxd_path-}" ]] \
     && declare -F _ctxd_restore >/dev/null; then
    # Leaving for no project, nothing touched since our export, no on_leave
    # hook: the restore function undoes it exactly, without starting ctxd.
    _ctxd_restore
    unset -f _ctxd_restore
    _ctxd_fast_leave=0
  elif [[ -n $_ctxd_r || -n ${CTXD_STATE-} ]]; then
    _ctxd_run
  fi
  _ctxd_init=1
  _ctxd_root=$_ctxd_r
  _ctxd_seen=${CTXD_STATE-}
  _ctxd_path=${PATH-}
  return $_ctxd_status
}

# Install once, first in line; keep whatever else is there. An array element
# may hold the string form ("_ctxd_hook;user_cmd") when something appended to
# PROMPT_COMMAND with += after an earlier install: that counts as installed.
# PROMPT_COMMAND is deliberately handled both as an array and as a string:
# shellcheck disable=SC2128,SC2178
if [[ ${PROMPT_COMMAND+set} == set && ${PROMPT_COMMAND@a} == *a* ]]; then
  _ctxd_found=
  for _ctxd_pc in "${PROMPT_COMMAND[@]}"; do
    [[ ";$_ctxd_pc;" == *";_ctxd_hook;"* ]] && _ctxd_found=1
  done
  [[ -n $_ctxd_found ]] || PROMPT_COMMAND=(_ctxd_hook "${PROMPT_COMMAND[@]}")
  unset _ctxd_found _ctxd_pc
elif [[ ";${PROMPT_COMMAND-};" != *";_ctxd_hook;"* ]]; then
  PROMPT_COMMAND="_ctxd_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
