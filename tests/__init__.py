"""recall's test suite.

`RECALL_TEST_STDLIB_SQLITE=1` runs the tests on Python's standard `sqlite3`, the module recall
falls back to where `pysqlite3-binary` has no wheel (every platform but Linux x86-64): the
wheel's module is hidden here, before anything of recall is imported. `make test` runs the
SQLite-facing part of the suite this way too, so the fallback is tested, not assumed.
"""

import os
import sys

if os.environ.get("RECALL_TEST_STDLIB_SQLITE") == "1":
    sys.modules["pysqlite3"] = None  # type: ignore[assignment]  # `import pysqlite3…` raises ImportError
