"""minirag — маленькая эталонная библиотека курса «Мини-RAG руками».

Путь данных: Document → чанки → векторы → Index → поиск (косинус, порог, top-k) →
промпт с пронумерованными источниками → ответ → проверка цитат.
Пример: ``Index.build(DEMO_DOCS).search("сколько дней отпуска", k=3)``.
"""

from .chunk import chunk_spans, chunk_text
from .embed import Embedder, HashEmbedder
from .errors import EmbedderMismatchError, MiniRagError
from .index import Chunk, Document, Hit, Index, top_k
from .text import split_sentences, tokenize
from .vectors import cosine, l2_normalize

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "Document",
    "Embedder",
    "EmbedderMismatchError",
    "HashEmbedder",
    "Hit",
    "Index",
    "MiniRagError",
    "chunk_spans",
    "chunk_text",
    "cosine",
    "l2_normalize",
    "split_sentences",
    "tokenize",
    "top_k",
]
