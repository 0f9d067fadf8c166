"""The Ray executor: a batch run's items read by Ray Data and scored by a pool of Ray actors.

May import: `engine.run` and what it may import.
"""
