// Canonical trait validations (OpenAPI description, "Ingestion"): the only source of `trait_validation_failed`.
// Only the top-level trait names below are checked, case-sensitively. A null value is not a bad
// format (it carries no value to check), so it passes.

// Dot-atom local part and a dotted host name (the e-mail format of ajv-formats), 254 characters at most.
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
// E.164: a plus, a country code not starting with 0, 15 digits at most in all.
const E164 = /^\+[1-9][0-9]{1,14}$/;
const DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/;
// RFC 3339 profile of ISO 8601, as every other date-time of this API: seconds and an offset are
// required, so the instant is never ambiguous.
const DATE_TIME = /^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))$/;
const HTTP_URL = /^[Hh][Tt][Tt][Pp][Ss]?:\/\/[^\s/?#]+[^\s]*$/;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isCalendarDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const leap = m === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= DAYS[m - 1]! + (leap ? 1 : 0);
}

/** One address (dot-atom local part, dotted host), as the canonical `email` trait: no display name, no list. */
export const isEmail = (v: unknown) => typeof v === 'string' && v.length <= 254 && v.indexOf('@') <= 64 && EMAIL.test(v);
const isPhone = (v: unknown) => typeof v === 'string' && E164.test(v);

function isDate(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  const m = DATE.exec(v);
  return m !== null && isCalendarDate(+m[1]!, +m[2]!, +m[3]!);
}

function isDateTime(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  const m = DATE_TIME.exec(v);
  if (m === null || !isCalendarDate(+m[1]!, +m[2]!, +m[3]!)) return false;
  if (+m[4]! > 23 || +m[5]! > 59 || +m[6]! > 59) return false;
  return m[7] === undefined || (+m[7] <= 23 && +m[8]! <= 59);
}

function isHttpUrl(v: unknown): boolean {
  if (typeof v !== 'string' || !HTTP_URL.test(v)) return false;
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

const isAge = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 150;

const RULES: ReadonlyArray<readonly [string, (v: unknown) => boolean, string]> = [
  ['email', isEmail, 'must be an e-mail address'],
  ['phone', isPhone, 'must be an E.164 phone number (e.g. +14155550123)'],
  ['createdAt', isDateTime, 'must be an ISO 8601 date-time with an offset (e.g. 2024-05-01T12:00:00Z)'],
  ['birthday', isDate, 'must be an ISO 8601 calendar date (YYYY-MM-DD)'],
  ['website', isHttpUrl, 'must be an absolute http(s) URL'],
  ['avatar', isHttpUrl, 'must be an absolute http(s) URL'],
  ['age', isAge, 'must be a number from 0 to 150'],
];

/** The first canonical trait whose value has a bad format, or null when all pass. */
export function validateCanonicalTraits(traits: Readonly<Record<string, unknown>>): null | { name: string; message: string } {
  for (let i = 0; i < RULES.length; i++) {
    const [name, ok, what] = RULES[i]!;
    if (!Object.hasOwn(traits, name)) continue;
    const v = traits[name];
    if (v === null || ok(v)) continue;
    return { name, message: `trait "${name}" ${what}` };
  }
  return null;
}
