# ctxd hook for tcsh. Install with:  eval "`ctxd hook tcsh`"   (in ~/.tcshrc)
#
# `ctxd hook tcsh` prints one line that sets $_ctxd_cmd, $_ctxd_markers and
# $_ctxd_file (this file) and sources this file with "install". The prompt
# hook (alias precmd) sources it with "run": it walks up from $cwd looking
# for a project marker, and starts ctxd only inside a project or when
# leaving one. ctxd's output is written to a private file and sourced (a
# backquote substitution would turn its newlines into blanks). Keeps $status
# and a precmd alias the user had; safe to install twice.
#
# tcsh has no functions: the restore code lives in the shell variable
# $_ctxd_restore, and "restore" sources it the same way.

if ( "$1" == "install" ) then
  setenv _CTXD_HOOK tcsh
  if ( ! $?_ctxd_dir ) then
    set _ctxd_dir = "`mktemp -d -t ctxd-tcsh.XXXXXXXX`"
  endif
  # the prompt hook sources a private copy: it keeps working (and undoing an
  # activation) when ctxd is uninstalled or upgraded under a running shell
  if ( "$_ctxd_file" != "$_ctxd_dir/hook.tcsh" ) then
    \cp -f "$_ctxd_file" "$_ctxd_dir/hook.tcsh"
    set _ctxd_file = "$_ctxd_dir/hook.tcsh"
  endif
  set _ctxd_prev = "`alias precmd`"
  if ( "$_ctxd_prev" !~ *_ctxd_file* ) then
    if ( "$_ctxd_prev" == "" ) then
      alias precmd 'source $_ctxd_file:q run'
    else
      alias precmd 'source $_ctxd_file:q run;' "$_ctxd_prev"
    endif
  endif
  unset _ctxd_prev
else if ( "$1" == "restore" ) then
  if ( $?_ctxd_restore ) then
    \printf '%s\n' $_ctxd_restore:q >! "$_ctxd_dir/restore"
    unset _ctxd_restore
    source "$_ctxd_dir/restore"
  endif
else
# "run": the prompt hook (tcsh's `exit` would end the shell here: no early exits)
set _ctxd_status = $status

# the nearest directory at or above $cwd holding a marker
set _ctxd_r = ""
set _ctxd_d = "$cwd"
while ( "$_ctxd_r" == "" )
  foreach _ctxd_m ( $_ctxd_markers:q )
    if ( "$_ctxd_r" == "" && -e "$_ctxd_d/$_ctxd_m" ) set _ctxd_r = "$_ctxd_d/"
  end
  if ( "$_ctxd_d" == "" || "$_ctxd_d" == "/" ) break
  set _ctxd_d = "$_ctxd_d:h"
end

# after a failed run, wait quietly for another root (or a state) before trying again
set _ctxd_go = 0
if ( "$_ctxd_r" != "" || $?CTXD_STATE ) set _ctxd_go = 1
if ( $?_ctxd_failed ) then
  if ( "$_ctxd_failed" == "$_ctxd_r" && ! $?CTXD_STATE ) then
    set _ctxd_go = 0
  else
    unset _ctxd_failed
  endif
endif
if ( $_ctxd_go == 1 ) then
  if ( $?_ctxd_restore ) then
    set _ctxd_need = 0
  else
    set _ctxd_need = 1  # a new shell inherited CTXD_STATE but not the restore code
  endif
  ( env CTXD_NEED_RESTORE=$_ctxd_need $_ctxd_cmd:q export tcsh >! "$_ctxd_dir/out" ) >& /dev/null
  set _ctxd_rc = $status
  if ( $_ctxd_rc > 128 ) then
    # killed by a signal: what it wrote may be cut short, so none of it runs
    \printf '%s\n' 'ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)' >& /dev/stderr
  else
    if ( ! -z "$_ctxd_dir/out" ) source "$_ctxd_dir/out"
    if ( $_ctxd_rc != 0 ) then
      # ctxd is gone, crashed or found its state corrupt: undo the last
      # activation without it, so the shell is clean whatever happened
      set _ctxd_empty = 1
      if ( ! -z "$_ctxd_dir/out" ) set _ctxd_empty = 0
      source $_ctxd_file:q restore
      set _ctxd_failed = "$_ctxd_r"
      unsetenv CTXD_STATE
      unsetenv CTXD_WATCH
      if ( $_ctxd_rc == 6 ) then
        ( $_ctxd_cmd:q export tcsh >! "$_ctxd_dir/out" ) >& /dev/null
        if ( $status == 0 ) source "$_ctxd_dir/out"
      else if ( $_ctxd_empty == 1 ) then
        \printf 'ctxd: the hook could not run ctxd (exit %s); project environment unloaded. Try: ctxd doctor\n' "$_ctxd_rc" >& /dev/stderr
      endif
      unset _ctxd_empty
    endif
  endif
  unset _ctxd_need _ctxd_rc
endif
unset _ctxd_r _ctxd_d _ctxd_m _ctxd_go
set status = $_ctxd_status
endif
