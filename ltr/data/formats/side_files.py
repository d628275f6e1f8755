"""Where LightGBM's side files of a data file may be (``rank.train`` -> ``rank.train.query``)."""

from __future__ import annotations

from pathlib import Path


def side_file_candidates(path: Path, extension: str) -> list[Path]:
    """``path`` + ``extension``, in the order tried; for ``x.gz`` first ``x<extension>``,
    then ``x.gz<extension>``. ``extension`` includes its dot (``".query"``, ``".position"``)."""
    plain = path.with_suffix("") if path.suffix.lower() == ".gz" else path
    out = [plain.with_name(plain.name + extension)]
    if plain != path:
        out.append(path.with_name(path.name + extension))
    return out
