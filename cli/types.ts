export async function runTypes(_a: string[]): Promise<number> { return 2; }
