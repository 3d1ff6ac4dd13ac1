import type { TypeName } from './types.js';

/**
 * The type name of one observed value. `null` (and `undefined`) has no type name: it returns null
 * and callers skip the observation, so a null never registers or retypes anything. Inside arrays
 * nulls are ignored too; the item type is named when every other member agrees, `array<any>` when
 * they disagree, when a member is itself an array, or when nothing typed remains.
 */
export function inferType(value: unknown): TypeName | null {
  switch (typeof value) {
    case 'string': return 'string';
    case 'number': case 'bigint': return 'number';
    case 'boolean': return 'boolean';
    case 'object':
      if (value === null) return null;
      return Array.isArray(value) ? arrayType(value) : 'object';
    default: return null; // undefined, functions, symbols: never produced by JSON
  }
}

type ItemType = 'string' | 'number' | 'boolean' | 'object';

function arrayType(a: unknown[]): TypeName {
  let item: ItemType | undefined;
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    let t: ItemType;
    switch (typeof v) {
      case 'string': t = 'string'; break;
      case 'number': case 'bigint': t = 'number'; break;
      case 'boolean': t = 'boolean'; break;
      case 'object':
        if (v === null) continue;
        if (Array.isArray(v)) return 'array<any>';
        t = 'object'; break;
      default: continue;
    }
    if (item === undefined) item = t;
    else if (item !== t) return 'array<any>';
  }
  return item === undefined ? 'array<any>' : `array<${item}>`;
}
