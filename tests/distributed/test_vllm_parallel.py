"""The vllm backend hands tensor/pipeline parallel sizes and the worker backend to ``vllm.LLM``.

vLLM is not installed here: a fake module records what ``LLM`` was built with.
"""

from __future__ import annotations

import types

import pytest

from realitycheck.backends import call_identity
from realitycheck.backends import vllm as vllm_backend
from realitycheck.errors import InvalidInputError
from realitycheck.runner import load_run_config


@pytest.fixture
def built(monkeypatch):
    """The keyword arguments of every ``vllm.LLM(...)`` call."""
    calls: list[dict] = []
    fake = types.SimpleNamespace(LLM=lambda **kwargs: calls.append(kwargs) or object())
    monkeypatch.setattr(vllm_backend, "_vllm", lambda: fake)
    vllm_backend._engine.cache_clear()
    yield calls
    vllm_backend._engine.cache_clear()


def _config(tmp_path, params: str):
    path = tmp_path / "run.toml"
    path.write_text(
        '[run]\nout = "out"\n\n[[datasets]]\nname = "truthfulqa"\n\n'
        f'[backend]\nname = "vllm"\nparams = {{ model = "some/70b", {params} }}\n'
    )
    return load_run_config(path)


def test_the_run_config_passes_tp_pp_and_ray_to_vllm(tmp_path, built):
    config = _config(
        tmp_path,
        "tensor_parallel_size = 8, pipeline_parallel_size = 2, "
        'distributed_executor_backend = "ray"',
    )
    config.backend._llm()
    assert built == [
        {
            "model": "some/70b",
            "dtype": "auto",
            "tensor_parallel_size": 8,
            "pipeline_parallel_size": 2,
            "gpu_memory_utilization": 0.9,
            "max_model_len": None,
            "distributed_executor_backend": "ray",
        }
    ]


def test_without_a_worker_backend_vllm_chooses(tmp_path, built):
    _config(tmp_path, "tensor_parallel_size = 2").backend._llm()
    assert built[0]["tensor_parallel_size"] == 2 and built[0]["pipeline_parallel_size"] == 1
    assert "distributed_executor_backend" not in built[0]


def test_parallel_settings_stay_out_of_the_cache_key():
    one = vllm_backend.VLLMBackend(model="m")
    many = vllm_backend.VLLMBackend(
        model="m",
        tensor_parallel_size=4,
        pipeline_parallel_size=2,
        distributed_executor_backend="ray",
    )
    assert call_identity(one) == call_identity(many)  # cached answers serve any layout


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"pipeline_parallel_size": 0}, "pipeline_parallel_size"),
        ({"distributed_executor_backend": "spark"}, "distributed_executor_backend"),
    ],
)
def test_bad_parallel_settings_are_refused(params, match):
    with pytest.raises(InvalidInputError, match=match):
        vllm_backend.VLLMBackend(model="m", **params)
