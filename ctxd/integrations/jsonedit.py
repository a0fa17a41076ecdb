"""Edit a JSON (or JSON-with-comments) document in place: change its value, keep its text.

``edit(text, new_value)`` returns *text* changed only where its value and
*new_value* differ: members and list items that stay keep their bytes (and the
comments, spacing, indentation, key order and line ends around them);
removed ones go with their separator; new ones are written in the style of
the container they join (its indentation and separators, one line or many).
Removing what an edit added gives the original text back. Every result is
parsed again and compared with *new_value*; ``EditError`` when the edit
cannot be made that way (the caller then refuses rather than rewrite).

This is what keeps ``ctxd chat install`` from re-indenting a user's settings.
"""

import json

from ctxd.errors import ConfigError

_decoder = json.JSONDecoder()


class EditError(ConfigError):
    """Not valid JSON (line and col of where), or an edit that cannot keep the rest as written."""

    def __init__(self, message, pos=None, text=None):
        super().__init__(message)
        self.line = self.col = None
        if pos is not None and text is not None:
            self.line = text.count("\n", 0, pos) + 1
            self.col = pos - (text.rfind("\n", 0, pos) + 1) + 1


class Node:
    __slots__ = ("kind", "start", "end", "value", "keys", "children")

    def __init__(self, kind, start):
        self.kind = kind  # "obj", "arr" or "val"
        self.start = start
        self.end = start
        self.value = None
        self.keys = []  # obj: (key, key_start) per child
        self.children = []


class _Parser:
    def __init__(self, text, comments):
        self.text = text
        self.comments = comments
        self.has_comments = False

    def ws(self, i):
        t, n = self.text, len(self.text)
        while i < n:
            c = t[i]
            if c in " \t\n\r":
                i += 1
            elif c == "/" and self.comments and t.startswith("//", i):
                j = t.find("\n", i)
                i = n if j < 0 else j
                self.has_comments = True
            elif c == "/" and self.comments and t.startswith("/*", i):
                j = t.find("*/", i + 2)
                if j < 0:
                    raise EditError("unterminated comment", i, t)
                i = j + 2
                self.has_comments = True
            else:
                break
        return i

    def value(self, i):
        t = self.text
        if i >= len(t):
            raise EditError("expected a value, found the end of the file", i, t)
        c = t[i]
        if c == "{":
            node = Node("obj", i)
            node.value = {}
            i = self.ws(i + 1)
            if t.startswith("}", i):
                node.end = i + 1
                return node
            while True:
                if not t.startswith('"', i):
                    raise EditError("expected a double-quoted key", i, t)
                key, j = json.decoder.scanstring(t, i + 1)
                if key in node.value:
                    raise EditError(f"the key {key!r} is there twice", i, t)
                ks = i
                j = self.ws(j)
                if not t.startswith(":", j):
                    raise EditError("expected ':'", j, t)
                child = self.value(self.ws(j + 1))
                node.keys.append((key, ks))
                node.children.append(child)
                node.value[key] = child.value
                i = self.ws(child.end)
                if t.startswith(",", i):
                    i = self.ws(i + 1)
                    continue
                if t.startswith("}", i):
                    node.end = i + 1
                    return node
                raise EditError("expected ',' or '}'", i, t)
        if c == "[":
            node = Node("arr", i)
            node.value = []
            i = self.ws(i + 1)
            if t.startswith("]", i):
                node.end = i + 1
                return node
            while True:
                child = self.value(i)
                node.children.append(child)
                node.value.append(child.value)
                i = self.ws(child.end)
                if t.startswith(",", i):
                    i = self.ws(i + 1)
                    continue
                if t.startswith("]", i):
                    node.end = i + 1
                    return node
                raise EditError("expected ',' or ']'", i, t)
        try:
            value, end = _decoder.raw_decode(t, i)
        except json.JSONDecodeError as e:
            raise EditError(e.msg, e.pos, t) from None
        node = Node("val", i)
        node.value, node.end = value, end
        return node


def parse(text, comments=False):
    """(root Node, whether there are comments). EditError (with line/col) when invalid."""
    p = _Parser(text, comments)
    i = p.ws(0)
    root = p.value(i)
    if p.ws(root.end) != len(text):
        raise EditError("extra data after the document", p.ws(root.end), text)
    return root, p.has_comments


def loads(text, comments=False):
    return parse(text, comments)[0].value


def same(a, b):
    """JSON equality: True is not 1, 1 is not 1.0, key order does not matter."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


class _Style:
    def __init__(self, text, root):
        self.text = text
        self.nl = "\r\n" if "\r\n" in text else "\n"
        self.unit = None
        self.kv = None
        self._scan(root)
        self.unit = self.unit or "  "
        self.kv = self.kv if self.kv is not None else ": "

    def _scan(self, node):
        for idx, child in enumerate(node.children):
            if node.kind == "obj" and self.kv is None:
                key_start = node.keys[idx][1]
                _k, key_end = json.decoder.scanstring(self.text, key_start + 1)
                between = self.text[key_end:child.start]
                if "\n" not in between and "/" not in between:
                    self.kv = between
            if self.unit is None and self.multiline(node):
                outer, inner = self.indent_at(node.start), self.indent_at(child.start)
                if inner.startswith(outer) and len(inner) > len(outer):
                    self.unit = inner[len(outer):]
            self._scan(child)

    def indent_at(self, pos):
        line = self.text.rfind("\n", 0, pos) + 1
        j = line
        while j < pos and self.text[j] in " \t":
            j += 1
        return self.text[line:j]

    def multiline(self, node):
        first = node.children[0].start if node.children else node.end
        return "\n" in self.text[node.start:first]

    def item_sep(self, node):
        """The text between one item's end and the next item's start in a one-line container."""
        if len(node.children) >= 2:
            between = self.text[node.children[0].end:self._child_start(node, 1)]
            if "\n" not in between and "/" not in between:
                return between
        return "," + (" " if self.kv.endswith(" ") else "")

    def _child_start(self, node, i):
        return node.keys[i][1] if node.kind == "obj" else node.children[i].start

    def render(self, value, indent, multiline):
        if multiline:
            out = json.dumps(value, indent=self.unit, ensure_ascii=False, separators=(",", self.kv))
            return out.replace("\n", self.nl + indent)
        sep = "," + (" " if self.kv.endswith(" ") else "")
        return json.dumps(value, ensure_ascii=False, separators=(sep, self.kv))


def _lcs(a, b):
    """Pairs (i, j) of a longest common subsequence of a and b under same()."""
    n, m = len(a), len(b)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            dp[i][j] = dp[i + 1][j + 1] + 1 if same(a[i], b[j]) else max(dp[i + 1][j], dp[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if same(a[i], b[j]):
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


class _Editor:
    def __init__(self, text, root):
        self.text = text
        self.style = _Style(text, root)
        self.patches = []  # (start, end, replacement)

    def node(self, node, new, multiline=True):
        if same(node.value, new):
            return
        if node.kind == "obj" and isinstance(new, dict):
            return self.obj(node, new)
        if node.kind == "arr" and isinstance(new, list):
            return self.arr(node, new)
        self.patches.append((node.start, node.end, self.style.render(new, self.style.indent_at(node.start), multiline)))

    def obj(self, node, new):
        old_keys = [k for k, _ in node.keys]
        kept = [k for k in old_keys if k in new]
        added = [k for k in new if k not in node.value]
        if list(new)[:len(kept)] != kept:
            raise EditError("the keys of an object would change order")
        plan = []  # per old child: the new value, or _GONE
        for k in old_keys:
            plan.append(new[k] if k in new else _GONE)
        self.container(node, plan, [(len(node.children), [(k, new[k]) for k in added])])

    def arr(self, node, new):
        old = node.value
        pairs = _lcs(old, new)
        plan = [_GONE] * len(old)
        inserts = []  # (before old index, [(None, value)])
        anchors = pairs + [(len(old), len(new))]
        pi, pj = 0, 0
        for ai, aj in anchors:
            gap_old, gap_new = list(range(pi, ai)), list(range(pj, aj))
            # an item changed in place (a group that lost or gained a hook) stays where it is
            while gap_old and gap_new and isinstance(old[gap_old[0]], dict) and isinstance(new[gap_new[0]], dict) \
                    and len(gap_old) >= len(gap_new):
                plan[gap_old.pop(0)] = new[gap_new.pop(0)]
            if gap_new:
                inserts.append((ai, [(None, new[j]) for j in gap_new]))
            if ai < len(old):
                plan[ai] = old[ai]
            pi, pj = ai + 1, aj + 1
        self.container(node, plan, inserts)

    def _member(self, key, value, indent, multiline):
        text = self.style.render(value, indent, multiline)
        return text if key is None else json.dumps(key, ensure_ascii=False) + self.style.kv + text

    def container(self, node, plan, inserts):
        """Apply per-child plans (new value or _GONE) and insertions [(before index, items)]."""
        t, st = self.text, self.style
        n = len(node.children)
        starts = [st._child_start(node, i) for i in range(n)]
        ends = [c.end for c in node.children]
        alive = [i for i in range(n) if plan[i] is not _GONE]
        inserts = [(b, items) for b, items in inserts if items]
        if not alive:
            items = [it for _b, its in inserts for it in its]
            if not items and not n:
                return
            inner_start, inner_end = node.start + 1, node.end - 1
            if not items:
                self.patches.append((inner_start, inner_end, ""))
                return
            base = st.indent_at(node.start)
            multiline = st.multiline(node) if n else True
            if multiline:
                ind = base + st.unit if not n else st.indent_at(starts[0])
                body = ("," + st.nl + ind).join(self._member(k, v, ind, True) for k, v in items)
                self.patches.append((inner_start, inner_end, st.nl + ind + body + st.nl + base))
            else:
                sep = st.item_sep(node)
                self.patches.append((inner_start, inner_end, sep.join(self._member(k, v, "", False) for k, v in items)))
            return
        multiline = st.multiline(node)
        for i in alive:
            self.node(node.children[i], plan[i], multiline)
        # deletions, in runs
        i = 0
        while i < n:
            if plan[i] is not _GONE:
                i += 1
                continue
            j = i
            while j + 1 < n and plan[j + 1] is _GONE:
                j += 1
            if i == 0:
                self.patches.append((starts[0], starts[j + 1], ""))  # alive is not empty: j + 1 < n
            else:
                self.patches.append((ends[i - 1], ends[j], ""))
            i = j + 1
        for before, items in inserts:
            later = [k for k in alive if k >= before]
            if later:
                at = later[0]
                prev_comma = t.rfind(",", 0, starts[at]) if at > 0 else node.start
                gap = t[prev_comma + 1:starts[at]]
                ind = st.indent_at(starts[at]) if multiline else ""
                text = "".join(self._member(k, v, ind, multiline) + "," + gap for k, v in items)
                self.patches.append((starts[at], starts[at], text))
            else:
                last = alive[-1]
                if multiline:
                    ind = st.indent_at(starts[alive[0]])
                    text = "".join("," + st.nl + ind + self._member(k, v, ind, True) for k, v in items)
                else:
                    sep = st.item_sep(node)
                    text = "".join(sep + self._member(k, v, "", False) for k, v in items)
                self.patches.append((ends[last], ends[last], text))

    def result(self):
        out = self.text
        # apply from the end; an insertion at the point where a deletion ends goes in after it
        for start, end, rep in sorted(self.patches, key=lambda p: (p[0], p[1] - p[0]), reverse=True):
            out = out[:start] + rep + out[end:]
        return out


_GONE = object()


def edit(text, new_value, comments=False):
    """*text* (a JSON document) changed to hold *new_value*, everything else as written."""
    root, _has = parse(text, comments)
    ed = _Editor(text, root)
    ed.node(root, new_value)
    out = ed.result()
    try:
        check = loads(out, comments)
    except EditError:
        raise EditError("the edit would not give valid JSON") from None
    if not same(check, new_value):
        raise EditError("the edit would not give the intended settings")
    return out

