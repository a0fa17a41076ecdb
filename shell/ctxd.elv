# ctxd hook for elvish. Install with:  eval (ctxd hook elvish | slurp)
# (in ~/.config/elvish/rc.elv). Runs before each prompt (edit:before-readline);
# starts ctxd only inside a project (a marker at or above $pwd) or when
# leaving one. ctxd's output is evaluated with `eval &ns=` in a namespace
# holding only this hook's three helpers, so it cannot touch the user's
# variables; the restore closure lives here. Installing twice replaces the
# first hook (edit:before-readline keeps one ctxd entry).

use str
use path

var _ctxd_cmd = [@CTXD_COMMAND@]
var _ctxd_markers = [@CTXD_MARKERS@]
set-env _CTXD_HOOK elvish  # for `ctxd doctor` (a child process cannot see shell functions)

var _ctxd_restore = $nil
var _ctxd_fast_leave = '0'
var _ctxd_failed = $nil  # the root a failed run was for: wait for another before retrying

var _ctxd_ns = (ns [
  &ctxd-set-restore~={|f| set _ctxd_restore = $f }
  &ctxd-drop-restore~={ set _ctxd_restore = $nil }
  &ctxd-set-flag~={|name value| if (eq $name _ctxd_fast_leave) { set _ctxd_fast_leave = $value } }
])

# the nearest directory at or above $pwd holding a marker, or ''
fn _ctxd_find_root {
  var d = $pwd
  while $true {
    for m $_ctxd_markers {
      if (or (path:is-regular $d/$m) (path:is-dir $d/$m)) { put $d; return }
    }
    if (or (eq $d /) (eq $d '')) { put ''; return }
    set d = (path:dir $d)
  }
}

fn _ctxd_restore_now {
  if (not-eq $_ctxd_restore $nil) {
    var f = $_ctxd_restore
    set _ctxd_restore = $nil
    try { $f } catch e { }
  }
}

# ctxd's output, or $nil when it was killed by a signal; status in $rc
fn _ctxd_export {|need|
  var out = ''
  var rc = 0
  tmp E:CTXD_NEED_RESTORE = $need
  try {
    (external $_ctxd_cmd[0]) (all $_ctxd_cmd[1..]) export elvish 2>/dev/null | { set out = (slurp) }
  } catch e {
    try { set rc = $e[reason][exit-status] } catch { set rc = 1 }
    try { if (has-key $e[reason] signal-name) { set rc = 130 } } catch { }
  }
  unset-env CTXD_NEED_RESTORE
  put $out $rc
}

fn _ctxd_apply {|code|
  if (not-eq $code '') { eval &ns=$_ctxd_ns $code }
}

fn _ctxd_hook {
  var r = (_ctxd_find_root)
  if (and (eq $r '') (not (has-env CTXD_STATE))) { set _ctxd_failed = $nil; return }
  if (and (not-eq $_ctxd_failed $nil) (eq $_ctxd_failed $r) (not (has-env CTXD_STATE))) { return }
  set _ctxd_failed = $nil
  var need = (if (eq $_ctxd_restore $nil) { put 1 } else { put 0 })
  var out rc = (_ctxd_export $need)
  if (> $rc 128) {
    # killed by a signal: what it printed may be cut short, so none of it runs
    echo 'ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)' >&2
    return
  }
  try { _ctxd_apply $out } catch e { set rc = 1 }
  if (!= $rc 0) {
    # ctxd is gone, crashed or found its state corrupt: undo the last
    # activation without it, so the shell is clean whatever happened
    _ctxd_restore_now
    unset-env CTXD_STATE
    unset-env CTXD_WATCH
    if (== $rc 6) {
      var out2 rc2 = (_ctxd_export 1)
      if (== $rc2 0) { _ctxd_apply $out2 }
    } elif (eq $out '') {
      echo 'ctxd: the hook could not run ctxd (exit '$rc'); project environment unloaded. Try: ctxd doctor' >&2
      set _ctxd_failed = $r
    } else {
      set _ctxd_failed = $r
    }
  }
}

fn _ctxd_drop_state {
  _ctxd_restore_now
  unset-env CTXD_STATE
  unset-env CTXD_WATCH
}

# One ctxd entry in edit:before-readline: a second install replaces the
# first. The entry is kept in the REPL namespace (edit:add-var), where the
# next install's eval finds it.
var _ctxd_prev = $nil
eval &on-end={|n| if (has-key $n _ctxd_entry~) { set _ctxd_prev = $n[_ctxd_entry~] } } ''
var _ctxd_entry~ = {|| _ctxd_hook }
set edit:before-readline = [(each {|f| if (not-eq $f $_ctxd_prev) { put $f } } $edit:before-readline) $_ctxd_entry~]
edit:add-var _ctxd_entry~ $_ctxd_entry~
edit:add-var ctxd-drop-state~ $_ctxd_drop_state~
