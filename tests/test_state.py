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
