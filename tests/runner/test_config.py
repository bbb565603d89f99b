import textwrap

import pytest

from realitycheck.errors import InvalidInputError
from realitycheck.runner import load_run_config

GOOD = """\
labelers = ["rouge_l[threshold=0.5]", "human"]
detectors = ["length", "recorded:hhem-2.1"]
studies = ["length"]

[run]
out = "runs/a"
batch_size = 4
cache = false

[[datasets]]
name = "nq-open"

[[datasets]]
name = "ragtruth"
params = { tasks = ["qa"] }

[evaluate]
thresholds = { length = 30 }

[bootstrap]
n_resamples = 50
"""


def _write(tmp_path, text):
    path = tmp_path / "study.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_good_config(tmp_path):
    config = load_run_config(_write(tmp_path, GOOD))
    assert config.out == tmp_path / "runs" / "a"
    assert [e.dataset.key for e in config.datasets] == ["nq_open", "ragtruth[tasks=qa]"]
    assert config.backend is None and config.cache is False and config.batch_size == 4
    assert [lab.key for lab in config.labelers] == ["rouge_l[threshold=0.5]"]
    assert config.label_keys == ("rouge_l[threshold=0.5]", "human")
    assert config.detector_keys == ("length", "recorded:hhem-2.1")
    assert config.studies == ("length",)
    assert config.bootstrap.n_resamples == 50 and config.evaluation.thresholds == {"length": 30}
    assert config.evaluation.bootstrap == config.bootstrap
    assert config.evaluation.detectors == ("length", "recorded:hhem-2.1")


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("edit", "needle", "field", "match"),
    [
        (
            ("n_resamples = 50", "n_resamples = 50\nn_resample = 3"),
            "n_resample = 3",
            "bootstrap.n_resample",
            "Unknown key 'n_resample'. Did you mean 'n_resamples'",
        ),
        (
            ("batch_size = 4", "batch_size = 'four'"),
            "batch_size",
            "run.batch_size",
            "The 'batch_size' parameter of \\[run\\] must be an int >= 1. Got 'four' instead",
        ),
        (
            ('name = "ragtruth"', 'name = "ragtruht"'),
            "ragtruht",
            "datasets[1].name",
            "Did you mean 'ragtruth'",
        ),
        (
            ('tasks = ["qa"]', 'task = ["qa"]'),
            "task = ",
            "datasets[1].params",
            "no parameter 'task'. Did you mean 'tasks'",
        ),
        (
            ('"length", "recorded', '"lenght", "recorded'),
            "lenght",
            "detectors[0]",
            "Did you mean 'length'",
        ),
        (
            ("n_resamples = 50", "confidence = 2"),
            "confidence = 2",
            "bootstrap.confidence",
            "'confidence' parameter of \\[bootstrap\\] must be a float in \\(0, 1\\)",
        ),
        (
            ('studies = ["length"]', 'studies = ["lenght"]'),
            "lenght",
            "studies[0]",
            "Did you mean 'length'",
        ),
        (
            ('[[datasets]]\nname = "nq-open"', '[[datasets]]\nname = "nq-open"\nlimit = 5'),
            "limit = 5",
            "datasets[0].limit",
            "A limit applies to generation",
        ),
        (
            ("[evaluate]", "[plan]\nn_samples = 2\n\n[evaluate]"),
            "[plan]",
            "plan",
            "A \\[plan\\] needs a \\[backend\\]",
        ),
    ],
)
def test_errors_name_the_file_line_and_field(tmp_path, edit, needle, field, match):
    text = GOOD.replace(*edit)
    assert text != GOOD
    path = _write(tmp_path, text)
    with pytest.raises(InvalidInputError, match=match) as info:
        load_run_config(path)
    assert info.value.path == str(path)
    assert info.value.field == field
    assert info.value.line == _line_of(text, needle)


def test_a_top_level_key_placed_under_a_table_gets_a_hint(tmp_path):
    text = GOOD.replace('studies = ["length"]\n', "") + 'studies = ["length"]\n'
    with pytest.raises(InvalidInputError, match="top-level key: in TOML") as info:
        load_run_config(_write(tmp_path, text))
    assert info.value.field == "bootstrap.studies" and info.value.line == len(text.splitlines())


def test_bootstrap_settings_under_evaluate_say_where_they_belong(tmp_path):
    text = GOOD.replace("[evaluate]\n", "[evaluate]\nseed = 3\n")
    with pytest.raises(InvalidInputError, match="'seed' belongs to the \\[bootstrap\\] table"):
        load_run_config(_write(tmp_path, text))


def test_components_may_be_tables_with_nested_components(tmp_path):
    text = GOOD.replace(
        'detectors = ["length", "recorded:hhem-2.1"]',
        'detectors = ["length", { name = "semantic_entropy", params = { equivalence = "llm", '
        'judge = { name = "mock", params = { reply = "yes" } } } }, "recorded:hhem-2.1"]',
    )
    text = text.replace(
        'studies = ["length"]', 'studies = [{ name = "length", params = { unit = "chars" } }]'
    )
    config = load_run_config(_write(tmp_path, text))
    entropy = config.detectors[1]
    assert entropy.judge.name == "mock" and entropy.judge.reply == "yes"
    assert config.detector_keys == ("length", entropy.key, "recorded:hhem-2.1")
    assert "judge=mock[reply=yes]" in entropy.key
    assert config.studies == ("length[unit=chars]",)


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ('{ params = { unit = "chars" } }', "A component table needs a name"),
        ('{ name = "length", unit = "chars" }', "Unknown key 'unit'"),
        ('{ name = "lenght" }', "Did you mean 'length'"),
        ("3", "The 'detectors\\[2\\]' parameter of the run config must be a str or a table. Got 3"),
    ],
)
def test_bad_component_tables_are_located(tmp_path, entry, match):
    text = GOOD.replace('"recorded:hhem-2.1"]', f'"recorded:hhem-2.1", {entry}]')
    with pytest.raises(InvalidInputError, match=match) as info:
        load_run_config(_write(tmp_path, text))
    assert info.value.field.startswith("detectors[2]")


def test_invalid_toml_names_its_line(tmp_path):
    text = GOOD.replace("batch_size = 4", "batch_size = = 4")
    with pytest.raises(InvalidInputError, match="not valid TOML") as info:
        load_run_config(_write(tmp_path, text))
    assert info.value.line == _line_of(text, "= = 4")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[run]\nout = 'x'\n", "at least one \\[\\[datasets\\]\\]"),
        ("[[datasets]]\nname = 'nq-open'\n", "needs out ="),
        ("[run]\nout = 'x'\n[[datasets]]\nparams = {}\n", "needs a name"),
        (
            "[run]\nout = 'x'\n[[datasets]]\nname = 'nq-open'\n[backend]\nname = 'nope'\n",
            "no backend named 'nope'",
        ),
        ("runn = 1\n", "Unknown key 'runn'. Did you mean 'run'"),
    ],
)
def test_missing_and_unknown_sections(tmp_path, text, match):
    with pytest.raises(InvalidInputError, match=match):
        load_run_config(_write(tmp_path, text))


def test_a_missing_file(tmp_path):
    with pytest.raises(InvalidInputError, match="does not exist"):
        load_run_config(tmp_path / "nope.toml")


def test_relative_paths_are_relative_to_the_file(tmp_path):
    text = (
        "[run]\nout = 'r'\ndata_dir = 'data'\n"
        "[[datasets]]\nname = 'triviaqa'\nparams = { path = 'tqa.parquet' }\n"
        "[[datasets]]\nname = 'nq-open'\n"
    )
    config = load_run_config(_write(tmp_path, text))
    trivia, nq = (e.dataset for e in config.datasets)
    assert trivia.path == str(tmp_path / "tqa.parquet")
    assert nq.data_dir == str(tmp_path / "data")


def test_a_top_level_reference_reaches_evaluate(tmp_path):
    config = load_run_config(_write(tmp_path, 'reference = "rouge_l[threshold=0.5]"\n' + GOOD))
    assert config.reference == config.evaluation.reference == "rouge_l[threshold=0.5]"
    assert load_run_config(_write(tmp_path, GOOD)).evaluation.reference is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            'reference = ""\n' + GOOD,
            "The 'reference' parameter of the run config must be a label key",
        ),
        ("reference = 3\n" + GOOD, "must be a label key \\(e.g. human\\). Got 3 instead"),
        (GOOD.replace("[evaluate]\n", '[evaluate]\nreference = "human"\n'), "reference"),
    ],
)
def test_bad_references_are_refused(tmp_path, text, match):
    with pytest.raises(InvalidInputError, match=match):
        load_run_config(_write(tmp_path, text))
