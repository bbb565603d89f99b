"""SelfCheck, P(True), Surprisal and the BERTScore labelers end to end through the CLI.

On real data with tiny models: the tiny Llama answers three NQ-Open questions
with three samples each, a tiny BERT scores BERTScore (against NQ-Open's gold
answers) and K-BERTScore (against BEGIN's knowledge snippets, on BEGIN's own
responses), and every detector runs through the call cache. A rerun of every
stage in the same run calls no model at all; a rerun into a new run folder
with the same cache asks the tiny Llama nothing (the BERTScore encoder, which
is not a backend, embeds the texts again there).

The models have random weights, so the numbers are noise: what is checked
is that every component runs on real records and that reruns are free.
"""

from __future__ import annotations

import pytest
from _tiny_bert import build_tiny_bert

from realitycheck.cli import main
from realitycheck.store import RunStore


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    return str(build_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


def test_selfcheck_family_on_nq_open_and_begin_then_reruns_are_free(
    tiny_lm_dir, tiny_bert, tmp_path, request, monkeypatch
):
    import realitycheck.encoders.bertscore as bertscore_module
    from realitycheck.backends.hf import HFBackend

    backend = f'hf[model="{tiny_lm_dir}",device=cpu]'
    bert = f'model="{tiny_bert}"'
    detectors = [
        "selfcheck_ngram",
        f"selfcheck_bertscore[{bert}]",
        f"selfcheck_prompt[judge={backend},max_tokens=2]",
        f"p_true[judge={backend}]",
        f"surprisal[judge={backend}]",
    ]
    out, cache = tmp_path / "run", tmp_path / "cache"
    common = ["--out", str(out), "--cache-dir", str(cache)]
    generate = ["-q", "generate", "-d", "nq_open", "-b", backend, "--limit", "3"]
    generate += ["--plan", "default[n_samples=3,max_tokens=8]"]
    assert main([*generate, *common]) == 0
    detect = ["-q", "detect", "-d", "nq_open", *(x for d in detectors for x in ("-D", d))]
    assert main([*detect, *common]) == 0
    label = ["-q", "label", "-d", "nq_open", "-l", f"bertscore[{bert}]"]
    assert main([*label, *common]) == 0
    begin = ["-q", "label", "-d", "begin[splits=tc-dev]", "-l", f"k_bertscore[{bert}]"]
    assert main([*begin, *common]) == 0

    store = RunStore(out)
    scores = store.frame("scores")
    assert set(scores["detector"].str.split("[").str[0]) == {d.split("[")[0] for d in detectors}
    assert len(scores) == 3 * len(detectors)
    for name, rows in scores.groupby(scores["detector"].str.split("[").str[0]):
        if name == "p_true":  # "yes" is not a word of the tiny model: P(True) = 0
            ended = rows["error"].str.contains("ended at once")
            neither = rows["error"].str.startswith("neither yes nor no")
            assert (rows.loc[neither, "unreadable"] == 1).all(), rows
            assert rows.loc[neither, "value"].isna().all(), rows
            assert (rows.loc[~ended & ~neither, "value"] == 1.0).all(), rows
        elif name == "selfcheck_prompt":
            # The random tiny model's 2-token replies are cut before any yes or no: none is
            # read, so there is no value, and every reply is counted.
            assert rows["value"].isna().all() and (rows["unreadable"] > 0).all(), rows
            assert rows["error"].str.startswith("no reply about sentence 1 of").all(), rows
        else:
            assert (rows["error"] == "").all() and rows["value"].notna().all(), rows
    labels = store.frame("labels")
    ours = labels[labels["labeler"].str.contains("bertscore")]
    nq = ours[ours["labeler"].str.startswith("bertscore")]
    begin_labels = ours[ours["labeler"].str.startswith("k_bertscore")]
    assert len(nq) == 3 and nq["score"].notna().all()
    assert len(begin_labels) == 383 and begin_labels["score"].notna().all()
    assert begin_labels["raw"].str.match(r"P=\S+ R=\S+ F1=\S+").all()

    embedded: list[int] = []
    original = bertscore_module.token_embeddings

    def counted(texts, **kwargs):
        embedded.append(len(texts))
        return original(texts, **kwargs)

    sent = request.getfixturevalue("hf_sent")  # generate calls from here on
    hidden: list[int] = []
    last_hidden = HFBackend.last_hidden

    def counted_hidden(self, texts, *, layer=-1):
        hidden.append(len(texts))
        return last_hidden(self, texts, layer=layer)

    monkeypatch.setattr(bertscore_module, "token_embeddings", counted)
    monkeypatch.setattr(HFBackend, "last_hidden", counted_hidden)
    for command in (generate, detect, label, begin):
        assert main([*command, *common]) == 0
    assert embedded == [] and sent == [] and hidden == []  # the run held every record

    rerun = ["--out", str(tmp_path / "again"), "--cache-dir", str(cache)]
    assert main([*generate, *rerun]) == 0 and main([*detect, *rerun]) == 0
    assert sent == [] and hidden == []  # answers, verdicts and states all came from the cache
    again = RunStore(tmp_path / "again").frame("scores")
    key = ["response_id", "detector"]
    before = scores.sort_values(key).reset_index(drop=True)
    after = again.sort_values(key).reset_index(drop=True)
    assert before[[*key, "value"]].equals(after[[*key, "value"]])
