/**
 * Automatic batching: `check()` calls made in the same tick (before the microtask queue drains) with the same
 * metadata go out as one `permissions/bulk-check` request of at most `maxItems` items, and each caller gets its
 * own item's answer. A lone call still goes out as a plain check. When a bulk request is refused as a whole for
 * bad input (400 or 404: one item names an unknown entity type, say), its items are retried one by one, so only the
 * bad call fails. An item the engine cannot evaluate (an unknown entity type or permission) is answered as
 * bulk-check answers it, DENIED with check_count 1, where a check of its own would be a 404.
 */
import { PembaApiError } from "./errors.ts";
import type {
  PermissionBulkCheckRequestItem,
  PermissionCheckRequestMetadata,
  PermissionCheckResponse,
} from "./wire.gen.ts";

interface Pending {
  item: PermissionBulkCheckRequestItem;
  resolve(answer: PermissionCheckResponse): void;
  reject(error: unknown): void;
}

interface Group {
  metadata: PermissionCheckRequestMetadata;
  pending: Pending[];
}

export interface CheckSender {
  one(
    item: PermissionBulkCheckRequestItem,
    metadata: PermissionCheckRequestMetadata,
  ): Promise<PermissionCheckResponse>;
  bulk(
    items: PermissionBulkCheckRequestItem[],
    metadata: PermissionCheckRequestMetadata,
  ): Promise<PermissionCheckResponse[]>;
}

export class CheckBatcher {
  readonly #send: CheckSender;
  readonly #maxItems: number;
  #groups = new Map<string, Group>();
  #scheduled = false;

  constructor(send: CheckSender, maxItems: number) {
    this.#send = send;
    this.#maxItems = Math.max(1, Math.min(100, maxItems));
  }

  check(
    item: PermissionBulkCheckRequestItem,
    metadata: PermissionCheckRequestMetadata,
  ): Promise<PermissionCheckResponse> {
    return new Promise((resolve, reject) => {
      const key = `${metadata.depth}\u0000${metadata.snap_token ?? ""}\u0000${metadata.schema_version ?? ""}`;
      let group = this.#groups.get(key);
      if (group === undefined) {
        group = { metadata, pending: [] };
        this.#groups.set(key, group);
      }
      group.pending.push({ item, resolve, reject });
      if (group.pending.length >= this.#maxItems) {
        this.#groups.delete(key);
        this.#dispatch(group);
      } else if (!this.#scheduled) {
        this.#scheduled = true;
        queueMicrotask(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const groups = this.#groups;
    this.#groups = new Map();
    for (const group of groups.values()) this.#dispatch(group);
  }

  #dispatch({ metadata, pending }: Group): void {
    if (pending.length === 1) {
      const [p] = pending;
      this.#send.one(p.item, metadata).then(p.resolve, p.reject);
      return;
    }
    this.#send
      .bulk(
        pending.map((p) => p.item),
        metadata,
      )
      .then(
        (results) => {
          if (results.length !== pending.length) {
            const error = new Error(
              `bulk-check answered ${results.length} results for ${pending.length} items`,
            );
            for (const p of pending) p.reject(error);
            return;
          }
          pending.forEach((p, i) => {
            p.resolve(results[i]);
          });
        },
        (error: unknown) => {
          if (error instanceof PembaApiError && (error.status === 400 || error.status === 404)) {
            for (const p of pending) this.#send.one(p.item, metadata).then(p.resolve, p.reject);
          } else {
            for (const p of pending) p.reject(error);
          }
        },
      );
  }
}
