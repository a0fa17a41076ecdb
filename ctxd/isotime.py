"""ISO 8601 times, one way everywhere: UTC text out, unix seconds in.

ctxd writes times as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC, whole seconds) and reads
what the AI CLIs and older archives wrote: ISO 8601 with ``Z`` or an offset
(naive means UTC), or a number of seconds or milliseconds since the epoch.
Standard library only and cheap to import (the AI CLI hooks import it);
``datetime`` is imported only when text has to be parsed.
"""

import math
import time

FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# A number above this is taken as milliseconds: 1e11 seconds is the year 5138,
# 1e11 milliseconds is March 1973.
_MS_ABOVE = 1e11

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def format_utc(ts=None):
    """Unix seconds (default: now) -> ``2026-11-30T12:00:00Z`` (fractions dropped)."""
    return time.strftime(FORMAT, time.gmtime(time.time() if ts is None else ts))


def format_minute(ts=None):
    """Unix seconds (default: now) -> ``2026-11-30 12:00``, UTC: for listings people read."""
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(time.time() if ts is None else ts))


def parse(value):
    """ISO 8601 text or a number -> unix seconds (float), or None when it is neither.

    Text: anything ``datetime.fromisoformat`` reads (``Z``, ``+02:00``, a date
    alone, a space instead of ``T``); no offset means UTC. Numbers: seconds, or
    milliseconds when above 1e11. Booleans, NaN, infinities, empty or
    unreadable text and out-of-range dates give None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v):
            return None
        return v / 1000.0 if v > _MS_ABOVE else v
    if not isinstance(value, str) or not value.strip():
        return None
    import datetime as dt

    try:
        d = dt.datetime.fromisoformat(value.strip())
        if d.tzinfo is None:
            d = d.replace(tzinfo=dt.timezone.utc)
        return d.timestamp()
    except (ValueError, OverflowError):
        return None


def normalize(value):
    """Any time :func:`parse` reads -> ``YYYY-MM-DDTHH:MM:SSZ``, or None."""
    ts = parse(value)
    if ts is None:
        return None
    try:
        return format_utc(math.floor(ts))
    except (ValueError, OverflowError, OSError):
        return None


def parse_when(value, *, now=None):
    """A command-line time -> unix seconds: ``2026-11-30``, ``2026-11-30T12:00[+02:00]`` or an age.

    An age is a whole number and a unit, counted back from *now*: ``90s``,
    ``30m``, ``12h``, ``30d``, ``2w``. A date alone is its midnight UTC. Raises
    CtxdError (a usage error, exit 2) for anything else, saying what works.
    """
    v = value.strip()
    if v[:-1].isdigit() and v[-1:] in _UNITS:
        return (time.time() if now is None else now) - int(v[:-1]) * _UNITS[v[-1]]
    ts = parse(v)
    if ts is None:
        from ctxd.errors import CtxdError, ExitCode

        raise CtxdError(f"cannot read the date {value!r} (use 2026-11-30, 2026-11-30T12:00 or 30d)",
                        ExitCode.USAGE)
    return ts
