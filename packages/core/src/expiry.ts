/**
 * Expiring tuples and attributes (Pemba extension): `expires_at` on the wire is an RFC 3339 date-time; inside, a
 * row's `expiresAt` is ms since the epoch (UTC). A read at evaluation time `at` sees a row only while
 * `at < expiresAt` (docs/EXPIRY.md).
 */

/** RFC 3339 date-time (`2030-01-02T03:04:05Z`, fractions and offsets allowed); stored and answered in UTC. */
const RFC3339_PATTERN =
  "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$";

const RFC3339 = new RegExp(RFC3339_PATTERN);

/** ms since the epoch of an RFC 3339 date-time; undefined when the text is not one. */
export function parseRfc3339(text: string): number | undefined {
  if (!RFC3339.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The wire form of an expiry: RFC 3339 in UTC with milliseconds. */
export const formatRfc3339 = (ms: number): string => new Date(ms).toISOString();
