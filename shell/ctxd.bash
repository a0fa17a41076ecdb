# ctxd hook for bash. Install with:  eval "$(ctxd hook bash)"
# Safe to evaluate twice, works under `set -u`, keeps $? and the user's own
# PROMPT_COMMAND (string or array). bash has no chpwd: the prompt hook notices
# a changed $PWD. No process starts unless a project root, its watched files
# or the ctxd state changed.
#
# Runs on bash 3.2 (macOS /bin/bash) as well as 5.x: no bash-4 syntax here
# (tests/test_bash_compat.py scans for it). Builtins are called as \builtin and
# commands as \command, so a user's alias or function named like one (cd,
# printf, test, [ ...) cannot change what the hook does. Ctrl-C while the hook
# changes the environment waits until the change is complete (see _ctxd_hook).

_ctxd_markers=(@CTXD_MARKERS@)
_ctxd_cmd=(@CTXD_COMMAND@)
_ctxd_nl=$'\n'
# Where the hook keeps the user's INT trap while it changes the environment
# (see _ctxd_hook): this shell's file in ctxd's private stamp directory, which
# `ctxd export` creates (0700) and prunes of files a week old.
_ctxd_tf=@CTXD_STAMP_DIR@/int-trap.${HOSTNAME-}.$$
\builtin export _CTXD_HOOK=bash  # for `ctxd doctor` (a child process cannot see shell functions)

# Nearest directory at or above $PWD holding a marker -> _ctxd_r ("" if none).
# Under $HOME the walk stops at $HOME (a marker above your home directory does
# not make a directory in it a project; ctxd.activation.detectors.ceiling).
# Each level is one generated [[ -e d/m1 || -e d/m2 ... ]] naming every marker,
# twice as fast as a loop over them.
#
# Markerless verdicts: the last two directories whose walk found no marker,
# each with a test that holds while nothing changed: the stamp file written
# just before that walk is newer than every directory the walk looked in.
# Creating, removing or renaming a marker changes its directory's mtime, so
# the verdict falls; -nt is strict, so a change in the stamp's own clock tick
# (or second) counts as a change. A plain cd back into one of the two (and
# every prompt there) is then one test instead of a stat per directory and
# marker. Not caught: a marker that is a dangling symlink whose target appears
# (its directory does not change) counts once that verdict is dropped (two
# walks elsewhere). The stamps are this shell's files in ctxd's private stamp
# directory, written only where it exists; stale ones go with the weekly prune.
_ctxd_vf=@CTXD_STAMP_DIR@/bash-walk.${HOSTNAME-}.$$
_ctxd_v1='' _ctxd_v1_t='' _ctxd_v1_f='' _ctxd_v2='' _ctxd_v2_t='' _ctxd_v2_f=''
_ctxd_vspare=$_ctxd_vf.1 _ctxd_vn=1

_ctxd_find_root() {
  _ctxd_r=
  if [[ $PWD$_ctxd_nl${HOME-} == "$_ctxd_v1" ]] && \builtin eval "$_ctxd_v1_t"; then \builtin return 0; fi
  if [[ $PWD$_ctxd_nl${HOME-} == "$_ctxd_v2" ]] && \builtin eval "$_ctxd_v2_t"; then \builtin return 0; fi
  \builtin local _ctxd_d="$PWD" _ctxd_more=1 _ctxd_top="${HOME-}" _ctxd_k="$PWD$_ctxd_nl${HOME-}"
  \builtin local _ctxd_f='' _ctxd_fr='' _ctxd_t='' _ctxd_q
  # the stamp goes first, so that a marker created during the walk is not
  # older than it; only where the hook's last run was in no project (inside
  # one every prompt walks, and finds its root)
  if [[ -z ${_ctxd_root-} && -n $_ctxd_vspare ]] && { \builtin : >|"$_ctxd_vspare"; } 2>/dev/null; then
    _ctxd_fr=$_ctxd_vspare
    \builtin printf -v _ctxd_f '%q' "$_ctxd_fr"
  fi
  while [[ $_ctxd_top == */ ]]; do _ctxd_top=${_ctxd_top%/}; done
  [[ -n $_ctxd_top && ( $_ctxd_d == "$_ctxd_top" || $_ctxd_d == "$_ctxd_top"/* ) ]] || _ctxd_top=
  while [[ -n $_ctxd_more ]]; do
    # "" stands for / once the last component is gone
    [[ -z $_ctxd_d || $_ctxd_d == / || $_ctxd_d == "$_ctxd_top" ]] && _ctxd_more=
    if [[ @CTXD_MARKER_TEST@ ]]; then
      _ctxd_r=${_ctxd_d:-/}
      \builtin return 0
    fi
    if [[ -n $_ctxd_f ]]; then
      \builtin printf -v _ctxd_q '%q' "${_ctxd_d:-/}"
      _ctxd_t="$_ctxd_t && $_ctxd_f -nt $_ctxd_q"
    fi
    _ctxd_d=${_ctxd_d%/*}
  done
  [[ -n $_ctxd_f ]] || \builtin return 0
  # no marker: this walk's verdict becomes the first of the two, the first
  # the second; the stamp of the one dropped is the next walk's
  if [[ $_ctxd_k == "$_ctxd_v1" ]]; then
    _ctxd_vspare=$_ctxd_v1_f  # the same directory again (its verdict had fallen)
  else
    if [[ -n $_ctxd_v2_f ]]; then
      _ctxd_vspare=$_ctxd_v2_f
    else
      _ctxd_vn=$((_ctxd_vn + 1))
      _ctxd_vspare=$_ctxd_vf.$_ctxd_vn
    fi
    _ctxd_v2=$_ctxd_v1 _ctxd_v2_t=$_ctxd_v1_t _ctxd_v2_f=$_ctxd_v1_f
  fi
  _ctxd_v1=$_ctxd_k _ctxd_v1_t="[[ ${_ctxd_t# && } ]]" _ctxd_v1_f=$_ctxd_fr
  \builtin return 0
}

# Status 0 when a watched file changed since the last export (or since the
# one whose CTXD_WATCH is $1).
_ctxd_watch_changed() {
  \builtin local _ctxd_rest="${1-${CTXD_WATCH-}}" _ctxd_line _ctxd_stamp=
  [[ -n $_ctxd_rest ]] || \builtin return 1
  _ctxd_stamp=${_ctxd_rest%%"$_ctxd_nl"*}
  if [[ $_ctxd_rest == *"$_ctxd_nl"* ]]; then _ctxd_rest=${_ctxd_rest#*"$_ctxd_nl"}; else _ctxd_rest=; fi
  while [[ -n $_ctxd_rest ]]; do
    _ctxd_line=${_ctxd_rest%%"$_ctxd_nl"*}
    if [[ $_ctxd_rest == *"$_ctxd_nl"* ]]; then _ctxd_rest=${_ctxd_rest#*"$_ctxd_nl"}; else _ctxd_rest=; fi
    case $_ctxd_line in
      +*) [[ -e ${_ctxd_line:1} ]] || \builtin return 0
          [[ -n $_ctxd_stamp && ${_ctxd_line:1} -nt $_ctxd_stamp ]] && \builtin return 0 ;;
      -*) [[ -e ${_ctxd_line:1} ]] && \builtin return 0 ;;
    esac
  done
  \builtin return 1
}

# Status 1 when ctxd was interrupted: nothing was changed then.
_ctxd_run() {
  \builtin local _ctxd_out _ctxd_rc _ctxd_need=1
  # a new shell inherits CTXD_STATE but not the restore function: ask for it
  \builtin declare -F _ctxd_restore >/dev/null && _ctxd_need=0
  _ctxd_out=$(CTXD_NEED_RESTORE=$_ctxd_need \command "${_ctxd_cmd[@]}" export bash 2>/dev/null)
  _ctxd_rc=$?
  if (( _ctxd_rc > 128 )); then
    # killed by a signal (Ctrl-C): what it printed may be cut short, so none
    # of it runs and the environment stays exactly as it was
    \builtin printf 'ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)\n' >&2
    \builtin return 1
  fi
  if [[ -n $_ctxd_out ]]; then
    \builtin eval "$_ctxd_out"
  fi
  if [[ -n ${_ctxd_revisit_ok-} ]]; then  # ctxd says this code may be replayed
    (( _ctxd_rc != 0 )) || _ctxd_revisit_put "${_ctxd_r-}" "$_ctxd_revisit_ok" "$_ctxd_out"
    _ctxd_revisit_ok=
  fi
  if (( _ctxd_rc != 0 )); then
    # ctxd is gone, crashed or found its state corrupt: undo the last
    # activation without it, so the shell is clean whatever happened.
    if \builtin declare -F _ctxd_restore >/dev/null; then _ctxd_restore; fi
    \builtin unset -f _ctxd_restore
    \builtin unset CTXD_STATE CTXD_WATCH
    if (( _ctxd_rc == 6 )); then
      _ctxd_out=$(\command "${_ctxd_cmd[@]}" export bash 2>/dev/null) && \builtin eval "$_ctxd_out"
    elif [[ -z $_ctxd_out ]]; then
      \builtin printf 'ctxd: the hook could not run ctxd (exit %s); project environment unloaded. Try: ctxd doctor\n' "$_ctxd_rc" >&2
    fi
  fi
  \builtin return 0
}

# The revisit cache (see ctxd/activation/revisit.py): per project root, the
# code ctxd printed on entering it, a test that the environment is the one it
# was printed for, and its CTXD_WATCH. Plain shell arrays (never exported: a
# new shell starts empty), at most 16 roots.
_ctxd_rv_root=() _ctxd_rv_test=() _ctxd_rv_code=() _ctxd_rv_watch=()

_ctxd_revisit_put() {
  \builtin local _ctxd_i=0 _ctxd_n=${#_ctxd_rv_root[@]}
  [[ -n $1 ]] || \builtin return 0
  while (( _ctxd_i < _ctxd_n )) && [[ ${_ctxd_rv_root[_ctxd_i]} != "$1" ]]; do
    _ctxd_i=$((_ctxd_i + 1))
  done
  if (( _ctxd_i >= 16 )); then
    _ctxd_rv_root=() _ctxd_rv_test=() _ctxd_rv_code=() _ctxd_rv_watch=()
    _ctxd_i=0
  fi
  _ctxd_rv_root[_ctxd_i]=$1
  _ctxd_rv_test[_ctxd_i]=$2
  _ctxd_rv_code[_ctxd_i]=$3
  _ctxd_rv_watch[_ctxd_i]=${CTXD_WATCH-}
}

# Status 0 when the project at $_ctxd_r was entered again without ctxd: its
# entry's test holds and no file it watches changed, so its code is what
# ctxd would print now.
_ctxd_revisit() {
  \builtin local _ctxd_i=0
  while (( _ctxd_i < ${#_ctxd_rv_root[@]} )); do
    if [[ ${_ctxd_rv_root[_ctxd_i]} == "$_ctxd_r" ]]; then
      \builtin eval "${_ctxd_rv_test[_ctxd_i]}" || \builtin return 1
      _ctxd_watch_changed "${_ctxd_rv_watch[_ctxd_i]}" && \builtin return 1
      \builtin eval "${_ctxd_rv_code[_ctxd_i]}"
      _ctxd_revisit_ok=
      \builtin return 0
    fi
    _ctxd_i=$((_ctxd_i + 1))
  done
  \builtin return 1
}

_ctxd_hook() {
  \builtin local _ctxd_status=$? _ctxd_r _ctxd_trap _ctxd_done=1
  # bash-preexec runs precmd_functions (starship, bash-it themes) from the front
  # of PROMPT_COMMAND: ctxd goes first among them, whenever it was loaded
  if [[ -n ${bash_preexec_imported-}${__bp_imported-} && ${precmd_functions[0]-} != _ctxd_hook ]]; then
    _ctxd_adopt_precmd
  fi
  _ctxd_find_root
  # a changed DIRENV_DIFF (direnv loaded, reloaded or unloaded) asks ctxd too:
  # a reload reverts PATH to direnv's snapshot, which may predate ctxd's entries
  if [[ ${_ctxd_init-} == 1 && $_ctxd_r == "${_ctxd_root-}" && ${CTXD_STATE-} == "${_ctxd_seen-}" \
        && ${DIRENV_DIFF-} == "${_ctxd_dseen-}" ]] \
    && { [[ -z ${CTXD_WATCH-} ]] || ! _ctxd_watch_changed; }; then
    \builtin return $_ctxd_status
  fi
  # The environment changes from here on. Ctrl-C must not stop that halfway
  # (an eval cut short leaves half of it applied), so SIGINT gets a no-op trap
  # until it is done, then the user's own INT trap (if any) comes back. A
  # trapped signal is reset in child processes: ctxd itself can still be
  # interrupted, and _ctxd_run then changes nothing. `trap -p` reaches a
  # variable only through a subshell, a fork that would cost every project
  # enter and leave about a millisecond: it goes to this shell's file instead,
  # and through the subshell only where that file cannot be written.
  if { \builtin trap -p INT >|"$_ctxd_tf"; } 2>/dev/null; then
    _ctxd_trap=f
  else
    _ctxd_trap=v$(\builtin trap -p INT)
  fi
  \builtin trap : INT
  if [[ -z $_ctxd_r && -n ${CTXD_STATE-} && ${_ctxd_fast_leave-} == 1 \
        && $CTXD_STATE == "${_ctxd_seen-}" && ${PATH-} == "${_ctxd_path-}" && -z ${DIRENV_DIFF-} ]] \
     && \builtin declare -F _ctxd_restore >/dev/null; then
    # Leaving for no project, nothing touched since our export, no on_leave
    # hook, no direnv diff (only ctxd itself can take its entries out of
    # direnv's snapshot): the restore function undoes it exactly, without
    # starting ctxd.
    _ctxd_restore
    \builtin unset -f _ctxd_restore
    _ctxd_fast_leave=0
  elif [[ -n $_ctxd_r && $_ctxd_r != "${_ctxd_root-}" ]] && _ctxd_revisit; then
    :  # back in a project entered before, nothing changed: applied without ctxd
  elif [[ -n $_ctxd_r || -n ${CTXD_STATE-} ]]; then
    _ctxd_run || _ctxd_done=
  fi
  if [[ -n $_ctxd_done ]]; then
    _ctxd_init=1
    _ctxd_root=$_ctxd_r
    _ctxd_seen=${CTXD_STATE-}
    _ctxd_path=${PATH-}
    _ctxd_dseen=${DIRENV_DIFF-}
  fi
  if [[ $_ctxd_trap == f && -s $_ctxd_tf ]]; then
    \builtin source "$_ctxd_tf"
  elif [[ $_ctxd_trap == v?* ]]; then
    \builtin eval "${_ctxd_trap#v}"
  else
    \builtin trap - INT
  fi
  \builtin return $_ctxd_status
}

# "a" in _ctxd_pc when PROMPT_COMMAND is an array. `declare -p` tells an
# array from a string on every bash (${x@a} needs 4.4).
_ctxd_pc_kind() {
  _ctxd_pc=$(\builtin declare -p PROMPT_COMMAND 2>/dev/null) || _ctxd_pc=
  _ctxd_pc=${_ctxd_pc#declare -}
  _ctxd_pc=${_ctxd_pc%% *}
}

# $1 without _ctxd_hook as a whole command (between ";" and newlines, as
# ctxd and bash-preexec join entries) -> _ctxd_t.
_ctxd_pc_strip() {
  \builtin local _ctxd_s="$_ctxd_nl$1$_ctxd_nl" _ctxd_o=
  while [[ $_ctxd_s != "$_ctxd_o" ]]; do
    _ctxd_o=$_ctxd_s
    _ctxd_s=${_ctxd_s//"${_ctxd_nl}_ctxd_hook${_ctxd_nl}"/$_ctxd_nl}
    _ctxd_s=${_ctxd_s//"${_ctxd_nl}_ctxd_hook;"/$_ctxd_nl}
    _ctxd_s=${_ctxd_s//";_ctxd_hook${_ctxd_nl}"/$_ctxd_nl}
    _ctxd_s=${_ctxd_s//";_ctxd_hook;"/;}
  done
  _ctxd_s=${_ctxd_s#"$_ctxd_nl"}
  _ctxd_t=${_ctxd_s%"$_ctxd_nl"}
}

# bash-preexec (bundled by atuin, used by bash-it and many starship setups)
# keeps its __bp_precmd_invoke_cmd first in PROMPT_COMMAND and runs the
# precmd_functions from there, before anything else in PROMPT_COMMAND. With
# it, ctxd's hook is the first precmd function and leaves PROMPT_COMMAND: a
# prompt drawn by a later precmd function (starship, a bash-it theme) shows
# the environment of the directory it is drawn in, not the previous one.
_ctxd_adopt_precmd() {
  \builtin local _ctxd_f _ctxd_t _ctxd_pc
  \builtin local -a _ctxd_l
  _ctxd_l=(_ctxd_hook)
  for _ctxd_f in ${precmd_functions[@]+"${precmd_functions[@]}"}; do
    [[ $_ctxd_f == _ctxd_hook ]] || _ctxd_l[${#_ctxd_l[@]}]=$_ctxd_f
  done
  precmd_functions=("${_ctxd_l[@]}")
  _ctxd_pc_kind
  # shellcheck disable=SC2128,SC2178
  if [[ $_ctxd_pc == *a* ]]; then
    _ctxd_l=()
    for _ctxd_f in ${PROMPT_COMMAND[@]+"${PROMPT_COMMAND[@]}"}; do
      _ctxd_pc_strip "$_ctxd_f"
      [[ -n $_ctxd_t ]] && _ctxd_l[${#_ctxd_l[@]}]=$_ctxd_t
    done
    PROMPT_COMMAND=(${_ctxd_l[@]+"${_ctxd_l[@]}"})
  elif [[ -n ${PROMPT_COMMAND-} ]]; then
    _ctxd_pc_strip "$PROMPT_COMMAND"
    PROMPT_COMMAND=$_ctxd_t
  fi
}

# Install once, first in line; keep whatever else is there. An element may
# hold several commands joined with ";" (something appended to PROMPT_COMMAND
# with += after an earlier install) or with newlines (bash-preexec's form):
# either counts as installed. ${a[@]+"${a[@]}"} expands an empty array under
# set -u before bash 4.4. bash-preexec loaded after this line is noticed by
# _ctxd_hook at the first prompt.
_ctxd_pc_kind
# PROMPT_COMMAND is deliberately handled both as an array and as a string:
# shellcheck disable=SC2128,SC2178
if [[ -n ${bash_preexec_imported-}${__bp_imported-} ]]; then
  _ctxd_adopt_precmd
elif [[ $_ctxd_pc == *a* ]]; then
  _ctxd_found=
  for _ctxd_pc in ${PROMPT_COMMAND[@]+"${PROMPT_COMMAND[@]}"}; do
    _ctxd_pc=${_ctxd_pc//"$_ctxd_nl"/;}
    [[ ";$_ctxd_pc;" == *";_ctxd_hook;"* ]] && _ctxd_found=1
  done
  [[ -n $_ctxd_found ]] || PROMPT_COMMAND=(_ctxd_hook ${PROMPT_COMMAND[@]+"${PROMPT_COMMAND[@]}"})
  \builtin unset _ctxd_found
else
  _ctxd_pc=${PROMPT_COMMAND-}
  _ctxd_pc=${_ctxd_pc//"$_ctxd_nl"/;}
  [[ ";$_ctxd_pc;" == *";_ctxd_hook;"* ]] || PROMPT_COMMAND="_ctxd_hook${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
\builtin unset _ctxd_pc
