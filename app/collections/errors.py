"""The collection service's own refusals, beside the store's (app/store/collection_base.py) and
the reader's (`DocumentRefused`, tools/documents/reading.py); app/http/errors.py gives each its
status."""

from __future__ import annotations

from app.errors import ServiceError


class DocumentNotFound(ServiceError, code="document_not_found"):
    """No document of this id in the caller's collection (none, or another key's)."""

    def __init__(self) -> None:
        super().__init__("there is no such document in the collection")


class PageNotFound(ServiceError, code="page_not_found"):
    """The document has no page of that number."""

    def __init__(self, page: int, pages: int) -> None:
        super().__init__(f"the document has no page {page}; its pages are 1 to {pages}")


class UploadRefused(ServiceError, code="bad_upload"):
    """The upload's body is not one the service reads: not multipart with files, a part that is
    not a file, more files than allowed, or a body that ended early."""


class UnsupportedMediaType(ServiceError, code="unsupported_media_type"):
    """The body is neither `multipart/form-data` nor `application/json`."""


class UrlRefused(ServiceError, code="url_refused"):
    """A document URL the service does not fetch: fetching is off, or the URL is not a public
    http(s) address."""


class UrlFailed(ServiceError, code="url_failed"):
    """The document URL could not be fetched: no answer, an error status, too many redirects,
    or no answer in time."""


class FolderNotLoaded(ServiceError, code="local_docs_not_loaded"):
    """The `local_docs` tool was asked before its process loaded the folder into the store
    (a process that built the tool without opening the store: app/startup.py)."""

    def __init__(self) -> None:
        super().__init__("the local documents are loaded when the service starts; none are yet")
