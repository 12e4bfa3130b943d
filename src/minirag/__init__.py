"""minirag — маленькая эталонная библиотека курса «Мини-RAG руками».

Путь данных: Document → чанки → векторы → Index → поиск (косинус, порог, top-k) →
промпт с пронумерованными источниками → ответ → проверка цитат.
Пример: ``Index.build(DEMO_DOCS).search("сколько дней отпуска", k=3)``.
"""

from .chunk import chunk_spans, chunk_text
from .data import CATEGORIES, DEMO_DOCS, DEMO_QUERIES, LabeledQuery
from .embed import Embedder, HashEmbedder
from .errors import EmbedderMismatchError, MiniRagError
from .evaluate import EvaluationReport, evaluate, hit_at_k, precision_at_k, recall_at_k, reciprocal_rank
from .index import Chunk, Document, Hit, Index, top_k
from .prompt import REFUSAL, CitationReport, build_prompt, check_citations, parse_citations
from .text import split_sentences, tokenize
from .vectors import cosine, l2_normalize

__version__ = "0.1.0"

__all__ = [
    "CATEGORIES",
    "CitationReport",
    "DEMO_DOCS",
    "DEMO_QUERIES",
    "EvaluationReport",
    "LabeledQuery",
    "REFUSAL",
    "build_prompt",
    "check_citations",
    "evaluate",
    "hit_at_k",
    "parse_citations",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
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
