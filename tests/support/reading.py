"""Reading a file that is refused, for the reading tests: the refusal's code, once its
sentence for the user is checked to be there."""

from __future__ import annotations

import pytest

from tools.documents.reading import DocumentRefused, ReadLimits, read_document


def refused(name: str, data: bytes, limits: ReadLimits | None = None) -> str:
    """The code `read_document` refuses the file with (failing the test if it reads it)."""
    with pytest.raises(DocumentRefused) as caught:
        read_document(name, data, limits)
    assert str(caught.value)  # a sentence for the user
    return caught.value.code
