/** Statements per permission request on D1 (miniflare's local D1, inside workerd): the shared suite. */
import { env } from "cloudflare:test";
import { D1Store } from "@pemba/core";
import { describeStatementCounts } from "@pemba/core/testing";
import { emptyDatabase } from "./d1-database.ts";

describeStatementCounts("D1", () => async (onQuery) => {
  await emptyDatabase(env.DB);
  return D1Store.open(env.DB, { onQuery });
});
