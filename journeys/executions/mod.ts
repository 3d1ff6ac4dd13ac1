// Journey executions: the trigger index and what landing events does for journeys (starts and
// answered waits), the runner that activates due executions, and the reads and cancel of the routes.
export { TriggerIndex, type JourneyTrigger } from './triggers.js';
export { onEventsLanded, type LandedDeps } from './landed.js';
export { startJourneyRunner, type Runner, type RunnerOptions } from './runner.js';
export type { EmailMessage } from './host.js';
export { journeyJournals, type JourneyJournals } from './journals.js';
export { exportExecutions } from './export.js';
export { cancelExecution, executionOut, getExecution, listExecutions, type CancelResult, type ExecutionFilter } from './store.js';
export { createPropsValidator, MAX_SCHEMA_CHARS, type PropsCheck, type PropsInput, type PropsValidator } from './props.js';
export { PROPS_WARM_UP, type HostAnswer, type HostRequest, type JourneyTask } from './task.js';
export { messagingOf, messagingProblem, type Messaging } from './messaging.js';
export { journeyMetrics, metricsOut, type MetricsBucket } from './metrics.js';
