"""Five public human-labelled sets load from a spec file, with no converter script.

Each file here is made up (a few rows of the same shape as the public set, not
a copy): factool's knowledge_qa, HaluQuestQA, DelucionQA, PHD with samples, and
sentence-level labels in one JSON file per generating model. Each is loaded
from a TOML or YAML spec file through the CLI, as a user would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realitycheck.cli import main
from realitycheck.datasets.spec_file import load_spec
from realitycheck.store import RunStore

SHAPES = Path(__file__).parent / "shapes"


def _human(bundle):
    return {
        label.response_id: label.hallucinated for label in bundle.labels if label.labeler == "human"
    }


def _ingest(spec, tmp_path):
    out = tmp_path / "run"
    assert main(["-q", "ingest", "-d", str(spec), "--out", str(out)]) == 0
    return RunStore(out)


# -- GAIR-NLP/factool knowledge_qa: JSONL, label true = factual, claim-level labels ---------------

FACTOOL_ROWS = [
    {
        "prompt": "Which invented island has the tallest lighthouse?",
        "response": "Brisk Isle has the tallest lighthouse, at 90 metres, built in 1820.",
        "claims": [
            {"claim": "Brisk Isle has the tallest lighthouse", "label": True},
            {"claim": "The lighthouse is 90 metres tall", "label": False},
        ],
        "label": False,
        "entry_point": None,
    },
    {
        "prompt": "Who founded the made-up town of Vell?",
        "response": "Vell was founded by the weaver Ana Orr.",
        "claims": [{"claim": "Vell was founded by Ana Orr", "label": True}],
        "label": True,
        "entry_point": None,
    },
    {
        "prompt": "What is the capital of the imaginary state Quen?",
        "response": "Its capital is Larn, on the east coast.",
        "claims": [
            {"claim": "The capital of Quen is Larn", "label": True},
            {"claim": "Larn is on the east coast", "label": True},
        ],
        "label": True,
        "entry_point": None,
    },
]
FACTOOL_SPEC = """
# factool knowledge_qa: `label: true` means the response is factual.
[[datasets]]
name = "factool"
path = "knowledge_qa.jsonl"
text = "response"
columns = { question = "prompt" }
constants = { task = "qa", model = "gpt-3.5-turbo" }
label = "label"
positive = ["false"]
negative = ["true"]

[[datasets]]
name = "factool-claims"
path = "knowledge_qa.jsonl"
text = "response"
columns = { question = "prompt" }
constants = { task = "qa", model = "gpt-3.5-turbo" }
sentences = ["claims.label"]      # each claim object's `label`
positive = ["false"]
negative = ["true"]
"""


def test_factool_knowledge_qa_response_and_claim_labels(tmp_path):
    (tmp_path / "knowledge_qa.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in FACTOOL_ROWS)
    )
    (tmp_path / "factool.toml").write_text(FACTOOL_SPEC)
    response_level, claim_level = load_spec(tmp_path / "factool.toml")
    by_response = response_level.load()
    by_claims = claim_level.load()
    assert list(_human(by_response).values()) == [True, False, False]
    # The strictest claim decides, and agrees with the response label here.
    assert list(_human(by_claims).values()) == [True, False, False]
    assert {e.task for e in by_response.examples} == {"qa"}
    assert {r.model for r in by_response.responses} == {"gpt-3.5-turbo"}
    notes = " ".join(by_claims.notes)
    assert "item 'false' -> hallucinated 1" in notes and "item 'true' -> faithful 4" in notes
    store = _ingest(tmp_path / "factool.toml", tmp_path)
    assert set(store.frame("examples")["dataset"]) == {"factool", "factool-claims"}


# -- HaluQuestQA: a tab-separated .csv, two answers per row, list-valued labels ------------------

HALUQUEST_HEADER = [
    "",
    "source_file",
    "question_text",
    "ans1_text",
    "ans2_text",
    "factuality_span",
    "ans1_label",
    "ans2_label",
    "factuality_label",
    "category",
    "factuality_human_score",
]
HALUQUEST_ROWS = [
    [
        "0",
        "a.txt",
        'Why is the "made-up" sky green?',
        "Because of invented algae, said to be 4 km thick.",
        "It is not green; the question is false.",
        "['said to be 4 km thick']",
        "human_answer",
        "model_answer",
        "['answer1']",
        "physics",
        "0.5",
    ],
    [
        "1",
        "b.txt",
        "How do imaginary kettles boil, step by step?",
        "They heat water, then whistle.",
        "Kettles boil by freezing water, which is wrong.",
        "['freezing water']",
        "model_answer",
        "human_answer",
        "['answer1', 'answer2']",
        "technology",
        "0.0",
    ],
    [
        "2",
        "c.txt",
        "Why do invented birds sing at dawn?",
        "To mark territory.",
        "To find mates and mark territory.",
        "",
        "human_answer",
        "model_answer",
        "",
        "biology",
        "1.0",
    ],
]
HALUQUEST_SPEC = """
dataset:
  name: haluquestqa
  path: complete_data.csv           # tab-separated, though named .csv
  columns: {question: question_text}
  constants: {task: qa}
  # answer column : the tag the label cell lists when it is wrong : its model column
  answers: ["ans1_text:answer1:ans1_label", "ans2_text:answer2:ans2_label"]
  label: factuality_label
  empty_means: faithful             # no factuality span: no error
  meta: [category]
"""


def test_haluquestqa_two_answers_per_row_with_list_labels(tmp_path):
    lines = ["\t".join(HALUQUEST_HEADER)] + ["\t".join(r) for r in HALUQUEST_ROWS]
    (tmp_path / "complete_data.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "haluquestqa.yaml").write_text(HALUQUEST_SPEC)
    (dataset,) = load_spec(tmp_path / "haluquestqa.yaml")
    bundle = dataset.load()
    assert len(bundle.responses) == 6 and len(bundle.examples) == 3
    human = _human(bundle)
    verdicts = [human[r.response_id] for r in bundle.responses]
    assert verdicts == [True, False, True, True, False, False]
    models = [r.model for r in bundle.responses]
    assert models[:4] == ["human_answer", "model_answer", "model_answer", "human_answer"]
    assert [r.meta["slice"]["category"] for r in bundle.responses[::2]] == [
        "physics",
        "technology",
        "biology",
    ]
    notes = " ".join(bundle.notes)
    assert "lists 'answer1' -> hallucinated 2, empty -> faithful 2" in notes


def test_haluquestqa_numeric_score_with_a_threshold(tmp_path):
    lines = ["\t".join(HALUQUEST_HEADER)] + ["\t".join(r) for r in HALUQUEST_ROWS]
    (tmp_path / "complete_data.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "scores.toml").write_text(
        '[dataset]\nname = "hq-score"\npath = "complete_data.csv"\ntext = "ans2_text"\n'
        'label = "factuality_human_score"\nthreshold = 0.5\nhallucinated_if = "below"\n'
    )
    (dataset,) = load_spec(tmp_path / "scores.toml")
    assert list(_human(dataset.load()).values()) == [False, True, False]


# -- boschresearch/DelucionQA: CSV, response label plus per-sentence labels as a dict -----------

DELUCION_CSV = (
    "sample_id,Retreival Setting,Question,Context,Answer,Answer_sent_tokenized,"
    "Sentence_labels,Label,Answerable,Does_not_answer\n"
    'dev_0,Lucene Search,how to close the invented hood?,"[1, 2, 3]",'
    '"Lower the hood, then press it. Then sing to it.",'
    "\"['R1:  Lower the hood, then press it.', 'R2:  Then sing to it.']\","
    "\"{'R1': 'Supported', 'R2': 'Neither'}\",Hallucinated,TRUE,FALSE\n"
    'dev_1,Adaptive Ensemble Search,how to close the invented hood?,"[1, 2]",'
    '"Lower the hood and press it.",'
    "\"['R1:  Lower the hood and press it.']\","
    "\"{'R1': 'Supported'}\",Not Hallucinated,TRUE,FALSE\n"
)
DELUCION_SPEC = """
[[datasets]]
name = "delucionqa"
path = "dev.csv"
text = "Answer"
columns = { example_id = "sample_id", question = "Question" }
constants = { task = "rag_qa", split = "dev" }
label = "Label"
positive = ["Hallucinated"]
negative = ["Not Hallucinated"]
meta = ["Retreival Setting"]

[[datasets]]
name = "delucionqa-sentences"
path = "dev.csv"
text = "Answer"
columns = { example_id = "sample_id", question = "Question" }
sentences = ["Sentence_labels"]
positive = ["Neither", "Conflicted"]
negative = ["Supported"]
"""


def test_delucionqa_response_and_sentence_labels_agree(tmp_path, capsys):
    (tmp_path / "dev.csv").write_text(DELUCION_CSV)
    (tmp_path / "delucion.toml").write_text(DELUCION_SPEC)
    by_label, by_sentences = (d.load() for d in load_spec(tmp_path / "delucion.toml"))
    assert list(_human(by_label).values()) == [True, False]
    assert list(_human(by_sentences).values()) == [True, False]
    assert by_label.responses[0].meta["slice"] == {"Retreival Setting": "Lucene Search"}
    assert by_label.responses[0].meta["split"] == "dev"
    assert main(["datasets", "describe", str(tmp_path / "delucion.toml")]) == 0
    shown = capsys.readouterr().out
    assert "'hallucinated' -> hallucinated 1" in shown and "item 'supported' -> faithful 2" in shown


# -- maybenotime/PHD: one JSON list per stratum, with sampled answers ---------------------------

PHD_SPEC = """
[dataset]
name = "phd"
path = "phd.json"
records = "*"                 # {"phd_low": [...], "phd_medium": [...], ...}
text = "AI"
columns = { question = "entity" }
samples = "samples"
label = "label"
positive = ["non-factual"]
negative = ["factual"]
meta = ["stratum", "domain"]
"""


def test_phd_strata_and_samples_feed_the_sampling_detectors(tmp_path):
    (tmp_path / "phd.json").write_text((SHAPES / "phd_samples.json").read_text())
    (tmp_path / "phd.toml").write_text(PHD_SPEC)
    (dataset,) = load_spec(tmp_path / "phd.toml")
    bundle = dataset.load()
    assert all(r.samples for r in bundle.responses)
    strata = {r.meta["slice"]["stratum"] for r in bundle.responses}
    assert strata == {"phd_low", "phd_high"}
    out = tmp_path / "run"
    code = main(
        ["-q", "detect", "-d", str(tmp_path / "phd.toml"), "-D", "mean_len", "--out", str(out)]
    )
    assert code == 0
    scores = RunStore(out).frame("scores")
    values = scores[scores["detector"] == "mean_len"]["value"]
    assert len(values) == len(bundle.responses) and values.notna().all()


# -- sentence-level labels in one JSON file per generating model -------------------------------


def _per_model(folder):
    sentences = {
        "gpt-4": [["accurate", "accurate"], ["accurate", "minor_inaccurate"]],
        "llama-2-7b": [["major_inaccurate"], ["accurate", "accurate", "accurate"]],
    }
    for model, labels in sentences.items():
        rows = [
            {
                "concept": f"person {i}",
                "output": " ".join(f"Sentence {j} about person {i}." for j in range(len(s))),
                "annotation": s,
            }
            for i, s in enumerate(labels)
        ]
        (folder / "by_model").mkdir(exist_ok=True)
        (folder / "by_model" / f"{model}.json").write_text(json.dumps(rows))


SENTENCE_SPEC = """
datasets:
  - name: wikibio-style
    path: by_model/*.json         # one file per model: the file's name is the model
    text: output
    columns: {example_id: concept, question: concept}
    sentences: [annotation]
    positive: [major_inaccurate, minor_inaccurate]
    negative: [accurate]
"""


def test_sentence_labels_in_one_file_per_model_make_one_dataset(tmp_path):
    _per_model(tmp_path)
    (tmp_path / "bio.yml").write_text(SENTENCE_SPEC)
    (dataset,) = load_spec(tmp_path / "bio.yml")
    bundle = dataset.load()
    assert len(bundle.examples) == 2  # the same two concepts, answered by both models
    human = _human(bundle)
    by_model = {}
    for r in bundle.responses:
        by_model.setdefault(r.model, []).append(human[r.response_id])
    assert by_model == {"gpt-4": [False, True], "llama-2-7b": [True, False]}
    store = _ingest(tmp_path / "bio.yml", tmp_path)
    assert set(store.frame("responses")["model"]) == {"gpt-4", "llama-2-7b"}


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        (
            "dataset:\n  path: x.csv\n  answers: ['a:answer1', 'b:faithful']\n",
            r"line 3, field 'answers'.*mix tags with fixed labels",
        ),
        ("dataset:\n  path: x.csv\n  each_file: maybe\n", r"line 3, field 'each_file'"),
        ("dataset:\n  path: [x.csv, 3]\n", r"line 2, field 'path'"),
        ("dataset:\n  path: x.csv\n  aggregate: mean\n", r"line 3, field 'aggregate'"),
        ("datasets:\n  - path: x.csv\n  - path: x.csv\n    txt: a\n", r"line 4, field 'txt'"),
        ("dataset: [1\n", r"line 2: The spec file is not valid YAML"),
        ("dataset: !!python/object:os.system {}\n", r"not valid YAML"),
    ],
)
def test_bad_yaml_specs_name_the_line_and_the_key(tmp_path, spec, match):
    from realitycheck.errors import InvalidInputError

    (tmp_path / "x.csv").write_text("text,label\na,yes\n")
    (tmp_path / "bad.yaml").write_text(spec)
    with pytest.raises(InvalidInputError, match=match) as err:
        load_spec(tmp_path / "bad.yaml")
    assert "bad.yaml" in str(err.value)
