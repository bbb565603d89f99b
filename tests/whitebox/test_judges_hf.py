"""The judges on the tiny local hf model: prompts through the chat template, through the cache.

The model has random weights and a word-level vocabulary without the verdict
words, so every reply is unparseable: what is checked is the plumbing (chat
messages, repeats with their seeds, invalid replies kept, the cache), not the
verdicts.
"""

from __future__ import annotations

import json

from realitycheck import Example, Response
from realitycheck.backends import CallCache
from realitycheck.labelers.factuality_judge import FactualityJudge
from realitycheck.labelers.qa_judge import QAJudge

QA = Example(
    example_id="q", dataset="t", task="qa", question="capital of france", references=("paris",)
)
RESPONSES = [
    Response(response_id="a", example_id="q", model="m", text="paris"),
    Response(response_id="b", example_id="q", model="m", text="rome"),
]


def test_judges_run_on_a_local_model_and_a_rerun_reuses_the_cache(hf, tmp_path, request):
    judges = [
        QAJudge(judge=hf, repeats=2, temperature=0.8, max_tokens=8),
        FactualityJudge(judge=hf, max_tokens=8, invalid_as="excluded"),
    ]
    assert not judges[0].requests("p")[0].json_schema  # hf has no json_schema capability
    assert judges[0].requests("p")[0].messages  # sent through the model's chat template
    with CallCache(tmp_path / "calls.sqlite") as cache:
        first = [j.label(RESPONSES, {"q": QA}, cache=cache) for j in judges]
        sent = request.getfixturevalue("hf_sent")  # counts from here on
        again = [j.label(RESPONSES, {"q": QA}, cache=cache) for j in judges]
    assert sent == []

    def verdicts(labels):
        return [(x.category, x.hallucinated, json.loads(x.raw)["replies"]) for x in labels]

    assert [verdicts(x) for x in again] == [verdicts(x) for x in first]
    qa, factuality = first
    for label in qa:
        raw = json.loads(label.raw)
        assert label.category == "invalid" and label.hallucinated is None
        assert label.error.startswith("no verdict in the judge's 2 replies")
        assert label.unreadable == 2
        assert len(raw["replies"]) == 2 and all(raw["replies"])
        assert raw["usage"]["prompt_tokens"] > 0
    assert all(x.category == "invalid" and x.hallucinated is None for x in factuality)
