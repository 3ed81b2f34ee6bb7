"""Search: keyword, vector and hybrid search over messages, memories and facts.

`index.SearchIndex` is the index, written once; `sqlite.py` and `postgres.py` hold each
database's primitives (`backend.SearchBackend`); `embeddings.py` the model, `indexer.py` the
background thread and `worker.py` the index worker process. Importing this package loads
none of the search stack (numpy, the model): `open_search_index` does, when asked.
"""

from recall.search.open import open_search_index, search_index

__all__ = ["open_search_index", "search_index"]
