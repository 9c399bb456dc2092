/** Where drizzle-kit writes the generated migrations (packages/core/drizzle/<dialect>). */
export const SQLITE_MIGRATIONS_URL = new URL("../../../drizzle/sqlite", import.meta.url);
export const PG_MIGRATIONS_URL = new URL("../../../drizzle/pg", import.meta.url);
