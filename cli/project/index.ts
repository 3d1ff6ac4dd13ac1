// The project tool (journey projects): `headwater init`, `headwater push`, and the pieces tests reach.
export { runInit, runPush, INIT_HELP, PUSH_HELP } from './commands.js';
export { extractSpine } from './spine.js';
export { stripTypes } from './strip.js';
export { packSource, sourceFiles, sha256 } from './pack.js';
export { SCAFFOLD } from './scaffold.js';
export { bundleFiles, sdkPlugin } from './bundle.js';
export { readDefinition } from './definitions.js';
export { SDK_FILE } from './tool.js';
