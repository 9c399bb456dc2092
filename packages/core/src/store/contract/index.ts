/**
 * The one contract suite every Store driver passes (memory, SQLite, libSQL, PostgreSQL, D1, the replica). `open` must return a
 * fresh, empty store (only tenant "t1") for every test.
 */
import { afterEach, beforeEach, describe } from "vitest";
import type { Store } from "../store.ts";
import { describeDataContract } from "./data.ts";
import { describeExpiryContract } from "./expiry.ts";
import type { StoreHandle } from "./handle.ts";
import { describeHistoryContract } from "./history.ts";
import { describeMetadataContract } from "./metadata.ts";

export type { StoreHandle } from "./handle.ts";

export function describeStoreContract(
  name: string,
  open: () => Promise<Store>,
  close?: (store: Store) => Promise<void>,
): void {
  describe(`Store contract: ${name}`, () => {
    const handle = {} as StoreHandle;
    beforeEach(async () => {
      handle.store = await open();
    });
    afterEach(async () => {
      if (close) await close(handle.store);
      else await handle.store.close();
    });
    describeMetadataContract(handle);
    describeDataContract(handle);
    describeHistoryContract(handle);
    describeExpiryContract(handle);
  });
}
