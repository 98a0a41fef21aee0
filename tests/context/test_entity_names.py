"""Issue 19 §1: only names become entities in a long technical chat.

Each class of noise the offline extractor made on long chats has a test: command-line flags
and SQL keywords, ordinary words opening a sentence, a list item or a clause, pronoun
contractions and possessives, weekdays and their abbreviations and plurals, chat
abbreviations. Next to each, the names that must stay (people, places, products, book
titles, languages, Chinese names). The sentences are written for these tests.
"""

from __future__ import annotations

import pytest

from knowhub.context.core import SessionArchive
from knowhub.context.extraction import EntityEventExtractor
from knowhub.providers.llm import StubLLMClient
from knowhub.providers.llm.local_context import run_extraction
from knowhub.providers.llm.local_context_code import strip_code
from knowhub.providers.llm.local_context_names import common_word_class, is_time_word
from knowhub.scope import RequestContext


def entities(*texts: str, role: str = "user") -> list[str]:
    messages = [{"id": f"m{i}", "role": role, "content": t, "timestamp": "2026-03-02T09:00:00"}
                for i, t in enumerate(texts, 1)]
    out = run_extraction("extract_entities_events", {"messages": messages, "session_time": "2026-03-02T09:00:00"})
    return [c["routing_key"] for c in out if c["category"] == "entities"]


def test_command_line_flags_and_sql_keywords_are_code():
    found = entities("Build it with -Wall -Wextra -Werror -Wconversion and --no-cache, then load the rows with "
                     "COPY FROM stdin. The firmware keeps the key in NVS; Priya wrote the NACK handling.")
    lowered = {f.lower() for f in found}
    assert not lowered & {"wall", "wextra", "werror", "wconversion", "no-cache", "copy", "copy from", "nack"}
    assert "Priya" in found
    assert "-Wall" not in strip_code("gcc -Wall main.c") and "e-mail" in strip_code("an e-mail to Wi-Fi users")


@pytest.mark.parametrize("text", [
    "Rules for the project:\n- Never push to main on a Friday.\n- Stop the worker before a migration.\n"
    "- Help text stays short.\n* Blocks of code go in a gist.",
    "Two notes: Restarting the broker fixed it. Messages arrive late when the queue is full.",
    "Tiny change today. New plan: Old servers go first. Hot fix was deployed.\n1. Zero downtime.\n2. Arrive early.",
    "Plan:\n- Phase two starts soon.\n- Schema changes go through review.\n- Unit tests run nightly.\n"
    "- Week three was calm.",
])
def test_ordinary_words_opening_a_sentence_list_item_or_clause_are_no_entities(text):
    assert entities(text) == []


def test_a_verb_opening_a_run_is_cut_and_the_name_kept():
    found = entities("Emailed Anouk about the invoice. Started the React port with Kieran. Set Totnes as the "
                     "default town. After the Ana review we dropped the Vonage plan. Keep the Prisma schema.")
    assert not any(" " in f for f in found), found  # no "Emailed Anouk", "Started the React", "the Vonage"
    assert {"Anouk", "React", "Kieran", "Totnes", "Ana", "Vonage", "Prisma"} <= set(found)


def test_names_starting_with_an_adjective_or_noun_stay_whole():
    found = entities("New York is where Caroline lives. Network Rail publishes the feed, and Bank of England "
                     "sets the rate.")
    assert {"New York", "Caroline", "Network Rail", "Bank of England"} <= set(found)


def test_contractions_and_possessives_are_cut_to_the_name():
    found = entities("We're live. He's Diane from finance, she signed it off. It's Go-Live day. "
                     "Kieran's PR landed, and Hannah's WhatsApp group knows. I'm rereading Charlotte's Web. "
                     "Ask Kieran and Hannah.")
    lowered = {f.lower() for f in found}
    assert not lowered & {"we're", "he's diane", "it's go-live day", "kieran's pr", "hannah's whatsapp", "pr"}
    assert {"Diane", "Kieran", "Hannah", "WhatsApp", "Charlotte's Web"} <= set(found)


def test_weekdays_are_one_normalised_time_entity_months_and_chat_abbreviations_none():
    found = entities("Standup moves to Fri, and Fridays are for demos; Thu works too but Thursdays are busy. "
                     "Mon is out. Deadline is Mar 3. WTF, the build broke again. TL;DR: ship it on Tuesdays with Jan.")
    # a weekday written as a schedule is one normalised time entity; "Jan" is a name when no day number follows
    assert sorted(found) == ["Friday", "Jan", "Monday", "Thursday", "Tuesday"], found
    assert is_time_word("Fridays") and is_time_word("thu") and is_time_word("Mar", " 3")
    assert not is_time_word("Jan") and not is_time_word("Marta")


def test_a_common_word_used_as_a_label_is_no_name_but_a_product_is():
    found = entities("When the driver presses Done the stop is done. The alerts go to Slack, and Slack is "
                     "where the team lives. We moved from Render to Hetzner.")
    assert "Done" not in found
    assert {"Slack", "Render", "Hetzner"} <= set(found)


def test_people_places_and_languages_of_a_social_chat_stay():
    found = entities("Melanie and I went to Paris with my sister Grace last summer. Caroline painted the "
                     "Eiffel Tower. Languages: Polish and English. Just the GoT series now. Say hi to Melanie "
                     "and Caroline.")
    assert {"Melanie", "Paris", "Grace", "Caroline", "Eiffel Tower", "Polish", "English", "GoT"} <= set(found)


def test_chinese_entities_still_found():
    found = entities("我的同事张伟下周去深圳出差，顺便拜访腾讯。听起来不错，就用 NestJS + PostgreSQL。")
    assert "深圳" in found and "PostgreSQL" in found and "NestJS" in found


def test_common_word_lexicon_matches_inflections_and_not_names():
    assert common_word_class("Restarting") == "verb" and common_word_class("Blocks") is not None
    assert common_word_class("Tiny") == "adjective" and common_word_class("Never") == "function"
    assert common_word_class("Booked") == "verb"  # an -ed form of a listed noun
    for name in ("Caroline", "Kieran", "Totnes", "GoT", "iPhone", "Grace"):
        assert common_word_class(name) is None, name


def test_function_words_numerals_and_abbreviation_plurals_inside_a_clause():
    found = entities("Dates look like 3/2/26 Third: phone numbers vary. Open the PDFs and the CTEs, and walk "
                     "on the Downs with Aisha. Ask Aisha.")
    assert "Third" not in found and "PDFs" not in found and "CTEs" not in found
    assert {"Downs", "Aisha"} <= set(found)  # a plural place name is no function word


def test_a_model_answer_is_held_to_the_name_rules():
    """The LLM path: weekdays, contractions, flags, lone titles and chat abbreviations a model
    names as entities are dropped; its names stay."""
    def entity(name: str, kind: str) -> dict[str, object]:
        return {"category": "entities", "routing_key": name, "abstract": f"{name} was mentioned", "confidence": 0.8,
                "source_refs": ["m1"], "metadata": {"entity_type": kind}}

    stub = StubLLMClient([{"candidates": [
        entity("Fridays", "thing"), entity("Thu", "thing"), entity("We're", "thing"), entity("-Wall", "thing"),
        entity("Dr", "person"), entity("TL;DR", "thing"), entity("WTF", "thing"), entity("NACK", "thing"), entity("ACK", "named entity"),
        entity("Kieran", "person"), entity("Totnes", "place"), entity("User's sister", "relation"),
    ]}])
    archive = SessionArchive("s1", "ctx://acme/users/alice/sessions/s1", stats={})
    messages = [{"id": "m1", "role": "user", "content": "Kieran moved to Totnes on a Friday."}]
    got = EntityEventExtractor(llm=stub).extract(messages, archive, RequestContext("acme", "alice", session_id="s1"))
    assert sorted(c.routing_key for c in got if c.category == "entities") == ["ACK", "Kieran", "Totnes", "User's sister"]
