# ctxd hook for zsh. Install with:  eval "$(ctxd hook zsh)"
# chpwd reacts to cd at once (also in `cd dir && cmd`), precmd notices edits
# of watched files. Safe to evaluate twice (add-zsh-hook dedups), keeps $?,
# immune to the user's options (emulate -L zsh). No process starts unless a
# project root, its watched files or the ctxd state changed.

typeset -ga _ctxd_markers
_ctxd_markers=(@CTXD_MARKERS@)
typeset -ga _ctxd_cmd
_ctxd_cmd=(@CTXD_COMMAND@)
export _CTXD_HOOK=zsh  # for `ctxd doctor` (a child process cannot see shell functions)

_ctxd_find_root() {
  emulate -L zsh
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

_ctxd_watch_changed() {
  emulate -L zsh
  [[ -n ${CTXD_WATCH-} ]] || return 1
  local -a _ctxd_lines
  _ctxd_lines=("${(@f)CTXD_WATCH}")
  local _ctxd_stamp=${_ctxd_lines[1]} _ctxd_line
  for _ctxd_line in "${(@)_ctxd_lines[2,-1]}"; do
    case $_ctxd_line in
      (+*) [[ -e ${_ctxd_line[2,-1]} ]] || return 0
           [[ -n $_ctxd_stamp && ${_ctxd_line[2,-1]} -nt $_ctxd_stamp ]] && return 0 ;;
      (-*) [[ -e ${_ctxd_line[2,-1]} ]] && return 0 ;;
    esac
  done
  return 1
}

_ctxd_run() {
  emulate -L zsh
  local _ctxd_out _ctxd_rc _ctxd_need=1
  # a new shell inherits CTXD_STATE but not the restore function: ask for it
  (( ${+functions[_ctxd_restore]} )) && _ctxd_need=0
  _ctxd_out=$(CTXD_NEED_RESTORE=$_ctxd_need "${_ctxd_cmd[@]}" export zsh 2>/dev/null)
  _ctxd_rc=$?
  if [[ -n $_ctxd_out ]]; then
    eval "$_ctxd_out"
  fi
  if (( _ctxd_rc != 0 )); then
    if (( ${+functions[_ctxd_restore]} )); then _ctxd_restore; fi
    unfunction _ctxd_restore 2>/dev/null
    unset CTXD_STATE CTXD_WATCH
    if (( _ctxd_rc == 6 )); then
      _ctxd_out=$("${_ctxd_cmd[@]}" export zsh 2>/dev/null) && eval "$_ctxd_out"
    elif [[ -z $_ctxd_out ]]; then
      print -ru2 -- "ctxd: the hook could not run ctxd (exit $_ctxd_rc); project environment unloaded. Try: ctxd doctor"
    fi
  fi
  return 0
}

_ctxd_hook() {
  local _ctxd_status=$?
  emulate -L zsh
  local _ctxd_r
  _ctxd_find_root
  if [[ ${_ctxd_init-} == 1 && $_ctxd_r == "${_ctxd_root-}" && ${CTXD_STATE-} == "${_ctxd_seen-}" ]] \
    && ! _ctxd_watch_changed; then
    return $_ctxd_status
  fi
  if [[ -z $_ctxd_r && -n ${CTXD_STATE-} && ${_ctxd_fast_leave-} == 1 \
        && $CTXD_STATE == "${_ctxd_seen-}" && ${PATH-} == "${_ctxd_path-}" ]] \
     && (( ${+functions[_ctxd_restore]} )); then
    # Leaving for no project, nothing touched since our export, no on_leave
    # hook: the restore function undoes it exactly, without starting ctxd.
    _ctxd_restore
    unfunction _ctxd_restore
    typeset -g _ctxd_fast_leave=0
  elif [[ -n $_ctxd_r || -n ${CTXD_STATE-} ]]; then
    _ctxd_run
  fi
  typeset -g _ctxd_init=1 _ctxd_root=$_ctxd_r _ctxd_seen=${CTXD_STATE-} _ctxd_path=${PATH-}
  return $_ctxd_status
}

autoload -Uz add-zsh-hook
add-zsh-hook chpwd _ctxd_hook
add-zsh-hook precmd _ctxd_hook
