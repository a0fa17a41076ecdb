"""A small JSON codec for the hot path.

The standard json module imports ``re`` (through json.decoder and
json.encoder), and ``re`` costs ~9 ms of CPU at interpreter start-up here:
a third of what ``ctxd export`` is allowed. ctxd's own state and caches hold
only objects, arrays, strings, integers, floats, booleans and null, which this
module writes as compact, ASCII-only JSON and reads back. The output is
standard JSON (tests check both directions against the json module), so the
state stays portable between Python versions and inspectable by hand.
"""

_ESC = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _str(s):
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'  # nothing to escape (most paths and names): no loop
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in _ESC:
            out.append(_ESC[ch])
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif o < 0x10000:
            out.append("\\u%04x" % o)
        else:  # astral: a surrogate pair, as JSON requires
            o -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
    out.append('"')
    return "".join(out)


def dumps(obj):
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, str):
        return _str(obj)
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            raise ValueError("out of range float values are not JSON compliant")
        return repr(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(_str(k) + ":" + dumps(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in obj) + "]"
    raise TypeError(f"cannot encode {type(obj).__name__}")


_WS = " \t\n\r"
_LIT = {"null": None, "true": True, "false": False}
_UNESC = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def loads(text):
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")
    value, i = _value(text, _skip(text, 0))
    if _skip(text, i) != len(text):
        raise ValueError(f"extra data at {i}")
    return value


def _skip(s, i):
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _value(s, i):
    if i >= len(s):
        raise ValueError("unexpected end")
    ch = s[i]
    if ch == "{":
        obj = {}
        i = _skip(s, i + 1)
        if i < len(s) and s[i] == "}":
            return obj, i + 1
        while True:
            if i >= len(s) or s[i] != '"':
                raise ValueError(f"expected a key at {i}")
            key, i = _string(s, i)
            i = _skip(s, i)
            if i >= len(s) or s[i] != ":":
                raise ValueError(f"expected ':' at {i}")
            obj[key], i = _value(s, _skip(s, i + 1))
            i = _skip(s, i)
            if i < len(s) and s[i] == ",":
                i = _skip(s, i + 1)
            elif i < len(s) and s[i] == "}":
                return obj, i + 1
            else:
                raise ValueError(f"expected ',' or '}}' at {i}")
    if ch == "[":
        arr = []
        i = _skip(s, i + 1)
        if i < len(s) and s[i] == "]":
            return arr, i + 1
        while True:
            v, i = _value(s, i)
            arr.append(v)
            i = _skip(s, i)
            if i < len(s) and s[i] == ",":
                i = _skip(s, i + 1)
            elif i < len(s) and s[i] == "]":
                return arr, i + 1
            else:
                raise ValueError(f"expected ',' or ']' at {i}")
    if ch == '"':
        return _string(s, i)
    for word, val in _LIT.items():
        if s.startswith(word, i):
            return val, i + len(word)
    j = i
    while j < len(s) and s[j] in "+-0123456789.eE":
        j += 1
    tok = s[i:j]
    if not tok:
        raise ValueError(f"unexpected {ch!r} at {i}")
    if tok.lstrip("-").isdigit():
        return int(tok), j
    return float(tok), j


def _string(s, i):
    out = []
    i += 1
    n = len(s)
    while True:
        j = i
        while j < n and s[j] != '"' and s[j] != "\\":
            j += 1
        if j >= n:
            raise ValueError("unterminated string")
        chunk = s[i:j]
        for c in chunk:
            if ord(c) < 0x20:
                raise ValueError("control character in string")
        out.append(chunk)
        if s[j] == '"':
            return "".join(out), j + 1
        esc = s[j + 1:j + 2]
        if esc == "u":
            hexd = s[j + 2:j + 6]
            if len(hexd) != 4 or any(c not in "0123456789abcdefABCDEF" for c in hexd):
                raise ValueError(f"bad \\u escape at {j}")
            code = int(hexd, 16)
            i = j + 6
            if 0xD800 <= code < 0xDC00 and s[i:i + 2] == "\\u":
                low_hex = s[i + 2:i + 6]
                if len(low_hex) == 4 and all(c in "0123456789abcdefABCDEF" for c in low_hex):
                    low = int(low_hex, 16)
                    if 0xDC00 <= low < 0xE000:
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
            out.append(chr(code))
        elif esc in _UNESC:
            out.append(_UNESC[esc])
            i = j + 2
        else:
            raise ValueError(f"bad escape at {j}")
