"""realitycheck's ``hf`` backend against plain ``transformers`` on a GPU.

Two random-weight models of real architectures are built from a config (no
download): a Llama (hidden 2048, 16 layers, 32 heads with 8 key-value heads,
about 1.2B parameters) and a Qwen2 (hidden 1536, 28 layers, 12 heads with 2
key-value heads, about 1.3B parameters), both with a 32,000-word word-level
tokenizer trained here, saved with ``save_pretrained`` and loaded back by
both tools in bfloat16 with SDPA attention. The prompts are random word
strings (seeded): the text does not matter for throughput, and the two tools
must produce the same tokens.

Per model, each on the same prompts, batch size and device:

* **generate**: greedy, ``--new-tokens`` new tokens, ``--prompts`` prompts of
  about 64 words. realitycheck: ``HFBackend.generate`` on
  ``GenerationRequest``\\ s. Plain: ``model.generate`` on left-padded batches.
  Throughput is prompts per second; the texts must be identical.
* **generate + features**: the same with per-token log-probabilities and
  entropies (realitycheck: ``logprobs=True``; plain: ``output_scores=True``
  and a log-softmax over each step's scores).
* **MCQ options**: ``--questions`` questions with a 200-word prefix and four
  10-word options. realitycheck: ``HFBackend.loglik_tokens`` on every
  ``(prefix, " " + option)`` pair. Plain: one forward pass per batch of
  joined texts and a gather of the option tokens' log-probabilities (the
  usual loop). Throughput is options scored per second; the chosen options
  must be identical.

Each timing is the best of ``--repeats`` after one warm-up batch. The ratio is
realitycheck's throughput over plain ``transformers``'s (above 1: faster).
vLLM is not compared: it is not installed on the GPU machine used here and
could not be carried to it.

Run on a machine with a CUDA GPU, from the repository root::

    PYTHONPATH=src python benchmarks/gpu_hf.py

It writes ``benchmarks/results/gpu_hf.json``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import write_result  # noqa: E402
from _tiny_llama import LLAMA_SPECIALS, llama_tokenizer  # noqa: E402

VOCAB = 32_000
SPECIALS = LLAMA_SPECIALS
ARCHS = {
    "llama": dict(
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
    ),
    "qwen2": dict(
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
    ),
}


def _words() -> list[str]:
    return [f"w{i}" for i in range(VOCAB - len(SPECIALS))]


TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)


def build(folder: Path, arch: str, tiny: bool = False) -> None:
    """Write a random-weight ``arch`` model and the word-level tokenizer to ``folder``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    vocab = {w: i for i, w in enumerate(SPECIALS + _words())}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = llama_tokenizer(tok)
    config_cls, model_cls = {
        "llama": (LlamaConfig, LlamaForCausalLM),
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
    }[arch]
    config = config_cls(
        vocab_size=VOCAB,
        max_position_embeddings=2048,
        bos_token_id=2,
        eos_token_id=3,
        pad_token_id=1,
        tie_word_embeddings=False,
        **(dict(ARCHS[arch], **TINY, num_key_value_heads=2) if tiny else ARCHS[arch]),
    )
    torch.manual_seed(0)
    model = model_cls(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def texts(n: int, words: int, seed: int) -> list[str]:
    """``n`` seeded random strings of ``words`` vocabulary words."""
    rng = np.random.default_rng(seed)
    vocab = np.array(_words())
    return [" ".join(rng.choice(vocab, size=words)) for _ in range(n)]


def best(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Best wall seconds of ``repeats`` calls (GPU synchronised) and the last result."""
    import torch

    sync = torch.cuda.synchronize if torch.cuda.is_available() else lambda: None
    times, out = [], None
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - start)
    return min(times), out


def plain_generate(model, tokenizer, prompts: Sequence[str], args, features: bool) -> list[str]:
    """Greedy ``model.generate`` on left-padded batches; texts of the new tokens."""
    import torch

    tokenizer.padding_side = "left"
    out: list[str] = []
    for s in range(0, len(prompts), args.batch_size):
        batch = tokenizer(list(prompts[s : s + args.batch_size]), return_tensors="pt", padding=True)
        batch = batch.to(model.device)
        with torch.inference_mode():
            gen = model.generate(
                **batch,
                do_sample=False,
                max_new_tokens=args.new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                output_scores=features,
                return_dict_in_generate=True,
            )
            if features:
                steps = torch.stack(gen.scores, dim=1).float().log_softmax(-1)
                new = gen.sequences[:, batch["input_ids"].shape[1] :]
                chosen = steps.gather(-1, new[..., None])[..., 0]
                entropy = -(steps.exp() * steps).sum(-1)
                features_on_host = (chosen.cpu(), entropy.cpu())  # what realitycheck returns
                del features_on_host
        width = batch["input_ids"].shape[1]
        out.extend(tokenizer.batch_decode(gen.sequences[:, width:], skip_special_tokens=True))
    return out


def plain_options(model, tokenizer, pairs: Sequence[tuple[str, str]], args) -> list[float]:
    """Summed option-token log-probabilities, one forward pass per batch of joined texts."""
    import torch

    tokenizer.padding_side = "right"
    sums: list[float] = []
    for s in range(0, len(pairs), args.batch_size):
        chunk = pairs[s : s + args.batch_size]
        starts = [len(tokenizer(c)["input_ids"]) for c, _ in chunk]
        batch = tokenizer([c + o for c, o in chunk], return_tensors="pt", padding=True)
        batch = batch.to(model.device)
        with torch.inference_mode():
            logp = model(**batch).logits.float().log_softmax(-1)
        ids, lengths = batch["input_ids"], batch["attention_mask"].sum(1).tolist()
        for row, (start, length) in enumerate(zip(starts, lengths, strict=True)):
            positions = torch.arange(start, length, device=model.device)
            sums.append(float(logp[row, positions - 1, ids[row, positions]].sum()))
    return sums


def measure(arch: str, folder: Path, args) -> list[dict[str, str]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from realitycheck.backends import GenerationRequest
    from realitycheck.backends.hf import HFBackend

    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else args.device
    backend = HFBackend(
        model=str(folder),
        device=args.device,
        dtype="bfloat16",
        batch_size=args.batch_size,
        attn_implementation="sdpa",
        chat_template=False,
    )
    model = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.bfloat16, attn_implementation="sdpa"
    ).to(args.device)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    params = sum(p.numel() for p in model.parameters()) / 1e9
    prompts = texts(args.prompts, 64, seed=1)
    rows = []
    for features in (False, True):
        requests = [
            GenerationRequest(
                prompt=p, decoding="greedy", max_tokens=args.new_tokens, logprobs=features
            )
            for p in prompts
        ]
        backend.generate(requests[: args.batch_size])
        plain_generate(model, tokenizer, prompts[: args.batch_size], args, features)
        ours, generated = best(lambda r=requests: backend.generate(r), args.repeats)
        theirs, plain = best(
            lambda f=features: plain_generate(model, tokenizer, prompts, args, f), args.repeats
        )
        same = [g.texts[0] for g in generated] == plain  # type: ignore[attr-defined]
        errors = [g.error for g in generated if g.error]  # type: ignore[attr-defined]
        what = "generate + token log-probs and entropies" if features else "generate"
        rows.append(
            {
                "work": f"{what}, {arch} {params:.2f}B random weights, {len(prompts)} prompts x "
                f"{args.new_tokens} new tokens, batch {args.batch_size}, bf16, {gpu}",
                "realitycheck": f"{len(prompts) / ours:.1f} prompts/s",
                "alternative": f"transformers generate {len(prompts) / theirs:.1f} prompts/s",
                "ratio": f"{theirs / ours:.2f}x",
                "note": f"identical texts: {same}; errors: {len(errors)}",
            }
        )
        print(rows[-1], flush=True)
    prefixes = texts(args.questions, 200, seed=2)
    options = texts(4 * args.questions, 10, seed=3)
    pairs = [(p, " " + options[4 * i + k]) for i, p in enumerate(prefixes) for k in range(4)]
    backend.loglik_tokens(pairs[: args.batch_size])
    plain_options(model, tokenizer, pairs[: args.batch_size], args)
    ours, values = best(lambda: backend.loglik_tokens(pairs), args.repeats)
    theirs, plain = best(lambda: plain_options(model, tokenizer, pairs, args), args.repeats)
    rc_sums = np.array([sum(v) for v in values]).reshape(-1, 4)  # type: ignore[attr-defined]
    tf_sums = np.array(plain).reshape(-1, 4)
    same = bool((rc_sums.argmax(1) == tf_sums.argmax(1)).all())
    rows.append(
        {
            "work": f"MCQ option log-likelihoods, {arch} {params:.2f}B, {args.questions} questions "
            f"x 4 options, 200-word prefixes, batch {args.batch_size}, bf16, {gpu}",
            "realitycheck": f"{len(pairs) / ours:.0f} options/s",
            "alternative": f"transformers forward loop {len(pairs) / theirs:.0f} options/s",
            "ratio": f"{theirs / ours:.2f}x",
            "note": f"identical choices: {same}; largest |sum difference| "
            f"{np.abs(rc_sums - tf_sums).max():.3g} (bf16)",
        }
    )
    print(rows[-1], flush=True)
    return rows


def _free_gpu() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--questions", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--archs", nargs="+", default=list(ARCHS))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="2-layer models, for a smoke test")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in args.archs:
            folder = Path(tmp) / arch
            build(folder, arch, tiny=args.tiny)
            rows.extend(measure(arch, folder, args))
            _free_gpu()
    command = "PYTHONPATH=src python benchmarks/gpu_hf.py " + " ".join(sys.argv[1:])
    write_result("gpu_hf", rows, command.strip())


if __name__ == "__main__":
    main()
