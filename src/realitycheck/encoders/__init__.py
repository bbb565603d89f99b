"""Local text encoders: a model on this machine turns texts into vectors.

- :mod:`realitycheck.encoders.embeddings`: sentence embeddings with
  all-MiniLM-L6-v2 (the ``embed`` extra), loaded offline and cached by text,
  for the embedding detectors and labelers.
- :mod:`realitycheck.encoders.bertscore`: BERTScore from the token embeddings
  of a local Hugging Face encoder (the ``hf`` extra), for the BERTScore
  labelers and SelfCheckGPT's BERTScore variant; its
  :func:`~realitycheck.encoders.bertscore.require_torch` is the one check of
  the ``hf`` extra for everything that runs a transformers model.

The package sits above the store (the embedding cache is one of its SQLite
files) and below the components that use it; importing it loads neither
numpy nor a model: each module is imported where it is used.
"""
