// The authoring commands: replay check, local journey tests, tracking-plan types, checked push.
import { runCheckedPush } from '../push-check.js';
import { runReplay } from '../replay.js';
import { runTest } from '../test-cmd.js';
import { runTypes } from '../types.js';

export { createReplayer, describeCall, type Recorded, type Replayer, type Verdict } from './replayer.js';

export async function runAuthoring(cmd: 'replay' | 'test' | 'types' | 'push', argv: string[]): Promise<number> {
  if (cmd === 'replay') return runReplay(argv);
  if (cmd === 'test') return runTest(argv);
  if (cmd === 'types') return runTypes(argv);
  return runCheckedPush(argv);
}
