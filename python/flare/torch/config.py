"""The backend's configuration from environment variables, as PyTorch
users configure NCCL and gloo."""

import dataclasses
import os

from ..dtypes import DESIGNS


@dataclasses.dataclass(frozen=True)
class Config:
    """Where and how to reduce. from_env reads:

    FLARE_SWITCH        the switch's UDP address (default 127.0.0.1:7470)
    FLARE_DESIGN        auto, single, multi or tree (default auto)
    FLARE_REPRODUCIBLE  1: bit-identical float sums (the tree design)
    FLARE_DEADLINE      bounded time: milliseconds after a block's first
                        packet that the switch releases it without late
                        ranks (default 0: exact)
    FLARE_MULTICAST     1: ask for the results on the job's multicast
                        group (a switch run with --multicast), sent once
                        for all ranks instead of once to each
    FLARE_BUSY_POLL     microseconds a rank's sockets keep polling once
                        they find nothing to read before they sleep
                        (default 50; 0: sleep at once; at most 10000)
    FLARE_TIMEOUT       seconds one allreduce may take (default 30)
    FLARE_JOIN_TIMEOUT  seconds a job's join may take (default 10)
    FLARE_FALLBACK      gloo (default): reduce with gloo when the switch
                        refuses or cannot be reached; error: raise
    FLARE_MAX_JOBS      jobs (one per dtype, op and tensor size) a group
                        keeps joined at once (default 16)
    """
    switch: str = "127.0.0.1:7470"
    design: str = "auto"
    reproducible: bool = False
    deadline_ms: int = 0
    multicast: bool = False
    busy_poll_us: int = 50
    timeout: float = 30.0
    join_timeout: float = 10.0
    fallback: str = "gloo"
    max_jobs: int = 16

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        c = cls(
            switch=env.get("FLARE_SWITCH", cls.switch),
            design=env.get("FLARE_DESIGN", cls.design).lower(),
            reproducible=_flag(env, "FLARE_REPRODUCIBLE"),
            deadline_ms=_number(env, "FLARE_DEADLINE", cls.deadline_ms, int),
            multicast=_flag(env, "FLARE_MULTICAST"),
            busy_poll_us=_number(env, "FLARE_BUSY_POLL", cls.busy_poll_us, int),
            timeout=_number(env, "FLARE_TIMEOUT", cls.timeout, float),
            join_timeout=_number(env, "FLARE_JOIN_TIMEOUT", cls.join_timeout, float),
            fallback=env.get("FLARE_FALLBACK", cls.fallback).lower(),
            max_jobs=_number(env, "FLARE_MAX_JOBS", cls.max_jobs, int),
        )
        c.validate()
        return c

    def validate(self):
        if self.design not in DESIGNS:
            raise ValueError(f"FLARE_DESIGN={self.design!r}: must be one of {', '.join(DESIGNS)}")
        if self.fallback not in ("gloo", "error"):
            raise ValueError(f"FLARE_FALLBACK={self.fallback!r}: must be gloo or error")
        if self.max_jobs < 1:
            raise ValueError(f"FLARE_MAX_JOBS={self.max_jobs}: must be at least 1")
        if not 0 <= self.busy_poll_us <= 10000:
            raise ValueError(f"FLARE_BUSY_POLL={self.busy_poll_us}: must be in 0..10000 microseconds")
        if self.deadline_ms < 0 or self.timeout <= 0 or self.join_timeout <= 0:
            raise ValueError("FLARE_DEADLINE must be >= 0 and FLARE_TIMEOUT, FLARE_JOIN_TIMEOUT > 0")


def _flag(env, name):
    v = env.get(name, "0").strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={v!r}: must be 0 or 1")


def _number(env, name, default, kind):
    v = env.get(name)
    if v is None or v.strip() == "":
        return default
    try:
        return kind(v)
    except ValueError:
        raise ValueError(f"{name}={v!r}: must be a number") from None
