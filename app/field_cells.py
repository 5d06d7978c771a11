"""A pydantic field as the cells of a table row of docs/configuration.md (`app.settings_docs`):
its type and bounds as the page names them, a default as a user writes it, its description."""

from __future__ import annotations

import types
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import NoDecode

_SCALARS: dict[Any, str] = {
    int: "integer",
    float: "number",
    bool: "boolean",
    str: "string",
    Path: "path",
    SecretStr: "secret",
}
_LONGEST_PATTERN = 40
_DASH = "\u2013"  # the en dash between the ends of a range


def is_secret(annotation: Any) -> bool:
    """Whether the type is a secret or holds one (its default is then not shown)."""
    if annotation is SecretStr:
        return True
    return any(is_secret(arg) for arg in get_args(annotation))


def value_text(value: Any, json: bool = True) -> str:
    """A default as a user writes it: JSON in a request body, text in the environment."""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"`{_number(value)}`"
    if isinstance(value, Path):
        return "a path on this machine" if value.is_absolute() else f"`{value.as_posix()}`"
    if isinstance(value, str):
        return f'`"{value}"`' if json else f"`{value}`"
    if isinstance(value, list | tuple):
        if not value:
            return "`[]`" if json else "empty"
        if json:
            return "`[" + ", ".join(f'"{item}"' for item in value) + "]`"
        return "`" + ",".join(str(item) for item in value) + "`"
    return f"`{value}`"


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def shape(annotation: Any, metadata: Sequence[Any]) -> tuple[str, list[str]]:
    """A type as the page names it, and its bounds."""
    annotation, inner = _unwrap(annotation)
    meta = [*metadata, *inner]
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            return shape(options[0], meta)
        return " or ".join(shape(option, [])[0] for option in options), []
    if origin is Literal:
        return "one of " + ", ".join(f"`{choice}`" for choice in get_args(annotation)), []
    if origin is list:
        item, item_bounds = shape(get_args(annotation)[0], [])
        comma = "comma-separated " if any(m is NoDecode for m in meta) else ""
        kind = f"{comma}list of {item}s" if item != "secret" else f"{comma}list of secrets"
        return kind, _bounds(meta, "items") + [f"each {b}" for b in item_bounds]
    if origin is dict:
        key, value = get_args(annotation)
        key_kind, _ = shape(key, [])
        value_kind, value_bounds = shape(value, [])
        keys = key_kind.removeprefix("one of ")
        return f"object: {keys} → {value_kind}", [f"each {b}" for b in value_bounds]
    kind = _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))
    return kind, _bounds(meta, "chars" if annotation is str else "")


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The annotation without its `Annotated` layers, and their constraints."""
    found: list[Any] = []
    while get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        for item in extra:
            found.extend(item.metadata if isinstance(item, FieldInfo) else [item])
    return annotation, found


def _bounds(metadata: Sequence[Any], unit: str) -> list[str]:
    low: Any = None
    high: Any = None
    low_open = high_open = False
    shortest = longest = None
    pattern = None
    for item in metadata:
        if isinstance(item, at.Ge | at.Gt):
            low, low_open = (item.ge, False) if isinstance(item, at.Ge) else (item.gt, True)
        elif isinstance(item, at.Le | at.Lt):
            high, high_open = (item.le, False) if isinstance(item, at.Le) else (item.lt, True)
        elif isinstance(item, at.MinLen):
            shortest = item.min_length
        elif isinstance(item, at.MaxLen):
            longest = item.max_length
        else:
            shortest = getattr(item, "min_length", None) or shortest
            longest = getattr(item, "max_length", None) or longest
            pattern = getattr(item, "pattern", None) or pattern
    found: list[str] = []
    if low is not None or high is not None:
        found.append(_range(low, low_open, high, high_open))
    if shortest is not None or longest is not None:
        span = _range(shortest, False, longest, False)
        found.append(f"{span} {unit}".strip())
    if isinstance(pattern, str):
        too_long = len(pattern) > _LONGEST_PATTERN
        found.append("checked by a pattern" if too_long else f"pattern `{pattern}`")
    return found


def _range(low: Any, low_open: bool, high: Any, high_open: bool) -> str:
    if low is not None and high is not None:
        start = f">{_number(low)}" if low_open else _number(low)
        end = f"<{_number(high)}" if high_open else _number(high)
        return f"{start}{_DASH}{end}"
    if low is not None:
        return f"{'>' if low_open else '≥'} {_number(low)}"
    return f"{'<' if high_open else '≤'} {_number(high)}"


def description(info: FieldInfo, note: str | None) -> str:
    """The field's own description, then the page's note on it."""
    parts = [text for text in (info.description, note) if text]
    return " ".join(parts)


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring, on one line."""
    text = " ".join((doc or "").split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def row(cells: list[str]) -> str:
    """One Markdown table row: each cell on one line, its `|` escaped."""
    clean = [" ".join(cell.split()).replace("|", "\\|") for cell in cells]
    return "| " + " | ".join(clean) + " |"
