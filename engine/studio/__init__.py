"""`scorespec studio` and `scorespec watch`: the prompt-engineering loop over the files of a folder.

- `workspace`: the folder served (its specs, prompts and datasets, and the built-in catalogue read
  only), paths outside it refused, a save validated at once (problems at ``file:line:col``);
- `labels`: the human labels file beside a dataset (JSON Lines: id, label, who, when) and the
  queue of items to label (the judge's least sure first);
- `session`: the runs of a session (a sample of a dataset run through the judge-call cache, kept
  in the store, with progress and cancel), a stage rendered for an item, two runs compared with a
  diff of their spec and prompts;
- `server`: the JSON API (Starlette) the page uses, the page itself (`assets/`), the file watcher;
- `watch`: the terminal loop of ``scorespec watch`` (a run on every save, the comparison with the
  last one).

The web stack (starlette, uvicorn, watchfiles) is the ``studio`` extra, imported only here.

May import: `engine.analysis`, `engine.run` and what they may import.
"""
