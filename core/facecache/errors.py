"""Exceptions whose messages tell the user what to do next."""


class FaceCacheError(Exception):
    """Base class of every error the engine reports to a user."""


class CacheError(FaceCacheError):
    """The cache folder cannot be used (permissions, wrong kind of path, ...)."""


class CorruptPack(FaceCacheError):
    """A pack file failed a check; the cache treats it as a miss and sets it aside."""
