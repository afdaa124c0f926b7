"""Exceptions of the flare package: one class per libflare result code.

Every exception is a FlareError with the code and the library's message,
which carries the switch's own explanation where the switch gave one.
"""

import builtins
import re

__all__ = [
    "FlareError", "InvalidArgumentError", "HandleError", "RefusedError", "TimeoutError",
    "SwitchError", "ClosedError", "ForkError", "FlareOSError", "AbortedError",
]

# Result codes of flare.h.
OK, EINVAL, EHANDLE, EREFUSED, ETIMEOUT, ESWITCH, ECLOSED, EFORK, EIO, EABORTED = range(10)


class FlareError(Exception):
    """A libflare call failed: code is flare.h's FLARE_E* value, message its text."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class InvalidArgumentError(FlareError, ValueError):
    """An argument out of range: an option, a buffer's size, dtype or layout."""


class HandleError(FlareError):
    """A session that is closed (or never was one)."""


class RefusedError(FlareError):
    """The switch refused the join; the message is the switch's reason."""


class TimeoutError(FlareError, builtins.TimeoutError):
    """A join or an allreduce did not complete in time.

    ranks lists the ranks the switch said it waits for (empty when it did
    not say: then the switch may be unreachable)."""

    def __init__(self, code, message):
        super().__init__(code, message)
        self.ranks = waiting_ranks(message)


class SwitchError(FlareError):
    """The switch failed the job during a call."""


class ClosedError(FlareError):
    """The session was closed while the call ran."""


class ForkError(FlareError):
    """libflare used in a child forked after it was loaded (use spawn or forkserver)."""


class FlareOSError(FlareError, OSError):
    """A socket or other system error."""


class AbortedError(FlareError):
    """Another member's call failed and it aborted the job for every member.

    rank is the rank that aborted (None if the message does not say);
    ranks lists the ranks the switch waited for when the abort came from
    that rank's timeout (often a moment before this rank's own). Close the
    session and join again."""

    def __init__(self, code, message):
        super().__init__(code, message)
        m = _ABORTED_BY.search(message)
        self.rank = int(m.group(1)) if m else None
        self.ranks = waiting_ranks(message)


_CLASSES = {
    EINVAL: InvalidArgumentError, EHANDLE: HandleError, EREFUSED: RefusedError,
    ETIMEOUT: TimeoutError, ESWITCH: SwitchError, ECLOSED: ClosedError,
    EFORK: ForkError, EIO: FlareOSError, EABORTED: AbortedError,
}

_WAITS = re.compile(r"waits? for ranks? ([0-9, ]+)")
_ABORTED_BY = re.compile(r"aborted by rank ([0-9]+)")


def waiting_ranks(message):
    """The ranks a timeout's message says the switch waits for, e.g. [2]."""
    m = _WAITS.search(message)
    if not m:
        return []
    return [int(x) for x in m.group(1).replace(" ", "").split(",") if x]


def error_for(code, message):
    """The exception for a result code."""
    return _CLASSES.get(code, FlareError)(code, message)
