"""``ctxd exec [--strict] [DIR] -- CMD [ARGS...]``: run CMD in DIR's project environment.

For scripts, cron, CI, editors and AI agents' shells, which never run a cd
hook. The console script (ctxd.fastpath.console_entry) dispatches it here
before click is imported (an editor may run it for every task); ``--help``
goes to the click command in ``ctxd.commands.exec``, which owns the help text.

- The environment is built by ``ctxd.activation.target``: the caller's own
  shell activation undone first (running from project A for project B never
  keeps A's venv on PATH), then DIR's project environment exactly as the hook
  builds it, trust included. CMD runs in DIR (DIR defaults to the current
  directory).
- ctxd *replaces itself* with CMD (execve): the exit status, the signals
  (Ctrl-C, SIGTERM from a supervisor, a job-control stop) and the process id
  are CMD's own, with nothing in between.
- CMD not found: ``ctxd: exec: CMD: command not found``, exit 127; found but
  not executable: ``...: permission denied``, exit 126, as shells report them.
  A file without a ``#!`` line runs with /bin/sh, as shells (and POSIX execvp) do.
- Nothing to apply or not allowed to: a missing DIR, an untrusted or edited
  .contextrc, an untrusted root, a .contextrc error: CMD runs in the plain
  environment (the caller's, its shell's activation undone) after one stderr
  line; ``--strict`` refuses instead, with the exit code of the reason
  (4 not found, 5 not trusted, 3 invalid .contextrc, 6 corrupt CTXD_STATE).
  DIR outside any project is no problem (CMD runs there, nothing said) unless
  ``--strict``, which wants a project (exit 4).
"""

import errno
import os
import sys

USAGE = "usage: ctxd exec [--strict] [DIR] -- CMD [ARGS...]"


def parse(argv):
    """(strict, DIR or None, command) for *argv*; "help" for --help; a usage error's text."""
    if "--" not in argv:
        if any(a in ("-h", "--help") for a in argv):
            return "help"
        return f"put -- before the command ({USAGE})"
    i = argv.index("--")
    head, command = argv[:i], argv[i + 1:]
    strict, dirs = False, []
    for a in head:
        if a in ("-h", "--help"):
            return "help"
        if a == "--strict":
            strict = True
        elif a.startswith("-") and a != "-":
            return f"no such option: {a} ({USAGE})"
        else:
            dirs.append(a)
    if len(dirs) > 1:
        return f"one DIR at most, got {len(dirs)}: put the command after -- ({USAGE})"
    if not command or not command[0]:
        return f"no command after -- ({USAGE})"
    return strict, (dirs[0] if dirs else None), command


def _find(cmd, env):
    """The file execve runs for *cmd* (a name looked up on the target PATH), or an errno."""
    if "/" in cmd:
        return cmd, None
    denied = None
    for d in (env.get("PATH") or os.defpath).split(":"):
        path = os.path.join(d or ".", cmd)
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return path, None
            denied = denied or path
    if denied:
        return denied, errno.EACCES
    return None, errno.ENOENT


def run(strict, directory, command, environ=None):
    """Build the environment, say what needs saying, and exec *command*. Never returns
    normally: execve, or sys.exit with ctxd's or the shell-like 126/127 status."""
    from ctxd.activation import target
    from ctxd.boundary import say

    environ = dict(os.environ if environ is None else environ)
    t = target.build(environ, directory)
    name = command[0]
    lines, refuse = target.judge(t, strict, "exec", f"running {name} without the project environment",
                                 f"{name} not run")
    for line in lines:
        say(line)
    if refuse is not None:
        sys.exit(refuse)
    env = target.child_environment(t)
    if t.exists:
        try:
            os.chdir(t.directory)
        except OSError as e:
            from ctxd.errors import NotFoundError

            raise NotFoundError(f"exec: cannot enter {t.directory}: {e.strerror}") from None
        env["PWD"] = t.directory
    path, err = _find(name, env)
    if err is None:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execve(path, command, env)
        except OSError as e:
            err = e.errno
            if err == errno.ENOEXEC:  # no #! line: a shell script, as POSIX execvp runs it
                try:
                    os.execve("/bin/sh", ["sh", path] + command[1:], env)
                except OSError as e2:
                    err = e2.errno
    if err in (errno.ENOENT, errno.ENOTDIR):
        say(f"ctxd: exec: {name}: {'command not found' if '/' not in name else 'no such file or directory'}")
        sys.exit(127)
    say(f"ctxd: exec: {name}: {os.strerror(err).lower() if err else 'cannot run'}")
    sys.exit(126)


def exec_main(argv):
    """``ctxd exec ...`` from the console script (exits); returns for --help (click's to print)."""
    from ctxd.boundary import cli_exit, say

    got = parse(argv)
    if got == "help":
        return
    if isinstance(got, str):
        say(f"ctxd: exec: {got}")
        sys.exit(2)
    try:
        run(*got)
    except (Exception, KeyboardInterrupt) as e:
        sys.exit(cli_exit(e, "exec"))
