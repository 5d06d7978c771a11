"""Dependency aliases for routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.access.run_access import Runs
from app.collections.service import CallerCollections
from app.http.auth import Authorized
from app.runs.manager import RunManager
from app.settings import Settings


def _manager(request: Request) -> RunManager:
    manager: RunManager = request.app.state.manager
    return manager


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _runs(request: Request, caller: Authorized) -> Runs:
    """The runs the request's caller may reach (the key is checked here)."""
    return Runs(_manager(request), caller, request.app.state.limits)


def _collections(request: Request, caller: Authorized) -> CallerCollections:
    """The document collections the request's caller may reach (the key is checked here)."""
    collections = _manager(request).store.collections
    return CallerCollections(collections, request.app.state.documents, caller)


Manager = Annotated[RunManager, Depends(_manager)]
AppSettings = Annotated[Settings, Depends(_settings)]
CallerRuns = Annotated[Runs, Depends(_runs)]
CallerDocs = Annotated[CallerCollections, Depends(_collections)]
