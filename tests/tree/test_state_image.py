"""The state image (knowhub.tree.image): an open from the image plus the change-log tail
must give the same tree as a load of the JSONL files, and any image that cannot be
trusted must be ignored (logged) in favour of the JSONL load."""

from __future__ import annotations

import logging
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowhub.errors import KnowhubError
from knowhub.tree import KeywordTree, StubLLMClient, image
from knowhub.tree.models import ROOT_ID

# Writes random operations from another process and dies without close(): no new image,
# no checkpoint, so the next open must replay everything it wrote.
WRITER = r"""
import os, random, sys
sys.path.insert(0, sys.argv[3])
from test_state_image import random_writes
from knowhub.tree import KeywordTree, StubLLMClient
tree = KeywordTree(sys.argv[1], llm_client=StubLLMClient())
print(random_writes(tree, random.Random(int(sys.argv[2])), 60), flush=True)
os._exit(0)
"""


def random_writes(tree: KeywordTree, rng: random.Random, count: int) -> int:
    """``count`` random writes of every kind; returns how many were acknowledged."""
    acked = 0
    for n in range(count):
        live = [i for i in tree.state.nodes if i != ROOT_ID]
        infos = list(tree.state.infos)
        choice = rng.random()
        try:
            if choice < 0.25 or len(live) < 4:
                parent = rng.choice(live) if live and rng.random() < 0.7 else None
                name = rng.choice(["Fever", "發燒", "Cough", "咳嗽", f"k{n}"])  # repeats: same-name nodes
                tree.create_keyword(name, parent_id=parent, aliases=[f"a{n}", "共享"], llm_auto_place=False, dedup=False)
            elif choice < 0.4:
                node = tree.state.nodes[rng.choice(live)]
                tree.update_keyword(node.id, {"description": f"d{n}", "aliases": [f"u{n}"]})
            elif choice < 0.5:
                tree.create_info(f"info {n} 信息", keyword_ids=rng.sample(live, 2))
            elif choice < 0.55 and infos:
                tree.link_info(rng.choice(infos), rng.choice(live), "RELATED")
            elif choice < 0.6 and infos:
                info = rng.choice(infos)
                kws = list(tree.state.kw_by_info.get(info, ()))
                if kws:
                    tree.unlink_info(info, kws[0])
            elif choice < 0.68:
                tree.merge_keywords(*rng.sample(live, 2))
            elif choice < 0.76:
                tree.delete_keyword(rng.choice(live), cascade=True, info_policy=rng.choice(["reattach", "unlink"]))
            elif choice < 0.84:
                node_id, parent = rng.sample(live, 2)
                tree.move_keyword(node_id, parent)
            elif choice < 0.94:
                base = f"b{n}"
                specs = [{"id": f"{base}-0", "name": f"{base} top"}]
                specs += [{"name": f"{base} c{i}", "parent_id": f"{base}-0", "aliases": ["共享"]} for i in range(rng.randrange(1, 12))]
                tree.batch_create_keywords(specs)
            elif tree.last_operation_id:
                tree.undo(tree.last_operation_id)
            else:
                continue
        except KnowhubError:
            continue  # refused writes (cycles, conflicts) acknowledge nothing
        acked += 1
    return acked


def picture(tree: KeywordTree) -> dict[str, Any]:
    """Everything a caller can observe: rows, tombstones, maps, child order, searches."""
    state = tree.state
    names = sorted({text for n in state.nodes.values() for text in (n.name, *n.aliases)})
    searches = {}
    for name in names:
        result = tree.search(name, use_agent=False)
        searches[name] = (result.status.value, result.node.id if result.node else None,
                          [c.id for c in result.candidates], [p.id for p in result.path])
    return {
        "nodes": sorted((n.to_row() for n in state.nodes.values()), key=lambda r: r["id"]),
        "infos": sorted((i.to_row() for i in state.infos.values()), key=lambda r: r["id"]),
        "links": sorted(link.to_row()["info_id"] + "|" + link.to_row()["keyword_id"] + "|" + link.relation.value
                        for link in state.links.values()),
        "dead": sorted(state.dead_versions.items()),
        "maps": state.live_maps(),
        "children": {n: [c.id for c in tree.get_children(n)] for n in sorted(state.nodes)},
        "infos_of": {n: [i.id for i in tree.get_infos_of_keyword(n)] for n in sorted(state.nodes)},
        "searches": searches,
    }


def from_jsonl(data: Path, tmp: Path) -> dict[str, Any]:
    """The picture of a copy of ``data`` opened without its image (a rebuild from JSONL)."""
    copy = tmp / "rebuild"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(data, copy, ignore=shutil.ignore_patterns(".lock", "*.lease"))
    image.image_path(copy).unlink()
    tree = KeywordTree(copy, llm_client=StubLLMClient())
    assert tree.load_report["adopted_persisted_indexes"] is False
    try:
        return picture(tree)
    finally:
        tree.close()


def reopen_report(data: Path) -> dict[str, Any]:
    """The load report of one more open (closed again)."""
    tree = KeywordTree(data, llm_client=StubLLMClient())
    report = dict(tree.load_report)
    tree.close()
    return report


def seeded(data: Path, seed: int = 1, count: int = 80) -> None:
    tree = KeywordTree(data, llm_client=StubLLMClient())
    random_writes(tree, random.Random(seed), count)
    tree.close()


def test_open_from_image_equals_rebuild_from_jsonl(tmp_path: Path) -> None:
    data = tmp_path / "kt"
    seeded(data)
    expected = from_jsonl(data, tmp_path)
    tree = KeywordTree(data, llm_client=StubLLMClient())
    assert tree.load_report["image"] == "used" and tree.load_report["replayed_ops"] == 0
    assert picture(tree) == expected
    assert tree.check()["persisted_indexes"] == "current"
    tree.close()


def test_writes_of_another_process_after_the_image_are_replayed(tmp_path: Path) -> None:
    data = tmp_path / "kt"
    seeded(data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(image.__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", WRITER, str(data), "2", str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    acked = int(proc.stdout.strip().splitlines()[-1])
    assert acked > 30
    expected = from_jsonl(data, tmp_path)
    tree = KeywordTree(data, llm_client=StubLLMClient())
    assert tree.load_report["image"] == "used"
    assert tree.load_report["replayed_ops"] == acked
    assert picture(tree) == expected
    report = tree.check()
    assert report["ok"], report["counts"]
    assert report["persisted_indexes"] == "behind"  # a short tail is replayed, not re-imaged
    tree.close()
    assert reopen_report(data)["replayed_ops"] == 0  # close() wrote a new one


def test_a_long_tail_is_imaged_again_on_open(tmp_path: Path) -> None:
    data = tmp_path / "kt"
    seeded(data, count=10)
    writer = KeywordTree(data, llm_client=StubLLMClient())
    for i in range(12):
        writer.create_keyword(f"tail {i}", llm_auto_place=False)
    writer.store.close()  # dies: no close(), no image
    settings = {"persist_every_ops": 10}
    tree = KeywordTree(data, llm_client=StubLLMClient(), settings=settings)
    assert tree.load_report["replayed_ops"] == 12
    assert tree.check()["persisted_indexes"] == "current"
    assert tree.search("tail 11", use_agent=False).node is not None
    tree.store.close()  # dies too: the image the open wrote is all that describes the tail
    assert reopen_report(data)["replayed_ops"] == 0


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda raw: raw[:-40] + bytes(40), "damaged"),  # zeroed tail: CRC mismatch
        (lambda raw: b"not an image at all", "damaged"),
        (lambda raw: b"", "damaged"),
        (lambda raw: raw.replace(b'"python":"', b'"python":"2.', 1), "damaged"),  # another Python's marshal
    ],
)
def test_an_image_that_cannot_be_trusted_falls_back_to_jsonl(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Any, reason: str
) -> None:
    data = tmp_path / "kt"
    seeded(data, count=40)
    expected = from_jsonl(data, tmp_path)
    path = image.image_path(data)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="knowhub.tree"):
        tree = KeywordTree(data, llm_client=StubLLMClient())
    assert tree.load_report["image"].startswith(reason)
    assert any("state image" in r.getMessage() for r in caplog.records)
    assert picture(tree) == expected
    assert tree.check()["persisted_indexes"] == "current"  # the open wrote a good one
    tree.close()


def test_an_image_of_other_files_is_not_used(tmp_path: Path) -> None:
    """An image copied from another tree, or one taken before the entity files were
    rewritten (compaction by another process), does not describe these files."""
    data, other = tmp_path / "kt", tmp_path / "other"
    seeded(data, seed=3, count=30)
    seeded(other, seed=4, count=30)
    expected = from_jsonl(data, tmp_path)
    shutil.copy(image.image_path(other), image.image_path(data))
    tree = KeywordTree(data, llm_client=StubLLMClient())
    assert tree.load_report["image"] == "the change log is not the one the image was taken from"
    assert picture(tree) == expected
    tree.close()

    old_image = image.image_path(data).read_bytes()
    compactor = KeywordTree(data, llm_client=StubLLMClient())
    compactor.compact_storage()
    compactor.store.close()
    image.image_path(data).write_bytes(old_image)  # the image from before the compaction
    expected = from_jsonl(data, tmp_path)
    tree = KeywordTree(data, llm_client=StubLLMClient())
    assert tree.load_report["image"] == "the node file was rewritten after the image"
    assert picture(tree) == expected
    tree.close()


def test_rows_only_the_entity_files_hold_need_the_jsonl_load(tmp_path: Path) -> None:
    """A row appended to an entity file without a change-log record cannot be replayed
    from the log: the open loads the JSONL files (which keep it), as before the image."""
    data = tmp_path / "kt"
    seeded(data, count=20)
    tree = KeywordTree(data, llm_client=StubLLMClient())
    node = next(n for n in tree.state.nodes.values() if n.id != ROOT_ID)
    tree.close()
    row = {**node.to_row(), "version": node.version + 5, "description": "edited outside"}
    with (data / "keywords" / "nodes.jsonl").open("ab") as fh:
        import orjson

        fh.write(orjson.dumps(row) + b"\n")
    tree = KeywordTree(data, llm_client=StubLLMClient())
    assert tree.load_report["image"] == "node rows without an operation after the image"
    assert tree.get_keyword(node.id).description == "edited outside"
    tree.close()
    again = KeywordTree(data, llm_client=StubLLMClient())
    assert again.get_keyword(node.id).description == "edited outside"
    again.close()


def test_inverted_buckets_grow_into_dicts_and_shrink(tmp_path: Path) -> None:
    """Keys shared by many nodes switch to a dict bucket; lookups stay sorted and exact."""
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    created = tree.batch_create_keywords([{"name": f"n{i}", "aliases": ["common"]} for i in range(40)])
    ids = sorted(n.id for n in created)
    key = tree._direct_key("common")
    assert isinstance(tree.state.inverted[key], dict)
    result = tree.search("common", use_agent=False)
    assert result.status.value == "ambiguous" and [c.id for c in result.candidates] == ids
    for node_id in ids[:39]:
        tree.delete_keyword(node_id)
    assert tree.search("common", use_agent=False).node.id == ids[39]
    tree.close()
    reopened = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    assert reopened.state.inverted[key] == (ids[39],)
    reopened.close()


def test_files_of_the_earlier_index_format_are_ignored_and_removed(tmp_path: Path) -> None:
    """A data dir from before the image (per-map JSON files, a persist marker) opens from
    the JSONL files, and the image written then replaces those files."""
    data = tmp_path / "kt"
    seeded(data, count=20)
    expected = from_jsonl(data, tmp_path)
    image.image_path(data).unlink()
    legacy = [data / "indexes" / name for name in ("inverted.json", "children.json", ".persisting")]
    for path in legacy:
        path.write_text('{"fingerprint": {"offset": 0, "sizes": {}}, "data": {}}')
    tree = KeywordTree(data, llm_client=StubLLMClient())
    assert tree.load_report["image"] == "missing"
    assert picture(tree) == expected
    assert not any(path.exists() for path in legacy)
    tree.close()
    assert reopen_report(data)["image"] == "used"
