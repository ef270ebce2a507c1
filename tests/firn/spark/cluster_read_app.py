"""A PySpark application the cluster tests submit: reads a table through the ``firn`` data source
(the reading runs on the executors) and writes, as JSON, the rows it read and where the
executors imported ``firn`` from.

    spark-submit cluster_read_app.py <catalog uri> <table> <output.json>
"""

from __future__ import annotations

import json
import sys


def _firn_location(_: object) -> str:
    import firn

    return str(firn.__file__)


def main(argv: list[str]) -> int:
    catalog, table, output = argv
    from pyspark.sql import SparkSession

    import firn.spark

    spark = SparkSession.builder.appName("firn read check").getOrCreate()
    try:
        firn.spark.register(spark)
        df = spark.read.format("firn").option("catalog", catalog).load(table)
        rows = [r.asDict(recursive=True) for r in df.collect()]
        where = spark.sparkContext.parallelize([0, 1], 2).map(_firn_location).distinct().collect()
    finally:
        spark.stop()
    with open(output, "w") as f:
        json.dump({"rows": rows, "executor_firn": where}, f, default=str)
    print(f"read {len(rows)} rows of {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
