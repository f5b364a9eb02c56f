// A reservation's Idempotency-Key groups it with this process's other reservations of the same
// moment (`grp:<group>:<uuid>`, docs/api-rules.md#reservations): the service places a group's
// holds on one ledger shard, so the events that settle them, sent in the same batches (calls
// started together tend to end together), settle them in one update of that shard instead of
// one each. A group closes after GROUP_HOLDS reservations (the most holds one settle update
// takes) or GROUP_SECONDS, whichever comes first, so a busy process still spreads its
// reservations over the shards. The same rule as the Python SDK's: both are generated from
// spec/sdk-rules.json.

import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";

// -- generated from spec/sdk-rules.json by scripts/generate_sdk_rules.py: change the spec, then run it --
/** A reservation group closes after this many reservations: the most holds one settle update takes. */
export const GROUP_HOLDS = 25;
/**
 * ... or after this long (the delivery's flush interval), so one busy process still spreads its
 * reservations over the shards.
 */
export const GROUP_SECONDS = 0.5;
// -- end of the generated rules --

// Drawn once per module instance: each worker thread has its own, as it has its own groups.
const instance = randomBytes(6).toString("hex");
let groups = 0;
let group = "";
let inGroup = GROUP_HOLDS;
let openedAt = 0;

export function newReservationKey(): string {
  const now = performance.now();
  if (inGroup >= GROUP_HOLDS || now - openedAt >= GROUP_SECONDS * 1000) {
    group = `${instance}.${groups++}`;
    inGroup = 0;
    openedAt = now;
  }
  inGroup += 1;
  return `grp:${group}:${randomUUID()}`;
}
