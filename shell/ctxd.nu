# ctxd hook for nushell. Install with (nu reads its autoload dir at start):
#   ctxd hook nu | save -f ($nu.user-autoload-dirs | first | path join ctxd.nu)
# or `source` the saved file from config.nu. Runs before each prompt
# (hooks.pre_prompt); walks up from $env.PWD (to $env.HOME when it is in it)
# looking for a project marker and starts ctxd only when the root, CTXD_STATE
# or a watched file changed since its last run. nu cannot evaluate a string:
# `ctxd export nu` prints JSON operations (see ctxd/shells/nu.py) that this
# hook applies; PATH is a list here. The hook's own state (the restore operations, a failed root)
# lives in $env._CTXD_NU, a record: nu passes only strings to child processes.
# Installing twice leaves one hook.

const _CTXD_CMD = [@CTXD_COMMAND@]
const _CTXD_MARKERS = [@CTXD_MARKERS@]
$env._CTXD_HOOK = 'nu'  # for `ctxd doctor` (a child process cannot see shell functions)
# restore: the undo operations; failed: the root a failed run was for; root and
# seen: the last run's root and CTXD_STATE (no process while they hold and no
# watched file changed)
$env._CTXD_NU = ($env._CTXD_NU? | default {restore: null, failed: null, flags: {}, root: null, seen: null})

# the nearest directory at or above $env.PWD holding a marker, or ''. Inside
# $env.HOME (trailing slashes removed) the walk stops there: a marker above
# your home directory does not make a directory in it a project. (Stopping
# where the walk meets $env.HOME is the same as "$env.PWD is $env.HOME or below it".)
def _ctxd_find_root [] {
  let home = ($env.HOME? | default '' | into string | str trim --right --char '/')
  mut d = $env.PWD
  loop {
    for m in $_CTXD_MARKERS {
      if ($d | path join $m | path exists) { return $d }
    }
    let p = ($d | path dirname)
    if $p == $d or $d == $home { return '' }
    $d = $p
  }
}

# the text a child process would see for NAME, or null when it is unset
# (no `return`: the restore operations run inside `try`, which a return may not cross)
def _ctxd_get [name: string] {
  if not ($name in $env) {
    null
  } else {
    let v = ($env | get $name)
    if ($v | describe | str starts-with 'list') { $v | str join (char esep) } else { $v }
  }
}

def _ctxd_mtime [p: string] { ls -D $p | get 0.modified | into int }

# whether a file CTXD_WATCH names appeared, went or is newer than its stamp
def _ctxd_watch_changed [] {
  let lines = ($env.CTXD_WATCH? | default '' | split row "\n")
  let stamp = ($lines | first)
  let stamp_ns = if $stamp != '' and ($stamp | path exists) { _ctxd_mtime $stamp } else { null }
  $lines | skip 1 | any {|l|
    let kind = ($l | str substring 0..<1)
    let p = ($l | str substring 1..)
    if $kind == '+' {
      if not ($p | path exists) { true } else { $stamp != '' and ($stamp_ns == null or (_ctxd_mtime $p) > $stamp_ns) }
    } else if $kind == '-' {
      $p | path exists
    } else {
      false
    }
  }
}

# One loop, no recursion: nu drops the environment changes of all but the first
# of several recursive `def --env` calls made from one loop (nu 0.115).
def --env _ctxd_ops [ops: list] {
  for op in $ops {
    let todo = if $op.0 == 'if' { if (_ctxd_get $op.1) == $op.2 { $op.3 } else { [] } } else { [$op] }
    for o in $todo {
      match $o.0 {
        'set' => { load-env {($o.1): $o.2} }
        'unset' => { hide-env -i $o.1 }
        'path' => { $env.PATH = $o.1 }
        'warn' => { print -e $o.1 }
        'restore' => { $env._CTXD_NU = ($env._CTXD_NU | upsert restore $o.1) }
        'drop_restore' => { $env._CTXD_NU = ($env._CTXD_NU | upsert restore null) }
        'flag' => { $env._CTXD_NU = ($env._CTXD_NU | upsert flags ($env._CTXD_NU.flags | upsert $o.1 $o.2)) }
      }
    }
  }
}

def --env _ctxd_restore_now [] {
  let ops = $env._CTXD_NU.restore
  $env._CTXD_NU = ($env._CTXD_NU | upsert restore null)
  if $ops != null { try { _ctxd_ops $ops } }
}

# {out, rc} of `ctxd export nu`
def _ctxd_export [need: string] {
  try {
    let r = (with-env {CTXD_NEED_RESTORE: $need} { ^($_CTXD_CMD | first) ...($_CTXD_CMD | skip 1) export nu | complete })
    let rc = if $r.exit_code < 0 { 128 - $r.exit_code } else { $r.exit_code }  # killed by a signal
    {out: $r.stdout, rc: $rc}
  } catch {
    {out: '', rc: 127}
  }
}

# (no `return` here: it runs inside `try`, which nu does not let a return cross)
def --env _ctxd_apply [text: string] {
  if ($text | str trim) != '' {
    let doc = ($text | from json)
    if ($doc.ctxd? != 1) { error make {msg: 'ctxd: this hook does not know the export format; run `ctxd hook nu` again'} }
    _ctxd_ops $doc.ops
  }
}

def --env _ctxd_hook [] {
  let r = (_ctxd_find_root)
  let seen = ($env.CTXD_STATE? | default null)
  let c = $env._CTXD_NU
  if not ($c.root == $r and $c.seen == $seen and $c.root != null and not (_ctxd_watch_changed)) {
    $env._CTXD_NU = ($env._CTXD_NU | upsert root null)
    if (_ctxd_run $r) {
      $env._CTXD_NU = ($env._CTXD_NU | upsert root $r | upsert seen ($env.CTXD_STATE? | default null))
    }
  }
}

# one export for root $r; false when ctxd was interrupted (nothing changed)
def --env _ctxd_run [r: string] {
  let has_state = ('CTXD_STATE' in $env)
  if $r == '' and not $has_state {
    $env._CTXD_NU = ($env._CTXD_NU | upsert failed null)
    return true
  }
  if $env._CTXD_NU.failed == $r and not $has_state { return true }  # a failed run for this root: wait for another
  $env._CTXD_NU = ($env._CTXD_NU | upsert failed null)
  let need = if $env._CTXD_NU.restore == null { '1' } else { '0' }
  let res = (_ctxd_export $need)
  if $res.rc > 128 {
    # killed by a signal: what it printed may be cut short, so none of it runs
    print -e 'ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)'
    return false
  }
  let applied = (try { _ctxd_apply $res.out; true } catch { false })
  let rc = if ($res.rc == 0 and not $applied) { 1 } else { $res.rc }
  if $rc != 0 {
    # ctxd is gone, crashed or found its state corrupt: undo the last
    # activation without it, so the shell is clean whatever happened
    _ctxd_restore_now
    hide-env -i CTXD_STATE
    hide-env -i CTXD_WATCH
    if $rc == 6 {
      let again = (_ctxd_export '1')
      if $again.rc == 0 { try { _ctxd_apply $again.out } }
    } else {
      if ($res.out | str trim) == '' {
        print -e ('ctxd: the hook could not run ctxd (exit ' + ($rc | into string) + '); project environment unloaded. Try: ctxd doctor')
      }
      $env._CTXD_NU = ($env._CTXD_NU | upsert failed $r)
    }
  }
  true
}

# what `ctxd doctor` tells a user to type: undo ctxd's changes and drop its
# state; the hook activates again at the next prompt
def --env _ctxd_drop_state [] {
  _ctxd_restore_now
  hide-env -i CTXD_STATE
  hide-env -i CTXD_WATCH
}

$env.config = ($env.config | upsert hooks.pre_prompt (
  $env.config.hooks.pre_prompt?
  | default []
  | where {|h| ($h | describe | str starts-with 'closure') == false or not ((view source $h) | str contains '_ctxd_hook') }
  | append {|| _ctxd_hook }
))
