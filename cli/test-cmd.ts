export async function runTest(_a: string[]): Promise<number> { return 2; }
