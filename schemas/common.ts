// Shared building blocks of the HTTP contract (OpenAPI description, "Conventions").
import { Type } from '@sinclair/typebox';
import type { Static, TSchema, SchemaOptions, TUnsafe } from '@sinclair/typebox';
import { ERROR_CODES } from './errors.js';

/** A string enum emitted as `{ type: 'string', enum: [...] }` (readable in OpenAPI, cheap in Ajv). */
export function StringEnum<const T extends readonly string[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/** `T | null`. */
export function Nullable<T extends TSchema>(schema: T, options: SchemaOptions = {}) {
  return Type.Union([schema, Type.Null()], options);
}

/** An object mapping arbitrary names to values of one schema (`additionalProperties: value`). */
export function MapOf<T extends TSchema>(value: T, options: SchemaOptions = {}): TUnsafe<Record<string, Static<T>>> {
  return Type.Unsafe<Record<string, Static<T>>>({ ...options, type: 'object', additionalProperties: value });
}

/** Marks a schema that carries a `default`: once validated the member is always there, since the
 * validators fill defaults in (schemas/route.ts `Validated`). Types only: the schema is returned as is. */
export const WithDefault = <T extends TSchema>(schema: T): T & { default: Static<T> } => schema as T & { default: Static<T> };

/** An object with any members. */
export function AnyObject(options: SchemaOptions = {}): TUnsafe<Record<string, unknown>> {
  return Type.Unsafe<Record<string, unknown>>({ ...options, type: 'object' });
}

/**
 * A discriminated union emitted as `oneOf` + `discriminator` (OpenAPI 3.1 and Ajv's `discriminator`
 * option). Unlike `anyOf`, Ajv applies `default`s inside the selected branch.
 */
export function TaggedUnion<T extends TSchema[]>(propertyName: string, variants: [...T], options: SchemaOptions = {}): TUnsafe<Static<T[number]>> {
  // `type` and `required` come first, so that a non-object (0, [], "s", null) or a missing tag is a
  // plain validation error before the discriminator looks inside.
  return Type.Unsafe<Static<T[number]>>({ ...options, type: 'object', required: [propertyName], oneOf: variants, discriminator: { propertyName } });
}

export const Id = Type.String({ minLength: 1, description: 'A prefixed identifier.' });
export const DateTime = Type.String({ format: 'date-time', description: 'ISO 8601 / RFC 3339 date-time.' });
export const Environment = StringEnum(['development', 'production'] as const, { title: 'Environment' });

export const Meta = Type.Object(
  {
    requestId: Type.Optional(Type.String({ description: 'Also sent as the `x-request-id` header.' })),
    nextCursor: Type.Optional(Nullable(Type.String(), { description: 'Cursor of the next page; null on the last page.' })),
    hasMore: Type.Optional(Type.Boolean({ description: 'Whether more items exist after this page.' })),
  },
  { title: 'Meta' },
);

export const ErrorCodeSchema = StringEnum(ERROR_CODES, { title: 'ErrorCode' });

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      code: ErrorCodeSchema,
      message: Type.String({ description: 'Human-readable; `validation_failed` messages name the offending field as a JSON pointer.' }),
    }),
    meta: Type.Optional(Meta),
  },
  { title: 'ErrorEnvelope' },
);

/** Success envelope of one item: `{ data, meta? }`. */
export function Data<T extends TSchema>(schema: T, options: SchemaOptions = {}) {
  return Type.Object({ data: schema, meta: Type.Optional(Meta) }, options);
}

/** Success envelope of a page: `{ data: T[], meta }` (meta carries nextCursor and hasMore). */
export function List<T extends TSchema>(schema: T, options: SchemaOptions = {}) {
  return Type.Object({ data: Type.Array(schema), meta: Meta }, options);
}

/** Request body of a write route: `{ data }` (a missing `data` wrapper is 400 `malformed_request`). */
export function Body<T extends TSchema>(schema: T, options: SchemaOptions = {}) {
  return Type.Object({ data: schema }, options);
}

export const Cursor = Type.String({ description: 'Opaque cursor from `meta.nextCursor` of the previous page.' });
export const Limit = WithDefault(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Page size, 1 to 100 (default 50).' }));
export const SearchQ = Type.String({ maxLength: 200, description: 'Case-insensitive substring match on the name (0 to 200 characters).' });

/** Cursor pagination query members, to spread into a query object. */
export const PageQueryProps = {
  cursor: Type.Optional(Cursor),
  limit: Type.Optional(Limit),
};
export const PageQuery = Type.Object(PageQueryProps);

/** Pagination plus the `q` search. */
export const SearchPageQuery = Type.Object({ ...PageQueryProps, q: Type.Optional(SearchQ) });
