import { env } from "cloudflare:test";
import { describeStoreContract } from "@pemba/core/store/contract";
import { D1Store } from "@pemba/core/store/d1";
import { emptyDatabase } from "./d1-database.ts";

describeStoreContract("d1", async () => {
  await emptyDatabase(env.DB);
  return D1Store.open(env.DB);
});
