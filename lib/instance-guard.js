// reconnect-dedupe: lib/instance-guard.js (this line marks where it starts in the glue).
// Appended to wasm-bindgen's glue (pkg/reconnect_dedupe.js) by scripts/lib-pkg.mjs,
// with one `guardInstances({...})` line naming the glue's exported classes; it runs in
// the glue's module scope. Three misuses of an instance otherwise end in wasm-bindgen's
// own uncoded errors, or worse:
// * a call on an instance already freed: "null pointer passed to rust";
// * free() from inside the instance's own call (a getter or valueOf of an argument it
//   is reading): "attempted to take ownership of Rust value while it was borrowed"
//   thrown through that call, the instance unusable after and its memory never freed;
// * an instance made before the module's Wasm instance started over (the glue's
//   `__wbg_reset_state`, exported as `reinstantiate`, which the worker calls after a
//   trap): its calls throw
//   "Invalid stale object from previous Wasm instance", and its free() frees memory of
//   the new instance, which the next allocation then overwrites.
// Here the first throws `instance_freed` naming the call; the second throws
// `instance_busy` from free() (or from any other call of the same instance) and
// frees nothing, so the call goes on and the instance stays usable; the third throws
// `instance_stale`, and its free() only forgets the instance (its memory went with the
// old Wasm instance). Which instances are inside a call is kept beside them (a stack,
// one deep unless a call re-enters another instance), never on them, so that a frozen
// instance works; it costs a call at most about 0.2 µs (docs/benchmarks.md "The
// instance guard", `node benches/instance-guard.mjs`).

function guardInstances(classes) {
  const active = [];
  const coded = (code, message) => Object.assign(new Error(message), { code });
  // The glue's count of Wasm instances, where it has one (wasm-bindgen's reset support).
  const current = () => (typeof __wbg_instance_id === 'undefined' ? undefined : __wbg_instance_id);
  for (const [className, C] of Object.entries(classes)) {
    const proto = C.prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || name.startsWith('__')) continue;
      const d = Object.getOwnPropertyDescriptor(proto, name);
      const f = d.value ?? d.get;
      if (typeof f !== 'function') continue;
      const call = d.get ? `${className}.${name}` : `${className}.${name}()`;
      const guarded = function () {
        if (this.__wbg_ptr === 0) throw coded('instance_freed', `${className}.${name}: this ${className} was freed (free() was called); make a new one`);
        if (active.includes(this)) {
          throw coded('instance_busy', `${call} during a call of the same instance (from a getter or valueOf of its argument): refused, nothing changed`);
        }
        if (this.__wbg_inst !== undefined && this.__wbg_inst !== current()) {
          if (name === 'free') {
            this.__destroy_into_raw();
            return undefined;
          }
          throw coded('instance_stale', `${className}.${name}: this ${className} is from before the Wasm instance started over (after a trap); make a new one`);
        }
        if (name === 'free') return f.apply(this, arguments);
        active.push(this);
        try {
          return f.apply(this, arguments);
        } finally {
          active.pop();
        }
      };
      Object.defineProperty(proto, name, d.get ? { ...d, get: guarded } : { ...d, value: guarded });
    }
    if (Symbol.dispose) proto[Symbol.dispose] = proto.free;
  }
}
