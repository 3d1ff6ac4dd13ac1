import { createHash } from 'node:crypto';

/** What a suppression stores of an identifier value: its sha256, hex. The kind is kept beside it. */
export const hashIdentifier = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');
