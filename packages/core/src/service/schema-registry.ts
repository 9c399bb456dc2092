/**
 * Schema versions of every tenant, parsed and compiled ONCE per (tenant, version) and cached. The head version of a
 * tenant is remembered for `headTtlMs` (writes through this registry update it at once), so a check on the head
 * schema costs no storage call. When it expires, the cached head is still served for one more `headTtlMs` while
 * ONE background read refreshes it: under steady traffic no check ever waits for (or issues) a storage call, and
 * another process writing a schema is seen by requests without a snap token after at most about `headTtlMs`
 * (2 x `headTtlMs` at the very worst). While the database cannot be reached (503), the head known is served on:
 * requests that need no database go on being answered during an outage.
 *
 * A request WITH a snap token is never answered with an older head: the registry keeps the store snap at which
 * each head was read (`readAt`, a lower bound of the store head at that read). A schema written before the write
 * that produced token `s` is visible to any head read whose snap is >= `s`; so when `s` > `readAt` the head is
 * read again (one statement) before the request is answered, and the new `readAt` is >= `s`.
 *
 * The cache is bounded by an estimate of its heap bytes (`maxBytes`) as well as by a count: a parsed and compiled
 * schema takes about HEAP_BYTES_PER_CHAR bytes per character of its entities and HEAP_BYTES_PER_RULE_CHAR per
 * character of its rule bodies (CEL's AST and planned program), so a few large schemas cannot fill the heap. The
 * oldest entries are evicted first; an entry larger than the whole budget is served but not kept.
 */
import { type CompiledSchema, compileSchema } from "../compile/index.ts";
import { PembaError } from "../errors.ts";
import type { SchemaDefinition } from "../schema/ast.ts";
import { parseSchema } from "../schema/index.ts";
import { joinShared, sharedWork } from "../shared-work.ts";
import type { HeadSchemaRecord, Snap, Store } from "../store/store.ts";

export interface ResolvedSchema {
  tenantId: string;
  version: string;
  text: string;
  definition: SchemaDefinition;
  compiled: CompiledSchema;
}

/**
 * Heap bytes held by a parsed + compiled schema (text, definition, compiled closures) per character of its text
 * outside rule bodies. Measured with node --expose-gc, 20 distinct schemas at the write limits kept by a service:
 * 25 per character of entities with relations, attributes and permissions; rounded up.
 */
export const HEAP_BYTES_PER_CHAR = 40;
/** The same per character of rule bodies: CEL's parsed AST and planned program (measured: 69-75; rounded up). */
export const HEAP_BYTES_PER_RULE_CHAR = 100;

/** The estimated heap bytes of one cached schema. */
export function estimatedBytes(text: string, definition: SchemaDefinition): number {
  let ruleChars = 0;
  for (const rule of Object.values(definition.rules)) ruleChars += rule.expression.length;
  const rest = Math.max(0, text.length - ruleChars);
  return rest * HEAP_BYTES_PER_CHAR + ruleChars * HEAP_BYTES_PER_RULE_CHAR;
}

interface HeadEntry {
  version: string;
  expires: number;
  /** A store snap at (or before) which this head was read: a request with a newer token reads the head again. */
  readAt: Snap;
}

/** Default bound of the compiled schemas' estimated heap bytes (`maxBytes`). */
export const DEFAULT_MAX_COMPILED_SCHEMA_BYTES = 256 * 1024 * 1024;

export class SchemaRegistry {
  readonly #store: Store;
  readonly #headTtlMs: number;
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  /** Estimated bytes of the entries in #compiled. */
  #bytes = 0;
  readonly #compiled = new Map<string, ResolvedSchema>();
  readonly #pending = new Map<string, Promise<ResolvedSchema>>();
  readonly #heads = new Map<string, HeadEntry>();
  readonly #refreshing = new Set<string>();
  /** The entry found last: checks mostly name one (tenant, version), matched without building the key. */
  #last: ResolvedSchema | undefined = undefined;

  constructor(store: Store, opts: { headTtlMs?: number; maxEntries?: number; maxBytes?: number } = {}) {
    this.#store = store;
    this.#headTtlMs = opts.headTtlMs ?? 1000;
    store.onHeadSchema?.((tenantId, version, readAt) => this.#confirmHead(tenantId, version, readAt));
    this.#maxEntries = opts.maxEntries ?? 1000;
    this.#maxBytes = opts.maxBytes ?? DEFAULT_MAX_COMPILED_SCHEMA_BYTES;
  }

  /** Estimated heap bytes of the cached schemas. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The cached schema for (tenant, version or head), without any storage call; undefined on a miss. `atSnap` is the
   * request's snap token (0 = none): a head read before that snap is a miss.
   */
  cached(tenantId: string, version: string, atSnap: Snap = 0): ResolvedSchema | undefined {
    if (version === "") {
      const head = this.#heads.get(tenantId);
      if (head === undefined || head.readAt < atSnap) return undefined;
      const now = Date.now();
      if (head.expires < now) {
        if (head.expires + this.#headTtlMs < now) return undefined; // too old to serve: load it inline
        this.#refreshHead(tenantId);
      }
      version = head.version;
    }
    const last = this.#last;
    if (last !== undefined && sameText(last.version, version) && last.tenantId === tenantId) return last;
    const found = this.#compiled.get(`${tenantId}\u0000${version}`);
    if (found !== undefined) this.#last = found;
    return found;
  }

  /**
   * A head version the store read (a lazy replica's look): the same version renews the cached head (no statement of
   * ours); another one drops it, so the next request reads the new head.
   */
  #confirmHead(tenantId: string, version: string, readAt: Snap): void {
    const head = this.#heads.get(tenantId);
    if (head === undefined) return;
    if (head.version !== version) {
      this.#heads.delete(tenantId);
      return;
    }
    head.expires = Date.now() + this.#headTtlMs;
    if (readAt > head.readAt) head.readAt = readAt;
  }

  /** Re-reads the tenant's head version in the background (one read per tenant at a time). */
  #refreshHead(tenantId: string): void {
    if (this.#refreshing.has(tenantId)) return;
    this.#refreshing.add(tenantId);
    this.#load(tenantId, "")
      .catch((e: unknown) => {
        // the database cannot be reached (down, restarting): keep serving the head known, and look again after
        // another headTtlMs, so requests that need no database go on being answered during an outage
        const head = this.#heads.get(tenantId);
        if (head !== undefined && e instanceof PembaError && e.grpcCode === 14)
          head.expires = Date.now() + this.#headTtlMs;
        else this.#heads.delete(tenantId); // gone (tenant deleted?): the next request loads inline
      })
      .finally(() => this.#refreshing.delete(tenantId));
  }

  /**
   * Empty version = the tenant's head (as of `atSnap` or later); ERROR_CODE_SCHEMA_NOT_FOUND when the tenant has no
   * such schema.
   */
  resolve(tenantId: string, version: string, atSnap: Snap = 0): ResolvedSchema | Promise<ResolvedSchema> {
    return this.cached(tenantId, version, atSnap) ?? this.#load(tenantId, version);
  }

  async #load(tenantId: string, version: string): Promise<ResolvedSchema> {
    let text: string | undefined;
    if (version === "") {
      const head = await this.#readHead(tenantId);
      const known = this.#heads.get(tenantId);
      // two reads in flight: keep the one made at the later snap
      if (known === undefined || known.readAt <= head.readAt || known.expires < Date.now()) {
        this.#heads.set(tenantId, {
          version: head.version,
          expires: Date.now() + this.#headTtlMs,
          readAt: head.readAt,
        });
      }
      version = head.version;
      text = head.schema;
    }
    const key = `${tenantId}\u0000${version}`;
    const hit = this.#compiled.get(key);
    if (hit) return hit;
    const pending = this.#pending.get(key);
    if (pending !== undefined) return joinShared(pending, () => this.#compile(tenantId, version, text));
    const started = sharedWork(
      this.#compile(tenantId, version, text).finally(() => this.#pending.delete(key)),
    );
    this.#pending.set(key, started);
    return started;
  }

  async #readHead(tenantId: string): Promise<HeadSchemaRecord> {
    const head = await this.#store.headSchema(tenantId);
    if (head === undefined) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
    return head;
  }

  async #compile(tenantId: string, version: string, text: string | undefined): Promise<ResolvedSchema> {
    if (text === undefined) {
      const record = await this.#store.readSchema(tenantId, version);
      if (record === undefined) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
      text = record.schema;
    }
    const definition = parseSchema(text);
    return this.remember(tenantId, version, text, definition, compileSchema(definition));
  }

  /** Records a version compiled by the caller (a schema write) so it is never compiled twice. */
  remember(
    tenantId: string,
    version: string,
    text: string,
    definition: SchemaDefinition,
    compiled: CompiledSchema,
  ): ResolvedSchema {
    const resolved: ResolvedSchema = { tenantId, version, text, definition, compiled };
    const key = `${tenantId}\u0000${version}`;
    const size = estimatedBytes(text, definition);
    if (size > this.#maxBytes) return resolved;
    this.#delete(key);
    while (
      this.#compiled.size > 0 &&
      (this.#compiled.size >= this.#maxEntries || this.#bytes + size > this.#maxBytes)
    ) {
      this.#delete(this.#compiled.keys().next().value as string);
    }
    this.#compiled.set(key, resolved);
    this.#bytes += size;
    return resolved;
  }

  #delete(key: string): void {
    const entry = this.#compiled.get(key);
    if (entry === undefined) return;
    this.#compiled.delete(key);
    this.#bytes -= estimatedBytes(entry.text, entry.definition);
    if (this.#last === entry) this.#last = undefined;
  }

  /**
   * Called after this process wrote a new head version. The snap it was read at is unknown (0): the first request
   * with a snap token reads the head once more, which also notices a schema written meanwhile by another process.
   */
  setHead(tenantId: string, version: string): void {
    this.#heads.set(tenantId, { version, expires: Date.now() + this.#headTtlMs, readAt: 0 });
  }

  forgetTenant(tenantId: string): void {
    this.#heads.delete(tenantId);
    this.#last = undefined;
    const prefix = `${tenantId}\u0000`;
    for (const key of [...this.#compiled.keys()]) if (key.startsWith(prefix)) this.#delete(key);
  }
}

/**
 * a === b, comparing char codes when the lengths match: V8 compares a sliced string (13 or more characters cut
 * from a request body, as the check body scanner's schema version) with another string in a runtime call.
 */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return false;
  return true;
}
