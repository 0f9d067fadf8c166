"""A rate limit for a whole Ray cluster: one token bucket every actor's judge takes from.

`start_bucket(rate)` starts the bucket as a Ray actor (no CPU reserved) holding one
`engine.judge.rate_limit.RateLimiter`; `ClusterRateLimiter` is its client, an object with the
async ``acquire()`` a rate-limit layer takes a token with (`engine.judge.stack.JudgeParts`), so
judge requests start at most `rate` per second across all actors and nodes together (bursts
up to max(1, rate)). Each token costs one round trip to the bucket; a cache hit takes none.
"""

from __future__ import annotations

from typing import Any

from ..judge.rate_limit import RateLimiter
from .cluster import import_ray

__all__ = ["ClusterRateLimiter", "TokenBucket", "start_bucket"]


class TokenBucket:
    """The bucket itself (run as an async Ray actor): `acquire` returns when a request may start."""

    def __init__(self, rate: float):
        self.limiter = RateLimiter(rate)

    async def acquire(self) -> None:
        await self.limiter.acquire()


class ClusterRateLimiter:
    """A client of the cluster's bucket (picklable: it holds the bucket actor's handle)."""

    def __init__(self, bucket: Any, rate: float):
        self.bucket = bucket
        self.rate = rate

    async def acquire(self) -> None:
        await self.bucket.acquire.remote()

    def __repr__(self) -> str:
        return f"ClusterRateLimiter(rate={self.rate:g})"


def start_bucket(rate: float) -> ClusterRateLimiter:
    """Start the bucket (`rate` requests per second, > 0) on the cluster this process joined;
    it ends with the run's driver. Raises `ValueError` for a rate that is not > 0."""
    RateLimiter(rate)  # checks the rate here, before an actor starts
    ray = import_ray()
    bucket = ray.remote(num_cpus=0, max_concurrency=10_000)(TokenBucket).remote(rate)
    return ClusterRateLimiter(bucket, rate)
