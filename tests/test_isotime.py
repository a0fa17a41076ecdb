"""ctxd.isotime: the one ISO 8601 reader and writer."""

import datetime as dt
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxd import isotime
from ctxd.errors import CtxdError, ExitCode

# 1000-01-01 .. 9999-12-31T23:59:59: the years strftime writes with four digits on every libc
SECONDS = st.integers(min_value=-30610224000, max_value=253402300799)
DAY = 86400
OFFSETS = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59)  # minutes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_format_utc_is_the_z_form():
    assert isotime.format_utc(0) == "1970-01-01T00:00:00Z"
    assert isotime.format_utc(1796040000.9) == "2026-11-30T12:00:00Z"  # fractions dropped, not rounded
    assert isotime.format_minute(1796040000) == "2026-11-30 12:00"


def test_format_utc_defaults_to_now():
    before = math.floor(dt.datetime.now(dt.timezone.utc).timestamp())
    got = isotime.parse(isotime.format_utc())
    assert before <= got <= before + 120


@given(SECONDS)
def test_format_then_parse_round_trips(ts):
    text = isotime.format_utc(ts)
    assert len(text) == 20 and text.endswith("Z")
    assert isotime.parse(text) == ts
    assert isotime.normalize(text) == text


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_fractions_are_dropped_by_format(ts):
    assert isotime.parse(isotime.format_utc(ts)) == math.floor(ts)


@given(SECONDS.filter(lambda s: -30610224000 + DAY <= s <= 253402300799 - DAY), OFFSETS)
def test_offsets_mean_the_same_instant(ts, minutes):
    tz = dt.timezone(dt.timedelta(minutes=minutes))
    local = dt.datetime.fromtimestamp(ts, tz)
    text = local.isoformat()  # e.g. 2026-11-30T14:00:00+02:00
    assert isotime.parse(text) == ts
    assert isotime.normalize(text) == isotime.format_utc(ts)
    naive = local.replace(tzinfo=None).isoformat()
    assert isotime.parse(naive) == ts + minutes * 60  # no offset means UTC


@given(st.integers(min_value=10**11 + 1, max_value=10**14))
def test_numbers_above_1e11_are_milliseconds(ms):
    assert isotime.parse(ms) == ms / 1000.0
    assert isotime.parse(float(ms)) == ms / 1000.0


@given(st.integers(min_value=-10**10, max_value=10**11))
def test_smaller_numbers_are_seconds(s):
    assert isotime.parse(s) == float(s)


@pytest.mark.parametrize("value", [None, True, False, "", "   ", "yesterday", "2026-13-01", "2026-11-31",
                                   float("nan"), float("inf"), -float("inf"), [], {}, b"2026-11-30"])
def test_what_is_not_a_time_is_none(value):
    assert isotime.parse(value) is None
    assert isotime.normalize(value) is None


@pytest.mark.parametrize("text, expected", [
    ("2026-11-30T12:00:00Z", "2026-11-30T12:00:00Z"),
    ("2026-11-30T12:00:00.123456Z", "2026-11-30T12:00:00Z"),
    ("2026-11-30 12:00:00", "2026-11-30T12:00:00Z"),  # what v1 archives wrote
    ("2026-11-30T13:30:00+01:30", "2026-11-30T12:00:00Z"),
    ("2026-11-30", "2026-11-30T00:00:00Z"),
    ("  2026-11-30T12:00Z ", "2026-11-30T12:00:00Z"),
])
def test_normalize(text, expected):
    assert isotime.normalize(text) == expected


def test_parse_when_ages_count_back_from_now():
    now = 2_000_000_000.0
    assert isotime.parse_when("90s", now=now) == now - 90
    assert isotime.parse_when("30m", now=now) == now - 1800
    assert isotime.parse_when("12h", now=now) == now - 12 * 3600
    assert isotime.parse_when("30d", now=now) == now - 30 * 86400
    assert isotime.parse_when(" 2w ", now=now) == now - 14 * 86400


def test_parse_when_dates_and_datetimes():
    assert isotime.parse_when("2026-11-30") == isotime.parse("2026-11-30T00:00:00Z")
    assert isotime.parse_when("2026-11-30T12:00") == 1796040000
    assert isotime.parse_when("2026-11-30T14:00+02:00") == 1796040000


@pytest.mark.parametrize("text", ["", "soon", "30x", "d", "-3d", "2026-02-30"])
def test_parse_when_refuses_with_a_usage_error(text):
    with pytest.raises(CtxdError) as e:
        isotime.parse_when(text)
    assert e.value.exit_code == ExitCode.USAGE
    assert repr(text) in e.value.message and "30d" in e.value.message


def test_import_is_cheap():
    # -S: without site, which loads modules for .pth files and would hide them
    code = ("import sys; import ctxd.isotime; "
            "print(sorted(m for m in ('datetime', '_datetime', 'ctxd.errors', 're', 'click') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=REPO)).stdout
    assert out.strip() == "[]"
