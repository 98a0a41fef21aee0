"""Suite-wide defaults.

Engines built without an embedder use the lexical hashing embedder in tests (the
offline default, multilingual E5, costs 5-30 ms of CPU per text, which thousands of
saves and kill -9 timing windows cannot afford). The variable is inherited by the
servers and writers the tests start. Tests of E5 itself and of the real default
(tests/providers/test_multilingual_embedder.py) build it explicitly or unset the variable.
"""

from __future__ import annotations

import os

os.environ.setdefault("KNOWHUB_EMBEDDING__PROVIDER", "hashing")
