"""The simulated DynamoDB: the in-memory store's chunk write, survey and reads behind the AWS
front's rules, on the virtual clock, so a day at scale runs in seconds (docs/concepts/scale.md)."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from costtrack_service.domain.ingest.chunks import Chunk, ChunkRejected, Survey
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.time_pages import page_items
from costtrack_service.domain.store_errors import StoreUnavailable, SurveyConflict
from costtrack_service.domain.workspaces.keys import KeyRecord
from costtrack_service.domain.workspaces.plans import Charge, WorkspaceState
from costtrack_service.domain.workspaces.shards import SHARDS, PartitionLayout, partition_key, rollup_partition
from costtrack_service.store.items import event_to_item, to_item
from costtrack_tools.local.item_size import item_size, write_units
from costtrack_tools.memory_store import MemoryStore
from costtrack_tools.sim.clock import Hub

SMALL_ITEM_TRANSACTIONAL_WCU = 2


@dataclass(frozen=True)
class SimRules:
    """* Transactions take time (``SimRules.transaction_median_s``: a log-normal draw) and hold their
      items meanwhile: a transaction or an allowance survey (``TransactGetItems``, which holds
      nothing itself) touching a held item is cancelled with ``TransactionConflict``
      (``ChunkRejected(conflict=True)``, ``SurveyConflict``), as the front does
      (``local/aws_front.py``, rules 1 and 2).
    * Per partition key value, at most ``partition_wcu_per_s`` write units (1,000 on AWS) and
      ``partition_rcu_per_s`` read units (3,000) per second of virtual time (whole-second buckets;
      the front uses a sliding window), per table and index; beyond it the
      transaction is cancelled with ``ThrottlingError`` (the store raises ``StoreUnavailable``: a 503).
    * On-demand capacity per table and index: ``table_initial_wcu_per_s`` (AWS: about 4,000 for a
      new table; ``None``: warm, no table limit), raised to twice the highest second seen at least
      ``ramp_delay_s`` earlier (AWS: "up to double your previous peak" within 30 minutes).
    * Write units by AWS's rules (``local.item_size``): 2 per started KB of each item in a
      transaction, from the real event items (``items.event_to_item``) and the transaction's
      real time pages (``time_pages.page_items``, in their page partitions). Allowance shards, the
      workspace item and rollup rows are taken as under 1 KB.
    """

    transaction_median_s: float = 0.012  # TransactWriteItems of ~100 items (assumed: docs/concepts/scale.md)
    transaction_sigma: float = 0.35  # log-normal spread: p99 about 2.3x the median
    read_median_s: float = 0.004
    conflict_answer_s: float = 0.004  # a cancelled transaction answers quickly
    partition_wcu_per_s: float = 1000.0
    partition_rcu_per_s: float = 3000.0
    table_initial_wcu_per_s: float | None = None  # None: warm (no table limit)
    ramp_delay_s: float = 1800.0
    seed: int = 1
    #: Measured instead of assumed (``bench/sim_front.py`` takes them from a front run): when
    #: given, each latency is a draw from these samples (seconds) rather than a log-normal one.
    #: A committed transaction holds its items for a ``hold`` draw; the client's time outside
    #: the hold (``outside``: serialising, the HTTP round trip) passes half before its arrival
    #: and half after; a cancelled one answers in a ``cancelled`` draw (counted from its start).
    hold_samples: tuple[float, ...] = ()
    outside_samples: tuple[float, ...] = ()
    cancelled_samples: tuple[float, ...] = ()
    survey_samples: tuple[float, ...] = ()  # surveys answered
    survey_cancelled_samples: tuple[float, ...] = ()  # surveys cancelled (else ``cancelled_samples``)
    peek_samples: tuple[float, ...] = ()
    read_samples: tuple[float, ...] = ()  # find_events, get_key, get_workspace
    #: DynamoDB Local answers one transaction at a time: when given, a transaction's hold is its
    #: wait in that one queue, a ``service`` draw, then ``after_answer_s`` (the front's rule 1).
    service_samples: tuple[float, ...] = ()
    after_answer_s: float = 0.01


class SimDynamo(MemoryStore):
    def __init__(self, hub: Hub, rules: SimRules) -> None:
        super().__init__()
        self.hub, self.rules = hub, rules
        self.rng = random.Random(rules.seed)
        self.held: Counter[str] = Counter()
        self.inflight_events = 0
        self.server_free_at = 0.0  # when the one-at-a-time server (``service_samples``) is free
        self._partition_use: dict[str, tuple[int, float]] = {}  # partition -> (second, units)
        self._pool_use: dict[str, dict[int, float]] = {}  # table or index -> units per second
        self.stats: Counter[str] = Counter()
        self.write_units = 0.0
        self.busiest: dict[tuple[str, int], float] = {}  # (partition, second) -> write units
        #: Per committed or refused-by-condition transaction: seconds its items were held, and
        #: its wait in the one queue (``service_samples``), for the comparison with the front.
        self.hold_times: list[float] = []
        self.queue_waits: list[float] = []

    # -- the rules ----------------------------------------------------------------------------

    def _latency(self, median: float, samples: tuple[float, ...] = ()) -> float:
        if samples:
            return self.rng.choice(samples)
        return median * math.exp(self.rng.gauss(0.0, self.rules.transaction_sigma))

    def _fits(self, charges: dict[str, float], limit: float) -> bool:
        second = int(self.hub.now)
        for partition, units in charges.items():
            at, used = self._partition_use.get(partition, (second, 0.0))
            if (used if at == second else 0.0) + units > limit:
                return False
        return True

    def _consume(self, charges: dict[str, float]) -> None:
        second = int(self.hub.now)
        for partition, units in charges.items():
            at, used = self._partition_use.get(partition, (second, 0.0))
            self._partition_use[partition] = (second, (used if at == second else 0.0) + units)

    def table_capacity(self, pool: str) -> float:
        """On-demand write units a second the table (or index) ``pool`` serves now."""
        if self.rules.table_initial_wcu_per_s is None:
            return math.inf
        use = self._pool_use.get(pool, {})
        settled = [units for second, units in use.items() if second <= self.hub.now - self.rules.ramp_delay_s]
        return max(self.rules.table_initial_wcu_per_s, 2 * max(settled, default=0.0))

    def _pools_fit(self, pools: Counter[str]) -> bool:
        second = int(self.hub.now)
        return all(
            self._pool_use.get(pool, {}).get(second, 0.0) + units <= self.table_capacity(pool)
            for pool, units in pools.items()
        )

    # -- what a chunk touches and costs ---------------------------------------------------------

    def chunk_items(self, chunk: Chunk) -> list[str]:
        workspace_id, period = chunk.workspace_id, chunk.period
        layout = chunk.payment.central.partitions
        items = [
            f"events|{partition_key(workspace_id, index)}|{r.event_key}"
            for r in chunk.records
            for put, checks in [layout.event_targets(r.event_key, r.received_at)]
            for index in (put, *checks)
        ]
        items += [f"allowance|{self._shard(workspace_id, period, s.charge, s.shard)}" for s in chunk.payment.spends]
        if chunk.payment.leases:
            items.append(f"workspaces|{workspace_id}")
        partition = rollup_partition(workspace_id, chunk.rollup_shard)
        items += [f"rollups|{partition}|{key}" for key in chunk.rollups]
        return items

    def chunk_charges(self, chunk: Chunk) -> tuple[dict[str, float], Counter[str]]:
        """Write units per partition key value, and per table or index."""
        charges: Counter[str] = Counter()
        pools: Counter[str] = Counter()
        layout = chunk.payment.central.partitions
        puts = []
        for record in chunk.records:
            put, checks = layout.event_targets(record.event_key, record.received_at)
            puts.append(put)
            item = event_to_item(record, partition_key(chunk.workspace_id, put))
            size = item_size(to_item(item))
            for index in checks:  # a ConditionCheck on the key's partition under an earlier count
                charges[f"events|{partition_key(chunk.workspace_id, index)}"] += SMALL_ITEM_TRANSACTIONAL_WCU
                pools["events"] += SMALL_ITEM_TRANSACTIONAL_WCU
            partition = item["partition"]
            charges[f"events|{partition}"] += write_units(size, transactional=True)
            pools["events"] += write_units(size, transactional=True)
        for page in page_items(chunk.workspace_id, chunk.rollup_shard, chunk.records, puts):
            units = write_units(item_size(to_item(page)), transactional=True)
            charges[f"events|{page['partition']}"] += units
            pools["events"] += units
        small = SMALL_ITEM_TRANSACTIONAL_WCU
        for spend in chunk.payment.spends:
            charges[f"allowance|{self._shard(chunk.workspace_id, chunk.period, spend.charge, spend.shard)}"] += small
            pools["allowance"] += small
        if chunk.payment.leases:
            charges[f"workspaces|{chunk.workspace_id}"] += small
            pools["workspaces"] += small
        charges[f"rollups|{rollup_partition(chunk.workspace_id, chunk.rollup_shard)}"] += small * len(chunk.rollups)
        pools["rollups"] += small * len(chunk.rollups)
        return dict(charges), pools

    # -- the store's operations ---------------------------------------------------------------

    def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
        items = self.chunk_items(chunk)
        rules = self.rules
        outside = self._latency(0.0, rules.outside_samples) if rules.outside_samples else 0.0
        self.hub.sleep(outside / 2)  # on its way to the table
        if any(self.held[item] for item in items):
            self.stats["conflicts"] += 1
            self.hub.sleep(max(0.0, self._latency(rules.conflict_answer_s, rules.cancelled_samples) - outside / 2))
            return ChunkRejected(conflict=True)
        charges, pools = self.chunk_charges(chunk)
        if not self._fits(charges, self.rules.partition_wcu_per_s) or not self._pools_fit(pools):
            self.stats["throttles"] += 1
            self.hub.sleep(self._latency(self.rules.conflict_answer_s))
            raise StoreUnavailable("ThrottlingError")
        self._consume(charges)  # at admission, as the front charges: concurrent writes see it
        self.held.update(items)
        self.inflight_events += len(chunk.records)
        if rules.service_samples:
            start = max(self.hub.now, self.server_free_at)
            self.queue_waits.append(start - self.hub.now)
            self.server_free_at = start + self._latency(0.0, rules.service_samples)
            hold = self.server_free_at - self.hub.now + rules.after_answer_s
        else:
            hold = self._latency(rules.transaction_median_s, rules.hold_samples)
        self.hold_times.append(hold)
        try:
            self.hub.sleep(hold)
        finally:
            self.held.subtract(items)
            self.inflight_events -= len(chunk.records)
        rejected = super().write_chunk(chunk)
        self.hub.sleep(outside / 2)  # the answer on its way back (nothing held)
        self.stats["transactions"] += 1
        if rejected is None:
            self.stats["committed_events"] += len(chunk.records)
            second = int(self.hub.now)
            for pool, units in pools.items():
                use = self._pool_use.setdefault(pool, {})
                use[second] = use.get(second, 0.0) + units
            self.write_units += sum(pools.values())
            for partition, charged in charges.items():
                self.busiest[(partition, second)] = self.busiest.get((partition, second), 0.0) + charged
        return rejected

    def survey(self, workspace_id: str, period: str) -> Survey:
        items = [f"workspaces|{workspace_id}"]
        items += [f"allowance|{self._shard(workspace_id, period, c, i)}" for c in Charge for i in range(SHARDS)]
        self.stats["surveys"] += 1
        rules = self.rules
        # Held items are checked on arrival, half a cancelled answer's round trip after the call
        # (none without measured samples); a cancelled survey answers in the other half.
        cancelled = rules.survey_cancelled_samples or rules.cancelled_samples
        transit = self._latency(0.0, cancelled) / 2 if cancelled else 0.0
        if cancelled:  # without samples, no pause at all: the default rules' runs are unchanged
            self.hub.sleep(transit)
        if any(self.held[item] for item in items):
            self.stats["survey_conflicts"] += 1
            self.hub.sleep(transit if cancelled else self._latency(rules.conflict_answer_s))
            raise SurveyConflict("TransactionConflict")
        reads = {item.split("|", 1)[1]: 2.0 for item in items}  # 2 units per transactional read
        if not self._fits(reads, self.rules.partition_rcu_per_s):
            self.stats["read_throttles"] += 1
            raise StoreUnavailable("ThrottlingError")
        self._consume(reads)
        snapshot = super().survey(workspace_id, period)  # one instant: the snapshot is atomic
        answer = self._latency(rules.read_median_s, rules.survey_samples)
        self.hub.sleep(max(0.0, answer - transit))  # holds nothing
        return snapshot

    def peek(self, workspace_id: str, period: str) -> Survey:
        """Plain consistent reads of the same items: no write in flight cancels them (1 read
        unit each). Committed state only, as the front serves it outside a visibility window."""
        items = [f"workspaces|{workspace_id}"]
        items += [f"allowance|{self._shard(workspace_id, period, c, i)}" for c in Charge for i in range(SHARDS)]
        self.stats["peeks"] += 1
        reads = {item.split("|", 1)[1]: 1.0 for item in items}
        if not self._fits(reads, self.rules.partition_rcu_per_s):
            self.stats["read_throttles"] += 1
            raise StoreUnavailable("ThrottlingError")
        self._consume(reads)
        self.hub.sleep(self._latency(self.rules.read_median_s, self.rules.peek_samples))
        return super().survey(workspace_id, period)  # read when the answer leaves, as late as can be

    def find_events(
        self, workspace_id: str, event_keys: Sequence[str], layout: PartitionLayout | None = None
    ) -> dict[str, EventRecord]:
        self.hub.sleep(self._latency(self.rules.read_median_s, self.rules.read_samples))
        return super().find_events(workspace_id, event_keys, layout)

    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None:
        self.hub.sleep(self._latency(self.rules.read_median_s, self.rules.read_samples))
        return super().get_key(key_hash, consistent=consistent)

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None:
        self.hub.sleep(self._latency(self.rules.read_median_s, self.rules.read_samples))
        return super().get_workspace(workspace_id, consistent=consistent)
