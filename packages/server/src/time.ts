/**
 * Times on the wire: ISO 8601 in UTC with six fractional digits, as the seed
 * prints them (`2026-08-28T04:35:33.991243Z`). Parley keeps milliseconds, so
 * the last three digits are zero.
 */
export function isoMicros(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-08-28T04:35:33.991Z
  return `${iso.slice(0, -1)}000Z`;
}
