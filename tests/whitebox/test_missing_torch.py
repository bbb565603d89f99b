"""Without torch or transformers, each user of the ``hf`` extra names itself and the extra."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from realitycheck.backends import GenerationRequest
from realitycheck.backends.hf import HFBackend
from realitycheck.detectors.finetuned import FineTuned
from realitycheck.encoders.bertscore import require_torch, token_embeddings
from realitycheck.errors import MissingDependencyError

_EXTRA = r"Install it with: pip install -c constraints\.txt 'realitycheck\[hf\]'"


@pytest.mark.parametrize("package", ["torch", "transformers"])
def test_require_torch_names_the_missing_package_the_purpose_and_the_extra(monkeypatch, package):
    monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(
        MissingDependencyError, match=rf"^Scoring needs the package '{package}'"
    ) as info:
        require_torch("Scoring")
    assert (info.value.package, info.value.extra) == (package, "hf")


def test_require_torch_returns_the_torch_module():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    assert require_torch("Scoring") is torch


@pytest.mark.parametrize(
    ("call", "purpose"),
    [
        (
            lambda: HFBackend(model="m", device="cpu").generate([GenerationRequest(prompt="a")]),
            "The hf backend",
        ),
        (lambda: token_embeddings(["a"], model="m", layer=-1), "BERTScore"),
        (
            lambda: FineTuned(model="m", device="cpu").fit([("s", "r")], np.array([1])),
            "Fine-tuning the finetuned detector",
        ),
    ],
    ids=["hf", "bertscore", "finetuned"],
)
def test_each_user_names_itself_and_the_hf_extra(monkeypatch, call, purpose):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=rf"^{purpose} needs the package 'torch'"):
        call()
    with pytest.raises(MissingDependencyError, match=_EXTRA):
        call()
