"""The judge-call cache: validated answers kept by a key over everything that decides them.

The key and entries (`base`), the cache layer over a judge (`layer`), leases for calls in flight
across processes (`lease`), and the back ends: one SQLite file (`sqlite_backend`, the default) or a
Redis server (`redis_backend`).

May import: `engine.core`, `engine.judge`.
"""
