"""The Ray executor: a batch run's items read by Ray Data and scored by a pool of Ray actors
(`engine.ray.runner.RayExecutor`, an `engine.run.executor.Executor`).

May import: `engine.run` and what it may import.
"""
