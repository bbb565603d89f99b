"""Exit codes tell the truth: a stage whose items failed exits 3, unless --allow-failures.

Failed = a call that never succeeded (retryable or fatal). A value the
component does not define ("missing") and a reply that could not be read
("unreadable") are counted and printed, but are not failures.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from realitycheck import Label, Labeler, Score
from realitycheck.cli import main
from realitycheck.cli._common import EXIT_ERROR, EXIT_FAILURES, terminal_text
from realitycheck.detectors import Detector, detectors
from realitycheck.labelers import labelers
from realitycheck.pipeline import StageReport, commonest_error
from realitycheck.pipeline._report import outcome_of

HOSTILE = "HTTP 400: bad\x1b]52;c;ZXZpbA==\x07 model \u202egpt\nnext line"


@dataclass(frozen=True, kw_only=True)
class Refusing(Labeler):
    """Every call is refused for good (a wrong model name: HTTP 400 on every call)."""

    def label(self, responses, examples, *, cache=None):
        return [
            Label(
                response_id=r.response_id,
                labeler=self.key,
                hallucinated=None,
                error=f"HTTP 400: model 'gtp-4o' does not exist (call {i})" if i else "HTTP 404",
                failed=True,
            )
            for i, r in enumerate(responses)
        ]


@dataclass(frozen=True, kw_only=True)
class Unreadable(Detector):
    """A value for half the responses; the other half's replies could not be read."""

    def score(self, responses, run):
        out = []
        for i, r in enumerate(responses):
            if i % 2:
                out.append(Score(response_id=r.response_id, detector=self.key, value=0.5))
            else:
                error = "no conclusion: 'The answer is, well, hard to say'"
                out.append(
                    Score(response_id=r.response_id, detector=self.key, value=None, error=error)
                )
            if i % 3 == 0:
                out[-1] = Score(
                    response_id=r.response_id,
                    detector=self.key,
                    value=out[-1].value,
                    error=out[-1].error,
                    unreadable=2,
                )
        return out


Refusing.name = "refusing_judge"
Unreadable.name = "unreadable_detector"


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(labelers._items, "refusing_judge", Refusing)
    monkeypatch.setitem(detectors._items, "unreadable_detector", Unreadable)


@pytest.fixture
def fruit(tmp_path, fruit_answers):
    path = fruit_answers(tmp_path / "mine.jsonl", 6)
    return (
        f"files[path={path},text=answer,label=is_wrong,positive=yes,negative=no,"
        "columns=example_id:qid+model:llm]"
    )


def _trivia(tmp_path, n=3):
    rows = [
        {
            "question": f"What is the answer to question number {i}?",
            "question_id": f"tc_{i}",
            "question_source": "",
            "answer": {"aliases": [f"Answer{i}"], "normalized_aliases": [], "value": f"A{i}"},
        }
        for i in range(n)
    ]
    path = tmp_path / "validation-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return f"triviaqa[path={path}]", str(tmp_path)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- generate ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "error"),
    [
        ("mock[reply=Paris,fail_on=answer]", "FatalBackendError: HTTP 400"),  # wrong model name
        ("mock[reply=Paris,fail_every=1]", "RetryableBackendError: HTTP 503"),  # overloaded
    ],
)
def test_generate_whose_every_call_fails_exits_3_with_the_commonest_error(
    tmp_path, capsys, backend, error
):
    dataset, data_dir = _trivia(tmp_path)
    args = ["-q", "generate", "-d", dataset, "--data-dir", data_dir, "-b", backend]
    args += ["--plan", "greedy", "--no-cache", "--out", str(tmp_path / "run")]
    assert main(args) == EXIT_FAILURES == 3
    printed = capsys.readouterr()
    assert "0 responses generated, 0 already stored, 3 failed" in printed.out
    assert "error: 3 items failed (generate triviaqa" in printed.err
    # The three texts differ in a number only ("request 2 of this call"): one error, 3 times.
    assert f"commonest error (3 times, generate triviaqa): best answer: {error}" in printed.err
    assert main([*args, "--allow-failures"]) == 0
    assert "accepted with --allow-failures" in capsys.readouterr().err


def test_generate_against_a_dead_server_exits_3(tmp_path, capsys):
    dataset, data_dir = _trivia(tmp_path)
    dead = f"openai[model=tiny,base_url=http://127.0.0.1:{_free_port()}/v1,max_retries=0]"
    args = ["-q", "generate", "-d", dataset, "--data-dir", data_dir, "-b", dead, "--no-cache"]
    assert main([*args, "--plan", "greedy", "--out", str(tmp_path / "run")]) == 3
    printed = capsys.readouterr()
    assert "0 responses generated, 0 already stored, 3 failed" in printed.out
    assert "commonest error (3 times, generate triviaqa)" in printed.err


def test_generate_that_succeeds_exits_0(tmp_path, capsys):
    dataset, data_dir = _trivia(tmp_path)
    args = ["-q", "generate", "-d", dataset, "--data-dir", data_dir, "-b", "mock[reply=Paris]"]
    assert main([*args, "--plan", "greedy", "--no-cache", "--out", str(tmp_path / "run")]) == 0
    assert "items failed" not in capsys.readouterr().err


# -- label and detect --------------------------------------------------------------------------


def test_a_judge_whose_calls_fail_retryably_exits_3_then_0_once_the_server_is_back(
    tmp_path, fruit, capsys
):
    run = str(tmp_path / "run")
    down = ["-q", "label", "-d", fruit, "-l", "qa_judge[judge=mock[reply=correct,fail_every=1]]"]
    assert main([*down, "--no-cache", "--out", run]) == 3
    printed = capsys.readouterr()
    assert "qa_judge[judge=mock[reply=correct]]: 0 computed, 6 failed, 0 already stored" in (
        printed.out
    )
    assert "6 of 6 failed with: the judge 'mock[reply=correct]' failed on 1 of 1 calls" in (
        printed.err
    )
    assert "commonest error (6 times, qa_judge[judge=mock[reply=correct]])" in printed.err
    up = ["-q", "label", "-d", fruit, "-l", "qa_judge[judge=mock[reply=correct]]"]
    assert main([*up, "--no-cache", "--out", run]) == 0
    assert "6 computed (6 retried after an error)" in capsys.readouterr().out


def test_a_fatal_failure_exits_3_now_and_on_every_rerun_until_recomputed(
    tmp_path, fruit, registered, capsys
):
    args = ["-q", "label", "-d", fruit, "-l", "refusing_judge", "--out", str(tmp_path / "run")]
    assert main(args) == 3
    printed = capsys.readouterr()
    assert "refusing_judge: 0 computed, 6 failed, 0 already stored" in printed.out
    # The texts differ only in a number: one error, 5 times (the sixth is another).
    assert "commonest error (5 times, refusing_judge): HTTP 400: model 'gtp-4o' does not" in (
        printed.err
    )
    # A fatal error is not retried by a plain rerun, and the run still holds no value for it.
    assert main(args) == 3
    printed = capsys.readouterr()
    assert "refusing_judge: 0 computed, 6 already stored (6 of them failed before;" in printed.out
    assert "error: 6 items failed (refusing_judge: 6)" in printed.err
    assert main([*args, "--allow-failures"]) == 0


def test_the_printed_error_is_terminal_safe(tmp_path, fruit, registered, capsys, monkeypatch):
    monkeypatch.setattr(Refusing, "label", _all_hostile)
    args = ["-q", "label", "-d", fruit, "-l", "refusing_judge", "--out", str(tmp_path / "run")]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "bad[U+001B]]52;c;ZXZpbA==[U+0007] model [U+202E]gpt[U+000A]next line" in err


def _all_hostile(self, responses, examples, *, cache=None):
    return [
        Label(
            response_id=r.response_id,
            labeler=self.key,
            hallucinated=None,
            error=HOSTILE,
            retryable=True,
        )
        for r in responses
    ]


def test_unreadable_replies_are_counted_and_printed_but_are_not_failures(
    tmp_path, fruit, registered, capsys
):
    args = ["-q", "detect", "-d", fruit, "-D", "unreadable_detector,length"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    # 6 responses in one batch: values at 1, 3, 5; unreadable replies at 0 and 3.
    assert "unreadable_detector: 3 computed, 3 missing, 2 with unreadable replies, 0 already" in (
        out
    )
    assert "length: 6 computed, 0 already stored" in out


@pytest.mark.parametrize(
    ("verb", "flag", "key"),
    [
        ("label", "-l", "qa_judge[judge=mock[reply=correct,fail_on=fruit]]"),
        ("detect", "-D", "p_true[judge=mock[reply=correct,fail_on=fruit]]"),
    ],
)
def test_a_real_judge_refused_on_every_call_exits_3(tmp_path, fruit, capsys, verb, flag, key):
    # fail_on: the mock refuses as a server refuses a wrong model name (HTTP 400, fatal).
    args = ["-q", verb, "-d", fruit, flag, key, "--no-cache", "--out", str(tmp_path / "run")]
    assert main(args) == 3
    printed = capsys.readouterr()
    assert ": 0 computed, 6 failed, 0 already stored" in printed.out
    assert (
        "FatalBackendError: HTTP 400" in printed.err and "commonest error (6 times" in printed.err
    )


@pytest.mark.parametrize(
    ("verb", "flag", "key"),
    [
        ("label", "-l", 'qa_judge[judge=mock[reply="The proposed answer is not correct."]]'),
        ("detect", "-D", 'p_true[judge=mock[reply="Hard to say."]]'),
    ],
)
def test_a_real_judge_whose_replies_are_unreadable_counts_them_and_exits_0(
    tmp_path, fruit, capsys, verb, flag, key
):
    args = ["-q", verb, "-d", fruit, flag, key, "--no-cache", "--out", str(tmp_path / "run")]
    assert main(args) == 0
    printed = capsys.readouterr()
    assert ": 0 computed, 6 missing, 6 with unreadable replies, 0 already stored" in printed.out
    assert "items failed" not in printed.err


def test_missing_values_are_not_failures(tmp_path, capsys):
    path = tmp_path / "no_refs.jsonl"
    path.write_text('{"text": "Red", "label": "no"}\n{"text": "Blue", "label": "yes"}\n')
    dataset = f"files[path={path},positive=yes,negative=no]"
    args = ["-q", "label", "-d", dataset, "-l", "qa_judge[judge=mock[reply=correct]]"]
    assert main([*args, "--no-cache", "--out", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr()
    assert "items failed" not in printed.err


def test_evaluate_and_run_exit_3_when_items_failed(tmp_path, fruit, capsys):
    judge = "qa_judge[judge=mock[reply=correct,fail_every=1]]"
    args = ["-q", "evaluate", "-d", fruit, "-l", judge, "-D", "length", "--n-resamples", "20"]
    run = tmp_path / "run"
    assert main([*args, "--no-cache", "--out", str(run)]) == 3
    err = capsys.readouterr().err
    assert "error: 6 items failed (qa_judge[judge=mock[reply=correct]]: 6)" in err
    assert (run / "report.html").exists() and (run / "metrics.csv").exists()  # all else is kept
    assert main([*args, "--no-cache", "--out", str(run), "--allow-failures", "--no-report"]) == 0

    config = tmp_path / "study.toml"
    path = fruit.split("path=")[1].split(",")[0]
    config.write_text(
        f'labelers = ["{judge}"]\ndetectors = ["length"]\nstudies = []\n'
        f'[run]\nout = "cfgrun"\ncache = false\nreport = false\n[bootstrap]\nn_resamples = 20\n'
        f'[[datasets]]\nname = "files"\nparams = {{ path = "{path}", text = "answer", '
        'label = "is_wrong", positive = "yes", negative = "no", '
        'columns = ["example_id:qid", "model:llm"] }\n'
    )
    assert main(["-q", "run", str(config)]) == 3
    assert "6 items failed" in capsys.readouterr().err
    assert main(["-q", "run", str(config), "--allow-failures"]) == 0


def test_bad_input_stays_exit_2(tmp_path):
    assert main(["-q", "label", "-d", "nope", "-l", "rouge_l", "--out", str(tmp_path)]) == 2
    assert EXIT_ERROR == 2 != EXIT_FAILURES


# -- the counting underneath -------------------------------------------------------------------


def test_outcome_of_counts_fatal_and_retryable_failures_as_failed_and_invalid_as_missing():
    def label(**fields):
        return Label(response_id="r", labeler="j", **{"hallucinated": None, **fields})

    assert outcome_of(label(error="HTTP 503", retryable=True)) == "failed"
    assert outcome_of(label(error="HTTP 400", failed=True)) == "failed"
    assert outcome_of(label(error="no reference answers to grade against")) == "missing"
    assert outcome_of(label(category="invalid", error="no conclusion", unreadable=1)) == "missing"
    assert outcome_of(label(category="refuse")) == "value"
    score = Score(response_id="r", detector="d", value=0.5, unreadable=1)
    assert outcome_of(score) == "value"


def test_commonest_error_groups_texts_that_differ_in_numbers_only():
    counts = {"HTTP 503 (request 1)": 1, "HTTP 400": 2, "HTTP 503 (request 2)": 2}
    assert commonest_error(counts) == ("HTTP 503 (request 1)", 3)
    assert commonest_error({}) is None
    report = StageReport()
    report.count_failures("j", {"a": 1})
    report.count_failures("j", {"a": 2, "b": 1})
    assert report.commonest_failure("j") == ("a", 3) and report.commonest_failure("k") is None


def test_terminal_text_escapes_controls_scrubs_secrets_and_cuts():
    shown = terminal_text("a\x1b[31mred\x00\u2066 sk-" + "A1b2C3d4" * 6)
    assert shown == "a[U+001B][31mred[U+0000][U+2066] <redacted>"
    assert terminal_text("x" * 500, limit=10) == "x" * 9 + "…"


# -- warnings ----------------------------------------------------------------------------------


def test_warnings_print_as_one_escaped_line_without_a_source_location(tmp_path, capsys, fruit):
    import logging

    # An old parameter name: a FutureWarning from the registry, shown as one line.
    args = ["-q", "label", "-d", fruit, "-l", "nli[classifier=mock]", "--out", str(tmp_path / "r")]
    assert main([*args, "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert "warning: 'classifier' is now 'judge'" in err
    assert ".py:" not in err and "FutureWarning" not in err
    # A logged warning (a server that ignored a field) reaches the terminal escaped.
    from realitycheck.cli._app import _warnings_as_lines

    with _warnings_as_lines():
        logging.getLogger("realitycheck.backends.openai").warning("server \x1b]0;PWNED\x07 said")
    err = capsys.readouterr().err
    assert err == "warning: server [U+001B]]0;PWNED[U+0007] said\n"


def test_the_stage_summary_escapes_component_keys(capsys):
    from realitycheck.cli._echo import echo_stage

    key = 'qa_judge[judge=openai[model="gpt\x1b]0;PWNED\x07\u202e"]]'
    report = StageReport(computed={key: 2}, missing={key: 1}, missing_why={key: "no reference"})
    echo_stage(report)
    printed = capsys.readouterr()
    both = printed.out + printed.err
    assert "\x1b" not in both and "\x07" not in both and "\u202e" not in both
    assert 'model="gpt[U+001B]]0;PWNED[U+0007][U+202E]"' in printed.out


def test_a_changed_default_keeps_the_key_and_the_summary_says_the_stored_records_differ(
    tmp_path, capsys, fruit
):
    import json

    from realitycheck.store import RunStore

    run = tmp_path / "run"
    args = ["label", "-d", fruit, "-l", "qa_judge[judge=mock[reply=correct]]", "--out", str(run)]
    assert main([*args, "--no-cache"]) == 0
    # The run was labelled by an older release whose default policy was 'hallucinated'.
    store = RunStore(run)
    manifest = store.read_manifest()
    (key,) = [k for k in manifest["components"] if k.startswith("qa_judge")]
    manifest["components"][key]["params"]["invalid_as"] = "hallucinated"
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    capsys.readouterr()
    assert main([*args, "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert f"note: {key}: the 6 stored records were made with another version of it" in err
    assert 'invalid_as: "hallucinated" -> "excluded"' in err
    assert main([*args, "--no-cache"]) == 0  # the manifest now holds this version: no note
    assert "another version" not in capsys.readouterr().err
