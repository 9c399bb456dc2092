import { env } from "cloudflare:test";
import { D1Store } from "@pemba/core";
import { describeStoreContract } from "@pemba/core/testing";
import { emptyDatabase } from "./d1-database.ts";

describeStoreContract("d1", async () => {
  await emptyDatabase(env.DB);
  return D1Store.open(env.DB);
});
