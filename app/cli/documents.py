"""`lats docs`: a server's document collections from the command line. `docs add` sends files
(folders recursed, hidden files skipped) to a collection, made when it is missing, one file a
request, and reports each: stored, already there, or refused with the server's reason; a
refusal does not stop the others. `docs ls` lists the collections, or one collection's
documents; `docs rm` deletes a collection or one of its documents. Also the names-to-ids lookup
`lats solve --collection` uses."""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from app.cli.errors import EXIT_FAILED, EXIT_OK, CliError
from app.cli.remote import _http_problem, auth_headers

PAGE = 100
# A file is read by the server before it answers (LATS_DOCUMENT_READ_TIMEOUT_S, 120 s by
# default): the answer may take that long, and more on a busy server.
UPLOAD_TIMEOUT = httpx.Timeout(30, read=300)
REFUSALS = frozenset({413, 415, 422})

Command = Callable[[Any, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]
Remote = Callable[[argparse.ArgumentParser, bool], None]


def files_under(paths: Sequence[str]) -> Iterator[Path]:
    """The files `paths` name, a folder's (without hidden files and folders) in name order;
    a `CliError` for a path that does not exist."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    if not name.startswith("."):
                        yield Path(folder) / name
        elif path.is_file():
            yield path
        else:
            raise CliError(f"no such file or folder: {given}")


async def _all_collections(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> list[dict[str, Any]]:
    """Every collection of the caller on the server, newest first."""
    found: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        response = await client.get(f"/collections?limit={PAGE}&offset={offset}", headers=headers)
        if response.status_code != 200:
            raise CliError(_http_problem(response), EXIT_FAILED)
        body = response.json()
        found += body["collections"]
        offset = body["next_offset"]
    return found


async def _collections(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, str]:
    """The caller's collections on the server: each id by its name."""
    return {c["name"]: c["collection_id"] for c in await _all_collections(client, headers)}


async def collection_ids(url: str, names: Sequence[str], headers: dict[str, str]) -> list[str]:
    """The ids of the caller's collections named `names`; a `CliError` naming one that does
    not exist."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        found = await _collections(client, headers)
    missing = [name for name in names if name not in found]
    if missing:
        raise CliError(f"no collection named {missing[0]!r} on the server (`lats docs ls`)")
    return [found[name] for name in dict.fromkeys(names)]


async def _collection_id(
    client: httpx.AsyncClient, name: str, headers: dict[str, str], *, create: bool
) -> str:
    """The id of the collection `name`, made first when missing and `create` is set."""
    found = await _collections(client, headers)
    if name in found or not create:
        if name not in found:
            raise CliError(f"no collection named {name!r} on the server (`lats docs ls`)")
        return found[name]
    response = await client.post("/collections", json={"name": name}, headers=headers)
    if response.status_code == 409:  # made meanwhile by another caller of this key
        return await _collection_id(client, name, headers, create=False)
    if response.status_code != 201:
        raise CliError(_http_problem(response), EXIT_FAILED)
    print(f"created collection {name!r} ({response.json()['collection_id']})")
    made: str = response.json()["collection_id"]
    return made


async def _upload(
    client: httpx.AsyncClient, collection_id: str, path: Path, headers: dict[str, str]
) -> bool:
    """Send one file and print what became of it; whether it is in the collection now."""
    try:
        handle = path.open("rb")
    except OSError as e:
        _report("unreadable", path, e.strerror or "cannot be opened")
        return False
    with handle:
        response = await client.post(
            f"/collections/{collection_id}/documents",
            files={"file": (path.name, handle, "application/octet-stream")},
            headers=headers,
            timeout=UPLOAD_TIMEOUT,
        )
    if response.status_code in REFUSALS:
        body = response.json()
        _report("refused", path, f"{body.get('code')}: {body.get('message')}")
        return False
    if response.status_code not in (200, 201):
        raise CliError(_http_problem(response), EXIT_FAILED)
    document = response.json()["documents"][0]
    state = "stored" if document["created"] else "already there"
    pages, passages = _counted(document["pages"], "page"), _counted(document["passages"], "passage")
    print(f"{state:<13} {path}  ({pages}, {passages})  {document['document_id']}")
    return True


def _report(state: str, path: Path, why: str) -> None:
    print(f"{state:<13} {path}: {why}")


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def add(args: argparse.Namespace) -> int:
    return asyncio.run(add_async(args))


async def add_async(args: argparse.Namespace) -> int:
    """`lats docs add PATH… --collection NAME`: every file into the collection; exit 1 when
    one was refused (the others are stored all the same)."""
    paths = list(files_under(args.paths))
    if not paths:
        raise CliError("no file to add: the folders given hold none")
    headers = auth_headers(args)
    async with httpx.AsyncClient(base_url=args.url, timeout=30) as client:
        collection_id = await _collection_id(client, args.collection, headers, create=True)
        added = [await _upload(client, collection_id, path, headers) for path in paths]
    refused = added.count(False)
    print(f"{len(paths) - refused} of {len(paths)} files in {args.collection!r}")
    return EXIT_OK if not refused else EXIT_FAILED


def ls(args: argparse.Namespace) -> int:
    return asyncio.run(ls_async(args))


async def ls_async(args: argparse.Namespace) -> int:
    """`lats docs ls [--collection NAME]`: the collections, or one collection's documents."""
    headers = auth_headers(args)
    async with httpx.AsyncClient(base_url=args.url, timeout=30) as client:
        if args.collection is None:
            return await _list_collections(client, headers)
        collection_id = await _collection_id(client, args.collection, headers, create=False)
        offset: int | None = 0
        while offset is not None:
            response = await client.get(
                f"/collections/{collection_id}?limit={PAGE}&offset={offset}", headers=headers
            )
            if response.status_code != 200:
                raise CliError(_http_problem(response), EXIT_FAILED)
            body = response.json()
            for d in body["documents"]:
                print(
                    f"{d['document_id']}  {d['status']}  {d['kind']:<8} {d['pages']:>5} pages"
                    f" {d['passages']:>6} passages  {d['title']} ({d['name']})"
                )
            offset = body["next_offset"]
    return EXIT_OK


async def _list_collections(client: httpx.AsyncClient, headers: dict[str, str]) -> int:
    for c in await _all_collections(client, headers):
        print(
            f"{c['collection_id']}  {c['document_count']:>5} documents"
            f" {c['bytes']:>12,} bytes  {c['name']}"
        )
    return EXIT_OK


def rm(args: argparse.Namespace) -> int:
    return asyncio.run(rm_async(args))


async def rm_async(args: argparse.Namespace) -> int:
    """`lats docs rm --collection NAME [DOC_ID]`: the document, or the whole collection."""
    headers = auth_headers(args)
    async with httpx.AsyncClient(base_url=args.url, timeout=30) as client:
        collection_id = await _collection_id(client, args.collection, headers, create=False)
        path = f"/collections/{collection_id}"
        if args.document_id:
            path += f"/documents/{args.document_id}"
        response = await client.delete(path, headers=headers)
    if response.status_code != 204:
        raise CliError(_http_problem(response), EXIT_FAILED)
    what = f"document {args.document_id}" if args.document_id else "collection"
    print(f"deleted {what} of {args.collection!r}")
    return EXIT_OK


def add_commands(sub: Any, command: Command, remote: Remote) -> None:
    """`lats docs add|ls|rm`, each made by `command` (app/cli/main.py's `_command`) and
    pointed at a server by `remote`."""
    docs = sub.add_parser("docs", help="a server's document collections: add, ls, rm")
    nested = docs.add_subparsers(dest="docs_command", required=True)
    p = command(nested, add, "add files (folders recursed) to a collection, made when missing")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--collection", required=True, metavar="NAME")
    remote(p, True)
    p = command(nested, ls, "list the collections, or one collection's documents")
    p.add_argument("--collection", default=None, metavar="NAME")
    remote(p, True)
    p = command(nested, rm, "delete a collection, or one of its documents")
    p.add_argument("document_id", nargs="?", default=None, metavar="DOC_ID")
    p.add_argument("--collection", required=True, metavar="NAME")
    remote(p, True)
