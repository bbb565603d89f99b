"""The user's own data: one JSON, JSONL, CSV/TSV or Parquet file with a column mapping.

:class:`Files` (registered as ``files``) documents the column mapping with
examples; ``realitycheck datasets describe files`` prints the same text.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from realitycheck.datasets._base import Bundle, Dataset, dataset
from realitycheck.datasets._file_rows import RowReader
from realitycheck.datasets._file_shapes import (
    AnswerEntries,
    ConstantEntries,
    answer_parts,
    answers_fixed,
    check_shape,
    pair_entries,
)
from realitycheck.datasets._judges import (
    DEFAULT_INVALID,
    INVALID_AS,
    JudgeEntries,
    check_judge_params,
    judge_entries,
    judge_parts,
    judges_note,
)
from realitycheck.datasets._label_rules import (
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
    rules_note,
    share_of,
)
from realitycheck.datasets._tables import (
    DELIMITERS,
    FORMATS,
    cell_text,
    delimiter_hint,
    read_rows,
)
from realitycheck.errors import DataNotFoundError, InvalidInputError, did_you_mean
from realitycheck.params import (
    Constraint,
    InstanceOf,
    Interval,
    OneOf,
    OrNone,
    Satisfies,
    SequenceOf,
    as_tuple,
    param,
    param_error,
    required,
)

__all__ = ["Files", "glob_matches"]

FIELDS = ("example_id", "response_id", "question", "context", "references", "model", "task")
"""Fields that ``columns`` can map; each defaults to the column of the same name, if any."""


def _texts(value: Any) -> Any:
    """Normalise column names: one name or a list, each as text."""
    items = as_tuple(value)
    return tuple(str(v) for v in items) if isinstance(items, tuple) else value


def _label_values(value: Any) -> Any:
    """Normalise label values as cells compare (lower-cased text, ``1`` for ``1.0``)."""
    items = as_tuple(value)
    return tuple(cell_text(v) or "" for v in items) if isinstance(items, tuple) else value


def _column_entries(value: Any) -> Any:
    """Normalise a field-to-column mapping to ``field:column`` entries, in FIELDS order.

    A table (mapping) or ``field:column`` strings; anything else is left for
    the constraint to refuse. Unknown fields are kept, last, for the same reason.
    """
    if isinstance(value, Mapping):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    else:
        items = _texts(value)
        if not isinstance(items, tuple) or any(":" not in item for item in items):
            return value
        pairs = [(k, v) for k, v in (item.split(":", 1) for item in items)]
    mapping = {k.strip(): v.strip() for k, v in pairs}
    known = [f"{k}:{mapping[k]}" for k in FIELDS if k in mapping]
    return (*known, *(f"{k}:{v}" for k, v in mapping.items() if k not in FIELDS))


class _ColumnEntries(Constraint):
    """``field:column`` entries whose fields are among :data:`FIELDS`."""

    def accepts(self, value: Any) -> bool:
        """Return whether every entry maps a known field."""
        return isinstance(value, tuple) and all(
            isinstance(e, str) and e.split(":", 1)[0] in FIELDS and ":" in e for e in value
        )

    def describe(self) -> str:
        """Return the accepted shape and fields."""
        return (
            f"field:column entries or a table mapping fields among {FIELDS} to columns "
            "(text and label have their own parameters)"
        )

    def hint(self, value: Any) -> str:
        """Return "Did you mean ...?" for the first unknown field."""
        entries = _column_entries(value)
        if not isinstance(entries, tuple):
            return ""
        for entry in entries:
            key = str(entry).split(":", 1)[0]
            if key in ("text", "label"):
                return f"Name the {key} column with the {key!r} parameter."
            if key not in FIELDS:
                close = difflib.get_close_matches(key, FIELDS, n=1)
                return f"Did you mean {close[0]!r} for {key!r}?" if close else ""
        return ""


_NAMES = SequenceOf(InstanceOf(str))
_GLOB = frozenset("*?[")


def glob_matches(path: Path) -> list[Path] | None:
    """Return the files a glob in ``path``'s name matches, in name order; None when no glob."""
    if not _GLOB & set(path.name):
        return None
    return sorted(p for p in path.parent.glob(path.name) if p.is_file())


def _paths(value: Any) -> Any:
    """Normalise ``path``: one path as text, several as a tuple of texts."""
    items = as_tuple(value)
    if not isinstance(items, tuple) or not all(isinstance(v, str | os.PathLike) for v in items):
        return value
    texts = tuple(os.fspath(v) for v in items)
    return texts[0] if len(texts) == 1 else texts


def _is_paths(value: Any) -> bool:
    items = (value,) if isinstance(value, str) else value
    return (
        isinstance(items, tuple)
        and bool(items)
        and all(isinstance(v, str) and v.strip() for v in items)
    )


_PATHS = Satisfies(_is_paths, "a non-empty path, a glob such as 'runs/*.json', or a list of them")


@dataset("files")
@dataclass(frozen=True, kw_only=True)
class Files(Dataset):
    """Responses (and optional human labels and scores) from files of your own.

    The format follows the extension: ``.json``, ``.jsonl``, ``.csv``, ``.tsv``
    or ``.parquet`` (``format=`` overrides it). ``path`` is one file, a glob
    (``by_model/*.json``) or several files (``path=a.jsonl+b.jsonl``); with
    several, a row that names no model takes its file's stem as the model.
    Each row is one response (or one per answer column, see ``answers``).
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

    Shapes (each a worked example of a ``-d`` key):

    - **JSON.** A list of records, or an object holding exactly one list, loads
      as it is. Name a nested list with a dotted path, ``records=data.items``
      for ``{"data": {"items": [...]}}``. An object of one list per stratum,
      ``{"low": [...], "high": [...]}``, loads with ``records=*`` (or
      ``records=data.*``) and the list's key goes into the column ``stratum``::

          files[path=phd.json,records=*,text=AI,meta=stratum]

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
      ``[[datasets]]`` table, each keeping its ``name``; paths are relative to
      the spec file, and ``each_file = true`` splits a glob into one dataset
      per file. Errors name the spec file, the line and the key::

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
        path: The file, a glob or several files; a relative path is read under
            ``data_dir`` when given.
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
    """

    path: str | tuple[str, ...] = required(_PATHS, convert=_paths)
    text: str = param("", InstanceOf(str), convert=str)
    label: tuple[str, ...] = param((), _NAMES, convert=column_names)
    positive: tuple[str, ...] = param(DEFAULT_POSITIVE, _NAMES, convert=_label_values)
    negative: tuple[str, ...] = param(DEFAULT_NEGATIVE, _NAMES, convert=_label_values)
    scores: tuple[str, ...] = param((), _NAMES, convert=_texts)
    flip: tuple[str, ...] = param((), _NAMES, convert=_texts)
    columns: tuple[str, ...] = param((), _ColumnEntries(), convert=_column_entries)
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
    samples: tuple[str, ...] = param((), _NAMES, convert=_texts)
    meta: tuple[str, ...] = param((), _NAMES, convert=_texts)
    answers: tuple[str, ...] = param((), AnswerEntries(), convert=pair_entries)
    judges: tuple[str, ...] = param((), JudgeEntries(), convert=judge_entries)
    invalid: tuple[str, ...] = param(DEFAULT_INVALID, _NAMES, convert=_label_values)
    invalid_as: str = param("hallucinated", OneOf(INVALID_AS))

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

    @property
    def run_name(self) -> str:
        """The dataset's name in the run: ``title``, else ``files:<path>``."""
        return self.title or f"files:{'+'.join(as_tuple(self.path))}"

    def sources(self) -> list[Path]:
        """Return the files this dataset reads (a glob's matches, in name order)."""
        return self.files_to_read()

    def files_to_read(self) -> list[Path]:
        """Return the files to read, each resolved against ``data_dir`` when relative.

        Raises:
            DataNotFoundError: A file does not exist, or a glob matches none.
        """
        out: list[Path] = []
        for given in as_tuple(self.path):
            path = Path(str(given)).expanduser()
            if not path.is_absolute() and self.data_dir is not None:
                path = Path(self.data_dir) / path
            matches = glob_matches(path)
            if matches is not None:
                if not matches:
                    raise DataNotFoundError(
                        f"No file matches {str(path)!r} (dataset {self.run_name!r})."
                    )
                out.extend(matches)
            elif not path.is_file():
                raise DataNotFoundError(
                    f"The file {str(path)!r} of dataset {self.run_name!r} does not exist."
                )
            else:
                out.append(path)
        return out

    def load(self, *, progress: Callable[[int], Any] | None = None) -> Bundle:
        """Read the file(s) into examples, responses, ``human`` labels and recorded scores.

        With several files (a list or a glob), a row that names no model takes
        its file's stem as the model, and an example id shared by two files is
        one example.
        """
        paths = self.files_to_read()
        out = Bundle(examples=[])
        reader: RowReader | None = None
        for path in paths:
            available, rows = read_rows(
                path, format=self.format, records=self.records, delimiter=self.delimiter
            )
            mapping = self._mapping(available, path)
            if not rows:
                raise InvalidInputError(
                    f"The file has a header ({', '.join(available) or 'no columns'}) but no "
                    "rows; nothing was loaded.",
                    path=path,
                )
            if reader is None:
                reader = RowReader(self, mapping, path)
            model = path.stem if len(paths) > 1 else ""
            reader.next_file(path, mapping, model)
            for line, row in rows:
                reader.read(line, row, out)
            used = ", ".join(f"{k} <- {v}" for k, v in mapping.items())
            out.notes.append(f"Read {len(rows)} rows of {path.name}; columns used: {used}.")
        assert reader is not None  # files_to_read returns at least one file
        if progress is not None:
            progress(len(out.responses))
        if len(paths) > 1 and "model" not in self._constant_fields():
            out.notes.append(
                f"Read {len(paths)} files; a row without a model column takes its file's "
                "name (without the extension) as the model."
            )
        fitted = reader.finish(out)
        names = ", ".join(p.name for p in paths[:3]) + (", …" if len(paths) > 3 else "")
        out.notes.extend(reader.warnings(names))
        if reader.verdicts:
            out.notes.append(rules_note(self))
            out.notes.extend([*reader.rules.notes(reader.verdicts, names), *fitted])
        elif self.answers:
            out.notes.append(f"Labels fixed per answer column: {', '.join(self.answers)}.")
        else:
            out.notes.append("No label column: the responses carry no human labels.")
        if self.judges:
            out.notes.append(judges_note(self))
            out.notes.extend(reader.judge_notes(names))
        out.notes.append(
            f"Scores {list(self.scores)} are stored as recorded:<column>; "
            f"{list(self.flip)} flipped to 1 - value (higher = more likely hallucinated)."
        )
        if self.answers:
            out.notes.append(
                f"Each row yields {len(self.answers)} responses, one per answer column."
            )
        if self.constants:
            out.notes.append(f"Set for every row: {', '.join(self.constants)}.")
        return out

    def _constant_fields(self) -> set[str]:
        return {c.split(":", 1)[0] for c in self.constants}

    def _mapping(self, available: list[str], path: Path) -> dict[str, str]:
        """Return field -> column for every field that is read, checking the columns exist."""
        explicit = {"text": self.text}
        fixed = answers_fixed(self.answers)  # answers carry their labels
        label = self.label
        unlabelled = not (label or self.sentences or self.annotators or fixed)
        if unlabelled and "label" in available and "label" not in self._constant_fields():
            label = ("label",)
        if len(label) == 1:
            explicit["label"] = label[0]
        else:
            explicit.update({f"label:{c}": c for c in label})
        explicit.update({f"sentences:{c}": c for c in self.sentences})
        explicit.update({f"human:{c}": c for c in self.annotators})
        explicit.update(dict(c.split(":", 1) for c in self.columns))
        explicit.update({f"score:{c}": c for c in self.scores})
        explicit.update({f"judge:{n}": c for n, c in map(judge_parts, self.judges)})
        explicit.update({f"sample:{c}": c for c in self.samples})
        explicit.update({f"meta:{c}": c for c in self.meta})
        for column, _, model in map(answer_parts, self.answers):
            explicit[f"answer:{column}"] = column
            explicit[f"answer_model:{column}"] = model
        mapping = {}
        for field, column in explicit.items():
            if not column:
                continue
            listed = field.split(":", 1)[0] in ("label", "sentences") and "." in column
            if column not in available and not (listed and column.split(".")[0] in available):
                hint = did_you_mean(column, available)
                hint = delimiter_hint(available) or hint
                raise InvalidInputError(
                    f"The column {column!r} (for {field}) is not in the file.{hint} "
                    f"Available: {', '.join(available) or 'none'}.",
                    path=path,
                    field=column,
                )
            mapping[field] = column
        constant = self._constant_fields()
        for field in ("text", *FIELDS):
            if field not in mapping and field in available and field not in constant:
                mapping[field] = field
        if self.answers:
            mapping.pop("text", None)
            labelled = any(f.split(":")[0] in ("label", "human", "sentences") for f in mapping)
            if not fixed and not labelled:
                raise InvalidInputError(
                    "The answers have no label: write column:faithful or column:hallucinated "
                    "for each, or name a label column shared by them with 'label' (with "
                    "column:tag entries, the cell that lists the tags of the wrong answers).",
                    path=path,
                    field="answers",
                )
        elif "text" in mapping:
            mapping = {"text": mapping.pop("text"), **mapping}
        else:
            raise InvalidInputError(
                "The file has no 'text' column; name the response column with the 'text' "
                f"parameter.{delimiter_hint(available)} "
                f"Available: {', '.join(available) or 'none'}.",
                path=path,
                field="text",
            )
        return mapping
