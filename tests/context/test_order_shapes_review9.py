"""review9: only a question about past events ("did/was A before B?") is split at before/after;
a question about what to do or what holds now ("Do I need to run migrations before deploying?")
is searched whole."""

from __future__ import annotations

import pytest

from knowhub.context.retrieval.pair_questions import split_pair


@pytest.mark.parametrize("question", [
    "Do I need to run migrations before deploying the new release?",
    "Are there any tests I should run before merging the PR?",
    "Does the cache have to be warmed before the load test starts?",
    "Is the staging database reset after every deploy?",
])
def test_a_present_tense_question_with_before_or_after_is_no_order_question(question: str) -> None:
    assert split_pair(question) == []


@pytest.mark.parametrize("question", [
    "Did we switch to Postgres before we added the job queue?",
    "Were the alerts tuned after the outage review?",
    "Had the backups been tested before the migration started?",
])
def test_a_past_event_question_is_still_split(question: str) -> None:
    assert len(split_pair(question)) == 2
