"""Moved to recall.search.worker (transition shim: the lead rewrites the imports and deletes it).
`python -m recall.index_worker DB` still runs the worker."""

import sys

from recall.search.worker import (  # moved: recall.search.worker
    main,
    run_worker,
    start_worker_process,
    stop_worker_process,
)

__all__ = ["main", "run_worker", "start_worker_process", "stop_worker_process"]

if __name__ == "__main__":
    sys.exit(main())
