/**
 * The check keys whole-tenant preloading fills (the replica's `preload` option, store/proxies/replica/preload.ts):
 * every entity type of the tenant's head schema with its relations and attributes. Here, above both the schema
 * language and the store, so the replica needs no parser of its own.
 */
import { parseSchema } from "../schema/parse-schema.ts";
import type { PreloadTypeKeys } from "../store/proxies/replica/preload.ts";

/** The schema's entity types with their relations and attributes; none when the stored text does not parse. */
export function schemaPreloadKeys(schema: string): PreloadTypeKeys[] {
  let parsed: ReturnType<typeof parseSchema>;
  try {
    parsed = parseSchema(schema);
  } catch {
    return []; // a stored schema parsed when it was written; nothing to preload if it does not now
  }
  return Object.values(parsed.entities).map((e) => ({
    type: e.name,
    relations: Object.keys(e.relations),
    attributes: Object.keys(e.attributes),
  }));
}
