/**
 * Which database a tenant lives on, when a deployment has several (the Worker's D1 bindings): a pin from the
 * explicit map when it names the tenant, else rendezvous (highest random weight) hashing over the databases'
 * names. Rendezvous hashing scores every (database, tenant) pair and takes the highest score, so adding a database
 * moves only the tenants whose new score is the highest (about 1/N of them, all to the new database) and removing
 * one moves only its own tenants; the databases' order in the list does not matter (ties, 1 in 2^32, go to the
 * first listed).
 *
 * The score is FNV-1a (32 bits) over the UTF-16 code units of `database \u0000 tenant`, then murmur3's fmix32
 * finalizer (so nearby names spread over the whole range): a stable function of the two names, the same in every
 * isolate and release. Changing it would move tenants: placement.test.ts pins its values.
 */

export interface PlacementOptions {
  /** The databases' names, in configuration order (at least one). */
  databases: readonly string[];
  /** Pinned tenants: tenant id -> database name (every name one of `databases`). */
  pinned?: ReadonlyMap<string, string>;
}

/** A tenant's database: `pinned` first, else the highest rendezvous score. */
export class TenantPlacement {
  readonly databases: readonly string[];
  readonly #pinned: ReadonlyMap<string, string>;

  constructor(opts: PlacementOptions) {
    if (opts.databases.length === 0) throw new Error("TenantPlacement: no database");
    if (new Set(opts.databases).size !== opts.databases.length) {
      throw new Error(`TenantPlacement: a database is listed twice in ${opts.databases.join(",")}`);
    }
    this.databases = opts.databases;
    this.#pinned = opts.pinned ?? new Map();
    for (const [tenant, db] of this.#pinned) {
      if (!this.databases.includes(db)) {
        throw new Error(`TenantPlacement: tenant ${tenant} is pinned to ${db}, which is not listed`);
      }
    }
  }

  /** The database `tenantId` lives on. */
  databaseOf(tenantId: string): string {
    const pinned = this.#pinned.get(tenantId);
    if (pinned !== undefined) return pinned;
    return rendezvous(this.databases, tenantId);
  }

  /** Whether the explicit map names the tenant. */
  isPinned(tenantId: string): boolean {
    return this.#pinned.has(tenantId);
  }
}

/** The database with the highest score for `tenantId` (the first listed on a tie). */
export function rendezvous(databases: readonly string[], tenantId: string): string {
  let best = databases[0]!;
  if (databases.length === 1) return best;
  let bestScore = -1;
  for (const db of databases) {
    const score = placementScore(db, tenantId);
    if (score > bestScore) {
      best = db;
      bestScore = score;
    }
  }
  return best;
}

/** The rendezvous score of (database, tenant): an unsigned 32-bit integer. */
export function placementScore(database: string, tenantId: string): number {
  let h = 0x811c9dc5; // FNV-1a offset basis
  h = fnv1a(h, database);
  h = Math.imul(h, 0x01000193) >>> 0; // the separator (code unit 0)
  h = fnv1a(h, tenantId);
  // murmur3's fmix32
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function fnv1a(hash: number, text: string): number {
  let h = hash;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
