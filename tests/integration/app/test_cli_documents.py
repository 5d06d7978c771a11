"""`lats docs` and `lats solve --collection` against a running server (the real app, real HTTP):
a folder added file by file, each reported (stored, already there, refused with the server's
reason) and a refusal not stopping the others; the collections and documents listed and
deleted; collection names sent to a run as ids."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest

from app.cli import documents
from app.cli.main import main, parser
from testkit.pdfs import text_pdf
from testkit.scenario import Scenario
from tests.support.makers import ServiceMaker

TREE = Scenario(plan=["A"])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A PDF, a Markdown file in a subfolder, a file the server cannot read, a hidden file."""
    root = tmp_path / "papers"
    (root / "notes").mkdir(parents=True)
    (root / "birds.pdf").write_bytes(
        text_pdf([["Herons nest in reeds."], ["Cranes fly south."]], title="Birds")
    )
    (root / "notes" / "rivers.md").write_text("# Rivers\n\nThe Danube meets the Black Sea.\n")
    (root / "tables.bin").write_bytes(bytes(range(256)) * 4)
    (root / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    return root


def args(*argv: str) -> argparse.Namespace:
    return parser().parse_args(list(argv))


async def test_docs_add_reports_each_file_and_goes_on_past_a_refusal(
    service_for: ServiceMaker, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with service_for(TREE) as svc:
        first = await documents.add_async(
            args("docs", "add", str(folder), "--collection", "papers", "--url", svc.url)
        )
        first_out = capsys.readouterr().out
        again = await documents.add_async(
            args("docs", "add", str(folder / "notes"), "--collection", "papers", "--url", svc.url)
        )
        again_out = capsys.readouterr().out
        listed = (await svc.client.get("/collections")).json()["collections"]
        stored = (await svc.client.get(f"/collections/{listed[0]['collection_id']}")).json()

    lines = first_out.splitlines()
    assert first == 1  # one file refused
    assert lines[0].startswith("created collection 'papers' (")
    assert lines[1].startswith(f"stored        {folder / 'birds.pdf'}  (2 pages, 2 passages)  ")
    assert lines[2] == (
        f"refused       {folder / 'tables.bin'}: unsupported_type: 'tables.bin': the file is a "
        "binary or archive format; PDF, DOCX, HTML, Markdown and text are read"
    )
    assert lines[3].startswith(
        f"stored        {folder / 'notes' / 'rivers.md'}  (1 page, 1 passage)"
    )
    assert lines[4] == "2 of 3 files in 'papers'"
    assert ".DS_Store" not in first_out
    assert again == 0
    assert again_out.splitlines()[0].startswith(f"already there {folder / 'notes' / 'rivers.md'}")
    assert [c["name"] for c in listed] == ["papers"]
    assert sorted(d["name"] for d in stored["documents"]) == ["birds.pdf", "rivers.md"]


async def test_docs_ls_lists_collections_and_documents_and_docs_rm_deletes_them(
    service_for: ServiceMaker, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with service_for(TREE) as svc:
        url = ("--url", svc.url)
        await documents.add_async(
            args("docs", "add", str(folder / "birds.pdf"), "--collection", "papers", *url)
        )
        capsys.readouterr()
        await documents.ls_async(args("docs", "ls", *url))
        collections_out = capsys.readouterr().out
        await documents.ls_async(args("docs", "ls", "--collection", "papers", *url))
        documents_out = capsys.readouterr().out
        document_id = documents_out.split()[0]
        await documents.rm_async(args("docs", "rm", document_id, "--collection", "papers", *url))
        await documents.rm_async(args("docs", "rm", "--collection", "papers", *url))
        removed_out = capsys.readouterr().out
        left = (await svc.client.get("/collections")).json()["collections"]

    assert collections_out.split()[1:5] == [
        "1",
        "documents",
        f"{len((folder / 'birds.pdf').read_bytes()):,}",
        "bytes",
    ]
    assert collections_out.rstrip().endswith("papers")
    assert "indexed  pdf" in documents_out
    assert documents_out.rstrip().endswith("Birds (birds.pdf)")
    assert removed_out.splitlines() == [
        f"deleted document {document_id} of 'papers'",
        "deleted collection of 'papers'",
    ]
    assert left == []


async def test_solve_sends_the_named_collections_ids_with_the_run(
    service_for: ServiceMaker, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with service_for(TREE) as svc:
        made = await svc.client.post("/collections", json={"name": "papers"})
        collection_id = made.json()["collection_id"]
        code = await asyncio.to_thread(
            main, ["solve", "What is A?", "--url", svc.url, "--collection", "papers", "--json"]
        )
        unknown = await asyncio.to_thread(
            main, ["solve", "What is A?", "--url", svc.url, "--collection", "missing"]
        )
        runs = (await svc.client.get("/runs")).json()["runs"]

    assert code == 0
    assert unknown == 2  # bad input: no such collection
    assert "no collection named 'missing' on the server" in capsys.readouterr().err
    assert [r["params"]["collections"] for r in runs] == [[collection_id]]


def test_collection_flags_need_a_server(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "What is A?", "--collection", "papers"]) == 2
    assert "--collection need a server (--url)" in capsys.readouterr().err


def test_docs_add_of_a_missing_path_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["docs", "add", "/no/such/folder", "--collection", "c", "--url", "http://127.0.0.1:9"]
    )

    assert code == 2
    assert "no such file or folder: /no/such/folder" in capsys.readouterr().err


def test_docs_against_an_unreachable_server_exits_1(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["docs", "add", str(folder), "--collection", "c", "--url", "http://127.0.0.1:9"])

    assert code == 1
    assert "cannot reach the server" in capsys.readouterr().err
