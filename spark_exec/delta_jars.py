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

from spark_exec.errors import SparkSetupError

DELTA_VERSION = "4.4.0"
"""delta-spark's version: the JVM artifact and the ``delta-spark`` Python package agree."""
SCALA_BINARY = "2.13"
REPO_ROOT = Path(__file__).resolve().parents[1]
POM = REPO_ROOT / "jars" / "pom.xml"
MANIFEST = "MANIFEST"
FIX = "run `./run env` (fetches them with Maven into build/jars/)"


def spark_binary() -> str:
    """``major.minor`` of the installed pyspark (delta-spark's artifact is built per Spark minor)."""
    return ".".join(metadata.version("pyspark").split(".")[:2])


def artifact() -> str:
    """Maven coordinates of the delta-spark jar for the installed pyspark."""
    return f"io.delta:delta-spark_{spark_binary()}_{SCALA_BINARY}:{DELTA_VERSION}"


def cache_dir() -> Path:
    """Where this pyspark's delta-spark jars are (or will be) cached."""
    root = Path(os.environ.get("SPARK_IVM_JARS") or REPO_ROOT / "build" / "jars")
    return root / f"delta-spark_{spark_binary()}_{SCALA_BINARY}-{DELTA_VERSION}"


def delta_jars() -> list[str]:
    """Absolute paths of the cached jars; :class:`SparkSetupError` if any is missing."""
    d = cache_dir()
    manifest = d / MANIFEST
    if not manifest.is_file():
        raise SparkSetupError(f"delta-spark jars ({artifact()}) are not in {d}: {FIX}")
    paths = [d / n for n in manifest.read_text().split()]
    missing = [p.name for p in paths if not p.is_file()]
    if missing or not paths:
        raise SparkSetupError(f"delta-spark jars missing in {d} ({', '.join(missing)}): {FIX}")
    return [str(p) for p in paths]


def require_java() -> str:
    """The ``java`` Spark will run; :class:`SparkSetupError` if there is none."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no `java` on PATH"
        raise SparkSetupError(
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
    """Fetch the jars with Maven unless cached; returns the jar directory."""
    d = cache_dir()
    try:
        delta_jars()
        return d
    except SparkSetupError:
        pass
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SparkSetupError(
            f"cannot fetch {artifact()}: no `mvn` on PATH; install Maven "
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
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={tmp}",
            "-DincludeScope=runtime",
            f"-Dspark.binary={spark_binary()}",
            f"-Ddelta.version={DELTA_VERSION}",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
            raise SparkSetupError(f"`mvn` could not fetch {artifact()}:\n{tail}")
        have = _spark_jar_names()
        keep = []
        for jar in sorted(tmp.glob("*.jar")):
            if _artifact_name(jar.name) in have:
                jar.unlink()
            else:
                keep.append(jar.name)
        if not any(n.startswith("delta-spark_") for n in keep):
            raise SparkSetupError(f"`mvn` ran but fetched no delta-spark jar for {artifact()}")
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
    except SparkSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
