/**
 * The statements come from the table definitions, rendered once per shape: a statement read from a dialect's
 * rendered texts is exactly what drizzle renders for it afresh (so no two templates share a shape name), for any
 * engine read, filtered read, write and the rest; and both table files name the same tables, columns and indexes,
 * so one set of plans serves both dialects.
 */

import { sql } from "drizzle-orm";
import { getTableConfig as pgTableConfig } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteTableConfig } from "drizzle-orm/sqlite-core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as arb from "../testing/arbitraries.ts";
import { type Dialect, P, type Statement, sqliteDialect, sqliteDialectWith } from "./dialect.ts";
import { TX_IDS_SEQUENCE } from "./fragments.ts";
import * as meta from "./meta-plan.ts";
import { createPgDialect, pgDialect, preparedName } from "./pg-dialect.ts";
import * as pgTables from "./pg-tables.ts";
import * as read from "./read-plan.ts";
import * as sqliteTables from "./sqlite-tables.ts";
import { INDEXES } from "./sqlite-tables.ts";
import { planWrite } from "./write-plan.ts";

/** Each dialect as the stores share it (texts cached across calls) and a fresh one (renders every statement). */
const smallValues = sqliteDialectWith(45, 100);
const DIALECTS: [string, Dialect, () => Dialect][] = [
  ["sqlite", sqliteDialect, () => sqliteDialectWith(999, 999)],
  ["sqlite, json_each above 45 values", smallValues, () => sqliteDialectWith(45, 100)],
  ["pg", pgDialect, createPgDialect],
];

const plain = (s: Statement<unknown>) => ({ sql: s.sql, params: s.params, name: s.name });

describe.each(DIALECTS)("%s statements", (_name, shared, fresh) => {
  const same = (build: (d: Dialect) => Statement<unknown> | Statement<unknown>[]) => {
    const all = (d: Dialect) => [build(d)].flat().map(plain);
    expect(all(shared)).toEqual(all(fresh()));
    // PostgreSQL's statements carry their prepared statement's name, computed with the cached text
    for (const s of all(shared)) expect(s.name).toBe(shared.name === "pg" ? preparedName(s.sql) : undefined);
  };

  it("engine reads: the cached text of every shape is drizzle's rendering", () => {
    fc.assert(
      fc.property(
        arb.queries(arb.tupleQuery),
        arb.queries(arb.subjectQuery),
        arb.queries(arb.attributeQuery),
        (t, s, a) => {
          same((d) => read.queryTuplesStatement(d, "t1", 7, t, 5));
          same((d) => read.querySubjectTuplesStatement(d, "t1", 7, s, 5));
          same((d) => read.queryAttributesStatement(d, "t1", 7, a, 5));
          same((d) => read.queryReadsStatement(d, "t1", 7, t, a, 5));
        },
      ),
      { numRuns: 150 },
    );
  });

  it("filtered reads and writes", () => {
    fc.assert(
      fc.property(arb.tupleFilter, arb.attributeFilter, arb.writeRequest(20, 20, 5), (tf, af, req) => {
        same((d) => read.readTuplesStatement(d, "t1", 7, 5, tf, 3, 101));
        same((d) => read.readAttributesStatement(d, "t1", 7, 5, af, 3, 101));
        same((d) => planWrite(d, "t1", req, 0));
      }),
      { numRuns: 100 },
    );
  });

  it("the feed, object ids, tenants, schemas, bundles, counters and gc", () => {
    same((d) => [
      read.listObjectIdsStatement(d, "t1", 7, "doc", 5),
      read.changedTxStatement(d, "t1", 1, 10),
      read.changedRowsStatement(d, "t1", 1, 10),
      meta.createTenantStatement(d, "t2", "two", 1),
      meta.getTenantStatement(d, "t2"),
      meta.tenantExistsStatement(d, "t2"),
      ...meta.deleteTenantStatements(d, "t2"),
      ...meta.deleteEmptyTenantStatements(d, "t2"),
      meta.listTenantsStatement(d, "", 11),
      ...meta.writeSchemaStatements(d, "t1", "v1", "entity user {}", 1),
      meta.readSchemaStatement(d, "t1", "v1"),
      meta.headSchemaStatement(d, "t1"),
      meta.listSchemasStatement(d, "t1", 9, 11),
      meta.headSnapStatement(d, "t1"),
      meta.tenantHeadsStatement(d),
      meta.gcHorizonStatement(d),
      meta.freshnessStatement(d, "t1"),
      meta.writeBundleStatement(d, "t1", "b", "{}"),
      meta.readBundleStatement(d, "t1", "b"),
      meta.deleteBundleStatement(d, "t1", "b"),
      ...meta.gcStatements(d, 1).horizon,
      ...meta.gcStatements(d, 1).collect,
    ]);
  });

  it("a statement whose parameters do not fill its placeholders, or with a value in its template, fails", () => {
    const d = fresh();
    expect(() => d.statement("two", () => sql`SELECT ${P}, ${P}`, [1])).toThrow(
      "1 parameters for 2 placeholders",
    );
    expect(() => d.statement("inline", () => sql`SELECT ${1}`, [])).toThrow("a value inside the template");
  });
});

describe("table definitions", () => {
  /** What a table names: its own name, its columns' and its indexes'. */
  const names = (c: {
    name: string;
    columns: { name: string }[];
    indexes: { config: { name?: string } }[];
  }) => ({
    name: c.name,
    columns: c.columns.map((column) => column.name),
    indexes: c.indexes.map((index) => index.config.name),
  });
  const { INDEXES: _, ...sqlite } = sqliteTables;
  const sqliteNames = Object.values(sqlite).map((t) => names(sqliteTableConfig(t)));

  it("sqlite-tables.ts and pg-tables.ts name the same tables, columns and indexes", () => {
    expect(sqliteNames.map((t) => t.name)).toEqual([
      "pemba_meta",
      "tenants",
      "transactions",
      "tuples",
      "attributes",
      "schemas",
      "bundles",
    ]);
    // PostgreSQL's objects more: the sequence of transaction ids, named as the statements name it, and the subject
    // page index (SQLite's migration 0006 dropped it: its second scattered index slowed 1,000-row writes)
    const { txIds, ...pg } = pgTables;
    expect(txIds.seqName).toBe(TX_IDS_SEQUENCE);
    expect(Object.keys(pg)).toEqual(Object.keys(sqlite));
    const pgNames = Object.values(pg).map((t) => names(pgTableConfig(t)));
    const pgTuples = pgNames.find((t) => t.name === "tuples")!;
    expect(pgTuples.indexes).toContain("tuples_subject_page_idx");
    pgTuples.indexes = pgTuples.indexes.filter((index) => index !== "tuples_subject_page_idx");
    expect(pgNames).toEqual(sqliteNames);
  });

  it("the indexes the read plans pin exist", () => {
    const indexes = sqliteNames.flatMap((t) => t.indexes);
    for (const index of Object.values(INDEXES)) expect(indexes).toContain(index);
  });
});
