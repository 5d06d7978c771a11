"""Dependency aliases for routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from agents.settings import Settings
from app.manager import RunManager


def _manager(request: Request) -> RunManager:
    manager: RunManager = request.app.state.manager
    return manager


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


Manager = Annotated[RunManager, Depends(_manager)]
AppSettings = Annotated[Settings, Depends(_settings)]
