"""The build backend: setuptools' own, with the data files in the editable wheel too.

setuptools installs ``[tool.setuptools.data-files]`` (the man page, the completion
scripts) from the wheel ``pip install .`` makes, but leaves them out of the one
``pip install -e`` makes (its editable build asks the distribution for a ``has_data``
it does not have, so it never installs them). An editable install over a plain one —
the README's two set-up commands, in that order — removed the man page with the plain
install and put none back, and ``git forge --help`` and ``git help forge`` (git runs
``man git-forge``) then failed. ``build_editable`` here adds the same files to that
wheel where a plain wheel holds them (``<name>.data/data/<target>/<file>``), so either
install, in either order, leaves them in place. Every other hook is setuptools'.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import tomllib
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools

get_requires_for_build_sdist = _setuptools.get_requires_for_build_sdist
get_requires_for_build_wheel = _setuptools.get_requires_for_build_wheel
get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_wheel = _setuptools.prepare_metadata_for_build_wheel
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
build_sdist = _setuptools.build_sdist
build_wheel = _setuptools.build_wheel


def build_editable(wheel_directory: str, config_settings: dict | None = None,
                   metadata_directory: str | None = None) -> str:
    """setuptools' editable wheel, with the project's data files added."""
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    add_data_files(Path(wheel_directory) / name, data_files(Path.cwd()))
    return name


def data_files(root: Path) -> dict[str, Path]:
    """``[tool.setuptools.data-files]`` as target path → source file."""
    with open(root / "pyproject.toml", "rb") as handle:
        table = tomllib.load(handle)["tool"]["setuptools"].get("data-files", {})
    return {f"{target}/{Path(source).name}": root / source
            for target, sources in table.items() for source in sources}


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def add_data_files(wheel: Path, files: dict[str, Path]) -> None:
    """Rewrite ``wheel`` with ``files`` under its ``.data/data/`` directory and in its
    RECORD; a file the wheel already holds there is left as it is."""
    with zipfile.ZipFile(wheel) as archive:
        entries = [(info, archive.read(info)) for info in archive.infolist()]
    record, recorded = next((info, data) for info, data in entries
                            if info.filename.endswith(".dist-info/RECORD"))
    data_dir = record.filename.split("/", 1)[0].removesuffix(".dist-info") + ".data/data/"
    present = {info.filename for info, _ in entries}
    added = {data_dir + target: source.read_bytes() for target, source in files.items()
             if data_dir + target not in present}
    if not added:
        return
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    for name, data in added.items():
        writer.writerow([name, _record_hash(data), len(data)])
    partial = wheel.with_name(wheel.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in entries:
            if info.filename != record.filename:
                archive.writestr(info, data)
        for name, data in added.items():
            info = zipfile.ZipInfo(name, date_time=record.date_time)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
        archive.writestr(record, recorded + rows.getvalue().encode("utf-8"))
    os.replace(partial, wheel)
