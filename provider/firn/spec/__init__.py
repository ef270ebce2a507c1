"""Pure data model of the Iceberg spec: types, schemas, partitioning, sort orders, snapshots,
table metadata, tracked-file model and their serde. No I/O happens here."""
