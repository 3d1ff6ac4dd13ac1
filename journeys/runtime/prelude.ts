// Code evaluated once in every new sandbox, before any journey code: it makes the clock and
// randomness deterministic, removes what could observe the host (local time zone, garbage-collection
// timing), builds `ctx` per activation, then hardens the context (every built-in and the global
// object frozen, see HARDEN_SOURCE) so the sandbox can be reused by later activations without one
// seeing what another wrote. It returns the three entry points the engine drives:
// [settle, start, open, done]. open(factory, seed, clock) resets the per-activation state and runs the
// journey's module body again (compiled once, into `factory`), so module-level variables are fresh
// for every activation too. It captures the built-ins it relies on, so journey code cannot bend
// the bridge. Only strings and numbers cross the boundary; JSON is parsed on the side that receives it.

/** The global the compiled script assigns its module namespace to (`.default` is the definition). */
export const MODULE_GLOBAL = '__headwater_module';
/** The global through which the engine hands its host functions to the prelude (removed at once). */
export const HOST_GLOBAL = '__headwater_host';

/**
 * The compiled script as a function body: `var __headwater_module` becomes a local, and calling
 * the function runs the module body again and answers the module namespace.
 */
export const wrapModule = (code: string) =>
  `(function () {\n${code}\n;return typeof ${MODULE_GLOBAL} === 'undefined' ? undefined : ${MODULE_GLOBAL};\n})`;

export const PRELUDE = `(function (host) {
'use strict';
delete globalThis.${HOST_GLOBAL};
var J = JSON, parse = J.parse, stringify = J.stringify, P = Promise, imul = Math.imul, defineProperty = Object.defineProperty;
var freeze = Object.freeze, construct = Reflect.construct, apply = Reflect.apply;
// Per-activation state, reset by open().
var clock = 0, position = 0, seed = '', waiting = {}, mod, draw = null, finished = 0;

function hide(o, k, v) { defineProperty(o, k, { value: v, writable: true, configurable: true, enumerable: false }); }

// ---- clock: Date.now() and new Date() read the execution's virtual clock; local time is UTC.
var RealDate = Date, evaluate = eval;
var HDate = evaluate(host.dateSource)(RealDate, function () { return clock; }, hide, construct, apply, defineProperty);
hide(globalThis, 'Date', HDate);

// ---- randomness: Math.random is a PRNG seeded from (execution seed, call position)
var makeDraw = evaluate(host.randomSource);
hide(Math, 'random', function random() {
  if (!draw) draw = makeDraw(seed, function () { return position; }, imul);
  return draw();
});

// garbage-collection timing is not deterministic
delete globalThis.WeakRef;
delete globalThis.FinalizationRegistry;

function describe(e) {
  try {
    if (e instanceof Error) return (e.name || 'Error') + ': ' + e.message;
    if (typeof e === 'string') return e;
    var s = stringify(e);
    return s === undefined ? String(e) : s;
  } catch (x) { return 'a value that cannot be described'; }
}

// ---- ctx
function call(name, args) {
  var json = '', err = '';
  try { json = stringify(args); } catch (e) { err = describe(e); }
  var at = host.call(name, typeof json === 'string' ? json : '', err);
  if (at < 0) return new P(function () {});
  position = at + 1;
  var w = waiting;
  return new P(function (resolve, reject) { w[at] = [resolve, reject]; });
}
function settle(at, ok, json, now) {
  var w = waiting[at];
  delete waiting[at];
  clock = now;
  if (ok) { w[0](parse(json)); return; }
  var r = parse(json), e = new Error(r.message);
  e.code = r.code;
  w[1](e);
}
function text(v) { return typeof v === 'string' ? v : describe(v); }
function logger(level) {
  return function () {
    var parts = [];
    for (var i = 0; i < arguments.length; i++) parts.push(text(arguments[i]));
    host.log(level, parts.join(' '));
  };
}
function orEmpty(v) { return v === undefined ? {} : v; }

// The methods of ctx, built once per sandbox: they reach the activation only through the state
// open() resets, and the hardening below freezes them with everything they reach (their
// prototypes too), so one activation cannot leave anything on them for the next.
var api = {
  sleep: function (duration) { return call('sleep', { duration: duration }); },
  waitForEvent: function (event, options) { return call('waitForEvent', { event: event, timeout: options && options.timeout }); },
  email: { send: function (template, props) { return call('email.send', { template: template, props: orEmpty(props) }); } },
  webhook: { send: function (destination, payload) { return call('webhook.send', { destination: destination, payload: orEmpty(payload) }); } },
  traits: {
    set: function (key, value) { return call('traits.set', { key: key, value: value }); },
    unset: function (key) { return call('traits.unset', { key: key }); },
  },
  profile: { get: function () { return call('profile.get', {}); } },
  profiles: { get: function (id) { return call('profiles.get', { id: id }); } },
  events: { track: function (event, properties) { return call('events.track', { event: event, properties: orEmpty(properties) }); } },
  restart: function (event) { return call('restart', event === undefined ? {} : { event: event }); },
  split: function (name, weights) { return call('split', { name: name, weights: weights }); },
  log: { debug: logger('debug'), info: logger('info'), warn: logger('warn'), error: logger('error') },
};

// A new activation: fresh state, then the module body runs (a throw there is a load failure).
function open(factory, s, now) {
  seed = s; clock = now; position = 0; waiting = {}; draw = null; mod = undefined; finished = 0;
  mod = factory();
}

function start(kind, input) {
  var m = mod, d = m && m.default;
  if (!d || d.kind !== kind || typeof (kind === 'journey' ? d.handler : d.render) !== 'function') {
    host.fail('TypeError: the code does not default-export a ' + kind + ' definition');
    return;
  }
  if (kind === 'template') {
    P.resolve().then(function () { return d.render(parse(input)); })
      .then(function (out) { var s; try { s = stringify(out); } catch (e) { host.invalid('the render result is not JSON-serializable: ' + describe(e)); return; } host.done(s === undefined ? '' : s); },
        function (e) { host.fail(describe(e)); });
    return;
  }
  var ctx = freeze({
    event: parse(input), sleep: api.sleep, waitForEvent: api.waitForEvent, email: api.email, webhook: api.webhook, traits: api.traits,
    profile: api.profile, profiles: api.profiles, events: api.events, restart: api.restart, split: api.split, log: api.log,
  });
  P.resolve().then(function () { return d.handler(ctx); })
    .then(function () { finished = 1; }, function (e) { host.fail(describe(e)); });
}
evaluate(host.hardenSource)(globalThis, defineProperty, api);
// Whether the journey handler returned: asked once, when nothing is left to settle (cheaper than a call out).
function done() { return finished; }
return [settle, start, open, done];
})(globalThis.${HOST_GLOBAL})`;

/**
 * The Date replacement, compiled on first use. The built-ins it calls come from the prelude, captured
 * before any journey code ran: a replaced Reflect.construct must not be handed the real Date.
 */
export const DATE_SOURCE = `(function (RealDate, clockNow, hide, construct, apply, defineProperty) {
'use strict';
var DP = RealDate.prototype, UTC = RealDate.UTC, realParse = RealDate.parse;
var getTime = DP.getTime, toUTCString = DP.toUTCString;
function parseUTC(s) { s = String(s); var z = realParse(s + 'Z'); return z === z ? z : realParse(s); }
function HDate(a) {
  if (!new.target) return fmt(new RealDate(clockNow()), 3);
  var n = arguments.length, t;
  if (n === 0) t = clockNow();
  else if (n === 1) t = typeof a === 'string' ? parseUTC(a) : apply(getTime, construct(RealDate, [a]), []);
  else t = apply(UTC, null, arguments);
  return construct(RealDate, [t], new.target);
}
function fmt(d, part) {
  if (apply(getTime, d, []) !== apply(getTime, d, [])) return 'Invalid Date';
  var u = apply(toUTCString, d, []), m = /^(\\w{3}), (\\d{2}) (\\w{3}) (-?\\d+) (\\d{2}:\\d{2}:\\d{2}) GMT$/.exec(u);
  if (!m) return u;
  var date = m[1] + ' ' + m[3] + ' ' + m[2] + ' ' + m[4], time = m[5] + ' GMT+0000 (Coordinated Universal Time)';
  return part === 1 ? date : part === 2 ? time : date + ' ' + time;
}
HDate.prototype = DP;
hide(DP, 'constructor', HDate);
defineProperty(HDate, 'length', { value: 7 });
hide(HDate, 'now', function now() { return clockNow(); });
hide(HDate, 'parse', function parse(s) { return parseUTC(s); });
hide(HDate, 'UTC', UTC);
['FullYear', 'Month', 'Date', 'Day', 'Hours', 'Minutes', 'Seconds', 'Milliseconds'].forEach(function (n) {
  hide(DP, 'get' + n, DP['getUTC' + n]);
  if (n !== 'Day') hide(DP, 'set' + n, DP['setUTC' + n]);
});
hide(DP, 'getYear', function getYear() { return this.getUTCFullYear() - 1900; });
hide(DP, 'getTimezoneOffset', function getTimezoneOffset() { return 0; });
hide(DP, 'toString', function toString() { return fmt(this, 3); });
hide(DP, 'toDateString', function toDateString() { return fmt(this, 1); });
hide(DP, 'toTimeString', function toTimeString() { return fmt(this, 2); });
hide(DP, 'toLocaleString', function toLocaleString() { return fmt(this, 3); });
hide(DP, 'toLocaleDateString', function toLocaleDateString() { return fmt(this, 1); });
hide(DP, 'toLocaleTimeString', function toLocaleTimeString() { return fmt(this, 2); });
return HDate;
})`;

/** The PRNG behind Math.random, compiled on first use: sfc32 seeded by cyrb128(seed + ':' + position). */
export const RANDOM_SOURCE = `(function (seed, at, imul) {
'use strict';
var ra = 0, rb = 0, rc = 0, rd = 0, rpos = -1;
function reseed(p) {
  var s = seed + ':' + p, h1 = 1779033703, h2 = 3144134277, h3 = 1013904242, h4 = 2773480762;
  for (var i = 0, k; i < s.length; i++) {
    k = s.charCodeAt(i);
    h1 = h2 ^ imul(h1 ^ k, 597399067); h2 = h3 ^ imul(h2 ^ k, 2869860233);
    h3 = h4 ^ imul(h3 ^ k, 951274213); h4 = h1 ^ imul(h4 ^ k, 2716044179);
  }
  h1 = imul(h3 ^ (h1 >>> 18), 597399067); h2 = imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = imul(h1 ^ (h3 >>> 17), 951274213); h4 = imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4; h2 ^= h1; h3 ^= h1; h4 ^= h1;
  ra = h1 | 0; rb = h2 | 0; rc = h3 | 0; rd = h4 | 0; rpos = p;
}
return function () {
  var p = at();
  if (rpos !== p) reseed(p);
  var t = (ra + rb | 0) + rd | 0;
  rd = rd + 1 | 0; ra = rb ^ rb >>> 9; rb = rc + (rc << 3) | 0; rc = rc << 21 | rc >>> 11; rc = rc + t | 0;
  return (t >>> 0) / 4294967296;
};
})`;
