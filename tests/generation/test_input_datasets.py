"""TriviaQA and SQuAD v2 on tiny local files in the Hub's format; real data as generation input."""

import json
import sys
import types

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _generation_fakes import FakeBackend

from realitycheck.datasets import datasets
from realitycheck.errors import DataNotFoundError, InvalidInputError, MissingDependencyError
from realitycheck.generation import SamplingPlan, build_prompt, choose_demos
from realitycheck.pipeline import generate, load_inputs
from realitycheck.records import Label, Response
from realitycheck.store import RunStore


def trivia_row(i, value, aliases, question_id=None):
    return {
        "question": f"Trivia question number {i}?",
        "question_id": question_id or f"tc_{i}",
        "question_source": "http://www.quizballs.com/",
        "entity_pages": {"doc_source": [], "filename": [], "title": [], "wiki_context": []},
        "search_results": {
            "description": [],
            "filename": [],
            "rank": [],
            "title": [],
            "url": [],
            "search_context": [],
        },
        "answer": {
            "aliases": aliases,
            "normalized_aliases": [a.lower() for a in aliases],
            "matched_wiki_entity_name": "",
            "normalized_matched_wiki_entity_name": "",
            "normalized_value": value.lower(),
            "type": "WikipediaEntity",
            "value": value,
        },
    }


TRIVIA = [
    trivia_row(0, "Paris", ["Paris", "Paris, France", "City of Light"]),
    trivia_row(1, "Sinclair Lewis", ["Harry Sinclair Lewis", "Sinclair Lewis"]),
    trivia_row(2, "Ten", ["10", "ten"], question_id="tc_1"),  # a repeated id
]


def squad_row(i, answers, context="The Normans gave their name to Normandy in France."):
    return {
        "id": f"56ddde6b9a695914005b96{i:02d}",
        "title": "Normans",
        "context": context,
        "question": f"Squad question {i}?",
        "answers": {"text": answers, "answer_start": [4 * k for k in range(len(answers))]},
    }


SQUAD = [squad_row(0, ["France", "France", "in France"]), squad_row(1, [])]


def _write(path, rows, fmt):
    if fmt == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows, indent=1))
    return path


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "json"])
def test_triviaqa_from_local_files(tmp_path, fmt):
    path = _write(tmp_path / f"validation-00000-of-00001.{fmt}", TRIVIA, fmt)
    bundle = datasets.create("triviaqa", path=str(path)).load()
    ids = [e.example_id for e in bundle.examples]
    assert ids == ["triviaqa/tc_0", "triviaqa/tc_1", "triviaqa/tc_1#2"]
    first = bundle.examples[0]
    assert first.task == "qa" and first.question == "Trivia question number 0?"
    assert first.references == ("Paris", "Paris, France", "City of Light")
    assert bundle.examples[2].references == ("Ten", "10", "ten")
    assert first.meta["normalized_aliases"] == ["paris", "paris, france", "city of light"]
    assert bundle.responses == [] and "1 question id(s)" in " ".join(bundle.notes)


def test_triviaqa_folder_keeps_the_split(tmp_path):
    _write(tmp_path / "validation-00000-of-00001.parquet", TRIVIA[:2], "parquet")
    _write(tmp_path / "train-00000-of-00001.parquet", TRIVIA[2:], "parquet")
    assert len(datasets.create("triviaqa", path=str(tmp_path)).load().examples) == 2
    assert len(datasets.create("triviaqa", path=str(tmp_path), split="train").load().examples) == 1
    with pytest.raises(DataNotFoundError, match="starts with the split 'test'"):
        datasets.create("triviaqa", path=str(tmp_path), split="test").load()


def test_triviaqa_bad_row_names_file_row_and_field(tmp_path):
    rows = [TRIVIA[0], {**TRIVIA[1], "answer": {"aliases": []}}]
    path = _write(tmp_path / "validation.jsonl", rows, "jsonl")
    with pytest.raises(InvalidInputError, match="line 2, field 'answer.value'"):
        datasets.create("triviaqa", path=str(path)).load()


def test_triviaqa_from_the_hub_through_datasets(monkeypatch):
    calls = []

    def load_dataset(name, config, *, split, revision):
        calls.append((name, config, split, revision))
        return iter(TRIVIA[:2])

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    bundle = datasets.create("triviaqa").load()
    assert calls == [("mandarjoshi/trivia_qa", "rc.nocontext", "validation", None)]
    assert [e.example_id for e in bundle.examples] == ["triviaqa/tc_0", "triviaqa/tc_1"]


def test_hub_failures_say_what_to_do(monkeypatch):
    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach the Hub")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=offline))
    with pytest.raises(DataNotFoundError, match="pass path=FILE_OR_FOLDER to the squad_v2"):
        datasets.create("squad-v2").load()
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(MissingDependencyError, match="realitycheck\\[generation\\]"):
        datasets.create("triviaqa").load()


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_squad_v2_from_local_files(tmp_path, fmt):
    path = _write(tmp_path / f"validation.{fmt}", SQUAD, fmt)
    bundle = datasets.create("squad-v2", path=str(path)).load()
    answerable, unanswerable = bundle.examples
    assert answerable.example_id == "squad_v2/56ddde6b9a695914005b9600"
    assert answerable.task == "rag_qa" and answerable.context == SQUAD[0]["context"]
    assert answerable.references == ("France", "in France")
    assert answerable.meta == {"answerable": True, "title": "Normans", "answer_starts": [0, 4, 8]}
    assert unanswerable.references == () and unanswerable.meta["answerable"] is False
    assert "1 question(s) are unanswerable" in " ".join(bundle.notes)


def test_squad_v2_original_nested_json(tmp_path):
    nested = {
        "version": "v2.0",
        "data": [
            {
                "title": "Normans",
                "paragraphs": [
                    {
                        "context": SQUAD[0]["context"],
                        "qas": [
                            {
                                "id": r["id"],
                                "question": r["question"],
                                "answers": [
                                    {"text": t, "answer_start": s}
                                    for t, s in zip(
                                        r["answers"]["text"],
                                        r["answers"]["answer_start"],
                                        strict=True,
                                    )
                                ],
                                "is_impossible": not r["answers"]["text"],
                            }
                            for r in SQUAD
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "dev-v2.0.json").write_text(json.dumps(nested, indent=2))
    flat = _write(tmp_path / "flat.jsonl", SQUAD, "jsonl")
    from_nested = datasets.create("squad-v2", path=str(tmp_path / "dev-v2.0.json")).load()
    from_flat = datasets.create("squad-v2", path=str(flat)).load()
    assert from_nested.examples == from_flat.examples


def test_squad_v2_bad_answers(tmp_path):
    rows = [{**SQUAD[0], "answers": {"text": "France", "answer_start": [0]}}]
    with pytest.raises(InvalidInputError, match="field 'answers.text'"):
        datasets.create("squad-v2", path=str(_write(tmp_path / "v.jsonl", rows, "jsonl"))).load()


def test_ragtruth_sources_map_to_the_rag_prompts(data_dir, tmp_path):
    ragtruth = datasets.create("ragtruth", data_dir=data_dir)
    store = RunStore(tmp_path / "run")
    examples = load_inputs(store, ragtruth)
    tags = {"rag_qa": "<passages>", "summary": "<article>", "data2text": "<data>"}
    for example in examples:
        assert tags[example.task] in build_prompt(example, "zero_shot").text()
    picked = [next(e for e in examples if e.task == t) for t in tags]
    report = generate(store, picked, FakeBackend(), SamplingPlan(n_samples=2))
    assert report.computed == 3
    # only generated responses: the dataset's own responses and human labels stay out
    assert {r.model for r in store.read(Response)} == {"fake-model"}
    assert store.read(Label) == []
    assert store.read_manifest()["datasets"]["ragtruth"]["generation_input"] is True


def test_truthfulqa_questions_take_few_shot_prompts(data_dir):
    examples = datasets.create("truthfulqa", data_dir=data_dir).load().examples
    questions = [e for e in examples if e.references]
    assert len(questions) == 817
    for example in questions[::40]:
        demos = choose_demos(example, questions, 5)
        text = build_prompt(example, "few_shot", demos=demos).text()
        assert text.count("<question>") == 6 and example.example_id not in [
            d.example_id for d in demos
        ]
