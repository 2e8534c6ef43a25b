"""Clustered view tables: ``CLUSTER BY (cols)`` on ``CREATE MATERIALIZED VIEW`` (liquid clustering).

A view table created with clustering columns is a Delta *clustered table* (Delta PROTOCOL.md,
"Clustered Table"), written by our own commits (catalog.delta_commit), as follows:

* the protocol is on writer version 7 with the writer features ``domainMetadata`` and
  ``clustering`` (plus the features the table already had; a table on an older writer
  version lists the ones that version implies: :data:`LEGACY_WRITER_FEATURES`);
* a ``domainMetadata`` action of domain ``delta.clustering`` holds the clustering columns,
  ``{"clusteringColumns": [["c"], ...]}`` (each a path of physical names: view tables do not
  map column names, so the physical name is the column's name); ``CLUSTER BY NONE`` writes an
  empty list, which leaves the feature on and clusters by nothing (as delta-spark does);
* every ``add`` action carries statistics for the clustering columns (catalog.delta_commit
  writes them for all columns of the types :func:`check_cluster_columns` allows);
* the rows of every file a refresh writes are sorted by the clustering columns first (then the
  other columns), so each file holds a narrow range of them and its min/max statistics skip it
  for filters on them.  Our files are *not* clustered in the protocol's sense: they leave
  ``clusteringProvider`` unset, which lets a clustering implementation (delta-spark's
  ``OPTIMIZE``) cluster them; files it clustered keep its ``clusteringProvider`` while we only
  mark rows of them deleted (deletion vectors), and a file we rewrite without some rows
  (copy-on-write) is a new, unclustered file;
* a table is never both clustered and partitioned (the protocol forbids it).

delta-rs (deltalake 1.6) refuses to commit to a table with these writer features, so the view
table's own maintenance does without it on a clustered table: table properties are set by a
``metaData`` commit of ours (:func:`set_properties`), and small files are packed by
:func:`catalog.view_table.compact_view` (our own commits on every view table).  Reading, checkpoints and vacuum still go through delta-rs, which
handles them (a checkpoint keeps the ``domainMetadata`` action).

>>> clustering_domain(["region", "day"])["domainMetadata"]["configuration"]
'{"clusteringColumns":[["region"],["day"]]}'
>>> writer_features(1, 4, None)
['appendOnly', 'invariants', 'checkConstraints', 'changeDataFeed', 'generatedColumns']
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from catalog import delta_commit
from catalog.view_partitions import LAYOUT_TYPES, LayoutColumnError, check_layout_columns

DOMAIN = "delta.clustering"
FEATURES = ("domainMetadata", "clustering")
#: the writer features each legacy writer version adds to the one before (PROTOCOL.md,
#: "Table Features for new and Existing Tables"); a table on version n has those of 2..n
_WRITER_VERSION_ADDS: dict[int, tuple[str, ...]] = {
    2: ("appendOnly", "invariants"),
    3: ("checkConstraints",),
    4: ("changeDataFeed", "generatedColumns"),
    5: ("columnMapping",),
    6: ("identityColumns",),
}
LEGACY_WRITER_FEATURES: dict[int, tuple[str, ...]] = {
    n: tuple(f for v in range(2, n + 1) for f in _WRITER_VERSION_ADDS[v]) for n in range(2, 7)
}
#: the legacy reader features of reader version 2 (column mapping)
LEGACY_READER_FEATURES: dict[int, tuple[str, ...]] = {2: ("columnMapping",)}

__all__ = [
    "DOMAIN",
    "ClusterColumnError",
    "check_cluster_columns",
    "clustering_columns",
    "clustering_domain",
    "enable",
    "is_clustered",
    "set_properties",
    "sort_keys",
    "writer_features",
]


class ClusterColumnError(LayoutColumnError):
    """``CLUSTER BY`` names something a view table cannot be clustered by."""

    clause = "CLUSTER BY"


#: the types whose file statistics we write (the protocol requires them for these columns)
CLUSTERABLE = (*LAYOUT_TYPES, pa.types.is_floating)


def check_cluster_columns(
    schema: pa.Schema, columns: Sequence[str], *, view: str, partitioned_by: Sequence[str] = ()
) -> None:
    """Refuse clustering columns the view lacks, repeats or has no statistics for, and
    clustering together with partitioning."""
    if columns and partitioned_by:
        raise ClusterColumnError(
            view,
            "a Delta table is either clustered or partitioned, not both; "
            "keep CLUSTER BY or PARTITIONED BY",
        )
    check_layout_columns(
        schema,
        columns,
        view=view,
        error=ClusterColumnError,
        allowed=CLUSTERABLE,
        instead="cluster by a number, string or date column (file statistics, which "
        "clustering relies on, are written for those)",
    )


# -- the log -------------------------------------------------------------------------------


def clustering_domain(columns: Sequence[str]) -> dict[str, Any]:
    """The ``domainMetadata`` action recording ``columns`` as the clustering columns."""
    config = {"clusteringColumns": [[c] for c in columns]}
    return {
        "domainMetadata": {
            "domain": DOMAIN,
            "configuration": json.dumps(config, separators=(",", ":")),
            "removed": False,
        }
    }


def writer_features(reader: int, writer: int, features: Sequence[str] | None) -> list[str]:
    """The writer features a table has, listed (those its legacy writer version implies)."""
    if writer >= 7:
        return list(features or [])
    return list(LEGACY_WRITER_FEATURES.get(writer, ()))


def _protocol_with(
    table: str, writer_add: Sequence[str], reader_add: Sequence[str] = ()
) -> dict[str, Any]:
    """The table's protocol with more features (writer version 7; reader 3 if any reader
    feature is added)."""
    from catalog import delta

    p = delta.open_table(table).protocol()
    reader, writer = int(p.min_reader_version), int(p.min_writer_version)
    wf = writer_features(reader, writer, p.writer_features)
    out: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": 7}
    readers = list(p.reader_features or []) if reader >= 3 else []
    if reader_add or reader >= 3:
        readers = list(dict.fromkeys([*readers, *LEGACY_READER_FEATURES.get(reader, ())]))
        readers += [f for f in reader_add if f not in readers]
        out["minReaderVersion"] = 3
        out["readerFeatures"] = readers
    out["writerFeatures"] = wf + [f for f in writer_add if f not in wf]
    return {"protocol": out}


def is_clustered(table: str | os.PathLike[str]) -> bool:
    """Whether the table has the ``clustering`` writer feature."""
    from catalog import delta

    p = delta.open_table(table).protocol()
    return "clustering" in (p.writer_features or [])


def clustering_columns(table: str | os.PathLike[str]) -> tuple[str, ...]:
    """The table's clustering columns, from its log's ``delta.clustering`` domain (empty when
    it is not clustered, or clustered by ``NONE``)."""
    p = os.fspath(table)
    if not is_clustered(p):
        return ()
    config = delta_commit.domain_configuration(p, DOMAIN)
    if not config:
        return ()
    cols = json.loads(config).get("clusteringColumns") or []
    return tuple(".".join(c) if isinstance(c, list) else str(c) for c in cols)


def enable(table: str | os.PathLike[str], columns: Sequence[str], *, view: str) -> int:
    """Make the view table clustered by ``columns`` (or re-cluster it: ``ALTER ... CLUSTER BY``;
    empty: ``CLUSTER BY NONE``) in one commit without data change; returns its version."""
    p = os.fspath(table)
    version, _ = delta_commit.snapshot_files(p)
    actions: list[dict[str, Any]] = [
        delta_commit.commit_info(
            "CLUSTER BY",
            {"ivm.operation": "cluster_by", "ivm.view": view},
            operationParameters={"clusteringColumns": json.dumps(list(columns))},
            isBlindAppend=True,
        )
    ]
    if not is_clustered(p):
        actions.append(_protocol_with(p, FEATURES))
    actions.append(clustering_domain(columns))
    delta_commit.commit(p, version + 1, actions)
    return version + 1


def set_properties(table: str | os.PathLike[str], properties: Mapping[str, str]) -> int:
    """Set table properties with a ``metaData`` commit of ours (delta-rs cannot commit to a
    clustered table); ``delta.enableDeletionVectors=true`` also adds the ``deletionVectors``
    reader and writer feature.  Returns the new version."""
    from catalog import delta

    p = os.fspath(table)
    dt = delta.open_table(p)
    md = dt.metadata()
    version, _ = delta_commit.snapshot_files(p)
    meta = {
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": dt.schema().to_json(),
        "partitionColumns": list(md.partition_columns),
        "createdTime": md.created_time,
        "configuration": {
            **dict(md.configuration),
            **{str(k): str(v) for k, v in properties.items()},
        },
    }
    actions: list[dict[str, Any]] = [
        delta_commit.commit_info(
            "SET TBLPROPERTIES",
            {},
            operationParameters={"properties": json.dumps(dict(properties))},
            isBlindAppend=True,
        )
    ]
    dv = str(properties.get("delta.enableDeletionVectors", "")).lower() == "true"
    if dv:
        actions.append(_protocol_with(p, ("deletionVectors",), ("deletionVectors",)))
    actions.append({"metaData": meta})
    delta_commit.commit(p, version + 1, actions)
    return version + 1


# -- writing -------------------------------------------------------------------------------


def sort_keys(names: Sequence[str], clustering: Sequence[str]) -> list[tuple[str, str]]:
    """Sort keys for the rows of a file: the clustering columns, then the other columns."""
    rest = [c for c in names if c not in clustering]
    return [(c, "ascending") for c in [*clustering, *rest]]


def packable(f: delta_commit.FileEntry, small: int) -> bool:
    """Whether our compaction may pack data file ``f``: small, and not clustered by a
    clustering implementation (the protocol lets only that implementation recluster it)."""
    return f.size < small and not f.action.get("clusteringProvider")
