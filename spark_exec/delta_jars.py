"""delta-spark's JVM jars: which ones, where they are cached, and how they are fetched.

Spark starts with these jars on its classpath (``spark.jars``, local files) and never
downloads anything itself.  ``./run`` fetches them once per machine with Maven::

    python -m spark_exec.delta_jars          # fetch if missing; prints the jar directory

which runs ``mvn dependency:copy-dependencies`` on ``jars/pom.xml`` (delta-spark for this
pyspark's ``major.minor``, Scala 2.13, plus its runtime dependencies), keeps only the jars that
pyspark's own ``jars/`` directory lacks (delta-storage, delta-kernel, RoaringBitmap, ...: Spark's
copies of Hadoop, Jackson, Parquet and Scala win), and moves them at once into
``build/jars/delta-spark_<spark>_2.13-<delta>/`` with a ``MANIFEST`` naming them.
``SPARK_IVM_JARS`` overrides the ``build/jars`` root (e.g. a shared cache).

The S3A file system (Spark SQL over ``s3://`` tables, a warehouse on S3) is a second jar set,
fetched the same way from ``jars/hadoop-aws.xml`` into ``build/jars/hadoop-aws-<hadoop>/``:
``org.apache.hadoop:hadoop-aws`` of the Hadoop that pyspark bundles, with the few AWS SDK v2
modules S3A loads (``s3``, ``s3-transfer-manager``, ``sts``, the HTTP clients) instead of the
SDK's ~600 MB ``bundle`` jar.  :func:`s3a_jars` lists them (or raises saying how to get them).

:func:`delta_jars` lists the cached jars, or raises :class:`~spark_exec.errors.SparkSetupError`
saying how to get them; :func:`require_java` does the same for a missing ``java``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spark_exec.errors import SparkSetupError

DELTA_VERSION = "4.4.0"
"""delta-spark's version: the JVM artifact and the ``delta-spark`` Python package agree."""
SCALA_BINARY = "2.13"
REPO_ROOT = Path(__file__).resolve().parents[1]
POM = REPO_ROOT / "jars" / "pom.xml"
S3A_POM = REPO_ROOT / "jars" / "hadoop-aws.xml"
MANIFEST = "MANIFEST"
FIX = "run `./run env` (fetches them with Maven into build/jars/)"


def _error(message: str) -> SparkSetupError:
    """The typed error (imported late: ``ivm.errors`` pulls in the engine, slow for ``./run``)."""
    from spark_exec.errors import SparkSetupError

    return SparkSetupError(message)


def spark_binary() -> str:
    """``major.minor`` of the installed pyspark (delta-spark's artifact is built per Spark minor)."""
    return ".".join(metadata.version("pyspark").split(".")[:2])


def artifact() -> str:
    """Maven coordinates of the delta-spark jar for the installed pyspark."""
    return f"io.delta:delta-spark_{spark_binary()}_{SCALA_BINARY}:{DELTA_VERSION}"


def _jar_root() -> Path:
    return Path(os.environ.get("SPARK_IVM_JARS") or REPO_ROOT / "build" / "jars")


def cache_dir() -> Path:
    """Where this pyspark's delta-spark jars are (or will be) cached."""
    return _jar_root() / f"delta-spark_{spark_binary()}_{SCALA_BINARY}-{DELTA_VERSION}"


def hadoop_version() -> str:
    """The Hadoop version pyspark bundles (from its ``hadoop-client-api`` jar)."""
    import pyspark

    for jar in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"):
        return jar.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    raise _error("pyspark ships no hadoop-client-api jar: cannot tell which hadoop-aws fits")


def s3a_artifact() -> str:
    return f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"


def s3a_cache_dir() -> Path:
    """Where the S3A jars for this pyspark's Hadoop are (or will be) cached."""
    return _jar_root() / f"hadoop-aws-{hadoop_version()}"


def _listed(d: Path, what: str) -> list[str]:
    manifest = d / MANIFEST
    if not manifest.is_file():
        raise _error(f"{what} jars are not in {d}: {FIX}")
    paths = [d / n for n in manifest.read_text().split()]
    missing = [p.name for p in paths if not p.is_file()]
    if missing or not paths:
        raise _error(f"{what} jars missing in {d} ({', '.join(missing)}): {FIX}")
    return [str(p) for p in paths]


def delta_jars() -> list[str]:
    """Absolute paths of the cached jars; :class:`SparkSetupError` if any is missing."""
    return _listed(cache_dir(), f"delta-spark ({artifact()})")


def s3a_jars() -> list[str]:
    """Absolute paths of the cached S3A jars; :class:`SparkSetupError` if any is missing."""
    return _listed(s3a_cache_dir(), f"S3A ({s3a_artifact()}, for s3:// in Spark SQL)")


def s3a_cached() -> bool:
    return _cached(s3a_cache_dir())


def _cached(d: Path) -> bool:
    manifest = d / MANIFEST
    return manifest.is_file() and all((d / n).is_file() for n in manifest.read_text().split())


def require_java() -> str:
    """The ``java`` Spark will run; :class:`SparkSetupError` if there is none."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no `java` on PATH"
        raise _error(
            f"Spark needs Java 17 or newer ({where}): install it "
            "(e.g. `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME"
        )
    return java


def _spark_jar_names() -> set[str]:
    """Artifact names (version stripped) of the jars pyspark ships."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return {_artifact_name(p.name) for p in jars.glob("*.jar")}


def _artifact_name(jar: str) -> str:
    """``jackson-core-2.13.5.jar`` -> ``jackson-core`` (the name before the first ``-<digit>``)."""
    parts = jar.removesuffix(".jar").split("-")
    for i, part in enumerate(parts):
        if i and part[:1].isdigit():
            return "-".join(parts[:i])
    return "-".join(parts)


def fetch(*, quiet: bool = True) -> Path:
    """Fetch the delta-spark jars with Maven unless cached; returns the jar directory."""
    return _fetch(
        cache_dir(),
        POM,
        artifact(),
        [f"-Dspark.binary={spark_binary()}", f"-Ddelta.version={DELTA_VERSION}"],
        "delta-spark_",
        quiet=quiet,
    )


def fetch_s3a(*, quiet: bool = True) -> Path:
    """Fetch the S3A jars (hadoop-aws and its AWS SDK modules) unless cached."""
    return _fetch(
        s3a_cache_dir(),
        S3A_POM,
        s3a_artifact(),
        [f"-Dhadoop.version={hadoop_version()}"],
        "hadoop-aws-",
        quiet=quiet,
    )


def _fetch(
    d: Path, pom: Path, coordinates: str, props: list[str], main_jar: str, *, quiet: bool
) -> Path:
    """``mvn dependency:copy-dependencies`` of ``pom`` into ``d`` (unless cached), keeping the
    jars pyspark lacks; ``main_jar``: the prefix of the jar that must be among them."""
    if _cached(d):
        return d
    mvn = shutil.which("mvn")
    if mvn is None:
        raise _error(
            f"cannot fetch {coordinates}: no `mvn` on PATH; install Maven "
            "(e.g. `apt-get install maven`) and run `./run env` again"
        )
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=d.parent))
    try:
        cmd = [
            mvn,
            *(["-q"] if quiet else []),
            "-B",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
            "-DincludeScope=runtime",
            *props,
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
            raise _error(f"`mvn` could not fetch {coordinates}:\n{tail}")
        have = _spark_jar_names()
        keep = []
        for jar in sorted(tmp.glob("*.jar")):
            if _artifact_name(jar.name) in have:
                jar.unlink()
            else:
                keep.append(jar.name)
        if not any(n.startswith(main_jar) for n in keep):
            raise _error(f"`mvn` ran but fetched no {main_jar}* jar for {coordinates}")
        (tmp / MANIFEST).write_text("\n".join(keep) + "\n")
        if d.exists():
            shutil.rmtree(d)
        tmp.rename(d)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return d


def main() -> int:
    try:
        print(fetch())
        print(fetch_s3a())
    except Exception as exc:
        from spark_exec.errors import SparkSetupError

        if not isinstance(exc, SparkSetupError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
