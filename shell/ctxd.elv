# ctxd hook for elvish. Install with:  eval (ctxd hook elvish | slurp)
# (in ~/.config/elvish/rc.elv). Runs before each prompt (edit:before-readline);
# walks up from $pwd (to $E:HOME when $pwd is in it) looking for a project
# marker and starts ctxd only when the root, CTXD_STATE or a watched file
# changed since its last run. ctxd's output is evaluated with `eval &ns=` in a namespace
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
# The last run's root and CTXD_STATE and what CTXD_WATCH named then (kept in
# this shell only): while they hold, no process starts. elvish cannot read an
# mtime, so a "+" path is remembered by what it holds (a file's content, a
# directory's entries) and a "-" path must still not exist.
var _ctxd_init = $false
var _ctxd_root = ''
var _ctxd_seen = $nil
var _ctxd_sigs = [&]
var _ctxd_absent = []
var _ctxd_interrupted = $false

var _ctxd_ns = (ns [
  &ctxd-set-restore~={|f| set _ctxd_restore = $f }
  &ctxd-drop-restore~={ set _ctxd_restore = $nil }
  &ctxd-set-flag~={|name value| if (eq $name _ctxd_fast_leave) { set _ctxd_fast_leave = $value } }
])

# like the shells' `-e` (and Python's os.path.exists): symlinks followed
fn _ctxd_exists {|p|
  or (path:is-regular &follow-symlink $p) (path:is-dir &follow-symlink $p)
}

# the nearest directory at or above $pwd holding a marker, or ''. Inside
# $E:HOME (trailing slashes removed) the walk stops there: a marker above your
# home directory does not make a directory in it a project. (Stopping where
# the walk meets $E:HOME is the same as "$pwd is $E:HOME or below it".)
# elvish's $pwd is physical: under a symlinked $E:HOME the walk meets the
# directory it resolves to instead, and stops there (as ctxd does).
fn _ctxd_find_root {
  var h = ''
  var hr = ''
  if (has-env HOME) {
    set h = (str:trim-right (get-env HOME) /)
    if (not-eq $h '') {
      try { set hr = (path:eval-symlinks $h) } catch { }
    }
    if (or (eq $hr $h) (eq $hr /)) { set hr = '' }
  }
  var d = $pwd
  while $true {
    for m $_ctxd_markers {
      if (_ctxd_exists $d/$m) { put $d; return }
    }
    if (or (eq $d /) (eq $d '') (eq $d $h) (and (not-eq $hr '') (eq $d $hr))) { put ''; return }
    set d = (path:dir $d)
  }
}

# what a watched path holds now: "f" and a file's content, "d" and a
# directory's entries, '' when it is neither
fn _ctxd_sig {|p|
  try {
    if (path:is-regular &follow-symlink $p) {
      put 'f'(slurp < $p)
    } elif (path:is-dir &follow-symlink $p) {
      put 'd'(str:join "\n" [(put $p/*[match-hidden][nomatch-ok])])
    } else {
      put ''
    }
  } catch {
    put '?'  # unreadable: the same '?' until it is readable again
  }
}

# whether a path CTXD_WATCH named at the last run appeared, went or changed
fn _ctxd_watch_changed {
  for p $_ctxd_absent {
    if (_ctxd_exists $p) { put $true; return }
  }
  for p [(keys $_ctxd_sigs)] {
    var now = (_ctxd_sig $p)
    if (or (eq $now '') (not-eq $now $_ctxd_sigs[$p])) { put $true; return }
  }
  put $false
}

# Remember CTXD_WATCH's paths after a run. A path watched before the run too
# keeps what it held just before ctxd started ($pre): an edit made while ctxd
# ran is then seen at the next prompt.
fn _ctxd_remember {|pre|
  set _ctxd_sigs = [&]
  set _ctxd_absent = []
  if (not (has-env CTXD_WATCH)) { return }
  for l [(str:split "\n" (get-env CTXD_WATCH) | drop 1)] {  # (the first line is the stamp)
    if (str:has-prefix $l +) {
      var p = $l[1..]
      if (has-key $pre $p) { set _ctxd_sigs[$p] = $pre[$p] } else { set _ctxd_sigs[$p] = (_ctxd_sig $p) }
    } elif (str:has-prefix $l -) {
      set _ctxd_absent = [$@_ctxd_absent $l[1..]]
    }
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

fn _ctxd_state {
  if (has-env CTXD_STATE) { get-env CTXD_STATE } else { put $nil }
}

# one export for root $r; sets $_ctxd_interrupted when ctxd was killed (nothing changed then)
fn _ctxd_run {|r|
  if (and (eq $r '') (not (has-env CTXD_STATE))) { set _ctxd_failed = $nil; return }
  if (and (not-eq $_ctxd_failed $nil) (eq $_ctxd_failed $r) (not (has-env CTXD_STATE))) { return }
  set _ctxd_failed = $nil
  var need = (if (eq $_ctxd_restore $nil) { put 1 } else { put 0 })
  var out rc = (_ctxd_export $need)
  if (> $rc 128) {
    # killed by a signal: what it printed may be cut short, so none of it runs
    echo 'ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)' >&2
    set _ctxd_interrupted = $true
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

fn _ctxd_hook {
  var r = (_ctxd_find_root)
  if (and $_ctxd_init (eq $r $_ctxd_root) (eq (_ctxd_state) $_ctxd_seen) (not (_ctxd_watch_changed))) {
    return  # nothing can have changed: no process
  }
  set _ctxd_init = $false
  var pre = [&]
  for p [(keys $_ctxd_sigs)] { set pre[$p] = (_ctxd_sig $p) }
  set _ctxd_interrupted = $false
  _ctxd_run $r
  if (not $_ctxd_interrupted) {
    set _ctxd_root = $r
    set _ctxd_seen = (_ctxd_state)
    _ctxd_remember $pre
    set _ctxd_init = $true
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
