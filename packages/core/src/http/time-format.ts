/** Time formats Permify puts on the wire. */

/** Go's `time.Time.String()` in UTC without fractions: `2026-11-22 10:25:49 +0000 UTC` (schema list). */
export function goTimeString(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace("T", " ")} +0000 UTC`;
}

/** protojson Timestamp: RFC 3339 in UTC, fractional seconds only when non-zero. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(".000Z", "Z");
}
