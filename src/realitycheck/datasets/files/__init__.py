"""The user's own data: one JSON, JSONL, CSV/TSV or Parquet file with a column mapping.

:class:`Files` (registered as ``files``) documents the column mapping with
examples; ``realitycheck datasets describe files`` prints the same text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from realitycheck.datasets import DELIMITERS, FORMATS, KEY_COLUMN, Bundle, Dataset, dataset
from realitycheck.datasets.files._join import check_join
from realitycheck.datasets.files._judges import (
    DEFAULT_INVALID,
    INVALID_AS,
    JudgeEntries,
    check_judge_params,
    judge_entries,
)
from realitycheck.datasets.files._label_rules import (
    AGGREGATES,
    COMBINES,
    DEFAULT_NEGATIVE,
    DEFAULT_POSITIVE,
    DIRECTIONS,
    EMPTY_MEANS,
    LIST_RULES,
    POLARITIES,
    check_label_params,
    column_names,
    share_of,
)
from realitycheck.datasets.files._load import load_files, plan
from realitycheck.datasets.files._mapping import (
    ColumnEntries,
    column_entries,
    label_values,
    texts,
)
from realitycheck.datasets.files._paths import (
    PATHS,
    PathMatch,
    PathPattern,
    check_patterns,
    escape,
    path_entries,
    unique_labels,
)
from realitycheck.datasets.files._shapes import (
    AnswerEntries,
    ConstantEntries,
    check_shape,
    pair_entries,
)
from realitycheck.params import (
    InstanceOf,
    Interval,
    NonEmptyStr,
    OneOf,
    OrNone,
    Satisfies,
    SequenceOf,
    as_tuple,
    param,
    param_error,
    required,
)

__all__ = ["Files", "PathMatch", "PathPattern", "escape", "unique_labels"]

_NAMES = SequenceOf(InstanceOf(str))


@dataset("files")
@dataclass(frozen=True, kw_only=True)
class Files(Dataset):
    """Responses (and optional human labels and scores) from files of your own.

    The format follows the extension: ``.json``, ``.jsonl``, ``.csv``, ``.tsv``
    or ``.parquet`` (``format=`` overrides it). ``path`` is one file, a
    pattern (``by_model/*.json``, ``runs/*/data.json``,
    ``{org}/{model}/{subset}_eval.jsonl``; see "Paths" below) or several
    files (``path=a.jsonl+b.jsonl``); with several, a row that names no model
    takes its file's path below the pattern's folder, without the extension,
    as the model. Each row is one response (or one per answer column, see ``answers``).
    A TOML or YAML spec file (``-d mine.toml``) holds the same parameters for
    one or more named datasets; see "Spec files" below. A field whose column is not named
    uses the column of the same name when there is one (``question``,
    ``context``, ``references``, ``model``, ``example_id``, ``response_id``,
    ``task``). Rows without ``example_id`` are grouped into examples by
    question and context. Build it from a key such as
    ``files[path=my.csv,text=answer,label=is_wrong,positive=yes+1]``.

    Column mapping (field: what its column holds):

    - ``text``: the response; required (parameter ``text``, else a ``text`` column).
    - ``label``: the human label (parameter ``label``, one column or several);
      how its cells become verdicts is set by the label rules below.
    - ``question``: the question or instruction.
    - ``context``: the source passages.
    - ``references``: gold answers, a list or one string split at ``;``.
    - ``model``: the model that wrote the response (default ``unknown``).
    - ``example_id``: groups the responses to one input.
    - ``response_id``: a unique id per row (default: made from example and model).
    - ``task``: one of qa, rag_qa, summary, data2text, dialogue, mcq, open
      (default ``open``); ``constants=task:qa`` sets it for the whole file.

    The last seven read the column of the same name unless ``columns`` maps
    them to another (``columns=question:prompt+references:gold``). Score
    columns (``scores``) become recorded detector scores (an empty or NaN cell,
    JSON ``NaN`` or the text ``nan``, is a missing score with its error, counted
    in a warning; any other non-number is an error); the columns not
    used are kept in each response's ``meta["extra"]``.

    Label rules (each verdict is the ``human`` label of the response):

    - Value lists: a cell in ``positive`` is hallucinated, one in ``negative``
      is faithful (case-insensitive; ``1`` equals ``1.0`` and ``true``
      equals ``True``); any other value is an error naming file, line and column.
      If ``label: true`` means *factual* in your file, say so:
      ``files[path=f.jsonl,positive=false,negative=true]``.
    - Numeric threshold: ``label=factuality_score,threshold=0.5,hallucinated_if=below``
      makes a score under 0.5 hallucinated; ``hallucinated_if=above`` makes a
      score over it hallucinated. A tie (a score equal to the threshold) is
      faithful in both directions. A cell that is not a number is an error.
    - Empty cells: ``empty_means=excluded`` (the default: no verdict, the label
      keeps the error "empty label cell"), ``hallucinated`` or ``faithful``.
      An empty ``errors`` list that means "no error":
      ``label=errors,list_rule=nonempty,empty_means=faithful``.
    - List cells: a JSON list or a Python-literal list (``['yes','no']``, read as
      data, never run) is hallucinated when any item is (``list_rule=any``, the
      default), when all are (``list_rule=all``), or, with ``list_rule=nonempty``,
      whenever it has an item (a list of error spans or error types; a non-empty
      plain cell counts too). An empty list follows ``empty_means``. A table
      cell (``{'R1': 'Supported', 'R2': 'Neither'}``) counts as the list of its
      values. A list of objects is read at one key with a dotted column:
      ``sentences=claims.label`` for ``[{"claim": ..., "label": true}, ...]``.
    - Several label columns: ``label=a+b`` with ``combine=any_of`` (the default:
      hallucinated when any column is, faithful when all are, else no verdict)
      or ``combine=all_of`` (hallucinated when all are, faithful when any is).
    - Per-annotator columns: ``annotators=ann1+ann2+ann3`` reads each column by
      the same rules into a ``human:<column>`` label, and ``human`` is their
      ``aggregate``: ``majority`` (the default; a tie is hallucinated, an
      annotator without a verdict is left out), ``worst`` (hallucinated when
      any annotator says so) or ``dawid_skene`` (each annotator's reliability
      fitted on the whole file; the label's ``score`` is P(hallucinated | votes),
      hallucinated at 0.5 or above; needs crowd-kit). With ``label`` given too,
      ``human`` is that column. Example:
      ``files[path=f.csv,annotators=ann1+ann2+ann3,aggregate=dawid_skene]``.
    - Sentence labels: ``sentences=annotation`` names a column whose cells are
      lists of per-sentence (or per-claim) labels, read by the value lists or
      the threshold. ``sentence_rule=strictest`` (the default: any hallucinated
      sentence makes the response hallucinated; seed paper 002: "Response-level
      labels use the strictest sentence-level aggregation"), ``majority``
      (half or more; a tie is hallucinated) or ``share>=0.3`` (at least that
      share). For WikiBio-style labels:
      ``sentences=annotation,positive=major_inaccurate+minor_inaccurate,negative=accurate``.
      Sentence columns combine with label columns by ``combine``.
    - Recorded judges: ``judges=gpt4o:classification`` reads a judge's verdict
      column (a leaderboard's, such as FaithJudge's Consistent / Inconsistent /
      Invalid) into labels of the labeler ``recorded:gpt4o``, not ``human``;
      several are ``judges=a:col1+b:col2`` (a bare ``judges=gpt_4o`` names the
      judge after its column; in TOML ``judges = { gpt4o = "classification" }``).
      A verdict is read by ``positive``/``negative`` plus the judge words
      ``inconsistent``/``unfaithful`` (hallucinated) and ``consistent``
      (faithful), never by ``threshold`` (a judge's numeric score belongs in
      ``scores``) nor ``empty_means``; each label keeps the cell as ``raw``
      and, lower-cased, as its ``category``. The values in ``invalid``
      (default ``invalid``) mean the judge found the response invalid (no
      real answer or summary):
      ``invalid_as=hallucinated`` (the default, as the FaithJudge leaderboard
      of Tamber et al. 2025 counts them), ``faithful`` or ``excluded`` (no
      verdict, with the error saying why). An empty cell is no verdict; any
      other value is an error naming file, line and column, never a guess.
      The notes count every mapping per value and judge. Use a judge as the
      ground truth with ``evaluate --reference recorded:gpt4o``; the
      ``leaderboard`` study ranks generators by it against the human labels::

          files[path=board.csv,text=summary,columns=model:llm,meta=subset,
                judges=o3:classification,invalid_as=excluded]

    - Polarity: the notes (``datasets describe``, the report) count every
      mapping per source value, such as ``'true' -> faithful 412, 'false' ->
      hallucinated 88`` (a threshold counts its two sides, a list its items).
      When a label column holds only ``true``/``false`` (or ``yes``/``no``,
      ``1``/``0``) and ``positive``/``negative`` are left at their defaults, a
      warning names the value taken as hallucinated, whatever the share; when
      more than half of the labelled responses map to hallucinated, a warning
      says so. Both are logged and added to the notes unless
      ``polarity=confirmed`` (or, for the first, ``positive``/``negative`` are set).

    Paths:

    - **Globs in any part.** ``*``, ``?`` and ``[...]`` match within one part
      of the path, folders included (``data/*/data.json``); ``**`` as a whole
      part matches any number of folders (``runs/**/*.jsonl``). Files are read
      sorted part by part, so the order never depends on the file system; a
      name starting with ``.`` (``.ipynb_checkpoints``) matches only a part
      that starts with ``.``. A pattern that matches no file is an error
      naming the pattern and the folder it looked in.
    - **Fields from the path.** ``{name}`` matches a non-empty piece of one
      part (a glob too) and gives every row of that file the column ``name``,
      usable wherever a column is: ``{model}`` is the model (a column of that
      name is read by default), ``meta=subset`` slices by ``{subset}``::

          files[path=evals/{org}/{model}/{subset}_eval.txt,format=jsonl,meta=org+subset]

      ``{name:GLOB}`` matches only what GLOB does (``{model:llama*}``); a name
      used twice must match the same text; where a part could split several
      ways, each placeholder takes the shortest text that lets the rest match.
      A row that has a column of the same name must agree with the path (an
      empty or missing cell takes the path's value): two different values are
      an error naming the file, the line and the column, never a silent choice;
      rename the placeholder (``{model_dir}``) to keep both.
    - **Side files.** ``join=scores.json`` adds the columns of another file to
      every row, by an id column both have (``join_on=id``, or
      ``join_on=id:qid`` when the side file names it ``qid``), or by position
      (``join_on=position``: row k with row k; a column really named
      ``position`` is ``position:position``). A JSON list (or object keyed by
      id) of plain values, such as PHD's SelfCheckGPT scores ``[0.07, 0.08, ...]``,
      is one column named after the side file as written in ``join``, without
      its placeholders (``{model}_selfcheck.json`` gives ``selfcheck``), or
      ``value`` when nothing is left (``scores/{model}.json``)::

          files[path=phd.json,records=*,text=AI,join=phd_benchmark_score.json,
                join_on=position,scores=phd_benchmark_score]

      A side path may use the path's fields (``join=scores/{model}.json``),
      one side file per file read. By position, the two files must have as
      many rows; by id, every row must find its id in the side file (ids
      compare as text: ``3`` and ``"3"`` agree), and a side file's repeated id
      is an error naming both lines. Side rows that no row reads are counted
      in a warning, not refused (one scores file may cover every model). A
      value in both files must agree, as with path fields; an error in a side
      column names the side file and its line.

    Shapes (each a worked example of a ``-d`` key):

    - **JSON.** A list of records, or an object holding exactly one list, loads
      as it is. Name a nested list with a dotted path, ``records=data.items``
      for ``{"data": {"items": [...]}}``. An object of one list per stratum,
      ``{"low": [...], "high": [...]}``, loads with ``records=*`` (or
      ``records=data.*``) and the list's key goes into the column ``stratum``::

          files[path=phd.json,records=*,text=AI,meta=stratum]

      An object of records keyed by id, ``{"428": {...}, "425": {...}}``
      (MIND's HELM files), loads with each key in the column ``id``
      (``key_column=`` names another; a record's own ``id`` must equal its
      key). A dotted text column joins one key of each object of a list with
      spaces, so HELM's ``sentences: [{sentence, label}]`` gives the response
      and its sentence labels::

          files[path=helm/data/{model}/data.json,text=sentences.sentence,
                sentences=sentences.label,columns=example_id:id+question:prompt]

      ``format=json`` reads a JSON file whose name ends otherwise
      (``files[path=dump.txt,format=json]``); likewise ``jsonl``, ``csv``,
      ``tsv`` and ``parquet``. In a JSON file the line of an error is the
      record's number, counted from 1 across strata.
    - **Delimiters.** A ``.csv`` file's delimiter is sniffed among ``,``, tab,
      ``;`` and ``|``, so a tab-separated file named ``.csv`` loads. When the
      rows do not split alike, the error names the delimiter tried; set it
      with ``delimiter=`` (``files[path=x.csv,delimiter=";"]``).
    - **Constants.** ``constants=task:qa+model:gpt-4+split:test`` sets the
      task, the model and the split of every row (a table in TOML). The task is
      one of qa, rag_qa, summary, data2text, dialogue, mcq, open; the split is
      kept in each response's ``meta["split"]``. A constant wins over a column
      of the same name (which then stays in ``meta["extra"]``); mapping the
      same field in ``columns`` too is an error.
    - **Samples.** ``samples=samples`` reads one list cell per row (a JSON
      list, JSON list text, or one sample per line) and ``samples=s1+s2+s3``
      one sample per column (empty cells are skipped), into
      ``Response.samples``, so ``mean_len``, ``std_len`` and the sampling
      detectors run on them::

          files[path=phd.json,records=*,text=AI,samples=samples]

    - **Slice metadata.** ``meta=domain+category`` keeps those columns in each
      response's ``meta["slice"]``; ``realitycheck evaluate --slice-by domain``
      then adds one slice per value (``domain=biology``) to the metrics.
    - **One-to-many rows.** A row with several answers side by side (HaluEval
      QA: ``knowledge, question, right_answer, hallucinated_answer``) yields
      one response per answer column, with a fixed label::

          files[path=qa.jsonl,columns=context:knowledge,constants=task:qa,
                answers=right_answer:faithful+hallucinated_answer:hallucinated]

      (one line on the command line). Bare names, ``answers=a1+a2`` with
      ``label=verdict``, share the row's label column instead. A tag instead
      of a fixed label makes an answer hallucinated when the row's label cell
      lists the tag (HaluQuestQA's ``factuality_label`` is ``['answer1']``),
      and a third part names the column holding that answer's model::

          answers=ans1_text:answer1:ans1_label+ans2_text:answer2:ans2_label,
          label=factuality_label,empty_means=faithful

      Response ids end in ``/<answer column>``.
    - **Spec files.** ``-d mine.toml`` (or ``mine.yaml``) builds one dataset per
      ``[[datasets]]`` table, each keeping its ``name``; paths (and ``join``)
      are relative to the spec file, and ``each_file = true`` splits a pattern
      into one dataset per file, keeping its path fields. Errors name the spec
      file, the line and the key::

          [[datasets]]
          name = "factool"
          path = "knowledge_qa.jsonl"
          text = "response"
          columns = { question = "prompt" }
          constants = { task = "qa" }
          label = "label"                # true means factual here
          positive = ["false"]
          negative = ["true"]
    - **Ingest only.** ``realitycheck ingest -d KEY --out RUN`` loads the
      datasets into a run and prints their counts, without labelling,
      detecting or evaluating.

    Examples:
        A CSV with the columns ``prompt,answer,is_wrong,hhem``, where
        ``is_wrong`` is ``yes`` or ``no`` and ``hhem`` is a consistency
        probability (higher = less likely hallucinated, hence ``flip``), as a
        key on the command line (``-d KEY`` of ``realitycheck evaluate``)::

            files[path=my.csv,text=answer,label=is_wrong,scores=hhem,flip=hhem]

        The question is in ``prompt``: add ``columns=question:prompt`` (and
        ``+references:gold`` for a second field). A path with a comma, ``+``
        or a bracket is quoted: ``files[path="data/a,b.csv"]``. The same
        in a run config (TOML)::

            [[datasets]]
            name = "files"
            [datasets.params]
            path = "my.csv"
            text = "answer"
            label = "is_wrong"
            scores = ["hhem"]
            flip = ["hhem"]
            columns = { question = "prompt", references = "gold" }

    Args:
        path: The file, a pattern (globs in any part, ``**``, ``{name}`` fields)
            or several; a relative path is read under ``data_dir`` when given.
        text: Column of the response text (default: ``text``).
        label: Column(s) of the human label (default: ``label`` if present and
            neither ``sentences`` nor ``annotators`` is given, else no labels).
        positive: Label values that mean hallucinated (case-insensitive).
        negative: Label values that mean not hallucinated.
        scores: Columns of recorded detector scores, stored as ``recorded:<column>``.
        flip: Those of ``scores`` where higher means *less* likely hallucinated;
            they are stored as ``1 - value``.
        columns: Other fields, as ``field:column`` entries (``question:prompt``) or a table.
        title: The dataset's name in the run (``name=`` in a key works too); default
            ``files:<path>``, so two files are two datasets. Example and response
            ids start with it: ``<name>/<example_id>``, and without an ``example_id``
            column ``<name>/<hash of question and context>`` (of the text when
            neither is mapped); ids never depend on the file name alone.
        threshold: A numeric label beyond it is hallucinated (with ``hallucinated_if``).
        hallucinated_if: ``above`` or ``below`` the threshold; a tie is faithful.
        empty_means: An empty cell or list: ``excluded``, ``hallucinated`` or ``faithful``.
        list_rule: A list cell: ``any``, ``all`` or ``nonempty``.
        combine: Several label or sentence columns: ``any_of`` or ``all_of``.
        sentences: Columns of per-sentence label lists.
        sentence_rule: ``strictest``, ``majority`` or ``share>=X`` (X in (0, 1]).
        annotators: Per-annotator columns, stored as ``human:<column>``.
        aggregate: ``human`` from the annotators: ``majority`` (a tie is
            hallucinated), ``worst`` or ``dawid_skene``.
        polarity: ``confirmed`` silences the polarity warnings (a default-mapped
            boolean column, more than 50% hallucinated).
        format: ``json``, ``jsonl``, ``csv``, ``tsv`` or ``parquet``; default: the extension.
        records: For JSON, the dotted path to the list of records, ``*`` for strata.
        delimiter: For CSV/TSV, the delimiter; default: sniffed (CSV) or tab (TSV).
        constants: ``task``, ``model`` and ``split`` for every row, as
            ``name:value`` entries or a table.
        samples: One list column, or several columns of one sample each.
        meta: Columns kept as slice metadata (``meta["slice"]``) for ``--slice-by``.
        answers: Two or more answer columns, each ``column:faithful`` or
            ``column:hallucinated``, each ``column:tag`` (hallucinated when the
            ``label`` cell lists the tag), or all bare with a shared ``label``
            column; ``column:label:model_column`` adds the answer's model
            column. They replace ``text``.
        judges: Recorded judges' verdict columns, ``name:column`` entries or a
            table, each stored as the labels of ``recorded:<name>``.
        invalid: Verdict values that mean the judge found the response invalid
            (case-insensitive; default ``invalid``).
        invalid_as: What an invalid verdict counts as: ``hallucinated`` (the
            default, as the FaithJudge leaderboard does), ``faithful`` or
            ``excluded`` (no verdict).
        key_column: The column of each key of a JSON object keyed by id (``id``).
        join: Side file(s) whose columns are added to each row; a relative path
            is read under ``data_dir``; may use the path's ``{fields}``.
        join_on: How a side file lines up: ``position``, an id column of both
            files, or ``main_column:side_column``; required with ``join``.
    """

    path: str | tuple[str, ...] = required(PATHS, convert=path_entries)
    text: str = param("", InstanceOf(str), convert=str)
    label: tuple[str, ...] = param((), _NAMES, convert=column_names)
    positive: tuple[str, ...] = param(DEFAULT_POSITIVE, _NAMES, convert=label_values)
    negative: tuple[str, ...] = param(DEFAULT_NEGATIVE, _NAMES, convert=label_values)
    scores: tuple[str, ...] = param((), _NAMES, convert=texts)
    flip: tuple[str, ...] = param((), _NAMES, convert=texts)
    columns: tuple[str, ...] = param((), ColumnEntries(), convert=column_entries)
    title: str = param("", InstanceOf(str), convert=str)
    threshold: float | None = param(None, OrNone(Interval(float)))
    hallucinated_if: str = param("", OneOf("", *DIRECTIONS))
    empty_means: str = param("excluded", OneOf(EMPTY_MEANS))
    list_rule: str = param("any", OneOf(LIST_RULES))
    combine: str = param("any_of", OneOf(COMBINES))
    sentences: tuple[str, ...] = param((), _NAMES, convert=column_names)
    sentence_rule: str = param(
        "strictest",
        Satisfies(
            lambda v: v in ("strictest", "majority") or share_of(v) is not None,
            "'strictest', 'majority' or 'share>=X' with X in (0, 1]",
        ),
    )
    annotators: tuple[str, ...] = param((), _NAMES, convert=column_names)
    aggregate: str = param("majority", OneOf(AGGREGATES))
    polarity: str = param("unconfirmed", OneOf(POLARITIES), in_key=False)
    format: str = param("", OneOf("", *(f[1:] for f in FORMATS)), convert=str)
    records: str = param("", InstanceOf(str), convert=str)
    delimiter: str = param("", OneOf("", *DELIMITERS), convert=str)
    constants: tuple[str, ...] = param((), ConstantEntries(), convert=pair_entries)
    samples: tuple[str, ...] = param((), _NAMES, convert=texts)
    meta: tuple[str, ...] = param((), _NAMES, convert=texts)
    answers: tuple[str, ...] = param((), AnswerEntries(), convert=pair_entries)
    judges: tuple[str, ...] = param((), JudgeEntries(), convert=judge_entries)
    invalid: tuple[str, ...] = param(DEFAULT_INVALID, _NAMES, convert=label_values)
    invalid_as: str = param("hallucinated", OneOf(INVALID_AS))
    key_column: str = param(KEY_COLUMN, NonEmptyStr(), convert=str)
    join: tuple[str, ...] = param((), SequenceOf(NonEmptyStr()), convert=texts)
    join_on: str = param("", InstanceOf(str), convert=str)

    files: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = (
        "Your own file (JSON, JSONL, CSV or Parquet) with a column mapping."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        both = set(self.positive) & set(self.negative)
        if both:
            raise param_error(
                "negative",
                self.name,
                "values other than those of 'positive'",
                self.negative,
                hint=f"{sorted(both)} are in both.",
            )
        check_shape(self)
        extra = [c for c in self.flip if c not in self.scores]
        if extra:
            raise param_error(
                "flip",
                self.name,
                f"a list of columns of 'scores' {self.scores}",
                self.flip,
                hint=f"Not in 'scores': {extra}.",
            )

        check_label_params(self)
        check_judge_params(self)
        check_patterns(self.name, {"path": as_tuple(self.path), "join": self.join})
        check_join(self)

    @property
    def run_name(self) -> str:
        """The dataset's name in the run: ``title``, else ``files:<path>``."""
        return self.title or f"files:{'+'.join(as_tuple(self.path))}"

    def sources(self) -> list[Path]:
        """Return the files this dataset reads, side files included (a pattern's, sorted)."""
        out: list[Path] = []
        for source in plan(self):
            sides = [path for path, _ in source.sides]
            out += [p for p in (source.match.path, *sides) if p not in out]
        return out

    def files_to_read(self) -> list[Path]:
        """Return the files of ``path`` to read, each resolved against ``data_dir`` when relative.

        Raises:
            DataNotFoundError: A file does not exist, or a pattern matches none.
        """
        return [source.match.path for source in plan(self)]

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the file(s) into examples, responses, ``human`` labels and recorded scores.

        With several files (a list or a pattern), a row that names no model
        takes its file's path below the pattern's folder (without the
        extension) as the model, and an example id shared by two files is one
        example.
        """
        return load_files(self, progress)
