/** Explain in the page: not in this build's engine yet (the API's explain is used in live mode). */
import type { LoadedShape } from "@pemba/core";
import type { ExplainAnswer } from "./proof.ts";

export async function explainOnFile(
  _loaded: LoadedShape,
  _query: { entity: string; permission: string; subject: string },
): Promise<ExplainAnswer | undefined> {
  return undefined;
}
