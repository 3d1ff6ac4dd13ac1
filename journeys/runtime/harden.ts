// What makes a sandbox reusable: after the prelude ran, the global object and every built-in
// reachable from it (prototypes, constructors, accessors, and the intrinsics no global names, such
// as the generator and iterator prototypes) are frozen. Journey code then cannot leave anything
// behind for the next activation in the same sandbox: a global assignment or a changed built-in
// fails (silently in sloppy code, with a TypeError in strict code), and the module's own variables
// are fresh for every activation (the prelude's open() runs the module body again). `extra` is
// frozen the same way: the objects the prelude shares between activations without a global
// naming them (the methods of ctx).
//
// Freezing a prototype makes assigning an inherited name on an ordinary object fail too (the
// "override mistake": `obj.toString = f` when Object.prototype.toString is read-only). The names
// code commonly assigns that way are turned into accessors whose setter defines an own property on
// the object assigned to, as the SES lockdown does.

export const HARDEN_SOURCE = `(function (root, defineProperty, extra) {
'use strict';
var getProto = Object.getPrototypeOf, ownKeys = Reflect.ownKeys, gopd = Object.getOwnPropertyDescriptor, freeze = Object.freeze;
var seen = new Set();
function tame(o, k) {
  var d = gopd(o, k);
  if (!d || !('value' in d) || !d.configurable) return;
  var v = d.value;
  defineProperty(o, k, {
    get: function () { return v; },
    set: function (nv) {
      if (this === o) throw new TypeError('Cannot assign to read only property ' + String(k));
      defineProperty(this, k, { value: nv, writable: true, enumerable: true, configurable: true });
    },
    enumerable: d.enumerable, configurable: false,
  });
}
var OVERRIDES = [
  [Object.prototype, ['constructor', 'toString', 'valueOf', 'toLocaleString']],
  [Function.prototype, ['constructor', 'toString']],
  [Array.prototype, ['toString']],
  [Promise.prototype, ['constructor']],
];
[Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError].forEach(function (E) {
  OVERRIDES.push([E.prototype, ['constructor', 'name', 'message', 'toString']]);
});
if (typeof AggregateError === 'function') OVERRIDES.push([AggregateError.prototype, ['constructor', 'name', 'message']]);
OVERRIDES.forEach(function (x) { x[1].forEach(function (k) { tame(x[0], k); }); });

var stack = [root, extra,
  getProto(function* () {}), getProto(async function () {}), getProto(async function* () {}),
  getProto((function* () {})()), getProto((async function* () {})()),
  getProto([][Symbol.iterator]()), getProto(new Map()[Symbol.iterator]()), getProto(new Set()[Symbol.iterator]()),
  getProto(''[Symbol.iterator]()), getProto(/a/[Symbol.matchAll]('')), getProto(Int8Array)];
while (stack.length) {
  var o = stack.pop();
  if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) continue;
  seen.add(o);
  freeze(o);
  stack.push(getProto(o));
  var keys = ownKeys(o);
  for (var i = 0; i < keys.length; i++) {
    var d = gopd(o, keys[i]);
    if ('value' in d) stack.push(d.value); else { stack.push(d.get); stack.push(d.set); }
  }
}
})`;
