import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/sql/pg-tables.ts",
  out: "./drizzle/pg",
});
