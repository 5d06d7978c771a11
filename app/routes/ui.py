"""The web page: `/` serves the run page, `/static` its scripts, styles and vendored libraries.

The files in `app/static` are served as they are (no build step at run time). The page itself
is public; every API call it makes carries the API key when the service needs one.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

# Model output is rendered on this page: only the service's own scripts may run, nothing is
# loaded from elsewhere (images included), and no other site may frame it.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> FileResponse:
    """The run page."""
    return FileResponse(STATIC_DIR / "index.html", headers=PAGE_HEADERS)


def install(app: FastAPI) -> None:
    """Serve the page and its static files from `app`."""
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
