"""What ingestion reads, cached in the warm function: keys and plans for at most a second
(docs/api-rules.md#how-fast-changes-take-effect), prices and a workspace's price overrides for
``pricing_ttl_seconds``; and a key's last use, written at most once a minute."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Protocol

from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.domain.pricing.entries import PricingEntry
from costtrack_service.domain.pricing.overrides import Override
from costtrack_service.domain.pricing.pricebook import ProviderBook
from costtrack_service.domain.workspaces.keys import KeyRecord
from costtrack_service.domain.workspaces.plans import WorkspaceState


class KeyReads(Protocol):
    """Keys and workspaces as ingestion reads them (and marks a key used)."""

    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None: ...

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None: ...

    def touch_key(self, key_hash: str, at: str) -> None: ...


class PriceReads(Protocol):
    def get_price_entries(self, provider: str) -> list[PricingEntry]:
        """The database-held (synced and operators') entries of one provider."""
        ...

    def get_price_overrides(self, workspace_id: str) -> list[Override]: ...


class ReadStore(Protocol):
    """The parts the cached reads read: keys and workspaces, and prices."""

    @property
    def events(self) -> KeyReads: ...

    @property
    def prices(self) -> PriceReads: ...


#: The bundled catalogue's book of a provider with the database's entries laid over it
#: (``catalogue.book``): passed in, as the catalogue reads files.
BookOf = Callable[[str, Iterable[PricingEntry]], ProviderBook]


class CachedReads:
    def __init__(
        self, store: ReadStore, settings: IngestSettings, book_of: BookOf, *, monotonic: Callable[[], float]
    ) -> None:
        self.store = store
        self.book_of = book_of
        self.settings = settings
        self._keys: TTLCache[str, KeyRecord | None] = TTLCache(clock=monotonic)
        self._workspaces: TTLCache[str, WorkspaceState | None] = TTLCache(clock=monotonic)
        self._books: TTLCache[str, ProviderBook] = TTLCache(clock=monotonic)
        self._overrides: TTLCache[str, list[Override]] = TTLCache(clock=monotonic)
        self._touched: TTLCache[str, bool] = TTLCache(clock=monotonic)

    def key(self, key_hash: str) -> KeyRecord | None:
        cached = self._keys.get(key_hash)
        if cached is not None:
            return cached.value
        record = self.store.events.get_key(key_hash, consistent=True)
        self._keys.put(key_hash, record, self.settings.key_ttl_seconds)
        return record

    def workspace(self, workspace_id: str) -> WorkspaceState | None:
        cached = self._workspaces.get(workspace_id)
        if cached is not None:
            return cached.value
        workspace = self.store.events.get_workspace(workspace_id, consistent=True)
        self.remember_workspace(workspace_id, workspace)
        return workspace

    def remember_workspace(self, workspace_id: str, workspace: WorkspaceState | None) -> None:
        """A workspace as just read: cached for the full ``workspace_ttl_seconds``."""
        self._workspaces.put(workspace_id, workspace, self.settings.workspace_ttl_seconds)

    def update_workspace(self, workspace_id: str, workspace: WorkspaceState) -> None:
        """A workspace as this function just wrote it: still re-read within the second."""
        self._workspaces.update(workspace_id, workspace)

    def book(self, provider: str) -> ProviderBook:
        """One provider's prices: the bundled catalogue plus the database's entries, re-read at
        most every ``pricing_ttl_seconds`` (so schedule a price change that long ahead)."""
        cached = self._books.get(provider)
        if cached is not None:
            return cached.value
        book = self.book_of(provider, self.store.prices.get_price_entries(provider))
        self._books.put(provider, book, self.settings.pricing_ttl_seconds)
        return book

    def price_overrides(self, workspace_id: str) -> list[Override]:
        cached = self._overrides.get(workspace_id)
        if cached is not None:
            return cached.value
        overrides = self.store.prices.get_price_overrides(workspace_id)
        self._overrides.put(workspace_id, overrides, self.settings.pricing_ttl_seconds)
        return overrides

    def touch(self, key_hash: str, at: str) -> None:
        """Record the key's last use at most once a minute per warm function, outside the
        events' writes: a per-event update would make every event of a key contend on it."""
        if self._touched.get(key_hash) is not None:
            return
        self._touched.put(key_hash, True, self.settings.touch_interval_seconds)
        # Last-used is informational: never fail an accepted event because it could not be noted.
        with contextlib.suppress(Exception):
            self.store.events.touch_key(key_hash, at)
