# ctxd hook for zsh. Install with:  eval "$(ctxd hook zsh)"
# chpwd reacts to cd at once (also in `cd dir && cmd`), precmd notices edits
# of watched files. Safe to evaluate twice (installs once), keeps $?,
# immune to the user's options (emulate -L zsh). No process starts unless a
# project root, its watched files or the ctxd state changed. Builtins are
# called as \builtin and commands as \command, so a user's alias or function
# named like one cannot change what the hook does; Ctrl-C while the hook
# changes the environment waits until the change is complete (see _ctxd_hook).

\builtin typeset -ga _ctxd_markers
_ctxd_markers=(@CTXD_MARKERS@)
\builtin typeset -ga _ctxd_cmd
_ctxd_cmd=(@CTXD_COMMAND@)
\builtin export _CTXD_HOOK=zsh  # for `ctxd doctor` (a child process cannot see shell functions)

_ctxd_find_root() {
  \builtin emulate -L zsh
  \builtin local _ctxd_d=$PWD _ctxd_top=${HOME-}
  \builtin local -a _ctxd_anc _ctxd_hits
  # under $HOME the walk stops at $HOME (a marker above your home directory
  # does not make a directory in it a project; ctxd.activation.detectors.ceiling)
  while [[ $_ctxd_top == */ ]]; do _ctxd_top=${_ctxd_top%/}; done
  [[ -n $_ctxd_top && ( $_ctxd_d == "$_ctxd_top" || $_ctxd_d == "$_ctxd_top"/* ) ]] || _ctxd_top=
  while [[ -n $_ctxd_d ]]; do
    _ctxd_anc+=("$_ctxd_d")
    [[ $_ctxd_d == "$_ctxd_top" ]] && break
    _ctxd_d=${_ctxd_d%/*}
  done
  [[ -n $_ctxd_d ]] || _ctxd_anc+=("")  # "" stands for /
  # Every ancestor/marker pair, nearest ancestor first, in one expansion:
  # ${^...} pairs the two lists, (N-^@) keeps only the paths that exist,
  # following symlinks like [[ -e ]] (a dangling one is no marker); the
  # expanded names are never patterns (no GLOB_SUBST). One stat each, in C,
  # where a loop over them in shell code took ~40% longer.
  _ctxd_hits=( ${^_ctxd_anc}/${^_ctxd_markers}(N-^@) )
  _ctxd_r=
  (( ${#_ctxd_hits} )) || \builtin return 0
  _ctxd_r=${_ctxd_hits[1]%/*}
  _ctxd_r=${_ctxd_r:-/}
  \builtin return 0
}

# Status 0 when a watched file changed since the last export (or since the
# one whose CTXD_WATCH is $1).
_ctxd_watch_changed() {
  \builtin emulate -L zsh
  \builtin local _ctxd_w=${1-${CTXD_WATCH-}}
  [[ -n $_ctxd_w ]] || \builtin return 1
  \builtin local -a _ctxd_lines
  _ctxd_lines=("${(@f)_ctxd_w}")
  \builtin local _ctxd_stamp=${_ctxd_lines[1]} _ctxd_line
  for _ctxd_line in "${(@)_ctxd_lines[2,-1]}"; do
    case $_ctxd_line in
      (+*) [[ -e ${_ctxd_line[2,-1]} ]] || \builtin return 0
           [[ -n $_ctxd_stamp && ${_ctxd_line[2,-1]} -nt $_ctxd_stamp ]] && \builtin return 0 ;;
      (-*) [[ -e ${_ctxd_line[2,-1]} ]] && \builtin return 0 ;;
    esac
  done
  \builtin return 1
}

_ctxd_run() {
  \builtin emulate -L zsh
  \builtin local _ctxd_out _ctxd_rc _ctxd_need=1
  # a new shell inherits CTXD_STATE but not the restore function: ask for it
  (( ${+functions[_ctxd_restore]} )) && _ctxd_need=0
  _ctxd_out=$(CTXD_NEED_RESTORE=$_ctxd_need \command "${_ctxd_cmd[@]}" export zsh 2>/dev/null)
  _ctxd_rc=$?
  if (( _ctxd_rc > 128 )); then
    # killed by a signal (Ctrl-C): what it printed may be cut short, so none
    # of it runs and the environment stays exactly as it was
    \builtin print -ru2 -- "ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)"
    \builtin return 1
  fi
  if [[ -n $_ctxd_out ]]; then
    \builtin eval "$_ctxd_out"
  fi
  if [[ -n ${_ctxd_revisit_ok-} ]]; then  # ctxd says this code may be replayed
    (( _ctxd_rc != 0 )) || _ctxd_revisit_put "${_ctxd_r-}" "$_ctxd_revisit_ok" "$_ctxd_out"
    \builtin typeset -g _ctxd_revisit_ok=
  fi
  if (( _ctxd_rc != 0 )); then
    if (( ${+functions[_ctxd_restore]} )); then _ctxd_restore; fi
    \builtin unfunction _ctxd_restore 2>/dev/null
    \builtin unset CTXD_STATE CTXD_WATCH
    if (( _ctxd_rc == 6 )); then
      _ctxd_out=$(\command "${_ctxd_cmd[@]}" export zsh 2>/dev/null) && \builtin eval "$_ctxd_out"
    elif [[ -z $_ctxd_out ]]; then
      \builtin print -ru2 -- "ctxd: the hook could not run ctxd (exit $_ctxd_rc); project environment unloaded. Try: ctxd doctor"
    fi
  fi
  \builtin return 0
}

# The revisit cache (see ctxd/activation/revisit.py): per project root, the
# code ctxd printed on entering it, a test that the environment is the one it
# was printed for, and its CTXD_WATCH. Plain shell variables (never exported:
# a new shell starts empty), at most 16 roots.
\builtin typeset -gA _ctxd_rv_test _ctxd_rv_code _ctxd_rv_watch
_ctxd_rv_test=() _ctxd_rv_code=() _ctxd_rv_watch=()

_ctxd_revisit_put() {
  \builtin emulate -L zsh
  [[ -n $1 ]] || \builtin return 0
  if (( ! ${+_ctxd_rv_test[$1]} && ${#_ctxd_rv_test} >= 16 )); then
    _ctxd_rv_test=() _ctxd_rv_code=() _ctxd_rv_watch=()
  fi
  _ctxd_rv_test[$1]=$2
  _ctxd_rv_code[$1]=$3
  _ctxd_rv_watch[$1]=${CTXD_WATCH-}
}

# Status 0 when the project at $_ctxd_r was entered again without ctxd: its
# entry's test holds and no file it watches changed, so its code is what
# ctxd would print now.
_ctxd_revisit() {
  \builtin emulate -L zsh
  (( ${+_ctxd_rv_test[$_ctxd_r]} )) || \builtin return 1
  \builtin eval "${_ctxd_rv_test[$_ctxd_r]}" || \builtin return 1
  _ctxd_watch_changed "${_ctxd_rv_watch[$_ctxd_r]}" && \builtin return 1
  \builtin eval "${_ctxd_rv_code[$_ctxd_r]}"
  \builtin typeset -g _ctxd_revisit_ok=
  \builtin return 0
}

_ctxd_hook() {
  \builtin local _ctxd_status=$?
  \builtin emulate -L zsh
  \builtin local _ctxd_r _ctxd_done=1
  # A cd runs the root walk once: chpwd walks, and the precmd right after it
  # (zsh_eval_context is just "shfunc" there) reuses that walk; later prompts
  # walk again, to notice a marker created meanwhile.
  if [[ ${(j: :)zsh_eval_context} == shfunc ]]; then
    if [[ ${_ctxd_walked-} == "$PWD" ]]; then _ctxd_r=${_ctxd_walked_r-}; else _ctxd_find_root; fi
    \builtin unset _ctxd_walked
  else
    _ctxd_find_root
    \builtin typeset -g _ctxd_walked=$PWD _ctxd_walked_r=$_ctxd_r
  fi
  # a changed DIRENV_DIFF (direnv loaded, reloaded or unloaded) asks ctxd too:
  # a reload reverts PATH to direnv's snapshot, which may predate ctxd's entries
  if [[ ${_ctxd_init-} == 1 && $_ctxd_r == "${_ctxd_root-}" && ${CTXD_STATE-} == "${_ctxd_seen-}" \
        && ${DIRENV_DIFF-} == "${_ctxd_dseen-}" ]] \
    && ! _ctxd_watch_changed; then
    \builtin return $_ctxd_status
  fi
  # The environment changes from here on. Ctrl-C must not stop that halfway
  # (an eval cut short leaves half of it applied), so SIGINT gets a no-op trap
  # until it is done; emulate -L set local_traps, so the user's own INT trap
  # comes back when this function returns. A trapped signal is reset in child
  # processes: ctxd itself can still be interrupted, and _ctxd_run then
  # changes nothing.
  \builtin trap : INT
  if [[ -z $_ctxd_r && -n ${CTXD_STATE-} && ${_ctxd_fast_leave-} == 1 \
        && $CTXD_STATE == "${_ctxd_seen-}" && ${PATH-} == "${_ctxd_path-}" && -z ${DIRENV_DIFF-} ]] \
     && (( ${+functions[_ctxd_restore]} )); then
    # Leaving for no project, nothing touched since our export, no on_leave
    # hook, no direnv diff (only ctxd itself can take its entries out of
    # direnv's snapshot): the restore function undoes it exactly, without
    # starting ctxd.
    _ctxd_restore
    \builtin unfunction _ctxd_restore
    \builtin typeset -g _ctxd_fast_leave=0
  elif [[ -n $_ctxd_r && $_ctxd_r != "${_ctxd_root-}" ]] && _ctxd_revisit; then
    :  # back in a project entered before, nothing changed: applied without ctxd
  elif [[ -n $_ctxd_r || -n ${CTXD_STATE-} ]]; then
    _ctxd_run || _ctxd_done=
  fi
  if [[ -n $_ctxd_done ]]; then
    \builtin typeset -g _ctxd_init=1 _ctxd_root=$_ctxd_r _ctxd_seen=${CTXD_STATE-} _ctxd_path=${PATH-} \
      _ctxd_dseen=${DIRENV_DIFF-}
  fi
  \builtin return $_ctxd_status
}

# Install once (what add-zsh-hook does, without loading it: its body calls
# builtins unprefixed, so a user's function named like one would break it).
() {
  \builtin emulate -L zsh
  \builtin typeset -ga chpwd_functions precmd_functions
  (( ${chpwd_functions[(Ie)_ctxd_hook]} )) || chpwd_functions+=(_ctxd_hook)
  (( ${precmd_functions[(Ie)_ctxd_hook]} )) || precmd_functions+=(_ctxd_hook)
}
