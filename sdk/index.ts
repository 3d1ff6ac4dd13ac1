// headwater/sdk: define journeys and e-mail templates in a project. The project tool bundles this
// module into each journey or template file and the service runs the bundle in a sandbox, so it
// depends on nothing (no Node APIs, no packages).
import type {
  JourneyDefinition, JourneyHandler, JourneyOptions, RenderedEmail, TemplateDefinition, TemplateOptions, TemplateRender,
} from './types.js';

export type {
  Duration, Environment, Event, Identifier, JourneyContext, JourneyDefinition, JourneyHandler, JourneyLog,
  JourneyOptions, Profile, RenderedEmail, TemplateDefinition, TemplateOptions, TemplateRender, Trigger, WaitOptions,
} from './types.js';

function needKey(what: string, options: { key?: unknown } | undefined): string {
  if (!options || typeof options.key !== 'string' || options.key.length === 0) throw new TypeError(`${what}(): options.key must be a non-empty string`);
  return options.key;
}

/** A journey: `handler` runs once per trigger for each profile that consented to `purpose`. */
export function journey(options: JourneyOptions, handler: JourneyHandler): JourneyDefinition {
  const key = needKey('journey', options);
  if (typeof handler !== 'function') throw new TypeError(`journey("${key}"): the handler must be a function`);
  return { kind: 'journey', key, options, handler };
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * `value` as HTML text, safe in element content and in quoted attribute values: profile traits and
 * props are user data, so every one interpolated into `html` goes through this. null and undefined
 * become ''.
 */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

// A subject is one mail header line: line breaks in interpolated data become spaces rather than a
// refused render (the service refuses a subject that still has one).
const oneLine = (out: RenderedEmail): RenderedEmail =>
  out && typeof out.subject === 'string' ? { ...out, subject: out.subject.replace(/\r\n|[\r\n]/g, ' ') } : out;

/**
 * An e-mail template: `render` turns the props of `ctx.email.send` into subject, html and text.
 * CR and LF in the subject become spaces; `html` is used as written: escape data with `escapeHtml`.
 */
export function template<P = Record<string, unknown>>(options: TemplateOptions, render: TemplateRender<P>): TemplateDefinition<P> {
  const key = needKey('template', options);
  if (typeof render !== 'function') throw new TypeError(`template("${key}"): render must be a function`);
  return {
    kind: 'template', key, options,
    render: (props) => {
      const out = render(props) as RenderedEmail | PromiseLike<RenderedEmail>;
      return (out && typeof (out as PromiseLike<RenderedEmail>).then === 'function'
        ? (out as PromiseLike<RenderedEmail>).then(oneLine) : oneLine(out as RenderedEmail)) as RenderedEmail;
    },
  };
}
