"""minirag — маленькая эталонная библиотека курса «Мини-RAG руками».

Путь данных, в одну сторону: Document → чанки (``chunk``) → векторы (``embed``) → ``Index``
(``index``, ``topk``, ``store``) → поиск (косинус, порог, top-k) → промпт с пронумерованными
источниками (``prompt``) → ответ (``generate``) → проверка цитат. Под ними лежат общие типы
(``types``), проверки входа (``validate``) и ошибки (``errors``); над ними — приёмы глав 9–10
(``bm25``, ``hybrid``, ``mmr``, ``rerank``, ``neighbors``, ``hierarchical``, ``chunkers``) и глав 11–12
(``rewrite``, ``remote``, ``loaders`` и ``html_text``, ``calibrate``, ``retrieve``, ``sentences``, ``terms``). Демо-корпус — данные в ``demo/corpus.json``, их читает ``data``.
Пример: ``Index.build(DEMO_DOCS).search("сколько дней отпуска", k=3)[0].doc_id`` → ``'vacation-annual'``.
"""

from .bm25 import BM25
from .calibrate import Calibration, calibrate, unrelated_scores
from .chunk import chunk_spans, chunk_text
from .chunkers import TableChunk, code_chunks, layout_chunks, semantic_chunks, table_chunks
from .data import CATEGORIES, DEMO_DEV, DEMO_DOCS, DEMO_QUERIES, DEMO_TEST, Corpus, load_corpus
from .e5 import E5Embedder, e5_available
from .embed import Embedder, HashEmbedder, embed_documents, embed_queries
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
from .generate import Answer, ExtractiveGenerator, Generator, answer
from .hierarchical import doc_vectors, hierarchical_search
from .hybrid import exact_phrases, force_exact, hybrid_search, index_bm25, rrf
from .index import Index
from .loaders import LoadReport, load_file, load_folder
from .mmr import mmr, mmr_search
from .navec import NavecEmbedder, navec_path
from .neighbors import expand_neighbors
from .plural import plural, plural_form
from .prompt import REFUSAL, CitationReport, build_prompt, check_citations, parse_citations, parse_prompt, parse_sources
from .remote import OllamaChat, OllamaEmbedder, OpenAIChat, OpenAIEmbedder, RemoteError
from .rerank import CrossEncoderScorer, LexicalPairScorer, PairScorer, rerank, search_rerank
from .retrieve import Retriever
from .rewrite import QueryCache, Retrieval, expand_query, expanded_search, hyde, iterative_search
from .text import split_sentences, tokenize
from .topk import SCORE_TOLERANCE, top_k
from .types import Chunk, Document, Hit, LabeledQuery, renumber
from .vectors import cosine, l2_normalize

__version__ = "0.1.0"

# По частям книги, в порядке пути данных. Старые имена параметров и старый порядок (query, index)
# по-прежнему работают (см. validate.renamed и validate.index_then_query), но здесь не перечислены.
__all__ = [
    # типы и ошибки: то, что передают друг другу все модули
    "Document", "Chunk", "Hit", "LabeledQuery", "renumber", "MiniRagError", "EmbedderMismatchError",
    # главы 1–2: текст → токены → вектор, косинус
    "tokenize", "split_sentences", "Embedder", "HashEmbedder", "NavecEmbedder", "navec_path",
    "E5Embedder", "e5_available", "embed_queries", "embed_documents",
    "l2_normalize", "cosine",
    # главы 3–5: порог и top-k, чанкинг, индекс и поиск
    "top_k", "SCORE_TOLERANCE", "chunk_text", "chunk_spans", "Index",
    # глава 6: промпт с источниками и проверка цитат
    "build_prompt", "parse_prompt", "parse_sources", "parse_citations", "check_citations", "CitationReport", "REFUSAL",
    # глава 7: оценка поиска и размеченные данные
    "evaluate", "EvaluationReport", "hit_at_k", "random_hit_at_k", "precision_at_k", "recall_at_k", "reciprocal_rank",
    "DEMO_DOCS", "DEMO_QUERIES", "DEMO_DEV", "DEMO_TEST", "CATEGORIES", "Corpus", "load_corpus",
    # глава 9: за пределами косинуса
    "BM25", "index_bm25", "rrf", "hybrid_search", "exact_phrases", "force_exact", "mmr", "mmr_search",
    "PairScorer", "LexicalPairScorer", "CrossEncoderScorer", "rerank", "search_rerank",
    "expand_neighbors", "hierarchical_search", "doc_vectors",
    "semantic_chunks", "code_chunks", "table_chunks", "TableChunk", "layout_chunks",
    # глава 10: от поиска к ответу, свои файлы, настоящие модели
    "Generator", "ExtractiveGenerator", "Answer", "answer", "Retriever",
    "hyde", "expand_query", "expanded_search", "iterative_search", "Retrieval", "QueryCache",
    "load_file", "load_folder", "LoadReport", "calibrate", "Calibration", "unrelated_scores",
    "OllamaEmbedder", "OpenAIEmbedder", "OllamaChat", "OpenAIChat", "RemoteError",
    # русские числа в сообщениях книги, лабораторных и проверки
    "plural", "plural_form",
]
