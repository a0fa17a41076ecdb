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

    from ctxd.activation import minijson

    out = minijson.dumps(value)
    assert out.isascii()
    assert json.loads(out) == value
    assert minijson.loads(out) == value
    assert minijson.loads(json.dumps(value)) == value
    assert minijson.loads(json.dumps(value, indent=2, ensure_ascii=False)) == value


@pytest.mark.parametrize("bad", ["", "{", "[1,]", '{"a" 1}', '"\\x"', '"abc', "nul", "[1] 2", '"\\u12"', '"a\nb"'])
def test_minijson_rejects_malformed(bad):
    from ctxd.activation import minijson

    with pytest.raises(ValueError):
        minijson.loads(bad)
