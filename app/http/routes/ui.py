"""The web page: `/` serves the run page, `/static` its scripts, styles and vendored libraries.

The files in `app/static` are served as they are (no build step at run time); the HTML pages
live in `app/pages` and are served only at their own routes (`/` here, `/docs` and `/redoc` in
app/http/openapi.py), so `/static` serves no document. Every response carries the security headers
of app/http/security_headers.py. The page itself is public; every API call it makes carries the API
key when the service needs one.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

APP_DIR = Path(__file__).resolve().parents[2]
STATIC_DIR = APP_DIR / "static"
PAGES_DIR = APP_DIR / "pages"

# A new deployment's page must not be mixed with the old one's cached scripts.
PAGE_HEADERS = {"Cache-Control": "no-cache"}

router = APIRouter(include_in_schema=False)


def page(name: str) -> FileResponse:
    """One of the service's HTML pages."""
    return FileResponse(PAGES_DIR / name, media_type="text/html", headers=PAGE_HEADERS)


@router.get("/")
async def index() -> FileResponse:
    """The run page."""
    return page("index.html")


def install(app: FastAPI) -> None:
    """Serve the page and its static files from `app`."""
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
