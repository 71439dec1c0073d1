"""Using FaceFusion's own models in place: registering its `.assets/models` folder with the store.

Nothing is copied. Every known model file in the folder is checked (against its `.hash` sidecar
where one is there, and always against the catalog's contract for its name) through
`installed.InstalledModels.checked`; a file that fails is refused and reported, and left exactly
as it is, since the folder is FaceFusion's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from facecache.errors import ModelCorrupt, ModelMissing, ModelRefused
from facecache.models.installed import InstalledModels


@dataclass(frozen=True)
class ImportReport:
    folder: Path
    verified: list[str] = field(default_factory=list)  # model names checked against their sidecars
    unverified: list[str] = field(default_factory=list)  # a valid model of that name, but no sidecar
    refused: dict[str, str] = field(default_factory=dict)  # file name -> why it is not used (left in place)
    newly_registered: bool = True

    def as_dict(self) -> dict:
        return {"folder": str(self.folder), "verified": self.verified, "unverified": self.unverified,
                "refused": self.refused, "newly_registered": self.newly_registered}


def import_folder(models: InstalledModels, folder: str | os.PathLike) -> ImportReport:
    """Register a FaceFusion models folder (or a FaceFusion install holding `.assets/models`) in place.

    Every known model file in it is checked against its `.hash` sidecar when one is there;
    a file that fails is refused and reported, and left as it is. Nothing is copied.
    """
    folder = Path(folder).expanduser()
    if (folder / ".assets" / "models").is_dir():
        folder = folder / ".assets" / "models"
    if not folder.is_dir():
        raise ModelMissing(f"{folder} is not a folder; give FaceFusion's install folder or its .assets/models")
    folder = folder.resolve()
    known = [(spec, item) for spec in models.catalog.models for item in spec.files
             if os.path.lexists(folder / item.name)]
    if not known:
        raise ModelMissing(f"no known model files in {folder}; point at FaceFusion's .assets/models folder "
                           "(`facecache models list` shows the known names)")
    with models.lock:
        return _import_checked(models, folder, known)


def _import_checked(models: InstalledModels, folder: Path, known) -> ImportReport:
    report = ImportReport(folder, newly_registered=models.registry.add_import(folder))
    for spec, item in known:
        path = folder / item.name
        try:
            if not path.is_file():
                models.refuse(spec, path, "it is not a regular file (a dangling symbolic link or a folder)")
            record = models.checked(spec, item, path, force=True)
            models.make_derived(spec)
        except ModelRefused as exc:
            report.refused[item.name] = exc.reason
            continue
        except ModelCorrupt as exc:  # what the model needs cannot be read out of it
            report.refused[item.name] = str(exc)
            continue
        except OSError as exc:
            report.refused[item.name] = f"it cannot be read ({exc.strerror})"
            continue
        (report.verified if record.check != "none" else report.unverified).append(spec.name)
    models.registry.save()
    return report
