// The journals of a journey's latest executions (the project tool's replay check reads them).
import { Type } from '@sinclair/typebox';
import { AnyObject, Id, Nullable } from './common.js';
import { ExecutionStatus } from './resources.js';
import { JournalCallSchema, JournalEntrySchema } from './journey-resources.js';

export const JourneyJournalsSchema = Type.Object(
  {
    key: Type.String(),
    enabled: Type.Boolean(),
    bundle: Nullable(Type.String(), { description: 'Bundle digest of the newest `ready` version (what new executions run); null while none is ready.' }),
    active: Type.Integer({ minimum: 0, description: 'Running and waiting executions of the journey; each keeps the version it started on.' }),
    executions: Type.Array(Type.Object({
      id: Id,
      runId: Type.String({ description: 'The current run; it also seeds the run\'s Math.random.' }),
      releaseId: Type.String(),
      versionId: Type.String(),
      bundle: Nullable(Type.String(), { description: 'Bundle digest of the version the execution runs.' }),
      status: ExecutionStatus,
      event: AnyObject({ description: 'The run\'s trigger event (`ctx.event`).' }),
      journal: Type.Array(JournalEntrySchema),
      pending: Nullable(Type.Object({ call: JournalCallSchema, at: Type.Integer({ minimum: 0 }) }), {
        description: 'The sleep or waitForEvent a waiting execution is parked on (recorded at `at` once answered); null otherwise.',
      }),
    }), { description: 'Newest first.' }),
  },
  { title: 'JourneyJournals' },
);
