"""minirag — маленькая эталонная библиотека курса «Мини-RAG руками».

Путь данных: Document → чанки → векторы → Index → поиск (косинус, порог, top-k) →
промпт с пронумерованными источниками → ответ → проверка цитат.
Пример: ``Index.build(DEMO_DOCS).search("сколько дней отпуска", k=3)``.
"""

from .assist import QueryCache, Retrieval, expand_query, expanded_search, hyde, iterative_search
from .bm25 import BM25
from .chunk import chunk_spans, chunk_text
from .chunkers import TableChunk, code_chunks, semantic_chunks, table_chunks
from .data import CATEGORIES, DEMO_DEV, DEMO_DOCS, DEMO_QUERIES, DEMO_TEST, LabeledQuery
from .embed import Embedder, HashEmbedder
from .errors import EmbedderMismatchError, MiniRagError
from .evaluate import (
    EvaluationReport,
    evaluate,
    hit_at_k,
    precision_at_k,
    random_hit_at_k,
    recall_at_k,
    reciprocal_rank,
)
from .expand import doc_vectors, expand_neighbors, hierarchical_search
from .generate import Answer, ExtractiveGenerator, Generator, answer
from .hybrid import exact_phrases, force_exact, hybrid_search, index_bm25, rrf
from .index import Chunk, Document, Hit, Index, top_k
from .loaders import LoadReport, load_file, load_folder
from .mmr import mmr, mmr_search
from .navec import NavecEmbedder, navec_path
from .plural import plural, plural_form
from .prompt import REFUSAL, CitationReport, build_prompt, check_citations, parse_citations
from .remote import OllamaChat, OllamaEmbedder, OpenAIChat, OpenAIEmbedder, RemoteError, post_json
from .rerank import CrossEncoderScorer, LexicalPairScorer, PairScorer, rerank, search_rerank
from .text import split_sentences, tokenize
from .vectors import cosine, l2_normalize

__version__ = "0.1.0"

__all__ = [
    "CATEGORIES",
    "CitationReport",
    "DEMO_DEV",
    "DEMO_DOCS",
    "DEMO_QUERIES",
    "DEMO_TEST",
    "EvaluationReport",
    "LabeledQuery",
    "REFUSAL",
    "build_prompt",
    "check_citations",
    "evaluate",
    "hit_at_k",
    "parse_citations",
    "plural",
    "plural_form",
    "precision_at_k",
    "random_hit_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "BM25",
    "Chunk",
    "CrossEncoderScorer",
    "Document",
    "Embedder",
    "EmbedderMismatchError",
    "HashEmbedder",
    "Hit",
    "Index",
    "LexicalPairScorer",
    "MiniRagError",
    "NavecEmbedder",
    "PairScorer",
    "TableChunk",
    "chunk_spans",
    "chunk_text",
    "code_chunks",
    "cosine",
    "doc_vectors",
    "exact_phrases",
    "expand_neighbors",
    "force_exact",
    "hierarchical_search",
    "hybrid_search",
    "index_bm25",
    "l2_normalize",
    "mmr",
    "mmr_search",
    "navec_path",
    "rerank",
    "rrf",
    "search_rerank",
    "semantic_chunks",
    "split_sentences",
    "table_chunks",
    "tokenize",
    "top_k",
    "Answer",
    "ExtractiveGenerator",
    "Generator",
    "LoadReport",
    "OllamaChat",
    "OllamaEmbedder",
    "OpenAIChat",
    "OpenAIEmbedder",
    "QueryCache",
    "RemoteError",
    "Retrieval",
    "answer",
    "expand_query",
    "expanded_search",
    "hyde",
    "iterative_search",
    "load_file",
    "load_folder",
    "post_json",
]
