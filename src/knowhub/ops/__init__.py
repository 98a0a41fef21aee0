"""Operations across every engine: check, compact, snapshot/restore, export/import.

A thin orchestration layer for the CLI (``knowhub admin``): it opens the engines of a data
dir and calls each engine's own methods (``check``, ``compact_storage``, batch writes ...);
the engines keep their logic. See ``docs/operations.md``.
"""

from knowhub.ops.engines import ENGINE_NAMES, Engines, open_engines
from knowhub.ops.maintenance import (
    RestoreReport,
    check_all,
    compact_all,
    list_snapshots,
    restore_all,
    snapshot_all,
)
from knowhub.ops.portable import (
    EXPORT_FILES,
    FORMAT_VERSION,
    VOLATILE_FIELDS,
    ExportOptions,
    export_all,
    import_all,
    read_export,
)

__all__ = [
    "ENGINE_NAMES",
    "EXPORT_FILES",
    "FORMAT_VERSION",
    "VOLATILE_FIELDS",
    "Engines",
    "ExportOptions",
    "RestoreReport",
    "check_all",
    "compact_all",
    "export_all",
    "import_all",
    "list_snapshots",
    "open_engines",
    "read_export",
    "restore_all",
    "snapshot_all",
]
