import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/store/sql/sqlite-tables.ts",
  out: "./drizzle/sqlite",
});
