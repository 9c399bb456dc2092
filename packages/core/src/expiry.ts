/**
 * Expiring tuples and attributes (Pemba extension): `expires_at` on the wire is an RFC 3339 date-time; inside, a
 * row's `expiresAt` is ms since the epoch (UTC). A read at evaluation time `at` sees a row only while
 * `at < expiresAt` (docs/EXPIRY.md).
 */

/**
 * RFC 3339 date-time (`2030-01-02T03:04:05Z`, fractions to the nanosecond and offsets allowed); stored and answered
 * in UTC with milliseconds (a finer fraction is cut). Strict: a field out of its range (`2030-02-30`, `T24:00:00`,
 * `:60` seconds, an offset past 23:59) is refused, never rolled over into the next month, day or minute, and so is a
 * time whose UTC year falls outside 0001-9999 (its UTC form would not be RFC 3339).
 */
const RFC3339 =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))$/;

const MIN_MS = new Date(0).setUTCFullYear(1, 0, 1); // 0001-01-01T00:00:00Z
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const isLeapYear = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysInMonth = (y: number, m: number) =>
  m === 2 ? (isLeapYear(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;

/** ms since the epoch of an RFC 3339 date-time; undefined when the text is not one. */
export function parseRfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const ms = Number((m[7] ?? "").padEnd(3, "0").slice(0, 3));
  // setUTCFullYear: Date.UTC reads years 0-99 as 1900-1999
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  const utc = date.getTime() - offsetMinutes * 60_000;
  return utc >= MIN_MS && utc <= MAX_MS ? utc : undefined;
}

/** The wire form of an expiry: RFC 3339 in UTC with milliseconds. */
export const formatRfc3339 = (ms: number): string => new Date(ms).toISOString();
