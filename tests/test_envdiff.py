"""The environment transition as pure values: restore, apply, PATH rules."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxd.activation import envdiff
from ctxd.activation.detectors import Plan
from ctxd.activation.state import decode, encode


def plan(root="/p", sets=(), prepend=()):
    p = Plan(root)
    for s in sets:
        p.set(*s) if len(s) != 2 or s[1] is not None else p.unset(s[0], "t")
    for e in prepend:
        p.path(e, "t")
    return p


def activate(env, p, old=None):
    kept = ()
    if old and old.root == p.root:
        kept = set(old.path_added) & {e for e, _ in p.prepend}
    base = envdiff.restore(env, old, keep_path=kept)
    return envdiff.apply(base, p, kept=kept)


def test_enter_then_leave_restores_exactly_set_empty_and_unset():
    env = {"PATH": "/usr/bin:/bin", "EMPTY": "", "KEEP": "k"}
    p = plan(sets=[("EMPTY", "full", "t"), ("NEW", "n", "t"), ("KEEP", None)], prepend=["/p/bin"])
    target, state = activate(env, p)
    assert target == {"PATH": "/p/bin:/usr/bin:/bin", "EMPTY": "full", "NEW": "n"}
    assert state.snap == {"EMPTY": "", "NEW": None, "KEEP": "k"}
    assert envdiff.restore(target, state) == env


def test_user_change_inside_survives_leaving():
    env = {"PATH": "/usr/bin", "X": "old"}
    target, state = activate(env, plan(sets=[("X", "ours", "t")], prepend=["/p/bin"]))
    target["X"] = "mine"
    target["PATH"] = "/my/bin:" + target["PATH"]
    back = envdiff.restore(target, state)
    assert back["X"] == "mine"
    assert back["PATH"] == "/my/bin:/usr/bin"


def test_user_reorder_and_deliberate_duplicate_survive():
    env = {"PATH": "/a:/b"}
    target, state = activate(env, plan(prepend=["/p/bin"]))
    target["PATH"] = "/b:/p/bin:/a:/b"  # reordered and duplicated /b on purpose
    assert envdiff.restore(target, state)["PATH"] == "/b:/a:/b"


def test_no_duplicate_when_entry_already_on_path_and_it_stays_on_leave():
    env = {"PATH": "/p/bin:/usr/bin"}
    target, state = activate(env, plan(prepend=["/p/bin"]))
    assert target["PATH"] == "/p/bin:/usr/bin"
    assert state.path_added == []
    assert envdiff.restore(target, state)["PATH"] == "/p/bin:/usr/bin"


def test_switching_ten_times_does_not_grow_path():
    env = {"PATH": "/usr/bin:/bin"}
    a, b = plan("/a", prepend=["/a/nm"]), plan("/b", prepend=["/b/nm"])
    cur, state = activate(env, a)
    first_len = len(cur["PATH"].split(":"))
    for _ in range(10):
        for p in (b, a):
            cur, state = activate(cur, p, state)
    assert len(cur["PATH"].split(":")) == first_len
    assert envdiff.restore(cur, state) == env


def test_reload_same_root_keeps_our_entry_where_user_put_it():
    env = {"PATH": "/usr/bin"}
    p = plan(prepend=["/p/bin"])
    cur, state = activate(env, p)
    cur["PATH"] = "/my/bin:" + cur["PATH"]  # user puts their dir in front
    cur2, state2 = activate(cur, p, state)
    assert cur2["PATH"] == "/my/bin:/p/bin:/usr/bin"
    assert state2.path_added == ["/p/bin"]
    assert envdiff.restore(cur2, state2)["PATH"] == "/my/bin:/usr/bin"


def test_never_an_empty_path_entry():
    target, state = activate({}, plan(prepend=["/p/bin"]))
    assert target["PATH"] == "/p/bin"
    assert "PATH" not in envdiff.restore(target, state)
    target, state = activate({"PATH": ""}, plan(prepend=["/p/bin"]))
    assert target["PATH"] == "/p/bin"
    assert envdiff.restore(target, state)["PATH"] == ""


def test_only_if_unset_keeps_the_users_value():
    p = plan(sets=[("NODE_ENV", "development", "t", True)])
    target, state = activate({"NODE_ENV": "production"}, p)
    assert target["NODE_ENV"] == "production" and "NODE_ENV" not in state.snap
    target, state = activate({}, p)
    assert target["NODE_ENV"] == "development"


def test_value_already_right_is_not_recorded():
    target, state = activate({"X": "1"}, plan(sets=[("X", "1", "t")]))
    assert state.snap == {} and target == {"X": "1"}


values = st.one_of(st.none(), st.text(max_size=8))
names = st.sampled_from(["A", "B", "C", "PATH_LIKE"])
entries = st.lists(st.sampled_from(["/u", "/v", "/w", "/x"]), max_size=4)


@settings(max_examples=300)
@given(env=st.dictionaries(names, st.text(max_size=8)), path=entries,
       sets=st.lists(st.tuples(names, values), max_size=4), prepend=st.lists(st.sampled_from(["/p1", "/p2", "/u"]), max_size=3))
def test_property_enter_leave_is_identity(env, path, sets, prepend):
    env = dict(env)
    env["PATH"] = ":".join(path)
    p = plan(sets=[(n, v, "t") if v is not None else (n, None) for n, v in sets], prepend=prepend)
    target, state = activate(env, p)
    # ctxd never adds an empty entry (one would mean "the current directory")
    assert envdiff.split_path(target["PATH"]).count("") <= envdiff.split_path(env["PATH"]).count("")
    roundtrip = decode(encode(state))
    assert roundtrip == state
    assert envdiff.restore(target, roundtrip) == env
