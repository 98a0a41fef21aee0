"""A hand edit of a profile fact node changes the fact (``ContextEngineService.edit_node``).

A fact node (:meth:`~knowhub.context.commit.policies.ProfilePolicy.fact_node_texts`) repeats
one fact of the profile node, and the timeline's registry records it as a claim. Before, an
edit changed the node's text only: the profile kept the old value, and the next statement was
compared with it. Now the fact takes the value the edit states:

* the abstract: the words after the attribute's phrase ("User lives in Munich"), else after
  the subject, else the whole text — without the "(said …)" and "— profile …" tails;
* the overview: the ``- subject — attribute: value`` line (no such line: no new value);
* the content: the first line after the ``#`` heading that is no ``>`` quote.

Text that states another attribute of the user instead ("User works as a nurse", "I'm
vegetarian", a ``# User — occupation`` heading typed into the residence node) is refused with
an :class:`~knowhub.errors.InvalidInputError` (HTTP 400) that names both attributes: taking
it as the value would make a job the user's residence, and moving it to another fact node
would change a node the person did not edit. A first-person sentence of the node's own
attribute gives its value ("I moved to Munich." → Munich).

When several levels are edited, the abstract wins, then the overview. The levels not edited
are rendered again from the new fact; the profile node's entry of the old fact takes the new
value (its levels rendered again), and so do the registry's claim and the node's ``slots``.
The node keeps its URI (its slug still names the old value).
"""

from __future__ import annotations

import re
from typing import Any

from knowhub.context.core.objects import ContextNode
from knowhub.context.core.uri import CtxLike
from knowhub.context.delete_links import profile_of_fact, rewrite_profile, same_fact
from knowhub.errors import InvalidInputError
from knowhub.providers.llm.local_context_profile import ATTRIBUTE_WORDS, profile_facts

__all__ = ["edit_fact", "follow_fact_edit"]

_TAILS = re.compile(r"\s*(?:—\s*profile\b.*|\(said [^)]*\))\s*$", re.I)
_ENDS = " \t.。!！;；,，"


def _bare(text: str, fact: dict[str, Any]) -> str:
    """The abstract without its "(said …)" / "— profile …" tails and its subject ("User")."""
    while _TAILS.search(text):
        text = _TAILS.sub("", text)
    text = text.strip(_ENDS)
    subject = str(fact.get("subject") or "").lower()
    for name in dict.fromkeys((subject, "the user", "user", "用户")):
        if name and text.lower().startswith(name) and not re.match(r"[A-Za-z0-9]", text[len(name):len(name) + 1]):
            return text[len(name):].strip()
    return text


def _other_phrases(own: str) -> dict[str, str]:
    """Attribute → the words a fact node puts before its value ("works as"), for every other
    attribute whose words name it (not "is")."""
    from knowhub.context.commit.policies import fact_phrase

    return {a: fact_phrase(a).lower() for a in ATTRIBUTE_WORDS if a != own and fact_phrase(a) != "is"}


#: Third-person verbs whose first person is no plain stem.
_THIRD = {"is": "am", "has": "have", "does": "do", "was": "was"}


def _as_i(rest: str) -> str:
    """"is vegan" → "I am vegan", "moved to Munich" → "I moved to Munich", "studies …" → "I study …"."""
    verb, _, tail = rest.partition(" ")
    low = verb.lower()
    if low in _THIRD:
        verb = _THIRD[low]
    elif low.endswith("ies") and len(low) > 4:
        verb = verb[:-3] + "y"
    elif low.endswith(("ches", "shes", "sses", "xes", "oes")):
        verb = verb[:-2]
    elif low.endswith("s") and not low.endswith("ss"):
        verb = verb[:-1]
    return f"I {verb} {tail}".strip()


def _first_person(text: str, fact: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """The profile facts the text states when read as the user's own words ("用户在阿里巴巴工作"
    is read as "我在阿里巴巴工作", "User is vegan" and "Bob moved to Munich" as "I am vegan",
    "I moved to Munich")."""
    bare = _bare(text, fact)
    cjk = bool(re.search(r"[\u4e00-\u9fff]", bare))
    if bare != text.strip(_ENDS) and cjk and not bare.startswith("我"):
        bare = "我" + bare
    elif not cjk and bare != text.strip(_ENDS):
        bare = _as_i(bare)
    elif not cjk and (named := re.match(r"(?!(?:I|My|Our|We)\b)[A-Z][\w'’-]* (?=[a-z])", bare)):
        bare = _as_i(bare[named.end():])  # another name for the user: "Bob moved to Munich"
    return profile_facts(bare[:300], cjk)


def _from_abstract(text: str, fact: dict[str, Any]) -> str:
    from knowhub.context.commit.policies import fact_phrase

    own = str(fact.get("attribute") or "")
    bare = _bare(text, fact)
    lower = f" {bare.lower()}"
    phrase = f" {fact_phrase(own).lower()} "
    if phrase in lower:
        value = bare[lower.index(phrase) + len(phrase) - 1:]
        cuts = [m.start() for p in _other_phrases(own).values() if (m := re.search(rf"(?:\s+and)?\s+{re.escape(p)}\s", value))]
        value = value[:min(cuts)] if cuts else value  # "Munich and works at Siemens": Munich
        # the extractor's own reading of the sentence ends the value where a statement would:
        # "works at Google as a nurse" is Google (the job is another fact), as when the user says it
        stated = [v for a, v, _multi in _first_person(text, fact) if a == own]
        return stated[0] if stated and stated[0].casefold() in value.casefold() else value
    if lower.endswith(phrase.rstrip()):  # "User lives in": the value erased, none stated
        return ""
    stated = [v for a, v, _multi in _first_person(text, fact) if a == own]
    return stated[0] if stated else bare


def _other_attribute(changes: dict[str, str], fact: dict[str, Any]) -> str:
    """Another attribute the edited text states instead of the fact's own, else ""."""
    from knowhub.context.commit.policies import fact_phrase

    own = str(fact.get("attribute") or "")
    # the abstract, and a content's first line (a sentence typed without the "# …" heading)
    for sentence in (changes.get("abstract", ""), _from_content(changes.get("content", ""))[:2000]):
        lower = _bare(sentence, fact).lower()
        if sentence and not lower.startswith(fact_phrase(own).lower()):
            if own in {a for a, _v, _multi in _first_person(sentence, fact)}:
                continue  # "User works as a nurse at Google" on the employer's node: it states the employer too
            for attribute, phrase in _other_phrases(own).items():
                if lower.startswith(phrase) and not lower[len(phrase):len(phrase) + 1].isalnum():
                    return attribute
            said = [a for a, _v, _multi in _first_person(sentence, fact)]
            if said and own not in said:
                return said[0]
    if "overview" in changes and not _from_overview(changes["overview"], fact):
        for line in changes["overview"].splitlines()[:50]:  # "- User — occupation: nurse", line by line
            named = re.search(r"—[ \t]*([a-z_]{2,20})[ \t]*[:：]", line)
            if named and named.group(1) != own and named.group(1) in ATTRIBUTE_WORDS:
                return named.group(1)
    if "content" in changes:
        heading = re.match(r"\s*#\s*[^\n]*?[—-]\s*([a-z_]+)\s*(?:\n|$)", changes["content"])
        if heading and heading.group(1) != own and heading.group(1) in ATTRIBUTE_WORDS:
            return heading.group(1)
    return ""


def _from_overview(text: str, fact: dict[str, Any]) -> str:
    """The text after "<attribute>:" on the first line that has it ("- User — residence: Munich").
    A scan line by line: a regex with ``^\\s*-?\\s*`` under re.M backtracked cubically on
    a run of blank lines (a 2,000-space overview took 67 s)."""
    attribute = re.compile(rf"\b{re.escape(str(fact.get('attribute') or ''))}[ \t]*[:：][ \t]*(\S.*)")
    for line in text.splitlines():
        match = attribute.search(line)
        if match:
            return match.group(1).strip()
    return ""


def _from_content(text: str) -> str:
    return next((line for line in (raw.strip() for raw in text.splitlines())
                 if line and not line.startswith(("#", ">"))), "")


def edit_fact(node: ContextNode, changes: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """When ``node`` is a fact node and the edited ``changes`` (level → text) state another
    value: set its fact to it and render the levels not edited again; returns ``(old fact, new
    fact)``, else None (the node is left as it is).

    Raises:
        InvalidInputError: the text states another attribute of the user (see the module doc).
    """
    meta = node.metadata or {}
    fact = meta.get("fact")
    if not meta.get("fact_node") or not isinstance(fact, dict):
        return None
    from knowhub.context.commit.policies import ProfilePolicy, norm_text

    other = _other_attribute(changes, fact)
    if other:
        own = str(fact.get("attribute") or "")
        raise InvalidInputError(
            f"{node.uri} holds the user's {own}, but the text states their {other}: edit the {other} "
            f"fact node (or the profile node), or state a {own} here", field=next(iter(changes)))
    readers = {"abstract": lambda t: _from_abstract(t, fact), "overview": lambda t: _from_overview(t, fact),
               "content": lambda t: _from_abstract(line[:2000], fact) if (line := _from_content(t)) else ""}
    stated = (v.strip(_ENDS)[:200] for level, read in readers.items() if level in changes for v in [read(changes[level])])
    value = next((v for v in stated if any(ch.isalnum() for ch in v)), "")  # "—", "…": no value stated
    if not value or norm_text(value) == norm_text(str(fact.get("value") or "")):
        return None
    new = {**fact, "value": value}
    rendered = dict(zip(("abstract", "overview", "content"), ProfilePolicy.fact_node_texts(new), strict=True))
    for level, text in rendered.items():
        if level not in changes:
            setattr(node, level, text)
    from knowhub.context.commit.slots import fact_claims

    claims = {c.slot: c.value for c in fact_claims([new])}
    slots = [{**s, "value": claims[s["slot"]]} if isinstance(s, dict) and s.get("slot") in claims else s
             for s in meta.get("slots") or []]
    node.metadata = {**meta, "fact": new, "value": value, **({"slots": slots} if slots else {})}
    return fact, new


def follow_fact_edit(fs: Any, ctx: CtxLike, uri: str, old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The profile node's entry of ``old`` takes the value of ``new``, and the registry's claim
    of the fact node at ``uri`` too; returns the profile URI when it changed."""
    from knowhub.context.commit.slots import fact_claims
    from knowhub.context.commit.timeline import Timeline

    timeline = Timeline(fs)
    data = timeline.load(ctx)
    claims = {c.slot: c for c in fact_claims([new])}
    touched = False
    for slot, entries in (data.get("slots") or {}).items():
        for entry in entries if slot in claims else []:
            if isinstance(entry, dict) and uri in (entry.get("uris") or {}).values():
                entry["value"], entry["key"], touched = claims[slot].value, claims[slot].key, True
    if touched:
        timeline.save(ctx, data)
    profile_uri, node = profile_of_fact(fs, ctx, uri)
    if node is None:
        return None
    meta = dict(node.metadata or {})
    facts = {k: dict(v) for k, v in (meta.get("facts") or {}).items() if isinstance(v, dict)}
    hits = [key for key, value in facts.items() if same_fact(value, old)]
    if not hits:
        return None
    for key in hits:
        facts[key]["value"] = new["value"]
    superseded = [s for s in meta.get("superseded") or [] if isinstance(s, dict)]
    meta["facts"] = facts
    rewrite_profile(fs, ctx, node, meta, superseded)
    return profile_uri
