"""NQ-Open end to end on the tiny local model: it answers, both judges grade, a rerun pays nothing.

The model has random weights, so its answers are noise and its replies
give no verdict (``invalid``, counted as unreadable; ``invalid_as=hallucinated``
here, so the labeler shift has values to compare): what is checked is the
whole path on a real model folder (generate, judge through the chat template
and the call cache, labeler shift beside ROUGE-L), not the verdicts.
"""

from __future__ import annotations

import pytest

from realitycheck.cli import main
from realitycheck.store import RunStore, load_results


@pytest.fixture
def keys(tiny_lm_dir):
    backend = f'hf[model="{tiny_lm_dir}",device=cpu]'
    return (
        backend,
        f"qa_judge[judge={backend},max_tokens=6,invalid_as=hallucinated]",
        f"factuality_judge[judge={backend},max_tokens=6,invalid_as=hallucinated]",
    )


def test_nq_open_on_the_tiny_model_through_the_cache(keys, tmp_path, request, capsys):
    backend, qa, factuality = keys
    out, cache = tmp_path / "run", tmp_path / "cache"
    common = ["--out", str(out), "--cache-dir", str(cache)]
    generate = ["-q", "generate", "-d", "nq_open", "-b", backend, "--plan", "greedy"]
    assert main([*generate, "--limit", "3", *common]) == 0
    labelers = ["-l", "rouge_l", "-l", qa, "-l", factuality]
    assert main(["-q", "label", "-d", "nq_open", *labelers, *common]) == 0
    labels = RunStore(out).frame("labels")
    for name in ("qa_judge", "factuality_judge"):
        mine = labels[labels["labeler"].str.startswith(name)]
        assert len(mine) == 3 and (mine["error"] == "").all()
        assert set(mine["category"]) == {"invalid"} and mine["hallucinated"].all()
        assert (mine["unreadable"] == 1).all() and not mine["failed"].any()  # still counted

    sent = request.getfixturevalue("hf_sent")  # counts from here on
    again = tmp_path / "again"
    rerun = ["--out", str(again), "--cache-dir", str(cache)]
    assert main([*generate, "--limit", "3", *rerun]) == 0
    assert main(["-q", "label", "-d", "nq_open", *labelers, *rerun]) == 0
    assert sent == []  # answers and verdicts all came from the call cache

    assert main(["-q", "detect", "-d", "nq_open", "-D", "length", *common]) == 0
    capsys.readouterr()
    study = ["-q", "study", "labeler_shift[reference=rouge_l]", "--run", str(out), "--no-report"]
    assert main(study) == 0
    (result,) = load_results(RunStore(out))
    shift = result.table("shift")
    assert {k.split("[")[0] for k in shift["labeler"]} == {"qa_judge", "factuality_judge"}
