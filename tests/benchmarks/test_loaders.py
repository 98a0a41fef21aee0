"""benchmarks/_data.py loaders on tiny inline samples (never the real files)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data() -> ModuleType:
    spec = importlib.util.spec_from_file_location("knowhub_bench_data", ROOT / "benchmarks" / "_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ICD_XML = """<?xml version="1.0" encoding="utf-8"?>
<ICD10CM.tabular>
  <version>2026</version>
  <introduction><introSection type="title"><title>ignored</title></introSection></introduction>
  <chapter>
    <name>1</name>
    <desc>Certain infectious and parasitic diseases (A00-B99)</desc>
    <section id="A00-A09">
      <desc>Intestinal infectious diseases (A00-A09)</desc>
      <diag>
        <name>A00</name>
        <desc>Cholera</desc>
        <diag>
          <name>A00.0</name>
          <desc>Cholera due to Vibrio cholerae 01, biovar cholerae</desc>
          <inclusionTerm>
            <note>Classical cholera</note>
          </inclusionTerm>
        </diag>
        <diag>
          <name>A00.9</name>
          <desc>Cholera,
             unspecified</desc>
        </diag>
      </diag>
    </section>
    <section id="B10">
      <desc>Other human herpesviruses (B10)</desc>
      <diag><name>B10</name><desc>Other human herpesviruses</desc></diag>
    </section>
  </chapter>
  <chapter>
    <name>19</name>
    <desc>Injury, poisoning (S00-T88)</desc>
    <section id="S00-S09">
      <desc>Injuries to the head (S00-S09)</desc>
      <diag>
        <name>S00</name>
        <desc>Superficial injury of head</desc>
        <sevenChrDef>
          <extension char="A">initial encounter</extension>
          <extension char="S">sequela</extension>
        </sevenChrDef>
        <diag>
          <name>S00.0</name>
          <desc>Superficial injury of scalp</desc>
          <diag>
            <name>S00.00</name>
            <desc>Unspecified superficial injury of scalp</desc>
            <inclusionTerm><note>Scalp graze</note><note>Scalp scratch</note></inclusionTerm>
          </diag>
        </diag>
        <diag><name>S00.1</name><desc>Contusion of eyelid</desc></diag>
      </diag>
      <diag>
        <name>T07</name>
        <desc>Unspecified multiple injuries</desc>
        <sevenChrDef><extension char="D">subsequent encounter</extension></sevenChrDef>
      </diag>
    </section>
  </chapter>
</ICD10CM.tabular>
"""


def test_load_icd10cm_tree_synonyms_and_seventh_characters(data: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "icd.xml"
    path.write_text(ICD_XML, encoding="utf-8")
    nodes = data.load_icd10cm(path)
    by_id = {n["id"]: n for n in nodes}
    assert len(by_id) == len(nodes)  # section "B10" and code "B10" do not collide
    assert by_id["chapter-1"]["parent_id"] is None and by_id["chapter-1"]["level"] == 1
    assert by_id["section-A00-A09"]["parent_id"] == "chapter-1"
    assert by_id["section-B10"]["code"] == "B10"
    assert by_id["B10"]["parent_id"] == "section-B10"
    assert by_id["A00"]["parent_id"] == "section-A00-A09" and by_id["A00"]["level"] == 3
    assert by_id["A00.0"]["parent_id"] == "A00" and by_id["A00.0"]["level"] == 4
    assert by_id["A00.0"]["synonyms"] == ["Classical cholera"]
    assert by_id["A00.9"]["name"] == "Cholera, unspecified"  # whitespace collapsed
    assert by_id["S00.00"]["synonyms"] == ["Scalp graze", "Scalp scratch"]
    # 7th characters hang under the leaves of the subtree that defines them
    assert by_id["S00.00XA"]["parent_id"] == "S00.00"
    assert by_id["S00.00XA"]["name"] == "Unspecified superficial injury of scalp, initial encounter"
    assert by_id["S00.1XXS"]["name"] == "Contusion of eyelid, sequela"
    assert by_id["T07.XXXD"]["parent_id"] == "T07"
    assert "S00.0XXA" not in by_id  # S00.0 is not a leaf
    assert "A00.0XXA" not in by_id  # no sevenChrDef in chapter 1
    seen: set[str] = set()
    for node in nodes:  # parents first
        assert node["parent_id"] is None or node["parent_id"] in seen
        seen.add(node["id"])
    plain = data.load_icd10cm(path, seventh_characters=False)
    assert len(plain) == len(nodes) - 5


def test_bfs_subset_and_synthetic_expand(data: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "icd.xml"
    path.write_text(ICD_XML, encoding="utf-8")
    nodes = data.load_icd10cm(path)
    subset = data.bfs_subset(nodes, 6)
    assert [n["level"] for n in subset] == sorted(n["level"] for n in subset)
    ids = {n["id"] for n in subset}
    assert all(n["parent_id"] is None or n["parent_id"] in ids for n in subset)

    big = data.synthetic_expand(nodes, 50, seed=3)
    assert len(big) == 50
    assert big[: len(nodes)] == nodes  # replica 0 is the real tree
    ids = set()
    for node in big:
        assert node["parent_id"] is None or node["parent_id"] in ids
        ids.add(node["id"])
    assert len(ids) == 50
    assert len({n["name"] for n in big[len(nodes):]}) == len(big) - len(nodes)
    again = data.synthetic_expand(nodes, 50, seed=3)
    assert again == big  # deterministic
    other = data.synthetic_expand(nodes, 50, seed=4)
    assert [n["name"] for n in other] != [n["name"] for n in big]
    tops = [n for n in big if n["parent_id"] is None and n["id"].startswith("replica-")]
    assert tops and tops[0]["name"].startswith("Replica 1 ")


def test_load_google_taxonomy(data: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "taxonomy.txt"
    path.write_text(
        "# Google_Product_Taxonomy_Version: 2021-09-21\n"
        "1 - Animals & Pet Supplies\n"
        "3237 - Animals & Pet Supplies > Live Animals\n"
        "2 - Animals & Pet Supplies > Pet Supplies\n"
        "3 - Animals & Pet Supplies > Pet Supplies > Bird Supplies\n"
        "\n"
        "166 - Apparel & Accessories\n",
        encoding="utf-8",
    )
    nodes = data.load_google_taxonomy(path)
    by_id = {n["id"]: n for n in nodes}
    assert list(by_id) == ["1", "3237", "2", "3", "166"]
    assert by_id["3"]["name"] == "Bird Supplies" and by_id["3"]["parent_id"] == "2" and by_id["3"]["level"] == 3
    assert by_id["166"]["parent_id"] is None


def test_load_locomo_tolerant_evidence(data: ModuleType, tmp_path: Path) -> None:
    sample = [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_2_date_time": "2:00 pm on 9 May, 2023",
                "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Back from Rome.", "blip_caption": "a photo of a fountain"}],
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "I painted a sunset."},
                ],
            },
            "qa": [
                {"question": "What did Bo paint?", "answer": "sunset", "evidence": ["D1:2; D2:1"], "category": 1},
                {"question": "When?", "answer": 2023, "evidence": ["D1:2", "D9:99", "D2:1"], "category": 2},
                {"question": "Trick?", "adversarial_answer": "x", "evidence": [], "category": 5},
            ],
            "observation": {"session_1_observation": {}},
            "session_summary": {"session_1_summary": "hello"},
            "event_summary": {},
        }
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(sample), encoding="utf-8")
    convs = data.load_locomo(path)
    assert len(convs) == 1
    conv = convs[0]
    assert conv["speakers"] == ("Ann", "Bo")
    assert [s["index"] for s in conv["sessions"]] == [1, 2]
    assert conv["sessions"][0]["date_time"] == "1:56 pm on 8 May, 2023"
    assert conv["sessions"][1]["turns"][0]["blip_caption"] == "a photo of a fountain"
    qa = conv["qa"]
    assert qa[0]["evidence"] == ["D1:2", "D2:1"]
    assert qa[1]["evidence"] == ["D1:2", "D2:1"] and qa[1]["answer"] == "2023"
    assert qa[2]["answer"] is None and qa[2]["adversarial_answer"] == "x" and qa[2]["category"] == 5
    assert data.parse_evidence("D3:4,D3:5 ; junk") == ["D3:4", "D3:5"]


def test_oracle_recognizes_the_engines_candidates(data: ModuleType, tmp_path: Path) -> None:
    """The benchmark's oracle must find targets in the prompts the real engine builds."""
    spec = importlib.util.spec_from_file_location("knowhub_tree_bench", ROOT / "benchmarks" / "tree_bench.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    from knowhub.tree import KeywordTree, SearchStatus

    path = tmp_path / "icd.xml"
    path.write_text(ICD_XML, encoding="utf-8")
    nodes = data.load_icd10cm(path)
    tree = KeywordTree(tmp_path / "kt", llm_client=bench.StubLLMClient())
    tree.batch_create_keywords(bench.specs_of(nodes))
    tree.close()
    index = bench.TreeIndex(nodes)
    oracle = bench.OracleAgent(index)
    tree = KeywordTree(tmp_path / "kt", llm_client=oracle, max_candidates=3)
    try:
        for node in nodes:
            oracle.set_target(node["id"])
            query = "zzqx " + node["name"]  # misses the exact index; shares words for the lexical step
            result = tree.search(query)
            assert result.status is SearchStatus.MATCHED, (node["id"], result.reason)
            assert result.node is not None and result.node.id == node["id"]
    finally:
        tree.close()
    rounds, tokens = bench.level_baseline(index, "S00.00XA", "scalp")
    assert rounds == 6 and tokens > 0
