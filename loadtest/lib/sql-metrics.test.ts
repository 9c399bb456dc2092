import { describe, expect, it } from "vitest";
import { statementCosts } from "./sql-metrics.ts";

describe("statementCosts", () => {
  it("ranks statement kinds by total time from the Prometheus text", () => {
    const text = [
      "# HELP pemba_sql_query_duration_seconds Time spent per SQL statement, by statement kind",
      "# TYPE pemba_sql_query_duration_seconds histogram",
      'pemba_sql_query_duration_seconds_bucket{le="0.001",kind="write"} 10',
      'pemba_sql_query_duration_seconds_sum{kind="write"} 0.5',
      'pemba_sql_query_duration_seconds_count{kind="write"} 20',
      'pemba_sql_query_duration_seconds_sum{kind="read_tuples"} 1.25e+0',
      'pemba_sql_query_duration_seconds_count{kind="read_tuples"} 5',
      'pemba_sql_query_duration_seconds_sum{kind="head_snap"} 0.001',
      'pemba_sql_query_duration_seconds_count{kind="head_snap"} 3',
      'pemba_http_request_duration_seconds_sum{route="/check",status="200"} 99',
    ].join("\n");
    expect(statementCosts(text)).toEqual([
      { kind: "read_tuples", seconds: 1.25, count: 5 },
      { kind: "write", seconds: 0.5, count: 20 },
      { kind: "head_snap", seconds: 0.001, count: 3 },
    ]);
    expect(statementCosts("")).toEqual([]);
  });
});
