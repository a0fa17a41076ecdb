"""Codex: its rollout files (the parser is ``ctxd.agents.codex_rollout``), its hooks
(``.codex/hooks.json``) and its notify program (``notify`` in ``config.toml``), which run
``ctxd chat hook codex`` and ``ctxd chat hook codex-notify``, and what keeps Codex from running
them (the feature flag, folder trust, hook trust).

Codex keys a turn's records by its ids: the *i*-th input message of turn *t* in thread *s* is
``codex:<s>:<t>:user:<i>`` and its last answer ``codex:<s>:<t>:assistant``, whether the
UserPromptSubmit and Stop hooks, notify or the rollout importer stores them.
"""

import json
import os

from ctxd.agents.base import AgentTool, Evidence, HookError, payload_id, payload_text


class Codex(AgentTool):
    name = "codex"

    def live_key_prefixes(self, session):
        return (f"codex:{session}:", f"codex-hook:{session}:")

    def is_imported_key(self, session, key):
        head = f"codex:{session}:"  # the rollout importer's codex:<id>:<line>
        return bool(key) and key.startswith(head) and key[len(head):].isdigit()
    label = "Codex"
    settings_dir = ".codex"
    settings_file = "hooks.json"
    home_env = "CODEX_HOME"
    hook_events = (("SessionStart", None), ("UserPromptSubmit", None), ("Stop", None))
    hook_timeout = 30  # seconds
    notify_config = "config.toml"
    hook_handlers = {
        "SessionStart": "on_session_start",
        "UserPromptSubmit": "on_prompt",
        "Stop": "on_stop",
        "PreCompact": "on_transcript",
    }
    # Live records (prompts and answers seen by hooks and notify) are provisional: the rollout is
    # the record. Notify can run after the rollout that holds its turn was imported.
    reconcile_on_record = True
    doctor_ok_note = " (trusted; /hooks shows an entry ctxd rewrote since as modified)"

    def sniff_line(self, obj, n):
        if "payload" in obj and "type" in obj:
            return Evidence.MARK
        if n == 1 and isinstance(obj.get("id"), str) and "instructions" in obj:
            return Evidence.HINT  # the first line of rollouts before session_meta
        return None

    def parse(self, source, cursor):
        from ctxd.agents.codex_rollout import parse_codex

        return parse_codex(source, cursor)

    # -- the hooks ------------------------------------------------------------------------

    def prompt_key(self, payload, session, text):
        turn = payload_id(payload, "turn_id")
        if turn:
            # The key codex-notify gives the turn's first input message: one record, whichever runs.
            return {"dedup": f"codex:{session}:{turn}:user:0"}
        return super().prompt_key(payload, session, text)

    def on_stop(self, driver, payload):
        """Codex runs Stop before the rollout holds the end of the turn (its last answer is
        written, and the turn closed, after the hook): the importer waits for that, so the
        answer is recorded from the payload's ``last_assistant_message`` under the key that
        notify and the rollout importer give a turn's last answer; then the rollout is read."""
        session, turn = payload_id(payload, "session_id"), payload_id(payload, "turn_id")
        last = payload_text(payload, "last_assistant_message")
        if session and turn and last.strip():
            driver.write(self, payload, [dict(kind="reply", content=last, session=session, source=self.name,
                                              ts=_now(), dedup=f"codex:{session}:{turn}:assistant")])
        return driver.on_transcript(self, payload)

    def on_notify(self, driver, args):
        """Codex's ``notify`` program: one JSON argument, ``agent-turn-complete`` records the turn.

        The payload of Codex's own docs has no thread-id and no cwd: the turn is then filed under
        the session "codex" in the project of the working directory Codex runs notify in.
        """
        if not args:
            raise HookError("codex-notify needs the JSON payload as its argument")
        payload = json.loads(args[-1])
        if not isinstance(payload, dict):
            raise HookError(f"the payload is a JSON {type(payload).__name__}, not an object")
        if payload.get("type") != "agent-turn-complete":
            return None
        thread, turn = payload_id(payload, "thread-id") or self.name, payload_id(payload, "turn-id")
        if not turn:
            raise HookError("the payload has no turn-id")
        if not payload_text(payload, "cwd").strip():
            payload = dict(payload, cwd=os.getcwd())
        inputs = []
        raw = payload.get("input-messages")
        for m in raw if isinstance(raw, list) else []:
            if isinstance(m, dict):  # tolerate {"text": ...} items should Codex send them
                m = m.get("text") if isinstance(m.get("text"), str) else m.get("content")
            if isinstance(m, str):
                inputs.append(m)
        last = payload_text(payload, "last-assistant-message")
        if _is_title_turn(inputs, last):
            return None
        from ctxd.memory.store.errors import StoreUnavailable

        mem = driver.project_memory(payload)
        try:
            inputs = _new_inputs(mem, thread, turn, inputs)
        except StoreUnavailable:
            pass  # unreadable now: every input is queued (its keys keep a stored one from doubling)
        now = _now()
        messages = [dict(kind="prompt", content=m, session=thread, source=self.name, ts=now,
                         dedup=f"codex:{thread}:{turn}:user:{i}") for i, m in enumerate(inputs)]
        messages.append(dict(kind="reply", content=last, session=thread, source=self.name, ts=now,
                             dedup=f"codex:{thread}:{turn}:assistant"))
        driver.write(self, dict(payload, session_id=thread, hook_event_name="agent-turn-complete"), messages,
                     mem=mem, turn_end=True)
        return None

    # -- what keeps Codex from running them ---------------------------------------------------

    def install_notes(self, scope, root, environ=None):
        """What stands between ctxd's entries in a Codex hooks.json and Codex running them
        (Codex 0.171): lines to show the user, each with the one step that fixes it.

        The feature is ``[features] hooks`` (stable, on by default); ``codex_hooks`` is
        its deprecated name, which makes Codex warn on every run. Project hooks are read
        only in a folder Codex trusts. And Codex runs a new or changed hook only once the
        user has trusted it (``/hooks`` in the TUI records a hash of the entry in
        config.toml); until then it skips the hook silently. ctxd does not trust its
        own hooks for the user: that review is the user's.
        """
        import tomllib

        cfg = os.path.join(self.home_dir(environ), self.notify_config)
        try:
            with open(cfg, "rb") as f:
                doc = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            doc = {}
        features = doc.get("features") if isinstance(doc.get("features"), dict) else {}
        notes = []
        if "codex_hooks" in features:
            notes.append(f"ctxd: note: `codex_hooks` under [features] in {cfg} is deprecated (Codex warns on every "
                         f"run): the feature is `hooks`, on by default; remove the line")
        if features.get("hooks") is False or ("hooks" not in features and features.get("codex_hooks") is False):
            notes.append(f"ctxd: note: hooks are turned off in {cfg}: set `hooks = true` under [features]")
        if scope != "user" and root and not _trusts(doc, root):
            notes.append(f"ctxd: note: Codex reads {os.path.join(root, '.codex')} only in a folder it trusts: run "
                         f"`codex` in {root} once and trust the folder")
        notes.append("ctxd: note: Codex runs a new or changed hook only once you trust it: run `codex`, type /hooks "
                     "and trust ctxd's entries (until then it skips them silently)")
        return notes

    def hook_problems(self, installed, root, environ):
        notes = [n for s, _p, _e in installed for n in self.install_notes(s, root, environ)
                 if "deprecated" in n or "turned off" in n or "trust the folder" in n]
        problems = [n.removeprefix("ctxd: note: ") for n in dict.fromkeys(notes)]
        cfg = os.path.join(self.home_dir(environ), self.notify_config)
        untrusted = [e for _s, p, entries in installed for e in _untrusted(cfg, p, entries)]
        if untrusted:
            problems.append(f"Codex skips ctxd's {', '.join(untrusted)} hook"
                            f"{'s' if len(untrusted) > 1 else ''} until you trust them")
        if not problems:
            return [], None
        return problems, ("run `codex` in the project, type /hooks and trust ctxd's entries (trust the folder "
                          "when asked)")


def _now():
    import time

    return time.time()


def _trusts(doc, root):
    """Whether config.toml's [projects] marks *root* or a folder above it trusted."""
    projects = doc.get("projects") if isinstance(doc.get("projects"), dict) else {}
    here = os.path.realpath(root)
    while True:
        for key in {here, os.path.abspath(here)}:
            entry = projects.get(key)
            if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
                return True
        parent = os.path.dirname(here)
        if parent == here:
            return False
        here = parent


def _snake(event):
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(event))


def _untrusted(cfg, path, entries):
    """The entries of a Codex hooks.json with no trust record (``[hooks.state."<file>:<event>:<g>:<h>"]
    trusted_hash``, what /hooks writes) in config.toml *cfg*."""
    import tomllib

    try:
        with open(cfg, "rb") as f:
            state = ((tomllib.load(f).get("hooks") or {}).get("state")) or {}
    except (OSError, tomllib.TOMLDecodeError, AttributeError):
        state = {}
    names = {os.path.abspath(path), os.path.realpath(path)}
    out = []
    for event, gi, hi in entries:
        keys = [f"{n}:{_snake(event)}:{gi}:{hi}" for n in names]
        if not any(isinstance(state.get(k), dict) and state[k].get("trusted_hash") for k in keys):
            out.append(event)
    return out


def _is_title_turn(inputs, last):
    """Codex Desktop asks the model for the task's UI title in a turn of its own: one instruction,
    answered with a JSON object holding only a title. Not part of the conversation."""
    try:
        answer = json.loads(last) if last.lstrip().startswith("{") else None
    except ValueError:
        answer = None
    return (isinstance(answer, dict) and set(answer) == {"title"} and isinstance(answer["title"], str)
            and len(inputs) == 1 and "title" in inputs[0].lower())


def _new_inputs(mem, thread, turn, inputs):
    """The input messages this turn added. ``codex exec resume`` (and the TUI after a resume) list
    every prompt of the thread in each turn's input-messages: a leading run of them that is the end
    of what earlier turns of the thread stored is dropped; the last message always stays."""
    if len(inputs) < 2 or not mem.exists():
        return inputs
    own = f"codex:{thread}:{turn}:"
    earlier = [m.content for m in mem.iter_all(session=thread)
               if m.kind == "prompt" and not (m.dedup or "").startswith(own)]
    if not earlier:
        return inputs
    redactor = getattr(mem.store(), "redactor", None)
    stored = [redactor(m)[0] if redactor is not None else m for m in inputs]
    for p in range(min(len(inputs) - 1, len(earlier)), 0, -1):
        if stored[:p] == earlier[-p:]:
            return inputs[p:]
    return inputs
