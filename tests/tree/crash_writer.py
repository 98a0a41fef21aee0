"""Writer process for the crash and multi-process tests (run as a script, not collected).

Usage: ``python crash_writer.py DATA_DIR SEED MODE [COUNT]``. MODE ``mixed`` performs random
creates, updates, links, merges, cascade deletes and batches forever (until killed) and
prints ``ACK <operation_id>`` after each call returned; MODE ``maint`` does the same with
compactions, checkpoints and index/cache persists in between (so that kills land in them); MODE ``creates`` performs COUNT
single creates plus COUNT//2 unversioned updates of the node ``shared`` and prints ``DONE``.
With ``TREE_CRASH_WRITER_DB_URL`` set the tree lives in that PostgreSQL database
(DATA_DIR then holds only this process's local files).
"""

from __future__ import annotations

import os
import random
import sys

from knowhub.errors import KnowhubError
from knowhub.tree import KeywordTree, StubLLMClient


def mixed(tree: KeywordTree, rng: random.Random, maintenance: bool = False) -> None:
    n = 0
    while True:
        n += 1
        if maintenance and n % 5 == 0:
            if rng.random() < 0.5:
                tree.compact_storage()
                print("ACK", tree.last_operation_id, flush=True)
            else:
                tree.flush()
        live = [i for i in tree.state.nodes if i != "root"]
        infos = list(tree.state.infos)
        choice = rng.random()
        try:
            if choice < 0.3 or len(live) < 4:
                parent = rng.choice(live) if live and rng.random() < 0.7 else None
                tree.create_keyword(f"k{n}-{rng.randrange(10**6)}", parent_id=parent, llm_auto_place=False, dedup=False)
            elif choice < 0.45:
                node = tree.state.nodes[rng.choice(live)]
                tree.update_keyword(node.id, {"description": f"d{n}"}, version=node.version)
            elif choice < 0.6:
                tree.create_info(f"info {n}", keyword_ids=rng.sample(live, min(2, len(live))))
            elif choice < 0.65 and infos:
                tree.link_info(rng.choice(infos), rng.choice(live), "RELATED")
            elif choice < 0.75:
                src, dst = rng.sample(live, 2)
                tree.merge_keywords(src, dst)
            elif choice < 0.85:
                tree.delete_keyword(rng.choice(live), cascade=True, info_policy=rng.choice(["reattach", "unlink"]))
            elif choice < 0.95:
                base = f"b{n}"
                specs = [{"id": f"{base}-0", "name": f"{base} top"}]
                specs += [{"name": f"{base} c{i}", "parent_id": f"{base}-0"} for i in range(rng.randrange(1, 30))]
                tree.batch_create_keywords(specs)
            elif tree.last_operation_id:
                tree.undo(tree.last_operation_id)
            else:
                continue
        except KnowhubError:
            continue  # refused writes (cycles, conflicts) acknowledge nothing
        print("ACK", tree.last_operation_id, flush=True)


def creates(tree: KeywordTree, tag: str, count: int) -> None:
    for i in range(count):
        tree.create_keyword(f"{tag}-{i}", parent_id="shared", llm_auto_place=False, dedup=False)
        if i % 2 == 0:
            tree.update_keyword("shared", {"description": f"{tag}-{i}"})
    print("DONE", flush=True)


def main() -> None:
    data_dir, seed, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    settings = {"checkpoint_every_ops": 3, "persist_every_ops": 4} if mode == "maint" else None
    db_url = os.environ.get("TREE_CRASH_WRITER_DB_URL") or None
    tree = KeywordTree(data_dir, llm_client=StubLLMClient(), lock_timeout_s=60, settings=settings, db_url=db_url)
    print("READY", flush=True)
    if mode in ("mixed", "maint"):
        mixed(tree, random.Random(seed), maintenance=mode == "maint")
    else:
        creates(tree, f"p{seed}", int(sys.argv[4]))
        tree.close()


if __name__ == "__main__":
    main()
