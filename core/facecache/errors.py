"""Exceptions whose messages tell the user what to do next."""


class FaceCacheError(Exception):
    """Base class of every error the engine reports to a user."""


class CacheError(FaceCacheError):
    """The cache folder cannot be used (permissions, wrong kind of path, ...)."""


class CorruptPack(FaceCacheError):
    """A pack file failed a check; the cache treats it as a miss and sets it aside."""


class ModelError(FaceCacheError):
    """A model (or a file fetched from a package index) cannot be used."""


class ModelMissing(ModelError):
    """A model is not installed; the message names the install command."""


class ModelCorrupt(ModelError):
    """A model file failed its hash check; it has been set aside or deleted."""


class DownloadError(ModelError):
    """A download (from a package index or a model URL) failed."""
