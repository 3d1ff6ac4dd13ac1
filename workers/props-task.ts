// Piscina task: checks `email.send` props against a template's propsSchema off the event loop of
// the process. The runner aborts a check still running at the activation's deadline, which ends
// this thread (Piscina starts a fresh one); the validator and its cache live as long as the thread.
import { createPropsValidator, PROPS_WARM_UP, type PropsCheck, type PropsInput } from '../journeys/executions/mod.js';

const validator = createPropsValidator();

export default function run(input: PropsInput | typeof PROPS_WARM_UP): PropsCheck {
  if (input === PROPS_WARM_UP) return { ok: true };
  return validator.check(input);
}
