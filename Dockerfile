# One image for the whole cluster in docker-compose.yaml: the Airflow components (api-server,
# scheduler, dag-processor, triggerer) and the Spark standalone master and workers.
#
# Spark comes from pip (pyspark ships spark-submit and spark-class), so the Spark driver, which
# runs inside the scheduler container (client mode: Spark refuses cluster mode for Python apps
# on a standalone master), and the executors on the workers share one Python and one Firn.
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.12
FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}

ARG AIRFLOW_VERSION
ARG PYTHON_VERSION
# Must match pyspark-client, which the Spark provider pulls in: both install into the same
# site-packages/pyspark folder (pyproject.toml's spark extra pins the pair).
ARG PYSPARK_VERSION=4.2.0
# Airflow's tested dependency set for this Airflow and Python version.
ARG AIRFLOW_CONSTRAINTS_URL=https://raw.githubusercontent.com/apache/airflow/constraints-${AIRFLOW_VERSION}/constraints-${PYTHON_VERSION}.txt

USER root
# Spark 4 needs Java 17. JAVA_HOME is made architecture-independent with a symlink.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && ln -s "/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)" /usr/lib/jvm/java-17 \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /opt/airflow/auth /opt/firn \
    && chown airflow:root /opt/airflow/auth /opt/firn
ENV JAVA_HOME=/usr/lib/jvm/java-17

USER airflow
COPY --chown=airflow:root pyproject.toml README.md /opt/firn/
COPY --chown=airflow:root provider /opt/firn/provider
# Installed under Airflow's constraints file, as Airflow's docs ask for anything added to its
# image, so pip keeps the image's Airflow and its tested dependencies. The pyspark pair is the
# one pin Firn needs beyond them: its lines are dropped from the constraints and pinned here.
RUN curl -fsSL -o /tmp/airflow-constraints.txt "${AIRFLOW_CONSTRAINTS_URL}" \
    && sed -i -E '/^(pyspark|pyspark-client)==/d' /tmp/airflow-constraints.txt \
    && pip install --no-cache-dir --constraint /tmp/airflow-constraints.txt \
        "apache-airflow==${AIRFLOW_VERSION}" \
        "pyspark==${PYSPARK_VERSION}" \
        "pyspark-client==${PYSPARK_VERSION}" \
        "/opt/firn[spark,airflow,postgres]" \
    && rm /tmp/airflow-constraints.txt

# PySpark workers run the image's interpreter on every node.
ENV PYSPARK_PYTHON=python \
    PYSPARK_DRIVER_PYTHON=python
