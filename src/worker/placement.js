// Where a device's state lives: its group object (group.js) and its roll-up shard
// (fleet.js), both by one hash of its id, fixed forever. GROUPS is a multiple of
// SHARDS, so `shardOf(id)` is `groupOf(id) % SHARDS`: a group's devices all flush to
// one shard. Changing either number moves devices away from their state (group.js says
// what that would take).

/** Group objects: see group.js for why 256. */
export const GROUPS = 256;
/** Roll-up shards: see fleet.js for why 16. */
export const SHARDS = 16;

/** FNV-1a (32 bit) of the UTF-16 code units of `key`. */
function fnv1a(key) {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The group of a device id, 0 … GROUPS − 1. */
export function groupOf(device_id) {
  return fnv1a(device_id) % GROUPS;
}

/** The roll-up shard of a device id (or of a burst id, for counts of no device), 0 … SHARDS − 1. */
export function shardOf(key) {
  return fnv1a(key) % SHARDS;
}

/** The name the group object of `device_id` is found by (`idFromName`). */
export function groupName(device_id) {
  return groupAt(groupOf(device_id));
}

/** The name of group `i` (0 … GROUPS − 1). */
export function groupAt(i) {
  return `group-${i}`;
}
