"""The versioned key-value store with watch: one interface, memory and SQLite backends, and
etcd's in `pinnace.store.etcd` (it needs the etcd extra's client).

See `pinnace.store.interface` for the contract, including who may mutate which dict.
"""

from pinnace.store.compactor import Compactor
from pinnace.store.interface import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    ListResult,
    Object,
    StorageError,
    Store,
    StoreError,
    StoreInUseError,
    Watch,
    WatchClosedError,
    WatchEvent,
    WatchWoken,
)
from pinnace.store.memory import MemoryStore
from pinnace.store.sqlite import SQLiteStore

__all__ = [
    "CompactedError",
    "Compactor",
    "ConflictError",
    "FutureRevisionError",
    "KeyExistsError",
    "KeyNotFoundError",
    "ListResult",
    "MemoryStore",
    "Object",
    "SQLiteStore",
    "StorageError",
    "Store",
    "StoreError",
    "StoreInUseError",
    "Watch",
    "WatchClosedError",
    "WatchEvent",
    "WatchWoken",
]
