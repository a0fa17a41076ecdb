"""A stub model server for the real AI CLIs: Anthropic Messages, OpenAI Responses, Gemini.

Started on 127.0.0.1 on a free port in a thread of the test process; it
answers every model call with a fixed text (``StubModel.reply``, "OK" unless a
test changes it) and records every request, so a test can assert what the CLI
sent the model. It listens on the loopback address only and makes no
connection of its own.

    with StubModel() as stub:
        env["ANTHROPIC_BASE_URL"] = stub.url
        ...
        stub.requests            # [Request(method, path, query, headers, body), ...]
        stub.model_calls("anthropic")

What each API gets:

- Anthropic: ``HEAD /`` and ``GET /`` (Claude Code checks the host) -> 200;
  ``POST /v1/messages`` -> an SSE stream (message_start, content_block_start,
  content_block_delta, content_block_stop, message_delta, message_stop) when
  the body says ``"stream": true``, else one JSON message;
  ``POST /v1/messages/count_tokens`` -> ``{"input_tokens": N}``.
- OpenAI Responses (Codex): ``POST /v1/responses`` -> SSE response.created,
  response.in_progress, response.output_item.added, response.content_part.added,
  response.output_text.delta, response.output_text.done, response.content_part.done,
  response.output_item.done, response.completed; ``GET /v1/models`` -> an empty list.
- Gemini: ``POST /v1beta/models/M:generateContent`` -> one JSON response;
  ``:streamGenerateContent?alt=sse`` -> SSE ``data:`` chunks; ``:countTokens``.
  A call whose generationConfig asks for JSON with a schema (Gemini's routing
  call asks for a ``complexity_score``) gets a JSON object made from the schema,
  numbers >= 1.

Scripted tool calls (Anthropic): a reply may be a ``ToolUse`` instead of a text;
the stub then answers with a ``tool_use`` block (stop_reason ``tool_use``), and
the CLI runs the tool and sends its result in the next request.
``bash_then_ok(command)`` answers the first request that offers the Bash tool
with that command and every later one (the tool_result is in them) with "OK";
``bash_steps(commands)`` runs several, one a request.
"""

import gzip
import json
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HOST = "127.0.0.1"


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: dict
    body: object = None  # parsed JSON, or the raw text when not JSON, or None
    raw: bytes = b""
    api: str = ""        # "anthropic", "openai", "gemini" or "" (not a model call)
    kind: str = ""       # what the stub answered: "stream", "json", "count", "routing", "meta"
    at: float = field(default_factory=time.time)

    def text(self):
        """Every string in the body joined with newlines: what the CLI sent, to search in."""
        out = []

        def walk(v):
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, dict):
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        walk(self.body)
        return "\n".join(out)


# -- Gemini's JSON-schema answer ------------------------------------------------------

def value_for_schema(schema, name=""):
    """A value matching a JSON schema (Gemini's or standard spelling): numbers >= 1,
    the first enum choice, every property of an object filled."""
    if not isinstance(schema, dict):
        return "OK"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    kind = str(kind or ("object" if "properties" in schema else "string")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: value_for_schema(v, k) for k, v in props.items()}
    if kind == "array":
        return [value_for_schema(schema.get("items"), name)]
    if kind in ("integer", "number"):
        lo = schema.get("minimum", 1)
        hi = schema.get("maximum")
        v = max(1, lo if isinstance(lo, (int, float)) else 1)
        if isinstance(hi, (int, float)):
            v = min(v, hi)
        return int(v) if kind == "integer" else v
    if kind == "boolean":
        return False
    return "simple" if "reason" in name else "OK"


def _gemini_schema(body):
    cfg = body.get("generationConfig") if isinstance(body, dict) else None
    if not isinstance(cfg, dict):
        return None
    for key in ("responseJsonSchema", "responseSchema", "response_json_schema", "response_schema"):
        if isinstance(cfg.get(key), dict):
            return cfg[key]
    if cfg.get("responseMimeType") == "application/json":
        return {}
    return None


# -- scripted tool calls ---------------------------------------------------------------

@dataclass
class ToolUse:
    """A tool call the stub makes (Anthropic ``tool_use``)."""
    name: str
    input: dict
    id: str = field(default_factory=lambda: "toolu_" + uuid.uuid4().hex[:24])


def offers_tool(req, name):
    body = req.body if isinstance(req.body, dict) else {}
    return any(isinstance(t, dict) and t.get("name") == name for t in body.get("tools") or [])


def tool_results(req):
    """Every tool_result block in the request's messages: [(tool_use_id, text)]."""
    body = req.body if isinstance(req.body, dict) else {}
    out = []
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                c = block.get("content")
                if isinstance(c, list):
                    c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
                out.append((block.get("tool_use_id"), c if isinstance(c, str) else ""))
    return out


def bash_steps(commands, before=None, description="Run a command", earlier=0):
    """A reply function: for a request that offers Bash and carries n tool results (beyond the
    *earlier* ones of a resumed conversation), the Bash tool call ``commands[n]`` (``before(n)``
    is called first, e.g. to wait for a hook the last step set off); "OK" once every command has
    its result, and for other requests."""
    def reply(req):
        if not offers_tool(req, "Bash"):
            return "OK"
        n = len(tool_results(req)) - earlier
        if n >= len(commands):
            return "OK"
        if before is not None:
            before(n)
        return ToolUse("Bash", {"command": commands[n], "description": description})
    return reply


def bash_then_ok(command, description="Run a command"):
    """A reply function: the Bash tool call *command* for the first request that offers
    Bash and carries no tool result yet, "OK" for every other request."""
    return bash_steps([command], description=description)


# -- SSE --------------------------------------------------------------------------------

def sse(events):
    """SSE bytes of (event name or None, data object) pairs."""
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def anthropic_events(model, text, msg_id):
    """The SSE events of one answer: *text* (a string) or a ToolUse."""
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    if isinstance(text, ToolUse):
        block = {"type": "tool_use", "id": text.id, "name": text.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(text.input)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
        stop = "end_turn"
    return [
        ("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def anthropic_message(model, text, msg_id):
    if isinstance(text, ToolUse):
        content, stop = [{"type": "tool_use", "id": text.id, "name": text.name, "input": text.input}], "tool_use"
    else:
        content, stop = [{"type": "text", "text": text}], "end_turn"
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1}}


def openai_events(model, text, resp_id):
    item_id = "msg_" + resp_id
    created = int(time.time())
    base = {"id": resp_id, "object": "response", "created_at": created, "model": model, "output": [],
            "status": "in_progress"}
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 1,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 11}
    done = dict(base, status="completed", output=[item], usage=usage)
    seq = iter(range(1000))
    ev = []

    def add(name, data):
        ev.append((name, dict(data, type=name, sequence_number=next(seq))))

    add("response.created", {"response": base})
    add("response.in_progress", {"response": base})
    add("response.output_item.added", {"output_index": 0, "item": dict(item, status="in_progress", content=[])})
    add("response.content_part.added", {"item_id": item_id, "output_index": 0, "content_index": 0,
                                        "part": {"type": "output_text", "text": "", "annotations": []}})
    add("response.output_text.delta", {"item_id": item_id, "output_index": 0, "content_index": 0, "delta": text})
    add("response.output_text.done", {"item_id": item_id, "output_index": 0, "content_index": 0, "text": text})
    add("response.content_part.done", {"item_id": item_id, "output_index": 0, "content_index": 0,
                                       "part": {"type": "output_text", "text": text, "annotations": []}})
    add("response.output_item.done", {"output_index": 0, "item": item})
    add("response.completed", {"response": done})
    return ev


def gemini_response(model, text):
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
            "modelVersion": model, "responseId": uuid.uuid4().hex[:16]}


# -- the server -----------------------------------------------------------------------------

class StubModel:
    """The stub server; a context manager (start on enter, stop on exit)."""

    def __init__(self, reply="OK"):
        self.reply = reply  # a string, or a callable(Request) -> string
        self.requests = []
        self._lock = threading.Lock()
        self._server = None
        self._thread = None

    # -- reading what was sent
    def model_calls(self, api=None):
        """The requests that asked for a model answer (not routing, counting or host checks)."""
        with self._lock:
            reqs = list(self.requests)
        return [r for r in reqs if r.kind in ("stream", "json") and (api is None or r.api == api)]

    def clear(self):
        with self._lock:
            self.requests.clear()

    def sent(self, api=None):
        """Everything the CLI sent the model, as one text."""
        return "\n".join(r.text() for r in self.model_calls(api))

    @property
    def url(self):
        return f"http://{HOST}:{self.port}"

    @property
    def port(self):
        return self._server.server_address[1]

    # -- lifecycle
    def start(self):
        stub = self

        class Handler(_Handler):
            owner = stub

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-model", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _text_for(self, req, tools=False):
        """The answer to *req*: a string, or (for an API with *tools*) a ToolUse."""
        r = self.reply
        out = r(req) if callable(r) else r
        if isinstance(out, ToolUse) and not tools:
            return "OK"  # scripted tool calls are Anthropic's only
        return out if isinstance(out, ToolUse) else str(out)

    def _record(self, req):
        with self._lock:
            self.requests.append(req)


class _Handler(BaseHTTPRequestHandler):
    owner = None  # the StubModel, set by a subclass
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: the tests read stub.requests
        pass

    # -- plumbing
    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not n and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._chunked()
        enc = self.headers.get("Content-Encoding", "").lower()
        try:
            if enc == "gzip":
                raw = gzip.decompress(raw)
            elif enc == "deflate":
                raw = zlib.decompress(raw)
            elif enc == "zstd":
                import zstandard  # only if a CLI compresses; not a test dependency otherwise

                raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 << 20)
        except Exception:
            pass
        return raw

    def _chunked(self):
        out = b""
        while True:
            size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
            if not size:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def _request(self, api="", kind=""):
        parts = urlsplit(self.path)
        raw = self._body() if self.command in ("POST", "PUT", "PATCH") else b""
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        return Request(self.command, parts.path, parse_qs(parts.query), dict(self.headers.items()), body, raw,
                       api, kind)

    def _send(self, status, data=b"", ctype="application/json", head=False):
        if isinstance(data, (dict, list)):
            data = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", "req_stub")
        self.send_header("x-request-id", "req_stub")
        self.end_headers()
        if not head:
            self.wfile.write(data)
            self.wfile.flush()

    # -- methods
    def do_HEAD(self):
        req = self._request(kind="meta")
        self.owner._record(req)
        self._send(200, b"", head=True)

    def do_GET(self):
        req = self._request(kind="meta")
        self.owner._record(req)
        path = req.path.rstrip("/")
        if path.endswith("/models"):
            self._send(200, {"object": "list", "data": [], "models": []})
        else:
            self._send(200, {})

    def do_POST(self):
        path = urlsplit(self.path).path
        if path.startswith("/v1/messages"):
            return self._anthropic(path)
        if path.rstrip("/").endswith("/responses"):
            return self._openai()
        if ":" in path and "/models/" in path:
            return self._gemini(path)
        req = self._request(kind="meta")
        self.owner._record(req)
        self._send(404, {"error": {"message": f"stub: no route for POST {path}"}})

    def _anthropic(self, path):
        req = self._request("anthropic")
        body = req.body if isinstance(req.body, dict) else {}
        model = str(body.get("model") or "claude-stub")
        if path.endswith("/count_tokens"):
            req.kind = "count"
            self.owner._record(req)
            return self._send(200, {"input_tokens": max(1, len(req.raw) // 4)})
        req.kind = "stream" if body.get("stream") else "json"
        self.owner._record(req)
        text = self.owner._text_for(req, tools=True)
        msg_id = "msg_" + uuid.uuid4().hex[:24]
        if req.kind == "stream":
            return self._send(200, sse(anthropic_events(model, text, msg_id)), "text/event-stream")
        return self._send(200, anthropic_message(model, text, msg_id))

    def _openai(self):
        req = self._request("openai", "stream")
        body = req.body if isinstance(req.body, dict) else {}
        model = str(body.get("model") or "gpt-stub")
        self.owner._record(req)
        text = self.owner._text_for(req)
        resp_id = "resp_" + uuid.uuid4().hex[:24]
        if body.get("stream") is False:
            req.kind = "json"
            events = openai_events(model, text, resp_id)
            return self._send(200, events[-1][1]["response"])
        return self._send(200, sse(openai_events(model, text, resp_id)), "text/event-stream")

    def _gemini(self, path):
        req = self._request("gemini")
        model_action = path.rsplit("/", 1)[-1]
        model, _, action = model_action.partition(":")
        body = req.body if isinstance(req.body, dict) else {}
        if action == "countTokens":
            req.kind = "count"
            self.owner._record(req)
            return self._send(200, {"totalTokens": max(1, len(req.raw) // 4)})
        if action in ("embedContent", "batchEmbedContents"):
            req.kind = "meta"
            self.owner._record(req)
            emb = {"values": [0.0] * 8}
            return self._send(200, {"embedding": emb} if action == "embedContent"
                              else {"embeddings": [emb] * len(body.get("requests") or [1])})
        schema = _gemini_schema(body)
        if schema is not None:
            req.kind = "routing"
            text = json.dumps(value_for_schema(schema) if schema else {"complexity_score": 1})
        else:
            req.kind = "stream" if action == "streamGenerateContent" else "json"
            text = None
        self.owner._record(req)
        if text is None:
            text = self.owner._text_for(req)
        resp = gemini_response(model, text)
        if action == "streamGenerateContent":
            if req.query.get("alt") == ["sse"]:
                return self._send(200, sse([(None, resp)]), "text/event-stream")
            return self._send(200, [resp])
        return self._send(200, resp)
