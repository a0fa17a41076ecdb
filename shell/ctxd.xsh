# ctxd hook for xonsh. Install with:  execx($(ctxd hook xonsh))   (in ~/.xonshrc)
# Runs before each prompt (events.on_pre_prompt); walks up from $PWD (to $HOME
# when $PWD is in it) looking for a project marker and starts ctxd only when
# the root, CTXD_STATE or a watched file changed since its last run. ctxd's output is
# Python (xonsh's Python mode), run in a namespace of its own: it cannot
# touch the user's variables, and the restore function lives there.
# Installing twice leaves one handler.

import os as _ctxd_os
import subprocess as _ctxd_subprocess

_ctxd_cmd = [@CTXD_COMMAND@]
_ctxd_markers = [@CTXD_MARKERS@]
__xonsh__.env['_CTXD_HOOK'] = 'xonsh'  # for `ctxd doctor` (a child process cannot see shell functions)
_ctxd_ns = {'_ctxd_restore': None, '_ctxd_fast_leave': '0'}
# the last run's root and CTXD_STATE: the hook starts no process while they
# hold and no watched file changed (kept in this shell only, never exported)
_ctxd_state = {'failed': None, 'init': False, 'root': None, 'seen': None}


def _ctxd_find_root():
    """The nearest directory at or above $PWD holding a marker, or ''. Inside
    $HOME (trailing slashes removed) the walk stops there: a marker above your
    home directory does not make a directory in it a project. (Stopping where
    the walk meets $HOME is the same as "$PWD is $HOME or below it".)"""
    d = __xonsh__.env.get('PWD') or _ctxd_os.getcwd()
    home = str(__xonsh__.env.get('HOME') or '').rstrip('/')
    while True:
        for m in _ctxd_markers:
            if _ctxd_os.path.exists(_ctxd_os.path.join(d, m)):
                return d
        parent = _ctxd_os.path.dirname(d)
        if parent == d or d == home:
            return ''
        d = parent


def _ctxd_watch_changed():
    """Whether a file CTXD_WATCH names appeared, went or is newer than its stamp."""
    lines = (__xonsh__.env.get('CTXD_WATCH') or '').split('\n')
    stamp = lines[0]
    try:
        stamp_ns = _ctxd_os.stat(stamp).st_mtime_ns if stamp else None
    except OSError:
        stamp_ns = None
    for line in lines[1:]:
        kind, p = line[:1], line[1:]
        if kind == '+':
            try:
                m = _ctxd_os.stat(p).st_mtime_ns
            except OSError:
                return True
            if stamp and (stamp_ns is None or m > stamp_ns):
                return True
        elif kind == '-' and _ctxd_os.path.exists(p):
            return True
    return False


def _ctxd_restore_now():
    f = _ctxd_ns.get('_ctxd_restore')
    _ctxd_ns['_ctxd_restore'] = None
    if f is not None:
        try:
            f()
        except Exception:
            pass


def _ctxd_export(need):
    env = __xonsh__.env.detype()
    env['CTXD_NEED_RESTORE'] = need
    try:
        p = _ctxd_subprocess.run(_ctxd_cmd + ['export', 'xonsh'], env=env, stdout=_ctxd_subprocess.PIPE,
                                 stderr=_ctxd_subprocess.DEVNULL, stdin=_ctxd_subprocess.DEVNULL)
    except OSError:
        return '', 127
    except KeyboardInterrupt:
        return '', 130
    rc = p.returncode if p.returncode >= 0 else 128 - p.returncode  # killed by a signal
    return p.stdout.decode('utf-8', 'surrogateescape'), rc


def _ctxd_apply(code):
    if code:
        execx(code, 'exec', _ctxd_ns)


def _ctxd_hook(**kwargs):
    r = _ctxd_find_root()
    has_state = 'CTXD_STATE' in __xonsh__.env
    seen = __xonsh__.env.get('CTXD_STATE')
    if (_ctxd_state['init'] and r == _ctxd_state['root'] and seen == _ctxd_state['seen']
            and not _ctxd_watch_changed()):
        return  # nothing can have changed: no process
    _ctxd_state['init'] = False
    if _ctxd_run(r, has_state):
        _ctxd_state.update(init=True, root=r, seen=__xonsh__.env.get('CTXD_STATE'))


def _ctxd_run(r, has_state):
    """One export for root *r*; False when ctxd was interrupted (nothing changed)."""
    if not r and not has_state:
        _ctxd_state['failed'] = None
        return True
    if _ctxd_state['failed'] is not None and _ctxd_state['failed'] == r and not has_state:
        return True  # a failed run for this root: wait quietly for another
    _ctxd_state['failed'] = None
    out, rc = _ctxd_export('0' if _ctxd_ns.get('_ctxd_restore') else '1')
    if rc > 128:
        # killed by a signal: what it printed may be cut short, so none of it runs
        _ctxd_os.write(2, b'ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)\n')
        return False
    try:
        _ctxd_apply(out)
    except Exception:
        rc = rc or 1
    if rc != 0:
        # ctxd is gone, crashed or found its state corrupt: undo the last
        # activation without it, so the shell is clean whatever happened
        _ctxd_restore_now()
        __xonsh__.env.pop('CTXD_STATE', None)
        __xonsh__.env.pop('CTXD_WATCH', None)
        if rc == 6:
            out2, rc2 = _ctxd_export('1')
            if rc2 == 0:
                _ctxd_apply(out2)
        else:
            if not out:
                _ctxd_os.write(2, ('ctxd: the hook could not run ctxd (exit %s); project environment unloaded. '
                                   'Try: ctxd doctor\n' % rc).encode())
            _ctxd_state['failed'] = r
    return True


def _ctxd_drop_state():
    """Undo ctxd's changes and drop its state; the hook activates again at the next prompt."""
    _ctxd_restore_now()
    __xonsh__.env.pop('CTXD_STATE', None)
    __xonsh__.env.pop('CTXD_WATCH', None)


for _ctxd_h in [h for h in events.on_pre_prompt if getattr(h, '__name__', '') == '_ctxd_hook'] + [None]:
    events.on_pre_prompt.discard(_ctxd_h)
events.on_pre_prompt(_ctxd_hook)
del _ctxd_h
# what `ctxd doctor` tells a user to type, in the interactive namespace
__xonsh__.ctx['_ctxd_drop_state'] = _ctxd_drop_state
