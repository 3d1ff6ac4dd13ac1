// Journey projects: artifacts, pushes and their versions, compilation, journeys, and the store
// functions the journey runtime reads.
export {
  CHUNK_BYTES, getArtifact, missingArtifacts, readArtifact, storeArtifact, sweepUploads,
  type Artifact, type ArtifactKind, type StoreOptions, type StoreResult,
} from './artifacts.js';
export { canonicalJson, createPush, getPush, listPushes, manifestProblems, pushSourceDigest, versionOut, type CreatePush, type ManifestInput } from './pushes.js';
export { getJourney, listJourneys, setJourneyEnabled, type Journey, type SetEnabled } from './journeys.js';
export { enabledJourneys, latestReadyVersion, versionModule, type Version, type VersionModule } from './versions.js';
export { compileBundle, DEFAULT_LOAD_LIMITS, MODULE_GLOBAL, type CompileInput, type CompileOutput, type LoadLimits } from './load.js';
export { startCompiler, type Compiler, type CompilerOptions } from './compiler.js';
export { controlsOf, parseControls, NO_CONTROLS, type JourneyControls } from './controls.js';
