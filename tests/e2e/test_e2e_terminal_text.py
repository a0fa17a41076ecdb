"""Escape sequences in names reach the terminal as text (issue 22 item 7).

A directory named with OSC 52 (which writes the clipboard) holds an untrusted .contextrc:
the cd notice names it, and `ctxd show` prints it, in real interactive bash, zsh and fish.
"""

from e2ekit import cd, plain_dir

OSC52 = "\x1b]52;c;SGVsbG8=\x07"
SHOWN = "\\x1b]52;c;SGVsbG8=\\x07"


def test_a_directory_name_with_an_escape_sequence_is_shown_not_obeyed(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / f"evil{OSC52}dir")
    with open(f"{proj}/.contextrc", "w") as f:
        f.write('[env]\nCT_A = "1"\n')
    s = sessions(shell)
    cd(s, tmp_path)
    out = s.run(f"cd {tmp_path}/evil*dir")  # a glob: the typed line holds no control character
    assert "is not trusted" in out and f"evil{SHOWN}dir" in out, out
    assert "\x1b]" not in out and "\x07" not in out
    out = s.run("ctxd show")
    assert f"evil{SHOWN}dir" in out and "\x1b]" not in out and "\x07" not in out, out
