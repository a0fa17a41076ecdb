# ctxd hook for tcsh. Install with:  eval "`ctxd hook tcsh`"   (in ~/.tcshrc)
#
# `ctxd hook tcsh` prints one line that sets $_ctxd_cmd, $_ctxd_markers and
# $_ctxd_file (this file) and sources this file with "install". The prompt
# hook (alias precmd) sources it with "run": it walks up from $cwd (to $HOME
# when $cwd is in it) looking for a project marker, and starts ctxd only when
# the root, CTXD_STATE or a watched file changed since its last run. ctxd's output is written to a private file and sourced (a
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

# $HOME without trailing slashes: a walk from inside it stops there (a marker
# above your home directory does not make a directory in it a project).
# Stopping where the walk meets $HOME is the same as "$cwd is $HOME or below
# it": the walk meets exactly the directories $cwd is in.
set _ctxd_h = ""
if ( $?HOME ) then
  set _ctxd_h = $HOME:q
  while ( x$_ctxd_h:q =~ x*/ )
    set _ctxd_h = $_ctxd_h:h:q
  end
endif

# the nearest directory at or above $cwd holding a marker
set _ctxd_r = ""
set _ctxd_d = "$cwd"
while ( "$_ctxd_r" == "" )
  foreach _ctxd_m ( $_ctxd_markers:q )
    if ( "$_ctxd_r" == "" && -e "$_ctxd_d/$_ctxd_m" ) set _ctxd_r = "$_ctxd_d/"
  end
  if ( "$_ctxd_d" == "" || "$_ctxd_d" == "/" || x$_ctxd_d:q == x$_ctxd_h:q ) break
  set _ctxd_d = "$_ctxd_d:h"
end

# Nothing can have changed since the last run (same root, same CTXD_STATE, no
# watched file changed): no process. tcsh reads mtimes in whole seconds, so a
# watched file counts as changed when it is newer than the stamp (the newest
# mtime ctxd saw) or from the second ctxd's last run started in or later:
# an edit is never missed, and one made in the same second as that run asks
# ctxd again at the prompts of that second.
set _ctxd_go = 1
if ( $?_ctxd_root ) then
  if ( x$_ctxd_r:q == x$_ctxd_root:q && $?CTXD_STATE == $?_ctxd_seen ) then
    set _ctxd_go = 0
    if ( $?CTXD_STATE ) then
      if ( x$CTXD_STATE:q != x$_ctxd_seen:q ) set _ctxd_go = 1
    endif
    if ( $_ctxd_go == 0 ) then
      foreach _ctxd_p ( $_ctxd_wm:q )
        if ( -e $_ctxd_p:q ) set _ctxd_go = 1
      end
      foreach _ctxd_p ( $_ctxd_wp:q )
        @ _ctxd_mt = -M $_ctxd_p:q
        if ( $_ctxd_mt < 0 || $_ctxd_mt > $_ctxd_ws || $_ctxd_mt >= $_ctxd_t0 ) set _ctxd_go = 1
      end
    endif
  endif
endif

if ( $_ctxd_go == 1 ) then
  unset _ctxd_root  # (an interrupted run leaves it unset: the next prompt tries again)
  set _ctxd_done = 1
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
    # the second this run starts in (see above)
    \echo >! "$_ctxd_dir/t0"
    ( env CTXD_NEED_RESTORE=$_ctxd_need $_ctxd_cmd:q export tcsh >! "$_ctxd_dir/out" ) >& /dev/null
    set _ctxd_rc = $status
    if ( $_ctxd_rc > 128 ) then
      # killed by a signal: what it wrote may be cut short, so none of it runs
      set _ctxd_done = 0
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
  if ( $_ctxd_done == 1 ) then
    # what the next prompt compares with: this root and state, and CTXD_WATCH's
    # paths ("+" must exist and be no newer, "-" must not exist) split at its
    # newlines (the one fork here, and only after a run)
    set _ctxd_root = $_ctxd_r:q
    if ( $?CTXD_STATE ) then
      set _ctxd_seen = $CTXD_STATE:q
    else
      unset _ctxd_seen
    endif
    @ _ctxd_t0 = -M "$_ctxd_dir/t0"
    @ _ctxd_ws = $_ctxd_t0 - 1
    set _ctxd_wp = ( )
    set _ctxd_wm = ( )
    if ( $?CTXD_WATCH ) then
      set _ctxd_l = ( "`\printenv CTXD_WATCH`" )
      foreach _ctxd_e ( $_ctxd_l:q )
        if ( x$_ctxd_e:q =~ x+* ) then
          set _ctxd_wp = ( $_ctxd_wp:q $_ctxd_e:s/+//:q )
        else if ( x$_ctxd_e:q =~ x-* ) then
          set _ctxd_wm = ( $_ctxd_wm:q $_ctxd_e:s/-//:q )
        else
          @ _ctxd_ws = -M $_ctxd_e:q  # the stamp
          if ( $_ctxd_ws < 0 ) @ _ctxd_ws = $_ctxd_t0 - 1
        endif
      end
      unset _ctxd_l _ctxd_e
    endif
  endif
  unset _ctxd_done
endif
unset _ctxd_r _ctxd_d _ctxd_m _ctxd_mt _ctxd_go _ctxd_h _ctxd_p
set status = $_ctxd_status
endif
