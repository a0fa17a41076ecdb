"""aider's chat history (``.aider.chat.history.md``): ``#### `` lines are the user's (prompts),
``> `` lines aider's output (tool results), the rest the assistant's replies."""

import time

from ctxd.agents.base import TranscriptFormat
from ctxd.agents.common import lines, record, result_record, sha, user_record

_AIDER_START = "# aider chat started at "


def _block_record(kind, block, session, session_ts, block_line):
    """The record of a block of lines of one *kind* (user, tool, assistant), or None when it is empty."""
    if kind is None:
        return None
    text = "\n".join(block).strip("\n")
    if not text.strip():
        return None
    key = f"aider:{session}:{block_line}:{sha(text)[:16]}"
    if kind == "user":
        return user_record(text, session, "aider", key, session_ts)
    if kind == "tool":
        return result_record(text, session, "aider", key, session_ts)
    return record("reply", text, session, "aider", key, session_ts)


def parse_aider(f, cursor):
    """The blocks of a chat history, one record each; a ``# aider chat started at`` line begins a
    session (named and timed by its date)."""
    session, session_ts = cursor.default_session, None
    block, kind, block_line = [], None, 0
    for n, raw in lines(f, cursor):
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(_AIDER_START):
            r = _block_record(kind, block, session, session_ts, block_line)
            if r:
                yield r
            block, kind = [], None
            session = line[len(_AIDER_START):].strip() or cursor.default_session
            try:
                session_ts = time.mktime(time.strptime(session, "%Y-%m-%d %H:%M:%S"))
            except ValueError:
                session_ts = None
            continue
        if (line == "####" or line.startswith("#### ")) and (kind != "assistant" or line.endswith("  ")):
            # aider writes what the user typed as "#### " lines ending in two spaces (a markdown
            # line break); a "#### " line inside a reply without them is a heading of the reply
            this, text = "user", line[5:]
        elif line.startswith(">") and (len(line) == 1 or line[1] == " "):
            this, text = "tool", line[2:]
        elif not line.strip() and kind in ("user", "tool"):
            r = _block_record(kind, block, session, session_ts, block_line)  # a blank line ends a user or tool block
            if r:
                yield r
            block, kind = [], None
            continue
        else:
            this, text = "assistant", line
        if this != kind:
            r = _block_record(kind, block, session, session_ts, block_line)
            if r:
                yield r
            block, kind, block_line = [], this, n
        block.append(text)
    r = _block_record(kind, block, session, session_ts, block_line)
    if r:
        yield r


class Aider(TranscriptFormat):
    name = "aider"
    extensions = (".md", ".markdown")
    tails = False  # short files, rewritten by aider: imported whole each time (keys dedup)

    def sniff_text(self, line):
        return line.startswith(_AIDER_START.encode())

    def parse(self, source, cursor):
        return parse_aider(source, cursor)
