// The spine of a journey: a static outline of the ctx calls its handler makes, in source order,
// with `if` and `loop` nesting, read from the journey's source (never by running it). The service
// and dashboards show it; it does not drive execution, so an approximation is fine where code is
// dynamic (calls made in helpers outside the handler are not followed).
import { parse, type Node } from 'acorn';
import { recursive, base, type RecursiveVisitors } from 'acorn-walk';
import type { SpineStep } from '../../schemas/mod.js';

const STEP_OF_CALL: Record<string, SpineStep['name']> = {
  sleep: 'sleep', waitForEvent: 'waitForEvent', 'email.send': 'send.email', 'webhook.send': 'send.webhook',
  'traits.set': 'traits.set', 'traits.unset': 'traits.unset', 'profile.get': 'profile.get',
  'profiles.get': 'profiles.get', 'events.track': 'events.track', restart: 'restart',
};
const ITERATING = new Set(['map', 'forEach', 'flatMap', 'filter', 'reduce', 'reduceRight', 'some', 'every', 'find', 'findIndex']);
const DETAIL_MAX = 200;
const TIMEOUT_MAX = 50;

// acorn nodes carry more than the minimal `Node` type declares; the walk reads them loosely.
type N = Node & Record<string, any>;
/** `nested`: inside a branch or loop; `inner`: inside a function nested in the handler. */
interface State { out: SpineStep[]; nested: boolean; inner: boolean }

function clip(s: string, max: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length <= max ? one : one.slice(0, max - 1) + '…';
}

/** Finds the handler of `export default journey(options, handler)` and outlines it; [] when there is none. */
export function extractSpine(js: string): SpineStep[] {
  const program = parse(js, { ecmaVersion: 'latest', sourceType: 'module' }) as N;
  const handler = findHandler(program);
  if (!handler) return [];
  const roots = new Map<string, string[]>();
  const param = handler.params[0] as N | undefined;
  if (param) addRoot(roots, param, []);
  const text = (n: N) => js.slice(n.start, n.end);
  const state: State = { out: [], nested: false, inner: false };
  recursive(handler.body as Node, state, visitors(roots, text) as RecursiveVisitors<State>, base);
  return state.out;
}

/** `ctx` itself, or a destructured `{ sleep, email }`, maps a local name to its path under ctx. */
function addRoot(roots: Map<string, string[]>, pattern: N, path: string[]): void {
  if (pattern.type === 'Identifier') roots.set(pattern.name, path);
  else if (pattern.type === 'AssignmentPattern') addRoot(roots, pattern.left, path);
  else if (pattern.type === 'ObjectPattern') {
    for (const p of pattern.properties as N[]) {
      if (p.type === 'Property' && !p.computed && p.key.type === 'Identifier') addRoot(roots, p.value, [...path, p.key.name]);
    }
  }
}

function findHandler(program: N): N | undefined {
  const decls = new Map<string, N>();
  let exported: N | undefined;
  for (const st of program.body as N[]) {
    if (st.type === 'VariableDeclaration') for (const d of st.declarations as N[]) { if (d.id.type === 'Identifier' && d.init) decls.set(d.id.name, d.init); }
    if (st.type === 'FunctionDeclaration' && st.id) decls.set(st.id.name, st);
    if (st.type === 'ExportDefaultDeclaration') exported = st.declaration;
    if (st.type === 'ExportNamedDeclaration' && !st.declaration) {
      for (const s of st.specifiers as N[]) if (s.exported.name === 'default' && s.local.type === 'Identifier') exported = { type: 'Identifier', name: s.local.name } as unknown as N;
    }
  }
  // Follows `const a = b; export default a` chains (a few hops; no cycles).
  const resolve = (n: N | undefined): N | undefined => {
    for (let hops = 0; n?.type === 'Identifier' && hops < 8; hops++) n = decls.get(n.name);
    return n;
  };
  const call = resolve(exported);
  if (call?.type !== 'CallExpression') return undefined;
  const fn = resolve(call.arguments[1]);
  const isFn = fn && (fn.type === 'ArrowFunctionExpression' || fn.type === 'FunctionExpression' || fn.type === 'FunctionDeclaration');
  return isFn ? fn : undefined;
}

/** The path of a ctx call (`email.send`), or undefined when the callee is not rooted at ctx. */
function ctxPath(callee: N, roots: Map<string, string[]>): string | undefined {
  const names: string[] = [];
  let n = callee;
  while (n.type === 'MemberExpression' && !n.computed && n.property.type === 'Identifier') { names.unshift(n.property.name); n = n.object; }
  if (n.type !== 'Identifier' || !roots.has(n.name)) return undefined;
  return [...roots.get(n.name)!, ...names].join('.');
}

function literal(n: N | undefined, text: (n: N) => string): string | undefined {
  if (!n) return undefined;
  if (n.type === 'Literal' && (typeof n.value === 'string' || typeof n.value === 'number')) return String(n.value);
  if (n.type === 'TemplateLiteral' && n.expressions.length === 0) return n.quasis[0].value.cooked;
  if (n.type === 'ArrayExpression') return (n.elements as N[]).map((e) => literal(e, text) ?? (e ? text(e) : '')).join(', ');
  return text(n);
}

function stepOf(name: SpineStep['name'], args: N[], text: (n: N) => string): SpineStep {
  const step: SpineStep = { name };
  const first = name === 'profile.get' || name === 'restart' ? undefined : literal(args[0], text);
  if (first !== undefined) step.detail = clip(first, DETAIL_MAX);
  if (name === 'waitForEvent' && args[1]?.type === 'ObjectExpression') {
    const t = (args[1].properties as N[]).find((p) => p.type === 'Property' && !p.computed && (p.key.name ?? p.key.value) === 'timeout');
    const v = literal(t?.value, text);
    if (v !== undefined) step.timeout = clip(v, TIMEOUT_MAX);
  }
  return step;
}

function visitors(roots: Map<string, string[]>, text: (n: N) => string) {
  const sub = (n: N | null | undefined, st: State, c: (n: N, s: State) => void): SpineStep[] => {
    const s: State = { out: [], nested: true, inner: st.inner };
    if (n) c(n, s);
    return s.out;
  };
  const branch = (st: State, detail: string, steps: SpineStep[], otherwise: SpineStep[]) => {
    if (steps.length === 0 && otherwise.length === 0) return;
    const step: SpineStep = { name: 'if', detail: clip(detail, DETAIL_MAX), steps };
    if (otherwise.length) step.otherwise = otherwise;
    st.out.push(step);
  };
  const loop = (st: State, detail: string, steps: SpineStep[]) => {
    if (steps.length) st.out.push({ name: 'loop', detail: clip(detail, DETAIL_MAX), steps });
  };
  const header = (n: N) => text(n).slice(0, n.body.start - n.start);
  return {
    IfStatement(n: N, st: State, c: any) {
      c(n.test, st);
      branch(st, text(n.test), sub(n.consequent, st, c), sub(n.alternate, st, c));
    },
    ConditionalExpression(n: N, st: State, c: any) {
      c(n.test, st);
      branch(st, text(n.test), sub(n.consequent, st, c), sub(n.alternate, st, c));
    },
    LogicalExpression(n: N, st: State, c: any) {
      c(n.left, st);
      const right = sub(n.right, st, c);
      if (n.operator === '&&') branch(st, text(n.left), right, []);
      else branch(st, text(n.left), [], right);
    },
    SwitchStatement(n: N, st: State, c: any) {
      c(n.discriminant, st);
      // A chain of ifs, the default case as the last `otherwise`.
      let rest: SpineStep[] = [];
      for (const k of [...(n.cases as N[])].reverse()) {
        const body: SpineStep[] = [];
        for (const s of k.consequent as N[]) body.push(...sub(s, st, c));
        if (!k.test) { rest = body; continue; }
        const chain: State = { out: [], nested: true, inner: st.inner };
        branch(chain, `${text(n.discriminant)} === ${text(k.test)}`, body, rest);
        rest = chain.out;
      }
      st.out.push(...rest);
    },
    TryStatement(n: N, st: State, c: any) {
      c(n.block, st);
      if (n.handler) branch(st, n.handler.param ? `catch (${text(n.handler.param)})` : 'catch', sub(n.handler.body, st, c), []);
      if (n.finalizer) c(n.finalizer, st);
    },
    ForStatement(n: N, st: State, c: any) {
      if (n.init) c(n.init, st);
      loop(st, header(n), sub(n.body, st, c));
    },
    ForInStatement(n: N, st: State, c: any) { c(n.right, st); loop(st, header(n), sub(n.body, st, c)); },
    ForOfStatement(n: N, st: State, c: any) { c(n.right, st); loop(st, header(n), sub(n.body, st, c)); },
    WhileStatement(n: N, st: State, c: any) { c(n.test, st); loop(st, header(n), sub(n.body, st, c)); },
    DoWhileStatement(n: N, st: State, c: any) { loop(st, `do … while (${text(n.test)})`, [...sub(n.body, st, c), ...sub(n.test, st, c)]); },
    ReturnStatement(n: N, st: State, c: any) {
      if (n.argument) c(n.argument, st);
      // An early return inside a branch or loop ends the run there; the last top-level one is the end anyway.
      if (st.nested && !st.inner) st.out.push({ name: 'end' });
    },
    Function(n: N, st: State, c: any) {
      // A return inside a callback or helper ends that function, not the run.
      const inner: State = { out: st.out, nested: st.nested, inner: true };
      c(n.body, inner, n.expression ? 'Expression' : 'Statement');
    },
    VariableDeclarator(n: N, st: State, c: any) {
      if (n.init) c(n.init, st);
      // `const { email, traits } = ctx` makes those names ctx roots too.
      if (n.init?.type === 'Identifier' && roots.has(n.init.name)) addRoot(roots, n.id, roots.get(n.init.name)!);
    },
    CallExpression(n: N, st: State, c: any) {
      const path = ctxPath(n.callee, roots);
      if (path !== undefined) {
        for (const a of n.arguments as N[]) c(a, st);
        const name = STEP_OF_CALL[path];
        if (name) st.out.push(stepOf(name, n.arguments, text));
        return;
      }
      const m = n.callee;
      if (m.type === 'MemberExpression' && !m.computed && ITERATING.has(m.property.name)) {
        c(m.object, st);
        for (const a of n.arguments as N[]) {
          if (a.type === 'ArrowFunctionExpression' || a.type === 'FunctionExpression') loop(st, `${clip(text(m.object), 150)}.${m.property.name}(…)`, sub(a, st, c));
          else c(a, st);
        }
        return;
      }
      c(n.callee, st);
      for (const a of n.arguments as N[]) c(a, st);
    },
  };
}
