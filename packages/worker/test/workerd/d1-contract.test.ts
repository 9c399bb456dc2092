import { env } from "cloudflare:test";
import { D1Store, ReplicaStore, ShardedStore, TenantPlacement } from "@pemba/core";
import { describeStoreContract } from "@pemba/core/testing";
import { emptyDatabase } from "./d1-database.ts";

describeStoreContract("d1", async () => {
  await emptyDatabase(env.DB);
  return D1Store.open(env.DB);
});

/** The three local databases, emptied, behind a ShardedStore (tenants spread by rendezvous hashing). */
async function sharded(): Promise<ShardedStore> {
  const bindings = { DB: env.DB, DB2: env.DB2, DB3: env.DB3 };
  const shards = [];
  for (const [name, db] of Object.entries(bindings)) {
    await emptyDatabase(db);
    shards.push({ name, store: await D1Store.open(db) });
  }
  return new ShardedStore(shards, new TenantPlacement({ databases: Object.keys(bindings) }));
}

describeStoreContract("d1 sharded over DB, DB2, DB3", sharded);
// the Worker's wiring (createPemba's withReplica): a lazy replica in front of each database
describeStoreContract("d1 sharded, a lazy replica in front of each database", async () =>
  (await sharded()).withEach((store) => ReplicaStore.lazy(store, { freshnessMs: 0 })),
);
