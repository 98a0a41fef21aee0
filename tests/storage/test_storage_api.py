"""The public surface of knowhub.storage is what docs/dev/contracts.md lists."""

from __future__ import annotations

import knowhub.storage as storage


def test_public_names() -> None:
    assert sorted(storage.__all__) == [
        "FileLock",
        "JsonlLog",
        "atomic_write_bytes",
        "atomic_write_json",
        "atomic_write_text",
        "create_private_file",
        "create_snapshot",
        "ensure_dir",
        "fsync_dir",
        "list_snapshots",
        "open_private",
        "restore_snapshot",
        "safe_join",
    ]
    for name in storage.__all__:
        assert callable(getattr(storage, name))
