"""Arrow arrays built from buffers equal pyarrow's own conversions, and never import pandas."""

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from realitycheck.store import from_numpy, from_texts, scalar, to_numpy


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float64])
def test_from_numpy_equals_pa_array_with_a_mask(seed, dtype):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    values = (rng.random(n) * 100).astype(dtype)
    valid = rng.random(n) < 0.7
    assert from_numpy(values).equals(pa.array(values))
    assert from_numpy(values, valid).equals(pa.array(values, mask=~valid))


@pytest.mark.parametrize("seed", range(4))
def test_to_numpy_equals_fill_null_to_numpy_on_slices_and_chunks(seed):
    rng = np.random.default_rng(seed)
    for kind, make in (
        (pa.bool_(), lambda n: rng.random(n) < 0.5),
        (pa.int32(), lambda n: rng.integers(-5, 5, n).astype(np.int32)),
        (pa.float64(), lambda n: rng.random(n)),
    ):
        values = make(30)
        mask = rng.random(30) < 0.3
        array = pa.array(values, kind, mask=mask)
        fill = kind.to_pandas_dtype()(1)
        for piece in (array, array.slice(7, 13), pa.chunked_array([array.slice(0, 5), array])):
            expected = piece.fill_null(pa.scalar(fill, kind)).to_numpy(zero_copy_only=False)
            np.testing.assert_array_equal(to_numpy(piece, fill=fill), expected)
    with pytest.raises(ValueError, match="has 1 nulls; give a fill value"):
        to_numpy(pa.array([1, None]))
    with pytest.raises(TypeError, match="Expected a bool, integer or float array"):
        to_numpy(pa.array(["x"]))


def test_from_texts_and_scalar_equal_pyarrow():
    texts = ["", "a", None, "héllo wörld ✓", "=1+1", "\x00"]
    assert from_texts(texts).equals(pa.array(texts, pa.string()))
    for some in (["plain", "", "ascii =1+1"], ["ünïcode", "x"], texts[3:]):
        assert from_texts(some).equals(pa.array(some, pa.string()))
    assert from_texts([]).equals(pa.array([], pa.string()))
    for value in ("x", 3, 2.5, False):
        assert scalar(value).equals(pa.scalar(value))


def test_the_conversions_and_a_label_stage_never_import_pandas(tmp_path):
    # A judge builds its examples as records, and a configured key makes the
    # store scrub every text and list column it writes: neither may import pandas.
    code = f"""
import os, sys
os.environ["OPENAI_API_KEY"] = "Zk3v9QpL2xR7tYb1Wm4nHs8dC6fG0jK5"
import numpy as np
from realitycheck import Example, Response, RunStore, label, labelers
from realitycheck.store import from_numpy, from_texts, scalar, to_numpy
to_numpy(from_numpy(np.arange(3)))
from_texts(["a", None]); scalar("x")
store = RunStore({str(tmp_path)!r})
store.append([Example(example_id="e", dataset="d", task="qa", question="q", references=("a b",))])
store.append([Response(response_id="r", example_id="e", model="m", text="a")])
store.compact("examples"); store.compact("responses")
assert "pandas" not in sys.modules
judge = labelers.create_from_key("qa_judge[judge=mock[reply=Verdict: correct]]")
label(store, [labelers.create_from_key("rouge_l"), judge])
print("pandas" in sys.modules, store.arrow("labels").num_rows)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "2"]
