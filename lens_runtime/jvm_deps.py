"""JVM dependencies: check Java and Maven, fetch the pinned jars once, hand out classpaths.

The versions live in one place, ``jvm/pom.xml``. ``ensure_jars`` runs Maven's
``dependency:copy-dependencies`` into ``<home>/jars/<module>/`` and writes a stamp
with the poms' hash, so a second call downloads nothing and starts no Maven.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from lens_runtime.errors import LensError
from lens_runtime.paths import home

JVM_DIR = Path(__file__).resolve().parent / "jvm"
MODULES = ("spark", "kafka")
MIN_JAVA = 17
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


@dataclass(frozen=True)
class PinnedVersions:
    spark: str
    delta: str
    kafka: str


def pinned_versions() -> PinnedVersions:
    """The versions pinned in jvm/pom.xml."""
    props = ET.parse(JVM_DIR / "pom.xml").getroot().find("m:properties", _POM_NS)
    assert props is not None, "jvm/pom.xml has no <properties>"

    def prop(name: str) -> str:
        node = props.find(f"m:{name}", _POM_NS)
        assert node is not None and node.text, f"jvm/pom.xml lacks <{name}>"
        return node.text.strip()

    return PinnedVersions(spark=prop("spark.version"), delta=prop("delta.version"), kafka=prop("kafka.version"))


def jars_dir() -> Path:
    return home() / "jars"


def java_major_version(java: str = "java") -> int:
    """The major version of ``java`` on PATH; a LensError naming the fix if absent or too old."""
    exe = shutil.which(java)
    if exe is None:
        raise LensError(
            f"Java was not found on PATH. rebalance-lens needs Java {MIN_JAVA}+ for Kafka 4 and Spark 4. "
            "Install it (Debian: apt-get install -y openjdk-17-jdk-headless) or put its bin/ on PATH."
        )
    out = subprocess.run([exe, "-version"], capture_output=True, text=True, check=False)
    text = out.stderr + out.stdout
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not match:
        raise LensError(f"Could not read the Java version from `{exe} -version`:\n{text.strip()}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_392" style
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise LensError(
            f"Java {major} at {exe} is too old: Kafka 4 and Spark 4 need Java {MIN_JAVA}+. "
            "Install a newer JDK (Debian: apt-get install -y openjdk-17-jdk-headless) and put it first on PATH, "
            "or set JAVA_HOME."
        )
    return major


def check_python_side(pins: PinnedVersions) -> None:
    """The jars must match the installed pyspark and delta-spark, or Spark fails obscurely at run time."""
    for dist, want in (("pyspark", pins.spark), ("delta-spark", pins.delta)):
        try:
            have = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue  # the agent-only install has no Spark; nothing to match
        if have != want:
            raise LensError(
                f"{dist} {have} is installed but jvm/pom.xml pins {want}. "
                f"Install the matching wheel (pip install '{dist}=={want}') or change the pin in "
                f"{JVM_DIR / 'pom.xml'} and rerun `rebalance-lens setup`."
            )


def _poms_hash() -> str:
    digest = hashlib.sha256()
    for pom in sorted(JVM_DIR.rglob("pom.xml")):
        digest.update(pom.read_bytes())
    return digest.hexdigest()


def _stamp() -> Path:
    return jars_dir() / ".stamp"


def jars_ready() -> bool:
    return _stamp().is_file() and _stamp().read_text().strip() == _poms_hash()


def ensure_jars(quiet: bool = False) -> Path:
    """Fetch the pinned jars into the cache unless the stamp says they are there already."""
    pins = pinned_versions()
    check_python_side(pins)
    java_major_version()
    if jars_ready():
        return jars_dir()
    staging = jars_dir().with_name("jars.partial")
    staging.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(staging, ignore_errors=True)
    if not quiet:
        print(f"rebalance-lens: fetching JVM jars (Spark {pins.spark}, Delta {pins.delta}, Kafka {pins.kafka}) "
              f"into {jars_dir()} (first run only) ...", file=sys.stderr, flush=True)
    maven(JVM_DIR / "pom.xml", "dependency:copy-dependencies", f"-Djars.output={staging}")
    shutil.rmtree(jars_dir(), ignore_errors=True)
    staging.rename(jars_dir())
    _stamp().write_text(_poms_hash())
    return jars_dir()


def maven(pom: Path, *goals: str) -> None:
    """Run Maven quietly on ``pom``; a LensError naming the fix when it is missing or fails."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LensError(
            "Maven (mvn) was not found on PATH; rebalance-lens uses it once to fetch its jars from Maven Central. "
            "Install it (Debian: apt-get install -y maven) and rerun `rebalance-lens setup`."
        )
    # LENS_MAVEN_ARGS passes extra flags, e.g. "-s my-settings.xml" for a corporate mirror.
    cmd = [mvn, "-B", "-q", "-Dstyle.color=never", *shlex.split(os.environ.get("LENS_MAVEN_ARGS", "")),
           "-f", str(pom), *goals]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LensError(_maven_failure_message(result.stdout + result.stderr))


def _maven_failure_message(output: str) -> str:
    tail = "\n".join(output.strip().splitlines()[-15:])
    offline = re.search(r"UnknownHost|Could not transfer|Connection (refused|timed out)|Network is unreachable|"
                        r"offline mode|No plugin found for prefix|could not be resolved", output)
    if offline:
        return ("Maven could not reach Maven Central to fetch the jars. Check the network, a proxy "
                "(~/.m2/settings.xml <proxies>) or a mirror (<mirrors>), then rerun `rebalance-lens setup`.\n"
                f"Maven said:\n{tail}")
    return f"Maven failed to resolve the pinned jars (jvm/pom.xml). Maven said:\n{tail}"


def module_jars(module: str) -> list[Path]:
    """The jars of one module; a LensError naming the fix if setup has not run."""
    folder = jars_dir() / module
    jars = sorted(folder.glob("*.jar"))
    if not jars_ready() or not jars:
        raise LensError(f"The {module} jars are not in {folder}. Run `rebalance-lens setup` (or ./lens setup) once.")
    return jars


def artifact_name(jar: Path) -> str:
    """'jackson-core-2.13.5.jar' -> 'jackson-core'; 'spark-sql-kafka-0-10_2.13-4.2.0' keeps its '-0-10'."""
    return re.sub(r"-\d+(?:\.\d+)+[^/]*$", "", jar.stem)


def spark_jars() -> list[Path]:
    """Delta and the Kafka source, minus what the pyspark wheel already ships.

    Maven's transitive closure includes libraries Spark provides itself (Hadoop,
    Jackson, log4j, Scala); putting our older copies on ``spark.jars`` would shadow them.
    """
    import pyspark

    provided = {artifact_name(j) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [jar for jar in module_jars("spark") if artifact_name(jar) not in provided]


def kafka_classpath(version: str | None = None) -> str:
    """The broker's classpath: the pinned Kafka, or another version fetched by ``ensure_kafka_jars``."""
    return ":".join(str(j) for j in kafka_jars_of(version or pinned_versions().kafka))


def other_kafka_dir(version: str) -> Path:
    """Where ``ensure_kafka_jars`` keeps a Kafka version other than the pinned one (beside the
    pinned jars, not inside them: a set-up that refreshes those keeps these)."""
    return home() / "kafka-versions" / version


def kafka_jars_of(version: str) -> list[Path]:
    """The broker jar set of Kafka ``version``; a LensError naming the fix if it was not fetched."""
    if version == pinned_versions().kafka:
        return module_jars("kafka")
    jars = sorted(other_kafka_dir(version).glob("*.jar"))
    if not jars:
        raise LensError(f"Kafka {version}'s jars are not in {other_kafka_dir(version)}: fetch them once with "
                        f"lens_runtime.jvm_deps.ensure_kafka_jars({version!r}).")
    return jars


def ensure_kafka_jars(version: str) -> list[Path]:
    """Fetch the broker jar set of Kafka ``version`` (e.g. a newer broker than the pinned one,
    to read its records and run it in a test): the kafka module's pom with its version overridden,
    so the set is the pinned one's in every other respect. Downloads only once."""
    if version == pinned_versions().kafka or any(other_kafka_dir(version).glob("*.jar")):
        return kafka_jars_of(version)
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise LensError(f"{version!r} is not a Kafka release number such as 4.4.0")
    staging = other_kafka_dir(version).with_name(f"{version}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    maven(JVM_DIR / "kafka" / "pom.xml", "dependency:copy-dependencies", f"-Dkafka.version={version}",
          f"-Djars.output={staging}")
    (staging / "kafka").rename(other_kafka_dir(version))
    shutil.rmtree(staging, ignore_errors=True)
    return kafka_jars_of(version)
