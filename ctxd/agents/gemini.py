"""Gemini CLI: its sessions (the JSONL upsert log: a record id may be written several times, the
last version counts; ``$rewindTo`` drops that record and everything after it, as Gemini CLI
itself does; ``$set`` message lists; the legacy one-document ``session-*.json``; a ``/chat save``
checkpoint), its hooks (``.gemini/settings.json``, JSON with comments), folder trust, and the
pointer in GEMINI.md."""

import json
import os

from ctxd.agents.base import (AgentTool, Evidence, Forget, Malformed, ReadFromStart, payload_id, payload_text,
                              read_line)
from ctxd.agents.common import (SNIFF_LINE_BYTES, call_record, dumps, first_json, json_lines, lines, record,
                                result_record, sha, text_parts, timestamp, user_record)

_WHOLE_JSON_BYTES = 64 << 20  # a session file written as one JSON document is read whole up to this size


def _content_text(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return text_parts(content)
    raise TypeError(type(content).__name__)


def _tool_result_text(tc):
    r = tc.get("result")
    parts = r if isinstance(r, list) else ([] if r is None else [r])
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            if isinstance(p.get("text"), str):
                out.append(p["text"])
            fr = p.get("functionResponse")
            if isinstance(fr, dict):
                resp = fr.get("response")
                if isinstance(resp, dict):
                    val = next((resp[k] for k in ("output", "error", "content") if k in resp), resp)
                    out.append(val if isinstance(val, str) else dumps(val))
                elif resp is not None:
                    out.append(resp if isinstance(resp, str) else dumps(resp))
    if not out and isinstance(tc.get("resultDisplay"), str):
        out.append(tc["resultDisplay"])
    return "\n".join(out)


def _message_records(obj, sid, n):
    rid = obj["id"]
    kind = obj.get("type")
    ts = timestamp(obj.get("timestamp"))
    base = f"gemini:{sid}:{rid}"
    try:
        text = _content_text(obj.get("content"))
    except TypeError as e:
        yield Malformed(n, f"content is a {e}")
        return
    if kind == "user":
        if text.strip():
            yield user_record(text, sid, "gemini", base, ts)  # a <hook_context> block in front comes off
    elif kind == "gemini":
        if text.strip():
            yield record("reply", text, sid, "gemini", base, ts)
        calls = obj.get("toolCalls")
        for i, tc in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(tc, dict):
                continue
            cid = tc.get("id") if isinstance(tc.get("id"), str) and tc.get("id") else str(i)
            name = tc.get("name") if isinstance(tc.get("name"), str) else None
            tts = timestamp(tc.get("timestamp")) or ts
            yield call_record(name, tc.get("args", {}), sid, "gemini", f"{base}:call:{cid}", tts, call_id=cid)
            status = tc.get("status")
            if tc.get("result") is not None or status in ("success", "error", "cancelled"):
                result = _tool_result_text(tc)
                failed = status in ("error", "cancelled")
                if result.strip() or failed:
                    yield result_record(result if result.strip() else str(status), sid, "gemini",
                                        f"{base}:result:{cid}", tts, tool=name, call_id=cid, is_error=failed)
    elif kind == "error":
        if text.strip():
            yield record("meta", text, sid, "gemini", base, ts, subtype="error")
    elif kind is None:
        yield Malformed(n, "a record without a type")
    # info, warning and unknown types: not conversation


def _set_messages(obj):
    """The records of a ``{"$set": {"messages": [...]}}`` line (written after /compress, on resume
    and rollback), or None."""
    st = obj.get("$set")
    msgs = st.get("messages") if isinstance(st, dict) else None
    return msgs if isinstance(msgs, list) else None


def _checkpoint_records(doc, cursor):
    """A ``/chat save`` checkpoint: ``{"history": [{"role", "parts"}]}`` (or the bare list), no ids."""
    tag = cursor.default_session
    if tag.startswith("checkpoint-"):
        tag = tag[len("checkpoint-"):]
    hist = doc.get("history") if isinstance(doc, dict) else doc
    sid = f"checkpoint-{tag}"
    names = {}
    for i, c in enumerate(hist):
        if not isinstance(c, dict) or not isinstance(c.get("parts"), list):
            yield Malformed(1, f"history entry {i} has no parts")
            continue
        role = c.get("role")
        texts = []
        for j, p in enumerate(c["parts"]):
            if not isinstance(p, dict):
                continue
            key = f"gemini:{sid}:{i}:{j}"
            if isinstance(p.get("text"), str) and not p.get("thought"):
                texts.append(p["text"])
            fc, fr = p.get("functionCall"), p.get("functionResponse")
            if isinstance(fc, dict):
                cid = fc.get("id") if isinstance(fc.get("id"), str) else None
                name = fc.get("name") if isinstance(fc.get("name"), str) else None
                if cid:
                    names[cid] = name
                yield call_record(name, fc.get("args", {}), sid, "gemini", key, None, call_id=cid)
            elif isinstance(fr, dict):
                cid = fr.get("id") if isinstance(fr.get("id"), str) else None
                resp = fr.get("response")
                failed = isinstance(resp, dict) and "error" in resp and "output" not in resp
                text = _tool_result_text({"result": [p]})
                yield result_record(text, sid, "gemini", key, None, tool=fr.get("name") or names.get(cid), call_id=cid,
                                    is_error=failed)
        text = "\n".join(texts)
        if text.strip():
            key = f"gemini:{sid}:{i}"
            yield user_record(text, sid, "gemini", key) if role == "user" else record("reply", text, sid, "gemini", key)


def _whole_document(f):
    """A Gemini CLI session written as one JSON document (the legacy session file, pretty or on one
    line; a /chat save checkpoint), or None when *f* is not one."""
    f.seek(0)
    head = f.read(SNIFF_LINE_BYTES).lstrip(b"\xef\xbb\xbf").lstrip()
    if head[:1] not in (b"{", b"["):
        return None
    first = head.split(b"\n", 1)[0]
    try:
        obj = json.loads(first)
        if isinstance(obj, dict) and not isinstance(obj.get("messages"), list) and "history" not in obj:
            return None  # a JSONL session: its first line is the metadata
    except ValueError:
        pass
    if os.fstat(f.fileno()).st_size > _WHOLE_JSON_BYTES:
        return None
    f.seek(0)
    try:
        doc = json.loads(f.read().decode("utf-8"))
    except ValueError:
        return None
    if isinstance(doc, dict) and (isinstance(doc.get("messages"), list) or isinstance(doc.get("history"), list)):
        return doc
    if isinstance(doc, list) and doc and all(isinstance(c, dict) and "parts" in c for c in doc):
        return doc
    return None


def _document_records(doc, cursor):
    if isinstance(doc, list) or "messages" not in doc:
        yield from _checkpoint_records(doc, cursor)
        return
    sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) and doc.get("sessionId") else \
        cursor.default_session
    last = {}
    for i, m in enumerate(doc["messages"]):
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            last[m["id"]] = i
    for i, m in enumerate(doc["messages"]):
        if not isinstance(m, dict) or not isinstance(m.get("id"), str):
            yield Malformed(1, f"message {i} has no id")
        elif last[m["id"]] == i:
            yield from _message_records(m, sid, 1)


def parse_gemini(f, cursor):
    """Two passes: the first (ids only) applies upserts and rewinds, the second yields records.

    A record id written several times is imported once, from its last version
    (a ``{"$set": {"messages": [...]}}`` line, written after /compress, writes
    each record in it once more); ``{"$rewindTo": id}`` drops that record and
    all after it (all records when the id is unknown), and what an earlier
    import stored of them is forgotten. In an incremental import a rewind needs
    the whole file: ``ReadFromStart``. A session written as one JSON document (the
    legacy ``session-*.json``, a ``/chat save`` checkpoint) is read whole.
    """
    doc = _whole_document(f)
    if doc is not None:
        if cursor.start > 0:
            raise ReadFromStart()
        yield from _document_records(doc, cursor)
        size = f.seek(0, os.SEEK_END)
        cursor.pos = size
        return
    sid = None
    if cursor.start > 0:
        first = first_json(f)
        if first and isinstance(first.get("sessionId"), str):
            sid = first["sessionId"]
    last = {}  # record id -> (line number, index in a $set list or None) of its last version, in order
    rewound = set()
    for n, raw in lines(f, cursor):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("$rewindTo"), str):
            if cursor.start > 0:
                raise ReadFromStart()
            ids = list(last)
            target = obj["$rewindTo"]
            cut = ids.index(target) if target in last else 0
            for rid in ids[cut:]:
                del last[rid]
                rewound.add(rid)
        elif _set_messages(obj) is not None:
            for i, m in enumerate(_set_messages(obj)):
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    last[m["id"]] = (n, i)
        elif isinstance(obj.get("id"), str) and "$set" not in obj:
            last[obj["id"]] = (n, None)
        elif sid is None and isinstance(obj.get("sessionId"), str) and obj.get("sessionId"):
            sid = obj["sessionId"]
    end = cursor.pos
    sid = sid or cursor.default_session
    rewound -= set(last)
    if rewound:
        yield Forget(tuple(f"gemini:{sid}:{rid}" for rid in sorted(rewound)))
    for n, obj in json_lines(f, cursor, start=cursor.start, line_no=cursor.first_line_no, end=end):
        if isinstance(obj, Malformed):
            yield obj
            continue
        if "$rewindTo" in obj:
            continue
        msgs = _set_messages(obj)
        if msgs is not None:
            for i, m in enumerate(msgs):
                if isinstance(m, dict) and last.get(m.get("id")) == (n, i):
                    yield from _message_records(m, sid, n)
            continue
        if "$set" in obj:
            continue
        rid = obj.get("id")
        if not isinstance(rid, str):
            if isinstance(obj.get("sessionId"), str):
                continue  # the metadata line
            yield Malformed(n, "neither a record (id) nor metadata (sessionId)")
            continue
        if last.get(rid) != (n, None):
            continue  # an older version, or rewound
        yield from _message_records(obj, sid, n)


class Gemini(AgentTool):
    name = "gemini"

    def live_key_prefixes(self, session):
        return (f"gemini-hook:{session}:",)

    def is_imported_key(self, session, key):
        return bool(key) and key.startswith(f"gemini:{session}:")
    label = "Gemini CLI"
    settings_dir = ".gemini"
    settings_file = "settings.json"
    settings_comments = True  # Gemini CLI reads JSON with comments
    # Gemini matches lifecycle events by exact string: no matcher means every source.
    hook_events = (("SessionStart", None), ("BeforeAgent", None), ("AfterAgent", None), ("PreCompress", None),
                   ("SessionEnd", None))
    hook_timeout = 30000  # milliseconds
    hook_extra = {"name": "ctxd"}
    json_stdout = True
    hook_handlers = {
        "SessionStart": "on_session_start",
        "BeforeAgent": "on_prompt",
        "AfterAgent": "on_after_agent",
        "PreCompress": "on_transcript",
        "SessionEnd": "on_transcript",
    }

    def sniff_line(self, obj, n):
        if "sessionId" in obj and "projectHash" in obj:
            return Evidence.MARK
        if "$rewindTo" in obj or "$set" in obj:
            return Evidence.MARK
        if isinstance(obj.get("id"), str) and obj.get("type") in ("user", "gemini", "info", "error", "warning"):
            return Evidence.HINT
        return None

    def one_document(self, f):
        return _whole_document(f) is not None  # a legacy session file or a checkpoint, maybe pretty

    def parse(self, source, cursor):
        return parse_gemini(source, cursor)

    def on_after_agent(self, driver, payload):
        """The turn's response, recorded live (the session file is imported at its end)."""
        response = payload_text(payload, "prompt_response")
        session = payload_id(payload, "session_id")
        key = f"gemini-hook:{session}:{sha(payload_text(payload, 'prompt') + chr(0) + response)[:32]}"
        driver.write(self, payload, [dict(kind="reply", content=response, session=session, source=self.name,
                                          dedup=key, ts=_now())], turn_end=True)
        return None

    def install_notes(self, scope, root, environ=None):
        if scope == "user":
            return []
        return [f"ctxd: note: Gemini CLI runs a project's hooks only in a folder it trusts: trust {root} "
                f"in Gemini (/permissions); elsewhere it skips them (headless runs exit 55)"]

    def hook_problems(self, installed, root, environ):
        if not any(s == "project" for s, _p, _e in installed):
            return [], None
        trusted = _trusts(root, environ)
        if trusted:
            return [], None
        return ([f"Gemini CLI runs project hooks only in a folder it trusts, and {root} is "
                 f"{'not trusted' if trusted is False else 'of unknown trust'}"],
                f"run `gemini` in {root} and trust the folder (or: ctxd chat install gemini --user; "
                f"headless runs: GEMINI_CLI_TRUST_WORKSPACE=true)")

    def context_pointer(self, intro, context_md, relative):
        """Gemini CLI resolves ``@`` imports only inside the project (the git root, else the
        file's directory); an absolute path outside it is dropped as a "path traversal attempt"
        (google-gemini/gemini-cli#4098). So a context.md inside the project gets an ``@./...``
        import; one in the data directory (the default) gets an instruction line instead."""
        if relative:
            return [f"{intro}:", "@" + relative], []
        import shlex

        return [f"{read_line(intro, context_md)} It lies outside this workspace: `cat {shlex.quote(context_md)}` "
                f"reads it."], [
            "Gemini CLI imports files only from inside the project, and the context lives in ctxd's data "
            "directory, so GEMINI.md got an instruction to read it; `ctxd chat install gemini` injects the "
            "context at session start instead (or `[context] store = \"project\"` in .contextrc allows an import)"]


def _now():
    import time

    return time.time()


def _trusts(root, environ):
    """True / False / None (unknown) for whether Gemini CLI trusts *root* (folder trust)."""
    flag = environ.get("GEMINI_CLI_TRUST_WORKSPACE")
    if flag in ("true", "false"):
        return flag == "true"
    home = os.path.expanduser("~") if "HOME" not in environ else environ["HOME"]
    try:
        with open(os.path.join(home, ".gemini", "settings.json"), encoding="utf-8") as f:
            folder_trust = (json.load(f).get("security") or {}).get("folderTrust") or {}
        if folder_trust.get("enabled") is False:
            return True
    except (OSError, ValueError, AttributeError):
        pass
    path = environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or os.path.join(home, ".gemini", "trustedFolders.json")
    try:
        with open(path, encoding="utf-8") as f:
            rules = json.load(f)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return None
    here = os.path.realpath(root)
    best, level = -1, None
    for rule, trust in (rules.items() if isinstance(rules, dict) else ()):
        base = os.path.dirname(rule) if trust == "TRUST_PARENT" else rule
        base = os.path.realpath(base)
        if (here == base or here.startswith(base.rstrip(os.sep) + os.sep)) and len(rule) > best:
            best, level = len(rule), trust
    return level in ("TRUST_FOLDER", "TRUST_PARENT")
