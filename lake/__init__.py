"""The lake: table schemas, atomic Parquet writes, blobs and the DuckDB catalog."""

from lake.schemas import TABLES, schema_for
from lake.store import Lake, utcnow

__all__ = ["Lake", "TABLES", "schema_for", "utcnow"]
