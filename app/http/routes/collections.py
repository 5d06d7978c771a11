"""Document collections: create, list, read and delete a caller's collections, add documents to
them (uploaded files, text, or a URL the service fetches) and read or delete a document. Each
route reaches only the caller's collections (app/collections/service.py).

The upload route is on a router of its own, `uploads`, which the app includes with a body limit
of its own (a whole upload at its bounds) instead of the service's small one; the route itself
refuses a file the moment it passes the per-file bound.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

from app.collections.errors import UnsupportedMediaType, UploadRefused
from app.collections.service import CallerCollections
from app.collections.uploads import (
    close_all,
    media_type,
    read_body,
    read_files,
)
from app.http.collection_schemas import (
    AddedDocumentView,
    CollectionDetail,
    CollectionList,
    CollectionView,
    DocumentsAdded,
    DocumentView,
    NewCollection,
    PageView,
    TextDocument,
    UrlDocument,
)
from app.http.deps import CallerDocs
from app.http.errors import invalid_input, invalid_model
from app.http.responses import ERRORS, conflict
from app.http.schemas import ID_PATTERN, ErrorBody
from app.store.collection_base import AddedDocument

router = APIRouter(prefix="/collections", tags=["collections"])
uploads = APIRouter(prefix="/collections", tags=["collections"])

COLLECTION_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    404: {"model": ErrorBody, "description": "No such collection or document (or another key's)."},
}
UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    **COLLECTION_ERRORS,
    413: {
        "model": ErrorBody,
        "description": "A file over the per-file limit, or the key's documents over their "
        "total (`too_large`, `quota_exceeded`); nothing was stored.",
    },
    415: {"model": ErrorBody, "description": "Neither multipart/form-data nor JSON."},
    422: {
        "model": ErrorBody,
        "description": "A file that is not read (its code says why: `empty`, `bad_name`, "
        "`unsupported_type`, `corrupt`, `encrypted`, `no_text`, `too_many_pages`, `too_slow`, "
        "`too_complex`), a malformed upload (`bad_upload`), a URL refused or not fetched "
        "(`url_refused`, `url_failed`), or an invalid JSON body; nothing was stored.",
    },
}
UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                            "description": (
                                "One or several files (PDF, DOCX, HTML, Markdown, text)."
                            ),
                        }
                    },
                    "required": ["file"],
                }
            },
            "application/json": {
                "schema": {
                    "oneOf": [TextDocument.model_json_schema(), UrlDocument.model_json_schema()]
                }
            },
        },
    }
}
CollectionId = Annotated[str, Path(min_length=1, max_length=64, pattern=ID_PATTERN)]
DocumentId = Annotated[str, Path(min_length=1, max_length=64, pattern=ID_PATTERN)]


@router.post(
    "",
    status_code=201,
    response_model=CollectionView,
    summary="Create a document collection",
    responses=conflict("The caller has a collection of that name.", COLLECTION_ERRORS),
)
async def create_collection(
    body: NewCollection, docs: CallerDocs, response: Response
) -> CollectionView:
    record = await docs.create(body.name)
    response.headers["Location"] = f"/collections/{record.id}"
    return CollectionView.of(record)


@router.get(
    "",
    response_model=CollectionList,
    summary="The caller's collections, newest first",
    responses=COLLECTION_ERRORS,
)
async def list_collections(
    docs: CallerDocs,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> CollectionList:
    page, next_offset = await docs.list(limit=limit, offset=offset)
    return CollectionList(collections=[CollectionView.of(c) for c in page], next_offset=next_offset)


@router.get(
    "/{collection_id}",
    response_model=CollectionDetail,
    summary="A collection with its documents",
    responses=COLLECTION_ERRORS,
)
async def get_collection(
    collection_id: CollectionId,
    docs: CallerDocs,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> CollectionDetail:
    """The collection and a page of its documents, newest first, each with its status, pages
    and passages."""
    record = await docs.get(collection_id)
    page, next_offset = await docs.documents(collection_id, limit=limit, offset=offset)
    return CollectionDetail(
        **CollectionView.of(record).model_dump(),
        documents=[DocumentView.of(d) for d in page],
        next_offset=next_offset,
    )


@router.delete(
    "/{collection_id}",
    status_code=204,
    summary="Delete a collection with its documents",
    responses=conflict("A run that has not ended searches the collection.", COLLECTION_ERRORS),
)
async def delete_collection(collection_id: CollectionId, docs: CallerDocs) -> Response:
    """The collection, its documents and their passages go in one transaction; while a run
    that lists it has not ended, nothing is deleted (409 `collection_in_use`)."""
    await docs.delete(collection_id)
    return Response(status_code=204)


@uploads.post(
    "/{collection_id}/documents",
    status_code=201,
    response_model=DocumentsAdded,
    summary="Add documents to a collection",
    responses={
        **UPLOAD_ERRORS,
        200: {"model": DocumentsAdded, "description": "Every document was there already."},
    },
    openapi_extra=UPLOAD_BODY,
)
async def add_documents(
    collection_id: CollectionId, request: Request, docs: CallerDocs, response: Response
) -> DocumentsAdded:
    """`multipart/form-data` with one or several files, or JSON `{"title", "text"}`, or JSON
    `{"url"}` where the server fetches URLs. Every file is read before anything is stored, and
    each document is stored whole with its passages, searchable once this answers: 201 when
    something was stored, 200 when every document was there already (the same content, found
    by its hash). A refused file refuses the upload, and nothing is stored."""
    await docs.get(collection_id)  # another key's collection: 404 before the body is read
    content_type = request.headers.get("content-type", "")
    kind = media_type(content_type)
    if kind == "multipart/form-data":
        added = await _add_files(collection_id, content_type, _body(request), docs)
    elif kind == "application/json":
        given = _json_document(await read_body(_body(request), docs.intake.json_bytes))
        if isinstance(given, UrlDocument):
            added = await docs.add_url(collection_id, given.target())
        else:
            added = await docs.add_text(collection_id, given.title, given.text)
    else:
        raise UnsupportedMediaType(
            "send files as multipart/form-data, or a document as application/json"
        )
    response.status_code = 201 if any(a.created for a in added) else 200
    if len(added) == 1:
        response.headers["Location"] = (
            f"/collections/{collection_id}/documents/{added[0].document.id}"
        )
    return DocumentsAdded(documents=[AddedDocumentView.added(a) for a in added])


@router.get(
    "/{collection_id}/documents/{document_id}",
    response_model=DocumentView,
    summary="A document of a collection",
    responses=COLLECTION_ERRORS,
)
async def get_document(
    collection_id: CollectionId, document_id: DocumentId, docs: CallerDocs
) -> DocumentView:
    return DocumentView.of(await docs.document(collection_id, document_id))


@router.get(
    "/{collection_id}/documents/{document_id}/pages/{page}",
    response_model=PageView,
    summary="A page of a document: its passages",
    responses=COLLECTION_ERRORS,
)
async def get_page(
    collection_id: CollectionId,
    document_id: DocumentId,
    page: Annotated[int, Path(ge=1, le=1_000_000)],
    docs: CallerDocs,
) -> PageView:
    """The passages of page `page` (from 1; a document without pages has page 1 only), as
    stored and searched: what a citation "title, p. N" quotes from. 404 `page_not_found` for a
    page the document does not have."""
    cut = await docs.page(collection_id, document_id, page)
    return PageView.of(collection_id, document_id, page, cut)


@router.delete(
    "/{collection_id}/documents/{document_id}",
    status_code=204,
    summary="Delete a document and its passages",
    responses=COLLECTION_ERRORS,
)
async def delete_document(
    collection_id: CollectionId, document_id: DocumentId, docs: CallerDocs
) -> Response:
    await docs.delete_document(collection_id, document_id)
    return Response(status_code=204)


async def _add_files(
    collection_id: str, content_type: str, body: AsyncIterator[bytes], docs: CallerCollections
) -> list[AddedDocument]:
    files = await read_files(
        content_type,
        body,
        max_file_bytes=docs.intake.max_file_bytes,
        max_files=docs.intake.max_files,
    )
    try:
        return await docs.add_files(collection_id, files)
    finally:
        close_all(files)


async def _body(request: Request) -> AsyncIterator[bytes]:
    """The request's body as it arrives; a client that leaves mid-way ends the upload."""
    try:
        async for chunk in request.stream():
            yield chunk
    except ClientDisconnect as e:
        raise UploadRefused("the upload ended early: the client went away") from e


def _json_document(raw: bytes) -> TextDocument | UrlDocument:
    """The JSON body as a text or URL document (a body with `url` is the latter)."""
    try:
        given = json.loads(raw)
    except ValueError as e:
        raise invalid_input(
            "body", message="the body is not valid JSON", kind="json_invalid"
        ) from e
    model: type[TextDocument | UrlDocument] = (
        UrlDocument if isinstance(given, dict) and "url" in given else TextDocument
    )
    try:
        return model.model_validate(given)
    except ValidationError as e:
        raise invalid_model(e, "body") from e
