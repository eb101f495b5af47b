"""The words of a question that say what it is about: what search and gotcha ranking keep."""

from __future__ import annotations

import pytest

from memory_core.search import fts_terms
from memory_core.text import STOPWORDS

# Questions as people type them: every common word in them is dropped, the subject is kept.
QUESTIONS = [
    ("What is the cache for", ["cache"]),
    ("How does a retry work in our client", ["retry", "work", "client"]),
    ("Why was it an error at startup", ["error", "startup"]),
    ("Where are the tokens from and who has them", ["tokens", "them"]),
    ("When will we do the migration on this branch", ["migration", "branch"]),
    ("Which flag to use with or by that parser", ["flag", "use", "parser"]),
    ("Is its schema as I have it", ["schema"]),
    ("be the auth of it", ["auth"]),
]


@pytest.mark.parametrize(("question", "terms"), QUESTIONS)
def test_a_questions_common_words_are_not_search_terms(question: str, terms: list[str]) -> None:
    assert fts_terms(question) == [f'"{t}"' for t in terms]


def test_every_common_word_appears_in_some_question_above() -> None:
    asked = {word.lower() for question, _ in QUESTIONS for word in question.split()}
    assert asked >= STOPWORDS


def test_words_that_carry_meaning_are_not_common_words() -> None:
    for word in ("cache", "not", "error", "test", "fix", "no", "null", "auth"):
        assert word not in STOPWORDS


def test_a_question_of_only_common_words_is_searched_as_it_is() -> None:
    assert fts_terms("what is it") == ['"what"', '"is"', '"it"']
