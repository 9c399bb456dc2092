/** The server's per-statement SQL metrics (its `onQuery` observer, exported on /metrics), ranked by cost. */

export interface StatementCost {
  kind: string;
  seconds: number;
  count: number;
}

/** Statement kinds by total time, from the Prometheus text of /metrics (pemba_sql_query_duration_seconds). */
export function statementCosts(metricsText: string): StatementCost[] {
  const byKind = new Map<string, StatementCost>();
  const line = /^pemba_sql_query_duration_seconds_(sum|count)\{kind="([^"]*)"\} ([0-9.eE+-]+)$/gm;
  for (const m of metricsText.matchAll(line)) {
    const cost = byKind.get(m[2]!) ?? { kind: m[2]!, seconds: 0, count: 0 };
    if (m[1] === "sum") cost.seconds = Number(m[3]);
    else cost.count = Number(m[3]);
    byKind.set(m[2]!, cost);
  }
  return [...byKind.values()].sort((a, b) => b.seconds - a.seconds);
}
