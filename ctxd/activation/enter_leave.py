"""Run .contextrc on_enter / on_leave commands.

Commands run with /bin/sh (so they behave the same whether the user's shell
is bash, zsh or fish), in the project root, with the project's environment,
stdin closed and a timeout. Their output is returned so the export can show
it in the user's terminal; a failing or hanging command is reported, killed
(with its whole process group) and never blocks activation.
"""

import os


def run(commands, env, cwd, timeout, label):
    """Run each command; return the lines to show the user."""
    if not commands:
        return []
    import signal
    import subprocess

    lines = []
    for cmd in commands:
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            lines.append(f"ctxd: {label} could not start: {e.strerror}")
            continue
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                out, _ = proc.communicate(timeout=1)
            except subprocess.TimeoutExpired:  # a daemon that left the group holds the pipe
                out = b""
            lines.extend(_text(out))
            lines.append(f"ctxd: {label} timed out after {timeout:g}s and was stopped: {cmd}")
            continue
        lines.extend(_text(out))
        if proc.returncode != 0:
            lines.append(f"ctxd: {label} failed (exit {proc.returncode}): {cmd}")
    return lines


def _text(data):
    text = data.decode("utf-8", "replace").rstrip("\n")
    return text.split("\n") if text else []
