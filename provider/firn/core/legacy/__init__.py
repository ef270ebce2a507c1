"""The v1-v3 metadata tree: manifest lists and Avro manifests (reader and writer)."""
