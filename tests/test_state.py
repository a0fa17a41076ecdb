import base64
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxd.activation.state import State, decode, encode
from ctxd.errors import ExitCode, StateError

text = st.text()  # includes lone surrogates (undecodable bytes via surrogateescape)


@given(root=st.one_of(st.none(), text), snap=st.dictionaries(text, st.one_of(st.none(), text)),
       path=st.lists(text), unset=st.booleans())
def test_roundtrip_any_values(root, snap, path, unset):
    s = State(root, snap, {k: "x" for k in snap}, path, unset)
    token = encode(s)
    assert token.isascii() and "\n" not in token
    assert decode(token) == s


@pytest.mark.parametrize("token", [
    "garbage", "", "!!!!", base64.urlsafe_b64encode(b"not zlib").decode(),
    base64.urlsafe_b64encode(zlib.compress(b"[1,2]")).decode(),
    base64.urlsafe_b64encode(zlib.compress(b'{"v":99}')).decode(),
    base64.urlsafe_b64encode(zlib.compress(b'{"v":1,"snap":{"A":3},"ours":{},"path":[]}')).decode(),
    "\u00e9\u00e9",
])
def test_corrupt_tokens_raise_state_error(token):
    with pytest.raises(StateError) as e:
        decode(token)
    assert e.value.exit_code == ExitCode.STATE


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda children: st.lists(children) | st.dictionaries(text, children), max_leaves=30)


@given(json_values)
def test_minijson_is_json_both_ways(value):
    import json

    from ctxd.fastpath import minijson

    out = minijson.dumps(value)
    assert out.isascii()
    assert json.loads(out) == value
    assert minijson.loads(out) == value
    assert minijson.loads(json.dumps(value)) == value
    assert minijson.loads(json.dumps(value, indent=2, ensure_ascii=False)) == value


@pytest.mark.parametrize("bad", ["", "{", "[1,]", '{"a" 1}', '"\\x"', '"abc', "nul", "[1] 2", '"\\u12"', '"a\nb"'])
def test_minijson_rejects_malformed(bad):
    from ctxd.fastpath import minijson

    with pytest.raises(ValueError):
        minijson.loads(bad)


def _legacy_encode(state):
    """A token exactly as ctxd wrote it before the JSON tokens: JSON -> zlib -> urlsafe base64."""
    import json

    raw = json.dumps(state.to_json(), sort_keys=True, separators=(",", ":")).encode("ascii")
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii")


@given(root=st.one_of(st.none(), text), snap=st.dictionaries(text, st.one_of(st.none(), text)),
       path=st.lists(text), unset=st.booleans(), shown=st.lists(text))
def test_tokens_from_earlier_versions_still_decode(root, snap, path, unset, shown):
    # a shell started before an upgrade holds one: its environment must still come back
    s = State(root, snap, {k: "x" for k in snap}, path, unset, shown, {"cmds": ["echo bye"], "cwd": "/p"}, "ab")
    assert decode(_legacy_encode(s)) == s


def test_token_is_plain_json_without_defaults():
    import json

    s = State("/p", {"A": None}, {"A": "1"}, ["/p/bin"])
    token = encode(s)
    assert token.startswith("{")
    assert json.loads(token) == {"v": 1, "root": "/p", "snap": {"A": None}, "ours": {"A": "1"}, "path": ["/p/bin"]}
    full = State("/p", {}, {}, [], True, ["note"], {"cmds": ["x"], "timeout": 5.0, "cwd": "/p"}, "sig")
    assert decode(encode(full)) == full and json.loads(encode(full))["enter"] == "sig"


@pytest.mark.parametrize("token", ["{", '{"v":1,"snap":{},"ours":{},"path":[]} x', '{"v":1,"snap":[],"ours":{},"path":[]}',
                                   '{"v":1,"snap":{},"ours":{},"path":[],"shown":"x"}', "{\u00e9}"])
def test_corrupt_json_tokens_raise_state_error(token):
    with pytest.raises(StateError) as e:
        decode(token)
    assert e.value.exit_code == ExitCode.STATE


def test_a_big_state_is_compressed_to_stay_under_the_kernel_limit():
    """A project setting thousands of variables: as JSON its token would pass Linux's 128 KiB
    limit for one environment string (MAX_ARG_STRLEN) and every command would fail with
    E2BIG; above COMPRESS_ABOVE it is compressed and still decodes."""
    from ctxd.activation.state import COMPRESS_ABOVE

    ours = {f"CT_V{i:04d}": f"value {i} 'q' \\\\ " + "x" * 20 for i in range(3000)}
    s = State("/p", dict.fromkeys(ours), ours, ["/p/bin"])
    token = encode(s)
    assert not token.startswith("{") and len(token) < 64 * 1024, len(token)
    assert decode(token) == s
    small = State("/p", {"A": None}, {"A": "x" * (COMPRESS_ABOVE // 2)}, [])
    assert encode(small).startswith("{") and decode(encode(small)) == small
