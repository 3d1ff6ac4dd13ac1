// Shapes shared by the governance functions (OpenAPI description, "Ingestion"; the catalog).
import type pg from 'pg';

export type TypeName =
  | 'string' | 'number' | 'boolean' | 'object'
  | 'array<any>' | 'array<string>' | 'array<number>' | 'array<boolean>' | 'array<object>';

export type GovernanceState = 'allowed' | 'denied';
export type IngestionPolicy = 'permissive' | 'strict';
export type CatalogKind = 'event' | 'trait';

export interface CatalogEventEntry { state: GovernanceState; properties: Record<string, string> }
export interface CatalogTraitEntry { state: GovernanceState; type: string }

/** One org's catalog and policy as of `version` (orgs.catalog_version). Read-only once built. */
export interface CatalogSnapshot {
  version: number;
  policy: IngestionPolicy;
  events: Map<string, CatalogEventEntry>;
  traits: Map<string, CatalogTraitEntry>;
}

/** A pool or a client; anything that runs one statement. */
export interface Queryable { query: pg.Pool['query'] }
